//! What every part of a running kledger shares, built once by the composition root
//! (`kledger_topology::app`) and cloned into each part: the configuration, the record codec, the
//! status `/readyz` reports, the shutdown signal, the checked partition count, and the
//! embedders the process has loaded.
//!
//! May not touch: anything it holds beyond handing it out.

use std::sync::Arc;

use kledger_kafka::codec::Codec;
use kledger_runtime::config::Config;
use kledger_runtime::shutdown::Shutdown;
use kledger_runtime::status::Status;

/// The shared context of one process's parts (cheap to clone).
#[derive(Debug, Clone)]
pub struct AppContext {
    /// The configuration.
    pub config: Arc<Config>,
    /// How records are framed and read (single-object, or a schema registry's ids).
    pub codec: Arc<Codec>,
    /// What `/readyz` reports.
    pub status: Arc<Status>,
    /// The process's shutdown signal.
    pub shutdown: Shutdown,
    /// The partition count of the topics, as checked at start.
    pub partitions: i32,
    /// The embedders this process has loaded (one per configuration, shared by its parts).
    pub embedders: Arc<kledger_vectors::Embedders>,
}
