//! Broker faults with librdkafka's mock cluster (three brokers): request errors on produce,
//! fetch, offset commit, heartbeat and the transaction requests, partition leaders moving, the
//! group (and transaction) coordinator moving, and a broker going down and up — while the
//! processor runs in-process over a stream published in phases. Then the oracle.
//!
//! What the mock cannot show: it does not make transactions atomic for readers or fence
//! producers, so "no partial batch is ever exposed" is checked here only as the oracle's
//! outcome (every commit once, gapless, chained); Kafka's atomicity is not exercised. Nor does
//! it check the sequences of idempotent, non-transactional producers, so producers here keep
//! one request in flight (`mock_config`).
//!
//! A run that stalls prints where each intents partition stands (its end, the group's offset,
//! intents without a receipt, published intents missing from the topic); with `RUST_LOG` set,
//! the `harness` binary also prints the processor's logs.

use std::collections::BTreeMap;
use std::time::Duration;

use kledger_schemas::IntentRecord;
use kledger_schemas::avro::decode;
use kledger_topology::app;
use kledger_topology::config::{Config, DeliveryMode};
use rdkafka::mocking::{MockCluster, MockCoordinator};
use rdkafka::types::{RDKafkaApiKey, RDKafkaRespErr};

use super::Row;
use super::oracle::{Findings, check};
use crate::kafka::*;

/// Partitions of the fault runs' topics.
pub const PARTITIONS: i32 = 4;

