//! Vector indexes: one collection per embedding space (`cm_text_<dim>_v1`), two backends behind
//! [`VectorIndex`], one filter model (Qdrant's REST JSON filter, see
//! [`kledger_processors::payload::access_filter`]).
//!
//! - [`edge`]: Qdrant's engine in-process (qdrant-edge 0.7), the embedded default.
//! - [`server`]: a Qdrant server over gRPC (qdrant-client), production.
//! - [`embedder`]: the configured embedder (the local model, local feature hashing, or an
//!   OpenAI-compatible HTTP endpoint); [`model`]: the local sentence-embedding model.
//!
//! Every collection has a named dense vector `dense` (cosine) and a named sparse vector
//! `sparse` (BM25 term weights: the keyword provider, scored with the collection's IDF), and
//! keyword/bool/integer payload indexes on every filtered field, `tenant_id` as the tenant
//! index, created before any point.

pub mod edge;
pub mod embedder;
pub mod model;
pub mod server;

use kledger_processors::embed::Sparse;
use kledger_processors::payload::{BOOL_FIELDS, INTEGER_FIELDS, KEYWORD_FIELDS};
use serde_json::{Map, Value};
use uuid::Uuid;

/// The dense vector's name.
pub const DENSE: &str = "dense";
/// The sparse vector's name.
pub const SPARSE: &str = "sparse";

/// Vector index errors: all external (retry with backoff, or stop).
#[derive(Debug, thiserror::Error)]
pub enum VectorError {
    /// The engine or server refused or failed.
    #[error("vector index: {0}")]
    Backend(String),
    /// The filter is not in the supported subset.
    #[error("vector filter: {0}")]
    Filter(String),
}

/// One point.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    /// The memory id's ULID as a UUID.
    pub id: Uuid,
    /// Dense vector.
    pub dense: Vec<f32>,
    /// Sparse term vector.
    pub sparse: Sparse,
    /// cm_payload_v1 payload (a JSON object).
    pub payload: Map<String, Value>,
}

/// Every point's id and payload, in id order.
pub type Scanned = Vec<(Uuid, Map<String, Value>)>;

/// Which vector a query scores with.
#[derive(Debug, Clone, PartialEq)]
pub enum QueryVector {
    /// Nearest by the dense vector.
    Dense(Vec<f32>),
    /// Highest BM25 score: the query's term weights times each term's IDF over the collection
    /// (the embedded engine sums its shards' statistics; a Qdrant server's collection has the
    /// `idf` modifier), dotted with a point's saturated term frequencies.
    Sparse(Sparse),
}

/// A payload index to create.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldType {
    /// Keyword; `tenant` marks the tenant index.
    Keyword {
        /// The tenant index.
        tenant: bool,
    },
    /// Integer.
    Integer,
    /// Bool.
    Bool,
}

/// Every payload index of a collection, in creation order.
pub fn payload_indexes() -> Vec<(&'static str, FieldType)> {
    let mut v: Vec<(&str, FieldType)> = KEYWORD_FIELDS
        .iter()
        .map(|f| {
            (
                *f,
                FieldType::Keyword {
                    tenant: *f == "tenant_id",
                },
            )
        })
        .collect();
    v.extend(BOOL_FIELDS.iter().map(|f| (*f, FieldType::Bool)));
    v.extend(INTEGER_FIELDS.iter().map(|f| (*f, FieldType::Integer)));
    v
}

/// When an index's erasure ([`VectorIndex::erase_deleted`]) runs: the erasure timer of
/// `kledger_state::erasure`, one per index.
pub use kledger_state::erasure::ErasureSchedule;

