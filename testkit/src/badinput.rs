//! The bad-input corpus: records that are not valid intents, each with the answer kledger must
//! give — a dead letter (with its original bytes) or a `rejected` receipt — and its stable code.
//!
//! Built from the example intent (`examples/intent.json`) by mutation, so every case differs
//! from a valid intent in one way. Cases that need a committed intent first (a reused action id
//! with another payload, a purge of another account's row) name it in `before`.

use kledger_processors::routing::partition_for;
use kledger_schemas::avro::{
    CONFLUENT_MAGIC, SINGLE_OBJECT_HEADER, encode_single_object, write_long,
};
use kledger_schemas::limits::RECORD_BYTES_DEFAULT;
use kledger_schemas::{Intent, Outcome, Receipt, View};
use serde_json::{Value, json};

/// What kledger must answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expect {
    /// A dead letter with this `kledger.error.code` header and the original bytes.
    DeadLetter(&'static str),
    /// A receipt with this outcome and code.
    Receipt(Outcome, &'static str),
}

/// One bad input.
#[derive(Debug, Clone)]
pub struct Case {
    /// A short name.
    pub name: &'static str,
    /// The record key (none: a null key).
    pub key: Option<Vec<u8>>,
    /// The record value (none: a null value).
    pub payload: Option<Vec<u8>>,
    /// The partition to write to (none: murmur2 of the key).
    pub partition: Option<i32>,
    /// The record timestamp (ms).
    pub timestamp: i64,
    /// A valid intent (key, payload) to publish before this case.
    pub before: Option<(Vec<u8>, Vec<u8>)>,
    /// The expected answer.
    pub expect: Expect,
    /// The action id a receipt answers (cases answered by a receipt).
    pub action_id: Option<String>,
}

/// The example intent as JSON.
pub fn example() -> Value {
    serde_json::from_str(include_str!("../../examples/intent.json")).expect("example intent")
}

/// A time every case uses for its record (2026-01-01).
pub const RECORD_TIME: i64 = 1_767_225_600_000;

fn intent(v: &Value) -> Intent {
    serde_json::from_value(v.clone()).expect("a representable intent")
}

/// The example intent for account `u`, with a unique action id.
fn base(u: &str, action: &str) -> Value {
    let mut v = example();
    v["account_id"] = json!(format!("t_acme/user/{u}"));
    v["tenant"]["owner_id"] = json!(u);
    v["action_id"] = json!(action);
    v
}

fn replace(haystack: &mut [u8], needle: &[u8], with: &[u8]) {
    assert_eq!(needle.len(), with.len());
    let at = find(haystack, needle);
    haystack[at..at + with.len()].copy_from_slice(with);
}

/// Where `needle` starts in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("marker in the encoding")
}

/// `bytes` with `bytes[at..at + len]` replaced by `with`.
fn splice(bytes: &[u8], at: usize, len: usize, with: &[u8]) -> Vec<u8> {
    let mut v = bytes[..at].to_vec();
    v.extend_from_slice(with);
    v.extend_from_slice(&bytes[at + len..]);
    v
}

/// A zig-zag varint.
fn varint(v: i64) -> Vec<u8> {
    let mut out = Vec::new();
    write_long(&mut out, v);
    out
}

fn key_of(u: &str) -> Vec<u8> {
    format!("t_acme/user/{u}").into_bytes()
}

fn encoded(v: &Value) -> Vec<u8> {
    encode_single_object(&intent(v))
}

/// The example intent for `u` with its evidence quote sized so the record is `total` bytes.
fn sized(u: &str, action: &str, total: usize) -> Value {
    let mut b = base(u, action);
    let mut quote = total;
    for _ in 0..8 {
        b["ops"][0]["evidence"][0]["quote"] = json!("q".repeat(quote));
        let len = encoded(&b).len();
        if len == total {
            return b;
        }
        quote = (quote + total).checked_sub(len).expect("a quote that fits");
    }
    panic!("no quote length gives a record of {total} bytes");
}

