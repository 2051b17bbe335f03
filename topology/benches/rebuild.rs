//! Bench: rebuilding projections and verifying a replay, against their limits, on the same
//! broker, machine and outbox.
//!
//! Per run (3 runs, medians): the processor decides the intents (its rate is the live rate);
//! then (a) a raw `read_committed` consumption of the whole outbox (every partition from 0 to
//! its end, payloads touched) — the limit of a rebuild; (b) `kledger rebuild views` and
//! (c) `kledger rebuild qdrant` (the embedded engine, the hashing embedder) over the same
//! outbox; (d) `kledger replay verify` over the intents topic. Printed: each rate, the
//! rebuild / raw-read ratios (goal ≥ 0.5) and the replay-verify / live-processor ratio.
//!
//! Run: `cargo bench -p kledger-topology --bench rebuild` (add `-- 50000` for fewer intents;
//! naming `views`, `qdrant` or `verify` after `--` runs only those, with the processor run and
//! the raw read they are measured against).

use std::time::{Duration, Instant};

use kledger_topology::config::Config;
use kledger_topology::pipeline::rebuild::{ProjectionKind, rebuild};
use kledger_topology::{kafka::clients, pipeline::replay};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

mod common;

use common::*;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const RUNS: usize = 3;

/// Reads every outbox partition from 0 to its end with `read_committed`; (records, rate).
fn raw_read(c: &Config) -> (u64, f64) {
    let consumer: BaseConsumer = clients::restore_config(c)
        .set("group.id", "bench-raw-read")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    for p in 0..PARTITIONS {
        tpl.add_partition_offset(&c.topics().outbox, p, Offset::Offset(0))
            .expect("tpl");
    }
    consumer.assign(&tpl).expect("assign");
    let started = Instant::now();
    let (mut n, mut bytes, mut open) = (0u64, 0u64, PARTITIONS);
    while open > 0 {
        match consumer.poll(Duration::from_millis(500)) {
            Some(Ok(m)) => {
                n += 1;
                bytes += m.payload().map_or(0, |p| p.len() as u64);
            }
            Some(Err(KafkaError::PartitionEOF(_))) => open -= 1,
            Some(Err(e)) => panic!("raw read: {e}"),
            None => {}
        }
    }
    std::hint::black_box(bytes);
    (n, n as f64 / started.elapsed().as_secs_f64())
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, f64) {
    let t = Instant::now();
    let v = f();
    (v, t.elapsed().as_secs_f64())
}

/// Whether the arguments select `part` (no part named: every part).
fn selected(part: &str) -> bool {
    const PARTS: [&str; 3] = ["views", "qdrant", "verify"];
    let named: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| PARTS.contains(&a.as_str()))
        .collect();
    named.is_empty() || named.iter().any(|a| a == part)
}

fn main() {
    kledger_topology::memory::disable_transparent_huge_pages().expect("THP off");
    // RUST_LOG=info shows the rebuilds' own log lines (where their time went).
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    let Setup {
        rt,
        broker,
        dir,
        base,
        records,
        text,
        want,
    } = setup(100_000);
    let (mut live, mut raw, mut views, mut vectors, mut verify) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut commits = 0;
    for run in 0..RUNS {
        let mut c = base.clone();
        c.kafka.group_id = format!("bench-rebuild-{run}");
        c.state.dir = dir.path().join(format!("state-{run}"));
        c.views.dir = dir.path().join(format!("views-{run}"));
        c.vectors.dir = dir.path().join(format!("vectors-{run}"));
        fresh_topics(&rt, &mut c, &format!("rebuild{run}"), &text);
        // Both rates run from the first record: group join and restore are not throughput.
        let rate = processor_run(&rt, &c, &want, records.len()).rate;
        println!("run {run}: live processor {rate:.0} intents/s");
        live.push(rate);

        let (n, r) = raw_read(&c);
        commits = n;
        println!("run {run}: raw read_committed read of the outbox: {n} records, {r:.0}/s");
        raw.push(r);

        for (part, projection, rates) in [
            ("views", ProjectionKind::Views, &mut views),
            ("qdrant", ProjectionKind::Vectors, &mut vectors),
        ] {
            if !selected(part) {
                continue;
            }
            let (report, s) = timed(|| rebuild(&c, projection, false).expect(part));
            let r = report.records as f64 / s;
            println!(
                "run {run}: rebuild {part}: {} records, {r:.0}/s",
                report.records
            );
            rates.push(r);
        }

        if !selected("verify") {
            continue;
        }
        let scratch = dir.path().join(format!("replay-{run}"));
        let (report, s) = timed(|| {
            replay::verify_topics(&c, &Default::default(), &scratch, false).expect("verify")
        });
        assert_eq!(report.difference, None, "replay verify passes");
        let r = report.counts.intents as f64 / s;
        println!(
            "run {run}: replay verify: {} intents, {r:.0}/s",
            report.counts.intents
        );
        verify.push(r);
    }
    let (live, raw) = (median(live), median(raw));
    println!(
        "median over {RUNS} runs, {} intents, {commits} outbox records, {PARTITIONS} partitions:",
        records.len()
    );
    println!("  raw read {raw:.0}/s");
    for (part, rates) in [("views", views), ("qdrant", vectors)] {
        if !rates.is_empty() {
            let rate = median(rates);
            println!(
                "  rebuild {part} {rate:.0}/s, ratio {:.2} (goal ≥ 0.50)",
                rate / raw
            );
        }
    }
    if !verify.is_empty() {
        let verify = median(verify);
        println!(
            "  replay verify {verify:.0} intents/s vs live processor {live:.0}/s: ratio {:.2}",
            verify / live
        );
    }
    broker.stop();
}
