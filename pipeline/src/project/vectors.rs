//! The vector projection: keeps the collection `cm_text_<dim>_v1` in step with the outbox.
//!
//! Per batch ([`super`] drives it): for each commit above its account's mark,
//! every changed row is placed — active, superseded and closed rows are upserted with their
//! status in the payload (default search asks for active ones), tombstoned and restricted rows
//! are deleted (restricted rows are never written). Within a batch the last change of a row
//! wins. Vectors: the intent's own when its model is the embedder's and its dimension the
//! collection's, else the configured embedder's; sparse term vectors are BM25's
//! ([`kledger_processors::bm25`]).
//! The index write is acknowledged (durable) before the marks are written, so a crash repeats
//! a batch and never skips one; commits at or below an account's mark are skipped, so a sink
//! that re-reads old commits never regresses a newer point.
//!
//! Two projections write it: [`VectorProjection`] live, one batch at a time, and
//! [`VectorBuild`] for a rebuild's new generation, which embeds the next batch while a writer
//! thread writes the last one.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread::JoinHandle;

use kledger_processors::bm25::Bm25;
use kledger_processors::ids::memory_uuid;
use kledger_processors::index_text;
use kledger_processors::payload::{EmbeddingInfo, Placement, payload, placement};
use kledger_schemas::{Row, Status};
use kledger_state::{Checkpoint, MarkStore};
use uuid::Uuid;

use super::{OutboxCommit, Projection};
use kledger_runtime::metrics as m;
use kledger_vectors::embedder::Embedder;
use kledger_vectors::{Point, VectorGen, VectorIndex};

/// The sink's label in metrics and its consumer group suffix.
pub const SINK: &str = "vectors";

/// What a batch does to one point.
#[derive(Debug)]
enum Change<'a> {
    Upsert(&'a Row, i64),
    Delete,
}

/// Changes of a batch by point id (last change wins), and the marks they advance. Borrows the
/// rows of the commits it was planned from.
#[derive(Debug, Default)]
pub struct Plan<'a> {
    changes: BTreeMap<Uuid, Change<'a>>,
    applied: BTreeMap<String, i64>,
    positions: Checkpoint,
    folded: u64,
    skipped: u64,
    /// Whether a commit planned tombstones a row (a purge): the index then erases what it
    /// deleted from its files ([`VectorIndex::erase_deleted`]).
    purged: bool,
    /// Data keys the planned purges destroyed (account, key id): gone from the marks store's
    /// key cache with the marks.
    destroyed: Vec<(String, String)>,
}

/// Plans `commits` against `marks`: which points to upsert or delete.
pub fn plan<'a>(marks: &MarkStore, commits: &'a [OutboxCommit]) -> anyhow::Result<Plan<'a>> {
    let mut plan = Plan::default();
    for OutboxCommit {
        partition: p,
        offset,
        commit: c,
    } in commits
    {
        plan.positions.read(*p, *offset);
        let mark = match plan.applied.get(&c.account_id) {
            Some(s) => *s,
            None => marks.applied(&c.account_id)?,
        };
        if c.commit_seq <= mark {
            plan.skipped += 1;
            continue;
        }
        plan.applied.insert(c.account_id.clone(), c.commit_seq);
        plan.folded += 1;
        plan.purged |= c.ops.iter().any(|op| op.row.status == Status::Tombstoned);
        for op in &c.ops {
            if op.row.status == Status::Tombstoned
                && let Some(s) = op.row.sealed.as_ref().filter(|s| !s.key_id.is_empty())
            {
                plan.destroyed
                    .push((c.account_id.clone(), s.key_id.clone()));
            }
            let Some(id) = memory_uuid(&op.row.memory_id).and_then(|u| Uuid::parse_str(&u).ok())
            else {
                tracing::error!(memory_id = %op.row.memory_id, "row without a ULID memory id; not indexed");
                continue;
            };
            let change = match placement(&op.row) {
                Placement::Upsert => Change::Upsert(&op.row, c.recorded_at),
                Placement::Delete => Change::Delete,
            };
            plan.changes.insert(id, change);
        }
    }
    Ok(plan)
}

/// The live vector projection: writes a generation's index and marks, one batch at a time.
#[derive(Debug)]
pub struct VectorProjection {
    generation: Arc<VectorGen>,
}

impl VectorProjection {
    /// The projection into `generation`, with its embedder's vectors.
    pub fn new(generation: Arc<VectorGen>) -> Self {
        Self { generation }
    }
}

