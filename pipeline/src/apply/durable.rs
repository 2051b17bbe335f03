//! The state writer: a batch's state write (its rows, heads and positions, one RocksDB write
//! batch) runs on a thread of its own, `kledger-state`, while the apply thread hands the next
//! batch to the producer and reads the input after it. The apply thread waits for the write
//! before anything reads state again: before it decides the batch after next, re-syncs a
//! partition or gives partitions up ([`super::Processor::await_durable`]).
//!
//! The next batch is sent before this one's write returns. That is safe because the write
//! starts only once every record of the batch is delivered: the outbox holds the batch,
//! and the outbox is the changelog of state. A write that fails is answered as a failed
//! delivery is: its partitions re-sync (state catches up with the outbox, reading resumes at
//! the committed offset), and the share of those partitions of the batch sent meanwhile is
//! delivered, never made durable on its own, and re-read (answered `duplicate`). Input offsets
//! are committed only after the write, as before.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;
use std::time::Instant;

use kledger_state::{Layered, Overlay, StateStore, WriteSet, keys};

use super::batch::PartDecided;
use kledger_runtime::metrics as m;

/// A batch's state write: its writes and, per partition, its progress.
#[derive(Debug, Default)]
pub(crate) struct Durable {
    /// The batch's writes (of the partitions whose records were all delivered).
    pub writes: WriteSet,
    /// The last outbox offset written per partition.
    pub delivered: BTreeMap<i32, i64>,
    /// The next input offset per partition.
    pub next_offsets: BTreeMap<i32, i64>,
    /// The keys-topic position per partition ([`super::Processor::follow_keys`]).
    pub keys_next: BTreeMap<i32, i64>,
}

/// The shares of a batch whose write is in progress: counted, and their input offsets
/// committed, once it is durable.
#[derive(Debug)]
pub(crate) struct Writing {
    pub parts: BTreeMap<i32, PartDecided>,
    /// The write queues destroyed keys for tombstones (a purge).
    pub queues_shred: bool,
}

/// Makes `d` durable in `store` as one atomic write: the batch's writes, with its progress
/// raised over what state holds (never lowered: a retried batch re-decides intents state
/// already holds).
pub(crate) fn make_durable(store: &dyn StateStore, d: &Durable) -> Result<(), String> {
    let below = Layered::new(store, &d.writes);
    let mut positions = Overlay::new(&below);
    let progress = d
        .delivered
        .iter()
        .map(|(p, last)| (*p, keys::META_OUTBOX_NEXT, last + 1))
        .chain(
            d.next_offsets
                .iter()
                .map(|(p, next)| (*p, keys::META_INPUT_NEXT, *next)),
        )
        .chain(
            d.keys_next
                .iter()
                .map(|(p, next)| (*p, keys::META_KEYS_NEXT, *next)),
        );
    for (p, name, next) in progress {
        kledger_state::raise_next(&mut positions, p, name, next)
            .map_err(|e| format!("reading state: {e}"))?;
    }
    let positions = positions.into_writes();
    store
        .write_all(&[&d.writes, &positions])
        .map_err(|e| format!("writing state: {e}"))
}

/// The state writer's thread and the write in progress (one at most).
#[derive(Debug)]
pub(crate) struct StateWriter {
    jobs: Option<SyncSender<Durable>>,
    done: Receiver<Result<(), String>>,
    thread: Option<JoinHandle<()>>,
    writing: Option<Writing>,
}

impl StateWriter {
    /// Starts the writer's thread over `store`.
    pub(crate) fn new(store: Arc<dyn StateStore>) -> std::io::Result<Self> {
        let (jobs, rx) = sync_channel::<Durable>(1);
        let (tx, done) = sync_channel(1);
        let thread = std::thread::Builder::new()
            .name("kledger-state".into())
            .spawn(move || {
                for d in rx {
                    let t = Instant::now();
                    let result = make_durable(store.as_ref(), &d);
                    metrics::histogram!(m::BATCH_PHASE_SECONDS, "phase" => "state")
                        .record(t.elapsed().as_secs_f64());
                    // The writes are dropped here too, off the apply thread.
                    drop(d);
                    if tx.send(result).is_err() {
                        break;
                    }
                }
            })?;
        Ok(Self {
            jobs: Some(jobs),
            done,
            thread: Some(thread),
            writing: None,
        })
    }

