//! Bounded conversation retrieval (`POST /v1/conversations/search`, MCP
//! `search_conversations`): off by default (`retrieval.conversations.enabled`).
//!
//! For an agent whose question the ledger does not answer, the conversations the account's
//! summaries point at, and a bounded part of their transcripts:
//! - **Triage over summaries**, of the newest `retrieval.conversations.scan_max` conversations
//!   the caller may read: *literal* (a term of the query in the summary), *semantic* (the
//!   summary's vector near the query's: cosine ≥ `semantic_min_score`, from the vector index),
//!   *entity* (the conversation names the person `entity` resolves to, by the timeline's
//!   rules) and *date* (the conversation overlaps the UTC day `date`). Entity and date narrow;
//!   a query matches literally or semantically; a request of a date or an entity alone is a
//!   date-only (entity-only) triage.
//! - **One reformulation.** When nothing matches, the query is reformulated once — lower case,
//!   no punctuation, no stop words, plural `-s` dropped — and the triage runs again; with
//!   nothing still, the answer says `no_result` and shows the reformulation.
//! - **Selective hydration.** Of each conversation returned (at most `limit`, ≤
//!   `results_max`): its transcript segments that hold a term of the query, at most
//!   [`SNIPPETS_MAX`] (`snippets`); when none does, its first [`SEGMENTS_MAX`] segments
//!   (`segments`). Never more.
//!
//! Owner-scoped and policy-filtered like every read: a conversation is a source row, shown only
//! if [`may_read`] admits it.

use std::collections::BTreeMap;
use std::time::Instant;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use kledger_processors::access::{Principal, may_read};
use kledger_processors::ids::memory_id_of;
use kledger_processors::payload::{AccountRef, access_filter_of};
use kledger_schemas::{Kind, Row, Segment, SourceDoc, SourceKind, Status};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::read::{after_wait, finish};
use super::timeline::{Resolution, resolve};
use super::waits::caught_up;
use super::{Api, ApiError, Caller, owns, target};
use kledger_vectors::QueryVector;

/// Transcript segments hydrated per conversation at most.
pub const SEGMENTS_MAX: usize = 24;
/// Matched snippets hydrated per conversation at most.
pub const SNIPPETS_MAX: usize = 3;
/// Longest query, chars.
pub const QUERY_CHARS_MAX: usize = 500;
/// Words a query never matches by.
const STOP_WORDS: &[&str] = &[
    "a", "about", "an", "and", "are", "at", "did", "do", "does", "for", "from", "had", "has",
    "have", "how", "i", "in", "is", "it", "me", "my", "of", "on", "or", "our", "said", "say",
    "that", "the", "their", "them", "they", "this", "to", "was", "we", "were", "what", "when",
    "where", "which", "who", "why", "with", "you", "your",
];

/// The request.
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConversationQuery {
    /// What to look for (0..=500 chars; with neither `entity` nor `date`, 1..=500).
    #[serde(default)]
    pub query: String,
    /// Only conversations with this person: a person id or an exact alias.
    pub entity: Option<String>,
    /// Only conversations that overlap this UTC day, `YYYY-MM-DD`.
    pub date: Option<String>,
    /// Conversations at most, 1..=`retrieval.conversations.results_max` (default 3).
    pub limit: Option<usize>,
    /// Another account of the caller's tenant (default: the caller's own).
    pub account: Option<String>,
    /// Wait until the view store has applied this commit of the account.
    pub min_commit_seq: Option<i64>,
    /// How long to wait for it, ms (0..=30000, default 5000).
    pub wait_ms: Option<u64>,
}

/// One transcript segment, as hydrated.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SegmentOut {
    /// Start, ms.
    pub start_ms: i64,
    /// End, ms.
    pub end_ms: i64,
    /// Who spoke (a person id), when known.
    pub speaker_id: Option<String>,
    /// What was said.
    pub text: String,
}

impl From<&Segment> for SegmentOut {
    fn from(s: &Segment) -> Self {
        Self {
            start_ms: s.start_ms,
            end_ms: s.end_ms,
            speaker_id: s.speaker_id.clone(),
            text: s.text.clone(),
        }
    }
}

