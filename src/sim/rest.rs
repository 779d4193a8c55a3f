//! The simulator's REST port: the venues' snapshot requests answered from the diff
//! streams' books.

use super::*;

/// The venue a connection's path names (`/binance`, `/binance_sbe/…`).
pub(super) fn venue_of_path(path: &str) -> Option<VenueId> {
    let name = path.trim_start_matches('/').split('/').next()?;
    VenueId::from_name(name)
}

/// A venue whose market data needs an API key refuses an upgrade without one (any
/// non-empty key: the simulator cannot check a key against an account), with HTTP 401.
/// What the exchange answers exactly is not recorded (docs/protocols.md): the reader counts any
/// refused upgrade alike. Counted by `Simulator::refused_for_api_key`.
#[allow(clippy::result_large_err)]
pub(super) fn check_api_key(
    request: &Request,
    shared: &Shared,
) -> Result<(), tokio_tungstenite::tungstenite::handshake::server::ErrorResponse> {
    let Some(venue) = venue_of_path(request.uri().path()) else {
        return Ok(());
    };
    let Some(header) = venue.facts().credentials.upgrade_header() else {
        return Ok(());
    };
    if request
        .headers()
        .get(header)
        .is_some_and(|key| !key.as_bytes().is_empty())
    {
        return Ok(());
    }
    shared.venues[venue.index()]
        .refused_for_api_key
        .fetch_add(1, Ordering::Relaxed);
    let body = format!("simulator: no API key in {header}");
    let mut response =
        tokio_tungstenite::tungstenite::handshake::server::ErrorResponse::new(Some(body));
    *response.status_mut() = tokio_tungstenite::tungstenite::http::StatusCode::UNAUTHORIZED;
    Err(response)
}

/// The prefix of every token the simulator hands out: a connection whose URL carries
/// another is refused (`check_token`).
const TOKEN_PREFIX: &str = "simulated-token-";

