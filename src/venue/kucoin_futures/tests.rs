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
