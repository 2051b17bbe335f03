//! The RocksDB store.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rocksdb::checkpoint::Checkpoint;
use rocksdb::{
    BlockBasedOptions, BottommostLevelCompaction, Cache, ColumnFamilyDescriptor, CompactOptions,
    DB, DBCompressionType, Direction, FlushOptions, IteratorMode, Options, WriteBatch,
    WriteOptions,
};

use crate::StateError;
use crate::keys::{Cf, partition};
use crate::store::{Entries, StateRead, StateStore, Visit, WriteSet};

/// Memory bounds of the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RocksConfig {
    /// Shared LRU block cache for every column family.
    pub block_cache_bytes: usize,
    /// Memtable size per column family.
    pub write_buffer_bytes: usize,
    /// Memtables per column family.
    pub write_buffers_max: i32,
    /// Bound on all memtables together.
    pub db_write_buffer_bytes: usize,
    /// Write RocksDB's write-ahead log. Off by default: state is the fold of the outbox, so
    /// after a crash it reverts to its last flush (column families flush atomically, so that
    /// is a consistent prefix, positions included) and restore replays the rest from the
    /// outbox — the Kafka Streams arrangement. A clean close flushes everything.
    pub wal: bool,
}

impl Default for RocksConfig {
    fn default() -> Self {
        Self {
            block_cache_bytes: 64 << 20,
            // Larger memtables flush less often: every flush writes a file in each column
            // family (flushes are atomic) and feeds L0→L1 compactions, which on a small state
            // rewrite most of it. 32 MiB (RocksDB's own default is 64 MiB) against 8 MiB took
            // the decide-and-write bench from 73.8k to 79.9k intents/s with 2 apply threads,
            // the compactions no longer crowding the second core (docs/benchmarks.md).
            write_buffer_bytes: 32 << 20,
            write_buffers_max: 2,
            db_write_buffer_bytes: 128 << 20,
            wal: false,
        }
    }
}

/// Sizes reported by RocksDB, summed over column families.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RocksSizes {
    /// `rocksdb.estimate-live-data-size`.
    pub live_data_bytes: u64,
    /// `rocksdb.estimate-pending-compaction-bytes`.
    pub pending_compaction_bytes: u64,
}

/// State in RocksDB, one column family per [`Cf`].
#[derive(Debug)]
pub struct RocksStore {
    db: ErasingDb,
    path: PathBuf,
    wal: bool,
}

/// How one of kledger's RocksDB databases is sized; everything else is the same for all of
/// them ([`open_db`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tuning {
    /// Block cache (data, index and filter blocks), bytes; 0: no block cache.
    pub block_cache_bytes: usize,
    /// Each column family's memtable, bytes.
    pub write_buffer_bytes: usize,
    /// Memtables per column family.
    pub write_buffers_max: i32,
    /// Every column family's memtables together, bytes (RocksDB flushes at it).
    pub db_write_buffer_bytes: usize,
    /// Files kept open (-1: all, which a secondary instance needs).
    pub open_files_max: i32,
    /// Bloom filters in the memtables too (a store whose lookups mostly miss).
    pub memtable_blooms: bool,
}

/// How [`open_db`] opens a database.
#[derive(Debug, Clone, Copy)]
pub enum OpenAs<'a> {
    /// The owner: created when missing.
    Primary,
    /// A read-only follower of the primary's files, with its own under this directory.
    Secondary(&'a Path),
}

