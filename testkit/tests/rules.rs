//! Table tests for every apply rule and every reason code, each named after its rule or code.

use kledger_processors::decide::{commit_overhead_bytes, op_bytes};
use kledger_processors::ids::GENESIS_HASH;
use kledger_processors::{Code, Limits, ids};
use kledger_schemas::*;
use kledger_testkit::build::{
    amend, close, document, evidence, fact, intent, plan, purge, slotted, third_party, trigger,
};
use kledger_testkit::invalid;
use kledger_testkit::ledger::Ledger;

const ACCT: &str = "t_acme/user/u_1";
const T0: i64 = 1_767_225_600_000;

fn rec(i: Intent, t: i64) -> IntentRecord {
    IntentRecord {
        timestamp: t,
        partition: None,
        offset: None,
        intent: i,
    }
}

/// Commits `op` and returns the created row.
fn commit_one(l: &mut Ledger, action: &str, reason: WriteReason, op: AssertOp) -> Row {
    let head = l.commits.iter().filter(|c| c.account_id == ACCT).count() as i64;
    let d = l.apply(&rec(
        intent(ACCT, action, reason, head, vec![Op::Assert(op)]),
        T0 + head,
    ));
    assert_eq!(d.outcome(), Outcome::Committed, "{:?}", d.receipt);
    d.into_commit().unwrap().ops[0].row.clone()
}

fn expect(d: &kledger_processors::Decision, outcome: Outcome, code: Option<Code>) {
    assert_eq!(d.outcome(), outcome, "{:?}", d.receipt);
    assert_eq!(
        d.receipt.code.as_deref(),
        code.map(Code::as_str),
        "{:?}",
        d.receipt
    );
}

// ---- rule 1: validation, one test per code (cases from the catalogue) ----

macro_rules! validation_test {
    ($($test:ident => $code:ident),+ $(,)?) => {$(
        #[test]
        fn $test() {
            let cases: Vec<_> = invalid::cases().into_iter().filter(|c| c.code == Code::$code).collect();
            assert!(!cases.is_empty(), "no catalogue case for {:?}", Code::$code);
            for c in cases {
                let mut l = Ledger::new(4);
                let d = l.apply(&invalid::make(&c));
                assert_eq!(d.outcome(), Outcome::Rejected, "{}: {:?}", c.name, d.receipt);
                assert_eq!(d.receipt.code.as_deref(), Some(Code::$code.as_str()), "{}: {:?}", c.name, d.receipt);
                assert!(d.commits.is_empty());
                assert!(l.commits.is_empty());
            }
        }
    )+};
}

validation_test! {
    rule1_bad_record_time => BadRecordTime,
    rule1_bad_action_id => BadActionId,
    rule1_bad_account_id => BadAccountId,
    rule1_account_mismatch => AccountMismatch,
    rule1_bad_identifier => BadIdentifier,
    rule1_bad_source => BadSource,
    rule1_bad_extractor => BadExtractor,
    rule1_no_ops => NoOps,
    rule1_too_many_ops => TooManyOps,
    rule1_content_empty => ContentEmpty,
    rule1_content_too_long => ContentTooLong,
    rule1_content_multiline => ContentMultiline,
    rule1_body_missing => BodyMissing,
    rule1_body_too_long => BodyTooLong,
    rule1_body_empty => BodyEmpty,
    rule1_hidden_chars => HiddenChars,
    rule1_body_not_allowed => BodyNotAllowed,
    rule1_document_reason => DocumentReason,
    rule1_trigger_reason => TriggerReason,
    rule1_condition_missing => ConditionMissing,
    rule1_condition_too_large => ConditionTooLarge,
    rule1_condition_not_allowed => ConditionNotAllowed,
    rule1_unknown_slot => UnknownSlot,
    rule1_slot_not_allowed => SlotNotAllowed,
    rule1_slot_conflict => SlotConflict,
    rule1_entity_required => EntityRequired,
    rule1_bad_timestamp => BadTimestamp,
    rule1_bad_validity => BadValidity,
    rule1_bad_confidence => BadConfidence,
    rule1_bad_curation_weight => BadCurationWeight,
    rule1_bad_list => BadList,
    rule1_field_too_long => FieldTooLong,
    rule1_evidence_limit => EvidenceLimit,
    rule1_bad_embedding => BadEmbedding,
    rule1_bad_head_seq => BadHeadSeq,
    rule1_bad_targets => BadTargets,
    rule1_target_unplanned => TargetUnplanned,
    rule1_duplicate_target => DuplicateTarget,
    rule1_bad_reason => BadReason,
    rule1_bad_purge => BadPurge,
    rule1_purge_mixed => PurgeMixed,
}

/// Rules v1 (the validation of ledgers started before v2) accepts what v2 refuses for its
/// characters and ACL entries, and answers an empty body as v1 did: a ledger keeps deciding its
/// history as it was decided.
#[test]
fn rule1_v1_keeps_deciding_as_before() {
    let v1 = Limits {
        rules: kledger_processors::Rules::V1,
        ..Limits::default()
    };
    let v2_only = invalid::cases().into_iter().filter(|c| {
        c.name.contains("acl") && c.code == Code::BadIdentifier
            || c.code == Code::HiddenChars
            || c.name.contains("U+202")
    });
    let mut n = 0;
    for c in v2_only {
        n += 1;
        let r = invalid::make(&c);
        // Under v1 the case passes rule 1 (a close of a row that is not there is then
        // rejected by rule 4, after validation).
        let d = Ledger::with_limits(4, v1).apply(&r);
        let passed = d.outcome() == Outcome::Committed
            || d.receipt.code.as_deref() == Some(Code::TargetMissing.as_str());
        assert!(passed, "{} under v1: {:?}", c.name, d.receipt);
        let d = Ledger::new(4).apply(&r);
        assert_eq!(
            d.receipt.code.as_deref(),
            Some(c.code.as_str()),
            "{} under v2",
            c.name
        );
    }
    assert!(n >= 25, "{n} v2-only cases");
    let empty_body = invalid::cases()
        .into_iter()
        .find(|c| c.name == "document with empty body")
        .unwrap();
    let d = Ledger::with_limits(4, v1).apply(&invalid::make(&empty_body));
    expect(&d, Outcome::Rejected, Some(Code::BodyTooLong));
}

