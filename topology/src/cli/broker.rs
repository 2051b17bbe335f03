//! `kledger broker`: only the embedded broker (a Kafka-protocol peer for tests and local
//! tools).

use clap::Args;

use crate::kafka::embedded::EmbeddedBroker;

/// `kledger broker`.
#[derive(Debug, Args)]
pub(crate) struct BrokerArgs {
    /// Listen address (IP and port).
    #[arg(long, default_value = "127.0.0.1:9092")]
    listen: String,
    /// Storage URL (sqlite://dir/file.db or memory://tansu/).
    #[arg(long, default_value = "sqlite://data/broker/tansu.db")]
    storage: String,
}

impl BrokerArgs {
    /// Serves until a signal.
    pub(crate) async fn run(self) -> anyhow::Result<()> {
        let b = EmbeddedBroker::start(&self.listen, &self.storage).await?;
        eprintln!("broker listening on {}", b.bootstrap());
        super::wait_for_signal().await;
        b.stop();
        Ok(())
    }
}
