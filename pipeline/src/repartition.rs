//! `kledger repartition --to N --topic-prefix NEW`: moves a stopped ledger to new topics with
//! `N` partitions, every account's chain unchanged.
//!
//! Rules v4 hash an account's chain without the topic layout: a commit carries its intent's
//! partition and offset as metadata outside its hash, and the one rule that reads offsets
//! (`overtaken`) compares two intents of one account on one partition, whose order is the
//! account's own on any layout. So a move copies, per source partition in offset order:
//!
//! 1. **the data keys** (the keys topic as compaction would leave it: each live key once, on
//!    its account's new partition; keys a purge destroyed are not copied) and the ledger's
//!    secret (partition 0, first);
//! 2. **the intents** still retained, each to its account's new partition with its key, value,
//!    headers and timestamp (the timestamp is the commits' `recorded_at`); a record the old
//!    layout dead-lettered as misrouted, or answered `record_refused`, is not copied (it was
//!    never decided);
//! 3. **the outbox**, each commit with its intent's new position (an intent retention deleted:
//!    offset -1, before every retained one) and otherwise byte for byte; a repeat (an old
//!    owner's write after a rebalance) is dropped.
//!
//! Each account's records keep their order; the new topics must be empty, and every record's
//! offset is checked against the one counted. Then the new outbox is read back and every
//! account's last commit (seq and head hash) compared with the old one's. Receipts, dead letters
//! and views are not copied: receipts answer extractors of the old topics, views are rebuilt.
//! Last, a `moved` marker is appended to partition 0 of the old keys topic: a processor
//! started on the old topics finds it and refuses to run ([`moved_to`]).
//!
//! Memory: one source partition's retained intent positions at a time, plus the live keys and
//! each account's last commit.

use std::collections::BTreeMap;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use anyhow::{Context, bail, ensure};
use kledger_processors::ids;
use kledger_processors::routing::partition_for;
use kledger_schemas::Commit;
use kledger_schemas::avro::decode;
use kledger_state::keys::{SECRET_RECORD_PREFIX, parse_key_record_key};
use rdkafka::message::{Header, Headers, Message, OwnedHeaders, OwnedMessage};
use rdkafka::producer::{BaseRecord, Producer};

use crate::keys::read_to_end;
use kledger_kafka::clients::{Delivery, DeliveryContext, producer_config, send_waiting};
use kledger_kafka::codec::Codec;
use kledger_kafka::topics::{self, TopicSettings, Topics};
use kledger_runtime::config::Config;

/// The key of the record that marks a keys topic's ledger as moved (partition 0; the value is
/// the new topic prefix and partition count, `PREFIX\nN`).
pub const MOVED_RECORD_KEY: &[u8] = b"\0moved_to";

/// How long the producer may take to write what was handed to it.
const FLUSH: Duration = Duration::from_secs(120);

/// What a move copied and checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Partitions before and after.
    pub from_partitions: i32,
    /// Partitions after.
    pub to_partitions: i32,
    /// Live data keys copied.
    pub keys: u64,
    /// Keys a purge destroyed, not copied.
    pub keys_destroyed: u64,
    /// Intents copied.
    pub intents: u64,
    /// Records the old layout dead-lettered as misrouted, not copied.
    pub misrouted: u64,
    /// Intents answered `record_refused` (never decided), not copied.
    pub refused: u64,
    /// Commits copied.
    pub commits: u64,
    /// Commits whose intent retention had deleted (offset -1 on the new topics).
    pub commits_expired_intent: u64,
    /// Repeated commits dropped.
    pub repeats: u64,
    /// Accounts whose last commit was compared on the new outbox.
    pub accounts: u64,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} → {} partitions: {} accounts, heads unchanged; {} commits ({} of expired intents, {} repeats dropped), {} intents ({} misrouted and {} refused not copied), {} data keys ({} destroyed not copied)",
            self.from_partitions,
            self.to_partitions,
            self.accounts,
            self.commits,
            self.commits_expired_intent,
            self.repeats,
            self.intents,
            self.misrouted,
            self.refused,
            self.keys,
            self.keys_destroyed
        )
    }
}

