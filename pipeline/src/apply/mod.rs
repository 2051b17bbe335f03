//! The apply processor loop, on its own OS thread (every rdkafka call here may block).
//!
//! Per batch: collect records → decide against state plus the batch's pending writes →
//! produce commits, receipts and dead letters to the input's partition → await delivery (or
//! commit the Kafka transaction with the input offsets) → write one RocksDB batch (rows, heads,
//! actions, outbox positions) → commit input offsets. In `idempotent` mode the next batch is
//! decided while the previous one is delivered, and a batch's state write runs on its own
//! thread while the next one is sent (see `lifecycle` and `durable`).
//!
//! Rebalance callbacks arrive as events. Assigned partitions stay paused until a restore
//! thread has folded their outbox partition into state; then they are sought to their committed
//! offset and resumed. A partition whose share of a batch fails is retried the same way: it is
//! paused, state catches up with whatever reached the outbox, and reading resumes at the last
//! committed offset, so a commit is never produced twice by a retry. Retries go on with backoff
//! for as long as the failure lasts; after `processor.degraded_after_attempts` the processor
//! reports itself degraded (`/readyz`, `kledger_processor_degraded`) and keeps trying. It stops
//! only on what a retry cannot fix: a fork, a gap or corrupt state ([`Unrecoverable`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::time::{Duration, Instant};

use anyhow::Context;
use kledger_state::{RocksStore, StateStore, keys};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::Producer;
use rdkafka::{Offset, TopicPartitionList};

use self::batch::Refused;
use self::restore::restore;
use crate::context::AppContext;
use crate::records::delivery::{self, Deliveries};
use kledger_kafka::clients::{
    DeliveryContext, EventContext, RebalanceEvent, consumer_config, producer_config,
};
use kledger_kafka::codec::Codec;
use kledger_kafka::coverage::Coverage;
use kledger_kafka::reader::PartitionReader;
use kledger_kafka::topics::Topics;
use kledger_runtime::config::{Config, DeliveryMode};
use kledger_runtime::metrics as m;
use kledger_runtime::shutdown::Shutdown;
use kledger_runtime::status::Status;

pub mod batch;
mod durable;
mod keywatch;
mod lifecycle;
pub(crate) mod restore;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Part {
    Restoring { generation: u64, attempt: u32 },
    Ready { failures: u32 },
}

struct RestoreDone {
    partitions: Vec<i32>,
    generation: u64,
    result: anyhow::Result<u64>,
}

enum BatchError {
    Retry(String),
    Fatal(anyhow::Error),
}

/// A condition no retry can fix: the processor stops with it (a fork or gap in an account's
/// chain, corrupt state, history missing from the outbox).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Unrecoverable(pub String);

/// Whether `e` is a condition no retry can fix ([`Unrecoverable`], or a fork, gap or corrupt
/// state), as opposed to a broker or disk failure that may pass.
pub fn unrecoverable(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<Unrecoverable>().is_some()
            || c.downcast_ref::<kledger_state::StateError>()
                .is_some_and(|s| !matches!(s, kledger_state::StateError::Rocks(_)))
    })
}

