//! The embedded engine's payload indexes of appendable segments (vendored engine change 4,
//! `vendor/qdrant-edge/KLEDGER-PATCH.md`): kept in memory and rebuilt from the payloads when a
//! shard loads, and a collection written by an engine that kept them on disk (upstream, or an
//! older kledger) opens right, and back. The engine's switch is process-wide, so this test has a
//! binary of its own, and its tests take [`SWITCH`] in turn. Also: a collection written
//! build-only (change 6: the in-memory indexes are left alone until it is opened again) answers
//! filters right once reopened, and does not affect another collection written beside it; and
//! the checks of the engine's patched internals that need private access (the flag buffer, the
//! payload JSON writer); and a purge's points erased from the collection's files.

use kledger_processors::embed::HashEmbedder;
use kledger_topology::vector::edge::{EdgeIndex, EdgeOptions};
use kledger_topology::vector::{Point, VectorIndex};
use serde_json::{Value, json};
use uuid::Uuid;

const NAME: &str = "cm_text_16_v1";

/// Held by every test that opens a collection (the engine's in-memory switch is process-wide).
static SWITCH: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn switch() -> std::sync::MutexGuard<'static, ()> {
    SWITCH
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A point's indexed fields, as the test models them.
#[derive(Debug, Clone, PartialEq)]
struct Fields {
    owner_id: String,
    kind: &'static str,
    indexed: bool,
    commit_seq: i64,
}

fn fields(i: usize, round: i64) -> Fields {
    Fields {
        owner_id: format!("u_{}", i % 4),
        kind: ["fact", "preference", "event"][i % 3],
        indexed: !i.is_multiple_of(5),
        commit_seq: i as i64 * 10 + round,
    }
}

fn id(i: usize) -> Uuid {
    Uuid::from_u128(0x0190_0000_0000_7000_8000_0000_0000_0000 + i as u128 * 7919)
}

fn point(i: usize, f: &Fields) -> Point {
    let e = HashEmbedder { dim: 16 }.embed(&format!("note {i} {}", f.kind));
    let mut payload = serde_json::Map::new();
    payload.insert("owner_id".into(), f.owner_id.clone().into());
    payload.insert("kind".into(), f.kind.into());
    payload.insert("indexed".into(), f.indexed.into());
    payload.insert("commit_seq".into(), f.commit_seq.into());
    // Strings the engine's payload writer must escape (change 5), and some it must not.
    payload.insert(
        "note".into(),
        format!("line {i}\n\"quoted\" \\ tab\t \u{1} é ☃ \u{7f}").into(),
    );
    payload.insert(
        "tags".into(),
        json!(["a\"b", "", "plain", {"k": [1.5, null, true]}]),
    );
    Point {
        id: id(i),
        dense: e.dense,
        sparse: e.sparse,
        payload,
    }
}

/// Filters over a keyword, a keyword set, a bool and an integer (match and range) index, each
/// with the test's own evaluation.
#[allow(clippy::type_complexity)]
fn filters() -> Vec<(Value, Box<dyn Fn(&Fields) -> bool>)> {
    vec![
        (
            json!({"must": [{"key": "owner_id", "match": {"value": "u_1"}}]}),
            Box::new(|f| f.owner_id == "u_1"),
        ),
        (
            json!({"must": [{"key": "kind", "match": {"any": ["fact", "event"]}}]}),
            Box::new(|f| f.kind != "preference"),
        ),
        (
            json!({"must": [{"key": "indexed", "match": {"value": true}}]}),
            Box::new(|f| f.indexed),
        ),
        (
            json!({"must": [{"key": "commit_seq", "range": {"gte": 500, "lt": 2500}}]}),
            Box::new(|f| (500..2500).contains(&f.commit_seq)),
        ),
        (
            json!({
                "must": [{"key": "commit_seq", "match": {"value": 1201}}],
            }),
            Box::new(|f| f.commit_seq == 1201),
        ),
        (
            json!({
                "must": [{"key": "owner_id", "match": {"value": "u_2"}}],
                "must_not": [{"key": "kind", "match": {"value": "fact"}}],
            }),
            Box::new(|f| f.owner_id == "u_2" && f.kind != "fact"),
        ),
    ]
}

/// Every filter's count on `index` equals the count over `live`, and some filters match.
fn assert_counts(index: &EdgeIndex, live: &[Option<Fields>], when: &str) {
    let mut matched = 0;
    for (filter, admits) in filters() {
        let want = live.iter().flatten().filter(|f| admits(f)).count();
        assert_eq!(index.count(&filter).unwrap(), want, "{when}: {filter}");
        matched += usize::from(want > 0);
    }
    assert!(matched >= 5, "{when}: the filters match too little");
}

