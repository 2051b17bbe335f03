//! `Row` (knowledge_ledger.v1) and `Commit` (topic `kledger.outbox.v1`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::common::*;
use crate::avro_record;

/// One knowledge_ledger.v1 row as it stands after a change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// `mem_` + ULID (time part = `valid_from`).
    pub memory_id: String,
    /// fact | document | trigger.
    pub kind: Kind,
    /// One line: fact, playbook description or trigger description (erased by purge).
    pub content: String,
    /// Document body (erased by purge).
    pub body: Option<String>,
    /// Trigger condition (erased by purge).
    pub condition: Option<BTreeMap<String, String>>,
    /// Canonical slot name (aliases resolved).
    pub slot: Option<String>,
    /// Whom the row is about.
    pub subject: Subject,
    /// Effective time start (ms).
    pub valid_from: i64,
    /// Effective time end (ms).
    pub valid_to: Option<i64>,
    /// Expiry (ms).
    pub expires_at: Option<i64>,
    /// Record time of the commit that created the row (ms, the Kafka record timestamp).
    pub recorded_at: i64,
    /// active | superseded | closed | tombstoned.
    pub status: Status,
    /// The row that replaced this one.
    pub superseded_by: Option<String>,
    /// Why the row was closed.
    pub closed_reason: Option<String>,
    /// Why the row was written.
    pub write_reason: WriteReason,
    /// False only for `legacy_migration`.
    pub intent_backed: bool,
    /// True only for direct_user_statement, explicit_remember and onboarding.
    pub user_asserted: bool,
    /// confirmed | proposed | inferred | disputed.
    pub assertion_class: AssertionClass,
    /// Extraction confidence.
    pub confidence: Option<f64>,
    /// Curation weight.
    pub curation_weight: i32,
    /// Sensitivity.
    pub sensitivity: Sensitivity,
    /// Visibility.
    pub visibility: Visibility,
    /// Readers granted access.
    pub acl: Acl,
    /// Tags.
    pub tags: Vec<String>,
    /// Language code.
    pub lang: Option<String>,
    /// Evidence (quotes erased by purge).
    pub evidence: Vec<Evidence>,
    /// The extractor-supplied vector, if any (dropped by purge).
    pub embedding: Option<Embedding>,
    /// Authority rank (write reason × source type).
    pub authority: i32,
    /// Starts at 1; every change adds 1.
    pub revision: i64,
    /// Hex SHA-256 of the row's semantic content.
    pub content_hash: String,
    /// The commit that last changed the row.
    pub commit_seq: i64,
    /// The action that created the row.
    pub action_id: String,
    /// The source of the creating action.
    pub source: Source,
    /// The extractor of the creating action.
    pub extractor: Extractor,
    /// The tenant block.
    pub tenant: Tenant,
    /// Account generation when the row last changed.
    pub generation: i64,
}
avro_record!(Row {
    memory_id,
    kind,
    content,
    body,
    condition,
    slot,
    subject,
    valid_from,
    valid_to,
    expires_at,
    recorded_at,
    status,
    superseded_by,
    closed_reason,
    write_reason,
    intent_backed,
    user_asserted,
    assertion_class,
    confidence,
    curation_weight,
    sensitivity,
    visibility,
    acl,
    tags,
    lang,
    evidence,
    embedding,
    authority,
    revision,
    content_hash,
    commit_seq,
    action_id,
    source,
    extractor,
    tenant,
    generation
});

impl Row {
    /// Whether the row is active and its effective time covers `at_ms`.
    pub fn is_current(&self, at_ms: i64) -> bool {
        self.status == Status::Active
            && self.valid_from <= at_ms
            && self.valid_to.is_none_or(|t| t > at_ms)
            && self.expires_at.is_none_or(|t| t > at_ms)
    }
}

/// One row change inside a commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommitOp {
    /// What happened to the row.
    pub change: Change,
    /// The full row after the change.
    pub row: Row,
}
avro_record!(CommitOp { change, row });

/// A committed intent (topic `kledger.outbox.v1`): the changelog of state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Commit {
    /// The account.
    pub account_id: String,
    /// Gapless per account, starting at 1.
    pub commit_seq: i64,
    /// Hex SHA-256 head hash before this commit (64 zeros for the first).
    pub prev_hash: String,
    /// Hex SHA-256(prev_hash bytes ‖ canonical bytes of this commit with `head_hash` empty).
    pub head_hash: String,
    /// The committed action.
    pub action_id: String,
    /// Hex SHA-256 of the intent's payload (idempotency digest).
    pub intent_digest: String,
    /// The intent's Kafka record timestamp (ms).
    pub recorded_at: i64,
    /// The intent's partition.
    pub intent_partition: i32,
    /// The intent's offset.
    pub intent_offset: i64,
    /// Account generation after the commit.
    pub generation: i64,
    /// Whether the intent was planned against an older head and rebased.
    pub rebased: bool,
    /// Row changes, in op order.
    pub ops: Vec<CommitOp>,
    /// More commits of this action follow: a purge too large for one record is split into
    /// bounded commits, and only the last one (`continues = false`) records the action as
    /// committed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub continues: bool,
}
avro_record!(Commit {
    account_id,
    commit_seq,
    prev_hash,
    head_hash,
    action_id,
    intent_digest,
    recorded_at,
    intent_partition,
    intent_offset,
    generation,
    rebased,
    ops,
    continues
});
