//! What kledger does with records: everything that reads or writes the topics for the ledger.
//!
//! - [`apply`]: the stream processor (the apply loop, batches, delivery, restore).
//! - [`keys`]: the keys topic (rules v4): the ledger's secret, data keys, opening commits.
//! - [`project`]: the projections of the outbox (views, vectors) and their one driver.
//! - [`replay`]: `kledger replay verify`; [`rebuild`]: `kledger rebuild`;
//!   [`repartition`]: `kledger repartition`; [`stateops`]: restoring a state directory.
//! - [`intake`]: the source topics into the intents topic;
//! - [`publish`]: intents (or source documents) from JSON lines to their topic; [`offline`]: `kledger apply`;
//!   [`replan`]: the demo's extractor, planning again what the processor sent back.
//! - [`migrate`]: legacy memory rows; [`legacy_vectors`]: legacy vector collections.
//!
//! Uses the Kafka layer ([`kledger_kafka`]) and the vector indexes ([`kledger_vectors`]); may not
//! touch HTTP or the composition of a process.

pub mod apply;
pub mod context;
pub mod intake;
pub mod keys;
pub mod legacy_vectors;
pub mod migrate;
pub mod offline;
pub mod project;
pub mod publish;
pub mod rebuild;
pub mod records;
pub mod repartition;
pub mod replan;
pub mod replay;
pub mod stateops;
