//! The apply decision: `decide(account_state, intent, record) -> Decision`.
//!
//! Pure: no I/O, no clock, no randomness, no hash-map order. The rules run in the contract's
//! order — validate, idempotency, head, targets and slots, authority, commit — and the first
//! that fails decides the outcome.

use std::collections::BTreeSet;

use kledger_schemas::avro::AvroCodec;
use kledger_schemas::limits::RECORD_BYTES_DEFAULT;
use kledger_schemas::{
    AssertOp, Change, Commit, CommitOp, Evidence, Extractor, HeadPolicy, Intent, Locator, Op,
    Outcome, Receipt, Row, Source, SourceOp, StaleTarget, Status, Tenant, WriteReason,
};

use crate::account::AccountState;
use crate::authority;
use crate::codes::{Code, Reason};
use crate::ids::{self, Keying, LedgerSecret};
use crate::seal;
use crate::slots;
use crate::sources;
use crate::validate::{self, Rules, asserted, occupied_slot, planned_targets};

/// Where an intent record sits on its topic, and its record timestamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordMeta {
    /// The Kafka record timestamp (ms): the commit's `recorded_at`.
    pub timestamp: i64,
    /// The record's partition.
    pub partition: i32,
    /// The record's offset.
    pub offset: i64,
}

/// The bounds a decision keeps: part of the decision, like the rules (replay verify must run
/// with the same values as the processor it checks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// The record budget: the largest record (value bytes, single-object framing) kledger
    /// writes. A commit over it is `rejected` (`commit_too_large`); a purge is split into
    /// commits that each fit.
    pub record_bytes_max: usize,
    /// The version of the rules.
    pub rules: Rules,
    /// The ledger's secret (rules v4 key ids and hashes with it).
    pub secret: LedgerSecret,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            record_bytes_max: RECORD_BYTES_DEFAULT,
            rules: Rules::default(),
            secret: LedgerSecret::default(),
        }
    }
}

impl Limits {
    /// Whether rows are sealed and ids keyed (rules v4 and later).
    pub fn keyed(&self) -> bool {
        self.rules >= Rules::V4
    }

    /// The secret ids and hashes are keyed with, under rules v4 and later.
    pub fn secret(&self) -> Option<&LedgerSecret> {
        self.keyed().then_some(&self.secret)
    }

    /// How content hashes of `account_id` are made.
    pub fn keying<'a>(&'a self, account_id: &'a str) -> Keying<'a> {
        match self.secret() {
            Some(secret) => Keying::Keyed { secret, account_id },
            None => Keying::Plain,
        }
    }
}

/// The result of `decide`: a receipt, and the commits when the outcome is `committed`.
#[derive(Debug, Clone, PartialEq)]
pub struct Decision {
    /// The receipt (every outcome).
    pub receipt: Receipt,
    /// The commits (outcome `committed` only), in seq order: one, or several for a purge too
    /// large for one record (all but the last say `continues`).
    pub commits: Vec<Commit>,
    /// Each commit as a single-object encoded record (the outbox payload); `records[i]` is
    /// `commits[i]`. Empty for keyed commits (rules v4) until the runner has encrypted their
    /// rows under their data keys ([`crate::seal`]) and encoded them ([`ids::record`]).
    pub records: Vec<Vec<u8>>,
    /// The data keys made for this decision's new rows (memory id, key), filled by the runner
    /// that encrypts a keyed decision: it writes them to the keys topic before the commits.
    pub new_keys: Vec<(String, seal::DataKey)>,
}

impl Decision {
    /// The outcome.
    pub fn outcome(&self) -> Outcome {
        self.receipt.outcome
    }

    /// The commit, or the last of several.
    pub fn commit(&self) -> Option<&Commit> {
        self.commits.last()
    }

    /// The commit, or the last of several, by value.
    pub fn into_commit(mut self) -> Option<Commit> {
        self.commits.pop()
    }

    fn answer(receipt: Receipt) -> Self {
        Self {
            receipt,
            commits: Vec::new(),
            records: Vec::new(),
            new_keys: Vec::new(),
        }
    }
}

/// A receipt for an intent that is not committed.
pub fn receipt(
    intent_action: &str,
    account_id: &str,
    state: &AccountState,
    meta: &RecordMeta,
    outcome: Outcome,
    reason: Option<Reason>,
) -> Receipt {
    let ids = Ids {
        account_id,
        action_id: intent_action,
    };
    let head = (state.head.seq, state.head.hash.clone());
    receipt_at(ids, head, meta, outcome, reason)
}

