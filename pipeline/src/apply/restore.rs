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
