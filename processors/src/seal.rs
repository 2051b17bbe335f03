//! Sealing (rules v4, crypto-shredding): a row's content-bearing fields encrypted under the
//! row's own data key, so that destroying the key erases every copy of them at once, and a
//! MAC of them under the ledger's secret for the hash chain.
//!
//! - The **content** of a row is its content, body, condition, close reason, sensitivity
//!   labels, tags, evidence locators, quotes and checksums, and its embedding ([`content`]).
//!   Everything else (ids, times, statuses, access fields, evidence lineage) stays in the
//!   clear: the fold, slots, subjects and access checks need it, and none of it is text a
//!   user wrote.
//! - The **ciphertext** is ChaCha20-Poly1305 under the row's [`DataKey`], with a nonce derived
//!   from the row's revision (a key encrypts only its own row's versions, one per revision)
//!   and the account, memory id and revision as associated data. So sealing is deterministic:
//!   the same key and row give the same bytes, and replay verify compares bytes.
//! - The **MAC** is HMAC-SHA256 under the [`LedgerSecret`] of the account, memory id and
//!   content. The head hash covers it instead of the ciphertext ([`kledger_schemas::Form`]),
//!   so the chain is verified without any data key (a purged row's history still chains) and
//!   does not depend on which key sealed the row.
//!
//! Data keys are made by the runner (randomness is not a pure function's business); this
//! module only uses them.

use kledger_schemas::avro::{AvroCodec, DecodeError, Reader, long_len, write_long};
use kledger_schemas::{Bytes, Embedding, Evidence, Locator, Row, Sealed, SourceDoc};
use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, Nonce, UnboundKey};

use crate::ids::{self, LedgerSecret};

/// Bytes of a data key.
pub const KEY_BYTES: usize = 32;
/// Hex digits of a data key's id: the row's tag ([`key_row_tag`], 16) then 8 random bytes (16).
pub const KEY_ID_HEX: usize = 32;
/// Hex digits of a data key id's row tag.
pub const KEY_ROW_TAG_HEX: usize = 16;

/// The first [`KEY_ROW_TAG_HEX`] hex digits of the id of every data key that seals row
/// `memory_id`: SHA-256 of the memory id (not secret: a tombstone keeps its memory id). Every
/// key that ever sealed a row shares it, so a purge finds them all by prefix, including a
/// second key an old owner drew for the same decision after a rebalance.
pub fn key_row_tag(memory_id: &str) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(b"kledger.key_row_tag.v1\0");
    h.update(memory_id.as_bytes());
    ids::to_hex(&h.finalize()[..KEY_ROW_TAG_HEX / 2])
}

/// The id of a new data key of row `memory_id`: its row tag, then `random` in hex.
pub fn key_id(memory_id: &str, random: &[u8; (KEY_ID_HEX - KEY_ROW_TAG_HEX) / 2]) -> String {
    let mut id = key_row_tag(memory_id);
    id.push_str(&ids::to_hex(random));
    id
}
/// Bytes the AEAD adds to the content (the Poly1305 tag).
pub const TAG_BYTES: usize = 16;
/// Hex digits of a content MAC.
pub const MAC_HEX: usize = 64;

/// A row's data key: its id (named in the sealed row) and the key. Debug output leaves the
/// key out.
#[derive(Clone, PartialEq, Eq)]
pub struct DataKey {
    /// 32 hex digits.
    pub id: String,
    /// The ChaCha20-Poly1305 key.
    pub key: [u8; KEY_BYTES],
}

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DataKey")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// Why a sealed row did not open.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    /// The row is not sealed (a ledger decided under rules v1 to v3).
    #[error("row is not sealed")]
    NotSealed,
    /// The ciphertext does not open with the key (wrong key, or bytes changed).
    #[error("sealed content does not open with key {0}")]
    Tampered(String),
    /// The opened bytes are not a content record for this row.
    #[error("sealed content does not decode: {0}")]
    Malformed(String),
}

/// Encodes the content-bearing fields of `row` (as it holds them: open, or empty).
pub fn content(row: &Row, out: &mut Vec<u8>) {
    row.content.encode(out);
    row.body.encode(out);
    row.condition.encode(out);
    row.closed_reason.encode(out);
    row.sensitivity.labels.encode(out);
    row.tags.encode(out);
    if !row.evidence.is_empty() {
        write_long(out, row.evidence.len() as i64);
        for e in &row.evidence {
            e.locator.encode(out);
            e.quote.encode(out);
            e.checksum.encode(out);
        }
    }
    write_long(out, 0);
    row.embedding.encode(out);
    // A source row's document (none before source rows existed: ledger rows seal as before).
    if let Some(rec) = &row.record {
        rec.doc.encode(out);
    }
}

