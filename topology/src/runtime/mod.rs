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
    sinks: Vec<tokio::task::JoinHandle<anyhow::Result<()>>>,
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
    let vectors = if config.vectors.enabled {
        let c = config.clone();
        Some(tokio::task::spawn_blocking(move || open_vectors(&c)).await??)
    } else {
        None
    };
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
            index: vectors.as_ref().map(|v| v.0.clone()),
            embedder: vectors.as_ref().map(|v| v.1.clone()),
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
    let mut sinks = Vec::new();
    if config.views.enabled {
        let (c, sd) = (config.clone(), shutdown.clone());
        sinks.push(spawn_thread("kledger-views", move || {
            supervise("views", &sd, || {
                crate::sinks::views::ViewSink::new(c.clone(), views_store.clone(), sd.clone())
                    .and_then(crate::sinks::views::ViewSink::run)
            });
            Ok(())
        })?);
    }
    if let Some((index, embedder, marks)) = vectors {
        let (c, sd) = (config.clone(), shutdown.clone());
        sinks.push(spawn_thread("kledger-vectors", move || {
            supervise("vectors", &sd, || {
                crate::sinks::vectors::VectorSink::new(
                    &c,
                    index.clone(),
                    embedder.clone(),
                    marks.clone(),
                    sd.clone(),
                )
                .and_then(crate::sinks::vectors::VectorSink::run)
            });
            Ok(())
        })?);
    }
    Ok(Running {
        broker,
        bootstrap,
        partitions,
        status,
        shutdown,
        processor,
        sinks,
        http,
    })
}

/// First and largest pause before a failed sink starts again.
const SINK_BACKOFF_MS: (u64, u64) = (500, 60_000);

/// Runs a sink until shutdown, starting it again after a failure (with a growing pause): a
/// sink's failure (a broker outage, a full disk, a gap it refuses to fold over) stops its
/// projection, not the processor. Each failure is logged and counted.
fn supervise(
    sink: &'static str,
    shutdown: &AtomicBool,
    mut run: impl FnMut() -> anyhow::Result<()>,
) {
    let mut pause = SINK_BACKOFF_MS.0;
    while !shutdown.load(Ordering::Relaxed) {
        match run() {
            Ok(()) => pause = SINK_BACKOFF_MS.0,
            Err(e) => {
                tracing::error!(sink, error = %format!("{e:#}"), pause_ms = pause, "sink failed; starting it again");
                ::metrics::counter!(metrics::SINK_RESTARTS_TOTAL, "sink" => sink).increment(1);
                let until = std::time::Instant::now() + std::time::Duration::from_millis(pause);
                while std::time::Instant::now() < until && !shutdown.load(Ordering::Relaxed) {
                    std::thread::sleep(std::time::Duration::from_millis(50));
                }
                pause = (pause * 2).min(SINK_BACKOFF_MS.1);
            }
        }
    }
}

/// The vector index, embedder and sink marks `config` names (blocking).
#[allow(clippy::type_complexity)]
fn open_vectors(
    config: &Config,
) -> anyhow::Result<(
    Arc<dyn crate::vector::VectorIndex>,
    Arc<dyn crate::vector::embedder::Embedder>,
    Arc<kledger_state::MarkStore>,
)> {
    let v = &config.vectors;
    let embedder: Arc<dyn crate::vector::embedder::Embedder> =
        Arc::from(crate::vector::embedder::from_config(&v.embedder)?);
    let name = kledger_processors::payload::collection_name("text", embedder.dim(), 1);
    let index: Arc<dyn crate::vector::VectorIndex> = match v.backend.as_str() {
        "server" => Arc::new(crate::vector::server::ServerIndex::open(
            &v.url,
            &name,
            embedder.dim(),
        )?),
        _ => {
            std::fs::create_dir_all(&v.dir)
                .with_context(|| format!("create {}", v.dir.display()))?;
            Arc::new(crate::vector::edge::EdgeIndex::open(
                &v.dir,
                &name,
                embedder.dim(),
            )?)
        }
    };
    std::fs::create_dir_all(&v.marks_dir)
        .with_context(|| format!("create {}", v.marks_dir.display()))?;
    let marks = Arc::new(kledger_state::MarkStore::open(&v.marks_dir)?);
    tracing::info!(collection = %name, backend = %v.backend, model = %embedder.model(), "vector index open");
    Ok((index, embedder, marks))
}

impl Running {
    /// Whether the processor has ended (by error or shutdown). Sinks start again after a
    /// failure; they end only at shutdown.
    pub fn finished(&self) -> bool {
        self.processor.is_finished() || self.sinks.iter().any(|s| s.is_finished())
    }

    /// Stops the processor and the sinks (after their current batches), then the HTTP
    /// server and the broker.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.shutdown.store(true, Ordering::Relaxed);
        let result = self.processor.await.context("processor thread")?;
        let mut result = result;
        for s in self.sinks {
            let r = s.await.context("sink thread")?;
            result = result.and(r);
        }
        if let Some(h) = self.http {
            h.abort();
        }
        if let Some(b) = self.broker {
            b.stop();
        }
        result
    }
}