/// A vector index over one collection.
pub trait VectorIndex: Send + Sync + std::fmt::Debug {
    /// When this index's erasure runs.
    fn erasure(&self) -> &ErasureSchedule;
    /// The collection's name.
    fn collection(&self) -> &str;
    /// Upserts points (whole points: payload and vectors replaced); durable on return.
    fn upsert(&self, points: Vec<Point>) -> Result<(), VectorError>;
    /// Deletes points by id; durable on return. Missing ids are fine.
    fn delete(&self, ids: &[Uuid]) -> Result<(), VectorError>;
    /// Upserts then deletes, durable on return (one flush where the backend allows).
    fn write_batch(&self, upserts: Vec<Point>, deletes: &[Uuid]) -> Result<(), VectorError> {
        self.upsert(upserts)?;
        self.delete(deletes)
    }
    /// [`VectorIndex::write_batch`] without waiting for durability: durable only once
    /// [`VectorIndex::sync`] returns (a rebuild syncs before it writes its marks). Backends
    /// without such a split write durably.
    fn write_unsynced(&self, upserts: Vec<Point>, deletes: &[Uuid]) -> Result<(), VectorError> {
        self.write_batch(upserts, deletes)
    }
    /// Makes every earlier write durable.
    fn sync(&self) -> Result<(), VectorError> {
        Ok(())
    }
    /// Makes every earlier write durable, and leaves no byte of a deleted point (payload,
    /// vectors) in the index's own files (a purge's points). The embedded engine rewrites the
    /// segments that hold deleted points; a Qdrant server vacuums on its own schedule
    /// (`optimizers_config.deleted_threshold`), so there this only syncs.
    fn erase_deleted(&self) -> Result<(), VectorError> {
        self.sync()
    }
    /// The best `limit` points passing `filter`, by score, with their scores.
    fn query(
        &self,
        vector: QueryVector,
        filter: &Value,
        limit: usize,
    ) -> Result<Vec<(Uuid, f32)>, VectorError>;
    /// [`Self::query`] of each `(vector, limit)` under the one `filter`, answers in the same
    /// order: one request where the backend can take it (a Qdrant server: one round trip; the
    /// embedded engine: the filter read once).
    fn query_each(
        &self,
        queries: Vec<(QueryVector, usize)>,
        filter: &Value,
    ) -> Result<Vec<Vec<(Uuid, f32)>>, VectorError> {
        queries
            .into_iter()
            .map(|(vector, limit)| self.query(vector, filter, limit))
            .collect()
    }
    /// Points passing `filter` (exact).
    fn count(&self, filter: &Value) -> Result<usize, VectorError>;
    /// Every point's id and payload, in id order (for rebuild comparisons and tests).
    fn scan(&self) -> Result<Scanned, VectorError>;
}

/// One generation of the vector projection (see [`kledger_runtime::generations`]): the index, the
/// embedder its vectors come from (each generation is one embedding space: a rebuild with
/// another model makes a generation of its own), and the sink's progress marks when this
/// process owns the projection.
pub struct VectorGen {
    /// The index (collection).
    pub index: std::sync::Arc<dyn VectorIndex>,
    /// The embedder of its rows and of queries against it.
    pub embedder: std::sync::Arc<dyn embedder::Embedder>,
    /// The sink's marks (owner only: a RocksDB store one process holds).
    pub marks: Option<kledger_state::MarkStore>,
}

impl std::fmt::Debug for VectorGen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VectorGen")
            .field("owner", &self.marks.is_some())
            .finish_non_exhaustive()
    }
}

impl VectorGen {
    /// The marks (an error for a read-only follower).
    pub fn marks(&self) -> anyhow::Result<&kledger_state::MarkStore> {
        self.marks
            .as_ref()
            .ok_or_else(|| anyhow::anyhow!("vector marks are held by the projection's owner"))
    }
}

/// The vector projection as search reads it: the live generation (with its embedder).
pub struct SearchIndex {
    /// The active generation.
    pub live: std::sync::Arc<kledger_runtime::generations::Live<VectorGen>>,
}

impl std::fmt::Debug for SearchIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SearchIndex")
            .field("generation", &self.live.generation())
            .finish_non_exhaustive()
    }
}

/// Where the search index appears once it is open: a process opens it in the background (a
/// Qdrant server may be unreachable at start; search answers 503 until it is open).
pub type SearchSlot = std::sync::Arc<std::sync::OnceLock<SearchIndex>>;

/// The index of generation `generation` (directory `dir`) of the collection `name` of
/// dimension `dim` on the configured backend (a generation also has marks when this process
/// owns the projection: [`open_marks`]). The embedded engine keeps it in
/// `dir/index` and needs the projection's `owner`; a Qdrant server keeps it in collection
/// `name` (first generation) or `name_gNNNNNN` (later ones). A rebuild opens its new
/// generation `build_only` ([`edge::EdgeOptions::build_only`]; a server collection ignores it).
pub fn open_index(
    v: &kledger_runtime::config::VectorsConfig,
    name: &str,
    dim: usize,
    dir: &std::path::Path,
    generation: &str,
    owner: bool,
    build_only: bool,
) -> anyhow::Result<std::sync::Arc<dyn VectorIndex>> {
    use anyhow::Context;
    if !embedded(v) {
        let collection = if generation == "g000001" {
            name.to_owned()
        } else {
            format!("{name}_{generation}")
        };
        let key = v.api_key();
        return Ok(std::sync::Arc::new(server::ServerIndex::open(
            &v.url,
            key.as_deref(),
            &collection,
            dim,
        )?));
    }
    anyhow::ensure!(
        owner,
        "the embedded vector engine lives in one process: run the api role together with project-qdrant, or use vectors.backend = \"server\""
    );
    let d = dir.join("index");
    std::fs::create_dir_all(&d).with_context(|| format!("create {}", d.display()))?;
    Ok(std::sync::Arc::new(edge::EdgeIndex::open_with(
        &d,
        name,
        dim,
        edge::EdgeOptions {
            shards: v.shards,
            build_only,
            ..Default::default()
        },
    )?))
}