/// The keyword and integer index directories (`<field>-map`, `<field>-numeric`) under `root`.
fn index_dirs(root: &std::path::Path) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if name.ends_with("-map") || name.ends_with("-numeric") {
                    found.push(name);
                }
                stack.push(path);
            }
        }
    }
    found.sort();
    found
}

#[test]
fn appendable_indexes_are_rebuilt_from_the_payloads_and_either_layout_opens() {
    let _switch = switch();
    let dir = tempfile::tempdir().unwrap();
    let open = |in_memory_indexes: bool| {
        EdgeIndex::open_with(
            dir.path(),
            NAME,
            16,
            EdgeOptions {
                shards: 2,
                in_memory_indexes,
                ..Default::default()
            },
        )
        .unwrap()
    };
    let mut live: Vec<Option<Fields>> = (0..400).map(|i| Some(fields(i, 0))).collect();
    let write = |index: &EdgeIndex, live: &mut [Option<Fields>], round: i64| {
        let (upserts, deletes) = round_writes(live, round);
        index.write_batch(upserts, &deletes).unwrap();
    };

    // Upstream's layout: every appendable index has its store on disk.
    let index = open(false);
    let all: Vec<Point> = (0..400).map(|i| point(i, &fields(i, 0))).collect();
    index.write_batch(all, &[]).unwrap();
    write(&index, &mut live, 1);
    assert_counts(&index, &live, "on disk");
    // Payloads come back as written, escapes and all.
    let scanned: std::collections::BTreeMap<Uuid, _> = index.scan().unwrap().into_iter().collect();
    for (i, f) in live.iter().enumerate() {
        if let Some(f) = f {
            assert_eq!(scanned[&id(i)], point(i, f).payload, "point {i}");
        }
    }
    let persisted = index_dirs(dir.path());
    assert!(
        persisted.iter().any(|d| d.ends_with("-numeric")) && persisted.len() >= 4,
        "{persisted:?}"
    );
    drop(index);

    // In memory: the stale stores are gone, the indexes are rebuilt from the payloads, and they
    // stay right through rewrites, deletes and reopens.
    let index = open(true);
    assert_eq!(index_dirs(dir.path()), Vec::<String>::new());
    assert_counts(&index, &live, "in memory, after the switch");
    write(&index, &mut live, 2);
    assert_counts(&index, &live, "in memory, written");
    drop(index);
    let index = open(true);
    assert_counts(&index, &live, "in memory, reopened");
    write(&index, &mut live, 3);
    assert_counts(&index, &live, "in memory, reopened and written");
    assert_eq!(index_dirs(dir.path()), Vec::<String>::new());
    let scanned = index.scan().unwrap();
    drop(index);

    // Back on disk: the missing stores are rebuilt by upstream's path.
    let index = open(false);
    assert_counts(&index, &live, "on disk again");
    assert_eq!(index.scan().unwrap(), scanned);
    assert!(!index_dirs(dir.path()).is_empty());
}

/// Round `round`'s writes over `live` (rewrites every third point, deletes every seventh), with
/// `live` updated to match.
fn round_writes(live: &mut [Option<Fields>], round: i64) -> (Vec<Point>, Vec<Uuid>) {
    let mut upserts = Vec::new();
    let mut deletes = Vec::new();
    for (i, slot) in live.iter_mut().enumerate() {
        if i % 7 == usize::try_from(round).unwrap() % 7 {
            deletes.push(id(i));
            *slot = None;
        } else if i % 3 == usize::try_from(round).unwrap() % 3 {
            let f = fields(i + 1, round);
            upserts.push(point(i, &f));
            *slot = Some(f);
        }
    }
    (upserts, deletes)
}

/// A two-shard collection at `root` that seals every 120 points (the tests' 400 points cross
/// seals).
fn open_sealing(root: &std::path::Path, build_only: bool) -> EdgeIndex {
    EdgeIndex::open_with(
        root,
        NAME,
        16,
        EdgeOptions {
            shards: 2,
            seal_points: 120,
            build_only,
            ..Default::default()
        },
    )
    .unwrap()
}

