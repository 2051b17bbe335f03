//! The configuration's sections: one struct per component, with its defaults. A component is
//! given its own section (or the few it needs), not the whole [`super::Config`].

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// The one size budget (docs/operations.md, "The record budget").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LimitsConfig {
    /// The largest record value kledger accepts or writes, bytes: the ingress body, an intent
    /// record, a commit (a purge is split into commits under it; another commit over it is
    /// rejected `commit_too_large`), a receipt, a view, a dead letter. The producers'
    /// `message.max.bytes`, the topics' `max.message.bytes` and the consumers' fetch sizes are
    /// set to it plus 64 KiB for keys, headers and framing. Part of the decision: replay
    /// verify must run with the processor's value.
    pub record_bytes_max: usize,
    /// The version of the rules: `v4`, the default, is `v3` plus crypto-shredding (rows sealed
    /// under data keys a purge destroys, keyed ids and hashes, a head hash without intent
    /// positions); `v3` is `v2` plus a purge's tombstone that also empties the close reason,
    /// sensitivity labels and evidence checksums; `v2` refuses
    /// control and text-hiding characters in every text field and checks ACL entries as
    /// identifiers; `v1` is wave 1's. A ledger keeps the version its history was decided
    /// under (docs/configuration.md). Part of the decision: replay verify must run with the
    /// processor's value.
    pub rules: RulesVersion,
}

/// The version of the rules (`limits.rules`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RulesVersion {
    /// Wave 1's validation.
    V1,
    /// Every text field checked for hidden characters; ACL entries as identifiers.
    V2,
    /// v2, and a purge's tombstone keeps no close reason, labels or evidence checksums.
    V3,
    /// v3, and crypto-shredding: rows sealed under data keys a purge destroys, ids and hashes
    /// keyed with the ledger's secret, a head hash independent of the topic layout.
    V4,
    /// v4, and one entity per person: third-party subjects resolved to people documents at
    /// ingest.
    V5,
    /// v5, and provenance: every intent names its source version.
    #[default]
    V6,
}

impl Default for LimitsConfig {
    fn default() -> Self {
        Self {
            record_bytes_max: kledger_schemas::limits::RECORD_BYTES_DEFAULT,
            rules: RulesVersion::default(),
        }
    }
}

impl LimitsConfig {
    /// The rules version.
    pub fn rules(&self) -> kledger_processors::Rules {
        match self.rules {
            RulesVersion::V1 => kledger_processors::Rules::V1,
            RulesVersion::V2 => kledger_processors::Rules::V2,
            RulesVersion::V3 => kledger_processors::Rules::V3,
            RulesVersion::V4 => kledger_processors::Rules::V4,
            RulesVersion::V5 => kledger_processors::Rules::V5,
            RulesVersion::V6 => kledger_processors::Rules::V6,
        }
    }

    /// The decision's bounds, with the ledger's `secret` (rules v4 key ids and hashes with
    /// it; `kledger_pipeline::keys`).
    pub fn decide(
        &self,
        secret: kledger_processors::ids::LedgerSecret,
    ) -> kledger_processors::Limits {
        kledger_processors::Limits {
            record_bytes_max: self.record_bytes_max,
            rules: self.rules(),
            secret,
        }
    }

    /// The Kafka-side limit (`message.max.bytes`, `max.message.bytes`, fetch sizes): the
    /// budget plus room for keys, headers and framing.
    pub fn kafka_message_bytes(&self) -> usize {
        self.record_bytes_max + kledger_schemas::limits::RECORD_OVERHEAD_BYTES
    }
}

/// The schema registry (see `kledger_kafka::codec`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RegistryConfig {
    /// Base URL of a Confluent Schema Registry, e.g. `http://127.0.0.1:8081`; empty: none.
    pub url: String,
    /// Timeout of one registry request.
    pub timeout_ms: u64,
    /// How long an unreachable registry is retried when resolving an id read on the wire.
    pub outage_retry_ms: u64,
}

impl Default for RegistryConfig {
    fn default() -> Self {
        Self {
            url: String::new(),
            timeout_ms: 5_000,
            outage_retry_ms: 30_000,
        }
    }
}

