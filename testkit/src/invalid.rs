//! A catalogue of invalid intents: one mutation per validation code. Tests run each case through
//! `decide`; the generator mixes them into streams.

use std::collections::BTreeMap;

use kledger_processors::Code;
use kledger_schemas::*;

use crate::build::{document, evidence, fact, intent, slotted, third_party, trigger};

/// One invalid intent and the code it must be rejected with.
#[derive(Debug, Clone, Copy)]
pub struct InvalidCase {
    /// The expected code.
    pub code: Code,
    /// A short name (unique).
    pub name: &'static str,
    /// Turns a valid record into the invalid one.
    pub mutate: fn(&mut IntentRecord),
}

/// A valid record to mutate: one fact for `account`.
pub fn base(account: &str, action: &str, timestamp: i64) -> IntentRecord {
    IntentRecord {
        timestamp,
        partition: None,
        offset: None,
        intent: intent(
            account,
            action,
            WriteReason::DirectUserStatement,
            0,
            vec![Op::Assert(fact("Likes tea"))],
        ),
    }
}

fn assert_mut(r: &mut IntentRecord) -> &mut AssertOp {
    if !matches!(r.intent.ops.first(), Some(Op::Assert(_))) {
        r.intent.ops = vec![Op::Assert(fact("Likes tea"))];
    }
    match r.intent.ops.first_mut() {
        Some(Op::Assert(a)) => a,
        _ => unreachable!("set just above"),
    }
}

fn one(r: &mut IntentRecord, op: AssertOp, reason: WriteReason) {
    r.intent.ops = vec![Op::Assert(op)];
    r.intent.write_reason = reason;
}

fn planned(r: &mut IntentRecord, id: &str) {
    r.intent.planned_against.targets.push(TargetRef {
        memory_id: id.to_owned(),
        revision: 1,
        content_hash: "0".repeat(64),
    });
}

fn many(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("x{i}")).collect()
}

macro_rules! case {
    ($code:ident, $name:literal, |$r:ident| $body:block) => {
        InvalidCase {
            code: Code::$code,
            name: $name,
            mutate: {
                fn m($r: &mut IntentRecord) $body
                m
            },
        }
    };
}

