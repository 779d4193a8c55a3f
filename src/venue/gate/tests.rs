//! Gate's private pieces: messages of each kind, symbols, endpoints, requests.

use super::*;
use crate::fixed::FixedPoint;
use crate::venue::gate_futures::GateFutures;
use crate::venue::gate_spot::GateSpot;

fn fp(text: &str) -> FixedPoint {
    text.parse().unwrap()
}

fn diff<M: Market>(frame: &str) -> Result<(Message<'_>, BookUpdate), DecodeError> {
    let mut out = BookUpdate::with_capacity(200);
    let message = Gate::<M>::decode_diff(frame.as_bytes(), 200, &mut out)?;
    Ok((message, out))
}

#[test]
fn a_recorded_spot_event_decodes_with_its_ids_and_levels_in_wire_order() {
    let frame = r#"{"time":1619093532,"channel":"spot.order_book_update","event":"update","result":{"t":1619093532978,"e":"depthUpdate","E":1619093532,"s":"HAI_ETH","U":2691446,"u":2691447,"b":[["0.00010322","5360.209"],["0.00010276","0"]],"a":[["0.00010396","5876.967"]]}}"#;
    let (message, update) = diff::<super::super::gate_spot::Spot>(frame).unwrap();
    assert_eq!(message, Message::Book { stream: b"HAI_ETH" });
    assert_eq!((update.first_id, update.last_id), (2691446, 2691447));
    assert!(!update.is_snapshot);
    assert_eq!(update.bids[1].amount, FixedPoint::ZERO);
    assert_eq!(update.asks[0].price, fp("0.00010396"));
}

#[test]
fn a_recorded_futures_event_reads_object_levels_with_integer_sizes_in_any_key_order() {
    let frame = r#"{"time":1684930165,"time_ms":1684930165353,"channel":"futures.order_book_update","event":"update","result":{"U":203083178,"a":[{"p":"0.3047","s":8393},{"s":1336,"p":"0.2992"}],"b":[],"s":"RDNT_USDT","t":1684930165247,"u":203083178}}"#;
    let (message, update) = diff::<super::super::gate_futures::Futures>(frame).unwrap();
    assert_eq!(
        message,
        Message::Book {
            stream: b"RDNT_USDT"
        }
    );
    assert_eq!(update.asks.len(), 2);
    assert_eq!(update.asks[1].price, fp("0.2992"));
    assert_eq!(update.asks[1].amount, fp("1336"));
    assert!(update.bids.is_empty());
}