/// Opens (or creates) the database at `path` with the column families `cfs`: the one options
/// block of kledger's RocksDB stores (the state store, the view store, the marks store),
/// sized by `tuning`. Atomic flushes across column families, so a write batch's positions
/// and the data they cover are durable together.
pub fn open_db(
    path: &Path,
    cfs: &[&str],
    tuning: &Tuning,
    open: OpenAs<'_>,
) -> Result<DB, StateError> {
    let mut cf_opts = Options::default();
    if tuning.block_cache_bytes > 0 {
        let cache = Cache::new_lru_cache(tuning.block_cache_bytes);
        let mut table = BlockBasedOptions::default();
        table.set_block_cache(&cache);
        table.set_bloom_filter(10.0, false);
        // Index and filter blocks live in the block cache (bounded by it), not beside it on
        // the heap, where they grow with the data.
        table.set_cache_index_and_filter_blocks(true);
        table.set_pin_l0_filter_and_index_blocks_in_cache(true);
        cf_opts.set_block_based_table_factory(&table);
    }
    // No block compression: a purge's erasure (`ErasingDb::erase`) is then checkable by
    // anyone with `grep` over the files, as the erasure tests do; the values are small Avro
    // rows that compress little.
    cf_opts.set_compression_type(DBCompressionType::None);
    cf_opts.set_write_buffer_size(tuning.write_buffer_bytes);
    cf_opts.set_max_write_buffer_number(tuning.write_buffers_max);
    if tuning.memtable_blooms {
        // Most lookups miss (a new action id, an empty slot): answer them from a bloom filter
        // in the memtable too, not only in SST files.
        cf_opts.set_memtable_whole_key_filtering(true);
        cf_opts.set_memtable_prefix_bloom_ratio(0.05);
    }
    let mut db_opts = Options::default();
    db_opts.create_if_missing(matches!(open, OpenAs::Primary));
    db_opts.create_missing_column_families(true);
    db_opts.set_db_write_buffer_size(tuning.db_write_buffer_bytes);
    db_opts.set_max_open_files(tuning.open_files_max);
    db_opts.set_keep_log_file_num(4);
    db_opts.set_atomic_flush(true);
    let descriptors = cfs
        .iter()
        .map(|name| ColumnFamilyDescriptor::new(*name, cf_opts.clone()));
    Ok(match open {
        OpenAs::Primary => DB::open_cf_descriptors(&db_opts, path, descriptors)?,
        OpenAs::Secondary(own) => {
            DB::open_cf_descriptors_as_secondary(&db_opts, path, own, descriptors)?
        }
    })
}

/// A database with its erasures: the handle each of kledger's RocksDB stores keeps (the state,
/// view and marks stores), dereferencing to the database. Dropping it waits for an erasure run
/// in progress (the run holds the database too), so a store reopened at once finds its files
/// free.
#[derive(Debug)]
pub(crate) struct ErasingDb {
    db: Arc<DB>,
    erasures: Arc<Erasures>,
}

impl ErasingDb {
    /// `db` with the erasures it left waiting when it last stopped ([`Erasures::load`]).
    pub(crate) fn new(db: DB) -> Result<Self, StateError> {
        let erasures = Erasures::load(&db)?;
        Ok(Self {
            db: Arc::new(db),
            erasures,
        })
    }

    /// `db` read-only (a secondary instance): it erases nothing.
    pub(crate) fn read_only(db: DB) -> Self {
        Self {
            db: Arc::new(db),
            erasures: Arc::default(),
        }
    }

    /// The erasures this database ran and has waiting.
    pub(crate) fn erasures(&self) -> &Erasures {
        &self.erasures
    }

    /// Leaves no older version of any key under `prefixes` in the files (column families
    /// `cfs`): what a purge overwrote or deleted. The prefixes join those waiting; a run
    /// flushes every memtable (so the write-ahead log files holding the old values become
    /// obsolete and are deleted), then compacts the range of each group of prefixes
    /// ([`ERASE_RANGES_MAX`] at most) in every column family down to the bottommost level,
    /// which rewrites the files holding those keys without the versions below the newest (each
    /// file about once); the rewritten files are deleted. Blocks the file system freed are not
    /// overwritten (`docs/privacy.md`).
    ///
    /// With `now`, every erasure waiting runs whatever the interval, on the calling thread,
    /// after any run in progress (a clean stop runs them: `docs/privacy.md`). Otherwise a run
    /// that is due (the first at once, then at most once per [`ERASE_INTERVAL`]) is started on
    /// its own thread and the call returns: a run compacts a large part of the store, and the
    /// writer (the processor's apply thread) must not wait for it. Writes go on meanwhile; a
    /// prefix added during a run waits for the next.
    pub(crate) fn erase<'p>(
        &self,
        cfs: &[&str],
        prefixes: impl IntoIterator<Item = &'p [u8]>,
        now: bool,
    ) -> Result<(), StateError> {
        erase(&self.db, cfs, prefixes, &self.erasures, now)
    }
}

