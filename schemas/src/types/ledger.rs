//! `Row` (knowledge_ledger.v1) and `Commit` (topic `kledger.outbox.v1`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::common::*;
use super::sources::SourceRecord;
use crate::avro::{AvroCodec, DecodeError, Reader, write_long};
use crate::avro_record;

/// One knowledge_ledger.v1 row as it stands after a change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// `mem_` + ULID (time part = `valid_from`).
    pub memory_id: String,
    /// fact | document | trigger.
    pub kind: Kind,
    /// One line: fact, playbook description or trigger description (erased by purge).
    pub content: String,
    /// Document body (erased by purge).
    pub body: Option<String>,
    /// Trigger condition (erased by purge).
    pub condition: Option<BTreeMap<String, String>>,
    /// Canonical slot name (aliases resolved).
    pub slot: Option<String>,
    /// Whom the row is about.
    pub subject: Subject,
    /// Effective time start (ms).
    pub valid_from: i64,
    /// Effective time end (ms).
    pub valid_to: Option<i64>,
    /// Expiry (ms).
    pub expires_at: Option<i64>,
    /// Record time of the commit that created the row (ms, the Kafka record timestamp).
    pub recorded_at: i64,
    /// active | superseded | closed | tombstoned.
    pub status: Status,
    /// The row that replaced this one.
    pub superseded_by: Option<String>,
    /// Why the row was closed.
    pub closed_reason: Option<String>,
    /// Why the row was written.
    pub write_reason: WriteReason,
    /// False only for `legacy_migration`.
    pub intent_backed: bool,
    /// True only for direct_user_statement, explicit_remember and onboarding.
    pub user_asserted: bool,
    /// confirmed | proposed | inferred | disputed.
    pub assertion_class: AssertionClass,
    /// Extraction confidence.
    pub confidence: Option<f64>,
    /// Curation weight.
    pub curation_weight: i32,
    /// Sensitivity.
    pub sensitivity: Sensitivity,
    /// Visibility.
    pub visibility: Visibility,
    /// Readers granted access.
    pub acl: Acl,
    /// Tags.
    pub tags: Vec<String>,
    /// Language code.
    pub lang: Option<String>,
    /// Evidence (quotes erased by purge).
    pub evidence: Vec<Evidence>,
    /// The extractor-supplied vector, if any (dropped by purge).
    pub embedding: Option<Embedding>,
    /// Authority rank (write reason × source type).
    pub authority: i32,
    /// Starts at 1; every change adds 1.
    pub revision: i64,
    /// Hex SHA-256 of the row's semantic content.
    pub content_hash: String,
    /// The commit that last changed the row.
    pub commit_seq: i64,
    /// The action that created the row.
    pub action_id: String,
    /// The source of the creating action.
    pub source: Source,
    /// The extractor of the creating action.
    pub extractor: Extractor,
    /// The tenant block.
    pub tenant: Tenant,
    /// Account generation when the row last changed.
    pub generation: i64,
    /// The content-bearing fields sealed under the row's data key (rules v4): content, body,
    /// condition, close reason, sensitivity labels, tags, evidence locators, quotes and
    /// checksums, and the embedding. On the wire and at rest those fields are empty and only
    /// this holds them; a row opened with its key has both. `None` in ledgers decided under
    /// rules v1 to v3, which keep their content in the clear.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sealed: Option<Sealed>,
    /// A source row's document (the four source kinds only): its id and the people it joins
    /// in the clear, the document itself content (sealed with the rest). Commit schema v4;
    /// a row stored before it decodes without one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record: Option<SourceRecord>,
}

