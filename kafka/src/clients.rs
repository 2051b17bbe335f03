//! Kafka clients: configurations, the rebalance-to-event consumer context and the delivery
//! context.
//!
//! rdkafka settings and why:
//! - producers: `enable.idempotence=true` (acks=all, ordered, gapless per partition: a retried
//!   send never duplicates or reorders), `linger.ms=5` and `batch.num.messages=10000` (batches
//!   without adding latency to small loads), `compression.type=lz4`,
//!   `partitioner=murmur2_random` (Java-compatible, although kledger sets partitions itself);
//! - the apply consumer: `enable.auto.commit=false` and `enable.auto.offset.store=false`
//!   (offsets are committed only after commits, receipts and state are durable),
//!   `isolation.level=read_committed`, `auto.offset.reset=earliest` (a new group starts at the
//!   beginning, never skips intents), `statistics.interval.ms=5000` (lag metrics),
//!   `partition.assignment.strategy=range` (eager), `session.timeout.ms=10000`. Eager, not
//!   cooperative-sticky: the embedded tansu 0.6 coordinator answers every JoinGroup at once
//!   (no join barrier) and starts a new generation whenever a member's metadata changes;
//!   cooperative-sticky's metadata carries the owned partitions, so its two-round rebalance
//!   became a generation ping-pong in which a member was evicted mid-join and partitions stayed
//!   unowned. Eager rejoin metadata is the same every time: one generation per membership
//!   change. Revoking everything costs little here, because state is kept over a revoke and a
//!   partition that comes back only folds the outbox records it missed. The session timeout
//!   stays short because tansu expires a dead member only on its timeout and a restarted
//!   instance must not wait long for its partitions;
//! - the restore consumer: no group, `read_committed`, `enable.partition.eof=true` (knows where
//!   the outbox ends).

use std::sync::Arc;
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

use rdkafka::config::{ClientConfig, RDKafkaLogLevel};
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext, Rebalance};
use rdkafka::error::KafkaResult;
use rdkafka::message::{Message, ToBytes};
use rdkafka::producer::{BaseProducer, BaseRecord, DeliveryResult, ProducerContext};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::{ClientContext, Statistics, TopicPartitionList};

use kledger_runtime::config::Config;
use kledger_runtime::metrics as m;

/// A rebalance, as an event for the processor loop.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RebalanceEvent {
    /// Partitions of the intents topic assigned (already paused until restored).
    Assigned(Vec<i32>),
    /// Partitions revoked.
    Revoked(Vec<i32>),
    /// The rebalance failed (e.g. the group coordinator went away).
    Error(String),
}

fn partitions(tpl: &TopicPartitionList) -> Vec<i32> {
    let mut v: Vec<i32> = tpl.elements().iter().map(|e| e.partition()).collect();
    v.sort_unstable();
    v
}

/// Whether a client reached a broker at its last statistics report (librdkafka's, every
/// `statistics.interval.ms`): with nothing to decide no request fails, so this is how the
/// processor learns that its broker went away while it is idle.
#[derive(Debug, Default)]
pub struct Reach {
    /// What the reports said so far.
    state: std::sync::Mutex<ReachState>,
}

/// What a client's statistics reports have said of its reach.
#[derive(Debug, Default, Clone, Copy)]
enum ReachState {
    /// No report yet (a client just created).
    #[default]
    Unknown,
    /// The last report found a connection up.
    Up,
    /// The reports in a row since this instant found no connection up.
    DownSince(Instant),
}

impl Reach {
    /// Whether no connection to the cluster was up at the last report (`false` before the
    /// first).
    pub fn unreachable(&self) -> bool {
        self.unreachable_for().is_some()
    }

    /// What the last report said: `None` before the first, else whether no connection to the
    /// cluster was up.
    pub fn reported_unreachable(&self) -> Option<bool> {
        match self.state.lock().map(|s| *s).unwrap_or_default() {
            ReachState::Unknown => None,
            ReachState::Up => Some(false),
            ReachState::DownSince(_) => Some(true),
        }
    }

    /// How long reports have found no connection up (`None`: the last one found one, or there
    /// was none yet). Counted from the first such report, so up to one statistics interval
    /// short of the outage.
    pub fn unreachable_for(&self) -> Option<Duration> {
        match self.state.lock().map(|s| *s).unwrap_or_default() {
            ReachState::DownSince(t) => Some(t.elapsed()),
            ReachState::Unknown | ReachState::Up => None,
        }
    }

