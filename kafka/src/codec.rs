//! The record codec of a process: Avro single-object encoding, or, when `registry.url` is set,
//! the Confluent wire format with ids from a Confluent Schema Registry.
//!
//! With a registry, [`Codec::connect`] registers the current schema of each record under the
//! subject `<topic>-value` of the topic it is written to (intents, outbox, receipts, views,
//! the four source topics),
//! after asking the registry whether the schema is compatible with the subject's latest
//! version (an incompatible schema stops the process before it writes anything). Records are
//! then written as magic 0 + the 4-byte id + the Avro body. Ids read on the wire are resolved
//! with `GET /schemas/ids/{id}` and cached; a registry that cannot be reached is retried for
//! `registry.outage_retry_ms` before the record is treated as undecodable (dead letter
//! `unknown_schema`). Single-object records (magic C3 01) decode either way, so topics may
//! mix both framings.
//!
//! The head hash of a commit covers its Avro body, never the framing, so the hash chain and
//! the state digest do not depend on the wire format; replay compares records framed the same
//! way the live processor frames them.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use kledger_schemas::avro::{
    CONFLUENT_MAGIC, KnownSchemas, Record, SINGLE_OBJECT_HEADER, Schema, SchemaLookup,
    encode_confluent, encode_single_object,
};
use kledger_schemas::{
    CalendarSource, Commit, ConversationSource, EpisodeSource, Intent, PersonSource, Receipt,
    ScreenSource, SourceKind, SourceOp, View,
};
use serde_json::{Value, json};

use kledger_runtime::config::Config;

/// The content type of the registry's REST API.
const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";
/// Registry ids cached at most (a process sees a handful).
const CACHE_MAX: usize = 1_024;

/// A client of the Confluent Schema Registry REST API (the subset kledger uses). Blocking:
/// never call it on an async executor thread.
#[derive(Debug)]
pub struct RegistryClient {
    base: String,
    http: reqwest::blocking::Client,
    outage_retry: Duration,
    schemas: Mutex<BTreeMap<u32, Arc<Schema>>>,
}

impl RegistryClient {
    /// A client of the registry at `url` (e.g. `http://127.0.0.1:8081`).
    pub fn new(url: &str, timeout: Duration, outage_retry: Duration) -> anyhow::Result<Self> {
        let http = reqwest::blocking::Client::builder()
            .timeout(timeout)
            .build()
            .context("registry http client")?;
        Ok(Self {
            base: url.trim_end_matches('/').to_owned(),
            http,
            outage_retry,
            schemas: Mutex::new(BTreeMap::new()),
        })
    }