/// The vector projection.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct VectorsConfig {
    /// Run the vector sink in this process (search needs the index either way).
    pub enabled: bool,
    /// Where the vectors live.
    pub backend: VectorBackend,
    /// Directory of the projection's generations (`gNNNNNN/`: the in-process engine's index
    /// and the sink's marks; `ACTIVE` names the one in use).
    pub dir: PathBuf,
    /// Qdrant server gRPC URL (backend `server`), e.g. `http://127.0.0.1:6334`; `https://`
    /// connects with TLS (the system's root certificates).
    pub url: String,
    /// Environment variable holding the Qdrant server's API key (backend `server`; empty:
    /// none). The key itself is never part of the configuration.
    pub api_key_env: String,
    /// Local shards of a collection the embedded engine creates (backend `edge`; an existing
    /// collection keeps its count). Each shard writes on its own thread.
    pub shards: usize,
    /// The sink's batches.
    pub batch: BatchConfig,
    /// The embedder.
    pub embedder: EmbedderConfig,
}

/// Where the vector projection lives (`vectors.backend`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VectorBackend {
    /// Qdrant's engine in this process, under `vectors.dir` (the embedded default).
    #[default]
    Edge,
    /// A Qdrant server at `vectors.url`.
    Server,
}

/// Which embedder (`vectors.embedder.kind`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbedderKind {
    /// A local sentence-embedding model (BERT family) from `model_dir`: all-MiniLM-L6-v2 as
    /// `scripts/dev.sh` installs it, checked against `sha256`.
    #[default]
    Local,
    /// Local feature hashing: deterministic, lexical (tests, and users who want it).
    Hash,
    /// An OpenAI-compatible endpoint (`/v1/embeddings`).
    Http,
}

/// What the local model's matrix products compute in (`vectors.embedder.precision`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EmbedderPrecision {
    /// Single-precision floats: the reference implementation's vectors, to float rounding.
    F32,
    /// Eight-bit integers, dynamically quantised: about three times as fast with AVX-512 VNNI,
    /// vectors within about 0.5% of f32's (cosine), and the same on every CPU.
    #[default]
    Int8,
}

/// The bounds of a consumer's batches, the same for the processor and each sink
/// (`processor.batch`, `views.batch`, `vectors.batch`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BatchConfig {
    /// Records per batch at most.
    pub records_max: usize,
    /// How long a batch waits for more records after its first.
    pub wait_ms: u64,
}

/// Bounds of a group-mode batch (the partition reader's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BatchBounds {
    /// Records per batch at most.
    pub records_max: usize,
    /// How long a batch stays open after its first record.
    pub wait: std::time::Duration,
}

impl BatchConfig {
    /// The reader's bounds.
    pub fn bounds(&self) -> BatchBounds {
        BatchBounds {
            records_max: self.records_max,
            wait: std::time::Duration::from_millis(self.wait_ms),
        }
    }
}

/// Commands that read a topic to its end (replay verify, rebuild views, offline apply).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct BulkConfig {
    /// Records decided or folded per write of the store they build.
    pub records_max: usize,
}

impl Default for BulkConfig {
    fn default() -> Self {
        Self { records_max: 1_000 }
    }
}

/// Local shards of a new collection of the embedded engine (`vectors.shards`'s default; see
/// `kledger_retrieval::vector::edge`).
pub const EDGE_SHARDS: usize = 2;

impl Default for VectorsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            backend: VectorBackend::Edge,
            dir: PathBuf::from("data/vectors"),
            url: String::new(),
            api_key_env: String::new(),
            shards: EDGE_SHARDS,
            batch: BatchConfig {
                records_max: 1_000,
                wait_ms: 50,
            },
            embedder: EmbedderConfig::default(),
        }
    }
}

impl VectorsConfig {
    /// The Qdrant server's API key, read from the variable `api_key_env` names (none when
    /// unset or empty).
    pub fn api_key(&self) -> Option<String> {
        let var = self.api_key_env.trim();
        (!var.is_empty())
            .then(|| std::env::var(var).ok())
            .flatten()
            .filter(|k| !k.is_empty())
    }
}