#[test]
fn every_code_has_a_test_case() {
    // Validation codes come from the catalogue; the rest are exercised by the tests below.
    let stateful = [
        Code::ActionReused,
        Code::Overtaken,
        Code::TargetMissing,
        Code::AmendMismatch,
        Code::Authority,
        Code::StaleTarget,
        Code::HeadMoved,
        Code::SlotOccupied,
        Code::MalformedJson,
        Code::CommitTooLarge,
        // The processor's answer to a commit the broker refuses (topology/tests/kafka_mock.rs).
        Code::RecordRefused,
        // Rules v3 and a source document, and the people documents' rules v5
        // (testkit/tests/sources.rs).
        Code::SourceUnsupported,
        Code::UnknownPerson,
        Code::AliasAmbiguous,
        Code::AliasIsOwner,
    ];
    let covered = invalid::covered_codes();
    for code in Code::ALL {
        assert!(
            covered.contains(code) || stateful.contains(code),
            "{code} has no test"
        );
    }
}

#[test]
fn rule1_valid_intent_commits() {
    let mut l = Ledger::new(4);
    let d = l.apply(&invalid::base_for_cases());
    expect(&d, Outcome::Committed, None);
}

#[test]
fn rule1_validation_runs_before_idempotency() {
    let mut l = Ledger::new(4);
    let r = invalid::base_for_cases();
    expect(&l.apply(&r), Outcome::Committed, None);
    let mut bad = r.clone();
    bad.intent.ops = vec![];
    expect(&l.apply(&bad), Outcome::Rejected, Some(Code::NoOps));
}

// ---- rule 2: idempotency ----

#[test]
fn rule2_duplicate_returns_the_original_commit_seq() {
    let mut l = Ledger::new(4);
    let r = rec(
        intent(
            ACCT,
            "a1",
            WriteReason::DirectUserStatement,
            0,
            vec![Op::Assert(fact("Likes tea"))],
        ),
        T0,
    );
    let first = l.apply(&r);
    expect(&first, Outcome::Committed, None);
    commit_one(
        &mut l,
        "a2",
        WriteReason::DirectUserStatement,
        fact("Likes jazz"),
    );
    let mut retry = r.clone();
    retry.timestamp = T0 + 99;
    retry.intent.planned_against.head_seq = 2; // a retry may be planned against a newer head
    let again = l.apply(&retry);
    expect(&again, Outcome::Duplicate, None);
    assert_eq!(again.receipt.commit_seq, Some(1));
    assert_eq!(l.commits.len(), 2);
}

#[test]
fn rule2_action_reused() {
    let mut l = Ledger::new(4);
    let r = rec(
        intent(
            ACCT,
            "a1",
            WriteReason::DirectUserStatement,
            0,
            vec![Op::Assert(fact("Likes tea"))],
        ),
        T0,
    );
    l.apply(&r);
    let mut other = r.clone();
    other.intent.ops = vec![Op::Assert(fact("Likes coffee"))];
    other.intent.planned_against.head_seq = 1;
    expect(
        &l.apply(&other),
        Outcome::Rejected,
        Some(Code::ActionReused),
    );
}

#[test]
fn rule2_replanned_action_may_come_again() {
    let mut l = Ledger::new(4);
    let old = commit_one(
        &mut l,
        "a1",
        WriteReason::DirectUserStatement,
        slotted("home_city", "Lives in Oslo"),
    );
    let mut i = intent(
        ACCT,
        "a2",
        WriteReason::DirectUserStatement,
        1,
        vec![Op::Assert(slotted("home_city", "Lives in Rome"))],
    );
    expect(
        &l.apply(&rec(i.clone(), T0 + 5)),
        Outcome::Replan,
        Some(Code::SlotOccupied),
    );
    i.ops = vec![amend(&[&old], slotted("home_city", "Lives in Rome"))];
    plan(&mut i, &old);
    expect(&l.apply(&rec(i, T0 + 6)), Outcome::Committed, None);
}

#[test]
fn rule2_overtaken_an_intent_read_again_after_a_later_commit_never_commits() {
    // After a crash, intents are read again from the last committed input offset while the
    // restored head may already hold commits of later intents. One that was answered `replan`
    // the first time must not commit now, though the later commit freed its slot.
    let mut l = Ledger::new(4);
    let occupant = commit_one(
        &mut l,
        "a1",
        WriteReason::DirectUserStatement,
        slotted("home_city", "Lives in Oslo"),
    );
    let rome = rec(
        intent(
            ACCT,
            "a2",
            WriteReason::DirectUserStatement,
            1,
            vec![Op::Assert(slotted("home_city", "Lives in Rome"))],
        ),
        T0 + 1,
    );
    let first_read = l.position(&rome);
    let first = l.apply_at(&rome, first_read);
    expect(&first, Outcome::Replan, Some(Code::SlotOccupied));
    let mut moved = intent(
        ACCT,
        "a3",
        WriteReason::DirectUserStatement,
        1,
        vec![close(&occupant, "moved")],
    );
    plan(&mut moved, &occupant);
    expect(&l.apply(&rec(moved, T0 + 2)), Outcome::Committed, None);
    let again = l.apply_at(&rome, first_read);
    expect(&again, Outcome::Replan, Some(Code::Overtaken));
    assert!(again.commits.is_empty());
    assert_eq!(l.commits.len(), 2);
    // The same intent published again (a later offset) is decided normally.
    let republished = l.apply(&rome);
    expect(&republished, Outcome::Committed, None);
    assert_eq!(republished.into_commit().unwrap().commit_seq, 3);
}

// ---- rule 3: head ----

#[test]
fn rule3_head_match_commits_without_rebase() {
    let mut l = Ledger::new(4);
    commit_one(
        &mut l,
        "a1",
        WriteReason::DirectUserStatement,
        fact("Likes tea"),
    );
    let d = l.apply(&rec(
        intent(
            ACCT,
            "a2",
            WriteReason::DirectUserStatement,
            1,
            vec![Op::Assert(fact("x"))],
        ),
        T0 + 9,
    ));
    expect(&d, Outcome::Committed, None);
    assert!(!d.receipt.rebased);
}

