//! Reading the outbox for a sink: its own consumer group, positions from the sink's store
//! (not the group's offsets), records in order per partition, batches bounded in records and
//! time, dead letters for records that do not decode, and group offsets committed last (they
//! only report lag).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use anyhow::Context;
use kledger_schemas::Commit;
use kledger_schemas::avro::decode;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::{Message, OwnedMessage};
use rdkafka::producer::ThreadedProducer;
use rdkafka::{Offset, TopicPartitionList};

use crate::config::Config;
use crate::metrics as m;
use crate::registry::Codec;
use crate::runtime::batch::{Decided, dead_letter};
use crate::runtime::clients::{
    Delivery, DeliveryContext, EventContext, RebalanceEvent, consumer_config, producer_config,
    seek_or_retry_later,
};
use crate::runtime::coverage::Coverage;
use crate::runtime::delivery::{await_delivery, send};
use crate::runtime::position::{IdleProbe, Position, Verdict};
use crate::topics::Topics;

/// Dead-letter code of an outbox record a sink cannot decode.
pub const UNDECODABLE: &str = "sink_undecodable";

/// The outbox side of a sink.
pub struct OutboxReader {
    sink: &'static str,
    batch_records_max: usize,
    batch_wait: Duration,
    delivery_timeout: Duration,
    /// Topic names.
    pub topics: Topics,
    consumer: BaseConsumer<EventContext>,
    events: Receiver<RebalanceEvent>,
    producer: ThreadedProducer<DeliveryContext>,
    deliveries: Receiver<Delivery>,
    next_id: u64,
    positions: BTreeMap<i32, Position>,
    idle: IdleProbe,
    codec: Arc<Codec>,
    /// An assignment arrived (possibly empty).
    joined: bool,
    /// Assigned partitions whose end this reader has reached since they were assigned.
    reached_end: BTreeSet<i32>,
    /// The record budget (dead letters carry at most this much of a record).
    record_bytes_max: usize,
    /// Whether the sink's group owns every outbox partition.
    coverage: Coverage,
}

impl std::fmt::Debug for OutboxReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboxReader")
            .field("sink", &self.sink)
            .field("positions", &self.positions)
            .finish_non_exhaustive()
    }
}

impl OutboxReader {
    /// Connects a consumer in group `<group_id>-<sink>` (subscribed to the outbox) and a
    /// producer for the sink's outputs; records are read with `codec`.
    pub fn new(
        config: &Config,
        sink: &'static str,
        batch_records_max: usize,
        batch_wait_ms: u64,
        codec: Arc<Codec>,
    ) -> anyhow::Result<Self> {
        let topics = config.topics();
        let (ev_tx, events) = channel();
        // The client id names the sink (`kledger-<sink>-…`), so broker logs tell it apart.
        let mut cc = consumer_config(config, sink);
        let group = format!("{}-{sink}", config.kafka.group_id);
        cc.set("group.id", &group)
            // End-of-partition reports tell when the sink has caught up (readiness).
            .set("enable.partition.eof", "true");
        let coverage = Coverage::new(sink, &topics.outbox, config.kafka.partitions);
        let consumer: BaseConsumer<EventContext> = cc
            .create_with_context(EventContext::for_sink(ev_tx, topics.outbox.clone(), sink))
            .with_context(|| format!("{sink} sink consumer"))?;
        consumer
            .subscribe(&[&topics.outbox])
            .context("subscribe to the outbox")?;
        let (dl_tx, deliveries) = channel();
        let producer = producer_config(config, None)
            .create_with_context(DeliveryContext::new(dl_tx))
            .with_context(|| format!("{sink} sink producer"))?;
        Ok(Self {
            sink,
            batch_records_max,
            batch_wait: Duration::from_millis(batch_wait_ms),
            delivery_timeout: Duration::from_millis(config.processor.delivery_timeout_ms),
            topics,
            consumer,
            events,
            producer,
            deliveries,
            next_id: 0,
            positions: BTreeMap::new(),
            idle: IdleProbe::default(),
            joined: false,
            reached_end: BTreeSet::new(),
            codec,
            record_bytes_max: config.limits.record_bytes_max,
            coverage,
        })
    }

