//! The owner-scoped read API (HTTP, JSON), under `/v1`.
//!
//! Every call carries `Authorization: Bearer <token>`; the token names a [`Principal`]
//! (`api.principals` in the configuration). Every call reads one account: the principal's own
//! unless `account=` names another account of the same tenant. Rows are hydrated from the
//! view store and filtered by [`kledger_processors::access::may_read`] before anything is
//! returned; outputs are bounded.
//!
//! - [`read`]: `GET /v1/profile`, `GET /v1/playbooks/{id}`, `GET /v1/export`; [`timeline`]:
//!   `GET /v1/entities/{ref}/timeline` over the sources the caller names; [`at`]: when a read looks (`as_of`, `known_at`) and read-your-writes
//!   (`min_commit_seq`).
//! - [`search`]: `POST /v1/search` (search_knowledge); [`conversations`]: `POST
//!   /v1/conversations/search` (bounded conversation retrieval, off by default).
//! - [`ingress`]: `POST /v1/intents`, `POST /v1/sources/{kind}`; [`receipts`]: the one receipts reader its waits share.
//! - [`semantic`]: `GET /v1/semantic/features` (rows as MemMachine semantic features).
//! - [`purges`]: `GET /v1/purges/{action_id}` (a purge receipt: each copy's state).
//! - `GET /v1/openapi.json`: the OpenAPI description (`openapi.json` next to this file).
//!
//! Errors are `{"error": {"code", "message"}}` with stable codes (docs/api.md).

pub mod at;
pub mod compat;
pub mod conflicts;
pub mod conversations;
pub mod episodes;
pub mod ingress;
pub mod policy;
pub mod purges;
pub mod read;
pub mod receipts;
pub mod search;
pub mod semantic;
pub mod timeline;
pub mod waits;

#[cfg(test)]
mod openapi_check;

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{FromRequestParts, State};
use axum::http::request::Parts;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use kledger_processors::access::{Principal, may_address};
use kledger_state::ViewStore;
use serde::Deserialize;

use kledger_runtime::config::Config;
use kledger_runtime::metrics as m;

/// The OpenAPI description.
pub const OPENAPI: &str = include_str!("openapi.json");

/// Shared state of the API handlers.
#[derive(Clone)]
pub struct Api {
    /// Configuration.
    pub config: Arc<Config>,
    /// The view store the reads hydrate from (its active generation).
    pub views: Arc<kledger_runtime::generations::Live<ViewStore>>,
    /// The sources store the timeline reads people, conversations, calendar and screen from
    /// (none: this process has none, and those sources answer `offline`).
    pub sources: Option<Arc<kledger_runtime::generations::Live<ViewStore>>>,
    /// Partition count of the intents topic.
    pub partitions: i32,
    /// How records are framed and read (single-object, or a schema registry's ids).
    pub codec: Arc<kledger_kafka::codec::Codec>,
    /// The ingress producer (created on first use).
    pub producer: Arc<std::sync::OnceLock<rdkafka::producer::FutureProducer>>,
    /// The vector projection search queries, once it is open (none: this process has no
    /// vector index; search answers 503 either way until it is open).
    pub search: Option<kledger_vectors::SearchSlot>,
    /// Exports running now (at most `api.exports_max`, `api.exports_per_principal_max` each).
    pub exports: Arc<waits::Shares>,
    /// Requests waiting now, for a `min_commit_seq` or an ingress receipt (at most
    /// `api.waits_max`, `api.waits_per_principal_max` each).
    pub waits: Arc<waits::Shares>,
    /// Requests in flight now (at most `api.requests_per_principal_max` each).
    pub requests: Arc<waits::Shares>,
    /// This process's status: whether its replicas can answer yet.
    pub status: Arc<kledger_runtime::status::Status>,
    /// The receipts reader ingress waits share.
    pub receipts: Arc<receipts::Receipts>,
    /// The processor's state, when this process runs the processor (purge receipts read its
    /// erasures and its queue of destroyed keys).
    pub state: Option<Arc<kledger_state::RocksStore>>,
    /// The threads that run searches' keyword queries beside their embedding.
    pub keywords: Arc<search::KeywordThreads>,
}

