//! `POST /v1/intents`: HTTP ingress for extractors that do not speak Kafka.
//!
//! The body is one intent (JSON, the same form `kledger publish` reads). It is validated
//! (rule 1; a failure is `422` with the stable code of docs/error-codes.md), then produced to
//! the intents topic keyed and partitioned by account, exactly as `kledger publish` does. A
//! principal writes to its own account; one holding [`INGEST_ROLE`] may write to any account
//! of its tenant, but purge another account only if it also holds `role_privacy`
//! (`403 purge_forbidden`). With `wait_ms` (≤30,000) the answer carries the intent's receipt when it
//! arrives in time (`200`); otherwise `202` says the intent was accepted. Every wait is served
//! by one receipts reader per process ([`super::receipts`]); at most `api.waits_max` wait at
//! once (a request beyond is answered `202` at once).

use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use kledger_processors::access::may_address;
use kledger_processors::routing::partition_for;
use kledger_processors::validate::validate;
use kledger_schemas::{Intent, Receipt, SourceEnvelope, SourceKind};
use rdkafka::producer::{FutureProducer, FutureRecord};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::read::blocking;
use super::{Api, ApiError, Caller, now_ms, observe};

/// The role that lets a principal write intents for other accounts of its tenant.
pub const INGEST_ROLE: &str = "role_ingest";
/// Longest wait for a receipt.
pub const WAIT_MS_MAX: u64 = 30_000;

/// Parameters.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct IngressParams {
    /// Wait up to this long for the receipt (0: do not wait).
    #[serde(default)]
    pub wait_ms: u64,
}

/// `POST /v1/sources/{kind}` parameters.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SourceParams {
    /// Wait up to this long for the receipt (0: do not wait).
    #[serde(default)]
    pub wait_ms: u64,
    /// The account (default: the caller's own; another needs `role_ingest`).
    pub account: Option<String>,
}

/// The answer. It carries no offset: an intent's position in its partition moves with the
/// writes of every other account on that partition, so it would tell a caller of their
/// activity.
#[derive(Debug, Serialize, JsonSchema)]
pub struct IngressAnswer {
    /// The intent's action id.
    pub action_id: String,
    /// Partition it was written to (a function of the account id alone).
    pub partition: i32,
    /// The receipt, when it arrived within `wait_ms` (its JSON form: schemas/avro/receipt.avsc
    /// without `intent_offset`).
    #[schemars(with = "Option<serde_json::Value>")]
    pub receipt: Option<IngressReceipt>,
    /// The receipt's consistency token: reads given it as `min_commit_seq` see this write
    /// (when the receipt arrived).
    pub consistency_token: Option<i64>,
}

/// A receipt as the ingress answers it: the [`Receipt`] without the intent's offset (see
/// [`IngressAnswer`]).
#[derive(Debug, Clone)]
pub struct IngressReceipt {
    /// The receipt (serialized without its `intent_offset`).
    pub receipt: Receipt,
}

impl From<Receipt> for IngressReceipt {
    fn from(receipt: Receipt) -> Self {
        Self { receipt }
    }
}

impl Serialize for IngressReceipt {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut v = serde_json::to_value(&self.receipt).map_err(serde::ser::Error::custom)?;
        if let Some(o) = v.as_object_mut() {
            o.remove("intent_offset");
        }
        v.serialize(s)
    }
}

/// `413 body_too_large`: the body is over the record budget.
pub fn body_too_large(budget: usize) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        "body_too_large",
        format!("a request body is at most {budget} bytes (the record budget)"),
    )
}

fn producer(api: &Api) -> Result<&FutureProducer, ApiError> {
    if let Some(p) = api.producer.get() {
        return Ok(p);
    }
    let p: FutureProducer = kledger_kafka::clients::producer_config(&api.config, None)
        .create()
        .map_err(ApiError::internal)?;
    Ok(api.producer.get_or_init(|| p))
}

