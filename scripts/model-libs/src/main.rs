//! kledger's BERT forward pass (`retrieval/src/model`) against candle's on the same token ids,
//! one thread each (`RAYON_NUM_THREADS=1` for candle; kledger's runner splits batches over its
//! own threads): load time, the lowest cosine between the two vectors of a text, and the time
//! to embed 512 rows of the retrieval set in batches of 32 texts grouped by length; medians.
#[path = "../../../retrieval/src/model/mod.rs"]
#[allow(dead_code)]
mod model;

use std::time::Instant;

use candle_core::{DType, Device, Tensor};
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config};

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

fn main() {
    let dir = std::env::var("KLEDGER_VECTORS__EMBEDDER__MODEL_DIR").unwrap_or_else(|_| {
        format!(
            "{}/.cache/kledger/models/all-minilm-l6-v2",
            std::env::var("HOME").unwrap()
        )
    });
    let read = |n: &str| std::fs::read(format!("{dir}/{n}")).unwrap();
    let weights = read("model.safetensors");
    let vocab = String::from_utf8(read("vocab.txt")).unwrap();
    let config = String::from_utf8(read("config.json")).unwrap();
    let texts: Vec<String> = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../testkit/data/retrieval/rows.jsonl"
    ))
    .unwrap()
    .lines()
    .map(|l| {
        serde_json::from_str::<serde_json::Value>(l).unwrap()["content"]
            .as_str()
            .unwrap()
            .to_owned()
    })
    .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();

    // --- load
    let mut hand_load = Vec::new();
    let mut hand = None;
    for _ in 0..5 {
        let t = Instant::now();
        hand = Some(model::SentenceModel::load(&weights, &vocab, &config).unwrap());
        hand_load.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let hand = hand.unwrap();
    let cfg: Config = serde_json::from_str(&config).unwrap();
    let mut candle_load = Vec::new();
    let mut bert = None;
    for _ in 0..5 {
        let t = Instant::now();
        let vb = VarBuilder::from_slice_safetensors(&weights, DType::F32, &Device::Cpu).unwrap();
        bert = Some(BertModel::load(vb, &cfg).unwrap());
        candle_load.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let bert = bert.unwrap();
    println!(
        "load ms (median of 5): hand {:.1}, candle {:.1}",
        median(hand_load),
        median(candle_load)
    );

    // --- forward pass: 512 texts, batches of 32 by length, one thread each
    let sample: Vec<&str> = refs
        .iter()
        .step_by(refs.len() / 512)
        .take(512)
        .copied()
        .collect();
    let embed_candle = |texts: &[&str]| -> Vec<Vec<f32>> {
        let mut seqs: Vec<(usize, Vec<u32>)> =
            texts.iter().map(|t| hand.tokens(t)).enumerate().collect();
        seqs.sort_by_key(|(_, s)| s.len());
        let mut out = vec![Vec::new(); texts.len()];
        for chunk in seqs.chunks(32) {
            let len = chunk.iter().map(|(_, s)| s.len()).max().unwrap();
            let mut ids = Vec::new();
            let mut mask = Vec::new();
            for (_, s) in chunk {
                for i in 0..len {
                    ids.push(*s.get(i).unwrap_or(&0));
                    mask.push(u32::from(i < s.len()));
                }
            }
            let ids = Tensor::from_vec(ids, (chunk.len(), len), &Device::Cpu).unwrap();
            let mask = Tensor::from_vec(mask, (chunk.len(), len), &Device::Cpu).unwrap();
            let types = ids.zeros_like().unwrap();
            let h = bert.forward(&ids, &types, Some(&mask)).unwrap();
            let m = mask.to_dtype(DType::F32).unwrap().unsqueeze(2).unwrap();
            let sum = h.broadcast_mul(&m).unwrap().sum(1).unwrap();
            let n = m.sum(1).unwrap();
            let mean = sum.broadcast_div(&n).unwrap();
            let norm = mean.sqr().unwrap().sum_keepdim(1).unwrap().sqrt().unwrap();
            let v = mean.broadcast_div(&norm).unwrap().to_vec2::<f32>().unwrap();
            for ((i, _), v) in chunk.iter().zip(v) {
                out[*i] = v;
            }
        }
        out
    };
    let a = hand.embed(&sample);
    let b = embed_candle(&sample);
    let worst = a
        .iter()
        .zip(&b)
        .map(|(x, y)| x.iter().zip(y).map(|(p, q)| p * q).sum::<f32>())
        .fold(1f32, f32::min);
    println!(
        "forward: lowest cosine between the two over {} texts: {worst:.6}",
        sample.len()
    );
    let (mut fh, mut fc) = (Vec::new(), Vec::new());
    for _ in 0..5 {
        let t = Instant::now();
        std::hint::black_box(hand.embed(&sample));
        fh.push(t.elapsed().as_secs_f64());
        let t = Instant::now();
        std::hint::black_box(embed_candle(&sample));
        fc.push(t.elapsed().as_secs_f64());
    }
    let (fh, fc) = (median(fh), median(fc));
    println!(
        "embed {} texts: hand {:.0} ms ({:.0} texts/s), candle {:.0} ms ({:.0} texts/s), candle/hand time {:.2}",
        sample.len(),
        fh * 1e3,
        sample.len() as f64 / fh,
        fc * 1e3,
        sample.len() as f64 / fc,
        fc / fh
    );
}
