//! `GET /v1/compat/long_term`: the Long-term compatibility projection (seed 001) — **temporary**.
//!
//! Released clients decode memory rows of the legacy shape with a `tier`; this read serves the
//! ledger's eligible rows in that shape ([`LongTermRow`], the fields `kledger migrate` reads in
//! [`kledger_processors::migrate::LegacyRow`]) with `tier = "long_term"`, read-only, so an old
//! client keeps working while it moves to the ledger's reads. `tier` is emitted for that
//! compatibility only: it is no ledger state. Eligible: a row in effect now that is an
//! intent-backed fact about the primary user, neither restricted nor disputed — never a third
//! party's fact, a restricted, disputed or migrated (non-intent-backed) row, a document or a
//! trigger — and that
//! the principal may read (the same access rules as every read). Removing it needs the seed's
//! gates (no live reader left, supported clients moved, deletion, export and privacy proven
//! without it); it is documented as temporary in `docs/api.md`.

use std::time::Instant;

use axum::extract::{Query, State};
use axum::response::Response;
use kledger_processors::access::Principal;
use kledger_schemas::{Kind, Row, SensitivityLevel, SubjectScope, Visibility};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::read::{blocking, finish};
use super::{Api, ApiError, Caller, now_ms, target};

/// Rows one answer returns at most.
pub const LONG_TERM_LIMIT_MAX: usize = 500;
/// Rows returned when no limit is given.
pub const LONG_TERM_LIMIT_DEFAULT: usize = 100;

/// `GET /v1/compat/long_term` parameters.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct LongTermParams {
    /// The account (default: the principal's own).
    pub account: Option<String>,
    /// 1..=500, default 100.
    pub limit: Option<usize>,
}

/// One row in the released clients' shape.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct LongTermRow {
    /// The ledger row's memory id.
    pub memory_id: String,
    /// Its revision.
    pub revision: i64,
    /// The owner's account.
    pub account_id: String,
    /// Tenant block extras.
    pub team_id: Option<String>,
    /// Tenant block extras.
    pub project_id: Option<String>,
    /// Tenant block extras.
    pub agent_id: Option<String>,
    /// Always `long_term` (compatibility only: no ledger state).
    pub tier: &'static str,
    /// Always `active`.
    pub status: &'static str,
    /// The fact.
    pub content: String,
    /// The slot, if any.
    pub slot: Option<String>,
    /// Always `user`.
    pub subject: &'static str,
    /// When it took effect (ms): the legacy `captured_at`.
    pub captured_at: i64,
    /// Whether the user stated it.
    pub user_asserted: bool,
    /// Source of the creating write.
    pub source_type: String,
    /// Source of the creating write.
    pub source_id: String,
    /// Source of the creating write.
    pub source_version: String,
    /// Author behind the source (the owner's to see: none for another reader).
    pub author_id: Option<String>,
    /// Visibility.
    #[schemars(with = "String")]
    pub visibility: Visibility,
    /// Sensitivity level.
    #[schemars(with = "String")]
    pub sensitivity: SensitivityLevel,
    /// Tags.
    pub tags: Vec<String>,
    /// Language code.
    pub lang: Option<String>,
}

/// The answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LongTermAnswer {
    /// The account read.
    pub account_id: String,
    /// Eligible rows, by memory id, at most `limit`.
    pub rows: Vec<LongTermRow>,
    /// More eligible rows than `limit`, or more rows in the account than one read takes
    /// (`views.account_rows_max`).
    pub truncated: bool,
}

/// Whether `row` is served by the projection at `now`.
pub fn eligible(row: &Row, now: i64) -> bool {
    row.kind == Kind::Fact
        && row.assertion_class != kledger_schemas::AssertionClass::Disputed
        && row.is_current(now)
        && row.intent_backed
        && row.subject.scope == SubjectScope::PrimaryUser
        && row.sensitivity.level != SensitivityLevel::Restricted
}

/// `row` in the released clients' shape.
pub fn long_term(row: &Row) -> LongTermRow {
    LongTermRow {
        memory_id: row.memory_id.clone(),
        revision: row.revision,
        account_id: format!(
            "{}/{}/{}",
            row.tenant.tenant_id, row.tenant.owner_kind, row.tenant.owner_id
        ),
        team_id: row.tenant.team_id.clone(),
        project_id: row.tenant.project_id.clone(),
        agent_id: row.tenant.agent_id.clone(),
        tier: "long_term",
        status: "active",
        content: row.content.clone(),
        slot: row.slot.clone(),
        subject: "user",
        captured_at: row.valid_from,
        user_asserted: row.user_asserted,
        source_type: row.source.source_type.clone(),
        source_id: row.source.source_id.clone(),
        source_version: row.source.source_version.clone(),
        author_id: row.source.author_id.clone(),
        visibility: row.visibility,
        sensitivity: row.sensitivity.level,
        tags: row.tags.clone(),
        lang: row.lang.clone(),
    }
}

/// The projection of `q.account` (default: the principal's own) as `p` may read it
/// (blocking).
pub fn long_term_answer(
    api: &Api,
    p: &Principal,
    q: &LongTermParams,
) -> Result<LongTermAnswer, ApiError> {
    let account = target(p, q.account.as_deref())?;
    let limit = q.limit.unwrap_or(LONG_TERM_LIMIT_DEFAULT);
    if !(1..=LONG_TERM_LIMIT_MAX).contains(&limit) {
        return Err(ApiError::bad(
            "bad_limit",
            format!("limit must be 1..={LONG_TERM_LIMIT_MAX}"),
        ));
    }
    let now = now_ms();
    let (rows, capped) = super::read::readable_capped(api, p, &account)?;
    let mut rows: Vec<Row> = rows.into_iter().filter(|r| eligible(r, now)).collect();
    rows.sort_by(|a, b| a.memory_id.cmp(&b.memory_id));
    // Cut by `limit`, or by the rows read per account (`views.account_rows_max`).
    let truncated = rows.len() > limit || capped;
    // The author names an agent and a principal: the owner's to see.
    let owner = super::owns(p, &account);
    Ok(LongTermAnswer {
        account_id: account,
        rows: rows
            .iter()
            .take(limit)
            .map(|r| {
                let mut row = long_term(r);
                if !owner {
                    row.author_id = None;
                }
                row
            })
            .collect(),
        truncated,
    })
}

/// `GET /v1/compat/long_term`.
pub async fn rows(
    State(api): State<Api>,
    Caller(p): Caller,
    Query(q): Query<LongTermParams>,
) -> Response {
    let started = Instant::now();
    let r = blocking(move || long_term_answer(&api, &p, &q)).await;
    finish("compat_long_term", started, r.map(axum::Json))
}