impl Projection for VectorProjection {
    fn name(&self) -> &'static str {
        SINK
    }

    fn position(&self, p: i32) -> anyhow::Result<i64> {
        Ok(self.generation.marks()?.position(p)?)
    }

    fn key_cache(&self) -> anyhow::Result<&dyn kledger_state::KeyCache> {
        Ok(self.generation.marks()?)
    }

    fn publish(&mut self, _out: &mut dyn super::Outputs, all: bool) -> anyhow::Result<()> {
        // Purges whose erasure waited for the interval: the index's vacuum and the marks
        // store's destroyed keys (at once at the end of the drive).
        erase_vectors_due(&*self.generation.index, all)?;
        self.generation.marks()?.erase_due(all)?;
        Ok(())
    }

    fn erase_pending(&mut self) -> anyhow::Result<()> {
        erase_vectors_due(&*self.generation.index, true)?;
        self.generation.marks()?.erase_due(true)?;
        Ok(())
    }

    fn apply(&mut self, commits: &[OutboxCommit], read: &[(i32, i64)]) -> anyhow::Result<()> {
        project(
            &self.generation,
            &*self.generation.embedder,
            commits,
            read.iter().copied(),
        )
    }
}

/// Projects one batch of outbox records into generation `g`: `commits` (decoded, with their
/// partition and offset) are planned against the marks and written to the index, then the
/// marks advance past every record `read` lists (undecodable ones too). Counted in metrics.
pub fn project(
    g: &VectorGen,
    embedder: &dyn Embedder,
    commits: &[OutboxCommit],
    read: impl Iterator<Item = (i32, i64)>,
) -> anyhow::Result<()> {
    let marks = g.marks()?;
    let plan = plan_read(marks, commits, read)?;
    let (upserted, deleted) = apply(&*g.index, embedder, &plan)?;
    marks.write(&plan.applied, &plan.positions, &plan.destroyed)?;
    Counts {
        folded: plan.folded,
        skipped: plan.skipped,
        upserted,
        deleted,
    }
    .record();
    Ok(())
}

/// [`plan`], with the marks also advancing past every record `read` lists (undecodable ones
/// too).
fn plan_read<'a>(
    marks: &MarkStore,
    commits: &'a [OutboxCommit],
    read: impl Iterator<Item = (i32, i64)>,
) -> anyhow::Result<Plan<'a>> {
    let mut plan = plan(marks, commits)?;
    for (p, offset) in read {
        plan.positions.read(p, offset);
    }
    Ok(plan)
}

/// A batch planned and embedded: what [`write_unsynced`] writes.
#[derive(Debug)]
pub struct Prepared {
    points: Vec<Point>,
    deletes: Vec<Uuid>,
    applied: BTreeMap<String, i64>,
    positions: Checkpoint,
    folded: u64,
    skipped: u64,
    purged: bool,
    destroyed: Vec<(String, String)>,
}

/// The first half of a rebuild's batch: plans `commits` against `marks` and builds the points.
///
/// A rebuild prepares batch N+1 while batch N is written ([`VectorBuild`]): planning reads
/// the marks for commits at or below an account's mark, and a later batch's commits of an
/// account are always above what an earlier batch wrote, so the earlier batch's marks need
/// not be durable yet.
pub fn prepare(
    marks: &MarkStore,
    embedder: &dyn Embedder,
    commits: &[OutboxCommit],
    read: impl Iterator<Item = (i32, i64)>,
) -> anyhow::Result<Prepared> {
    let plan = plan_read(marks, commits, read)?;
    let (points, deletes) = points(embedder, &plan)?;
    Ok(Prepared {
        points,
        deletes,
        folded: plan.folded,
        skipped: plan.skipped,
        applied: plan.applied,
        positions: plan.positions,
        purged: plan.purged,
        destroyed: plan.destroyed,
    })
}

/// Marks whose points are written but not yet durable (see [`write_unsynced`]).
#[derive(Debug, Default)]
pub struct Unsynced {
    applied: BTreeMap<String, i64>,
    positions: Checkpoint,
    /// Outbox records planned since the last [`sync`].
    pub records: u64,
    /// Whether a batch since the last [`sync`] purged (the sync then erases).
    purged: bool,
    destroyed: Vec<(String, String)>,
}

/// The second half of a rebuild's batch: the points are written without waiting for
/// durability and the marks are kept in `pending` until [`sync`] makes both durable, so a
/// rebuild flushes the engine once per many batches. Batches must come in order (a later batch's marks win).
pub fn write_unsynced(
    index: &dyn VectorIndex,
    p: Prepared,
    pending: &mut Unsynced,
) -> anyhow::Result<()> {
    let counts = p.counts();
    index.write_unsynced(p.points, &p.deletes)?;
    pending.applied.extend(p.applied);
    for (partition, next) in p.positions.iter() {
        pending.positions.set_at_least(partition, next);
    }
    pending.records += p.folded + p.skipped;
    pending.purged |= p.purged;
    pending.destroyed.extend(p.destroyed);
    counts.record();
    Ok(())
}

