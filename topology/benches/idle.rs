//! An idle kledger rests (issue 44): `kledger run` on its embedded default (the broker in its
//! process, the local model, every role), fed nothing. After it settles, its CPU time over a
//! window (default 60 s) is read from /proc, in all and by thread name; then, to show resting
//! costs nothing when work comes, single intents go through the ingress and the time from each
//! one's publish to its receipt is measured.
//!
//! `cargo bench -p kledger-topology --bench idle` (`-- SECONDS` for another window). Goal:
//! under 0.05 of a core.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use kledger_schemas::{Op, WriteReason};
use kledger_testkit::build::{fact, intent};
use kledger_testkit::kafka::{http_request, spawn_with_env, stop, wait_ready};
use kledger_topology::kafka::embedded::free_port;

const TOKEN: &str = "idle-bench-token-0123456789";
const ACCOUNT: &str = "t_bench/user/u_idle";
/// The goal: an idle kledger uses less than this share of one core.
const CORES_MAX: f64 = 0.05;

/// Clock ticks per second of /proc's CPU times (Linux's USER_HZ).
const TICKS_PER_S: f64 = 100.0;

/// CPU ticks (user + system) of `pid`, in all and by thread name.
fn ticks(pid: u32) -> (u64, BTreeMap<String, u64>) {
    let of = |stat: &str| -> Option<(String, u64)> {
        let (left, right) = stat.rsplit_once(')')?;
        let name = left.split_once('(')?.1.to_owned();
        let f: Vec<&str> = right.split_whitespace().collect();
        // After the name: state is field 3, utime field 14 and stime 15 (1-based, of the line).
        let t = f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?;
        Some((name, t))
    };
    let total = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| of(&s))
        .map_or(0, |(_, t)| t);
    let mut by = BTreeMap::new();
    if let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for t in tasks.flatten() {
            if let Some((name, n)) = std::fs::read_to_string(t.path().join("stat"))
                .ok()
                .and_then(|s| of(&s))
            {
                // Numbered threads of one pool count as one name.
                let name = name
                    .trim_end_matches(|c: char| c.is_ascii_digit())
                    .to_owned();
                *by.entry(name).or_insert(0) += n;
            }
        }
    }
    (total, by)
}

fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn main() {
    let window: u64 = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(60);
    let bin = Path::new(env!("CARGO_BIN_EXE_kledger"));
    let dir = tempfile::tempdir().expect("tempdir");
    let (port, broker_port) = (free_port().expect("port"), free_port().expect("port"));
    let env: Vec<(String, String)> = [
        ("KLEDGER_HTTP__LISTEN", format!("127.0.0.1:{port}")),
        (
            "KLEDGER_EMBEDDED__LISTEN",
            format!("127.0.0.1:{broker_port}"),
        ),
        ("KLEDGER_API__PRINCIPALS__BENCH__TOKEN", TOKEN.into()),
        (
            "KLEDGER_API__PRINCIPALS__BENCH__TENANT_ID",
            "t_bench".into(),
        ),
        ("KLEDGER_API__PRINCIPALS__BENCH__OWNER_KIND", "user".into()),
        ("KLEDGER_API__PRINCIPALS__BENCH__OWNER_ID", "u_idle".into()),
        ("KLEDGER_LOG__FILTER", "warn".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let mut k = spawn_with_env(bin, &env, &[], dir.path(), "kledger");
    wait_ready(&mut k, port, dir.path(), "kledger");
    let pid = k.id();
    // Settle: restores end, consumers join, the first fetches are answered.
    std::thread::sleep(Duration::from_secs(15));
    let (before, by_before) = ticks(pid);
    let started = Instant::now();
    std::thread::sleep(Duration::from_secs(window));
    let (after, by_after) = ticks(pid);
    let secs = started.elapsed().as_secs_f64();
    let cores = (after - before) as f64 / TICKS_PER_S / secs;
    let mut threads: Vec<(String, f64)> = by_after
        .iter()
        .map(|(name, t)| {
            let t0 = by_before.get(name).copied().unwrap_or(0);
            (name.clone(), (t - t0) as f64 / TICKS_PER_S / secs)
        })
        .filter(|(_, c)| *c > 0.0)
        .collect();
    threads.sort_by(|a, b| b.1.total_cmp(&a.1));
    println!(
        "idle: {cores:.4} of a core over {secs:.0} s (goal < {CORES_MAX}: {:.2} of the limit)",
        cores / CORES_MAX
    );
    for (name, c) in threads.iter().take(8) {
        println!("  {name:<20} {c:.4}");
    }
    // Work after rest: single intents, each waited for.
    let auth = format!("Bearer {TOKEN}");
    let mut receipt_ms = Vec::new();
    // The first makes the ingress's producer and receipts reader (once per process): not
    // counted.
    for n in 0..21 {
        std::thread::sleep(Duration::from_millis(500));
        let it = intent(
            ACCOUNT,
            &format!("idle-{n}"),
            WriteReason::DirectUserStatement,
            n,
            vec![Op::Assert(fact(&format!("Idle bench fact number {n}")))],
        );
        let t = Instant::now();
        let (status, body) = http_request(
            port,
            "POST",
            "/v1/intents?wait_ms=10000",
            &[("Authorization", auth.as_str())],
            &serde_json::to_string(&it).expect("json"),
        );
        assert_eq!(status, 200, "{body}");
        if n > 0 {
            receipt_ms.push(t.elapsed().as_secs_f64() * 1e3);
        }
    }
    println!(
        "an intent after rest, publish to receipt over HTTP: p50 {:.1} ms, max {:.1} ms ({} intents, 0.5 s apart, after one that starts the ingress)",
        quantile(&mut receipt_ms.clone(), 0.5),
        quantile(&mut receipt_ms, 0.99),
        20
    );
    stop(k);
}
