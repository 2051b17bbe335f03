//! The source intake: the four source topics (`<prefix>.sources.{people,conversations,calendar,
//! screen}.v1`, key = account id) into the intents topic.
//!
//! A process with the `apply` role reads the source topics in the intake's consumer group
//! (`<group_id>-intake`, shared by every host) and forwards each document as the `source`
//! intent [`kledger_processors::sources::intent_for`] makes of it: keyed by its account, on
//! the account's murmur2 partition of the intents topic, with the source record's timestamp.
//! From there it is decided like every intent (validated, sealed, committed, answered by a
//! receipt, replayed by `replay verify`), so the intents topic stays the one input of state.
//!
//! - A record that does not decode as its topic's record (another schema, bytes that are not
//!   Avro, a tombstone) is dead-lettered with the decode error's code; one whose intent would be
//!   over the record budget is dead-lettered `oversize`. Nothing is dropped.
//! - At least once: a batch's offsets are committed only once every record it forwarded (and
//!   every dead letter) is delivered. A record forwarded again after a crash or a rebalance is
//!   the same intent (its action id is a digest of the account, the document, its access and
//!   version), so the processor answers it `duplicate`.
//! - Bounded: a batch holds at most `sources.intake_batch.records_max` records; its records
//!   wait for their delivery up to `processor.delivery_timeout_ms`, and a batch not delivered
//!   ends the run (the supervisor starts it again from the committed offsets).
//!
//! May not touch: state, projections, the processor's clients.

use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use anyhow::Context;
use kledger_processors::routing::partition_for;
use kledger_schemas::{SourceKind, decode_source};
use rdkafka::client::ClientContext;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext};
use rdkafka::error::KafkaResult;
use rdkafka::message::{Message, OwnedMessage};
use rdkafka::producer::BaseRecord;
use rdkafka::statistics::Statistics;
use rdkafka::{Offset, TopicPartitionList};

use crate::records::dead_letter;
use kledger_kafka::clients::{
    Delivery, DeliveryContext, PolledProducer, consumer_config, producer_config, send_waiting,
};
use kledger_kafka::codec::Codec;
use kledger_kafka::topics::Topics;
use kledger_runtime::config::Config;
use kledger_runtime::metrics as m;
use kledger_runtime::shutdown::Shutdown;

/// The intake's consumer group: `<group_id>-intake`, one for every host.
pub fn group(config: &Config) -> String {
    format!("{}-intake", config.kafka.group_id)
}

/// How long a poll for the first record of a batch waits (the shutdown is looked at between).
const POLL: Duration = Duration::from_millis(200);

/// Exports the intake's lag per source topic and partition from librdkafka's statistics.
struct IntakeContext {
    topics: Topics,
}

impl ClientContext for IntakeContext {
    fn stats(&self, stats: Statistics) {
        for source in SourceKind::ALL {
            let Some(t) = stats.topics.get(self.topics.source(source)) else {
                continue;
            };
            for (p, s) in &t.partitions {
                if *p >= 0 && s.consumer_lag >= 0 {
                    metrics::gauge!(m::INTAKE_LAG_RECORDS, "source" => source.as_str(), "partition" => p.to_string())
                        .set(s.consumer_lag as f64);
                }
            }
        }
    }
}

impl ConsumerContext for IntakeContext {
    fn commit_callback(&self, result: KafkaResult<()>, _offsets: &TopicPartitionList) {
        if let Err(e) = result {
            tracing::warn!(error = %e, "committing the intake's offsets failed; its records will be forwarded again (duplicates)");
        }
    }
}

/// What one record of a batch becomes.
enum Forward {
    /// The intent, its account (the key) and the source record's timestamp.
    Intent {
        key: String,
        payload: Vec<u8>,
        timestamp: Option<i64>,
    },
    /// A dead letter.
    Dead(crate::records::Outgoing),
}

