//! Group coverage: whether every partition a consumer group reads is being read, and the
//! rejoin that heals a group left with unowned partitions.
//!
//! Why: tansu 0.6's group coordinator can leave a group formed with partitions no one owns
//! after members die without leaving (a crash loop). It expires dead members lazily, on a
//! live member's heartbeat, without starting a new generation, so the assignment computed
//! while they were alive stays; and a follower's SyncGroup can be taken for the leader's when
//! the leader has just expired, storing an empty assignment. librdkafka trusts what SyncGroup
//! returns, so the live member reads its share forever while the rest sits unread
//! (docs/operations.md, "Group liveness"). Its DescribeGroups answers no assignments (and,
//! with sqlite storage, drops the connection), so the group cannot be asked who owns what.
//!
//! The check therefore watches what an owner would do: a partition this consumer does not
//! own whose committed offset stays behind the partition's end without moving for
//! [`STALE_AFTER`] is taken as unowned. Unowned partitions make the consumer leave and join
//! the group again, which starts a new generation with a fresh assignment; rejoins back off.
//! This module holds no Kafka loop: its owner calls [`Coverage::check`] and acts on the answer.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::{Offset, TopicPartitionList};

use crate::metrics as m;

/// How often coverage is checked.
pub(crate) const CHECK_EVERY: Duration = Duration::from_secs(3);
/// How long a partition no one here owns may stay behind without progress before it counts as
/// unowned: longer than a rebalance and a restore's start take on a healthy group.
pub(crate) const STALE_AFTER: Duration = Duration::from_secs(9);
/// First and largest pause between rejoins while partitions stay unowned.
pub(crate) const REJOIN_BACKOFF: (Duration, Duration) =
    (Duration::from_secs(15), Duration::from_secs(300));
/// Timeout of the offset and watermark reads of one check.
const READ_TIMEOUT: Duration = Duration::from_secs(2);

/// One consumer group's coverage, checked from its owner's loop.
#[derive(Debug)]
pub(crate) struct Coverage {
    consumer_name: &'static str,
    topic: String,
    partitions: i32,
    last_check: Option<Instant>,
    /// Per partition not owned here: the committed offset last seen and since when.
    seen: BTreeMap<i32, (i64, Instant)>,
    next_rejoin: Option<Instant>,
    backoff: Duration,
    unowned: Vec<i32>,
}

impl Coverage {
    /// Coverage of `topic`'s `partitions` partitions by this consumer's group;
    /// `consumer_name` labels metrics and status (apply, views, vectors).
    pub(crate) fn new(consumer_name: &'static str, topic: &str, partitions: i32) -> Self {
        metrics::gauge!(m::GROUP_UNOWNED_PARTITIONS, "consumer" => consumer_name).set(0.0);
        Self {
            consumer_name,
            topic: topic.to_owned(),
            partitions,
            last_check: None,
            seen: BTreeMap::new(),
            next_rejoin: None,
            backoff: REJOIN_BACKOFF.0,
            unowned: Vec::new(),
        }
    }

    /// The partitions last found unowned (empty: none).
    pub(crate) fn unowned(&self) -> &[i32] {
        &self.unowned
    }

    /// Checks coverage when due, given the partitions this consumer owns; returns whether the
    /// consumer should leave and join the group again now. Blocking (offset and watermark
    /// reads, bounded by short timeouts).
    pub(crate) fn check<C: ConsumerContext>(
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
        self.seen.retain(|p, _| !mine.contains(p));
        let committed = match self.committed(consumer, &others) {
            Some(c) => c,
            None => return false,
        };
        let mut unowned = Vec::new();
        for p in others {
            let at = committed.get(&p).copied().unwrap_or(0);
            let (last, since) = *self.seen.entry(p).or_insert((at, now));
            if last != at {
                self.seen.insert(p, (at, now));
                continue;
            }
            if now < since + STALE_AFTER {
                continue;
            }
            let behind = consumer
                .fetch_watermarks(&self.topic, p, READ_TIMEOUT)
                .is_ok_and(|(_, high)| high > at);
            if behind {
                unowned.push(p);
            }
        }
        self.publish(unowned);
        if self.unowned.is_empty() {
            self.backoff = REJOIN_BACKOFF.0;
            return false;
        }
        tracing::warn!(consumer = self.consumer_name, unowned = ?self.unowned, "partitions are behind and no member reads them");
        if self.next_rejoin.is_some_and(|t| now < t) {
            return false;
        }
        self.next_rejoin = Some(now + self.backoff);
        self.backoff = (self.backoff * 2).min(REJOIN_BACKOFF.1);
        // A fresh generation: what the old one left behind starts its wait again.
        self.seen.clear();
        metrics::counter!(m::GROUP_REJOINS_TOTAL, "consumer" => self.consumer_name).increment(1);
        true
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
        self.unowned = unowned;
    }
}

/// The default static member id of this instance (`group.instance.id`): the host name and a
/// digest of the state directory, the same across restarts of one instance (a crash-looping
/// container keeps its host name) and different for two instances on one host (each has its
/// own state directory).
pub(crate) fn default_instance_id(state_dir: &std::path::Path) -> String {
    use sha2::Digest;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    let dir = std::fs::canonicalize(state_dir).unwrap_or_else(|_| state_dir.to_owned());
    let digest = sha2::Sha256::digest(dir.to_string_lossy().as_bytes());
    format!("{host}-{}", hex::encode(&digest[..4]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_instance_id_is_stable_per_state_directory() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        assert_eq!(default_instance_id(a.path()), default_instance_id(a.path()));
        assert_ne!(default_instance_id(a.path()), default_instance_id(b.path()));
    }
}
