//! The processor's watch over the keys topic partitions it writes (rules v4).
//!
//! In the default delivery mode an old owner can still decide and write after a rebalance
//! (its batch in flight): the same decision sealed under a data key of its own, hashed alike
//! and folded as one. That second key is on the keys topic, where this processor did not put
//! it; a purge must destroy it too (docs/privacy.md). So the processor reads into state every
//! keys-topic record it did not write itself, as soon as it knows of one:
//! - **a gap**: a record this processor wrote did not land where its last one ended
//!   ([`KeyWatch::follow`]), so something else wrote there;
//! - **the check**: every `processor.keys_check_ms`, the end of each partition it owns is
//!   compared with where its own records end (an old owner's key written after this
//!   processor's last one).
//!
//! Catching up folds the records from state's keys position to the partition's end
//! ([`kledger_state::restore_key_record`]): a key of a row already purged is destroyed at once
//! and queued for its tombstone; any other is kept, and the row's purge finds it by the row's
//! tag ([`kledger_processors::seal::key_row_tag`]). It runs with nothing in flight, so no
//! decided purge can miss a key it reads.
//!
//! Keys a purge destroyed are queued in state's `shred` column family by the fold (live or in
//! a restore); [`Processor::drain_shred`](super::Processor) writes their tombstones to the keys
//! topic between batches and takes them off the queue.
//!
//! May not touch: the intents reader, the outbox.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Context;
use kledger_state::{StateRead, WriteSet, keys};
use rdkafka::producer::Producer;

use super::durable::{Durable, make_durable};
use super::{Processor, lifecycle::InFlight};
use crate::records::{OutKind, Outgoing};
use kledger_runtime::metrics as m;

/// How long one end-of-partition query may take.
const WATERMARK_TIMEOUT: Duration = Duration::from_secs(5);
/// Destroyed keys' tombstones written per partition per turn at most.
const SHRED_BATCH: usize = 10_000;

/// Where the processor's own records on the keys topic end, per partition, and what waits:
/// the periodic check, a catch-up after a failure, destroyed keys' tombstones.
#[derive(Debug)]
pub(super) struct KeyWatch {
    /// Per keys-topic partition, the offset this processor's next record there lands at if
    /// nothing else writes there ([`KeyWatch::follow`]); set by each restore.
    next: BTreeMap<i32, i64>,
    /// Destroyed keys may be queued for tombstones ([`Processor::drain_shred`]).
    shred_due: bool,
    /// When the keys topic's ends were last compared with `next`.
    checked: Option<Instant>,
    /// After a failed catch-up, not before this.
    retry_at: Option<Instant>,
    /// `processor.keys_check_ms`.
    check: Duration,
}

impl KeyWatch {
    pub(super) fn new(check: Duration) -> Self {
        Self {
            next: BTreeMap::new(),
            // Keys queued before the last stop are written on the first turn.
            shred_due: true,
            checked: None,
            retry_at: None,
            check,
        }
    }

    /// Partition `p` was restored (or caught up): the keys topic was read to `next`, where
    /// this processor's next record lands; a key of a purged row among what was read is
    /// queued for its tombstone.
    pub(super) fn restored(&mut self, p: i32, next: i64) {
        self.next.insert(p, next);
        self.shred_due = true;
    }

    /// A fold queued destroyed keys (a purge).
    pub(super) fn shred_queued(&mut self) {
        self.shred_due = true;
    }

    /// Follows the keys topic's partitions this processor writes: while every record written
    /// to one lands at the offset after its last, nothing else wrote there, and state's keys
    /// position may move past them once their batch is durable. A gap (another writer: an
    /// old owner still writing) stops that until the partition's next restore, which reads
    /// the keys topic from the last position state holds.
    pub(super) fn follow(&mut self, written: &BTreeMap<i32, Vec<i64>>) {
        for (p, offsets) in written {
            for &o in offsets {
                match self.next.get_mut(p) {
                    Some(next) if *next == o => *next += 1,
                    Some(_) => {
                        tracing::info!(
                            partition = p,
                            offset = o,
                            "keys topic: a record not written by this processor; its keys position waits for the next restore"
                        );
                        self.next.remove(p);
                        break;
                    }
                    None => break,
                }
            }
        }
    }

    /// The keys positions of `ps` that this processor alone has written up to.
    pub(super) fn positions(&self, ps: impl IntoIterator<Item = i32>) -> BTreeMap<i32, i64> {
        ps.into_iter()
            .filter_map(|p| self.next.get(&p).map(|n| (p, *n)))
            .collect()
    }

