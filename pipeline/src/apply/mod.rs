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
//!
//! The processor is its loop ([`Processor::run`]) over parts with one job each:
//! - `membership`: which partitions it holds and where each stands; `restore` folds them;
//! - the batch stages ([`batch`] decides, `lifecycle` sends, delivers and settles — a batch's
//!   life is `Processor::step`, top to bottom — and `durable` writes state);
//! - `keywatch`: the keys topic's records it did not write, and destroyed keys' tombstones;
//! - `outlet`: the producers and their delivery reports; `health`: degraded reporting.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use anyhow::Context;
use kledger_state::{RocksStore, StateStore, keys};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{Offset, TopicPartitionList};

use self::batch::Refused;
use self::health::Health;
use self::keywatch::KeyWatch;
use self::membership::Membership;
use self::outlet::Outlet;
use self::restore::Restores;
use crate::context::AppContext;
use crate::records::delivery;
use kledger_kafka::clients::{EventContext, RebalanceEvent, consumer_config, coverage_config};
use kledger_kafka::codec::Codec;
use kledger_kafka::coverage::{Coverage, CoverageWatch};
use kledger_kafka::reader::PartitionReader;
use kledger_kafka::topics::Topics;
use kledger_runtime::config::{Config, DeliveryMode};
use kledger_runtime::metrics as m;
use kledger_runtime::shutdown::Shutdown;
use kledger_runtime::status::Status;

pub mod batch;
mod durable;
mod health;
mod keywatch;
mod lifecycle;
mod membership;
mod outlet;
pub(crate) mod restore;

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

/// The processor: its clients, and the parts of its job.
pub struct Processor {
    config: Arc<Config>,
    topics: Arc<Topics>,
    partitions: i32,
    store: Arc<RocksStore>,
    codec: Arc<Codec>,
    reader: PartitionReader<EventContext>,
    events: Receiver<RebalanceEvent>,
    status: Arc<Status>,
    shutdown: Shutdown,
    // Membership and restore.
    membership: Membership,
    restores: Restores,
    /// Whether the group owns every intents partition (checked on its own thread).
    coverage: CoverageWatch,
    // The batch stages.
    /// The decision's bounds, with the ledger's secret.
    limits: kledger_processors::Limits,
    /// Intents whose commit the broker refused for good (answered `rejected` when read again).
    refused: Refused,
    /// The threads a batch's partitions are decided on ([`batch::decide_parallel`]).
    apply_pool: batch::ApplyPool,
    /// The thread batches' state writes run on ([`durable`]).
    state_writer: durable::StateWriter,
    // Keys following and shredding.
    keys: KeyWatch,
    // Delivery and degraded reporting.
    outlet: Outlet,
    health: Health,
}

