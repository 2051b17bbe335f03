//! `kledger migrate plan|adjudicate|apply`: legacy memory rows → a deterministic, resumable
//! plan → (decisions about the rows it lists for adjudication, recorded in a log of their own)
//! → intents on the intents topic, with their receipts counted.
//!
//! The decisions are [`kledger_processors::migrate`]'s; this module handles the files and Kafka:
//! - `plan` reads the legacy file three times (latest revisions, slot claims, then the plan),
//!   so the plan does not depend on the order of the rows. An existing plan file is resumed: a
//!   partial last line (an interrupted write) is cut off, the markers of its whole lines are
//!   skipped, and the new entries are appended. The result is the file an uninterrupted run
//!   writes.
//! - `apply` publishes the `adapt` entries not already on the intents topic, in plan order,
//!   then reads the receipts topic until every planned action has its answer. It writes a
//!   completion record with the counts and the rows still blocking. Re-running it after an
//!   interruption publishes only what is missing, so every intent is on the topic once and the
//!   commits equal those of an uninterrupted run.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use kledger_processors::migrate::{Disposition, LegacyRow, PlanEntry, Planned, Survey, plan_row};
use kledger_schemas::avro::decode;
use kledger_schemas::{Intent, IntentRecord, Outcome, Receipt};
use rdkafka::message::Message;
use serde::{Deserialize, Serialize};

use crate::publish::Publisher;
use kledger_kafka::reader::{PartitionReader, SOURCE_PROBE};
use kledger_runtime::config::Config;

/// Longest legacy or plan line read; longer lines are malformed rows.
pub const LINE_BYTES_MAX: usize = 1 << 20;
/// Blocking rows listed by name in a completion record (all are counted).
pub const BLOCKING_LISTED_MAX: usize = 10_000;

pub use kledger_runtime::lines::read_line_bounded;

/// Each line of `path` as a legacy row (or why it is not one), with its 1-based number.
fn for_each_row(
    path: &Path,
    f: &mut dyn FnMut(u64, Result<LegacyRow, String>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let file = File::open(path).with_context(|| format!("open {}", path.display()))?;
    let mut r = BufReader::with_capacity(1 << 16, file);
    let mut buf = Vec::new();
    let mut n = 0u64;
    while let Some(fits) = read_line_bounded(&mut r, &mut buf, LINE_BYTES_MAX)? {
        n += 1;
        if fits && buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let row = if fits {
            serde_json::from_slice::<LegacyRow>(&buf).map_err(|e| e.to_string())
        } else {
            Err(format!("line longer than {LINE_BYTES_MAX} bytes"))
        };
        f(n, row)?;
    }
    Ok(())
}

/// What `kledger migrate plan` did.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct PlanSummary {
    /// Legacy rows (non-blank lines) read.
    pub rows: u64,
    /// Entries the plan file already had (a resumed or repeated run).
    pub already_planned: u64,
    /// Bytes of a partial last line cut off the plan file.
    pub cut_bytes: u64,
    /// Entries written by this run, by disposition and reason.
    pub written: BTreeMap<String, u64>,
    /// Entries in the plan file now, by disposition.
    pub totals: BTreeMap<String, u64>,
}

/// Loads the whole lines of an existing plan file, cutting off a partial last line.
fn resume(
    out: &Path,
    planned: &mut Planned,
    totals: &mut BTreeMap<String, u64>,
) -> anyhow::Result<u64> {
    let Ok(mut file) = OpenOptions::new().read(true).write(true).open(out) else {
        return Ok(0);
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)
        .with_context(|| format!("read {}", out.display()))?;
    let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let cut = (bytes.len() - whole) as u64;
    if cut > 0 {
        file.set_len(whole as u64)?;
        file.sync_all()?;
    }
    for (i, line) in bytes[..whole].split(|&b| b == b'\n').enumerate() {
        if line.is_empty() {
            continue;
        }
        let e: PlanEntry = serde_json::from_slice(line)
            .with_context(|| format!("{} line {}: not a plan entry", out.display(), i + 1))?;
        planned.record(&e);
        *totals.entry(e.disposition.as_str().to_owned()).or_default() += 1;
    }
    Ok(cut)
}

