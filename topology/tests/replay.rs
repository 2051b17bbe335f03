//! `kledger replay verify`'s comparison, over in-memory partitions produced by the processor's
//! own batch code: it passes on the live outbox, and reports the right partition, offset,
//! account and fields when one outbox record is altered, one intent is dropped, a commit is
//! missing or extra. Identical repeats (an old owner's writes) are skipped. The Kafka path is
//! exercised in `kafka_e2e.rs`.

mod common;

use std::collections::BTreeMap;

use kledger_processors::Limits;
use kledger_processors::routing::partition_for;
use kledger_schemas::avro::{KnownSchemas, decode, encode_single_object};
use kledger_schemas::{Commit, IntentRecord};
use kledger_state::{Applier, MemoryStore, StateStore};
use kledger_topology::kafka::codec::Codec;
use kledger_topology::kafka::topics::Topics;
use kledger_topology::pipeline::apply::batch::{OutKind, decide_batch};
use kledger_topology::pipeline::replay::{self, DiffKind, Report, Sources};
use rdkafka::Timestamp;
use rdkafka::message::{Message, OwnedMessage};

const PARTITIONS: i32 = 4;

/// Per partition: the intents topic as records and the outbox the processor writes for it.
struct Fixture {
    intents: BTreeMap<i32, Vec<OwnedMessage>>,
    outbox: BTreeMap<i32, Vec<OwnedMessage>>,
    /// The data keys the processor wrote before the commits (rules v4).
    keys: BTreeMap<i32, Vec<OwnedMessage>>,
}

type Topic = BTreeMap<i32, Vec<OwnedMessage>>;

fn intents_topic(records: &[IntentRecord]) -> BTreeMap<i32, Vec<OwnedMessage>> {
    let mut by_p: BTreeMap<i32, Vec<OwnedMessage>> = BTreeMap::new();
    for r in records {
        let key = r.intent.account_id.as_bytes().to_vec();
        let p = partition_for(&key, PARTITIONS);
        let part = by_p.entry(p).or_default();
        let offset = part.len() as i64;
        part.push(OwnedMessage::new(
            Some(encode_single_object(&r.intent)),
            Some(key),
            "kledger.intents.v1".into(),
            Timestamp::CreateTime(r.timestamp),
            p,
            offset,
            None,
        ));
    }
    by_p
}

/// Renumbers offsets from 0 (a topic that never held the removed records).
fn renumber(records: Vec<OwnedMessage>) -> Vec<OwnedMessage> {
    records
        .into_iter()
        .enumerate()
        .map(|(i, m)| {
            OwnedMessage::new(
                m.payload().map(<[u8]>::to_vec),
                m.key().map(<[u8]>::to_vec),
                m.topic().to_owned(),
                m.timestamp(),
                m.partition(),
                i as i64,
                None,
            )
        })
        .collect()
}

/// The outbox and keys topic the processor writes for `intents`.
fn live_outbox(intents: &Topic) -> (Topic, Topic) {
    let store = MemoryStore::new();
    let topics = Topics::new("kledger");
    let lookup = Codec::single_object();
    let mut out: Topic = BTreeMap::new();
    let mut keys: Topic = BTreeMap::new();
    for (&p, records) in intents {
        // Batches of another size than replay's: decisions must not depend on batching.
        for chunk in records.chunks(333) {
            let mut applier = Applier::new(&store, Limits::default());
            let d = decide_batch(
                &mut applier,
                chunk,
                &topics,
                PARTITIONS,
                &lookup,
                Limits::default().record_bytes_max,
                &Default::default(),
            )
            .unwrap();
            store.write(&applier.into_writes()).unwrap();
            let part = keys.entry(p).or_default();
            for o in d.keys {
                let offset = part.len() as i64;
                part.push(OwnedMessage::new(
                    Some(o.payload),
                    o.key,
                    "kledger.keys.v1".into(),
                    Timestamp::CreateTime(0),
                    p,
                    offset,
                    None,
                ));
            }
            let part = out.entry(p).or_default();
            for o in d.out.into_iter().filter(|o| o.kind == OutKind::Outbox) {
                let offset = part.len() as i64;
                part.push(OwnedMessage::new(
                    Some(o.payload),
                    o.key,
                    "kledger.outbox.v1".into(),
                    Timestamp::CreateTime(o.timestamp.unwrap_or(0)),
                    p,
                    offset,
                    None,
                ));
            }
        }
    }
    (out, keys)
}

