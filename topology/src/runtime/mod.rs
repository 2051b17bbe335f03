//! The stream processor: the apply loop and the Kafka plumbing it and the sinks share.
//!
//! - [`clients`]: librdkafka configurations and contexts (rebalance events, deliveries).
//! - [`coverage`]: whether a consumer group owns every partition; the rejoin that heals it.
//! - [`batch`]: classifying and deciding one batch of input records.
//! - [`delivery`]: sending a decided batch and awaiting its delivery reports.
//! - [`processor`]: the processor loop (its own OS thread).
//! - [`restore`]: folding outbox partitions into state.
//! - [`status`]: readiness and liveness of the processor.

pub mod batch;
pub mod clients;
pub mod coverage;
pub mod delivery;
pub mod processor;
pub mod restore;
pub mod status;
