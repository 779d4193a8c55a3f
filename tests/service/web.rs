//! The book in a browser, its server side: the page and its files, the instruments, and
//! each instrument's event stream of its latest books, against the service on the
//! simulator; every book an event carries is one the merger wrote.

use crate::common;
use common::config::TestConfig;

use mergebook::publish::proto::exact_summary;
use mergebook::service::{Listeners, Service};
use mergebook::sim::Simulator;
use mergebook::venue::VenueId;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

const WAIT: Duration = Duration::from_secs(30);
const INSTRUMENTS: [&str; 2] = ["ETH/BTC", "BTC/USD"];
/// Between two events of a stream, at least.
const INTERVAL: Duration = Duration::from_millis(50);
/// Events read after the first synced one.
const MORE: usize = 5;

/// The simulator, and a configuration on it with the page on: `INSTRUMENTS`, ETH/BTC
/// from Binance and Bitstamp, BTC/USD from Bitstamp, 10 levels a side.
async fn on_the_simulator() -> (Simulator, TestConfig) {
    let simulator =
        Simulator::start(TcpListener::bind("127.0.0.1:0").await.unwrap(), 50, 7).unwrap();
    let config = TestConfig::new()
        .set("service.depth", 10)
        .set("web.enabled", true)
        .on(&simulator, &[VenueId::Binance, VenueId::Bitstamp])
        .instrument(
            INSTRUMENTS[0],
            &[(VenueId::Binance, "ETHBTC"), (VenueId::Bitstamp, "ethbtc")],
        )
        .instrument(INSTRUMENTS[1], &[(VenueId::Bitstamp, "btcusd")]);
    (simulator, config)
}

