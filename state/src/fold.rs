//! The fold: how one commit changes state. Live apply and restore both use it, so state always
//! equals fold(outbox).

use kledger_processors::sources::alias_entity;
use kledger_processors::{ActionEntry, Head, ids};
use kledger_schemas::avro::{AvroCodec, SchemaLookup, decode};
use kledger_schemas::{Commit, Status};

use crate::StateError;
use crate::keys::{self, Cf};
use crate::progress::{decode_next, encode_next};
use crate::store::{Overlay, StateRead};

/// What folding a commit did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Folded {
    /// The commit advanced the account's head.
    Applied,
    /// The state already had this commit (same seq, same head hash): nothing changed.
    AlreadyApplied,
}

/// Reads an account's head (the empty head when it has none).
pub fn head<R: StateRead + ?Sized>(r: &R, p: i32, account: &str) -> Result<Head, StateError> {
    match r.get(Cf::Heads, &keys::account(p, account)?)? {
        Some(v) => keys::parse_head(&v),
        None => Ok(Head::default()),
    }
}

/// The slot key `row` occupies while active: a primary-user fact's slot, a source row's
/// document key.
fn slot_of(row: &kledger_schemas::Row) -> Option<String> {
    kledger_processors::sources::row_slot(row)
}

/// Folds `commit` (from partition `p`) into the overlay.
///
/// A commit already folded (same seq and head hash) is a no-op; the same seq with another hash,
/// or a `prev_hash` that does not continue the head, is a fork; a seq past head + 1 is a gap.
/// Forks and gaps are errors: the caller stops rather than apply them.
///
/// Long on purpose: every column family a commit touches (chain, head, actions, rows,
/// subjects, slots, positions) is written here, in one place, so state always equals the fold.
pub fn fold<S: StateRead + ?Sized>(
    o: &mut Overlay<'_, S>,
    commit: &Commit,
    p: i32,
) -> Result<Folded, StateError> {
    let mut head = head(o, p, &commit.account_id)?;
    fold_onto(o, commit, p, &mut head)
}

