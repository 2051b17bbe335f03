//! The RocksDB store.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

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
            write_buffer_bytes: 8 << 20,
            write_buffers_max: 2,
            db_write_buffer_bytes: 64 << 20,
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
    db: DB,
    path: PathBuf,
    wal: bool,
    erasures: Erasures,
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
    // No block compression: a purge's erasure (`erase_overwritten`) is then checkable by
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

/// Leaves no older version of any key under `prefixes` in the files of `db` (column families
/// `cfs`): what a purge overwrote or deleted. Flushes every memtable (so the write-ahead log
/// files holding the old values become obsolete and are deleted), then compacts the range of
/// each group of prefixes ([`ERASE_RANGES_MAX`] at most) in every column family down to the
/// bottommost level, which rewrites the files holding those keys without the versions below the
/// newest (each file about once); the rewritten files are deleted.
/// Blocks the file system freed are not overwritten (`docs/privacy.md`). Costs one flush and
/// the rewrite of the files overlapping the ranges: run once per written batch that purged.
pub fn erase_overwritten<'p>(
    db: &DB,
    cfs: &[&str],
    prefixes: impl IntoIterator<Item = &'p [u8]>,
    done: &Erasures,
) -> Result<(), StateError> {
    erase(db, cfs, prefixes, done, false)
}

/// [`erase_overwritten`]; with `now`, the erasures waiting run whatever the interval (a clean
/// stop runs them: `docs/privacy.md`).
pub fn erase<'p>(
    db: &DB,
    cfs: &[&str],
    prefixes: impl IntoIterator<Item = &'p [u8]>,
    done: &Erasures,
    now: bool,
) -> Result<(), StateError> {
    let mut pending = done
        .pending
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let before = pending.len();
    pending.extend(prefixes.into_iter().map(<[u8]>::to_vec));
    let mut last = done
        .last
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if pending.is_empty() || (!now && last.is_some_and(|t| t.elapsed() < ERASE_INTERVAL)) {
        if pending.len() > before {
            // Kept with the data, so a stop before the run does not forget it.
            db.put(ERASE_PENDING_KEY, encode_prefixes(&pending))?;
        }
        return Ok(());
    }
    let started = std::time::Instant::now();
    let handles: Vec<&rocksdb::ColumnFamily> = cfs
        .iter()
        .map(|name| {
            db.cf_handle(name)
                .ok_or_else(|| StateError::Corrupt(format!("column family {name} missing")))
        })
        .collect::<Result<_, _>>()?;
    db.flush_cfs_opt(&handles, &FlushOptions::default())?;
    let mut opts = CompactOptions::default();
    opts.set_bottommost_level_compaction(BottommostLevelCompaction::Force);
    // The prefixes, in order, in at most `ERASE_RANGES_MAX` contiguous groups, each compacted
    // as one range from its first prefix to the end of its last: a file is rewritten about once
    // per run however many prefixes wait (a compaction per prefix rewrote the same bottommost
    // files once for each: minutes for a purge-heavy half minute), and a few prefixes still
    // compact only what holds them.
    let sorted: Vec<&Vec<u8>> = pending.iter().collect();
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
    pending.clear();
    db.delete(ERASE_PENDING_KEY)?;
    *last = Some(std::time::Instant::now());
    done.count.fetch_add(1, Ordering::Relaxed);
    done.nanos
        .fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
    Ok(())
}

/// The key (in the default column family) under which a store keeps the prefixes whose
/// erasure waits for its run: a store opened again runs them first ([`Erasures::load`]).
const ERASE_PENDING_KEY: &[u8] = b"kledger.erase_pending";

fn encode_prefixes(pending: &std::collections::BTreeSet<Vec<u8>>) -> Vec<u8> {
    let mut v = Vec::new();
    for p in pending {
        v.extend_from_slice(&(p.len() as u32).to_be_bytes());
        v.extend_from_slice(p);
    }
    v
}

/// Range compactions one erasure run makes per column family at most ([`erase`]).
pub const ERASE_RANGES_MAX: usize = 8;

/// At most one erasure per store per this interval: a purge-heavy stream would otherwise
/// flush and compact at every batch (the pipeline bench fell to 1% of its rate). Purges in
/// between wait for the next run, which the next write or [`RocksStore::erase_due`] makes.
pub const ERASE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(30);

/// A store's erasures: the prefixes waiting for the next run, when the last ran, and how many
/// runs there were and their time (for metrics).
#[derive(Debug, Default)]
pub struct Erasures {
    count: AtomicU64,
    nanos: AtomicU64,
    pending: std::sync::Mutex<std::collections::BTreeSet<Vec<u8>>>,
    last: std::sync::Mutex<Option<std::time::Instant>>,
}

impl Erasures {
    /// The erasures a store left waiting when it last stopped (the next write or
    /// `erase_due` runs them: its first run is not held back by the interval).
    pub fn load(db: &DB) -> Result<Self, StateError> {
        let e = Self::default();
        if let Some(v) = db.get(ERASE_PENDING_KEY)? {
            let mut pending = e
                .pending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let mut at = 0;
            while at + 4 <= v.len() {
                let n = u32::from_be_bytes([v[at], v[at + 1], v[at + 2], v[at + 3]]) as usize;
                let Some(p) = v.get(at + 4..at + 4 + n) else {
                    break;
                };
                pending.insert(p.to_vec());
                at += 4 + n;
            }
        }
        Ok(e)
    }

    /// Whether an erasure of keys under `prefix` is waiting for its run.
    pub fn is_pending(&self, prefix: &[u8]) -> bool {
        self.pending
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .iter()
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
        let db = open_db(path, &names, &tuning, OpenAs::Primary)?;
        let erasures = Erasures::load(&db)?;
        Ok(Self {
            db,
            path: path.to_owned(),
            wal: config.wal,
            erasures,
        })
    }

    /// Where the store lives.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The purges' erasures of overwritten values this store ran ([`erase_overwritten`]).
    pub fn erasures(&self) -> &Erasures {
        &self.erasures
    }

    /// Runs the erasure of purges that are waiting for it, if [`ERASE_INTERVAL`] has passed
    /// since the last run (the processor calls it every few seconds).
    pub fn erase_due(&self) -> Result<(), StateError> {
        let names: Vec<&str> = Cf::ALL.iter().map(|cf| cf.name()).collect();
        erase(&self.db, &names, std::iter::empty(), &self.erasures, false)
    }

    /// Runs the erasure of purges that are waiting for it now (a clean stop).
    pub fn erase_now(&self) -> Result<(), StateError> {
        let names: Vec<&str> = Cf::ALL.iter().map(|cf| cf.name()).collect();
        erase(&self.db, &names, std::iter::empty(), &self.erasures, true)
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
    fn write(&self, writes: &WriteSet) -> Result<(), StateError> {
        let mut batch = WriteBatch::default();
        for (cf, k, v) in writes.iter() {
            let h = self.cf(cf)?;
            match v {
                Some(v) => batch.put_cf(h, k, v),
                None => batch.delete_cf(h, k),
            }
        }
        self.write_batch(batch)?;
        let names: Vec<&str> = Cf::ALL.iter().map(|cf| cf.name()).collect();
        erase_overwritten(&self.db, &names, writes.erased(), &self.erasures)?;
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
