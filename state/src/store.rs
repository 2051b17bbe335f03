//! The store trait, write sets and the overlay that batches decide against.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;

use sha2::{Digest, Sha256};

use crate::StateError;
use crate::keys::Cf;

/// Entries of a scan: (key, value) in key order.
pub type Entries = Vec<(Vec<u8>, Vec<u8>)>;
/// A visitor of entries.
pub type Visit<'a> = &'a mut dyn FnMut(&[u8], &[u8]) -> Result<(), StateError>;

/// Reads of the state, from a store or through an overlay.
pub trait StateRead {
    /// One value.
    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>, StateError>;
    /// Entries whose key starts with `prefix`, in key order, at most `limit`.
    fn scan(&self, cf: Cf, prefix: &[u8], limit: usize) -> Result<Entries, StateError>;
}

/// A state store: RocksDB ([`crate::RocksStore`]) or its in-memory twin ([`crate::MemoryStore`]).
/// Both pass the same conformance suite (`tests/conformance.rs`).
pub trait StateStore: StateRead + Send + Sync {
    /// Applies a write set atomically.
    fn write(&self, writes: &WriteSet) -> Result<(), StateError> {
        self.write_all(&[writes])
    }
    /// Applies several write sets as one atomic write, in order (where two write one key, the
    /// later set's write is the one kept).
    fn write_all(&self, sets: &[&WriteSet]) -> Result<(), StateError>;
    /// Deletes every key of partition `p` in every column family (on revoke).
    fn drop_partition(&self, p: i32) -> Result<(), StateError>;
    /// Visits every entry of `cf` in key order.
    fn for_each(&self, cf: Cf, f: Visit<'_>) -> Result<(), StateError>;
}

/// SHA-256 over every key and value of every column family but `meta`, `shred` and `keys`, in
/// key order, each length-prefixed and tagged with its column family: equal digests mean equal
/// ledger state. A sealed row (rules v4) counts in the form its head hash covers (its content's
/// MAC, not its key id or ciphertext), so the digest does not depend on which data keys
/// sealed the ledger.
pub fn digest(store: &dyn StateStore) -> Result<String, StateError> {
    let mut h = Sha256::new();
    for cf in Cf::ALL
        .into_iter()
        .filter(|cf| !Cf::NOT_DIGESTED.contains(cf))
    {
        store.for_each(cf, &mut |k, v| {
            let v = digested(cf, v)?;
            let v = v.as_ref();
            h.update([cf as u8]);
            h.update((k.len() as u64).to_be_bytes());
            h.update(k);
            h.update((v.len() as u64).to_be_bytes());
            h.update(v);
            Ok(())
        })?;
    }
    Ok(kledger_processors::ids::to_hex(&h.finalize()))
}

/// SHA-256 of the ledger a state holds, independent of the topic layout: every account's
/// entries of the digested column families ([`digest`]'s), keyed without their partition, a
/// head without the offset of its last intent (a position, not history), accounts in id order.
/// Two states of one ledger on different partition counts (after `kledger repartition`), or
/// restored from a mirror whose offsets differ, digest alike. Memory: one hash state per
/// account.
pub fn ledger_digest(store: &dyn StateStore) -> Result<String, StateError> {
    let mut accounts: BTreeMap<String, Sha256> = BTreeMap::new();
    for cf in Cf::ALL
        .into_iter()
        .filter(|cf| !Cf::NOT_DIGESTED.contains(cf))
    {
        store.for_each(cf, &mut |k, v| {
            let (_, acct, tail) = crate::keys::split_child(k)
                .ok_or_else(|| StateError::Corrupt(format!("{} key layout", cf.name())))?;
            let v = match cf {
                Cf::Heads => {
                    let mut h = crate::keys::parse_head(v)?;
                    h.intent_offset = -1;
                    std::borrow::Cow::Owned(crate::keys::head_value(&h)?)
                }
                _ => digested(cf, v)?,
            };
            let v = v.as_ref();
            let h = match accounts.get_mut(acct) {
                Some(h) => h,
                None => accounts.entry(acct.to_owned()).or_default(),
            };
            h.update([cf as u8]);
            h.update((tail.len() as u64).to_be_bytes());
            h.update(tail);
            h.update((v.len() as u64).to_be_bytes());
            h.update(v);
            Ok(())
        })?;
    }
    let mut h = Sha256::new();
    for (acct, a) in accounts {
        h.update((acct.len() as u64).to_be_bytes());
        h.update(acct.as_bytes());
        h.update(a.finalize());
    }
    Ok(kledger_processors::ids::to_hex(&h.finalize()))
}

/// A value as the digests hash it: a sealed row in its hashed form, anything else as stored.
fn digested(cf: Cf, v: &[u8]) -> Result<std::borrow::Cow<'_, [u8]>, StateError> {
    if cf == Cf::Rows
        && let Some(b) = hashed_row(v)?
    {
        return Ok(std::borrow::Cow::Owned(b));
    }
    Ok(std::borrow::Cow::Borrowed(v))
}

