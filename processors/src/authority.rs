//! Authority: the one table that ranks writes (rule 5).
//!
//! Authority comes from the write reason and the source type, never from the model's
//! confidence language (seed 002). The source adjustment stays within ±50 so it orders writes
//! of the same reason without ever lifting one reason above the next tier.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use kledger_schemas::{AssertionClass, Row, Status, SubjectScope, WriteReason};

/// Base rank of a write reason.
pub fn reason_rank(reason: WriteReason) -> i32 {
    match reason {
        WriteReason::DirectUserStatement => 600,
        WriteReason::ExplicitRemember => 600,
        WriteReason::Onboarding => 500,
        WriteReason::AgentReusableConclusion => 400,
        WriteReason::DailyReconciliation => 300,
        WriteReason::LegacyMigration => 200,
        WriteReason::RecurringWorkflow => 100,
        WriteReason::StandingTrigger => 100,
        // Source rows are replaced by newer documents only, never amended or closed.
        WriteReason::SourceSync => 100,
    }
}

/// Source types and their adjustment. A system of record outranks a summary copied into
/// meeting notes; an approved decision outranks a suggestion made in chat. Unlisted types: 0.
pub const SOURCE_ADJUSTMENTS: &[(&str, i32)] = &[
    ("system_of_record", 50),
    ("approved_decision", 40),
    ("signed_document", 30),
    ("document", 20),
    ("calendar", 10),
    ("email", 10),
    ("user_message", 0),
    ("chat_message", 0),
    ("conversation", 0),
    ("meeting_notes", -10),
    ("web", -20),
    ("chat_suggestion", -20),
    ("model_inference", -30),
];

/// Adjustment for a source type (exact match).
pub fn source_adjustment(source_type: &str) -> i32 {
    SOURCE_ADJUSTMENTS
        .iter()
        .find(|(t, _)| *t == source_type)
        .map_or(0, |(_, a)| *a)
}

/// The authority of a write.
pub fn authority(reason: WriteReason, source_type: &str) -> i32 {
    reason_rank(reason) + source_adjustment(source_type)
}

/// Whether `reason` makes a row user-asserted.
pub fn user_asserted(reason: WriteReason) -> bool {
    matches!(
        reason,
        WriteReason::DirectUserStatement | WriteReason::ExplicitRemember | WriteReason::Onboarding
    )
}

/// Whether `reason` is intent-backed (everything but legacy migration).
pub fn intent_backed(reason: WriteReason) -> bool {
    reason != WriteReason::LegacyMigration
}

/// The rank of an assertion class at retrieval: confirmed first, disputed last.
pub fn class_rank(class: AssertionClass) -> i32 {
    match class {
        AssertionClass::Confirmed => 3,
        AssertionClass::Proposed => 2,
        AssertionClass::Inferred => 1,
        AssertionClass::Disputed => 0,
    }
}

/// What a row may conflict over with another active row: the same subject (scope and entity)
/// and slot. Rows without a slot conflict with none.
pub fn conflict_key(row: &Row) -> Option<(SubjectScope, Option<&str>, &str)> {
    Some((
        row.subject.scope,
        row.subject.entity_id.as_deref(),
        row.slot.as_deref()?,
    ))
}

/// The order of conflicting rows at retrieval (rule 5 read back): the higher authority first
/// (the write reason and source type of this table: an approved decision before a suggestion
/// in chat, a calendar before a chat message), then the surer assertion class, then the newer
/// record, then the memory id — a total order, so the same rows come in the same order every
/// time.
pub fn retrieval_order(a: &Row, b: &Row) -> Ordering {
    b.authority
        .cmp(&a.authority)
        .then_with(|| class_rank(b.assertion_class).cmp(&class_rank(a.assertion_class)))
        .then_with(|| b.recorded_at.cmp(&a.recorded_at))
        .then_with(|| a.memory_id.cmp(&b.memory_id))
}

/// Among the active `rows`, each one that loses a conflict ([`conflict_key`]) to another:
/// its memory id → the winner's ([`retrieval_order`]).
pub fn contested<'a>(rows: impl IntoIterator<Item = &'a Row>) -> BTreeMap<String, String> {
    let mut groups: BTreeMap<_, Vec<&Row>> = BTreeMap::new();
    for r in rows.into_iter().filter(|r| r.status == Status::Active) {
        if let Some(k) = conflict_key(r) {
            let g = groups.entry(k).or_default();
            if !g.iter().any(|x| x.memory_id == r.memory_id) {
                g.push(r);
            }
        }
    }
    let mut out = BTreeMap::new();
    for mut g in groups.into_values().filter(|g| g.len() > 1) {
        g.sort_by(|a, b| retrieval_order(a, b));
        let winner = g[0].memory_id.clone();
        for loser in &g[1..] {
            out.insert(loser.memory_id.clone(), winner.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adjustments_never_cross_a_reason_tier() {
        let max = SOURCE_ADJUSTMENTS
            .iter()
            .map(|(_, a)| *a)
            .max()
            .unwrap_or(0);
        let min = SOURCE_ADJUSTMENTS
            .iter()
            .map(|(_, a)| *a)
            .min()
            .unwrap_or(0);
        assert!(
            max - min < 100,
            "spread {max}..{min} crosses the 100-point tiers"
        );
    }

    #[test]
    fn system_of_record_outranks_meeting_notes_and_approved_outranks_chat() {
        let r = WriteReason::AgentReusableConclusion;
        assert!(authority(r, "system_of_record") > authority(r, "meeting_notes"));
        assert!(authority(r, "approved_decision") > authority(r, "chat_suggestion"));
        assert_eq!(authority(r, "something_new"), 400);
    }

    fn row(id: &str, reason: WriteReason, source: &str, class: AssertionClass) -> Row {
        let mut r = crate::testrow();
        r.memory_id = id.into();
        r.slot = Some("work_city".into());
        r.subject.scope = SubjectScope::ThirdParty;
        r.subject.entity_id = Some("person:ana".into());
        r.authority = authority(reason, source);
        r.assertion_class = class;
        r
    }

    #[test]
    fn conflicts_resolve_by_the_table_the_same_way_every_time() {
        let r = WriteReason::AgentReusableConclusion;
        let calendar = row("mem_b", r, "calendar", AssertionClass::Confirmed);
        let chat = row("mem_a", r, "chat_message", AssertionClass::Confirmed);
        let approved = row("mem_c", r, "approved_decision", AssertionClass::Confirmed);
        let inferred = row("mem_d", r, "model_inference", AssertionClass::Inferred);
        assert_eq!(
            contested([&chat, &calendar]),
            BTreeMap::from([("mem_a".into(), "mem_b".into())])
        );
        assert_eq!(contested([&calendar, &chat]), contested([&chat, &calendar]));
        let all = contested([&inferred, &chat, &approved, &calendar]);
        assert!(all.values().all(|w| w == "mem_c"), "{all:?}");
        assert_eq!(all.len(), 3);
        // Another slot, another subject, or an ended row: no conflict.
        let mut other = chat.clone();
        other.slot = Some("employer".into());
        let mut closed = calendar.clone();
        closed.status = Status::Closed;
        assert!(contested([&other, &calendar]).is_empty());
        assert!(contested([&closed, &chat]).is_empty());
        // Equal authority: the surer class, then the newer record.
        let mut sure = chat.clone();
        sure.memory_id = "mem_z".into();
        let mut unsure = chat.clone();
        unsure.assertion_class = AssertionClass::Proposed;
        assert_eq!(contested([&unsure, &sure])["mem_a"], "mem_z");
    }
}