/// A receipt that answers with head `(seq, hash)`.
fn receipt_at(
    ids: Ids<'_>,
    (head_seq, head_hash): (i64, String),
    meta: &RecordMeta,
    outcome: Outcome,
    reason: Option<Reason>,
) -> Receipt {
    Receipt {
        action_id: ids.action_id.to_owned(),
        account_id: ids.account_id.to_owned(),
        outcome,
        commit_seq: None,
        rebased: false,
        head_seq,
        head_hash,
        code: reason.as_ref().map(|r| r.code.as_str().to_owned()),
        message: reason.map(|r| r.message),
        stale_targets: Vec::new(),
        memory_ids: Vec::new(),
        intent_partition: meta.partition,
        intent_offset: meta.offset,
        recorded_at: meta.timestamp,
    }
}

fn not_committed(
    intent: &Intent,
    state: &AccountState,
    meta: &RecordMeta,
    outcome: Outcome,
    reason: Reason,
) -> Decision {
    let r = receipt(
        &intent.action_id,
        &intent.account_id,
        state,
        meta,
        outcome,
        Some(reason),
    );
    Decision::answer(r)
}

fn stale(memory_id: &str, row: Option<&Row>) -> StaleTarget {
    StaleTarget {
        memory_id: memory_id.to_owned(),
        revision: row.map(|r| r.revision),
        content_hash: row.map(|r| r.content_hash.clone()),
        status: row.map(|r| r.status),
    }
}

/// Rules 1–6 for one intent against its account's state, within `limits`.
pub fn decide(
    state: &AccountState,
    intent: &Intent,
    meta: &RecordMeta,
    limits: &Limits,
) -> Decision {
    decide_owned(state, intent.clone(), meta, limits)
}

