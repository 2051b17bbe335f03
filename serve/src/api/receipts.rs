//! One receipts reader per process for ingress waits (`POST /v1/intents?wait_ms=`): a consumer
//! assigned to every receipts partition from its end, on its own thread, hands each receipt to
//! the requests waiting for it. However many requests wait, they add no consumer and no thread;
//! at most `api.waits_max` wait at once (a request beyond is answered without waiting, `202`).
//!
//! It touches no state and no other topic; [`super::ingress`] registers a wait before it
//! produces the intent, so the receipt cannot pass unseen.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use kledger_schemas::Receipt;
use kledger_schemas::avro::decode;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use tokio::sync::oneshot;

use kledger_kafka::codec::Codec;
use kledger_runtime::config::Config;

type Key = (String, String);

/// The shared reader and the waits on it.
#[derive(Debug, Default)]
pub struct Receipts {
    waits: Mutex<BTreeMap<Key, Vec<oneshot::Sender<Receipt>>>>,
    count: AtomicUsize,
    started: OnceLock<Result<(), String>>,
}

/// A registered wait; dropping it withdraws the wait.
#[derive(Debug)]
pub struct Wait {
    rx: oneshot::Receiver<Receipt>,
    key: Key,
    owner: Arc<Receipts>,
}

impl Wait {
    /// The receipt, if it arrives by `deadline`.
    pub async fn until(mut self, deadline: Instant) -> Option<Receipt> {
        let left = deadline.saturating_duration_since(Instant::now());
        tokio::time::timeout(left, &mut self.rx).await.ok()?.ok()
    }
}

impl Drop for Wait {
    fn drop(&mut self) {
        // Closed first, so the retain below drops this wait's sender too.
        self.rx.close();
        self.owner.count.fetch_sub(1, Ordering::Relaxed);
        if let Ok(mut w) = self.owner.waits.lock()
            && let Some(v) = w.get_mut(&self.key)
        {
            v.retain(|tx| !tx.is_closed());
            if v.is_empty() {
                w.remove(&self.key);
            }
        }
    }
}

/// How long the first wait gives the reader to find the partitions' ends.
const START_TIMEOUT: Duration = Duration::from_secs(10);

impl Receipts {
    /// Registers a wait for the receipt of `action_id` in `account`, starting the reader on
    /// first use (blocking until it is positioned). None when `api.waits_max` wait already or
    /// the reader cannot start.
    pub fn wait(
        self: &Arc<Self>,
        config: &Config,
        partitions: i32,
        codec: &Arc<Codec>,
        account: &str,
        action_id: &str,
    ) -> Option<Wait> {
        if let Err(e) = self
            .started
            .get_or_init(|| self.start(config, partitions, codec.clone()))
        {
            tracing::warn!(error = %e, "the receipts reader could not start; not waiting");
            return None;
        }
        if self.count.fetch_add(1, Ordering::Relaxed) >= config.api.waits_max {
            self.count.fetch_sub(1, Ordering::Relaxed);
            return None;
        }
        let (tx, rx) = oneshot::channel();
        let key = (account.to_owned(), action_id.to_owned());
        self.waits
            .lock()
            .ok()?
            .entry(key.clone())
            .or_default()
            .push(tx);
        Some(Wait {
            rx,
            key,
            owner: self.clone(),
        })
    }

    /// Assigns every receipts partition at its end (looked up now), then reads on a thread.
    fn start(
        self: &Arc<Self>,
        config: &Config,
        partitions: i32,
        codec: Arc<Codec>,
    ) -> Result<(), String> {
        let topic = config.topics().receipts;
        let consumer: BaseConsumer = kledger_kafka::clients::client_config(config)
            .set("client.id", "kledger-ingress-receipts")
            .set("group.id", format!("{}-ingress", config.kafka.group_id))
            .set("enable.auto.commit", "false")
            .set("isolation.level", "read_committed")
            .create()
            .map_err(|e| e.to_string())?;
        let deadline = Instant::now() + START_TIMEOUT;
        let mut tpl = TopicPartitionList::new();
        for p in 0..partitions {
            let left = deadline.saturating_duration_since(Instant::now());
            let (_, high) = consumer
                .fetch_watermarks(&topic, p, left)
                .map_err(|e| format!("receipts partition {p}: {e}"))?;
            tpl.add_partition_offset(&topic, p, Offset::Offset(high))
                .map_err(|e| e.to_string())?;
        }
        consumer.assign(&tpl).map_err(|e| e.to_string())?;
        // The thread holds the reader weakly: it ends once the API is dropped.
        let me = Arc::downgrade(self);
        std::thread::Builder::new()
            .name("kledger-receipts".into())
            .spawn(move || read(&me, &consumer, &codec))
            .map_err(|e| e.to_string())?;
        Ok(())
    }
}

/// Reads receipts and hands them to their waits until the reader is dropped.
fn read(me: &std::sync::Weak<Receipts>, consumer: &BaseConsumer, codec: &Codec) {
    loop {
        let polled = consumer.poll(Duration::from_millis(200));
        let Some(this) = me.upgrade() else {
            return;
        };
        this.deliver(polled, codec);
    }
}

impl Receipts {
    /// Hands a polled receipt to the waits for it.
    fn deliver(
        &self,
        polled: Option<rdkafka::error::KafkaResult<rdkafka::message::BorrowedMessage<'_>>>,
        codec: &Codec,
    ) {
        let Some(Ok(m)) = polled else {
            return;
        };
        if self.count.load(Ordering::Relaxed) == 0 {
            return;
        }
        let Some(r) = m.payload().and_then(|b| decode::<Receipt>(b, codec).ok()) else {
            return;
        };
        let key = (r.account_id.clone(), r.action_id.clone());
        let senders = self.waits.lock().ok().and_then(|mut w| w.remove(&key));
        for tx in senders.into_iter().flatten() {
            let _ = tx.send(r.clone());
        }
    }
}
