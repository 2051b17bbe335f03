//! Sinks of the outbox: projections kept by their own consumer groups.
//!
//! - [`views`]: the view materializer (view store + the views topic).

pub mod views;
