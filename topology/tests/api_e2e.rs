//! The read API end to end on the in-process broker: intents in over `POST /v1/intents`,
//! the view sink folds the outbox, and profile, playbook, timeline and export answer —
//! including after an amendment (old value gone from the profile, present in history) and a
//! purge (gone everywhere, history erased, point deleted, erased from every local store's
//! files). search_knowledge finds handles
//! through the embedded Qdrant engine. Access: another principal of the tenant gets the
//! uniform `unavailable` and no search hits, another tenant is refused, a bad token is 401.

mod common;

use std::time::{Duration, Instant};

use common::*;
use kledger_processors::access::Principal;
use kledger_schemas::*;
use kledger_testkit::build::{
    amend, document, fact, intent, purge, slotted, target_ref, third_party,
};
use kledger_topology::app;
use kledger_topology::config::PrincipalConfig;
use serde_json::Value;

const ACCT: &str = "t_acme/user/u_1";
const ALICE: &str = "alice-token-0123456789";
const BOB: &str = "bob-token-0123456789ab";
const INGEST: &str = "ingest-token-0123456789cd";

fn principal(token: &str, owner_kind: OwnerKind, owner_id: &str) -> PrincipalConfig {
    PrincipalConfig {
        token: token.into(),
        principal: Principal {
            tenant_id: "t_acme".into(),
            team_id: Some("team_other".into()),
            agent_id: Some("agt_bob".into()),
            roles: Vec::new(),
            owner_kind,
            owner_id: owner_id.into(),
        },
    }
}

fn http(port: u16, method: &str, path: &str, token: &str, body: &str) -> (u16, String) {
    let auth = format!("Bearer {token}");
    http_request(
        port,
        method,
        path,
        &[
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
        ],
        body,
    )
}

fn json(port: u16, path: &str, token: &str) -> (u16, Value) {
    let (status, body) = http(port, "GET", path, token, "");
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// Posts an intent and waits for its receipt; returns the receipt.
fn post(port: u16, i: &Intent) -> Value {
    let (status, body) = http(
        port,
        "POST",
        "/v1/intents?wait_ms=30000",
        ALICE,
        &serde_json::to_string(i).unwrap(),
    );
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["receipt"]["outcome"], "committed", "{v}");
    v["receipt"].clone()
}

