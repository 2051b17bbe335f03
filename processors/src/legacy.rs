//! cm_payload_v1's migration mapping of legacy collections (seed 000): which legacy Qdrant
//! collection becomes which agent and scope, and the cm_payload_v1 payload of a copied point.
//! Pure functions; `kledger migrate vectors` does the reading and writing.
//!
//! | legacy collection | payload |
//! |---|---|
//! | `helion_docs` | agent_id `agt_helion`, scope `docs` |
//! | `nutra_messages` | agent_id `agt_nutra`, scope `messages` |
//! | `druid_legal_kb` | agent_id `agt_druid`, scope `docs`, tags `legal_kb` |
//! | `nutra_food_knowledge` | agent_id `agt_nutra`, scope `docs`, tags `food_kb` |
//! | `<agent>_memory_items` | agent_id `agt_<agent>`, scope `memory` |
//! | `<agent>_artifacts` | agent_id `agt_<agent>`, scope `artifacts` |
//!
//! Exact names win over suffix patterns. The seed names no agent for the two patterns; the
//! prefix before the suffix is taken as the agent's slug (`helion_memory_items` →
//! `agt_helion`), which is how the exact names are built.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::ids::{to_hex, uuid_text};
use crate::payload::iso8601;

/// One mapping rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    /// An exact collection name, or `*_suffix`.
    pub pattern: String,
    /// The agent; for a `*_suffix` pattern without one, `agt_` + the collection's prefix.
    #[serde(default)]
    pub agent_id: Option<String>,
    /// cm_payload_v1 scope: docs | messages | memory | artifacts | signals.
    pub scope: String,
    /// Tags added to every point.
    #[serde(default)]
    pub tags: Vec<String>,
}

/// The seed's mapping table.
pub fn seed_rules() -> Vec<Rule> {
    let r = |pattern: &str, agent: Option<&str>, scope: &str, tags: &[&str]| Rule {
        pattern: pattern.into(),
        agent_id: agent.map(str::to_owned),
        scope: scope.into(),
        tags: tags.iter().map(|t| (*t).to_owned()).collect(),
    };
    vec![
        r("helion_docs", Some("agt_helion"), "docs", &[]),
        r("nutra_messages", Some("agt_nutra"), "messages", &[]),
        r("druid_legal_kb", Some("agt_druid"), "docs", &["legal_kb"]),
        r(
            "nutra_food_knowledge",
            Some("agt_nutra"),
            "docs",
            &["food_kb"],
        ),
        r("*_memory_items", None, "memory", &[]),
        r("*_artifacts", None, "artifacts", &[]),
    ]
}

/// What a collection maps to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapped {
    /// The agent.
    pub agent_id: Option<String>,
    /// The scope.
    pub scope: String,
    /// Tags to add.
    pub tags: Vec<String>,
}

/// The mapping of `collection` under `rules` (exact names first, then patterns in order).
pub fn map_collection(rules: &[Rule], collection: &str) -> Option<Mapped> {
    let mapped = |r: &Rule, agent: Option<String>| Mapped {
        agent_id: r.agent_id.clone().or(agent),
        scope: r.scope.clone(),
        tags: r.tags.clone(),
    };
    if let Some(r) = rules.iter().find(|r| r.pattern == collection) {
        return Some(mapped(r, None));
    }
    rules.iter().find_map(|r| {
        let suffix = r.pattern.strip_prefix('*')?;
        let prefix = collection.strip_suffix(suffix)?;
        (!prefix.is_empty()).then(|| mapped(r, Some(format!("agt_{prefix}"))))
    })
}

/// The source kind a scope implies when the legacy payload names none.
pub fn source_kind_of(scope: &str) -> &'static str {
    match scope {
        "messages" | "memory" => "message",
        "artifacts" => "artifact",
        _ => "document",
    }
}

/// Defaults for fields a legacy payload lacks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Defaults {
    /// `tenant_id` (required by cm_payload_v1).
    pub tenant_id: String,
    /// `team_id`.
    pub team_id: Option<String>,
    /// `project_id`.
    pub project_id: Option<String>,
    /// Visibility when the legacy payload has none.
    pub visibility: String,
    /// Embedding model id when the legacy payload has none.
    pub model: String,
}

