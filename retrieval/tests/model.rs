//! The local sentence-embedding model against golden outputs of the reference stack
//! (Hugging Face `tokenizers` for the ids; a float64 NumPy forward pass of `BertModel` with
//! mean pooling and L2 normalisation, which reproduces sentence-transformers' published
//! similarities for all-MiniLM-L6-v2, for the vectors). The model is the one the test command
//! installs (`scripts/dev.sh`), read from `KLEDGER_VECTORS__EMBEDDER__MODEL_DIR` or the default
//! cache directory.

use std::path::PathBuf;

use kledger_retrieval::model::{Precision, SEQ_TOKENS_MAX, SentenceModel};
use serde::Deserialize;

fn model_dir() -> PathBuf {
    std::env::var_os("KLEDGER_VECTORS__EMBEDDER__MODEL_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").expect("HOME"))
                .join(".cache/kledger/models/all-minilm-l6-v2")
        })
}

fn read(name: &str) -> Vec<u8> {
    let p = model_dir().join(name);
    std::fs::read(&p).unwrap_or_else(|e| {
        panic!(
            "{}: {e} (scripts/dev.sh test installs the model)",
            p.display()
        )
    })
}

fn model() -> SentenceModel {
    SentenceModel::load(
        &read("model.safetensors"),
        &String::from_utf8(read("vocab.txt")).unwrap(),
        &String::from_utf8(read("config.json")).unwrap(),
    )
    .unwrap()
}

#[derive(Deserialize)]
struct Tokens {
    text: String,
    ids: Vec<u32>,
}

#[derive(Deserialize)]
struct Golden {
    text: String,
    vector: Vec<f32>,
}

