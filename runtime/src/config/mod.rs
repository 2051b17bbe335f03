//! Configuration: a TOML file, every key overridable by `KLEDGER_*` environment variables.
//!
//! Nesting in variable names uses a double underscore: `KLEDGER_KAFKA__BOOTSTRAP_SERVERS`
//! sets `kafka.bootstrap_servers`. In the librdkafka pass-through tables
//! (`kafka.consumer_properties`, `kafka.producer_properties`) single underscores become dots:
//! `KLEDGER_KAFKA__CONSUMER_PROPERTIES__FETCH_MAX_BYTES=1048576` sets `fetch.max.bytes`.
//! With no file and no variables, everything runs on the embedded defaults.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};

pub mod credentials;
mod sections;
pub mod topics;

pub use sections::*;

/// Prefix of environment overrides.
pub const ENV_PREFIX: &str = "KLEDGER_";
/// `KLEDGER_*` variables the command line reads (`--config`, `--role`): not configuration keys.
pub const CLI_VARS: [&str; 2] = ["CONFIG", "ROLE"];

/// The least a principal's token must carry, bits ([`token_bits`]).
pub const TOKEN_BITS_MIN: f64 = 48.0;

/// How hard `token` is to guess, estimated from its characters: its length times the Shannon
/// entropy of their distribution, bits. A token of one repeated letter has 0; 16 random hex
/// digits about 55; 32 about 120. An estimate that refuses the weak (one repeated letter, a
/// short pattern repeated), not a proof of strength.
pub fn token_bits(token: &str) -> f64 {
    let mut counts: BTreeMap<char, usize> = BTreeMap::new();
    let mut n = 0usize;
    for c in token.chars() {
        *counts.entry(c).or_default() += 1;
        n += 1;
    }
    if n == 0 {
        return 0.0;
    }
    let per_char: f64 = counts
        .values()
        .map(|&k| {
            let p = k as f64 / n as f64;
            -p * p.log2()
        })
        .sum();
    per_char * n as f64
}

/// How a command comes by the embedded broker's login ([`Config::with_embedded_login`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Login {
    /// It starts the broker: the login is read, or generated (and written when the broker
    /// starts: [`credentials::Credentials::save`]).
    Create,
    /// It connects to the broker: the login must exist (the broker has run here).
    Require,
    /// It may connect: the login is read if it exists.
    IfPresent,
}

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
    /// The sources store (a sink of the outbox): people, conversations, calendar, screen.
    pub sources: SourcesConfig,
    /// The read API.
    pub api: ApiConfig,
    /// The vector projection (a sink of the outbox) and search.
    pub vectors: VectorsConfig,
    /// Retrieval beyond search: bounded conversation retrieval (off by default).
    pub retrieval: RetrievalConfig,
    /// Read policies: who reads history ([`PolicyConfig`]).
    pub policy: PolicyConfig,
    /// A Confluent Schema Registry (none by default: single-object encoding).
    pub registry: RegistryConfig,
    /// Commands that read a topic to its end.
    pub bulk: BulkConfig,
    /// The record budget every size limit derives from.
    pub limits: LimitsConfig,
    /// The embedded broker's login, once known: never configured, read from
    /// `embedded.credentials` (or created there at the broker's first start) by
    /// [`Config::with_embedded_login`].
    #[serde(skip)]
    pub embedded_login: Option<credentials::Credentials>,
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

/// Keys whose values are lists: an environment value is split at commas
/// (`KLEDGER_API__PRINCIPALS__BOT__ROLES=role_a,role_b`).
const LIST_KEYS: [&str; 1] = ["roles"];

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

/// Merges `over` into `base`, table by table (a value in `over` replaces `base`'s).
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// `url` with any credentials in it (`https://user:secret@host`) replaced by `<redacted>`, for
/// logs and `kledger config`.
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if !u.username().is_empty() || u.password().is_some() => {
            let _ = u.set_username("<redacted>");
            let _ = u.set_password(None);
            u.to_string()
        }
        _ => url.to_owned(),
    }
}

/// Whether a librdkafka property holds a secret (`sasl.password`, `ssl.key.password`,
/// `sasl.oauthbearer.client.secret`, `ssl.key.pem`, …).
pub fn is_secret_property(key: &str) -> bool {
    ["password", "secret", ".pem", "sasl.jaas", "ssl.key"]
        .iter()
        .any(|s| key.contains(s))
}

