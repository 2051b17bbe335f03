//! `openapi.json` against the request and response types: every route's query parameters,
//! request body and answer name the fields (at every depth) the Rust types read and write, no
//! more and no fewer. The types' JSON Schemas come from `schemars` (the derive the MCP tools'
//! arguments use too), so a field added, renamed or dropped in a type fails here until the
//! description says the same.

use std::collections::BTreeSet;

use schemars::JsonSchema;
use serde_json::Value;

use super::OPENAPI;
use super::compat::{LongTermAnswer, LongTermParams};
use super::conversations::{ConversationAnswer, ConversationQuery};
use super::episodes::{EpisodeParams, EpisodesAnswer};
use super::ingress::{IngressAnswer, IngressParams, SourceParams};
use super::purges::PurgeReceipt;
use super::read::{PlaybookAnswer, ProfileAnswer, ProfileParams};
use super::search::{SearchAnswer, SearchRequest};
use super::semantic::{FeatureParams, FeaturesAnswer};
use super::timeline::{TimelineAnswer, TimelineParams};

/// `schema` with a `$ref` followed within `root`.
fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    match schema.get("$ref").and_then(Value::as_str) {
        Some(r) => root
            .pointer(r.trim_start_matches('#'))
            .map_or(schema, |s| resolve(s, root)),
        None => schema,
    }
}

/// The field names an object schema declares, at every depth (`a`, `a.b`, `list.[].c`).
fn names(schema: &Value, root: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    let schema = resolve(schema, root);
    for key in ["anyOf", "oneOf", "allOf"] {
        for s in schema
            .get(key)
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            names(s, root, prefix, out);
        }
    }
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (k, v) in props {
            let p = format!("{prefix}{k}");
            out.insert(p.clone());
            names(v, root, &format!("{p}."), out);
        }
    }
    if let Some(items) = schema.get("items") {
        names(items, root, &format!("{prefix}[]."), out);
    }
}

/// The field names of type `T`'s JSON Schema.
fn of_type<T: JsonSchema>() -> BTreeSet<String> {
    let schema = serde_json::to_value(schemars::schema_for!(T)).unwrap();
    let mut out = BTreeSet::new();
    names(&schema, &schema, "", &mut out);
    out
}

fn doc() -> Value {
    serde_json::from_str(OPENAPI).unwrap()
}

/// The query parameters `openapi.json` declares for `method path`.
fn query_params(doc: &Value, method: &str, path: &str) -> BTreeSet<String> {
    doc["paths"][path][method]["parameters"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["in"] == "query")
        .filter_map(|p| p["name"].as_str().map(str::to_owned))
        .collect()
}

/// The field names of the JSON answer `openapi.json` declares for `method path` with `status`.
fn answer(doc: &Value, method: &str, path: &str, status: &str) -> BTreeSet<String> {
    let schema =
        &doc["paths"][path][method]["responses"][status]["content"]["application/json"]["schema"];
    assert!(
        schema.is_object(),
        "{method} {path} {status}: no JSON answer"
    );
    let mut out = BTreeSet::new();
    names(schema, doc, "", &mut out);
    out
}

/// The field names of the JSON request body `openapi.json` declares for `method path`.
fn body(doc: &Value, method: &str, path: &str) -> BTreeSet<String> {
    let schema =
        &doc["paths"][path][method]["requestBody"]["content"]["application/json"]["schema"];
    let mut out = BTreeSet::new();
    names(schema, doc, "", &mut out);
    out
}

fn same(what: &str, described: BTreeSet<String>, typed: BTreeSet<String>) -> Option<String> {
    (described != typed).then(|| {
        format!(
            "{what}: only in openapi.json {:?}; only in the type {:?}",
            described.difference(&typed).collect::<Vec<_>>(),
            typed.difference(&described).collect::<Vec<_>>()
        )
    })
}

