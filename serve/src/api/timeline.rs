//! `get_entity_timeline`: one entity's entries from the sources the agent names.
//!
//! - **Sources.** `ledger` (the default, alone when none is named) reads the view store's
//!   timeline; `conversations`, `calendar` and `screen` read the sources store's entries about
//!   one person. There is no heuristic: only the sources named are read.
//! - **The entity.** `user`, a person id (a people document's id: the entity authority), or an
//!   exact alias of one (a current name, a retained name, an email). Aliases resolve for the
//!   account's owner only (resolving one reads every people document), and only when exactly
//!   one person holds it, it is not the owner's (the owner's own people document, whose
//!   id is the owner id, or the owner id itself), and the account's people were read
//!   exhaustively (at most `sources.people_scan_max`); otherwise the answer's `person` says
//!   `unavailable`, never a guess, and the sources that need a person answer `failed`. The
//!   ledger reads the resolved person id, or the entity as given (an exact id join).
//! - **Merge.** Entries of every source in (time, source, id) order, each with its `source`;
//!   the newest `limit` of them.
//! - **States.** Each source reports `available`, `loading` (its projection has not caught up),
//!   `offline` (its store is not reachable from this process), `pruned` (entries past the
//!   source's retention were left out), `failed` (an error, a timeout, or no person to join)
//!   or `truncated` (entries past the scan bound or the limit were left out), with a reason.
//!   One source's failure or slowness never holds the others: the sources store's readers run
//!   on their own threads and are given up after `sources.read_timeout_ms`.
//! - **Exclusions.** Entries carry one line of content each (a ledger row's content, a
//!   conversation's summary, an event's title, `app — window title`) and never a transcript, a
//!   calendar event's notes or attendees, OCR text, a person's names or emails, a playbook
//!   body or a trigger condition: the item type has no field for any of them.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use axum::extract::{Path, Query, State};
use axum::response::Response;
use kledger_processors::access::{Principal, may_read};
use kledger_schemas::{AssertionClass, Kind, Row, SourceDoc, SourceKind, Status};
use kledger_state::ViewStore;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::at::{At, readable_row_at};
use super::policy::{self, Ask, Grant};
use super::read::{after_wait, finish};
use super::waits::caught_up;
use super::{Api, ApiError, Caller, owns, target};

/// Ledger timeline entries scanned per request at most, from the newest (the newest `limit`
/// that qualify are returned).
pub const TIMELINE_SCAN_MAX: usize = 5_000;
/// Longest entity reference accepted.
pub const ENTITY_CHARS_MAX: usize = 256;
/// The timeline entity of the account's own person.
pub const USER: &str = "user";

/// A source a timeline reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Source {
    /// The ledger's rows about the entity.
    Ledger,
    /// A source document store's entries about the person.
    Source(SourceKind),
}

impl Source {
    /// The name in `sources=` and in answers.
    pub fn name(self) -> &'static str {
        match self {
            Source::Ledger => "ledger",
            Source::Source(s) => s.as_str(),
        }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "ledger" => Some(Source::Ledger),
            "conversations" => Some(Source::Source(SourceKind::Conversations)),
            "calendar" => Some(Source::Source(SourceKind::Calendar)),
            "screen" => Some(Source::Source(SourceKind::Screen)),
            _ => None,
        }
    }
}

