//! Loading what `decide` needs, and the batch applier shared by the stream processor and
//! `kledger apply`: decide each intent against state plus this batch's pending writes, fold
//! each commit into the batch, hand back one write set to make durable after delivery.

use kledger_processors::seal::{self, DataKey, KEY_BYTES};
use kledger_processors::{AccountState, Decision, Limits, RecordMeta, decide_owned, ids, needs};
use kledger_schemas::avro::{AvroCodec, Reader};
use kledger_schemas::limits::ACTION_ID_CHARS_MAX;
use kledger_schemas::{Intent, Row, Status};

use crate::StateError;
use crate::fold::{Folded, fold_onto, head};
use crate::keys::{self, ACCOUNT_BYTES_MAX, Cf};
use crate::store::{Overlay, StateRead, WriteSet};

/// Rows an account may hold for a whole-account purge (bounds the read).
pub const ACCOUNT_ROWS_MAX: usize = 1_000_000;
/// Rows one entity may hold for an entity purge.
pub const ENTITY_ROWS_MAX: usize = 100_000;

/// Reads row `id`; with `open`, decrypts its content (rules v4) with its data key from state.
/// Decide reads a row's content only to re-seal it in a commit that changes it (an amend,
/// close or evidence target); every other row it loads (a slot's occupant, a purged row) is
/// read for its ids, revision, hash, status and authority, so it is left sealed: no key read,
/// no decryption.
fn row<R: StateRead + ?Sized>(
    r: &R,
    p: i32,
    acct: &str,
    id: &str,
    open: Option<&mut Opened>,
) -> Result<Option<Row>, StateError> {
    let Some(v) = r.get(Cf::Rows, &keys::child(p, acct, id.as_bytes())?)? else {
        return Ok(None);
    };
    let mut row = decode(id, &v)?;
    if let Some(opened) = open {
        open_row(r, p, acct, &mut row, opened)?;
    }
    Ok(Some(row))
}

/// The data keys `load` read to open rows, by key id: the commit that changes those rows
/// re-seals them under the same keys, and takes them from here instead of reading them again.
#[derive(Default)]
struct Opened(Vec<(String, [u8; KEY_BYTES])>);

impl Opened {
    fn get(&self, key_id: &str) -> Option<[u8; KEY_BYTES]> {
        self.0.iter().find(|(id, _)| id == key_id).map(|(_, k)| *k)
    }
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Key ids only: never key material.
        f.debug_list()
            .entries(self.0.iter().map(|(id, _)| id))
            .finish()
    }
}

fn decode(id: &str, v: &[u8]) -> Result<Row, StateError> {
    Row::decode(&mut Reader::new(v)).map_err(|e| StateError::Corrupt(format!("row {id}: {e}")))
}

/// Whether every op of `intent` is a purge: a purge needs no row's content, so its rows are
/// not opened, and it is decided over rows whose data keys are destroyed too (replay verify
/// re-decides purges of rows a later purge erased).
fn purges_only(intent: &Intent) -> bool {
    intent
        .ops
        .iter()
        .all(|op| matches!(op, kledger_schemas::Op::Purge(_)))
}

/// A data key from state: `None` when it is not there or was destroyed.
pub fn data_key<R: StateRead + ?Sized>(
    r: &R,
    p: i32,
    acct: &str,
    key_id: &str,
) -> Result<Option<[u8; KEY_BYTES]>, StateError> {
    match r.get(Cf::Keys, &keys::child(p, acct, key_id.as_bytes())?)? {
        Some(v) => Ok(keys::parse_key_value(&v)?.map(|(k, _)| k)),
        None => Ok(None),
    }
}

/// Opens a sealed row with its data key from state (a row that is not sealed, and a
/// tombstone, are left as they are). A sealed row whose key state lacks is corrupt state: a
/// purge tombstones a row before its key is destroyed.
fn open_row<R: StateRead + ?Sized>(
    r: &R,
    p: i32,
    acct: &str,
    row: &mut Row,
    opened: &mut Opened,
) -> Result<(), StateError> {
    let Some(s) = &row.sealed else {
        return Ok(());
    };
    if s.ciphertext.0.is_empty() {
        return Ok(());
    }
    let key = match opened.get(&s.key_id) {
        Some(k) => k,
        None => {
            let k = data_key(r, p, acct, &s.key_id)?.ok_or_else(|| StateError::Shredded {
                account: acct.to_owned(),
                memory_id: row.memory_id.clone(),
            })?;
            opened.0.push((s.key_id.clone(), k));
            k
        }
    };
    seal::open(acct, row, &key)
        .map_err(|e| StateError::Corrupt(format!("{acct}: row {}: {e}", row.memory_id)))
}

