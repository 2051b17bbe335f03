//! The view store: the read side's fold of the outbox, in its own RocksDB.
//!
//! Column families (every key starts with the account, 2-byte length + bytes):
//! - `rows`: account, memory_id → the row as it stands (Avro `Row`).
//! - `history`: account, memory_id, revision → every version of the row. A purge erases the
//!   versions before the tombstone: privacy deletion outranks history.
//! - `timeline`: account, entity, valid_from, source_id, memory_id → ∅. The entity is `user`
//!   for primary-user rows and the subject's entity id otherwise, so a timeline read is one
//!   prefix scan already in (time, source, id) order.
//! - `accounts`: account → last commit_seq, generation and record time folded.
//! - `meta`: outbox partition → next offset to read. Written in the same batch as the rows it
//!   produced, so the store and its position never disagree.
//! - `pending`: account → ∅ for accounts whose rendered View is not yet published; cleared
//!   once the sink has delivered it, so a crash between the two never loses a View.
//! - `purges`: account, action_id → the purge's last commit folded ([`PurgeMark`]): what a
//!   purge receipt reports.
//! - `commits`: account, commit_seq → the commit's record time: when each version in `history`
//!   was recorded (a version keeps its row's first `recorded_at`; reads at a record time,
//!   `known_at`, need the time of the commit that wrote it).
//! - `sources` (the sources lane only): account, source, person id, start, memory_id → ∅ for
//!   every current source row and each person it joins (a people document: its own id, start
//!   0; every other document also under `*`), so a source's entries about one person, or all
//!   of them, are one prefix scan in time order, and an account's people are one scan of
//!   `people`.
//! - `keys`, `keys_next`: the data keys that open sealed rows (rules v4; [`crate::keycache`]).
//!   Rows are stored sealed, as the outbox holds them; reads open them with these keys, and a
//!   folded purge destroys the keys it names.
//!
//! A store folds one [`Lane`] of the outbox: the ledger's rows (the view store proper), or the
//! source documents' (the sources store, a projection of its own, so a source that lags behind
//! is told apart from the ledger). Every commit moves a lane's account mark, whatever rows it
//! holds.
//!
//! Folding is idempotent: a commit at or below the account's folded seq is skipped (the
//! outbox may hold a commit twice in idempotent mode); a commit past seq + 1 is a gap and an
//! error, because a view built over a gap would be silently wrong.

use std::collections::BTreeMap;
use std::path::Path;

use kledger_schemas::avro::{AvroCodec, Reader};
use kledger_schemas::{Change, Commit, Row, SourceKind, Status, SubjectScope};
use rocksdb::{IteratorMode, WriteBatch};
use sha2::{Digest, Sha256};

use crate::StateError;
use crate::keycache::{self, KeyCache, KeyRecord, KeyState};
use crate::progress::{Checkpoint, decode_next, encode_next, partition_key};
use crate::rocks::{ErasingDb, OpenAs, Tuning, open_db};
use crate::store::Visit;

/// Default bound on the view store's memtables, all column families together.
pub const MEMTABLE_BYTES_DEFAULT: usize = 32 << 20;

/// Versions of one row a read at a record time looks at, at most.
pub const ROW_VERSIONS_MAX: usize = 10_000;
/// The timeline entity of primary-user rows.
pub const USER_ENTITY: &str = "user";

const CFS: [&str; 13] = [
    "rows",
    "history",
    "timeline",
    "accounts",
    "meta",
    "pending",
    "keys",
    "keys_next",
    "purges",
    "commits",
    "sources",
    "expiry",
    "slots",
];

/// The `meta` key that says the expiry index holds every row (a store from before it is
/// indexed once when opened).
const EXPIRY_INDEXED: &[u8] = b"expiry_indexed_v1";
/// The `meta` key that says the slot index holds every active row (as [`EXPIRY_INDEXED`];
/// `slots_indexed_v1`, a store whose index also held superseded and closed rows, is indexed
/// again).
const SLOTS_INDEXED: &[u8] = b"slots_indexed_v2";

/// The `sources` entries of every conversation, event or span, whoever it joins: `*` is no
/// person id (ids are identifiers).
pub const ALL_PEOPLE: &str = "*";

/// Which rows of the outbox a store folds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Lane {
    /// The ledger's own rows (facts, documents, triggers): the view store.
    #[default]
    Ledger,
    /// Source documents' rows (people, conversations, calendar, screen): the sources store.
    Sources,
}

impl Lane {
    /// Whether the lane folds `row`.
    pub fn admits(self, row: &Row) -> bool {
        let source = SourceKind::of(row.kind).is_some();
        match self {
            Lane::Ledger => !source,
            Lane::Sources => source,
        }
    }
}

/// The `sources` key prefix of `source`'s entries about `person_id` in `account`.
fn source_prefix(account: &str, source: SourceKind, person_id: &str) -> Vec<u8> {
    let mut k = account_prefix(account);
    push_str(&mut k, source.as_str());
    push_str(&mut k, person_id);
    k
}

/// The `sources` keys of a source row: one per person it joins (a people document: itself).
fn source_keys(account: &str, row: &Row) -> Vec<Vec<u8>> {
    let (Some(source), Some(rec)) = (SourceKind::of(row.kind), row.record.as_ref()) else {
        return Vec::new();
    };
    let (people, start): (Vec<&str>, i64) = match source {
        SourceKind::People => (vec![rec.record_id.as_str()], 0),
        // Under each person it joins, and under `*` (every document of the source).
        _ => (
            rec.person_ids
                .iter()
                .map(String::as_str)
                .chain([ALL_PEOPLE])
                .collect(),
            row.valid_from,
        ),
    };
    people
        .into_iter()
        .map(|person| {
            let mut k = source_prefix(account, source, person);
            k.extend_from_slice(&time_key(start));
            k.extend_from_slice(row.memory_id.as_bytes());
            k
        })
        .collect()
}

/// Column families left out of the digest (positions, the publish queue, and the key cache,
/// which holds whatever the keys topic held when it was read).
const NOT_DIGESTED: [&str; 4] = ["meta", "pending", "keys", "keys_next"];

