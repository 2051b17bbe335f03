//! The RocksDB store.

use std::path::{Path, PathBuf};

use rocksdb::checkpoint::Checkpoint;
use rocksdb::{
    BlockBasedOptions, Cache, ColumnFamilyDescriptor, DB, DBCompressionType, Direction,
    IteratorMode, Options, WriteBatch, WriteOptions,
};

use crate::StateError;
pub(crate) use crate::erasure::ErasingDb;
pub use crate::erasure::{ERASE_INTERVAL, ERASE_RANGES_MAX, Erasures};
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
