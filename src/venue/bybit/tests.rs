use super::*;

fn decode(frame: &str) -> (Result<Message<'_>, DecodeError>, BookUpdate) {
    let mut out = BookUpdate::default();
    let message = Bybit::decode_diff(frame.as_bytes(), 1000, &mut out);
    (message, out)
}

#[test]
fn control_frames_are_classified() {
    let frames = [
        (
            r#"{"success":true,"ret_msg":"subscribe","conn_id":"d9avtftc9enb83116hvg-5i8rn","req_id":"1","op":"subscribe"}"#,
            Ok(Message::SubscribeResult {
                accepted: true,
                acked: Acked::Request(1),
            }),
        ),
        (
            r#"{"success":true,"ret_msg":"","conn_id":"d6ki1eae0cl5msgggj7g-1uoz2","req_id":"","op":"subscribe"}"#,
            Ok(Message::SubscribeResult {
                accepted: true,
                acked: Acked::Oldest,
            }),
        ),
        (
            r#"{"success":false,"ret_msg":"error:handler not found,topic:orderbook.7.BTCUSDT","conn_id":"x","req_id":"1","op":"subscribe"}"#,
            Ok(Message::SubscribeResult {
                accepted: false,
                acked: Acked::Request(1),
            }),
        ),
        (
            r#"{"success":true,"ret_msg":"pong","conn_id":"0970e817-426e-429a-a679-ff7f55e0b16a","op":"ping"}"#,
            Ok(Message::Heartbeat),
        ),
        (
            r#"{"args":["1672916271846"],"op":"pong"}"#,
            Ok(Message::Heartbeat),
        ),
        (
            r#"{"success":true,"ret_msg":"","conn_id":"x","req_id":"1","op":"unsubscribe"}"#,
            Ok(Message::Ignored),
        ),
        (
            r#"{"topic":"publicTrade.BTCUSDT","type":"snapshot","ts":1,"data":[{"p":"1"}]}"#,
            Ok(Message::Ignored),
        ),
        (
            r#"{"op":"subscribe","ret_msg":""}"#,
            Err(DecodeError::MissingKey("success")),
        ),
        (
            r#"{"ret_msg":""}"#,
            Err(DecodeError::UnknownMessage("Bybit v5 message")),
        ),
        (
            r#"{"topic":"orderbook.7.BTCUSDT","type":"delta","data":{"s":"BTCUSDT","b":[],"a":[],"u":2}}"#,
            Err(DecodeError::Invalid("a topic like orderbook.50.BTCUSDT")),
        ),
        (
            r#"{"topic":"orderbook.50.BTCUSDT","type":"delta","data":{"s":"ETHUSDT","b":[],"a":[],"u":2}}"#,
            Err(DecodeError::Invalid("a book message's symbol is its topic's")),
        ),
        (
            r#"{"topic":"orderbook.50.BTCUSDT","type":"delta","data":{"s":"BTCUSDT","b":[],"a":[]}}"#,
            Err(DecodeError::MissingKey("u")),
        ),
        (
            r#"{"topic":"orderbook.50.BTCUSDT","type":"delta"}"#,
            Err(DecodeError::MissingKey("data")),
        ),
    ];
    for (frame, expected) in frames {
        assert_eq!(decode(frame).0, expected, "{frame}");
    }
}

