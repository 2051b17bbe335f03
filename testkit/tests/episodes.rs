//! MemMachine episodic memory (seed 003): episodes ingested as MemoryMessages keep every
//! field, carry `EpisodeType` and `ContentType` on the wire, are listed by org, project and
//! session for the owner (and for no one they are private to), and are erased by a purge of
//! their session or of the account — through the real decide path, the sources store's fold
//! and the read API's own answer.

use kledger_processors::access::Principal;
use kledger_processors::sources::intent_for;
use kledger_schemas::avro::{NoRegistry, decode, encode_single_object};
use kledger_schemas::*;
use kledger_state::ViewStore;
use kledger_testkit::build::intent;
use kledger_testkit::build::principal;
use kledger_testkit::ledger::Ledger;
use kledger_topology::config::Config;
use kledger_topology::serve::api::episodes::{EpisodeParams, episodes_answer};
use serde_json::json;

const A: &str = "t_acme/user/u_owner";
const T0: i64 = 1_767_225_600_000;
const PARTITIONS: i32 = 4;

/// The `source` op of one MemoryMessage, as `POST /v1/sources/episodes` takes it.
fn episode(session: &str, project: Option<&str>, content: &str, at: &str) -> SourceOp {
    let mut body = json!({
        "session_id": session,
        "content": content,
        "producer": "u_owner",
        "produced_for": "agt_helper",
        "timestamp": at,
        "role": "user",
        "metadata": {"channel": "app", "turn": 3, "tags": ["a", "b"]},
    });
    if let Some(p) = project {
        body["project_id"] = json!(p);
    }
    let env: SourceEnvelope = serde_json::from_value(body).unwrap();
    env.op(SourceKind::Episodes).unwrap()
}

fn fold(store: &ViewStore, commits: &[Commit]) {
    let positioned = kledger_testkit::kafka::positioned(commits, |c| c.intent_partition);
    let read: Vec<(i32, i64)> = positioned.iter().map(|c| (c.partition, c.offset)).collect();
    kledger_topology::pipeline::project::views::fold(store, &positioned, read.into_iter())
        .expect("fold");
}

fn serve(ledger: &Ledger, dir: &std::path::Path) -> kledger_topology::serve::api::Api {
    let commits = &ledger.commits;
    let api =
        kledger_testkit::offline::served(dir, commits, PARTITIONS, Config::default()).unwrap();
    let sources = kledger_testkit::offline::sources(dir, commits, PARTITIONS).unwrap();
    fold(&sources, commits);
    kledger_testkit::offline::with_sources(api, dir, sources).unwrap()
}

fn list(api: &kledger_topology::serve::api::Api, p: &Principal, q: EpisodeParams) -> Vec<String> {
    episodes_answer(
        api,
        p,
        &EpisodeParams {
            account: Some(A.into()),
            ..q
        },
    )
    .unwrap()
    .episodes
    .into_iter()
    .map(|e| e.content)
    .collect()
}

