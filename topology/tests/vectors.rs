//! The vector projection suite, run against Qdrant's engine in-process, and against a Qdrant
//! server too when `QDRANT_URL` is set (e.g. `http://127.0.0.1:6334`; skipped, saying so,
//! otherwise): the index holds exactly the indexable rows with cm_payload_v1 payloads and no
//! content, re-reading old commits changes nothing, the engine answers the access filter
//! exactly as the access rules say, and an intent's own vector is used as it is.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kledger_processors::access::Principal;
use kledger_processors::embed::HashEmbedder;
use kledger_processors::ids::memory_uuid;
use kledger_processors::payload::{AccountRef, Placement, access_filter, placement};
use kledger_schemas::*;
use kledger_state::MarkStore;
use kledger_testkit::{GenConfig, Generator, Ledger};
use kledger_topology::pipeline::project::vectors::{apply, plan};
use kledger_topology::vector::embedder::{Embedder, HashingEmbedder};
use kledger_topology::vector::{QueryVector, VectorIndex};
use rand::{Rng, SeedableRng};
use uuid::Uuid;

const PARTITIONS: i32 = 4;

fn ledger(n: usize) -> Ledger {
    let mut l = Ledger::new(PARTITIONS);
    for r in Generator::new(GenConfig {
        seed: 11,
        accounts: 8,
        purge_pct: 4,
        ..GenConfig::default()
    })
    .take(n)
    {
        l.apply(&r);
    }
    l
}

fn feed(index: &dyn VectorIndex, marks: &MarkStore, commits: &[Commit], embedder: &dyn Embedder) {
    let batch = kledger_testkit::kafka::positioned(commits, |c| {
        kledger_processors::routing::partition_for(c.account_id.as_bytes(), PARTITIONS)
    });
    for chunk in batch.chunks(300) {
        let pl = plan(marks, chunk).unwrap();
        apply(index, embedder, &pl).unwrap();
        let applied: BTreeMap<String, i64> = chunk
            .iter()
            .map(|c| (c.commit.account_id.clone(), c.commit.commit_seq))
            .collect();
        let mut latest = BTreeMap::new();
        for (a, s) in applied {
            let cur = marks.applied(&a).unwrap();
            latest.insert(a, s.max(cur));
        }
        marks.write(&latest, &Default::default(), &[]).unwrap();
    }
}

fn uuid(memory_id: &str) -> Uuid {
    Uuid::parse_str(&memory_uuid(memory_id).unwrap()).unwrap()
}

fn principal(rng: &mut impl Rng, accounts: &[String]) -> Principal {
    let a = &accounts[rng.random_range(0..accounts.len())];
    let r = AccountRef::parse(a).unwrap();
    let own = rng.random_bool(0.3);
    Principal {
        tenant_id: if rng.random_bool(0.9) {
            r.tenant_id.clone()
        } else {
            "t_other".into()
        },
        team_id: [
            None,
            Some("team_core".to_owned()),
            Some("team_x".to_owned()),
        ][rng.random_range(0..3)]
        .clone(),
        agent_id: [
            None,
            Some("agt_helper".to_owned()),
            Some("agt_x".to_owned()),
        ][rng.random_range(0..3)]
        .clone(),
        roles: if rng.random_bool(0.5) {
            vec!["role_admin".into()]
        } else {
            vec![]
        },
        owner_kind: OwnerKind::parse(&r.owner_kind).unwrap(),
        owner_id: if own {
            r.owner_id
        } else {
            "someone_else".into()
        },
    }
}

