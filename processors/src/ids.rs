//! Deterministic identities and hashes: memory ids, content hashes, intent digests and the
//! hash chain of heads. Every input is length-prefixed so no two field sequences collide.

use hmac::{Hmac, KeyInit, Mac};
use kledger_schemas::avro::{AvroCodec, single_object_header};
use kledger_schemas::{AssertOp, Commit, Form, Intent, Subject};
use sha2::{Digest, Sha256};
use ulid::{ULID_LEN, Ulid};
use uuid::Uuid;

pub use kledger_schemas::hex::{from_hex32, to_hex};

thread_local! {
    /// Spare scratch buffers of this thread ([`with_buffer`], [`FieldHasher`]).
    static SPARE: std::cell::RefCell<Vec<Vec<u8>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Scratch buffers a thread keeps for reuse, and the largest one it keeps (one huge record
/// must not pin memory).
const SPARE_MAX: usize = 8;
const SPARE_BYTES_MAX: usize = 1 << 20;

/// An empty buffer from this thread's spares, or a new one.
fn take_buffer() -> Vec<u8> {
    SPARE
        .try_with(|s| s.borrow_mut().pop())
        .ok()
        .flatten()
        .unwrap_or_else(|| Vec::with_capacity(4096))
}

/// Gives `buf` back to this thread's spares (emptied), unless it is too large or they are full.
fn give_buffer(mut buf: Vec<u8>) {
    if buf.capacity() == 0 || buf.capacity() > SPARE_BYTES_MAX {
        return;
    }
    buf.clear();
    // During the thread's teardown the spares may be gone: the buffer is then just dropped.
    let _ = SPARE.try_with(|s| {
        let mut s = s.borrow_mut();
        if s.len() < SPARE_MAX {
            s.push(buf);
        }
    });
}

/// Runs `f` with an empty scratch buffer reused across calls on this thread (nested calls
/// each get their own).
pub(crate) fn with_buffer<R>(f: impl FnOnce(&mut Vec<u8>) -> R) -> R {
    let mut buf = take_buffer();
    let r = f(&mut buf);
    give_buffer(buf);
    r
}

thread_local! {
    /// The last secret's HMAC key schedule on this thread ([`keyed_mac`]).
    static KEYED: std::cell::RefCell<Option<([u8; 32], Hmac<Sha256>)>> =
        const { std::cell::RefCell::new(None) };
}

/// An HMAC-SHA256 keyed with `secret`. The key schedule (two SHA-256 blocks: a quarter or more
/// of a short field list's cost, and a decision makes several) is made once per thread and
/// secret, then cloned; the digest is the same.
fn keyed_mac(secret: &LedgerSecret) -> Hmac<Sha256> {
    let fresh = || {
        <Hmac<Sha256> as KeyInit>::new_from_slice(&secret.0)
            .expect("HMAC takes a key of any length")
    };
    KEYED.with_borrow_mut(|k| match k {
        Some((s, m)) if *s == secret.0 => m.clone(),
        _ => {
            let m = fresh();
            *k = Some((secret.0, m.clone()));
            m
        }
    })
}

/// The ledger's secret (rules v4): the HMAC key of memory ids, content hashes, intent digests
/// and content MACs, so that none of them confirms a guess of a text without it. One per
/// ledger, made once and kept on the keys topic; it never leaves kledger's own records.
/// Debug output leaves it out.
#[derive(Clone, Copy, Default, PartialEq, Eq)]
pub struct LedgerSecret(pub [u8; 32]);

impl std::fmt::Debug for LedgerSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LedgerSecret(..)")
    }
}

/// The head hash before an account's first commit.
pub const GENESIS_HASH: &str = "0000000000000000000000000000000000000000000000000000000000000000";

/// Hex digits of an alias key.
pub const ALIAS_KEY_HEX: usize = 32;

