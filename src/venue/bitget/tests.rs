use super::decode::{
    decode_diff_message, decode_top_general, decode_top_message, decode_usual_top,
};
use super::sequence::{PseqChain, book_checksum};
use super::*;
use crate::book::diff_sync::Sequencing;
use crate::venue::bitget_futures::BitgetFutures;
use crate::venue::bitget_spot::BitgetSpot;

fn decode(frame: &str) -> (Result<Message<'_>, DecodeError>, BookUpdate) {
    let mut out = BookUpdate::default();
    let message = decode_diff_message(frame.as_bytes(), 1000, &mut out);
    (message, out)
}

fn level(price: &str, amount: &str) -> Level {
    Level {
        price: price.parse().unwrap(),
        amount: amount.parse().unwrap(),
    }
}

#[test]
fn control_frames_are_classified() {
    let frames = [
        (
            r#"{"event":"subscribe","arg":{"instType":"USDT-FUTURES","channel":"books","instId":"BTCUSDT"}}"#,
            Ok(Message::SubscribeResult {
                accepted: true,
                acked: Acked::Stream(b"BTCUSDT"),
            }),
        ),
        // The v1 acknowledgement: the instType in lower case.
        (
            r#"{"event":"subscribe","arg":{"instType":"sp","channel":"books","instId":"EOSUSDT"}}"#,
            Ok(Message::SubscribeResult {
                accepted: true,
                acked: Acked::Stream(b"EOSUSDT"),
            }),
        ),
        (
            r#"{"event":"error","arg":{"instType":"USDT-FUTURES","channel":"books","instId":"NOPEUSDT"},"code":30001,"msg":"instType:USDT-FUTURES,channel:books,instId:NOPEUSDT,precision:null doesn't exist","op":"subscribe"}"#,
            Ok(Message::SubscribeResult {
                accepted: false,
                acked: Acked::Stream(b"NOPEUSDT"),
            }),
        ),
        (
            r#"{"event":"error","code":30001,"msg":"{\"instType\":\"usdt-futures\",\"symbol\":\"NOPEUSDT\",\"topic\":\"books\"} doesn't exist","connId":"0ac601fffe2331d1"}"#,
            Ok(Message::SubscribeResult {
                accepted: false,
                acked: Acked::Oldest,
            }),
        ),
        (
            r#"{"event":"error","arg":{"instType":"SPOT","channel":"books","instId":"BTCUSDT"},"code":30016,"msg":"Param error","op":"unsubscribe"}"#,
            Ok(Message::Ignored),
        ),
        (
            r#"{"event":"unsubscribe","arg":{"instType":"SPOT","channel":"books","instId":"BTCUSDT"}}"#,
            Ok(Message::Ignored),
        ),
        ("pong", Ok(Message::Heartbeat)),
        (
            r#"{"action":"snapshot","arg":{"instType":"SPOT","channel":"ticker","instId":"BTCUSDT"},"data":[{"lastPr":"1"}],"ts":1}"#,
            Ok(Message::Ignored),
        ),
        (
            r#"{"event":"subscribe","arg":{"instType":"SPOT","channel":"books"}}"#,
            Err(DecodeError::MissingKey("instId")),
        ),
        (
            r#"{"connId":"a4d3ae55"}"#,
            Err(DecodeError::UnknownMessage("Bitget v2 message")),
        ),
    ];
    for (frame, expected) in frames {
        assert_eq!(decode(frame).0, expected, "{frame}");
        let mut top = TopBook::default();
        assert_eq!(
            decode_top_message(frame.as_bytes(), 10, &mut top),
            expected,
            "{frame}"
        );
    }
}

/// The recorded chain (snapshot 427583461144, updates chained by `pseq`), read with its
/// ids as integers past 2^32, and the time of each book.
#[test]
fn recorded_books_messages_decode_with_their_ids() {
    let (message, snapshot) = decode(
        r#"{"action":"snapshot","arg":{"instType":"USDT-FUTURES","channel":"books","instId":"MAVUSDT"},"data":[{"asks":[["0.01039","4499.23"],["0.0104","116536.86"]],"bids":[["0.01038","4311.15"],["0.01037","175152.28"]],"ts":"1789456510736","seq":427583461144,"pseq":0}],"ts":1789456511968}"#,
    );
    assert_eq!(message, Ok(Message::Book { stream: b"MAVUSDT" }));
    assert!(snapshot.is_snapshot);
    assert_eq!(
        (snapshot.first_id, snapshot.last_id),
        (427_583_461_144, 427_583_461_144)
    );
    assert_eq!(
        snapshot.asks,
        [level("0.01039", "4499.23"), level("0.0104", "116536.86")]
    );
    assert_eq!(snapshot.exchange_time_ns, 1_789_456_510_736_000_000);
    assert_eq!(snapshot.checksum, None, "no checksum key");
    let (_, update) = decode(
        r#"{"action":"update","arg":{"instType":"USDT-FUTURES","channel":"books","instId":"MAVUSDT"},"data":[{"asks":[],"bids":[["0.00519","30828.52"]],"ts":"1789456512452","seq":427583480559,"pseq":427583461144}],"ts":1789456512453}"#,
    );
    assert!(!update.is_snapshot);
    assert_eq!(
        (update.first_id, update.last_id),
        (427_583_461_144, 427_583_480_559)
    );
    assert_eq!(update.bids, [level("0.00519", "30828.52")]);
    let rule = PseqChain;
    assert!(!rule.is_gap(&update, snapshot.last_id, snapshot.last_id));
    assert!(!rule.is_contained(&update, snapshot.last_id, snapshot.last_id));
}