/// `200` with the receipt when it arrived in time, else `202`.
fn answered(answer: IngressAnswer) -> (StatusCode, Json<IngressAnswer>) {
    let status = if answer.receipt.is_some() {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    (status, Json(answer))
}

/// `POST /v1/intents`.
pub async fn post_intent(
    State(api): State<Api>,
    Caller(p): Caller,
    Query(q): Query<IngressParams>,
    body: axum::body::Bytes,
) -> Response {
    let started = Instant::now();
    let budget = api.config.limits.record_bytes_max;
    let r = async {
        // The router's body limit answers a larger announced or sent body first.
        if body.len() > budget {
            return Err(body_too_large(budget));
        }
        let intent: Intent = serde_json::from_slice(&body)
            .map_err(|e| ApiError::bad("malformed_json", e.to_string()))?;
        Ok(answered(submit(&api, &p, intent, q.wait_ms).await?))
    }
    .await;
    let resp = r.into_response();
    observe("intents", started, resp.status());
    resp
}

/// `POST /v1/sources/{kind}`: one source document (`people`, `conversations`, `calendar`,
/// `screen`; its JSON fields, with optional `visibility` and `acl`) put into the caller's
/// account (or `account=`'s, with `role_ingest`) as the intent `kledger publish --kind` makes
/// of it, through the same path as `POST /v1/intents`.
pub async fn post_source(
    State(api): State<Api>,
    Caller(p): Caller,
    axum::extract::Path(kind): axum::extract::Path<String>,
    Query(q): Query<SourceParams>,
    body: axum::body::Bytes,
) -> Response {
    let started = Instant::now();
    let budget = api.config.limits.record_bytes_max;
    let r = async {
        if body.len() > budget {
            return Err(body_too_large(budget));
        }
        let kind = SourceKind::parse(&kind).ok_or_else(|| {
            ApiError::bad(
                "bad_source_kind",
                "the source kind is people, conversations, calendar, screen or episodes",
            )
        })?;
        let env: SourceEnvelope = serde_json::from_slice(&body)
            .map_err(|e| ApiError::bad("malformed_json", e.to_string()))?;
        if env.account_id.is_some() || env.record_time(kind).map_or(true, |t| t.is_some()) {
            return Err(ApiError::bad(
                "malformed_json",
                "the account is the caller's or account=; the record time is the ingress's",
            ));
        }
        let version = env.version.clone();
        let op = env
            .op(kind)
            .map_err(|e| ApiError::bad("malformed_json", e))?;
        let account = q.account.clone().unwrap_or_else(|| p.account_id());
        let intent = kledger_processors::sources::intent_for(&account, op, version.as_deref());
        Ok(answered(submit(&api, &p, intent, q.wait_ms).await?))
    }
    .await;
    let resp = r.into_response();
    observe("sources", started, resp.status());
    resp
}

/// The ingress path (`POST /v1/intents`, `POST /v1/sources/{kind}` and the MCP tool
/// `remember`): checks the principal
/// may write to the intent's account, validates it (rule 1), produces it keyed and
/// partitioned by account, and waits at most `wait_ms` for its receipt. Long on purpose: the
/// checks in the order they answer (wait, access, validation, record size, produce, wait),
/// each with its own status and code.
pub async fn submit(
    api: &Api,
    p: &kledger_processors::access::Principal,
    intent: Intent,
    wait_ms: u64,
) -> Result<IngressAnswer, ApiError> {
    let started = Instant::now();
    let budget = api.config.limits.record_bytes_max;
    if wait_ms > WAIT_MS_MAX {
        return Err(ApiError::bad("bad_wait", "wait_ms must be ≤ 30000"));
    }
    let own = intent.account_id == p.account_id();
    let has = |role: &str| p.roles.iter().any(|r| r == role);
    let ingest = has(INGEST_ROLE) && may_address(p, &intent.account_id);
    if !(own || ingest) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "account_forbidden",
            "the principal may not write to this account",
        ));
    }
    // Privacy deletion of someone else's account is the privacy role's, not an extractor's.
    let purges = intent
        .ops
        .iter()
        .any(|o| matches!(o, kledger_schemas::Op::Purge(_)));
    if purges && !own && !has(super::purges::PRIVACY_ROLE) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "purge_forbidden",
            "only the account's owner or a principal with role_privacy may purge it",
        ));
    }
    let now = now_ms();
    if let Err(reason) = validate(&intent, now, api.config.limits.rules()) {
        return Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            reason.code.as_str(),
            reason.message,
        ));
    }
    let partition = partition_for(intent.account_id.as_bytes(), api.partitions);
    // The wait is registered before the intent is produced, so its receipt cannot pass
    // unseen; one shared reader serves every wait ([`super::receipts`]).
    // Bounded per caller and in all (beyond, the intent is accepted without waiting).
    let share = (wait_ms > 0)
        .then(|| api.waits.take(&super::waits::caller_key(p)))
        .flatten();
    let waiter = if share.is_some() {
        let (api2, account, action) = (
            api.clone(),
            intent.account_id.clone(),
            intent.action_id.clone(),
        );
        blocking(move || {
            Ok(api2.receipts.wait(
                &api2.config,
                api2.partitions,
                &api2.codec,
                &account,
                &action,
            ))
        })
        .await?
    } else {
        None
    };
    let payload = api.codec.encode(&intent);
    if payload.len() > budget {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "record_too_large",
            format!(
                "the intent's record is {} bytes, over the record budget of {budget} bytes",
                payload.len()
            ),
        ));
    }
    let topic = api.config.topics().intents;
    let record = FutureRecord::to(&topic)
        .key(intent.account_id.as_bytes())
        .payload(&payload)
        .partition(partition)
        .timestamp(now);
    let partition = producer(api)?
        .send(record, Duration::from_secs(10))
        .await
        .map(|d| d.partition)
        .map_err(|(e, _)| ApiError::internal(e))?;
    let receipt = match waiter {
        Some(w) => w.until(started + Duration::from_millis(wait_ms)).await,
        None => None,
    };
    drop(share);
    Ok(IngressAnswer {
        action_id: intent.action_id,
        partition,
        consistency_token: receipt.as_ref().map(super::at::token),
        receipt: receipt.map(IngressReceipt::from),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ingress_receipt_carries_no_offset() {
        let r = Receipt {
            action_id: "a".into(),
            account_id: "t/user/u".into(),
            outcome: kledger_schemas::Outcome::Committed,
            commit_seq: Some(3),
            rebased: false,
            head_seq: 2,
            head_hash: "h".into(),
            code: None,
            message: None,
            stale_targets: Vec::new(),
            memory_ids: Vec::new(),
            intent_partition: 1,
            intent_offset: 4242,
            recorded_at: 7,
        };
        let v = serde_json::to_value(IngressReceipt::from(r)).unwrap();
        assert!(v.get("intent_offset").is_none(), "{v}");
        assert_eq!(v["commit_seq"], 3);
        assert!(!v.to_string().contains("4242"), "{v}");
    }
}
