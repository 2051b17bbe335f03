//! Bench: the vector projection and search_knowledge on the embedded Qdrant engine.
//!
//! In one run, on one generated ledger (realistic intents over 1,000 accounts, through the real
//! decide path):
//! - (a) the vector sink's write path (plan against marks, embed, build cm_payload_v1 points,
//!   upsert/delete, write marks) over every commit, in batches of 1,000 outbox records, versus
//!   (b) raw batched upserts of the same final points (vectors and payloads prepared before
//!   the clock starts) to a fresh collection of the same backend — the limit. Goal ≥ 0.8.
//! - search_knowledge (embed the query, dense + sparse candidates under the access filter,
//!   fusion, hydration from the view store, access check) versus a raw filtered dense query of
//!   the same collection (owner, tenant, active; limit 8): p50 and p99 over 2,000 queries each.
//!   Goal: search p99 ≤ 2× raw p99.
//!
//! Run: `cargo bench -p kledger-topology --bench vectors` (add `-- 50000` for fewer intents;
//! the default 130,000 intents give ≈100k points).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

use kledger_processors::access::Principal;
use kledger_processors::embed::HashEmbedder;
use kledger_processors::payload::{AccountRef, access_filter};
use kledger_processors::routing::partition_for;
use kledger_schemas::{Commit, OwnerKind};
use kledger_state::{MarkStore, ViewBatch, ViewStore};
use kledger_testkit::{GenConfig, Generator, Ledger};
use kledger_topology::config::Config;
use kledger_topology::generations::Live;
use kledger_topology::pipeline::project::OutboxCommit;
use kledger_topology::pipeline::project::vectors::{apply, plan};
use kledger_topology::serve::api::Api;
use kledger_topology::serve::api::search::{SearchRequest, search_knowledge};
use kledger_topology::vector::SearchIndex;
use kledger_topology::vector::edge::EdgeIndex;
use kledger_topology::vector::embedder::{Embedder, LocalEmbedder};
use kledger_topology::vector::{Point, QueryVector, VectorGen, VectorIndex};

/// The bench's projections never swap generations.
fn no_swap<T>(_: &std::path::Path) -> anyhow::Result<T> {
    anyhow::bail!("no generation swaps in this bench")
}

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const PARTITIONS: i32 = 12;
const BATCH: usize = 1_000;
const QUERIES: usize = 2_000;
const WORDS: &[&str] = &[
    "lives", "works", "likes", "report", "weekly", "city", "team", "prefers", "coffee", "meeting",
    "flight", "project", "data", "tell", "when",
];

fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn positioned(commits: &[Commit]) -> Vec<OutboxCommit> {
    kledger_testkit::kafka::positioned(commits, |c| {
        partition_for(c.account_id.as_bytes(), PARTITIONS)
    })
}

