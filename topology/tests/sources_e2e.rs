//! Source documents end to end on the in-process broker: people and conversations published
//! with `kledger publish --kind` (the binary), calendar events and screen spans posted to
//! `POST /v1/sources/{kind}`; the timeline over HTTP joins them to a person by alias, merges
//! them with the ledger's rows and keeps every excluded text back; a purge of the person
//! reaches every source, and its receipt names them.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use kledger_processors::access::Principal;
use kledger_schemas::*;
use kledger_testkit::build::{intent, third_party};
use kledger_topology::app;
use kledger_topology::config::PrincipalConfig;
use serde_json::{Value, json};

const ACCT: &str = "t_acme/user/u_1";
const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789ab";
const T0: i64 = 1_767_225_600_000;
const HOUR: i64 = 3_600_000;

fn principal(token: &str, owner_id: &str) -> PrincipalConfig {
    PrincipalConfig {
        token: token.into(),
        principal: Principal {
            tenant_id: "t_acme".into(),
            team_id: None,
            agent_id: None,
            roles: Vec::new(),
            owner_kind: OwnerKind::User,
            owner_id: owner_id.into(),
        },
    }
}

fn http(port: u16, method: &str, path: &str, token: &str, body: &str) -> (u16, Value) {
    let auth = format!("Bearer {token}");
    let (status, body) = http_request(
        port,
        method,
        path,
        &[
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
        ],
        body,
    );
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// Polls `path` as Alice until `done` holds of its answer (60 s at most).
fn until(port: u16, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    until_as(port, ALICE, path, done)
}

/// Polls `path` with `token` until `done` holds of its answer (60 s at most).
fn until_as(port: u16, token: &str, path: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, v) = http(port, "GET", path, token, "");
        if status == 200 && done(&v) {
            return v;
        }
        assert!(Instant::now() < deadline, "{path}: {status} {v}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn sources_of(v: &Value) -> Vec<&str> {
    v["items"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| i["source"].as_str())
        .collect()
}

struct Guard<'a>(Option<app::Running>, &'a TestBroker);

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        if let Some(r) = self.0.take() {
            let _ = self.1.rt.block_on(r.stop());
        }
    }
}

