//! The composition root: what one `kledger run` process starts, and in what order.
//!
//! [`start_roles`] starts the embedded broker (when configured), prepares the topics, builds
//! the one `AppContext` every part shares, opens the stores its roles need, and starts one
//! part per role (`parts`): the processor (and the source intake beside it), the view sink, the vector sink (or the search
//! reader of another process's vector projection), a follower of projections another process
//! owns, and the HTTP listener. [`Running::stop`] triggers the shutdown and waits for each part.
//!
//! - [`roles`]: `--role` and what it names.
//! - `parts`: one function per part.
//!
//! May not touch: what the parts do (only how they are wired).

mod parts;
pub mod roles;

use std::sync::Arc;

use anyhow::Context;
use kledger_state::RocksStore;

pub use self::roles::Roles;
use crate::config::Config;
use crate::context::AppContext;
use crate::kafka::codec::Codec;
use crate::kafka::embedded::EmbeddedBroker;
use crate::shutdown::Shutdown;
use crate::status::Status;
use crate::vector::SearchSlot;
use crate::{kafka::topics, metrics, serve::http};

/// A running kledger: the broker (when embedded), the parts and the HTTP server.
#[derive(Debug)]
pub struct Running {
    /// The embedded broker, if used.
    pub broker: Option<EmbeddedBroker>,
    /// Bootstrap servers in use.
    pub bootstrap: String,
    /// Partition count of the topics.
    pub partitions: i32,
    /// What `/readyz` reports.
    pub status: Arc<Status>,
    /// Triggered to stop.
    pub shutdown: Shutdown,
    /// The read API's state, when this process serves it (`kledger mcp` serves it on stdio).
    pub api: Option<crate::serve::api::Api>,
    processor: Option<parts::Part>,
    sinks: Vec<parts::Part>,
    http: Option<tokio::task::JoinHandle<()>>,
    /// The active vector generation's embedder, loaded at start (and kept: its parts share it).
    _embedder: Option<Arc<dyn crate::vector::embedder::Embedder>>,
}

/// Starts every part (`--role all`).
pub async fn start(config: Config) -> anyhow::Result<Running> {
    start_roles(config, Roles::ALL).await
}

/// Starts the parts `roles` names. Long on purpose: it is the order of a start (broker,
/// topics, context, stores, HTTP, parts), read top to bottom; each step is one call.
pub async fn start_roles(config: Config, roles: Roles) -> anyhow::Result<Running> {
    let mut config = config;
    if config.embedded() && config.kafka.delivery_mode == crate::config::DeliveryMode::Transactional
    {
        anyhow::bail!(
            "the embedded broker offers no Kafka transactions: use delivery_mode = \"idempotent\""
        );
    }
    // The active vector generation's embedder first: a missing or mismatched model is a bad
    // configuration, found before anything starts (and kept loaded for the projection).
    let embedders = Arc::new(crate::vector::Embedders::default());
    let embedder = if config.vectors.enabled && (roles.vectors || roles.api) {
        let v = config.vectors.clone();
        let e = embedders.clone();
        let loaded = tokio::task::spawn_blocking(move || {
            if !v.dir.exists() {
                // A first start: the first generation will be the configured embedder's.
                return e.shared(&v.embedder);
            }
            let gens = crate::generations::Generations::new(&v.dir)?;
            e.for_generation(&gens.path(&gens.active_or_first()?), &v.embedder)
        })
        .await??;
        tracing::info!(model = %loaded.model(), dim = loaded.dim(), "embedder loaded");
        Some(loaded)
    } else {
        None
    };
    let broker = if config.embedded() {
        if config.embedded_auth() && config.embedded_login.is_none() {
            config = config.with_embedded_login(crate::config::Login::Create)?;
        }
        let login = config
            .embedded_login
            .as_ref()
            .filter(|_| config.embedded_auth());
        if let Some(l) = login {
            l.save(&config.embedded.credentials)?;
        }
        let b =
            EmbeddedBroker::start_with(&config.embedded.listen, &config.embedded.storage, login)
                .await?;
        tracing::info!(bootstrap = %b.bootstrap(), storage = %config.embedded.storage, "embedded broker started");
        Some(b)
    } else {
        None
    };
    let bootstrap = config.bootstrap();
    let partitions = prepare_topics(&config, roles.apply && config.sources.intake).await?;
    config.kafka.partitions = partitions;
    let c = config.clone();
    let codec = Arc::new(tokio::task::spawn_blocking(move || Codec::connect(&c)).await??);
    let ctx = AppContext {
        config: Arc::new(config),
        codec,
        status: Arc::new(Status::default()),
        shutdown: Shutdown::new(),
        partitions,
        embedders,
    };
    let config = ctx.config.clone();
    let store = if roles.apply {
        std::fs::create_dir_all(&config.state.dir)
            .with_context(|| format!("create {}", config.state.dir.display()))?;
        Some(Arc::new(RocksStore::open(
            &config.state.dir,
            &config.state.rocks(),
        )?))
    } else {
        ctx.status.set_no_processor();
        None
    };
    // The process with `project-views` holds the view store (and runs its sink when
    // `views.enabled`); an `api` process without it follows that process's store.
    let views_owner = roles.views;
    let views = if views_owner || roles.api {
        let c = config.clone();
        Some(tokio::task::spawn_blocking(move || parts::open_views(&c, views_owner)).await??)
    } else {
        None
    };
    // The sources store goes with the view store: held by `project-views`, followed by `api`.
    let sources = if (views_owner || roles.api) && config.sources.enabled {
        let c = config.clone();
        Some(tokio::task::spawn_blocking(move || parts::open_sources(&c, views_owner)).await??)
    } else {
        None
    };
    let vectors_owner = roles.vectors && config.vectors.enabled;
    let search: Option<SearchSlot> =
        (vectors_owner || (roles.api && config.vectors.enabled)).then(SearchSlot::default);
    let handle = metrics::install()?;
    let http = match (&views, roles.api) {
        (Some(v), true) => Some(
            crate::serve::api::Api::new(
                config.clone(),
                v.clone(),
                partitions,
                ctx.codec.clone(),
                search.clone(),
                store.clone(),
            )
            .with_status(ctx.status.clone())
            .with_sources(sources.clone()),
        ),
        _ => None,
    };
    let api = http.clone();
    // This process's replicas are filling until their sinks report otherwise: reads wait for
    // the view replica (`503 not_ready` meanwhile), readiness for both.
    if views_owner && config.views.enabled {
        ctx.status
            .set_sink(crate::pipeline::project::views::SINK, false);
    }
    let sources_sink = views_owner && config.views.enabled && config.sources.enabled;
    if sources_sink {
        ctx.status
            .set_sink(crate::pipeline::project::views::SOURCES_SINK, false);
    }
    if vectors_owner {
        ctx.status
            .set_sink(crate::pipeline::project::vectors::SINK, false);
    }
    let http = serve_http(&ctx, handle, http, roles).await?;
    let processor = match store {
        Some(s) => Some(parts::apply(&ctx, s)?),
        None => None,
    };
    let mut sinks = Vec::new();
    if roles.apply && config.sources.intake {
        sinks.push(parts::intake(&ctx)?);
    }
    if views_owner
        && config.views.enabled
        && let Some(live) = views.clone()
    {
        sinks.push(parts::project_views(&ctx, live)?);
    }
    if vectors_owner && let Some(slot) = &search {
        sinks.push(parts::project_vectors(&ctx, slot.clone())?);
    }
    if sources_sink && let Some(live) = sources.clone() {
        sinks.push(parts::project_sources(&ctx, live)?);
    }
    let followed: Vec<_> = views
        .into_iter()
        .chain(sources)
        .filter(|_| !views_owner)
        .collect();
    let followed_vectors = search.filter(|_| !vectors_owner);
    if !followed.is_empty() || followed_vectors.is_some() {
        sinks.push(parts::follow(&ctx, followed, followed_vectors)?);
    }
    Ok(Running {
        broker,
        bootstrap,
        partitions,
        status: ctx.status,
        shutdown: ctx.shutdown,
        api,
        processor,
        sinks,
        http,
        _embedder: embedder,
    })
}

