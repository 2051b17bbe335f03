//! Legacy memory migration planning (seed 001): long-term rows adapt in place as facts with
//! `write_reason = legacy_migration` (or `direct_user_statement` when the user asserted them);
//! short-term and archived rows are listed for adjudication and never promoted; per-row
//! revision markers make planning deterministic and resumable.
//!
//! Pure functions over values. The file handling (two passes over the input, resuming an
//! interrupted plan file) and `kledger migrate apply` live in `kledger-topology`.
//!
//! Planning one row:
//! 1. Not a legacy row (bad JSON or shape) → `ignored` / `malformed_row`, marker `line:<n>`.
//! 2. Its marker `<memory_id>@<revision>` is already in the plan → nothing (already planned).
//! 3. `migrated_to` set (the legacy store says it was moved) → `noop` / `already_migrated`.
//! 4. A higher revision of the same memory_id exists in the input → `ignored` / `older_revision`.
//! 5. Status other than `active` → `ignored` / `inactive` (detail: the status).
//! 6. Tier `short_term` / `archive` → `adjudicate` (reason = the tier); other tiers than
//!    `long_term` → `ignored` / `unknown_tier`.
//! 7. An earlier revision of this memory was adapted by an earlier plan run →
//!    `adjudicate` / `revised_after_plan`.
//! 8. Content empty after whitespace folding → `ignored` / `empty_content`; longer than a
//!    ledger row may be → `adjudicate` / `content_too_long`.
//! 9. A primary-user slot (from the slot hint or the predicate: resides_in → home_city,
//!    works_at → employer, age → age_years) held by a newer candidate row of the same account →
//!    `adjudicate` / `slot_conflict` (at most one active value per slot).
//! 10. The intent fails the processor's validation → `ignored` / `invalid_intent` (detail: the
//!     stable code).
//! 11. Otherwise → `adapt` / `long_term` or `long_term_user_asserted`, with the intent.

use std::collections::{BTreeMap, BTreeSet};

use kledger_schemas::limits::{CONTENT_CHARS_MAX, SHORT_CHARS_MAX, TAGS_MAX, TIMESTAMP_MS_END};
use kledger_schemas::{
    Acl, AssertOp, AssertionClass, Evidence, Extractor, HeadPolicy, Intent, IntentRecord, Kind,
    Locator, Op, OwnerKind, PlannedAgainst, Sensitivity, SensitivityLevel, Source, Subject,
    SubjectScope, Tenant, Visibility, WriteReason,
};
use serde::{Deserialize, Serialize};

use crate::slots;

/// The extractor named on every migration intent.
pub const EXTRACTOR_NAME: &str = "kledger-migrate";
/// Its version: bump when the mapping below changes (plans stay reproducible per version).
pub const EXTRACTOR_VERSION: &str = "1";
/// Prefix of every migration intent's action id: `legacy:<memory_id>@<revision>`.
pub const ACTION_PREFIX: &str = "legacy:";
/// The tag every migrated row carries.
pub const LEGACY_TAG: &str = "legacy";

/// Legacy predicates that map onto registered slots (beyond the slot registry's aliases).
pub const PREDICATE_SLOTS: &[(&str, &str)] = &[
    ("resides_in", "home_city"),
    ("lives_in", "home_city"),
    ("works_at", "employer"),
    ("employed_by", "employer"),
    ("age", "age_years"),
    ("has_age", "age_years"),
];

