//! `kledger rebuild views|qdrant`: rebuild a projection from the outbox into a new generation
//! and swap it in atomically when it has caught up (see [`crate::generations`]).
//!
//! The rebuild reads every outbox partition from the new generation's own positions to the end
//! the broker reports, with the same fold as the live sink. Positions are written with the
//! data, so a rebuild killed midway resumes its generation (named in `BUILDING`) where it
//! stopped. When every partition is done the generation is closed and made `ACTIVE`; a running
//! kledger swaps it in within a second and deletes the old one when its readers are done. The
//! views topic is not republished (a rebuilt View equals the published one). A vector
//! generation is written build-only ([`crate::vector::edge::EdgeOptions::build_only`]): the
//! embedded engine leaves the payload indexes it rebuilds on every open alone until the
//! generation is closed, and the live process opens it afresh to swap it in.

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread::JoinHandle;
use std::time::Instant;

use anyhow::Context;
use kledger_processors::embed::HashEmbedder;
use kledger_schemas::Commit;
use kledger_schemas::avro::decode;
use kledger_state::{MarkStore, ViewStore};
use rdkafka::message::Message;

use crate::config::Config;
use crate::generations::Generations;
use crate::replay::TopicReader;
use crate::sinks::vectors;

/// Outbox records folded per write of the view store.
pub const BATCH_RECORDS: usize = 1_000;
/// Outbox records projected per write of the vector index (50,000 measured no faster and held
/// five times the memory).
pub const VECTOR_BATCH_RECORDS: usize = 10_000;
/// The first vector batch: the batches double from here up to [`VECTOR_BATCH_RECORDS`], so the
/// index's writers start after a short first read instead of waiting for a whole batch.
pub const VECTOR_FIRST_BATCH_RECORDS: usize = 500;
/// Outbox records projected between two syncs of the vector index (a flush of every engine
/// shard, then the marks): a rebuild killed midway repeats at most this many.
pub const VECTOR_SYNC_RECORDS: u64 = 50_000;

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

/// Which projection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Projection {
    /// The view store.
    Views,
    /// The vector index (`qdrant`).
    Vectors,
}

/// A generation being written.
trait Target {
    fn position(&self, p: i32) -> anyhow::Result<i64>;
    fn write(&mut self, commits: &[(i32, i64, Commit)], read: &[(i32, i64)]) -> anyhow::Result<()>;
    fn finish(&mut self) -> anyhow::Result<()>;
}

impl Target for ViewStore {
    fn position(&self, p: i32) -> anyhow::Result<i64> {
        Ok(ViewStore::position(self, p)?)
    }

    fn write(&mut self, commits: &[(i32, i64, Commit)], read: &[(i32, i64)]) -> anyhow::Result<()> {
        crate::sinks::views::fold(self, commits, read.iter().copied())
    }

    fn finish(&mut self) -> anyhow::Result<()> {
        // Views are not republished: mark every View due as published.
        loop {
            let due = self.pending(10_000)?;
            if due.is_empty() {
                return Ok(());
            }
            self.published(&due)?;
        }
    }
}

/// The vector generation being written, on two threads: the caller reads, decodes, plans and
/// embeds batch N+1 ([`vectors::prepare`], against the marks) while a writer thread writes
/// batch N to the index ([`vectors::write_unsynced`]), in batch order; every
/// [`VECTOR_SYNC_RECORDS`] records and at the end the writer makes the index durable and then
/// writes the marks ([`vectors::sync`]). At most one prepared batch waits.
///
/// The writer thread opens the index itself (creating a collection and its payload indexes
/// takes a few hundred milliseconds), so the outbox's first batch is read meanwhile; it also
/// closes the index, before [`Target::finish`] returns.
struct VectorTarget {
    marks: Arc<MarkStore>,
    embedder: Box<dyn crate::vector::embedder::Embedder>,
    hasher: HashEmbedder,
    /// Whether payloads are rendered for the embedded engine as they are built
    /// ([`crate::vector::VectorIndex::renders_payloads`]).
    render: bool,
    tx: Option<SyncSender<vectors::Prepared>>,
    writer: Option<JoinHandle<anyhow::Result<()>>>,
}

/// Opens a generation's index (on the writer thread).
type OpenIndex =
    Box<dyn FnOnce() -> anyhow::Result<Arc<dyn crate::vector::VectorIndex>> + Send + 'static>;

impl VectorTarget {
    fn new(
        marks: MarkStore,
        open: OpenIndex,
        embedder: Box<dyn crate::vector::embedder::Embedder>,
        render: bool,
    ) -> anyhow::Result<Self> {
        let marks = Arc::new(marks);
        let (tx, rx) = sync_channel::<vectors::Prepared>(1);
        let writes = marks.clone();
        let writer = std::thread::Builder::new()
            .name("rebuild-vectors".into())
            .spawn(move || -> anyhow::Result<()> {
                let index = open()?;
                let mut pending = vectors::Unsynced::default();
                for batch in rx {
                    vectors::write_unsynced(index.as_ref(), batch, &mut pending)?;
                    if pending.records >= VECTOR_SYNC_RECORDS {
                        vectors::sync(index.as_ref(), &writes, &mut pending)?;
                    }
                }
                vectors::sync(index.as_ref(), &writes, &mut pending)
            })?;
        Ok(Self {
            marks,
            embedder,
            hasher: HashEmbedder::default(),
            render,
            tx: Some(tx),
            writer: Some(writer),
        })
    }

