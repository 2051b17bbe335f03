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
//! - [`bad`]: the bad-input corpus ([`crate::badinput`]) interleaved with a valid stream: every
//!   bad record gets its dead letter or rejected receipt with its code, nothing panics, every
//!   valid intent is answered as an uninterrupted offline run answers it.
//! - [`access`]: random principals query a world of random rows through search_knowledge,
//!   read_playbook, get_entity_timeline and profile; nothing the rules forbid is shown,
//!   restricted rows never reach the vector index, read_playbook answers missing and foreign
//!   ids alike.

pub mod access;
pub mod bad;
pub mod crash;
pub mod oracle;

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
    /// Valid intents around the bad-input corpus.
    pub bad_valid_intents: usize,
    /// Read-API queries of the access check.
    pub access_queries: u64,
    /// The seed of every stream.
    pub seed: u64,
}

/// The CI profile: minutes on two cores.
pub const SHORT: Profile = Profile {
    name: "short",
    crash_intents: 20_000,
    crash_accounts: 200,
    crash_kills: 5,
    bad_valid_intents: 2_000,
    access_queries: 100_000,
    seed: 61,
};

/// The profile: 100k intents over 1,000 accounts, 20 kills.
pub const LONG: Profile = Profile {
    name: "long",
    crash_intents: 100_000,
    crash_accounts: 1_000,
    crash_kills: 20,
    bad_valid_intents: 20_000,
    access_queries: 500_000,
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
        Ok(())
    }
}

/// Runs every check of `profile` with the `kledger` binary at `bin`.
pub fn run(profile: &Profile, bin: &std::path::Path) -> anyhow::Result<Summary> {
    let mut s = Summary::default();
    let c = crash::crash_loop(
        bin,
        profile.seed,
        profile.crash_intents,
        profile.crash_accounts,
        profile.crash_kills,
    )?;
    s.rows.push(c.row());
    let b = bad::bad_input(bin, profile.seed, profile.bad_valid_intents)?;
    s.rows.push(b.row());
    let a = access::access(profile.seed, profile.access_queries)?;
    s.rows.push(a.row());
    Ok(s)
}
