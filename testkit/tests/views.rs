//! The view store: the read side's fold of the outbox agrees with the ledger's state, is
//! idempotent under repeated commits, refuses gaps, keeps history, erases history on purge and
//! files timelines in (time, source, id) order.

use kledger_processors::routing::partition_for;
use kledger_schemas::*;
use kledger_state::ViewStore;
use kledger_state::views::USER_ENTITY;
use kledger_testkit::build::{amend, fact, intent, plan, purge, slotted, third_party};
use kledger_testkit::{GenConfig, Generator, Ledger};

const ACCT: &str = "t_acme/user/u_1";
const NOW: i64 = 1_767_225_600_000;
const PARTITIONS: i32 = 4;

fn store() -> (tempfile::TempDir, ViewStore) {
    let dir = tempfile::tempdir().unwrap();
    let s = ViewStore::open(dir.path(), 8 << 20).unwrap();
    (dir, s)
}

/// Folds commits the way the sink does: one batch, outbox offsets counted per partition.
fn fold_all(s: &ViewStore, commits: &[Commit]) -> (u64, u64) {
    // The keys the sink reads from the keys topic before it folds (rules v4).
    kledger_state::KeyCache::add(
        s,
        &kledger_testkit::ledger::key_records(commits, PARTITIONS),
    )
    .unwrap();
    let mut batch = kledger_state::ViewBatch::default();
    let mut next = [0i64; PARTITIONS as usize];
    for c in commits {
        let p = partition_for(c.account_id.as_bytes(), PARTITIONS);
        s.fold(&mut batch, c, p, next[p as usize]).unwrap();
        next[p as usize] += 1;
    }
    let counts = (batch.folded, batch.skipped);
    s.write(batch).unwrap();
    counts
}

fn generated(n: usize) -> Ledger {
    let mut ledger = Ledger::new(PARTITIONS);
    for r in Generator::new(GenConfig {
        seed: 7,
        accounts: 15,
        ..GenConfig::default()
    })
    .take(n)
    {
        ledger.apply(&r);
    }
    ledger
}

#[test]
fn the_view_fold_agrees_with_state_and_is_idempotent() {
    let ledger = generated(3_000);
    let (_d, s) = store();
    let (folded, skipped) = fold_all(&s, &ledger.commits);
    assert_eq!((folded, skipped), (ledger.commits.len() as u64, 0));
    let accounts: std::collections::BTreeSet<&str> = ledger
        .commits
        .iter()
        .map(|c| c.account_id.as_str())
        .collect();
    assert!(accounts.len() > 10);
    for a in &accounts {
        assert_eq!(s.rows(a, usize::MAX).unwrap(), ledger.rows(a), "{a}");
        let last = ledger.commits.iter().rfind(|c| c.account_id == *a).unwrap();
        let mark = s.mark(a).unwrap();
        assert_eq!(
            (mark.commit_seq, mark.generation, mark.as_of),
            (last.commit_seq, last.generation, last.recorded_at)
        );
    }
    // The outbox may hold every commit twice (idempotent mode): nothing changes.
    let before = s.digest().unwrap();
    let (folded, skipped) = fold_all(&s, &ledger.commits);
    assert_eq!((folded, skipped), (0, ledger.commits.len() as u64));
    assert_eq!(s.digest().unwrap(), before);
    // A fresh store folding the same commits gives the same digest.
    let (_d2, s2) = store();
    fold_all(&s2, &ledger.commits);
    assert_eq!(s2.digest().unwrap(), before);
}

#[test]
fn a_gap_in_an_accounts_commits_is_refused() {
    let ledger = generated(200);
    let first = &ledger.commits[0];
    let later = ledger
        .commits
        .iter()
        .find(|c| c.account_id == first.account_id && c.commit_seq == 3)
        .expect("a third commit");
    let (_d, s) = store();
    let mut batch = kledger_state::ViewBatch::default();
    s.fold(&mut batch, first, 0, 0).unwrap();
    let err = s.fold(&mut batch, later, 0, 1).unwrap_err();
    assert!(
        matches!(
            err,
            kledger_state::StateError::Gap {
                head: 1,
                seq: 3,
                ..
            }
        ),
        "{err}"
    );
}

struct Acct {
    ledger: Ledger,
    seq: i64,
}

impl Acct {
    fn commit(&mut self, ops: Vec<Op>, planned: &[&Row], valid_shift: i64) -> Commit {
        let mut i = intent(
            ACCT,
            &format!("a{}", self.seq),
            WriteReason::DirectUserStatement,
            self.seq,
            ops,
        );
        for r in planned {
            plan(&mut i, r);
        }
        self.seq += 1;
        let d = self.ledger.apply(&IntentRecord {
            timestamp: NOW + valid_shift,
            partition: None,
            offset: None,
            intent: i,
        });
        assert_eq!(d.receipt.outcome, Outcome::Committed, "{:?}", d.receipt);
        d.into_commit().unwrap()
    }
}

