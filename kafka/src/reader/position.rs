//! Per-partition read positions, kept by the reader itself (private to [`super`]).
//!
//! A consumer must see a partition's records in order from a known offset. Two things break
//! that and are handled here:
//! - librdkafka may hand out records fetched before a partition was paused or sought; they
//!   are older than the position and are dropped;
//! - tansu 0.6 (the embedded broker) answers a fetch from the middle of a record batch with the
//!   *next* batch, skipping the rest of the one asked for (probe in `tests/broker_smoke.rs`).
//!   A read that jumps ahead is therefore sought back, further each time, until a fetch
//!   returns records before the position; a jump that repeats after that is a real gap
//!   (transaction markers under read_committed, compaction) and is accepted. On Apache Kafka
//!   the first record is always the position, so none of this triggers.
//! - the same broker answers a fetch from inside a partition's *last* batch with nothing at
//!   all, so no read runs ahead to reveal it. A position that has not been served since it was
//!   set (no record at or before it) and reads nothing for [`IDLE_PROBE`] is probed: sought
//!   back the same way ([`IdleProbe`]). Once a fetch served it, nothing more is probed.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// Quiet time after which a position that was never served is probed backwards.
pub(super) const IDLE_PROBE: Duration = Duration::from_millis(1_000);

/// First seek-back distance.
pub(super) const FIRST_STEP: i64 = 64;
/// Growth of the seek-back distance per probe.
pub(super) const STEP_FACTOR: i64 = 16;

/// What to do with a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Verdict {
    /// The next record: process it.
    Accept,
    /// Older than the position: drop it.
    Drop,
    /// The read ran ahead: drop this and later records of the partition, seek to this offset.
    SeekTo(i64),
}

/// Repeats of a jump ahead, after seeking to offset 0, before it is taken as a real gap.
pub(super) const BOTTOM_REPEATS: u32 = 3;

/// The position of one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Position {
    next: i64,
    back: i64,
    seeking: bool,
    saw_before_next: bool,
    bottom_hits: u32,
    served: bool,
}

impl Position {
    /// A position at `next` (the offset of the next record to process).
    pub(super) fn at(next: i64) -> Self {
        Self {
            next,
            back: 0,
            seeking: false,
            saw_before_next: false,
            bottom_hits: 0,
            // Offset 0 starts a batch: nothing to probe.
            served: next == 0,
        }
    }

    /// The next offset to process.
    pub(super) fn next(&self) -> i64 {
        self.next
    }

    /// Whether a seek back is still on its way (the broker has not yet served the region
    /// before the position); an end-of-partition report before that is not the end.
    pub(super) fn seeking(&self) -> bool {
        self.seeking && !self.saw_before_next
    }

    /// Whether a fetch has served this position (a record at or before it was read): from
    /// then on the consumer reads in order from batch boundaries.
    pub(super) fn served(&self) -> bool {
        self.served
    }

    /// For a position that reads nothing: where to seek to find out whether the broker skipped
    /// it (see the module comment). None once the position was served or the search reached
    /// the start.
    pub(super) fn probe(&mut self) -> Option<i64> {
        if self.served {
            return None;
        }
        let target = self.step_back();
        if target == 0 {
            // From the start nothing can be skipped: this is the last probe.
            self.served = true;
        }
        Some(target)
    }

    fn step_back(&mut self) -> i64 {
        // Big steps: every probe is a fetch round trip, while re-reading records older than
        // the position only costs dropping them.
        self.back = if self.back == 0 {
            FIRST_STEP
        } else {
            self.back.saturating_mul(STEP_FACTOR)
        };
        self.seeking = true;
        self.saw_before_next = false;
        (self.next - self.back).max(0)
    }

    fn advance(&mut self, offset: i64) -> Verdict {
        *self = Self::at(offset + 1);
        self.served = true;
        Verdict::Accept
    }

    /// Judges the record at `offset`.
    pub(super) fn check(&mut self, offset: i64) -> Verdict {
        if offset < self.next {
            if self.seeking {
                self.saw_before_next = true;
            }
            self.served = true;
            return Verdict::Drop;
        }
        if offset == self.next || (self.seeking && self.saw_before_next) {
            // Next in line, or a jump after the broker served the region before it: a real gap.
            return self.advance(offset);
        }
        let target = (self.next - self.back).max(0);
        if self.seeking && target == 0 {
            // Reading from the very start still jumps: the records are gone (or never were).
            self.bottom_hits += 1;
            if self.bottom_hits >= BOTTOM_REPEATS {
                return self.advance(offset);
            }
            return Verdict::SeekTo(0);
        }
        Verdict::SeekTo(self.step_back())
    }
}

/// When to probe positions that read nothing (see [`Position::probe`]).
#[derive(Debug)]
pub(super) struct IdleProbe {
    quiet_since: BTreeMap<i32, Instant>,
    quiet: Duration,
}

impl Default for IdleProbe {
    fn default() -> Self {
        Self::after(IDLE_PROBE)
    }
}

impl IdleProbe {
    /// Probes after `quiet` without a record (a reader of a topic that is not being written
    /// can probe sooner than a live consumer).
    pub(super) fn after(quiet: Duration) -> Self {
        Self {
            quiet_since: BTreeMap::new(),
            quiet,
        }
    }

