//! Group coverage: whether every partition a consumer group reads is being read, and the
//! rejoin that heals a group left with unowned partitions.
//!
//! Why: tansu 0.6's group coordinator could leave a group formed with partitions no one owns
//! after members die without leaving (a crash loop): it expired dead members lazily and kept
//! the assignment computed while they were alive (fixed in the vendored broker, change 1), and
//! a follower's SyncGroup can be taken for the leader's when the leader has just expired,
//! storing an empty assignment. librdkafka trusts what SyncGroup returns, so the live member
//! reads its share forever while the rest sits unread (docs/operations.md, "Group liveness").
//!
//! The check asks two witnesses, every [`CHECK_EVERY`]:
//! - **the coordinator**: DescribeGroups (answered with assignments by the vendored storage,
//!   change 6; Apache Kafka always does). A partition that a *stable* group has assigned to no
//!   member for [`STALE_AFTER`] is unowned, whether or not records wait on it;
//! - **progress**: a partition this consumer does not own whose committed offset stays behind
//!   the partition's end without moving for [`STALE_AFTER`] is unowned (a member the
//!   coordinator lists but that does not read, e.g. one that lost its assignment).
//!
//! Unowned partitions make the consumer leave and join the group again, which starts a new
//! generation with a fresh assignment; rejoins back off. A member that died is listed by the
//! coordinator, with its partitions, until its session times out: the coordinator then starts
//! a new generation (the vendored broker does so while the group is idle too), so a dead
//! member's partitions move within the session timeout.
//!
//! A check is a few broker round trips (DescribeGroups, and for partitions owned elsewhere
//! their committed offsets and ends), which took 0.5–1 s on a busy embedded broker: on its
//! owner's loop that was a stall every [`CHECK_EVERY`] for the processor and every sink under
//! load (the demo's vector sink lost a fifth of its time to it). So checks run on a thread of
//! their own with a client of their own ([`CoverageWatch`]): the owner tells it which
//! partitions it reads and takes its verdicts (the partitions unowned, whether to rejoin),
//! and acts on them itself.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Context;
use rdkafka::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::{Offset, TopicPartitionList};

use kledger_runtime::backoff::Backoff;
use kledger_runtime::metrics as m;

/// How often coverage is checked.
pub const CHECK_EVERY: Duration = Duration::from_secs(3);
/// How long a partition may stay unassigned, or behind without progress where no one here owns
/// it, before it counts as unowned: longer than a rebalance and a restore's start take on a
/// healthy group.
pub const STALE_AFTER: Duration = Duration::from_secs(9);
/// First and largest pause between rejoins while partitions stay unowned.
const REJOIN_BACKOFF: Backoff = Backoff::from_millis(15_000, 300_000);
/// Timeout of the offset, watermark and group reads of one check.
const READ_TIMEOUT: Duration = Duration::from_secs(2);
/// How often a watch thread looks at its stop flag and whether a check is due.
const WATCH_TICK: Duration = Duration::from_millis(100);

/// One consumer group's coverage, checked from its owner's loop.
#[derive(Debug)]
pub struct Coverage {
    consumer_name: &'static str,
    group: String,
    topic: String,
    partitions: i32,
    stale_after: Duration,
    last_check: Option<Instant>,
    /// Per partition not owned here: the committed offset last seen and since when.
    seen: BTreeMap<i32, (i64, Instant)>,
    /// Per partition a stable group assigns to no member: since when.
    unassigned: BTreeMap<i32, Instant>,
    next_rejoin: Option<Instant>,
    backoff: Backoff,
    unowned: Vec<i32>,
    /// Partitions whose per-partition gauge was set to 1 (set back to 0 when owned again).
    flagged: BTreeSet<i32>,
}