fn suite(index: &dyn VectorIndex, marks_dir: &std::path::Path) {
    let l = ledger(2_500);
    let embedder = HashingEmbedder::new(256);
    let marks = MarkStore::open(marks_dir).unwrap();
    feed(index, &marks, &l.commits, &embedder);

    // Exactly the indexable rows, each with its status and no content.
    let accounts: BTreeSet<String> = l.commits.iter().map(|c| c.account_id.clone()).collect();
    let mut want: BTreeMap<Uuid, Row> = BTreeMap::new();
    for a in &accounts {
        for r in l.rows(a) {
            if placement(&r) == Placement::Upsert {
                want.insert(uuid(&r.memory_id), r);
            }
        }
    }
    let got = index.scan().unwrap();
    assert_eq!(
        got.iter().map(|(u, _)| *u).collect::<BTreeSet<_>>(),
        want.keys().copied().collect::<BTreeSet<_>>(),
        "indexed points differ from indexable rows"
    );
    let statuses: BTreeSet<&str> = got
        .iter()
        .map(|(_, p)| p["status"].as_str().unwrap())
        .collect();
    assert!(
        statuses.contains("active") && statuses.contains("superseded"),
        "{statuses:?}"
    );
    for (u, p) in &got {
        let r = &want[u];
        assert_eq!(p["status"], r.status.as_str());
        assert_eq!(p["schema_version"], "cm_payload_v1");
        assert_eq!(p["memory_id"], r.memory_id.as_str());
        assert!(p.get("content").is_none() && p.get("body").is_none());
        assert_ne!(p["sensitivity"], "restricted");
    }

    // Re-reading every commit (an old position) changes nothing.
    let before = index.scan().unwrap();
    feed(index, &marks, &l.commits, &embedder);
    assert_eq!(index.scan().unwrap(), before);

    // The engine answers the access filter exactly as the evaluator (and so the rules) do.
    let accounts: Vec<String> = accounts.into_iter().collect();
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(5);
    let mut checked = 0;
    for _ in 0..200 {
        let p = principal(&mut rng, &accounts);
        let a = AccountRef::parse(&accounts[rng.random_range(0..accounts.len())]).unwrap();
        let kinds: Vec<Kind> = if rng.random_bool(0.3) {
            vec![Kind::Fact]
        } else {
            vec![]
        };
        let f = access_filter(&p, &a, &kinds);
        let expected = before
            .iter()
            .filter(|(_, payload)| kledger_testkit::filter::matches(&f, payload))
            .count();
        assert_eq!(index.count(&f).unwrap(), expected, "filter {f}");
        checked += usize::from(expected > 0);
        // Search returns only points the filter admits.
        let q = embedder.embed(&["lives works likes"]).unwrap().remove(0);
        for (id, _) in index.query(QueryVector::Dense(q.clone()), &f, 10).unwrap() {
            let payload = &before.iter().find(|(u, _)| *u == id).unwrap().1;
            assert!(kledger_testkit::filter::matches(&f, payload));
        }
        // Both queries in one request (search's) answer as each alone.
        let sparse = kledger_processors::bm25::Bm25::default().query("lives works likes");
        assert_eq!(
            index
                .query_each(
                    vec![
                        (QueryVector::Dense(q.clone()), 10),
                        (QueryVector::Sparse(sparse.clone()), 7)
                    ],
                    &f
                )
                .unwrap(),
            vec![
                index.query(QueryVector::Dense(q), &f, 10).unwrap(),
                index.query(QueryVector::Sparse(sparse), &f, 7).unwrap()
            ],
            "filter {f}"
        );
    }
    assert!(checked > 20, "too few principals saw anything ({checked})");
}

#[test]
fn the_projection_suite_on_the_embedded_engine_with_sealed_segments() {
    // Sealed every 150 points: the suite's writes, rewrites of sealed points and deletes run
    // over many segments, and the engine still answers exactly.
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        kledger_topology::vector::edge::EdgeIndex::open_with(
            &dir.path().join("vectors"),
            "cm_text_256_v1",
            256,
            kledger_topology::vector::edge::EdgeOptions {
                seal_points: 150,
                ..Default::default()
            },
        )
        .unwrap()
    };
    let index = open();
    suite(&index, &dir.path().join("marks"));
    let segments = index.segments().unwrap();
    assert!(segments > 2, "{segments} segments: nothing was sealed");
    let before = index.scan().unwrap();
    drop(index);
    assert_eq!(open().scan().unwrap(), before);
}

#[test]
fn the_projection_suite_on_the_embedded_engine() {
    let dir = tempfile::tempdir().unwrap();
    let index = kledger_topology::vector::edge::EdgeIndex::open(
        &dir.path().join("vectors"),
        "cm_text_256_v1",
        256,
    )
    .unwrap();
    suite(&index, &dir.path().join("marks"));
    // Reopening finds the same points (the engine flushes every write).
    let before = index.scan().unwrap();
    drop(index);
    let index = kledger_topology::vector::edge::EdgeIndex::open(
        &dir.path().join("vectors"),
        "cm_text_256_v1",
        256,
    )
    .unwrap();
    assert_eq!(index.scan().unwrap(), before);
}

