//! Bench: kledger's processor versus a pass-through on the same broker, machine and intents.
//!
//! The pass-through is the limit of this pipeline: a consumer group reads the intents in
//! batches of the same size, produces each record to an output topic with the processor's
//! producer settings, awaits delivery and commits offsets — everything the processor does
//! except decide, state and the receipts. On 200k intents (the generator's realistic mix over
//! 2,000 accounts), 3 runs, alternating: the pass-through, the processor with 2 apply threads
//! and with 1 (`processor.apply_threads`), and the processor under rules v3; all of it with
//! the embedded broker in the bench's process (as `kledger run` embeds it) and then in its own
//! process (`kledger broker`). Prints each rate, the medians and the ratios: processor to
//! pass-through (goal ≥ 0.8 in both modes), 2 threads to 1 (goal ≥ 1.6 with the broker in its
//! own process), rules v4 to v3. Every rate runs from the first record read to the commit of
//! the last record's offset, so group joins and restores are not counted (the processor's
//! window is read off its metrics: see `processor_rate`). Each run also prints how busy the
//! machine was over that window (`/proc/stat`, every process: a broker of its own counts) and
//! its CPU µs per intent, and the most CPU per intent the goal leaves the processor (the
//! machine's cores at 0.8 of the pass-through's rate).
//!
//! Run: `cargo bench -p kledger-topology --bench pipeline` (`-- 50000` for fewer intents,
//! `-- in-process` or `-- process` for one broker mode). `-- decide` measures the apply
//! thread's decide and state write alone, without a broker: the same intents in batches of one
//! partition (as the reader hands them), decided by `decide_parallel` against RocksDB with each
//! thread count, each batch's writes then written. `KLEDGER_*` variables set the processor's
//! configuration in every mode (`KLEDGER_PROCESSOR__BATCH__RECORDS_MAX=5000`, say); the
//! pass-through reads batches of the same size.

use std::collections::BTreeMap;
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use kledger_topology::config::Config;
use kledger_topology::kafka::clients::{DeliveryContext, consumer_config, producer_config};
use kledger_topology::kafka::topics;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::Message;
use rdkafka::producer::BaseRecord;
use rdkafka::{Offset, TopicPartitionList};

mod common;

use common::*;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const RUNS: usize = 3;

/// The pass-through: read a batch, produce every record, await delivery, commit offsets.
fn pass_through(config: &Config, out_topic: &str, want: &BTreeMap<i32, i64>) -> Window {
    let total: i64 = want.values().sum();
    let mut started: Option<(Instant, Cpu)> = None;
    let consumer: BaseConsumer = consumer_config(config, "bench").create().expect("consumer");
    consumer
        .subscribe(&[&config.topics().intents])
        .expect("subscribe");
    let (tx, rx) = channel();
    let producer: kledger_topology::kafka::clients::PolledProducer<DeliveryContext> =
        producer_config(config, None)
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
                    started.get_or_insert_with(|| (Instant::now(), Cpu::now()));
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
    let (t, cpu) = started.expect("records were read");
    Window::new(total as usize, t, &cpu)
}

/// Apply thread counts measured, the default (the cores available on the bench's machine) first.
const THREADS: [usize; 2] = [2, 1];