impl std::fmt::Debug for Processor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Processor")
            .field("membership", &self.membership)
            .finish_non_exhaustive()
    }
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
        let coverage = CoverageWatch::start(
            &coverage_config(&config, "apply", &config.kafka.group_id),
            Coverage::new("apply", &config.kafka.group_id, &topics.intents, partitions),
        )?;
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
        let outlet = Outlet::new(&config, topics.clone(), watch)?;
        let state_writer =
            durable::StateWriter::new(store.clone()).context("start the state writer")?;
        let apply_threads = config.processor.apply_threads();
        tracing::info!(
            apply_threads,
            "processor: batches decided on {apply_threads} thread(s)"
        );
        let health = Health::new(
            status.clone(),
            Duration::from_millis(config.processor.degraded_after_ms),
            config.processor.degraded_after_attempts,
        );
        Ok(Self {
            keys: KeyWatch::new(Duration::from_millis(config.processor.keys_check_ms)),
            config,
            topics,
            partitions,
            store,
            codec,
            reader,
            events,
            status,
            shutdown,
            membership: Membership::default(),
            restores: Restores::new(),
            coverage,
            limits,
            refused: Refused::new(),
            apply_pool: batch::ApplyPool::new(apply_threads),
            state_writer,
            outlet,
            health,
        })
    }

    /// Checks (when due) that the group owns every intents partition; partitions left
    /// unowned past the grace period make this consumer leave and join the group again, after
    /// settling the batch in flight ([`kledger_kafka::coverage`]).
    fn keep_covered(&mut self, in_flight: &mut Option<lifecycle::InFlight>) -> anyhow::Result<()> {
        if !self.status.joined() {
            return Ok(());
        }
        self.coverage.set_mine(self.membership.held());
        self.status.set_unowned(self.coverage.unowned());
        if self.coverage.take_rejoin() {
            self.settle(in_flight)?;
            tracing::warn!(unowned = ?self.coverage.unowned(), "leaving and joining the group again");
            self.reader.rejoin()?;
        }
        Ok(())
    }

    /// Reports the processor degraded or well again ([`health`]).
    fn update_degraded(&mut self) {
        let broker = self.outlet.watch().reason();
        self.health.update(&self.membership, broker, Instant::now());
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
            if let Err(e) = self.turn(&mut in_flight) {
                break Err(e);
            }
            if last_sizes.is_none_or(|t| t.elapsed() > Duration::from_secs(5)) {
                last_sizes = Some(Instant::now());
                self.report_store();
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
        self.outlet.flush(Duration::from_secs(10));
        // Restores see the shutdown between batches; wait so the store is released.
        self.shutdown.trigger();
        self.restores.join();
        result
    }

    /// One turn of the loop: reads a batch, settles the last state write, serves the group's
    /// events and the coverage and keys checks, reports health, and steps the batch.
    fn turn(&mut self, in_flight: &mut Option<lifecycle::InFlight>) -> anyhow::Result<()> {
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
        self.settle_durable(in_flight)?;
        // A rebalance waits for the batch in flight: its state and offsets are written
        // before partitions change hands (a revoke is acknowledged after a flush).
        let events: Vec<RebalanceEvent> = self.events.try_iter().collect();
        if !events.is_empty() {
            self.settle(in_flight)?;
        }
        self.handle_events(events)?;
        self.keep_covered(in_flight)?;
        self.watch_keys(in_flight)?;
        // An unreachable broker is degraded even with nothing to decide (no request fails
        // then); reachable again, the reason is cleared — also when a wait for delivery
        // reported it ([`delivery::Watch`]).
        if self.health.watching()
            || self.membership.rejoining_since().is_some()
            || self.outlet.watch().reach.unreachable()
        {
            self.update_degraded();
        }
        self.step(batch, in_flight)
    }

    /// The store's sizes to metrics, and its erasures when due.
    fn report_store(&self) {
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

    fn handle_events(&mut self, events: Vec<RebalanceEvent>) -> anyhow::Result<()> {
        for ev in events {
            match ev {
                RebalanceEvent::Assigned(ps) => {
                    tracing::info!(partitions = ?ps, "assigned");
                    self.status.set_joined();
                    // A revoked partition that did not come back is dropped now (when
                    // configured); one that came back keeps its state and restore folds only
                    // what it missed.
                    let (gone, was_waiting) = self.membership.assigned(&ps);
                    if was_waiting {
                        self.update_degraded();
                    }
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
                        self.reader.stop(*p);
                    }
                    self.membership.revoked(&ps, Instant::now());
                    if self.membership.rejoining_since().is_some() {
                        self.status.set_rejoining();
                    }
                }
                RebalanceEvent::Error(e) => tracing::warn!(error = %e, "rebalance error"),
            }
        }
        for done in self.restores.finished() {
            let current = self.membership.restored(&done.partitions, done.generation);
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

    /// Pauses `ps` and restores them on a thread of their own, after the backoff of `attempt`.
    fn start_restore(&mut self, ps: &[i32], attempt: u32) -> anyhow::Result<()> {
        if ps.is_empty() {
            return Ok(());
        }
        let generation = self.membership.restoring(ps, attempt);
        let tpl = self.tpl(ps, None)?;
        self.reader.consumer().pause(&tpl).context("pause")?;
        for p in ps {
            // Records fetched before the pause are dropped until the partition is resumed.
            self.reader.stop(*p);
        }
        self.restores.start(
            self.config.clone(),
            self.topics.clone(),
            self.store.clone(),
            self.codec.clone(),
            self.shutdown.clone(),
            ps.to_vec(),
            generation,
            backoff(&self.config, attempt),
        )
    }

    /// Resumes restored partitions where both the group and the state agree.
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
            self.membership.ready(*p);
            // Restore read the keys topic to its end: this processor's next key lands there.
            let keys_next =
                kledger_state::next_offset(self.store.as_ref(), *p, keys::META_KEYS_NEXT)?;
            self.keys.restored(*p, keys_next);
            // Reading again: a partition that keeps failing is counted by its attempts now.
            self.health.recovered(*p);
        }
        tracing::info!(partitions = ?ps, "ready");
        Ok(())
    }

    fn publish_status(&self) {
        let held = self.membership.held();
        let restoring = self.membership.restoring_count();
        metrics::gauge!(m::PARTITIONS, "state" => "restoring").set(restoring as f64);
        metrics::gauge!(m::PARTITIONS, "state" => "ready").set((held.len() - restoring) as f64);
        self.status
            .set_partitions(held.into_iter().collect(), restoring);
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
    fn resync(&mut self, ps: &std::collections::BTreeSet<i32>, why: &str) -> anyhow::Result<()> {
        metrics::counter!(m::BATCH_RETRIES_TOTAL).increment(1);
        // Only partitions still assigned to this instance.
        let (ps, attempt) = self.membership.retry(ps);
        self.health.failing(&ps, attempt, why, Instant::now());
        tracing::warn!(partitions = ?ps, attempt, reason = why, "batch failed; re-syncing state and retrying");
        self.start_restore(&ps, attempt)
    }
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
