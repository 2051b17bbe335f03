//! Bad input: the corpus ([`crate::badinput`]) interleaved with a valid stream, through
//! `kledger run`; every record must be answered — a dead letter with its code and original
//! bytes, or a receipt with its outcome and code — with no panic, and every valid intent
//! answered as an uninterrupted offline run answers it.

use std::collections::BTreeMap;
use std::io::{BufReader, Cursor};
use std::path::Path;
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use kledger_processors::routing::partition_for;
use kledger_schemas::Receipt;
use kledger_schemas::avro::encode_single_object;
use kledger_topology::kafka::clients::{DeliveryContext, producer_config, send_waiting};
use rdkafka::producer::{BaseRecord, Producer};

use super::Row;
use crate::badinput::{Case, Expect, corpus};
use crate::kafka::*;

/// What the bad-input check did and found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BadFigures {
    /// Distinct kinds of bad input.
    pub kinds: usize,
    /// Bad records sent.
    pub sent: usize,
    /// Bad records answered as expected.
    pub right: usize,
    /// Bad records answered otherwise or not at all: (name, what happened).
    pub wrong: Vec<(String, String)>,
    /// Valid intents around them.
    pub valid: usize,
    /// Valid intents answered as the offline run answers them.
    pub valid_right: usize,
    /// Panics in the processor's log, or a processor that died.
    pub panics: usize,
}

impl BadFigures {
    /// The summary row.
    pub fn row(&self) -> Row {
        let mut wrong: Vec<String> = self
            .wrong
            .iter()
            .take(5)
            .map(|(n, w)| format!("{n}: {w}"))
            .collect();
        if self.wrong.len() > 5 {
            wrong.push(format!("… {} more", self.wrong.len() - 5));
        }
        Row {
            check: "bad input",
            figures: format!(
                "{} kinds, {} records: {} answered with their code, {} wrong{}; {} valid intents around them, {} answered as offline; panics {}",
                self.kinds,
                self.sent,
                self.right,
                self.wrong.len(),
                if wrong.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", wrong.join("; "))
                },
                self.valid,
                self.valid_right,
                self.panics
            ),
            ok: self.ok(),
        }
    }

    /// Whether every invariant held.
    pub fn ok(&self) -> bool {
        self.wrong.is_empty()
            && self.right == self.sent
            && self.valid_right == self.valid
            && self.panics == 0
    }
}

/// Partitions of the bad-input check's topics.
pub const PARTITIONS: i32 = 4;

enum Item {
    Valid(usize),
    Before,
    Case(usize),
}

/// One record to send: what it is, key, value, partition, timestamp.
type Send = (Item, Option<Vec<u8>>, Option<Vec<u8>>, i32, i64);