#[test]
fn history_is_kept_until_a_purge_erases_it() {
    let mut a = Acct {
        ledger: Ledger::new(PARTITIONS),
        seq: 0,
    };
    let c1 = a.commit(
        vec![Op::Assert(slotted("home_city", "Lives in Lisbon"))],
        &[],
        0,
    );
    let old = c1.ops[0].row.clone();
    let c2 = a.commit(
        vec![amend(&[&old], slotted("home_city", "Lives in Porto"))],
        &[&old],
        10,
    );
    let (_d, s) = store();
    fold_all(&s, &[c1.clone(), c2.clone()]);
    let mut versions = Vec::new();
    s.history(ACCT, usize::MAX, &mut |r| {
        versions.push((r.memory_id, r.revision, r.status, r.content));
        Ok(())
    })
    .unwrap();
    assert_eq!(versions.len(), 3, "{versions:?}");
    assert!(versions.contains(&(
        old.memory_id.clone(),
        1,
        Status::Active,
        "Lives in Lisbon".into()
    )));
    assert!(versions.contains(&(
        old.memory_id.clone(),
        2,
        Status::Superseded,
        "Lives in Lisbon".into()
    )));

    let superseded = s.row(ACCT, &old.memory_id).unwrap().unwrap();
    let c3 = a.commit(vec![purge(&superseded, "user asked")], &[&superseded], 20);
    fold_all(&s, &[c1, c2, c3]);
    let mut texts = Vec::new();
    s.history(ACCT, usize::MAX, &mut |r| {
        if r.memory_id == old.memory_id {
            texts.push((r.status, r.content));
        }
        Ok(())
    })
    .unwrap();
    assert_eq!(texts, vec![(Status::Tombstoned, String::new())]);
    assert!(
        !s.timeline(ACCT, USER_ENTITY, 10)
            .unwrap()
            .contains(&old.memory_id)
    );
}