/// The sources `sources=` names (comma-separated, each once; default: the ledger alone).
pub fn parse_sources(q: Option<&str>) -> Result<Vec<Source>, ApiError> {
    let Some(q) = q.filter(|q| !q.trim().is_empty()) else {
        return Ok(vec![Source::Ledger]);
    };
    let mut out = Vec::new();
    for name in q.split(',').map(str::trim) {
        let s = Source::parse(name).ok_or_else(|| {
            ApiError::bad(
                "bad_sources",
                "sources is a comma-separated list of ledger, conversations, calendar, screen",
            )
        })?;
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out.sort();
    Ok(out)
}

/// `GET /v1/entities/{entity}/timeline` parameters (the MCP tool takes the same).
#[derive(Debug, Default, Clone, Deserialize, JsonSchema)]
pub struct TimelineParams {
    /// Another account of the caller's tenant (default: the caller's own).
    pub account: Option<String>,
    /// The sources to read, comma-separated: `ledger`, `conversations`, `calendar`, `screen`
    /// (default `ledger`).
    pub sources: Option<String>,
    /// Entries at most, 1..=40 (default 20).
    pub limit: Option<usize>,
    /// Include superseded and closed ledger rows.
    #[serde(default)]
    pub history: bool,
    /// Include rejected (disputed) ledger rows.
    #[serde(default)]
    pub audit: bool,
    /// Effective time, ms since the epoch (default: now): ledger rows in effect then are
    /// active, rows ended by then are history, rows not yet in effect are left out.
    pub as_of: Option<i64>,
    /// Record time, ms since the epoch (default: everything recorded).
    pub known_at: Option<i64>,
    /// Wait until the view store has applied this commit of the account (a write's
    /// `consistency_token`; an MCP session passes its own newest on by default). The sources
    /// store is not waited for: a source behind it answers `loading`.
    pub min_commit_seq: Option<i64>,
    /// How long to wait for it, ms (0..=30000, default 5000).
    pub wait_ms: Option<u64>,
}

/// One timeline entry: compact, never a body, a condition, a transcript, notes, attendees,
/// OCR text, names or emails.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TimelineItem {
    /// The source it comes from: `ledger`, `conversations`, `calendar` or `screen`.
    pub source: &'static str,
    /// The row.
    pub memory_id: String,
    /// fact | document | trigger, or conversation | calendar_event | screen_span.
    #[schemars(with = "String")]
    pub kind: Kind,
    /// The document's id in its source (a conversation, an event, a span); none for ledger
    /// rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub record_id: Option<String>,
    /// Slot, if any.
    pub slot: Option<String>,
    /// The one line: a row's content, a conversation's summary, an event's title, or
    /// `app — window title`.
    pub content: String,
    /// How certain it is.
    #[schemars(with = "String")]
    pub assertion_class: AssertionClass,
    /// Its status at the read's effective time: `active`, `superseded`, `closed`, or
    /// `expired` (an active row past its expiry, listed with `history`).
    pub status: ItemStatus,
    /// Effective from (a document's start), ms.
    pub valid_from: i64,
    /// Effective to (a document's end), ms.
    pub valid_to: Option<i64>,
    /// Source type of the creating write.
    pub source_type: String,
    /// Source id of the creating write.
    pub source_id: String,
    /// The row that outranks this one (a ledger row of the same subject and slot, a higher
    /// place in the authority table). Absent when nothing readable contests it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contested_by: Option<String>,
}

/// A timeline entry's status at the read's effective time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ItemStatus {
    /// In effect.
    Active,
    /// Replaced by a newer row.
    Superseded,
    /// Closed.
    Closed,
    /// Active, but past its expiry (`expires_at`, `ttl_days`).
    Expired,
}

impl ItemStatus {
    /// `row`'s status at `as_of`: an active row whose expiry has passed is `expired`.
    pub fn of(row: &Row, as_of: i64) -> Self {
        match row.status {
            Status::Superseded => Self::Superseded,
            Status::Closed => Self::Closed,
            _ if row.expires_at.is_some_and(|t| t <= as_of) => Self::Expired,
            _ => Self::Active,
        }
    }
}

/// Whom the entity resolved to.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Resolution {
    /// `resolved` or `unavailable`.
    pub state: &'static str,
    /// The person id, when resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub person_id: Option<String>,
    /// `id` or `alias`, when resolved.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub by: Option<&'static str>,
    /// Why not, when unavailable: `unknown_person`, `alias_ambiguous`, `alias_is_owner`,
    /// `people_scan_not_exhaustive`, `people_unreadable`, `people_offline` (the owner is told
    /// which; anyone else `unresolved`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
}

impl Resolution {
    fn resolved(person_id: &str, by: &'static str) -> Self {
        Self {
            state: "resolved",
            person_id: Some(person_id.to_owned()),
            by: Some(by),
            reason: None,
        }
    }

    fn unavailable(reason: &'static str) -> Self {
        Self {
            state: "unavailable",
            person_id: None,
            by: None,
            reason: Some(reason),
        }
    }
}

