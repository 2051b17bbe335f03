//! kledger's runtime: the Kafka layer, the processor and the projections, the HTTP API, the
//! composition of a process and the `kledger` command line.
//!
//! Layers, each using only those before it:
//! 1. [`kafka`]: how partitions are read and written (the one partition reader, clients,
//!    topics, the embedded broker, the record codec); [`vector`]: the vector indexes and
//!    embedders. Nothing about ledgers.
//! 2. [`pipeline`]: what kledger does with records: the processor and restore, the projections
//!    and their driver, replay, rebuild, publish, migrate, the offline mode.
//! 3. [`serve`]: HTTP: the listener, metrics and health, the read API and the ingress.
//! 4. [`app`]: the composition root: which parts a process runs, and how they are wired.
//! 5. [`cli`]: one file per command; the binary's `main` only calls it.
//!
//! Shared by every layer: [`config`] (TOML with `KLEDGER_*` overrides), `context` (what
//! every part of a process shares), [`shutdown`], [`status`] (what `/readyz` reports),
//! [`generations`] (projection generations swapped in atomically), [`metrics`], `logs`
//! (the log subscriber and the scrubbing of secrets), `lines` (bounded JSON-lines input),
//! `progress` (progress bars), [`memory`] (transparent huge pages off).

pub mod app;
pub mod backoff;
pub mod cli;
pub mod config;
pub(crate) mod context;
pub mod generations;
pub mod kafka;
pub(crate) mod lines;
pub(crate) mod logs;
pub mod memory;
pub mod metrics;
pub mod pipeline;
pub(crate) mod progress;
pub mod serve;
pub mod shutdown;
pub mod status;
pub mod vector;
