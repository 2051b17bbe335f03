//! Key and value layout of the state store.
//!
//! Every key starts with the partition (4 bytes, big-endian) then the account (2-byte length +
//! bytes), so a partition's keys are one range (dropped on revoke) and an account's keys are
//! one prefix within it. Integers are big-endian so key order is numeric order.

use kledger_processors::{ActionEntry, Head, ids};

use crate::StateError;

/// Column families.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Cf {
    /// account → head (seq, generation, hash).
    Heads,
    /// account, memory_id → Avro `Row`.
    Rows,
    /// account, action_id → idempotency entry (digest, commit_seq).
    Actions,
    /// account, canonical slot → memory_id of the active primary-user occupant.
    Slots,
    /// account, entity_id, memory_id → ∅ (rows by subject entity).
    Subjects,
    /// account, commit_seq → head hash (recognises replayed and forked commits).
    Chain,
    /// partition, name → i64 (positions: outbox and input offsets). Not part of the digest.
    Meta,
    /// account, key_id → the data key and the memory id it seals ([`key_value`]), or empty
    /// once a purge destroyed it (rules v4).
    Keys,
    /// account, key_id → ∅: keys destroyed whose tombstones are not yet on the keys topic
    /// (the processor produces them, then deletes these). Not part of the digest.
    Shred,
}

impl Cf {
    /// Every column family, in digest order.
    pub const ALL: [Cf; 9] = [
        Cf::Heads,
        Cf::Rows,
        Cf::Actions,
        Cf::Slots,
        Cf::Subjects,
        Cf::Chain,
        Cf::Meta,
        Cf::Keys,
        Cf::Shred,
    ];

    /// Column families left out of the state digest: positions, work queues, and the data
    /// keys (random: two states that hold the same ledger under other keys digest alike;
    /// [`crate::store::digest_keys`] digests them).
    pub const NOT_DIGESTED: [Cf; 3] = [Cf::Meta, Cf::Shred, Cf::Keys];

    /// The RocksDB column family name.
    pub fn name(self) -> &'static str {
        match self {
            Cf::Heads => "heads",
            Cf::Rows => "rows",
            Cf::Actions => "actions",
            Cf::Slots => "slots",
            Cf::Subjects => "subjects",
            Cf::Chain => "chain",
            Cf::Meta => "meta",
            Cf::Keys => "keys",
            Cf::Shred => "shred",
        }
    }
}

/// Longest account id the store keys (validated ids are far shorter).
pub const ACCOUNT_BYTES_MAX: usize = 1024;

/// The key prefix of one partition.
pub fn partition(p: i32) -> Vec<u8> {
    (p as u32).to_be_bytes().to_vec()
}

/// The key prefix of one account (also the head key).
pub fn account(p: i32, account: &str) -> Result<Vec<u8>, StateError> {
    let a = account.as_bytes();
    if a.len() > ACCOUNT_BYTES_MAX {
        return Err(StateError::Corrupt(format!(
            "account id of {} bytes",
            a.len()
        )));
    }
    let mut k = Vec::with_capacity(6 + a.len() + 40);
    k.extend_from_slice(&(p as u32).to_be_bytes());
    k.extend_from_slice(&(a.len() as u16).to_be_bytes());
    k.extend_from_slice(a);
    Ok(k)
}

/// An account key with a trailing part.
pub fn child(p: i32, acct: &str, tail: &[u8]) -> Result<Vec<u8>, StateError> {
    let mut k = account(p, acct)?;
    k.extend_from_slice(tail);
    Ok(k)
}

/// Splits an account key with a trailing part ([`child`]) into partition, account and tail.
pub fn split_child(k: &[u8]) -> Option<(i32, &str, &[u8])> {
    let p = i32::from_be_bytes(k.get(..4)?.try_into().ok()?);
    let n = usize::from(u16::from_be_bytes(k.get(4..6)?.try_into().ok()?));
    let acct = std::str::from_utf8(k.get(6..6 + n)?).ok()?;
    Some((p, acct, &k[6 + n..]))
}

/// The prefix of an entity's subject keys.
pub fn subject_prefix(p: i32, acct: &str, entity: &str) -> Result<Vec<u8>, StateError> {
    let e = entity.as_bytes();
    let mut k = account(p, acct)?;
    k.extend_from_slice(&(e.len().min(u16::MAX as usize) as u16).to_be_bytes());
    k.extend_from_slice(e);
    Ok(k)
}

/// A chain key.
pub fn chain(p: i32, acct: &str, seq: i64) -> Result<Vec<u8>, StateError> {
    child(p, acct, &(seq as u64).to_be_bytes())
}

/// A meta key.
pub fn meta(p: i32, name: &str) -> Vec<u8> {
    let mut k = partition(p);
    k.extend_from_slice(name.as_bytes());
    k
}

/// Meta name: the next outbox offset to fold, per partition.
pub const META_OUTBOX_NEXT: &str = "outbox_next";
/// Meta name: the next input offset whose effects are not yet in state, per partition. Batches
/// (the processor's, and `kledger apply`'s) raise it past the records they decided; the fold
/// raises it past every commit's intent, so a state restored from an outbox another instance
/// wrote knows where its history ends.
pub const META_INPUT_NEXT: &str = "input_next";
/// Meta name (under partition -1): the ledger's secret of a state no keys topic keeps.
pub const META_LEDGER_SECRET: &str = "ledger_secret";
/// Meta name: the next keys-topic offset to fold, per partition.
pub const META_KEYS_NEXT: &str = "keys_next";

/// Meta names that stores written before the one progress convention hold, with the *last*
/// offset read (the next is one more): read when the current name is absent, never written.
pub const META_LEGACY_LAST: [(&str, &str); 2] = [
    (META_OUTBOX_NEXT, "outbox_offset"),
    (META_INPUT_NEXT, "input_offset"),
];

