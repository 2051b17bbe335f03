//! The keys topic (rules v4, crypto-shredding): the ledger's secret, data keys read into a
//! state or a projection's key cache, and outbox commits opened for projections.
//!
//! - **The ledger's secret** keys memory ids, content hashes, intent digests and content MACs.
//!   It is the first secret candidate on partition 0 of the keys topic; a process that finds
//!   none writes a random candidate and reads again, so processes starting together agree on
//!   the one that landed first (candidates have distinct record keys, so compaction keeps all
//!   of them and the first stays first).
//! - **Data keys** are written by the processor before the commits they seal, to the partition
//!   of their account; a purge's commit names the keys it destroys and the processor then
//!   writes their tombstones. A state restores them ([`restore_keys`]) before it folds the
//!   outbox; a projection reads them into its own cache when a commit needs one it lacks
//!   ([`open_commits`]).
//!
//! May not touch: HTTP, projections' stores beyond their key caches.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use anyhow::Context;
use kledger_processors::ids::LedgerSecret;
use kledger_processors::seal;
use kledger_schemas::Status;
use kledger_state::keys::{SECRET_RECORD_PREFIX, key_record_key};
use kledger_state::{
    KeyCache, KeyRecord, KeyState, Overlay, StateStore, keys, next_offset, restore_key_record,
};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::{Message, OwnedMessage};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::{Offset, TopicPartitionList};

use crate::records::OutboxCommit;
use kledger_kafka::clients::{RestoreContext, producer_config, restore_config};
use kledger_kafka::reader::{LIVE_PROBE, PartitionReader, ReadError, SOURCE_PROBE};
use kledger_runtime::config::Config;

/// Records read from the keys topic per batch.
const READ_BATCH: usize = 10_000;

/// Reads partitions `from` names of `topic`, each from its offset to its end, handing each
/// batch to `f`; the records read.
pub fn read_to_end(
    config: &Config,
    topic: &str,
    label: &'static str,
    from: &BTreeMap<i32, i64>,
    f: &mut dyn FnMut(&[OwnedMessage]) -> anyhow::Result<()>,
) -> anyhow::Result<u64> {
    if from.is_empty() {
        return Ok(0);
    }
    let mut reader = PartitionReader::source(config, topic, label, from, LIVE_PROBE)?;
    let mut read = 0u64;
    loop {
        match reader.next_to_end(READ_BATCH) {
            Ok(Some(batch)) => {
                read += batch.len() as u64;
                f(&batch)?;
            }
            Ok(None) => return Ok(read),
            Err(e @ ReadError::OutOfRange { .. }) => {
                // The keys topic is compacted: an offset compacted away is not missing history.
                // Reading from the partition's start gives every key that still exists.
                tracing::info!(topic, error = %e, "keys: position compacted away; reading from the start");
                let from = from.keys().map(|p| (*p, 0)).collect();
                return read_to_end(config, topic, label, &from, f);
            }
            Err(e) => return Err(anyhow::Error::new(e).context(format!("{label}: {topic}"))),
        }
    }
}

/// The ledger's secret from `topic`, written first when there is none.
pub fn ledger_secret(config: &Config, topic: &str) -> anyhow::Result<LedgerSecret> {
    if let Some(s) = find_secret(config, topic)? {
        return Ok(s);
    }
    let candidate = kledger_state::random_bytes::<{ 32 + 16 }>()?;
    let mut key = SECRET_RECORD_PREFIX.to_vec();
    key.extend_from_slice(kledger_processors::ids::to_hex(&candidate[32..]).as_bytes());
    let producer: BaseProducer = producer_config(config, None)
        .create()
        .context("keys: producer")?;
    producer
        .send(
            BaseRecord::to(topic)
                .partition(0)
                .key(&key)
                .payload(&candidate[..32]),
        )
        .map_err(|(e, _)| anyhow::anyhow!("keys: write the ledger's secret: {e}"))?;
    producer
        .flush(Duration::from_secs(30))
        .context("keys: write the ledger's secret")?;
    tracing::info!(topic, "wrote a ledger secret candidate");
    find_secret(config, topic)?
        .ok_or_else(|| anyhow::anyhow!("keys: the ledger's secret written to {topic} is not there"))
}