/// [`fold`] onto the account's `head` as the caller read it from the overlay (the applier
/// has it from loading the account), instead of reading it again. When the commit is applied,
/// `head` becomes the account's new head.
pub fn fold_onto<S: StateRead + ?Sized>(
    o: &mut Overlay<'_, S>,
    commit: &Commit,
    p: i32,
    head: &mut Head,
) -> Result<Folded, StateError> {
    let acct = commit.account_id.as_str();
    if commit.commit_seq <= head.seq {
        let have = o.get(Cf::Chain, &keys::chain(p, acct, commit.commit_seq)?)?;
        let have = have.map(|h| ids::to_hex(&h));
        return match have {
            Some(h) if h == commit.head_hash => Ok(Folded::AlreadyApplied),
            Some(h) => Err(StateError::Fork {
                account: acct.to_owned(),
                seq: commit.commit_seq,
                have: h,
                got: commit.head_hash.clone(),
            }),
            None => Err(StateError::Corrupt(format!(
                "{acct}: no chain entry for seq {}",
                commit.commit_seq
            ))),
        };
    }
    if commit.commit_seq != head.seq + 1 {
        return Err(StateError::Gap {
            account: acct.to_owned(),
            head: head.seq,
            seq: commit.commit_seq,
        });
    }
    if commit.prev_hash != head.hash {
        return Err(StateError::Fork {
            account: acct.to_owned(),
            seq: commit.commit_seq,
            have: format!("head {}", head.hash),
            got: format!("prev_hash {}", commit.prev_hash),
        });
    }
    let new_head = Head {
        seq: commit.commit_seq,
        hash: commit.head_hash.clone(),
        generation: commit.generation,
        intent_offset: commit.intent_offset,
    };
    let action = ActionEntry {
        digest: commit.intent_digest.clone(),
        commit_seq: commit.commit_seq,
        continues: commit.continues,
        rebased: commit.rebased,
    };
    let mut writes = Vec::with_capacity(4 + 3 * commit.ops.len());
    writes.push((
        Cf::Heads,
        keys::account(p, acct)?,
        Some(keys::head_value(&new_head)?),
    ));
    writes.push((
        Cf::Chain,
        keys::chain(p, acct, commit.commit_seq)?,
        Some(keys::chain_value(&commit.head_hash)?),
    ));
    writes.push((
        Cf::Actions,
        keys::child(p, acct, commit.action_id.as_bytes())?,
        Some(keys::action_value(&action)?),
    ));
    for op in &commit.ops {
        let row = &op.row;
        let mut v = Vec::with_capacity(512);
        row.encode(&mut v);
        writes.push((
            Cf::Rows,
            keys::child(p, acct, row.memory_id.as_bytes())?,
            Some(v),
        ));
        // A row is found by its subject's entity, and a source row by every person it joins,
        // so an entity's purge reaches them all.
        let joined = row.record.iter().flat_map(|r| r.person_ids.iter());
        for e in row.subject.entity_id.iter().chain(joined) {
            let mut k = keys::subject_prefix(p, acct, e)?;
            k.extend_from_slice(row.memory_id.as_bytes());
            writes.push((Cf::Subjects, k, Some(Vec::new())));
        }
        // A current people document is found by each of its alias keys; the version it
        // replaces (or the document a purge erases) no longer is.
        for (key, current) in alias_entries(o, p, acct, row)? {
            let mut k = keys::subject_prefix(p, acct, &alias_entity(&key))?;
            k.extend_from_slice(row.memory_id.as_bytes());
            writes.push((Cf::Subjects, k, current.then(Vec::new)));
        }
        // A tombstone names the data key its purge destroys (rules v4): gone from state now,
        // and queued for a tombstone on the keys topic; so is every other key state holds
        // for the row (an old owner's second sealing of one decision).
        if row.status == Status::Tombstoned {
            for key_id in row_keys(o, p, acct, row)? {
                let k = keys::child(p, acct, key_id.as_bytes())?;
                writes.push((Cf::Keys, k.clone(), Some(Vec::new())));
                writes.push((Cf::Shred, k, Some(Vec::new())));
            }
        }
    }
    // Slots: vacate first, then occupy, so a replacement in the same commit keeps its slot.
    for op in commit
        .ops
        .iter()
        .filter(|op| op.row.status != Status::Active)
    {
        if let Some(slot) = slot_of(&op.row) {
            let k = keys::child(p, acct, slot.as_bytes())?;
            if o.get(Cf::Slots, &k)?.as_deref() == Some(op.row.memory_id.as_bytes()) {
                writes.push((Cf::Slots, k, None));
            }
        }
    }
    for op in commit
        .ops
        .iter()
        .filter(|op| op.row.status == Status::Active)
    {
        if let Some(slot) = slot_of(&op.row) {
            let k = keys::child(p, acct, slot.as_bytes())?;
            writes.push((Cf::Slots, k, Some(op.row.memory_id.as_bytes().to_vec())));
        }
    }
    let purged = commit
        .ops
        .iter()
        .any(|op| op.row.status == Status::Tombstoned);
    let input_next = next_offset(o, p, keys::META_INPUT_NEXT)?.max(commit.intent_offset + 1);
    writes.push((
        Cf::Meta,
        keys::meta(p, keys::META_INPUT_NEXT),
        Some(encode_next(input_next).to_vec()),
    ));
    let pending = o.pending_mut();
    for (cf, k, v) in writes {
        match v {
            Some(v) => pending.put(cf, k, v),
            None => pending.delete(cf, k),
        }
    }
    if purged {
        // The purged rows' earlier values must not outlive the write in the store's files.
        pending.erase_overwritten(keys::account(p, acct)?);
    }
    *head = new_head;
    Ok(Folded::Applied)
}

