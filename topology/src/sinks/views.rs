//! The view materializer: folds the outbox into the [`ViewStore`] and publishes each changed
//! account's rendered View to the compacted views topic.
//!
//! Per batch: read outbox records in order per partition (positions come from the store, not
//! from the group's offsets, so a lost or fresh store always starts from the beginning), fold
//! them (commits already folded are skipped), write the store together with its positions and
//! the accounts whose View is due, publish those Views and await their delivery, mark them
//! published, and commit the group's offsets last (they only report lag). A crash anywhere
//! repeats work but loses none: Views due are republished at start.
//!
//! An outbox record that does not decode is dead-lettered with its bytes (code
//! `sink_undecodable`) and skipped; a gap in an account's commits stops the sink, because a
//! view folded over a gap would be silently wrong.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, channel};
use std::time::{Duration, Instant};

use anyhow::Context;
use kledger_schemas::Commit;
use kledger_schemas::avro::{KnownSchemas, decode, encode_single_object};
use kledger_state::{ViewBatch, ViewStore};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::{Message, OwnedMessage};
use rdkafka::producer::ThreadedProducer;
use rdkafka::{Offset, TopicPartitionList};

use crate::config::Config;
use crate::metrics as m;
use crate::runtime::batch::{Decided, OutKind, Outgoing, dead_letter};
use crate::runtime::clients::{
    Delivery, DeliveryContext, EventContext, RebalanceEvent, consumer_config, producer_config,
};
use crate::runtime::delivery::{await_delivery, send};
use crate::runtime::position::{Position, Verdict};
use crate::topics::Topics;

/// The sink's label in metrics.
pub const SINK: &str = "views";
/// Dead-letter code of an outbox record the sink cannot decode.
pub const UNDECODABLE: &str = "sink_undecodable";
/// Views published per delivery round at most (bounds a round after a long outage).
const PENDING_ROUND_MAX: usize = 10_000;

/// The view sink (runs on its own OS thread: every call in it may block).
pub struct ViewSink {
    config: Arc<Config>,
    topics: Topics,
    store: Arc<ViewStore>,
    consumer: BaseConsumer<EventContext>,
    events: Receiver<RebalanceEvent>,
    producer: ThreadedProducer<DeliveryContext>,
    deliveries: Receiver<Delivery>,
    next_id: u64,
    positions: BTreeMap<i32, Position>,
    lookup: KnownSchemas,
    shutdown: Arc<AtomicBool>,
}

impl std::fmt::Debug for ViewSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ViewSink")
            .field("positions", &self.positions)
            .finish_non_exhaustive()
    }
}

impl ViewSink {
    /// Connects the clients and subscribes to the outbox.
    pub fn new(
        config: Arc<Config>,
        store: Arc<ViewStore>,
        shutdown: Arc<AtomicBool>,
    ) -> anyhow::Result<Self> {
        let topics = config.topics();
        let (ev_tx, events) = channel();
        let mut cc = consumer_config(&config);
        cc.set("group.id", format!("{}-views", config.kafka.group_id));
        let consumer: BaseConsumer<EventContext> = cc
            .create_with_context(EventContext::for_sink(ev_tx, topics.outbox.clone(), SINK))
            .context("view sink consumer")?;
        consumer
            .subscribe(&[&topics.outbox])
            .context("subscribe to the outbox")?;
        let (dl_tx, deliveries) = channel();
        let producer = producer_config(&config, None)
            .create_with_context(DeliveryContext::new(dl_tx))
            .context("view sink producer")?;
        Ok(Self {
            config,
            topics,
            store,
            consumer,
            events,
            producer,
            deliveries,
            next_id: 0,
            positions: BTreeMap::new(),
            lookup: KnownSchemas::default(),
            shutdown,
        })
    }

    /// Runs until shutdown or an error.
    pub fn run(mut self) -> anyhow::Result<()> {
        self.publish_pending()?;
        let result = self.run_loop();
        self.consumer.unsubscribe();
        result
    }

    fn run_loop(&mut self) -> anyhow::Result<()> {
        while !self.shutdown.load(Ordering::Relaxed) {
            self.handle_events()?;
            let batch = self.collect();
            self.handle_events()?;
            let batch = self.in_order(batch)?;
            if batch.is_empty() {
                continue;
            }
            self.apply(&batch)?;
        }
        Ok(())
    }

    fn handle_events(&mut self) -> anyhow::Result<()> {
        while let Ok(ev) = self.events.try_recv() {
            match ev {
                RebalanceEvent::Assigned(ps) => {
                    let mut tpl = TopicPartitionList::new();
                    for &p in &ps {
                        tpl.add_partition(&self.topics.outbox, p);
                    }
                    self.consumer.resume(&tpl).context("resume")?;
                    for p in ps {
                        let from = self.store.position(p)?;
                        // A seek right after assignment often fails ("erroneous state": no
                        // fetch yet). Reading then starts at the group's offset, and the
                        // position check drops records before `from` or seeks back to it.
                        if let Err(e) = self.consumer.seek(
                            &self.topics.outbox,
                            p,
                            Offset::Offset(from),
                            Duration::from_secs(30),
                        ) {
                            tracing::debug!(partition = p, error = %e, "view sink seek on assign");
                        }
                        self.positions.insert(p, Position::at(from));
                    }
                }
                RebalanceEvent::Revoked(ps) => {
                    for p in ps {
                        self.positions.remove(&p);
                    }
                }
                RebalanceEvent::Error(e) => {
                    tracing::warn!(error = %e, "view sink rebalance failed")
                }
            }
        }
        Ok(())
    }

