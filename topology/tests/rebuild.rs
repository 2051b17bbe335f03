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
use kledger_topology::config::Config;
use kledger_topology::generations::Generations;
use kledger_topology::rebuild::{Projection, rebuild};
use kledger_topology::runtime;
use kledger_topology::vector::VectorIndex;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const PARTITIONS: i32 = 4;

/// Per account, the last commit_seq `kledger apply` gives.
fn last_seqs(c: &Config, records: &[kledger_schemas::IntentRecord]) -> BTreeMap<String, i64> {
    let (want, _) = expected(records, c.kafka.partitions);
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
fn run_until_projected(
    b: &TestBroker,
    c: &Config,
    seqs: &BTreeMap<String, i64>,
) -> runtime::Running {
    let running = b.rt.block_on(runtime::start(c.clone())).unwrap();
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

fn scan(c: &Config, generation: &str) -> kledger_topology::vector::Scanned {
    let dir = c.vectors.dir.join(generation).join("index");
    let name = kledger_processors::payload::collection_name("text", 256, 1);
    let idx = kledger_topology::vector::edge::EdgeIndex::open(&dir, &name, 256).unwrap();
    idx.scan().unwrap()
}

#[test]
fn rebuilt_projections_equal_the_live_ones_and_swap_in_while_running() {
    let b = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let c = config(&b.bootstrap, dir.path(), PARTITIONS, "rebuild");
    create_topics(&b, &c);
    let records = stream(31, 30, 3_000);
    publish_all(&c, &records);
    let seqs = last_seqs(&c, &records);
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
    let r = rebuild(&c, Projection::Views, false).unwrap();
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
    b.rt.block_on(running.stop()).unwrap();
    let rebuilt = ViewStore::open(&views.path("g000002"), 8 << 20).unwrap();
    assert_eq!(rebuilt.digest().unwrap(), live_digest);
    drop(rebuilt);

    // Rebuild the vectors (kledger stopped): the same points and payloads.
    let live_points = scan(&c, "g000001");
    assert!(live_points.len() > 100, "live index has points");
    let r = rebuild(&c, Projection::Vectors, false).unwrap();
    assert_eq!(r.generation, "g000002");
    assert_eq!(scan(&c, "g000002"), live_points);
    // A second rebuild deletes the generation nobody holds any more.
    let r = rebuild(&c, Projection::Vectors, false).unwrap();
    assert_eq!(
        (r.generation.as_str(), r.deleted),
        ("g000003", vec!["g000001".to_owned()])
    );
}

#[test]
fn a_rebuild_killed_at_random_points_resumes_and_ends_equal() {
    let b = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&b.bootstrap, dir.path(), PARTITIONS, "rebuild-kill");
    c.vectors.enabled = false;
    create_topics(&b, &c);
    let records = stream(32, 60, 8_000);
    publish_all(&c, &records);
    let seqs = last_seqs(&c, &records);
    let running = run_until_projected(&b, &c, &seqs);
    b.rt.block_on(running.stop()).unwrap();
    let views = Generations::new(&c.views.dir).unwrap();
    let live_digest = ViewStore::open(&views.path("g000001"), 8 << 20)
        .unwrap()
        .digest()
        .unwrap();

    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let (mut kills, mut runs) = (0, 0);
    let mut resumed_runs = 0;
    loop {
        runs += 1;
        assert!(runs <= 6, "more runs than planned");
        let resuming = views.building().unwrap().is_some();
        let mut child = Command::new(env!("CARGO_BIN_EXE_kledger"))
            .args(["rebuild", "views", "--quiet"])
            .envs(child_env(&c, "127.0.0.1:0"))
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Five runs are killed at random points (before, during or after the first batches);
        // the sixth runs to the end.
        let wait = if kills < 5 {
            Duration::from_millis(rng.random_range(100..1_500))
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
                assert!(s.success(), "rebuild failed: {s}");
                resumed_runs += usize::from(resuming);
                break;
            }
            None => {
                child.kill().unwrap();
                child.wait().unwrap();
                kills += 1;
                resumed_runs += usize::from(resuming);
            }
        }
    }
    let active = views.active().unwrap().unwrap();
    assert_ne!(active, "g000001");
    assert_eq!(views.building().unwrap(), None);
    let rebuilt = ViewStore::open(&views.path(&active), 8 << 20).unwrap();
    assert_eq!(rebuilt.digest().unwrap(), live_digest);
    eprintln!(
        "rebuild kill -9: {kills} kills over {runs} runs ({resumed_runs} resumed a generation), ended equal in {active}"
    );
    assert!(kills >= 1, "at least one rebuild was killed");
}