/// What the store knows of an account.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AccountMark {
    /// Last commit folded (0: none).
    pub commit_seq: i64,
    /// Account generation after it.
    pub generation: i64,
    /// Its record time (ms).
    pub as_of: i64,
}

/// What the view store folded of one purge action (its commits, when split).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PurgeMark {
    /// The last commit of the action folded.
    pub commit_seq: i64,
    /// Its record time (ms).
    pub recorded_at: i64,
    /// Rows tombstoned so far.
    pub rows: u64,
    /// Every commit of the action is folded (the last one does not continue).
    pub complete: bool,
    /// Of the rows, those of each source ([`SOURCE_ORDER`]; the sources store's lane only).
    pub by_source: [u64; 5],
}

/// The sources a purge mark counts rows of, in order.
pub const SOURCE_ORDER: [SourceKind; 5] = SourceKind::ALL;

fn purge_key(account: &str, action_id: &str) -> Vec<u8> {
    let mut k = account_prefix(account);
    k.extend_from_slice(action_id.as_bytes());
    k
}

fn purge_value(m: &PurgeMark) -> Vec<u8> {
    let mut v = Vec::with_capacity(57);
    v.extend_from_slice(&m.commit_seq.to_be_bytes());
    v.extend_from_slice(&m.recorded_at.to_be_bytes());
    v.extend_from_slice(&m.rows.to_be_bytes());
    v.push(u8::from(m.complete));
    // The ledger's lane counts no source rows: its marks stay as they were.
    if m.by_source != [0; 5] {
        for n in m.by_source {
            v.extend_from_slice(&n.to_be_bytes());
        }
    }
    v
}

fn parse_purge(v: &[u8]) -> Result<PurgeMark, StateError> {
    // Marks written before episodes count four sources; later ones five.
    let mut by_source = [0u64; 5];
    let counted = v.len().saturating_sub(25) / 8;
    for (i, n) in by_source.iter_mut().enumerate().take(counted) {
        *n = i64_at(v, 25 + 8 * i)? as u64;
    }
    Ok(PurgeMark {
        commit_seq: i64_at(v, 0)?,
        recorded_at: i64_at(v, 8)?,
        rows: i64_at(v, 16)? as u64,
        complete: v.get(24).is_some_and(|b| *b == 1),
        by_source,
    })
}

/// What folding a batch did.
#[derive(Default)]
pub struct ViewBatch {
    /// Purge marks written by this batch (so split purges in one batch add up).
    purges: BTreeMap<Vec<u8>, PurgeMark>,
    batch: WriteBatch,
    marks: BTreeMap<String, AccountMark>,
    /// The batch's read progress (applied on write, never backwards).
    progress: Checkpoint,
    /// Commits folded.
    pub folded: u64,
    /// Commits skipped as already folded.
    pub skipped: u64,
    /// Accounts (key prefixes) a folded purge rewrote: their older values are erased from
    /// the store's files when the batch is written.
    erase: std::collections::BTreeSet<Vec<u8>>,
}

impl std::fmt::Debug for ViewBatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ViewBatch")
            .field("writes", &self.batch.len())
            .field("accounts", &self.marks.len())
            .field("folded", &self.folded)
            .field("skipped", &self.skipped)
            .finish()
    }
}

impl ViewBatch {
    /// Accounts changed by this batch, with their new marks, in account order.
    pub fn touched(&self) -> &BTreeMap<String, AccountMark> {
        &self.marks
    }
}

fn account_prefix(account: &str) -> Vec<u8> {
    let a = account.as_bytes();
    let mut k = Vec::with_capacity(2 + a.len() + 40);
    k.extend_from_slice(&(a.len().min(u16::MAX as usize) as u16).to_be_bytes());
    k.extend_from_slice(a);
    k
}

fn push_str(k: &mut Vec<u8>, s: &str) {
    k.extend_from_slice(&(s.len().min(u16::MAX as usize) as u16).to_be_bytes());
    k.extend_from_slice(s.as_bytes());
}

/// Signed time as an order-preserving unsigned key part.
fn time_key(t: i64) -> [u8; 8] {
    ((t as u64) ^ (1 << 63)).to_be_bytes()
}

/// An active row's entry in the expiry index: its `expires_at`, account and memory id (ids
/// only: no content).
fn expiry_key(account: &str, row: &Row) -> Option<Vec<u8>> {
    let t = row.expires_at?;
    let mut k = time_key(t).to_vec();
    k.extend_from_slice(&account_prefix(account));
    push_str(&mut k, &row.memory_id);
    Some(k)
}

fn row_key(account: &str, memory_id: &str) -> Vec<u8> {
    let mut k = account_prefix(account);
    push_str(&mut k, memory_id);
    k
}

fn commit_key(account: &str, commit_seq: i64) -> Vec<u8> {
    let mut k = account_prefix(account);
    k.extend_from_slice(&commit_seq.to_be_bytes());
    k
}

fn history_key(account: &str, memory_id: &str, revision: i64) -> Vec<u8> {
    let mut k = row_key(account, memory_id);
    k.extend_from_slice(&time_key(revision));
    k
}

/// The timeline entity a row is filed under, if any.
pub fn entity_of(row: &Row) -> Option<&str> {
    match (&row.subject.scope, &row.subject.entity_id) {
        (_, Some(e)) => Some(e.as_str()),
        (SubjectScope::PrimaryUser, None) => Some(USER_ENTITY),
        _ => None,
    }
}

/// The prefix of one entity's timeline keys.
fn timeline_prefix(account: &str, entity: &str) -> Vec<u8> {
    let mut k = account_prefix(account);
    push_str(&mut k, entity);
    k
}

fn timeline_key(account: &str, row: &Row) -> Option<Vec<u8>> {
    // Source rows have their own entries (`sources`), not the ledger's timeline.
    if SourceKind::of(row.kind).is_some() {
        return None;
    }
    let mut k = timeline_prefix(account, entity_of(row)?);
    k.extend_from_slice(&time_key(row.valid_from));
    push_str(&mut k, &row.source.source_id);
    k.extend_from_slice(row.memory_id.as_bytes());
    Some(k)
}

