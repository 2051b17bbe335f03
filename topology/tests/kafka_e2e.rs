//! The stream processor against the in-process broker: the Kafka path gives exactly the
//! commits `kledger apply` gives, answers every intent, dead-letters what it cannot decode,
//! treats replayed commits as no-ops, never commits an intent read again after a later commit,
//! and stops on a forged fork.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::*;
use kledger_processors::ids;
use kledger_processors::routing::partition_for;
use kledger_schemas::avro::encode_single_object;
use kledger_schemas::{Commit, IntentRecord};
use kledger_state::{RocksConfig, RocksStore, digest};
use kledger_topology::app;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};

const PARTITIONS: i32 = 8;

fn run_until_answered(
    b: &TestBroker,
    c: &kledger_topology::config::Config,
    records: &[IntentRecord],
) {
    let running = b.rt.block_on(app::start(c.clone())).unwrap();
    wait_answered(c, records, Duration::from_secs(180));
    b.rt.block_on(running.stop()).unwrap();
}

/// Runs until restore is done (readiness), then stops.
fn run_until_ready(b: &TestBroker, c: &kledger_topology::config::Config) {
    let running = b.rt.block_on(app::start(c.clone())).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while !running.status.ready() {
        assert!(std::time::Instant::now() < deadline, "not ready in time");
        assert!(!running.finished(), "processor stopped");
        std::thread::sleep(Duration::from_millis(50));
    }
    b.rt.block_on(running.stop()).unwrap();
}

/// `kledger replay verify` over `c`'s topics from the start, scratch state under `scratch`.
fn verify(
    c: &kledger_topology::config::Config,
    scratch: &std::path::Path,
) -> kledger_topology::pipeline::replay::Report {
    kledger_topology::pipeline::replay::verify_topics(c, &Default::default(), scratch, false)
        .unwrap()
}

fn http_get(port: u16, path: &str) -> (u16, String) {
    http_request(port, "GET", path, &[], "")
}

fn producer(bootstrap: &str) -> BaseProducer {
    kledger_topology::kafka::clients::client_at(bootstrap, [])
        .create()
        .unwrap()
}

#[test]
fn ten_thousand_intents_give_the_offline_commits_and_a_receipt_each() {
    let b = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&b.bootstrap, dir.path(), PARTITIONS, "e2e-10k");
    let port = kledger_topology::kafka::embedded::free_port().unwrap();
    c.http.listen = format!("127.0.0.1:{port}");
    create_topics(&b, &c);
    let records = stream(21, 100, 10_000);
    publish_all(&c, &records);
    let running = b.rt.block_on(app::start(c.clone())).unwrap();
    wait_answered(&c, &records, Duration::from_secs(180));
    let (ready, _) = http_get(port, "/readyz");
    let (metrics_status, metrics) = http_get(port, "/metrics");
    b.rt.block_on(running.stop()).unwrap();
    assert_eq!((ready, metrics_status), (200, 200));
    for name in [
        "kledger_intents_total{outcome=\"committed\"}",
        "kledger_intents_total{outcome=\"rejected\"}",
        "kledger_batch_records_bucket",
        "kledger_apply_latency_seconds_bucket",
        "kledger_rebalances_total{kind=\"assign\"}",
        "kledger_partitions{state=\"ready\"}",
        "kledger_rocksdb_live_data_bytes",
    ] {
        assert!(
            metrics.contains(name),
            "{name} missing from /metrics:\n{metrics}"
        );
    }
    assert!(
        !metrics.contains("account"),
        "no account ids in metric labels"
    );

    let (want, want_digest) = expected(&c, &records, PARTITIONS);
    let got = commits(&b.bootstrap, &c);
    assert_outbox_exact(&got, &want);
    let rs = receipts(&b.bootstrap, &c);
    let answered: BTreeSet<(i32, i64)> = rs
        .iter()
        .map(|r| (r.intent_partition, r.intent_offset))
        .collect();
    assert_eq!(answered.len(), records.len(), "every intent has a receipt");
    let store = RocksStore::open(dir.path(), &RocksConfig::default()).unwrap();
    assert_eq!(digest(&store).unwrap(), want_digest);

    // `kledger state checkpoint` then `state restore --checkpoint`, and `state restore
    // --from-outbox`: both give the same state.
    let spare = tempfile::tempdir().unwrap();
    store.checkpoint(&spare.path().join("cp")).unwrap();
    drop(store);
    let summary = kledger_topology::pipeline::stateops::restore(
        &c,
        &spare.path().join("from-cp"),
        Some(&spare.path().join("cp")),
        false,
        false,
    )
    .unwrap();
    assert!(summary.ends_with(&want_digest), "{summary}");
    let summary = kledger_topology::pipeline::stateops::restore(
        &c,
        &spare.path().join("from-outbox"),
        None,
        true,
        false,
    )
    .unwrap();
    assert!(summary.ends_with(&want_digest), "{summary}");
    assert!(
        kledger_topology::pipeline::stateops::restore(&c, dir.path(), None, true, false).is_err(),
        "restore refuses a directory that holds state"
    );

    // `kledger replay verify` over the same topics: every commit re-decided identically.
    let scratch = dir.path().join("replay");
    let report = verify(&c, &scratch);
    assert_eq!(report.difference, None);
    assert_eq!(report.counts.commits as usize, want.len());
    assert_eq!(report.counts.intents as usize, records.len());
    assert!(!scratch.exists(), "scratch state removed");
}

