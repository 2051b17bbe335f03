//! `kledger topics create|check`.

use clap::Subcommand;

use crate::config::Config;
use crate::topics;

/// `kledger topics`.
#[derive(Debug, Subcommand)]
pub enum TopicsCommand {
    /// Create the five topics (existing ones are left alone).
    Create,
    /// Check that the topics exist and intents, outbox and receipts are co-partitioned.
    Check,
}

impl TopicsCommand {
    /// Creates or checks the topics.
    pub async fn run(self, config: &Config) -> anyhow::Result<()> {
        let bootstrap = config.bootstrap();
        let t = config.topics();
        match self {
            TopicsCommand::Create => {
                let created = topics::create(
                    &bootstrap,
                    &t,
                    config.kafka.partitions,
                    config.kafka.replication_factor,
                    config.limits.kafka_message_bytes(),
                )
                .await?;
                eprintln!("created: {created:?}");
            }
            TopicsCommand::Check => {
                let n =
                    tokio::task::spawn_blocking(move || topics::check(&bootstrap, &t)).await??;
                eprintln!("ok: {n} partitions, intents/outbox/receipts co-partitioned");
            }
        }
        Ok(())
    }
}
