//! `TestRegistry`: a small in-process implementation of the Confluent Schema Registry REST API
//! subset kledger uses — **not Confluent's server**. No Confluent-compatible registry server is
//! available from this machine's package registries (crates.io, PyPI, npm, Debian): Karapace
//! is not on PyPI, Confluent's registry and Apicurio ship through Maven repositories, and the
//! npm `schema-registry` needs ZooKeeper and has compatibility checks disabled. So the
//! registry path is tested against this, named as what it is.
//!
//! What it does, as Confluent's does: `POST /subjects/{s}/versions` (the same schema under any
//! subject gets the same global id; a schema the subject already has answers its id; otherwise
//! the subject's compatibility level is enforced, 409 when broken), `POST
//! /compatibility/subjects/{s}/versions/latest` (`{"is_compatible"}`, 404 / 40401 for an
//! unknown subject), `GET /schemas/ids/{id}` (404 / 40403), `GET /subjects`, `PUT
//! /config/{s}` (`BACKWARD` by default, `NONE`, `FORWARD`, `FULL`). Compatibility uses
//! apache-avro's schema resolution rules (`SchemaCompatibility::can_read`).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use apache_avro::Schema;
use apache_avro::schema_compatibility::SchemaCompatibility;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use serde_json::{Value, json};

#[derive(Debug, Default)]
struct Inner {
    /// id → schema text (the first text registered for that canonical form).
    texts: BTreeMap<u32, String>,
    /// canonical form → id.
    ids: BTreeMap<String, u32>,
    /// subject → ids by version.
    subjects: BTreeMap<String, Vec<u32>>,
    /// subject → compatibility level.
    levels: BTreeMap<String, String>,
    /// `GET /schemas/ids/{id}` requests answered.
    id_lookups: u64,
}

/// The registry's state, shared with the test that runs it.
#[derive(Debug, Clone, Default)]
pub struct TestRegistry {
    inner: Arc<Mutex<Inner>>,
}

fn error(status: StatusCode, code: u32, message: &str) -> Response {
    (
        status,
        axum::Json(json!({"error_code": code, "message": message})),
    )
        .into_response()
}

/// The schema text and its parse, or why the body has none (answered 422 / 42201).
fn parse_body(body: &str) -> Result<(String, Schema), String> {
    let v: Value = serde_json::from_str(body).map_err(|_| "bad json".to_owned())?;
    let text = v["schema"].as_str().ok_or("no schema")?.to_owned();
    let schema = Schema::parse_str(&text).map_err(|e| e.to_string())?;
    Ok((text, schema))
}

fn unprocessable(why: &str) -> Response {
    error(StatusCode::UNPROCESSABLE_ENTITY, 42201, why)
}

/// Whether `new` may follow `old` under `level`.
fn compatible(level: &str, old: &Schema, new: &Schema) -> bool {
    let backward = || SchemaCompatibility::can_read(old, new).is_ok();
    let forward = || SchemaCompatibility::can_read(new, old).is_ok();
    match level {
        "NONE" => true,
        "FORWARD" | "FORWARD_TRANSITIVE" => forward(),
        "FULL" | "FULL_TRANSITIVE" => backward() && forward(),
        _ => backward(),
    }
}

impl Inner {
    fn level(&self, subject: &str) -> String {
        self.levels
            .get(subject)
            .cloned()
            .unwrap_or_else(|| "BACKWARD".into())
    }

    fn latest(&self, subject: &str) -> Option<Schema> {
        let id = self.subjects.get(subject)?.last()?;
        Schema::parse_str(self.texts.get(id)?).ok()
    }
}

