//! Bench: the embedder, the vector projection and search_knowledge on the embedded Qdrant
//! engine, with the default embedder (the local model; `-- hash` for the hashing embedder).
//!
//! In one run, on one generated ledger (realistic intents over 1,000 accounts, through the real
//! decide path):
//! - the embedder: rows/s over 5,000 of the ledger's rows in batches of 256 (goal ≥ 1,000 short
//!   rows/s on two cores), and one query's embedding latency, p50 and p99 over 2,000 distinct
//!   queries (no cache).
//! - (a) the vector sink's write path (plan against marks, embed, build cm_payload_v1 points,
//!   upsert/delete, write marks) over every commit, in batches of 1,000 outbox records, with
//!   the time spent embedding reported apart, versus (b) raw batched upserts of the same final
//!   points (the same vectors, and payloads, prepared before the clock starts) to a fresh
//!   collection of the same backend — the limit. Goal: the sink without its embedding ≥ 0.8 of
//!   raw. The process's resident memory before and after the burst, and its peak.
//! - search_knowledge (embed the query, dense + BM25 candidates under the access filter,
//!   fusion, hydration from the view store, access check) versus a raw filtered dense query of
//!   the same collection with the query vector given (owner, tenant, active; limit 8): p50 and
//!   p99 over 2,000 distinct queries. Goal: search p99 ≤ query-embedding p99 + 2× raw p99, with
//!   the query embedding timed in the same loop, between the searches (the model streams all
//!   its weights for each query, and its latency moves with the machine's other tenants: p99
//!   2.3–2.5 ms back to back before the loop, 3.8–4.8 ms in it, between the searches or right
//!   after another embedding); the ratios against both back-to-back figures are printed too.
//!   Then where search's time goes: its ranking and its hydration, and each provider alone at
//!   search's depth.
//!
//! Run: `cargo bench -p kledger-topology --bench vectors` (add `-- 50000` for fewer intents;
//! the default 130,000 intents give ≈100k points).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use kledger_processors::access::Principal;
use kledger_processors::bm25::Bm25;
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
use kledger_topology::serve::api::at::{At, rows_at};
use kledger_topology::serve::api::search::{
    Fusion, KeywordThreads, SearchRequest, rank, search_knowledge,
};
use kledger_topology::vector::SearchIndex;
use kledger_topology::vector::edge::EdgeIndex;
use kledger_topology::vector::embedder::{Embedder, HashingEmbedder};
use kledger_topology::vector::{Point, QueryVector, VectorError, VectorGen, VectorIndex};

/// The bench's embedder, timed: the time spent embedding, and each text's vector kept for the
/// raw side (which must write the same vectors without embedding them again).
#[derive(Debug)]
struct Timed {
    inner: Arc<dyn Embedder>,
    nanos: AtomicU64,
    vectors: Mutex<BTreeMap<String, Vec<f32>>>,
}

