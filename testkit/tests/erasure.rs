//! A purge leaves no trace of the purged text in the local stores' files: after the batch that
//! purges is written, no byte of the state store's or the view store's directory (SST files,
//! write-ahead logs, everything) holds a purged marker or its SHA-256, while the rows of other
//! accounts and the account's unpurged rows stay, readable. Markers sit in every field a
//! tombstone empties (content, body, condition, tags, evidence quotes and locators; under rules
//! v3, the default, also sensitivity labels and evidence checksums, whose SHA-256 hex the scan
//! looks for), in rows purged by row, by subject entity and by whole account. Real RocksDB,
//! with its write-ahead log on; each marker is first checked to be in the files, so the check
//! can fail. Run under rules v3, whose rows are stored in the clear (a ledger started before
//! v4 keeps them so): under v4 no marker reaches the files in the clear at all, and what a
//! purge erases there is the data key (`testkit/tests/shredding.rs`).

use kledger_processors::{Limits, RecordMeta};
use kledger_schemas::*;
use kledger_state::{Applier, RocksConfig, RocksStore, StateStore, ViewBatch, ViewStore};
use kledger_testkit::build::{document, evidence, fact, intent, purge, third_party, trigger};
use kledger_testkit::residue::files_containing;
use sha2::{Digest, Sha256};

const A: &str = "t_acme/user/u_a";
const B: &str = "t_acme/user/u_b";
const C: &str = "t_acme/user/u_c";
const NOW: i64 = 1_767_225_600_000;

/// The needles of one marker: its text, its SHA-256 as bytes and as hex.
fn needles(marker: &str) -> Vec<Vec<u8>> {
    let d = Sha256::digest(marker.as_bytes());
    let hex = kledger_processors::ids::to_hex(&d);
    vec![marker.as_bytes().to_vec(), d.to_vec(), hex.into_bytes()]
}

/// A fact whose content, tags, sensitivity labels, evidence quote, locator heading and
/// evidence checksum (an episodic message's: `sha256:` and the hex of its text) carry `m`
/// (the evidence's ids are lineage, which a tombstone keeps: they carry none).
fn marked_fact(m: &str) -> AssertOp {
    let mut e = evidence("msg_1", Some(&format!("quoted {m}-quote")));
    e.locator.heading = Some(format!("{m}-heading"));
    let hex = kledger_processors::ids::to_hex(&Sha256::digest(m.as_bytes()));
    e.checksum = Some(format!("sha256:{hex}"));
    let mut op = AssertOp {
        tags: vec![format!("{m}-tag")],
        evidence: vec![e],
        ..fact(&format!("{m} the fact"))
    };
    op.sensitivity.labels = vec![format!("{m}-label")];
    op
}

struct Stores {
    dir: tempfile::TempDir,
    state: RocksStore,
    views: ViewStore,
    offset: i64,
}

impl Stores {
    /// Decides `intents` in one batch, writes state, folds the commits into the view store.
    fn write(&mut self, intents: Vec<Intent>) -> Vec<Commit> {
        let limits = Limits {
            rules: kledger_processors::Rules::V3,
            ..Limits::default()
        };
        let mut applier = Applier::new(&self.state, limits);
        let mut commits = Vec::new();
        for i in intents {
            let meta = RecordMeta {
                timestamp: NOW + self.offset,
                partition: 0,
                offset: self.offset,
            };
            self.offset += 1;
            let d = applier.apply(&i, &meta).unwrap();
            assert_eq!(d.outcome(), Outcome::Committed, "{:?}", d.receipt);
            commits.extend(d.commits);
        }
        self.state.write(&applier.into_writes()).unwrap();
        let mut batch = ViewBatch::default();
        for (n, c) in commits.iter().enumerate() {
            self.views
                .fold(&mut batch, c, 0, self.offset * 100 + n as i64)
                .unwrap();
        }
        self.views.write(batch).unwrap();
        // A write that purged starts an erasure run on a thread of its own (the first at
        // once; later ones at most every `ERASE_INTERVAL`): wait for it.
        self.state.erasures().join_running();
        self.views.erasures().join_running();
        commits
    }