/// The producer of the move, counting each new partition's offsets.
struct Writer {
    producer: kledger_kafka::clients::PolledProducer<DeliveryContext>,
    reports: Receiver<Delivery>,
    /// Per (topic, partition), the offset the next record gets.
    next: BTreeMap<(String, i32), i64>,
    /// Per record id, where it must land.
    expect: BTreeMap<u64, (String, i32, i64)>,
    next_id: u64,
}

impl Writer {
    fn new(config: &Config) -> anyhow::Result<Self> {
        let (tx, reports) = channel();
        let producer = producer_config(config, None)
            .create_with_context(DeliveryContext::new(tx))
            .context("repartition: producer")?;
        Ok(Self {
            producer,
            reports,
            next: BTreeMap::new(),
            expect: BTreeMap::new(),
            next_id: 0,
        })
    }

    /// Sends one record; the offset it will have.
    fn send(
        &mut self,
        topic: &str,
        p: i32,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        timestamp: Option<i64>,
        headers: Option<OwnedHeaders>,
    ) -> anyhow::Result<i64> {
        let id = self.next_id;
        self.next_id += 1;
        let next = self.next.entry((topic.to_owned(), p)).or_insert(0);
        let offset = *next;
        *next += 1;
        self.expect.insert(id, (topic.to_owned(), p, offset));
        let mut r: BaseRecord<'_, [u8], [u8], Box<u64>> =
            BaseRecord::with_opaque_to(topic, Box::new(id)).partition(p);
        if let Some(k) = key {
            r = r.key(k);
        }
        if let Some(v) = value {
            r = r.payload(v);
        }
        if let Some(t) = timestamp {
            r = r.timestamp(t);
        }
        if let Some(h) = headers {
            r = r.headers(h);
        }
        send_waiting(&self.producer, r, Instant::now() + FLUSH)
            .map_err(|(e, _)| anyhow::anyhow!("repartition: write to {topic}/{p}: {e}"))?;
        self.settle(false)?;
        Ok(offset)
    }

    /// Checks the delivery reports that arrived (all of them, after a flush, with `all`).
    fn settle(&mut self, all: bool) -> anyhow::Result<()> {
        if all {
            self.producer
                .flush(FLUSH)
                .context("repartition: flush the producer")?;
        }
        let deadline = Instant::now() + FLUSH;
        loop {
            let report = if all && !self.expect.is_empty() {
                let left = deadline.saturating_duration_since(Instant::now());
                match self.reports.recv_timeout(left) {
                    Ok(r) => r,
                    Err(_) => bail!(
                        "repartition: {} records without a delivery report",
                        self.expect.len()
                    ),
                }
            } else {
                match self.reports.try_recv() {
                    Ok(r) => r,
                    Err(_) => return Ok(()),
                }
            };
            let Some((topic, p, want)) = self.expect.remove(&report.id) else {
                continue;
            };
            match report.result {
                Ok((got_p, got)) if (got_p, got) == (p, want) => {}
                Ok((got_p, got)) => bail!(
                    "repartition: a record meant for {topic}/{p} offset {want} landed at {got_p}/{got}: something else writes to the new topics"
                ),
                Err((e, _)) => bail!("repartition: write to {topic}/{p}: {e}"),
            }
        }
    }
}

fn copy_headers(m: &OwnedMessage) -> Option<OwnedHeaders> {
    let hs = m.headers()?;
    Some(hs.iter().fold(OwnedHeaders::new(), |out, h| {
        out.insert(Header {
            key: h.key,
            value: h.value,
        })
    }))
}

/// Per partition of `topic`, its low watermark (where reading starts) when it holds records.
fn starts(config: &Config, topic: &str, partitions: i32) -> anyhow::Result<BTreeMap<i32, i64>> {
    Ok(topics::watermarks(
        &kledger_kafka::clients::client_config(config),
        topic,
        partitions,
    )?
    .into_iter()
    .enumerate()
    .filter(|(_, (low, high))| high > low)
    .map(|(p, (low, _))| (p as i32, low))
    .collect())
}

