//! `POST /v1/search`: search_knowledge. The query is embedded (dense: the configured embedder,
//! over [`kledger_processors::index_text::query`]; sparse: BM25's terms), both providers
//! return candidate ids under the access filter, the candidates are fused by a convex
//! combination of their normalised scores ([`rank`], [`Fusion`]), hydrated from the view store and checked again (`may_read`,
//! active, current now) before `limit` handles are returned — never bodies or trigger
//! conditions.

use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::Instant;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use kledger_processors::bm25::Bm25;
use kledger_processors::ids::memory_id_of;
use kledger_processors::payload::{AccountRef, access_filter_of};
use kledger_schemas::{AssertionClass, Kind, Row, Status};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::at::{At, readable_rows_at, readable_unopened_now};
use super::policy::{self, Ask};
use super::read::{after_wait, finish};
use super::waits::caught_up;
use super::{Api, ApiError, Caller, target};
use kledger_vectors::embedder::Embedder;
use kledger_vectors::{QueryVector, VectorError, VectorIndex};

/// Longest query, chars.
pub const QUERY_CHARS_MAX: usize = 500;
/// Candidates each provider returns per requested result.
pub const CANDIDATES_PER_RESULT: usize = 4;
/// Reciprocal rank fusion's constant, when rank fusion is asked for ([`Fuse::Rank`]).
pub const RRF_K: f32 = 10.0;

/// The request (`POST /v1/search`, and `search_knowledge`'s arguments over MCP).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SearchRequest {
    /// What to look for, in natural language (1..=500 characters).
    pub query: String,
    /// Results at most, 1..=20 (default 8).
    #[serde(default)]
    pub limit: Option<usize>,
    /// Only these kinds: `fact`, `document` (playbooks), `trigger` (standing reminders)
    /// (default: all).
    #[serde(default)]
    #[schemars(with = "Vec<KindName>")]
    pub kinds: Vec<Kind>,
    /// Another account of the caller's tenant to search (default: the caller's own).
    #[serde(default)]
    pub account: Option<String>,
    /// Effective time, ms since the epoch: rows in effect then (default: now).
    #[serde(default)]
    pub as_of: Option<i64>,
    /// Record time, ms since the epoch: rows as the ledger knew them then (default: everything
    /// recorded).
    #[serde(default)]
    pub known_at: Option<i64>,
    /// Wait until the view store and the vector index have applied this commit of the account
    /// (a write's `consistency_token`; an MCP session passes its own newest on by default).
    #[serde(default)]
    pub min_commit_seq: Option<i64>,
    /// How long to wait for it, ms (0..=30000, default 5000).
    #[serde(default)]
    pub wait_ms: Option<u64>,
}

/// A row kind as a request names it (the schema of [`Kind`]'s names).
#[derive(JsonSchema)]
#[serde(rename_all = "snake_case")]
#[allow(dead_code)] // a schema only: requests decode into `Kind`
enum KindName {
    /// A fact.
    Fact,
    /// A playbook.
    Document,
    /// A standing reminder.
    Trigger,
}

/// One result: a handle, never a body or a trigger condition.
#[derive(Debug, Serialize, JsonSchema)]
pub struct Handle {
    /// The row.
    pub memory_id: String,
    /// fact | document | trigger.
    #[schemars(with = "String")]
    pub kind: Kind,
    /// Slot, if any.
    pub slot: Option<String>,
    /// The one-line content (a playbook's description).
    pub content: String,
    /// How certain it is.
    #[schemars(with = "String")]
    pub assertion_class: AssertionClass,
    /// Fused score: the weighted sum of the dense and keyword scores, each divided by its
    /// list's best (at most 1).
    pub score: f32,
    /// The row that outranks this one (the same subject and slot, a higher place in the
    /// authority table): it ranks first. Absent when nothing readable contests the row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contested_by: Option<String>,
}

/// The answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SearchAnswer {
    /// Handles, best first.
    pub results: Vec<Handle>,
}

/// How the two providers' candidates are fused ([`Fuse`]), and how many each returns.
///
/// The default is chosen by measurement on the conversation set's dev split
/// (`testkit/data/conversations`: long multi-session chats, raw turns and extracted facts;
/// `cargo bench -p kledger-testkit --bench conversations -- tune` searches the settings), with
/// the retrieval set (`testkit/data/retrieval`) checked alongside: `docs/benchmarks.md`,
/// "Retrieval quality", has both tables.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fusion {
    /// Weight of the dense (semantic) list of the query as asked.
    pub dense: f32,
    /// Weight of the dense list of the query without its names
    /// ([`kledger_processors::index_text::query_nameless`]); a query without names gives the
    /// first dense list this weight too.
    pub nameless: f32,
    /// Weight of the BM25 (keyword) list.
    pub keyword: f32,
    /// How the lists are combined.
    pub fuse: Fuse,
    /// Candidates each provider returns per requested result.
    pub depth: usize,
}