#[test]
fn rule3_rebase_when_targets_unchanged() {
    let mut l = Ledger::new(4);
    let target = commit_one(
        &mut l,
        "a1",
        WriteReason::DirectUserStatement,
        fact("Likes tea"),
    );
    commit_one(
        &mut l,
        "a2",
        WriteReason::DirectUserStatement,
        fact("Likes jazz"),
    );
    let mut i = intent(
        ACCT,
        "a3",
        WriteReason::DirectUserStatement,
        1,
        vec![close(&target, "no longer")],
    );
    plan(&mut i, &target);
    let d = l.apply(&rec(i, T0 + 9));
    expect(&d, Outcome::Committed, None);
    assert!(d.receipt.rebased);
    assert!(d.into_commit().unwrap().rebased);
}

#[test]
fn rule3_head_moved_strict() {
    let mut l = Ledger::new(4);
    commit_one(
        &mut l,
        "a1",
        WriteReason::DirectUserStatement,
        fact("Likes tea"),
    );
    let mut i = intent(
        ACCT,
        "a2",
        WriteReason::DirectUserStatement,
        0,
        vec![Op::Assert(fact("x"))],
    );
    i.planned_against.policy = HeadPolicy::Strict;
    let d = l.apply(&rec(i, T0 + 9));
    expect(&d, Outcome::Replan, Some(Code::HeadMoved));
    assert_eq!(d.receipt.head_seq, 1);
}

#[test]
fn rule3_stale_target_never_blind_writes() {
    let mut l = Ledger::new(4);
    let target = commit_one(
        &mut l,
        "a1",
        WriteReason::DirectUserStatement,
        fact("Likes tea"),
    );
    // Another extractor attaches evidence: revision 2.
    let mut i = intent(
        ACCT,
        "a2",
        WriteReason::DirectUserStatement,
        1,
        vec![Op::AttachEvidence(AttachEvidenceOp {
            target: target.memory_id.clone(),
            evidence: vec![evidence("m1", None)],
        })],
    );
    plan(&mut i, &target);
    expect(&l.apply(&rec(i, T0 + 2)), Outcome::Committed, None);
    // A close planned against revision 1 must replan, listing the target as it is now.
    let mut c = intent(
        ACCT,
        "a3",
        WriteReason::DirectUserStatement,
        1,
        vec![close(&target, "gone")],
    );
    plan(&mut c, &target);
    let d = l.apply(&rec(c, T0 + 3));
    expect(&d, Outcome::Replan, Some(Code::StaleTarget));
    assert_eq!(d.receipt.stale_targets.len(), 1);
    assert_eq!(d.receipt.stale_targets[0].revision, Some(2));
    assert_eq!(d.receipt.stale_targets[0].status, Some(Status::Active));
    assert_eq!(
        l.row(ACCT, &target.memory_id).unwrap().status,
        Status::Active
    );
}

#[test]
fn rule3_stale_target_when_inactive() {
    let mut l = Ledger::new(4);
    let target = commit_one(
        &mut l,
        "a1",
        WriteReason::DirectUserStatement,
        fact("Likes tea"),
    );
    let mut c = intent(
        ACCT,
        "a2",
        WriteReason::DirectUserStatement,
        1,
        vec![close(&target, "gone")],
    );
    plan(&mut c, &target);
    expect(&l.apply(&rec(c, T0 + 2)), Outcome::Committed, None);
    let mut again = intent(
        ACCT,
        "a3",
        WriteReason::DirectUserStatement,
        1,
        vec![close(&target, "gone")],
    );
    plan(&mut again, &l.row(ACCT, &target.memory_id).unwrap());
    let d = l.apply(&rec(again, T0 + 3));
    expect(&d, Outcome::Replan, Some(Code::StaleTarget));
    assert_eq!(d.receipt.stale_targets[0].status, Some(Status::Closed));
}

// ---- rule 4: targets and slots ----

#[test]
fn rule4_target_missing() {
    let mut l = Ledger::new(4);
    commit_one(
        &mut l,
        "a1",
        WriteReason::DirectUserStatement,
        fact("Likes tea"),
    );
    let mut c = intent(
        ACCT,
        "a2",
        WriteReason::DirectUserStatement,
        1,
        vec![Op::Close(CloseOp {
            target: "mem_01J000000000000000000000".into(),
            valid_to: None,
            reason: "x".into(),
        })],
    );
    c.planned_against.targets.push(TargetRef {
        memory_id: "mem_01J000000000000000000000".into(),
        revision: 1,
        content_hash: "h".into(),
    });
    expect(
        &l.apply(&rec(c, T0 + 1)),
        Outcome::Rejected,
        Some(Code::TargetMissing),
    );
}

#[test]
fn rule4_amend_mismatch() {
    let mut l = Ledger::new(4);
    let old = commit_one(
        &mut l,
        "a1",
        WriteReason::DirectUserStatement,
        fact("Likes tea"),
    );
    let mut i = intent(
        ACCT,
        "a2",
        WriteReason::DirectUserStatement,
        1,
        vec![amend(&[&old], third_party("person_x", "Likes tea"))],
    );
    plan(&mut i, &old);
    expect(
        &l.apply(&rec(i, T0 + 1)),
        Outcome::Rejected,
        Some(Code::AmendMismatch),
    );
}

#[test]
fn rule4_slot_occupied() {
    let mut l = Ledger::new(4);
    let occupant = commit_one(
        &mut l,
        "a1",
        WriteReason::DirectUserStatement,
        slotted("home_city", "Lives in Oslo"),
    );
    // Alias `city` resolves to the same slot.
    let i = intent(
        ACCT,
        "a2",
        WriteReason::DirectUserStatement,
        1,
        vec![Op::Assert(slotted("city", "Lives in Rome"))],
    );
    let d = l.apply(&rec(i, T0 + 1));
    expect(&d, Outcome::Replan, Some(Code::SlotOccupied));
    assert_eq!(d.receipt.stale_targets[0].memory_id, occupant.memory_id);
}

