use super::*;

const DOCS_SNAPSHOT: &str =
    include_str!("../../../tests/fixtures/kraken/v2_book_docs_example_BTCUSD_snapshot.json");

fn decode(frame: &str) -> (Result<Message<'_>, DecodeError>, BookUpdate) {
    let mut out = BookUpdate::default();
    let message = Kraken::decode_diff(frame.as_bytes(), 1000, &mut out);
    (message, out)
}

#[test]
fn the_documented_checksum_verifies_from_the_wire_text() {
    let (message, snapshot) = decode(DOCS_SNAPSHOT.trim());
    assert_eq!(message, Ok(Message::Book { stream: b"BTC/USD" }));
    assert!(snapshot.is_snapshot);
    assert_eq!(
        snapshot.decimals,
        WireDecimals {
            price: 1,
            amount: 8,
            ..Default::default()
        }
    );
    let mut book = DepthBook::new(1000);
    book.replace(&snapshot);
    assert_eq!(snapshot.checksum, Some(3_310_070_434));
    assert_eq!(
        Kraken::checksum(&book, snapshot.decimals),
        snapshot.checksum
    );
    // One digit fewer of precision is other text: another checksum.
    let fewer = WireDecimals {
        price: 1,
        amount: 7,
        ..Default::default()
    };
    assert_ne!(Kraken::checksum(&book, fewer), snapshot.checksum);
    // The texts kept after a checksum are those of its precision: the same book at
    // another is written anew.
    let mut texts = LevelTexts::default();
    for decimals in [snapshot.decimals, fewer, snapshot.decimals] {
        assert_eq!(
            Kraken::checksum_after_change(&book, decimals, &mut texts),
            Kraken::checksum(&book, decimals),
            "{decimals:?}"
        );
    }
}

#[test]
fn control_frames_are_classified() {
    let frames = [
        (
            r#"{"channel":"status","type":"update","data":[{"version":"2.0.10","system":"online","api_version":"v2","connection_id":12072546403441331453}]}"#,
            Ok(Message::Ignored),
        ),
        (
            r#"{"channel":"heartbeat"}"#,
            Ok(Message::Heartbeat),
        ),
        (
            r#"{"method":"subscribe","result":{"channel":"book","depth":10,"snapshot":true,"symbol":"ETH/BTC"},"success":true,"time_in":"2026-08-26T15:16:16.576099Z","time_out":"2026-08-26T15:16:16.576140Z"}"#,
            Ok(Message::SubscribeResult {
                accepted: true,
                acked: Acked::Stream(b"ETH/BTC"),
            }),
        ),
        (
            r#"{"error":"Currency pair not supported XXX/YYY","method":"subscribe","success":false,"symbol":"XXX/YYY","time_in":"2026-08-26T15:16:16.576099Z","time_out":"2026-08-26T15:16:16.576140Z"}"#,
            Ok(Message::SubscribeResult {
                accepted: false,
                acked: Acked::Stream(b"XXX/YYY"),
            }),
        ),
        (
            r#"{"method":"pong","req_id":7,"time_in":"2026-08-26T15:16:16.576099Z","time_out":"2026-08-26T15:16:16.576140Z"}"#,
            Ok(Message::Heartbeat),
        ),
        (
            r#"{"method":"unsubscribe","result":{"channel":"book","symbol":"ETH/BTC"},"success":true}"#,
            Ok(Message::Ignored),
        ),
        (
            r#"{"method":"subscribe","result":{}}"#,
            Err(DecodeError::MissingKey("success")),
        ),
        (
            r#"{"result":{}}"#,
            Err(DecodeError::UnknownMessage("Kraken v2 message")),
        ),
    ];
    for (frame, expected) in frames {
        assert_eq!(decode(frame).0, expected, "{frame}");
    }
}

