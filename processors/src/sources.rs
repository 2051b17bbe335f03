//! Source documents as rows: the `source` op's row, the key that finds a document's current
//! version, and what a read may show of one.
//!
//! A document is kept as a row of its source kind ([`SourceKind::row_kind`]) whose
//! [`SourceRecord`] holds it. The row's content is what a read shows (a summary, a title,
//! `app — window title`; nothing for a people document); its effective time is the document's
//! start (a people document's: its record time); a people document is about itself (subject
//! `third_party`, entity = the person id) and the other three are the owner's own (subject
//! `primary_user`), joined to people through their person ids. The current version of each
//! document is found under its [`record_slot`] in the slots state, like a slot's occupant; a
//! newer document supersedes it in the same commit.

use kledger_schemas::PersonDoc;
use kledger_schemas::avro::AvroCodec;

use crate::ids::{self, LedgerSecret};
use kledger_schemas::{
    AssertOp, AssertionClass, Extractor, Intent, Kind, Op, OwnerKind, PlannedAgainst, Row,
    Sensitivity, Source, SourceDoc, SourceKind, SourceOp, SourceRecord, Subject, SubjectScope,
    Tenant, WriteReason,
};

/// The slot key of a document's current version: `@{row kind}/{record id}`. `@` begins no
/// registered slot, so it never meets one.
pub fn record_slot(kind: Kind, record_id: &str) -> String {
    format!("@{}/{record_id}", kind.as_str())
}

/// The slot key a row occupies while active: its registered slot (a primary-user fact's), or
/// its document's [`record_slot`] (a source row's).
pub fn row_slot(row: &Row) -> Option<String> {
    match (&row.record, SourceKind::of(row.kind)) {
        (Some(rec), Some(_)) => Some(record_slot(row.kind, &rec.record_id)),
        _ => (row.kind == Kind::Fact && row.subject.scope == SubjectScope::PrimaryUser)
            .then(|| row.slot.clone())
            .flatten(),
    }
}

/// The slot key a `source` op's document occupies.
pub fn op_slot(op: &SourceOp) -> String {
    record_slot(op.doc.source().row_kind(), op.doc.record_id())
}

/// The row fields of a `source` op, as the assert that makes its row (the caller adds the
/// [`SourceRecord`] with [`record_of`]): kind, shown content, subject, start, access.
pub fn as_assert(op: &SourceOp, record_time: i64) -> AssertOp {
    let subject = match &op.doc {
        SourceDoc::Person(p) => Subject {
            scope: SubjectScope::ThirdParty,
            entity_id: Some(p.person_id.clone()),
        },
        _ => Subject {
            scope: SubjectScope::PrimaryUser,
            entity_id: None,
        },
    };
    AssertOp {
        kind: op.doc.source().row_kind(),
        content: op.doc.shown(),
        body: None,
        condition: None,
        slot: None,
        subject,
        valid_from: Some(op.doc.span().map_or(record_time, |(start, _)| start)),
        valid_to: None,
        expires_at: None,
        assertion_class: AssertionClass::Confirmed,
        confidence: None,
        curation_weight: 0,
        sensitivity: Sensitivity::default(),
        visibility: op.visibility,
        acl: op.acl.clone(),
        tags: Vec::new(),
        lang: None,
        evidence: Vec::new(),
        embedding: None,
    }
}

/// The record a `source` op's row carries; a people document's aliases keyed with `secret`
/// (a ledger without one keeps none).
pub fn record_of(op: SourceOp, secret: Option<&LedgerSecret>, account_id: &str) -> SourceRecord {
    let alias_keys = match (&op.doc, secret) {
        (SourceDoc::Person(p), Some(secret)) => {
            let mut keys: Vec<String> = aliases(p)
                .map(|a| ids::alias_key(secret, account_id, a))
                .collect();
            keys.sort_unstable();
            keys.dedup();
            keys
        }
        _ => Vec::new(),
    };
    SourceRecord {
        record_id: op.doc.record_id().to_owned(),
        person_ids: op.doc.person_ids().to_vec(),
        alias_keys,
        doc: Some(op.doc),
    }
}

/// A people document's aliases: its names, retained names and emails.
pub fn aliases(p: &PersonDoc) -> impl Iterator<Item = &str> {
    p.names
        .iter()
        .chain(&p.retained_names)
        .chain(&p.emails)
        .map(String::as_str)
}

/// The subject-index entity under which people documents holding the alias of key `key` are
/// found (`@alias:` then the key: no entity id begins with `@`).
pub fn alias_entity(key: &str) -> String {
    format!("@alias:{key}")
}

/// Whether an entity id that names no person and no alias may stand as an entity id (rules
/// v5): it has a kind (`kind:id` or `kind_id`), no spaces and no `@` — a name or an email is
/// no entity id.
pub fn entity_id_like(entity: &str) -> bool {
    entity.contains([':', '_']) && !entity.contains('@') && !entity.chars().any(char::is_whitespace)
}

/// What a third-party or relationship subject names under rules v5.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Named {
    /// A current people document's id, or an entity id that is no alias: kept.
    Kept,
    /// An exact alias of one person: that person's id.
    Person(String),
    /// An alias of the owner's own people document.
    Owner,
    /// An alias several people hold.
    Ambiguous,
    /// A name or email no people document holds.
    Unknown,
}