fn fixture() -> Fixture {
    let records = common::stream(77, 40, 3_000);
    let intents = intents_topic(&records);
    let (outbox, keys) = live_outbox(&intents);
    Fixture {
        intents,
        outbox,
        keys,
    }
}

fn run(f: &Fixture, from: &BTreeMap<i32, i64>) -> Report {
    let store = MemoryStore::new();
    let lookup = Codec::single_object();
    let open = |p: i32| -> anyhow::Result<Sources> {
        Ok((
            Box::new(f.intents.get(&p).cloned().unwrap_or_default().into_iter()),
            Box::new(f.outbox.get(&p).cloned().unwrap_or_default().into_iter()),
            Box::new(f.keys.get(&p).cloned().unwrap_or_default().into_iter()),
        ))
    };
    replay::verify(
        &store,
        &Topics::new("kledger"),
        PARTITIONS,
        from,
        &open,
        &lookup,
        Limits::default(),
        &Default::default(),
        kledger_topology::config::BulkConfig::default().records_max,
        &|_| {},
    )
    .unwrap()
}

fn commit_at(f: &Fixture, p: i32, offset: usize) -> Commit {
    decode(
        f.outbox[&p][offset].payload().unwrap(),
        &KnownSchemas::released(),
    )
    .unwrap()
}

#[test]
fn the_live_outbox_verifies() {
    let f = fixture();
    let r = run(&f, &BTreeMap::new());
    assert_eq!(r.difference, None);
    let commits: usize = f.outbox.values().map(Vec::len).sum();
    let intents: usize = f.intents.values().map(Vec::len).sum();
    assert!(commits > 1_000, "fixture has commits: {commits}");
    assert_eq!(r.counts.commits as usize, commits);
    assert_eq!(r.counts.intents as usize, intents);
    assert_eq!(r.partitions, (0..PARTITIONS).collect::<Vec<_>>());
}

#[test]
fn an_altered_outbox_record_is_reported_where_it_is() {
    let mut f = fixture();
    let (p, at) = (2, 57);
    let mut c = commit_at(&f, p, at);
    // The content is sealed (rules v4): altering it alters the ciphertext.
    c.ops[0].row.sealed.as_mut().unwrap().ciphertext.0[3] ^= 1;
    let m = &f.outbox[&p][at];
    let forged = OwnedMessage::new(
        Some(encode_single_object(&c)),
        m.key().map(<[u8]>::to_vec),
        m.topic().to_owned(),
        m.timestamp(),
        p,
        at as i64,
        None,
    );
    f.outbox.get_mut(&p).unwrap()[at] = forged;
    let r = run(&f, &BTreeMap::new());
    let d = r.difference.expect("a difference");
    assert_eq!(d.kind, DiffKind::Mismatch);
    assert_eq!((d.partition, d.outbox_offset), (p, Some(at as i64)));
    assert_eq!(
        (d.account_id.as_str(), d.commit_seq),
        (c.account_id.as_str(), c.commit_seq)
    );
    assert_eq!(d.intent_offset, Some(c.intent_offset));
    assert!(
        d.fields
            .iter()
            .any(|(path, _, _)| path.starts_with("ops[0].row.sealed.ciphertext")),
        "field diff names the sealed content: {:?}",
        d.fields
    );
    assert!(
        r.partitions.iter().all(|&q| q < p),
        "stops at the first difference"
    );
}

#[test]
fn a_dropped_intent_is_reported_at_its_commit() {
    let mut f = fixture();
    let p = 1;
    // Drop the intent of the 40th commit of partition 1 from the intents topic.
    let c = commit_at(&f, p, 40);
    let mut part = f.intents.remove(&p).unwrap();
    part.remove(c.intent_offset as usize);
    f.intents.insert(p, renumber(part));
    let r = run(&f, &BTreeMap::new());
    let d = r.difference.expect("a difference");
    assert_eq!(d.partition, p);
    assert_eq!(d.outbox_offset, Some(40), "{d}");
    assert_eq!(d.account_id, c.account_id, "{d}");
    assert_eq!(d.commit_seq, c.commit_seq, "{d}");
}

