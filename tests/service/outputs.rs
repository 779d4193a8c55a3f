//! What consumers see of the service, in process: the gRPC streams (legacy and exact, and
//! reflection), JSON lines and `/metrics` (checked by promtool), against a merge of what
//! the simulator sent computed apart.

use crate::common;

use mergebook::config::Instrument;
use mergebook::merger::summary::Summary;
use mergebook::publish::jsonl;
use mergebook::publish::proto::{self, orderbook_aggregator_client::OrderbookAggregatorClient};
use mergebook::sim::Simulator;
use mergebook::venue::VenueId;
use serde_json::Value;

use crate::service::{DEPTH, both_synced, eventually, http_get, start, start_with_fee, wait_for};

/// (exchange, price, amount) — the independent merge of the simulator's last frames:
/// serde_json, concatenate, sort by price, larger amount, venue; take DEPTH.
fn independent_merge(simulator: &Simulator, side: &str) -> Vec<(String, String, String)> {
    independent_all_in(simulator, side, 0)
}

/// `independent_merge` with Binance's levels net of `binance_fee_bps` (whole basis
/// points), in integers: a bid times (10,000 - fee) / 10,000 rounded down, an ask times
/// (10,000 + fee) / 10,000 rounded up, to 10^-8.
fn independent_all_in(
    simulator: &Simulator,
    side: &str,
    binance_fee_bps: u128,
) -> Vec<(String, String, String)> {
    let raw = |text: &str| -> u128 {
        let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
        let fraction = format!("{fraction:0<8}");
        whole.parse::<u128>().unwrap() * 100_000_000 + fraction.parse::<u128>().unwrap()
    };
    let text = |raw: u128| format!("{}.{:08}", raw / 100_000_000, raw % 100_000_000);
    let net = |price: u128| match side {
        "bids" => price * (10_000 - binance_fee_bps) / 10_000,
        _ => (price * (10_000 + binance_fee_bps)).div_ceil(10_000),
    };
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
            let field = |index: usize| raw(level[index].as_str().unwrap());
            let price = match venue {
                VenueId::Binance => net(field(0)),
                _ => field(0),
            };
            levels.push((venue.name().to_owned(), text(price), text(field(1))));
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
fn line_levels(
    instrument: &Instrument,
    summary: &Summary,
    side: &str,
) -> Vec<(String, String, String)> {
    levels_at(instrument, summary, &format!("/{side}"))
}

/// The levels at `pointer` (a JSON pointer: `/all_in/bids`) of `summary`'s JSON line.
fn levels_at(
    instrument: &Instrument,
    summary: &Summary,
    pointer: &str,
) -> Vec<(String, String, String)> {
    let mut line = Vec::new();
    jsonl::write_summary(&mut line, instrument, summary).unwrap();
    let line: Value = serde_json::from_slice(&line).unwrap();
    line.pointer(pointer)
        .expect("the levels")
        .as_array()
        .unwrap()
        .iter()
        .map(|level| {
            let field = |key: &str| level[key].as_str().unwrap().to_owned();
            (field("exchange"), field("price"), field("amount"))
        })
        .collect()
}

/// Both venues synced, then the market frozen (a frame being written when paused goes out
/// first): the summary that holds the frames each venue sent last. (Waited for as a
/// condition, not a time: a loaded machine delivers them late.)
async fn frozen(
    harness: &crate::service::Harness,
    summaries: &mut tokio::sync::watch::Receiver<std::sync::Arc<Summary>>,
) -> std::sync::Arc<Summary> {
    wait_for(summaries, both_synced).await;
    harness.simulator.pause_until_silent(VenueId::Binance).await;
    harness
        .simulator
        .pause_until_silent(VenueId::Bitstamp)
        .await;
    let instrument = &harness.service.config().instruments[0];
    let holds_the_last_frames = |summary: &Summary| {
        ["bids", "asks"].iter().all(|side| {
            line_levels(instrument, summary, side) == independent_merge(&harness.simulator, side)
        })
    };
    wait_for(summaries, holds_the_last_frames).await
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
    let last_sequence = frozen(&harness, &mut summaries).await.sequence;
    let instrument = &harness.service.config().instruments[0];
    let expected_bids = independent_merge(&harness.simulator, "bids");
    let expected_asks = independent_merge(&harness.simulator, "asks");

    let mut client = OrderbookAggregatorClient::connect(format!("http://{}", harness.grpc))
        .await
        .unwrap();
    let request = proto::SummaryRequest {
        instrument: "ETH/BTC".into(),
        ..Default::default()
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
    // The same summary once, on request.
    let once = client
        .book(proto::SummaryRequest {
            instrument: "ETH/BTC".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(once, summary);
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
    assert_eq!(line_levels(instrument, &current, "bids"), expected_bids);
    let mut line = Vec::new();
    jsonl::write_summary(&mut line, instrument, &current).unwrap();
    let line: Value = serde_json::from_slice(&line).unwrap();
    assert_eq!(line["seq"], last_sequence);

    // An unknown instrument is refused by name.
    let missing = client
        .book_summary_exact(proto::SummaryRequest {
            instrument: "XRP/EUR".into(),
            ..Default::default()
        })
        .await;
    assert_eq!(missing.unwrap_err().code(), tonic::Code::NotFound);
    let missing = client
        .book(proto::SummaryRequest {
            instrument: "XRP/EUR".into(),
            ..Default::default()
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

/// Asked for it, the exact stream and `Book` carry the all-in book: Binance's levels net
/// of its 25 bp fee, merged again with Bitstamp's (no fee), against the simulator's last
/// frames netted apart; the JSON line carries the same.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_all_in_book_nets_each_venue_of_its_fee_where_asked() {
    let harness = start_with_fee(60_000, "25").await;
    let mut summaries = harness.service.summaries(0);
    let last = frozen(&harness, &mut summaries).await;
    let instrument = &harness.service.config().instruments[0];
    let expected_bids = independent_all_in(&harness.simulator, "bids", 25);
    let expected_asks = independent_all_in(&harness.simulator, "asks", 25);
    assert_ne!(
        expected_bids,
        independent_merge(&harness.simulator, "bids"),
        "the fee changes the book"
    );

    let mut client = OrderbookAggregatorClient::connect(format!("http://{}", harness.grpc))
        .await
        .unwrap();
    let request = |all_in| proto::SummaryRequest {
        instrument: "ETH/BTC".into(),
        all_in,
    };
    let book = client.book(request(true)).await.unwrap().into_inner();
    assert_eq!(book.seq, last.sequence);
    assert_eq!(exact_levels(&book.all_in_bids), expected_bids);
    assert_eq!(exact_levels(&book.all_in_asks), expected_asks);
    let fees: Vec<_> = book
        .venue_quotes
        .iter()
        .map(|quote| (quote.exchange.as_str(), quote.taker_fee_bps.as_str()))
        .collect();
    assert_eq!(fees, [("binance", "25"), ("bitstamp", "0")]);
    let mut stream = client
        .book_summary_exact(request(true))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(stream.message().await.unwrap(), Some(book.clone()));
    // Not asked for, not sent.
    let plain = client.book(request(false)).await.unwrap().into_inner();
    assert!(plain.all_in_bids.is_empty() && plain.all_in_spread.is_empty());
    assert_eq!(plain.bids, book.bids);

    assert_eq!(levels_at(instrument, &last, "/all_in/bids"), expected_bids);
    harness.service.stop().await;
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
    assert_eq!(
        methods,
        [
            "BookSummary",
            "BookSummaryExact",
            "Book",
            "Instruments",
            "Quote"
        ]
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
