//! `kledger publish`: intent records as JSON lines → Avro → the intents topic, keyed by account,
//! on the murmur2 partition, with the line's timestamp as the record timestamp; with `--kind`,
//! source documents → Avro → their source topic, keyed by account.

use std::collections::BTreeSet;
use std::io::BufRead;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use anyhow::Context;
use kledger_processors::routing::partition_for;
use kledger_schemas::{IntentRecord, SourceEnvelope, SourceKind};
use rdkafka::producer::{BaseRecord, Producer};

use kledger_kafka::clients::{DeliveryContext, producer_config, send_waiting};
use kledger_runtime::config::Config;

/// One source document line of `kind`, ready for its topic.
struct SourceLine {
    account: String,
    timestamp: i64,
    version: Option<String>,
    op: kledger_schemas::SourceOp,
}

/// Parses one source document line of `kind`.
fn source_line(text: &str, kind: SourceKind) -> Result<SourceLine, String> {
    let env: SourceEnvelope = serde_json::from_str(text).map_err(|e| e.to_string())?;
    let account = env
        .account_id
        .clone()
        .ok_or("a source document line needs account_id")?;
    let timestamp = env.record_time(kind)?.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64)
    });
    let version = env.version.clone();
    let op = env.op(kind)?;
    Ok(SourceLine {
        account,
        timestamp,
        version,
        op,
    })
}

/// What a publish did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PublishSummary {
    /// Records delivered.
    pub published: u64,
    /// Lines that are not intent records (not sent), with their line numbers (first 20).
    pub invalid: Vec<(u64, String)>,
    /// Count of invalid lines.
    pub invalid_total: u64,
}

/// Sends intent records to the intents topic (murmur2 partition of the account, the record's
/// timestamp as the Kafka timestamp) and tracks their delivery. Blocking.
pub struct Publisher {
    producer: kledger_kafka::clients::PolledProducer<DeliveryContext>,
    reports: Receiver<kledger_kafka::clients::Delivery>,
    topic: String,
    topics: kledger_kafka::topics::Topics,
    partitions: i32,
    in_flight: BTreeSet<u64>,
    next_id: u64,
    codec: kledger_kafka::codec::Codec,
    record_bytes_max: usize,
}

impl std::fmt::Debug for Publisher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Publisher")
            .field("topic", &self.topic)
            .field("in_flight", &self.in_flight.len())
            .finish()
    }
}

impl Publisher {
    /// A publisher to the configured intents topic of `partitions` partitions (registering
    /// the schemas when a registry is configured).
    pub fn new(config: &Config, partitions: i32) -> anyhow::Result<Self> {
        let (tx, reports) = channel();
        let producer = producer_config(config, None)
            .create_with_context(DeliveryContext::new(tx))
            .context("create producer")?;
        Ok(Self {
            producer,
            reports,
            topic: config.topics().intents,
            topics: config.topics(),
            partitions,
            in_flight: BTreeSet::new(),
            next_id: 0,
            codec: kledger_kafka::codec::Codec::connect(config)?,
            record_bytes_max: config.limits.record_bytes_max,
        })
    }

    /// Why `record` cannot be sent: its encoding is over the record budget (the processor
    /// would dead-letter it as `oversize`).
    pub fn refuses(&self, record: &IntentRecord) -> Option<String> {
        let n = self.codec.encode(&record.intent).len();
        (n > self.record_bytes_max).then(|| {
            format!(
                "the intent's record is {n} bytes, over the record budget of {} bytes",
                self.record_bytes_max
            )
        })
    }

    /// Sends one record (waiting while the producer queue is full, up to 60 s); returns how
    /// many earlier records were confirmed delivered meanwhile.
    pub fn send(&mut self, record: &IntentRecord) -> anyhow::Result<u64> {
        let key = record.intent.account_id.as_bytes();
        let payload = self.codec.encode(&record.intent);
        let p = Some(partition_for(key, self.partitions));
        let topic = self.topic.clone();
        self.send_to(&topic, key, &payload, p, record.timestamp)
    }

    /// Why the source document `line` cannot be sent: its record, or the intent the intake
    /// would make of it, is over the record budget (it would be dead-lettered `oversize`).
    fn refuses_source(&self, line: &SourceLine) -> Option<String> {
        let record = self
            .codec
            .encode_source(&line.account, line.version.as_deref(), &line.op);
        let intent = kledger_processors::sources::intent_for(
            &line.account,
            line.op.clone(),
            line.version.as_deref(),
        );
        let n = record.len().max(self.codec.encode(&intent).len());
        (n > self.record_bytes_max).then(|| {
            format!(
                "the document's record is {n} bytes, over the record budget of {} bytes",
                self.record_bytes_max
            )
        })
    }