/// The timeline answer.
#[derive(Debug, Serialize, JsonSchema)]
pub struct TimelineAnswer {
    /// The entity as asked (`user`, a person id, an alias or another entity id).
    pub entity: String,
    /// Whom it resolved to (absent for `user`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub person: Option<Resolution>,
    /// Entries of every source read, in (valid_from, source, id) order: the newest `limit`.
    pub items: Vec<TimelineItem>,
    /// Whether qualifying entries were left out (by the limit, or a source's scan bound).
    pub truncated: bool,
    /// Each source read, and its state.
    pub sources: Vec<SourceState>,
}

/// A source read and its state.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SourceState {
    /// Source name.
    pub source: &'static str,
    /// `available`, `loading`, `offline`, `pruned`, `failed` or `truncated`.
    pub state: &'static str,
    /// Why, for every state but `available`: `limit` or `scan_bound` (truncated),
    /// `retention` (pruned), `not_caught_up` (loading), `no_store` (offline),
    /// `person_unavailable`, `timeout`, `busy` or `error` (failed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<&'static str>,
}

impl SourceState {
    fn new(source: Source, state: &'static str, reason: Option<&'static str>) -> Self {
        Self {
            source: source.name(),
            state,
            reason,
        }
    }
}

/// Whether `entity` is a well-formed reference: `user`, an entity id or an alias.
fn entity_ok(entity: &str) -> bool {
    !entity.is_empty()
        && entity.chars().count() <= ENTITY_CHARS_MAX
        && !entity.chars().any(char::is_control)
        && entity.trim() == entity
}

/// `GET /v1/entities/{entity}/timeline`.
pub async fn timeline(
    State(api): State<Api>,
    Caller(p): Caller,
    Path(entity): Path<String>,
    Query(q): Query<TimelineParams>,
) -> Response {
    let started = Instant::now();
    let (a, p2) = (api.clone(), p.clone());
    let (account, min, wait) = (q.account.clone(), q.min_commit_seq, q.wait_ms);
    let r = after_wait(&a, &p2, account.as_deref(), min, wait, false, move || {
        entity_timeline(&api, &p, &entity, &q)
    })
    .await
    .map(axum::Json);
    finish("timeline", started, r)
}

/// What one source read gave.
struct Read {
    items: Vec<TimelineItem>,
    state: &'static str,
    reason: Option<&'static str>,
}

impl Read {
    fn state(state: &'static str, reason: &'static str) -> Self {
        Self {
            items: Vec::new(),
            state,
            reason: Some(reason),
        }
    }
}