/// The processor's parts.
pub struct Processor {
    config: Arc<Config>,
    topics: Arc<Topics>,
    partitions: i32,
    store: Arc<RocksStore>,
    codec: Arc<Codec>,
    reader: PartitionReader<EventContext>,
    events: Receiver<RebalanceEvent>,
    producer: kledger_kafka::clients::PolledProducer<DeliveryContext>,
    /// The producer of the keys topic's records in `idempotent` mode (none in `transactional`
    /// mode, where they belong to the batch's transaction): `linger.ms=0`, since a batch's
    /// commits wait for its data keys. Its reports arrive with the main producer's.
    keys_producer: Option<kledger_kafka::clients::PolledProducer<DeliveryContext>>,
    deliveries: Deliveries,
    next_id: u64,
    parts: BTreeMap<i32, Part>,
    generation: u64,
    restores: Receiver<RestoreDone>,
    restore_tx: Sender<RestoreDone>,
    restore_threads: Vec<std::thread::JoinHandle<()>>,
    /// Partitions revoked since the last assignment (eager rebalances revoke everything and
    /// often hand the same partitions back).
    revoked: BTreeSet<i32>,
    /// Intents whose commit the broker refused for good (answered `rejected` when read again).
    refused: Refused,
    /// Whether the group owns every intents partition.
    coverage: Coverage,
    /// Partitions failing since when (cleared by their next durable batch).
    failing_since: BTreeMap<i32, Instant>,
    /// Since when the group has given this consumer nothing after revoking its partitions.
    rejoining_since: Option<Instant>,
    /// The consumer's reach of the cluster and where it is reported (while idle, and by the
    /// waits for delivery too).
    watch: delivery::Watch,
    status: Arc<Status>,
    shutdown: Shutdown,
    /// The decision's bounds, with the ledger's secret.
    limits: kledger_processors::Limits,
    /// Per keys-topic partition, the offset this processor's next record there lands at if
    /// nothing else writes there ([`Processor::follow_keys`]); set by each restore.
    keys_next: BTreeMap<i32, i64>,
    /// Destroyed keys may be queued for tombstones ([`Processor::drain_shred`]).
    shred_due: bool,
    /// When the keys topic's ends were last compared with `keys_next` ([`keywatch`]).
    keys_checked: Option<Instant>,
    /// After a failed catch-up of the keys topic, not before this.
    keys_retry_at: Option<Instant>,
    /// The threads a batch's partitions are decided on ([`batch::decide_parallel`]).
    apply_pool: batch::ApplyPool,
    /// The thread batches' state writes run on ([`durable`]).
    state_writer: durable::StateWriter,
}

impl std::fmt::Debug for Processor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Processor")
            .field("parts", &self.parts)
            .finish_non_exhaustive()
    }
}

fn transactional_id(config: &Config) -> Option<String> {
    (config.kafka.delivery_mode == DeliveryMode::Transactional).then(|| {
        config
            .kafka
            .transactional_id
            .clone()
            .unwrap_or_else(|| format!("{}-tx", config.kafka.group_id))
    })
}

impl Processor {
    /// Connects the clients and subscribes, over `store`, with the context's configuration,
    /// codec, status, shutdown and checked partition count.
    pub fn new(ctx: &AppContext, store: Arc<RocksStore>) -> anyhow::Result<Self> {
        let AppContext {
            config,
            codec,
            status,
            shutdown,
            partitions,
            embedders: _,
        } = ctx.clone();
        // Rules v4 key ids and hashes with the ledger's secret, read (or made) at `run`.
        let limits = config.limits.decide(Default::default());
        let topics = Arc::new(config.topics());
        let (ev_tx, events) = channel();
        let cc = consumer_config(&config, "apply");
        let coverage = Coverage::new("apply", &config.kafka.group_id, &topics.intents, partitions);
        let context = EventContext::new(ev_tx, topics.intents.clone());
        let reach = context.reach();
        let consumer: BaseConsumer<EventContext> =
            cc.create_with_context(context).context("create consumer")?;
        let reader = PartitionReader::group(
            consumer,
            &topics.intents,
            "apply",
            config.processor.batch.bounds(),
        )?;
        let watch = delivery::Watch::new(&config, reach, status.clone());
        let (producer, keys_producer, deliveries) = new_producer(&config, watch.clone())?;
        let (restore_tx, restores) = channel();
        let state_writer =
            durable::StateWriter::new(store.clone()).context("start the state writer")?;
        let apply_threads = config.processor.apply_threads();
        tracing::info!(
            apply_threads,
            "processor: batches decided on {apply_threads} thread(s)"
        );
        Ok(Self {
            config,
            topics,
            partitions,
            store,
            codec,
            reader,
            events,
            producer,
            keys_producer,
            deliveries,
            next_id: 0,
            parts: BTreeMap::new(),
            generation: 0,
            restores,
            restore_tx,
            restore_threads: Vec::new(),
            revoked: BTreeSet::new(),
            refused: Refused::new(),
            coverage,
            failing_since: BTreeMap::new(),
            watch,
            rejoining_since: None,
            status,
            shutdown,
            limits,
            keys_next: BTreeMap::new(),
            shred_due: true,
            keys_checked: None,
            keys_retry_at: None,
            apply_pool: batch::ApplyPool::new(apply_threads),
            state_writer,
        })
    }

