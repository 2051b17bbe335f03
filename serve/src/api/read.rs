//! Reads: profile, playbook, export (the entity timeline is [`super::timeline`]). Every row is hydrated from the view store
//! and passes [`may_read`] before it is used.

use std::time::Instant;

use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use kledger_processors::access::{Principal, may_read};
use kledger_processors::render;
use kledger_schemas::{AssertionClass, Row};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::at::{At, readable_at, readable_row_at};
use super::policy::{self, Ask};
use super::waits::{caught_up, until_caught_up};
use super::{AccountParam, Api, ApiError, Caller, observe, owns, target};

/// Turns a result into a response and observes it.
pub fn finish<T: IntoResponse>(
    endpoint: &'static str,
    started: Instant,
    r: Result<T, ApiError>,
) -> Response {
    let resp = r.into_response();
    observe(endpoint, started, resp.status());
    resp
}

/// Runs `f` off the async executor (view store reads block).
pub async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(ApiError::internal)?
}

/// Runs the blocking read `f` of `account` (default: `p`'s own) once the projections it looks
/// at (`vectors`: search's index too) have applied `min_commit_seq`, or its `wait_ms` has
/// passed: the wait holds no thread ([`until_caught_up`]).
pub async fn after_wait<T: Send + 'static>(
    api: &Api,
    p: &Principal,
    account: Option<&str>,
    min_commit_seq: Option<i64>,
    wait_ms: Option<u64>,
    vectors: bool,
    f: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let account = target(p, account)?;
    until_caught_up(api, p, &account, min_commit_seq, wait_ms, vectors).await?;
    blocking(f).await
}

/// `GET /v1/profile` parameters (the MCP tool `get_profile` takes the same).
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
pub struct ProfileParams {
    /// Another account of the caller's tenant (default: the caller's own).
    pub account: Option<String>,
    /// Effective time to render at, ms since the epoch (default: now).
    pub as_of: Option<i64>,
    /// Record time, ms since the epoch: what the ledger had recorded by then (default:
    /// everything).
    pub known_at: Option<i64>,
    /// Wait until the view store has applied this commit of the account (a write's
    /// `consistency_token`; an MCP session passes its own newest on by default).
    pub min_commit_seq: Option<i64>,
    /// How long to wait for it, ms (0..=30000, default 5000).
    pub wait_ms: Option<u64>,
}

/// The profile answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ProfileAnswer {
    /// The account.
    pub account_id: String,
    /// Last commit the view store folded for it (the owner only: to anyone else it would tell
    /// how many commits the account has).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub commit_seq: Option<i64>,
    /// Whether the account holds more rows than a read takes (`views.account_rows_max`), so the
    /// profile was rendered from some of them (the owner only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capped: Option<bool>,
    /// Effective time rendered at.
    pub as_of: i64,
    /// Record time rendered at, when one was asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub known_at: Option<i64>,
    /// Profile block (≤2,400 chars, whole lines).
    pub profile: String,
    /// Playbook index (≤800 chars, `memory_id: description` lines).
    pub playbook_index: String,
}

/// The rows of `account` that `p` may read (hydrated from the view store), at most
/// `views.account_rows_max` of the account's rows read.
pub fn readable(api: &Api, p: &Principal, account: &str) -> Result<Vec<Row>, ApiError> {
    Ok(readable_capped(api, p, account)?.0)
}

/// [`readable`], and whether the cap cut the read (the account has more rows).
pub fn readable_capped(
    api: &Api,
    p: &Principal,
    account: &str,
) -> Result<(Vec<Row>, bool), ApiError> {
    let cap = api.config.views.account_rows_max;
    // One more than the cap tells whether it cut.
    let mut rows = api.views.get().rows(account, cap.saturating_add(1))?;
    let capped = rows.len() > cap;
    rows.truncate(cap);
    rows.retain(|r| may_read(p, r));
    Ok((rows, capped))
}

