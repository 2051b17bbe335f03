//! The embedded backend: Qdrant's engine in-process (qdrant-edge 0.7). Writes take a shard's
//! lock exclusively; queries share it. A durable write ([`VectorIndex::write_batch`]) returns
//! once every shard has flushed (the engine does not replay its WAL on load, so an unflushed
//! write would not survive a crash); a rebuild writes unsynced and syncs every many batches.
//!
//! **Local shards.** Like a Qdrant server collection's `shard_number`, a collection is split
//! into [`SHARDS`] engine shards (`shard-N/` under the collection's directory; the count is
//! fixed when the collection is created and kept in its `SHARDS` file). A point lives in the
//! shard its id hashes to. Each shard has a writer thread with a queue of one batch: a write
//! splits its batch by shard and queues the parts, so the shards write at once and a slow
//! shard does not hold the others back until a sync. A query asks every shard for its best and
//! merges them (score, then id). One engine shard writes on one thread, so sharding is what
//! lets a rebuild use both cores. A collection created before sharding (the shard's files
//! directly in the collection's directory) opens as one shard.
//!
//! **Sealing.** Upstream's appendable segment keeps sparse vectors in a mutable inverted index
//! whose append walked the whole posting list of the term, which made one ever-growing segment
//! quadratic to write; the vendored engine (`vendor/qdrant-edge/KLEDGER-PATCH.md`) fixes that.
//! Qdrant's server seals segments with background optimizers; the embedded engine only
//! optimizes when asked. So every [`SEAL_POINTS`] points written to a shard, the index runs the
//! engine's optimizers, which turn an appendable segment past the indexing threshold (about
//! [`SEAL_POINTS`] vectors) into an immutable one and open a fresh appendable segment. This
//! bounds the appendable segment. Dense vectors get no HNSW graph (`m = 0`): search stays an
//! exact scan, and sealing costs a copy rather than a graph build.
//!
//! **No WAL.** Upstream's engine writes every operation (whole points, as CBOR) to its
//! write-ahead log and never truncates it, so the log grows with every write forever; and it
//! never replays the log on load, so the log protects nothing (a write is durable once flushed,
//! which is why [`VectorIndex::write_batch`] flushes). The vendored engine can leave the log
//! alone (`EdgeShard::set_wal_logging`, `vendor/qdrant-edge/KLEDGER-PATCH.md`) while it goes on
//! numbering operations past every number its segments have seen, and kledger turns logging off
//! on every open. A shard's log written before that (by an older kledger) is trimmed when the
//! shard opens: every closed log segment but the newest is deleted.
//!
//! **Payload indexes in memory.** Upstream's appendable segment writes each point's values of
//! every keyword and integer payload index to a store of its own on disk, besides the payload
//! storage, so that loading can read the index back; that was about a fifth of the shard
//! writers' CPU, plus flush work. The vendored engine can keep those indexes in memory only
//! and rebuild them from the payload storage when a segment loads
//! (`set_in_memory_appendable_indexes`, all fields in one pass), and kledger turns that on. Opening a shard then costs one pass over the payloads of
//! its appendable segment, which [`SEAL_POINTS`] bounds; sealed segments keep upstream's
//! on-disk indexes.
//!
//! **Build-only.** A rebuild's new collection is written, never searched, and opened afresh
//! when it is swapped in, which rebuilds those in-memory indexes anyway. So an index opened
//! [`EdgeOptions::build_only`] has the engine leave them alone on writes
//! (`defer_memory_only_indexes`, vendored change 6; tenant keys and on-disk indexes are still
//! written), about a fifth of the shard writers' work, and refuses filtered reads.
//!
//! **Kept between reads.** An index keeps the filters it has read from JSON (by their JSON, at
//! most `FILTERS_KEPT`), and each shard keeps the BM25 document frequencies it has counted
//! until it is next locked for writing (so a kept count is always the present one): a
//! caller's searches repeat both.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::thread::JoinHandle;

use qdrant_edge::{
    CountRequest, CreateIndex, Distance, EdgeConfig, EdgeOptimizersConfig, EdgeShard,
    EdgeSparseVectorParams, EdgeVectorParams, FieldIndexOperations, Filter, HnswIndexConfig,
    JsonPath, KeywordIndexParams, NamedQuery, Payload, PayloadFieldSchema, PayloadSchemaParams,
    PayloadSchemaType, PointId, PointInsertOperations, PointOperations, PointStructPersisted,
    QueryEnum, QueryRequest, ScoringQuery, ScrollRequest, UpdateOperation, Vector, VectorInternal,
    Vectors, WalOptions, WithPayloadInterface, WithVector,
};
use serde_json::Value;
use uuid::Uuid;

use super::{
    DENSE, FieldType, Point, QueryVector, SPARSE, Scanned, VectorError, VectorIndex,
    payload_indexes,
};

fn err(e: impl std::fmt::Display) -> VectorError {
    VectorError::Backend(e.to_string())
}

/// Local shards of a new collection (module comment).
pub const SHARDS: usize = kledger_runtime::config::EDGE_SHARDS;

/// Points written to a shard between two runs of the engine's optimizers (see the module
/// comment), and about the size of an appendable segment when it is sealed.
pub const SEAL_POINTS: usize = 50_000;

/// Segments the engine's merge optimizer keeps per shard before merging the smallest ones.
pub const SEGMENTS: usize = 16;

/// Bytes per segment of a shard's write-ahead log: the smallest [`EdgeIndex::open_with`]
/// allows. Logging is off, so nothing is written to it, but the engine preallocates (fallocates)
/// its open segment and the next one: at the engine's default of 32 MiB, 128 MiB of disk per
/// two-shard collection for nothing.
pub const WAL_SEGMENT_BYTES: usize = 64 << 10;

