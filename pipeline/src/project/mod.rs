//! Projections of the outbox: one abstraction for "a projection of the outbox" and one driver
//! for it, used live (each sink in its own consumer group) and by rebuild.
//!
//! A [`Projection`] folds batches of outbox commits into a store that keeps its own read
//! positions (the view store, the vector index with its marks). The driver reads the outbox
//! and hands it batches:
//! - [`drive_live`]: forever, in the sink's consumer group (`reader::OutboxReader`):
//!   records that do not decode are dead-lettered, readiness follows the group's ends, and the
//!   drive ends when a rebuilt generation is swapped in (the caller starts it again on it);
//! - [`drive_to_end`]: a new generation, read from its own positions to the outbox's end
//!   (`kledger_kafka::reader` in its to-the-end mode): records that do not decode are
//!   skipped (the live sink dead-letters them), and the projection is finished.
//!
//! - `reader`: reading the outbox for a live sink (group, dead letters, readiness, lag).
//! - [`views`]: the view materializer (view store + the views topic).
//! - [`vectors`]: the vector projection (Qdrant, embedded engine or server).
//!
//! May not touch: Kafka clients directly (only through the readers), other projections.

pub mod reader;
pub mod vectors;
pub mod views;

use std::time::{Duration, Instant};

use anyhow::Context;
use kledger_schemas::Commit;
use kledger_schemas::avro::{SchemaLookup, decode};
use rdkafka::message::Message;

use self::reader::OutboxReader;
use crate::keys::KeyFeed;
use crate::records::Outgoing;
use kledger_kafka::clients::RestoreContext;
use kledger_kafka::codec::Codec;
use kledger_kafka::reader::PartitionReader;
use kledger_runtime::config::Config;
use kledger_runtime::metrics as m;
use kledger_runtime::shutdown::Shutdown;
use kledger_runtime::status::Status;

pub use crate::records::OutboxCommit;

/// Where a projection's records go besides its store (the live sink's producer).
pub trait Outputs {
    /// Produces `records` and waits for every delivery.
    fn deliver(&mut self, records: &[Outgoing]) -> anyhow::Result<()>;
    /// The codec outputs are written with.
    fn codec(&self) -> &Codec;
    /// Whether a broker was in reach at the last report (outputs wait while none is).
    fn in_reach(&self) -> bool {
        true
    }
}

/// A projection of the outbox.
pub trait Projection {
    /// Its name: the metrics label and the suffix of its consumer group.
    fn name(&self) -> &'static str;

    /// The next outbox offset partition `p` folds (its stored position).
    fn position(&self, p: i32) -> anyhow::Result<i64>;

    /// Its copy of the data keys (rules v4): the driver opens every commit's sealed rows with
    /// them before [`Projection::apply`], reading the keys it lacks from the keys topic.
    fn key_cache(&self) -> anyhow::Result<&dyn kledger_state::KeyCache>;

    /// Folds one batch: `commits` (decoded), then the positions advance past every record
    /// `read` lists (undecodable ones too).
    fn apply(&mut self, commits: &[OutboxCommit], read: &[(i32, i64)]) -> anyhow::Result<()>;

    /// Live only: publishes what the projection puts on topics besides its store. Called
    /// before the first batch and after the last with `all`, and between batches without.
    fn publish(&mut self, _out: &mut dyn Outputs, _all: bool) -> anyhow::Result<()> {
        Ok(())
    }

    /// To the end only: completes a generation once the outbox's end is folded (every write
    /// durable; what the live sink would publish marked as published).
    fn finish(&mut self) -> anyhow::Result<()> {
        Ok(())
    }

    /// Live only: runs every erasure a purge left waiting for its interval, at once. The drive
    /// calls it whenever it ends — at a stop, on an error, when a rebuilt generation is swapped
    /// in — so no purged byte waits for a drive that will not come back.
    fn erase_pending(&mut self) -> anyhow::Result<()> {
        Ok(())
    }
}

/// How often the live drive asks whether a rebuilt generation was swapped in.
const GENERATION_CHECK: Duration = Duration::from_secs(1);

