//! `mergebook replay` is the live service's twin: the same recorded frames — in order,
//! duplicated, reordered, truncated, of a stream not subscribed to — sent by the
//! simulator to the running service, and replayed from files, publish the same books
//! and venue states, summary for summary.

use crate::common;
use common::config::TestConfig;

use mergebook::service::{Listeners, Service};
use mergebook::sim::Simulator;
use mergebook::venue::VenueId;
use std::time::Duration;
use tokio::net::TcpListener;

const BINANCE: VenueId = VenueId::Binance;
const BITSTAMP: VenueId = VenueId::Bitstamp;
const DEPTH: usize = 20;
const WAIT: Duration = Duration::from_secs(20);

const BINANCE_BOOK: &str =
    include_str!("../fixtures/binance/partial_depth20_BTCUSDT_combined.json");
const BITSTAMP_BOOKS: &str =
    include_str!("../fixtures/bitstamp/order_book_btcusd_top100_samples_2020.jsonl");

/// The recorded Binance book with its `lastUpdateId` raised by `later` and its best
/// bid's amount replaced: a later book of the same stream.
fn binance_book(later: u64, best_bid_amount: &str) -> String {
    let recorded_id = 11_655_824_136u64;
    BINANCE_BOOK
        .trim()
        .replace(
            &format!("\"lastUpdateId\":{recorded_id}"),
            &format!("\"lastUpdateId\":{}", recorded_id + later),
        )
        .replacen("\"0.29859300\"", &format!("\"{best_bid_amount}\""), 1)
}

fn first_half(frame: &str) -> String {
    frame[..frame.len() / 2].to_owned()
}

/// The frames, in the order they are received: (venue, frame).
fn frames() -> Vec<(VenueId, String)> {
    let bitstamp: Vec<String> = BITSTAMP_BOOKS.lines().map(str::to_owned).collect();
    let (older, newer) = (bitstamp[0].clone(), bitstamp[1].clone());
    let first = binance_book(0, "0.29859300");
    let second = binance_book(10, "1.50000000");
    vec![
        (BINANCE, first.clone()),
        (BITSTAMP, older.clone()),
        (BINANCE, second.clone()),
        (BINANCE, second.clone()), // duplicated: the same sequence again, still current
        (BITSTAMP, newer.clone()),
        (BINANCE, first), // reordered: older than the last book, dropped
        (BITSTAMP, older),
        (BINANCE, first_half(&binance_book(20, "2.00000000"))), // truncated: out of sync
        (BITSTAMP, first_half(&newer)),
        (BINANCE, binance_book(20, "2.00000000")),
        (BITSTAMP, newer),
        // A stream the service did not subscribe to: passed over.
        (BINANCE, second.replace("btcusdt@depth20", "ethbtc@depth20")),
        (BINANCE, binance_book(30, "0.00000001")),
    ]
}

/// A summary as compared: its JSON line without the sequence number and time.
fn comparable(line: &str) -> serde_json::Value {
    let mut value: serde_json::Value = serde_json::from_str(line).unwrap();
    let object = value.as_object_mut().unwrap();
    object.remove("seq");
    object.remove("ts_ns");
    // When each book was received differs; the venue's time of it does not.
    for times in object["times"].as_object_mut().unwrap().values_mut() {
        let times = times.as_object_mut().unwrap();
        times.remove("received_unix_ns");
        times.remove("age_ns");
    }
    value
}

/// Drops the summaries before the first book (every venue still connecting).
fn from_first_book(summaries: Vec<serde_json::Value>) -> Vec<serde_json::Value> {
    summaries
        .into_iter()
        .skip_while(|summary| {
            summary["venues"]
                .as_object()
                .unwrap()
                .values()
                .all(|state| state == "connecting")
        })
        .collect()
}

fn messages_received(service: &Service, venue: VenueId) -> f64 {
    let series = format!("orderbook_messages_total{{exchange=\"{venue}\"}}");
    common::service_metric(service, &series)
}

