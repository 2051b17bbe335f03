//! `kledger state digest|restore|checkpoint`.

use std::path::PathBuf;

use clap::Subcommand;
use kledger_state::{RocksStore, digest, ledger_digest};

use crate::config::Config;

/// `kledger state`.
#[derive(Debug, Subcommand)]
pub(crate) enum StateCommand {
    /// Print the SHA-256 digest of a state directory (every key and value in key order).
    Digest {
        /// State directory (default: the configured one).
        #[arg(long)]
        state: Option<PathBuf>,
        /// The ledger digest instead: independent of the topic layout (keys without their
        /// partition, heads without their last intent's offset), so a ledger moved to more
        /// partitions or restored from a mirror digests as before.
        #[arg(long)]
        ledger: bool,
    },
    /// Fill an empty state directory from a checkpoint, or by folding the whole outbox.
    Restore {
        /// State directory to fill (default: the configured one); must be empty or missing.
        #[arg(long)]
        state: Option<PathBuf>,
        /// A checkpoint written by `kledger state checkpoint`.
        #[arg(
            long,
            conflicts_with = "from_outbox",
            required_unless_present = "from_outbox"
        )]
        checkpoint: Option<PathBuf>,
        /// Fold every outbox partition from the start (the processor's restore).
        #[arg(long)]
        from_outbox: bool,
        /// Hide the progress bar.
        #[arg(long)]
        quiet: bool,
    },
    /// Write a consistent RocksDB checkpoint of the state to a new directory.
    Checkpoint {
        /// State directory (default: the configured one).
        #[arg(long)]
        state: Option<PathBuf>,
        /// Where to write the checkpoint (must not exist).
        #[arg(long)]
        out: PathBuf,
    },
}

impl StateCommand {
    /// Runs the state operation; blocking.
    pub(crate) fn run(self, config: &Config) -> anyhow::Result<()> {
        let configured = || config.state.dir.clone();
        match self {
            StateCommand::Digest { state, ledger } => {
                let store =
                    RocksStore::open(&state.unwrap_or_else(configured), &config.state.rocks())?;
                if ledger {
                    println!("{}", ledger_digest(&store)?);
                } else {
                    println!("{}", digest(&store)?);
                }
            }
            StateCommand::Restore {
                state,
                checkpoint,
                from_outbox,
                quiet,
            } => {
                if from_outbox {
                    crate::kafka::preflight::preflight(config)?;
                }
                let dir = state.unwrap_or_else(configured);
                let r = crate::pipeline::stateops::restore(
                    config,
                    &dir,
                    checkpoint.as_deref(),
                    from_outbox,
                    !quiet,
                )?;
                eprintln!("state restored into {}: {r}", dir.display());
            }
            StateCommand::Checkpoint { state, out } => {
                let store =
                    RocksStore::open(&state.unwrap_or_else(configured), &config.state.rocks())?;
                store.checkpoint(&out)?;
                eprintln!("checkpoint written to {}", out.display());
            }
        }
        Ok(())
    }
}
