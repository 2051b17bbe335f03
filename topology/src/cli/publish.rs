//! `kledger publish`: intent records (JSON lines) to the intents topic ([`crate::pipeline::publish`]).

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use crate::config::Config;
use crate::{kafka::topics, pipeline::publish};

/// `kledger publish`.
#[derive(Debug, Args)]
pub(crate) struct PublishArgs {
    /// Intent records, one JSON object per line.
    #[arg(long)]
    input: PathBuf,
    /// Hide the progress bar.
    #[arg(long)]
    quiet: bool,
}

impl PublishArgs {
    /// Publishes every valid line; blocking.
    pub(crate) fn run(self, config: &Config) -> anyhow::Result<()> {
        let bootstrap = crate::kafka::clients::client_config(config);
        let partitions = topics::check(&bootstrap, &config.topics())?;
        let mut reader = BufReader::new(
            File::open(&self.input).with_context(|| format!("open {}", self.input.display()))?,
        );
        let s = publish::publish(config, partitions, &mut reader, !self.quiet)?;
        for (line, e) in &s.invalid {
            eprintln!("line {line}: not an intent record: {e}");
        }
        eprintln!(
            "kledger publish: {} published, {} invalid lines skipped",
            s.published, s.invalid_total
        );
        Ok(())
    }
}