/// The key of alias `alias` (a name, a retained name, an email) of a people document of
/// `account_id`: HMAC-SHA256 under the ledger's secret, its first [`ALIAS_KEY_HEX`] hex
/// digits. State finds a person by it without holding the name.
pub fn alias_key(secret: &LedgerSecret, account_id: &str, alias: &str) -> String {
    let mut h = FieldHasher::new("kledger.alias.v1");
    h.str(account_id).str(alias);
    let mut hex = to_hex(&h.finish_keyed(secret));
    hex.truncate(ALIAS_KEY_HEX);
    hex
}

/// A SHA-256 over length-prefixed fields. Fields are gathered in a buffer and hashed in one
/// call (the digest is the same as hashing them one by one, with less per-call overhead); the
/// buffer is one of the thread's scratch buffers, given back when the hasher is dropped.
#[derive(Debug, Default)]
pub struct FieldHasher(Vec<u8>);

impl Drop for FieldHasher {
    fn drop(&mut self) {
        give_buffer(std::mem::take(&mut self.0));
    }
}

impl FieldHasher {
    /// A new hasher with a domain tag (keeps hashes of different things apart).
    pub fn new(domain: &str) -> Self {
        let mut h = Self(take_buffer());
        h.bytes(domain.as_bytes());
        h
    }

    /// Adds a length-prefixed byte string.
    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.0.extend_from_slice(&(b.len() as u64).to_be_bytes());
        self.0.extend_from_slice(b);
        self
    }

    /// Adds a length-prefixed byte string that `write` appends to the buffer.
    pub fn field(&mut self, write: impl FnOnce(&mut Vec<u8>)) -> &mut Self {
        let at = self.0.len();
        self.0.extend_from_slice(&[0; 8]);
        write(&mut self.0);
        let len = (self.0.len() - at - 8) as u64;
        self.0[at..at + 8].copy_from_slice(&len.to_be_bytes());
        self
    }

    /// Adds a length-prefixed string.
    pub fn str(&mut self, s: &str) -> &mut Self {
        self.bytes(s.as_bytes())
    }

    /// Adds an optional string (a presence byte, then the string).
    pub fn opt(&mut self, s: Option<&str>) -> &mut Self {
        match s {
            None => self.0.push(0),
            Some(s) => {
                self.0.push(1);
                self.str(s);
            }
        }
        self
    }

    /// Adds an integer.
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// The digest.
    pub fn finish(self) -> [u8; 32] {
        Sha256::digest(&self.0).into()
    }

    /// The HMAC-SHA256 of the fields under `secret`.
    pub fn finish_keyed(self, secret: &LedgerSecret) -> [u8; 32] {
        let mut m = keyed_mac(secret);
        m.update(&self.0);
        m.finalize().into_bytes().into()
    }

    fn finish_with(self, keyed: Option<&LedgerSecret>) -> [u8; 32] {
        match keyed {
            Some(s) => self.finish_keyed(s),
            None => self.finish(),
        }
    }
}

/// How a ledger's ids and hashes are made: plain SHA-256 (rules v1 to v3) or HMAC-SHA256
/// under the ledger's secret, with the account in every content hash (rules v4).
#[derive(Debug, Clone, Copy, Default)]
pub enum Keying<'a> {
    /// SHA-256, as before rules v4.
    #[default]
    Plain,
    /// HMAC-SHA256 under the secret; content hashes also cover the account.
    Keyed {
        /// The ledger's secret.
        secret: &'a LedgerSecret,
        /// The account.
        account_id: &'a str,
    },
}

impl Keying<'_> {
    fn secret(&self) -> Option<&LedgerSecret> {
        match self {
            Keying::Plain => None,
            Keying::Keyed { secret, .. } => Some(secret),
        }
    }
}

fn subject(h: &mut FieldHasher, s: &Subject) {
    h.str(s.scope.as_str()).opt(s.entity_id.as_deref());
}

