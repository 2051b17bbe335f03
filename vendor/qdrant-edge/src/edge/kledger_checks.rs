//! kledger patch (`KLEDGER-PATCH.md`, changes 2, 4, 6, 10 and 11): the fork's own checks of the
//! shard-level switches and of search's answers, through `EdgeShard`'s public calls only. Not `#[test]`s (the published
//! crate's test build does not compile); run by [`crate::kledger_patch_self_checks`]. They set
//! the process-wide in-memory switch (change 4) and restore it; a caller that opens shards on
//! other threads meanwhile must hold its own lock around them.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::json;

use crate::edge::{
    CountRequest, CreateIndex, Distance, EdgeConfig, EdgeShard, EdgeVectorParams,
    FieldIndexOperations, Filter, JsonPath, NamedQuery, Payload, PayloadFieldSchema,
    PayloadSchemaType, PointId, PointInsertOperations, PointOperations, QueryEnum, QueryRequest,
    ScoringQuery, UpdateOperation, Vector, VectorInternal, Vectors, WithPayloadInterface,
    WithVector,
};
use crate::segment::index::field_index::{
    in_memory_appendable_indexes, set_in_memory_appendable_indexes,
};
use crate::segment::index::struct_payload_index::{
    defer_memory_only_indexes, shared_filtered_hits, sharing_filtered_points,
};
use crate::shard::operations::point_ops::PointStructPersisted;

const POINTS: u64 = 300;

/// A fresh directory under the system's temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(what: &str) -> Self {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "qdrant-edge-kledger-check-{}-{what}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Restores the in-memory switch as it was, also when a check panics.
struct SwitchGuard(bool);

impl Drop for SwitchGuard {
    fn drop(&mut self) {
        set_in_memory_appendable_indexes(self.0);
    }
}

/// Loads (or creates) a shard with one 4-dimensional vector and keyword `k`, integer `n` and
/// bool `b` indexes.
fn load(dir: &Path, wal_logging: bool) -> EdgeShard {
    let config = EdgeConfig::builder()
        .vector("d", EdgeVectorParams::builder(4, Distance::Cosine).build())
        .build();
    let shard = EdgeShard::load(dir, Some(config)).unwrap();
    shard.set_wal_logging(wal_logging);
    for (field, kind) in [
        ("k", PayloadSchemaType::Keyword),
        ("n", PayloadSchemaType::Integer),
        ("b", PayloadSchemaType::Bool),
    ] {
        shard
            .update(UpdateOperation::FieldIndexOperation(
                FieldIndexOperations::CreateIndex(CreateIndex {
                    field_name: field.parse::<JsonPath>().unwrap(),
                    field_schema: Some(PayloadFieldSchema::FieldType(kind)),
                }),
            ))
            .unwrap();
    }
    shard
}

/// Point `i`'s payload in round `round`.
fn payload(i: u64, round: u64) -> serde_json::Map<String, serde_json::Value> {
    let serde_json::Value::Object(map) = json!({
        "k": if (i + round) % 3 == 0 { "a" } else { "b" },
        "n": i * 10 + round,
        "b": true,
        "round": round,
    }) else {
        unreachable!()
    };
    map
}

/// Upserts every point with its round-`round` payload.
fn write_round(shard: &EdgeShard, round: u64) {
    let points = (0..POINTS)
        .map(|i| PointStructPersisted {
            id: PointId::NumId(i),
            vector: Vectors::new_named([("d", Vector::new_dense(vec![1.0, i as f32, 0.5, 2.0]))])
                .0
                .into(),
            payload: Some(Payload(payload(i, round))),
        })
        .collect();
    shard
        .update(UpdateOperation::PointOperation(
            PointOperations::UpsertPoints(PointInsertOperations::PointsList(points)),
        ))
        .unwrap();
    shard.flush();
}