    /// Records a report: reachable while any connection to the cluster is `UP` (a bootstrap
    /// address, a learned broker, or the logical group coordinator a member with no partitions
    /// talks to alone), librdkafka's internal broker aside.
    fn observe(&self, stats: &Statistics) {
        let up = stats
            .brokers
            .values()
            .any(|b| b.source != "internal" && b.state == "UP");
        let Ok(mut state) = self.state.lock() else {
            return;
        };
        let was = *state;
        *state = match (up, was) {
            (true, _) => ReachState::Up,
            (false, ReachState::DownSince(t)) => ReachState::DownSince(t),
            (false, _) => ReachState::DownSince(Instant::now()),
        };
        let changed = match was {
            ReachState::Unknown => !up,
            ReachState::Up => !up,
            ReachState::DownSince(_) => up,
        };
        if changed {
            let states: Vec<String> = stats
                .brokers
                .values()
                .map(|b| format!("{}={}", b.name, b.state))
                .collect();
            tracing::info!(client = %stats.name, reachable = up, ?states, "a client's reach of the cluster changed");
        }
    }
}

impl Reach {
    /// A reach whose reports have found no connection up since `since` (what a run of failed
    /// reports leaves; for tests of what reads it).
    pub fn down_since(since: Instant) -> Self {
        Self {
            state: std::sync::Mutex::new(ReachState::DownSince(since)),
        }
    }
}

/// Turns rebalance callbacks into [`RebalanceEvent`]s, pausing assigned partitions so nothing
/// is read before their state is restored; exports consumer lag from librdkafka statistics,
/// and whether a broker was reachable ([`Reach`]).
#[derive(Debug)]
pub struct EventContext {
    events: Sender<RebalanceEvent>,
    topic: String,
    sink: Option<&'static str>,
    reach: Arc<Reach>,
}

impl EventContext {
    /// A context sending events for `topic` to `events` (lag as the processor's).
    pub fn new(events: Sender<RebalanceEvent>, topic: String) -> Self {
        Self {
            events,
            topic,
            sink: None,
            reach: Arc::default(),
        }
    }

    /// What the client's statistics say of reaching a broker, shared.
    pub fn reach(&self) -> Arc<Reach> {
        self.reach.clone()
    }

    /// A context for a sink of the outbox (lag as `kledger_sink_lag_records{sink}`).
    pub fn for_sink(events: Sender<RebalanceEvent>, topic: String, sink: &'static str) -> Self {
        Self {
            events,
            topic,
            sink: Some(sink),
            reach: Arc::default(),
        }
    }
}

impl ClientContext for EventContext {
    fn error(&self, error: rdkafka::error::KafkaError, reason: &str) {
        // Sinks ask for end-of-partition reports (readiness): they are not errors.
        if error.rdkafka_error_code() == Some(RDKafkaErrorCode::PartitionEOF) {
            tracing::debug!(reason, "end of a partition");
        } else {
            tracing::error!(error = %error, reason, "kafka client error");
        }
    }

    fn stats(&self, stats: Statistics) {
        self.reach.observe(&stats);
        if let Some(t) = stats.topics.get(&self.topic) {
            for (p, s) in &t.partitions {
                if *p >= 0 && s.consumer_lag >= 0 {
                    let lag = s.consumer_lag as f64;
                    match self.sink {
                        None => metrics::gauge!(m::CONSUMER_LAG_RECORDS, "partition" => p.to_string())
                            .set(lag),
                        Some(sink) => metrics::gauge!(m::SINK_LAG_RECORDS, "sink" => sink, "partition" => p.to_string())
                            .set(lag),
                    }
                }
            }
        }
    }
}

impl ConsumerContext for EventContext {
    /// Offsets are committed asynchronously (a synchronous commit waits for the coordinator,
    /// all through a broker outage): a failed commit is logged here, and the next one covers
    /// its offsets.
    fn commit_callback(&self, result: KafkaResult<()>, offsets: &TopicPartitionList) {
        if let Err(e) = result {
            tracing::warn!(error = %e, partitions = ?partitions(offsets), "committing offsets failed; the next commit covers them");
        }
    }