/// The file naming a sharded collection's shard count.
const SHARDS_FILE: &str = "SHARDS";
/// The engine's own config file, which a shard's directory holds.
const ENGINE_CONFIG_FILE: &str = "edge_config.json";

/// How an [`EdgeIndex`] is laid out and maintained.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EdgeOptions {
    /// Shards of a collection this open creates (an existing collection keeps its count).
    pub shards: usize,
    /// Points written to a shard between two runs of its optimizers.
    pub seal_points: usize,
    /// Bytes per segment of a shard's write-ahead log.
    pub wal_segment_bytes: usize,
    /// Whether appendable segments keep their keyword and integer payload indexes in memory
    /// and rebuild them when they load (module comment). The engine's switch is process-wide:
    /// every open sets it, so all indexes a process holds should agree.
    pub in_memory_indexes: bool,
    /// Whether writes leave the in-memory indexes alone (the collection is built, not
    /// searched, and opened again before it is searched: a rebuild's new generation; module
    /// comment). Such an index refuses filtered reads ([`VectorIndex::query`] and
    /// [`VectorIndex::count`]).
    pub build_only: bool,
    /// Whether the engine logs every operation in its write-ahead log, as upstream does. Off by
    /// default: the edge shard never replays that log, so it protects nothing (vendored change
    /// 2); on only to measure what switching it off saves (`benches/vectors.rs`).
    pub wal_logging: bool,
}

impl Default for EdgeOptions {
    fn default() -> Self {
        Self {
            shards: SHARDS,
            seal_points: SEAL_POINTS,
            wal_segment_bytes: WAL_SEGMENT_BYTES,
            in_memory_indexes: true,
            build_only: false,
            wal_logging: false,
        }
    }
}

/// One engine shard. `None` only once it is being dropped.
struct Shard {
    dir: PathBuf,
    /// Whether its segments defer their in-memory indexes ([`EdgeOptions::build_only`]).
    build_only: bool,
    engine: RwLock<Option<EdgeShard>>,
    /// Points written since the optimizers last ran.
    unsealed: AtomicUsize,
    /// The sparse terms' document frequencies read since the shard was last locked for
    /// writing ([`Shard::document_frequencies`]).
    frequencies: Mutex<Frequencies>,
}

/// A shard's sparse statistics as its read lock holders see them: filled under the read lock
/// and cleared whenever the write lock is taken, so an entry always answers what the engine
/// would for the shard's present points. At most [`FREQUENCY_TERMS`] terms (cleared when full).
#[derive(Debug, Default)]
struct Frequencies {
    /// The points left in the shard.
    points: Option<usize>,
    /// Each term's document frequency.
    terms: HashMap<u32, usize>,
}

/// Sparse terms whose document frequencies a shard keeps between writes: a BM25 query's
/// statistics otherwise walk each term's posting lists in every segment that holds deleted
/// points (vendored change 7), about a quarter of the engine's time in a keyword query on the
/// vectors bench.
const FREQUENCY_TERMS: usize = 1 << 16;

/// Work for a shard's writer thread.
enum Job {
    /// Write (not yet flushed).
    Write(Vec<Point>, Vec<Uuid>),
    /// Flush, then answer with the first error since the last answer (writes after an error
    /// are dropped until it is answered).
    Sync(SyncSender<Result<(), VectorError>>),
    /// Rewrite every segment that holds a deleted point ([`VectorIndex::erase_deleted`]),
    /// then flush and answer as `Sync` does.
    Erase(SyncSender<Result<(), VectorError>>),
}

/// A collection in an in-process Qdrant engine.
pub struct EdgeIndex {
    name: String,
    shards: Vec<Arc<Shard>>,
    /// Each shard's writer thread's queue (one job waits while one is written).
    writers: Vec<SyncSender<Job>>,
    threads: Vec<JoinHandle<()>>,
    /// [`EdgeOptions::build_only`].
    build_only: bool,
    /// When the erasure of deleted points runs.
    erasure: super::ErasureSchedule,
    /// Filters already read, by their JSON ([`EdgeIndex::filter_of`]).
    filters: Mutex<HashMap<String, Arc<Filter>>>,
}

/// Filters an index keeps read (cleared when full): a search's access filter is the same for
/// each of its caller's searches, and reading one from JSON into the engine's form took about
/// 30 µs on the vectors bench, a sixth of a raw filtered query.
const FILTERS_KEPT: usize = 1024;

/// The engine settings that keep writes linear (module comment): segments sealed at about
/// `seal_points` vectors of `dim` dimensions, no HNSW graph.
fn sealing(dim: usize, seal_points: usize) -> (HnswIndexConfig, EdgeOptimizersConfig) {
    let hnsw = HnswIndexConfig {
        m: 0,
        payload_m: Some(0),
        ..HnswIndexConfig::default()
    };
    let optimizers = EdgeOptimizersConfig {
        default_segment_number: Some(SEGMENTS),
        // The threshold is in KiB of dense vectors (f32).
        indexing_threshold: Some((dim * 4 * seal_points / 1024).max(1)),
        ..EdgeOptimizersConfig::default()
    };
    (hnsw, optimizers)
}

impl Drop for EdgeIndex {
    fn drop(&mut self) {
        // Closing the queues ends the writer threads once they have written what was queued.
        self.writers.clear();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl std::fmt::Debug for EdgeIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EdgeIndex")
            .field("name", &self.name)
            .field("shards", &self.shards.len())
            .finish()
    }
}