/// The deterministic point id of a legacy point: UUID bits from SHA-256 over the collection
/// and the legacy id (re-running a migration overwrites, never duplicates).
pub fn point_id(collection: &str, legacy_id: &str) -> u128 {
    let mut h = Sha256::new();
    h.update((collection.len() as u64).to_be_bytes());
    h.update(collection.as_bytes());
    h.update(legacy_id.as_bytes());
    let d = h.finalize();
    let mut b = [0u8; 16];
    b.copy_from_slice(&d[..16]);
    b[6] = (b[6] & 0x0F) | 0x80; // version 8 (custom)
    b[8] = (b[8] & 0x3F) | 0x80; // RFC 4122 variant
    u128::from_be_bytes(b)
}

fn text<'a>(p: &'a Map<String, Value>, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|k| p.get(*k).and_then(Value::as_str))
}

/// The cm_payload_v1 payload of a legacy point of `collection` (mapped by `m`) with legacy
/// payload `p`, legacy id `legacy_id` and a `dim`-dimensional vector. Fields the legacy payload
/// carries in cm_payload_v1 form are kept; content text (`text`, `content`, `page_content`,
/// `document`) is not copied (providers return candidate ids only); the legacy collection and
/// id are kept under `legacy`.
///
/// Long on purpose: one field of cm_payload_v1 after another, each with its legacy source.
pub fn payload(
    collection: &str,
    m: &Mapped,
    p: &Map<String, Value>,
    legacy_id: &str,
    dim: usize,
    d: &Defaults,
) -> Map<String, Value> {
    let s = |keys: &[&str]| text(p, keys).map(str::to_owned);
    let agent = m.agent_id.clone().or_else(|| s(&["agent_id"]));
    let (owner_kind, owner_id) = match (s(&["owner_kind"]), s(&["owner_id"])) {
        (Some(k), Some(i)) => (k, i),
        _ => match &agent {
            Some(a) => ("agent".to_owned(), a.clone()),
            None => ("team".to_owned(), d.team_id.clone().unwrap_or_default()),
        },
    };
    let fingerprint = s(&["fingerprint", "content_hash", "hash"]).unwrap_or_else(|| {
        let basis = text(p, &["text", "content", "page_content", "document"])
            .map(str::to_owned)
            .unwrap_or_else(|| format!("{collection}/{legacy_id}"));
        format!("sha256:{}", to_hex(&Sha256::digest(basis.as_bytes())))
    });
    let created_at = match p.get("created_at").or_else(|| p.get("timestamp")) {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Number(n)) => iso8601(n.as_i64().unwrap_or(0)),
        _ => iso8601(0),
    };
    let mut tags: Vec<String> = p
        .get("tags")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    for t in &m.tags {
        if !tags.contains(t) {
            tags.push(t.clone());
        }
    }
    let acl_list = |k: &str| {
        p.get("acl")
            .and_then(|a| a.get(k))
            .cloned()
            .unwrap_or_else(|| json!([]))
    };
    let chunk_idx = p
        .get("chunk")
        .and_then(|c| c.get("chunk_idx"))
        .or_else(|| p.get("chunk_idx"))
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let chunk_id = p
        .get("chunk")
        .and_then(|c| c.get("chunk_id"))
        .or_else(|| p.get("chunk_id"))
        .and_then(Value::as_str)
        .map(str::to_owned)
        .unwrap_or_else(|| format!("chk_{}", uuid_text(point_id(collection, legacy_id))));
    let mut out = json!({
        "schema_version": "cm_payload_v1",
        "tenant_id": s(&["tenant_id"]).unwrap_or_else(|| d.tenant_id.clone()),
        "team_id": s(&["team_id"]).or_else(|| d.team_id.clone()),
        "project_id": s(&["project_id"]).or_else(|| d.project_id.clone()),
        "agent_id": agent,
        "owner_kind": owner_kind,
        "owner_id": owner_id,
        "scope": m.scope,
        "visibility": s(&["visibility"]).unwrap_or_else(|| d.visibility.clone()),
        "indexed": p.get("indexed").and_then(Value::as_bool).unwrap_or(true),
        "source_kind": s(&["source_kind"]).unwrap_or_else(|| source_kind_of(&m.scope).to_owned()),
        "source_id": s(&["source_id", "doc_id", "document_id", "message_id"])
            .unwrap_or_else(|| format!("legacy:{collection}")),
        "chunk": {"chunk_id": chunk_id, "chunk_idx": chunk_idx},
        "fingerprint": fingerprint,
        "created_at": created_at,
        "acl": {
            "read_team_ids": acl_list("read_team_ids"),
            "read_agent_ids": acl_list("read_agent_ids"),
            "read_role_ids": acl_list("read_role_ids"),
        },
        "tags": tags,
        "embedding": {
            "model": s(&["embedding_model"])
                .or_else(|| p.get("embedding").and_then(|e| e.get("model")).and_then(Value::as_str).map(str::to_owned))
                .unwrap_or_else(|| d.model.clone()),
            "dim": dim,
            "metric": "cosine",
        },
        "legacy": {"collection": collection, "point_id": legacy_id},
    });
    let o = out.as_object_mut().expect("a JSON object");
    for k in ["lang", "importance", "ttl_days", "updated_at", "channel_id"] {
        if let Some(v) = p.get(k) {
            o.insert(k.to_owned(), v.clone());
        }
    }
    std::mem::take(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defaults() -> Defaults {
        Defaults {
            tenant_id: "t_daarion".into(),
            team_id: Some("team_core".into()),
            project_id: None,
            visibility: "private".into(),
            model: "legacy-model".into(),
        }
    }

    #[test]
    fn the_seed_table_maps_collections() {
        let rules = seed_rules();
        let m = |c: &str| map_collection(&rules, c);
        let got = m("helion_docs").unwrap();
        assert_eq!(
            (got.agent_id.as_deref(), got.scope.as_str()),
            (Some("agt_helion"), "docs")
        );
        assert_eq!(m("druid_legal_kb").unwrap().tags, ["legal_kb"]);
        assert_eq!(m("nutra_food_knowledge").unwrap().tags, ["food_kb"]);
        assert_eq!(m("nutra_messages").unwrap().scope, "messages");
        let mem = m("helion_memory_items").unwrap();
        assert_eq!(
            (mem.agent_id.as_deref(), mem.scope.as_str()),
            (Some("agt_helion"), "memory")
        );
        assert_eq!(m("druid_artifacts").unwrap().scope, "artifacts");
        assert_eq!(m("_memory_items"), None);
        assert_eq!(m("random_stuff"), None);
    }

    #[test]
    fn a_legacy_payload_becomes_cm_payload_v1_without_its_text() {
        let rules = seed_rules();
        let m = map_collection(&rules, "druid_legal_kb").unwrap();
        let legacy = json!({"text": "Clause 4 says...", "doc_id": "doc_01HQ", "lang": "uk",
            "tags": ["contracts"], "chunk_idx": 3, "created_at": "2025-01-01T00:00:00Z"});
        let p = payload(
            "druid_legal_kb",
            &m,
            legacy.as_object().unwrap(),
            "17",
            1024,
            &defaults(),
        );
        assert_eq!(p["schema_version"], "cm_payload_v1");
        assert_eq!(p["tenant_id"], "t_daarion");
        assert_eq!(p["agent_id"], "agt_druid");
        assert_eq!(
            (p["owner_kind"].as_str(), p["owner_id"].as_str()),
            (Some("agent"), Some("agt_druid"))
        );
        assert_eq!(p["scope"], "docs");
        assert_eq!(p["source_kind"], "document");
        assert_eq!(p["source_id"], "doc_01HQ");
        assert_eq!(p["tags"], json!(["contracts", "legal_kb"]));
        assert_eq!(p["chunk"]["chunk_idx"], 3);
        assert_eq!(p["embedding"]["dim"], 1024);
        assert_eq!(p["lang"], "uk");
        assert_eq!(p["visibility"], "private");
        assert!(p["fingerprint"].as_str().unwrap().starts_with("sha256:"));
        assert!(
            !serde_json::to_string(&p).unwrap().contains("Clause 4"),
            "no text copied"
        );
        assert_eq!(
            p["legacy"],
            json!({"collection": "druid_legal_kb", "point_id": "17"})
        );
    }

    #[test]
    fn point_ids_are_deterministic_and_distinct_per_collection() {
        let a = uuid_text(point_id("helion_docs", "1"));
        assert_eq!(a, uuid_text(point_id("helion_docs", "1")));
        assert_ne!(a, uuid_text(point_id("nutra_messages", "1")));
        assert_eq!(a.len(), 36);
        assert_eq!(&a[14..15], "8");
    }
}
