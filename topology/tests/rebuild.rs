//! `kledger rebuild views|qdrant` against the embedded broker: a rebuilt view store and a
//! rebuilt vector collection equal the live ones; a running kledger swaps the rebuilt view
//! generation in and deletes the old one; a rebuild killed with SIGKILL at random points
//! resumes its generation and ends equal.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use kledger_state::ViewStore;
use kledger_topology::app;
use kledger_topology::config::Config;
use kledger_topology::generations::Generations;
use kledger_topology::pipeline::rebuild::{ProjectionKind, rebuild};
use kledger_topology::vector::{Scanned, VectorIndex};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

const PARTITIONS: i32 = 4;

/// Per account, the last commit_seq `kledger apply` gives.
fn last_seqs(c: &Config, records: &[kledger_schemas::IntentRecord]) -> BTreeMap<String, i64> {
    let (want, _) = expected(c, records, c.kafka.partitions);
    let mut m = BTreeMap::new();
    for x in want {
        m.insert(x.account_id, x.commit_seq);
    }
    m
}

/// Reads the view store generation at `dir` while its owner runs (a RocksDB follower).
fn follower(dir: &Path, scratch: &Path) -> ViewStore {
    ViewStore::open_secondary(dir, scratch, 8 << 20).unwrap()
}

/// Runs kledger until the views of every account reach their last commit.
fn run_until_projected(b: &TestBroker, c: &Config, seqs: &BTreeMap<String, i64>) -> app::Running {
    let running = b.rt.block_on(app::start(c.clone())).unwrap();
    let gens = Generations::new(&c.views.dir).unwrap();
    let deadline = Instant::now() + Duration::from_secs(180);
    let scratch = tempfile::tempdir().unwrap();
    loop {
        assert!(!running.finished(), "kledger stopped");
        assert!(Instant::now() < deadline, "views not caught up in time");
        std::thread::sleep(Duration::from_millis(300));
        let Ok(Some(g)) = gens.active() else { continue };
        let Ok(v) = ViewStore::open_secondary(&gens.path(&g), scratch.path(), 8 << 20) else {
            continue;
        };
        if seqs
            .iter()
            .all(|(a, s)| v.mark(a).is_ok_and(|m| m.commit_seq == *s))
            && running.status.ready()
        {
            return running;
        }
    }
}

fn open_vectors(c: &Config, generation: &str) -> kledger_topology::vector::edge::EdgeIndex {
    let dir = c.vectors.dir.join(generation).join("index");
    let name = kledger_processors::payload::collection_name("text", 256, 1);
    kledger_topology::vector::edge::EdgeIndex::open(&dir, &name, 256).unwrap()
}

fn scan(c: &Config, generation: &str) -> Scanned {
    open_vectors(c, generation).scan().unwrap()
}

/// `got` has the points and payloads of `want`; on a difference, says which points differ
/// (missing, extra, other payload) and shows the first, rather than both scans whole.
fn assert_same_points(got: &Scanned, want: &Scanned, what: &str) {
    if got == want {
        return;
    }
    let got: BTreeMap<_, _> = got.iter().map(|(id, p)| (*id, p)).collect();
    let want: BTreeMap<_, _> = want.iter().map(|(id, p)| (*id, p)).collect();
    let missing: Vec<_> = want.keys().filter(|id| !got.contains_key(id)).collect();
    let extra: Vec<_> = got.keys().filter(|id| !want.contains_key(id)).collect();
    let changed: Vec<_> = want
        .iter()
        .filter(|(id, p)| got.get(id).is_some_and(|g| g != *p))
        .map(|(id, _)| id)
        .collect();
    let first = changed.first().map(|id| {
        let (g, w) = (got[*id], want[*id]);
        let fields: Vec<_> = w
            .iter()
            .filter(|(k, v)| g.get(*k) != Some(*v))
            .map(|(k, v)| format!("{k}: {:?} != {v}", g.get(k)))
            .collect();
        (id, fields)
    });
    panic!(
        "{what}: {} of {} points missing (first {:?}), {} extra (first {:?}), {} with other payloads (first {first:?})",
        missing.len(),
        want.len(),
        missing.first(),
        extra.len(),
        extra.first(),
        changed.len(),
    );
}

