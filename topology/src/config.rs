//! Configuration: a TOML file, every key overridable by `KLEDGER_*` environment variables.
//!
//! Nesting in variable names uses a double underscore: `KLEDGER_KAFKA__BOOTSTRAP_SERVERS`
//! sets `kafka.bootstrap_servers`. In the librdkafka pass-through tables
//! (`kafka.consumer_properties`, `kafka.producer_properties`) single underscores become dots:
//! `KLEDGER_KAFKA__CONSUMER_PROPERTIES__FETCH_MAX_BYTES=1048576` sets `fetch.max.bytes`.
//! With no file and no variables, everything runs on the embedded defaults.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

/// Prefix of environment overrides.
pub const ENV_PREFIX: &str = "KLEDGER_";
/// `KLEDGER_*` variables the command line reads (`--config`, `--role`): not configuration keys.
pub const CLI_VARS: [&str; 2] = ["CONFIG", "ROLE"];

/// The whole configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Kafka and topics.
    pub kafka: KafkaConfig,
    /// The in-process broker used when `kafka.bootstrap_servers` is empty.
    pub embedded: EmbeddedConfig,
    /// RocksDB state.
    pub state: StateConfig,
    /// The apply processor.
    pub processor: ProcessorConfig,
    /// HTTP (metrics, health).
    pub http: HttpConfig,
    /// Logging.
    pub log: LogConfig,
    /// The view materializer (a sink of the outbox) and its store.
    pub views: ViewsConfig,
    /// The read API.
    pub api: ApiConfig,
    /// The vector projection (a sink of the outbox) and search.
    pub vectors: VectorsConfig,
    /// A Confluent Schema Registry (none by default: single-object encoding).
    pub registry: RegistryConfig,
}

/// The schema registry (see `crate::registry`).
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
    /// `edge` (Qdrant's engine in-process, under `dir`) or `server` (a Qdrant server at `url`).
    pub backend: String,
    /// Directory of the projection's generations (`gNNNNNN/`: the in-process engine's index
    /// and the sink's marks; `ACTIVE` names the one in use).
    pub dir: PathBuf,
    /// Qdrant server gRPC URL (backend `server`), e.g. `http://127.0.0.1:6334`.
    pub url: String,
    /// Local shards of a collection the embedded engine creates (backend `edge`; an existing
    /// collection keeps its count). Each shard writes on its own thread.
    pub shards: usize,
    /// Outbox records per sink batch at most.
    pub batch_records_max: usize,
    /// How long a batch waits for more records after its first.
    pub batch_wait_ms: u64,
    /// The embedder.
    pub embedder: EmbedderConfig,
}

impl Default for VectorsConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            backend: "edge".into(),
            dir: PathBuf::from("data/vectors"),
            url: String::new(),
            shards: crate::vector::edge::SHARDS,
            batch_records_max: 1_000,
            batch_wait_ms: 50,
            embedder: EmbedderConfig::default(),
        }
    }
}

/// The embedder of rows and queries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct EmbedderConfig {
    /// `hash` (local feature hashing, deterministic) or `http` (OpenAI-compatible endpoint).
    pub kind: String,
    /// Dense dimension (the collection is `cm_text_<dim>_v1`).
    pub dim: usize,
    /// Base URL of the endpoint (`http`): `{url}/v1/embeddings`.
    pub url: String,
    /// Model name sent to the endpoint (`http`).
    pub model: String,
    /// Environment variable holding the API key (`http`; empty: none).
    pub api_key_env: String,
    /// Request timeout (`http`).
    pub timeout_ms: u64,
    /// Texts per request at most (`http`).
    pub batch_max: usize,
    /// Attempts per request (`http`; retried on transport errors, 429 and 5xx).
    pub attempts_max: u32,
}

impl Default for EmbedderConfig {
    fn default() -> Self {
        Self {
            kind: "hash".into(),
            dim: kledger_processors::embed::HASH_DIM_DEFAULT,
            url: String::new(),
            model: String::new(),
            api_key_env: String::new(),
            timeout_ms: 10_000,
            batch_max: 64,
            attempts_max: 4,
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
    /// Outbox records per sink batch at most.
    pub batch_records_max: usize,
    /// How long a batch waits for more records after its first.
    pub batch_wait_ms: u64,
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
            batch_records_max: 2_000,
            batch_wait_ms: 50,
            account_rows_max: 100_000,
        }
    }
}