impl std::ops::Deref for ErasingDb {
    type Target = DB;

    fn deref(&self) -> &DB {
        &self.db
    }
}

impl Drop for ErasingDb {
    fn drop(&mut self) {
        self.erasures.join_running();
    }
}

/// [`ErasingDb::erase`].
fn erase<'p>(
    db: &Arc<DB>,
    cfs: &[&str],
    prefixes: impl IntoIterator<Item = &'p [u8]>,
    done: &Arc<Erasures>,
    now: bool,
) -> Result<(), StateError> {
    let mut pending = done.lock_pending();
    let before = pending.waiting.len();
    pending
        .waiting
        .extend(prefixes.into_iter().map(<[u8]>::to_vec));
    if pending.waiting.len() > before {
        // Kept with the data, so a stop before the run does not forget it.
        db.put(ERASE_PENDING_KEY, pending.encode())?;
    }
    if now {
        drop(pending);
        done.join_running();
        pending = done.lock_pending();
    } else if pending.running.is_some()
        || pending.last.is_some_and(|t| t.elapsed() < ERASE_INTERVAL)
    {
        return Ok(());
    }
    if pending.waiting.is_empty() {
        return Ok(());
    }
    let run = std::mem::take(&mut pending.waiting);
    pending.running = Some(run.clone());
    drop(pending);
    let cfs: Vec<String> = cfs.iter().map(|c| (*c).to_owned()).collect();
    if now {
        return run_erasure(db, &cfs, run, done);
    }
    let (db, erasures) = (Arc::clone(db), Arc::clone(done));
    let handle = std::thread::Builder::new()
        .name("kledger-erase".into())
        .spawn(move || {
            if let Err(e) = run_erasure(&db, &cfs, run, &erasures) {
                tracing::error!(error = %e, "erasing purged values failed; retried at the next run");
            }
        })
        .map_err(|e| StateError::Corrupt(format!("starting the erasure thread: {e}")))?;
    *done
        .handle
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(handle);
    Ok(())
}

/// One erasure run over the prefixes `run` ([`erase`]): flush, then compact. On failure the
/// prefixes wait again.
fn run_erasure(
    db: &DB,
    cfs: &[String],
    run: BTreeSet<Vec<u8>>,
    done: &Erasures,
) -> Result<(), StateError> {
    let started = std::time::Instant::now();
    let result = flush_and_compact(db, cfs, &run);
    let mut pending = done.lock_pending();
    pending.running = None;
    pending.last = Some(std::time::Instant::now());
    if result.is_err() {
        pending.waiting.extend(run);
    }
    if pending.waiting.is_empty() {
        db.delete(ERASE_PENDING_KEY)?;
    } else {
        db.put(ERASE_PENDING_KEY, pending.encode())?;
    }
    drop(pending);
    result?;
    done.count.fetch_add(1, Ordering::Relaxed);
    done.nanos
        .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
    Ok(())
}

