//! The view materializer: folds the outbox into the [`ViewStore`] and publishes each changed
//! account's rendered View to the compacted views topic.
//!
//! Per batch ([`super`] drives it): fold the commits (commits already folded are
//! skipped), write the store together with its positions and the accounts whose View is due;
//! every `views.publish_interval_ms`, publish those Views, await their delivery and mark them
//! published. A crash anywhere repeats work but loses none: Views due are republished at
//! start. A gap in an account's commits stops the sink, because a view folded over a gap
//! would be silently wrong. A rebuilt generation publishes nothing: its Views equal the
//! published ones.
//!
//! **Expiry that deletes.** With [`TtlSweep`] (the live view sink, `policy.ttl.purge`), every
//! `policy.ttl.sweep_interval_ms` the sink reads its store's expiry index up to its clock and
//! publishes to the intents topic the purge intent of each active row past its `expires_at`
//! ([`kledger_processors::ttl`]), with the clock as the record timestamp; the processor
//! decides it like any other purge. Everything in the intent comes from the row, so a sweep
//! repeated (by another host's view sink, or after a restart) publishes the same intent, a
//! `duplicate`. The clock is the sweep's only input from outside the topics.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use kledger_state::{Lane, ViewBatch, ViewStore};

use super::{OutboxCommit, Outputs, Projection};
use crate::records::{OutKind, Outgoing};
use kledger_runtime::config::{LimitsConfig, ViewsConfig};
use kledger_runtime::metrics as m;

/// The sink's label in metrics and its consumer group suffix.
pub const SINK: &str = "views";
/// The sources sink's label and group suffix: the same materializer over the sources lane
/// ([`kledger_state::Lane::Sources`]), in a store of its own, publishing no View.
pub const SOURCES_SINK: &str = "sources";
/// Views published per delivery round at most (bounds a round after a long outage).
const PENDING_ROUND_MAX: usize = 10_000;

/// The sink that folds `store`'s lane.
pub fn sink_of(store: &ViewStore) -> &'static str {
    sink_of_lane(store.lane())
}

/// The sink that folds `lane`.
pub fn sink_of_lane(lane: Lane) -> &'static str {
    match lane {
        Lane::Ledger => SINK,
        Lane::Sources => SOURCES_SINK,
    }
}

/// What expiry's sweep publishes per delivery at most, and remembers as sent (a row's purge
/// is published once while it is in flight; forgotten wholesale past this, so at worst
/// published again: a `duplicate`).
const TTL_SENT_MAX: usize = 10_000;

/// The clock of expiry's sweep, ms since the epoch (tests set their own).
pub type Clock = Arc<dyn Fn() -> i64 + Send + Sync>;

/// Expiry's sweep of a live view sink (`policy.ttl`).
pub struct TtlSweep {
    interval: Duration,
    max: usize,
    partitions: i32,
    clock: Clock,
    last: Option<Instant>,
    sent: std::collections::BTreeSet<String>,
}

impl std::fmt::Debug for TtlSweep {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TtlSweep")
            .field("interval", &self.interval)
            .field("max", &self.max)
            .finish_non_exhaustive()
    }
}