/// Resolves subject entity `entity` of `state`'s account ([`crate::account::needs`] loaded
/// what it reads): the people document of that id, the people documents holding it as an
/// alias, and the owner's (`owner_id`).
pub fn resolve(state: &crate::AccountState, entity: &str, owner_id: &str, key: &str) -> Named {
    if state.slots.contains_key(&record_slot(Kind::Person, entity)) {
        return Named::Kept;
    }
    let owner = state.slots.get(&record_slot(Kind::Person, owner_id));
    let mut holders: Vec<&Row> = state
        .entities
        .get(&alias_entity(key))
        .into_iter()
        .flatten()
        .filter_map(|id| state.rows.get(id))
        .filter(|r| {
            r.kind == Kind::Person
                && r.status == kledger_schemas::Status::Active
                && r.record
                    .as_ref()
                    .is_some_and(|rec| rec.alias_keys.iter().any(|k| k == key))
        })
        .collect();
    holders.dedup_by(|a, b| a.memory_id == b.memory_id);
    if holders.iter().any(|r| Some(&r.memory_id) == owner) {
        return Named::Owner;
    }
    match holders.as_slice() {
        [one] => Named::Person(
            one.record
                .as_ref()
                .map(|r| r.record_id.clone())
                .unwrap_or_default(),
        ),
        [_, _, ..] => Named::Ambiguous,
        [] if entity_id_like(entity) => Named::Kept,
        [] => Named::Unknown,
    }
}

/// Whether `row` is a source row.
pub fn is_source(row: &Row) -> bool {
    SourceKind::of(row.kind).is_some()
}

/// The `source_type` of the intents that carry `source`'s documents.
pub fn source_type(source: SourceKind) -> &'static str {
    match source {
        SourceKind::People => "people_document",
        SourceKind::Conversations => "conversation_summary",
        SourceKind::Calendar => "calendar_event",
        SourceKind::Screen => "screen_span",
        SourceKind::Episodes => "episodic_message",
    }
}

/// Hex digits of a source intent's digest kept in its action id and source version.
const DIGEST_HEX: usize = 32;

/// The extractor named on every source intent, whichever path made it (the topic's intake,
/// the HTTP ingress): the same document is the same intent everywhere, in every kledger
/// version, so one sent twice — by two paths, or forwarded again after a restart or an upgrade
/// — is a `duplicate`, never `action_reused`.
pub const SOURCES_EXTRACTOR: &str = "kledger-sources";
/// Its version: fixed (a change of what a source intent holds is a new version here).
pub const SOURCES_EXTRACTOR_VERSION: &str = "1";

/// The intent that puts `op` into `account_id`'s ledger, as `kledger publish --kind` and
/// `POST /v1/sources/{kind}` write it (extractor [`SOURCES_EXTRACTOR`], no author): action id
/// `src_` + a digest of the account, the
/// document, its access and its `version` in the source system (the same document put again
/// is a `duplicate`; a changed one, or one of another version, is a new version), source
/// version the given one (else the digest's first 16 hex digits), write reason
/// `source_sync`, planned against head 0 with the rebase policy (a source op has no target, so
/// it commits against any head). A malformed account id gives a tenant block validation
/// rejects.
pub fn intent_for(account_id: &str, op: SourceOp, version: Option<&str>) -> Intent {
    use sha2::{Digest, Sha256};
    let mut buf = Vec::new();
    op.encode(&mut buf);
    let mut h = Sha256::new();
    h.update(b"kledger.source_intent.v1\0");
    h.update((account_id.len() as u64).to_be_bytes());
    h.update(account_id.as_bytes());
    h.update(&buf);
    if let Some(v) = version {
        h.update((v.len() as u64).to_be_bytes());
        h.update(v.as_bytes());
    }
    let digest = crate::ids::to_hex(&h.finalize()[..DIGEST_HEX / 2]);
    let mut parts = account_id.splitn(3, '/');
    let (tenant_id, kind, owner_id) = (
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
        parts.next().unwrap_or_default(),
    );
    let source = op.doc.source();
    Intent {
        action_id: format!("src_{digest}"),
        account_id: account_id.to_owned(),
        tenant: Tenant {
            tenant_id: tenant_id.to_owned(),
            team_id: None,
            project_id: None,
            agent_id: None,
            owner_kind: OwnerKind::parse(kind).unwrap_or(OwnerKind::User),
            owner_id: owner_id.to_owned(),
        },
        source: Source {
            source_id: op.doc.record_id().to_owned(),
            source_type: source_type(source).to_owned(),
            source_version: version.map_or_else(|| digest[..16].to_owned(), str::to_owned),
            author_id: None,
        },
        extractor: Extractor {
            name: SOURCES_EXTRACTOR.to_owned(),
            version: SOURCES_EXTRACTOR_VERSION.to_owned(),
        },
        write_reason: WriteReason::SourceSync,
        planned_against: PlannedAgainst::default(),
        ops: vec![Op::Source(op)],
    }
}
