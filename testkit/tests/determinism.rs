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

/// A batch decided on several apply threads (`processor.apply_threads`, split by account) gives
/// exactly what one thread gives: the same records in the same order (receipts byte for byte;
/// commits but for their random data keys) and the same state, batch after batch.
#[test]
fn a_batch_decided_on_several_threads_gives_each_partition_what_one_thread_gives() {
    use kledger_schemas::avro::encode_single_object;
    use kledger_state::{StateStore, ledger_digest};
    use kledger_topology::kafka::codec::Codec;
    use kledger_topology::kafka::topics::Topics;
    use kledger_topology::pipeline::apply::batch::{
        ApplyPool, DecideContext, OutKind, decide_parallel, split_by_account,
    };
    use rdkafka::Timestamp;
    use rdkafka::message::OwnedMessage;

    const PARTITIONS: i32 = 6;
    let topics = Topics::new("kledger");
    let codec = Codec::single_object();
    let refused = Default::default();
    let cx = DecideContext {
        topics: &topics,
        partitions: PARTITIONS,
        codec: &codec,
        limits: kledger_processors::Limits::default(),
        record_bytes_max: kledger_processors::Limits::default().record_bytes_max,
        refused: &refused,
    };
    let mut positioner = Ledger::new(PARTITIONS);
    let messages: Vec<OwnedMessage> = stream(21, 3_000)
        .iter()
        .map(|r| {
            let m = positioner.position(r);
            OwnedMessage::new(
                Some(encode_single_object(&r.intent)),
                Some(r.intent.account_id.clone().into_bytes()),
                topics.intents.clone(),
                Timestamp::CreateTime(r.timestamp),
                m.partition,
                m.offset,
                None,
            )
        })
        .collect();
    // The records to produce, in order, with commits cut to what random keys do not change.
    type PerPartition = Vec<(i32, i64, OutKind, Vec<u8>)>;
    let run = |threads: usize| -> (PerPartition, String) {
        let store = kledger_state::MemoryStore::new();
        let pool = ApplyPool::new(threads);
        assert_eq!(pool.threads(), threads);
        let mut out: PerPartition = Vec::new();
        for batch in messages.chunks(500) {
            // Every group holds several accounts, and each account is in one group.
            let groups = split_by_account(batch, threads);
            assert_eq!(groups.len(), threads);
            let mut group_of = BTreeMap::new();
            for (g, records) in groups.iter().enumerate() {
                for m in records {
                    let key = rdkafka::message::Message::key(*m).unwrap().to_vec();
                    assert_eq!(*group_of.entry(key).or_insert(g), g);
                }
            }
            let (d, writes) =
                decide_parallel(&store, &Default::default(), batch, &pool, cx).unwrap();
            store.write(&writes).unwrap();
            assert_eq!(
                d.parts.values().map(|p| p.records).sum::<usize>(),
                batch.len()
            );
            for o in d.out {
                let (p, offset) = o.source.expect("answers an input");
                let bytes = match o.kind {
                    OutKind::Outbox => {
                        let c: Commit = kledger_schemas::avro::decode(&o.payload, &codec).unwrap();
                        c.head_hash.into_bytes()
                    }
                    _ => o.payload,
                };
                out.push((p, offset, o.kind, bytes));
            }
        }
        (out, ledger_digest(&store).unwrap())
    };
    let (one, one_digest) = run(1);
    let (three, three_digest) = run(3);
    assert!(one.len() > 3_000);
    assert_eq!(one, three);
    assert_eq!(one_digest, three_digest);
}