/// A lock whose holder cannot leave its data half-written (the kept filters and statistics
/// are replaced or cleared whole), so a panic elsewhere while it was held does not poison it.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn filter(v: &Value) -> Result<Filter, VectorError> {
    serde_json::from_value(v.clone()).map_err(|e| VectorError::Filter(e.to_string()))
}

fn uuid_of(id: &PointId) -> Option<Uuid> {
    match id {
        PointId::Uuid(u) => Some(*u),
        PointId::NumId(_) => None,
    }
}

/// How deep [`tie_complete`] asks each shard, at most, as a multiple of the limit.
pub const TIE_DEPTH_MAX: usize = 8;

/// The best `limit` hits, by score then id, from shards asked through `ask(want)` for their
/// best `want` each: the same on every replica holding the same points. An engine cuts its
/// best `want` among equal scores by its internal offsets, which differ between replicas (and
/// BM25 gives many rows the same score), so a hit is kept only where the cut cannot have
/// dropped one that outranks it: above the lowest score of every shard that returned all it
/// was asked for. While fewer than `limit` are certain, the shards are asked twice as deep, up
/// to [`TIE_DEPTH_MAX`] times the limit; past that (more than that many points tied at the
/// cut), the uncertain ones fill the answer by score and id, and replicas may differ there.
pub fn tie_complete(
    limit: usize,
    mut ask: impl FnMut(usize) -> Result<Vec<Vec<(Uuid, f32)>>, VectorError>,
) -> Result<Vec<(Uuid, f32)>, VectorError> {
    if limit == 0 {
        return Ok(Vec::new());
    }
    let deepest = limit.saturating_mul(TIE_DEPTH_MAX);
    let mut want = limit.saturating_add(1);
    loop {
        let per_shard = ask(want)?;
        // Scores at or below this may be missing from a shard that was cut.
        let cut = per_shard
            .iter()
            .filter(|hits| hits.len() >= want)
            .filter_map(|hits| hits.iter().map(|h| h.1).reduce(f32::min))
            .reduce(f32::max);
        let mut hits: Vec<(Uuid, f32)> = per_shard.into_iter().flatten().collect();
        hits.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        let certain = cut.map_or(hits.len(), |c| hits.partition_point(|h| h.1 > c));
        if certain >= limit || cut.is_none() || want >= deepest {
            hits.truncate(limit);
            return Ok(hits);
        }
        want = want.saturating_mul(2).min(deepest);
    }
}

/// The closed segments of the write-ahead log in `wal` (`closed-<first index>`), by first
/// index.
fn closed_wal_segments(wal: &Path) -> Result<Vec<(u64, PathBuf)>, VectorError> {
    let mut closed = Vec::new();
    let entries = match std::fs::read_dir(wal) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(closed),
        Err(e) => return Err(err(e)),
    };
    for entry in entries {
        let entry = entry.map_err(err)?;
        let name = entry.file_name();
        if let Some(start) = name
            .to_str()
            .and_then(|n| n.strip_prefix("closed-"))
            .and_then(|n| n.parse::<u64>().ok())
        {
            closed.push((start, entry.path()));
        }
    }
    closed.sort();
    Ok(closed)
}

/// Deletes every closed log segment of the (closed) shard at `dir` but the newest: what the
/// log's own truncation keeps. Returns how many were deleted.
fn trim_wal(dir: &Path) -> Result<usize, VectorError> {
    let mut closed = closed_wal_segments(&dir.join("wal"))?;
    closed.pop();
    for (_, path) in &closed {
        std::fs::remove_file(path).map_err(err)?;
    }
    Ok(closed.len())
}

/// Writes `text` to `path` atomically (a temporary file renamed over it, then synced).
fn write_atomically(path: &Path, text: &str) -> Result<(), VectorError> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).map_err(err)?;
    std::fs::File::open(&tmp)
        .and_then(|f| f.sync_all())
        .map_err(err)?;
    std::fs::rename(&tmp, path).map_err(err)?;
    if let Some(parent) = path.parent() {
        std::fs::File::open(parent)
            .and_then(|f| f.sync_all())
            .map_err(err)?;
    }
    Ok(())
}

/// The shard directories of the collection at `dir`: an existing collection's, or
/// `options.shards` new ones (the count written first, so a crash midway still finds it).
fn shard_dirs(dir: &Path, options: &EdgeOptions) -> Result<Vec<PathBuf>, VectorError> {
    std::fs::create_dir_all(dir).map_err(err)?;
    let count_file = dir.join(SHARDS_FILE);
    let count = match std::fs::read_to_string(&count_file) {
        Ok(text) => text
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| {
                VectorError::Backend(format!(
                    "{} does not name a shard count: {text:?}",
                    count_file.display()
                ))
            })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if dir.join(ENGINE_CONFIG_FILE).exists() {
                // Created before sharding: the collection is one shard.
                return Ok(vec![dir.to_path_buf()]);
            }
            let n = options.shards;
            write_atomically(&count_file, &format!("{n}\n"))?;
            n
        }
        Err(e) => return Err(err(e)),
    };
    Ok((0..count).map(|i| dir.join(format!("shard-{i}"))).collect())
}

impl Shard {
    /// Opens (or creates) the shard at `dir`: trims its log, loads it, applies the sealing
    /// settings and the payload indexes. A build-only shard's segments defer their in-memory
    /// indexes from before it loads until [`Shard`] is dropped.
    fn load(dir: &Path, dim: usize, options: &EdgeOptions) -> Result<EdgeShard, VectorError> {
        if !options.build_only {
            return Self::load_engine(dir, dim, options);
        }
        qdrant_edge::defer_memory_only_indexes(dir, true);
        let loaded = Self::load_engine(dir, dim, options);
        if loaded.is_err() {
            qdrant_edge::defer_memory_only_indexes(dir, false);
        }
        loaded
    }

