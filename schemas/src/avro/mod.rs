//! Avro codecs: the binary form of every record, its wire framing and schema resolution.
//!
//! - `binary`: zig-zag varints, strings, arrays, maps, unions; the [`AvroCodec`] trait.
//! - [`wire`]: single-object encoding (written) and Confluent wire format (read; written when a
//!   registry id is known), with writer schemas resolved through [`SchemaLookup`].
//! - [`json`]: converts an apache-avro `Value` into the records' JSON form (used to read data
//!   written with an older schema version, and by the conformance tests).

mod binary;
pub mod json;
pub mod wire;

/// The parsed Avro schema type writer schemas are resolved to.
pub use apache_avro::Schema;

pub use binary::{AvroCodec, Reader, long_len, write_bytes, write_long};
pub use wire::{
    CONFLUENT_MAGIC, KnownSchemas, NoRegistry, Record, SINGLE_OBJECT_HEADER, SchemaLookup, decode,
    encode_confluent, encode_single_object, fingerprint, frame_single_object, schema,
    single_object_header,
};

/// Why bytes could not be decoded into a record. Each variant has a stable dead-letter code.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The bytes end inside a value.
    #[error("record truncated")]
    Truncated,
    /// A varint is longer than 10 bytes or overflows.
    #[error("malformed varint")]
    BadVarint,
    /// A negative or oversized length.
    #[error("malformed length")]
    BadLength,
    /// A string is not UTF-8.
    #[error("string is not valid utf-8")]
    InvalidUtf8,
    /// An enum index outside the symbols.
    #[error("enum index {0} out of range")]
    BadEnum(i64),
    /// A union index outside the branches.
    #[error("union index {0} out of range")]
    BadUnion(i64),
    /// A boolean byte other than 0 or 1.
    #[error("malformed boolean")]
    BadBool,
    /// A map with a repeated key.
    #[error("map has a duplicate key")]
    DuplicateMapKey,
    /// Bytes left after the record.
    #[error("{0} trailing bytes after the record")]
    TrailingBytes(usize),
    /// Neither single-object (C3 01) nor Confluent (00) framing.
    #[error("unknown framing (magic bytes)")]
    BadMagic,
    /// A fingerprint or schema id no schema is known for.
    #[error("unknown writer schema {0}")]
    UnknownSchema(String),
    /// The writer schema cannot be read as this record (incompatible or another record).
    #[error("writer schema does not resolve to this record: {0}")]
    SchemaMismatch(String),
    /// The record exceeds the size limit.
    #[error("record of {0} bytes exceeds the limit")]
    Oversize(usize),
    /// An empty payload (a Kafka tombstone).
    #[error("empty or null record")]
    Empty,
}

impl DecodeError {
    /// The stable code (dead-letter header `kledger.error.code`).
    pub fn code(&self) -> &'static str {
        match self {
            DecodeError::Truncated => "truncated",
            DecodeError::BadVarint => "bad_varint",
            DecodeError::BadLength => "bad_length",
            DecodeError::InvalidUtf8 => "invalid_utf8",
            DecodeError::BadEnum(_) => "bad_enum",
            DecodeError::BadUnion(_) => "bad_union",
            DecodeError::BadBool => "bad_bool",
            DecodeError::DuplicateMapKey => "duplicate_map_key",
            DecodeError::TrailingBytes(_) => "trailing_bytes",
            DecodeError::BadMagic => "bad_magic",
            DecodeError::UnknownSchema(_) => "unknown_schema",
            DecodeError::SchemaMismatch(_) => "schema_mismatch",
            DecodeError::Oversize(_) => "oversize",
            DecodeError::Empty => "null_value",
        }
    }
}
