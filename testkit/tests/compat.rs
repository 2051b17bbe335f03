//! The Long-term compatibility projection (`GET /v1/compat/long_term`, temporary): the rows a
//! released client may decode, in its shape with `tier = "long_term"` — intent-backed facts
//! about the primary user in effect now — and never a third party's fact, a restricted row, a
//! migrated (non-intent-backed) row, a disputed row, a document, an ended row, or a row the
//! reader may not read (nor, for another reader, the author).

use kledger_schemas::*;
use kledger_testkit::build::{document, fact, intent, principal, slotted, third_party};
use kledger_testkit::ledger::Ledger;
use kledger_topology::config::Config;
use kledger_topology::serve::api::compat::{LongTermParams, long_term_answer};

const A: &str = "t_acme/user/u_owner";
const T0: i64 = 1_767_225_600_000;
const PARTITIONS: i32 = 4;

#[test]
fn only_eligible_rows_come_back_as_long_term() {
    let mut l = Ledger::new(PARTITIONS);
    let restricted = AssertOp {
        sensitivity: Sensitivity {
            level: SensitivityLevel::Restricted,
            labels: Vec::new(),
        },
        ..fact("Has a rare condition")
    };
    let public = AssertOp {
        visibility: Visibility::Public,
        ..fact("Likes espresso")
    };
    let ended = AssertOp {
        valid_to: Some(T0 + 1),
        ..fact("Was visiting Rome")
    };
    let disputed = AssertOp {
        assertion_class: AssertionClass::Disputed,
        ..fact("Might be allergic to cats")
    };
    let writes = [
        (
            "city",
            WriteReason::DirectUserStatement,
            slotted("home_city", "Lives in Porto"),
        ),
        ("coffee", WriteReason::DirectUserStatement, public),
        (
            "ana",
            WriteReason::DirectUserStatement,
            third_party("person:ana", "Ana lives in Braga"),
        ),
        ("secret", WriteReason::DirectUserStatement, restricted),
        (
            "old",
            WriteReason::LegacyMigration,
            fact("Imported from the old store"),
        ),
        (
            "doc",
            WriteReason::RecurringWorkflow,
            document("Packing list", "Passport"),
        ),
        ("rome", WriteReason::DirectUserStatement, ended),
        ("cats", WriteReason::DirectUserStatement, disputed),
    ];
    for (action, reason, op) in writes {
        let mut i = intent(A, action, reason, 0, vec![Op::Assert(op)]);
        i.source.author_id = Some("u_owner".into());
        let d = l.apply(&IntentRecord {
            timestamp: T0,
            partition: None,
            offset: None,
            intent: i,
        });
        assert_eq!(d.outcome(), Outcome::Committed, "{action}: {:?}", d.receipt);
    }
    let dir = tempfile::tempdir().unwrap();
    let api =
        kledger_testkit::offline::served(dir.path(), &l.commits, PARTITIONS, Config::default())
            .unwrap();
    let q = LongTermParams {
        account: Some(A.into()),
        limit: None,
    };
    let owner = long_term_answer(&api, &principal("u_owner", &[]), &q).unwrap();
    let mut contents: Vec<&str> = owner.rows.iter().map(|r| r.content.as_str()).collect();
    contents.sort();
    assert_eq!(contents, ["Likes espresso", "Lives in Porto"]);
    assert!(
        owner
            .rows
            .iter()
            .all(|r| r.tier == "long_term" && r.status == "active" && r.subject == "user")
    );
    let city = owner
        .rows
        .iter()
        .find(|r| r.slot.as_deref() == Some("home_city"))
        .unwrap();
    assert_eq!(city.account_id, A);
    assert!(city.user_asserted);
    assert!(!city.source_version.is_empty());
    assert!(!owner.truncated);
    // Another reader: what it may read only (the public fact).
    let mate = long_term_answer(&api, &principal("u_mate", &[]), &q).unwrap();
    let contents: Vec<&str> = mate.rows.iter().map(|r| r.content.as_str()).collect();
    assert_eq!(contents, ["Likes espresso"]);
    assert_eq!(
        mate.rows[0].author_id, None,
        "the author is the owner's to see"
    );
    let own = owner
        .rows
        .iter()
        .find(|r| r.content == "Likes espresso")
        .unwrap();
    assert!(own.author_id.is_some());
    // Bounded.
    let one = long_term_answer(
        &api,
        &principal("u_owner", &[]),
        &LongTermParams {
            account: Some(A.into()),
            limit: Some(1),
        },
    )
    .unwrap();
    assert_eq!((one.rows.len(), one.truncated), (1, true));
    let bad = LongTermParams {
        account: None,
        limit: Some(501),
    };
    assert_eq!(
        long_term_answer(&api, &principal("u_owner", &[]), &bad)
            .unwrap_err()
            .code(),
        "bad_limit"
    );
}

/// MemMachine's hierarchy on semantic features: `project_id` selects the rows whose tenant block
/// names that project, `session_id` the rows whose source or evidence is that session, and
/// another org answers none.
#[test]
fn semantic_features_filter_by_project_and_session() {
    use kledger_topology::serve::api::semantic::{FeatureParams, features_answer};
    let mut l = Ledger::new(PARTITIONS);
    for (action, project, session, content) in [
        ("a", Some("proj_alpha"), "sess_1", "Prefers tea"),
        ("b", Some("proj_beta"), "sess_2", "Prefers coffee"),
        ("c", None, "sess_1", "Walks to work"),
    ] {
        let mut i = intent(
            A,
            action,
            WriteReason::DirectUserStatement,
            0,
            vec![Op::Assert(fact(content))],
        );
        i.tenant.project_id = project.map(str::to_owned);
        i.source.source_id = session.into();
        let d = l.apply(&IntentRecord {
            timestamp: T0,
            partition: None,
            offset: None,
            intent: i,
        });
        assert_eq!(d.outcome(), Outcome::Committed, "{action}: {:?}", d.receipt);
    }
    let dir = tempfile::tempdir().unwrap();
    let api =
        kledger_testkit::offline::served(dir.path(), &l.commits, PARTITIONS, Config::default())
            .unwrap();
    let owner = principal("u_owner", &[]);
    let values = |q: FeatureParams| -> Vec<String> {
        let mut v: Vec<String> = features_answer(&api, &owner, &q)
            .unwrap()
            .features
            .into_iter()
            .map(|f| f.value)
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        values(FeatureParams {
            project_id: Some("proj_alpha".into()),
            ..FeatureParams::default()
        }),
        ["Prefers tea"]
    );
    assert_eq!(
        values(FeatureParams {
            project_id: Some("proj_beta".into()),
            ..FeatureParams::default()
        }),
        ["Prefers coffee"]
    );
    assert_eq!(
        values(FeatureParams {
            session_id: Some("sess_1".into()),
            ..FeatureParams::default()
        }),
        ["Prefers tea", "Walks to work"]
    );
    assert_eq!(
        values(FeatureParams {
            project_id: Some("proj_alpha".into()),
            session_id: Some("sess_2".into()),
            ..FeatureParams::default()
        }),
        Vec::<String>::new()
    );
    assert!(
        values(FeatureParams {
            org_id: Some("t_other".into()),
            ..FeatureParams::default()
        })
        .is_empty()
    );
    assert_eq!(values(FeatureParams::default()).len(), 3);
}
