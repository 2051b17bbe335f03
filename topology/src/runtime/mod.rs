//! The stream processor runtime.
//!
//! - [`clients`]: librdkafka configurations and contexts (rebalance events, deliveries).
//! - [`coverage`]: whether a consumer group owns every partition; the rejoin that heals it.
//! - [`batch`]: classifying and deciding one batch of input records.
//! - [`delivery`]: sending a decided batch and awaiting its delivery reports.
//! - [`processor`]: the processor loop (its own OS thread).
//! - [`restore`]: folding outbox partitions into state.
//! - [`position`]: per-partition read positions (and the tansu mid-batch fetch workaround).
//! - [`status`]: readiness and liveness of the processor.

pub mod batch;
pub mod clients;
pub mod coverage;
pub mod delivery;
pub mod position;
pub mod processor;
pub mod restore;
pub mod status;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use kledger_state::{RocksStore, ViewStore};

use crate::config::Config;
use crate::embedded::EmbeddedBroker;
use crate::generations::Live;
use crate::registry::Codec;
use crate::vector::VectorGen;
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
    processor: Option<tokio::task::JoinHandle<anyhow::Result<()>>>,
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

/// What one `kledger run` process does (`--role`): each part scales on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Roles {
    /// The stream processor (`apply`).
    pub apply: bool,
    /// The view materializer (`project-views`).
    pub views: bool,
    /// The vector sink (`project-qdrant`).
    pub vectors: bool,
    /// The read API and HTTP ingress (`api`).
    pub api: bool,
}

impl Roles {
    /// Every part (`all`, the default).
    pub const ALL: Roles = Roles {
        apply: true,
        views: true,
        vectors: true,
        api: true,
    };

    /// Parses a comma-separated list of `apply`, `project-views`, `project-qdrant`, `api`,
    /// `all`.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut r = Roles {
            apply: false,
            views: false,
            vectors: false,
            api: false,
        };
        for part in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            match part {
                "all" => r = Self::ALL,
                "apply" => r.apply = true,
                "project-views" => r.views = true,
                "project-qdrant" => r.vectors = true,
                "api" => r.api = true,
                other => {
                    return Err(format!(
                        "unknown role {other:?} (apply, project-views, project-qdrant, api, all)"
                    ));
                }
            }
        }
        if r == (Roles {
            apply: false,
            views: false,
            vectors: false,
            api: false,
        }) {
            return Err("no role given".into());
        }
        Ok(r)
    }
}

/// Starts every part (`--role all`).
pub async fn start(config: Config) -> anyhow::Result<Running> {
    start_roles(config, Roles::ALL).await
}

/// Opens the view store's active generation: as its owner (`project-views`) or as a
/// read-only follower of the owner's RocksDB (`api` alone).
fn open_views(config: &Config, owner: bool) -> anyhow::Result<Arc<Live<ViewStore>>> {
    let (cache, memtables) = (config.views.cache_bytes, config.views.memtable_bytes);
    let live = if owner {
        Live::open(&config.views.dir, true, move |p| {
            Ok(ViewStore::open_bounded(p, cache, memtables)?)
        })?
    } else {
        let scratch =
            std::env::temp_dir().join(format!("kledger-views-follower-{}", std::process::id()));
        Live::open(&config.views.dir, false, move |p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let secondary = scratch.join(name);
            std::fs::create_dir_all(&secondary)?;
            ViewStore::open_secondary(p, &secondary, cache).with_context(|| {
                format!(
                    "open the view store at {} as a follower (is a project-views process running?)",
                    p.display()
                )
            })
        })?
    };
    Ok(Arc::new(live))
}

/// The vector projection and the embedder of rows and queries.
type Vectors = (
    Arc<Live<VectorGen>>,
    Arc<dyn crate::vector::embedder::Embedder>,
);