    /// Of the `ready` partitions, those whose keys topic holds records this processor did not
    /// write: a gap seen, or — when the check is due and a broker is reachable — an end past
    /// where its own records end (`end_of`, stopping at the first failed query: a broker that
    /// went away costs one query, not one per partition).
    pub(super) fn behind(
        &mut self,
        ready: &[i32],
        now: Instant,
        reachable: bool,
        mut end_of: impl FnMut(i32) -> Result<i64, String>,
    ) -> Vec<i32> {
        if self.retry_at.is_some_and(|t| now < t) {
            return Vec::new();
        }
        let mut behind: Vec<i32> = ready
            .iter()
            .copied()
            .filter(|p| !self.next.contains_key(p))
            .collect();
        if self
            .checked
            .is_none_or(|t| now.saturating_duration_since(t) >= self.check)
            && reachable
        {
            self.checked = Some(now);
            for p in ready {
                let Some(next) = self.next.get(p).copied() else {
                    continue;
                };
                match end_of(*p) {
                    Ok(high) if high > next => behind.push(*p),
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!(partition = p, error = %e, "keys topic: reading its end failed; checked again later");
                        break;
                    }
                }
            }
        }
        behind.sort_unstable();
        behind.dedup();
        behind
    }

    /// A catch-up failed at `now`: the next waits for one check interval.
    pub(super) fn catch_up_failed(&mut self, now: Instant) {
        self.retry_at = Some(now + self.check);
    }
}

/// Destroyed keys' tombstones queued for the `ready` partitions (at most [`SHRED_BATCH`] a
/// partition): the records, their queue entries, and whether more wait.
fn queued_tombstones(
    store: &impl StateRead,
    ready: &[i32],
) -> anyhow::Result<(Vec<Outgoing>, Vec<Vec<u8>>, bool)> {
    let mut out = Vec::new();
    let mut queued = Vec::new();
    let mut more = false;
    for &p in ready {
        let entries = store
            .scan(kledger_state::Cf::Shred, &keys::partition(p), SHRED_BATCH)
            .context("reading the shred queue")?;
        more |= entries.len() >= SHRED_BATCH;
        for (k, _) in entries {
            let Some((_, acct, key_id)) = keys::split_child(&k) else {
                continue;
            };
            out.push(Outgoing {
                kind: OutKind::KeyTombstone,
                partition: Some(p),
                key: Some(keys::key_record_key(acct, &String::from_utf8_lossy(key_id))),
                payload: Vec::new(),
                timestamp: None,
                headers: Vec::new(),
                intent_time: None,
                source: None,
            });
            queued.push(k);
        }
    }
    Ok((out, queued, more))
}

impl Processor {
    /// Reads the keys-topic records of its partitions that this processor did not write into
    /// state, when a gap or the periodic check finds some; settles the batch in flight first.
    /// A broker failure is logged and tried again at the next check. The check blocks the
    /// processor's loop for one query at a time, so it is skipped while the consumer reaches no
    /// broker, and a round stops at its first failed query: a broker that went away costs the
    /// loop one [`WATERMARK_TIMEOUT`], not one per partition (the loop is what reports the
    /// processor degraded, serves rebalances and stops at shutdown).
    pub(super) fn watch_keys(&mut self, in_flight: &mut Option<InFlight>) -> anyhow::Result<()> {
        if !self.limits.keyed() || self.transactional() {
            // Transactions fence an old owner: nothing but this processor writes its partitions.
            return Ok(());
        }
        let ready = self.membership.ready_partitions();
        let reachable = !self.outlet.watch().reach.unreachable();
        let (client, topic) = (self.outlet.producer().client(), &self.topics.keys);
        let behind = self.keys.behind(&ready, Instant::now(), reachable, |p| {
            client
                .fetch_watermarks(topic, p, WATERMARK_TIMEOUT)
                .map(|(_, high)| high)
                .map_err(|e| e.to_string())
        });
        if behind.is_empty() {
            return Ok(());
        }
        self.settle(in_flight)?;
        match crate::keys::restore_keys(
            &self.config,
            &self.topics.keys,
            self.store.as_ref(),
            &behind,
        ) {
            Ok(read) => {
                for p in &behind {
                    let next =
                        kledger_state::next_offset(self.store.as_ref(), *p, keys::META_KEYS_NEXT)
                            .context("keys position")?;
                    self.keys.restored(*p, next);
                }
                tracing::info!(partitions = ?behind, records = read, "keys topic: read records this processor did not write");
                metrics::counter!(m::KEYS_CAUGHT_UP_TOTAL).increment(read);
            }
            Err(e) if super::unrecoverable(&e) => return Err(e.context("keys topic")),
            Err(e) => {
                tracing::warn!(partitions = ?behind, error = %format!("{e:#}"), "keys topic: reading records this processor did not write failed; tried again later");
                self.keys.catch_up_failed(Instant::now());
            }
        }
        Ok(())
    }

