//! The account state `decide` reads, as a value, and the keys a runner must load for it.

use std::collections::{BTreeMap, BTreeSet};

use kledger_schemas::limits::OPS_MAX;
use kledger_schemas::{Intent, Op, Row};

use crate::ids::GENESIS_HASH;
use crate::sources::{alias_entity, record_slot};
use crate::validate::{asserted, occupied_slot, planned_targets};
use kledger_schemas::{AssertOp, Kind, SubjectScope};

/// An account's head.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Head {
    /// The last commit_seq (0: no commit yet).
    pub seq: i64,
    /// The last head hash (hex).
    pub hash: String,
    /// The account generation (bumped by whole-account purge).
    pub generation: i64,
    /// The intent offset of the last commit (-1: no commit yet, or a head stored before
    /// kledger kept it). Intents of an account are decided in offset order, so an intent below
    /// it is being read again after a restart (see [`crate::decide`](mod@crate::decide), rule 2).
    pub intent_offset: i64,
}

impl Default for Head {
    fn default() -> Self {
        Self {
            seq: 0,
            hash: GENESIS_HASH.to_owned(),
            generation: 0,
            intent_offset: -1,
        }
    }
}

/// A committed action (permanent idempotency record).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionEntry {
    /// Hex digest of the committed payload.
    pub digest: String,
    /// The commit it produced (of a split purge: the last commit folded so far).
    pub commit_seq: i64,
    /// More commits of the action are due: a purge split into bounded commits was cut off
    /// (a crash) after this one. The same intent read again continues it.
    pub continues: bool,
    /// Whether the action's commits say `rebased` (a continued purge keeps its first
    /// commit's answer, so a crash between parts leaves the same bytes).
    pub rebased: bool,
}

/// What `decide` sees of an account: exactly the parts [`needs`] names, loaded by the runner.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AccountState {
    /// The head.
    pub head: Head,
    /// The idempotency record of the intent's action, if it was committed.
    pub action: Option<ActionEntry>,
    /// Rows by memory id: targets, slot occupants, and the rows a purge selects.
    pub rows: BTreeMap<String, Row>,
    /// Active primary-user slot occupants (canonical slot → memory id) for the slots asserted.
    pub slots: BTreeMap<String, String>,
    /// Memory ids by subject entity, for entity purges.
    pub entities: BTreeMap<String, Vec<String>>,
}

/// The state keys `decide` reads for one intent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Needs {
    /// Rows by id (targets, purge targets).
    pub rows: BTreeSet<String>,
    /// Canonical slots whose occupant (and its row) is needed; a source document's
    /// [`crate::sources::record_slot`] for its current version.
    pub slots: BTreeSet<String>,
    /// Entities whose rows are needed (entity purge).
    pub entities: BTreeSet<String>,
    /// Every row of the account (whole-account purge).
    pub all_rows: bool,
}

/// What to load for `intent` decided within `limits`. An intent over the op limit needs
/// nothing: it is rejected by validation before any state is read. Under rules v5 a
/// third-party or relationship subject needs what resolves it to a person: the people
/// document of its id, those holding it as an alias, and the owner's.
pub fn needs(intent: &Intent, limits: &crate::Limits) -> Needs {
    let mut n = Needs::default();
    if intent.ops.len() > OPS_MAX {
        return n;
    }
    if let (true, Some(secret)) = (limits.rules >= crate::Rules::V5, limits.secret()) {
        for (_, a) in asserted(intent) {
            if let Some(e) = resolved_subject(a) {
                n.slots.insert(record_slot(Kind::Person, e));
                n.entities.insert(alias_entity(&crate::ids::alias_key(
                    secret,
                    &intent.account_id,
                    e,
                )));
                n.slots
                    .insert(record_slot(Kind::Person, &intent.tenant.owner_id));
            }
        }
    }
    n.rows.extend(planned_targets(intent).map(str::to_owned));
    for (_, a) in asserted(intent) {
        if let Some(slot) = occupied_slot(a) {
            n.slots.insert(slot.to_owned());
        }
    }
    for op in &intent.ops {
        if let Op::Source(s) = op {
            n.slots.insert(crate::sources::op_slot(s));
        }
        if let Op::Purge(p) = op {
            if let Some(t) = &p.target {
                n.rows.insert(t.clone());
            }
            if let Some(e) = &p.entity_id {
                n.entities.insert(e.clone());
            }
            n.all_rows |= p.whole_account;
        }
    }
    n
}

/// The entity of `a`'s subject that rules v5 resolve to a person: a third-party or
/// relationship subject's.
pub fn resolved_subject(a: &AssertOp) -> Option<&str> {
    matches!(
        a.subject.scope,
        SubjectScope::ThirdParty | SubjectScope::UserRelationship
    )
    .then_some(a.subject.entity_id.as_deref())
    .flatten()
}
