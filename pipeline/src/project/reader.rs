//! Reading the outbox for a sink: its own consumer group, positions from the sink's store
//! (not the group's offsets), records in order per partition, batches bounded in records and
//! time, dead letters for records that do not decode, and group offsets committed last (they
//! only report lag).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use anyhow::Context;
use kledger_schemas::Commit;
use kledger_schemas::avro::decode;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::{Message, OwnedMessage};
use rdkafka::{Offset, TopicPartitionList};

use super::{OutboxCommit, Outputs};
use crate::records::delivery::{Deliveries, await_delivery, send};
use crate::records::{Outgoing, dead_letter};
use kledger_kafka::clients::{
    DeliveryContext, EventContext, Reach, RebalanceEvent, consumer_config, coverage_config,
    producer_config,
};
use kledger_kafka::codec::Codec;
use kledger_kafka::coverage::{Coverage, CoverageWatch};
use kledger_kafka::reader::{BatchBounds, PartitionReader};
use kledger_kafka::topics::Topics;
use kledger_runtime::config::Config;
use kledger_runtime::metrics as m;

/// Dead-letter code of an outbox record a sink cannot decode.
pub(crate) const UNDECODABLE: &str = "sink_undecodable";

/// The outbox side of a sink.
pub struct OutboxReader {
    sink: &'static str,
    delivery_timeout: Duration,
    /// Topic names.
    pub topics: Topics,
    reader: PartitionReader<EventContext>,
    events: Receiver<RebalanceEvent>,
    producer: kledger_kafka::clients::PolledProducer<DeliveryContext>,
    deliveries: Deliveries,
    next_id: u64,
    codec: Arc<Codec>,
    /// An assignment arrived (possibly empty).
    joined: bool,
    /// The record budget (dead letters carry at most this much of a record).
    record_bytes_max: usize,
    /// Whether the sink's group owns every outbox partition (checked on its own thread).
    coverage: CoverageWatch,
    /// Whether the consumer reached a broker at its last statistics report.
    reach: Arc<Reach>,
}

impl std::fmt::Debug for OutboxReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutboxReader")
            .field("sink", &self.sink)
            .field("reader", &self.reader)
            .finish_non_exhaustive()
    }
}

impl OutboxReader {
    /// Connects a consumer in the sink's group ([`Config::sink_group`], subscribed to the
    /// outbox) and a
    /// producer for the sink's outputs; records are read with `codec`.
    pub fn new(
        config: &Config,
        sink: &'static str,
        bounds: BatchBounds,
        codec: Arc<Codec>,
    ) -> anyhow::Result<Self> {
        let topics = config.topics();
        let (ev_tx, events) = channel();
        // The client id names the sink (`kledger-<sink>-…`), so broker logs tell it apart.
        let mut cc = consumer_config(config, sink);
        // Per host for a replica (views, vectors on the embedded engine), shared otherwise.
        let group = config.sink_group(sink);
        cc.set("group.id", &group)
            // End-of-partition reports tell when the sink has caught up (readiness).
            .set("enable.partition.eof", "true");
        let coverage = CoverageWatch::start(
            &coverage_config(config, sink, &group),
            Coverage::new(sink, &group, &topics.outbox, config.kafka.partitions),
        )?;
        let context = EventContext::for_sink(ev_tx, topics.outbox.clone(), sink);
        let reach = context.reach();
        let consumer: BaseConsumer<EventContext> = cc
            .create_with_context(context)
            .with_context(|| format!("{sink} sink consumer"))?;
        let reader = PartitionReader::group(consumer, &topics.outbox, sink, bounds)?;
        let (dl_tx, deliveries) = channel();
        let producer = producer_config(config, None)
            .create_with_context(DeliveryContext::new(dl_tx))
            .with_context(|| format!("{sink} sink producer"))?;
        Ok(Self {
            sink,
            delivery_timeout: Duration::from_millis(config.processor.delivery_timeout_ms),
            topics,
            reader,
            events,
            producer,
            deliveries: Deliveries::new(deliveries),
            next_id: 0,
            joined: false,
            codec,
            record_bytes_max: config.limits.record_bytes_max,
            coverage,
            reach,
        })
    }