    /// Checks (when due) that the group owns every intents partition; partitions left
    /// unowned past the grace period make this consumer leave and join the group again, after
    /// settling the batch in flight ([`kledger_kafka::coverage`]).
    fn keep_covered(&mut self, in_flight: &mut Option<lifecycle::InFlight>) -> anyhow::Result<()> {
        if !self.status.joined() {
            return Ok(());
        }
        let mine: BTreeSet<i32> = self.parts.keys().copied().collect();
        let rejoin = self
            .coverage
            .check(self.reader.consumer(), &mine, Instant::now());
        self.status.set_unowned(self.coverage.unowned().to_vec());
        if rejoin {
            self.settle(in_flight)?;
            tracing::warn!(unowned = ?self.coverage.unowned(), "leaving and joining the group again");
            self.reader.rejoin()?;
        }
        Ok(())
    }

    /// Replaces the producer when librdkafka has given up on it (a fatal error, e.g. the
    /// gapless guarantee after a refused record): reports of the old one are dropped with it.
    fn renew_producer_if_fatal(&mut self) -> anyhow::Result<()> {
        let fatal = std::iter::once(&self.producer)
            .chain(&self.keys_producer)
            .find_map(|p| p.client().fatal_error());
        let Some(fatal) = fatal else {
            return Ok(());
        };
        tracing::warn!(error = ?fatal, "the producer failed for good; creating a new one");
        (self.producer, self.keys_producer, self.deliveries) =
            new_producer(&self.config, self.watch.clone())?;
        Ok(())
    }

    /// Reports the processor degraded while a partition has failed
    /// `processor.degraded_after_attempts` times in a row or for longer than
    /// `processor.degraded_after_ms` (a restore that cannot reach the broker fails only after
    /// its stall bound), and well again when none has.
    fn update_degraded(&mut self) {
        self.failing_since.retain(|p, _| self.parts.contains_key(p));
        // `processor.degraded_after_ms`, as the watch holds it.
        let after = self.watch.after;
        // The root cause first: with no broker reachable, the group cannot assign anything
        // either.
        if let Some(why) = self.watch.reason() {
            self.status.set_degraded(Some(why));
            return;
        }
        if let Some(since) = self.rejoining_since.filter(|t| t.elapsed() >= after) {
            self.status.set_degraded(Some(format!(
                "the group has assigned this processor nothing for {} s since revoking its partitions (is the broker reachable?)",
                since.elapsed().as_secs()
            )));
            return;
        }
        if let Some((p, since)) = self
            .failing_since
            .iter()
            .find(|(_, t)| t.elapsed() >= after)
        {
            self.status.set_degraded(Some(format!(
                "partition {p} has failed for {} s and is being retried",
                since.elapsed().as_secs()
            )));
            return;
        }
        let worst = self
            .parts
            .values()
            .map(|p| match p {
                Part::Ready { failures } => *failures,
                Part::Restoring { attempt, .. } => *attempt,
            })
            .max()
            .unwrap_or(0);
        if worst < self.config.processor.degraded_after_attempts {
            self.status.set_degraded(None);
        }
    }

    fn transactional(&self) -> bool {
        self.config.kafka.delivery_mode == DeliveryMode::Transactional
    }

