//! `kledger migrate`: the bundled 10,000-row legacy fixture planned once and planned with
//! interruptions gives the same plan; applied once and applied with a kill -9 in the middle
//! (then resumed) gives the same commits, byte for byte.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use kledger_processors::migrate::{Disposition, PlanEntry};
use kledger_schemas::{Op, WriteReason};
use kledger_testkit::legacy::{LEGACY_SEED, lines};
use kledger_topology::config::Config;
use kledger_topology::pipeline::migrate::{self, Completion};
use rand::{Rng, SeedableRng};

const PARTITIONS: i32 = 4;

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/migration/legacy.jsonl")
}

fn entries(plan: &Path) -> Vec<PlanEntry> {
    std::fs::read_to_string(plan)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn the_bundled_fixture_is_the_generator_output() {
    let text = std::fs::read_to_string(fixture()).unwrap();
    let got: Vec<&str> = text.lines().collect();
    let want = lines(LEGACY_SEED, 10_000, 400);
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        let parsed = |s: &str| serde_json::from_str::<serde_json::Value>(s).ok();
        match (parsed(g), parsed(w)) {
            (Some(a), Some(b)) => assert_eq!(a, b, "line {}", i + 1),
            _ => assert_eq!(g, &w.as_str(), "line {}", i + 1),
        }
    }
}

#[test]
fn a_plan_interrupted_anywhere_and_resumed_equals_the_uninterrupted_plan() {
    let dir = tempfile::tempdir().unwrap();
    let whole = dir.path().join("whole.jsonl");
    let s = migrate::plan(&fixture(), &whole, false).unwrap();
    assert_eq!(s.rows, 10_000);
    let bytes = std::fs::read(&whole).unwrap();
    let es = entries(&whole);

    // Every row planned once, each marker once.
    let markers: BTreeSet<&str> = es.iter().map(|e| e.marker.as_str()).collect();
    assert_eq!(markers.len(), es.len(), "a marker planned twice");
    assert_eq!(es.len(), 10_000, "every row gets exactly one entry");

    // What the rules promise: long-term adapts (legacy_migration unless user-asserted),
    // short-term and archive are listed for adjudication, never promoted.
    let mut seen = BTreeMap::<(Disposition, &str), u64>::new();
    for e in &es {
        *seen.entry((e.disposition, e.reason.as_str())).or_default() += 1;
        match e.disposition {
            Disposition::Adapt => {
                let i = &e.intent.as_ref().unwrap().intent;
                let want = if e.reason == "long_term_user_asserted" {
                    WriteReason::DirectUserStatement
                } else {
                    WriteReason::LegacyMigration
                };
                assert_eq!(i.write_reason, want, "{}", e.marker);
                assert_eq!(i.action_id, format!("legacy:{}", e.marker));
                let Op::Assert(a) = &i.ops[0] else {
                    panic!("{}: not an assert", e.marker)
                };
                assert!(!a.content.contains('\n'));
                assert_eq!(a.slot, e.slot);
            }
            _ => assert!(e.intent.is_none(), "{} has an intent", e.marker),
        }
    }
    for must in [
        (Disposition::Adapt, "long_term"),
        (Disposition::Adapt, "long_term_user_asserted"),
        (Disposition::Adjudicate, "short_term"),
        (Disposition::Adjudicate, "archive"),
        (Disposition::Adjudicate, "slot_conflict"),
        (Disposition::Ignored, "inactive"),
        (Disposition::Ignored, "older_revision"),
        (Disposition::Ignored, "malformed_row"),
        (Disposition::Noop, "already_migrated"),
    ] {
        assert!(seen.contains_key(&must), "no {must:?} in {seen:?}");
    }
    // Slots: at most one adapted fact per (account, slot).
    let mut slots = BTreeSet::new();
    for e in es.iter().filter(|e| e.disposition == Disposition::Adapt) {
        if let Some(s) = &e.slot {
            assert!(
                slots.insert((e.account_id.clone(), s.clone())),
                "{} adapts a second value of {s}",
                e.marker
            );
        }
    }
    let slotted = es
        .iter()
        .filter(|e| e.disposition == Disposition::Adapt && e.slot.is_some())
        .count();
    assert!(slotted > 100, "the fixture maps predicates onto slots");

    // Interrupted at five random byte offsets (an interrupted write leaves a partial line),
    // then resumed: the same file.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    for k in 0..5 {
        let cut = rng.random_range(0..bytes.len());
        let part = dir.path().join(format!("part{k}.jsonl"));
        std::fs::write(&part, &bytes[..cut]).unwrap();
        let r = migrate::plan(&fixture(), &part, false).unwrap();
        assert_eq!(
            std::fs::read(&part).unwrap(),
            bytes,
            "resumed after a cut at byte {cut}"
        );
        let whole_lines = bytes[..cut].iter().filter(|&&b| b == b'\n').count() as u64;
        assert_eq!(r.already_planned, whole_lines, "cut at byte {cut}");
    }
    // Re-running over a finished plan plans nothing.
    let again = migrate::plan(&fixture(), &whole, false).unwrap();
    assert_eq!(again.already_planned, 10_000);
    assert!(again.written.is_empty());
    assert_eq!(std::fs::read(&whole).unwrap(), bytes);
}

