//! Rule 1: validate shape and limits. Pure over the intent and its record time.

use std::collections::BTreeSet;

use kledger_schemas::limits::*;
use kledger_schemas::{
    ALIAS_CHARS_MAX, APP_CHARS_MAX, AssertOp, EMAILS_MAX, EPISODE_CONTENT_CHARS_MAX,
    EPISODE_METADATA_BYTES_MAX, Evidence, Intent, Kind, NAMES_MAX, NOTES_CHARS_MAX, Op, OwnerKind,
    PERSON_IDS_MAX, RETAINED_NAMES_MAX, SEGMENT_CHARS_MAX, SEGMENTS_MAX, SourceDoc, SourceKind,
    SourceOp, SubjectScope, TITLE_CHARS_MAX, TRANSCRIPT_CHARS_MAX, Tenant, WriteReason,
};

use crate::codes::{Code, Reason};
use crate::slots;

type Check = Result<(), Reason>;

/// Which version of the rules a decision applies (rule 1, validation, since v2; rule 7, the
/// purge's tombstone, since v3): part of the decision, like the record budget (replay verify
/// must run with the processor's). A ledger keeps the version its history was decided under
/// (`limits.rules = "v1"` to `"v5"`); new ledgers take v6, the default. Each version keeps
/// every change of the ones before it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rules {
    /// Wave 1's rule 1: only `content` and `action_id` refuse control characters.
    V1,
    /// v1, plus: no text field holds a control character (line breaks only in a body, a quote
    /// or a condition value) or a character that hides or reorders text when shown
    /// ([`hides_text`]; `hidden_chars`); `content` refuses U+2028/U+2029 as the line breaks
    /// they are (`content_multiline`); ACL entries are identifiers (`bad_identifier`); an
    /// empty body answers `body_empty`.
    V2,
    /// v2, plus: a purge's tombstone also empties the close reason, the sensitivity labels
    /// and the evidence checksums (an episodic message's is the SHA-256 of its text), so a
    /// tombstone holds nothing that confirms a guess of what was purged through them.
    V3,
    /// v3, plus crypto-shredding: rows are sealed (their content encrypted under a data key
    /// per row, which a purge destroys; [`crate::seal`]), memory ids, content hashes and intent
    /// digests are keyed with the ledger's secret, and the head hash covers content MACs and
    /// not the intent's partition or offset ([`kledger_schemas::Form::Hashed`]).
    V4,
    /// v4, plus one entity per person: a third-party or relationship subject's entity is
    /// resolved against the account's people documents at ingest — a person id stays, an
    /// exact alias of one person becomes that person's id, an alias of several
    /// (`alias_ambiguous`) or of the owner (`alias_is_owner`) is rejected, and anything else
    /// must be an entity id (`kind:id` or `kind_id`, no spaces, no `@`) or is rejected
    /// (`unknown_person`): a name or an email is never an entity ([`crate::sources::resolve`]).
    V5,
    /// v5, plus provenance: every intent names its `source.source_version`
    /// (`source_version_required`), so each write is tied to what was looked at.
    #[default]
    V6,
}

/// Whether `c` hides or reorders text when it is shown (refused by rules v2): bidi marks,
/// embeddings, overrides and isolates; zero-width space, word joiner and the invisible
/// operators; deprecated format controls; the byte-order mark; interlinear annotations; tag
/// characters (text invisible to a reader that a model still reads). Zero-width joiners and
/// non-joiners stay allowed: scripts and emoji sequences need them.
pub fn hides_text(c: char) -> bool {
    matches!(
        c,
        '\u{061C}'
            | '\u{200B}'
            | '\u{200E}'
            | '\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{206F}'
            | '\u{FEFF}'
            | '\u{FFF9}'..='\u{FFFB}'
            | '\u{E0000}'..='\u{E007F}'
    )
}

/// A text's shape under rules v2: one line, or lines (tabs and line breaks allowed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Text {
    Line,
    Lines,
}

/// Checks `value` of `field` for characters its shape refuses (rules v2).
fn text(field: &str, value: &str, shape: Text) -> Check {
    let refused = |c: char| match c {
        '\n' | '\t' | '\r' => shape == Text::Line,
        '\u{2028}' | '\u{2029}' => true,
        c => c.is_control() || hides_text(c),
    };
    // Printable ASCII is refused nowhere: one pass over the bytes clears most texts, and only
    // a text with other bytes is read char by char.
    let clean = printable_ascii(value) || !value.chars().any(refused);
    if clean {
        Ok(())
    } else {
        let what = match shape {
            Text::Line => "a control character or line break",
            Text::Lines => "a control character",
        };
        fail(
            Code::HiddenChars,
            format!("{field} holds {what}, or one that hides or reorders text"),
        )
    }
}

