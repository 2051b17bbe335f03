//! `kledger replay verify`: the intents re-decided into a scratch state and compared with the
//! outbox, byte for byte ([`crate::pipeline::replay`]).

use std::path::PathBuf;

use clap::Subcommand;

use crate::config::Config;
use crate::pipeline::replay::{parse_from, verify_topics};

/// `kledger replay`.
#[derive(Debug, Subcommand)]
pub(crate) enum ReplayCommand {
    /// Re-decide the intents topic into a scratch state and compare every commit with the
    /// outbox, byte for byte. Exits 1 at the first difference.
    Verify {
        /// Start a partition at this intent offset (partition:offset; repeatable). The outbox
        /// commits of earlier intents are folded into the scratch state first.
        #[arg(long = "from", value_parser = parse_from)]
        from: Vec<(i32, i64)>,
        /// Scratch state directory (must not exist; removed afterwards).
        #[arg(long)]
        scratch: Option<PathBuf>,
        /// Hide the progress bar.
        #[arg(long)]
        quiet: bool,
    },
}

impl ReplayCommand {
    /// Verifies; blocking. A difference exits with status 1 after printing it.
    pub(crate) fn run(self, config: &Config) -> anyhow::Result<()> {
        let ReplayCommand::Verify {
            from,
            scratch,
            quiet,
        } = self;
        let scratch = scratch.unwrap_or_else(|| {
            std::env::temp_dir().join(format!("kledger-replay-{}", std::process::id()))
        });
        let from = from.into_iter().collect();
        let report = verify_topics(config, &from, &scratch, !quiet)?;
        let c = &report.counts;
        match &report.difference {
            None => {
                eprintln!(
                    "replay verify: ok: {} intents re-decided, {} commits identical, {} repeats skipped, {} folded before the start, {} partitions",
                    c.intents,
                    c.commits,
                    c.repeats,
                    c.folded,
                    report.partitions.len()
                );
                for (p, o) in &c.expired {
                    match *o {
                        i64::MAX => eprintln!(
                            "  partition {p}: no intent retained (kafka.intents_retention_ms); its commits were folded"
                        ),
                        o => eprintln!(
                            "  partition {p}: verified from offset {o}, its first retained intent (kafka.intents_retention_ms); earlier commits were folded"
                        ),
                    }
                }
            }
            Some(d) => {
                eprintln!(
                    "replay verify: FAILED after {} identical commits\n{d}",
                    c.commits
                );
                std::process::exit(1);
            }
        }
        Ok(())
    }
}
