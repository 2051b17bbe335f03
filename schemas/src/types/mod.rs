//! The Rust record types. Each derives its JSON form (serde) and implements its Avro binary
//! form field by field in `.avsc` order.

mod common;
pub mod episodic;
mod intent;
mod ledger;
mod receipt;

pub use common::*;
pub use intent::*;
pub use ledger::*;
pub use receipt::*;