/// Whether every byte of `s` is printable ASCII (no control byte, nothing above 0x7e): eight
/// bytes at a time, then the rest one by one.
fn printable_ascii(s: &str) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGHS: u64 = 0x8080_8080_8080_8080;
    let mut words = s.as_bytes().chunks_exact(8);
    for w in &mut words {
        let mut b = [0u8; 8];
        b.copy_from_slice(w);
        let x = u64::from_le_bytes(b);
        // With every byte below 0x80, adding 0x60 to each sets its high bit exactly when it is
        // at least 0x20, and adding 1 exactly when it is 0x7f; neither carries into the next.
        let printable = x & HIGHS == 0
            && x.wrapping_add(0x60 * ONES) & HIGHS == HIGHS
            && x.wrapping_add(ONES) & HIGHS == 0;
        if !printable {
            return false;
        }
    }
    words.remainder().iter().all(|b| (0x20..0x7f).contains(b))
}

/// Whether `s` holds a control character (`char::is_control`), with printable ASCII cleared
/// in one pass over its bytes.
fn has_control(s: &str) -> bool {
    !printable_ascii(s) && s.chars().any(char::is_control)
}

fn fail(code: Code, message: impl Into<String>) -> Check {
    Err(Reason::new(code, message))
}

fn chars(s: &str) -> usize {
    s.chars().count()
}

/// Whether `s` has `min..=max` chars; `min` is 0 or 1 (so a byte count decides it), and the
/// chars are only counted when the bytes exceed `max`.
fn bounded(s: &str, min: usize, max: usize) -> bool {
    debug_assert!(min <= 1);
    s.len() >= min && (s.len() <= max || chars(s) <= max)
}

/// An identifier's characters are all ASCII, so an identifier's bytes can be checked one by
/// one: a byte of a multi-byte char (0x80 and above) is none of them.
fn ident_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.' | ':' | '@')
}

fn identifier(field: &str, value: &str, prefix: &str) -> Check {
    let ok = value.starts_with(prefix)
        && value.len() > prefix.len()
        && value.len() <= ID_CHARS_MAX
        && value.bytes().all(|b| ident_char(char::from(b)));
    if ok {
        Ok(())
    } else {
        fail(
            Code::BadIdentifier,
            format!("{field} must be {prefix}<id> of 1..={ID_CHARS_MAX} chars [A-Za-z0-9_.:@-]"),
        )
    }
}

fn tenant(t: &Tenant) -> Check {
    identifier("tenant_id", &t.tenant_id, "t_")?;
    if let Some(team) = &t.team_id {
        identifier("team_id", team, "team_")?;
    }
    if let Some(p) = &t.project_id {
        identifier("project_id", p, "proj_")?;
    }
    if let Some(a) = &t.agent_id {
        identifier("agent_id", a, "agt_")?;
    }
    let owner_prefix = match t.owner_kind {
        OwnerKind::User => "",
        OwnerKind::Team => "team_",
        OwnerKind::Agent => "agt_",
    };
    identifier("owner_id", &t.owner_id, owner_prefix)
}

fn account(intent: &Intent) -> Check {
    let mut parts = intent.account_id.split('/');
    let parts = match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some(t), Some(k), Some(o), None) => Some([t, k, o]),
        _ => None,
    };
    let well_formed = parts.is_some_and(|parts| {
        OwnerKind::parse(parts[1]).is_some()
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.bytes().all(|b| ident_char(char::from(b))))
    });
    let Some([tenant_id, owner_kind, owner_id]) = parts.filter(|_| well_formed) else {
        return fail(
            Code::BadAccountId,
            "account_id must be {tenant_id}/{owner_kind}/{owner_id}",
        );
    };
    tenant(&intent.tenant)?;
    // The parts hold no '/', nor do the tenant's checked ids: comparing them part by part is
    // comparing `account_id` with `tenant.account_id()`, without making that string.
    let t = &intent.tenant;
    if (tenant_id, owner_kind, owner_id) != (&t.tenant_id, t.owner_kind.as_str(), &t.owner_id) {
        return fail(
            Code::AccountMismatch,
            "account_id does not match the tenant block",
        );
    }
    Ok(())
}

fn timestamp(field: &str, v: i64) -> Check {
    if (0..TIMESTAMP_MS_END).contains(&v) {
        Ok(())
    } else {
        fail(
            Code::BadTimestamp,
            format!("{field} must be in [0, 2^48) ms"),
        )
    }
}

fn list(field: &str, items: &[String], max: usize) -> Check {
    if items.len() > max {
        return fail(Code::BadList, format!("{field}: at most {max} entries"));
    }
    if items.iter().any(|s| !bounded(s, 1, SHORT_CHARS_MAX)) {
        return fail(
            Code::BadList,
            format!("{field}: entries must be 1..={SHORT_CHARS_MAX} chars"),
        );
    }
    Ok(())
}

