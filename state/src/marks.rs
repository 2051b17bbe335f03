//! Progress of a sink whose target is outside RocksDB (the vector index): per outbox partition
//! the next offset to read, per account the last commit applied. A sink writes its target
//! first and its marks after, so a crash repeats a batch (same rows, same points) and never
//! skips one; commits at or below an account's mark are skipped, so re-reading old commits
//! never regresses a newer point.

use std::collections::BTreeMap;
use std::path::Path;

use rocksdb::WriteBatch;

use crate::StateError;
use crate::keycache::{self, KEY_CFS, KeyCache, KeyRecord, KeyState};
use crate::progress::{Checkpoint, decode_next, encode_next, partition_key};
use crate::rocks::{ErasingDb, OpenAs, Tuning, open_db};

/// The marks store, and the vector sink's copy of the data keys ([`crate::keycache`]).
#[derive(Debug)]
pub struct MarkStore {
    db: ErasingDb,
}

const CFS: [&str; 4] = ["accounts", "positions", KEY_CFS[0], KEY_CFS[1]];

fn i64_of(v: &[u8]) -> Result<i64, StateError> {
    let b: [u8; 8] = v
        .try_into()
        .map_err(|_| StateError::Corrupt("mark value size".into()))?;
    Ok(i64::from_be_bytes(b))
}

impl MarkStore {
    /// Opens (or creates) the store at `path`.
    pub fn open(path: &Path) -> Result<Self, StateError> {
        // Small, bounded memtables: marks are a few bytes per account.
        let tuning = Tuning {
            block_cache_bytes: 0,
            write_buffer_bytes: 4 << 20,
            write_buffers_max: 2,
            db_write_buffer_bytes: 8 << 20,
            open_files_max: 64,
            memtable_blooms: false,
        };
        let db = open_db(path, &CFS, &tuning, OpenAs::Primary)?;
        Ok(Self {
            db: ErasingDb::new(db)?,
        })
    }

    fn cf(&self, name: &str) -> Result<&rocksdb::ColumnFamily, StateError> {
        self.db
            .cf_handle(name)
            .ok_or_else(|| StateError::Corrupt(format!("column family {name} missing")))
    }

    /// The last commit applied for `account` (0: none).
    pub fn applied(&self, account: &str) -> Result<i64, StateError> {
        self.db
            .get_cf(self.cf("accounts")?, account.as_bytes())?
            .map_or(Ok(0), |v| i64_of(&v))
    }

    /// The next outbox offset to read on `partition` (0: from the start).
    pub fn position(&self, partition: i32) -> Result<i64, StateError> {
        self.db
            .get_cf(self.cf("positions")?, partition_key(partition))?
            .map_or(Ok(0), |v| decode_next(&v))
    }

    /// Records progress: accounts' last applied commits and partitions' next offsets (refused
    /// whole, writing nothing, if a partition's progress would go backwards), and destroys the
    /// data keys folded purges named ((account, key id)), leaving no trace of them in the
    /// store's files.
    pub fn write(
        &self,
        applied: &BTreeMap<String, i64>,
        positions: &Checkpoint,
        destroyed: &[(String, String)],
    ) -> Result<(), StateError> {
        let mut now = Checkpoint::new();
        for (part, _) in positions.iter() {
            now.set_at_least(part, self.position(part)?);
        }
        now.try_apply(positions)?;
        let mut b = WriteBatch::default();
        let (a, p) = (self.cf("accounts")?, self.cf("positions")?);
        for (acct, seq) in applied {
            b.put_cf(a, acct.as_bytes(), seq.to_be_bytes());
        }
        for (part, next) in positions.iter() {
            b.put_cf(p, partition_key(part), encode_next(next));
        }
        for (acct, key_id) in destroyed {
            keycache::destroy(&self.db, &mut b, acct, key_id)?;
        }
        self.db.write(b)?;
        let prefixes: Vec<Vec<u8>> = destroyed
            .iter()
            .map(|(acct, _)| keycache::entry(acct, ""))
            .collect();
        self.db
            .erase(&CFS, prefixes.iter().map(Vec::as_slice), false)?;
        Ok(())
    }
}

impl MarkStore {
    /// Runs the erasure of destroyed keys waiting for it: when
    /// [`crate::rocks::ERASE_INTERVAL`] has passed since the last run, or at once with `now`.
    pub fn erase_due(&self, now: bool) -> Result<(), StateError> {
        self.db.erase(&CFS, std::iter::empty(), now)
    }

    /// The erasures of destroyed keys this store ran.
    pub fn erasures(&self) -> &crate::rocks::Erasures {
        self.db.erasures()
    }
}

impl KeyCache for MarkStore {
    fn key(&self, account: &str, key_id: &str) -> Result<KeyState, StateError> {
        keycache::key(&self.db, account, key_id)
    }

    fn add(&self, records: &[KeyRecord]) -> Result<(), StateError> {
        keycache::add(&self.db, records)
    }

    fn key_position(&self, p: i32) -> Result<i64, StateError> {
        keycache::key_position(&self.db, p)
    }
}