/// A row's content-bearing fields, encrypted (rules v4).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sealed {
    /// The data key's id (32 hex digits). A tombstone names the key its purge destroyed.
    pub key_id: String,
    /// Hex HMAC-SHA256 of the content under the ledger's secret: what the head hash covers
    /// in place of the content, so the chain is checked without any data key.
    pub mac: String,
    /// ChaCha20-Poly1305 ciphertext and tag of the content (empty in a tombstone).
    pub ciphertext: Bytes,
}
avro_record!(Sealed {
    key_id,
    mac,
    ciphertext
});
// Row's codec is written out (not `avro_record!`): a sealed row leaves its content-bearing
// fields empty on the wire, and the head hash covers other forms of the same fields
// ([`Form`]).
impl AvroCodec for Row {
    fn encode(&self, out: &mut Vec<u8>) {
        self.encode_as(out, Form::Wire);
    }
    fn decode(r: &mut Reader<'_>) -> Result<Self, DecodeError> {
        Ok(Self {
            memory_id: AvroCodec::decode(r)?,
            kind: AvroCodec::decode(r)?,
            content: AvroCodec::decode(r)?,
            body: AvroCodec::decode(r)?,
            condition: AvroCodec::decode(r)?,
            slot: AvroCodec::decode(r)?,
            subject: AvroCodec::decode(r)?,
            valid_from: AvroCodec::decode(r)?,
            valid_to: AvroCodec::decode(r)?,
            expires_at: AvroCodec::decode(r)?,
            recorded_at: AvroCodec::decode(r)?,
            status: AvroCodec::decode(r)?,
            superseded_by: AvroCodec::decode(r)?,
            closed_reason: AvroCodec::decode(r)?,
            write_reason: AvroCodec::decode(r)?,
            intent_backed: AvroCodec::decode(r)?,
            user_asserted: AvroCodec::decode(r)?,
            assertion_class: AvroCodec::decode(r)?,
            confidence: AvroCodec::decode(r)?,
            curation_weight: AvroCodec::decode(r)?,
            sensitivity: AvroCodec::decode(r)?,
            visibility: AvroCodec::decode(r)?,
            acl: AvroCodec::decode(r)?,
            tags: AvroCodec::decode(r)?,
            lang: AvroCodec::decode(r)?,
            evidence: AvroCodec::decode(r)?,
            embedding: AvroCodec::decode(r)?,
            authority: AvroCodec::decode(r)?,
            revision: AvroCodec::decode(r)?,
            content_hash: AvroCodec::decode(r)?,
            commit_seq: AvroCodec::decode(r)?,
            action_id: AvroCodec::decode(r)?,
            source: AvroCodec::decode(r)?,
            extractor: AvroCodec::decode(r)?,
            tenant: AvroCodec::decode(r)?,
            generation: AvroCodec::decode(r)?,
            sealed: AvroCodec::decode(r)?,
            // A row at rest from before commit schema v4 ends here.
            record: if r.remaining() == 0 {
                None
            } else {
                AvroCodec::decode(r)?
            },
        })
    }
}

/// The forms a row and a commit are encoded in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// The record as written (commit schema v3): a sealed row's content-bearing fields are
    /// empty, its [`Sealed`] follows them.
    Wire,
    /// The commit schema v2 (no `sealed`, no `keyed`): what the head hash of a commit decided
    /// under rules v1 to v3 covers, byte for byte as before v3 existed.
    V2,
    /// What the head hash of a keyed commit (rules v4) covers: as on the wire, but a row's
    /// [`Sealed`] is its MAC alone (not its key id or ciphertext, so two sealings of one
    /// decision hash alike), and the commit leaves out its head hash and the intent's position
    /// (so an account's chain does not depend on the topic layout).
    Hashed,
}

/// Empty evidence content: lineage ids kept, locator, quote and checksum blank.
fn blank_evidence(out: &mut Vec<u8>, evidence: &[Evidence]) {
    if !evidence.is_empty() {
        write_long(out, evidence.len() as i64);
        for e in evidence {
            e.source_type.encode(out);
            e.source_id.encode(out);
            e.source_version.encode(out);
            Locator::default().encode(out);
            None::<String>.encode(out);
            None::<String>.encode(out);
        }
    }
    write_long(out, 0);
}

impl Row {
    /// Encodes the row in `form` (see [`Form`]).
    pub fn encode_as(&self, out: &mut Vec<u8>, form: Form) {
        // Content-bearing fields are left empty when the row is sealed (their values live in
        // `sealed`), and in the hashed form (the MAC stands for them).
        let blank = match form {
            Form::Wire => self.sealed.is_some(),
            Form::V2 => false,
            Form::Hashed => true,
        };
        self.memory_id.encode(out);
        self.kind.encode(out);
        if blank {
            write_long(out, 0); // content ""
            write_long(out, 0); // body null
            write_long(out, 0); // condition null
        } else {
            self.content.encode(out);
            self.body.encode(out);
            self.condition.encode(out);
        }
        self.slot.encode(out);
        self.subject.encode(out);
        self.valid_from.encode(out);
        self.valid_to.encode(out);
        self.expires_at.encode(out);
        self.recorded_at.encode(out);
        self.status.encode(out);
        self.superseded_by.encode(out);
        if blank {
            write_long(out, 0); // closed_reason null
        } else {
            self.closed_reason.encode(out);
        }
        self.write_reason.encode(out);
        self.intent_backed.encode(out);
        self.user_asserted.encode(out);
        self.assertion_class.encode(out);
        self.confidence.encode(out);
        self.curation_weight.encode(out);
        if blank {
            self.sensitivity.level.encode(out);
            write_long(out, 0); // labels []
        } else {
            self.sensitivity.encode(out);
        }
        self.visibility.encode(out);
        self.acl.encode(out);
        if blank {
            write_long(out, 0); // tags []
        } else {
            self.tags.encode(out);
        }
        self.lang.encode(out);
        if blank {
            blank_evidence(out, &self.evidence);
            write_long(out, 0); // embedding null
        } else {
            self.evidence.encode(out);
            self.embedding.encode(out);
        }
        self.authority.encode(out);
        self.revision.encode(out);
        self.content_hash.encode(out);
        self.commit_seq.encode(out);
        self.action_id.encode(out);
        self.source.encode(out);
        self.extractor.encode(out);
        self.tenant.encode(out);
        self.generation.encode(out);
        match form {
            Form::Wire => self.sealed.encode(out),
            Form::V2 => {}
            Form::Hashed => match &self.sealed {
                Some(s) => s.mac.encode(out),
                None => write_long(out, 0),
            },
        }
        match (form, &self.record) {
            // The document is content: blank where the rest is.
            (Form::Wire, Some(rec)) if blank => {
                write_long(out, 1);
                rec.record_id.encode(out);
                rec.person_ids.encode(out);
                rec.alias_keys.encode(out);
                write_long(out, 0);
            }
            (Form::Wire, record) => record.encode(out),
            // Ledger rows hash as they did before source rows existed.
            (Form::V2, _) | (Form::Hashed, None) => {}
            (Form::Hashed, Some(rec)) => {
                rec.record_id.encode(out);
                rec.person_ids.encode(out);
                rec.alias_keys.encode(out);
            }
        }
    }

