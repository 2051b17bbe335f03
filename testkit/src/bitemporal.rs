//! A deliberately simple model of bitemporal reads, for the golden grid
//! (`testkit/tests/bitemporal.rs`): every version of every row in commit order, each with the
//! record time of the commit that wrote it, and two questions asked of them by brute force.
//!
//! - **Known at `K`** (record time): of each row, the last version written by a commit recorded
//!   at or before `K`. Without `K`, its last version.
//! - **As of `T`** (effective time): a version is in effect at `T` when it is not a tombstone,
//!   started at or before `T`, and neither its `valid_to` nor its `expires_at` has passed; in
//!   effect, it is answered as active (a row superseded or closed since was the active one
//!   then); started after `T`, it is not answered; ended by `T`, it is answered as it was
//!   stored (superseded, closed, or active with a passed end).
//! - **A purge** erases every version of the rows it tombstones: they are answered at no point,
//!   before the purge's record time included (privacy deletion outranks history).
//!
//! Written from the contract, not from kledger's code: it shares nothing with
//! `kledger_processors::bitemporal` or the view store.

use std::collections::BTreeMap;

use kledger_schemas::{Commit, Row, Status};

/// One version of one row and the record time of the commit that wrote it.
#[derive(Debug, Clone)]
pub struct Version {
    /// The row as that commit left it.
    pub row: Row,
    /// The commit's `recorded_at` (ms).
    pub recorded_at: i64,
}

/// Every version of every row of one account, in commit order.
#[derive(Debug, Clone, Default)]
pub struct Model {
    versions: Vec<Version>,
}

impl Model {
    /// The model of one account's `commits` (in commit order).
    pub fn of(commits: &[Commit]) -> Self {
        let mut versions: Vec<Version> = Vec::new();
        for c in commits {
            for op in &c.ops {
                if op.row.status == Status::Tombstoned {
                    versions.retain(|v| v.row.memory_id != op.row.memory_id);
                } else {
                    versions.push(Version {
                        row: op.row.clone(),
                        recorded_at: c.recorded_at,
                    });
                }
            }
        }
        Self { versions }
    }

    /// The rows answered at effective time `as_of`, known at `known_at`, by memory id.
    pub fn rows(&self, as_of: i64, known_at: Option<i64>) -> BTreeMap<String, Row> {
        let mut last: BTreeMap<String, Row> = BTreeMap::new();
        for v in &self.versions {
            if known_at.is_none_or(|k| v.recorded_at <= k) {
                last.insert(v.row.memory_id.clone(), v.row.clone());
            }
        }
        last.into_iter()
            .filter_map(|(id, mut row)| {
                if row.valid_from > as_of {
                    return None;
                }
                let ended = row.valid_to.is_some_and(|t| t <= as_of)
                    || row.expires_at.is_some_and(|t| t <= as_of);
                if !ended {
                    row.status = Status::Active;
                }
                Some((id, row))
            })
            .collect()
    }
}
