//! Topic names under a prefix and what kledger sets on each topic: data the configuration
//! derives, with no client in it (creating and checking topics is `kledger_kafka::topics`).

use kledger_schemas::SourceKind;

/// The topic names under a prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Topics {
    /// Input: intents (key = account id).
    pub intents: String,
    /// Commits: the changelog of state.
    pub outbox: String,
    /// Every intent's outcome.
    pub receipts: String,
    /// Rendered current views (compacted).
    pub views: String,
    /// Records that cannot be decoded.
    pub deadletter: String,
    /// Data keys (rules v4), compacted: a key per sealed row (key = account and key id),
    /// a tombstone when a purge destroys it, and the ledger's secret on partition 0.
    pub keys: String,
    /// The source topics (key = account id), one per [`SourceKind`] in [`SourceKind::ALL`]'s
    /// order: documents of the owner's other systems, forwarded by the intake as `source`
    /// intents.
    pub sources: [String; 5],
}

/// Retention of receipts (7 days): they answer extractors, the outbox is the record.
pub const RECEIPTS_RETENTION_MS: i64 = 7 * 24 * 3_600_000;

/// Default retention of intents and dead letters (7 days, `kafka.intents_retention_ms`): they
/// carry the text extractors sent, and only `replay verify` reads them once decided, from the
/// retained window (`docs/privacy.md`).
pub const INTENTS_RETENTION_MS: i64 = 7 * 24 * 3_600_000;

/// The keys topic's `segment.ms`, `max.compaction.lag.ms` and `delete.retention.ms` (one hour
/// each): a destroyed key's record is compacted away within about two hours on Kafka, and its
/// tombstone an hour after that (`docs/privacy.md`).
pub const KEYS_COMPACTION_MS: i64 = 3_600_000;

/// What kledger sets on the topics it creates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopicSettings {
    /// Each topic's `max.message.bytes` (the record budget plus framing).
    pub message_bytes_max: usize,
    /// `retention.ms` of intents and dead letters (-1: kept forever).
    pub intents_retention_ms: i64,
}

impl Topics {
    /// Names under `prefix`.
    pub fn new(prefix: &str) -> Self {
        Self {
            intents: format!("{prefix}.intents.v1"),
            outbox: format!("{prefix}.outbox.v1"),
            receipts: format!("{prefix}.receipts.v1"),
            views: format!("{prefix}.views.v1"),
            deadletter: format!("{prefix}.deadletter.v1"),
            keys: format!("{prefix}.keys.v1"),
            sources: SourceKind::ALL.map(|k| format!("{prefix}.sources.{}.v1", k.as_str())),
        }
    }

    /// The topic of `source`'s documents.
    pub fn source(&self, source: SourceKind) -> &str {
        let at = SourceKind::ALL
            .iter()
            .position(|k| *k == source)
            .unwrap_or(0);
        &self.sources[at]
    }

    /// The source whose documents `topic` carries (`None`: not a source topic).
    pub fn source_of(&self, topic: &str) -> Option<SourceKind> {
        SourceKind::ALL
            .into_iter()
            .zip(&self.sources)
            .find_map(|(k, t)| (t == topic).then_some(k))
    }

    /// Every topic with its configuration (name, configs). The outbox is kept forever (it is
    /// the changelog of state); intents, the source topics, dead letters and receipts are
    /// deleted by time
    /// (`cleanup.policy` is set explicitly: the embedded broker deletes only where it is);
    /// views are compacted, with segments rolled hourly and compaction due within an hour, so an
    /// older View is gone within about two hours on Kafka (the embedded broker compacts at
    /// every maintenance run).
    pub fn specs(&self, settings: TopicSettings) -> Vec<(&str, Vec<(&'static str, String)>)> {
        let max = ("max.message.bytes", settings.message_bytes_max.to_string());
        // Segments roll hourly, so Kafka deletes a record within an hour of its retention.
        let by_time = |ms: i64| {
            vec![
                ("cleanup.policy", "delete".to_owned()),
                ("retention.ms", ms.to_string()),
                ("retention.bytes", "-1".to_owned()),
                ("segment.ms", "3600000".to_owned()),
                max.clone(),
            ]
        };
        let intents = by_time(settings.intents_retention_ms);
        let sources: Vec<_> = self
            .sources
            .iter()
            .map(|t| (t.as_str(), intents.clone()))
            .collect();
        let mut specs = vec![
            (self.intents.as_str(), intents.clone()),
            (
                self.outbox.as_str(),
                vec![
                    ("retention.ms", "-1".to_owned()),
                    ("retention.bytes", "-1".to_owned()),
                    max.clone(),
                ],
            ),
            (self.receipts.as_str(), by_time(RECEIPTS_RETENTION_MS)),
            (
                self.views.as_str(),
                vec![
                    ("cleanup.policy", "compact".to_owned()),
                    ("segment.ms", "3600000".to_owned()),
                    ("max.compaction.lag.ms", "3600000".to_owned()),
                    max.clone(),
                ],
            ),
            (self.deadletter.as_str(), intents.clone()),
            (
                self.keys.as_str(),
                vec![
                    ("cleanup.policy", "compact".to_owned()),
                    ("segment.ms", KEYS_COMPACTION_MS.to_string()),
                    ("max.compaction.lag.ms", KEYS_COMPACTION_MS.to_string()),
                    ("min.compaction.lag.ms", "0".to_owned()),
                    ("delete.retention.ms", KEYS_COMPACTION_MS.to_string()),
                    max.clone(),
                ],
            ),
        ];
        specs.extend(sources);
        specs
    }
}
