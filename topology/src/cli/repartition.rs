//! `kledger repartition --to N --topic-prefix NEW`: moves a stopped ledger to new topics with
//! more (or fewer) partitions, every account's chain unchanged ([`crate::pipeline::repartition`]).

use clap::Args;

use crate::config::Config;
use crate::kafka::codec::Codec;
use crate::pipeline::repartition::repartition;

/// `kledger repartition`.
#[derive(Debug, Args)]
pub(crate) struct RepartitionArgs {
    /// Partitions of the new topics.
    #[arg(long)]
    to: i32,
    /// Prefix of the new topics (`kafka.topic_prefix` afterwards); they must not hold records.
    #[arg(long)]
    topic_prefix: String,
}

impl RepartitionArgs {
    /// Moves the ledger; blocking.
    pub(crate) fn run(self, config: &Config) -> anyhow::Result<()> {
        let codec = Codec::connect(config)?;
        let r = repartition(config, &codec, self.to, &self.topic_prefix)?;
        eprintln!("repartition: {r}");
        println!(
            "KLEDGER_KAFKA__TOPIC_PREFIX={} KLEDGER_KAFKA__PARTITIONS={}",
            self.topic_prefix, self.to
        );
        eprintln!(
            "next: run kledger with these settings and an empty state directory (the processor restores it from the new outbox), then `kledger rebuild views` and `kledger rebuild qdrant`; `kledger replay verify` checks the new topics"
        );
        Ok(())
    }
}