/// How two ranked lists become one.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fuse {
    /// Weighted reciprocal rank fusion: a list's rank r (from 1) adds `weight / (k + r)`. Blind
    /// to how far apart the scores are: a list whose first few are all alike weighs as much as
    /// one with a clear winner.
    Rank {
        /// The rank constant.
        k: f32,
    },
    /// Convex combination of normalised scores: each list's scores mapped onto 0..=1, then
    /// weighted and summed; a candidate absent from a list gets 0 from it. A clear keyword
    /// match (a name, a rare term) keeps its margin; a flat keyword list adds little.
    Score {
        /// Min-max: a list's worst candidate maps to 0 and its best to 1. Otherwise each score
        /// is divided by the list's best (cosine and BM25 are at least 0, their theoretical
        /// minimum), which leaves a list of near-equal scores near-equal.
        min_max: bool,
    },
}

impl Default for Fusion {
    fn default() -> Self {
        Self {
            dense: DENSE_WEIGHT,
            nameless: NAMELESS_WEIGHT,
            keyword: 1.0 - DENSE_WEIGHT - NAMELESS_WEIGHT,
            fuse: Fuse::Score { min_max: true },
            depth: CANDIDATES_PER_RESULT,
        }
    }
}

/// The dense list's share of the default score fusion.
pub const DENSE_WEIGHT: f32 = 0.4;
/// The nameless dense list's share of the default score fusion (BM25 has the rest).
pub const NAMELESS_WEIGHT: f32 = 0.4;

impl Fusion {
    /// Fuses ranked lists (dense, the nameless query's dense, keyword), best first; ties by
    /// id, so the order is deterministic.
    pub fn fuse(
        &self,
        dense: &[(Uuid, f32)],
        nameless: &[(Uuid, f32)],
        keyword: &[(Uuid, f32)],
    ) -> Vec<(Uuid, f32)> {
        let mut scores: BTreeMap<Uuid, f32> = BTreeMap::new();
        for (list, weight) in [
            (dense, self.dense),
            (nameless, self.nameless),
            (keyword, self.keyword),
        ] {
            if weight == 0.0 {
                continue;
            }
            match self.fuse {
                Fuse::Rank { k } => {
                    for (rank, (id, _)) in list.iter().enumerate() {
                        *scores.entry(*id).or_insert(0.0) += weight / (k + rank as f32 + 1.0);
                    }
                }
                Fuse::Score { min_max } => {
                    let best = list.iter().map(|(_, s)| *s).fold(0.0f32, f32::max);
                    let floor = if min_max {
                        list.iter().map(|(_, s)| *s).fold(best, f32::min).max(0.0)
                    } else {
                        0.0
                    };
                    for (id, score) in list {
                        let norm = if best > floor {
                            (score.max(0.0) - floor).max(0.0) / (best - floor)
                        } else if best > 0.0 {
                            1.0
                        } else {
                            0.0
                        };
                        *scores.entry(*id).or_insert(0.0) += weight * norm;
                    }
                }
            }
        }
        let mut fused: Vec<(Uuid, f32)> = scores.into_iter().collect();
        fused.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        fused
    }
}