/// One legacy memory row (one JSON object per line). Unknown fields are ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LegacyRow {
    /// The legacy store's id of the memory.
    pub memory_id: String,
    /// The row's revision in the legacy store (the marker is `memory_id@revision`).
    pub revision: i64,
    /// `{tenant_id}/{owner_kind}/{owner_id}` of the owner.
    pub account_id: String,
    /// Tenant block extras.
    #[serde(default)]
    pub team_id: Option<String>,
    /// Tenant block extras.
    #[serde(default)]
    pub project_id: Option<String>,
    /// Tenant block extras.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// `long_term` | `short_term` | `archive`.
    pub tier: String,
    /// `active` or anything else (deleted, expired, superseded, ...): only active rows move.
    pub status: String,
    /// The memory text.
    pub content: String,
    /// A predicate hint (`resides_in`, `works_at`, `age`, ...).
    #[serde(default)]
    pub predicate: Option<String>,
    /// A slot hint (a registered slot or alias).
    #[serde(default)]
    pub slot: Option<String>,
    /// Whom it is about: absent, `user` or `primary_user` for the owner; otherwise a stable
    /// entity id (a third party).
    #[serde(default)]
    pub subject: Option<String>,
    /// When the legacy system captured it (ms since the epoch); becomes `valid_from` and the
    /// intent's record time.
    pub captured_at: i64,
    /// Whether the user stated it themselves.
    #[serde(default)]
    pub user_asserted: bool,
    /// Source of the memory (default: the legacy row itself).
    #[serde(default)]
    pub source_type: Option<String>,
    /// Source of the memory.
    #[serde(default)]
    pub source_id: Option<String>,
    /// Source of the memory.
    #[serde(default)]
    pub source_version: Option<String>,
    /// Author behind the source.
    #[serde(default)]
    pub author_id: Option<String>,
    /// Set by a legacy store that already moved the row (the ledger's memory id).
    #[serde(default)]
    pub migrated_to: Option<String>,
    /// Visibility (default private).
    #[serde(default)]
    pub visibility: Option<Visibility>,
    /// Sensitivity level (default normal).
    #[serde(default)]
    pub sensitivity: Option<SensitivityLevel>,
    /// Tags (the `legacy` tag is added).
    #[serde(default)]
    pub tags: Vec<String>,
    /// Language code.
    #[serde(default)]
    pub lang: Option<String>,
}

impl LegacyRow {
    /// The row's revision marker.
    pub fn marker(&self) -> String {
        format!("{}@{}", self.memory_id, self.revision)
    }
}

/// What the planner does with a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Disposition {
    /// Publish the intent.
    Adapt,
    /// Already migrated: nothing to do.
    Noop,
    /// Not migrated, with the reason.
    Ignored,
    /// Needs an explicit human or policy decision; never promoted by the planner.
    Adjudicate,
}

impl Disposition {
    /// As written in plans.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Adapt => "adapt",
            Self::Noop => "noop",
            Self::Ignored => "ignored",
            Self::Adjudicate => "adjudicate",
        }
    }
}

/// One line of a plan file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlanEntry {
    /// `memory_id@revision`, or `line:<n>` for a line that is not a legacy row.
    pub marker: String,
    /// 1-based line of the legacy file.
    pub line: u64,
    /// The legacy memory id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_id: Option<String>,
    /// The legacy revision.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<i64>,
    /// The owner's account.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account_id: Option<String>,
    /// What happens to the row.
    pub disposition: Disposition,
    /// Stable reason code (see `docs/migration.md`).
    pub reason: String,
    /// Detail for humans.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The slot the fact takes (adapted and slot-conflict rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slot: Option<String>,
    /// The intent to publish (`adapt` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub intent: Option<IntentRecord>,
}

impl PlanEntry {
    fn for_row(line: u64, row: &LegacyRow, d: Disposition, reason: &str) -> Self {
        Self {
            marker: row.marker(),
            line,
            memory_id: Some(row.memory_id.clone()),
            revision: Some(row.revision),
            account_id: Some(row.account_id.clone()),
            disposition: d,
            reason: reason.to_owned(),
            detail: None,
            slot: None,
            intent: None,
        }
    }

    fn detail(mut self, d: impl Into<String>) -> Self {
        self.detail = Some(d.into());
        self
    }

    /// The entry for a line that is not a legacy row.
    pub fn malformed(line: u64, error: &str) -> Self {
        Self {
            marker: format!("line:{line}"),
            line,
            memory_id: None,
            revision: None,
            account_id: None,
            disposition: Disposition::Ignored,
            reason: "malformed_row".into(),
            detail: Some(error.chars().take(SHORT_CHARS_MAX).collect()),
            slot: None,
            intent: None,
        }
    }
}

