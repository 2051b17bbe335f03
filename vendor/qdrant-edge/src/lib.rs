#![allow(unexpected_cfgs)]
#![allow(dead_code, unused_imports)]
// #![warn(unnameable_types)] // TODO: re-enable when cleaning up the API
pub use edge::*;

/// kledger patch (`KLEDGER-PATCH.md`): runs the fork's own checks of its patched internals
/// (the sparse walk against a from-scratch computation, the pending flag buffer against a map
/// model, the payload JSON writer against serde_json, freed payload blocks zeroed) and of its
/// shard-level switches (the
/// write-ahead log off, in-memory and deferred payload indexes, search without payloads,
/// searches sharing their filters' points,
/// through `EdgeShard`),
/// panicking on a difference. This crate's own test build does not compile as
/// published, so kledger's tests call this instead.
#[doc(hidden)]
pub fn kledger_patch_self_checks() {
    segment::common::flags::buffered_dynamic_flags::pending_flags_check::pending_flags_match_a_map_through_flush_cycles();
    segment::payload_storage::mmap_payload_storage::compact_json_check::compact_json_is_serde_jsons();
    sparse::index::posting_list::walk_check::early_stop_walk_is_exact();
    edge::kledger_checks::rewrites_apply_across_reopens_with_the_log_off();
    edge::kledger_checks::appendable_indexes_in_memory_and_on_disk();
    edge::kledger_checks::deferred_indexes_are_rebuilt_at_reopen();
    edge::kledger_checks::searches_without_payload_answer_as_with_it();
    edge::kledger_checks::searches_sharing_filtered_points_answer_as_alone();
    gridstore::kledger_gridstore_check::freed_values_are_zeroed();
}
mod bm25;
mod common;
mod edge;
mod gridstore;
mod posting_list;
mod quantization;
mod segment;
mod shard;
mod sparse;
mod wal;