/// A stored row's hashed form when it is sealed (else `None`: counted as stored, as are bytes
/// that are not a row: the digest reports state, it does not judge it).
fn hashed_row(v: &[u8]) -> Result<Option<Vec<u8>>, StateError> {
    use kledger_schemas::avro::{AvroCodec, Reader};
    let Ok(row) = kledger_schemas::Row::decode(&mut Reader::new(v)) else {
        return Ok(None);
    };
    if row.sealed.is_none() {
        return Ok(None);
    }
    let mut b = Vec::with_capacity(v.len());
    row.encode_as(&mut b, kledger_schemas::Form::Hashed);
    Ok(Some(b))
}

/// SHA-256 over the data keys a state holds (`keys`, in key order): equal when two states
/// hold the same keys (a state restored from the keys topic and the one that wrote it).
pub fn digest_keys(store: &dyn StateStore) -> Result<String, StateError> {
    let mut h = Sha256::new();
    store.for_each(Cf::Keys, &mut |k, v| {
        h.update((k.len() as u64).to_be_bytes());
        h.update(k);
        h.update((v.len() as u64).to_be_bytes());
        h.update(v);
        Ok(())
    })?;
    Ok(kledger_processors::ids::to_hex(&h.finalize()))
}

/// Pending puts (`Some`) and deletes (`None`), in key order, and the key prefixes whose
/// overwritten values must not outlive the write (a purge's).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WriteSet {
    // One map per column family, so lookups borrow the key instead of copying it.
    cfs: BTreeMap<Cf, BTreeMap<Vec<u8>, Option<Vec<u8>>>>,
    /// Account prefixes ([`crate::keys::account`]) a purge rewrote: a durable store leaves
    /// no older version of their keys in its files once the write returns.
    erase: BTreeSet<Vec<u8>>,
}

impl WriteSet {
    /// Puts a value.
    pub fn put(&mut self, cf: Cf, key: Vec<u8>, value: Vec<u8>) {
        self.cfs.entry(cf).or_default().insert(key, Some(value));
    }

    /// Deletes a key.
    pub fn delete(&mut self, cf: Cf, key: Vec<u8>) {
        self.cfs.entry(cf).or_default().insert(key, None);
    }

    /// Marks the keys under `prefix` as erased: once this write is durable, no value they had
    /// before it may remain in the store's files (a purge; [`WriteSet::erased`]).
    pub fn erase_overwritten(&mut self, prefix: Vec<u8>) {
        self.erase.insert(prefix);
    }

    /// The prefixes [`WriteSet::erase_overwritten`] marked.
    pub fn erased(&self) -> impl Iterator<Item = &[u8]> {
        self.erase.iter().map(Vec::as_slice)
    }

    /// Keeps only the writes of partitions `keep` accepts (every key starts with its
    /// partition, [`crate::keys`]); the writes of a partition whose share of a batch failed
    /// are dropped this way while the others are made durable.
    pub fn retain_partitions(&mut self, keep: impl Fn(i32) -> bool) {
        let in_kept = |k: &Vec<u8>| {
            k.get(..4)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .is_some_and(|b| keep(u32::from_be_bytes(b) as i32))
        };
        self.erase.retain(in_kept);
        for m in self.cfs.values_mut() {
            m.retain(|k, _| in_kept(k));
        }
    }

    /// Number of pending writes.
    pub fn len(&self) -> usize {
        self.cfs.values().map(BTreeMap::len).sum()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.cfs.values().all(BTreeMap::is_empty)
    }

    /// Entries in (cf, key) order.
    pub fn iter(&self) -> impl Iterator<Item = (Cf, &[u8], Option<&[u8]>)> {
        self.cfs.iter().flat_map(|(cf, m)| {
            m.iter()
                .map(move |(k, v)| (*cf, k.as_slice(), v.as_deref()))
        })
    }

    /// The pending write of one key: `Some(None)` is a pending delete.
    pub fn lookup(&self, cf: Cf, key: &[u8]) -> Option<Option<&[u8]>> {
        self.cfs.get(&cf)?.get(key).map(|v| v.as_deref())
    }