    /// Sends a source document to its source topic, keyed by its account (the producer's
    /// murmur2 partitioner picks the partition).
    fn send_source(&mut self, line: &SourceLine) -> anyhow::Result<u64> {
        let payload = self
            .codec
            .encode_source(&line.account, line.version.as_deref(), &line.op);
        let topic = self.topics.source(line.op.doc.source()).to_owned();
        self.send_to(
            &topic,
            line.account.as_bytes(),
            &payload,
            None,
            line.timestamp,
        )
    }

    /// Sends `payload` keyed `key` to `topic` (on `partition`, else the partitioner's).
    fn send_to(
        &mut self,
        topic: &str,
        key: &[u8],
        payload: &[u8],
        partition: Option<i32>,
        timestamp: i64,
    ) -> anyhow::Result<u64> {
        let id = self.next_id;
        self.next_id += 1;
        let mut rec = BaseRecord::with_opaque_to(topic, Box::new(id))
            .key(key)
            .payload(payload)
            .timestamp(timestamp);
        if let Some(p) = partition {
            rec = rec.partition(p);
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        send_waiting(&self.producer, rec, deadline)
            .map_err(|(e, _)| anyhow::anyhow!("send: {e}"))?;
        self.in_flight.insert(id);
        let mut done = 0;
        while let Ok(d) = self.reports.try_recv() {
            self.in_flight.remove(&d.id);
            d.result
                .map_err(|(e, _)| anyhow::anyhow!("delivery failed: {e}"))?;
            done += 1;
        }
        Ok(done)
    }

    /// Waits (up to 120 s) until every record sent is delivered; calls `delivered` per record.
    pub fn finish(self, delivered: &dyn Fn()) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut in_flight = self.in_flight;
        while !in_flight.is_empty() {
            let d = self
                .reports
                .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                .map_err(|_| anyhow::anyhow!("{} records not delivered", in_flight.len()))?;
            in_flight.remove(&d.id);
            d.result
                .map_err(|(e, _)| anyhow::anyhow!("delivery failed: {e}"))?;
            delivered();
        }
        self.producer
            .flush(Duration::from_secs(10))
            .context("flush")?;
        Ok(())
    }
}

/// Publishes every line of `input`: intent records to the intents topic (with `partitions`
/// partitions), or with `kind` source documents of that kind
/// ([`kledger_schemas::SourceEnvelope`]) to that source's topic, from which the intake
/// forwards each as the intent [`kledger_processors::sources::intent_for`] makes
/// ([`crate::intake`]). Blocking.
pub fn publish(
    config: &Config,
    partitions: i32,
    input: &mut dyn BufRead,
    kind: Option<SourceKind>,
    progress: bool,
) -> anyhow::Result<PublishSummary> {
    let mut publisher = Publisher::new(config, partitions)?;
    let bar = kledger_runtime::progress::bar(None, "intents published", progress);
    let mut summary = PublishSummary::default();
    let mut line = Vec::new();
    let mut n = 0u64;
    let invalid = |summary: &mut PublishSummary, n: u64, why: String| {
        summary.invalid_total += 1;
        if summary.invalid.len() < 20 {
            summary.invalid.push((n, why));
        }
    };
    // A line may hold a record at the budget written as JSON with every character escaped.
    let line_max = config.limits.record_bytes_max.saturating_mul(6);
    while let Some(fits) = kledger_runtime::lines::read_line_bounded(input, &mut line, line_max)? {
        n += 1;
        if !fits {
            invalid(
                &mut summary,
                n,
                format!("line longer than {line_max} bytes"),
            );
            continue;
        }
        let text = String::from_utf8_lossy(&line);
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let sent = match kind {
            None => serde_json::from_str::<IntentRecord>(text)
                .map_err(|e| e.to_string())
                .and_then(|r| match publisher.refuses(&r) {
                    Some(why) => Err(why),
                    None => Ok(Ok(r)),
                }),
            Some(kind) => {
                source_line(text, kind).and_then(|l| match publisher.refuses_source(&l) {
                    Some(why) => Err(why),
                    None => Ok(Err(l)),
                })
            }
        };
        let done = match sent {
            Ok(Ok(record)) => publisher.send(&record),
            Ok(Err(line)) => publisher.send_source(&line),
            Err(e) => {
                invalid(&mut summary, n, e);
                continue;
            }
        }
        .with_context(|| format!("line {n}"))?;
        summary.published += done;
        bar.inc(done);
    }
    let late = std::cell::Cell::new(0u64);
    publisher.finish(&|| {
        late.set(late.get() + 1);
        bar.inc(1);
    })?;
    summary.published += late.get();
    bar.finish_and_clear();
    Ok(summary)
}
