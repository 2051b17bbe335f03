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
use kledger_topology::embedded::free_port;
use kledger_topology::migrate::{self, Completion};
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

    let setup = |name: &str| {
        let state = dir.path().join(name);
        std::fs::create_dir_all(&state).unwrap();
        let mut c = config(&broker.bootstrap, &state, PARTITIONS, &format!("g-{name}"));
        c.kafka.topic_prefix = format!("mig_{name}");
        create_topics(&broker, &c);
        let port = free_port().unwrap();
        let env = [
            ("KLEDGER_VIEWS__ENABLED", "false"),
            ("KLEDGER_VECTORS__ENABLED", "false"),
        ];
        let bin = Path::new(env!("CARGO_BIN_EXE_kledger"));
        let mut child = spawn_kledger(bin, &c, port, &state, name, &env);
        wait_ready(&mut child, port, &state, name);
        (c, child)
    };
    let (a, run_a) = setup("a");
    let (b, run_b) = setup("b");

    // A: one uninterrupted apply.
    let report_a = dir.path().join("a.done.json");
    let out = apply_cmd(&a, &plan, &report_a, "0").output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // B: publishing at 1,000 intents/s (≈4.3 s), killed with SIGKILL at a random point of
    // it, then resumed to the end.
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
    let delay = Duration::from_millis(rng.random_range(1_500..3_500));
    let report_b = dir.path().join("b.done.json");
    let intents = b.topics().intents;
    let mut first = apply_cmd(&b, &plan, &report_b, "1000").spawn().unwrap();
    std::thread::sleep(delay);
    first.kill().unwrap();
    first.wait().unwrap();
    let before = read_all(&b.kafka.bootstrap_servers, &intents, PARTITIONS).len();
    eprintln!("killed {delay:?} after the start, with {before} of {adapt} intents published");
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
    assert!(oa == ob, "the resumed migration's outbox differs");
    assert_eq!(oa.values().map(Vec::len).sum::<usize>(), adapt);
    stop(run_a);
    stop(run_b);
}