fn main() {
    kledger_topology::memory::disable_transparent_huge_pages().expect("THP off");
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(130_000);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut ledger = Ledger::new(PARTITIONS);
    for r in Generator::new(GenConfig {
        seed: 3,
        accounts: 1_000,
        ..GenConfig::default()
    })
    .take(n)
    {
        ledger.apply(&r);
    }
    let commits = positioned(&ledger.commits);
    let embedder = LocalEmbedder::new(256);
    let hasher = HashEmbedder::default();
    println!("{n} intents → {} commits", commits.len());

    // (a) The sink's write path.
    let sink_index =
        EdgeIndex::open(&dir.path().join("sink"), "cm_text_256_v1", 256).expect("index");
    let marks = MarkStore::open(&dir.path().join("marks")).expect("marks");
    let started = Instant::now();
    let mut written = 0u64;
    for chunk in commits.chunks(BATCH) {
        let pl = plan(&marks, chunk).expect("plan");
        let (u, d) = apply(&sink_index, &embedder, &hasher, &pl).expect("apply");
        written += u + d;
        let mut applied = BTreeMap::new();
        let mut positions = BTreeMap::new();
        for c in chunk {
            applied.insert(c.commit.account_id.clone(), c.commit.commit_seq);
            positions.insert(c.partition, c.offset + 1);
        }
        marks
            .write(&applied, &positions.into_iter().collect(), &[])
            .expect("marks");
    }
    let sink_s = started.elapsed().as_secs_f64();
    let points = sink_index.scan().expect("scan");
    let sink_rate = commits.len() as f64 / sink_s;
    println!(
        "(a) vector sink: {} commits → {written} point writes ({} points at the end) in {sink_s:.2} s: {sink_rate:.0} commits/s, {:.0} point writes/s",
        commits.len(),
        points.len(),
        written as f64 / sink_s
    );

    // (b) Raw batched upserts of the same final points.
    let raw_index = EdgeIndex::open(&dir.path().join("raw"), "cm_text_256_v1", 256).expect("index");
    let mut prepared = Vec::with_capacity(points.len());
    for (id, payload) in &points {
        let memory_id = payload["memory_id"].as_str().expect("memory_id");
        let account = format!(
            "{}/{}/{}",
            payload["tenant_id"].as_str().unwrap_or_default(),
            payload["owner_kind"].as_str().unwrap_or_default(),
            payload["owner_id"].as_str().unwrap_or_default()
        );
        let row = ledger.row(&account, memory_id).expect("row");
        prepared.push(Point {
            id: *id,
            dense: embedder
                .embed(&[row.content.as_str()])
                .expect("embed")
                .remove(0),
            sparse: hasher.embed(&row.content).sparse,
            payload: payload.clone(),
        });
    }
    let per_batch = (points.len() * BATCH / commits.len().max(1)).max(1);
    let started = Instant::now();
    for chunk in prepared.chunks(per_batch) {
        raw_index.upsert(chunk.to_vec()).expect("upsert");
    }
    let raw_s = started.elapsed().as_secs_f64();
    let raw_points_rate = prepared.len() as f64 / raw_s;
    let sink_points_rate = written as f64 / sink_s;
    println!(
        "(b) raw upserts: {} points in batches of {per_batch} in {raw_s:.2} s: {raw_points_rate:.0} points/s",
        prepared.len()
    );
    println!(
        "sink / raw (point writes/s): {:.2} (goal ≥ 0.80)",
        sink_points_rate / raw_points_rate
    );

    // Search: the whole search_knowledge path versus a raw filtered query.
    let views = ViewStore::open(&dir.path().join("views"), 64 << 20).expect("views");
    for chunk in commits.chunks(BATCH) {
        let mut vb = ViewBatch::default();
        for c in chunk {
            views
                .fold(&mut vb, &c.commit, c.partition, c.offset)
                .expect("fold");
        }
        views.write(vb).expect("write");
    }
    let index: Arc<dyn VectorIndex> = Arc::new(sink_index);
    let live_index = Live::with_value(
        &dir.path().join("gens"),
        "g000001",
        VectorGen {
            index: index.clone(),
            marks: None,
        },
        no_swap::<VectorGen>,
    )
    .expect("live index");
    let api = Api {
        config: Arc::new(Config::default()),
        views: Arc::new(
            Live::with_value(
                &dir.path().join("gens"),
                "g000001",
                views,
                no_swap::<ViewStore>,
            )
            .expect("live views"),
        ),
        partitions: PARTITIONS,
        producer: Arc::default(),
        codec: Arc::default(),
        search: Some(Arc::new(std::sync::OnceLock::from(SearchIndex {
            live: Arc::new(live_index),
            embedder: Arc::new(embedder.clone()),
        }))),
        exports: Arc::new(tokio::sync::Semaphore::new(2)),
        receipts: Arc::default(),
        state: None,
    };
    let accounts: Vec<String> = {
        let mut a: Vec<String> = ledger
            .commits
            .iter()
            .map(|c| c.account_id.clone())
            .collect();
        a.sort();
        a.dedup();
        a
    };
    let mut raw_ms = Vec::with_capacity(QUERIES);
    let mut search_ms = Vec::with_capacity(QUERIES);
    let mut found = 0usize;
    for i in 0..QUERIES {
        let account = &accounts[(i * 7919) % accounts.len()];
        let a = AccountRef::parse(account).expect("account");
        let p = Principal {
            tenant_id: a.tenant_id.clone(),
            team_id: None,
            agent_id: None,
            roles: vec![],
            owner_kind: OwnerKind::parse(&a.owner_kind).expect("kind"),
            owner_id: a.owner_id.clone(),
        };
        let query = format!(
            "{} {}",
            WORDS[i % WORDS.len()],
            WORDS[(i / 3) % WORDS.len()]
        );
        let started = Instant::now();
        let q = embedder.embed(&[query.as_str()]).expect("embed").remove(0);
        let hits = index
            .query(QueryVector::Dense(q), &access_filter(&p, &a, &[]), 8)
            .expect("query");
        raw_ms.push(started.elapsed().as_secs_f64() * 1e3);
        let started = Instant::now();
        let answer = search_knowledge(
            &api,
            &p,
            SearchRequest {
                query,
                limit: Some(8),
                kinds: vec![],
                account: None,
            },
        )
        .expect("search");
        search_ms.push(started.elapsed().as_secs_f64() * 1e3);
        found += usize::from(!answer.results.is_empty() && !hits.is_empty());
    }
    let (raw50, raw99) = (quantile(&mut raw_ms, 0.5), quantile(&mut raw_ms, 0.99));
    let (s50, s99) = (
        quantile(&mut search_ms, 0.5),
        quantile(&mut search_ms, 0.99),
    );
    println!(
        "raw filtered query over {} points: p50 {raw50:.3} ms, p99 {raw99:.3} ms",
        points.len()
    );
    println!(
        "search_knowledge: p50 {s50:.3} ms, p99 {s99:.3} ms ({found}/{QUERIES} queries answered)"
    );
    println!("search p99 / raw p99: {:.2} (goal ≤ 2.00)", s99 / raw99);
    drop(raw_index);
    reopen(&dir.path().join("reopen"), &prepared);
    patches(&dir.path().join("patches"), &prepared, per_batch);
}

