//! Authority at retrieval: conflicting rows resolved by the one authority table
//! ([`kledger_processors::authority::contested`]) on every read that returns rows.
//!
//! Two active rows conflict when they share subject and slot (a calendar and a chat message
//! that disagree about where Ana works; an approved decision and an inferred fact). Search
//! looks for a row's rivals among the rows of its entity the reader may read now (the
//! entity's [`CONFLICT_SCAN_MAX`] newest timeline entries; the timeline has them from its own
//! scan), so a winner the reader may not read never shows, and nothing tells of it. Search ranks each winner ahead of its losers; the
//! timeline keeps time order; both mark each loser `contested_by` the winner; the profile
//! renders the winner only (`kledger_processors::render::profile`).

use std::collections::{BTreeMap, BTreeSet};

use kledger_processors::access::Principal;
use kledger_processors::authority;
use kledger_schemas::Row;

use super::at::{At, readable_rows_at};
use super::{Api, ApiError};

/// Timeline entries of one entity a read looks through for a row's rivals, newest first.
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
    let mut pool: Vec<Row> = rows.to_vec();
    for entity in entities {
        let ids = views.timeline(account, entity, CONFLICT_SCAN_MAX)?;
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        pool.extend(
            readable_rows_at(api, p, account, &ids, at)?
                .into_iter()
                .flatten()
                .filter(|r| r.slot.is_some() && r.is_current(at.as_of)),
        );
    }
    let mine: BTreeSet<&str> = rows.iter().map(|r| r.memory_id.as_str()).collect();
    Ok(authority::contested(pool.iter())
        .into_iter()
        .filter(|(loser, _)| mine.contains(loser.as_str()))
        .collect())
}
