//! When a read looks at the ledger, and whether it may answer yet.
//!
//! - **Bitemporal reads.** Every read takes `as_of` (effective time, ms; default now) and
//!   `known_at` (record time, ms; default: everything folded). Rows come from the view store:
//!   as they stand, or, with `known_at`, each row's latest version recorded by then
//!   ([`kledger_state::ViewStore::rows_known_at`]); then each is taken as it stood at `as_of`
//!   ([`kledger_processors::bitemporal::as_of`]): a row superseded or closed since was the
//!   active one then. Purged rows are in no version.
//! - **Read-your-writes.** A receipt's consistency token is the account's commit_seq it
//!   reports (`commit_seq` when committed or duplicate, else `head_seq`). A read given
//!   `min_commit_seq` waits ([`super::waits`]: asynchronously, bounded per caller and in all,
//!   the owner's only), at most `wait_ms` (default 5,000, at most 30,000), until the
//!   projections it reads from have applied that commit of the account — the view store, and
//!   for search the vector index too — and otherwise answers `409 not_caught_up` with their
//!   positions. A position is one point read per projection (the view store's account mark,
//!   the vector sink's account mark), never a scan.
//!
//! May not touch: anything but the view store and the vector marks (reads only).

use kledger_processors::access::{Principal, may_read};
use kledger_processors::bitemporal;
use kledger_schemas::{Row, Status};
use serde::Serialize;

use super::{Api, ApiError, now_ms};

/// The longest a read waits for its `min_commit_seq`, ms.
pub const WAIT_MS_MAX: u64 = 30_000;
/// How long a read waits for its `min_commit_seq` by default, ms.
pub const WAIT_MS_DEFAULT: u64 = 5_000;

/// How far before now an `as_of` still reads as now: a client whose clock is a little behind
/// the server's reads the present, not history.
pub const PRESENT_SKEW_MS: i64 = 5_000;

/// When a read looks: effective time and record time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At {
    /// Effective time, ms.
    pub as_of: i64,
    /// Record time, ms (`None`: everything folded).
    pub known_at: Option<i64>,
    /// Whether the read looks anywhere but at the rows as they stand now.
    past: bool,
}

impl At {
    /// The point a read's parameters name (effective time now by default).
    pub fn new(as_of: Option<i64>, known_at: Option<i64>) -> Self {
        let now = now_ms();
        let past = known_at.is_some() || as_of.is_some_and(|t| t < now - PRESENT_SKEW_MS);
        // An `as_of` read as now is now: the rows as they stand, never a version that ended or
        // was narrowed in the last few seconds.
        let as_of = match as_of {
            Some(t) if past || t >= now => t,
            _ => now,
        };
        Self {
            as_of,
            known_at,
            past,
        }
    }

    /// The same point, read for history too (the timeline's `history` and `audit`: ended and
    /// disputed versions are shown, each only to a reader its row admits now).
    pub fn with_history(mut self, history: bool) -> Self {
        self.past |= history;
        self
    }

    /// Whether the read looks anywhere but at the rows as they stand now: a record time, an
    /// effective time more than [`PRESENT_SKEW_MS`] before now, or history.
    pub fn is_past(&self) -> bool {
        self.past
    }
}