    fn load_engine(
        dir: &Path,
        dim: usize,
        options: &EdgeOptions,
    ) -> Result<EdgeShard, VectorError> {
        std::fs::create_dir_all(dir).map_err(err)?;
        trim_wal(dir)?;
        let (hnsw, optimizers) = sealing(dim, options.seal_points);
        let config = EdgeConfig::builder()
            .vector(
                DENSE,
                EdgeVectorParams::builder(dim, Distance::Cosine).build(),
            )
            .sparse_vector(SPARSE, EdgeSparseVectorParams::builder().build())
            .hnsw_config(hnsw)
            .optimizers(optimizers.clone())
            .wal_options(WalOptions {
                segment_capacity: options.wal_segment_bytes,
                ..WalOptions::default()
            })
            .build();
        let shard = EdgeShard::load(dir, Some(config)).map_err(err)?;
        // The engine never replays its log: logging every point would cost CPU and disk for
        // nothing (vendored patch, module comment).
        shard.set_wal_logging(options.wal_logging);
        // A collection created before sealing keeps its stored settings: set them.
        shard.set_hnsw_config(hnsw).map_err(err)?;
        shard.set_optimizers_config(optimizers).map_err(err)?;
        // Indexes before data; re-issued on every open (idempotent), so a segment created at
        // load has them too.
        for (field, kind) in payload_indexes() {
            let schema = match kind {
                FieldType::Keyword { tenant: true } => PayloadFieldSchema::FieldParams(
                    PayloadSchemaParams::Keyword(KeywordIndexParams {
                        is_tenant: Some(true),
                        ..Default::default()
                    }),
                ),
                FieldType::Keyword { tenant: false } => {
                    PayloadFieldSchema::FieldType(PayloadSchemaType::Keyword)
                }
                FieldType::Integer => PayloadFieldSchema::FieldType(PayloadSchemaType::Integer),
                FieldType::Bool => PayloadFieldSchema::FieldType(PayloadSchemaType::Bool),
            };
            let field_name: JsonPath = field
                .parse()
                .map_err(|()| VectorError::Backend(format!("bad field path {field}")))?;
            shard
                .update(UpdateOperation::FieldIndexOperation(
                    FieldIndexOperations::CreateIndex(CreateIndex {
                        field_name,
                        field_schema: Some(schema),
                    }),
                ))
                .map_err(err)?;
        }
        shard.flush();
        Ok(shard)
    }

    fn read(&self) -> Result<ShardRead<'_>, VectorError> {
        let guard = self
            .engine
            .read()
            .map_err(|_| VectorError::Backend("shard lock poisoned".into()))?;
        engine(&guard, &self.dir)?;
        Ok(ShardRead(guard))
    }

    /// The shard locked for writing; the sparse statistics read before are dropped (whatever
    /// the holder does may change them).
    fn write_lock(&self) -> Result<RwLockWriteGuard<'_, Option<EdgeShard>>, VectorError> {
        let guard = self
            .engine
            .write()
            .map_err(|_| VectorError::Backend("shard lock poisoned".into()))?;
        *lock(&self.frequencies) = Frequencies::default();
        Ok(guard)
    }

    /// The shard's points left and each of `indices`' document frequency among them, as
    /// `engine` (this shard read-locked) counts them: only the terms not counted since the
    /// shard was last written walk their posting lists.
    fn document_frequencies(
        &self,
        engine: &EdgeShard,
        indices: &[u32],
    ) -> Result<(usize, Vec<usize>), VectorError> {
        let (points, mut df) = {
            let known = lock(&self.frequencies);
            let df: Vec<Option<usize>> = indices
                .iter()
                .map(|i| known.terms.get(i).copied())
                .collect();
            (known.points, df)
        };
        let missing: Vec<u32> = indices
            .iter()
            .zip(&df)
            .filter_map(|(i, d)| d.is_none().then_some(*i))
            .collect();
        let points = match points {
            Some(n) if missing.is_empty() => n,
            _ => {
                let (n, counted) = engine
                    .sparse_document_frequencies(SPARSE, &missing)
                    .map_err(err)?;
                // `counted` follows `missing`, the unknown places of `df` in order.
                for (d, c) in df.iter_mut().filter(|d| d.is_none()).zip(&counted) {
                    *d = Some(*c);
                }
                let mut known = lock(&self.frequencies);
                if known.terms.len() + missing.len() > FREQUENCY_TERMS {
                    known.terms.clear();
                }
                known.points = Some(n);
                known.terms.extend(missing.into_iter().zip(counted));
                n
            }
        };
        Ok((
            points,
            df.into_iter().map(Option::unwrap_or_default).collect(),
        ))
    }

    /// Upserts then deletes under the write lock, at most `seal_points` points per engine
    /// operation (so the shard is sealed within a large batch too). Not flushed.
    fn write(
        &self,
        mut upserts: Vec<Point>,
        deletes: &[Uuid],
        seal_points: usize,
    ) -> Result<(), VectorError> {
        let guard = self.write_lock()?;
        let engine = engine(&guard, &self.dir)?;
        while !upserts.is_empty() {
            let rest = upserts.split_off(upserts.len().min(seal_points));
            let chunk = std::mem::replace(&mut upserts, rest);
            let n = chunk.len();
            if let Some(op) = EdgeIndex::upsert_op(chunk)? {
                engine.update(op).map_err(err)?;
            }
            self.written(engine, n, seal_points)?;
        }
        for chunk in deletes.chunks(seal_points) {
            if let Some(op) = EdgeIndex::delete_op(chunk) {
                engine.update(op).map_err(err)?;
            }
            self.written(engine, chunk.len(), seal_points)?;
        }
        Ok(())
    }

    fn flush(&self) -> Result<(), VectorError> {
        let guard = self.write_lock()?;
        engine(&guard, &self.dir)?.flush();
        Ok(())
    }

    /// Rewrites every segment that holds a deleted point, so deleted points' payloads and
    /// vectors (and earlier versions of rewritten points in those segments) leave the shard's
    /// files: the engine's vacuum optimizer, run once with a threshold of any deleted point,
    /// then the shard's own settings again (they are also set again at every load).
    fn vacuum(&self) -> Result<(), VectorError> {
        let guard = self.write_lock()?;
        let engine = engine(&guard, &self.dir)?;
        let own = engine.config().optimizers.clone();
        let any_deleted = EdgeOptimizersConfig {
            deleted_threshold: Some(0.0),
            vacuum_min_vector_number: Some(1),
            ..own.clone()
        };
        engine.set_optimizers_config(any_deleted).map_err(err)?;
        let vacuumed = engine.optimize().map_err(err);
        engine.set_optimizers_config(own).map_err(err)?;
        vacuumed.map(|_| ())
    }

    /// Counts `points` written; when `seal_points` were written since the optimizers last ran,
    /// runs them.
    fn written(
        &self,
        engine: &EdgeShard,
        points: usize,
        seal_points: usize,
    ) -> Result<(), VectorError> {
        if self.unsealed.fetch_add(points, Ordering::Relaxed) + points < seal_points {
            return Ok(());
        }
        self.unsealed.store(0, Ordering::Relaxed);
        engine.optimize().map_err(err)?;
        Ok(())
    }
}