/// get_entity_timeline: the entries about `entity` in `q.account` (default: the principal's
/// own) from the sources `q` names that `p` may read (blocking; `409` unless the view store
/// has applied `q.min_commit_seq`).
pub fn entity_timeline(
    api: &Api,
    p: &Principal,
    entity: &str,
    q: &TimelineParams,
) -> Result<TimelineAnswer, ApiError> {
    let account = target(p, q.account.as_deref())?;
    let limit = q.limit.unwrap_or(20);
    if !(1..=40).contains(&limit) {
        return Err(ApiError::bad("bad_limit", "limit must be in 1..=40"));
    }
    if !entity_ok(entity) {
        return Err(ApiError::bad(
            "bad_entity",
            "entity is `user`, a person id, an alias or an entity id (1..=256 chars, no control characters, no surrounding spaces)",
        ));
    }
    let sources = parse_sources(q.sources.as_deref())?;
    caught_up(api, p, &account, q.min_commit_seq, false)?;
    let ask = Ask {
        as_of: q.as_of,
        known_at: q.known_at,
        history: q.history,
        audit: q.audit,
    };
    // History is the ledger's: a timeline of other sources only reads documents as they stand.
    let grant = if sources.contains(&Source::Ledger) {
        policy::history(api, p, &account, ask)?
    } else {
        Grant::all()
    };
    let owner = owns(p, &account);
    let store = api.sources.as_ref().map(|s| s.get());
    let person = (entity != USER).then(|| {
        let r = match &store {
            Some(store) => resolve(api, store, p, &account, entity),
            None => Resolution::unavailable("people_offline"),
        };
        // How it failed is the owner's to know (it tells what people the account has).
        match r.reason {
            Some(_) if !owner => Resolution::unavailable("unresolved"),
            _ => r,
        }
    });
    let person_id = person
        .as_ref()
        .and_then(|r| r.person_id.clone())
        .filter(|_| entity != USER);
    let mut reads: BTreeMap<Source, Read> = BTreeMap::new();
    let mut pending = Vec::new();
    for source in &sources {
        match source {
            Source::Ledger => {
                let e = person_id.as_deref().unwrap_or(entity);
                let read = ledger(api, p, &account, e, q, grant).unwrap_or_else(|e| {
                    tracing::warn!(error = %e.code(), "timeline: the ledger source failed");
                    Read::state("failed", "error")
                });
                reads.insert(*source, read);
            }
            Source::Source(kind) => {
                let (Some(store), Some(person)) = (&store, &person_id) else {
                    let read = match &store {
                        None => Read::state("offline", "no_store"),
                        Some(_) => Read::state("failed", "person_unavailable"),
                    };
                    reads.insert(*source, read);
                    continue;
                };
                pending.push((
                    *source,
                    spawn_source(api, store.clone(), p, &account, *kind, person),
                ));
            }
        }
    }
    let deadline = Instant::now() + Duration::from_millis(api.config.sources.read_timeout_ms);
    for (source, rx) in pending {
        let left = deadline.saturating_duration_since(Instant::now());
        let read = match rx.recv_timeout(left) {
            Ok(Ok(read)) => read,
            Ok(Err(e)) => {
                tracing::warn!(source = source.name(), error = %e.code(), "timeline: a source failed");
                Read::state("failed", "error")
            }
            Err(_) => Read::state("failed", "timeout"),
        };
        reads.insert(source, read);
    }
    // The sources store behind the view store for this account (or still filling): its
    // entries may lack what the ledger already shows. Positions are the owner's to know.
    if let Some(store) = &store {
        let views_mark = api.views.get().mark(&account)?.commit_seq;
        let behind = !api
            .status
            .replica_serving(kledger_pipeline::project::views::SOURCES_SINK)
            || owner
                && store
                    .mark(&account)
                    .map_or(true, |m| m.commit_seq < views_mark);
        if behind {
            for (source, read) in reads.iter_mut() {
                if matches!(source, Source::Source(_)) && read.state != "failed" {
                    read.state = "loading";
                    read.reason = Some("not_caught_up");
                }
            }
        }
    }
    Ok(merge(entity, person, reads, limit))
}

/// Merges the reads in (valid_from, source, id) order, keeping the newest `limit`.
fn merge(
    entity: &str,
    person: Option<Resolution>,
    reads: BTreeMap<Source, Read>,
    limit: usize,
) -> TimelineAnswer {
    let mut states = Vec::new();
    let mut items = Vec::new();
    let mut truncated = false;
    for (source, read) in reads {
        truncated |= read.state == "truncated";
        states.push((source, read.state, read.reason));
        items.extend(read.items);
    }
    items.sort_by(|a, b| {
        (a.valid_from, a.source, &a.memory_id).cmp(&(b.valid_from, b.source, &b.memory_id))
    });
    if items.len() > limit {
        let cut: Vec<&'static str> = items[..items.len() - limit]
            .iter()
            .map(|i| i.source)
            .collect();
        items.drain(..items.len() - limit);
        truncated = true;
        for (source, state, reason) in &mut states {
            if cut.contains(&source.name()) && *state == "available" {
                *state = "truncated";
                *reason = Some("limit");
            }
        }
    }
    TimelineAnswer {
        entity: entity.to_owned(),
        person,
        items,
        truncated,
        sources: states
            .into_iter()
            .map(|(s, state, reason)| SourceState::new(s, state, reason))
            .collect(),
    }
}