/// Where new data keys come from. The processor and `kledger apply` make random ones
/// ([`RandomKeys`]); replay verify takes the ones the outbox was sealed with.
pub trait KeySource {
    /// A data key for the new row `memory_id` of `account`.
    fn new_key(&mut self, account: &str, memory_id: &str) -> Result<DataKey, StateError>;
}

/// Random data keys and key ids from the thread's generator (`rand::rng()`: ChaCha12 seeded,
/// and reseeded, from the operating system's generator). One system call per key was 7 of 41
/// stack samples of the apply thread.
#[derive(Debug, Default, Clone, Copy)]
pub struct RandomKeys;

/// `N` bytes from the operating system's random generator.
pub fn random_bytes<const N: usize>() -> Result<[u8; N], StateError> {
    use rand::TryRngCore;
    let mut bytes = [0u8; N];
    rand::rngs::OsRng
        .try_fill_bytes(&mut bytes)
        .map_err(|e| StateError::Corrupt(format!("no randomness: {e}")))?;
    Ok(bytes)
}

/// The ledger's secret a state holds (made and stored when it holds none): the secret of a
/// ledger no keys topic keeps (`kledger apply`'s state directories).
pub fn local_ledger_secret<S: crate::StateStore + ?Sized>(
    store: &S,
) -> Result<ids::LedgerSecret, StateError> {
    let k = keys::meta(-1, keys::META_LEDGER_SECRET);
    if let Some(v) = store.get(Cf::Meta, &k)? {
        let s: [u8; 32] = v
            .as_slice()
            .try_into()
            .map_err(|_| StateError::Corrupt("ledger secret size".into()))?;
        return Ok(ids::LedgerSecret(s));
    }
    let s = random_bytes::<32>()?;
    let mut w = WriteSet::default();
    w.put(Cf::Meta, k, s.to_vec());
    store.write(&w)?;
    Ok(ids::LedgerSecret(s))
}

impl KeySource for RandomKeys {
    fn new_key(&mut self, _account: &str, memory_id: &str) -> Result<DataKey, StateError> {
        use rand::RngCore;
        let mut bytes = [0u8; KEY_BYTES + 8];
        rand::rng().fill_bytes(&mut bytes);
        let mut key = [0u8; KEY_BYTES];
        key.copy_from_slice(&bytes[..KEY_BYTES]);
        let mut random = [0u8; 8];
        random.copy_from_slice(&bytes[KEY_BYTES..]);
        Ok(DataKey {
            id: seal::key_id(memory_id, &random),
            key,
        })
    }
}

/// Whether `intent`'s account id or action id is too long to be in state: nothing of it is
/// loaded (its head neither), and validation rejects it.
fn unkeyed(intent: &Intent) -> bool {
    intent.account_id.len() > ACCOUNT_BYTES_MAX || intent.action_id.len() > 4 * ACTION_ID_CHARS_MAX
}

/// Loads the account state `decide` reads for `intent` on partition `p`, decided within
/// `limits`.
pub fn load<R: StateRead + ?Sized>(
    r: &R,
    p: i32,
    intent: &Intent,
    limits: &Limits,
) -> Result<AccountState, StateError> {
    load_opened(r, p, intent, limits, &mut Opened::default())
}

