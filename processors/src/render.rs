//! Pure renderers of the prompt view: the profile (2,400 chars), the playbook index
//! (800 chars) and the trigger watchlist.
//!
//! Budgets count Unicode scalar values, newlines between lines included. Lines are whole: a
//! line that does not fit is skipped and the next (lower-ranked) line is tried, so one long
//! line cannot hide every line after it.

use kledger_schemas::avro::AvroCodec;
use kledger_schemas::{AssertionClass, Kind, Row, SensitivityLevel, SubjectScope, View, WatchItem};

/// Profile budget.
pub const PROFILE_CHARS_MAX: usize = 2_400;
/// Playbook index budget.
pub const PLAYBOOK_INDEX_CHARS_MAX: usize = 800;

/// Joins whole lines, in order, into at most `budget` chars.
pub fn fit_lines<I: IntoIterator<Item = String>>(lines: I, budget: usize) -> String {
    let mut out = String::new();
    let mut used = 0usize;
    for line in lines {
        let sep = usize::from(!out.is_empty());
        let n = line.chars().count();
        if used + sep + n > budget {
            continue;
        }
        if sep == 1 {
            out.push('\n');
        }
        out.push_str(&line);
        used += sep + n;
    }
    out
}

/// Whether a row belongs in the profile at `as_of`: active, intent-backed, primary-user,
/// slotted fact, not restricted, not disputed, valid at `as_of`.
pub fn in_profile(row: &Row, as_of: i64) -> bool {
    row.kind == Kind::Fact
        && row.is_current(as_of)
        && row.intent_backed
        && row.subject.scope == SubjectScope::PrimaryUser
        && row.slot.is_some()
        && row.sensitivity.level != SensitivityLevel::Restricted
        && row.assertion_class != AssertionClass::Disputed
}

/// One profile line: `- slot: content`, with the assertion class when it is not confirmed.
pub fn profile_line(row: &Row) -> String {
    let slot = row.slot.as_deref().unwrap_or_default();
    match row.assertion_class {
        AssertionClass::Confirmed => format!("- {slot}: {}", row.content),
        class => format!("- {slot}: {} ({class})", row.content),
    }
}

/// The profile: rows in profile — of conflicting ones the winner only
/// ([`crate::authority::contested`]) — sorted by descending curation weight, slot, valid_from
/// and memory id, fitted into 2,400 chars.
pub fn profile<'a, I: IntoIterator<Item = &'a Row>>(rows: I, as_of: i64) -> String {
    let mut rows: Vec<&Row> = rows.into_iter().filter(|r| in_profile(r, as_of)).collect();
    // Of rows that conflict (the same subject and slot), the winner only (the authority table).
    let losers = crate::authority::contested(rows.iter().copied());
    rows.retain(|r| !losers.contains_key(&r.memory_id));
    rows.sort_by(|a, b| {
        b.curation_weight
            .cmp(&a.curation_weight)
            .then_with(|| a.slot.cmp(&b.slot))
            .then_with(|| a.valid_from.cmp(&b.valid_from))
            .then_with(|| a.memory_id.cmp(&b.memory_id))
    });
    fit_lines(rows.into_iter().map(profile_line), PROFILE_CHARS_MAX)
}

/// Whether a row is an indexable playbook at `as_of`: an active, current, intent-backed,
/// primary-user document that is not restricted.
pub fn is_playbook(row: &Row, as_of: i64) -> bool {
    row.kind == Kind::Document
        && row.is_current(as_of)
        && row.intent_backed
        && row.subject.scope == SubjectScope::PrimaryUser
        && row.sensitivity.level != SensitivityLevel::Restricted
}

/// The playbook index: `memory_id: description` lines by descending curation weight then
/// memory id, fitted into 800 chars.
pub fn playbook_index<'a, I: IntoIterator<Item = &'a Row>>(rows: I, as_of: i64) -> String {
    let mut rows: Vec<&Row> = rows.into_iter().filter(|r| is_playbook(r, as_of)).collect();
    rows.sort_by(|a, b| {
        b.curation_weight
            .cmp(&a.curation_weight)
            .then_with(|| a.memory_id.cmp(&b.memory_id))
    });
    fit_lines(
        rows.into_iter()
            .map(|r| format!("{}: {}", r.memory_id, r.content)),
        PLAYBOOK_INDEX_CHARS_MAX,
    )
}

/// Whether a trigger is on the watchlist at `as_of`: active, current and not restricted. The
/// view is published on a topic that every consumer of the account's views reads, while a
/// restricted row is for its owner only (`access`), so a restricted trigger and its condition
/// never leave the view store (issue 22).
pub fn on_watchlist(row: &Row, as_of: i64) -> bool {
    row.kind == Kind::Trigger
        && row.is_current(as_of)
        && row.sensitivity.level != SensitivityLevel::Restricted
}

/// The watchlist: the triggers [`on_watchlist`] at `as_of`, by memory id.
pub fn watchlist<'a, I: IntoIterator<Item = &'a Row>>(rows: I, as_of: i64) -> Vec<WatchItem> {
    let mut items: Vec<WatchItem> = rows
        .into_iter()
        .filter(|r| on_watchlist(r, as_of))
        .map(|r| WatchItem {
            memory_id: r.memory_id.clone(),
            content: r.content.clone(),
            condition: r.condition.clone().unwrap_or_default(),
            valid_from: r.valid_from,
            valid_to: r.valid_to,
            expires_at: r.expires_at,
        })
        .collect();
    items.sort_by(|a, b| a.memory_id.cmp(&b.memory_id));
    items
}

/// Bytes a view record keeps free of watch items beyond its other fields: the array's count
/// and end, and the truncation flag.
const VIEW_SLACK_BYTES: usize = 32;

/// Renders an account's view from its current rows at `as_of`, within `record_bytes_max` (the
/// record budget, single-object framing included): the watchlist keeps whole items in memory
/// id order while they fit, and says `watchlist_truncated` when one did not.
pub fn view<'a, I>(
    account_id: &str,
    generation: i64,
    commit_seq: i64,
    as_of: i64,
    rows: I,
    record_bytes_max: usize,
) -> View
where
    I: IntoIterator<Item = &'a Row> + Clone,
{
    let count = |kind: Kind| {
        rows.clone()
            .into_iter()
            .filter(|r| r.kind == kind && r.is_current(as_of))
            .count() as i64
    };
    let mut view = View {
        account_id: account_id.to_owned(),
        generation,
        commit_seq,
        as_of,
        profile: profile(rows.clone(), as_of),
        playbook_index: playbook_index(rows.clone(), as_of),
        watchlist: Vec::new(),
        active_facts: count(Kind::Fact),
        active_documents: count(Kind::Document),
        active_triggers: count(Kind::Trigger),
        watchlist_truncated: false,
    };
    let mut used =
        kledger_schemas::avro::SINGLE_OBJECT_HEADER + encoded_len(&view) + VIEW_SLACK_BYTES;
    for item in watchlist(rows, as_of) {
        let n = encoded_len(&item);
        if used + n > record_bytes_max {
            view.watchlist_truncated = true;
            break;
        }
        used += n;
        view.watchlist.push(item);
    }
    view
}

fn encoded_len<T: AvroCodec>(v: &T) -> usize {
    let mut buf = Vec::with_capacity(256);
    v.encode(&mut buf);
    buf.len()
}