#[test]
fn the_projection_suite_on_a_qdrant_server() {
    let Ok(url) = std::env::var("QDRANT_URL") else {
        eprintln!("QDRANT_URL is not set: the server backend suite is skipped");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let name = format!("cm_text_256_v1_test_{}", std::process::id());
    let index =
        kledger_topology::vector::server::ServerIndex::open(&url, None, &name, 256).unwrap();
    suite(&index, &dir.path().join("marks"));
}

#[test]
fn an_intents_own_vector_is_used_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let index: Arc<dyn VectorIndex> = Arc::new(
        kledger_topology::vector::edge::EdgeIndex::open(dir.path(), "cm_text_8_v1", 8).unwrap(),
    );
    let embedder = HashingEmbedder::new(8);
    let mut own = kledger_testkit::build::fact("Plays the cello");
    let v = vec![0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0];
    own.embedding = Some(Embedding {
        model: embedder.model().to_owned(),
        vector: v.clone(),
    });
    let mut l = Ledger::new(PARTITIONS);
    let acct = "t_acme/user/u_1";
    let mut ids = Vec::new();
    for (i, op) in [own, kledger_testkit::build::fact("Likes jazz")]
        .into_iter()
        .enumerate()
    {
        let d = l.apply(&IntentRecord {
            timestamp: 1_767_225_600_000 + i as i64,
            partition: None,
            offset: None,
            intent: kledger_testkit::build::intent(
                acct,
                &format!("a{i}"),
                WriteReason::DirectUserStatement,
                i as i64,
                vec![Op::Assert(op)],
            ),
        });
        ids.push(uuid(&d.into_commit().unwrap().ops[0].row.memory_id));
    }
    let marks = MarkStore::open(&dir.path().join("marks")).unwrap();
    feed(&*index, &marks, &l.commits, &embedder);
    let owner = Principal {
        tenant_id: "t_acme".into(),
        team_id: None,
        agent_id: None,
        roles: vec![],
        owner_kind: OwnerKind::User,
        owner_id: "u_1".into(),
    };
    let f = access_filter(&owner, &AccountRef::parse(acct).unwrap(), &[]);
    let hits = index.query(QueryVector::Dense(v), &f, 2).unwrap();
    assert_eq!(hits[0].0, ids[0]);
    assert!(
        (hits[0].1 - 1.0).abs() < 1e-4,
        "the supplied vector itself: {hits:?}"
    );
}

/// `n` synthetic points over 4 owners, with text `round` folded into their vectors.
fn synthetic_points(n: usize, round: u32) -> Vec<kledger_topology::vector::Point> {
    let hasher = HashEmbedder { dim: 16 };
    (0..n)
        .map(|i| {
            let text = format!("note {i} round {round} word{} word{}", i % 7, i % 13);
            let e = hasher.embed(&text);
            let mut payload = serde_json::Map::new();
            payload.insert("owner_id".into(), format!("u_{}", i % 4).into());
            payload.insert("round".into(), round.into());
            // About 1 KiB of log per point besides its vectors.
            payload.insert("filler".into(), "x".repeat(1_000).into());
            kledger_topology::vector::Point {
                id: Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0000 + i as u128 * 7919),
                dense: e.dense,
                sparse: e.sparse,
                payload,
            }
        })
        .collect()
}

fn open_edge(
    root: &std::path::Path,
    options: kledger_topology::vector::edge::EdgeOptions,
) -> kledger_topology::vector::edge::EdgeIndex {
    kledger_topology::vector::edge::EdgeIndex::open_with(root, "cm_text_16_v1", 16, options)
        .unwrap()
}

