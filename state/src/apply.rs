//! Loading what `decide` needs, and the batch applier shared by the stream processor and
//! `kledger apply`: decide each intent against state plus this batch's pending writes, fold
//! each commit into the batch, hand back one write set to make durable after delivery.

use kledger_processors::{AccountState, Decision, Limits, RecordMeta, decide_owned, needs};
use kledger_schemas::avro::{AvroCodec, Reader};
use kledger_schemas::limits::ACTION_ID_CHARS_MAX;
use kledger_schemas::{Intent, Row};

use crate::StateError;
use crate::fold::{Folded, fold, head};
use crate::keys::{self, ACCOUNT_BYTES_MAX, Cf};
use crate::store::{Overlay, StateRead, WriteSet};

/// Rows an account may hold for a whole-account purge (bounds the read).
pub const ACCOUNT_ROWS_MAX: usize = 1_000_000;
/// Rows one entity may hold for an entity purge.
pub const ENTITY_ROWS_MAX: usize = 100_000;

fn row<R: StateRead + ?Sized>(
    r: &R,
    p: i32,
    acct: &str,
    id: &str,
) -> Result<Option<Row>, StateError> {
    let Some(v) = r.get(Cf::Rows, &keys::child(p, acct, id.as_bytes())?)? else {
        return Ok(None);
    };
    let mut reader = Reader::new(&v);
    let row =
        Row::decode(&mut reader).map_err(|e| StateError::Corrupt(format!("row {id}: {e}")))?;
    Ok(Some(row))
}

/// Loads the account state `decide` reads for `intent` on partition `p`.
pub fn load<R: StateRead + ?Sized>(
    r: &R,
    p: i32,
    intent: &Intent,
) -> Result<AccountState, StateError> {
    let acct = intent.account_id.as_str();
    let mut s = AccountState::default();
    // An over-long account id or action id cannot be in state; validation rejects it.
    if acct.len() > ACCOUNT_BYTES_MAX || intent.action_id.len() > 4 * ACTION_ID_CHARS_MAX {
        return Ok(s);
    }
    s.head = head(r, p, acct)?;
    if s.head.seq == 0 {
        return Ok(s);
    }
    if let Some(v) = r.get(
        Cf::Actions,
        &keys::child(p, acct, intent.action_id.as_bytes())?,
    )? {
        s.action = Some(keys::parse_action(&v)?);
    }
    let n = needs(intent);
    for id in &n.rows {
        if let Some(row) = row(r, p, acct, id)? {
            s.rows.insert(id.clone(), row);
        }
    }
    for slot in &n.slots {
        if let Some(v) = r.get(Cf::Slots, &keys::child(p, acct, slot.as_bytes())?)? {
            let id = String::from_utf8(v).map_err(|_| StateError::Corrupt("slot value".into()))?;
            if let Some(row) = row(r, p, acct, &id)? {
                s.rows.insert(id.clone(), row);
            }
            s.slots.insert(slot.clone(), id);
        }
    }
    for e in &n.entities {
        let prefix = keys::subject_prefix(p, acct, e)?;
        let mut ids = Vec::new();
        for (k, _) in r.scan(Cf::Subjects, &prefix, ENTITY_ROWS_MAX)? {
            let id = String::from_utf8(k[prefix.len()..].to_vec())
                .map_err(|_| StateError::Corrupt("subject key".into()))?;
            if let Some(row) = row(r, p, acct, &id)? {
                s.rows.insert(id.clone(), row);
            }
            ids.push(id);
        }
        s.entities.insert(e.clone(), ids);
    }
    if n.all_rows {
        let prefix = keys::account(p, acct)?;
        for (k, v) in r.scan(Cf::Rows, &prefix, ACCOUNT_ROWS_MAX)? {
            let id = String::from_utf8(k[prefix.len()..].to_vec())
                .map_err(|_| StateError::Corrupt("row key".into()))?;
            let mut reader = Reader::new(&v);
            let row = Row::decode(&mut reader)
                .map_err(|e| StateError::Corrupt(format!("row {id}: {e}")))?;
            s.rows.insert(id, row);
        }
    }
    Ok(s)
}

/// Decides a batch of intents against a store plus the batch's own pending writes.
#[derive(Debug)]
pub struct Applier<'a, S: StateRead + ?Sized> {
    overlay: Overlay<'a, S>,
    limits: Limits,
}

impl<'a, S: StateRead + ?Sized> Applier<'a, S> {
    /// A batch over `base`, deciding within `limits`.
    pub fn new(base: &'a S, limits: Limits) -> Self {
        Self {
            overlay: Overlay::new(base),
            limits,
        }
    }

    /// Decides one intent; a commit is folded into the batch so later intents see it.
    pub fn apply(&mut self, intent: &Intent, meta: &RecordMeta) -> Result<Decision, StateError> {
        self.apply_owned(intent.clone(), meta)
    }

    /// [`Applier::apply`] on an intent the caller owns (no copy of its fields).
    pub fn apply_owned(
        &mut self,
        intent: Intent,
        meta: &RecordMeta,
    ) -> Result<Decision, StateError> {
        let state = load(&self.overlay, meta.partition, &intent)?;
        let decision = decide_owned(&state, intent, meta, &self.limits);
        for commit in &decision.commits {
            match fold(&mut self.overlay, commit, meta.partition)? {
                Folded::Applied => {}
                Folded::AlreadyApplied => {
                    return Err(StateError::Corrupt(format!(
                        "{}: decided commit {} was already in state",
                        commit.account_id, commit.commit_seq
                    )));
                }
            }
        }
        Ok(decision)
    }

    /// Raises partition `p`'s next offset under `name` to `next` in the batch (never lowers
    /// it: [`crate::fold::raise_next`]).
    pub fn raise_next(&mut self, p: i32, name: &str, next: i64) -> Result<(), StateError> {
        crate::fold::raise_next(&mut self.overlay, p, name, next)
    }

    /// The overlay (reads see the batch).
    pub fn overlay(&self) -> &Overlay<'a, S> {
        &self.overlay
    }

    /// The batch's writes.
    pub fn into_writes(self) -> WriteSet {
        self.overlay.into_writes()
    }
}
