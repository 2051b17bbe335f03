//! Sinks of the outbox: projections kept by their own consumer groups, and rebuilt by
//! `kledger rebuild` with the same code.
//!
//! - [`projection`]: the projection trait and its one driver, live and to the end.
//! - [`reader`]: reading the outbox for a live sink (group, dead letters, readiness, lag).
//! - [`views`]: the view materializer (view store + the views topic).
//! - [`vectors`]: the vector projection (Qdrant, embedded engine or server).

pub mod projection;
pub mod reader;
pub mod vectors;
pub mod views;

pub use projection::{Drove, OutboxCommit, Outputs, Projection, Ramp, drive_live, drive_to_end};