fn short(field: &str, v: Option<&str>) -> Check {
    match v {
        Some(s) if !bounded(s, 1, SHORT_CHARS_MAX) => fail(
            Code::FieldTooLong,
            format!("{field} must be 1..={SHORT_CHARS_MAX} chars"),
        ),
        _ => Ok(()),
    }
}

/// Checks evidence items and the quote budget; returns (quotes, quote chars) for accumulation.
pub fn evidence(items: &[Evidence]) -> Result<(usize, usize), Reason> {
    if items.len() > EVIDENCE_MAX {
        return Err(Reason::new(
            Code::EvidenceLimit,
            format!("at most {EVIDENCE_MAX} evidence items"),
        ));
    }
    let (mut quotes, mut quote_chars) = (0usize, 0usize);
    for e in items {
        let ok = bounded(&e.source_type, 1, SHORT_CHARS_MAX)
            && bounded(&e.source_id, 1, SHORT_CHARS_MAX)
            && bounded(&e.source_version, 0, SHORT_CHARS_MAX)
            && e.checksum
                .as_deref()
                .is_none_or(|c| bounded(c, 1, SHORT_CHARS_MAX))
            && e.locator
                .heading
                .as_deref()
                .is_none_or(|c| bounded(c, 1, SHORT_CHARS_MAX))
            && e.locator
                .message_id
                .as_deref()
                .is_none_or(|c| bounded(c, 1, SHORT_CHARS_MAX));
        if !ok {
            return Err(Reason::new(
                Code::EvidenceLimit,
                "evidence needs source_type and source_id; its fields are at most 256 chars",
            ));
        }
        if let Some(q) = &e.quote {
            quotes += 1;
            quote_chars += chars(q);
        }
    }
    quote_budget(quotes, quote_chars)?;
    Ok((quotes, quote_chars))
}

/// Fails when quotes exceed the per-op / per-row budget.
pub fn quote_budget(quotes: usize, quote_chars: usize) -> Check {
    if quotes > QUOTES_MAX || quote_chars > QUOTE_CHARS_MAX {
        return fail(
            Code::EvidenceLimit,
            format!("at most {QUOTES_MAX} quotes and {QUOTE_CHARS_MAX} quote chars"),
        );
    }
    Ok(())
}