/// The prefix of the slot index's keys of the rows that share `row`'s subject and slot (its
/// timeline entity, scope and slot), if it has a slot and an entity.
fn slot_prefix(account: &str, row: &Row) -> Option<Vec<u8>> {
    if SourceKind::of(row.kind).is_some() {
        return None;
    }
    let slot = row.slot.as_deref()?;
    let mut k = timeline_prefix(account, entity_of(row)?);
    push_str(&mut k, row.subject.scope.as_str());
    push_str(&mut k, slot);
    Some(k)
}

/// A row's entry in the slot index (ids, scope and slot names only: no content): what lets a
/// read find the rows that share its subject and slot without reading its entity's timeline.
fn slot_key(account: &str, row: &Row) -> Option<Vec<u8>> {
    let mut k = slot_prefix(account, row)?;
    k.extend_from_slice(row.memory_id.as_bytes());
    Some(k)
}

fn encode_row(row: &Row) -> Vec<u8> {
    let mut v = Vec::with_capacity(512);
    row.encode(&mut v);
    v
}

/// The account a key starting with [`account_prefix`] names.
fn account_of_row_key(k: &[u8]) -> Result<String, StateError> {
    let corrupt = || StateError::Corrupt("account key".into());
    let n = u16::from_be_bytes(
        k.get(..2)
            .ok_or_else(corrupt)?
            .try_into()
            .map_err(|_| corrupt())?,
    ) as usize;
    let a = k.get(2..2 + n).ok_or_else(corrupt)?;
    String::from_utf8(a.to_vec()).map_err(|_| corrupt())
}

/// The id of the data key that sealed `row`'s content (`None`: not sealed, or a tombstone).
fn sealed_key_id(row: &Row) -> Option<&str> {
    row.sealed
        .as_ref()
        .filter(|s| !s.ciphertext.0.is_empty())
        .map(|s| s.key_id.as_str())
}

fn decode_row(v: &[u8]) -> Result<Row, StateError> {
    let mut r = Reader::new(v);
    let row = Row::decode(&mut r).map_err(|e| StateError::Corrupt(format!("view row: {e}")))?;
    r.finish()
        .map_err(|e| StateError::Corrupt(format!("view row: {e}")))?;
    Ok(row)
}

fn mark_value(m: &AccountMark) -> Vec<u8> {
    let mut v = Vec::with_capacity(24);
    v.extend_from_slice(&m.commit_seq.to_be_bytes());
    v.extend_from_slice(&m.generation.to_be_bytes());
    v.extend_from_slice(&m.as_of.to_be_bytes());
    v
}

fn i64_at(v: &[u8], at: usize) -> Result<i64, StateError> {
    let b: [u8; 8] = v
        .get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .ok_or_else(|| StateError::Corrupt("short view value".into()))?;
    Ok(i64::from_be_bytes(b))
}

fn parse_mark(v: &[u8]) -> Result<AccountMark, StateError> {
    Ok(AccountMark {
        commit_seq: i64_at(v, 0)?,
        generation: i64_at(v, 8)?,
        as_of: i64_at(v, 16)?,
    })
}

/// The view store.
#[derive(Debug)]
pub struct ViewStore {
    db: ErasingDb,
    lane: Lane,
}

impl ViewStore {
    /// Opens (or creates) the store at `path` with a block cache of `cache_bytes`.
    pub fn open(path: &Path, cache_bytes: usize) -> Result<Self, StateError> {
        Self::open_bounded(path, cache_bytes, MEMTABLE_BYTES_DEFAULT)
    }

    /// [`ViewStore::open`] with the memtables of every column family bounded by
    /// `memtable_bytes` together (RocksDB flushes when they reach it).
    pub fn open_bounded(
        path: &Path,
        cache_bytes: usize,
        memtable_bytes: usize,
    ) -> Result<Self, StateError> {
        let tuning = Self::tuning(cache_bytes, memtable_bytes, 256);
        let db = open_db(path, &CFS, &tuning, OpenAs::Primary)?;
        let store = Self {
            db: ErasingDb::new(db)?,
            lane: Lane::Ledger,
        };
        store.index_earlier_rows()?;
        Ok(store)
    }

    /// Indexes the rows of a store written before an index was (the expiry index, the slot
    /// index): once, a scan of the rows, then marked done.
    fn index_earlier_rows(&self) -> Result<(), StateError> {
        let meta = self.cf("meta")?;
        let expiry_done = self.db.get_cf(meta, EXPIRY_INDEXED)?.is_some();
        let slots_done = self.db.get_cf(meta, SLOTS_INDEXED)?.is_some();
        if expiry_done && slots_done {
            return Ok(());
        }
        let (rows, expiry, slots) = (self.cf("rows")?, self.cf("expiry")?, self.cf("slots")?);
        let mut b = WriteBatch::default();
        if !slots_done {
            // Whatever an earlier rule left (every version but tombstones, under v1) goes: a
            // key starts with its account's length, below 0xFFFF.
            b.delete_range_cf(slots, [].as_slice(), [0xFF; 3].as_slice());
            b.delete_cf(meta, b"slots_indexed_v1");
        }
        let (mut expiring, mut slotted) = (0u64, 0u64);
        for item in self.db.iterator_cf(rows, IteratorMode::Start) {
            let (k, v) = item?;
            let row = decode_row(&v)?;
            let account = account_of_row_key(&k)?;
            if !expiry_done
                && row.status == Status::Active
                && let Some(e) = expiry_key(&account, &row)
            {
                b.put_cf(expiry, e, []);
                expiring += 1;
            }
            if !slots_done
                && row.status == Status::Active
                && let Some(e) = slot_key(&account, &row)
            {
                b.put_cf(slots, e, []);
                slotted += 1;
            }
        }
        b.put_cf(meta, EXPIRY_INDEXED, []);
        b.put_cf(meta, SLOTS_INDEXED, []);
        self.db.write(b)?;
        if expiring + slotted > 0 {
            tracing::info!(
                expiring,
                slotted,
                "indexes built for rows written before them"
            );
        }
        Ok(())
    }