/// One broker mode: `RUNS` runs, each of the pass-through and the processor with each thread
/// count and under rules v3, on their own topics; prints each rate, the medians and ratios.
fn bench(in_process: bool) {
    let Setup {
        rt,
        broker,
        dir,
        base,
        records,
        text,
        want,
    } = setup_with(200_000, in_process);
    let mode = broker.describe();
    println!("== {mode}");
    let mut limit = Vec::new();
    let mut ours: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    let mut clear = Vec::new();
    // Machine CPU µs per intent of each run (start, join and restore included).
    let mut cpu_limit = Vec::new();
    let mut cpu_ours: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for run in 0..RUNS {
        let mut c = base.clone();
        for (i, threads) in THREADS.into_iter().enumerate() {
            // Each processor run has its own topics (same intents): no run reads another's
            // outputs.
            fresh_topics(&rt, &mut c, &format!("bench{run}t{threads}"), &text);
            if i == 0 {
                let out = format!("bench{run}.passthrough");
                let out_topics = kledger_topology::kafka::topics::Topics {
                    intents: out.clone(),
                    ..c.topics()
                };
                rt.block_on(topics::create(
                    &kledger_topology::kafka::clients::client_config(&c),
                    &out_topics,
                    PARTITIONS,
                    1,
                    c.limits.kafka_message_bytes(),
                ))
                .expect("output topic");
                c.kafka.group_id = format!("bench-pass-{run}");
                let w = pass_through(&c, &out, &want);
                println!("run {run}: pass-through {}", w.describe());
                limit.push(w.rate);
                cpu_limit.push(w.cpu_us);
            }
            c.kafka.group_id = format!("bench-kledger-{run}-{threads}");
            c.processor.apply_threads = threads;
            c.state.dir = dir.path().join(format!("state-{run}-{threads}"));
            c.views.dir = dir.path().join(format!("views-{run}-{threads}"));
            c.vectors.dir = dir.path().join(format!("vectors-{run}-{threads}"));
            // Both rates run from the first record: group join and restore are not throughput.
            let w = processor_run(&rt, &c, &want, records.len());
            println!(
                "run {run}: kledger processor, {threads} apply thread(s) {}",
                w.describe()
            );
            ours.entry(threads).or_default().push(w.rate);
            cpu_ours.entry(threads).or_default().push(w.cpu_us);
        }
        // The same intents decided under rules v3 (content in the clear, no data keys), with
        // the default threads: what sealing costs.
        let mut v3 = base.clone();
        fresh_topics(&rt, &mut v3, &format!("bench{run}v3"), &text);
        v3.kafka.group_id = format!("bench-v3-{run}");
        v3.limits.rules = kledger_topology::config::RulesVersion::V3;
        v3.processor.apply_threads = THREADS[0];
        v3.state.dir = dir.path().join(format!("state-v3-{run}"));
        v3.views.dir = dir.path().join(format!("views-v3-{run}"));
        v3.vectors.dir = dir.path().join(format!("vectors-v3-{run}"));
        let w = processor_run(&rt, &v3, &want, records.len());
        println!(
            "run {run}: kledger processor, rules v3 (not sealed) {}",
            w.describe()
        );
        clear.push(w.rate);
    }
    let l = median(limit);
    let o: BTreeMap<usize, f64> = ours.into_iter().map(|(t, v)| (t, median(v))).collect();
    let v3 = median(clear);
    println!(
        "{mode}: median over {RUNS} runs, {} intents, {PARTITIONS} partitions: pass-through {l:.0}/s",
        records.len()
    );
    for (t, r) in &o {
        println!(
            "{mode}: kledger, {t} apply thread(s): {r:.0}/s, ratio to the pass-through {:.2} (goal ≥ 0.80)",
            r / l
        );
    }
    // What CPU the goal leaves: at 0.8 of the pass-through's rate with every core busy.
    let cores = cores();
    let budget = cores / (0.8 * l) * 1e6;
    let pass_cpu = median(cpu_limit);
    for (t, v) in cpu_ours {
        println!(
            "{mode}: machine CPU per intent, {t} apply thread(s): {:.1} µs (pass-through {pass_cpu:.1} µs); 0.8 of the pass-through's rate on {cores} cores leaves at most {budget:.1} µs",
            median(v)
        );
    }
    let (two, one) = (o[&2], o[&1]);
    println!(
        "{mode}: 2 apply threads against 1: {:.2} (goal ≥ 1.6 with the broker in its own process)",
        two / one
    );
    println!(
        "{mode}: sealing (rules v4) against rules v3, 2 apply threads: {two:.0}/s vs {v3:.0}/s, ratio {:.2}",
        two / v3
    );
    drop(rt);
    broker.stop();
}

