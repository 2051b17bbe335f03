//! One batch: classify each input record (intent or dead letter), decide the intents against
//! state plus the batch's pending writes, and build the records to produce.

use std::collections::BTreeMap;

use kledger_processors::routing::partition_for;
use kledger_processors::{Code, Reason, RecordMeta};
use kledger_schemas::avro::{SchemaLookup, decode};
use kledger_schemas::{Commit, Intent, Outcome};
use kledger_state::{Applier, Layered, StateError, StateRead, WriteSet};
use rdkafka::message::{Message, OwnedMessage};

use kledger_kafka::codec::Codec;
use kledger_kafka::topics::Topics;

pub use crate::records::{OutKind, Outgoing, dead_letter};

/// One input partition's share of a decided batch.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PartDecided {
    /// The next input offset.
    pub next_offset: i64,
    /// Input records decided.
    pub records: usize,
    /// Outcomes, for metrics.
    pub outcomes: BTreeMap<Outcome, u64>,
    /// Dead letters by code, for metrics.
    pub deadletters: BTreeMap<&'static str, u64>,
    /// Intents rejected because their commit is over the record budget.
    pub too_large: u64,
}

impl PartDecided {
    /// Adds another group's share of the same partition ([`decide_parallel`]).
    pub fn absorb(&mut self, other: PartDecided) {
        self.next_offset = self.next_offset.max(other.next_offset);
        self.records += other.records;
        for (o, n) in other.outcomes {
            *self.outcomes.entry(o).or_insert(0) += n;
        }
        for (c, n) in other.deadletters {
            *self.deadletters.entry(c).or_insert(0) += n;
        }
        self.too_large += other.too_large;
    }
}

/// The decided batch.
#[derive(Debug, Default)]
pub struct Decided {
    /// Data keys of new rows (rules v4): written, and delivered, before `out`.
    pub keys: Vec<Outgoing>,
    /// Records to produce, in order.
    pub out: Vec<Outgoing>,
    /// Each input partition's share.
    pub parts: BTreeMap<i32, PartDecided>,
}

impl Decided {
    /// The next input offset per partition.
    pub fn next_offsets(&self) -> BTreeMap<i32, i64> {
        self.parts
            .iter()
            .map(|(p, d)| (*p, d.next_offset))
            .collect()
    }

    /// Keeps only the shares of input partitions `keep` accepts (records answering other
    /// partitions are dropped).
    pub fn retain_partitions(&mut self, keep: impl Fn(i32) -> bool) {
        self.keys.retain(|o| o.source.is_none_or(|(p, _)| keep(p)));
        self.out.retain(|o| o.source.is_none_or(|(p, _)| keep(p)));
        self.parts.retain(|p, _| keep(*p));
    }
}

/// Input positions whose answer the broker refused for good (size or content), with how many
/// times: the intent there is answered `rejected` (`record_refused`), not decided again.
pub type Refused = BTreeMap<(i32, i64), RefusedAt>;

/// Why and how often the answer to one input record was refused. Each refusal answers with
/// less: first a rejected receipt and a dead letter with the record's bytes, then a dead
/// letter of headers only, then the receipt alone, then nothing (the position moves on), so a
/// broker that refuses everything for one record can never hold its partition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RefusedAt {
    /// The first refusal's reason.
    pub reason: String,
    /// Refusals so far (1 after the first).
    pub times: u32,
}