    /// One request: (status, JSON body).
    fn call(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> anyhow::Result<(u16, Value)> {
        let mut req = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header(reqwest::header::ACCEPT, CONTENT_TYPE);
        if let Some(b) = body {
            req = req
                .header(reqwest::header::CONTENT_TYPE, CONTENT_TYPE)
                .body(b.to_string());
        }
        let resp = req.send().with_context(|| format!("registry {path}"))?;
        let status = resp.status().as_u16();
        let text = resp.text().unwrap_or_default();
        Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }

    /// Whether `schema` is compatible with the latest version of `subject` under the
    /// subject's compatibility setting (a subject without versions: yes).
    pub fn compatible(&self, subject: &str, schema: &str) -> anyhow::Result<bool> {
        let (status, v) = self.call(
            reqwest::Method::POST,
            &format!("/compatibility/subjects/{subject}/versions/latest"),
            Some(&json!({ "schema": schema })),
        )?;
        match status {
            200 => Ok(v["is_compatible"].as_bool().unwrap_or(false)),
            404 => Ok(true),
            _ => anyhow::bail!("registry compatibility check of {subject}: HTTP {status} {v}"),
        }
    }

    /// Registers `schema` under `subject` (after a compatibility check); returns its id. The
    /// registry answers the existing id for a schema it already has.
    pub fn register(&self, subject: &str, schema: &str) -> anyhow::Result<u32> {
        anyhow::ensure!(
            self.compatible(subject, schema)?,
            "the current schema is not compatible with the latest version of registry subject {subject}"
        );
        let (status, v) = self.call(
            reqwest::Method::POST,
            &format!("/subjects/{subject}/versions"),
            Some(&json!({ "schema": schema })),
        )?;
        anyhow::ensure!(status == 200, "registering {subject}: HTTP {status} {v}");
        let id = v["id"]
            .as_u64()
            .and_then(|i| u32::try_from(i).ok())
            .with_context(|| format!("registering {subject}: no id in {v}"))?;
        if let Ok(s) = Schema::parse_str(schema) {
            self.remember(id, Arc::new(s));
        }
        Ok(id)
    }

    fn remember(&self, id: u32, s: Arc<Schema>) {
        let mut cache = self.schemas.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= CACHE_MAX {
            cache.pop_first();
        }
        cache.insert(id, s);
    }

    /// The Avro schema registered under `id` (none: unknown id or not Avro). Retries while the
    /// registry cannot be reached, up to the outage bound.
    pub fn schema(&self, id: u32) -> anyhow::Result<Option<Arc<Schema>>> {
        if let Some(s) = self
            .schemas
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&id)
        {
            return Ok(Some(s.clone()));
        }
        let deadline = Instant::now() + self.outage_retry;
        let mut backoff = kledger_runtime::backoff::Backoff::from_millis(100, 2_000);
        let (status, v) = loop {
            match self.call(reqwest::Method::GET, &format!("/schemas/ids/{id}"), None) {
                Ok((s, v)) if s < 500 => break (s, v),
                r if Instant::now() >= deadline => {
                    return Err(match r {
                        Ok((s, v)) => anyhow::anyhow!("registry: HTTP {s} {v}"),
                        Err(e) => e,
                    });
                }
                _ => std::thread::sleep(backoff.next_pause()),
            }
        };
        if status != 200 {
            return Ok(None);
        }
        let avro = v["schemaType"].as_str().is_none_or(|t| t == "AVRO");
        let Some(text) = v["schema"].as_str().filter(|_| avro) else {
            return Ok(None);
        };
        let Ok(s) = Schema::parse_str(text) else {
            return Ok(None);
        };
        let s = Arc::new(s);
        self.remember(id, s.clone());
        Ok(Some(s))
    }
}

/// The registry ids of the current schemas, by record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SchemaIds {
    /// `<intents topic>-value`.
    pub intent: u32,
    /// `<outbox topic>-value`.
    pub commit: u32,
    /// `<receipts topic>-value`.
    pub receipt: u32,
    /// `<views topic>-value`.
    pub view: u32,
    /// `<source topic>-value` of each source, in [`SourceKind::ALL`]'s order.
    pub sources: [u32; 5],
}

/// How a process frames and reads records (see the module doc).
#[derive(Debug)]
pub struct Codec {
    registry: Option<(Arc<RegistryClient>, SchemaIds)>,
    known: KnownSchemas,
}

impl Default for Codec {
    fn default() -> Self {
        Self::single_object()
    }
}

impl Codec {
    /// Single-object encoding; released schemas resolve by fingerprint.
    pub fn single_object() -> Self {
        Self {
            registry: None,
            known: KnownSchemas::released(),
        }
    }