/// The embedder of rows and queries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbedderConfig {
    /// Which embedder.
    pub kind: EmbedderKind,
    /// Dense dimension (`hash`, `http`; the collection is `cm_text_<dim>_v1`; the local
    /// model's is its own).
    pub dim: usize,
    /// Base URL of the endpoint (`http`): `{url}/v1/embeddings`.
    pub url: String,
    /// Model name sent to the endpoint (`http`); the local model's id in payloads (`local`;
    /// empty: `sentence-transformers/all-MiniLM-L6-v2`).
    pub model: String,
    /// Environment variable holding the API key (`http`; empty: none).
    pub api_key_env: String,
    /// Request timeout (`http`).
    pub timeout_ms: u64,
    /// Texts per request at most (`http`).
    pub batch_max: usize,
    /// Attempts per request (`http`; retried on transport errors, 429 and 5xx).
    pub attempts_max: u32,
    /// Directory of the local model (`local`): `model.safetensors`, `vocab.txt`,
    /// `config.json`; a leading `~/` is the home directory.
    pub model_dir: PathBuf,
    /// Expected SHA-256 of the local model's files by name (`local`); a file not named here
    /// must be the default model's.
    pub sha256: std::collections::BTreeMap<String, String>,
    /// What the matrix products compute in (`local`).
    pub precision: EmbedderPrecision,
    /// Threads a batch of rows is embedded on (`local`; 0: the cores available).
    pub threads: usize,
    /// Query embeddings kept (`local`).
    pub query_cache_entries: usize,
}

impl Default for EmbedderConfig {
    fn default() -> Self {
        Self {
            kind: EmbedderKind::Local,
            dim: kledger_processors::embed::HASH_DIM_DEFAULT,
            url: String::new(),
            model: String::new(),
            api_key_env: String::new(),
            timeout_ms: 10_000,
            batch_max: 64,
            attempts_max: 4,
            model_dir: PathBuf::from("~/.cache/kledger/models/all-minilm-l6-v2"),
            sha256: std::collections::BTreeMap::new(),
            precision: EmbedderPrecision::Int8,
            threads: 0,
            query_cache_entries: 1_024,
        }
    }
}

/// The view materializer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ViewsConfig {
    /// Run the view sink in this process.
    pub enabled: bool,
    /// Directory of the view store's generations (`gNNNNNN/`; `ACTIVE` names the one in use).
    pub dir: PathBuf,
    /// Block cache of the view store.
    pub cache_bytes: usize,
    /// Bound on the view store's memtables, all column families together.
    pub memtable_bytes: usize,
    /// How often the Views of accounts with new commits are rendered and published.
    pub publish_interval_ms: u64,
    /// The sink's batches.
    pub batch: BatchConfig,
    /// Rows read per account when rendering (bounds a render and a profile read).
    pub account_rows_max: usize,
}

impl Default for ViewsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            dir: PathBuf::from("data/views"),
            cache_bytes: 32 << 20,
            memtable_bytes: 32 << 20,
            publish_interval_ms: 1_000,
            batch: BatchConfig {
                records_max: 2_000,
                wait_ms: 50,
            },
            account_rows_max: 100_000,
        }
    }
}

/// The sources store: the projection of source documents (people, conversations, calendar,
/// screen) the timeline reads, beside the view store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SourcesConfig {
    /// Run the sources sink in this process (with the view sink, `project-views`).
    pub enabled: bool,
    /// Directory of the sources store's generations (`gNNNNNN/`; `ACTIVE` names the one in
    /// use). Empty: beside the view store's, `<views.dir>-sources`.
    pub dir: PathBuf,
    /// Block cache of the sources store.
    pub cache_bytes: usize,
    /// Bound on the sources store's memtables, all column families together.
    pub memtable_bytes: usize,
    /// The sink's batches.
    pub batch: BatchConfig,
    /// Run the source intake in a process with the `apply` role: the source topics forwarded
    /// to the intents topic (`kledger_pipeline::intake`).
    pub intake: bool,
    /// The intake's batches (records forwarded, then their offsets committed).
    pub intake_batch: BatchConfig,
    /// People documents an alias is resolved against at most: an account with more has no
    /// exhaustive people scan, so its aliases resolve to nobody (person ids still do).
    pub people_scan_max: usize,
    /// Entries one source reads for one timeline at most (from the newest).
    pub entries_max: usize,
    /// How long a timeline waits for a source's read before it answers that source `failed`
    /// (`timeout`) and the others without it.
    pub read_timeout_ms: u64,
    /// Days a conversation is shown after its start (0: always); older ones answer `pruned`.
    pub conversations_retention_days: u64,
    /// Days a calendar event is shown after its start (0: always).
    pub calendar_retention_days: u64,
    /// Days a screen span is shown after its start (0: always).
    pub screen_retention_days: u64,
}