    fn pre_rebalance(&self, _consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        if let Rebalance::Revoke(tpl) = rebalance {
            metrics::counter!(m::REBALANCES_TOTAL, "kind" => "revoke").increment(1);
            let _ = self.events.send(RebalanceEvent::Revoked(partitions(tpl)));
        }
    }

    fn post_rebalance(&self, consumer: &BaseConsumer<Self>, rebalance: &Rebalance<'_>) {
        match rebalance {
            Rebalance::Assign(tpl) => {
                metrics::counter!(m::REBALANCES_TOTAL, "kind" => "assign").increment(1);
                if let Err(e) = consumer.pause(tpl) {
                    tracing::warn!(error = %e, "pausing assigned partitions failed");
                }
                let _ = self.events.send(RebalanceEvent::Assigned(partitions(tpl)));
            }
            Rebalance::Error(e) => {
                let _ = self.events.send(RebalanceEvent::Error(e.to_string()));
            }
            Rebalance::Revoke(_) => {}
        }
    }
}

/// One delivery report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    /// The id given when sending.
    pub id: u64,
    /// Partition and offset, or the error (with librdkafka's code, which tells a refused
    /// record from a transient failure).
    pub result: Result<(i32, i64), (String, Option<RDKafkaErrorCode>)>,
}

/// Sends every delivery report to a channel.
#[derive(Debug)]
pub struct DeliveryContext {
    reports: Sender<Delivery>,
}

impl DeliveryContext {
    /// A context sending reports to `reports`.
    pub fn new(reports: Sender<Delivery>) -> Self {
        Self { reports }
    }
}

impl ClientContext for DeliveryContext {}

impl ProducerContext for DeliveryContext {
    type DeliveryOpaque = Box<u64>;

    fn delivery(&self, result: &DeliveryResult<'_>, id: Box<u64>) {
        let result = match result {
            Ok(msg) => Ok((msg.partition(), msg.offset())),
            Err((e, _)) => Err((e.to_string(), e.rdkafka_error_code())),
        };
        let _ = self.reports.send(Delivery { id: *id, result });
    }
}

/// How long one poll of a [`PolledProducer`]'s thread waits for events. librdkafka's Rust
/// binding spins through the last millisecond of every poll (a timeout under 1 ms rounds to
/// 0), so the 100 ms polls of its `ThreadedProducer` cost about 1% of a core per idle producer;
/// events (delivery reports) are served as they arrive whatever the timeout.
pub const PRODUCER_POLL: Duration = Duration::from_millis(500);

/// A producer whose events (delivery reports, errors) a thread of its own serves
/// ([`PRODUCER_POLL`]): rdkafka's `ThreadedProducer` with a longer poll. It derefs to the
/// `BaseProducer` (send, flush, transactions); dropping it stops the thread.
pub struct PolledProducer<C: ProducerContext + 'static> {
    producer: Arc<BaseProducer<C>>,
    stop: Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl<C: ProducerContext + 'static> std::fmt::Debug for PolledProducer<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolledProducer").finish_non_exhaustive()
    }
}

impl<C: ProducerContext + 'static> rdkafka::config::FromClientConfigAndContext<C>
    for PolledProducer<C>
{
    fn from_config_and_context(config: &ClientConfig, context: C) -> KafkaResult<Self> {
        let producer = Arc::new(BaseProducer::from_config_and_context(config, context)?);
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (p, s) = (producer.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("kledger-producer-poll".into())
            .spawn(move || {
                while !s.load(std::sync::atomic::Ordering::Relaxed) {
                    p.poll(PRODUCER_POLL);
                }
            })
            .map_err(|e| {
                rdkafka::error::KafkaError::ClientCreation(format!("producer poll thread: {e}"))
            })?;
        Ok(Self {
            producer,
            stop,
            thread: Some(thread),
        })
    }
}

impl<C: ProducerContext + 'static> std::ops::Deref for PolledProducer<C> {
    type Target = BaseProducer<C>;

    fn deref(&self) -> &BaseProducer<C> {
        &self.producer
    }
}

