//! A coin priced below 10^-8, with books past 10^11 coins: merged exactly in units of a
//! million coins (`unit_size`), end to end, where the coin's own numbers refuse it.

use crate::common;
use common::config::TestConfig;

use mergebook::merger::summary::{Summary, VenueState};
use mergebook::publish::jsonl;
use mergebook::record::timeline::{ConnectionRecording, TimedEvent, TimelineEvent};
use mergebook::service::{Listeners, Service};
use mergebook::sim::Simulator;
use mergebook::venue::VenueId;
use std::time::Duration;
use tokio::net::TcpListener;

const WAIT: Duration = Duration::from_secs(20);
const BINANCE: VenueId = VenueId::Binance;

/// A Binance connection as recorded: the subscription's answer, then `books` book frames
/// of `stream` (each `(bid, bid amount, ask, ask amount)`), a millisecond apart.
fn recording(stream: &str, books: &[(&str, &str, &str, &str)]) -> Vec<ConnectionRecording> {
    let at = |ms: u64| 1_790_000_000_000_000_000 + ms * 1_000_000;
    let mut events = vec![
        TimedEvent {
            received_ns: at(0),
            event: TimelineEvent::Connected,
        },
        TimedEvent {
            received_ns: at(1),
            event: TimelineEvent::Text(r#"{"result":null,"id":1}"#.into()),
        },
    ];
    for (id, (bid, bid_amount, ask, ask_amount)) in books.iter().enumerate() {
        let frame = format!(
            r#"{{"stream":"{stream}","data":{{"lastUpdateId":{},"bids":[["{bid}","{bid_amount}"]],"asks":[["{ask}","{ask_amount}"]]}}}}"#,
            id + 1
        );
        events.push(TimedEvent {
            received_ns: at(2 + id as u64),
            event: TimelineEvent::Text(frame),
        });
    }
    vec![ConnectionRecording {
        venue: BINANCE,
        connection: 0,
        events,
        truncated_files: 0,
    }]
}

/// The books of the recording: PEPE's prices of about 1.2 × 10^-8 USDT, sizes of 10^14
/// coins; the last one is what the merged book must end as.
const BOOKS: [(&str, &str, &str, &str); 2] = [
    ("0.0000000122", "1000000000000", "0.0000000125", "3000000"),
    (
        "0.0000000123",
        "250000000000000",
        "0.0000000124",
        "120000000000.5",
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coin_priced_below_the_coin_s_range_merges_exactly_in_its_unit() {
    let simulator =
        Simulator::start(TcpListener::bind("127.0.0.1:0").await.unwrap(), 50, 5).unwrap();
    let config = |unit_size: Option<&str>| {
        let config = TestConfig::new().instrument("PEPE/USDT", &[(BINANCE, "PEPEUSDT")]);
        let config = match unit_size {
            Some(size) => config.last_instrument("unit_size", size),
            None => config,
        };
        let mut config = config.build();
        simulator.point(&mut config);
        config
    };
    let in_millions = config(Some("1000000"));
    let stream = &mergebook::service::plan_connections(&in_millions)[0].streams[0].name;
    simulator.serve_recording(&recording(stream, &BOOKS), 1.0);

    let summaries = common::EverySummary::default();
    let listeners = Listeners::loopback().await.unwrap();
    let service =
        Service::start_observed(in_millions.clone(), listeners, summaries.clone()).unwrap();
    let last_book = || -> Option<Summary> {
        let written = summaries.0.lock().unwrap();
        (written.iter().rev())
            .find(|summary| summary.venue_state(BINANCE) == VenueState::Synced)
            .copied()
            .filter(|summary| summary.source_sequence[0] == BOOKS.len() as u64)
    };
    common::eventually("the last book merged", WAIT, || last_book().is_some()).await;
    let summary = last_book().unwrap();
    let mut line = Vec::new();
    jsonl::write_summary(&mut line, &in_millions.instruments[0], &summary).unwrap();
    let line = String::from_utf8(line).unwrap();
    // 1.23 × 10^-8 USDT a coin is 0.0123 a million coins; 2.5 × 10^14 coins are
    // 250,000,000 millions.
    for expected in [
        r#""bids":[{"exchange":"binance","price":"0.01230000","amount":"250000000.00000000"}]"#,
        r#""asks":[{"exchange":"binance","price":"0.01240000","amount":"120000.00000050"}]"#,
        r#""unit_size":"1000000""#,
    ] {
        assert!(line.contains(expected), "{expected} in {line}");
    }
    service.stop().await;

    // Counted in coins, the same frames cannot be held: each is refused, and the book is
    // never merged.
    simulator.serve_recording(&recording(stream, &BOOKS), 1.0);
    let summaries = common::EverySummary::default();
    let listeners = Listeners::loopback().await.unwrap();
    let service = Service::start_observed(config(None), listeners, summaries.clone()).unwrap();
    let errors = r#"orderbook_decode_errors_total{exchange="binance"}"#;
    common::eventually("both frames refused", WAIT, || {
        common::service_metric(&service, errors) >= BOOKS.len() as f64
    })
    .await;
    let synced = (summaries.0.lock().unwrap().iter())
        .any(|summary| summary.venue_state(BINANCE) == VenueState::Synced);
    assert!(!synced, "a book the coin cannot hold was merged");
    service.stop().await;
}
