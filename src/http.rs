//! The metrics port: `/metrics` (Prometheus text format) and `/health`.
//!
//! `/health` answers from the latest summaries: `OK` when every configured venue is in
//! every instrument's merged book, `DEGRADED` when some venue is out but every instrument
//! still has one, `DOWN` (HTTP 503) when an instrument has no venue at all. The body names
//! each venue's state:
//!
//! ```json
//! {"status":"DEGRADED","instruments":{"ETH/BTC":{"binance":"synced","bitstamp":"stale"}}}
//! ```

use crate::clock;
use crate::config::Config;
use crate::metrics::Metrics;
use crate::summary::{Summary, VenueState};
use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;

#[derive(Clone)]
struct Shared {
    config: Arc<Config>,
    metrics: Arc<Metrics>,
    summaries: Vec<watch::Receiver<Arc<Summary>>>,
}

/// Serves until the task is aborted.
pub async fn serve(
    listener: TcpListener,
    config: Arc<Config>,
    metrics: Arc<Metrics>,
    summaries: Vec<watch::Receiver<Arc<Summary>>>,
) {
    let limits = config.metrics_connections;
    let refused = metrics.connections_refused.with_label_values(&["metrics"]);
    let app = Router::new()
        .route("/metrics", get(metrics_text))
        .route("/health", get(health))
        .with_state(Shared {
            config,
            metrics,
            summaries,
        });
    // hyper's HTTP/1 server rather than `axum::serve`, which has no header timeout: a
    // connection that sends no complete request headers (new, or kept alive between
    // requests) within the timeout is closed, and request headers are bounded.
    let mut http1 = hyper::server::conn::http1::Builder::new();
    http1
        .timer(TokioTimer::new())
        .header_read_timeout(limits.request_timeout)
        .max_buf_size(MAX_REQUEST_HEAD_BYTES);
    crate::listen::accept_bounded(listener, limits, "metrics", refused, |stream| {
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

async fn metrics_text(State(shared): State<Shared>) -> impl IntoResponse {
    update_book_ages(&shared.metrics, &shared.config, &shared.summaries);
    (
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        shared.metrics.render(),
    )
}

/// Refreshes the book-age gauges from the latest summaries (called before each scrape).
fn update_book_ages(
    metrics: &Metrics,
    config: &Config,
    summaries: &[watch::Receiver<Arc<Summary>>],
) {
    let now = clock::monotonic_ns();
    for (instrument, latest) in config.instruments.iter().zip(summaries) {
        let summary = latest.borrow();
        for (venue, _) in &instrument.symbols {
            let received = summary.venue_received_ns[venue.index()];
            let age = if received == 0 {
                f64::NAN
            } else {
                now.saturating_sub(received) as f64 * 1e-9
            };
            metrics
                .book_age_seconds
                .with_label_values(&[venue.name(), &instrument.name])
                .set(age);
        }
    }
}

/// Overall health from each instrument's venue states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    Ok,
    Degraded,
    Down,
}

pub fn health_of<'a>(instruments: impl Iterator<Item = &'a [VenueState]>) -> Health {
    let mut health = Health::Ok;
    for states in instruments {
        if !states.contains(&VenueState::Synced) {
            return Health::Down;
        }
        if states.iter().any(|state| *state != VenueState::Synced) {
            health = Health::Degraded;
        }
    }
    health
}

async fn health(State(shared): State<Shared>) -> impl IntoResponse {
    let (health, body) = health_report(&shared.config, &shared.summaries);
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

impl Health {
    pub fn word(self) -> &'static str {
        match self {
            Health::Ok => "OK",
            Health::Degraded => "DEGRADED",
            Health::Down => "DOWN",
        }
    }
}

/// The service's health and its JSON report (what `/health` serves, and NATS publishes):
/// `{"status": "OK", "instruments": {"ETH/BTC": {"binance": "synced", …}}}`.
pub fn health_report(
    config: &Config,
    summaries: &[watch::Receiver<Arc<Summary>>],
) -> (Health, serde_json::Value) {
    let mut states = Vec::new();
    let mut body = serde_json::Map::new();
    for (instrument, latest) in config.instruments.iter().zip(summaries) {
        let summary = latest.borrow();
        let venues: Vec<VenueState> = instrument
            .symbols
            .iter()
            .map(|(venue, _)| summary.venue_state(*venue))
            .collect();
        let detail = instrument
            .symbols
            .iter()
            .zip(&venues)
            .map(|((venue, _), state)| {
                (
                    venue.name().to_owned(),
                    serde_json::Value::from(state.name()),
                )
            });
        body.insert(
            instrument.name.clone(),
            serde_json::Value::Object(detail.collect()),
        );
        states.push(venues);
    }
    let health = health_of(states.iter().map(Vec::as_slice));
    let body = serde_json::json!({"status": health.word(), "instruments": body});
    (health, body)
}

#[cfg(test)]
mod tests {
    use super::*;
    use VenueState::*;

    #[test]
    fn health_follows_the_venue_states() {
        let check = |instruments: &[&[VenueState]]| health_of(instruments.iter().copied());
        assert_eq!(check(&[&[Synced, Synced]]), Health::Ok);
        assert_eq!(check(&[&[Synced, Stale]]), Health::Degraded);
        assert_eq!(
            check(&[&[Synced, Synced], &[OutOfSync, Connecting]]),
            Health::Down
        );
        assert_eq!(check(&[&[Crossed]]), Health::Down);
    }
}