impl<C: ProducerContext + 'static> Drop for PolledProducer<C> {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Hands `record` to `producer`, waiting while its queue is full, until `deadline`. An error
/// carries librdkafka's code (a record too large for the producer is refused here).
pub fn send_waiting<K, P>(
    producer: &PolledProducer<DeliveryContext>,
    mut record: BaseRecord<'_, K, P, Box<u64>>,
    deadline: Instant,
) -> Result<(), (String, Option<RDKafkaErrorCode>)>
where
    K: ToBytes + ?Sized,
    P: ToBytes + ?Sized,
{
    // Space frees as deliveries complete: look again after 1 ms, doubling to 16 ms.
    let mut full = kledger_runtime::backoff::Backoff::from_millis(1, 16);
    loop {
        match producer.send(record) {
            Ok(()) => return Ok(()),
            Err((e, r)) if e.rdkafka_error_code() == Some(RDKafkaErrorCode::QueueFull) => {
                if Instant::now() > deadline {
                    return Err(("producer queue stayed full".into(), None));
                }
                std::thread::sleep(full.next_pause());
                record = r;
            }
            Err((e, _)) => return Err((e.to_string(), e.rdkafka_error_code())),
        }
    }
}

/// The one place kledger makes a librdkafka client configuration: `bootstrap` and then the
/// `common` properties every client of the cluster needs (`security.protocol`, `sasl.*`,
/// `ssl.*`). Every client kledger, its commands, tests and benches make starts here (a test
/// checks that nothing else calls `ClientConfig::new`); the role's own properties go on top.
pub fn client_at<'a>(
    bootstrap: &str,
    common: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap);
    c.set("client.id", "kledger");
    for (k, v) in common {
        c.set(k, v);
    }
    c
}

/// A client of `config`'s cluster: its bootstrap servers, `kafka.common_properties`, and the
/// embedded broker's login when clients log in to it ([`Config::with_embedded_login`]).
pub fn client_config(config: &Config) -> ClientConfig {
    let login = config
        .embedded_login
        .as_ref()
        .filter(|_| config.embedded_auth())
        .map(|l| l.client_properties())
        .into_iter()
        .flatten()
        .collect::<Vec<_>>();
    client_at(
        &config.bootstrap(),
        config
            .kafka
            .common_properties
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .chain(login.iter().map(|(k, v)| (*k, v.as_str()))),
    )
}

fn passthrough(c: &mut ClientConfig, props: &std::collections::BTreeMap<String, String>) {
    for (k, v) in props {
        c.set(k, v);
    }
}

/// The context of a to-the-end reader's consumer (restore, keys, rebuilds, replay): it reads to
/// the end of each partition on purpose, so librdkafka's end-of-partition reports are not
/// errors; and it uses no group coordinator, so that connection's failures are not either
/// ([`coordinator_report`]).
#[derive(Debug, Default, Clone, Copy)]
pub struct RestoreContext;

impl ClientContext for RestoreContext {
    fn log(&self, level: RDKafkaLogLevel, fac: &str, log_message: &str) {
        match level {
            _ if coordinator_report(log_message) => {
                tracing::debug!(target: "librdkafka", "librdkafka: {fac} {log_message}")
            }
            RDKafkaLogLevel::Emerg
            | RDKafkaLogLevel::Alert
            | RDKafkaLogLevel::Critical
            | RDKafkaLogLevel::Error => {
                tracing::error!(target: "librdkafka", "librdkafka: {fac} {log_message}")
            }
            RDKafkaLogLevel::Warning => {
                tracing::warn!(target: "librdkafka", "librdkafka: {fac} {log_message}")
            }
            RDKafkaLogLevel::Notice | RDKafkaLogLevel::Info => {
                tracing::info!(target: "librdkafka", "librdkafka: {fac} {log_message}")
            }
            RDKafkaLogLevel::Debug => {
                tracing::debug!(target: "librdkafka", "librdkafka: {fac} {log_message}")
            }
        }
    }

    fn error(&self, error: rdkafka::error::KafkaError, reason: &str) {
        if error.rdkafka_error_code() == Some(rdkafka::types::RDKafkaErrorCode::PartitionEOF) {
            tracing::debug!(reason, "restore reached the end of a partition");
        } else if coordinator_report(reason) {
            tracing::debug!(error = %error, reason, "restore consumer's coordinator connection");
        } else {
            tracing::error!(error = %error, reason, "restore consumer error");
        }
    }
}