/// The chain: an update follows the `seq` its `pseq` names; anything else not older is
/// a gap; v1's messages without ids chain to each other.
#[test]
fn pseq_chains_as_documented() {
    let rule = PseqChain;
    let update = |pseq, seq| BookUpdate {
        first_id: pseq,
        last_id: seq,
        ..BookUpdate::default()
    };
    assert!(!rule.is_gap(&update(100, 130), 100, 100));
    assert!(rule.is_gap(&update(101, 130), 100, 100), "one missing");
    assert!(rule.is_gap(&update(90, 130), 100, 100), "one reordered");
    assert!(rule.is_contained(&update(90, 100), 100, 100), "a duplicate");
    assert!(rule.is_contained(&update(70, 90), 100, 100), "an older one");
    assert!(!rule.is_contained(&update(100, 130), 100, 100));
    assert!(!rule.is_gap(&update(0, 0), 0, 0), "without ids: chained");
    assert!(
        rule.is_gap(&update(0, 0), 100, 100),
        "an update without ids in a chain"
    );
    assert!(rule.joins(100, &update(100, 130)));
    assert!(rule.joins(100, &update(90, 100)), "held by the snapshot");
    assert!(
        !rule.joins(100, &update(130, 150)),
        "the snapshot is too old"
    );
}

/// The checksum's text is each number with the book's decimals, trailing zeros kept
/// (`"2.4400"`), bids and asks interleaved, the longer side going on alone.
#[test]
fn the_checksum_is_over_the_text_at_the_books_precision() {
    let (message, snapshot) = decode(
        r#"{"action":"snapshot","arg":{"instType":"sp","channel":"books","instId":"EOSUSDT"},"data":[{"asks":[["2.4400","195.6669"],["2.4409","1209.0600"],["2.4410","426.0000"]],"bids":[["2.4346","1929.6778"]],"checksum":0,"ts":"1649290077497"}]}"#,
    );
    assert_eq!(message, Ok(Message::Book { stream: b"EOSUSDT" }));
    assert_eq!(
        snapshot.decimals,
        WireDecimals {
            price: 4,
            amount: 4,
            ..Default::default()
        }
    );
    let mut book = DepthBook::new(1000);
    book.replace(&snapshot);
    let text = "2.4346:1929.6778:2.4400:195.6669:2.4409:1209.0600:2.4410:426.0000";
    assert_eq!(
        book_checksum(&book, snapshot.decimals),
        crc32fast::hash(text.as_bytes())
    );
    assert_eq!(
        BitgetSpot::checksum(&book, snapshot.decimals),
        Some(crc32fast::hash(text.as_bytes()))
    );
}

