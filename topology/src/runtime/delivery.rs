//! Sending a decided batch and awaiting its delivery reports.

use std::collections::BTreeMap;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use rdkafka::producer::{BaseRecord, ThreadedProducer};

use super::batch::{Decided, OutKind};
use super::clients::{Delivery, DeliveryContext, send_waiting};
use crate::metrics as m;
use crate::topics::Topics;

/// A batch handed to the producer.
#[derive(Debug)]
pub struct Sent {
    /// The id of the first record; record `i` of the batch has id `first + i`.
    first: u64,
    /// Per record: its kind, the intent's record time, and whether its report arrived.
    kinds: Vec<(OutKind, Option<i64>, bool)>,
    deadline: Instant,
}

/// Hands every record of `decided` to the producer. Ids are taken from `next_id`.
pub fn send(
    producer: &ThreadedProducer<DeliveryContext>,
    topics: &Topics,
    next_id: &mut u64,
    decided: &Decided,
    timeout: Duration,
) -> Result<Sent, String> {
    let first = *next_id;
    let deadline = Instant::now() + timeout;
    let mut kinds = Vec::with_capacity(decided.out.len());
    for out in &decided.out {
        let id = *next_id;
        *next_id += 1;
        kinds.push((out.kind, out.intent_time, false));
        let topic = out.topic(topics);
        let mut record: BaseRecord<'_, [u8], [u8], Box<u64>> =
            BaseRecord::with_opaque_to(topic, Box::new(id)).payload(out.payload.as_slice());
        if let Some(k) = &out.key {
            record = record.key(k.as_slice());
        }
        if let Some(p) = out.partition {
            record = record.partition(p);
        }
        if let Some(t) = out.timestamp {
            record = record.timestamp(t);
        }
        if let Some(h) = out.kafka_headers() {
            record = record.headers(h);
        }
        send_waiting(producer, record, deadline).map_err(|e| format!("send to {topic}: {e}"))?;
    }
    Ok(Sent {
        first,
        kinds,
        deadline,
    })
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Waits for every report of `sent`. Returns the last outbox offset per partition.
pub fn await_delivery(
    deliveries: &Receiver<Delivery>,
    sent: &mut Sent,
) -> Result<BTreeMap<i32, i64>, String> {
    let mut outbox_last: BTreeMap<i32, i64> = BTreeMap::new();
    let latency = metrics::histogram!(m::APPLY_LATENCY_SECONDS);
    let mut pending = sent.kinds.len();
    while pending > 0 {
        let left = sent.deadline.saturating_duration_since(Instant::now());
        let d = deliveries
            .recv_timeout(left)
            .map_err(|_| "delivery timed out".to_owned())?;
        // A report of an earlier, failed batch has a smaller id.
        let Some(i) = d.id.checked_sub(sent.first) else {
            continue;
        };
        let Some((kind, intent_time, seen)) =
            usize::try_from(i).ok().and_then(|i| sent.kinds.get_mut(i))
        else {
            continue;
        };
        if std::mem::replace(seen, true) {
            continue;
        }
        pending -= 1;
        let (p, offset) = d.result.map_err(|e| format!("delivery failed: {e}"))?;
        if *kind == OutKind::Outbox {
            let e = outbox_last.entry(p).or_insert(offset);
            *e = (*e).max(offset);
        }
        if let (OutKind::Receipt, Some(t)) = (*kind, *intent_time)
            && t >= 0
        {
            latency.record((now_ms() - t).max(0) as f64 / 1000.0);
        }
    }
    Ok(outbox_last)
}
