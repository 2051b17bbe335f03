//! Progress of a sink whose target is outside RocksDB (the vector index): per outbox partition
//! the next offset to read, per account the last commit applied. A sink writes its target
//! first and its marks after, so a crash repeats a batch (same rows, same points) and never
//! skips one; commits at or below an account's mark are skipped, so re-reading old commits
//! never regresses a newer point.

use std::collections::BTreeMap;
use std::path::Path;

use rocksdb::{ColumnFamilyDescriptor, DB, Options, WriteBatch};

use crate::StateError;

/// The marks store.
#[derive(Debug)]
pub struct MarkStore {
    db: DB,
}

fn i64_of(v: &[u8]) -> Result<i64, StateError> {
    let b: [u8; 8] = v
        .try_into()
        .map_err(|_| StateError::Corrupt("mark value size".into()))?;
    Ok(i64::from_be_bytes(b))
}

impl MarkStore {
    /// Opens (or creates) the store at `path`.
    pub fn open(path: &Path) -> Result<Self, StateError> {
        let mut o = Options::default();
        o.create_if_missing(true);
        o.create_missing_column_families(true);
        o.set_keep_log_file_num(4);
        o.set_max_open_files(64);
        // Small, bounded memtables: marks are a few bytes per account.
        o.set_db_write_buffer_size(8 << 20);
        let mut cf = Options::default();
        cf.set_write_buffer_size(4 << 20);
        cf.set_max_write_buffer_number(2);
        let cfs = ["accounts", "positions"]
            .into_iter()
            .map(|n| ColumnFamilyDescriptor::new(n, cf.clone()));
        Ok(Self {
            db: DB::open_cf_descriptors(&o, path, cfs)?,
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
            .get_cf(self.cf("positions")?, partition.to_be_bytes())?
            .map_or(Ok(0), |v| i64_of(&v))
    }

    /// Records progress: accounts' last applied commits and partitions' next offsets.
    pub fn write(
        &self,
        applied: &BTreeMap<String, i64>,
        positions: &BTreeMap<i32, i64>,
    ) -> Result<(), StateError> {
        let mut b = WriteBatch::default();
        let (a, p) = (self.cf("accounts")?, self.cf("positions")?);
        for (acct, seq) in applied {
            b.put_cf(a, acct.as_bytes(), seq.to_be_bytes());
        }
        for (part, next) in positions {
            b.put_cf(p, part.to_be_bytes(), next.to_be_bytes());
        }
        self.db.write(b)?;
        Ok(())
    }
}