/// Waits until the view store folded `seq` commits of the account.
fn wait_seq(port: u16, seq: i64, running: &app::Running) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        assert!(!running.finished(), "a runtime thread stopped");
        let (status, v) = json(port, "/v1/profile", ALICE);
        if status == 200 && v["commit_seq"] == seq {
            return v;
        }
        assert!(Instant::now() < deadline, "view not at {seq}: {v}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A fact that expires two seconds from now is purged by the intent the view sink publishes
/// (its sweep runs every 500 ms here): its purge receipt names one row, and the fact is in no
/// read.
fn expiry_purges_the_row(port: u16) {
    let now = kledger_topology::serve::api::now_ms();
    let op = AssertOp {
        expires_at: Some(now + 2_000),
        ..fact("Parked on level 3 today")
    };
    let receipt = post(
        port,
        &intent(
            ACCT,
            "parking",
            WriteReason::DirectUserStatement,
            0,
            vec![Op::Assert(op)],
        ),
    );
    let id = receipt["memory_ids"][0].as_str().unwrap().to_owned();
    let purge = format!("/v1/purges/ttl_{id}_r1");
    let deadline = Instant::now() + Duration::from_secs(60);
    let v = loop {
        let (status, v) = json(port, &purge, ALICE);
        // Erased from this host's copies (the topics' copies go with their retention).
        let erased = |copy: &str| {
            v["copies"].as_array().is_some_and(|c| {
                c.iter()
                    .any(|c| c["copy"] == copy && c["state"] == "erased")
            })
        };
        if status == 200 && ["ledger", "views", "vectors"].iter().all(|c| erased(c)) {
            break v;
        }
        assert!(Instant::now() < deadline, "not purged: {status} {v}");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(v["rows"], 1, "{v}");
    assert!(
        v["recorded_at"].as_i64().unwrap() >= now + 2_000,
        "purged after its expiry: {v}"
    );
    let (_, export) = http(port, "GET", "/v1/export", ALICE, "");
    assert!(
        !export.contains("Parked on level 3"),
        "expired text in the export"
    );
}

/// Searches as `token`; returns the result handles.
fn search(port: u16, token: &str, body: &str) -> Vec<Value> {
    let (status, text) = http(port, "POST", "/v1/search", token, body);
    assert_eq!(status, 200, "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    v["results"].as_array().unwrap().clone()
}

/// Waits until a search for `query` finds (or no longer finds) `content`: the vector sink
/// runs beside the view sink.
fn wait_search(port: u16, query: &str, content: &str, present: bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let hits = search(port, ALICE, &format!("{{\"query\": \"{query}\"}}"));
        if hits.iter().any(|h| h["content"] == content) == present {
            return hits;
        }
        assert!(Instant::now() < deadline, "search {query:?}: {hits:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn timeline_ids(port: u16, query: &str) -> Vec<String> {
    let (status, v) = json(port, &format!("/v1/entities/user/timeline{query}"), ALICE);
    assert_eq!(status, 200, "{v}");
    v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["memory_id"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn intents_in_reads_out_through_amendment_and_purge() {
    let b = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&b.bootstrap, dir.path(), 4, "api-e2e");
    c.policy.ttl.purge = true;
    c.policy.ttl.sweep_interval_ms = 500;
    let port = kledger_topology::kafka::embedded::free_port().unwrap();
    c.http.listen = format!("127.0.0.1:{port}");
    c.api
        .principals
        .insert("alice".into(), principal(ALICE, OwnerKind::User, "u_1"));
    c.api
        .principals
        .insert("bob".into(), principal(BOB, OwnerKind::Agent, "agt_bob"));
    let mut ingest = principal(INGEST, OwnerKind::Agent, "agt_extractor");
    ingest.principal.roles = vec!["role_ingest".into()];
    c.api.principals.insert("ingest".into(), ingest);
    create_topics(&b, &c);
    let running = b.rt.block_on(app::start(c.clone())).unwrap();
    let running = Guard(Some(running), &b);
    // Reads wait for this host's replica to catch up (`503 not_ready` until then), as a load
    // balancer's health check does.
    let deadline = Instant::now() + Duration::from_secs(60);
    while get(port, "/readyz").map(|(s, _)| s) != Some(200) {
        let (status, v) = json(port, "/v1/profile", ALICE);
        assert!(
            status == 503 && v["error"]["code"] == "not_ready" || status == 200,
            "{status} {v}"
        );
        assert!(Instant::now() < deadline, "never ready");
        std::thread::sleep(Duration::from_millis(50));
    }

    // A request without a valid token is answered before its body is read: a 1 MiB body
    // announced and never sent is 401 at once (not 408 after the body timeout).
    {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let started = Instant::now();
        s.write_all(
            b"POST /v1/intents HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer not-a-token-0123456789\r\nContent-Length: 1048576\r\n\r\n",
        )
        .unwrap();
        let mut buf = [0u8; 64];
        let n = s.read(&mut buf).unwrap();
        let head = String::from_utf8_lossy(&buf[..n]).into_owned();
        assert!(head.starts_with("HTTP/1.1 401"), "{head}");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{:?}",
            started.elapsed()
        );
    }
    // Purging another account takes role_privacy, role_ingest is not enough.
    {
        let row_less = intent(
            ACCT,
            "ingest-purge",
            WriteReason::DirectUserStatement,
            0,
            vec![Op::Purge(PurgeOp {
                target: None,
                entity_id: None,
                whole_account: true,
                reason: "asked".into(),
            })],
        );
        let (status, body) = http(
            port,
            "POST",
            "/v1/intents",
            INGEST,
            &serde_json::to_string(&row_less).unwrap(),
        );
        assert_eq!(status, 403, "{body}");
        assert!(body.contains("purge_forbidden"), "{body}");
    }

    // Access before anything: bad token, foreign tenant, bad input.
    assert_eq!(json(port, "/v1/profile", "wrong-token-0123456789").0, 401);
    assert_eq!(
        json(port, "/v1/profile?account=t_other/user/u_1", ALICE).0,
        403
    );
    let (status, v) = json(port, "/v1/entities/user/timeline?limit=41", ALICE);
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (400, Some("bad_limit"))
    );
    let mut invalid = intent(ACCT, "bad", WriteReason::DirectUserStatement, 0, vec![]);
    invalid.ops.clear();
    let (status, body) = http(
        port,
        "POST",
        "/v1/intents",
        ALICE,
        &serde_json::to_string(&invalid).unwrap(),
    );
    assert_eq!(status, 422, "{body}");
    assert!(body.contains("\"no_ops\""), "{body}");
    let other = intent(
        "t_acme/user/u_2",
        "x",
        WriteReason::DirectUserStatement,
        0,
        vec![Op::Assert(slotted("home_city", "Oslo"))],
    );
    let (status, _) = http(
        port,
        "POST",
        "/v1/intents",
        ALICE,
        &serde_json::to_string(&other).unwrap(),
    );
    assert_eq!(status, 403);

    // Three writes: a slotted fact, a playbook, a third-party fact.
    let u = WriteReason::DirectUserStatement;
    post(
        port,
        &intent(
            ACCT,
            "a1",
            u,
            0,
            vec![Op::Assert(slotted("home_city", "Lives in Lisbon"))],
        ),
    );
    post(
        port,
        &intent(
            ACCT,
            "a2",
            WriteReason::RecurringWorkflow,
            1,
            vec![Op::Assert(document(
                "Weekly report for the data team",
                "1. pull numbers\n2. write",
            ))],
        ),
    );
    post(
        port,
        &intent(
            ACCT,
            "a3",
            u,
            2,
            vec![Op::Assert(third_party("person_anna", "Anna lives in Oslo"))],
        ),
    );
    let v = wait_seq(port, 3, &running);
    assert_eq!(v["profile"], "- home_city: Lives in Lisbon", "{v}");
    let index = v["playbook_index"].as_str().unwrap().to_owned();
    let playbook_id = index.split(':').next().unwrap().to_owned();
    assert!(
        index.ends_with(": Weekly report for the data team"),
        "{index}"
    );

    // search_knowledge: handles only, owner-scoped, kinds filter, bounded input.
    let hits = wait_search(
        port,
        "where does the user live? Lisbon",
        "Lives in Lisbon",
        true,
    );
    let lisbon = hits
        .iter()
        .find(|h| h["content"] == "Lives in Lisbon")
        .unwrap();
    assert_eq!(
        (lisbon["kind"].as_str(), lisbon["slot"].as_str()),
        (Some("fact"), Some("home_city"))
    );
    assert!(
        hits.iter()
            .all(|h| h.get("body").is_none() && h.get("condition").is_none())
    );
    let docs = search(
        port,
        ALICE,
        r#"{"query": "weekly report", "kinds": ["document"]}"#,
    );
    assert_eq!(docs.len(), 1, "{docs:?}");
    assert_eq!(docs[0]["content"], "Weekly report for the data team");
    assert!(
        search(
            port,
            BOB,
            &format!(r#"{{"query": "Lisbon", "account": "{ACCT}"}}"#)
        )
        .is_empty(),
        "private rows are not bob's"
    );
    let long = "x".repeat(501);
    let (status, body) = http(
        port,
        "POST",
        "/v1/search",
        ALICE,
        &format!(r#"{{"query": "{long}"}}"#),
    );
    assert_eq!(status, 400, "{body}");
    let (status, _) = http(
        port,
        "POST",
        "/v1/search",
        ALICE,
        r#"{"query": "a", "limit": 21}"#,
    );
    assert_eq!(status, 400);

    // read_playbook: the owner reads it; missing, foreign and unreadable ids all look alike.
    let (status, pb) = json(port, &format!("/v1/playbooks/{playbook_id}"), ALICE);
    assert_eq!(
        (status, pb["body"].as_str()),
        (200, Some("1. pull numbers\n2. write"))
    );
    let unavailable = json(port, "/v1/playbooks/mem_01JH0000000000000000000000", ALICE);
    assert_eq!(unavailable.0, 404);
    let foreign = json(
        port,
        &format!("/v1/playbooks/{playbook_id}?account={ACCT}"),
        BOB,
    );
    assert_eq!(
        foreign, unavailable,
        "a private playbook is unavailable to another principal"
    );
    assert_eq!(
        json(port, &format!("/v1/playbooks/{playbook_id}"), BOB),
        unavailable
    );
    let (_, bob_profile) = json(port, &format!("/v1/profile?account={ACCT}"), BOB);
    assert_eq!(bob_profile["profile"], "", "private rows are not bob's");
    // No count oracle: another principal learns neither how many commits nor whether a cap cut.
    assert!(bob_profile.get("commit_seq").is_none(), "{bob_profile}");
    assert!(bob_profile.get("capped").is_none(), "{bob_profile}");
    let (_, own) = json(port, "/v1/profile", ALICE);
    assert!(
        own["commit_seq"].is_i64() && own["capped"] == false,
        "{own}"
    );

    // Timelines: the user's and Anna's.
    let user_ids = timeline_ids(port, "");
    assert_eq!(user_ids.len(), 2, "{user_ids:?}");
    let (_, anna) = json(port, "/v1/entities/person_anna/timeline", ALICE);
    assert_eq!(anna["items"][0]["content"], "Anna lives in Oslo");
    assert!(anna["items"][0].get("body").is_none());

    // Amendment: the old value leaves the profile and the default timeline, stays in history.
    let (_, tl) = json(port, "/v1/entities/user/timeline", ALICE);
    let lisbon_id = tl["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["slot"] == "home_city")
        .unwrap()["memory_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let lisbon_row: Row = {
        let (_, body) = http(port, "GET", "/v1/export", ALICE, "");
        body.lines()
            .map(|l| serde_json::from_str::<Row>(l).unwrap())
            .find(|r| r.memory_id == lisbon_id)
            .unwrap()
    };
    let mut i = intent(
        ACCT,
        "a4",
        u,
        3,
        vec![amend(
            &[&lisbon_row],
            slotted("home_city", "Lives in Porto"),
        )],
    );
    i.planned_against.targets.push(target_ref(&lisbon_row));
    post(port, &i);
    let v = wait_seq(port, 4, &running);
    assert_eq!(v["profile"], "- home_city: Lives in Porto", "{v}");
    assert!(!timeline_ids(port, "").contains(&lisbon_id));
    assert!(timeline_ids(port, "?history=true").contains(&lisbon_id));
    wait_search(port, "Porto", "Lives in Porto", true);
    let hits = wait_search(port, "Lisbon", "Lives in Lisbon", false);
    assert!(
        hits.iter().all(|h| h["content"] != "Lives in Lisbon"),
        "superseded rows leave default search"
    );
    let porto_id = timeline_ids(port, "")
        .into_iter()
        .find(|id| *id != lisbon_id && *id != playbook_id)
        .unwrap();

    // Purge: gone from the profile, every timeline and the export's content.
    let (_, body) = http(port, "GET", "/v1/export", ALICE, "");
    let porto_row: Row = body
        .lines()
        .map(|l| serde_json::from_str::<Row>(l).unwrap())
        .find(|r| r.memory_id == porto_id && r.status == Status::Active)
        .unwrap();
    // Rules v4: the row's content is sealed under its data key, in every local store.
    assert!(
        kledger_testkit::residue::files_containing(dir.path(), b"Lives in Porto").is_empty(),
        "the text is on disk in the clear before the purge"
    );
    let mut i = intent(ACCT, "a5", u, 4, vec![purge(&porto_row, "user asked")]);
    i.planned_against.targets.push(target_ref(&porto_row));
    post(port, &i);
    let v = wait_seq(port, 5, &running);
    assert_eq!(v["profile"], "", "{v}");
    assert!(!timeline_ids(port, "?history=true&audit=true").contains(&porto_id));
    wait_search(port, "Porto", "Lives in Porto", false);
    // The purged row's point is deleted from the index (not only filtered out).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, metrics) = http(port, "GET", "/metrics", ALICE, "");
        let deleted = metrics
            .lines()
            .find(|l| l.starts_with("kledger_vector_points_total{op=\"delete\"}"))
            .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok());
        if deleted.is_some_and(|d| d >= 1.0) {
            break;
        }
        assert!(Instant::now() < deadline, "no point deleted: {deleted:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Each local store ran its erasure for the purge, and no file under the data directories
    // (state, view store, marks, vector engine) holds the purged text.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, metrics) = http(port, "GET", "/metrics", ALICE, "");
        let erased = |store: &str| {
            metrics
                .lines()
                .find(|l| {
                    l.starts_with(&format!(
                        "kledger_store_erasures_total{{store=\"{store}\"}}"
                    ))
                })
                .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .is_some_and(|n| n >= 1.0)
        };
        if ["state", "views", "vectors"].iter().all(|s| erased(s)) {
            break;
        }
        assert!(Instant::now() < deadline, "erasures not run:\n{metrics}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let left = kledger_testkit::residue::files_containing(dir.path(), b"Lives in Porto");
    assert!(left.is_empty(), "the purged text is still in {left:?}");
    let (status, export) = http(port, "GET", "/v1/export", ALICE, "");
    assert_eq!(status, 200);
    assert!(
        !export.contains("Porto"),
        "purged content left in the export"
    );
    assert!(
        export.contains("Lives in Lisbon"),
        "history of other rows is kept"
    );
    assert_eq!(
        http(port, "GET", &format!("/v1/export?account={ACCT}"), BOB, "").0,
        403
    );
    let (status, own) = http(port, "GET", "/v1/export", BOB, "");
    assert_eq!(
        (status, own.as_str()),
        (200, ""),
        "bob's own ledger is empty"
    );
    semantic_features_with_episodic_evidence(port, &running);
    let (status, doc) = json(port, "/v1/openapi.json", ALICE);
    assert_eq!((status, doc["openapi"].as_str()), (200, Some("3.1.0")));

    // A second purge soon after the first (the erasure interval holds its run back), then a
    // clean stop 3 s later: no field the vector engine keeps of the purged point (its tags are
    // in the payload in the clear) is left in any file (issue 45).
    const TAG: &str = "zqxmarkertag7711";
    let mut tagged = fact("Keeps a marked fact");
    tagged.tags = vec![TAG.to_owned()];
    post(
        port,
        &intent(ACCT, "a-tagged", u, 5, vec![Op::Assert(tagged)]),
    );
    wait_seq(port, 6, &running);
    let deadline = Instant::now() + Duration::from_secs(60);
    while kledger_testkit::residue::files_containing(&dir.path().join("vectors"), TAG.as_bytes())
        .is_empty()
    {
        assert!(
            Instant::now() < deadline,
            "the tag never reached the vector engine's files: the check could not fail"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let (_, body) = http(port, "GET", "/v1/export", ALICE, "");
    let tagged_row: Row = body
        .lines()
        .map(|l| serde_json::from_str::<Row>(l).unwrap())
        .find(|r| r.content == "Keeps a marked fact" && r.status == Status::Active)
        .unwrap();
    let mut i = intent(
        ACCT,
        "a-tagged-purge",
        u,
        6,
        vec![purge(&tagged_row, "user asked")],
    );
    i.planned_against.targets.push(target_ref(&tagged_row));
    post(port, &i);
    wait_seq(port, 7, &running);
    // The vector sink has folded the purge: a search given its token answers.
    let (status, body) = http(
        port,
        "POST",
        "/v1/search",
        ALICE,
        r#"{"query": "Keeps a marked fact", "min_commit_seq": 7, "wait_ms": 30000}"#,
    );
    assert_eq!(
        status, 200,
        "the vector sink did not fold the purge: {body}"
    );
    expiry_purges_the_row(port);
    std::thread::sleep(Duration::from_secs(3));
    let r = running.take();
    b.rt.block_on(r.stop()).unwrap();
    let left = kledger_testkit::residue::files_containing(dir.path(), TAG.as_bytes());
    assert!(
        left.is_empty(),
        "the purged point's tag is still in {left:?}"
    );
}

/// MemMachine interop: a fact whose evidence is an episodic message (posted as JSON), then the
/// current rows as semantic features, filtered by session, category and org.
fn semantic_features_with_episodic_evidence(port: u16, running: &app::Running) {
    let fact = fact("Prefers green tea");
    let i = intent(
        ACCT,
        "a6",
        WriteReason::DirectUserStatement,
        5,
        vec![Op::Assert(fact)],
    );
    let mut v = serde_json::to_value(&i).unwrap();
    v["ops"][0]["evidence"] = serde_json::json!([{
        "episodic_message": {
            "content": "I always drink green tea in the morning",
            "producer": "u_1",
            "produced_for": "agt_helper",
            "timestamp": "2026-01-26T12:00:00Z",
            "role": "user",
            "metadata": {"message_id": "msg_0042"}
        },
        "session_id": "sess_9"
    }]);
    let (status, body) = http(
        port,
        "POST",
        "/v1/intents?wait_ms=30000",
        ALICE,
        &v.to_string(),
    );
    assert_eq!(status, 200, "{body}");
    wait_seq(port, 6, running);

    let features = |query: &str, token: &str| -> Vec<Value> {
        let (status, v) = json(port, &format!("/v1/semantic/features{query}"), token);
        assert_eq!(status, 200, "{query}: {v}");
        v["features"].as_array().unwrap().clone()
    };
    let all = features("", ALICE);
    let cats: Vec<&str> = all
        .iter()
        .map(|f| f["category_id"].as_str().unwrap())
        .collect();
    assert_eq!(cats, ["document", "fact", "fact"], "{all:?}");
    assert!(all.iter().all(|f| {
        let id = f["id"].as_str().unwrap();
        id.len() == 36 && id.matches('-').count() == 4
    }));
    let text = serde_json::to_string(&all).unwrap();
    assert!(!text.contains("pull numbers"), "no playbook bodies");
    assert!(
        !text.contains("Lives in"),
        "superseded and purged rows are not current"
    );
    let tea = features("?session_id=sess_9", ALICE);
    assert_eq!(tea.len(), 1, "{tea:?}");
    assert_eq!(tea[0]["value"], "Prefers green tea");
    let ev = &tea[0]["metadata"]["provenance"]["evidence"][0];
    assert_eq!(
        (ev["source_type"].as_str(), ev["message_id"].as_str()),
        (Some("episodic_message"), Some("msg_0042"))
    );
    assert_eq!(ev["heading"], "user:u_1->agt_helper");
    assert_eq!(tea[0]["metadata"]["write_reason"], "direct_user_statement");
    assert_eq!(features("?category_id=document", ALICE).len(), 1);
    assert!(features("?org_id=t_other", ALICE).is_empty());
    assert_eq!(features("?org_id=t_acme", ALICE).len(), 3);
    assert!(features("?session_id=nope", ALICE).is_empty());
    assert!(
        features(&format!("?account={ACCT}"), BOB).is_empty(),
        "private rows are not bob's"
    );
    let (status, v) = json(port, "/v1/semantic/features?limit=201", ALICE);
    assert_eq!(
        (status, v["error"]["code"].as_str()),
        (400, Some("bad_limit"))
    );
}

/// Stops the runtime when the test fails, showing why a thread stopped.
struct Guard<'a>(Option<app::Running>, &'a TestBroker);

impl Guard<'_> {
    fn take(mut self) -> app::Running {
        self.0.take().unwrap()
    }
}

impl std::ops::Deref for Guard<'_> {
    type Target = app::Running;
    fn deref(&self) -> &app::Running {
        self.0.as_ref().unwrap()
    }
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        if let Some(r) = self.0.take() {
            let result = self.1.rt.block_on(r.stop());
            eprintln!("runtime stopped: {result:?}");
        }
    }
}

/// librdkafka threads of this process (each client has its own: `rdk:main`, `rdk:broker…`).
fn rdkafka_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .map(|tasks| {
            tasks
                .filter_map(Result::ok)
                .filter(|t| {
                    std::fs::read_to_string(t.path().join("comm"))
                        .is_ok_and(|c| c.starts_with("rdk:"))
                })
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn forty_concurrent_ingress_waits_share_one_receipts_reader_and_exports_are_capped() {
    let b = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&b.bootstrap, dir.path(), 4, "api-waits");
    c.vectors.enabled = false;
    c.api.exports_max = 1;
    // One principal's 40 waits at once (each principal may hold 32 by default).
    c.api.waits_per_principal_max = 40;
    let port = kledger_topology::kafka::embedded::free_port().unwrap();
    c.http.listen = format!("127.0.0.1:{port}");
    c.api
        .principals
        .insert("alice".into(), principal(ALICE, OwnerKind::User, "u_1"));
    create_topics(&b, &c);
    let running = b.rt.block_on(app::start(c.clone())).unwrap();
    let running = Guard(Some(running), &b);
    // The first wait starts the shared reader; measure from there.
    post(
        port,
        &intent(
            ACCT,
            "warm",
            WriteReason::DirectUserStatement,
            0,
            vec![Op::Assert(fact("Warm-up fact"))],
        ),
    );
    let before = rdkafka_threads();
    let peak = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(before));
    let clients: Vec<_> = (0..40)
        .map(|i| {
            std::thread::spawn(move || {
                let it = intent(
                    ACCT,
                    &format!("wait-{i}"),
                    WriteReason::DirectUserStatement,
                    0,
                    vec![Op::Assert(fact(&format!("Concurrent fact {i}")))],
                );
                http(
                    port,
                    "POST",
                    "/v1/intents?wait_ms=20000",
                    ALICE,
                    &serde_json::to_string(&it).unwrap(),
                )
            })
        })
        .collect();
    let sampler = {
        let peak = peak.clone();
        std::thread::spawn(move || {
            for _ in 0..40 {
                peak.fetch_max(rdkafka_threads(), std::sync::atomic::Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    for c in clients {
        let (status, body) = c.join().unwrap();
        assert_eq!(status, 200, "{body}");
        let v: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(v["receipt"]["outcome"], "committed", "{v}");
    }
    sampler.join().unwrap();
    let peak = peak.load(std::sync::atomic::Ordering::Relaxed);
    assert!(
        peak <= before + 2,
        "40 waits added librdkafka threads: {before} before, {peak} at the peak"
    );
    // Exports: a ledger of ~12 MB, streamed to a client that does not read; it holds the one
    // export permit (`api.exports_max = 1`) while its stream waits, so a second export is 429,
    // and once the first client goes away the permit comes back.
    let rows: Vec<IntentRecord> = (0..3_000)
        .map(|i| IntentRecord {
            timestamp: 1_767_225_600_000 + i,
            partition: None,
            offset: None,
            intent: intent(
                ACCT,
                &format!("bulk-{i}"),
                WriteReason::DirectUserStatement,
                0,
                vec![Op::Assert(fact(&format!("{i} {}", "x".repeat(3_000))))],
            ),
        })
        .collect();
    publish_all(&c, &rows);
    wait_seq(port, 3_041, &running);
    let first = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    {
        use std::io::Write;
        let mut w = &first;
        write!(
            w,
            "GET /v1/export HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {ALICE}\r\n\r\n"
        )
        .unwrap();
    }
    std::thread::sleep(Duration::from_millis(500));
    let (status, body) = http(port, "GET", "/v1/export", ALICE, "");
    assert_eq!(status, 429, "a second export while the first waits: {body}");
    assert!(body.contains("too_many_exports"), "{body}");
    drop(first);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = http(port, "GET", "/v1/export", ALICE, "");
        if status == 200 {
            assert_eq!(body.lines().count(), 3_041, "every version, streamed");
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the permit never came back: {status}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    running.take();
}
