use super::*;
use super::decode::{decode_top_general, decode_usual_top};
use super::sequence::{SeqIdChain, book_checksum};

fn decode(frame: &str) -> (Result<Message<'_>, DecodeError>, BookUpdate) {
    let mut out = BookUpdate::default();
    let message = Okx::decode_diff(frame.as_bytes(), 1000, &mut out);
    (message, out)
}

#[test]
fn control_frames_are_classified() {
    let frames = [
        (
            r#"{"id":"1512","event":"subscribe","arg":{"channel":"books","instId":"BTC-USDT"},"connId":"a4d3ae55"}"#,
            Ok(Message::SubscribeResult {
                accepted: true,
                acked: Acked::Stream(b"BTC-USDT"),
            }),
        ),
        (
            r#"{"id":"1512","event":"error","code":"60012","msg":"Invalid request","connId":"a4d3ae55"}"#,
            Ok(Message::SubscribeResult {
                accepted: false,
                acked: Acked::Oldest,
            }),
        ),
        (
            r#"{"id":"0","event":"error","code":"60012","msg":"Invalid request","connId":"a4d3ae55"}"#,
            Ok(Message::Ignored),
        ),
        (
            r#"{"id":"0","event":"unsubscribe","arg":{"channel":"books","instId":"BTC-USDT"},"connId":"a4d3ae55"}"#,
            Ok(Message::Ignored),
        ),
        (Okx.reconnect_request().unwrap(), Ok(Message::Reconnect)),
        (
            r#"{"event":"notice","code":"64009","msg":"x","connId":"a4d3ae55"}"#,
            Ok(Message::Ignored),
        ),
        ("pong", Ok(Message::Heartbeat)),
        (
            r#"{"arg":{"channel":"bbo-tbt","instId":"BCH-USDT-SWAP"},"data":[{"asks":[["111.06","55154","0","2"]],"bids":[["111.05","57745","0","2"]],"ts":"1670324386802","seqId":363996337}]}"#,
            Ok(Message::Ignored),
        ),
        (
            r#"{"event":"subscribe","connId":"a4d3ae55"}"#,
            Err(DecodeError::MissingKey("instId")),
        ),
        (
            r#"{"connId":"a4d3ae55"}"#,
            Err(DecodeError::UnknownMessage("OKX v5 message")),
        ),
    ];
    for (frame, expected) in frames {
        assert_eq!(decode(frame).0, expected, "{frame}");
    }
}

const BOOKS5: [&str; 2] = [
    include_str!("../../../tests/fixtures/okx/books5_BTC-USDT_ack_then_snapshots_2026-08-12.jsonl"),
    include_str!("../../../tests/fixtures/okx/books5_BTC-USDT-SWAP_ack_then_snapshots_2026-08-12.jsonl"),
];