/// The alias keys of people document `row` to index (`true`: it is current) or to drop
/// (`false`: the version state holds, which `row` supersedes or tombstones).
fn alias_entries<S: StateRead + ?Sized>(
    o: &Overlay<'_, S>,
    p: i32,
    acct: &str,
    row: &kledger_schemas::Row,
) -> Result<Vec<(String, bool)>, StateError> {
    if row.kind != kledger_schemas::Kind::Person {
        return Ok(Vec::new());
    }
    if row.status == Status::Active {
        let keys = row.record.iter().flat_map(|r| r.alias_keys.iter());
        return Ok(keys.map(|k| (k.clone(), true)).collect());
    }
    let Some(v) = o.get(Cf::Rows, &keys::child(p, acct, row.memory_id.as_bytes())?)? else {
        return Ok(Vec::new());
    };
    let before = kledger_schemas::Row::decode(&mut kledger_schemas::avro::Reader::new(&v))
        .map_err(|e| StateError::Corrupt(format!("row {}: {e}", row.memory_id)))?;
    Ok(before
        .record
        .into_iter()
        .flat_map(|r| r.alias_keys)
        .map(|k| (k, false))
        .collect())
}

/// Restores one outbox record of partition `p` at `offset`: decodes it, checks it belongs to
/// `p` and that its head hash is the hash of its content, folds it, and records the offset.
pub fn restore_record<S: StateRead + ?Sized>(
    o: &mut Overlay<'_, S>,
    p: i32,
    offset: i64,
    bytes: &[u8],
    lookup: &dyn SchemaLookup,
) -> Result<Folded, StateError> {
    let mut commit: Commit = decode(bytes, lookup)
        .map_err(|e| StateError::Corrupt(format!("outbox partition {p} offset {offset}: {e}")))?;
    if commit.intent_partition != p {
        return Err(StateError::Corrupt(format!(
            "outbox partition {p} offset {offset}: commit of intent partition {}",
            commit.intent_partition
        )));
    }
    let computed = ids::head_hash(&mut commit);
    if computed != commit.head_hash {
        return Err(StateError::Fork {
            account: commit.account_id.clone(),
            seq: commit.commit_seq,
            have: format!("computed {computed}"),
            got: format!(
                "recorded {} (outbox partition {p} offset {offset})",
                commit.head_hash
            ),
        });
    }
    let folded = fold(o, &commit, p)?;
    raise_next(o, p, keys::META_OUTBOX_NEXT, offset + 1)?;
    Ok(folded)
}

/// Restores one keys-topic record of partition `p` at `offset`: a data key (the value), a
/// destroyed one (a null value: a tombstone), or another record (the ledger secret's,
/// skipped). A key a purge destroyed stays destroyed whatever record of it comes later.
pub fn restore_key_record<S: StateRead + ?Sized>(
    o: &mut Overlay<'_, S>,
    p: i32,
    offset: i64,
    key: &[u8],
    value: Option<&[u8]>,
) -> Result<(), StateError> {
    if let Some((acct, key_id)) = keys::parse_key_record_key(key) {
        let k = keys::child(p, acct, key_id.as_bytes())?;
        let destroyed = o.get(Cf::Keys, &k)?.is_some_and(|v| v.is_empty());
        match value.filter(|v| !v.is_empty()) {
            Some(v) if !destroyed => {
                // Checked, so a malformed record stops here rather than at first use.
                let (_, memory_id) = keys::parse_key_value(v)?
                    .ok_or_else(|| StateError::Corrupt("empty data key value".into()))?;
                if row_purged(o, p, acct, &memory_id)? {
                    // A key of a row already purged (an old owner's second sealing, written
                    // after the purge): destroyed at once, and queued for its tombstone.
                    o.pending_mut().put(Cf::Keys, k.clone(), Vec::new());
                    o.pending_mut().put(Cf::Shred, k, Vec::new());
                } else {
                    o.pending_mut().put(Cf::Keys, k, v.to_vec());
                }
            }
            Some(_) => {}
            None => o.pending_mut().put(Cf::Keys, k, Vec::new()),
        }
    }
    raise_next(o, p, keys::META_KEYS_NEXT, offset + 1)
}

