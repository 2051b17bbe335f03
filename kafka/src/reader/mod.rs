//! One partition reader: everything in kledger that needs a partition's records in order reads
//! them through it.
//!
//! Two modes:
//! - **group** ([`PartitionReader::group`]): a consumer subscribed in a consumer group (the
//!   processor, the sinks). Its owner handles the group's rebalance events and says where each
//!   partition it reads starts ([`PartitionReader::start`]) and when it stops reading one
//!   ([`PartitionReader::stop`]); [`PartitionReader::next_batch`] gives batches bounded in
//!   records and time. After a partition is started the bound on records ramps up: the first
//!   batch holds at most [`RAMP_FIRST`] records and each next one twice the last, up to the
//!   configured bound, so that output starts to flow (outbox, receipts, the sinks downstream)
//!   while a backlog found at start or after a rebalance is still being read.
//! - **to the end** ([`PartitionReader::to_end`]): partitions assigned from given offsets
//!   (restore, replay, rebuild, migrate), read until a fetch reports each one's end
//!   ([`PartitionReader::next_to_end`]). The end is what a fetch reports (fetch responses carry
//!   the high watermark), not an offset lookup: tansu 0.6 can answer those with stale values
//!   under load. A reader that reads nothing for [`STALL_MAX`] fails.
//!
//! Either way each partition's records come in offset order from where it started, none
//! skipped. The checks that make it so, and the workarounds for the embedded broker's fetch
//! quirks they need, are private to this module (`position`).
//!
//! May not touch: state, decisions, or what the records hold.

mod position;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use anyhow::Context;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::error::KafkaError;
use rdkafka::message::{Message, OwnedMessage};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{Offset, TopicPartitionList};

use position::{IdleProbe, Position, Verdict};

use crate::clients::{RestoreContext, restore_config};
use kledger_runtime::config::Config;

/// How long a to-the-end reader may read nothing before it fails.
pub const STALL_MAX: Duration = Duration::from_secs(60);

/// Quiet time after which a live consumer probes a position no fetch has served yet.
pub const LIVE_PROBE: Duration = position::IDLE_PROBE;

/// Quiet time after which a reader of a topic that is not being written probes sooner.
pub const SOURCE_PROBE: Duration = Duration::from_millis(200);

/// How long one poll waits for the first record of a batch.
const FIRST_POLL: Duration = Duration::from_millis(100);
/// Records of a group-mode batch at most right after a partition is started (the ramp's first
/// step; see the module comment).
pub const RAMP_FIRST: usize = 250;

/// How long one poll of a to-the-end reader waits when nothing is buffered.
const TO_END_POLL: Duration = Duration::from_millis(200);

/// The clock is read every this many records while a batch fills: per record it costs more
/// than the check is worth.
const CLOCK_EVERY_RECORDS: usize = 16;

pub use kledger_runtime::config::BatchBounds;

/// Why a to-the-end read failed.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// A start offset is outside its partition: the history it needs is gone.
    #[error("reading {topic}: a start position is outside its partition (history is missing)")]
    OutOfRange {
        /// The topic.
        topic: String,
    },
    /// Nothing was read for [`STALL_MAX`].
    #[error("reading {topic} partitions {open:?} made no progress for {STALL_MAX:?}")]
    Stalled {
        /// The topic.
        topic: String,
        /// Partitions whose end was not reached.
        open: Vec<i32>,
    },
}

#[derive(Debug)]
enum Mode {
    Group {
        bounds: BatchBounds,
        /// The current bound on a batch's records: [`RAMP_FIRST`] after a start, doubling per
        /// batch up to `bounds.records_max`.
        ramp: usize,
        /// Partitions whose end was reported since they were started.
        reached_end: BTreeSet<i32>,
        /// From the first record of the last batch to its end.
        collect_span: Option<Duration>,
    },
    ToEnd {
        /// Partitions whose end is not reached yet.
        open: BTreeSet<i32>,
        last_progress: Instant,
    },
}

/// Reads partitions of one topic in order (see the module comment).
pub struct PartitionReader<C: ConsumerContext + 'static> {
    consumer: BaseConsumer<C>,
    topic: String,
    /// Who reads, for logs.
    label: &'static str,
    positions: BTreeMap<i32, Position>,
    idle: IdleProbe,
    mode: Mode,
}

impl<C: ConsumerContext> std::fmt::Debug for PartitionReader<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PartitionReader")
            .field("topic", &self.topic)
            .field("label", &self.label)
            .field("positions", &self.positions)
            .field("mode", &self.mode)
            .finish_non_exhaustive()
    }
}