impl TtlSweep {
    /// The sweep `policy` asks for, publishing to an intents topic of `partitions`
    /// partitions, on the wall clock.
    pub fn new(policy: &kledger_runtime::config::TtlPolicy, partitions: i32) -> Self {
        let clock: Clock = Arc::new(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64)
        });
        Self::with_clock(policy, partitions, clock)
    }

    /// The same sweep on `clock`.
    pub fn with_clock(
        policy: &kledger_runtime::config::TtlPolicy,
        partitions: i32,
        clock: Clock,
    ) -> Self {
        Self {
            interval: Duration::from_millis(policy.sweep_interval_ms),
            max: policy.sweep_max.max(1),
            partitions,
            clock,
            last: None,
            sent: std::collections::BTreeSet::new(),
        }
    }

    /// Publishes the purge intent of each row of `store` past its expiry by the clock (at
    /// most `max`), once per interval (the first turn sweeps at once).
    fn sweep(&mut self, store: &ViewStore, out: &mut dyn Outputs) -> anyhow::Result<()> {
        if self.last.is_some_and(|l| l.elapsed() < self.interval) {
            return Ok(());
        }
        self.last = Some(Instant::now());
        let now = (self.clock)();
        let mut records = Vec::new();
        let mut ids = Vec::new();
        // Rows whose purge is in flight (sent) take no share of the sweep's `max`.
        let look = self.max.saturating_add(self.sent.len());
        for (account, id) in store.expired(now, look)? {
            if records.len() >= self.max {
                break;
            }
            let Some(row) = store.row_unopened(&account, &id)? else {
                continue;
            };
            if !kledger_processors::ttl::due(&row, now) {
                // Not active any more (its purge or another change is folded): the entry goes.
                if row.status != kledger_schemas::Status::Active {
                    store.forget_expiry(&account, &row)?;
                }
                continue;
            }
            let intent = kledger_processors::ttl::purge_intent(&row);
            if self.sent.contains(&intent.action_id) {
                continue;
            }
            records.push(Outgoing {
                kind: OutKind::Intent,
                partition: Some(kledger_processors::routing::partition_for(
                    account.as_bytes(),
                    self.partitions,
                )),
                key: Some(account.clone().into_bytes()),
                payload: out.codec().encode(&intent),
                timestamp: Some(now),
                headers: Vec::new(),
                intent_time: None,
                source: None,
            });
            ids.push(intent.action_id);
        }
        if records.is_empty() {
            return Ok(());
        }
        if let Err(e) = out.deliver(&records) {
            // Not sent: the next sweep publishes them again.
            tracing::warn!(error = %format!("{e:#}"), purges = records.len(), "publishing expired rows' purges failed; the next sweep tries again");
            return Ok(());
        }
        if self.sent.len() + ids.len() > TTL_SENT_MAX {
            self.sent.clear();
        }
        metrics::counter!(m::TTL_PURGES_TOTAL).increment(ids.len() as u64);
        tracing::info!(purges = ids.len(), "expired rows' purges published");
        self.sent.extend(ids);
        Ok(())
    }
}

/// The view store as a projection of the outbox.
#[derive(Debug)]
pub struct ViewProjection {
    store: Arc<ViewStore>,
    /// [`SINK`], or [`SOURCES_SINK`] for a store of the sources lane.
    sink: &'static str,
    /// Rows rendered per View at most (`views.account_rows_max`).
    account_rows_max: usize,
    /// The record budget (a View is cut to fit it).
    record_bytes_max: usize,
    /// Views are rendered from every row of their account: each due account is rendered at
    /// most once per interval, however many of its commits arrived meanwhile.
    interval: Duration,
    published: Instant,
    /// Expiry's sweep (the live view sink of the ledger's lane, `policy.ttl.purge`).
    ttl: Option<TtlSweep>,
}

impl ViewProjection {
    /// The projection into `store` with the view settings `views`, within the record budget
    /// of `limits`.
    pub fn new(views: &ViewsConfig, limits: &LimitsConfig, store: Arc<ViewStore>) -> Self {
        Self {
            sink: sink_of(&store),
            store,
            account_rows_max: views.account_rows_max,
            record_bytes_max: limits.record_bytes_max,
            interval: Duration::from_millis(views.publish_interval_ms),
            published: Instant::now(),
            ttl: None,
        }
    }

    /// The same projection, sweeping expired rows into purge intents with `ttl` (the ledger's
    /// lane only: source rows have no expiry).
    pub fn with_ttl(mut self, ttl: TtlSweep) -> Self {
        if self.store.lane() == Lane::Ledger {
            self.ttl = Some(ttl);
        }
        self
    }

