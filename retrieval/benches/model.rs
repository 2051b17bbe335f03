//! The local model alone, one thread: rows/s embedding the first 2,000 turns of the
//! conversation set (`testkit/data/conversations`, each with its session's date as the index
//! text has it) with the products in f32 and in int8, the median of five runs each, and how
//! close the int8 vectors are to the f32 ones (cosine).
//!
//! `cargo bench -p kledger-retrieval --bench model [-- f32|int8]` (reads the model the test command
//! installs: `KLEDGER_VECTORS__EMBEDDER__MODEL_DIR` or `~/.cache/kledger/models/...`).

use std::path::PathBuf;
use std::time::Instant;

use kledger_retrieval::model::{Precision, SentenceModel, int8_kernel};

const ROWS: usize = 2_000;
const RUNS: usize = 5;

fn main() {
    let dir = std::env::var_os("KLEDGER_VECTORS__EMBEDDER__MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME"))
                .join(".cache/kledger/models/all-minilm-l6-v2")
        });
    let read = |n: &str| {
        std::fs::read(dir.join(n)).unwrap_or_else(|e| panic!("{}: {e}", dir.join(n).display()))
    };
    let set =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testkit/data/conversations/turns.jsonl");
    let texts: Vec<String> = std::fs::read_to_string(&set)
        .unwrap_or_else(|e| panic!("{}: {e}", set.display()))
        .lines()
        .take(ROWS)
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("a JSON line");
            format!(
                "{} (Friday 6 January 2023)",
                v["content"].as_str().unwrap_or("")
            )
        })
        .collect();
    let texts: Vec<&str> = texts.iter().map(String::as_str).collect();
    let (weights, vocab, config) = (
        read("model.safetensors"),
        String::from_utf8(read("vocab.txt")).expect("UTF-8"),
        String::from_utf8(read("config.json")).expect("UTF-8"),
    );
    println!(
        "model alone, one thread, {} rows; AVX-512 VNNI kernel: {}",
        texts.len(),
        int8_kernel()
    );
    let mut vectors = Vec::new();
    let mut speeds = Vec::new();
    // `-- f32` or `-- int8` runs that precision alone.
    let only: Option<String> = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    for precision in [Precision::F32, Precision::Int8] {
        if only
            .as_deref()
            .is_some_and(|o| !format!("{precision:?}").eq_ignore_ascii_case(o))
        {
            continue;
        }
        let loading = Instant::now();
        let m = SentenceModel::load_with(&weights, &vocab, &config, precision).expect("model");
        let load_ms = loading.elapsed().as_secs_f64() * 1e3;
        let _ = m.embed(&texts[..100]);
        let mut runs: Vec<f64> = (0..RUNS)
            .map(|_| {
                let start = Instant::now();
                vectors.push(m.embed(&texts));
                texts.len() as f64 / start.elapsed().as_secs_f64()
            })
            .collect();
        runs.sort_by(f64::total_cmp);
        let median = runs[RUNS / 2];
        println!(
            "{precision:?}: {median:.0} rows/s (median of {RUNS}; {:.0}..{:.0}); loaded in {load_ms:.0} ms",
            runs[0],
            runs[RUNS - 1]
        );
        speeds.push(median);
    }
    if speeds.len() < 2 {
        return;
    }
    println!("int8 / f32: {:.2}x", speeds[1] / speeds[0]);
    let (f32s, int8s) = (&vectors[0], &vectors[RUNS]);
    let mut cos: Vec<f32> = f32s
        .iter()
        .zip(int8s)
        .map(|(a, b)| a.iter().zip(b).map(|(x, y)| x * y).sum())
        .collect();
    cos.sort_by(f32::total_cmp);
    println!(
        "cosine of int8 with f32 vectors: min {:.4}, 1st percentile {:.4}, median {:.4}",
        cos[0],
        cos[cos.len() / 100],
        cos[cos.len() / 2]
    );
}
