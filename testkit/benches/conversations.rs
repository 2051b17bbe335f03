//! The conversation benchmark (issue 49): retrieval quality on long multi-session chats among
//! several people, the kind of text an agent's memory holds, in both forms it takes there —
//! the raw turns (`Speaker: text`) and the facts an extractor wrote from them — over the
//! labelled set in `testkit/data/conversations` (its README says how it is made; it is built
//! independently of the retrieval set's generator). Per corpus, in one run: recall@1/5/10, MRR
//! and session-level recall@5 (a row of an evidence turn's session in the first 5) of
//! search_knowledge, of BM25 alone and of the dense model alone (the baselines read the rows'
//! content as it is; kledger reads its index text), per split (dev: tuning; test: frozen,
//! never tuned on) and question category. Then the goals on the test split: search_knowledge's
//! recall@5 ≥ 1.2× BM25's on the turns, ≥ 1.1× the dense model's on the facts.
//!
//! `cargo bench -p kledger-testkit --bench conversations` (the embedder is the configured
//! default: the local model from `KLEDGER_VECTORS__EMBEDDER__MODEL_DIR` or its default
//! directory); `-- tune` also fuses each question's candidates with every setting of
//! [`kledger_testkit::retrieval::fusion_grid`] and prints the dev split's recall@5 per corpus,
//! best first (the test split's figures of the best are printed for information only).

use std::collections::BTreeMap;

use kledger_testkit::retrieval::{
    Corpus, Method, Set, Table, candidates, conversations_dir, default_embedder, evaluate,
    fuse_offline, fusion_grid, index, load_conversations, plain_index, score,
};
use kledger_topology::serve::api::search::Fusion;

fn print(corpus: Corpus, name: &str, t: &Table) {
    for ((split, cat), s) in t {
        let [r1, r5, r10, mrr, _] = s.rates();
        println!(
            "{:<6} {name:<17} {split:<5} {cat:<12} {:>5}  {r1:>6.3} {r5:>6.3} {r10:>6.3} {mrr:>6.3} {:>6.3}",
            corpus.name(),
            s.n,
            s.session_rate()
        );
    }
}

fn at5(t: &Table, split: &str) -> f64 {
    t.get(&(split.to_owned(), "all".to_owned()))
        .map_or(0.0, |s| s.rates()[1])
}

/// What one corpus needs for a run: the set, kledger's index and the baselines' one.
struct Loaded {
    corpus: Corpus,
    set: Set,
    index: std::sync::Arc<dyn kledger_topology::vector::VectorIndex>,
    ids: BTreeMap<uuid::Uuid, String>,
    plain: std::sync::Arc<dyn kledger_topology::vector::VectorIndex>,
}

fn main() -> anyhow::Result<()> {
    let tune = std::env::args().any(|a| a == "tune");
    let embedder = default_embedder()?;
    let dir = tempfile::tempdir()?;
    let mut loaded = Vec::new();
    for corpus in [Corpus::Turns, Corpus::Facts] {
        let started = std::time::Instant::now();
        let set = load_conversations(&conversations_dir(), corpus)?;
        let at = dir.path().join(corpus.name());
        let (index, ids) = index(&set, &embedder, &at)?;
        let plain = plain_index(&set, &embedder, &at)?;
        println!(
            "conversation set, {}: {} rows, {} questions, model {}; indexed twice in {:.1} s",
            corpus.name(),
            set.rows.len(),
            set.questions.len(),
            embedder.model(),
            started.elapsed().as_secs_f64()
        );
        loaded.push(Loaded {
            corpus,
            set,
            index,
            ids,
            plain,
        });
    }
    println!(
        "{:<6} {:<17} {:<5} {:<12} {:>5}  {:>6} {:>6} {:>6} {:>6} {:>6}",
        "rows", "method", "split", "category", "n", "r@1", "r@5", "r@10", "mrr", "sess@5"
    );
    let mut summary = Vec::new();
    for l in &loaded {
        let mut tables = Vec::new();
        for m in [
            Method::Search(Fusion::default()),
            Method::Bm25,
            Method::Dense,
        ] {
            let over = match m {
                Method::Bm25 | Method::Dense => &l.plain,
                _ => &l.index,
            };
            let t = evaluate(&l.set, over, embedder.as_ref(), &l.ids, m)?;
            print(l.corpus, m.name(), &t);
            tables.push(t);
        }
        summary.push((l.corpus, tables));
    }
    println!("summary (recall@1 / @5 / @10, MRR, session recall@5):");
    for (corpus, tables) in &summary {
        for split in ["dev", "test"] {
            let key = (split.to_owned(), "all".to_owned());
            let line: Vec<String> = ["search_knowledge", "bm25", "dense"]
                .iter()
                .zip(tables)
                .map(|(name, t)| {
                    let s = t.get(&key).copied().unwrap_or_default();
                    let [r1, r5, r10, mrr, _] = s.rates();
                    format!(
                        "{name} {r1:.3}/{r5:.3}/{r10:.3} mrr {mrr:.3} sess {:.3}",
                        s.session_rate()
                    )
                })
                .collect();
            println!("  {} {split}: {}", corpus.name(), line.join("; "));
        }
    }
    for (corpus, tables) in &summary {
        for split in ["dev", "test"] {
            let (search, bm25, dense) = (
                at5(&tables[0], split),
                at5(&tables[1], split),
                at5(&tables[2], split),
            );
            let (against, base, goal) = match corpus {
                Corpus::Turns => ("bm25", bm25, 1.2),
                Corpus::Facts => ("dense", dense, 1.1),
            };
            println!(
                "{} {split}: recall@5 search_knowledge {search:.3}, bm25 {bm25:.3}, dense {dense:.3}; to {against} {:.3} (goal >= {goal}); to the better baseline {:.3}",
                corpus.name(),
                search / base.max(1e-9),
                search / bm25.max(dense).max(1e-9)
            );
        }
    }
    if tune {
        let grid = fusion_grid();
        let deepest = grid.iter().map(|f| f.depth).max().unwrap_or(2);
        let mut by_setting: Vec<(f64, [f64; 2], [f64; 2], Fusion)> =
            grid.iter().map(|f| (0.0, [0.0; 2], [0.0; 2], *f)).collect();
        for (c, l) in loaded.iter().enumerate() {
            let cands = candidates(
                &l.set,
                &l.index,
                embedder.as_ref(),
                kledger_testkit::retrieval::RESULTS * deepest,
            )?;
            for entry in &mut by_setting {
                let t = score(&l.set, &fuse_offline(&cands, &entry.3, &l.ids));
                entry.1[c] = at5(&t, "dev");
                entry.2[c] = at5(&t, "test");
            }
        }
        for entry in &mut by_setting {
            entry.0 = entry.1[0] + entry.1[1];
        }
        by_setting.sort_by(|a, b| b.0.total_cmp(&a.0));
        println!("tuning on dev (recall@5 turns, facts), best first:");
        for (_, dev, _, f) in &by_setting {
            println!("  dev {:.3} {:.3} with {f:?}", dev[0], dev[1]);
        }
        if let Some((_, dev, test, f)) = by_setting.first() {
            println!(
                "best on dev: turns {:.3}, facts {:.3} with {f:?}; on test (information only): turns {:.3}, facts {:.3}",
                dev[0], dev[1], test[0], test[1]
            );
        }
    }
    Ok(())
}