#[test]
fn a_sharded_collection_answers_as_one_shard_does() {
    use kledger_topology::vector::edge::EdgeOptions;
    let dir = tempfile::tempdir().unwrap();
    let one = open_edge(
        &dir.path().join("one"),
        EdgeOptions {
            shards: 1,
            ..Default::default()
        },
    );
    let three = open_edge(
        &dir.path().join("three"),
        EdgeOptions {
            shards: 3,
            ..Default::default()
        },
    );
    let points = synthetic_points(300, 0);
    let deleted: Vec<Uuid> = points.iter().step_by(10).map(|p| p.id).collect();
    for index in [&one, &three] {
        index.write_batch(points.clone(), &deleted).unwrap();
    }
    // Every shard holds some of the points; together they hold them all, once.
    let per_shard = three.points_per_shard().unwrap();
    assert_eq!(per_shard.len(), 3);
    assert!(per_shard.iter().all(|n| *n > 50), "{per_shard:?}");
    assert_eq!(per_shard.iter().sum::<usize>(), 270);
    assert_eq!(three.scan().unwrap(), one.scan().unwrap());
    let hasher = HashEmbedder { dim: 16 };
    let owner = serde_json::json!({"must": [{"key": "owner_id", "match": {"value": "u_1"}}]});
    assert_eq!(three.count(&owner).unwrap(), one.count(&owner).unwrap());
    for q in ["word3 word5", "note round", "word11"] {
        let e = hasher.embed(q);
        for (vector, limit) in [
            (QueryVector::Dense(e.dense.clone()), 5),
            (QueryVector::Sparse(e.sparse.clone()), 5),
            // Everything the filter admits, so ties at the cut cannot differ.
            (QueryVector::Dense(e.dense.clone()), 100),
        ] {
            let a = three.query(vector.clone(), &owner, limit).unwrap();
            let b = one.query(vector, &owner, limit).unwrap();
            assert_eq!(a.len(), b.len(), "{q}");
            let scores = |v: &[(Uuid, f32)]| v.iter().map(|h| h.1).collect::<Vec<_>>();
            assert_eq!(scores(&a), scores(&b), "{q}");
            if limit == 100 {
                let mut b = b;
                b.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
                assert_eq!(a, b, "{q}");
            }
        }
    }
    // The shard count is the collection's: reopening with another keeps it.
    drop(three);
    let again = open_edge(&dir.path().join("three"), EdgeOptions::default());
    assert_eq!(again.shards(), 3);
    assert_eq!(again.scan().unwrap(), one.scan().unwrap());
}

#[test]
fn searches_and_writes_at_once_neither_wait_forever_nor_see_another_owner() {
    // A search holds every shard's read lock through its queries (and shares each segment's
    // filtered points between them, vendored change 11) while each shard's writer takes its
    // own write lock: two searching threads and the writers rewriting every point must all
    // finish, and every answer keep to the filter's owner.
    use kledger_topology::vector::edge::EdgeOptions;
    let dir = tempfile::tempdir().unwrap();
    let index = Arc::new(open_edge(
        dir.path(),
        EdgeOptions {
            shards: 3,
            seal_points: 120,
            ..Default::default()
        },
    ));
    let owners: BTreeMap<Uuid, String> = synthetic_points(400, 0)
        .into_iter()
        .map(|p| (p.id, p.payload["owner_id"].as_str().unwrap().to_owned()))
        .collect();
    index.write_batch(synthetic_points(400, 0), &[]).unwrap();
    /// Says a thread ended, by finishing or by failing (its join then fails the test).
    struct Ended(std::sync::mpsc::Sender<()>);
    impl Drop for Ended {
        fn drop(&mut self) {
            let _ = self.0.send(());
        }
    }
    let (done, finished) = std::sync::mpsc::channel();
    let mut threads = Vec::new();
    {
        let (index, ended) = (index.clone(), Ended(done.clone()));
        threads.push(std::thread::spawn(move || {
            let _ended = ended;
            for round in 1..=12 {
                index
                    .write_batch(synthetic_points(400, round), &[])
                    .unwrap();
            }
        }));
    }
    for reader in 0..2 {
        let (index, ended, owners) = (index.clone(), Ended(done.clone()), owners.clone());
        threads.push(std::thread::spawn(move || {
            let _ended = ended;
            let hasher = HashEmbedder { dim: 16 };
            for n in 0..150 {
                let owner = format!("u_{}", (n + reader) % 4);
                let f =
                    serde_json::json!({"must": [{"key": "owner_id", "match": {"value": owner}}]});
                let e = hasher.embed(&format!("word{} round{}", n % 7, n % 13));
                let answers = index
                    .query_each(
                        vec![
                            (QueryVector::Dense(e.dense), 8),
                            (QueryVector::Sparse(e.sparse), 8),
                        ],
                        &f,
                    )
                    .unwrap();
                assert_eq!(answers[0].len(), 8, "every owner has 100 points");
                for (id, _) in answers.iter().flatten() {
                    assert_eq!(owners[id], owner, "search {n} of reader {reader}");
                }
            }
        }));
    }
    for _ in 0..3 {
        finished
            .recv_timeout(std::time::Duration::from_secs(120))
            .expect("a thread neither ended nor failed in two minutes: a lock cycle");
    }
    for t in threads {
        t.join().unwrap();
    }
}