/// What each run-time switchable change to the vendored engine
/// (`vendor/qdrant-edge/KLEDGER-PATCH.md`) pays, on the write path a rebuild uses: the same
/// final points written into a fresh collection with every change on (build-only, as
/// `rebuild qdrant` writes) and with one change off at a time, 3 runs each, alternating, medians; from open to closed (flushed). Changes 1, 3 and 5
/// are compiled in and have no switch.
fn patches(root: &std::path::Path, points: &[Point], per_batch: usize) {
    use kledger_topology::vector::edge::EdgeOptions;
    let all = EdgeOptions {
        build_only: true,
        ..Default::default()
    };
    let configs: [(&str, EdgeOptions); 4] = [
        ("every change on", all),
        (
            "change 2 off (write-ahead log on)",
            EdgeOptions {
                wal_logging: true,
                ..all
            },
        ),
        (
            "change 4 off (indexes on disk; change 6 then defers nothing)",
            EdgeOptions {
                in_memory_indexes: false,
                ..all
            },
        ),
        (
            "change 6 off (in-memory indexes kept up to date)",
            EdgeOptions {
                build_only: false,
                ..all
            },
        ),
    ];
    let mut rates: Vec<Vec<f64>> = vec![Vec::new(); configs.len()];
    for run in 0..3 {
        for (i, (_, options)) in configs.iter().enumerate() {
            let dir = root.join(format!("{run}-{i}"));
            let started = Instant::now();
            let index = EdgeIndex::open_with(&dir, "cm_text_256_v1", 256, *options).expect("index");
            for chunk in points.chunks(per_batch) {
                index.upsert(chunk.to_vec()).expect("upsert");
            }
            drop(index);
            rates[i].push(points.len() as f64 / started.elapsed().as_secs_f64());
            std::fs::remove_dir_all(&dir).expect("remove");
        }
    }
    let median = |v: &mut Vec<f64>| quantile(v, 0.5);
    let base = median(&mut rates[0]);
    println!(
        "engine changes, {} points written into a fresh build-only collection, medians of 3 runs:",
        points.len()
    );
    println!("  {}: {base:.0} points/s", configs[0].0);
    for (i, (name, _)) in configs.iter().enumerate().skip(1) {
        let rate = median(&mut rates[i]);
        println!(
            "  {name}: {rate:.0} points/s; the change pays ×{:.2}",
            base / rate
        );
    }
}

/// What opening a collection costs with the appendable segments' keyword and integer indexes
/// in memory (rebuilt from the payloads at load, the default) and on disk (upstream: read
/// back), at the worst case: each shard's appendable segment just short of being sealed. The
/// first on-disk open writes the indexes the in-memory ones never wrote.
fn reopen(root: &std::path::Path, points: &[Point]) {
    use kledger_topology::vector::edge::{EdgeOptions, SEAL_POINTS, SHARDS};
    let n = points.len().min(SHARDS * (SEAL_POINTS - 2_000));
    let index = EdgeIndex::open(root, "cm_text_256_v1", 256).expect("index");
    for chunk in points[..n].chunks(BATCH) {
        index.upsert(chunk.to_vec()).expect("upsert");
    }
    let (per_shard, segments) = (
        index.points_per_shard().expect("points"),
        index.segments().expect("segments"),
    );
    drop(index);
    let open = |in_memory_indexes: bool| {
        let started = Instant::now();
        let index = EdgeIndex::open_with(
            root,
            "cm_text_256_v1",
            256,
            EdgeOptions {
                in_memory_indexes,
                ..Default::default()
            },
        )
        .expect("reopen");
        let secs = started.elapsed().as_secs_f64();
        drop(index);
        secs
    };
    let in_memory = open(true);
    open(false);
    let on_disk = open(false);
    println!(
        "reopen of {per_shard:?} points per shard in {segments} segments: {in_memory:.2} s with \
         in-memory indexes (rebuilt), {on_disk:.2} s with on-disk indexes (read back)"
    );
}