impl SourcesConfig {
    /// The retention of `source`'s documents in days (0: none; people documents have none).
    pub fn retention_days(&self, source: kledger_schemas::SourceKind) -> u64 {
        use kledger_schemas::SourceKind;
        match source {
            SourceKind::People => 0,
            SourceKind::Conversations => self.conversations_retention_days,
            SourceKind::Calendar => self.calendar_retention_days,
            SourceKind::Screen => self.screen_retention_days,
            SourceKind::Episodes => 0,
        }
    }
}

impl Default for SourcesConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            dir: PathBuf::new(),
            cache_bytes: 16 << 20,
            memtable_bytes: 16 << 20,
            batch: BatchConfig {
                records_max: 2_000,
                wait_ms: 50,
            },
            intake: true,
            intake_batch: BatchConfig {
                records_max: 500,
                wait_ms: 20,
            },
            people_scan_max: 1_000,
            entries_max: 200,
            read_timeout_ms: 2_000,
            conversations_retention_days: 0,
            calendar_retention_days: 0,
            screen_retention_days: 0,
        }
    }
}

/// What readers may see beyond the rows as they stand now (`docs/privacy.md#history`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PolicyConfig {
    /// The history policy of every tenant without one of its own.
    pub history: HistoryPolicy,
    /// Tenants' own policies, by tenant id (`[policy.tenants.t_acme.history]`).
    pub tenants: BTreeMap<String, TenantPolicy>,
    /// Expiry that deletes: rows past their `expires_at` purged by intents kledger publishes.
    pub ttl: TtlPolicy,
}

/// Expiry that deletes (`docs/privacy.md#expiry`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TtlPolicy {
    /// Whether the view sink publishes a purge intent for every row past its expiry.
    pub purge: bool,
    /// How often the view sink sweeps its expiry index, ms: a row is purged within about this
    /// long after its expiry (plus the processor's turn), while the view sink runs.
    pub sweep_interval_ms: u64,
    /// Purge intents one sweep publishes at most (the rest are the next sweep's).
    pub sweep_max: usize,
}

impl Default for TtlPolicy {
    fn default() -> Self {
        Self {
            purge: true,
            sweep_interval_ms: 60_000,
            sweep_max: 500,
        }
    }
}

impl PolicyConfig {
    /// The history policy of `tenant`.
    pub fn history_of(&self, tenant: &str) -> HistoryPolicy {
        self.tenants.get(tenant).map_or(self.history, |t| t.history)
    }
}

/// One tenant's policies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TenantPolicy {
    /// Its history policy.
    pub history: HistoryPolicy,
}

/// Who reads history: a past `as_of`, any `known_at`, the timeline's `history` and `audit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HistoryPolicy {
    /// Whether an account's owner reads its own history.
    pub owner: bool,
    /// Days back a principal with `role_history` reads another owner's history (0: nobody but
    /// the owner reads it).
    pub window_days: u64,
}

impl Default for HistoryPolicy {
    fn default() -> Self {
        Self {
            owner: true,
            window_days: 0,
        }
    }
}

/// Retrieval beyond the ledger's own search.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RetrievalConfig {
    /// Bounded conversation retrieval (`POST /v1/conversations/search`, MCP
    /// `search_conversations`).
    pub conversations: ConversationRetrievalConfig,
}

