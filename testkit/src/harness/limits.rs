//! The record budget under adversarial load: the largest valid intent of each op kind (the
//! one-op ones commit or answer `commit_too_large`; the sixteen-op ones are records over the
//! budget, published with a raw producer, and are dead-lettered `oversize`), a whole-account
//! purge of a large account (split into bounded commits), and other accounts' intents after
//! it. Every intent must be answered as the reference ledger answers it, the processor must
//! never stop, and every commit must fit the budget.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use kledger_processors::Limits;
use kledger_schemas::{IntentRecord, Kind, Op, Outcome, PurgeOp, WriteReason};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};

use super::Row;
use crate::build::{fact, intent};
use crate::kafka::*;
use crate::largest;
use crate::ledger::Ledger;

/// What the limits check did and found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LimitsFigures {
    /// Largest-intent kinds sent (one-op and sixteen-op of each).
    pub kinds: usize,
    /// Intents answered as the reference answers them (receipts and dead letters).
    pub answered_right: usize,
    /// Intents expected to be answered.
    pub expected: usize,
    /// Answers that differ, first few.
    pub wrong: Vec<String>,
    /// Rows of the purged account.
    pub purge_rows: usize,
    /// Commits the purge took.
    pub purge_commits: usize,
    /// Seconds from the purge's publication to its receipt.
    pub purge_secs: f64,
    /// The largest outbox record, bytes.
    pub largest_commit_bytes: usize,
    /// Whether the processor was alive throughout.
    pub alive: bool,
}

impl LimitsFigures {
    /// The summary row.
    pub fn row(&self) -> Row {
        Row {
            check: "record budget (largest intents, big purge)",
            figures: format!(
                "{} largest-intent kinds; answered as the reference {} of {}; whole-account purge of {} rows in {} commits, {:.1} s; largest outbox record {} bytes (budget {}); processor {}{}",
                self.kinds,
                self.answered_right,
                self.expected,
                self.purge_rows,
                self.purge_commits,
                self.purge_secs,
                self.largest_commit_bytes,
                Limits::default().record_bytes_max,
                if self.alive {
                    "alive throughout"
                } else {
                    "STOPPED"
                },
                if self.wrong.is_empty() {
                    String::new()
                } else {
                    format!("; wrong: {}", self.wrong.join("; "))
                }
            ),
            ok: self.ok(),
        }
    }

    /// Whether every invariant held.
    pub fn ok(&self) -> bool {
        self.alive
            && self.wrong.is_empty()
            && self.answered_right == self.expected
            && self.purge_commits > 1
            && self.largest_commit_bytes <= Limits::default().record_bytes_max
    }
}

/// The answer a record must get: a receipt (outcome, code) or a dead letter (code).
#[derive(Debug, Clone, PartialEq, Eq)]
enum Answer {
    Receipt(Outcome, Option<String>),
    DeadLetter(String),
}

