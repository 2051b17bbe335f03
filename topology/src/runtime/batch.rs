//! One batch: classify each input record (intent or dead letter), decide the intents against
//! state plus the batch's pending writes, and build the records to produce.

use std::collections::BTreeMap;

use kledger_processors::RecordMeta;
use kledger_processors::routing::partition_for;
use kledger_schemas::avro::{SchemaLookup, decode};
use kledger_schemas::{Commit, Intent, Outcome};
use kledger_state::{Applier, StateError, StateRead};
use rdkafka::message::{Header, Message, OwnedHeaders, OwnedMessage};

use crate::registry::Codec;
use crate::topics::Topics;

/// What to produce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outgoing {
    /// Which topic.
    pub kind: OutKind,
    /// Partition (none: the partitioner decides).
    pub partition: Option<i32>,
    /// Key bytes.
    pub key: Option<Vec<u8>>,
    /// Value bytes.
    pub payload: Vec<u8>,
    /// Record timestamp (none: now).
    pub timestamp: Option<i64>,
    /// Headers (dead letters).
    pub headers: Vec<(String, String)>,
    /// The intent's record timestamp, for the latency metric.
    pub intent_time: Option<i64>,
}

/// Output topics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum OutKind {
    /// The outbox.
    Outbox,
    /// Receipts.
    Receipt,
    /// Dead letters.
    DeadLetter,
    /// Rendered views (the view sink).
    View,
}

impl Outgoing {
    /// The topic name.
    pub fn topic<'a>(&self, topics: &'a Topics) -> &'a str {
        match self.kind {
            OutKind::Outbox => &topics.outbox,
            OutKind::Receipt => &topics.receipts,
            OutKind::DeadLetter => &topics.deadletter,
            OutKind::View => &topics.views,
        }
    }

    /// Kafka headers.
    pub fn kafka_headers(&self) -> Option<OwnedHeaders> {
        if self.headers.is_empty() {
            return None;
        }
        Some(self.headers.iter().fold(OwnedHeaders::new(), |h, (k, v)| {
            h.insert(Header {
                key: k,
                value: Some(v),
            })
        }))
    }
}

/// The decided batch.
#[derive(Debug, Default)]
pub struct Decided {
    /// Records to produce, in order.
    pub out: Vec<Outgoing>,
    /// Next input offset per partition.
    pub next_offsets: BTreeMap<i32, i64>,
    /// Outcomes, for metrics.
    pub outcomes: BTreeMap<Outcome, u64>,
    /// Dead letters by code, for metrics.
    pub deadletters: BTreeMap<&'static str, u64>,
}

/// Why an input record is not an intent (dead-letter code, message).
fn classify(
    msg: &OwnedMessage,
    partitions: i32,
    lookup: &dyn SchemaLookup,
) -> Result<Intent, (&'static str, String)> {
    let Some(payload) = msg.payload().filter(|p| !p.is_empty()) else {
        return Err(("null_value", "empty or null record".into()));
    };
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

/// Payload bytes a dead letter carries at most. Larger records (possible only where a topic
/// allows records over kledger's own 1 MiB limit) are cut to this size, under the 1 MB that
/// Kafka producers and brokers accept by default, so a dead letter can always be written; the
/// headers then give the original size and SHA-256, and the full record stays in its source
/// topic at the offset the headers name.
pub const DEAD_LETTER_PAYLOAD_MAX: usize = 512 * 1024;

/// A dead letter of `msg` (read from `source_topic`): its bytes with the reason in headers.
pub fn dead_letter(
    msg: &OwnedMessage,
    source_topic: &str,
    code: &'static str,
    message: String,
) -> Outgoing {
    let payload = msg.payload().unwrap_or_default();
    let mut headers = vec![
        ("kledger.error.code".to_owned(), code.to_owned()),
        (
            "kledger.error.message".to_owned(),
            message.chars().take(1_000).collect(),
        ),
        ("kledger.source.topic".to_owned(), source_topic.to_owned()),
        (
            "kledger.source.partition".to_owned(),
            msg.partition().to_string(),
        ),
        ("kledger.source.offset".to_owned(), msg.offset().to_string()),
    ];
    let kept = if payload.len() > DEAD_LETTER_PAYLOAD_MAX {
        use sha2::Digest;
        headers.push(("kledger.payload.truncated".to_owned(), "true".to_owned()));
        headers.push((
            "kledger.payload.bytes".to_owned(),
            payload.len().to_string(),
        ));
        headers.push((
            "kledger.payload.sha256".to_owned(),
            hex::encode(sha2::Sha256::digest(payload)),
        ));
        &payload[..DEAD_LETTER_PAYLOAD_MAX]
    } else {
        payload
    };
    Outgoing {
        kind: OutKind::DeadLetter,
        partition: None,
        key: msg.key().map(<[u8]>::to_vec),
        payload: kept.to_vec(),
        timestamp: None,
        headers,
        intent_time: None,
    }
}

/// Decides every record of `batch` with `applier`; records are read and written with `codec`.
/// A state error is internal: the caller stops.
pub fn decide_batch<S: StateRead + ?Sized>(
    applier: &mut Applier<'_, S>,
    batch: &[OwnedMessage],
    topics: &Topics,
    partitions: i32,
    codec: &Codec,
) -> Result<Decided, StateError> {
    let mut d = Decided::default();
    for msg in batch {
        let p = msg.partition();
        d.next_offsets.insert(p, msg.offset() + 1);
        let intent = match classify(msg, partitions, codec) {
            Ok(i) => i,
            Err((code, message)) => {
                *d.deadletters.entry(code).or_insert(0) += 1;
                d.out.push(dead_letter(msg, &topics.intents, code, message));
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
        *d.outcomes.entry(decision.receipt.outcome).or_insert(0) += 1;
        if let (Some(c), Some(record)) = (&decision.commit, decision.commit_record) {
            d.out.push(Outgoing {
                kind: OutKind::Outbox,
                partition: Some(p),
                key: key.clone(),
                payload: codec.frame::<Commit>(record),
                timestamp: Some(c.recorded_at),
                headers: Vec::new(),
                intent_time: Some(timestamp),
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
        });
    }
    Ok(d)
}