#[test]
fn subscriptions_round_trip_through_the_simulator() {
    let symbols = ["BTC/USD".to_owned(), "ETH/BTC".to_owned()];
    let requests = Kraken.subscribe_frames(&symbols, StreamKind::Diff, 11, 4);
    assert_eq!(
        requests,
        [SubscribeRequest {
            frame: r#"{"method":"subscribe","params":{"channel":"book","depth":25,"snapshot":true,"symbol":["BTC/USD","ETH/BTC"]},"req_id":4}"#.to_owned(),
            id: None, // acknowledged per symbol
            streams: 0..2,
        }]
    );
    let answer = Kraken.answer_request(&requests[0].frame).unwrap();
    assert_eq!((answer.subscribe.len(), answer.depth), (2, Some(25)));
    for (reply, symbol) in answer.replies.iter().zip(&symbols) {
        assert_eq!(
            decode(reply).0,
            Ok(Message::SubscribeResult {
                accepted: true,
                acked: Acked::Stream(symbol.as_bytes())
            })
        );
    }
    let unsubscribe = Kraken.unsubscribe_frames(&["BTC/USD".to_owned()], StreamKind::Diff, 10);
    let answer = Kraken.answer_request(&unsubscribe[0]).unwrap();
    assert_eq!(answer.unsubscribe, ["BTC/USD"]);
    assert_eq!(decode(&answer.replies[0]).0, Ok(Message::Ignored));
    let pong = Kraken.answer_request(Kraken.client_ping().unwrap().1).unwrap();
    assert_eq!(decode(&pong.replies[0]).0, Ok(Message::Heartbeat));
    assert_eq!(Kraken.kept_depth(11), Some(25));
    assert_eq!(Kraken.kept_depth(5000), Some(1000));
}

/// The simulator's frames decode to what it encoded, and carry the book's checksum.
#[test]
fn encoded_messages_decode_to_the_same_levels() {
    let (_, snapshot) = decode(DOCS_SNAPSHOT.trim());
    let mut frame = Vec::new();
    let mut book = DepthBook::new(1000);
    book.replace(&snapshot);
    let decimals = WireDecimals {
        price: 8,
        amount: 8,
        ..Default::default()
    };
    let checksum = Kraken::checksum(&book, decimals);
    Kraken.encode_snapshot("BTC/USD", &snapshot, SnapshotSource::InBand, checksum, 8, &mut frame);
    let (message, decoded) = decode(std::str::from_utf8(&frame).unwrap());
    assert_eq!(message, Ok(Message::Book { stream: b"BTC/USD" }));
    assert_eq!(
        (decoded.bids, decoded.asks),
        (snapshot.bids.clone(), snapshot.asks.clone())
    );
    assert_eq!((decoded.checksum, decoded.decimals), (checksum, decimals));
    let mut update = snapshot.clone();
    update.bids.truncate(1);
    update.asks.clear();
    update.last_id = 1_786_540_345_149_000;
    frame.clear();
    Kraken.encode_diff("BTC/USD", &update, Some(7), 8, 0, &mut frame);
    let (message, decoded) = decode(std::str::from_utf8(&frame).unwrap());
    assert_eq!(message, Ok(Message::Book { stream: b"BTC/USD" }));
    assert!(!decoded.is_snapshot);
    assert_eq!(
        (decoded.bids, decoded.last_id, decoded.checksum),
        (update.bids.clone(), update.last_id, Some(7))
    );
    // An update must carry its checksum; a snapshot may come without one (a thin book's).
    frame.clear();
    Kraken.encode_diff("BTC/USD", &update, None, 8, 0, &mut frame);
    let (message, _) = decode(std::str::from_utf8(&frame).unwrap());
    assert_eq!(message, Err(DecodeError::MissingKey("checksum")));
    frame.clear();
    Kraken.encode_snapshot("BTC/USD", &update, SnapshotSource::InBand, None, 8, &mut frame);
    let (message, decoded) = decode(std::str::from_utf8(&frame).unwrap());
    assert_eq!(message, Ok(Message::Book { stream: b"BTC/USD" }));
    assert!(decoded.is_snapshot && decoded.checksum.is_none());
}
