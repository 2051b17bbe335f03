//! The history policy (`docs/privacy.md#history`), per read × principal, through the read
//! API's own answers (the HTTP handlers and the MCP tools call them): the profile, a playbook,
//! search, the timeline (`as_of`, `known_at`, `history`, `audit`) and semantic features.
//!
//! A history read of another owner's account is `403 history_not_allowed` without
//! `role_history`, or without a window, or before the window; the owner reads its own history
//! unless its tenant's policy says otherwise; a version is shown only if its row, as it stands
//! now, admits the reader (a public fact since amended into a private one is never shown to a
//! teammate at any time); an expired row listed with `history` says `expired`.

use kledger_processors::access::Principal;
use kledger_schemas::*;
use kledger_testkit::build::{amend, close, document, fact, intent, plan, principal, slotted};
use kledger_testkit::ledger::Ledger;
use kledger_topology::config::{Config, HistoryPolicy, TenantPolicy};
use kledger_topology::serve::api::read::{ProfileParams, profile_answer, read_playbook};
use kledger_topology::serve::api::search::{SearchRequest, search_knowledge};
use kledger_topology::serve::api::semantic::{FeatureParams, features_answer};
use kledger_topology::serve::api::timeline::{ItemStatus, TimelineParams, entity_timeline};
use kledger_topology::serve::api::{Api, ApiError};

const A: &str = "t_acme/user/u_owner";
const DAY: i64 = 86_400_000;
const PARTITIONS: i32 = 4;

fn public(op: AssertOp, valid_from: i64) -> AssertOp {
    AssertOp {
        visibility: Visibility::Public,
        valid_from: Some(valid_from),
        ..op
    }
}

struct Script {
    ledger: Ledger,
    seq: i64,
}

impl Script {
    /// Decides `ops` recorded at `at` (each target planned); the first new row's id.
    fn write(
        &mut self,
        at: i64,
        action: &str,
        reason: WriteReason,
        ops: Vec<Op>,
        targets: &[&Row],
    ) -> String {
        let mut i = intent(A, action, reason, self.seq, ops);
        for t in targets {
            plan(&mut i, t);
        }
        let d = self.ledger.apply(&IntentRecord {
            timestamp: at,
            partition: None,
            offset: None,
            intent: i,
        });
        assert_eq!(d.outcome(), Outcome::Committed, "{action}: {:?}", d.receipt);
        self.seq = d.receipt.commit_seq.unwrap_or(self.seq);
        d.receipt.memory_ids.first().cloned().unwrap_or_default()
    }

    fn row(&self, id: &str) -> Row {
        self.ledger.row(A, id).expect("row")
    }
}

struct Fixture {
    api: Api,
    now: i64,
    playbook: String,
    _dir: tempfile::TempDir,
}

/// The script, recorded relative to now (the window is): a public employer fact 20 days ago
/// amended 10 days ago into a private one; a public hobby 20 days ago amended 5 days ago into
/// another public one; a public playbook 20 days ago closed 3 days ago; a public trip that
/// expired 2 days ago.
fn fixture(config: Config) -> Fixture {
    let now = kledger_topology::serve::api::now_ms();
    let mut s = Script {
        ledger: Ledger::new(PARTITIONS),
        seq: 0,
    };
    let w = WriteReason::DirectUserStatement;
    let t20 = now - 20 * DAY;
    let acme = s.write(
        t20,
        "employer",
        w,
        vec![Op::Assert(public(
            slotted("employer", "Works at Acme"),
            t20,
        ))],
        &[],
    );
    let chess = s.write(
        t20 + 1,
        "hobby",
        w,
        vec![Op::Assert(public(
            slotted("occupation", "Plays chess professionally"),
            t20,
        ))],
        &[],
    );
    let packing = s.write(
        t20 + 2,
        "packing",
        WriteReason::RecurringWorkflow,
        vec![Op::Assert(public(
            document("Packing list", "Passport, charger"),
            t20,
        ))],
        &[],
    );
    let t10 = now - 10 * DAY;
    let old = s.row(&acme);
    s.write(
        t10,
        "employer-2",
        w,
        vec![amend(
            &[&old],
            AssertOp {
                valid_from: Some(t10),
                ..slotted("employer", "Works at Initech")
            },
        )],
        &[&old],
    );
    let t8 = now - 8 * DAY;
    s.write(
        t8,
        "trip",
        w,
        vec![Op::Assert(AssertOp {
            expires_at: Some(now - 2 * DAY),
            ..public(fact("Visiting Rome"), t8)
        })],
        &[],
    );
    let t5 = now - 5 * DAY;
    let old = s.row(&chess);
    s.write(
        t5,
        "hobby-2",
        w,
        vec![amend(
            &[&old],
            public(slotted("occupation", "Plays go professionally"), t5),
        )],
        &[&old],
    );
    let old = s.row(&packing);
    s.write(
        now - 3 * DAY,
        "packing-closed",
        WriteReason::RecurringWorkflow,
        vec![close(&old, "no longer used")],
        &[&old],
    );
    let ledger = s.ledger;
    let playbook = packing;
    let dir = tempfile::tempdir().unwrap();
    let api =
        kledger_testkit::offline::served(dir.path(), &ledger.commits, PARTITIONS, config).unwrap();
    Fixture {
        api,
        now,
        playbook,
        _dir: dir,
    }
}

