//! kledger's runtime: topics, the Kafka processor, configuration, the HTTP endpoints and the
//! `kledger` binary's commands.
//!
//! Layout:
//! - [`config`]: TOML configuration with `KLEDGER_*` overrides.
//! - [`kafka`]: the Kafka layer (the one partition reader).
//! - [`generations`]: projection generations (rebuilds swapped in atomically).
//! - [`embedded`]: the in-process Kafka-protocol broker (tansu), the embedded default.
//! - [`topics`]: topic names, creation, the co-partitioning check.
//! - [`offline`]: `kledger apply`, the offline mode over JSON lines.
//! - [`runtime`]: the stream processor (`kledger run`).
//! - [`sinks`]: projections of the outbox (the view materializer).
//! - [`api`]: the owner-scoped read API.
//! - [`vector`]: vector indexes (Qdrant in-process or a server) and embedders.
//! - [`publish`]: `kledger publish`; [`migrate`]: `kledger migrate plan|apply`;
//!   [`legacy_vectors`]: `kledger migrate vectors`.
//! - [`replay`]: `kledger replay verify`; [`rebuild`]: `kledger rebuild views|qdrant`;
//!   [`stateops`]: `kledger state restore`.
//! - [`registry`]: the record codec (single-object, or Confluent framing with a schema registry).
//! - [`metrics`]: metric names and the Prometheus recorder; [`http`]: its endpoints.
//! - [`lines`]: bounded reading of JSON-lines input; [`logs`]: the log subscriber, and the
//!   scrubbing of secrets from every line written.

pub mod api;
pub mod app;
pub mod cli;
pub mod config;
pub mod context;
pub mod embedded;
pub mod generations;
pub mod http;
pub mod kafka;
pub mod legacy_vectors;
pub mod lines;
pub mod logs;
pub mod memory;
pub mod metrics;
pub mod migrate;
pub mod offline;
pub mod progress;
pub mod publish;
pub mod rebuild;
pub mod registry;
pub mod replay;
pub mod runtime;
pub mod shutdown;
pub mod sinks;
pub mod stateops;
pub mod topics;
pub mod vector;