/// Drives `projection` live from `reader` until shutdown, an error, or `swapped` says a
/// rebuilt generation is active (then `Ok`: the caller starts a new drive on it). Readiness
/// goes to `status`.
pub fn drive_live(
    config: &Config,
    projection: &mut dyn Projection,
    reader: &mut OutboxReader,
    swapped: &mut dyn FnMut() -> anyhow::Result<bool>,
    status: &Status,
    shutdown: &Shutdown,
) -> anyhow::Result<()> {
    let name = projection.name();
    status.set_sink(name, false);
    // A drive started again after a failure keeps the last reach reported until its new
    // consumer's first report (a restart during an outage does not claim the broker back).
    let mut unreachable = status.unreachable_sinks().contains(&name);
    let result = (|| {
        // The key feed starts with the drive (its consumer is part of the sink from the start).
        let feed = KeyFeed::new(config, projection.key_cache()?, config.kafka.partitions)?;
        projection.publish(reader, true)?;
        let mut checked = Instant::now();
        while !shutdown.is_triggered() {
            projection.publish(reader, false)?;
            if checked.elapsed() >= GENERATION_CHECK {
                checked = Instant::now();
                if swapped()? {
                    tracing::info!(
                        sink = name,
                        "projection rebuilt; the sink starts again on it"
                    );
                    return Ok(());
                }
            }
            reader.handle_events(&|p| projection.position(p))?;
            let batch = reader.next_batch()?;
            status.set_sink(name, reader.caught_up());
            if let Some(now) = reader.broker_unreachable()
                && now != unreachable
            {
                unreachable = now;
                if unreachable {
                    tracing::warn!(
                        sink = name,
                        "the sink's consumer reaches no broker; serving what it holds"
                    );
                } else {
                    tracing::info!(sink = name, "the sink's consumer reaches a broker again");
                }
                status.set_sink_unreachable(name, unreachable);
            }
            if batch.is_empty() {
                continue;
            }
            let started = Instant::now();
            let mut commits = reader.decode(&batch)?;
            crate::keys::open_commits(config, projection.key_cache()?, Some(&feed), &mut commits)?;
            let read: Vec<(i32, i64)> = batch.iter().map(|m| (m.partition(), m.offset())).collect();
            projection.apply(&commits, &read)?;
            metrics::histogram!(m::SINK_WRITE_SECONDS, "sink" => name)
                .record(started.elapsed().as_secs_f64());
            reader.report_progress(&|p| projection.position(p))?;
        }
        projection.publish(reader, true)
    })();
    if let Err(e) = projection.erase_pending() {
        tracing::warn!(sink = name, error = %format!("{e:#}"), "running the erasures due at the drive's end");
    }
    reader.close();
    result
}

/// Batch sizes of a to-the-end drive: the first batch, doubling up to the largest (a
/// projection whose writer runs behind the read starts writing after a short first read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ramp {
    /// Records of the first batch.
    pub first: usize,
    /// Records per batch at most.
    pub max: usize,
}

/// What a to-the-end drive read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Drove {
    /// Outbox records read.
    pub records: u64,
    /// Records that did not decode (skipped).
    pub undecodable: u64,
    /// Time spent finishing the projection after the last batch.
    pub finish: Duration,
}

/// Drives `projection` from `reader` (to-the-end mode, from the projection's positions) to
/// the outbox's end, then finishes it. `progress` hears of every batch's records.
pub fn drive_to_end(
    config: &Config,
    projection: &mut dyn Projection,
    reader: &mut PartitionReader<RestoreContext>,
    lookup: &dyn SchemaLookup,
    ramp: Ramp,
    progress: &dyn Fn(u64),
) -> anyhow::Result<Drove> {
    let mut drove = Drove::default();
    let mut batch_max = ramp.first;
    while let Some(batch) = reader.next_to_end(batch_max)? {
        batch_max = (batch_max * 2).min(ramp.max);
        let mut commits = Vec::with_capacity(batch.len());
        let mut read = Vec::with_capacity(batch.len());
        for msg in &batch {
            read.push((msg.partition(), msg.offset()));
            match decode::<Commit>(msg.payload().unwrap_or_default(), lookup) {
                Ok(commit) => commits.push(OutboxCommit {
                    partition: msg.partition(),
                    offset: msg.offset(),
                    commit,
                }),
                Err(e) => {
                    drove.undecodable += 1;
                    tracing::warn!(partition = msg.partition(), offset = msg.offset(), error = %e, "outbox record does not decode; skipped");
                }
            }
        }
        if !read.is_empty() {
            let name = projection.name();
            crate::keys::open_commits(config, projection.key_cache()?, None, &mut commits)?;
            projection
                .apply(&commits, &read)
                .with_context(|| format!("rebuild {name}"))?;
        }
        drove.records += batch.len() as u64;
        progress(batch.len() as u64);
    }
    let finishing = Instant::now();
    projection.finish()?;
    drove.finish = finishing.elapsed();
    Ok(drove)
}
