//! Erasure, end to end (rules v4, crypto-shredding): unique markers sit in every
//! content-bearing field of rows of each kind (fact, document, trigger, evidence with quotes
//! and locators, episodic evidence, a close reason), in three accounts. One account's rows are
//! purged by row and by subject entity, another account is purged whole, the third is never
//! purged; an old owner's second data keys for two purged rows (one written before the purge,
//! one after) are on the keys topic too. Then the documented compaction (`docs/privacy.md`):
//! the intents' retention passes,
//! the embedded broker's maintenance runs, and kledger and the broker stop cleanly. After it no
//! byte under the data directories — the broker's sqlite storage and its log, the state, the
//! view store, the vector sink's marks and engine files, every log — holds a purged marker, its
//! SHA-256 (raw or hex), an episodic message's checksum, or the bytes of a destroyed data key
//! (read off the keys topic before the purges; each marker, checksum and key is first found
//! where it must be, so the checks can fail). The third account's markers are all still
//! readable through the API. `replay verify` and both rebuilds pass after the purges and again
//! after the compaction, the purge receipts (the owner's, and a privacy officer's for the
//! whole-account purge) say complete, and a state restored on a new instance from the topics
//! has the same digest and the same keys as the one that ran.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use kledger_schemas::episodic::{EpisodicEvidence, MemoryMessage, Timestamp};
use kledger_schemas::{AssertOp, Intent, IntentRecord, Op, Outcome, Receipt, WriteReason};
use kledger_state::{RocksConfig, RocksStore, digest, digest_keys};
use kledger_testkit::build::{
    close, document, evidence, fact, intent, purge, third_party, trigger,
};
use kledger_testkit::residue::scan;
use kledger_topology::config::Config;
use kledger_topology::kafka::embedded::free_port;
use sha2::{Digest, Sha256};

const PARTITIONS: i32 = 4;
const A: &str = "t_acme/user/u_shred_a";
const B: &str = "t_acme/user/u_shred_b";
const C: &str = "t_acme/user/u_shred_c";
const TOKEN_A: &str = "token-shred-a-0123456789";
const TOKEN_C: &str = "token-shred-c-0123456789";
/// A principal of the tenant with `role_privacy`: it may read any account's purge receipts.
const TOKEN_PRIVACY: &str = "token-shred-privacy-0123456789";
/// How long the intents topic keeps records here (the default is 7 days).
const RETENTION_MS: i64 = 60_000;

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

fn hex(b: &[u8]) -> String {
    kledger_processors::ids::to_hex(b)
}

/// The marker of one field: `M` and 24 hex digits from the tag and field, unique in the whole
/// test and with no substring shared with another (so a compressed record keeps each whole).
fn m(tag: &str, field: &str) -> String {
    let d = Sha256::digest(format!("{tag}/{field}").as_bytes());
    format!("M{}", &hex(&d)[..24])
}

/// A row (fact, document or trigger) carrying markers in content, tags, labels, an evidence
/// quote, locator heading and message id, an evidence checksum, and an episodic evidence item
/// (quote, heading and checksum made from the message).
fn marked_fact(tag: &str, mut op: AssertOp) -> (AssertOp, Vec<String>) {
    let mut e = evidence(&format!("src-{tag}"), Some(&m(tag, "quote")));
    e.locator.heading = Some(m(tag, "heading"));
    e.locator.message_id = Some(m(tag, "msgid"));
    e.checksum = Some(format!("sha256:{}", m(tag, "checksum")));
    let episode = EpisodicEvidence {
        episodic_message: MemoryMessage {
            content: m(tag, "episode"),
            producer: m(tag, "producer"),
            produced_for: "assistant".into(),
            timestamp: Timestamp::Millis(1_767_225_600_000),
            role: "user".into(),
            metadata: Default::default(),
        },
        session_id: format!("session-{tag}"),
        message_id: None,
        span_start: None,
        span_end: None,
        quote: None,
    }
    .to_evidence()
    .unwrap();
    op.tags = vec![m(tag, "tag")];
    op.sensitivity.labels = vec![m(tag, "label")];
    op.evidence = vec![e, episode];
    let markers = [
        "content", "tag", "label", "quote", "heading", "msgid", "checksum", "episode", "producer",
    ]
    .iter()
    .map(|f| m(tag, f))
    .collect();
    (op, markers)
}