/// [`decide`] on an intent the caller owns: the commit's rows take its fields without copying.
///
/// Long on purpose: rules 1 to 6 in the contract's order, read top to bottom; the first that
/// fails returns, and each rule is a call or a few lines.
pub fn decide_owned(
    state: &AccountState,
    mut owned: Intent,
    meta: &RecordMeta,
    limits: &Limits,
) -> Decision {
    let intent = &owned;
    // Rule 1: validate.
    if let Err(reason) = validate::validate(intent, meta.timestamp, limits.rules) {
        return not_committed(intent, state, meta, Outcome::Rejected, reason);
    }
    // Rule 2: idempotency.
    let digest = ids::intent_digest_with(limits.secret(), intent);
    if let Some(entry) = &state.action {
        if entry.digest == digest && entry.continues {
            // A purge split into several commits was cut off after some of them (a crash):
            // the same intent, read again, commits the rest, byte for byte as it would have.
            return purge(state, intent, meta, digest, Some(entry.rebased), limits);
        }
        if entry.digest == digest {
            let mut r = receipt(
                &intent.action_id,
                &intent.account_id,
                state,
                meta,
                Outcome::Duplicate,
                None,
            );
            r.commit_seq = Some(entry.commit_seq);
            return Decision::answer(r);
        }
        let reason = Reason::new(
            Code::ActionReused,
            format!(
                "action was committed as seq {} with another payload",
                entry.commit_seq
            ),
        );
        return not_committed(intent, state, meta, Outcome::Rejected, reason);
    }
    // Rule 2, continued: an intent below the offset of the account's last commit is read
    // again after a restart (intents of an account are decided in offset order). Had it been
    // committed, its commit would precede that one in the outbox and the action would be
    // known; so it was not, and re-deciding it against a head that holds later writes must not
    // commit it now: the ledger would depend on where a crash fell.
    // (An account without commits, or a head stored before offsets were kept, has offset -1.)
    if meta.offset < state.head.intent_offset {
        let reason = Reason::new(
            Code::Overtaken,
            format!(
                "read again after the commit of a later intent (offset {}); not committed",
                state.head.intent_offset
            ),
        );
        return not_committed(intent, state, meta, Outcome::Replan, reason);
    }
    let head_moved = intent.planned_against.head_seq != state.head.seq;
    // Purge outranks everything: no head, target-revision or authority check.
    if intent.ops.iter().all(|op| matches!(op, Op::Purge(_))) {
        return purge(state, intent, meta, digest, Some(head_moved), limits);
    }
    // Rule 1 against the account's people documents (rules v5): one entity per person.
    if let Err(reason) = resolve_subjects(state, &mut owned, limits) {
        return not_committed(&owned, state, meta, Outcome::Rejected, reason);
    }
    let intent = &owned;
    // Rule 3: head, with target revisions (a stale target never blind-writes).
    let mut stale_targets = Vec::new();
    for id in planned_targets(intent) {
        let Some(row) = state.rows.get(id) else {
            let reason = Reason::new(Code::TargetMissing, format!("target {id} does not exist"));
            return not_committed(intent, state, meta, Outcome::Rejected, reason);
        };
        let planned = intent
            .planned_against
            .targets
            .iter()
            .find(|t| t.memory_id == id);
        let unchanged = planned
            .is_some_and(|p| p.revision == row.revision && p.content_hash == row.content_hash);
        if row.status != Status::Active || !unchanged {
            stale_targets.push(stale(id, Some(row)));
        }
    }
    if !stale_targets.is_empty() {
        let mut d = not_committed(
            intent,
            state,
            meta,
            Outcome::Replan,
            Reason::new(Code::StaleTarget, "targets changed since planning"),
        );
        d.receipt.stale_targets = stale_targets;
        return d;
    }
    if head_moved && intent.planned_against.policy == HeadPolicy::Strict {
        let reason = Reason::new(
            Code::HeadMoved,
            format!(
                "planned against head {}, head is {}",
                intent.planned_against.head_seq, state.head.seq
            ),
        );
        return not_committed(intent, state, meta, Outcome::Replan, reason);
    }
    // Rule 4: source rows change by newer documents only; amend keeps kind and subject; at
    // most one active value per slot.
    if let Some(id) =
        planned_targets(intent).find(|id| state.rows.get(*id).is_some_and(sources::is_source))
    {
        let reason = Reason::new(
            Code::SourceKindReserved,
            format!("{id} is a source row: a newer document replaces it"),
        );
        return not_committed(intent, state, meta, Outcome::Rejected, reason);
    }
    if let Some(reason) = amend_mismatch(state, intent) {
        return not_committed(intent, state, meta, Outcome::Rejected, reason);
    }
    let targeted: BTreeSet<&str> = planned_targets(intent).collect();
    for (_, a) in asserted(intent) {
        let Some(slot) = occupied_slot(a) else {
            continue;
        };
        if let Some(occupant) = state.slots.get(slot)
            && !targeted.contains(occupant.as_str())
        {
            let mut d = not_committed(
                intent,
                state,
                meta,
                Outcome::Replan,
                Reason::new(Code::SlotOccupied, format!("slot {slot} holds {occupant}")),
            );
            d.receipt.stale_targets = vec![stale(occupant, state.rows.get(occupant))];
            return d;
        }
    }
    // Rule 5: authority.
    let authority = authority::authority(intent.write_reason, &intent.source.source_type);
    for op in &intent.ops {
        let ids: &[String] = match op {
            Op::Amend(a) => &a.targets,
            Op::Close(c) => std::slice::from_ref(&c.target),
            _ => &[],
        };
        for id in ids {
            if let Some(row) = state.rows.get(id).filter(|r| r.authority > authority) {
                let reason = Reason::new(
                    Code::Authority,
                    format!(
                        "{id} has authority {} above this write's {authority}",
                        row.authority
                    ),
                );
                return not_committed(intent, state, meta, Outcome::Rejected, reason);
            }
        }
    }
    // Rule 6: commit. The rows take the intent's fields: the last new row its provenance.
    let Intent {
        action_id,
        account_id,
        tenant,
        source,
        extractor,
        write_reason,
        ops,
        ..
    } = owned;
    let ids = Ids {
        account_id: &account_id,
        action_id: &action_id,
    };
    let creator = Creator {
        ids,
        secret: limits.secret(),
        write_reason,
        authority,
        meta,
        stamp: Stamp {
            seq: state.head.seq + 1,
            generation: state.head.generation,
        },
        left: ops
            .iter()
            .filter(|op| matches!(op, Op::Assert(_) | Op::Amend(_) | Op::Source(_)))
            .count(),
        provenance: Some((tenant, source, extractor)),
    };
    let sealed = build_commit(state, creator, ops).and_then(|ops| {
        let header = Header {
            ids,
            meta,
            digest,
            rebased: head_moved,
            generation: state.head.generation,
        };
        seal_parts(state, header, vec![ops], limits)
    });
    match sealed {
        Ok(d) => d,
        Err(reason) => Decision::answer(receipt(
            &action_id,
            &account_id,
            state,
            meta,
            Outcome::Rejected,
            Some(reason),
        )),
    }
}

