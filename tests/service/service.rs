//! The service end to end, in process: the embedded simulator serves both venues over
//! real loopback WebSockets, the real readers, merger thread and publishers run, and the
//! tests watch what consumers see. Ports are bound to 0; nothing sleeps to synchronise
//! except where the behaviour under test is a timeout.

use crate::common;
use common::config::TestConfig;

use mergebook::config::RawConfig;
use mergebook::merger::kway::{MergedBook, VenueBook, merge};
use mergebook::merger::summary::{Summary, VenueState};
use mergebook::publish::jsonl;
use mergebook::publish::proto::{self, orderbook_aggregator_client::OrderbookAggregatorClient};
use mergebook::service::{Listeners, Service};
use mergebook::sim::{Recording, Simulator};
use mergebook::venue::VenueId;
use serde_json::Value;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::sync::watch;

const DEPTH: usize = 10;
const WAIT: Duration = Duration::from_secs(20);

struct Harness {
    simulator: Simulator,
    service: Service,
    grpc: SocketAddr,
    metrics: SocketAddr,
}

async fn start(stale_after_ms: u64) -> Harness {
    start_with(stale_after_ms, |_| {}).await
}

/// `setup` configures the simulator before the service connects to it.
async fn start_with(stale_after_ms: u64, setup: impl FnOnce(&Simulator)) -> Harness {
    let simulator = simulator().await;
    setup(&simulator);
    let binance_url = simulator.url(VenueId::Binance);
    serve(simulator, stale_after_ms, &binance_url).await
}

async fn simulator() -> Simulator {
    Simulator::start(TcpListener::bind("127.0.0.1:0").await.unwrap(), 50, 7).unwrap()
}

/// The service on `simulator`, its Binance reader connecting to `binance_url`.
async fn serve(simulator: Simulator, stale_after_ms: u64, binance_url: &str) -> Harness {
    let config = TestConfig::new()
        .set("service.depth", DEPTH as i64)
        .set("service.stale_after_ms", stale_after_ms as i64)
        .set("feed.backoff_initial_ms", 20)
        .set("feed.backoff_max_ms", 200)
        .venue_url(VenueId::Binance, binance_url)
        .venue_url(VenueId::Bitstamp, simulator.url(VenueId::Bitstamp))
        .instrument(
            "ETH/BTC",
            &[(VenueId::Binance, "ETHBTC"), (VenueId::Bitstamp, "ethbtc")],
        )
        .build();
    let listeners = Listeners::loopback().await.unwrap();
    let grpc_addr = listeners.grpc.local_addr().unwrap();
    let metrics_addr = listeners.metrics.local_addr().unwrap();
    let service = Service::start(config, listeners).unwrap();
    Harness {
        simulator,
        service,
        grpc: grpc_addr,
        metrics: metrics_addr,
    }
}

/// Waits for a summary satisfying `accept`, failing the test after `WAIT`.
async fn wait_for(
    summaries: &mut watch::Receiver<Arc<Summary>>,
    accept: impl Fn(&Summary) -> bool,
) -> Arc<Summary> {
    let found = tokio::time::timeout(WAIT, summaries.wait_for(|summary| accept(summary)))
        .await
        .ok()
        .and_then(Result::ok)
        .map(|summary| summary.clone());
    found.unwrap_or_else(|| {
        panic!(
            "no such summary within {WAIT:?}; last: {:?}",
            summaries.borrow().venues
        )
    })
}

fn both_synced(summary: &Summary) -> bool {
    summary.venue_state(VenueId::Binance) == VenueState::Synced
        && summary.venue_state(VenueId::Bitstamp) == VenueState::Synced
}

