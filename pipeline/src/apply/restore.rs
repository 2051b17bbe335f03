//! Restore: fold outbox partitions into state, from the stored position to the end (read with
//! [`kledger_kafka::reader`] in its to-the-end mode).

use std::collections::BTreeMap;
use std::time::Instant;

use anyhow::bail;
use kledger_schemas::avro::SchemaLookup;
use kledger_state::{
    Overlay, RocksStore, StateError, StateStore, keys, next_offset, restore_record,
};
use rdkafka::message::Message;

use kledger_kafka::reader::{LIVE_PROBE, PartitionReader, ReadError};
use kledger_kafka::topics::Topics;
use kledger_runtime::config::Config;
use kledger_runtime::metrics as m;
use kledger_runtime::shutdown::Shutdown;

/// Restores `partitions` of the keys topic, then of the outbox, into `store`: every commit's
/// data keys precede it (rules v4). Returns the number of outbox records folded; `progress`
/// hears of every batch written.
///
/// A fork or a gap stops the restore with an error (and the processor with it): state is never
/// built from a history that does not chain. Missing history (the outbox starts after the
/// stored position) is an error too.
pub(crate) fn restore(
    config: &Config,
    topics: &Topics,
    store: &RocksStore,
    partitions: &[i32],
    lookup: &dyn SchemaLookup,
    shutdown: &Shutdown,
    progress: &dyn Fn(u64),
) -> anyhow::Result<u64> {
    if partitions.is_empty() {
        return Ok(0);
    }
    let started = Instant::now();
    let outbox = topics.outbox.as_str();
    crate::keys::restore_keys(config, &topics.keys, store, partitions)?;
    let mut from = BTreeMap::new();
    for &p in partitions {
        from.insert(p, next_offset(store, p, keys::META_OUTBOX_NEXT)?);
    }
    let mut reader = PartitionReader::source(config, outbox, "restore", &from, LIVE_PROBE)?;
    let mut folded = 0u64;
    let mut overlay = Overlay::new(store);
    let mut in_overlay = 0usize;
    let batch_records = config.processor.restore_batch_records;
    loop {
        if shutdown.is_triggered() {
            bail!("shutdown during restore");
        }
        let batch = match reader.next_to_end(batch_records) {
            Ok(Some(b)) => b,
            Ok(None) => break,
            Err(e @ ReadError::OutOfRange { .. }) => {
                return Err(super::Unrecoverable(format!("{e} (state cannot be restored)")).into());
            }
            Err(e) => return Err(anyhow::Error::new(e).context("restore")),
        };
        for msg in &batch {
            let p = msg.partition();
            let bytes = msg.payload().unwrap_or_default();
            match restore_record(&mut overlay, p, msg.offset(), bytes, lookup) {
                Ok(_) => {}
                Err(e @ StateError::Fork { .. }) => {
                    metrics::counter!(m::FORKS_DETECTED_TOTAL).increment(1);
                    return Err(anyhow::Error::new(e).context(format!("restoring {outbox}/{p}")));
                }
                Err(e) => {
                    return Err(anyhow::Error::new(e).context(format!("restoring {outbox}/{p}")));
                }
            }
            folded += 1;
            in_overlay += 1;
            if in_overlay >= batch_records {
                store.write(&std::mem::replace(&mut overlay, Overlay::new(store)).into_writes())?;
                progress(in_overlay as u64);
                in_overlay = 0;
            }
        }
    }
    store.write(&overlay.into_writes())?;
    metrics::counter!(m::RESTORE_RECORDS_TOTAL).increment(folded);
    metrics::histogram!(m::RESTORE_DURATION_SECONDS).record(started.elapsed().as_secs_f64());
    tracing::info!(partitions = ?partitions, records = folded, ms = started.elapsed().as_millis() as u64, "restored");
    Ok(folded)
}

/// A restore that ended: its partitions, its generation ([`super::membership::Membership`])
/// and the records it folded or why it failed.
pub(super) struct RestoreDone {
    pub(super) partitions: Vec<i32>,
    pub(super) generation: u64,
    pub(super) result: anyhow::Result<u64>,
}

/// The processor's restore threads: each folds some partitions' outbox into state after its
/// backoff, and reports to [`Restores::finished`]. They see the shutdown between batches.
pub(super) struct Restores {
    tx: std::sync::mpsc::Sender<RestoreDone>,
    rx: std::sync::mpsc::Receiver<RestoreDone>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Restores {
    pub(super) fn new() -> Self {
        let (tx, rx) = std::sync::mpsc::channel();
        Self {
            tx,
            rx,
            threads: Vec::new(),
        }
    }

    /// Restores `partitions` (generation `generation`) on a thread of its own, after `backoff`.
    #[allow(clippy::too_many_arguments)] // what one restore reads, each owned by the thread
    pub(super) fn start(
        &mut self,
        config: std::sync::Arc<Config>,
        topics: std::sync::Arc<Topics>,
        store: std::sync::Arc<RocksStore>,
        codec: std::sync::Arc<kledger_kafka::codec::Codec>,
        shutdown: Shutdown,
        partitions: Vec<i32>,
        generation: u64,
        backoff: std::time::Duration,
    ) -> anyhow::Result<()> {
        let tx = self.tx.clone();
        let handle = std::thread::Builder::new()
            .name("kledger-restore".into())
            .spawn(move || {
                shutdown.sleep(backoff);
                let result = restore(
                    &config,
                    &topics,
                    &store,
                    &partitions,
                    codec.as_ref(),
                    &shutdown,
                    &|_| {},
                );
                let _ = tx.send(RestoreDone {
                    partitions,
                    generation,
                    result,
                });
            })
            .map_err(|e| anyhow::anyhow!("spawn restore thread: {e}"))?;
        self.threads.retain(|h| !h.is_finished());
        self.threads.push(handle);
        Ok(())
    }

    /// The restores that ended since the last call.
    pub(super) fn finished(&self) -> Vec<RestoreDone> {
        self.rx.try_iter().collect()
    }

    /// Waits for every restore thread (after the shutdown, so the store is released).
    pub(super) fn join(&mut self) {
        for h in self.threads.drain(..) {
            let _ = h.join();
        }
    }
}
