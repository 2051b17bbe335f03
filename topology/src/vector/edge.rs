//! The embedded backend: Qdrant's engine in-process (qdrant-edge 0.7), one shard directory per
//! collection. Writes take the lock exclusively and flush before returning (the engine does not
//! replay its WAL on load, so an unflushed write would not survive a crash); queries share it.
//!
//! **Sealing.** The engine's appendable segment keeps sparse vectors in a mutable inverted
//! index whose append is linear in the length of the term's posting list, so one ever-growing
//! segment makes writes quadratic in the collection size (common words are in most points).
//! Qdrant's server seals segments with background optimizers; the embedded engine only
//! optimizes when asked. So every [`SEAL_POINTS`] points written, the index runs the engine's
//! optimizers, which turn an appendable segment past the indexing threshold (about
//! [`SEAL_POINTS`] vectors) into an immutable one and open a fresh appendable segment. Dense
//! vectors get no HNSW graph (`m = 0`): search stays an exact scan, as it was in one segment,
//! and sealing costs a copy rather than a graph build.

use std::path::Path;
use std::sync::RwLock;
use std::sync::atomic::{AtomicUsize, Ordering};

use qdrant_edge::{
    CountRequest, CreateIndex, Distance, EdgeConfig, EdgeOptimizersConfig, EdgeShard,
    EdgeSparseVectorParams, EdgeVectorParams, FieldIndexOperations, Filter, HnswIndexConfig,
    JsonPath, KeywordIndexParams, NamedQuery, Payload, PayloadFieldSchema, PayloadSchemaParams,
    PayloadSchemaType, PointId, PointInsertOperations, PointOperations, PointStructPersisted,
    QueryEnum, QueryRequest, ScoringQuery, ScrollRequest, UpdateOperation, Vector, VectorInternal,
    Vectors, WithPayloadInterface, WithVector,
};
use serde_json::Value;
use uuid::Uuid;

use super::{
    DENSE, FieldType, Point, QueryVector, SPARSE, Scanned, VectorError, VectorIndex,
    payload_indexes,
};

fn err(e: impl std::fmt::Display) -> VectorError {
    VectorError::Backend(e.to_string())
}

/// Points written between two runs of the engine's optimizers (see the module comment), and
/// about the size of an appendable segment when it is sealed.
pub const SEAL_POINTS: usize = 50_000;

/// Segments the engine's merge optimizer keeps before merging the smallest ones.
pub const SEGMENTS: usize = 16;

/// A collection in an in-process Qdrant engine.
pub struct EdgeIndex {
    name: String,
    shard: RwLock<EdgeShard>,
    /// Points written since the optimizers last ran.
    unsealed: AtomicUsize,
    /// Points written between two runs of the optimizers.
    seal_points: usize,
}

/// The engine settings that keep writes linear (module comment): segments sealed at about
/// `seal_points` vectors of `dim` dimensions, no HNSW graph.
fn sealing(dim: usize, seal_points: usize) -> (HnswIndexConfig, EdgeOptimizersConfig) {
    let hnsw = HnswIndexConfig {
        m: 0,
        payload_m: Some(0),
        ..HnswIndexConfig::default()
    };
    let optimizers = EdgeOptimizersConfig {
        default_segment_number: Some(SEGMENTS),
        // The threshold is in KiB of dense vectors (f32).
        indexing_threshold: Some((dim * 4 * seal_points / 1024).max(1)),
        ..EdgeOptimizersConfig::default()
    };
    (hnsw, optimizers)
}

impl std::fmt::Debug for EdgeIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EdgeIndex")
            .field("name", &self.name)
            .finish()
    }
}

fn filter(v: &Value) -> Result<Filter, VectorError> {
    serde_json::from_value(v.clone()).map_err(|e| VectorError::Filter(e.to_string()))
}

fn uuid_of(id: &PointId) -> Option<Uuid> {
    match id {
        PointId::Uuid(u) => Some(*u),
        PointId::NumId(_) => None,
    }
}