/// The read API.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ApiConfig {
    /// Principals by name; each has a bearer token. No principals: every `/v1` call is 401.
    pub principals: BTreeMap<String, PrincipalConfig>,
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
    /// Consumer group of the apply processor.
    pub group_id: String,
    /// Delivery mode.
    pub delivery_mode: DeliveryMode,
    /// Transactional id (transactional mode); defaults to `<group_id>-tx`. Give every
    /// instance its own id.
    pub transactional_id: Option<String>,
    /// Create missing topics at start (off when an operator manages topics).
    pub create_topics: bool,
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
            delivery_mode: DeliveryMode::Idempotent,
            transactional_id: None,
            create_topics: true,
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
    /// directory) or `memory://tansu/`.
    pub storage: String,
}

impl Default for EmbeddedConfig {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:9092".into(),
            storage: "sqlite://data/broker/tansu.db".into(),
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
    /// Records per batch at most.
    pub batch_records_max: usize,
    /// How long a batch waits to fill.
    pub batch_wait_ms: u64,
    /// Attempts of a failing batch before the processor stops.
    pub batch_attempts_max: u32,
    /// First retry backoff.
    pub backoff_ms_initial: u64,
    /// Largest retry backoff.
    pub backoff_ms_max: u64,
    /// How long to wait for the delivery of a batch's records.
    pub delivery_timeout_ms: u64,
    /// Outbox records folded per state write during restore.
    pub restore_batch_records: usize,
}

impl Default for ProcessorConfig {
    fn default() -> Self {
        Self {
            batch_records_max: 2_000,
            batch_wait_ms: 20,
            batch_attempts_max: 8,
            backoff_ms_initial: 100,
            backoff_ms_max: 5_000,
            delivery_timeout_ms: 60_000,
            restore_batch_records: 5_000,
        }
    }
}

/// HTTP.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HttpConfig {
    /// Listen address of `/metrics`, `/healthz`, `/readyz`.
    pub listen: String,
}

impl Default for HttpConfig {
    fn default() -> Self {
        Self {
            listen: "127.0.0.1:9464".into(),
        }
    }
}

/// Logging.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LogConfig {
    /// `json` or `text`.
    pub format: String,
    /// An `EnvFilter` directive.
    pub filter: String,
}

impl Default for LogConfig {
    fn default() -> Self {
        Self {
            format: "text".into(),
            filter: "info".into(),
        }
    }
}

fn set_path(root: &mut toml::Table, path: &[String], value: toml::Value) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut table = root;
    for p in parents {
        let entry = table
            .entry(p.clone())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        if !entry.is_table() {
            *entry = toml::Value::Table(toml::Table::new());
        }
        let toml::Value::Table(t) = entry else { return };
        table = t;
    }
    table.insert(last.clone(), value);
}

/// Parses an environment value as TOML when it is a number or boolean, else as a string.
fn env_value(raw: &str) -> toml::Value {
    if let Ok(i) = raw.parse::<i64>() {
        return toml::Value::Integer(i);
    }
    match raw {
        "true" => toml::Value::Boolean(true),
        "false" => toml::Value::Boolean(false),
        _ => toml::Value::String(raw.to_owned()),
    }
}

