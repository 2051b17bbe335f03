//! A batch's life: decided, sent, delivered, made durable.
//!
//! In `idempotent` mode batches are pipelined one deep: batch N+1 is decided — against state
//! plus batch N's writes, which are not durable yet — while batch N's records are on their way
//! to the broker. Batch N is then settled (delivery awaited, state written, offsets committed)
//! before N+1 is sent. If N fails, N+1 is dropped unsent and the partitions of both re-sync.
//! In `transactional` mode a batch is one transaction and is settled before the next.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use kledger_schemas::Outcome;
use kledger_state::{Applier, Layered, StateStore, WriteSet, keys};
use rdkafka::consumer::{CommitMode, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::{Message, OwnedMessage};
use rdkafka::producer::Producer;
use rdkafka::types::RDKafkaErrorCode;

use super::super::batch::{Decided, decide_batch};
use super::super::delivery::{Sent, await_delivery, send};
use super::{BatchError, Part, Processor};
use crate::metrics as m;

/// Calls of `abort_transaction` before a failing abort stops the processor.
const ABORT_ATTEMPTS: u32 = 4;

/// A batch handed to the producer, not yet durable.
#[derive(Debug)]
pub struct InFlight {
    sent: Sent,
    writes: WriteSet,
    next_offsets: BTreeMap<i32, i64>,
    outcomes: BTreeMap<Outcome, u64>,
    deadletters: BTreeMap<&'static str, u64>,
    records: usize,
}

impl InFlight {
    fn partitions(&self) -> BTreeSet<i32> {
        self.next_offsets.keys().copied().collect()
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
        let layered = Layered::new(self.store.as_ref(), below.unwrap_or(&empty));
        let mut applier = Applier::new(&layered);
        let decided = decide_batch(
            &mut applier,
            batch,
            &self.topics,
            self.partitions,
            self.codec.as_ref(),
        )
        .map_err(|e| BatchError::Fatal(anyhow::Error::new(e).context("deciding a batch")))?;
        let writes = applier.into_writes();
        phase("decide", t);
        Ok((decided, writes))
    }

    fn launch(
        &mut self,
        decided: Decided,
        writes: WriteSet,
        records: usize,
    ) -> Result<InFlight, String> {
        let timeout = Duration::from_millis(self.config.processor.delivery_timeout_ms);
        let sent = send(
            &self.producer,
            &self.topics,
            &mut self.next_id,
            &decided,
            timeout,
        )?;
        Ok(InFlight {
            sent,
            writes,
            next_offsets: decided.next_offsets,
            outcomes: decided.outcomes,
            deadletters: decided.deadletters,
            records,
        })
    }

    /// Awaits delivery, then writes state (with the outbox and input positions) and commits
    /// the input offsets (idempotent mode; a transaction carries its offsets itself).
    fn complete(&mut self, mut f: InFlight) -> Result<(), BatchError> {
        let t = Instant::now();
        let delivered = await_delivery(&self.deliveries, &mut f.sent).map_err(BatchError::Retry)?;
        let t = phase("deliver", t);
        self.make_durable(f.writes, &delivered, &f.next_offsets)?;
        let t = phase("state", t);
        let ps: Vec<i32> = f.next_offsets.keys().copied().collect();
        let tpl = self
            .tpl(&ps, Some(&f.next_offsets))
            .map_err(BatchError::Fatal)?;
        if let Err(e) = self.consumer.commit(&tpl, CommitMode::Sync) {
            // State and outbox are durable; the next commit covers these offsets, and a
            // re-read after a crash answers `duplicate`.
            tracing::warn!(error = %e, "committing input offsets failed");
        }
        phase("offsets", t);
        self.settled(f.records, &f.outcomes, &f.deadletters, &f.next_offsets);
        Ok(())
    }

    /// Counts a durable batch and clears its partitions' failure counts.
    fn settled(
        &mut self,
        records: usize,
        outcomes: &BTreeMap<Outcome, u64>,
        deadletters: &BTreeMap<&'static str, u64>,
        next_offsets: &BTreeMap<i32, i64>,
    ) {
        metrics::histogram!(m::BATCH_RECORDS).record(records as f64);
        for (o, n) in outcomes {
            metrics::counter!(m::INTENTS_TOTAL, "outcome" => o.as_str()).increment(*n);
        }
        for (code, n) in deadletters {
            metrics::counter!(m::DEADLETTERS_TOTAL, "code" => *code).increment(*n);
        }
        for p in next_offsets.keys() {
            if self.parts.contains_key(p) {
                self.parts.insert(*p, Part::Ready { failures: 0 });
            }
        }
    }

    fn make_durable(
        &self,
        mut writes: WriteSet,
        delivered: &BTreeMap<i32, i64>,
        next_offsets: &BTreeMap<i32, i64>,
    ) -> Result<(), BatchError> {
        for (p, offset) in delivered {
            writes.put(
                kledger_state::Cf::Meta,
                keys::meta(*p, keys::META_OUTBOX_OFFSET),
                offset.to_be_bytes().to_vec(),
            );
        }
        for (p, next) in next_offsets {
            writes.put(
                kledger_state::Cf::Meta,
                keys::meta(*p, keys::META_INPUT_NEXT),
                next.to_be_bytes().to_vec(),
            );
        }
        self.store
            .write(&writes)
            .map_err(|e| BatchError::Fatal(anyhow::Error::new(e).context("writing state")))
    }

    /// Settles the batch in flight, if any (a failure re-syncs its partitions).
    pub(super) fn settle(&mut self, in_flight: &mut Option<InFlight>) -> anyhow::Result<()> {
        let Some(f) = in_flight.take() else {
            return Ok(());
        };
        let ps = f.partitions();
        match self.complete(f) {
            Ok(()) => Ok(()),
            Err(BatchError::Retry(why)) => self.resync(&ps, &why),
            Err(BatchError::Fatal(e)) => Err(e),
        }
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
        let next = if batch.is_empty() {
            None
        } else {
            match self.decide_step(&batch, in_flight.as_ref().map(|f| &f.writes)) {
                Ok(d) => Some(d),
                Err(BatchError::Fatal(e)) => return Err(e),
                Err(BatchError::Retry(why)) => return self.resync(&partitions(&batch), &why),
            }
        };
        if let Some(f) = in_flight.take() {
            let ps = f.partitions();
            match self.complete(f) {
                Ok(()) => {}
                Err(BatchError::Fatal(e)) => return Err(e),
                Err(BatchError::Retry(why)) => {
                    // The next batch was decided on top of this one: drop it unsent.
                    let mut all = ps;
                    all.extend(partitions(&batch));
                    return self.resync(&all, &why);
                }
            }
        }
        if let Some((decided, writes)) = next {
            match self.launch(decided, writes, batch.len()) {
                Ok(f) => *in_flight = Some(f),
                Err(why) => return self.resync(&partitions(&batch), &why),
            }
        }
        Ok(())
    }

    /// One batch as one Kafka transaction: begin → send → await → send offsets → commit, then
    /// state. Transaction calls block; this runs on the processor's own thread.
    fn process_transactional(&mut self, batch: &[OwnedMessage]) -> Result<(), BatchError> {
        let (decided, writes) = self.decide_step(batch, None)?;
        let started = Instant::now();
        self.producer
            .begin_transaction()
            .map_err(|e| BatchError::Fatal(anyhow::anyhow!("begin transaction: {e}")))?;
        let next_offsets = decided.next_offsets.clone();
        let timeout = Duration::from_millis(self.config.processor.delivery_timeout_ms);
        let delivered = match send(
            &self.producer,
            &self.topics,
            &mut self.next_id,
            &decided,
            timeout,
        )
        .and_then(|mut sent| await_delivery(&self.deliveries, &mut sent))
        {
            Ok(d) => d,
            Err(e) => return Err(self.abort(e)),
        };
        let ps: Vec<i32> = next_offsets.keys().copied().collect();
        let result = self
            .tpl(&ps, Some(&next_offsets))
            .map_err(|e| e.to_string())
            .and_then(|tpl| {
                let meta = self.consumer.group_metadata().ok_or("no group metadata")?;
                self.producer
                    .send_offsets_to_transaction(&tpl, &meta, Duration::from_secs(30))
                    .map_err(|e| e.to_string())?;
                self.producer
                    .commit_transaction(Duration::from_secs(30))
                    .map_err(|e| e.to_string())
            });
        if let Err(e) = result {
            return Err(self.abort(e));
        }
        metrics::counter!(m::TRANSACTIONS_TOTAL, "result" => "committed").increment(1);
        metrics::histogram!(m::TRANSACTION_LATENCY_SECONDS).record(started.elapsed().as_secs_f64());
        self.make_durable(writes, &delivered, &next_offsets)?;
        self.settled(
            batch.len(),
            &decided.outcomes,
            &decided.deadletters,
            &next_offsets,
        );
        Ok(())
    }

    /// Aborts the open transaction. An abort that times out (librdkafka still flushing the
    /// batch's outstanding messages) is retriable and is called again, a bounded number of times.
    fn abort(&self, why: String) -> BatchError {
        metrics::counter!(m::TRANSACTIONS_TOTAL, "result" => "aborted").increment(1);
        let mut attempt = 1;
        loop {
            match self.producer.abort_transaction(Duration::from_secs(30)) {
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