/// `kledger migrate plan`: plans every row of `input` into `out` (created, or resumed when
/// it exists). Blocking.
pub fn plan(input: &Path, out: &Path, progress: bool) -> anyhow::Result<PlanSummary> {
    let mut s = PlanSummary::default();
    let mut planned = Planned::default();
    s.cut_bytes = resume(out, &mut planned, &mut s.totals)?;
    let mut survey = Survey::default();
    for_each_row(input, &mut |_, r| {
        if let Ok(row) = r {
            survey.observe(&row);
        }
        Ok(())
    })?;
    for_each_row(input, &mut |_, r| {
        if let Ok(row) = r {
            survey.claim(&row);
        }
        Ok(())
    })?;
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(out)
        .with_context(|| format!("open {}", out.display()))?;
    let mut w = BufWriter::new(file);
    let bar = kledger_runtime::progress::bar(None, "legacy rows planned", progress);
    for_each_row(input, &mut |line, r| {
        s.rows += 1;
        bar.inc(1);
        let entry = match r {
            Ok(row) => plan_row(line, &row, &survey, &planned),
            Err(e) => {
                let e = PlanEntry::malformed(line, &e);
                (!planned.has(&e.marker)).then_some(e)
            }
        };
        let Some(e) = entry else {
            s.already_planned += 1;
            return Ok(());
        };
        planned.record(&e);
        serde_json::to_writer(&mut w, &e)?;
        w.write_all(b"\n")?;
        let d = e.disposition.as_str();
        *s.written.entry(format!("{d}/{}", e.reason)).or_default() += 1;
        *s.totals.entry(d.to_owned()).or_default() += 1;
        Ok(())
    })?;
    let file = w.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    bar.finish_and_clear();
    Ok(s)
}

/// What `kledger migrate adjudicate` did.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize)]
pub struct AdjudicateSummary {
    /// Rows the plan lists for adjudication.
    pub listed: u64,
    /// Decisions read.
    pub decisions: u64,
    /// Decisions recorded by this run, by entry (`adapt/adjudicated_promote`, ...).
    pub recorded: BTreeMap<String, u64>,
    /// Decisions the log already had (a resumed or repeated run).
    pub already_recorded: u64,
    /// Bytes of a partial last line cut off the log.
    pub cut_bytes: u64,
    /// Decisions refused: for a row the plan does not list for adjudication, or a second,
    /// different decision about one row (the first stands), with their lines (first 20).
    pub refused: Vec<(u64, String)>,
    /// Rows listed for adjudication without a decision yet.
    pub undecided: u64,
}

/// The decisions of `path` (JSON lines) by marker: the first decision of each row; a
/// malformed or contradicting line is refused.
fn read_decisions(
    path: &Path,
    listed: &BTreeSet<String>,
    s: &mut AdjudicateSummary,
) -> anyhow::Result<BTreeMap<String, kledger_processors::migrate::Decision>> {
    let file = File::open(path).with_context(|| format!("open {}", path.display()))?;
    let mut r = BufReader::new(file);
    let mut buf = Vec::new();
    let mut n = 0u64;
    let mut out: BTreeMap<String, kledger_processors::migrate::Decision> = BTreeMap::new();
    let refuse = |s: &mut AdjudicateSummary, n: u64, why: String| {
        if s.refused.len() < 20 {
            s.refused.push((n, why));
        }
    };
    while let Some(fits) = read_line_bounded(&mut r, &mut buf, LINE_BYTES_MAX)? {
        n += 1;
        if fits && buf.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        s.decisions += 1;
        let d: kledger_processors::migrate::Decision = match serde_json::from_slice(&buf) {
            Ok(d) if fits => d,
            Ok(_) => continue,
            Err(e) => {
                refuse(s, n, format!("not a decision: {e}"));
                continue;
            }
        };
        if d.by.trim().is_empty() || d.by.chars().count() > 256 {
            refuse(s, n, "`by` names who decided, 1..=256 chars".into());
        } else if !listed.contains(&d.marker) {
            refuse(s, n, format!("{} is not listed for adjudication", d.marker));
        } else if let Some(first) = out.get(&d.marker) {
            if first.decision != d.decision {
                refuse(s, n, format!("{} was decided already", d.marker));
            }
        } else {
            out.insert(d.marker.clone(), d);
        }
    }
    Ok(out)
}

