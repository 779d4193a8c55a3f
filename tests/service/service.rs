//! The service end to end, in process: the embedded simulator serves both venues over
//! real loopback WebSockets, the real readers, merger thread and publishers run, and the
//! tests watch what consumers see. Ports are bound to 0; nothing sleeps to synchronise
//! except where the behaviour under test is a timeout.

use crate::common;
use common::config::TestConfig;

use mergebook::merger::kway::{MergedBook, Origin, VenueBook, merge};
use mergebook::merger::summary::{Summary, VenueState};
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

pub(crate) const DEPTH: usize = 10;
pub(crate) const WAIT: Duration = Duration::from_secs(20);

pub(crate) struct Harness {
    pub(crate) simulator: Simulator,
    pub(crate) service: Service,
    pub(crate) grpc: SocketAddr,
    pub(crate) metrics: SocketAddr,
}

pub(crate) async fn start(stale_after_ms: u64) -> Harness {
    start_with(stale_after_ms, |_| {}).await
}

/// As `start`, Binance charging `binance_fee_bps` (`venues.binance.taker_fee_bps`).
pub(crate) async fn start_with_fee(stale_after_ms: u64, binance_fee_bps: &str) -> Harness {
    let simulator = simulator().await;
    let binance_url = simulator.url(VenueId::Binance);
    let config = harness_config(&simulator, stale_after_ms, &binance_url)
        .set("venues.binance.taker_fee_bps", binance_fee_bps);
    serve_config(simulator, &config).await
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
    let config = harness_config(&simulator, stale_after_ms, binance_url);
    serve_config(simulator, &config).await
}

/// ETH/BTC on Binance (at `binance_url`) and Bitstamp.
fn harness_config(simulator: &Simulator, stale_after_ms: u64, binance_url: &str) -> TestConfig {
    TestConfig::new()
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
}

async fn serve_config(simulator: Simulator, config: &TestConfig) -> Harness {
    let config = config.build();
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
pub(crate) async fn wait_for(
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
            summaries.borrow().source_states
        )
    })
}

pub(crate) fn both_synced(summary: &Summary) -> bool {
    summary.venue_state(VenueId::Binance) == VenueState::Synced
        && summary.venue_state(VenueId::Bitstamp) == VenueState::Synced
}

/// Polls `condition` every 20 ms until it holds, failing the test after `WAIT`.
pub(crate) async fn eventually<F: std::future::Future<Output = bool>>(
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

pub(crate) async fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
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
    harness.simulator.pause_until_silent(VenueId::Binance).await;
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
/// pause doubling to 200 ms, jittered down to at most half, the k-th refused attempt is
/// followed by the next no sooner than min(20·2^k, 200) / 2 ms; a backoff reset by the
/// earlier good connection would retry every 10–20 ms. Only lower bounds: a loaded
/// machine makes the pauses longer, never shorter.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_venue_refusing_after_a_good_connection_is_retried_ever_less_often() {
    const ATTEMPTS: usize = 6;
    let simulator = simulator().await;
    // A front for Binance: the first connection is passed through to the simulator until
    // `cut` is notified; every later one is timed and closed at once.
    let front = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let front_addr = front.local_addr().unwrap();
    let simulator_addr = simulator.addr();
    let refused_at = Arc::new(std::sync::Mutex::new(Vec::new()));
    let cut = Arc::new(tokio::sync::Notify::new());
    let (timed, cutting) = (Arc::clone(&refused_at), Arc::clone(&cut));
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
            timed.lock().unwrap().push(std::time::Instant::now());
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
    eventually("six refused attempts", || async {
        refused_at.lock().unwrap().len() >= ATTEMPTS
    })
    .await;
    let attempts = refused_at.lock().unwrap().clone();
    let pauses_ms: Vec<u128> = attempts
        .windows(2)
        .map(|pair| (pair[1] - pair[0]).as_millis())
        .collect();
    let least_ms: Vec<u128> = (1..ATTEMPTS as u32)
        .map(|k| (20u128 << k).min(200) / 2)
        .collect();
    assert!(
        pauses_ms
            .iter()
            .zip(&least_ms)
            .all(|(pause, least)| pause >= least),
        "pauses {pauses_ms:?} ms between refused attempts, each at least {least_ms:?}"
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
    harness.simulator.pause_until_silent(VenueId::Binance).await;
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
    harness.simulator.pause_until_silent(VenueId::Binance).await;
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
                origin: Origin {
                    venue: VenueId::Binance,
                    source: 0,
                },
                book: &binance.books[0],
            },
            VenueBook {
                origin: Origin {
                    venue: VenueId::Bitstamp,
                    source: 1,
                },
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

/// A venue's symbols beyond what one connection may carry go on another connection:
/// every instrument gets its books, over as many connections as the limit asks for.
/// `config` with `count` instruments on the simulator's Bitstamp alone, 5 levels deep.
fn bitstamp_instruments(config: TestConfig, simulator: &Simulator, count: usize) -> TestConfig {
    let venue = VenueId::Bitstamp;
    (0..count).fold(
        config.set("service.depth", 5).on(simulator, &[venue]),
        |config, n| config.instrument(&format!("I{n}"), &[(venue, &format!("p{n}usd"))]),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symbols_beyond_one_connection_s_limit_open_another() {
    let simulator =
        Simulator::start(TcpListener::bind("127.0.0.1:0").await.unwrap(), 10, 7).unwrap();
    let venue = VenueId::Bitstamp;
    let count = venue.facts().max_streams_per_connection + 1;
    let config = bitstamp_instruments(TestConfig::new(), &simulator, count).build();
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

/// The whole market's settings (docs/operations.md): the merger serving in batches, one
/// fan-out for every instrument, one reader thread reading its sockets once a millisecond.
pub(crate) fn whole_market() -> TestConfig {
    TestConfig::new()
        .set("merger.idle", "batch")
        .set("merger.batch_us", 1000)
        .set("feed.reader_threads", 1)
        .set("feed.batch_us", 1000)
}

/// The whole market's settings: the merger serving in batches, one reader thread reading
/// the sockets of two connections once a millisecond. Every book is synced on both, and
/// each keeps moving: the next summary of every instrument holds a newer book.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_batches_on_one_shared_reader_thread_every_book_is_synced_and_moves() {
    let simulator =
        Simulator::start(TcpListener::bind("127.0.0.1:0").await.unwrap(), 50, 7).unwrap();
    let venue = VenueId::Bitstamp;
    let count = venue.facts().max_streams_per_connection + 1;
    let config = bitstamp_instruments(whole_market(), &simulator, count).build();
    let service = Service::start(config, Listeners::loopback().await.unwrap()).unwrap();
    for index in 0..count {
        let mut summaries = service.summaries(index);
        let synced = wait_for(&mut summaries, |s| {
            s.venue_state(venue) == VenueState::Synced
        })
        .await;
        let sequence = synced.source_sequence[0];
        wait_for(&mut summaries, |s| {
            s.venue_state(venue) == VenueState::Synced && s.source_sequence[0] > sequence
        })
        .await;
    }
    assert_eq!(simulator.connections(venue), 2);
    service.stop().await;
}