    fn hits(&self, marker: &str) -> Vec<std::path::PathBuf> {
        needles(marker)
            .iter()
            .flat_map(|n| files_containing(self.dir.path(), n))
            .collect()
    }
}

#[test]
fn purged_text_leaves_the_state_and_view_store_files() {
    let dir = tempfile::tempdir().unwrap();
    let state = RocksStore::open(
        &dir.path().join("state"),
        &RocksConfig {
            wal: true,
            ..RocksConfig::default()
        },
    )
    .unwrap();
    let views = ViewStore::open(&dir.path().join("views"), 8 << 20).unwrap();
    let mut s = Stores {
        dir,
        state,
        views,
        offset: 0,
    };
    let w = WriteReason::DirectUserStatement;
    let created = s.write(vec![
        intent(A, "a1", w, 0, vec![Op::Assert(marked_fact("PURGED-ROW"))]),
        intent(
            A,
            "a2",
            w,
            1,
            vec![Op::Assert(AssertOp {
                tags: vec!["PURGED-ENTITY-tag".into()],
                ..third_party("ent_x", "PURGED-ENTITY about the entity")
            })],
        ),
        intent(
            A,
            "a3",
            WriteReason::RecurringWorkflow,
            2,
            vec![Op::Assert(document(
                "PURGED-DOC playbook",
                "PURGED-DOC-body step one",
            ))],
        ),
        intent(A, "a4", w, 3, vec![Op::Assert(marked_fact("KEPT-A"))]),
        intent(
            B,
            "b1",
            WriteReason::StandingTrigger,
            0,
            vec![Op::Assert(trigger(
                "PURGED-ACCOUNT-trigger",
                &[("when", "PURGED-ACCOUNT-condition")],
            ))],
        ),
        intent(
            B,
            "b2",
            w,
            1,
            vec![Op::Assert(marked_fact("PURGED-ACCOUNT-fact"))],
        ),
        intent(C, "c1", w, 0, vec![Op::Assert(marked_fact("KEPT-C"))]),
    ]);
    // On disk: flushed SST files as well as the logs.
    s.state.flush().unwrap();
    let purged = [
        "PURGED-ROW",
        "PURGED-ROW-tag",
        "PURGED-ROW-quote",
        "PURGED-ROW-heading",
        "PURGED-ROW-label",
        "PURGED-ENTITY about the entity",
        "PURGED-ENTITY-tag",
        "PURGED-DOC playbook",
        "PURGED-DOC-body step one",
        "PURGED-ACCOUNT-trigger",
        "PURGED-ACCOUNT-condition",
        "PURGED-ACCOUNT-fact",
    ];
    for m in purged.iter().chain(&["KEPT-A", "KEPT-C"]) {
        assert!(
            !files_containing(s.dir.path(), m.as_bytes()).is_empty(),
            "{m} written"
        );
    }
    let row_of = |action: &str| {
        created.iter().find(|c| c.action_id == action).unwrap().ops[0]
            .row
            .clone()
    };
    let (row, doc) = (row_of("a1"), row_of("a3"));
    s.write(vec![
        intent(A, "p1", w, 4, vec![purge(&row, "erasure request")]),
        intent(
            A,
            "p2",
            w,
            5,
            vec![Op::Purge(PurgeOp {
                entity_id: Some("ent_x".into()),
                reason: "erasure request".into(),
                ..PurgeOp::default()
            })],
        ),
        intent(A, "p3", w, 6, vec![purge(&doc, "erasure request")]),
        intent(
            B,
            "p4",
            w,
            2,
            vec![Op::Purge(PurgeOp {
                whole_account: true,
                reason: "erasure request".into(),
                ..PurgeOp::default()
            })],
        ),
    ]);
    for m in purged {
        let hits = s.hits(m);
        assert!(hits.is_empty(), "{m} (or its SHA-256) still in {hits:?}");
    }
    // Everything else stays, readable.
    for (acct, action, m) in [(A, "a4", "KEPT-A"), (C, "c1", "KEPT-C")] {
        let id = row_of(action).memory_id;
        let row = s.views.row(acct, &id).unwrap().expect("kept row");
        assert_eq!(row.content, format!("{m} the fact"));
        assert_eq!(row.status, Status::Active);
        assert!(
            !files_containing(s.dir.path(), m.as_bytes()).is_empty(),
            "{m} on disk"
        );
    }
    // The batched read search hydrates with answers as the point reads do: kept rows opened
    // and active, purged ones without their text, unknown ids absent.
    let ids: Vec<String> = created
        .iter()
        .flat_map(|c| c.ops.iter().map(|o| o.row.memory_id.clone()))
        .chain(["mem_unknown".to_owned()])
        .collect();
    let ids: Vec<&str> = ids.iter().map(String::as_str).collect();
    for (acct, any_active) in [(A, true), (B, false), (C, true)] {
        let batched = s.views.rows_of(acct, &ids).unwrap();
        let each: Vec<_> = ids
            .iter()
            .map(|id| s.views.row(acct, id).unwrap())
            .collect();
        assert_eq!(batched, each, "{acct}");
        let present: Vec<&Row> = batched.iter().flatten().collect();
        assert_eq!(
            present.iter().any(|r| r.status == Status::Active),
            any_active,
            "{acct}"
        );
        assert!(
            present.iter().all(|r| !r.content.contains("PURGED")),
            "{acct}"
        );
        assert!(batched.last().unwrap().is_none());
    }
}