#[test]
fn rule4_slot_freed_by_close_in_same_intent() {
    let mut l = Ledger::new(4);
    let occupant = commit_one(
        &mut l,
        "a1",
        WriteReason::DirectUserStatement,
        slotted("home_city", "Lives in Oslo"),
    );
    let mut i = intent(
        ACCT,
        "a2",
        WriteReason::DirectUserStatement,
        1,
        vec![
            close(&occupant, "moved"),
            Op::Assert(slotted("home_city", "Lives in Rome")),
        ],
    );
    plan(&mut i, &occupant);
    expect(&l.apply(&rec(i, T0 + 1)), Outcome::Committed, None);
}

#[test]
fn rule4_slots_only_bind_primary_user_facts() {
    let mut l = Ledger::new(4);
    let mut a = third_party("person_anna", "Anna lives in Oslo");
    a.slot = Some("home_city".into());
    commit_one(&mut l, "a1", WriteReason::DirectUserStatement, a.clone());
    commit_one(
        &mut l,
        "a2",
        WriteReason::DirectUserStatement,
        slotted("home_city", "Lives in Rome"),
    );
    a.content = "Anna lives in Bergen".into();
    commit_one(&mut l, "a3", WriteReason::DirectUserStatement, a);
}

// ---- rule 5: authority ----

#[test]
fn rule5_authority() {
    let mut l = Ledger::new(4);
    let user = commit_one(
        &mut l,
        "a1",
        WriteReason::DirectUserStatement,
        slotted("employer", "Works at Acme"),
    );
    let mut i = intent(
        ACCT,
        "a2",
        WriteReason::DailyReconciliation,
        1,
        vec![amend(&[&user], slotted("employer", "Works at Globex"))],
    );
    plan(&mut i, &user);
    expect(
        &l.apply(&rec(i.clone(), T0 + 1)),
        Outcome::Rejected,
        Some(Code::Authority),
    );
    let mut c = intent(
        ACCT,
        "a3",
        WriteReason::AgentReusableConclusion,
        1,
        vec![close(&user, "stale")],
    );
    plan(&mut c, &user);
    expect(
        &l.apply(&rec(c, T0 + 2)),
        Outcome::Rejected,
        Some(Code::Authority),
    );
    // The same reason from a higher-ranked source type is allowed.
    i.action_id = "a4".into();
    i.write_reason = WriteReason::DirectUserStatement;
    i.source.source_type = "system_of_record".into();
    expect(&l.apply(&rec(i, T0 + 3)), Outcome::Committed, None);
}

#[test]
fn rule5_purge_outranks_everything() {
    let mut l = Ledger::new(4);
    let user = commit_one(
        &mut l,
        "a1",
        WriteReason::DirectUserStatement,
        fact("Likes tea"),
    );
    let p = intent(
        ACCT,
        "a2",
        WriteReason::StandingTrigger,
        0,
        vec![Op::Purge(PurgeOp {
            target: Some(user.memory_id.clone()),
            ..PurgeOp::default()
        })],
    );
    let d = l.apply(&rec(p, T0 + 1));
    expect(&d, Outcome::Committed, None);
    assert_eq!(
        d.into_commit().unwrap().ops[0].row.status,
        Status::Tombstoned
    );
}

// ---- rule 6: commit ----

#[test]
fn rule6_commit_fields() {
    let mut l = Ledger::new(4);
    let mut op = slotted("city", "Lives in Oslo");
    op.valid_from = Some(T0 - 1_000);
    let d = l.apply(&rec(
        intent(
            ACCT,
            "a1",
            WriteReason::DirectUserStatement,
            0,
            vec![Op::Assert(op.clone())],
        ),
        T0,
    ));
    let c = d.commit().unwrap().clone();
    assert_eq!(c.commit_seq, 1);
    assert_eq!(c.prev_hash, GENESIS_HASH);
    assert_eq!(c.recorded_at, T0);
    let row = &c.ops[0].row;
    assert_eq!(c.ops[0].change, Change::Created);
    assert_eq!(row.slot.as_deref(), Some("home_city"));
    assert_eq!(row.recorded_at, T0);
    assert_eq!(row.valid_from, T0 - 1_000);
    assert!(row.user_asserted && row.intent_backed);
    assert_eq!(row.authority, 600);
    assert_eq!(row.revision, 1);
    assert_eq!(d.receipt.memory_ids, vec![row.memory_id.clone()]);
    // memory_id = mem_ + ULID whose time part is valid_from.
    let ulid = ids::parse_ulid(row.memory_id.strip_prefix("mem_").unwrap()).unwrap();
    assert_eq!((ulid >> 80) as i64, T0 - 1_000);
    // Rules v4 (the default): its 80 bits are keyed with the ledger's secret.
    let secret = l.limits().secret;
    assert_eq!(
        row.memory_id,
        ids::memory_id_with(
            Some(&secret),
            ACCT,
            "a1",
            0,
            &op,
            Some("home_city"),
            T0 - 1_000,
            &[]
        )
    );
    assert_ne!(
        row.memory_id,
        ids::memory_id(ACCT, "a1", 0, &op, Some("home_city"), T0 - 1_000, &[]),
        "without the secret the id is another"
    );
}

