//! Read progress: for each partition of a topic, the **next** offset to read. One type, one
//! encoding and one rule for every store that keeps progress (the state store's outbox and
//! input positions, the view store's and the marks store's outbox positions): progress never
//! goes backwards. A delta that would move a partition back is refused whole, changing
//! nothing (quickwit's `SourceCheckpoint::try_apply_delta` is the model).
//!
//! May not touch: anything but offsets.

use std::collections::BTreeMap;

use crate::StateError;

/// A partition's progress would go backwards: refused, nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("progress of partition {partition} would go back from next offset {from} to {to}")]
pub struct Backwards {
    /// The partition.
    pub partition: i32,
    /// Its next offset now.
    pub from: i64,
    /// The next offset refused.
    pub to: i64,
}

/// Per partition, the next offset to read (absent: from the start, 0).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checkpoint {
    next: BTreeMap<i32, i64>,
}

impl Checkpoint {
    /// No progress.
    pub fn new() -> Self {
        Self::default()
    }

    /// The next offset of partition `p` (0 when none is recorded).
    pub fn next(&self, p: i32) -> i64 {
        self.next.get(&p).copied().unwrap_or(0)
    }

    /// Whether no partition has progress.
    pub fn is_empty(&self) -> bool {
        self.next.is_empty()
    }

    /// Records that the record at `offset` of partition `p` was read: the next offset is past
    /// it (never back: a batch may list a partition's records in any order).
    pub fn read(&mut self, p: i32, offset: i64) {
        self.set_at_least(p, offset + 1);
    }

    /// Raises partition `p`'s next offset to `next` (never lowers it).
    pub fn set_at_least(&mut self, p: i32, next: i64) {
        let e = self.next.entry(p).or_insert(next);
        *e = (*e).max(next);
    }

    /// Applies `delta` (the progress of one batch) over this checkpoint: every partition's
    /// next offset becomes the delta's, unless one would go backwards; then nothing changes
    /// and the first such partition is named.
    pub fn try_apply(&mut self, delta: &Checkpoint) -> Result<(), Backwards> {
        for (&p, &to) in &delta.next {
            if let Some(&from) = self.next.get(&p)
                && to < from
            {
                return Err(Backwards {
                    partition: p,
                    from,
                    to,
                });
            }
        }
        self.next.extend(delta.next.iter().map(|(p, n)| (*p, *n)));
        Ok(())
    }

    /// Each partition and its next offset, ascending.
    pub fn iter(&self) -> impl Iterator<Item = (i32, i64)> + '_ {
        self.next.iter().map(|(p, n)| (*p, *n))
    }
}

impl FromIterator<(i32, i64)> for Checkpoint {
    /// A checkpoint of (partition, next offset) pairs (the largest next per partition).
    fn from_iter<I: IntoIterator<Item = (i32, i64)>>(iter: I) -> Self {
        let mut c = Checkpoint::new();
        for (p, next) in iter {
            c.set_at_least(p, next);
        }
        c
    }
}

/// A partition as a key: 4 bytes, big-endian (partitions sort in key order).
pub fn partition_key(p: i32) -> [u8; 4] {
    p.to_be_bytes()
}

/// A next offset as a value: 8 bytes, big-endian.
pub fn encode_next(next: i64) -> [u8; 8] {
    next.to_be_bytes()
}

/// Reads a value written by [`encode_next`].
pub fn decode_next(v: &[u8]) -> Result<i64, StateError> {
    let b: [u8; 8] = v
        .try_into()
        .map_err(|_| StateError::Corrupt(format!("a position of {} bytes", v.len())))?;
    Ok(i64::from_be_bytes(b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_only_moves_forward_and_a_refused_delta_changes_nothing() {
        let mut c: Checkpoint = [(0, 10), (1, 5)].into_iter().collect();
        let forward: Checkpoint = [(0, 12), (2, 1)].into_iter().collect();
        c.try_apply(&forward).unwrap();
        assert_eq!((c.next(0), c.next(1), c.next(2), c.next(3)), (12, 5, 1, 0));
        let mixed: Checkpoint = [(1, 9), (0, 11)].into_iter().collect();
        assert_eq!(
            c.try_apply(&mixed),
            Err(Backwards {
                partition: 0,
                from: 12,
                to: 11
            })
        );
        assert_eq!((c.next(0), c.next(1)), (12, 5), "nothing applied");
        let same: Checkpoint = [(0, 12)].into_iter().collect();
        c.try_apply(&same).unwrap();
    }

    #[test]
    fn reading_records_in_any_order_ends_past_the_last() {
        let mut c = Checkpoint::new();
        for o in [4, 2, 7, 3] {
            c.read(1, o);
        }
        assert_eq!(c.next(1), 8);
    }

    #[test]
    fn positions_round_trip_and_short_values_are_corrupt() {
        assert_eq!(decode_next(&encode_next(1 << 40)).unwrap(), 1 << 40);
        assert!(decode_next(&[0; 7]).is_err());
        assert!(partition_key(1) < partition_key(2));
    }
}