impl<C: ConsumerContext> PartitionReader<C> {
    /// A group-mode reader: subscribes `consumer` to `topic` (its group and rebalance context
    /// are the caller's). It reads nothing until the owner starts partitions.
    pub fn group(
        consumer: BaseConsumer<C>,
        topic: &str,
        label: &'static str,
        bounds: BatchBounds,
    ) -> anyhow::Result<Self> {
        consumer
            .subscribe(&[topic])
            .with_context(|| format!("{label}: subscribe to {topic}"))?;
        Ok(Self {
            consumer,
            topic: topic.to_owned(),
            label,
            positions: BTreeMap::new(),
            idle: IdleProbe::after(LIVE_PROBE),
            mode: Mode::Group {
                bounds,
                ramp: RAMP_FIRST,
                reached_end: BTreeSet::new(),
                collect_span: None,
            },
        })
    }

    /// A to-the-end reader: assigns `consumer` (no group; `enable.partition.eof` on) partition
    /// `p` of `topic` from `from[p]` for every entry of `from`. A position never served is
    /// probed after `probe_after` without a record ([`LIVE_PROBE`], [`SOURCE_PROBE`]).
    pub fn to_end(
        consumer: BaseConsumer<C>,
        topic: &str,
        label: &'static str,
        from: &BTreeMap<i32, i64>,
        probe_after: Duration,
    ) -> anyhow::Result<Self> {
        let mut tpl = TopicPartitionList::new();
        for (&p, &o) in from {
            tpl.add_partition_offset(topic, p, Offset::Offset(o))?;
        }
        consumer
            .assign(&tpl)
            .with_context(|| format!("{label}: assign {topic}"))?;
        Ok(Self {
            consumer,
            topic: topic.to_owned(),
            label,
            positions: from.iter().map(|(&p, &o)| (p, Position::at(o))).collect(),
            idle: IdleProbe::after(probe_after),
            mode: Mode::ToEnd {
                open: from.keys().copied().collect(),
                last_progress: Instant::now(),
            },
        })
    }

    /// The consumer, for what belongs to its owner (pause, resume, commits, group metadata).
    pub fn consumer(&self) -> &BaseConsumer<C> {
        &self.consumer
    }

    /// The topic read.
    pub fn topic(&self) -> &str {
        &self.topic
    }

    /// Reads partition `p` from offset `from` on. The seek may fail right after an assignment
    /// or a resume ("erroneous state": no fetch yet); reading then starts where the consumer
    /// was, and the position check drops records before `from` or seeks back to it.
    pub fn start(&mut self, p: i32, from: i64, why: &str) {
        self.seek(p, from, why);
        self.positions.insert(p, Position::at(from));
        if let Mode::Group {
            reached_end, ramp, ..
        } = &mut self.mode
        {
            reached_end.remove(&p);
            *ramp = RAMP_FIRST;
        }
    }

    /// Stops reading partition `p` (revoked or paused): its records are dropped until it is
    /// started again.
    pub fn stop(&mut self, p: i32) {
        self.positions.remove(&p);
        if let Mode::Group { reached_end, .. } = &mut self.mode {
            reached_end.remove(&p);
        }
    }