fn hash_bytes(hex_hash: &str) -> Result<[u8; 32], StateError> {
    ids::from_hex32(hex_hash).ok_or_else(|| StateError::Corrupt(format!("bad hash {hex_hash:?}")))
}

fn i64_at(v: &[u8], at: usize) -> Result<i64, StateError> {
    let b = v
        .get(at..at + 8)
        .ok_or_else(|| StateError::Corrupt("short value".into()))?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Ok(i64::from_be_bytes(a))
}

/// Encodes a head.
pub fn head_value(h: &Head) -> Result<Vec<u8>, StateError> {
    let mut v = Vec::with_capacity(HEAD_VALUE_LEN);
    v.extend_from_slice(&h.seq.to_be_bytes());
    v.extend_from_slice(&h.generation.to_be_bytes());
    v.extend_from_slice(&hash_bytes(&h.hash)?);
    v.extend_from_slice(&h.intent_offset.to_be_bytes());
    Ok(v)
}

/// Size of a head value: seq, generation, hash, intent offset.
pub const HEAD_VALUE_LEN: usize = 56;
/// Size of a head value written before heads kept their last intent offset.
const HEAD_VALUE_LEN_V1: usize = 48;

/// Decodes a head (a head without its intent offset reads as -1).
pub fn parse_head(v: &[u8]) -> Result<Head, StateError> {
    if v.len() != HEAD_VALUE_LEN && v.len() != HEAD_VALUE_LEN_V1 {
        return Err(StateError::Corrupt("head value size".into()));
    }
    Ok(Head {
        seq: i64_at(v, 0)?,
        generation: i64_at(v, 8)?,
        hash: ids::to_hex(&v[16..48]),
        intent_offset: if v.len() == HEAD_VALUE_LEN {
            i64_at(v, 48)?
        } else {
            -1
        },
    })
}

/// Encodes an idempotency entry: digest and commit_seq (40 bytes) for a committed action;
/// one more byte of flags (1: continues, 2: rebased) while a split purge is under way.
pub fn action_value(a: &ActionEntry) -> Result<Vec<u8>, StateError> {
    let mut v = Vec::with_capacity(41);
    v.extend_from_slice(&hash_bytes(&a.digest)?);
    v.extend_from_slice(&a.commit_seq.to_be_bytes());
    if a.continues {
        v.push(1 | if a.rebased { 2 } else { 0 });
    }
    Ok(v)
}

/// Decodes an idempotency entry.
pub fn parse_action(v: &[u8]) -> Result<ActionEntry, StateError> {
    let flags = match v.len() {
        40 => 0,
        41 if v[40] & !3 == 0 && v[40] & 1 == 1 => v[40],
        _ => return Err(StateError::Corrupt("action value size".into())),
    };
    Ok(ActionEntry {
        digest: ids::to_hex(&v[..32]),
        commit_seq: i64_at(v, 32)?,
        continues: flags & 1 != 0,
        rebased: flags & 2 != 0,
    })
}

/// Encodes a chain entry.
pub fn chain_value(hash: &str) -> Result<Vec<u8>, StateError> {
    Ok(hash_bytes(hash)?.to_vec())
}

/// Decodes an i64 (meta values).
pub fn parse_i64(v: &[u8]) -> Result<i64, StateError> {
    if v.len() != 8 {
        return Err(StateError::Corrupt("i64 value size".into()));
    }
    i64_at(v, 0)
}

/// Encodes a data key entry: the key, then the memory id of the row it seals.
pub fn key_value(key: &[u8; 32], memory_id: &str) -> Vec<u8> {
    let mut v = Vec::with_capacity(32 + memory_id.len());
    v.extend_from_slice(key);
    v.extend_from_slice(memory_id.as_bytes());
    v
}

/// Decodes a data key entry: `None` for a destroyed key (an empty value).
pub fn parse_key_value(v: &[u8]) -> Result<Option<([u8; 32], String)>, StateError> {
    if v.is_empty() {
        return Ok(None);
    }
    let key: [u8; 32] = v
        .get(..32)
        .and_then(|k| k.try_into().ok())
        .ok_or_else(|| StateError::Corrupt("data key value size".into()))?;
    let id = std::str::from_utf8(&v[32..])
        .map_err(|_| StateError::Corrupt("data key memory id".into()))?;
    Ok(Some((key, id.to_owned())))
}

/// The keys topic's record key of a data key: the account, a 0 byte, the key id (account ids
/// never hold a 0 byte).
pub fn key_record_key(account: &str, key_id: &str) -> Vec<u8> {
    let mut k = Vec::with_capacity(account.len() + 1 + key_id.len());
    k.extend_from_slice(account.as_bytes());
    k.push(0);
    k.extend_from_slice(key_id.as_bytes());
    k
}

/// The account and key id of a keys topic record key ([`key_record_key`]); `None` for a record
/// that is not a data key (the ledger secret's, [`SECRET_RECORD_PREFIX`]).
pub fn parse_key_record_key(k: &[u8]) -> Option<(&str, &str)> {
    let at = k.iter().position(|b| *b == 0)?;
    if at == 0 {
        return None;
    }
    let account = std::str::from_utf8(&k[..at]).ok()?;
    let key_id = std::str::from_utf8(&k[at + 1..]).ok()?;
    Some((account, key_id))
}

/// The keys topic's record keys of ledger secret candidates start with this (a 0 byte, so no
/// data key's record key does); the first candidate on partition 0 is the ledger's secret.
pub const SECRET_RECORD_PREFIX: &[u8] = b"\0ledger_secret/";
