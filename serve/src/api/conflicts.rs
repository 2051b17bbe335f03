//! Authority at retrieval: conflicting rows resolved by the one authority table
//! ([`kledger_processors::authority::contested`]) on every read that returns rows.
//!
//! Two active rows conflict when they share subject and slot (a calendar and a chat message
//! that disagree about where Ana works; an approved decision and an inferred fact). Search
//! looks for a row's rivals among the rows the reader may read now that share its subject and
//! slot (at most [`CONFLICT_SCAN_MAX`] of them, from the view store's slot index; at a past
//! time, among the entity's newest timeline entries as they stood; the timeline has them from
//! its own scan), so a winner the reader may not read never shows, and nothing tells of it. Search ranks each winner ahead of its losers; the
//! timeline keeps time order; both mark each loser `contested_by` the winner; the profile
//! renders the winner only (`kledger_processors::render::profile`).

use std::collections::{BTreeMap, BTreeSet};

use kledger_processors::access::Principal;
use kledger_processors::authority;
use kledger_schemas::Row;

use super::at::{At, readable_rows_at, readable_unopened_now};
use super::{Api, ApiError};

/// Rows sharing a subject and slot a read looks through for a row's rivals (and at a past time,
/// timeline entries of one entity, newest first).
pub const CONFLICT_SCAN_MAX: usize = 200;

/// For `rows` of `account` (current at `at`, readable by `p`): each one that loses a conflict
/// → the winner's id, the winner among the rows of the same entities `p` may read at `at`.
pub fn contested_in(
    api: &Api,
    p: &Principal,
    account: &str,
    rows: &[Row],
    at: At,
) -> Result<BTreeMap<String, String>, ApiError> {
    let entities: BTreeSet<&str> = rows
        .iter()
        .filter(|r| r.slot.is_some())
        .filter_map(kledger_state::views::entity_of)
        .collect();
    if entities.is_empty() {
        return Ok(BTreeMap::new());
    }
    let views = api.views.get();
    let mine: BTreeSet<&str> = rows.iter().map(|r| r.memory_id.as_str()).collect();
    let mut pool: Vec<Row> = rows.to_vec();
    // The rows of `ids` that `p` may read at `at` and that hold a slot then, into the pool.
    let add = |pool: &mut Vec<Row>, ids: &[&str]| -> Result<(), ApiError> {
        pool.extend(
            readable_rows_at(api, p, account, ids, at)?
                .into_iter()
                .flatten()
                .filter(|r| r.slot.is_some() && r.is_current(at.as_of)),
        );
        Ok(())
    };
    if !at.is_past() && views.slots_indexed()? {
        // Now, only a row that shares one of `rows`' subject and slot can contest it: the slot
        // index has them (a few rows, not the entity's whole timeline). Who wins reads
        // unsealed fields only (subject, slot, status, times, authority, class), so they are
        // not opened: a rival counts if `p` may read it and it is current, and its data key is
        // there (a row whose purge is folding shows nowhere, so it contests nothing).
        let mut seen = BTreeSet::new();
        let keyed: Vec<&Row> = rows
            .iter()
            .filter(|r| authority::conflict_key(r).is_some_and(|k| seen.insert(k)))
            .collect();
        let rivals: BTreeSet<String> = views
            .slot_rivals_each(account, keyed, CONFLICT_SCAN_MAX)?
            .into_iter()
            .flatten()
            .filter(|id| !mine.contains(id.as_str()))
            .collect();
        let ids: Vec<&str> = rivals.iter().map(String::as_str).collect();
        let current = readable_unopened_now(&views, p, account, &ids, at)?
            .into_iter()
            .map(|r| r.filter(|r| r.slot.is_some() && r.is_current(at.as_of)))
            .collect();
        pool.extend(views.keyed_rows(account, current)?.into_iter().flatten());
    } else {
        let keys: BTreeSet<_> = rows.iter().filter_map(authority::conflict_key).collect();
        for entity in entities {
            let ids = views.timeline(account, entity, CONFLICT_SCAN_MAX)?;
            let mut ids: Vec<&str> = ids.iter().map(String::as_str).collect();
            if !at.is_past() {
                // A store whose slot index is not built yet (a follower of an owner that has
                // not indexed it): the entity's newest rows, read without opening (a row's
                // subject and slot are never sealed), then the few that share a key opened.
                // At a past time a row's version then may differ from its version now, so
                // all are read as they stood.
                let unopened = views.rows_unopened(account, &ids)?;
                ids = ids
                    .into_iter()
                    .zip(unopened)
                    .filter(|(id, r)| {
                        !mine.contains(id)
                            && r.as_ref()
                                .and_then(authority::conflict_key)
                                .is_some_and(|k| keys.contains(&k))
                    })
                    .map(|(id, _)| id)
                    .collect();
            }
            add(&mut pool, &ids)?;
        }
    }
    Ok(authority::contested(pool.iter())
        .into_iter()
        .filter(|(loser, _)| mine.contains(loser.as_str()))
        .collect())
}