#[test]
fn a_collection_from_before_sharding_opens_as_one_shard() {
    use kledger_topology::vector::edge::EdgeOptions;
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("v");
    let index = open_edge(
        &root,
        EdgeOptions {
            shards: 1,
            ..Default::default()
        },
    );
    index.upsert(synthetic_points(50, 0)).unwrap();
    let before = index.scan().unwrap();
    drop(index);
    // The old layout: the engine's files directly in the collection's directory.
    let coll = root.join("cm_text_16_v1");
    std::fs::rename(coll.join("shard-0"), root.join("old")).unwrap();
    std::fs::remove_dir_all(&coll).unwrap();
    std::fs::rename(root.join("old"), &coll).unwrap();
    let index = open_edge(&root, EdgeOptions::default());
    assert_eq!(index.shards(), 1);
    assert_eq!(index.scan().unwrap(), before);
    index.upsert(synthetic_points(60, 1)).unwrap();
    assert_eq!(index.scan().unwrap().len(), 60);
}

#[test]
fn the_engine_log_stays_empty_and_rewrites_apply_across_seals_and_reopens() {
    use kledger_topology::vector::edge::EdgeOptions;
    let dir = tempfile::tempdir().unwrap();
    let options = EdgeOptions {
        shards: 2,
        seal_points: 100,
        wal_segment_bytes: 64 << 10,
        ..Default::default()
    };
    let mut index = open_edge(dir.path(), options);
    let mut most = 0;
    for round in 0..12 {
        index.upsert(synthetic_points(200, round)).unwrap();
        let closed = index.wal_segments().unwrap();
        most = most.max(*closed.iter().max().unwrap());
    }
    // Each round would log ≈ 100 KiB per shard (upstream leaves ≈ 18 closed 64 KiB segments
    // per shard after 12 rounds); logging is off, so the log never closes a segment.
    assert_eq!(most, 0, "{most} closed log segments in a shard");
    // Every rewrite applied: the engine numbers operations without its log, and a rewrite
    // numbered at or below a point's version would be dropped silently.
    let last = index.scan().unwrap();
    assert!(
        last.iter().all(|(_, p)| p["round"] == 11),
        "a rewrite was lost"
    );
    // Reopened, the numbers go on past those the sealed and appendable segments have seen.
    for round in 12..14 {
        drop(index);
        index = open_edge(dir.path(), options);
        assert_eq!(index.scan().unwrap().len(), last.len());
        index.upsert(synthetic_points(200, round)).unwrap();
        assert!(
            index
                .scan()
                .unwrap()
                .iter()
                .all(|(_, p)| p["round"] == round),
            "a rewrite after reopening was lost"
        );
    }
}