// Long on purpose: a harness check reads top to bottom as its steps (corpus, stream, answers, verdict).
/// Runs the corpus through `kledger run` (the binary at `bin`).
pub fn bad_input(bin: &Path, seed: u64, valid_intents: usize) -> anyhow::Result<BadFigures> {
    let b = TestBroker::start();
    let dir = tempfile::tempdir()?;
    let c = config(
        &b.bootstrap,
        &dir.path().join("state"),
        PARTITIONS,
        "harness-bad",
    );
    create_topics(&b, &c);
    let valid = stream(seed + 1, 50, valid_intents);
    let cases = corpus(PARTITIONS);
    // (item, key, payload, partition, timestamp), in send order.
    let mut sends: Vec<Send> = Vec::new();
    let valid_send = |i: usize| {
        let r = &valid[i];
        let key = r.intent.account_id.clone().into_bytes();
        let p = partition_for(&key, PARTITIONS);
        (
            Item::Valid(i),
            Some(key),
            Some(encode_single_object(&r.intent)),
            p,
            r.timestamp,
        )
    };
    let half = valid.len() / 2;
    for i in 0..half {
        sends.push(valid_send(i));
    }
    for (i, case) in cases.iter().enumerate() {
        if let Some((k, v)) = &case.before {
            let p = partition_for(k, PARTITIONS);
            sends.push((
                Item::Before,
                Some(k.clone()),
                Some(v.clone()),
                p,
                case.timestamp,
            ));
        }
        let p = case
            .partition
            .unwrap_or_else(|| partition_for(case.key.as_deref().unwrap_or_default(), PARTITIONS));
        sends.push((
            Item::Case(i),
            case.key.clone(),
            case.payload.clone(),
            p,
            case.timestamp,
        ));
    }
    for i in half..valid.len() {
        sends.push(valid_send(i));
    }
    // Send everything in order with delivery reports: each record's position.
    let (tx, rx) = channel();
    let producer: kledger_topology::kafka::clients::PolledProducer<DeliveryContext> =
        producer_config(&c, None)
            .set("message.max.bytes", "4000000")
            .create_with_context(DeliveryContext::new(tx))?;
    let topic = c.topics().intents;
    for (id, (_, key, payload, p, ts)) in sends.iter().enumerate() {
        let mut r = BaseRecord::with_opaque_to(&topic, Box::new(id as u64))
            .partition(*p)
            .timestamp(*ts);
        if let Some(k) = key {
            r = r.key(k.as_slice());
        }
        if let Some(v) = payload {
            r = r.payload(v.as_slice());
        }
        send_waiting(&producer, r, Instant::now() + Duration::from_secs(60))
            .map_err(|(e, _)| anyhow::Error::msg(e))?;
    }
    producer.flush(Duration::from_secs(60))?;
    let mut position: BTreeMap<usize, (i32, i64)> = BTreeMap::new();
    while let Ok(d) = rx.try_recv() {
        let (p, o) = d.result.map_err(|(e, _)| anyhow::Error::msg(e))?;
        position.insert(d.id as usize, (p, o));
    }
    anyhow::ensure!(
        position.len() == sends.len(),
        "not every record was delivered"
    );

    let port = kledger_topology::kafka::embedded::free_port()?;
    let env = [("KLEDGER_VECTORS__ENABLED", "false")];
    let mut child = spawn_kledger(bin, &c, port, dir.path(), "bad", &env);
    wait_ready(&mut child, port, dir.path(), "bad");
    // Every record answered: a receipt at its position, or a dead letter naming it.
    let deadline = Instant::now() + Duration::from_secs(300);
    let (rs, dead) = loop {
        let rs: BTreeMap<(i32, i64), Receipt> = receipts(&b.bootstrap, &c)
            .into_iter()
            .map(|r| ((r.intent_partition, r.intent_offset), r))
            .collect();
        let dead: BTreeMap<(i32, i64), Rec> =
            read_all(&b.bootstrap, &c.topics().deadletter, PARTITIONS)
                .into_iter()
                .filter_map(|d| {
                    let p = d.headers.get("kledger.source.partition")?.parse().ok()?;
                    let o = d.headers.get("kledger.source.offset")?.parse().ok()?;
                    Some(((p, o), d))
                })
                .collect();
        let done = position
            .values()
            .all(|pos| rs.contains_key(pos) || dead.contains_key(pos));
        if done || Instant::now() > deadline || child.try_wait()?.is_some() {
            break (rs, dead);
        }
        std::thread::sleep(Duration::from_millis(300));
    };
    let died = child.try_wait()?.is_some();
    stop(child);
    let log = std::fs::read_to_string(dir.path().join("bad.log")).unwrap_or_default();
    let panics = log.matches("panicked").count() + usize::from(died);

    // The offline answers of the valid stream alone (bad inputs touch other accounts, or are
    // rejected and change nothing).
    let mut offline_receipts = Vec::new();
    kledger_topology::pipeline::offline::apply(
        &kledger_state::MemoryStore::new(),
        &mut BufReader::new(Cursor::new(jsonl(&valid))),
        PARTITIONS,
        // Ids keyed as the processor keys them (rules v4).
        kledger_processors::Limits {
            secret: crate::kafka::ledger_secret(&c),
            ..Default::default()
        },
        kledger_topology::config::BulkConfig::default().records_max,
        kledger_topology::pipeline::offline::Sinks {
            receipts: &mut offline_receipts,
            commits: Some(&mut Vec::new()),
        },
    )?;
    let offline: Vec<Receipt> = String::from_utf8(offline_receipts)?
        .lines()
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()?;

    let mut f = BadFigures {
        kinds: cases
            .iter()
            .map(|c| c.name)
            .collect::<std::collections::BTreeSet<_>>()
            .len(),
        sent: cases.len(),
        valid: valid.len(),
        panics,
        ..BadFigures::default()
    };
    if panics > 0 {
        let tail: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("ERROR") || l.contains("panicked") || l.contains("Error"))
            .take(3)
            .collect();
        f.wrong.push((
            "processor".into(),
            format!("stopped or panicked: {}", tail.join(" / ")),
        ));
    }
    for (id, (item, ..)) in sends.iter().enumerate() {
        let pos = position[&id];
        match item {
            Item::Valid(i) => {
                let want = &offline[*i];
                if rs
                    .get(&pos)
                    .is_some_and(|r| r.outcome == want.outcome && r.code == want.code)
                {
                    f.valid_right += 1;
                }
            }
            Item::Before => {}
            Item::Case(i) => match judge(&cases[*i], rs.get(&pos), dead.get(&pos)) {
                Ok(()) => f.right += 1,
                Err(why) => f.wrong.push((cases[*i].name.to_owned(), why)),
            },
        }
    }
    Ok(f)
}

fn judge(case: &Case, receipt: Option<&Receipt>, dead: Option<&Rec>) -> Result<(), String> {
    match (&case.expect, receipt, dead) {
        (Expect::DeadLetter(code), _, Some(d)) => {
            let got = d.headers.get("kledger.error.code").map(String::as_str);
            if got != Some(*code) {
                return Err(format!("dead letter {got:?}, expected {code}"));
            }
            let original = case.payload.clone().unwrap_or_default();
            let kept = if d
                .headers
                .get("kledger.payload.truncated")
                .map(String::as_str)
                == Some("true")
            {
                let size = d
                    .headers
                    .get("kledger.payload.bytes")
                    .cloned()
                    .unwrap_or_default();
                if size != original.len().to_string() {
                    return Err(format!("truncated dead letter says {size} bytes"));
                }
                &original[..d.payload.len().min(original.len())]
            } else {
                &original[..]
            };
            if d.payload != kept {
                return Err("dead letter without the original bytes".into());
            }
            Ok(())
        }
        (Expect::Receipt(outcome, code), Some(r), _) => {
            if r.outcome == *outcome && r.code.as_deref() == Some(*code) {
                Ok(())
            } else {
                Err(format!(
                    "receipt {:?} {:?}, expected {outcome:?} {code}",
                    r.outcome, r.code
                ))
            }
        }
        (_, Some(r), None) => Err(format!("receipt {:?} {:?} instead", r.outcome, r.code)),
        (_, None, Some(d)) => Err(format!(
            "dead letter {:?} instead",
            d.headers.get("kledger.error.code")
        )),
        (_, None, None) => Err("no answer".into()),
    }
}
