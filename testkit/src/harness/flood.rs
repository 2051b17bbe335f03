//! Flood: one ordinary token tries to stall the ledger for everyone (issue 44).
//!
//! `kledger run` on its embedded default (the broker in its process, as the README runs it)
//! decides a stream for other accounts twice: once undisturbed, once while one principal holds
//! [`HELD_WAITS`] reads waiting for a commit that will never come (`min_commit_seq` far ahead,
//! `wait_ms` 30 s, each socket closed right after sending or left open) and [`SLOW_SOCKETS`]
//! requests whose answers are never read. Before kledger bounded waits per caller and made them
//! asynchronous, about 1,000 such waits held every blocking thread of the runtime the broker ran
//! on: its group timed out and nothing was decided for anyone for minutes.
//!
//! Holds: the flooded stream decides at least [`RATE_RATIO_MIN`] of the undisturbed rate (the
//! mean of an undisturbed run before the flood and one after it: one run's rate moves by a
//! quarter with whatever else a two-core machine does, and so would a ratio of two); every
//! intent is answered; `/readyz`, probed every 250 ms, never says not ready (the processor is
//! well) and never misses two probes in a row (a probe unanswered within 2 s on a loaded
//! machine is what a load balancer's failure threshold, 2 or 3 in a row by default, absorbs);
//! the flood's own requests are refused with `429` beyond the principal's share rather than
//! queued. Then the whole process is stopped (SIGSTOP) past its groups' session timeout and
//! resumed: its members are expired and must get their partitions back and decide again.

use std::path::Path;
use std::time::{Duration, Instant};

use super::Row;
use crate::kafka::*;

/// Reads held waiting for a commit that never comes.
pub const HELD_WAITS: usize = 2_000;
/// Requests whose answers are never read.
pub const SLOW_SOCKETS: usize = 2_000;
/// The least share of the undisturbed rate the flooded stream must keep.
pub const RATE_RATIO_MIN: f64 = 0.8;
/// Partitions of the embedded default's topics here.
const PARTITIONS: &str = "4";
/// The flooding principal's token.
const TOKEN: &str = "flood-token-mallory-0123456789";

/// What the flood check did and found.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FloodFigures {
    /// Intents per run.
    pub intents: usize,
    /// Undisturbed rates, intents/s (publish to the last answer): the run before the flood and
    /// the one after it.
    pub rate_quiet: (f64, f64),
    /// Rate under the flood.
    pub rate_flooded: f64,
    /// Whether every intent of every run was answered.
    pub answered: bool,
    /// The flood's requests by the status they got (0: no answer read).
    pub flood_statuses: std::collections::BTreeMap<u16, usize>,
    /// `/readyz` probes during the flood, and how many did not answer `200` ready.
    pub readyz: (usize, usize),
    /// Of those, how many answered, saying not ready (the rest went unanswered for 2 s).
    pub readyz_said_not_ready: usize,
    /// The longest run of consecutive probes that did not answer ready.
    pub readyz_bad_run: usize,
    /// What the first probes that did not answer ready got (status and body, or no answer).
    pub readyz_bad: Vec<String>,
    /// After the whole process (broker included) was stopped past its group's session timeout
    /// and resumed: seconds until a new stream was decided (its members expired, rejoined and
    /// got their partitions back), if it was.
    pub stall_recovered_s: Option<f64>,
    /// Rebalances the processor and sinks went through after the stall (their members were
    /// expired and rejoined).
    pub stall_rebalances: f64,
}

/// How long the stall step stops the process (past the groups' 10 s session timeout).
pub const STALL: Duration = Duration::from_secs(15);
/// How long after the stall a new stream must be decided.
pub const STALL_RECOVERY_MAX: Duration = Duration::from_secs(90);

impl FloodFigures {
    /// The summary row.
    pub fn row(&self) -> Row {
        Row {
            check: "flood",
            figures: format!(
                "{} intents for others decided at {:.0}/s undisturbed (the mean of {:.0}/s before the flood and {:.0}/s after) and {:.0}/s under one token's {} held waits and {} unread answers (ratio {:.2}, min {RATE_RATIO_MIN}); all answered {}; flood answers by status {:?}; /readyz not ready {} of {} (said so {}, at most {} in a row){}; stopped {} s past the session timeout, deciding again after {} ({} rebalances)",
                self.intents,
                self.quiet(),
                self.rate_quiet.0,
                self.rate_quiet.1,
                self.rate_flooded,
                HELD_WAITS,
                SLOW_SOCKETS,
                self.ratio(),
                self.answered,
                self.flood_statuses,
                self.readyz.1,
                self.readyz.0,
                self.readyz_said_not_ready,
                self.readyz_bad_run,
                if self.readyz_bad.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", self.readyz_bad.join("; "))
                },
                STALL.as_secs(),
                self.stall_recovered_s
                    .map_or("never".to_owned(), |t| format!("{t:.1} s")),
                self.stall_rebalances,
            ),
            ok: self.ok(),
        }
    }

    /// The undisturbed rate: the mean of the runs before and after the flood.
    pub fn quiet(&self) -> f64 {
        (self.rate_quiet.0 + self.rate_quiet.1) / 2.0
    }

    /// The flooded rate over the undisturbed one.
    pub fn ratio(&self) -> f64 {
        self.rate_flooded / self.quiet().max(f64::MIN_POSITIVE)
    }

    /// Whether every invariant held.
    pub fn ok(&self) -> bool {
        self.answered
            && self.ratio() >= RATE_RATIO_MIN
            && self.readyz.0 > 0
            && self.readyz_said_not_ready == 0
            && self.readyz_bad_run <= 1
            && self.flood_statuses.get(&429).copied().unwrap_or(0) > 0
            && self.stall_recovered_s.is_some()
    }
}