    /// The ledger's secret (rules v4), read from the keys topic or written there first, tried
    /// again with backoff while the broker does not answer (degraded after
    /// `processor.degraded_after_attempts`); `None` at shutdown.
    fn ledger_secret(&self) -> Option<kledger_processors::ids::LedgerSecret> {
        let mut attempt = 0u32;
        loop {
            match crate::keys::ledger_secret(&self.config, &self.topics.keys) {
                Ok(s) => {
                    if attempt > 0 {
                        self.status.set_degraded(None);
                    }
                    return Some(s);
                }
                Err(e) => {
                    attempt += 1;
                    tracing::warn!(error = %format!("{e:#}"), attempt, "reading the ledger's secret failed; trying again");
                    if attempt >= self.config.processor.degraded_after_attempts {
                        self.status.set_degraded(Some(format!(
                            "the ledger's secret could not be read from {} ({attempt} attempts): {e:#}",
                            self.topics.keys
                        )));
                    }
                    if self.shutdown.sleep(backoff(&self.config, attempt)) {
                        return None;
                    }
                }
            }
        }
    }

    /// Runs until shutdown or a fatal error.
    pub fn run(mut self) -> anyhow::Result<()> {
        if self.limits.keyed() {
            match self.ledger_secret() {
                Some(s) => self.limits.secret = s,
                None => {
                    self.status.set_stopped();
                    return Ok(());
                }
            }
        }
        let mut last_sizes: Option<Instant> = None;
        let mut in_flight: Option<lifecycle::InFlight> = None;
        let result = loop {
            if self.shutdown.is_triggered() {
                // Finish the batch in flight so its effects are durable before stopping.
                break self.settle(&mut in_flight);
            }
            let asked = Instant::now();
            let batch = self.reader.next_batch();
            // Time spent reading input: from the first record to the batch's end (`collect`),
            // and before it, waiting for a first record and checking positions (`wait`).
            let span = self.reader.collect_span();
            if let Some(span) = span {
                metrics::histogram!(m::BATCH_PHASE_SECONDS, "phase" => "collect")
                    .record(span.as_secs_f64());
            }
            metrics::histogram!(m::BATCH_PHASE_SECONDS, "phase" => "wait").record(
                asked
                    .elapsed()
                    .saturating_sub(span.unwrap_or_default())
                    .as_secs_f64(),
            );
            // The last batch's state write ran while the batch in flight was sent and this
            // input read; nothing reads state before it is done.
            if let Err(e) = self.settle_durable(&mut in_flight) {
                break Err(e);
            }
            // A rebalance waits for the batch in flight: its state and offsets are written
            // before partitions change hands (a revoke is acknowledged after a flush).
            let events: Vec<RebalanceEvent> = self.events.try_iter().collect();
            if !events.is_empty()
                && let Err(e) = self.settle(&mut in_flight)
            {
                break Err(e);
            }
            if let Err(e) = self.handle_events(events) {
                break Err(e);
            }
            if let Err(e) = self.keep_covered(&mut in_flight) {
                break Err(e);
            }
            if let Err(e) = self.watch_keys(&mut in_flight) {
                break Err(e);
            }
            // An unreachable broker is degraded even with nothing to decide (no request fails
            // then); reachable again, the reason is cleared — also when a wait for delivery
            // reported it ([`delivery::Watch`]).
            if !self.failing_since.is_empty()
                || self.rejoining_since.is_some()
                || self.watch.reach.unreachable()
                || self.status.degraded().is_some()
            {
                self.update_degraded();
            }
            if let Err(e) = self.step(batch, &mut in_flight) {
                break Err(e);
            }
            if last_sizes.is_none_or(|t| t.elapsed() > Duration::from_secs(5)) {
                last_sizes = Some(Instant::now());
                if let Ok(s) = self.store.sizes() {
                    metrics::gauge!(m::ROCKSDB_LIVE_DATA_BYTES).set(s.live_data_bytes as f64);
                    metrics::gauge!(m::ROCKSDB_PENDING_COMPACTION_BYTES)
                        .set(s.pending_compaction_bytes as f64);
                }
                if let Err(e) = self.store.erase_due() {
                    tracing::warn!(error = %e, "erasing purged rows' older versions failed; retried");
                }
                kledger_runtime::metrics::erasures("state", self.store.erasures());
            }
        };
        self.status.set_stopped();
        // A clean stop leaves no purge waiting for its erasure, and no destroyed key waiting
        // for its tombstone (docs/privacy.md).
        if result.is_ok() {
            if let Err(e) = self.drain_shred() {
                tracing::warn!(error = %e, "writing destroyed keys' tombstones at stop failed");
            }
            if let Err(e) = self.store.erase_now() {
                tracing::warn!(error = %e, "erasing purged rows' older versions at stop failed");
            }
        }
        self.reader.leave();
        let _ = self.producer.flush(Duration::from_secs(10));
        if let Some(keys) = &self.keys_producer {
            let _ = keys.flush(Duration::from_secs(10));
        }
        // Restores see the shutdown between batches; wait so the store is released.
        self.shutdown.trigger();
        for h in self.restore_threads.drain(..) {
            let _ = h.join();
        }
        result
    }

