//! Secrets never leave kledger, tried from outside: a `kledger run` child is given a principal's
//! bearer token, a SASL password, an embedding endpoint whose URL carries credentials and whose
//! API key comes from a variable, all at debug log level; the embedding endpoint is down, so
//! its errors are logged again and again. Requests with right, wrong and near-miss tokens,
//! an ingress write, metrics and readiness are answered; `kledger config` prints the
//! configuration; a configuration with two principals sharing a token is refused; the Qdrant
//! server backend and the schema registry are pointed at closed ports with credentials in their
//! URLs and an API key. Every byte kledger wrote (logs, stdout, HTTP answers, every file under
//! its data directories) is then scanned for each secret: zero hits.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use kledger_schemas::{Op, WriteReason};
use kledger_testkit::build::{fact, intent};
use kledger_topology::kafka::embedded::free_port;

const TOKEN: &str = "tok-SECRET-principal-0001";
const OTHER_TOKEN: &str = "tok-SECRET-principal-0002";
const SASL: &str = "SECRET-sasl-password-0003";
const URL_PASSWORD: &str = "SECRET-url-password-0004";
const API_KEY: &str = "SECRET-api-key-0005";
const ALL: [&str; 5] = [TOKEN, OTHER_TOKEN, SASL, URL_PASSWORD, API_KEY];

fn bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_kledger"))
}

/// Every place a secret was seen: `(secret, where)`.
fn hits(text: &str, place: &str) -> Vec<(String, String)> {
    ALL.iter()
        .filter(|s| text.contains(*s))
        .map(|s| ((*s).to_owned(), place.to_owned()))
        .collect()
}

/// Every file under `dir`, byte-scanned (logs, RocksDB files, the vector engine's files).
fn scan_tree(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap_or_default();
                for s in ALL {
                    if bytes.windows(s.len()).any(|w| w == s.as_bytes()) {
                        out.push((s.to_owned(), path.display().to_string()));
                    }
                }
            }
        }
    }
    out
}

/// The secrets every child is given, as `KLEDGER_*` variables (and the API key's variable).
fn secret_env(closed_port: u16) -> Vec<(String, String)> {
    let principal = |name: &str, token: &str, owner: &str| {
        [
            (
                format!("KLEDGER_API__PRINCIPALS__{name}__TOKEN"),
                token.to_owned(),
            ),
            (
                format!("KLEDGER_API__PRINCIPALS__{name}__TENANT_ID"),
                "t_acme".to_owned(),
            ),
            (
                format!("KLEDGER_API__PRINCIPALS__{name}__OWNER_KIND"),
                "user".to_owned(),
            ),
            (
                format!("KLEDGER_API__PRINCIPALS__{name}__OWNER_ID"),
                owner.to_owned(),
            ),
        ]
    };
    let mut env: Vec<(String, String)> = principal("ALICE", TOKEN, "u_1").into();
    env.extend(principal("BOB", OTHER_TOKEN, "u_2"));
    env.extend([
        (
            "KLEDGER_KAFKA__PRODUCER_PROPERTIES__SASL_PASSWORD".to_owned(),
            SASL.to_owned(),
        ),
        (
            "KLEDGER_KAFKA__CONSUMER_PROPERTIES__SASL_PASSWORD".to_owned(),
            SASL.to_owned(),
        ),
        (
            "KLEDGER_VECTORS__EMBEDDER__KIND".to_owned(),
            "http".to_owned(),
        ),
        (
            "KLEDGER_VECTORS__EMBEDDER__URL".to_owned(),
            format!("http://embed-user:{URL_PASSWORD}@127.0.0.1:{closed_port}"),
        ),
        (
            "KLEDGER_VECTORS__EMBEDDER__MODEL".to_owned(),
            "m".to_owned(),
        ),
        (
            "KLEDGER_VECTORS__EMBEDDER__API_KEY_ENV".to_owned(),
            "SECRETS_TEST_EMBED_KEY".to_owned(),
        ),
        (
            "KLEDGER_VECTORS__EMBEDDER__TIMEOUT_MS".to_owned(),
            "300".to_owned(),
        ),
        ("SECRETS_TEST_EMBED_KEY".to_owned(), API_KEY.to_owned()),
        ("KLEDGER_LOG__FILTER".to_owned(), "debug".to_owned()),
    ]);
    env
}