/// Rules v4: a tombstone confirms no guess of what it held. Its memory id, content hash and
/// content MAC are keyed with the ledger's secret: an attacker who guesses the exact text (and
/// every other input) but lacks the secret computes other values, with or without hashing the
/// guess, and under any other secret; with the secret the guess would be confirmed, so the
/// property rests on the secret alone.
#[test]
fn rule7_a_v4_tombstone_confirms_no_guess_without_the_secret() {
    use sha2::{Digest, Sha256};
    let secret = ids::LedgerSecret([7; 32]);
    let mut l = Ledger::with_limits(
        4,
        Limits {
            secret,
            ..Limits::default()
        },
    );
    let mut op = slotted("city", "Lives in Kyiv");
    op.valid_from = Some(T0 - 1_000);
    let w = WriteReason::DirectUserStatement;
    let d = l.apply(&rec(
        intent(ACCT, "a1", w, 0, vec![Op::Assert(op.clone())]),
        T0,
    ));
    let row = d.into_commit().unwrap().ops[0].row.clone();
    let mut p = intent(ACCT, "p1", w, 1, vec![purge(&row, "erasure request")]);
    plan(&mut p, &row);
    let d = l.apply(&rec(p, T0 + 1));
    expect(&d, Outcome::Committed, None);
    let t = d.into_commit().unwrap().ops[0].row.clone();
    assert_eq!(t.status, Status::Tombstoned);
    assert!(t.content.is_empty() && t.tags.is_empty() && t.evidence.is_empty());
    let mac = |r: &Row| r.sealed.as_ref().map(|s| s.mac.clone()).unwrap_or_default();
    // What the outbox keeps for ever: the tombstone, and the row as created (its content sealed
    // under a key the purge destroyed, its content hash and MAC in the clear).
    let held = [
        t.memory_id.clone(),
        t.content_hash.clone(),
        mac(&t),
        row.content_hash.clone(),
        mac(&row),
    ];
    let slot = Some("home_city");
    let hex = |b: &[u8]| ids::to_hex(b);
    let id_under = |s: Option<&ids::LedgerSecret>| {
        ids::memory_id_with(s, ACCT, "a1", 0, &op, slot, T0 - 1_000, &[])
    };
    let hash_under = |s: &ids::LedgerSecret| {
        ids::content_hash_with(
            ids::Keying::Keyed {
                secret: s,
                account_id: ACCT,
            },
            "fact",
            "Lives in Kyiv",
            None,
            None,
            slot,
            &row.subject,
        )
    };
    let other = ids::LedgerSecret([8; 32]);
    let guesses = [
        id_under(None),
        id_under(Some(&other)),
        ids::content_hash("fact", "Lives in Kyiv", None, None, slot, &row.subject),
        hash_under(&other),
        hex(&Sha256::digest(b"Lives in Kyiv")),
        hex(&Sha256::digest(format!("{ACCT}Lives in Kyiv").as_bytes())),
    ];
    for g in &guesses {
        // The id's random part (after the ULID's time) or any whole hash.
        let part = g.strip_prefix("mem_").map_or(g.as_str(), |u| &u[10..]);
        assert!(
            !held.iter().any(|h| h.contains(part)),
            "{g} confirms the guess from the tombstone {held:?}"
        );
    }
    assert_eq!(
        t.memory_id,
        id_under(Some(&secret)),
        "with the secret it would"
    );
    assert_eq!(row.content_hash, hash_under(&secret));
    assert_ne!(
        t.content_hash, row.content_hash,
        "a tombstone hashes no content"
    );
}

/// Rules v4 memory ids stay collision-free and deterministic: distinct rows (by content, slot,
/// action, op index or account) never share an id, and the same inputs give the same id.
#[test]
fn rule6_v4_memory_ids_are_distinct_and_deterministic() {
    let secret = ids::LedgerSecret([3; 32]);
    let mut seen = std::collections::BTreeMap::new();
    for n in 0..4_000u32 {
        let op = fact(&format!("Fact number {}", n % 1_000));
        let account = format!("t_acme/user/u_{}", n % 3);
        let action = format!("a{}", n / 1_000);
        let id = ids::memory_id_with(
            Some(&secret),
            &account,
            &action,
            (n % 2) as usize,
            &op,
            None,
            T0,
            &[],
        );
        let again = ids::memory_id_with(
            Some(&secret),
            &account,
            &action,
            (n % 2) as usize,
            &op,
            None,
            T0,
            &[],
        );
        assert_eq!(id, again, "deterministic");
        let key = (account, action, n % 2, n % 1_000);
        if let Some(prev) = seen.insert(id.clone(), key.clone()) {
            assert_eq!(prev, key, "{id} shared by two rows");
        }
    }
    assert_eq!(seen.len(), 4_000, "every row its own id");
}

#[test]
fn rule6_user_asserted_and_intent_backed_by_reason() {
    // `source_sync` writes source documents only (testkit/tests/sources.rs).
    for reason in WriteReason::ALL
        .iter()
        .filter(|r| **r != WriteReason::SourceSync)
    {
        let mut l = Ledger::new(4);
        let op = match reason {
            WriteReason::RecurringWorkflow => document("Playbook", "steps"),
            WriteReason::StandingTrigger => trigger("Alert", &[("event", "x")]),
            _ => fact("Likes tea"),
        };
        let row = commit_one(&mut l, "a1", *reason, op);
        let asserted = matches!(
            reason,
            WriteReason::DirectUserStatement
                | WriteReason::ExplicitRemember
                | WriteReason::Onboarding
        );
        assert_eq!(row.user_asserted, asserted, "{reason}");
        assert_eq!(
            row.intent_backed,
            *reason != WriteReason::LegacyMigration,
            "{reason}"
        );
    }
}

#[test]
fn rule6_amend_closes_every_predecessor_in_one_commit() {
    let mut l = Ledger::new(4);
    let mut a = fact("Works at Acme");
    a.valid_from = Some(T0 - 10_000);
    let a = commit_one(&mut l, "a1", WriteReason::DirectUserStatement, a);
    let b = commit_one(
        &mut l,
        "a2",
        WriteReason::DirectUserStatement,
        fact("Works at Acme Corp"),
    );
    let mut rep = fact("Works at Globex");
    rep.valid_from = Some(T0 - 5_000);
    let mut i = intent(
        ACCT,
        "a3",
        WriteReason::DirectUserStatement,
        2,
        vec![amend(&[&a, &b], rep)],
    );
    plan(&mut i, &a);
    plan(&mut i, &b);
    let c = l.apply(&rec(i, T0 + 10)).into_commit().unwrap();
    assert_eq!(c.ops.len(), 3);
    let new_id = c.ops[0].row.memory_id.clone();
    assert_eq!(c.ops[0].change, Change::Created);
    for (op, old) in c.ops[1..].iter().zip([&a, &b]) {
        assert_eq!(op.change, Change::Superseded);
        assert_eq!(op.row.memory_id, old.memory_id);
        assert_eq!(op.row.status, Status::Superseded);
        assert_eq!(op.row.superseded_by.as_deref(), Some(new_id.as_str()));
        assert_eq!(op.row.revision, 2);
        assert_eq!(op.row.commit_seq, 3);
        // valid_to = max(predecessor valid_from, replacement valid_from)
        assert_eq!(op.row.valid_to, Some(old.valid_from.max(T0 - 5_000)));
    }
}