/// One decision sealed twice: the processor's key and an old owner's (after a rebalance, the
/// old owner still decided the same intent and wrote its own key; rules v4 hashes both commits
/// alike, so the fold keeps one).
mod second_sealing {
    use super::*;
    use kledger_processors::seal;
    use kledger_state::keys::{self, key_record_key, key_value};
    use kledger_state::{Cf, MemoryStore, Overlay, StateRead, fold, restore_key_record};

    /// A key record an old owner wrote for row `memory_id` (its own random key and id).
    fn old_owners_key(memory_id: &str, n: u8) -> (Vec<u8>, Vec<u8>, String) {
        let id = seal::key_id(memory_id, &[n; 8]);
        (key_record_key(A, &id), key_value(&[n; 32], memory_id), id)
    }

    fn key_state(store: &MemoryStore, id: &str) -> Option<Vec<u8>> {
        store
            .get(Cf::Keys, &keys::child(0, A, id.as_bytes()).unwrap())
            .unwrap()
    }

    fn queued(store: &MemoryStore) -> Vec<String> {
        store
            .scan(Cf::Shred, &keys::partition(0), 1_000)
            .unwrap()
            .into_iter()
            .map(|(k, _)| String::from_utf8_lossy(keys::split_child(&k).unwrap().2).into_owned())
            .collect()
    }

    fn apply(store: &MemoryStore, offset: i64, intents: Vec<Intent>) -> Vec<Commit> {
        let mut applier = Applier::new(store, Limits::default());
        let mut commits = Vec::new();
        for (n, i) in intents.into_iter().enumerate() {
            let meta = RecordMeta {
                timestamp: NOW + offset,
                partition: 0,
                offset: offset + n as i64,
            };
            let d = applier.apply(&i, &meta).unwrap();
            assert_eq!(d.outcome(), Outcome::Committed, "{:?}", d.receipt);
            commits.extend(d.commits);
        }
        store.write(&applier.into_writes()).unwrap();
        commits
    }

    fn read_key(store: &MemoryStore, offset: i64, (k, v, _): &(Vec<u8>, Vec<u8>, String)) {
        let mut o = Overlay::new(store);
        restore_key_record(&mut o, 0, offset, k, Some(v)).unwrap();
        store.write(&o.into_writes()).unwrap();
    }

