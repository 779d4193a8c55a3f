//! The book in a browser: a page served on the metrics port (`[web]`, off by default) and
//! the latest consolidated book of each instrument pushed to it as Server-Sent Events.
//!
//! - `/book`: the page (`index.html`, `app.js`, `style.css`, files of this directory
//!   compiled into the binary: nothing is fetched from elsewhere, and it works offline);
//! - `/book/instruments`: the instruments' names, a JSON array;
//! - `/book/stream?instrument=ETH%2FBTC`: an event stream, each event one instrument's
//!   latest summary as JSON (`summary_json`, written once a summary for all the pages
//!   that send it): the first at once (once the merger has written one), then at most `web.updates_per_second` a second.
//!   It reads the instrument's latest-value channel, as every other consumer does: a
//!   browser that reads slowly or not at all skips summaries and holds one event at a
//!   time, and the merger never waits for it.
//!
//! Read-only; no secret is on the page (the configuration is not).

use crate::config::Instrument;
use crate::merger::summary::Summary;
use crate::publish::catalog::{Catalog, Listed};
use crate::publish::proto::{ExactSummary, exact_summary};
use axum::Router;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use futures_util::StreamExt;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

const INDEX_HTML: &str = include_str!("index.html");
const APP_JS: &str = include_str!("app.js");
const STYLE_CSS: &str = include_str!("style.css");

/// What the page's routes read: the instruments listed and their latest summaries, and
/// the least time between two events of a stream.
#[derive(Clone)]
pub(crate) struct Books {
    catalog: Catalog,
    interval: Duration,
    /// By slot, the latest summary of its instrument as an event's text, written once for
    /// every page that sends it.
    written: Arc<Vec<std::sync::Mutex<Option<Written>>>>,
}

/// An instrument, a summary's sequence number, and its JSON.
type Written = (Arc<Instrument>, u64, Arc<str>);

impl Books {
    /// `catalog`'s books, of at most `slots` instruments.
    pub(crate) fn new(catalog: Catalog, slots: usize, interval: Duration) -> Books {
        Books {
            catalog,
            interval,
            written: Arc::new((0..slots).map(|_| Default::default()).collect()),
        }
    }

    /// `listed`'s `summary` as an event's text: written by the first page to send it,
    /// shared by the others.
    fn event_text(&self, listed: &Listed, summary: &Summary) -> Arc<str> {
        let mut written = self.written[listed.slot].lock().expect("not poisoned");
        match &*written {
            Some((instrument, sequence, text))
                if Arc::ptr_eq(instrument, &listed.instrument) && *sequence == summary.sequence =>
            {
                Arc::clone(text)
            }
            _ => {
                let exact = exact_summary(&listed.instrument, summary, summary.charges_fees);
                let text: Arc<str> = summary_json(&exact).to_string().into();
                *written = Some((
                    Arc::clone(&listed.instrument),
                    summary.sequence,
                    Arc::clone(&text),
                ));
                text
            }
        }
    }
}

/// The page's routes, under `/book`.
pub(crate) fn routes<S>(books: Books) -> Router<S> {
    Router::new()
        .route(
            "/book",
            get(|| file("text/html; charset=utf-8", INDEX_HTML)),
        )
        .route(
            "/book/app.js",
            get(|| file("text/javascript; charset=utf-8", APP_JS)),
        )
        .route(
            "/book/style.css",
            get(|| file("text/css; charset=utf-8", STYLE_CSS)),
        )
        .route("/book/instruments", get(instruments))
        .route("/book/stream", get(stream))
        .with_state(books)
}

async fn file(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    ([(header::CONTENT_TYPE, content_type)], body)
}

async fn instruments(State(books): State<Books>) -> impl IntoResponse {
    let listing = Arc::clone(&books.catalog.borrow());
    let names = listing.iter().map(|listed| listed.instrument.name.as_str());
    (
        [(header::CONTENT_TYPE, "application/json")],
        serde_json::Value::from_iter(names).to_string(),
    )
}

