//! `Intent`: a write an extractor asks the ledger to make.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::common::*;
use super::sources::SourceOp;
use crate::avro::{AvroCodec, DecodeError, Reader, write_long};
use crate::avro_record;

/// A write intent (topic `kledger.intents.v1`, key = `account_id`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Intent {
    /// Stable id of this action (1..=256); retries reuse it.
    pub action_id: String,
    /// `{tenant_id}/{owner_kind}/{owner_id}`; must match `tenant`.
    pub account_id: String,
    /// The tenant block.
    pub tenant: Tenant,
    /// Where the write came from.
    pub source: Source,
    /// The rule or process that produced it.
    pub extractor: Extractor,
    /// Why it is written.
    pub write_reason: WriteReason,
    /// What the extractor saw when it planned.
    pub planned_against: PlannedAgainst,
    /// 1..=16 operations, applied together or not at all.
    pub ops: Vec<Op>,
}
avro_record!(Intent {
    action_id,
    account_id,
    tenant,
    source,
    extractor,
    write_reason,
    planned_against,
    ops
});

/// The account head and target rows an intent was planned against.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannedAgainst {
    /// The account's `commit_seq` the extractor read (0 for an empty account).
    pub head_seq: i64,
    /// What to do when the head moved.
    #[serde(default)]
    pub policy: HeadPolicy,
    /// Every row an op targets, with the revision and content hash the extractor read.
    #[serde(default)]
    pub targets: Vec<TargetRef>,
}
avro_record!(PlannedAgainst {
    head_seq,
    policy,
    targets
});

/// A row as the extractor saw it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetRef {
    /// The row.
    pub memory_id: String,
    /// Its revision when read.
    pub revision: i64,
    /// Its content hash when read.
    pub content_hash: String,
}
avro_record!(TargetRef {
    memory_id,
    revision,
    content_hash
});

/// One operation of an intent. JSON form: an object tagged by `op`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Op {
    /// Append a new row.
    Assert(AssertOp),
    /// Append a replacement and supersede every target.
    Amend(AmendOp),
    /// Close a row (set `valid_to`, keep history).
    Close(CloseOp),
    /// Add evidence to a row.
    AttachEvidence(AttachEvidenceOp),
    /// Privacy deletion.
    Purge(PurgeOp),
    /// Put a source document (people, conversation, calendar, screen).
    Source(SourceOp),
}

impl Op {
    /// The op's name (its JSON tag).
    pub fn name(&self) -> &'static str {
        match self {
            Op::Assert(_) => "assert",
            Op::Amend(_) => "amend",
            Op::Close(_) => "close",
            Op::AttachEvidence(_) => "attach_evidence",
            Op::Purge(_) => "purge",
            Op::Source(_) => "source",
        }
    }
}

/// `Op` is the Avro union `[AssertOp, AmendOp, CloseOp, AttachEvidenceOp, PurgeOp, SourceOp]`.
impl AvroCodec for Op {
    fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Op::Assert(o) => {
                write_long(out, 0);
                o.encode(out);
            }
            Op::Amend(o) => {
                write_long(out, 1);
                o.encode(out);
            }
            Op::Close(o) => {
                write_long(out, 2);
                o.encode(out);
            }
            Op::AttachEvidence(o) => {
                write_long(out, 3);
                o.encode(out);
            }
            Op::Purge(o) => {
                write_long(out, 4);
                o.encode(out);
            }
            Op::Source(o) => {
                write_long(out, 5);
                o.encode(out);
            }
        }
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(match r.read_union_index(6)? {
            0 => Op::Assert(AssertOp::decode(r)?),
            1 => Op::Amend(AmendOp::decode(r)?),
            2 => Op::Close(CloseOp::decode(r)?),
            3 => Op::AttachEvidence(AttachEvidenceOp::decode(r)?),
            4 => Op::Purge(PurgeOp::decode(r)?),
            _ => Op::Source(SourceOp::decode(r)?),
        })
    }
}