/// Reads content encoded by [`content`] into `row` (whose evidence lineage it must match).
fn put_content(row: &mut Row, bytes: &[u8]) -> Result<(), DecodeError> {
    let mut r = Reader::new(bytes);
    row.content = AvroCodec::decode(&mut r)?;
    row.body = AvroCodec::decode(&mut r)?;
    row.condition = AvroCodec::decode(&mut r)?;
    row.closed_reason = AvroCodec::decode(&mut r)?;
    row.sensitivity.labels = AvroCodec::decode(&mut r)?;
    row.tags = AvroCodec::decode(&mut r)?;
    let mut n = 0usize;
    loop {
        let block = r.read_block_count()?;
        if block == 0 {
            break;
        }
        for _ in 0..block {
            let e: &mut Evidence = row.evidence.get_mut(n).ok_or(DecodeError::BadLength)?;
            e.locator = Locator::decode(&mut r)?;
            e.quote = AvroCodec::decode(&mut r)?;
            e.checksum = AvroCodec::decode(&mut r)?;
            n += 1;
        }
    }
    if n != row.evidence.len() {
        return Err(DecodeError::BadLength);
    }
    row.embedding = Option::<Embedding>::decode(&mut r)?;
    if let Some(rec) = &mut row.record {
        rec.doc = Option::<SourceDoc>::decode(&mut r)?;
    }
    r.finish()
}

/// Empties the content-bearing fields of `row` (evidence keeps its lineage ids).
pub fn blank(row: &mut Row) {
    row.content = String::new();
    row.body = None;
    row.condition = None;
    row.closed_reason = None;
    row.sensitivity.labels.clear();
    row.tags.clear();
    for e in &mut row.evidence {
        e.locator = Locator::default();
        e.quote = None;
        e.checksum = None;
    }
    row.embedding = None;
    if let Some(rec) = &mut row.record {
        rec.doc = None;
    }
}

/// ChaCha20-Poly1305 (RFC 8439) under `key`. ring's, not RustCrypto's: on a row's few hundred
/// bytes it is about 6x faster (RustCrypto's AVX2 Poly1305 pays about 1 µs of set-up per
/// message); the bytes are the same (`tests::sealed_bytes_equal_rustcryptos_aead`).
fn aead_key(key: &[u8; KEY_BYTES]) -> LessSafeKey {
    // A 32-byte key is the only thing `new` checks.
    LessSafeKey::new(
        UnboundKey::new(&CHACHA20_POLY1305, key).expect("ChaCha20-Poly1305 takes 32-byte keys"),
    )
}

fn aad(account_id: &str, row: &Row) -> Vec<u8> {
    let mut a = Vec::with_capacity(16 + account_id.len() + row.memory_id.len());
    for part in [account_id.as_bytes(), row.memory_id.as_bytes()] {
        a.extend_from_slice(&(part.len() as u64).to_be_bytes());
        a.extend_from_slice(part);
    }
    a.extend_from_slice(&row.revision.to_be_bytes());
    a
}

/// The nonce of a row version: unique per key, since a key seals only its own row and each
/// version of the row has its own revision.
fn nonce(row: &Row) -> [u8; 12] {
    let mut n = [0u8; 12];
    n[..4].copy_from_slice(b"kld4");
    n[4..].copy_from_slice(&row.revision.to_be_bytes());
    n
}

/// The MAC of an open row's content under `secret`: hex HMAC-SHA256 over the account, the
/// memory id and [`content`].
pub fn mac(secret: &LedgerSecret, account_id: &str, row: &Row) -> String {
    mac_sized(secret, account_id, row).0
}

/// [`mac`], and the length of the row's [`content`] it covers.
fn mac_sized(secret: &LedgerSecret, account_id: &str, row: &Row) -> (String, usize) {
    let mut h = ids::FieldHasher::new("kledger.content_mac.v1");
    h.str(account_id).str(&row.memory_id);
    let mut len = 0;
    h.field(|buf| {
        let at = buf.len();
        content(row, buf);
        len = buf.len() - at;
    });
    (ids::to_hex(&h.finish_keyed(secret)), len)
}

