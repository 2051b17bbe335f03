//! Restore: fold outbox partitions into state, from the stored position to the end.
//!
//! The end is where a fetch reports end-of-partition at the read position: fetch responses
//! carry the high watermark with the data. Offset lookups (ListOffsets) are not used, because
//! tansu 0.6 can answer them with stale or wrong values under load.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use kledger_schemas::avro::SchemaLookup;
use kledger_state::{Overlay, RocksStore, StateError, StateStore, keys, position, restore_record};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{Offset, TopicPartitionList};

use crate::config::Config;
use crate::metrics as m;
use crate::runtime::clients::{RestoreContext, seek_or_retry_later};
use crate::runtime::position::{IdleProbe, Position, Verdict};

/// How long a restore may go without reading anything before it fails.
pub const RESTORE_STALL_MAX: Duration = Duration::from_secs(60);

/// Restores `partitions` of `outbox` into `store`. Returns the number of records folded;
/// `progress` hears of every batch written.
///
/// A fork or a gap stops the restore with an error (and the processor with it): state is never
/// built from a history that does not chain. Missing history (the outbox starts after the
/// stored position) is an error too.
pub fn restore(
    config: &Config,
    outbox: &str,
    store: &RocksStore,
    partitions: &[i32],
    lookup: &dyn SchemaLookup,
    shutdown: &AtomicBool,
    progress: &dyn Fn(u64),
) -> anyhow::Result<u64> {
    if partitions.is_empty() {
        return Ok(0);
    }
    let started = Instant::now();
    let consumer: BaseConsumer<RestoreContext> = crate::runtime::clients::restore_config(config)
        .create_with_context(RestoreContext)
        .context("restore consumer")?;
    let mut tpl = TopicPartitionList::new();
    let mut positions: BTreeMap<i32, Position> = BTreeMap::new();
    for &p in partitions {
        let from = position(store, p, keys::META_OUTBOX_OFFSET)?.map_or(0, |o| o + 1);
        tpl.add_partition_offset(outbox, p, Offset::Offset(from))?;
        positions.insert(p, Position::at(from));
    }
    consumer.assign(&tpl).context("assign outbox partitions")?;
    let mut open: BTreeSet<i32> = positions.keys().copied().collect();
    let mut folded = 0u64;
    let mut overlay = Overlay::new(store);
    let mut in_overlay = 0usize;
    let mut last_progress = Instant::now();
    let mut idle = IdleProbe::default();
    while !open.is_empty() {
        if shutdown.load(Ordering::Relaxed) {
            bail!("shutdown during restore");
        }
        for (p, o) in idle.due(&mut positions, Instant::now()) {
            seek_or_retry_later(&consumer, outbox, p, o, "restore read nothing: probe");
        }
        match consumer.poll(Duration::from_millis(200)) {
            Some(Ok(msg)) => {
                last_progress = Instant::now();
                let p = msg.partition();
                let Some(pos) = positions.get_mut(&p) else {
                    continue;
                };
                if !pos.served() {
                    idle.seen(p, last_progress);
                }
                match pos.check(msg.offset()) {
                    Verdict::Accept => {}
                    Verdict::Drop => continue,
                    Verdict::SeekTo(o) => {
                        tracing::debug!(
                            partition = p,
                            got = msg.offset(),
                            expected = pos.next(),
                            seek = o,
                            "restore read ran ahead; seeking back"
                        );
                        consumer.seek(outbox, p, Offset::Offset(o), Duration::from_secs(30))?;
                        continue;
                    }
                }
                open.insert(p);
                let bytes = msg.payload().unwrap_or_default();
                match restore_record(&mut overlay, p, msg.offset(), bytes, lookup) {
                    Ok(_) => {}
                    Err(e @ StateError::Fork { .. }) => {
                        metrics::counter!(m::FORKS_DETECTED_TOTAL).increment(1);
                        return Err(
                            anyhow::Error::new(e).context(format!("restoring {outbox}/{p}"))
                        );
                    }
                    Err(e) => {
                        return Err(
                            anyhow::Error::new(e).context(format!("restoring {outbox}/{p}"))
                        );
                    }
                }
                folded += 1;
                in_overlay += 1;
                if in_overlay >= config.processor.restore_batch_records {
                    store.write(
                        &std::mem::replace(&mut overlay, Overlay::new(store)).into_writes(),
                    )?;
                    progress(in_overlay as u64);
                    in_overlay = 0;
                }
            }
            Some(Err(KafkaError::PartitionEOF(p))) => {
                // The end, unless a seek back is still on its way.
                if positions.get(&p).is_some_and(|pos| !pos.seeking()) {
                    open.remove(&p);
                }
            }
            Some(Err(KafkaError::MessageConsumption(RDKafkaErrorCode::OffsetOutOfRange))) => {
                return Err(super::processor::Unrecoverable(format!(
                    "reading {outbox}: the stored position is outside the partition (history is missing, state cannot be restored)"
                ))
                .into());
            }
            Some(Err(e)) => tracing::warn!(error = %e, "restore consumer error"),
            None => {
                if last_progress.elapsed() > RESTORE_STALL_MAX {
                    bail!(
                        "restore of {outbox} partitions {open:?} made no progress for {RESTORE_STALL_MAX:?}"
                    );
                }
            }
        }
    }
    store.write(&overlay.into_writes())?;
    metrics::counter!(m::RESTORE_RECORDS_TOTAL).increment(folded);
    metrics::histogram!(m::RESTORE_DURATION_SECONDS).record(started.elapsed().as_secs_f64());
    tracing::info!(partitions = ?partitions, records = folded, ms = started.elapsed().as_millis() as u64, "restored");
    Ok(folded)
}