/// The rows of `account` `p` may read, as they stood at `at` (at most
/// `views.account_rows_max` rows, or versions with `known_at`, are read); whether that bound
/// cut the read. A past version is shown only if its row, as it stands now, admits `p` too
/// ([`admitted_now`]).
pub fn readable_at(
    api: &Api,
    p: &Principal,
    account: &str,
    at: At,
) -> Result<(Vec<Row>, bool), ApiError> {
    let cap = api.config.views.account_rows_max;
    let views = api.views.get();
    let (versions, capped) = match at.known_at {
        None => {
            // One more than the cap tells whether it cut.
            let mut rows = views.rows(account, cap.saturating_add(1))?;
            let capped = rows.len() > cap;
            rows.truncate(cap);
            (rows, capped)
        }
        Some(r) => views.rows_known_at(account, r, cap)?,
    };
    let rows: Vec<Row> = versions
        .into_iter()
        .filter_map(|v| bitemporal::as_of(v, at.as_of))
        .filter(|r| may_read(p, r))
        .collect();
    if !at.is_past() {
        return Ok((rows, capped));
    }
    let ids: Vec<&str> = rows.iter().map(|r| r.memory_id.as_str()).collect();
    let now = admitted_now(api, p, account, &ids)?;
    let rows = rows
        .iter()
        .zip(now)
        .filter(|(_, ok)| *ok)
        .map(|(r, _)| r.clone())
        .collect();
    Ok((rows, capped))
}

/// Supersession links followed at most to find a row as it stands now, for a reader other
/// than the owner (a longer chain admits nobody: fail closed; the owner's rows always admit
/// it).
pub const CHAIN_MAX: usize = 64;

/// Whether the row of each of `ids`, as it stands now, admits `p`: a version of the past is
/// shown only to a reader its row admits now — the row itself, or when it was superseded the
/// row that replaced it, followed to the end of the chain. Narrowing a row's visibility
/// (amending it into a private one) narrows its past too; a purged row admits nobody.
pub fn admitted_now(
    api: &Api,
    p: &Principal,
    account: &str,
    ids: &[&str],
) -> Result<Vec<bool>, ApiError> {
    // The owner's rows admit it at every version (a purged row has no version left).
    if super::owns(p, account) {
        return Ok(vec![true; ids.len()]);
    }
    let views = api.views.get();
    // Where each chain walked ends, whether that row admits `p` (chains share their ends).
    let mut ends: std::collections::BTreeMap<String, bool> = std::collections::BTreeMap::new();
    views
        .rows_of(account, ids)?
        .into_iter()
        .map(|row| {
            let Some(mut row) = row else {
                return Ok(false);
            };
            let mut walked = Vec::new();
            for _ in 0..CHAIN_MAX {
                if let Some(known) = ends.get(&row.memory_id) {
                    return Ok(*known);
                }
                match (row.status, row.superseded_by.take()) {
                    (Status::Superseded, Some(next)) => {
                        walked.push(row.memory_id.clone());
                        match views.row(account, &next)? {
                            Some(n) => row = n,
                            None => return Ok(false),
                        }
                    }
                    _ => {
                        let ok = may_read(p, &row);
                        for id in walked.into_iter().chain([row.memory_id.clone()]) {
                            ends.insert(id, ok);
                        }
                        return Ok(ok);
                    }
                }
            }
            Ok(false)
        })
        .collect()
}

/// Rows `ids` of `account` as they stood at `at`, in order, each if it existed then (no
/// access check): one batched read when `at` is the latest record.
pub fn rows_at(
    api: &Api,
    account: &str,
    ids: &[&str],
    at: At,
) -> Result<Vec<Option<Row>>, ApiError> {
    let versions = match at.known_at {
        None => api.views.get().rows_of(account, ids)?,
        Some(_) => {
            return ids.iter().map(|id| row_at(api, account, id, at)).collect();
        }
    };
    Ok(versions
        .into_iter()
        .map(|v| v.and_then(|v| bitemporal::as_of(v, at.as_of)))
        .collect())
}

/// [`rows_at`], each only if `p` may read it: the version, and at a past `at` its row as it
/// stands now ([`admitted_now`]).
pub fn readable_rows_at(
    api: &Api,
    p: &Principal,
    account: &str,
    ids: &[&str],
    at: At,
) -> Result<Vec<Option<Row>>, ApiError> {
    let rows = rows_at(api, account, ids, at)?;
    let now = if at.is_past() {
        admitted_now(api, p, account, ids)?
    } else {
        vec![true; ids.len()]
    };
    Ok(rows
        .into_iter()
        .zip(now)
        .map(|(r, ok)| r.filter(|r| ok && may_read(p, r)))
        .collect())
}

