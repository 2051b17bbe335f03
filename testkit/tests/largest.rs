//! The largest valid intent of each op kind: it is valid, its commit stays within the size
//! bound decide holds it to, the default budget answers it as the bound says, and the largest
//! tombstone fits the smallest budget allowed.

use kledger_processors::decide::{commit_overhead_bytes, op_bytes};
use kledger_processors::validate::validate;
use kledger_processors::{Code, Decision, Limits};
use kledger_schemas::avro::encode_single_object;
use kledger_schemas::limits::{OPS_MAX, RECORD_BYTES_DEFAULT, RECORD_BYTES_MIN};
use kledger_schemas::*;
use kledger_testkit::largest::{self, RECORD_TIME};
use kledger_testkit::ledger::Ledger;

/// A budget every largest intent fits.
const BIG: Limits = Limits {
    record_bytes_max: 64 << 20,
    rules: kledger_processors::Rules::V4,
    secret: kledger_processors::ids::LedgerSecret([7; 32]),
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OpKind {
    Fact,
    Document,
    Trigger,
    Amend,
    AmendFact,
    Close,
    AttachEvidence,
    Purge,
}

const KINDS: [OpKind; 8] = [
    OpKind::Fact,
    OpKind::Document,
    OpKind::Trigger,
    OpKind::Amend,
    OpKind::AmendFact,
    OpKind::Close,
    OpKind::AttachEvidence,
    OpKind::Purge,
];

impl OpKind {
    fn name(self) -> &'static str {
        match self {
            OpKind::Fact => "assert fact",
            OpKind::Document => "assert document",
            OpKind::Trigger => "assert trigger",
            OpKind::Amend => "amend (document)",
            OpKind::AmendFact => "amend (fact)",
            OpKind::Close => "close (document)",
            OpKind::AttachEvidence => "attach_evidence (document)",
            OpKind::Purge => "purge (closed fact)",
        }
    }

    fn is_assert(self) -> bool {
        matches!(self, OpKind::Fact | OpKind::Document | OpKind::Trigger)
    }
}

/// The largest intent of `kind` with `n` ops, its targets set up in `l`.
fn build(l: &mut Ledger, kind: OpKind, n: usize) -> Intent {
    let account = largest::max_account("largest");
    let action = largest::max_action(&format!("{kind:?}-{n}"));
    let (a, x) = (account.as_str(), action.as_str());
    match kind {
        OpKind::Fact if n == OPS_MAX => largest::assert_fact(a, x),
        OpKind::Document if n == OPS_MAX => largest::document(a, x),
        OpKind::Trigger if n == OPS_MAX => largest::trigger(a, x),
        OpKind::Fact => largest::asserts(Kind::Fact, a, x, n),
        OpKind::Document => largest::asserts(Kind::Document, a, x, n),
        OpKind::Trigger => largest::asserts(Kind::Trigger, a, x, n),
        OpKind::Amend => largest::setup_amend(l, a, x, n),
        OpKind::AmendFact => {
            let rows = largest::create_rows(l, a, x, Kind::Fact, true, n);
            largest::amend_of(a, x, largest::head(l, a), &rows)
        }
        OpKind::Close => largest::setup_close(l, a, x, n),
        OpKind::AttachEvidence => largest::setup_attach_evidence(l, a, x, n),
        OpKind::Purge => largest::setup_purge(l, a, x, n),
    }
}

/// Sets up and decides the largest intent of `kind` with `n` ops within `limits`.
fn run(kind: OpKind, n: usize, limits: Limits) -> (Intent, Decision) {
    let mut l = Ledger::with_limits(4, limits);
    let intent = build(&mut l, kind, n);
    let d = l.apply(&largest::record(intent.clone()));
    (intent, d)
}

/// The size bound decide holds a commit of `intent` to.
fn bound(intent: &Intent, commit: &Commit, limits: &Limits) -> usize {
    commit_overhead_bytes(&intent.account_id, &intent.action_id)
        + commit
            .ops
            .iter()
            .map(|o| op_bytes(&o.row, limits))
            .sum::<usize>()
}

#[test]
fn the_largest_intents_are_valid() {
    for kind in KINDS {
        let mut l = Ledger::with_limits(4, BIG);
        let intent = build(&mut l, kind, OPS_MAX);
        assert_eq!(intent.ops.len(), OPS_MAX, "{}", kind.name());
        assert_eq!(
            validate(&intent, RECORD_TIME, BIG.rules),
            Ok(()),
            "{}",
            kind.name()
        );
    }
}

/// One line of the table.
struct Line {
    kind: OpKind,
    ops: usize,
    rows: usize,
    intent_bytes: usize,
    record_bytes: usize,
    bound_bytes: usize,
    verdict: String,
}