/// `kledger migrate adjudicate`: records the `decisions` about rows `plan` lists for
/// adjudication into the log `out` (plan entries: `adapt` for a promoted row, with its intent,
/// `ignored` for a discarded one), reading the rows from the legacy file `input`. Resumable
/// like the planner: an existing log is resumed (a partial last line cut off, its markers
/// skipped). `kledger migrate apply --plan <out>` then applies the promotions. Blocking.
pub fn adjudicate(
    input: &Path,
    plan: &Path,
    decisions: &Path,
    out: &Path,
) -> anyhow::Result<AdjudicateSummary> {
    let mut s = AdjudicateSummary::default();
    let mut listed = BTreeSet::new();
    {
        let mut c = Completion::default();
        read_plan(plan, &mut c)?;
        for b in &c.blocking {
            if b.reason.starts_with("adjudicate/") {
                listed.insert(b.marker.clone());
            }
        }
    }
    s.listed = listed.len() as u64;
    let decided = read_decisions(decisions, &listed, &mut s)?;
    let mut planned = Planned::default();
    let mut totals = BTreeMap::new();
    s.cut_bytes = resume(out, &mut planned, &mut totals)?;
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(out)
        .with_context(|| format!("open {}", out.display()))?;
    let mut w = BufWriter::new(file);
    let mut seen = BTreeSet::new();
    for_each_row(input, &mut |line, r| {
        let Ok(row) = r else {
            return Ok(());
        };
        let marker = row.marker();
        let Some(d) = decided.get(&marker) else {
            return Ok(());
        };
        if !seen.insert(marker.clone()) {
            return Ok(());
        }
        if planned.has(&marker) {
            s.already_recorded += 1;
            return Ok(());
        }
        let e = kledger_processors::migrate::adjudicate(line, &row, d);
        planned.record(&e);
        serde_json::to_writer(&mut w, &e)?;
        w.write_all(b"\n")?;
        *s.recorded
            .entry(format!("{}/{}", e.disposition.as_str(), e.reason))
            .or_default() += 1;
        Ok(())
    })?;
    let file = w.into_inner().map_err(|e| e.into_error())?;
    file.sync_all()?;
    s.undecided = listed.iter().filter(|m| !decided.contains_key(*m)).count() as u64;
    Ok(s)
}

/// A row the migration leaves undone: listed for adjudication, or answered `replan` or
/// `rejected`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Blocking {
    /// The plan marker.
    pub marker: String,
    /// The owner's account.
    pub account_id: Option<String>,
    /// `adjudicate/<reason>`, `replan/<code>` or `rejected/<code>`.
    pub reason: String,
    /// Detail for humans.
    pub detail: Option<String>,
}

/// The completion record `kledger migrate apply` writes.
#[derive(Debug, Default, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Completion {
    /// Entries in the plan.
    pub plan_entries: u64,
    /// Entries by disposition.
    pub dispositions: BTreeMap<String, u64>,
    /// Planned intents already on the intents topic before this run.
    pub already_published: u64,
    /// Planned intents this run published.
    pub published: u64,
    /// Receipts of planned intents by outcome (the first receipt of each action).
    pub outcomes: BTreeMap<String, u64>,
    /// Planned intents without a receipt when the run ended.
    pub unanswered: u64,
    /// Rows left blocking: adjudication, replan and rejected.
    pub blocking_total: u64,
    /// The first [`BLOCKING_LISTED_MAX`] blocking rows, in plan order.
    pub blocking: Vec<Blocking>,
    /// Whether every planned intent was answered.
    pub complete: bool,
}