/// Rows `ids` of `account` as they stand in `views` now, not opened
/// ([`kledger_state::ViewStore::rows_unopened`]), each only if `p` may read it: what
/// [`readable_rows_at`] gives at a present `at` (not [`At::is_past`]), still sealed. Every field
/// a read checks (status, times, kind, tenant, visibility, grants, sensitivity level) is
/// unsealed, so the reader opens only the rows it answers with
/// ([`kledger_state::ViewStore::open_rows`]).
pub fn readable_unopened_now(
    views: &kledger_state::ViewStore,
    p: &Principal,
    account: &str,
    ids: &[&str],
    at: At,
) -> Result<Vec<Option<Row>>, ApiError> {
    debug_assert!(!at.is_past(), "a past read reads versions as they stood");
    Ok(views
        .rows_unopened(account, ids)?
        .into_iter()
        .map(|v| {
            v.and_then(|v| bitemporal::as_of(v, at.as_of))
                .filter(|r| may_read(p, r))
        })
        .collect())
}

/// Row `id` of `account` as it stood at `at`, if it existed then (no access check).
pub fn row_at(api: &Api, account: &str, id: &str, at: At) -> Result<Option<Row>, ApiError> {
    let views = api.views.get();
    let version = match at.known_at {
        None => views.row(account, id)?,
        Some(r) => views.row_known_at(account, id, r)?,
    };
    Ok(version.and_then(|v| bitemporal::as_of(v, at.as_of)))
}

/// [`row_at`], only if `p` may read it (as [`readable_rows_at`]).
pub fn readable_row_at(
    api: &Api,
    p: &Principal,
    account: &str,
    id: &str,
    at: At,
) -> Result<Option<Row>, ApiError> {
    Ok(readable_rows_at(api, p, account, &[id], at)?
        .pop()
        .flatten())
}

/// The projections' positions for one account: the last commit each has applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Positions {
    /// The view store's.
    pub views: i64,
    /// The vector index's (when the read needs it and this process holds the vector sink's
    /// marks).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vectors: Option<i64>,
}

/// `account`'s positions in the projections a read looks at (`vectors`: search).
pub fn positions(api: &Api, account: &str, vectors: bool) -> Result<Positions, ApiError> {
    let views = api.views.get().mark(account)?.commit_seq;
    let vectors = if vectors {
        match api.search.as_ref().and_then(|s| s.get()) {
            Some(search) => match search.live.get().marks() {
                Ok(marks) => Some(marks.applied(account)?),
                // Another process holds the vector sink's marks: the view store's position
                // is all this process can wait for (docs/api.md).
                Err(_) => None,
            },
            None => None,
        }
    } else {
        None
    };
    Ok(Positions { views, vectors })
}

/// The consistency token of a receipt: the account's commit_seq it reports (the commit made
/// or found, else the head it was decided against). A read given it as `min_commit_seq` sees
/// at least what the receipt saw.
pub fn token(receipt: &kledger_schemas::Receipt) -> i64 {
    receipt.commit_seq.unwrap_or(receipt.head_seq)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_as_of_read_as_now_is_now() {
        let now = now_ms();
        let near = At::new(Some(now - 2_000), None);
        assert!(!near.is_past());
        assert!(
            near.as_of >= now,
            "within the skew the rows are read as they stand now"
        );
        let past = At::new(Some(now - PRESENT_SKEW_MS - 1_000), None);
        assert!(past.is_past());
        assert_eq!(past.as_of, now - PRESENT_SKEW_MS - 1_000);
        let future = At::new(Some(now + 60_000), None);
        assert_eq!((future.as_of, future.is_past()), (now + 60_000, false));
        assert!(At::new(None, Some(now)).is_past());
        assert!(At::new(None, None).with_history(true).is_past());
    }
}
