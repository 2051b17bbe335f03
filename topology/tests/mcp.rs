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
        "read_playbook",
        "foreign_playbook",
        "other_principal",
        "remember",
        "search_after_remember",
    ] {
        assert!(
            text.contains(&format!("\"step\": \"{step}\"")),
            "no step {step}:\n{text}"
        );
    }
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
