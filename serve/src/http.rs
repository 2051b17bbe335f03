//! HTTP: the listener (`/metrics`, `/healthz`, `/readyz`, and the read API when configured),
//! with the bounds a public listener needs.
//!
//! - **Connections**: at most `http.connections_max` at once; one over the cap is answered
//!   `503` (`too_many_connections`) and closed.
//! - **Headers and idle connections**: a request's head must arrive within
//!   `http.header_timeout_ms` of the connection waiting for it (so a half-sent request, or a
//!   kept-alive connection idle that long, is closed).
//! - **Bodies**: at most the record budget (`413 body_too_large`, whatever the body announces)
//!   and read within `http.body_timeout_ms` (`408 body_timeout`).
//! - **Errors**: every answer that is not 2xx is `{"error": {"code", "message"}}` (the router's
//!   own 404/405 included) and counted in `kledger_http_errors_total{status}`.
//!
//! The accept loop and its per-connection tasks live here; routes live in [`crate::api`].

use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use metrics_exporter_prometheus::PrometheusHandle;
use tokio::io::AsyncWriteExt;

use kledger_runtime::config::HttpConfig;
use kledger_runtime::metrics as m;
use kledger_runtime::status::Status;

#[derive(Clone)]
struct AppState {
    metrics: PrometheusHandle,
    status: Arc<Status>,
}

async fn metrics(State(s): State<AppState>) -> impl IntoResponse {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4",
        )],
        s.metrics.render(),
    )
}

async fn healthz(State(s): State<AppState>) -> impl IntoResponse {
    let code = if s.status.alive() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, axum::Json(s.status.json()))
}

async fn readyz(State(s): State<AppState>) -> impl IntoResponse {
    let code = if s.status.ready() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (code, axum::Json(s.status.json()))
}

/// The bounds of request bodies.
#[derive(Debug, Clone, Copy)]
struct BodyBounds {
    bytes_max: usize,
    timeout: Duration,
}

/// The router: operations endpoints, plus the read API when given; bodies bounded by
/// `body_bytes_max` (the record budget) and `http`'s body timeout; every error in the JSON form.
pub fn router(
    metrics_handle: PrometheusHandle,
    status: Arc<Status>,
    api: Option<crate::api::Api>,
    http: &HttpConfig,
    body_bytes_max: usize,
) -> Router {
    let ops = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(AppState {
            metrics: metrics_handle,
            status,
        });
    let auth = api.clone();
    let routes = match api {
        Some(api) => ops
            .merge(crate::mcp::router(api.clone()))
            .merge(crate::api::router(api)),
        None => ops,
    };
    let bounds = BodyBounds {
        bytes_max: body_bytes_max,
        timeout: Duration::from_millis(http.body_timeout_ms),
    };
    routes
        .layer(axum::middleware::from_fn(move |req, next| {
            bounded_body(bounds, req, next)
        }))
        // Before the body is read: a request without a valid token costs no body buffer.
        .layer(axum::middleware::from_fn(move |req, next| {
            authenticated(auth.clone(), req, next)
        }))
        .layer(axum::middleware::map_response(json_errors))
        .layer(axum::middleware::from_fn(one_host))
        // The body is read (and bounded) by `bounded_body`; axum's own 2 MiB cap must not cut
        // a body the budget allows.
        .layer(axum::extract::DefaultBodyLimit::disable())
}

/// Whether `path` needs a principal: the read API (but its description) and MCP.
fn needs_principal(path: &str) -> bool {
    (path.starts_with("/v1/") && path != "/v1/openapi.json")
        || path == "/mcp"
        || path.starts_with("/mcp/")
}

use crate::api::Authenticated;

/// Authenticates an API or MCP request from its head alone (`401` before its body is read),
/// and holds one of its principal's `api.requests_per_principal_max` shares until the answer's
/// last byte is sent (`429 too_many_requests` beyond).
async fn authenticated(api: Option<crate::api::Api>, mut req: Request, next: Next) -> Response {
    let Some(api) = api.filter(|_| needs_principal(req.uri().path())) else {
        return next.run(req).await;
    };
    let principal = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| crate::api::principal_of_header(&api, v));
    let Some(p) = principal else {
        let mut resp = error_response(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "a valid bearer token is required",
        );
        // The body was not read: the connection cannot carry another request.
        resp.headers_mut().insert(
            header::CONNECTION,
            header::HeaderValue::from_static("close"),
        );
        return resp;
    };
    let Some(share) = api.requests.take(&crate::api::waits::caller_key(&p)) else {
        metrics::counter!(m::API_REFUSED_TOTAL, "reason" => "too_many_requests").increment(1);
        let mut resp = error_response(
            StatusCode::TOO_MANY_REQUESTS,
            "too_many_requests",
            "too many requests of this principal are in flight; try again later",
        );
        resp.headers_mut().insert(
            header::CONNECTION,
            header::HeaderValue::from_static("close"),
        );
        return resp;
    };
    // Reads need a replica that holds every account; the ingress only produces.
    let ingress = req.uri().path() == "/v1/intents" || req.uri().path().starts_with("/v1/sources/");
    if !ingress && let Err(e) = api.serving() {
        return e.into_response();
    }
    req.extensions_mut().insert(Authenticated(p));
    next.run(req).await.map(|body| {
        Body::new(Holding {
            body,
            _share: share,
        })
    })
}