/// Decide and state write alone (`-- decide`): intents per second for each thread count,
/// median of `RUNS`, and the ratio of 2 threads to 1.
fn decide_only(n: usize) {
    use kledger_topology::kafka::codec::Codec;
    use kledger_topology::kafka::topics::Topics;
    use kledger_topology::pipeline::apply::batch::{ApplyPool, DecideContext, decide_parallel};
    use rdkafka::message::OwnedMessage;

    let records: Vec<kledger_schemas::IntentRecord> =
        kledger_testkit::Generator::new(kledger_testkit::GenConfig {
            seed: 99,
            accounts: 2_000,
            ..kledger_testkit::GenConfig::default()
        })
        .take(n)
        .collect();
    // The defaults, or what `KLEDGER_*` variables set (`KLEDGER_STATE__BLOCK_CACHE_BYTES`).
    let config = Config::load(None, std::env::vars()).expect("config");
    let topics = Topics::new("bench");
    // Each partition's records in order, then cut into batches of one partition.
    let mut by_partition: BTreeMap<i32, Vec<OwnedMessage>> = BTreeMap::new();
    for r in &records {
        let p =
            kledger_processors::routing::partition_for(r.intent.account_id.as_bytes(), PARTITIONS);
        let list = by_partition.entry(p).or_default();
        list.push(OwnedMessage::new(
            Some(kledger_schemas::avro::encode_single_object(&r.intent)),
            Some(r.intent.account_id.clone().into_bytes()),
            topics.intents.clone(),
            rdkafka::Timestamp::CreateTime(r.timestamp),
            p,
            list.len() as i64,
            None,
        ));
    }
    let max = config.processor.batch.records_max;
    let mut batches: Vec<&[OwnedMessage]> = Vec::new();
    let mut cursors: Vec<std::slice::Chunks<'_, OwnedMessage>> =
        by_partition.values().map(|v| v.chunks(max)).collect();
    while !cursors.is_empty() {
        cursors.retain_mut(|c| c.next().map(|b| batches.push(b)).is_some());
    }
    let codec = Codec::single_object();
    let refused = Default::default();
    let cx = DecideContext {
        topics: &topics,
        partitions: PARTITIONS,
        codec: &codec,
        limits: config.limits.decide(Default::default()),
        record_bytes_max: config.limits.record_bytes_max,
        refused: &refused,
    };
    let mut rates: BTreeMap<usize, Vec<f64>> = BTreeMap::new();
    for _ in 0..RUNS {
        for threads in THREADS {
            let pool = ApplyPool::new(threads);
            let dir = tempfile::tempdir().expect("dir");
            let store =
                kledger_state::RocksStore::open(dir.path(), &config.state.rocks()).expect("store");
            let t = Instant::now();
            let mut deciding = Duration::ZERO;
            for batch in &batches {
                let d = Instant::now();
                let (_, writes) =
                    decide_parallel(&store, &Default::default(), batch, &pool, cx).expect("decide");
                deciding += d.elapsed();
                kledger_state::StateStore::write(&store, &writes).expect("write");
            }
            let took = t.elapsed();
            let rate = records.len() as f64 / took.as_secs_f64();
            println!(
                "decide and write, {threads} thread(s): {rate:.0} intents/s ({:.2} s deciding, {:.2} s writing)",
                deciding.as_secs_f64(),
                (took - deciding).as_secs_f64()
            );
            rates.entry(threads).or_default().push(rate);
        }
    }
    let (two, one) = (median(rates[&2].clone()), median(rates[&1].clone()));
    println!(
        "decide and write, median of {RUNS}, {} batches: 1 thread {one:.0}/s, 2 threads {two:.0}/s, 2 against 1: {:.2}",
        batches.len(),
        two / one
    );
}

fn main() {
    kledger_topology::memory::disable_transparent_huge_pages().expect("THP off");
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "decide") {
        let n = args.iter().find_map(|a| a.parse().ok()).unwrap_or(200_000);
        decide_only(n);
        return;
    }
    let modes: &[bool] = if args.iter().any(|a| a == "in-process") {
        &[true]
    } else if args.iter().any(|a| a == "process") {
        &[false]
    } else {
        &[true, false]
    };
    for in_process in modes {
        bench(*in_process);
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
}