fn cos(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

#[test]
fn tokens_are_the_reference_tokenizers() {
    let golden: Vec<Tokens> =
        serde_json::from_str(include_str!("golden/minilm_tokens.json")).unwrap();
    let m = model();
    for g in &golden {
        assert_eq!(m.tokens(&g.text), g.ids, "{:?}", g.text);
    }
    // The longest text is cut to the model's sequence length.
    assert!(golden.iter().any(|g| g.ids.len() == SEQ_TOKENS_MAX));
}

/// One line of `golden/minilm_corpus_tokens.jsonl`: the ids as space-separated numbers.
#[derive(Deserialize)]
struct CorpusLine {
    text: String,
    ids: String,
}

/// A fixed corpus: the 3,400 rows of `testkit/data/retrieval/rows.jsonl`, thirteen texts of
/// accents, scripts, emoji, controls, numbers, URLs and long words, and one text cut at the
/// sequence length. Its ids were written by `tokenizers` 0.22.2 configured as
/// [`kledger_retrieval::model::wordpiece`] is, and matched id for id the hand-written WordPiece
/// kledger used before (2026-12-06): a change of either library or configuration shows here.
#[test]
fn a_fixed_corpus_tokenizes_as_it_did() {
    let m = model();
    let mut n = 0;
    for line in include_str!("golden/minilm_corpus_tokens.jsonl").lines() {
        let g: CorpusLine = serde_json::from_str(line).unwrap();
        let ids: Vec<u32> = g.ids.split(' ').map(|i| i.parse().unwrap()).collect();
        assert_eq!(m.tokens(&g.text), ids, "{:?}", g.text);
        n += 1;
    }
    assert_eq!(n, 3_414);
}

#[test]
fn vectors_are_the_reference_vectors_and_paraphrases_rank_above_unrelated_rows() {
    let golden: Vec<Golden> =
        serde_json::from_str(include_str!("golden/minilm_vectors.json")).unwrap();
    let m = model();
    assert_eq!(m.dim(), 384);
    let texts: Vec<&str> = golden.iter().map(|g| g.text.as_str()).collect();
    // One batch (grouped by length), and one text at a time: both the reference.
    let batch = m.embed(&texts);
    for (g, v) in golden.iter().zip(&batch) {
        let one = m.embed(&[g.text.as_str()]).pop().unwrap();
        for (x, y) in [(v, &g.vector), (&one, &g.vector)] {
            let worst = x
                .iter()
                .zip(y.iter())
                .map(|(a, b)| (a - b).abs())
                .fold(0f32, f32::max);
            assert!(worst < 2e-5, "{:?}: off by {worst}", g.text);
        }
        assert!((cos(v, v) - 1.0).abs() < 1e-5);
    }
    // A question and the row that answers it in other words, against an unrelated row.
    let pairs = [
        (
            "where does she live",
            "Lives in Porto",
            "Works at Acme as a data engineer",
        ),
        (
            "what does she do for work",
            "Works at Acme as a data engineer",
            "Has a tabby cat called Miso",
        ),
        (
            "does she have any pets",
            "Has a tabby cat called Miso",
            "Started cello lessons in 2023",
        ),
        (
            "is she allergic to any medication",
            "Cannot take penicillin, it gives her hives",
            "Takes her dog to the vet every spring",
        ),
        (
            "what instrument is she learning",
            "Started cello lessons in 2023",
            "Is learning Portuguese at evening classes",
        ),
    ];
    for (q, right, wrong) in pairs {
        let v = m.embed(&[q, right, wrong]);
        assert!(
            cos(&v[0], &v[1]) > cos(&v[0], &v[2]),
            "{q:?}: {right:?} should rank above {wrong:?}"
        );
    }
}

/// The int8 products (the default `vectors.embedder.precision`): every golden vector within
/// 1% of the reference's (cosine; on this set they are within about 0.5%), the paraphrase still
/// first, and a text's vector the same bits alone as in a batch.
#[test]
fn int8_vectors_stay_close_to_the_reference_and_do_not_depend_on_the_batch() {
    let golden: Vec<Golden> =
        serde_json::from_str(include_str!("golden/minilm_vectors.json")).unwrap();
    let m = SentenceModel::load_with(
        &read("model.safetensors"),
        &String::from_utf8(read("vocab.txt")).unwrap(),
        &String::from_utf8(read("config.json")).unwrap(),
        Precision::Int8,
    )
    .unwrap();
    let texts: Vec<&str> = golden.iter().map(|g| g.text.as_str()).collect();
    let batch = m.embed(&texts);
    let mut worst = 1f32;
    for (g, v) in golden.iter().zip(&batch) {
        worst = worst.min(cos(v, &g.vector));
        let one = m.embed(&[g.text.as_str()]).pop().unwrap();
        assert_eq!(&one, v, "{:?}: alone and in a batch", g.text);
        assert!((cos(v, v) - 1.0).abs() < 1e-5);
    }
    assert!(worst > 0.99, "worst cosine with the reference: {worst}");
    assert!(worst < 1.0 - 1e-5, "int8 products differ from f32 ones");
    let v = m.embed(&[
        "where does she live",
        "Lives in Porto",
        "Works at Acme as a data engineer",
    ]);
    assert!(cos(&v[0], &v[1]) > cos(&v[0], &v[2]));
}

#[test]
fn a_broken_model_does_not_load() {
    let weights = read("model.safetensors");
    let vocab = String::from_utf8(read("vocab.txt")).unwrap();
    let config = String::from_utf8(read("config.json")).unwrap();
    let err = |w: &[u8], v: &str, c: &str| SentenceModel::load(w, v, c).unwrap_err().to_string();
    assert!(err(&weights[..1000], &vocab, &config).contains("weights"));
    assert!(err(&weights, "[UNK]\n", &config).contains("vocabulary"));
    assert!(err(&weights, &vocab, "{}").contains("configuration"));
    let wider = config.replace("\"hidden_size\": 384", "\"hidden_size\": 768");
    assert_ne!(wider, config);
    assert!(err(&weights, &vocab, &wider).contains("weights"));
}