#[test]
fn episodes_keep_every_field_and_list_by_org_project_and_session() {
    // The wire form: EpisodeType and ContentType are Avro enums of the record.
    let op = episode(
        "sess_1",
        Some("proj_alpha"),
        "I moved to Porto",
        "2026-01-02T10:00:00Z",
    );
    let SourceDoc::Episode(doc) = &op.doc else {
        panic!("an episode")
    };
    assert_eq!(
        (doc.episode_type, doc.content_type),
        (EpisodeType::Message, ContentType::String)
    );
    assert_eq!(doc.timestamp, 1_767_348_000_000);
    let bytes = encode_single_object(&EpisodeSource {
        account_id: A.into(),
        version: None,
        visibility: Visibility::Private,
        acl: Acl::default(),
        doc: doc.clone(),
    });
    let back: EpisodeSource = decode(&bytes, &NoRegistry).unwrap();
    assert_eq!(&back.doc, doc);

    let mut ledger = Ledger::new(PARTITIONS);
    let mut t = T0;
    let mut put = |ledger: &mut Ledger, op: SourceOp| {
        t += 1_000;
        let d = ledger.apply(&IntentRecord {
            timestamp: t,
            partition: None,
            offset: None,
            intent: intent_for(A, op, None),
        });
        assert_eq!(d.outcome(), Outcome::Committed, "{:?}", d.receipt);
    };
    put(&mut ledger, op.clone());
    put(
        &mut ledger,
        episode(
            "sess_1",
            Some("proj_alpha"),
            "And I started at Acme",
            "2026-01-02T10:01:00Z",
        ),
    );
    put(
        &mut ledger,
        episode(
            "sess_2",
            Some("proj_beta"),
            "What is the weather",
            "2026-01-03T09:00:00Z",
        ),
    );
    put(
        &mut ledger,
        episode("sess_3", None, "Remind me at noon", "2026-01-04T12:00:00Z"),
    );
    let dir = tempfile::tempdir().unwrap();
    let api = serve(&ledger, dir.path());
    let owner = principal("u_owner", &[]);

    // Every field, as given.
    let all = episodes_answer(
        &api,
        &owner,
        &EpisodeParams {
            account: Some(A.into()),
            session_id: Some("sess_1".into()),
            ..EpisodeParams::default()
        },
    )
    .unwrap();
    let first = all.episodes.last().unwrap();
    assert_eq!(first.content, "I moved to Porto");
    assert_eq!(
        (
            first.producer.as_str(),
            first.produced_for.as_str(),
            first.role.as_str()
        ),
        ("u_owner", "agt_helper", "user")
    );
    assert_eq!(
        first.metadata,
        json!({"channel": "app", "turn": 3, "tags": ["a", "b"]})
    );
    assert_eq!(
        (
            first.org_id.as_str(),
            first.project_id.as_deref(),
            first.session_id.as_str()
        ),
        ("t_acme", Some("proj_alpha"), "sess_1")
    );
    assert_eq!(first.timestamp, 1_767_348_000_000);
    assert!(first.episode_id.starts_with("ep_"));
    // By session (newest first), by project, by org.
    assert_eq!(
        list(
            &api,
            &owner,
            EpisodeParams {
                session_id: Some("sess_1".into()),
                ..Default::default()
            }
        ),
        ["And I started at Acme", "I moved to Porto"]
    );
    assert_eq!(
        list(
            &api,
            &owner,
            EpisodeParams {
                project_id: Some("proj_beta".into()),
                ..Default::default()
            }
        ),
        ["What is the weather"]
    );
    assert_eq!(list(&api, &owner, EpisodeParams::default()).len(), 4);
    assert!(
        list(
            &api,
            &owner,
            EpisodeParams {
                org_id: Some("t_other".into()),
                ..Default::default()
            }
        )
        .is_empty()
    );
    assert_eq!(
        list(
            &api,
            &owner,
            EpisodeParams {
                org_id: Some("t_acme".into()),
                limit: Some(2),
                ..Default::default()
            }
        )
        .len(),
        2
    );
    // Private episodes are their owner's.
    assert!(list(&api, &principal("u_mate", &[]), EpisodeParams::default()).is_empty());

    // A purge of the session erases its episodes; the others stay.
    let purge = |entity: Option<&str>, whole: bool, action: &str| {
        intent(
            A,
            action,
            WriteReason::DirectUserStatement,
            0,
            vec![Op::Purge(PurgeOp {
                entity_id: entity.map(str::to_owned),
                whole_account: whole,
                reason: "erasure request".into(),
                ..PurgeOp::default()
            })],
        )
    };
    let d = ledger.apply(&IntentRecord {
        timestamp: T0 + 100_000,
        partition: None,
        offset: None,
        intent: purge(Some("sess_1"), false, "purge-session"),
    });
    assert_eq!(d.outcome(), Outcome::Committed, "{:?}", d.receipt);
    let dir = tempfile::tempdir().unwrap();
    let api = serve(&ledger, dir.path());
    assert!(
        list(
            &api,
            &owner,
            EpisodeParams {
                session_id: Some("sess_1".into()),
                ..Default::default()
            }
        )
        .is_empty()
    );
    assert_eq!(list(&api, &owner, EpisodeParams::default()).len(), 2);
    // The whole account: none left.
    let d = ledger.apply(&IntentRecord {
        timestamp: T0 + 200_000,
        partition: None,
        offset: None,
        intent: purge(None, true, "purge-account"),
    });
    assert_eq!(d.outcome(), Outcome::Committed, "{:?}", d.receipt);
    let dir = tempfile::tempdir().unwrap();
    let api = serve(&ledger, dir.path());
    assert!(list(&api, &owner, EpisodeParams::default()).is_empty());
}

#[test]
fn a_malformed_episode_is_rejected_with_a_stable_code() {
    let mut ledger = Ledger::new(PARTITIONS);
    let mut bad = episode("sess_1", None, "hello", "2026-01-02T10:00:00Z");
    if let SourceDoc::Episode(e) = &mut bad.doc {
        e.metadata = "[1, 2]".into();
    }
    let d = ledger.apply(&IntentRecord {
        timestamp: T0,
        partition: None,
        offset: None,
        intent: intent_for(A, bad, None),
    });
    assert_eq!(d.outcome(), Outcome::Rejected);
    assert_eq!(d.receipt.code.as_deref(), Some("bad_source_doc"));
    // A timestamp that is not a time never becomes an episode.
    let env: SourceEnvelope = serde_json::from_value(json!({
        "session_id": "sess_1", "content": "x", "producer": "a", "produced_for": "b",
        "timestamp": "yesterday", "role": "user"
    }))
    .unwrap();
    assert!(env.op(SourceKind::Episodes).is_err());
}
