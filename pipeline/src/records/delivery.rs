//! Sending a decided batch and awaiting its delivery reports, per input partition.
//!
//! A batch holds the answers of several input partitions. A failure to write one record fails
//! that record's input partition only: the rest of its partition is not sent (so the outbox
//! never holds a commit after a missing one), every other partition goes on, and the report
//! says which partitions failed and whether the broker refused a commit for good (its size or
//! content) — that intent is then answered `rejected`, never retried.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use rdkafka::producer::BaseRecord;
use rdkafka::types::RDKafkaErrorCode;

use super::{OutKind, Outgoing};
use kledger_kafka::clients::{Delivery, DeliveryContext, Reach, send_waiting};
use kledger_kafka::topics::Topics;
use kledger_runtime::metrics as m;

/// Per record of a sent batch: its kind, input position, the intent's record time, and
/// whether its report arrived (or it was never handed to the producer).
#[derive(Debug, Clone, Copy)]
struct Slot {
    kind: OutKind,
    source: Option<(i32, i64)>,
    intent_time: Option<i64>,
    done: bool,
}

/// A batch handed to the producer.
#[derive(Debug)]
pub(crate) struct Sent {
    /// The id of the first record; record `i` of the batch has id `first + i`.
    first: u64,
    slots: Vec<Slot>,
    deadline: Instant,
    /// Input partitions that already failed while sending.
    failed: BTreeMap<i32, Failure>,
}

/// Why an input partition's share of a batch failed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Failure {
    /// The first error, for logs and status.
    pub reason: String,
    /// Input offsets whose answer (a commit, receipt or dead letter) the broker refused for
    /// good, with the reason.
    pub refused: BTreeMap<i64, String>,
}

impl Failure {
    fn note(&mut self, source: Option<(i32, i64)>, kind: OutKind, e: &str, permanent: bool) {
        if self.reason.is_empty() {
            self.reason = e.to_owned();
        }
        if let (true, Some((_, offset))) = (permanent, source) {
            self.refused
                .entry(offset)
                .or_insert_with(|| format!("{kind:?} record: {e}"));
        }
    }
}

/// What a batch's delivery came to.
#[derive(Debug, Default)]
pub(crate) struct Settled {
    /// The last outbox offset written per partition (of partitions that did not fail).
    pub outbox_last: BTreeMap<i32, i64>,
    /// The keys-topic offsets written per partition (data keys and their tombstones), in
    /// order: [`crate::apply`] follows whether its own records are all there is.
    pub keys_written: BTreeMap<i32, Vec<i64>>,
    /// Input partitions whose share failed ([`NO_INPUT`] for records answering no input).
    pub failed: BTreeMap<i32, Failure>,
}

/// The partition under which [`Settled::failed`] files records that answer no input (views).
pub(crate) const NO_INPUT: i32 = -1;

fn input_of(source: Option<(i32, i64)>) -> i32 {
    source.map_or(NO_INPUT, |(p, _)| p)
}

/// Whether a produce error is one a retry cannot fix: the record itself is refused.
pub(crate) fn permanent(code: Option<RDKafkaErrorCode>) -> bool {
    matches!(
        code,
        Some(
            RDKafkaErrorCode::MessageSizeTooLarge
                | RDKafkaErrorCode::InvalidMessageSize
                | RDKafkaErrorCode::InvalidRecord
                | RDKafkaErrorCode::PolicyViolation
                | RDKafkaErrorCode::InvalidMessage
        )
    )
}

