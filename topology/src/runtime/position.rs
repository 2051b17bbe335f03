//! Per-partition read positions, kept by kledger itself.
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

/// First seek-back distance.
pub const FIRST_STEP: i64 = 64;
/// Growth of the seek-back distance per probe.
pub const STEP_FACTOR: i64 = 16;

/// What to do with a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The next record: process it.
    Accept,
    /// Older than the position: drop it.
    Drop,
    /// The read ran ahead: drop this and later records of the partition, seek to this offset.
    SeekTo(i64),
}

/// Repeats of a jump ahead, after seeking to offset 0, before it is taken as a real gap.
pub const BOTTOM_REPEATS: u32 = 3;

/// The position of one partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Position {
    next: i64,
    back: i64,
    seeking: bool,
    saw_before_next: bool,
    bottom_hits: u32,
}

impl Position {
    /// A position at `next` (the offset of the next record to process).
    pub fn at(next: i64) -> Self {
        Self {
            next,
            back: 0,
            seeking: false,
            saw_before_next: false,
            bottom_hits: 0,
        }
    }

    /// The next offset to process.
    pub fn next(&self) -> i64 {
        self.next
    }

    /// Whether a seek back is in progress.
    pub fn seeking(&self) -> bool {
        self.seeking
    }

    fn advance(&mut self, offset: i64) -> Verdict {
        *self = Self::at(offset + 1);
        Verdict::Accept
    }

    /// Judges the record at `offset`.
    pub fn check(&mut self, offset: i64) -> Verdict {
        if offset < self.next {
            if self.seeking {
                self.saw_before_next = true;
            }
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
        // Big steps: every probe is a fetch round trip, while re-reading records older than
        // the position only costs dropping them.
        self.back = if self.back == 0 {
            FIRST_STEP
        } else {
            self.back.saturating_mul(STEP_FACTOR)
        };
        self.seeking = true;
        self.saw_before_next = false;
        Verdict::SeekTo((self.next - self.back).max(0))
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
