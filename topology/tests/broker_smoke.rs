//! The embedded broker speaks enough Kafka for kledger: topics, keyed produce, group consume.

use kledger_topology::kafka::embedded::{EmbeddedBroker, free_port};
use kledger_topology::kafka::topics::{self, Topics};

/// Topics' `max.message.bytes`: the default record budget plus framing.
const MESSAGE_BYTES: usize =
    kledger_schemas::limits::RECORD_BYTES_DEFAULT + kledger_schemas::limits::RECORD_OVERHEAD_BYTES;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topics_are_created_and_checked() {
    let port = free_port().unwrap();
    let broker = EmbeddedBroker::start(&format!("127.0.0.1:{port}"), "memory://tansu/")
        .await
        .unwrap();
    let t = Topics::new("smoke");
    let created = topics::create(
        &kledger_topology::kafka::clients::client_at(&broker.bootstrap(), []),
        &t,
        3,
        1,
        MESSAGE_BYTES,
    )
    .await
    .unwrap();
    // The ledger's six topics and the five source topics.
    assert_eq!(created.len(), 11);
    let again = topics::create(
        &kledger_topology::kafka::clients::client_at(&broker.bootstrap(), []),
        &t,
        3,
        1,
        MESSAGE_BYTES,
    )
    .await
    .unwrap();
    assert!(again.is_empty(), "creating twice is a no-op");
    let b = broker.bootstrap();
    let (n, missing) = tokio::task::spawn_blocking(move || {
        let cluster = kledger_topology::kafka::clients::client_at(&b, []);
        let n = topics::check(&cluster, &t).unwrap();
        topics::check_sources(&cluster, &t).unwrap();
        // A ledger whose topics predate the source topics is told to create them.
        let mut old = t.clone();
        old.sources[2] = "smoke.sources.never.v1".into();
        (n, topics::check_sources(&cluster, &old).unwrap_err())
    })
    .await
    .unwrap();
    assert_eq!(n, 3);
    assert!(
        missing
            .to_string()
            .contains("smoke.sources.never.v1 do not exist"),
        "{missing}"
    );
    // A mismatched outbox is refused.
    let bad = Topics {
        outbox: "smoke.other.v1".into(),
        ..Topics::new("smoke")
    };
    topics::create(
        &kledger_topology::kafka::clients::client_at(&broker.bootstrap(), []),
        &Topics::new("other-prefix"),
        2,
        1,
        MESSAGE_BYTES,
    )
    .await
    .unwrap();
    let bad = Topics {
        outbox: "other-prefix.outbox.v1".into(),
        ..bad
    };
    let b = broker.bootstrap();
    let err = tokio::task::spawn_blocking(move || {
        topics::check(&kledger_topology::kafka::clients::client_at(&b, []), &bad)
    })
    .await
    .unwrap()
    .unwrap_err();
    assert!(err.to_string().contains("co-partitioned"), "{err}");
    broker.stop();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn committed_offsets_round_trip_per_partition() {
    use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
    use rdkafka::{Offset, TopicPartitionList};
    use std::time::Duration;
    let port = free_port().unwrap();
    let broker = EmbeddedBroker::start(&format!("127.0.0.1:{port}"), "memory://tansu/")
        .await
        .unwrap();
    let t = Topics::new("offsets");
    topics::create(
        &kledger_topology::kafka::clients::client_at(&broker.bootstrap(), []),
        &t,
        6,
        1,
        MESSAGE_BYTES,
    )
    .await
    .unwrap();
    let b = broker.bootstrap();
    let intents = t.intents.clone();
    tokio::task::spawn_blocking(move || {
        let c: BaseConsumer = kledger_topology::kafka::clients::client_at(&b, [])
            .set("group.id", "g-offsets")
            .set("enable.auto.commit", "false")
            .create()
            .unwrap();
        let mut all = TopicPartitionList::new();
        for p in 0..6 {
            all.add_partition_offset(&intents, p, Offset::Offset(0))
                .unwrap();
        }
        c.assign(&all).unwrap();
        // Commit subsets at different times, as the processor does.
        for (p, o) in [(0, 735), (1, 1097), (2, 5), (0, 740), (5, 9)] {
            let mut tpl = TopicPartitionList::new();
            tpl.add_partition_offset(&intents, p, Offset::Offset(o))
                .unwrap();
            c.commit(&tpl, CommitMode::Sync).unwrap();
        }
        let mut q = TopicPartitionList::new();
        for p in 0..6 {
            q.add_partition(&intents, p);
        }
        let got = c.committed_offsets(q, Duration::from_secs(10)).unwrap();
        let got: Vec<(i32, Offset)> = got
            .elements()
            .iter()
            .map(|e| (e.partition(), e.offset()))
            .collect();
        assert_eq!(
            got,
            vec![
                (0, Offset::Offset(740)),
                (1, Offset::Offset(1097)),
                (2, Offset::Offset(5)),
                (3, Offset::Invalid),
                (4, Offset::Invalid),
                (5, Offset::Offset(9)),
            ]
        );
    })
    .await
    .unwrap();
    broker.stop();
}

/// Probe of the embedded broker: where does a fetch from the middle of a record batch start?
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fetch_from_the_middle_of_a_batch_probe() {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::message::Message;
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    use rdkafka::{Offset, TopicPartitionList};
    use std::time::Duration;
    let port = free_port().unwrap();
    let broker = EmbeddedBroker::start(&format!("127.0.0.1:{port}"), "memory://tansu/")
        .await
        .unwrap();
    let t = Topics::new("mid");
    topics::create(
        &kledger_topology::kafka::clients::client_at(&broker.bootstrap(), []),
        &t,
        1,
        1,
        MESSAGE_BYTES,
    )
    .await
    .unwrap();
    let b = broker.bootstrap();
    let topic = t.intents.clone();
    tokio::task::spawn_blocking(move || {
        let p: BaseProducer = kledger_topology::kafka::clients::client_at(&b, [])
            .set("linger.ms", "100")
            .create()
            .unwrap();
        for i in 0..100 {
            p.send(
                BaseRecord::<str, str>::to(&topic)
                    .partition(0)
                    .key("k")
                    .payload(&format!("v{i}")),
            )
            .unwrap();
        }
        p.flush(Duration::from_secs(10)).unwrap();
        for i in 100..200 {
            p.send(
                BaseRecord::<str, str>::to(&topic)
                    .partition(0)
                    .key("k")
                    .payload(&format!("v{i}")),
            )
            .unwrap();
        }
        p.flush(Duration::from_secs(10)).unwrap();
        let c: BaseConsumer = kledger_topology::kafka::clients::client_at(&b, [])
            .set("group.id", "g-mid")
            .create()
            .unwrap();
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&topic, 0, Offset::Offset(50))
            .unwrap();
        c.assign(&tpl).unwrap();
        let first = loop {
            if let Some(Ok(m)) = c.poll(Duration::from_secs(5)) {
                break m.offset();
            }
        };
        eprintln!("PROBE fetch from offset 50 first delivered {first}");
    })
    .await
    .unwrap();
    broker.stop();
}

