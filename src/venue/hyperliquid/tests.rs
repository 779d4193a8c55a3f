use super::*;

#[test]
fn names_the_venue_does_not_list_are_refused_before_subscribing() {
    let venue = Hyperliquid;
    for listed in ["BTC", "kPEPE", "0G", "xyz:SP500", "PURR/USDC", "@107"] {
        assert_eq!(venue.check_symbol(listed), Ok(()), "{listed}");
    }
    for unlisted in [
        "btc", "Btc", "kpepe", "BTC-USD", "BTCUSDT ", "", "@", "@1a", "/USDC", "PURR/", "purr/usdc",
        "XYZ:SP500", ":BTC", "xyz:", "xyz:sp500", "BTC:xyz", "k",
    ] {
        assert!(venue.check_symbol(unlisted).is_err(), "{unlisted:?}");
    }
    assert!(venue.check_symbol(&"A".repeat(33)).is_err());
}

#[test]
fn books_of_five_levels_or_fewer_are_subscribed_fast() {
    let frames = |depth| {
        let streams = ["BTC".to_owned()];
        Hyperliquid.subscribe_frames(&streams, StreamKind::Snapshots, depth, 1)
    };
    assert_eq!(
        frames(5)[0].frame,
        r#"{"method":"subscribe","subscription":{"coin":"BTC","fast":true,"type":"l2Book"}}"#
    );
    assert_eq!(
        frames(6)[0].frame,
        r#"{"method":"subscribe","subscription":{"coin":"BTC","type":"l2Book"}}"#
    );
    assert_eq!(frames(6)[0].id, None);
    let unsubscribe = Hyperliquid.unsubscribe_frames(&["ETH".to_owned()], StreamKind::Snapshots, 5);
    assert_eq!(
        unsubscribe,
        [r#"{"method":"unsubscribe","subscription":{"coin":"ETH","fast":true,"type":"l2Book"}}"#]
    );
}

#[test]
fn the_simulator_answers_what_a_subscription_asked_for() {
    let answer = Hyperliquid
        .answer_request(r#"{"method":"subscribe","subscription":{"type":"l2Book","coin":"BTC","fast":true}}"#)
        .unwrap();
    assert_eq!(answer.subscribe, ["BTC"]);
    assert_eq!(answer.depth, Some(FAST_LEVELS));
    let mut book = TopBook::default();
    let ack = answer.replies[0].as_bytes();
    assert_eq!(
        Hyperliquid::decode(ack, 10, &mut book),
        Ok(Message::SubscribeResult {
            accepted: true,
            acked: Acked::Stream(b"BTC")
        })
    );
    let pong = Hyperliquid.answer_request(r#"{"method":"ping"}"#).unwrap();
    assert!(pong.ping);
    assert_eq!(
        Hyperliquid::decode(pong.replies[0].as_bytes(), 10, &mut book),
        Ok(Message::Heartbeat)
    );
}

#[test]
fn a_spot_pair_says_its_quote_and_a_perpetual_does_not() {
    let quote = |symbol| Hyperliquid.quote_currency(symbol, "PURR").map(|q| q.to_string());
    assert_eq!(quote("PURR/USDC").as_deref(), Some("USDC"));
    assert_eq!(quote("PURR"), None);
    assert_eq!(quote("@107"), None);
}
