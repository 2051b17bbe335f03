//! Membership: which intents partitions the processor holds and where each stands — restoring
//! (in a restore generation, at an attempt) or ready (with its failures in a row) — and what the
//! group revoked. Bookkeeping only: the consumer's pause, seek and resume and the restore
//! threads ([`super::restore::Restores`]) are the loop's; this says what they act on, so the
//! rules are tested without a broker.
//!
//! May not touch: Kafka clients, state, threads.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

/// Where a held partition stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Part {
    /// Its outbox is being folded into state by restore `generation`, try `attempt` (0: the
    /// first after an assignment).
    Restoring { generation: u64, attempt: u32 },
    /// Read and decided; `failures` batches in a row failed on it.
    Ready { failures: u32 },
}

impl Part {
    /// Failed tries in a row: a restore's attempt, or a ready partition's failures.
    fn failures(self) -> u32 {
        match self {
            Part::Ready { failures } => failures,
            Part::Restoring { attempt, .. } => attempt,
        }
    }
}

/// The processor's partitions.
#[derive(Debug, Default)]
pub(super) struct Membership {
    parts: BTreeMap<i32, Part>,
    /// The last restore generation started.
    generation: u64,
    /// Partitions revoked since the last assignment (eager rebalances revoke everything and
    /// often hand the same partitions back).
    revoked: BTreeSet<i32>,
    /// Since when the group has given this consumer nothing after revoking its partitions.
    rejoining_since: Option<Instant>,
}

impl Membership {
    /// The group assigned `ps`. Returns the partitions revoked since the last assignment that
    /// did not come back (their state may be dropped), and whether this ends a wait for an
    /// assignment. `ps` are restored next ([`Self::restoring`]).
    pub(super) fn assigned(&mut self, ps: &[i32]) -> (Vec<i32>, bool) {
        let gone = std::mem::take(&mut self.revoked)
            .into_iter()
            .filter(|p| !ps.contains(p))
            .collect();
        (gone, self.rejoining_since.take().is_some())
    }

    /// The group revoked `ps` at `now`.
    pub(super) fn revoked(&mut self, ps: &[i32], now: Instant) {
        for p in ps {
            self.parts.remove(p);
            self.revoked.insert(*p);
        }
        if self.parts.is_empty() {
            self.rejoining_since.get_or_insert(now);
        }
    }

    /// `ps` start restoring at `attempt`, in a new generation (returned): a restore of an
    /// older generation that finishes later changes nothing.
    pub(super) fn restoring(&mut self, ps: &[i32], attempt: u32) -> u64 {
        self.generation += 1;
        for p in ps {
            self.parts.insert(
                *p,
                Part::Restoring {
                    generation: self.generation,
                    attempt,
                },
            );
        }
        self.generation
    }

    /// Of the partitions restore `generation` folded, those still waiting for it (not revoked,
    /// not restoring again since).
    pub(super) fn restored(&self, ps: &[i32], generation: u64) -> Vec<i32> {
        ps.iter()
            .copied()
            .filter(|p| {
                matches!(self.parts.get(p),
                    Some(Part::Restoring { generation: g, .. }) if *g == generation)
            })
            .collect()
    }

    /// `p` is read again; its restore's attempt counts as its failures so far.
    pub(super) fn ready(&mut self, p: i32) {
        let failures = self.parts.get(&p).map_or(0, |part| part.failures());
        self.parts.insert(p, Part::Ready { failures });
    }

    /// A batch on `p` became durable: its failures are over (if it is still held).
    pub(super) fn settled(&mut self, p: i32) {
        if let Some(part) = self.parts.get_mut(&p) {
            *part = Part::Ready { failures: 0 };
        }
    }

    /// The partitions of `ps` still held, and the attempt their re-sync is: one past the most
    /// failures among them.
    pub(super) fn retry(&self, ps: &BTreeSet<i32>) -> (Vec<i32>, u32) {
        let held: Vec<i32> = ps.iter().copied().filter(|p| self.holds(*p)).collect();
        let attempt = held
            .iter()
            .filter_map(|p| self.parts.get(p))
            .map(|part| part.failures())
            .max()
            .unwrap_or(0)
            + 1;
        (held, attempt)
    }

    /// Whether `p` is held.
    pub(super) fn holds(&self, p: i32) -> bool {
        self.parts.contains_key(&p)
    }

    /// Every held partition.
    pub(super) fn held(&self) -> BTreeSet<i32> {
        self.parts.keys().copied().collect()
    }

    /// The held partitions that are read and decided.
    pub(super) fn ready_partitions(&self) -> Vec<i32> {
        self.parts
            .iter()
            .filter(|(_, part)| matches!(part, Part::Ready { .. }))
            .map(|(p, _)| *p)
            .collect()
    }

    /// How many held partitions are restoring.
    pub(super) fn restoring_count(&self) -> usize {
        self.parts
            .values()
            .filter(|p| matches!(p, Part::Restoring { .. }))
            .count()
    }

    /// The most failures in a row among held partitions.
    pub(super) fn worst_failures(&self) -> u32 {
        self.parts.values().map(|p| p.failures()).max().unwrap_or(0)
    }

    /// Since when the group has assigned nothing after a revoke, if it has not since.
    pub(super) fn rejoining_since(&self) -> Option<Instant> {
        self.rejoining_since
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restore_of_an_older_generation_changes_nothing() {
        let mut m = Membership::default();
        let first = m.restoring(&[0, 1], 0);
        // Partition 1 fails again before the first restore ends: it restores anew.
        let second = m.restoring(&[1], 1);
        assert_eq!(m.restored(&[0, 1], first), vec![0]);
        assert_eq!(m.restored(&[1], second), vec![1]);
        m.ready(0);
        m.ready(1);
        // A restore's attempt is the partition's failures so far.
        assert_eq!(m.worst_failures(), 1);
        assert_eq!(m.restored(&[0, 1], first), Vec::<i32>::new());
        assert_eq!(m.ready_partitions(), vec![0, 1]);
    }

    #[test]
    fn a_retry_counts_up_from_the_worst_failure_of_the_partitions_still_held() {
        let mut m = Membership::default();
        m.restoring(&[0, 1, 2], 0);
        for p in 0..3 {
            m.ready(p);
        }
        let (held, attempt) = m.retry(&[0, 1, 9].into());
        assert_eq!((held.clone(), attempt), (vec![0, 1], 1));
        m.restoring(&held, attempt);
        m.ready(0);
        assert_eq!(m.retry(&[0].into()), (vec![0], 2));
        assert_eq!(m.restoring_count(), 1);
        // A durable batch clears the count.
        m.settled(0);
        m.settled(7);
        assert_eq!(m.retry(&[0].into()), (vec![0], 1));
        assert!(!m.holds(7));
    }

    #[test]
    fn revoked_partitions_that_do_not_come_back_are_gone() {
        let mut m = Membership::default();
        m.restoring(&[0, 1, 2], 0);
        let now = Instant::now();
        m.revoked(&[1], now);
        assert_eq!(
            m.rejoining_since(),
            None,
            "partitions 0 and 2 are still held"
        );
        m.revoked(&[0, 2], now);
        assert_eq!(m.rejoining_since(), Some(now));
        assert!(m.held().is_empty());
        let (gone, was_waiting) = m.assigned(&[0, 3]);
        assert_eq!((gone, was_waiting), (vec![1, 2], true));
        assert_eq!(m.rejoining_since(), None);
        let (gone, was_waiting) = m.assigned(&[0, 3]);
        assert_eq!((gone, was_waiting), (vec![], false));
    }
}
