//! The stream processor runtime.
//!
//! - [`clients`]: librdkafka configurations and contexts (rebalance events, deliveries).
//! - [`batch`]: classifying and deciding one batch of input records.
//! - [`delivery`]: sending a decided batch and awaiting its delivery reports.
//! - [`processor`]: the processor loop (its own OS thread).
//! - [`restore`]: folding outbox partitions into state.
//! - [`position`]: per-partition read positions (and the tansu mid-batch fetch workaround).
//! - [`status`]: readiness and liveness of the processor.

pub mod batch;
pub mod clients;
pub mod delivery;
pub mod position;
pub mod processor;
pub mod restore;
pub mod status;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use kledger_state::RocksStore;

use crate::config::Config;
use crate::embedded::EmbeddedBroker;
use crate::{http, metrics, topics};

/// A running kledger: the broker (when embedded), the processor thread and the HTTP server.
#[derive(Debug)]
pub struct Running {
    /// The embedded broker, if used.
    pub broker: Option<EmbeddedBroker>,
    /// Bootstrap servers in use.
    pub bootstrap: String,
    /// Partition count of the topics.
    pub partitions: i32,
    /// Processor status.
    pub status: Arc<processor_status::Status>,
    /// Set to stop.
    pub shutdown: Arc<AtomicBool>,
    processor: tokio::task::JoinHandle<anyhow::Result<()>>,
    views: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
    http: Option<tokio::task::JoinHandle<()>>,
}

/// Runs `f` on a named OS thread; the handle resolves with its result.
fn spawn_thread(
    name: &str,
    f: impl FnOnce() -> anyhow::Result<()> + Send + 'static,
) -> anyhow::Result<tokio::task::JoinHandle<anyhow::Result<()>>> {
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    let label = name.to_owned();
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            let _ = done_tx.send(f());
        })
        .with_context(|| format!("spawn the {name} thread"))?;
    Ok(tokio::spawn(async move {
        done_rx
            .await
            .unwrap_or_else(|_| Err(anyhow::anyhow!("the {label} thread panicked")))
    }))
}

/// Re-export for [`Running::status`].
pub mod processor_status {
    pub use super::status::Status;
}

/// Starts everything `config` asks for.
pub async fn start(config: Config) -> anyhow::Result<Running> {
    let mut config = config;
    let broker = if config.embedded() {
        let b = EmbeddedBroker::start(&config.embedded.listen, &config.embedded.storage).await?;
        tracing::info!(bootstrap = %b.bootstrap(), storage = %config.embedded.storage, "embedded broker started");
        Some(b)
    } else {
        None
    };
    if config.embedded() && config.kafka.delivery_mode == crate::config::DeliveryMode::Transactional
    {
        anyhow::bail!(
            "the embedded broker offers no Kafka transactions: use delivery_mode = \"idempotent\""
        );
    }
    let bootstrap = config.bootstrap();
    let t = config.topics();
    if config.kafka.create_topics {
        topics::create(
            &bootstrap,
            &t,
            config.kafka.partitions,
            config.kafka.replication_factor,
        )
        .await?;
    }
    let (b, t2) = (bootstrap.clone(), t.clone());
    let partitions = tokio::task::spawn_blocking(move || topics::check(&b, &t2)).await??;
    config.kafka.partitions = partitions;
    std::fs::create_dir_all(&config.state.dir)
        .with_context(|| format!("create {}", config.state.dir.display()))?;
    let store = Arc::new(RocksStore::open(&config.state.dir, &config.state.rocks())?);
    std::fs::create_dir_all(&config.views.dir)
        .with_context(|| format!("create {}", config.views.dir.display()))?;
    let views_store = Arc::new(kledger_state::ViewStore::open(
        &config.views.dir,
        config.views.cache_bytes,
    )?);
    let handle = metrics::install()?;
    let status = Arc::new(status::Status::default());
    let shutdown = Arc::new(AtomicBool::new(false));
    let config = Arc::new(config);
    let http = if config.http.listen.is_empty() {
        None
    } else {
        let api = crate::api::Api {
            config: config.clone(),
            views: views_store.clone(),
            partitions,
            producer: Arc::default(),
        };
        let h = http::serve(
            &config.http.listen,
            http::router(handle, status.clone(), Some(api)),
        )
        .await?;
        tracing::info!(metrics = %format!("http://{}/metrics", config.http.listen), "http listening");
        Some(h)
    };
    let (c, s, st, sd) = (config.clone(), store, status.clone(), shutdown.clone());
    // Own named OS threads: every rdkafka and RocksDB call in them may block.
    let processor = spawn_thread("kledger-apply", move || {
        processor::Processor::new(c, partitions, s, st, sd).and_then(processor::Processor::run)
    })?;
    let views = if config.views.enabled {
        let (c, sd) = (config.clone(), shutdown.clone());
        Some(spawn_thread("kledger-views", move || {
            crate::sinks::views::ViewSink::new(c, views_store, sd)
                .and_then(crate::sinks::views::ViewSink::run)
        })?)
    } else {
        None
    };
    Ok(Running {
        broker,
        bootstrap,
        partitions,
        status,
        shutdown,
        processor,
        views,
        http,
    })
}

impl Running {
    /// Whether the processor or the view sink has ended (by error or shutdown).
    pub fn finished(&self) -> bool {
        self.processor.is_finished() || self.views.as_ref().is_some_and(|v| v.is_finished())
    }

    /// Stops the processor and the view sink (after their current batches), then the HTTP
    /// server and the broker.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.shutdown.store(true, Ordering::Relaxed);
        let result = self.processor.await.context("processor thread")?;
        let views = match self.views {
            Some(v) => v.await.context("view sink thread")?,
            None => Ok(()),
        };
        let result = result.and(views);
        if let Some(h) = self.http {
            h.abort();
        }
        if let Some(b) = self.broker {
            b.stop();
        }
        result
    }
}
