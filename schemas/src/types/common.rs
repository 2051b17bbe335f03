//! Enums and nested records shared by intents, rows and commits.

use serde::{Deserialize, Serialize};

use crate::{avro_enum, avro_record};

avro_enum! {
    /// Who owns an account's ledger.
    pub enum OwnerKind { User = "user", Team = "team", Agent = "agent" }
}

avro_enum! {
    /// Why a write happens; the base of its authority (see `kledger_processors::authority`).
    pub enum WriteReason {
        DirectUserStatement = "direct_user_statement",
        ExplicitRemember = "explicit_remember",
        Onboarding = "onboarding",
        AgentReusableConclusion = "agent_reusable_conclusion",
        DailyReconciliation = "daily_reconciliation",
        LegacyMigration = "legacy_migration",
        RecurringWorkflow = "recurring_workflow",
        StandingTrigger = "standing_trigger",
        /// A source document synchronised from the owner's other systems (the `source` op).
        SourceSync = "source_sync",
    }
}

avro_enum! {
    /// What a ledger row is: the ledger's own kinds, then the five source kinds
    /// ([`crate::SourceDoc`]; written by the `source` op only).
    pub enum Kind {
        Fact = "fact",
        Document = "document",
        Trigger = "trigger",
        Person = "person",
        Conversation = "conversation",
        CalendarEvent = "calendar_event",
        ScreenSpan = "screen_span",
        Episode = "episode",
    }
}

avro_enum! {
    /// Whom a row is about.
    pub enum SubjectScope {
        PrimaryUser = "primary_user",
        UserOwnedProject = "user_owned_project",
        UserRelationship = "user_relationship",
        ThirdParty = "third_party",
    }
}

avro_enum! {
    /// How certain the statement is; shown by every read interface.
    pub enum AssertionClass {
        Confirmed = "confirmed",
        Proposed = "proposed",
        Inferred = "inferred",
        Disputed = "disputed",
    }
}

avro_enum! {
    /// Field-level sensitivity. `restricted` rows never reach a vector index.
    pub enum SensitivityLevel { Normal = "normal", Sensitive = "sensitive", Restricted = "restricted" }
}

avro_enum! {
    /// cm_payload_v1 visibility.
    pub enum Visibility { Public = "public", Confidential = "confidential", Private = "private" }
}

avro_enum! {
    /// Lifecycle of a row.
    pub enum Status {
        Active = "active",
        Superseded = "superseded",
        Closed = "closed",
        Tombstoned = "tombstoned",
    }
}

avro_enum! {
    /// What a commit did to a row.
    pub enum Change {
        Created = "created",
        Superseded = "superseded",
        Closed = "closed",
        EvidenceAttached = "evidence_attached",
        Tombstoned = "tombstoned",
    }
}

avro_enum! {
    /// An intent's outcome.
    pub enum Outcome {
        Committed = "committed",
        Duplicate = "duplicate",
        Replan = "replan",
        Rejected = "rejected",
    }
}

avro_enum! {
    /// What to do when the head moved since the intent was planned.
    #[derive(Default)]
    pub enum HeadPolicy {
        /// Commit anyway (`rebased=true`) when every target is unchanged and no new conflict
        /// appeared.
        #[default]
        Rebase = "rebase",
        /// Any head mismatch replans.
        Strict = "strict",
    }
}

/// The tenant block: who owns the account and where it lives (cm_payload_v1 identifiers).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Tenant {
    /// `t_<slug>`.
    pub tenant_id: String,
    /// `team_<slug>`.
    #[serde(default)]
    pub team_id: Option<String>,
    /// `proj_<slug>`.
    #[serde(default)]
    pub project_id: Option<String>,
    /// `agt_<slug>`.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// user | team | agent.
    pub owner_kind: OwnerKind,
    /// The owner's id (`agt_` for agents, `team_` for teams).
    pub owner_id: String,
}
avro_record!(Tenant {
    tenant_id,
    team_id,
    project_id,
    agent_id,
    owner_kind,
    owner_id
});

impl Tenant {
    /// `{tenant_id}/{owner_kind}/{owner_id}`: the account this block names.
    pub fn account_id(&self) -> String {
        format!("{}/{}/{}", self.tenant_id, self.owner_kind, self.owner_id)
    }
}

