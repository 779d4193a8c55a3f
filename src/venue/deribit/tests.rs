use super::decode::{TEST_ANSWER, compact_level, decode_diff_message, decode_top_message, general_level};
use super::subscribe::{AUTH_REQUEST_ID, HEARTBEAT_REQUEST_ID, TEST_REQUEST_ID};
use super::*;

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
            r#"{"jsonrpc":"2.0","id":3,"result":["book.ETH-PERPETUAL.100ms","book.BTC_USDC-PERPETUAL.none.20.100ms"],"usIn":1790133840888348,"usOut":1790133840889867,"usDiff":1519,"testnet":false}"#,
            Ok(Message::SubscribeResult {
                accepted: true,
                acked: Acked::Listed {
                    request: 3,
                    streams: br#"["book.ETH-PERPETUAL.100ms","book.BTC_USDC-PERPETUAL.none.20.100ms"]"#,
                },
            }),
        ),
        (
            r#"{"jsonrpc":"2.0","id":5,"error":{"code":13778,"message":"raw_subscriptions_not_available_for_unauthorized"},"usIn":1790133842785065,"usOut":1790133842785140,"usDiff":75,"testnet":false}"#,
            Ok(Message::SubscribeResult {
                accepted: false,
                acked: Acked::Request(5),
            }),
        ),
        (
            r#"{"jsonrpc":"2.0","error":{"code":11050,"data":"invalid json","message":"bad_request"},"usIn":1790133844787014,"usOut":1790133844787041,"usDiff":27,"testnet":false}"#,
            Ok(Message::SubscribeResult {
                accepted: false,
                acked: Acked::Oldest,
            }),
        ),
        (
            r#"{"jsonrpc":"2.0","id":0,"result":["book.BTC-PERPETUAL.100ms"],"testnet":false}"#,
            Ok(Message::Ignored),
        ),
        (
            r#"{"jsonrpc":"2.0","id":4000000001,"result":"ok","testnet":false}"#,
            Ok(Message::Ignored),
        ),
        (
            r#"{"params":{"type":"test_request"},"method":"heartbeat","jsonrpc":"2.0"}"#,
            Ok(Message::Answer(TEST_ANSWER)),
        ),
        (
            r#"{"params":{"type":"heartbeat"},"method":"heartbeat","jsonrpc":"2.0"}"#,
            Ok(Message::Heartbeat),
        ),
        (
            r#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"platform_state","data":{"maintenance":true}}}"#,
            Ok(Message::Reconnect),
        ),
        (
            r#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"platform_state","data":{"price_index":"btc_usd","locked":true}}}"#,
            Ok(Message::Ignored),
        ),
        (
            r#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"ticker.BTC-PERPETUAL.100ms","data":{"best_bid_price":1.5}}}"#,
            Ok(Message::Ignored),
        ),
        (
            r#"{"jsonrpc":"2.0","method":"subscription","params":{"data":{}}}"#,
            Err(DecodeError::MissingKey("channel")),
        ),
        (
            r#"{"jsonrpc":"2.0","usIn":1}"#,
            Err(DecodeError::UnknownMessage("Deribit JSON-RPC message")),
        ),
    ];
    for (frame, expected) in frames {
        assert_eq!(decode(frame).0, expected, "{frame}");
        let mut top = TopBook::default();
        assert_eq!(decode_top_message(frame.as_bytes(), 10, &mut top), expected, "{frame}");
    }
}

