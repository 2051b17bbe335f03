//! A batch's life: decided, sent, delivered, made durable — per input partition.
//!
//! In `idempotent` mode batches are pipelined one deep: batch N+1 is decided — against state
//! plus batch N's writes, which are not durable yet — while batch N's records are on their way
//! to the broker. N+1's data keys (rules v4) are then handed to the keys producer, and batch
//! N's delivery is awaited and its state write started on the state writer's thread
//! ([`super::durable`]) while they travel; N+1's commits, receipts and dead letters are sent
//! once N is delivered and N+1's keys are written (a commit is never on the outbox without the
//! key that opens it). N's write runs while N+1 is sent and the next input is read; the loop
//! waits for it, then commits N's input offsets, before anything reads state again.
//!
//! Partitions are independent, so a failure is too: when some of N's records fail, the
//! partitions they answer re-sync (state catches up with what reached the outbox, reading
//! resumes at the committed offset) and N+1's share of those partitions is dropped unsent;
//! every other partition of N is made durable and N+1's share of it is sent. A commit the broker
//! refuses for good marks its intent refused, so the re-read answers it `rejected`.
//! In `transactional` mode a batch is one transaction: it commits or aborts whole.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use kledger_state::WriteSet;
use rdkafka::consumer::{CommitMode, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Message, OwnedMessage};
use rdkafka::producer::Producer;
use rdkafka::types::RDKafkaErrorCode;

use super::batch::{DecideContext, Decided, PartDecided, RefusedAt, decide_parallel};
use super::durable::{Durable, Writing, make_durable};
use super::{BatchError, Processor};
use crate::records::delivery::{self, Failure, Sent};
use kledger_runtime::metrics as m;

/// Calls of `abort_transaction` before a failing abort stops the processor.
const ABORT_ATTEMPTS: u32 = 4;

/// A batch handed to the producer, not yet durable.
#[derive(Debug)]
pub(crate) struct InFlight {
    sent: Sent,
    writes: WriteSet,
    parts: BTreeMap<i32, PartDecided>,
    /// Partitions whose data keys were not written (their share was not sent).
    keys_failed: BTreeMap<i32, Failure>,
    /// Per partition, the keys-topic offset up to which every record is this processor's and
    /// its effects are in state once this batch is durable.
    keys_next: BTreeMap<i32, i64>,
}

impl InFlight {
    /// Gives up the shares of `failed` partitions: they are delivered (their records are
    /// sent) but never made durable; the partitions re-sync.
    fn drop_partitions(&mut self, failed: &BTreeMap<i32, Failure>) {
        if failed.is_empty() {
            return;
        }
        self.parts.retain(|p, _| !failed.contains_key(p));
        self.writes.retain_partitions(|p| !failed.contains_key(&p));
        self.keys_next.retain(|p, _| !failed.contains_key(p));
    }
}

/// Adds the failures of `more` to `failed` (a partition failing twice keeps its first reason
/// and every refused record).
fn absorb(failed: &mut BTreeMap<i32, Failure>, more: BTreeMap<i32, Failure>) {
    for (p, f) in more {
        match failed.entry(p) {
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(f);
            }
            std::collections::btree_map::Entry::Occupied(mut e) => {
                for (offset, reason) in f.refused {
                    e.get_mut().refused.entry(offset).or_insert(reason);
                }
            }
        }
    }
}

fn phase(name: &'static str, since: Instant) -> Instant {
    metrics::histogram!(m::BATCH_PHASE_SECONDS, "phase" => name)
        .record(since.elapsed().as_secs_f64());
    Instant::now()
}

fn partitions(batch: &[OwnedMessage]) -> BTreeSet<i32> {
    batch.iter().map(Message::partition).collect()
}

/// The next input offset of each partition's share.
fn next_offsets(parts: &BTreeMap<i32, PartDecided>) -> BTreeMap<i32, i64> {
    parts.iter().map(|(p, d)| (*p, d.next_offset)).collect()
}

/// Every partition of `ps` failed for `reason`.
fn all_failed(ps: impl IntoIterator<Item = i32>, reason: &str) -> BTreeMap<i32, Failure> {
    ps.into_iter()
        .map(|p| {
            (
                p,
                Failure {
                    reason: reason.to_owned(),
                    ..Failure::default()
                },
            )
        })
        .collect()
}