/// An assert's (or an amend's replacement's) shape. Long on purpose: the checks in the order
/// of the catalogue of codes, so the first failure an intent meets is always the same one.
fn assert_op(op: &AssertOp, reason: WriteReason, record_time: i64, rules: Rules) -> Check {
    if SourceKind::of(op.kind).is_some() {
        return fail(
            Code::SourceKindReserved,
            format!("{} rows are written by the source op only", op.kind),
        );
    }
    if op.content.is_empty() {
        return fail(Code::ContentEmpty, "content is empty");
    }
    if !bounded(&op.content, 1, CONTENT_CHARS_MAX) {
        return fail(
            Code::ContentTooLong,
            format!("content over {CONTENT_CHARS_MAX} chars"),
        );
    }
    if has_control(&op.content) {
        return fail(
            Code::ContentMultiline,
            "content must be one line without control characters",
        );
    }
    match (op.kind, &op.body) {
        (Kind::Document, None) => return fail(Code::BodyMissing, "a document needs a body"),
        (Kind::Document, Some(b)) if b.is_empty() && rules >= Rules::V2 => {
            return fail(Code::BodyEmpty, "body is empty");
        }
        (Kind::Document, Some(b)) if !bounded(b, 1, BODY_CHARS_MAX) => {
            return fail(
                Code::BodyTooLong,
                format!("body must be 1..={BODY_CHARS_MAX} chars"),
            );
        }
        (Kind::Fact | Kind::Trigger, Some(_)) => {
            return fail(Code::BodyNotAllowed, "only documents have a body");
        }
        _ => {}
    }
    if op.kind == Kind::Document && reason != WriteReason::RecurringWorkflow {
        return fail(
            Code::DocumentReason,
            "documents are written for recurring_workflow",
        );
    }
    if op.kind == Kind::Trigger && reason != WriteReason::StandingTrigger {
        return fail(
            Code::TriggerReason,
            "triggers are written for standing_trigger",
        );
    }
    match (op.kind, &op.condition) {
        (Kind::Trigger, None) => {
            return fail(Code::ConditionMissing, "a trigger needs a condition");
        }
        (Kind::Trigger, Some(c)) => {
            let size: usize = c.iter().map(|(k, v)| chars(k) + chars(v)).sum();
            if c.len() > CONDITION_KEYS_MAX || size > CONDITION_CHARS_MAX || c.is_empty() {
                return fail(
                    Code::ConditionTooLarge,
                    format!(
                        "condition needs 1..={CONDITION_KEYS_MAX} keys, ≤{CONDITION_CHARS_MAX} chars"
                    ),
                );
            }
        }
        (_, Some(_)) => return fail(Code::ConditionNotAllowed, "only triggers have a condition"),
        _ => {}
    }
    if let Some(slot) = &op.slot {
        if op.kind != Kind::Fact {
            return fail(Code::SlotNotAllowed, "only facts have a slot");
        }
        if slots::canonical(slot).is_none() {
            return fail(
                Code::UnknownSlot,
                format!("slot {slot:?} is not registered"),
            );
        }
    }
    if op.subject.scope == SubjectScope::ThirdParty && op.subject.entity_id.is_none() {
        return fail(Code::EntityRequired, "third-party subjects need entity_id");
    }
    short("subject.entity_id", op.subject.entity_id.as_deref())?;
    let valid_from = op.valid_from.unwrap_or(record_time);
    timestamp("valid_from", valid_from)?;
    if let Some(t) = op.valid_to {
        timestamp("valid_to", t)?;
        if t < valid_from {
            return fail(Code::BadValidity, "valid_to is before valid_from");
        }
    }
    if let Some(t) = op.expires_at {
        timestamp("expires_at", t)?;
        if t < valid_from {
            return fail(Code::BadValidity, "expires_at is before valid_from");
        }
    }
    if let Some(c) = op.confidence
        && !(0.0..=1.0).contains(&c)
    {
        return fail(Code::BadConfidence, "confidence must be in [0, 1]");
    }
    if !(CURATION_WEIGHT_MIN..=CURATION_WEIGHT_MAX).contains(&op.curation_weight) {
        return fail(
            Code::BadCurationWeight,
            "curation_weight must be in -100..=100",
        );
    }
    list("tags", &op.tags, TAGS_MAX)?;
    list("sensitivity.labels", &op.sensitivity.labels, TAGS_MAX)?;
    list("acl.read_team_ids", &op.acl.read_team_ids, ACL_ENTRIES_MAX)?;
    list(
        "acl.read_agent_ids",
        &op.acl.read_agent_ids,
        ACL_ENTRIES_MAX,
    )?;
    list("acl.read_role_ids", &op.acl.read_role_ids, ACL_ENTRIES_MAX)?;
    short("lang", op.lang.as_deref())?;
    evidence(&op.evidence)?;
    if let Some(e) = &op.embedding {
        let ok = bounded(&e.model, 1, SHORT_CHARS_MAX)
            && (1..=EMBEDDING_DIM_MAX).contains(&e.vector.len())
            && e.vector.iter().all(|x| x.is_finite());
        if !ok {
            return fail(
                Code::BadEmbedding,
                "embedding needs a model and 1..=4096 finite values",
            );
        }
    }
    Ok(())
}

fn reason_text(r: &str, required: bool) -> Check {
    let min = usize::from(required);
    if bounded(r, min, REASON_CHARS_MAX) {
        Ok(())
    } else {
        fail(
            Code::BadReason,
            format!("reason must be {min}..={REASON_CHARS_MAX} chars"),
        )
    }
}

/// Every row targeted by an op that must be planned (amend, close, attach_evidence), in op
/// order, with duplicates.
pub fn planned_targets(intent: &Intent) -> impl Iterator<Item = &str> {
    intent
        .ops
        .iter()
        .flat_map(|op| -> Box<dyn Iterator<Item = &str> + '_> {
            match op {
                Op::Amend(a) => Box::new(a.targets.iter().map(String::as_str)),
                Op::Close(c) => Box::new(std::iter::once(c.target.as_str())),
                Op::AttachEvidence(e) => Box::new(std::iter::once(e.target.as_str())),
                Op::Assert(_) | Op::Purge(_) | Op::Source(_) => Box::new(std::iter::empty()),
            }
        })
}

/// The asserted rows of an intent (asserts and amend replacements) with their op index.
pub fn asserted(intent: &Intent) -> impl Iterator<Item = (usize, &AssertOp)> {
    intent
        .ops
        .iter()
        .enumerate()
        .filter_map(|(i, op)| match op {
            Op::Assert(a) => Some((i, a)),
            Op::Amend(a) => Some((i, &a.replacement)),
            _ => None,
        })
}

/// The canonical primary-user slot an assert occupies, if any.
pub fn occupied_slot(op: &AssertOp) -> Option<&'static str> {
    if op.kind != Kind::Fact || op.subject.scope != SubjectScope::PrimaryUser {
        return None;
    }
    op.slot.as_deref().and_then(slots::canonical)
}