/// Hex SHA-256 of a row's semantic content: kind, content, body, condition, slot, subject.
/// Evidence, weights and access fields are not content.
pub fn content_hash(
    kind: &str,
    content: &str,
    body: Option<&str>,
    condition: Option<&std::collections::BTreeMap<String, String>>,
    slot: Option<&str>,
    subj: &Subject,
) -> String {
    content_hash_with(Keying::Plain, kind, content, body, condition, slot, subj)
}

/// [`content_hash`] made as `keying` says: under rules v4, HMAC-SHA256 under the ledger's
/// secret over the account and the same fields.
pub fn content_hash_with(
    keying: Keying<'_>,
    kind: &str,
    content: &str,
    body: Option<&str>,
    condition: Option<&std::collections::BTreeMap<String, String>>,
    slot: Option<&str>,
    subj: &Subject,
) -> String {
    let mut h = match keying {
        Keying::Plain => FieldHasher::new("kledger.content.v1"),
        Keying::Keyed { account_id, .. } => {
            let mut h = FieldHasher::new("kledger.content.v2");
            h.str(account_id);
            h
        }
    };
    h.str(kind).str(content).opt(body);
    match condition {
        None => {
            h.u64(u64::MAX);
        }
        Some(c) => {
            h.u64(c.len() as u64);
            for (k, v) in c {
                h.str(k).str(v);
            }
        }
    }
    h.opt(slot);
    subject(&mut h, subj);
    to_hex(&h.finish_with(keying.secret()))
}

/// The 80 random bits of a new row's ULID: SHA-256 over (account, action_id, op index, kind,
/// content, slot, subject, sorted supersession set), first 10 bytes.
pub fn memory_id(
    account_id: &str,
    action_id: &str,
    op_index: usize,
    op: &AssertOp,
    canonical_slot: Option<&str>,
    valid_from_ms: i64,
    supersedes: &[String],
) -> String {
    memory_id_with(
        None,
        account_id,
        action_id,
        op_index,
        op,
        canonical_slot,
        valid_from_ms,
        supersedes,
    )
}

/// [`memory_id`] with its 80 bits from HMAC-SHA256 under `secret` when one is given (rules
/// v4): the same inputs give the same id, and without the secret an id confirms nothing.
#[allow(clippy::too_many_arguments)] // memory_id's inputs, plus the key
pub fn memory_id_with(
    secret: Option<&LedgerSecret>,
    account_id: &str,
    action_id: &str,
    op_index: usize,
    op: &AssertOp,
    canonical_slot: Option<&str>,
    valid_from_ms: i64,
    supersedes: &[String],
) -> String {
    let mut h = FieldHasher::new(if secret.is_some() {
        "kledger.memory_id.v2"
    } else {
        "kledger.memory_id.v1"
    });
    h.str(account_id).str(action_id).u64(op_index as u64);
    h.str(op.kind.as_str()).str(&op.content).opt(canonical_slot);
    subject(&mut h, &op.subject);
    let mut set: Vec<&str> = supersedes.iter().map(String::as_str).collect();
    set.sort_unstable();
    set.dedup();
    h.u64(set.len() as u64);
    for id in set {
        h.str(id);
    }
    let d = h.finish_with(secret);
    let mut random = [0u8; 10];
    random.copy_from_slice(&d[..10]);
    mem_id(ulid_of(valid_from_ms as u64, random))
}

/// A ULID string (26 Crockford base32 digits, uppercase) from a 48-bit millisecond time and 80
/// random bits. Bits of `time_ms` above the 48th are dropped.
pub fn ulid(time_ms: u64, random: [u8; 10]) -> String {
    let mut buf = [0u8; ULID_LEN];
    ulid_of(time_ms, random).array_to_str(&mut buf).to_owned()
}

fn ulid_of(time_ms: u64, random: [u8; 10]) -> Ulid {
    let mut bits = [0u8; 16];
    bits[6..].copy_from_slice(&random);
    Ulid::from_parts(time_ms, u128::from_be_bytes(bits))
}

