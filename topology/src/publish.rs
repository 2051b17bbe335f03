//! `kledger publish`: intent records as JSON lines → Avro → the intents topic, keyed by account,
//! on the murmur2 partition, with the line's timestamp as the record timestamp.

use std::collections::BTreeSet;
use std::io::BufRead;
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use anyhow::Context;
use kledger_processors::routing::partition_for;
use kledger_schemas::IntentRecord;
use kledger_schemas::avro::encode_single_object;
use rdkafka::producer::{BaseRecord, Producer, ThreadedProducer};

use crate::config::Config;
use crate::runtime::clients::{DeliveryContext, producer_config, send_waiting};

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

/// Publishes every line of `input` to the intents topic (with `partitions` partitions).
/// Blocking.
pub fn publish(
    config: &Config,
    partitions: i32,
    input: &mut dyn BufRead,
    progress: bool,
) -> anyhow::Result<PublishSummary> {
    let topics = config.topics();
    let (tx, rx) = channel();
    let producer: ThreadedProducer<DeliveryContext> = producer_config(config, None)
        .create_with_context(DeliveryContext::new(tx))
        .context("create producer")?;
    let bar = crate::progress::bar(None, "intents published", progress);
    let mut summary = PublishSummary::default();
    let mut sent: BTreeSet<u64> = BTreeSet::new();
    let mut line = String::new();
    let mut n = 0u64;
    let mut next_id = 0u64;
    loop {
        line.clear();
        if input.read_line(&mut line)? == 0 {
            break;
        }
        n += 1;
        let text = line.trim();
        if text.is_empty() {
            continue;
        }
        let record: IntentRecord = match serde_json::from_str(text) {
            Ok(r) => r,
            Err(e) => {
                summary.invalid_total += 1;
                if summary.invalid.len() < 20 {
                    summary.invalid.push((n, e.to_string()));
                }
                continue;
            }
        };
        let key = record.intent.account_id.as_bytes();
        let payload = encode_single_object(&record.intent);
        let id = next_id;
        next_id += 1;
        let rec = BaseRecord::with_opaque_to(&topics.intents, Box::new(id))
            .key(key)
            .payload(payload.as_slice())
            .partition(partition_for(key, partitions))
            .timestamp(record.timestamp);
        let deadline = Instant::now() + Duration::from_secs(60);
        send_waiting(&producer, rec, deadline)
            .map_err(|e| anyhow::anyhow!("send line {n}: {e}"))?;
        sent.insert(id);
        while let Ok(d) = rx.try_recv() {
            sent.remove(&d.id);
            d.result
                .map_err(|e| anyhow::anyhow!("delivery failed: {e}"))?;
            summary.published += 1;
            bar.inc(1);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while !sent.is_empty() {
        let d = rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .map_err(|_| anyhow::anyhow!("{} records not delivered", sent.len()))?;
        sent.remove(&d.id);
        d.result
            .map_err(|e| anyhow::anyhow!("delivery failed: {e}"))?;
        summary.published += 1;
        bar.inc(1);
    }
    producer.flush(Duration::from_secs(10)).context("flush")?;
    bar.finish_and_clear();
    Ok(summary)
}