impl Config {
    /// Loads `path` (if any), then applies `KLEDGER_*` overrides from `vars`.
    pub fn load(
        path: Option<&Path>,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> anyhow::Result<Self> {
        let mut root: toml::Table = match path {
            Some(p) => {
                let text =
                    std::fs::read_to_string(p).with_context(|| format!("read {}", p.display()))?;
                toml::from_str(&text).with_context(|| format!("parse {}", p.display()))?
            }
            None => toml::Table::new(),
        };
        for (k, v) in vars {
            let Some(rest) = k.strip_prefix(ENV_PREFIX) else {
                continue;
            };
            if rest.is_empty() || CLI_VARS.contains(&rest) {
                continue;
            }
            let mut path: Vec<String> = rest.split("__").map(str::to_ascii_lowercase).collect();
            let value = if path.len() == 3 && path[1].ends_with("_properties") {
                path[2] = path[2].replace('_', ".");
                toml::Value::String(v)
            } else {
                env_value(&v)
            };
            set_path(&mut root, &path, value);
        }
        let config: Config = toml::Value::Table(root)
            .try_into()
            .context("invalid configuration")?;
        config.check()?;
        Ok(config)
    }

    /// Checks bounds.
    pub fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.kafka.partitions > 0,
            "kafka.partitions must be positive"
        );
        anyhow::ensure!(
            !self.kafka.topic_prefix.is_empty(),
            "kafka.topic_prefix is empty"
        );
        anyhow::ensure!(
            (1..=100_000).contains(&self.processor.batch_records_max),
            "processor.batch_records_max must be in 1..=100000"
        );
        anyhow::ensure!(
            self.processor.batch_attempts_max >= 1,
            "processor.batch_attempts_max must be ≥ 1"
        );
        anyhow::ensure!(
            self.processor.restore_batch_records >= 1,
            "processor.restore_batch_records must be ≥ 1"
        );
        anyhow::ensure!(
            matches!(self.log.format.as_str(), "json" | "text"),
            "log.format is json or text"
        );
        anyhow::ensure!(
            (1..=100_000).contains(&self.views.batch_records_max),
            "views.batch_records_max must be in 1..=100000"
        );
        anyhow::ensure!(
            matches!(self.vectors.backend.as_str(), "edge" | "server"),
            "vectors.backend is edge or server"
        );
        anyhow::ensure!(
            self.vectors.backend != "server" || !self.vectors.url.is_empty(),
            "vectors.url is required with backend server"
        );
        anyhow::ensure!(
            matches!(self.vectors.embedder.kind.as_str(), "hash" | "http"),
            "vectors.embedder.kind is hash or http"
        );
        anyhow::ensure!(
            (1..=4_096).contains(&self.vectors.embedder.dim),
            "vectors.embedder.dim must be in 1..=4096"
        );
        anyhow::ensure!(
            (1..=64).contains(&self.vectors.shards),
            "vectors.shards must be in 1..=64"
        );
        anyhow::ensure!(
            (1..=100_000).contains(&self.vectors.batch_records_max),
            "vectors.batch_records_max must be in 1..=100000"
        );
        for (name, p) in &self.api.principals {
            anyhow::ensure!(
                p.token.chars().count() >= 16,
                "api.principals.{name}.token must have at least 16 characters"
            );
        }
        Ok(())
    }

    /// Whether the embedded broker is used.
    pub fn embedded(&self) -> bool {
        self.kafka.bootstrap_servers.trim().is_empty()
    }

    /// Bootstrap servers (the embedded listener when none are set).
    pub fn bootstrap(&self) -> String {
        if self.embedded() {
            self.embedded.listen.clone()
        } else {
            self.kafka.bootstrap_servers.clone()
        }
    }

    /// Topic names.
    pub fn topics(&self) -> crate::topics::Topics {
        crate::topics::Topics::new(&self.kafka.topic_prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect()
    }

    #[test]
    fn defaults_are_the_embedded_setup() {
        let c = Config::load(None, vars(&[])).unwrap();
        assert!(c.embedded());
        assert_eq!(c.bootstrap(), "127.0.0.1:9092");
        assert_eq!(c.kafka.partitions, 12);
        assert_eq!(c.kafka.delivery_mode, DeliveryMode::Idempotent);
    }

    #[test]
    fn env_overrides_every_key_including_passthrough() {
        let c = Config::load(
            None,
            vars(&[
                ("KLEDGER_KAFKA__BOOTSTRAP_SERVERS", "kafka:9092"),
                ("KLEDGER_KAFKA__PARTITIONS", "6"),
                ("KLEDGER_KAFKA__DELIVERY_MODE", "transactional"),
                (
                    "KLEDGER_KAFKA__CONSUMER_PROPERTIES__FETCH_MAX_BYTES",
                    "1048576",
                ),
                ("KLEDGER_STATE__DROP_ON_REVOKE", "true"),
                ("KLEDGER_PROCESSOR__BATCH_RECORDS_MAX", "10"),
                ("OTHER", "ignored"),
            ]),
        )
        .unwrap();
        assert_eq!(c.bootstrap(), "kafka:9092");
        assert_eq!(c.kafka.partitions, 6);
        assert_eq!(c.kafka.delivery_mode, DeliveryMode::Transactional);
        assert_eq!(c.kafka.consumer_properties["fetch.max.bytes"], "1048576");
        assert!(c.state.drop_on_revoke);
        assert_eq!(c.processor.batch_records_max, 10);
    }

    #[test]
    fn principals_come_from_the_file_and_env() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k.toml");
        std::fs::write(
            &p,
            "[api.principals.alice]\ntoken = \"alice-token-0123456789\"\ntenant_id = \"t_acme\"\nowner_kind = \"user\"\nowner_id = \"u_1\"\nroles = [\"role_admin\"]\n",
        )
        .unwrap();
        let c = Config::load(
            Some(&p),
            vars(&[
                ("KLEDGER_API__PRINCIPALS__ALICE__TEAM_ID", "team_core"),
                (
                    "KLEDGER_API__PRINCIPALS__BOT__TOKEN",
                    "Bot-Token-0123456789",
                ),
                ("KLEDGER_API__PRINCIPALS__BOT__TENANT_ID", "t_acme"),
                ("KLEDGER_API__PRINCIPALS__BOT__OWNER_KIND", "agent"),
                ("KLEDGER_API__PRINCIPALS__BOT__OWNER_ID", "agt_bot"),
            ]),
        )
        .unwrap();
        let alice = &c.api.principals["alice"];
        assert_eq!(alice.principal.account_id(), "t_acme/user/u_1");
        assert_eq!(alice.principal.team_id.as_deref(), Some("team_core"));
        assert_eq!(alice.principal.roles, vec!["role_admin".to_owned()]);
        assert_eq!(c.api.principals["bot"].token, "Bot-Token-0123456789");
        let short = Config::load(
            None,
            vars(&[
                ("KLEDGER_API__PRINCIPALS__X__TOKEN", "short"),
                ("KLEDGER_API__PRINCIPALS__X__TENANT_ID", "t_a"),
                ("KLEDGER_API__PRINCIPALS__X__OWNER_KIND", "user"),
                ("KLEDGER_API__PRINCIPALS__X__OWNER_ID", "u"),
            ]),
        );
        assert!(short.is_err());
    }

    #[test]
    fn file_then_env() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("k.toml");
        std::fs::write(
            &p,
            "[kafka]\npartitions = 3\ntopic_prefix = \"acme\"\n[http]\nlisten = \"127.0.0.1:1\"\n",
        )
        .unwrap();
        let c = Config::load(Some(&p), vars(&[("KLEDGER_KAFKA__PARTITIONS", "4")])).unwrap();
        assert_eq!(
            (c.kafka.partitions, c.kafka.topic_prefix.as_str()),
            (4, "acme")
        );
        assert_eq!(c.http.listen, "127.0.0.1:1");
    }

    #[test]
    fn unknown_keys_and_bad_values_are_refused() {
        assert!(Config::load(None, vars(&[("KLEDGER_KAFKA__PARTITONS", "4")])).is_err());
        assert!(Config::load(None, vars(&[("KLEDGER_KAFKA__PARTITIONS", "0")])).is_err());
        assert!(Config::load(None, vars(&[("KLEDGER_LOG__FORMAT", "xml")])).is_err());
    }
}

#[cfg(test)]
mod reference {
    use super::*;

    #[test]
    fn the_configuration_reference_matches_the_struct() {
        let doc = include_str!("../../docs/configuration.md");
        let defaults = toml::to_string(&Config::default()).unwrap();
        assert!(
            doc.contains(defaults.trim()),
            "docs/configuration.md defaults block is stale:\n{defaults}"
        );
        let table: toml::Table = toml::from_str(&defaults).unwrap();
        for (section, v) in &table {
            for key in v.as_table().into_iter().flat_map(|t| t.keys()) {
                let name = format!("| `{section}.{key}` |");
                assert!(
                    doc.contains(&name),
                    "{name} missing from docs/configuration.md"
                );
            }
        }
    }
}
