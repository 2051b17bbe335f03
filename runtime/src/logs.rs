//! Logging: the subscriber kledger's commands install, and the scrubbing of secrets from every
//! line it writes.
//!
//! kledger never logs a secret on purpose (`kledger config` prints [`Config::redacted`]), but
//! errors of the libraries it calls may quote one: a gRPC client's connection error quotes its
//! URL, credentials included. So the secret values themselves are registered once
//! ([`register`]: tokens, passwords, URL credentials, API keys) and every log line, and the
//! final error line of a command, is scrubbed of them ([`scrub`]) before it is written.
//!
//! May not touch: anything but stderr.

use std::borrow::Cow;
use std::io::Write;
use std::sync::OnceLock;

use crate::config::Config;

/// What replaces a secret in output.
pub const REDACTED: &str = "<redacted>";

/// Secrets shorter than this are not scrubbed (they would blank ordinary words); a
/// configuration cannot hold one: tokens are at least 16 chars.
pub const SECRET_CHARS_MIN: usize = 6;

static SECRETS: OnceLock<Vec<String>> = OnceLock::new();

/// Registers the secret values to scrub: those of `config` and of every variable in `vars`
/// whose name says it holds a secret (also read before the configuration parses, so an error
/// about a malformed configuration cannot quote one). The first call wins.
pub fn register(config: Option<&Config>, vars: impl IntoIterator<Item = (String, String)>) {
    let mut raw: Vec<String> = config.map(Config::secret_values).unwrap_or_default();
    for (name, value) in vars {
        let n = name.to_ascii_uppercase();
        let secret_name = [
            "TOKEN",
            "PASSWORD",
            "SECRET",
            "API_KEY",
            "_PEM",
            "SASL_JAAS",
        ]
        .iter()
        .any(|s| n.contains(s));
        if secret_name || config.is_some_and(|c| c.names_secret_variable(&name)) {
            raw.push(value);
        }
    }
    let _ = SECRETS.set(forms(raw));
}

/// Each secret as it may appear in output: as is, escaped inside a JSON string, and
/// percent-encoded (as in a URL), longest first so a longer secret is replaced whole.
fn forms(raw: Vec<String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for s in raw
        .into_iter()
        .filter(|s| s.chars().count() >= SECRET_CHARS_MIN)
    {
        let json = serde_json::to_string(&s).unwrap_or_default();
        let json = json.trim_matches('"').to_owned();
        let encoded: String = url::form_urlencoded::byte_serialize(s.as_bytes()).collect();
        out.extend([s, json, encoded]);
    }
    out.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
    out.dedup();
    out
}

/// `text` with every registered secret replaced by [`REDACTED`].
pub fn scrub(text: &str) -> Cow<'_, str> {
    let secrets = SECRETS.get().map(Vec::as_slice).unwrap_or_default();
    if !secrets.iter().any(|s| text.contains(s.as_str())) {
        return Cow::Borrowed(text);
    }
    let mut out = text.to_owned();
    for s in secrets {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), REDACTED);
        }
    }
    Cow::Owned(out)
}

/// A log line on its way to stderr: buffered, scrubbed and written whole when dropped (the
/// formatter makes one per event).
#[derive(Debug, Default)]
pub struct ScrubbedLine(Vec<u8>);

