//! Golden tests of the profile and the playbook index: ordering, whole-line fitting and every
//! exclusion (closed, unslotted, third-party, restricted, disputed, not yet valid, expired,
//! legacy migration).

use kledger_processors::render::{self, PLAYBOOK_INDEX_CHARS_MAX, PROFILE_CHARS_MAX, fit_lines};
use kledger_schemas::*;
use kledger_testkit::build::{close, document, fact, intent, plan, slotted, third_party};
use kledger_testkit::ledger::Ledger;

const ACCT: &str = "t_acme/user/u_1";
const NOW: i64 = 1_767_225_600_000;
const DAY: i64 = 86_400_000;

fn golden(name: &str, actual: &str) {
    // The directory at run time: a shared target dir may hold a binary built from another clone.
    let dir =
        std::env::var("CARGO_MANIFEST_DIR").unwrap_or_else(|_| env!("CARGO_MANIFEST_DIR").into());
    let path = format!("{dir}/tests/golden/{name}");
    if std::env::var_os("KLEDGER_BLESS").is_some() {
        std::fs::write(&path, actual).unwrap();
    }
    assert_eq!(
        actual,
        std::fs::read_to_string(&path).unwrap(),
        "{name} (KLEDGER_BLESS=1 rewrites it)"
    );
}

struct Builder {
    ledger: Ledger,
    seq: i64,
}

impl Builder {
    fn put(&mut self, reason: WriteReason, op: AssertOp) -> Row {
        self.seq += 1;
        let i = intent(
            ACCT,
            &format!("a{}", self.seq),
            reason,
            self.seq - 1,
            vec![Op::Assert(op)],
        );
        let d = self.ledger.apply(&IntentRecord {
            timestamp: NOW - 10 * DAY + self.seq,
            partition: None,
            offset: None,
            intent: i,
        });
        assert_eq!(d.receipt.outcome, Outcome::Committed, "{:?}", d.receipt);
        d.into_commit().unwrap().ops[0].row.clone()
    }
}

fn weighted(mut op: AssertOp, w: i32) -> AssertOp {
    op.curation_weight = w;
    op
}

fn ledger() -> Builder {
    let mut b = Builder {
        ledger: Ledger::new(1),
        seq: 0,
    };
    let u = WriteReason::DirectUserStatement;
    b.put(u, weighted(slotted("home_city", "Lives in Lisbon"), 40));
    b.put(u, weighted(slotted("employer", "Works at Acme"), 40));
    let mut proposed = weighted(slotted("current_focus", "Focused on the Q3 launch"), 90);
    proposed.assertion_class = AssertionClass::Proposed;
    b.put(WriteReason::AgentReusableConclusion, proposed);
    b.put(
        u,
        weighted(slotted("dietary_preferences", "Vegetarian"), -20),
    );
    // Exclusions.
    let closed = b.put(u, weighted(slotted("timezone", "Europe/Lisbon"), 99));
    b.seq += 1;
    let mut i = intent(
        ACCT,
        "close-tz",
        u,
        b.seq - 1,
        vec![close(&closed, "moved")],
    );
    plan(&mut i, &closed);
    b.ledger.apply(&IntentRecord {
        timestamp: NOW - DAY,
        partition: None,
        offset: None,
        intent: i,
    });
    b.put(u, weighted(fact("Likes jazz (unslotted)"), 100));
    let mut tp = weighted(third_party("person_anna", "Anna lives in Oslo"), 100);
    tp.slot = Some("home_city".into());
    b.put(u, tp);
    let mut restricted = weighted(slotted("age_years", "Is 41 years old"), 100);
    restricted.sensitivity.level = SensitivityLevel::Restricted;
    b.put(u, restricted);
    let mut disputed = weighted(slotted("occupation", "Is a pilot"), 100);
    disputed.assertion_class = AssertionClass::Disputed;
    b.put(u, disputed);
    let mut future = weighted(slotted("work_city", "Works in Porto from next month"), 100);
    future.valid_from = Some(NOW + 30 * DAY);
    b.put(u, future);
    let mut expired = weighted(slotted("preferred_name", "Goes by Al"), 100);
    expired.expires_at = Some(NOW - DAY);
    b.put(u, expired);
    b.put(
        WriteReason::LegacyMigration,
        weighted(slotted("primary_language", "Speaks Portuguese"), 100),
    );
    // Playbooks.
    let r = WriteReason::RecurringWorkflow;
    b.put(
        r,
        weighted(
            document("Weekly status report for the data team", "steps"),
            10,
        ),
    );
    b.put(
        r,
        weighted(document("Quarterly OKR review with the leads", "steps"), 50),
    );
    let mut hidden = weighted(document("Restricted HR playbook", "steps"), 90);
    hidden.sensitivity.level = SensitivityLevel::Restricted;
    b.put(r, hidden);
    b
}

fn current(b: &Builder) -> Vec<Row> {
    b.ledger.rows(ACCT)
}

#[test]
fn profile_golden() {
    let b = ledger();
    let rows = current(&b);
    let profile = render::profile(&rows, NOW);
    golden("profile.txt", &profile);
    // Facts valid from next month appear once that time comes.
    let later = render::profile(&rows, NOW + 31 * DAY);
    assert!(later.contains("Works in Porto") && !profile.contains("Works in Porto"));
}

#[test]
fn playbook_index_golden() {
    let b = ledger();
    golden(
        "playbook_index.txt",
        &render::playbook_index(&current(&b), NOW),
    );
}