#[test]
fn openapi_json_names_the_fields_the_types_read_and_write() {
    let d = doc();
    let checks = [
        same(
            "GET /v1/profile query",
            query_params(&d, "get", "/v1/profile"),
            of_type::<ProfileParams>(),
        ),
        same(
            "GET /v1/profile 200",
            answer(&d, "get", "/v1/profile", "200"),
            of_type::<ProfileAnswer>(),
        ),
        same(
            "GET /v1/playbooks/{id} query",
            query_params(&d, "get", "/v1/playbooks/{id}"),
            of_type::<ProfileParams>(),
        ),
        same(
            "GET /v1/playbooks/{id} 200",
            answer(&d, "get", "/v1/playbooks/{id}", "200"),
            of_type::<PlaybookAnswer>(),
        ),
        same(
            "GET /v1/entities/{entity}/timeline query",
            query_params(&d, "get", "/v1/entities/{entity}/timeline"),
            of_type::<TimelineParams>(),
        ),
        same(
            "GET /v1/entities/{entity}/timeline 200",
            answer(&d, "get", "/v1/entities/{entity}/timeline", "200"),
            of_type::<TimelineAnswer>(),
        ),
        same(
            "POST /v1/intents query",
            query_params(&d, "post", "/v1/intents"),
            of_type::<IngressParams>(),
        ),
        same(
            "POST /v1/intents 200",
            answer(&d, "post", "/v1/intents", "200"),
            of_type::<IngressAnswer>(),
        ),
        same(
            "POST /v1/intents 202",
            answer(&d, "post", "/v1/intents", "202"),
            of_type::<IngressAnswer>(),
        ),
        same(
            "POST /v1/sources/{kind} query",
            query_params(&d, "post", "/v1/sources/{kind}"),
            of_type::<SourceParams>(),
        ),
        same(
            "POST /v1/sources/{kind} 200",
            answer(&d, "post", "/v1/sources/{kind}", "200"),
            of_type::<IngressAnswer>(),
        ),
        same(
            "POST /v1/search body",
            body(&d, "post", "/v1/search"),
            of_type::<SearchRequest>(),
        ),
        same(
            "POST /v1/search 200",
            answer(&d, "post", "/v1/search", "200"),
            of_type::<SearchAnswer>(),
        ),
        same(
            "POST /v1/conversations/search body",
            body(&d, "post", "/v1/conversations/search"),
            of_type::<ConversationQuery>(),
        ),
        same(
            "POST /v1/conversations/search 200",
            answer(&d, "post", "/v1/conversations/search", "200"),
            of_type::<ConversationAnswer>(),
        ),
        same(
            "GET /v1/semantic/features query",
            query_params(&d, "get", "/v1/semantic/features"),
            of_type::<FeatureParams>(),
        ),
        same(
            "GET /v1/semantic/features 200",
            answer(&d, "get", "/v1/semantic/features", "200"),
            of_type::<FeaturesAnswer>(),
        ),
        same(
            "GET /v1/episodes query",
            query_params(&d, "get", "/v1/episodes"),
            of_type::<EpisodeParams>(),
        ),
        same(
            "GET /v1/episodes 200",
            answer(&d, "get", "/v1/episodes", "200"),
            of_type::<EpisodesAnswer>(),
        ),
        same(
            "GET /v1/compat/long_term query",
            query_params(&d, "get", "/v1/compat/long_term"),
            of_type::<LongTermParams>(),
        ),
        same(
            "GET /v1/compat/long_term 200",
            answer(&d, "get", "/v1/compat/long_term", "200"),
            of_type::<LongTermAnswer>(),
        ),
        same(
            "GET /v1/purges/{action_id} query",
            query_params(&d, "get", "/v1/purges/{action_id}"),
            of_type::<super::AccountParam>(),
        ),
        same(
            "GET /v1/purges/{action_id} 200",
            answer(&d, "get", "/v1/purges/{action_id}", "200"),
            of_type::<PurgeReceipt>(),
        ),
    ];
    let differ: Vec<String> = checks.into_iter().flatten().collect();
    assert!(
        differ.is_empty(),
        "openapi.json differs from the types: {differ:#?}"
    );
}

#[test]
fn the_check_sees_a_field_the_description_lacks() {
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Answer {
        results: Vec<Item>,
        extra: Option<i64>,
    }
    #[derive(schemars::JsonSchema)]
    #[allow(dead_code)]
    struct Item {
        memory_id: String,
    }
    let described: Value = serde_json::json!({
        "type": "object",
        "properties": {"results": {"type": "array", "items": {"type": "object", "properties": {"memory_id": {"type": "string"}, "score": {"type": "number"}}}}}
    });
    let mut got = BTreeSet::new();
    names(&described, &described, "", &mut got);
    let diff = same("t", got, of_type::<Answer>()).expect("they differ");
    assert!(
        diff.contains("results.[].score") && diff.contains("extra"),
        "{diff}"
    );
}