/// Flushes every memtable of `cfs`, then compacts the prefixes `run` to the bottommost level.
fn flush_and_compact(db: &DB, cfs: &[String], run: &BTreeSet<Vec<u8>>) -> Result<(), StateError> {
    let handles: Vec<&rocksdb::ColumnFamily> = cfs
        .iter()
        .map(|name| {
            db.cf_handle(name)
                .ok_or_else(|| StateError::Corrupt(format!("column family {name} missing")))
        })
        .collect::<Result<_, _>>()?;
    // The default column family too: it holds the record of the erasures waiting
    // (`ERASE_PENDING_KEY`), and a write-ahead log file is deleted only once every column
    // family's memtable over it is flushed.
    let mut flushed = handles.clone();
    if !cfs.iter().any(|c| c == rocksdb::DEFAULT_COLUMN_FAMILY_NAME)
        && let Some(d) = db.cf_handle(rocksdb::DEFAULT_COLUMN_FAMILY_NAME)
    {
        flushed.push(d);
    }
    db.flush_cfs_opt(&flushed, &FlushOptions::default())?;
    let mut opts = CompactOptions::default();
    opts.set_bottommost_level_compaction(BottommostLevelCompaction::Force);
    // The prefixes, in order, in at most `ERASE_RANGES_MAX` contiguous groups, each compacted
    // as one range from its first prefix to the end of its last: a file is rewritten about once
    // per run however many prefixes wait (a compaction per prefix rewrote the same bottommost
    // files once for each: minutes for a purge-heavy half minute), and a few prefixes still
    // compact only what holds them.
    let sorted: Vec<&Vec<u8>> = run.iter().collect();
    for group in sorted.chunks(sorted.len().div_ceil(ERASE_RANGES_MAX).max(1)) {
        let end = group
            .iter()
            .map(|p| prefix_end(p))
            .try_fold(Vec::new(), |max: Vec<u8>, e| {
                e.map(|e| if e > max { e } else { max })
            });
        for h in &handles {
            db.compact_range_cf_opt(*h, Some(group[0].as_slice()), end.as_deref(), &opts);
        }
    }
    Ok(())
}

/// The key (in the default column family) under which a store keeps the prefixes whose
/// erasure waits for its run: a store opened again runs them first ([`Erasures::load`]).
const ERASE_PENDING_KEY: &[u8] = b"kledger.erase_pending";

fn encode_prefixes<'a>(pending: impl IntoIterator<Item = &'a Vec<u8>>) -> Vec<u8> {
    let mut v = Vec::new();
    for p in pending {
        v.extend_from_slice(&(p.len() as u32).to_be_bytes());
        v.extend_from_slice(p);
    }
    v
}

/// Range compactions one erasure run makes per column family at most (`erase`).
pub const ERASE_RANGES_MAX: usize = 8;

/// At most one erasure per store per this interval: a purge-heavy stream would otherwise
/// flush and compact at every batch (the pipeline bench fell to 1% of its rate). Purges in
/// between wait for the next run, which the next write or [`RocksStore::erase_due`] makes.
pub const ERASE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(30);

/// A store's erasures: the prefixes waiting for the next run, those of the run in progress,
/// when the last ran, and how many runs there were and their time (for metrics). A store waits
/// for the run in progress when it is dropped ([`Erasures::join_running`]), so a store reopened
/// at once finds its files free.
#[derive(Debug, Default)]
pub struct Erasures {
    count: AtomicU64,
    nanos: AtomicU64,
    pending: Mutex<Pending>,
    handle: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// [`Erasures`]' prefixes and times.
#[derive(Debug, Default)]
struct Pending {
    waiting: BTreeSet<Vec<u8>>,
    running: Option<BTreeSet<Vec<u8>>>,
    last: Option<std::time::Instant>,
}

impl Pending {
    /// Every prefix not yet erased, as kept with the data.
    fn encode(&self) -> Vec<u8> {
        encode_prefixes(self.waiting.iter().chain(self.running.iter().flatten()))
    }
}

impl Erasures {
    /// The erasures a store left waiting when it last stopped (the next write or
    /// `erase_due` runs them: its first run is not held back by the interval).
    pub fn load(db: &DB) -> Result<Arc<Self>, StateError> {
        let e = Self::default();
        if let Some(v) = db.get(ERASE_PENDING_KEY)? {
            let mut pending = e.lock_pending();
            let mut at = 0;
            while at + 4 <= v.len() {
                let n = u32::from_be_bytes([v[at], v[at + 1], v[at + 2], v[at + 3]]) as usize;
                let Some(p) = v.get(at + 4..at + 4 + n) else {
                    break;
                };
                pending.waiting.insert(p.to_vec());
                at += 4 + n;
            }
        }
        Ok(Arc::new(e))
    }

