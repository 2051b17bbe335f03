//! Topic names and administration: create the ledger's six topics and the four source topics,
//! check co-partitioning.

use std::time::Duration;

use anyhow::{Context, bail};
use rdkafka::ClientConfig;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer};

pub use kledger_runtime::config::topics::{
    INTENTS_RETENTION_MS, KEYS_COMPACTION_MS, RECEIPTS_RETENTION_MS, TopicSettings, Topics,
};

fn admin(cluster: &ClientConfig) -> anyhow::Result<AdminClient<DefaultClientContext>> {
    cluster
        .clone()
        .set("socket.timeout.ms", "10000")
        .create()
        .context("create admin client")
}

/// Creates the topics `config` names with its partition count, replication factor, the
/// record budget's topic limit and its intents retention (existing ones are left alone); the
/// names created.
pub async fn create_configured(
    config: &kledger_runtime::config::Config,
) -> anyhow::Result<Vec<String>> {
    create_with(
        &crate::clients::client_config(config),
        &config.topics(),
        config.kafka.partitions,
        config.kafka.replication_factor,
        TopicSettings {
            message_bytes_max: config.limits.kafka_message_bytes(),
            intents_retention_ms: config.kafka.intents_retention_ms,
        },
    )
    .await
}

/// Creates every topic that does not exist yet with `partitions` partitions, records up to
/// `message_bytes_max` and the default intents retention.
pub async fn create(
    cluster: &ClientConfig,
    topics: &Topics,
    partitions: i32,
    replication: i32,
    message_bytes_max: usize,
) -> anyhow::Result<Vec<String>> {
    let settings = TopicSettings {
        message_bytes_max,
        intents_retention_ms: INTENTS_RETENTION_MS,
    };
    create_with(cluster, topics, partitions, replication, settings).await
}

/// Creates every topic that does not exist yet with `partitions` partitions and `settings`.
pub async fn create_with(
    cluster: &ClientConfig,
    topics: &Topics,
    partitions: i32,
    replication: i32,
    settings: TopicSettings,
) -> anyhow::Result<Vec<String>> {
    let admin = admin(cluster)?;
    let specs = topics.specs(settings);
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
pub fn partition_counts(
    cluster: &ClientConfig,
    names: &[&str],
) -> anyhow::Result<Vec<Option<i32>>> {
    let consumer: BaseConsumer = cluster.create().context("create metadata client")?;
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
pub fn check(cluster: &ClientConfig, topics: &Topics) -> anyhow::Result<i32> {
    let names = [
        topics.intents.as_str(),
        topics.outbox.as_str(),
        topics.receipts.as_str(),
        topics.views.as_str(),
        topics.deadletter.as_str(),
        topics.keys.as_str(),
    ];
    let counts = partition_counts(cluster, &names)?;
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
    let keys = counts[5].unwrap_or(0);
    if keys != intents {
        bail!(
            "{} has {keys} partitions but {} has {intents}: data keys go to the intent's partition",
            names[5],
            names[0]
        );
    }
    Ok(intents)
}

/// Refuses to run the intake unless every source topic exists (they are created with the
/// rest; a ledger whose topics predate them needs `kledger topics create`). Their partition
/// counts are free: the intake keys what it forwards by account. Blocking.
pub fn check_sources(cluster: &ClientConfig, topics: &Topics) -> anyhow::Result<()> {
    let names: Vec<&str> = topics.sources.iter().map(String::as_str).collect();
    let counts = partition_counts(cluster, &names)?;
    let missing: Vec<&str> = names
        .iter()
        .zip(&counts)
        .filter(|(_, c)| c.is_none())
        .map(|(n, _)| *n)
        .collect();
    if !missing.is_empty() {
        bail!(
            "source topics {} do not exist (run `kledger topics create`)",
            missing.join(", ")
        );
    }
    Ok(())
}

/// Whether every partition of `topic` is empty (high watermark 0). Blocking.
pub fn is_empty(cluster: &ClientConfig, topic: &str, partitions: i32) -> anyhow::Result<bool> {
    Ok(high_watermarks(cluster, topic, partitions)?
        .iter()
        .all(|&h| h == 0))
}

/// The high watermark of each partition of `topic`, as the broker answers an offset lookup.
/// Blocking. An estimate (progress bars, emptiness): tansu 0.6 may answer stale values, so
/// nothing that must be exact relies on it.
pub fn high_watermarks(
    cluster: &ClientConfig,
    topic: &str,
    partitions: i32,
) -> anyhow::Result<Vec<i64>> {
    Ok(watermarks(cluster, topic, partitions)?
        .into_iter()
        .map(|(_, high)| high)
        .collect())
}

/// Each partition's first retained offset and end, `(low, high)`, of `topic` (partitions
/// `0..partitions`). A reader of a topic with a retention starts at the low one: a fetch below
/// it may answer nothing at all rather than "out of range" on the embedded broker.
pub fn watermarks(
    cluster: &ClientConfig,
    topic: &str,
    partitions: i32,
) -> anyhow::Result<Vec<(i64, i64)>> {
    let consumer: BaseConsumer = cluster.create().context("create metadata client")?;
    (0..partitions)
        .map(|p| Ok(consumer.fetch_watermarks(topic, p, Duration::from_secs(15))?))
        .collect()
}
