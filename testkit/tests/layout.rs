//! A ledger independent of the topic layout (rules v4): the same per-account streams,
//! interleaved in different orders and spread over different partition counts, give every
//! account byte-identical commits — apart from the intent's position, which a commit carries as
//! metadata outside its hash — the same head hashes, and the same answers, re-reads after a
//! crash included, and the same ledger digest (`kledger state digest --ledger`; the state
//! digest keys by partition).
//!
//! Positions are assigned as a fresh topic of each layout would (murmur2 partition, offsets
//! from 0), so every layout's offsets differ; the one rule that reads them (`overtaken`)
//! compares two intents of one account on one partition, whose offsets are in the account's own
//! order on any layout.

use std::collections::{BTreeMap, VecDeque};

use kledger_processors::RecordMeta;
use kledger_schemas::avro::encode_single_object;
use kledger_schemas::{Commit, IntentRecord};
use kledger_state::{digest, ledger_digest};
use kledger_testkit::{GenConfig, Generator, Ledger};
use proptest::prelude::*;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// One account's answers, as an agent sees them (the message is prose and names offsets).
type Answer = (String, String, Option<String>, i64, String, Vec<String>);

/// What one layout gives each account: its commits with the intent position cleared, its head
/// hashes, its answers in stream order, and its answers to a crash's re-reads.
#[derive(Debug, Default, PartialEq, Eq)]
struct PerAccount {
    commits: Vec<Vec<u8>>,
    heads: Vec<String>,
    answers: Vec<Answer>,
    reread: Vec<Answer>,
}

fn layout_free(c: &Commit) -> Vec<u8> {
    let mut c = c.clone();
    c.intent_partition = 0;
    c.intent_offset = 0;
    encode_single_object(&c)
}

fn answer(d: &kledger_processors::Decision) -> Answer {
    let r = &d.receipt;
    (
        r.action_id.clone(),
        r.outcome.as_str().to_owned(),
        r.code.clone(),
        r.head_seq,
        r.head_hash.clone(),
        r.memory_ids.clone(),
    )
}

