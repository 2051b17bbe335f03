//! `kledger migrate vectors`: copies points of legacy Qdrant collections into the
//! cm_payload_v1 collections `cm_<type>_<dim>_v1`, with the payload mapped by
//! [`kledger_processors::legacy`] (seed 000's table, or rules from a file).
//!
//! Input: a Qdrant server (every collection on it, scrolled with payloads and vectors), or an
//! export directory with one `<collection>.jsonl` per legacy collection, one point per line as
//! Qdrant's scroll API returns it: `{"id": <uuid or integer>, "vector": [...] or
//! {"<name>": [...]}, "payload": {...}}`. Output: the configured vector backend (the embedded
//! engine under `--to-dir`, or a Qdrant server at `--to-url`), collection
//! `cm_<type>_<dim>_v1` with the named dense vector `dense` (the legacy vector) and a sparse
//! term vector of the legacy text, when the payload has one (the keyword provider). Point ids
//! are derived from (collection, legacy id), so a re-run overwrites and never duplicates.
//!
//! Collections the rules do not map are skipped and reported; so are points without a usable
//! vector (none, several unnamed, a dimension other than the collection's first point's).

use std::collections::BTreeMap;
use std::io::BufReader;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use kledger_processors::bm25::Bm25;
use kledger_processors::embed::Sparse;
use kledger_processors::legacy::{Defaults, Rule, map_collection, payload, point_id};
use kledger_processors::payload::collection_name;
use serde::Serialize;
use serde_json::{Map, Value};
use uuid::Uuid;

use crate::migrate::{LINE_BYTES_MAX, read_line_bounded};
use kledger_vectors::server::{LegacyServer, ServerIndex};
use kledger_vectors::{Point, VectorIndex, edge::EdgeIndex};

/// Points written per upsert.
pub const UPSERT_BATCH: usize = 256;
/// Largest vector dimension accepted.
pub const DIM_MAX: usize = 8_192;

/// Where copied points go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// Qdrant's engine in-process: one directory per collection under this root.
    Dir(PathBuf),
    /// A Qdrant server (gRPC URL).
    Url(String),
}

/// How `migrate vectors` runs.
#[derive(Debug, Clone)]
pub struct VectorsOptions {
    /// Where the legacy points are.
    pub source: Source,
    /// Mapping rules.
    pub rules: Vec<Rule>,
    /// Payload defaults (tenant, team, project, visibility, model).
    pub defaults: Defaults,
    /// The embedding space type in the collection name (`text`, `code`, `mm`).
    pub space: String,
    /// Which named vector to take when a point has several.
    pub vector_name: Option<String>,
    /// Where to write.
    pub target: Target,
    /// Show a progress bar.
    pub progress: bool,
    /// The Qdrant servers' API key (`--from-url`, `--to-url`), if any.
    pub api_key: Option<String>,
}

/// What happened to one legacy collection.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CollectionReport {
    /// The legacy collection.
    pub legacy: String,
    /// The collection written (none: unmapped or empty).
    pub target: Option<String>,
    /// Points read.
    pub read: u64,
    /// Points written.
    pub written: u64,
    /// Points not written, by reason.
    pub skipped: BTreeMap<String, u64>,
}

/// A legacy point's id as text (UUIDs and integers as Qdrant gives them).
fn legacy_id(v: &Value) -> Option<String> {
    match v {
        Value::String(s) if !s.is_empty() && s.len() <= 256 => Some(s.clone()),
        Value::Number(n) if n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

/// The dense vector of a legacy point.
fn vector(v: &Value, name: Option<&str>) -> Result<Vec<f32>, &'static str> {
    let floats = |a: &Vec<Value>| -> Result<Vec<f32>, &'static str> {
        a.iter()
            .map(|x| x.as_f64().map(|f| f as f32).filter(|f| f.is_finite()))
            .collect::<Option<Vec<f32>>>()
            .ok_or("bad_vector")
    };
    match v {
        Value::Array(a) => floats(a),
        Value::Object(o) => {
            let chosen = match name {
                Some(n) => o.get(n),
                None if o.len() == 1 => o.values().next(),
                None => return Err("several_vectors"),
            };
            match chosen {
                Some(Value::Array(a)) => floats(a),
                _ => Err("no_vector"),
            }
        }
        _ => Err("no_vector"),
    }
}

fn open_index(
    target: &Target,
    api_key: Option<&str>,
    name: &str,
    dim: usize,
) -> anyhow::Result<Arc<dyn VectorIndex>> {
    Ok(match target {
        // The engine keeps collection `name` in `root/name`.
        Target::Dir(root) => Arc::new(EdgeIndex::open(root, name, dim)?),
        Target::Url(url) => Arc::new(ServerIndex::open(url, api_key, name, dim)?),
    })
}

/// Where legacy points come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// An export directory: one `<collection>.jsonl` per legacy collection.
    Export(PathBuf),
    /// A Qdrant server (gRPC URL): every collection on it.
    Server(String),
}

