//! The largest valid intent of each op kind: every field at the most rule 1 (`validate`)
//! allows, strings of 4-byte UTF-8 chars wherever any char is allowed, so the reliability
//! harness and tests can send worst cases and docs can quote the worst-case commit per op kind.
//!
//! - [`assert_fact`], [`document`], [`trigger`]: [`OPS_MAX`] maximal asserts ([`asserts`] for
//!   any count).
//! - [`amend_of`], [`close_of`], [`attach_evidence_of`], [`purge_of`]: one op per planned row
//!   (at most [`TARGETS_MAX`]); the `setup_*` helpers create the largest targets in a [`Ledger`]
//!   (one row per intent, so each setup intent fits the default budget) and return the intent.
//!
//! What validation lets grow, beyond the named limits: evidence fields (source ids,
//! versions, checksums, headings, message ids) of 256 chars each; ACL entries, tags, labels,
//! `lang` and `subject.entity_id` are any 1..=256-char strings, not identifiers; `action_id`
//! takes any non-control chars. Only the tenant block and `account_id` are ASCII identifiers.
//! `valid_from` is left to default to the record time (a few bytes under the absolute maximum)
//! so the rows are current.

use std::collections::BTreeMap;

use kledger_processors::{Rules, slots};
use kledger_schemas::limits::*;
use kledger_schemas::*;

use crate::build::target_ref;
use crate::ledger::Ledger;

/// The record time the setup helpers and tests use (2026-01-01).
pub const RECORD_TIME: i64 = 1_767_225_600_000;
/// A 4-byte UTF-8 char: the widest a char-counted limit can be in bytes.
pub const WIDE: char = '𝔸';
/// The largest valid timestamp.
const TIME_MAX: i64 = TIMESTAMP_MS_END - 1;

/// `n` [`WIDE`] chars.
pub fn wide(n: usize) -> String {
    std::iter::repeat_n(WIDE, n).collect()
}

/// `count` distinct identifiers `prefix…` of [`ID_CHARS_MAX`] chars: ACL entries at their
/// largest (rules v2 checks them as identifiers).
fn identifiers(count: usize, prefix: &str) -> Vec<String> {
    (0..count)
        .map(|i| {
            let tail = format!("{i:04}");
            let pad = ID_CHARS_MAX - prefix.len() - tail.len();
            format!("{prefix}{}{tail}", "x".repeat(pad))
        })
        .collect()
}

/// `count` distinct strings of `len` 4-byte chars (the first char tells them apart).
fn wides(count: usize, len: usize) -> Vec<String> {
    (0..count as u32)
        .map(|i| {
            let first = char::from_u32(0x1F600 + i % 0x50).expect("an emoji");
            std::iter::once(first)
                .chain(wide(len - 1).chars())
                .collect()
        })
        .collect()
}

/// The longest valid account id with `tag` in it (ASCII identifier chars): an agent owner,
/// tenant and owner ids at [`ID_CHARS_MAX`].
pub fn max_account(tag: &str) -> String {
    let pad = |prefix: &str| {
        let mut s = format!("{prefix}{tag}");
        s.truncate(ID_CHARS_MAX);
        s.extend(std::iter::repeat_n('a', ID_CHARS_MAX - s.len()));
        s
    };
    format!("{}/agent/{}", pad("t_"), pad("agt_"))
}

/// An action id of [`ACTION_ID_CHARS_MAX`] chars starting with `tag`, padded with [`WIDE`].
pub fn max_action(tag: &str) -> String {
    let mut s: String = tag.chars().take(ACTION_ID_CHARS_MAX).collect();
    let n = ACTION_ID_CHARS_MAX - s.chars().count();
    s.push_str(&wide(n));
    s
}

/// The write reason a kind is written for (facts: `direct_user_statement`).
pub fn reason_for(kind: Kind) -> WriteReason {
    match kind {
        Kind::Fact => WriteReason::DirectUserStatement,
        Kind::Document => WriteReason::RecurringWorkflow,
        Kind::Trigger => WriteReason::StandingTrigger,
        Kind::Person
        | Kind::Conversation
        | Kind::CalendarEvent
        | Kind::ScreenSpan
        | Kind::Episode => WriteReason::SourceSync,
    }
}

