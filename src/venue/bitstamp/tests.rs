use super::*;
use super::decode::{AllLevels, TopN, decode_any_layout, decode_usual_layout};
use super::sequence::Microtimestamps;
use crate::fixed::FixedPoint;
use crate::book::diff_sync::test_events::{event, snapshot};
use crate::book::diff_sync::{BookSync, SnapshotOutcome, UpdateOutcome};

const SAMPLES: &str =
    include_str!("../../../tests/fixtures/bitstamp/order_book_btcusd_top100_samples_2020.jsonl");
const CONTROL: &str = include_str!("../../../tests/fixtures/bitstamp/control_messages.jsonl");

#[test]
fn microtimestamps_drop_what_the_snapshot_contains() {
    let mut sync = BookSync::new(&Microtimestamps, 100, 100);
    sync.on_update(&event(100, 100, 1, 1));
    sync.on_update(&event(200, 200, 2, 1));
    assert_eq!(sync.on_update(&event(200, 200, 2, 1)), UpdateOutcome::Stale);
    assert_eq!(sync.buffered(), 2);
    let mut reordered = BookSync::new(&Microtimestamps, 100, 100);
    reordered.on_update(&event(200, 200, 2, 1));
    reordered.on_update(&event(100, 100, 1, 1));
    assert_eq!(reordered.buffered(), 0, "out of order: start again");
    assert_eq!(sync.on_snapshot(&snapshot(99)), SnapshotOutcome::TooOld);
    assert_eq!(
        sync.on_snapshot(&snapshot(100)),
        SnapshotOutcome::Synced {
            applied: 1,
            dropped: 1
        }
    );
    assert_eq!(sync.on_update(&event(200, 200, 3, 1)), UpdateOutcome::Stale);
    assert_eq!(
        sync.on_update(&event(900, 900, 3, 1)),
        UpdateOutcome::Applied,
        "timestamps cannot show lost events"
    );
    assert_eq!(
        sync.on_update(&event(800, 800, 3, 1)),
        UpdateOutcome::Gap,
        "an event older than the last applied arrived out of order"
    );
}

fn fp(text: &str) -> FixedPoint {
    text.parse().unwrap()
}

const DIFFS: &str = include_str!("../../../tests/fixtures/bitstamp/diff_order_book_ethusd.jsonl");

/// A diff frame's sink: every level (up to 1,000 a side), in frame order.
fn all_levels(out: &mut BookUpdate) -> AllLevels<'_> {
    AllLevels {
        sorted: false,
        max_levels: 1000,
        out,
    }
}

