//! `kledger rebuild views|sources|qdrant`: rebuild a projection from the outbox into a new generation
//! and swap it in atomically when it has caught up (see [`kledger_runtime::generations`]).
//!
//! The rebuild reads every outbox partition from the new generation's own positions to the end
//! the broker reports, with the same fold as the live sink. Positions are written with the
//! data, so a rebuild killed midway resumes its generation (named in `BUILDING`) where it
//! stopped. When every partition is done the generation is closed and made `ACTIVE`; a running
//! kledger swaps it in within a second and deletes the old one when its readers are done. The
//! views topic is not republished (a rebuilt View equals the published one). A vector
//! generation is written build-only ([`kledger_vectors::edge::EdgeOptions::build_only`]): the
//! embedded engine leaves the payload indexes it rebuilds on every open alone until the
//! generation is closed, and the live process opens it afresh to swap it in.

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::Context;
use kledger_state::{Lane, MarkStore, ViewStore};

use crate::project::vectors::{OpenIndex, VectorBuild};
use crate::project::views::ViewProjection;
use crate::project::{self, Ramp};
use kledger_kafka::clients::RestoreContext;
use kledger_kafka::reader::{PartitionReader, SOURCE_PROBE};
use kledger_runtime::config::Config;
use kledger_runtime::generations::Generations;

/// Outbox records projected per write of the vector index (50,000 measured no faster and held
/// five times the memory).
pub const VECTOR_BATCH_RECORDS: usize = 10_000;
/// The first vector batch: the batches double from here up to [`VECTOR_BATCH_RECORDS`], so the
/// index's writers start after a short first read instead of waiting for a whole batch.
pub const VECTOR_FIRST_BATCH_RECORDS: usize = 500;

/// What a rebuild did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RebuildReport {
    /// The generation built (now active).
    pub generation: String,
    /// Whether it continued an interrupted rebuild.
    pub resumed: bool,
    /// Outbox records read.
    pub records: u64,
    /// Records that did not decode (skipped; the live sink dead-letters them).
    pub undecodable: u64,
    /// Old generations deleted (no process held them).
    pub deleted: Vec<String>,
}

/// Which projection (`kledger rebuild views|sources|qdrant`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProjectionKind {
    /// The view store.
    Views,
    /// The sources store (people, conversations, calendar, screen).
    Sources,
    /// The vector index.
    #[value(name = "qdrant")]
    Vectors,
}

impl ProjectionKind {
    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            ProjectionKind::Views => "views",
            ProjectionKind::Sources => "sources",
            ProjectionKind::Vectors => "qdrant",
        }
    }
}

/// The projection `kind` writing generation `generation` in `dir`.
fn open_projection(
    config: &Config,
    kind: ProjectionKind,
    dir: &Path,
    generation: &str,
) -> anyhow::Result<Box<dyn project::Projection>> {
    Ok(match kind {
        ProjectionKind::Views | ProjectionKind::Sources => {
            let store = match kind {
                ProjectionKind::Sources => ViewStore::open_bounded(
                    dir,
                    config.sources.cache_bytes,
                    config.sources.memtable_bytes,
                )?
                .with_lane(Lane::Sources),
                _ => ViewStore::open_bounded(
                    dir,
                    config.views.cache_bytes,
                    config.views.memtable_bytes,
                )?,
            };
            Box::new(ViewProjection::new(
                &config.views,
                &config.limits,
                Arc::new(store),
            ))
        }
        ProjectionKind::Vectors => {
            // The new generation's embedding space is the configured embedder's.
            let embedder = kledger_vectors::Embedders::default()
                .for_generation(dir, &config.vectors.embedder)?;
            let name = kledger_processors::payload::collection_name("text", embedder.dim(), 1);
            let marks = kledger_vectors::open_marks(dir)?;
            let (v, dim, dir, generation) = (
                config.vectors.clone(),
                embedder.dim(),
                dir.to_owned(),
                generation.to_owned(),
            );
            let open: OpenIndex = Box::new(move || {
                kledger_vectors::open_index(&v, &name, dim, &dir, &generation, true, true)
            });
            Box::new(VectorBuild::new(marks, open, embedder)?)
        }
    })
}