#[test]
fn a_build_only_collection_answers_filters_once_reopened() {
    let _switch = switch();
    let dir = tempfile::tempdir().unwrap();
    let open = |sub: &str, build_only: bool| open_sealing(&dir.path().join(sub), build_only);
    let all = || {
        (0..400)
            .map(|i| point(i, &fields(i, 0)))
            .collect::<Vec<_>>()
    };
    let mut live: Vec<Option<Fields>> = (0..400).map(|i| Some(fields(i, 0))).collect();

    // The engine's deferral itself: writes leave the keyword and integer indexes alone (their
    // filters miss points), keep the bool index, and a reopen rebuilds the rest.
    let deferred = dir.path().join("deferred");
    qdrant_edge::defer_memory_only_indexes(&deferred, true);
    let index = open("deferred", false);
    index.write_batch(all(), &[]).unwrap();
    let (u, d) = round_writes(&mut live, 1);
    index.write_batch(u, &d).unwrap();
    let count = |index: &EdgeIndex, i: usize| {
        let (filter, admits) = filters().swap_remove(i);
        let want = live.iter().flatten().filter(|f| admits(f)).count();
        (index.count(&filter).unwrap(), want)
    };
    // filters(): 0 keyword, 2 bool, 3 integer range.
    for i in [0, 3] {
        let (got, want) = count(&index, i);
        assert!(
            got < want,
            "filter {i} saw deferred points: {got} of {want}"
        );
    }
    let (got, want) = count(&index, 2);
    assert_eq!(got, want, "the bool index is kept");
    assert!(index.segments().unwrap() > 2, "sealed while deferring");
    drop(index);
    qdrant_edge::defer_memory_only_indexes(&deferred, false);
    let index = open("deferred", false);
    assert_counts(&index, &live, "deferred, reopened");
    drop(index);

    // Through kledger's option: a build-only collection refuses filtered reads, a collection
    // served beside it is unaffected, and once reopened (no longer build-only, so later writes
    // index again) it answers like the served one.
    let mut live: Vec<Option<Fields>> = (0..400).map(|i| Some(fields(i, 0))).collect();
    let served = open("served", false);
    let built = open("built", true);
    for index in [&served, &built] {
        index.write_batch(all(), &[]).unwrap();
    }
    let (u, d) = round_writes(&mut live, 2);
    built.write_batch(u.clone(), &d).unwrap();
    served.write_batch(u, &d).unwrap();
    assert!(built.count(&filters()[0].0).is_err(), "build-only counts");
    assert_counts(&served, &live, "served beside a build-only collection");
    drop(built);
    let built = open("built", true);
    let (u, d) = round_writes(&mut live, 3);
    built.write_batch(u.clone(), &d).unwrap();
    served.write_batch(u, &d).unwrap();
    drop(built);
    let built = open("built", false);
    assert_counts(&built, &live, "build-only, reopened");
    let (u, d) = round_writes(&mut live, 4);
    built.write_batch(u.clone(), &d).unwrap();
    served.write_batch(u, &d).unwrap();
    assert_counts(&built, &live, "reopened and written");
    assert_counts(&served, &live, "served");
    assert_eq!(built.scan().unwrap(), served.scan().unwrap());
}

#[test]
fn payloads_are_stored_whole_across_seals_rewrites_and_reopens() {
    let _switch = switch();
    let dir = tempfile::tempdir().unwrap();
    let open = || open_sealing(&dir.path().join("c"), false);
    // Payloads with escapes and non-ASCII text (change 5's writer) through seals, rewrites and
    // deletes, read back as written, before and after a reopen.
    let index = open();
    let mut live: Vec<Option<Fields>> = (0..400).map(|i| Some(fields(i, 0))).collect();
    let all: Vec<Point> = (0..400).map(|i| point(i, &fields(i, 0))).collect();
    index.write_batch(all, &[]).unwrap();
    for round in 1..4 {
        let (u, d) = round_writes(&mut live, round);
        index.write_batch(u, &d).unwrap();
    }
    let check = |index: &EdgeIndex, when: &str| {
        assert_counts(index, &live, when);
        let scanned = index.scan().unwrap();
        assert_eq!(scanned.len(), live.iter().flatten().count(), "{when}");
        for (id, payload) in &scanned {
            let i = (0..live.len()).position(|i| self::id(i) == *id).unwrap();
            assert_eq!(
                *payload,
                point(i, live[i].as_ref().unwrap()).payload,
                "{when}"
            );
        }
    };
    check(&index, "written");
    drop(index);
    check(&open(), "reopened");
}

#[test]
fn the_patched_engine_internals_pass_their_checks() {
    // The fork's own checks (vendor/qdrant-edge/KLEDGER-PATCH.md): the sparse walk, the pending
    // flag buffer and the payload JSON writer against models (changes 1, 3, 5), and the shard
    // switches through `EdgeShard` (changes 2, 4, 6; they set the process-wide switch, hence the
    // lock).
    let _switch = switch();
    qdrant_edge::kledger_patch_self_checks();
}