/// The longest registered slot name or alias (stored under its canonical slot).
pub fn longest_slot() -> &'static str {
    slots::SLOTS
        .iter()
        .copied()
        .chain(slots::ALIASES.iter().map(|(a, _)| *a))
        .max_by_key(|s| s.len())
        .expect("slots are registered")
}

/// [`EVIDENCE_MAX`] items, every field at its maximum; [`QUOTES_MAX`] of them quote, sharing
/// [`QUOTE_CHARS_MAX`].
pub fn max_evidence() -> Vec<Evidence> {
    let quote = QUOTE_CHARS_MAX / QUOTES_MAX;
    (0..EVIDENCE_MAX)
        .map(|i| Evidence {
            source_type: wide(SHORT_CHARS_MAX),
            source_id: wide(SHORT_CHARS_MAX),
            source_version: wide(SHORT_CHARS_MAX),
            locator: Locator {
                page: Some(i32::MAX),
                heading: Some(wide(SHORT_CHARS_MAX)),
                paragraph: Some(i32::MAX),
                message_id: Some(wide(SHORT_CHARS_MAX)),
                span_start: Some(i64::MAX),
                span_end: Some(i64::MAX),
            },
            quote: (i < QUOTES_MAX).then(|| wide(quote)),
            checksum: Some(wide(SHORT_CHARS_MAX)),
        })
        .collect()
}

/// [`CONDITION_KEYS_MAX`] keys, keys and values [`CONDITION_CHARS_MAX`] chars in all.
fn max_condition() -> BTreeMap<String, String> {
    let n = CONDITION_KEYS_MAX;
    let values = CONDITION_CHARS_MAX - n; // one char per key
    (0..n)
        .map(|i| {
            let key = char::from_u32(0x1F600 + i as u32)
                .expect("an emoji")
                .to_string();
            (key, wide(values / n + usize::from(i < values % n)))
        })
        .collect()
}

/// The largest valid assert of `kind`. Facts are third-party (a 256-char entity id) with the
/// longest slot: slots only conflict for the primary user, so 16 of them fit one intent.
pub fn max_assert(kind: Kind) -> AssertOp {
    AssertOp {
        kind,
        content: wide(CONTENT_CHARS_MAX),
        body: (kind == Kind::Document).then(|| wide(BODY_CHARS_MAX)),
        condition: (kind == Kind::Trigger).then(max_condition),
        slot: (kind == Kind::Fact).then(|| longest_slot().to_owned()),
        subject: Subject {
            scope: SubjectScope::ThirdParty,
            // An entity id with a kind (rules v5 take no bare name as an entity).
            entity_id: Some(format!("person:{}", wide(SHORT_CHARS_MAX - 7))),
        },
        valid_from: None,
        valid_to: Some(TIME_MAX),
        expires_at: Some(TIME_MAX),
        assertion_class: AssertionClass::Disputed,
        confidence: Some(0.5),
        curation_weight: CURATION_WEIGHT_MAX,
        sensitivity: Sensitivity {
            level: SensitivityLevel::Sensitive,
            labels: wides(TAGS_MAX, SHORT_CHARS_MAX),
        },
        visibility: Visibility::Confidential,
        acl: Acl {
            read_team_ids: identifiers(ACL_ENTRIES_MAX, "team_"),
            read_agent_ids: identifiers(ACL_ENTRIES_MAX, "agt_"),
            read_role_ids: identifiers(ACL_ENTRIES_MAX, "role_"),
        },
        tags: wides(TAGS_MAX, SHORT_CHARS_MAX),
        lang: Some(wide(SHORT_CHARS_MAX)),
        evidence: max_evidence(),
        embedding: Some(Embedding {
            model: wide(SHORT_CHARS_MAX),
            vector: vec![0.5; EMBEDDING_DIM_MAX],
        }),
    }
}