/// Whether librdkafka's `text` (a log line or an error's reason) is about the consumer's group
/// coordinator connection (librdkafka's logical `GroupCoordinator` broker), which a to-the-end
/// reader logs as a debug note whatever its level. Such a reader belongs to a group only because
/// librdkafka's `assign` needs one: it commits nothing and reads no group offsets, so it never
/// needs the coordinator; but librdkafka still finds the coordinator and logs in to it, and a
/// reader that reached its end within a few milliseconds of its start closes that connection
/// mid-login, which librdkafka reports at ERROR (`SASL authentication error: ... (after 0ms in
/// state DOWN)`). A login the cluster refuses fails on the reader's fetch connections too
/// (`.../bootstrap:`, `.../<node id>:`), and those reports keep their level.
pub fn coordinator_report(text: &str) -> bool {
    // Log lines start with the thread's name (`[thrd:GroupCoordinator]: `), error reasons not.
    let text = match text.strip_prefix("[thrd:") {
        Some(rest) => rest.split_once("]: ").map_or(text, |(_, t)| t),
        None => text,
    };
    text.strip_prefix("GroupCoordinator")
        .is_some_and(|rest| rest.starts_with(':') || rest.starts_with('/'))
}

impl ConsumerContext for RestoreContext {}

/// Prefetched records a consumer holds at most, KiB (librdkafka's default is 64 MiB): ample
/// for batches of a few thousand records, and a bound on each consumer's memory.
pub const QUEUED_KBYTES: &str = "16384";

/// A group consumer's configuration; `name` (apply, views, vectors) names it in its client id
/// (`kledger-<name>`) and static member id (`<instance>-<name>` for the sinks).
pub fn consumer_config(config: &Config, name: &str) -> ClientConfig {
    let mut c = client_config(config);
    c.set("client.id", format!("kledger-{name}"));
    if let Some(id) = config.group_instance_id() {
        let id = if name == "apply" {
            id
        } else {
            format!("{id}-{name}")
        };
        c.set("group.instance.id", id);
    }
    c.set("group.id", &config.kafka.group_id)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("auto.offset.reset", "earliest")
        .set("isolation.level", "read_committed")
        .set("statistics.interval.ms", "5000")
        .set("session.timeout.ms", "10000")
        .set("max.poll.interval.ms", "300000")
        .set("partition.assignment.strategy", "range")
        // Bounded prefetch: librdkafka's default queue holds up to 64 MiB per consumer.
        .set("queued.max.messages.kbytes", QUEUED_KBYTES)
        // How long a broker may hold a fetch with nothing new: librdkafka's default. Kafka,
        // and the embedded broker (vendor/tansu-storage, change 4), answer a held fetch as soon
        // as a record arrives, so this bounds only how often an idle consumer asks.
        .set("fetch.wait.max.ms", FETCH_WAIT_MS);
    fetch_sizes(&mut c, config);
    passthrough(&mut c, &config.kafka.consumer_properties);
    c
}

/// The configuration of a group's coverage watch consumer ([`crate::coverage::CoverageWatch`]):
/// a member of no group (it never subscribes) that reads group `group`'s description and
/// committed offsets; `name` (apply, views, vectors) names it `kledger-<name>-coverage`.
pub fn coverage_config(config: &Config, name: &str, group: &str) -> ClientConfig {
    let mut c = client_config(config);
    for (k, v) in &config.kafka.consumer_properties {
        if !matches!(k.as_str(), "group.id" | "group.instance.id" | "client.id") {
            c.set(k, v);
        }
    }
    c.set("client.id", format!("kledger-{name}-coverage"))
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false");
    c
}

/// A group consumer's `fetch.wait.max.ms` (`kafka.consumer_properties` may set another).
pub const FETCH_WAIT_MS: &str = "500";
/// A to-the-end reader's `fetch.wait.max.ms`.
pub const TO_END_FETCH_WAIT_MS: &str = "50";

/// librdkafka's fetch bounds for records up to the record budget: a partition fetch holds at
/// least one record at the limit (`max.partition.fetch.bytes` is 1 MiB by default, under a
/// full-budget record with its key and headers).
pub fn fetch_sizes(c: &mut ClientConfig, config: &Config) {
    let message = config.limits.kafka_message_bytes();
    c.set("max.partition.fetch.bytes", message.to_string())
        .set("fetch.max.bytes", message.max(FETCH_BYTES_MAX).to_string())
        .set(
            "receive.message.max.bytes",
            (message.max(FETCH_BYTES_MAX) + RECEIVE_SLACK_BYTES).to_string(),
        );
}