/// One conversation found.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ConversationHit {
    /// The conversation's id.
    pub conversation_id: String,
    /// Its row.
    pub memory_id: String,
    /// Start, ms.
    pub started_at: i64,
    /// End, ms.
    pub ended_at: i64,
    /// Its summary.
    pub summary: String,
    /// The triages it matched: `literal`, `semantic`, `entity`, `date`.
    pub matched_by: Vec<&'static str>,
    /// `snippets` (segments holding a term of the query, ≤3) or `segments` (the first ≤24).
    pub hydrated: &'static str,
    /// The hydrated segments.
    pub segments: Vec<SegmentOut>,
}

/// The answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ConversationAnswer {
    /// `found` or `no_result`.
    pub result: &'static str,
    /// The conversations, best first.
    pub conversations: Vec<ConversationHit>,
    /// The one reformulation tried when the query matched nothing as given.
    pub reformulated: Option<String>,
    /// Whom `entity` resolved to, when one was given.
    pub person: Option<Resolution>,
    /// Whether the semantic triage ran (the vector index is open in this process).
    pub semantic: bool,
}

/// The terms of `query` a summary or a segment is matched by: lower case words of two or
/// more letters or digits (`reformulated`: stop words out, a plural `-s` dropped).
fn terms(query: &str, reformulated: bool) -> Vec<String> {
    let mut out: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| w.chars().count() >= 2)
        .map(str::to_lowercase)
        .filter(|w| !reformulated || !STOP_WORDS.contains(&w.as_str()))
        .map(|w| match w.strip_suffix('s') {
            Some(stem) if reformulated && stem.chars().count() >= 3 && !stem.ends_with('s') => {
                stem.to_owned()
            }
            _ => w,
        })
        .collect();
    out.dedup();
    out
}

