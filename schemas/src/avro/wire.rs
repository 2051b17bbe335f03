//! Wire framing: Avro single-object encoding (`C3 01` + 8-byte little-endian Rabin fingerprint)
//! and the Confluent wire format (`00` + 4-byte big-endian schema id).
//!
//! Writing uses single-object encoding unless a registry id is given. Reading accepts both:
//! data written with the current schema takes the fast hand-written path; data written with an
//! older (known) schema is read with that schema and mapped into the current record through
//! the records' JSON form.

use std::collections::BTreeMap;
use std::sync::Arc;

use apache_avro::Schema;
use apache_avro::rabin::Rabin;
use apache_avro::schema_compatibility::SchemaCompatibility;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{AvroCodec, DecodeError, Reader};
use crate::limits::RECORD_BYTES_CEILING;

/// Single-object encoding magic.
pub const SINGLE_OBJECT_MAGIC: [u8; 2] = [0xC3, 0x01];
/// The length of the single-object header: magic (2) and fingerprint (8).
pub const SINGLE_OBJECT_HEADER: usize = 10;
/// Confluent wire format magic.
pub const CONFLUENT_MAGIC: u8 = 0x00;

/// A top-level record with a schema file.
pub trait Record: AvroCodec + Serialize + DeserializeOwned {
    /// The record's name, e.g. `Intent`.
    const NAME: &'static str;
    /// The `.avsc` text of the current version.
    const SCHEMA_JSON: &'static str;
    /// The parsed current schema and its fingerprint (parsed once).
    fn current() -> &'static CurrentSchema;
}

/// A parsed schema with its Rabin fingerprint.
#[derive(Debug)]
pub struct CurrentSchema {
    /// The schema.
    pub schema: Schema,
    /// CRC-64-AVRO of the parsing canonical form.
    pub fingerprint: u64,
}

impl CurrentSchema {
    pub(crate) fn parse(name: &str, text: &str) -> Self {
        // The schema files are compiled in and covered by tests: a parse failure is a build
        // defect, not an input error.
        let schema = Schema::parse_str(text)
            .unwrap_or_else(|e| panic!("embedded schema {name} does not parse: {e}"));
        let fingerprint = fingerprint(&schema);
        Self {
            schema,
            fingerprint,
        }
    }
}

/// CRC-64-AVRO (Rabin) fingerprint of a schema's parsing canonical form.
pub fn fingerprint(schema: &Schema) -> u64 {
    let bytes = schema.fingerprint::<Rabin>().bytes;
    let mut a = [0u8; 8];
    a.copy_from_slice(&bytes[..8]);
    u64::from_le_bytes(a)
}

/// Implements [`Record`] for a type with the `.avsc` file of `schemas/avro/` it is written
/// with (the types invoke it: this module knows no record type).
macro_rules! record {
    ($ty:ident, $file:literal) => {
        impl $crate::avro::wire::Record for $ty {
            const NAME: &'static str = stringify!($ty);
            const SCHEMA_JSON: &'static str = include_str!(concat!("../../avro/", $file));
            fn current() -> &'static $crate::avro::wire::CurrentSchema {
                static CELL: std::sync::OnceLock<$crate::avro::wire::CurrentSchema> =
                    std::sync::OnceLock::new();
                CELL.get_or_init(|| {
                    $crate::avro::wire::CurrentSchema::parse(Self::NAME, Self::SCHEMA_JSON)
                })
            }
        }
    };
}
pub(crate) use record;

/// The current schema of a record.
pub fn schema<T: Record>() -> &'static Schema {
    &T::current().schema
}

/// Resolves writer schemas named on the wire.
pub trait SchemaLookup: Send + Sync {
    /// A schema registered under a Confluent schema id.
    fn by_id(&self, id: u32) -> Option<Arc<Schema>>;
    /// A schema with this Rabin fingerprint.
    fn by_fingerprint(&self, fingerprint: u64) -> Option<Arc<Schema>>;
}

/// No registry and no older versions: only data written with the current schemas decodes.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoRegistry;

impl SchemaLookup for NoRegistry {
    fn by_id(&self, _id: u32) -> Option<Arc<Schema>> {
        None
    }
    fn by_fingerprint(&self, _fingerprint: u64) -> Option<Arc<Schema>> {
        None
    }
}

/// An in-memory set of writer schemas: released versions by fingerprint, and registry ids.
#[derive(Debug, Clone, Default)]
pub struct KnownSchemas {
    by_fingerprint: BTreeMap<u64, Arc<Schema>>,
    by_id: BTreeMap<u32, Arc<Schema>>,
}

impl KnownSchemas {
    /// Every released version of every record (`schemas/avro/released/`).
    pub fn released() -> Self {
        let mut known = Self::default();
        for text in crate::released::ALL {
            // Released files are compiled in and tested.
            let schema = Schema::parse_str(text)
                .unwrap_or_else(|e| panic!("released schema does not parse: {e}"));
            known.add(schema, None);
        }
        known
    }