impl EdgeIndex {
    /// Opens (or creates) collection `name` with `dim`-dimensional dense vectors under `root`,
    /// with its payload indexes.
    pub fn open(root: &Path, name: &str, dim: usize) -> Result<Self, VectorError> {
        Self::open_sealing(root, name, dim, SEAL_POINTS)
    }

    /// [`EdgeIndex::open`] with segments sealed every `seal_points` points written instead of
    /// [`SEAL_POINTS`] (tests seal small collections this way).
    pub fn open_sealing(
        root: &Path,
        name: &str,
        dim: usize,
        seal_points: usize,
    ) -> Result<Self, VectorError> {
        let seal_points = seal_points.max(1);
        let dir = root.join(name);
        std::fs::create_dir_all(&dir).map_err(err)?;
        let (hnsw, optimizers) = sealing(dim, seal_points);
        let config = EdgeConfig::builder()
            .vector(
                DENSE,
                EdgeVectorParams::builder(dim, Distance::Cosine).build(),
            )
            .sparse_vector(SPARSE, EdgeSparseVectorParams::builder().build())
            .hnsw_config(hnsw)
            .optimizers(optimizers.clone())
            .build();
        let shard = EdgeShard::load(&dir, Some(config)).map_err(err)?;
        // A collection created before sealing keeps its stored settings: set them.
        shard.set_hnsw_config(hnsw).map_err(err)?;
        shard.set_optimizers_config(optimizers).map_err(err)?;
        // Indexes before data; re-issued on every open (idempotent), so a segment created at
        // load has them too.
        for (field, kind) in payload_indexes() {
            let schema = match kind {
                FieldType::Keyword { tenant: true } => PayloadFieldSchema::FieldParams(
                    PayloadSchemaParams::Keyword(KeywordIndexParams {
                        is_tenant: Some(true),
                        ..Default::default()
                    }),
                ),
                FieldType::Keyword { tenant: false } => {
                    PayloadFieldSchema::FieldType(PayloadSchemaType::Keyword)
                }
                FieldType::Integer => PayloadFieldSchema::FieldType(PayloadSchemaType::Integer),
                FieldType::Bool => PayloadFieldSchema::FieldType(PayloadSchemaType::Bool),
            };
            let field_name: JsonPath = field
                .parse()
                .map_err(|()| VectorError::Backend(format!("bad field path {field}")))?;
            shard
                .update(UpdateOperation::FieldIndexOperation(
                    FieldIndexOperations::CreateIndex(CreateIndex {
                        field_name,
                        field_schema: Some(schema),
                    }),
                ))
                .map_err(err)?;
        }
        shard.flush();
        Ok(Self {
            name: name.to_owned(),
            shard: RwLock::new(shard),
            unsealed: AtomicUsize::new(0),
            seal_points,
        })
    }

    /// The engine's segments (sealed ones and the appendable one).
    pub fn segments(&self) -> Result<usize, VectorError> {
        Ok(self.read()?.info().segments_count)
    }

    /// Counts `points` written; runs the optimizers when `seal_points` were written since they
    /// last ran.
    fn written(&self, shard: &EdgeShard, points: usize) -> Result<(), VectorError> {
        if self.unsealed.fetch_add(points, Ordering::Relaxed) + points >= self.seal_points {
            self.unsealed.store(0, Ordering::Relaxed);
            shard.optimize().map_err(err)?;
        }
        Ok(())
    }

    fn upsert_op(points: Vec<Point>) -> Result<Option<UpdateOperation>, VectorError> {
        if points.is_empty() {
            return Ok(None);
        }
        let mut batch = Vec::with_capacity(points.len());
        for p in points {
            let sparse = Vector::new_sparse(p.sparse.indices, p.sparse.values).map_err(err)?;
            let vectors =
                Vectors::new_named([(DENSE, Vector::new_dense(p.dense)), (SPARSE, sparse)]);
            batch.push(PointStructPersisted {
                id: PointId::Uuid(p.id),
                vector: vectors.0.into(),
                payload: Some(Payload(p.payload)),
            });
        }
        Ok(Some(UpdateOperation::PointOperation(
            PointOperations::UpsertPoints(PointInsertOperations::PointsList(batch)),
        )))
    }