#[test]
fn a_missing_and_an_extra_commit_are_reported() {
    let mut f = fixture();
    let last = f.outbox[&3].len() - 1;
    let gone = commit_at(&f, 3, last);
    f.outbox.get_mut(&3).unwrap().pop();
    let d = run(&f, &BTreeMap::new()).difference.expect("missing");
    assert_eq!(d.kind, DiffKind::MissingFromOutbox);
    assert_eq!((d.partition, d.outbox_offset), (3, None));
    assert_eq!(
        (d.account_id, d.commit_seq),
        (gone.account_id, gone.commit_seq)
    );

    let mut f = fixture();
    let mut extra = commit_at(&f, 0, 5);
    extra.commit_seq += 1_000;
    let n = f.outbox[&0].len() as i64;
    f.outbox.get_mut(&0).unwrap().push(OwnedMessage::new(
        Some(encode_single_object(&extra)),
        None,
        "kledger.outbox.v1".into(),
        Timestamp::NotAvailable,
        0,
        n,
        None,
    ));
    let d = run(&f, &BTreeMap::new()).difference.expect("extra");
    assert_eq!(d.kind, DiffKind::NotProduced);
    assert_eq!((d.partition, d.outbox_offset), (0, Some(n)));
}

#[test]
fn identical_repeats_are_skipped_and_counted() {
    let mut f = fixture();
    // An old owner's write: commit 10 of partition 2 appears again after commit 12.
    let part = f.outbox.remove(&2).unwrap();
    let mut with_repeat: Vec<OwnedMessage> = part[..13].to_vec();
    with_repeat.push(part[10].clone());
    with_repeat.extend_from_slice(&part[13..]);
    f.outbox.insert(2, renumber(with_repeat));
    let r = run(&f, &BTreeMap::new());
    assert_eq!(r.difference, None);
    assert_eq!(r.counts.repeats, 1);
}

#[test]
fn verify_from_an_offset_folds_what_came_before() {
    let f = fixture();
    let from = BTreeMap::from([(0, 500), (2, 1)]);
    let r = run(&f, &from);
    assert_eq!(r.difference, None);
    assert!(r.counts.folded > 0);
    let commits: usize = f.outbox.values().map(Vec::len).sum();
    assert_eq!((r.counts.commits + r.counts.folded) as usize, commits);
}

/// The intents topic is kept for `kafka.intents_retention_ms`: a partition whose earliest
/// intents the broker deleted starts at its first retained intent, on a state folded from the
/// outbox, and a change to a commit inside the retained window is still found. A partition
/// with no intent retained folds its whole outbox.
#[test]
fn expired_intents_are_folded_and_the_retained_window_is_verified() {
    let mut f = fixture();
    // Partition 1 keeps its intents from offset 400 on (offsets unchanged); partition 3 keeps
    // none.
    f.intents.get_mut(&1).unwrap().retain(|m| m.offset() >= 400);
    f.intents.get_mut(&3).unwrap().clear();
    let r = run(&f, &BTreeMap::new());
    assert_eq!(r.difference, None, "{:?}", r.difference);
    assert_eq!(r.counts.expired, BTreeMap::from([(1, 400), (3, i64::MAX)]));
    let commits: usize = f.outbox.values().map(Vec::len).sum();
    assert_eq!((r.counts.commits + r.counts.folded) as usize, commits);
    assert!(r.counts.folded as usize > f.outbox[&3].len());
    assert_eq!(r.partitions, vec![0, 1, 2, 3]);

    // Alter the last commit of partition 1 (inside the retained window): found.
    let last = f.outbox[&1].len() - 1;
    let mut c = commit_at(&f, 1, last);
    assert!(c.intent_offset >= 400);
    c.action_id.push('x');
    let m = &f.outbox[&1][last];
    f.outbox.get_mut(&1).unwrap()[last] = OwnedMessage::new(
        Some(encode_single_object(&c)),
        m.key().map(<[u8]>::to_vec),
        m.topic().to_owned(),
        m.timestamp(),
        1,
        m.offset(),
        None,
    );
    let r = run(&f, &BTreeMap::new());
    let d = r.difference.expect("the altered commit is found");
    assert_eq!((d.partition, d.outbox_offset), (1, Some(last as i64)));
}
