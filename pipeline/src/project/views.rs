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
        }
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