/// Makes every point written to `index` since the last sync durable (and erases deleted
/// points from its files when a batch purged), then writes `pending`'s marks to `marks`.
pub fn sync(
    index: &dyn VectorIndex,
    marks: &MarkStore,
    pending: &mut Unsynced,
) -> anyhow::Result<()> {
    if pending.purged {
        erase_deleted(index)?;
    }
    // Durable before the marks say so, whether or not the erasure ran (the interval may hold it
    // back).
    index.sync()?;
    let done = std::mem::take(pending);
    marks.write(&done.applied, &done.positions, &done.destroyed)?;
    Ok(())
}

/// A batch's metric increments.
struct Counts {
    folded: u64,
    skipped: u64,
    upserted: u64,
    deleted: u64,
}

impl Prepared {
    fn counts(&self) -> Counts {
        Counts {
            folded: self.folded,
            skipped: self.skipped,
            upserted: self.points.len() as u64,
            deleted: self.deletes.len() as u64,
        }
    }
}

impl Counts {
    fn record(self) {
        metrics::counter!(m::SINK_RECORDS_TOTAL, "sink" => SINK, "result" => "folded")
            .increment(self.folded);
        metrics::counter!(m::SINK_RECORDS_TOTAL, "sink" => SINK, "result" => "skipped")
            .increment(self.skipped);
        metrics::counter!(m::VECTOR_POINTS_TOTAL, "op" => "upsert").increment(self.upserted);
        metrics::counter!(m::VECTOR_POINTS_TOTAL, "op" => "delete").increment(self.deleted);
    }
}

/// Rows embedded per index write in [`apply`]: the next chunk is embedded while the index's
/// shards write this one.
const APPLY_CHUNK_ROWS: usize = 256;

/// Writes a plan to `index` with `embedder`'s vectors, durable on return; returns (upserted,
/// deleted). The rows are embedded and queued a chunk at a time without waiting for
/// durability, so embedding overlaps the index's writes; the deletes and one sync come last.
/// A plan holds each point once, so the order of the chunks does not matter.
pub fn apply(
    index: &dyn VectorIndex,
    embedder: &dyn Embedder,
    plan: &Plan<'_>,
) -> anyhow::Result<(u64, u64)> {
    let (rows, deletes) = split(plan);
    let mut upserted = 0;
    for chunk in rows.chunks(APPLY_CHUNK_ROWS) {
        let points = build(embedder, chunk)?;
        upserted += points.len() as u64;
        index.write_unsynced(points, &[])?;
    }
    index.write_batch(Vec::new(), &deletes)?;
    if plan.purged {
        erase_deleted(index)?;
    }
    Ok((upserted, deletes.len() as u64))
}

/// [`VectorIndex::erase_deleted`], counted and timed like the stores' erasures
/// ([`m::STORE_ERASURES_TOTAL`], store `vectors`): due now, run at most once per interval.
fn erase_deleted(index: &dyn VectorIndex) -> anyhow::Result<()> {
    index.erasure().mark_due();
    erase_vectors_due(index, false)
}

/// Runs the vector index's erasure if a purge is waiting for it and the interval has passed
/// since the last run (or at once with `now`), counted and timed.
pub fn erase_vectors_due(index: &dyn VectorIndex, now: bool) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    if index.erasure().run(now, || index.erase_deleted())? {
        metrics::counter!(m::STORE_ERASURES_TOTAL, "store" => "vectors").increment(1);
        metrics::gauge!(m::STORE_ERASURE_SECONDS, "store" => "vectors")
            .increment(started.elapsed().as_secs_f64());
    }
    Ok(())
}

/// A plan's rows to upsert (id, row, update time) and ids to delete.
type Rows<'a> = Vec<(Uuid, &'a Row, i64)>;

fn split<'a>(plan: &Plan<'a>) -> (Rows<'a>, Vec<Uuid>) {
    let mut deletes = Vec::new();
    let mut rows = Vec::new();
    for (id, change) in &plan.changes {
        match change {
            Change::Upsert(row, at) => rows.push((*id, *row, *at)),
            Change::Delete => deletes.push(*id),
        }
    }
    (rows, deletes)
}

/// A plan's points to upsert (with `embedder`'s vectors) and ids to delete.
fn points(embedder: &dyn Embedder, plan: &Plan<'_>) -> anyhow::Result<(Vec<Point>, Vec<Uuid>)> {
    let (rows, deletes) = split(plan);
    Ok((build(embedder, &rows)?, deletes))
}