/// Why an input record is not an intent (dead-letter code, message). A record over the
/// budget `record_bytes_max` is `oversize`.
fn classify(
    msg: &OwnedMessage,
    partitions: i32,
    lookup: &dyn SchemaLookup,
    record_bytes_max: usize,
) -> Result<Intent, (&'static str, String)> {
    let Some(payload) = msg.payload().filter(|p| !p.is_empty()) else {
        return Err(("null_value", "empty or null record".into()));
    };
    if payload.len() > record_bytes_max {
        return Err((
            "oversize",
            format!(
                "record of {} bytes exceeds the record budget of {record_bytes_max} bytes",
                payload.len()
            ),
        ));
    }
    // A null key is read as the empty key: Kafka clients and brokers do not all keep the
    // difference, and the intent's own validation answers an empty account id.
    let key = std::str::from_utf8(msg.key().unwrap_or_default())
        .map_err(|_| ("bad_key", "key is not utf-8".to_owned()))?;
    let want = partition_for(key.as_bytes(), partitions);
    if want != msg.partition() {
        return Err((
            "misrouted",
            format!(
                "key belongs on partition {want} of {partitions} (murmur2), record is on {}",
                msg.partition()
            ),
        ));
    }
    let intent: Intent = decode(payload, lookup).map_err(|e| (e.code(), e.to_string()))?;
    if intent.account_id != key {
        return Err((
            "key_mismatch",
            "record key is not the intent's account_id".into(),
        ));
    }
    Ok(intent)
}

/// The answer to an input record whose answer the broker refused for good ([`RefusedAt`]): a
/// `rejected` receipt (`record_refused`) and a dead letter with the record's bytes, or less
/// after further refusals.
fn refused_answer(
    d: &mut Decided,
    msg: &OwnedMessage,
    topics: &Topics,
    codec: &Codec,
    record_bytes_max: usize,
    refused: &RefusedAt,
) {
    let part = d.parts.entry(msg.partition()).or_default();
    *part.outcomes.entry(Outcome::Rejected).or_insert(0) += 1;
    if refused.times >= 4 {
        tracing::error!(partition = msg.partition(), offset = msg.offset(), reason = %refused.reason, "every answer to this record was refused by the broker; moving on without one");
        return;
    }
    let message = format!("the broker refused the answer: {}", refused.reason);
    let key = msg.key().map(<[u8]>::to_vec);
    let (action_id, account_id) = match decode::<Intent>(msg.payload().unwrap_or_default(), codec) {
        Ok(i) => (i.action_id, i.account_id),
        Err(_) => (
            String::new(),
            String::from_utf8_lossy(msg.key().unwrap_or_default()).into_owned(),
        ),
    };
    let timestamp = msg.timestamp().to_millis().unwrap_or(-1);
    let meta = RecordMeta {
        timestamp,
        partition: msg.partition(),
        offset: msg.offset(),
    };
    let mut receipt = kledger_processors::decide::receipt(
        &action_id,
        &account_id,
        &Default::default(),
        &meta,
        Outcome::Rejected,
        Some(Reason::new(Code::RecordRefused, message.clone())),
    );
    // Nothing is known of the head here: the receipt says so rather than guess.
    receipt.head_seq = -1;
    receipt.head_hash.clear();
    if refused.times <= 2 {
        // The second time, the dead letter keeps only the record's size and SHA-256.
        let keep = if refused.times == 1 {
            record_bytes_max
        } else {
            0
        };
        *part.deadletters.entry(REFUSED).or_insert(0) += 1;
        d.out
            .push(dead_letter(msg, &topics.intents, REFUSED, message, keep));
    }
    d.out.push(Outgoing {
        kind: OutKind::Receipt,
        partition: Some(msg.partition()),
        key,
        payload: codec.encode(&receipt),
        timestamp: None,
        headers: Vec::new(),
        intent_time: Some(timestamp),
        source: Some((msg.partition(), msg.offset())),
    });
}

/// The dead-letter code of an intent whose commit the broker refused.
pub const REFUSED: &str = "record_refused";