/// The intake: a consumer of the source topics and a producer of intents and dead letters.
pub struct Intake {
    consumer: BaseConsumer<IntakeContext>,
    producer: PolledProducer<DeliveryContext>,
    reports: Receiver<Delivery>,
    topics: Topics,
    partitions: i32,
    codec: std::sync::Arc<Codec>,
    record_bytes_max: usize,
    batch_max: usize,
    batch_wait: Duration,
    delivery_timeout: Duration,
    next_id: u64,
}

impl std::fmt::Debug for Intake {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Intake")
            .field("sources", &self.topics.sources)
            .finish_non_exhaustive()
    }
}

impl Intake {
    /// Joins the intake's group on the source topics; intents go to `partitions` partitions.
    pub fn new(
        config: &Config,
        codec: std::sync::Arc<Codec>,
        partitions: i32,
    ) -> anyhow::Result<Self> {
        let topics = config.topics();
        let mut cc = consumer_config(config, "intake");
        cc.set("group.id", group(config));
        let consumer: BaseConsumer<IntakeContext> = cc
            .create_with_context(IntakeContext {
                topics: topics.clone(),
            })
            .context("intake consumer")?;
        let names: Vec<&str> = topics.sources.iter().map(String::as_str).collect();
        consumer
            .subscribe(&names)
            .context("subscribe to the source topics")?;
        let (tx, reports) = channel();
        let producer = producer_config(config, None)
            .create_with_context(DeliveryContext::new(tx))
            .context("intake producer")?;
        for source in SourceKind::ALL {
            for outcome in ["forwarded", "dead_lettered"] {
                metrics::counter!(m::INTAKE_RECORDS_TOTAL, "source" => source.as_str(), "outcome" => outcome)
                    .increment(0);
            }
        }
        Ok(Self {
            consumer,
            producer,
            reports,
            topics,
            partitions,
            codec,
            record_bytes_max: config.limits.record_bytes_max,
            batch_max: config.sources.intake_batch.records_max.max(1),
            batch_wait: Duration::from_millis(config.sources.intake_batch.wait_ms),
            delivery_timeout: Duration::from_millis(config.processor.delivery_timeout_ms),
            next_id: 0,
        })
    }

    /// Forwards batches until `shutdown`; an error (a batch not delivered, a broker that
    /// refuses) ends the run with nothing committed past the last delivered batch.
    pub fn run(mut self, shutdown: &Shutdown) -> anyhow::Result<()> {
        while !shutdown.is_triggered() {
            let batch = self.next_batch()?;
            if !batch.is_empty() {
                self.forward(&batch)?;
            }
        }
        Ok(())
    }

    /// Up to `batch_max` records: the first waits up to [`POLL`], the rest up to the batch's
    /// wait after it.
    fn next_batch(&mut self) -> anyhow::Result<Vec<OwnedMessage>> {
        let mut batch = Vec::new();
        let mut closes: Option<Instant> = None;
        while batch.len() < self.batch_max {
            let wait = match closes {
                None => POLL,
                Some(at) => {
                    let left = at.saturating_duration_since(Instant::now());
                    if left.is_zero() {
                        break;
                    }
                    left
                }
            };
            match self.consumer.poll(wait) {
                None if closes.is_none() => break,
                None => continue,
                Some(Ok(msg)) => {
                    batch.push(msg.detach());
                    closes.get_or_insert_with(|| Instant::now() + self.batch_wait);
                }
                Some(Err(e)) => {
                    tracing::warn!(error = %e, "intake consumer");
                    if closes.is_none() {
                        break;
                    }
                }
            }
        }
        Ok(batch)
    }