    fn handle_events(&mut self, events: Vec<RebalanceEvent>) -> anyhow::Result<()> {
        for ev in events {
            match ev {
                RebalanceEvent::Assigned(ps) => {
                    tracing::info!(partitions = ?ps, "assigned");
                    self.status.set_joined();
                    if self.rejoining_since.take().is_some() {
                        self.update_degraded();
                    }
                    // A revoked partition that did not come back is dropped now (when
                    // configured); one that came back keeps its state and restore folds only
                    // what it missed.
                    let gone: Vec<i32> = std::mem::take(&mut self.revoked)
                        .into_iter()
                        .filter(|p| !ps.contains(p))
                        .collect();
                    if self.config.state.drop_on_revoke {
                        for p in gone {
                            self.store
                                .drop_partition(p)
                                .context("drop revoked partition")?;
                        }
                    }
                    self.start_restore(&ps, 0)?;
                }
                RebalanceEvent::Revoked(ps) => {
                    tracing::info!(partitions = ?ps, "revoked");
                    for p in &ps {
                        self.parts.remove(p);
                        self.reader.stop(*p);
                        self.revoked.insert(*p);
                    }
                    if self.parts.is_empty() {
                        self.status.set_rejoining();
                        self.rejoining_since.get_or_insert_with(Instant::now);
                    }
                }
                RebalanceEvent::Error(e) => tracing::warn!(error = %e, "rebalance error"),
            }
        }
        while let Ok(done) = self.restores.try_recv() {
            let current: Vec<i32> = done
                .partitions
                .iter()
                .copied()
                .filter(|p| matches!(self.parts.get(p), Some(Part::Restoring { generation, .. }) if *generation == done.generation))
                .collect();
            if let Err(e) = done.result {
                if unrecoverable(&e) || self.shutdown.is_triggered() {
                    return Err(e.context("restore failed"));
                }
                // A broker or disk failure: restore again, with backoff, for as long as it lasts.
                let why = format!("restore: {e:#}");
                self.resync(&current.iter().copied().collect(), &why)?;
                continue;
            }
            if let Err(e) = self.resume(&current) {
                // The group's offsets could not be read (a coordinator moving, say): the
                // partitions stay paused and restore again, a bounded number of times.
                let why = format!("resuming after a restore: {e:#}");
                self.resync(&current.iter().copied().collect(), &why)?;
            }
        }
        self.publish_status();
        Ok(())
    }

