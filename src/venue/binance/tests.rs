use super::*;
use super::decode::{DiffEvent, PartialDepth, decode_frame, decode_usual_layout, read_usual_diff_event, read_usual_partial_depth};
use super::sequence::UpdateIdRanges;
use crate::fixed::FixedPoint;
use crate::book::diff_sync::test_events::{event, snapshot};
use crate::book::diff_sync::{BookSync, SnapshotOutcome, UpdateOutcome};

fn fp(text: &str) -> FixedPoint {
    text.parse().unwrap()
}

const RECORDED: &[u8] =
    include_bytes!("../../../tests/fixtures/binance/partial_depth20_BTCUSDT_combined.json");

#[test]
fn update_id_ranges_follow_the_official_algorithm() {
    let mut sync = BookSync::new(&UpdateIdRanges, 100, 100);
    assert_eq!(
        sync.on_update(&event(8, 10, 1, 1)),
        UpdateOutcome::Buffered { first: true }
    );
    assert_eq!(
        sync.on_update(&event(11, 12, 2, 1)),
        UpdateOutcome::Buffered { first: false }
    );
    assert_eq!(sync.on_update(&event(11, 12, 2, 1)), UpdateOutcome::Stale);
    assert_eq!(sync.on_snapshot(&snapshot(6)), SnapshotOutcome::TooOld);
    assert!(!sync.is_synced());
    assert_eq!(
        sync.on_snapshot(&snapshot(10)),
        SnapshotOutcome::Synced {
            applied: 1,
            dropped: 1
        }
    );
    assert_eq!(sync.last_id(), 12);
    assert_eq!(sync.on_update(&event(13, 13, 3, 1)), UpdateOutcome::Applied);
    assert_eq!(sync.on_update(&event(12, 13, 3, 1)), UpdateOutcome::Stale);
    assert_eq!(sync.on_update(&event(15, 16, 4, 1)), UpdateOutcome::Gap);
    assert!(!sync.is_synced());
    assert!(sync.book.is_empty(), "a book with a hole is thrown away");
    assert_eq!(
        sync.buffered(),
        1,
        "the event after the gap starts the buffer"
    );
    assert_eq!(
        sync.on_snapshot(&snapshot(15)),
        SnapshotOutcome::Synced {
            applied: 1,
            dropped: 0
        }
    );
    assert_eq!(sync.on_snapshot(&snapshot(16)), SnapshotOutcome::Unexpected);
}

/// A snapshot at `lastUpdateId = U - 1` of the first buffered event is joined, though
/// Binance's correction of 2025-11-12 words "below `U`" as too old: it holds every update
/// up to `U - 1`, and the event holds `U` onwards, so nothing lies between them. The book
/// is the one a later snapshot would give; `U - 2` is refused (update `U - 1` is in
/// neither).
#[test]
fn a_snapshot_just_below_the_first_event_is_joined_and_loses_nothing() {
    let mut joined = BookSync::new(&UpdateIdRanges, 100, 100);
    joined.on_update(&event(100, 105, 7, 1));
    assert_eq!(
        joined.on_snapshot(&snapshot(99)),
        SnapshotOutcome::Synced {
            applied: 1,
            dropped: 0
        }
    );
    let mut later = BookSync::new(&UpdateIdRanges, 100, 100);
    later.on_update(&event(100, 105, 7, 1));
    later.on_update(&event(106, 106, 8, 1));
    joined.on_update(&event(106, 106, 8, 1));
    let mut after_both = snapshot(106);
    after_both.bids = [event(100, 105, 7, 1), event(106, 106, 8, 1)]
        .iter()
        .flat_map(|event| event.bids.clone())
        .collect();
    after_both.bids.extend(snapshot(99).bids);
    after_both.bids.sort_by_key(|level| std::cmp::Reverse(level.price));
    later.on_snapshot(&after_both);
    let levels = |sync: &BookSync, side| sync.book.levels(side).copied().collect::<Vec<_>>();
    for side in [crate::book::Side::Bid, crate::book::Side::Ask] {
        assert_eq!(levels(&joined, side), levels(&later, side));
    }
    assert_eq!(levels(&joined, crate::book::Side::Bid).len(), 2);
    let mut refused = BookSync::new(&UpdateIdRanges, 100, 100);
    refused.on_update(&event(100, 105, 7, 1));
    assert_eq!(refused.on_snapshot(&snapshot(98)), SnapshotOutcome::TooOld);
}

#[test]
fn a_broken_buffer_restarts_at_the_event_after_the_hole() {
    let mut sync = BookSync::new(&UpdateIdRanges, 100, 100);
    sync.on_update(&event(1, 2, 1, 1));
    sync.on_update(&event(5, 6, 2, 1));
    assert_eq!(sync.buffered(), 1);
    assert_eq!(sync.on_snapshot(&snapshot(2)), SnapshotOutcome::TooOld);
    assert!(matches!(
        sync.on_snapshot(&snapshot(4)),
        SnapshotOutcome::Synced { applied: 1, .. }
    ));
}