/// Rule 1 under `rules`. `record_time` is the Kafka record timestamp (ms). Long on purpose: the
/// intent-level checks in a fixed order (which decides which code an intent gets), then each
/// op's.
pub fn validate(intent: &Intent, record_time: i64, rules: Rules) -> Check {
    if !(0..TIMESTAMP_MS_END).contains(&record_time) {
        return fail(
            Code::BadRecordTime,
            "record timestamp must be in [0, 2^48) ms",
        );
    }
    if !bounded(&intent.action_id, 1, ACTION_ID_CHARS_MAX) || has_control(&intent.action_id) {
        return fail(
            Code::BadActionId,
            "action_id must be 1..=256 chars without control characters",
        );
    }
    account(intent)?;
    let s = &intent.source;
    if !bounded(&s.source_id, 1, SOURCE_ID_CHARS_MAX)
        || !bounded(&s.source_type, 1, SOURCE_TYPE_CHARS_MAX)
        || !bounded(&s.source_version, 0, SOURCE_VERSION_CHARS_MAX)
        || s.author_id
            .as_deref()
            .is_some_and(|a| !bounded(a, 1, SHORT_CHARS_MAX))
    {
        return fail(
            Code::BadSource,
            "source_id 1..=256, source_type 1..=64, source_version ..=64",
        );
    }
    if rules >= Rules::V6 && s.source_version.is_empty() {
        return fail(
            Code::SourceVersionRequired,
            "source.source_version names the version of what the write was made from (rules v6)",
        );
    }
    if !bounded(&intent.extractor.name, 1, EXTRACTOR_CHARS_MAX)
        || !bounded(&intent.extractor.version, 1, EXTRACTOR_CHARS_MAX)
    {
        return fail(
            Code::BadExtractor,
            "extractor name and version must be 1..=64 chars",
        );
    }
    if intent.ops.is_empty() {
        return fail(Code::NoOps, "an intent needs at least one op");
    }
    if intent.ops.len() > OPS_MAX {
        return fail(Code::TooManyOps, format!("at most {OPS_MAX} ops"));
    }
    let pa = &intent.planned_against;
    if pa.head_seq < 0 {
        return fail(Code::BadHeadSeq, "planned_against.head_seq is negative");
    }
    if pa.targets.len() > TARGETS_MAX
        || pa
            .targets
            .iter()
            .any(|t| !bounded(&t.memory_id, 1, SHORT_CHARS_MAX))
    {
        return fail(
            Code::BadTargets,
            format!("at most {TARGETS_MAX} planned targets"),
        );
    }
    let purges = intent
        .ops
        .iter()
        .filter(|o| matches!(o, Op::Purge(_)))
        .count();
    if purges > 0 && purges < intent.ops.len() {
        return fail(Code::PurgeMixed, "purge ops cannot be mixed with other ops");
    }
    sources_alone(intent)?;
    for (i, op) in intent.ops.iter().enumerate() {
        op_shape(intent, op, record_time, rules)
            .map_err(|r| Reason::new(r.code, format!("ops[{i}]: {}", r.message)))?;
    }
    let mut seen = BTreeSet::new();
    for t in planned_targets(intent) {
        if !pa.targets.iter().any(|p| p.memory_id == t) {
            return fail(
                Code::TargetUnplanned,
                format!("target {t} is not in planned_against.targets"),
            );
        }
        if !seen.insert(t) {
            return fail(Code::DuplicateTarget, format!("target {t} appears twice"));
        }
    }
    let mut slots_seen = BTreeSet::new();
    for (_, a) in asserted(intent) {
        if let Some(slot) = occupied_slot(a)
            && !slots_seen.insert(slot)
        {
            return fail(Code::SlotConflict, format!("two ops assert slot {slot}"));
        }
    }
    match rules {
        Rules::V1 => Ok(()),
        Rules::V2 | Rules::V3 | Rules::V4 | Rules::V5 | Rules::V6 => texts(intent),
    }
}

/// Rules v2's checks of every text field's characters (after v1's, so an input v1 refuses
/// keeps v1's code) and of ACL entries as identifiers.
fn texts(intent: &Intent) -> Check {
    use Text::Line;
    text("action_id", &intent.action_id, Line)?;
    let s = &intent.source;
    text("source.source_id", &s.source_id, Line)?;
    text("source.source_type", &s.source_type, Line)?;
    text("source.source_version", &s.source_version, Line)?;
    if let Some(a) = &s.author_id {
        text("source.author_id", a, Line)?;
    }
    text("extractor.name", &intent.extractor.name, Line)?;
    text("extractor.version", &intent.extractor.version, Line)?;
    for t in &intent.planned_against.targets {
        text("planned_against.targets", &t.memory_id, Line)?;
    }
    for (i, op) in intent.ops.iter().enumerate() {
        op_texts(op).map_err(|r| Reason::new(r.code, format!("ops[{i}]: {}", r.message)))?;
    }
    Ok(())
}

