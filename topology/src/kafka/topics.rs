//! Topic names and administration: create the five topics, check co-partitioning.

use std::time::Duration;

use anyhow::{Context, bail};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};

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
}

/// Retention of receipts (7 days): they answer extractors, the outbox is the record.
pub const RECEIPTS_RETENTION_MS: i64 = 7 * 24 * 3_600_000;

impl Topics {
    /// Names under `prefix`.
    pub fn new(prefix: &str) -> Self {
        Self {
            intents: format!("{prefix}.intents.v1"),
            outbox: format!("{prefix}.outbox.v1"),
            receipts: format!("{prefix}.receipts.v1"),
            views: format!("{prefix}.views.v1"),
            deadletter: format!("{prefix}.deadletter.v1"),
        }
    }

    /// Every topic with its configuration (name, configs); `message_bytes_max` is each
    /// topic's `max.message.bytes` (the record budget plus framing).
    pub fn specs(&self, message_bytes_max: usize) -> Vec<(&str, Vec<(&'static str, String)>)> {
        let max = ("max.message.bytes", message_bytes_max.to_string());
        let forever = vec![
            ("retention.ms", "-1".to_owned()),
            ("retention.bytes", "-1".to_owned()),
            max.clone(),
        ];
        vec![
            (self.intents.as_str(), forever.clone()),
            (self.outbox.as_str(), forever.clone()),
            (
                self.receipts.as_str(),
                vec![
                    ("retention.ms", RECEIPTS_RETENTION_MS.to_string()),
                    max.clone(),
                ],
            ),
            (
                self.views.as_str(),
                vec![("cleanup.policy", "compact".to_owned()), max],
            ),
            (self.deadletter.as_str(), forever),
        ]
    }
}

fn admin(bootstrap: &str) -> anyhow::Result<AdminClient<DefaultClientContext>> {
    rdkafka::ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("socket.timeout.ms", "10000")
        .create()
        .context("create admin client")
}

/// Creates the topics `config` names with its partition count, replication factor and the
/// record budget's topic limit (existing ones are left alone); the names created.
pub async fn create_configured(config: &crate::config::Config) -> anyhow::Result<Vec<String>> {
    create(
        &config.bootstrap(),
        &config.topics(),
        config.kafka.partitions,
        config.kafka.replication_factor,
        config.limits.kafka_message_bytes(),
    )
    .await
}

/// Creates every topic that does not exist yet with `partitions` partitions and records up to
/// `message_bytes_max`.
pub async fn create(
    bootstrap: &str,
    topics: &Topics,
    partitions: i32,
    replication: i32,
    message_bytes_max: usize,
) -> anyhow::Result<Vec<String>> {
    let admin = admin(bootstrap)?;
    let specs = topics.specs(message_bytes_max);
    let new: Vec<NewTopic<'_>> = specs
        .iter()
        .map(|(name, configs)| {
            configs.iter().fold(
                NewTopic::new(name, partitions, TopicReplication::Fixed(replication)),
                |t, (k, v)| t.set(k, v),
            )
        })
        .collect();
    let opts = AdminOptions::new().operation_timeout(Some(Duration::from_secs(30)));
    let results = admin
        .create_topics(&new, &opts)
        .await
        .context("create topics")?;
    let mut created = Vec::new();
    for r in results {
        match r {
            Ok(name) => created.push(name),
            Err((_, rdkafka::types::RDKafkaErrorCode::TopicAlreadyExists)) => {}
            Err((name, e)) => bail!("create topic {name}: {e}"),
        }
    }
    Ok(created)
}

/// Partition counts of `names` (None for a missing topic). Blocking: call off the executor.
pub fn partition_counts(bootstrap: &str, names: &[&str]) -> anyhow::Result<Vec<Option<i32>>> {
    let consumer: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .context("create metadata client")?;
    let md = consumer
        .fetch_metadata(None, Duration::from_secs(15))
        .context("fetch metadata")?;
    Ok(names
        .iter()
        .map(|n| {
            md.topics()
                .iter()
                .find(|t| t.name() == *n && t.error().is_none())
                .map(|t| t.partitions().len() as i32)
                .filter(|c| *c > 0)
        })
        .collect())
}

/// Refuses to run unless every topic exists and intents and outbox are co-partitioned.
/// Returns the partition count. Blocking: call off the executor.
pub fn check(bootstrap: &str, topics: &Topics) -> anyhow::Result<i32> {
    let names = [
        topics.intents.as_str(),
        topics.outbox.as_str(),
        topics.receipts.as_str(),
        topics.views.as_str(),
        topics.deadletter.as_str(),
    ];
    let counts = partition_counts(bootstrap, &names)?;
    for (n, c) in names.iter().zip(&counts) {
        if c.is_none() {
            bail!("topic {n} does not exist (run `kledger topics create`)");
        }
    }
    let (intents, outbox, receipts) = (
        counts[0].unwrap_or(0),
        counts[1].unwrap_or(0),
        counts[2].unwrap_or(0),
    );
    if intents != outbox {
        bail!(
            "{} has {intents} partitions but {} has {outbox}: intents and outbox must be co-partitioned",
            names[0],
            names[1]
        );
    }
    if receipts != intents {
        bail!(
            "{} has {receipts} partitions but {} has {intents}: receipts go to the intent's partition",
            names[2],
            names[0]
        );
    }
    Ok(intents)
}

/// Whether every partition of `topic` is empty (high watermark 0). Blocking.
pub fn is_empty(bootstrap: &str, topic: &str, partitions: i32) -> anyhow::Result<bool> {
    Ok(high_watermarks(bootstrap, topic, partitions)?
        .iter()
        .all(|&h| h == 0))
}

/// The high watermark of each partition of `topic`, as the broker answers an offset lookup.
/// Blocking. An estimate (progress bars, emptiness): tansu 0.6 may answer stale values, so
/// nothing that must be exact relies on it.
pub fn high_watermarks(bootstrap: &str, topic: &str, partitions: i32) -> anyhow::Result<Vec<i64>> {
    let consumer: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .create()
        .context("create metadata client")?;
    (0..partitions)
        .map(|p| {
            let (_, high) = consumer.fetch_watermarks(topic, p, Duration::from_secs(15))?;
            Ok(high)
        })
        .collect()
}