/// `u == 1` is a restarted topic: its delta starts the book again.
#[test]
fn a_delta_with_update_id_1_is_a_snapshot() {
    let frame = r#"{"topic":"orderbook.50.BTCUSDT","type":"delta","data":{"s":"BTCUSDT","b":[["2","1"]],"a":[["3","1"]],"u":1}}"#;
    let (message, update) = decode(frame);
    assert_eq!(message, Ok(Message::Book { stream: b"BTCUSDT" }));
    assert!(update.is_snapshot);
    let (_, later) = decode(&frame.replace(r#""u":1"#, r#""u":2"#));
    assert!(!later.is_snapshot);
}

#[test]
fn symbols_name_their_market_and_connection() {
    let url = "wss://stream.bybit.com/v5/public";
    assert_eq!(Bybit.endpoint(url, "BTCUSDT"), format!("{url}/spot"));
    assert_eq!(Bybit.endpoint(url, "linear:BTCUSDT"), format!("{url}/linear"));
    assert_eq!(Bybit.diff_stream_name("linear:BTCUSDT"), "BTCUSDT");
    assert_eq!(
        Bybit.diff_stream_symbol("orderbook.50.BTCUSDT").as_deref(),
        Some("BTCUSDT")
    );
    assert_eq!(Bybit.check_symbol("linear:1000PEPEUSDT"), Ok(()));
    for bad in ["option:BTC", "btcusdt", "spot:", "BTC/USDT"] {
        assert!(Bybit.check_symbol(bad).is_err(), "{bad}");
    }
    // The inverse market: its own endpoint, contracts of a USD value.
    assert_eq!(Bybit.check_symbol("inverse:BTCUSD"), Ok(()));
    assert_eq!(Bybit.endpoint(url, "inverse:BTCUSD"), format!("{url}/inverse"));
    assert!(Bybit.inverse("inverse:BTCUSD") && Bybit.sized_in_contracts("inverse:BTCUSD"));
    assert!(!Bybit.inverse("linear:BTCUSDT") && !Bybit.sized_in_contracts("linear:BTCUSDT"));
}

#[test]
fn subscriptions_round_trip_through_the_simulator() {
    let symbols: Vec<String> = (0..12).map(|n| format!("C{n}USDT")).collect();
    let requests = Bybit.subscribe_frames(&symbols, StreamKind::Diff, 20, 5);
    let shape: Vec<_> = requests
        .iter()
        .map(|request| (request.id, request.streams.clone()))
        .collect();
    assert_eq!(shape, [(Some(5), 0..10), (Some(6), 10..12)], "10 topics a request");
    assert_eq!(
        Bybit.subscribe_frames(&symbols[..1], StreamKind::Diff, 20, 1)[0].frame,
        r#"{"args":["orderbook.50.C0USDT"],"op":"subscribe","req_id":"1"}"#
    );
    let answer = Bybit.answer_request(&requests[1].frame).unwrap();
    assert_eq!((answer.subscribe.len(), answer.depth), (2, Some(50)));
    assert_eq!(
        decode(&answer.replies[0]).0,
        Ok(Message::SubscribeResult {
            accepted: true,
            acked: Acked::Request(6)
        })
    );
    let unsubscribe = Bybit.unsubscribe_frames(&symbols[..1], StreamKind::Diff, 20);
    let answer = Bybit.answer_request(&unsubscribe[0]).unwrap();
    assert_eq!(answer.unsubscribe, ["orderbook.50.C0USDT"]);
    assert_eq!(decode(&answer.replies[0]).0, Ok(Message::Ignored));
    let pong = Bybit.answer_request(Bybit.client_ping().unwrap().1).unwrap();
    assert_eq!(decode(&pong.replies[0]).0, Ok(Message::Heartbeat));
    let refused = Bybit.answer_request(r#"{"op":"subscribe","args":["orderbook.7.X"]}"#)
        .unwrap();
    assert!(matches!(
        decode(&refused.replies[0]).0,
        Ok(Message::SubscribeResult {
            accepted: false,
            ..
        })
    ));
    assert_eq!(Bybit.kept_depth(10), Some(50));
    assert_eq!(Bybit.kept_depth(1), Some(1));
    assert_eq!(Bybit.kept_depth(5000), Some(1000));
}

/// The simulator's frames decode to what it encoded.
#[test]
fn encoded_messages_decode_to_the_same_levels() {
    let recorded = include_str!(
        "../../../tests/fixtures/bybit/linear_orderbook50_BTCUSDT_snapshot_delta_2026-08-12.jsonl"
    );
    let (_, snapshot) = decode(recorded.lines().next().unwrap());
    let mut frame = Vec::new();
    Bybit.encode_snapshot("orderbook.50.BTCUSDT", &snapshot, SnapshotSource::InBand, None, 2, &mut frame);
    let (message, decoded) = decode(std::str::from_utf8(&frame).unwrap());
    assert_eq!(message, Ok(Message::Book { stream: b"BTCUSDT" }));
    assert!(decoded.is_snapshot);
    assert_eq!(
        (&decoded.bids, &decoded.asks, decoded.last_id),
        (&snapshot.bids, &snapshot.asks, 53_935_309)
    );
    let mut update = snapshot.clone();
    update.bids.truncate(1);
    update.asks.clear();
    update.last_id += 1;
    frame.clear();
    Bybit.encode_diff("orderbook.50.BTCUSDT", &update, None, 2, 7, &mut frame);
    let (message, decoded) = decode(std::str::from_utf8(&frame).unwrap());
    assert_eq!(message, Ok(Message::Book { stream: b"BTCUSDT" }));
    assert!(!decoded.is_snapshot);
    assert_eq!((decoded.bids, decoded.last_id), (update.bids, update.last_id));
}