impl Processor {
    /// Decides `batch` against state plus the writes of the batch in flight, if any.
    fn decide_step(
        &self,
        batch: &[OwnedMessage],
        below: Option<&WriteSet>,
    ) -> Result<(Decided, WriteSet), BatchError> {
        let t = Instant::now();
        if tracing::enabled!(tracing::Level::DEBUG) {
            let mut ranges: BTreeMap<i32, (i64, i64)> = BTreeMap::new();
            for m in batch {
                let r = ranges
                    .entry(m.partition())
                    .or_insert((m.offset(), m.offset()));
                r.1 = m.offset();
            }
            tracing::debug!(
                records = batch.len(),
                ?ranges,
                "deciding a batch (partition: first and last offset)"
            );
        }
        let empty = WriteSet::default();
        let cx = DecideContext {
            topics: &self.topics,
            partitions: self.partitions,
            codec: self.codec.as_ref(),
            limits: self.limits,
            record_bytes_max: self.config.limits.record_bytes_max,
            refused: &self.refused,
        };
        let (decided, writes) = decide_parallel(
            self.store.as_ref(),
            below.unwrap_or(&empty),
            batch,
            &self.apply_pool,
            cx,
        )
        .map_err(|e| match e {
            // A read that failed can be tried again; bytes that do not decode cannot.
            kledger_state::StateError::Rocks(e) => BatchError::Retry(format!("reading state: {e}")),
            // A key written by an old owner after this restore read the keys topic: restore
            // again, which reads on from where it stopped (degraded if it never comes).
            e @ kledger_state::StateError::Shredded { .. } => {
                BatchError::Retry(format!("{e}; reading the keys topic again"))
            }
            e => BatchError::Fatal(anyhow::Error::new(e).context("deciding a batch")),
        })?;
        phase("decide", t);
        Ok((decided, writes))
    }

    /// Sends `decided`'s commits and receipts (to the keys producer when `keys`), each with the
    /// configured delivery timeout. Handing the records to the producer is the `send` phase
    /// (delivery is awaited later).
    fn send(&mut self, keys: bool, decided: &Decided) -> Sent {
        let t = Instant::now();
        let sent = self.outlet.send(keys, &decided.out);
        phase("send", t);
        sent
    }

    /// Hands `decided`'s data keys to the producer (none: `None`), without waiting: their
    /// round trip overlaps the batch in flight's delivery and state write. [`Self::keys_written`]
    /// waits for them before any commit they seal is sent.
    fn send_keys(&mut self, decided: &mut Decided) -> Option<Sent> {
        if decided.keys.is_empty() {
            return None;
        }
        let t = Instant::now();
        let sent = self.outlet.send(true, &decided.keys);
        decided.keys.clear();
        phase("send", t);
        Some(sent)
    }

    /// Waits for data keys [`Self::send_keys`] sent and follows where they landed. Returns the
    /// partitions whose keys were not all written: their share of the batch is not sent (a
    /// commit must never be on the outbox without the key that opens it).
    fn keys_written(&mut self, sent: Option<Sent>) -> BTreeMap<i32, Failure> {
        let Some(sent) = sent else {
            return BTreeMap::new();
        };
        let t = Instant::now();
        let settled = self.outlet.settle(sent);
        self.keys.follow(&settled.keys_written);
        phase("keys", t);
        settled.failed
    }

    /// Sends `decided` (whose data keys are written, but for the partitions of `keys_failed`,
    /// which are not sent and fail when the batch completes).
    fn launch(
        &mut self,
        mut decided: Decided,
        mut writes: WriteSet,
        keys_failed: BTreeMap<i32, Failure>,
    ) -> InFlight {
        if !keys_failed.is_empty() {
            decided.retain_partitions(|p| !keys_failed.contains_key(&p));
            writes.retain_partitions(|p| !keys_failed.contains_key(&p));
        }
        let keys_next = self.keys.positions(decided.parts.keys().copied());
        // A purge's fold queues the keys it destroyed for tombstones ([`Processor::drain_shred`]).
        if writes.family(kledger_state::Cf::Shred).next().is_some() {
            self.keys.shred_queued();
        }
        let sent = self.send(false, &decided);
        InFlight {
            sent,
            writes,
            parts: decided.parts,
            keys_failed,
            keys_next,
        }
    }