    /// Starts writing `d`; `writing` is returned by [`Self::wait`]. One write at a time: the
    /// caller waits for the write in progress before it starts another.
    pub(crate) fn start(&mut self, d: Durable, writing: Writing) {
        debug_assert!(self.writing.is_none(), "one state write at a time");
        let sent = self.jobs.as_ref().is_some_and(|jobs| jobs.send(d).is_ok());
        self.writing = Some(writing);
        if !sent {
            // No writer (it panicked): `wait` reports it.
            self.jobs = None;
        }
    }

    /// Whether a write is in progress.
    pub(crate) fn busy(&self) -> bool {
        self.writing.is_some()
    }

    /// Whether the write in progress queues destroyed keys for tombstones.
    pub(crate) fn queues_shred(&self) -> bool {
        self.writing.as_ref().is_some_and(|w| w.queues_shred)
    }

    /// Waits for the write in progress, if any: its shares and how it went. An error is the
    /// writer's thread gone (a panic), which nothing can retry.
    pub(crate) fn wait(&mut self) -> anyhow::Result<Option<(Writing, Result<(), String>)>> {
        let Some(writing) = self.writing.take() else {
            return Ok(None);
        };
        match self.jobs.as_ref().map(|_| self.done.recv()) {
            Some(Ok(result)) => Ok(Some((writing, result))),
            _ => Err(anyhow::anyhow!("the state writer's thread stopped")),
        }
    }
}

impl Drop for StateWriter {
    fn drop(&mut self) {
        // Closing the queue ends the thread once the write in progress is done.
        self.jobs = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kledger_state::{Cf, MemoryStore, StateRead, next_offset};

    fn batch(next_input: i64, delivered_last: i64) -> Durable {
        let mut writes = WriteSet::default();
        writes.put(Cf::Rows, keys::partition(3), b"row".to_vec());
        Durable {
            writes,
            delivered: BTreeMap::from([(3, delivered_last)]),
            next_offsets: BTreeMap::from([(3, next_input)]),
            keys_next: BTreeMap::from([(3, 7)]),
        }
    }

    /// A batch's write holds its writes and its positions, raised and never lowered (a retried
    /// batch re-decides records state already holds).
    #[test]
    fn a_write_raises_the_positions_and_never_lowers_them() {
        let store = MemoryStore::new();
        make_durable(&store, &batch(10, 4)).unwrap();
        assert_eq!(
            store.get(Cf::Rows, &keys::partition(3)).unwrap(),
            Some(b"row".to_vec())
        );
        let at = |name| next_offset(&store, 3, name).unwrap();
        assert_eq!(
            (
                at(keys::META_INPUT_NEXT),
                at(keys::META_OUTBOX_NEXT),
                at(keys::META_KEYS_NEXT)
            ),
            (10, 5, 7)
        );
        make_durable(&store, &batch(6, 2)).unwrap();
        assert_eq!(
            (at(keys::META_INPUT_NEXT), at(keys::META_OUTBOX_NEXT)),
            (10, 5)
        );
        make_durable(&store, &batch(12, 8)).unwrap();
        assert_eq!(
            (at(keys::META_INPUT_NEXT), at(keys::META_OUTBOX_NEXT)),
            (12, 9)
        );
    }

    /// The writer's thread writes one batch at a time; waiting returns the batch's shares once
    /// its write is in the store, and nothing when no write is in progress.
    #[test]
    fn the_writer_reports_each_write_once_it_is_in_the_store() {
        let store = Arc::new(MemoryStore::new());
        let mut writer = StateWriter::new(store.clone()).unwrap();
        assert!(writer.wait().unwrap().is_none());
        for (i, next) in [10, 20, 30].into_iter().enumerate() {
            let parts = BTreeMap::from([(3, PartDecided::default())]);
            writer.start(
                batch(next, i as i64),
                Writing {
                    parts: parts.clone(),
                    queues_shred: i == 1,
                },
            );
            assert!(writer.busy());
            assert_eq!(writer.queues_shred(), i == 1);
            let (writing, result) = writer.wait().unwrap().expect("a write in progress");
            assert_eq!(result, Ok(()));
            assert_eq!(writing.parts, parts);
            assert!(!writer.busy());
            assert_eq!(
                next_offset(store.as_ref(), 3, keys::META_INPUT_NEXT).unwrap(),
                next
            );
        }
        assert!(writer.wait().unwrap().is_none());
    }
}