/// `fetch.max.bytes` when the record limit is below it (librdkafka's default, 50 MiB).
const FETCH_BYTES_MAX: usize = 52_428_800;
/// librdkafka wants `receive.message.max.bytes` at least `fetch.max.bytes` + 512.
const RECEIVE_SLACK_BYTES: usize = 1 << 20;

/// The restore consumer's configuration (no group).
pub fn restore_config(config: &Config) -> ClientConfig {
    let mut c = client_config(config);
    c.set("group.id", format!("{}-restore", config.kafka.group_id))
        .set("enable.auto.commit", "false")
        .set("enable.auto.offset.store", "false")
        .set("enable.partition.eof", "true")
        .set("auto.offset.reset", "error")
        .set("isolation.level", "read_committed")
        .set("queued.max.messages.kbytes", QUEUED_KBYTES)
        // Short: a to-the-end reader learns it reached the end from a fetch answered empty,
        // and on the embedded broker a fetch inside a partition's last batch is answered empty
        // (its records found by probing back, [`crate::reader`]): each such answer
        // should come soon. Restores are short-lived; idle group consumers use the long wait.
        .set("fetch.wait.max.ms", TO_END_FETCH_WAIT_MS);
    fetch_sizes(&mut c, config);
    for (k, v) in &config.kafka.consumer_properties {
        if !matches!(
            k.as_str(),
            "group.id" | "enable.partition.eof" | "isolation.level"
        ) {
            c.set(k, v);
        }
    }
    c
}

/// A producer's configuration (idempotent; transactional when `transactional_id` is set).
pub fn producer_config(config: &Config, transactional_id: Option<&str>) -> ClientConfig {
    let mut c = client_config(config);
    c.set("enable.idempotence", "true")
        // A record refused for good must not leave a gap before later records of its
        // partition: librdkafka then fails the producer (kledger makes a new one) instead.
        .set("enable.gapless.guarantee", "true")
        .set("acks", "all")
        .set("linger.ms", "5")
        .set("batch.num.messages", "10000")
        .set("compression.type", "lz4")
        .set("partitioner", "murmur2_random")
        .set("message.timeout.ms", "30000")
        .set("queue.buffering.max.messages", "200000")
        // Every record kledger writes is within the budget; the rest is key, headers, framing.
        .set(
            "message.max.bytes",
            config.limits.kafka_message_bytes().to_string(),
        );
    if let Some(id) = transactional_id {
        c.set("transactional.id", id)
            .set("transaction.timeout.ms", "60000");
    }
    passthrough(&mut c, &config.kafka.producer_properties);
    c
}

