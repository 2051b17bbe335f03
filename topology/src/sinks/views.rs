//! The view materializer: folds the outbox into the [`ViewStore`] and publishes each changed
//! account's rendered View to the compacted views topic.
//!
//! Per batch (see [`super::reader`] for reading): fold the commits (commits already folded
//! are skipped), write the store together with its positions and the accounts whose View is
//! due, publish those Views and await their delivery, mark them published. A crash anywhere
//! repeats work but loses none: Views due are republished at start. A gap in an account's
//! commits stops the sink, because a view folded over a gap would be silently wrong.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use anyhow::Context;
use kledger_state::{ViewBatch, ViewStore};

use super::reader::OutboxReader;
use crate::config::Config;
use crate::generations::Live;
use crate::metrics as m;
use crate::registry::Codec;
use crate::runtime::batch::{Decided, OutKind, Outgoing};
use crate::runtime::status::Status;

/// The sink's label in metrics and its consumer group suffix.
pub const SINK: &str = "views";
/// Views published per delivery round at most (bounds a round after a long outage).
const PENDING_ROUND_MAX: usize = 10_000;

/// The view sink (runs on its own OS thread: every call in it may block).
#[derive(Debug)]
pub struct ViewSink {
    config: Arc<Config>,
    live: Arc<Live<ViewStore>>,
    store: Arc<ViewStore>,
    generation: String,
    reader: OutboxReader,
    status: Arc<Status>,
    shutdown: Arc<AtomicBool>,
}

/// How often the sink looks for a rebuilt generation.
const GENERATION_CHECK: std::time::Duration = std::time::Duration::from_secs(1);

impl ViewSink {
    /// Connects the clients and subscribes to the outbox; folds into `live`'s active
    /// generation.
    pub fn new(
        config: Arc<Config>,
        live: Arc<Live<ViewStore>>,
        status: Arc<Status>,
        shutdown: Arc<AtomicBool>,
        codec: Arc<Codec>,
    ) -> anyhow::Result<Self> {
        status.set_sink(SINK, false);
        let reader = OutboxReader::new(
            &config,
            SINK,
            config.views.batch_records_max,
            config.views.batch_wait_ms,
            codec,
        )?;
        Ok(Self {
            config,
            store: live.get(),
            generation: live.generation(),
            live,
            reader,
            status,
            shutdown,
        })
    }

    /// Runs until shutdown, an error, or a rebuilt generation was swapped in (the caller
    /// starts the sink again on it).
    pub fn run(mut self) -> anyhow::Result<()> {
        let result = self.publish_pending().and_then(|()| self.run_loop());
        self.reader.close();
        result
    }

    fn run_loop(&mut self) -> anyhow::Result<()> {
        let store = self.store.clone();
        let position_of = move |p: i32| -> anyhow::Result<i64> { Ok(store.position(p)?) };
        let mut checked = Instant::now();
        let interval = std::time::Duration::from_millis(self.config.views.publish_interval_ms);
        let mut published = Instant::now();
        while !self.shutdown.load(Ordering::Relaxed) {
            // Views are rendered from every row of their account: render each due account at
            // most once per interval, however many of its commits arrived meanwhile.
            if published.elapsed() >= interval {
                self.publish_pending()?;
                published = Instant::now();
            }
            if checked.elapsed() >= GENERATION_CHECK {
                checked = Instant::now();
                self.live.refresh()?;
                if self.live.generation() != self.generation {
                    tracing::info!(generation = %self.live.generation(), "view store rebuilt; the sink starts again on it");
                    return Ok(());
                }
            }
            self.reader.handle_events(&position_of)?;
            let batch = self.reader.next_batch()?;
            self.status.set_sink(SINK, self.reader.caught_up());
            if batch.is_empty() {
                continue;
            }
            let started = Instant::now();
            let commits = self.reader.decode(&batch)?;
            let read = batch.iter().map(|msg| {
                (
                    rdkafka::Message::partition(msg),
                    rdkafka::Message::offset(msg),
                )
            });
            fold(&self.store, &commits, read)?;
            metrics::histogram!(m::SINK_WRITE_SECONDS, "sink" => SINK)
                .record(started.elapsed().as_secs_f64());
            self.reader.report_progress(&position_of)?;
        }
        self.publish_pending()
    }

    /// Publishes the View of every account whose View is due, then marks them published.
    fn publish_pending(&mut self) -> anyhow::Result<()> {
        loop {
            let accounts = self.store.pending(PENDING_ROUND_MAX)?;
            if accounts.is_empty() {
                return Ok(());
            }
            let mut d = Decided::default();
            for a in &accounts {
                let view = self.store.view(
                    a,
                    self.config.views.account_rows_max,
                    self.config.limits.record_bytes_max,
                )?;
                d.out.push(Outgoing {
                    kind: OutKind::View,
                    partition: None,
                    key: Some(a.clone().into_bytes()),
                    payload: self.reader.codec().encode(&view),
                    timestamp: Some(view.as_of),
                    headers: Vec::new(),
                    intent_time: None,
                    source: None,
                });
            }
            self.reader.deliver(&d)?;
            self.store.published(&accounts)?;
            metrics::counter!(m::VIEWS_PUBLISHED_TOTAL).increment(accounts.len() as u64);
            if accounts.len() < PENDING_ROUND_MAX {
                return Ok(());
            }
        }
    }
}

/// Folds one batch of outbox records into `store`: `commits` (decoded, with their partition
/// and offset), then the positions advance past every record `read` lists (undecodable ones
/// too); one write. Counted in metrics.
pub fn fold(
    store: &ViewStore,
    commits: &[(i32, i64, kledger_schemas::Commit)],
    read: impl Iterator<Item = (i32, i64)>,
) -> anyhow::Result<()> {
    let mut vb = ViewBatch::default();
    for (p, offset, commit) in commits {
        store
            .fold(&mut vb, commit, *p, *offset)
            .with_context(|| format!("view fold at outbox partition {p} offset {offset}"))?;
    }
    for (p, offset) in read {
        store.advance(&mut vb, p, offset)?;
    }
    metrics::counter!(m::SINK_RECORDS_TOTAL, "sink" => SINK, "result" => "folded")
        .increment(vb.folded);
    metrics::counter!(m::SINK_RECORDS_TOTAL, "sink" => SINK, "result" => "skipped")
        .increment(vb.skipped);
    store.write(vb)?;
    Ok(())
}
