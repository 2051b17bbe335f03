//! The vector projection's pure parts: collection names, point ids, the cm_payload_v1 payload
//! of a row, and the access filter of a query in Qdrant's REST JSON filter form — the one
//! filter model both backends read (the embedded engine deserializes it; the server backend
//! converts it).
//!
//! The payload carries no content text: providers return candidate ids, and rows are hydrated
//! from the view store and filtered again before use.

use chrono::{DateTime, Datelike, Timelike};
use kledger_schemas::{Kind, Row, SensitivityLevel, Status};
use serde_json::{Map, Value, json};

use crate::access::{Principal, SENSITIVE_READER_ROLE};

/// `schema_version` of every payload.
pub const SCHEMA_VERSION: &str = "cm_payload_v1";

/// The collection of an embedding space: `cm_<type>_<dim>_v<version>`.
pub fn collection_name(kind: &str, dim: usize, version: u32) -> String {
    format!("cm_{kind}_{dim}_v{version}")
}

/// The ledger's own kinds: what a search without a kinds filter looks among.
pub const LEDGER_KINDS: &[Kind] = &[Kind::Fact, Kind::Document, Kind::Trigger];

/// What the index does with a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Placement {
    /// Upsert the point (active rows, and superseded or closed ones marked by status).
    Upsert,
    /// Delete the point: tombstoned rows, and restricted and source rows (never indexed).
    Delete,
}

/// Where a row goes. Of the source rows only conversations are indexed (their summaries, for
/// bounded conversation retrieval; search_knowledge filters them out by kind); people,
/// calendar and screen rows never are.
pub fn placement(row: &Row) -> Placement {
    let unindexed_source = kledger_schemas::SourceKind::of(row.kind).is_some()
        && row.kind != kledger_schemas::Kind::Conversation;
    if row.status == Status::Tombstoned
        || row.sensitivity.level == SensitivityLevel::Restricted
        || unindexed_source
    {
        Placement::Delete
    } else {
        Placement::Upsert
    }
}

/// cm_payload_v1 `source_kind` for a source type.
pub fn source_kind(source_type: &str) -> &'static str {
    let t = source_type.to_ascii_lowercase();
    if t.contains("message") || t.contains("chat") || t.contains("transcript") {
        "message"
    } else if t.contains("wiki") {
        "wiki"
    } else if t.contains("web") || t.contains("url") {
        "web"
    } else if t.contains("code") || t.contains("repo") {
        "code"
    } else if t.contains("doc") || t.contains("pdf") || t.contains("file") {
        "document"
    } else {
        "artifact"
    }
}

/// Milliseconds in 400 Gregorian years (146,097 days): the calendar repeats after them.
const MS_PER_400_YEARS: i64 = 146_097 * 86_400_000;

/// ISO 8601 UTC (`2026-01-26T12:00:00.000Z`, millisecond precision) of a Unix time in ms.
///
/// chrono does the calendar; the text is written here. The year is a plain integer, at least
/// 4 characters wide (`10000-01-01…`, `-001-12-31…`), where chrono's own formats (`%Y`,
/// `to_rfc3339`) write `+10000` and `-0001`. Any `i64` is taken: chrono's times reach only
/// years -262,143 to 262,142, so the time is moved by whole 400-year cycles into [1970, 2370)
/// and the cycles are added back to the year.
pub fn iso8601(ms: i64) -> String {
    let cycles = ms.div_euclid(MS_PER_400_YEARS);
    // Always in chrono's range: [0, MS_PER_400_YEARS).
    let t = DateTime::from_timestamp_millis(ms.rem_euclid(MS_PER_400_YEARS)).unwrap_or_default();
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
        i64::from(t.year()) + 400 * cycles,
        t.month(),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.timestamp_subsec_millis()
    )
}

/// The embedding a point was made with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EmbeddingInfo {
    /// Model id.
    pub model: String,
    /// Dimension.
    pub dim: usize,
}