/// Copies every legacy collection (in name order). Blocking.
pub fn migrate_vectors(o: &VectorsOptions) -> anyhow::Result<Vec<CollectionReport>> {
    let bar = kledger_runtime::progress::bar(None, "legacy points copied", o.progress);
    let mut indexes: BTreeMap<String, Arc<dyn VectorIndex>> = BTreeMap::new();
    let mut reports = Vec::new();
    match &o.source {
        Source::Export(dir) => {
            let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
                .with_context(|| format!("read {}", dir.display()))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "jsonl"))
                .collect();
            files.sort();
            for file in files {
                let legacy = file
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .unwrap_or_default()
                    .to_owned();
                let mut c = Copier::new(o, &legacy, &mut indexes, &bar);
                let mut r = BufReader::new(
                    std::fs::File::open(&file)
                        .with_context(|| format!("open {}", file.display()))?,
                );
                let mut buf = Vec::new();
                while let Some(fits) = read_line_bounded(&mut r, &mut buf, LINE_BYTES_MAX)? {
                    if fits && buf.iter().all(u8::is_ascii_whitespace) {
                        continue;
                    }
                    let point = if fits {
                        serde_json::from_slice(&buf).ok()
                    } else {
                        None
                    };
                    c.point(point)
                        .with_context(|| format!("legacy collection {legacy}"))?;
                }
                reports.push(c.finish()?);
            }
        }
        Source::Server(url) => {
            let server = LegacyServer::connect(url, o.api_key.as_deref())?;
            for legacy in server.collections()? {
                let mut c = Copier::new(o, &legacy, &mut indexes, &bar);
                server
                    .for_each_point(&legacy, &mut |p| c.point(Some(p)))
                    .with_context(|| format!("legacy collection {legacy}"))?;
                reports.push(c.finish()?);
            }
        }
    }
    bar.finish_and_clear();
    Ok(reports)
}

/// Copies the points of one legacy collection.
struct Copier<'a> {
    o: &'a VectorsOptions,
    mapped: Option<kledger_processors::legacy::Mapped>,
    indexes: &'a mut BTreeMap<String, Arc<dyn VectorIndex>>,
    bar: &'a indicatif::ProgressBar,
    report: CollectionReport,
    dim: Option<usize>,
    batch: Vec<Point>,
    bm25: Bm25,
}

impl<'a> Copier<'a> {
    fn new(
        o: &'a VectorsOptions,
        legacy: &str,
        indexes: &'a mut BTreeMap<String, Arc<dyn VectorIndex>>,
        bar: &'a indicatif::ProgressBar,
    ) -> Self {
        Self {
            o,
            mapped: map_collection(&o.rules, legacy),
            indexes,
            bar,
            report: CollectionReport {
                legacy: legacy.to_owned(),
                ..Default::default()
            },
            dim: None,
            batch: Vec::with_capacity(UPSERT_BATCH),
            bm25: Bm25::default(),
        }
    }

    fn skip(&mut self, why: &str) {
        *self.report.skipped.entry(why.to_owned()).or_default() += 1;
    }

    /// One legacy point (`None`: a line that is not JSON).
    fn point(&mut self, point: Option<Value>) -> anyhow::Result<()> {
        self.report.read += 1;
        let Some(m) = &self.mapped else {
            self.skip("unmapped_collection");
            return Ok(());
        };
        let Some(point) = point else {
            self.skip("malformed_point");
            return Ok(());
        };
        let Some(id) = legacy_id(&point["id"]) else {
            self.skip("bad_id");
            return Ok(());
        };
        let dense = match vector(&point["vector"], self.o.vector_name.as_deref()) {
            Ok(v) if (1..=DIM_MAX).contains(&v.len()) => v,
            Ok(_) => {
                self.skip("bad_vector");
                return Ok(());
            }
            Err(why) => {
                self.skip(why);
                return Ok(());
            }
        };
        let d = *self.dim.get_or_insert(dense.len());
        if dense.len() != d {
            self.skip("dimension_mismatch");
            return Ok(());
        }
        let empty = Map::new();
        let legacy_payload = point["payload"].as_object().unwrap_or(&empty);
        let sparse = ["text", "content", "page_content", "document"]
            .iter()
            .find_map(|k| legacy_payload.get(*k).and_then(Value::as_str))
            .map(|t| self.bm25.document(t))
            .unwrap_or_else(Sparse::default);
        let legacy = &self.report.legacy;
        let p = Point {
            id: Uuid::from_u128(point_id(legacy, &id)),
            dense,
            sparse,
            payload: payload(legacy, m, legacy_payload, &id, d, &self.o.defaults),
        };
        self.batch.push(p);
        if self.batch.len() >= UPSERT_BATCH {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> anyhow::Result<()> {
        let Some(dim) = self.dim.filter(|_| !self.batch.is_empty()) else {
            return Ok(());
        };
        let name = collection_name(&self.o.space, dim, 1);
        let index = match self.indexes.get(&name) {
            Some(i) => i.clone(),
            None => {
                let i = open_index(&self.o.target, self.o.api_key.as_deref(), &name, dim)?;
                self.indexes.insert(name.clone(), i.clone());
                i
            }
        };
        self.report.target = Some(name);
        let n = self.batch.len() as u64;
        index.upsert(std::mem::take(&mut self.batch))?;
        self.report.written += n;
        self.bar.inc(n);
        Ok(())
    }

    fn finish(mut self) -> anyhow::Result<CollectionReport> {
        self.flush()?;
        Ok(self.report)
    }
}