/// A reader of every outbox partition from `target`'s positions (every partition at once: one
/// fetch serves them all), and how many records it has to read.
fn read_from_positions(
    config: &Config,
    target: &dyn project::Projection,
) -> anyhow::Result<(PartitionReader<RestoreContext>, u64)> {
    let bootstrap = kledger_kafka::clients::client_config(config);
    let topics = config.topics();
    let partitions = kledger_kafka::topics::check(&bootstrap, &topics)?;
    let mut from = std::collections::BTreeMap::new();
    for p in 0..partitions {
        from.insert(p, target.position(p)?);
    }
    let total: u64 =
        kledger_kafka::topics::high_watermarks(&bootstrap, &topics.outbox, partitions)?
            .iter()
            .zip(from.values())
            .map(|(h, f)| (h - f).max(0) as u64)
            .sum();
    let reader = PartitionReader::source(config, &topics.outbox, "rebuild", &from, SOURCE_PROBE)?;
    Ok((reader, total))
}

/// Whether another process holds the generation at `path` (its RocksDB lock).
fn in_use(projection: ProjectionKind, path: &Path) -> bool {
    match projection {
        ProjectionKind::Views | ProjectionKind::Sources => ViewStore::open(path, 1 << 20).is_err(),
        ProjectionKind::Vectors => {
            let marks = path.join("marks");
            marks.exists() && MarkStore::open(&marks).is_err()
        }
    }
}

/// Rebuilds `projection` from the outbox: opens a new generation (or resumes the one being
/// built), drives the projection into it to the outbox's end, and promotes it. Blocking.
pub fn rebuild(
    config: &Config,
    projection: ProjectionKind,
    show_progress: bool,
) -> anyhow::Result<RebuildReport> {
    let started = Instant::now();
    let root = match projection {
        ProjectionKind::Views => config.views.dir.clone(),
        ProjectionKind::Sources => config.sources_dir(),
        ProjectionKind::Vectors => config.vectors.dir.clone(),
    };
    let gens = Generations::new(&root)?;
    let deleted = gens.collect_garbage(&|p| in_use(projection, p))?;
    let (generation, resumed) = gens.begin()?;
    tracing::info!(?projection, %generation, resumed, "rebuild started");
    let mut target = open_projection(config, projection, &gens.path(&generation), &generation)?;
    let (mut reader, total) = read_from_positions(config, target.as_ref())?;
    let bar = kledger_runtime::progress::bar(Some(total), "outbox records folded", show_progress);
    let lookup = kledger_kafka::codec::Codec::connect(config)?;
    let opened = started.elapsed().as_secs_f64();
    let ramp = match projection {
        ProjectionKind::Views | ProjectionKind::Sources => Ramp {
            first: config.bulk.records_max,
            max: config.bulk.records_max,
        },
        ProjectionKind::Vectors => Ramp {
            first: VECTOR_FIRST_BATCH_RECORDS,
            max: VECTOR_BATCH_RECORDS,
        },
    };
    let drove = project::drive_to_end(config, target.as_mut(), &mut reader, &lookup, ramp, &|n| {
        bar.inc(n)
    })
    .with_context(|| format!("rebuild {projection:?}"))?;
    let (records, undecodable) = (drove.records, drove.undecodable);
    let read_all = started.elapsed().as_secs_f64() - drove.finish.as_secs_f64();
    drop(target);
    bar.finish_and_clear();
    gens.promote(&generation)?;
    let secs = started.elapsed().as_secs_f64();
    // Where the time went: opening (the generation, the topics, the reader; a vector index
    // opens on the writer thread, during the read), reading the outbox (with the target
    // writing behind it), finishing (the target's last writes and syncs, then the swap).
    let (open_secs, read_secs, finish_secs) = (opened, read_all - opened, secs - read_all);
    tracing::info!(
        ?projection,
        %generation,
        resumed,
        records,
        undecodable,
        secs,
        open_secs,
        read_secs,
        finish_secs,
        rate = records as f64 / secs.max(1e-9),
        "rebuild finished; generation active"
    );
    Ok(RebuildReport {
        generation,
        resumed,
        records,
        undecodable,
        deleted,
    })
}