    /// Stops taking batches and waits for the writer: its result.
    fn join(&mut self) -> anyhow::Result<()> {
        drop(self.tx.take());
        match self.writer.take() {
            Some(h) => h
                .join()
                .map_err(|_| anyhow::anyhow!("the vector writer thread panicked"))?,
            None => Ok(()),
        }
    }
}

impl Drop for VectorTarget {
    fn drop(&mut self) {
        // A rebuild that fails still lets the batch being written finish before the
        // generation is released.
        let _ = self.join();
    }
}

impl Target for VectorTarget {
    fn position(&self, p: i32) -> anyhow::Result<i64> {
        Ok(self.marks.position(p)?)
    }

    fn write(&mut self, commits: &[(i32, i64, Commit)], read: &[(i32, i64)]) -> anyhow::Result<()> {
        let prepared = vectors::prepare(
            &self.marks,
            &*self.embedder,
            &self.hasher,
            commits,
            read.iter().copied(),
            self.render,
        )?;
        if self.tx.as_ref().is_some_and(|tx| tx.send(prepared).is_ok()) {
            return Ok(());
        }
        // The writer stopped: its error says why.
        self.join()?;
        anyhow::bail!("the vector writer stopped")
    }

    fn finish(&mut self) -> anyhow::Result<()> {
        self.join()
    }
}

/// Whether another process holds the generation at `path` (its RocksDB lock).
fn in_use(projection: Projection, path: &Path) -> bool {
    match projection {
        Projection::Views => ViewStore::open(path, 1 << 20).is_err(),
        Projection::Vectors => {
            let marks = path.join("marks");
            marks.exists() && MarkStore::open(&marks).is_err()
        }
    }
}

/// Rebuilds `projection` from the outbox. Blocking.
pub fn rebuild(
    config: &Config,
    projection: Projection,
    show_progress: bool,
) -> anyhow::Result<RebuildReport> {
    let started = Instant::now();
    let root = match projection {
        Projection::Views => config.views.dir.clone(),
        Projection::Vectors => config.vectors.dir.clone(),
    };
    let gens = Generations::new(&root)?;
    let deleted = gens.collect_garbage(&|p| in_use(projection, p))?;
    let (generation, resumed) = gens.begin()?;
    let dir = gens.path(&generation);
    tracing::info!(?projection, %generation, resumed, "rebuild started");
    let mut target: Box<dyn Target> = match projection {
        Projection::Views => Box::new(ViewStore::open_bounded(
            &dir,
            config.views.cache_bytes,
            config.views.memtable_bytes,
        )?),
        Projection::Vectors => {
            let embedder = crate::vector::embedder::from_config(&config.vectors.embedder)?;
            let name = kledger_processors::payload::collection_name("text", embedder.dim(), 1);
            let marks = crate::vector::open_marks(&dir)?;
            let (v, dim, dir, generation) = (
                config.vectors.clone(),
                embedder.dim(),
                dir.clone(),
                generation.clone(),
            );
            let open: OpenIndex = Box::new(move || {
                crate::vector::open_index(&v, &name, dim, &dir, &generation, true, true)
            });
            let render = crate::vector::embedded(&config.vectors);
            Box::new(VectorTarget::new(marks, open, embedder, render)?)
        }
    };
    let bootstrap = config.bootstrap();
    let topics = config.topics();
    let partitions = crate::topics::check(&bootstrap, &topics)?;
    let mut from = Vec::new();
    for p in 0..partitions {
        from.push(target.position(p)?);
    }
    let total: u64 = crate::topics::high_watermarks(&bootstrap, &topics.outbox, partitions)?
        .iter()
        .zip(&from)
        .map(|(h, f)| (h - f).max(0) as u64)
        .sum();
    let bar = crate::progress::bar(Some(total), "outbox records folded", show_progress);
    let lookup = crate::registry::Codec::connect(config)?;
    let (mut records, mut undecodable) = (0u64, 0u64);
    let from: std::collections::BTreeMap<i32, i64> =
        (0..partitions).map(|p| (p, from[p as usize])).collect();
    // Every partition at once: one fetch serves them all.
    let mut reader = TopicReader::open(config, &topics.outbox, &from)?;
    let opened = started.elapsed().as_secs_f64();
    let (mut batch_max, batch_most) = match projection {
        Projection::Views => (BATCH_RECORDS, BATCH_RECORDS),
        Projection::Vectors => (VECTOR_FIRST_BATCH_RECORDS, VECTOR_BATCH_RECORDS),
    };
    while let Some(batch) = reader.next_batch(batch_max)? {
        batch_max = (batch_max * 2).min(batch_most);
        let mut commits = Vec::with_capacity(batch.len());
        let mut read = Vec::with_capacity(batch.len());
        for m in &batch {
            read.push((m.partition(), m.offset()));
            match decode::<Commit>(m.payload().unwrap_or_default(), &lookup) {
                Ok(c) => commits.push((m.partition(), m.offset(), c)),
                Err(e) => {
                    undecodable += 1;
                    tracing::warn!(partition = m.partition(), offset = m.offset(), error = %e, "outbox record does not decode; skipped");
                }
            }
        }
        if !read.is_empty() {
            target
                .write(&commits, &read)
                .with_context(|| format!("rebuild {projection:?}"))?;
        }
        records += batch.len() as u64;
        bar.inc(batch.len() as u64);
    }
    let read_all = started.elapsed().as_secs_f64();
    target.finish()?;
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
