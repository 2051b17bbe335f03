//! The `kledger` binary's crate: the composition of a process and the command line, over the
//! crates below it (re-exported here under the module names the tests and benches use).
//!
//! Crates, each using only those before it:
//! 1. [`config`], [`status`], [`shutdown`], [`generations`], [`metrics`], [`backoff`],
//!    [`memory`] (crate `kledger-runtime`): what every part of a process shares.
//! 2. [`kafka`] (crate `kledger-kafka`): how partitions are read and written (the one client
//!    builder, the partition reader, topics, the embedded broker, the record codec); [`vector`]
//!    (crate `kledger-vectors`): the vector indexes and embedders. Nothing about ledgers.
//! 3. [`pipeline`] (crate `kledger-pipeline`): what kledger does with records: the processor and
//!    restore, the projections and their driver, replay, rebuild, publish, migrate, the offline
//!    mode, and the context every part of a process shares.
//! 4. [`serve`] (crate `kledger-serve`): HTTP: the listener, metrics and health, the read API,
//!    the ingress and MCP.
//!
//! In this crate: [`app`], the composition root (which parts a process runs, and how they are
//! wired), and [`cli`], one file per command; the binary's `main` only calls it.

pub mod app;
pub use kledger_runtime::backoff;
pub mod cli;
pub use kledger_kafka as kafka;
pub use kledger_pipeline as pipeline;
pub(crate) use kledger_pipeline::context;
pub use kledger_runtime::config;
pub use kledger_runtime::generations;
pub(crate) use kledger_runtime::logs;
pub use kledger_runtime::memory;
pub use kledger_runtime::metrics;
pub use kledger_runtime::shutdown;
pub use kledger_runtime::status;
pub use kledger_serve as serve;
pub use kledger_vectors as vector;