    fn collect(&mut self) -> Vec<OwnedMessage> {
        let max = self.config.views.batch_records_max;
        let wait = Duration::from_millis(self.config.views.batch_wait_ms);
        let mut batch = Vec::new();
        let mut first: Option<Instant> = None;
        while batch.len() < max {
            let timeout = match first {
                None => Duration::from_millis(100),
                Some(f) => f.saturating_duration_since(Instant::now()),
            };
            match self.consumer.poll(timeout) {
                Some(Ok(msg)) => {
                    first.get_or_insert_with(|| Instant::now() + wait);
                    batch.push(msg.detach());
                }
                Some(Err(e)) => {
                    tracing::debug!(error = %e, "view sink poll");
                    if first.is_none() {
                        break;
                    }
                }
                None => break,
            }
            if first.is_some_and(|f| Instant::now() >= f) {
                break;
            }
        }
        batch
    }

    /// Keeps records that continue each assigned partition's position (see
    /// [`crate::runtime::position`]).
    fn in_order(&mut self, batch: Vec<OwnedMessage>) -> anyhow::Result<Vec<OwnedMessage>> {
        let mut keep = Vec::with_capacity(batch.len());
        let mut reseek = std::collections::BTreeSet::new();
        for msg in batch {
            let p = msg.partition();
            if reseek.contains(&p) {
                continue;
            }
            let Some(pos) = self.positions.get_mut(&p) else {
                continue;
            };
            match pos.check(msg.offset()) {
                Verdict::Accept => keep.push(msg),
                Verdict::Drop => {}
                Verdict::SeekTo(o) => {
                    self.consumer.seek(
                        &self.topics.outbox,
                        p,
                        Offset::Offset(o),
                        Duration::from_secs(30),
                    )?;
                    reseek.insert(p);
                }
            }
        }
        Ok(keep)
    }

    fn apply(&mut self, batch: &[OwnedMessage]) -> anyhow::Result<()> {
        let started = Instant::now();
        let mut vb = ViewBatch::default();
        let mut dead = Decided::default();
        for msg in batch {
            let commit: Commit = match msg
                .payload()
                .ok_or_else(|| "null record".to_owned())
                .and_then(|b| decode(b, &self.lookup).map_err(|e| e.to_string()))
            {
                Ok(c) => c,
                Err(e) => {
                    tracing::error!(partition = msg.partition(), offset = msg.offset(), error = %e, "outbox record does not decode; dead-lettered");
                    dead.out
                        .push(dead_letter(msg, &self.topics.outbox, UNDECODABLE, e));
                    metrics::counter!(m::SINK_RECORDS_TOTAL, "sink" => SINK, "result" => "deadletter").increment(1);
                    continue;
                }
            };
            self.store
                .fold(&mut vb, &commit, msg.partition(), msg.offset())
                .with_context(|| {
                    format!(
                        "view fold at outbox partition {} offset {}",
                        msg.partition(),
                        msg.offset()
                    )
                })?;
        }
        if !dead.out.is_empty() {
            self.deliver(&dead)?;
        }
        metrics::counter!(m::SINK_RECORDS_TOTAL, "sink" => SINK, "result" => "folded")
            .increment(vb.folded);
        metrics::counter!(m::SINK_RECORDS_TOTAL, "sink" => SINK, "result" => "skipped")
            .increment(vb.skipped);
        self.store.write(vb)?;
        self.publish_pending()?;
        metrics::histogram!(m::SINK_WRITE_SECONDS, "sink" => SINK)
            .record(started.elapsed().as_secs_f64());
        // Group offsets only report progress (lag); positions live in the store.
        let mut tpl = TopicPartitionList::new();
        for p in self.positions.keys() {
            tpl.add_partition_offset(
                &self.topics.outbox,
                *p,
                Offset::Offset(self.store.position(*p)?),
            )?;
        }
        if let Err(e) = self.consumer.commit(&tpl, CommitMode::Async) {
            tracing::debug!(error = %e, "view sink offset commit");
        }
        Ok(())
    }

    fn deliver(&mut self, d: &Decided) -> anyhow::Result<()> {
        let timeout = Duration::from_millis(self.config.processor.delivery_timeout_ms);
        let mut sent = send(&self.producer, &self.topics, &mut self.next_id, d, timeout)
            .map_err(anyhow::Error::msg)?;
        await_delivery(&self.deliveries, &mut sent).map_err(anyhow::Error::msg)?;
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
            self.deliver(&d)?;
            self.store.published(&accounts)?;
            metrics::counter!(m::VIEWS_PUBLISHED_TOTAL).increment(accounts.len() as u64);
            if accounts.len() < PENDING_ROUND_MAX {
                return Ok(());
            }
        }
    }
}
