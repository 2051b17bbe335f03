//! One function per part of a running kledger: the processor (`apply`) and the source intake
//! beside it, the projection sinks (`project-views`, `project-qdrant`), the follower of projections another process
//! owns, and the HTTP listener (`api`); and what they share: threads, supervision, stores.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::backoff::Backoff;

use anyhow::Context;
use kledger_state::{Lane, RocksStore, ViewStore};

use crate::config::BatchConfig;
use crate::config::Config;
use crate::context::AppContext;
use crate::generations::Live;
use crate::metrics;
use crate::pipeline::apply::Processor;
use crate::pipeline::intake::Intake;
use crate::pipeline::project::reader::OutboxReader;
use crate::pipeline::project::vectors::{self, VectorProjection};
use crate::pipeline::project::views::{self, ViewProjection};
use crate::pipeline::project::{Projection, drive_live};
use crate::shutdown::Shutdown;
use crate::vector::{SearchIndex, SearchSlot, VectorGen};

/// A part running on its own OS thread: resolves with its result.
pub(crate) type Part = tokio::task::JoinHandle<anyhow::Result<()>>;

/// Runs `f` on a named OS thread (every rdkafka and RocksDB call in it may block).
pub(crate) fn spawn_thread(
    name: &str,
    f: impl FnOnce() -> anyhow::Result<()> + Send + 'static,
) -> anyhow::Result<Part> {
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

/// The processor (`apply`) on its own thread, over `store`.
pub(crate) fn apply(ctx: &AppContext, store: Arc<RocksStore>) -> anyhow::Result<Part> {
    let ctx = ctx.clone();
    spawn_thread("kledger-apply", move || {
        Processor::new(&ctx, store).and_then(Processor::run)
    })
}

/// The source intake (with `apply`, when `sources.intake`): forwards the source topics to the
/// intents topic, started again after each failure like a sink.
pub(crate) fn intake(ctx: &AppContext) -> anyhow::Result<Part> {
    let ctx = ctx.clone();
    spawn_thread("kledger-intake", move || {
        supervise("intake", &ctx.shutdown, || {
            Intake::new(&ctx.config, ctx.codec.clone(), ctx.partitions)?.run(&ctx.shutdown)
        });
        Ok(())
    })
}

/// The view sink (`project-views`): drives the view projection of `live`'s active
/// generation, again on each rebuilt generation and after each failure.
pub(crate) fn project_views(ctx: &AppContext, live: Arc<Live<ViewStore>>) -> anyhow::Result<Part> {
    let ctx = ctx.clone();
    spawn_thread("kledger-views", move || {
        let c = ctx.config.clone();
        let ttl = c.policy.ttl;
        drive_sink(&ctx, views::SINK, c.views.batch, &live, |store| {
            let p = ViewProjection::new(&c.views, &c.limits, store);
            if ttl.purge {
                p.with_ttl(views::TtlSweep::new(&ttl, ctx.partitions))
            } else {
                p
            }
        });
        Ok(())
    })
}

/// The sources sink (with `project-views`): drives the sources lane's projection of `live`'s
/// active generation, as [`project_views`] drives the view store's.
pub(crate) fn project_sources(
    ctx: &AppContext,
    live: Arc<Live<ViewStore>>,
) -> anyhow::Result<Part> {
    let ctx = ctx.clone();
    spawn_thread("kledger-sources", move || {
        let c = ctx.config.clone();
        drive_sink(&ctx, views::SOURCES_SINK, c.sources.batch, &live, |store| {
            ViewProjection::new(&c.views, &c.limits, store)
        });
        Ok(())
    })
}

/// The vector sink (`project-qdrant`): opens the vector projection (retried until it opens: a
/// Qdrant server may be unreachable at start), hands it to search through `slot`, and drives
/// it like [`project_views`].
pub(crate) fn project_vectors(ctx: &AppContext, slot: SearchSlot) -> anyhow::Result<Part> {
    let ctx = ctx.clone();
    spawn_thread("kledger-vectors", move || {
        let Some(search) = open_vectors_until_open(&ctx) else {
            return Ok(());
        };
        let live = search.live.clone();
        let _ = slot.set(search);
        let batch = ctx.config.vectors.batch;
        drive_sink(&ctx, vectors::SINK, batch, &live, VectorProjection::new);
        Ok(())
    })
}

/// Drives the projection `project` makes of `live`'s active generation from the sink's group
/// (`<group_id>-<sink>`) until shutdown: again on each rebuilt generation, and after each
/// failure ([`supervise`]).
fn drive_sink<T: Send + Sync + 'static, P: Projection>(
    ctx: &AppContext,
    sink: &'static str,
    batch: BatchConfig,
    live: &Live<T>,
    project: impl Fn(Arc<T>) -> P,
) {
    supervise(sink, &ctx.shutdown, || {
        let mut reader = OutboxReader::new(&ctx.config, sink, batch.bounds(), ctx.codec.clone())?;
        let generation = live.generation();
        let mut projection = project(live.get());
        let mut swapped = || -> anyhow::Result<bool> {
            live.refresh()?;
            Ok(live.generation() != generation)
        };
        drive_live(
            &ctx.config,
            &mut projection,
            &mut reader,
            &mut swapped,
            &ctx.status,
            &ctx.shutdown,
        )
    });
}