struct Seed {
    records: Vec<IntentRecord>,
    /// Markers of rows that get purged.
    purged: Vec<String>,
    /// Markers of the account never purged.
    kept: Vec<String>,
    /// Episodic messages' checksums (SHA-256 hex of their text) of purged rows.
    purged_checksums: Vec<String>,
}

fn record(i: Intent, t: i64) -> IntentRecord {
    IntentRecord {
        timestamp: t,
        partition: None,
        offset: None,
        intent: i,
    }
}

/// Every account's rows: facts (primary user and third party), a document, a trigger.
fn seed(t: i64) -> Seed {
    let mut s = Seed {
        records: Vec::new(),
        purged: Vec::new(),
        kept: Vec::new(),
        purged_checksums: Vec::new(),
    };
    let why = WriteReason::DirectUserStatement;
    for (acct, tag, gets_purged) in [(A, "a", true), (B, "b", true), (C, "c", false)] {
        let mut ms = Vec::new();
        let (f, fm) = marked_fact(&format!("{tag}1"), fact(&m(&format!("{tag}1"), "content")));
        ms.extend(fm);
        let (p, pm) = marked_fact(
            &format!("{tag}2"),
            third_party("person_shred", &m(&format!("{tag}2"), "content")),
        );
        ms.extend(pm);
        let (p2, pm2) = marked_fact(
            &format!("{tag}3"),
            third_party("person_shred", &m(&format!("{tag}3"), "content")),
        );
        ms.extend(pm2);
        // The document and the trigger carry tags, labels and evidence (quotes, locators,
        // checksums, an episodic message) as the facts do, besides their body and condition.
        let (d, dm) = marked_fact(
            &format!("{tag}4"),
            document(
                &m(&format!("{tag}4"), "content"),
                &m(&format!("{tag}4"), "body"),
            ),
        );
        ms.extend(dm);
        ms.push(m(&format!("{tag}4"), "body"));
        let (tr, tm) = marked_fact(
            &format!("{tag}5"),
            trigger(
                &m(&format!("{tag}5"), "content"),
                &[("when", &m(&format!("{tag}5"), "condition"))],
            ),
        );
        ms.extend(tm);
        ms.push(m(&format!("{tag}5"), "condition"));
        for n in 1..=5 {
            s.purged_checksums.push(hex(&Sha256::digest(
                m(&format!("{tag}{n}"), "episode").as_bytes(),
            )));
        }
        if !gets_purged {
            s.purged_checksums.truncate(s.purged_checksums.len() - 5);
        }
        s.records.push(record(
            intent(
                acct,
                &format!("{tag}-facts"),
                why,
                0,
                vec![Op::Assert(f), Op::Assert(p), Op::Assert(p2)],
            ),
            t,
        ));
        s.records.push(record(
            intent(
                acct,
                &format!("{tag}-doc"),
                WriteReason::RecurringWorkflow,
                1,
                vec![Op::Assert(d)],
            ),
            t + 1,
        ));
        s.records.push(record(
            intent(
                acct,
                &format!("{tag}-trigger"),
                WriteReason::StandingTrigger,
                2,
                vec![Op::Assert(tr)],
            ),
            t + 2,
        ));
        if gets_purged {
            s.purged.extend(ms);
        } else {
            s.kept.extend(ms);
        }
    }
    s
}

fn kledger(env: &[(String, String)], dir: &Path, args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_kledger"))
        .args(args)
        .envs(env.iter().cloned())
        .env("KLEDGER_HTTP__LISTEN", "")
        .current_dir(dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stderr).into_owned()
        + String::from_utf8_lossy(&out.stdout).as_ref();
    (out.status.success(), text)
}

fn api(port: u16, token: &str, path: &str) -> (u16, String) {
    http_request(
        port,
        "GET",
        path,
        &[("Authorization", &format!("Bearer {token}"))],
        "",
    )
}