fn op_texts(op: &Op) -> Check {
    use Text::Line;
    match op {
        Op::Assert(a) => assert_texts(a),
        Op::Amend(a) => assert_texts(&a.replacement),
        Op::Close(c) => text("reason", &c.reason, Line),
        Op::AttachEvidence(e) => evidence_texts(&e.evidence),
        // Checked with its shape (sources need rules v4).
        Op::Source(_) => Ok(()),
        Op::Purge(p) => {
            if let Some(t) = &p.target {
                text("target", t, Line)?;
            }
            if let Some(e) = &p.entity_id {
                text("entity_id", e, Line)?;
            }
            text("reason", &p.reason, Line)
        }
    }
}

fn assert_texts(op: &AssertOp) -> Check {
    use Text::{Line, Lines};
    if op.content.contains(['\u{2028}', '\u{2029}']) {
        return fail(
            Code::ContentMultiline,
            "content must be one line (U+2028 and U+2029 are line breaks)",
        );
    }
    text("content", &op.content, Line)?;
    if let Some(b) = &op.body {
        text("body", b, Lines)?;
    }
    for (k, v) in op.condition.iter().flatten() {
        text("condition key", k, Line)?;
        text("condition value", v, Lines)?;
    }
    if let Some(e) = &op.subject.entity_id {
        text("subject.entity_id", e, Line)?;
    }
    for t in &op.tags {
        text("tags", t, Line)?;
    }
    for l in &op.sensitivity.labels {
        text("sensitivity.labels", l, Line)?;
    }
    acl_ids(&op.acl)?;
    if let Some(l) = &op.lang {
        text("lang", l, Line)?;
    }
    if let Some(e) = &op.embedding {
        text("embedding.model", &e.model, Line)?;
    }
    evidence_texts(&op.evidence)
}

fn evidence_texts(items: &[Evidence]) -> Check {
    use Text::{Line, Lines};
    for e in items {
        text("evidence.source_type", &e.source_type, Line)?;
        text("evidence.source_id", &e.source_id, Line)?;
        text("evidence.source_version", &e.source_version, Line)?;
        let optional = [
            ("evidence.checksum", &e.checksum),
            ("evidence.locator.heading", &e.locator.heading),
            ("evidence.locator.message_id", &e.locator.message_id),
        ];
        for (field, v) in optional {
            if let Some(v) = v {
                text(field, v, Line)?;
            }
        }
        if let Some(q) = &e.quote {
            text("evidence.quote", q, Lines)?;
        }
    }
    Ok(())
}

fn op_shape(intent: &Intent, op: &Op, record_time: i64, rules: Rules) -> Check {
    let reason = intent.write_reason;
    match op {
        Op::Assert(a) => assert_op(a, reason, record_time, rules),
        Op::Amend(a) => {
            if a.targets.is_empty() || a.targets.len() > TARGETS_MAX {
                return fail(
                    Code::BadTargets,
                    format!("amend needs 1..={TARGETS_MAX} targets"),
                );
            }
            assert_op(&a.replacement, reason, record_time, rules)
        }
        Op::Close(c) => {
            if let Some(t) = c.valid_to {
                timestamp("valid_to", t)?;
            }
            reason_text(&c.reason, true)
        }
        Op::AttachEvidence(e) => {
            if e.evidence.is_empty() {
                return fail(Code::EvidenceLimit, "attach_evidence needs evidence");
            }
            evidence(&e.evidence).map(|_| ())
        }
        Op::Source(s) => source_op(s, rules),
        Op::Purge(p) => {
            let selectors = usize::from(p.target.is_some())
                + usize::from(p.entity_id.is_some())
                + usize::from(p.whole_account);
            if selectors != 1 {
                return fail(
                    Code::BadPurge,
                    "purge sets exactly one of target, entity_id, whole_account",
                );
            }
            short("target", p.target.as_deref())?;
            short("entity_id", p.entity_id.as_deref())?;
            reason_text(&p.reason, false)
        }
    }
}

/// A `source` op goes alone: every op of its intent is one, and the write reason is
/// `source_sync` exactly when they are; one document at most once per intent.
fn sources_alone(intent: &Intent) -> Check {
    let sources = intent
        .ops
        .iter()
        .filter(|o| matches!(o, Op::Source(_)))
        .count();
    let sync = intent.write_reason == WriteReason::SourceSync;
    if (sources > 0 || sync) && (sources < intent.ops.len() || !sync) {
        return fail(
            Code::SourceMixed,
            "source ops go alone, with write_reason source_sync",
        );
    }
    let mut seen = BTreeSet::new();
    for op in &intent.ops {
        if let Op::Source(s) = op
            && !seen.insert((s.doc.source(), s.doc.record_id()))
        {
            return fail(
                Code::BadSourceDoc,
                format!(
                    "{} {} appears twice",
                    s.doc.source().as_str(),
                    s.doc.record_id()
                ),
            );
        }
    }
    Ok(())
}

fn doc_fail(field: &str, what: impl std::fmt::Display) -> Check {
    fail(Code::BadSourceDoc, format!("{field}: {what}"))
}