impl Embedder for Timed {
    fn model(&self) -> &str {
        self.inner.model()
    }
    fn dim(&self) -> usize {
        self.inner.dim()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, VectorError> {
        let started = Instant::now();
        let out = self.inner.embed(texts)?;
        self.nanos
            .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        let mut kept = self.vectors.lock().expect("vectors");
        for (t, v) in texts.iter().zip(&out) {
            kept.insert((*t).to_owned(), v.clone());
        }
        Ok(out)
    }
}

/// The vectors a [`Timed`] embedder made, served again without embedding: the sink's write
/// path measured alone, embedding excluded rather than subtracted (the model's threads and the
/// engine's contend for the same cores).
#[derive(Debug)]
struct Replay {
    model: String,
    dim: usize,
    vectors: BTreeMap<String, Vec<f32>>,
}

impl Embedder for Replay {
    fn model(&self) -> &str {
        &self.model
    }
    fn dim(&self) -> usize {
        self.dim
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, VectorError> {
        texts
            .iter()
            .map(|t| {
                self.vectors
                    .get(*t)
                    .cloned()
                    .ok_or_else(|| VectorError::Backend(format!("no vector kept for {t:?}")))
            })
            .collect()
    }
}

/// Drives the vector sink's write path over `commits` into `index` with `embedder`; the point
/// writes and the seconds taken.
fn sink_run(
    index: &EdgeIndex,
    marks: &MarkStore,
    embedder: &dyn Embedder,
    commits: &[OutboxCommit],
) -> (u64, f64) {
    let started = Instant::now();
    let mut written = 0u64;
    for chunk in commits.chunks(BATCH) {
        let pl = plan(marks, chunk).expect("plan");
        let (u, d) = apply(index, embedder, &pl).expect("apply");
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
    (written, started.elapsed().as_secs_f64())
}

/// The process's resident memory and its peak, MiB (`/proc/self/status`).
fn rss_mib() -> (f64, f64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|kb| kb.parse::<f64>().ok())
            .map_or(0.0, |kb| kb / 1024.0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

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
    let base: Arc<dyn Embedder> = if std::env::args().any(|a| a == "hash") {
        Arc::new(HashingEmbedder::new(256))
    } else {
        kledger_testkit::retrieval::default_embedder().expect("the local model")
    };
    let dim = base.dim();
    let name = kledger_processors::payload::collection_name("text", dim, 1);
    println!(
        "{n} intents → {} commits; embedder {} ({dim} dimensions)",
        commits.len(),
        base.model()
    );

    // The embedder alone: rows/s, and one query's latency.
    let texts: Vec<String> = {
        let mut t: Vec<String> = commits
            .iter()
            .flat_map(|c| c.commit.ops.iter().map(|o| o.row.content.clone()))
            .filter(|t| !t.is_empty())
            .collect();
        t.sort();
        t.dedup();
        t.truncate(5_000);
        t
    };
    let started = Instant::now();
    for chunk in texts.chunks(256) {
        let refs: Vec<&str> = chunk.iter().map(String::as_str).collect();
        base.embed(&refs).expect("embed");
    }
    let embed_rate = texts.len() as f64 / started.elapsed().as_secs_f64();
    let mean_chars =
        texts.iter().map(|t| t.chars().count()).sum::<usize>() as f64 / texts.len().max(1) as f64;
    println!(
        "embedder: {} rows (mean {mean_chars:.0} chars) at {embed_rate:.0} rows/s (goal ≥ 1,000)",
        texts.len()
    );
    let query_of = |i: usize| {
        format!(
            "{} {} {i}",
            WORDS[i % WORDS.len()],
            WORDS[(i / 3) % WORDS.len()]
        )
    };
    let mut embed_ms: Vec<f64> = (0..QUERIES)
        .map(|i| {
            let q = query_of(i);
            let started = Instant::now();
            base.embed(&[q.as_str()]).expect("embed");
            started.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    let (e50, e99) = (quantile(&mut embed_ms, 0.5), quantile(&mut embed_ms, 0.99));
    println!("query embedding: p50 {e50:.3} ms, p99 {e99:.3} ms ({QUERIES} distinct queries)");
    let embedder = Arc::new(Timed {
        inner: base.clone(),
        nanos: AtomicU64::new(0),
        vectors: Mutex::new(BTreeMap::new()),
    });

    // (a) The sink's write path.
    let sink_index = EdgeIndex::open(&dir.path().join("sink"), &name, dim).expect("index");
    let marks = MarkStore::open(&dir.path().join("marks")).expect("marks");
    let (rss_before, _) = rss_mib();
    let (written, sink_s) = sink_run(&sink_index, &marks, embedder.as_ref(), &commits);
    let embed_s = embedder.nanos.load(Ordering::Relaxed) as f64 / 1e9;
    let (rss_after, rss_peak) = rss_mib();
    let points = sink_index.scan().expect("scan");
    let sink_rate = commits.len() as f64 / sink_s;
    println!(
        "(a) vector sink: {} commits → {written} point writes ({} points at the end) in {sink_s:.2} s ({embed_s:.2} s of it embedding): {sink_rate:.0} commits/s, {:.0} point writes/s, {:.0} without the embedding",
        commits.len(),
        points.len(),
        written as f64 / sink_s,
        written as f64 / (sink_s - embed_s).max(1e-9)
    );
    println!(
        "    resident memory {rss_before:.0} MiB before the burst, {rss_after:.0} MiB after (peak {rss_peak:.0} MiB; the vectors kept for (b) included)"
    );

    // (a') The same write path again into a fresh index, with the vectors (a) made served
    // without embedding.
    let replay = Replay {
        model: base.model().to_owned(),
        dim,
        vectors: embedder.vectors.lock().expect("vectors").clone(),
    };
    let replay_index = EdgeIndex::open(&dir.path().join("sink2"), &name, dim).expect("index");
    let replay_marks = MarkStore::open(&dir.path().join("marks2")).expect("marks");
    let (rewritten, replay_s) = sink_run(&replay_index, &replay_marks, &replay, &commits);
    println!(
        "(a') vector sink with its vectors made beforehand: {rewritten} point writes in {replay_s:.2} s: {:.0} point writes/s",
        rewritten as f64 / replay_s
    );
    drop(replay_index);

    // (b) Raw batched upserts of the same final points.
    let raw_index = EdgeIndex::open(&dir.path().join("raw"), &name, dim).expect("index");
    let vectors = embedder.vectors.lock().expect("vectors").clone();
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
        let text = kledger_processors::index_text::dense(&row);
        prepared.push(Point {
            id: *id,
            dense: vectors
                .get(&text)
                .cloned()
                .unwrap_or_else(|| base.embed(&[text.as_str()]).expect("embed").remove(0)),
            sparse: Bm25::default().document(&kledger_processors::index_text::keyword(&row)),
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
    let sink_points_rate = rewritten as f64 / replay_s;
    println!(
        "(b) raw upserts: {} points in batches of {per_batch} in {raw_s:.2} s: {raw_points_rate:.0} points/s",
        prepared.len()
    );
    println!(
        "sink with its vectors made beforehand / raw (point writes/s): {:.2} (goal ≥ 0.80); with its embedding: {:.2}",
        sink_points_rate / raw_points_rate,
        written as f64 / sink_s / raw_points_rate
    );

    // Search: the whole search_knowledge path versus a raw filtered query.
    let views = ViewStore::open(&dir.path().join("views"), 64 << 20).expect("views");
    // The data keys the view sink reads from the keys topic before it folds (rules v4): rows
    // are sealed at rest and opened when read.
    kledger_state::KeyCache::add(
        &views,
        &kledger_testkit::ledger::key_records(&ledger.commits, PARTITIONS),
    )
    .expect("keys");
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
            embedder: base.clone(),
            marks: None,
        },
        no_swap::<VectorGen>,
    )
    .expect("live index");
    let api = Api::new(
        Arc::new(Config::default()),
        Arc::new(
            Live::with_value(
                &dir.path().join("gens"),
                "g000001",
                views,
                no_swap::<ViewStore>,
            )
            .expect("live views"),
        ),
        PARTITIONS,
        Arc::default(),
        Some(Arc::new(std::sync::OnceLock::from(SearchIndex {
            live: Arc::new(live_index),
        }))),
        None,
    );
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
    let (mut rank_ms, mut hydrate_ms) = (Vec::new(), Vec::new());
    let keywords = KeywordThreads::default();
    let (mut dense_ms, mut keyword_ms, mut between_ms) = (Vec::new(), Vec::new(), Vec::new());
    let mut adjacent_ms = Vec::with_capacity(QUERIES);
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
        // Distinct queries: each is embedded (the model's query cache never answers).
        let query = query_of(QUERIES + i);
        let filter = access_filter(&p, &a, &[]);
        // The query's embedding here, between the searches, sees the caches as search's does
        // (the back-to-back figure above does not).
        let started = Instant::now();
        let q = base.embed(&[query.as_str()]).expect("embed").remove(0);
        between_ms.push(started.elapsed().as_secs_f64() * 1e3);
        // Another distinct query at once, back to back with that one in the same stretch of
        // time: the back-to-back figure free of whatever else the machine did minutes apart.
        let started = Instant::now();
        base.embed(&[query_of(3 * QUERIES + i).as_str()])
            .expect("embed");
        adjacent_ms.push(started.elapsed().as_secs_f64() * 1e3);
        let started = Instant::now();
        let hits = index
            .query(QueryVector::Dense(q.clone()), &filter, 8)
            .expect("query");
        raw_ms.push(started.elapsed().as_secs_f64() * 1e3);
        // Each provider alone at search's depth (16 candidates for 8 results).
        let started = Instant::now();
        index
            .query(QueryVector::Dense(q), &filter, 16)
            .expect("query");
        dense_ms.push(started.elapsed().as_secs_f64() * 1e3);
        let started = Instant::now();
        let sparse = Bm25::default().query(&query);
        if !sparse.indices.is_empty() {
            index
                .query(QueryVector::Sparse(sparse), &filter, 16)
                .expect("query");
        }
        keyword_ms.push(started.elapsed().as_secs_f64() * 1e3);
        let started = Instant::now();
        let answer = search_knowledge(
            &api,
            &p,
            SearchRequest {
                query,
                limit: Some(8),
                kinds: vec![],
                account: None,
                as_of: None,
                known_at: None,
                min_commit_seq: None,
                wait_ms: None,
            },
        )
        .expect("search");
        search_ms.push(started.elapsed().as_secs_f64() * 1e3);
        found += usize::from(!answer.results.is_empty() && !hits.is_empty());
        // Where search's time goes: its ranking (embedding, both providers, fusion) for
        // another distinct query, then the hydration of as many rows as it returns.
        let started = Instant::now();
        let ranked = rank(
            &index,
            base.as_ref(),
            &Fusion::default(),
            &filter,
            &query_of(2 * QUERIES + i),
            8,
            &keywords,
        )
        .expect("rank");
        rank_ms.push(started.elapsed().as_secs_f64() * 1e3);
        let started = Instant::now();
        let ids: Vec<String> = ranked
            .iter()
            .take(8)
            .map(|(id, _)| kledger_processors::ids::memory_id_of(id.as_u128()))
            .collect();
        let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
        rows_at(&api, account, &ids, At::new(None, None)).expect("rows");
        hydrate_ms.push(started.elapsed().as_secs_f64() * 1e3);
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
    println!(
        "  its parts: ranking (embedding, both providers, fusion) p50 {:.3} ms, p99 {:.3} ms; hydrating 8 rows p50 {:.3} ms, p99 {:.3} ms",
        quantile(&mut rank_ms, 0.5),
        quantile(&mut rank_ms, 0.99),
        quantile(&mut hydrate_ms, 0.5),
        quantile(&mut hydrate_ms, 0.99)
    );
    let (b50, b99) = (
        quantile(&mut between_ms, 0.5),
        quantile(&mut between_ms, 0.99),
    );
    println!(
        "  the providers alone at its depth (16): dense p50 {:.3} ms, p99 {:.3} ms; keyword p50 {:.3} ms, p99 {:.3} ms; the query embedding between the searches p50 {b50:.3} ms, p99 {b99:.3} ms",
        quantile(&mut dense_ms, 0.5),
        quantile(&mut dense_ms, 0.99),
        quantile(&mut keyword_ms, 0.5),
        quantile(&mut keyword_ms, 0.99),
    );
    let (a50, a99) = (
        quantile(&mut adjacent_ms, 0.5),
        quantile(&mut adjacent_ms, 0.99),
    );
    println!(
        "  the query embedding back to back inside the search loop (each right after the one between the searches): p50 {a50:.3} ms, p99 {a99:.3} ms"
    );
    println!(
        "search p99 {s99:.3} ms against query-embedding p99 (between the searches) + 2 × raw p99 = {:.3} ms: ratio {:.2} (goal ≤ 1.00); against the back-to-back embedding's p99: {:.2} (measured before the searches), {:.2} (inside the search loop)",
        b99 + 2.0 * raw99,
        s99 / (b99 + 2.0 * raw99),
        s99 / (e99 + 2.0 * raw99),
        s99 / (a99 + 2.0 * raw99)
    );
    drop(raw_index);
    reopen(&dir.path().join("reopen"), &name, dim, &prepared);
    patches(
        &dir.path().join("patches"),
        &name,
        dim,
        &prepared,
        per_batch,
    );
}

/// What each run-time switchable change to the vendored engine
/// (`vendor/qdrant-edge/KLEDGER-PATCH.md`) pays, on the write path a rebuild uses: the same
/// final points written into a fresh collection with every change on (build-only, as
/// `rebuild qdrant` writes) and with one change off at a time, 3 runs each, alternating, medians; from open to closed (flushed). Changes 1, 3 and 5
/// are compiled in and have no switch.
fn patches(root: &std::path::Path, name: &str, dim: usize, points: &[Point], per_batch: usize) {
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
            let index = EdgeIndex::open_with(&dir, name, dim, *options).expect("index");
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
fn reopen(root: &std::path::Path, name: &str, dim: usize, points: &[Point]) {
    use kledger_topology::vector::edge::{EdgeOptions, SEAL_POINTS, SHARDS};
    let n = points.len().min(SHARDS * (SEAL_POINTS - 2_000));
    let index = EdgeIndex::open(root, name, dim).expect("index");
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
            name,
            dim,
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