/// The candidates of `query` under `filter` (the access filter: applied before ranking by
/// both providers), fused and best first, at most `limit × depth` of each: the dense
/// provider's nearest rows and BM25's best, as point ids.
pub fn rank(
    index: &Arc<dyn VectorIndex>,
    embedder: &dyn Embedder,
    fusion: &Fusion,
    filter: &serde_json::Value,
    query: &str,
    limit: usize,
    keywords: &KeywordThreads,
) -> Result<Vec<(Uuid, f32)>, VectorError> {
    let depth = limit * fusion.depth;
    let started = Instant::now();
    // The query as asked and, when it names someone, without the names: one batch (the model
    // streams its weights once for both).
    let asked = kledger_processors::index_text::query(query);
    let nameless =
        kledger_processors::index_text::query_nameless(query).filter(|_| fusion.nameless > 0.0);
    let mut texts = vec![asked.as_str()];
    texts.extend(nameless.as_deref());
    let vectors = embedder.embed_queries(&texts);
    metrics::counter!(kledger_runtime::metrics::EMBEDDED_TEXTS_TOTAL, "use" => "queries")
        .increment(texts.len() as u64);
    metrics::histogram!(kledger_runtime::metrics::EMBED_SECONDS, "use" => "queries")
        .record(started.elapsed().as_secs_f64());
    let mut vectors = vectors?.into_iter();
    let mut next = || {
        vectors
            .next()
            .ok_or_else(|| VectorError::Backend("the embedder returned nothing".into()))
    };
    let asked_vector = next()?;
    // The nameless query's neighbours on a keyword thread while this one finds the asked
    // query's (on this thread after it when the queue is full).
    let by_nameless = match nameless {
        Some(_) => {
            let (index, filter, v) = (index.clone(), filter.clone(), next()?);
            Some(beside(
                keywords,
                move || index.query(QueryVector::Dense(v), &filter, depth),
                "the nameless query failed",
            ))
        }
        None => None,
    };
    // The asked query's neighbours and BM25's best, in one request (the filter read once). The
    // keyword query needs no embedding and ran on a keyword thread beside the model once, but
    // that saved nothing at the median and added to the tail (the model is bound by memory
    // bandwidth, which a query beside it shares); so did a keyword thread beside the dense
    // query (the hand-over's own tail).
    let sparse = Bm25::default().query(query);
    let mut queries = vec![(QueryVector::Dense(asked_vector), depth)];
    if !sparse.indices.is_empty() {
        queries.push((QueryVector::Sparse(sparse), depth));
    }
    let mut lists = index.query_each(queries, filter)?.into_iter();
    let (by_vector, by_keyword) = (
        lists.next().unwrap_or_default(),
        lists.next().unwrap_or_default(),
    );
    let by_nameless = match by_nameless {
        Some(wait) => wait()?,
        None => by_vector.clone(),
    };
    Ok(fusion.fuse(&by_vector, &by_nameless, &by_keyword))
}

/// `query`'s answer, found on a keyword thread while the caller goes on; when no thread could
/// start or the queue is full, on the caller's thread when it asks for the answer. `failed`
/// is the error when the thread's query panicked.
fn beside<T: Send + 'static>(
    keywords: &KeywordThreads,
    query: impl FnOnce() -> Result<T, VectorError> + Send + 'static,
    failed: &'static str,
) -> impl FnOnce() -> Result<T, VectorError> {
    let (tx, rx) = mpsc::sync_channel(1);
    let job: Job = Box::new(move || {
        let _ = tx.send(query());
    });
    let unsent = match keywords.queue() {
        Some(q) => match q.try_send(job) {
            Ok(()) => None,
            Err(mpsc::TrySendError::Full(job) | mpsc::TrySendError::Disconnected(job)) => Some(job),
        },
        None => Some(job),
    };
    move || {
        if let Some(job) = unsent {
            job();
        }
        rx.recv()
            .unwrap_or_else(|_| Err(VectorError::Backend(failed.into())))
    }
}

type Job = Box<dyn FnOnce() + Send>;

/// Queries (a question's nameless dense query) waiting for a keyword thread at most.
const KEYWORD_QUEUE: usize = 64;

/// The keyword threads of one API (one per core, at most 8), started on its first search and
/// ended when it is dropped: a search that started a thread of its own paid ≈ 90 µs for it on
/// the bench machine, a third of a raw filtered query.
#[derive(Debug, Default)]
pub struct KeywordThreads {
    /// The threads' queue (`None`: no thread could start).
    queue: OnceLock<Option<mpsc::SyncSender<Job>>>,
}

impl KeywordThreads {
    /// The queue, the threads started on first use.
    fn queue(&self) -> Option<&mpsc::SyncSender<Job>> {
        self.queue.get_or_init(start_keyword_threads).as_ref()
    }
}

