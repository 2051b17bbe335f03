//! Erasure: one home for what makes a purge's bytes go from every copy kledger keeps
//! (`docs/privacy.md`) — the stores' erasure runs and their timer ([`Erasures`], on every
//! RocksDB store through `ErasingDb`), the vector indexes' timer ([`ErasureSchedule`]), and the
//! rules of a purge receipt: what "erased" means for each copy ([`copies`]). The keys topic's
//! tombstones are the processor's (`kledger_pipeline::apply::keywatch`), queued in state's
//! `shred` column family by the fold.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rocksdb::{BottommostLevelCompaction, CompactOptions, DB, FlushOptions};

use crate::StateError;

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
/// between wait for the next run, which the next write or [`crate::RocksStore::erase_due`] makes.
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

/// When an erasure that is not a store's runs (a vector index's): due once a purge deleted what
/// it erases, then at most once per [`ERASE_INTERVAL`] (as the stores' erasures), or at once
/// when asked. Each holder keeps its own: a rebuilt vector generation and the live one do not
/// clear each other's.
#[derive(Debug, Default)]
pub struct ErasureSchedule {
    due: AtomicBool,
    last: Mutex<Option<std::time::Instant>>,
}

impl ErasureSchedule {
    /// A purge deleted something: its erasure is due.
    pub fn mark_due(&self) {
        self.due.store(true, Ordering::Relaxed);
    }

    /// Whether deleted data waits for the erasure.
    pub fn due(&self) -> bool {
        self.due.load(Ordering::Relaxed)
    }

    /// Runs `erase` if it is due and the interval has passed since the last run (or at once
    /// with `now`); whether it ran. A failed run stays due.
    pub fn run<E>(&self, now: bool, erase: impl FnOnce() -> Result<(), E>) -> Result<bool, E> {
        if !self.due.load(Ordering::Relaxed) {
            return Ok(false);
        }
        let mut last = self
            .last
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !now && last.is_some_and(|t| t.elapsed() < ERASE_INTERVAL) {
            return Ok(false);
        }
        *last = Some(std::time::Instant::now());
        self.due.store(false, Ordering::Relaxed);
        if let Err(e) = erase() {
            self.due.store(true, Ordering::Relaxed);
            return Err(e);
        }
        Ok(true)
    }
}

/// Where a purge stands in one copy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyState {
    /// The copy holds none of the purged bytes.
    Erased,
    /// It still may.
    Pending,
    /// This deployment keeps no such copy.
    NotKept,
    /// Another process holds it.
    NotObserved,
}

impl CopyState {
    /// Its name in a purge receipt.
    pub fn as_str(self) -> &'static str {
        match self {
            CopyState::Erased => "erased",
            CopyState::Pending => "pending",
            CopyState::NotKept => "not_kept",
            CopyState::NotObserved => "not_observed",
        }
    }

    fn of(done: bool) -> Self {
        if done {
            CopyState::Erased
        } else {
            CopyState::Pending
        }
    }
}

/// One copy in a purge receipt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyReport {
    /// Which copy: `ledger`, `keys_topic`, `views`, `views_topic`, `sources`, `vectors`,
    /// `intents_topic`.
    pub copy: &'static str,
    pub state: CopyState,
    /// When a copy erased by a time bound is erased at the latest (ms).
    pub by: Option<i64>,
}

/// What a process sees of one purge, copy by copy (a receipt's inputs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// The view store folded every commit of the purge.
    pub folded: bool,
    /// The purge's record time (ms).
    pub recorded_at: i64,
    /// The processor's store holds no erasure of the account waiting (`true` where the
    /// processor runs elsewhere: its commits are folded, which is what can be seen).
    pub ledger_erased: bool,
    /// No destroyed key of the account waits for its tombstone (`true` where the processor
    /// runs elsewhere).
    pub tombstones_written: bool,
    /// The account's View without the rows is published.
    pub view_published: bool,
    /// The view store's erasure of the account ran.
    pub views_erased: bool,
    /// The vector copy: `None` when vectors are off; `Some(None)` when another process holds
    /// the index; else whether the sink applied the purge and its erasures ran.
    pub vectors: Option<Option<bool>>,
    /// The sources store's copy: `None` when the sources sink is off; `Some(None)` when this
    /// process has no sources store; else whether it folded every commit of the purge and its
    /// erasure of the account ran.
    pub sources: Option<Option<bool>>,
    /// How long after a record's time the broker has compacted or deleted it at the latest
    /// (ms): the topics' compaction or retention bound and the broker's slack.
    pub compaction_ms: i64,
    /// The intents topic's retention bound, slack included (ms).
    pub intents_retention_ms: i64,
}

