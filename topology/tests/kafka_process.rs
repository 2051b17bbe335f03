//! The `kledger` binary as child processes against a broker in the test process: two
//! processors in one group with one started mid-stream (the outbox must hold every expected
//! commit exactly once, commit_seq gapless per account), roles in separate processes, and the
//! commands on the embedded default. The kill -9 crash loop is the reliability harness's
//! (`tests/harness.rs`).

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use kledger_testkit::residue::files_containing;
use kledger_topology::config::Config;
use kledger_topology::kafka::embedded::free_port;

/// The demo principal's token (`scripts/dev.sh demo`).
const DEMO_TOKEN: &str = "demo-token-u-alice-0001";

const PARTITIONS: i32 = 6;

/// A `kledger run` child writing its log to `dir/tag.log`. A short session timeout (kill -9
/// test) lets a restarted instance take over the dead member's partitions sooner; the
/// two-member test keeps the default, since a member is not heard from while it rejoins.
fn spawn(c: &Config, http_port: u16, dir: &Path, tag: &str, session_ms: Option<u32>) -> ChildGuard {
    let session = session_ms.map(|ms| ms.to_string());
    let mut env = vec![
        // These tests are about the processor's outbox; the sinks (their own groups, the
        // vector engine) stay off so the children load the 2-core machine as before.
        ("KLEDGER_VIEWS__ENABLED", "false"),
        ("KLEDGER_VECTORS__ENABLED", "false"),
    ];
    if let Some(ms) = &session {
        env.push(("KLEDGER_KAFKA__CONSUMER_PROPERTIES__SESSION_TIMEOUT_MS", ms));
    }
    spawn_with(c, http_port, dir, tag, &env)
}

/// A `kledger run` child with `c`'s configuration and `env` on top.
fn spawn_with(
    c: &Config,
    http_port: u16,
    dir: &Path,
    tag: &str,
    env: &[(&str, &str)],
) -> ChildGuard {
    spawn_kledger(
        Path::new(env!("CARGO_BIN_EXE_kledger")),
        c,
        http_port,
        dir,
        tag,
        env,
    )
}

#[test]
fn two_processors_and_a_rebalance_give_the_same_outbox_as_one() {
    let b = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let c_a = config(
        &b.bootstrap,
        &dir.path().join("state-a"),
        PARTITIONS,
        "proc-two",
    );
    let c_b = config(
        &b.bootstrap,
        &dir.path().join("state-b"),
        PARTITIONS,
        "proc-two",
    );
    create_topics(&b, &c_a);
    let records = stream(32, 60, 6_000);
    let (first, second) = records.split_at(records.len() / 2);
    publish_all(&c_a, first);
    let (port_a, port_b) = (free_port().unwrap(), free_port().unwrap());
    let mut a = spawn(&c_a, port_a, dir.path(), "a", None);
    wait_ready(&mut a, port_a, dir.path(), "a");
    std::thread::sleep(Duration::from_millis(500));
    let mut bb = spawn(&c_b, port_b, dir.path(), "b", None);
    publish_all(&c_a, second);
    wait_ready(&mut bb, port_b, dir.path(), "b");
    wait_answered(&c_a, &records, Duration::from_secs(300));
    let (_, status_b) = get(port_b, "/readyz").unwrap();
    let status_b: serde_json::Value = serde_json::from_str(&status_b).unwrap();
    assert!(
        !status_b["assigned"].as_array().unwrap().is_empty(),
        "the second processor took partitions: {status_b}"
    );
    stop(a);
    stop(bb);
    let (want, _) = expected(&c_a, &records, PARTITIONS);
    // tansu completes a rebalance without waiting for the old owner, which keeps writing
    // until its next poll: a zombie window. Its commits are byte-identical (deterministic
    // decide), so the outbox equals the single run's once identical repeats are dropped.
    let (unique, repeats) = dedup_identical(&commits(&b.bootstrap, &c_a));
    assert_outbox_exact(&unique, &want);
    eprintln!(
        "two processors: {} commits, {repeats} byte-identical repeats from the zombie window",
        unique.len()
    );
    let answered: BTreeSet<(i32, i64)> = receipts(&b.bootstrap, &c_a)
        .iter()
        .map(|r| (r.intent_partition, r.intent_offset))
        .collect();
    assert_eq!(answered.len(), records.len());
}