fn apply_cmd(c: &Config, plan: &Path, report: &Path, rate: &str) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kledger"));
    cmd.args([
        "migrate",
        "apply",
        "--quiet",
        "--timeout-secs",
        "240",
        "--rate",
        rate,
    ])
    .arg("--plan")
    .arg(plan)
    .arg("--report")
    .arg(report)
    .envs(child_env(c, ""))
    .stdout(Stdio::null())
    .stderr(Stdio::piped());
    cmd
}

fn completion(path: &Path) -> Completion {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// Returns as soon as `topic` has a record (any partition).
fn wait_first_record(bootstrap: &str, topic: &str) {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let consumer: BaseConsumer = kledger_topology::kafka::clients::client_at(bootstrap, [])
        .set("group.id", "kledger-test-first-record")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    let mut tpl = rdkafka::TopicPartitionList::new();
    for p in 0..PARTITIONS {
        tpl.add_partition_offset(topic, p, rdkafka::Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&tpl).unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !matches!(consumer.poll(Duration::from_millis(100)), Some(Ok(_))) {
        assert!(
            Instant::now() < deadline,
            "nothing was published to {topic}"
        );
    }
}

/// The payloads of a topic, per partition, in offset order.
fn payloads(c: &Config, topic: &str) -> BTreeMap<i32, Vec<Vec<u8>>> {
    let mut out = BTreeMap::<i32, Vec<Vec<u8>>>::new();
    for r in read_all(&c.kafka.bootstrap_servers, topic, PARTITIONS) {
        out.entry(r.partition).or_default().push(r.payload);
    }
    out
}

#[test]
fn a_migration_killed_midway_and_resumed_commits_what_an_uninterrupted_one_commits() {
    let broker = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let plan = dir.path().join("plan.jsonl");
    migrate::plan(&fixture(), &plan, false).unwrap();
    let adapt = entries(&plan)
        .iter()
        .filter(|e| e.disposition == Disposition::Adapt)
        .count();

    let setup = |name: &str, secret_of: Option<&Config>| {
        let state = dir.path().join(name);
        std::fs::create_dir_all(&state).unwrap();
        let mut c = config(&broker.bootstrap, &state, PARTITIONS, &format!("g-{name}"));
        c.kafka.topic_prefix = format!("mig_{name}");
        create_topics(&broker, &c);
        if let Some(from) = secret_of {
            // Rules v4 key ids and hashes with the ledger's secret: B keys as A does.
            kledger_testkit::kafka::share_secret(from, &c);
        }
        let bin = Path::new(env!("CARGO_BIN_EXE_kledger"));
        let child = spawn_processor(bin, &c, &state, name);
        (c, child)
    };
    let (a, run_a) = setup("a", None);
    let (b, run_b) = setup("b", Some(&a));

    // A: one uninterrupted apply.
    let report_a = dir.path().join("a.done.json");
    let out = apply_cmd(&a, &plan, &report_a, "0").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // B: publishing at 500 intents/s (≈8.5 s), killed with SIGKILL at a random point of it
    // (up to 1.5 s after its first intents are on the topic, however long it took to start),
    // then resumed to the end.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let delay = Duration::from_millis(rng.random_range(0..1_500));
    let report_b = dir.path().join("b.done.json");
    let intents = b.topics().intents;
    let mut first = apply_cmd(&b, &plan, &report_b, "500").spawn().unwrap();
    wait_first_record(&b.kafka.bootstrap_servers, &intents);
    std::thread::sleep(delay);
    first.kill().unwrap();
    first.wait().unwrap();
    let before = read_all(&b.kafka.bootstrap_servers, &intents, PARTITIONS).len();
    eprintln!(
        "killed {delay:?} after the first intents were seen, with {before} of {adapt} published"
    );
    assert!(
        0 < before && before < adapt,
        "the kill came before or after the publishing"
    );
    let out = apply_cmd(&b, &plan, &report_b, "0").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let (ca, cb) = (completion(&report_a), completion(&report_b));
    assert!(ca.complete && cb.complete);
    assert_eq!(ca.published as usize, adapt);
    assert_eq!((cb.published + cb.already_published) as usize, adapt);
    assert_eq!(
        cb.already_published as usize, before,
        "resume skipped what was on the topic"
    );
    assert_eq!(ca.outcomes, cb.outcomes);
    assert_eq!(ca.blocking, cb.blocking);
    assert_eq!(
        ca.outcomes.get("committed").copied().unwrap_or(0) as usize,
        adapt,
        "every adapted row commits: {:?}",
        ca.outcomes
    );
    assert_eq!(
        ca.blocking_total,
        ca.dispositions.get("adjudicate").copied().unwrap_or(0)
    );

    // Each intent on B's topic once, and the same commits byte for byte.
    let intents_b = payloads(&b, &b.topics().intents);
    assert_eq!(intents_b.values().map(Vec::len).sum::<usize>(), adapt);
    let deadline = Instant::now() + Duration::from_secs(60);
    let (oa, ob) = loop {
        let (oa, ob) = (
            payloads(&a, &a.topics().outbox),
            payloads(&b, &b.topics().outbox),
        );
        let n = |o: &BTreeMap<i32, Vec<Vec<u8>>>| o.values().map(Vec::len).sum::<usize>();
        if (n(&oa) == adapt && n(&ob) == adapt) || Instant::now() > deadline {
            break (oa, ob);
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(oa, payloads(&a, &a.topics().outbox));
    // The same commits but for the data keys each ledger drew for its rows (rules v4).
    let decoded = |o: &BTreeMap<i32, Vec<Vec<u8>>>| -> BTreeMap<i32, Vec<kledger_schemas::Commit>> {
        o.iter()
            .map(|(p, v)| {
                let commits = v
                    .iter()
                    .map(|b| {
                        kledger_testkit::kafka::comparable(
                            &kledger_schemas::avro::decode(b, &kledger_schemas::avro::NoRegistry)
                                .unwrap(),
                        )
                    })
                    .collect();
                (*p, commits)
            })
            .collect()
    };
    assert!(
        decoded(&oa) == decoded(&ob),
        "the resumed migration's outbox differs"
    );
    assert_eq!(oa.values().map(Vec::len).sum::<usize>(), adapt);
    adjudicated_rows_are_recorded_then_applied(&a, dir.path(), &plan);
    stop(run_a);
    stop(run_b);
}

/// `kledger migrate adjudicate --apply` over the plan's short-term rows: two promoted, one
/// discarded, and a decision about a row the plan does not list refused; the promotions are
/// published and answered, the discard writes nothing, and a second run records and publishes
/// nothing again.
fn adjudicated_rows_are_recorded_then_applied(c: &Config, dir: &Path, plan: &Path) {
    let short: Vec<String> = entries(plan)
        .into_iter()
        .filter(|e| e.disposition == Disposition::Adjudicate && e.reason == "short_term")
        .map(|e| e.marker)
        .take(3)
        .collect();
    assert_eq!(short.len(), 3, "the fixture lists short-term rows");
    let decisions = dir.join("decisions.jsonl");
    let line = |marker: &str, decision: &str| {
        format!(
            r#"{{"marker": "{marker}", "decision": "{decision}", "by": "reviewer@acme", "note": "asked the user"}}"#
        )
    };
    std::fs::write(
        &decisions,
        [
            line(&short[0], "promote"),
            line(&short[1], "promote"),
            line(&short[2], "discard"),
            line("not-listed@1", "promote"),
        ]
        .join("\n"),
    )
    .unwrap();
    let log = dir.join("adjudication.jsonl");
    let run = || {
        let out = Command::new(env!("CARGO_BIN_EXE_kledger"))
            .args([
                "migrate",
                "adjudicate",
                "--quiet",
                "--apply",
                "--timeout-secs",
                "120",
            ])
            .arg("--input")
            .arg(fixture())
            .arg("--plan")
            .arg(plan)
            .arg("--decisions")
            .arg(&decisions)
            .arg("--out")
            .arg(&log)
            .envs(child_env(c, ""))
            .stdout(Stdio::null())
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        (out.status.code(), err)
    };
    let (_, said) = run();
    assert!(
        said.contains("not-listed@1 is not listed for adjudication"),
        "{said}"
    );
    let recorded = entries(&log);
    let got: Vec<(&str, &str)> = recorded
        .iter()
        .map(|e| (e.disposition.as_str(), e.reason.as_str()))
        .collect();
    let mut got = got;
    got.sort();
    assert_eq!(
        got,
        [
            ("adapt", "adjudicated_promote"),
            ("adapt", "adjudicated_promote"),
            ("ignored", "adjudicated_discard")
        ]
    );
    assert!(recorded.iter().all(|e| {
        e.detail
            .as_deref()
            .is_some_and(|d| d.contains("by reviewer@acme"))
    }));
    let done = completion(&migrate::default_report(&log));
    assert_eq!((done.published, done.unanswered), (2, 0), "{done:?}");
    assert_eq!(done.outcomes.values().sum::<u64>(), 2, "{done:?}");
    // Again: nothing recorded twice, nothing published twice.
    let (_, said) = run();
    assert!(said.contains("3 already recorded"), "{said}");
    assert_eq!(entries(&log).len(), 3);
    let again = completion(&migrate::default_report(&log));
    assert_eq!(
        (again.published, again.already_published),
        (0, 2),
        "{again:?}"
    );
}

/// `kledger migrate vectors`: exported legacy collections copied into `cm_text_<dim>_v1` of the
/// embedded engine with cm_payload_v1 payloads (seed 000's mapping), unmapped collections and
/// bad points skipped and reported, the copy idempotent.
#[test]
fn legacy_vector_collections_are_copied_with_mapped_payloads() {
    use kledger_topology::vector::edge::EdgeIndex;
    use kledger_topology::vector::{QueryVector, VectorIndex};
    let dir = tempfile::tempdir().unwrap();
    let export = dir.path().join("export");
    std::fs::create_dir_all(&export).unwrap();
    let v = |i: usize| -> Vec<f32> {
        (0..8)
            .map(|j| if j == i % 8 { 1.0 } else { 0.01 })
            .collect()
    };
    let mut docs = String::new();
    for i in 0..5 {
        docs += &serde_json::json!({"id": i, "vector": v(i),
            "payload": {"text": format!("helion doc {i}"), "doc_id": format!("doc_{i}"), "lang": "uk"}})
        .to_string();
        docs += "\n";
    }
    docs += "{\"id\": 99, \"vector\": [1.0, 2.0]}\n"; // another dimension
    docs += "not json\n";
    std::fs::write(export.join("helion_docs.jsonl"), docs).unwrap();
    let mut mem = String::new();
    for i in 0..3 {
        mem += &serde_json::json!({"id": format!("00000000-0000-0000-0000-00000000000{i}"),
            "vector": {"default": v(i + 5)}, "payload": {"content": "likes tea", "owner_kind": "user", "owner_id": "u_7"}})
        .to_string();
        mem += "\n";
    }
    std::fs::write(export.join("helion_memory_items.jsonl"), mem).unwrap();
    std::fs::write(
        export.join("random_stuff.jsonl"),
        "{\"id\": 1, \"vector\": [0.5]}\n{\"id\": 2, \"vector\": [0.5]}\n",
    )
    .unwrap();
    let out = dir.path().join("qdrant");
    let run = || {
        let o = Command::new(env!("CARGO_BIN_EXE_kledger"))
            .args(["migrate", "vectors", "--quiet", "--tenant", "t_daarion"])
            .arg("--from-export")
            .arg(&export)
            .arg("--to-dir")
            .arg(&out)
            .env("KLEDGER_HTTP__LISTEN", "")
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
            .collect::<Vec<_>>()
    };
    let reports = run();
    let by: BTreeMap<&str, &serde_json::Value> = reports
        .iter()
        .map(|r| (r["legacy"].as_str().unwrap(), r))
        .collect();
    assert_eq!(by["helion_docs"]["written"], 5);
    assert_eq!(by["helion_docs"]["skipped"]["dimension_mismatch"], 1);
    assert_eq!(by["helion_docs"]["skipped"]["malformed_point"], 1);
    assert_eq!(by["helion_docs"]["target"], "cm_text_8_v1");
    assert_eq!(by["helion_memory_items"]["written"], 3);
    assert_eq!(by["random_stuff"]["written"], 0);
    assert_eq!(by["random_stuff"]["skipped"]["unmapped_collection"], 2);

    let check = || {
        let index = EdgeIndex::open(&out, "cm_text_8_v1", 8).unwrap();
        let points = index.scan().unwrap();
        assert_eq!(points.len(), 8);
        let docs: Vec<_> = points
            .iter()
            .filter(|(_, p)| p["scope"] == "docs")
            .collect();
        assert_eq!(docs.len(), 5);
        for (_, p) in &docs {
            assert_eq!(p["schema_version"], "cm_payload_v1");
            assert_eq!(
                (p["agent_id"].as_str(), p["tenant_id"].as_str()),
                (Some("agt_helion"), Some("t_daarion"))
            );
            assert_eq!(p["embedding"]["dim"], 8);
            assert!(p.get("text").is_none());
        }
        let memory: Vec<_> = points
            .iter()
            .filter(|(_, p)| p["scope"] == "memory")
            .collect();
        assert_eq!(memory.len(), 3);
        assert!(
            memory
                .iter()
                .all(|(_, p)| p["owner_id"] == "u_7" && p["agent_id"] == "agt_helion")
        );
        // The vectors came along: each doc's own vector finds it first.
        let id = uuid::Uuid::from_u128(kledger_processors::legacy::point_id("helion_docs", "3"));
        let hits = index
            .query(QueryVector::Dense(v(3)), &serde_json::json!({}), 1)
            .unwrap();
        assert_eq!(hits[0].0, id);
    };
    check();
    // Again: the same points, overwritten in place.
    let again = run();
    assert_eq!(again, reports);
    check();
}
