//! kledger's record contract: the ground floor every other crate stands on.
//!
//! Layout:
//! - [`types`]: `Intent`, `Commit` (with `Row`), `Receipt`, `View` and their nested records and
//!   enums; their JSON form is serde's, tagged `op` for operations.
//! - [`avro`]: the Avro binary form (hand-written, allocation-bounded, checked against
//!   apache-avro and the `.avsc` files in `schemas/avro/`), single-object and Confluent framing.
//! - [`limits`]: every size limit of the contract.
//! - [`released`]: released schema versions, for compatibility.
//!
//! No I/O happens here.

pub mod avro;
pub mod hex;
pub mod limits;
pub mod released;
pub mod types;

pub use avro::{DecodeError, Record};
pub use types::*;