    #[test]
    fn a_purge_destroys_every_key_its_row_was_sealed_under() {
        let store = MemoryStore::default();
        let w = WriteReason::DirectUserStatement;
        let created = apply(
            &store,
            0,
            vec![
                intent(A, "a1", w, 0, vec![Op::Assert(fact("Lives in Kyiv"))]),
                intent(A, "a2", w, 1, vec![Op::Assert(fact("Works at Acme"))]),
                intent(A, "a3", w, 2, vec![Op::Assert(fact("Plays the cello"))]),
            ],
        );
        let rows: Vec<Row> = created.iter().map(|c| c.ops[0].row.clone()).collect();
        let own = |r: &Row| r.sealed.as_ref().unwrap().key_id.clone();
        for r in &rows {
            assert!(
                own(r).starts_with(&seal::key_row_tag(&r.memory_id)),
                "ids carry the row's tag"
            );
        }
        // The old owner's key of row 1 is read (a restore, or the processor's catch-up)
        // before the purge; a key under row 1's tag that names another row is not row 1's.
        let before = old_owners_key(&rows[0].memory_id, 7);
        read_key(&store, 10, &before);
        let (foreign_k, _, foreign_id) = old_owners_key(&rows[0].memory_id, 9);
        read_key(
            &store,
            11,
            &(
                foreign_k,
                key_value(&[9; 32], &rows[2].memory_id),
                foreign_id.clone(),
            ),
        );
        apply(
            &store,
            3,
            vec![intent(
                A,
                "p1",
                w,
                3,
                vec![purge(&rows[0], "erasure request")],
            )],
        );
        assert_eq!(
            key_state(&store, &own(&rows[0])),
            Some(Vec::new()),
            "the named key"
        );
        assert_eq!(
            key_state(&store, &before.2),
            Some(Vec::new()),
            "the old owner's key"
        );
        assert!(
            key_state(&store, &foreign_id).is_some_and(|v| !v.is_empty()),
            "another row's key stays"
        );
        let mut q = queued(&store);
        q.sort();
        let mut want = vec![own(&rows[0]), before.2.clone()];
        want.sort();
        assert_eq!(q, want, "both tombstones are queued for the keys topic");
        // Row 2 is purged first; the old owner's key for it is read afterwards: destroyed at
        // once, and queued.
        apply(
            &store,
            4,
            vec![intent(
                A,
                "p2",
                w,
                4,
                vec![purge(&rows[1], "erasure request")],
            )],
        );
        let after = old_owners_key(&rows[1].memory_id, 8);
        read_key(&store, 12, &after);
        assert_eq!(key_state(&store, &after.2), Some(Vec::new()));
        assert!(queued(&store).contains(&after.2));
        // Row 3 is not purged: its keys stay.
        assert!(key_state(&store, &own(&rows[2])).is_some_and(|v| !v.is_empty()));
    }

    #[test]
    fn a_restore_destroys_the_old_owners_key_too() {
        // What a new instance rebuilds from the topics: every key record (the processor's and
        // the old owner's), then the outbox.
        let first = MemoryStore::default();
        let w = WriteReason::DirectUserStatement;
        let mut applier = Applier::new(&first, Limits::default());
        let meta = |offset| RecordMeta {
            timestamp: NOW + offset,
            partition: 0,
            offset,
        };
        let d = applier
            .apply(
                &intent(A, "a1", w, 0, vec![Op::Assert(fact("Lives in Kyiv"))]),
                &meta(0),
            )
            .unwrap();
        let row = d.commits[0].ops[0].row.clone();
        let mut outbox = d.commits.clone();
        let mut records: Vec<(Vec<u8>, Vec<u8>, String)> = d
            .new_keys
            .iter()
            .map(|(m, k)| (key_record_key(A, &k.id), key_value(&k.key, m), k.id.clone()))
            .collect();
        records.push(old_owners_key(&row.memory_id, 5));
        let p = applier
            .apply(
                &intent(A, "p1", w, 1, vec![purge(&row, "erasure request")]),
                &meta(1),
            )
            .unwrap();
        outbox.extend(p.commits);
        let restored = MemoryStore::default();
        for (n, r) in records.iter().enumerate() {
            read_key(&restored, n as i64, r);
        }
        let mut o = Overlay::new(&restored);
        for c in &outbox {
            fold(&mut o, c, 0).unwrap();
        }
        restored.write(&o.into_writes()).unwrap();
        for (_, _, id) in &records {
            assert_eq!(
                key_state(&restored, id),
                Some(Vec::new()),
                "key {id} destroyed"
            );
        }
        assert_eq!(queued(&restored).len(), 2);
    }
}