/// The point payload of `row`: cm_payload_v1 plus memory_id, kind, status, commit_seq and the
/// fields the read filters use (slot, subject scope, sensitivity, assertion class, validity).
/// `updated_at` is the record time of the commit that last changed the row.
pub fn payload(row: &Row, embedding: &EmbeddingInfo, updated_at_ms: i64) -> Map<String, Value> {
    // Built field by field (what `json!` would build, in the same order, without going through
    // serde for every value: this runs for every point the vector sink writes).
    fn object<const N: usize>(fields: [(&str, Value); N]) -> Value {
        Value::Object(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    }
    fn strings(v: &[String]) -> Value {
        Value::Array(v.iter().map(|s| Value::String(s.clone())).collect())
    }
    let t = &row.tenant;
    let importance = f64::from(row.curation_weight.clamp(-100, 100) + 100) / 200.0;
    let fields = [
        ("schema_version", Value::from(SCHEMA_VERSION)),
        ("tenant_id", Value::from(t.tenant_id.as_str())),
        ("team_id", Value::from(t.team_id.clone())),
        ("project_id", Value::from(t.project_id.clone())),
        ("agent_id", Value::from(t.agent_id.clone())),
        ("owner_kind", Value::from(t.owner_kind.as_str())),
        ("owner_id", Value::from(t.owner_id.as_str())),
        ("scope", Value::from("memory")),
        ("visibility", Value::from(row.visibility.as_str())),
        ("indexed", Value::Bool(true)),
        (
            "source_kind",
            Value::from(source_kind(&row.source.source_type)),
        ),
        ("source_type", Value::from(row.source.source_type.as_str())),
        ("source_id", Value::from(row.source.source_id.as_str())),
        (
            "chunk",
            object([
                ("chunk_id", Value::from(row.memory_id.as_str())),
                ("chunk_idx", Value::from(0)),
            ]),
        ),
        (
            "fingerprint",
            Value::String(format!("sha256:{}", row.content_hash)),
        ),
        ("created_at", Value::String(iso8601(row.recorded_at))),
        ("updated_at", Value::String(iso8601(updated_at_ms))),
        (
            "acl",
            object([
                ("read_team_ids", strings(&row.acl.read_team_ids)),
                ("read_agent_ids", strings(&row.acl.read_agent_ids)),
                ("read_role_ids", strings(&row.acl.read_role_ids)),
            ]),
        ),
        ("tags", strings(&row.tags)),
        ("lang", Value::from(row.lang.clone())),
        ("importance", Value::from(importance)),
        (
            "embedding",
            object([
                ("model", Value::from(embedding.model.as_str())),
                ("dim", Value::from(embedding.dim)),
                ("metric", Value::from("cosine")),
            ]),
        ),
        ("memory_id", Value::from(row.memory_id.as_str())),
        ("kind", Value::from(row.kind.as_str())),
        ("status", Value::from(row.status.as_str())),
        ("commit_seq", Value::from(row.commit_seq)),
        ("revision", Value::from(row.revision)),
        ("slot", Value::from(row.slot.clone())),
        ("subject_scope", Value::from(row.subject.scope.as_str())),
        ("sensitivity", Value::from(row.sensitivity.level.as_str())),
        ("assertion_class", Value::from(row.assertion_class.as_str())),
        ("valid_from", Value::from(row.valid_from)),
        ("valid_to", Value::from(row.valid_to)),
        ("expires_at", Value::from(row.expires_at)),
    ];
    match object(fields) {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// Keyword-indexed payload fields (every field a filter names); `tenant_id` is the tenant index.
pub const KEYWORD_FIELDS: &[&str] = &[
    "tenant_id",
    "team_id",
    "owner_kind",
    "owner_id",
    "visibility",
    "kind",
    "status",
    "sensitivity",
    "acl.read_team_ids",
    "acl.read_agent_ids",
    "acl.read_role_ids",
];
/// Bool-indexed payload fields.
pub const BOOL_FIELDS: &[&str] = &["indexed"];
/// Integer-indexed payload fields.
pub const INTEGER_FIELDS: &[&str] = &["valid_from", "commit_seq"];

fn is(key: &str, value: &str) -> Value {
    json!({"key": key, "match": {"value": value}})
}

/// The account a query reads: its tenant and owner.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AccountRef {
    /// Tenant.
    pub tenant_id: String,
    /// Owner kind (`user`, `team`, `agent`).
    pub owner_kind: String,
    /// Owner id.
    pub owner_id: String,
}

impl AccountRef {
    /// Parses `{tenant}/{owner_kind}/{owner_id}`.
    pub fn parse(account: &str) -> Option<Self> {
        let mut it = account.splitn(3, '/');
        let (t, k, o) = (it.next()?, it.next()?, it.next()?);
        Some(Self {
            tenant_id: t.to_owned(),
            owner_kind: k.to_owned(),
            owner_id: o.to_owned(),
        })
    }
}

/// The filter of a search by `p` in `account` over active rows of `kinds` (all when empty), in
/// Qdrant's REST JSON form. It states [`crate::access::may_read`] for indexed rows: the
/// account's owner reads everything of it; anyone else needs confidential + ACL or public +
/// team (or no team), and the sensitive reader role for sensitive rows. A principal of another
/// tenant matches nothing.
pub fn access_filter(p: &Principal, account: &AccountRef, kinds: &[Kind]) -> Value {
    access_filter_of(p, account, kinds, true)
}

/// [`access_filter`] over rows of every status but tombstoned when `active_only` is false: a
/// search at a past effective or record time, whose candidates were the active ones then
/// (it checks each against its version at that time after hydration).
pub fn access_filter_of(
    p: &Principal,
    account: &AccountRef,
    kinds: &[Kind],
    active_only: bool,
) -> Value {
    let mut must = vec![
        is("tenant_id", &account.tenant_id),
        is("owner_kind", &account.owner_kind),
        is("owner_id", &account.owner_id),
        json!({"key": "indexed", "match": {"value": true}}),
    ];
    if active_only {
        must.push(is("status", Status::Active.as_str()));
    }
    // No kinds named: the ledger's own (conversation summaries share the collection).
    let kinds = if kinds.is_empty() {
        LEDGER_KINDS
    } else {
        kinds
    };
    let k: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
    must.push(json!({"key": "kind", "match": {"any": k}}));
    if p.tenant_id != account.tenant_id {
        // Nothing crosses tenants: a condition no point meets.
        must.push(is("tenant_id", &p.tenant_id));
        return json!({ "must": must });
    }
    let owner = p.owner_kind.as_str() == account.owner_kind && p.owner_id == account.owner_id;
    let mut must_not = vec![is("sensitivity", SensitivityLevel::Restricted.as_str())];
    if owner {
        return json!({ "must": must, "must_not": must_not });
    }
    if !p.roles.iter().any(|r| r == SENSITIVE_READER_ROLE) {
        must_not.push(is("sensitivity", SensitivityLevel::Sensitive.as_str()));
    }
    let mut grants = Vec::new();
    if let Some(a) = &p.agent_id {
        grants.push(is("acl.read_agent_ids", a));
    }
    if let Some(t) = &p.team_id {
        grants.push(is("acl.read_team_ids", t));
    }
    if !p.roles.is_empty() {
        grants.push(json!({"key": "acl.read_role_ids", "match": {"any": p.roles}}));
    }
    let mut team = vec![json!({"is_null": {"key": "team_id"}})];
    if let Some(t) = &p.team_id {
        team.push(is("team_id", t));
    }
    let mut should = vec![json!({"must": [is("visibility", "public")], "should": team})];
    if !grants.is_empty() {
        should.push(json!({"must": [is("visibility", "confidential")], "should": grants}));
    }
    json!({ "must": must, "must_not": must_not, "should": should })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso8601_formats_utc() {
        assert_eq!(iso8601(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601(1_767_225_600_000), "2026-01-01T00:00:00.000Z");
        assert_eq!(iso8601(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(iso8601(-1), "1969-12-31T23:59:59.999Z");
        assert_eq!(iso8601(253_402_300_800_000), "10000-01-01T00:00:00.000Z");
        assert_eq!(iso8601(-62_167_219_200_001), "-001-12-31T23:59:59.999Z");
    }

    /// The civil-date algorithm chrono replaced (Howard Hinnant's), kept as the oracle.
    fn hand_iso8601(ms: i64) -> String {
        let secs = ms.div_euclid(1000);
        let millis = ms.rem_euclid(1000);
        let days = secs.div_euclid(86_400);
        let rem = secs.rem_euclid(86_400);
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = doy - (153 * mp + 2) / 5 + 1;
        let m = if mp < 10 { mp + 3 } else { mp - 9 };
        let y = yoe + era * 400 + i64::from(m <= 2);
        format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{millis:03}Z",
            rem / 3_600,
            rem % 3_600 / 60,
            rem % 60
        )
    }

    #[test]
    fn iso8601_edges_match_the_hand_algorithm() {
        assert!(DateTime::from_timestamp_millis(8_210_266_876_799_999).is_some());
        assert!(DateTime::from_timestamp_millis(8_210_266_876_800_000).is_none());
        assert!(DateTime::from_timestamp_millis(-8_334_601_228_800_000).is_some());
        assert!(DateTime::from_timestamp_millis(-8_334_601_228_800_001).is_none());
        const CYCLE: i64 = MS_PER_400_YEARS;
        let mut edges = vec![
            i64::MIN,
            i64::MIN + 1,
            i64::MAX,
            i64::MAX - 1,
            0,
            -1,
            1,
            (1 << 48) - 1,
            1 << 48,
            253_402_300_799_999,
            253_402_300_800_000,
            -62_167_219_200_000,
            -62_167_219_200_001,
            // The ends of chrono's own range (years -262,143 to 262,142).
            8_210_266_876_799_999,
            8_210_266_876_800_000,
            -8_334_601_228_800_000,
            -8_334_601_228_800_001,
        ];
        for k in [-3, -2, -1, 0, 1, 2, 3, 1_000] {
            for d in [-1, 0, 1] {
                edges.push(k * CYCLE + d);
            }
        }
        for ms in edges {
            assert_eq!(iso8601(ms), hand_iso8601(ms), "{ms}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]

        #[test]
        fn iso8601_matches_the_hand_algorithm_in_the_ulid_range(ms in 0i64..1 << 48) {
            proptest::prop_assert_eq!(iso8601(ms), hand_iso8601(ms));
        }

        #[test]
        fn iso8601_matches_the_hand_algorithm_for_any_i64(ms in proptest::prelude::any::<i64>()) {
            proptest::prop_assert_eq!(iso8601(ms), hand_iso8601(ms));
        }

        #[test]
        fn iso8601_matches_the_hand_algorithm_near_the_epoch(ms in -(1i64 << 44)..1 << 44) {
            proptest::prop_assert_eq!(iso8601(ms), hand_iso8601(ms));
        }
    }

    #[test]
    fn collection_names_follow_cm_payload_v1() {
        assert_eq!(collection_name("text", 1024, 1), "cm_text_1024_v1");
    }

    #[test]
    fn source_kinds_map_to_the_enum() {
        assert_eq!(source_kind("chat_message"), "message");
        assert_eq!(source_kind("document"), "document");
        assert_eq!(source_kind("system_of_record"), "artifact");
    }
}
