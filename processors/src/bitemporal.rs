//! Bitemporal reads: a row as it stood at an effective time, among the versions the ledger had
//! recorded by a record time.
//!
//! Effective time (`as_of`) is when a fact holds in the world: a row is in effect at `t` when
//! it is not purged, `valid_from ≤ t`, and neither its `valid_to` nor its `expires_at` has
//! passed. Record time (`known_at`) is when the ledger learnt it: a read known at `r` sees, of
//! each row, the latest version whose commit was recorded by `r` (the view store picks it).
//! So "what did the ledger believe at `r` about `t`" is [`as_of`] over those versions. A row
//! superseded or closed since `t` was the active one then: [`as_of`] gives it back as active,
//! and every rule that reads current rows (the profile, the playbook index, search) answers
//! for `t` unchanged. A purged row is in no version any more (privacy deletion outranks
//! history).

use kledger_schemas::{Row, Status};

/// Whether `row` (one version) is in effect at effective time `t`.
pub fn in_effect(row: &Row, t: i64) -> bool {
    row.status != Status::Tombstoned
        && row.valid_from <= t
        && row.valid_to.is_none_or(|end| end > t)
        && row.expires_at.is_none_or(|end| end > t)
}

/// `row` as it stood at effective time `t`: active while in effect (whatever later changed its
/// status), as it is once it ended, and nothing before it started or once purged.
pub fn as_of(mut row: Row, t: i64) -> Option<Row> {
    if row.status == Status::Tombstoned || row.valid_from > t {
        return None;
    }
    if in_effect(&row, t) {
        row.status = Status::Active;
    }
    Some(row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_superseded_later_was_active_then() {
        let mut r = crate::testrow();
        r.valid_from = 100;
        r.valid_to = Some(200);
        r.status = Status::Superseded;
        assert!(as_of(r.clone(), 99).is_none(), "not started");
        assert_eq!(as_of(r.clone(), 100).unwrap().status, Status::Active);
        assert_eq!(as_of(r.clone(), 199).unwrap().status, Status::Active);
        let ended = as_of(r.clone(), 200).unwrap();
        assert_eq!(ended.status, Status::Superseded);
        assert!(!ended.is_current(200));
        r.status = Status::Tombstoned;
        assert!(as_of(r, 150).is_none(), "purged");
    }

    #[test]
    fn expiry_ends_a_row_too() {
        let mut r = crate::testrow();
        r.valid_from = 0;
        r.valid_to = None;
        r.expires_at = Some(50);
        assert!(in_effect(&r, 49) && !in_effect(&r, 50));
    }
}
