//! Read-your-writes on the embedded default: `kledger run` with its in-process broker and the
//! local model, driven over HTTP. Each round writes one fact through the ingress and waits for
//! its receipt (`POST /v1/intents?wait_ms=`), then reads with the receipt's consistency token:
//! the profile (`min_commit_seq`: the view store must have folded the commit) and
//! search_knowledge for the new fact's text (the view store and the vector index). Prints
//! p50/p99 of each, from the receipt to the answer holding the row, and of the same search
//! without a token once the row is there (what the wait adds is the difference).
//!
//! `cargo bench -p kledger-topology --bench ryw` (`-- N` for N rounds, default 200).

use std::path::Path;
use std::time::Instant;

use kledger_schemas::{Op, WriteReason};
use kledger_testkit::build::{fact, intent};
use kledger_testkit::kafka::{http_request, spawn_with_env, stop, wait_ready};
use kledger_topology::kafka::embedded::free_port;

const TOKEN: &str = "ryw-bench-token-0123456789";
const ACCOUNT: &str = "t_bench/user/u_ryw";

fn quantile(v: &mut [f64], q: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn main() {
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(200);
    let bin = Path::new(env!("CARGO_BIN_EXE_kledger"));
    let dir = tempfile::tempdir().expect("tempdir");
    let port = free_port().expect("port");
    let broker_port = free_port().expect("port");
    let env: Vec<(String, String)> = [
        ("KLEDGER_HTTP__LISTEN", format!("127.0.0.1:{port}")),
        (
            "KLEDGER_EMBEDDED__LISTEN",
            format!("127.0.0.1:{broker_port}"),
        ),
        ("KLEDGER_API__PRINCIPALS__BENCH__TOKEN", TOKEN.into()),
        (
            "KLEDGER_API__PRINCIPALS__BENCH__TENANT_ID",
            "t_bench".into(),
        ),
        ("KLEDGER_API__PRINCIPALS__BENCH__OWNER_KIND", "user".into()),
        ("KLEDGER_API__PRINCIPALS__BENCH__OWNER_ID", "u_ryw".into()),
        ("KLEDGER_LOG__FILTER", "warn".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    let mut k = spawn_with_env(bin, &env, &[], dir.path(), "kledger");
    wait_ready(&mut k, port, dir.path(), "kledger");
    let auth = format!("Bearer {TOKEN}");
    let headers = [("Authorization", auth.as_str())];
    let (mut profile_ms, mut search_ms, mut plain_ms) = (Vec::new(), Vec::new(), Vec::new());
    let mut head = 0i64;
    // Distinct facts: the retrieval set's, one per round.
    let mut texts: Vec<String> =
        kledger_testkit::retrieval::load(&kledger_testkit::retrieval::data_dir())
            .expect("retrieval set")
            .rows
            .into_iter()
            .filter(|r| r.kind == kledger_schemas::Kind::Fact)
            .map(|r| r.content)
            .collect();
    texts.sort();
    texts.dedup();
    for (n, text) in texts.iter().take(rounds).enumerate() {
        let i = intent(
            ACCOUNT,
            &format!("ryw-{n}"),
            WriteReason::ExplicitRemember,
            head,
            vec![Op::Assert(fact(text))],
        );
        let (status, body) = http_request(
            port,
            "POST",
            "/v1/intents?wait_ms=10000",
            &headers,
            &serde_json::to_string(&i).expect("intent"),
        );
        assert_eq!(status, 200, "{body}");
        let answer: serde_json::Value = serde_json::from_str(&body).expect("answer");
        let token = answer["consistency_token"].as_i64().expect("token");
        let id = answer["receipt"]["memory_ids"][0]
            .as_str()
            .expect("memory id")
            .to_owned();
        assert_eq!(answer["receipt"]["outcome"], "committed", "{answer}");
        head = token;
        let started = Instant::now();
        let (status, body) = http_request(
            port,
            "GET",
            &format!("/v1/profile?min_commit_seq={token}&wait_ms=10000"),
            &headers,
            "",
        );
        assert_eq!(status, 200, "{body}");
        profile_ms.push(started.elapsed().as_secs_f64() * 1e3);
        let search = |min: Option<i64>| {
            let mut q = serde_json::json!({"query": text, "limit": 5, "wait_ms": 10000});
            if let Some(m) = min {
                q["min_commit_seq"] = m.into();
            }
            let (status, body) = http_request(port, "POST", "/v1/search", &headers, &q.to_string());
            assert_eq!(status, 200, "{body}");
            assert!(
                body.contains(&id),
                "the new row on the first search: {body}"
            );
        };
        let started = Instant::now();
        search(Some(token));
        search_ms.push(started.elapsed().as_secs_f64() * 1e3);
        let started = Instant::now();
        search(None);
        plain_ms.push(started.elapsed().as_secs_f64() * 1e3);
    }
    stop(k);
    println!(
        "{rounds} writes, each read back with its receipt's consistency token (embedded default: in-process broker, local model)"
    );
    for (what, v) in [
        ("profile with the token (view store)", &mut profile_ms),
        (
            "search with the token (view store and vector index)",
            &mut search_ms,
        ),
        (
            "the same search once the row is there, no token",
            &mut plain_ms,
        ),
    ] {
        println!(
            "{what}: p50 {:.1} ms, p99 {:.1} ms",
            quantile(v, 0.5),
            quantile(v, 0.99)
        );
    }
}