    /// Publishes the View of every account whose View is due, then marks them published.
    fn publish_pending(&mut self, out: &mut dyn Outputs) -> anyhow::Result<()> {
        loop {
            let accounts = self.store.pending(PENDING_ROUND_MAX)?;
            if accounts.is_empty() {
                return Ok(());
            }
            let mut records = Vec::with_capacity(accounts.len());
            for a in &accounts {
                let view = self
                    .store
                    .view(a, self.account_rows_max, self.record_bytes_max)?;
                records.push(Outgoing {
                    kind: OutKind::View,
                    partition: None,
                    key: Some(a.clone().into_bytes()),
                    payload: out.codec().encode(&view),
                    timestamp: Some(view.as_of),
                    headers: Vec::new(),
                    intent_time: None,
                    source: None,
                });
            }
            if let Err(e) = out.deliver(&records) {
                // They stay due: the next turn publishes them again (the views topic is
                // compacted by account, so a View delivered twice is one).
                tracing::warn!(error = %format!("{e:#}"), accounts = accounts.len(), "publishing Views failed; they stay due");
                metrics::counter!(m::VIEWS_PUBLISH_FAILURES_TOTAL).increment(1);
                return Ok(());
            }
            self.store.published(&accounts)?;
            metrics::counter!(m::VIEWS_PUBLISHED_TOTAL).increment(accounts.len() as u64);
            if accounts.len() < PENDING_ROUND_MAX {
                return Ok(());
            }
        }
    }
}

impl Projection for ViewProjection {
    fn name(&self) -> &'static str {
        self.sink
    }

    fn position(&self, p: i32) -> anyhow::Result<i64> {
        Ok(self.store.position(p)?)
    }

    fn key_cache(&self) -> anyhow::Result<&dyn kledger_state::KeyCache> {
        Ok(self.store.as_ref())
    }

    fn apply(&mut self, commits: &[OutboxCommit], read: &[(i32, i64)]) -> anyhow::Result<()> {
        fold(&self.store, commits, read.iter().copied())
    }

    fn publish(&mut self, out: &mut dyn Outputs, all: bool) -> anyhow::Result<()> {
        // With no broker in reach the Views due wait (they stay due) instead of holding the
        // drive for a delivery timeout: the sink keeps folding, serving and reporting.
        if (all || self.published.elapsed() >= self.interval) && out.in_reach() {
            self.publish_pending(out)?;
            self.published = Instant::now();
        }
        if let Some(ttl) = self.ttl.as_mut().filter(|_| out.in_reach()) {
            ttl.sweep(&self.store, out)?;
        }
        // A purge's erasure waits for the interval; the first turn after it (or the end of the
        // drive, `all`) runs it.
        self.store.erase_due(all)?;
        kledger_runtime::metrics::erasures(self.sink, self.store.erasures());
        Ok(())
    }

    fn erase_pending(&mut self) -> anyhow::Result<()> {
        self.store.erase_due(true)?;
        kledger_runtime::metrics::erasures(self.sink, self.store.erasures());
        Ok(())
    }

    fn finish(&mut self) -> anyhow::Result<()> {
        // A rebuilt generation republishes nothing: mark every View due as published.
        loop {
            let due = self.store.pending(PENDING_ROUND_MAX)?;
            if due.is_empty() {
                return Ok(());
            }
            self.store.published(&due)?;
        }
    }
}

/// Folds one batch of outbox records into `store`: `commits` (decoded, with their partition
/// and offset), then the positions advance past every record `read` lists (undecodable ones
/// too); one write. Counted in metrics under the store's sink.
pub fn fold(
    store: &ViewStore,
    commits: &[OutboxCommit],
    read: impl Iterator<Item = (i32, i64)>,
) -> anyhow::Result<()> {
    let sink = sink_of(store);
    let mut vb = ViewBatch::default();
    for c in commits {
        store
            .fold(&mut vb, &c.commit, c.partition, c.offset)
            .with_context(|| {
                format!(
                    "view fold at outbox partition {} offset {}",
                    c.partition, c.offset
                )
            })?;
    }
    for (p, offset) in read {
        store.advance(&mut vb, p, offset)?;
    }
    metrics::counter!(m::SINK_RECORDS_TOTAL, "sink" => sink, "result" => "folded")
        .increment(vb.folded);
    metrics::counter!(m::SINK_RECORDS_TOTAL, "sink" => sink, "result" => "skipped")
        .increment(vb.skipped);
    store.write(vb)?;
    kledger_runtime::metrics::erasures(sink, store.erasures());
    Ok(())
}
