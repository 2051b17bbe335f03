//! The Rust record types. Each derives its JSON form (serde) and implements its Avro binary
//! form field by field in `.avsc` order.

mod common;
pub mod episodic;
mod intent;
mod ledger;
mod receipt;
mod sources;

pub use common::*;
pub use intent::*;
pub use ledger::*;
pub use receipt::*;
pub use sources::*;

// The top-level records and their schema files.
crate::avro::wire::record!(Intent, "intent.avsc");
crate::avro::wire::record!(Commit, "commit.avsc");
crate::avro::wire::record!(Receipt, "receipt.avsc");
crate::avro::wire::record!(View, "view.avsc");
