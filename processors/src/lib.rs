//! kledger's pure rules. Nothing here sees RocksDB, Kafka or Qdrant: functions take values and
//! return values, so the stream processor, `kledger apply`, replay verification and the tests
//! all run the same code.
//!
//! Layout:
//! - [`decide`]: the apply decision (rules 1–6) → [`Decision`].
//! - [`account`]: the account state `decide` reads and the keys a runner loads for it.
//! - [`validate`]: rule 1, shape and limits.
//! - [`authority`]: the authority table (rule 5), in one place.
//! - [`slots`]: the slot registry and its aliases.
//! - [`ids`]: memory ids (ULID), content hashes, intent digests, the head hash chain.
//! - [`codes`]: stable reason codes.
//! - [`access`]: who may read a row (cm_payload_v1 visibility and sensitivity rules).
//! - [`payload`]: the vector projection's payload (cm_payload_v1), collection names, access filter.
//! - [`embed`]: the deterministic local feature-hashing embedder (dense + sparse).
//! - [`render`]: profile, playbook index and watchlist renderers.
//! - [`routing`]: the murmur2 partitioner.
//! - [`migrate`]: the legacy memory migration planner; [`legacy`]: cm_payload_v1's legacy
//!   collection mapping.

pub mod access;
pub mod account;
pub mod authority;
pub mod codes;
pub mod decide;
pub mod embed;
pub mod ids;
pub mod legacy;
pub mod migrate;
pub mod payload;
pub mod render;
pub mod routing;
pub mod slots;
pub mod validate;

pub use account::{AccountState, ActionEntry, Head, Needs, needs};
pub use codes::{Code, Reason};
pub use decide::{Decision, Limits, RecordMeta, decide, decide_owned};
pub use validate::Rules;
