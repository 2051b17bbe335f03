//! The bad-input corpus: records that are not valid intents, each with the answer kledger must
//! give — a dead letter (with its original bytes) or a `rejected` receipt — and its stable code.
//!
//! Built from the example intent (`examples/intent.json`) by mutation, so every case differs
//! from a valid intent in one way. Cases that need a committed intent first (a reused action id
//! with another payload, a purge of another account's row) name it in `before`.

use kledger_processors::routing::partition_for;
use kledger_schemas::avro::encode_single_object;
use kledger_schemas::{Intent, Outcome, Receipt};
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
    let at = haystack
        .windows(needle.len())
        .position(|w| w == needle)
        .expect("marker in the encoding");
    haystack[at..at + with.len()].copy_from_slice(with);
}

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