/// Rules v5: each third-party or relationship subject of `intent` resolved to a person
/// ([`sources::resolve`]): kept, rewritten to the person id its alias names, or refused.
fn resolve_subjects(
    state: &AccountState,
    intent: &mut Intent,
    limits: &Limits,
) -> Result<(), Reason> {
    let Some(secret) = limits.secret().filter(|_| limits.rules >= Rules::V5) else {
        return Ok(());
    };
    let Intent {
        account_id,
        tenant,
        ops,
        ..
    } = intent;
    for op in ops.iter_mut() {
        let a = match op {
            Op::Assert(a) => a,
            Op::Amend(a) => &mut a.replacement,
            _ => continue,
        };
        let Some(entity) = crate::account::resolved_subject(a) else {
            continue;
        };
        let key = ids::alias_key(secret, account_id, entity);
        let reason = match sources::resolve(state, entity, &tenant.owner_id, &key) {
            sources::Named::Kept => continue,
            sources::Named::Person(id) => {
                a.subject.entity_id = Some(id);
                continue;
            }
            sources::Named::Owner => Reason::new(
                Code::AliasIsOwner,
                "the subject names the owner by an alias of the owner's people document",
            ),
            sources::Named::Ambiguous => Reason::new(
                Code::AliasAmbiguous,
                "the subject's alias is held by several people documents: name the person by id",
            ),
            sources::Named::Unknown => Reason::new(
                Code::UnknownPerson,
                "the subject names a person by a name or email no people document holds: name the person by id",
            ),
        };
        return Err(reason);
    }
    Ok(())
}

/// The identifiers a commit and its receipt repeat.
#[derive(Debug, Clone, Copy)]
struct Ids<'a> {
    account_id: &'a str,
    action_id: &'a str,
}

fn amend_mismatch(state: &AccountState, intent: &Intent) -> Option<Reason> {
    for op in &intent.ops {
        let Op::Amend(a) = op else { continue };
        let r = &a.replacement;
        for t in &a.targets {
            let row = state.rows.get(t)?;
            if row.kind != r.kind
                || row.subject.scope != r.subject.scope
                || row.subject.entity_id != r.subject.entity_id
            {
                return Some(Reason::new(
                    Code::AmendMismatch,
                    format!("amend of {t} changes kind, subject scope or entity"),
                ));
            }
        }
    }
    None
}

/// Fields shared by every row a commit touches.
struct Stamp {
    seq: i64,
    generation: i64,
}

impl Stamp {
    fn touch(&self, row: &mut Row) {
        row.revision += 1;
        row.commit_seq = self.seq;
        row.generation = self.generation;
    }
}

/// Makes the new rows of a commit.
struct Creator<'a> {
    ids: Ids<'a>,
    /// The ledger's secret under rules v4.
    secret: Option<&'a LedgerSecret>,
    write_reason: WriteReason,
    authority: i32,
    meta: &'a RecordMeta,
    stamp: Stamp,
    /// New rows still to make; the last one takes `provenance` instead of a copy.
    left: usize,
    provenance: Option<(Tenant, Source, Extractor)>,
}

