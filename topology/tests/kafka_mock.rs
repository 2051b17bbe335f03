//! The transactional mode's call sequence (begin, send offsets, commit, abort) on librdkafka's
//! mock cluster. Request errors, leader and coordinator moves and a broker outage are the
//! reliability harness's broker-fault check (`kledger_testkit::harness::faults`).
//!
//! What the mock does not enforce (so these tests cannot check it): transactions are not
//! atomic for readers (read_committed consumers see open and aborted records), producers are
//! not fenced, and `send_offsets_to_transaction` stores no offsets. It keeps only ≈5 MiB per
//! partition, so streams here are short.

mod common;

use std::time::Duration;

use common::*;
use kledger_schemas::IntentRecord;
use kledger_testkit::{GenConfig, Generator};
use kledger_topology::config::{Config, DeliveryMode};
use kledger_topology::{app, metrics};
use rdkafka::mocking::MockCluster;
use rdkafka::types::{RDKafkaApiKey, RDKafkaRespErr};

const PARTITIONS: i32 = 4;

fn mock_config(
    mock: &MockCluster<'_, rdkafka::producer::DefaultProducerContext>,
    dir: &std::path::Path,
    group: &str,
) -> Config {
    let mut c = config(&mock.bootstrap_servers(), dir, PARTITIONS, group);
    c.kafka.create_topics = false;
    // Faults are aimed at the processor; the view sink has its own e2e test.
    c.views.enabled = false;
    c.vectors.enabled = false;
    c.sources.intake = false;
    for t in [
        c.topics().intents,
        c.topics().outbox,
        c.topics().receipts,
        c.topics().views,
        c.topics().deadletter,
        c.topics().keys,
    ] {
        mock.create_topic(&t, PARTITIONS, 1).unwrap();
    }
    c
}

fn stream(seed: u64, n: usize) -> Vec<IntentRecord> {
    json_safe(
        Generator::new(GenConfig {
            seed,
            accounts: 20,
            ..GenConfig::default()
        })
        .take(n)
        .collect(),
    )
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

#[test]
fn transactional_mode_runs_begin_send_offsets_commit_and_abort() {
    let handle = metrics::install().unwrap();
    let mock = MockCluster::new(1).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut c = mock_config(&mock, dir.path(), "mock-tx");
    c.kafka.delivery_mode = DeliveryMode::Transactional;
    c.kafka.transactional_id = Some("kledger-test-tx".into());
    let records = stream(43, 800);
    publish_all(&c, &records);
    // The ledger's secret is written before the fault, which is meant for a transaction.
    kledger_testkit::kafka::ledger_secret(&c);
    let rt = rt();
    let running = rt.block_on(app::start(c.clone())).unwrap();
    // A non-retriable produce error fails one batch: the transaction is aborted, state is
    // re-synced from the outbox, and the batch is decided again.
    mock.request_errors(
        RDKafkaApiKey::Produce,
        &[RDKafkaRespErr::RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED],
    );
    if let Err(why) = answered(&c, &records, Duration::from_secs(180), || {
        running.status.alive()
    }) {
        let stopped = rt.block_on(running.stop());
        panic!("{why}; the processor returned {stopped:?}");
    }
    rt.block_on(running.stop()).unwrap();
    let text = handle.render();
    let count = |result: &str| -> f64 {
        text.lines()
            .find(|l| {
                l.starts_with("kledger_transactions_total")
                    && l.contains(&format!("result=\"{result}\""))
            })
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
            .unwrap_or(0.0)
    };
    assert!(count("committed") >= 1.0, "{text}");
    assert!(
        count("aborted") >= 1.0,
        "no transaction was aborted:\n{text}"
    );
    // The mock shows aborted records to read_committed readers, so an aborted batch's
    // commits may appear; they are byte-identical to the retried ones (same state, same
    // input), and nothing else is in the outbox.
    let (want, _) = expected(&c, &records, PARTITIONS);
    let (unique, _) = dedup_identical(&commits(&c.kafka.bootstrap_servers, &c));
    assert_outbox_exact(&unique, &want);
}

#[test]
fn a_failing_broker_degrades_the_processor_and_it_recovers_by_itself() {
    // Produce requests fail for a while (an authorization error a retry cannot fix at once):
    // every batch fails, the processor reports itself degraded but keeps retrying with
    // backoff, never stops, and once the broker accepts writes again it answers everything
    // and is well again.
    let mock = MockCluster::new(1).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut c = mock_config(&mock, dir.path(), "mock-degraded");
    c.processor.degraded_after_attempts = 2;
    c.processor.backoff_ms_initial = 50;
    c.processor.backoff_ms_max = 400;
    let records = stream(44, 600);
    publish_all(&c, &records);
    let rt = rt();
    mock.request_errors(
        RDKafkaApiKey::Produce,
        &[RDKafkaRespErr::RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED; 60],
    );
    let running = rt.block_on(app::start(c.clone())).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let reason = loop {
        if let Some(r) = running.status.degraded() {
            break r;
        }
        assert!(!running.finished(), "the processor stopped");
        assert!(
            std::time::Instant::now() < deadline,
            "never reported degraded"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(!running.status.ready(), "degraded is not ready");
    assert!(running.status.json()["degraded"].is_string(), "{reason}");
    if let Err(why) = answered(&c, &records, Duration::from_secs(180), || {
        !running.finished()
    }) {
        let stopped = rt.block_on(running.stop());
        panic!("{why}; the processor returned {stopped:?}");
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while running.status.degraded().is_some() {
        assert!(std::time::Instant::now() < deadline, "still degraded");
        std::thread::sleep(Duration::from_millis(50));
    }
    rt.block_on(running.stop()).unwrap();
    let (want, _) = expected(&c, &records, PARTITIONS);
    let (unique, _) = dedup_identical(&commits(&c.kafka.bootstrap_servers, &c));
    assert_outbox_exact(&unique, &want);
}