#[test]
fn rule6_close_sets_valid_to_and_keeps_history() {
    let mut l = Ledger::new(4);
    let a = commit_one(
        &mut l,
        "a1",
        WriteReason::DirectUserStatement,
        fact("Likes tea"),
    );
    let mut i = intent(
        ACCT,
        "a2",
        WriteReason::DirectUserStatement,
        1,
        vec![close(&a, "changed taste")],
    );
    plan(&mut i, &a);
    let c = l.apply(&rec(i, T0 + 50)).into_commit().unwrap();
    let row = &c.ops[0].row;
    assert_eq!(
        (c.ops[0].change, row.status),
        (Change::Closed, Status::Closed)
    );
    assert_eq!(row.valid_to, Some(T0 + 50));
    assert_eq!(row.closed_reason.as_deref(), Some("changed taste"));
    assert_eq!(row.content, "Likes tea");
}

#[test]
fn rule6_attach_evidence() {
    let mut l = Ledger::new(4);
    let a = commit_one(
        &mut l,
        "a1",
        WriteReason::DirectUserStatement,
        fact("Likes tea"),
    );
    let mut i = intent(
        ACCT,
        "a2",
        WriteReason::DailyReconciliation,
        1,
        vec![Op::AttachEvidence(AttachEvidenceOp {
            target: a.memory_id.clone(),
            evidence: vec![evidence("m9", Some("I love tea"))],
        })],
    );
    plan(&mut i, &a);
    let c = l.apply(&rec(i, T0 + 1)).into_commit().unwrap();
    assert_eq!(c.ops[0].change, Change::EvidenceAttached);
    assert_eq!(c.ops[0].row.evidence.len(), 1);
    assert_eq!(c.ops[0].row.content_hash, a.content_hash);
    // The row's quote budget holds across attachments.
    let row = c.ops[0].row.clone();
    let mut over = intent(
        ACCT,
        "a3",
        WriteReason::DailyReconciliation,
        2,
        vec![Op::AttachEvidence(AttachEvidenceOp {
            target: a.memory_id.clone(),
            evidence: (0..8)
                .map(|i| evidence(&format!("q{i}"), Some("quote")))
                .collect(),
        })],
    );
    plan(&mut over, &row);
    expect(
        &l.apply(&rec(over, T0 + 2)),
        Outcome::Rejected,
        Some(Code::EvidenceLimit),
    );
}

#[test]
fn rule6_head_hash_chains() {
    let mut l = Ledger::new(4);
    for i in 0..5 {
        commit_one(
            &mut l,
            &format!("a{i}"),
            WriteReason::DirectUserStatement,
            fact(&format!("fact {i}")),
        );
    }
    let mut prev = GENESIS_HASH.to_owned();
    for c in &l.commits {
        assert_eq!(c.prev_hash, prev);
        let mut copy = c.clone();
        assert_eq!(ids::head_hash(&mut copy), c.head_hash);
        prev = c.head_hash.clone();
    }
}

// ---- rule 7: purge ----

#[test]
fn rule7_purge_row_erases_content_keeps_lineage() {
    let mut l = Ledger::new(4);
    let mut op = fact("Has a rare condition");
    op.evidence = vec![evidence("m1", Some("secret words"))];
    let a = commit_one(&mut l, "a1", WriteReason::DirectUserStatement, op);
    let p = intent(
        ACCT,
        "a2",
        WriteReason::DirectUserStatement,
        1,
        vec![Op::Purge(PurgeOp {
            target: Some(a.memory_id.clone()),
            reason: "user request".into(),
            ..PurgeOp::default()
        })],
    );
    let c = l.apply(&rec(p, T0 + 1)).into_commit().unwrap();
    let row = &c.ops[0].row;
    assert_eq!(row.status, Status::Tombstoned);
    assert!(row.content.is_empty() && row.body.is_none() && row.condition.is_none());
    assert_eq!(row.evidence[0].quote, None);
    assert_eq!(row.evidence[0].source_id, "conv_m1");
    assert_ne!(row.content_hash, a.content_hash);
    assert_eq!(
        l.row(ACCT, &a.memory_id).unwrap().status,
        Status::Tombstoned
    );
}

/// Rules v3 (the default): the tombstone of a closed row also empties its close reason, its
/// sensitivity labels and its evidence checksums; a ledger kept at v2 decides its purges as v2
/// did (all three kept), so its history replays exactly.
#[test]
fn rule7_v3_tombstone_keeps_no_close_reason_labels_or_checksums() {
    let tombstone_of = |limits: Limits| {
        let mut l = Ledger::with_limits(4, limits);
        let mut op = fact("Has a rare condition");
        op.sensitivity.labels = vec!["health-rare-condition".into()];
        let mut e = evidence("m1", Some("secret words"));
        e.checksum = Some("sha256:1111".into());
        op.evidence = vec![e];
        let a = commit_one(&mut l, "a1", WriteReason::DirectUserStatement, op);
        let mut c = intent(
            ACCT,
            "a2",
            WriteReason::DirectUserStatement,
            1,
            vec![close(&a, "moved away from the clinic")],
        );
        plan(&mut c, &a);
        expect(&l.apply(&rec(c, T0 + 1)), Outcome::Committed, None);
        let p = intent(
            ACCT,
            "a3",
            WriteReason::DirectUserStatement,
            2,
            vec![purge(&a, "user request")],
        );
        let c = l.apply(&rec(p, T0 + 2)).into_commit().unwrap();
        c.ops[0].row.clone()
    };
    let v3 = tombstone_of(Limits::default());
    assert_eq!(v3.status, Status::Tombstoned);
    assert_eq!(v3.closed_reason, None);
    assert!(v3.sensitivity.labels.is_empty());
    assert_eq!(v3.evidence[0].checksum, None);
    assert_eq!(v3.evidence[0].source_id, "conv_m1", "lineage is kept");
    let v2 = tombstone_of(Limits {
        rules: kledger_processors::Rules::V2,
        ..Limits::default()
    });
    assert_eq!(
        v2.closed_reason.as_deref(),
        Some("moved away from the clinic")
    );
    assert_eq!(
        v2.sensitivity.labels,
        vec!["health-rare-condition".to_owned()]
    );
    assert_eq!(v2.evidence[0].checksum.as_deref(), Some("sha256:1111"));
}

