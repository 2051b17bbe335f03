//! Before a command or `kledger run` works with the cluster: can a client log in? A client
//! whose security settings do not match the broker's (SASL against a plaintext listener, a
//! wrong password, TLS against plaintext) is retried by librdkafka forever; here the first
//! authentication or TLS failure ends the command with one line naming the broker and the
//! protocol (never a secret: the line is librdkafka's reason, and every line kledger writes is
//! scrubbed of the configured secrets).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rdkafka::ClientContext;
use rdkafka::consumer::{BaseConsumer, Consumer, ConsumerContext};
use rdkafka::error::KafkaError;
use rdkafka::types::RDKafkaErrorCode;

use kledger_runtime::config::Config;

/// How long the check waits for the cluster's metadata at most.
pub const PREFLIGHT_WAIT: Duration = Duration::from_secs(15);

/// A client context that keeps the first authentication or TLS failure librdkafka reports.
#[derive(Debug, Default, Clone)]
struct LoginWatch {
    failure: Arc<Mutex<Option<String>>>,
}

impl ClientContext for LoginWatch {
    fn error(&self, error: KafkaError, reason: &str) {
        let login = matches!(
            error.rdkafka_error_code(),
            Some(
                RDKafkaErrorCode::Authentication
                    | RDKafkaErrorCode::SaslAuthenticationFailed
                    | RDKafkaErrorCode::SSL
                    | RDKafkaErrorCode::UnsupportedSASLMechanism
                    | RDKafkaErrorCode::IllegalSASLState
            )
        ) || reason.contains("SASL")
            || reason.contains("SSL");
        if login && let Ok(mut f) = self.failure.lock() {
            f.get_or_insert_with(|| reason.to_owned());
        }
    }
}

impl ConsumerContext for LoginWatch {}

/// Why the cluster cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PreflightError {
    /// A client cannot log in: its security settings do not match the broker's.
    #[error(
        "cannot log in to the Kafka cluster at {bootstrap} with security.protocol {protocol}: {reason} (kafka.common_properties sets security.protocol, sasl.* and ssl.*)"
    )]
    Login {
        /// The bootstrap servers.
        bootstrap: String,
        /// The configured protocol.
        protocol: String,
        /// librdkafka's reason.
        reason: String,
    },
    /// No broker answered within the wait.
    #[error("no broker of {bootstrap} answered within {} s: {reason}", PREFLIGHT_WAIT.as_secs())]
    Unreachable {
        /// The bootstrap servers.
        bootstrap: String,
        /// librdkafka's error.
        reason: String,
    },
}

/// Checks that a client of `config`'s cluster logs in and reads the cluster's metadata, within
/// [`PREFLIGHT_WAIT`]. Blocking.
pub fn preflight(config: &Config) -> Result<(), PreflightError> {
    let bootstrap = config.bootstrap();
    let protocol = client_protocol(config);
    let watch = LoginWatch::default();
    let consumer: BaseConsumer<LoginWatch> = match crate::clients::client_config(config)
        .set("log_level", "0")
        .create_with_context(watch.clone())
    {
        Ok(c) => c,
        // A configuration librdkafka refuses (a protocol it was built without, a missing
        // property): the same one line.
        Err(e) => {
            return Err(PreflightError::Login {
                bootstrap,
                protocol,
                reason: e.to_string(),
            });
        }
    };
    let deadline = Instant::now() + PREFLIGHT_WAIT;
    loop {
        let outcome = consumer.fetch_metadata(None, Duration::from_millis(500));
        // Errors reach the context only through the consumer's queue: serve it.
        let _ = consumer.poll(Duration::from_millis(100));
        if let Some(reason) = watch.failure.lock().ok().and_then(|f| f.clone()) {
            return Err(PreflightError::Login {
                bootstrap,
                protocol,
                reason,
            });
        }
        match outcome {
            Ok(_) => return Ok(()),
            Err(e) if Instant::now() >= deadline => {
                return Err(PreflightError::Unreachable {
                    bootstrap,
                    reason: e.to_string(),
                });
            }
            Err(_) => {}
        }
    }
}

/// The `security.protocol` clients of `config` use.
fn client_protocol(config: &Config) -> String {
    if config.embedded_auth() && config.embedded_login.is_some() {
        return "SASL_PLAINTEXT".into();
    }
    config
        .kafka
        .common_properties
        .get("security.protocol")
        .cloned()
        .unwrap_or_else(|| "PLAINTEXT".into())
}
