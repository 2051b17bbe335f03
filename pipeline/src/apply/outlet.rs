//! Delivery: the processor's producers — the main one for commits, receipts and dead letters
//! (transactional in that mode), and in `idempotent` mode one that does not linger for the keys
//! topic — with their delivery reports, renewed together when librdkafka gives up on them.
//!
//! May not touch: state, the intents reader.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use rdkafka::producer::Producer;

use crate::records::Outgoing;
use crate::records::delivery::{self, Deliveries, Sent, Settled, await_delivery};
use kledger_kafka::clients::{DeliveryContext, PolledProducer, producer_config};
use kledger_kafka::topics::Topics;
use kledger_runtime::config::{Config, DeliveryMode};

/// The processor's producers and their reports.
pub(super) struct Outlet {
    producer: PolledProducer<DeliveryContext>,
    /// The producer of the keys topic's records in `idempotent` mode (none in `transactional`
    /// mode, where they belong to the batch's transaction): `linger.ms=0`, since a batch's
    /// commits wait for its data keys. Its reports arrive with the main producer's.
    keys_producer: Option<PolledProducer<DeliveryContext>>,
    deliveries: Deliveries,
    /// The id of the next record sent (reports name it).
    next_id: u64,
    /// Where the waits for reports report an unreachable broker.
    watch: delivery::Watch,
    topics: Arc<Topics>,
    /// `processor.delivery_timeout_ms`.
    timeout: Duration,
}

impl Outlet {
    /// Creates the producers (initialising transactions in that mode).
    pub(super) fn new(
        config: &Config,
        topics: Arc<Topics>,
        watch: delivery::Watch,
    ) -> anyhow::Result<Self> {
        let (producer, keys_producer, deliveries) = producers(config, watch.clone())?;
        Ok(Self {
            producer,
            keys_producer,
            deliveries,
            next_id: 0,
            watch,
            topics,
            timeout: Duration::from_millis(config.processor.delivery_timeout_ms),
        })
    }

    /// Hands `out` to the producer — the keys producer when `keys` and there is one — each
    /// with the configured delivery timeout; [`Self::settle`] waits for their reports.
    pub(super) fn send(&mut self, keys: bool, out: &[Outgoing]) -> Sent {
        let producer = match &self.keys_producer {
            Some(p) if keys => p,
            _ => &self.producer,
        };
        delivery::send(producer, &self.topics, &mut self.next_id, out, self.timeout)
    }

    /// Waits for the reports of `sent`.
    pub(super) fn settle(&mut self, sent: Sent) -> Settled {
        await_delivery(&mut self.deliveries, sent)
    }

    /// The main producer (transactions, metadata queries).
    pub(super) fn producer(&self) -> &PolledProducer<DeliveryContext> {
        &self.producer
    }

    /// The consumer's reach of the cluster, as the waits watch it.
    pub(super) fn watch(&self) -> &delivery::Watch {
        &self.watch
    }

    /// Replaces the producers when librdkafka has given up on one (a fatal error, e.g. the
    /// gapless guarantee after a refused record): reports of the old ones are dropped with them.
    pub(super) fn renew_if_fatal(&mut self, config: &Config) -> anyhow::Result<()> {
        let fatal = std::iter::once(&self.producer)
            .chain(&self.keys_producer)
            .find_map(|p| p.client().fatal_error());
        let Some(fatal) = fatal else {
            return Ok(());
        };
        tracing::warn!(error = ?fatal, "the producer failed for good; creating a new one");
        (self.producer, self.keys_producer, self.deliveries) =
            producers(config, self.watch.clone())?;
        Ok(())
    }

    /// Flushes both producers, waiting at most `timeout` for each.
    pub(super) fn flush(&self, timeout: Duration) {
        let _ = self.producer.flush(timeout);
        if let Some(keys) = &self.keys_producer {
            let _ = keys.flush(timeout);
        }
    }
}

/// The transactional id in `transactional` mode.
fn transactional_id(config: &Config) -> Option<String> {
    (config.kafka.delivery_mode == DeliveryMode::Transactional).then(|| {
        config
            .kafka
            .transactional_id
            .clone()
            .unwrap_or_else(|| format!("{}-tx", config.kafka.group_id))
    })
}

/// The processor's producer (transactional in that mode), its keys producer (`idempotent`
/// mode), and their delivery reports.
#[allow(clippy::type_complexity)] // the three parts a (re)created producer replaces together
fn producers(
    config: &Config,
    watch: delivery::Watch,
) -> anyhow::Result<(
    PolledProducer<DeliveryContext>,
    Option<PolledProducer<DeliveryContext>>,
    Deliveries,
)> {
    let (dl_tx, deliveries) = std::sync::mpsc::channel();
    let tx_id = transactional_id(config);
    let producer: PolledProducer<DeliveryContext> = producer_config(config, tx_id.as_deref())
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
