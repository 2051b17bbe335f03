//! kledger's runtime: topics, the Kafka processor, configuration, the HTTP API and the
//! `kledger` binary's commands.
//!
//! Layout:
//! - [`offline`]: `kledger apply`, the offline mode over JSON lines.

pub mod offline;