#[derive(serde::Deserialize)]
struct StreamQuery {
    /// Its name; absent: the first configured.
    instrument: Option<String>,
}

async fn stream(State(books): State<Books>, Query(query): Query<StreamQuery>) -> Response {
    let listed = {
        let listing = books.catalog.borrow();
        match &query.instrument {
            None => listing.first().cloned(),
            Some(name) => listing.find(name).cloned(),
        }
    };
    let Some(listed) = listed else {
        return (StatusCode::NOT_FOUND, "no such instrument").into_response();
    };
    let events =
        events(books, listed).map(|text| Ok::<_, Infallible>(Event::default().data(&*text)));
    Sse::new(events)
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// `listed`'s events: its latest summary at once if the merger has written one (the
/// channel's initial value, sequence 0, is not a book and is never sent), then the latest
/// one an interval at most; the stream ends when a reload delists it.
fn events(books: Books, listed: Listed) -> impl futures_util::Stream<Item = Arc<str>> {
    let mut latest = listed.summaries.clone();
    latest.mark_changed();
    futures_util::stream::unfold((latest, true), move |(mut latest, first)| {
        let books = books.clone();
        let listed = listed.clone();
        async move {
            if !first {
                // Coalesced: one event an interval at most, the latest summary then.
                tokio::time::sleep(books.interval).await;
            }
            loop {
                latest.changed().await.ok()?;
                let summary = Arc::clone(&latest.borrow_and_update());
                if summary.sequence != 0 {
                    return Some((books.event_text(&listed, &summary), (latest, false)));
                }
            }
        }
    })
}

/// An exact summary as the page reads it: the fields of `BookSummaryExact`
/// (proto/orderbook.proto), by the same names.
fn summary_json(summary: &ExactSummary) -> serde_json::Value {
    let levels = |levels: &[crate::publish::proto::ExactLevel]| {
        levels
            .iter()
            .map(|level| {
                serde_json::json!({
                    "exchange": level.exchange,
                    "price": level.price,
                    "amount": level.amount,
                    "native_price": level.native_price,
                })
            })
            .collect::<Vec<_>>()
    };
    let venues = summary
        .venue_quotes
        .iter()
        .map(|quote| {
            serde_json::json!({
                "exchange": quote.exchange,
                "state": quote.state,
                "best_bid": quote.best_bid,
                "best_ask": quote.best_ask,
                "book_age_ns": quote.book_age_ns,
                "currency": quote.currency,
                "rate_pair": quote.rate_pair,
            })
        })
        .collect::<Vec<_>>();
    serde_json::json!({
        "instrument": summary.instrument,
        "seq": summary.seq,
        "ts_ns": summary.ts_ns,
        "spread": summary.spread,
        "bids": levels(&summary.bids),
        "asks": levels(&summary.asks),
        "venue_quotes": venues,
        "currency": summary.currency,
        "amount_unit": summary.amount_unit,
        "unit_size": summary.unit_size,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A page that opens its stream before the merger has written a book waits for the
    /// first one: the channel's initial empty summary is never sent as a book.
    #[tokio::test(flavor = "current_thread")]
    async fn a_stream_opened_before_any_book_starts_with_the_first_written() {
        let (sender, latest) = tokio::sync::watch::channel(Arc::new(Summary::default()));
        let instruments = [Instrument::of_books(
            "ETH/BTC",
            &[(crate::venue::VenueId::Binance, "ETHBTC")],
        )];
        let catalog = crate::publish::catalog::fixed(&instruments, &[latest]);
        let listed = catalog.borrow().first().cloned().expect("listed");
        let books = Books::new(catalog, 1, Duration::ZERO);
        let mut events = std::pin::pin!(events(books, listed));
        use futures_util::FutureExt;
        assert!(
            events.next().now_or_never().is_none(),
            "nothing written yet"
        );
        let written = Summary {
            sequence: 1,
            ..Summary::default()
        };
        sender.send_replace(Arc::new(written));
        let first: serde_json::Value =
            serde_json::from_str(&events.next().await.expect("an event")).unwrap();
        assert_eq!(first["seq"], 1);
    }
}