/// Moves the ledger `config` names to topics under `prefix` with `to` partitions (see the
/// module's description). The processor must be stopped and nothing may publish meanwhile.
pub fn repartition(
    config: &Config,
    codec: &Codec,
    to: i32,
    prefix: &str,
) -> anyhow::Result<Report> {
    ensure!(to >= 1, "--to must be ≥ 1");
    let bootstrap = kledger_kafka::clients::client_config(config);
    let old = config.topics();
    let new = Topics::new(prefix);
    ensure!(
        new.intents != old.intents,
        "the new topic prefix must differ from kafka.topic_prefix"
    );
    let from = topics::check(&bootstrap, &old)?;
    if let Some((p, n)) = moved_to(config, &old.keys)? {
        bail!("this ledger already moved to topics under {p:?} ({n} partitions)");
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(topics::create_with(
        &bootstrap,
        &new,
        to,
        config.kafka.replication_factor,
        TopicSettings {
            message_bytes_max: config.limits.kafka_message_bytes(),
            intents_retention_ms: config.kafka.intents_retention_ms,
        },
    ))?;
    ensure!(
        topics::check(&bootstrap, &new)? == to,
        "topics under {prefix:?} exist with another partition count"
    );
    for t in [&new.intents, &new.outbox, &new.keys] {
        ensure!(
            topics::is_empty(&bootstrap, t, to)?,
            "{t} is not empty: move to a fresh topic prefix"
        );
    }
    let mut report = Report {
        from_partitions: from,
        to_partitions: to,
        ..Report::default()
    };
    // Intents whose answer the broker refused for good were never decided into the ledger.
    let refused = crate::replay::refused_intents(config, &old, from)?;
    let mut w = Writer::new(config)?;
    copy_keys(config, &old, &new, (from, to), &mut w, &mut report)?;
    // Every account's last commit on the old outbox: (seq, head hash).
    let mut heads: BTreeMap<String, (i64, String)> = BTreeMap::new();
    let intent_starts = starts(config, &old.intents, from)?;
    let outbox_starts = starts(config, &old.outbox, from)?;
    for p in 0..from {
        if let Some(low) = outbox_starts.get(&p).filter(|low| **low > 0) {
            bail!(
                "{} partition {p} starts at offset {low}: the outbox is the changelog and must be whole",
                old.outbox
            );
        }
        let moved = copy_intents(
            config,
            &old,
            &new,
            (from, to, p),
            &intent_starts,
            &refused,
            &mut w,
            &mut report,
        )?;
        copy_outbox(
            config,
            codec,
            &old,
            &new,
            to,
            p,
            &outbox_starts,
            &moved,
            &mut w,
            &mut heads,
            &mut report,
        )?;
    }
    w.settle(true)?;
    check_heads(config, codec, &new, to, &heads, &mut report)?;
    // Readers of the old topics are told: a processor started on them refuses to run.
    let marker = format!("{prefix}\n{to}");
    let record: BaseRecord<'_, [u8], [u8], Box<u64>> =
        BaseRecord::with_opaque_to(&old.keys, Box::new(u64::MAX))
            .partition(0)
            .key(MOVED_RECORD_KEY)
            .payload(marker.as_bytes());
    send_waiting(&w.producer, record, Instant::now() + FLUSH)
        .map_err(|(e, _)| anyhow::anyhow!("repartition: write the moved marker: {e}"))?;
    w.producer
        .flush(FLUSH)
        .context("repartition: write the moved marker")?;
    Ok(report)
}

/// Step 1: the ledger's secret, then each live data key on its account's new partition.
fn copy_keys(
    config: &Config,
    old: &Topics,
    new: &Topics,
    (from, to): (i32, i32),
    w: &mut Writer,
    report: &mut Report,
) -> anyhow::Result<()> {
    let mut secrets: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    // Latest value per record key, as compaction keeps it.
    let mut live: BTreeMap<Vec<u8>, Option<Vec<u8>>> = BTreeMap::new();
    let starts = starts(config, &old.keys, from)?;
    read_to_end(config, &old.keys, "repartition", &starts, &mut |batch| {
        for m in batch {
            let Some(k) = m.key() else { continue };
            if k.starts_with(SECRET_RECORD_PREFIX) {
                if let Some(v) = m.payload() {
                    secrets.push((k.to_vec(), v.to_vec()));
                }
            } else if parse_key_record_key(k).is_some() {
                live.insert(k.to_vec(), m.payload().map(<[u8]>::to_vec));
            }
        }
        Ok(())
    })?;
    for (k, v) in &secrets {
        w.send(&new.keys, 0, Some(k), Some(v), None, None)?;
    }
    for (k, v) in &live {
        let Some(v) = v else {
            report.keys_destroyed += 1;
            continue;
        };
        let (account, _) = parse_key_record_key(k).context("a data key's record key")?;
        let q = partition_for(account.as_bytes(), to);
        w.send(&new.keys, q, Some(k), Some(v), None, None)?;
        report.keys += 1;
    }
    Ok(())
}

/// Step 2, one source partition: its retained intents to their accounts' new partitions;
/// each copied intent's old offset → (new partition, new offset).
#[allow(clippy::too_many_arguments)] // the move's context, passed as it holds it
fn copy_intents(
    config: &Config,
    old: &Topics,
    new: &Topics,
    (from, to, p): (i32, i32, i32),
    starts: &BTreeMap<i32, i64>,
    refused: &crate::apply::batch::Refused,
    w: &mut Writer,
    report: &mut Report,
) -> anyhow::Result<BTreeMap<i64, (i32, i64)>> {
    let mut moved = BTreeMap::new();
    let Some(&low) = starts.get(&p) else {
        return Ok(moved);
    };
    read_to_end(
        config,
        &old.intents,
        "repartition",
        &BTreeMap::from([(p, low)]),
        &mut |batch| {
            for m in batch {
                let key = m.key().unwrap_or_default();
                if partition_for(key, from) != p {
                    report.misrouted += 1;
                    continue;
                }
                if refused.contains_key(&(p, m.offset())) {
                    report.refused += 1;
                    continue;
                }
                let q = partition_for(key, to);
                let offset = w.send(
                    &new.intents,
                    q,
                    m.key(),
                    m.payload(),
                    m.timestamp().to_millis(),
                    copy_headers(m),
                )?;
                moved.insert(m.offset(), (q, offset));
                report.intents += 1;
            }
            Ok(())
        },
    )?;
    Ok(moved)
}

/// Step 3, one source partition: its commits with their intents' new positions.
#[allow(clippy::too_many_arguments)] // the move's context, passed as it holds it
fn copy_outbox(
    config: &Config,
    codec: &Codec,
    old: &Topics,
    new: &Topics,
    to: i32,
    p: i32,
    starts: &BTreeMap<i32, i64>,
    moved: &BTreeMap<i64, (i32, i64)>,
    w: &mut Writer,
    heads: &mut BTreeMap<String, (i64, String)>,
    report: &mut Report,
) -> anyhow::Result<()> {
    let Some(&low) = starts.get(&p) else {
        return Ok(());
    };
    let first_retained = moved.keys().next().copied().unwrap_or(i64::MAX);
    read_to_end(
        config,
        &old.outbox,
        "repartition",
        &BTreeMap::from([(p, low)]),
        &mut |batch| {
            for m in batch {
                let mut c: Commit =
                    decode(m.payload().unwrap_or_default(), codec).with_context(|| {
                        format!(
                            "{} partition {p} offset {}: not a commit",
                            old.outbox,
                            m.offset()
                        )
                    })?;
                ensure!(
                    c.intent_partition == p,
                    "{} partition {p} offset {}: a commit of an intent on partition {}",
                    old.outbox,
                    m.offset(),
                    c.intent_partition
                );
                if heads
                    .get(&c.account_id)
                    .is_some_and(|(seq, _)| c.commit_seq <= *seq)
                {
                    report.repeats += 1;
                    continue;
                }
                ensure!(
                    c.keyed,
                    "{}: commit {} was decided under rules v3 or earlier, whose head hash covers its intent's position: such a ledger cannot move to another layout",
                    c.account_id,
                    c.commit_seq
                );
                let q = partition_for(c.account_id.as_bytes(), to);
                let (mq, offset) = match moved.get(&c.intent_offset) {
                    Some(at) => *at,
                    None if c.intent_offset < first_retained => {
                        report.commits_expired_intent += 1;
                        (q, -1)
                    }
                    None => bail!(
                        "{} partition {p} offset {}: the commit's intent (offset {}) is not on {}",
                        old.outbox,
                        m.offset(),
                        c.intent_offset,
                        old.intents
                    ),
                };
                ensure!(
                    mq == q,
                    "{}: intent and commit partitions differ",
                    c.account_id
                );
                c.intent_partition = q;
                c.intent_offset = offset;
                let payload = codec.frame::<Commit>(ids::record(&c));
                w.send(
                    &new.outbox,
                    q,
                    Some(c.account_id.as_bytes()),
                    Some(&payload),
                    Some(c.recorded_at),
                    None,
                )?;
                heads.insert(c.account_id.clone(), (c.commit_seq, c.head_hash.clone()));
                report.commits += 1;
            }
            Ok(())
        },
    )?;
    Ok(())
}

/// Reads the new outbox back: every account's last commit must be the old one's.
fn check_heads(
    config: &Config,
    codec: &Codec,
    new: &Topics,
    to: i32,
    heads: &BTreeMap<String, (i64, String)>,
    report: &mut Report,
) -> anyhow::Result<()> {
    let mut got: BTreeMap<String, (i64, String)> = BTreeMap::new();
    let from = starts(config, &new.outbox, to)?;
    read_to_end(config, &new.outbox, "repartition", &from, &mut |batch| {
        for m in batch {
            let c: Commit = decode(m.payload().unwrap_or_default(), codec)
                .context("a commit on the new outbox")?;
            ensure!(
                partition_for(c.account_id.as_bytes(), to) == m.partition(),
                "{}: on the wrong partition of the new outbox",
                c.account_id
            );
            got.insert(c.account_id, (c.commit_seq, c.head_hash));
        }
        Ok(())
    })?;
    ensure!(
        got.len() == heads.len(),
        "the new outbox holds {} accounts, the old one {}",
        got.len(),
        heads.len()
    );
    for (account, want) in heads {
        ensure!(
            got.get(account) == Some(want),
            "{account}: the new outbox ends at {:?}, the old one at {want:?}",
            got.get(account)
        );
    }
    report.accounts = heads.len() as u64;
    Ok(())
}

/// Where the ledger on `keys_topic` moved (prefix, partitions), if `kledger repartition` moved
/// it: the last record of partition 0 is the marker (nothing writes there after a move).
pub fn moved_to(config: &Config, keys_topic: &str) -> anyhow::Result<Option<(String, i32)>> {
    let Some((low, high)) = topics::watermarks(
        &kledger_kafka::clients::client_config(config),
        keys_topic,
        1,
    )?
    .first()
    .copied() else {
        return Ok(None);
    };
    if high <= low {
        return Ok(None);
    }
    let mut last = None;
    read_to_end(
        config,
        keys_topic,
        "moved",
        &BTreeMap::from([(0, high - 1)]),
        &mut |batch| {
            last = batch.last().cloned();
            Ok(())
        },
    )?;
    let Some(m) = last.filter(|m| m.key() == Some(MOVED_RECORD_KEY)) else {
        return Ok(None);
    };
    let text = String::from_utf8_lossy(m.payload().unwrap_or_default()).into_owned();
    let (prefix, n) = text.split_once('\n').unwrap_or((text.as_str(), "0"));
    Ok(Some((prefix.to_owned(), n.parse().unwrap_or(0))))
}