/// A fetch held for records (`fetch.wait.max.ms`) is answered when one arrives, not when the
/// wait is up (vendor/tansu-storage, change 4): with a 20 s wait, a record produced while the
/// consumer waits reaches it long before. Unpatched, tansu slept out every fetch's wait.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_fetch_is_answered_when_a_record_arrives() {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    use rdkafka::message::Message;
    use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
    use rdkafka::{Offset, TopicPartitionList};
    use std::time::{Duration, Instant};
    let port = free_port().unwrap();
    let broker = EmbeddedBroker::start(&format!("127.0.0.1:{port}"), "memory://tansu/")
        .await
        .unwrap();
    let t = Topics::new("held");
    let cluster = kledger_topology::kafka::clients::client_at(&broker.bootstrap(), []);
    topics::create(&cluster, &t, 1, 1, MESSAGE_BYTES)
        .await
        .unwrap();
    let topic = t.intents.clone();
    tokio::task::spawn_blocking(move || {
        let c: BaseConsumer = cluster
            .clone()
            .set("group.id", "g-held")
            .set("fetch.wait.max.ms", "20000")
            .create()
            .unwrap();
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(&topic, 0, Offset::Beginning)
            .unwrap();
        c.assign(&tpl).unwrap();
        // The consumer's fetch is now held at the empty partition's end.
        assert!(c.poll(Duration::from_secs(2)).is_none());
        let p: BaseProducer = cluster.create().unwrap();
        let sent = Instant::now();
        p.send(
            BaseRecord::<str, str>::to(&topic)
                .partition(0)
                .key("k")
                .payload("v"),
        )
        .unwrap();
        p.flush(Duration::from_secs(10)).unwrap();
        let got = match c.poll(Duration::from_secs(30)) {
            Some(Ok(m)) => m.offset(),
            Some(Err(e)) => panic!("{e}"),
            None => panic!("no record within 30 s"),
        };
        assert_eq!(got, 0);
        let took = sent.elapsed();
        assert!(
            took < Duration::from_secs(10),
            "the record waited for the held fetch's 20 s: {took:?}"
        );
    })
    .await
    .unwrap();
    broker.stop();
}
