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
    /// Clients must log in (SASL/SCRAM-SHA-256) with the credentials in this file, created
    /// (mode 0600) if missing; sqlite storage only. Without it the broker is open to anyone
    /// who can reach its port.
    #[arg(long)]
    credentials: Option<std::path::PathBuf>,
}

impl BrokerArgs {
    /// Serves until a signal.
    pub(crate) async fn run(self) -> anyhow::Result<()> {
        let login = self
            .credentials
            .as_deref()
            .map(crate::config::credentials::Credentials::load_or_create)
            .transpose()?;
        let b = EmbeddedBroker::start_with(&self.listen, &self.storage, login.as_ref()).await?;
        eprintln!("broker listening on {}", b.bootstrap());
        super::wait_for_signal().await;
        b.stop();
        Ok(())
    }
}