    /// Partitions being read, ascending.
    pub fn reading(&self) -> impl Iterator<Item = i32> + '_ {
        self.positions.keys().copied()
    }

    /// Whether a fetch reported partition `p`'s end since it was started (group mode).
    pub fn reached_end(&self, p: i32) -> bool {
        match &self.mode {
            Mode::Group { reached_end, .. } => reached_end.contains(&p),
            Mode::ToEnd { open, .. } => self.positions.contains_key(&p) && !open.contains(&p),
        }
    }

    /// Leaves the group and joins it again (a fresh generation), keeping nothing: the
    /// rebalance events that follow say what to read.
    pub fn rejoin(&mut self) -> anyhow::Result<()> {
        self.consumer.unsubscribe();
        self.consumer
            .subscribe(&[&self.topic])
            .with_context(|| format!("{}: subscribe to {} again", self.label, self.topic))
    }

    /// Leaves the group.
    pub fn leave(&self) {
        self.consumer.unsubscribe();
    }

    /// How long the last group-mode batch was open (from its first record to its end).
    pub fn collect_span(&self) -> Option<Duration> {
        match &self.mode {
            Mode::Group { collect_span, .. } => *collect_span,
            Mode::ToEnd { .. } => None,
        }
    }

    /// The next batch (group mode): at most `records_max` records, closed `wait` after its
    /// first; only records that continue each started partition's position, in order.
    pub fn next_batch(&mut self) -> Vec<OwnedMessage> {
        let batch = self.collect();
        let mut keep = Vec::with_capacity(batch.len());
        // A seek purges what was fetched before it: the rest of this batch's records of that
        // partition are older than the seek.
        let mut reseek = BTreeSet::new();
        let now = Instant::now();
        for m in batch {
            let p = m.partition();
            if !reseek.contains(&p) {
                match self.judge(p, m.offset(), now) {
                    Judged::Keep => keep.push(m),
                    Judged::Drop => {}
                    Judged::Sought => {
                        reseek.insert(p);
                    }
                }
            }
        }
        self.probe_quiet(now);
        keep
    }

    fn collect(&mut self) -> Vec<OwnedMessage> {
        let Mode::Group { bounds, ramp, .. } = &self.mode else {
            return Vec::new();
        };
        let bounds = *bounds;
        let records_max = ramp_bound(*ramp, bounds.records_max);
        let mut batch = Vec::new();
        let mut first: Option<Instant> = None;
        let mut now = Instant::now();
        while batch.len() < records_max {
            let timeout = match first {
                None => FIRST_POLL,
                Some(f) => (f + bounds.wait).saturating_duration_since(now),
            };
            match self.consumer.poll(timeout) {
                Some(Ok(msg)) => {
                    first.get_or_insert_with(Instant::now);
                    batch.push(msg.detach());
                }
                Some(Err(KafkaError::PartitionEOF(p))) => {
                    let served = self.positions.get(&p).is_some_and(|pos| !pos.seeking());
                    if let Mode::Group { reached_end, .. } = &mut self.mode
                        && served
                    {
                        reached_end.insert(p);
                    }
                    if first.is_none() {
                        break;
                    }
                }
                Some(Err(e)) => {
                    tracing::warn!(reader = self.label, topic = %self.topic, error = %e, "consumer error");
                    if first.is_none() {
                        break;
                    }
                }
                None => break,
            }
            if batch.len() % CLOCK_EVERY_RECORDS == 0 {
                now = Instant::now();
                if first.is_some_and(|f| now >= f + bounds.wait) {
                    break;
                }
            }
        }
        if let Mode::Group {
            collect_span, ramp, ..
        } = &mut self.mode
        {
            *collect_span = first.map(|f| f.elapsed());
            if !batch.is_empty() {
                *ramp = ramp_next(*ramp, bounds.records_max);
            }
        }
        batch
    }

    /// The next records (to-the-end mode): each partition's in offset order, at most `max`;
    /// an empty batch when a poll found nothing (so the caller can look at its shutdown flag);
    /// `None` once every partition reached its end.
    pub fn next_to_end(&mut self, max: usize) -> Result<Option<Vec<OwnedMessage>>, ReadError> {
        let mut batch = Vec::new();
        while batch.len() < max && !self.all_ended() {
            let now = Instant::now();
            self.probe_quiet(now);
            let timeout = if batch.is_empty() {
                TO_END_POLL
            } else {
                Duration::ZERO
            };
            match self.consumer.poll(timeout) {
                Some(Ok(msg)) => {
                    let msg = msg.detach();
                    let (p, offset) = (msg.partition(), msg.offset());
                    if let Mode::ToEnd { last_progress, .. } = &mut self.mode {
                        *last_progress = Instant::now();
                    }
                    if self.judge(p, offset, now) == Judged::Keep {
                        // More records after an end report: the end moved on.
                        if let Mode::ToEnd { open, .. } = &mut self.mode {
                            open.insert(p);
                        }
                        batch.push(msg);
                    }
                }
                Some(Err(KafkaError::PartitionEOF(p))) => {
                    // The end, unless a seek back is still on its way.
                    if self.positions.get(&p).is_some_and(|pos| !pos.seeking())
                        && let Mode::ToEnd { open, .. } = &mut self.mode
                    {
                        open.remove(&p);
                    }
                }
                Some(Err(KafkaError::MessageConsumption(RDKafkaErrorCode::OffsetOutOfRange))) => {
                    return Err(ReadError::OutOfRange {
                        topic: self.topic.clone(),
                    });
                }
                Some(Err(e)) => {
                    tracing::warn!(reader = self.label, topic = %self.topic, error = %e, "read");
                }
                None => {
                    if let Mode::ToEnd {
                        last_progress,
                        open,
                    } = &self.mode
                        && batch.is_empty()
                        && last_progress.elapsed() > STALL_MAX
                    {
                        return Err(ReadError::Stalled {
                            topic: self.topic.clone(),
                            open: open.iter().copied().collect(),
                        });
                    }
                    break;
                }
            }
        }
        if batch.is_empty() && self.all_ended() {
            return Ok(None);
        }
        Ok(Some(batch))
    }

    /// Whether every partition of a to-the-end reader reached its end (always, in group mode).
    fn all_ended(&self) -> bool {
        match &self.mode {
            Mode::ToEnd { open, .. } => open.is_empty(),
            Mode::Group { .. } => true,
        }
    }

    /// Judges the record at (`p`, `offset`) against its partition's position.
    fn judge(&mut self, p: i32, offset: i64, now: Instant) -> Judged {
        let Some(pos) = self.positions.get_mut(&p) else {
            return Judged::Drop;
        };
        if !pos.served() {
            self.idle.seen(p, now);
        }
        match pos.check(offset) {
            Verdict::Accept => Judged::Keep,
            Verdict::Drop => {
                tracing::debug!(
                    reader = self.label,
                    partition = p,
                    expected = pos.next(),
                    got = offset,
                    "dropped a record older than the position"
                );
                Judged::Drop
            }
            Verdict::SeekTo(o) => {
                tracing::debug!(
                    reader = self.label,
                    partition = p,
                    expected = pos.next(),
                    got = offset,
                    seek = o,
                    "read ran ahead; seeking back"
                );
                self.seek(p, o, "ran ahead");
                Judged::Sought
            }
        }
    }

    /// Probes the positions no fetch has served that read nothing for the quiet time.
    fn probe_quiet(&mut self, now: Instant) {
        for (p, o) in self.idle.due(&mut self.positions, now) {
            self.seek(p, o, "read nothing: probe");
        }
    }

    /// Seeks `p` to `offset`; a failed seek is not fatal (the next record that runs ahead, or
    /// the next probe, seeks again).
    fn seek(&self, p: i32, offset: i64, why: &str) {
        tracing::debug!(reader = self.label, topic = %self.topic, partition = p, seek = offset, why, "seek");
        if let Err(e) = self.consumer.seek(
            &self.topic,
            p,
            Offset::Offset(offset),
            Duration::from_secs(30),
        ) {
            tracing::debug!(reader = self.label, topic = %self.topic, partition = p, error = %e, "seek failed; trying again later");
        }
    }
}

