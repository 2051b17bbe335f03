//! What the benches share: the embedded broker and a generated intent stream, waiting for a
//! group's offsets, the processor's rate read off its metrics, medians.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufReader, Cursor};
use std::time::{Duration, Instant};

use kledger_processors::routing::partition_for;
use kledger_schemas::IntentRecord;
use kledger_testkit::{GenConfig, Generator};
use kledger_topology::config::Config;
use kledger_topology::kafka::embedded::{EmbeddedBroker, free_port};
use kledger_topology::{kafka::topics, pipeline::publish};
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::{Offset, TopicPartitionList};

/// Partitions of every bench topic.
pub(crate) const PARTITIONS: i32 = 12;

/// A bench's surroundings.
pub(crate) struct Setup {
    /// The runtime the broker and kledger run on.
    pub rt: tokio::runtime::Runtime,
    /// The embedded broker (memory storage), in this process or its own.
    pub broker: BenchBroker,
    /// Scratch space.
    pub dir: tempfile::TempDir,
    /// A configuration for the broker, with HTTP, views and vectors off.
    pub base: Config,
    /// The intents.
    pub records: Vec<IntentRecord>,
    /// The intents as JSON lines (what `kledger publish` reads).
    pub text: String,
    /// Intents per partition.
    pub want: BTreeMap<i32, i64>,
}

/// The embedded broker (memory storage) a bench runs against.
pub(crate) enum BenchBroker {
    /// In the bench's process, on its runtime (as `kledger run` embeds it).
    InProcess(EmbeddedBroker),
    /// A `kledger broker` child process: the broker's work off the bench's process, as with
    /// a broker of one's own.
    Process(kledger_testkit::kafka::BrokerProcess),
}

impl BenchBroker {
    /// Where clients connect.
    pub(crate) fn bootstrap(&self) -> String {
        match self {
            Self::InProcess(b) => b.bootstrap(),
            Self::Process(b) => b.bootstrap.clone(),
        }
    }

    /// Which one, for the bench's output.
    pub(crate) fn describe(&self) -> &'static str {
        match self {
            Self::InProcess(_) => "broker in the bench's process",
            Self::Process(_) => "broker in its own process",
        }
    }

    /// Stops it.
    pub(crate) fn stop(self) {
        match self {
            Self::InProcess(b) => b.stop(),
            Self::Process(b) => drop(b),
        }
    }
}

/// The embedded broker in this process and `n` generated intents (the generator's realistic
/// mix over 2,000 accounts); `n` is the first numeric argument when given.
pub(crate) fn setup(default_n: usize) -> Setup {
    setup_with(default_n, true)
}

/// [`setup`], the broker in this process (`in_process`) or in a `kledger broker` child.
pub(crate) fn setup_with(default_n: usize, in_process: bool) -> Setup {
    let n: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(default_n);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tempdir");
    let broker = if in_process {
        BenchBroker::InProcess(
            rt.block_on(EmbeddedBroker::start(
                &format!("127.0.0.1:{}", free_port().expect("port")),
                "memory://tansu/",
            ))
            .expect("broker"),
        )
    } else {
        BenchBroker::Process(
            kledger_testkit::kafka::BrokerProcess::start(
                std::path::Path::new(env!("CARGO_BIN_EXE_kledger")),
                dir.path(),
                "memory://tansu/",
            )
            .expect("broker process"),
        )
    };
    // The defaults, or what `KLEDGER_*` variables set (`KLEDGER_PROCESSOR__BATCH__RECORDS_MAX`,
    // say); the broker, the topics' partitions and the sinks are the bench's own.
    let mut base = Config::load(None, std::env::vars()).expect("config");
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
    Setup {
        rt,
        broker,
        dir,
        base,
        records,
        text,
        want,
    }
}

pub(crate) fn counts(records: &[IntentRecord]) -> BTreeMap<i32, i64> {
    let mut m = BTreeMap::new();
    for r in records {
        *m.entry(partition_for(r.intent.account_id.as_bytes(), PARTITIONS))
            .or_insert(0) += 1;
    }
    m
}

/// Waits until `group` has committed offsets equal to `want` on every partition of `topic`.
pub(crate) fn wait_committed(bootstrap: &str, group: &str, topic: &str, want: &BTreeMap<i32, i64>) {
    wait_committed_every(bootstrap, group, topic, want, Duration::from_millis(50));
}

/// [`wait_committed`], asking every `tick`.
pub(crate) fn wait_committed_every(
    bootstrap: &str,
    group: &str,
    topic: &str,
    want: &BTreeMap<i32, i64>,
    tick: Duration,
) {
    let c: BaseConsumer = kledger_topology::kafka::clients::client_at(bootstrap, [])
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
        std::thread::sleep(tick);
    }
}

/// What the processor's metrics say so far (they accumulate over runs).
#[derive(Debug, Clone, Default)]
pub(crate) struct Scrape {
    /// Batches collected, and the seconds from each one's first record to its end.
    collects: f64,
    collect_seconds: f64,
    /// Seconds spent in each phase of a batch, by phase.
    phases: BTreeMap<String, f64>,
}

