//! The HTTP embedder against a stand-in OpenAI-compatible `/v1/embeddings` endpoint served in
//! this test (a fake: no embedding service can run here). Batching, order, retries on 5xx,
//! the bearer key, dimension checks and timeouts.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use kledger_topology::config::EmbedderConfig;
use kledger_topology::vector::embedder::{Embedder, HttpEmbedder};
use serde_json::{Value, json};

/// Batch size and authorization header of each call.
type Calls = Arc<Mutex<Vec<(usize, Option<String>)>>>;

#[derive(Clone, Default)]
struct Fake {
    /// Batch sizes seen, and authorization headers.
    calls: Calls,
    /// Answer 503 to this many calls first.
    fail_first: Arc<Mutex<u32>>,
    /// Vector dimension answered.
    dim: usize,
    /// Delay per call.
    delay_ms: u64,
}

async fn embeddings(
    State(f): State<Fake>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> (StatusCode, Json<Value>) {
    tokio::time::sleep(Duration::from_millis(f.delay_ms)).await;
    let input: Vec<String> = body["input"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect();
    let auth = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    f.calls.lock().unwrap().push((input.len(), auth));
    {
        let mut left = f.fail_first.lock().unwrap();
        if *left > 0 {
            *left -= 1;
            return (StatusCode::SERVICE_UNAVAILABLE, Json(json!({})));
        }
    }
    // Reverse order on the wire: the client must sort by index.
    let data: Vec<Value> = input
        .iter()
        .enumerate()
        .rev()
        .map(|(i, t)| {
            let mut v = vec![0.0f32; f.dim];
            v[0] = t.len() as f32;
            json!({"object": "embedding", "index": i, "embedding": v})
        })
        .collect();
    (
        StatusCode::OK,
        Json(json!({"object": "list", "data": data, "model": body["model"]})),
    )
}

fn serve(rt: &tokio::runtime::Runtime, fake: Fake) -> String {
    let listener = rt
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new()
        .route("/v1/embeddings", post(embeddings))
        .with_state(fake);
    rt.spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

fn config(url: &str, dim: usize) -> EmbedderConfig {
    EmbedderConfig {
        kind: kledger_topology::config::EmbedderKind::Http,
        dim,
        url: url.into(),
        model: "text-embedding-test".into(),
        // A variable cargo always sets for tests stands in for the key's variable (setting one
        // here would need `unsafe`).
        api_key_env: "CARGO_PKG_NAME".into(),
        timeout_ms: 2_000,
        batch_max: 3,
        attempts_max: 3,
        ..EmbedderConfig::default()
    }
}

#[test]
fn batches_keep_order_retry_and_send_the_key() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fake = Fake {
        dim: 4,
        fail_first: Arc::new(Mutex::new(1)),
        ..Fake::default()
    };
    let url = serve(&rt, fake.clone());
    let e = HttpEmbedder::new(&config(&url, 4)).unwrap();
    let texts = ["a", "bb", "ccc", "dddd", "eeeee", "ffffff", "g"];
    let v = e.embed(&texts).unwrap();
    assert_eq!(
        v.iter().map(|x| x[0] as usize).collect::<Vec<_>>(),
        vec![1, 2, 3, 4, 5, 6, 1]
    );
    let calls = fake.calls.lock().unwrap().clone();
    // One 503 (retried), then batches of at most 3.
    assert_eq!(
        calls.iter().map(|c| c.0).collect::<Vec<_>>(),
        vec![3, 3, 3, 1]
    );
    assert!(
        calls
            .iter()
            .all(|c| c.1.as_deref() == Some("Bearer kledger-topology"))
    );
    assert_eq!((e.model(), e.dim()), ("text-embedding-test", 4));
}

#[test]
fn a_wrong_dimension_and_a_slow_endpoint_are_errors() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let url = serve(
        &rt,
        Fake {
            dim: 5,
            ..Fake::default()
        },
    );
    let e = HttpEmbedder::new(&config(&url, 4)).unwrap();
    assert!(
        e.embed(&["x"]).is_err(),
        "dimension 5 for a 4-dimensional collection"
    );

    let url = serve(
        &rt,
        Fake {
            dim: 4,
            delay_ms: 1_500,
            ..Fake::default()
        },
    );
    let mut c = config(&url, 4);
    c.timeout_ms = 200;
    c.attempts_max = 2;
    let e = HttpEmbedder::new(&c).unwrap();
    let err = e.embed(&["x"]).unwrap_err().to_string();
    assert!(err.contains("failed 2 times"), "{err}");
}