#[test]
fn sparse_search_is_exact_after_appends_updates_and_deletes() {
    // Sparse queries over enough points in one shard run on the inverted index (past its
    // full-scan threshold) in scoring batches of 10,000 ids. Between batches the engine skips
    // ahead in the longest posting list when the list's max-next-weight says nothing ahead can
    // reach the top: the values the vendored engine patch (vendor/qdrant-edge/KLEDGER-PATCH.md)
    // stops recomputing early. Term 0 is in every point, with weights growing along the
    // appends, so every append must raise the max-next-weights to its left; term 1 is in every
    // 1,000th point, so a query of both skips up to 1,000 postings of term 0 at a time.
    use kledger_processors::embed::Sparse;
    use kledger_topology::vector::edge::EdgeOptions;
    let dir = tempfile::tempdir().unwrap();
    let index = open_edge(
        dir.path(),
        EdgeOptions {
            shards: 1,
            ..Default::default()
        },
    );
    let mut rng = rand::rngs::StdRng::seed_from_u64(5);
    let mut sparse_of = |n: u128, grow: bool| {
        let scale = if grow { 1.0 + n as f32 / 1_000.0 } else { 1.0 };
        let mut terms = vec![0u32];
        if n.is_multiple_of(1_000) {
            terms.push(1);
        }
        terms.extend((0..4).map(|_| rng.random_range(2..40)));
        terms.sort_unstable();
        terms.dedup();
        let values = terms
            .iter()
            .map(|_| scale * rng.random_range(1..=1_000) as f32 / 100.0)
            .collect();
        Sparse {
            indices: terms,
            values,
        }
    };
    let point = |n: u128, sparse: Sparse| kledger_topology::vector::Point {
        id: Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0000 + n),
        dense: vec![1.0; 16],
        sparse,
        payload: serde_json::Map::new(),
    };
    let mut truth: BTreeMap<Uuid, Sparse> = BTreeMap::new();
    // In rounds: appends, weight updates of earlier points, deletes.
    for round in 0..4u128 {
        let mut batch = Vec::new();
        for n in round * 6_000..(round + 1) * 6_000 {
            batch.push(point(n, sparse_of(n, true)));
        }
        for n in (0..round * 6_000).step_by(97) {
            batch.push(point(n, sparse_of(n, true)));
        }
        let deletes: Vec<Uuid> = (0..round * 6_000)
            .step_by(89)
            .map(|n| point(n, Sparse::default()).id)
            .collect();
        for p in &batch {
            truth.insert(p.id, p.sparse.clone());
        }
        for id in &deletes {
            truth.remove(id);
        }
        index.write_batch(batch, &deletes).unwrap();
    }
    let all = serde_json::json!({});
    assert_eq!(index.count(&all).unwrap(), truth.len());
    let mut queries = vec![Sparse {
        indices: vec![0, 1],
        values: vec![1.0, 0.01],
    }];
    queries.extend((0..50).map(|n| sparse_of(n, false)));
    // Sparse queries are BM25's: each query weight times its term's IDF over the collection,
    // from the engine's statistics (over the points left). They are checked against the
    // points themselves in `bm25_document_frequencies_are_the_collections`.
    for q in queries {
        let weights: Vec<f64> = q
            .values
            .iter()
            .zip(index.sparse_idf(&q.indices).unwrap())
            .map(|(w, idf)| f64::from(*w) * f64::from(idf))
            .collect();
        let mut want: Vec<f64> = truth
            .values()
            .map(|s| {
                let mut dot = 0.0f64;
                for (i, w) in s.indices.iter().zip(&s.values) {
                    if let Some(k) = q.indices.iter().position(|x| x == i) {
                        dot += f64::from(*w) * weights[k];
                    }
                }
                dot
            })
            .filter(|d| *d > 0.0)
            .collect();
        want.sort_by(|a, b| b.total_cmp(a));
        want.truncate(10);
        let got = index
            .query(QueryVector::Sparse(q.clone()), &all, 10)
            .unwrap();
        let got: Vec<f64> = got.iter().map(|h| f64::from(h.1)).collect();
        assert_eq!(got.len(), want.len(), "{q:?}");
        for (g, w) in got.iter().zip(&want) {
            assert!((g - w).abs() < 1e-3 * w, "{q:?}: {got:?} vs {want:?}");
        }
    }
}

