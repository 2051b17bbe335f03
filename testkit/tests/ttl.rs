//! Expiry that deletes (`docs/privacy.md#expiry`), with a controllable clock for the sweep
//! only: the view projection's sweep publishes nothing before a row's `expires_at`, the purge
//! intent of the row once its clock passes it (once, however often it sweeps while the purge
//! is in flight), and nothing again once the purge is folded. The intent is decided by the
//! real decide path like any purge — its row tombstoned, its content gone from the view
//! store — and deciding it again from its record gives the same commit byte for byte.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use kledger_schemas::avro::{NoRegistry, decode};
use kledger_schemas::*;
use kledger_testkit::build::{fact, intent};
use kledger_testkit::ledger::Ledger;
use kledger_topology::config::TtlPolicy;
use kledger_topology::kafka::codec::Codec;
use kledger_topology::pipeline::project::views::{TtlSweep, ViewProjection};
use kledger_topology::pipeline::project::{OutboxCommit, Outputs, Projection};
use kledger_topology::pipeline::records::{OutKind, Outgoing};

const A: &str = "t_acme/user/u_ttl";
const T0: i64 = 1_767_225_600_000;
const DAY: i64 = 86_400_000;
const PARTITIONS: i32 = 4;

/// The sink's outputs, kept (the projection's port to its producer; the records are checked).
#[derive(Default)]
struct Kept {
    records: Vec<Outgoing>,
    codec: Codec,
}

impl Outputs for Kept {
    fn deliver(&mut self, records: &[Outgoing]) -> anyhow::Result<()> {
        self.records.extend_from_slice(records);
        Ok(())
    }
    fn codec(&self) -> &Codec {
        &self.codec
    }
}

fn fold(p: &mut ViewProjection, ledger: &Ledger, from: usize) {
    let commits: Vec<OutboxCommit> = ledger.commits[from..]
        .iter()
        .enumerate()
        .map(|(i, c)| OutboxCommit {
            partition: c.intent_partition,
            offset: (from + i) as i64,
            commit: c.clone(),
        })
        .collect();
    let read: Vec<(i32, i64)> = commits.iter().map(|c| (c.partition, c.offset)).collect();
    p.apply(&commits, &read).unwrap();
}

#[test]
fn an_expired_row_is_purged_by_an_intent_kledger_publishes() {
    let mut ledger = Ledger::new(PARTITIONS);
    // A trip that expires on day 10, and a fact without expiry.
    let trip = AssertOp {
        expires_at: Some(T0 + 10 * DAY),
        ..fact("Visiting Rome until the 10th")
    };
    for (action, op) in [("trip", trip), ("keep", fact("Likes espresso"))] {
        let d = ledger.apply(&IntentRecord {
            timestamp: T0,
            partition: None,
            offset: None,
            intent: intent(
                A,
                action,
                WriteReason::DirectUserStatement,
                0,
                vec![Op::Assert(op)],
            ),
        });
        assert_eq!(d.outcome(), Outcome::Committed, "{:?}", d.receipt);
    }
    let trip_id = ledger
        .rows(A)
        .into_iter()
        .find(|r| r.expires_at.is_some())
        .unwrap()
        .memory_id;
    let dir = tempfile::tempdir().unwrap();
    let store =
        Arc::new(kledger_state::ViewStore::open(&dir.path().join("views"), 8 << 20).unwrap());
    let keys = kledger_testkit::ledger::key_records(&ledger.commits, PARTITIONS);
    kledger_state::KeyCache::add(store.as_ref(), &keys).unwrap();
    let clock = Arc::new(AtomicI64::new(T0 + 5 * DAY));
    let c = clock.clone();
    let policy = TtlPolicy {
        purge: true,
        sweep_interval_ms: 0,
        sweep_max: 10,
    };
    let sweep = TtlSweep::with_clock(
        &policy,
        PARTITIONS,
        Arc::new(move || c.load(Ordering::SeqCst)),
    );
    let config = kledger_topology::config::Config::default();
    let mut p = ViewProjection::new(&config.views, &config.limits, store.clone()).with_ttl(sweep);
    fold(&mut p, &ledger, 0);
    let mut out = Kept::default();

    // Before the expiry: nothing.
    p.publish(&mut out, false).unwrap();
    assert!(out.records.iter().all(|r| r.kind != OutKind::Intent));

    // Past it: the row's purge, once, however often the sweep runs while it is in flight.
    clock.store(T0 + 10 * DAY, Ordering::SeqCst);
    for _ in 0..3 {
        p.publish(&mut out, false).unwrap();
    }
    let purges: Vec<&Outgoing> = out
        .records
        .iter()
        .filter(|r| r.kind == OutKind::Intent)
        .collect();
    assert_eq!(purges.len(), 1, "{purges:?}");
    let rec = purges[0];
    assert_eq!(rec.key.as_deref(), Some(A.as_bytes()));
    assert_eq!(
        rec.timestamp,
        Some(T0 + 10 * DAY),
        "the sweep's clock is the record time"
    );
    assert_eq!(
        rec.partition,
        Some(kledger_processors::routing::partition_for(
            A.as_bytes(),
            PARTITIONS
        ))
    );
    let purge: Intent = decode(&rec.payload, &NoRegistry).unwrap();
    assert_eq!(purge.ops.len(), 1);
    assert!(matches!(&purge.ops[0], Op::Purge(p) if p.target.as_deref() == Some(trip_id.as_str())));

    // Decided like any purge: the row is tombstoned, the other fact stays.
    let record = IntentRecord {
        timestamp: rec.timestamp.unwrap(),
        partition: None,
        offset: None,
        intent: purge.clone(),
    };
    let before = ledger.commits.len();
    let d = ledger.apply(&record);
    assert_eq!(d.outcome(), Outcome::Committed, "{:?}", d.receipt);
    let purged = ledger.row(A, &trip_id).unwrap();
    assert_eq!(purged.status, Status::Tombstoned);
    assert!(purged.content.is_empty());
    // Deciding the same record again on a fresh ledger gives the same commits, byte for byte.
    let mut again = Ledger::new(PARTITIONS);
    for r in ledger.records.clone() {
        again.apply(&r);
    }
    assert_eq!(again.commits, ledger.commits, "replay is byte-identical");
    // Published again (another host's sweep), it is a duplicate.
    assert_eq!(ledger.apply(&record).outcome(), Outcome::Duplicate);

    // Folded: the sweep finds nothing more, and the view store holds no trace of the text.
    fold(&mut p, &ledger, before);
    clock.store(T0 + 20 * DAY, Ordering::SeqCst);
    let n = out.records.len();
    p.publish(&mut out, false).unwrap();
    assert!(out.records[n..].iter().all(|r| r.kind != OutKind::Intent));
    assert!(store.expired(T0 + 20 * DAY, 10).unwrap().is_empty());
    let row = store.row(A, &trip_id).unwrap().unwrap();
    assert_eq!(row.status, Status::Tombstoned);
    assert!(
        store
            .row(
                A,
                &ledger
                    .rows(A)
                    .iter()
                    .find(|r| r.expires_at.is_none())
                    .unwrap()
                    .memory_id
            )
            .unwrap()
            .is_some()
    );
}