/// Polls `condition` every 20 ms until it holds, failing the test after `WAIT`.
async fn eventually<F: std::future::Future<Output = bool>>(
    what: &str,
    mut condition: impl FnMut() -> F,
) {
    let deadline = tokio::time::Instant::now() + WAIT;
    while !condition().await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {WAIT:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: test\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// The value of one sample line of the /metrics text, e.g. `name{exchange="binance"}`.
fn metric(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|line| {
            line.strip_prefix(series)
                .and_then(|rest| rest.trim().parse().ok())
        })
        .unwrap_or_else(|| panic!("{series} not in /metrics"))
}

/// (exchange, price, amount) — the independent merge of the simulator's last frames:
/// serde_json, concatenate, sort by price, larger amount, venue; take DEPTH.
fn independent_merge(simulator: &Simulator, side: &str) -> Vec<(String, String, String)> {
    let mut levels = Vec::new();
    for (venue, stream) in [
        (VenueId::Binance, "ethbtc@depth10@100ms"),
        (VenueId::Bitstamp, "order_book_ethbtc"),
    ] {
        let frame: Value = serde_json::from_str(
            &simulator
                .last_sent(venue, stream)
                .expect("a frame was sent"),
        )
        .unwrap();
        for level in frame["data"][side].as_array().unwrap().iter().take(DEPTH) {
            let text = |index: usize| level[index].as_str().unwrap().to_owned();
            levels.push((venue.name().to_owned(), text(0), text(1)));
        }
    }
    let number = |text: &String| text.parse::<f64>().unwrap();
    levels.sort_by(|a, b| {
        let price = number(&a.1).partial_cmp(&number(&b.1)).unwrap();
        let price = if side == "bids" {
            price.reverse()
        } else {
            price
        };
        price
            .then(number(&b.2).partial_cmp(&number(&a.2)).unwrap())
            .then(a.0.cmp(&b.0))
    });
    levels.truncate(DEPTH);
    levels
}

/// One side (`bids`, `asks`) of `summary` as its JSON line writes it: (exchange, price,
/// amount).
fn line_levels(summary: &Summary, side: &str) -> Vec<(String, String, String)> {
    let mut line = Vec::new();
    jsonl::write_summary(&mut line, "ETH/BTC", summary).unwrap();
    let line: Value = serde_json::from_slice(&line).unwrap();
    line[side]
        .as_array()
        .unwrap()
        .iter()
        .map(|level| {
            let field = |key: &str| level[key].as_str().unwrap().to_owned();
            (field("exchange"), field("price"), field("amount"))
        })
        .collect()
}

fn exact_levels(levels: &[proto::ExactLevel]) -> Vec<(String, String, String)> {
    levels
        .iter()
        .map(|l| (l.exchange.clone(), l.price.clone(), l.amount.clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_and_json_lines_carry_the_merge_of_what_the_venues_sent() {
    let harness = start(60_000).await;
    let mut summaries = harness.service.summaries(0);
    wait_for(&mut summaries, both_synced).await;

    // Freeze the market; compare the summary that holds the frames each venue sent last.
    // (Waited for as a condition, not a time: a loaded machine delivers them late.)
    harness.simulator.pause(VenueId::Binance, true);
    harness.simulator.pause(VenueId::Bitstamp, true);
    let holds_the_last_frames = |summary: &Summary| {
        ["bids", "asks"]
            .iter()
            .all(|side| line_levels(summary, side) == independent_merge(&harness.simulator, side))
    };
    let last_sequence = wait_for(&mut summaries, holds_the_last_frames)
        .await
        .sequence;
    let expected_bids = independent_merge(&harness.simulator, "bids");
    let expected_asks = independent_merge(&harness.simulator, "asks");

    let mut client = OrderbookAggregatorClient::connect(format!("http://{}", harness.grpc))
        .await
        .unwrap();
    let request = proto::SummaryRequest {
        instrument: "ETH/BTC".into(),
    };
    let mut exact = client
        .book_summary_exact(request)
        .await
        .unwrap()
        .into_inner();
    let summary = exact
        .message()
        .await
        .unwrap()
        .expect("the current summary is sent at once");
    assert_eq!(exact_levels(&summary.bids), expected_bids);
    assert_eq!(exact_levels(&summary.asks), expected_asks);
    assert_eq!(summary.seq, last_sequence);
    assert_eq!(summary.venues["binance"], "synced");
    let instruments = client.instruments(proto::Empty {}).await.unwrap();
    assert_eq!(instruments.into_inner().names, ["ETH/BTC"]);
    // Each venue's own best prices: its first level on each side of the merged book.
    let quotes: Vec<_> = summary
        .venue_quotes
        .iter()
        .map(|q| (q.exchange.as_str(), q.state.as_str(), q.book_age_ns > 0))
        .collect();
    assert_eq!(
        quotes,
        [("binance", "synced", true), ("bitstamp", "synced", true)]
    );
    for quote in &summary.venue_quotes {
        let best = |levels: &[(String, String, String)]| {
            levels
                .iter()
                .find(|level| level.0 == quote.exchange)
                .map(|level| level.1.clone())
                .unwrap()
        };
        assert_eq!(quote.best_bid, best(&expected_bids), "{}", quote.exchange);
        assert_eq!(quote.best_ask, best(&expected_asks), "{}", quote.exchange);
    }
    let spread =
        expected_asks[0].1.parse::<f64>().unwrap() - expected_bids[0].1.parse::<f64>().unwrap();
    assert!((summary.spread.parse::<f64>().unwrap() - spread).abs() < 1e-9);

    // The legacy contract: same book, as doubles.
    let mut legacy = client
        .book_summary(proto::Empty {})
        .await
        .unwrap()
        .into_inner();
    let summary = legacy.message().await.unwrap().unwrap();
    let legacy_bids: Vec<(String, f64)> = summary
        .bids
        .iter()
        .map(|l| (l.exchange.clone(), l.price))
        .collect();
    let expected: Vec<(String, f64)> = expected_bids
        .iter()
        .map(|l| (l.0.clone(), l.1.parse().unwrap()))
        .collect();
    assert_eq!(legacy_bids, expected);

    // The JSON line for the same summary carries the same exact decimals.
    let current = summaries.borrow().clone();
    assert_eq!(line_levels(&current, "bids"), expected_bids);
    let mut line = Vec::new();
    jsonl::write_summary(&mut line, "ETH/BTC", &current).unwrap();
    let line: Value = serde_json::from_slice(&line).unwrap();
    assert_eq!(line["seq"], last_sequence);

    // An unknown instrument is refused by name.
    let missing = client
        .book_summary_exact(proto::SummaryRequest {
            instrument: "XRP/EUR".into(),
        })
        .await;
    assert_eq!(missing.unwrap_err().code(), tonic::Code::NotFound);
    // Shutdown closes each venue's WebSocket with a close frame.
    harness.service.stop().await;
    for venue in [VenueId::Binance, VenueId::Bitstamp] {
        eventually("a close frame from each reader", || async {
            harness.simulator.closes(venue) == 1
        })
        .await;
    }
}

/// grpcurl, grpcui and Postman find the services and their messages by server
/// reflection, without the proto file (`grpcurl -plaintext ADDR list`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grpc_reflection_lists_the_services_and_describes_them() {
    use prost::Message;
    use tonic_reflection::pb::v1::{
        ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
        server_reflection_request::MessageRequest, server_reflection_response::MessageResponse,
    };
    let harness = start(60_000).await;
    let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", harness.grpc))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut client = ServerReflectionClient::new(channel);
    // A request stream of one message, which the service answers once.
    let ask = |request: MessageRequest| {
        futures_util::stream::iter([ServerReflectionRequest {
            host: String::new(),
            message_request: Some(request),
        }])
    };
    let mut answers = client
        .server_reflection_info(ask(MessageRequest::ListServices(String::new())))
        .await
        .unwrap()
        .into_inner();
    let Some(MessageResponse::ListServicesResponse(list)) =
        answers.message().await.unwrap().unwrap().message_response
    else {
        panic!("not a service list");
    };
    let mut names: Vec<_> = list.service.into_iter().map(|s| s.name).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "grpc.reflection.v1.ServerReflection",
            "orderbook.OrderbookAggregator"
        ]
    );

    let mut answers = client
        .server_reflection_info(ask(MessageRequest::FileContainingSymbol(
            "orderbook.OrderbookAggregator".into(),
        )))
        .await
        .unwrap()
        .into_inner();
    let Some(MessageResponse::FileDescriptorResponse(files)) =
        answers.message().await.unwrap().unwrap().message_response
    else {
        panic!("not a file descriptor");
    };
    let file =
        prost_types::FileDescriptorProto::decode(&files.file_descriptor_proto[0][..]).unwrap();
    let methods: Vec<_> = file.service[0]
        .method
        .iter()
        .map(|method| method.name().to_owned())
        .collect();
    assert_eq!(methods, ["BookSummary", "BookSummaryExact", "Instruments"]);
    harness.service.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cut_connection_reconnects_resubscribes_and_resumes() {
    let harness = start(60_000).await;
    let mut summaries = harness.service.summaries(0);
    wait_for(&mut summaries, both_synced).await;
    assert_eq!(harness.simulator.connections(VenueId::Binance), 1);

    // Pings are answered (Binance drops clients that do not answer); new connections
    // of the simulator ping every 20 ms from now on.
    harness
        .simulator
        .set_ping_interval(VenueId::Binance, Duration::from_millis(20));
    // Paused, the new connection carries no book until the venue has been seen out of
    // the merge: a latest-value consumer could otherwise miss that brief state.
    harness.simulator.pause(VenueId::Binance, true);
    harness.simulator.disconnect(VenueId::Binance);
    wait_for(&mut summaries, |s| {
        s.venue_state(VenueId::Binance) != VenueState::Synced
    })
    .await;
    harness.simulator.pause(VenueId::Binance, false);
    let resumed = wait_for(&mut summaries, both_synced).await;
    assert_eq!(
        harness.simulator.connections(VenueId::Binance),
        2,
        "one reconnection"
    );
    assert!(
        resumed
            .book
            .bids
            .as_slice()
            .iter()
            .any(|level| level.venue == VenueId::Binance)
    );

    // The reconnected reader answers the simulator's pings.
    eventually("pongs for the simulator's pings", || async {
        harness.simulator.pongs(VenueId::Binance) >= 2
    })
    .await;

    // The venue's own reconnect request is followed at once, too.
    harness.simulator.request_reconnect(VenueId::Bitstamp);
    eventually("Bitstamp reconnects", || async {
        harness.simulator.connections(VenueId::Bitstamp) >= 2
    })
    .await;
    wait_for(&mut summaries, both_synced).await;

    let (_, text) = http_get(harness.metrics, "/metrics").await;
    assert!(
        metric(
            &text,
            r#"orderbook_reconnections_total{exchange="binance"}"#
        ) >= 1.0
    );
    assert!(
        metric(
            &text,
            r#"orderbook_reconnections_total{exchange="bitstamp"}"#
        ) >= 1.0
    );
    harness.service.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_venue_is_evicted_and_health_degrades() {
    let harness = start(300).await;
    let mut summaries = harness.service.summaries(0);
    wait_for(&mut summaries, both_synced).await;
    let (status, body) = http_get(harness.metrics, "/health").await;
    assert_eq!(
        (status, body.contains(r#""status":"OK""#)),
        (200, true),
        "{body}"
    );

    harness.simulator.pause(VenueId::Bitstamp, true);
    let evicted = wait_for(&mut summaries, |s| {
        s.venue_state(VenueId::Bitstamp) == VenueState::Stale
    })
    .await;
    assert!(
        evicted
            .book
            .bids
            .as_slice()
            .iter()
            .all(|level| level.venue == VenueId::Binance)
    );
    assert!(
        evicted
            .book
            .asks
            .as_slice()
            .iter()
            .all(|level| level.venue == VenueId::Binance)
    );
    assert_eq!(evicted.book.bids.as_slice().len(), DEPTH);
    let (status, body) = http_get(harness.metrics, "/health").await;
    assert_eq!(status, 200);
    let health: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(health["status"], "DEGRADED");
    assert_eq!(health["instruments"]["ETH/BTC"]["bitstamp"], "stale");
    assert_eq!(health["instruments"]["ETH/BTC"]["binance"], "synced");
    let (_, text) = http_get(harness.metrics, "/metrics").await;
    assert!(
        metric(
            &text,
            r#"orderbook_stale_evictions_total{exchange="bitstamp"}"#
        ) >= 1.0
    );
    assert_eq!(
        metric(
            &text,
            r#"orderbook_venue_up{exchange="bitstamp",instrument="ETH/BTC"}"#
        ),
        0.0
    );

    harness.simulator.pause(VenueId::Binance, true);
    wait_for(&mut summaries, |s| {
        s.venue_state(VenueId::Binance) == VenueState::Stale
    })
    .await;
    let (status, body) = http_get(harness.metrics, "/health").await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains(r#""status":"DOWN""#), "{body}");

    // Resumed, the venue is merged again.
    harness.simulator.pause(VenueId::Bitstamp, false);
    harness.simulator.pause(VenueId::Binance, false);
    wait_for(&mut summaries, both_synced).await;
    harness.service.stop().await;
}

/// After a good connection, a venue that refuses every new connection is retried ever less
/// often: the backoff starts over only after a connection has delivered books for a
/// while (`feed.backoff_reset_after_ms`), not because one ever did. With a 20 ms first
/// pause doubling to 200 ms (jittered down to half), 2 s hold at most about 23 attempts;
/// a backoff reset by the earlier good connection would retry every 10–20 ms, over a
/// hundred.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_venue_refusing_after_a_good_connection_is_retried_ever_less_often() {
    use std::sync::atomic::{AtomicU64, Ordering};
    let simulator = simulator().await;
    // A front for Binance: the first connection is passed through to the simulator until
    // `cut` is notified; every later one is counted and closed at once.
    let front = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let front_addr = front.local_addr().unwrap();
    let simulator_addr = simulator.addr();
    let refused = Arc::new(AtomicU64::new(0));
    let cut = Arc::new(tokio::sync::Notify::new());
    let (counted, cutting) = (Arc::clone(&refused), Arc::clone(&cut));
    tokio::spawn(async move {
        let (mut first, _) = front.accept().await.unwrap();
        let mut upstream = tokio::net::TcpStream::connect(simulator_addr)
            .await
            .unwrap();
        tokio::spawn(async move {
            tokio::select! {
                _ = tokio::io::copy_bidirectional(&mut first, &mut upstream) => {}
                _ = cutting.notified() => {}
            }
        });
        loop {
            let (connection, _) = front.accept().await.unwrap();
            counted.fetch_add(1, Ordering::Relaxed);
            drop(connection);
        }
    });
    let binance_url = simulator
        .url(VenueId::Binance)
        .replace(&simulator_addr.to_string(), &front_addr.to_string());
    let harness = serve(simulator, 60_000, &binance_url).await;
    let mut summaries = harness.service.summaries(0);
    wait_for(&mut summaries, both_synced).await;
    cut.notify_one();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let attempts = refused.load(Ordering::Relaxed);
    assert!(
        (3..=23).contains(&attempts),
        "{attempts} connection attempts in 2 s after the good connection"
    );
    harness.service.stop().await;
}

/// A venue whose book has bids and no asks is shown `one-sided` and left out of the merge
/// (its bids could cross the other venue's asks unseen), and /health says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_one_sided_book_is_shown_and_left_out_of_the_merge() {
    let harness = start(60_000).await;
    let mut summaries = harness.service.summaries(0);
    wait_for(&mut summaries, both_synced).await;
    let frame = harness
        .simulator
        .last_sent(VenueId::Binance, "ethbtc@depth10@100ms")
        .unwrap();
    let asks = frame.find("\"asks\":").unwrap();
    let bids_only = format!("{}\"asks\":[]}}}}", &frame[..asks]);
    harness.simulator.pause(VenueId::Binance, true);
    harness.simulator.send_raw(VenueId::Binance, bids_only);
    let summary = wait_for(&mut summaries, |summary| {
        summary.venue_state(VenueId::Binance) == VenueState::OneSided
    })
    .await;
    let levels = summary
        .book
        .bids
        .as_slice()
        .iter()
        .chain(summary.book.asks.as_slice());
    assert!(
        levels
            .into_iter()
            .all(|level| level.venue == VenueId::Bitstamp)
    );
    let (status, body) = http_get(harness.metrics, "/health").await;
    assert_eq!(status, 200);
    assert!(
        body.contains("DEGRADED") && body.contains("\"binance\":\"one-sided\""),
        "{body}"
    );
    harness.simulator.pause(VenueId::Binance, false);
    wait_for(&mut summaries, both_synced).await;
    harness.service.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_frames_are_counted_and_never_reach_the_merged_book() {
    let harness = start(60_000).await;
    let mut summaries = harness.service.summaries(0);
    wait_for(&mut summaries, both_synced).await;

    // Record every summary from here on.
    let mut watcher = harness.service.summaries(0);
    let recorder = tokio::spawn(async move {
        let mut seen = Vec::new();
        while watcher.changed().await.is_ok() {
            seen.push(watcher.borrow_and_update().clone());
        }
        seen
    });

    let frame = harness
        .simulator
        .last_sent(VenueId::Binance, "ethbtc@depth10@100ms")
        .unwrap();
    let bad_frames = [
        frame[..frame.len() / 2].to_owned(), // truncated mid-book
        frame.replace("\"0.0", "\"-0.0"),    // a negative price
        "{\"stream\":\"ethbtc@depth10@100ms\",\"data\":".into(), // truncated envelope
        "\u{1}garbage\u{7f}".into(),
    ];
    // No good Binance book until the out-of-sync state has been seen: a latest-value
    // consumer could otherwise miss a state that the next book (50 ms later) replaces.
    harness.simulator.pause(VenueId::Binance, true);
    for bad in &bad_frames {
        harness.simulator.send_raw(VenueId::Binance, bad.clone());
    }
    let sent = bad_frames.len() as f64;
    eventually("the bad frames are counted", || async {
        let (_, text) = http_get(harness.metrics, "/metrics").await;
        metric(
            &text,
            r#"orderbook_decode_errors_total{exchange="binance"}"#,
        ) >= sent
    })
    .await;
    wait_for(&mut summaries, |summary| {
        summary.venue_state(VenueId::Binance) == VenueState::OutOfSync
    })
    .await;
    // The connection stayed up and the venue recovers with its next good book.
    harness.simulator.pause(VenueId::Binance, false);
    wait_for(&mut summaries, both_synced).await;
    assert_eq!(harness.simulator.connections(VenueId::Binance), 1);

    harness.service.stop().await;
    let seen = recorder.await.unwrap();
    assert!(!seen.is_empty());
    for summary in &seen {
        let binance_bids = summary
            .book
            .bids
            .as_slice()
            .iter()
            .filter(|l| l.venue == VenueId::Binance)
            .count();
        if summary.venue_state(VenueId::Binance) != VenueState::Synced {
            assert_eq!(binance_bids, 0, "an excluded venue's levels were published");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulator_replays_recorded_frames_into_the_merged_book() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let binance = Recording::load(
        VenueId::Binance,
        &fixtures.join("binance/partial_depth20_BTCUSDT_combined.json"),
    );
    let bitstamp = Recording::load(
        VenueId::Bitstamp,
        &fixtures.join("bitstamp/order_book_btcusd_top100_samples_2020.jsonl"),
    );
    let (binance, bitstamp) = (binance.unwrap(), bitstamp.unwrap());
    assert_eq!(
        (
            binance.books.len(),
            bitstamp.books.len(),
            bitstamp.price_decimals
        ),
        (1, 2, 2)
    );
    let harness = start_with(60_000, |simulator| {
        simulator.replay(VenueId::Binance, binance.clone());
        simulator.replay(VenueId::Bitstamp, bitstamp.clone());
    })
    .await;
    let mut summaries = harness.service.summaries(0);
    let summary = wait_for(&mut summaries, both_synced).await;

    // The merged book is the merge of the recorded Binance book with one of the two
    // recorded Bitstamp books (they alternate).
    let merged_with = |bitstamp_book| {
        let inputs = [
            VenueBook {
                venue: VenueId::Binance,
                book: &binance.books[0],
            },
            VenueBook {
                venue: VenueId::Bitstamp,
                book: bitstamp_book,
            },
        ];
        let mut merged = MergedBook::default();
        merge(&inputs, DEPTH, &mut merged);
        merged
    };
    let candidates = [
        merged_with(&bitstamp.books[0]),
        merged_with(&bitstamp.books[1]),
    ];
    assert!(
        candidates
            .iter()
            .any(|merged| merged.bids == summary.book.bids && merged.asks == summary.book.asks)
    );
    // The re-encoded frames keep the recorded price decimals.
    let sent = harness
        .simulator
        .last_sent(VenueId::Bitstamp, "order_book_ethbtc")
        .unwrap();
    assert!(
        sent.contains(r#"[["9328.28", "0.05925332"]"#)
            || sent.contains(r#"[["19133.97", "0.01000000"]"#),
        "{sent}"
    );
    harness.service.stop().await;
}

/// /metrics is valid Prometheus text, as Prometheus's own checker reads it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_pass_promtool_check() {
    let Some(promtool) = common::tool("promtool", "prometheus") else {
        return;
    };
    let harness = start(60_000).await;
    let mut summaries = harness.service.summaries(0);
    wait_for(&mut summaries, both_synced).await;
    let (status, text) = http_get(harness.metrics, "/metrics").await;
    assert_eq!(status, 200);
    for name in [
        "orderbook_decode_duration_seconds_bucket",
        "orderbook_e2e_duration_seconds_bucket",
        "orderbook_messages_total",
        "orderbook_merges_total",
        "orderbook_book_age_seconds",
    ] {
        assert!(text.contains(name), "{name} missing");
    }
    let mut check = std::process::Command::new(promtool)
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut check.stdin.take().unwrap(), text.as_bytes()).unwrap();
    let output = check.wait_with_output().unwrap();
    let report = String::from_utf8_lossy(&output.stdout).into_owned()
        + &String::from_utf8_lossy(&output.stderr);
    // promtool exits non-zero on errors; lint notes (e.g. counters' naming) are printed
    // but are not format errors.
    assert!(
        output.status.success(),
        "promtool check metrics failed:\n{report}"
    );
    harness.service.stop().await;
}

/// A venue's symbols beyond what one connection may carry go on another connection:
/// every instrument gets its books, over as many connections as the limit asks for.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symbols_beyond_one_connection_s_limit_open_another() {
    let simulator =
        Simulator::start(TcpListener::bind("127.0.0.1:0").await.unwrap(), 10, 7).unwrap();
    let venue = VenueId::Bitstamp;
    let per_connection = venue.facts().max_streams_per_connection;
    let count = per_connection + 1;
    let instruments: String = (0..count)
        .map(|n| {
            format!("[[instruments]]\nname = \"I{n}\"\nsymbols = {{ bitstamp = \"p{n}usd\" }}\n")
        })
        .collect();
    let config = format!(
        "[service]\ndepth = 5\noutput = \"none\"\n[venues.bitstamp]\nurl = \"{}\"\n{instruments}",
        simulator.url(venue)
    );
    let config = RawConfig::parse(&config, "test")
        .unwrap()
        .validate()
        .unwrap();
    let service = Service::start(config, Listeners::loopback().await.unwrap()).unwrap();
    for index in 0..count {
        let mut summaries = service.summaries(index);
        wait_for(&mut summaries, |s| {
            s.venue_state(venue) == VenueState::Synced
        })
        .await;
    }
    assert_eq!(simulator.connections(venue), 2);
    service.stop().await;
}