/// Opens the vector projection's active generation and the embedder.
fn open_vectors(config: &Config, owner: bool) -> anyhow::Result<Vectors> {
    let v = config.vectors.clone();
    let embedder: Arc<dyn crate::vector::embedder::Embedder> =
        Arc::from(crate::vector::embedder::from_config(&v.embedder)?);
    let dim = embedder.dim();
    let name = kledger_processors::payload::collection_name("text", dim, 1);
    tracing::info!(collection = %name, backend = %v.backend, model = %embedder.model(), "vector index open");
    let live = Live::open(&v.dir.clone(), owner, move |p| {
        let generation = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let index = crate::vector::open_index(&v, &name, dim, p, &generation, owner, false)?;
        let marks = if owner {
            Some(crate::vector::open_marks(p)?)
        } else {
            None
        };
        Ok(VectorGen { index, marks })
    })?;
    Ok((Arc::new(live), embedder))
}

/// A follower keeps up with the projections another process writes: it catches up with the
/// view store's writes and swaps in rebuilt generations.
fn follow(
    views: Option<Arc<Live<ViewStore>>>,
    vectors: Option<Arc<Live<VectorGen>>>,
    shutdown: Arc<AtomicBool>,
) -> anyhow::Result<tokio::task::JoinHandle<anyhow::Result<()>>> {
    spawn_thread("kledger-follow", move || {
        while !shutdown.load(Ordering::Relaxed) {
            if let Some(v) = &views
                && let Err(e) = v.refresh().and_then(|_| Ok(v.get().catch_up()?))
            {
                tracing::warn!(error = %format!("{e:#}"), "view store follower");
            }
            if let Some(v) = &vectors
                && let Err(e) = v.refresh()
            {
                tracing::warn!(error = %format!("{e:#}"), "vector follower");
            }
            std::thread::sleep(FOLLOW_INTERVAL);
        }
        Ok(())
    })
}

/// How often a follower catches up.
const FOLLOW_INTERVAL: std::time::Duration = std::time::Duration::from_millis(200);