/// `mem_` and the ULID text of `id`.
fn mem_id(id: Ulid) -> String {
    let mut buf = [0u8; ULID_LEN];
    let mut out = String::with_capacity(4 + ULID_LEN);
    out.push_str("mem_");
    out.push_str(id.array_to_str(&mut buf));
    out
}

/// Parses a ULID string (either case) into its 128 bits. A first digit above `7` is refused:
/// it would not fit 128 bits (the `ulid` crate drops the bits that overflow and accepts it).
pub fn parse_ulid(s: &str) -> Option<u128> {
    let id = Ulid::from_string(s).ok()?;
    matches!(s.as_bytes().first(), Some(b'0'..=b'7')).then_some(id.0)
}

/// The UUID form of a memory id's ULID (Qdrant point id).
pub fn memory_uuid(memory_id: &str) -> Option<String> {
    Some(uuid_text(parse_ulid(memory_id.strip_prefix("mem_")?)?))
}

/// 128 bits in the hyphenated UUID form (lowercase).
pub fn uuid_text(v: u128) -> String {
    Uuid::from_u128(v)
        .hyphenated()
        .encode_lower(&mut Uuid::encode_buffer())
        .to_owned()
}

/// The memory id of a point id (the inverse of [`memory_uuid`]), from the UUID's 128 bits.
pub fn memory_id_of(bits: u128) -> String {
    mem_id(Ulid(bits))
}

/// Hex SHA-256 of an intent's payload: account, tenant, source, extractor, write reason and
/// ops. `planned_against` is not payload: a retry may be planned against a newer head.
pub fn intent_digest(intent: &Intent) -> String {
    intent_digest_with(None, intent)
}

/// [`intent_digest`] as HMAC-SHA256 under `secret` when one is given (rules v4).
pub fn intent_digest_with(secret: Option<&LedgerSecret>, intent: &Intent) -> String {
    let mut h = FieldHasher::new(if secret.is_some() {
        "kledger.intent_digest.v2"
    } else {
        "kledger.intent_digest.v1"
    });
    h.field(|buf| {
        intent.account_id.encode(buf);
        intent.tenant.encode(buf);
        intent.source.encode(buf);
        intent.extractor.encode(buf);
        intent.write_reason.encode(buf);
        intent.ops.encode(buf);
    });
    to_hex(&h.finish_with(secret))
}

/// The head hash of `commit`: SHA-256(prev_hash bytes ‖ the bytes it covers). A keyed
/// commit (rules v4) covers its [`Form::Hashed`] encoding: content MACs instead of content,
/// no head hash, no intent position. Any other covers its commit schema v2 encoding with an
/// empty `head_hash`, and without the trailing `continues` when it is false (so every chain
/// written before those fields existed verifies unchanged). `commit.head_hash` is left as it
/// was.
pub fn head_hash(commit: &mut Commit) -> String {
    let claimed = std::mem::take(&mut commit.head_hash);
    let hash = head_hash_measured(commit, |_| {});
    commit.head_hash = claimed;
    hash
}

/// [`head_hash`] of a commit whose `head_hash` is empty, telling `row_len` each op's row
/// length in the bytes it covers.
fn head_hash_measured(commit: &Commit, row_len: impl FnMut(usize)) -> String {
    with_buffer(|buf| {
        hashed_bytes(commit, buf, row_len);
        chained(&commit.prev_hash, buf)
    })
}

/// Writes the bytes `commit`'s head hash covers (its own `head_hash` must be empty), telling
/// `row_len` each op's row length in them.
fn hashed_bytes(commit: &Commit, buf: &mut Vec<u8>, row_len: impl FnMut(usize)) {
    if commit.keyed {
        commit.encode_measured(buf, Form::Hashed, row_len);
    } else {
        commit.encode_measured(buf, Form::V2, row_len);
        if !commit.continues {
            // `false` is the single byte 0x00, the last field.
            debug_assert_eq!(buf.last(), Some(&0));
            buf.pop();
        }
    }
}