/// Measures the largest intent of `kind` with `n` ops under the big budget, then decides it
/// under the default one and checks the verdict is the one the bound gives.
fn measure(kind: OpKind, n: usize) -> Line {
    let (intent, d) = run(kind, n, BIG);
    let name = kind.name();
    assert_eq!(
        d.outcome(),
        Outcome::Committed,
        "{name} x{n}: {:?}",
        d.receipt
    );
    assert_eq!(
        d.commits.len(),
        1,
        "{name} x{n}: one commit under the big budget"
    );
    let commit = &d.commits[0];
    let (record_bytes, bound_bytes) = (d.records[0].len(), bound(&intent, commit, &BIG));
    assert!(
        record_bytes <= bound_bytes,
        "{name} x{n}: {record_bytes} > {bound_bytes}"
    );

    let (_, small) = run(kind, n, Limits::default());
    let verdict = if kind == OpKind::Purge {
        // A purge is split into commits that each fit, never rejected for its size.
        assert_eq!(
            small.outcome(),
            Outcome::Committed,
            "{name} x{n}: {:?}",
            small.receipt
        );
        assert!(
            small
                .records
                .iter()
                .all(|r| r.len() <= RECORD_BYTES_DEFAULT)
        );
        format!("committed in {} commit(s)", small.commits.len())
    } else if bound_bytes <= RECORD_BYTES_DEFAULT {
        assert_eq!(
            small.outcome(),
            Outcome::Committed,
            "{name} x{n}: {:?}",
            small.receipt
        );
        "committed".to_owned()
    } else {
        assert_eq!(
            small.outcome(),
            Outcome::Rejected,
            "{name} x{n}: {:?}",
            small.receipt
        );
        assert_eq!(
            small.receipt.code.as_deref(),
            Some(Code::CommitTooLarge.as_str())
        );
        "rejected commit_too_large".to_owned()
    };
    if kind.is_assert() && n == OPS_MAX {
        assert!(
            bound_bytes > RECORD_BYTES_DEFAULT,
            "{name}: the budget is reachable"
        );
    }
    Line {
        kind,
        ops: n,
        rows: commit.ops.len(),
        intent_bytes: encode_single_object(&intent).len(),
        record_bytes,
        bound_bytes,
        verdict,
    }
}

#[test]
fn commit_sizes_stay_within_the_bound_and_the_default_budget_answers_as_it_says() {
    let cases: Vec<(OpKind, usize)> = KINDS.iter().flat_map(|&k| [(k, OPS_MAX), (k, 1)]).collect();
    // Two workers (the cases are independent and each takes a while in a debug build).
    let mut lines: Vec<Line> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..2)
            .map(|w| {
                let mine: Vec<_> = cases.iter().copied().skip(w).step_by(2).collect();
                s.spawn(move || {
                    mine.into_iter()
                        .map(|(k, n)| measure(k, n))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().expect("a worker panicked"))
            .collect()
    });
    lines.sort_by_key(|l| {
        (
            KINDS.iter().position(|k| *k == l.kind),
            std::cmp::Reverse(l.ops),
        )
    });
    eprintln!(
        "{:<27} | {:>3} | {:>4} | {:>12} | {:>12} | {:>12} | under 1 MiB",
        "op kind", "ops", "rows", "intent bytes", "record bytes", "bound bytes"
    );
    for l in &lines {
        eprintln!(
            "{:<27} | {:>3} | {:>4} | {:>12} | {:>12} | {:>12} | {}",
            l.kind.name(),
            l.ops,
            l.rows,
            l.intent_bytes,
            l.record_bytes,
            l.bound_bytes,
            l.verdict
        );
    }
}

#[test]
fn the_largest_tombstone_fits_the_smallest_budget() {
    largest_tombstone_fits(Limits::default());
}

/// Rules v3's tombstones are not sealed: the largest fits too.
#[test]
fn the_largest_v3_tombstone_fits_the_smallest_budget() {
    largest_tombstone_fits(Limits {
        rules: kledger_processors::Rules::V3,
        ..Limits::default()
    });
}

/// Rules v2's tombstones keep the close reason and labels: the largest fits too.
#[test]
fn the_largest_v2_tombstone_fits_the_smallest_budget() {
    largest_tombstone_fits(Limits {
        rules: kledger_processors::Rules::V2,
        ..Limits::default()
    });
}

/// Rules v1 allows wider ACL entries, so its tombstones are larger: they fit too, and a purge
/// of a ledger started under v1 still always splits.
#[test]
fn the_largest_v1_tombstone_fits_the_smallest_budget() {
    largest_tombstone_fits(Limits {
        rules: kledger_processors::Rules::V1,
        ..Limits::default()
    });
}

fn largest_tombstone_fits(limits: Limits) {
    let (intent, d) = run(OpKind::Purge, 1, limits);
    assert_eq!(d.outcome(), Outcome::Committed, "{:?}", d.receipt);
    let commit = d.commit().expect("a commit");
    let row = &commit.ops[0].row;
    assert_eq!(row.status, Status::Tombstoned);
    // Under v3 a tombstone drops the reason; before, a closed row kept it.
    assert_eq!(
        row.closed_reason.is_some(),
        limits.rules < kledger_processors::Rules::V3,
        "{:?}",
        limits.rules
    );
    let overhead = commit_overhead_bytes(&intent.account_id, &intent.action_id);
    let tombstone = op_bytes(row, &limits);
    eprintln!(
        "largest tombstone ({:?}): op_bytes {tombstone} + overhead {overhead} = {} of \
         RECORD_BYTES_MIN {RECORD_BYTES_MIN} (record {} bytes)",
        limits.rules,
        overhead + tombstone,
        d.records[0].len()
    );
    assert!(overhead + tombstone <= RECORD_BYTES_MIN);
}
