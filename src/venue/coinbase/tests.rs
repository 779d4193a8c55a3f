use super::*;
use super::decode::{LEVEL, decode_message, decode_usual_layout, usual_level};
use super::sim::write_event;

const RECORDED_SNAPSHOT: &str = include_str!(
    "../../../tests/fixtures/coinbase/advanced_trade_l2_data_snapshot_BTC-PERP-INTX_truncated_2026-09-07.json"
);

/// Frames in the layout Coinbase writes: the recorded snapshot, and the simulator's
/// update and snapshot (its encoder writes that layout).
fn usual_frames() -> Vec<Vec<u8>> {
    let level = |price: &str, amount: &str| Level {
        price: price.parse().unwrap(),
        amount: amount.parse().unwrap(),
    };
    let update = BookUpdate {
        bids: vec![level("79943.9", "2.9105"), level("79943.5", "0")],
        asks: vec![level("79944.1", "1")],
        ..BookUpdate::default()
    };
    let mut frames = vec![RECORDED_SNAPSHOT.trim().as_bytes().to_vec()];
    for snapshot in [false, true] {
        let mut frame = Vec::new();
        let kind = if snapshot { "snapshot" } else { "update" };
        write_event(kind, "BTC-USD", &update.bids, &update.asks, 1, &mut frame);
        let numbered = Coinbase.number_message(std::str::from_utf8(&frame).unwrap(), 7);
        frames.push(numbered.unwrap().into_bytes());
    }
    frames
}

/// Whether the layout fast path read `frame`; what it read is what the general walk
/// reads.
fn fast_path_agrees(frame: &[u8]) -> Result<bool, proptest::test_runner::TestCaseError> {
    let (mut fast, mut general) = (BookUpdate::default(), BookUpdate::default());
    let Some(message) = decode_usual_layout(frame, 1000, &mut fast) else {
        return Ok(false);
    };
    let general_message = decode_message(frame, 1000, &mut general);
    proptest::prop_assert_eq!(general_message, Ok(message));
    proptest::prop_assert_eq!(fast, general);
    Ok(true)
}

#[test]
fn the_usual_layout_takes_the_fast_path() {
    for frame in usual_frames() {
        let text = String::from_utf8_lossy(&frame);
        assert!(fast_path_agrees(&frame).unwrap(), "{text}");
    }
}

proptest::proptest! {
    /// Whatever the layout fast path accepts, the general walk reads the same way: a
    /// frame of the usual layout with one edit, mostly where its literals and values
    /// are.
    #[test]
    fn the_layout_fast_path_agrees_with_the_general_walk(
        which in 0usize..3,
        edit in crate::venue::layout_edits::edit(),
    ) {
        let mut frame = usual_frames()[which].clone();
        crate::venue::layout_edits::apply(&mut frame, edit);
        fast_path_agrees(&frame)?;
    }
}

/// Whether the level fast path read `object` (followed by `rest`); what it read is
/// what the object walk reads, up to the same byte.
fn level_fast_path_agrees(object: &[u8]) -> Result<bool, proptest::test_runner::TestCaseError> {
    let mut fast = Walker::new(object);
    let Some(level) = usual_level(&mut fast) else {
        return Ok(false);
    };
    let mut walked = Walker::new(object);
    proptest::prop_assert_eq!(walked.tagged_level(LEVEL, None), Ok(level));
    proptest::prop_assert_eq!(walked.position(), fast.position());
    Ok(true)
}

const RECORDED_LEVEL: &[u8] = br#"{"side":"offer","event_time":"2026-09-07T01:57:58.894355Z","price_level":"79944.1","new_quantity":"1.2"},"#;

#[test]
fn the_usual_level_layout_takes_the_level_fast_path() {
    let without_time = br#"{"side":"bid","price_level":"79943.9","new_quantity":"3.0105"}]"#;
    for object in [RECORDED_LEVEL, without_time] {
        assert!(level_fast_path_agrees(object).unwrap());
    }
    // Another order, a member after the amount, whitespace: the walk's.
    for object in [
        &br#"{"price_level":"1","side":"bid","new_quantity":"1"}"#[..],
        br#"{"side":"bid","price_level":"1","new_quantity":"1","x":1}"#,
        br#"{"side": "bid","price_level":"1","new_quantity":"1"}"#,
    ] {
        assert!(!level_fast_path_agrees(object).unwrap());
    }
}

proptest::proptest! {
    /// Whatever the level fast path accepts, the object walk reads the same way: the
    /// recorded level with one byte replaced, inserted or removed.
    #[test]
    fn the_level_fast_path_agrees_with_the_object_walk(
        at in 0usize..RECORDED_LEVEL.len(),
        kind in 0usize..3,
        byte in proptest::sample::select(&b" ,:}]{[\"0159.abdfo-"[..]),
    ) {
        let mut object = RECORDED_LEVEL.to_vec();
        match kind {
            0 => object[at] = byte,
            1 => object.insert(at, byte),
            _ => {
                object.remove(at);
            }
        }
        level_fast_path_agrees(&object)?;
    }
}

#[test]
fn products_are_spot_pairs_or_intx_perpetuals() {
    for product in ["BTC-USD", "BTC-PERP-INTX", "I12-BTC"] {
        assert_eq!(Coinbase.check_symbol(product), Ok(()), "{product}");
    }
    for refused in ["btc-usd", "BTCUSD", "BTC-USD-SWAP", "-USD", "BTC-USD-INTX", "BTC--USD"] {
        assert!(Coinbase.check_symbol(refused).is_err(), "{refused}");
    }
}

/// The simulator numbers its messages where the encoders leave the place for it, and
/// the decoder reads the number.
#[test]
fn the_simulator_numbers_the_messages_it_encodes() {
    let frame = String::from_utf8(usual_frames().pop().unwrap()).unwrap();
    let mut out = BookUpdate::default();
    Coinbase::decode_diff(frame.as_bytes(), 10, &mut out).unwrap();
    assert_eq!(out.message_number, Some(7));
    let heartbeat = Coinbase.number_message(&Coinbase.heartbeat(3).unwrap(), 8).unwrap();
    let message = Coinbase::decode_diff(heartbeat.as_bytes(), 10, &mut out);
    assert_eq!((message, out.message_number), (Ok(Message::Heartbeat), Some(8)));
            let heartbeat = Coinbase.number_message(&Coinbase.heartbeat(3).unwrap(), 8).unwrap();
    let message = Coinbase::decode_diff(heartbeat.as_bytes(), 10, &mut out);
    assert_eq!((message, out.message_number), (Ok(Message::Heartbeat), Some(8)));
    let error = r#"{"type":"error","message":"authentication failure"}"#;
    assert_eq!(Coinbase.number_message(error, 8), None);
    let answer = Coinbase.answer_request(r#"{"type":"subscribe","channel":"heartbeats"}"#);
    let ack = Coinbase.number_message(&answer.unwrap().replies[0], 9).unwrap();
    let message = Coinbase::decode_diff(ack.as_bytes(), 10, &mut out);
    assert!(matches!(message, Ok(Message::SubscribeResult { accepted: true, .. })));
    assert_eq!(out.message_number, Some(9));
}