impl Creator<'_> {
    fn provenance(&mut self) -> (Tenant, Source, Extractor) {
        self.left = self.left.saturating_sub(1);
        match (&self.provenance, self.left) {
            (Some(p), 1..) => p.clone(),
            _ => self
                .provenance
                .take()
                .expect("provenance is taken by the last new row only"),
        }
    }

    fn created(&mut self, index: usize, a: AssertOp, supersedes: &[String]) -> Row {
        let ids = self.ids;
        let slot = a.slot.as_deref().and_then(slots::canonical);
        let valid_from = a.valid_from.unwrap_or(self.meta.timestamp);
        let memory_id = ids::memory_id_with(
            self.secret,
            ids.account_id,
            ids.action_id,
            index,
            &a,
            slot,
            valid_from,
            supersedes,
        );
        let keying = match self.secret {
            Some(secret) => Keying::Keyed {
                secret,
                account_id: ids.account_id,
            },
            None => Keying::Plain,
        };
        let content_hash = ids::content_hash_with(
            keying,
            a.kind.as_str(),
            &a.content,
            a.body.as_deref(),
            a.condition.as_ref(),
            slot,
            &a.subject,
        );
        let (tenant, source, extractor) = self.provenance();
        let reason = self.write_reason;
        Row {
            memory_id,
            kind: a.kind,
            content: a.content,
            body: a.body,
            condition: a.condition,
            slot: slot.map(str::to_owned),
            subject: a.subject,
            valid_from,
            valid_to: a.valid_to,
            expires_at: a.expires_at,
            recorded_at: self.meta.timestamp,
            status: Status::Active,
            superseded_by: None,
            closed_reason: None,
            write_reason: reason,
            intent_backed: authority::intent_backed(reason),
            user_asserted: authority::user_asserted(reason),
            assertion_class: a.assertion_class,
            confidence: a.confidence,
            curation_weight: a.curation_weight,
            sensitivity: a.sensitivity,
            visibility: a.visibility,
            acl: a.acl,
            tags: a.tags,
            lang: a.lang,
            evidence: a.evidence,
            embedding: a.embedding,
            authority: self.authority,
            revision: 1,
            content_hash,
            commit_seq: self.stamp.seq,
            action_id: ids.action_id.to_owned(),
            source,
            extractor,
            tenant,
            generation: self.stamp.generation,
            sealed: None,
            record: None,
        }
    }

    /// The row of a `source` op: made as its assert's, carrying the document, with a content
    /// hash over the document (so any change of it is a change of the row).
    fn source(&mut self, index: usize, op: SourceOp, supersedes: &[String]) -> Row {
        let a = sources::as_assert(&op, self.meta.timestamp);
        let mut row = self.created(index, a, supersedes);
        let record = sources::record_of(op, self.secret, self.ids.account_id);
        let doc = ids::with_buffer(|buf| {
            record.doc.encode(buf);
            ids::to_hex(buf)
        });
        let keying = match self.secret {
            Some(secret) => Keying::Keyed {
                secret,
                account_id: self.ids.account_id,
            },
            None => Keying::Plain,
        };
        let slot = sources::record_slot(row.kind, &record.record_id);
        row.content_hash = ids::content_hash_with(
            keying,
            row.kind.as_str(),
            &row.content,
            Some(&doc),
            None,
            Some(&slot),
            &row.subject,
        );
        row.record = Some(record);
        row
    }
}

/// End of effective time for a row closed or superseded at `end`: never before its start,
/// never after an end it already had.
fn closing_valid_to(row: &Row, end: i64) -> Option<i64> {
    let end = end.max(row.valid_from);
    Some(row.valid_to.map_or(end, |t| t.min(end)))
}

fn build_commit(
    state: &AccountState,
    mut creator: Creator<'_>,
    ops_in: Vec<Op>,
) -> Result<Vec<CommitOp>, Reason> {
    let meta = creator.meta;
    let target =
        |id: &str| -> Result<Row, Reason> {
            state.rows.get(id).cloned().ok_or_else(|| {
                Reason::new(Code::TargetMissing, format!("target {id} does not exist"))
            })
        };
    let mut ops = Vec::with_capacity(ops_in.len() + 1);
    for (index, op) in ops_in.into_iter().enumerate() {
        match op {
            Op::Assert(a) => {
                ops.push(CommitOp {
                    change: Change::Created,
                    row: creator.created(index, a, &[]),
                });
            }
            Op::Amend(a) => {
                let new = creator.created(index, a.replacement, &a.targets);
                let (new_id, new_from) = (new.memory_id.clone(), new.valid_from);
                ops.push(CommitOp {
                    change: Change::Created,
                    row: new,
                });
                for id in &a.targets {
                    let mut row = target(id)?;
                    row.status = Status::Superseded;
                    row.superseded_by = Some(new_id.clone());
                    row.valid_to = closing_valid_to(&row, new_from);
                    creator.stamp.touch(&mut row);
                    ops.push(CommitOp {
                        change: Change::Superseded,
                        row,
                    });
                }
            }
            Op::Close(c) => {
                let mut row = target(&c.target)?;
                row.status = Status::Closed;
                row.valid_to = closing_valid_to(&row, c.valid_to.unwrap_or(meta.timestamp));
                row.closed_reason = Some(c.reason);
                creator.stamp.touch(&mut row);
                ops.push(CommitOp {
                    change: Change::Closed,
                    row,
                });
            }
            Op::AttachEvidence(e) => {
                let mut row = target(&e.target)?;
                row.evidence.extend(e.evidence.iter().cloned());
                validate::evidence(&row.evidence)?;
                creator.stamp.touch(&mut row);
                ops.push(CommitOp {
                    change: Change::EvidenceAttached,
                    row,
                });
            }
            Op::Source(src) => {
                let previous = state.slots.get(&sources::op_slot(&src)).cloned();
                let supersedes: Vec<String> = previous.iter().cloned().collect();
                let new = creator.source(index, src, &supersedes);
                let (new_id, new_from) = (new.memory_id.clone(), new.valid_from);
                ops.push(CommitOp {
                    change: Change::Created,
                    row: new,
                });
                if let Some(id) = previous {
                    let mut row = target(&id)?;
                    row.status = Status::Superseded;
                    row.superseded_by = Some(new_id);
                    row.valid_to = closing_valid_to(&row, new_from);
                    creator.stamp.touch(&mut row);
                    ops.push(CommitOp {
                        change: Change::Superseded,
                        row,
                    });
                }
            }
            // Validation keeps purges out of mixed intents; reject rather than panic if one slips.
            Op::Purge(_) => {
                return Err(Reason::new(Code::PurgeMixed, "purge mixed with other ops"));
            }
        }
    }
    Ok(ops)
}