    /// Adds a schema, optionally under a registry id.
    pub fn add(&mut self, schema: Schema, id: Option<u32>) {
        let schema = Arc::new(schema);
        self.by_fingerprint
            .insert(fingerprint(&schema), schema.clone());
        if let Some(id) = id {
            self.by_id.insert(id, schema);
        }
    }
}

impl SchemaLookup for KnownSchemas {
    fn by_id(&self, id: u32) -> Option<Arc<Schema>> {
        self.by_id.get(&id).cloned()
    }
    fn by_fingerprint(&self, fingerprint: u64) -> Option<Arc<Schema>> {
        self.by_fingerprint.get(&fingerprint).cloned()
    }
}

/// The bytes of single-object encoding before `T`'s body: magic and schema fingerprint.
pub fn single_object_header<T: Record>() -> [u8; SINGLE_OBJECT_HEADER] {
    let mut h = [0u8; SINGLE_OBJECT_HEADER];
    h[..2].copy_from_slice(&SINGLE_OBJECT_MAGIC);
    h[2..].copy_from_slice(&T::current().fingerprint.to_le_bytes());
    h
}

/// Encodes `value` with single-object encoding.
pub fn encode_single_object<T: Record>(value: &T) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.extend_from_slice(&single_object_header::<T>());
    value.encode(&mut out);
    out
}

/// Frames an already-encoded body with single-object encoding.
pub fn frame_single_object<T: Record>(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + SINGLE_OBJECT_HEADER);
    out.extend_from_slice(&single_object_header::<T>());
    out.extend_from_slice(body);
    out
}

/// Encodes `value` in the Confluent wire format under `schema_id`.
pub fn encode_confluent<T: Record>(value: &T, schema_id: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    out.push(CONFLUENT_MAGIC);
    out.extend_from_slice(&schema_id.to_be_bytes());
    value.encode(&mut out);
    out
}

/// Decodes a framed record (either framing), consuming every byte.
pub fn decode<T: Record>(bytes: &[u8], lookup: &dyn SchemaLookup) -> Result<T, DecodeError> {
    if bytes.is_empty() {
        return Err(DecodeError::Empty);
    }
    if bytes.len() > RECORD_BYTES_CEILING {
        return Err(DecodeError::Oversize(bytes.len()));
    }
    let current = T::current();
    let (writer, body) = match bytes {
        [0xC3, 0x01, rest @ ..] if rest.len() >= 8 => {
            let (fp, body) = rest.split_at(8);
            let mut a = [0u8; 8];
            a.copy_from_slice(fp);
            let fp = u64::from_le_bytes(a);
            if fp == current.fingerprint {
                return decode_body(body);
            }
            let writer = lookup
                .by_fingerprint(fp)
                .ok_or_else(|| DecodeError::UnknownSchema(format!("fingerprint {fp:016x}")))?;
            (writer, body)
        }
        [CONFLUENT_MAGIC, a, b, c, d, body @ ..] => {
            let id = u32::from_be_bytes([*a, *b, *c, *d]);
            let writer = lookup
                .by_id(id)
                .ok_or_else(|| DecodeError::UnknownSchema(format!("schema id {id}")))?;
            if fingerprint(&writer) == current.fingerprint {
                return decode_body(body);
            }
            (writer, body)
        }
        _ => return Err(DecodeError::BadMagic),
    };
    decode_resolved::<T>(&writer, body)
}

/// Decodes an unframed body written with the current schema, consuming every byte.
pub fn decode_body<T: AvroCodec>(body: &[u8]) -> Result<T, DecodeError> {
    let mut r = Reader::new(body);
    let v = T::decode(&mut r)?;
    r.finish()?;
    Ok(v)
}

/// The slow path for data written with another (older) schema: checked for compatibility, read
/// with the writer schema, and mapped into the current record through its JSON form, where
/// fields the writer lacks take their defaults (the same defaults as the `.avsc`). Reading with
/// the writer's own shape avoids apache-avro's resolution of unions of records, which picks a
/// branch by structure and can confuse one op record for another.
fn decode_resolved<T: Record>(writer: &Schema, body: &[u8]) -> Result<T, DecodeError> {
    SchemaCompatibility::can_read(writer, schema::<T>())
        .map_err(|e| DecodeError::SchemaMismatch(e.to_string()))?;
    let mut cursor = body;
    // apache-avro is not ours: keep a panic in it from taking the processor down.
    let (value, left) = std::panic::catch_unwind(move || {
        let v = apache_avro::from_avro_datum(writer, &mut cursor, None);
        (v, cursor.len())
    })
    .map_err(|_| DecodeError::SchemaMismatch("avro decoding panicked".into()))?;
    let value = value.map_err(|e| DecodeError::SchemaMismatch(e.to_string()))?;
    if left != 0 {
        return Err(DecodeError::TrailingBytes(left));
    }
    let json = super::json::to_json(&value, writer)
        .map_err(|e| DecodeError::SchemaMismatch(e.to_string()))?;
    serde_json::from_value(json).map_err(|e| DecodeError::SchemaMismatch(e.to_string()))
}