#[test]
fn rule7_purge_entity() {
    let mut l = Ledger::new(4);
    let x = commit_one(
        &mut l,
        "a1",
        WriteReason::DirectUserStatement,
        third_party("person_anna", "Anna likes tea"),
    );
    let y = commit_one(
        &mut l,
        "a2",
        WriteReason::DirectUserStatement,
        third_party("person_anna", "Anna lives in Oslo"),
    );
    let z = commit_one(
        &mut l,
        "a3",
        WriteReason::DirectUserStatement,
        third_party("person_bo", "Bo likes jazz"),
    );
    let p = intent(
        ACCT,
        "a4",
        WriteReason::DirectUserStatement,
        3,
        vec![Op::Purge(PurgeOp {
            entity_id: Some("person_anna".into()),
            ..PurgeOp::default()
        })],
    );
    let c = l.apply(&rec(p, T0 + 9)).into_commit().unwrap();
    let mut ids: Vec<&str> = c.ops.iter().map(|o| o.row.memory_id.as_str()).collect();
    ids.sort();
    let mut want = vec![x.memory_id.as_str(), y.memory_id.as_str()];
    want.sort();
    assert_eq!(ids, want);
    assert_eq!(l.row(ACCT, &z.memory_id).unwrap().status, Status::Active);
    assert_eq!(c.generation, 0);
}

#[test]
fn rule7_purge_whole_account_bumps_generation() {
    let mut l = Ledger::new(4);
    commit_one(
        &mut l,
        "a1",
        WriteReason::DirectUserStatement,
        slotted("home_city", "Lives in Oslo"),
    );
    commit_one(
        &mut l,
        "a2",
        WriteReason::RecurringWorkflow,
        document("Playbook", "steps"),
    );
    let p = intent(
        ACCT,
        "a3",
        WriteReason::DirectUserStatement,
        0,
        vec![Op::Purge(PurgeOp {
            whole_account: true,
            ..PurgeOp::default()
        })],
    );
    let c = l.apply(&rec(p, T0 + 9)).into_commit().unwrap();
    assert_eq!(c.generation, 1);
    assert_eq!(c.ops.len(), 2);
    assert!(
        c.ops
            .iter()
            .all(|o| o.row.status == Status::Tombstoned && o.row.generation == 1)
    );
    // The slot is free again.
    let row = commit_one(
        &mut l,
        "a4",
        WriteReason::DirectUserStatement,
        slotted("home_city", "Lives in Rome"),
    );
    assert_eq!(row.generation, 1);
}

#[test]
fn rule7_purge_of_a_foreign_row_is_target_missing() {
    let mut l = Ledger::new(4);
    let other = "t_acme/user/u_2";
    let d = l.apply(&rec(
        intent(
            other,
            "b1",
            WriteReason::DirectUserStatement,
            0,
            vec![Op::Assert(fact("Bo's fact"))],
        ),
        T0,
    ));
    let foreign = d.into_commit().unwrap().ops[0].row.memory_id.clone();
    commit_one(
        &mut l,
        "a1",
        WriteReason::DirectUserStatement,
        fact("Likes tea"),
    );
    let p = intent(
        ACCT,
        "a2",
        WriteReason::DirectUserStatement,
        1,
        vec![Op::Purge(PurgeOp {
            target: Some(foreign.clone()),
            ..PurgeOp::default()
        })],
    );
    expect(
        &l.apply(&rec(p, T0 + 1)),
        Outcome::Rejected,
        Some(Code::TargetMissing),
    );
    assert_eq!(l.row(other, &foreign).unwrap().status, Status::Active);
}

#[test]
fn every_code_is_documented() {
    let doc = include_str!("../../docs/error-codes.md");
    for code in Code::ALL {
        assert!(
            doc.contains(&format!("| `{code}` |")),
            "{code} missing from docs/error-codes.md"
        );
    }
    use kledger_schemas::avro::DecodeError as D;
    for e in [
        D::Truncated,
        D::BadVarint,
        D::BadLength,
        D::InvalidUtf8,
        D::BadEnum(0),
        D::BadUnion(0),
        D::BadBool,
        D::DuplicateMapKey,
        D::TrailingBytes(0),
        D::BadMagic,
        D::UnknownSchema(String::new()),
        D::SchemaMismatch(String::new()),
        D::Oversize(0),
        D::Empty,
    ] {
        assert!(
            doc.contains(&format!("| `{}` |", e.code())),
            "{} missing from docs/error-codes.md",
            e.code()
        );
    }
}

#[test]
fn rule6_sealed_body_is_the_commit_encoding() {
    use kledger_schemas::avro::{AvroCodec, SINGLE_OBJECT_HEADER, encode_single_object};
    let mut l = Ledger::new(4);
    let d = l.apply(&rec(
        intent(
            ACCT,
            "a1",
            WriteReason::DirectUserStatement,
            0,
            vec![Op::Assert(fact("Likes tea"))],
        ),
        T0,
    ));
    let (c, record) = (d.commits[0].clone(), d.records[0].clone());
    assert_eq!(record, encode_single_object(&c));
    let mut body = Vec::new();
    c.encode(&mut body);
    assert_eq!(&record[SINGLE_OBJECT_HEADER..], &body[..]);
    let mut copy = c.clone();
    assert_eq!(ids::head_hash(&mut copy), c.head_hash);
}

// ---- the record budget: a commit over it is rejected, a purge is split under it ----

/// `n` facts in `ACCT`, one intent each, through `l`.
fn observations(l: &mut Ledger, n: usize) -> Vec<Row> {
    (0..n)
        .map(|i| {
            commit_one(
                l,
                &format!("obs-{i}"),
                WriteReason::DirectUserStatement,
                fact(&format!(
                    "Observation {i}: prefers window seats on long flights"
                )),
            )
        })
        .collect()
}

fn whole_account_purge(action: &str, head: i64) -> Intent {
    intent(
        ACCT,
        action,
        WriteReason::DirectUserStatement,
        head,
        vec![Op::Purge(PurgeOp {
            whole_account: true,
            reason: "erasure request".into(),
            ..PurgeOp::default()
        })],
    )
}