/// The first secret candidate on partition 0 of `topic`, if any.
fn find_secret(config: &Config, topic: &str) -> anyhow::Result<Option<LedgerSecret>> {
    let from = BTreeMap::from([(0, 0)]);
    let mut reader = PartitionReader::source(config, topic, "keys", &from, SOURCE_PROBE)?;
    while let Some(batch) = reader
        .next_to_end(READ_BATCH)
        .map_err(|e| anyhow::Error::new(e).context(format!("keys: {topic}")))?
    {
        for m in &batch {
            if m.key().is_some_and(|k| k.starts_with(SECRET_RECORD_PREFIX))
                && let Some(v) = m.payload().and_then(|v| <[u8; 32]>::try_from(v).ok())
            {
                return Ok(Some(LedgerSecret(v)));
            }
        }
    }
    Ok(None)
}

/// Restores the data keys of `partitions` into `store`, from each one's stored keys position
/// to the end of `topic`; the records read. Run before the outbox is folded: every commit's
/// keys precede it on the topic.
pub fn restore_keys<S: StateStore + ?Sized>(
    config: &Config,
    topic: &str,
    store: &S,
    partitions: &[i32],
) -> anyhow::Result<u64> {
    let mut from = BTreeMap::new();
    for &p in partitions {
        from.insert(p, next_offset(store, p, keys::META_KEYS_NEXT)?);
    }
    read_to_end(config, topic, "restore keys", &from, &mut |batch| {
        let mut o = Overlay::new(store);
        for m in batch {
            restore_key_record(
                &mut o,
                m.partition(),
                m.offset(),
                m.key().unwrap_or_default(),
                m.payload(),
            )
            .with_context(|| format!("keys {}/{}", m.partition(), m.offset()))?;
        }
        store.write(&o.into_writes())?;
        Ok(())
    })
}

fn records(batch: &[OwnedMessage]) -> Vec<KeyRecord> {
    batch
        .iter()
        .map(|m| KeyRecord {
            partition: m.partition(),
            offset: m.offset(),
            key: m.key().unwrap_or_default().to_vec(),
            value: m.payload().map(<[u8]>::to_vec),
        })
        .collect()
}

/// Reads the keys of `partitions` into `cache`, from its positions to the end of `topic`.
pub fn fill(
    config: &Config,
    topic: &str,
    cache: &dyn KeyCache,
    partitions: &BTreeSet<i32>,
) -> anyhow::Result<u64> {
    let mut from = BTreeMap::new();
    for &p in partitions {
        from.insert(p, cache.key_position(p)?);
    }
    read_to_end(config, topic, "keys", &from, &mut |batch| {
        cache.add(&records(batch))?;
        Ok(())
    })
}

/// A live projection's reader of the keys topic: one consumer, assigned every partition from
/// the cache's positions, that librdkafka keeps fetching in the background. A batch of commits
/// first takes what it has fetched ([`KeyFeed::drain`]); a key still missing then is read
/// with a to-the-end reader ([`fill`]), which alone can tell "not there yet" from "gone".
pub struct KeyFeed {
    consumer: BaseConsumer<RestoreContext>,
}

impl std::fmt::Debug for KeyFeed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeyFeed").finish_non_exhaustive()
    }
}

/// Keys-topic records one drain takes at most (the rest wait for the next batch).
const DRAIN_MAX: usize = 100_000;

impl KeyFeed {
    /// A feed of every partition of the keys topic into `cache`, from its positions.
    pub fn new(config: &Config, cache: &dyn KeyCache, partitions: i32) -> anyhow::Result<Self> {
        let mut c = restore_config(config);
        // Long-lived and mostly idle: it asks as rarely as a group consumer (a held fetch is
        // answered as soon as a key arrives), not as often as a to-the-end reader.
        if !config
            .kafka
            .consumer_properties
            .contains_key("fetch.wait.max.ms")
        {
            c.set("fetch.wait.max.ms", kledger_kafka::clients::FETCH_WAIT_MS);
        }
        let consumer: BaseConsumer<RestoreContext> = c
            .create_with_context(RestoreContext)
            .context("keys feed: consumer")?;
        let topic = config.topics().keys;
        let mut tpl = TopicPartitionList::new();
        for p in 0..partitions {
            tpl.add_partition_offset(&topic, p, Offset::Offset(cache.key_position(p)?))?;
        }
        consumer.assign(&tpl).context("keys feed: assign")?;
        Ok(Self { consumer })
    }