impl PartitionReader<RestoreContext> {
    /// A to-the-end reader of `topic` from `from` with its own consumer (no group offsets,
    /// `read_committed`; [`crate::clients::restore_config`]).
    pub fn source(
        config: &Config,
        topic: &str,
        label: &'static str,
        from: &BTreeMap<i32, i64>,
        probe_after: Duration,
    ) -> anyhow::Result<Self> {
        let consumer: BaseConsumer<RestoreContext> = restore_config(config)
            .create_with_context(RestoreContext)
            .with_context(|| format!("{label}: consumer"))?;
        Self::to_end(consumer, topic, label, from, probe_after)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Judged {
    Keep,
    Drop,
    Sought,
}

/// A group-mode batch's bound on records at ramp step `ramp` under the configured `max`.
fn ramp_bound(ramp: usize, max: usize) -> usize {
    ramp.min(max).max(1)
}

/// The ramp's next step after a batch that held records.
fn ramp_next(ramp: usize, max: usize) -> usize {
    ramp.saturating_mul(2).min(max.max(1))
}

#[cfg(test)]
mod ramp_tests {
    use super::*;

    #[test]
    fn batches_after_a_start_ramp_up_to_the_configured_bound() {
        let mut ramp = RAMP_FIRST;
        let mut bounds = Vec::new();
        for _ in 0..6 {
            bounds.push(ramp_bound(ramp, 2_000));
            ramp = ramp_next(ramp, 2_000);
        }
        assert_eq!(bounds, [250, 500, 1_000, 2_000, 2_000, 2_000]);
        // A bound below the first step is the bound from the start; zero reads one record.
        assert_eq!(ramp_bound(RAMP_FIRST, 100), 100);
        assert_eq!(ramp_next(RAMP_FIRST, 100), 100);
        assert_eq!(ramp_bound(RAMP_FIRST, 0), 1);
    }
}