/// The ledger's rows about `entity` that `p` may read, as `q` asks.
fn ledger(
    api: &Api,
    p: &Principal,
    account: &str,
    entity: &str,
    q: &TimelineParams,
    grant: Grant,
) -> Result<Read, ApiError> {
    let when = At::new(q.as_of, q.known_at).with_history(q.history || q.audit);
    let ids = api
        .views
        .get()
        .timeline(account, entity, TIMELINE_SCAN_MAX)?;
    // Reaching the scan bound says how long the timeline is: the owner's to know.
    let bound = ids.len() >= TIMELINE_SCAN_MAX && owns(p, account);
    let mut shown_rows = Vec::new();
    // Every readable row of the entity in effect: the rivals of the rows shown (the scan holds
    // the entity's rows, so no second read looks for them).
    let mut rivals = Vec::new();
    for id in ids {
        let Some(row) = readable_row_at(api, p, account, &id, when)? else {
            continue;
        };
        let current = row.is_current(when.as_of);
        // In effect at the read's time: an entry; ended by then: history, inside the grant.
        let shown = match row.status {
            Status::Tombstoned => false,
            _ if current => true,
            _ => q.history && grant.shows(&row),
        } && (row.assertion_class != AssertionClass::Disputed || q.audit);
        if current && row.slot.is_some() {
            rivals.push(row.clone());
        }
        if shown {
            shown_rows.push(row);
        }
    }
    // Conflicts among the rows in effect: each loser names its winner (time order is kept).
    let contested = kledger_processors::authority::contested(rivals.iter());
    let items = shown_rows
        .into_iter()
        .map(|row| {
            let by = contested.get(&row.memory_id).cloned();
            let mut it = item(Source::Ledger, row, when.as_of);
            it.contested_by = by;
            it
        })
        .collect();
    Ok(Read {
        items,
        state: if bound { "truncated" } else { "available" },
        reason: bound.then_some("scan_bound"),
    })
}

fn item(source: Source, row: Row, as_of: i64) -> TimelineItem {
    let (record_id, valid_to) = match (
        &row.record,
        row.record.as_ref().and_then(|r| r.doc.as_ref()),
    ) {
        (Some(r), Some(doc)) => (Some(r.record_id.clone()), doc.span().map(|(_, end)| end)),
        (Some(r), None) => (Some(r.record_id.clone()), row.valid_to),
        _ => (None, row.valid_to),
    };
    let status = ItemStatus::of(&row, as_of);
    TimelineItem {
        source: source.name(),
        memory_id: row.memory_id,
        kind: row.kind,
        record_id,
        slot: row.slot,
        content: row.content,
        assertion_class: row.assertion_class,
        status,
        valid_from: row.valid_from,
        valid_to,
        source_type: row.source.source_type,
        source_id: row.source.source_id,
        contested_by: None,
    }
}

/// Reads `kind`'s entries about `person` on a thread of its own; the answer comes on the
/// channel (a reader given up on finishes alone and its answer is dropped).
fn spawn_source(
    api: &Api,
    store: Arc<ViewStore>,
    p: &Principal,
    account: &str,
    kind: SourceKind,
    person: &str,
) -> mpsc::Receiver<Result<Read, ApiError>> {
    let (tx, rx) = mpsc::sync_channel(1);
    // A read given up on runs to its end: at most SOURCE_READS_MAX run at once in the process.
    let Some(slot) = ReadSlot::take() else {
        let _ = tx.send(Ok(Read::state("failed", "busy")));
        return rx;
    };
    let (p, account, person) = (p.clone(), account.to_owned(), person.to_owned());
    let (entries_max, retention) = (
        api.config.sources.entries_max,
        api.config.sources.retention_days(kind),
    );
    let spawned = std::thread::Builder::new()
        .name("kledger-source-read".into())
        .spawn(move || {
            let _slot = slot;
            let _ = tx.send(read_source(
                &store,
                &p,
                &account,
                kind,
                &person,
                entries_max,
                retention,
            ));
        });
    if let Err(e) = spawned {
        tracing::warn!(error = %e, "timeline: no thread for a source read");
    }
    rx
}

/// Source reads running at most in the process (a read given up on after
/// `sources.read_timeout_ms` still holds its slot until it ends); beyond, a source answers
/// `failed` (`busy`).
pub const SOURCE_READS_MAX: usize = 64;

static SOURCE_READS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// One of the [`SOURCE_READS_MAX`] source reads, given back when dropped.
struct ReadSlot;

impl ReadSlot {
    fn take() -> Option<Self> {
        use std::sync::atomic::Ordering;
        let prev = SOURCE_READS.fetch_add(1, Ordering::AcqRel);
        if prev >= SOURCE_READS_MAX {
            SOURCE_READS.fetch_sub(1, Ordering::AcqRel);
            return None;
        }
        Some(Self)
    }
}

impl Drop for ReadSlot {
    fn drop(&mut self) {
        SOURCE_READS.fetch_sub(1, std::sync::atomic::Ordering::AcqRel);
    }
}

