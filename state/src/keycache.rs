//! A projection's copy of the data keys (rules v4), kept beside the projection's own data in
//! its RocksDB (the view store, the vector sink's marks store): the keys its reads need to open
//! sealed rows, read from the keys topic, and the keys purges destroyed.
//!
//! Column families:
//! - `keys`: account (2-byte length + bytes), key id → the 32-byte key, or empty once a purge
//!   destroyed it. A destroyed key stays destroyed: a record of it read later (the topic is read
//!   in order, but a rebuild may read a key's record after the purge that destroyed it) does
//!   not bring it back.
//! - `keys_next`: keys-topic partition → the next offset to read.
//!
//! May not touch: Kafka (records are handed in), the projection's own column families.

use rocksdb::{DB, WriteBatch};

use crate::StateError;
use crate::keys::parse_key_record_key;
use crate::progress::{decode_next, encode_next, partition_key};

/// The column families a store that caches keys opens besides its own.
pub const KEY_CFS: [&str; 2] = ["keys", "keys_next"];

/// What a store knows of one data key.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum KeyState {
    /// The key.
    Present([u8; 32]),
    /// A purge destroyed it.
    Destroyed,
    /// Not read yet (or compacted away after it was destroyed).
    Unknown,
}

impl std::fmt::Debug for KeyState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            KeyState::Present(_) => "Present(..)",
            KeyState::Destroyed => "Destroyed",
            KeyState::Unknown => "Unknown",
        })
    }
}

/// One record of the keys topic.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyRecord {
    /// Its partition.
    pub partition: i32,
    /// Its offset.
    pub offset: i64,
    /// Its key ([`crate::keys::key_record_key`]).
    pub key: Vec<u8>,
    /// Its value ([`crate::keys::key_value`]); `None` for a tombstone.
    pub value: Option<Vec<u8>>,
}

impl std::fmt::Debug for KeyRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyRecord")
            .field("partition", &self.partition)
            .field("offset", &self.offset)
            .field("tombstone", &self.value.is_none())
            .finish_non_exhaustive()
    }
}

/// A store's copy of the data keys.
pub trait KeyCache: Send + Sync {
    /// What the store knows of `key_id` of `account`.
    fn key(&self, account: &str, key_id: &str) -> Result<KeyState, StateError>;
    /// Adds records read from the keys topic (and moves the read positions past them).
    fn add(&self, records: &[KeyRecord]) -> Result<(), StateError>;
    /// The next keys-topic offset to read on partition `p`.
    fn key_position(&self, p: i32) -> Result<i64, StateError>;
}

/// The `keys` column family's key: the account prefix the store's erasure compacts, then the
/// key id.
pub fn entry(account: &str, key_id: &str) -> Vec<u8> {
    let a = account.as_bytes();
    let mut k = Vec::with_capacity(2 + a.len() + key_id.len());
    k.extend_from_slice(&(a.len().min(u16::MAX as usize) as u16).to_be_bytes());
    k.extend_from_slice(a);
    k.extend_from_slice(key_id.as_bytes());
    k
}

fn cf<'a>(db: &'a DB, name: &str) -> Result<&'a rocksdb::ColumnFamily, StateError> {
    db.cf_handle(name)
        .ok_or_else(|| StateError::Corrupt(format!("column family {name} missing")))
}

/// [`KeyCache::key`] over `db`.
pub(crate) fn key(db: &DB, account: &str, key_id: &str) -> Result<KeyState, StateError> {
    state_of(
        db.get_cf(cf(db, "keys")?, entry(account, key_id))?
            .as_deref(),
    )
}

/// [`key`] of each of `key_ids`, in the same order, in one batched read.
pub(crate) fn keys(db: &DB, account: &str, key_ids: &[&str]) -> Result<Vec<KeyState>, StateError> {
    if key_ids.is_empty() {
        return Ok(Vec::new());
    }
    let entries: Vec<Vec<u8>> = key_ids.iter().map(|id| entry(account, id)).collect();
    db.batched_multi_get_cf(cf(db, "keys")?, &entries, false)
        .into_iter()
        .map(|v| state_of(v?.as_deref()))
        .collect()
}

/// A `keys` entry's value as a key's state.
fn state_of(v: Option<&[u8]>) -> Result<KeyState, StateError> {
    match v {
        None => Ok(KeyState::Unknown),
        Some([]) => Ok(KeyState::Destroyed),
        Some(v) => {
            let k: [u8; 32] = v
                .get(..32)
                .and_then(|k| k.try_into().ok())
                .ok_or_else(|| StateError::Corrupt("cached data key size".into()))?;
            Ok(KeyState::Present(k))
        }
    }
}

/// Marks `key_id` of `account` destroyed in `batch` (a folded purge names it).
pub(crate) fn destroy(
    db: &DB,
    batch: &mut WriteBatch,
    account: &str,
    key_id: &str,
) -> Result<(), StateError> {
    batch.put_cf(cf(db, "keys")?, entry(account, key_id), []);
    Ok(())
}

/// [`KeyCache::add`] over `db`: one write.
pub(crate) fn add(db: &DB, records: &[KeyRecord]) -> Result<(), StateError> {
    let (keys, next) = (cf(db, "keys")?, cf(db, "keys_next")?);
    let mut b = WriteBatch::default();
    let mut positions = std::collections::BTreeMap::new();
    // Keys destroyed by this batch's own tombstones.
    let mut destroyed = std::collections::BTreeSet::new();
    for r in records {
        let at = positions.entry(r.partition).or_insert(0);
        *at = (*at).max(r.offset + 1);
        let Some((account, key_id)) = parse_key_record_key(&r.key) else {
            continue;
        };
        let e = entry(account, key_id);
        match r.value.as_deref().filter(|v| !v.is_empty()) {
            Some(v) => {
                if !destroyed.contains(&e) && key(db, account, key_id)? != KeyState::Destroyed {
                    let material = v
                        .get(..32)
                        .ok_or_else(|| StateError::Corrupt("data key record size".into()))?;
                    b.put_cf(keys, e, material);
                }
            }
            None => {
                b.put_cf(keys, &e, []);
                destroyed.insert(e);
            }
        }
    }
    for (p, n) in positions {
        if n > key_position(db, p)? {
            b.put_cf(next, partition_key(p), encode_next(n));
        }
    }
    db.write(b)?;
    Ok(())
}

/// [`KeyCache::key_position`] over `db`.
pub(crate) fn key_position(db: &DB, p: i32) -> Result<i64, StateError> {
    db.get_cf(cf(db, "keys_next")?, partition_key(p))?
        .map_or(Ok(0), |v| decode_next(&v))
}
