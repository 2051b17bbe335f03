//! `Receipt` (topic `kledger.receipts.v1`) and `View` (topic `kledger.views.v1`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::common::*;
use crate::avro_record;

/// The outcome of one intent record. At least one per intent record; a repeat after a crash
/// says `duplicate` with the same `commit_seq`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Receipt {
    /// The intent's action.
    pub action_id: String,
    /// The intent's account (as given, for rejected intents).
    pub account_id: String,
    /// committed | duplicate | replan | rejected.
    pub outcome: Outcome,
    /// The commit (committed and duplicate).
    pub commit_seq: Option<i64>,
    /// Whether the commit was rebased over a newer head.
    pub rebased: bool,
    /// The account head when decided.
    pub head_seq: i64,
    /// The account head hash when decided.
    pub head_hash: String,
    /// Stable reason code (replan and rejected), e.g. `stale_target`, `content_too_long`.
    pub code: Option<String>,
    /// Human-readable detail.
    pub message: Option<String>,
    /// Targets that changed since planning, with their current state.
    pub stale_targets: Vec<StaleTarget>,
    /// Rows created by the commit.
    pub memory_ids: Vec<String>,
    /// The intent's partition.
    pub intent_partition: i32,
    /// The intent's offset.
    pub intent_offset: i64,
    /// The intent's record timestamp (ms).
    pub recorded_at: i64,
}
avro_record!(Receipt {
    action_id,
    account_id,
    outcome,
    commit_seq,
    rebased,
    head_seq,
    head_hash,
    code,
    message,
    stale_targets,
    memory_ids,
    intent_partition,
    intent_offset,
    recorded_at
});

/// A target as the extractor planned it and as it is now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StaleTarget {
    /// The row.
    pub memory_id: String,
    /// Its current revision (none if it does not exist).
    pub revision: Option<i64>,
    /// Its current content hash.
    pub content_hash: Option<String>,
    /// Its current status.
    pub status: Option<Status>,
}
avro_record!(StaleTarget {
    memory_id,
    revision,
    content_hash,
    status
});

/// The rendered current view of an account (compacted topic `kledger.views.v1`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct View {
    /// The account.
    pub account_id: String,
    /// Account generation.
    pub generation: i64,
    /// The last commit folded into the view.
    pub commit_seq: i64,
    /// The time the view was rendered for (ms): the last commit's record time.
    pub as_of: i64,
    /// The profile prompt block (≤2,400 chars of whole lines).
    pub profile: String,
    /// The playbook index (≤800 chars of `memory_id: description` lines).
    pub playbook_index: String,
    /// Active triggers.
    pub watchlist: Vec<WatchItem>,
    /// Active facts.
    pub active_facts: i64,
    /// Active documents.
    pub active_documents: i64,
    /// Active triggers.
    pub active_triggers: i64,
    /// Whether triggers were left out of `watchlist` to keep the view within the record
    /// budget (the counts above still count them).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub watchlist_truncated: bool,
}
avro_record!(View {
    account_id,
    generation,
    commit_seq,
    as_of,
    profile,
    playbook_index,
    watchlist,
    active_facts,
    active_documents,
    active_triggers,
    watchlist_truncated
});

/// A standing trigger compiled into the watchlist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WatchItem {
    /// The trigger row.
    pub memory_id: String,
    /// Its description.
    pub content: String,
    /// Its condition.
    pub condition: BTreeMap<String, String>,
    /// Effective from (ms).
    pub valid_from: i64,
    /// Effective to (ms).
    pub valid_to: Option<i64>,
    /// Expiry (ms).
    pub expires_at: Option<i64>,
}
avro_record!(WatchItem {
    memory_id,
    content,
    condition,
    valid_from,
    valid_to,
    expires_at
});