/// One read of the matrix: its name and what it answers, as the texts it shows.
type Read = (&'static str, Result<Vec<String>, ApiError>);

fn timeline(f: &Fixture, p: &Principal, q: TimelineParams) -> Result<Vec<String>, ApiError> {
    let q = TimelineParams {
        account: Some(A.into()),
        limit: Some(40),
        ..q
    };
    entity_timeline(&f.api, p, "user", &q).map(|t| {
        t.items
            .iter()
            .map(|i| format!("{} ({:?})", i.content, i.status))
            .collect()
    })
}

/// Every history read, at `as_of` (and `known_at` where the read takes one).
fn history_reads(f: &Fixture, p: &Principal, as_of: i64, known_at: i64) -> Vec<Read> {
    let profile = |as_of: Option<i64>, known_at: Option<i64>| {
        let q = ProfileParams {
            account: Some(A.into()),
            as_of,
            known_at,
            ..ProfileParams::default()
        };
        profile_answer(&f.api, p, &q).map(|a| vec![a.profile])
    };
    let search = || SearchRequest {
        query: "works plays packing".into(),
        limit: Some(20),
        kinds: Vec::new(),
        account: Some(A.into()),
        as_of: Some(as_of),
        known_at: None,
        min_commit_seq: None,
        wait_ms: None,
    };
    let playbook = ProfileParams {
        account: Some(A.into()),
        as_of: Some(as_of),
        ..ProfileParams::default()
    };
    let features = FeatureParams {
        account: Some(A.into()),
        as_of: Some(as_of),
        ..FeatureParams::default()
    };
    vec![
        ("profile as_of", profile(Some(as_of), None)),
        ("profile known_at", profile(None, Some(known_at))),
        (
            "playbook as_of",
            read_playbook(&f.api, p, &f.playbook, &playbook).map(|a| vec![a.description]),
        ),
        (
            "search as_of",
            search_knowledge(&f.api, p, search())
                .map(|a| a.results.into_iter().map(|r| r.content).collect()),
        ),
        (
            "timeline as_of",
            timeline(
                f,
                p,
                TimelineParams {
                    as_of: Some(as_of),
                    ..TimelineParams::default()
                },
            ),
        ),
        (
            "timeline known_at",
            timeline(
                f,
                p,
                TimelineParams {
                    known_at: Some(known_at),
                    ..TimelineParams::default()
                },
            ),
        ),
        (
            "timeline history",
            timeline(
                f,
                p,
                TimelineParams {
                    history: true,
                    ..TimelineParams::default()
                },
            ),
        ),
        (
            "timeline audit",
            timeline(
                f,
                p,
                TimelineParams {
                    audit: true,
                    ..TimelineParams::default()
                },
            ),
        ),
        (
            "semantic features as_of",
            features_answer(&f.api, p, &features)
                .map(|a| a.features.into_iter().map(|x| x.value).collect()),
        ),
    ]
}

fn refused(reads: &[Read]) -> Vec<&'static str> {
    reads
        .iter()
        .filter(|(_, r)| matches!(r, Err(e) if e.code() == "history_not_allowed"))
        .map(|(name, _)| *name)
        .collect()
}

fn names(reads: &[Read]) -> Vec<&'static str> {
    reads.iter().map(|(n, _)| *n).collect()
}

fn window(days: u64) -> Config {
    let mut c = Config::default();
    c.policy.history.window_days = days;
    c
}

