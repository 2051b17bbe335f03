//! kledger's test kit.
//!
//! Layout:
//! - [`model`]: a deliberately simple reference model of the ledger.
//! - [`generate`]: seeded generators of realistic intent streams.
//! - [`invalid`]: a catalogue of invalid intents, one mutation per validation code.
//! - [`build`]: builders for intents and ops.
//! - [`largest`]: the largest valid intent of each op kind (worst-case commit sizes).
//! - [`legacy`]: a seeded generator of legacy memory rows (migration input).
//! - [`ledger`]: the real decide + state path over the in-memory store, for tests.
//! - [`filter`]: an evaluator of Qdrant REST JSON filters, to check access filters.
//! - [`kafka`]: Kafka test tools (in-process broker, readers, expected outputs, children).
//! - [`badinput`]: the bad-input corpus (dead letters and rejected receipts, with codes).
//! - [`registry`]: a minimal in-process Confluent Schema Registry (REST subset) for tests.
//! - [`residue`]: scans of files for bytes that must be gone (erasure tests).
//! - [`retrieval`]: the retrieval-quality set and its evaluation (the retrieval bench).
//! - [`offline`]: the read API over stores built in the test's process.
//! - [`bitemporal`]: a simple model of reads at an effective and a record time.
//! - [`harness`]: the reliability harness (`cargo run -p kledger-testkit --bin harness`).

pub mod badinput;
pub mod bitemporal;
pub mod build;
pub mod filter;
pub mod generate;
pub mod harness;
pub mod invalid;
pub mod kafka;
pub mod largest;
pub mod ledger;
pub mod legacy;
pub mod model;
pub mod offline;
pub mod registry;
pub mod residue;
pub mod retrieval;

pub use generate::{GenConfig, Generator};
pub use ledger::Ledger;
pub use model::{Model, ModelResult, unsealed};