// Long on purpose: a harness check reads top to bottom as its steps (largest intents, purge, verdict).
/// Runs the check with the `kledger` binary at `bin`, purging an account of `purge_rows` rows.
pub fn limits(bin: &Path, seed: u64, purge_rows: usize) -> anyhow::Result<LimitsFigures> {
    const PARTITIONS: i32 = 6;
    let b = TestBroker::start();
    let dir = tempfile::tempdir()?;
    let c = config(
        &b.bootstrap,
        &dir.path().join("state"),
        PARTITIONS,
        "harness-limits",
    );
    create_topics(&b, &c);
    // The reference keys ids with the ledger's secret, as the processor does (rules v4).
    let mut reference = Ledger::with_limits(
        PARTITIONS,
        Limits {
            secret: crate::kafka::ledger_secret(&c),
            ..Limits::default()
        },
    );
    // Per (account, action): its answers in order (a generated stream retries some actions).
    let mut expect: BTreeMap<(String, String), Vec<Answer>> = BTreeMap::new();
    let want =
        |expect: &mut BTreeMap<(String, String), Vec<Answer>>, r: &IntentRecord, a: Answer| {
            expect
                .entry((r.intent.account_id.clone(), r.intent.action_id.clone()))
                .or_default()
                .push(a);
        };
    let mut oversize: Vec<IntentRecord> = Vec::new();

    // The largest intent of each op kind.
    let mut kinds = 0;
    for (k, kind) in [Kind::Fact, Kind::Document, Kind::Trigger]
        .into_iter()
        .enumerate()
    {
        let acct = largest::max_account(&format!("lim{k}"));
        for n in [1, 16] {
            let action = largest::max_action(&format!("max{k}-{n}-"));
            let r = largest::record(largest::asserts(kind, &acct, &action, n));
            kinds += 1;
            if kledger_schemas::avro::encode_single_object(&r.intent).len()
                > Limits::default().record_bytes_max
            {
                want(&mut expect, &r, Answer::DeadLetter("oversize".into()));
                oversize.push(r);
            } else {
                let d = reference.apply(&r);
                want(
                    &mut expect,
                    &r,
                    Answer::Receipt(d.outcome(), d.receipt.code.clone()),
                );
            }
        }
    }
    type Setup = fn(&mut Ledger, &str, &str, usize) -> kledger_schemas::Intent;
    let setups: [(&str, Setup); 3] = [
        ("amend", largest::setup_amend),
        ("close", largest::setup_close),
        ("attach", largest::setup_attach_evidence),
    ];
    for (i, (name, setup)) in setups.into_iter().enumerate() {
        let acct = largest::max_account(&format!("set{i}"));
        let action = largest::max_action(&format!("{name}-"));
        let last = largest::record(setup(&mut reference, &acct, &action, 1));
        let d = reference.apply(&last);
        // Its setup intents commit (the setup checks it), this one as the reference says.
        let setup_records: Vec<IntentRecord> = reference.records[..reference.records.len() - 1]
            .iter()
            .filter(|r| r.intent.account_id == acct)
            .cloned()
            .collect();
        for r in &setup_records {
            want(&mut expect, r, Answer::Receipt(Outcome::Committed, None));
        }
        want(
            &mut expect,
            &last,
            Answer::Receipt(d.outcome(), d.receipt.code.clone()),
        );
        kinds += 1;
    }
    // Phase 1: the largest intents and their setups, and the account to purge.
    const BIG: &str = "t_acme/user/u_purged";
    for i in 0..purge_rows {
        let r = IntentRecord {
            timestamp: largest::RECORD_TIME + i as i64,
            partition: None,
            offset: None,
            intent: intent(
                BIG,
                &format!("row-{i}"),
                WriteReason::DirectUserStatement,
                0,
                vec![Op::Assert(fact(&format!(
                    "Observation {i} about travel habits"
                )))],
            ),
        };
        let d = reference.apply(&r);
        want(
            &mut expect,
            &r,
            Answer::Receipt(d.outcome(), d.receipt.code.clone()),
        );
    }
    let phase1 = std::mem::take(&mut reference.records);
    publish_all(&c, &phase1);
    publish_raw(&b.bootstrap, &c, &oversize)?;
    let total =
        |e: &BTreeMap<(String, String), Vec<Answer>>| e.values().map(Vec::len).sum::<usize>();

    let mut child = spawn_processor(bin, &c, dir.path(), "limits");
    let mut alive = true;
    let answers = |c: &kledger_topology::config::Config| collect_answers(&b.bootstrap, c);
    let n = total(&expect);
    wait_for(&mut child, &mut alive, || total(&answers(&c)) >= n, 600);

    // Phase 2: the whole-account purge, then other accounts' intents behind it.
    let purge = IntentRecord {
        timestamp: largest::RECORD_TIME + purge_rows as i64 + 1,
        partition: None,
        offset: None,
        intent: intent(
            BIG,
            "erase-all",
            WriteReason::DirectUserStatement,
            purge_rows as i64,
            vec![Op::Purge(PurgeOp {
                whole_account: true,
                reason: "erasure request".into(),
                ..PurgeOp::default()
            })],
        ),
    };
    let d = reference.apply(&purge);
    let purge_commits = d.commits.len();
    want(
        &mut expect,
        &purge,
        Answer::Receipt(d.outcome(), d.receipt.code.clone()),
    );
    let others = stream(seed, 40, 2_000);
    for r in &others {
        let d = reference.apply(r);
        want(
            &mut expect,
            r,
            Answer::Receipt(d.outcome(), d.receipt.code.clone()),
        );
    }
    let started = Instant::now();
    publish_all(&c, std::slice::from_ref(&purge));
    publish_all(&c, &others);
    let purge_key = (BIG.to_owned(), "erase-all".to_owned());
    wait_for(
        &mut child,
        &mut alive,
        || answers(&c).contains_key(&purge_key),
        600,
    );
    let purge_secs = started.elapsed().as_secs_f64();
    let n = total(&expect);
    wait_for(&mut child, &mut alive, || total(&answers(&c)) >= n, 600);
    if let Ok(Some(_)) = child.try_wait() {
        alive = false;
    }
    stop(child);

    let got = answers(&c);
    let mut wrong = Vec::new();
    let mut right = 0;
    for (key, want) in &expect {
        let action = &key.1;
        let have = got.get(key).cloned().unwrap_or_default();
        for (i, w) in want.iter().enumerate() {
            if have.get(i) == Some(w) {
                right += 1;
            } else if wrong.len() < 5 {
                let short: String = action.chars().take(24).collect();
                wrong.push(format!("{short} #{i}: want {w:?}, got {:?}", have.get(i)));
            }
        }
    }
    let largest_commit_bytes = read_all(&b.bootstrap, &c.topics().outbox, PARTITIONS)
        .iter()
        .map(|r| r.payload.len())
        .max()
        .unwrap_or(0);
    Ok(LimitsFigures {
        kinds,
        answered_right: right,
        expected: total(&expect),
        wrong,
        purge_rows,
        purge_commits,
        purge_secs,
        largest_commit_bytes,
        alive,
    })
}