/// The sum of the series of the metric `name` on the listener at `port`.
fn metric_sum(port: u16, name: &str) -> f64 {
    get(port, "/metrics")
        .map(|(_, text)| {
            text.lines()
                .filter(|l| {
                    l.strip_prefix(name)
                        .is_some_and(|r| r.starts_with('{') || r.starts_with(' '))
                })
                .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .sum()
        })
        .unwrap_or(0.0)
}

/// The sum of `kledger_intents_total` on the listener at `port`.
fn answered_total(port: u16) -> f64 {
    metric_sum(port, "kledger_intents_total")
}

/// Publishes `records` to the embedded default of the kledger in `dir` (logging in as it does)
/// and waits until `before + records.len()` intents are answered: the rate, publish to last answer.
fn decide(
    bin: &Path,
    dir: &Path,
    env: &[(String, String)],
    port: u16,
    records: &[kledger_schemas::IntentRecord],
    before: f64,
) -> anyhow::Result<(f64, bool)> {
    let started = Instant::now();
    super::publish_with(bin, dir, env, records)?;
    let target = before + records.len() as f64;
    let deadline = Instant::now() + Duration::from_secs(300);
    while answered_total(port) < target {
        if Instant::now() > deadline {
            return Ok((0.0, false));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok((records.len() as f64 / started.elapsed().as_secs_f64(), true))
}

/// One flood request: sent, then its socket dropped at once (`hang_up`) or kept unread until
/// the flood ends. The status it got, when one was read (0 otherwise).
async fn flood_request(port: u16, head: String, hang_up: bool, hold: Duration) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut s) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
        return 0;
    };
    if s.write_all(head.as_bytes()).await.is_err() || hang_up {
        return 0;
    }
    // Unread for the flood's length: only the status line is peeked at, at the end.
    tokio::time::sleep(hold).await;
    let mut buf = [0u8; 16];
    match tokio::time::timeout(Duration::from_millis(200), s.read(&mut buf)).await {
        Ok(Ok(n)) if n >= 12 => std::str::from_utf8(&buf[9..12])
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(0),
        _ => 0,
    }
}

