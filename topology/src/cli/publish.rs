//! `kledger publish`: intent records (JSON lines) to the intents topic ([`crate::pipeline::publish`]).

use std::fs::File;
use std::io::BufReader;
use std::path::PathBuf;

use anyhow::Context;
use clap::Args;

use kledger_schemas::SourceKind;

use crate::config::Config;
use crate::{kafka::topics, pipeline::publish};

/// `kledger publish`.
#[derive(Debug, Args)]
pub(crate) struct PublishArgs {
    /// Intent records, one JSON object per line (with `--kind`: source documents).
    #[arg(long)]
    input: PathBuf,
    /// The lines are source documents of this kind (`people`, `conversation`, `calendar`,
    /// `screen`, `episodes`), each with its `account_id` (and optional `timestamp`,
    /// `visibility`, `acl`, `version`).
    #[arg(long, value_parser = parse_kind)]
    kind: Option<SourceKind>,
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
        let s = publish::publish(config, partitions, &mut reader, self.kind, !self.quiet)?;
        for (line, e) in &s.invalid {
            eprintln!("line {line}: skipped: {e}");
        }
        eprintln!(
            "kledger publish: {} published, {} invalid lines skipped",
            s.published, s.invalid_total
        );
        Ok(())
    }
}

/// `--kind`: a source name, singular or plural (`people`/`person`, `conversation`/
/// `conversations`, `calendar`, `screen`).
fn parse_kind(s: &str) -> Result<SourceKind, String> {
    let name = match s {
        "person" => "people",
        "conversation" => "conversations",
        "episode" => "episodes",
        other => other,
    };
    SourceKind::parse(name).ok_or_else(|| {
        format!("{s:?} is not a source kind (people, conversation, calendar, screen, episodes)")
    })
}
