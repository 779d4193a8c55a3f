//! Publishing to a real NATS server (Debian's `nats-server`, started by each test on free
//! loopback ports): two shards reach one subscriber, the server's restart costs only what
//! was published while it was down, and a stalled subscriber does not slow the merger.

use crate::common;

use common::config::TestConfig;
use common::nats::NatsServer;
use mergebook::publish::nats::book_subject;
use mergebook::publish::proto::ExactSummary;
use mergebook::publish::proto::orderbook_aggregator_client::OrderbookAggregatorClient;
use mergebook::service::{Listeners, Service};
use mergebook::sim::Simulator;
use mergebook::venue::VenueId;
use prost::Message;
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::time::Duration;
use tokio::net::TcpListener;

const WAIT: Duration = Duration::from_secs(30);
const PREFIX: &str = "mergebook";
const INSTRUMENTS: [(&str, &str, &str); 4] = [
    ("ETH/BTC", "ETHBTC", "ethbtc"),
    ("BTC/USD", "BTCUSDT", "btcusd"),
    ("LTC/BTC", "LTCBTC", "ltcbtc"),
    ("XRP/BTC", "XRPBTC", "xrpbtc"),
];

/// The service on `simulator`, publishing to `nats_url`, serving `shard` of the
/// instruments (all when `None`); and its gRPC address.
async fn service(
    simulator: &Simulator,
    nats_url: &str,
    shard: Option<&str>,
) -> (Service, std::net::SocketAddr) {
    let mut config = TestConfig::new()
        .set("nats.url", nats_url)
        .set("nats.health_every_ms", 200)
        .on(simulator, &[VenueId::Binance, VenueId::Bitstamp]);
    if let Some(shard) = shard {
        config = config.set("service.shard", shard);
    }
    for (name, binance, bitstamp) in INSTRUMENTS {
        config = config.instrument(
            name,
            &[(VenueId::Binance, binance), (VenueId::Bitstamp, bitstamp)],
        );
    }
    // BTC/USD's Binance book is in USDT: taken as dollars, as the simulator quotes it.
    config = config.rate("USDT/USD", "fixed", "1");
    let config = config.build();
    let listeners = Listeners::loopback().await.unwrap();
    let grpc = listeners.grpc.local_addr().unwrap();
    (Service::start(config, listeners).unwrap(), grpc)
}

async fn simulator() -> Simulator {
    Simulator::start(TcpListener::bind("127.0.0.1:0").await.unwrap(), 50, 3).unwrap()
}