/// Hands every record of `out` to the producer. Ids are taken from `next_id`. A record
/// the producer does not take fails its input partition; that partition's later records are
/// not sent, the other partitions' are.
pub(crate) fn send(
    producer: &kledger_kafka::clients::PolledProducer<DeliveryContext>,
    topics: &Topics,
    next_id: &mut u64,
    records: &[Outgoing],
    timeout: Duration,
) -> Sent {
    let first = *next_id;
    let deadline = Instant::now() + timeout;
    let mut slots = Vec::with_capacity(records.len());
    let mut failed: BTreeMap<i32, Failure> = BTreeMap::new();
    for out in records {
        *next_id += 1;
        let mut slot = Slot {
            kind: out.kind,
            source: out.source,
            intent_time: out.intent_time,
            done: false,
        };
        let input = input_of(out.source);
        if failed.contains_key(&input) {
            slot.done = true;
            slots.push(slot);
            continue;
        }
        let topic = out.topic(topics);
        let mut record: BaseRecord<'_, [u8], [u8], Box<u64>> =
            BaseRecord::with_opaque_to(topic, Box::new(*next_id - 1));
        if out.kind != OutKind::KeyTombstone {
            record = record.payload(out.payload.as_slice());
        }
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
        if let Err((e, code)) = send_waiting(producer, record, deadline) {
            slot.done = true;
            let why = format!("send to {topic}: {e}");
            failed
                .entry(input)
                .or_default()
                .note(out.source, out.kind, &why, permanent(code));
        }
        slots.push(slot);
    }
    Sent {
        first,
        slots,
        deadline,
        failed,
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// A producer's delivery reports. Two sends may be in flight at once (a batch, and the next
/// batch's data keys, [`crate::apply`]): a report of the later one that arrives while
/// the earlier is awaited is kept for it, not dropped. Reports of an earlier send that was
/// given up on (its deadline passed) are dropped when they come.
#[derive(Debug)]
pub(crate) struct Deliveries {
    rx: Receiver<Delivery>,
    /// Reports for sends after the one being awaited, by id. Bounded by the records of the
    /// sends in flight (at most one batch's data keys beyond the batch awaited).
    later: BTreeMap<u64, Delivery>,
    /// What a wait watches meanwhile (the processor's).
    watch: Option<Watch>,
}

/// How often a wait for reports looks at its [`Watch`].
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// What the processor's waits for delivery reports watch: a batch whose records cannot reach
/// the broker is awaited up to `processor.delivery_timeout_ms`, and the processor's loop, which
/// reports an unreachable broker, does not turn meanwhile; so the wait reports it (degraded)
/// once no broker has been reachable for `after`. The loop clears it when a broker is back.
#[derive(Debug, Clone)]
pub(crate) struct Watch {
    /// The consumer's reach.
    pub(crate) reach: Arc<Reach>,
    /// Where degraded is reported.
    pub(crate) status: Arc<kledger_runtime::status::Status>,
    /// `processor.degraded_after_ms`.
    pub(crate) after: Duration,
}

impl Watch {
    /// The processor's watch: `reach` reported to `status` after `processor.degraded_after_ms`.
    pub(crate) fn new(
        config: &kledger_runtime::config::Config,
        reach: Arc<Reach>,
        status: Arc<kledger_runtime::status::Status>,
    ) -> Self {
        Self {
            reach,
            status,
            after: Duration::from_millis(config.processor.degraded_after_ms),
        }
    }

    /// The degraded reason once no broker has been reachable for `after`.
    pub(crate) fn reason(&self) -> Option<String> {
        let d = self.reach.unreachable_for().filter(|d| *d >= self.after)?;
        Some(format!(
            "no broker has been reachable for {} s",
            d.as_secs()
        ))
    }

    fn check(&self) {
        if let Some(why) = self.reason() {
            self.status.set_degraded(Some(why));
        }
    }
}

impl Deliveries {
    /// Reports from `rx`.
    pub(crate) fn new(rx: Receiver<Delivery>) -> Self {
        Self {
            rx,
            later: BTreeMap::new(),
            watch: None,
        }
    }

    /// Reports from `rx`, looking at `watch` every second while waiting.
    pub(crate) fn watched(rx: Receiver<Delivery>, watch: Watch) -> Self {
        Self {
            watch: Some(watch),
            ..Self::new(rx)
        }
    }

    /// The next report with an id in `ids`, waiting until `deadline`; reports past `ids` are
    /// kept for their own send, reports before it dropped.
    fn next(&mut self, ids: std::ops::Range<u64>, deadline: Instant) -> Option<Delivery> {
        // Kept reports of sends before this one are stale.
        while let Some(entry) = self.later.first_entry() {
            if *entry.key() >= ids.start {
                if ids.contains(entry.key()) {
                    return Some(entry.remove());
                }
                break;
            }
            entry.remove();
        }
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let wait = if self.watch.is_some() {
                left.min(WATCH_EVERY)
            } else {
                left
            };
            let d = match self.rx.recv_timeout(wait) {
                Ok(d) => d,
                Err(RecvTimeoutError::Timeout) if wait < left => {
                    if let Some(w) = &self.watch {
                        w.check();
                    }
                    continue;
                }
                Err(_) => return None,
            };
            if ids.contains(&d.id) {
                return Some(d);
            }
            if d.id >= ids.end {
                self.later.insert(d.id, d);
            }
        }
    }
}

/// Waits for every report of `sent` (until its deadline): the last outbox offset per
/// partition that succeeded, and the partitions that failed (a record refused, a delivery
/// error, or no report in time).
pub(crate) fn await_delivery(deliveries: &mut Deliveries, mut sent: Sent) -> Settled {
    let mut outbox_last: BTreeMap<i32, i64> = BTreeMap::new();
    let mut keys_written: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    let latency = metrics::histogram!(m::APPLY_LATENCY_SECONDS);
    let mut pending = sent.slots.iter().filter(|s| !s.done).count();
    let ids = sent.first..sent.first + sent.slots.len() as u64;
    while pending > 0 {
        let Some(d) = deliveries.next(ids.clone(), sent.deadline) else {
            break;
        };
        let Some(slot) = usize::try_from(d.id - sent.first)
            .ok()
            .and_then(|i| sent.slots.get_mut(i))
        else {
            continue;
        };
        if std::mem::replace(&mut slot.done, true) {
            continue;
        }
        pending -= 1;
        match d.result {
            Ok((p, offset)) => {
                if slot.kind == OutKind::Outbox {
                    let e = outbox_last.entry(p).or_insert(offset);
                    *e = (*e).max(offset);
                }
                if matches!(slot.kind, OutKind::Key | OutKind::KeyTombstone) {
                    keys_written.entry(p).or_default().push(offset);
                }
                if let (OutKind::Receipt, Some(t)) = (slot.kind, slot.intent_time)
                    && t >= 0
                {
                    latency.record((now_ms() - t).max(0) as f64 / 1000.0);
                }
            }
            Err((e, code)) => {
                sent.failed.entry(input_of(slot.source)).or_default().note(
                    slot.source,
                    slot.kind,
                    &format!("delivery failed: {e}"),
                    permanent(code),
                );
            }
        }
    }
    // Records without a report by the deadline fail their partitions.
    for slot in sent.slots.iter().filter(|s| !s.done) {
        let f = sent.failed.entry(input_of(slot.source)).or_default();
        if f.reason.is_empty() {
            f.reason = "delivery timed out".into();
        }
    }
    let failed_outbox: BTreeSet<i32> = sent.failed.keys().copied().collect();
    outbox_last.retain(|p, _| !failed_outbox.contains(p));
    for offsets in keys_written.values_mut() {
        offsets.sort_unstable();
    }
    Settled {
        outbox_last,
        keys_written,
        failed: sent.failed,
    }
}

impl Settled {
    /// Everything was written, or the first failure's reason.
    pub(crate) fn all_or_error(&self) -> Result<(), String> {
        match self.failed.iter().next() {
            None => Ok(()),
            Some((p, f)) => Err(format!("partition {p}: {}", f.reason)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sent(first: u64, kinds: &[(OutKind, i32)], wait: Duration) -> Sent {
        Sent {
            first,
            slots: kinds
                .iter()
                .enumerate()
                .map(|(i, (kind, p))| Slot {
                    kind: *kind,
                    source: Some((*p, i as i64)),
                    intent_time: None,
                    done: false,
                })
                .collect(),
            deadline: Instant::now() + wait,
            failed: BTreeMap::new(),
        }
    }

    fn ok(id: u64, p: i32, offset: i64) -> Delivery {
        Delivery {
            id,
            result: Ok((p, offset)),
        }
    }

    /// A batch whose records cannot reach the broker is awaited until its deadline (the
    /// delivery timeout, a minute by default); the wait reports the processor degraded once no
    /// broker has been reachable for `after`, not only when the batch fails. With a broker
    /// reachable it reports nothing.
    #[test]
    fn a_wait_reports_an_unreachable_broker() {
        for (reach, reported) in [
            (
                Reach::down_since(Instant::now() - Duration::from_secs(40)),
                true,
            ),
            (Reach::default(), false),
        ] {
            let (_tx, rx) = std::sync::mpsc::channel();
            let status = Arc::new(kledger_runtime::status::Status::default());
            let mut deliveries = Deliveries::watched(
                rx,
                Watch {
                    reach: Arc::new(reach),
                    status: status.clone(),
                    after: Duration::from_secs(30),
                },
            );
            let batch = sent(0, &[(OutKind::Outbox, 0)], Duration::from_millis(1500));
            let settled = await_delivery(&mut deliveries, batch);
            assert_eq!(
                settled.all_or_error(),
                Err("partition 0: delivery timed out".into())
            );
            let why = status.degraded();
            assert_eq!(
                why.as_deref()
                    .is_some_and(|w| w.starts_with("no broker has been reachable for 4")),
                reported,
                "{why:?}"
            );
        }
    }

    /// A batch in flight and the next batch's data keys are awaited one after the other on one
    /// channel: the keys' reports that arrive first (or in between) are kept for them, and a
    /// stale report of a send given up on is dropped.
    #[test]
    fn reports_of_a_later_send_wait_for_it() {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut deliveries = Deliveries::new(rx);
        let batch = sent(
            10,
            &[(OutKind::Outbox, 0), (OutKind::Receipt, 0)],
            Duration::from_secs(5),
        );
        let keys = sent(
            12,
            &[(OutKind::Key, 3), (OutKind::Key, 3)],
            Duration::from_millis(300),
        );
        for d in [
            ok(13, 3, 8),
            ok(9, 0, 1),
            ok(10, 0, 100),
            ok(12, 3, 7),
            ok(11, 0, 101),
        ] {
            tx.send(d).expect("send");
        }
        let settled = await_delivery(&mut deliveries, batch);
        assert!(settled.failed.is_empty(), "{:?}", settled.failed);
        assert_eq!(settled.outbox_last, BTreeMap::from([(0, 100)]));
        let settled = await_delivery(&mut deliveries, keys);
        assert!(settled.failed.is_empty(), "{:?}", settled.failed);
        assert_eq!(settled.keys_written, BTreeMap::from([(3, vec![7, 8])]));
        assert!(deliveries.later.is_empty());
    }

    /// A send whose reports do not all come fails its partitions at its deadline; the reports
    /// kept for a later send are not lost by that wait.
    #[test]
    fn a_missing_report_fails_its_partition_and_keeps_later_ones() {
        let (tx, rx) = std::sync::mpsc::channel();
        let mut deliveries = Deliveries::new(rx);
        let batch = sent(
            0,
            &[(OutKind::Outbox, 1), (OutKind::Outbox, 2)],
            Duration::from_millis(200),
        );
        let keys = sent(2, &[(OutKind::Key, 4)], Duration::from_secs(5));
        tx.send(ok(2, 4, 50)).expect("send");
        tx.send(ok(0, 1, 9)).expect("send");
        let settled = await_delivery(&mut deliveries, batch);
        assert_eq!(settled.failed.keys().copied().collect::<Vec<_>>(), vec![2]);
        assert_eq!(settled.outbox_last, BTreeMap::from([(1, 9)]));
        let settled = await_delivery(&mut deliveries, keys);
        assert!(settled.failed.is_empty(), "{:?}", settled.failed);
        assert_eq!(settled.keys_written, BTreeMap::from([(4, vec![50])]));
    }
}