#[test]
fn misrouted_and_undecodable_records_are_dead_lettered_with_their_bytes() {
    let b = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let c = config(&b.bootstrap, dir.path(), PARTITIONS, "e2e-dead");
    create_topics(&b, &c);
    let good = stream(3, 5, 20);
    let t = c.topics();
    let p = producer(&b.bootstrap);
    let account = good[0].intent.account_id.clone();
    let right = partition_for(account.as_bytes(), PARTITIONS);
    let wrong = (right + 1) % PARTITIONS;
    let valid = encode_single_object(&good[0].intent);
    let garbage = b"\xC3\x01not an avro record".to_vec();
    // (partition, key, payload, expected dead-letter code)
    type Send<'a> = (i32, Option<&'a [u8]>, Vec<u8>, &'a str);
    let sends: Vec<Send<'_>> = vec![
        (wrong, Some(account.as_bytes()), valid.clone(), "misrouted"),
        (
            right,
            Some(account.as_bytes()),
            garbage.clone(),
            "unknown_schema",
        ),
        // A null key reads as "": on murmur2("")'s partition it is the wrong account's key.
        (
            partition_for(b"", PARTITIONS),
            None,
            valid.clone(),
            "key_mismatch",
        ),
        (
            right,
            Some(account.as_bytes()),
            b"{\"json\":1}".to_vec(),
            "bad_magic",
        ),
    ];
    // The valid stream first, so its offsets are those `kledger apply` assigns.
    publish_all(&c, &good);
    for (part, key, payload, _) in &sends {
        let mut r = BaseRecord::<[u8], [u8]>::to(&t.intents)
            .partition(*part)
            .payload(payload)
            .timestamp(1_767_225_600_000);
        if let Some(k) = key {
            r = r.key(*k);
        }
        p.send(r).map_err(|(e, _)| e).unwrap();
    }
    p.flush(Duration::from_secs(10)).unwrap();
    let running = b.rt.block_on(app::start(c.clone())).unwrap();
    wait_answered(&c, &good, Duration::from_secs(120));
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    let dead = loop {
        let dead = read_all(&b.bootstrap, &t.deadletter, PARTITIONS);
        if dead.len() >= sends.len() || std::time::Instant::now() > deadline {
            break dead;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    b.rt.block_on(running.stop()).unwrap();
    assert_eq!(dead.len(), sends.len());
    for (_, key, payload, code) in &sends {
        let d = dead
            .iter()
            .find(|d| d.headers.get("kledger.error.code").map(String::as_str) == Some(*code))
            .unwrap_or_else(|| panic!("no dead letter with code {code}: {dead:?}"));
        assert_eq!(&d.payload, payload, "{code}: original bytes kept");
        assert_eq!(d.key.as_deref(), *key, "{code}: original key kept");
        assert_eq!(d.headers["kledger.source.topic"], t.intents);
        assert!(d.headers.contains_key("kledger.source.offset"));
    }
    // The valid intents around them all committed as offline apply says.
    let (want, _) = expected(&c, &good, PARTITIONS);
    assert_outbox_exact(&commits(&b.bootstrap, &c), &want);
}

#[test]
fn replayed_commits_in_the_outbox_are_no_ops_for_restore() {
    // A stalled old owner that writes after losing its partition writes byte-identical commits
    // (decide is deterministic). Simulate it by writing every commit a second time, then
    // restore a fresh state from that outbox.
    let b = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let c = config(&b.bootstrap, dir.path(), PARTITIONS, "e2e-zombie");
    create_topics(&b, &c);
    let records = stream(4, 20, 1_500);
    publish_all(&c, &records);
    run_until_answered(&b, &c, &records);
    let (want, want_digest) = expected(&c, &records, PARTITIONS);
    let p = producer(&b.bootstrap);
    let t = c.topics();
    for commit in want.iter().step_by(3) {
        let bytes = encode_single_object(commit);
        let r = BaseRecord::<[u8], [u8]>::to(&t.outbox)
            .partition(commit.intent_partition)
            .key(commit.account_id.as_bytes())
            .payload(&bytes)
            .timestamp(commit.recorded_at);
        p.send(r).map_err(|(e, _)| e).unwrap();
    }
    p.flush(Duration::from_secs(10)).unwrap();
    // Replay verify skips the repeats as the fold does, and counts them.
    let report = verify(&c, &dir.path().join("replay"));
    assert_eq!(report.difference, None);
    assert_eq!(report.counts.commits as usize, want.len());
    assert_eq!(report.counts.repeats as usize, want.len().div_ceil(3));
    let fresh = tempfile::tempdir().unwrap();
    let c2 = config(&b.bootstrap, fresh.path(), PARTITIONS, "e2e-zombie-2");
    run_until_ready(&b, &c2);
    let mut tries = 0;
    let store = loop {
        match RocksStore::open(fresh.path(), &RocksConfig::default()) {
            Ok(s) => break s,
            Err(e) => {
                tries += 1;
                eprintln!("try {tries}: {e}");
                std::thread::sleep(Duration::from_millis(500));
                if tries > 20 {
                    panic!("never released")
                }
            }
        }
    };
    assert_eq!(
        digest(&store).unwrap(),
        want_digest,
        "duplicates folded as no-ops"
    );
}

#[test]
fn restore_over_a_forged_fork_stops_with_a_clear_error() {
    let b = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let c = config(&b.bootstrap, dir.path(), PARTITIONS, "e2e-fork");
    create_topics(&b, &c);
    let records = stream(5, 5, 200);
    publish_all(&c, &records);
    run_until_answered(&b, &c, &records);
    // Forge a commit with an existing seq but other content, hashed consistently.
    let (want, _) = expected(&c, &records, PARTITIONS);
    let victim = want.iter().find(|x| x.commit_seq == 2).unwrap();
    let mut forged: Commit = victim.clone();
    forged.action_id = "forged-action".into();
    forged.head_hash = ids::head_hash(&mut forged);
    let p = producer(&b.bootstrap);
    let bytes = encode_single_object(&forged);
    p.send(
        BaseRecord::<[u8], [u8]>::to(&c.topics().outbox)
            .partition(forged.intent_partition)
            .key(forged.account_id.as_bytes())
            .payload(&bytes),
    )
    .map_err(|(e, _)| e)
    .unwrap();
    p.flush(Duration::from_secs(10)).unwrap();
    // Replay verify names the forged record: its partition, account and seq.
    let report = verify(&c, &dir.path().join("replay"));
    let d = report
        .difference
        .expect("replay verify finds the forged commit");
    assert_eq!(
        d.kind,
        kledger_topology::pipeline::replay::DiffKind::NotProduced,
        "{d}"
    );
    assert_eq!(
        (d.partition, d.account_id.as_str(), d.commit_seq),
        (forged.intent_partition, forged.account_id.as_str(), 2),
        "{d}"
    );
    let outbox_len = want
        .iter()
        .filter(|x| x.intent_partition == forged.intent_partition)
        .count() as i64;
    assert_eq!(d.outbox_offset, Some(outbox_len), "{d}");
    let fresh = tempfile::tempdir().unwrap();
    let c2 = config(&b.bootstrap, fresh.path(), PARTITIONS, "e2e-fork");
    let running = b.rt.block_on(app::start(c2)).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !running.finished() {
        assert!(
            std::time::Instant::now() < deadline,
            "processor did not stop on the fork"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let err = b.rt.block_on(running.stop()).unwrap_err();
    let text = format!("{err:#}");
    assert!(
        text.contains("fork in account") && text.contains(&victim.account_id),
        "{text}"
    );
}

#[test]
fn an_intent_read_again_after_a_later_commit_is_not_committed_then() {
    // After a crash the processor reads intents again from the last committed input offset,
    // while the restored state may already hold commits of later intents (the outbox got them
    // before the input offsets were committed). Here: Oslo fills the home_city slot, Rome is
    // answered `replan` (slot occupied), a later intent closes Oslo. Read again, Rome must not
    // commit though its slot is now free: the ledger may not depend on where a crash fell.
    use kledger_schemas::{Op, Outcome, WriteReason};
    use kledger_testkit::build::{close, intent, plan, slotted};
    const ACCT: &str = "t_acme/user/u_reread";
    let b = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let c = config(&b.bootstrap, dir.path(), PARTITIONS, "e2e-reread");
    create_topics(&b, &c);
    let rec = |i, t: i64| IntentRecord {
        timestamp: 1_767_225_600_000 + t,
        partition: None,
        offset: None,
        intent: i,
    };
    let why = WriteReason::DirectUserStatement;
    let oslo = rec(
        intent(
            ACCT,
            "a1",
            why,
            0,
            vec![Op::Assert(slotted("home_city", "Lives in Oslo"))],
        ),
        0,
    );
    let rome = rec(
        intent(
            ACCT,
            "a2",
            why,
            1,
            vec![Op::Assert(slotted("home_city", "Lives in Rome"))],
        ),
        1,
    );
    // Ids are keyed with the ledger's secret (rules v4): the reference uses the topic's.
    let occupant = kledger_testkit::ledger::Ledger::with_limits(
        PARTITIONS,
        kledger_processors::Limits {
            secret: kledger_testkit::kafka::ledger_secret(&c),
            ..Default::default()
        },
    )
    .apply(&oslo)
    .into_commit()
    .expect("oslo commits")
    .ops[0]
        .row
        .clone();
    let mut moved = intent(ACCT, "a3", why, 1, vec![close(&occupant, "moved")]);
    plan(&mut moved, &occupant);
    let records = vec![oslo, rome, rec(moved, 2)];
    publish_all(&c, &records);
    run_until_answered(&b, &c, &records);
    // The crash: the group's input offsets go back to the start; state keeps every commit.
    let p = partition_for(ACCT.as_bytes(), PARTITIONS);
    {
        use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
        let consumer: BaseConsumer = kledger_topology::kafka::clients::client_at(&b.bootstrap, [])
            .set("group.id", &c.kafka.group_id)
            .set("enable.auto.commit", "false")
            .create()
            .unwrap();
        let mut tpl = rdkafka::TopicPartitionList::new();
        tpl.add_partition_offset(&c.topics().intents, p, rdkafka::Offset::Offset(0))
            .unwrap();
        consumer.commit(&tpl, CommitMode::Sync).unwrap();
    }
    let running = b.rt.block_on(app::start(c.clone())).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let rs = loop {
        let rs = receipts(&b.bootstrap, &c);
        if rs.len() >= 2 * records.len() {
            break rs;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "not answered again: {rs:?}"
        );
        assert!(!running.finished(), "processor stopped");
        std::thread::sleep(Duration::from_millis(200));
    };
    b.rt.block_on(running.stop()).unwrap();
    let answers = |action: &str| -> Vec<(Outcome, Option<String>)> {
        rs.iter()
            .filter(|r| r.action_id == action)
            .map(|r| (r.outcome, r.code.clone()))
            .collect()
    };
    assert_eq!(
        answers("a2"),
        vec![
            (Outcome::Replan, Some("slot_occupied".into())),
            (Outcome::Replan, Some("overtaken".into())),
        ]
    );
    assert_eq!(answers("a1")[1], (Outcome::Duplicate, None));
    assert_eq!(answers("a3")[1], (Outcome::Duplicate, None));
    let got = commits(&b.bootstrap, &c);
    let (want, _) = expected(&c, &records, PARTITIONS);
    assert_eq!(want.len(), 2);
    assert_outbox_exact(&got, &want);
}

#[test]
fn a_commit_the_producer_refuses_is_answered_rejected_and_nothing_else_waits() {
    // The original outage: a valid intent whose commit is larger than the producer accepts.
    // Here the processor's producer is held to 300,000 bytes, under the record budget, so a
    // 16-document intent (a ~780 KB commit) is refused when sent. It must be answered
    // `rejected` (`record_refused`), dead-lettered, and every other intent — of other
    // accounts in the same batches, and later ones of the same account — answered as if it
    // had never been there; the processor never stops, and replay verify passes.
    use kledger_schemas::{Op, Outcome, WriteReason};
    use kledger_testkit::build::{document, fact, intent};
    const BIG: &str = "t_acme/user/u_big";
    let b = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&b.bootstrap, dir.path(), PARTITIONS, "e2e-refused");
    c.views.enabled = false;
    c.vectors.enabled = false;
    create_topics(&b, &c);
    let mut records = stream(5, 40, 600);
    let big_ops: Vec<Op> = (0..16)
        .map(|k| Op::Assert(document(&format!("Playbook {k}"), &"é".repeat(24_000))))
        .collect();
    let at = |i| IntentRecord {
        timestamp: 1_767_225_600_000 + 5_000,
        partition: None,
        offset: None,
        intent: i,
    };
    records.insert(
        300,
        at(intent(
            BIG,
            "big",
            WriteReason::RecurringWorkflow,
            0,
            big_ops,
        )),
    );
    records.push(at(intent(
        BIG,
        "after",
        WriteReason::DirectUserStatement,
        0,
        vec![Op::Assert(fact("Prefers aisle seats"))],
    )));
    publish_all(&c, &records);
    let mut run = c.clone();
    run.kafka
        .producer_properties
        .insert("message.max.bytes".into(), "300000".into());
    let running = b.rt.block_on(app::start(run)).unwrap();
    if let Err(why) = answered(&c, &records, Duration::from_secs(180), || {
        !running.finished()
    }) {
        let stopped = b.rt.block_on(running.stop());
        panic!("{why}; the processor returned {stopped:?}");
    }
    assert!(running.status.degraded().is_none());
    b.rt.block_on(running.stop()).unwrap();

    let rs = receipts(&b.bootstrap, &c);
    let big: Vec<_> = rs.iter().filter(|r| r.action_id == "big").collect();
    assert!(!big.is_empty());
    assert!(
        big.iter()
            .all(|r| r.outcome == Outcome::Rejected && r.code.as_deref() == Some("record_refused")),
        "{big:?}"
    );
    let after = rs.iter().find(|r| r.action_id == "after").unwrap();
    assert_eq!(
        (after.outcome, after.commit_seq),
        (Outcome::Committed, Some(1)),
        "the account moved on without the refused commit"
    );
    let dead = read_all(&b.bootstrap, &c.topics().deadletter, PARTITIONS);
    assert!(
        dead.iter()
            .any(|d| d.headers.get("kledger.error.code").map(String::as_str)
                == Some("record_refused")),
        "no record_refused dead letter"
    );
    // Every other commit is what `kledger apply` gives for the stream without the refused
    // intent, each record at the position it has on the topic.
    let mut next = std::collections::BTreeMap::new();
    let without: Vec<IntentRecord> = records
        .iter()
        .cloned()
        .map(|mut r| {
            let p = partition_for(r.intent.account_id.as_bytes(), PARTITIONS);
            let o = next.entry(p).or_insert(0i64);
            (r.partition, r.offset) = (Some(p), Some(*o));
            *o += 1;
            r
        })
        .filter(|r| r.intent.action_id != "big")
        .collect();
    let (want, _) = expected(&c, &without, PARTITIONS);
    assert_outbox_exact(&commits(&b.bootstrap, &c), &want);
    let report = verify(&c, &dir.path().join("verify"));
    assert!(report.difference.is_none(), "{report:?}");
}

#[test]
fn a_purge_split_into_bounded_commits_replays_and_restores_exactly() {
    // At the smallest budget, a whole-account purge of 4,800 rows takes several commits; the
    // outbox then holds exactly what `kledger apply` gives, replay verify passes and a state
    // restored from the outbox has the same digest.
    use kledger_schemas::{Op, PurgeOp, WriteReason};
    use kledger_testkit::build::{fact, intent};
    const ACCT: &str = "t_acme/user/u_split";
    let b = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&b.bootstrap, dir.path(), PARTITIONS, "e2e-split");
    c.limits.record_bytes_max = kledger_schemas::limits::RECORD_BYTES_MIN;
    c.vectors.enabled = false;
    create_topics(&b, &c);
    let at = |t: i64, i| IntentRecord {
        timestamp: 1_767_225_600_000 + t,
        partition: None,
        offset: None,
        intent: i,
    };
    let mut records: Vec<IntentRecord> = (0..300)
        .map(|n| {
            let ops = (0..16)
                .map(|k| Op::Assert(fact(&format!("Observation {n}/{k} about the garden"))))
                .collect();
            at(
                n,
                intent(
                    ACCT,
                    &format!("rows-{n}"),
                    WriteReason::DirectUserStatement,
                    0,
                    ops,
                ),
            )
        })
        .collect();
    records.push(at(
        1_000,
        intent(
            ACCT,
            "erase",
            WriteReason::DirectUserStatement,
            300,
            vec![Op::Purge(PurgeOp {
                whole_account: true,
                reason: "erasure request".into(),
                ..PurgeOp::default()
            })],
        ),
    ));
    records.extend(stream(9, 20, 500));
    publish_all(&c, &records);
    run_until_answered(&b, &c, &records);
    let (want, want_digest) = expected_within(
        &c,
        &records,
        PARTITIONS,
        c.limits.decide(Default::default()),
    );
    let got = commits(&b.bootstrap, &c);
    assert_outbox_exact(&got, &want);
    let purge: Vec<&Commit> = got
        .iter()
        .map(|(_, c)| c)
        .filter(|c| c.account_id == ACCT && c.action_id == "erase")
        .collect();
    assert!(purge.len() >= 3, "{} purge commits", purge.len());
    assert!(purge.iter().rev().skip(1).all(|c| c.continues));
    assert!(!purge.last().unwrap().continues);
    let report = verify(&c, &dir.path().join("verify"));
    assert!(report.difference.is_none(), "{report:?}");
    let store = RocksStore::open(dir.path(), &RocksConfig::default()).unwrap();
    assert_eq!(digest(&store).unwrap(), want_digest);
    drop(store);
    kledger_topology::pipeline::stateops::restore(
        &c,
        &dir.path().join("restored"),
        None,
        true,
        false,
    )
    .unwrap();
    let restored = RocksStore::open(&dir.path().join("restored"), &RocksConfig::default()).unwrap();
    assert_eq!(digest(&restored).unwrap(), want_digest);
}
