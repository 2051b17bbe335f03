//! Bench: kledger's processor versus a pass-through on the same broker, machine and intents.
//!
//! The pass-through is the limit of this pipeline: a consumer group reads the intents in
//! batches of the same size, produces each record to an output topic with the processor's
//! producer settings, awaits delivery and commits offsets — everything the processor does
//! except decide, state and the receipts. Both run 3 times, alternating, on 200k intents
//! (the generator's realistic mix over 2,000 accounts) in the embedded broker; the bench prints
//! each rate, the medians and their ratio (goal ≥ 0.7). Both rates run from the first record
//! read to the commit of the last record's offset, so group joins and restores are not counted
//! (the processor's window is read off its metrics: see `processor_rate`).
//!
//! Run: `cargo bench -p kledger-topology --bench pipeline` (add `-- 50000` for fewer intents).

use std::collections::BTreeMap;
use std::io::{BufReader, Cursor};
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use kledger_topology::config::Config;
use kledger_topology::kafka::clients::{DeliveryContext, consumer_config, producer_config};
use kledger_topology::{kafka::topics, pipeline::publish};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, ThreadedProducer};
use rdkafka::{Offset, TopicPartitionList};

mod common;

use common::*;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const RUNS: usize = 3;

/// The pass-through: read a batch, produce every record, await delivery, commit offsets.
fn pass_through(config: &Config, out_topic: &str, want: &BTreeMap<i32, i64>) -> f64 {
    let total: i64 = want.values().sum();
    let mut started: Option<Instant> = None;
    let consumer: BaseConsumer = consumer_config(config, "bench").create().expect("consumer");
    consumer
        .subscribe(&[&config.topics().intents])
        .expect("subscribe");
    let (tx, rx) = channel();
    let producer: ThreadedProducer<DeliveryContext> = producer_config(config, None)
        .create_with_context(DeliveryContext::new(tx))
        .expect("producer");
    let (mut done, mut id) = (0i64, 0u64);
    let max = config.processor.batch.records_max;
    while done < total {
        let mut batch = Vec::with_capacity(max);
        let mut deadline: Option<Instant> = None;
        while batch.len() < max {
            let timeout = deadline.map_or(Duration::from_millis(100), |d| {
                d.saturating_duration_since(Instant::now())
            });
            match consumer.poll(timeout) {
                Some(Ok(m)) => {
                    started.get_or_insert_with(Instant::now);
                    deadline.get_or_insert_with(|| {
                        Instant::now() + Duration::from_millis(config.processor.batch.wait_ms)
                    });
                    batch.push(m.detach());
                }
                _ => break,
            }
        }
        let mut next: BTreeMap<i32, i64> = BTreeMap::new();
        for m in &batch {
            next.insert(m.partition(), m.offset() + 1);
            let mut rec = BaseRecord::with_opaque_to(out_topic, Box::new(id))
                .partition(m.partition())
                .payload(m.payload().unwrap_or_default())
                .key(m.key().unwrap_or_default());
            id += 1;
            loop {
                match producer.send(rec) {
                    Ok(()) => break,
                    Err((_, r)) => {
                        std::thread::sleep(Duration::from_millis(1));
                        rec = r;
                    }
                }
            }
        }
        for _ in 0..batch.len() {
            rx.recv_timeout(Duration::from_secs(60))
                .expect("delivery")
                .result
                .expect("delivered");
        }
        if !next.is_empty() {
            let mut tpl = TopicPartitionList::new();
            for (p, o) in &next {
                tpl.add_partition_offset(&config.topics().intents, *p, Offset::Offset(*o))
                    .expect("tpl");
            }
            consumer.commit(&tpl, CommitMode::Sync).expect("commit");
        }
        done += batch.len() as i64;
    }
    total as f64 / started.map_or(f64::NAN, |t| t.elapsed().as_secs_f64())
}