    /// Writes the tombstones of data keys purges destroyed (queued in state's `shred` column
    /// family by the fold, live or in a restore) to the keys topic, then removes them from the
    /// queue. Runs while no batch is in flight (a send awaited after another drops the other's
    /// reports); a failure leaves them queued for the next turn. Keys the state write in
    /// progress queues are drained on a later turn; while it runs, the keys position is left
    /// to the next batch's write (which holds the tombstones' offsets too).
    pub(super) fn drain_shred(&mut self) -> anyhow::Result<()> {
        if !self.keys.shred_due {
            return Ok(());
        }
        let ready = self.membership.ready_partitions();
        let (out, queued, more) = queued_tombstones(self.store.as_ref(), &ready)?;
        if out.is_empty() {
            self.keys.shred_due = self.state_writer.queues_shred();
            return Ok(());
        }
        let n = out.len();
        let sent = self.outlet.send(true, &out);
        let settled = self.outlet.settle(sent);
        if let Err(e) = settled.all_or_error() {
            tracing::warn!(error = %e, "writing destroyed keys' tombstones failed; retried");
            return Ok(());
        }
        self.keys.follow(&settled.keys_written);
        let mut writes = WriteSet::default();
        for k in queued {
            writes.delete(kledger_state::Cf::Shred, k);
        }
        // A write in progress raises the keys position too (to an older value): two raises
        // at once could lower it, so it is left to the next batch's write then.
        let keys_next = if self.state_writer.busy() {
            BTreeMap::new()
        } else {
            self.keys.positions(settled.keys_written.keys().copied())
        };
        let d = Durable {
            writes,
            keys_next,
            ..Durable::default()
        };
        make_durable(self.store.as_ref(), &d).map_err(|e| anyhow::anyhow!("{e}"))?;
        metrics::counter!(m::KEYS_DESTROYED_TOTAL).increment(n as u64);
        self.keys.shred_due = more || self.state_writer.queues_shred();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_another_writer_put_between_ours_stops_following_until_the_next_restore() {
        let mut w = KeyWatch::new(Duration::from_secs(60));
        w.restored(0, 10);
        w.restored(1, 5);
        w.follow(&[(0, vec![10, 11]), (1, vec![5, 7, 8]), (2, vec![3])].into());
        assert_eq!(w.positions([0, 1, 2]), [(0, 12)].into());
        // Partition 1 is behind at once (a gap), without a query; partition 0 when the check
        // finds its end past 12.
        let t0 = Instant::now();
        let mut asked = Vec::new();
        let behind = w.behind(&[0, 1], t0, true, |p| {
            asked.push(p);
            Ok(13)
        });
        assert_eq!((behind, asked), (vec![0, 1], vec![0]));
        // Not due again for a check interval: only the gap.
        let behind = w.behind(&[0, 1], t0 + Duration::from_secs(1), true, |_| Ok(99));
        assert_eq!(behind, vec![1]);
        w.restored(1, 9);
        let behind = w.behind(&[0, 1], t0 + Duration::from_secs(60), true, |p| {
            Ok(if p == 0 { 12 } else { 9 })
        });
        assert!(behind.is_empty());
    }

    #[test]
    fn the_check_stops_at_its_first_failed_query_and_a_failed_catch_up_waits() {
        let mut w = KeyWatch::new(Duration::from_secs(60));
        w.restored(0, 1);
        w.restored(1, 1);
        let t0 = Instant::now();
        let mut asked = 0;
        let behind = w.behind(&[0, 1], t0, true, |_| {
            asked += 1;
            Err("timed out".into())
        });
        assert_eq!((behind.len(), asked), (0, 1));
        // No broker reachable: no query at all.
        let behind = w.behind(&[0, 1], t0 + Duration::from_secs(61), false, |_| {
            panic!("asked")
        });
        assert!(behind.is_empty());
        w.catch_up_failed(t0);
        w.follow(&[(0, vec![5])].into());
        assert!(
            w.behind(&[0], t0 + Duration::from_secs(59), true, |_| Ok(0))
                .is_empty()
        );
        assert_eq!(
            w.behind(&[0], t0 + Duration::from_secs(60), true, |_| Ok(0)),
            vec![0]
        );
    }
}