/// The simulator's answer to a venue's token request (`Streams::token_path`): a new token
/// and its WebSocket, or a failure where `Simulator::fail_token_requests` asks for one.
pub(super) async fn serve_token(
    venue: VenueId,
    axum::extract::State(shared): axum::extract::State<std::sync::Weak<Shared>>,
) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    let Some(shared) = shared.upgrade() else {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    };
    let control = &shared.venues[venue.index()];
    let issued = control.token_requests.fetch_add(1, Ordering::Relaxed);
    if take_one(&control.token_failures_left) {
        return (StatusCode::SERVICE_UNAVAILABLE, "Service Unavailable").into_response();
    }
    let url = format!("ws://{}/{venue}", shared.ws_addr);
    match venue
        .simulated()
        .token_answer(&url, &format!("{TOKEN_PREFIX}{issued}"))
    {
        Some(answer) => (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            answer,
        )
            .into_response(),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

/// A venue that hands out tokens refuses an upgrade without one it handed out, with HTTP
/// 401 (counted by `Simulator::refused_for_token`).
#[allow(clippy::result_large_err)]
pub(super) fn check_token(
    request: &Request,
    shared: &Shared,
) -> Result<(), tokio_tungstenite::tungstenite::handshake::server::ErrorResponse> {
    let Some(venue) = venue_of_path(request.uri().path()) else {
        return Ok(());
    };
    if venue.streams().token_path().is_empty() {
        return Ok(());
    }
    let query = request.uri().query().unwrap_or_default();
    let token = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="));
    if token.is_some_and(|token| token.starts_with(TOKEN_PREFIX)) {
        return Ok(());
    }
    shared.venues[venue.index()]
        .refused_for_token
        .fetch_add(1, Ordering::Relaxed);
    let body = Some("simulator: no token handed out by the venue".to_owned());
    let mut response = tokio_tungstenite::tungstenite::handshake::server::ErrorResponse::new(body);
    *response.status_mut() = tokio_tungstenite::tungstenite::http::StatusCode::UNAUTHORIZED;
    Err(response)
}

/// The connect id a connection's URL names (`connectId=`), for the venue's welcome.
pub(super) fn connect_id(query: &str) -> &str {
    let id = query
        .split('&')
        .find_map(|pair| pair.strip_prefix("connectId="));
    id.unwrap_or_default()
}

/// The simulator's REST server: `/<venue>/<the venue's snapshot path>`, answered from the
/// stream's book (or a fault).
pub(super) async fn serve_snapshot(
    axum::extract::State(shared): axum::extract::State<std::sync::Weak<Shared>>,
    uri: axum::http::Uri,
    headers: axum::http::HeaderMap,
) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    let Some(shared) = shared.upgrade() else {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    };
    let path_and_query = uri.path_and_query().map_or("", |p| p.as_str());
    let mut parts = path_and_query.trim_start_matches('/').splitn(2, '/');
    let venue = parts.next().and_then(VenueId::from_name);
    let rest = format!("/{}", parts.next().unwrap_or_default());
    let Some((venue, symbol)) =
        venue.and_then(|venue| Some((venue, venue.snapshots().snapshot_symbol(&rest)?)))
    else {
        return (StatusCode::NOT_FOUND, "no such snapshot").into_response();
    };
    let asked_levels = venue.snapshots().asked_levels(&rest);
    if venue.facts().credentials == crate::venue::Credentials::SignedRest && asked_levels.is_none()
    {
        let control = &shared.venues[venue.index()];
        let signing = control.signing.lock().expect("not poisoned").clone();
        let header = |name: &str| {
            let value = headers.get(name)?.to_str().ok()?;
            Some(value.to_owned())
        };
        match signing.is_some_and(|(secret, passphrase)| {
            let signed = venue.simulated();
            signed.is_signed(&header, path_and_query, &secret, &passphrase)
        }) {
            true => control.signed_snapshots.fetch_add(1, Ordering::Relaxed),
            false => {
                control.unsigned_snapshots.fetch_add(1, Ordering::Relaxed);
                let refusal = r#"{"code":"400005","msg":"Invalid KC-API-SIGN"}"#;
                return (StatusCode::UNAUTHORIZED, refusal).into_response();
            }
        };
    }
    let playback = shared.playback.lock().expect("not poisoned").clone();
    if let Some(body) = playback.and_then(|playback| playback.snapshot(venue, &symbol)) {
        return (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response();
    }
    let faults = &shared.venues[venue.index()].faults;
    faults
        .snapshot_requests
        .lock()
        .expect("not poisoned")
        .push(std::time::Instant::now());
    if take_one(&faults.rate_limited_requests) {
        let retry_after = faults.retry_after_s.load(Ordering::Relaxed).to_string();
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [(axum::http::header::RETRY_AFTER, retry_after)],
            "{\"code\":-1003,\"msg\":\"Too many requests\"}",
        )
            .into_response();
    }
    if take_one(&faults.failed_requests) {
        return match *faults.snapshot_failure.lock().expect("not poisoned") {
            SnapshotFailure::ServerError => {
                (StatusCode::SERVICE_UNAVAILABLE, "Service Unavailable").into_response()
            }
            SnapshotFailure::Garbage => (
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                "<html>\u{1}not a book",
            )
                .into_response(),
        };
    }
    let delay = faults.snapshot_delay_ms.load(Ordering::Relaxed);
    let diff = diff_stream(
        &shared,
        venue,
        &venue.streams().diff_stream_name(&symbol),
        None,
    );
    drop(shared);
    let limit = asked_levels.unwrap_or(usize::MAX);
    let mut snapshot = BookUpdate::default();
    let stale = diff.stale_snapshot.lock().expect("not poisoned").take();
    match stale {
        Some(stale) => snapshot = stale,
        None => diff
            .market
            .lock()
            .expect("not poisoned")
            .snapshot(limit, &mut snapshot),
    }
    if delay > 0 {
        // The snapshot was taken on arrival; it is delivered late (and so is old).
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    let mut body = Vec::new();
    let stream = venue.streams().diff_stream_name(&symbol);
    venue.simulated().encode_snapshot(
        &stream,
        &snapshot,
        SnapshotSource::Rest,
        None,
        PRICE_DECIMALS,
        &mut body,
    );
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}

/// The simulator's answer to a venue's listing request (`Streams::listing_path`): what
/// `Simulator::list` made it list, in the venue's format; 404 where it lists nothing, 400
/// for a request the venue would not understand.
pub(super) async fn serve_listing(
    venue: VenueId,
    axum::extract::State(shared): axum::extract::State<std::sync::Weak<Shared>>,
    request: String,
) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    let Some(shared) = shared.upgrade() else {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    };
    let names = shared.listings.lock().expect("not poisoned")[venue.index()].clone();
    let Some(names) = names else {
        return StatusCode::NOT_FOUND.into_response();
    };
    match venue.simulated().listing_answer(&request, &names) {
        Some(answer) => (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            answer,
        )
            .into_response(),
        None => StatusCode::BAD_REQUEST.into_response(),
    }
}
