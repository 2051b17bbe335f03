//! A deliberately simple reference model of the ledger.
//!
//! It keeps every account as a plain list of rows and scans it for everything (slots, entities,
//! actions), with no indexes, overlays or key layouts. It shares with the real code only the
//! specified primitives — validation limits, the slot registry, the authority table and the
//! id/hash functions — and re-derives every decision itself, so a property test that runs both
//! over the same stream catches disagreements in the rules.

use std::collections::BTreeMap;

use kledger_processors::decide::{commit_overhead_bytes, op_bytes, split_sizes};
use kledger_processors::{Limits, authority, ids, seal, slots, validate};
use kledger_schemas::{AssertOp, HeadPolicy, Intent, Kind, Op, Outcome, Row, Status, SubjectScope};

/// What the model decided for one intent.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelResult {
    /// The outcome.
    pub outcome: Outcome,
    /// The reason code (replan, rejected).
    pub code: Option<String>,
    /// The commit (committed, duplicate).
    pub commit_seq: Option<i64>,
    /// Rows written by the commit, in commit order.
    pub rows: Vec<Row>,
}

#[derive(Debug, Clone, Default)]
struct Account {
    seq: i64,
    generation: i64,
    rows: Vec<Row>,
    /// (action_id, digest, commit_seq)
    actions: Vec<(String, String, i64)>,
}

/// The model: accounts by id.
#[derive(Debug, Clone, Default)]
pub struct Model {
    accounts: BTreeMap<String, Account>,
    limits: Limits,
}

fn result(outcome: Outcome, code: &str) -> ModelResult {
    ModelResult {
        outcome,
        code: Some(code.to_owned()),
        commit_seq: None,
        rows: Vec::new(),
    }
}

fn is_user_slot_fact(kind: Kind, scope: SubjectScope) -> bool {
    kind == Kind::Fact && scope == SubjectScope::PrimaryUser
}

impl Model {
    /// An empty ledger.
    pub fn new() -> Self {
        Self::default()
    }

    /// An empty ledger deciding within `limits` (a small record budget splits purges).
    pub fn with_limits(limits: Limits) -> Self {
        Self {
            accounts: BTreeMap::new(),
            limits,
        }
    }

    /// The account's head seq.
    pub fn head_seq(&self, account: &str) -> i64 {
        self.accounts.get(account).map_or(0, |a| a.seq)
    }

    /// Every row of an account (latest version of each), in creation order.
    pub fn rows(&self, account: &str) -> &[Row] {
        self.accounts
            .get(account)
            .map_or(&[], |a| a.rows.as_slice())
    }

    /// Account ids.
    pub fn accounts(&self) -> impl Iterator<Item = &str> {
        self.accounts.keys().map(String::as_str)
    }

    /// Decides and applies one intent.
    pub fn apply(&mut self, intent: &Intent, timestamp: i64) -> ModelResult {
        if let Err(r) = validate::validate(intent, timestamp, self.limits.rules) {
            return result(Outcome::Rejected, r.code.as_str());
        }
        let digest = ids::intent_digest_with(self.limits.secret(), intent);
        let acct = self.accounts.entry(intent.account_id.clone()).or_default();
        if let Some((_, d, seq)) = acct.actions.iter().find(|(a, _, _)| *a == intent.action_id) {
            if *d == digest {
                return ModelResult {
                    outcome: Outcome::Duplicate,
                    code: None,
                    commit_seq: Some(*seq),
                    rows: vec![],
                };
            }
            return result(Outcome::Rejected, "action_reused");
        }
        let seq = acct.seq + 1;
        // The seq of the last commit: a purge too large for one record takes several.
        let (rows, last_seq) = if intent.ops.iter().all(|o| matches!(o, Op::Purge(_))) {
            match purge(acct, intent, seq, &self.limits) {
                Ok(r) => r,
                Err(r) => return r,
            }
        } else {
            let resolved = match resolve(acct, intent, &self.limits) {
                Ok(i) => i,
                Err(r) => return r,
            };
            match write(acct, &resolved, timestamp, seq, &self.limits) {
                Ok(rows) => {
                    if over_budget(intent, &rows, &self.limits) {
                        return result(Outcome::Rejected, "commit_too_large");
                    }
                    (rows, seq)
                }
                Err(r) => return r,
            }
        };
        let rows: Vec<Row> = rows
            .into_iter()
            .map(|r| marked(r, &intent.account_id, &self.limits))
            .collect();
        for row in &rows {
            match acct.rows.iter_mut().find(|r| r.memory_id == row.memory_id) {
                Some(existing) => *existing = row.clone(),
                None => acct.rows.push(row.clone()),
            }
        }
        acct.seq = last_seq;
        acct.actions
            .push((intent.action_id.clone(), digest, last_seq));
        ModelResult {
            outcome: Outcome::Committed,
            code: None,
            commit_seq: Some(last_seq),
            rows,
        }
    }
}