/// The layout fast path reads every recorded book frame (both layouts) and diff.
#[test]
fn recorded_frames_take_the_layout_fast_path() {
    for line in SAMPLES.lines() {
        let mut sink = TopN {
            depth: 10,
            out: &mut TopBook::default(),
        };
        let message = decode_usual_layout(line.as_bytes(), ORDER_BOOK_PREFIX, &mut sink);
        assert!(matches!(message, Some(Message::Book { .. })), "{line:.60}");
    }
    for line in DIFFS.lines().skip(1) {
        let mut update = BookUpdate::default();
        let message = decode_usual_layout(
            line.as_bytes(),
            DIFF_ORDER_BOOK_PREFIX,
            &mut all_levels(&mut update),
        );
        assert!(matches!(message, Some(Message::Book { .. })), "{line:.60}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]

    /// Whatever the layout fast path accepts, the general walk reads the same way: the
    /// same message and book. Frames: the recorded ones with one edit, mostly where the
    /// layouts' literals and values are (the first and last 80 bytes, around "asks").
    #[test]
    fn layout_fast_path_agrees_with_the_general_walk(
        sample in 0usize..2,
        edit in crate::venue::layout_edits::edit(),
    ) {
        let mut frame = SAMPLES.lines().nth(sample).unwrap().as_bytes().to_vec();
        crate::venue::layout_edits::apply(&mut frame, edit);
        let (mut fast, mut general) = (TopBook::default(), TopBook::default());
        let fast_message = decode_usual_layout(
            &frame,
            ORDER_BOOK_PREFIX,
            &mut TopN { depth: 10, out: &mut fast },
        );
        let general_message = decode_any_layout(
            &frame,
            ORDER_BOOK_PREFIX,
            &mut TopN { depth: 10, out: &mut general },
        );
        if let Some(message) = fast_message {
            proptest::prop_assert_eq!(general_message, Ok(message));
            proptest::prop_assert_eq!(fast, general);
        }
    }

    /// The same for diff frames, which the fast path reads into every level.
    #[test]
    fn layout_fast_path_agrees_with_the_general_walk_on_diffs(
        sample in 1..DIFFS.lines().count(),
        edit in crate::venue::layout_edits::edit(),
    ) {
        let mut frame = DIFFS.lines().nth(sample).unwrap().as_bytes().to_vec();
        crate::venue::layout_edits::apply(&mut frame, edit);
        let (mut fast, mut general) = (BookUpdate::default(), BookUpdate::default());
        let fast_message =
            decode_usual_layout(&frame, DIFF_ORDER_BOOK_PREFIX, &mut all_levels(&mut fast));
        let general_message =
            decode_any_layout(&frame, DIFF_ORDER_BOOK_PREFIX, &mut all_levels(&mut general));
        if let Some(message) = fast_message {
            proptest::prop_assert_eq!(general_message, Ok(message));
            proptest::prop_assert_eq!(fast, general);
        }
    }
}

#[test]
fn decodes_both_recorded_layouts() {
    // Sample 1 has spaces and `data` first; sample 2 is compact with `channel` second.
    let expected = [
        (1_580_336_834_607_546, "9328.28", "9337.10"),
        (0, "19133.97", "19141.75"),
    ];
    for (line, (sequence, best_bid, best_ask)) in SAMPLES.lines().zip(expected) {
        let mut book = TopBook::default();
        let message = Bitstamp::decode(line.as_bytes(), 10, &mut book).unwrap();
        assert_eq!(
            message,
            Message::Book {
                stream: b"order_book_btcusd"
            }
        );
        if sequence != 0 {
            assert_eq!(book.venue_sequence, sequence);
        }
        assert_eq!((book.bids.len(), book.asks.len()), (10, 10));
        assert_eq!(book.bids.best().unwrap().price, fp(best_bid));
        assert_eq!(book.asks.best().unwrap().price, fp(best_ask));
        assert!(!book.is_crossed());
    }
}

#[test]
fn keeps_all_hundred_levels_and_never_more_than_max_depth() {
    let line = SAMPLES.lines().next().unwrap();
    for (depth, kept) in [
        (100, 100),
        (crate::book::MAX_DEPTH + 1, crate::book::MAX_DEPTH),
    ] {
        let mut book = TopBook::default();
        Bitstamp::decode(line.as_bytes(), depth, &mut book).unwrap();
        assert_eq!((book.bids.len(), book.asks.len()), (kept, kept));
    }
}

#[test]
fn encoding_reproduces_the_recorded_frame() {
    let line = SAMPLES.lines().next().unwrap();
    let mut book = TopBook::default();
    Bitstamp::decode(line.as_bytes(), 100, &mut book).unwrap();
    let mut encoded = Vec::new();
    Bitstamp.encode_book("order_book_btcusd", &book, 2, &mut encoded);
    assert_eq!(String::from_utf8(encoded).unwrap(), line);
}

#[test]
fn subscription_round_trip_matches_the_recorded_frames() {
    let requests = Bitstamp.subscribe_frames(&["order_book_ethbtc".to_owned()], StreamKind::Snapshots, 10, 1);
    assert_eq!(
        requests,
        [SubscribeRequest {
            frame: r#"{"data":{"channel":"order_book_ethbtc"},"event":"bts:subscribe"}"#
                .to_owned(),
            id: None,
            streams: 0..1,
        }]
    );
    let answer = Bitstamp.answer_request(&requests[0].frame).unwrap();
    assert_eq!(answer.subscribe, ["order_book_ethbtc"]);
    let mut book = TopBook::default();
    let ack = Bitstamp::decode(answer.replies[0].as_bytes(), 10, &mut book);
    let acked = Acked::Stream(b"order_book_ethbtc");
    assert_eq!(
        ack,
        Ok(Message::SubscribeResult {
            accepted: true,
            acked
        })
    );
    let unsubscribe = Bitstamp.unsubscribe_frames(&["order_book_ethbtc".to_owned()], StreamKind::Snapshots, 10);
    assert_eq!(
        unsubscribe,
        [r#"{"data":{"channel":"order_book_ethbtc"},"event":"bts:unsubscribe"}"#]
    );
    let answer = Bitstamp.answer_request(&unsubscribe[0]).unwrap();
    assert_eq!(answer.unsubscribe, ["order_book_ethbtc"]);
    let ack = Bitstamp::decode(answer.replies[0].as_bytes(), 10, &mut book);
    assert_eq!(ack, Ok(Message::Ignored), "an unsubscription's ack");
    let reconnect = Bitstamp::decode(
        Bitstamp.reconnect_request().unwrap().as_bytes(),
        10,
        &mut book,
    );
    assert_eq!(reconnect, Ok(Message::Reconnect));
}

#[test]
fn classifies_control_frames() {
    let expected = [
        Message::Ignored, // our own bts:subscribe request echoed back is no server message
        Message::SubscribeResult {
            accepted: true,
            acked: Acked::Stream(b"diff_order_book_ethusd"),
        },
        Message::Reconnect,
        Message::Heartbeat,
        Message::Heartbeat,
    ];
    for (line, expected) in CONTROL.lines().zip(expected) {
        let mut book = TopBook::default();
        assert_eq!(
            Bitstamp::decode(line.as_bytes(), 10, &mut book),
            Ok(expected),
            "{line}"
        );
    }
}