// Long on purpose: a harness check reads top to bottom as its steps (start, warm-up, quiet run,
// flooded run, verdict).
/// Runs the flood check: `intents` per run over 200 accounts of other tenants.
pub fn flood(bin: &Path, seed: u64, intents: usize) -> anyhow::Result<FloodFigures> {
    let dir = tempfile::tempdir()?;
    let (broker_port, port) = (
        kledger_topology::kafka::embedded::free_port()?,
        kledger_topology::kafka::embedded::free_port()?,
    );
    let env: Vec<(String, String)> = [
        (
            "KLEDGER_EMBEDDED__LISTEN",
            format!("127.0.0.1:{broker_port}"),
        ),
        ("KLEDGER_KAFKA__PARTITIONS", PARTITIONS.to_owned()),
        ("KLEDGER_HTTP__LISTEN", format!("127.0.0.1:{port}")),
        // The processor and the view sink: what others' reads and writes need. The vector
        // sink's embedding would weigh on both runs alike.
        ("KLEDGER_VECTORS__ENABLED", "false".to_owned()),
        ("KLEDGER_API__PRINCIPALS__MALLORY__TOKEN", TOKEN.to_owned()),
        (
            "KLEDGER_API__PRINCIPALS__MALLORY__TENANT_ID",
            "t_flood".to_owned(),
        ),
        (
            "KLEDGER_API__PRINCIPALS__MALLORY__OWNER_KIND",
            "user".to_owned(),
        ),
        (
            "KLEDGER_API__PRINCIPALS__MALLORY__OWNER_ID",
            "u_mallory".to_owned(),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let log = std::fs::File::create(dir.path().join("kledger.log"))?;
    let child = std::process::Command::new(bin)
        .arg("run")
        .envs(env.iter().cloned())
        .current_dir(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()?;
    let mut child = ChildGuard::new(child);
    wait_ready(&mut child, port, dir.path(), "kledger");
    let all = stream(seed, 200, 4 * intents);
    let (warm, rest) = all.split_at(intents);
    let (quiet, rest) = rest.split_at(intents);
    let (flooded, quiet_after) = rest.split_at(intents);
    let mut f = FloodFigures {
        intents,
        ..FloodFigures::default()
    };
    // Warm-up (not measured), then the undisturbed run.
    let (_, ok_warm) = decide(bin, dir.path(), &env, port, warm, 0.0)?;
    let (rate, ok_quiet) = decide(bin, dir.path(), &env, port, quiet, intents as f64)?;
    f.rate_quiet.0 = rate;
    // The flood: held waits (half hung up at once, half left open) and unread answers.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()?;
    let hold = Duration::from_secs(30);
    let wait_head = |path: &str| {
        format!(
            "GET {path}?min_commit_seq=9000000000000000&wait_ms=30000 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\r\n"
        )
    };
    let search = format!(
        "POST /v1/search HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 20\r\n\r\n{{\"query\":\"anything\"}}"
    );
    let export =
        format!("GET /v1/export HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n\r\n");
    let mut tasks = Vec::new();
    for i in 0..HELD_WAITS {
        let path = ["/v1/profile", "/v1/entities/user/timeline"][i % 2];
        tasks.push(rt.spawn(flood_request(port, wait_head(path), i % 2 == 0, hold)));
    }
    for i in 0..SLOW_SOCKETS {
        let head = if i % 2 == 0 { &search } else { &export };
        tasks.push(rt.spawn(flood_request(port, head.clone(), false, hold)));
    }
    // /readyz while the flooded stream is decided.
    let ready_probe = {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let s = stop.clone();
        let h = std::thread::spawn(move || {
            let (mut n, mut bad, mut why) = (0, 0, Vec::new());
            let (mut said, mut run, mut longest) = (0, 0, 0);
            while !s.load(std::sync::atomic::Ordering::Relaxed) {
                n += 1;
                let asked = Instant::now();
                match get(port, "/readyz") {
                    Some((200, body)) if body.contains("\"ready\":true") => run = 0,
                    answer => {
                        bad += 1;
                        run += 1;
                        longest = usize::max(longest, run);
                        said += usize::from(answer.is_some());
                        if why.len() < 3 {
                            why.push(match answer {
                                Some((status, body)) => format!("{status} {body}"),
                                None => {
                                    format!("no answer after {} ms", asked.elapsed().as_millis())
                                }
                            });
                        }
                    }
                }
                std::thread::sleep(Duration::from_millis(250));
            }
            (n, bad, why, said, longest)
        });
        (stop, h)
    };
    std::thread::sleep(Duration::from_secs(1));
    let (rate, ok_flooded) = decide(bin, dir.path(), &env, port, flooded, 2.0 * intents as f64)?;
    f.rate_flooded = rate;
    ready_probe
        .0
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let (probes, bad, why, said, longest) =
        ready_probe.1.join().unwrap_or((0, 1, Vec::new(), 1, 1));
    f.readyz = (probes, bad);
    f.readyz_bad = why;
    f.readyz_said_not_ready = said;
    f.readyz_bad_run = longest;
    for t in tasks {
        let status = rt.block_on(t).unwrap_or(0);
        *f.flood_statuses.entry(status).or_default() += 1;
    }
    // Undisturbed again, the flood's sockets closed.
    let (rate, ok_after) = decide(
        bin,
        dir.path(),
        &env,
        port,
        quiet_after,
        3.0 * intents as f64,
    )?;
    f.rate_quiet.1 = rate;
    f.answered = ok_warm && ok_quiet && ok_flooded && ok_after;
    // A member whose heartbeats stall gets its partitions back when it recovers: the whole
    // process stopped past the session timeout (its groups expire it), then resumed.
    let pid = child.id().to_string();
    let signal = |sig: &str| {
        std::process::Command::new("kill")
            .args([sig, pid.as_str()])
            .status()
            .map(|s| s.success())
    };
    let rebalances = metric_sum(port, "kledger_rebalances_total");
    if signal("-STOP")? {
        std::thread::sleep(STALL);
        signal("-CONT")?;
        let resumed = Instant::now();
        let after = stream(seed ^ 0x57A11, 50, 200);
        let before = answered_total(port);
        let (_, ok) = decide(bin, dir.path(), &env, port, &after, before)?;
        f.stall_recovered_s =
            (ok && resumed.elapsed() < STALL_RECOVERY_MAX).then(|| resumed.elapsed().as_secs_f64());
        f.stall_rebalances = metric_sum(port, "kledger_rebalances_total") - rebalances;
    }
    stop(child);
    Ok(f)
}