/// Rules v5, by scanning the account's rows: each third-party or relationship subject names
/// a current people document's id (kept), an alias of exactly one (rewritten to its id), an
/// alias of the owner's or of several (refused), or else must be an entity id with a kind (no
/// spaces, no `@`).
fn resolve(acct: &Account, intent: &Intent, limits: &Limits) -> Result<Intent, ModelResult> {
    let mut intent = intent.clone();
    if limits.rules < kledger_processors::Rules::V5 || limits.secret().is_none() {
        return Ok(intent);
    }
    let people: Vec<&kledger_schemas::PersonDoc> = acct
        .rows
        .iter()
        .filter(|r| r.status == Status::Active && r.kind == Kind::Person)
        .filter_map(
            |r| match r.record.as_ref().and_then(|rec| rec.doc.as_ref()) {
                Some(kledger_schemas::SourceDoc::Person(p)) => Some(p),
                _ => None,
            },
        )
        .collect();
    let owner = intent.tenant.owner_id.clone();
    for op in &mut intent.ops {
        let a = match op {
            Op::Assert(a) => a,
            Op::Amend(a) => &mut a.replacement,
            _ => continue,
        };
        if !matches!(
            a.subject.scope,
            SubjectScope::ThirdParty | SubjectScope::UserRelationship
        ) {
            continue;
        }
        let Some(e) = a.subject.entity_id.clone() else {
            continue;
        };
        if people.iter().any(|p| p.person_id == e) {
            continue;
        }
        let holders: Vec<&&kledger_schemas::PersonDoc> = people
            .iter()
            .filter(|p| {
                p.names.contains(&e) || p.retained_names.contains(&e) || p.emails.contains(&e)
            })
            .collect();
        if holders.iter().any(|p| p.person_id == owner) {
            return Err(result(Outcome::Rejected, "alias_is_owner"));
        }
        match holders.as_slice() {
            [one] => a.subject.entity_id = Some(one.person_id.clone()),
            [_, _, ..] => return Err(result(Outcome::Rejected, "alias_ambiguous")),
            [] if (e.contains(':') || e.contains('_'))
                && !e.contains('@')
                && !e.chars().any(char::is_whitespace) => {}
            [] => return Err(result(Outcome::Rejected, "unknown_person")),
        }
    }
    Ok(intent)
}

/// Whether one commit of `rows` may be larger than the record budget (by the specified bound).
fn over_budget(intent: &Intent, rows: &[Row], limits: &Limits) -> bool {
    commit_overhead_bytes(&intent.account_id, &intent.action_id)
        + rows.iter().map(|r| op_bytes(r, limits)).sum::<usize>()
        > limits.record_bytes_max
}

/// A row as a keyed commit holds it (rules v4), with what sealing leaves out of the model:
/// its content's MAC, no key id, no ciphertext ([`unsealed`] makes the real rows alike).
fn marked(mut row: Row, account: &str, limits: &Limits) -> Row {
    if let Some(secret) = limits.secret() {
        seal::mark(secret, account, &mut row, String::new());
    }
    row
}

/// `row` without what only a data key decides (its key id and ciphertext), so rows sealed
/// under different keys compare by their content and MAC.
pub fn unsealed(row: &Row) -> Row {
    let mut row = row.clone();
    if let Some(s) = &mut row.sealed {
        s.key_id.clear();
        s.ciphertext = Default::default();
    }
    row
}

fn find<'a>(acct: &'a Account, id: &str) -> Option<&'a Row> {
    acct.rows.iter().find(|r| r.memory_id == id)
}

fn targets(op: &Op) -> Vec<String> {
    match op {
        Op::Amend(a) => a.targets.clone(),
        Op::Close(c) => vec![c.target.clone()],
        Op::AttachEvidence(e) => vec![e.target.clone()],
        _ => vec![],
    }
}