/// `GET /v1/profile`.
pub async fn profile(
    State(api): State<Api>,
    Caller(p): Caller,
    Query(q): Query<ProfileParams>,
) -> Response {
    let started = Instant::now();
    let (a, p2) = (api.clone(), p.clone());
    let (account, min, wait) = (q.account.clone(), q.min_commit_seq, q.wait_ms);
    let r = after_wait(&a, &p2, account.as_deref(), min, wait, false, move || {
        profile_answer(&api, &p, &q)
    })
    .await
    .map(axum::Json);
    finish("profile", started, r)
}

/// The profile of `q.account` (default: the principal's own) as `p` may read it, at `q`'s
/// effective and record times (blocking; `409` unless the view store has applied
/// `q.min_commit_seq`: the HTTP and MCP reads wait for it first).
pub fn profile_answer(
    api: &Api,
    p: &Principal,
    q: &ProfileParams,
) -> Result<ProfileAnswer, ApiError> {
    let account = target(p, q.account.as_deref())?;
    caught_up(api, p, &account, q.min_commit_seq, false)?;
    policy::history(api, p, &account, Ask::at(q.as_of, q.known_at))?;
    let when = At::new(q.as_of, q.known_at);
    let (rows, capped) = readable_at(api, p, &account, when)?;
    let owner = owns(p, &account);
    Ok(ProfileAnswer {
        commit_seq: if owner {
            Some(api.views.get().mark(&account)?.commit_seq)
        } else {
            None
        },
        capped: owner.then_some(capped),
        profile: render::profile(&rows, when.as_of),
        playbook_index: render::playbook_index(&rows, when.as_of),
        account_id: account,
        as_of: when.as_of,
        known_at: when.known_at,
    })
}

/// The playbook answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct PlaybookAnswer {
    /// The document row.
    pub memory_id: String,
    /// One-line description.
    pub description: String,
    /// The body.
    pub body: String,
    /// How certain it is.
    #[schemars(with = "String")]
    pub assertion_class: AssertionClass,
    /// Effective from, ms.
    pub valid_from: i64,
    /// Tags.
    pub tags: Vec<String>,
    /// Revision.
    pub revision: i64,
}

/// `GET /v1/playbooks/{id}`: one uniform `unavailable` for missing, foreign, inactive,
/// unreadable or non-document ids.
pub async fn playbook(
    State(api): State<Api>,
    Caller(p): Caller,
    Path(id): Path<String>,
    Query(q): Query<ProfileParams>,
) -> Response {
    let started = Instant::now();
    let (a, p2) = (api.clone(), p.clone());
    let (account, min, wait) = (q.account.clone(), q.min_commit_seq, q.wait_ms);
    let r = after_wait(&a, &p2, account.as_deref(), min, wait, false, move || {
        read_playbook(&api, &p, &id, &q)
    })
    .await
    .map(axum::Json);
    finish("playbook", started, r)
}

/// read_playbook: document `id` of `q.account` (default: the principal's own) if `p` may read
/// it and it was an active playbook at `q`'s effective and record times; one uniform
/// `unavailable` otherwise (blocking; `409` unless the view store has applied
/// `q.min_commit_seq`).
pub fn read_playbook(
    api: &Api,
    p: &Principal,
    id: &str,
    q: &ProfileParams,
) -> Result<PlaybookAnswer, ApiError> {
    let account = target(p, q.account.as_deref())?;
    if id.len() > 64 {
        return Err(ApiError::unavailable());
    }
    caught_up(api, p, &account, q.min_commit_seq, false)?;
    policy::history(api, p, &account, Ask::at(q.as_of, q.known_at))?;
    let when = At::new(q.as_of, q.known_at);
    let row = readable_row_at(api, p, &account, id, when)?
        .filter(|r| render::is_playbook(r, when.as_of))
        .ok_or_else(ApiError::unavailable)?;
    Ok(PlaybookAnswer {
        memory_id: row.memory_id,
        description: row.content,
        body: row.body.unwrap_or_default(),
        assertion_class: row.assertion_class,
        valid_from: row.valid_from,
        tags: row.tags,
        revision: row.revision,
    })
}

