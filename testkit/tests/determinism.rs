//! Determinism: the same stream gives byte-identical commits and head hashes; changing how
//! accounts interleave (as partitions consumed in another order do) changes no account's
//! commits.

use std::collections::BTreeMap;

use kledger_schemas::avro::encode_single_object;
use kledger_schemas::{Commit, IntentRecord};
use kledger_state::digest;
use kledger_testkit::{GenConfig, Generator, Ledger};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

fn stream(seed: u64, n: usize) -> Vec<IntentRecord> {
    Generator::new(GenConfig {
        seed,
        accounts: 12,
        ..GenConfig::default()
    })
    .take(n)
    .collect()
}

fn bytes(commits: &[Commit]) -> Vec<Vec<u8>> {
    commits.iter().map(encode_single_object).collect()
}

fn by_account(commits: &[Commit]) -> BTreeMap<String, Vec<Vec<u8>>> {
    let mut m: BTreeMap<String, Vec<Vec<u8>>> = BTreeMap::new();
    for c in commits {
        m.entry(c.account_id.clone())
            .or_default()
            .push(encode_single_object(c));
    }
    m
}

#[test]
fn same_stream_twice_gives_identical_commits() {
    let records = stream(11, 2_000);
    let mut a = Ledger::new(6);
    let mut b = Ledger::new(6);
    for r in &records {
        a.apply(r);
    }
    for r in &records {
        b.apply(r);
    }
    assert!(a.commits.len() > 500);
    assert_eq!(bytes(&a.commits), bytes(&b.commits));
    assert_eq!(digest(a.store()).unwrap(), digest(b.store()).unwrap());
}

#[test]
fn permuting_account_interleaving_changes_no_accounts_commits() {
    let mut positioner = Ledger::new(6);
    // Fix every record's partition and offset as the topic assigns them.
    let records: Vec<IntentRecord> = stream(12, 2_000)
        .into_iter()
        .map(|mut r| {
            let m = positioner.position(&r);
            r.partition = Some(m.partition);
            r.offset = Some(m.offset);
            r
        })
        .collect();
    let mut straight = Ledger::new(6);
    for r in &records {
        straight.apply(r);
    }
    // Interleave accounts differently, keeping each account's own order.
    let mut rng = ChaCha8Rng::seed_from_u64(99);
    let mut queues: BTreeMap<String, std::collections::VecDeque<IntentRecord>> = BTreeMap::new();
    for r in &records {
        queues
            .entry(r.intent.account_id.clone())
            .or_default()
            .push_back(r.clone());
    }
    let mut shuffled = Vec::with_capacity(records.len());
    let mut keys: Vec<String> = queues.keys().cloned().collect();
    while !keys.is_empty() {
        keys.shuffle(&mut rng);
        let k = keys[rng.random_range(0..keys.len())].clone();
        let q = queues.get_mut(&k).unwrap();
        shuffled.push(q.pop_front().unwrap());
        if q.is_empty() {
            keys.retain(|x| *x != k);
        }
    }
    assert_ne!(
        shuffled
            .iter()
            .map(|r| &r.intent.action_id)
            .collect::<Vec<_>>(),
        records
            .iter()
            .map(|r| &r.intent.action_id)
            .collect::<Vec<_>>()
    );
    let mut permuted = Ledger::new(6);
    for r in &shuffled {
        permuted.apply(r);
    }
    assert_eq!(by_account(&straight.commits), by_account(&permuted.commits));
    assert_eq!(
        digest(straight.store()).unwrap(),
        digest(permuted.store()).unwrap()
    );
}