/// The UTC day `YYYY-MM-DD` as [start, end) ms.
fn day(date: &str) -> Result<(i64, i64), ApiError> {
    let bad = || ApiError::bad("bad_date", "date is a UTC day, YYYY-MM-DD");
    let parts: Vec<&str> = date.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return Err(bad());
    };
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return Err(bad());
    }
    let (y, m, d): (i64, i64, i64) = (
        y.parse().map_err(|_| bad())?,
        m.parse().map_err(|_| bad())?,
        d.parse().map_err(|_| bad())?,
    );
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days_in = [
        31,
        if leap { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    if !(1..=12).contains(&m) || d < 1 || d > days_in[(m - 1) as usize] {
        return Err(bad());
    }
    // Days from the civil date (H. Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let start = days * 86_400_000;
    Ok((start, start + 86_400_000))
}

/// A conversation row the caller may read, with its document.
struct Candidate {
    row: Row,
    doc: kledger_schemas::ConversationDoc,
}

/// search_conversations for `p` (blocking).
pub fn search_conversations(
    api: &Api,
    p: &Principal,
    q: &ConversationQuery,
) -> Result<ConversationAnswer, ApiError> {
    let cfg = &api.config.retrieval.conversations;
    if !cfg.enabled {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "conversation_retrieval_off",
            "bounded conversation retrieval is off (retrieval.conversations.enabled)",
        ));
    }
    let account = target(p, q.account.as_deref())?;
    let limit = q.limit.unwrap_or(3.min(cfg.results_max));
    if !(1..=cfg.results_max).contains(&limit) {
        return Err(ApiError::bad(
            "bad_limit",
            format!("limit must be in 1..={}", cfg.results_max),
        ));
    }
    let n = q.query.chars().count();
    let narrowed = q.entity.is_some() || q.date.is_some();
    if n > QUERY_CHARS_MAX || (!narrowed && q.query.trim().is_empty()) {
        return Err(ApiError::bad(
            "bad_query",
            "query must have 1..=500 chars (or be empty with an entity or a date)",
        ));
    }
    let window = q.date.as_deref().map(day).transpose()?;
    let Some(store) = api.sources.as_ref().map(|s| s.get()) else {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "sources_unavailable",
            "this process has no sources store",
        ));
    };
    caught_up(api, p, &account, q.min_commit_seq, false)?;
    let person = q.entity.as_deref().map(|e| {
        let r = resolve(api, &store, p, &account, e);
        match r.reason {
            Some(_) if !owns(p, &account) => Resolution {
                reason: Some("unresolved"),
                ..r
            },
            _ => r,
        }
    });
    if person.as_ref().is_some_and(|r| r.person_id.is_none()) {
        return Ok(ConversationAnswer {
            result: "no_result",
            conversations: Vec::new(),
            reformulated: None,
            person,
            semantic: false,
        });
    }
    let person_id = person.as_ref().and_then(|r| r.person_id.clone());
    // The newest conversations the caller may read, narrowed by person and day.
    let ids = store.source_entries(
        account.as_str(),
        SourceKind::Conversations,
        ALL,
        cfg.scan_max,
    )?;
    let mut candidates = Vec::new();
    for id in ids {
        let Some(row) = store.row(&account, &id)? else {
            continue;
        };
        if row.status != Status::Active || !may_read(p, &row) {
            continue;
        }
        let Some(SourceDoc::Conversation(doc)) = row.record.as_ref().and_then(|r| r.doc.clone())
        else {
            continue;
        };
        let with = person_id
            .as_ref()
            .is_none_or(|pid| doc.participant_ids.contains(pid));
        let on = window.is_none_or(|(from, to)| doc.started_at < to && doc.ended_at >= from);
        if with && on {
            candidates.push(Candidate { row, doc });
        }
    }
    let mut narrowing: Vec<&'static str> = Vec::new();
    if person_id.is_some() {
        narrowing.push("entity");
    }
    if window.is_some() {
        narrowing.push("date");
    }
    // A date or a person alone: nothing to embed.
    let semantic_index = api
        .search
        .as_ref()
        .and_then(|s| s.get())
        .filter(|_| !q.query.trim().is_empty());
    let mut found = triage(
        api,
        p,
        &account,
        &candidates,
        &q.query,
        false,
        semantic_index,
    )?;
    let mut reformulated = None;
    if found.is_empty() && !q.query.trim().is_empty() {
        let again = terms(&q.query, true).join(" ");
        if !again.is_empty() {
            found = triage(api, p, &account, &candidates, &again, true, semantic_index)?;
        }
        reformulated = Some(again);
    }
    // Entity or date alone: every candidate, newest first.
    if q.query.trim().is_empty() {
        found = (0..candidates.len()).map(|i| (i, Vec::new(), 0)).collect();
    }
    let query_terms = terms(
        reformulated.as_deref().unwrap_or(&q.query),
        reformulated.is_some(),
    );
    let conversations: Vec<ConversationHit> = found
        .into_iter()
        .take(limit)
        .map(|(i, mut matched_by, _)| {
            let c = &candidates[i];
            matched_by.extend(narrowing.iter().copied());
            let (hydrated, segments) = hydrate(&c.doc.segments, &query_terms);
            ConversationHit {
                conversation_id: c.doc.conversation_id.clone(),
                memory_id: c.row.memory_id.clone(),
                started_at: c.doc.started_at,
                ended_at: c.doc.ended_at,
                summary: c.doc.summary.clone(),
                matched_by,
                hydrated,
                segments,
            }
        })
        .collect();
    Ok(ConversationAnswer {
        result: if conversations.is_empty() {
            "no_result"
        } else {
            "found"
        },
        conversations,
        reformulated,
        person,
        semantic: semantic_index.is_some(),
    })
}

/// The entry of every conversation in the sources store's index (`kledger_state`'s `*`).
const ALL: &str = kledger_state::ALL_PEOPLE;