/// The file in a vector generation's directory that names the embedder of its vectors (its
/// `vectors.embedder` section, as JSON).
pub const EMBEDDER_FILE: &str = "embedder.json";

/// The embedders one process has loaded, by configuration, while in use: a generation's
/// projection and search share one (a model is loaded once, not per part). The composition root
/// makes one and hands it to every part that embeds; a command that embeds alone makes its own.
#[derive(Default)]
pub struct Embedders {
    loaded: std::sync::Mutex<
        std::collections::BTreeMap<String, std::sync::Weak<dyn embedder::Embedder>>,
    >,
}

impl std::fmt::Debug for Embedders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let loaded = self.loaded.lock().map(|l| l.len()).unwrap_or_default();
        f.debug_struct("Embedders")
            .field("loaded", &loaded)
            .finish()
    }
}

impl Embedders {
    /// The embedder `config` names: the one loaded already while any part holds it, else
    /// loaded now.
    pub fn shared(
        &self,
        config: &kledger_runtime::config::EmbedderConfig,
    ) -> anyhow::Result<std::sync::Arc<dyn embedder::Embedder>> {
        let key = serde_json::to_string(config)?;
        let mut loaded = self.loaded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(e) = loaded.get(&key).and_then(std::sync::Weak::upgrade) {
            return Ok(e);
        }
        let e: std::sync::Arc<dyn embedder::Embedder> =
            std::sync::Arc::from(embedder_from_config(config)?);
        loaded.retain(|_, w| w.strong_count() > 0);
        loaded.insert(key, std::sync::Arc::downgrade(&e));
        Ok(e)
    }

    /// The embedder of the vector generation in `dir`: the one its [`EMBEDDER_FILE`] names,
    /// or `configured`'s, recorded there, for a generation without one (a new generation; or
    /// one made before the file existed, which is said in the log: its vectors may be another
    /// embedder's until `kledger rebuild qdrant`). A configured embedder other than the
    /// generation's is said in the log too: the generation keeps its own, and the next rebuild
    /// takes the configured one.
    pub fn for_generation(
        &self,
        dir: &std::path::Path,
        configured: &kledger_runtime::config::EmbedderConfig,
    ) -> anyhow::Result<std::sync::Arc<dyn embedder::Embedder>> {
        let config = generation_embedder_config(dir, configured)?;
        self.shared(&config)
    }
}

/// What makes an embedder's vectors what they are (its kind, model, dimension, endpoint without
/// credentials, model files): the part of `vectors.embedder` a generation records. Threads,
/// caches, timeouts and keys are not part of it.
fn embedding_space(c: &kledger_runtime::config::EmbedderConfig) -> serde_json::Value {
    let mut space = serde_json::json!({
        "kind": c.kind,
        "dim": c.dim,
        "model": c.model,
        "url": kledger_runtime::config::redact_url(&c.url),
        "model_dir": c.model_dir,
        "sha256": c.sha256,
        "text": kledger_processors::index_text::VERSION,
    });
    // The products' precision is the local model's alone (another kind's space has none).
    if c.kind == kledger_runtime::config::EmbedderKind::Local {
        space["precision"] = serde_json::json!(c.precision);
    }
    space
}

/// A generation's recorded embedding space as today's [`embedding_space`] writes it: a local
/// model's recorded before `precision` was (2026-12-06) computed in f32.
fn recorded_space(mut stored: serde_json::Value) -> serde_json::Value {
    if stored["kind"] == "local"
        && let Some(o) = stored.as_object_mut()
    {
        o.entry("precision").or_insert_with(|| "f32".into());
    }
    stored
}