/// The points of `rows`, with `embedder`'s vectors.
fn build(embedder: &dyn Embedder, rows: &[(Uuid, &Row, i64)]) -> anyhow::Result<Vec<Point>> {
    let info = EmbeddingInfo {
        model: embedder.model().to_owned(),
        dim: embedder.dim(),
    };
    // The intent's own vector when it is of this embedding space; the embedder's otherwise.
    let own = |r: &Row| {
        r.embedding
            .as_ref()
            .filter(|e| e.model == info.model && e.vector.len() == info.dim)
            .map(|e| e.vector.clone())
    };
    // What stands for a row in the index (kledger_processors::index_text): content, tags, a
    // document's body.
    let dense_texts: Vec<String> = rows
        .iter()
        .filter(|(_, r, _)| own(r).is_none())
        .map(|(_, r, _)| index_text::dense(r))
        .collect();
    let texts: Vec<&str> = dense_texts.iter().map(String::as_str).collect();
    let started = std::time::Instant::now();
    let mut embedded = embedder.embed(&texts)?.into_iter();
    if !texts.is_empty() {
        metrics::counter!(m::EMBEDDED_TEXTS_TOTAL, "use" => "rows").increment(texts.len() as u64);
        metrics::histogram!(m::EMBED_SECONDS, "use" => "rows")
            .record(started.elapsed().as_secs_f64());
    }
    let bm25 = Bm25::default();
    let mut points = Vec::with_capacity(rows.len());
    for (id, row, at) in rows {
        let dense = match own(row) {
            Some(v) => v,
            None => embedded
                .next()
                .ok_or_else(|| anyhow::anyhow!("embedder returned too few vectors"))?,
        };
        points.push(Point {
            id: *id,
            dense,
            sparse: bm25.document(&index_text::keyword(row)),
            payload: payload(row, &info, *at),
        });
    }
    Ok(points)
}

/// Outbox records projected between two syncs of the vector index during a rebuild (a flush of
/// every engine shard, then the marks): a rebuild killed midway repeats at most this many.
pub const BUILD_SYNC_RECORDS: u64 = 50_000;

/// A rebuild's vector generation, written on two threads: the driver's thread reads, decodes,
/// plans and embeds batch N+1 ([`prepare`], against the marks) while a writer thread writes
/// batch N to the index ([`write_unsynced`]), in batch order; every [`BUILD_SYNC_RECORDS`]
/// records and at the end the writer makes the index durable and then writes the marks
/// ([`sync`]). At most one prepared batch waits.
///
/// The writer thread opens the index itself (creating a collection and its payload indexes
/// takes a few hundred milliseconds), so the outbox's first batch is read meanwhile; it also
/// closes the index, before [`Projection::finish`] returns.
pub struct VectorBuild {
    marks: Arc<MarkStore>,
    embedder: Arc<dyn Embedder>,
    tx: Option<SyncSender<Prepared>>,
    writer: Option<JoinHandle<anyhow::Result<()>>>,
}

impl std::fmt::Debug for VectorBuild {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorBuild").finish_non_exhaustive()
    }
}

/// Opens a generation's index (on the writer thread).
pub type OpenIndex =
    Box<dyn FnOnce() -> anyhow::Result<Arc<dyn kledger_vectors::VectorIndex>> + Send + 'static>;

impl VectorBuild {
    /// Starts the writer thread, which opens the index with `open`.
    pub fn new(
        marks: MarkStore,
        open: OpenIndex,
        embedder: Arc<dyn Embedder>,
    ) -> anyhow::Result<Self> {
        let marks = Arc::new(marks);
        let (tx, rx) = sync_channel::<Prepared>(1);
        let writes = marks.clone();
        let writer = std::thread::Builder::new()
            .name("rebuild-vectors".into())
            .spawn(move || -> anyhow::Result<()> {
                let index = open()?;
                let mut pending = Unsynced::default();
                for batch in rx {
                    write_unsynced(index.as_ref(), batch, &mut pending)?;
                    if pending.records >= BUILD_SYNC_RECORDS {
                        sync(index.as_ref(), &writes, &mut pending)?;
                    }
                }
                sync(index.as_ref(), &writes, &mut pending)
            })?;
        Ok(Self {
            marks,
            embedder,
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

impl Drop for VectorBuild {
    fn drop(&mut self) {
        // A rebuild that fails still lets the batch being written finish before the
        // generation is released.
        let _ = self.join();
    }
}

impl Projection for VectorBuild {
    fn name(&self) -> &'static str {
        SINK
    }

    fn position(&self, p: i32) -> anyhow::Result<i64> {
        Ok(self.marks.position(p)?)
    }

    fn key_cache(&self) -> anyhow::Result<&dyn kledger_state::KeyCache> {
        Ok(self.marks.as_ref())
    }

    fn apply(&mut self, commits: &[OutboxCommit], read: &[(i32, i64)]) -> anyhow::Result<()> {
        let prepared = prepare(&self.marks, &*self.embedder, commits, read.iter().copied())?;
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