/// An update continuing no chain, or ids apart, is refused; a number a `FixedPoint`
/// cannot hold loses the book alone.
#[test]
fn bad_ids_are_refused_and_unheld_numbers_lose_their_book() {
    let update = |data: &str| {
        format!(
            r#"{{"action":"update","arg":{{"instType":"SPOT","channel":"books","instId":"PEPEUSDT"}},"data":[{{"asks":[],"bids":[]{data}}}]}}"#
        )
    };
    let cases = [
        (
            update(r#","seq":5,"pseq":0"#),
            Err(DecodeError::Invalid("an update's pseq of 0")),
        ),
        (update(r#","seq":5"#), Err(DecodeError::MissingKey("pseq"))),
        (update(r#","pseq":5"#), Err(DecodeError::MissingKey("seq"))),
        (
            update(r#","seq":5,"pseq":4"#),
            Ok(Message::Book {
                stream: b"PEPEUSDT",
            }),
        ),
    ];
    for (frame, expected) in cases {
        assert_eq!(decode(&frame).0, expected, "{frame}");
    }
    let unheld = r#"{"action":"update","arg":{"instType":"SPOT","channel":"books","instId":"PEPEUSDT"},"data":[{"asks":[["0.0000000123","5"]],"bids":[],"seq":5,"pseq":4}]}"#;
    assert!(matches!(
        decode(unheld).0,
        Ok(Message::Unreadable {
            stream: b"PEPEUSDT",
            ..
        })
    ));
}

#[test]
fn subscriptions_round_trip_through_the_simulator() {
    let symbols: Vec<String> = (0..11).map(|n| format!("C{n}USDT")).collect();
    let requests = BitgetFutures.subscribe_frames(&symbols, StreamKind::Diff, 400, 3);
    assert_eq!(requests.len(), 2, "ten arguments a request");
    assert_eq!(
        (requests[0].streams.clone(), requests[1].streams.clone()),
        (0..10, 10..11)
    );
    assert!(
        requests
            .iter()
            .all(|request| request.id.is_none() && request.frame.len() <= 4096)
    );
    assert!(
        requests[0].frame.contains(r#""instType":"USDT-FUTURES""#),
        "{}",
        requests[0].frame
    );
    let answer = BitgetFutures.answer_request(&requests[1].frame).unwrap();
    assert_eq!(answer.subscribe, ["C10USDT"]);
    assert_eq!(
        decode(&answer.replies[0]).0,
        Ok(Message::SubscribeResult {
            accepted: true,
            acked: Acked::Stream(b"C10USDT"),
        })
    );
    // The same name under the other market's instType is refused, naming it.
    let answer = BitgetSpot.answer_request(&requests[1].frame).unwrap();
    assert!(answer.subscribe.is_empty());
    assert_eq!(
        decode(&answer.replies[0]).0,
        Ok(Message::SubscribeResult {
            accepted: false,
            acked: Acked::Stream(b"C10USDT"),
        })
    );
    for (depth, channel) in [
        (1, "books1"),
        (5, "books5"),
        (10, "books15"),
        (50, "books15"),
    ] {
        let top = BitgetSpot.subscribe_frames(&symbols[..1], StreamKind::Snapshots, depth, 1);
        assert!(
            top[0].frame.contains(&format!(r#""channel":"{channel}""#)),
            "{}",
            top[0].frame
        );
        let answer = BitgetSpot.answer_request(&top[0].frame).unwrap();
        assert_eq!(answer.subscribe, [format!("{channel}:C0USDT")]);
    }
    let unsubscribe = BitgetSpot.unsubscribe_frames(&symbols[..1], StreamKind::Diff, 400);
    let answer = BitgetSpot.answer_request(&unsubscribe[0]).unwrap();
    assert_eq!(answer.unsubscribe, ["C0USDT"]);
    assert_eq!(decode(&answer.replies[0]).0, Ok(Message::Ignored));
    let pong = BitgetSpot
        .answer_request(BitgetSpot.client_ping().unwrap().1)
        .unwrap();
    assert_eq!(decode(&pong.replies[0]).0, Ok(Message::Heartbeat));
    for accepted in ["BTCUSDT", "ETHBTC", "PEPEUSDT"] {
        assert!(BitgetSpot.check_symbol(accepted).is_ok(), "{accepted}");
    }
    for accepted in ["BTCUSDT", "BTCPERP", "ETHUSDC"] {
        assert!(BitgetFutures.check_symbol(accepted).is_ok(), "{accepted}");
    }
    for refused in ["BTCUSD", "BTCUSD_251226", "btcusdt"] {
        assert!(BitgetFutures.check_symbol(refused).is_err(), "{refused}");
    }
    assert!(BitgetSpot.check_symbol("BTC-USDT").is_err());
    let quote = |symbol| {
        BitgetFutures
            .quote_currency(symbol, "BTC")
            .map(|c| c.to_string())
    };
    assert_eq!(
        (quote("BTCUSDT").as_deref(), quote("BTCPERP").as_deref()),
        (Some("USDT"), Some("USDC"))
    );
    assert_eq!(
        BitgetSpot
            .quote_currency("ETHBTC", "ETH")
            .map(|c| c.to_string())
            .as_deref(),
        Some("BTC")
    );
    assert!(!BitgetFutures.sized_in_contracts("BTCUSDT") && !BitgetFutures.inverse("BTCUSDT"));
}

/// The simulator's frames decode to what it encoded: updates with their ids and
/// checksum, snapshots, top-N pushes.
#[test]
fn encoded_messages_decode_to_the_same_levels() {
    let update = BookUpdate {
        first_id: 100,
        last_id: 130,
        bids: vec![level("30236.1", "0.18050747"), level("30230", "0")],
        asks: vec![level("30236.2", "0.001")],
        ..BookUpdate::default()
    };
    let mut frame = Vec::new();
    BitgetSpot.encode_diff(
        "BTCUSDT",
        &update,
        Some(-308_733_687i32 as u32),
        2,
        1,
        &mut frame,
    );
    let (message, decoded) = decode(std::str::from_utf8(&frame).unwrap());
    assert_eq!(message, Ok(Message::Book { stream: b"BTCUSDT" }));
    assert_eq!((&decoded.bids, &decoded.asks), (&update.bids, &update.asks));
    assert_eq!((decoded.first_id, decoded.last_id), (100, 130));
    assert_eq!(decoded.checksum, Some(-308_733_687i32 as u32));
    assert_eq!(
        decoded.decimals,
        WireDecimals {
            price: 2,
            amount: 8,
            ..Default::default()
        }
    );
    let snapshot = BookUpdate {
        first_id: 130,
        last_id: 130,
        bids: update.bids[..1].to_vec(),
        asks: update.asks.clone(),
        ..BookUpdate::default()
    };
    frame.clear();
    BitgetSpot.encode_snapshot(
        "BTCUSDT",
        &snapshot,
        SnapshotSource::InBand,
        Some(7),
        8,
        &mut frame,
    );
    let (_, decoded) = decode(std::str::from_utf8(&frame).unwrap());
    assert!(decoded.is_snapshot);
    assert_eq!((decoded.last_id, decoded.checksum), (130, None));
    let mut top = TopBook::default();
    top.bids.push(level("30236.1", "0.18050747"));
    top.venue_sequence = 9;
    frame.clear();
    BitgetFutures.encode_book("books5:BTCUSDT", &top, 8, &mut frame);
    let mut decoded = TopBook::default();
    assert_eq!(
        decode_top_message(&frame, 10, &mut decoded),
        Ok(Message::Book { stream: b"BTCUSDT" })
    );
    assert_eq!((decoded.bids, decoded.venue_sequence), (top.bids, 9));
    assert!(
        std::str::from_utf8(&frame)
            .unwrap()
            .contains(r#""instType":"USDT-FUTURES""#)
    );
}

const BOOKS5: [&str; 2] = [
    include_str!(
        "../../../tests/fixtures/bitget/v2_books5_USDT-FUTURES_and_SPOT_BTCUSDT_ack_snapshots_2026-08-12.jsonl"
    ),
    include_str!(
        "../../../tests/fixtures/bitget/v2_v3_trimmed_frames_2026-09_probe_notes_and_fixture.jsonl"
    ),
];

/// The recorded top-N messages.
fn recorded_books5() -> Vec<Vec<u8>> {
    let lines = BOOKS5.iter().flat_map(|text| text.lines());
    lines
        .filter(|line| line.contains(r#""channel":"books5""#) && line.contains(r#""data""#))
        .map(|line| line.as_bytes().to_vec())
        .collect()
}

/// Whether the layout fast path read `frame`, as the general walk does.
fn fast_path_agrees(frame: &[u8]) -> Result<bool, proptest::test_runner::TestCaseError> {
    crate::venue::layout_edits::top_fast_path_agrees(frame, decode_usual_top, decode_top_general)
}

/// Every recorded top-N message, and the simulator's, take the fast path.
#[test]
fn recorded_and_simulated_top_messages_take_the_layout_fast_path() {
    let recorded = recorded_books5();
    assert_eq!(recorded.len(), 5);
    for frame in recorded {
        assert!(
            fast_path_agrees(&frame).unwrap(),
            "{}",
            String::from_utf8_lossy(&frame)
        );
    }
    let mut top = TopBook::default();
    top.bids.push(level("30236.1", "0.18050747"));
    top.asks.push(level("30236.2", "1"));
    let mut frame = Vec::new();
    BitgetSpot.encode_book("books15:BTCUSDT", &top, 2, &mut frame);
    assert!(
        fast_path_agrees(&frame).unwrap(),
        "{}",
        String::from_utf8_lossy(&frame)
    );
}

proptest::proptest! {
    /// Whatever the layout fast path accepts, the general walk reads the same way: a
    /// recorded `books5` message with one edit, mostly where the layout's literals and
    /// values are.
    #[test]
    fn books5_layout_fast_path_agrees_with_the_general_walk(
        which in 0usize..5,
        edit in crate::venue::layout_edits::edit(),
    ) {
        let mut frame = recorded_books5()[which].clone();
        crate::venue::layout_edits::apply(&mut frame, edit);
        fast_path_agrees(&frame)?;
    }
}