    /// Awaits delivery, then starts the state write of the partitions whose records were all
    /// written (state with the outbox and input positions, on the state writer: see
    /// [`super::durable`]); [`Self::await_durable`] waits for it and commits their input
    /// offsets. Returns the partitions that failed.
    fn complete(&mut self, f: InFlight) -> BTreeMap<i32, Failure> {
        let t = Instant::now();
        let settled = self.outlet.settle(f.sent);
        phase("deliver", t);
        let mut failed = settled.failed;
        absorb(&mut failed, f.keys_failed);
        // Records answering no input partition are not part of the processor's batches.
        failed.remove(&delivery::NO_INPUT);
        let ok: BTreeMap<i32, PartDecided> = f
            .parts
            .into_iter()
            .filter(|(p, _)| !failed.contains_key(p))
            .collect();
        if ok.is_empty() {
            return failed;
        }
        let mut writes = f.writes;
        writes.retain_partitions(|p| ok.contains_key(&p));
        let mut keys_next = f.keys_next;
        keys_next.retain(|p, _| ok.contains_key(p));
        let queues_shred = writes.family(kledger_state::Cf::Shred).next().is_some();
        let durable = Durable {
            writes,
            delivered: settled.outbox_last,
            next_offsets: next_offsets(&ok),
            keys_next,
        };
        self.state_writer.start(
            durable,
            Writing {
                parts: ok,
                queues_shred,
            },
        );
        failed
    }

    /// Waits for the state write in progress, if any (the `settle` phase), then commits its
    /// partitions' input offsets and counts their shares. Returns the partitions whose write
    /// failed: nothing of it is durable; the outbox has it, and a re-sync folds it.
    pub(super) fn await_durable(&mut self) -> anyhow::Result<BTreeMap<i32, Failure>> {
        let t = Instant::now();
        let Some((writing, result)) = self.state_writer.wait()? else {
            return Ok(BTreeMap::new());
        };
        let t = phase("settle", t);
        if let Err(e) = result {
            return Ok(all_failed(writing.parts.keys().copied(), &e));
        }
        let next = next_offsets(&writing.parts);
        let ps: Vec<i32> = next.keys().copied().collect();
        let tpl = self.tpl(&ps, Some(&next))?;
        // Asynchronous: a synchronous commit waits for the group coordinator, and with the
        // broker gone it held the loop (and its degraded report) for the whole outage. State
        // and outbox are durable; a commit that fails (reported by the consumer's context) is
        // covered by the next one, and a re-read after a crash answers `duplicate`.
        if let Err(e) = self.reader.consumer().commit(&tpl, CommitMode::Async) {
            tracing::warn!(error = %e, "committing input offsets failed");
        }
        phase("offsets", t);
        self.settled(&writing.parts);
        Ok(BTreeMap::new())
    }

    /// Counts the durable shares of a batch and clears their partitions' failure counts.
    fn settled(&mut self, parts: &BTreeMap<i32, PartDecided>) {
        let records: usize = parts.values().map(|d| d.records).sum();
        metrics::histogram!(m::BATCH_RECORDS).record(records as f64);
        for d in parts.values() {
            for (o, n) in &d.outcomes {
                metrics::counter!(m::INTENTS_TOTAL, "outcome" => o.as_str()).increment(*n);
            }
            for (code, n) in &d.deadletters {
                metrics::counter!(m::DEADLETTERS_TOTAL, "code" => *code).increment(*n);
            }
            metrics::counter!(m::INTENTS_REJECTED_FOR_SIZE_TOTAL).increment(d.too_large);
        }
        for p in parts.keys() {
            self.membership.settled(*p);
            self.health.recovered(*p);
            // Refused positions at or before what is now durable are answered for good.
            self.refused
                .retain(|(rp, o), _| *rp != *p || *o >= parts[p].next_offset);
        }
        self.update_degraded();
    }