/// An id inside a source document: an identifier of 1..=256 chars.
fn doc_id(field: &str, id: &str) -> Check {
    if bounded(id, 1, SHORT_CHARS_MAX) && id.bytes().all(|b| ident_char(char::from(b))) {
        Ok(())
    } else {
        doc_fail(
            field,
            format!("must be 1..={SHORT_CHARS_MAX} chars [A-Za-z0-9_.:@-]"),
        )
    }
}

fn doc_ids(field: &str, ids: &[String]) -> Check {
    if ids.len() > PERSON_IDS_MAX {
        return doc_fail(field, format!("at most {PERSON_IDS_MAX} person ids"));
    }
    ids.iter().try_for_each(|id| doc_id(field, id))
}

/// A text of a source document: `min..=max` chars of `shape`.
fn doc_text(field: &str, value: &str, min: usize, max: usize, shape: Text) -> Check {
    if !bounded(value, min, max) {
        return doc_fail(field, format!("must be {min}..={max} chars"));
    }
    text(field, value, shape)
}

fn doc_texts(field: &str, items: &[String], max_items: usize) -> Check {
    if items.len() > max_items {
        return doc_fail(field, format!("at most {max_items} entries"));
    }
    items
        .iter()
        .try_for_each(|v| doc_text(field, v, 1, ALIAS_CHARS_MAX, Text::Line))
}

fn span(start: i64, end: i64) -> Check {
    timestamp("start", start)?;
    timestamp("end", end)?;
    if end < start {
        return fail(Code::BadValidity, "a time span ends before it starts");
    }
    Ok(())
}

/// A `source` op's shape (rules v4 and later: source rows are sealed). Long on purpose: one
/// arm per document type, its fields in schema order.
fn source_op(op: &SourceOp, rules: Rules) -> Check {
    use Text::{Line, Lines};
    if rules < Rules::V4 {
        return fail(
            Code::SourceUnsupported,
            "source documents need rules v4 or later",
        );
    }
    doc_id("record id", op.doc.record_id())?;
    match &op.doc {
        SourceDoc::Person(p) => {
            doc_texts("names", &p.names, NAMES_MAX)?;
            doc_texts("retained_names", &p.retained_names, RETAINED_NAMES_MAX)?;
            doc_texts("emails", &p.emails, EMAILS_MAX)?;
        }
        SourceDoc::Conversation(c) => {
            span(c.started_at, c.ended_at)?;
            doc_text("summary", &c.summary, 1, TITLE_CHARS_MAX, Line)?;
            doc_ids("participant_ids", &c.participant_ids)?;
            if c.segments.len() > SEGMENTS_MAX {
                return doc_fail("segments", format!("at most {SEGMENTS_MAX}"));
            }
            let mut total = 0usize;
            for seg in &c.segments {
                span(seg.start_ms, seg.end_ms)?;
                if let Some(s) = &seg.speaker_id {
                    doc_id("segments.speaker_id", s)?;
                }
                doc_text("segments.text", &seg.text, 1, SEGMENT_CHARS_MAX, Lines)?;
                total += chars(&seg.text);
            }
            if total > TRANSCRIPT_CHARS_MAX {
                return doc_fail(
                    "segments",
                    format!("at most {TRANSCRIPT_CHARS_MAX} chars in all"),
                );
            }
        }
        SourceDoc::Calendar(e) => {
            span(e.start, e.end)?;
            doc_text("title", &e.title, 1, TITLE_CHARS_MAX, Line)?;
            doc_ids("attendee_ids", &e.attendee_ids)?;
            if let Some(n) = &e.notes {
                doc_text("notes", n, 0, NOTES_CHARS_MAX, Lines)?;
            }
        }
        SourceDoc::Screen(s) => {
            span(s.start, s.end)?;
            doc_text("app", &s.app, 1, APP_CHARS_MAX, Line)?;
            doc_text("window_title", &s.window_title, 1, TITLE_CHARS_MAX, Line)?;
            doc_ids("person_ids", &s.person_ids)?;
            if let Some(o) = &s.ocr_text {
                doc_text("ocr_text", o, 0, NOTES_CHARS_MAX, Lines)?;
            }
        }
        SourceDoc::Episode(e) => {
            doc_id("session_id", &e.session_id)?;
            if let Some(p) = &e.project_id {
                identifier("project_id", p, "proj_")?;
            }
            doc_text("content", &e.content, 1, EPISODE_CONTENT_CHARS_MAX, Lines)?;
            doc_text("producer", &e.producer, 1, SHORT_CHARS_MAX, Line)?;
            doc_text("produced_for", &e.produced_for, 1, SHORT_CHARS_MAX, Line)?;
            timestamp("timestamp", e.timestamp)?;
            doc_text("role", &e.role, 1, SOURCE_TYPE_CHARS_MAX, Line)?;
            if e.metadata.len() > EPISODE_METADATA_BYTES_MAX {
                return doc_fail(
                    "metadata",
                    format!("at most {EPISODE_METADATA_BYTES_MAX} bytes of JSON"),
                );
            }
            if serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&e.metadata)
                .is_err()
            {
                return doc_fail("metadata", "must be a JSON object");
            }
            text("metadata", &e.metadata, Lines)?;
        }
    }
    list("acl.read_team_ids", &op.acl.read_team_ids, ACL_ENTRIES_MAX)?;
    list(
        "acl.read_agent_ids",
        &op.acl.read_agent_ids,
        ACL_ENTRIES_MAX,
    )?;
    list("acl.read_role_ids", &op.acl.read_role_ids, ACL_ENTRIES_MAX)?;
    acl_ids(&op.acl)
}