/// The summaries received on `subscriber` until `enough` holds of them (by instrument).
async fn receive_until(
    subscriber: &mut async_nats::Subscriber,
    what: &str,
    enough: impl Fn(&BTreeMap<String, Vec<u64>>) -> bool,
) -> BTreeMap<String, Vec<u64>> {
    use futures_util::StreamExt;
    let mut received: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    let deadline = tokio::time::Instant::now() + WAIT;
    while !enough(&received) {
        let message = tokio::time::timeout_at(deadline, subscriber.next())
            .await
            .unwrap_or_else(|_| panic!("{what}: not within {WAIT:?}; received {received:?}"))
            .expect("the subscription stays open");
        let summary = ExactSummary::decode(message.payload.as_ref()).unwrap();
        assert_eq!(
            message.subject.as_str(),
            book_subject(PREFIX, &summary.instrument)
        );
        // Every summary names both venues; one where a venue is synced holds its book (a
        // summary of venues all stale, as a loaded machine can make them, holds none).
        assert_eq!(summary.venues.len(), 2);
        if summary.venues.values().any(|state| state == "synced") {
            assert!(!summary.bids.is_empty(), "{summary:?}");
        }
        received
            .entry(summary.instrument)
            .or_default()
            .push(summary.seq);
    }
    received
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscriber_receives_every_instrument_from_two_shards() {
    let Some(nats) = NatsServer::start(common::free_port(), "") else {
        return;
    };
    let client = async_nats::connect(nats.url()).await.unwrap();
    let mut books = client.subscribe(format!("{PREFIX}.book.>")).await.unwrap();
    let mut health = client.subscribe(format!("{PREFIX}.health")).await.unwrap();
    let simulator = simulator().await;
    let shards = [
        service(&simulator, &nats.url(), Some("1/2")).await.0,
        service(&simulator, &nats.url(), Some("2/2")).await.0,
    ];
    let received = receive_until(&mut books, "every instrument, 3 summaries each", |r| {
        r.len() == INSTRUMENTS.len() && r.values().all(|seqs| seqs.len() >= 3)
    })
    .await;
    let names: BTreeSet<&str> = received.keys().map(String::as_str).collect();
    assert_eq!(names, INSTRUMENTS.iter().map(|i| i.0).collect());
    for sequences in received.values() {
        assert!(
            sequences.windows(2).all(|pair| pair[0] < pair[1]),
            "{sequences:?}"
        );
    }
    // The shards split the list: each publishes its own share, together all of it.
    let served: Vec<usize> = shards
        .iter()
        .map(|shard| common::service_metric(shard, "orderbook_nats_published_total") as usize)
        .collect();
    assert!(served.iter().all(|&published| published > 0), "{served:?}");

    use futures_util::StreamExt;
    let report = tokio::time::timeout(WAIT, health.next())
        .await
        .unwrap()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&report.payload).unwrap();
    assert!(["OK", "DEGRADED", "DOWN"].contains(&report["status"].as_str().unwrap()));
    let [first, second] = shards;
    first.stop().await;
    second.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nats_restart_costs_only_what_was_published_while_it_was_down() {
    let port = common::free_port();
    let Some(nats) = NatsServer::start(port, "") else {
        return;
    };
    let simulator = simulator().await;
    let (service, grpc) = service(&simulator, &nats.url(), None).await;
    let client = async_nats::ConnectOptions::new()
        .max_reconnects(None)
        .reconnect_delay_callback(|_| Duration::from_millis(100))
        .connect(nats.url())
        .await
        .unwrap();
    let mut books = client
        .subscribe(format!("{PREFIX}.book.ETH/BTC"))
        .await
        .unwrap();
    receive_until(&mut books, "a first summary", |r| !r.is_empty()).await;

    // The server goes away: summaries are dropped and counted, gRPC serves on.
    drop(nats);
    let dropped = r#"orderbook_nats_dropped_total{reason="disconnected"}"#;
    common::eventually("drops while NATS is down", WAIT, || {
        common::service_metric(&service, dropped) > 0.0
    })
    .await;
    let mut stream = OrderbookAggregatorClient::connect(format!("http://{grpc}"))
        .await
        .unwrap()
        .book_summary_exact(mergebook::publish::proto::SummaryRequest::default())
        .await
        .unwrap()
        .into_inner();
    let first = stream.message().await.unwrap().unwrap().seq;
    let next = stream.message().await.unwrap().unwrap().seq;
    assert!(next > first, "gRPC keeps serving while NATS is down");

    // Back on the same port: both clients reconnect; from the subscriber's first summary
    // on, every summary arrives, but for any the publisher counted as skipped or dropped.
    let _nats = NatsServer::start(port, "").unwrap();
    receive_until(&mut books, "summaries after the restart", |r| !r.is_empty()).await;
    let counted = || {
        common::service_metric(&service, "orderbook_nats_skipped_total")
            + common::service_metric(&service, dropped)
    };
    let counted_before = counted();
    let received = receive_until(&mut books, "a second of summaries", |r| {
        r.values().next().is_some_and(|seqs| seqs.len() >= 50)
    })
    .await;
    let sequences = &received["ETH/BTC"];
    let missing = sequences
        .windows(2)
        .map(|pair| pair[1] - pair[0] - 1)
        .sum::<u64>();
    assert!(
        missing as f64 <= counted() - counted_before,
        "{missing} missing, not counted: {sequences:?}"
    );
    service.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_subscriber_is_dropped_by_the_server_and_does_not_slow_the_merger() {
    // A small per-client buffer and write deadline: the server finds the slow consumer
    // within seconds.
    let Some(nats) = NatsServer::start(
        common::free_port(),
        "max_pending: 65536\nmax_payload: 32768\nwrite_deadline: \"500ms\"",
    ) else {
        return;
    };
    let simulator = simulator().await;
    let (service, _) = service(&simulator, &nats.url(), None).await;
    let merges = || common::service_metric(&service, "orderbook_merges_total");
    let rate = |seconds: u64| async move {
        let before = merges();
        tokio::time::sleep(Duration::from_secs(seconds)).await;
        (merges() - before) / seconds as f64
    };
    common::eventually("summaries", WAIT, || merges() > 0.0).await;
    let unstalled = rate(2).await;

    // A subscriber to everything that never reads.
    let mut stalled = std::net::TcpStream::connect(("127.0.0.1", nats.port)).unwrap();
    let mut info = [0; 4096];
    let _ = stalled.read(&mut info).unwrap();
    stalled
        .write_all(format!("CONNECT {{\"verbose\":false}}\r\nSUB {PREFIX}.> 1\r\n").as_bytes())
        .unwrap();
    let stalled_rate = rate(4).await;
    common::wait_until("the server drops the slow consumer", WAIT, || {
        (nats.varz("slow_consumers") > 0).then_some(())
    });
    assert!(
        stalled_rate >= 0.8 * unstalled,
        "merges/s {unstalled:.0} before the stalled subscriber, {stalled_rate:.0} with it"
    );
    assert!(common::service_metric(&service, "orderbook_nats_published_total") > 0.0);
    drop(stalled);
    service.stop().await;
}

/// A reload lists an instrument and delists another: the new one's subject gets its
/// summaries, the delisted one's none after the new one's first (its publisher ended at
/// the reload, and one connection's messages arrive in order), the others' go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_s_instruments_are_published_from_their_first_summary_on() {
    let Some(nats) = NatsServer::start(common::free_port(), "") else {
        return;
    };
    let client = async_nats::connect(nats.url()).await.unwrap();
    let mut books = client.subscribe(format!("{PREFIX}.book.>")).await.unwrap();
    let simulator = simulator().await;
    let (mut service, _) = service(&simulator, &nats.url(), None).await;
    receive_until(&mut books, "every instrument", |r| {
        r.len() == INSTRUMENTS.len()
    })
    .await;

    let kept = &INSTRUMENTS[..3];
    let mut config = TestConfig::new()
        .set("nats.url", nats.url())
        .set("nats.health_every_ms", 200)
        .on(&simulator, &[VenueId::Binance, VenueId::Bitstamp])
        .rate("USDT/USD", "fixed", "1");
    for (name, binance, bitstamp) in kept.iter().chain([&("DOT/BTC", "DOTBTC", "dotbtc")]) {
        let symbols = [(VenueId::Binance, *binance), (VenueId::Bitstamp, *bitstamp)];
        config = config.instrument(name, &symbols);
    }
    service
        .reload(config.build())
        .expect("only instruments change");
    // Until DOT/BTC's first summary, XRP/BTC's last ones may still come; none after it.
    receive_until(&mut books, "DOT/BTC's first summary", |r| {
        r.contains_key("DOT/BTC")
    })
    .await;
    let after = receive_until(&mut books, "3 more of each instrument listed", |r| {
        kept.iter()
            .chain([&("DOT/BTC", "", "")])
            .all(|(name, _, _)| r.get(*name).is_some_and(|seqs| seqs.len() >= 3))
    })
    .await;
    assert!(!after.contains_key("XRP/BTC"), "{after:?}");
    service.stop().await;
}