impl Coverage {
    /// Coverage of `topic`'s `partitions` partitions by consumer group `group`;
    /// `consumer_name` labels metrics and status (apply, views, vectors).
    pub fn new(consumer_name: &'static str, group: &str, topic: &str, partitions: i32) -> Self {
        metrics::gauge!(m::GROUP_UNOWNED_PARTITIONS, "consumer" => consumer_name).set(0.0);
        Self {
            consumer_name,
            group: group.to_owned(),
            topic: topic.to_owned(),
            partitions,
            stale_after: STALE_AFTER,
            last_check: None,
            seen: BTreeMap::new(),
            unassigned: BTreeMap::new(),
            next_rejoin: None,
            backoff: REJOIN_BACKOFF,
            unowned: Vec::new(),
            flagged: BTreeSet::new(),
        }
    }

    /// The partitions last found unowned (empty: none).
    pub fn unowned(&self) -> &[i32] {
        &self.unowned
    }

    /// Checks coverage when due, given the partitions this consumer owns; returns whether the
    /// consumer should leave and join the group again now. Blocking (offset, watermark and
    /// group reads, bounded by short timeouts).
    pub fn check<C: ConsumerContext>(
        &mut self,
        consumer: &BaseConsumer<C>,
        mine: &BTreeSet<i32>,
        now: Instant,
    ) -> bool {
        if self.last_check.is_some_and(|t| now < t + CHECK_EVERY) {
            return false;
        }
        self.last_check = Some(now);
        let others: Vec<i32> = (0..self.partitions).filter(|p| !mine.contains(p)).collect();
        let mut unowned = self.unassigned_for_long(consumer, mine, now);
        if let Some(behind) = self.behind_without_progress(consumer, &others, now) {
            unowned.extend(behind);
        }
        self.publish(unowned.into_iter().collect());
        if self.unowned.is_empty() {
            self.backoff.reset();
            return false;
        }
        tracing::warn!(consumer = self.consumer_name, unowned = ?self.unowned, "partitions that no member reads");
        if self.next_rejoin.is_some_and(|t| now < t) {
            return false;
        }
        self.next_rejoin = Some(now + self.backoff.next_pause());
        // A fresh generation: what the old one left behind starts its wait again.
        self.seen.clear();
        self.unassigned.clear();
        metrics::counter!(m::GROUP_REJOINS_TOTAL, "consumer" => self.consumer_name).increment(1);
        true
    }

    /// The coordinator's witness: partitions a stable group has assigned to no member (and
    /// this consumer does not own) for the grace period. A group that is rebalancing, or that
    /// cannot be described now, says nothing (the wait goes on from the last answer).
    fn unassigned_for_long<C: ConsumerContext>(
        &mut self,
        consumer: &BaseConsumer<C>,
        mine: &BTreeSet<i32>,
        now: Instant,
    ) -> BTreeSet<i32> {
        match group_assignment(consumer, &self.group, &self.topic) {
            Ok(Some(assigned)) => {
                let gaps: BTreeSet<i32> = (0..self.partitions)
                    .filter(|p| !assigned.contains(p) && !mine.contains(p))
                    .collect();
                self.unassigned.retain(|p, _| gaps.contains(p));
                for p in &gaps {
                    self.unassigned.entry(*p).or_insert(now);
                }
            }
            Ok(None) => {}
            Err(e) => {
                tracing::debug!(consumer = self.consumer_name, error = %e, "describing the group for the coverage check")
            }
        }
        self.unassigned
            .iter()
            .filter(|(_, since)| now >= **since + self.stale_after)
            .map(|(p, _)| *p)
            .collect()
    }

    /// The progress witness: partitions among `others` whose committed offset stays behind
    /// the end without moving for the grace period; none when the offsets cannot be read now.
    fn behind_without_progress<C: ConsumerContext>(
        &mut self,
        consumer: &BaseConsumer<C>,
        others: &[i32],
        now: Instant,
    ) -> Option<Vec<i32>> {
        self.seen.retain(|p, _| others.contains(p));
        let committed = self.committed(consumer, others)?;
        let mut behind = Vec::new();
        for &p in others {
            let at = committed.get(&p).copied().unwrap_or(0);
            let (last, since) = *self.seen.entry(p).or_insert((at, now));
            if last != at {
                self.seen.insert(p, (at, now));
                continue;
            }
            if now < since + self.stale_after {
                continue;
            }
            if consumer
                .fetch_watermarks(&self.topic, p, READ_TIMEOUT)
                .is_ok_and(|(_, high)| high > at)
            {
                behind.push(p);
            }
        }
        Some(behind)
    }