/// Opens the vector projection as its owner, retried with backoff until it opens (none at
/// shutdown).
fn open_vectors_until_open(ctx: &AppContext) -> Option<SearchIndex> {
    let mut backoff = RETRY_BACKOFF;
    loop {
        match open_vectors(ctx, true) {
            Ok(v) => return Some(v),
            Err(e) => {
                let pause = backoff.next_pause();
                tracing::warn!(error = %format!("{e:#}"), pause_ms = pause.as_millis(), "the vector index does not open; trying again");
                if ctx.shutdown.sleep(pause) {
                    return None;
                }
            }
        }
    }
}

/// Opens the view store's active generation: as its owner (`project-views`) or as a
/// read-only follower of the owner's RocksDB (`api` alone).
pub(crate) fn open_views(config: &Config, owner: bool) -> anyhow::Result<Arc<Live<ViewStore>>> {
    let (cache, memtables) = (config.views.cache_bytes, config.views.memtable_bytes);
    open_lane(&config.views.dir, Lane::Ledger, cache, memtables, owner)
}

/// Opens the sources store's active generation, as [`open_views`] opens the view store's.
pub(crate) fn open_sources(config: &Config, owner: bool) -> anyhow::Result<Arc<Live<ViewStore>>> {
    let (cache, memtables) = (config.sources.cache_bytes, config.sources.memtable_bytes);
    open_lane(
        &config.sources_dir(),
        Lane::Sources,
        cache,
        memtables,
        owner,
    )
}

/// Opens the store of `lane` whose generations are in `dir`, as its owner or a follower.
fn open_lane(
    dir: &std::path::Path,
    lane: Lane,
    cache: usize,
    memtables: usize,
    owner: bool,
) -> anyhow::Result<Arc<Live<ViewStore>>> {
    let live = if owner {
        Live::open(dir, true, move |p| {
            Ok(ViewStore::open_bounded(p, cache, memtables)?.with_lane(lane))
        })?
    } else {
        let scratch = std::env::temp_dir().join(format!(
            "kledger-{}-follower-{}",
            views::sink_of_lane(lane),
            std::process::id()
        ));
        Live::open(dir, false, move |p| {
            let name = p
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            let secondary = scratch.join(name);
            std::fs::create_dir_all(&secondary)?;
            ViewStore::open_secondary(p, &secondary, cache)
                .map(|s| s.with_lane(lane))
                .with_context(|| {
                format!(
                    "open the view store at {} as a follower (is a project-views process running?)",
                    p.display()
                )
            })
        })?
    };
    Ok(Arc::new(live))
}

