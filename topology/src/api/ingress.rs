//! `POST /v1/intents`: HTTP ingress for extractors that do not speak Kafka.
//!
//! The body is one intent (JSON, the same form `kledger publish` reads). It is validated
//! (rule 1; a failure is `422` with the stable code of docs/error-codes.md), then produced to
//! the intents topic keyed and partitioned by account, exactly as `kledger publish` does. A
//! principal writes to its own account; one holding [`INGEST_ROLE`] may write to any account
//! of its tenant. With `wait_ms` (≤30,000) the answer carries the intent's receipt when it
//! arrives in time (`200`); otherwise `202` says the intent was accepted.

use std::time::{Duration, Instant};

use axum::Json;
use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use kledger_processors::access::may_address;
use kledger_processors::routing::partition_for;
use kledger_processors::validate::validate;
use kledger_schemas::avro::decode;
use kledger_schemas::{Intent, Receipt};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{FutureProducer, FutureRecord};
use rdkafka::{Offset, TopicPartitionList};
use serde::{Deserialize, Serialize};

use super::read::blocking;
use super::{Api, ApiError, Caller, now_ms, observe};

/// The role that lets a principal write intents for other accounts of its tenant.
pub const INGEST_ROLE: &str = "role_ingest";
/// Longest wait for a receipt.
pub const WAIT_MS_MAX: u64 = 30_000;
/// Largest intent body accepted, bytes.
pub const BODY_BYTES_MAX: usize = 1 << 20;

/// Parameters.
#[derive(Debug, Deserialize)]
pub struct IngressParams {
    /// Wait up to this long for the receipt (0: do not wait).
    #[serde(default)]
    pub wait_ms: u64,
}

/// The answer.
#[derive(Debug, Serialize)]
pub struct IngressAnswer {
    /// The intent's action id.
    pub action_id: String,
    /// Partition it was written to.
    pub partition: i32,
    /// Its offset.
    pub offset: i64,
    /// The receipt, when it arrived within `wait_ms`.
    pub receipt: Option<Receipt>,
}

fn producer(api: &Api) -> Result<&FutureProducer, ApiError> {
    if let Some(p) = api.producer.get() {
        return Ok(p);
    }
    let p: FutureProducer = crate::runtime::clients::producer_config(&api.config, None)
        .create()
        .map_err(ApiError::internal)?;
    Ok(api.producer.get_or_init(|| p))
}

/// The receipts partition's end before the intent is produced: its receipt comes after it.
fn receipts_end(api: &Api, partition: i32) -> Result<(BaseConsumer, i64), ApiError> {
    let c: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", api.config.bootstrap())
        .set("group.id", format!("{}-ingress", api.config.kafka.group_id))
        .set("enable.auto.commit", "false")
        .set("isolation.level", "read_committed")
        .create()
        .map_err(ApiError::internal)?;
    let topic = api.config.topics().receipts;
    let (_, high) = c
        .fetch_watermarks(&topic, partition, Duration::from_secs(5))
        .map_err(ApiError::internal)?;
    Ok((c, high))
}

/// Reads receipts from `from` until the one of `action_id` in `account` or the deadline.
fn wait_receipt(
    api: &Api,
    c: &BaseConsumer,
    partition: i32,
    from: i64,
    account: &str,
    action_id: &str,
    deadline: Instant,
) -> Result<Option<Receipt>, ApiError> {
    let topic = api.config.topics().receipts;
    let mut tpl = TopicPartitionList::new();
    tpl.add_partition_offset(&topic, partition, Offset::Offset(from))
        .map_err(ApiError::internal)?;
    c.assign(&tpl).map_err(ApiError::internal)?;
    while Instant::now() < deadline {
        let left = deadline.saturating_duration_since(Instant::now());
        let Some(Ok(m)) = c.poll(left.min(Duration::from_millis(200))) else {
            continue;
        };
        if m.key() != Some(account.as_bytes()) {
            continue;
        }
        if let Some(r) = m
            .payload()
            .and_then(|b| decode::<Receipt>(b, api.codec.as_ref()).ok())
            .filter(|r| r.action_id == action_id)
        {
            return Ok(Some(r));
        }
    }
    Ok(None)
}

/// `POST /v1/intents`.
pub async fn post_intent(
    State(api): State<Api>,
    Caller(p): Caller,
    Query(q): Query<IngressParams>,
    body: axum::body::Bytes,
) -> Response {
    let started = Instant::now();
    let r = async {
        if body.len() > BODY_BYTES_MAX {
            return Err(ApiError::new(
                StatusCode::PAYLOAD_TOO_LARGE,
                "body_too_large",
                format!("an intent is at most {BODY_BYTES_MAX} bytes"),
            ));
        }
        if q.wait_ms > WAIT_MS_MAX {
            return Err(ApiError::bad("bad_wait", "wait_ms must be ≤ 30000"));
        }
        let intent: Intent = serde_json::from_slice(&body)
            .map_err(|e| ApiError::bad("malformed_json", e.to_string()))?;
        let own = intent.account_id == p.account_id();
        let ingest =
            p.roles.iter().any(|r| r == INGEST_ROLE) && may_address(&p, &intent.account_id);
        if !(own || ingest) {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "account_forbidden",
                "the principal may not write to this account",
            ));
        }
        let now = now_ms();
        if let Err(reason) = validate(&intent, now) {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                reason.code.as_str(),
                reason.message,
            ));
        }
        let partition = partition_for(intent.account_id.as_bytes(), api.partitions);
        let waiter = if q.wait_ms > 0 {
            let api2 = api.clone();
            Some(blocking(move || receipts_end(&api2, partition)).await?)
        } else {
            None
        };
        let payload = api.codec.encode(&intent);
        let topic = api.config.topics().intents;
        let record = FutureRecord::to(&topic)
            .key(intent.account_id.as_bytes())
            .payload(&payload)
            .partition(partition)
            .timestamp(now);
        let (partition, offset) = producer(&api)?
            .send(record, Duration::from_secs(10))
            .await
            .map(|d| (d.partition, d.offset))
            .map_err(|(e, _)| ApiError::internal(e))?;
        let receipt = match waiter {
            Some((c, from)) => {
                let (api2, account, action) = (
                    api.clone(),
                    intent.account_id.clone(),
                    intent.action_id.clone(),
                );
                let deadline = started + Duration::from_millis(q.wait_ms);
                blocking(move || {
                    wait_receipt(&api2, &c, partition, from, &account, &action, deadline)
                })
                .await?
            }
            None => None,
        };
        let status = if receipt.is_some() {
            StatusCode::OK
        } else {
            StatusCode::ACCEPTED
        };
        Ok((
            status,
            Json(IngressAnswer {
                action_id: intent.action_id,
                partition,
                offset,
                receipt,
            }),
        ))
    }
    .await;
    let resp = r.into_response();
    observe("intents", started, resp.status());
    resp
}