    /// Applies rebalance events; an assigned partition starts at `position_of(p)`.
    pub fn handle_events(
        &mut self,
        position_of: &dyn Fn(i32) -> anyhow::Result<i64>,
    ) -> anyhow::Result<()> {
        while let Ok(ev) = self.events.try_recv() {
            match ev {
                RebalanceEvent::Assigned(ps) => {
                    self.joined = true;
                    for p in &ps {
                        self.reached_end.remove(p);
                    }
                    let mut tpl = TopicPartitionList::new();
                    for &p in &ps {
                        tpl.add_partition(&self.topics.outbox, p);
                    }
                    self.consumer.resume(&tpl).context("resume")?;
                    for p in ps {
                        let from = position_of(p)?;
                        // A seek right after assignment often fails ("erroneous state": no
                        // fetch yet). Reading then starts at the group's offset, and the
                        // position check drops records before `from` or seeks back to it.
                        if let Err(e) = self.consumer.seek(
                            &self.topics.outbox,
                            p,
                            Offset::Offset(from),
                            Duration::from_secs(30),
                        ) {
                            tracing::debug!(sink = self.sink, partition = p, error = %e, "seek on assign");
                        }
                        self.positions.insert(p, Position::at(from));
                    }
                }
                RebalanceEvent::Revoked(ps) => {
                    for p in ps {
                        self.positions.remove(&p);
                        self.reached_end.remove(&p);
                    }
                }
                RebalanceEvent::Error(e) => {
                    tracing::warn!(sink = self.sink, error = %e, "sink rebalance failed")
                }
            }
        }
        if self.joined {
            let mine: BTreeSet<i32> = self.positions.keys().copied().collect();
            if self.coverage.check(&self.consumer, &mine, Instant::now()) {
                tracing::warn!(sink = self.sink, unowned = ?self.coverage.unowned(), "leaving and joining the sink's group again");
                self.consumer.unsubscribe();
                self.consumer
                    .subscribe(&[&self.topics.outbox])
                    .context("subscribe to the outbox again")?;
            }
        }
        Ok(())
    }

    /// The next batch: records that continue each assigned partition's position, in order.
    pub fn next_batch(&mut self) -> anyhow::Result<Vec<OwnedMessage>> {
        let batch = self.collect();
        let mut keep = Vec::with_capacity(batch.len());
        let mut reseek = BTreeSet::new();
        let now = Instant::now();
        for msg in batch {
            let p = msg.partition();
            if reseek.contains(&p) {
                continue;
            }
            let Some(pos) = self.positions.get_mut(&p) else {
                continue;
            };
            if !pos.served() {
                self.idle.seen(p, now);
            }
            match pos.check(msg.offset()) {
                Verdict::Accept => keep.push(msg),
                Verdict::Drop => {}
                Verdict::SeekTo(o) => {
                    // Right after an assignment the seek may fail ("erroneous state"): the
                    // partition's records are dropped and the next read that runs ahead
                    // seeks again.
                    seek_or_retry_later(&self.consumer, &self.topics.outbox, p, o, "ran ahead");
                    reseek.insert(p);
                }
            }
        }
        for (p, o) in self.idle.due(&mut self.positions, now) {
            seek_or_retry_later(
                &self.consumer,
                &self.topics.outbox,
                p,
                o,
                "read nothing: probe",
            );
        }
        Ok(keep)
    }