fn main() {
    kledger_topology::memory::disable_transparent_huge_pages().expect("THP off");
    let Setup {
        rt,
        broker,
        dir,
        base,
        records,
        text,
        want,
    } = setup(200_000);
    let (mut limit, mut ours, mut clear) = (Vec::new(), Vec::new(), Vec::new());
    for run in 0..RUNS {
        // Each run has its own topics (same intents), so no run reads another's outputs.
        let mut c = base.clone();
        c.kafka.topic_prefix = format!("bench{run}");
        rt.block_on(topics::create(
            &c.kafka.bootstrap_servers,
            &c.topics(),
            PARTITIONS,
            1,
            c.limits.kafka_message_bytes(),
        ))
        .expect("topics");
        let t = Instant::now();
        publish::publish(
            &c,
            PARTITIONS,
            &mut BufReader::new(Cursor::new(text.clone())),
            false,
        )
        .expect("publish");
        eprintln!(
            "run {run}: published {} intents in {:.1} s",
            records.len(),
            t.elapsed().as_secs_f64()
        );
        let out = format!("bench{run}.passthrough");
        let out_topics = kledger_topology::kafka::topics::Topics {
            intents: out.clone(),
            ..c.topics()
        };
        rt.block_on(topics::create(
            &c.kafka.bootstrap_servers,
            &out_topics,
            PARTITIONS,
            1,
            c.limits.kafka_message_bytes(),
        ))
        .expect("output topic");

        c.kafka.group_id = format!("bench-pass-{run}");
        let rate = pass_through(&c, &out, &want);
        println!("run {run}: pass-through {rate:.0} intents/s");
        limit.push(rate);

        c.kafka.group_id = format!("bench-kledger-{run}");
        c.state.dir = dir.path().join(format!("state-{run}"));
        c.views.dir = dir.path().join(format!("views-{run}"));
        c.vectors.dir = dir.path().join(format!("vectors-{run}"));
        // Both rates run from the first record: group join and restore are not throughput.
        let rate = processor_run(&rt, &c, &want, records.len());
        println!("run {run}: kledger processor {rate:.0} intents/s");
        ours.push(rate);

        // The same intents decided under rules v3 (content in the clear, no data keys): what
        // sealing costs. Its own topics, so it reads none of the run above.
        let mut v3 = c.clone();
        v3.kafka.topic_prefix = format!("bench{run}v3");
        v3.kafka.group_id = format!("bench-v3-{run}");
        v3.limits.rules = kledger_topology::config::RulesVersion::V3;
        v3.state.dir = dir.path().join(format!("state-v3-{run}"));
        v3.views.dir = dir.path().join(format!("views-v3-{run}"));
        v3.vectors.dir = dir.path().join(format!("vectors-v3-{run}"));
        rt.block_on(topics::create(
            &v3.kafka.bootstrap_servers,
            &v3.topics(),
            PARTITIONS,
            1,
            v3.limits.kafka_message_bytes(),
        ))
        .expect("topics");
        publish::publish(
            &v3,
            PARTITIONS,
            &mut BufReader::new(Cursor::new(text.clone())),
            false,
        )
        .expect("publish");
        let rate = processor_run(&rt, &v3, &want, records.len());
        println!("run {run}: kledger processor, rules v3 (not sealed) {rate:.0} intents/s");
        clear.push(rate);
    }
    let text = kledger_topology::metrics::install()
        .expect("metrics")
        .render();
    for line in text.lines().filter(|l| {
        l.starts_with("kledger_batch_phase_seconds_sum")
            || l.starts_with("kledger_batch_records_count")
    }) {
        println!("  {line}");
    }
    let (l, o, v3) = (median(limit), median(ours), median(clear));
    println!(
        "median over {RUNS} runs, {} intents, {PARTITIONS} partitions: pass-through {l:.0}/s, kledger {o:.0}/s, ratio {:.2} (goal ≥ 0.70)",
        records.len(),
        o / l
    );
    println!(
        "sealing (rules v4) against rules v3: {o:.0}/s vs {v3:.0}/s, ratio {:.2}",
        o / v3
    );
    broker.stop();
}
