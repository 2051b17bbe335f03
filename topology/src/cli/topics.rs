//! `kledger topics create|check`.

use clap::Subcommand;

use crate::config::Config;
use crate::kafka::topics;

/// `kledger topics`.
#[derive(Debug, Subcommand)]
pub(crate) enum TopicsCommand {
    /// Create the five topics (existing ones are left alone).
    Create,
    /// Check that the topics exist and intents, outbox and receipts are co-partitioned.
    Check,
}

impl TopicsCommand {
    /// Creates or checks the topics.
    pub(crate) async fn run(self, config: &Config) -> anyhow::Result<()> {
        match self {
            TopicsCommand::Create => {
                let created = topics::create_configured(config).await?;
                eprintln!("created: {created:?}");
            }
            TopicsCommand::Check => {
                let (bootstrap, t) = (
                    crate::kafka::clients::client_config(config),
                    config.topics(),
                );
                let n =
                    tokio::task::spawn_blocking(move || topics::check(&bootstrap, &t)).await??;
                eprintln!("ok: {n} partitions, intents/outbox/receipts co-partitioned");
            }
        }
        Ok(())
    }
}