/// Closes an engine shard: dropping it flushes it and releases its log. The engine panics when
/// that flush fails (its directory gone, say); the panic is caught here and becomes an error,
/// so closing several shards never panics twice (which would abort the process).
fn close(engine: EdgeShard, dir: &Path) -> Result<(), VectorError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || drop(engine))).map_err(|_| {
        VectorError::Backend(format!(
            "closing engine shard {} failed: its last flush panicked",
            dir.display()
        ))
    })
}

impl Drop for Shard {
    fn drop(&mut self) {
        let engine = match self.engine.get_mut() {
            Ok(e) => e.take(),
            Err(poisoned) => poisoned.into_inner().take(),
        };
        if let Some(engine) = engine
            && let Err(e) = close(engine, &self.dir)
        {
            tracing::error!(error = %e, "vector index shard closed uncleanly");
        }
        if self.build_only {
            qdrant_edge::defer_memory_only_indexes(&self.dir, false);
        }
    }
}

/// A shard's writer thread: runs `jobs` in order until the index is dropped.
fn write_jobs(shard: &Shard, jobs: Receiver<Job>, seal_points: usize) {
    let mut failed = None;
    for job in jobs {
        match job {
            Job::Write(upserts, deletes) => {
                if failed.is_none() {
                    failed = shard.write(upserts, &deletes, seal_points).err();
                }
            }
            Job::Sync(done) => {
                let result = match failed.take() {
                    Some(e) => Err(e),
                    None => shard.flush(),
                };
                let _ = done.send(result);
            }
            Job::Erase(done) => {
                let result = match failed.take() {
                    Some(e) => Err(e),
                    None => shard.vacuum().and_then(|()| shard.flush()),
                };
                let _ = done.send(result);
            }
        }
    }
}

/// A shard read-locked and open.
struct ShardRead<'a>(RwLockReadGuard<'a, Option<EdgeShard>>);

impl std::ops::Deref for ShardRead<'_> {
    type Target = EdgeShard;

    fn deref(&self) -> &EdgeShard {
        self.0.as_ref().expect("checked open when locked")
    }
}

fn engine<'a>(shard: &'a Option<EdgeShard>, dir: &Path) -> Result<&'a EdgeShard, VectorError> {
    shard
        .as_ref()
        .ok_or_else(|| VectorError::Backend(format!("engine shard {} is closed", dir.display())))
}

impl EdgeIndex {
    /// Opens (or creates) collection `name` with `dim`-dimensional dense vectors under `root`,
    /// with its payload indexes.
    pub fn open(root: &Path, name: &str, dim: usize) -> Result<Self, VectorError> {
        Self::open_with(root, name, dim, EdgeOptions::default())
    }