    /// Handles the partitions of a batch that failed: refused commits are remembered (their
    /// intents are answered `rejected` when read again), a producer librdkafka gave up on is
    /// replaced, and the partitions re-sync.
    fn failed(&mut self, failed: BTreeMap<i32, Failure>) -> anyhow::Result<()> {
        if failed.is_empty() {
            return Ok(());
        }
        let mut why = String::new();
        for (p, f) in &failed {
            for (offset, reason) in &f.refused {
                tracing::warn!(partition = p, offset, reason = %reason, "the broker refused a record for good; its intent is answered rejected (record_refused)");
                self.refuse(*p, *offset, reason);
            }
            if why.is_empty() {
                why = format!("partition {p}: {}", f.reason);
            }
        }
        self.outlet.renew_if_fatal(&self.config)?;
        self.resync(&failed.keys().copied().collect(), &why)
    }

    /// Remembers that the broker refused the answer to input `p`/`offset` (once more).
    fn refuse(&mut self, p: i32, offset: i64, reason: &str) {
        metrics::counter!(m::RECORDS_REFUSED_TOTAL).increment(1);
        self.refused
            .entry((p, offset))
            .and_modify(|r| r.times += 1)
            .or_insert_with(|| RefusedAt {
                reason: reason.to_owned(),
                times: 1,
            });
    }

    /// Settles the batch in flight, if any, and waits for every state write: nothing of the
    /// processor's is in progress afterwards (a failure re-syncs its partitions).
    pub(super) fn settle(&mut self, in_flight: &mut Option<InFlight>) -> anyhow::Result<()> {
        let failed = self.await_durable()?;
        self.settle_after(in_flight, failed)
    }

    /// Waits for the state write in progress; if it failed, the batch in flight (decided on
    /// top of it) is settled without its share of those partitions, and they re-sync.
    pub(super) fn settle_durable(
        &mut self,
        in_flight: &mut Option<InFlight>,
    ) -> anyhow::Result<()> {
        let failed = self.await_durable()?;
        if failed.is_empty() {
            return Ok(());
        }
        self.settle_after(in_flight, failed)
    }

    /// Settles the batch in flight without the shares of partitions in `failed` (whose state
    /// write failed), then re-syncs every partition that failed.
    fn settle_after(
        &mut self,
        in_flight: &mut Option<InFlight>,
        mut failed: BTreeMap<i32, Failure>,
    ) -> anyhow::Result<()> {
        if let Some(mut f) = in_flight.take() {
            f.drop_partitions(&failed);
            let more = self.complete(f);
            absorb(&mut failed, more);
            let more = self.await_durable()?;
            absorb(&mut failed, more);
        }
        self.failed(failed)
    }

    /// One turn of the loop with a collected, in-order `batch`.
    pub(super) fn step(
        &mut self,
        batch: Vec<OwnedMessage>,
        in_flight: &mut Option<InFlight>,
    ) -> anyhow::Result<()> {
        if self.transactional() {
            if batch.is_empty() {
                return Ok(());
            }
            return match self.process_transactional(&batch) {
                Ok(()) => Ok(()),
                Err(BatchError::Retry(why)) => self.resync(&partitions(&batch), &why),
                Err(BatchError::Fatal(e)) => Err(e),
            };
        }
        let mut next = if batch.is_empty() {
            None
        } else {
            match self.decide_step(&batch, in_flight.as_ref().map(|f| &f.writes)) {
                Ok(d) => Some(d),
                Err(BatchError::Fatal(e)) => return Err(e),
                Err(BatchError::Retry(why)) => {
                    // The batch in flight stands on its own; settle it, then re-sync.
                    self.settle(in_flight)?;
                    return self.resync(&partitions(&batch), &why);
                }
            }
        };
        // The next batch's data keys go out now, while the batch in flight is settled.
        let keys = next
            .as_mut()
            .and_then(|(decided, _)| self.send_keys(decided));
        // The batch in flight's state write starts; it runs while the next batch is sent.
        let mut failed = match in_flight.take() {
            Some(f) => self.complete(f),
            None => BTreeMap::new(),
        };
        // Every key is written (or failed) before anything below reads the keys topic: a
        // re-sync's restore, and the tombstones' delivery that `follow_keys` checks for gaps.
        let keys_failed = self.keys_written(keys);
        if !failed.is_empty() {
            // A re-sync's restore reads state: the state write ends first.
            let more = self.await_durable()?;
            absorb(&mut failed, more);
        }
        if !failed.is_empty() {
            // The next batch was decided on top of this one: its share of the failed
            // partitions is dropped unsent (keys already written for it seal nothing: a
            // purge of their rows destroys them with the rows' other keys, by the rows' tag);
            // the rest stands on what is now durable.
            if let Some((decided, writes)) = next.as_mut() {
                decided.retain_partitions(|p| !failed.contains_key(&p));
                writes.retain_partitions(|p| !failed.contains_key(&p));
            }
            self.failed(failed)?;
        }
        // Nothing is in flight now: destroyed keys' tombstones go out.
        self.drain_shred()?;
        if let Some((decided, writes)) = next
            && !decided.parts.is_empty()
        {
            *in_flight = Some(self.launch(decided, writes, keys_failed));
        }
        Ok(())
    }