impl Api {
    /// The API over `views` (and `search`, when this process searches), its shares bounded as
    /// `config.api` says.
    pub fn new(
        config: Arc<Config>,
        views: Arc<kledger_runtime::generations::Live<ViewStore>>,
        partitions: i32,
        codec: Arc<kledger_kafka::codec::Codec>,
        search: Option<kledger_vectors::SearchSlot>,
        state: Option<Arc<kledger_state::RocksStore>>,
    ) -> Self {
        let a = &config.api;
        Self {
            exports: waits::Shares::new(a.exports_per_principal_max, a.exports_max),
            waits: waits::Shares::new(a.waits_per_principal_max, a.waits_max),
            requests: waits::Shares::new(a.requests_per_principal_max, usize::MAX),
            status: Arc::default(),
            config,
            views,
            sources: None,
            partitions,
            codec,
            producer: Arc::default(),
            search,
            receipts: Arc::default(),
            state,
            keywords: Arc::default(),
        }
    }
}

impl Api {
    /// The API reading source documents from `sources`.
    pub fn with_sources(
        mut self,
        sources: Option<Arc<kledger_runtime::generations::Live<ViewStore>>>,
    ) -> Self {
        self.sources = sources;
        self
    }

    /// The API reporting `status`'s readiness (a replica still filling answers `503
    /// not_ready`).
    pub fn with_status(mut self, status: Arc<kledger_runtime::status::Status>) -> Self {
        self.status = status;
        self
    }

    /// `503 not_ready` while this host's view replica is still filling (it would answer some
    /// accounts as empty): another host answers, or this one in a moment (`Retry-After`).
    pub fn serving(&self) -> Result<(), ApiError> {
        if self
            .status
            .replica_serving(kledger_pipeline::project::views::SINK)
        {
            return Ok(());
        }
        Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "not_ready",
            "this host's copy of the ledger is still catching up: ask another host, or again in a moment",
        ))
    }
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("partitions", &self.partitions)
            .finish_non_exhaustive()
    }
}

/// An API error: HTTP status, stable code, message (and, for some codes, a detail object).
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    detail: Option<serde_json::Value>,
}

impl ApiError {
    /// An error.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
            detail: None,
        }
    }

    /// The error with `detail` as its `error.detail` (what a caller needs to act on it).
    pub fn with_detail(mut self, detail: serde_json::Value) -> Self {
        self.detail = Some(detail);
        self
    }

    /// The detail, if any.
    pub fn detail(&self) -> Option<&serde_json::Value> {
        self.detail.as_ref()
    }

    /// 400 with `code`.
    pub fn bad(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    /// The stable error code.
    pub fn code(&self) -> &'static str {
        self.code
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The HTTP status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The one answer for anything a principal may not see or that does not exist.
    pub fn unavailable() -> Self {
        Self::new(StatusCode::NOT_FOUND, "unavailable", "unavailable")
    }

    /// 500 for an internal failure (the detail is logged, not returned).
    pub fn internal(e: impl std::fmt::Display) -> Self {
        tracing::error!(error = %e, "read api internal error");
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            "internal error",
        )
    }
}

impl From<kledger_state::StateError> for ApiError {
    fn from(e: kledger_state::StateError) -> Self {
        Self::internal(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = serde_json::json!({"error": {"code": self.code, "message": self.message}});
        if let Some(d) = self.detail {
            body["error"]["detail"] = d;
        }
        let mut resp = (self.status, axum::Json(body)).into_response();
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            resp.headers_mut()
                .insert(header::RETRY_AFTER, header::HeaderValue::from_static("1"));
        }
        resp
    }
}

/// Compares tokens through their SHA-256 digests in constant time: the time depends neither
/// on where they differ nor on their lengths.
fn same_token(a: &str, b: &str) -> bool {
    use sha2::Digest;
    let (a, b) = (
        sha2::Sha256::digest(a.as_bytes()),
        sha2::Sha256::digest(b.as_bytes()),
    );
    a.iter()
        .zip(b.iter())
        .fold(0u8, |acc, (x, y)| acc | (x ^ y))
        == 0
}

/// The token of an `Authorization` header value: the `Bearer` scheme in any case, then the
/// token (RFC 6750; RFC 9110 makes the scheme case-insensitive).
fn bearer(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// The authenticated principal of a request.
#[derive(Debug, Clone)]
pub struct Caller(pub Principal);

impl FromRequestParts<Api> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, api: &Api) -> Result<Self, Self::Rejection> {
        // Authenticated by the listener before the body was read.
        if let Some(Authenticated(p)) = parts.extensions.get() {
            return Ok(Caller(p.clone()));
        }
        let unauthorized = || {
            ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "a valid bearer token is required",
            )
        };
        let token = parts
            .headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(bearer)
            .ok_or_else(unauthorized)?;
        principal_of(api, token)
            .map(Caller)
            .ok_or_else(unauthorized)
    }
}

