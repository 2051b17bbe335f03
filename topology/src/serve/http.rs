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
//! The accept loop and its per-connection tasks live here; routes live in [`crate::serve::api`].

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

use crate::config::HttpConfig;
use crate::metrics as m;
use crate::status::Status;

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
    api: Option<crate::serve::api::Api>,
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
    let routes = match api {
        Some(api) => ops
            .merge(crate::serve::mcp::router(api.clone()))
            .merge(crate::serve::api::router(api)),
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
        .layer(axum::middleware::map_response(json_errors))
        // The body is read (and bounded) by `bounded_body`; axum's own 2 MiB cap must not cut
        // a body the budget allows.
        .layer(axum::extract::DefaultBodyLimit::disable())
}

/// The JSON error form of `status` (`{"error": {"code", "message"}}`).
pub fn error_response(status: StatusCode, code: &str, message: &str) -> Response {
    let body = serde_json::json!({"error": {"code": code, "message": message}});
    (status, axum::Json(body)).into_response()
}

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
    crate::serve::api::ingress::body_too_large(bytes_max).into_response()
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

/// Serves `router` on `listen` with `http`'s connection cap and header timeout, until the
/// task is dropped.
pub async fn serve(
    listen: &str,
    router: Router,
    http: &HttpConfig,
) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let listener = tokio::net::TcpListener::bind(listen).await?;
    let permits = Arc::new(tokio::sync::Semaphore::new(http.connections_max));
    let header_timeout = Duration::from_millis(http.header_timeout_ms);
    Ok(tokio::spawn(async move {
        loop {
            let (stream, _) = match listener.accept().await {
                Ok(s) => s,
                Err(e) => {
                    // Out of file descriptors and the like: pause rather than spin.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            };
            let Ok(permit) = permits.clone().try_acquire_owned() else {
                metrics::counter!(m::HTTP_CONNECTIONS_REFUSED_TOTAL).increment(1);
                tokio::spawn(refuse(stream));
                continue;
            };
            let service = TowerToHyperService::new(router.clone());
            tokio::spawn(async move {
                metrics::gauge!(m::HTTP_CONNECTIONS).increment(1.0);
                let mut b = hyper::server::conn::http1::Builder::new();
                b.timer(TokioTimer::new())
                    .header_read_timeout(header_timeout)
                    .keep_alive(true);
                if let Err(e) = b.serve_connection(TokioIo::new(stream), service).await {
                    tracing::debug!(error = %e, "http connection ended");
                }
                metrics::gauge!(m::HTTP_CONNECTIONS).decrement(1.0);
                drop(permit);
            });
        }
    }))
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
