//! The records kledger writes and reads around its topics, below the processor and the
//! projections that share them: what to produce ([`Outgoing`], to the topic its [`OutKind`]
//! names), dead letters, a commit as read from the outbox ([`OutboxCommit`]), and sending
//! records with their delivery reports awaited per input partition ([`delivery`]).

use kledger_schemas::Commit;
use rdkafka::message::{Header, Message, OwnedHeaders, OwnedMessage};

use kledger_kafka::topics::Topics;

pub mod delivery;

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
    /// The input record this answers (partition, offset): a failure to write it fails that
    /// partition's share of the batch only. None for records that answer no input (views).
    pub source: Option<(i32, i64)>,
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
    /// Data keys (rules v4), written before the commits they seal.
    Key,
    /// A destroyed data key's tombstone (a null value).
    KeyTombstone,
    /// An intent kledger publishes itself (an expired row's purge, [`crate::project::views`]).
    Intent,
}

impl Outgoing {
    /// The topic name.
    pub fn topic<'a>(&self, topics: &'a Topics) -> &'a str {
        match self.kind {
            OutKind::Outbox => &topics.outbox,
            OutKind::Receipt => &topics.receipts,
            OutKind::DeadLetter => &topics.deadletter,
            OutKind::View => &topics.views,
            OutKind::Intent => &topics.intents,
            OutKind::Key | OutKind::KeyTombstone => &topics.keys,
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

/// A dead letter of `msg` (read from `source_topic`): its bytes with the reason in headers.
///
/// A dead letter carries at most `payload_bytes_max` bytes of the record (the record budget):
/// a larger record (possible only where a topic allows records over the budget) is cut to it,
/// so a dead letter can always be written; the headers then give the original size and
/// SHA-256, and the full record stays in its source topic at the offset the headers name.
pub fn dead_letter(
    msg: &OwnedMessage,
    source_topic: &str,
    code: &'static str,
    message: String,
    payload_bytes_max: usize,
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
    let kept = if payload.len() > payload_bytes_max {
        use sha2::Digest;
        headers.push(("kledger.payload.truncated".to_owned(), "true".to_owned()));
        headers.push((
            "kledger.payload.bytes".to_owned(),
            payload.len().to_string(),
        ));
        headers.push((
            "kledger.payload.sha256".to_owned(),
            kledger_processors::ids::to_hex(&sha2::Sha256::digest(payload)),
        ));
        &payload[..payload_bytes_max]
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
        source: Some((msg.partition(), msg.offset())),
    }
}

/// A commit as read from the outbox: where it was, and what it holds.
#[derive(Debug, Clone, PartialEq)]
pub struct OutboxCommit {
    /// The outbox partition.
    pub partition: i32,
    /// Its offset there.
    pub offset: i64,
    /// The commit.
    pub commit: Commit,
}