impl Write for ScrubbedLine {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Warnings of kledger's libraries that ask nothing of an operator, kept off stderr (the
/// rest of those libraries' logs pass):
/// - librdkafka's `CONFWARN` that `enable.gapless.guarantee` is experimental, once per producer
///   (kledger sets it on purpose: a refused record fails the producer rather than leave a gap,
///   `docs/operations.md`);
/// - the embedded vector engine's notes that the server's start-up set neither its feature
///   flags nor its multi-mmap check (kledger embeds the engine without Qdrant's server, and
///   uses the defaults those notes fall back to), once per shard.
///
/// (A to-the-end reader's coordinator connection, cut by its close mid-login, is quieted where
/// it is reported: `kledger_kafka::clients::coordinator_report`.)
pub const NOISE: [&str; 3] = [
    "Configuration property enable.gapless.guarantee is experimental",
    "Feature flags not initialized!",
    "MULTI_MMAP_SUPPORT_CHECK_RESULT should be initialized before accessing",
];

/// Whether a formatted log line is one of the [`NOISE`] warnings.
pub fn is_noise(line: &str) -> bool {
    NOISE.iter().any(|n| line.contains(n))
}

impl Drop for ScrubbedLine {
    fn drop(&mut self) {
        let text = String::from_utf8_lossy(&self.0);
        if is_noise(&text) {
            return;
        }
        let _ = std::io::stderr().write_all(scrub(&text).as_bytes());
    }
}

/// Installs the subscriber: `config.log.filter` (tansu's own ERROR-level chatter off unless the
/// filter turns it on; rmcp's session logs always off: they carry session ids), JSON or text
/// (`text` forces text), every line scrubbed, the [`NOISE`] warnings dropped.
pub fn init(config: &Config, text: bool) {
    // tansu logs ordinary events (e.g. TopicAlreadyExists) at ERROR: keep it quiet.
    let quiet = "tansu_broker=off,tansu_storage=off,tansu_sans_io=off,tansu_schema=off,tansu_service=off,tansu_auth=off,libsql=off";
    // The configured filter comes next, so it can turn tansu's logs back on when needed.
    // rmcp's Streamable HTTP server logs each MCP session's id (a bearer of the session), at
    // INFO and in its spans: never written, whatever the filter says.
    let never = "rmcp::transport::streamable_http_server=off,rmcp::transport::worker=off";
    let directive = format!("{quiet},{},{never}", config.log.filter);
    let filter = tracing_subscriber::EnvFilter::try_new(&directive)
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi)
        .with_writer(ScrubbedLine::default);
    if config.log.format == crate::config::LogFormat::Json && !text {
        builder.json().init();
    } else {
        builder.init();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_noise_is_dropped() {
        assert!(is_noise(
            "2026-12-06T15:40:08Z  WARN librdkafka: librdkafka: CONFWARN [thrd:app]: Configuration property enable.gapless.guarantee is experimental: When set"
        ));
        assert!(is_noise(
            r#"{"level":"WARN","fields":{"message":"Feature flags not initialized!"},"target":"qdrant_edge::common::flags"}"#
        ));
        assert!(is_noise(
            "WARN qdrant_edge::common::mmap::ops: MULTI_MMAP_SUPPORT_CHECK_RESULT should be initialized before accessing MULTI_MMAP_IS_SUPPORTED"
        ));
        assert!(!is_noise(
            "ERROR librdkafka: librdkafka: FAIL [thrd:GroupCoordinator]: GroupCoordinator: SASL authentication error: Authentication failed during authentication due to invalid credentials (after 3ms in state AUTH_REQ)"
        ));
        assert!(!is_noise(
            "WARN librdkafka: librdkafka: CONFWARN [thrd:app]: Configuration property foo.bar is deprecated"
        ));
        assert!(!is_noise(
            "WARN qdrant_edge::common::mmap::ops: Not using multi-mmap due to limited support"
        ));
    }

    #[test]
    fn every_form_of_a_secret_is_replaced_and_short_values_are_not_secrets() {
        let f = forms(vec![
            "p@ss word\"x".into(),
            "abc".into(),
            "tok-0123456789abcdef".into(),
        ]);
        assert!(f.contains(&"p@ss word\"x".to_owned()));
        assert!(f.contains(&"p@ss word\\\"x".to_owned()), "{f:?}");
        assert!(f.contains(&"p%40ss+word%22x".to_owned()), "{f:?}");
        assert!(!f.iter().any(|s| s == "abc"));
        assert!(f.windows(2).all(|w| w[0].len() >= w[1].len()));
    }
}
