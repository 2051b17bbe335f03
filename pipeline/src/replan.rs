//! The demo's extractor (`kledger run --demo`): what an extractor does with a `replan` answer,
//! for the one case the bundled example needs. An assert of a slotted fact whose slot another
//! row holds (`slot_occupied`) is planned again as an amend of that row, against the head and
//! the row's revision the receipt reports; the action id stays (a replanned action was never
//! committed). Real extractors re-plan with their own model of the conversation: this only
//! shows the loop (`examples/python` is a fuller one).
//!
//! May not touch: anything but the demo's intents and their receipts.

use std::collections::BTreeSet;
use std::time::Duration;

use kledger_schemas::{AmendOp, IntentRecord, Op, Outcome, Receipt, TargetRef};

use crate::publish::Publisher;
use kledger_runtime::config::Config;

/// `record` planned again after `receipt` answered it `replan` with `slot_occupied`: an amend
/// of the row holding the slot. `None` for any other answer or intent.
pub fn replanned(record: &IntentRecord, receipt: &Receipt) -> Option<IntentRecord> {
    if receipt.outcome != Outcome::Replan || receipt.code.as_deref() != Some("slot_occupied") {
        return None;
    }
    let [Op::Assert(assert)] = record.intent.ops.as_slice() else {
        return None;
    };
    let [held] = receipt.stale_targets.as_slice() else {
        return None;
    };
    let mut intent = record.intent.clone();
    intent.planned_against.head_seq = receipt.head_seq;
    intent.planned_against.targets = vec![TargetRef {
        memory_id: held.memory_id.clone(),
        revision: held.revision?,
        content_hash: held.content_hash.clone()?,
    }];
    intent.ops = vec![Op::Amend(AmendOp {
        targets: vec![held.memory_id.clone()],
        replacement: assert.clone(),
    })];
    Some(IntentRecord {
        timestamp: record.timestamp,
        partition: None,
        offset: None,
        intent,
    })
}

/// Waits (at most `timeout`) for the receipts of `records`, and publishes again, once, each
/// one [`replanned`] plans anew; the number published.
pub fn replan_all(
    config: &Config,
    partitions: i32,
    records: &[IntentRecord],
    timeout: Duration,
) -> anyhow::Result<usize> {
    let wanted: BTreeSet<&str> = records
        .iter()
        .map(|r| r.intent.action_id.as_str())
        .collect();
    let receipts = crate::migrate::await_receipts(config, partitions, &wanted, timeout, &|| {})?;
    let again: Vec<IntentRecord> = records
        .iter()
        .filter_map(|r| replanned(r, receipts.get(&r.intent.action_id)?))
        .collect();
    if again.is_empty() {
        return Ok(0);
    }
    let mut publisher = Publisher::new(config, partitions)?;
    for r in &again {
        publisher.send(r)?;
    }
    publisher.finish(&|| {})?;
    Ok(again.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use kledger_schemas::StaleTarget;

    fn receipt(outcome: Outcome, code: &str, stale: Vec<StaleTarget>) -> Receipt {
        Receipt {
            action_id: "a-1".into(),
            account_id: "t_a/user/u_1".into(),
            outcome,
            commit_seq: None,
            rebased: false,
            head_seq: 7,
            head_hash: String::new(),
            code: Some(code.into()),
            message: None,
            stale_targets: stale,
            memory_ids: Vec::new(),
            intent_partition: 0,
            intent_offset: 0,
            recorded_at: 0,
        }
    }

    #[test]
    fn a_slot_held_by_another_row_is_planned_again_as_its_amend() {
        // The demo's move to Porto (the bundled example).
        let record: IntentRecord = include_str!("../../examples/intents.jsonl")
            .lines()
            .filter_map(|l| serde_json::from_str::<IntentRecord>(l).ok())
            .find(|r| r.intent.action_id == "alice-5")
            .unwrap();
        let [Op::Assert(assert)] = record.intent.ops.as_slice() else {
            panic!("alice-5 asserts one fact");
        };
        let assert = assert.clone();
        let held = StaleTarget {
            memory_id: "mem_01KE6JQ3007SMW50PVEYBV0DVA".into(),
            revision: Some(2),
            content_hash: Some("ab".repeat(32)),
            status: None,
        };
        let again = replanned(
            &record,
            &receipt(Outcome::Replan, "slot_occupied", vec![held.clone()]),
        )
        .unwrap();
        assert_eq!(again.intent.action_id, "alice-5");
        assert_eq!(again.intent.planned_against.head_seq, 7);
        assert_eq!(again.intent.planned_against.targets[0].revision, 2);
        assert_eq!(
            again.intent.ops,
            vec![Op::Amend(AmendOp {
                targets: vec![held.memory_id.clone()],
                replacement: assert,
            })]
        );
        assert_eq!((again.partition, again.offset), (None, None));
        // Anything else is left alone.
        for r in [
            receipt(Outcome::Replan, "stale_target", vec![held.clone()]),
            receipt(Outcome::Rejected, "slot_occupied", vec![held.clone()]),
            receipt(Outcome::Replan, "slot_occupied", Vec::new()),
        ] {
            assert_eq!(replanned(&record, &r), None);
        }
    }
}