/// Seeks `topic`/`p` of `consumer` to `offset`; a failure (e.g. librdkafka's "erroneous state"
/// right after an assignment) is logged, not returned: the caller's position check or idle
/// probe seeks again later.
pub fn seek_or_retry_later<C: ConsumerContext>(
    consumer: &BaseConsumer<C>,
    topic: &str,
    p: i32,
    offset: i64,
    why: &str,
) {
    tracing::debug!(topic, partition = p, seek = offset, why, "seek");
    if let Err(e) = consumer.seek(
        topic,
        p,
        rdkafka::Offset::Offset(offset),
        Duration::from_secs(30),
    ) {
        tracing::debug!(topic, partition = p, error = %e, "seek failed; trying again later");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embedded::test_broker;
    use kledger_runtime::config::credentials::Credentials;
    use std::sync::Mutex;

    /// librdkafka's reports to a consumer at WARN or above, and its errors, as they come.
    #[derive(Clone, Default)]
    struct Reports(Arc<Mutex<Vec<String>>>);

    impl ClientContext for Reports {
        fn log(&self, level: RDKafkaLogLevel, _: &str, log_message: &str) {
            if level as i32 <= RDKafkaLogLevel::Warning as i32 {
                self.0.lock().unwrap().push(log_message.to_owned());
            }
        }

        fn error(&self, _: rdkafka::error::KafkaError, reason: &str) {
            self.0.lock().unwrap().push(reason.to_owned());
        }
    }

    impl ConsumerContext for Reports {}

    impl Reports {
        /// The reports a to-the-end reader logs at WARN or ERROR.
        fn loud(&self) -> Vec<String> {
            let reports = self.0.lock().unwrap();
            reports
                .iter()
                .filter(|t| !coordinator_report(t))
                .cloned()
                .collect()
        }

        /// The reports a to-the-end reader quiets (those about its group coordinator).
        fn about_the_coordinator(&self) -> usize {
            let reports = self.0.lock().unwrap();
            reports.iter().filter(|t| coordinator_report(t)).count()
        }
    }

    /// A to-the-end reader's consumer of the embedded broker logged in as `login`.
    fn reader(bootstrap: &str, login: &Credentials, reports: &Reports) -> BaseConsumer<Reports> {
        let props = login.client_properties();
        let c: BaseConsumer<Reports> =
            client_at(bootstrap, props.iter().map(|(k, v)| (*k, v.as_str())))
                .set("group.id", "kledger-apply-restore")
                .set("enable.auto.commit", "false")
                .set("enable.partition.eof", "true")
                .create_with_context(reports.clone())
                .unwrap();
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset("outbox", 0, rdkafka::Offset::Beginning)
            .unwrap();
        c.assign(&tpl).unwrap();
        c
    }

    /// Issue 49's start that logged an ERROR: a to-the-end reader that closes while its
    /// group coordinator's login is still going on (readers of empty topics close within
    /// milliseconds) makes librdkafka report that login failed, at ERROR, though the reader
    /// never needed the coordinator. Readers closed at every moment of their first quarter
    /// second must log nothing at WARN or ERROR, and the closes must have cut such logins
    /// (else this test tried nothing); a reader whose login the broker refuses still reports
    /// it at ERROR.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_reader_closed_mid_login_logs_no_error_and_a_refused_login_still_does() {
        let login = Credentials {
            username: "kledger".into(),
            password: "5f1b0c7e9a2d4c6b8e0f1a3c5e7b9d1f".into(),
        };
        let (_dir, broker) = test_broker(Some(&login)).await;
        let bootstrap = broker.bootstrap();
        tokio::task::spawn_blocking(move || {
            let closed = Reports::default();
            // Closes 0, 2, 4, ... ms after the start, around again until librdkafka has
            // reported a cut login three times (bounded).
            for round in 0..240u64 {
                if closed.about_the_coordinator() >= 6 {
                    break;
                }
                let c = reader(&bootstrap, &login, &closed);
                let until = Instant::now() + Duration::from_millis((round % 120) * 2);
                while Instant::now() < until {
                    let _ = c.poll(Duration::from_millis(1));
                }
            }
            assert!(
                closed.about_the_coordinator() > 0,
                "no close cut a coordinator login: the test tried nothing"
            );
            assert_eq!(closed.loud(), Vec::<String>::new());

            let refused = Reports::default();
            let wrong = Credentials {
                username: login.username.clone(),
                password: "not-the-password".into(),
            };
            let c = reader(&bootstrap, &wrong, &refused);
            let deadline = Instant::now() + Duration::from_secs(30);
            while refused.loud().is_empty() {
                assert!(Instant::now() < deadline, "a refused login went unreported");
                let _ = c.poll(Duration::from_millis(50));
            }
            assert!(
                refused.loud().iter().any(|t| t.contains("SASL")),
                "{:?}",
                refused.loud()
            );
        })
        .await
        .unwrap();
        broker.stop();
    }

    #[test]
    fn only_the_coordinators_reports_are_quieted() {
        let (loud, quiet) = (false, true);
        for (text, quieted) in [
            (
                "[thrd:GroupCoordinator]: GroupCoordinator: SASL SCRAM-SHA-256 mechanism handshake failed: Local: Broker transport failure: broker's supported mechanisms: (n/a) (after 0ms in state DOWN)",
                quiet,
            ),
            (
                "GroupCoordinator: SASL authentication error: SaslAuthenticateRequest failed: Local: Broker transport failure (after 0ms in state DOWN)",
                quiet,
            ),
            (
                "[thrd:main]: GroupCoordinator/111: Broker nodename changed",
                quiet,
            ),
            (
                "[thrd:sasl_plaintext://127.0.0.1:9092/bootstrap]: sasl_plaintext://127.0.0.1:9092/bootstrap: SASL authentication error: Authentication failed during authentication due to invalid credentials (after 3ms in state AUTH_REQ)",
                loud,
            ),
            ("127.0.0.1:9092/111: Disconnected", loud),
            ("GroupCoordinatorX: not the coordinator", loud),
        ] {
            assert_eq!(coordinator_report(text), quieted, "{text}");
        }
    }
}
