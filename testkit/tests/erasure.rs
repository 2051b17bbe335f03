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
    let hex: String = d.iter().map(|b| format!("{b:02x}")).collect();
    vec![marker.as_bytes().to_vec(), d.to_vec(), hex.into_bytes()]
}

/// A fact whose content, tags, sensitivity labels, evidence quote, locator heading and
/// evidence checksum (an episodic message's: `sha256:` and the hex of its text) carry `m`
/// (the evidence's ids are lineage, which a tombstone keeps: they carry none).
fn marked_fact(m: &str) -> AssertOp {
    let mut e = evidence("msg_1", Some(&format!("quoted {m}-quote")));
    e.locator.heading = Some(format!("{m}-heading"));
    let hex: String = Sha256::digest(m.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
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
}