    /// Pending writes of one column family under a prefix, in key order.
    pub fn range<'a>(
        &'a self,
        cf: Cf,
        prefix: &'a [u8],
    ) -> impl Iterator<Item = (&'a [u8], Option<&'a [u8]>)> + 'a {
        self.cfs
            .get(&cf)
            .into_iter()
            .flat_map(move |m| m.range::<[u8], _>((Bound::Included(prefix), Bound::Unbounded)))
            .take_while(move |(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.as_slice(), v.as_deref()))
    }

    /// Moves every entry of `other` into `self` (later writes win), merging the two sorted
    /// maps in one pass (`BTreeMap::append`: linear in both sizes, against a search per entry
    /// of inserting them one by one). Meant for sets of similar size (the groups of one batch).
    pub fn extend(&mut self, other: WriteSet) {
        for (cf, mut m) in other.cfs {
            self.cfs.entry(cf).or_default().append(&mut m);
        }
        self.erase.extend(other.erase);
    }

    /// The pending writes of one column family, in key order.
    pub fn family(&self, cf: Cf) -> impl Iterator<Item = (&[u8], Option<&[u8]>)> {
        self.cfs
            .get(&cf)
            .into_iter()
            .flat_map(|m| m.iter().map(|(k, v)| (k.as_slice(), v.as_deref())))
    }
}

/// A store seen through pending writes: what a batch decides against before it is durable.
#[derive(Debug)]
pub struct Overlay<'a, S: ?Sized> {
    base: &'a S,
    pending: WriteSet,
}

impl<'a, S: StateRead + ?Sized> Overlay<'a, S> {
    /// An empty overlay over `base`.
    pub fn new(base: &'a S) -> Self {
        Self {
            base,
            pending: WriteSet::default(),
        }
    }

    /// An overlay over `base` with `pending` writes already in it.
    pub fn with_writes(base: &'a S, pending: WriteSet) -> Self {
        Self { base, pending }
    }

    /// The pending writes.
    pub fn pending(&self) -> &WriteSet {
        &self.pending
    }

    /// Adds writes.
    pub fn pending_mut(&mut self) -> &mut WriteSet {
        &mut self.pending
    }

    /// The pending writes, consuming the overlay.
    pub fn into_writes(self) -> WriteSet {
        self.pending
    }
}

/// Reads through `top` (pending writes) to `base`.
fn read_through<S: StateRead + ?Sized>(
    base: &S,
    top: &WriteSet,
    cf: Cf,
    key: &[u8],
) -> Result<Option<Vec<u8>>, StateError> {
    match top.lookup(cf, key) {
        Some(v) => Ok(v.map(<[u8]>::to_vec)),
        None => base.get(cf, key),
    }
}

/// A prefix scan of `base` with `top`'s pending writes applied.
fn scan_through<S: StateRead + ?Sized>(
    base: &S,
    top: &WriteSet,
    cf: Cf,
    prefix: &[u8],
    limit: usize,
) -> Result<Entries, StateError> {
    let pending: Vec<(&[u8], Option<&[u8]>)> = top.range(cf, prefix).collect();
    // Deletes may hide base entries: read enough of the base to still fill `limit`.
    let below = base.scan(cf, prefix, limit.saturating_add(pending.len()))?;
    let mut merged: BTreeMap<Vec<u8>, Vec<u8>> = below.into_iter().collect();
    for (k, v) in pending {
        match v {
            Some(v) => merged.insert(k.to_vec(), v.to_vec()),
            None => merged.remove(k),
        };
    }
    Ok(merged.into_iter().take(limit).collect())
}

impl<S: StateRead + ?Sized> StateRead for Overlay<'_, S> {
    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>, StateError> {
        read_through(self.base, &self.pending, cf, key)
    }

    fn scan(&self, cf: Cf, prefix: &[u8], limit: usize) -> Result<Entries, StateError> {
        scan_through(self.base, &self.pending, cf, prefix, limit)
    }
}

/// A store seen through writes that are not durable yet but must be visible: the batch in
/// flight while the next one is decided.
#[derive(Debug)]
pub struct Layered<'a, S: ?Sized> {
    base: &'a S,
    top: &'a WriteSet,
}

impl<'a, S: StateRead + ?Sized> Layered<'a, S> {
    /// `base` with `top` on it.
    pub fn new(base: &'a S, top: &'a WriteSet) -> Self {
        Self { base, top }
    }
}

impl<S: StateRead + ?Sized> StateRead for Layered<'_, S> {
    fn get(&self, cf: Cf, key: &[u8]) -> Result<Option<Vec<u8>>, StateError> {
        read_through(self.base, self.top, cf, key)
    }

    fn scan(&self, cf: Cf, prefix: &[u8], limit: usize) -> Result<Entries, StateError> {
        scan_through(self.base, self.top, cf, prefix, limit)
    }
}