/// The slot a row's fact would take: the slot hint (registered slot or alias), else the
/// predicate's mapping; only for the primary user.
pub fn mapped_slot(row: &LegacyRow) -> Option<&'static str> {
    if !primary_user(row) {
        return None;
    }
    let hint = row.slot.as_deref().map(|s| s.trim().to_ascii_lowercase());
    if let Some(s) = hint.as_deref().and_then(slots::canonical) {
        return Some(s);
    }
    let p = row.predicate.as_deref()?.trim().to_ascii_lowercase();
    PREDICATE_SLOTS
        .iter()
        .find(|(k, _)| *k == p)
        .map(|(_, s)| *s)
        .or_else(|| slots::canonical(&p))
}

fn primary_user(row: &LegacyRow) -> bool {
    matches!(
        row.subject.as_deref().map(str::trim),
        None | Some("") | Some("user") | Some("primary_user")
    )
}

/// Content folded to one line: runs of whitespace and control characters become one space.
pub fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for w in s.split(|c: char| c.is_whitespace() || c.is_control()) {
        if w.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(w);
    }
    out
}

/// What the first pass over the legacy file learns: the latest revision of each memory and
/// the row that wins each (account, slot).
#[derive(Debug, Default, Clone)]
pub struct Survey {
    latest: BTreeMap<String, i64>,
    /// (account, slot) → (captured_at, revision, memory_id) of the newest candidate.
    slot_winner: BTreeMap<(String, &'static str), (i64, i64, String)>,
}

impl Survey {
    /// Records one legacy row.
    pub fn observe(&mut self, row: &LegacyRow) {
        let r = self
            .latest
            .entry(row.memory_id.clone())
            .or_insert(row.revision);
        *r = (*r).max(row.revision);
    }

    /// Records the slot claims of the rows that survived [`Survey::observe`] of every row (call
    /// in a second sweep, or after all rows were observed).
    pub fn claim(&mut self, row: &LegacyRow) {
        if !self.is_latest(row) || pre_slot(row).is_err() {
            return;
        }
        if let Some(slot) = mapped_slot(row) {
            let key = (row.account_id.clone(), slot);
            let cand = (row.captured_at, row.revision, row.memory_id.clone());
            match self.slot_winner.get(&key) {
                Some(w) if *w >= cand => {}
                _ => {
                    self.slot_winner.insert(key, cand);
                }
            }
        }
    }

    fn is_latest(&self, row: &LegacyRow) -> bool {
        self.latest
            .get(&row.memory_id)
            .is_none_or(|r| *r == row.revision)
    }
}

/// What earlier plan entries (an interrupted or earlier run) already cover.
#[derive(Debug, Default, Clone)]
pub struct Planned {
    markers: BTreeSet<String>,
    adapted: BTreeMap<String, i64>,
}

impl Planned {
    /// Records an entry already in the plan.
    pub fn record(&mut self, e: &PlanEntry) {
        self.markers.insert(e.marker.clone());
        if e.disposition == Disposition::Adapt
            && let (Some(m), Some(r)) = (&e.memory_id, e.revision)
        {
            self.adapted.insert(m.clone(), r);
        }
    }

    /// Whether the plan has an entry with this marker.
    pub fn has(&self, marker: &str) -> bool {
        self.markers.contains(marker)
    }

    /// Entries recorded.
    pub fn len(&self) -> usize {
        self.markers.len()
    }