#[test]
fn sources_in_timeline_out_and_purged_everywhere() {
    let b = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&b.bootstrap, dir.path(), 4, "sources-e2e");
    c.vectors.enabled = false;
    let port = kledger_topology::kafka::embedded::free_port().unwrap();
    c.http.listen = format!("127.0.0.1:{port}");
    c.api
        .principals
        .insert("alice".into(), principal(ALICE, "u_1"));
    c.api.principals.insert("bob".into(), principal(BOB, "u_2"));
    create_topics(&b, &c);
    let running = Guard(Some(b.rt.block_on(app::start(c.clone())).unwrap()), &b);
    let deadline = Instant::now() + Duration::from_secs(60);
    while get(port, "/readyz").map(|(s, _)| s) != Some(200) {
        assert!(Instant::now() < deadline, "never ready");
        std::thread::sleep(Duration::from_millis(50));
    }

    // People and conversations from JSON lines, through the binary's `publish --kind`.
    let publish = |kind: &str, lines: &[Value]| {
        let file = dir.path().join(format!("{kind}.jsonl"));
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(&file, text).unwrap();
        let out = Command::new(env!("CARGO_BIN_EXE_kledger"))
            .args(["publish", "--kind", kind, "--quiet", "--input"])
            .arg(&file)
            .envs(child_env(&c, "127.0.0.1:0"))
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{err}");
        err
    };
    let said = publish(
        "people",
        &[
            json!({"account_id": ACCT, "timestamp": T0, "person_id": "person:ana",
                   "names": ["Ana"], "emails": ["ana@example.com"]}),
            json!({"account_id": ACCT, "timestamp": T0, "person_id": "person:zoe", "names": ["Zoe"]}),
            json!({"account_id": ACCT, "person_id": "person:bad", "nicknames": ["x"]}),
        ],
    );
    assert!(said.contains("2 published, 1 invalid"), "{said}");
    intake_forwards_once_and_dead_letters(&b, &c, &publish);
    publish(
        "conversation",
        &[
            json!({"account_id": ACCT, "timestamp": T0 + 1, "conversation_id": "conv_1",
                 "started_at": T0 + HOUR, "ended_at": T0 + 2 * HOUR,
                 "summary": "Planned the Lisbon trip", "participant_ids": ["person:ana"],
                 "segments": [{"start_ms": T0 + HOUR, "end_ms": T0 + HOUR + 5_000,
                               "speaker_id": "person:ana", "text": "TRANSCRIPT-SECRET"}]}),
        ],
    );
    // Calendar and screen over HTTP.
    let (status, v) = http(
        port,
        "POST",
        "/v1/sources/calendar?wait_ms=30000",
        ALICE,
        &json!({"event_id": "ev_1", "start": T0 + 3 * HOUR, "end": T0 + 4 * HOUR,
                "title": "Contract review", "attendee_ids": ["person:ana", "person:kim"],
                "notes": "NOTES-SECRET"})
        .to_string(),
    );
    assert_eq!(
        (status, v["receipt"]["outcome"].as_str()),
        (200, Some("committed")),
        "{v}"
    );
    let (status, v) = http(
        port,
        "POST",
        "/v1/sources/screen?wait_ms=30000",
        ALICE,
        &json!({"span_id": "span_1", "start": T0 + 5 * HOUR, "end": T0 + 5 * HOUR + 60_000,
                "app": "Mail", "window_title": "Re: the contract", "person_ids": ["person:ana"],
                "ocr_text": "OCR-SECRET"})
        .to_string(),
    );
    assert_eq!(v["receipt"]["outcome"], "committed", "{status} {v}");
    // Bad documents and kinds have stable codes; another owner's account is not writable.
    let (status, v) = http(
        port,
        "POST",
        "/v1/sources/screen",
        ALICE,
        &json!({"span_id": "span 2", "start": 1, "end": 2, "app": "Mail", "window_title": "x"})
            .to_string(),
    );
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (422, Some("bad_source_doc"))
    );
    let (status, v) = http(port, "POST", "/v1/sources/email", ALICE, "{}");
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (400, Some("bad_source_kind"))
    );
    let (status, _) = http(
        port,
        "POST",
        &format!("/v1/sources/people?account={ACCT}"),
        BOB,
        &json!({"person_id": "person:eve", "names": ["Eve"]}).to_string(),
    );
    assert_eq!(status, 403);
    // And a ledger fact about Ana.
    let mut fact = third_party("person:ana", "Ana prefers mornings");
    fact.valid_from = Some(T0);
    let (status, v) = http(
        port,
        "POST",
        "/v1/intents?wait_ms=30000",
        ALICE,
        &serde_json::to_string(&intent(
            ACCT,
            "fact-ana",
            WriteReason::DirectUserStatement,
            0,
            vec![Op::Assert(fact)],
        ))
        .unwrap(),
    );
    assert_eq!(v["receipt"]["outcome"], "committed", "{status} {v}");

    // The timeline by alias, every source: merged in time order, nothing excluded shown.
    let path = "/v1/entities/ana@example.com/timeline?sources=ledger,conversations,calendar,screen";
    let v = until(port, path, |v| sources_of(v).len() == 4);
    assert_eq!(
        sources_of(&v),
        ["ledger", "conversations", "calendar", "screen"]
    );
    assert_eq!(v["person"]["person_id"], "person:ana", "{v}");
    assert_eq!(v["person"]["by"], "alias", "{v}");
    assert!(
        v["sources"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["state"] == "available"),
        "{v}"
    );
    let text = v.to_string();
    for secret in [
        "TRANSCRIPT-SECRET",
        "NOTES-SECRET",
        "OCR-SECRET",
        "person:kim",
        "\"Ana\"",
    ] {
        assert!(!text.contains(secret), "{secret} in {text}");
    }
    // The default reads the ledger alone; another principal of the tenant resolves nobody.
    let v = until(port, "/v1/entities/person:ana/timeline", |_| true);
    assert_eq!(sources_of(&v), ["ledger"]);
    let (_, v) = http(
        port,
        "GET",
        &format!("/v1/entities/Ana/timeline?sources=conversations&account={ACCT}"),
        BOB,
        "",
    );
    assert_eq!(v["person"]["reason"], "unresolved", "{v}");
    assert!(v["items"].as_array().unwrap().is_empty(), "{v}");

    // Purge the person: every source's documents about her go, and the receipt names them.
    let purge = intent(
        ACCT,
        "purge-ana",
        WriteReason::DirectUserStatement,
        0,
        vec![Op::Purge(PurgeOp {
            entity_id: Some("person:ana".into()),
            reason: "erasure request".into(),
            ..PurgeOp::default()
        })],
    );
    let (status, v) = http(
        port,
        "POST",
        "/v1/intents?wait_ms=30000",
        ALICE,
        &serde_json::to_string(&purge).unwrap(),
    );
    assert_eq!(v["receipt"]["outcome"], "committed", "{status} {v}");
    let v = until(
        port,
        "/v1/entities/person:ana/timeline?sources=ledger,conversations,calendar,screen",
        |v| v["items"].as_array().is_some_and(Vec::is_empty),
    );
    assert_eq!(v["person"]["state"], "unavailable", "{v}");
    let v = until(port, "/v1/purges/purge-ana", |v| {
        v["sources"].as_array().is_some_and(|s| s.len() == 4)
    });
    let named: Vec<(&str, i64)> = v["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["source"].as_str().unwrap(), s["rows"].as_i64().unwrap()))
        .collect();
    assert_eq!(
        named,
        [
            ("people", 1),
            ("conversations", 1),
            ("calendar", 1),
            ("screen", 1)
        ]
    );
    assert_eq!(v["rows"], 1, "the ledger's own row: {v}");
    assert!(
        v["copies"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["copy"] == "sources"),
        "{v}"
    );
    // Zoe is untouched.
    let v = until(port, "/v1/entities/Zoe/timeline?sources=calendar", |_| true);
    assert_eq!(v["person"]["person_id"], "person:zoe", "{v}");
    drop(running);
}

