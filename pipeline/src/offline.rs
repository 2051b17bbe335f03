//! `kledger apply`: the offline mode. Reads intents in their JSON form (one `IntentRecord` per
//! line), runs them through the same decide + state code as the stream processor, and writes
//! receipts and commits as JSON lines.
//!
//! Records get the partition and offset a fresh intents topic would give them (murmur2
//! partitioner, offsets counted per partition) unless the line sets them, so the commits are
//! byte for byte those of the Kafka path. A line that sets them is held to what a topic could
//! hold: its partition must be murmur2(account) mod N and its offset must rise on its
//! partition, or the run stops with an error naming the line (deciding it would fork the
//! account). Positions are stored with the state: running again over the same state directory
//! skips records already decided, as a consumer group resumes.
//!
//! Under rules v4 the state holds rows sealed under data keys drawn at random for each new
//! row, as the processor does. The commits written out are the decision: rows with their
//! content in the clear (this is a local tool), their content's MAC, and no key id or
//! ciphertext ([`decided`]), so one input gives the same lines on every run.

use std::collections::BTreeMap;
use std::io::{BufRead, Write};

use anyhow::bail;
use kledger_processors::routing::partition_for;
use kledger_processors::{Code, Limits, RecordMeta};
use kledger_schemas::{IntentRecord, Outcome, Receipt};
use kledger_state::{Applier, StateRead, StateStore, keys, next_offset};

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

/// Where receipts and commits go. Every line is written whole by one writer per stream, so
/// output is always valid JSON lines, also when both go to one stream.
pub struct Sinks<'a> {
    /// Receipt lines.
    pub receipts: &'a mut dyn Write,
    /// Commit lines; `None`: into `receipts` (one stream, e.g. standard output for both).
    pub commits: Option<&'a mut dyn Write>,
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

/// Runs every line of `input` through decide + state over `store`, within `limits`.
pub fn apply<S: StateStore + ?Sized>(
    store: &S,
    input: &mut dyn BufRead,
    partitions: i32,
    limits: Limits,
    records_max: usize,
    mut sinks: Sinks<'_>,
) -> anyhow::Result<ApplySummary> {
    let mut summary = ApplySummary::default();
    let mut next: BTreeMap<i32, i64> = BTreeMap::new();
    let mut done: BTreeMap<i32, i64> = BTreeMap::new();
    let mut batch: Vec<Line> = Vec::with_capacity(records_max);
    let mut index: i64 = 0;
    let mut buf = Vec::new();
    // The last offset read per partition in this input (explicit offsets must rise).
    let mut seen: BTreeMap<i32, (i64, i64)> = BTreeMap::new();
    loop {
        let read = kledger_runtime::lines::read_line_bounded(input, &mut buf, LINE_BYTES_MAX)?;
        if let Some(too_long) = read.map(|fits| !fits) {
            let text = String::from_utf8_lossy(&buf);
            let line = text.trim();
            if too_long {
                batch.push(Line::Malformed(Box::new(malformed_receipt(
                    "",
                    index,
                    "line too long",
                ))));
            } else if !line.is_empty() {
                batch.push(match serde_json::from_str::<IntentRecord>(line) {
                    Ok(r) => {
                        check_position(&r, index, partitions, &mut seen)?;
                        Line::Record(Box::new(r))
                    }
                    Err(e) => {
                        Line::Malformed(Box::new(malformed_receipt(line, index, &e.to_string())))
                    }
                });
            }
            index += 1;
        }
        let end = read.is_none();
        if batch.len() >= records_max || (end && !batch.is_empty()) {
            run_batch(
                store,
                partitions,
                limits,
                &mut batch,
                &mut next,
                &mut done,
                &mut sinks,
                &mut summary,
            )?;
        }
        if end {
            break;
        }
    }
    sinks.receipts.flush()?;
    if let Some(c) = sinks.commits.as_mut() {
        c.flush()?;
    }
    Ok(summary)
}