/// A body that holds a share until it is sent or dropped.
struct Holding {
    body: Body,
    _share: crate::api::waits::Share,
}

impl http_body::Body for Holding {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// Refuses an HTTP/1.1 request without exactly one `Host` header with `400 bad_host` (RFC
/// 9112 3.2: a server must), and any request with two (a proxy and kledger could read
/// different hosts). HTTP/1.0 had no `Host`: one is optional there.
async fn one_host(req: Request, next: Next) -> Response {
    let hosts = req.headers().get_all(header::HOST).iter().count();
    let optional = req.version() <= axum::http::Version::HTTP_10;
    if hosts > 1 || (hosts == 0 && !optional) {
        metrics::counter!(m::API_REFUSED_TOTAL, "reason" => "bad_request_head").increment(1);
        let mut resp = error_response(
            StatusCode::BAD_REQUEST,
            "bad_host",
            "a request has exactly one Host header",
        );
        resp.headers_mut().insert(
            header::CONNECTION,
            header::HeaderValue::from_static("close"),
        );
        return resp;
    }
    next.run(req).await
}

use crate::api::error_response;

/// Reads the whole body within its bounds before the handler sees it: `413` past the byte
/// bound (announced or sent), `408` past the time bound.
async fn bounded_body(bounds: BodyBounds, req: Request, next: Next) -> Response {
    let announced = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if announced.is_some_and(|n| n > bounds.bytes_max as u64) {
        return too_large(bounds.bytes_max);
    }
    let (parts, body) = req.into_parts();
    let read = axum::body::to_bytes(body, bounds.bytes_max);
    let bytes = match tokio::time::timeout(bounds.timeout, read).await {
        Err(_) => {
            return error_response(
                StatusCode::REQUEST_TIMEOUT,
                "body_timeout",
                &format!(
                    "the request body did not arrive within {} ms",
                    bounds.timeout.as_millis()
                ),
            );
        }
        Ok(Err(_)) => return too_large(bounds.bytes_max),
        Ok(Ok(b)) => b,
    };
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

fn too_large(bytes_max: usize) -> Response {
    crate::api::ingress::body_too_large(bytes_max).into_response()
}

/// Gives every non-2xx answer the JSON error form (axum's own 404, 405 and extractor
/// rejections are plain text) and counts it.
async fn json_errors(resp: Response) -> Response {
    let status = resp.status();
    if status.is_success() || status.is_informational() || status.is_redirection() {
        return resp;
    }
    metrics::counter!(m::HTTP_ERRORS_TOTAL, "status" => status.as_str().to_owned()).increment(1);
    let is_json = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/json"));
    if is_json {
        return resp;
    }
    let (code, default_message) = match status {
        StatusCode::BAD_REQUEST => ("bad_request", "bad request"),
        StatusCode::NOT_FOUND => ("not_found", "no such endpoint"),
        StatusCode::METHOD_NOT_ALLOWED => ("method_not_allowed", "method not allowed here"),
        StatusCode::PAYLOAD_TOO_LARGE => ("body_too_large", "the request body is too large"),
        StatusCode::UNSUPPORTED_MEDIA_TYPE => ("unsupported_media_type", "unsupported media type"),
        StatusCode::UNPROCESSABLE_ENTITY => ("unprocessable", "the request could not be read"),
        StatusCode::TOO_MANY_REQUESTS => ("too_many_requests", "too many requests"),
        StatusCode::SERVICE_UNAVAILABLE => ("unavailable_now", "not available now"),
        _ if status.is_client_error() => ("bad_request", "bad request"),
        _ => ("internal", "internal error"),
    };
    // Extractor rejections explain what was wrong in their text: keep it, bounded.
    let text = axum::body::to_bytes(resp.into_body(), 4 << 10)
        .await
        .ok()
        .and_then(|b| String::from_utf8(b.to_vec()).ok())
        .filter(|t| !t.trim().is_empty() && status.is_client_error())
        .unwrap_or_else(|| default_message.to_owned());
    error_response(status, code, text.trim())
}

/// Connections beyond `http.connections_max` that may still be served, for the operations
/// endpoints only (a load balancer's health check must not read "down" while the API is busy).
pub const OPS_CONNECTIONS_MAX: usize = 16;
/// How long a connection beyond the cap has to show which endpoint it asks for.
const OPS_PEEK_TIMEOUT: Duration = Duration::from_secs(2);

/// Serves `router` on `listen` with `http`'s connection cap, header and write timeouts and
/// strict request heads ([`crate::conn`]), until the task is dropped.
pub async fn serve(
    listen: &str,
    router: Router,
    http: &HttpConfig,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let permits = Arc::new(tokio::sync::Semaphore::new(http.connections_max));
    let ops_permits = Arc::new(tokio::sync::Semaphore::new(OPS_CONNECTIONS_MAX));
    let timeouts = Timeouts {
        header: Duration::from_millis(http.header_timeout_ms),
        write: Duration::from_millis(http.write_timeout_ms),
    };
    Ok(tokio::spawn(async move {
        // Out of file descriptors and the like: pause rather than spin (5 ms doubling to 1 s).
        let mut accept_failed = kledger_runtime::backoff::Backoff::from_millis(5, 1_000);
        loop {
            let (stream, _) = match listener.accept().await {
                Ok(s) => {
                    accept_failed.reset();
                    s
                }
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(accept_failed.next_pause()).await;
                    continue;
                }
            };
            let Ok(permit) = permits.clone().try_acquire_owned() else {
                metrics::counter!(m::HTTP_CONNECTIONS_REFUSED_TOTAL).increment(1);
                tokio::spawn(beyond_cap(
                    stream,
                    router.clone(),
                    ops_permits.clone(),
                    timeouts,
                ));
                continue;
            };
            let router = router.clone();
            tokio::spawn(async move {
                metrics::gauge!(m::HTTP_CONNECTIONS).increment(1.0);
                connection(stream, router, timeouts, true).await;
                metrics::gauge!(m::HTTP_CONNECTIONS).decrement(1.0);
                drop(permit);
            });
        }
    }))
}

/// A connection's timeouts.
#[derive(Debug, Clone, Copy)]
struct Timeouts {
    header: Duration,
    write: Duration,
}

/// Serves one connection (`keep_alive`: more than one request on it).
async fn connection(
    stream: tokio::net::TcpStream,
    router: Router,
    timeouts: Timeouts,
    keep_alive: bool,
) {
    let service = TowerToHyperService::new(router);
    let mut b = hyper::server::conn::http1::Builder::new();
    b.timer(TokioTimer::new())
        .header_read_timeout(timeouts.header)
        .keep_alive(keep_alive);
    let io = TokioIo::new(crate::conn::Guarded::new(stream, timeouts.write));
    if let Err(e) = b.serve_connection(io, service).await {
        tracing::debug!(error = %e, "http connection ended");
    }
}

/// A connection over the cap: served (one request) if it asks for `/healthz`, `/readyz` or
/// `/metrics` and one of [`OPS_CONNECTIONS_MAX`] is free, else answered `503
/// too_many_connections` and closed.
async fn beyond_cap(
    stream: tokio::net::TcpStream,
    router: Router,
    ops: Arc<tokio::sync::Semaphore>,
    timeouts: Timeouts,
) {
    if asks_for_ops(&stream).await
        && let Ok(_permit) = ops.try_acquire_owned()
    {
        connection(stream, router, timeouts, false).await;
        return;
    }
    refuse(stream).await;
}

/// Whether the first request on `stream` is a `GET` of an operations endpoint (read without
/// taking the bytes, for at most [`OPS_PEEK_TIMEOUT`]).
async fn asks_for_ops(stream: &tokio::net::TcpStream) -> bool {
    const OPS: [&str; 3] = ["/healthz", "/readyz", "/metrics"];
    let look = async {
        let mut buf = [0u8; 32];
        loop {
            let n = stream.peek(&mut buf).await.ok()?;
            let head = &buf[..n];
            // Per endpoint: Some(true) asked for, Some(false) not, None not told yet.
            let told: Vec<Option<bool>> = OPS
                .iter()
                .map(|path| {
                    let line = format!("GET {path}");
                    if head.len() > line.len() {
                        Some(
                            head.starts_with(line.as_bytes())
                                && matches!(head[line.len()], b' ' | b'?'),
                        )
                    } else {
                        if line.as_bytes().starts_with(head) {
                            None
                        } else {
                            Some(false)
                        }
                    }
                })
                .collect();
            if told.contains(&Some(true)) {
                return Some(true);
            }
            if n == 0 || told.iter().all(|t| *t == Some(false)) {
                return Some(false);
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    matches!(
        tokio::time::timeout(OPS_PEEK_TIMEOUT, look).await,
        Ok(Some(true))
    )
}

/// Answers a connection over the cap with `503` and closes it (bounded: a client that does not
/// read the answer is dropped after a second).
async fn refuse(mut stream: tokio::net::TcpStream) {
    let body = r#"{"error":{"code":"too_many_connections","message":"too many connections"}}"#;
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(Duration::from_secs(1), stream.write_all(answer.as_bytes())).await;
}