impl Config {
    /// The sources store's directory: `sources.dir`, or `<views.dir>-sources` when it is
    /// empty (so every view store has its own beside it).
    pub fn sources_dir(&self) -> std::path::PathBuf {
        if !self.sources.dir.as_os_str().is_empty() {
            return self.sources.dir.clone();
        }
        let mut d = self.views.dir.clone().into_os_string();
        d.push("-sources");
        d.into()
    }

    /// Loads `path` (if any), then applies `KLEDGER_*` overrides from `vars`.
    pub fn load(
        path: Option<&Path>,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> anyhow::Result<Self> {
        let given: toml::Table = match path {
            Some(p) => {
                let text =
                    std::fs::read_to_string(p).with_context(|| format!("read {}", p.display()))?;
                toml::from_str(&text).with_context(|| format!("parse {}", p.display()))?
            }
            None => toml::Table::new(),
        };
        // The defaults first, then the file, then the variables, key by key: a variable that
        // sets one key of a nested section (`processor.batch.records_max`) keeps that
        // section's other defaults.
        let mut root = Self::defaults_table();
        merge(&mut root, given);
        let file = root.clone();
        let mut set = Vec::new();
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
            } else if path.last().is_some_and(|l| LIST_KEYS.contains(&l.as_str())) {
                toml::Value::Array(
                    v.split(',')
                        .map(str::trim)
                        .filter(|s| !s.is_empty())
                        .map(|s| toml::Value::String(s.to_owned()))
                        .collect(),
                )
            } else {
                env_value(&v)
            };
            set_path(&mut root, &path, value.clone());
            set.push((k, path, value));
        }
        let config: Config = match toml::Value::Table(root).try_into() {
            Ok(c) => c,
            Err(e) => return Err(Self::blame(file, &set, e)),
        };
        config.check()?;
        Ok(config)
    }

    /// The default configuration as a TOML table.
    fn defaults_table() -> toml::Table {
        toml::Table::try_from(Config::default()).unwrap_or_default()
    }

    /// The error of a configuration that does not parse, naming the first `KLEDGER_*`
    /// variable that breaks it (and the key it sets), or the file when the file alone does.
    fn blame(
        file: toml::Table,
        set: &[(String, Vec<String>, toml::Value)],
        e: toml::de::Error,
    ) -> anyhow::Error {
        let parses = |t: &toml::Table| toml::Value::Table(t.clone()).try_into::<Config>().is_ok();
        if !parses(&file) {
            return anyhow::anyhow!("invalid configuration file: {}", e.message());
        }
        let mut root = file;
        for (var, path, value) in set {
            set_path(&mut root, path, value.clone());
            if let Err(err) = toml::Value::Table(root.clone()).try_into::<Config>() {
                return anyhow::anyhow!(
                    "invalid configuration: variable {var} sets `{}`: {}",
                    path.join("."),
                    err.message()
                );
            }
        }
        anyhow::anyhow!("invalid configuration: {}", e.message())
    }

    /// The configuration with every secret replaced by `<redacted>`: principals' tokens and
    /// librdkafka properties that hold passwords or keys. What `kledger config` prints.
    pub fn redacted(&self) -> Self {
        const REDACTED: &str = "<redacted>";
        let mut c = self.clone();
        for p in c.api.principals.values_mut() {
            p.token = REDACTED.into();
        }
        for url in [
            &mut c.registry.url,
            &mut c.vectors.url,
            &mut c.vectors.embedder.url,
        ] {
            *url = redact_url(url);
        }
        c.embedded_login = None;
        for props in [
            &mut c.kafka.common_properties,
            &mut c.kafka.consumer_properties,
            &mut c.kafka.producer_properties,
        ] {
            for (k, v) in props.iter_mut() {
                if is_secret_property(k) {
                    *v = REDACTED.into();
                }
            }
        }
        c
    }

    /// Every secret value this configuration holds or names, for scrubbing output
    /// (`crate::logs`): principals' tokens, secret librdkafka properties, the credentials of
    /// every URL (as written, and decoded), and the API keys read from the variables
    /// `*.api_key_env` name.
    pub fn secret_values(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .api
            .principals
            .values()
            .map(|p| p.token.clone())
            .collect();
        out.extend(self.embedded_login.iter().map(|l| l.password.clone()));
        for props in [
            &self.kafka.common_properties,
            &self.kafka.consumer_properties,
            &self.kafka.producer_properties,
        ] {
            out.extend(
                props
                    .iter()
                    .filter(|(k, _)| is_secret_property(k))
                    .map(|(_, v)| v.clone()),
            );
        }
        for url in [
            &self.registry.url,
            &self.vectors.url,
            &self.vectors.embedder.url,
        ] {
            if let Ok(u) = url::Url::parse(url)
                && let Some(p) = u.password()
            {
                out.push(p.to_owned());
                let decoded: Vec<u8> = url::form_urlencoded::parse(format!("p={p}").as_bytes())
                    .next()
                    .map(|(_, v)| v.into_owned().into_bytes())
                    .unwrap_or_default();
                out.push(String::from_utf8_lossy(&decoded).into_owned());
            }
        }
        for var in [
            &self.vectors.api_key_env,
            &self.vectors.embedder.api_key_env,
        ] {
            if let Ok(v) = std::env::var(var.trim())
                && !var.trim().is_empty()
            {
                out.push(v);
            }
        }
        out
    }

    /// Whether the variable `name` holds a secret this configuration reads (an API key).
    pub fn names_secret_variable(&self, name: &str) -> bool {
        [
            &self.vectors.api_key_env,
            &self.vectors.embedder.api_key_env,
        ]
        .iter()
        .any(|v| !v.trim().is_empty() && v.trim() == name)
    }

    /// Checks bounds. Long on purpose: one flat list of every bound, in section order, so a
    /// reader finds any key's bound in one place.
    pub fn check(&self) -> anyhow::Result<()> {
        anyhow::ensure!(
            self.kafka.partitions > 0,
            "kafka.partitions must be positive"
        );
        {
            use kledger_schemas::limits::{RECORD_BYTES_CEILING, RECORD_BYTES_MIN};
            anyhow::ensure!(
                (RECORD_BYTES_MIN..=RECORD_BYTES_CEILING).contains(&self.limits.record_bytes_max),
                "limits.record_bytes_max must be in {RECORD_BYTES_MIN}..={RECORD_BYTES_CEILING}"
            );
        }
        anyhow::ensure!(
            !self.kafka.topic_prefix.is_empty(),
            "kafka.topic_prefix is empty"
        );
        anyhow::ensure!(
            self.kafka.intents_retention_ms == -1 || self.kafka.intents_retention_ms > 0,
            "kafka.intents_retention_ms must be positive, or -1 (forever)"
        );
        for (name, batch) in [
            ("processor.batch", &self.processor.batch),
            ("views.batch", &self.views.batch),
            ("vectors.batch", &self.vectors.batch),
            ("sources.batch", &self.sources.batch),
            ("sources.intake_batch", &self.sources.intake_batch),
        ] {
            anyhow::ensure!(
                (1..=100_000).contains(&batch.records_max),
                "{name}.records_max must be in 1..=100000"
            );
            anyhow::ensure!(batch.wait_ms <= 60_000, "{name}.wait_ms must be ≤ 60000");
        }
        anyhow::ensure!(
            (1..=100_000).contains(&self.bulk.records_max),
            "bulk.records_max must be in 1..=100000"
        );
        anyhow::ensure!(
            self.processor.degraded_after_attempts >= 1,
            "processor.degraded_after_attempts must be ≥ 1"
        );
        anyhow::ensure!(
            self.processor.restore_batch_records >= 1,
            "processor.restore_batch_records must be ≥ 1"
        );
        anyhow::ensure!(
            self.processor.apply_threads <= sections::APPLY_THREADS_MAX,
            "processor.apply_threads must be ≤ {} (0: the cores available)",
            sections::APPLY_THREADS_MAX
        );
        anyhow::ensure!(
            (100..=600_000).contains(&self.http.header_timeout_ms)
                && (100..=600_000).contains(&self.http.body_timeout_ms),
            "http.header_timeout_ms and http.body_timeout_ms must be in 100..=600000"
        );
        anyhow::ensure!(
            (1..=65_536).contains(&self.http.connections_max),
            "http.connections_max must be in 1..=65536"
        );
        anyhow::ensure!(
            (1..=64).contains(&self.api.exports_max),
            "api.exports_max must be in 1..=64"
        );
        anyhow::ensure!(
            (1..=65_536).contains(&self.api.waits_max),
            "api.waits_max must be in 1..=65536"
        );
        for (name, value) in [
            ("api.exports_max", self.api.exports_max),
            (
                "api.exports_per_principal_max",
                self.api.exports_per_principal_max,
            ),
            (
                "api.waits_per_principal_max",
                self.api.waits_per_principal_max,
            ),
            (
                "api.requests_per_principal_max",
                self.api.requests_per_principal_max,
            ),
            ("api.mcp_sessions_max", self.api.mcp_sessions_max),
            (
                "api.mcp_sessions_per_principal_max",
                self.api.mcp_sessions_per_principal_max,
            ),
        ] {
            anyhow::ensure!((1..=65_536).contains(&value), "{name} must be in 1..=65536");
        }
        anyhow::ensure!(
            self.http.write_timeout_ms >= 100,
            "http.write_timeout_ms must be at least 100"
        );
        anyhow::ensure!(
            self.vectors.backend != VectorBackend::Server || !self.vectors.url.is_empty(),
            "vectors.url is required with backend server"
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
            !self.embedded_auth() || self.embedded.storage.starts_with("sqlite:"),
            "embedded.authentication needs sqlite storage (memory storage cannot hold credentials): set embedded.storage = \"sqlite://...\" or embedded.authentication = false"
        );
        let mut tokens: BTreeMap<&str, &str> = BTreeMap::new();
        for (name, p) in &self.api.principals {
            anyhow::ensure!(
                p.token.chars().count() >= 16,
                "api.principals.{name}.token must have at least 16 characters"
            );
            anyhow::ensure!(
                token_bits(&p.token) >= TOKEN_BITS_MIN,
                "api.principals.{name}.token is too easy to guess (under {TOKEN_BITS_MIN} bits by its characters' spread): use a random token, e.g. 32 hex digits"
            );
            if let Some(other) = tokens.insert(p.token.as_str(), name) {
                anyhow::bail!(
                    "api.principals.{other} and api.principals.{name} have the same token: a token names one principal"
                );
            }
        }
        Ok(())
    }

    /// The static member id of this instance's group consumers (none: dynamic membership).
    pub fn group_instance_id(&self) -> Option<String> {
        match self.kafka.group_instance_id.as_deref().map(str::trim) {
            None | Some("") => None,
            Some("auto") => Some(default_instance_id(&self.state.dir)),
            Some(id) => Some(id.to_owned()),
        }
    }

    /// This instance's id: `kafka.group_instance_id` when set, else the host name and a digest
    /// of `state.dir` (stable across restarts, different for two instances on one host).
    pub fn instance_id(&self) -> String {
        self.group_instance_id()
            .unwrap_or_else(|| default_instance_id(&self.state.dir))
    }

    /// The consumer group of projection sink `sink` (`views`, `vectors`). Every host keeps a
    /// whole replica of the view store, and of the vector index on the embedded engine: its
    /// sink reads every outbox partition in a group of its own, `<group_id>-<sink>-<instance>`.
    /// A Qdrant server holds one index for all hosts: its sink's group is shared,
    /// `<group_id>-vectors`.
    pub fn sink_group(&self, sink: &str) -> String {
        let shared = format!("{}-{sink}", self.kafka.group_id);
        let replica = match sink {
            "vectors" => self.vectors.backend == VectorBackend::Edge,
            _ => true,
        };
        if replica {
            format!("{shared}-{}", self.instance_id())
        } else {
            shared
        }
    }

    /// Whether the embedded broker is used.
    pub fn embedded(&self) -> bool {
        self.kafka.bootstrap_servers.trim().is_empty()
    }

    /// Whether clients log in to the embedded broker (`embedded.authentication`).
    pub fn embedded_auth(&self) -> bool {
        self.embedded() && self.embedded.authentication
    }

    /// This configuration with the embedded broker's login read from `embedded.credentials`
    /// as `mode` says. Nothing to do unless clients log in to the embedded broker.
    pub fn with_embedded_login(mut self, mode: Login) -> anyhow::Result<Self> {
        if !self.embedded_auth() {
            return Ok(self);
        }
        let path = &self.embedded.credentials;
        self.embedded_login = match mode {
            Login::Create => Some(credentials::Credentials::load_or_generate(path)?),
            Login::IfPresent => credentials::Credentials::load(path)?,
            Login::Require => Some(credentials::Credentials::load(path)?.ok_or_else(|| {
                anyhow::anyhow!(
                    "the embedded broker's credentials are not at {}: start `kledger run` in this directory first, or set kafka.bootstrap_servers",
                    path.display()
                )
            })?),
        };
        Ok(self)
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
    pub fn topics(&self) -> topics::Topics {
        topics::Topics::new(&self.kafka.topic_prefix)
    }
}