struct Adapted {
    marker: String,
    account_id: Option<String>,
    record: IntentRecord,
}

fn read_plan(plan: &Path, c: &mut Completion) -> anyhow::Result<Vec<Adapted>> {
    let file = File::open(plan).with_context(|| format!("open {}", plan.display()))?;
    let mut r = BufReader::new(file);
    let mut buf = Vec::new();
    let mut adapt = Vec::new();
    let mut n = 0;
    while let Some(fits) = read_line_bounded(&mut r, &mut buf, LINE_BYTES_MAX)? {
        n += 1;
        anyhow::ensure!(fits, "{} line {n}: too long", plan.display());
        if buf.is_empty() {
            continue;
        }
        let e: PlanEntry = serde_json::from_slice(&buf)
            .with_context(|| format!("{} line {n}: not a plan entry", plan.display()))?;
        c.plan_entries += 1;
        *c.dispositions
            .entry(e.disposition.as_str().to_owned())
            .or_default() += 1;
        match (e.disposition, e.intent) {
            (Disposition::Adapt, Some(record)) => adapt.push(Adapted {
                marker: e.marker,
                account_id: e.account_id,
                record,
            }),
            (Disposition::Adjudicate, _) => c.blocking.push(Blocking {
                marker: e.marker,
                account_id: e.account_id,
                reason: format!("adjudicate/{}", e.reason),
                detail: e.detail,
            }),
            _ => {}
        }
    }
    Ok(adapt)
}

/// Action ids among `wanted` that are already on `topic` (intents).
fn published_actions(
    config: &Config,
    partitions: i32,
    wanted: &BTreeSet<&str>,
) -> anyhow::Result<BTreeSet<String>> {
    let topic = config.topics().intents;
    let from = (0..partitions).map(|p| (p, 0)).collect();
    let mut reader = PartitionReader::source(config, &topic, "migrate", &from, SOURCE_PROBE)?;
    let lookup = kledger_kafka::codec::Codec::connect(config)?;
    let mut found = BTreeSet::new();
    while let Some(batch) = reader.next_to_end(10_000)? {
        for m in batch {
            let Some(Ok(intent)) = m.payload().map(|p| decode::<Intent>(p, &lookup)) else {
                continue;
            };
            if wanted.contains(intent.action_id.as_str()) {
                found.insert(intent.action_id);
            }
        }
    }
    Ok(found)
}

/// Reads the receipts topic (from the start, again and again) until every action of `wanted`
/// has a receipt or `timeout` passes; the first receipt of each action.
pub(crate) fn await_receipts(
    config: &Config,
    partitions: i32,
    wanted: &BTreeSet<&str>,
    timeout: Duration,
    on_answer: &dyn Fn(),
) -> anyhow::Result<BTreeMap<String, Receipt>> {
    let topic = config.topics().receipts;
    let deadline = Instant::now() + timeout;
    let lookup = kledger_kafka::codec::Codec::connect(config)?;
    let mut next: BTreeMap<i32, i64> = (0..partitions).map(|p| (p, 0)).collect();
    let mut got: BTreeMap<String, Receipt> = BTreeMap::new();
    while got.len() < wanted.len() && Instant::now() < deadline {
        let mut reader = PartitionReader::source(config, &topic, "migrate", &next, SOURCE_PROBE)?;
        while let Some(batch) = reader.next_to_end(10_000)? {
            for m in batch {
                next.insert(m.partition(), m.offset() + 1);
                let Some(Ok(r)) = m.payload().map(|p| decode::<Receipt>(p, &lookup)) else {
                    continue;
                };
                if wanted.contains(r.action_id.as_str()) && !got.contains_key(&r.action_id) {
                    got.insert(r.action_id.clone(), r);
                    on_answer();
                }
            }
        }
        if got.len() < wanted.len() {
            std::thread::sleep(Duration::from_millis(300));
        }
    }
    Ok(got)
}