/// Whether state holds row `memory_id` of `acct` as a tombstone.
fn row_purged<S: StateRead + ?Sized>(
    o: &Overlay<'_, S>,
    p: i32,
    acct: &str,
    memory_id: &str,
) -> Result<bool, StateError> {
    let Some(v) = o.get(Cf::Rows, &keys::child(p, acct, memory_id.as_bytes())?)? else {
        return Ok(false);
    };
    let row = kledger_schemas::Row::decode(&mut kledger_schemas::avro::Reader::new(&v))
        .map_err(|e| StateError::Corrupt(format!("row {memory_id}: {e}")))?;
    Ok(row.status == Status::Tombstoned)
}

/// Keys of one row a purge looks for at most besides the one its tombstone names (a row has
/// one, and one more per old owner that sealed a decision of it again after a rebalance).
pub const ROW_KEYS_MAX: usize = 64;

/// The data keys a purge of `row` destroys: the one its tombstone names, and every key state
/// holds, not yet destroyed, whose id carries the row's tag and whose entry names the row
/// ([`kledger_processors::seal::key_row_tag`]).
fn row_keys<S: StateRead + ?Sized>(
    o: &Overlay<'_, S>,
    p: i32,
    acct: &str,
    row: &kledger_schemas::Row,
) -> Result<Vec<String>, StateError> {
    let mut out = Vec::new();
    if let Some(s) = row.sealed.as_ref().filter(|s| !s.key_id.is_empty()) {
        out.push(s.key_id.clone());
    }
    let tag = kledger_processors::seal::key_row_tag(&row.memory_id);
    let prefix = keys::child(p, acct, tag.as_bytes())?;
    for (k, v) in o.scan(Cf::Keys, &prefix, ROW_KEYS_MAX)? {
        let Some((_, memory_id)) = keys::parse_key_value(&v)? else {
            continue;
        };
        let Some((_, _, key_id)) = keys::split_child(&k) else {
            continue;
        };
        let key_id = String::from_utf8_lossy(key_id).into_owned();
        if memory_id == row.memory_id && !out.contains(&key_id) {
            out.push(key_id);
        }
    }
    Ok(out)
}

/// Partition `p`'s next offset stored in `meta` under `name` ([`keys::META_OUTBOX_NEXT`],
/// [`keys::META_INPUT_NEXT`]); 0 when none is. A store written before the one progress
/// convention holds the last offset under a legacy name ([`keys::META_LEGACY_LAST`]): one
/// more is the next.
pub fn next_offset<R: StateRead + ?Sized>(r: &R, p: i32, name: &str) -> Result<i64, StateError> {
    if let Some(v) = r.get(Cf::Meta, &keys::meta(p, name))? {
        return decode_next(&v);
    }
    for (current, legacy) in keys::META_LEGACY_LAST {
        if current == name
            && let Some(v) = r.get(Cf::Meta, &keys::meta(p, legacy))?
        {
            return Ok(decode_next(&v)? + 1);
        }
    }
    Ok(0)
}

/// Raises partition `p`'s next offset under `name` to `next` in the overlay; a lower `next`
/// leaves it as it is (progress never goes backwards: a batch that re-decided records below
/// it, after a retry, does not undo what state already holds).
pub fn raise_next<S: StateRead + ?Sized>(
    o: &mut Overlay<'_, S>,
    p: i32,
    name: &str,
    next: i64,
) -> Result<(), StateError> {
    let now = next_offset(o, p, name)?;
    if next > now || o.get(Cf::Meta, &keys::meta(p, name))?.is_none() {
        o.pending_mut().put(
            Cf::Meta,
            keys::meta(p, name),
            encode_next(next.max(now)).to_vec(),
        );
    }
    Ok(())
}