    fn start_restore(&mut self, ps: &[i32], attempt: u32) -> anyhow::Result<()> {
        if ps.is_empty() {
            return Ok(());
        }
        self.generation += 1;
        let generation = self.generation;
        for p in ps {
            self.parts.insert(
                *p,
                Part::Restoring {
                    generation,
                    attempt,
                },
            );
        }
        let tpl = self.tpl(ps, None)?;
        self.reader.consumer().pause(&tpl).context("pause")?;
        for p in ps {
            // Records fetched before the pause are dropped until the partition is resumed.
            self.reader.stop(*p);
        }
        let (config, store, codec, shutdown, tx) = (
            self.config.clone(),
            self.store.clone(),
            self.codec.clone(),
            self.shutdown.clone(),
            self.restore_tx.clone(),
        );
        let topics = self.topics.clone();
        let partitions = ps.to_vec();
        let backoff = backoff(&config, attempt);
        let handle = std::thread::Builder::new()
            .name("kledger-restore".into())
            .spawn(move || {
                shutdown.sleep(backoff);
                let result = restore(
                    &config,
                    &topics,
                    &store,
                    &partitions,
                    codec.as_ref(),
                    &shutdown,
                    &|_| {},
                );
                let _ = tx.send(RestoreDone {
                    partitions,
                    generation,
                    result,
                });
            })
            .context("spawn restore thread")?;
        self.restore_threads.retain(|h| !h.is_finished());
        self.restore_threads.push(handle);
        Ok(())
    }

    fn resume(&mut self, ps: &[i32]) -> anyhow::Result<()> {
        if ps.is_empty() {
            return Ok(());
        }
        let committed = self
            .reader
            .consumer()
            .committed_offsets(self.tpl(ps, None)?, COMMITTED_TIMEOUT)?;
        self.reader
            .consumer()
            .resume(&self.tpl(ps, None)?)
            .context("resume")?;
        for e in committed.elements() {
            let p = e.partition();
            // No committed offset: from the start (Position accepts a start past 0 after
            // probing it).
            let committed = match e.offset() {
                Offset::Offset(o) => o,
                _ => 0,
            };
            // Resume where both the group and the state agree: never past what state holds.
            // An offset committed by an instance whose last commits this restore did not see
            // (it still wrote after losing the partition) would otherwise skip deciding intents
            // whose effects are missing here.
            let held = kledger_state::next_offset(self.store.as_ref(), p, keys::META_INPUT_NEXT)?;
            let from = committed.min(held);
            if from < committed {
                tracing::info!(
                    partition = p,
                    committed,
                    from,
                    "resuming before the committed offset, where state ends"
                );
            }
            self.reader.start(p, from, "resume");
        }
        for p in ps {
            let failures = match self.parts.get(p) {
                Some(Part::Restoring { attempt, .. }) => *attempt,
                _ => 0,
            };
            self.parts.insert(*p, Part::Ready { failures });
            // Restore read the keys topic to its end: this processor's next key lands there.
            let keys_next =
                kledger_state::next_offset(self.store.as_ref(), *p, keys::META_KEYS_NEXT)?;
            self.keys_next.insert(*p, keys_next);
            self.shred_due = true;
            // Reading again: a partition that keeps failing is counted by its attempts now.
            self.failing_since.remove(p);
        }
        tracing::info!(partitions = ?ps, "ready");
        Ok(())
    }

    fn publish_status(&self) {
        let restoring = self
            .parts
            .values()
            .filter(|p| matches!(p, Part::Restoring { .. }))
            .count();
        let ready = self.parts.len() - restoring;
        metrics::gauge!(m::PARTITIONS, "state" => "restoring").set(restoring as f64);
        metrics::gauge!(m::PARTITIONS, "state" => "ready").set(ready as f64);
        self.status
            .set_partitions(self.parts.keys().copied().collect(), restoring);
    }