/// The default static member id of this instance (`group.instance.id`): the host name and a
/// digest of the state directory, the same across restarts of one instance (a crash-looping
/// container keeps its host name) and different for two instances on one host (each has its
/// own state directory).
fn default_instance_id(state_dir: &std::path::Path) -> String {
    use sha2::Digest;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())
        .map(|h| h.trim().to_owned())
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into());
    let dir = std::fs::canonicalize(state_dir).unwrap_or_else(|_| state_dir.to_owned());
    let digest = sha2::Sha256::digest(dir.to_string_lossy().as_bytes());
    format!("{host}-{}", kledger_processors::ids::to_hex(&digest[..4]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_instance_id_is_stable_per_state_directory() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        assert_eq!(default_instance_id(a.path()), default_instance_id(a.path()));
        assert_ne!(default_instance_id(a.path()), default_instance_id(b.path()));
    }

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
                ("KLEDGER_PROCESSOR__BATCH__RECORDS_MAX", "10"),
                ("OTHER", "ignored"),
            ]),
        )
        .unwrap();
        assert_eq!(c.bootstrap(), "kafka:9092");
        assert_eq!(c.kafka.partitions, 6);
        assert_eq!(c.kafka.delivery_mode, DeliveryMode::Transactional);
        assert_eq!(c.kafka.consumer_properties["fetch.max.bytes"], "1048576");
        assert!(c.state.drop_on_revoke);
        assert_eq!(c.processor.batch.records_max, 10);
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
    fn an_unknown_variable_is_named_with_the_key_it_would_set() {
        let e = Config::load(None, vars(&[("KLEDGER_BIN", "/usr/bin/kledger")]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("KLEDGER_BIN") && e.contains("`bin`"), "{e}");
        let e = Config::load(
            None,
            vars(&[
                ("KLEDGER_KAFKA__PARTITIONS", "6"),
                ("KLEDGER_VIEWS__CACHE_BYTE", "1"),
            ]),
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("KLEDGER_VIEWS__CACHE_BYTE") && e.contains("`views.cache_byte`"),
            "{e}"
        );
    }

    #[test]
    fn roles_come_from_a_comma_separated_variable() {
        let c = Config::load(
            None,
            vars(&[
                (
                    "KLEDGER_API__PRINCIPALS__BOT__TOKEN",
                    "bot-token-0123456789",
                ),
                ("KLEDGER_API__PRINCIPALS__BOT__TENANT_ID", "t_acme"),
                ("KLEDGER_API__PRINCIPALS__BOT__OWNER_KIND", "agent"),
                ("KLEDGER_API__PRINCIPALS__BOT__OWNER_ID", "agt_bot"),
                (
                    "KLEDGER_API__PRINCIPALS__BOT__ROLES",
                    "role_ingest, role_admin",
                ),
            ]),
        )
        .unwrap();
        assert_eq!(
            c.api.principals["bot"].principal.roles,
            vec!["role_ingest".to_owned(), "role_admin".to_owned()]
        );
    }

    #[test]
    fn tokens_easy_to_guess_are_refused() {
        let with = |token: &str| {
            Config::load(
                None,
                vars(&[
                    ("KLEDGER_API__PRINCIPALS__A__TOKEN", token),
                    ("KLEDGER_API__PRINCIPALS__A__TENANT_ID", "t_a"),
                    ("KLEDGER_API__PRINCIPALS__A__OWNER_KIND", "user"),
                    ("KLEDGER_API__PRINCIPALS__A__OWNER_ID", "u_a"),
                ]),
            )
        };
        for weak in ["aaaaaaaaaaaaaaaa", "abababababababab", "abcdabcdabcdabcd"] {
            let e = with(weak).unwrap_err().to_string();
            assert!(e.contains("too easy to guess"), "{weak}: {e}");
        }
        for strong in [
            "0123456789abcdef",
            "7f3a9c1e5b2d8046a1c3e5f7091b2d4f",
            "demo-token-u-alice-0001",
        ] {
            assert!(with(strong).is_ok(), "{strong}");
        }
        assert!(token_bits("aaaaaaaaaaaaaaaaaaaaaaaa") < 1.0);
    }

    #[test]
    fn two_principals_with_one_token_are_refused() {
        let p = |name: &str, token: &str| {
            vec![
                (
                    format!("KLEDGER_API__PRINCIPALS__{name}__TOKEN"),
                    token.to_owned(),
                ),
                (
                    format!("KLEDGER_API__PRINCIPALS__{name}__TENANT_ID"),
                    "t_a".to_owned(),
                ),
                (
                    format!("KLEDGER_API__PRINCIPALS__{name}__OWNER_KIND"),
                    "user".to_owned(),
                ),
                (
                    format!("KLEDGER_API__PRINCIPALS__{name}__OWNER_ID"),
                    name.to_lowercase(),
                ),
            ]
        };
        let mut v = p("A", "same-token-0123456789");
        v.extend(p("B", "same-token-0123456789"));
        let e = Config::load(None, v).unwrap_err().to_string();
        assert!(e.contains("same token"), "{e}");
        let mut v = p("A", "token-of-a-0123456789");
        v.extend(p("B", "token-of-b-0123456789"));
        assert!(Config::load(None, v).is_ok());
    }

    #[test]
    fn the_printed_configuration_holds_no_secret() {
        let c = Config::load(
            None,
            vars(&[
                (
                    "KLEDGER_API__PRINCIPALS__BOT__TOKEN",
                    "bot-secret-token-0123456789",
                ),
                ("KLEDGER_API__PRINCIPALS__BOT__TENANT_ID", "t_acme"),
                ("KLEDGER_API__PRINCIPALS__BOT__OWNER_KIND", "agent"),
                ("KLEDGER_API__PRINCIPALS__BOT__OWNER_ID", "agt_bot"),
                (
                    "KLEDGER_KAFKA__PRODUCER_PROPERTIES__SASL_PASSWORD",
                    "hunter2-kafka",
                ),
                (
                    "KLEDGER_KAFKA__CONSUMER_PROPERTIES__SSL_KEY_PASSWORD",
                    "hunter3-key",
                ),
                (
                    "KLEDGER_KAFKA__CONSUMER_PROPERTIES__FETCH_MAX_BYTES",
                    "1048576",
                ),
            ]),
        )
        .unwrap();
        let mut c = c;
        c.registry.url = "https://reg-user:hunter4@registry:8081".into();
        let printed = toml::to_string(&c.redacted()).unwrap();
        for secret in [
            "bot-secret-token",
            "hunter2",
            "hunter3",
            "hunter4",
            "reg-user",
        ] {
            assert!(!printed.contains(secret), "{secret} printed:\n{printed}");
        }
        assert!(
            printed.contains("\"fetch.max.bytes\" = \"1048576\""),
            "{printed}"
        );
        assert!(printed.contains("<redacted>"));
    }

    #[test]
    fn the_record_budget_is_bounded() {
        use kledger_schemas::limits::{RECORD_BYTES_CEILING, RECORD_BYTES_MIN};
        let with = |n: usize| {
            Config::load(
                None,
                vars(&[("KLEDGER_LIMITS__RECORD_BYTES_MAX", &n.to_string())]),
            )
        };
        assert!(with(RECORD_BYTES_MIN).is_ok());
        assert!(with(RECORD_BYTES_MIN - 1).is_err());
        assert!(with(RECORD_BYTES_CEILING).is_ok());
        assert!(with(RECORD_BYTES_CEILING + 1).is_err());
        let c = with(2 << 20).unwrap();
        assert_eq!(c.limits.kafka_message_bytes(), (2 << 20) + (64 << 10));
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
        let doc = include_str!("../../../docs/configuration.md");
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
