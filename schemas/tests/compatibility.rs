//! Schema evolution: each current schema reads every released version's data, and data written
//! with an older writer schema is resolved into the current record.

mod common;

use apache_avro::schema_compatibility::SchemaCompatibility;
use apache_avro::types::Value;
use apache_avro::{Schema, from_avro_datum, to_avro_datum};
use kledger_schemas::avro::{AvroCodec, KnownSchemas, Record, decode, fingerprint, schema};
use kledger_schemas::*;
use proptest::prelude::*;

fn released(name: &str) -> Vec<Schema> {
    kledger_schemas::released::ALL
        .iter()
        .map(|t| Schema::parse_str(t).unwrap())
        .filter(|s| s.name().map(|n| n.name.as_str()) == Some(name))
        .collect()
}

/// The top-level field names of a record schema.
fn field_names(s: &Schema) -> Vec<String> {
    match s {
        Schema::Record(r) => r.fields.iter().map(|f| f.name.clone()).collect(),
        _ => Vec::new(),
    }
}

/// `value` as a writer with `writer` could have written it: fields the writer lacks (added
/// later, with defaults) take their defaults.
fn as_written_by<T: Record + serde::Serialize + serde::de::DeserializeOwned>(
    value: &T,
    writer: &Schema,
) -> T {
    let names = field_names(writer);
    let mut json = serde_json::to_value(value).unwrap();
    json.as_object_mut()
        .unwrap()
        .retain(|k, _| names.contains(k));
    if lacks_sealed_rows::<T>(writer) {
        for op in json["ops"].as_array_mut().into_iter().flatten() {
            op["row"].as_object_mut().unwrap().remove("sealed");
        }
    }
    serde_json::from_value(json).unwrap()
}

/// Whether `writer` is a commit schema from before rows were sealed (v1, v2): its rows have
/// no `sealed` field (nested, so the top-level field filter does not see it).
fn lacks_sealed_rows<T: Record>(writer: &Schema) -> bool {
    T::NAME == "Commit" && !field_names(writer).iter().any(|n| n == "keyed")
}

/// Writes `value` with `writer` (through apache-avro) in single-object framing; fields the
/// writer lacks are left out.
fn written_with<T: Record>(value: &T, writer: &Schema) -> Vec<u8> {
    let mut body = Vec::new();
    value.encode(&mut body);
    let mut v = from_avro_datum(schema::<T>(), &mut body.as_slice(), None).unwrap();
    if let Value::Record(fields) = &mut v {
        let names = field_names(writer);
        fields.retain(|(n, _)| names.contains(n));
        let lacks_sealed = lacks_sealed_rows::<T>(writer);
        let lacks_record = T::NAME == "Commit" && !writer.canonical_form().contains("SourceRecord");
        if lacks_sealed || lacks_record {
            for (n, ops) in fields.iter_mut() {
                let (true, Value::Array(ops)) = (n == "ops", ops) else {
                    continue;
                };
                for op in ops {
                    if let Value::Record(op) = op {
                        for (n, row) in op.iter_mut() {
                            if let (true, Value::Record(row)) = (n == "row", row) {
                                row.retain(|(n, _)| {
                                    !(lacks_sealed && n == "sealed"
                                        || lacks_record && n == "record")
                                });
                            }
                        }
                    }
                }
            }
        }
    }
    let mut out = vec![0xC3, 0x01];
    out.extend_from_slice(&fingerprint(writer).to_le_bytes());
    out.extend_from_slice(&to_avro_datum(writer, v).unwrap());
    out
}

fn reads_every_release<
    T: Record + PartialEq + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned,
>(
    value: &T,
) {
    let versions = released(T::NAME);
    assert!(!versions.is_empty(), "no released {}", T::NAME);
    for old in versions {
        SchemaCompatibility::can_read(&old, schema::<T>()).expect("current reads released");
        let bytes = written_with(value, &old);
        let got = decode::<T>(&bytes, &KnownSchemas::released()).unwrap();
        let value = &as_written_by(value, &old);
        if &got != value {
            let (a, b) = (
                serde_json::to_string(&got).unwrap(),
                serde_json::to_string(value).unwrap(),
            );
            let at = a
                .chars()
                .zip(b.chars())
                .position(|(x, y)| x != y)
                .unwrap_or(0);
            let a: String = a.chars().skip(at.saturating_sub(80)).take(160).collect();
            let b: String = b.chars().skip(at.saturating_sub(80)).take(160).collect();
            panic!("differs:\n got {a}\nwant {b}");
        }
    }
}

