//! The Kafka layer: how kledger reads and writes partitions, with nothing about ledgers in it.
//!
//! - [`reader`]: the one partition reader (group mode for the processor and the sinks;
//!   to-the-end mode for restore, replay, rebuild and migrate), records in order per partition.
//!
//! May not touch: state, decisions, projections, HTTP.

pub mod reader;