/// Bounded conversation retrieval: off by default.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ConversationRetrievalConfig {
    /// Serve it (off: `403 conversation_retrieval_off`).
    pub enabled: bool,
    /// Conversations one triage reads at most, from the newest.
    pub scan_max: usize,
    /// Conversations one answer returns at most (a request's `limit`: 1..= this).
    pub results_max: usize,
    /// Least cosine similarity of a summary to the query for the semantic triage to match it.
    pub semantic_min_score: f32,
}

impl Default for ConversationRetrievalConfig {
    fn default() -> Self {
        Self {
            enabled: false,
            scan_max: 200,
            results_max: 5,
            semantic_min_score: 0.35,
        }
    }
}

/// The read API.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApiConfig {
    /// Exports streamed at once, in all (`429 too_many_exports` beyond).
    pub exports_max: usize,
    /// Exports one principal streams at once (`429 too_many_exports` beyond).
    pub exports_per_principal_max: usize,
    /// Requests waiting at once, in all: reads for their `min_commit_seq` (`429
    /// too_many_waits` beyond) and ingress requests for their receipt (`wait_ms`; beyond, the
    /// intent is accepted without waiting: `202`).
    pub waits_max: usize,
    /// Requests of one principal waiting at once (as `waits_max`).
    pub waits_per_principal_max: usize,
    /// Requests of one principal in flight at once, from authentication to the last byte of the
    /// answer (`429 too_many_requests` beyond).
    pub requests_per_principal_max: usize,
    /// MCP sessions open at once, in all (`429 too_many_sessions` beyond).
    pub mcp_sessions_max: usize,
    /// MCP sessions one principal holds open at once (`429 too_many_sessions` beyond).
    pub mcp_sessions_per_principal_max: usize,
    /// Principals by name; each has a bearer token. No principals: every `/v1` call is 401.
    pub principals: BTreeMap<String, PrincipalConfig>,
    /// The principal `kledger mcp` serves its stdio agent as (a name in `principals`).
    pub mcp_principal: String,
}

impl Default for ApiConfig {
    fn default() -> Self {
        Self {
            exports_max: 16,
            exports_per_principal_max: 1,
            waits_max: 1_024,
            waits_per_principal_max: 32,
            requests_per_principal_max: 64,
            mcp_sessions_max: 1_024,
            mcp_sessions_per_principal_max: 16,
            principals: BTreeMap::new(),
            mcp_principal: String::new(),
        }
    }
}

/// One principal of the read API (unknown keys are refused by [`Principal`]).
///
/// [`Principal`]: kledger_processors::access::Principal
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrincipalConfig {
    /// The bearer token (at least 16 characters).
    pub token: String,
    /// Who the token stands for.
    #[serde(flatten)]
    pub principal: kledger_processors::access::Principal,
}

/// How commits, receipts and input offsets are made durable together.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DeliveryMode {
    /// Idempotent producer, no transactions: effectively-once through deterministic decisions
    /// and the hash-chained fold. Works on any Kafka-compatible broker.
    #[default]
    Idempotent,
    /// Kafka transactions: commits, receipts and input offsets atomic; zombies fenced.
    Transactional,
}

