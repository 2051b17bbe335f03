//! `kledger apply`: the offline mode. Reads intents in their JSON form (one `IntentRecord` per
//! line), runs them through the same decide + state code as the stream processor, and writes
//! receipts and commits as JSON lines.
//!
//! Records get the partition and offset a fresh intents topic would give them (murmur2
//! partitioner, offsets counted per partition) unless the line sets them, so the commits are
//! byte for byte those of the Kafka path. Positions are stored with the state: running again
//! over the same state directory skips records already decided, as a consumer group resumes.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};

use kledger_processors::routing::partition_for;
use kledger_processors::{Code, RecordMeta, decide_owned};
use kledger_schemas::{IntentRecord, Outcome, Receipt};
use kledger_state::{Applier, StateRead, StateStore, keys, position};

/// Records decided per state batch.
pub const BATCH_RECORDS_MAX: usize = 1_000;
/// Longest input line accepted (bytes); longer lines are rejected as malformed.
pub const LINE_BYTES_MAX: usize = 2 << 20;

/// What a run did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ApplySummary {
    /// Receipts by outcome.
    pub outcomes: BTreeMap<Outcome, u64>,
    /// Lines that were not an intent record (answered `rejected`, `malformed_json`).
    pub malformed: u64,
    /// Records skipped because the state already decided them.
    pub skipped: u64,
    /// Commits written.
    pub commits: u64,
}

/// Where receipts and commits go.
pub struct Sinks<'a> {
    /// Receipt lines.
    pub receipts: &'a mut dyn Write,
    /// Commit lines.
    pub commits: &'a mut dyn Write,
}

impl std::fmt::Debug for Sinks<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sinks")
    }
}

/// A receipt for a line that is not an intent record. Its position is partition −1 and the
/// line's index, since it never reaches a topic (`kledger publish` refuses it).
pub fn malformed_receipt(line: &str, index: i64, error: &str) -> Receipt {
    let v: Option<serde_json::Value> = serde_json::from_str(line).ok();
    let field = |name: &str| {
        v.as_ref()
            .and_then(|v| v.get("intent").unwrap_or(v).get(name))
            .and_then(|x| x.as_str())
            .unwrap_or_default()
            .chars()
            .take(256)
            .collect::<String>()
    };
    let meta = RecordMeta {
        timestamp: 0,
        partition: -1,
        offset: index,
    };
    let mut r = kledger_processors::decide::receipt(
        &field("action_id"),
        &field("account_id"),
        &Default::default(),
        &meta,
        Outcome::Rejected,
        Some(kledger_processors::Reason::new(
            Code::MalformedJson,
            error.chars().take(500).collect::<String>(),
        )),
    );
    r.head_seq = 0;
    r
}

enum Line {
    Record(Box<IntentRecord>),
    Malformed(Box<Receipt>),
}

/// Runs every line of `input` through decide + state over `store`.
pub fn apply<S: StateStore + ?Sized>(
    store: &S,
    input: &mut dyn BufRead,
    partitions: i32,
    mut sinks: Sinks<'_>,
) -> anyhow::Result<ApplySummary> {
    let mut summary = ApplySummary::default();
    let mut next: BTreeMap<i32, i64> = BTreeMap::new();
    let mut done: BTreeMap<i32, Option<i64>> = BTreeMap::new();
    let mut batch: Vec<Line> = Vec::with_capacity(BATCH_RECORDS_MAX);
    let mut index: i64 = 0;
    let mut buf = String::new();
    loop {
        buf.clear();
        let n = input.read_line(&mut buf)?;
        if n > 0 {
            let line = buf.trim();
            if !line.is_empty() {
                batch.push(if line.len() > LINE_BYTES_MAX {
                    Line::Malformed(Box::new(malformed_receipt("", index, "line too long")))
                } else {
                    match serde_json::from_str::<IntentRecord>(line) {
                        Ok(r) => Line::Record(Box::new(r)),
                        Err(e) => Line::Malformed(Box::new(malformed_receipt(
                            line,
                            index,
                            &e.to_string(),
                        ))),
                    }
                });
            }
            index += 1;
        }
        if batch.len() >= BATCH_RECORDS_MAX || (n == 0 && !batch.is_empty()) {
            run_batch(
                store,
                partitions,
                &mut batch,
                &mut next,
                &mut done,
                &mut sinks,
                &mut summary,
            )?;
        }
        if n == 0 {
            break;
        }
    }
    sinks.receipts.flush()?;
    sinks.commits.flush()?;
    Ok(summary)
}

fn run_batch<S: StateStore + ?Sized>(
    store: &S,
    partitions: i32,
    batch: &mut Vec<Line>,
    next: &mut BTreeMap<i32, i64>,
    done: &mut BTreeMap<i32, Option<i64>>,
    sinks: &mut Sinks<'_>,
    summary: &mut ApplySummary,
) -> anyhow::Result<()> {
    let mut applier = Applier::new(store);
    let mut out_receipts = Vec::new();
    let mut out_commits = Vec::new();
    for line in batch.drain(..) {
        let r = match line {
            Line::Malformed(receipt) => {
                summary.malformed += 1;
                out_receipts.push(*receipt);
                continue;
            }
            Line::Record(r) => r,
        };
        let partition = r
            .partition
            .unwrap_or_else(|| partition_for(r.intent.account_id.as_bytes(), partitions));
        let counter = next.entry(partition).or_insert(0);
        let offset = r.offset.unwrap_or(*counter);
        *counter = offset + 1;
        let meta = RecordMeta {
            timestamp: r.timestamp,
            partition,
            offset,
        };
        let last = match done.get(&partition) {
            Some(v) => *v,
            None => {
                let v = position(store, partition, keys::META_INPUT_OFFSET)?;
                done.insert(partition, v);
                v
            }
        };
        if last.is_some_and(|l| offset <= l) {
            summary.skipped += 1;
            continue;
        }
        let intent = r.intent;
        let decision = if (0..partitions).contains(&partition) {
            applier.apply_owned(intent, &meta)?
        } else {
            // A position outside the topic: answer without touching state.
            decide_owned(&Default::default(), intent, &meta)
        };
        applier.set_position(partition, keys::META_INPUT_OFFSET, offset);
        *summary
            .outcomes
            .entry(decision.receipt.outcome)
            .or_insert(0) += 1;
        if let Some(c) = decision.commit {
            summary.commits += 1;
            out_commits.push(c);
        }
        out_receipts.push(decision.receipt);
    }
    store.write(&applier.into_writes())?;
    for c in &out_commits {
        serde_json::to_writer(&mut *sinks.commits, c)?;
        sinks.commits.write_all(b"\n")?;
    }
    for r in &out_receipts {
        serde_json::to_writer(&mut *sinks.receipts, r)?;
        sinks.receipts.write_all(b"\n")?;
    }
    Ok(())
}

/// Reads a position the store keeps (for tests and status output).
pub fn input_position<S: StateRead + ?Sized>(
    store: &S,
    partition: i32,
) -> anyhow::Result<Option<i64>> {
    Ok(position(store, partition, keys::META_INPUT_OFFSET)?)
}
