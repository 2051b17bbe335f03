//! The reliability harness: crash loops, bad input and the outbox oracle, each printing its
//! figures as a row of one summary table.
//!
//! `cargo run -p kledger-testkit --bin harness -- [short|long]` (build `kledger` first: the
//! harness runs the binary as child processes it kills; `scripts/dev.sh harness` does both).
//! The short profile also runs in CI (`topology/tests/harness.rs`).
//!
//! - [`crash`]: kill -9 the processor at random points during a seeded stream; the oracle reads
//!   the outbox back and checks every accepted action committed exactly once, commit_seq
//!   gapless per account, head hashes chained, state digest equal to an uninterrupted run.
//!   The early-kill loop kills it in the first seconds after each start with the broker in
//!   its own process, then checks the group owns every partition soon after the last start.
//! - [`limits`]: the largest valid intent of each op kind and a whole-account purge of a large
//!   account through the processor: every intent answered as the reference answers it, every
//!   commit within the record budget, the processor alive throughout.
//! - [`faults`]: librdkafka's mock cluster injects request errors (produce, fetch, commit,
//!   heartbeat, transactions), moves leaders and coordinators and takes a broker down and up,
//!   in both delivery modes; the processor keeps going and the oracle holds.
//! - [`outage`]: the broker down for a minute mid-stream on the mock cluster: the read API
//!   answers throughout, the processor reports itself degraded and resumes by itself.
//! - [`soak`]: a bounded run at a steady rate with a member joining and leaving the group
//!   periodically; RSS and open files sampled, RSS flat after warm-up.
//! - [`bad`]: the bad-input corpus ([`crate::badinput`]) interleaved with a valid stream: every
//!   bad record gets its dead letter or rejected receipt with its code, nothing panics, every
//!   valid intent is answered as an uninterrupted offline run answers it.
//! - [`flood`]: one ordinary token floods the embedded default with held waits and unread
//!   answers while it decides a stream for others: their rate holds, `/readyz` stays true.
//! - [`hosts`]: three hosts on one broker process with a SCRAM login: every account reads the
//!   same on every host; a host killed while idle and one killed mid-stream: every partition
//!   owned again within the bound, nothing lost or duplicated; both rejoin.
//! - [`access`]: random principals query a world of random rows through search_knowledge,
//!   read_playbook, get_entity_timeline and profile; nothing the rules forbid is shown,
//!   restricted rows never reach the vector index, read_playbook answers missing and foreign
//!   ids alike.

pub mod access;
pub mod bad;
pub mod crash;
pub mod faults;
pub mod flood;
pub mod hosts;
pub mod limits;
pub mod oracle;
pub mod outage;
pub mod soak;

use std::fmt;

/// How much each check does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Profile {
    /// The profile's name.
    pub name: &'static str,
    /// Intents of the crash loop.
    pub crash_intents: usize,
    /// Accounts of the crash loop.
    pub crash_accounts: usize,
    /// SIGKILLs of the crash loop.
    pub crash_kills: usize,
    /// SIGKILLs of the early-kill crash loop (in the first seconds after each start, the
    /// broker in its own process).
    pub early_kills: usize,
    /// Rows of the account the record-budget check purges whole.
    pub purge_rows: usize,
    /// Seconds the broker is down while kledger serves.
    pub outage_secs: u64,
    /// Valid intents around the bad-input corpus.
    pub bad_valid_intents: usize,
    /// Read-API queries of the access check.
    pub access_queries: u64,
    /// Intents per run of the flood check (three runs: warm-up, undisturbed, flooded).
    pub flood_intents: usize,
    /// Intents per stream of the multi-host check (two streams).
    pub hosts_intents: usize,
    /// Seconds one host is cut off the broker in the multi-host check (where network
    /// namespaces can be made).
    pub hosts_cut_secs: u64,
    /// Intents per broker-fault run.
    pub fault_intents: usize,
    /// Seconds of the soak.
    pub soak_seconds: u64,
    /// Intents per second of the soak.
    pub soak_rate: usize,
    /// Seconds per rebalance cycle of the soak.
    pub soak_cycle: u64,
    /// The seed of every stream.
    pub seed: u64,
}

/// The CI profile: minutes on two cores.
pub const SHORT: Profile = Profile {
    name: "short",
    crash_intents: 20_000,
    crash_accounts: 200,
    crash_kills: 5,
    early_kills: 12,
    purge_rows: 100_000,
    // Past the processor's degraded bound (10 s) twice over; longer only waited.
    outage_secs: 30,
    bad_valid_intents: 2_000,
    access_queries: 100_000,
    flood_intents: 3_000,
    hosts_intents: 600,
    // The others own the cut host's partitions after 11–14 s: a longer cut only waited.
    hosts_cut_secs: 30,
    fault_intents: 1_200,
    soak_seconds: 60,
    soak_rate: 200,
    soak_cycle: 20,
    seed: 61,
};