    fn delete_op(ids: &[Uuid]) -> Option<UpdateOperation> {
        (!ids.is_empty()).then(|| {
            UpdateOperation::PointOperation(PointOperations::DeletePoints {
                ids: ids.iter().map(|u| PointId::Uuid(*u)).collect(),
            })
        })
    }

    fn read(&self) -> Result<std::sync::RwLockReadGuard<'_, EdgeShard>, VectorError> {
        self.shard
            .read()
            .map_err(|_| VectorError::Backend("shard lock poisoned".into()))
    }
}

impl VectorIndex for EdgeIndex {
    fn collection(&self) -> &str {
        &self.name
    }

    fn upsert(&self, points: Vec<Point>) -> Result<(), VectorError> {
        self.write_batch(points, &[])
    }

    fn delete(&self, ids: &[Uuid]) -> Result<(), VectorError> {
        self.write_batch(Vec::new(), ids)
    }

    /// Upserts then deletes under the write lock, at most `seal_points` points per engine
    /// operation (so segments are sealed within a large batch too), then flushes once.
    fn write_batch(&self, mut upserts: Vec<Point>, deletes: &[Uuid]) -> Result<(), VectorError> {
        if upserts.is_empty() && deletes.is_empty() {
            return Ok(());
        }
        let shard = self
            .shard
            .write()
            .map_err(|_| VectorError::Backend("shard lock poisoned".into()))?;
        while !upserts.is_empty() {
            let rest = upserts.split_off(upserts.len().min(self.seal_points));
            let chunk = std::mem::replace(&mut upserts, rest);
            let n = chunk.len();
            if let Some(op) = Self::upsert_op(chunk)? {
                shard.update(op).map_err(err)?;
            }
            self.written(&shard, n)?;
        }
        for chunk in deletes.chunks(self.seal_points) {
            if let Some(op) = Self::delete_op(chunk) {
                shard.update(op).map_err(err)?;
            }
            self.written(&shard, chunk.len())?;
        }
        shard.flush();
        Ok(())
    }

    fn query(
        &self,
        vector: QueryVector,
        f: &Value,
        limit: usize,
    ) -> Result<Vec<(Uuid, f32)>, VectorError> {
        let (q, using) = match vector {
            QueryVector::Dense(v) => (VectorInternal::Dense(v), DENSE),
            QueryVector::Sparse(s) => (
                Vector::new_sparse(s.indices, s.values).map_err(err)?.0,
                SPARSE,
            ),
        };
        let req = QueryRequest {
            prefetches: vec![],
            query: Some(ScoringQuery::Vector(QueryEnum::Nearest(NamedQuery::new(
                q, using,
            )))),
            filter: Some(filter(f)?),
            score_threshold: None,
            limit,
            offset: 0,
            params: None,
            with_vector: WithVector::Bool(false),
            with_payload: WithPayloadInterface::Bool(false),
        };
        let hits = self.read()?.query(req).map_err(err)?;
        Ok(hits
            .into_iter()
            .filter_map(|h| uuid_of(&h.id).map(|u| (u, h.score)))
            .collect())
    }

    fn count(&self, f: &Value) -> Result<usize, VectorError> {
        self.read()?
            .count(CountRequest {
                filter: Some(filter(f)?),
                exact: true,
            })
            .map_err(err)
    }

    fn scan(&self) -> Result<Scanned, VectorError> {
        let mut out = Vec::new();
        let mut offset = None;
        let shard = self.read()?;
        loop {
            let (page, next) = shard
                .scroll(ScrollRequest {
                    offset,
                    limit: Some(1_000),
                    with_payload: Some(WithPayloadInterface::Bool(true)),
                    ..Default::default()
                })
                .map_err(err)?;
            for r in page {
                if let Some(u) = uuid_of(&r.id) {
                    out.push((u, r.payload.map(|p| p.0).unwrap_or_default()));
                }
            }
            match next {
                Some(n) => offset = Some(n),
                None => break,
            }
        }
        out.sort_by_key(|(u, _)| *u);
        Ok(out)
    }
}