    fn lock_pending(&self) -> std::sync::MutexGuard<'_, Pending> {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Waits for the run in progress, if any (a store waits for it when it is dropped; a
    /// test waits for it to look at the files).
    pub fn join_running(&self) {
        let handle = self
            .handle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(h) = handle
            && h.join().is_err()
        {
            // A run that panicked erased nothing for sure: its prefixes wait again (they are
            // still recorded with the data).
            let mut pending = self.lock_pending();
            if let Some(run) = pending.running.take() {
                pending.waiting.extend(run);
            }
        }
    }

    /// Whether an erasure of keys under `prefix` is waiting for its run.
    pub fn is_pending(&self, prefix: &[u8]) -> bool {
        let pending = self.lock_pending();
        pending
            .waiting
            .iter()
            .chain(pending.running.iter().flatten())
            .any(|p| prefix.starts_with(p) || p.starts_with(prefix))
    }

    /// (runs, seconds spent) so far.
    pub fn totals(&self) -> (u64, f64) {
        (
            self.count.load(Ordering::Relaxed),
            self.nanos.load(Ordering::Relaxed) as f64 / 1e9,
        )
    }
}

/// The first key after every key that starts with `prefix` (none: no such key, the range runs
/// to the end).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

impl RocksStore {
    /// Opens (or creates) the store at `path`.
    pub fn open(path: &Path, config: &RocksConfig) -> Result<Self, StateError> {
        let tuning = Tuning {
            block_cache_bytes: config.block_cache_bytes,
            write_buffer_bytes: config.write_buffer_bytes,
            write_buffers_max: config.write_buffers_max,
            db_write_buffer_bytes: config.db_write_buffer_bytes,
            open_files_max: 256,
            memtable_blooms: true,
        };
        let names: Vec<&str> = Cf::ALL.iter().map(|cf| cf.name()).collect();
        let db = ErasingDb::new(open_db(path, &names, &tuning, OpenAs::Primary)?)?;
        Ok(Self {
            db,
            path: path.to_owned(),
            wal: config.wal,
        })
    }

    /// Where the store lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The purges' erasures of overwritten values this store ran (`ErasingDb::erase`).
    pub fn erasures(&self) -> &Erasures {
        self.db.erasures()
    }

    /// Runs the erasure of purges that are waiting for it, if [`ERASE_INTERVAL`] has passed
    /// since the last run (the processor calls it every few seconds).
    pub fn erase_due(&self) -> Result<(), StateError> {
        let names: Vec<&str> = Cf::ALL.iter().map(|cf| cf.name()).collect();
        self.db.erase(&names, std::iter::empty(), false)
    }

    /// Runs the erasure of purges that are waiting for it now (a clean stop).
    pub fn erase_now(&self) -> Result<(), StateError> {
        let names: Vec<&str> = Cf::ALL.iter().map(|cf| cf.name()).collect();
        self.db.erase(&names, std::iter::empty(), true)
    }

    fn cf(&self, cf: Cf) -> Result<&rocksdb::ColumnFamily, StateError> {
        self.db
            .cf_handle(cf.name())
            .ok_or_else(|| StateError::Corrupt(format!("column family {} missing", cf.name())))
    }

    /// Writes a consistent copy of the store to `dir` (a RocksDB checkpoint; `dir` must not
    /// exist). Opening `dir` as a store gives the state as of the call.
    pub fn checkpoint(&self, dir: &Path) -> Result<(), StateError> {
        // Without a WAL the checkpoint holds only flushed data: flush first.
        self.flush()?;
        Checkpoint::new(&self.db)?.create_checkpoint(dir)?;
        Ok(())
    }