#[test]
fn timelines_are_per_entity_in_time_source_id_order() {
    let mut a = Acct {
        ledger: Ledger::new(PARTITIONS),
        seq: 0,
    };
    let mut later = fact("Ran a marathon");
    later.valid_from = Some(NOW - 1_000);
    let mut earlier = fact("Started running");
    earlier.valid_from = Some(NOW - 50_000);
    let c1 = a.commit(vec![Op::Assert(later)], &[], 0);
    let c2 = a.commit(
        vec![
            Op::Assert(earlier),
            Op::Assert(third_party("person_anna", "Anna lives in Oslo")),
        ],
        &[],
        0,
    );
    let (_d, s) = store();
    fold_all(&s, &[c1.clone(), c2.clone()]);
    assert_eq!(
        s.timeline(ACCT, USER_ENTITY, 10).unwrap(),
        vec![
            c2.ops[0].row.memory_id.clone(),
            c1.ops[0].row.memory_id.clone()
        ]
    );
    assert_eq!(
        s.timeline(ACCT, "person_anna", 10).unwrap(),
        vec![c2.ops[1].row.memory_id.clone()]
    );
    assert_eq!(s.timeline(ACCT, USER_ENTITY, 1).unwrap().len(), 1);
    assert!(
        s.timeline("t_acme/user/u_2", USER_ENTITY, 10)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn every_folded_account_is_pending_until_its_view_is_published() {
    let ledger = generated(500);
    let (_d, s) = store();
    fold_all(&s, &ledger.commits);
    let accounts: Vec<String> = ledger
        .commits
        .iter()
        .map(|c| c.account_id.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(s.pending(1_000).unwrap(), accounts);
    assert_eq!(s.pending(2).unwrap(), accounts[..2]);
    s.published(&accounts[..2]).unwrap();
    assert_eq!(s.pending(1_000).unwrap(), accounts[2..]);
    // Commits already folded do not make an account due again.
    fold_all(&s, &ledger.commits);
    assert_eq!(s.pending(1_000).unwrap(), accounts[2..]);
    s.published(&accounts).unwrap();
    assert!(s.pending(1_000).unwrap().is_empty());
}

#[test]
fn a_timeline_of_100k_rows_returns_its_newest_entries() {
    // 100,000 primary-user facts, the newest last; a timeline read of the newest few must not
    // walk the oldest first (the 5,000-entry scan bound once returned rows 1..5,000).
    let mut ledger = Ledger::new(PARTITIONS);
    let per_intent = 16;
    for i in 0..100_000 / per_intent {
        let ops = (0..per_intent)
            .map(|k| {
                let mut f = fact(&format!("Observation {} of the week", i * per_intent + k));
                f.valid_from = Some(NOW + (i * per_intent + k) as i64);
                Op::Assert(f)
            })
            .collect();
        let d = ledger.apply(&IntentRecord {
            timestamp: NOW + 200_000 + i as i64,
            partition: None,
            offset: None,
            intent: intent(
                ACCT,
                &format!("obs-{i}"),
                WriteReason::DirectUserStatement,
                0,
                ops,
            ),
        });
        assert_eq!(d.receipt.outcome, Outcome::Committed, "{:?}", d.receipt);
    }
    let (_d, s) = store();
    fold_all(&s, &ledger.commits);
    let newest = s.timeline(ACCT, USER_ENTITY, 3).unwrap();
    let contents: Vec<String> = newest
        .iter()
        .map(|id| s.row(ACCT, id).unwrap().unwrap().content)
        .collect();
    assert_eq!(
        contents,
        vec![
            "Observation 99997 of the week",
            "Observation 99998 of the week",
            "Observation 99999 of the week",
        ]
    );
    // A bounded scan of 5,000 from the newest end, in (time, source, id) order.
    let window = s.timeline(ACCT, USER_ENTITY, 5_000).unwrap();
    assert_eq!(window.len(), 5_000);
    assert_eq!(window.last(), newest.last());
    let first = s.row(ACCT, &window[0]).unwrap().unwrap();
    assert_eq!(first.content, "Observation 95000 of the week");
}

#[test]
fn the_slot_index_holds_the_active_rows_sharing_a_slot_and_is_rebuilt_for_older_stores() {
    let mut ledger = generated(3_000);
    // Two active rows about Ana's work city from two sources (neither supersedes the other):
    // they contest each other.
    let mut ids = Vec::new();
    for (action, content) in [
        ("cal", "Ana works in Porto"),
        ("chat", "Ana works in Braga"),
    ] {
        let op = AssertOp {
            slot: Some("work_city".into()),
            ..third_party("person:ana", content)
        };
        let d = ledger.apply(&IntentRecord {
            timestamp: NOW,
            partition: None,
            offset: None,
            intent: intent(
                ACCT,
                action,
                WriteReason::AgentReusableConclusion,
                0,
                vec![Op::Assert(op)],
            ),
        });
        assert_eq!(d.outcome(), Outcome::Committed, "{:?}", d.receipt);
        ids.extend(d.receipt.memory_ids);
    }
    let (dir, s) = store();
    fold_all(&s, &ledger.commits);
    // The rows the store holds now (each row's last version), grouped by subject and slot.
    let mut last: std::collections::BTreeMap<(String, String), Row> = Default::default();
    for c in &ledger.commits {
        for op in &c.ops {
            last.insert(
                (c.account_id.clone(), op.row.memory_id.clone()),
                op.row.clone(),
            );
        }
    }
    type Key = (String, String, &'static str, String);
    let mut groups: std::collections::BTreeMap<Key, Vec<String>> = Default::default();
    for ((account, id), row) in &last {
        let (Some(slot), Some(entity)) = (&row.slot, kledger_state::views::entity_of(row)) else {
            continue;
        };
        if row.status == Status::Active && SourceKind::of(row.kind).is_none() {
            groups
                .entry((
                    account.clone(),
                    entity.to_owned(),
                    row.subject.scope.as_str(),
                    slot.clone(),
                ))
                .or_default()
                .push(id.clone());
        }
    }
    ids.sort();
    assert!(
        groups.values().any(|g| *g == ids),
        "Ana's two work cities share a subject and slot"
    );
    for ((account, ..), ids) in &groups {
        let row = &last[&(account.clone(), ids[0].clone())];
        assert_eq!(&s.slot_rivals(account, row, 10_000).unwrap(), ids);
        assert_eq!(s.slot_rivals(account, row, 1).unwrap().len(), 1);
    }
    assert!(
        last.values()
            .any(|r| r.slot.is_some() && r.status == Status::Superseded),
        "the generated ledger has superseded rows with a slot (which the index leaves out)"
    );
    // A store written before the index (its entries gone), or under the index's first rule
    // (every version but tombstones: an entry a rule of now leaves out): the mark that it is
    // built gone, it is built again when the store opens, to the same bytes.
    assert!(s.slots_indexed().unwrap());
    let digest = s.digest().unwrap();
    drop(s);
    {
        let cfs = rocksdb::DB::list_cf(&rocksdb::Options::default(), dir.path()).unwrap();
        let db = rocksdb::DB::open_cf(&rocksdb::Options::default(), dir.path(), &cfs).unwrap();
        let slots = db.cf_handle("slots").unwrap();
        let keys: Vec<Box<[u8]>> = db
            .iterator_cf(slots, rocksdb::IteratorMode::Start)
            .map(|kv| kv.unwrap().0)
            .collect();
        assert!(!keys.is_empty());
        for k in keys {
            db.delete_cf(slots, k).unwrap();
        }
        db.put_cf(slots, b"\x00\x05t_old/an entry of v1", b"")
            .unwrap();
        let meta = db.cf_handle("meta").unwrap();
        db.delete_cf(meta, b"slots_indexed_v2").unwrap();
        db.put_cf(meta, b"slots_indexed_v1", b"").unwrap();
    }
    let s = ViewStore::open(dir.path(), 8 << 20).unwrap();
    assert!(s.slots_indexed().unwrap());
    assert_eq!(s.digest().unwrap(), digest);
}