// Long on purpose: one function per op kind's reference semantics, read beside `decide`'s arm.
fn write(
    acct: &Account,
    intent: &Intent,
    timestamp: i64,
    seq: i64,
    limits: &Limits,
) -> Result<Vec<Row>, ModelResult> {
    let all_targets: Vec<String> = intent.ops.iter().flat_map(targets).collect();
    // Targets exist, then none is stale.
    for t in &all_targets {
        if find(acct, t).is_none() {
            return Err(result(Outcome::Rejected, "target_missing"));
        }
    }
    for t in &all_targets {
        let row = find(acct, t).expect("checked above");
        let planned = intent
            .planned_against
            .targets
            .iter()
            .find(|p| p.memory_id == *t)
            .expect("validated");
        if row.status != Status::Active
            || row.revision != planned.revision
            || row.content_hash != planned.content_hash
        {
            return Err(result(Outcome::Replan, "stale_target"));
        }
    }
    let moved = intent.planned_against.head_seq != acct.seq;
    if moved && intent.planned_against.policy == HeadPolicy::Strict {
        return Err(result(Outcome::Replan, "head_moved"));
    }
    if all_targets.iter().any(|t| {
        kledger_schemas::SourceKind::of(find(acct, t).expect("checked above").kind).is_some()
    }) {
        return Err(result(Outcome::Rejected, "source_kind_reserved"));
    }
    for op in &intent.ops {
        if let Op::Amend(a) = op {
            for t in &a.targets {
                let row = find(acct, t).expect("checked above");
                let r = &a.replacement;
                if row.kind != r.kind || row.subject != r.subject {
                    return Err(result(Outcome::Rejected, "amend_mismatch"));
                }
            }
        }
    }
    for op in &intent.ops {
        let a = match op {
            Op::Assert(a) => a,
            Op::Amend(a) => &a.replacement,
            _ => continue,
        };
        if !is_user_slot_fact(a.kind, a.subject.scope) {
            continue;
        }
        let Some(slot) = a.slot.as_deref().and_then(slots::canonical) else {
            continue;
        };
        let occupied = acct.rows.iter().any(|r| {
            r.status == Status::Active
                && is_user_slot_fact(r.kind, r.subject.scope)
                && r.slot.as_deref() == Some(slot)
                && !all_targets.contains(&r.memory_id)
        });
        if occupied {
            return Err(result(Outcome::Replan, "slot_occupied"));
        }
    }
    let auth = authority::authority(intent.write_reason, &intent.source.source_type);
    for op in &intent.ops {
        if matches!(op, Op::Amend(_) | Op::Close(_)) {
            for t in targets(op) {
                if find(acct, &t).expect("checked above").authority > auth {
                    return Err(result(Outcome::Rejected, "authority"));
                }
            }
        }
    }
    let mut out = Vec::new();
    for (i, op) in intent.ops.iter().enumerate() {
        match op {
            Op::Assert(a) => out.push(new_row(
                acct,
                intent,
                (i, a, &[]),
                timestamp,
                seq,
                auth,
                limits,
            )),
            Op::Amend(a) => {
                let new = new_row(
                    acct,
                    intent,
                    (i, &a.replacement, &a.targets),
                    timestamp,
                    seq,
                    auth,
                    limits,
                );
                for t in &a.targets {
                    let mut old = find(acct, t).expect("checked").clone();
                    let end = std::cmp::max(old.valid_from, new.valid_from);
                    old.valid_to = Some(match old.valid_to {
                        Some(v) if v < end => v,
                        _ => end,
                    });
                    old.status = Status::Superseded;
                    old.superseded_by = Some(new.memory_id.clone());
                    bump(&mut old, seq, acct.generation);
                    out.push(old);
                }
                // The replacement comes before the rows it supersedes.
                let at = out.len() - a.targets.len();
                out.insert(at, new);
            }
            Op::Close(c) => {
                let mut old = find(acct, &c.target).expect("checked").clone();
                let end = std::cmp::max(old.valid_from, c.valid_to.unwrap_or(timestamp));
                old.valid_to = Some(match old.valid_to {
                    Some(v) if v < end => v,
                    _ => end,
                });
                old.status = Status::Closed;
                old.closed_reason = Some(c.reason.clone());
                bump(&mut old, seq, acct.generation);
                out.push(old);
            }
            Op::AttachEvidence(e) => {
                let mut old = find(acct, &e.target).expect("checked").clone();
                old.evidence.extend(e.evidence.iter().cloned());
                let quotes: Vec<&String> = old
                    .evidence
                    .iter()
                    .filter_map(|e| e.quote.as_ref())
                    .collect();
                let chars: usize = quotes.iter().map(|q| q.chars().count()).sum();
                if old.evidence.len() > 32 || quotes.len() > 8 || chars > 8000 {
                    return Err(result(Outcome::Rejected, "evidence_limit"));
                }
                bump(&mut old, seq, acct.generation);
                out.push(old);
            }
            Op::Source(src) => {
                // The document's current version: the active row of its kind and record id.
                let current = acct.rows.iter().find(|r| {
                    r.status == Status::Active
                        && r.kind == src.doc.source().row_kind()
                        && r.record
                            .as_ref()
                            .is_some_and(|rec| rec.record_id == src.doc.record_id())
                });
                let supersedes: Vec<String> = current.iter().map(|r| r.memory_id.clone()).collect();
                let a = kledger_processors::sources::as_assert(src, timestamp);
                let mut new = new_row(
                    acct,
                    intent,
                    (i, &a, &supersedes),
                    timestamp,
                    seq,
                    auth,
                    limits,
                );
                let mut doc = Vec::new();
                kledger_schemas::avro::AvroCodec::encode(&Some(src.doc.clone()), &mut doc);
                let key = format!("@{}/{}", new.kind.as_str(), src.doc.record_id());
                new.content_hash = ids::content_hash_with(
                    limits.keying(&intent.account_id),
                    new.kind.as_str(),
                    &new.content,
                    Some(&ids::to_hex(&doc)),
                    None,
                    Some(&key),
                    &new.subject,
                );
                let mut alias_keys: Vec<String> = match (&src.doc, limits.secret()) {
                    (kledger_schemas::SourceDoc::Person(p), Some(secret)) => p
                        .names
                        .iter()
                        .chain(&p.retained_names)
                        .chain(&p.emails)
                        .map(|a| ids::alias_key(secret, &intent.account_id, a))
                        .collect(),
                    _ => Vec::new(),
                };
                alias_keys.sort();
                alias_keys.dedup();
                new.record = Some(kledger_schemas::SourceRecord {
                    record_id: src.doc.record_id().to_owned(),
                    person_ids: src.doc.person_ids().to_vec(),
                    alias_keys,
                    doc: Some(src.doc.clone()),
                });
                let new_id = new.memory_id.clone();
                let new_from = new.valid_from;
                out.push(new);
                if let Some(old) = current {
                    let mut old = old.clone();
                    let end = std::cmp::max(old.valid_from, new_from);
                    old.valid_to = Some(old.valid_to.map_or(end, |v| v.min(end)));
                    old.status = Status::Superseded;
                    old.superseded_by = Some(new_id);
                    bump(&mut old, seq, acct.generation);
                    out.push(old);
                }
            }
            Op::Purge(_) => return Err(result(Outcome::Rejected, "purge_mixed")),
        }
    }
    Ok(out)
}

