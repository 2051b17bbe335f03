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
use kledger_schemas::avro::encode_single_object;
use kledger_state::{ViewBatch, ViewStore};

use super::reader::OutboxReader;
use crate::config::Config;
use crate::metrics as m;
use crate::runtime::batch::{Decided, OutKind, Outgoing};

/// The sink's label in metrics and its consumer group suffix.
pub const SINK: &str = "views";
/// Views published per delivery round at most (bounds a round after a long outage).
const PENDING_ROUND_MAX: usize = 10_000;

/// The view sink (runs on its own OS thread: every call in it may block).
#[derive(Debug)]
pub struct ViewSink {
    config: Arc<Config>,
    store: Arc<ViewStore>,
    reader: OutboxReader,
    shutdown: Arc<AtomicBool>,
}

impl ViewSink {
    /// Connects the clients and subscribes to the outbox.
    pub fn new(
        config: Arc<Config>,
        store: Arc<ViewStore>,
        shutdown: Arc<AtomicBool>,
    ) -> anyhow::Result<Self> {
        let reader = OutboxReader::new(
            &config,
            SINK,
            config.views.batch_records_max,
            config.views.batch_wait_ms,
        )?;
        Ok(Self {
            config,
            store,
            reader,
            shutdown,
        })
    }

    /// Runs until shutdown or an error.
    pub fn run(mut self) -> anyhow::Result<()> {
        let result = self.publish_pending().and_then(|()| self.run_loop());
        self.reader.close();
        result
    }

    fn run_loop(&mut self) -> anyhow::Result<()> {
        let store = self.store.clone();
        let position_of = move |p: i32| -> anyhow::Result<i64> { Ok(store.position(p)?) };
        while !self.shutdown.load(Ordering::Relaxed) {
            self.reader.handle_events(&position_of)?;
            let batch = self.reader.next_batch()?;
            if batch.is_empty() {
                continue;
            }
            let started = Instant::now();
            let commits = self.reader.decode(&batch)?;
            let mut vb = ViewBatch::default();
            for (p, offset, commit) in &commits {
                self.store
                    .fold(&mut vb, commit, *p, *offset)
                    .with_context(|| {
                        format!("view fold at outbox partition {p} offset {offset}")
                    })?;
            }
            // Undecodable records still advance the position.
            for msg in &batch {
                self.store.advance(
                    &mut vb,
                    rdkafka::Message::partition(msg),
                    rdkafka::Message::offset(msg),
                )?;
            }
            metrics::counter!(m::SINK_RECORDS_TOTAL, "sink" => SINK, "result" => "folded")
                .increment(vb.folded);
            metrics::counter!(m::SINK_RECORDS_TOTAL, "sink" => SINK, "result" => "skipped")
                .increment(vb.skipped);
            self.store.write(vb)?;
            self.publish_pending()?;
            metrics::histogram!(m::SINK_WRITE_SECONDS, "sink" => SINK)
                .record(started.elapsed().as_secs_f64());
            self.reader.report_progress(&position_of)?;
        }
        Ok(())
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
                let view = self.store.view(a, self.config.views.account_rows_max)?;
                d.out.push(Outgoing {
                    kind: OutKind::View,
                    partition: None,
                    key: Some(a.clone().into_bytes()),
                    payload: encode_single_object(&view),
                    timestamp: Some(view.as_of),
                    headers: Vec::new(),
                    intent_time: None,
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