/// A candidate a triage matched: its index, the triages, the literal terms it holds.
type Found = (usize, Vec<&'static str>, usize);

/// The candidates `query` matches, best first: (candidate, triages matched, literal terms
/// matched). Literal matches rank by the terms they hold, then by semantic rank, then newest.
fn triage(
    api: &Api,
    p: &Principal,
    account: &str,
    candidates: &[Candidate],
    query: &str,
    reformulated: bool,
    index: Option<&kledger_vectors::SearchIndex>,
) -> Result<Vec<Found>, ApiError> {
    let words = terms(query, reformulated);
    let semantic = match index {
        Some(index) => semantic_ranks(api, p, account, query, index)?,
        None => BTreeMap::new(),
    };
    let mut found = Vec::new();
    for (i, c) in candidates.iter().enumerate() {
        let summary = c.doc.summary.to_lowercase();
        let literal = words
            .iter()
            .filter(|w| summary.contains(w.as_str()))
            .count();
        let near = semantic.get(&c.row.memory_id).copied();
        let mut by = Vec::new();
        if literal > 0 {
            by.push("literal");
        }
        if near.is_some() {
            by.push("semantic");
        }
        if !by.is_empty() {
            found.push((i, by, literal, near.unwrap_or(usize::MAX)));
        }
    }
    // Candidates are newest first: a stable sort keeps that order among equals.
    found.sort_by(|a, b| b.2.cmp(&a.2).then(a.3.cmp(&b.3)));
    Ok(found.into_iter().map(|(i, by, n, _)| (i, by, n)).collect())
}

/// The conversations whose summary's vector is near `query`'s (cosine at least
/// `semantic_min_score`), by memory id, with their rank.
fn semantic_ranks(
    api: &Api,
    p: &Principal,
    account: &str,
    query: &str,
    index: &kledger_vectors::SearchIndex,
) -> Result<BTreeMap<String, usize>, ApiError> {
    let cfg = &api.config.retrieval.conversations;
    let acct = AccountRef::parse(account).ok_or_else(ApiError::unavailable)?;
    let filter = access_filter_of(p, &acct, &[Kind::Conversation], true);
    let generation = index.live.get();
    let dense = generation
        .embedder
        .embed_query(&kledger_processors::index_text::query(query))
        .map_err(ApiError::internal)?;
    let hits = generation
        .index
        .query(QueryVector::Dense(dense), &filter, cfg.scan_max)
        .map_err(ApiError::internal)?;
    Ok(hits
        .into_iter()
        .filter(|(_, score)| *score >= cfg.semantic_min_score)
        .enumerate()
        .map(|(rank, (id, _))| (memory_id_of(id.as_u128()), rank))
        .collect())
}

/// The segments of a conversation an answer holds: those with a term of the query (at most
/// [`SNIPPETS_MAX`]), or when none has one the first [`SEGMENTS_MAX`].
fn hydrate(segments: &[Segment], terms: &[String]) -> (&'static str, Vec<SegmentOut>) {
    let matched: Vec<SegmentOut> = segments
        .iter()
        .filter(|s| {
            let text = s.text.to_lowercase();
            terms.iter().any(|t| text.contains(t.as_str()))
        })
        .take(SNIPPETS_MAX)
        .map(SegmentOut::from)
        .collect();
    if matched.is_empty() {
        (
            "segments",
            segments
                .iter()
                .take(SEGMENTS_MAX)
                .map(SegmentOut::from)
                .collect(),
        )
    } else {
        ("snippets", matched)
    }
}

/// `POST /v1/conversations/search`.
pub async fn search(
    State(api): State<Api>,
    Caller(p): Caller,
    body: axum::body::Bytes,
) -> Response {
    let started = Instant::now();
    let r = async {
        let q: ConversationQuery = super::search::small_json(&body)?;
        let (a, p2) = (api.clone(), p.clone());
        let (account, min, wait) = (q.account.clone(), q.min_commit_seq, q.wait_ms);
        after_wait(&a, &p2, account.as_deref(), min, wait, false, move || {
            search_conversations(&api, &p, &q)
        })
        .await
    }
    .await
    .map(axum::Json);
    finish("conversations", started, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reformulation_drops_stop_words_punctuation_and_plurals() {
        assert_eq!(
            terms("What did we say about the Lisbon trips?", true),
            ["lisbon", "trip"]
        );
        assert_eq!(terms("Trips, trips!", false), ["trips"]);
        assert_eq!(terms("bus glass", true), ["bus", "glass"]);
    }

    #[test]
    fn a_date_is_a_utc_day() {
        assert_eq!(day("2026-01-01").unwrap().0, 1_767_225_600_000);
        assert_eq!(day("2000-02-29").unwrap().0, 951_782_400_000);
        assert_eq!(day("1970-01-01").unwrap(), (0, 86_400_000));
        for bad in [
            "2026-02-29",
            "2026-13-01",
            "26-01-01",
            "2026-1-1",
            "yesterday",
        ] {
            assert_eq!(day(bad).unwrap_err().code(), "bad_date", "{bad}");
        }
    }

    #[test]
    fn hydration_is_bounded() {
        let seg = |i: i64, text: &str| Segment {
            start_ms: i,
            end_ms: i,
            speaker_id: None,
            text: text.into(),
        };
        let many: Vec<Segment> = (0..100).map(|i| seg(i, "the budget again")).collect();
        let (how, out) = hydrate(&many, &["budget".into()]);
        assert_eq!((how, out.len()), ("snippets", SNIPPETS_MAX));
        let (how, out) = hydrate(&many, &["nothing".into()]);
        assert_eq!((how, out.len()), ("segments", SEGMENTS_MAX));
        assert_eq!(out[0].start_ms, 0);
    }
}