/// Marks an open row as sealed under `key_id` with its content's MAC, without encrypting yet
/// (what `decide` does: the head hash needs only the MAC; the runner encrypts with
/// [`encrypt`]). Returns the length of the row's [`content`] (what [`wire_bytes_from`] takes).
pub fn mark(secret: &LedgerSecret, account_id: &str, row: &mut Row, key_id: String) -> usize {
    let (mac, content_len) = mac_sized(secret, account_id, row);
    row.sealed = Some(Sealed {
        key_id,
        mac,
        ciphertext: Bytes::default(),
    });
    content_len
}

/// Encrypts an open, marked row's content under `key` (whose id the row then names). A
/// tombstone is not encrypted: it has no content, and its key is destroyed.
pub fn encrypt(account_id: &str, row: &mut Row, key: &DataKey) {
    let mut ciphertext = Vec::with_capacity(256);
    content(row, &mut ciphertext);
    // Sealing fails only for a message over 256 GiB; a row is under the record budget.
    if aead_key(&key.key)
        .seal_in_place_append_tag(
            Nonce::assume_unique_for_key(nonce(row)),
            Aad::from(aad(account_id, row)),
            &mut ciphertext,
        )
        .is_err()
    {
        ciphertext.clear();
    }
    let sealed = row.sealed.get_or_insert_with(|| Sealed {
        key_id: String::new(),
        mac: String::new(),
        ciphertext: Bytes::default(),
    });
    sealed.key_id = key.id.clone();
    sealed.ciphertext = Bytes(ciphertext);
}

/// Opens a sealed row: decrypts its content into its fields with `key` (the key its
/// `sealed.key_id` names). A row that is not sealed is [`SealError::NotSealed`].
pub fn open(account_id: &str, row: &mut Row, key: &[u8; KEY_BYTES]) -> Result<(), SealError> {
    let Some(sealed) = &row.sealed else {
        return Err(SealError::NotSealed);
    };
    if sealed.ciphertext.0.is_empty() {
        // A tombstone: nothing was sealed.
        blank(row);
        return Ok(());
    }
    let aad = aad(account_id, row);
    let mut buf = sealed.ciphertext.0.clone();
    let plain = aead_key(key)
        .open_in_place(
            Nonce::assume_unique_for_key(nonce(row)),
            Aad::from(aad),
            &mut buf,
        )
        .map_err(|_| SealError::Tampered(sealed.key_id.clone()))?;
    put_content(row, plain).map_err(|e| SealError::Malformed(e.to_string()))
}

/// Shreds a sealed row whose key is destroyed: what is left of it is a tombstone (status
/// `tombstoned`, content empty, no ciphertext). A projection reading an old version of a purged
/// row is handed this: purged rows replay and rebuild as tombstones.
pub fn shred(row: &mut Row) {
    row.status = kledger_schemas::Status::Tombstoned;
    blank(row);
    if let Some(s) = &mut row.sealed {
        s.ciphertext = Bytes::default();
    }
}

/// Bytes a sealed row takes on the wire, whatever key seals it: the row with its content
/// empty, plus its [`Sealed`] (key id, MAC, ciphertext of the content and the tag). Exact for
/// a row that is or will be encrypted; a tombstone's ciphertext is empty.
pub fn wire_bytes(row: &Row) -> usize {
    let hashed = ids::with_buffer(|buf| {
        row.encode_as(buf, kledger_schemas::Form::Hashed);
        buf.len()
    });
    let content = ids::with_buffer(|buf| {
        content(row, buf);
        buf.len()
    });
    wire_bytes_from(row, hashed, content)
}

/// [`wire_bytes`] from the lengths of the row's [`kledger_schemas::Form::Hashed`] encoding
/// and of its [`content`] (as [`mark`] returns it), for a caller that has encoded both.
pub fn wire_bytes_from(row: &Row, hashed: usize, content: usize) -> usize {
    // The hashed form ends with the MAC (or a 0 for a row without one); the wire form has the
    // union branch and the Sealed record there instead.
    let mac_len = row
        .sealed
        .as_ref()
        .map_or(1, |s| long_len(s.mac.len() as i64) + s.mac.len());
    let cipher = if row.status == kledger_schemas::Status::Tombstoned {
        0
    } else {
        content + TAG_BYTES
    };
    // A source row's record: the wire form adds its union branch and an empty document's.
    let record = if row.record.is_some() { 2 } else { 1 };
    hashed - mac_len
        + record
        + 1 // union branch
        + long_len(KEY_ID_HEX as i64) + KEY_ID_HEX
        + long_len(MAC_HEX as i64) + MAC_HEX
        + long_len(cipher as i64) + cipher
}