#[test]
fn fitting_keeps_whole_lines_within_budget() {
    let lines: Vec<String> = (0..100)
        .map(|i| format!("- slot{i}: {}", "x".repeat(40 + i % 7)))
        .collect();
    let out = fit_lines(lines.clone(), PROFILE_CHARS_MAX);
    assert!(out.chars().count() <= PROFILE_CHARS_MAX);
    for l in out.lines() {
        assert!(lines.contains(&l.to_owned()), "a line was cut: {l}");
    }
    // A line that cannot fit is skipped; shorter later lines still get in, in order.
    let out = fit_lines(
        vec!["a".repeat(790), "b".repeat(20), "c".repeat(5)],
        PLAYBOOK_INDEX_CHARS_MAX,
    );
    assert_eq!(out, format!("{}\n{}", "a".repeat(790), "c".repeat(5)));
    // Multi-byte text counts characters, not bytes.
    let out = fit_lines(vec!["é".repeat(800)], PLAYBOOK_INDEX_CHARS_MAX);
    assert_eq!(out.chars().count(), 800);
}

#[test]
fn the_view_keeps_its_watchlist_within_the_record_budget() {
    use kledger_schemas::avro::encode_single_object;
    let mut b = ledger();
    // 40 triggers of about 8,000 chars of condition each: ~320 KB of watch items.
    let rows: Vec<Row> = (0..40)
        .map(|i| {
            let key = format!("k{i}");
            let value = "v".repeat(7_990);
            b.put(
                WriteReason::StandingTrigger,
                kledger_testkit::build::trigger(
                    &format!("Watch {i}"),
                    &[(key.as_str(), value.as_str())],
                ),
            )
        })
        .collect();
    let roomy = render::view(ACCT, 0, 40, NOW, rows.iter(), 1 << 20);
    assert_eq!(roomy.watchlist.len(), 40);
    assert!(!roomy.watchlist_truncated);
    // A budget of 100 KB keeps whole items in memory-id order while they fit, and says so.
    let budget = 100_000;
    let tight = render::view(ACCT, 0, 40, NOW, rows.iter(), budget);
    assert!(tight.watchlist_truncated);
    assert!(!tight.watchlist.is_empty() && tight.watchlist.len() < 40);
    assert!(encode_single_object(&tight).len() <= budget);
    assert_eq!(
        tight.watchlist[..],
        roomy.watchlist[..tight.watchlist.len()]
    );
    assert_eq!(
        tight.active_triggers, 40,
        "counts still count every trigger"
    );
}

#[test]
fn restricted_triggers_never_reach_the_published_watchlist() {
    let mut b = ledger();
    let normal = b.put(
        WriteReason::StandingTrigger,
        kledger_testkit::build::trigger("Watch the normal thing", &[("topic", "normal")]),
    );
    let mut sensitive = kledger_testkit::build::trigger("Watch a sensitive thing", &[("k", "s")]);
    sensitive.sensitivity.level = SensitivityLevel::Sensitive;
    let sensitive = b.put(WriteReason::StandingTrigger, sensitive);
    let mut restricted =
        kledger_testkit::build::trigger("Watch the restricted marker", &[("topic", "marker")]);
    restricted.sensitivity.level = SensitivityLevel::Restricted;
    let restricted = b.put(WriteReason::StandingTrigger, restricted);
    let rows = current(&b);
    assert!(rows.iter().any(|r| r.memory_id == restricted.memory_id));
    let view = render::view(ACCT, 0, 3, NOW, rows.iter(), 1 << 20);
    let ids: Vec<&str> = view
        .watchlist
        .iter()
        .map(|w| w.memory_id.as_str())
        .collect();
    let mut want = vec![normal.memory_id.as_str(), sensitive.memory_id.as_str()];
    want.sort();
    assert_eq!(
        ids, want,
        "the restricted trigger is left out, the others kept"
    );
    // Nothing of it in the record that goes on the topic.
    let bytes = kledger_schemas::avro::encode_single_object(&view);
    assert!(!bytes.windows(6).any(|w| w == b"marker"));
    assert!(
        !bytes
            .windows(restricted.memory_id.len())
            .any(|w| w == restricted.memory_id.as_bytes())
    );
}

#[test]
fn the_largest_receipt_is_far_under_the_smallest_budget() {
    use kledger_schemas::avro::encode_single_object;
    use kledger_schemas::limits::{RECORD_BYTES_MIN, TARGETS_MAX};
    // Every field a receipt carries at its widest: 17 stale targets (16 planned + a slot
    // occupant), 16 memory ids, the longest ids, a message of a rule's longest detail.
    let wide = |n: usize| "\u{10FFFF}".repeat(n);
    let r = Receipt {
        action_id: wide(256),
        account_id: wide(1_024),
        outcome: Outcome::Replan,
        commit_seq: Some(i64::MAX),
        rebased: true,
        head_seq: i64::MAX,
        head_hash: "f".repeat(64),
        code: Some("slot_occupied".into()),
        message: Some(wide(4_096)),
        stale_targets: (0..=TARGETS_MAX)
            .map(|_| StaleTarget {
                memory_id: wide(256),
                revision: Some(i64::MAX),
                content_hash: Some("f".repeat(64)),
                status: Some(Status::Superseded),
            })
            .collect(),
        memory_ids: (0..16).map(|_| wide(256)).collect(),
        intent_partition: i32::MAX,
        intent_offset: i64::MAX,
        recorded_at: i64::MAX,
    };
    let n = encode_single_object(&r).len();
    assert!(n < 64 << 10, "{n} bytes");
    assert!(n < RECORD_BYTES_MIN);
}