    /// Whether the slot index holds every active row ([`ViewStore::slot_rivals`]; a follower of a
    /// store its owner has not indexed yet: not yet).
    pub fn slots_indexed(&self) -> Result<bool, StateError> {
        Ok(self.db.get_cf(self.cf("meta")?, SLOTS_INDEXED)?.is_some())
    }

    /// The memory ids of at most `limit` rows of `account` that share `row`'s subject and slot
    /// and are active (`row` among them, if it is), in id order: the rows that may contest it.
    /// None when it has no slot or no entity.
    pub fn slot_rivals(
        &self,
        account: &str,
        row: &Row,
        limit: usize,
    ) -> Result<Vec<String>, StateError> {
        Ok(self
            .slot_rivals_each(account, [row], limit)?
            .pop()
            .unwrap_or_default())
    }

    /// [`Self::slot_rivals`] of each of `rows`, in the same order, through one iterator (a
    /// seek each, not an iterator each: making one merges every level's files).
    pub fn slot_rivals_each<'a>(
        &self,
        account: &str,
        rows: impl IntoIterator<Item = &'a Row>,
        limit: usize,
    ) -> Result<Vec<Vec<String>>, StateError> {
        let mut it = self.db.raw_iterator_cf(self.cf("slots")?);
        let mut out = Vec::new();
        for row in rows {
            let mut ids = Vec::new();
            if let Some(prefix) = slot_prefix(account, row) {
                it.seek(&prefix);
                while let Some(k) = it.key().filter(|k| k.starts_with(&prefix)) {
                    if ids.len() >= limit {
                        break;
                    }
                    ids.push(
                        String::from_utf8(k[prefix.len()..].to_vec())
                            .map_err(|_| StateError::Corrupt("slots key".into()))?,
                    );
                    it.next();
                }
                it.status()?;
            }
            out.push(ids);
        }
        Ok(out)
    }

    /// Drops `row`'s expiry entry (a sweeper's cleanup of an entry whose row is not active any
    /// more: the fold removes them itself, this keeps a stale one from holding the head).
    pub fn forget_expiry(&self, account: &str, row: &Row) -> Result<(), StateError> {
        if let Some(k) = expiry_key(account, row) {
            let mut b = WriteBatch::default();
            b.delete_cf(self.cf("expiry")?, k);
            self.db.write(b)?;
        }
        Ok(())
    }

    /// Rows whose `expires_at` is at or before `now`, oldest expiry first, at most `limit`:
    /// `(account, memory_id)`. An entry stays until its row's next version (a purge, a close,
    /// a supersession) is folded, so the caller checks the row.
    pub fn expired(&self, now: i64, limit: usize) -> Result<Vec<(String, String)>, StateError> {
        let mut out = Vec::new();
        let end = time_key(now);
        for item in self.db.iterator_cf(self.cf("expiry")?, IteratorMode::Start) {
            let (k, _) = item?;
            if out.len() >= limit || k.len() < 8 || k[..8] > end[..] {
                break;
            }
            let rest = &k[8..];
            let account = account_of_row_key(rest)?;
            let id_at = 2 + account.len();
            let memory_id = rest
                .get(id_at + 2..)
                .and_then(|b| String::from_utf8(b.to_vec()).ok())
                .ok_or_else(|| StateError::Corrupt("expiry key".into()))?;
            out.push((account, memory_id));
        }
        Ok(out)
    }

    /// Opens the store at `primary` read-only as a RocksDB secondary instance (its own files
    /// under `secondary`), for a process that serves reads while another one writes. It sees
    /// the primary's writes after [`ViewStore::catch_up`].
    pub fn open_secondary(
        primary: &Path,
        secondary: &Path,
        cache_bytes: usize,
    ) -> Result<Self, StateError> {
        // A secondary keeps every file it may read open.
        let tuning = Self::tuning(cache_bytes, MEMTABLE_BYTES_DEFAULT, -1);
        Ok(Self {
            db: ErasingDb::read_only(open_db(
                primary,
                &CFS,
                &tuning,
                OpenAs::Secondary(secondary),
            )?),
            lane: Lane::Ledger,
        })
    }

    /// The store folding `lane` (a store opens as the ledger's).
    pub fn with_lane(mut self, lane: Lane) -> Self {
        self.lane = lane;
        self
    }

    /// The lane it folds.
    pub fn lane(&self) -> Lane {
        self.lane
    }

    /// Brings a secondary instance up to the primary's latest writes (no-op on a primary).
    pub fn catch_up(&self) -> Result<(), StateError> {
        Ok(self.db.try_catch_up_with_primary()?)
    }

    fn tuning(cache_bytes: usize, memtable_bytes: usize, open_files_max: i32) -> Tuning {
        Tuning {
            block_cache_bytes: cache_bytes,
            write_buffer_bytes: (memtable_bytes / 4).clamp(1 << 20, 8 << 20),
            write_buffers_max: 2,
            db_write_buffer_bytes: memtable_bytes,
            open_files_max,
            memtable_blooms: false,
        }
    }

    fn cf(&self, name: &str) -> Result<&rocksdb::ColumnFamily, StateError> {
        self.db
            .cf_handle(name)
            .ok_or_else(|| StateError::Corrupt(format!("column family {name} missing")))
    }

    /// The purges' erasures of overwritten values this store ran.
    pub fn erasures(&self) -> &crate::rocks::Erasures {
        self.db.erasures()
    }

    /// Runs the erasure of purges waiting for it: when [`crate::rocks::ERASE_INTERVAL`] has
    /// passed since the last run, or at once with `now` (a clean stop).
    pub fn erase_due(&self, now: bool) -> Result<(), StateError> {
        self.db.erase(&CFS, std::iter::empty(), now)
    }

    fn purge_by_key(&self, k: &[u8]) -> Result<Option<PurgeMark>, StateError> {
        self.db
            .get_cf(self.cf("purges")?, k)?
            .map(|v| parse_purge(&v))
            .transpose()
    }

    /// What the store folded of purge action `action_id` of `account`, if anything.
    pub fn purge(&self, account: &str, action_id: &str) -> Result<Option<PurgeMark>, StateError> {
        self.purge_by_key(&purge_key(account, action_id))
    }

    /// Every purge folded (account, action id, mark), in key order, at most `limit`.
    pub fn purges(&self, limit: usize) -> Result<Vec<(String, String, PurgeMark)>, StateError> {
        let mut out = Vec::new();
        for item in self
            .db
            .iterator_cf(self.cf("purges")?, IteratorMode::Start)
            .take(limit)
        {
            let (k, v) = item?;
            let n = k
                .get(..2)
                .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
                .ok_or_else(|| StateError::Corrupt("purge key".into()))?;
            let (account, action) = (
                k.get(2..2 + n)
                    .and_then(|a| std::str::from_utf8(a).ok())
                    .ok_or_else(|| StateError::Corrupt("purge key".into()))?,
                std::str::from_utf8(&k[2 + n..])
                    .map_err(|_| StateError::Corrupt("purge key".into()))?,
            );
            out.push((account.to_owned(), action.to_owned(), parse_purge(&v)?));
        }
        Ok(out)
    }

    /// Whether `account`'s rendered View waits to be published.
    pub fn view_pending(&self, account: &str) -> Result<bool, StateError> {
        Ok(self
            .db
            .get_cf(self.cf("pending")?, account.as_bytes())?
            .is_some())
    }

    /// Whether an erasure of `account`'s overwritten values waits for its run.
    pub fn erasure_pending(&self, account: &str) -> bool {
        self.db.erasures().is_pending(&account_prefix(account))
    }

    /// The mark of `account` (default when nothing was folded).
    pub fn mark(&self, account: &str) -> Result<AccountMark, StateError> {
        match self
            .db
            .get_cf(self.cf("accounts")?, account_prefix(account))?
        {
            Some(v) => parse_mark(&v),
            None => Ok(AccountMark::default()),
        }
    }

    /// The next outbox offset to read on `partition` (0 when none was folded).
    pub fn position(&self, partition: i32) -> Result<i64, StateError> {
        match self.db.get_cf(self.cf("meta")?, partition_key(partition))? {
            Some(v) => decode_next(&v),
            None => Ok(0),
        }
    }

    /// Folds `commit` (read at `offset` of outbox `partition`) into `batch`. Long on purpose:
    /// every place a commit reaches (rows, history, timeline, a purge's erasure and keys, the
    /// purge receipt, the account's mark, the pending View) is written in one pass, so none can
    /// drift from the others.
    pub fn fold(
        &self,
        batch: &mut ViewBatch,
        commit: &Commit,
        partition: i32,
        offset: i64,
    ) -> Result<(), StateError> {
        self.advance(batch, partition, offset)?;
        let acct = commit.account_id.as_str();
        let mark = match batch.marks.get(acct) {
            Some(m) => *m,
            None => self.mark(acct)?,
        };
        if commit.commit_seq <= mark.commit_seq {
            batch.skipped += 1;
            return Ok(());
        }
        if commit.commit_seq != mark.commit_seq + 1 {
            return Err(StateError::Gap {
                account: acct.to_owned(),
                head: mark.commit_seq,
                seq: commit.commit_seq,
            });
        }
        let (rows, history, timeline) =
            (self.cf("rows")?, self.cf("history")?, self.cf("timeline")?);
        let sources = self.cf("sources")?;
        let expiry = self.cf("expiry")?;
        let slots = self.cf("slots")?;
        let mut admitted = 0u64;
        let mut by_source = [0u64; 5];
        // The key cache holds every data key of the outbox, whichever lane its row is in: a
        // purged row's key goes from both stores (and their files), its row from its lane's.
        for row in commit
            .ops
            .iter()
            .map(|op| &op.row)
            .filter(|r| r.status == Status::Tombstoned && !self.lane.admits(r))
        {
            if let Some(s) = row.sealed.as_ref().filter(|s| !s.key_id.is_empty()) {
                batch.erase.insert(account_prefix(acct));
                keycache::destroy(&self.db, &mut batch.batch, acct, &s.key_id)?;
            }
        }
        for op in commit.ops.iter().filter(|op| self.lane.admits(&op.row)) {
            admitted += 1;
            if let Some(i) =
                SourceKind::of(op.row.kind).and_then(|k| SOURCE_ORDER.iter().position(|s| *s == k))
            {
                by_source[i] += 1;
            }
            let row = &op.row;
            // A source row's entries: while it is current, under each person it joins.
            for k in source_keys(acct, row) {
                if op.change == Change::Created && row.status == Status::Active {
                    batch.batch.put_cf(sources, k, []);
                } else {
                    batch.batch.delete_cf(sources, k);
                }
            }
            // An active row with an expiry is in the expiry index; any other version is not.
            if let Some(k) = expiry_key(acct, row) {
                if row.status == Status::Active && op.change != Change::Tombstoned {
                    batch.batch.put_cf(expiry, k, []);
                } else {
                    batch.batch.delete_cf(expiry, k);
                }
            }
            let value = encode_row(row);
            batch
                .batch
                .put_cf(rows, row_key(acct, &row.memory_id), &value);
            if op.change == Change::Tombstoned || row.status == Status::Tombstoned {
                // Erase every earlier version and the timeline entry, and leave none of them
                // in the files once the batch is written; the row's data key goes too.
                batch.erase.insert(account_prefix(acct));
                if let Some(s) = row.sealed.as_ref().filter(|s| !s.key_id.is_empty()) {
                    keycache::destroy(&self.db, &mut batch.batch, acct, &s.key_id)?;
                }
                batch.batch.delete_range_cf(
                    history,
                    history_key(acct, &row.memory_id, i64::MIN),
                    history_key(acct, &row.memory_id, row.revision),
                );
                if let Some(k) = timeline_key(acct, row) {
                    batch.batch.delete_cf(timeline, k);
                }
                if let Some(k) = slot_key(acct, row) {
                    batch.batch.delete_cf(slots, k);
                }
            } else {
                if op.change == Change::Created
                    && let Some(k) = timeline_key(acct, row)
                {
                    batch.batch.put_cf(timeline, k, []);
                }
                // An active version is in the slot index, any other is not (the backfill's rule
                // too): only an active row contests. An entry a version moved away from (a new
                // subject or slot) stays: a rival read for nothing, whose own subject and slot
                // decide.
                if let Some(k) = slot_key(acct, row) {
                    if row.status == Status::Active {
                        batch.batch.put_cf(slots, k, []);
                    } else {
                        batch.batch.delete_cf(slots, k);
                    }
                }
            }
            batch.batch.put_cf(
                history,
                history_key(acct, &row.memory_id, row.revision),
                &value,
            );
        }
        if commit.ops.iter().all(|op| op.change == Change::Tombstoned) {
            // A purge's commit (only purges tombstone; an empty one selected nothing).
            let k = purge_key(acct, &commit.action_id);
            let mut m = match batch.purges.get(&k) {
                Some(m) => *m,
                None => self.purge_by_key(&k)?.unwrap_or_default(),
            };
            m.commit_seq = commit.commit_seq;
            m.recorded_at = commit.recorded_at;
            m.rows += admitted;
            for (total, n) in m.by_source.iter_mut().zip(by_source) {
                *total += n;
            }
            m.complete = !commit.continues;
            batch.batch.put_cf(self.cf("purges")?, &k, purge_value(&m));
            batch.purges.insert(k, m);
        }
        let mark = AccountMark {
            commit_seq: commit.commit_seq,
            generation: commit.generation,
            as_of: commit.recorded_at,
        };
        batch.batch.put_cf(
            self.cf("accounts")?,
            account_prefix(acct),
            mark_value(&mark),
        );
        batch.batch.put_cf(
            self.cf("commits")?,
            commit_key(acct, commit.commit_seq),
            commit.recorded_at.to_be_bytes(),
        );
        // Its rendered View is due: the sink publishes it and clears the mark (the ledger's
        // lane: the sources store renders no View).
        if self.lane == Lane::Ledger {
            batch.batch.put_cf(self.cf("pending")?, acct.as_bytes(), []);
        }
        batch.marks.insert(acct.to_owned(), mark);
        batch.folded += 1;
        Ok(())
    }

    /// Moves `partition`'s position past `offset` (a record that is not a commit, e.g. one
    /// that was dead-lettered).
    pub fn advance(
        &self,
        batch: &mut ViewBatch,
        partition: i32,
        offset: i64,
    ) -> Result<(), StateError> {
        batch.progress.read(partition, offset);
        Ok(())
    }

    /// Makes a folded batch durable.
    pub fn write(&self, mut batch: ViewBatch) -> Result<(), StateError> {
        let mut now = Checkpoint::new();
        for (p, _) in batch.progress.iter() {
            now.set_at_least(p, self.position(p)?);
        }
        now.try_apply(&batch.progress)?;
        let meta = self.cf("meta")?;
        for (p, next) in batch.progress.iter() {
            batch
                .batch
                .put_cf(meta, partition_key(p), encode_next(next));
        }
        self.db.write(batch.batch)?;
        self.db
            .erase(&CFS, batch.erase.iter().map(Vec::as_slice), false)?;
        Ok(())
    }

    fn scan_prefix(
        &self,
        cf: &str,
        prefix: &[u8],
        limit: usize,
        f: Visit<'_>,
    ) -> Result<usize, StateError> {
        let mut n = 0;
        let mode = IteratorMode::From(prefix, rocksdb::Direction::Forward);
        for item in self.db.iterator_cf(self.cf(cf)?, mode) {
            let (k, v) = item?;
            if !k.starts_with(prefix) || n >= limit {
                break;
            }
            f(&k[prefix.len()..], &v)?;
            n += 1;
        }
        Ok(n)
    }

    /// Accounts whose View is not yet published, in account order, at most `limit`.
    pub fn pending(&self, limit: usize) -> Result<Vec<String>, StateError> {
        let mut out = Vec::new();
        self.scan_prefix("pending", &[], limit, &mut |k, _| {
            out.push(
                String::from_utf8(k.to_vec())
                    .map_err(|_| StateError::Corrupt("pending key".into()))?,
            );
            Ok(())
        })?;
        Ok(out)
    }

    /// Marks the Views of `accounts` published.
    pub fn published(&self, accounts: &[String]) -> Result<(), StateError> {
        let mut b = WriteBatch::default();
        let cf = self.cf("pending")?;
        for a in accounts {
            b.delete_cf(cf, a.as_bytes());
        }
        self.db.write(b)?;
        Ok(())
    }

    /// The rendered View of `account` as of its last folded commit, within the record budget
    /// `record_bytes_max`.
    pub fn view(
        &self,
        account: &str,
        rows_max: usize,
        record_bytes_max: usize,
    ) -> Result<kledger_schemas::View, StateError> {
        let mark = self.mark(account)?;
        let rows = self.rows(account, rows_max)?;
        Ok(kledger_processors::render::view(
            account,
            mark.generation,
            mark.commit_seq,
            mark.as_of,
            rows.iter(),
            record_bytes_max,
        ))
    }

    /// Opens a stored row (rules v4: its sealed content, with its data key from the store).
    /// `None` when its key is not there: a row whose purge is folded later (its key already
    /// destroyed), which no read shows.
    fn open_row(&self, account: &str, row: Row) -> Result<Option<Row>, StateError> {
        let key = match sealed_key_id(&row) {
            Some(id) => Some(keycache::key(&self.db, account, id)?),
            None => None,
        };
        Self::open_with(account, row, key)
    }

    /// `row` opened with `key`, its data key's state as the store holds it (`None`: the row
    /// is not sealed, or is a tombstone).
    fn open_with(
        account: &str,
        mut row: Row,
        key: Option<KeyState>,
    ) -> Result<Option<Row>, StateError> {
        let Some(key) = key else {
            return Ok(Some(row));
        };
        match key {
            KeyState::Present(key) => {
                kledger_processors::seal::open(account, &mut row, &key).map_err(|e| {
                    StateError::Corrupt(format!("{account}: view row {}: {e}", row.memory_id))
                })?;
                Ok(Some(row))
            }
            KeyState::Destroyed | KeyState::Unknown => Ok(None),
        }
    }

    /// One row as it stands, not opened: its ids, status, times and lineage only (its
    /// content-bearing fields empty under rules v4), whatever keys the store holds.
    pub fn row_unopened(&self, account: &str, memory_id: &str) -> Result<Option<Row>, StateError> {
        self.db
            .get_cf(self.cf("rows")?, row_key(account, memory_id))?
            .map(|v| decode_row(&v))
            .transpose()
    }

    /// One row as it stands (opened).
    pub fn row(&self, account: &str, memory_id: &str) -> Result<Option<Row>, StateError> {
        match self
            .db
            .get_cf(self.cf("rows")?, row_key(account, memory_id))?
        {
            Some(v) => self.open_row(account, decode_row(&v)?),
            None => Ok(None),
        }
    }

    /// Rows `memory_ids` of `account` as they stand (opened), in the same order: one batched
    /// read instead of a point read each (search hydrates its candidates so).
    pub fn rows_of(
        &self,
        account: &str,
        memory_ids: &[&str],
    ) -> Result<Vec<Option<Row>>, StateError> {
        self.open_rows(account, self.rows_unopened(account, memory_ids)?)
    }

    /// `rows` of `account`, read by [`Self::rows_unopened`], opened as [`Self::rows_of`] opens
    /// them (their data keys in one batched read): a reader that can tell from a row's
    /// unsealed fields that it will not answer (its status, times, kind, access) opens only
    /// those that may.
    pub fn open_rows(
        &self,
        account: &str,
        rows: Vec<Option<Row>>,
    ) -> Result<Vec<Option<Row>>, StateError> {
        self.with_keys(account, rows, |row, key| Self::open_with(account, row, key))
    }

    /// `rows` of `account`, read by [`Self::rows_unopened`], left sealed, each `None` where
    /// [`Self::rows_of`] would give none (its data key destroyed: its purge folds later): what a
    /// reader of unsealed fields only (subject, slot, status, times, authority) may count.
    pub fn keyed_rows(
        &self,
        account: &str,
        rows: Vec<Option<Row>>,
    ) -> Result<Vec<Option<Row>>, StateError> {
        self.with_keys(account, rows, |row, key| {
            Ok(match key {
                None | Some(KeyState::Present(_)) => Some(row),
                Some(KeyState::Destroyed | KeyState::Unknown) => None,
            })
        })
    }

    /// `f` of each of `rows` and the state of the data key that sealed it (`None`: not
    /// sealed), the keys read in one batch (a row has its own key).
    fn with_keys(
        &self,
        account: &str,
        rows: Vec<Option<Row>>,
        f: impl Fn(Row, Option<KeyState>) -> Result<Option<Row>, StateError>,
    ) -> Result<Vec<Option<Row>>, StateError> {
        let ids: Vec<&str> = rows.iter().flatten().filter_map(sealed_key_id).collect();
        let mut keys = keycache::keys(&self.db, account, &ids)?.into_iter();
        rows.into_iter()
            .map(|r| match r {
                Some(r) => {
                    let key = match sealed_key_id(&r) {
                        Some(_) => Some(keys.next().ok_or_else(|| {
                            StateError::Corrupt("a batched key read returned too few".into())
                        })?),
                        None => None,
                    };
                    f(r, key)
                }
                None => Ok(None),
            })
            .collect()
    }

    /// Rows `memory_ids` of `account` as they stand, not opened (as [`Self::row_unopened`]),
    /// in the same order, in one batched read.
    pub fn rows_unopened(
        &self,
        account: &str,
        memory_ids: &[&str],
    ) -> Result<Vec<Option<Row>>, StateError> {
        if memory_ids.is_empty() {
            return Ok(Vec::new());
        }
        let keys: Vec<Vec<u8>> = memory_ids.iter().map(|id| row_key(account, id)).collect();
        self.db
            .batched_multi_get_cf(self.cf("rows")?, &keys, false)
            .into_iter()
            .map(|v| v?.map(|v| decode_row(&v)).transpose())
            .collect()
    }

    /// The rows of `account` as they stand (every status, opened), by memory id, at most
    /// `limit`.
    pub fn rows(&self, account: &str, limit: usize) -> Result<Vec<Row>, StateError> {
        let mut out = Vec::new();
        self.scan_prefix("rows", &account_prefix(account), limit, &mut |_, v| {
            out.extend(self.open_row(account, decode_row(v)?)?);
            Ok(())
        })?;
        Ok(out)
    }

    /// The record time of commit `commit_seq` of `account`, if folded here (a store written
    /// before it kept them has none for its older commits).
    pub fn commit_time(&self, account: &str, commit_seq: i64) -> Result<Option<i64>, StateError> {
        match self
            .db
            .get_cf(self.cf("commits")?, commit_key(account, commit_seq))?
        {
            Some(v) => Ok(Some(i64_at(&v, 0)?)),
            None => Ok(None),
        }
    }

    /// When the version `row` of `account` was recorded: its commit's record time, or, in a
    /// store that did not keep it, the row's own (its first version's; `kledger rebuild views`
    /// makes them exact).
    fn version_time(
        &self,
        account: &str,
        row: &Row,
        seen: &mut BTreeMap<i64, i64>,
    ) -> Result<i64, StateError> {
        if let Some(t) = seen.get(&row.commit_seq) {
            return Ok(*t);
        }
        let t = self
            .commit_time(account, row.commit_seq)?
            .unwrap_or(row.recorded_at);
        seen.insert(row.commit_seq, t);
        Ok(t)
    }

    /// The rows of `account` as the ledger had recorded them by `known_at` (ms): of each row, the
    /// latest version written by a commit recorded at or before it (opened), by memory id. At
    /// most `limit` versions are read; the flag says whether the bound cut the read.
    pub fn rows_known_at(
        &self,
        account: &str,
        known_at: i64,
        limit: usize,
    ) -> Result<(Vec<Row>, bool), StateError> {
        let mut out: Vec<Row> = Vec::new();
        let mut seen = BTreeMap::new();
        let read = self.history(account, limit.saturating_add(1), &mut |row| {
            if self.version_time(account, &row, &mut seen)? <= known_at {
                match out.last_mut() {
                    Some(last) if last.memory_id == row.memory_id => *last = row,
                    _ => out.push(row),
                }
            }
            Ok(())
        })?;
        Ok((out, read > limit))
    }

    /// Row `memory_id` of `account` as the ledger had recorded it by `known_at` (ms): its latest
    /// version written by a commit recorded at or before it (opened), if any. At most
    /// [`ROW_VERSIONS_MAX`] versions are read.
    pub fn row_known_at(
        &self,
        account: &str,
        memory_id: &str,
        known_at: i64,
    ) -> Result<Option<Row>, StateError> {
        let mut found = None;
        let mut seen = BTreeMap::new();
        self.scan_prefix(
            "history",
            &row_key(account, memory_id),
            ROW_VERSIONS_MAX,
            &mut |_, v| {
                let row = decode_row(v)?;
                if self.version_time(account, &row, &mut seen)? <= known_at {
                    found = Some(row);
                }
                Ok(())
            },
        )?;
        match found {
            Some(row) => self.open_row(account, row),
            None => Ok(None),
        }
    }

    /// Every version of every row of `account` (opened), by memory id then revision, at most
    /// `limit`.
    pub fn history(
        &self,
        account: &str,
        limit: usize,
        f: &mut dyn FnMut(Row) -> Result<(), StateError>,
    ) -> Result<usize, StateError> {
        self.scan_prefix(
            "history",
            &account_prefix(account),
            limit,
            &mut |_, v| match self.open_row(account, decode_row(v)?)? {
                Some(row) => f(row),
                None => Ok(()),
            },
        )
    }

    /// The memory ids of the newest `limit` entries on `entity`'s timeline, in (valid_from,
    /// source, id) order: the scan starts at the newest end, so a long timeline costs `limit`
    /// reads, not its length.
    pub fn timeline(
        &self,
        account: &str,
        entity: &str,
        limit: usize,
    ) -> Result<Vec<String>, StateError> {
        let prefix = timeline_prefix(account, entity);
        let mut out = self.newest("timeline", &prefix, limit, |k| {
            // time (8) + source (2 + n) + memory id.
            let n = k
                .get(8..10)
                .map(|b| u16::from_be_bytes([b[0], b[1]]) as usize)?;
            k.get(10 + n..)
        })?;
        out.reverse();
        Ok(out)
    }

    /// The memory ids `id_of` reads from the newest `limit` keys under `prefix` of `cf`
    /// (after the prefix; `None`: a corrupt key), newest first: a reverse scan from the end of
    /// the prefix, so a long run of keys costs `limit` reads.
    fn newest(
        &self,
        cf: &str,
        prefix: &[u8],
        limit: usize,
        id_of: impl Fn(&[u8]) -> Option<&[u8]>,
    ) -> Result<Vec<String>, StateError> {
        // Every key under the prefix sorts before it followed by 0xFF bytes longer than any
        // key part.
        let mut upper = prefix.to_vec();
        upper.extend_from_slice(&[0xFF; 16]);
        let mode = IteratorMode::From(&upper, rocksdb::Direction::Reverse);
        let mut out = Vec::new();
        for item in self.db.iterator_cf(self.cf(cf)?, mode) {
            let (k, _) = item?;
            if !k.starts_with(prefix) {
                if k.as_ref() > prefix {
                    // A key past the prefix but under the upper bound: not ours, skip it.
                    continue;
                }
                break;
            }
            if out.len() >= limit {
                break;
            }
            let id = id_of(&k[prefix.len()..])
                .and_then(|b| std::str::from_utf8(b).ok())
                .ok_or_else(|| StateError::Corrupt(format!("{cf} key")))?;
            out.push(id.to_owned());
        }
        Ok(out)
    }

    /// The memory ids of `source`'s current entries about `person_id` in `account`, newest
    /// first, at most `limit` (for people: the person's current document).
    pub fn source_entries(
        &self,
        account: &str,
        source: SourceKind,
        person_id: &str,
        limit: usize,
    ) -> Result<Vec<String>, StateError> {
        let prefix = source_prefix(account, source, person_id);
        // time (8) + memory id.
        self.newest("sources", &prefix, limit, |k| k.get(8..))
    }

    /// The current people documents of `account` as (person id, memory id), in person id
    /// order, at most `limit`.
    pub fn people(&self, account: &str, limit: usize) -> Result<Vec<(String, String)>, StateError> {
        let mut prefix = account_prefix(account);
        push_str(&mut prefix, SourceKind::People.as_str());
        let mut out = Vec::new();
        self.scan_prefix("sources", &prefix, limit, &mut |k, _| {
            let n = k
                .get(..2)
                .map(|b| usize::from(u16::from_be_bytes([b[0], b[1]])))
                .ok_or_else(|| StateError::Corrupt("sources key".into()))?;
            let person = k.get(2..2 + n).and_then(|b| std::str::from_utf8(b).ok());
            let id = k.get(2 + n + 8..).and_then(|b| std::str::from_utf8(b).ok());
            match (person, id) {
                (Some(p), Some(id)) => out.push((p.to_owned(), id.to_owned())),
                _ => return Err(StateError::Corrupt("sources key".into())),
            }
            Ok(())
        })?;
        Ok(out)
    }

    /// SHA-256 over every key and value but the positions, in key order: equal digests mean
    /// equal views.
    pub fn digest(&self) -> Result<String, StateError> {
        let mut h = Sha256::new();
        for (i, cf) in CFS
            .iter()
            .enumerate()
            .filter(|(_, cf)| !NOT_DIGESTED.contains(*cf))
        {
            for item in self.db.iterator_cf(self.cf(cf)?, IteratorMode::Start) {
                let (k, v) = item?;
                h.update([i as u8]);
                h.update((k.len() as u64).to_be_bytes());
                h.update(&k);
                h.update((v.len() as u64).to_be_bytes());
                h.update(&v);
            }
        }
        Ok(kledger_processors::ids::to_hex(&h.finalize()))
    }
}

impl KeyCache for ViewStore {
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
