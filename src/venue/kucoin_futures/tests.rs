//! KuCoin futures' private pieces: names, requests, depths.

use super::subscribe::top_depth;
use super::*;

#[test]
fn symbols_say_their_quote_and_whether_they_are_inverse() {
    let streams = &KucoinFutures;
    assert_eq!(streams.quote_currency("XBTUSDTM", "BTC").unwrap().as_str(), "USDT");
    assert_eq!(streams.quote_currency("ETHUSDCM", "ETH").unwrap().as_str(), "USDC");
    assert_eq!(streams.quote_currency("XBTUSDM", "BTC").unwrap().as_str(), "USD");
    assert!(streams.inverse("XBTUSDM") && !streams.inverse("XBTUSDTM"));
    assert!(streams.check_symbol("XBTUSDTM").is_ok());
    for wrong in ["XBTUSDT", "xbtusdtm", "BTC-USDT", "M"] {
        assert!(streams.check_symbol(wrong).is_err(), "{wrong}");
    }
}

/// One request a symbol, numbered; a top-N subscription at the least depth that covers
/// the service's.
#[test]
fn each_symbol_is_subscribed_by_a_request_of_its_own() {
    let symbols = ["XBTUSDTM".to_owned(), "ETHUSDTM".to_owned()];
    let requests = KucoinFutures.subscribe_frames(&symbols, StreamKind::Diff, 10, 7);
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[1].frame,
        r#"{"action":"SUBSCRIBE","channel":"obu","depth":"increment@10ms","id":"8","symbol":"ETHUSDTM","tradeType":"FUTURES"}"#
    );
    assert_eq!((requests[1].id, requests[1].streams.clone()), (Some(8), 1..2));
    let top = KucoinFutures.subscribe_frames(&symbols[..1], StreamKind::Snapshots, 10, 1);
    assert!(top[0].frame.contains(r#""depth":"50""#), "{}", top[0].frame);
    assert_eq!((top_depth(1), top_depth(5), top_depth(6), top_depth(100)), (1, 5, 50, 50));
}

/// The recorded `obu` messages and the simulator's, as sent.
fn messages() -> Vec<String> {
    const PROBE: &str = include_str!(
        "../../../tests/fixtures/kucoin/futures_uta_obu_and_classic_trimmed_frames_2026-09-22_probe_notes.jsonl"
    );
    let mut frames: Vec<String> = (PROBE.lines())
        .filter(|line| line.contains("obu.FUTURES"))
        .map(str::to_owned)
        .collect();
    let update = BookUpdate {
        first_id: 7,
        last_id: 9,
        asks: vec![crate::book::Level {
            price: "85973.4".parse().unwrap(),
            amount: "12".parse().unwrap(),
        }],
        ..BookUpdate::default()
    };
    let mut simulated = Vec::new();
    KucoinFutures.encode_diff("XBTUSDTM", &update, None, 1, 1_790_114_459_839, &mut simulated);
    frames.push(String::from_utf8(simulated).unwrap());
    frames
}

type Both<'a> = (
    (Option<Message<'a>>, BookUpdate),
    (Result<Message<'a>, DecodeError>, BookUpdate),
);

/// `frame` read by the fast path and by the general walk.
fn both_ways(frame: &[u8]) -> Both<'_> {
    let (mut fast, mut general) = (BookUpdate::default(), BookUpdate::default());
    let fast_message = super::decode::fast_diff(frame, 5000, &mut fast);
    let general_message = super::decode::general_diff(frame, 5000, &mut general);
    ((fast_message, fast), (general_message, general))
}

/// Every recorded `obu` message and the simulator's take the fast path, read as the
/// general walk reads them.
#[test]
fn recorded_and_simulated_messages_take_the_layout_fast_path() {
    let frames = messages();
    assert_eq!(frames.len(), 4);
    for frame in &frames {
        let ((fast_message, fast), (general_message, general)) = both_ways(frame.as_bytes());
        let message = fast_message.unwrap_or_else(|| panic!("declined: {frame}"));
        assert_eq!(general_message, Ok(message), "{frame}");
        assert_eq!(fast, general, "{frame}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]

    /// A message edited (a byte replaced, inserted or removed, mostly where the layout's
    /// literals and values are): the fast path declines it, or reads it as the general
    /// walk does.
    #[test]
    fn an_edited_message_is_read_by_the_fast_path_as_by_the_general_walk_or_declined(
        which in 0usize..4,
        edit in crate::venue::layout_edits::edit(),
    ) {
        let mut frame = messages()[which].clone().into_bytes();
        crate::venue::layout_edits::apply(&mut frame, edit);
        let ((fast_message, fast), (general_message, general)) = both_ways(&frame);
        if let Some(message) = fast_message {
            proptest::prop_assert_eq!(general_message, Ok(message));
            proptest::prop_assert_eq!(fast, general);
        }
    }
}