    /// The group's committed offsets of `ps` (a partition without one is at 0); none when they
    /// cannot be read now.
    fn committed<C: ConsumerContext>(
        &self,
        consumer: &BaseConsumer<C>,
        ps: &[i32],
    ) -> Option<BTreeMap<i32, i64>> {
        if ps.is_empty() {
            return Some(BTreeMap::new());
        }
        let mut tpl = TopicPartitionList::new();
        for p in ps {
            tpl.add_partition(&self.topic, *p);
        }
        match consumer.committed_offsets(tpl, READ_TIMEOUT) {
            Ok(c) => Some(
                c.elements()
                    .iter()
                    .map(|e| {
                        let o = match e.offset() {
                            Offset::Offset(o) => o,
                            _ => 0,
                        };
                        (e.partition(), o)
                    })
                    .collect(),
            ),
            Err(e) => {
                tracing::debug!(consumer = self.consumer_name, error = %e, "reading committed offsets for the coverage check");
                None
            }
        }
    }

    fn publish(&mut self, unowned: Vec<i32>) {
        metrics::gauge!(m::GROUP_UNOWNED_PARTITIONS, "consumer" => self.consumer_name)
            .set(unowned.len() as f64);
        let now: BTreeSet<i32> = unowned.iter().copied().collect();
        for p in self.flagged.difference(&now) {
            metrics::gauge!(m::GROUP_PARTITION_UNOWNED, "consumer" => self.consumer_name, "partition" => p.to_string())
                .set(0.0);
        }
        for p in &now {
            metrics::gauge!(m::GROUP_PARTITION_UNOWNED, "consumer" => self.consumer_name, "partition" => p.to_string())
                .set(1.0);
        }
        self.flagged.extend(now);
        self.unowned = unowned;
    }
}

/// A [`Coverage`] checked on a thread of its own, with a consumer of its own in the same group
/// that never subscribes (it only describes the group and reads committed offsets and
/// watermarks), so a check's broker round trips never hold up the owner's loop. The owner
/// says which partitions it reads ([`CoverageWatch::set_mine`], from its first assignment on:
/// no check runs before), takes the verdicts ([`CoverageWatch::unowned`],
/// [`CoverageWatch::take_rejoin`]) and rejoins itself. Dropping the watch stops its thread
/// after the check in progress, if any.
#[derive(Debug)]
pub struct CoverageWatch {
    shared: Arc<Watched>,
}

#[derive(Debug, Default)]
struct Watched {
    /// The partitions the owner reads; `None` until its first assignment.
    mine: Mutex<Option<BTreeSet<i32>>>,
    unowned: Mutex<Vec<i32>>,
    rejoin: AtomicBool,
    stop: AtomicBool,
}

/// The watch consumer's context: its errors are the owner's too (the same brokers), which
/// reports them; here they are debug lines.
struct WatchContext(&'static str);

impl ClientContext for WatchContext {
    fn error(&self, error: rdkafka::error::KafkaError, reason: &str) {
        tracing::debug!(consumer = self.0, error = %error, reason, "coverage watch client");
    }
}

impl ConsumerContext for WatchContext {}

impl CoverageWatch {
    /// Starts checking `coverage` with a consumer of `client` (the group's `group.id`, not
    /// subscribed).
    pub fn start(client: &ClientConfig, mut coverage: Coverage) -> anyhow::Result<Self> {
        let name = coverage.consumer_name;
        let consumer: BaseConsumer<WatchContext> =
            client
                .create_with_context(WatchContext(name))
                .with_context(|| format!("{name}: coverage watch consumer"))?;
        let shared = Arc::new(Watched::default());
        let watched = shared.clone();
        std::thread::Builder::new()
            .name(format!("kledger-cover-{name}"))
            .spawn(move || {
                while !watched.stop.load(Ordering::Acquire) {
                    let mine = lock(&watched.mine).clone();
                    if let Some(mine) = mine {
                        if coverage.check(&consumer, &mine, Instant::now()) {
                            watched.rejoin.store(true, Ordering::Release);
                        }
                        *lock(&watched.unowned) = coverage.unowned().to_vec();
                    }
                    std::thread::sleep(WATCH_TICK);
                }
            })
            .with_context(|| format!("{name}: coverage watch thread"))?;
        Ok(Self { shared })
    }

    /// The partitions the owner reads now (its assignment); checks start with the first.
    pub fn set_mine(&self, mine: BTreeSet<i32>) {
        *lock(&self.shared.mine) = Some(mine);
    }

    /// The partitions last found unowned (empty: none).
    pub fn unowned(&self) -> Vec<i32> {
        lock(&self.shared.unowned).clone()
    }

    /// Whether a check said to leave and join the group again since the last call.
    pub fn take_rejoin(&self) -> bool {
        self.shared.rejoin.swap(false, Ordering::AcqRel)
    }
}

impl Drop for CoverageWatch {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
    }
}