/// Decides every record of `batch` with `applier`; records are read and written with `codec`,
/// and none over `record_bytes_max` is read. Records at `refused` positions are answered
/// without being decided. A state error is internal: the caller stops. Long on purpose: each
/// record's path (refused, undecodable, misrouted, oversize, decided) in the order it is
/// checked, each answered in place, so no record can leave without its answer.
#[allow(clippy::too_many_arguments)] // the batch's context, passed as the runner holds it
pub fn decide_batch<S: StateRead + ?Sized, M: std::borrow::Borrow<OwnedMessage>>(
    applier: &mut Applier<'_, S>,
    batch: &[M],
    topics: &Topics,
    partitions: i32,
    codec: &Codec,
    record_bytes_max: usize,
    refused: &Refused,
) -> Result<Decided, StateError> {
    let mut d = Decided::default();
    for msg in batch {
        let msg = msg.borrow();
        let p = msg.partition();
        {
            let part = d.parts.entry(p).or_default();
            part.next_offset = msg.offset() + 1;
            part.records += 1;
        }
        if let Some(at) = refused.get(&(p, msg.offset())) {
            refused_answer(&mut d, msg, topics, codec, record_bytes_max, at);
            continue;
        }
        let intent = match classify(msg, partitions, codec, record_bytes_max) {
            Ok(i) => i,
            Err((code, message)) => {
                let part = d.parts.entry(p).or_default();
                *part.deadletters.entry(code).or_insert(0) += 1;
                d.out.push(dead_letter(
                    msg,
                    &topics.intents,
                    code,
                    message,
                    record_bytes_max,
                ));
                continue;
            }
        };
        let timestamp = msg.timestamp().to_millis().unwrap_or(-1);
        let meta = RecordMeta {
            timestamp,
            partition: p,
            offset: msg.offset(),
        };
        let key = Some(intent.account_id.clone().into_bytes());
        let decision = applier.apply_owned(intent, &meta)?;
        let part = d.parts.entry(p).or_default();
        *part.outcomes.entry(decision.receipt.outcome).or_insert(0) += 1;
        if decision.receipt.code.as_deref() == Some(Code::CommitTooLarge.as_str()) {
            part.too_large += 1;
        }
        let source = Some((p, msg.offset()));
        for (memory_id, k) in &decision.new_keys {
            let (key, payload) =
                crate::keys::key_record(&decision.receipt.account_id, memory_id, k);
            d.keys.push(Outgoing {
                kind: OutKind::Key,
                partition: Some(p),
                key: Some(key),
                payload,
                timestamp: None,
                headers: Vec::new(),
                intent_time: None,
                source,
            });
        }
        for (c, record) in decision.commits.iter().zip(decision.records) {
            d.out.push(Outgoing {
                kind: OutKind::Outbox,
                partition: Some(p),
                key: key.clone(),
                payload: codec.frame::<Commit>(record),
                timestamp: Some(c.recorded_at),
                headers: Vec::new(),
                intent_time: Some(timestamp),
                source,
            });
        }
        d.out.push(Outgoing {
            kind: OutKind::Receipt,
            partition: Some(p),
            key,
            payload: codec.encode(&decision.receipt),
            timestamp: None,
            headers: Vec::new(),
            intent_time: Some(timestamp),
            source,
        });
    }
    Ok(d)
}

/// What deciding a batch needs besides its records and state: where records go, how they are
/// read and written, the decision's bounds, and the positions answered without deciding.
#[derive(Debug, Clone, Copy)]
pub struct DecideContext<'a> {
    /// The topics.
    pub topics: &'a Topics,
    /// The intents topic's partition count (records on another partition are misrouted).
    pub partitions: i32,
    /// Reads intents, writes commits and receipts.
    pub codec: &'a Codec,
    /// The decision's bounds, with the ledger's secret.
    pub limits: kledger_processors::Limits,
    /// The record budget.
    pub record_bytes_max: usize,
    /// Positions whose answer the broker refused for good.
    pub refused: &'a Refused,
}

