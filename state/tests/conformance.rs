//! One conformance suite, run against the in-memory twin and RocksDB.

use kledger_processors::{Head, ids};
use kledger_schemas::avro::{KnownSchemas, encode_single_object};
use kledger_schemas::{Commit, CommitOp};
use kledger_state::*;

fn suite(store: &dyn StateStore) {
    basic_reads_and_writes(store);
    overlay_merges_pending_writes(store);
    fold_applies_replays_and_refuses_forks(store);
    drop_partition_removes_only_that_partition(store);
}

type Entry<'a> = (Cf, &'a [u8], Option<&'a [u8]>);

fn w(entries: &[Entry<'_>]) -> WriteSet {
    let mut ws = WriteSet::default();
    for (cf, k, v) in entries {
        match v {
            Some(v) => ws.put(*cf, k.to_vec(), v.to_vec()),
            None => ws.delete(*cf, k.to_vec()),
        }
    }
    ws
}

fn basic_reads_and_writes(s: &dyn StateStore) {
    s.write(&w(&[
        (Cf::Rows, b"\x00\x00\x00\x09a1", Some(b"one")),
        (Cf::Rows, b"\x00\x00\x00\x09a2", Some(b"two")),
        (Cf::Rows, b"\x00\x00\x00\x09b1", Some(b"three")),
        (Cf::Heads, b"\x00\x00\x00\x09a1", Some(b"head")),
    ]))
    .unwrap();
    assert_eq!(
        s.get(Cf::Rows, b"\x00\x00\x00\x09a2").unwrap().as_deref(),
        Some(&b"two"[..])
    );
    assert_eq!(
        s.get(Cf::Slots, b"\x00\x00\x00\x09a2").unwrap(),
        None,
        "column families are separate"
    );
    let scan = s.scan(Cf::Rows, b"\x00\x00\x00\x09a", 10).unwrap();
    assert_eq!(scan.len(), 2);
    assert_eq!(scan[0].0, b"\x00\x00\x00\x09a1");
    assert_eq!(
        s.scan(Cf::Rows, b"\x00\x00\x00\x09", 2).unwrap().len(),
        2,
        "limit holds"
    );
    s.write(&w(&[(Cf::Rows, b"\x00\x00\x00\x09a1", None)]))
        .unwrap();
    assert_eq!(s.get(Cf::Rows, b"\x00\x00\x00\x09a1").unwrap(), None);
    let mut seen = Vec::new();
    s.for_each(Cf::Rows, &mut |k, _| {
        seen.push(k.to_vec());
        Ok(())
    })
    .unwrap();
    assert!(
        seen.windows(2).all(|p| p[0] < p[1]),
        "for_each visits in key order"
    );
}

fn overlay_merges_pending_writes(s: &dyn StateStore) {
    s.write(&w(&[
        (Cf::Slots, b"\x00\x00\x00\x08k1", Some(b"base1")),
        (Cf::Slots, b"\x00\x00\x00\x08k2", Some(b"base2")),
        (Cf::Slots, b"\x00\x00\x00\x08k3", Some(b"base3")),
    ]))
    .unwrap();
    let mut o = Overlay::new(s);
    o.pending_mut()
        .delete(Cf::Slots, b"\x00\x00\x00\x08k1".to_vec());
    o.pending_mut()
        .put(Cf::Slots, b"\x00\x00\x00\x08k2".to_vec(), b"new2".to_vec());
    o.pending_mut()
        .put(Cf::Slots, b"\x00\x00\x00\x08k0".to_vec(), b"new0".to_vec());
    assert_eq!(o.get(Cf::Slots, b"\x00\x00\x00\x08k1").unwrap(), None);
    assert_eq!(
        o.get(Cf::Slots, b"\x00\x00\x00\x08k2").unwrap().as_deref(),
        Some(&b"new2"[..])
    );
    assert_eq!(
        o.get(Cf::Slots, b"\x00\x00\x00\x08k3").unwrap().as_deref(),
        Some(&b"base3"[..])
    );
    let scan = o.scan(Cf::Slots, b"\x00\x00\x00\x08", 3).unwrap();
    let keys: Vec<&[u8]> = scan.iter().map(|(k, _)| k.as_slice()).collect();
    assert_eq!(
        keys,
        vec![
            &b"\x00\x00\x00\x08k0"[..],
            b"\x00\x00\x00\x08k2",
            b"\x00\x00\x00\x08k3"
        ]
    );
    // Nothing reached the store until the writes are applied.
    assert_eq!(s.get(Cf::Slots, b"\x00\x00\x00\x08k0").unwrap(), None);
    s.write(&o.into_writes()).unwrap();
    assert_eq!(
        s.get(Cf::Slots, b"\x00\x00\x00\x08k0").unwrap().as_deref(),
        Some(&b"new0"[..])
    );
}

fn commit(account: &str, seq: i64, prev: &str, action: &str) -> Commit {
    let mut c = Commit {
        account_id: account.into(),
        commit_seq: seq,
        prev_hash: prev.into(),
        head_hash: String::new(),
        action_id: action.into(),
        intent_digest: "ab".repeat(32),
        recorded_at: 1_000 + seq,
        intent_partition: 3,
        intent_offset: seq,
        generation: 0,
        rebased: false,
        ops: Vec::<CommitOp>::new(),
        continues: false,
        keyed: false,
    };
    c.head_hash = ids::head_hash(&mut c);
    c
}

fn fold_applies_replays_and_refuses_forks(s: &dyn StateStore) {
    let acct = "t_x/user/u_1";
    let c1 = commit(acct, 1, ids::GENESIS_HASH, "a1");
    let c2 = commit(acct, 2, &c1.head_hash, "a2");
    let mut o = Overlay::new(s);
    assert_eq!(fold(&mut o, &c1, 3).unwrap(), Folded::Applied);
    assert_eq!(fold(&mut o, &c2, 3).unwrap(), Folded::Applied);
    s.write(&o.into_writes()).unwrap();
    let mut o = Overlay::new(s);
    // A replayed commit is a no-op.
    assert_eq!(fold(&mut o, &c1, 3).unwrap(), Folded::AlreadyApplied);
    assert!(o.pending().is_empty());
    // The same seq with another hash is a fork.
    let forged = commit(acct, 2, &c1.head_hash, "another");
    assert!(matches!(
        fold(&mut o, &forged, 3),
        Err(StateError::Fork { seq: 2, .. })
    ));
    // A next commit that does not chain from the head is a fork too.
    let unchained = commit(acct, 3, ids::GENESIS_HASH, "a3");
    assert!(matches!(
        fold(&mut o, &unchained, 3),
        Err(StateError::Fork { seq: 3, .. })
    ));
    // A gap is refused.
    let gap = commit(acct, 5, &c2.head_hash, "a5");
    assert!(matches!(
        fold(&mut o, &gap, 3),
        Err(StateError::Gap {
            head: 2,
            seq: 5,
            ..
        })
    ));
    // Restore checks the head hash against the content and the partition.
    let known = KnownSchemas::released();
    let c3 = commit(acct, 3, &c2.head_hash, "a3");
    let mut tampered = c3.clone();
    tampered.recorded_at += 1;
    assert!(matches!(
        restore_record(&mut o, 3, 7, &encode_single_object(&tampered), &known),
        Err(StateError::Fork { .. })
    ));
    assert!(matches!(
        restore_record(&mut o, 4, 7, &encode_single_object(&c3), &known),
        Err(StateError::Corrupt(_))
    ));
    assert_eq!(
        restore_record(&mut o, 3, 7, &encode_single_object(&c3), &known).unwrap(),
        Folded::Applied
    );
    s.write(&o.into_writes()).unwrap();
    assert_eq!(next_offset(s, 3, keys::META_OUTBOX_NEXT).unwrap(), 8);
    let head: Head = kledger_state::fold::head(s, 3, acct).unwrap();
    assert_eq!((head.seq, head.hash.as_str()), (3, c3.head_hash.as_str()));
    // The head keeps the intent offset of its last commit.
    assert_eq!(head.intent_offset, c3.intent_offset);
}

#[test]
fn a_head_keeps_its_last_intent_offset_and_old_heads_still_read() {
    let h = Head {
        seq: 9,
        hash: "cd".repeat(32),
        generation: 2,
        intent_offset: 1_234,
    };
    let v = keys::head_value(&h).unwrap();
    assert_eq!(v.len(), keys::HEAD_VALUE_LEN);
    assert_eq!(keys::parse_head(&v).unwrap(), h);
    // A head stored before the offset was kept: the offset reads as unknown (-1).
    let old = keys::parse_head(&v[..48]).unwrap();
    assert_eq!((old.seq, old.generation, old.intent_offset), (9, 2, -1));
    assert_eq!(old.hash, h.hash);
    assert!(keys::parse_head(&v[..40]).is_err());
}

fn drop_partition_removes_only_that_partition(s: &dyn StateStore) {
    let before = digest(s).unwrap();
    s.write(&w(&[
        (Cf::Rows, b"\x00\x00\x00\x0bz", Some(b"p11")),
        (Cf::Meta, b"\x00\x00\x00\x0bm", Some(b"p11")),
        (Cf::Rows, b"\x00\x00\x00\x0cz", Some(b"p12")),
    ]))
    .unwrap();
    s.drop_partition(11).unwrap();
    assert_eq!(s.get(Cf::Rows, b"\x00\x00\x00\x0bz").unwrap(), None);
    assert_eq!(s.get(Cf::Meta, b"\x00\x00\x00\x0bm").unwrap(), None);
    assert!(s.get(Cf::Rows, b"\x00\x00\x00\x0cz").unwrap().is_some());
    s.drop_partition(12).unwrap();
    assert_eq!(digest(s).unwrap(), before);
}

#[test]
fn memory_store_conforms() {
    suite(&MemoryStore::new());
}

#[test]
fn rocks_store_conforms() {
    let dir = tempfile::tempdir().unwrap();
    suite(&RocksStore::open(dir.path(), &RocksConfig::default()).unwrap());
}

#[test]
fn both_stores_give_the_same_digest() {
    let dir = tempfile::tempdir().unwrap();
    let rocks = RocksStore::open(dir.path(), &RocksConfig::default()).unwrap();
    let memory = MemoryStore::new();
    suite(&rocks);
    suite(&memory);
    assert_eq!(digest(&rocks).unwrap(), digest(&memory).unwrap());
}

#[test]
fn rocks_state_survives_reopen_and_checkpoints() {
    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("ckpt");
    let db = dir.path().join("db");
    let want = {
        let s = RocksStore::open(&db, &RocksConfig::default()).unwrap();
        suite(&s);
        s.checkpoint(&ckpt).unwrap();
        assert!(s.sizes().is_ok());
        digest(&s).unwrap()
    };
    assert_eq!(
        digest(&RocksStore::open(&db, &RocksConfig::default()).unwrap()).unwrap(),
        want
    );
    assert_eq!(
        digest(&RocksStore::open(&ckpt, &RocksConfig::default()).unwrap()).unwrap(),
        want
    );
}

/// Extending a write set with another keeps every entry of both, the later write of a key
/// winning, whichever side is larger or empty; `family` walks one column family in key order.
#[test]
fn extending_a_write_set_keeps_both_and_the_later_write_wins() {
    let first = w(&[
        (Cf::Rows, b"a", Some(b"1")),
        (Cf::Rows, b"c", Some(b"3")),
        (Cf::Meta, b"m", Some(b"old")),
    ]);
    let second = w(&[
        (Cf::Rows, b"b", Some(b"2")),
        (Cf::Rows, b"c", None),
        (Cf::Meta, b"m", Some(b"new")),
        (Cf::Heads, b"h", Some(b"x")),
    ]);
    let mut merged = first.clone();
    merged.extend(second.clone());
    let want = w(&[
        (Cf::Rows, b"a", Some(b"1")),
        (Cf::Rows, b"b", Some(b"2")),
        (Cf::Rows, b"c", None),
        (Cf::Meta, b"m", Some(b"new")),
        (Cf::Heads, b"h", Some(b"x")),
    ]);
    assert_eq!(merged, want);
    let mut from_empty = WriteSet::default();
    from_empty.extend(first.clone());
    from_empty.extend(second);
    assert_eq!(from_empty, want);
    let mut onto_empty = first.clone();
    onto_empty.extend(WriteSet::default());
    assert_eq!(onto_empty, first);
    let rows: Vec<_> = want.family(Cf::Rows).collect();
    assert_eq!(
        rows,
        vec![
            (&b"a"[..], Some(&b"1"[..])),
            (&b"b"[..], Some(&b"2"[..])),
            (&b"c"[..], None)
        ]
    );
    assert_eq!(want.family(Cf::Slots).count(), 0);
}