/// `value` as the releases before source documents (intent v1, commit v3) can hold it: no
/// `source` op, no source kind, no `source_sync`, no row `record`.
fn before_sources<T: serde::Serialize + serde::de::DeserializeOwned>(value: &T) -> T {
    fn walk(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::Object(m) => {
                m.remove("record");
                if let Some(k) = m.get_mut("kind")
                    && k.as_str()
                        .and_then(Kind::parse)
                        .is_some_and(|k| !matches!(k, Kind::Fact | Kind::Document | Kind::Trigger))
                {
                    *k = "fact".into();
                }
                if let Some(w) = m.get_mut("write_reason")
                    && w == "source_sync"
                {
                    *w = "onboarding".into();
                }
                m.values_mut().for_each(walk);
            }
            serde_json::Value::Array(a) => {
                a.retain(|e| e.get("op").is_none_or(|op| op != "source"));
                a.iter_mut().for_each(walk);
            }
            _ => {}
        }
    }
    let mut json = serde_json::to_value(value).unwrap();
    walk(&mut json);
    serde_json::from_value(json).unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    #[test]
    fn current_reads_released_intents(v in common::intent()) { reads_every_release(&before_sources(&v)) }

    #[test]
    fn current_reads_released_commits(v in common::commit()) { reads_every_release(&before_sources(&v)) }

    #[test]
    fn current_reads_released_receipts(v in common::receipt()) { reads_every_release(&v) }

    #[test]
    fn current_reads_released_views(v in common::view()) { reads_every_release(&v) }

    #[test]
    fn current_reads_released_source_topic_records(doc in common::source_doc(), acl in common::acl()) {
        let (account_id, version, visibility) = ("t_a/user/u_1".to_owned(), Some("7".to_owned()), Visibility::Private);
        match doc {
            SourceDoc::Person(doc) => reads_every_release(&PersonSource { account_id, version, visibility, acl, doc }),
            SourceDoc::Conversation(doc) => reads_every_release(&ConversationSource { account_id, version, visibility, acl, doc }),
            SourceDoc::Calendar(doc) => reads_every_release(&CalendarSource { account_id, version, visibility, acl, doc }),
            SourceDoc::Screen(doc) => reads_every_release(&ScreenSource { account_id, version, visibility, acl, doc }),
            SourceDoc::Episode(doc) => reads_every_release(&EpisodeSource { account_id, version, visibility, acl, doc }),
        }
    }
}

/// An older writer without `planned_against.policy` (which has a default): its data resolves
/// through apache-avro into the current `Intent`, with the default filled in.
#[test]
fn older_writer_is_resolved_with_defaults() {
    let mut json: serde_json::Value = serde_json::from_str(Intent::SCHEMA_JSON).unwrap();
    let fields = json["fields"].as_array_mut().unwrap();
    let pa = fields
        .iter_mut()
        .find(|f| f["name"] == "planned_against")
        .unwrap();
    let pa_fields = pa["type"]["fields"].as_array_mut().unwrap();
    let policy = pa_fields
        .iter()
        .position(|f| f["name"] == "policy")
        .unwrap();
    // HeadPolicy is defined inside `policy`; keep the enum defined by moving nothing else.
    pa_fields.remove(policy);
    let older = Schema::parse_str(&json.to_string()).unwrap();
    assert_ne!(fingerprint(&older), Intent::current().fingerprint);
    let mut intent: Intent =
        serde_json::from_str(include_str!("../../examples/intent.json")).unwrap();
    intent.planned_against.policy = HeadPolicy::Rebase;
    // Write with the older schema: our value without the field it lacks.
    let mut body = Vec::new();
    intent.encode(&mut body);
    let mut v = from_avro_datum(schema::<Intent>(), &mut body.as_slice(), None).unwrap();
    if let Value::Record(fields) = &mut v {
        for (name, f) in fields.iter_mut() {
            if let (true, Value::Record(pa)) = (name == "planned_against", f) {
                pa.retain(|(n, _)| n != "policy");
            }
        }
    }
    let mut bytes = vec![0xC3, 0x01];
    bytes.extend_from_slice(&fingerprint(&older).to_le_bytes());
    bytes.extend_from_slice(&to_avro_datum(&older, v).unwrap());
    let mut known = KnownSchemas::default();
    known.add(older, None);
    assert_eq!(decode::<Intent>(&bytes, &known).unwrap(), intent);
}