    /// Whether the consumer reached no broker at its last statistics report (every 5 s);
    /// `None` before the first report.
    pub fn broker_unreachable(&self) -> Option<bool> {
        self.reach.reported_unreachable()
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
                    let mut tpl = TopicPartitionList::new();
                    for &p in &ps {
                        tpl.add_partition(&self.topics.outbox, p);
                    }
                    self.reader.consumer().resume(&tpl).context("resume")?;
                    for p in ps {
                        self.reader.start(p, position_of(p)?, "assigned");
                    }
                }
                RebalanceEvent::Revoked(ps) => {
                    for p in ps {
                        self.reader.stop(p);
                    }
                }
                RebalanceEvent::Error(e) => {
                    tracing::warn!(sink = self.sink, error = %e, "sink rebalance failed")
                }
            }
        }
        if self.joined {
            let mine: BTreeSet<i32> = self.reader.reading().collect();
            self.coverage.set_mine(mine);
            if self.coverage.take_rejoin() {
                tracing::warn!(sink = self.sink, unowned = ?self.coverage.unowned(), "leaving and joining the sink's group again");
                self.reader.rejoin()?;
            }
        }
        Ok(())
    }

    /// The next batch: records that continue each assigned partition's position, in order.
    pub fn next_batch(&mut self) -> anyhow::Result<Vec<OwnedMessage>> {
        Ok(self.reader.next_batch())
    }

    /// Decodes each record; records that do not decode are dead-lettered (with their bytes)
    /// before this returns. Returns the commits in batch order.
    pub fn decode(&mut self, batch: &[OwnedMessage]) -> anyhow::Result<Vec<OutboxCommit>> {
        let mut out = Vec::with_capacity(batch.len());
        let mut dead = Vec::new();
        for msg in batch {
            let decoded = msg
                .payload()
                .ok_or_else(|| "null record".to_owned())
                .and_then(|b| decode::<Commit>(b, self.codec.as_ref()).map_err(|e| e.to_string()));
            match decoded {
                Ok(commit) => out.push(OutboxCommit {
                    partition: msg.partition(),
                    offset: msg.offset(),
                    commit,
                }),
                Err(e) => {
                    tracing::error!(sink = self.sink, partition = msg.partition(), offset = msg.offset(), error = %e, "outbox record does not decode; dead-lettered");
                    dead.push(dead_letter(
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
        if !dead.is_empty() {
            self.deliver_all(&dead)?;
        }
        Ok(out)
    }

    /// Produces `records` and waits for every delivery.
    fn deliver_all(&mut self, records: &[Outgoing]) -> anyhow::Result<()> {
        let sent = send(
            &self.producer,
            &self.topics,
            &mut self.next_id,
            records,
            self.delivery_timeout,
        );
        await_delivery(&mut self.deliveries, sent)
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
        for p in self.reader.reading() {
            tpl.add_partition_offset(&self.topics.outbox, p, Offset::Offset(position_of(p)?))?;
        }
        if let Err(e) = self.reader.consumer().commit(&tpl, CommitMode::Async) {
            tracing::debug!(sink = self.sink, error = %e, "sink offset commit");
        }
        Ok(())
    }

    /// Whether the reader has reached the end of every partition assigned to it at least once
    /// since they were assigned (an empty assignment counts once it arrived).
    pub fn caught_up(&self) -> bool {
        self.joined
            && self.coverage.unowned().is_empty()
            && self.reader.reading().all(|p| self.reader.reached_end(p))
    }

    /// Partitions of the outbox owned by no member of the sink's group (empty: none).
    pub fn unowned(&self) -> Vec<i32> {
        self.coverage.unowned()
    }

    /// Leaves the group.
    pub fn close(&self) {
        self.reader.leave();
    }
}

impl Outputs for OutboxReader {
    fn deliver(&mut self, records: &[Outgoing]) -> anyhow::Result<()> {
        self.deliver_all(records)
    }

    fn codec(&self) -> &Codec {
        &self.codec
    }

    fn in_reach(&self) -> bool {
        !self.reach.unreachable()
    }
}
