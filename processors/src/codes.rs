//! Stable reason codes of `rejected` and `replan` receipts.
//!
//! Codes never change meaning once released; the table in `docs/error-codes.md` is tested
//! against [`Code::ALL`].

macro_rules! codes {
    ($($(#[$doc:meta])* $variant:ident = $code:literal,)+) => {
        /// A stable reason code.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub enum Code {
            $($(#[$doc])* $variant,)+
        }

        impl Code {
            /// Every code.
            pub const ALL: &'static [Code] = &[$(Code::$variant,)+];

            /// The code as it appears on receipts.
            pub fn as_str(self) -> &'static str {
                match self { $(Code::$variant => $code,)+ }
            }
        }
    };
}

codes! {
    // ---- rule 1: validation (rejected) ----
    /// `action_id` empty, longer than 256 chars or containing control characters.
    BadActionId = "bad_action_id",
    /// `account_id` is not `{tenant_id}/{owner_kind}/{owner_id}`.
    BadAccountId = "bad_account_id",
    /// `account_id` does not match the tenant block.
    AccountMismatch = "account_mismatch",
    /// An identifier of the tenant block has the wrong prefix, characters or length.
    BadIdentifier = "bad_identifier",
    /// `source` fields empty or too long.
    BadSource = "bad_source",
    /// `source.source_version` empty (rules v6): every write names the version of what it was
    /// made from (a message id, a document revision, an edit time).
    SourceVersionRequired = "source_version_required",
    /// `extractor` fields empty or too long.
    BadExtractor = "bad_extractor",
    /// No ops.
    NoOps = "no_ops",
    /// More than 16 ops.
    TooManyOps = "too_many_ops",
    /// `content` empty.
    ContentEmpty = "content_empty",
    /// `content` longer than 4,000 chars.
    ContentTooLong = "content_too_long",
    /// `content` contains a line break or control character.
    ContentMultiline = "content_multiline",
    /// A document without `body`.
    BodyMissing = "body_missing",
    /// `body` longer than 24,000 chars.
    BodyTooLong = "body_too_long",
    /// `body` empty (rules v2; v1 answers `body_too_long`).
    BodyEmpty = "body_empty",
    /// `body` on a fact or trigger.
    BodyNotAllowed = "body_not_allowed",
    /// A document whose write reason is not `recurring_workflow`.
    DocumentReason = "document_reason",
    /// A trigger whose write reason is not `standing_trigger`.
    TriggerReason = "trigger_reason",
    /// A trigger without `condition`.
    ConditionMissing = "condition_missing",
    /// `condition` over 12 keys or 8,000 chars.
    ConditionTooLarge = "condition_too_large",
    /// `condition` on a fact or document.
    ConditionNotAllowed = "condition_not_allowed",
    /// `slot` is not in the slot registry.
    UnknownSlot = "unknown_slot",
    /// `slot` on a document or trigger.
    SlotNotAllowed = "slot_not_allowed",
    /// Two ops of one intent assert the same primary-user slot.
    SlotConflict = "slot_conflict",
    /// A third-party subject without `entity_id`.
    EntityRequired = "entity_required",
    /// A timestamp outside `[0, 2^48)` ms.
    BadTimestamp = "bad_timestamp",
    /// The record timestamp itself is outside `[0, 2^48)` ms.
    BadRecordTime = "bad_record_time",
    /// `valid_to` before `valid_from`, or `expires_at` before `valid_from`.
    BadValidity = "bad_validity",
    /// `confidence` not a number in `[0, 1]`.
    BadConfidence = "bad_confidence",
    /// `curation_weight` outside `-100..=100`.
    BadCurationWeight = "bad_curation_weight",
    /// Too many tags, labels or ACL entries, or one of them too long or empty.
    BadList = "bad_list",
    /// A text field holds a character it may not (rules v2): a control character (a line
    /// break too, except in a body, quote or condition value), or one that hides or reorders
    /// text when shown (bidi controls, zero-width space, word joiner, byte-order mark, tag
    /// characters). The message names the field.
    HiddenChars = "hidden_chars",
    /// A short field (lang, entity id, slot, evidence field) too long.
    FieldTooLong = "field_too_long",
    /// Evidence over 32 items, 8 quotes or 8,000 quote chars (per op, or on the row after
    /// `attach_evidence`), or an evidence item without source.
    EvidenceLimit = "evidence_limit",
    /// Embedding without model, with 0 or more than 4,096 dimensions, or non-finite values.
    BadEmbedding = "bad_embedding",
    /// `planned_against.head_seq` negative.
    BadHeadSeq = "bad_head_seq",
    /// More than 16 planned targets, or an amend with 0 or more than 16 targets.
    BadTargets = "bad_targets",
    /// An op targets a row not listed in `planned_against.targets`.
    TargetUnplanned = "target_unplanned",
    /// Two ops of one intent target the same row.
    DuplicateTarget = "duplicate_target",
    /// `close` or `purge` reason missing or longer than 1,000 chars.
    BadReason = "bad_reason",
    /// A purge op that does not set exactly one of target, entity_id, whole_account.
    BadPurge = "bad_purge",
    /// Purge ops mixed with other ops in one intent.
    PurgeMixed = "purge_mixed",
    /// A `source` op beside ops of another kind, a `source` op whose intent's write reason is
    /// not `source_sync`, or `source_sync` on an intent of other ops.
    SourceMixed = "source_mixed",
    /// A `source` op in a ledger decided under rules v1 to v3 (source rows are sealed).
    SourceUnsupported = "source_unsupported",
    /// A source document's shape: its id or a person id is not an identifier of 1..=256
    /// chars, a list is over its bound, a text is empty or too long, a time span ends before
    /// it starts, or two ops of one intent put the same document. The message names the field.
    BadSourceDoc = "bad_source_doc",
    /// An `assert` or `amend` of a source kind (person, conversation, calendar_event,
    /// screen_span): source rows are written by the `source` op only.
    SourceKindReserved = "source_kind_reserved",
    // ---- rule 1, against the people documents (rules v5; rejected) ----
    /// A third-party or relationship subject names a person by a name or an email that no
    /// people document of the account holds: name the person by its person id (or put its
    /// people document first).
    UnknownPerson = "unknown_person",
    /// A subject's entity is an alias several people documents of the account hold.
    AliasAmbiguous = "alias_ambiguous",
    /// A subject's entity is an alias of the owner's own people document (the one whose
    /// person id is the owner id): the owner is the primary user, not a third party.
    AliasIsOwner = "alias_is_owner",
    // ---- rule 2: idempotency (rejected) ----
    /// The action was committed before with a different payload.
    ActionReused = "action_reused",
    // ---- rule 2: re-read after a restart (replan) ----
    /// Read again after a restart, when the account's head already holds a later intent of
    /// the same partition: it was not committed when first read, and is not now (the head
    /// holds writes it was not decided against). Plan again against the current head.
    Overtaken = "overtaken",
    // ---- rule 4: targets (rejected) ----
    /// A target does not exist in this account.
    TargetMissing = "target_missing",
    /// An amend changes kind, subject scope or subject entity.
    AmendMismatch = "amend_mismatch",
    // ---- rule 5: authority (rejected) ----
    /// Amending or closing a row of higher authority.
    Authority = "authority",
    // ---- rules 3 and 4: replan ----
    /// A target changed (revision, content hash or status) since planning.
    StaleTarget = "stale_target",
    /// The head moved and the policy is `strict`.
    HeadMoved = "head_moved",
    /// The slot holds an active fact the intent does not target.
    SlotOccupied = "slot_occupied",
    // ---- the record budget (rejected) ----
    /// The commit the intent would produce is larger than the record budget
    /// (`limits.record_bytes_max`), e.g. an amend of many large rows: split the intent.
    CommitTooLarge = "commit_too_large",
    /// The broker refused to write the intent's commit for a reason a retry cannot fix (its
    /// size or content); nothing was committed and the partition moved on.
    RecordRefused = "record_refused",
    // ---- JSON ingress (rejected) ----
    /// The JSON form could not be parsed into an intent.
    MalformedJson = "malformed_json",
}

impl std::fmt::Display for Code {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A reason to reject or replan, with a human-readable detail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reason {
    /// The stable code.
    pub code: Code,
    /// Detail for humans; not part of the contract.
    pub message: String,
}

impl Reason {
    /// A reason with a message.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}