    /// Adds what the consumer has fetched to `cache`, waiting at most `wait` for a first
    /// record.
    pub fn drain(&self, cache: &dyn KeyCache, wait: Duration) -> anyhow::Result<()> {
        let mut records = Vec::new();
        let mut timeout = wait;
        while records.len() < DRAIN_MAX {
            let polled = self.consumer.poll(timeout);
            timeout = Duration::ZERO;
            match polled {
                Some(Ok(m)) => records.push(KeyRecord {
                    partition: m.partition(),
                    offset: m.offset(),
                    key: m.key().unwrap_or_default().to_vec(),
                    value: m.payload().map(<[u8]>::to_vec),
                }),
                // The end of a partition, or an error librdkafka retries: the next batch polls
                // again, and a key still missing is read with a to-the-end reader.
                Some(Err(_)) => {}
                None => break,
            }
        }
        if !records.is_empty() {
            cache.add(&records)?;
        }
        Ok(())
    }
}

/// Opens the sealed rows of `commits` for a projection (rules v4), with keys from `cache`;
/// keys it lacks are taken from `feed` (live) and then read from the keys topic. A row whose
/// key a purge destroyed is shredded: it reaches the projection as a tombstone
/// ([`seal::shred`]), as the purge folded later in the outbox will make it anyway. Rows that
/// are not sealed are left as they are.
pub fn open_commits(
    config: &Config,
    cache: &dyn KeyCache,
    feed: Option<&KeyFeed>,
    commits: &mut [OutboxCommit],
) -> anyhow::Result<()> {
    let missing = |cache: &dyn KeyCache| -> anyhow::Result<BTreeSet<i32>> {
        let mut missing = BTreeSet::new();
        for c in commits.iter() {
            for op in sealed_ops(c) {
                let key_id = &op.sealed.as_ref().expect("sealed rows").key_id;
                if cache.key(&c.commit.account_id, key_id)? == KeyState::Unknown {
                    missing.insert(c.partition);
                }
            }
        }
        Ok(missing)
    };
    let mut lacking = missing(cache)?;
    if let Some(feed) = feed {
        // What the feed fetched meanwhile; while keys are missing, a few short waits for the
        // fetch that brings them (written before their commits, they are on their way).
        for wait_ms in [0, 20, 50, 100, 200] {
            if lacking.is_empty() {
                break;
            }
            feed.drain(cache, Duration::from_millis(wait_ms))?;
            lacking = missing(cache)?;
        }
    }
    if !lacking.is_empty() {
        fill(config, &config.topics().keys, cache, &lacking)?;
    }
    for c in commits.iter_mut() {
        let acct = c.commit.account_id.clone();
        for op in &mut c.commit.ops {
            let row = &mut op.row;
            let Some(s) = row.sealed.as_ref().filter(|s| !s.ciphertext.0.is_empty()) else {
                continue;
            };
            match cache.key(&acct, &s.key_id)? {
                KeyState::Present(key) => seal::open(&acct, row, &key).with_context(|| {
                    format!(
                        "outbox {}/{}: row {} of {acct}",
                        c.partition, c.offset, row.memory_id
                    )
                })?,
                // Destroyed, or compacted away after it was: the row was purged.
                KeyState::Destroyed | KeyState::Unknown => seal::shred(row),
            }
        }
    }
    Ok(())
}

fn sealed_ops(c: &OutboxCommit) -> impl Iterator<Item = &kledger_schemas::Row> {
    c.commit.ops.iter().map(|op| &op.row).filter(|r| {
        r.status != Status::Tombstoned
            && r.sealed
                .as_ref()
                .is_some_and(|s| !s.ciphertext.0.is_empty())
    })
}

/// The keys topic record of a data key.
pub fn key_record(account: &str, memory_id: &str, key: &seal::DataKey) -> (Vec<u8>, Vec<u8>) {
    (
        key_record_key(account, &key.id),
        keys::key_value(&key.key, memory_id),
    )
}