/// Hex SHA-256(prev_hash bytes ‖ canonical commit bytes). A malformed prev_hash hashes as its
/// raw text, which can never match a real chain.
fn chained(prev_hash: &str, canonical: &[u8]) -> String {
    let mut h = Sha256::new();
    match from_hex32(prev_hash) {
        Some(prev) => h.update(prev),
        None => h.update(prev_hash.as_bytes()),
    }
    h.update(canonical);
    to_hex(&h.finalize())
}

/// Sets the head hash of a commit whose `head_hash` is empty.
pub fn set_head_hash(commit: &mut Commit) {
    set_head_hash_measured(commit, |_| {});
}

/// [`set_head_hash`] from one encoding of what the hash covers, telling `row_len` each op's
/// row length in it (for a keyed commit, the [`Form::Hashed`] lengths a caller checks the
/// record budget with, without encoding the rows again).
pub fn set_head_hash_measured(commit: &mut Commit, row_len: impl FnMut(usize)) {
    debug_assert!(commit.head_hash.is_empty());
    commit.head_hash = head_hash_measured(commit, row_len);
}

/// Seals a commit whose `head_hash` is empty: computes and sets the head hash, and returns the
/// commit as a single-object encoded record (`encode_single_object(commit)` after sealing). A
/// keyed commit's rows must be encrypted before the record is made ([`record`]).
pub fn seal(commit: &mut Commit) -> Vec<u8> {
    set_head_hash(commit);
    record(commit)
}

/// A commit as a single-object encoded record.
pub fn record(commit: &Commit) -> Vec<u8> {
    let mut record = Vec::with_capacity(2048);
    record.extend_from_slice(&single_object_header::<Commit>());
    commit.encode(&mut record);
    record
}

#[cfg(test)]
mod uuid_tests {
    use super::*;

