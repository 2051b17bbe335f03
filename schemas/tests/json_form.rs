//! The JSON form: what the CLI and the HTTP API take.

use kledger_schemas::*;

const EXAMPLE: &str = include_str!("../../examples/intent.json");

#[test]
fn example_intent_parses_with_defaults() {
    let i: Intent = serde_json::from_str(EXAMPLE).unwrap();
    let Op::Assert(a) = &i.ops[0] else {
        panic!("assert expected")
    };
    assert_eq!(a.slot.as_deref(), Some("city"));
    assert_eq!(a.body, None);
    assert_eq!(a.acl, Acl::default());
    assert_eq!(i.planned_against.policy, HeadPolicy::Rebase);
    // Serialising gives every field (nulls included), and reads back equal.
    let back: Intent = serde_json::from_str(&serde_json::to_string(&i).unwrap()).unwrap();
    assert_eq!(back, i);
}

#[test]
fn ops_are_tagged_by_op() {
    let json = r#"{"op":"purge","whole_account":true,"reason":"user request"}"#;
    let op: Op = serde_json::from_str(json).unwrap();
    assert_eq!(
        op,
        Op::Purge(PurgeOp {
            target: None,
            entity_id: None,
            whole_account: true,
            reason: "user request".into()
        })
    );
    let v = serde_json::to_value(&op).unwrap();
    assert_eq!(v["op"], "purge");
}

#[test]
fn unknown_fields_and_bad_enums_are_refused() {
    let typo = EXAMPLE.replace("\"content\"", "\"contnet\"");
    assert!(serde_json::from_str::<Intent>(&typo).is_err());
    let bad_enum = EXAMPLE.replace("\"direct_user_statement\"", "\"gossip\"");
    let err = serde_json::from_str::<Intent>(&bad_enum)
        .unwrap_err()
        .to_string();
    assert!(err.contains("unknown variant"), "{err}");
}

#[test]
fn evidence_may_be_given_as_an_episodic_message() {
    let mut v: serde_json::Value = serde_json::from_str(EXAMPLE).unwrap();
    let message = serde_json::json!({
        "episodic_message": {
            "content": "I live in Lisbon now",
            "producer": "u_alice",
            "produced_for": "agt_helper",
            "timestamp": "2026-01-05T09:30:00Z",
            "role": "user",
            "metadata": {"message_id": "msg_0042", "channel": "telegram"}
        },
        "session_id": "sess_2026_01_05",
        "span_start": 2,
        "span_end": 20
    });
    v["ops"][0]["evidence"] = serde_json::json!([message]);
    let i: Intent = serde_json::from_value(v.clone()).unwrap();
    let Op::Assert(a) = &i.ops[0] else {
        panic!("assert expected")
    };
    let e = &a.evidence[0];
    assert_eq!(e.source_type, "episodic_message");
    assert_eq!(e.source_id, "sess_2026_01_05");
    assert_eq!(e.locator.message_id.as_deref(), Some("msg_0042"));
    assert_eq!(
        (e.locator.span_start, e.locator.span_end),
        (Some(2), Some(20))
    );
    assert_eq!(e.quote.as_deref(), Some("I live in Lisbon now"));
    // The JSON written back is the ordinary evidence shape, and reads back equal.
    let back: Intent = serde_json::from_str(&serde_json::to_string(&i).unwrap()).unwrap();
    assert_eq!(back, i);
    // A malformed message is refused with the item's index.
    v["ops"][0]["evidence"][0]["episodic_message"]["timestamp"] = "yesterday".into();
    let err = serde_json::from_value::<Intent>(v).unwrap_err().to_string();
    assert!(
        err.contains("evidence[0]") && err.contains("RFC 3339"),
        "{err}"
    );
}
