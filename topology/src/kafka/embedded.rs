//! The embedded default broker: tansu (a Kafka-protocol broker) in this process.
//!
//! Storage `sqlite://data/broker/tansu.db` survives restarts (paths are relative to the
//! working directory, a tansu rule); `memory://tansu/` does not. tansu offers no Kafka
//! transactions, so the embedded default runs the `idempotent` delivery mode.

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use tansu_broker::broker::Broker;
use tansu_broker::coordinator::group::administrator::Controller;
use tansu_storage::StorageContainer;
use tokio::task::JoinHandle;
use url::Url;

/// A running in-process broker.
#[derive(Debug)]
pub struct EmbeddedBroker {
    task: JoinHandle<()>,
    addr: SocketAddr,
}

impl EmbeddedBroker {
    /// Starts a broker listening on `listen` (an IP literal and port) with `storage`, and waits
    /// until it accepts connections.
    pub async fn start(listen: &str, storage: &str) -> anyhow::Result<Self> {
        let addr: SocketAddr = listen
            .parse()
            .with_context(|| format!("listen address {listen:?} (an IP and a port)"))?;
        let url = Url::parse(&format!("tcp://{addr}")).context("listener url")?;
        let storage_url =
            Url::parse(storage).with_context(|| format!("storage url {storage:?}"))?;
        if storage_url.scheme() == "sqlite" {
            // sqlite://dir/file.db: host `dir`, path `/file.db`, relative to the working dir.
            let rel = format!(
                "{}{}",
                storage_url.host_str().unwrap_or_default(),
                storage_url.path()
            );
            if let Some(parent) = Path::new(&rel).parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("create {}", parent.display()))?;
            }
        }
        // Reopening the same sqlite file right after a stop can fail briefly: retry the build.
        let mut attempt = 0;
        let mut broker = loop {
            attempt += 1;
            let built = Broker::<Controller<StorageContainer>, StorageContainer>::builder()
                .node_id(tansu_broker::NODE_ID)
                .cluster_id("kledger")
                .incarnation_id(uuid::Uuid::now_v7())
                .advertised_listener(url.clone())
                .storage(storage_url.clone())
                .listener(url.clone())
                .silent(true)
                .build()
                .await;
            match built {
                Ok(b) => break b,
                Err(e) if attempt < 20 => {
                    tracing::debug!(error = %e, attempt, "embedded broker build failed, retrying");
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
                Err(e) => bail!("start embedded broker: {e}"),
            }
        };
        let task = tokio::spawn(async move {
            if let Err(e) = broker.serve(tokio::time::Instant::now()).await {
                tracing::error!(error = %e, "embedded broker stopped");
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        while tokio::net::TcpStream::connect(addr).await.is_err() {
            if Instant::now() > deadline || task.is_finished() {
                task.abort();
                bail!("embedded broker did not start listening on {addr}");
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        Ok(Self { task, addr })
    }

    /// The bootstrap address.
    pub fn bootstrap(&self) -> String {
        self.addr.to_string()
    }

    /// Stops the broker.
    pub fn stop(self) {
        self.task.abort();
    }
}

impl Drop for EmbeddedBroker {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A free TCP port on 127.0.0.1 (for tests and demos; tansu cannot bind port 0).
pub fn free_port() -> anyhow::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}
