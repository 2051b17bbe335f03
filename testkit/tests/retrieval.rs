//! search_knowledge's ranking over a slice of the retrieval set (`testkit/data/retrieval`, four
//! accounts, every category), with the local model as the embedded default runs it: a question
//! asked in other words finds its row in the first five, and the fused ranking over kledger's
//! index text does better than the dense model alone and than BM25 alone over the rows'
//! content. The whole set's figures are the retrieval bench's (`docs/benchmarks.md`); this is
//! its guard, small enough for the test suite.

use kledger_testkit::retrieval::{
    Method, Scores, data_dir, default_embedder, evaluate, index, load, plain_index,
};
use kledger_topology::serve::api::search::Fusion;

fn over(t: &kledger_testkit::retrieval::Table, cat: &str) -> Scores {
    let mut s = Scores::default();
    for ((_, c), v) in t {
        if c == cat {
            s.n += v.n;
            s.at1 += v.at1;
            s.at5 += v.at5;
            s.at10 += v.at10;
            s.rr += v.rr;
            s.rows5 += v.rows5;
        }
    }
    s
}

#[test]
fn paraphrases_find_their_rows_and_fusion_beats_each_baseline() {
    let mut set = load(&data_dir()).unwrap();
    let keep = [
        "t_bench/user/u_02",
        "t_bench/user/u_05",
        "t_bench/user/u_13",
        "t_bench/user/u_20",
    ];
    set.rows.retain(|r| keep.contains(&r.account.as_str()));
    set.questions.retain(|q| keep.contains(&q.account.as_str()));
    let embedder = default_embedder().expect("the local model (scripts/dev.sh installs it)");
    let dir = tempfile::tempdir().unwrap();
    let (kledger, ids) = index(&set, &embedder, dir.path()).unwrap();
    let plain = plain_index(&set, &embedder, dir.path()).unwrap();
    let search = evaluate(
        &set,
        &kledger,
        embedder.as_ref(),
        &ids,
        Method::Search(Fusion::default()),
    )
    .unwrap();
    let dense = evaluate(&set, &plain, embedder.as_ref(), &ids, Method::Dense).unwrap();
    let bm25 = evaluate(&set, &plain, embedder.as_ref(), &ids, Method::Bm25).unwrap();
    let r5 = |t, cat| over(t, cat).rates()[1];
    let (s, d, b) = (r5(&search, "all"), r5(&dense, "all"), r5(&bm25, "all"));
    println!(
        "recall@5 over {} questions: search {s:.3}, dense {d:.3}, bm25 {b:.3}",
        over(&search, "all").n
    );
    let paraphrase = r5(&search, "paraphrase");
    println!(
        "paraphrases: search {paraphrase:.3}, dense {:.3}",
        r5(&dense, "paraphrase")
    );
    assert!(
        paraphrase >= 0.85,
        "paraphrased questions find their row in the first five: {paraphrase:.3}"
    );
    assert!(
        s > d && s > b,
        "search {s:.3} against dense {d:.3} and bm25 {b:.3}"
    );
}
