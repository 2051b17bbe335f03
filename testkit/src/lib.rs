//! kledger's test kit.
//!
//! Layout:
//! - [`model`]: a deliberately simple reference model of the ledger.
//! - [`generate`]: seeded generators of realistic intent streams.
//! - [`invalid`]: a catalogue of invalid intents, one mutation per validation code.
//! - [`build`]: builders for intents and ops.

pub mod build;
pub mod generate;
pub mod invalid;
pub mod model;

pub use generate::{GenConfig, Generator};
pub use model::{Model, ModelResult};