/// The configuration of the embedder of the vector generation in `dir`
/// ([`Embedders::for_generation`]), recorded in its [`EMBEDDER_FILE`] first when it has none.
fn generation_embedder_config(
    dir: &std::path::Path,
    configured: &kledger_runtime::config::EmbedderConfig,
) -> anyhow::Result<kledger_runtime::config::EmbedderConfig> {
    use anyhow::Context;
    let file = dir.join(EMBEDDER_FILE);
    let wanted = embedding_space(configured);
    let config = match std::fs::read_to_string(&file) {
        Ok(text) => {
            let stored: serde_json::Value = recorded_space(
                serde_json::from_str(&text)
                    .with_context(|| format!("{} is not JSON", file.display()))?,
            );
            if stored == wanted {
                configured.clone()
            } else {
                // The index text's version is the recipe's, not a setting: it is not read back.
                let without_text = |v: &serde_json::Value| {
                    let mut v = v.clone();
                    if let Some(o) = v.as_object_mut() {
                        o.remove("text");
                    }
                    v
                };
                let stored = without_text(&stored);
                if stored == without_text(&wanted) {
                    tracing::warn!(generation = %dir.display(), "this generation's rows were embedded from an older index text (kledger_processors::index_text); new rows take the current one; kledger rebuild qdrant embeds them all alike");
                } else {
                    tracing::warn!(generation = %dir.display(), "vectors.embedder differs from the embedder this generation was built with, which it keeps; kledger rebuild qdrant builds a generation with the configured one");
                }
                let mut own: kledger_runtime::config::EmbedderConfig =
                    serde_json::from_value(stored).with_context(|| {
                        format!("{} is not an embedder section", file.display())
                    })?;
                own.threads = configured.threads;
                own.query_cache_entries = configured.query_cache_entries;
                own
            }
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if dir.join("index").exists() || dir.join("marks").exists() {
                tracing::warn!(generation = %dir.display(), "a vector generation made before embedder.json: assuming the configured embedder; run kledger rebuild qdrant if its vectors came from another");
            }
            std::fs::create_dir_all(dir)?;
            kledger_runtime::generations::write_atomic(
                &file,
                &serde_json::to_string_pretty(&wanted)?,
            )?;
            configured.clone()
        }
        Err(e) => return Err(anyhow::Error::new(e).context(format!("read {}", file.display()))),
    };
    Ok(config)
}

/// Whether the configured backend is the embedded engine (else a Qdrant server).
pub fn embedded(v: &kledger_runtime::config::VectorsConfig) -> bool {
    v.backend == kledger_runtime::config::VectorBackend::Edge
}

/// The sink's marks of the generation in `dir` (`dir/marks`; one process holds them).
pub fn open_marks(dir: &std::path::Path) -> anyhow::Result<kledger_state::MarkStore> {
    use anyhow::Context;
    let d = dir.join("marks");
    std::fs::create_dir_all(&d).with_context(|| format!("create {}", d.display()))?;
    Ok(kledger_state::MarkStore::open(&d)?)
}

/// The embedder `config` names. The local model's files are read and checked here: a missing
/// or mismatched one is a [`model::ModelFilesError`] (a bad configuration).
pub fn embedder_from_config(
    config: &kledger_runtime::config::EmbedderConfig,
) -> anyhow::Result<Box<dyn embedder::Embedder>> {
    Ok(match config.kind {
        kledger_runtime::config::EmbedderKind::Local => {
            Box::new(model::SentenceEmbedder::load(config)?)
        }
        kledger_runtime::config::EmbedderKind::Http => {
            Box::new(embedder::HttpEmbedder::new(config)?)
        }
        kledger_runtime::config::EmbedderKind::Hash => {
            Box::new(embedder::HashingEmbedder::new(config.dim))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kledger_runtime::config::{EmbedderConfig, EmbedderKind, EmbedderPrecision};

    fn generation(file: Option<serde_json::Value>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        if let Some(v) = file {
            std::fs::write(dir.path().join(EMBEDDER_FILE), v.to_string()).unwrap();
        }
        dir
    }

    #[test]
    fn a_generation_keeps_the_precision_it_was_embedded_in() {
        let configured = EmbedderConfig::default();
        assert_eq!(configured.precision, EmbedderPrecision::Int8);
        // A new generation records the configured precision.
        let dir = generation(None);
        let got = generation_embedder_config(dir.path(), &configured).unwrap();
        assert_eq!(got.precision, EmbedderPrecision::Int8);
        let recorded: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.path().join(EMBEDDER_FILE)).unwrap())
                .unwrap();
        assert_eq!(recorded["precision"], "int8");
        // A local model's generation recorded before the setting existed was embedded in f32
        // and stays so; one recorded in f32 likewise.
        let mut before = embedding_space(&configured);
        before.as_object_mut().unwrap().remove("precision");
        for file in [before.clone(), {
            let mut v = before.clone();
            v["precision"] = "f32".into();
            v
        }] {
            let dir = generation(Some(file));
            let got = generation_embedder_config(dir.path(), &configured).unwrap();
            assert_eq!(got.precision, EmbedderPrecision::F32);
        }
        // Another kind's space has no precision: a generation recorded before is still it.
        let hash = EmbedderConfig {
            kind: EmbedderKind::Hash,
            ..EmbedderConfig::default()
        };
        assert!(embedding_space(&hash).get("precision").is_none());
        let dir = generation(Some(embedding_space(&hash)));
        assert_eq!(generation_embedder_config(dir.path(), &hash).unwrap(), hash);
    }
}
