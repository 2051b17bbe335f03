//! Size limits of the record contract, in one place.
//!
//! The `.avsc` docs quote these numbers; validation in `kledger-processors` enforces them and
//! answers `rejected` with a stable code when one is exceeded. Lengths are counted in Unicode
//! scalar values (`str::chars`) unless the name says bytes.

/// `action_id`: 1..=256 chars.
pub const ACTION_ID_CHARS_MAX: usize = 256;
/// Identifier parts of the tenant block (`tenant_id`, `owner_id`, ...): 1..=128 chars.
pub const ID_CHARS_MAX: usize = 128;
/// `source.source_id`: 1..=256 chars.
pub const SOURCE_ID_CHARS_MAX: usize = 256;
/// `source.source_type`: 1..=64 chars.
pub const SOURCE_TYPE_CHARS_MAX: usize = 64;
/// `source.source_version`: ..=64 chars.
pub const SOURCE_VERSION_CHARS_MAX: usize = 64;
/// `extractor.name` and `extractor.version`: 1..=64 chars.
pub const EXTRACTOR_CHARS_MAX: usize = 64;
/// Ops per intent: 1..=16.
pub const OPS_MAX: usize = 16;
/// `content`: one line, 1..=4,000 chars.
pub const CONTENT_CHARS_MAX: usize = 4_000;
/// `body` (documents only): 1..=24,000 chars.
pub const BODY_CHARS_MAX: usize = 24_000;
/// `condition` (triggers only): at most 12 keys.
pub const CONDITION_KEYS_MAX: usize = 12;
/// `condition`: keys and values together at most 8,000 chars.
pub const CONDITION_CHARS_MAX: usize = 8_000;
/// Evidence items per op, and per row after `attach_evidence`.
pub const EVIDENCE_MAX: usize = 32;
/// Quotes across an op's (or a row's) evidence.
pub const QUOTES_MAX: usize = 8;
/// Quote chars across an op's (or a row's) evidence.
pub const QUOTE_CHARS_MAX: usize = 8_000;
/// Short strings: tags, labels, lang, slot, reasons' codes, evidence ids, locator headings.
pub const SHORT_CHARS_MAX: usize = 256;
/// Tags per op; sensitivity labels per op.
pub const TAGS_MAX: usize = 16;
/// Entries in each ACL list.
pub const ACL_ENTRIES_MAX: usize = 64;
/// Targets in `planned_against.targets` and in one `amend`.
pub const TARGETS_MAX: usize = 16;
/// Free-text reasons (`close.reason`, `purge.reason`, `write_reason` notes): ..=1,000 chars.
pub const REASON_CHARS_MAX: usize = 1_000;
/// Embedding dimensions: 1..=4,096.
pub const EMBEDDING_DIM_MAX: usize = 4_096;
/// `curation_weight` range.
pub const CURATION_WEIGHT_MIN: i32 = -100;
/// `curation_weight` range.
pub const CURATION_WEIGHT_MAX: i32 = 100;
/// Timestamps (ms since the Unix epoch) must be in `0..TIMESTAMP_MS_END`: the 48-bit range of a
/// ULID's time part (year 10889).
pub const TIMESTAMP_MS_END: i64 = 1 << 48;
/// The record budget by default (`limits.record_bytes_max`): the largest record value kledger
/// accepts or writes on any topic, 1 MiB.
pub const RECORD_BYTES_DEFAULT: usize = 1 << 20;
/// The smallest record budget allowed: every tombstone, receipt and view fits in it, so a purge
/// can always be split and every intent answered.
pub const RECORD_BYTES_MIN: usize = 512 << 10;
/// The largest record budget allowed, and the most any decoder reads: 16 MiB.
pub const RECORD_BYTES_CEILING: usize = 16 << 20;
/// Bytes a Kafka record may take besides its value (key, headers, record and batch framing):
/// the broker and client limits kledger sets are the budget plus this.
pub const RECORD_OVERHEAD_BYTES: usize = 64 << 10;
