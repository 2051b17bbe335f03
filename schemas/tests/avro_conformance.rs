//! The hand-written codec against the `.avsc` files and apache-avro, three ways: round trips
//! that consume every byte, apache-avro reading our bytes into the same JSON form (field for
//! field) and writing the same bytes, and malformed input that must fail without panicking.

mod common;

use std::fmt::Debug;

use apache_avro::{Schema, from_avro_datum, to_avro_datum};
use kledger_schemas::avro::json::to_json;
use kledger_schemas::avro::wire::decode_body;
use kledger_schemas::avro::{
    AvroCodec, DecodeError, KnownSchemas, NoRegistry, Record, decode, encode_confluent,
    encode_single_object, schema,
};
use kledger_schemas::*;
use proptest::prelude::*;

fn check<T: Record + PartialEq + Debug>(value: &T) {
    let mut body = Vec::new();
    value.encode(&mut body);
    // Round trip, consuming every byte.
    let back: T = decode_body(&body).expect("decodes");
    assert_eq!(&back, value);
    let framed = encode_single_object(value);
    assert_eq!(&decode::<T>(&framed, &NoRegistry).unwrap(), value);
    // apache-avro reads our bytes with the schema file, consuming every byte ...
    let schema = schema::<T>();
    let mut cursor = body.as_slice();
    let avro = from_avro_datum(schema, &mut cursor, None).expect("apache-avro reads our bytes");
    assert!(cursor.is_empty(), "apache-avro left {} bytes", cursor.len());
    // ... into the JSON form field for field (unknown or missing fields would fail) ...
    let json = to_json(&avro, schema).unwrap();
    let from_avro: T = serde_json::from_value(json).expect("avro json is the record's json form");
    assert_eq!(&from_avro, value);
    // ... and what apache-avro writes, we read (map entries may come in another order, so the
    // bytes need not be equal; the fixture tests pin our own bytes).
    let theirs = to_avro_datum(schema, avro).unwrap();
    assert_eq!(
        &decode_body::<T>(&theirs).expect("we read apache-avro's bytes"),
        value
    );
    // Every truncation fails cleanly.
    for cut in 0..body.len() {
        assert!(
            decode_body::<T>(&body[..cut]).is_err(),
            "prefix of {cut} bytes decoded"
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn intent_conforms(v in common::intent()) { check(&v) }

    #[test]
    fn commit_conforms(v in common::commit()) { check(&v) }

    #[test]
    fn receipt_conforms(v in common::receipt()) { check(&v) }

    #[test]
    fn view_conforms(v in common::view()) { check(&v) }

    #[test]
    fn source_topic_records_conform(
        account in "[a-z/_]{0,12}", version in proptest::option::of("[0-9a-z]{0,8}"),
        doc in common::source_doc(), visibility in common::pick(Visibility::ALL), acl in common::acl(),
    ) {
        let op = SourceOp { doc, visibility, acl };
        let bytes = encode_source(&account, version.as_deref(), &op);
        let source = op.doc.source();
        // Each topic's record is its own; another topic's record does not decode as it.
        for other in SourceKind::ALL {
            let got = decode_source(other, &bytes, &NoRegistry);
            if other == source {
                prop_assert_eq!(got, Ok((account.clone(), version.clone(), op.clone())));
            } else {
                prop_assert!(matches!(got, Err(DecodeError::UnknownSchema(_))), "{:?}", got);
            }
        }
        let (visibility, acl) = (op.visibility, op.acl.clone());
        let (account_id, version) = (account.clone(), version.clone());
        match op.doc {
            SourceDoc::Person(doc) => check(&PersonSource { account_id, version, visibility, acl, doc }),
            SourceDoc::Conversation(doc) => check(&ConversationSource { account_id, version, visibility, acl, doc }),
            SourceDoc::Calendar(doc) => check(&CalendarSource { account_id, version, visibility, acl, doc }),
            SourceDoc::Screen(doc) => check(&ScreenSource { account_id, version, visibility, acl, doc }),
            SourceDoc::Episode(doc) => check(&EpisodeSource { account_id, version, visibility, acl, doc }),
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let _ = decode::<Intent>(&bytes, &KnownSchemas::released());
        let _ = decode_body::<Commit>(&bytes);
        let mut framed = vec![0xC3, 0x01];
        framed.extend_from_slice(&Intent::current().fingerprint.to_le_bytes());
        framed.extend_from_slice(&bytes);
        let _ = decode::<Intent>(&framed, &NoRegistry);
    }
}

fn sample_intent() -> Intent {
    serde_json::from_str(include_str!("../../examples/intent.json")).expect("example intent parses")
}

#[test]
fn single_object_header_matches_apache_avro() {
    let schema: &Schema = schema::<Intent>();
    let mut writer =
        apache_avro::GenericSingleObjectWriter::new_with_capacity(schema, 1024).unwrap();
    let v = sample_intent();
    let mut body = Vec::new();
    v.encode(&mut body);
    let value = from_avro_datum(schema, &mut body.as_slice(), None).unwrap();
    let mut theirs = Vec::new();
    writer.write_value(value, &mut theirs).unwrap();
    assert_eq!(theirs, encode_single_object(&v));
}

#[test]
fn byte_fixture_of_the_example_intent() {
    let v = sample_intent();
    let bytes = encode_single_object(&v);
    // The directory at run time: a shared target dir may hold a binary built from another clone.
    let dir =
        std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").into());
    let path = format!("{dir}/tests/fixtures/intent.v3.hex");
    if std::env::var_os("KLEDGER_BLESS").is_some() {
        std::fs::write(&path, kledger_schemas::hex::to_hex(&bytes) + "\n").unwrap();
    }
    let fixture =
        kledger_schemas::hex::from_hex(std::fs::read_to_string(&path).unwrap().trim()).unwrap();
    assert_eq!(
        bytes, fixture,
        "encoding changed; a schema change needs a new version"
    );
    assert_eq!(decode::<Intent>(&fixture, &NoRegistry).unwrap(), v);
    // The bytes earlier releases wrote still decode, through their released schemas.
    for old in ["intent.v1.hex", "intent.v2.hex"] {
        let b = std::fs::read_to_string(format!("{dir}/tests/fixtures/{old}")).unwrap();
        let b = kledger_schemas::hex::from_hex(b.trim()).unwrap();
        assert_ne!(b, bytes, "{old}");
        assert_eq!(
            decode::<Intent>(&b, &KnownSchemas::released()).unwrap(),
            v,
            "{old}"
        );
    }
}

#[test]
fn confluent_framing_resolves_through_the_lookup() {
    let v = sample_intent();
    let bytes = encode_confluent(&v, 42);
    assert_eq!(
        decode::<Intent>(&bytes, &NoRegistry),
        Err(DecodeError::UnknownSchema("schema id 42".into()))
    );
    let mut known = KnownSchemas::default();
    known.add(schema::<Intent>().clone(), Some(42));
    assert_eq!(decode::<Intent>(&bytes, &known).unwrap(), v);
    // An id registered for another record does not resolve to an intent.
    let mut wrong = KnownSchemas::default();
    wrong.add(schema::<View>().clone(), Some(42));
    assert!(matches!(
        decode::<Intent>(&bytes, &wrong),
        Err(DecodeError::SchemaMismatch(_))
    ));
}

#[test]
fn framing_errors_have_codes() {
    let v = sample_intent();
    let good = encode_single_object(&v);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (vec![], "null_value"),
        (vec![0xC3, 0x02, 1, 2, 3, 4, 5, 6, 7, 8], "bad_magic"),
        (b"{\"json\": true}".to_vec(), "bad_magic"),
        (
            [&[0xC3, 0x01], &[9u8; 8][..], &good[10..]].concat(),
            "unknown_schema",
        ),
        (good[..good.len() - 1].to_vec(), "truncated"),
        ([good.as_slice(), &[0]].concat(), "trailing_bytes"),
        (
            vec![0u8; kledger_schemas::limits::RECORD_BYTES_CEILING + 1],
            "oversize",
        ),
    ];
    for (bytes, code) in cases {
        let err = decode::<Intent>(&bytes, &NoRegistry).unwrap_err();
        assert_eq!(err.code(), code, "{err}");
    }
}

#[test]
fn invalid_utf8_and_bad_enums_are_decode_errors() {
    let v = sample_intent();
    let mut body = Vec::new();
    v.encode(&mut body);
    // action_id is the first field: length then bytes.
    let mut bad = body.clone();
    bad[1] = 0xff;
    assert_eq!(decode_body::<Intent>(&bad), Err(DecodeError::InvalidUtf8));
    // A receipt's outcome enum with an out-of-range index.
    let r = Receipt {
        action_id: String::new(),
        account_id: String::new(),
        outcome: Outcome::Committed,
        commit_seq: None,
        rebased: false,
        head_seq: 0,
        head_hash: String::new(),
        code: None,
        message: None,
        stale_targets: vec![],
        memory_ids: vec![],
        intent_partition: 0,
        intent_offset: 0,
        recorded_at: 0,
    };
    let mut body = Vec::new();
    r.encode(&mut body);
    body[2] = 40; // zig-zag 20
    assert_eq!(decode_body::<Receipt>(&body), Err(DecodeError::BadEnum(20)));
}