/// The vector payload as first written, with `json!`: the reference that
/// `kledger_processors::payload::payload` (built field by field, for speed) must equal.
fn payload_by_json_macro(
    row: &Row,
    embedding: &kledger_processors::payload::EmbeddingInfo,
    updated_at_ms: i64,
) -> serde_json::Map<String, serde_json::Value> {
    use kledger_processors::payload::{SCHEMA_VERSION, iso8601, source_kind};
    use serde_json::{Map, Value, json};
    let t = &row.tenant;
    let importance = f64::from(row.curation_weight.clamp(-100, 100) + 100) / 200.0;
    let v = json!({
        "schema_version": SCHEMA_VERSION,
        "tenant_id": t.tenant_id,
        "team_id": t.team_id,
        "project_id": t.project_id,
        "agent_id": t.agent_id,
        "owner_kind": t.owner_kind.as_str(),
        "owner_id": t.owner_id,
        "scope": "memory",
        "visibility": row.visibility.as_str(),
        "indexed": true,
        "source_kind": source_kind(&row.source.source_type),
        "source_type": row.source.source_type,
        "source_id": row.source.source_id,
        "chunk": {"chunk_id": row.memory_id, "chunk_idx": 0},
        "fingerprint": format!("sha256:{}", row.content_hash),
        "created_at": iso8601(row.recorded_at),
        "updated_at": iso8601(updated_at_ms),
        "acl": {
            "read_team_ids": row.acl.read_team_ids,
            "read_agent_ids": row.acl.read_agent_ids,
            "read_role_ids": row.acl.read_role_ids,
        },
        "tags": row.tags,
        "lang": row.lang,
        "importance": importance,
        "embedding": {"model": embedding.model, "dim": embedding.dim, "metric": "cosine"},
        "memory_id": row.memory_id,
        "kind": row.kind.as_str(),
        "status": row.status.as_str(),
        "commit_seq": row.commit_seq,
        "revision": row.revision,
        "slot": row.slot,
        "subject_scope": row.subject.scope.as_str(),
        "sensitivity": row.sensitivity.level.as_str(),
        "assertion_class": row.assertion_class.as_str(),
        "valid_from": row.valid_from,
        "valid_to": row.valid_to,
        "expires_at": row.expires_at,
    });
    match v {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

#[test]
fn the_payload_equals_the_json_macro_reference() {
    use kledger_processors::payload::{EmbeddingInfo, payload};
    let info = EmbeddingInfo {
        model: "kledger-hash-v1".into(),
        dim: 256,
    };
    let l = ledger(3_000);
    let mut rows: Vec<(Row, i64)> = l
        .commits
        .iter()
        .flat_map(|c| c.ops.iter().map(|op| (op.row.clone(), c.recorded_at)))
        .collect();
    // One row with every optional field set, and characters JSON escapes.
    let mut full = rows[0].0.clone();
    full.tenant.team_id = Some("team_a".into());
    full.tenant.project_id = Some("p\"1".into());
    full.tenant.agent_id = Some("agt_é".into());
    full.slot = Some("home_city".into());
    full.lang = Some("en".into());
    full.tags = vec!["a".into(), "b\n".into()];
    full.acl.read_team_ids = vec!["t1".into()];
    full.acl.read_agent_ids = vec!["a1".into(), "a2".into()];
    full.acl.read_role_ids = vec!["r".into()];
    full.valid_to = Some(-5);
    full.expires_at = Some(i64::MAX);
    full.curation_weight = 37;
    rows.push((full, -1));
    assert!(rows.len() > 1_000, "{} rows", rows.len());
    for (row, at) in &rows {
        let built = payload(row, &info, *at);
        let reference = payload_by_json_macro(row, &info, *at);
        assert_eq!(built, reference, "{}", row.memory_id);
        assert_eq!(
            serde_json::to_string(&built).unwrap(),
            serde_json::to_string(&reference).unwrap()
        );
    }
}

#[test]
fn bm25_document_frequencies_are_the_collections() {
    // BM25's IDF of a sharded collection is the collection's: every shard's statistics summed
    // (vendored change 7), equal to a count over the points left. A deleted point stays in the
    // engine's posting lists and vector counts until its segment is optimised; counting it
    // made two replicas holding the same points (one with a history of deletes and
    // replacements, one written afresh) score, and so rank, differently.
    use kledger_topology::vector::edge::EdgeOptions;
    let (a_dir, b_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let options = EdgeOptions {
        shards: 3,
        // The optimizers run between the rounds below too.
        seal_points: 150,
        ..Default::default()
    };
    let a = open_edge(a_dir.path(), options);
    let first = synthetic_points(400, 0);
    a.write_batch(first.clone(), &[]).unwrap();
    // Each shard keeps the statistics it counted until it is next written: read every term
    // now and between the writes, so a count kept past a write would show below.
    let seen: Vec<u32> = first
        .iter()
        .flat_map(|p| p.sparse.indices.iter().copied())
        .collect::<BTreeSet<u32>>()
        .into_iter()
        .collect();
    let before = a.sparse_idf(&seen).unwrap();
    assert_eq!(a.sparse_idf(&seen).unwrap(), before, "counted again alike");
    // A replaces every fourth point (other words) and deletes every fifth.
    let mut live: BTreeMap<Uuid, kledger_topology::vector::Point> =
        first.into_iter().map(|p| (p.id, p)).collect();
    let replaced: Vec<_> = synthetic_points(400, 1).into_iter().step_by(4).collect();
    let deleted: Vec<Uuid> = live.keys().copied().step_by(5).collect();
    a.write_batch(replaced.clone(), &[]).unwrap();
    a.sparse_idf(&seen).unwrap();
    a.write_batch(vec![], &deleted).unwrap();
    live.extend(replaced.into_iter().map(|p| (p.id, p)));
    deleted.iter().for_each(|id| drop(live.remove(id)));
    let points: Vec<_> = live.into_values().collect();
    let terms: BTreeSet<u32> = points
        .iter()
        .flat_map(|p| p.sparse.indices.iter().copied())
        .collect();
    let terms: Vec<u32> = terms.into_iter().take(40).chain([u32::MAX]).collect();
    let n = points.len() as f64;
    // Half of them kept from the read before (all but the new words and the absent term), in
    // another order and with a repeat: each answers for itself.
    let got = a.sparse_idf(&terms).unwrap();
    let mut again = terms.clone();
    again.reverse();
    again.push(terms[0]);
    let mut want_again = got.clone();
    want_again.reverse();
    want_again.push(got[0]);
    assert_eq!(a.sparse_idf(&again).unwrap(), want_again);
    for (t, g) in terms.iter().zip(got) {
        let df = points
            .iter()
            .filter(|p| p.sparse.indices.contains(t))
            .count() as f64;
        let want = ((n - df + 0.5) / (df + 0.5) + 1.0).ln();
        assert!(
            (f64::from(g) - want).abs() < 1e-4,
            "term {t}: {g} vs {want}"
        );
    }
    // B holds the same points, written once: the same hits with the same scores.
    let b = open_edge(b_dir.path(), options);
    b.write_batch(points.clone(), &[]).unwrap();
    let all = serde_json::json!({});
    for p in points.iter().step_by(37) {
        let q = QueryVector::Sparse(p.sparse.clone());
        assert_eq!(
            a.query(q.clone(), &all, 20).unwrap(),
            b.query(q, &all, 20).unwrap()
        );
    }
}

#[test]
fn bm25_ranks_a_rare_term_above_a_common_one() {
    // One row says "cello", thirty say "music" (one of them twice): a query of both finds the
    // cello row first, because BM25 weighs a term by how rare it is in the collection.
    use kledger_processors::bm25::Bm25;
    let dir = tempfile::tempdir().unwrap();
    let index = open_edge(dir.path(), Default::default());
    let bm25 = Bm25::default();
    let mut texts = vec![
        "Plays the cello on Sundays".to_owned(),
        "Music and more music at the weekend".to_owned(),
    ];
    texts.extend((0..30).map(|i| format!("Listens to music while cooking dish {i}")));
    let point = |n: usize, text: &str| kledger_topology::vector::Point {
        id: Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0000 + n as u128),
        dense: vec![1.0; 16],
        sparse: bm25.document(text),
        payload: serde_json::Map::new(),
    };
    let points: Vec<_> = texts.iter().enumerate().map(|(n, t)| point(n, t)).collect();
    index.write_batch(points.clone(), &[]).unwrap();
    let hits = index
        .query(
            QueryVector::Sparse(bm25.query("music cello")),
            &serde_json::json!({}),
            3,
        )
        .unwrap();
    assert_eq!(hits[0].0, points[0].id, "{hits:?}");
    assert_eq!(
        hits[1].0, points[1].id,
        "the row that says music twice: {hits:?}"
    );
    assert!(hits[0].1 > 2.0 * hits[1].1, "{hits:?}");
}