    /// Whether nothing is recorded.
    pub fn is_empty(&self) -> bool {
        self.markers.is_empty()
    }
}

/// Checks that do not depend on other rows (steps 3, 5, 6, 8 of the module doc).
fn pre_slot(row: &LegacyRow) -> Result<String, (Disposition, &'static str, String)> {
    use Disposition::*;
    if let Some(to) = &row.migrated_to {
        return Err((Noop, "already_migrated", format!("migrated to {to}")));
    }
    if row.status.trim() != "active" {
        return Err((Ignored, "inactive", format!("status {}", row.status)));
    }
    match row.tier.trim() {
        "long_term" => {}
        "short_term" => return Err((Adjudicate, "short_term", "short-term tier".into())),
        "archive" => return Err((Adjudicate, "archive", "archive tier".into())),
        other => return Err((Ignored, "unknown_tier", format!("tier {other}"))),
    }
    let content = one_line(&row.content);
    if content.is_empty() {
        return Err((Ignored, "empty_content", String::new()));
    }
    if content.chars().count() > CONTENT_CHARS_MAX {
        return Err((
            Adjudicate,
            "content_too_long",
            format!("more than {CONTENT_CHARS_MAX} chars"),
        ));
    }
    Ok(content)
}

/// Plans one legacy row (line `line` of the file): `None` when the plan already has it.
pub fn plan_row(
    line: u64,
    row: &LegacyRow,
    survey: &Survey,
    planned: &Planned,
) -> Option<PlanEntry> {
    use Disposition::*;
    let marker = row.marker();
    if planned.has(&marker) {
        return None;
    }
    let entry = |d, r: &str| PlanEntry::for_row(line, row, d, r);
    if row.migrated_to.is_none() && !survey.is_latest(row) {
        let latest = survey.latest.get(&row.memory_id).copied().unwrap_or(0);
        return Some(entry(Ignored, "older_revision").detail(format!("revision {latest} exists")));
    }
    let content = match pre_slot(row) {
        Ok(c) => c,
        Err((d, reason, detail)) => {
            let e = entry(d, reason);
            return Some(if detail.is_empty() {
                e
            } else {
                e.detail(detail)
            });
        }
    };
    if let Some(r) = planned.adapted.get(&row.memory_id) {
        return Some(
            entry(Adjudicate, "revised_after_plan")
                .detail(format!("revision {r} was already adapted")),
        );
    }
    let slot = mapped_slot(row);
    if let Some(s) = slot {
        let key = (row.account_id.clone(), s);
        if let Some((_, rev, mem)) = survey.slot_winner.get(&key)
            && (mem != &row.memory_id || *rev != row.revision)
        {
            let mut e = entry(Adjudicate, "slot_conflict").detail(format!("{s} is held by {mem}"));
            e.slot = Some(s.to_owned());
            return Some(e);
        }
    }
    let record = match intent(row, content, slot) {
        Ok(r) => r,
        Err(detail) => return Some(entry(Ignored, "invalid_intent").detail(detail)),
    };
    if let Err(r) = crate::validate::validate(&record.intent, record.timestamp, Default::default())
    {
        return Some(entry(Ignored, "invalid_intent").detail(format!(
            "{}: {}",
            r.code.as_str(),
            r.message
        )));
    }
    let reason = if row.user_asserted {
        "long_term_user_asserted"
    } else {
        "long_term"
    };
    let mut e = entry(Adapt, reason);
    e.slot = slot.map(str::to_owned);
    e.intent = Some(record);
    Some(e)
}

/// What an adjudicator decided about a row the planner listed for adjudication.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Move it into the ledger, as a long-term row would move.
    Promote,
    /// Leave it out of the ledger.
    Discard,
}

/// One line of a decisions file (`kledger migrate adjudicate`): a decision about the row of
/// `marker`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Decision {
    /// The row's plan marker (`memory_id@revision`).
    pub marker: String,
    /// What to do with it.
    pub decision: Verdict,
    /// Who decided (a person, a policy; 1..=256 chars): recorded with the decision.
    pub by: String,
    /// Why, for humans (≤1,000 chars).
    #[serde(default)]
    pub note: Option<String>,
}

/// The entry recording `d` for `row` (line `line`), which the planner listed for adjudication:
/// `promote` → an `adapt` entry whose intent moves the row as a long-term row moves (reason
/// `adjudicated_promote`; invalid → `ignored` / `invalid_intent`), `discard` → `ignored` /
/// `adjudicated_discard`; the decider and note in the detail. A promoted row whose slot
/// another row holds is answered `replan` by the processor (`kledger migrate apply` reports
/// it blocking): the decision moves a row, it does not overrule the slot.
pub fn adjudicate(line: u64, row: &LegacyRow, d: &Decision) -> PlanEntry {
    use Disposition::*;
    let note: String = d
        .note
        .as_deref()
        .map(|n| format!(": {n}"))
        .unwrap_or_default()
        .chars()
        .take(1_000)
        .collect();
    let by: String = d.by.chars().take(SHORT_CHARS_MAX).collect();
    let entry = |disp, reason: &str, what: &str| {
        PlanEntry::for_row(line, row, disp, reason).detail(format!("{what} by {by}{note}"))
    };
    if d.decision == Verdict::Discard {
        return entry(Ignored, "adjudicated_discard", "discarded");
    }
    let mut promoted = row.clone();
    promoted.tier = "long_term".into();
    let content = match pre_slot(&promoted) {
        Ok(c) => c,
        Err((_, reason, detail)) => {
            return PlanEntry::for_row(line, row, Ignored, "invalid_intent")
                .detail(format!("{reason}: {detail}"));
        }
    };
    let slot = mapped_slot(&promoted);
    let record = match intent(&promoted, content, slot) {
        Ok(r) => r,
        Err(detail) => {
            return PlanEntry::for_row(line, row, Ignored, "invalid_intent").detail(detail);
        }
    };
    if let Err(r) = crate::validate::validate(&record.intent, record.timestamp, Default::default())
    {
        return PlanEntry::for_row(line, row, Ignored, "invalid_intent").detail(format!(
            "{}: {}",
            r.code.as_str(),
            r.message
        ));
    }
    let mut e = entry(Adapt, "adjudicated_promote", "promoted");
    e.slot = slot.map(str::to_owned);
    e.intent = Some(record);
    e
}

