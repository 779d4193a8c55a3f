//! KuCoin's private pieces: the layout fast path against the general walk.

use super::decode::{fast_diff, general_diff};
use super::*;

/// The recorded and documented `/market/level2` messages, as sent (read once).
fn recorded() -> &'static [String] {
    static MESSAGES: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    MESSAGES.get_or_init(read_recorded)
}

fn read_recorded() -> Vec<String> {
    const FILES: [&str; 3] = [
        include_str!("../../../tests/fixtures/kucoin/timeline_level2_SNX-BTC_2021-04-25.jsonl"),
        include_str!("../../../tests/fixtures/kucoin/timeline_level2_ANKR-BTC_EQZ-BTC_2021-04-25.jsonl"),
        include_str!("../../../tests/fixtures/kucoin/docs_examples_level2_level2Depth5.jsonl"),
    ];
    let lines = FILES.iter().flat_map(|text| text.lines());
    lines
        .filter_map(|line| {
            let value: serde_json::Value = serde_json::from_str(line).ok()?;
            let frame = value.get("raw").and_then(|raw| raw.as_str()).unwrap_or(line);
            frame.contains("trade.l2update").then(|| frame.to_owned())
        })
        .collect()
}

type Read<'a> = (Option<Message<'a>>, BookUpdate);

/// `frame` read by the fast path and by the general walk.
fn both_ways(frame: &[u8]) -> (Read<'_>, (Result<Message<'_>, DecodeError>, BookUpdate)) {
    let (mut fast, mut general) = (BookUpdate::default(), BookUpdate::default());
    let fast_message = fast_diff(frame, 5000, &mut fast);
    let general_message = general_diff(frame, 5000, &mut general);
    ((fast_message, fast), (general_message, general))
}

/// The fast path reads every recorded message whose numbers a book holds, and the
/// documented one, as the general walk does; the simulator's too.
#[test]
fn the_layout_fast_path_reads_every_recorded_message_as_the_general_walk_does() {
    let mut frames = recorded().to_vec();
    let update = BookUpdate {
        first_id: 7,
        last_id: 9,
        bids: vec![crate::book::Level {
            price: "0.068".parse().unwrap(),
            amount: "1.5".parse().unwrap(),
        }],
        ..BookUpdate::default()
    };
    let mut simulated = Vec::new();
    Kucoin.encode_diff("ETH-BTC", &update, None, 8, 1_770_000_000_000, &mut simulated);
    frames.push(String::from_utf8(simulated).unwrap());
    let mut read_fast = 0;
    for frame in &frames {
        let ((fast_message, fast), (general_message, general)) = both_ways(frame.as_bytes());
        let Some(message) = fast_message else {
            // Declined: a number a book cannot hold (ANKR-BTC's ten decimals).
            assert!(
                !matches!(general_message, Ok(Message::Book { .. })),
                "{frame}"
            );
            continue;
        };
        assert_eq!(general_message, Ok(message), "{frame}");
        assert_eq!(fast, general, "{frame}");
        read_fast += 1;
    }
    assert!(read_fast > 600, "{read_fast} messages read by the fast path");
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2048))]

    /// A recorded message edited (a byte replaced, inserted or removed, mostly where the
    /// layout's literals and values are): the fast path declines it, or reads it as the
    /// general walk does.
    #[test]
    fn an_edited_message_is_read_by_the_fast_path_as_by_the_general_walk_or_declined(
        which in 0usize..1000,
        edit in crate::venue::layout_edits::edit(),
    ) {
        let messages = recorded();
        let mut frame = messages[which % messages.len()].clone().into_bytes();
        crate::venue::layout_edits::apply(&mut frame, edit);
        let ((fast_message, fast), (general_message, general)) = both_ways(&frame);
        if let Some(message) = fast_message {
            proptest::prop_assert_eq!(general_message, Ok(message));
            proptest::prop_assert_eq!(fast, general);
        }
    }
}

/// KuCoin's signature of a whole-book request, against Python's `hmac` and `base64` over the
/// same text (`base64(HMAC-SHA256(secret, "1729816425625GET/api/v3/…"))`).
#[test]
fn a_whole_book_request_is_signed_as_kucoin_documents() {
    let key = crate::config::ApiKey::stand_in_credentials(
        "kucoin-key",
        "kucoin-test-secret:test-passphrase",
    );
    let url = Kucoin
        .whole_book_url("https://api.kucoin.com", "BTC-USDT")
        .unwrap();
    let headers = Kucoin.signed_headers(&key, &url, 1_729_816_425_625);
    let header = |name: &str| {
        let found = headers.iter().find(|(header, _)| *header == name);
        found.map(|(_, value)| value.as_str())
    };
    assert_eq!(header("KC-API-KEY"), Some("kucoin-key"));
    assert_eq!(header("KC-API-TIMESTAMP"), Some("1729816425625"));
    assert_eq!(
        header("KC-API-SIGN"),
        Some("auUyqxZzUgjFMAHO8atw6eKgeULkgj1giuBHbWC4e0o=")
    );
    assert_eq!(
        header("KC-API-PASSPHRASE"),
        Some("0Wpi8gpr9X47G/MwEvr45u/0wioEHnHd+TWyj9Zo9BM=")
    );
    assert_eq!(header("KC-API-KEY-VERSION"), Some("2"));
    // The public top 100 says its depth; the whole book none.
    let public = Kucoin.snapshot_url("https://api.kucoin.com", "BTC-USDT", 1000);
    assert_eq!(Kucoin.asked_levels(&public), Some(100));
    assert_eq!(Kucoin.asked_levels(&url), None);
}
