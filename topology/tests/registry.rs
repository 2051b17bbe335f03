//! The schema-registry path against `TestRegistry` (testkit: a minimal in-process
//! implementation of the Confluent Schema Registry REST subset — no Confluent-compatible
//! registry server is available from this machine's package registries; see its module doc).
//!
//! With `registry.url` set: the eight subjects `<topic>-value` are registered (the source
//! topics' too); intents published
//! by kledger, commits, receipts and views are written in the Confluent wire format with the
//! registered ids; intents written earlier in single-object encoding still decode; an unknown
//! id is dead-lettered `unknown_schema`; the outbox equals the offline expectation, replay
//! verify passes; ids read on the wire are fetched once (cached). A schema incompatible with a
//! subject's latest version stops kledger before it writes anything.

mod common;

use std::time::Duration;

use common::*;
use kledger_processors::routing::partition_for;
use kledger_schemas::avro::decode;
use kledger_schemas::{
    Acl, Commit, PersonDoc, Receipt, SourceDoc, SourceKind, SourceOp, View, Visibility,
    decode_source,
};
use kledger_testkit::registry::TestRegistry;
use kledger_topology::config::Config;
use kledger_topology::kafka::codec::Codec;
use kledger_topology::{app, pipeline::replay};
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};

const PARTITIONS: i32 = 4;

fn setup(name: &str) -> (TestBroker, TestRegistry, tempfile::TempDir, Config) {
    let b = TestBroker::start();
    let registry = TestRegistry::default();
    let url = registry.serve(&b.rt);
    let dir = tempfile::tempdir().unwrap();
    let mut c = config(&b.bootstrap, dir.path(), PARTITIONS, name);
    c.kafka.topic_prefix = name.into();
    c.registry.url = url;
    c.registry.outage_retry_ms = 300;
    create_topics(&b, &c);
    (b, registry, dir, c)
}

/// The schema id of a Confluent-framed record (none for single-object records).
fn confluent_id(payload: &[u8]) -> Option<u32> {
    match payload {
        [0, a, b, c, d, ..] => Some(u32::from_be_bytes([*a, *b, *c, *d])),
        _ => None,
    }
}