    /// Partition `p` read a record in the round that ended `now`.
    pub(super) fn seen(&mut self, p: i32, now: Instant) {
        if let Some(t) = self.quiet_since.get_mut(&p) {
            *t = now;
        }
    }

    /// Seeks (partition, offset) for the positions not yet served that read nothing for the
    /// quiet time ([`IDLE_PROBE`] by default).
    pub(super) fn due(
        &mut self,
        positions: &mut BTreeMap<i32, Position>,
        now: Instant,
    ) -> Vec<(i32, i64)> {
        self.quiet_since
            .retain(|p, _| positions.get(p).is_some_and(|pos| !pos.served()));
        let mut seeks = Vec::new();
        for (&p, pos) in positions.iter_mut().filter(|(_, pos)| !pos.served()) {
            let since = self.quiet_since.entry(p).or_insert(now);
            if now.duration_since(*since) >= self.quiet {
                *since = now;
                if let Some(o) = pos.probe() {
                    seeks.push((p, o));
                }
            }
        }
        seeks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_order_records_are_accepted_and_older_dropped() {
        let mut p = Position::at(10);
        assert_eq!(p.check(8), Verdict::Drop);
        assert_eq!(p.check(10), Verdict::Accept);
        assert_eq!(p.check(11), Verdict::Accept);
        assert_eq!(p.next(), 12);
    }

    #[test]
    fn a_skipped_batch_is_sought_back_until_the_position_is_read() {
        // Batches [0..100) and [100..200); the position is 150; the broker returns the batch
        // after the one containing the fetch offset.
        let batch_after = |fetch: i64| {
            if fetch == 0 {
                0
            } else if fetch <= 100 {
                100
            } else {
                200
            }
        };
        let mut p = Position::at(150);
        let mut fetch = 150;
        let mut seeks = 0;
        loop {
            let first = batch_after(fetch);
            match p.check(first) {
                Verdict::SeekTo(o) => {
                    fetch = o;
                    seeks += 1;
                }
                Verdict::Drop => {
                    // The broker served the region: the position comes next.
                    assert_eq!(p.check(150), Verdict::Accept);
                    break;
                }
                Verdict::Accept => panic!("accepted a skip"),
            }
            assert!(seeks < 20);
        }
        assert!(seeks >= 1);
    }

    #[test]
    fn a_real_gap_is_accepted_after_the_broker_served_the_region() {
        let mut p = Position::at(50);
        assert_eq!(p.check(52), Verdict::SeekTo(0));
        assert_eq!(p.check(49), Verdict::Drop); // records before the position: region is served
        assert_eq!(p.check(52), Verdict::Accept); // 50 and 51 do not exist (markers)
        assert_eq!(p.next(), 53);
    }

    #[test]
    fn a_jump_that_repeats_from_the_start_is_a_gap() {
        let mut p = Position::at(0);
        assert_eq!(p.check(3), Verdict::SeekTo(0));
        assert_eq!(p.check(3), Verdict::SeekTo(0));
        assert_eq!(p.check(3), Verdict::SeekTo(0));
        assert_eq!(p.check(3), Verdict::Accept);
        assert_eq!(p.next(), 4);
    }

    #[test]
    fn a_position_inside_the_last_batch_is_probed_until_served() {
        // Batch [100..600) is the last; the broker answers a fetch inside it with nothing.
        let mut p = Position::at(554);
        assert!(!p.served());
        let mut fetch = 554;
        let mut probes = 0;
        while fetch > 100 {
            fetch = p.probe().expect("not served yet");
            probes += 1;
            assert!(probes < 10);
        }
        // The fetch at a batch boundary returns the batch: older records are dropped, then
        // the position is read.
        assert_eq!(p.check(100), Verdict::Drop);
        assert!(p.served() && !p.seeking());
        assert_eq!(p.check(554), Verdict::Accept);
        assert_eq!(p.probe(), None);
    }

    #[test]
    fn an_end_of_partition_after_the_probe_was_served_is_the_end() {
        let mut p = Position::at(40);
        assert_eq!(p.probe(), Some(0));
        assert!(p.seeking());
        assert_eq!(p.check(0), Verdict::Drop);
        assert!(!p.seeking());
        assert_eq!(p.probe(), None);
    }

    #[test]
    fn idle_probe_waits_for_the_quiet_time_and_skips_served_positions() {
        let t0 = Instant::now();
        let mut positions = BTreeMap::from([(1, Position::at(500)), (2, Position::at(0))]);
        let mut idle = IdleProbe::default();
        assert!(idle.due(&mut positions, t0).is_empty());
        idle.seen(1, t0 + IDLE_PROBE / 2);
        assert!(idle.due(&mut positions, t0 + IDLE_PROBE).is_empty());
        let due = idle.due(&mut positions, t0 + IDLE_PROBE * 2);
        assert_eq!(due, vec![(1, 500 - FIRST_STEP)]);
    }

    #[test]
    fn stale_records_after_a_seek_never_skip() {
        // Records fetched before the seek keep arriving ahead: the search goes further back
        // and ends at the start, never accepting them without the region being served.
        let mut p = Position::at(500);
        for _ in 0..BOTTOM_REPEATS {
            assert!(matches!(p.check(700), Verdict::SeekTo(_)));
        }
        assert_eq!(p.next(), 500);
        assert_eq!(p.check(499), Verdict::Drop);
        assert_eq!(p.check(500), Verdict::Accept);
    }
}