/// What the service publishes when the simulator sends it `frames`, one at a time.
async fn through_the_service(frames: &[(VenueId, String)]) -> Vec<serde_json::Value> {
    let simulator =
        Simulator::start(TcpListener::bind("127.0.0.1:0").await.unwrap(), 50, 3).unwrap();
    for venue in [BINANCE, BITSTAMP] {
        simulator.pause(venue, true); // only the recorded frames
    }
    let config = TestConfig::new()
        .set("service.depth", DEPTH as i64)
        .set("service.stale_after_ms", 600_000)
        .set("feed.read_idle_timeout_ms", 600_000)
        .on(&simulator, &[BINANCE, BITSTAMP])
        .instrument("BTC", &[(BINANCE, "BTCUSDT"), (BITSTAMP, "btcusd")])
        .build();
    let listeners = Listeners::loopback().await.unwrap();
    let instrument = config.instruments[0].clone();
    let service = Service::start(config, listeners).unwrap();
    let mut summaries = service.summaries(0);
    let recorder = tokio::spawn(async move {
        let mut lines = Vec::new();
        while summaries.changed().await.is_ok() {
            let summary = summaries.borrow_and_update().clone();
            let mut line = Vec::new();
            mergebook::publish::jsonl::write_summary(&mut line, &instrument, &summary).unwrap();
            lines.push(comparable(std::str::from_utf8(&line).unwrap()));
        }
        lines
    });
    // Each venue's subscription ack is its first message.
    let mut received = [0.0; 2];
    for venue in [BINANCE, BITSTAMP] {
        common::eventually(&format!("{venue} subscribed"), WAIT, || {
            messages_received(&service, venue) >= 1.0
        })
        .await;
        received[venue.index()] = messages_received(&service, venue);
    }
    for (venue, frame) in frames {
        simulator.send_raw(*venue, frame.clone());
        received[venue.index()] += 1.0;
        let expected = received[venue.index()];
        common::eventually("the frame read", WAIT, || {
            messages_received(&service, *venue) >= expected
        })
        .await;
        // The merger publishes within microseconds of the read; the recorder takes it.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    service.stop().await;
    from_first_book(recorder.await.unwrap())
}

/// What `mergebook replay snapshot` prints for the same frames, recorded as timelines.
fn through_replay(frames: &[(VenueId, String)]) -> Vec<serde_json::Value> {
    let directory = std::env::temp_dir().join(format!("mergebook-twin-{}", std::process::id()));
    std::fs::create_dir_all(&directory).unwrap();
    let mut arguments = vec!["replay".to_owned(), "snapshot".to_owned()];
    for venue in [BINANCE, BITSTAMP] {
        let timeline: String = frames
            .iter()
            .enumerate()
            .filter(|(_, (v, _))| *v == venue)
            .map(|(at, (_, raw))| {
                let entry =
                    serde_json::json!({"recv_ts": at as f64, "kind": "ws_recv", "raw": raw});
                format!("{entry}\n")
            })
            .collect();
        let path = directory.join(format!("{venue}.jsonl"));
        std::fs::write(&path, timeline).unwrap();
        arguments.extend(["--venue".to_owned(), format!("{venue}={}", path.display())]);
    }
    arguments.extend(["--depth".to_owned(), DEPTH.to_string()]);
    arguments.extend(["--instrument".to_owned(), "BTC".to_owned()]);
    let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
    let (stdout, _) = common::run_ok(&arguments);
    std::fs::remove_dir_all(&directory).unwrap();
    from_first_book(stdout.lines().map(comparable).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_and_replay_publish_the_same_books_and_states() {
    let frames = frames();
    let replayed = through_replay(&frames);
    let served = through_the_service(&frames).await;
    // Every change publishes: 13 frames less the reordered two and the other stream.
    assert_eq!(replayed.len(), 10, "{replayed:#?}");
    let states: Vec<&serde_json::Value> = replayed.iter().map(|s| &s["venues"]).collect();
    assert!(
        states.iter().any(|s| s["binance"] == "out-of-sync"),
        "the truncated frame is seen: {states:?}"
    );
    assert_eq!(served.len(), replayed.len(), "served {served:#?}");
    for (index, (served, replayed)) in served.iter().zip(&replayed).enumerate() {
        assert_eq!(served, replayed, "summary {index}");
    }
}