/// Every account's stream interleaved at random (`seed`), each account's own order kept.
fn interleave(records: &[IntentRecord], seed: u64) -> Vec<IntentRecord> {
    let mut queues: BTreeMap<&str, VecDeque<&IntentRecord>> = BTreeMap::new();
    for r in records {
        queues
            .entry(r.intent.account_id.as_str())
            .or_default()
            .push_back(r);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut keys: Vec<&str> = queues.keys().copied().collect();
    let mut out = Vec::with_capacity(records.len());
    while !keys.is_empty() {
        keys.shuffle(&mut rng);
        let k = keys[rng.random_range(0..keys.len())];
        let q = queues.get_mut(k).expect("queued");
        out.push(q.pop_front().expect("non-empty").clone());
        if q.is_empty() {
            keys.retain(|x| *x != k);
        }
    }
    out
}

/// Decides `records` in this order on `partitions` partitions, then re-reads each account's
/// last `10 × reread` records at their positions, as a processor restarted after a crash that lost
/// its offset commits would.
fn run(
    records: &[IntentRecord],
    partitions: i32,
    reread: usize,
) -> (BTreeMap<String, PerAccount>, String) {
    let mut ledger = Ledger::new(partitions);
    let mut out: BTreeMap<String, PerAccount> = BTreeMap::new();
    let mut placed: BTreeMap<String, Vec<(IntentRecord, RecordMeta)>> = BTreeMap::new();
    for r in records {
        let meta = ledger.position(r);
        let before = ledger.commits.len();
        let d = ledger.apply_at(r, meta);
        let acct = out.entry(r.intent.account_id.clone()).or_default();
        for c in &ledger.commits[before..] {
            acct.commits.push(layout_free(c));
            acct.heads.push(c.head_hash.clone());
        }
        acct.answers.push(answer(&d));
        placed
            .entry(r.intent.account_id.clone())
            .or_default()
            .push((r.clone(), meta));
    }
    for (account, rs) in placed {
        let from = rs.len().saturating_sub(reread * 10);
        for (r, meta) in &rs[from..] {
            let d = ledger.apply_at(r, *meta);
            assert!(d.commits.is_empty(), "a re-read committed: {:?}", d.receipt);
            out.get_mut(&account)
                .expect("decided")
                .reread
                .push(answer(&d));
        }
    }
    let digest = ledger_digest(ledger.store()).expect("digest");
    (out, digest)
}

fn stream(seed: u64, accounts: usize, n: usize) -> Vec<IntentRecord> {
    Generator::new(GenConfig {
        seed,
        accounts,
        ..GenConfig::default()
    })
    .take(n)
    .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn an_accounts_chain_depends_on_its_own_stream_only(
        seed in 0u64..1_000,
        shuffle in 0u64..1_000,
        layouts in proptest::sample::subsequence(vec![1i32, 3, 7, 12, 24], 2..=3),
        reread in 1usize..4,
    ) {
        let records = stream(seed, 16, 400);
        let (reference, digest) = run(&records, 12, reread);
        prop_assert!(reference.values().map(|a| a.commits.len()).sum::<usize>() > 100);
        // The re-reads exercise the one rule that reads offsets.
        let overtaken = reference
            .values()
            .flat_map(|a| &a.reread)
            .filter(|a| a.2.as_deref() == Some("overtaken"))
            .count();
        prop_assert!(overtaken > 0, "no re-read was overtaken");
        for (i, partitions) in layouts.into_iter().enumerate() {
            let other = interleave(&records, shuffle + i as u64);
            let (got, got_digest) = run(&other, partitions, reread);
            prop_assert_eq!(&got_digest, &digest, "the ledger digest on {} partitions", partitions);
            prop_assert_eq!(got.keys().collect::<Vec<_>>(), reference.keys().collect::<Vec<_>>());
            for (account, want) in &reference {
                prop_assert_eq!(&got[account], want, "account {} on {} partitions", account, partitions);
            }
        }
    }
}

/// The test above would see a layout that leaks into an account's chain: positions differ
/// between these two layouts, and the commits' wire bytes with them, while the layout-free
/// bytes and head hashes agree.
#[test]
fn positions_differ_between_layouts_and_nothing_else_does() {
    let records = stream(7, 16, 400);
    let mut on_one = Ledger::new(1);
    let mut on_24 = Ledger::new(24);
    for r in &records {
        on_one.apply(r);
    }
    for r in &interleave(&records, 3) {
        on_24.apply(r);
    }
    let by_account = |l: &Ledger| {
        let mut m: BTreeMap<String, Vec<Commit>> = BTreeMap::new();
        for c in &l.commits {
            m.entry(c.account_id.clone()).or_default().push(c.clone());
        }
        m
    };
    let (a, b) = (by_account(&on_one), by_account(&on_24));
    let mut moved = 0;
    for (account, ca) in &a {
        let cb = &b[account];
        assert_eq!(ca.len(), cb.len());
        for (x, y) in ca.iter().zip(cb) {
            assert_eq!(x.head_hash, y.head_hash);
            assert_eq!(layout_free(x), layout_free(y));
            if (x.intent_partition, x.intent_offset) != (y.intent_partition, y.intent_offset) {
                moved += 1;
                assert_ne!(encode_single_object(x), encode_single_object(y));
            }
        }
    }
    assert!(
        moved > 100,
        "the layouts place intents differently ({moved})"
    );
    // The state digest keys by partition; the ledger digest does not.
    assert_ne!(
        digest(on_one.store()).unwrap(),
        digest(on_24.store()).unwrap()
    );
    assert_eq!(
        ledger_digest(on_one.store()).unwrap(),
        ledger_digest(on_24.store()).unwrap()
    );
}