/// Opens the vector projection's active generation (and each one swapped in later), each with
/// the embedder it was built with ([`crate::vector::Embedders::for_generation`]).
fn open_vectors(ctx: &AppContext, owner: bool) -> anyhow::Result<SearchIndex> {
    let v = ctx.config.vectors.clone();
    let embedders = ctx.embedders.clone();
    let live = Live::open(&v.dir.clone(), owner, move |p| {
        let generation = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let embedder = embedders.for_generation(p, &v.embedder)?;
        let dim = embedder.dim();
        let name = kledger_processors::payload::collection_name("text", dim, 1);
        tracing::info!(collection = %name, backend = ?v.backend, model = %embedder.model(), generation = %generation, "vector index open");
        let index = crate::vector::open_index(&v, &name, dim, p, &generation, owner, false)?;
        let marks = if owner {
            Some(crate::vector::open_marks(p)?)
        } else {
            None
        };
        Ok(VectorGen {
            index,
            embedder,
            marks,
        })
    })?;
    Ok(SearchIndex {
        live: Arc::new(live),
    })
}

/// How often a follower catches up.
const FOLLOW_INTERVAL: Duration = Duration::from_millis(200);

/// A follower keeps up with the projections another process writes: it catches up with the
/// view store's and the sources store's writes and swaps in rebuilt generations; it opens the vector projection for
/// search (read-only, retried with backoff until it opens) and hands it over through `vectors`.
pub(crate) fn follow(
    ctx: &AppContext,
    stores: Vec<Arc<Live<ViewStore>>>,
    vectors: Option<SearchSlot>,
) -> anyhow::Result<Part> {
    let ctx = ctx.clone();
    spawn_thread("kledger-follow", move || {
        let mut backoff = RETRY_BACKOFF;
        let mut next_open = std::time::Instant::now();
        loop {
            for v in &stores {
                if let Err(e) = v.refresh().and_then(|_| Ok(v.get().catch_up()?)) {
                    let store = views::sink_of_lane(v.get().lane());
                    tracing::warn!(store, error = %format!("{e:#}"), "store follower");
                }
            }
            if let Some(slot) = &vectors {
                match slot.get() {
                    Some(v) => {
                        if let Err(e) = v.live.refresh() {
                            tracing::warn!(error = %format!("{e:#}"), "vector follower");
                        }
                    }
                    None if std::time::Instant::now() >= next_open => {
                        match open_vectors(&ctx, false) {
                            Ok(v) => {
                                let _ = slot.set(v);
                            }
                            Err(e) => {
                                let pause = backoff.next_pause();
                                tracing::warn!(error = %format!("{e:#}"), pause_ms = pause.as_millis(), "the vector index does not open; trying again");
                                next_open = std::time::Instant::now() + pause;
                            }
                        }
                    }
                    None => {}
                }
            }
            if ctx.shutdown.sleep(FOLLOW_INTERVAL) {
                return Ok(());
            }
        }
    })
}

/// First and largest pause before a failed part starts again (a sink, or opening the vector
/// index).
const RETRY_BACKOFF: Backoff = Backoff::from_millis(500, 60_000);

/// Runs a sink until shutdown, starting it again after a failure (with a growing pause): a
/// sink's failure (a broker outage, a full disk, a gap it refuses to fold over) stops its
/// projection, not the processor. Each failure is logged and counted.
fn supervise(sink: &'static str, shutdown: &Shutdown, mut run: impl FnMut() -> anyhow::Result<()>) {
    // The restarts counter exists (at 0) before the first failure: alerts read it.
    ::metrics::counter!(metrics::SINK_RESTARTS_TOTAL, "sink" => sink).increment(0);
    let mut backoff = RETRY_BACKOFF;
    while !shutdown.is_triggered() {
        let started = Instant::now();
        let result = run();
        // A run that lasted longer than the largest pause was well: its failure starts the
        // pauses over (a sink that failed through an outage resumes soon after the next one).
        if started.elapsed() >= backoff.max() {
            backoff.reset();
        }
        match result {
            Ok(()) => backoff.reset(),
            Err(e) => {
                let pause = backoff.next_pause();
                tracing::error!(sink, error = %format!("{e:#}"), pause_ms = pause.as_millis(), "sink failed; starting it again");
                ::metrics::counter!(metrics::SINK_RESTARTS_TOTAL, "sink" => sink).increment(1);
                shutdown.sleep(pause);
            }
        }
    }
}
