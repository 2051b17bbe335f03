//! The embedded broker speaks enough Kafka for kledger: topics, keyed produce, group consume.

use kledger_topology::embedded::{EmbeddedBroker, free_port};
use kledger_topology::topics::{self, Topics};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn topics_are_created_and_checked() {
    let port = free_port().unwrap();
    let broker = EmbeddedBroker::start(&format!("127.0.0.1:{port}"), "memory://tansu/")
        .await
        .unwrap();
    let t = Topics::new("smoke");
    let created = topics::create(&broker.bootstrap(), &t, 3, 1).await.unwrap();
    assert_eq!(created.len(), 5);
    let again = topics::create(&broker.bootstrap(), &t, 3, 1).await.unwrap();
    assert!(again.is_empty(), "creating twice is a no-op");
    let b = broker.bootstrap();
    let n = tokio::task::spawn_blocking(move || topics::check(&b, &t))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(n, 3);
    // A mismatched outbox is refused.
    let bad = Topics {
        outbox: "smoke.other.v1".into(),
        ..Topics::new("smoke")
    };
    topics::create(&broker.bootstrap(), &Topics::new("other-prefix"), 2, 1)
        .await
        .unwrap();
    let bad = Topics {
        outbox: "other-prefix.outbox.v1".into(),
        ..bad
    };
    let b = broker.bootstrap();
    let err = tokio::task::spawn_blocking(move || topics::check(&b, &bad))
        .await
        .unwrap()
        .unwrap_err();
    assert!(err.to_string().contains("co-partitioned"), "{err}");
    broker.stop();
}