/// Erases a row's content, keeping a tombstone with lineage ids only; under rules v3 also
/// its close reason, sensitivity labels and evidence checksums. Under rules v4 the row's
/// `sealed` names the data key the purge destroys (the row's own; its ciphertext goes).
pub fn tombstone(mut row: Row, account_id: &str, limits: &Limits) -> Row {
    let rules = limits.rules;
    row.status = Status::Tombstoned;
    row.content = String::new();
    row.body = None;
    row.condition = None;
    row.tags.clear();
    row.embedding = None;
    row.evidence = row
        .evidence
        .into_iter()
        .map(|e| Evidence {
            source_type: e.source_type,
            source_id: e.source_id,
            source_version: e.source_version,
            locator: Locator::default(),
            quote: None,
            // Rules v3: a checksum digests the text (an episodic message's is its SHA-256).
            checksum: if rules >= Rules::V3 { None } else { e.checksum },
        })
        .collect();
    if rules >= Rules::V3 {
        row.closed_reason = None;
        row.sensitivity.labels.clear();
    }
    row.content_hash = ids::content_hash_with(
        limits.keying(account_id),
        row.kind.as_str(),
        "",
        None,
        None,
        row.slot.as_deref(),
        &row.subject,
    );
    if let Some(s) = &mut row.sealed {
        s.ciphertext = Default::default();
    }
    // A source row keeps its ids (record id, person ids), as a row keeps its subject.
    if let Some(rec) = &mut row.record {
        rec.doc = None;
        rec.alias_keys.clear();
    }
    row
}

/// Bytes a commit of `account_id`'s action `action_id` takes besides its ops, at most:
/// framing, ids, the three hashes, the longs at their widest varints, the ops array's count
/// and end.
pub fn commit_overhead_bytes(account_id: &str, action_id: &str) -> usize {
    const LONGS: usize = 5; // commit_seq, recorded_at, intent_offset, generation, block count
    kledger_schemas::avro::SINGLE_OBJECT_HEADER
        + 2 * 10 // length prefixes of account and action ids
        + account_id.len()
        + action_id.len()
        + 3 * (64 + 2) // prev_hash, head_hash, intent_digest
        + 5 // intent_partition (an int)
        + LONGS * 10
        + 4 // rebased, continues, keyed, the array's end
}

/// Bytes one row change takes in a commit at most, whatever commit it lands in: the row's
/// encoding (sealed under `limits`' rules v4: [`seal::wire_bytes`]) less its `commit_seq`,
/// plus the widest varint a seq can take, plus the op's change tag. Only seq-independent sizes
/// decide where a split purge cuts, so a purge continued after a crash cuts where the
/// uninterrupted one would have.
pub fn op_bytes(row: &Row, limits: &Limits) -> usize {
    let row_len = if limits.keyed() {
        seal::wire_bytes(row)
    } else {
        ids::with_buffer(|b| {
            row.encode(b);
            b.len()
        })
    };
    op_bytes_of(row, row_len)
}

