//! Embedders of the vector projection and of search queries: the local sentence-embedding
//! model (default, [`super::model`]), the deterministic feature-hashing embedder (lexical; for
//! tests and for users who want it), or an OpenAI-compatible `/v1/embeddings` endpoint
//! (batched, with a timeout and bounded retries). Sparse term vectors never come from here:
//! they are BM25's ([`kledger_processors::bm25::Bm25`]), the keyword provider.

use std::time::Duration;

use kledger_processors::embed::HashEmbedder;
use serde::Deserialize;

use super::VectorError;
use kledger_runtime::config::EmbedderConfig;

/// A dense embedder.
pub trait Embedder: Send + Sync + std::fmt::Debug {
    /// Model id (payload `embedding.model`; an intent's own vector is used only when its model
    /// is this one and its dimension matches).
    fn model(&self) -> &str;
    /// Dimension.
    fn dim(&self) -> usize;
    /// One vector per text, in order.
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, VectorError>;
    /// The vector of a search query (an embedder may keep recent ones).
    fn embed_query(&self, text: &str) -> Result<Vec<f32>, VectorError> {
        self.embed(&[text])?
            .pop()
            .ok_or_else(|| VectorError::Backend("the embedder returned nothing".into()))
    }
    /// The vectors of a search's query texts, in order (an embedder may keep recent ones, and
    /// embed the rest in one batch).
    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, VectorError> {
        texts.iter().map(|t| self.embed_query(t)).collect()
    }
}

/// The feature-hashing embedder (`vectors.embedder.kind = "hash"`): no model, for tests and
/// benches.
#[derive(Debug, Clone)]
pub struct HashingEmbedder {
    hasher: HashEmbedder,
    model: String,
}

impl HashingEmbedder {
    /// A hashing embedder of `dim` dimensions.
    pub fn new(dim: usize) -> Self {
        Self {
            hasher: HashEmbedder { dim },
            model: kledger_processors::embed::HASH_MODEL.to_owned(),
        }
    }
}

impl Embedder for HashingEmbedder {
    fn model(&self) -> &str {
        &self.model
    }

    fn dim(&self) -> usize {
        self.hasher.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, VectorError> {
        Ok(texts.iter().map(|t| self.hasher.dense(t)).collect())
    }
}

/// An OpenAI-compatible embeddings endpoint (`POST {url}/v1/embeddings`).
#[derive(Debug)]
pub struct HttpEmbedder {
    url: String,
    model: String,
    dim: usize,
    api_key: Option<String>,
    batch_max: usize,
    attempts_max: u32,
    client: reqwest::blocking::Client,
}

#[derive(Deserialize)]
struct Response {
    data: Vec<Item>,
}

#[derive(Deserialize)]
struct Item {
    index: usize,
    embedding: Vec<f32>,
}

impl HttpEmbedder {
    /// An embedder for `config` (the API key is read from the variable it names).
    pub fn new(config: &EmbedderConfig) -> Result<Self, VectorError> {
        let client = reqwest::blocking::Client::builder()
            .timeout(Duration::from_millis(config.timeout_ms))
            .build()
            .map_err(|e| VectorError::Backend(format!("embedder client: {e}")))?;
        Ok(Self {
            url: format!("{}/v1/embeddings", config.url.trim_end_matches('/')),
            model: config.model.clone(),
            dim: config.dim,
            api_key: (!config.api_key_env.is_empty())
                .then(|| std::env::var(&config.api_key_env).ok())
                .flatten(),
            batch_max: config.batch_max.max(1),
            attempts_max: config.attempts_max.max(1),
            client,
        })
    }

    fn call(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, VectorError> {
        let body = serde_json::json!({"model": self.model, "input": texts});
        let mut last = String::new();
        // 200 ms before the second try, doubling up to 6.4 s.
        let backoff = kledger_runtime::backoff::Backoff::from_millis(200, 6_400);
        for attempt in 0..self.attempts_max {
            std::thread::sleep(backoff.before_attempt(attempt));
            let mut req = self.client.post(&self.url).json(&body);
            if let Some(k) = &self.api_key {
                req = req.bearer_auth(k);
            }
            let resp = match req.send() {
                Ok(r) => r,
                Err(e) => {
                    last = e.to_string();
                    continue;
                }
            };
            let status = resp.status();
            if status.is_server_error() || status.as_u16() == 429 {
                last = format!("status {status}");
                continue;
            }
            if !status.is_success() {
                return Err(VectorError::Backend(format!("embedder answered {status}")));
            }
            let mut parsed: Response = resp
                .json()
                .map_err(|e| VectorError::Backend(format!("embedder answer: {e}")))?;
            parsed.data.sort_by_key(|i| i.index);
            if parsed.data.len() != texts.len()
                || parsed.data.iter().any(|i| i.embedding.len() != self.dim)
            {
                return Err(VectorError::Backend(format!(
                    "embedder answered {} vectors for {} texts, or not of dimension {}",
                    parsed.data.len(),
                    texts.len(),
                    self.dim
                )));
            }
            return Ok(parsed.data.into_iter().map(|i| i.embedding).collect());
        }
        Err(VectorError::Backend(format!(
            "embedder failed {} times: {last}",
            self.attempts_max
        )))
    }
}

impl Embedder for HttpEmbedder {
    fn model(&self) -> &str {
        &self.model
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, VectorError> {
        let mut out = Vec::with_capacity(texts.len());
        for chunk in texts.chunks(self.batch_max) {
            out.extend(self.call(chunk)?);
        }
        Ok(out)
    }
}
