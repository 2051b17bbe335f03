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

use kledger_processors::routing::partition_for;
use kledger_schemas::IntentRecord;
use kledger_testkit::{GenConfig, Generator};
use kledger_topology::config::Config;
use kledger_topology::embedded::{EmbeddedBroker, free_port};
use kledger_topology::runtime::clients::{DeliveryContext, consumer_config, producer_config};
use kledger_topology::{publish, runtime, topics};
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::{BaseRecord, ThreadedProducer};
use rdkafka::{Offset, TopicPartitionList};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const PARTITIONS: i32 = 12;
const RUNS: usize = 3;

fn counts(records: &[IntentRecord]) -> BTreeMap<i32, i64> {
    let mut m = BTreeMap::new();
    for r in records {
        *m.entry(partition_for(r.intent.account_id.as_bytes(), PARTITIONS))
            .or_insert(0) += 1;
    }
    m
}

/// Waits until `group` has committed offsets equal to `want` on every partition of `topic`.
fn wait_committed(bootstrap: &str, group: &str, topic: &str, want: &BTreeMap<i32, i64>) {
    let c: BaseConsumer = rdkafka::ClientConfig::new()
        .set("bootstrap.servers", bootstrap)
        .set("group.id", group)
        .set("enable.auto.commit", "false")
        .create()
        .expect("consumer");
    loop {
        let mut tpl = TopicPartitionList::new();
        for p in want.keys() {
            tpl.add_partition(topic, *p);
        }
        if let Ok(got) = c.committed_offsets(tpl, Duration::from_secs(10)) {
            let done = got.elements().iter().all(|e| match e.offset() {
                Offset::Offset(o) => o >= want[&e.partition()],
                _ => false,
            });
            if done {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The pass-through: read a batch, produce every record, await delivery, commit offsets.
fn pass_through(config: &Config, out_topic: &str, want: &BTreeMap<i32, i64>) -> f64 {
    let total: i64 = want.values().sum();
    let mut started: Option<Instant> = None;
    let consumer: BaseConsumer = consumer_config(config).create().expect("consumer");
    consumer
        .subscribe(&[&config.topics().intents])
        .expect("subscribe");
    let (tx, rx) = channel();
    let producer: ThreadedProducer<DeliveryContext> = producer_config(config, None)
        .create_with_context(DeliveryContext::new(tx))
        .expect("producer");
    let (mut done, mut id) = (0i64, 0u64);
    let max = config.processor.batch_records_max;
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
                        Instant::now() + Duration::from_millis(config.processor.batch_wait_ms)
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

/// What the processor's metrics say so far (they accumulate over runs).
#[derive(Debug, Clone, Copy, Default)]
struct Scrape {
    /// Batches collected, and the seconds from each one's first record to its end.
    collects: f64,
    collect_seconds: f64,
    /// Records in batches that are durable with their offsets committed.
    settled: f64,
}

impl Scrape {
    fn now() -> Self {
        let text = kledger_topology::metrics::install()
            .expect("metrics")
            .render();
        let mut s = Self::default();
        for line in text.lines() {
            let Some((name, value)) = line.rsplit_once(' ') else {
                continue;
            };
            let v: f64 = value.parse().unwrap_or(0.0);
            match name {
                "kledger_batch_phase_seconds_count{phase=\"collect\"}" => s.collects = v,
                "kledger_batch_phase_seconds_sum{phase=\"collect\"}" => s.collect_seconds = v,
                "kledger_batch_records_sum" => s.settled = v,
                _ => {}
            }
        }
        s
    }
}

/// The processor's rate over the same window as the pass-through's: from the first record read
/// (the first batch's collect ends and reports how long ago its first record came) to the
/// offsets of the last record committed. Metrics are sampled every 5 ms.
fn processor_rate(before: &Scrape, total: usize) -> f64 {
    let tick = Duration::from_millis(5);
    let started = loop {
        let s = Scrape::now();
        if s.collects > before.collects {
            let back = Duration::from_secs_f64(s.collect_seconds - before.collect_seconds);
            break Instant::now() - back;
        }
        std::thread::sleep(tick);
    };
    while Scrape::now().settled - before.settled < total as f64 {
        std::thread::sleep(tick);
    }
    total as f64 / started.elapsed().as_secs_f64()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

fn main() {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(200_000);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let broker = rt
        .block_on(EmbeddedBroker::start(
            &format!("127.0.0.1:{}", free_port().expect("port")),
            "memory://tansu/",
        ))
        .expect("broker");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut base = Config::default();
    base.kafka.bootstrap_servers = broker.bootstrap();
    base.kafka.partitions = PARTITIONS;
    base.http.listen = String::new();
    // The processor alone is measured: the view sink would share its two cores.
    base.views.enabled = false;
    base.vectors.enabled = false;
    let records: Vec<IntentRecord> = Generator::new(GenConfig {
        seed: 99,
        accounts: 2_000,
        ..GenConfig::default()
    })
    .take(n)
    .filter(|r| {
        serde_json::from_str::<IntentRecord>(&serde_json::to_string(r).expect("json"))
            .ok()
            .as_ref()
            == Some(r)
    })
    .collect();
    let text: String = records
        .iter()
        .map(|r| serde_json::to_string(r).expect("json") + "\n")
        .collect();
    let want = counts(&records);
    let (mut limit, mut ours) = (Vec::new(), Vec::new());
    for run in 0..RUNS {
        // Each run has its own topics (same intents), so no run reads another's outputs.
        let mut c = base.clone();
        c.kafka.topic_prefix = format!("bench{run}");
        rt.block_on(topics::create(
            &c.kafka.bootstrap_servers,
            &c.topics(),
            PARTITIONS,
            1,
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
        let out_topics = kledger_topology::topics::Topics {
            intents: out.clone(),
            ..c.topics()
        };
        rt.block_on(topics::create(
            &c.kafka.bootstrap_servers,
            &out_topics,
            PARTITIONS,
            1,
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
        let before = Scrape::now();
        let running = rt.block_on(runtime::start(c.clone())).expect("start");
        // Both rates run from the first record: group join and restore are not throughput.
        while !running.status.ready() {
            std::thread::sleep(Duration::from_millis(5));
        }
        let rate = processor_rate(&before, records.len());
        wait_committed(
            &c.kafka.bootstrap_servers,
            &c.kafka.group_id,
            &c.topics().intents,
            &want,
        );
        rt.block_on(running.stop()).expect("stop");
        println!("run {run}: kledger processor {rate:.0} intents/s");
        ours.push(rate);
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
    let (l, o) = (median(limit), median(ours));
    println!(
        "median over {RUNS} runs, {} intents, {PARTITIONS} partitions: pass-through {l:.0}/s, kledger {o:.0}/s, ratio {:.2} (goal ≥ 0.70)",
        records.len(),
        o / l
    );
    broker.stop();
}
