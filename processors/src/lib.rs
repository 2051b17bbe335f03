//! kledger's pure rules. Nothing here sees RocksDB, Kafka or Qdrant: functions take values and
//! return values, so the stream processor, `kledger apply`, replay verification and the tests
//! all run the same code.
//!
//! Layout:
//! - [`decide`](mod@decide): the apply decision (rules 1–6) → [`Decision`].
//! - [`account`]: the account state `decide` reads and the keys a runner loads for it.
//! - [`validate`]: rule 1, shape and limits.
//! - [`authority`]: the authority table (rule 5), in one place.
//! - [`slots`]: the slot registry and its aliases.
//! - [`sources`]: source documents (people, conversations, calendar, screen) as rows.
//! - [`ids`]: memory ids (ULID), content hashes, intent digests, the head hash chain.
//! - [`seal`]: rules v4's crypto-shredding: row content sealed under data keys, content MACs.
//! - [`bitemporal`]: a row as it stood at an effective time (reads' `as_of`, `known_at`).
//! - [`bm25`]: the keyword provider's term vectors (BM25 with the index's IDF).
//! - [`index_text`]: the text that stands for a row in the vector index, and for a question.
//! - [`codes`]: stable reason codes.
//! - [`access`]: who may read a row (cm_payload_v1 visibility and sensitivity rules).
//! - [`payload`]: the vector projection's payload (cm_payload_v1), collection names, access filter.
//! - [`embed`]: the deterministic local feature-hashing embedder (dense + sparse).
//! - [`render`]: profile, playbook index and watchlist renderers.
//! - [`routing`]: the murmur2 partitioner.
//! - [`migrate`]: the legacy memory migration planner; [`legacy`]: cm_payload_v1's legacy
//!   collection mapping.

pub mod access;
pub mod account;
pub mod authority;
pub mod bitemporal;
pub mod bm25;
pub mod codes;
pub mod decide;
pub mod embed;
pub mod ids;
pub mod index_text;
pub mod legacy;
pub mod migrate;
pub mod payload;
pub mod render;
pub mod routing;
pub mod seal;
pub mod slots;
pub mod sources;
pub mod ttl;
pub mod validate;

pub use account::{AccountState, ActionEntry, Head, Needs, needs};
pub use codes::{Code, Reason};
pub use decide::{Decision, Limits, RecordMeta, decide, decide_owned};
pub use validate::Rules;

/// A row with every content-bearing field set, for unit tests.
#[cfg(test)]
pub(crate) fn testrow() -> kledger_schemas::Row {
    use kledger_schemas::*;
    Row {
        memory_id: "mem_01KE6JWJS0ZK57MHZPJM192VB2".into(),
        kind: Kind::Fact,
        content: "Lives in Porto".into(),
        body: Some("body text".into()),
        condition: Some([("when".to_owned(), "always".to_owned())].into()),
        slot: Some("home_city".into()),
        subject: Subject {
            scope: SubjectScope::PrimaryUser,
            entity_id: None,
        },
        valid_from: 1_767_600_000_000,
        valid_to: None,
        expires_at: None,
        recorded_at: 1_767_600_000_000,
        status: Status::Active,
        superseded_by: None,
        closed_reason: Some("moved away".into()),
        write_reason: WriteReason::DirectUserStatement,
        intent_backed: true,
        user_asserted: true,
        assertion_class: AssertionClass::Confirmed,
        confidence: Some(0.9),
        curation_weight: 10,
        sensitivity: Sensitivity {
            level: SensitivityLevel::Sensitive,
            labels: vec!["health".into()],
        },
        visibility: Visibility::Private,
        acl: Acl::default(),
        tags: vec!["city".into()],
        lang: Some("en".into()),
        evidence: vec![Evidence {
            source_type: "chat_message".into(),
            source_id: "msg_1".into(),
            source_version: "1".into(),
            locator: Locator {
                page: Some(3),
                heading: Some("h".into()),
                paragraph: None,
                message_id: Some("m1".into()),
                span_start: Some(1),
                span_end: Some(4),
            },
            quote: Some("I live in Porto".into()),
            checksum: Some("sha256:00".into()),
        }],
        embedding: Some(Embedding {
            model: "m".into(),
            vector: vec![0.5, 0.25],
        }),
        authority: 600,
        revision: 1,
        content_hash: "00".repeat(32),
        commit_seq: 1,
        action_id: "act_1".into(),
        source: Source {
            source_id: "chat_1".into(),
            source_type: "chat_message".into(),
            source_version: String::new(),
            author_id: None,
        },
        extractor: Extractor {
            name: "x".into(),
            version: "1".into(),
        },
        tenant: Tenant {
            tenant_id: "t_a".into(),
            team_id: None,
            project_id: None,
            agent_id: None,
            owner_kind: OwnerKind::User,
            owner_id: "u_1".into(),
        },
        generation: 0,
        sealed: None,
        record: None,
    }
}