#[test]
fn budget_commit_too_large_at_its_boundary() {
    let ops: Vec<Op> = (0..4)
        .map(|k| Op::Assert(document(&format!("Playbook {k}"), &"é".repeat(20_000))))
        .collect();
    let it = intent(ACCT, "big", WriteReason::RecurringWorkflow, 0, ops);
    let d = Ledger::new(4).apply(&rec(it.clone(), T0));
    expect(&d, Outcome::Committed, None);
    let bound = commit_overhead_bytes(ACCT, "big")
        + d.commits[0]
            .ops
            .iter()
            .map(|o| op_bytes(&o.row, &Limits::default()))
            .sum::<usize>();
    assert!(d.records[0].len() <= bound, "the bound holds the record");
    // At the bound: committed, and the record fits.
    let mut at = Ledger::with_limits(
        4,
        Limits {
            record_bytes_max: bound,
            ..Limits::default()
        },
    );
    let d = at.apply(&rec(it.clone(), T0));
    expect(&d, Outcome::Committed, None);
    assert!(d.records[0].len() <= bound);
    // One byte under: rejected, nothing committed, the account unchanged.
    let mut under = Ledger::with_limits(
        4,
        Limits {
            record_bytes_max: bound - 1,
            ..Limits::default()
        },
    );
    let d = under.apply(&rec(it, T0));
    expect(&d, Outcome::Rejected, Some(Code::CommitTooLarge));
    assert!(d.commits.is_empty() && under.commits.is_empty());
    assert_eq!(d.receipt.head_seq, 0);
}

#[test]
fn budget_purge_splits_into_bounded_commits() {
    let limits = Limits {
        record_bytes_max: 4_096,
        ..Limits::default()
    };
    let mut l = Ledger::with_limits(4, limits);
    let rows = observations(&mut l, 200);
    let d = l.apply(&rec(whole_account_purge("erase", 200), T0 + 500));
    expect(&d, Outcome::Committed, None);
    let n = d.commits.len();
    assert!(n > 5, "200 tombstones in {n} commits of 4 KiB");
    let mut prev = l.commits[199].head_hash.clone();
    let mut purged = Vec::new();
    for (i, (c, record)) in d.commits.iter().zip(&d.records).enumerate() {
        assert!(
            record.len() <= limits.record_bytes_max,
            "commit {i}: {} bytes",
            record.len()
        );
        assert_eq!(c.commit_seq, 201 + i as i64);
        assert_eq!(c.prev_hash, prev);
        assert_eq!(c.continues, i + 1 < n);
        assert_eq!(c.generation, 1);
        assert!(!c.ops.is_empty());
        prev = c.head_hash.clone();
        purged.extend(c.ops.iter().map(|o| {
            assert_eq!(o.row.status, Status::Tombstoned);
            assert_eq!(o.row.commit_seq, c.commit_seq);
            o.row.memory_id.clone()
        }));
    }
    let mut want: Vec<String> = rows.iter().map(|r| r.memory_id.clone()).collect();
    want.sort();
    assert_eq!(purged, want, "every row once, in memory id order");
    assert_eq!(d.receipt.commit_seq, Some(200 + n as i64));
    assert_eq!(d.receipt.head_hash, prev);
    assert!(l.rows(ACCT).iter().all(|r| r.status == Status::Tombstoned));
    // The action is recorded by the last commit: a retry is a duplicate of it.
    let again = l.apply(&rec(whole_account_purge("erase", 0), T0 + 600));
    expect(&again, Outcome::Duplicate, None);
    assert_eq!(again.receipt.commit_seq, Some(200 + n as i64));
}

#[test]
fn budget_purge_continued_after_a_crash_commits_the_same_bytes() {
    let limits = Limits {
        record_bytes_max: 4_096,
        ..Limits::default()
    };
    let history = |l: &mut Ledger| {
        observations(l, 120);
    };
    let purge = rec(whole_account_purge("erase", 3), T0 + 500);
    let mut a = Ledger::with_limits(4, limits);
    history(&mut a);
    let whole = a.apply(&purge);
    let n = whole.commits.len();
    assert!(n >= 4, "{n} commits");
    for cut in [1, n / 2, n - 1] {
        // The outbox held the first `cut` commits when the processor died: restore folds
        // them, then the same intent is read again at the same position.
        let mut b = Ledger::with_limits(4, limits);
        history(&mut b);
        let p = whole.commits[0].intent_partition;
        let mut o = kledger_state::Overlay::new(b.store());
        for c in &whole.commits[..cut] {
            kledger_state::fold(&mut o, c, p).unwrap();
        }
        kledger_state::StateStore::write(b.store(), &o.into_writes()).unwrap();
        let rest = b.apply(&purge);
        expect(&rest, Outcome::Committed, None);
        assert_eq!(rest.commits, whole.commits[cut..], "cut after {cut} of {n}");
        assert_eq!(rest.records, whole.records[cut..], "cut after {cut} of {n}");
        assert_eq!(rest.receipt.commit_seq, whole.receipt.commit_seq);
        assert_eq!(rest.receipt.head_hash, whole.receipt.head_hash);
        assert_eq!(rest.receipt.rebased, whole.receipt.rebased);
    }
}

#[test]
fn budget_an_entity_purge_splits_too() {
    let limits = Limits {
        record_bytes_max: 4_096,
        ..Limits::default()
    };
    let mut l = Ledger::with_limits(4, limits);
    for i in 0..80 {
        commit_one(
            &mut l,
            &format!("anna-{i}"),
            WriteReason::DirectUserStatement,
            third_party("person_anna", &format!("Anna mentioned trip {i} to Lisbon")),
        );
    }
    let p = intent(
        ACCT,
        "erase-anna",
        WriteReason::DirectUserStatement,
        80,
        vec![Op::Purge(PurgeOp {
            entity_id: Some("person_anna".into()),
            reason: "erasure request".into(),
            ..PurgeOp::default()
        })],
    );
    let d = l.apply(&rec(p, T0 + 500));
    expect(&d, Outcome::Committed, None);
    assert!(d.commits.len() > 1);
    assert!(d.records.iter().all(|r| r.len() <= limits.record_bytes_max));
    assert_eq!(d.commits.iter().map(|c| c.ops.len()).sum::<usize>(), 80);
    assert!(d.commits.iter().all(|c| c.generation == 0));
}