    /// Flushes every memtable (all column families, atomically).
    pub fn flush(&self) -> Result<(), StateError> {
        let cfs: Vec<&rocksdb::ColumnFamily> = Cf::ALL
            .iter()
            .map(|cf| self.cf(*cf))
            .collect::<Result<_, _>>()?;
        self.db
            .flush_cfs_opt(&cfs, &rocksdb::FlushOptions::default())?;
        Ok(())
    }

    fn write_batch(&self, batch: WriteBatch) -> Result<(), StateError> {
        let mut opts = WriteOptions::default();
        opts.disable_wal(!self.wal);
        self.db.write_opt(batch, &opts)?;
        Ok(())
    }

    /// Size estimates for metrics.
    pub fn sizes(&self) -> Result<RocksSizes, StateError> {
        let mut s = RocksSizes::default();
        for cf in Cf::ALL {
            let h = self.cf(cf)?;
            s.live_data_bytes += self
                .db
                .property_int_value_cf(h, "rocksdb.estimate-live-data-size")?
                .unwrap_or(0);
            s.pending_compaction_bytes += self
                .db
                .property_int_value_cf(h, "rocksdb.estimate-pending-compaction-bytes")?
                .unwrap_or(0);
        }
        Ok(s)
    }
}

impl StateRead for RocksStore {
    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>, StateError> {
        Ok(self.db.get_cf(self.cf(cf)?, key)?)
    }

    fn scan(&self, cf: Cf, prefix: &[u8], limit: usize) -> Result<Entries, StateError> {
        let mut out = Vec::new();
        for item in self
            .db
            .iterator_cf(self.cf(cf)?, IteratorMode::From(prefix, Direction::Forward))
        {
            let (k, v) = item?;
            if !k.starts_with(prefix) || out.len() >= limit {
                break;
            }
            out.push((k.into_vec(), v.into_vec()));
        }
        Ok(out)
    }
}

impl StateStore for RocksStore {
    fn write_all(&self, sets: &[&WriteSet]) -> Result<(), StateError> {
        let mut batch = WriteBatch::default();
        for (cf, k, v) in sets.iter().flat_map(|w| w.iter()) {
            let h = self.cf(cf)?;
            match v {
                Some(v) => batch.put_cf(h, k, v),
                None => batch.delete_cf(h, k),
            }
        }
        self.write_batch(batch)?;
        let names: Vec<&str> = Cf::ALL.iter().map(|cf| cf.name()).collect();
        self.db
            .erase(&names, sets.iter().flat_map(|w| w.erased()), false)?;
        Ok(())
    }

    fn drop_partition(&self, p: i32) -> Result<(), StateError> {
        let from = partition(p);
        let to = match (p as u32).checked_add(1) {
            Some(next) => next.to_be_bytes().to_vec(),
            None => vec![0xff; 5],
        };
        let mut batch = WriteBatch::default();
        for cf in Cf::ALL {
            batch.delete_range_cf(self.cf(cf)?, &from, &to);
        }
        self.write_batch(batch)
    }