impl Scrape {
    pub(crate) fn now() -> Self {
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
                _ => {}
            }
            if let Some(phase) = name
                .strip_prefix("kledger_batch_phase_seconds_sum{phase=\"")
                .and_then(|p| p.strip_suffix("\"}"))
            {
                s.phases.insert(phase.to_owned(), v);
            }
        }
        s
    }

    /// The seconds each phase took since `before`, for the run's line.
    pub(crate) fn phases_since(&self, before: &Self) -> String {
        self.phases
            .iter()
            .map(|(p, v)| format!("{p} {:.2}", v - before.phases.get(p).unwrap_or(&0.0)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The processor's rate over the same window as the pass-through's: from the first record read
/// (the first batch's collect ends and reports how long ago its first record came; metrics
/// sampled every 5 ms until then) to the offsets of the last record committed (the group's
/// committed offsets, asked every 10 ms: rendering every metric as often would take most of a
/// core from the processor it measures).
pub(crate) fn processor_rate(
    before: &Scrape,
    c: &Config,
    want: &BTreeMap<i32, i64>,
    total: usize,
) -> Window {
    let tick = Duration::from_millis(5);
    let (started, cpu, first) = loop {
        let s = Scrape::now();
        if s.collects > before.collects {
            let back = Duration::from_secs_f64(s.collect_seconds - before.collect_seconds);
            break (Instant::now() - back, Cpu::now(), s);
        }
        std::thread::sleep(tick);
    };
    wait_committed_every(
        &c.kafka.bootstrap_servers,
        &c.kafka.group_id,
        &c.topics().intents,
        want,
        Duration::from_millis(10),
    );
    let window = Window::new(total, started, &cpu);
    // The phases within the window (from the first batch's collect to the last offset).
    eprintln!(
        "  seconds by batch phase in the window: {}",
        Scrape::now().phases_since(&first)
    );
    window
}

/// A run's rate, and the machine's CPU over (about) the same window.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    /// Intents per second.
    pub rate: f64,
    /// Cores busy on average ([`Cpu`]).
    pub cores: f64,
    /// The machine's busy CPU µs per intent.
    pub cpu_us: f64,
}

impl Window {
    /// `total` intents from `started` to now; the CPU from `cpu` (taken when the window began,
    /// or as soon after as the bench saw it begin) to now.
    pub(crate) fn new(total: usize, started: Instant, cpu: &Cpu) -> Self {
        let (cores, secs) = Cpu::now().since(cpu);
        Self {
            rate: total as f64 / started.elapsed().as_secs_f64(),
            cores,
            cpu_us: secs / total as f64 * 1e6,
        }
    }

    /// `… intents/s; machine busy … cores, … CPU µs per intent`.
    pub(crate) fn describe(&self) -> String {
        format!(
            "{:.0} intents/s; machine busy {:.2} cores, {:.1} CPU µs per intent",
            self.rate, self.cores, self.cpu_us
        )
    }
}

/// A fresh set of topics under `prefix` with the intents published on them.
pub(crate) fn fresh_topics(rt: &tokio::runtime::Runtime, c: &mut Config, prefix: &str, text: &str) {
    c.kafka.topic_prefix = prefix.to_owned();
    rt.block_on(topics::create(
        &kledger_topology::kafka::clients::client_config(c),
        &c.topics(),
        PARTITIONS,
        1,
        c.limits.kafka_message_bytes(),
    ))
    .expect("topics");
    let t = Instant::now();
    publish::publish(
        c,
        PARTITIONS,
        &mut BufReader::new(Cursor::new(text.to_owned())),
        None,
        false,
    )
    .expect("publish");
    eprintln!(
        "{prefix}: published the intents in {:.1} s",
        t.elapsed().as_secs_f64()
    );
}

pub(crate) fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// Runs kledger on `c` until every intent of `want` is decided and its offset committed;
/// returns the processor's rate and CPU over the window of [`processor_rate`] (`total`
/// intents).
pub(crate) fn processor_run(
    rt: &tokio::runtime::Runtime,
    c: &Config,
    want: &BTreeMap<i32, i64>,
    total: usize,
) -> Window {
    let before = Scrape::now();
    let running = rt
        .block_on(kledger_topology::app::start(c.clone()))
        .expect("start");
    // The rate runs from the first record: group join and restore are not throughput.
    while !running.status.ready() {
        std::thread::sleep(Duration::from_millis(5));
    }
    let window = processor_rate(&before, c, want, total);
    wait_committed(
        &c.kafka.bootstrap_servers,
        &c.kafka.group_id,
        &c.topics().intents,
        want,
    );
    rt.block_on(running.stop()).expect("stop");
    window
}

/// The machine's CPU time so far, from the first line of `/proc/stat` (clock ticks of all
/// cores): busy (user, nice, system, irq, softirq, steal) and all (those and idle, iowait).
/// Whatever runs on the machine counts: the bench, a broker in its own process, RocksDB's
/// and librdkafka's threads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Cpu {
    busy: u64,
    all: u64,
    at: Instant,
}

impl Cpu {
    /// Now.
    pub(crate) fn now() -> Self {
        let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
        let ticks: Vec<u64> = stat
            .lines()
            .next()
            .unwrap_or_default()
            .split_whitespace()
            .skip(1)
            .take(8)
            .filter_map(|t| t.parse().ok())
            .collect();
        // user nice system idle iowait irq softirq steal
        let get = |i: usize| ticks.get(i).copied().unwrap_or(0);
        let idle = get(3) + get(4);
        let busy = get(0) + get(1) + get(2) + get(5) + get(6) + get(7);
        Self {
            busy,
            all: busy + idle,
            at: Instant::now(),
        }
    }

    /// Cores busy on average since `before`, and the busy CPU seconds (cores busy × seconds).
    pub(crate) fn since(&self, before: &Cpu) -> (f64, f64) {
        let all = self.all.saturating_sub(before.all).max(1) as f64;
        let busy = self.busy.saturating_sub(before.busy) as f64 / all * cores();
        (busy, busy * self.at.duration_since(before.at).as_secs_f64())
    }
}

/// The cores this machine gives the bench.
pub(crate) fn cores() -> f64 {
    std::thread::available_parallelism().map_or(1, |n| n.get()) as f64
}