/// The events of `instrument`'s stream, read until one has every venue synced and both
/// sides, then `more`: each event's JSON, and when the synced one arrived.
async fn events_until_synced(
    metrics: SocketAddr,
    instrument: &str,
    more: usize,
) -> (Vec<serde_json::Value>, Instant) {
    let mut stream = tokio::net::TcpStream::connect(metrics).await.unwrap();
    let name = instrument.replace('/', "%2F");
    let request = format!("GET /book/stream?instrument={name} HTTP/1.0\r\nHost: test\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut lines = BufReader::new(stream).lines();
    let status = lines.next_line().await.unwrap().unwrap_or_default();
    assert!(status.contains(" 200 "), "{status}");
    let mut events = Vec::new();
    let mut synced_at = None;
    let read = async {
        while let Some(line) = lines.next_line().await.unwrap() {
            let Some(data) = line.strip_prefix("data: ") else {
                continue;
            };
            let event: serde_json::Value = serde_json::from_str(data).unwrap();
            let synced = event["venue_quotes"]
                .as_array()
                .is_some_and(|venues| venues.iter().all(|v| v["state"] == "synced"));
            let both_sides = event["bids"].as_array().is_some_and(|b| !b.is_empty())
                && event["asks"].as_array().is_some_and(|a| !a.is_empty());
            events.push(event);
            if synced && both_sides && synced_at.is_none() {
                synced_at = Some((Instant::now(), events.len()));
            }
            if synced_at.is_some_and(|(_, at)| events.len() == at + more) {
                return;
            }
        }
    };
    tokio::time::timeout(WAIT, read)
        .await
        .unwrap_or_else(|_| panic!("{instrument}: no synced book on the stream within {WAIT:?}"));
    (events, synced_at.expect("read until synced").0)
}

fn levels(levels: &serde_json::Value) -> Vec<(String, String, String)> {
    let levels = levels.as_array().unwrap().iter();
    levels
        .map(|level| {
            let text = |key: &str| level[key].as_str().unwrap().to_owned();
            (text("exchange"), text("price"), text("amount"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_and_each_instrument_s_latest_book_are_served() {
    let (_simulator, config) = on_the_simulator().await;
    let config = config
        .set(
            "web.updates_per_second",
            1_000 / INTERVAL.as_millis() as i64,
        )
        .build();
    let written = common::EverySummary::default();
    let listeners = Listeners::loopback().await.unwrap();
    let metrics = listeners.metrics.local_addr().unwrap();
    let service = Service::start_observed(config, listeners, written.clone()).unwrap();

    // The page, its files, and the instruments to pick from.
    let (status, page) = crate::service::http_get(metrics, "/book").await;
    assert_eq!(status, 200);
    assert!(page.contains("/book/app.js") && page.contains("/book/style.css"));
    for file in ["/book/app.js", "/book/style.css"] {
        let (status, body) = crate::service::http_get(metrics, file).await;
        assert!(status == 200 && !body.is_empty(), "{file}: {status}");
    }
    let (_, names) = crate::service::http_get(metrics, "/book/instruments").await;
    let names: Vec<String> = serde_json::from_str(&names).unwrap();
    assert_eq!(names, INSTRUMENTS);
    let (status, _) = crate::service::http_get(metrics, "/book/stream?instrument=XRP%2FEUR").await;
    assert_eq!(status, 404);

    // Each instrument's stream: its own books, newer each time, each exactly as the
    // merger wrote it, until its venues are synced.
    for (index, instrument) in INSTRUMENTS.iter().enumerate() {
        let (events, synced_at) = events_until_synced(metrics, instrument, MORE).await;
        // Coalesced: an interval at least between two events, however many books the
        // merger writes meanwhile (a bound a slower machine only makes easier to meet).
        let took = synced_at.elapsed();
        assert!(took >= INTERVAL * MORE as u32, "{MORE} events in {took:?}");
        let sequences: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
        assert!(
            sequences.windows(2).all(|pair| pair[0] < pair[1]),
            "{sequences:?}"
        );
        let summaries = written.0.lock().unwrap();
        for event in &events {
            assert_eq!(event["instrument"], *instrument);
            let sequence = event["seq"].as_u64().unwrap();
            let summary = summaries
                .iter()
                .find(|s| s.instrument == index && s.sequence == sequence)
                .unwrap_or_else(|| panic!("{instrument}: no summary {sequence} written"));
            let exact = exact_summary(
                &service.config().instruments[index],
                summary,
                summary.charges_fees,
            );
            let expected = |side: &[mergebook::publish::proto::ExactLevel]| {
                let side = side.iter();
                side.map(|l| (l.exchange.clone(), l.price.clone(), l.amount.clone()))
                    .collect::<Vec<_>>()
            };
            assert_eq!(levels(&event["bids"]), expected(&exact.bids));
            assert_eq!(levels(&event["asks"]), expected(&exact.asks));
            assert_eq!(event["spread"], exact.spread);
        }
    }
    service.stop().await;
}

/// A page that stops reading its stream (a stalled tab) is dropped once its writes have
/// waited the port's request timeout, and counted; the service holds one event for it
/// meanwhile, never a queue.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_page_is_dropped() {
    let (_simulator, config) = on_the_simulator().await;
    let config = config
        .set("web.updates_per_second", 60)
        .set("metrics.request_timeout_ms", 200)
        .build();
    let listeners = Listeners::loopback().await.unwrap();
    let metrics = listeners.metrics.local_addr().unwrap();
    let service = Service::start(config, listeners).unwrap();
    // A client with a small receive buffer that asks for the stream and reads nothing.
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
    socket.set_recv_buffer_size(4096).unwrap();
    socket.connect(&metrics.into()).unwrap();
    let mut stalled: std::net::TcpStream = socket.into();
    use std::io::{Read, Write};
    stalled
        .write_all(b"GET /book/stream HTTP/1.0\r\nHost: test\r\n\r\n")
        .unwrap();
    let series = "orderbook_connections_stalled_total{port=\"metrics\"}";
    common::eventually("the stalled page dropped", WAIT, || {
        common::service_metric(&service, series) >= 1.0
    })
    .await;
    // What it was sent before, then the end: the service closed it.
    stalled.set_read_timeout(Some(WAIT)).unwrap();
    let mut rest = Vec::new();
    stalled
        .read_to_end(&mut rest)
        .expect("closed by the service");
    assert!(
        rest.starts_with(b"HTTP/1.0 200"),
        "{:?}",
        String::from_utf8_lossy(&rest[..64.min(rest.len())])
    );
    service.stop().await;
}

/// Off unless configured: the metrics port serves no page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_is_off_by_default() {
    let config = TestConfig::new()
        .venue_url(VenueId::Bitstamp, "ws://127.0.0.1:9")
        .instrument("ETH/BTC", &[(VenueId::Bitstamp, "ethbtc")])
        .build();
    let listeners = Listeners::loopback().await.unwrap();
    let metrics = listeners.metrics.local_addr().unwrap();
    let service = Service::start(config, listeners).unwrap();
    let (status, _) = crate::service::http_get(metrics, "/book").await;
    assert_eq!(status, 404);
    let (status, _) = crate::service::http_get(metrics, "/book/stream").await;
    assert_eq!(status, 404);
    service.stop().await;
}

/// The page in a real browser: the live ladder is a book the merger wrote, the depth chart
/// has a bar a level, the books follow the merger's, another instrument is picked, and a
/// lost service is shown (the last book kept) until it is back on its port.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_in_a_browser_follows_the_book_and_the_service_s_restart() {
    let (_simulator, config) = on_the_simulator().await;
    let config = config.build();
    let written = common::EverySummary::default();
    let listeners = Listeners::loopback().await.unwrap();
    let metrics = listeners.metrics.local_addr().unwrap();
    let service = Service::start_observed(config.clone(), listeners, written.clone()).unwrap();
    let Some(mut browser) = common::browser::Browser::open(&format!("http://{metrics}/book")).await
    else {
        return;
    };

    let live_and_synced = |venues: usize| {
        format!(
            "document.getElementById('link').textContent === 'live' \
             && document.querySelectorAll('#venues .state-synced').length === {venues} \
             && document.querySelectorAll('#ladder tr.bid').length === 10 \
             && document.querySelectorAll('#ladder tr.ask').length === 10"
        )
    };
    browser
        .wait_for("the live ladder of both venues", &live_and_synced(2))
        .await;

    // What the page shows, read at once: a book the merger wrote, level for level (asks
    // from the worst down, then bids), and a bar of the chart for each level.
    let shown = browser
        .eval(
            "({ seq: Number(document.body.dataset.seq), \
                rows: [...document.querySelectorAll('#ladder tr.level')] \
                  .map(r => [...r.cells].slice(0, 3).map(c => c.textContent)), \
                bars: document.querySelectorAll('#depth rect.depth').length })",
        )
        .await;
    let sequence = shown["seq"].as_u64().unwrap();
    let expected = {
        let summaries = written.0.lock().unwrap();
        let summary = summaries
            .iter()
            .find(|s| s.instrument == 0 && s.sequence == sequence)
            .expect("the page's book was written");
        let exact = exact_summary(&config.instruments[0], summary, summary.charges_fees);
        let row = |level: &mergebook::publish::proto::ExactLevel| {
            vec![
                level.exchange.clone(),
                level.price.clone(),
                level.amount.clone(),
            ]
        };
        let asks = exact.asks.iter().rev().map(row);
        serde_json::json!(asks.chain(exact.bids.iter().map(row)).collect::<Vec<_>>())
    };
    assert_eq!(shown["rows"], expected);
    assert_eq!(shown["bars"], 20);
    // The README's picture of it.
    if let Some(path) = std::env::var_os("MERGEBOOK_WEB_SCREENSHOT") {
        std::fs::write(path, browser.screenshot().await).unwrap();
    }

    let newer = format!("Number(document.body.dataset.seq) > {sequence}");
    browser.wait_for("a newer book", &newer).await;

    // Another instrument, picked as a user picks it.
    browser
        .eval(
            "(() => { const picker = document.getElementById('instrument'); \
             picker.value = 'BTC/USD'; picker.dispatchEvent(new Event('change')); })()",
        )
        .await;
    let btc_usd = format!(
        "document.getElementById('ladder-title').textContent.startsWith('BTC/USD') && {}",
        live_and_synced(1)
    );
    browser.wait_for("BTC/USD picked", &btc_usd).await;

    // The service goes away: the page says so and keeps the last book.
    service.stop().await;
    browser
        .wait_for(
            "the lost connection",
            "document.getElementById('link').textContent.startsWith('connection lost') \
             && document.querySelectorAll('#ladder tr.level').length === 20",
        )
        .await;
    // Back on the same port: the page follows it again by itself.
    let listeners = Listeners {
        grpc: TcpListener::bind("127.0.0.1:0").await.unwrap(),
        metrics: TcpListener::bind(metrics).await.unwrap(),
    };
    let service = Service::start(config, listeners).unwrap();
    browser
        .wait_for("the book after the restart", &btc_usd)
        .await;
    service.stop().await;
}