/// Where a write came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Source {
    /// Stable id of the source object (≤256).
    pub source_id: String,
    /// Kind of source (≤64), e.g. `chat_message`, `system_of_record`, `approved_decision`.
    pub source_type: String,
    /// Version or revision of the source (≤64).
    #[serde(default)]
    pub source_version: String,
    /// The human or system behind the source.
    #[serde(default)]
    pub author_id: Option<String>,
}
avro_record!(Source {
    source_id,
    source_type,
    source_version,
    author_id
});

/// The rule or process that produced a write.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Extractor {
    /// Name of the extractor (≤64).
    pub name: String,
    /// Its version (≤64).
    pub version: String,
}
avro_record!(Extractor { name, version });

/// Whom a row is about.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Subject {
    /// The subject's scope.
    pub scope: SubjectScope,
    /// Stable person/entity id; required for `third_party`.
    #[serde(default)]
    pub entity_id: Option<String>,
}
avro_record!(Subject { scope, entity_id });

/// Sensitivity of a row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sensitivity {
    /// normal | sensitive | restricted.
    pub level: SensitivityLevel,
    /// Free labels (≤16, each ≤256), e.g. `health`.
    #[serde(default)]
    pub labels: Vec<String>,
}
avro_record!(Sensitivity { level, labels });

impl Default for Sensitivity {
    fn default() -> Self {
        Self {
            level: SensitivityLevel::Normal,
            labels: Vec::new(),
        }
    }
}

/// Readers granted access to confidential rows (cm_payload_v1 `acl.*`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Acl {
    /// Teams with read access.
    #[serde(default)]
    pub read_team_ids: Vec<String>,
    /// Agents with read access.
    #[serde(default)]
    pub read_agent_ids: Vec<String>,
    /// Roles with read access.
    #[serde(default)]
    pub read_role_ids: Vec<String>,
}
avro_record!(Acl {
    read_team_ids,
    read_agent_ids,
    read_role_ids
});

/// Where inside a source a claim was found.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Locator {
    /// Page number.
    #[serde(default)]
    pub page: Option<i32>,
    /// Heading.
    #[serde(default)]
    pub heading: Option<String>,
    /// Paragraph number.
    #[serde(default)]
    pub paragraph: Option<i32>,
    /// Message id in a transcript or chat.
    #[serde(default)]
    pub message_id: Option<String>,
    /// Start of a character span.
    #[serde(default)]
    pub span_start: Option<i64>,
    /// End of a character span.
    #[serde(default)]
    pub span_end: Option<i64>,
}
avro_record!(Locator {
    page,
    heading,
    paragraph,
    message_id,
    span_start,
    span_end
});

/// A reference that lets a reviewer reopen the material behind a claim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Evidence {
    /// Kind of source.
    pub source_type: String,
    /// Source id.
    pub source_id: String,
    /// Source version.
    #[serde(default)]
    pub source_version: String,
    /// Position in the source.
    #[serde(default)]
    pub locator: Locator,
    /// Quoted text (erased by purge).
    #[serde(default)]
    pub quote: Option<String>,
    /// Checksum of the source as reviewed.
    #[serde(default)]
    pub checksum: Option<String>,
}
avro_record!(Evidence {
    source_type,
    source_id,
    source_version,
    locator,
    quote,
    checksum
});

/// A vector supplied with the intent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Embedding {
    /// Embedding model id.
    pub model: String,
    /// The vector (1..=4,096 finite floats).
    pub vector: Vec<f32>,
}
avro_record!(Embedding { model, vector });

/// Avro `bytes` (JSON form: an array of numbers).
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Bytes(pub Vec<u8>);

impl std::fmt::Debug for Bytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Bytes({} bytes)", self.0.len())
    }
}

impl crate::avro::AvroCodec for Bytes {
    fn encode(&self, out: &mut Vec<u8>) {
        crate::avro::write_bytes(out, &self.0);
    }
    fn decode(r: &mut crate::avro::Reader<'_>) -> Result<Self, crate::avro::DecodeError> {
        r.read_bytes().map(|b| Self(b.to_vec()))
    }
}
