//! kledger's state: the fold of the outbox, kept in RocksDB (or its in-memory twin).
//!
//! Layout:
//! - [`keys`]: column families, key layout (partition, then account) and value encodings.
//! - [`store`]: the [`StateStore`] trait, [`WriteSet`], the batch [`Overlay`], the digest.
//! - [`memory`] / [`rocks`]: the two stores; `tests/conformance.rs` runs both through one suite.
//! - [`fold`](mod@fold): how a commit changes state (no-op on replays, error on forks and gaps), and
//!   restore of one outbox record.
//! - [`apply`]: loading what `decide` needs and the batch [`Applier`].
//! - [`marks`]: progress of a sink whose target is outside RocksDB ([`MarkStore`]).
//! - [`keycache`]: a projection's copy of the data keys, beside its own data ([`KeyCache`]).
//! - [`progress`]: read progress, one convention (the next offset) and one rule (never
//!   backwards) for every store ([`Checkpoint`]).
//! - [`rocks`]: also the one RocksDB-open helper and its options block ([`rocks::open_db`]).
//! - [`views`]: the read side's fold of the outbox ([`ViewStore`]): rows, history, timelines.

pub mod apply;
pub mod erasure;
pub mod fold;
pub mod keycache;
pub mod keys;
pub mod marks;
pub mod memory;
pub mod progress;
pub mod rocks;
pub mod store;
pub mod views;

pub use apply::{
    Applier, KeySource, RandomKeys, data_key, load, local_ledger_secret, random_bytes,
};
pub use fold::{Folded, fold, next_offset, raise_next, restore_key_record, restore_record};
pub use keycache::{KeyCache, KeyRecord, KeyState};
pub use keys::Cf;
pub use marks::MarkStore;
pub use memory::MemoryStore;
pub use progress::{Backwards, Checkpoint};
pub use rocks::{Erasures, RocksConfig, RocksSizes, RocksStore};
pub use store::{
    Layered, Overlay, StateRead, StateStore, WriteSet, digest, digest_keys, ledger_digest,
};
pub use views::{ALL_PEOPLE, AccountMark, Lane, PurgeMark, SOURCE_ORDER, ViewBatch, ViewStore};

/// State errors, by who must act.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// RocksDB failed (external: retry or stop).
    #[error("rocksdb: {0}")]
    Rocks(#[from] rocksdb::Error),
    /// Stored bytes do not decode (internal: stop loudly).
    #[error("corrupt state: {0}")]
    Corrupt(String),
    /// The outbox and the state disagree on an account's history (internal: stop loudly).
    #[error("fork in account {account} at commit {seq}: state has {have}, outbox has {got}")]
    Fork {
        /// The account.
        account: String,
        /// The commit_seq.
        seq: i64,
        /// What the state has.
        have: String,
        /// What the outbox has.
        got: String,
    },
    /// A commit skips ahead of the head (internal: stop loudly).
    #[error("gap in account {account}: head is {head}, next commit is {seq}")]
    Gap {
        /// The account.
        account: String,
        /// The head seq.
        head: i64,
        /// The commit's seq.
        seq: i64,
    },
    /// A row's data key is destroyed (its purge outranks its history): the row's content can
    /// no longer be read (replay adopts the outbox's commit; anywhere else, internal).
    #[error("{account}: the data key of row {memory_id} is destroyed")]
    Shredded {
        /// The account.
        account: String,
        /// The row.
        memory_id: String,
    },
    /// A store's read progress would go backwards (internal: stop loudly).
    #[error("{0}")]
    Backwards(#[from] Backwards),
}