/// The principal `token` names, if any. Every principal is compared (no early exit); tokens
/// are unique (checked at load).
pub fn principal_of(api: &Api, token: &str) -> Option<Principal> {
    let mut found = None;
    for p in api.config.api.principals.values() {
        if same_token(&p.token, token) {
            found = Some(p.principal.clone());
        }
    }
    found
}

/// The JSON error form of `status` (`{"error": {"code", "message"}}`).
pub fn error_response(status: StatusCode, code: &str, message: &str) -> Response {
    let body = serde_json::json!({"error": {"code": code, "message": message}});
    (status, axum::Json(body)).into_response()
}

/// Whether `p` owns `account`: counts, sequence numbers and caps are shown to the owner only,
/// so no answer tells anyone else how much an account holds.
pub fn owns(p: &Principal, account: &str) -> bool {
    p.account_id() == account
}

/// The principal a request authenticated as, found by the listener before its body was read.
#[derive(Debug, Clone)]
pub struct Authenticated(pub kledger_processors::access::Principal);

/// The principal of an `Authorization` header value, if it names one.
pub fn principal_of_header(api: &Api, value: &str) -> Option<Principal> {
    principal_of(api, bearer(value)?)
}

/// The `account=` parameter shared by every read.
#[derive(Debug, Default, Deserialize, schemars::JsonSchema)]
pub struct AccountParam {
    /// The account to read (default: the principal's own).
    pub account: Option<String>,
}

/// The account a request reads: the principal's own, or another of the same tenant.
pub fn target(p: &Principal, account: Option<&str>) -> Result<String, ApiError> {
    match account {
        None => Ok(p.account_id()),
        Some(a) if a.len() <= 1_024 && may_address(p, a) => Ok(a.to_owned()),
        Some(_) => Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "account_forbidden",
            "the account is not in the principal's tenant",
        )),
    }
}

/// Wall-clock milliseconds: reads honour effective time now (nothing here reaches state).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// Counts and times a request.
pub fn observe(endpoint: &'static str, started: Instant, status: StatusCode) {
    metrics::counter!(m::API_REQUESTS_TOTAL, "endpoint" => endpoint, "status" => status.as_str().to_owned())
        .increment(1);
    metrics::histogram!(m::API_LATENCY_SECONDS, "endpoint" => endpoint)
        .record(started.elapsed().as_secs_f64());
}

async fn openapi(State(_): State<Api>) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], OPENAPI)
}

/// The `/v1` router.
pub fn router(api: Api) -> Router {
    Router::new()
        .route("/v1/search", post(search::search))
        .route("/v1/profile", get(read::profile))
        .route("/v1/playbooks/{id}", get(read::playbook))
        .route("/v1/entities/{entity}/timeline", get(timeline::timeline))
        .route("/v1/conversations/search", post(conversations::search))
        .route("/v1/export", get(read::export))
        .route("/v1/purges/{action_id}", get(purges::purge))
        .route("/v1/semantic/features", get(semantic::features))
        .route("/v1/compat/long_term", get(compat::rows))
        .route("/v1/episodes", get(episodes::episodes))
        .route("/v1/intents", post(ingress::post_intent))
        .route("/v1/sources/{kind}", post(ingress::post_source))
        .route("/v1/openapi.json", get(openapi))
        .with_state(api)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole() {
        assert!(same_token("abcdefghijklmnop", "abcdefghijklmnop"));
        assert!(!same_token("abcdefghijklmnop", "abcdefghijklmnoq"));
        assert!(!same_token("abcdefghijklmnop", "abcdefghijklmno"));
        assert!(!same_token("abcdefghijklmnop", ""));
    }

    #[test]
    fn the_bearer_scheme_is_case_insensitive() {
        for v in ["Bearer tok", "bearer tok", "BEARER  tok ", "BeArEr tok"] {
            assert_eq!(bearer(v), Some("tok"), "{v}");
        }
        for v in ["Basic tok", "Bearer", "Bearer ", "Bearertok", "tok"] {
            assert_eq!(bearer(v), None, "{v}");
        }
    }

    #[test]
    fn the_openapi_description_parses_and_names_every_route() {
        let doc: serde_json::Value = serde_json::from_str(OPENAPI).unwrap();
        for path in [
            "/v1/search",
            "/v1/profile",
            "/v1/playbooks/{id}",
            "/v1/entities/{entity}/timeline",
            "/v1/conversations/search",
            "/v1/export",
            "/v1/intents",
            "/v1/sources/{kind}",
            "/v1/semantic/features",
            "/v1/purges/{action_id}",
        ] {
            assert!(doc["paths"][path].is_object(), "{path} missing");
        }
    }
}