/// Refuses a line whose explicit position no intents topic could hold: a partition other than
/// murmur2(account) mod `partitions`, or an offset that repeats or goes back on its partition.
/// Lines without a position get the next free one and always pass.
fn check_position(
    r: &IntentRecord,
    index: i64,
    partitions: i32,
    seen: &mut BTreeMap<i32, (i64, i64)>,
) -> anyhow::Result<()> {
    let want = partition_for(r.intent.account_id.as_bytes(), partitions);
    if let Some(p) = r.partition
        && p != want
    {
        bail!(
            "line {}: partition {p} is not the account's partition ({want} = murmur2(account) mod {partitions}); refusing it, deciding it there would fork the account",
            index + 1
        );
    }
    if let Some(o) = r.offset {
        if o < 0 {
            bail!("line {}: offset {o} is negative", index + 1);
        }
        if let Some((last, line)) = seen.get(&want)
            && o <= *last
        {
            bail!(
                "line {}: offset {o} on partition {want} does not follow offset {last} of line {line}; offsets must rise on a partition",
                index + 1
            );
        }
        seen.insert(want, (o, index + 1));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)] // one call site; the arguments are the run's state
fn run_batch<S: StateStore + ?Sized>(
    store: &S,
    partitions: i32,
    limits: Limits,
    batch: &mut Vec<Line>,
    next: &mut BTreeMap<i32, i64>,
    done: &mut BTreeMap<i32, i64>,
    sinks: &mut Sinks<'_>,
    summary: &mut ApplySummary,
) -> anyhow::Result<()> {
    let mut applier = Applier::new(store, limits);
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
        // `check_position` holds an explicit partition to the account's own.
        let partition = partition_for(r.intent.account_id.as_bytes(), partitions);
        let counter = next.entry(partition).or_insert(0);
        let offset = r.offset.unwrap_or(*counter).max(*counter);
        *counter = offset + 1;
        let meta = RecordMeta {
            timestamp: r.timestamp,
            partition,
            offset,
        };
        let decided_up_to = match done.get(&partition) {
            Some(v) => *v,
            None => {
                let v = next_offset(store, partition, keys::META_INPUT_NEXT)?;
                done.insert(partition, v);
                v
            }
        };
        if offset < decided_up_to {
            summary.skipped += 1;
            continue;
        }
        let decision = applier.apply_owned(r.intent, &meta)?;
        applier.raise_next(partition, keys::META_INPUT_NEXT, offset + 1)?;
        *summary
            .outcomes
            .entry(decision.receipt.outcome)
            .or_insert(0) += 1;
        summary.commits += decision.commits.len() as u64;
        out_commits.extend(decision.commits.into_iter().map(decided));
        out_receipts.push(decision.receipt);
    }
    store.write(&applier.into_writes())?;
    let commits: &mut dyn Write = match sinks.commits.as_mut() {
        Some(c) => &mut **c,
        None => &mut *sinks.receipts,
    };
    for c in &out_commits {
        write_line(commits, c)?;
    }
    for r in &out_receipts {
        write_line(sinks.receipts, r)?;
    }
    Ok(())
}

/// A commit as the decision made it: its rows' sealing left out (their data keys are random),
/// their content in the clear and its MAC kept.
pub fn decided(mut c: kledger_schemas::Commit) -> kledger_schemas::Commit {
    for op in &mut c.ops {
        if let Some(s) = &mut op.row.sealed {
            s.key_id.clear();
            s.ciphertext = Default::default();
        }
    }
    c
}

/// Writes `value` as one JSON line in one write, so a line never interleaves with another.
fn write_line<T: serde::Serialize>(out: &mut dyn Write, value: &T) -> anyhow::Result<()> {
    let mut line = serde_json::to_vec(value)?;
    line.push(b'\n');
    out.write_all(&line)?;
    Ok(())
}

/// The next input offset of `partition` whose effects the store does not hold yet (for tests
/// and status output).
pub fn input_position<S: StateRead + ?Sized>(store: &S, partition: i32) -> anyhow::Result<i64> {
    Ok(next_offset(store, partition, keys::META_INPUT_NEXT)?)
}
