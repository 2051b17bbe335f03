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
use kledger_topology::sinks::vectors::{apply, plan};
use kledger_topology::vector::embedder::{Embedder, LocalEmbedder};
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
    let mut offsets = BTreeMap::new();
    let batch: Vec<(i32, i64, Commit)> = commits
        .iter()
        .map(|c| {
            let p = kledger_processors::routing::partition_for(c.account_id.as_bytes(), PARTITIONS);
            let o = offsets.entry(p).or_insert(0i64);
            *o += 1;
            (p, *o - 1, c.clone())
        })
        .collect();
    for chunk in batch.chunks(300) {
        let pl = plan(marks, chunk).unwrap();
        apply(index, embedder, &HashEmbedder::default(), &pl).unwrap();
        let applied: BTreeMap<String, i64> = chunk
            .iter()
            .map(|(_, _, c)| (c.account_id.clone(), c.commit_seq))
            .collect();
        let mut latest = BTreeMap::new();
        for (a, s) in applied {
            let cur = marks.applied(&a).unwrap();
            latest.insert(a, s.max(cur));
        }
        marks.write(&latest, &BTreeMap::new()).unwrap();
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
    let embedder = LocalEmbedder::new(256);
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
        for (id, _) in index.query(QueryVector::Dense(q), &f, 10).unwrap() {
            let payload = &before.iter().find(|(u, _)| *u == id).unwrap().1;
            assert!(kledger_testkit::filter::matches(&f, payload));
        }
    }
    assert!(checked > 20, "too few principals saw anything ({checked})");
}

#[test]
fn the_projection_suite_on_the_embedded_engine_with_sealed_segments() {
    // Sealed every 150 points: the suite's writes, rewrites of sealed points and deletes run
    // over many segments, and the engine still answers exactly.
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        kledger_topology::vector::edge::EdgeIndex::open_sealing(
            &dir.path().join("vectors"),
            "cm_text_256_v1",
            256,
            150,
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
    let index = kledger_topology::vector::server::ServerIndex::open(&url, &name, 256).unwrap();
    suite(&index, &dir.path().join("marks"));
}

#[test]
fn an_intents_own_vector_is_used_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let index: Arc<dyn VectorIndex> = Arc::new(
        kledger_topology::vector::edge::EdgeIndex::open(dir.path(), "cm_text_8_v1", 8).unwrap(),
    );
    let embedder = LocalEmbedder::new(8);
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
        ids.push(uuid(&d.commit.unwrap().ops[0].row.memory_id));
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
