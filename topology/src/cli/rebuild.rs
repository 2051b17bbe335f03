//! `kledger rebuild views|qdrant`: a projection rebuilt from the outbox into a new generation,
//! swapped in when caught up ([`crate::pipeline::rebuild`]).

use clap::Args;

use crate::config::Config;
use crate::pipeline::rebuild::{ProjectionKind, rebuild};

/// `kledger rebuild`.
#[derive(Debug, Args)]
pub(crate) struct RebuildArgs {
    /// Which projection.
    #[arg(value_enum)]
    projection: ProjectionKind,
    /// Hide the progress bar.
    #[arg(long)]
    quiet: bool,
}

impl RebuildArgs {
    /// Rebuilds; blocking.
    pub(crate) fn run(self, config: &Config) -> anyhow::Result<()> {
        let r = rebuild(config, self.projection, !self.quiet)?;
        eprintln!(
            "rebuild {}: generation {} active ({}{} outbox records, {} undecodable skipped; old generations deleted: {:?})",
            self.projection.name(),
            r.generation,
            if r.resumed { "resumed, " } else { "" },
            r.records,
            r.undecodable,
            r.deleted
        );
        Ok(())
    }
}
