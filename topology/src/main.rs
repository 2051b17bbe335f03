//! The `kledger` binary.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use kledger_state::{MemoryStore, RocksConfig, RocksStore, StateStore, digest};
use kledger_topology::offline;

#[derive(Debug, Parser)]
#[command(
    name = "kledger",
    version,
    about = "An event-sourced knowledge ledger for AI assistants and agents"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Decide intents from a JSON-lines file offline (a dry run of an extractor's output).
    Apply {
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
    },
    /// State operations.
    State {
        #[command(subcommand)]
        command: StateCommand,
    },
}

#[derive(Debug, Subcommand)]
enum StateCommand {
    /// Print the SHA-256 digest of a state directory (every key and value in key order).
    Digest {
        /// State directory.
        #[arg(long)]
        state: PathBuf,
    },
}

fn output(path: Option<PathBuf>) -> anyhow::Result<Box<dyn Write>> {
    Ok(match path {
        Some(p) => Box::new(BufWriter::new(
            File::create(&p).with_context(|| format!("create {}", p.display()))?,
        )),
        None => Box::new(BufWriter::new(std::io::stdout())),
    })
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::Apply {
            input,
            state,
            partitions,
            receipts,
            commits,
        } => {
            anyhow::ensure!(partitions > 0, "--partitions must be positive");
            let file = File::open(&input).with_context(|| format!("open {}", input.display()))?;
            let mut reader = BufReader::new(file);
            let store: Box<dyn StateStore> = match &state {
                Some(dir) => Box::new(RocksStore::open(dir, &RocksConfig::default())?),
                None => Box::new(MemoryStore::new()),
            };
            let (mut r, mut c) = (output(receipts)?, output(commits)?);
            let sinks = offline::Sinks {
                receipts: &mut r,
                commits: &mut c,
            };
            let summary = offline::apply(store.as_ref(), &mut reader, partitions, sinks)?;
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
        }
        Command::State {
            command: StateCommand::Digest { state },
        } => {
            let store = RocksStore::open(&state, &RocksConfig::default())?;
            println!("{}", digest(&store)?);
        }
    }
    Ok(())
}