#[test]
fn roles_in_separate_processes_serve_reads_from_the_processors_views() {
    let b = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let c = config(&b.bootstrap, &dir.path().join("state"), PARTITIONS, "roles");
    create_topics(&b, &c);
    let records = stream(33, 20, 2_000);
    publish_all(&c, &records);
    let (port_a, port_b) = (free_port().unwrap(), free_port().unwrap());
    // Process A decides and projects the views; process B only serves the API, following A's
    // view store (a RocksDB secondary).
    let mut a = spawn_with(
        &c,
        port_a,
        dir.path(),
        "apply",
        &[
            ("KLEDGER_ROLE", "apply,project-views"),
            ("KLEDGER_VECTORS__ENABLED", "false"),
        ],
    );
    wait_ready(&mut a, port_a, dir.path(), "apply");
    wait_answered(&c, &records, Duration::from_secs(120));
    let (want, _) = expected(&c, &records, PARTITIONS);
    let account = want[0].account_id.clone();
    let parts: Vec<&str> = account.split('/').collect();
    // Every version of the account's rows as a view store and a sources store folded offline
    // hold them (the export holds both: the ledger's rows and the source documents).
    let versions: usize = [kledger_state::Lane::Ledger, kledger_state::Lane::Sources]
        .into_iter()
        .map(|lane| {
            let offline = tempfile::tempdir().unwrap();
            let views = kledger_state::ViewStore::open(offline.path(), 8 << 20)
                .unwrap()
                .with_lane(lane);
            let mut next: std::collections::BTreeMap<i32, i64> = Default::default();
            let mut vb = kledger_state::ViewBatch::default();
            for x in &want {
                let o = next.entry(x.intent_partition).or_insert(0);
                views.fold(&mut vb, x, x.intent_partition, *o).unwrap();
                *o += 1;
            }
            views.write(vb).unwrap();
            let mut n = 0;
            views
                .history(&account, 100_000, &mut |_| {
                    n += 1;
                    Ok(())
                })
                .unwrap();
            n
        })
        .sum();
    let mut api = spawn_with(
        &c,
        port_b,
        dir.path(),
        "api",
        &[
            ("KLEDGER_ROLE", "api"),
            ("KLEDGER_VECTORS__ENABLED", "false"),
            ("KLEDGER_API__PRINCIPALS__T__TOKEN", "token-roles-test-0001"),
            ("KLEDGER_API__PRINCIPALS__T__TENANT_ID", parts[0]),
            ("KLEDGER_API__PRINCIPALS__T__OWNER_KIND", parts[1]),
            ("KLEDGER_API__PRINCIPALS__T__OWNER_ID", parts[2]),
        ],
    );
    wait_ready(&mut api, port_b, dir.path(), "api");
    let deadline = Instant::now() + Duration::from_secs(60);
    let lines = loop {
        let (status, body) = http_request(
            port_b,
            "GET",
            "/v1/export",
            &[("Authorization", "Bearer token-roles-test-0001")],
            "",
        );
        assert_eq!(status, 200, "{body}");
        let n = body.lines().count();
        if n == versions || Instant::now() > deadline {
            break n;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let (_, ready) = get(port_b, "/readyz").unwrap();
    stop(api);
    stop(a);
    assert_eq!(
        lines, versions,
        "the api process serves every version of {account}"
    );
    assert!(ready.contains("\"processor\":false"), "{ready}");
    // The api process has no processor and no sinks: it joined no consumer group.
    let b_log = std::fs::read_to_string(dir.path().join("api.log")).unwrap();
    assert!(
        !b_log.contains("assigned"),
        "the api role joined no group:\n{b_log}"
    );
}

/// The README's first command and the operations commands on the embedded default: `kledger
/// run --demo` (embedded broker, no configuration), then `replay verify`, `rebuild views` and
/// `rebuild qdrant` against it while it runs, then `state digest` after it stopped, and a restart that
/// continues.
#[test]
fn commands_work_on_the_embedded_default() {
    let dir = tempfile::tempdir().unwrap();
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/intents.jsonl");
    let (broker_port, http_port) = (free_port().unwrap(), free_port().unwrap());
    let broker = format!("127.0.0.1:{broker_port}");
    let env = [
        ("KLEDGER_EMBEDDED__LISTEN", broker.as_str()),
        ("KLEDGER_KAFKA__PARTITIONS", "4"),
        // The demo's principal (scripts/dev.sh demo), for the README's search example.
        ("KLEDGER_API__PRINCIPALS__DEMO__TOKEN", DEMO_TOKEN),
        ("KLEDGER_API__PRINCIPALS__DEMO__TENANT_ID", "t_acme"),
        ("KLEDGER_API__PRINCIPALS__DEMO__OWNER_KIND", "user"),
        ("KLEDGER_API__PRINCIPALS__DEMO__OWNER_ID", "u_alice"),
    ];
    let kledger_with = |extra: &[(&str, &str)], args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_kledger"))
            .args(args)
            .envs(env)
            .envs(extra.iter().copied())
            .env("KLEDGER_HTTP__LISTEN", "")
            .current_dir(dir.path())
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stderr).into_owned()
            + String::from_utf8_lossy(&out.stdout).as_ref();
        (out.status.success(), text)
    };
    let kledger = |args: &[&str]| kledger_with(&[], args);
    let search = |query: &str| -> serde_json::Value {
        let (status, body) = http_request(
            http_port,
            "POST",
            "/v1/search",
            &[("Authorization", &format!("Bearer {DEMO_TOKEN}"))],
            &serde_json::json!({ "query": query, "limit": 3 }).to_string(),
        );
        assert_eq!(status, 200, "{body}");
        serde_json::from_str(&body).unwrap()
    };
    let first_of = |answer: &serde_json::Value| {
        answer["results"][0]["content"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    };
    let run = |tag: &str, with_demo: bool| {
        let log = std::fs::File::create(dir.path().join(format!("{tag}.log"))).unwrap();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_kledger"));
        cmd.arg("run");
        if with_demo {
            cmd.arg("--demo").arg(&demo);
        }
        cmd.envs(env)
            .env("KLEDGER_HTTP__LISTEN", format!("127.0.0.1:{http_port}"))
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    };
    let mut first = run("first", true);
    wait_ready(&mut first, http_port, dir.path(), "first");
    the_embedded_broker_admits_only_its_login(dir.path(), &broker);
    // Every published intent answered (the demo's count is in the log).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let log = std::fs::read_to_string(dir.path().join("first.log")).unwrap();
        let published: Option<usize> = log
            .split("demo: published ")
            .nth(1)
            .and_then(|r| r.split_whitespace().next())
            .and_then(|n| n.parse().ok());
        let (_, metrics) = get(http_port, "/metrics").unwrap();
        let answered: f64 = metrics
            .lines()
            .filter(|l| l.starts_with("kledger_intents_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        if published.is_some_and(|n| n > 0 && answered as usize >= n) {
            // A normal start logs no warning or error, up to every intent answered (issue 49:
            // librdkafka's and the vector engine's notes that ask nothing of an operator are
            // dropped, `kledger_runtime::logs::NOISE`).
            let warnings: Vec<&str> = log
                .lines()
                .filter(|l| {
                    [
                        " WARN ",
                        " ERROR ",
                        "\"level\":\"WARN\"",
                        "\"level\":\"ERROR\"",
                    ]
                    .iter()
                    .any(|w| l.contains(w))
                })
                .collect();
            assert!(
                warnings.is_empty(),
                "warnings at start:\n{}",
                warnings.join("\n")
            );
            break;
        }
        assert!(Instant::now() < deadline, "demo not answered:\n{log}");
        std::thread::sleep(Duration::from_millis(200));
    }
    // The README's search example on the default embedder (the local model): the semantically
    // right row first, though it shares no word with the question. The move to Porto commits
    // once the demo's extractor has planned it again after its replan receipt.
    let deadline = Instant::now() + Duration::from_secs(60);
    while first_of(&search("where does she live")) != "Lives in Porto" {
        assert!(
            Instant::now() < deadline,
            "{}",
            search("where does she live")
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        first_of(&search("what does she do for work")),
        "Works at Acme as a data engineer"
    );
    let (ok, text) = kledger(&["replay", "verify", "--quiet"]);
    assert!(ok && text.contains("replay verify: ok"), "{text}");
    let (ok, text) = kledger(&["rebuild", "views", "--quiet"]);
    assert!(ok && text.contains("generation g000002 active"), "{text}");
    // The embedded vector engine's collection is rebuilt by another process while this one
    // serves the live one, and swapped in by it: with another embedder (the hashing one, 256
    // dimensions instead of the model's 384), so the new generation is another embedding space.
    let generation = |g: &str| -> serde_json::Value {
        let file = dir.path().join(format!("data/vectors/{g}/embedder.json"));
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap()
    };
    assert_eq!(generation("g000001")["kind"], "local");
    let (ok, text) = kledger_with(
        &[("KLEDGER_VECTORS__EMBEDDER__KIND", "hash")],
        &["rebuild", "qdrant", "--quiet"],
    );
    assert!(ok && text.contains("generation g000002 active"), "{text}");
    assert_eq!(generation("g000002")["kind"], "hash");
    assert_eq!(generation("g000002")["dim"], 256);
    let deadline = Instant::now() + Duration::from_secs(30);
    while dir.path().join("data/vectors/g000001").exists() {
        assert!(
            Instant::now() < deadline,
            "the running kledger did not swap in the rebuilt vectors"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The running kledger searches the new generation with its own embedder (the hashing one:
    // lexical, so a query sharing the row's words finds it).
    let log = std::fs::read_to_string(dir.path().join("first.log")).unwrap();
    assert!(log.contains("cm_text_256_v1"), "{log}");
    assert_eq!(
        first_of(&search("weekly status report")),
        "Weekly status report for the data team"
    );
    stop(first);
    let (ok, digest) = kledger(&["state", "digest"]);
    assert!(ok && digest.trim().len() == 64, "{digest}");
    // Started again, it continues: same state, nothing published twice.
    let mut second = run("second", true);
    wait_ready(&mut second, http_port, dir.path(), "second");
    stop(second);
    let log = std::fs::read_to_string(dir.path().join("second.log")).unwrap();
    assert!(log.contains("nothing published"), "{log}");
    let (ok, again) = kledger(&["state", "digest"]);
    assert!(ok, "{again}");
    assert_eq!(again.trim(), digest.trim());
}

/// The embedded default's broker is locked (issue 44): its login lives in a file only its owner
/// may read, in a directory only its owner may enter (the broker's database beside it); a
/// client without the login, with a wrong password, an unknown user, PLAIN or OAUTHBEARER (which
/// validated nothing before kledger's patch of tansu-auth) can neither read metadata nor
/// publish an intent; with the login it can.
fn the_embedded_broker_admits_only_its_login(dir: &Path, bootstrap: &str) {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::producer::{FutureProducer, FutureRecord};
    use std::os::unix::fs::PermissionsExt;
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    let file = dir.join("data/broker/credentials");
    assert_eq!(mode(&file), 0o600, "the login file");
    assert_eq!(
        mode(&dir.join("data/broker")),
        0o700,
        "the broker's directory"
    );
    let login: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    let (user, password) = (
        login["username"].as_str().unwrap().to_owned(),
        login["password"].as_str().unwrap().to_owned(),
    );
    let scram = |u: &str, p: &str| {
        vec![
            ("security.protocol", "SASL_PLAINTEXT".to_owned()),
            ("sasl.mechanism", "SCRAM-SHA-256".to_owned()),
            ("sasl.username", u.to_owned()),
            ("sasl.password", p.to_owned()),
        ]
    };
    let metadata = |props: &[(&str, String)]| -> Result<usize, String> {
        let c: BaseConsumer = kledger_topology::kafka::clients::client_at(
            bootstrap,
            props.iter().map(|(k, v)| (*k, v.as_str())),
        )
        .set("log_level", "0")
        .create()
        .map_err(|e| e.to_string())?;
        c.fetch_metadata(None, Duration::from_secs(3))
            .map(|m| m.topics().len())
            .map_err(|e| e.to_string())
    };
    let foreign: Vec<(&str, Vec<(&str, String)>)> = vec![
        ("no login", vec![]),
        (
            "a wrong password",
            scram(&user, "not-the-password-0123456789"),
        ),
        ("an unknown user", scram("mallory", &password)),
        (
            "PLAIN",
            vec![
                ("security.protocol", "SASL_PLAINTEXT".to_owned()),
                ("sasl.mechanism", "PLAIN".to_owned()),
                ("sasl.username", user.clone()),
                ("sasl.password", "anything".to_owned()),
            ],
        ),
        (
            "OAUTHBEARER with an unsigned token",
            vec![
                ("security.protocol", "SASL_PLAINTEXT".to_owned()),
                ("sasl.mechanism", "OAUTHBEARER".to_owned()),
                ("enable.sasl.oauthbearer.unsecure.jwt", "true".to_owned()),
                ("sasl.oauthbearer.config", format!("principal={user}")),
            ],
        ),
    ];
    for (what, props) in &foreign {
        assert!(
            metadata(props).is_err(),
            "a client with {what} read the broker's metadata"
        );
    }
    // Nor can it publish: an intent into someone's account is never delivered.
    let rt = tokio::runtime::Runtime::new().unwrap();
    let producer: FutureProducer = kledger_topology::kafka::clients::client_at(bootstrap, [])
        .set("message.timeout.ms", "3000")
        .set("log_level", "0")
        .create()
        .unwrap();
    let sent = rt.block_on(
        producer.send(
            FutureRecord::to("kledger.intents.v1")
                .key("t_acme/user/u_alice")
                .payload("{}"),
            Duration::from_secs(3),
        ),
    );
    assert!(
        sent.is_err(),
        "a client without the login published: {sent:?}"
    );
    // With the login: the topics are there.
    let topics = metadata(&scram(&user, &password)).expect("the login is admitted");
    assert!(topics >= 6, "{topics} topics");
}

/// tansu's sqlite storage (the embedded default's) serves records stamped before 1970 since its
/// vendored change (vendor/tansu-storage/KLEDGER-PATCH.md): intents stamped -1, -5, 1, 2^48 and
/// `i64::MAX` among valid ones are all answered (the bad stamps `bad_record_time`), the outbox
/// is `kledger apply`'s, and every stamp reads back as written. Unpatched, a partition could
/// not be read past its first record stamped -1.
#[test]
fn a_sqlite_broker_serves_records_stamped_before_1970() {
    let dir = tempfile::tempdir().unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_kledger"));
    let broker = BrokerProcess::start(bin, dir.path(), "sqlite://broker/tansu.db").unwrap();
    let c = config(
        &broker.bootstrap,
        &dir.path().join("state"),
        PARTITIONS,
        "proc-sqlite",
    );
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(kledger_topology::kafka::topics::create(
        &kledger_topology::kafka::clients::client_at(&broker.bootstrap, []),
        &c.topics(),
        PARTITIONS,
        1,
        c.limits.kafka_message_bytes(),
    ))
    .unwrap();
    // Not 0: librdkafka sends a record stamped 0 with the time of sending.
    let stamps = [-1, 1, 1_i64 << 48, i64::MAX, -5];
    let mut records = stream(41, 12, 600);
    for (i, r) in records.iter_mut().enumerate().filter(|(i, _)| i % 40 == 7) {
        r.timestamp = stamps[(i / 40) % stamps.len()];
    }
    publish_all(&c, &records);
    let p = spawn_processor(bin, &c, dir.path(), "p");
    wait_answered(&c, &records, Duration::from_secs(180));
    let got = commits(&broker.bootstrap, &c);
    stop(p);
    let (want, _) = expected(&c, &records, PARTITIONS);
    assert_outbox_exact(&got, &want);
    let bad: usize = receipts(&broker.bootstrap, &c)
        .iter()
        .filter(|r| r.code.as_deref() == Some("bad_record_time"))
        .count();
    assert!(bad >= 12, "{bad} bad_record_time receipts");
    let mut read: Vec<i64> = read_all(&broker.bootstrap, &c.topics().intents, PARTITIONS)
        .iter()
        .map(|r| r.timestamp)
        .collect();
    let mut written: Vec<i64> = records.iter().map(|r| r.timestamp).collect();
    read.sort_unstable();
    written.sort_unstable();
    assert_eq!(read, written, "record timestamps read back as written");
}

/// Intents are kept for `kafka.intents_retention_ms` (the erasure bound of `docs/privacy.md`).
/// On the embedded broker's sqlite storage a maintenance run deletes intents stamped longer ago
/// than that, keeps the outbox and the receipts (stamped when sent, kept 7 days), and keeps a topic whose `retention.ms` is
/// -1 (tansu's vendored change 2); `replay verify` then checks the retained window on a state
/// folded from the outbox, and finds every commit in it.
#[test]
fn expired_intents_are_deleted_and_replay_verifies_the_retained_window() {
    use kledger_topology::kafka::topics::{self, TopicSettings, Topics};
    const DAY_MS: i64 = 86_400_000;
    let dir = tempfile::tempdir().unwrap();
    let bin = Path::new(env!("CARGO_BIN_EXE_kledger"));
    let storage =
        |interval: &str| format!("sqlite://broker/tansu.db?maintenance_interval={interval}");
    let configs = |bootstrap: &str| {
        let mut c = config(
            bootstrap,
            &dir.path().join("state"),
            PARTITIONS,
            "retention",
        );
        c.kafka.intents_retention_ms = DAY_MS;
        let mut kept = c.clone();
        kept.kafka.topic_prefix = "kept".into();
        (c, kept)
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    const MARKER: &str = "ZQXJ-expired-intent-marker";
    let marked: Vec<_> = stream(63, 3, 30)
        .into_iter()
        .map(|mut r| {
            for op in &mut r.intent.ops {
                if let kledger_schemas::Op::Assert(a) = op {
                    a.content = format!("{MARKER} {}", a.content);
                }
            }
            r
        })
        .collect();
    assert!(jsonl(&marked).contains(MARKER));

    // Before: intents stamped in January (the generator's clock), decided while the broker's
    // maintenance waits an hour (its first run, at start, found no topic).
    let old = stream(61, 10, 240);
    let (commits_before, receipts_before) = {
        let broker = BrokerProcess::start(bin, dir.path(), &storage("1h")).unwrap();
        let (c, kept) = configs(&broker.bootstrap);
        let mut gone = c.clone();
        gone.kafka.topic_prefix = "gone".into();
        rt.block_on(topics::create_configured(&c)).unwrap();
        let forever = TopicSettings {
            message_bytes_max: c.limits.kafka_message_bytes(),
            intents_retention_ms: -1,
        };
        rt.block_on(topics::create_with(
            &kledger_topology::kafka::clients::client_at(&broker.bootstrap, []),
            &Topics::new("kept"),
            PARTITIONS,
            1,
            forever,
        ))
        .unwrap();
        publish_all(&c, &old);
        publish_all(&kept, &old);
        // Intents no processor reads (so no commit copies them), carrying a marker.
        rt.block_on(topics::create_configured(&gone)).unwrap();
        publish_all(&gone, &marked);
        assert!(
            !files_containing(&dir.path().join("broker"), MARKER.as_bytes()).is_empty(),
            "the marker is in the broker's files once published"
        );
        let p = spawn_processor(bin, &c, dir.path(), "before");
        wait_answered(&c, &old, Duration::from_secs(120));
        stop(p);
        (
            commits(&broker.bootstrap, &c),
            receipts(&broker.bootstrap, &c).len(),
        )
    };
    assert!(!commits_before.is_empty() && receipts_before >= old.len());

    // The same storage with maintenance every second: the old intents and receipts go, the
    // outbox and the topic kept forever stay.
    let broker = BrokerProcess::start(bin, dir.path(), &storage("1s")).unwrap();
    let (c, kept) = configs(&broker.bootstrap);
    let t = c.topics();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !read_all(&broker.bootstrap, &t.intents, PARTITIONS).is_empty() {
        assert!(
            Instant::now() < deadline,
            "expired intents were not deleted"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    // Receipts are stamped when sent: kept for their 7 days.
    assert_eq!(
        read_all(&broker.bootstrap, &t.receipts, PARTITIONS).len(),
        receipts_before
    );
    assert_eq!(commits(&broker.bootstrap, &c), commits_before);
    let kept_intents = read_all(&broker.bootstrap, &kept.topics().intents, PARTITIONS);
    assert_eq!(
        kept_intents.len(),
        old.len(),
        "retention.ms -1 keeps records"
    );
    // The expired records' bytes are gone from the broker's files, its log included (tansu's
    // vendored change 3), once a maintenance run has truncated the log.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let hits = files_containing(&dir.path().join("broker"), MARKER.as_bytes());
        if hits.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "expired intents' text still in {hits:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }

    // After: fresh intents (stamped now) are decided against the state the old ones built.
    let now_ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let fresh: Vec<_> = stream(62, 10, 180)
        .into_iter()
        .enumerate()
        .map(|(i, mut r)| {
            r.timestamp = now_ms - 600_000 + i as i64;
            r
        })
        .collect();
    publish_all(&c, &fresh);
    let p = spawn_processor(bin, &c, dir.path(), "after");
    wait_answered(&c, &fresh, Duration::from_secs(120));
    stop(p);
    let all = commits(&broker.bootstrap, &c);
    assert!(all.len() > commits_before.len());

    let report = kledger_topology::pipeline::replay::verify_topics(
        &c,
        &Default::default(),
        &dir.path().join("verify"),
        false,
    )
    .unwrap();
    assert!(report.difference.is_none(), "{report:?}");
    assert_eq!(report.counts.intents as usize, fresh.len());
    assert_eq!(report.counts.folded as usize, commits_before.len());
    assert_eq!(
        (report.counts.commits + report.counts.folded + report.counts.repeats) as usize,
        all.len()
    );
    // Each partition that held old intents started after them: at its first fresh intent, or
    // with none retained.
    let (old_in, fresh_in) = (
        per_partition(&old, PARTITIONS),
        per_partition(&fresh, PARTITIONS),
    );
    for (p, n) in &old_in {
        let want = if fresh_in.contains_key(p) {
            *n
        } else {
            i64::MAX
        };
        assert_eq!(
            report.counts.expired.get(p),
            Some(&want),
            "partition {p}: {report:?}"
        );
    }
}

/// A stop asked for in the first seconds of `kledger run --demo` on the embedded default ends
/// the process, whatever it was doing: waiting for its own broker's first answers (before
/// readiness), or publishing the demo's intents and waiting for their receipts. A SIGTERM then
/// was either lost (the demo listened for none, and one that came meanwhile was gone by the
/// time it did: the process ran on) or waited out the start's blocking checks against the broker
/// it had just stopped (up to the 15 s preflight). The bound, 10 s, is not a speed figure: it is
/// below the preflight's wait and a supervisor's usual grace period. A start after the
/// interrupted ones still reaches readiness in the same directory.
#[test]
fn a_stop_in_the_first_seconds_ends_the_process() {
    let dir = tempfile::tempdir().unwrap();
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/intents.jsonl");
    let broker = format!("127.0.0.1:{}", free_port().unwrap());
    let http_port = free_port().unwrap();
    // Each start in a directory of its own (a demo publishes only into an empty ledger).
    let start = |tag: &str| {
        let home = dir.path().join(tag);
        std::fs::create_dir_all(&home).unwrap();
        let log = std::fs::File::create(home.join(format!("{tag}.log"))).unwrap();
        Command::new(env!("CARGO_BIN_EXE_kledger"))
            .args(["run", "--demo"])
            .arg(&demo)
            .env("KLEDGER_EMBEDDED__LISTEN", &broker)
            .env("KLEDGER_KAFKA__PARTITIONS", "2")
            .env("KLEDGER_HTTP__LISTEN", format!("127.0.0.1:{http_port}"))
            .current_dir(home)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    };
    // (the log line the stop waits for, then how long after it)
    let moments = [
        ("embedded broker started", 0),
        ("embedded broker started", 150),
        ("kledger running:", 0),
        ("demo: published", 0),
    ];
    for (i, (line, after_ms)) in moments.into_iter().enumerate() {
        let tag = format!("stop{i}");
        let mut child = ChildGuard::new(start(&tag));
        let log =
            || std::fs::read_to_string(dir.path().join(&tag).join(format!("{tag}.log"))).unwrap();
        let deadline = Instant::now() + Duration::from_secs(90);
        while !log().contains(line) {
            assert!(
                child.try_wait().unwrap().is_none(),
                "{tag} ended before {line:?}:\n{}",
                log()
            );
            assert!(Instant::now() < deadline, "{tag}: no {line:?}:\n{}", log());
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_millis(after_ms));
        let asked = Instant::now();
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            assert!(
                asked.elapsed() < Duration::from_secs(10),
                "{tag}: still running 10 s after a SIGTERM {after_ms} ms after {line:?}:\n{}",
                log()
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        assert!(status.success(), "{tag}: {status}\n{}", log());
        assert!(log().contains("stopping"), "{tag}:\n{}", log());
    }
    // Again in the directory of the stop during the demo's publishing.
    let mut last = ChildGuard::new(start("stop3"));
    wait_ready(&mut last, http_port, &dir.path().join("stop3"), "stop3");
    stop(last);
}