#[test]
fn a_full_push_is_a_snapshot_and_must_be_sorted() {
    let full = r#"{"time":1606294781,"time_ms":1606294781236,"channel":"spot.order_book_update","event":"update","result":{"t":1606294781123,"full":true,"l":"100","e":"depthUpdate","E":1606294781,"s":"BTC_USDT","U":48776301,"u":48776306,"b":[["19137.74","0.0001"],["19088.37","0.2"]],"a":[["19137.75","0.6135"]]}}"#;
    let (_, update) = diff::<super::super::gate_spot::Spot>(full).unwrap();
    assert!(update.is_snapshot);
    let unsorted = full.replace(r#"["19088.37","0.2"]"#, r#"["19237.37","0.2"]"#);
    assert_eq!(
        diff::<super::super::gate_spot::Spot>(&unsorted).unwrap_err(),
        DecodeError::Unsorted(Side::Bid)
    );
}

#[test]
fn answers_pongs_and_notices_are_told_apart() {
    type Spot = super::super::gate_spot::Spot;
    type Futures = super::super::gate_futures::Futures;
    // 2021: the answer names no request.
    let recorded = r#"{"time":1619093532,"channel":"spot.order_book_update","event":"subscribe","result":{"status":"success"}}"#;
    let accepted = Message::SubscribeResult {
        accepted: true,
        acked: Acked::Oldest,
    };
    assert_eq!(diff::<Spot>(recorded).unwrap().0, accepted);
    // 2025: it echoes the request's id; a refusal carries an error.
    let refused = r#"{"time":1789456896,"time_ms":1789456896882,"id":7,"conn_id":"bf37dda1698c8b1e","trace_id":"8d22020b2227c599fc38c061b09df478","channel":"futures.order_book_update","event":"subscribe","payload":["BTC_USDT","100ms","100"],"error":{"code":2,"message":"Alert sub BTC_USDT"},"result":{"status":"fail"}}"#;
    let refusal = Message::SubscribeResult {
        accepted: false,
        acked: Acked::Request(7),
    };
    assert_eq!(diff::<Futures>(refused).unwrap().0, refusal);
    let unsubscribed = r#"{"time":1545445847,"time_ms":1545445847123,"channel":"futures.order_book_update","event":"unsubscribe","result":{"status":"success"}}"#;
    assert_eq!(diff::<Futures>(unsubscribed).unwrap().0, Message::Ignored);
    let pong = r#"{"time":1789456354,"time_ms":1789456354999,"conn_id":"c59a69fd3702aa1d","channel":"futures.pong","event":"","result":null}"#;
    assert_eq!(diff::<Futures>(pong).unwrap().0, Message::Heartbeat);
    let upgrade = Futures::RECONNECT.unwrap();
    assert_eq!(diff::<Futures>(upgrade).unwrap().0, Message::Reconnect);
    let ticker = r#"{"time":1789456337,"time_ms":1789456337019,"channel":"futures.book_ticker","event":"update","result":{"t":1789456337013,"u":125034507671,"s":"BTC_USDT","b":"77179","B":107847,"a":"77179.1","A":5808}}"#;
    assert_eq!(diff::<Futures>(ticker).unwrap().0, Message::Ignored);
}

#[test]
fn an_update_without_its_ids_or_with_them_reversed_is_refused() {
    type Spot = super::super::gate_spot::Spot;
    let without = r#"{"channel":"spot.order_book_update","event":"update","result":{"s":"BTC_USDT","u":5,"b":[],"a":[]}}"#;
    assert_eq!(
        diff::<Spot>(without).unwrap_err(),
        DecodeError::MissingKey("U")
    );
    let reversed = r#"{"channel":"spot.order_book_update","event":"update","result":{"s":"BTC_USDT","U":6,"u":5,"b":[],"a":[]}}"#;
    assert!(matches!(
        diff::<Spot>(reversed).unwrap_err(),
        DecodeError::Invalid(_)
    ));
    let no_channel = r#"{"event":"update","result":{"s":"BTC_USDT","U":5,"u":5}}"#;
    assert_eq!(
        diff::<Spot>(no_channel).unwrap_err(),
        DecodeError::MissingKey("channel")
    );
}

#[test]
fn rest_books_of_both_markets_decode_with_their_id() {
    let spot = r#"{"id":123456,"current":1623898993123,"update":1623898993121,"asks":[["1.52","1.151"],["1.53","1.218"]],"bids":[["1.17","201.863"],["1.16","725.464"]]}"#;
    let mut out = BookUpdate::with_capacity(10);
    GateSpot::decode_snapshot(spot.as_bytes(), 10, &mut out).unwrap();
    assert_eq!((out.first_id, out.last_id), (123456, 123456));
    assert_eq!(out.bids[1].amount, fp("725.464"));
    let futures = r#"{"current":1684930166.384,"update":1684930166.35,"asks":[{"s":803,"p":"0.2974"},{"s":500,"p":"0.2975"}],"bids":[{"s":150,"p":"0.2973"}],"id":203083287}"#;
    GateFutures::decode_snapshot(futures.as_bytes(), 10, &mut out).unwrap();
    assert_eq!(out.last_id, 203083287);
    assert_eq!(out.asks[0].amount, fp("803"));
    let unsorted = futures.replace(r#""p":"0.2975""#, r#""p":"0.2970""#);
    assert_eq!(
        GateFutures::decode_snapshot(unsorted.as_bytes(), 10, &mut out).unwrap_err(),
        DecodeError::Unsorted(Side::Ask)
    );
}

#[test]
fn top_n_pushes_of_both_markets_decode_to_their_depth() {
    let spot = r#"{"time":1606295412,"time_ms":1606295412213,"channel":"spot.order_book","event":"update","result":{"t":1606295412123,"lastUpdateId":48791820,"s":"BTC_USDT","l":"5","bids":[["19079.55","0.0195"],["19079.07","0.7341"],["19076.23","0.00011808"]],"asks":[["19080.24","0.1638"],["19080.91","0.1366"]]}}"#;
    let mut book = TopBook::default();
    let message = GateSpot::decode(spot.as_bytes(), 2, &mut book).unwrap();
    assert_eq!(
        message,
        Message::Book {
            stream: b"BTC_USDT"
        }
    );
    assert_eq!(book.venue_sequence, 48791820);
    assert_eq!(book.bids.len(), 2);
    let futures = r#"{"channel":"futures.order_book","event":"all","time":1541500161,"time_ms":1541500161123,"result":{"t":1541500161123,"contract":"BTC_USD","id":93973511,"asks":[{"p":"97.2","s":2245}],"bids":[{"p":"97.1","s":2245}],"l":"20"}}"#;
    let message = GateFutures::decode(futures.as_bytes(), 10, &mut book).unwrap();
    assert_eq!(message, Message::Book { stream: b"BTC_USD" });
    assert_eq!(book.venue_sequence, 93973511);
    assert_eq!(book.asks.as_slice()[0].amount, fp("2245"));
}

#[test]
fn symbols_endpoints_and_snapshot_urls() {
    assert!(GateSpot.check_symbol("BTC_USDT").is_ok());
    for wrong in ["btc_usdt", "BTCUSDT", "BTC_", "_USDT", "BTC-USDT"] {
        assert!(GateSpot.check_symbol(wrong).is_err(), "{wrong}");
    }
    let url = GateFutures::FACTS.default_url;
    assert_eq!(GateFutures.endpoint(url, "BTC_USDT"), format!("{url}/usdt"));
    assert_eq!(GateFutures.endpoint(url, "BTC_USD"), format!("{url}/btc"));
    assert!(GateFutures.inverse("BTC_USD") && !GateFutures.inverse("BTC_USDT"));
    assert!(GateFutures.sized_in_contracts("BTC_USDT") && !GateSpot.sized_in_contracts("BTC_USDT"));
    let rest = "https://api.gateio.ws";
    let spot = GateSpot.snapshot_url(rest, "HAI_ETH", 1000);
    assert_eq!(
        spot,
        "https://api.gateio.ws/api/v4/spot/order_book?currency_pair=HAI_ETH&limit=100&with_id=true"
    );
    assert_eq!(GateSpot.snapshot_symbol(&spot).as_deref(), Some("HAI_ETH"));
    let futures = GateFutures.snapshot_url(rest, "RDNT_USDT", 10);
    assert_eq!(
        futures,
        "https://api.gateio.ws/api/v4/futures/usdt/order_book?contract=RDNT_USDT&limit=100&with_id=true"
    );
    assert_eq!(
        GateFutures.snapshot_symbol(&futures).as_deref(),
        Some("RDNT_USDT")
    );
    assert_eq!(
        GateSpot.quote_currency("BTC_USDT", "BTC").unwrap().as_str(),
        "USDT"
    );
}

#[test]
fn requests_name_their_channel_payload_and_id() {
    let streams = ["BTC_USDT".to_owned(), "ETH_USDT".to_owned()];
    let requests = GateFutures.subscribe_frames(&streams, StreamKind::Diff, 10, 3);
    assert_eq!(requests.len(), 2);
    let second: serde_json::Value = serde_json::from_str(&requests[1].frame).unwrap();
    assert_eq!(second["channel"], "futures.order_book_update");
    assert_eq!(
        second["payload"],
        serde_json::json!(["ETH_USDT", "100ms", "100"])
    );
    assert_eq!(
        (requests[1].id, requests[1].streams.clone()),
        (Some(4), 1..2)
    );
    let top = GateSpot.subscribe_frames(&streams[..1], StreamKind::Snapshots, 7, 1);
    let top: serde_json::Value = serde_json::from_str(&top[0].frame).unwrap();
    assert_eq!(top["channel"], "spot.order_book");
    assert_eq!(
        top["payload"],
        serde_json::json!(["BTC_USDT", "10", "100ms"])
    );
    let (_, ping) = GateSpot.client_ping().unwrap();
    assert_eq!(ping, r#"{"time":{time},"channel":"spot.ping"}"#);
}

/// Every recorded message of a market, as the venue sent it.
fn recorded(market: &str) -> Vec<String> {
    let files = [
        "spot_timeline_order_book_update_7pairs_2021-04-22.jsonl",
        "futures_usdt_timeline_order_book_update_7contracts_2023-05-24.jsonl",
        "docs_examples_spot_futures_order_book_update_obu_rest.jsonl",
        "futures_obu_and_order_book_update_trimmed_frames_2026-09-15_probe_notes.jsonl",
    ];
    let mut frames = Vec::new();
    for file in files {
        let path = format!("{}/tests/fixtures/gate/{file}", env!("CARGO_MANIFEST_DIR"));
        for line in std::fs::read_to_string(path).unwrap().lines() {
            let entry: serde_json::Value = serde_json::from_str(line).unwrap();
            let raw = match entry["raw"].as_str() {
                Some(raw) if entry["kind"] == "ws_recv" => raw.to_owned(),
                Some(_) => continue,
                None => line.to_owned(),
            };
            if raw.contains(&format!(r#""channel":"{market}."#)) {
                frames.push(raw);
            }
        }
    }
    frames
}

/// The recorded events with both sides, spot's and futures', read once.
fn recorded_events() -> &'static [Vec<String>; 2] {
    static EVENTS: std::sync::OnceLock<[Vec<String>; 2]> = std::sync::OnceLock::new();
    EVENTS.get_or_init(|| {
        ["spot", "futures"].map(|market| {
            let frames = recorded(market).into_iter();
            frames
                .filter(|frame| frame.contains(r#""event":"update""#) && frame.contains(r#""a":"#))
                .collect()
        })
    })
}

/// `frame` read by the layout fast path (`None` where it declines) and by the general walk.
type BothWays<'a> = (
    (Option<Message<'a>>, BookUpdate),
    (Result<Message<'a>, DecodeError>, BookUpdate),
);

/// A market's [`both_ways`].
type ReadBothWays = fn(&[u8]) -> BothWays<'_>;

fn both_ways<M: Market>(frame: &[u8]) -> BothWays<'_> {
    let (mut fast, mut general) = (
        BookUpdate::with_capacity(200),
        BookUpdate::with_capacity(200),
    );
    let fast_message = decode::fast_diff::<M>(frame, 200, &mut fast);
    let general_message = decode::general_diff::<M>(frame, 200, &mut general);
    ((fast_message, fast), (general_message, general))
}

/// The fast path reads every recorded event of the two recorded layouts, as the general
/// walk does; whatever it declines, the general walk reads.
#[test]
fn the_layout_fast_path_reads_every_recorded_event_as_the_general_walk_does() {
    type Spot = super::super::gate_spot::Spot;
    type Futures = super::super::gate_futures::Futures;
    let mut read_fast = 0;
    let markets: [(&str, ReadBothWays); 2] = [
        ("spot", both_ways::<Spot>),
        ("futures", both_ways::<Futures>),
    ];
    for (market, both) in markets {
        for frame in recorded(market) {
            let ((fast_message, fast), (general_message, general)) = both(frame.as_bytes());
            let Some(message) = fast_message else {
                // Declined: not an event of these layouts (an answer, another channel, the
                // 2026 futures frame), or a number it cannot hold.
                let event = matches!(general_message, Ok(Message::Book { .. }));
                let layout = frame.starts_with(r#"{"time":"#) && !frame.contains(r#""l":"20""#);
                assert!(!(event && layout), "{frame}");
                continue;
            };
            assert_eq!(general_message, Ok(message), "{frame}");
            assert_eq!(fast, general, "{frame}");
            read_fast += 1;
        }
    }
    assert!(read_fast > 200, "{read_fast} events read by the fast path");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]

    /// A recorded event edited (a byte replaced, inserted or removed, mostly where the
    /// layout's literals and values are): the fast path declines it, or reads it as the
    /// general walk does.
    #[test]
    fn an_edited_event_is_read_by_the_fast_path_as_by_the_general_walk_or_declined(
        which in 0usize..1000,
        futures in proptest::prelude::any::<bool>(),
        edit in crate::venue::layout_edits::edit(),
    ) {
        type Spot = super::super::gate_spot::Spot;
        type Futures = super::super::gate_futures::Futures;
        let events = &recorded_events()[usize::from(futures)];
        let mut frame = events[which % events.len()].clone().into_bytes();
        crate::venue::layout_edits::apply(&mut frame, edit);
        let both: ReadBothWays = match futures {
            true => both_ways::<Futures>,
            false => both_ways::<Spot>,
        };
        let ((fast_message, fast), (general_message, general)) = both(&frame);
        if let Some(message) = fast_message {
            proptest::prop_assert_eq!(general_message, Ok(message));
            proptest::prop_assert_eq!(fast, general);
        }
    }
}