/// The recorded frame as a combined stream sends it and as a raw stream would (its
/// `data` alone).
fn recorded_layouts() -> [Vec<u8>; 2] {
    let recorded = std::str::from_utf8(RECORDED).unwrap().trim_end();
    let data = &recorded[recorded.find(r#"{"lastUpdateId""#).unwrap()..recorded.len() - 1];
    [recorded.into(), data.into()]
}

/// A frame's two readings, by the layout fast path and by the general walk, each with
/// what it wrote.
type BothReadings<'a, Out> = (
    (Option<Message<'a>>, Out),
    (Result<Message<'a>, DecodeError>, Out),
);

/// `frame` read as a partial depth push (keeping 10 levels) both ways.
fn partial_depth_both_ways(frame: &[u8]) -> BothReadings<'_, TopBook> {
    let (mut fast, mut general) = (TopBook::default(), TopBook::default());
    let fast_message = decode_usual_layout(frame, |walker| {
        read_usual_partial_depth(walker, 10, &mut fast)
    });
    let general_message = decode_frame(
        frame,
        PartialDepth {
            depth: 10,
            out: &mut general,
        },
    );
    ((fast_message, fast), (general_message, general))
}

/// `frame` read as a diff event both ways.
fn diff_event_both_ways(frame: &[u8]) -> BothReadings<'_, BookUpdate> {
    let (mut fast, mut general) = (BookUpdate::default(), BookUpdate::default());
    let fast_message = decode_usual_layout(frame, |walker| {
        read_usual_diff_event(walker, 1000, &mut fast)
    });
    let general_message = decode_frame(
        frame,
        DiffEvent {
            max_levels: 1000,
            out: &mut general,
            time_key: b"E",
        },
    );
    ((fast_message, fast), (general_message, general))
}

/// Whether the fast path accepted the frame; if it did, the general walk must have read
/// the same message and written the same.
fn fast_path_agrees<Out: PartialEq + std::fmt::Debug>(
    ((fast_message, fast), (general_message, general)): BothReadings<'_, Out>,
) -> Result<bool, proptest::test_runner::TestCaseError> {
    let Some(message) = fast_message else {
        return Ok(false);
    };
    proptest::prop_assert_eq!(general_message, Ok(message));
    proptest::prop_assert_eq!(fast, general);
    Ok(true)
}

#[test]
fn recorded_frames_take_the_layout_fast_path() {
    for frame in recorded_layouts() {
        assert!(fast_path_agrees(partial_depth_both_ways(&frame)).unwrap());
    }
}

const RECORDED_DIFFS: [&str; 2] = [
    include_str!("../../../tests/fixtures/binance/diff_depth_NKNUSDT_combined_stream.jsonl"),
    include_str!("../../../tests/fixtures/binance/diff_depth_LRCBTC_combined_stream.jsonl"),
];

/// A recorded diff event with levels on both sides, as the combined stream sent it and
/// as a raw stream would (its `data` alone).
fn recorded_diff_layouts() -> [Vec<u8>; 2] {
    let recorded = RECORDED_DIFFS[0]
        .lines()
        .find(|line| !line.contains(r#""b":[]"#) && !line.contains(r#""a":[]"#))
        .unwrap();
    let data = &recorded[recorded.find(r#"{"e""#).unwrap()..recorded.len() - 1];
    [recorded.into(), data.into()]
}

#[test]
fn recorded_diff_events_take_the_layout_fast_path() {
    let frames = RECORDED_DIFFS
        .iter()
        .flat_map(|recording| recording.lines());
    let raw = recorded_diff_layouts()[1].clone();
    for frame in frames.chain([std::str::from_utf8(&raw).unwrap()]) {
        let readings = diff_event_both_ways(frame.as_bytes());
        assert!(fast_path_agrees(readings).unwrap(), "{frame}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]

    /// As below, for diff events: whatever the diff layout fast path accepts, the
    /// general walk reads the same way, on a recorded event with one edit.
    #[test]
    fn diff_layout_fast_path_agrees_with_the_general_walk(
        raw in proptest::bool::ANY,
        edit in crate::venue::layout_edits::edit(),
    ) {
        let [combined, data] = recorded_diff_layouts();
        let mut frame = if raw { data } else { combined };
        crate::venue::layout_edits::apply(&mut frame, edit);
        fast_path_agrees(diff_event_both_ways(&frame))?;
    }

    /// Whatever the layout fast path accepts, the general walk reads the same way: the
    /// same message and book. Frames: the recorded one, combined or raw, with one edit,
    /// mostly where the layouts' literals and values are (the first and last 80 bytes,
    /// around "asks").
    #[test]
    fn layout_fast_path_agrees_with_the_general_walk(
        raw in proptest::bool::ANY,
        edit in crate::venue::layout_edits::edit(),
    ) {
        let [combined, data] = recorded_layouts();
        let mut frame = if raw { data } else { combined };
        crate::venue::layout_edits::apply(&mut frame, edit);
        fast_path_agrees(partial_depth_both_ways(&frame))?;
    }
}

#[test]
fn decodes_the_recorded_combined_frame() {
    let mut book = TopBook::default();
    let message = Binance::decode(RECORDED, 10, &mut book).unwrap();
    assert_eq!(
        message,
        Message::Book {
            stream: b"btcusdt@depth20@100ms"
        }
    );
    assert_eq!(book.venue_sequence, 11_655_824_136);
    assert_eq!(book.bids.len(), 10);
    assert_eq!(book.asks.len(), 10);
    assert_eq!(book.bids.as_slice()[0].price, fp("35496.06"));
    assert_eq!(book.bids.as_slice()[0].amount, fp("0.298593"));
    assert_eq!(book.bids.as_slice()[9].price, fp("35487.70"));
    assert_eq!(book.asks.as_slice()[0].price, fp("35496.07"));
    assert_eq!(book.asks.as_slice()[9].price, fp("35500.15"));
    assert!(!book.is_crossed());
}

#[test]
fn decodes_the_raw_payload_and_control_frames() {
    let mut book = TopBook::default();
    let raw = br#"{"lastUpdateId":160,"bids":[["0.0024","10"]],"asks":[["0.0026","100"]]}"#;
    assert_eq!(
        Binance::decode(raw, 10, &mut book),
        Ok(Message::Book { stream: b"" })
    );
    assert_eq!(book.bids.as_slice()[0].amount, fp("10"));

    let cases: &[(&[u8], Message)] = &[
        (
            br#"{"result":null,"id":7}"#,
            Message::SubscribeResult {
                accepted: true,
                acked: Acked::Request(7),
            },
        ),
        (
            br#"{"code":2,"msg":"Invalid request","id":1}"#,
            Message::SubscribeResult {
                accepted: false,
                acked: Acked::Request(1),
            },
        ),
        (
            br#"{"result":null}"#,
            Message::SubscribeResult {
                accepted: true,
                acked: Acked::Oldest,
            },
        ),
        (
            br#"{"e":"serverShutdown","E":1770123456789}"#,
            Message::Reconnect,
        ),
        (
            br#"{"stream":"!serverShutdown","data":{"e":"serverShutdown","E":1770123456789}}"#,
            Message::Reconnect,
        ),
        (br#"{"e":"aggTrade","E":1,"p":"1.0"}"#, Message::Ignored),
    ];
    for &(frame, expected) in cases {
        assert_eq!(
            Binance::decode(frame, 10, &mut book),
            Ok(expected),
            "{}",
            String::from_utf8_lossy(frame)
        );
    }
}

#[test]
fn encoding_reproduces_the_recorded_frame() {
    let mut book = TopBook::default();
    Binance::decode(RECORDED, crate::book::MAX_DEPTH, &mut book).unwrap();
    let mut encoded = Vec::new();
    Binance.encode_book("btcusdt@depth20@100ms", &book, 8, &mut encoded);
    assert_eq!(
        String::from_utf8(encoded).unwrap(),
        std::str::from_utf8(RECORDED).unwrap().trim_end()
    );
}

#[test]
fn stream_names_pick_the_smallest_covering_depth() {
    assert_eq!(Binance.stream_name("ETHBTC", 10), "ethbtc@depth10@100ms");
    assert_eq!(Binance.stream_name("ETHBTC", 11), "ethbtc@depth20@100ms");
    assert_eq!(Binance.stream_name("ETHBTC", 50), "ethbtc@depth20@100ms");
}

#[test]
fn subscription_round_trip_matches_the_documented_frames() {
    let requests = Binance.subscribe_frames(&["ethbtc@depth10@100ms".to_owned()], StreamKind::Snapshots, 10, 3);
    assert_eq!(
        requests,
        [SubscribeRequest {
            frame: r#"{"id":3,"method":"SUBSCRIBE","params":["ethbtc@depth10@100ms"]}"#
                .to_owned(),
            id: Some(3),
            streams: 0..1,
        }]
    );
    let answer = Binance.answer_request(&requests[0].frame).unwrap();
    assert_eq!(answer.subscribe, ["ethbtc@depth10@100ms"]);
    let mut book = TopBook::default();
    assert_eq!(
        Binance::decode(answer.replies[0].as_bytes(), 10, &mut book),
        Ok(Message::SubscribeResult {
            accepted: true,
            acked: Acked::Request(3)
        })
    );
    let unsubscribe = Binance.unsubscribe_frames(&["ethbtc@depth10@100ms".to_owned()], StreamKind::Snapshots, 10);
    assert_eq!(
        unsubscribe,
        [r#"{"id":0,"method":"UNSUBSCRIBE","params":["ethbtc@depth10@100ms"]}"#]
    );
    let answer = Binance.answer_request(&unsubscribe[0]).unwrap();
    assert_eq!(answer.unsubscribe, ["ethbtc@depth10@100ms"]);
    assert_eq!(
        Binance::decode(
            Binance.reconnect_request().unwrap().as_bytes(),
            10,
            &mut book
        ),
        Ok(Message::Reconnect)
    );
}
