//! Expiry that deletes: the purge intent kledger publishes for a row whose `expires_at` (an
//! extractor's `ttl_days`, cm_payload_v1's auto-delete) has passed.
//!
//! The view sink sweeps its store's expiry index (`kledger_pipeline::project::views`) and
//! publishes, for each active row expired by its clock, the intent [`purge_intent`] makes of it
//! to the intents topic, with that clock as the record timestamp. From there it is decided like
//! any other purge — so replay re-decides it from the topic, byte for byte — and its receipt
//! is the purge receipt of `GET /v1/purges/{action_id}`. Everything in the intent comes from
//! the row: a row swept twice (by two hosts, or after a restart) is the same intent, answered
//! `duplicate`; a row changed since (a new revision) makes a new one.

use kledger_schemas::{
    Extractor, HeadPolicy, Intent, Op, PlannedAgainst, PurgeOp, Row, Source, TargetRef, WriteReason,
};

/// The `source_type` of the purge intents expiry publishes.
pub const SOURCE_TYPE: &str = "ttl_expiry";
/// The extractor named on them.
pub const EXTRACTOR: &str = "kledger-ttl";
/// Their action ids' prefix: `ttl_<memory_id>_r<revision>`.
pub const ACTION_PREFIX: &str = "ttl_";

/// Whether `row` is due for its expiry purge at `now`: active and past its `expires_at`.
pub fn due(row: &Row, now: i64) -> bool {
    row.status == kledger_schemas::Status::Active && row.expires_at.is_some_and(|t| t <= now)
}

/// The purge intent of expired `row`: its own account and tenant block, action id
/// `ttl_<memory_id>_r<revision>`, naming the row's revision and content hash (a purge
/// outranks history and is decided whatever the row's revision; a row's expiry never changes,
/// so the same row always makes the same intent), source version its `expires_at`.
pub fn purge_intent(row: &Row) -> Intent {
    let t = &row.tenant;
    Intent {
        action_id: format!("{ACTION_PREFIX}{}_r{}", row.memory_id, row.revision),
        account_id: format!("{}/{}/{}", t.tenant_id, t.owner_kind, t.owner_id),
        tenant: t.clone(),
        source: Source {
            source_id: row.memory_id.clone(),
            source_type: SOURCE_TYPE.into(),
            source_version: row.expires_at.unwrap_or_default().to_string(),
            author_id: None,
        },
        extractor: Extractor {
            name: EXTRACTOR.into(),
            // Fixed, so a sweep of another kledger version publishes the same intent.
            version: "1".into(),
        },
        write_reason: WriteReason::DailyReconciliation,
        planned_against: PlannedAgainst {
            head_seq: 0,
            policy: HeadPolicy::Rebase,
            targets: vec![TargetRef {
                memory_id: row.memory_id.clone(),
                revision: row.revision,
                content_hash: row.content_hash.clone(),
            }],
        },
        ops: vec![Op::Purge(PurgeOp {
            target: Some(row.memory_id.clone()),
            entity_id: None,
            whole_account: false,
            reason: "expired".into(),
        })],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_intent_is_the_rows_own() {
        let mut r = crate::testrow();
        r.expires_at = Some(500);
        assert!(!due(&r, 499));
        assert!(due(&r, 500));
        let i = purge_intent(&r);
        assert_eq!(i, purge_intent(&r), "the same row, the same intent");
        assert_eq!(i.action_id, format!("ttl_{}_r{}", r.memory_id, r.revision));
        assert_eq!(i.source.source_version, "500");
        r.revision += 1;
        assert_ne!(purge_intent(&r).action_id, i.action_id);
        r.status = kledger_schemas::Status::Closed;
        assert!(!due(&r, 1_000));
        assert!(crate::validate::validate(&i, 600, crate::Rules::default()).is_ok());
    }
}