fn count(shard: &EdgeShard, filter: serde_json::Value) -> usize {
    let filter: Filter = serde_json::from_value(filter).unwrap();
    shard
        .count(CountRequest {
            filter: Some(filter),
            exact: true,
        })
        .unwrap()
}

/// The counts each filter should give after round `round`: (k = "a", n in round's range, b).
fn expected(round: u64) -> (usize, usize, usize) {
    let a = (0..POINTS).filter(|i| (i + round) % 3 == 0).count();
    let n = (0..POINTS).filter(|i| i * 10 + round < 1_000).count();
    (a, n, POINTS as usize)
}

/// The filter counts on `shard`: (k = "a", n < 1,000, b = true).
fn counts(shard: &EdgeShard) -> (usize, usize, usize) {
    (
        count(shard, json!({"must": [{"key": "k", "match": {"value": "a"}}]})),
        count(shard, json!({"must": [{"key": "n", "range": {"lt": 1000}}]})),
        count(shard, json!({"must": [{"key": "b", "match": {"value": true}}]})),
    )
}

/// Every point's stored `round`.
fn rounds(shard: &EdgeShard) -> Vec<u64> {
    let ids: Vec<PointId> = (0..POINTS).map(PointId::NumId).collect();
    let mut records = shard
        .retrieve(&ids, Some(WithPayloadInterface::Bool(true)), None)
        .unwrap();
    records.sort_by_key(|r| match r.id {
        PointId::NumId(n) => n,
        PointId::Uuid(_) => u64::MAX,
    });
    records
        .iter()
        .map(|r| r.payload.as_ref().unwrap().0["round"].as_u64().unwrap())
        .collect()
}

/// The keyword and integer index directories (`<field>-map`, `<field>-numeric`) under `root`.
fn index_dirs(root: &Path) -> usize {
    let mut found = 0;
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if name.ends_with("-map") || name.ends_with("-numeric") {
                    found += 1;
                }
                stack.push(path);
            }
        }
    }
    found
}

/// Change 2: with the log off, rewrites after a reopen still apply (operation numbers start
/// past what the segments applied), and turning the log back on keeps numbering from there.
pub(crate) fn rewrites_apply_across_reopens_with_the_log_off() {
    let _switch = SwitchGuard(in_memory_appendable_indexes());
    set_in_memory_appendable_indexes(false);
    let dir = TempDir::new("wal");
    for round in 0..3 {
        let shard = load(&dir.0, false);
        if round > 0 {
            assert_eq!(rounds(&shard), vec![round - 1; POINTS as usize]);
        }
        write_round(&shard, round);
        assert_eq!(rounds(&shard), vec![round; POINTS as usize], "round {round}");
        assert_eq!(counts(&shard), expected(round), "round {round}");
    }
    let shard = load(&dir.0, true);
    assert_eq!(rounds(&shard), vec![2; POINTS as usize]);
    // With the log on again, numbering goes on from the segments as well.
    write_round(&shard, 3);
    drop(shard);
    assert_eq!(rounds(&load(&dir.0, true)), vec![3; POINTS as usize]);
}

/// Change 4: in memory, the appendable keyword and integer indexes write no files, are rebuilt
/// from the payloads at load, and either layout opens segments written under the other.
pub(crate) fn appendable_indexes_in_memory_and_on_disk() {
    let _switch = SwitchGuard(in_memory_appendable_indexes());
    let dir = TempDir::new("in-memory");
    set_in_memory_appendable_indexes(false);
    let shard = load(&dir.0, false);
    write_round(&shard, 0);
    assert_eq!(counts(&shard), expected(0));
    drop(shard);
    assert!(index_dirs(&dir.0) >= 2, "on disk: index files");

    set_in_memory_appendable_indexes(true);
    let shard = load(&dir.0, false);
    assert_eq!(index_dirs(&dir.0), 0, "in memory: the stale files are removed");
    assert_eq!(counts(&shard), expected(0), "in memory, rebuilt at load");
    write_round(&shard, 1);
    assert_eq!(counts(&shard), expected(1), "in memory, written");
    drop(shard);
    let shard = load(&dir.0, false);
    assert_eq!(counts(&shard), expected(1), "in memory, reopened");
    assert_eq!(index_dirs(&dir.0), 0);
    drop(shard);

    set_in_memory_appendable_indexes(false);
    let shard = load(&dir.0, false);
    assert_eq!(counts(&shard), expected(1), "on disk again, rebuilt by upstream's path");
    assert!(index_dirs(&dir.0) >= 2);
}