/// Export bytes handed to the connection at once; at most [`EXPORT_CHUNKS_IN_FLIGHT`] wait
/// for a slow client, so one export holds a bounded amount of memory.
pub const EXPORT_CHUNK_BYTES: usize = 64 << 10;
/// Chunks of one export queued for its connection at most.
pub const EXPORT_CHUNKS_IN_FLIGHT: usize = 4;

/// `GET /v1/export`: every version of every row of the principal's own account, as JSON lines
/// (tombstones included, their content erased), streamed: the rows are read while the client
/// reads the answer, in chunks of 64 KiB with at most 4 queued, so an export of any size holds
/// a bounded amount of memory. Only the owner may export; `api.exports_per_principal_max`
/// exports of one principal and `api.exports_max` in all run at once (`429 too_many_exports`
/// beyond); one whose client stops reading ends after `http.write_timeout_ms`.
pub async fn export(
    State(api): State<Api>,
    Caller(p): Caller,
    Query(q): Query<AccountParam>,
) -> Response {
    let started = Instant::now();
    let r = (|| {
        let account = target(&p, q.account.as_deref())?;
        if !owns(&p, &account) {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "export_owner_only",
                "only the account's owner may export it",
            ));
        }
        // Every version of every row is history: a tenant whose policy keeps history from its
        // owners keeps the export from them too.
        let history = Ask {
            history: true,
            ..Ask::default()
        };
        policy::history(&api, &p, &account, history)?;
        let permit = api
            .exports
            .take(&super::waits::caller_key(&p))
            .ok_or_else(|| {
                metrics::counter!(kledger_runtime::metrics::API_REFUSED_TOTAL, "reason" => "too_many_exports")
                    .increment(1);
                ApiError::new(
                    StatusCode::TOO_MANY_REQUESTS,
                    "too_many_exports",
                    "too many exports run already (this principal's or all of them); try again later",
                )
            })?;
        Ok((account, permit))
    })();
    let (account, permit) = match r {
        Ok(x) => x,
        Err(e) => return finish("export", started, Err::<Response, _>(e)),
    };
    let (tx, rx) =
        tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(EXPORT_CHUNKS_IN_FLIGHT);
    let views = api.views.clone();
    let sources = api.sources.clone();
    tokio::task::spawn_blocking(move || {
        let _permit = permit;
        let mut buf = Vec::with_capacity(EXPORT_CHUNK_BYTES + 4096);
        // The ledger's rows, then the source documents (people, conversations, calendar,
        // screen) from the sources store, when this process has it.
        let stores = std::iter::once(views.get()).chain(sources.map(|s| s.get()));
        let result = stores.into_iter().try_for_each(|store| {
            store
                .history(&account, usize::MAX, &mut |mut row| {
                    // The rows' content, opened; their sealing (key id, ciphertext) is kledger's own.
                    row.sealed = None;
                    serde_json::to_writer(&mut buf, &row)
                        .map_err(|e| kledger_state::StateError::Corrupt(e.to_string()))?;
                    buf.push(b'\n');
                    if buf.len() >= EXPORT_CHUNK_BYTES {
                        let chunk = std::mem::replace(
                            &mut buf,
                            Vec::with_capacity(EXPORT_CHUNK_BYTES + 4096),
                        );
                        // The client went away: stop reading.
                        tx.blocking_send(Ok(chunk)).map_err(|_| {
                            kledger_state::StateError::Corrupt("export: client gone".into())
                        })?;
                    }
                    Ok(())
                })
                .map(|_| ())
        });
        match result {
            Ok(_) if !buf.is_empty() => {
                let _ = tx.blocking_send(Ok(buf));
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(error = %e, "export ended early");
                // A broken chunked answer tells the client the export is incomplete.
                let _ = tx.blocking_send(Err(std::io::Error::other("export ended early")));
            }
        }
    });
    let body =
        axum::body::Body::from_stream(futures_util::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|c| (c, rx))
        }));
    let resp = ([(header::CONTENT_TYPE, "application/x-ndjson")], body).into_response();
    observe("export", started, resp.status());
    resp
}