/// [`op_bytes`] of a row whose encoding (sealed, under rules v4) takes `row_len` bytes.
fn op_bytes_of(row: &Row, row_len: usize) -> usize {
    row_len - kledger_schemas::avro::long_len(row.commit_seq) + 10 + 1
}

/// Where a split purge cuts: the number of row changes in each commit, for changes of
/// `sizes` bytes (from [`op_bytes`]) in order. A commit takes changes while they fit in the
/// record budget beside [`commit_overhead_bytes`], and at least one; no changes make one empty
/// commit.
pub fn split_sizes(
    overhead_bytes: usize,
    sizes: impl IntoIterator<Item = usize>,
    limits: &Limits,
) -> Vec<usize> {
    let room = limits.record_bytes_max.saturating_sub(overhead_bytes);
    let mut parts = vec![0usize];
    let mut used = 0usize;
    for n in sizes {
        let last = parts.last_mut().expect("parts start with one");
        if *last > 0 && used + n > room {
            parts.push(0);
            used = 0;
        }
        used += n;
        *parts.last_mut().expect("just pushed") += 1;
    }
    parts
}

/// Privacy deletion. `rebased` is the head check's answer for a new purge, or the recorded one
/// for a purge continued after a crash between its commits (`state.action` then names it).
///
/// The tombstones go into as many commits as the record budget needs, cut by size in memory
/// id order; every commit but the last says `continues`, and only the last records the action.
fn purge(
    state: &AccountState,
    intent: &Intent,
    meta: &RecordMeta,
    digest: String,
    rebased: Option<bool>,
    limits: &Limits,
) -> Decision {
    let continuing = state.action.as_ref().is_some_and(|a| a.continues);
    let whole = intent
        .ops
        .iter()
        .any(|op| matches!(op, Op::Purge(p) if p.whole_account));
    // A continued whole-account purge already bumped the generation with its first commit.
    let generation = state.head.generation + i64::from(whole && !continuing);
    let stamp = Stamp { seq: 0, generation };
    let mut selected: Vec<&str> = Vec::new();
    for op in &intent.ops {
        let Op::Purge(p) = op else { continue };
        if let Some(t) = &p.target {
            if !state.rows.contains_key(t) {
                let reason = Reason::new(Code::TargetMissing, format!("target {t} does not exist"));
                return not_committed(intent, state, meta, Outcome::Rejected, reason);
            }
            selected.push(t);
        }
        if let Some(e) = &p.entity_id {
            let mut ids: Vec<&str> = state
                .entities
                .get(e)
                .map(|v| v.iter().map(String::as_str).collect())
                .unwrap_or_default();
            ids.sort_unstable();
            selected.extend(ids);
        }
        if p.whole_account {
            selected.extend(state.rows.keys().map(String::as_str));
        }
    }
    let ids = Ids {
        account_id: &intent.account_id,
        action_id: &intent.action_id,
    };
    let mut seen = BTreeSet::new();
    let mut ops = Vec::new();
    for id in selected {
        let Some(row) = state.rows.get(id) else {
            continue;
        };
        if row.status == Status::Tombstoned || !seen.insert(id) {
            continue;
        }
        let mut row = tombstone(row.clone(), ids.account_id, limits);
        stamp.touch(&mut row);
        ops.push(CommitOp {
            change: Change::Tombstoned,
            row,
        });
    }
    let cuts = split_sizes(
        commit_overhead_bytes(ids.account_id, ids.action_id),
        ops.iter().map(|o| op_bytes(&o.row, limits)),
        limits,
    );
    let mut ops = ops.into_iter();
    let parts: Vec<Vec<CommitOp>> = cuts
        .into_iter()
        .map(|n| ops.by_ref().take(n).collect())
        .collect();
    let header = Header {
        ids,
        meta,
        digest,
        rebased: rebased.unwrap_or(false),
        generation,
    };
    seal_parts(state, header, parts, limits)
        .unwrap_or_else(|reason| not_committed(intent, state, meta, Outcome::Rejected, reason))
}

/// What every commit of one decision repeats.
struct Header<'a> {
    ids: Ids<'a>,
    meta: &'a RecordMeta,
    digest: String,
    rebased: bool,
    generation: i64,
}