/// The HTTP listener (metrics, health, readiness, and the API when `api` is given), if one is
/// configured.
async fn serve_http(
    ctx: &AppContext,
    handle: metrics_exporter_prometheus::PrometheusHandle,
    api: Option<crate::serve::api::Api>,
    roles: Roles,
) -> anyhow::Result<Option<tokio::task::JoinHandle<()>>> {
    let config = &ctx.config;
    if config.http.listen.is_empty() {
        return Ok(None);
    }
    if let Some(api) = &api {
        crate::serve::api::purges::watch(api.clone(), ctx.shutdown.clone());
    }
    let router = http::router(
        handle,
        ctx.status.clone(),
        api,
        &config.http,
        config.limits.record_bytes_max,
    );
    let h = http::serve(&config.http.listen, router, &config.http).await?;
    tracing::info!(metrics = %format!("http://{}/metrics", config.http.listen), roles = ?roles, "http listening");
    Ok(Some(h))
}

/// First and largest pause between attempts to reach the broker at start.
const START_BACKOFF: crate::backoff::Backoff = crate::backoff::Backoff::from_millis(500, 30_000);

/// Creates the topics (when configured) and checks them (the source topics when this process
/// runs the `intake`); returns the partition count. An unreachable broker is waited for with backoff (logged), for as long as it takes; topics
/// that are missing or not co-partitioned are a configuration error and end the start.
async fn prepare_topics(config: &Config, intake: bool) -> anyhow::Result<i32> {
    let bootstrap = config.bootstrap();
    let t = config.topics();
    // A client that cannot log in will not by waiting: one line, and the end. An unreachable
    // broker is waited for below.
    let c = config.clone();
    if let Err(login @ crate::kafka::preflight::PreflightError::Login { .. }) =
        tokio::task::spawn_blocking(move || crate::kafka::preflight::preflight(&c)).await?
    {
        return Err(login.into());
    }
    let mut backoff = START_BACKOFF;
    loop {
        let attempt = async {
            if config.kafka.create_topics {
                topics::create_configured(config).await?;
            }
            let (b, t2, c) = (
                crate::kafka::clients::client_config(config),
                t.clone(),
                config.clone(),
            );
            tokio::task::spawn_blocking(move || {
                let n = topics::check(&b, &t2)?;
                if intake {
                    topics::check_sources(&b, &t2)?;
                }
                // A ledger `kledger repartition` moved is not run on its old topics.
                if let Some((prefix, to)) =
                    crate::pipeline::repartition::moved_to(&c, &t2.keys)?
                {
                    anyhow::bail!(
                        "this ledger moved to topics under {prefix:?} with {to} partitions (kledger repartition): set kafka.topic_prefix = {prefix:?} and kafka.partitions = {to}"
                    );
                }
                Ok(n)
            })
            .await?
        };
        match attempt.await {
            Ok(p) => return Ok(p),
            Err(e) if e.chain().any(|c| c.is::<rdkafka::error::KafkaError>()) => {
                let pause = backoff.next_pause();
                tracing::warn!(bootstrap = %bootstrap, error = %format!("{e:#}"), pause_ms = pause.as_millis(), "the broker cannot be reached; trying again");
                tokio::time::sleep(pause).await;
            }
            Err(e) => return Err(e),
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
        self.shutdown.trigger();
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
