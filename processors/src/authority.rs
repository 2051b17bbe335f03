//! Authority: the one table that ranks writes (rule 5).
//!
//! Authority comes from the write reason and the source type, never from the model's
//! confidence language (seed 002). The source adjustment stays within ±50 so it orders writes
//! of the same reason without ever lifting one reason above the next tier.

use kledger_schemas::WriteReason;

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
}