/// The profile: 100k intents over 1,000 accounts, 20 kills.
pub const LONG: Profile = Profile {
    name: "long",
    crash_intents: 100_000,
    crash_accounts: 1_000,
    crash_kills: 20,
    early_kills: 24,
    purge_rows: 300_000,
    outage_secs: 180,
    bad_valid_intents: 20_000,
    access_queries: 500_000,
    flood_intents: 20_000,
    hosts_intents: 5_000,
    hosts_cut_secs: 120,
    fault_intents: 4_000,
    soak_seconds: 600,
    soak_rate: 500,
    soak_cycle: 60,
    seed: 61,
};

/// One row of the summary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Which check.
    pub check: &'static str,
    /// What it did and found.
    pub figures: String,
    /// Whether every invariant held.
    pub ok: bool,
}

/// The summary table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Summary {
    /// Rows, in run order.
    pub rows: Vec<Row>,
    /// Each check run and its wall time, in run order.
    pub took: Vec<(&'static str, std::time::Duration)>,
}

impl Summary {
    /// Whether every check passed.
    pub fn ok(&self) -> bool {
        self.rows.iter().all(|r| r.ok)
    }
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let w = self
            .rows
            .iter()
            .map(|r| r.check.len())
            .max()
            .unwrap_or(5)
            .max(5);
        writeln!(f, "| {:w$} | result | figures |", "check")?;
        writeln!(f, "|{}|--------|---------|", "-".repeat(w + 2))?;
        for r in &self.rows {
            writeln!(
                f,
                "| {:w$} | {:6} | {} |",
                r.check,
                if r.ok { "ok" } else { "FAILED" },
                r.figures
            )?;
        }
        let took: Vec<String> = self
            .took
            .iter()
            .map(|(c, d)| format!("{c} {:.0} s", d.as_secs_f64()))
            .collect();
        writeln!(f, "took: {}", took.join(", "))
    }
}

/// The checks, in run order.
pub const CHECKS: [&str; 10] = [
    "crash", "early", "limits", "faults", "outage", "bad", "access", "flood", "hosts", "soak",
];

/// Runs every check of `profile` with the `kledger` binary at `bin`.
pub fn run(profile: &Profile, bin: &std::path::Path) -> anyhow::Result<Summary> {
    run_only(profile, bin, &CHECKS)
}

/// Runs the checks of `profile` named in `only` (see [`CHECKS`]).
pub fn run_only(
    profile: &Profile,
    bin: &std::path::Path,
    only: &[&str],
) -> anyhow::Result<Summary> {
    let mut s = Summary::default();
    for &check in CHECKS.iter().filter(|c| only.contains(c)) {
        let started = std::time::Instant::now();
        let rows = run_check(profile, bin, check)?;
        s.rows.extend(rows);
        s.took.push((check, started.elapsed()));
    }
    Ok(s)
}

/// The rows of one check of `profile` (a name of [`CHECKS`]).
fn run_check(profile: &Profile, bin: &std::path::Path, check: &str) -> anyhow::Result<Vec<Row>> {
    Ok(match check {
        "crash" => vec![
            crash::crash_loop(
                bin,
                profile.seed,
                profile.crash_intents,
                profile.crash_accounts,
                profile.crash_kills,
            )?
            .row(),
        ],
        "early" => [true, false]
            .into_iter()
            .map(|static_membership| {
                crash::crash_loop_early(
                    bin,
                    profile.seed,
                    5_000,
                    100,
                    profile.early_kills,
                    static_membership,
                )
                .map(|c| c.row())
            })
            .collect::<anyhow::Result<_>>()?,
        "limits" => vec![limits::limits(bin, profile.seed, profile.purge_rows)?.row()],
        "faults" => vec![faults::faults(profile.seed, profile.fault_intents)?.row()],
        "outage" => vec![
            outage::outage(
                profile.seed,
                10 * profile.fault_intents,
                profile.outage_secs,
            )?
            .row(),
        ],
        "bad" => vec![bad::bad_input(bin, profile.seed, profile.bad_valid_intents)?.row()],
        "access" => vec![access::access(profile.seed, profile.access_queries)?.row()],
        "flood" => vec![flood::flood(bin, profile.seed, profile.flood_intents)?.row()],
        "hosts" => vec![
            hosts::hosts(
                bin,
                profile.seed,
                profile.hosts_intents,
                std::time::Duration::from_secs(profile.hosts_cut_secs),
            )?
            .row(),
        ],
        "soak" => vec![
            soak::soak(
                bin,
                profile.seed,
                profile.soak_seconds,
                profile.soak_rate,
                profile.soak_cycle,
            )?
            .row(),
        ],
        other => anyhow::bail!("no check {other}"),
    })
}

/// Publishes `records` with `bin publish` (a process of its own, configured by `env`, in
/// `dir`), as an extractor would.
fn publish_with(
    bin: &std::path::Path,
    dir: &std::path::Path,
    env: &[(String, String)],
    records: &[kledger_schemas::IntentRecord],
) -> anyhow::Result<()> {
    let file = dir.join("stream.jsonl");
    std::fs::write(&file, crate::kafka::jsonl(records))?;
    let out = std::process::Command::new(bin)
        .args(["publish", "--input"])
        .arg(&file)
        .envs(env.iter().cloned())
        .env("KLEDGER_HTTP__LISTEN", "")
        .current_dir(dir)
        .output()?;
    anyhow::ensure!(
        out.status.success(),
        "publish: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}