/// An intent of `ops` with the tenant block, source and extractor at their maximum. The
/// tenant is `account`'s, with team, project and agent ids of [`ID_CHARS_MAX`].
pub fn max_intent(
    account: &str,
    action: &str,
    reason: WriteReason,
    head_seq: i64,
    ops: Vec<Op>,
) -> Intent {
    let id = |prefix: &str| format!("{prefix}{}", "x".repeat(ID_CHARS_MAX - prefix.len()));
    let mut intent = crate::build::intent(account, action, reason, head_seq, ops);
    intent.tenant.team_id = Some(id("team_"));
    intent.tenant.project_id = Some(id("proj_"));
    intent.tenant.agent_id = Some(id("agt_"));
    intent.source = Source {
        source_id: wide(SOURCE_ID_CHARS_MAX),
        source_type: wide(SOURCE_TYPE_CHARS_MAX),
        source_version: wide(SOURCE_VERSION_CHARS_MAX),
        author_id: Some(wide(SHORT_CHARS_MAX)),
    };
    intent.extractor = Extractor {
        name: wide(EXTRACTOR_CHARS_MAX),
        version: wide(EXTRACTOR_CHARS_MAX),
    };
    intent
}

/// `n` maximal asserts of `kind` in one intent, written for [`reason_for`]`(kind)`.
pub fn asserts(kind: Kind, account: &str, action: &str, n: usize) -> Intent {
    let ops = (0..n).map(|_| Op::Assert(max_assert(kind))).collect();
    max_intent(account, action, reason_for(kind), 0, ops)
}

/// [`OPS_MAX`] maximal facts.
pub fn assert_fact(account: &str, action: &str) -> Intent {
    asserts(Kind::Fact, account, action, OPS_MAX)
}

/// [`OPS_MAX`] maximal documents (`recurring_workflow`).
pub fn document(account: &str, action: &str) -> Intent {
    asserts(Kind::Document, account, action, OPS_MAX)
}

/// [`OPS_MAX`] maximal triggers (`standing_trigger`).
pub fn trigger(account: &str, action: &str) -> Intent {
    asserts(Kind::Trigger, account, action, OPS_MAX)
}

/// An intent of one op per target, planned against `head_seq` and every target as it is,
/// written for the first target's reason (an equal authority, with the maximal source type).
fn targeting(
    account: &str,
    action: &str,
    head_seq: i64,
    targets: &[Row],
    op: fn(&Row) -> Op,
) -> Intent {
    let reason = targets
        .first()
        .map_or(WriteReason::DirectUserStatement, |r| r.write_reason);
    let ops = targets.iter().map(op).collect();
    let mut intent = max_intent(account, action, reason, head_seq, ops);
    intent.planned_against.targets = targets.iter().map(target_ref).collect();
    intent
}

/// One amend per target (at most [`TARGETS_MAX`]), each replacing it with a maximal row of
/// its kind and subject: 2 rows per op, the most rows an intent can commit.
pub fn amend_of(account: &str, action: &str, head_seq: i64, targets: &[Row]) -> Intent {
    targeting(account, action, head_seq, targets, |row| {
        let replacement = AssertOp {
            subject: row.subject.clone(),
            ..max_assert(row.kind)
        };
        Op::Amend(AmendOp {
            targets: vec![row.memory_id.clone()],
            replacement,
        })
    })
}

/// One close per target with a reason of [`REASON_CHARS_MAX`] chars.
pub fn close_of(account: &str, action: &str, head_seq: i64, targets: &[Row]) -> Intent {
    targeting(account, action, head_seq, targets, |row| {
        Op::Close(CloseOp {
            target: row.memory_id.clone(),
            valid_to: Some(TIME_MAX),
            reason: wide(REASON_CHARS_MAX),
        })
    })
}

/// One attach_evidence of [`max_evidence`] per target (targets without evidence, so the rows
/// stay within the per-row limits).
pub fn attach_evidence_of(account: &str, action: &str, head_seq: i64, targets: &[Row]) -> Intent {
    targeting(account, action, head_seq, targets, |row| {
        Op::AttachEvidence(AttachEvidenceOp {
            target: row.memory_id.clone(),
            evidence: max_evidence(),
        })
    })
}

/// One purge per target with a reason of [`REASON_CHARS_MAX`] chars (the targets are planned
/// too: a purge does not need it, validation allows it).
pub fn purge_of(account: &str, action: &str, head_seq: i64, targets: &[Row]) -> Intent {
    targeting(account, action, head_seq, targets, |row| {
        Op::Purge(PurgeOp {
            target: Some(row.memory_id.clone()),
            reason: wide(REASON_CHARS_MAX),
            ..PurgeOp::default()
        })
    })
}