    /// Whether the row is active and its effective time covers `at_ms`.
    pub fn is_current(&self, at_ms: i64) -> bool {
        self.status == Status::Active
            && self.valid_from <= at_ms
            && self.valid_to.is_none_or(|t| t > at_ms)
            && self.expires_at.is_none_or(|t| t > at_ms)
    }
}

/// One row change inside a commit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommitOp {
    /// What happened to the row.
    pub change: Change,
    /// The full row after the change.
    pub row: Row,
}
avro_record!(CommitOp { change, row });

/// A committed intent (topic `kledger.outbox.v1`): the changelog of state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Commit {
    /// The account.
    pub account_id: String,
    /// Gapless per account, starting at 1.
    pub commit_seq: i64,
    /// Hex SHA-256 head hash before this commit (64 zeros for the first).
    pub prev_hash: String,
    /// Hex SHA-256(prev_hash bytes ‖ canonical bytes of this commit with `head_hash` empty).
    pub head_hash: String,
    /// The committed action.
    pub action_id: String,
    /// Hex SHA-256 of the intent's payload (idempotency digest).
    pub intent_digest: String,
    /// The intent's Kafka record timestamp (ms).
    pub recorded_at: i64,
    /// The intent's partition.
    pub intent_partition: i32,
    /// The intent's offset.
    pub intent_offset: i64,
    /// Account generation after the commit.
    pub generation: i64,
    /// Whether the intent was planned against an older head and rebased.
    pub rebased: bool,
    /// Row changes, in op order.
    pub ops: Vec<CommitOp>,
    /// More commits of this action follow: a purge too large for one record is split into
    /// bounded commits, and only the last one (`continues = false`) records the action as
    /// committed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub continues: bool,
    /// Decided under rules v4: rows sealed, ids and hashes keyed with the ledger's secret, and
    /// the head hash over [`Form::Hashed`].
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keyed: bool,
}
avro_record!(Commit {
    account_id,
    commit_seq,
    prev_hash,
    head_hash,
    action_id,
    intent_digest,
    recorded_at,
    intent_partition,
    intent_offset,
    generation,
    rebased,
    ops,
    continues,
    keyed
});

impl Commit {
    /// Encodes the commit in `form` (see [`Form`]).
    pub fn encode_as(&self, out: &mut Vec<u8>, form: Form) {
        self.encode_measured(out, form, |_| {});
    }

    /// [`Commit::encode_as`], telling `row_len` the length of each op's row encoding, in order
    /// (what a caller that sizes rows would otherwise encode them again for).
    pub fn encode_measured(&self, out: &mut Vec<u8>, form: Form, mut row_len: impl FnMut(usize)) {
        self.account_id.encode(out);
        self.commit_seq.encode(out);
        self.prev_hash.encode(out);
        if form != Form::Hashed {
            self.head_hash.encode(out);
        }
        self.action_id.encode(out);
        self.intent_digest.encode(out);
        self.recorded_at.encode(out);
        if form != Form::Hashed {
            self.intent_partition.encode(out);
            self.intent_offset.encode(out);
        }
        self.generation.encode(out);
        self.rebased.encode(out);
        if !self.ops.is_empty() {
            write_long(out, self.ops.len() as i64);
            for op in &self.ops {
                op.change.encode(out);
                let at = out.len();
                op.row.encode_as(out, form);
                row_len(out.len() - at);
            }
        }
        write_long(out, 0);
        self.continues.encode(out);
        if form != Form::V2 {
            self.keyed.encode(out);
        }
    }
}
