//! The bad-input corpus through the processor's own batch code (no broker): every case gets
//! the answer it names, and there are at least 30 kinds. The Kafka path is the harness's.

use std::collections::BTreeMap;

use kledger_processors::Limits;
use kledger_processors::routing::partition_for;
use kledger_schemas::Receipt;
use kledger_schemas::avro::decode;
use kledger_state::{Applier, MemoryStore, StateStore};
use kledger_testkit::badinput::{Expect, corpus};
use kledger_topology::kafka::codec::Codec;
use kledger_topology::kafka::topics::Topics;
use kledger_topology::pipeline::apply::batch::{OutKind, decide_batch};
use rdkafka::Timestamp;
use rdkafka::message::OwnedMessage;

const PARTITIONS: i32 = 4;

#[test]
fn every_case_gets_its_answer_from_the_processor_code() {
    let cases = corpus(PARTITIONS);
    let kinds: std::collections::BTreeSet<&str> = cases.iter().map(|c| c.name).collect();
    assert!(kinds.len() >= 30, "{} kinds", kinds.len());
    assert_eq!(kinds.len(), cases.len(), "case names are unique");
    let store = MemoryStore::new();
    let topics = Topics::new("kledger");
    let lookup = Codec::single_object();
    let mut offsets: BTreeMap<i32, i64> = BTreeMap::new();
    let mut message = |key: Option<Vec<u8>>, payload: Option<Vec<u8>>, p: i32, ts: i64| {
        let o = offsets.entry(p).or_insert(0);
        *o += 1;
        OwnedMessage::new(
            payload,
            key,
            topics.intents.clone(),
            Timestamp::CreateTime(ts),
            p,
            *o - 1,
            None,
        )
    };
    let mut wrong = Vec::new();
    for case in &cases {
        let mut batch = Vec::new();
        if let Some((k, v)) = &case.before {
            batch.push(message(
                Some(k.clone()),
                Some(v.clone()),
                partition_for(k, PARTITIONS),
                case.timestamp,
            ));
        }
        let p = case
            .partition
            .unwrap_or_else(|| partition_for(case.key.as_deref().unwrap_or_default(), PARTITIONS));
        batch.push(message(
            case.key.clone(),
            case.payload.clone(),
            p,
            case.timestamp,
        ));
        let mut applier = Applier::new(&store, Limits::default());
        let d = decide_batch(
            &mut applier,
            &batch,
            &topics,
            PARTITIONS,
            &lookup,
            Limits::default().record_bytes_max,
            &Default::default(),
        )
        .unwrap();
        store.write(&applier.into_writes()).unwrap();
        let last = d.out.last().unwrap();
        let got = match last.kind {
            OutKind::DeadLetter => Expect::DeadLetter(
                last.headers
                    .iter()
                    .find(|(k, _)| k == "kledger.error.code")
                    .map(|(_, v)| leak(v))
                    .unwrap(),
            ),
            OutKind::Receipt => {
                let r: Receipt = decode(&last.payload, &lookup).unwrap();
                Expect::Receipt(r.outcome, leak(&r.code.unwrap_or_default()))
            }
            other => panic!("{}: last output {other:?}", case.name),
        };
        if got != case.expect {
            wrong.push(format!(
                "{}: got {got:?}, expected {:?}",
                case.name, case.expect
            ));
        }
    }
    eprintln!("{} cases checked", cases.len());
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

fn leak(s: &str) -> &'static str {
    Box::leak(s.to_owned().into_boxed_str())
}