    fn tpl(
        &self,
        ps: &[i32],
        offsets: Option<&BTreeMap<i32, i64>>,
    ) -> anyhow::Result<TopicPartitionList> {
        let mut tpl = TopicPartitionList::new();
        for p in ps {
            match offsets.and_then(|o| o.get(p)) {
                Some(o) => {
                    tpl.add_partition_offset(&self.topics.intents, *p, Offset::Offset(*o))?
                }
                None => {
                    tpl.add_partition(&self.topics.intents, *p);
                }
            }
        }
        Ok(tpl)
    }

    /// Re-syncs partitions after a failed batch: state catches up with whatever reached the
    /// outbox, then reading resumes at the committed offset.
    fn resync(&mut self, ps: &BTreeSet<i32>, why: &str) -> anyhow::Result<()> {
        metrics::counter!(m::BATCH_RETRIES_TOTAL).increment(1);
        // Only partitions still assigned to this instance.
        let ps: Vec<i32> = ps
            .iter()
            .copied()
            .filter(|p| self.parts.contains_key(p))
            .collect();
        let attempt = ps
            .iter()
            .map(|p| match self.parts.get(p) {
                Some(Part::Ready { failures }) => *failures,
                Some(Part::Restoring { attempt, .. }) => *attempt,
                None => 0,
            })
            .max()
            .unwrap_or(0)
            + 1;
        let now = Instant::now();
        for p in &ps {
            self.failing_since.entry(*p).or_insert(now);
        }
        if attempt >= self.config.processor.degraded_after_attempts {
            if attempt == self.config.processor.degraded_after_attempts {
                tracing::error!(partitions = ?ps, attempt, reason = why, "the processor is degraded: partitions keep failing; retrying with backoff");
            }
            self.status.set_degraded(Some(format!(
                "partitions {ps:?} failed {attempt} times in a row: {why}"
            )));
        }
        tracing::warn!(partitions = ?ps, attempt, reason = why, "batch failed; re-syncing state and retrying");
        self.start_restore(&ps, attempt)
    }
}

/// The processor's producer (transactional in that mode), its keys producer (`idempotent`
/// mode), and their delivery reports.
#[allow(clippy::type_complexity)] // the three parts a (re)created producer replaces together
fn new_producer(
    config: &Config,
    watch: delivery::Watch,
) -> anyhow::Result<(
    kledger_kafka::clients::PolledProducer<DeliveryContext>,
    Option<kledger_kafka::clients::PolledProducer<DeliveryContext>>,
    Deliveries,
)> {
    let (dl_tx, deliveries) = channel();
    let tx_id = transactional_id(config);
    let producer: kledger_kafka::clients::PolledProducer<DeliveryContext> =
        producer_config(config, tx_id.as_deref())
            .create_with_context(DeliveryContext::new(dl_tx.clone()))
            .context("create producer")?;
    if tx_id.is_some() {
        producer
            .init_transactions(Duration::from_secs(30))
            .context("init transactions")?;
        return Ok((producer, None, Deliveries::watched(deliveries, watch)));
    }
    let keys = producer_config(config, None)
        .set("linger.ms", "0")
        .create_with_context(DeliveryContext::new(dl_tx))
        .context("create the keys producer")?;
    Ok((producer, Some(keys), Deliveries::watched(deliveries, watch)))
}

/// How long resuming restored partitions waits for the group's committed offsets. The loop
/// waits with it (no report, rebalance or shutdown meanwhile); a coordinator answers in
/// milliseconds, and a failed read restores and resumes again with backoff. It was 30 s: with
/// the broker gone right after a restore, the loop reported nothing for that long.
const COMMITTED_TIMEOUT: Duration = Duration::from_secs(5);

fn backoff(config: &Config, attempt: u32) -> Duration {
    kledger_runtime::backoff::Backoff::from_millis(
        config.processor.backoff_ms_initial,
        config.processor.backoff_ms_max,
    )
    .before_attempt(attempt)
}