#[cfg(test)]
mod tests {
    use super::*;
    use kledger_schemas::{Form, Status};

    fn key(b: u8) -> DataKey {
        DataKey {
            id: "ab".repeat(16),
            key: [b; KEY_BYTES],
        }
    }

    #[test]
    fn debug_output_leaves_keys_out() {
        let k = DataKey {
            id: "0".repeat(32),
            key: [0x5a; 32],
        };
        let s = format!("{k:?}");
        assert!(!s.contains("90") && !s.contains("5a"), "{s}");
    }

    proptest::proptest! {
        /// Rows sealed before the move to ring's AEAD must still open, and replay verify
        /// compares sealed bytes: ring's ChaCha20-Poly1305 gives RustCrypto's bytes exactly,
        /// and opens them, for any key, row version, account and content length.
        #[test]
        fn sealed_bytes_equal_rustcryptos_aead(
            k in proptest::prelude::any::<[u8; KEY_BYTES]>(),
            revision in 1i64..1_000_000,
            account in "[a-z_/]{1,40}",
            text in proptest::collection::vec(proptest::prelude::any::<char>(), 0..600),
        ) {
            use chacha20poly1305::aead::{Aead, Payload};
            use chacha20poly1305::{ChaCha20Poly1305, KeyInit};
            let mut row = crate::testrow();
            row.revision = revision;
            row.content = text.into_iter().collect();
            let data_key = DataKey { id: "cd".repeat(16), key: k };
            let mut sealed = row.clone();
            encrypt(&account, &mut sealed, &data_key);
            let mut plain = Vec::new();
            content(&row, &mut plain);
            let theirs = ChaCha20Poly1305::new(&k.into())
                .encrypt(
                    &nonce(&row).into(),
                    Payload { msg: &plain, aad: &aad(&account, &row) },
                )
                .expect("encrypts");
            let ours = &sealed.sealed.as_ref().expect("sealed").ciphertext.0;
            proptest::prop_assert_eq!(ours, &theirs);
            let mut opened = sealed.clone();
            blank(&mut opened);
            opened.sealed = sealed.sealed.clone();
            open(&account, &mut opened, &k).expect("opens");
            proptest::prop_assert_eq!(&opened.content, &row.content);
        }
    }

    #[test]
    fn nonces_differ_by_revision() {
        let mut r = crate::testrow();
        let a = nonce(&r);
        r.revision += 1;
        assert_ne!(a, nonce(&r));
    }

    #[test]
    fn sealed_rows_open_to_what_was_sealed_and_wire_bytes_is_exact() {
        let secret = LedgerSecret([7; 32]);
        let mut row = crate::testrow();
        let open_row = row.clone();
        mark(&secret, "t_a/user/u_1", &mut row, String::new());
        encrypt("t_a/user/u_1", &mut row, &key(1));
        let mut wire = Vec::new();
        row.encode_as(&mut wire, Form::Wire);
        assert_eq!(wire.len(), wire_bytes(&row));
        assert!(
            !wire.windows(5).any(|w| w == b"Porto"),
            "no content on the wire"
        );
        let mut back = Row::decode(&mut Reader::new(&wire)).unwrap();
        assert_eq!(back.content, "");
        open("t_a/user/u_1", &mut back, &key(1).key).unwrap();
        back.sealed = None;
        assert_eq!(back, open_row);
        // Wrong key, other account, other revision: refused.
        let mut other = row.clone();
        assert!(open("t_a/user/u_1", &mut other, &key(2).key).is_err());
        assert!(open("t_a/user/u_2", &mut row.clone(), &key(1).key).is_err());
        other.revision += 1;
        assert!(open("t_a/user/u_1", &mut other, &key(1).key).is_err());
        // The MAC is keyed: another secret gives another MAC.
        assert_ne!(
            mac(&secret, "t_a/user/u_1", &open_row),
            mac(&LedgerSecret([8; 32]), "t_a/user/u_1", &open_row)
        );
        // A tombstone's wire size.
        let mut t = row.clone();
        t.status = Status::Tombstoned;
        blank(&mut t);
        t.sealed.as_mut().unwrap().ciphertext = Bytes::default();
        let mut wire = Vec::new();
        t.encode_as(&mut wire, Form::Wire);
        assert_eq!(wire.len(), wire_bytes(&t));
    }
}