/// The answer to a `test_request` is `public/test`, with the id the decoder takes for its
/// own answer.
#[test]
fn the_heartbeat_answer_is_public_test_under_its_own_id() {
    let answer: serde_json::Value = serde_json::from_str(TEST_ANSWER).unwrap();
    assert_eq!(answer["method"], "public/test");
    assert_eq!(answer["id"], TEST_REQUEST_ID);
    let opening = Deribit.opening_frames();
    let heartbeat: serde_json::Value = serde_json::from_str(&opening[0]).unwrap();
    assert_eq!((heartbeat["method"].as_str(), heartbeat["id"].as_u64()), (Some("public/set_heartbeat"), Some(HEARTBEAT_REQUEST_ID)));
    assert!(opening[1].contains(r#""platform_state""#));
}

/// A snapshot and a change of the 2026 frames, exponents read exactly; `delete` removes
/// whatever amount it carries.
#[test]
fn snapshots_and_changes_decode_with_their_ids() {
    let (message, snapshot) = decode(
        r#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"book.ETH-PERPETUAL.100ms","data":{"timestamp":1790133840638,"type":"snapshot","change_id":136069961946,"instrument_name":"ETH-PERPETUAL","bids":[["new",2772.65,2700],["new",2772.6,7414]],"asks":[["new",2772.7,53],["new",2.7731e3,4.2e3]]}}}"#,
    );
    assert_eq!(message, Ok(Message::Book { stream: b"book.ETH-PERPETUAL.100ms" }));
    assert!(snapshot.is_snapshot);
    assert_eq!(snapshot.last_id, 136_069_961_946);
    assert_eq!(snapshot.asks, [level("2772.7", "53"), level("2773.1", "4200")]);
    assert_eq!(snapshot.exchange_time_ns, 1_790_133_840_638_000_000);
    let (_, change) = decode(
        r#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"book.ALGO_USDC-PERPETUAL.100ms","data":{"timestamp":1790133842703,"type":"change","change_id":193809634213,"instrument_name":"ALGO_USDC-PERPETUAL","bids":[["new",0.11374,1054.0],["delete",0.11344,0.0],["delete",0.1134,5]],"asks":[],"prev_change_id":193809631160}}}"#,
    );
    assert!(!change.is_snapshot);
    assert_eq!((change.first_id, change.last_id), (193_809_631_160, 193_809_634_213));
    assert_eq!(change.bids, [level("0.11374", "1054"), level("0.11344", "0"), level("0.1134", "0")]);
}

/// A grouped window in snapshot mode: the best `depth` a side, ordered by `change_id`.
#[test]
fn a_grouped_window_decodes_to_its_depth() {
    let frame = include_str!("../../../tests/fixtures/deribit/grouped_book_BTC-PERPETUAL_none_10_100ms_2026-01-24.json");
    let mut top = TopBook::default();
    let message = decode_top_message(frame.trim().as_bytes(), 5, &mut top);
    assert_eq!(message, Ok(Message::Book { stream: b"book.BTC-PERPETUAL.none.10.100ms" }));
    assert_eq!(top.bids.len(), 5);
    assert_eq!(top.bids.as_slice()[0], level("89532.5", "254900"));
    assert_eq!(top.asks.as_slice()[4], level("89540", "11000"));
    assert_eq!(top.venue_sequence, 136_725_664_747);
}

/// Bad levels, ids apart, and numbers past 8 decimals (the book's loss alone).
#[test]
fn bad_changes_are_refused_and_unheld_numbers_lose_their_book() {
    let change = |data: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"subscription","params":{{"channel":"book.BTC-PERPETUAL.100ms","data":{{"type":"change","change_id":9,"timestamp":1,{data}}}}}}}"#
        )
    };
    let cases = [
        (change(r#""prev_change_id":8,"bids":[["set",1,1]],"asks":[]"#), Err(DecodeError::Invalid("a level's action: new, change or delete"))),
        (change(r#""bids":[],"asks":[]"#), Err(DecodeError::MissingKey("prev_change_id"))),
        (change(r#""prev_change_id":8,"bids":[]"#), Err(DecodeError::MissingKey("asks"))),
        (change(r#""prev_change_id":8,"bids":[],"asks":[],"type":"x""#), Err(DecodeError::DuplicateKey("type"))),
        (change(r#""prev_change_id":8,"bids":[["new",1,1]],"asks":[]"#), Ok(Message::Book { stream: b"book.BTC-PERPETUAL.100ms" })),
    ];
    for (frame, expected) in cases {
        assert_eq!(decode(&frame).0, expected, "{frame}");
    }
    let unheld = change(r#""prev_change_id":8,"bids":[["new",1e-9,1]],"asks":[]"#);
    assert!(matches!(
        decode(&unheld).0,
        Ok(Message::Unreadable { stream: b"book.BTC-PERPETUAL.100ms", .. })
    ));
}

#[test]
fn subscriptions_round_trip_through_the_simulator() {
    let streams: Vec<String> = ["BTC-PERPETUAL", "ETH_USDC-PERPETUAL"]
        .iter()
        .map(|symbol| Deribit.diff_stream_name(symbol))
        .collect();
    let requests = Deribit.subscribe_frames(&streams, StreamKind::Diff, 400, 3);
    assert_eq!(requests.len(), 1);
    assert_eq!((requests[0].id, requests[0].streams.clone()), (Some(3), 0..2));
    let answer = Deribit.answer_request(&requests[0].frame).unwrap();
    assert_eq!(answer.subscribe, streams);
    let (message, _) = decode(&answer.replies[0]);
    let Ok(Message::SubscribeResult { accepted: true, acked: Acked::Listed { request: 3, streams: listed } }) = message else {
        panic!("{message:?}");
    };
    assert!(std::str::from_utf8(listed).unwrap().contains("book.ETH_USDC-PERPETUAL.100ms"));
    // An unknown channel is left out; a raw book is refused to a connection not
    // authorised (the simulator's connection sends `unauthorised` there).
    let unknown = Deribit.subscribe_frames(&["book.NOPE.wrong".to_owned()], StreamKind::Diff, 1, 4);
    let answer = Deribit.answer_request(&unknown[0].frame).unwrap();
    assert!(answer.subscribe.is_empty() && answer.replies[0].contains(r#""result":[]"#));
    let raw = Deribit.subscribe_frames(&["book.BTC-PERPETUAL.raw".to_owned()], StreamKind::Diff, 1, 5);
    let answer = Deribit.answer_request(&raw[0].frame).unwrap();
    let refusal = answer.unauthorised.as_deref().expect("refused unless authorised");
    assert_eq!(decode(refusal).0, Ok(Message::SubscribeResult { accepted: false, acked: Acked::Request(5) }));
    assert_eq!(answer.subscribe, ["book.BTC-PERPETUAL.raw"]);
    let top = Deribit.stream_name("BTC-PERPETUAL", 10);
    assert_eq!(top, "book.BTC-PERPETUAL.none.10.100ms");
    assert_eq!(Deribit.stream_name("BTC-PERPETUAL", 15), "book.BTC-PERPETUAL.none.20.100ms");
    let answer = Deribit.answer_request(&Deribit.subscribe_frames(std::slice::from_ref(&top), StreamKind::Snapshots, 10, 6)[0].frame).unwrap();
    assert_eq!((answer.subscribe, answer.depth), (vec![top], Some(10)));
    let unsubscribe = Deribit.unsubscribe_frames(&streams[..1], StreamKind::Diff, 400);
    let answer = Deribit.answer_request(&unsubscribe[0]).unwrap();
    assert_eq!(answer.unsubscribe, streams[..1]);
    assert_eq!(decode(&answer.replies[0]).0, Ok(Message::Ignored));
    let test = Deribit.answer_request(TEST_ANSWER).unwrap();
    assert!(test.ping);
    assert_eq!(decode(&test.replies[0]).0, Ok(Message::Ignored));
    for opening in Deribit.opening_frames() {
        let answer = Deribit.answer_request(&opening).unwrap();
        assert_eq!(decode(&answer.replies[0]).0, Ok(Message::Ignored), "{opening}");
    }
    assert_eq!(Deribit.diff_stream_symbol("book.BTC-24SEP21-8000-P.raw").as_deref(), Some("BTC-24SEP21-8000-P"));
    assert_eq!(Deribit.diff_stream_symbol("book.BTC-PERPETUAL.none.10.100ms"), None);
}

#[test]
fn instruments_and_their_units() {
    for accepted in ["BTC-PERPETUAL", "BTC-27DEC24", "BTC_USDC-PERPETUAL", "NVDA_USDC-PERPETUAL", "BTC_USDC"] {
        assert!(Deribit.check_symbol(accepted).is_ok(), "{accepted}");
    }
    for refused in ["BTC-24SEP21-8000-P", "btc-perpetual", "BTC", "BTC--PERPETUAL", "BTC-PERPETUAL-X-Y"] {
        assert!(Deribit.check_symbol(refused).is_err(), "{refused}");
    }
    assert!(Deribit.inverse("BTC-PERPETUAL") && Deribit.sized_in_contracts("BTC-PERPETUAL"));
    assert!(Deribit.inverse("ETH-27DEC24"));
    assert!(!Deribit.inverse("BTC_USDC-PERPETUAL") && !Deribit.sized_in_contracts("BTC_USDC-PERPETUAL"));
    assert!(!Deribit.inverse("BTC_USDC"));
    let quote = |symbol, base| Deribit.quote_currency(symbol, base).map(|c| c.to_string());
    assert_eq!(quote("BTC-PERPETUAL", "BTC").as_deref(), Some("USD"));
    assert_eq!(quote("NVDA_USDC-PERPETUAL", "NVDA").as_deref(), Some("USDC"));
    assert_eq!(quote("BTC_USDC", "BTC").as_deref(), Some("USDC"));
    assert_eq!(quote("BTC-PERPETUAL", "ETH"), None);
}

/// The simulator's frames decode to what it encoded.
#[test]
fn encoded_messages_decode_to_the_same_levels() {
    let update = BookUpdate {
        first_id: 100,
        last_id: 130,
        bids: vec![level("30236.5", "1000"), level("30230", "0")],
        asks: vec![level("30237", "20")],
        ..BookUpdate::default()
    };
    let mut frame = Vec::new();
    Deribit.encode_diff("book.BTC-PERPETUAL.100ms", &update, None, 8, 1, &mut frame);
    let (message, decoded) = decode(std::str::from_utf8(&frame).unwrap());
    assert_eq!(message, Ok(Message::Book { stream: b"book.BTC-PERPETUAL.100ms" }));
    assert_eq!((&decoded.bids, &decoded.asks), (&update.bids, &update.asks));
    assert_eq!((decoded.first_id, decoded.last_id), (100, 130));
    let snapshot = BookUpdate { first_id: 130, last_id: 130, bids: update.bids[..1].to_vec(), asks: update.asks.clone(), ..BookUpdate::default() };
    frame.clear();
    Deribit.encode_snapshot("book.BTC-PERPETUAL.100ms", &snapshot, SnapshotSource::InBand, None, 8, &mut frame);
    let (_, decoded) = decode(std::str::from_utf8(&frame).unwrap());
    assert!(decoded.is_snapshot);
    assert_eq!((decoded.last_id, decoded.bids.clone()), (130, snapshot.bids.clone()));
    let mut top = TopBook::default();
    top.bids.push(level("30236.5", "1000"));
    top.venue_sequence = 9;
    frame.clear();
    Deribit.encode_book("book.BTC-PERPETUAL.none.10.100ms", &top, 8, &mut frame);
    let mut decoded = TopBook::default();
    assert_eq!(decode_top_message(&frame, 10, &mut decoded), Ok(Message::Book { stream: b"book.BTC-PERPETUAL.none.10.100ms" }));
    assert_eq!((decoded.bids, decoded.venue_sequence), (top.bids, 9));
    let notice = Deribit.reconnect_request().unwrap();
    assert_eq!(decode(notice).0, Ok(Message::Reconnect));
    let heartbeat = Deribit.heartbeat(0).unwrap();
    assert_eq!(decode(&heartbeat).0, Ok(Message::Answer(TEST_ANSWER)));
}

proptest::proptest! {
    /// Whatever level the compact reader accepts, the general one reads the same way and
    /// ends at the same place: levels of any action, numbers plain, with an exponent or
    /// more digits than kept, with or without whitespace, and with one byte changed.
    #[test]
    fn the_compact_level_reader_agrees_with_the_general_one(
        price in 0u64..1u64 << 56,
        amount in 0u64..1u64 << 56,
        action in 0usize..5,
        spaced in proptest::bool::ANY,
        scientific in proptest::bool::ANY,
        edit in proptest::option::of((0usize..64, proptest::num::u8::ANY)),
    ) {
        let number = |raw: u64| match scientific {
            true => format!("{raw}e-8"),
            false => crate::fixed::FixedPoint::from_raw(raw).to_string(),
        };
        let separator = if spaced { ", " } else { "," };
        let action = ["", r#""new""#, r#""change""#, r#""delete""#, r#""set""#][action];
        let action = match action {
            "" => String::new(),
            action => format!("{action}{separator}"),
        };
        let mut text = format!("[{action}{}{separator}{}],[1,1]]", number(price), number(amount)).into_bytes();
        if let Some((at, byte)) = edit {
            let at = at % text.len();
            text[at] = byte;
        }
        let mut compact = Walker::new(&text);
        if let Some(level) = compact_level(&mut compact) {
            let mut general = Walker::new(&text);
            proptest::prop_assert_eq!(general_level(&mut general), Ok(level));
            proptest::prop_assert_eq!(general.position(), compact.position());
        }
    }
}

/// `public/auth` carries the client id and secret; what a recording keeps of it and of its
/// answer holds neither the secret nor the tokens; a refusal is the venue's reason; the
/// recorded answer, replayed, is an answer to a request of the connection's own.
#[test]
fn authorisation_is_requested_answered_and_recorded_without_its_secrets() {
    let key = crate::config::ApiKey::stand_in_credentials("the-id", "the-secret");
    let request = Deribit.auth_request(&key).expect("Deribit authorises by request");
    let sent: serde_json::Value = serde_json::from_str(&request.frame).unwrap();
    assert_eq!(sent["method"], "public/auth");
    assert_eq!(sent["params"]["grant_type"], "client_credentials");
    assert_eq!(sent["params"]["client_id"], "the-id");
    assert_eq!(sent["params"]["client_secret"], "the-secret");
    assert!(!request.recorded.contains("the-secret") && request.recorded.contains("the-id"));

    let answer = format!(
        r#"{{"jsonrpc":"2.0","id":{AUTH_REQUEST_ID},"result":{{"access_token":"token-a","expires_in":900,"refresh_token":"token-r","scope":"connection mainaccount","token_type":"bearer"}}}}"#
    );
    let Some(AuthAnswer::Authorised { recorded, lifetime }) = Deribit.auth_answer(answer.as_bytes()) else {
        panic!("an authorisation");
    };
    assert_eq!(lifetime, Some(std::time::Duration::from_secs(900)));
    assert!(!recorded.contains("token-a") && !recorded.contains("token-r"), "{recorded}");
    assert_eq!(decode(&recorded).0, Ok(Message::Ignored));

    let refused = format!(r#"{{"jsonrpc":"2.0","id":{AUTH_REQUEST_ID},"error":{{"message":"invalid_credentials","code":13004}}}}"#);
    let Some(AuthAnswer::Refused(why)) = Deribit.auth_answer(refused.as_bytes()) else {
        panic!("a refusal");
    };
    assert!(why.contains("invalid_credentials"), "{why}");
    let other = r#"{"jsonrpc":"2.0","id":4000000001,"result":"ok"}"#;
    assert_eq!(Deribit.auth_answer(other.as_bytes()), None);
    assert_eq!(
        Deribit.authorised_diff_stream_name("BTC-PERPETUAL").as_deref(),
        Some("book.BTC-PERPETUAL.raw")
    );
}