/// The value at a dotted `path` of a payload.
fn at<'a>(payload: &'a serde_json::Map<String, Value>, path: &str) -> Option<&'a Value> {
    let (first, rest) = path.split_once('.').unwrap_or((path, ""));
    let mut v = payload.get(first)?;
    for key in rest.split('.').filter(|k| !k.is_empty()) {
        v = v.get(key)?;
    }
    Some(v)
}

/// Filters on every indexed payload field (up to three values of each keyword field, both
/// bool values, a range of each integer field, taken from `points`), each with the number of
/// `points` it admits.
fn filters(points: &Scanned) -> Vec<(Value, usize)> {
    use kledger_processors::payload::{BOOL_FIELDS, INTEGER_FIELDS, KEYWORD_FIELDS};
    let mut out = Vec::new();
    for field in KEYWORD_FIELDS {
        let has = |v: &Value, want: &str| match v {
            Value::Array(a) => a.iter().any(|x| x.as_str() == Some(want)),
            other => other.as_str() == Some(want),
        };
        let mut values = std::collections::BTreeSet::new();
        for (_, p) in points {
            match at(p, field) {
                Some(Value::Array(a)) => values.extend(a.iter().filter_map(|x| x.as_str())),
                Some(v) => values.extend(v.as_str()),
                None => {}
            }
        }
        for value in values.into_iter().take(3) {
            let n = points
                .iter()
                .filter(|(_, p)| at(p, field).is_some_and(|v| has(v, value)))
                .count();
            out.push((
                json!({"must": [{"key": field, "match": {"value": value}}]}),
                n,
            ));
        }
    }
    for field in BOOL_FIELDS {
        for value in [true, false] {
            let n = points
                .iter()
                .filter(|(_, p)| at(p, field) == Some(&Value::Bool(value)))
                .count();
            out.push((
                json!({"must": [{"key": field, "match": {"value": value}}]}),
                n,
            ));
        }
    }
    for field in INTEGER_FIELDS {
        let mut values: Vec<i64> = points
            .iter()
            .filter_map(|(_, p)| at(p, field).and_then(Value::as_i64))
            .collect();
        values.sort_unstable();
        let Some(&mid) = values.get(values.len() / 2) else {
            continue;
        };
        let n = values.iter().filter(|v| **v >= mid).count();
        out.push((json!({"must": [{"key": field, "range": {"gte": mid}}]}), n));
    }
    out
}

/// Every filter of [`filters`] counts as many points in the collection of `generation` as
/// in `points`, and most filters admit some.
fn assert_filtered_counts(c: &Config, generation: &str, points: &Scanned) {
    let index = open_vectors(c, generation);
    let filters = filters(points);
    for (filter, want) in &filters {
        assert_eq!(
            index.count(filter).unwrap(),
            *want,
            "{generation}: {filter}"
        );
    }
    let matching = filters.iter().filter(|(_, n)| *n > 0).count();
    assert!(matching >= 20, "too few filters match: {filters:?}");
}

/// A configuration under `dir` for consumer group `group` (its topics created, vectors on or
/// off), with `n` generated intents over `accounts` accounts (seed `seed`) published; with each
/// account's last commit_seq.
fn published(
    b: &TestBroker,
    dir: &Path,
    group: &str,
    vectors: bool,
    (seed, accounts, n): (u64, usize, usize),
) -> (Config, BTreeMap<String, i64>) {
    let mut c = config(&b.bootstrap, dir, PARTITIONS, group);
    c.vectors.enabled = vectors;
    create_topics(b, &c);
    let records = stream(seed, accounts, n);
    publish_all(&c, &records);
    let seqs = last_seqs(&c, &records);
    (c, seqs)
}