/// `kind`'s current entries about `person` that `p` may read, newest `entries_max` scanned;
/// entries that started before the source's retention (`retention_days`, 0: none) are left
/// out and reported `pruned`.
fn read_source(
    store: &ViewStore,
    p: &Principal,
    account: &str,
    kind: SourceKind,
    person: &str,
    entries_max: usize,
    retention_days: u64,
) -> Result<Read, ApiError> {
    let ids = store.source_entries(account, kind, person, entries_max.saturating_add(1))?;
    let bound = ids.len() > entries_max;
    let horizon = (retention_days > 0).then(|| {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        now.saturating_sub(retention_days.saturating_mul(86_400_000) as i64)
    });
    let mut items = Vec::new();
    let mut pruned = false;
    for id in ids.iter().take(entries_max) {
        let Some(row) = store.row(account, id)? else {
            continue;
        };
        if row.status != Status::Active || !may_read(p, &row) {
            continue;
        }
        if horizon.is_some_and(|h| row.valid_from < h) {
            pruned = true;
            continue;
        }
        items.push(item(Source::Source(kind), row, super::now_ms()));
    }
    let (state, reason) = match (bound && owns(p, account), pruned) {
        (true, _) => ("truncated", Some("scan_bound")),
        (false, true) => ("pruned", Some("retention")),
        (false, false) => ("available", None),
    };
    Ok(Read {
        items,
        state,
        reason,
    })
}

/// Resolves `entity` to a person under the alias rules (module note), from the people
/// documents `p` may read.
pub(crate) fn resolve(
    api: &Api,
    store: &ViewStore,
    p: &Principal,
    account: &str,
    entity: &str,
) -> Resolution {
    match try_resolve(api, store, p, account, entity) {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(error = %e.code(), "timeline: resolving a person failed");
            Resolution::unavailable("people_offline")
        }
    }
}

fn try_resolve(
    api: &Api,
    store: &ViewStore,
    p: &Principal,
    account: &str,
    entity: &str,
) -> Result<Resolution, ApiError> {
    let person = |id: &str| -> Result<Option<Row>, ApiError> {
        Ok(
            match store
                .source_entries(account, SourceKind::People, id, 1)?
                .first()
            {
                Some(m) => store.row(account, m)?.filter(|r| may_read(p, r)),
                None => None,
            },
        )
    };
    // A person id joins whatever the people scan holds.
    if person(entity)?.is_some() {
        return Ok(Resolution::resolved(entity, "id"));
    }
    // Aliases are the owner's to resolve: resolving one reads every people document of the
    // account (to find collisions), which another principal may not all read.
    if !owns(p, account) {
        return Ok(Resolution::unavailable("unknown_person"));
    }
    let max = api.config.sources.people_scan_max;
    let people = store.people(account, max.saturating_add(1))?;
    if people.len() > max {
        return Ok(Resolution::unavailable("people_scan_not_exhaustive"));
    }
    let owner_id = account.rsplit('/').next().unwrap_or_default();
    let mut holders: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    let mut owner_aliases = vec![owner_id.to_owned()];
    let mut docs: Vec<(String, Vec<String>)> = Vec::with_capacity(people.len());
    for (pid, mid) in &people {
        // A document that does not open (its key not cached yet) could hold the alias too:
        // no guess, the alias resolves to nobody.
        let doc = store
            .row(account, mid)?
            .and_then(|r| r.record)
            .and_then(|r| r.doc);
        let Some(SourceDoc::Person(doc)) = doc else {
            return Ok(Resolution::unavailable("people_unreadable"));
        };
        let aliases: Vec<String> = doc
            .names
            .into_iter()
            .chain(doc.retained_names)
            .chain(doc.emails)
            .collect();
        docs.push((pid.clone(), aliases));
    }
    for (pid, aliases) in &docs {
        if pid == owner_id {
            owner_aliases.extend(aliases.iter().cloned());
        }
        for a in aliases {
            let h = holders.entry(a.as_str()).or_default();
            if !h.contains(pid) {
                h.push(pid.clone());
            }
        }
    }
    if owner_aliases.iter().any(|a| a == entity) {
        return Ok(Resolution::unavailable("alias_is_owner"));
    }
    Ok(match holders.get(entity).map(Vec::as_slice) {
        Some([one]) if person(one)?.is_some() => Resolution::resolved(one, "alias"),
        Some([_, _, ..]) => Resolution::unavailable("alias_ambiguous"),
        _ => Resolution::unavailable("unknown_person"),
    })
}
