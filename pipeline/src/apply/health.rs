//! Degraded reporting: the processor keeps retrying whatever a retry can fix, and says so on
//! `/readyz` and `kledger_processor_degraded` while a partition has failed
//! `processor.degraded_after_attempts` times in a row or for longer than
//! `processor.degraded_after_ms`, while the group has assigned it nothing that long, or while no
//! broker has been reachable that long (the root cause first); it is well again when none holds.
//!
//! May not touch: Kafka clients, state.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use kledger_runtime::status::Status;

use super::membership::Membership;

/// What the processor reports about itself.
#[derive(Debug)]
pub(super) struct Health {
    status: Arc<Status>,
    /// Partitions failing since when (cleared when they are read again or a batch on them is
    /// durable).
    failing_since: BTreeMap<i32, Instant>,
    /// `processor.degraded_after_ms`.
    after: Duration,
    /// `processor.degraded_after_attempts`.
    attempts: u32,
}

impl Health {
    pub(super) fn new(status: Arc<Status>, after: Duration, attempts: u32) -> Self {
        Self {
            status,
            failing_since: BTreeMap::new(),
            after,
            attempts,
        }
    }

    /// Whether a failing partition or a degraded report asks for [`Self::update`] every turn.
    pub(super) fn watching(&self) -> bool {
        !self.failing_since.is_empty() || self.status.degraded().is_some()
    }

    /// `ps` failed, attempt `attempt` in a row, for `why` (they re-sync): degraded from
    /// `processor.degraded_after_attempts`.
    pub(super) fn failing(&mut self, ps: &[i32], attempt: u32, why: &str, now: Instant) {
        for p in ps {
            self.failing_since.entry(*p).or_insert(now);
        }
        if attempt >= self.attempts {
            if attempt == self.attempts {
                tracing::error!(partitions = ?ps, attempt, reason = why, "the processor is degraded: partitions keep failing; retrying with backoff");
            }
            self.status.set_degraded(Some(format!(
                "partitions {ps:?} failed {attempt} times in a row: {why}"
            )));
        }
    }

    /// `p` is read again, or a batch on it is durable: its failure is over.
    pub(super) fn recovered(&mut self, p: i32) {
        self.failing_since.remove(&p);
    }

    /// Reports degraded, with the reason, or well again. `broker` is the reason no broker is
    /// reachable, if it has not been for `processor.degraded_after_ms`.
    pub(super) fn update(&mut self, membership: &Membership, broker: Option<String>, now: Instant) {
        self.failing_since.retain(|p, _| membership.holds(*p));
        let long = |since: Instant| now.saturating_duration_since(since) >= self.after;
        // The root cause first: with no broker reachable, the group cannot assign anything
        // either.
        if let Some(why) = broker {
            self.status.set_degraded(Some(why));
            return;
        }
        if let Some(since) = membership.rejoining_since().filter(|t| long(*t)) {
            self.status.set_degraded(Some(format!(
                "the group has assigned this processor nothing for {} s since revoking its partitions (is the broker reachable?)",
                now.saturating_duration_since(since).as_secs()
            )));
            return;
        }
        if let Some((p, since)) = self.failing_since.iter().find(|(_, t)| long(**t)) {
            self.status.set_degraded(Some(format!(
                "partition {p} has failed for {} s and is being retried",
                now.saturating_duration_since(*since).as_secs()
            )));
            return;
        }
        if membership.worst_failures() < self.attempts {
            self.status.set_degraded(None);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn health(after_s: u64, attempts: u32) -> (Health, Arc<Status>) {
        let status = Arc::new(Status::default());
        let h = Health::new(status.clone(), Duration::from_secs(after_s), attempts);
        (h, status)
    }

    #[test]
    fn a_partition_failing_too_long_or_too_often_is_degraded_until_it_recovers() {
        let (mut h, status) = health(10, 3);
        let mut m = Membership::default();
        m.restoring(&[0, 1], 0);
        m.ready(0);
        m.ready(1);
        let t0 = Instant::now();
        let (held, attempt) = m.retry(&[1].into());
        h.failing(&held, attempt, "broker down", t0);
        m.restoring(&held, attempt);
        h.update(&m, None, t0 + Duration::from_secs(9));
        assert_eq!(
            status.degraded(),
            None,
            "neither too long nor too often yet"
        );
        assert!(h.watching());
        h.update(&m, None, t0 + Duration::from_secs(10));
        let why = status.degraded().expect("failing for 10 s");
        assert!(why.contains("partition 1 has failed for 10 s"), "{why}");
        // Read again: no longer failing, but its restore's attempt still counts.
        m.ready(1);
        h.recovered(1);
        h.update(&m, None, t0 + Duration::from_secs(11));
        assert_eq!(status.degraded(), None);
        // The third attempt in a row is degraded at once.
        for attempt in 2..=3 {
            h.failing(&[1], attempt, "broker down", t0);
        }
        let why = status.degraded().expect("three attempts");
        assert!(
            why.contains("failed 3 times in a row: broker down"),
            "{why}"
        );
        // Still three failures on record: updating does not clear it.
        m.restoring(&[1], 3);
        h.recovered(1);
        h.update(&m, None, t0);
        assert!(status.degraded().is_some());
        m.settled(1);
        h.update(&m, None, t0);
        assert_eq!(status.degraded(), None);
        assert!(!h.watching());
    }

    #[test]
    fn an_unreachable_broker_is_named_before_an_empty_assignment() {
        let (mut h, status) = health(5, 3);
        let mut m = Membership::default();
        m.restoring(&[0], 0);
        let t0 = Instant::now();
        m.revoked(&[0], t0);
        h.update(&m, None, t0 + Duration::from_secs(6));
        assert!(
            status
                .degraded()
                .unwrap()
                .contains("assigned this processor nothing for 6 s")
        );
        h.update(&m, Some("no broker has been reachable for 6 s".into()), t0);
        assert_eq!(
            status.degraded().unwrap(),
            "no broker has been reachable for 6 s"
        );
        m.assigned(&[0]);
        h.update(&m, None, t0 + Duration::from_secs(60));
        assert_eq!(status.degraded(), None);
    }
}