/// [`load`], keeping in `opened` the data keys it read to open rows.
fn load_opened<R: StateRead + ?Sized>(
    r: &R,
    p: i32,
    intent: &Intent,
    limits: &Limits,
    opened: &mut Opened,
) -> Result<AccountState, StateError> {
    let acct = intent.account_id.as_str();
    let mut s = AccountState::default();
    if unkeyed(intent) {
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
    let n = needs(intent, limits);
    let has_source = intent
        .ops
        .iter()
        .any(|op| matches!(op, kledger_schemas::Op::Source(_)));
    // Only the targets of a commit that changes them are opened (a purge changes content to
    // nothing: it opens none).
    let open = !purges_only(intent);
    for id in &n.rows {
        if let Some(row) = row(r, p, acct, id, open.then_some(&mut *opened))? {
            s.rows.insert(id.clone(), row);
        }
    }
    for slot in &n.slots {
        if let Some(v) = r.get(Cf::Slots, &keys::child(p, acct, slot.as_bytes())?)? {
            let id = String::from_utf8(v).map_err(|_| StateError::Corrupt("slot value".into()))?;
            // A source document's current version is superseded by the new one: opened, so
            // its superseded version keeps its content.
            let opens = (slot.starts_with('@') && has_source).then_some(&mut *opened);
            if !s.rows.contains_key(&id)
                && let Some(row) = row(r, p, acct, &id, opens)?
            {
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
            if let Some(row) = row(r, p, acct, &id, None)? {
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
            let row = decode(&id, &v)?;
            s.rows.insert(id, row);
        }
    }
    Ok(s)
}

/// Decides a batch of intents against a store plus the batch's own pending writes.
pub struct Applier<'a, S: StateRead + ?Sized> {
    overlay: Overlay<'a, S>,
    limits: Limits,
    keys: Box<dyn KeySource + 'a>,
}

impl<S: StateRead + ?Sized> std::fmt::Debug for Applier<'_, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Applier")
            .field("pending", &self.overlay.pending().len())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl<'a, S: StateRead + ?Sized> Applier<'a, S> {
    /// A batch over `base`, deciding within `limits`, with random data keys.
    pub fn new(base: &'a S, limits: Limits) -> Self {
        Self::with_keys(base, limits, Box::new(RandomKeys))
    }

    /// A batch over `base`, deciding within `limits`, with data keys from `keys`.
    pub fn with_keys(base: &'a S, limits: Limits, keys: Box<dyn KeySource + 'a>) -> Self {
        Self {
            overlay: Overlay::new(base),
            limits,
            keys,
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
        let mut opened = Opened::default();
        let state = load_opened(
            &self.overlay,
            meta.partition,
            &intent,
            &self.limits,
            &mut opened,
        )?;
        let unkeyed = unkeyed(&intent);
        let mut decision = decide_owned(&state, intent, meta, &self.limits);
        if decision.commits.iter().any(|c| c.keyed) {
            self.encrypt(&mut decision, meta.partition, &opened)?;
        }
        // The head `load` read, which each fold moves on (read here if `load` did not: such an
        // intent is rejected, but a commit of it must still meet the real head).
        let mut head = match decision.commits.first() {
            Some(c) if unkeyed => head(&self.overlay, meta.partition, &c.account_id)?,
            _ => state.head,
        };
        for commit in &decision.commits {
            match fold_onto(&mut self.overlay, commit, meta.partition, &mut head)? {
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

    /// Encrypts a keyed decision's rows (rules v4) under their data keys — a new key for each
    /// new row, written to the batch — and encodes its records. A row `load` opened is
    /// re-sealed under the key it read (`opened`), without reading it again.
    fn encrypt(&mut self, d: &mut Decision, p: i32, opened: &Opened) -> Result<(), StateError> {
        for commit in &mut d.commits {
            let acct = commit.account_id.as_str();
            for op in &mut commit.ops {
                let row = &mut op.row;
                let key_id = row.sealed.as_ref().map(|s| s.key_id.clone());
                if row.status == Status::Tombstoned {
                    // Its key is destroyed by the fold; nothing is sealed.
                    continue;
                }
                let key = match key_id.as_deref() {
                    Some(id) if !id.is_empty() => DataKey {
                        id: id.to_owned(),
                        key: match opened.get(id) {
                            Some(k) => Some(k),
                            None => data_key(&self.overlay, p, acct, id)?,
                        }
                        .ok_or_else(|| {
                            StateError::Corrupt(format!(
                                "{acct}: data key {id} of row {} missing",
                                row.memory_id
                            ))
                        })?,
                    },
                    _ => {
                        let key = self.keys.new_key(acct, &row.memory_id)?;
                        self.overlay.pending_mut().put(
                            Cf::Keys,
                            keys::child(p, acct, key.id.as_bytes())?,
                            keys::key_value(&key.key, &row.memory_id),
                        );
                        d.new_keys.push((row.memory_id.clone(), key.clone()));
                        key
                    }
                };
                seal::encrypt(acct, row, &key);
            }
            d.records.push(ids::record(commit));
        }
        Ok(())
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