    /// The codec `config` asks for: with `registry.url` set, registers the nine subjects
    /// (blocking; run it off the async executor).
    pub fn connect(config: &Config) -> anyhow::Result<Self> {
        let r = &config.registry;
        if r.url.is_empty() {
            return Ok(Self::single_object());
        }
        let client = Arc::new(RegistryClient::new(
            &r.url,
            Duration::from_millis(r.timeout_ms),
            Duration::from_millis(r.outage_retry_ms),
        )?);
        let t = config.topics();
        let reg = |topic: &str, schema: &str| client.register(&format!("{topic}-value"), schema);
        let ids = SchemaIds {
            intent: reg(&t.intents, Intent::SCHEMA_JSON)?,
            commit: reg(&t.outbox, Commit::SCHEMA_JSON)?,
            receipt: reg(&t.receipts, Receipt::SCHEMA_JSON)?,
            view: reg(&t.views, View::SCHEMA_JSON)?,
            sources: [
                reg(t.source(SourceKind::People), PersonSource::SCHEMA_JSON)?,
                reg(
                    t.source(SourceKind::Conversations),
                    ConversationSource::SCHEMA_JSON,
                )?,
                reg(t.source(SourceKind::Calendar), CalendarSource::SCHEMA_JSON)?,
                reg(t.source(SourceKind::Screen), ScreenSource::SCHEMA_JSON)?,
                reg(t.source(SourceKind::Episodes), EpisodeSource::SCHEMA_JSON)?,
            ],
        };
        tracing::info!(registry = %kledger_runtime::config::redact_url(&r.url), ?ids, "schemas registered");
        Ok(Self {
            registry: Some((client, ids)),
            known: KnownSchemas::released(),
        })
    }

    /// The registry ids, when a registry is configured.
    pub fn ids(&self) -> Option<SchemaIds> {
        self.registry.as_ref().map(|(_, ids)| *ids)
    }

    fn id_of<T: Record>(ids: &SchemaIds) -> Option<u32> {
        match T::NAME {
            "Intent" => Some(ids.intent),
            "Commit" => Some(ids.commit),
            "Receipt" => Some(ids.receipt),
            "View" => Some(ids.view),
            "PersonSource" => Some(ids.sources[0]),
            "ConversationSource" => Some(ids.sources[1]),
            "CalendarSource" => Some(ids.sources[2]),
            "ScreenSource" => Some(ids.sources[3]),
            "EpisodeSource" => Some(ids.sources[4]),
            _ => None,
        }
    }

    /// Encodes a record in this process's framing.
    pub fn encode<T: Record>(&self, value: &T) -> Vec<u8> {
        match self
            .registry
            .as_ref()
            .and_then(|(_, ids)| Self::id_of::<T>(ids))
        {
            Some(id) => encode_confluent(value, id),
            None => encode_single_object(value),
        }
    }

    /// Encodes the record of `op`'s source topic that puts `op` into `account_id`'s ledger, in
    /// this process's framing.
    pub fn encode_source(&self, account_id: &str, version: Option<&str>, op: &SourceOp) -> Vec<u8> {
        let single = kledger_schemas::encode_source(account_id, version, op);
        let at = SourceKind::ALL
            .iter()
            .position(|k| *k == op.doc.source())
            .unwrap_or(0);
        match &self.registry {
            Some((_, ids)) => reframe(single, ids.sources[at]),
            None => single,
        }
    }

    /// Reframes a single-object encoded record of `T` (e.g. a sealed commit) in this process's
    /// framing.
    pub fn frame<T: Record>(&self, single_object: Vec<u8>) -> Vec<u8> {
        match self
            .registry
            .as_ref()
            .and_then(|(_, ids)| Self::id_of::<T>(ids))
        {
            Some(id) => reframe(single_object, id),
            None => single_object,
        }
    }
}

/// A single-object encoded record in the Confluent framing with registry id `id`.
fn reframe(single_object: Vec<u8>, id: u32) -> Vec<u8> {
    let body = &single_object[SINGLE_OBJECT_HEADER..];
    let mut out = Vec::with_capacity(body.len() + 5);
    out.push(CONFLUENT_MAGIC);
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(body);
    out
}

impl SchemaLookup for Codec {
    fn by_id(&self, id: u32) -> Option<Arc<Schema>> {
        let (client, _) = self.registry.as_ref()?;
        match client.schema(id) {
            Ok(s) => s,
            Err(e) => {
                tracing::warn!(id, error = %e, "schema registry unreachable");
                None
            }
        }
    }

    fn by_fingerprint(&self, fingerprint: u64) -> Option<Arc<Schema>> {
        self.known.by_fingerprint(fingerprint)
    }
}
