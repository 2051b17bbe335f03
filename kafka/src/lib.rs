//! The Kafka layer: how kledger reads and writes partitions, with nothing about ledgers in it.
//!
//! - [`reader`]: the one partition reader (group mode for the processor and the sinks;
//!   to-the-end mode for restore, replay, rebuild and migrate), records in order per partition.
//! - [`clients`]: librdkafka configurations and contexts (rebalance events, deliveries, lag).
//! - [`coverage`]: whether a consumer group owns every partition; the rejoin that heals it.
//! - [`topics`]: topic names, creation, the co-partitioning check.
//! - [`embedded`]: the in-process Kafka-protocol broker (tansu), the embedded default.
//! - [`codec`]: the record codec (single-object, or Confluent framing with a schema registry).
//! - [`preflight`]: whether a client logs in to the cluster, one clear line when not.
//!
//! May not touch: state, decisions, projections, HTTP.

pub mod clients;
pub mod codec;
pub mod coverage;
pub mod embedded;
pub mod preflight;
pub mod reader;
pub mod topics;
