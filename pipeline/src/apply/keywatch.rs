//! The processor's watch over the keys topic partitions it writes (rules v4).
//!
//! In the default delivery mode an old owner can still decide and write after a rebalance
//! (its batch in flight): the same decision sealed under a data key of its own, hashed alike
//! and folded as one. That second key is on the keys topic, where this processor did not put
//! it; a purge must destroy it too (docs/privacy.md). So the processor reads into state every
//! keys-topic record it did not write itself, as soon as it knows of one:
//! - **a gap**: a record this processor wrote did not land where its last one ended
//!   ([`Processor::follow_keys`](super::Processor)), so something else wrote there;
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
//! May not touch: the intents reader, the outbox.

use std::time::{Duration, Instant};

use anyhow::Context;
use kledger_state::keys;
use rdkafka::producer::Producer;

use super::{Part, Processor, lifecycle::InFlight};
use kledger_runtime::metrics as m;

/// How long one end-of-partition query may take.
const WATERMARK_TIMEOUT: Duration = Duration::from_secs(5);

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
        if self.keys_retry_at.is_some_and(|t| Instant::now() < t) {
            return Ok(());
        }
        let ready: Vec<i32> = self
            .parts
            .iter()
            .filter(|(_, part)| matches!(part, Part::Ready { .. }))
            .map(|(p, _)| *p)
            .collect();
        let mut behind: Vec<i32> = ready
            .iter()
            .copied()
            .filter(|p| !self.keys_next.contains_key(p))
            .collect();
        let check = Duration::from_millis(self.config.processor.keys_check_ms);
        if self.keys_checked.is_none_or(|t| t.elapsed() >= check) && !self.watch.reach.unreachable()
        {
            self.keys_checked = Some(Instant::now());
            for p in &ready {
                let Some(next) = self.keys_next.get(p).copied() else {
                    continue;
                };
                match self.producer.client().fetch_watermarks(
                    &self.topics.keys,
                    *p,
                    WATERMARK_TIMEOUT,
                ) {
                    Ok((_, high)) if high > next => behind.push(*p),
                    Ok(_) => {}
                    Err(e) => {
                        tracing::warn!(partition = p, error = %e, "keys topic: reading its end failed; checked again later");
                        break;
                    }
                }
            }
        }
        if behind.is_empty() {
            return Ok(());
        }
        behind.sort_unstable();
        behind.dedup();
        self.settle(in_flight)?;
        match crate::keys::restore_keys(
            &self.config,
            &self.topics.keys,
            self.store.as_ref(),
            &behind,
        ) {
            Ok(read) => {
                self.keys_retry_at = None;
                for p in &behind {
                    let next =
                        kledger_state::next_offset(self.store.as_ref(), *p, keys::META_KEYS_NEXT)
                            .context("keys position")?;
                    self.keys_next.insert(*p, next);
                }
                tracing::info!(partitions = ?behind, records = read, "keys topic: read records this processor did not write");
                metrics::counter!(m::KEYS_CAUGHT_UP_TOTAL).increment(read);
                // A key of a purged row among them is queued for its tombstone.
                self.shred_due = true;
            }
            Err(e) if super::unrecoverable(&e) => return Err(e.context("keys topic")),
            Err(e) => {
                tracing::warn!(partitions = ?behind, error = %format!("{e:#}"), "keys topic: reading records this processor did not write failed; tried again later");
                self.keys_retry_at = Some(Instant::now() + check);
                return Ok(());
            }
        }
        Ok(())
    }
}