/// Runs `kledger <args>` to its end (killed after `limit`) with `env`; its stdout and stderr.
fn run_to_end(args: &[&str], env: &[(String, String)], dir: &Path, limit: Duration) -> String {
    let mut child = Command::new(bin())
        .args(args)
        .envs(env.iter().cloned())
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + limit;
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn no_secret_reaches_any_output() {
    let b = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let closed = free_port().unwrap();
    let c = config(&b.bootstrap, &dir.path().join("state"), 2, "secrets");
    create_topics(&b, &c);
    let port = free_port().unwrap();
    let mut base = child_env(&c, &format!("127.0.0.1:{port}"));
    base.retain(|(k, _)| k != "KLEDGER_LOG__FILTER");
    base.extend(secret_env(closed));
    let env: Vec<(&str, &str)> = Vec::new();
    let mut child = spawn_with_env(bin(), &base, &env, dir.path(), "run");
    wait_ready(&mut child, port, dir.path(), "run");

    let mut answers = String::new();
    let mut ask = |method: &str, path: &str, auth: Option<String>, body: &str| {
        let headers: Vec<(&str, &str)> = auth
            .as_deref()
            .map(|a| vec![("Authorization", a), ("Content-Type", "application/json")])
            .unwrap_or_default();
        let (status, text) = http_request(port, method, path, &headers, body);
        // The answer only: the request is the caller's (one carries the token in its query).
        answers.push_str(&format!("{status}\n{text}\n"));
        status
    };
    let write = intent(
        "t_acme/user/u_1",
        "act-secrets-1",
        WriteReason::DirectUserStatement,
        0,
        vec![Op::Assert(fact("Likes tea"))],
    );
    let body = serde_json::to_string(&write).unwrap();
    let bearer = |t: &str| Some(format!("Bearer {t}"));
    assert_eq!(
        ask("POST", "/v1/intents?wait_ms=20000", bearer(TOKEN), &body),
        200
    );
    assert_eq!(ask("GET", "/v1/profile", bearer(TOKEN), ""), 200);
    // Wrong tokens: one a character off, one a prefix, the other principal's in the wrong
    // scheme, the token as a query parameter, and no header at all.
    let near_miss = format!("{}X", &TOKEN[..TOKEN.len() - 1]);
    assert_eq!(ask("GET", "/v1/profile", bearer(&near_miss), ""), 401);
    assert_eq!(ask("GET", "/v1/profile", bearer(&TOKEN[..10]), ""), 401);
    ask(
        "GET",
        "/v1/profile",
        Some(format!("Basic {OTHER_TOKEN}")),
        "",
    );
    ask("GET", &format!("/v1/profile?token={TOKEN}"), None, "");
    ask("GET", "/v1/profile", None, "");
    ask("POST", "/v1/search", bearer(TOKEN), r#"{"query":"tea"}"#);
    ask("GET", "/v1/nowhere", bearer(TOKEN), "");
    ask("DELETE", "/v1/profile", bearer(TOKEN), "");
    assert_eq!(ask("GET", "/metrics", None, ""), 200);
    ask("GET", "/readyz", None, "");
    // Let the vector sink fail on the embedding endpoint a few times.
    std::thread::sleep(Duration::from_secs(3));
    stop(child);

    let log = std::fs::read_to_string(dir.path().join("run.log")).unwrap();
    if std::env::var_os("SECRETS_TEST_PRINT").is_some() {
        eprintln!("{log}");
    }
    // The endpoint with credentials in its URL was called and failed (its error was logged).
    assert!(
        log.contains("embedder failed"),
        "the embedding endpoint was never tried"
    );
    let mut found = hits(&answers, "HTTP answers");
    // The request that carried the token in its query string is the caller's own leak; the
    // answer must still not echo it.
    found.extend(scan_tree(dir.path()));

    // `kledger config` with every secret set.
    let printed = run_to_end(&["config"], &base, dir.path(), Duration::from_secs(30));
    assert!(printed.contains("<redacted>"), "{printed}");
    found.extend(hits(&printed, "kledger config"));

    // Two principals with one token: refused at load, the token not named.
    let mut shared = base.clone();
    shared.retain(|(k, _)| k != "KLEDGER_API__PRINCIPALS__BOB__TOKEN");
    shared.push((
        "KLEDGER_API__PRINCIPALS__BOB__TOKEN".to_owned(),
        TOKEN.to_owned(),
    ));
    let refused = run_to_end(&["run"], &shared, dir.path(), Duration::from_secs(30));
    assert!(refused.to_lowercase().contains("token"), "{refused}");
    found.extend(hits(&refused, "shared-token refusal"));

    // The Qdrant server backend at a closed port, credentials in its URL and an API key.
    let mut qdrant = base.clone();
    qdrant.extend([
        ("KLEDGER_VECTORS__BACKEND".to_owned(), "server".to_owned()),
        (
            "KLEDGER_VECTORS__URL".to_owned(),
            format!("http://qdrant-user:{URL_PASSWORD}@127.0.0.1:{closed}"),
        ),
        (
            "KLEDGER_VECTORS__API_KEY_ENV".to_owned(),
            "SECRETS_TEST_EMBED_KEY".to_owned(),
        ),
        (
            "KLEDGER_HTTP__LISTEN".to_owned(),
            format!("127.0.0.1:{}", free_port().unwrap()),
        ),
    ]);
    let out = run_to_end(&["run"], &qdrant, dir.path(), Duration::from_secs(8));
    if std::env::var_os("SECRETS_TEST_PRINT").is_some() {
        eprintln!("{out}");
    }
    // The gRPC client's error quotes its URL: the credentials in it are scrubbed.
    assert!(out.contains("<redacted>"), "{out}");
    found.extend(hits(&out, "qdrant server backend"));

    // The schema registry at a closed port with credentials in its URL.
    let mut registry = base.clone();
    registry.push((
        "KLEDGER_REGISTRY__URL".to_owned(),
        format!("http://registry-user:{URL_PASSWORD}@127.0.0.1:{closed}"),
    ));
    registry.push((
        "KLEDGER_REGISTRY__OUTAGE_RETRY_MS".to_owned(),
        "500".to_owned(),
    ));
    let input = dir.path().join("one.jsonl");
    std::fs::write(&input, jsonl(&stream(5, 1, 1))).unwrap();
    let out = run_to_end(
        &["publish", "--input", input.to_str().unwrap()],
        &registry,
        dir.path(),
        Duration::from_secs(20),
    );
    found.extend(hits(&out, "publish with a registry"));

    found.sort();
    found.dedup();
    assert!(found.is_empty(), "secrets found: {found:#?}");
}