#[test]
fn rebuilt_projections_equal_the_live_ones_and_swap_in_while_running() {
    let b = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let (c, seqs) = published(&b, dir.path(), "rebuild", true, (31, 30, 3_000));
    let running = run_until_projected(&b, &c, &seqs);
    let views = Generations::new(&c.views.dir).unwrap();
    assert_eq!(views.active().unwrap().as_deref(), Some("g000001"));
    let scratch = tempfile::tempdir().unwrap();
    let live_digest = {
        let v = follower(&views.path("g000001"), scratch.path());
        v.catch_up().unwrap();
        v.digest().unwrap()
    };

    // Rebuild the views while kledger runs: the new generation is swapped in and the old one
    // deleted once the running sink and readers let go of it.
    let r = rebuild(&c, ProjectionKind::Views, false).unwrap();
    assert_eq!((r.generation.as_str(), r.resumed), ("g000002", false));
    assert!(r.records as usize >= seqs.values().sum::<i64>() as usize);
    let deadline = Instant::now() + Duration::from_secs(30);
    while views.path("g000001").exists() {
        assert!(
            Instant::now() < deadline,
            "the running kledger did not swap in the rebuilt views"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The sink starts again on the new generation (publishing its pending Views first) and is
    // ready once it has read to the end of the outbox.
    while !running.status.ready() {
        assert!(
            Instant::now() < deadline,
            "not ready again on the new generation"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // The sources store has folded every account's last commit too.
    let sources = Generations::new(&c.sources_dir()).unwrap();
    let source_scratch = tempfile::tempdir().unwrap();
    let follower_sources = follower(&sources.path("g000001"), source_scratch.path());
    while !seqs.iter().all(|(a, s)| {
        follower_sources.catch_up().is_ok()
            && follower_sources.mark(a).is_ok_and(|m| m.commit_seq == *s)
    }) {
        assert!(
            Instant::now() < deadline,
            "the sources store did not catch up"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(follower_sources);
    b.rt.block_on(running.stop()).unwrap();
    let rebuilt = ViewStore::open(&views.path("g000002"), 8 << 20).unwrap();
    assert_eq!(rebuilt.digest().unwrap(), live_digest);
    drop(rebuilt);

    // Rebuild the sources store (kledger stopped): the same store, and it holds documents.
    let live_sources = ViewStore::open(&sources.path("g000001"), 8 << 20)
        .unwrap()
        .with_lane(kledger_state::Lane::Sources);
    let live_sources_digest = live_sources.digest().unwrap();
    let people: usize = seqs
        .keys()
        .map(|a| live_sources.people(a, 100).unwrap().len())
        .sum();
    assert!(people > 0, "the stream put people documents");
    drop(live_sources);
    let r = rebuild(&c, ProjectionKind::Sources, false).unwrap();
    assert_eq!(r.generation, "g000002");
    let rebuilt = ViewStore::open(&sources.path("g000002"), 8 << 20).unwrap();
    assert_eq!(rebuilt.digest().unwrap(), live_sources_digest);
    drop(rebuilt);

    // Rebuild the vectors (kledger stopped): the same points and payloads.
    let live_points = scan(&c, "g000001");
    assert!(live_points.len() > 100, "live index has points");
    let r = rebuild(&c, ProjectionKind::Vectors, false).unwrap();
    assert_eq!(r.generation, "g000002");
    assert_same_points(&scan(&c, "g000002"), &live_points, "rebuilt");
    // Its payload indexes (written build-only, rebuilt when it opens) answer filters as the
    // live ones do.
    assert_filtered_counts(&c, "g000001", &live_points);
    assert_filtered_counts(&c, "g000002", &live_points);
    // A second rebuild deletes the generation nobody holds any more.
    let r = rebuild(&c, ProjectionKind::Vectors, false).unwrap();
    assert_eq!(
        (r.generation.as_str(), r.deleted),
        ("g000003", vec!["g000001".to_owned()])
    );
}

/// Runs `kledger rebuild <what>` (`views` or `qdrant`) in a child process, killing it with
/// SIGKILL at a random point `kills` times (before, during or after its first batches; each
/// run waits a random time in `window` ms), then once to the end. Returns the runs that
/// resumed an interrupted generation.
fn kill_until_rebuilt(
    c: &Config,
    dir: &Path,
    what: &str,
    gens: &Generations,
    kills: usize,
    window: std::ops::Range<u64>,
) -> usize {
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let (mut killed, mut resumed_runs) = (0, 0);
    loop {
        let resuming = gens.building().unwrap().is_some();
        resumed_runs += usize::from(resuming);
        let mut child = Command::new(env!("CARGO_BIN_EXE_kledger"))
            .args(["rebuild", what, "--quiet"])
            .envs(child_env(c, "127.0.0.1:0"))
            .current_dir(dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let wait = if killed < kills {
            Duration::from_millis(rng.random_range(window.clone()))
        } else {
            Duration::from_secs(120)
        };
        let started = Instant::now();
        let mut done = None;
        while started.elapsed() < wait {
            if let Some(s) = child.try_wait().unwrap() {
                done = Some(s);
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        match done {
            Some(s) => {
                assert!(s.success(), "rebuild {what} failed: {s}");
                break;
            }
            None => {
                assert!(killed < kills, "rebuild {what} did not end in 120 s");
                child.kill().unwrap();
                child.wait().unwrap();
                killed += 1;
            }
        }
    }
    let active = gens.active().unwrap().unwrap();
    assert_ne!(active, "g000001");
    assert_eq!(gens.building().unwrap(), None);
    eprintln!(
        "rebuild {what} kill -9: {killed} kills over {} runs ({resumed_runs} resumed a generation), ended in {active}",
        killed + 1
    );
    resumed_runs
}

#[test]
fn a_rebuild_killed_at_random_points_resumes_and_ends_equal() {
    let b = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let (c, seqs) = published(&b, dir.path(), "rebuild-kill", false, (32, 60, 8_000));
    let running = run_until_projected(&b, &c, &seqs);
    b.rt.block_on(running.stop()).unwrap();
    let views = Generations::new(&c.views.dir).unwrap();
    let live_digest = ViewStore::open(&views.path("g000001"), 8 << 20)
        .unwrap()
        .digest()
        .unwrap();

    kill_until_rebuilt(&c, dir.path(), "views", &views, 5, 100..1_500);
    let active = views.active().unwrap().unwrap();
    let rebuilt = ViewStore::open(&views.path(&active), 8 << 20).unwrap();
    assert_eq!(rebuilt.digest().unwrap(), live_digest);
}

#[test]
fn a_vector_rebuild_killed_at_random_points_resumes_and_ends_equal() {
    let b = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let (c, seqs) = published(
        &b,
        dir.path(),
        "rebuild-kill-vectors",
        true,
        (33, 40, 4_000),
    );
    let vectors = Generations::new(&c.vectors.dir).unwrap();
    // Ready means each sink reached the outbox's end once; the vector sink may still be behind
    // the views. Its marks say where it is (read once kledger stops: the sink holds them).
    let mut projected = false;
    for _ in 0..5 {
        let running = run_until_projected(&b, &c, &seqs);
        std::thread::sleep(Duration::from_secs(1));
        b.rt.block_on(running.stop()).unwrap();
        let marks = kledger_topology::vector::open_marks(&vectors.path("g000001")).unwrap();
        if seqs.iter().all(|(a, s)| marks.applied(a).unwrap() == *s) {
            projected = true;
            break;
        }
    }
    assert!(projected, "the live vector projection did not catch up");
    let live_points = scan(&c, "g000001");

    // Killed while the build-only collection is written (or before, or after): a resumed
    // generation reopens build-only and ends with the live points, payloads and filters.
    let resumed = kill_until_rebuilt(&c, dir.path(), "qdrant", &vectors, 4, 300..3_000);
    assert!(resumed >= 1, "no run resumed an interrupted generation");
    let active = vectors.active().unwrap().unwrap();
    assert_same_points(&scan(&c, &active), &live_points, "after kills");
    assert_filtered_counts(&c, &active, &live_points);
}
