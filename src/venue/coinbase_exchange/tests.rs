use super::*;

fn decode(frame: &str) -> (Result<Message<'_>, DecodeError>, BookUpdate) {
    let mut out = BookUpdate::default();
    let message = CoinbaseExchange::decode_diff(frame.as_bytes(), 1000, &mut out);
    (message, out)
}

#[test]
fn control_frames_are_classified() {
    let frames = [
        (
            r#"{"type":"subscriptions","channels":[{"name":"level2","product_ids":["BAND-GBP","BAND-BTC"]}]}"#,
            Ok(Message::SubscribeResult {
                accepted: true,
                acked: Acked::Oldest,
            }),
        ),
        (
            r#"{"type":"error","message":"Failed to subscribe","reason":"ETH-XYZ is not a valid product"}"#,
            Ok(Message::SubscribeResult {
                accepted: false,
                acked: Acked::Oldest,
            }),
        ),
        (
            r#"{"type":"heartbeat","last_trade_id":17393422,"product_id":"ETH-USD","sequence":3461,"time":"2021-04-17T16:43:37.083117Z"}"#,
            Ok(Message::Heartbeat),
        ),
        (
            r#"{"type":"ticker","product_id":"ETH-USD","price":"1"}"#,
            Ok(Message::Ignored),
        ),
        (r#"{"product_id":"ETH-USD"}"#, Err(DecodeError::MissingKey("type"))),
    ];
    for (frame, expected) in frames {
        assert_eq!(decode(frame).0, expected, "{frame}");
    }
}

#[test]
fn subscriptions_round_trip_through_the_simulator() {
    let products: Vec<String> = (0..101).map(|n| format!("C{n}-USD")).collect();
    let requests = CoinbaseExchange.subscribe_frames(&products, StreamKind::Diff, 10, 3);
    assert_eq!(requests.len(), 2, "100 products a request");
    assert_eq!(
        (requests[0].id, requests[1].id, requests[1].streams.clone()),
        (Some(3), Some(4), 100..101)
    );
    assert!(requests[0].frame.contains(r#""channels":["level2_batch","heartbeat"]"#));
    let answer = CoinbaseExchange.answer_request(&requests[1].frame).unwrap();
    assert_eq!(answer.subscribe, ["C100-USD"]);
    assert_eq!(
        decode(&answer.replies[0]).0,
        Ok(Message::SubscribeResult {
            accepted: true,
            acked: Acked::Oldest
        })
    );
    let unsubscribe = CoinbaseExchange.unsubscribe_frames(&products[..1], StreamKind::Diff, 10);
    assert_eq!(CoinbaseExchange.answer_request(&unsubscribe[0]).unwrap().unsubscribe, ["C0-USD"]);
    assert!(CoinbaseExchange.check_symbol("BAND-GBP").is_ok());
    for refused in ["band-gbp", "BANDGBP", "BTC-USD-PERP", "-USD"] {
        assert!(CoinbaseExchange.check_symbol(refused).is_err(), "{refused}");
    }
}

/// The simulator's frames decode to what it encoded.
#[test]
fn encoded_messages_decode_to_the_same_levels() {
    let level = |price: &str, amount: &str| Level {
        price: price.parse().unwrap(),
        amount: amount.parse().unwrap(),
    };
    let update = BookUpdate {
        first_id: 1_618_677_817_083_117,
        last_id: 1_618_677_817_083_117,
        exchange_time_ns: 1_618_677_817_083_117_000,
        bids: vec![level("14.7472", "0")],
        asks: vec![level("14.8098", "123.1"), level("14.8024", "0")],
        ..BookUpdate::default()
    };
    let mut frame = Vec::new();
    CoinbaseExchange.encode_diff("BAND-GBP", &update, None, 4, 0, &mut frame);
    let (message, decoded) = decode(std::str::from_utf8(&frame).unwrap());
    assert_eq!(message, Ok(Message::Book { stream: b"BAND-GBP" }));
    assert_eq!(decoded, update);
    let snapshot = BookUpdate {
        bids: vec![level("14.7366", "1"), level("14.7", "2")],
        asks: vec![level("14.7664", "3")],
        is_snapshot: true,
        ..BookUpdate::default()
    };
    frame.clear();
    CoinbaseExchange.encode_snapshot("BAND-GBP", &snapshot, SnapshotSource::InBand, None, 4, &mut frame);
    let (message, decoded) = decode(std::str::from_utf8(&frame).unwrap());
    assert_eq!(message, Ok(Message::Book { stream: b"BAND-GBP" }));
    assert_eq!(decoded, snapshot);
    let mut capped = BookUpdate::default();
    CoinbaseExchange::decode_diff(&frame, 1, &mut capped).unwrap();
    assert_eq!((capped.bids.len(), capped.asks.len()), (1, 1), "the best level a side");
}

/// The Exchange REST book (level 2), what audits the books: levels of three elements, the
/// best `max_levels` a side kept, its time read, no id given (its `sequence` is another
/// channel's); what the simulator serves decodes to the book it wrote.
#[test]
fn the_rest_book_decodes_its_best_levels_and_its_time() {
    let body = br#"{"bids":[["1740.5","2.5",3],["1740.49","0.01",1],["1740.4","7",2]],"asks":[["1740.51","1.25",1]],"sequence":13051505638,"auction_mode":false,"auction":null,"time":"2024-06-05T12:34:56.123456789Z"}"#;
    let mut out = BookUpdate::default();
    CoinbaseExchange::decode_snapshot(body, 2, &mut out).unwrap();
    let pairs = |levels: &[Level]| -> Vec<String> {
        levels.iter().map(|l| format!("{}@{}", l.amount, l.price)).collect()
    };
    assert_eq!(
        pairs(&out.bids),
        ["2.50000000@1740.50000000", "0.01000000@1740.49000000"]
    );
    assert_eq!(pairs(&out.asks), ["1.25000000@1740.51000000"]);
    assert_eq!((out.first_id, out.last_id), (0, 0));
    assert_eq!(out.exchange_time_ns, 1_717_590_896_123_456_789);

    let refused = [
        (&br#"{"bids":[],"sequence":1}"#[..], DecodeError::MissingKey("asks")),
        (
            br#"{"bids":[["1","1",1],["2","1",1]],"asks":[]}"#,
            DecodeError::Unsorted(Side::Bid),
        ),
    ];
    for (body, error) in refused {
        let mut out = BookUpdate::default();
        assert_eq!(CoinbaseExchange::decode_snapshot(body, 10, &mut out), Err(error));
    }

    let book = BookUpdate {
        last_id: 1_717_590_896_123_456,
        bids: vec![Level::from_raw(174_050_000_000, 250_000_000)],
        asks: vec![Level::from_raw(174_051_000_000, 125_000_000)],
        ..BookUpdate::default()
    };
    let mut served = Vec::new();
    CoinbaseExchange.encode_snapshot("ETH-USD", &book, SnapshotSource::Rest, None, 2, &mut served);
    CoinbaseExchange::decode_snapshot(&served, 10, &mut out).unwrap();
    assert_eq!((out.bids.clone(), out.asks.clone()), (book.bids, book.asks));
    assert_eq!(out.exchange_time_ns, 1_717_590_896_123_456_000);
    assert_eq!(
        CoinbaseExchange.snapshot_symbol("http://127.0.0.1:1/coinbase_exchange/products/ETH-USD/book?level=2"),
        Some("ETH-USD".to_owned())
    );
}