    fn collect(&mut self) -> Vec<OwnedMessage> {
        let mut batch = Vec::new();
        let mut close: Option<Instant> = None;
        while batch.len() < self.batch_records_max {
            let timeout = match close {
                None => Duration::from_millis(100),
                Some(c) => c.saturating_duration_since(Instant::now()),
            };
            match self.consumer.poll(timeout) {
                Some(Ok(msg)) => {
                    close.get_or_insert_with(|| Instant::now() + self.batch_wait);
                    batch.push(msg.detach());
                }
                Some(Err(rdkafka::error::KafkaError::PartitionEOF(p))) => {
                    if self.positions.get(&p).is_some_and(|pos| !pos.seeking()) {
                        self.reached_end.insert(p);
                    }
                    if close.is_none() {
                        break;
                    }
                }
                Some(Err(e)) => {
                    tracing::debug!(sink = self.sink, error = %e, "sink poll");
                    if close.is_none() {
                        break;
                    }
                }
                None => break,
            }
            if close.is_some_and(|c| Instant::now() >= c) {
                break;
            }
        }
        batch
    }

    /// Decodes each record; records that do not decode are dead-lettered (with their bytes)
    /// before this returns. Returns (partition, offset, commit) in batch order.
    pub fn decode(&mut self, batch: &[OwnedMessage]) -> anyhow::Result<Vec<(i32, i64, Commit)>> {
        let mut out = Vec::with_capacity(batch.len());
        let mut dead = Decided::default();
        for msg in batch {
            let decoded = msg
                .payload()
                .ok_or_else(|| "null record".to_owned())
                .and_then(|b| decode::<Commit>(b, self.codec.as_ref()).map_err(|e| e.to_string()));
            match decoded {
                Ok(c) => out.push((msg.partition(), msg.offset(), c)),
                Err(e) => {
                    tracing::error!(sink = self.sink, partition = msg.partition(), offset = msg.offset(), error = %e, "outbox record does not decode; dead-lettered");
                    dead.out.push(dead_letter(
                        msg,
                        &self.topics.outbox,
                        UNDECODABLE,
                        e,
                        self.record_bytes_max,
                    ));
                    metrics::counter!(m::SINK_RECORDS_TOTAL, "sink" => self.sink, "result" => "deadletter")
                        .increment(1);
                }
            }
        }
        if !dead.out.is_empty() {
            self.deliver(&dead)?;
        }
        Ok(out)
    }

    /// Produces `d`'s records and waits for every delivery.
    pub fn deliver(&mut self, d: &Decided) -> anyhow::Result<()> {
        let sent = send(
            &self.producer,
            &self.topics,
            &mut self.next_id,
            d,
            self.delivery_timeout,
        );
        await_delivery(&self.deliveries, sent)
            .all_or_error()
            .map_err(anyhow::Error::msg)
    }

    /// Commits the group's offsets at the sink's positions (for lag; positions live in the
    /// sink's store).
    pub fn report_progress(
        &self,
        position_of: &dyn Fn(i32) -> anyhow::Result<i64>,
    ) -> anyhow::Result<()> {
        let mut tpl = TopicPartitionList::new();
        for p in self.positions.keys() {
            tpl.add_partition_offset(&self.topics.outbox, *p, Offset::Offset(position_of(*p)?))?;
        }
        if let Err(e) = self.consumer.commit(&tpl, CommitMode::Async) {
            tracing::debug!(sink = self.sink, error = %e, "sink offset commit");
        }
        Ok(())
    }

    /// Whether the reader has reached the end of every partition assigned to it at least once
    /// since they were assigned (an empty assignment counts once it arrived).
    pub fn caught_up(&self) -> bool {
        self.joined
            && self.coverage.unowned().is_empty()
            && self.positions.keys().all(|p| self.reached_end.contains(p))
    }

    /// The codec records are read (and sink outputs written) with.
    pub fn codec(&self) -> &Codec {
        &self.codec
    }

    /// Partitions of the outbox owned by no member of the sink's group (empty: none).
    pub fn unowned(&self) -> &[i32] {
        self.coverage.unowned()
    }

    /// Leaves the group.
    pub fn close(&self) {
        self.consumer.unsubscribe();
    }
}