/// The people documents just published reach the ledger through the intake; published again,
/// each is forwarded as the same intent (the processor answers `duplicate`); a record of
/// another schema, or not Avro at all, on the people topic is dead-lettered with its code and
/// where it was read.
fn intake_forwards_once_and_dead_letters(
    b: &TestBroker,
    c: &kledger_topology::config::Config,
    publish: &dyn Fn(&str, &[Value]) -> String,
) {
    let t = c.topics();
    let people = t.source(SourceKind::People).to_owned();
    let lines = [
        json!({"account_id": ACCT, "timestamp": T0, "person_id": "person:ana",
               "names": ["Ana"], "emails": ["ana@example.com"]}),
        json!({"account_id": ACCT, "timestamp": T0, "person_id": "person:zoe", "names": ["Zoe"]}),
    ];
    let outcomes = |want: usize| -> Vec<(String, Outcome)> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let got: Vec<(String, Outcome)> = read_all(&b.bootstrap, &t.receipts, 4)
                .iter()
                .filter_map(|r| {
                    kledger_schemas::avro::decode::<Receipt>(
                        &r.payload,
                        &kledger_schemas::avro::NoRegistry,
                    )
                    .ok()
                })
                .filter(|r| r.action_id.starts_with("src_"))
                .map(|r| (r.action_id, r.outcome))
                .collect();
            if got.len() >= want {
                return got;
            }
            assert!(Instant::now() < deadline, "{got:?}");
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    let first = outcomes(2);
    assert!(
        first.iter().all(|(_, o)| *o == Outcome::Committed),
        "{first:?}"
    );
    assert!(publish("people", &lines).contains("2 published, 0 invalid"));
    let again = outcomes(4);
    let dupes: Vec<&String> = again
        .iter()
        .filter(|(_, o)| *o == Outcome::Duplicate)
        .map(|(a, _)| a)
        .collect();
    let mut firsts: Vec<&String> = first.iter().map(|(a, _)| a).collect();
    firsts.sort();
    let mut dupes_sorted = dupes.clone();
    dupes_sorted.sort();
    assert_eq!(dupes_sorted, firsts, "{again:?}");

    // Not the topic's record: dead letters, with the code and the source position.
    let span = SourceOp {
        doc: SourceDoc::Screen(ScreenDoc {
            span_id: "span_x".into(),
            start: 1,
            end: 2,
            app: "Mail".into(),
            window_title: "x".into(),
            person_ids: Vec::new(),
            ocr_text: None,
        }),
        visibility: Visibility::Private,
        acl: Acl::default(),
    };
    let producer: rdkafka::producer::BaseProducer =
        kledger_topology::kafka::clients::client_at(&b.bootstrap, [])
            .create()
            .unwrap();
    for payload in [b"not avro".to_vec(), encode_source(ACCT, None, &span)] {
        producer
            .send(
                rdkafka::producer::BaseRecord::to(&people)
                    .key(ACCT)
                    .payload(&payload),
            )
            .unwrap();
    }
    rdkafka::producer::Producer::flush(&producer, Duration::from_secs(10)).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let codes = loop {
        let codes: Vec<String> = read_all(&b.bootstrap, &t.deadletter, 4)
            .into_iter()
            .filter(|r| r.headers.get("kledger.source.topic") == Some(&people))
            .map(|r| r.headers["kledger.error.code"].clone())
            .collect();
        if codes.len() >= 2 {
            break codes;
        }
        assert!(Instant::now() < deadline, "{codes:?}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let mut codes = codes;
    codes.sort();
    assert_eq!(codes, ["bad_magic", "schema_mismatch"]);
}

/// The README's example, as it is written there: a fact about Dana and three source
/// documents posted with the demo's token, then Dana's timeline over three sources by alias.
#[test]
fn the_readme_example_shows_one_person_across_three_sources() {
    const DEMO: &str = "demo-token-u-alice-0001";
    let readme = include_str!("../../README.md");
    let b = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&b.bootstrap, dir.path(), 4, "sources-readme");
    c.vectors.enabled = false;
    let port = kledger_topology::kafka::embedded::free_port().unwrap();
    c.http.listen = format!("127.0.0.1:{port}");
    c.api
        .principals
        .insert("demo".into(), principal(DEMO, "u_alice"));
    create_topics(&b, &c);
    let _running = Guard(Some(b.rt.block_on(app::start(c.clone())).unwrap()), &b);
    let deadline = Instant::now() + Duration::from_secs(60);
    while get(port, "/readyz").map(|(s, _)| s) != Some(200) {
        assert!(Instant::now() < deadline, "never ready");
        std::thread::sleep(Duration::from_millis(50));
    }
    let examples = concat!(env!("CARGO_MANIFEST_DIR"), "/../examples/sources");
    for (path, file) in [
        ("intents", "fact.json"),
        ("sources/people", "person.json"),
        ("sources/conversations", "conversation.json"),
        ("sources/calendar", "event.json"),
    ] {
        let line = format!("\"$A/{path}?wait_ms=5000\" -d @examples/sources/{file}");
        assert!(readme.contains(&line), "README lacks {line}");
        let body = std::fs::read_to_string(format!("{examples}/{file}")).unwrap();
        let (status, v) = http(
            port,
            "POST",
            &format!("/v1/{path}?wait_ms=30000"),
            DEMO,
            &body,
        );
        assert_eq!(v["receipt"]["outcome"], "committed", "{file}: {status} {v}");
    }
    let query = "/v1/entities/Dana/timeline?sources=ledger,conversations,calendar";
    assert!(
        readme.contains(&format!("\"$A{}\"", &query[3..])),
        "README lacks the query"
    );
    let v = until_as(port, DEMO, query, |v| sources_of(v).len() == 3);
    let shown: Vec<(&str, &str)> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["source"].as_str().unwrap(),
                i["content"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        shown,
        [
            ("ledger", "Dana leads the Q3 launch"),
            ("conversations", "Planned the Q3 launch review with Dana"),
            ("calendar", "Q3 launch review"),
        ]
    );
    for (source, content) in &shown {
        assert!(
            readme.contains(&format!("\"source\":\"{source}\"")) && readme.contains(content),
            "README does not show {source}: {content}"
        );
    }
    assert_eq!(v["person"]["person_id"], "person_dana", "{v}");
    assert!(
        readme.contains(r#""person":{"state":"resolved","person_id":"person_dana","by":"alias"}"#)
    );
    let text = v.to_string();
    for hidden in [
        "Thursday",
        "burn-down",
        "person_lee",
        "dana@example.com",
        "Dana Park",
    ] {
        assert!(!text.contains(hidden), "{hidden} in {text}");
    }
}
