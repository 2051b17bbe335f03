//! Sinks of the outbox: projections kept by their own consumer groups.
//!
//! - [`reader`]: reading the outbox for a sink (positions, order, batches, dead letters).
//! - [`views`]: the view materializer (view store + the views topic).
//! - [`vectors`]: the vector projection (Qdrant, embedded engine or server).

pub mod reader;
pub mod vectors;
pub mod views;