/// The recorded `books5` messages.
fn recorded_books5() -> Vec<Vec<u8>> {
    let lines = BOOKS5.iter().flat_map(|text| text.lines());
    lines
        .filter(|line| line.contains(r#""data""#))
        .map(|line| line.as_bytes().to_vec())
        .collect()
}

/// Whether the layout fast path read `frame`, as the general walk does.
fn fast_path_agrees(frame: &[u8]) -> Result<bool, proptest::test_runner::TestCaseError> {
    crate::venue::layout_edits::top_fast_path_agrees(frame, decode_usual_top, decode_top_general)
}

#[test]
fn recorded_books5_messages_take_the_layout_fast_path() {
    for frame in recorded_books5() {
        assert!(fast_path_agrees(&frame).unwrap());
    }
}

proptest::proptest! {
    /// Whatever the layout fast path accepts, the general walk reads the same way: a
    /// recorded `books5` message with one edit, mostly where the layout's literals and
    /// values are.
    #[test]
    fn books5_layout_fast_path_agrees_with_the_general_walk(
        which in 0usize..4,
        edit in crate::venue::layout_edits::edit(),
    ) {
        let mut frame = recorded_books5()[which].clone();
        crate::venue::layout_edits::apply(&mut frame, edit);
        fast_path_agrees(&frame)?;
    }
}

/// The ids chain as the venue documents: a snapshot starts a chain, an update follows
/// its `prevSeqId`, a keep-alive repeats the id, a reset goes down while chaining, a
/// REST snapshot may fall inside an update; anything else is a gap or old.
#[test]
fn seq_ids_chain_as_documented() {
    let rule = SeqIdChain;
    let update = |prev, seq| BookUpdate {
        first_id: prev,
        last_id: seq,
        ..BookUpdate::default()
    };
    assert!(!rule.is_gap(&update(100, 130), 100, 0));
    assert!(!rule.is_gap(&update(130, 130), 130, 0), "a keep-alive");
    assert!(!rule.is_contained(&update(130, 130), 130, 0));
    assert!(!rule.is_gap(&update(130, 5), 130, 0), "a reset that chains");
    assert!(!rule.is_contained(&update(130, 5), 130, 0));
    assert!(rule.is_gap(&update(131, 150), 130, 0), "one missing");
    assert!(rule.is_contained(&update(100, 130), 130, 0), "a duplicate");
    assert!(rule.is_contained(&update(70, 100), 130, 0), "an older one");
    // A REST snapshot at 120, inside the update 100..130: that update applies, first
    // after it; later, an update starting before the book's id is a gap.
    assert!(!rule.is_contained(&update(100, 130), 120, 120));
    assert!(!rule.is_gap(&update(100, 130), 120, 120));
    assert!(rule.is_gap(&update(100, 130), 120, 90));
    assert!(rule.joins(120, &update(100, 130)));
    assert!(!rule.joins(99, &update(100, 130)), "the snapshot is too old");
    assert!(!rule.is_gap(&update(0, 0), 0, 0), "without ids: chained");
}

/// The checksum of the docs' example book, from its wire text (SOURCES.md: the
/// example's own checksum does not match its data; this is the one computed there),
/// and the text's form matters: `8477` is not `8477.0`.
#[test]
fn the_checksum_is_over_the_shortest_text() {
    assert_eq!(shortest_text("8477".parse().unwrap()).as_str(), "8477");
    assert_eq!(shortest_text("0.0000102".parse().unwrap()).as_str(), "0.0000102");
    assert_eq!(shortest_text("0.18050747".parse().unwrap()).as_str(), "0.18050747");
    assert_eq!(shortest_text("30236.10".parse().unwrap()).as_str(), "30236.1");
    let (message, snapshot) = decode(
        r#"{"arg":{"channel":"books","instId":"BTC-USDT"},"action":"snapshot","data":[{"asks":[["8476.98","415","0","13"],["8477","7","0","2"]],"bids":[["8476.97","256","0","12"],["8475.55","101","0","1"]],"ts":"1597026383085","checksum":-855196043,"prevSeqId":-1,"seqId":123456}]}"#,
    );
    assert_eq!(message, Ok(Message::Book { stream: b"BTC-USDT" }));
    assert!(snapshot.is_snapshot);
    assert_eq!((snapshot.first_id, snapshot.last_id), (123_456, 123_456));
    let mut book = DepthBook::new(400);
    book.replace(&snapshot);
    let text = "8476.97:256:8476.98:415:8475.55:101:8477:7";
    assert_eq!(book_checksum(&book, WireDecimals::default()), crc32fast::hash(text.as_bytes()));
}

#[test]
fn subscriptions_round_trip_through_the_simulator() {
    let symbols: Vec<String> = (0..51).map(|n| format!("C{n}-USDT")).collect();
    let requests = Okx.subscribe_frames(&symbols, StreamKind::Diff, 400, 3);
    assert_eq!(requests.len(), 2, "50 arguments a request");
    assert_eq!((requests[0].streams.clone(), requests[1].streams.clone()), (0..50, 50..51));
    assert!(requests.iter().all(|request| request.id.is_none() && request.frame.len() <= 4096));
    let answer = Okx.answer_request(&requests[1].frame).unwrap();
    assert_eq!(answer.subscribe, ["C50-USDT"]);
    assert_eq!(
        decode(&answer.replies[0]).0,
        Ok(Message::SubscribeResult {
            accepted: true,
            acked: Acked::Stream(b"C50-USDT"),
        })
    );
    let top = Okx.subscribe_frames(&symbols[..1], StreamKind::Snapshots, 10, 1);
    assert!(top[0].frame.contains(r#""channel":"books5""#), "{}", top[0].frame);
    assert_eq!(Okx.answer_request(&top[0].frame).unwrap().subscribe, ["books5:C0-USDT"]);
    let unsubscribe = Okx.unsubscribe_frames(&symbols[..1], StreamKind::Diff, 400);
    let answer = Okx.answer_request(&unsubscribe[0]).unwrap();
    assert_eq!(answer.unsubscribe, ["C0-USDT"]);
    assert_eq!(decode(&answer.replies[0]).0, Ok(Message::Ignored));
    let pong = Okx.answer_request(Okx.client_ping().unwrap().1).unwrap();
    assert_eq!(decode(&pong.replies[0]).0, Ok(Message::Heartbeat));
    let url = Okx.snapshot_url("https://www.okx.com", "BTC-USDT", 1000);
    assert_eq!(url, "https://www.okx.com/api/v5/market/books?instId=BTC-USDT&sz=400");
    let path = url.strip_prefix("https://www.okx.com").unwrap();
    assert_eq!(Okx.snapshot_symbol(path).as_deref(), Some("BTC-USDT"));
    assert_eq!(Okx.snapshot_symbol(&url).as_deref(), Some("BTC-USDT"), "a whole URL");
    let accepted = ["BTC-USDT", "BTC-USDT-SWAP", "ETH-USDC-261225", "BTC-USD-SWAP", "BTC-USD-261225"];
    for accepted in accepted {
        assert!(Okx.check_symbol(accepted).is_ok(), "{accepted}");
    }
    assert!(!Okx.sized_in_contracts("BTC-USDT"));
    assert!(Okx.sized_in_contracts("BTC-USDT-SWAP"));
    assert!(Okx.sized_in_contracts("ETH-USDC-261225"));
    // Inverse: margined in the coin, in contracts of a USD value.
    assert!(Okx.inverse("BTC-USD-SWAP") && Okx.sized_in_contracts("BTC-USD-SWAP"));
    assert!(Okx.inverse("BTC-USD-261225"));
    assert!(!Okx.inverse("BTC-USDT-SWAP") && !Okx.inverse("BTC-USD"));
    let refused = [
        "BTC-USD-261225-100000-C",
        "BTC-USDT-PERP",
        "btc-usdt",
        "BTCUSDT",
        "BTC--USDT",
    ];
    for refused in refused {
        assert!(Okx.check_symbol(refused).is_err(), "{refused}");
    }
}

/// The simulator's frames decode to what it encoded: updates with their ids and
/// checksum, in-band snapshots, REST answers, `books5` messages.
#[test]
fn encoded_messages_decode_to_the_same_levels() {
    let level = |price: &str, amount: &str| Level {
        price: price.parse().unwrap(),
        amount: amount.parse().unwrap(),
    };
    let update = BookUpdate {
        first_id: 100,
        last_id: 130,
        bids: vec![level("30236.1", "0.18050747"), level("30230", "0")],
        asks: vec![level("30236.2", "0.001")],
        ..BookUpdate::default()
    };
    let mut frame = Vec::new();
    Okx.encode_diff("BTC-USDT", &update, Some(-308_733_687i32 as u32), 8, 1, &mut frame);
    let (message, decoded) = decode(std::str::from_utf8(&frame).unwrap());
    assert_eq!(message, Ok(Message::Book { stream: b"BTC-USDT" }));
    assert_eq!((&decoded.bids, &decoded.asks), (&update.bids, &update.asks));
    assert_eq!((decoded.first_id, decoded.last_id), (100, 130));
    assert_eq!(decoded.checksum, Some(-308_733_687i32 as u32));
    frame.clear();
    Okx.encode_diff("BTC-USDT", &update, None, 8, 1, &mut frame);
    assert!(std::str::from_utf8(&frame).unwrap().contains(r#""checksum":0,"#));
    assert_eq!(decode(std::str::from_utf8(&frame).unwrap()).1.checksum, None);
    let snapshot = BookUpdate {
        first_id: 130,
        last_id: 130,
        bids: vec![level("30236.1", "0.18050747")],
        asks: vec![level("30236.2", "0.001")],
        ..BookUpdate::default()
    };
    frame.clear();
    Okx.encode_snapshot("BTC-USDT", &snapshot, SnapshotSource::InBand, Some(7), 8, &mut frame);
    let (_, decoded) = decode(std::str::from_utf8(&frame).unwrap());
    assert!(decoded.is_snapshot);
    assert_eq!((decoded.last_id, decoded.checksum), (130, Some(7)));
    frame.clear();
    Okx.encode_snapshot("BTC-USDT", &snapshot, SnapshotSource::Rest, None, 8, &mut frame);
    let mut rest = BookUpdate::default();
    Okx::decode_snapshot(&frame, 400, &mut rest).unwrap();
    assert_eq!((&rest.bids, &rest.asks, rest.last_id), (&snapshot.bids, &snapshot.asks, 130));
    let mut top = TopBook::default();
    top.bids.push(level("30236.1", "0.18050747"));
    top.venue_sequence = 9;
    frame.clear();
    Okx.encode_book("books5:BTC-USDT", &top, 8, &mut frame);
    let mut decoded = TopBook::default();
    assert_eq!(
        Okx::decode(&frame, 10, &mut decoded),
        Ok(Message::Book { stream: b"BTC-USDT" })
    );
    assert_eq!((decoded.bids, decoded.venue_sequence), (top.bids, 9));
}