/// The receipt's copies of a purge `seen` at `now` (ms), and whether every one has passed it
/// (erased, or not kept). Topics are erased by time: their bound after the purge's record
/// time, once what they must hold first is written.
pub fn copies(seen: &Seen, now: i64) -> (Vec<CopyReport>, bool) {
    let here = |copy, done| CopyReport {
        copy,
        state: CopyState::of(done),
        by: None,
    };
    let by_time = |copy, ready: bool, by: i64| CopyReport {
        copy,
        state: CopyState::of(ready && now >= by),
        by: Some(by),
    };
    let compacted = seen.recorded_at.saturating_add(seen.compaction_ms);
    let vectors = match seen.vectors {
        None => CopyReport {
            copy: "vectors",
            state: CopyState::NotKept,
            by: None,
        },
        Some(None) => CopyReport {
            copy: "vectors",
            state: CopyState::NotObserved,
            by: None,
        },
        Some(Some(done)) => here("vectors", seen.folded && done),
    };
    let sources = match seen.sources {
        None => CopyReport {
            copy: "sources",
            state: CopyState::NotKept,
            by: None,
        },
        Some(None) => CopyReport {
            copy: "sources",
            state: CopyState::NotObserved,
            by: None,
        },
        Some(Some(done)) => here("sources", seen.folded && done),
    };
    let copies = vec![
        here("ledger", seen.folded && seen.ledger_erased),
        by_time(
            "keys_topic",
            seen.folded && seen.tombstones_written,
            compacted,
        ),
        here(
            "views",
            seen.folded && seen.view_published && seen.views_erased,
        ),
        by_time("views_topic", seen.folded && seen.view_published, compacted),
        sources,
        vectors,
        by_time(
            "intents_topic",
            true,
            seen.recorded_at.saturating_add(seen.intents_retention_ms),
        ),
    ];
    let complete = copies
        .iter()
        .all(|c| matches!(c.state, CopyState::Erased | CopyState::NotKept));
    (copies, complete)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen() -> Seen {
        Seen {
            folded: true,
            recorded_at: 1_000,
            ledger_erased: true,
            tombstones_written: true,
            view_published: true,
            views_erased: true,
            vectors: Some(Some(true)),
            sources: Some(Some(true)),
            compaction_ms: 100,
            intents_retention_ms: 5_000,
        }
    }

    fn states(seen: &Seen, now: i64) -> Vec<(&'static str, &'static str)> {
        copies(seen, now)
            .0
            .iter()
            .map(|c| (c.copy, c.state.as_str()))
            .collect()
    }

    #[test]
    fn topics_are_erased_by_their_bound_after_what_they_must_hold_first() {
        let s = seen();
        assert_eq!(
            states(&s, 1_099),
            [
                ("ledger", "erased"),
                ("keys_topic", "pending"),
                ("views", "erased"),
                ("views_topic", "pending"),
                ("sources", "erased"),
                ("vectors", "erased"),
                ("intents_topic", "pending"),
            ]
        );
        assert!(!copies(&s, 1_100).1, "the intents topic keeps the text");
        assert_eq!(states(&s, 1_100)[1], ("keys_topic", "erased"));
        assert!(copies(&s, 6_000).1);
        // A tombstone not yet written holds the keys topic whatever the time.
        let s = Seen {
            tombstones_written: false,
            ..seen()
        };
        assert_eq!(states(&s, i64::MAX)[1], ("keys_topic", "pending"));
        assert!(!copies(&s, i64::MAX).1);
    }

    #[test]
    fn nothing_is_erased_before_the_purge_is_folded_and_vectors_off_is_not_kept() {
        let s = Seen {
            folded: false,
            vectors: None,
            ..seen()
        };
        let got = states(&s, i64::MAX);
        assert!(got[..5].iter().all(|(_, st)| *st == "pending"), "{got:?}");
        assert_eq!(got[5], ("vectors", "not_kept"));
        let s = Seen {
            vectors: None,
            ..seen()
        };
        assert!(copies(&s, i64::MAX).1, "not kept counts as passed");
        let s = Seen {
            vectors: Some(None),
            ..seen()
        };
        assert_eq!(states(&s, i64::MAX)[5], ("vectors", "not_observed"));
        // The sources store alike: off is passed, another process's is not known.
        let off = Seen {
            sources: None,
            ..seen()
        };
        assert_eq!(states(&off, i64::MAX)[4], ("sources", "not_kept"));
        assert!(copies(&off, i64::MAX).1);
        let elsewhere = Seen {
            sources: Some(None),
            ..seen()
        };
        assert_eq!(states(&elsewhere, i64::MAX)[4], ("sources", "not_observed"));
        assert!(!copies(&elsewhere, i64::MAX).1);
        assert!(
            !copies(&s, i64::MAX).1,
            "another process's copy is not known to be erased"
        );
    }

    #[test]
    fn a_failed_scheduled_erasure_stays_due() {
        let s = ErasureSchedule::default();
        assert_eq!(s.run(true, || Ok::<_, ()>(())), Ok(false), "nothing due");
        s.mark_due();
        assert_eq!(s.run(true, || Err("disk")), Err("disk"));
        assert!(s.due());
        assert_eq!(s.run(true, || Ok::<_, ()>(())), Ok(true));
        assert!(!s.due());
        s.mark_due();
        assert_eq!(
            s.run(false, || Ok::<_, ()>(())),
            Ok(false),
            "the interval holds it"
        );
        assert_eq!(s.run(true, || Ok::<_, ()>(())), Ok(true));
    }
}