/// The intent adapting `row` (one fact assert). Long on purpose: every field of the intent,
/// each with the legacy field it comes from.
fn intent(row: &LegacyRow, content: String, slot: Option<&str>) -> Result<IntentRecord, String> {
    if !(0..TIMESTAMP_MS_END).contains(&row.captured_at) {
        return Err("captured_at must be in [0, 2^48) ms".into());
    }
    let parts: Vec<&str> = row.account_id.split('/').collect();
    let [tenant_id, kind, owner_id] = parts[..] else {
        return Err("account_id must be {tenant_id}/{owner_kind}/{owner_id}".into());
    };
    let owner_kind = OwnerKind::parse(kind).ok_or_else(|| format!("owner kind {kind}"))?;
    let tenant = Tenant {
        tenant_id: tenant_id.to_owned(),
        team_id: row.team_id.clone(),
        project_id: row.project_id.clone(),
        agent_id: row.agent_id.clone(),
        owner_kind,
        owner_id: owner_id.to_owned(),
    };
    let version = format!("r{}", row.revision);
    let source = Source {
        source_id: row
            .source_id
            .clone()
            .unwrap_or_else(|| row.memory_id.clone()),
        source_type: row
            .source_type
            .clone()
            .unwrap_or_else(|| "legacy_memory".into()),
        // An empty version is no version (rules v6 requires one): the row's revision stands in.
        source_version: row
            .source_version
            .clone()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| version.clone()),
        author_id: row.author_id.clone(),
    };
    let subject = if primary_user(row) {
        Subject {
            scope: SubjectScope::PrimaryUser,
            entity_id: None,
        }
    } else {
        Subject {
            scope: SubjectScope::ThirdParty,
            entity_id: row.subject.as_deref().map(|s| s.trim().to_owned()),
        }
    };
    let mut tags: Vec<String> = row
        .tags
        .iter()
        .filter(|t| t.as_str() != LEGACY_TAG)
        .take(TAGS_MAX - 1)
        .cloned()
        .collect();
    tags.push(LEGACY_TAG.into());
    let (write_reason, assertion_class) = if row.user_asserted {
        (WriteReason::DirectUserStatement, AssertionClass::Confirmed)
    } else {
        (WriteReason::LegacyMigration, AssertionClass::Inferred)
    };
    let op = AssertOp {
        kind: Kind::Fact,
        content,
        body: None,
        condition: None,
        slot: slot.map(str::to_owned),
        subject,
        valid_from: Some(row.captured_at),
        valid_to: None,
        expires_at: None,
        assertion_class,
        confidence: None,
        curation_weight: 0,
        sensitivity: Sensitivity {
            level: row.sensitivity.unwrap_or(SensitivityLevel::Normal),
            labels: Vec::new(),
        },
        visibility: row.visibility.unwrap_or(Visibility::Private),
        acl: Acl::default(),
        tags,
        lang: row.lang.clone(),
        evidence: vec![Evidence {
            source_type: "legacy_memory".into(),
            source_id: row.memory_id.clone(),
            source_version: version,
            locator: Locator::default(),
            quote: None,
            checksum: None,
        }],
        embedding: None,
    };
    Ok(IntentRecord {
        timestamp: row.captured_at,
        partition: None,
        offset: None,
        intent: Intent {
            action_id: format!("{ACTION_PREFIX}{}", row.marker()),
            account_id: row.account_id.clone(),
            tenant,
            source,
            extractor: Extractor {
                name: EXTRACTOR_NAME.into(),
                version: EXTRACTOR_VERSION.into(),
            },
            write_reason,
            planned_against: PlannedAgainst {
                head_seq: 0,
                policy: HeadPolicy::Rebase,
                targets: Vec::new(),
            },
            ops: vec![Op::Assert(op)],
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str) -> LegacyRow {
        LegacyRow {
            memory_id: id.into(),
            revision: 1,
            account_id: "t_acme/user/u1".into(),
            team_id: None,
            project_id: None,
            agent_id: None,
            tier: "long_term".into(),
            status: "active".into(),
            content: "Lives in\nLisbon  ".into(),
            predicate: None,
            slot: None,
            subject: None,
            captured_at: 1_700_000_000_000,
            user_asserted: false,
            source_type: None,
            source_id: None,
            source_version: None,
            author_id: None,
            migrated_to: None,
            visibility: None,
            sensitivity: None,
            tags: vec![],
            lang: None,
        }
    }

    fn plan_all(rows: &[LegacyRow]) -> Vec<PlanEntry> {
        let mut s = Survey::default();
        rows.iter().for_each(|r| s.observe(r));
        rows.iter().for_each(|r| s.claim(r));
        let mut planned = Planned::default();
        let mut out = Vec::new();
        for (i, r) in rows.iter().enumerate() {
            if let Some(e) = plan_row(i as u64 + 1, r, &s, &planned) {
                planned.record(&e);
                out.push(e);
            }
        }
        out
    }

    fn reasons(es: &[PlanEntry]) -> Vec<(Disposition, &str)> {
        es.iter()
            .map(|e| (e.disposition, e.reason.as_str()))
            .collect()
    }

    #[test]
    fn long_term_adapts_as_legacy_migration_and_user_asserted_as_direct_statement() {
        let mut b = row("m2");
        b.user_asserted = true;
        let es = plan_all(&[row("m1"), b]);
        assert_eq!(
            reasons(&es),
            [
                (Disposition::Adapt, "long_term"),
                (Disposition::Adapt, "long_term_user_asserted")
            ]
        );
        let i = &es[0].intent.as_ref().unwrap().intent;
        assert_eq!(i.write_reason, WriteReason::LegacyMigration);
        assert_eq!(i.action_id, "legacy:m1@1");
        let Op::Assert(a) = &i.ops[0] else { panic!() };
        assert_eq!(a.content, "Lives in Lisbon");
        assert_eq!(a.valid_from, Some(1_700_000_000_000));
        assert!(a.tags.contains(&"legacy".to_owned()));
        let i2 = &es[1].intent.as_ref().unwrap().intent;
        assert_eq!(i2.write_reason, WriteReason::DirectUserStatement);
    }

    #[test]
    fn predicates_map_onto_slots() {
        for (p, s) in [
            ("resides_in", "home_city"),
            ("works_at", "employer"),
            ("age", "age_years"),
        ] {
            let mut r = row("m");
            r.predicate = Some(p.into());
            assert_eq!(mapped_slot(&r), Some(s));
            r.subject = Some("person:ana".into());
            assert_eq!(mapped_slot(&r), None, "third parties take no slot");
        }
        let mut r = row("m");
        r.predicate = Some("likes".into());
        assert_eq!(mapped_slot(&r), None);
    }

    #[test]
    fn an_adjudication_promotes_or_discards_and_records_who_decided() {
        let mut a = row("m1");
        a.tier = "short_term".into();
        let marker = a.marker();
        let d = |decision| Decision {
            marker: marker.clone(),
            decision,
            by: "reviewer@acme".into(),
            note: Some("confirmed with the user".into()),
        };
        let promoted = adjudicate(7, &a, &d(Verdict::Promote));
        assert_eq!(promoted.disposition, Disposition::Adapt);
        assert_eq!(promoted.reason, "adjudicated_promote");
        assert_eq!(
            promoted.detail.as_deref(),
            Some("promoted by reviewer@acme: confirmed with the user")
        );
        let record = promoted.intent.expect("an intent");
        assert_eq!(record.intent.action_id, format!("{ACTION_PREFIX}m1@1"));
        assert_eq!(adjudicate(7, &a, &d(Verdict::Promote)).intent, Some(record));
        let discarded = adjudicate(7, &a, &d(Verdict::Discard));
        assert_eq!(
            (
                discarded.disposition,
                discarded.reason.as_str(),
                discarded.intent
            ),
            (Disposition::Ignored, "adjudicated_discard", None)
        );
        // An inactive row is not promoted, whatever the decision.
        a.status = "deleted".into();
        assert_eq!(
            adjudicate(7, &a, &d(Verdict::Promote)).reason,
            "invalid_intent"
        );
    }

    #[test]
    fn short_term_and_archive_are_listed_never_promoted_and_inactive_ignored() {
        let mut a = row("a");
        a.tier = "short_term".into();
        let mut b = row("b");
        b.tier = "archive".into();
        let mut c = row("c");
        c.status = "deleted".into();
        let mut d = row("d");
        d.migrated_to = Some("mem_x".into());
        let mut e = row("e");
        e.tier = "weird".into();
        let mut f = row("f");
        f.content = " \n\t".into();
        let es = plan_all(&[a, b, c, d, e, f]);
        assert_eq!(
            reasons(&es),
            [
                (Disposition::Adjudicate, "short_term"),
                (Disposition::Adjudicate, "archive"),
                (Disposition::Ignored, "inactive"),
                (Disposition::Noop, "already_migrated"),
                (Disposition::Ignored, "unknown_tier"),
                (Disposition::Ignored, "empty_content"),
            ]
        );
        assert!(es.iter().all(|e| e.intent.is_none()));
    }

    #[test]
    fn newest_row_wins_a_slot_and_older_revisions_are_ignored() {
        let mut old = row("old");
        old.predicate = Some("resides_in".into());
        let mut new = row("new");
        new.predicate = Some("resides_in".into());
        new.captured_at += 1;
        let mut r1 = row("rev");
        let mut r2 = row("rev");
        r2.revision = 2;
        r1.content = "old text".into();
        // Order of the input does not matter.
        let es = plan_all(&[new.clone(), old.clone(), r2.clone(), r1.clone()]);
        assert_eq!(
            reasons(&es),
            [
                (Disposition::Adapt, "long_term"),
                (Disposition::Adjudicate, "slot_conflict"),
                (Disposition::Adapt, "long_term"),
                (Disposition::Ignored, "older_revision"),
            ]
        );
        let es2 = plan_all(&[old, new, r1, r2]);
        assert_eq!(es2[1].memory_id.as_deref(), Some("new"));
        assert_eq!(es2[1].disposition, Disposition::Adapt);
        assert_eq!(es2[0].reason, "slot_conflict");
    }

    #[test]
    fn markers_make_replanning_a_no_op_and_a_new_revision_goes_to_adjudication() {
        let rows = [row("a"), row("b")];
        let first = plan_all(&rows);
        let mut planned = Planned::default();
        first.iter().for_each(|e| planned.record(e));
        let mut s = Survey::default();
        rows.iter().for_each(|r| s.observe(r));
        assert!(plan_row(1, &rows[0], &s, &planned).is_none());
        let mut a2 = row("a");
        a2.revision = 2;
        let mut s2 = Survey::default();
        s2.observe(&a2);
        let e = plan_row(3, &a2, &s2, &planned).unwrap();
        assert_eq!(
            (e.disposition, e.reason.as_str()),
            (Disposition::Adjudicate, "revised_after_plan")
        );
    }

    #[test]
    fn invalid_rows_are_ignored_with_the_processor_code() {
        let mut r = row("m");
        r.account_id = "acme/user/u1".into();
        let e = &plan_all(&[r])[0];
        assert_eq!(e.reason, "invalid_intent");
        assert!(e.detail.as_deref().unwrap().starts_with("bad_identifier"));
        let mut r = row("m");
        r.captured_at = -5;
        assert_eq!(plan_all(&[r])[0].reason, "invalid_intent");
    }
}