    fn for_each(&self, cf: Cf, f: Visit<'_>) -> Result<(), StateError> {
        for item in self.db.iterator_cf(self.cf(cf)?, IteratorMode::Start) {
            let (k, v) = item?;
            f(&k, &v)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{StateStore, WriteSet};

    /// Every file under `dir` holding `needle`.
    fn files_holding(dir: &Path, needle: &[u8]) -> Vec<PathBuf> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| {
                std::fs::read(p).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle))
            })
            .collect()
    }

    /// Writes `value` under `key`, then overwrites it and asks for the old bytes' erasure.
    fn write_then_purge(store: &RocksStore, key: &[u8], value: &[u8]) {
        let mut w = WriteSet::default();
        w.put(Cf::Rows, key.to_vec(), value.to_vec());
        store.write(&w).unwrap();
        store.flush().unwrap();
        let mut w = WriteSet::default();
        w.put(Cf::Rows, key.to_vec(), b"tombstone".to_vec());
        w.erase_overwritten(key.to_vec());
        store.write(&w).unwrap();
    }

    /// Several write sets are one write, in order: where two write one key the later one is
    /// kept (a batch's positions after its writes), and each set's erasures are run.
    #[test]
    fn write_all_is_one_write_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let store = RocksStore::open(dir.path(), &RocksConfig::default()).unwrap();
        let mut first = WriteSet::default();
        first.put(Cf::Meta, b"p".to_vec(), b"old".to_vec());
        first.put(Cf::Rows, b"a".to_vec(), b"1".to_vec());
        first.put(Cf::Rows, b"gone".to_vec(), b"x".to_vec());
        let mut second = WriteSet::default();
        second.put(Cf::Meta, b"p".to_vec(), b"new".to_vec());
        second.delete(Cf::Rows, b"gone".to_vec());
        second.erase_overwritten(b"a".to_vec());
        store.write_all(&[&first, &second]).unwrap();
        assert_eq!(
            store.get(Cf::Meta, b"p").unwrap().as_deref(),
            Some(&b"new"[..])
        );
        assert_eq!(
            store.get(Cf::Rows, b"a").unwrap().as_deref(),
            Some(&b"1"[..])
        );
        assert_eq!(store.get(Cf::Rows, b"gone").unwrap(), None);
        store.erasures().join_running();
        assert_eq!(
            store.erasures().totals().0,
            1,
            "the second set's erasure ran"
        );
        // The memory store keeps the same order.
        let memory = crate::MemoryStore::new();
        memory.write_all(&[&first, &second]).unwrap();
        assert_eq!(
            memory.get(Cf::Meta, b"p").unwrap().as_deref(),
            Some(&b"new"[..])
        );
        assert_eq!(memory.get(Cf::Rows, b"gone").unwrap(), None);
    }

    /// The first purge's erasure starts at once on its own thread; one within the interval
    /// waits (recorded with the data) until `erase_now`, which a clean stop calls; a store
    /// dropped mid-run waits for the run, so it opens again at once.
    #[test]
    fn erasure_runs_off_the_writer_within_its_bounds() {
        let dir = tempfile::tempdir().unwrap();
        let config = RocksConfig {
            wal: true,
            ..RocksConfig::default()
        };
        let store = RocksStore::open(dir.path(), &config).unwrap();
        write_then_purge(&store, b"k1", b"FIRST-SECRET-VALUE");
        store.erasures().join_running();
        assert_eq!(store.erasures().totals().0, 1);
        assert!(!store.erasures().is_pending(b"k1"));
        assert!(files_holding(dir.path(), b"FIRST-SECRET-VALUE").is_empty());

        write_then_purge(&store, b"k2", b"SECOND-SECRET-VALUE");
        store.erasures().join_running();
        assert!(store.erasures().is_pending(b"k2"), "within the interval");
        assert!(!files_holding(dir.path(), b"SECOND-SECRET-VALUE").is_empty());
        drop(store);
        // Reopened, the waiting erasure is remembered and its first run is not held back.
        let store = RocksStore::open(dir.path(), &config).unwrap();
        assert!(store.erasures().is_pending(b"k2"));
        store.erase_now().unwrap();
        assert!(!store.erasures().is_pending(b"k2"));
        assert!(files_holding(dir.path(), b"SECOND-SECRET-VALUE").is_empty());

        write_then_purge(&store, b"k3", b"THIRD-SECRET-VALUE");
        // Dropped with the run perhaps in progress: the drop waits for it.
        drop(store);
        let store = RocksStore::open(dir.path(), &config).unwrap();
        store.erase_now().unwrap();
        assert!(files_holding(dir.path(), b"THIRD-SECRET-VALUE").is_empty());
    }
}