/// What the fault runs did and found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultFigures {
    /// Faults injected, by kind.
    pub injected: BTreeMap<&'static str, usize>,
    /// Intents per run.
    pub intents: usize,
    /// Whether each run kept going (answered everything, the processor never stopped).
    pub progressed: Vec<(&'static str, bool)>,
    /// The oracle per run.
    pub oracle: Vec<(&'static str, Findings)>,
}

impl FaultFigures {
    /// The summary row.
    pub fn row(&self) -> Row {
        let injected: usize = self.injected.values().sum();
        let kinds: Vec<String> = self
            .injected
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        let runs: Vec<String> = self
            .oracle
            .iter()
            .map(|(mode, o)| {
                format!(
                    "{mode}: commits {} of {}, lost {}, duplicated {}, forks {}, gaps {}, chain breaks {}",
                    o.commits, o.expected, o.lost, o.duplicated, o.forks, o.gaps, o.chain_breaks
                )
            })
            .collect();
        Row {
            check: "broker faults (mock)",
            figures: format!(
                "{injected} faults injected ({}); {} intents per run; {}; progress {}",
                kinds.join(", "),
                self.intents,
                runs.join("; "),
                if self.progressed.iter().all(|(_, p)| *p) {
                    "kept"
                } else {
                    "STALLED"
                }
            ),
            ok: self.ok(),
        }
    }

    /// Whether every invariant held.
    pub fn ok(&self) -> bool {
        self.progressed.iter().all(|(_, p)| *p) && self.oracle.iter().all(|(_, o)| o.ok())
    }
}

fn mock_config(
    mock: &MockCluster<'_, rdkafka::producer::DefaultProducerContext>,
    dir: &std::path::Path,
    group: &str,
) -> anyhow::Result<Config> {
    let mut c = config(&mock.bootstrap_servers(), dir, PARTITIONS, group);
    c.kafka.create_topics = false;
    c.views.enabled = false;
    c.vectors.enabled = false;
    // Faults are aimed at the processor: no source intake (its topics are not on the mock).
    c.sources.intake = false;
    // The mock checks producer sequences only for transactional producers. An idempotent
    // producer with two requests in flight whose first fails (an injected produce error) and
    // whose second is appended takes the second's ack as proof that the first was persisted
    // (librdkafka's implicit ack; a real broker rejects the second as out of order), and the
    // first request's records are lost while reported delivered. One request in flight per
    // connection keeps the injected errors without that artefact (the harness's publisher lost
    // intents this way, 1 run in 5 on a loaded machine).
    c.kafka
        .producer_properties
        .insert("max.in.flight.requests.per.connection".into(), "1".into());
    let t = c.topics();
    for name in [
        &t.intents,
        &t.outbox,
        &t.receipts,
        &t.views,
        &t.deadletter,
        &t.keys,
    ] {
        mock.create_topic(name, PARTITIONS, 3)?;
    }
    Ok(c)
}

// Long on purpose: one run is a sequence of phases and faults, kept in order in one place.
/// One run in `mode`: phases of the stream with faults between them.
fn run(
    mode: DeliveryMode,
    seed: u64,
    intents: usize,
    f: &mut FaultFigures,
) -> anyhow::Result<(bool, Findings)> {
    let mock = MockCluster::new(3)?;
    let dir = tempfile::tempdir()?;
    let group = format!("faults-{mode:?}").to_lowercase();
    let mut c = mock_config(&mock, dir.path(), &group)?;
    if mode == DeliveryMode::Transactional {
        c.kafka.delivery_mode = mode;
        c.kafka.transactional_id = Some(format!("{group}-tx"));
    }
    // The mock keeps ≈5 MiB per partition: keep the stream short.
    let records = stream(seed, 20, intents);
    let phases: Vec<_> = records.chunks(records.len().div_ceil(4)).collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    publish_all(&c, phases[0]);
    let running = rt.block_on(app::start(c.clone()))?;
    let retriable = RDKafkaRespErr::RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION;
    let mut inject = |what: &'static str, n: usize| {
        *f.injected.entry(what).or_insert(0) += n;
    };
    let mut published = phases[0].len();
    let mut progressed = true;
    for (i, phase) in phases.iter().enumerate().skip(1) {
        // Wait for the previous phases, then fault and publish the next.
        let done = &records[..published];
        if let Err(why) = answered(&c, done, Duration::from_secs(180), || !running.finished()) {
            eprintln!("faults ({mode:?}): phase {i}: {why}");
            eprintln!(
                "faults ({mode:?}): {}",
                stall_report(&c, &group, &records[..published])
            );
            progressed = false;
            break;
        }
        match i {
            1 => {
                mock.request_errors(RDKafkaApiKey::Produce, &[retriable; 5]);
                mock.request_errors(RDKafkaApiKey::Fetch, &[retriable; 5]);
                mock.request_errors(
                    RDKafkaApiKey::OffsetCommit,
                    &[RDKafkaRespErr::RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT; 3],
                );
                mock.request_errors(
                    RDKafkaApiKey::Heartbeat,
                    &[RDKafkaRespErr::RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE; 2],
                );
                inject("produce errors", 5);
                inject("fetch errors", 5);
                inject("commit errors", 3);
                inject("heartbeat errors", 2);
                if mode == DeliveryMode::Transactional {
                    let busy = RDKafkaRespErr::RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS;
                    mock.request_errors(RDKafkaApiKey::AddPartitionsToTxn, &[busy; 2]);
                    mock.request_errors(RDKafkaApiKey::TxnOffsetCommit, &[busy; 2]);
                    mock.request_errors(RDKafkaApiKey::EndTxn, &[busy; 2]);
                    inject("transaction request errors", 6);
                }
            }
            2 => {
                let t = c.topics();
                for p in 0..PARTITIONS {
                    mock.partition_leader(&t.intents, p, Some(2))?;
                    mock.partition_leader(&t.outbox, p, Some(3))?;
                }
                inject("leader moves", 2 * PARTITIONS as usize);
                mock.coordinator(MockCoordinator::Group(group.clone()), 2)?;
                inject("coordinator moves", 1);
                if let Some(tx) = &c.kafka.transactional_id {
                    mock.coordinator(MockCoordinator::Transaction(tx.clone()), 3)?;
                    inject("coordinator moves", 1);
                }
            }
            _ if mode == DeliveryMode::Idempotent => {
                mock.broker_down(2)?;
                std::thread::sleep(Duration::from_secs(2));
                mock.broker_up(2)?;
                inject("broker down and up", 1);
            }
            _ => {
                // Not a broker outage in this mode: with the mock, librdkafka's
                // send_offsets_to_transaction then never returned (its 30 s timeout not
                // honoured) after the group coordinator's broker went down and up. Leaders
                // move back instead.
                let t = c.topics();
                for p in 0..PARTITIONS {
                    mock.partition_leader(&t.intents, p, Some(1))?;
                }
                inject("leader moves", PARTITIONS as usize);
            }
        }
        publish_all(&c, phase);
        published += phase.len();
    }
    if progressed {
        progressed = answered(&c, &records, Duration::from_secs(180), || {
            !running.finished()
        })
        .is_ok();
    }
    progressed &= !running.finished();
    if let Err(e) = rt.block_on(running.stop()) {
        eprintln!("faults ({mode:?}): the runtime stopped with: {e:#}");
    }
    let (want, _) = expected(&c, &records, PARTITIONS);
    let got = commits(&c.kafka.bootstrap_servers, &c);
    Ok((progressed, check(&got, &want)))
}