/// How `kledger migrate apply` runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ApplyOptions {
    /// Show progress bars.
    pub progress: bool,
    /// How long to wait for the receipts.
    pub timeout: Duration,
    /// Publish at most this many intents per second (none: as fast as the broker takes them),
    /// so a migration leaves room for live traffic.
    pub rate: Option<f64>,
}

/// `kledger migrate apply`: publishes the plan's intents that are not on the intents topic
/// yet, waits for every planned action's receipt, and writes the completion record to
/// `report`. Blocking.
pub fn apply(
    config: &Config,
    plan: &Path,
    report: &Path,
    options: ApplyOptions,
) -> anyhow::Result<Completion> {
    let ApplyOptions {
        progress,
        timeout,
        rate,
    } = options;
    let mut c = Completion::default();
    let adapt = read_plan(plan, &mut c)?;
    let partitions = kledger_kafka::topics::check(
        &kledger_kafka::clients::client_config(config),
        &config.topics(),
    )?;
    let wanted: BTreeSet<&str> = adapt
        .iter()
        .map(|a| a.record.intent.action_id.as_str())
        .collect();
    let already = published_actions(config, partitions, &wanted)?;
    c.already_published = already.len() as u64;
    let bar = kledger_runtime::progress::bar(
        Some((adapt.len() - already.len()) as u64),
        "migration intents published",
        progress,
    );
    let mut publisher = Publisher::new(config, partitions)?;
    let start = Instant::now();
    for a in &adapt {
        if !already.contains(&a.record.intent.action_id) {
            if let Some(r) = rate.filter(|r| *r > 0.0) {
                let due = start + Duration::from_secs_f64(c.published as f64 / r);
                std::thread::sleep(due.saturating_duration_since(Instant::now()));
            }
            bar.inc(publisher.send(&a.record)?);
            c.published += 1;
        }
    }
    publisher.finish(&|| bar.inc(1))?;
    bar.finish_and_clear();
    let bar = kledger_runtime::progress::bar(Some(wanted.len() as u64), "receipts", progress);
    let receipts = await_receipts(config, partitions, &wanted, timeout, &|| bar.inc(1))?;
    bar.finish_and_clear();
    for a in &adapt {
        let Some(r) = receipts.get(&a.record.intent.action_id) else {
            c.unanswered += 1;
            continue;
        };
        *c.outcomes.entry(r.outcome.to_string()).or_default() += 1;
        if matches!(r.outcome, Outcome::Replan | Outcome::Rejected) {
            c.blocking.push(Blocking {
                marker: a.marker.clone(),
                account_id: a.account_id.clone(),
                reason: format!("{}/{}", r.outcome, r.code.as_deref().unwrap_or("-")),
                detail: r.message.clone(),
            });
        }
    }
    c.blocking_total = c.blocking.len() as u64;
    c.blocking.truncate(BLOCKING_LISTED_MAX);
    c.complete = c.unanswered == 0;
    kledger_runtime::generations::write_atomic(report, &serde_json::to_string_pretty(&c)?)
        .with_context(|| format!("write {}", report.display()))?;
    Ok(c)
}

/// The default completion record path of a plan: `<plan>.done.json`.
pub fn default_report(plan: &Path) -> std::path::PathBuf {
    let mut s = plan.as_os_str().to_owned();
    s.push(".done.json");
    s.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounded_lines_skip_what_is_too_long() {
        let text = b"short\nthis line is long\n\nlast";
        let mut r = BufReader::with_capacity(4, &text[..]);
        let mut buf = Vec::new();
        let mut got = Vec::new();
        while let Some(fits) = read_line_bounded(&mut r, &mut buf, 8).unwrap() {
            got.push((fits, String::from_utf8(buf.clone()).unwrap()));
        }
        assert_eq!(
            got,
            [
                (true, "short".into()),
                (false, String::new()),
                (true, String::new()),
                (true, "last".into())
            ]
        );
    }
}