/// Starts the keyword threads; each ends when the queue's sender is dropped.
fn start_keyword_threads() -> Option<mpsc::SyncSender<Job>> {
    let (tx, rx) = mpsc::sync_channel::<Job>(KEYWORD_QUEUE);
    let rx = Arc::new(Mutex::new(rx));
    let threads = std::thread::available_parallelism().map_or(1, usize::from);
    let started = (0..threads.clamp(1, 8))
        .filter(|i| {
            let rx = rx.clone();
            std::thread::Builder::new()
                .name(format!("kledger-keyword-{i}"))
                .spawn(move || {
                    loop {
                        let job = match rx.lock() {
                            Ok(rx) => rx.recv(),
                            Err(_) => return,
                        };
                        let Ok(job) = job else { return };
                        // A panicking query drops its answer's sender (its search fails), not
                        // this thread.
                        let _ = std::panic::catch_unwind(AssertUnwindSafe(job));
                    }
                })
                .is_ok()
        })
        .count();
    (started > 0).then_some(tx)
}

/// search_knowledge for `p` (blocking: embedder, index and view store calls).
pub fn search_knowledge(
    api: &Api,
    p: &kledger_processors::access::Principal,
    req: SearchRequest,
) -> Result<SearchAnswer, ApiError> {
    let account = target(p, req.account.as_deref())?;
    let limit = req.limit.unwrap_or(8);
    if !(1..=20).contains(&limit) {
        return Err(ApiError::bad("bad_limit", "limit must be in 1..=20"));
    }
    let n = req.query.chars().count();
    if !(1..=QUERY_CHARS_MAX).contains(&n) || req.query.trim().is_empty() {
        return Err(ApiError::bad("bad_query", "query must have 1..=500 chars"));
    }
    let Some(slot) = &api.search else {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "search_unavailable",
            "no vector index in this process",
        ));
    };
    let Some(search) = slot.get() else {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "search_unavailable",
            "the vector index is not open yet",
        ));
    };
    caught_up(api, p, &account, req.min_commit_seq, true)?;
    policy::history(api, p, &account, Ask::at(req.as_of, req.known_at))?;
    let when = At::new(req.as_of, req.known_at);
    let generation = search.live.get();
    let acct = AccountRef::parse(&account).ok_or_else(ApiError::unavailable)?;
    // At a past time the rows in effect then may be superseded or closed now: every status is
    // a candidate, and twice as many are asked for.
    let past = when.is_past();
    let filter = access_filter_of(p, &acct, &req.kinds, !past);
    let fusion = if past {
        Fusion {
            depth: Fusion::default().depth * 2,
            ..Fusion::default()
        }
    } else {
        Fusion::default()
    };
    let ranked = rank(
        &generation.index,
        generation.embedder.as_ref(),
        &fusion,
        &filter,
        &req.query,
        limit,
        &api.keywords,
    )
    .map_err(ApiError::internal)?;
    let mut results: Vec<(Handle, Row)> = Vec::new();
    // Whether a readable candidate answers: active, current at the read's time, of a kind asked.
    let answers = |row: &Row| {
        row.status == Status::Active
            && row.is_current(when.as_of)
            && (req.kinds.is_empty() || req.kinds.contains(&row.kind))
    };
    // Hydrate (the row as it stood at the read's time) and check again: the index may lag the
    // view store, or be wrong.
    if past {
        // Candidates are read `limit` at a time, in one batched read each, until `limit` pass.
        for batch in ranked.chunks(limit) {
            if results.len() >= limit {
                break;
            }
            let ids = memory_ids(batch);
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            for (row, (_, score)) in readable_rows_at(api, p, &account, &ids, when)?
                .into_iter()
                .zip(batch)
            {
                if let Some(row) = row.filter(|r| answers(r))
                    && results.len() < limit
                {
                    results.push(handled(row, *score));
                }
            }
        }
    } else {
        // Now, every field the checks read is unsealed: candidates are read sealed, a quarter
        // more than `limit` at a time (a few that are not current need no second read; each
        // row read is a cold lookup after the model has run), and only the rows that answer
        // are opened (a row whose data key is gone, its purge folding, opens to none and the
        // next is taken).
        let views = api.views.get();
        for batch in ranked.chunks(limit + limit.div_ceil(4)) {
            if results.len() >= limit {
                break;
            }
            let ids = memory_ids(batch);
            let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            let mut answering = readable_unopened_now(&views, p, &account, &ids, when)?
                .into_iter()
                .zip(batch)
                .filter_map(|(row, (_, score))| row.filter(|r| answers(r)).map(|r| (r, *score)));
            while results.len() < limit {
                let (rows, scores): (Vec<Option<Row>>, Vec<f32>) = answering
                    .by_ref()
                    .take(limit - results.len())
                    .map(|(r, s)| (Some(r), s))
                    .unzip();
                if rows.is_empty() {
                    break;
                }
                for (row, score) in views.open_rows(&account, rows)?.into_iter().zip(scores) {
                    if let Some(row) = row {
                        results.push(handled(row, score));
                    }
                }
            }
        }
    }
    let rows: Vec<Row> = results.iter().map(|(_, r)| r.clone()).collect();
    let contested = super::conflicts::contested_in(api, p, &account, &rows, when)?;
    let results = winners_first(results.into_iter().map(|(h, _)| h).collect(), &contested);
    Ok(SearchAnswer { results })
}

