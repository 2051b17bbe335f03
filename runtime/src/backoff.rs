//! Pauses between the tries of something that keeps failing: the first pause, doubled after
//! each failure up to the largest. Every retry loop of kledger takes its pauses from here.

use std::time::Duration;

/// Pauses that double from `first` up to `max`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    first: Duration,
    max: Duration,
    next: Duration,
}

impl Backoff {
    /// Pauses from `first`, doubling up to `max` (at least `first`).
    pub const fn new(first: Duration, max: Duration) -> Self {
        let max = if max.as_nanos() < first.as_nanos() {
            first
        } else {
            max
        };
        Self {
            first,
            max,
            next: first,
        }
    }

    /// The same from milliseconds.
    pub const fn from_millis(first: u64, max: u64) -> Self {
        Self::new(Duration::from_millis(first), Duration::from_millis(max))
    }

    /// The pause before the next try; the one after it is twice as long, up to the largest.
    pub fn next_pause(&mut self) -> Duration {
        let pause = self.next;
        self.next = self.next.saturating_mul(2).min(self.max);
        pause
    }

    /// Starts over from the first pause (after a success).
    pub fn reset(&mut self) {
        self.next = self.first;
    }

    /// The largest pause.
    pub fn max(&self) -> Duration {
        self.max
    }

    /// The pause before try `attempt` of a loop that counts its own tries: none before the
    /// first (0), `first` before the second, doubling up to the largest.
    pub fn before_attempt(&self, attempt: u32) -> Duration {
        if attempt == 0 {
            return Duration::ZERO;
        }
        let doublings = attempt.saturating_sub(1).min(32);
        self.first
            .saturating_mul(1u32 << doublings.min(31))
            .min(self.max)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_double_up_to_the_largest_and_start_over() {
        let mut b = Backoff::from_millis(500, 3_000);
        let got: Vec<u128> = (0..5).map(|_| b.next_pause().as_millis()).collect();
        assert_eq!(got, [500, 1_000, 2_000, 3_000, 3_000]);
        b.reset();
        assert_eq!(b.next_pause(), Duration::from_millis(500));
        assert_eq!(b.next_pause(), Duration::from_millis(1_000));
    }

    #[test]
    fn a_counted_attempt_gets_the_same_pauses_and_never_overflows() {
        let b = Backoff::from_millis(100, 5_000);
        let got: Vec<u128> = (0..8).map(|a| b.before_attempt(a).as_millis()).collect();
        assert_eq!(got, [0, 100, 200, 400, 800, 1_600, 3_200, 5_000]);
        assert_eq!(b.before_attempt(u32::MAX), Duration::from_millis(5_000));
        assert_eq!(Backoff::from_millis(10, 1).max(), Duration::from_millis(10));
    }
}