/// A purge's points leave the engine's files: `erase_deleted` rewrites every segment that
/// holds a deleted point, so no byte of a deleted point's payload (a marker tag here, in an
/// earlier version of the point too) is left under the collection, in sealed and appendable
/// segments alike, while the other points stay, counted and readable, across a reopen.
#[test]
fn erased_points_leave_no_byte_in_the_collection_files() {
    use kledger_testkit::residue::{files_containing, scan};
    let _switch = switch();
    let dir = tempfile::tempdir().unwrap();
    let marker = |i: usize, v: usize| format!("ERASE-MARK-{i:04}-v{v}-zq");
    let marked = |i: usize, v: usize| {
        let mut p = point(i, &fields(i, 0));
        p.payload.insert("tags".into(), json!([marker(i, v)]));
        p
    };
    let index = open_sealing(dir.path(), false);
    index
        .write_batch((0..400).map(|i| marked(i, 0)).collect(), &[])
        .unwrap();
    // Every fifth point rewritten in place: its first payload is an earlier version.
    index
        .write_batch((0..400).step_by(5).map(|i| marked(i, 1)).collect(), &[])
        .unwrap();
    let gone: Vec<usize> = (0..400).filter(|i| i % 3 == 0).collect();
    let needles: Vec<String> = gone
        .iter()
        .flat_map(|&i| [marker(i, 0), marker(i, 1)])
        .collect();
    let needles: Vec<&[u8]> = needles.iter().map(|n| n.as_bytes()).collect();
    // Written: the current version of every point to delete is in the files (an earlier one
    // may already be gone with a segment the seal replaced).
    let before = scan(dir.path(), &needles);
    let missing: Vec<usize> = gone
        .iter()
        .enumerate()
        .filter(|(n, i)| !before.contains_key(&(2 * n + usize::from(*i % 5 == 0))))
        .map(|(_, i)| *i)
        .collect();
    assert!(
        missing.is_empty(),
        "not on disk once written: points {missing:?}"
    );
    let ids: Vec<Uuid> = gone.iter().map(|&i| id(i)).collect();
    index.write_batch(Vec::new(), &ids).unwrap();
    index.erase_deleted().unwrap();
    let left = scan(dir.path(), &needles);
    assert!(
        left.is_empty(),
        "deleted points' payloads still in the files: {left:?}"
    );
    let check = |index: &EdgeIndex, when: &str| {
        let scanned = index.scan().unwrap();
        assert_eq!(scanned.len(), 400 - gone.len(), "{when}");
        for (uuid, payload) in &scanned {
            let i = (0..400).position(|i| id(i) == *uuid).unwrap();
            let v = usize::from(i % 5 == 0);
            assert_eq!(payload["tags"], json!([marker(i, v)]), "{when}: point {i}");
        }
    };
    check(&index, "erased");
    drop(index);
    check(&open_sealing(dir.path(), false), "reopened");
    assert!(!files_containing(dir.path(), marker(1, 0).as_bytes()).is_empty());
}

/// A deleted or rewritten point's payload leaves the engine's files when the delete (or the
/// rewrite) is flushed, before any vacuum (vendor/qdrant-edge, change 8): a purge's tags are
/// gone when the vector sink folds it.
#[test]
fn deleted_payloads_leave_the_files_at_their_flush() {
    use kledger_testkit::residue::scan;
    let _switch = switch();
    let dir = tempfile::tempdir().unwrap();
    let marker = |i: usize, v: usize| format!("FLUSH-MARK-{i:04}-v{v}-zq");
    let marked = |i: usize, v: usize| {
        let mut p = point(i, &fields(i, 0));
        p.payload.insert("tags".into(), json!([marker(i, v)]));
        p
    };
    let index = open_sealing(dir.path(), false);
    index
        .write_batch((0..50).map(|i| marked(i, 0)).collect(), &[])
        .unwrap();
    index
        .write_batch((0..50).step_by(5).map(|i| marked(i, 1)).collect(), &[])
        .unwrap();
    let ids: Vec<Uuid> = (0..50).filter(|i| i % 3 == 0).map(id).collect();
    index.write_batch(Vec::new(), &ids).unwrap();
    let needles: Vec<String> = (0..50)
        .flat_map(|i| {
            let gone = i % 3 == 0;
            let rewritten = i % 5 == 0;
            let mut n = Vec::new();
            if gone || rewritten {
                n.push(marker(i, 0));
            }
            if gone && rewritten {
                n.push(marker(i, 1));
            }
            n
        })
        .collect();
    let bytes: Vec<&[u8]> = needles.iter().map(|n| n.as_bytes()).collect();
    let left = scan(dir.path(), &bytes);
    let named: Vec<&String> = left.keys().map(|k| &needles[*k]).collect();
    assert!(
        named.is_empty(),
        "freed payloads still in the files: {named:?}"
    );
    let kept = marker(1, 0);
    assert!(
        !scan(dir.path(), &[kept.as_bytes()]).is_empty(),
        "a live payload is there (the scan can see)"
    );
}