/// Splits a batch into at most `threads` groups by account (a hash of the record key: every
/// record of an account, and so of its state, in one group), each group in batch order, so
/// each account's order is kept. A batch of one partition splits too: the reader hands the
/// processor long runs of one partition. Deterministic; empty groups are dropped.
pub fn split_by_account(batch: &[OwnedMessage], threads: usize) -> Vec<Vec<&OwnedMessage>> {
    let groups = threads.max(1) as u64;
    let mut out: Vec<Vec<&OwnedMessage>> = vec![Vec::new(); groups as usize];
    for m in batch {
        let g = (group_hash(m.key().unwrap_or_default()) % groups) as usize;
        out[g].push(m);
    }
    out.retain(|g| !g.is_empty());
    out
}

/// The hash [`split_by_account`] groups by: FNV-1a (64 bits), not the partitioner's murmur2.
/// The keys of one partition share `murmur2 % partitions`, so with a thread count dividing the
/// partition count, `murmur2 % threads` put a whole partition, and so a whole batch of it, in
/// one group: one thread decided while the others waited.
fn group_hash(key: &[u8]) -> u64 {
    key.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The threads batches are decided on: the apply thread and `threads - 1` long-lived workers
/// (`kledger-apply-worker`). Long-lived, so each keeps its allocator heap, scratch buffers and
/// caches from one batch to the next: a thread started per batch decided a record 30–50%
/// slower than the apply thread beside it, and the batch waited for it.
#[derive(Debug)]
pub struct ApplyPool {
    threads: usize,
    workers: Option<rayon::ThreadPool>,
}

impl ApplyPool {
    /// A pool of `threads` (at least one: the calling thread). Workers that cannot be started
    /// leave the batches to the calling thread alone (with a warning).
    pub fn new(threads: usize) -> Self {
        let threads = threads.max(1);
        if threads == 1 {
            return Self {
                threads,
                workers: None,
            };
        }
        let built = rayon::ThreadPoolBuilder::new()
            .num_threads(threads - 1)
            .thread_name(|_| "kledger-apply-worker".to_owned())
            .build();
        let workers = match built {
            Ok(pool) => pool,
            Err(e) => {
                tracing::warn!(error = %e, "no apply workers; batches are decided on the apply thread alone");
                return Self {
                    threads: 1,
                    workers: None,
                };
            }
        };
        Self {
            threads,
            workers: Some(workers),
        }
    }

    /// Threads a batch is split over.
    pub fn threads(&self) -> usize {
        self.threads
    }
}

/// Decides `batch` against `base` plus `below` (the writes of a batch not yet durable) on the
/// threads of `pool`: the batch is split by account ([`split_by_account`]), each group decided
/// by its own [`Applier`] on its own thread (the calling thread takes the first, the pool's
/// workers the others). Accounts are independent — a decision reads and writes only its
/// account's keys — so the result is the one a single thread gives: the records to produce
/// are put back in batch order (each input record's answers where one thread puts them, so
/// every outbox partition holds what replay verify re-decides, in the same order), each
/// partition's share is summed over the groups, and the groups' writes are one write set (a
/// partition's read positions, which several groups raise, keep the highest), made durable
/// as one RocksDB write batch with the batch's positions. A worker that panics panics the
/// caller, as a panic in a single-threaded decide would.
pub fn decide_parallel<S: StateRead + Sync + ?Sized>(
    base: &S,
    below: &WriteSet,
    batch: &[OwnedMessage],
    pool: &ApplyPool,
    cx: DecideContext<'_>,
) -> Result<(Decided, WriteSet), StateError> {
    let layered = Layered::new(base, below);
    let group = |records: &[&OwnedMessage]| -> Result<(Decided, WriteSet), StateError> {
        let mut applier = Applier::new(&layered, cx.limits);
        let d = decide_batch(
            &mut applier,
            records,
            cx.topics,
            cx.partitions,
            cx.codec,
            cx.record_bytes_max,
            cx.refused,
        )?;
        Ok((d, applier.into_writes()))
    };
    let groups = split_by_account(batch, pool.threads);
    let results: Vec<Result<(Decided, WriteSet), StateError>> =
        match (groups.as_slice(), &pool.workers) {
            ([], _) => return Ok(Default::default()),
            ([_], _) => return group(&batch.iter().collect::<Vec<_>>()),
            (_, None) => groups.iter().map(|g| group(g)).collect(),
            ([first, rest @ ..], Some(workers)) => {
                let group = &group;
                let mut slots: Vec<Option<Result<(Decided, WriteSet), StateError>>> =
                    rest.iter().map(|_| None).collect();
                let mut results = Vec::with_capacity(groups.len());
                workers.in_place_scope(|s| {
                    for (g, slot) in rest.iter().zip(slots.iter_mut()) {
                        s.spawn(move |_| *slot = Some(group(g)));
                    }
                    results.push(group(first));
                });
                // The scope returns once every spawned group has run (or re-raises its panic).
                results.extend(slots.into_iter().flatten());
                results
            }
        };
    merge(batch, results)
}

/// The groups' results as one ([`decide_parallel`]).
fn merge(
    batch: &[OwnedMessage],
    results: Vec<Result<(Decided, WriteSet), StateError>>,
) -> Result<(Decided, WriteSet), StateError> {
    let mut decided = Decided::default();
    let mut writes = WriteSet::default();
    let mut positions: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    for r in results {
        let (d, w) = r?;
        decided.keys.extend(d.keys);
        decided.out.extend(d.out);
        for (p, share) in d.parts {
            decided.parts.entry(p).or_default().absorb(share);
        }
        for (k, v) in w.family(kledger_state::Cf::Meta) {
            if let Some(v) = v {
                let keep = positions
                    .get(k)
                    .is_none_or(|have| position(v) > position(have));
                if keep {
                    positions.insert(k.to_vec(), v.to_vec());
                }
            }
        }
        writes.extend(w);
    }
    for (k, v) in positions {
        writes.put(kledger_state::Cf::Meta, k, v);
    }
    // Batch order: each input record's answers in the order its group made them (a stable
    // sort, each record's place looked up once).
    let index: std::collections::HashMap<(i32, i64), usize> = batch
        .iter()
        .enumerate()
        .map(|(i, m)| ((m.partition(), m.offset()), i))
        .collect();
    let at = |o: &Outgoing| o.source.and_then(|s| index.get(&s).copied());
    decided.keys.sort_by_cached_key(at);
    decided.out.sort_by_cached_key(at);
    Ok((decided, writes))
}

/// A read position's value (8 bytes, big-endian), for keeping the highest.
fn position(v: &[u8]) -> i64 {
    <[u8; 8]>::try_from(v).map_or(i64::MIN, i64::from_be_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rdkafka::Timestamp;

    /// The records of one partition — which is what the reader hands the processor in long
    /// runs — spread over every thread, whatever the thread count divides the partition count.
    #[test]
    fn one_partitions_records_split_over_every_thread() {
        const PARTITIONS: i32 = 12;
        let batch: Vec<OwnedMessage> = (0..5_000)
            .map(|i| format!("account-{i}"))
            .filter(|a| partition_for(a.as_bytes(), PARTITIONS) == 4)
            .enumerate()
            .map(|(o, a)| {
                OwnedMessage::new(
                    None,
                    Some(a.into_bytes()),
                    "intents".into(),
                    Timestamp::NotAvailable,
                    4,
                    o as i64,
                    None,
                )
            })
            .collect();
        assert!(batch.len() > 300);
        for threads in [2, 3, 4, 6] {
            let groups = split_by_account(&batch, threads);
            assert_eq!(groups.len(), threads);
            let fair = batch.len() / threads;
            for g in &groups {
                assert!(
                    g.len() > fair * 3 / 4,
                    "{threads} threads: {} of {}",
                    g.len(),
                    batch.len()
                );
            }
        }
    }
}
