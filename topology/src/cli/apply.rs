//! `kledger apply`: the offline mode, intents from a JSON-lines file decided without Kafka
//! ([`crate::pipeline::offline`]).

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;
use kledger_state::{MemoryStore, RocksStore, StateStore, digest};

use crate::config::Config;
use crate::pipeline::offline;

/// `kledger apply`.
#[derive(Debug, Args)]
pub(crate) struct ApplyArgs {
    /// Intent records, one JSON object per line: {"timestamp": ms, "intent": {...}}.
    #[arg(long)]
    input: PathBuf,
    /// State directory (RocksDB); in memory when omitted.
    #[arg(long)]
    state: Option<PathBuf>,
    /// Partitions of the intents topic this run stands in for.
    #[arg(long, default_value_t = 12)]
    partitions: i32,
    /// Receipts output (JSON lines); stdout by default.
    #[arg(long)]
    receipts: Option<PathBuf>,
    /// Commits output (JSON lines); stdout by default.
    #[arg(long)]
    commits: Option<PathBuf>,
}

/// A file, or stdout when none is given: buffered.
fn output(path: Option<PathBuf>) -> anyhow::Result<Box<dyn Write>> {
    Ok(match path {
        Some(p) => Box::new(BufWriter::new(
            File::create(&p).with_context(|| format!("create {}", p.display()))?,
        )),
        None => Box::new(BufWriter::new(std::io::stdout())),
    })
}

impl ApplyArgs {
    /// Decides every line; blocking.
    pub(crate) fn run(self, config: &Config) -> anyhow::Result<()> {
        anyhow::ensure!(self.partitions > 0, "--partitions must be positive");
        let file =
            File::open(&self.input).with_context(|| format!("open {}", self.input.display()))?;
        let mut reader = BufReader::new(file);
        let store: Box<dyn StateStore> = match &self.state {
            Some(dir) => Box::new(RocksStore::open(dir, &config.state.rocks())?),
            None => Box::new(MemoryStore::new()),
        };
        // One writer per stream: receipts and commits both on stdout share one writer.
        let mut r = output(self.receipts)?;
        let mut c = self.commits.map(|p| output(Some(p))).transpose()?;
        let sinks = offline::Sinks {
            receipts: &mut r,
            commits: c.as_mut().map(|c| c as &mut dyn Write),
        };
        let summary = offline::apply(
            store.as_ref(),
            &mut reader,
            self.partitions,
            // A state directory keeps its own ledger secret (no keys topic here), made at its
            // first run; a run in memory keys with the all-zero secret, so one input gives the
            // same ids on every run (the file it reads holds the text in the clear anyway).
            config.limits.decide(match &self.state {
                Some(_) => kledger_state::local_ledger_secret(store.as_ref())?,
                None => Default::default(),
            }),
            config.bulk.records_max,
            sinks,
        )?;
        drop((r, c));
        let outcomes: Vec<String> = summary
            .outcomes
            .iter()
            .map(|(o, n)| format!("{o}={n}"))
            .collect();
        eprintln!(
            "kledger apply: {} commits; receipts {}; malformed={} skipped={}; state digest {}",
            summary.commits,
            outcomes.join(" "),
            summary.malformed,
            summary.skipped,
            digest(store.as_ref())?
        );
        Ok(())
    }
}