/// Waits until every action of `records` has a receipt with outcome `committed`; their
/// receipts by action.
fn committed(c: &Config, records: &[IntentRecord]) -> BTreeMap<String, Receipt> {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let rs: BTreeMap<String, Receipt> = receipts(&c.kafka.bootstrap_servers, c)
            .into_iter()
            .filter(|r| r.outcome == Outcome::Committed)
            .map(|r| (r.action_id.clone(), r))
            .collect();
        if records.iter().all(|r| rs.contains_key(&r.intent.action_id)) {
            return rs;
        }
        assert!(Instant::now() < deadline, "not committed: {rs:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The data keys on the keys topic, by memory id.
fn data_keys(c: &Config) -> BTreeMap<String, Vec<u8>> {
    read_all(&c.kafka.bootstrap_servers, &c.topics().keys, PARTITIONS)
        .into_iter()
        .filter(|r| !r.payload.is_empty() && r.key.as_deref().is_some_and(|k| k[0] != 0))
        .map(|r| {
            let (key, memory_id) = kledger_state::keys::parse_key_value(&r.payload)
                .unwrap()
                .unwrap();
            (memory_id, key.to_vec())
        })
        .collect()
}

/// Writes to the keys topic, as an old owner would, a data key of its own for row
/// `memory_id` of A (its key id carries the row's tag, as every data key's does); the key id
/// and the key's bytes.
fn old_owners_key(c: &Config, memory_id: &str, tag: &str) -> (String, Vec<u8>) {
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    let key: [u8; 32] = Sha256::digest(format!("old owner's key {tag}").as_bytes()).into();
    let mut random = [0u8; 8];
    random.copy_from_slice(&key[..8]);
    let id = kledger_processors::seal::key_id(memory_id, &random);
    let producer: BaseProducer = kledger_topology::kafka::clients::client_config(c)
        .set("compression.type", "none")
        .create()
        .unwrap();
    let partition = kledger_processors::routing::partition_for(A.as_bytes(), PARTITIONS);
    producer
        .send(
            BaseRecord::to(&c.topics().keys)
                .partition(partition)
                .key(&kledger_state::keys::key_record_key(A, &id))
                .payload(&kledger_state::keys::key_value(&key, memory_id)),
        )
        .map_err(|(e, _)| e)
        .unwrap();
    producer.flush(Duration::from_secs(10)).unwrap();
    (id, key.to_vec())
}

/// Whether the keys topic holds a tombstone for A's data key `key_id`.
fn key_tombstoned(c: &Config, key_id: &str) -> bool {
    let k = kledger_state::keys::key_record_key(A, key_id);
    read_all(&c.kafka.bootstrap_servers, &c.topics().keys, PARTITIONS)
        .into_iter()
        .any(|r| r.payload.is_empty() && r.key.as_deref() == Some(k.as_slice()))
}

/// Waits until the running kledger swapped in the rebuilt generations (it deletes the
/// generation `old` they replaced).
fn swapped_in(dir: &Path, old: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while dir.join("data/vectors").join(old).exists() || dir.join("data/views").join(old).exists() {
        assert!(
            Instant::now() < deadline,
            "rebuilt generations not swapped in"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
#[allow(clippy::too_many_lines)] // one scenario, read top to bottom
fn purged_content_is_in_no_byte_kledger_keeps() {
    let bin = Path::new(env!("CARGO_BIN_EXE_kledger"));
    let dir = tempfile::tempdir().unwrap();
    let broker = BrokerProcess::start(
        bin,
        dir.path(),
        "sqlite://broker/tansu.db?maintenance_interval=1s",
    )
    .unwrap();
    let mut c = config(
        &broker.bootstrap,
        &dir.path().join("data"),
        PARTITIONS,
        "shred",
    );
    c.kafka.intents_retention_ms = RETENTION_MS;
    // Records stored as written, so a scan of the broker's files sees what they hold (lz4
    // would split a marker into references to earlier bytes).
    c.kafka
        .producer_properties
        .insert("compression.type".into(), "none".into());
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(kledger_topology::kafka::topics::create_configured(&c))
        .unwrap();
    let port = free_port().unwrap();
    let mut env = child_env(&c, &format!("127.0.0.1:{port}"));
    env.push((
        "KLEDGER_KAFKA__PRODUCER_PROPERTIES__COMPRESSION_TYPE".into(),
        "none".into(),
    ));
    // The bounds purge receipts wait for: this test's retention, and the broker process's
    // maintenance (every second) with room to spare.
    env.push((
        "KLEDGER_KAFKA__INTENTS_RETENTION_MS".into(),
        RETENTION_MS.to_string(),
    ));
    env.push(("KLEDGER_KAFKA__COMPACTION_SLACK_MS".into(), "5000".into()));
    for (name, token, owner) in [
        ("a", TOKEN_A, "u_shred_a"),
        ("c", TOKEN_C, "u_shred_c"),
        ("privacy", TOKEN_PRIVACY, "u_privacy_officer"),
    ] {
        let p = format!("KLEDGER_API__PRINCIPALS__{}", name.to_uppercase());
        env.push((format!("{p}__TOKEN"), token.into()));
        env.push((format!("{p}__TENANT_ID"), "t_acme".into()));
        env.push((format!("{p}__OWNER_KIND"), "user".into()));
        env.push((format!("{p}__OWNER_ID"), owner.into()));
    }
    env.push((
        "KLEDGER_API__PRINCIPALS__PRIVACY__ROLES".into(),
        "role_privacy".into(),
    ));
    // The processor looks for keys another writer put on its keys-topic partitions often.
    env.push(("KLEDGER_PROCESSOR__KEYS_CHECK_MS".into(), "500".into()));
    let run = |tag: &str| {
        let mut k = spawn_with_env(bin, &env, &[], dir.path(), tag);
        wait_ready(&mut k, port, dir.path(), tag);
        k
    };
    let k = run("kledger");

    // Rows of every kind, with markers in every content-bearing field.
    let t0 = now_ms();
    let s = seed(t0);
    publish_all(&c, &s.records);
    let rs = committed(&c, &s.records);
    let ids = |action: &str| rs[action].memory_ids.clone();
    let keys_before = data_keys(&c);
    // An old owner's second sealing (after a rebalance, in the default delivery mode) left a
    // data key of its own for A's document on the keys topic, before the purges; another for
    // A's first fact arrives after them. The purges must destroy both.
    let zombie_before = old_owners_key(&c, &ids("a-doc")[0], "before");
    let mut purged_rows: Vec<String> = Vec::new();
    for a in ["b-facts", "b-doc", "b-trigger"] {
        purged_rows.extend(ids(a));
    }
    purged_rows.push(ids("a-facts")[0].clone());
    purged_rows.extend(ids("a-facts")[1..].iter().cloned());
    purged_rows.extend(ids("a-doc"));
    purged_rows.extend(ids("a-trigger"));

    // One of A's third-party facts is closed first (its reason carries a marker).
    let export = |token: &str| api(port, token, "/v1/export").1;
    let row_of = |token: &str, id: &str| -> kledger_schemas::Row {
        export(token)
            .lines()
            .map(|l| serde_json::from_str::<kledger_schemas::Row>(l).unwrap())
            .find(|r| r.memory_id == id)
            .unwrap_or_else(|| panic!("{id} not exported"))
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    while !export(TOKEN_A).contains(&ids("a-trigger")[0]) {
        assert!(Instant::now() < deadline, "A's rows not in the view");
        std::thread::sleep(Duration::from_millis(200));
    }
    let third = row_of(TOKEN_A, &ids("a-facts")[2]);
    let mut closing = intent(
        A,
        "a-close",
        WriteReason::DirectUserStatement,
        3,
        vec![close(&third, &m("a3", "reason"))],
    );
    kledger_testkit::build::plan(&mut closing, &third);
    let mut purges = vec![record(closing, t0 + 10)];
    let mut purge_a = vec![];
    // A: the first fact, the document and the trigger by row; the third-party facts by entity.
    for (n, id) in [
        ids("a-facts")[0].clone(),
        ids("a-doc")[0].clone(),
        ids("a-trigger")[0].clone(),
    ]
    .into_iter()
    .enumerate()
    {
        let row = row_of(TOKEN_A, &id);
        let mut i = intent(
            A,
            &format!("a-purge-{n}"),
            WriteReason::DirectUserStatement,
            4 + n as i64,
            vec![purge(&row, "erasure request")],
        );
        kledger_testkit::build::plan(&mut i, &row);
        purge_a.push(i);
    }
    for (n, i) in purge_a.into_iter().enumerate() {
        purges.push(record(i, t0 + 11 + n as i64));
    }
    purges.push(record(
        intent(
            A,
            "a-purge-entity",
            WriteReason::DirectUserStatement,
            7,
            vec![Op::Purge(kledger_schemas::PurgeOp {
                entity_id: Some("person_shred".into()),
                reason: "erasure request".into(),
                ..Default::default()
            })],
        ),
        t0 + 20,
    ));
    purges.push(record(
        intent(
            B,
            "b-purge-all",
            WriteReason::DirectUserStatement,
            3,
            vec![Op::Purge(kledger_schemas::PurgeOp {
                whole_account: true,
                reason: "erasure request".into(),
                ..Default::default()
            })],
        ),
        t0 + 21,
    ));
    // The close reason is a marker of a purged row too.
    let mut purged_markers = s.purged.clone();
    purged_markers.push(m("a3", "reason"));
    let mut destroyed: Vec<Vec<u8>> = purged_rows
        .iter()
        .map(|id| {
            keys_before
                .get(id)
                .unwrap_or_else(|| panic!("no key for {id}"))
                .clone()
        })
        .collect();
    destroyed.push(zombie_before.1.clone());
    // Before the purges every data key is in some file (the keys topic, the stores' key
    // columns): the scan for them can fail.
    let key_refs: Vec<&[u8]> = destroyed.iter().map(Vec::as_slice).collect();
    assert_eq!(
        scan(dir.path(), &key_refs).len(),
        destroyed.len(),
        "every data key is in some file before the purges"
    );
    publish_all(&c, &purges);
    committed(&c, &purges);
    let zombie_after = old_owners_key(&c, &ids("a-facts")[0], "after");
    destroyed.push(zombie_after.1.clone());
    // The processor finds both old owners' keys (the first read into state before the
    // purge, the second after it, by its check of the keys topic) and writes their
    // tombstones.
    let deadline = Instant::now() + Duration::from_secs(60);
    for (id, _) in [&zombie_before, &zombie_after] {
        while !key_tombstoned(&c, id) {
            assert!(
                Instant::now() < deadline,
                "no tombstone for the old owner's key {id}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    let kept_keys: Vec<Vec<u8>> = ids("c-facts")
        .iter()
        .map(|id| keys_before[id].clone())
        .collect();

    // Needles: each purged marker, its SHA-256 (raw and hex), the episodic checksums, and the
    // destroyed keys.
    let mut needles: Vec<Vec<u8>> = Vec::new();
    for mk in &purged_markers {
        let d = Sha256::digest(mk.as_bytes());
        needles.push(mk.as_bytes().to_vec());
        needles.push(d.to_vec());
        needles.push(hex(&d).into_bytes());
    }
    for sum in &s.purged_checksums {
        needles.push(sum.clone().into_bytes());
    }
    let key_needles = needles.len();
    needles.extend(destroyed.iter().cloned());
    let refs: Vec<&[u8]> = needles.iter().map(Vec::as_slice).collect();
    let before = scan(dir.path(), &refs);
    // Before the compaction every marker's text and every episodic checksum is on the intents
    // topic, in the broker's files: each of those needles is found, so the final scan can
    // fail (the keys were found before the purges: the broker compacts the keys topic every
    // second here, so a destroyed key may be gone already). A marker's SHA-256 is in no file
    // at any time: v4 keys every hash.
    let must_be_there = (0..purged_markers.len())
        .map(|i| i * 3)
        .chain(purged_markers.len() * 3..key_needles);
    for i in must_be_there {
        assert!(
            before.contains_key(&i),
            "needle {i} ({}) is in no file before the compaction",
            String::from_utf8_lossy(&needles[i])
        );
    }

    // Reads: A's purged rows are gone, C's markers are all readable.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let a = export(TOKEN_A);
        if purged_markers.iter().all(|mk| !a.contains(mk.as_str())) {
            break;
        }
        if Instant::now() >= deadline {
            let log = std::fs::read_to_string(dir.path().join("kledger.log")).unwrap_or_default();
            let tail: String = log
                .lines()
                .filter(|l| l.contains("WARN") || l.contains("ERROR"))
                .take(30)
                .collect::<Vec<_>>()
                .join("\n");
            panic!("purged rows still read: {a}\nlog:\n{tail}");
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let exported_c = export(TOKEN_C);
    for mk in &s.kept {
        assert!(
            exported_c.contains(mk.as_str()),
            "{mk} not readable: {exported_c}"
        );
    }
    let (status, profile) = api(port, TOKEN_C, "/v1/profile");
    assert_eq!(status, 200, "{profile}");

    // Purge receipts: the owner's, with each copy; not complete while the intents are kept.
    let receipt = |token: &str, path: &str| -> (u16, serde_json::Value) {
        let (status, body) = api(port, token, path);
        (status, serde_json::from_str(&body).unwrap_or_default())
    };
    let (status, r) = receipt(TOKEN_A, "/v1/purges/a-purge-entity");
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["rows"], 2, "{r}");
    assert_eq!(r["complete"], false, "{r}");
    let copy = |r: &serde_json::Value, name: &str| -> serde_json::Value {
        r["copies"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["copy"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("no {name} in {r}"))
    };
    assert_eq!(copy(&r, "intents_topic")["state"], "pending", "{r}");
    assert!(copy(&r, "intents_topic")["by"].as_i64().unwrap() >= t0 + RETENTION_MS);
    // Another principal, another account's purge, an unknown action: the uniform answer.
    assert_eq!(
        receipt(TOKEN_C, &format!("/v1/purges/a-purge-entity?account={A}")).0,
        404
    );
    assert_eq!(receipt(TOKEN_A, "/v1/purges/b-purge-all").0, 404);
    // A privacy officer of the tenant reads B's whole-account purge.
    let (status, r) = receipt(
        TOKEN_PRIVACY,
        &format!("/v1/purges/b-purge-all?account={B}"),
    );
    assert_eq!(status, 200, "{r}");
    assert_eq!(r["rows"], 5, "{r}");
    assert_eq!(receipt(TOKEN_A, "/v1/purges/a-doc").0, 404);

    // Replay verify and both rebuilds pass after the purges (the intents are still kept).
    let (ok, text) = kledger(&env, dir.path(), &["replay", "verify", "--quiet"]);
    assert!(ok && text.contains("replay verify: ok"), "{text}");
    for projection in ["views", "qdrant"] {
        let (ok, text) = kledger(&env, dir.path(), &["rebuild", projection, "--quiet"]);
        assert!(
            ok && text.contains("active"),
            "rebuild {projection}: {text}"
        );
    }
    swapped_in(dir.path(), "g000001");
    let exported_c = export(TOKEN_C);
    for mk in &s.kept {
        assert!(
            exported_c.contains(mk.as_str()),
            "{mk} not readable after the rebuilds"
        );
    }

    // The documented compaction: the intents' retention and the broker's maintenance (the
    // keys and views topics compacted), then a clean stop of kledger and of the broker.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        // A read while retention deletes the records it reads can stall: read again.
        let left = kledger_testkit::kafka::read_all_within(
            &c.kafka.bootstrap_servers,
            &c.topics().intents,
            PARTITIONS,
            Duration::from_secs(10),
        )
        .map(|r| r.len());
        if left == Ok(0) && now_ms() > t0 + RETENTION_MS + 3_000 {
            break;
        }
        assert!(Instant::now() < deadline, "intents not expired: {left:?}");
        std::thread::sleep(Duration::from_millis(500));
    }
    // Once the intents are gone and every store ran its erasure, the receipts say complete.
    let deadline = Instant::now() + Duration::from_secs(90);
    for (token, action) in [
        (TOKEN_A, "a-purge-0".to_owned()),
        (TOKEN_A, "a-purge-1".to_owned()),
        (TOKEN_A, "a-purge-2".to_owned()),
        (TOKEN_A, "a-purge-entity".to_owned()),
        (TOKEN_PRIVACY, format!("b-purge-all?account={B}")),
    ] {
        loop {
            let (status, r) = receipt(token, &format!("/v1/purges/{action}"));
            assert_eq!(status, 200, "{r}");
            if r["complete"] == true {
                break;
            }
            assert!(Instant::now() < deadline, "{action} not complete: {r}");
            std::thread::sleep(Duration::from_millis(500));
        }
    }
    // Replay verify (from the outbox and keys alone where the intents expired) and both
    // rebuilds pass after the compaction too; the rebuilt generations hold nothing purged
    // (the final scan reads them).
    let (ok, text) = kledger(&env, dir.path(), &["replay", "verify", "--quiet"]);
    assert!(
        ok && text.contains("replay verify: ok"),
        "after the compaction: {text}"
    );
    for projection in ["views", "qdrant"] {
        let (ok, text) = kledger(&env, dir.path(), &["rebuild", projection, "--quiet"]);
        assert!(
            ok && text.contains("active"),
            "rebuild {projection} after the compaction: {text}"
        );
    }
    swapped_in(dir.path(), "g000002");
    let exported_c = export(TOKEN_C);
    for mk in &s.kept {
        assert!(
            exported_c.contains(mk.as_str()),
            "{mk} not readable after the second rebuilds"
        );
    }
    let metrics = api(port, TOKEN_A, "/metrics").1;
    assert!(
        metrics.contains("kledger_keys_destroyed_total"),
        "key tombstones counted:\n{metrics}"
    );
    std::thread::sleep(Duration::from_secs(3));
    stop(k);
    let (ok, state_digest) = kledger(&env, dir.path(), &["state", "digest"]);
    assert!(ok, "{state_digest}");
    drop(broker);

    let left = scan(dir.path(), &refs);
    let named: Vec<String> = left
        .iter()
        .map(|(i, files)| {
            let what = if *i < key_needles {
                String::from_utf8_lossy(&needles[*i]).into_owned()
            } else {
                format!("data key #{}", i - key_needles)
            };
            format!("{what} in {files:?}")
        })
        .collect();
    assert!(
        named.is_empty(),
        "purged content left:\n{}",
        named.join("\n")
    );
    // The kept account's keys are still there (the scan can see keys).
    let kept_refs: Vec<&[u8]> = kept_keys.iter().map(Vec::as_slice).collect();
    assert_eq!(scan(dir.path(), &kept_refs).len(), kept_keys.len());

    // Key-store loss: a new instance restores the state from the topics (keys, then outbox):
    // the same digest and the same keys as the state that ran.
    let broker = BrokerProcess::start(
        bin,
        dir.path(),
        "sqlite://broker/tansu.db?maintenance_interval=1s",
    )
    .unwrap();
    env.retain(|(k, _)| k != "KLEDGER_KAFKA__BOOTSTRAP_SERVERS");
    env.push((
        "KLEDGER_KAFKA__BOOTSTRAP_SERVERS".into(),
        broker.bootstrap.clone(),
    ));
    let restored = dir.path().join("restored");
    let (ok, text) = kledger(
        &env,
        dir.path(),
        &[
            "state",
            "restore",
            "--from-outbox",
            "--state",
            restored.to_str().unwrap(),
        ],
    );
    assert!(ok, "{text}");
    assert!(
        text.contains(state_digest.trim()),
        "{text} / {state_digest}"
    );
    let (a, b) = (
        RocksStore::open(&dir.path().join("data"), &RocksConfig::default()).unwrap(),
        RocksStore::open(&restored, &RocksConfig::default()).unwrap(),
    );
    assert_eq!(digest(&a).unwrap(), digest(&b).unwrap());
    assert_eq!(digest_keys(&a).unwrap(), digest_keys(&b).unwrap());
}