/// An ACL's entries as identifiers (rules v2): `team_…`, `agt_…`, roles.
fn acl_ids(acl: &kledger_schemas::Acl) -> Check {
    for id in &acl.read_team_ids {
        identifier("acl.read_team_ids", id, "team_")?;
    }
    for id in &acl.read_agent_ids {
        identifier("acl.read_agent_ids", id, "agt_")?;
    }
    acl.read_role_ids
        .iter()
        .try_for_each(|id| identifier("acl.read_role_ids", id, ""))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Texts of printable ASCII, the characters the checks refuse, and other non-ASCII text.
    fn texts() -> impl Strategy<Value = String> {
        let pick = prop_oneof![
            4 => proptest::char::range(' ', '~'),
            1 => proptest::sample::select(vec![
                '\n', '\t', '\r', '\0', '\u{7f}', '\u{85}', '\u{9f}', '\u{2028}', '\u{2029}',
                '\u{200B}', '\u{202E}', '\u{FEFF}', '\u{E0041}', 'é', '字', '🙂',
            ]),
            1 => any::<char>(),
        ];
        proptest::collection::vec(pick, 0..24).prop_map(|v| v.into_iter().collect())
    }

    /// `account` answers as comparing `account_id` with `tenant.account_id()` did.
    #[test]
    fn account_compares_as_the_formatted_id() {
        let base: Intent =
            serde_json::from_str(include_str!("../../examples/intent.json")).expect("example");
        let cases = [
            "t_acme/user/u_alice",
            "t_acme/user/u_bob",
            "t_acme/team/u_alice",
            "t_other/user/u_alice",
            "t_acme/user/u_alice/x",
            "t_acme/user",
            "t_acme//u_alice",
            "t_acme/user/u_alicé",
        ];
        for id in cases {
            let mut it = base.clone();
            it.account_id = id.to_owned();
            let old = {
                let parts: Vec<&str> = id.split('/').collect();
                let well_formed = parts.len() == 3
                    && OwnerKind::parse(parts[1]).is_some()
                    && parts
                        .iter()
                        .all(|p| !p.is_empty() && p.chars().all(ident_char));
                if !well_formed {
                    Some(Code::BadAccountId)
                } else if id != it.tenant.account_id() {
                    Some(Code::AccountMismatch)
                } else {
                    None
                }
            };
            assert_eq!(account(&it).err().map(|r| r.code), old, "{id}");
        }
    }

    proptest! {
        /// Eight bytes at a time answers as byte by byte, on texts long enough for several
        /// words that are mostly printable, with the bytes at and beside the bounds among them.
        #[test]
        fn printable_ascii_answers_byte_by_byte(bytes in proptest::collection::vec(
            prop_oneof![
                40 => 0x20u8..0x7f,
                1 => proptest::sample::select(vec![0x00u8, 0x1f, 0x7f, 0x80, 0x9f, 0xa0, 0xff]),
            ],
            0..64,
        )) {
            let s = String::from_utf8_lossy(&bytes);
            prop_assert_eq!(printable_ascii(&s), s.bytes().all(|b| (0x20..0x7f).contains(&b)));
        }

        /// The byte-wise fast paths answer as the char-by-char definitions do.
        #[test]
        fn fast_paths_answer_as_the_char_checks(s in texts()) {
            prop_assert_eq!(has_control(&s), s.chars().any(char::is_control));
            prop_assert_eq!(printable_ascii(&s), s.bytes().all(|b| (0x20..0x7f).contains(&b)));
            for shape in [Text::Line, Text::Lines] {
                let refused = |c: char| match c {
                    '\n' | '\t' | '\r' => shape == Text::Line,
                    '\u{2028}' | '\u{2029}' => true,
                    c => c.is_control() || hides_text(c),
                };
                prop_assert_eq!(text("f", &s, shape).is_ok(), !s.chars().any(refused));
            }
            prop_assert_eq!(
                s.bytes().all(|b| ident_char(char::from(b))),
                s.chars().all(ident_char)
            );
        }
    }
}