/// `intent` as a record at [`RECORD_TIME`].
pub fn record(intent: Intent) -> IntentRecord {
    IntentRecord {
        timestamp: RECORD_TIME,
        partition: None,
        offset: None,
        intent,
    }
}

/// The account's head seq in `l` (0 before its first commit).
pub fn head(l: &Ledger, account: &str) -> i64 {
    l.commits
        .iter()
        .rev()
        .find(|c| c.account_id == account)
        .map_or(0, |c| c.commit_seq)
}

/// Applies a setup intent of one row change, which must commit; returns the row.
fn commit(l: &mut Ledger, intent: Intent) -> Row {
    let d = l.apply(&record(intent));
    assert_eq!(d.outcome(), Outcome::Committed, "setup: {:?}", d.receipt);
    let mut commit = d.into_commit().expect("committed");
    commit.ops.swap_remove(0).row
}

/// A setup action id: `action` (cut to make room) with a suffix.
fn setup_action(action: &str, step: &str, i: usize) -> String {
    let head: String = action.chars().take(ACTION_ID_CHARS_MAX - 8).collect();
    format!("{head}~{step}{i:02}")
}

/// Widens `op`'s ACL entries to what rules v1 accepts (which checks them as short strings
/// only): the rows of a ledger started under v1 can be this large.
pub fn widen_acl(op: &mut AssertOp) {
    op.acl = Acl {
        read_team_ids: wides(ACL_ENTRIES_MAX, SHORT_CHARS_MAX),
        read_agent_ids: wides(ACL_ENTRIES_MAX, SHORT_CHARS_MAX),
        read_role_ids: wides(ACL_ENTRIES_MAX, SHORT_CHARS_MAX),
    };
}

/// Creates `n` maximal rows of `kind`, one intent each (without evidence unless `evidence`;
/// with [`widen_acl`] in a ledger deciding under rules v1).
pub fn create_rows(
    l: &mut Ledger,
    account: &str,
    action: &str,
    kind: Kind,
    evidence: bool,
    n: usize,
) -> Vec<Row> {
    (0..n)
        .map(|i| {
            let mut a = max_assert(kind);
            if !evidence {
                a.evidence.clear();
            }
            if l.limits().rules == Rules::V1 {
                widen_acl(&mut a);
            }
            let (action, seq) = (setup_action(action, "a", i), head(l, account));
            let ops = vec![Op::Assert(a)];
            commit(l, max_intent(account, &action, reason_for(kind), seq, ops))
        })
        .collect()
}

/// Creates `n` maximal documents (the largest rows) and returns the amend of all of them.
pub fn setup_amend(l: &mut Ledger, account: &str, action: &str, n: usize) -> Intent {
    let rows = create_rows(l, account, action, Kind::Document, true, n);
    amend_of(account, action, head(l, account), &rows)
}

/// Creates `n` maximal documents and returns the close of all of them.
pub fn setup_close(l: &mut Ledger, account: &str, action: &str, n: usize) -> Intent {
    let rows = create_rows(l, account, action, Kind::Document, true, n);
    close_of(account, action, head(l, account), &rows)
}

/// Creates `n` maximal documents without evidence and returns the attach of maximal evidence
/// to each.
pub fn setup_attach_evidence(l: &mut Ledger, account: &str, action: &str, n: usize) -> Intent {
    let rows = create_rows(l, account, action, Kind::Document, false, n);
    attach_evidence_of(account, action, head(l, account), &rows)
}

/// Creates `n` maximal facts, closes each with a maximal reason (one intent each), and returns
/// their purge: the largest tombstones (a tombstone keeps ACL, labels, lang, subject, slot,
/// evidence ids and checksums, the closed reason and the provenance; facts keep a slot).
pub fn setup_purge(l: &mut Ledger, account: &str, action: &str, n: usize) -> Intent {
    let rows = create_rows(l, account, action, Kind::Fact, true, n);
    let closed: Vec<Row> = rows
        .iter()
        .enumerate()
        .map(|(i, row)| {
            let (action, seq) = (setup_action(action, "c", i), head(l, account));
            commit(
                l,
                close_of(account, &action, seq, std::slice::from_ref(row)),
            )
        })
        .collect();
    purge_of(account, action, head(l, account), &closed)
}
