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
