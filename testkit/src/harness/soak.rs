//! Soak: `kledger run` under a steady stream for a bounded time while a second member joins
//! and leaves the group periodically (rebalances); the first process's RSS and open file
//! descriptors are sampled. RSS must stay flat after warm-up; every intent is answered and the
//! oracle holds at the end.

use std::path::Path;
use std::time::{Duration, Instant};

use super::Row;
use super::oracle::{Findings, check};
use crate::kafka::*;

/// Partitions of the soak's topics.
pub const PARTITIONS: i32 = 6;
/// Allowed RSS growth from the second third of the run to the last third.
pub const RSS_GROWTH_MAX: f64 = 0.15;

/// What the soak did and found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SoakFigures {
    /// Seconds run.
    pub seconds: u64,
    /// Intents published.
    pub intents: usize,
    /// Rebalance cycles (a member joined, then left).
    pub rebalances: usize,
    /// (seconds since start, RSS MiB, open fds) samples.
    pub samples: Vec<(u64, f64, usize)>,
    /// RSS growth from the middle third to the last third of the samples.
    pub rss_growth: f64,
    /// Whether every intent was answered.
    pub answered: bool,
    /// The oracle.
    pub oracle: Findings,
}

impl SoakFigures {
    /// The summary row.
    pub fn row(&self) -> Row {
        let curve: Vec<String> = self
            .samples
            .iter()
            .step_by((self.samples.len() / 12).max(1))
            .map(|(t, rss, fds)| format!("{t}s {rss:.0}MiB/{fds}fd"))
            .collect();
        Row {
            check: "soak",
            figures: format!(
                "{} s, {} intents, {} rebalance cycles, all answered {}, commits {} of {} (lost {}, duplicated {}); RSS growth after warm-up {:+.1}% (max {:.0}%); RSS/fds: {}",
                self.seconds,
                self.intents,
                self.rebalances,
                self.answered,
                self.oracle.commits,
                self.oracle.expected,
                self.oracle.lost,
                self.oracle.duplicated,
                self.rss_growth * 100.0,
                RSS_GROWTH_MAX * 100.0,
                curve.join(", ")
            ),
            ok: self.ok(),
        }
    }

    /// Whether every invariant held.
    pub fn ok(&self) -> bool {
        self.answered && self.oracle.ok() && self.rss_growth <= RSS_GROWTH_MAX
    }
}

fn rss_mib(pid: u32) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len().max(1) as f64
}

// Long on purpose: a harness check reads top to bottom as its steps (start, load, rebalances, samples, verdict).
/// Runs `seconds` at `rate` intents/s with a rebalance cycle every `cycle` seconds.
pub fn soak(
    bin: &Path,
    seed: u64,
    seconds: u64,
    rate: usize,
    cycle: u64,
) -> anyhow::Result<SoakFigures> {
    let b = TestBroker::start();
    let dir = tempfile::tempdir()?;
    let c = config(
        &b.bootstrap,
        &dir.path().join("a"),
        PARTITIONS,
        "harness-soak",
    );
    let mut c_b = c.clone();
    c_b.state.dir = dir.path().join("b");
    c_b.views.dir = dir.path().join("b-views");
    c_b.vectors.dir = dir.path().join("b-vectors");
    create_topics(&b, &c);
    let records = stream(seed, 500, rate * seconds as usize);
    // Small caches, write buffers and prefetch queues: they fill early, so RSS growth after
    // the warm-up third is growth beyond every configured bound. Small also keeps the
    // sawtooth of memtables filling and flushing (and of a queue refilling after each
    // rebalance) well under the bound: with 8-16 MiB buffers it alone moved the last third's
    // mean by ±10% and the check failed a sound build (docs/reliability.md).
    let env = [
        ("KLEDGER_VECTORS__ENABLED", "false"),
        ("KLEDGER_STATE__BLOCK_CACHE_BYTES", "4194304"),
        ("KLEDGER_STATE__WRITE_BUFFER_BYTES", "2097152"),
        ("KLEDGER_STATE__DB_WRITE_BUFFER_BYTES", "4194304"),
        ("KLEDGER_VIEWS__CACHE_BYTES", "4194304"),
        ("KLEDGER_VIEWS__MEMTABLE_BYTES", "2097152"),
        (
            "KLEDGER_KAFKA__CONSUMER_PROPERTIES__QUEUED_MAX_MESSAGES_KBYTES",
            "4096",
        ),
    ];
    let (port_a, port_b) = (
        kledger_topology::kafka::embedded::free_port()?,
        kledger_topology::kafka::embedded::free_port()?,
    );
    let mut a = spawn_kledger(bin, &c, port_a, dir.path(), "a", &env);
    wait_ready(&mut a, port_a, dir.path(), "a");
    let mut f = SoakFigures {
        seconds,
        intents: records.len(),
        ..SoakFigures::default()
    };
    let started = Instant::now();
    let mut second: Option<ChildGuard> = None;
    for (i, chunk) in records.chunks(rate.max(1)).enumerate() {
        let tick = started + Duration::from_secs(i as u64);
        if let Some(wait) = tick.checked_duration_since(Instant::now()) {
            std::thread::sleep(wait);
        }
        publish_all(&c, chunk);
        let t = i as u64;
        // A member joins in the first half of each cycle and leaves in the second.
        if cycle > 0 && t % cycle == 1 && second.is_none() {
            second = Some(spawn_kledger(
                bin,
                &c_b,
                port_b,
                dir.path(),
                &format!("b{t}"),
                &env,
            ));
        } else if cycle > 0
            && t % cycle == cycle / 2 + 1
            && let Some(child) = second.take()
        {
            stop(child);
            f.rebalances += 1;
        }
        f.samples.push((t, rss_mib(a.id()), fds(a.id())));
    }
    if let Some(child) = second.take() {
        stop(child);
        f.rebalances += 1;
    }
    f.answered = answered(&c, &records, Duration::from_secs(300), || true).is_ok();
    stop(a);
    let rss: Vec<f64> = f.samples.iter().map(|s| s.1).collect();
    let third = rss.len() / 3;
    if third > 0 {
        let middle = mean(&rss[third..2 * third]);
        let last = mean(&rss[2 * third..]);
        f.rss_growth = (last - middle) / middle.max(1.0);
    }
    let (want, _) = expected(&c, &records, PARTITIONS);
    f.oracle = check(&commits(&b.bootstrap, &c), &want);
    Ok(f)
}
