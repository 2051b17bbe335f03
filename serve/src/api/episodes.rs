//! `GET /v1/episodes`: MemMachine's episodic memory (seed 003) — the episodes of an account,
//! listed by MemMachine's org / project / session hierarchy, every `MemoryMessage` field kept.
//!
//! Episodes are source documents (`POST /v1/sources/episodes`, the topic
//! `<prefix>.sources.episodes.v1`, `kledger publish --kind episodes`): decided, sealed,
//! committed, projected into the sources store, replayed, rebuilt and purged like every
//! source document. An episode is joined to its session, so a session's episodes are one
//! exact read of the sources store (newest first) and a purge of entity `<session_id>` erases
//! them. `org_id` must be the principal's tenant (another org answers none), `project_id`
//! keeps the episodes of that project. Owner-scoped and policy-filtered like every read.

use std::time::Instant;

use axum::extract::{Query, State};
use axum::http::StatusCode;
use axum::response::Response;
use kledger_processors::access::{Principal, may_read};
use kledger_schemas::{ContentType, EpisodeType, SourceDoc, SourceKind, Status};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::read::{blocking, finish};
use super::{Api, ApiError, Caller, target};

/// Episodes one answer returns at most.
pub const EPISODES_LIMIT_MAX: usize = 200;
/// Episodes returned when no limit is given.
pub const EPISODES_LIMIT_DEFAULT: usize = 50;

/// `GET /v1/episodes` parameters.
#[derive(Debug, Default, Deserialize, JsonSchema)]
pub struct EpisodeParams {
    /// The account (default: the principal's own).
    pub account: Option<String>,
    /// MemMachine org = kledger tenant.
    pub org_id: Option<String>,
    /// MemMachine project (`proj_…`).
    pub project_id: Option<String>,
    /// MemMachine session (default: every session of the account).
    pub session_id: Option<String>,
    /// 1..=200, default 50.
    pub limit: Option<usize>,
}

/// One episode: the `MemoryMessage` as it was given, with its place in the hierarchy.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct Episode {
    /// The episode's id.
    pub episode_id: String,
    /// The ledger row that holds it.
    pub memory_id: String,
    /// MemMachine org (the tenant).
    pub org_id: String,
    /// MemMachine project.
    pub project_id: Option<String>,
    /// MemMachine session.
    pub session_id: String,
    /// `message`.
    #[schemars(with = "String")]
    pub episode_type: EpisodeType,
    /// `string`.
    #[schemars(with = "String")]
    pub content_type: ContentType,
    /// The raw text of the message.
    pub content: String,
    /// Who wrote it.
    pub producer: String,
    /// For whom.
    pub produced_for: String,
    /// UTC time, ms since the epoch.
    pub timestamp: i64,
    /// `user`, `assistant`, `system`, …
    pub role: String,
    /// The custom metadata, as given.
    pub metadata: serde_json::Value,
}

/// The answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct EpisodesAnswer {
    /// The account read.
    pub account_id: String,
    /// Episodes, newest first, at most `limit`.
    pub episodes: Vec<Episode>,
    /// More episodes than `limit` were read.
    pub truncated: bool,
}

/// The episodes of `q.account` (default: the principal's own) as `p` may read them
/// (blocking).
pub fn episodes_answer(
    api: &Api,
    p: &Principal,
    q: &EpisodeParams,
) -> Result<EpisodesAnswer, ApiError> {
    let account = target(p, q.account.as_deref())?;
    let limit = q.limit.unwrap_or(EPISODES_LIMIT_DEFAULT);
    if !(1..=EPISODES_LIMIT_MAX).contains(&limit) {
        return Err(ApiError::bad(
            "bad_limit",
            format!("limit must be 1..={EPISODES_LIMIT_MAX}"),
        ));
    }
    let Some(store) = api.sources.as_ref().map(|s| s.get()) else {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "sources_unavailable",
            "this process holds no sources store (sources.enabled)",
        ));
    };
    if q.org_id.as_deref().is_some_and(|o| o != p.tenant_id) {
        return Ok(EpisodesAnswer {
            account_id: account,
            episodes: Vec::new(),
            truncated: false,
        });
    }
    let session = q.session_id.as_deref().unwrap_or(kledger_state::ALL_PEOPLE);
    // The newest entries, a bounded read: a project filter looks at as many as the limit asks
    // for, and says when there were more.
    let scan = limit.saturating_mul(4).min(EPISODES_LIMIT_MAX * 4);
    let ids = store.source_entries(&account, SourceKind::Episodes, session, scan + 1)?;
    let mut truncated = ids.len() > scan;
    let mut episodes = Vec::new();
    for id in ids.iter().take(scan) {
        let Some(row) = store.row(&account, id)? else {
            continue;
        };
        if row.status != Status::Active || !may_read(p, &row) {
            continue;
        }
        let Some(SourceDoc::Episode(e)) = row.record.as_ref().and_then(|r| r.doc.clone()) else {
            continue;
        };
        if q.project_id.is_some() && e.project_id != q.project_id {
            continue;
        }
        if episodes.len() == limit {
            truncated = true;
            break;
        }
        episodes.push(Episode {
            episode_id: e.episode_id,
            memory_id: row.memory_id,
            org_id: row.tenant.tenant_id,
            project_id: e.project_id,
            session_id: e.session_id,
            episode_type: e.episode_type,
            content_type: e.content_type,
            content: e.content,
            producer: e.producer,
            produced_for: e.produced_for,
            timestamp: e.timestamp,
            role: e.role,
            metadata: serde_json::from_str(&e.metadata).unwrap_or_default(),
        });
    }
    Ok(EpisodesAnswer {
        account_id: account,
        episodes,
        truncated,
    })
}

/// `GET /v1/episodes`.
pub async fn episodes(
    State(api): State<Api>,
    Caller(p): Caller,
    Query(q): Query<EpisodeParams>,
) -> Response {
    let started = Instant::now();
    let r = blocking(move || episodes_answer(&api, &p, &q)).await;
    finish("episodes", started, r.map(axum::Json))
}