/// Change 6: segments opened under a deferring directory leave their in-memory indexes alone
/// on writes (filters on them miss; the on-disk bool index does not), a shard elsewhere is
/// unaffected, and once the registration ends a reopen counts every filter right.
pub(crate) fn deferred_indexes_are_rebuilt_at_reopen() {
    let _switch = SwitchGuard(in_memory_appendable_indexes());
    set_in_memory_appendable_indexes(true);
    let (deferring, other) = (TempDir::new("deferring"), TempDir::new("other"));
    defer_memory_only_indexes(&deferring.0, true);
    let built = std::panic::catch_unwind(|| {
        let shard = load(&deferring.0, false);
        let beside = load(&other.0, false);
        write_round(&shard, 0);
        write_round(&beside, 0);
        let (a, n, b) = counts(&shard);
        assert_eq!((a, n), (0, 0), "deferred indexes are not written");
        assert_eq!(b, POINTS as usize, "the bool index (on disk) is written");
        assert_eq!(counts(&beside), expected(0), "a shard elsewhere is unaffected");
    });
    defer_memory_only_indexes(&deferring.0, false);
    if let Err(panic) = built {
        std::panic::resume_unwind(panic);
    }
    let shard = load(&deferring.0, false);
    assert_eq!(counts(&shard), expected(0), "reopened: rebuilt from the payloads");
    write_round(&shard, 1);
    assert_eq!(counts(&shard), expected(1), "reopened and written: indexed again");
}

/// Change 10: a search asking for neither payload nor vectors answers what one asking for
/// them answers (the same points, scores and versions, in the same order), on a shard whose
/// points were rewritten (old offsets deleted) and partly deleted, with and without a filter.
pub(crate) fn searches_without_payload_answer_as_with_it() {
    let _switch = SwitchGuard(in_memory_appendable_indexes());
    set_in_memory_appendable_indexes(true);
    let dir = TempDir::new("search");
    let shard = load(&dir.0, false);
    for round in 0..3 {
        write_round(&shard, round);
    }
    let gone: Vec<PointId> = (0..POINTS).filter(|i| i % 7 == 0).map(PointId::NumId).collect();
    shard
        .update(UpdateOperation::PointOperation(PointOperations::DeletePoints {
            ids: gone,
        }))
        .unwrap();
    let search = |q: [f32; 4], filter: Option<serde_json::Value>, with: bool| {
        shard
            .query(QueryRequest {
                prefetches: vec![],
                query: Some(ScoringQuery::Vector(QueryEnum::Nearest(NamedQuery::new(
                    VectorInternal::Dense(q.to_vec()),
                    "d",
                )))),
                filter: filter.map(|f| serde_json::from_value::<Filter>(f).unwrap()),
                score_threshold: None,
                limit: 40,
                offset: 0,
                params: None,
                with_vector: WithVector::Bool(with),
                with_payload: WithPayloadInterface::Bool(with),
            })
            .unwrap()
            .into_iter()
            .map(|p| (p.id, p.score.to_bits(), p.version))
            .collect::<Vec<_>>()
    };
    for (n, q) in [[1.0, 3.0, 0.5, 2.0], [0.0, 1.0, 0.0, 0.0], [2.0, -1.0, 1.0, 0.0]]
        .into_iter()
        .enumerate()
    {
        for filter in [None, Some(json!({"must": [{"key": "k", "match": {"value": "a"}}]}))] {
            let bare = search(q, filter.clone(), false);
            assert_eq!(bare.len(), 40, "query {n}: a full answer");
            assert!(
                bare.iter().all(|(id, _, _)| match id {
                    PointId::NumId(i) => i % 7 != 0,
                    PointId::Uuid(_) => false,
                }),
                "query {n}: no deleted point"
            );
            assert_eq!(bare, search(q, filter, true), "query {n}");
        }
    }
}