/// A result: its handle, and the row kept for the conflict check.
fn handled(row: Row, score: f32) -> (Handle, Row) {
    (
        Handle {
            memory_id: row.memory_id.clone(),
            kind: row.kind,
            slot: row.slot.clone(),
            content: row.content.clone(),
            assertion_class: row.assertion_class,
            score,
            contested_by: None,
        },
        row,
    )
}

/// The memory ids of ranked point ids.
fn memory_ids(batch: &[(Uuid, f32)]) -> Vec<String> {
    batch
        .iter()
        .map(|(id, _)| memory_id_of(id.as_u128()))
        .collect()
}

/// `results` with each loser of a conflict marked `contested_by` its winner, and each winner
/// that is among them moved just ahead of its first loser (the rest keep their order).
fn winners_first(results: Vec<Handle>, contested: &BTreeMap<String, String>) -> Vec<Handle> {
    let mut slots: Vec<Option<Handle>> = results.into_iter().map(Some).collect();
    let at: BTreeMap<String, usize> = slots
        .iter()
        .enumerate()
        .filter_map(|(i, h)| Some((h.as_ref()?.memory_id.clone(), i)))
        .collect();
    let mut out = Vec::with_capacity(slots.len());
    for i in 0..slots.len() {
        let Some(mut h) = slots[i].take() else {
            continue;
        };
        if let Some(winner) = contested.get(&h.memory_id) {
            if let Some(w) = at.get(winner).and_then(|&j| slots[j].take()) {
                out.push(w);
            }
            h.contested_by = Some(winner.clone());
        }
        out.push(h);
    }
    out
}

/// A search request's body (≤16 KiB, `413 body_too_large` beyond) in its JSON form.
pub fn small_json<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, ApiError> {
    if body.len() > 16 * 1024 {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "body_too_large",
            "a search request is at most 16 KiB",
        ));
    }
    serde_json::from_slice(body).map_err(|e| ApiError::bad("malformed_json", e.to_string()))
}

