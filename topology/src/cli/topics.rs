//! `kledger topics create|check`.

use clap::Subcommand;

use crate::config::Config;
use crate::kafka::topics;

/// `kledger topics`.
#[derive(Debug, Subcommand)]
pub(crate) enum TopicsCommand {
    /// Create the ledger's topics and the source topics (existing ones are left alone).
    Create,
    /// Check that the topics exist (the source topics too) and intents, outbox, receipts and
    /// keys are co-partitioned.
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
                let n = tokio::task::spawn_blocking(move || {
                    let n = topics::check(&bootstrap, &t)?;
                    topics::check_sources(&bootstrap, &t)?;
                    anyhow::Ok(n)
                })
                .await??;
                eprintln!("ok: {n} partitions, intents/outbox/receipts co-partitioned");
            }
        }
        Ok(())
    }
}