/// Kafka settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct KafkaConfig {
    /// Bootstrap servers; empty means the embedded broker.
    pub bootstrap_servers: String,
    /// Topic name prefix (`<prefix>.intents.v1`, ...).
    pub topic_prefix: String,
    /// Partitions of every topic when kledger creates them.
    pub partitions: i32,
    /// Replication factor when kledger creates topics.
    pub replication_factor: i32,
    /// Consumer group of the apply processor (the sinks use `<group_id>-views` and
    /// `<group_id>-vectors`).
    pub group_id: String,
    /// Static group membership (`group.instance.id`, KIP-345): a restarted instance takes its
    /// place in the group back at once instead of leaving a dead member behind to expire.
    /// Unset or empty (default): dynamic membership; `auto`: the host name and a digest of
    /// `state.dir` (stable across restarts of one instance, different for two on one host);
    /// another value: that id (e.g. a StatefulSet pod name). The sinks use `<id>-views` and
    /// `<id>-vectors`.
    pub group_instance_id: Option<String>,
    /// Delivery mode.
    pub delivery_mode: DeliveryMode,
    /// Transactional id (transactional mode); defaults to `<group_id>-tx`. Give every
    /// instance its own id.
    pub transactional_id: Option<String>,
    /// Create missing topics at start (off when an operator manages topics).
    pub create_topics: bool,
    /// `retention.ms` of the intents and dead-letter topics when kledger creates them
    /// (default 7 days; -1 keeps them forever, which breaks the erasure bound of
    /// `docs/privacy.md`). Once decided, an intent is read only by `replay verify`, which
    /// checks the retained window; an instance down for longer than this loses the intents it
    /// had not read.
    pub intents_retention_ms: i64,
    /// How long after a record is due to go (its retention passed, or a newer record of its key
    /// made it compactable) the broker has removed it at most: what purge receipts wait for.
    /// Unset: one maintenance run of the embedded broker; on another broker, `segment.ms` +
    /// `max.compaction.lag.ms` as kledger creates its topics (2 h).
    pub compaction_slack_ms: Option<i64>,
    /// librdkafka properties for every client kledger makes (consumers, producers, the admin
    /// client, every command's readers): where `security.protocol`, `sasl.*` and `ssl.*` go.
    /// The role's own properties below are applied after them.
    pub common_properties: BTreeMap<String, String>,
    /// Extra librdkafka properties for consumers.
    pub consumer_properties: BTreeMap<String, String>,
    /// Extra librdkafka properties for producers.
    pub producer_properties: BTreeMap<String, String>,
}

impl Default for KafkaConfig {
    fn default() -> Self {
        Self {
            bootstrap_servers: String::new(),
            topic_prefix: "kledger".into(),
            partitions: 12,
            replication_factor: 1,
            group_id: "kledger-apply".into(),
            group_instance_id: None,
            delivery_mode: DeliveryMode::Idempotent,
            transactional_id: None,
            create_topics: true,
            intents_retention_ms: super::topics::INTENTS_RETENTION_MS,
            compaction_slack_ms: None,
            common_properties: BTreeMap::new(),
            consumer_properties: BTreeMap::new(),
            producer_properties: BTreeMap::new(),
        }
    }
}

/// The embedded broker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbeddedConfig {
    /// Listen address (an IP literal and a port).
    pub listen: String,
    /// Storage URL: `sqlite://data/broker/tansu.db` (durable, relative to the working
    /// directory) or `memory://tansu/` (tests only: it cannot hold credentials, so it needs
    /// `authentication = false`).
    pub storage: String,
    /// Clients must log in (SASL/SCRAM-SHA-256) with the credentials kledger generates at the
    /// broker's first start and keeps in `credentials` (mode 0600): another local process can
    /// neither read the topics (the keys topic holds every data key) nor publish intents.
    pub authentication: bool,
    /// The file holding the embedded broker's credentials (created at its first start; read by
    /// every command that connects to it).
    pub credentials: PathBuf,
}

impl Default for EmbeddedConfig {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:9092".into(),
            storage: "sqlite://data/broker/tansu.db".into(),
            authentication: true,
            credentials: PathBuf::from("data/broker/credentials"),
        }
    }
}

/// RocksDB state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct StateConfig {
    /// State directory.
    pub dir: PathBuf,
    /// Shared block cache.
    pub block_cache_bytes: usize,
    /// Memtable size per column family.
    pub write_buffer_bytes: usize,
    /// Memtables per column family.
    pub write_buffers_max: i32,
    /// Bound on all memtables.
    pub db_write_buffer_bytes: usize,
    /// Write RocksDB's write-ahead log (off: state is rebuilt from the outbox after a crash).
    pub wal: bool,
    /// Delete a revoked partition's keys once the rebalance that revoked it has assigned it
    /// elsewhere. Off by default: kept state is caught up from the outbox when the partition
    /// comes back, which makes rebalances cheap.
    pub drop_on_revoke: bool,
}

impl Default for StateConfig {
    fn default() -> Self {
        let r = kledger_state::RocksConfig::default();
        Self {
            dir: PathBuf::from("data/state"),
            block_cache_bytes: r.block_cache_bytes,
            write_buffer_bytes: r.write_buffer_bytes,
            write_buffers_max: r.write_buffers_max,
            db_write_buffer_bytes: r.db_write_buffer_bytes,
            wal: r.wal,
            drop_on_revoke: false,
        }
    }
}

