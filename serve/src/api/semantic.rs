//! `GET /v1/semantic/features`: the account's current ledger rows presented as MemMachine
//! semantic features (seed 003), for clients written against MemMachine's semantic memory.
//!
//! Hierarchy: MemMachine's org / project / session map onto kledger's tenant / project /
//! source. `org_id` must be the principal's tenant (another org answers no features),
//! `project_id` selects rows whose tenant block names that project, and `session_id` selects
//! rows whose source or any evidence item has that source id (episodic-message evidence
//! carries the session as its source id).
//!
//! A feature is one current row: active, valid at `as_of` (default now), not expired, readable
//! by the principal (the same access and sensitivity rules as every read):
//! - `id`: the memory id's ULID as a UUID (the vector point id); `category_id`: the slot for
//!   slotted facts, else the kind (`fact`, `document`, `trigger`);
//! - `value`: the one-line content (never a document body or a trigger condition);
//! - `metadata`: memory_id, kind, slot, subject, assertion_class, write_reason, user_asserted,
//!   intent_backed, valid_from, recorded_at, commit_seq, revision, content_hash, tags and
//!   provenance (source, extractor, evidence locators without quotes).

use std::time::Instant;

use axum::extract::{Query, State};
use axum::response::Response;
use kledger_processors::access::Principal;
use kledger_processors::ids::memory_uuid;
use kledger_schemas::Row;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use super::read::{blocking, finish};
use super::{Api, ApiError, Caller, now_ms, target};

/// Features one request returns at most.
pub const FEATURES_LIMIT_MAX: usize = 200;
/// Features returned when no limit is given.
pub const FEATURES_LIMIT_DEFAULT: usize = 50;

/// `GET /v1/semantic/features` parameters.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct FeatureParams {
    /// The account (default: the principal's own).
    pub account: Option<String>,
    /// MemMachine org = kledger tenant.
    pub org_id: Option<String>,
    /// MemMachine project = the rows' `tenant.project_id`.
    pub project_id: Option<String>,
    /// MemMachine session = a source id of the row or its evidence.
    pub session_id: Option<String>,
    /// Only this category (slot or kind).
    pub category_id: Option<String>,
    /// 1..=200, default 50.
    pub limit: Option<usize>,
    /// Effective time, ms (default now).
    pub as_of: Option<i64>,
}

/// One semantic feature.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct SemanticFeature {
    /// UUID of the row (its memory id's ULID).
    pub id: String,
    /// Slot, or kind.
    pub category_id: String,
    /// The knowledge value.
    pub value: String,
    /// Provenance and ledger fields.
    pub metadata: Value,
}

/// The answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct FeaturesAnswer {
    /// The account read.
    pub account_id: String,
    /// Effective time.
    pub as_of: i64,
    /// The features, ordered by category then memory id.
    pub features: Vec<SemanticFeature>,
    /// Whether more matched than `limit`.
    pub truncated: bool,
    /// Whether the account holds more rows than a read takes (`views.account_rows_max`), so
    /// the features come from some of them (the owner only: to anyone else it would tell how
    /// much the account holds).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capped: Option<bool>,
}

/// The category of a row: its slot, else its kind.
pub fn category(row: &Row) -> String {
    row.slot.clone().unwrap_or_else(|| row.kind.to_string())
}

/// The feature of a row.
pub fn feature(row: &Row) -> SemanticFeature {
    let evidence: Vec<Value> = row
        .evidence
        .iter()
        .map(|e| {
            json!({
                "source_type": e.source_type,
                "source_id": e.source_id,
                "source_version": e.source_version,
                "message_id": e.locator.message_id,
                "page": e.locator.page,
                "heading": e.locator.heading,
                "paragraph": e.locator.paragraph,
                "span_start": e.locator.span_start,
                "span_end": e.locator.span_end,
                "checksum": e.checksum,
            })
        })
        .collect();
    SemanticFeature {
        id: memory_uuid(&row.memory_id).unwrap_or_else(|| row.memory_id.clone()),
        category_id: category(row),
        value: row.content.clone(),
        metadata: json!({
            "memory_id": row.memory_id,
            "kind": row.kind.to_string(),
            "slot": row.slot,
            "subject": {"scope": row.subject.scope.to_string(), "entity_id": row.subject.entity_id},
            "assertion_class": row.assertion_class.to_string(),
            "write_reason": row.write_reason.to_string(),
            "user_asserted": row.user_asserted,
            "intent_backed": row.intent_backed,
            "valid_from": row.valid_from,
            "recorded_at": row.recorded_at,
            "commit_seq": row.commit_seq,
            "revision": row.revision,
            "content_hash": row.content_hash,
            "tags": row.tags,
            "provenance": {
                "source": {
                    "source_type": row.source.source_type,
                    "source_id": row.source.source_id,
                    "source_version": row.source.source_version,
                    "author_id": row.source.author_id,
                },
                "extractor": {"name": row.extractor.name, "version": row.extractor.version},
                "evidence": evidence,
            },
        }),
    }
}

fn in_session(row: &Row, session: &str) -> bool {
    row.source.source_id == session || row.evidence.iter().any(|e| e.source_id == session)
}

/// The features of `q.account` (default: the principal's own) as `p` may read them
/// (blocking).
pub fn features_answer(
    api: &Api,
    p: &Principal,
    q: &FeatureParams,
) -> Result<FeaturesAnswer, ApiError> {
    let account = target(p, q.account.as_deref())?;
    let limit = q.limit.unwrap_or(FEATURES_LIMIT_DEFAULT);
    if !(1..=FEATURES_LIMIT_MAX).contains(&limit) {
        return Err(ApiError::bad(
            "bad_limit",
            format!("limit must be 1..={FEATURES_LIMIT_MAX}"),
        ));
    }
    super::policy::history(api, p, &account, super::policy::Ask::at(q.as_of, None))?;
    let as_of = q.as_of.unwrap_or_else(now_ms);
    let other_org = q.org_id.as_deref().is_some_and(|o| o != p.tenant_id);
    let (mut rows, capped) = if other_org {
        (Vec::new(), false)
    } else {
        super::read::readable_capped(api, p, &account)?
    };
    let capped = super::owns(p, &account).then_some(capped);
    rows.retain(|r| {
        r.is_current(as_of)
            && q.project_id
                .as_deref()
                .is_none_or(|pr| r.tenant.project_id.as_deref() == Some(pr))
            && q.session_id.as_deref().is_none_or(|s| in_session(r, s))
            && q.category_id.as_deref().is_none_or(|c| category(r) == c)
    });
    rows.sort_by(|a, b| (category(a), &a.memory_id).cmp(&(category(b), &b.memory_id)));
    let truncated = rows.len() > limit;
    Ok(FeaturesAnswer {
        account_id: account,
        as_of,
        features: rows.iter().take(limit).map(feature).collect(),
        truncated,
        capped,
    })
}

/// `GET /v1/semantic/features`.
pub async fn features(
    State(api): State<Api>,
    Caller(p): Caller,
    Query(q): Query<FeatureParams>,
) -> Response {
    let started = Instant::now();
    let r = blocking(move || features_answer(&api, &p, &q))
        .await
        .map(axum::Json);
    finish("semantic_features", started, r)
}