#[test]
fn another_owners_history_is_refused_without_the_role_and_the_window() {
    let f = fixture(window(30));
    let (as_of, known_at) = (f.now - 15 * DAY, f.now - 15 * DAY);
    let all = names(&history_reads(
        &f,
        &principal("u_owner", &[]),
        as_of,
        known_at,
    ));
    assert_eq!(all.len(), 9);
    // A teammate without the role: every history read is refused, whatever it would show.
    let mate = principal("u_mate", &[]);
    assert_eq!(refused(&history_reads(&f, &mate, as_of, known_at)), all);
    // With the role, inside the window: answered.
    let historian = principal("u_mate", &["role_history"]);
    let reads = history_reads(&f, &historian, as_of, known_at);
    assert!(refused(&reads).is_empty(), "{reads:?}");
    // Before the window: refused (the reads with a point in time; `history` and `audit` ask
    // for no point and are answered inside the window).
    let reads = history_reads(&f, &historian, f.now - 40 * DAY, f.now - 40 * DAY);
    assert_eq!(
        refused(&reads),
        all.iter()
            .copied()
            .filter(|n| !matches!(*n, "timeline history" | "timeline audit"))
            .collect::<Vec<_>>()
    );
    // No window (the default policy): the role alone opens nothing.
    let f = fixture(Config::default());
    assert_eq!(
        refused(&history_reads(&f, &historian, as_of, known_at)),
        all
    );
    // The present is no history: answered for the teammate, the rows as they stand now.
    let now = timeline(&f, &mate, TimelineParams::default()).unwrap();
    assert_eq!(now, ["Plays go professionally (Active)"]);
}

#[test]
fn the_owner_reads_its_own_history_unless_the_tenant_says_otherwise() {
    let f = fixture(Config::default());
    let (as_of, known_at) = (f.now - 15 * DAY, f.now - 15 * DAY);
    let owner = principal("u_owner", &[]);
    let reads = history_reads(&f, &owner, as_of, known_at);
    assert!(refused(&reads).is_empty(), "{reads:?}");
    let text = format!("{reads:?}");
    assert!(
        text.contains("Works at Acme"),
        "the owner's own past: {text}"
    );
    // An expired row listed with history says so.
    let history = timeline(
        &f,
        &owner,
        TimelineParams {
            history: true,
            ..TimelineParams::default()
        },
    )
    .unwrap();
    assert!(
        history.contains(&format!("Visiting Rome ({:?})", ItemStatus::Expired)),
        "{history:?}"
    );
    assert!(
        history.contains(&"Plays chess professionally (Superseded)".to_owned()),
        "{history:?}"
    );
    // A tenant whose policy keeps history from owners too.
    let mut c = Config::default();
    c.policy.tenants.insert(
        "t_acme".into(),
        TenantPolicy {
            history: HistoryPolicy {
                owner: false,
                window_days: 0,
            },
        },
    );
    let f = fixture(c);
    let reads = history_reads(&f, &owner, as_of, known_at);
    assert_eq!(refused(&reads), names(&reads));
}

#[test]
fn a_version_is_shown_only_to_a_reader_its_row_admits_now() {
    let f = fixture(window(30));
    let historian = principal("u_mate", &["role_history"]);
    let at = f.now - 15 * DAY;
    let reads = history_reads(&f, &historian, at, at);
    let text = format!("{reads:?}");
    // The employer fact was public 15 days ago, but its row has since been amended into a
    // private one: its past is private too. The hobby stayed public: its past is shown.
    assert!(!text.contains("Acme"), "{text}");
    assert!(!text.contains("Initech"), "{text}");
    assert!(text.contains("Plays chess"), "{text}");
    assert!(text.contains("Packing list"), "{text}");
    let history = timeline(
        &f,
        &historian,
        TimelineParams {
            history: true,
            ..TimelineParams::default()
        },
    )
    .unwrap();
    assert!(
        history.contains(&"Plays chess professionally (Superseded)".to_owned()),
        "{history:?}"
    );
    assert!(
        history.contains(&"Visiting Rome (Expired)".to_owned()),
        "{history:?}"
    );
    // A window of 4 days leaves out what ended before it (the chess hobby ended 5 days ago).
    let f = fixture(window(4));
    let history = timeline(
        &f,
        &historian,
        TimelineParams {
            history: true,
            ..TimelineParams::default()
        },
    )
    .unwrap();
    assert!(!history.iter().any(|s| s.contains("chess")), "{history:?}");
    assert!(
        history.contains(&"Visiting Rome (Expired)".to_owned()),
        "{history:?}"
    );
}
