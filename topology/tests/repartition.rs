//! `kledger repartition`: a ledger decided on 12 partitions moved to 24. Every account's chain
//! is the same commit for commit (head hashes, and the bytes but for the intent's position),
//! `replay verify` passes on the new topics, a state restored on the new layout has the old
//! one's ledger digest (and another state digest: that one keys by partition), a processor
//! started on the old topics refuses to run, and the moved ledger goes on deciding: the same
//! accounts' next intents give the head hashes an unmoved ledger gives.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use kledger_schemas::Commit;
use kledger_schemas::avro::encode_single_object;
use kledger_state::{RocksConfig, RocksStore, digest, ledger_digest};
use kledger_topology::app;
use kledger_topology::kafka::codec::Codec;
use kledger_topology::pipeline::repartition::repartition;
use kledger_topology::pipeline::{replay, stateops};

const FROM: i32 = 12;
const TO: i32 = 24;

/// Each account's commits, repeats dropped, in seq order.
fn chains(commits: Vec<(i32, Commit)>) -> BTreeMap<String, Vec<Commit>> {
    let (commits, _) = dedup_identical(&commits);
    let mut m: BTreeMap<String, Vec<Commit>> = BTreeMap::new();
    for (_, c) in commits {
        m.entry(c.account_id.clone()).or_default().push(c);
    }
    m
}

fn layout_free(c: &Commit) -> Vec<u8> {
    let mut c = c.clone();
    c.intent_partition = 0;
    c.intent_offset = 0;
    encode_single_object(&c)
}

fn state_digests(dir: &std::path::Path) -> (String, String) {
    let store = RocksStore::open(dir, &RocksConfig::default()).unwrap();
    (digest(&store).unwrap(), ledger_digest(&store).unwrap())
}

#[test]
fn a_ledger_moved_from_12_to_24_partitions_keeps_every_chain() {
    let b = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let c = config(&b.bootstrap, &dir.path().join("state"), FROM, "g-move");
    create_topics(&b, &c);
    let all = stream(41, 60, 3_300);
    let (first, more) = all.split_at(3_000);
    publish_all(&c, first);
    let running = b.rt.block_on(app::start(c.clone())).unwrap();
    wait_answered(&c, first, Duration::from_secs(180));
    b.rt.block_on(running.stop()).unwrap();
    let old_chains = chains(commits(&b.bootstrap, &c));
    let (old_digest, old_ledger) = state_digests(&c.state.dir);

    let codec = Codec::connect(&c).unwrap();
    let report = repartition(&c, &codec, TO, "moved").unwrap();
    assert_eq!(report.accounts as usize, old_chains.len());
    assert_eq!(
        report.commits as usize,
        old_chains.values().map(Vec::len).sum::<usize>()
    );
    assert_eq!(report.intents as usize, first.len());
    // A second move of the same ledger is refused.
    let again = repartition(&c, &codec, TO, "moved-again").unwrap_err();
    assert!(format!("{again:#}").contains("already moved"), "{again:#}");

    let mut n = c.clone();
    n.kafka.topic_prefix = "moved".into();
    n.kafka.partitions = TO;
    n.kafka.group_id = "g-moved".into();
    n.state.dir = dir.path().join("state-moved");
    n.views.dir = dir.path().join("views-moved");
    n.vectors.dir = dir.path().join("vectors-moved");

    // Every chain, commit for commit: same head hashes, same bytes but for the position, and
    // each commit on its account's partition of 24.
    let new_chains = chains(commits(&b.bootstrap, &n));
    assert_eq!(
        new_chains.keys().collect::<Vec<_>>(),
        old_chains.keys().collect::<Vec<_>>()
    );
    let mut moved = 0;
    for (account, old) in &old_chains {
        let new = &new_chains[account];
        assert_eq!(old.len(), new.len(), "{account}");
        for (o, m) in old.iter().zip(new) {
            assert_eq!(o.head_hash, m.head_hash, "{account} seq {}", o.commit_seq);
            assert_eq!(
                layout_free(o),
                layout_free(m),
                "{account} seq {}",
                o.commit_seq
            );
            assert_eq!(m.intent_partition, partition_of_account(account, TO));
            moved += usize::from(o.intent_partition != m.intent_partition);
        }
    }
    assert!(moved > 0, "some accounts changed partition");

    // Replay verify re-decides the new intents topic into the new outbox, byte for byte.
    let r =
        replay::verify_topics(&n, &Default::default(), &dir.path().join("scratch"), false).unwrap();
    assert!(r.difference.is_none(), "{:?}", r.difference);
    assert_eq!(r.counts.intents as usize, first.len());

    // State restored on the new layout: the same ledger.
    stateops::restore(&n, &n.state.dir, None, true, false).unwrap();
    let (new_digest, new_ledger) = state_digests(&n.state.dir);
    assert_eq!(new_ledger, old_ledger);
    assert_ne!(new_digest, old_digest, "the state digest keys by partition");

    // Readers of the old topics are told: a processor there refuses to run.
    let Err(refused) = b.rt.block_on(app::start(c.clone())) else {
        panic!("a processor started on the old topics");
    };
    assert!(format!("{refused:#}").contains("moved"), "{refused:#}");

    // The moved ledger goes on: the same accounts' next intents, decided on 24 partitions,
    // give the head hashes a ledger that never moved gives.
    publish_all(&n, more);
    let running = b.rt.block_on(app::start(n.clone())).unwrap();
    wait_answered(&n, more, Duration::from_secs(180));
    b.rt.block_on(running.stop()).unwrap();
    let (expected, _) = expected(&c, &all, FROM);
    let mut want: BTreeMap<String, (i64, String)> = BTreeMap::new();
    for e in expected {
        want.insert(e.account_id.clone(), (e.commit_seq, e.head_hash.clone()));
    }
    let got: BTreeMap<String, (i64, String)> = chains(commits(&b.bootstrap, &n))
        .into_iter()
        .map(|(a, cs)| {
            let last = cs.last().unwrap();
            (a, (last.commit_seq, last.head_hash.clone()))
        })
        .collect();
    assert_eq!(got, want);
    assert!(
        got.values().map(|(seq, _)| *seq).sum::<i64>()
            > old_chains.values().map(|c| c.len() as i64).sum::<i64>(),
        "the moved ledger committed more"
    );
}

fn partition_of_account(account: &str, partitions: i32) -> i32 {
    kledger_processors::routing::partition_for(account.as_bytes(), partitions)
}
