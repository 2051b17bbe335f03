//! The MCP server, end to end, driven by an independent client: the official Python SDK (`mcp`,
//! `examples/mcp/client.py`) against a running `kledger run` fed the demo stream.
//!
//! Over Streamable HTTP (`/mcp` on the API listener): a request without a token is `401`; the
//! owner's session initializes, lists the five tools (each with a description and a JSON
//! Schema) and calls each read tool; a second principal of the tenant gets the uniform
//! `unavailable` for the owner's playbook and sees over MCP exactly what HTTP shows it (profile,
//! timeline); `remember` commits a fact and the very next `search_knowledge` of the session
//! finds it (the session passes the write's consistency token on). Then over stdio: the client
//! starts `kledger mcp` itself (the same data directory, the principal from
//! `api.mcp_principal`) and does the same.
//!
//! The interpreter is `$EXAMPLES_PYTHON` (scripts/dev.sh points it at a virtualenv with
//! `examples/mcp/requirements.txt` installed, every file pinned by hash), else `python3`.

mod common;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use common::*;
use kledger_topology::kafka::embedded::free_port;

const ALICE: &str = "mcp-token-alice-0123456789";
const BOB: &str = "mcp-token-bob-0123456789";

fn client(args: &[&str], env: &[(String, String)]) -> (bool, String) {
    let python = std::env::var("EXAMPLES_PYTHON").unwrap_or_else(|_| "python3".into());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/mcp/client.py");
    let out = Command::new(&python)
        .arg(&script)
        .args(args)
        .envs(env.iter().cloned())
        .output()
        .unwrap_or_else(|e| panic!("run {python}: {e} (scripts/dev.sh test installs it)"));
    let text = format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

#[test]
fn an_mcp_client_calls_every_tool_over_http_and_stdio() {
    let broker = TestBroker::start();
    let dir = tempfile::tempdir().unwrap();
    let c = config(&broker.bootstrap, &dir.path().join("data"), 4, "g-mcp");
    create_topics(&broker, &c);
    let bin = Path::new(env!("CARGO_BIN_EXE_kledger"));
    let port = free_port().unwrap();
    let mut env = child_env(&c, &format!("127.0.0.1:{port}"));
    for (name, token, owner) in [("alice", ALICE, "u_alice"), ("bob", BOB, "u_bob")] {
        let p = format!("KLEDGER_API__PRINCIPALS__{}", name.to_uppercase());
        env.push((format!("{p}__TOKEN"), token.into()));
        env.push((format!("{p}__TENANT_ID"), "t_acme".into()));
        env.push((format!("{p}__TEAM_ID"), "team_core".into()));
        env.push((format!("{p}__OWNER_KIND"), "user".into()));
        env.push((format!("{p}__OWNER_ID"), owner.into()));
    }
    env.push(("KLEDGER_API__MCP_PRINCIPAL".into(), "alice".into()));
    // At most 3 sessions of one principal (the default is 16), and rmcp's own logs on: session
    // ids must stay out of them all the same.
    env.push((
        "KLEDGER_API__MCP_SESSIONS_PER_PRINCIPAL_MAX".into(),
        "3".into(),
    ));
    env.push(("KLEDGER_LOG__FILTER".into(), "info,rmcp=info".into()));
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/intents.jsonl");
    let mut k = spawn_with_env(bin, &env, &[], dir.path(), "kledger");
    wait_ready(&mut k, port, dir.path(), "kledger");
    let (ok, text) = {
        let out = Command::new(bin)
            .args(["publish", "--input"])
            .arg(&demo)
            .envs(env.iter().cloned())
            .current_dir(dir.path())
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert!(ok, "publish: {text}");
    // The demo's rows are searchable and its playbook is in the profile's index.
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let auth = format!("Bearer {ALICE}");
        let (_, profile) =
            http_request(port, "GET", "/v1/profile", &[("Authorization", &auth)], "");
        let (_, found) = http_request(
            port,
            "POST",
            "/v1/search",
            &[("Authorization", &auth)],
            r#"{"query": "where does she live", "limit": 3}"#,
        );
        if profile.contains("playbook_index\":\"mem_") && found.contains("memory_id") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "demo not projected: {profile} {found}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }

    let url = format!("http://127.0.0.1:{port}/mcp");
    let (ok, text) = client(&["http", &url, ALICE, BOB], &[]);
    assert!(ok, "MCP over HTTP:\n{text}");
    println!("MCP over HTTP:\n{text}");
    assert!(
        !text.contains("termination failed"),
        "a session's end is acknowledged:\n{text}"
    );
    for step in [
        "initialize",
        "tools",
        "get_profile",
        "search_knowledge",
        "get_entity_timeline",
        "search_conversations",
        "read_playbook",
        "foreign_playbook",
        "other_principal",
        "remember",
        "remember_provenance",
        "search_after_remember",
    ] {
        assert!(
            text.contains(&format!("\"step\": \"{step}\"")),
            "no step {step}:\n{text}"
        );
    }
    // Off by default, over MCP too.
    assert!(
        text.contains("\"step\": \"search_conversations\", \"session\": \"owner\", \"off\": true"),
        "conversation retrieval is not off by default:\n{text}"
    );
    sessions_are_their_openers(port, &dir.path().join("kledger.log"));
    stop(k);

    // stdio: the client starts `kledger mcp` over the same data directory.
    let mut stdio_env = env.clone();
    stdio_env.retain(|(k, _)| k != "KLEDGER_HTTP__LISTEN");
    stdio_env.push(("KLEDGER_HTTP__LISTEN".into(), String::new()));
    let (ok, text) = client(&["stdio", bin.to_str().unwrap()], &stdio_env);
    assert!(ok, "MCP over stdio:\n{text}");
    for step in [
        "initialize",
        "tools",
        "get_profile",
        "search_knowledge",
        "read_playbook",
        "remember",
        "search_after_remember",
    ] {
        assert!(
            text.contains(&format!("\"step\": \"{step}\"")),
            "no step {step} over stdio:\n{text}"
        );
    }
}

/// One HTTP/1.1 exchange (the connection closed after it): status, headers (lower-case names)
/// and body; an SSE answer is read until the server ends it or 5 s pass.
fn exchange(
    port: u16,
    method: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut req = format!(
        "{method} /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
    );
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    s.write_all(req.as_bytes()).unwrap();
    let mut raw = Vec::new();
    let _ = s.read_to_end(&mut raw);
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let headers = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    (status, headers, body.to_owned())
}

/// A session is its opener's alone (issue 44): another principal's request with its id —
/// `DELETE` included, which used to end the victim's session — is answered as for an id that
/// never was, and counted; one principal opens at most its share of sessions; no session id
/// reaches the log.
fn sessions_are_their_openers(port: u16, log: &Path) {
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"probe","version":"1"}}}"#;
    let list = r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}"#;
    let bearer = |t: &str| format!("Bearer {t}");
    let open = |token: &str| {
        let (status, headers, body) =
            exchange(port, "POST", &[("Authorization", &bearer(token))], init);
        let id = headers
            .iter()
            .find(|(k, _)| k == "mcp-session-id")
            .map(|(_, v)| v.clone());
        (status, id, body)
    };
    let (status, id, body) = open(ALICE);
    let id = id.unwrap_or_else(|| panic!("no session: {status} {body}"));
    let session = |token: &str, method: &str, body: &str| {
        exchange(
            port,
            method,
            &[("Authorization", &bearer(token)), ("Mcp-Session-Id", &id)],
            body,
        )
    };
    // Bob, with Alice's session id: neither a call nor its end.
    let (status, _, body) = session(BOB, "POST", list);
    assert_eq!(
        status, 404,
        "another principal called in the session: {body}"
    );
    assert!(body.contains("session_not_found"), "{body}");
    let (status, _, body) = session(BOB, "DELETE", "");
    assert_eq!(status, 404, "another principal ended the session: {body}");
    // Alice's session is still hers.
    let (status, _, body) = session(ALICE, "POST", list);
    assert!(
        status == 200 || status == 202,
        "the owner's session: {status} {body}"
    );
    // A made-up id answers the same as Bob's tries.
    let (status, _, body) = exchange(
        port,
        "DELETE",
        &[
            ("Authorization", &bearer(BOB)),
            ("Mcp-Session-Id", "00000000-0000-4000-8000-000000000000"),
        ],
        "",
    );
    assert_eq!(status, 404, "{body}");
    // At most 3 sessions of one principal: the fourth is refused until one ends.
    let more: Vec<String> = (0..2)
        .map(|_| open(ALICE).1.expect("a session within the share"))
        .collect();
    let (status, refused, body) = open(ALICE);
    assert_eq!((status, refused), (429, None), "{body}");
    assert!(body.contains("too_many_sessions"), "{body}");
    let (status, _, _) = open(BOB);
    assert_eq!(status, 200, "another principal's share is its own");
    let (status, _, _) = session(ALICE, "DELETE", "");
    assert_eq!(status, 204);
    let (status, _, _) = session(ALICE, "DELETE", "");
    assert_eq!(status, 404, "ended");
    assert!(
        open(ALICE).1.is_some(),
        "a share comes back when a session ends"
    );
    let (_, metrics) = http_request(port, "GET", "/metrics", &[], "");
    let refused = metrics
        .lines()
        .find(|l| l.starts_with("kledger_mcp_sessions_refused_total{reason=\"foreign_session\"}"))
        .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .unwrap_or(0.0);
    assert!(refused >= 2.0, "foreign tries counted: {refused}");
    let logged = std::fs::read_to_string(log).unwrap();
    for id in more.iter().chain([&id]) {
        assert!(!logged.contains(id.as_str()), "session id {id} in the log");
    }
}