// Long on purpose: the corpus is a flat list of cases, one entry each; splitting it would scatter the catalogue.
/// Every case, for accounts `t_acme/user/u_bad_<n>` (`partitions`: of the intents topic).
pub fn corpus(partitions: i32) -> Vec<Case> {
    let mut cases = Vec::new();
    let mut n = 0;
    let mut next = |name: &'static str| {
        n += 1;
        (name, format!("u_bad_{n:02}"), format!("bad-{n:02}-{name}"))
    };
    let dead = |name, key: Option<Vec<u8>>, payload: Option<Vec<u8>>, code| Case {
        name,
        key,
        payload,
        partition: None,
        timestamp: RECORD_TIME,
        before: None,
        expect: Expect::DeadLetter(code),
        action_id: None,
    };
    let rejected = |name, v: &Value, code| {
        let i = intent(v);
        Case {
            name,
            key: Some(i.account_id.clone().into_bytes()),
            payload: Some(encode_single_object(&i)),
            partition: None,
            timestamp: RECORD_TIME,
            before: None,
            expect: Expect::Receipt(Outcome::Rejected, code),
            action_id: Some(i.action_id.clone()),
        }
    };

    // Framing and Avro: dead letters.
    let (name, u, a) = next("null_value");
    let key = format!("t_acme/user/{u}").into_bytes();
    cases.push(dead(name, Some(key), None, "null_value"));
    let (name, u, a2) = next("empty_value");
    cases.push(dead(
        name,
        Some(format!("t_acme/user/{u}").into_bytes()),
        Some(vec![]),
        "null_value",
    ));
    let _ = (a, a2);
    let (name, u, a) = next("truncated_avro");
    let v = encode_single_object(&intent(&base(&u, &a)));
    cases.push(dead(
        name,
        Some(format!("t_acme/user/{u}").into_bytes()),
        Some(v[..v.len() / 2].to_vec()),
        "truncated",
    ));
    let (name, u, _) = next("json_instead_of_avro");
    cases.push(dead(
        name,
        Some(format!("t_acme/user/{u}").into_bytes()),
        Some(example().to_string().into_bytes()),
        "bad_magic",
    ));
    let (name, u, a) = next("wrong_magic");
    let mut v = encode_single_object(&intent(&base(&u, &a)));
    v[0] = 0xC4;
    cases.push(dead(
        name,
        Some(format!("t_acme/user/{u}").into_bytes()),
        Some(v),
        "bad_magic",
    ));
    let (name, u, a) = next("unknown_fingerprint");
    let mut v = encode_single_object(&intent(&base(&u, &a)));
    for b in &mut v[2..10] {
        *b ^= 0x5A;
    }
    cases.push(dead(
        name,
        Some(format!("t_acme/user/{u}").into_bytes()),
        Some(v),
        "unknown_schema",
    ));
    let (name, u, _) = next("confluent_unknown_id");
    let mut v = vec![0u8, 0, 0, 0x7f, 0x7f];
    v.extend_from_slice(b"whatever");
    cases.push(dead(
        name,
        Some(format!("t_acme/user/{u}").into_bytes()),
        Some(v),
        "unknown_schema",
    ));
    let (name, u, _) = next("wrong_schema_receipt");
    let receipt = Receipt {
        action_id: "r".into(),
        account_id: format!("t_acme/user/{u}"),
        outcome: Outcome::Committed,
        commit_seq: Some(1),
        rebased: false,
        head_seq: 1,
        head_hash: String::new(),
        code: None,
        message: None,
        stale_targets: vec![],
        memory_ids: vec![],
        intent_partition: 0,
        intent_offset: 0,
        recorded_at: 0,
    };
    cases.push(dead(
        name,
        Some(format!("t_acme/user/{u}").into_bytes()),
        Some(encode_single_object(&receipt)),
        "schema_mismatch",
    ));
    let (name, u, _) = next("invalid_utf8");
    let mut v = encode_single_object(&intent(&base(&u, "MARK-UTF8-MARK")));
    replace(&mut v, b"MARK-UTF8-MARK", b"MARK-\xff\xfe\xfd\xfc-MARK");
    cases.push(dead(
        name,
        Some(format!("t_acme/user/{u}").into_bytes()),
        Some(v),
        "invalid_utf8",
    ));
    let (name, u, a) = next("bad_enum");
    let mut b = base(&u, &a);
    b["extractor"]["version"] = json!("MARK-ENUM-MARK");
    let mut v = encode_single_object(&intent(&b));
    // write_reason (an enum) is the field right after the extractor's version.
    let at = v
        .windows(14)
        .position(|w| w == b"MARK-ENUM-MARK")
        .expect("marker")
        + 14;
    v[at] = 0x7e; // zig-zag 63: no such symbol
    cases.push(dead(
        name,
        Some(format!("t_acme/user/{u}").into_bytes()),
        Some(v),
        "bad_enum",
    ));
    let (name, u, a) = next("trailing_bytes");
    let mut v = encode_single_object(&intent(&base(&u, &a)));
    v.extend_from_slice(&[1, 2, 3]);
    cases.push(dead(
        name,
        Some(format!("t_acme/user/{u}").into_bytes()),
        Some(v),
        "trailing_bytes",
    ));
    let (name, u, a) = next("bad_varint");
    let v = encode_single_object(&intent(&base(&u, &a)));
    let mut w = v[..10].to_vec();
    w.extend_from_slice(&[0xff; 12]);
    cases.push(dead(
        name,
        Some(format!("t_acme/user/{u}").into_bytes()),
        Some(w),
        "bad_varint",
    ));
    let (name, u, a) = next("negative_length");
    let mut v = encode_single_object(&intent(&base(&u, &a)));
    v[10] = 0x01; // zig-zag −1: the action_id's length
    cases.push(dead(
        name,
        Some(format!("t_acme/user/{u}").into_bytes()),
        Some(v),
        "bad_length",
    ));
    let (name, u, a) = next("oversize_record");
    let mut b = base(&u, &a);
    b["ops"][0]["evidence"][0]["quote"] = json!("x".repeat(600_000));
    b["ops"][0]["content"] = json!("y".repeat(600_000));
    cases.push(dead(
        name,
        Some(format!("t_acme/user/{u}").into_bytes()),
        Some(encode_single_object(&intent(&b))),
        "oversize",
    ));

    // Framing cut short, or nothing after it.
    let (name, u, _) = next("confluent_id_without_body");
    cases.push(dead(
        name,
        Some(key_of(&u)),
        Some(vec![CONFLUENT_MAGIC, 0, 0, 0, 1]),
        "unknown_schema",
    ));
    let (name, u, _) = next("confluent_header_cut");
    cases.push(dead(
        name,
        Some(key_of(&u)),
        Some(vec![CONFLUENT_MAGIC, 0, 0]),
        "bad_magic",
    ));
    let (name, u, a) = next("fingerprint_cut");
    // The single-object magic and 5 of the fingerprint's 8 bytes: no framing kledger knows.
    let v = encoded(&base(&u, &a));
    cases.push(dead(
        name,
        Some(key_of(&u)),
        Some(v[..7].to_vec()),
        "bad_magic",
    ));
    let (name, u, a) = next("header_without_body");
    let v = encoded(&base(&u, &a));
    cases.push(dead(
        name,
        Some(key_of(&u)),
        Some(v[..SINGLE_OBJECT_HEADER].to_vec()),
        "truncated",
    ));
    // Lengths, counts and varints that lie.
    let (name, u, a) = next("string_longer_than_record");
    let mut v = encoded(&base(&u, &a))[..SINGLE_OBJECT_HEADER].to_vec();
    v.extend_from_slice(&varint(1 << 20)); // the action_id's length: 1 MiB
    v.extend_from_slice(b"act");
    cases.push(dead(name, Some(key_of(&u)), Some(v), "truncated"));
    let (name, u, a) = next("padded_varint_eleven_bytes");
    // Zero written in 11 bytes (10 continuation bytes): past the 10 a long can take.
    let mut v = encoded(&base(&u, &a))[..SINGLE_OBJECT_HEADER].to_vec();
    v.extend_from_slice(&[0x80; 10]);
    v.push(0);
    cases.push(dead(name, Some(key_of(&u)), Some(v), "bad_varint"));
    let (name, u, a) = next("int_over_32_bits");
    // curation_weight (an Avro int) written as 2^40: found as the one byte that differs
    // between weights 1 and 2.
    let mut b = base(&u, &a);
    b["ops"][0]["curation_weight"] = json!(1);
    let w1 = encoded(&b);
    b["ops"][0]["curation_weight"] = json!(2);
    let w2 = encoded(&b);
    assert_eq!(w1.len(), w2.len());
    let at = w1
        .iter()
        .zip(&w2)
        .position(|(x, y)| x != y)
        .expect("the weight's byte");
    cases.push(dead(
        name,
        Some(key_of(&u)),
        Some(splice(&w1, at, 1, &varint(1 << 40))),
        "bad_varint",
    ));
    let (name, u, a) = next("block_count_i64_min");
    // planned_against.targets' block count i64::MIN: its negation overflows.
    let mut b = base(&u, &a);
    b["extractor"]["version"] = json!("MARK-ARRAY-MARK");
    let v = encoded(&b);
    let at = find(&v, b"MARK-ARRAY-MARK") + 15;
    // write_reason, head_seq 0, policy, then the empty targets array's end (0).
    assert_eq!((v[at + 1], v[at + 3]), (0, 0));
    let mut count = varint(i64::MIN);
    count.extend_from_slice(&varint(0)); // the block's byte size
    cases.push(dead(
        name,
        Some(key_of(&u)),
        Some(splice(&v, at + 3, 1, &count)),
        "bad_length",
    ));
    let (name, u, a) = next("map_of_2^31_entries");
    let mut b = base(&u, &a);
    b["ops"][0]["content"] = json!("MARK-MAP-MARK");
    b["ops"][0]["condition"] = json!({});
    let v = encoded(&b);
    let at = find(&v, b"MARK-MAP-MARK") + 13;
    // No body, a condition, the empty map's end.
    assert_eq!(&v[at..at + 3], &[0, 2, 0]);
    cases.push(dead(
        name,
        Some(key_of(&u)),
        Some(splice(&v, at + 2, 1, &varint(1 << 31))),
        "truncated",
    ));
    let (name, u, a) = next("duplicate_map_key");
    let mut b = base(&u, &a);
    b["ops"][0]["condition"] = json!({ "MARK-KEY-A": "v", "MARK-KEY-B": "w" });
    let mut v = encoded(&b);
    replace(&mut v, b"MARK-KEY-B", b"MARK-KEY-A");
    cases.push(dead(name, Some(key_of(&u)), Some(v), "duplicate_map_key"));
    // Union, enum and boolean values out of range.
    let (name, u, a) = next("union_index_minus_one");
    let confidence = 0.123_456_789_012_345_f64;
    let mut b = base(&u, &a);
    b["ops"][0]["confidence"] = json!(confidence);
    let mut v = encoded(&b);
    let mut branch = vec![2u8]; // zig-zag 1: the double branch of ["null", "double"]
    branch.extend_from_slice(&confidence.to_le_bytes());
    let at = find(&v, &branch);
    v[at] = 0x01; // zig-zag −1
    cases.push(dead(name, Some(key_of(&u)), Some(v), "bad_union"));
    let (name, u, a) = next("op_union_index_6");
    let mut b = base(&u, &a);
    b["ops"][0]["content"] = json!("MARK-OP-UNION");
    let mut v = encoded(&b);
    let at = find(&v, b"MARK-OP-UNION");
    // The op's branch (assert), its kind (fact), the content's length (13).
    assert_eq!(&v[at - 3..at], &[0, 0, 26]);
    v[at - 3] = 12; // zig-zag 6: one past the six op records
    cases.push(dead(name, Some(key_of(&u)), Some(v), "bad_union"));
    let (name, u, a) = next("enum_index_minus_one");
    let mut b = base(&u, &a);
    b["tenant"]["agent_id"] = json!("MARK-AGENT-MARK");
    let mut v = encoded(&b);
    let at = find(&v, b"MARK-AGENT-MARK") + 15;
    assert_eq!(v[at], 0); // owner_kind user
    v[at] = 0x01; // zig-zag −1
    cases.push(dead(name, Some(key_of(&u)), Some(v), "bad_enum"));
    let (name, u, a) = next("bool_byte_2");
    let mut b = base(&u, &a);
    b["ops"] = json!([{ "op": "purge", "whole_account": true, "reason": "MARK-BOOL-MARK" }]);
    let mut v = encoded(&b);
    let at = find(&v, b"MARK-BOOL-MARK");
    // whole_account (true), the reason's length (14).
    assert_eq!(&v[at - 2..at], &[1, 28]);
    v[at - 2] = 2;
    cases.push(dead(name, Some(key_of(&u)), Some(v), "bad_bool"));
    // UTF-8 that decoders elsewhere are known to accept.
    let (name, u, _) = next("overlong_utf8");
    let mut v = encoded(&base(&u, "MARK-OVERLONGS-MARK"));
    // "/" in 2, 3 and 4 bytes.
    replace(
        &mut v,
        b"MARK-OVERLONGS-MARK",
        b"MARK-\xc0\xaf\xe0\x80\xaf\xf0\x80\x80\xaf-MARK",
    );
    cases.push(dead(name, Some(key_of(&u)), Some(v), "invalid_utf8"));
    let (name, u, _) = next("cesu8_surrogates");
    let mut v = encoded(&base(&u, "MARK-CESU-8-MARK"));
    // U+1F600 as two encoded UTF-16 surrogates (CESU-8), not as one 4-byte sequence.
    replace(
        &mut v,
        b"MARK-CESU-8-MARK",
        b"MARK-\xed\xa0\xbd\xed\xb8\x80-MARK",
    );
    cases.push(dead(name, Some(key_of(&u)), Some(v), "invalid_utf8"));
    // Valid Avro of kledger's other records.
    let (name, u, a) = next("wrong_schema_commit");
    let commit = kledger_processors::decide_owned(
        &Default::default(),
        intent(&base(&u, &a)),
        &kledger_processors::RecordMeta {
            timestamp: RECORD_TIME,
            partition: 0,
            offset: 0,
        },
        &Default::default(),
    )
    .into_commit()
    .expect("the example commits");
    cases.push(dead(
        name,
        Some(key_of(&u)),
        Some(encode_single_object(&commit)),
        "schema_mismatch",
    ));
    let (name, u, _) = next("wrong_schema_view");
    let view = View {
        account_id: format!("t_acme/user/{u}"),
        generation: 0,
        commit_seq: 1,
        as_of: RECORD_TIME,
        profile: "- home_city: Lives in Lisbon".into(),
        playbook_index: String::new(),
        watchlist: vec![],
        active_facts: 1,
        active_documents: 0,
        active_triggers: 0,
        watchlist_truncated: false,
    };
    cases.push(dead(
        name,
        Some(key_of(&u)),
        Some(encode_single_object(&view)),
        "schema_mismatch",
    ));
    // The record budget: over it by one byte, and at it exactly.
    let (name, u, a) = next("budget_plus_one_byte");
    cases.push(dead(
        name,
        Some(key_of(&u)),
        Some(encoded(&sized(&u, &a, RECORD_BYTES_DEFAULT + 1))),
        "oversize",
    ));
    let (name, u, a) = next("budget_exactly_trailing_zeros");
    let mut v = encoded(&base(&u, &a));
    v.resize(RECORD_BYTES_DEFAULT, 0);
    cases.push(dead(name, Some(key_of(&u)), Some(v), "trailing_bytes"));
    let (name, u, a) = next("budget_exactly_intent");
    // Read (it is not over the budget) and answered by validation: its quote is too long.
    cases.push(rejected(
        name,
        &sized(&u, &a, RECORD_BYTES_DEFAULT),
        "evidence_limit",
    ));

    // Keys and partitions: dead letters.
    let (name, u, a) = next("key_not_utf8");
    let v = encode_single_object(&intent(&base(&u, &a)));
    cases.push(dead(
        name,
        Some(b"t_acme/\xff\xfe".to_vec()),
        Some(v),
        "bad_key",
    ));
    let (name, u, a) = next("misrouted");
    let key = format!("t_acme/user/{u}").into_bytes();
    let mut c = dead(
        name,
        Some(key.clone()),
        Some(encode_single_object(&intent(&base(&u, &a)))),
        "misrouted",
    );
    c.partition = Some((partition_for(&key, partitions) + 1) % partitions);
    cases.push(c);
    let (name, u, a) = next("key_of_another_account");
    let other = format!("t_acme/user/{u}-other").into_bytes();
    cases.push(dead(
        name,
        Some(other),
        Some(encode_single_object(&intent(&base(&u, &a)))),
        "key_mismatch",
    ));
    let (name, u, a) = next("empty_key");
    let mut c = dead(
        name,
        Some(vec![]),
        Some(encode_single_object(&intent(&base(&u, &a)))),
        "key_mismatch",
    );
    c.partition = Some(partition_for(b"", partitions));
    cases.push(c);

    let (name, u, a) = next("key_bad_utf8_continuation");
    let mut k = key_of(&u);
    k.extend_from_slice(b"\xc3\x28"); // a lead byte, then no continuation byte
    cases.push(dead(name, Some(k), Some(encoded(&base(&u, &a))), "bad_key"));
    let (name, u, a) = next("key_with_trailing_nul");
    let mut k = key_of(&u);
    k.push(0);
    cases.push(dead(
        name,
        Some(k),
        Some(encoded(&base(&u, &a))),
        "key_mismatch",
    ));
    let (name, u, a) = next("key_of_another_tenant");
    cases.push(dead(
        name,
        Some(format!("t_other/user/{u}").into_bytes()),
        Some(encoded(&base(&u, &a))),
        "key_mismatch",
    ));
    let (name, u, a) = next("null_key");
    // Read as the empty key (and routed as it): not the intent's account.
    cases.push(dead(
        name,
        None,
        Some(encoded(&base(&u, &a))),
        "key_mismatch",
    ));
    for (by, name) in [(2, "misrouted_by_two"), (3, "misrouted_by_three")] {
        let (name, u, a) = next(name);
        let key = key_of(&u);
        let mut c = dead(
            name,
            Some(key.clone()),
            Some(encoded(&base(&u, &a))),
            "misrouted",
        );
        c.partition = Some((partition_for(&key, partitions) + by) % partitions);
        cases.push(c);
    }
    let (name, u, a) = next("key_over_1024_bytes");
    // Key and account agree, routed right: the account's owner id is over 128 chars.
    let owner = format!("{u}_{}", "k".repeat(1_100));
    cases.push(rejected(name, &base(&owner, &a), "bad_identifier"));

    // Valid intents that state makes invalid: rejected receipts.
    let (name, u, a) = next("reused_action_id_other_payload");
    let first = base(&u, &a);
    let mut second = first.clone();
    second["ops"][0]["content"] = json!("Lives in Porto");
    let mut c = rejected(name, &second, "action_reused");
    let i = intent(&first);
    c.before = Some((i.account_id.clone().into_bytes(), encode_single_object(&i)));
    cases.push(c);
    let (name, u, a) = next("purge_of_a_foreign_row");
    // The victim's row exists in another account; the purge names its memory id from here.
    let victim = base(&format!("{u}_victim"), &format!("{a}-victim"));
    let vi = intent(&victim);
    let mut purge = base(&u, &a);
    let meta = kledger_processors::RecordMeta {
        timestamp: RECORD_TIME,
        partition: 0,
        offset: 0,
    };
    let victim_commit = kledger_processors::decide_owned(
        &Default::default(),
        vi.clone(),
        &meta,
        &Default::default(),
    )
    .into_commit()
    .expect("the victim's intent commits");
    let row = &victim_commit.ops[0].row;
    let foreign_row = row.memory_id.clone();
    purge["planned_against"]["targets"] = json!([{
        "memory_id": foreign_row,
        "revision": row.revision,
        "content_hash": row.content_hash,
    }]);
    purge["ops"] = json!([{ "op": "purge", "target": foreign_row, "reason": "forget me" }]);
    let mut c = rejected(name, &purge, "target_missing");
    c.before = Some((
        vi.account_id.clone().into_bytes(),
        encode_single_object(&vi),
    ));
    cases.push(c);
    // Every case of the validation catalogue (one per validation code and more), as a record.
    for ic in crate::invalid::cases() {
        let r = crate::invalid::make(&ic);
        if r.timestamp < 0 {
            // A Kafka record cannot carry a negative timestamp (the producer stamps it).
            continue;
        }
        cases.push(Case {
            name: ic.name,
            key: Some(r.intent.account_id.clone().into_bytes()),
            payload: Some(encode_single_object(&r.intent)),
            partition: None,
            timestamp: r.timestamp,
            before: None,
            expect: Expect::Receipt(Outcome::Rejected, ic.code.as_str()),
            action_id: Some(r.intent.action_id.clone()),
        });
    }
    cases
}