fn bump(row: &mut Row, seq: i64, generation: i64) {
    row.revision += 1;
    row.commit_seq = seq;
    row.generation = generation;
}

fn new_row(
    acct: &Account,
    intent: &Intent,
    (index, a, supersedes): (usize, &AssertOp, &[String]),
    timestamp: i64,
    seq: i64,
    auth: i32,
    limits: &Limits,
) -> Row {
    let slot = a.slot.as_deref().and_then(slots::canonical);
    let valid_from = a.valid_from.unwrap_or(timestamp);
    Row {
        memory_id: ids::memory_id_with(
            limits.secret(),
            &intent.account_id,
            &intent.action_id,
            index,
            a,
            slot,
            valid_from,
            supersedes,
        ),
        kind: a.kind,
        content: a.content.clone(),
        body: a.body.clone(),
        condition: a.condition.clone(),
        slot: slot.map(str::to_owned),
        subject: a.subject.clone(),
        valid_from,
        valid_to: a.valid_to,
        expires_at: a.expires_at,
        recorded_at: timestamp,
        status: Status::Active,
        superseded_by: None,
        closed_reason: None,
        write_reason: intent.write_reason,
        intent_backed: intent.write_reason != kledger_schemas::WriteReason::LegacyMigration,
        user_asserted: matches!(
            intent.write_reason,
            kledger_schemas::WriteReason::DirectUserStatement
                | kledger_schemas::WriteReason::ExplicitRemember
                | kledger_schemas::WriteReason::Onboarding
        ),
        assertion_class: a.assertion_class,
        confidence: a.confidence,
        curation_weight: a.curation_weight,
        sensitivity: a.sensitivity.clone(),
        visibility: a.visibility,
        acl: a.acl.clone(),
        tags: a.tags.clone(),
        lang: a.lang.clone(),
        evidence: a.evidence.clone(),
        embedding: a.embedding.clone(),
        authority: auth,
        revision: 1,
        content_hash: ids::content_hash_with(
            limits.keying(&intent.account_id),
            a.kind.as_str(),
            &a.content,
            a.body.as_deref(),
            a.condition.as_ref(),
            slot,
            &a.subject,
        ),
        commit_seq: seq,
        action_id: intent.action_id.clone(),
        source: intent.source.clone(),
        extractor: intent.extractor.clone(),
        tenant: intent.tenant.clone(),
        generation: acct.generation,
        sealed: None,
        record: None,
    }
}