/// A new row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AssertOp {
    /// fact | document | trigger.
    pub kind: Kind,
    /// One line (≤4,000): the fact, the playbook's description or the trigger's description.
    pub content: String,
    /// Documents only: the playbook body (≤24,000).
    #[serde(default)]
    pub body: Option<String>,
    /// Triggers only: the structured condition (≤12 keys, ≤8,000 chars).
    #[serde(default)]
    pub condition: Option<BTreeMap<String, String>>,
    /// Facts only: a registered slot (or alias), e.g. `home_city`.
    #[serde(default)]
    pub slot: Option<String>,
    /// Whom the row is about.
    pub subject: Subject,
    /// Effective time (ms); defaults to the record time.
    #[serde(default)]
    pub valid_from: Option<i64>,
    /// End of effective time (ms).
    #[serde(default)]
    pub valid_to: Option<i64>,
    /// When the row stops being usable (ms).
    #[serde(default)]
    pub expires_at: Option<i64>,
    /// confirmed | proposed | inferred | disputed.
    pub assertion_class: AssertionClass,
    /// Extraction confidence in 0..=1.
    #[serde(default)]
    pub confidence: Option<f64>,
    /// Curation weight, −100..=100; orders the profile.
    #[serde(default)]
    pub curation_weight: i32,
    /// Sensitivity.
    #[serde(default)]
    pub sensitivity: Sensitivity,
    /// cm_payload_v1 visibility.
    #[serde(default = "default_visibility")]
    pub visibility: Visibility,
    /// Readers granted access to confidential rows.
    #[serde(default)]
    pub acl: Acl,
    /// Tags (≤16).
    #[serde(default)]
    pub tags: Vec<String>,
    /// Language code.
    #[serde(default)]
    pub lang: Option<String>,
    /// Evidence (≤32 items, ≤8 quotes, ≤8,000 quote chars). JSON form: an item may also be an
    /// episodic message ([`super::episodic`]).
    #[serde(default, deserialize_with = "super::episodic::evidence_list")]
    pub evidence: Vec<Evidence>,
    /// A vector for the projection, if the extractor has one.
    #[serde(default)]
    pub embedding: Option<Embedding>,
}
avro_record!(AssertOp {
    kind,
    content,
    body,
    condition,
    slot,
    subject,
    valid_from,
    valid_to,
    expires_at,
    assertion_class,
    confidence,
    curation_weight,
    sensitivity,
    visibility,
    acl,
    tags,
    lang,
    evidence,
    embedding
});

fn default_visibility() -> Visibility {
    Visibility::Private
}

/// Replace rows: append `replacement`, supersede every target, in one commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AmendOp {
    /// The rows replaced (1..=16 memory ids, each listed in `planned_against.targets`).
    pub targets: Vec<String>,
    /// The new row.
    pub replacement: AssertOp,
}
avro_record!(AmendOp {
    targets,
    replacement
});

/// Close a row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CloseOp {
    /// The row.
    pub target: String,
    /// End of effective time (ms); defaults to the record time.
    #[serde(default)]
    pub valid_to: Option<i64>,
    /// Why (≤1,000).
    pub reason: String,
}
avro_record!(CloseOp {
    target,
    valid_to,
    reason
});

/// Add evidence to a row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AttachEvidenceOp {
    /// The row.
    pub target: String,
    /// New evidence (JSON form: items may be episodic messages, as for `assert`).
    #[serde(deserialize_with = "super::episodic::evidence_list")]
    pub evidence: Vec<Evidence>,
}
avro_record!(AttachEvidenceOp { target, evidence });

/// Privacy deletion of one row, every row about one entity, or the whole account. Exactly one
/// of `target`, `entity_id`, `whole_account` is set.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PurgeOp {
    /// One row.
    #[serde(default)]
    pub target: Option<String>,
    /// Every row whose subject is this entity.
    #[serde(default)]
    pub entity_id: Option<String>,
    /// Every row of the account; bumps the account generation.
    #[serde(default)]
    pub whole_account: bool,
    /// Why (≤1,000).
    #[serde(default)]
    pub reason: String,
}
avro_record!(PurgeOp {
    target,
    entity_id,
    whole_account,
    reason
});

/// One line of an intents JSONL file: the intent with its Kafka record metadata.
///
/// `partition` and `offset` are optional; `kledger apply` derives them the way a fresh topic
/// would assign them (murmur2 partitioner, offsets counted per partition).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IntentRecord {
    /// The Kafka record timestamp (ms): becomes `recorded_at`.
    pub timestamp: i64,
    /// Partition of the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partition: Option<i32>,
    /// Offset of the record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<i64>,
    /// The intent.
    pub intent: Intent,
}
