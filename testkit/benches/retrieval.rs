//! The retrieval-quality benchmark: recall@1/5/10, MRR and (multi-fact) rows@5 of
//! search_knowledge, of BM25 alone and of the dense model alone (the baselines, over the rows'
//! content as it is), and of kledger's dense provider alone, over the labelled set in
//! `testkit/data/retrieval` (its README says how it is made), in one run. Prints a table per
//! split and category, and the ratio of search_knowledge's recall@5 to the better baseline's on
//! the test split (goal ≥ 1.05).
//!
//! `cargo bench -p kledger-testkit --bench retrieval` (the embedder is the configured default:
//! the local model from `KLEDGER_VECTORS__EMBEDDER__MODEL_DIR` or its default directory);
//! `-- tune` also searches the fusion's settings on the dev split and prints the best.

use kledger_testkit::retrieval::{
    Method, Table, data_dir, default_embedder, evaluate, index, load, plain_index,
};
use kledger_topology::serve::api::search::Fusion;

fn print(name: &str, t: &Table) {
    for ((split, cat), s) in t {
        let [r1, r5, r10, mrr, rows5] = s.rates();
        println!(
            "{name:<17} {split:<5} {cat:<12} {:>5}  {r1:>6.3} {r5:>6.3} {r10:>6.3} {mrr:>6.3} {rows5:>6.3}",
            s.n
        );
    }
}

fn at5(t: &Table, split: &str) -> f64 {
    t.get(&(split.to_owned(), "all".to_owned()))
        .map_or(0.0, |s| s.rates()[1])
}

fn main() -> anyhow::Result<()> {
    let tune = std::env::args().any(|a| a == "tune");
    let set = load(&data_dir())?;
    let embedder = default_embedder()?;
    let dir = tempfile::tempdir()?;
    let started = std::time::Instant::now();
    let (index, ids) = index(&set, &embedder, dir.path())?;
    let plain = plain_index(&set, &embedder, dir.path())?;
    println!(
        "retrieval set: {} rows, {} questions, model {}; indexed in {:.1} s",
        set.rows.len(),
        set.questions.len(),
        embedder.model(),
        started.elapsed().as_secs_f64()
    );
    println!(
        "{:<17} {:<5} {:<12} {:>5}  {:>6} {:>6} {:>6} {:>6} {:>6}",
        "method", "split", "category", "n", "r@1", "r@5", "r@10", "mrr", "rows@5"
    );
    let mut tables = Vec::new();
    for m in [
        Method::Search(Fusion::default()),
        Method::Bm25,
        Method::Dense,
        Method::DenseIndexed,
    ] {
        // The baselines read the rows' content as it is; kledger reads its index text.
        let over = match m {
            Method::Bm25 | Method::Dense => &plain,
            _ => &index,
        };
        let t = evaluate(&set, over, embedder.as_ref(), &ids, m)?;
        print(m.name(), &t);
        tables.push(t);
    }
    for split in ["dev", "test"] {
        let best = at5(&tables[1], split).max(at5(&tables[2], split));
        println!(
            "{split}: recall@5 search_knowledge {:.3}, bm25 {:.3}, dense {:.3}; ratio to the better baseline {:.3} (goal >= 1.05); dense over kledger's index text {:.3}",
            at5(&tables[0], split),
            at5(&tables[1], split),
            at5(&tables[2], split),
            at5(&tables[0], split) / best.max(1e-9),
            at5(&tables[3], split)
        );
    }
    if std::env::args().any(|a| a == "misses") {
        // The dev questions search_knowledge misses at 5: what it returned, what it should have.
        let content: std::collections::BTreeMap<&str, &str> = set
            .rows
            .iter()
            .map(|r| (r.id.as_str(), r.content.as_str()))
            .collect();
        let keywords = kledger_topology::serve::api::search::KeywordThreads::default();
        for q in set.questions.iter().filter(|q| q.split == "dev") {
            let got = kledger_testkit::retrieval::answer(
                &index,
                embedder.as_ref(),
                &ids,
                Method::Search(Fusion::default()),
                q,
                &keywords,
            )?;
            if got.iter().take(5).any(|g| q.relevant.contains(g)) {
                continue;
            }
            println!("MISS [{}] {}", q.category, q.question);
            for r in &q.relevant {
                println!("    want {}", content.get(r.as_str()).unwrap_or(&"?"));
            }
            for g in got.iter().take(5) {
                println!("    got  {}", content.get(g.as_str()).unwrap_or(&"?"));
            }
        }
    }
    if tune {
        // Each question's candidates once, fused offline with every setting.
        let grid = kledger_testkit::retrieval::fusion_grid();
        let deepest = grid.iter().map(|f| f.depth).max().unwrap_or(2);
        let cands = kledger_testkit::retrieval::candidates(
            &set,
            &index,
            embedder.as_ref(),
            kledger_testkit::retrieval::RESULTS * deepest,
        )?;
        let mut best: Option<(f64, f64, Fusion)> = None;
        for f in grid {
            let t = kledger_testkit::retrieval::score(
                &set,
                &kledger_testkit::retrieval::fuse_offline(&cands, &f, &ids),
            );
            let r = at5(&t, "dev");
            println!("  dev recall@5 {r:.3} with {f:?}");
            if best.as_ref().is_none_or(|(b, _, _)| r > *b) {
                best = Some((r, at5(&t, "test"), f));
            }
        }
        if let Some((r, test, f)) = best {
            println!("tuned on dev: recall@5 {r:.3} with {f:?}");
            println!("  on test: recall@5 {test:.3}");
        }
    }
    Ok(())
}