    /// [`EdgeIndex::open`] with other [`EdgeOptions`] (tests seal small collections, or roll
    /// the log over small segments, this way).
    pub fn open_with(
        root: &Path,
        name: &str,
        dim: usize,
        options: EdgeOptions,
    ) -> Result<Self, VectorError> {
        let options = EdgeOptions {
            shards: options.shards.max(1),
            seal_points: options.seal_points.max(1),
            wal_segment_bytes: options.wal_segment_bytes.max(WAL_SEGMENT_BYTES),
            in_memory_indexes: options.in_memory_indexes,
            build_only: options.build_only,
            wal_logging: options.wal_logging,
        };
        // Process-wide in the engine; set before any shard loads (module comment).
        qdrant_edge::set_in_memory_appendable_indexes(options.in_memory_indexes);
        let mut index = Self {
            name: name.to_owned(),
            shards: Vec::new(),
            writers: Vec::new(),
            threads: Vec::new(),
            build_only: options.build_only,
            erasure: super::ErasureSchedule::default(),
            filters: Mutex::default(),
        };
        // The shards load at once (each creates or checks its payload indexes and flushes).
        let dirs = shard_dirs(&root.join(name), &options)?;
        let loaded: Vec<Result<EdgeShard, VectorError>> = std::thread::scope(|scope| {
            let loads: Vec<_> = dirs
                .iter()
                .map(|dir| scope.spawn(move || Shard::load(dir, dim, &options)))
                .collect();
            loads
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(VectorError::Backend(
                            "loading an engine shard panicked".into(),
                        ))
                    })
                })
                .collect()
        });
        // Every loaded engine is held by its shard before a failure returns, so each closes
        // (and ends its deferral) when dropped.
        let mut shards = Vec::with_capacity(dirs.len());
        let mut failed = None;
        for (dir, engine) in dirs.into_iter().zip(loaded) {
            match engine {
                Ok(engine) => shards.push(Arc::new(Shard {
                    dir,
                    build_only: options.build_only,
                    engine: RwLock::new(Some(engine)),
                    unsealed: AtomicUsize::new(0),
                    frequencies: Mutex::default(),
                })),
                Err(e) => {
                    failed.get_or_insert(e);
                }
            }
        }
        if let Some(e) = failed {
            return Err(e);
        }
        for (i, shard) in shards.into_iter().enumerate() {
            let (tx, rx) = sync_channel(1);
            let writes = shard.clone();
            let thread = std::thread::Builder::new()
                .name(format!("vectors-shard{i}"))
                .spawn(move || write_jobs(&writes, rx, options.seal_points))
                .map_err(err)?;
            index.shards.push(shard);
            index.writers.push(tx);
            index.threads.push(thread);
        }
        Ok(index)
    }

    /// The engine's segments over every shard (sealed ones and the appendable ones).
    pub fn segments(&self) -> Result<usize, VectorError> {
        let mut n = 0;
        for s in &self.shards {
            n += s.read()?.info().segments_count;
        }
        Ok(n)
    }

    /// The collection's shards.
    pub fn shards(&self) -> usize {
        self.shards.len()
    }

    /// `f` read into the engine's form, or the form read before for the same JSON.
    fn filter_of(&self, f: &Value) -> Result<Arc<Filter>, VectorError> {
        let key = f.to_string();
        if let Some(read) = lock(&self.filters).get(&key) {
            return Ok(read.clone());
        }
        let read = Arc::new(filter(f)?);
        let mut filters = lock(&self.filters);
        if filters.len() >= FILTERS_KEPT {
            filters.clear();
        }
        filters.insert(key, read.clone());
        Ok(read)
    }

    /// [`VectorIndex::query`] under a filter already read.
    fn query_under(
        &self,
        engines: &[ShardRead<'_>],
        vector: QueryVector,
        filter: &Filter,
        limit: usize,
    ) -> Result<Vec<(Uuid, f32)>, VectorError> {
        let (q, using) = match vector {
            QueryVector::Dense(v) => (VectorInternal::Dense(v), DENSE),
            QueryVector::Sparse(s) => {
                // BM25's IDF over the whole collection: the query's weights times it.
                let idf = self.sparse_idf_in(engines, &s.indices)?;
                let values: Vec<f32> = s.values.iter().zip(idf).map(|(w, i)| w * i).collect();
                (
                    Vector::new_sparse(s.indices, values).map_err(err)?.0,
                    SPARSE,
                )
            }
        };
        let ask = |want: usize| -> Result<Vec<Vec<(Uuid, f32)>>, VectorError> {
            let mut per_shard = Vec::with_capacity(engines.len());
            for engine in engines {
                let req = QueryRequest {
                    prefetches: vec![],
                    query: Some(ScoringQuery::Vector(QueryEnum::Nearest(NamedQuery::new(
                        q.clone(),
                        using,
                    )))),
                    filter: Some(filter.clone()),
                    score_threshold: None,
                    limit: want,
                    offset: 0,
                    params: None,
                    with_vector: WithVector::Bool(false),
                    with_payload: WithPayloadInterface::Bool(false),
                };
                let found = engine.query(req).map_err(err)?;
                per_shard.push(
                    found
                        .into_iter()
                        .filter_map(|h| uuid_of(&h.id).map(|u| (u, h.score)))
                        .collect(),
                );
            }
            Ok(per_shard)
        };
        tie_complete(limit, ask)
    }

    /// BM25's inverse document frequency of each of `indices` (sparse terms) over the whole
    /// collection: every shard's statistics summed (vendored change 7), so a sharded
    /// collection scores as one shard would, and counted over the points left only, so two
    /// replicas holding the same points score alike whatever their segments' history. What
    /// sparse queries weigh their terms with.
    pub fn sparse_idf(&self, indices: &[u32]) -> Result<Vec<f32>, VectorError> {
        self.sparse_idf_in(&self.read_all()?, indices)
    }

    /// [`EdgeIndex::sparse_idf`] with every shard read-locked (`engines`, in shard order).
    fn sparse_idf_in(
        &self,
        engines: &[ShardRead<'_>],
        indices: &[u32],
    ) -> Result<Vec<f32>, VectorError> {
        let (mut n, mut df) = (0, vec![0; indices.len()]);
        for (shard, engine) in self.shards.iter().zip(engines) {
            let (sn, sdf) = shard.document_frequencies(engine, indices)?;
            n += sn;
            df.iter_mut().zip(sdf).for_each(|(a, b)| *a += b);
        }
        Ok(df.into_iter().map(|d| EdgeShard::idf(n, d)).collect())
    }

    /// The points in each shard.
    pub fn points_per_shard(&self) -> Result<Vec<usize>, VectorError> {
        self.shards
            .iter()
            .map(|s| {
                s.read()?
                    .count(CountRequest {
                        filter: None,
                        exact: true,
                    })
                    .map_err(err)
            })
            .collect()
    }

    /// Closed segments of each shard's write-ahead log.
    pub fn wal_segments(&self) -> Result<Vec<usize>, VectorError> {
        self.shards
            .iter()
            .map(|s| Ok(closed_wal_segments(&s.dir.join("wal"))?.len()))
            .collect()
    }

    /// The shard point `id` lives in: a fixed mix of its bits (ULIDs put the time first).
    fn shard_of(&self, id: &Uuid) -> usize {
        let x = id.as_u128();
        let h = ((x >> 64) as u64 ^ x as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        ((h >> 32) % self.shards.len() as u64) as usize
    }

    /// Splits the batch by shard and queues each part to its shard's writer thread (waiting
    /// while that shard's queue is full); if `sync`, then waits until every shard has written
    /// and flushed everything queued, and reports any failure since the last sync.
    fn write_shards(
        &self,
        upserts: Vec<Point>,
        deletes: &[Uuid],
        sync: bool,
    ) -> Result<(), VectorError> {
        let n = self.shards.len();
        let mut work: Vec<(Vec<Point>, Vec<Uuid>)> = (0..n).map(|_| Default::default()).collect();
        for p in upserts {
            work[self.shard_of(&p.id)].0.push(p);
        }
        for id in deletes {
            work[self.shard_of(id)].1.push(*id);
        }
        for (i, (u, d)) in work.into_iter().enumerate() {
            if !u.is_empty() || !d.is_empty() {
                self.send(i, Job::Write(u, d))?;
            }
        }
        if sync { self.sync_shards() } else { Ok(()) }
    }

    /// Asks every shard's writer to flush, then waits for all of them (they flush at once).
    fn sync_shards(&self) -> Result<(), VectorError> {
        self.ask_shards(Job::Sync)
    }

    /// Sends every shard's writer the job `job` makes with an answer channel, then waits for
    /// every answer (the shards work at once); the first error.
    fn ask_shards(
        &self,
        job: fn(SyncSender<Result<(), VectorError>>) -> Job,
    ) -> Result<(), VectorError> {
        let mut answers = Vec::with_capacity(self.shards.len());
        for i in 0..self.shards.len() {
            let (tx, rx) = sync_channel(1);
            self.send(i, job(tx))?;
            answers.push((i, rx));
        }
        let mut result = Ok(());
        for (i, rx) in answers {
            let answer = rx.recv().unwrap_or_else(|_| Err(self.stopped(i)));
            result = result.and(answer);
        }
        result
    }

    /// Filtered reads need the in-memory indexes a build-only index does not keep.
    /// Every shard read-locked, in shard order (always this order, so two readers and the
    /// writers, which lock one shard each, never wait on each other in a cycle).
    fn read_all(&self) -> Result<Vec<ShardRead<'_>>, VectorError> {
        self.shards.iter().map(|s| s.read()).collect()
    }

    fn searchable(&self) -> Result<(), VectorError> {
        if self.build_only {
            return Err(VectorError::Backend(format!(
                "collection {} is open build-only (being rebuilt): it answers filtered reads once opened again",
                self.name
            )));
        }
        Ok(())
    }

    fn send(&self, shard: usize, job: Job) -> Result<(), VectorError> {
        self.writers[shard]
            .send(job)
            .map_err(|_| self.stopped(shard))
    }

    fn stopped(&self, shard: usize) -> VectorError {
        VectorError::Backend(format!(
            "the writer thread of engine shard {} stopped",
            self.shards[shard].dir.display()
        ))
    }

    fn upsert_op(points: Vec<Point>) -> Result<Option<UpdateOperation>, VectorError> {
        if points.is_empty() {
            return Ok(None);
        }
        let mut batch = Vec::with_capacity(points.len());
        for p in points {
            let sparse = Vector::new_sparse(p.sparse.indices, p.sparse.values).map_err(err)?;
            let vectors =
                Vectors::new_named([(DENSE, Vector::new_dense(p.dense)), (SPARSE, sparse)]);
            batch.push(PointStructPersisted {
                id: PointId::Uuid(p.id),
                vector: vectors.0.into(),
                payload: Some(Payload(p.payload)),
            });
        }
        Ok(Some(UpdateOperation::PointOperation(
            PointOperations::UpsertPoints(PointInsertOperations::PointsList(batch)),
        )))
    }

    fn delete_op(ids: &[Uuid]) -> Option<UpdateOperation> {
        (!ids.is_empty()).then(|| {
            UpdateOperation::PointOperation(PointOperations::DeletePoints {
                ids: ids.iter().map(|u| PointId::Uuid(*u)).collect(),
            })
        })
    }
}

impl VectorIndex for EdgeIndex {
    fn collection(&self) -> &str {
        &self.name
    }

    fn erasure(&self) -> &super::ErasureSchedule {
        &self.erasure
    }

    fn upsert(&self, points: Vec<Point>) -> Result<(), VectorError> {
        self.write_batch(points, &[])
    }

    fn delete(&self, ids: &[Uuid]) -> Result<(), VectorError> {
        self.write_batch(Vec::new(), ids)
    }

    fn write_batch(&self, upserts: Vec<Point>, deletes: &[Uuid]) -> Result<(), VectorError> {
        self.write_shards(upserts, deletes, true)
    }

    fn write_unsynced(&self, upserts: Vec<Point>, deletes: &[Uuid]) -> Result<(), VectorError> {
        self.write_shards(upserts, deletes, false)
    }

    fn sync(&self) -> Result<(), VectorError> {
        self.sync_shards()
    }

    fn erase_deleted(&self) -> Result<(), VectorError> {
        self.ask_shards(Job::Erase)
    }

    /// The best `limit` over every shard: by score, then by id ([`tie_complete`]).
    fn query(
        &self,
        vector: QueryVector,
        f: &Value,
        limit: usize,
    ) -> Result<Vec<(Uuid, f32)>, VectorError> {
        self.searchable()?;
        self.query_under(&self.read_all()?, vector, &*self.filter_of(f)?, limit)
    }

    /// [`VectorIndex::query`] of each, the filter read once, every shard read-locked through
    /// them all, and each segment's list of the points the filter matches read once (vendored
    /// change 11: the later queries take the first's list).
    fn query_each(
        &self,
        queries: Vec<(QueryVector, usize)>,
        f: &Value,
    ) -> Result<Vec<Vec<(Uuid, f32)>>, VectorError> {
        self.searchable()?;
        let filter = self.filter_of(f)?;
        let engines = self.read_all()?;
        qdrant_edge::sharing_filtered_points(|| {
            queries
                .into_iter()
                .map(|(vector, limit)| self.query_under(&engines, vector, &filter, limit))
                .collect()
        })
    }

    fn count(&self, f: &Value) -> Result<usize, VectorError> {
        self.searchable()?;
        let filter = filter(f)?;
        let mut n = 0;
        for shard in &self.shards {
            n += shard
                .read()?
                .count(CountRequest {
                    filter: Some(filter.clone()),
                    exact: true,
                })
                .map_err(err)?;
        }
        Ok(n)
    }

    fn scan(&self) -> Result<Scanned, VectorError> {
        let mut out = Vec::new();
        for s in &self.shards {
            let shard = s.read()?;
            let mut offset = None;
            loop {
                let (page, next) = shard
                    .scroll(ScrollRequest {
                        offset,
                        limit: Some(1_000),
                        with_payload: Some(WithPayloadInterface::Bool(true)),
                        ..Default::default()
                    })
                    .map_err(err)?;
                for r in page {
                    if let Some(u) = uuid_of(&r.id) {
                        out.push((u, r.payload.map(|p| p.0).unwrap_or_default()));
                    }
                }
                match next {
                    Some(n) => offset = Some(n),
                    None => break,
                }
            }
        }
        out.sort_by_key(|(u, _)| *u);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_among_equal_scores_does_not_change_the_answer() {
        // Three shards of 200 points whose scores take five values: the engine's best `want`
        // of each shard cuts ties in an order of its own (here a seeded shuffle per replica).
        // Every replica's answer is the true best `limit` by score then id, as long as the
        // tie at the cut is within TIE_DEPTH_MAX times the limit.
        use rand::{Rng, SeedableRng};
        let points: Vec<Vec<(Uuid, f32)>> = (0..3u128)
            .map(|s| {
                (0..200u128)
                    .map(|i| (Uuid::from_u128(s * 1_000 + i), (i % 5) as f32))
                    .collect()
            })
            .collect();
        let mut truth: Vec<(Uuid, f32)> = points.iter().flatten().copied().collect();
        truth.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        for limit in [1, 7, 40, 150] {
            for replica in 0..4u64 {
                let mut rng = rand::rngs::StdRng::seed_from_u64(replica);
                let mut asked = Vec::new();
                let got = tie_complete(limit, |want| {
                    asked.push(want);
                    Ok(points
                        .iter()
                        .map(|shard| {
                            let mut s: Vec<(Uuid, f32, u32)> =
                                shard.iter().map(|&(u, v)| (u, v, rng.random())).collect();
                            s.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.2.cmp(&b.2)));
                            s.into_iter().take(want).map(|(u, v, _)| (u, v)).collect()
                        })
                        .collect())
                })
                .unwrap();
                // Each shard holds 40 points of each score: asked TIE_DEPTH_MAX times the
                // limit deep, a shard past 40 shows where the top tie ends.
                if limit * TIE_DEPTH_MAX > 40 {
                    assert_eq!(got, truth[..limit], "limit {limit}, asked {asked:?}");
                } else {
                    assert_eq!(got.len(), limit);
                }
            }
        }
    }

    #[test]
    fn a_filter_read_once_is_kept_and_the_kept_ones_are_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let index = EdgeIndex::open(dir.path(), "cm_text_4_v1", 4).unwrap();
        let of = |owner: usize| serde_json::json!({"must": [{"key": "owner_id", "match": {"value": format!("u_{owner}")}}]});
        let first = index.filter_of(&of(0)).unwrap();
        assert!(
            Arc::ptr_eq(&first, &index.filter_of(&of(0)).unwrap()),
            "read once"
        );
        assert!(!Arc::ptr_eq(&first, &index.filter_of(&of(1)).unwrap()));
        assert_eq!(*first, filter(&of(0)).unwrap());
        for owner in 0..FILTERS_KEPT + 10 {
            let kept = index.filter_of(&of(owner)).unwrap();
            assert_eq!(*kept, filter(&of(owner)).unwrap());
            assert!(index.filters.lock().unwrap().len() <= FILTERS_KEPT);
        }
        // A filter the engine cannot read is refused each time, never kept.
        let bad = serde_json::json!({"must": 3});
        assert!(matches!(index.filter_of(&bad), Err(VectorError::Filter(_))));
        assert!(!index.filters.lock().unwrap().contains_key(&bad.to_string()));
    }
}
