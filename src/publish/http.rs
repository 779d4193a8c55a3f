//! The metrics port: `/metrics` (Prometheus text format) and `/health`, and where `[web]`
//! turns it on, the book in a browser under `/book` (`publish/web/`).
//!
//! `/health` serves the service's health (`publish/health.rs`): HTTP 503 when it is
//! `DOWN`, with the JSON report as the body.

use crate::clock::{self, HostClock};
use crate::config::Config;
use crate::metrics::Metrics;
use crate::publish::accept::WriteDeadline;
use crate::publish::catalog::{Catalog, Listing};
use crate::publish::health::{Health, health_report};
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::sync::Arc;
use tokio::net::TcpListener;

#[derive(Clone)]
struct Shared {
    config: Arc<Config>,
    metrics: Arc<Metrics>,
    host_clock: Arc<HostClock>,
    catalog: Catalog,
}

/// Serves until the task is aborted.
pub async fn serve(
    listener: TcpListener,
    config: Arc<Config>,
    metrics: Arc<Metrics>,
    host_clock: Arc<HostClock>,
    catalog: Catalog,
) {
    let limits = config.metrics_connections;
    let refused = metrics.connections_refused.with_label_values(&["metrics"]);
    let stalled = metrics.connections_stalled.with_label_values(&["metrics"]);
    let mut app = Router::new()
        .route("/metrics", get(metrics_text))
        .route("/health", get(health));
    if let Some(web) = config.web {
        let books =
            crate::publish::web::Books::new(catalog.clone(), config.max_instruments, web.interval);
        app = app.merge(crate::publish::web::routes(books));
    }
    let app = app.with_state(Shared {
        config,
        metrics,
        host_clock,
        catalog,
    });
    // hyper's HTTP/1 server rather than `axum::serve`, which has no header timeout: a
    // connection that sends no complete request headers (new, or kept alive between
    // requests) within the timeout is closed, and request headers are bounded.
    let mut http1 = hyper::server::conn::http1::Builder::new();
    http1
        .timer(TokioTimer::new())
        .header_read_timeout(limits.request_timeout)
        .max_buf_size(MAX_REQUEST_HEAD_BYTES);
    crate::publish::accept::accept_bounded(listener, limits, "metrics", refused, |stream| {
        // A client that reads nothing it is sent for the request timeout (a stalled page
        // of the web view) is dropped; until then the kernel holds at most
        // `SEND_BUFFER_BYTES` of what it was sent.
        if let Err(error) = socket2::SockRef::from(&stream).set_send_buffer_size(SEND_BUFFER_BYTES)
        {
            tracing::warn!(%error, "metrics port: setting the socket's send buffer failed");
        }
        let stream = WriteDeadline::new(stream, limits.request_timeout, stalled.clone());
        let connection =
            http1.serve_connection(TokioIo::new(stream), TowerToHyperService::new(app.clone()));
        async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "metrics connection ended");
            }
        }
    })
    .await;
}

/// The most bytes of a request's head (request line and headers) read.
const MAX_REQUEST_HEAD_BYTES: usize = 16 * 1024;

/// A connection's kernel send buffer: a scrape's whole text in a few reads, a few dozen
/// books of the web view (Linux doubles it for its own bookkeeping).
const SEND_BUFFER_BYTES: usize = 64 * 1024;

async fn metrics_text(State(shared): State<Shared>) -> impl IntoResponse {
    update_book_ages(&shared.metrics, &shared.catalog.borrow());
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        shared.metrics.render(),
    )
}

/// Refreshes the book-age gauges from the latest summaries (called before each scrape).
fn update_book_ages(metrics: &Metrics, listing: &Listing) {
    let now = clock::monotonic_ns();
    for listed in listing.iter() {
        let instrument = &listed.instrument;
        let summary = listed.summaries.borrow();
        for (source, name) in instrument.source_names.iter().enumerate() {
            let received = summary.source_received_ns[source];
            let age = if received == 0 {
                f64::NAN
            } else {
                now.saturating_sub(received) as f64 * 1e-9
            };
            metrics
                .book_age_seconds
                .with_label_values(&[name, &instrument.name])
                .set(age);
        }
    }
}

async fn health(State(shared): State<Shared>) -> impl IntoResponse {
    let listing = Arc::clone(&shared.catalog.borrow());
    let (health, body) = health_report(&shared.config, &listing, &shared.host_clock);
    let status = match health {
        Health::Down => StatusCode::SERVICE_UNAVAILABLE,
        Health::Ok | Health::Degraded => StatusCode::OK,
    };
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
}