    #[test]
    fn point_ids_map_back_to_memory_ids() {
        let id = "mem_01KE6JWJS0ZK57MHZPJM192VB2";
        let uuid = memory_uuid(id).unwrap();
        let bits = u128::from_str_radix(&uuid.replace('-', ""), 16).unwrap();
        assert_eq!(memory_id_of(bits), id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The cached key schedule gives the HMAC a fresh one gives, whichever secret came last.
    #[test]
    fn keyed_digests_match_a_fresh_hmac_as_the_secret_changes() {
        let fresh = |secret: &LedgerSecret, fields: &[u8]| -> [u8; 32] {
            let mut m = <Hmac<Sha256> as KeyInit>::new_from_slice(&secret.0).unwrap();
            m.update(fields);
            m.finalize().into_bytes().into()
        };
        let (a, b) = (LedgerSecret([1; 32]), LedgerSecret([2; 32]));
        for (secret, text) in [(&a, "one"), (&b, "two"), (&a, "three"), (&a, "three")] {
            let mut h = FieldHasher::new("test");
            h.str(text);
            let fields = h.0.clone();
            assert_eq!(h.finish_keyed(secret), fresh(secret, &fields), "{text}");
        }
        let mut h = FieldHasher::new("test");
        h.str("one");
        assert_ne!(
            h.finish_keyed(&b),
            fresh(&a, &FieldHasher::new("test").str("one").0)
        );
    }

    /// A hasher's buffer comes from the thread's spares: it starts empty however much the last
    /// one held, and hashers alive at once do not share one.
    #[test]
    fn reused_buffers_start_empty_and_are_not_shared() {
        let plain = |fields: &[&str]| -> [u8; 32] {
            let mut b = Vec::new();
            for f in fields {
                b.extend_from_slice(&(f.len() as u64).to_be_bytes());
                b.extend_from_slice(f.as_bytes());
            }
            Sha256::digest(&b).into()
        };
        let long = "x".repeat(100_000);
        let mut big = FieldHasher::new("d");
        big.str(&long);
        assert_eq!(big.finish(), plain(&["d", &long]));
        let mut outer = FieldHasher::new("d");
        outer.str("outer");
        let mut inner = FieldHasher::new("d");
        inner.str("inner");
        let nested = with_buffer(|b| {
            b.extend_from_slice(b"scratch");
            b.len()
        });
        assert_eq!(nested, 7);
        assert_eq!(inner.finish(), plain(&["d", "inner"]));
        outer.str("more");
        assert_eq!(outer.finish(), plain(&["d", "outer", "more"]));
    }

    #[test]
    fn ulid_round_trips_and_sorts_by_time() {
        let a = ulid(1_700_000_000_000, [0xff; 10]);
        let b = ulid(1_700_000_000_001, [0; 10]);
        assert_eq!(a.len(), 26);
        assert!(a < b);
        let v = parse_ulid(&a).unwrap();
        assert_eq!((v >> 80) as u64, 1_700_000_000_000);
        assert_eq!(v & ((1u128 << 80) - 1), (1u128 << 80) - 1);
        // Known vector: time 0, random 0.
        assert_eq!(ulid(0, [0; 10]), "00000000000000000000000000");
        assert_eq!(
            ulid(0xFFFF_FFFF_FFFF, [0xff; 10]),
            "7ZZZZZZZZZZZZZZZZZZZZZZZZZ"
        );
    }

    #[test]
    fn memory_uuid_is_the_ulid_bits() {
        let id = format!("mem_{}", ulid(0x0123_4567_89ab, [0xcd; 10]));
        assert_eq!(
            memory_uuid(&id).unwrap(),
            "01234567-89ab-cdcd-cdcd-cdcdcdcdcdcd"
        );
        assert_eq!(memory_uuid("mem_short"), None);
        assert_eq!(memory_uuid("nope"), None);
    }
}

/// The `ulid` and `uuid` crates against the hand-written code they replaced, kept here as the
/// oracle: every output byte and every accept/refuse must be the same.
#[cfg(test)]
mod crate_agreement {
    use super::*;
    use proptest::prelude::*;

    const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

    fn hand_ulid(time_ms: u64, random: [u8; 10]) -> String {
        let mut v: u128 = u128::from(time_ms & 0xFFFF_FFFF_FFFF) << 80;
        for (i, b) in random.iter().enumerate() {
            v |= u128::from(*b) << (8 * (9 - i));
        }
        let mut out = [0u8; 26];
        for (i, c) in out.iter_mut().enumerate() {
            let shift = 5 * (25 - i);
            *c = CROCKFORD[((v >> shift) & 0x1f) as usize];
        }
        out.iter().map(|b| *b as char).collect()
    }

    fn hand_parse_ulid(s: &str) -> Option<u128> {
        if s.len() != 26 {
            return None;
        }
        let mut v: u128 = 0;
        for (i, c) in s.bytes().enumerate() {
            let d = CROCKFORD
                .iter()
                .position(|x| *x == c.to_ascii_uppercase())? as u128;
            if i == 0 && d > 7 {
                return None;
            }
            v = (v << 5) | d;
        }
        Some(v)
    }

    fn hand_uuid_text(v: u128) -> String {
        let h = format!("{v:032x}");
        format!(
            "{}-{}-{}-{}-{}",
            &h[..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..]
        )
    }

    fn hand_memory_id_of(bits: u128) -> String {
        let time_ms = (bits >> 80) as u64;
        let mut random = [0u8; 10];
        for (i, b) in random.iter_mut().enumerate() {
            *b = (bits >> (8 * (9 - i))) as u8;
        }
        format!("mem_{}", hand_ulid(time_ms, random))
    }

    /// Texts a ULID parser must judge: 26 characters drawn from the alphabet in both cases, the
    /// letters Crockford leaves out (I, L, O, U), other ASCII and non-ASCII characters.
    fn ulid_like() -> impl Strategy<Value = String> {
        prop_oneof![
            "[0-9A-HJKMNP-TV-Z]{26}",
            "[0-9a-hjkmnp-tv-z]{26}",
            "[0-9A-Za-z]{26}",
            "[0-9A-Z]{24,28}",
            "[0-9A-Zé~ ]{25,26}",
            any::<String>(),
        ]
    }

    #[test]
    fn edge_cases_agree() {
        for s in [
            "",
            "00000000000000000000000000",
            "7ZZZZZZZZZZZZZZZZZZZZZZZZZ",
            "7zzzzzzzzzzzzzzzzzzzzzzzzz",
            "80000000000000000000000000",
            "8ZZZZZZZZZZZZZZZZZZZZZZZZZ",
            "ZZZZZZZZZZZZZZZZZZZZZZZZZZ",
            "01KE6JWJS0ZK57MHZPJM192VB2",
            "01ke6jwjs0zk57mhzpjm192vb2",
            "01KE6JWJS0ZK57MHZPJM192VBI",
            "01KE6JWJS0ZK57MHZPJM192VBL",
            "01KE6JWJS0ZK57MHZPJM192VBO",
            "01KE6JWJS0ZK57MHZPJM192VBU",
            "01KE6JWJS0ZK57MHZPJM192VB",
            "01KE6JWJS0ZK57MHZPJM192VB22",
            "01KE6JWJS0ZK57MHZPJM192Vé",
            " 1KE6JWJS0ZK57MHZPJM192VB2",
        ] {
            assert_eq!(parse_ulid(s), hand_parse_ulid(s), "{s:?}");
        }
        for t in [0, 1, 0xFFFF_FFFF_FFFF, 0x1_0000_0000_0000, u64::MAX] {
            for r in [[0; 10], [0xff; 10], [0x5a; 10]] {
                assert_eq!(ulid(t, r), hand_ulid(t, r));
            }
        }
        for v in [0, 1, u128::MAX, 1 << 127, (1 << 80) - 1] {
            assert_eq!(uuid_text(v), hand_uuid_text(v));
            assert_eq!(memory_id_of(v), hand_memory_id_of(v));
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4096))]

        #[test]
        fn ulid_text_is_the_same(time_ms in any::<u64>(), random in any::<[u8; 10]>()) {
            let text = ulid(time_ms, random);
            prop_assert_eq!(&text, &hand_ulid(time_ms, random));
            prop_assert_eq!(parse_ulid(&text), hand_parse_ulid(&text));
            // `memory_id`'s last step.
            prop_assert_eq!(
                mem_id(ulid_of(time_ms, random)),
                format!("mem_{}", hand_ulid(time_ms, random))
            );
        }

        #[test]
        fn ulid_text_within_48_bits_is_the_same(
            time_ms in 0u64..1 << 48,
            random in any::<[u8; 10]>(),
        ) {
            prop_assert_eq!(ulid(time_ms, random), hand_ulid(time_ms, random));
        }

        #[test]
        fn ulid_parsing_accepts_and_refuses_the_same(s in ulid_like()) {
            prop_assert_eq!(parse_ulid(&s), hand_parse_ulid(&s));
            let id = format!("mem_{s}");
            prop_assert_eq!(
                memory_uuid(&id),
                hand_parse_ulid(&s).map(hand_uuid_text)
            );
        }

        #[test]
        fn uuid_text_and_memory_ids_of_bits_are_the_same(bits in any::<u128>()) {
            prop_assert_eq!(uuid_text(bits), hand_uuid_text(bits));
            prop_assert_eq!(memory_id_of(bits), hand_memory_id_of(bits));
            let id = memory_id_of(bits);
            prop_assert_eq!(memory_uuid(&id), Some(hand_uuid_text(bits)));
        }
    }
}