/// `POST /v1/search`.
pub async fn search(
    State(api): State<Api>,
    Caller(p): Caller,
    body: axum::body::Bytes,
) -> Response {
    let started = Instant::now();
    let r = async {
        let req: SearchRequest = small_json(&body)?;
        let (a, p2) = (api.clone(), p.clone());
        let (account, min, wait) = (req.account.clone(), req.min_commit_seq, req.wait_ms);
        after_wait(&a, &p2, account.as_deref(), min, wait, true, move || {
            search_knowledge(&api, &p, req)
        })
        .await
    }
    .await
    .map(axum::Json);
    finish("search", started, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_keyword_queue_runs_the_nameless_query_on_the_callers_thread() {
        use kledger_vectors::Point;
        use kledger_vectors::edge::EdgeIndex;
        use kledger_vectors::embedder::HashingEmbedder;
        use std::sync::Condvar;
        let dir = tempfile::tempdir().unwrap();
        let index: Arc<dyn VectorIndex> =
            Arc::new(EdgeIndex::open(dir.path(), "cm_text_16_v1", 16).unwrap());
        let embedder = HashingEmbedder::new(16);
        let mut texts = vec!["Plays the cello on Sundays".to_owned()];
        texts.extend((0..20).map(|i| format!("Listens to music while cooking dish {i}")));
        let points: Vec<Point> = texts
            .iter()
            .enumerate()
            .map(|(n, t)| Point {
                id: Uuid::from_u128(n as u128 + 1),
                dense: embedder.embed(&[t.as_str()]).unwrap().remove(0),
                sparse: Bm25::default().document(t),
                payload: serde_json::Map::new(),
            })
            .collect();
        index.write_batch(points, &[]).unwrap();
        let filter = serde_json::json!({});
        let keywords = KeywordThreads::default();
        let ask = || {
            rank(
                &index,
                &embedder,
                &Fusion::default(),
                &filter,
                "cello Ana",
                4,
                &keywords,
            )
            .unwrap()
        };
        let free = ask();
        assert_eq!(free[0].0, Uuid::from_u128(1), "{free:?}");
        // Every keyword thread busy and the queue full: jobs that wait on a gate. The queue
        // counts as full only once every thread holds one of them (a thread that takes its job
        // after the queue filled would leave a place for the search's own).
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let running = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let queue = keywords.queue().expect("keyword threads");
        let threads = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .clamp(1, 8);
        let deadline = Instant::now() + std::time::Duration::from_secs(30);
        let mut held = 0;
        loop {
            let (gate, started) = (gate.clone(), running.clone());
            let job: Job = Box::new(move || {
                started.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let (open, opened) = &*gate;
                let mut open = open.lock().unwrap();
                while !*open {
                    open = opened.wait(open).unwrap();
                }
            });
            if queue.try_send(job).is_ok() {
                held += 1;
                continue;
            }
            if running.load(std::sync::atomic::Ordering::SeqCst) >= threads {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "keyword threads never took their jobs"
            );
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(held >= KEYWORD_QUEUE, "{held}");
        let full = ask();
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
        assert_eq!(full, free);
    }

    #[test]
    fn fusion_rewards_agreement_and_breaks_ties_by_id() {
        let (a, b, c) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let rank = Fusion {
            dense: 4.0,
            nameless: 0.0,
            keyword: 1.0,
            fuse: Fuse::Rank { k: RRF_K },
            depth: CANDIDATES_PER_RESULT,
        };
        for f in [Fusion::default(), rank] {
            let dense = [(b, 0.9), (a, 0.85), (c, 0.3)];
            let fused = f.fuse(&dense, &dense, &[(a, 5.0)]);
            assert_eq!(fused[0].0, a, "in both lists: {f:?}");
            assert_eq!(
                fused.iter().map(|x| x.0).collect::<Vec<_>>(),
                vec![a, b, c],
                "{f:?}"
            );
            // The dense lists weigh more: their first beats the keyword list's first.
            assert_eq!(
                f.fuse(&[(c, 1.0)], &[(c, 1.0)], &[(b, 1.0)])[0].0,
                c,
                "{f:?}"
            );
            let even = Fusion {
                dense: 1.0,
                nameless: 0.0,
                keyword: 1.0,
                ..f
            };
            let tie = even.fuse(&[(c, 1.0)], &[], &[(b, 1.0)]);
            assert_eq!(tie[0].0, b, "equal scores: by id");
        }
    }

    #[test]
    fn score_fusion_normalises_each_list() {
        let (a, b, c) = (Uuid::from_u128(1), Uuid::from_u128(2), Uuid::from_u128(3));
        let f = Fusion::default();
        assert_eq!(f.fuse, Fuse::Score { min_max: true });
        // The nameless query's list decides between rows the named query finds alike.
        let named = [(a, 0.61), (b, 0.60), (c, 0.20)];
        let nameless = [(b, 0.70), (a, 0.40), (c, 0.30)];
        assert_eq!(f.fuse(&named, &nameless, &[])[0].0, b);
        // Min-max: a list's best maps to its weight, its worst to 0, whatever their scale.
        let fused = f.fuse(&[(a, 0.9), (b, 0.5)], &[], &[(b, 40.0), (a, 20.0)]);
        let score = |id| fused.iter().find(|x| x.0 == id).map(|x| x.1).unwrap();
        assert!((score(a) - f.dense).abs() < 1e-6, "{fused:?}");
        assert!((score(b) - f.keyword).abs() < 1e-6, "{fused:?}");
        // Divided by the best instead: near-equal scores stay near-equal.
        let by_best = Fusion {
            fuse: Fuse::Score { min_max: false },
            ..f
        };
        let fused = by_best.fuse(&[(a, 0.50), (b, 0.49)], &[], &[]);
        assert!(
            (fused[0].1 - fused[1].1).abs() < 0.05 * f.dense,
            "{fused:?}"
        );
        // Scores are at most the weights' sum; negative cosines count as 0; a list of one
        // candidate gives it its full weight.
        let fused = f.fuse(&[(a, -0.2), (b, 0.4)], &[(b, 0.4)], &[(c, 3.0)]);
        assert!(
            fused.iter().all(|(_, s)| (0.0..=1.0 + 1e-6).contains(s)),
            "{fused:?}"
        );
        assert_eq!(fused[0].0, b);
        // Empty lists fuse to nothing.
        assert!(f.fuse(&[], &[], &[]).is_empty());
    }
}