#[test]
fn with_a_registry_records_use_registered_ids_and_both_framings_decode() {
    let (b, registry, _dir, c) = setup("reg");
    let records = stream(41, 30, 600);
    // Written before the registry was configured: single-object encoding.
    let mut plain = c.clone();
    plain.registry.url = String::new();
    publish_all(&plain, &records[..200]);

    let running = b.rt.block_on(app::start(c.clone())).unwrap();
    publish_all(&c, &records[200..]);
    // An intent framed with an id the registry never gave.
    let key = "t_acme/user/u_unknown_id";
    let mut bogus = vec![0u8, 0, 0, 0x27, 0x0F];
    bogus.extend_from_slice(b"\x02\x04xx");
    let producer: BaseProducer = kledger_topology::kafka::clients::client_at(&b.bootstrap, [])
        .create()
        .unwrap();
    producer
        .send(
            BaseRecord::to(&c.topics().intents)
                .key(key)
                .payload(&bogus)
                .partition(partition_for(key.as_bytes(), PARTITIONS)),
        )
        .unwrap();
    producer.flush(Duration::from_secs(10)).unwrap();
    wait_answered(&c, &records, Duration::from_secs(120));

    // The subjects and their ids.
    let subjects = registry.subjects();
    let t = c.topics();
    let id = |topic: &str| subjects[&format!("{topic}-value")][0];
    assert_eq!(subjects.len(), 9, "{subjects:?}");
    let codec = Codec::connect(&c).unwrap();
    let ids = codec.ids().unwrap();
    assert_eq!(
        (ids.intent, ids.commit, ids.receipt, ids.view),
        (id(&t.intents), id(&t.outbox), id(&t.receipts), id(&t.views))
    );
    assert_eq!(ids.sources, t.sources.clone().map(|s| id(&s)));
    // A source topic's record is framed with its subject's id, and read back through it.
    let op = SourceOp {
        doc: SourceDoc::Person(PersonDoc {
            person_id: "person:ana".into(),
            names: vec!["Ana".into()],
            retained_names: Vec::new(),
            emails: Vec::new(),
        }),
        visibility: Visibility::Private,
        acl: Acl::default(),
    };
    let framed = codec.encode_source("t_acme/user/u_1", Some("3"), &op);
    assert_eq!(confluent_id(&framed), Some(ids.sources[0]));
    assert_eq!(
        decode_source(SourceKind::People, &framed, &codec),
        Ok(("t_acme/user/u_1".into(), Some("3".into()), op))
    );

    // Framing on every topic.
    let intents = read_all(&b.bootstrap, &t.intents, PARTITIONS);
    let framed = intents
        .iter()
        .filter(|r| confluent_id(&r.payload) == Some(ids.intent))
        .count();
    // (The stream keeps only JSON-safe records: fewer than 600 may be left.)
    assert_eq!(
        framed,
        records.len() - 200,
        "intents published with the registry are Confluent-framed"
    );
    let single = intents
        .iter()
        .filter(|r| r.payload.starts_with(&[0xC3, 0x01]))
        .count();
    assert_eq!(single, 200);
    for (topic, want) in [(&t.outbox, ids.commit), (&t.receipts, ids.receipt)] {
        let recs = read_all(&b.bootstrap, topic, PARTITIONS);
        assert!(!recs.is_empty());
        assert!(
            recs.iter().all(|r| confluent_id(&r.payload) == Some(want)),
            "{topic}: every record framed with id {want}"
        );
    }
    let dead = read_all(&b.bootstrap, &t.deadletter, PARTITIONS);
    assert_eq!(dead.len(), 1);
    assert_eq!(dead[0].headers["kledger.error.code"], "unknown_schema");
    assert_eq!(dead[0].payload, bogus, "the original bytes are kept");

    // The same commits as the offline mode, whatever the framing.
    let (want, _) = expected(&c, &records, PARTITIONS);
    assert_outbox_exact(&commits(&b.bootstrap, &c), &want);
    let codec = Codec::connect(&c).unwrap();
    let lookups = registry.id_lookups();
    for r in read_all(&b.bootstrap, &t.receipts, PARTITIONS) {
        decode::<Receipt>(&r.payload, &codec).unwrap();
    }
    assert_eq!(
        registry.id_lookups(),
        lookups,
        "registered ids are known without a lookup"
    );
    let reader = Codec::single_object();
    let first = read_all(&b.bootstrap, &t.outbox, PARTITIONS);
    assert!(
        decode::<Commit>(&first[0].payload, &reader).is_err(),
        "a Confluent-framed record needs the registry"
    );
    let before = registry.id_lookups();
    let fresh = kledger_topology::kafka::codec::RegistryClient::new(
        &c.registry.url,
        Duration::from_secs(5),
        Duration::from_secs(1),
    )
    .unwrap();
    for _ in 0..3 {
        assert!(fresh.schema(ids.commit).unwrap().is_some());
    }
    assert_eq!(registry.id_lookups(), before + 1, "an id is fetched once");

    // Views are framed too (once the view sink has caught up).
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let views = read_all(&b.bootstrap, &t.views, PARTITIONS);
        if !views.is_empty() {
            assert!(
                views
                    .iter()
                    .all(|r| confluent_id(&r.payload) == Some(ids.view))
            );
            decode::<View>(&views[0].payload, &codec).unwrap();
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no views");
        std::thread::sleep(Duration::from_millis(200));
    }

    // Replay re-decides into Confluent-framed commits and finds them byte-identical.
    let scratch = tempfile::tempdir().unwrap();
    let report =
        replay::verify_topics(&c, &Default::default(), &scratch.path().join("s"), false).unwrap();
    assert!(report.difference.is_none(), "{:?}", report.difference);
    assert_eq!(report.counts.commits as usize, want.len());

    b.rt.block_on(running.stop()).unwrap();
}

#[test]
fn a_schema_incompatible_with_the_subject_stops_kledger_before_it_writes() {
    let (b, registry, _dir, c) = setup("regx");
    // Another producer registered an Intent the current schema cannot read: the current one
    // has required fields (no defaults) the old one lacks, which breaks BACKWARD.
    let old = r#"{"type":"record","name":"Intent","namespace":"kledger.v1","fields":[{"name":"action_id","type":"string"}]}"#;
    registry.put(&format!("{}-value", c.topics().intents), old);
    let err = Codec::connect(&c).unwrap_err().to_string();
    assert!(err.contains("not compatible"), "{err}");
    let Err(err) = b.rt.block_on(app::start(c.clone())) else {
        panic!("kledger must not start");
    };
    assert!(format!("{err:#}").contains("not compatible"), "{err:#}");
    assert!(read_all(&b.bootstrap, &c.topics().outbox, PARTITIONS).is_empty());
    // With compatibility off for the subject, the same schema registers as a new version.
    let url = format!("{}/config/{}-value", c.registry.url, c.topics().intents);
    let resp = reqwest::blocking::Client::new()
        .put(url)
        .body(r#"{"compatibility": "NONE"}"#)
        .send()
        .unwrap();
    assert!(resp.status().is_success());
    let ids = Codec::connect(&c).unwrap().ids().unwrap();
    assert_eq!(
        registry.subjects()[&format!("{}-value", c.topics().intents)].len(),
        2
    );
    assert_ne!(ids.intent, 1);
}