/// Seals `parts` as consecutive commits after the head (rows take each commit's seq) and
/// answers `committed` with the last one; a commit over the record budget answers
/// `commit_too_large` instead. Long on purpose: one pass that sizes, numbers, MACs and chains
/// the commits in order, each step reading what the one before it set.
fn seal_parts(
    state: &AccountState,
    mut h: Header<'_>,
    parts: Vec<Vec<CommitOp>>,
    limits: &Limits,
) -> Result<Decision, Reason> {
    // The budget is held by seq- and position-independent sizes (an upper bound of the
    // encoding), so the answer depends only on the account's history and the intent.
    let overhead = commit_overhead_bytes(h.ids.account_id, h.ids.action_id);
    let within_budget = |bytes: usize| {
        if bytes > limits.record_bytes_max {
            return Err(Reason::new(
                Code::CommitTooLarge,
                format!(
                    "the commit would take up to {bytes} bytes, over the record budget of {} bytes",
                    limits.record_bytes_max
                ),
            ));
        }
        Ok(())
    };
    if !limits.keyed() {
        for ops in &parts {
            within_budget(overhead + ops.iter().map(|o| op_bytes(&o.row, limits)).sum::<usize>())?;
        }
    }
    let last = parts.len().saturating_sub(1);
    let mut commits = Vec::with_capacity(parts.len());
    let mut records = Vec::with_capacity(parts.len());
    let mut prev_hash = state.head.hash.clone();
    for (i, mut ops) in parts.into_iter().enumerate() {
        let seq = state.head.seq + 1 + i as i64;
        let mut content_lens = Vec::with_capacity(ops.len());
        for op in &mut ops {
            op.row.commit_seq = seq;
            if let Some(secret) = limits.secret() {
                // The head hash covers the content's MAC; the runner encrypts under the key
                // the row already has, or a new one (an empty id).
                let key_id = op.row.sealed.take().map(|s| s.key_id);
                content_lens.push(seal::mark(
                    secret,
                    h.ids.account_id,
                    &mut op.row,
                    key_id.unwrap_or_default(),
                ));
            }
        }
        let mut commit = Commit {
            account_id: h.ids.account_id.to_owned(),
            commit_seq: seq,
            prev_hash: std::mem::take(&mut prev_hash),
            head_hash: String::new(),
            action_id: h.ids.action_id.to_owned(),
            intent_digest: if i < last {
                h.digest.clone()
            } else {
                std::mem::take(&mut h.digest)
            },
            recorded_at: h.meta.timestamp,
            intent_partition: h.meta.partition,
            intent_offset: h.meta.offset,
            generation: h.generation,
            rebased: h.rebased,
            ops,
            continues: i < last,
            keyed: limits.keyed(),
        };
        if commit.keyed {
            // Encrypted and encoded by the runner, with data keys. One encoding of the hashed
            // form gives the head hash and the rows' sizes (the budget is checked before the
            // decision is returned, so a commit over it is never handed out).
            let mut hashed_lens = Vec::with_capacity(commit.ops.len());
            ids::set_head_hash_measured(&mut commit, |n| hashed_lens.push(n));
            let mut bytes = overhead;
            for ((op, hashed), content) in commit.ops.iter().zip(hashed_lens).zip(&content_lens) {
                let size = op_bytes_of(&op.row, seal::wire_bytes_from(&op.row, hashed, *content));
                debug_assert_eq!(size, op_bytes(&op.row, limits));
                bytes += size;
            }
            within_budget(bytes)?;
        } else {
            let record = ids::seal(&mut commit);
            debug_assert!(
                record.len() <= limits.record_bytes_max,
                "the size bound holds the encoding"
            );
            records.push(record);
        }
        if i < last {
            prev_hash = commit.head_hash.clone();
        }
        commits.push(commit);
    }
    let final_commit = commits.last().expect("at least one part");
    let head = (final_commit.commit_seq, final_commit.head_hash.clone());
    let mut r = receipt_at(h.ids, head, h.meta, Outcome::Committed, None);
    r.commit_seq = Some(final_commit.commit_seq);
    r.rebased = h.rebased;
    r.memory_ids = commits
        .iter()
        .flat_map(|c| &c.ops)
        .filter(|o| o.change == Change::Created)
        .map(|o| o.row.memory_id.clone())
        .collect();
    Ok(Decision {
        receipt: r,
        commits,
        records,
        new_keys: Vec::new(),
    })
}