    /// What `msg` becomes: its intent, or its dead letter.
    fn forward_of(&self, msg: &OwnedMessage) -> (SourceKind, Forward) {
        let source = self
            .topics
            .source_of(msg.topic())
            .unwrap_or(SourceKind::People);
        let dead = |code: &'static str, why: String| {
            Forward::Dead(dead_letter(
                msg,
                msg.topic(),
                code,
                why,
                self.record_bytes_max,
            ))
        };
        let (account, version, op) = match decode_source(
            source,
            msg.payload().unwrap_or_default(),
            self.codec.as_ref(),
        ) {
            Ok(parts) => parts,
            Err(e) => return (source, dead(e.code(), e.to_string())),
        };
        let intent = kledger_processors::sources::intent_for(&account, op, version.as_deref());
        let payload = self.codec.encode(&intent);
        if payload.len() > self.record_bytes_max {
            let why = format!(
                "the document's intent is {} bytes, over the record budget of {} bytes",
                payload.len(),
                self.record_bytes_max
            );
            return (source, dead("oversize", why));
        }
        let timestamp = msg.timestamp().to_millis();
        (
            source,
            Forward::Intent {
                key: account,
                payload,
                timestamp,
            },
        )
    }

    /// Forwards `batch` (intents and dead letters), waits for every delivery, then commits the
    /// batch's offsets.
    fn forward(&mut self, batch: &[OwnedMessage]) -> anyhow::Result<()> {
        let deadline = Instant::now() + self.delivery_timeout;
        let mut pending = BTreeMap::new();
        for msg in batch {
            let (source, fwd) = self.forward_of(msg);
            let id = self.next_id;
            self.next_id += 1;
            let outcome = match fwd {
                Forward::Intent {
                    key,
                    payload,
                    timestamp,
                } => {
                    let mut rec = BaseRecord::with_opaque_to(&self.topics.intents, Box::new(id))
                        .key(key.as_bytes())
                        .payload(payload.as_slice())
                        .partition(partition_for(key.as_bytes(), self.partitions));
                    if let Some(t) = timestamp {
                        rec = rec.timestamp(t);
                    }
                    send_waiting(&self.producer, rec, deadline)
                        .map_err(|(e, _)| anyhow::anyhow!("forwarding to the intents: {e}"))?;
                    "forwarded"
                }
                Forward::Dead(out) => {
                    let mut rec = BaseRecord::with_opaque_to(&self.topics.deadletter, Box::new(id))
                        .payload(out.payload.as_slice());
                    if let Some(k) = &out.key {
                        rec = rec.key(k.as_slice());
                    }
                    if let Some(h) = out.kafka_headers() {
                        rec = rec.headers(h);
                    }
                    send_waiting(&self.producer, rec, deadline)
                        .map_err(|(e, _)| anyhow::anyhow!("dead-lettering: {e}"))?;
                    let code = out
                        .headers
                        .first()
                        .map(|(_, v)| v.clone())
                        .unwrap_or_default();
                    tracing::warn!(topic = msg.topic(), partition = msg.partition(), offset = msg.offset(), code = %code, "a source record is dead-lettered");
                    metrics::counter!(m::DEADLETTERS_TOTAL, "code" => code).increment(1);
                    "dead_lettered"
                }
            };
            pending.insert(id, (source, outcome));
        }
        while !pending.is_empty() {
            let left = deadline.saturating_duration_since(Instant::now());
            let d = self.reports.recv_timeout(left).map_err(|_| {
                anyhow::anyhow!(
                    "{} forwarded source records not delivered in {:?}",
                    pending.len(),
                    self.delivery_timeout
                )
            })?;
            let Some((source, outcome)) = pending.remove(&d.id) else {
                continue;
            };
            d.result
                .map_err(|(e, _)| anyhow::anyhow!("forwarding a source record: {e}"))?;
            metrics::counter!(m::INTAKE_RECORDS_TOTAL, "source" => source.as_str(), "outcome" => outcome)
                .increment(1);
        }
        let mut next: BTreeMap<(&str, i32), i64> = BTreeMap::new();
        for msg in batch {
            let e = next.entry((msg.topic(), msg.partition())).or_insert(0);
            *e = (*e).max(msg.offset() + 1);
        }
        let mut tpl = TopicPartitionList::new();
        for ((topic, p), offset) in next {
            tpl.add_partition_offset(topic, p, Offset::Offset(offset))
                .context("offsets to commit")?;
        }
        self.consumer
            .commit(&tpl, CommitMode::Async)
            .context("commit the intake's offsets")?;
        Ok(())
    }
}