impl StateConfig {
    /// The RocksDB bounds.
    pub fn rocks(&self) -> kledger_state::RocksConfig {
        kledger_state::RocksConfig {
            block_cache_bytes: self.block_cache_bytes,
            write_buffer_bytes: self.write_buffer_bytes,
            write_buffers_max: self.write_buffers_max,
            db_write_buffer_bytes: self.db_write_buffer_bytes,
            wal: self.wal,
        }
    }
}

/// The apply processor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ProcessorConfig {
    /// The processor's batches.
    pub batch: BatchConfig,
    /// Failed attempts in a row of a partition's batch after which the processor reports
    /// itself degraded (`/readyz` 503, `kledger_processor_degraded` 1). It keeps retrying
    /// with backoff for as long as the failure lasts; it never stops for one.
    pub degraded_after_attempts: u32,
    /// How long a partition may keep failing before the processor reports itself degraded,
    /// however few its attempts (a restore that cannot reach the broker fails only after its
    /// own stall bound).
    pub degraded_after_ms: u64,
    /// First retry backoff.
    pub backoff_ms_initial: u64,
    /// Largest retry backoff.
    pub backoff_ms_max: u64,
    /// How long to wait for the delivery of a batch's records.
    pub delivery_timeout_ms: u64,
    /// Outbox records folded per state write during restore.
    pub restore_batch_records: usize,
    /// How often the processor compares the end of each keys-topic partition it owns with
    /// where its own records end, and reads into state a data key another writer put there
    /// (an old owner's, after a rebalance), so a purge destroys it too (docs/privacy.md).
    pub keys_check_ms: u64,
    /// Threads a batch is decided on (split by account, each account on one thread, in order;
    /// one RocksDB write per batch). 0: the cores available.
    pub apply_threads: usize,
}

/// Apply threads at most, whatever `processor.apply_threads` says.
pub const APPLY_THREADS_MAX: usize = 64;

impl ProcessorConfig {
    /// The apply threads to run: `apply_threads`, or the cores available when 0, at most
    /// [`APPLY_THREADS_MAX`].
    pub fn apply_threads(&self) -> usize {
        let n = match self.apply_threads {
            0 => std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
            n => n,
        };
        n.clamp(1, APPLY_THREADS_MAX)
    }
}

impl Default for ProcessorConfig {
    fn default() -> Self {
        Self {
            batch: BatchConfig {
                records_max: 2_000,
                wait_ms: 20,
            },
            degraded_after_attempts: 4,
            degraded_after_ms: 30_000,
            backoff_ms_initial: 100,
            backoff_ms_max: 5_000,
            delivery_timeout_ms: 60_000,
            restore_batch_records: 5_000,
            keys_check_ms: 10_000,
            apply_threads: 0,
        }
    }
}

/// HTTP.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpConfig {
    /// Listen address of `/metrics`, `/healthz`, `/readyz` and the read API.
    pub listen: String,
    /// A request's head must arrive within this long of the connection waiting for it: a
    /// half-sent request, or a kept-alive connection idle this long, is closed.
    pub header_timeout_ms: u64,
    /// A request's body must arrive within this long (`408 body_timeout`).
    pub body_timeout_ms: u64,
    /// Connections served at once; one more is answered `503 too_many_connections` (a
    /// request for `/healthz`, `/readyz` or `/metrics` is still served, on a few connections
    /// of its own).
    pub connections_max: usize,
    /// An answer whose bytes the client has not taken for this long is abandoned and the
    /// connection closed (a client that never reads holds nothing for longer).
    pub write_timeout_ms: u64,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:9464".into(),
            header_timeout_ms: 10_000,
            body_timeout_ms: 30_000,
            connections_max: 512,
            write_timeout_ms: 30_000,
        }
    }
}

/// Logging.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// How lines are written.
    pub format: LogFormat,
    /// An `EnvFilter` directive.
    pub filter: String,
}

/// How log lines are written (`log.format`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// One JSON object per line.
    Json,
    /// Human-readable text.
    #[default]
    Text,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            format: LogFormat::Text,
            filter: "info".into(),
        }
    }
}