/// Where a stalled run stands: per intents partition, its end, the group's committed offset
/// and the intent offsets without a receipt; then each partition whose topic differs from what
/// was `published` ([`topic_vs_published`]).
fn stall_report(c: &Config, group: &str, published: &[IntentRecord]) -> String {
    let t = c.topics();
    let bootstrap = &c.kafka.bootstrap_servers;
    let ends = kledger_topology::kafka::topics::high_watermarks(
        &kledger_topology::kafka::clients::client_at(bootstrap, []),
        &t.intents,
        PARTITIONS,
    )
    .map_err(|e| e.to_string());
    let answered = answered_offsets(c);
    let unanswered: Vec<(i32, Vec<i64>)> = ends
        .iter()
        .flat_map(|ends| ends.iter().zip(0..))
        .map(|(end, p)| {
            let got = answered.get(&p);
            let missing = (0..*end)
                .filter(|o| !got.is_some_and(|g| g.contains(o)))
                .collect();
            (p, missing)
        })
        .filter(|(_, missing): &(i32, Vec<i64>)| !missing.is_empty())
        .collect();
    format!(
        "intents ends {ends:?}; committed {:?}; unanswered intent offsets {unanswered:?}; topic vs published: {:?}",
        committed(c, group),
        topic_vs_published(c, published)
    )
}

/// The committed offset of each intents partition for `group`.
fn committed(c: &Config, group: &str) -> Result<Vec<(i32, rdkafka::Offset)>, String> {
    use rdkafka::consumer::{BaseConsumer, Consumer};
    let consumer: BaseConsumer = kledger_topology::kafka::clients::client_config(c)
        .set("group.id", group)
        .create()
        .map_err(|e| e.to_string())?;
    let mut tpl = rdkafka::TopicPartitionList::new();
    for p in 0..PARTITIONS {
        tpl.add_partition(&c.topics().intents, p);
    }
    let tpl = consumer
        .committed_offsets(tpl, Duration::from_secs(10))
        .map_err(|e| e.to_string())?;
    Ok(tpl
        .elements()
        .iter()
        .map(|e| (e.partition(), e.offset()))
        .collect())
}

/// Per intents partition whose topic is not what was `published` (intents named by account
/// and action): both counts, where the order first differs, and the published intents missing
/// from the topic (with their index among the partition's published intents).
fn topic_vs_published(c: &Config, published: &[IntentRecord]) -> Vec<String> {
    type Key = (String, String);
    let mut want: BTreeMap<i32, Vec<Key>> = BTreeMap::new();
    for r in published {
        want.entry(partition_of(r, PARTITIONS))
            .or_default()
            .push((r.intent.account_id.clone(), r.intent.action_id.clone()));
    }
    let codec = kledger_topology::kafka::codec::Codec::connect(c);
    let mut have: BTreeMap<i32, Vec<Key>> = BTreeMap::new();
    for r in read_all(&c.kafka.bootstrap_servers, &c.topics().intents, PARTITIONS) {
        let decoded = codec
            .as_ref()
            .ok()
            .and_then(|codec| decode::<kledger_schemas::Intent>(&r.payload, codec).ok());
        let key = match decoded {
            Some(i) => (i.account_id, i.action_id),
            None => (format!("undecodable@{}", r.offset), String::new()),
        };
        have.entry(r.partition).or_default().push(key);
    }
    let mut report = Vec::new();
    for (p, w) in &want {
        let h = have.get(p).map(Vec::as_slice).unwrap_or_default();
        let diverges = w.iter().zip(h).position(|(a, b)| a != b);
        // What the topic holds, as counts: each published intent takes one.
        let mut left: BTreeMap<&Key, usize> = BTreeMap::new();
        for k in h {
            *left.entry(k).or_insert(0) += 1;
        }
        let missing: Vec<(usize, &Key)> = w
            .iter()
            .enumerate()
            .filter(|(_, k)| match left.get_mut(k) {
                Some(n) if *n > 0 => {
                    *n -= 1;
                    false
                }
                _ => true,
            })
            .collect();
        if diverges.is_some() || !missing.is_empty() || w.len() != h.len() {
            report.push(format!(
                "partition {p}: published {}, in topic {}, order first differs at {diverges:?}, missing (index, account, action) {missing:?}",
                w.len(),
                h.len()
            ));
        }
    }
    report
}

/// Runs the faults in both delivery modes.
pub fn faults(seed: u64, intents: usize) -> anyhow::Result<FaultFigures> {
    let mut f = FaultFigures {
        intents,
        ..FaultFigures::default()
    };
    for (name, mode) in [
        ("idempotent", DeliveryMode::Idempotent),
        ("transactional", DeliveryMode::Transactional),
    ] {
        let (progressed, findings) = run(mode, seed, intents, &mut f)?;
        f.progressed.push((name, progressed));
        f.oracle.push((name, findings));
    }
    Ok(f)
}