async fn register(
    State(r): State<TestRegistry>,
    Path(subject): Path<String>,
    body: String,
) -> Response {
    let (text, schema) = match parse_body(&body) {
        Ok(x) => x,
        Err(e) => return unprocessable(&e),
    };
    let canonical = schema.canonical_form();
    let mut g = r.inner.lock().unwrap();
    let known = g.ids.get(&canonical).copied();
    if let Some(id) = known
        && g.subjects.get(&subject).is_some_and(|v| v.contains(&id))
    {
        return axum::Json(json!({ "id": id })).into_response();
    }
    if let Some(old) = g.latest(&subject)
        && !compatible(&g.level(&subject), &old, &schema)
    {
        return error(
            StatusCode::CONFLICT,
            409,
            "Schema being registered is incompatible with an earlier schema",
        );
    }
    let id = known.unwrap_or_else(|| {
        let id = g.texts.len() as u32 + 1;
        g.texts.insert(id, text);
        g.ids.insert(canonical, id);
        id
    });
    g.subjects.entry(subject).or_default().push(id);
    axum::Json(json!({ "id": id })).into_response()
}

async fn check(
    State(r): State<TestRegistry>,
    Path(subject): Path<String>,
    body: String,
) -> Response {
    let (_, schema) = match parse_body(&body) {
        Ok(x) => x,
        Err(e) => return unprocessable(&e),
    };
    let g = r.inner.lock().unwrap();
    match g.latest(&subject) {
        None => error(StatusCode::NOT_FOUND, 40401, "Subject not found"),
        Some(old) => axum::Json(json!({
            "is_compatible": compatible(&g.level(&subject), &old, &schema)
        }))
        .into_response(),
    }
}

async fn by_id(State(r): State<TestRegistry>, Path(id): Path<u32>) -> Response {
    let mut g = r.inner.lock().unwrap();
    g.id_lookups += 1;
    match g.texts.get(&id) {
        Some(t) => axum::Json(json!({ "schema": t })).into_response(),
        None => error(StatusCode::NOT_FOUND, 40403, "Schema not found"),
    }
}

async fn subjects(State(r): State<TestRegistry>) -> Response {
    let g = r.inner.lock().unwrap();
    axum::Json(g.subjects.keys().cloned().collect::<Vec<_>>()).into_response()
}

async fn set_level(
    State(r): State<TestRegistry>,
    Path(subject): Path<String>,
    body: String,
) -> Response {
    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    let Some(level) = v["compatibility"].as_str() else {
        return error(StatusCode::UNPROCESSABLE_ENTITY, 42203, "no compatibility");
    };
    r.inner
        .lock()
        .unwrap()
        .levels
        .insert(subject, level.to_owned());
    axum::Json(json!({ "compatibility": level })).into_response()
}

impl TestRegistry {
    /// Serves the registry on 127.0.0.1 (a free port) on `rt`; returns its base URL.
    pub fn serve(&self, rt: &tokio::runtime::Runtime) -> String {
        let app = Router::new()
            .route("/subjects", get(subjects))
            .route("/subjects/{subject}/versions", post(register))
            .route(
                "/compatibility/subjects/{subject}/versions/latest",
                post(check),
            )
            .route("/schemas/ids/{id}", get(by_id))
            .route("/config/{subject}", put(set_level))
            .with_state(self.clone());
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        rt.spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        format!("http://{addr}")
    }

    /// Subjects with their ids by version.
    pub fn subjects(&self) -> BTreeMap<String, Vec<u32>> {
        self.inner.lock().unwrap().subjects.clone()
    }

    /// `GET /schemas/ids/{id}` requests answered so far.
    pub fn id_lookups(&self) -> u64 {
        self.inner.lock().unwrap().id_lookups
    }

    /// Registers `schema` under `subject` directly (as another producer would).
    pub fn put(&self, subject: &str, schema: &str) -> u32 {
        let parsed = Schema::parse_str(schema).unwrap();
        let mut g = self.inner.lock().unwrap();
        let id = g.texts.len() as u32 + 1;
        g.texts.insert(id, schema.to_owned());
        g.ids.insert(parsed.canonical_form(), id);
        g.subjects.entry(subject.to_owned()).or_default().push(id);
        id
    }
}