/// Change 11: searches in a `sharing_filtered_points` scope answer what they answer alone
/// (the same points, scores and versions, in the same order), on a shard whose points were
/// rewritten and partly deleted: two vectors and two limits under one filter, another filter
/// between them, and no filter; the second search under an equal filter takes the first's
/// list of points (one per segment), and a scope's lists end with it.
pub(crate) fn searches_sharing_filtered_points_answer_as_alone() {
    let _switch = SwitchGuard(in_memory_appendable_indexes());
    set_in_memory_appendable_indexes(true);
    let dir = TempDir::new("share");
    let shard = load(&dir.0, false);
    for round in 0..3 {
        write_round(&shard, round);
    }
    let gone: Vec<PointId> = (0..POINTS).filter(|i| i % 7 == 0).map(PointId::NumId).collect();
    shard
        .update(UpdateOperation::PointOperation(PointOperations::DeletePoints {
            ids: gone,
        }))
        .unwrap();
    let search = |q: [f32; 4], filter: Option<&serde_json::Value>, limit: usize| {
        shard
            .query(QueryRequest {
                prefetches: vec![],
                query: Some(ScoringQuery::Vector(QueryEnum::Nearest(NamedQuery::new(
                    VectorInternal::Dense(q.to_vec()),
                    "d",
                )))),
                filter: filter.map(|f| serde_json::from_value::<Filter>(f.clone()).unwrap()),
                score_threshold: None,
                limit,
                offset: 0,
                params: None,
                with_vector: WithVector::Bool(false),
                with_payload: WithPayloadInterface::Bool(false),
            })
            .unwrap()
            .into_iter()
            .map(|p| (p.id, p.score.to_bits(), p.version))
            .collect::<Vec<_>>()
    };
    let a = json!({"must": [{"key": "k", "match": {"value": "a"}}, {"key": "b", "match": {"value": true}}]});
    let small = json!({"must": [{"key": "n", "range": {"lt": 1000}}]});
    let asks: Vec<([f32; 4], Option<&serde_json::Value>, usize)> = vec![
        ([1.0, 3.0, 0.5, 2.0], Some(&a), 10),
        ([0.0, 1.0, 0.0, 0.0], Some(&small), 10),
        ([2.0, -1.0, 1.0, 0.0], Some(&a), 10),
        ([2.0, -1.0, 1.0, 0.0], Some(&a), 40),
        ([2.0, -1.0, 1.0, 0.0], None, 40),
        ([0.0, 1.0, 0.0, 0.0], Some(&small), 40),
    ];
    let alone: Vec<_> = asks.iter().map(|&(q, f, l)| search(q, f, l)).collect();
    assert!(alone.iter().all(|a| !a.is_empty()), "every search finds points");
    let before = shared_filtered_hits();
    let shared: Vec<_> = sharing_filtered_points(|| {
        asks.iter().map(|&(q, f, l)| search(q, f, l)).collect()
    });
    let taken = shared_filtered_hits() - before;
    assert_eq!(shared, alone, "searches sharing their filters' points");
    // Filter `a` is asked three times and `small` twice: every later ask of each segment's
    // list is taken (the shard has at least one segment).
    assert!(taken >= 3, "lists taken: {taken}");
    assert_eq!(taken % 3, 0, "three later asks per segment: {taken}");
    let after = shared_filtered_hits();
    search([1.0, 3.0, 0.5, 2.0], Some(&a), 10);
    assert_eq!(shared_filtered_hits(), after, "the lists end with the scope");
}