/// Starts the parts `roles` names.
pub async fn start_roles(config: Config, roles: Roles) -> anyhow::Result<Running> {
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
    let partitions = prepare_topics(&config).await?;
    config.kafka.partitions = partitions;
    let c = config.clone();
    let codec = Arc::new(tokio::task::spawn_blocking(move || Codec::connect(&c)).await??);
    let store = if roles.apply {
        std::fs::create_dir_all(&config.state.dir)
            .with_context(|| format!("create {}", config.state.dir.display()))?;
        Some(Arc::new(RocksStore::open(
            &config.state.dir,
            &config.state.rocks(),
        )?))
    } else {
        None
    };
    // The process with `project-views` holds the store (and runs its sink when
    // `views.enabled`); an `api` process without it follows that process's store.
    let views_owner = roles.views;
    let views = if views_owner || roles.api {
        let c = config.clone();
        Some(tokio::task::spawn_blocking(move || open_views(&c, views_owner)).await??)
    } else {
        None
    };
    let vectors_owner = roles.vectors && config.vectors.enabled;
    let vectors = if vectors_owner || (roles.api && config.vectors.enabled) {
        let c = config.clone();
        Some(tokio::task::spawn_blocking(move || open_vectors(&c, vectors_owner)).await??)
    } else {
        None
    };
    let handle = metrics::install()?;
    let status = Arc::new(status::Status::default());
    if !roles.apply {
        status.set_no_processor();
    }
    let shutdown = Arc::new(AtomicBool::new(false));
    let config = Arc::new(config);
    let api = match (&views, roles.api) {
        (Some(v), true) => Some(crate::api::Api {
            config: config.clone(),
            views: v.clone(),
            partitions,
            producer: Arc::default(),
            codec: codec.clone(),
            index: vectors.as_ref().map(|v| v.0.clone()),
            embedder: vectors.as_ref().map(|v| v.1.clone()),
            exports: Arc::new(tokio::sync::Semaphore::new(config.api.exports_max)),
            receipts: Arc::default(),
        }),
        _ => None,
    };
    let http = if config.http.listen.is_empty() {
        None
    } else {
        let router = http::router(
            handle,
            status.clone(),
            api,
            &config.http,
            config.limits.record_bytes_max,
        );
        let h = http::serve(&config.http.listen, router, &config.http).await?;
        tracing::info!(metrics = %format!("http://{}/metrics", config.http.listen), roles = ?roles, "http listening");
        Some(h)
    };
    let processor = match store {
        Some(s) => {
            let (c, st, sd, co) = (
                config.clone(),
                status.clone(),
                shutdown.clone(),
                codec.clone(),
            );
            // Own named OS threads: every rdkafka and RocksDB call in them may block.
            Some(spawn_thread("kledger-apply", move || {
                processor::Processor::new(c, partitions, s, st, sd, co)
                    .and_then(processor::Processor::run)
            })?)
        }
        None => None,
    };
    let mut sinks = Vec::new();
    if views_owner
        && config.views.enabled
        && let Some(live) = views.clone()
    {
        let (c, st, sd, co) = (
            config.clone(),
            status.clone(),
            shutdown.clone(),
            codec.clone(),
        );
        sinks.push(spawn_thread("kledger-views", move || {
            supervise("views", &sd, || {
                crate::sinks::views::ViewSink::new(
                    c.clone(),
                    live.clone(),
                    st.clone(),
                    sd.clone(),
                    co.clone(),
                )
                .and_then(crate::sinks::views::ViewSink::run)
            });
            Ok(())
        })?);
    }
    if vectors_owner && let Some((live, embedder)) = vectors.clone() {
        let (c, st, sd, co) = (
            config.clone(),
            status.clone(),
            shutdown.clone(),
            codec.clone(),
        );
        sinks.push(spawn_thread("kledger-vectors", move || {
            supervise("vectors", &sd, || {
                crate::sinks::vectors::VectorSink::new(
                    &c,
                    live.clone(),
                    embedder.clone(),
                    st.clone(),
                    sd.clone(),
                    co.clone(),
                )
                .and_then(crate::sinks::vectors::VectorSink::run)
            });
            Ok(())
        })?);
    }
    let followed_views = views.filter(|_| !views_owner);
    let followed_vectors = vectors.map(|v| v.0).filter(|_| !vectors_owner);
    if followed_views.is_some() || followed_vectors.is_some() {
        sinks.push(follow(followed_views, followed_vectors, shutdown.clone())?);
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

/// First and largest pause between attempts to reach the broker at start.
const START_BACKOFF_MS: (u64, u64) = (500, 30_000);

/// Creates the topics (when configured) and checks them; returns the partition count. An
/// unreachable broker is waited for with backoff (logged), for as long as it takes; topics
/// that are missing or not co-partitioned are a configuration error and end the start.
async fn prepare_topics(config: &Config) -> anyhow::Result<i32> {
    let bootstrap = config.bootstrap();
    let t = config.topics();
    let mut pause = START_BACKOFF_MS.0;
    loop {
        let attempt = async {
            if config.kafka.create_topics {
                topics::create(
                    &bootstrap,
                    &t,
                    config.kafka.partitions,
                    config.kafka.replication_factor,
                    config.limits.kafka_message_bytes(),
                )
                .await?;
            }
            let (b, t2) = (bootstrap.clone(), t.clone());
            tokio::task::spawn_blocking(move || topics::check(&b, &t2)).await?
        };
        match attempt.await {
            Ok(p) => return Ok(p),
            Err(e) if e.chain().any(|c| c.is::<rdkafka::error::KafkaError>()) => {
                tracing::warn!(bootstrap = %bootstrap, error = %format!("{e:#}"), pause_ms = pause, "the broker cannot be reached; trying again");
                tokio::time::sleep(std::time::Duration::from_millis(pause)).await;
                pause = (pause * 2).min(START_BACKOFF_MS.1);
            }
            Err(e) => return Err(e),
        }
    }
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
    // The restarts counter exists (at 0) before the first failure: alerts read it.
    ::metrics::counter!(metrics::SINK_RESTARTS_TOTAL, "sink" => sink).increment(0);
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

impl Running {
    /// Whether the processor has ended (by error or shutdown). Sinks start again after a
    /// failure; they end only at shutdown.
    pub fn finished(&self) -> bool {
        self.processor.as_ref().is_some_and(|p| p.is_finished())
            || self.sinks.iter().any(|s| s.is_finished())
    }

    /// Stops the processor and the sinks (after their current batches), then the HTTP
    /// server and the broker.
    pub async fn stop(self) -> anyhow::Result<()> {
        self.shutdown.store(true, Ordering::Relaxed);
        let mut result = match self.processor {
            Some(p) => p.await.context("processor thread")?,
            None => Ok(()),
        };
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