/// Every validation failure, one or more ways each.
pub fn cases() -> Vec<InvalidCase> {
    vec![
        case!(BadRecordTime, "negative record time", |r| {
            r.timestamp = -1
        }),
        case!(BadRecordTime, "absurd record time", |r| {
            r.timestamp = i64::MAX
        }),
        case!(BadActionId, "empty action id", |r| {
            r.intent.action_id.clear()
        }),
        case!(BadActionId, "oversize action id", |r| {
            r.intent.action_id = "a".repeat(257)
        }),
        case!(BadActionId, "control char in action id", |r| {
            r.intent.action_id = "a\u{0}b".into()
        }),
        case!(BadAccountId, "account without parts", |r| {
            r.intent.account_id = "nonsense".into()
        }),
        case!(BadAccountId, "account with bad owner kind", |r| {
            r.intent.account_id = "t_acme/robot/u1".into()
        }),
        case!(BadAccountId, "empty account", |r| {
            r.intent.account_id.clear()
        }),
        case!(AccountMismatch, "account of another tenant", |r| {
            r.intent.account_id = "t_other/user/u_1".into()
        }),
        case!(BadIdentifier, "tenant without prefix", |r| {
            r.intent.tenant.tenant_id = "acme".into();
            r.intent.account_id = r.intent.tenant.account_id();
        }),
        case!(BadIdentifier, "agent owner without agt_", |r| {
            r.intent.tenant.owner_kind = OwnerKind::Agent;
            r.intent.account_id = r.intent.tenant.account_id();
        }),
        case!(BadIdentifier, "bad team id", |r| {
            r.intent.tenant.team_id = Some("core".into())
        }),
        case!(BadSource, "empty source id", |r| {
            r.intent.source.source_id.clear()
        }),
        case!(BadSource, "oversize source type", |r| {
            r.intent.source.source_type = "s".repeat(65)
        }),
        case!(BadExtractor, "empty extractor", |r| {
            r.intent.extractor.name.clear()
        }),
        case!(NoOps, "no ops", |r| { r.intent.ops.clear() }),
        case!(TooManyOps, "seventeen ops", |r| {
            r.intent.ops = (0..17)
                .map(|i| Op::Assert(fact(&format!("fact {i}"))))
                .collect()
        }),
        case!(ContentEmpty, "empty content", |r| {
            assert_mut(r).content.clear()
        }),
        case!(ContentTooLong, "content of 4001 chars", |r| {
            assert_mut(r).content = "é".repeat(4001)
        }),
        case!(ContentMultiline, "content with newline", |r| {
            assert_mut(r).content = "a\nb".into()
        }),
        case!(BodyMissing, "document without body", |r| {
            let mut d = document("Weekly report", "x");
            d.body = None;
            one(r, d, WriteReason::RecurringWorkflow)
        }),
        case!(BodyTooLong, "body of 24001 chars", |r| {
            one(
                r,
                document("Weekly report", &"b".repeat(24_001)),
                WriteReason::RecurringWorkflow,
            )
        }),
        case!(BodyNotAllowed, "fact with body", |r| {
            assert_mut(r).body = Some("no".into())
        }),
        case!(DocumentReason, "document not recurring_workflow", |r| {
            one(
                r,
                document("Weekly report", "steps"),
                WriteReason::DirectUserStatement,
            )
        }),
        case!(TriggerReason, "trigger not standing_trigger", |r| {
            one(
                r,
                trigger("Price alert", &[("event", "price_drop")]),
                WriteReason::ExplicitRemember,
            )
        }),
        case!(ConditionMissing, "trigger without condition", |r| {
            let mut t = trigger("Price alert", &[("event", "price_drop")]);
            t.condition = None;
            one(r, t, WriteReason::StandingTrigger)
        }),
        case!(ConditionTooLarge, "condition of 13 keys", |r| {
            let mut t = trigger("Price alert", &[]);
            t.condition = Some(
                (0..13)
                    .map(|i| (format!("k{i}"), "v".to_owned()))
                    .collect::<BTreeMap<_, _>>(),
            );
            one(r, t, WriteReason::StandingTrigger)
        }),
        case!(ConditionTooLarge, "condition of 8001 chars", |r| {
            one(
                r,
                trigger("Price alert", &[("k", &"v".repeat(8_000))]),
                WriteReason::StandingTrigger,
            )
        }),
        case!(ConditionNotAllowed, "fact with condition", |r| {
            assert_mut(r).condition = Some(BTreeMap::from([("a".to_owned(), "b".to_owned())]))
        }),
        case!(UnknownSlot, "unknown slot", |r| {
            assert_mut(r).slot = Some("favourite_color".into())
        }),
        case!(SlotNotAllowed, "slot on a document", |r| {
            let mut d = document("Weekly report", "steps");
            d.slot = Some("home_city".into());
            one(r, d, WriteReason::RecurringWorkflow)
        }),
        case!(SlotConflict, "two asserts of one slot", |r| {
            r.intent.ops = vec![
                Op::Assert(slotted("city", "Lives in Oslo")),
                Op::Assert(slotted("home_city", "Lives in Rome")),
            ]
        }),
        case!(EntityRequired, "third-party fact without entity", |r| {
            let mut f = third_party("p", "Works at Acme");
            f.subject.entity_id = None;
            *assert_mut(r) = f
        }),
        case!(BadTimestamp, "negative valid_from", |r| {
            assert_mut(r).valid_from = Some(-5)
        }),
        case!(BadTimestamp, "valid_to past 2^48", |r| {
            assert_mut(r).valid_to = Some(1 << 50)
        }),
        case!(BadValidity, "valid_to before valid_from", |r| {
            let a = assert_mut(r);
            a.valid_from = Some(2_000);
            a.valid_to = Some(1_000);
        }),
        case!(BadValidity, "expires before valid_from", |r| {
            let a = assert_mut(r);
            a.valid_from = Some(2_000);
            a.expires_at = Some(1_000);
        }),
        case!(BadConfidence, "confidence above one", |r| {
            assert_mut(r).confidence = Some(1.5)
        }),
        case!(BadConfidence, "confidence NaN", |r| {
            assert_mut(r).confidence = Some(f64::NAN)
        }),
        case!(BadCurationWeight, "curation weight 101", |r| {
            assert_mut(r).curation_weight = 101
        }),
        case!(BadList, "seventeen tags", |r| {
            assert_mut(r).tags = many(17)
        }),
        case!(BadList, "empty tag", |r| {
            assert_mut(r).tags = vec![String::new()]
        }),
        case!(BadList, "65 acl agents", |r| {
            assert_mut(r).acl.read_agent_ids = many(65)
        }),
        case!(FieldTooLong, "lang of 300 chars", |r| {
            assert_mut(r).lang = Some("l".repeat(300))
        }),
        case!(EvidenceLimit, "33 evidence items", |r| {
            assert_mut(r).evidence = (0..33).map(|i| evidence(&format!("m{i}"), None)).collect()
        }),
        case!(EvidenceLimit, "nine quotes", |r| {
            assert_mut(r).evidence = (0..9)
                .map(|i| evidence(&format!("m{i}"), Some("q")))
                .collect()
        }),
        case!(EvidenceLimit, "8001 quote chars", |r| {
            assert_mut(r).evidence = vec![evidence("m", Some(&"q".repeat(8_001)))]
        }),
        case!(EvidenceLimit, "evidence without source", |r| {
            let mut e = evidence("m", None);
            e.source_id.clear();
            assert_mut(r).evidence = vec![e]
        }),
        case!(BadEmbedding, "empty vector", |r| {
            assert_mut(r).embedding = Some(Embedding {
                model: "m".into(),
                vector: vec![],
            })
        }),
        case!(BadEmbedding, "NaN in vector", |r| {
            assert_mut(r).embedding = Some(Embedding {
                model: "m".into(),
                vector: vec![0.1, f32::NAN],
            })
        }),
        case!(BadHeadSeq, "negative head seq", |r| {
            r.intent.planned_against.head_seq = -1
        }),
        case!(BadTargets, "amend without targets", |r| {
            r.intent.ops = vec![Op::Amend(AmendOp {
                targets: vec![],
                replacement: fact("x"),
            })]
        }),
        case!(BadTargets, "seventeen planned targets", |r| {
            for i in 0..17 {
                planned(r, &format!("mem_{i}"));
            }
        }),
        case!(TargetUnplanned, "close of an unplanned row", |r| {
            r.intent.ops = vec![Op::Close(CloseOp {
                target: "mem_x".into(),
                valid_to: None,
                reason: "done".into(),
            })]
        }),
        case!(DuplicateTarget, "two ops on one row", |r| {
            planned(r, "mem_x");
            r.intent.ops = vec![
                Op::Close(CloseOp {
                    target: "mem_x".into(),
                    valid_to: None,
                    reason: "done".into(),
                }),
                Op::AttachEvidence(AttachEvidenceOp {
                    target: "mem_x".into(),
                    evidence: vec![evidence("m", None)],
                }),
            ]
        }),
        case!(BadReason, "close without reason", |r| {
            planned(r, "mem_x");
            r.intent.ops = vec![Op::Close(CloseOp {
                target: "mem_x".into(),
                valid_to: None,
                reason: String::new(),
            })]
        }),
        case!(BadPurge, "purge with two selectors", |r| {
            r.intent.ops = vec![Op::Purge(PurgeOp {
                target: Some("mem_x".into()),
                entity_id: Some("p".into()),
                whole_account: false,
                reason: String::new(),
            })]
        }),
        case!(BadPurge, "purge with no selector", |r| {
            r.intent.ops = vec![Op::Purge(PurgeOp::default())]
        }),
        case!(PurgeMixed, "purge with an assert", |r| {
            r.intent.ops.push(Op::Purge(PurgeOp {
                whole_account: true,
                ..PurgeOp::default()
            }))
        }),
    ]
}

/// The valid record every case starts from.
pub fn base_for_cases() -> IntentRecord {
    base("t_acme/user/u_1", "act-invalid", 1_767_225_600_000)
}

/// Applies case `c` to a fresh base record.
pub fn make(c: &InvalidCase) -> IntentRecord {
    let mut r = base_for_cases();
    (c.mutate)(&mut r);
    r
}

/// Validation codes the catalogue covers.
pub fn covered_codes() -> Vec<Code> {
    let mut v: Vec<Code> = cases().iter().map(|c| c.code).collect();
    v.sort();
    v.dedup();
    v
}