    /// One batch as one Kafka transaction: begin → send → await → send offsets → commit, then
    /// state. Transaction calls block; this runs on the processor's own thread.
    fn process_transactional(&mut self, batch: &[OwnedMessage]) -> Result<(), BatchError> {
        let (mut decided, writes) = self.decide_step(batch, None)?;
        let started = Instant::now();
        self.outlet
            .producer()
            .begin_transaction()
            .map_err(|e| BatchError::Fatal(anyhow::anyhow!("begin transaction: {e}")))?;
        // One transaction: the keys become visible with the commits they seal. They are
        // delivered first, as in the idempotent mode, so no commit is written without its
        // key even where the broker does not enforce transactions (the mock cluster shows
        // an aborted transaction's records).
        if let Some(sent) = self.send_keys(&mut decided)
            && let Err(why) = self.outlet.settle(sent).all_or_error()
        {
            return Err(self.abort(why));
        }
        let next_offsets = decided.next_offsets();
        let sent = self.send(false, &decided);
        let settled = self.outlet.settle(sent);
        if !settled.failed.is_empty() {
            // The transaction fails whole; refused commits are remembered for the retry.
            for (p, f) in &settled.failed {
                for (offset, reason) in &f.refused {
                    self.refuse(*p, *offset, reason);
                }
            }
            let why = settled.all_or_error().err().unwrap_or_default();
            return Err(self.abort(why));
        }
        let ps: Vec<i32> = next_offsets.keys().copied().collect();
        let result = self
            .tpl(&ps, Some(&next_offsets))
            .map_err(|e| e.to_string())
            .and_then(|tpl| {
                let meta = self
                    .reader
                    .consumer()
                    .group_metadata()
                    .ok_or("no group metadata")?;
                self.outlet
                    .producer()
                    .send_offsets_to_transaction(&tpl, &meta, Duration::from_secs(30))
                    .map_err(|e| e.to_string())?;
                self.outlet
                    .producer()
                    .commit_transaction(Duration::from_secs(30))
                    .map_err(|e| e.to_string())
            });
        if let Err(e) = result {
            return Err(self.abort(e));
        }
        metrics::counter!(m::TRANSACTIONS_TOTAL, "result" => "committed").increment(1);
        metrics::histogram!(m::TRANSACTION_LATENCY_SECONDS).record(started.elapsed().as_secs_f64());
        // The keys were written in the transaction: the keys position waits for a restore.
        let d = Durable {
            writes,
            delivered: settled.outbox_last,
            next_offsets,
            keys_next: BTreeMap::new(),
        };
        make_durable(self.store.as_ref(), &d).map_err(BatchError::Retry)?;
        self.settled(&decided.parts);
        Ok(())
    }

    /// Aborts the open transaction. An abort that times out (librdkafka still flushing the
    /// batch's outstanding messages) is retriable and is called again, a bounded number of times.
    fn abort(&self, why: String) -> BatchError {
        metrics::counter!(m::TRANSACTIONS_TOTAL, "result" => "aborted").increment(1);
        let mut attempt = 1;
        loop {
            match self
                .outlet
                .producer()
                .abort_transaction(Duration::from_secs(30))
            {
                Ok(()) => return BatchError::Retry(why),
                Err(KafkaError::Transaction(e))
                    if attempt < ABORT_ATTEMPTS
                        && (e.is_retriable()
                            || e.code() == RDKafkaErrorCode::OperationTimedOut) =>
                {
                    tracing::warn!(error = %e, attempt, "aborting the transaction timed out; again");
                    attempt += 1;
                }
                Err(e) => {
                    return BatchError::Fatal(anyhow::anyhow!(
                        "abort transaction after `{why}` ({attempt} attempts): {e}"
                    ));
                }
            }
        }
    }
}
