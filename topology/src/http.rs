//! HTTP endpoints: `/metrics` (Prometheus), `/healthz`, `/readyz`.

use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::IntoResponse;
use axum::routing::get;
use metrics_exporter_prometheus::PrometheusHandle;

use crate::runtime::status::Status;

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

/// The router: operations endpoints, plus the read API when given.
pub fn router(
    metrics_handle: PrometheusHandle,
    status: Arc<Status>,
    api: Option<crate::api::Api>,
) -> Router {
    let ops = Router::new()
        .route("/metrics", get(metrics))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .with_state(AppState {
            metrics: metrics_handle,
            status,
        });
    match api {
        Some(api) => ops.merge(crate::api::router(api)),
        None => ops,
    }
}

/// Serves the router on `listen` until the task is dropped.
pub async fn serve(listen: &str, router: Router) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let listener = tokio::net::TcpListener::bind(listen).await?;
    Ok(tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, router).await {
            tracing::error!(error = %e, "http server stopped");
        }
    }))
}