/// Writes `records` as they are, past the producer's usual bound (an adversary's producer).
fn publish_raw(
    bootstrap: &str,
    c: &kledger_topology::config::Config,
    records: &[IntentRecord],
) -> anyhow::Result<()> {
    let p: BaseProducer = kledger_topology::kafka::clients::client_at(bootstrap, [])
        .set("message.max.bytes", "100000000")
        .create()?;
    for r in records {
        let key = r.intent.account_id.as_bytes();
        let payload = kledger_schemas::avro::encode_single_object(&r.intent);
        let partition = kledger_processors::routing::partition_for(key, c.kafka.partitions);
        p.send(
            BaseRecord::to(&c.topics().intents)
                .key(key)
                .payload(&payload)
                .partition(partition)
                .timestamp(r.timestamp),
        )
        .map_err(|(e, _)| anyhow::anyhow!("raw send: {e}"))?;
    }
    p.flush(Duration::from_secs(60))?;
    Ok(())
}

/// The answers each (account, action) got, in topic order: receipts, and the dead letters of
/// its records.
fn collect_answers(
    bootstrap: &str,
    c: &kledger_topology::config::Config,
) -> BTreeMap<(String, String), Vec<Answer>> {
    let mut out: BTreeMap<(String, String), Vec<Answer>> = BTreeMap::new();
    for r in receipts(bootstrap, c) {
        out.entry((r.account_id, r.action_id))
            .or_default()
            .push(Answer::Receipt(r.outcome, r.code));
    }
    let codec = kledger_topology::kafka::codec::Codec::single_object();
    for d in read_all(bootstrap, &c.topics().deadletter, c.kafka.partitions) {
        let code = d
            .headers
            .get("kledger.error.code")
            .cloned()
            .unwrap_or_default();
        // A dead letter keeps the record's bytes (cut to the budget): read its action id.
        let action = kledger_schemas::avro::decode::<kledger_schemas::Intent>(&d.payload, &codec)
            .map(|i| i.action_id)
            .ok()
            .or_else(|| action_prefix(&d.payload));
        let account = String::from_utf8_lossy(d.key.as_deref().unwrap_or_default()).into_owned();
        if let Some(a) = action {
            out.entry((account, a))
                .or_default()
                .push(Answer::DeadLetter(code));
        }
    }
    out
}

/// The action id of a cut intent record: Avro writes it first (after the 10-byte header).
fn action_prefix(bytes: &[u8]) -> Option<String> {
    let mut r = kledger_schemas::avro::Reader::new(bytes.get(10..)?);
    <String as kledger_schemas::avro::AvroCodec>::decode(&mut r).ok()
}

fn wait_for(child: &mut std::process::Child, alive: &mut bool, done: impl Fn() -> bool, secs: u64) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            *alive = false;
            return;
        }
        if done() {
            return;
        }
        std::thread::sleep(Duration::from_secs(2));
    }
}