/// A lock whose holder cannot leave its data half-written (plain values are replaced whole).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The partitions of `topic` that group `group`'s members are assigned, as its coordinator
/// answers DescribeGroups; `None` while the group is not stable (rebalancing, empty, or not a
/// consumer group), when no one is assigned anything yet.
fn group_assignment<C: ConsumerContext>(
    consumer: &BaseConsumer<C>,
    group: &str,
    topic: &str,
) -> anyhow::Result<Option<BTreeSet<i32>>> {
    let list = consumer.fetch_group_list(Some(group), READ_TIMEOUT)?;
    let Some(g) = list.groups().iter().find(|g| g.name() == group) else {
        return Ok(None);
    };
    if g.state() != "Stable" || g.protocol_type() != "consumer" {
        return Ok(None);
    }
    let mut assigned = BTreeSet::new();
    for member in g.members() {
        if let Some(bytes) = member.assignment() {
            assigned.extend(assigned_partitions(bytes, topic)?);
        }
    }
    Ok(Some(assigned))
}

/// The partitions of `topic` in a consumer protocol `Assignment` (Kafka's
/// `ConsumerProtocolAssignment`: version, then per topic its name and partitions, then user
/// data, which is not read). Empty bytes are an empty assignment.
fn assigned_partitions(bytes: &[u8], topic: &str) -> anyhow::Result<Vec<i32>> {
    struct Cursor<'a>(&'a [u8]);
    impl<'a> Cursor<'a> {
        fn take(&mut self, n: usize) -> anyhow::Result<&'a [u8]> {
            anyhow::ensure!(self.0.len() >= n, "assignment truncated");
            let (head, rest) = self.0.split_at(n);
            self.0 = rest;
            Ok(head)
        }
        fn i16(&mut self) -> anyhow::Result<i16> {
            Ok(i16::from_be_bytes(self.take(2)?.try_into()?))
        }
        fn i32(&mut self) -> anyhow::Result<i32> {
            Ok(i32::from_be_bytes(self.take(4)?.try_into()?))
        }
        /// An array's length: at most what the remaining bytes can hold at `min` bytes each.
        fn len(&mut self, min: usize) -> anyhow::Result<usize> {
            let n = usize::try_from(self.i32()?.max(0))?;
            anyhow::ensure!(
                n.saturating_mul(min) <= self.0.len(),
                "assignment truncated"
            );
            Ok(n)
        }
    }
    if bytes.is_empty() {
        return Ok(Vec::new());
    }
    let mut c = Cursor(bytes);
    let _version = c.i16()?;
    let mut out = Vec::new();
    for _ in 0..c.len(6)? {
        let name_len = usize::try_from(c.i16()?.max(0))?;
        let name = c.take(name_len)?;
        let n = c.len(4)?;
        for _ in 0..n {
            let p = c.i32()?;
            if name == topic.as_bytes() {
                out.push(p);
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topics::{self, Topics};

    fn consumer(bootstrap: &str, group: &str) -> BaseConsumer {
        crate::clients::client_at(bootstrap, [])
            .set("group.id", group)
            .set("enable.auto.commit", "false")
            .set("partition.assignment.strategy", "range")
            .create()
            .unwrap()
    }

    fn assigned(c: &BaseConsumer) -> usize {
        c.assignment().map(|a| a.count()).unwrap_or(0)
    }

    /// The failure the progress witness cannot see: a stable group that assigns a topic's
    /// partitions to no one while no record waits on them. A member subscribed to another topic
    /// only forms the group (range assigns the intents topic to nobody); the coverage check of a
    /// client outside the assignment finds all four unowned from the coordinator's answer
    /// (the vendored storage's change 6; upstream's sqlite storage dropped the connection).
    /// Once a member subscribes to the topic, the group owns it and nothing is unowned.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_formed_group_that_leaves_partitions_unassigned_is_seen_with_no_records_waiting() {
        let (_dir, broker) = crate::embedded::test_broker(None).await;
        let t = Topics::new("coverage");
        let bootstrap = broker.bootstrap();
        topics::create(
            &crate::clients::client_at(&bootstrap, []),
            &t,
            4,
            1,
            1 << 20,
        )
        .await
        .unwrap();
        tokio::task::spawn_blocking(move || {
            let group = "g-coverage";
            let other = consumer(&bootstrap, group);
            other.subscribe(&[&t.outbox]).unwrap();
            let deadline = Instant::now() + Duration::from_secs(60);
            while assigned(&other) == 0 {
                assert!(Instant::now() < deadline, "the group never formed");
                other.poll(Duration::from_millis(100));
            }
            let checker = consumer(&bootstrap, group);
            let mut cov = Coverage::new("test", group, &t.intents, 4);
            let none = BTreeSet::new();
            let t0 = Instant::now();
            assert!(!cov.check(&checker, &none, t0));
            assert!(cov.unowned().is_empty(), "within the grace period");
            assert!(cov.check(&checker, &none, t0 + STALE_AFTER + CHECK_EVERY));
            assert_eq!(cov.unowned(), [0, 1, 2, 3]);

            let reader = consumer(&bootstrap, group);
            reader.subscribe(&[&t.intents]).unwrap();
            while assigned(&reader) != 4 || assigned(&other) != 4 {
                assert!(Instant::now() < deadline, "the group never took the topic");
                reader.poll(Duration::from_millis(50));
                other.poll(Duration::from_millis(50));
            }
            // Described, the group now owns every partition (this client owns none itself).
            let later = t0 + (STALE_AFTER + CHECK_EVERY) * 3;
            let mut owned = false;
            for i in 0..40u32 {
                reader.poll(Duration::from_millis(50));
                other.poll(Duration::from_millis(50));
                cov.check(&checker, &none, later + CHECK_EVERY * i);
                if cov.unowned().is_empty() {
                    owned = true;
                    break;
                }
            }
            assert!(owned, "still unowned: {:?}", cov.unowned());
        })
        .await
        .unwrap();
        broker.stop();
    }

    #[test]
    fn assignments_are_read_and_bad_ones_refused() {
        // Version 1; topics "a" [0, 2] and "bb" [1]; 4 bytes of user data (unread).
        let mut b = vec![0, 1, 0, 0, 0, 2];
        b.extend([0, 1, b'a', 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2]);
        b.extend([0, 2, b'b', b'b', 0, 0, 0, 1, 0, 0, 0, 1]);
        b.extend([0, 0, 0, 0]);
        assert_eq!(assigned_partitions(&b, "a").unwrap(), [0, 2]);
        assert_eq!(assigned_partitions(&b, "bb").unwrap(), [1]);
        assert!(assigned_partitions(&b, "c").unwrap().is_empty());
        assert!(assigned_partitions(&[], "a").unwrap().is_empty());
        // Truncated anywhere, or an array longer than the bytes: an error, never a panic.
        for n in 1..b.len() - 4 {
            assert!(assigned_partitions(&b[..n], "a").is_err(), "{n}");
        }
        assert!(assigned_partitions(&[0, 1, 0x7f, 0xff, 0xff, 0xff], "a").is_err());
    }
}