/// The tombstones of a purge and the seq of its last commit: rows are cut into commits where
/// the specified split rule cuts them (`split_sizes`), each commit one seq.
fn purge(
    acct: &mut Account,
    intent: &Intent,
    seq: i64,
    limits: &Limits,
) -> Result<(Vec<Row>, i64), ModelResult> {
    let whole = intent
        .ops
        .iter()
        .any(|o| matches!(o, Op::Purge(p) if p.whole_account));
    let generation = acct.generation + i64::from(whole);
    let mut chosen: Vec<String> = Vec::new();
    for op in &intent.ops {
        let Op::Purge(p) = op else { continue };
        if let Some(t) = &p.target {
            if find(acct, t).is_none() {
                return Err(result(Outcome::Rejected, "target_missing"));
            }
            chosen.push(t.clone());
        }
        if let Some(e) = &p.entity_id {
            let mut ids: Vec<String> = acct
                .rows
                .iter()
                .filter(|r| {
                    r.subject.entity_id.as_deref() == Some(e.as_str())
                        || r.record
                            .as_ref()
                            .is_some_and(|rec| rec.person_ids.iter().any(|p| p == e))
                })
                .map(|r| r.memory_id.clone())
                .collect();
            ids.sort();
            chosen.extend(ids);
        }
        if p.whole_account {
            let mut ids: Vec<String> = acct.rows.iter().map(|r| r.memory_id.clone()).collect();
            ids.sort();
            chosen.extend(ids);
        }
    }
    let mut out: Vec<Row> = Vec::new();
    for id in chosen {
        let row = find(acct, &id).expect("chosen from rows");
        if row.status == Status::Tombstoned || out.iter().any(|r| r.memory_id == id) {
            continue;
        }
        let mut row = row.clone();
        row.status = Status::Tombstoned;
        row.content.clear();
        row.body = None;
        row.condition = None;
        row.tags.clear();
        row.embedding = None;
        if let Some(rec) = &mut row.record {
            rec.doc = None;
            rec.alias_keys.clear();
        }
        for e in &mut row.evidence {
            e.locator = Default::default();
            e.quote = None;
            if limits.rules >= kledger_processors::Rules::V3 {
                e.checksum = None;
            }
        }
        if limits.rules >= kledger_processors::Rules::V3 {
            row.closed_reason = None;
            row.sensitivity.labels.clear();
        }
        row.content_hash = ids::content_hash_with(
            limits.keying(&intent.account_id),
            row.kind.as_str(),
            "",
            None,
            None,
            row.slot.as_deref(),
            &row.subject,
        );
        bump(&mut row, seq, generation);
        out.push(row);
    }
    let cuts = split_sizes(
        commit_overhead_bytes(&intent.account_id, &intent.action_id),
        out.iter().map(|r| op_bytes(r, limits)),
        limits,
    );
    let mut at = 0;
    for (i, n) in cuts.iter().enumerate() {
        if over_budget(intent, &out[at..at + n], limits) {
            return Err(result(Outcome::Rejected, "commit_too_large"));
        }
        for row in &mut out[at..at + n] {
            row.commit_seq = seq + i as i64;
        }
        at += n;
    }
    acct.generation = generation;
    Ok((out, seq + cuts.len() as i64 - 1))
}
