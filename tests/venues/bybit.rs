//! Bybit: every recording replays to the book a slow reference (serde_json and a sorted map,
//! the documented algorithm) keeps; the decoder refuses every truncation and malformed
//! frame with a typed error and decodes generated frames of any layout; against the
//! simulator, the venue syncs from its in-band snapshot and each injected fault ends in a
//! clean resync.

use crate::common;
use crate::conformance::{self, Row};
use crate::generated::{object, pair_side};

use common::in_band::{self, Harness, Sides};
use mergebook::book::{BookUpdate, Level, Side};
use mergebook::fixed::{FixedPoint, FixedPointError};
use mergebook::merger::summary::VenueState;
use mergebook::venue::{DecodeError, Message, VenueId};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::time::Duration;

const BYBIT: VenueId = VenueId::Bybit;

const RECORDINGS: [(&str, usize); 7] = [
    ("docs_example_control_messages.jsonl", 50),
    ("docs_example_orderbook50_snapshot_and_delta.jsonl", 50),
    (
        "linear_orderbook50_BTCUSDT_snapshot_delta_2026-08-12.jsonl",
        50,
    ),
    ("linear_subscribe_ack_2026-03.json", 50),
    (
        "spot_orderbook1_BTCUSDT_ack_then_snapshots_2026-08-12.jsonl",
        1,
    ),
    (
        "spot_orderbook1_BTCUSDT_ack_then_snapshots_2026-08-13.jsonl",
        1,
    ),
    (
        "spot_orderbook50_BTCUSDT_snapshot_delta_2024-11-08.jsonl",
        50,
    ),
];

/// A recording's frames that the venue sent (the docs' examples include the client's
/// requests: an `op` without `success`).
fn venue_frames(name: &str) -> Vec<String> {
    let sent_by_the_client = |frame: &String| {
        let message: serde_json::Value = serde_json::from_str(frame).unwrap();
        let op = message.get("op").and_then(|op| op.as_str());
        message.get("success").is_none() && matches!(op, Some("subscribe" | "unsubscribe" | "ping"))
    };
    let mut frames = in_band::frames(BYBIT, name);
    frames.retain(|frame| !sent_by_the_client(frame));
    frames
}

// ---- the reference: serde_json and a sorted map, as docs/protocols.md describes the book ----

#[derive(Default)]
struct ReferenceBook {
    bids: BTreeMap<FixedPoint, FixedPoint>,
    asks: BTreeMap<FixedPoint, FixedPoint>,
    /// The last message's `u` while in sync; `None` after a gap, until a snapshot.
    last_u: Option<u64>,
}

impl ReferenceBook {
    /// Applies one message: a snapshot (or `u == 1`) replaces, a delta applies (size 0
    /// deletes) if its `u` follows the last, else the book is out of sync until the next
    /// snapshot; each side is kept at the topic's depth. Returns whether the message was
    /// a book's.
    fn apply(&mut self, frame: &str, depth: usize) -> bool {
        let message: serde_json::Value = serde_json::from_str(frame).unwrap();
        let Some(topic) = message.get("topic").and_then(|t| t.as_str()) else {
            return false;
        };
        assert!(topic.starts_with("orderbook."));
        let data = &message["data"];
        let u = data["u"].as_u64().unwrap();
        if message["type"] == "snapshot" || u == 1 {
            *self = ReferenceBook::default();
        } else if self.last_u != Some(u - 1) {
            self.last_u = None;
            return true;
        }
        self.last_u = Some(u);
        for (name, side) in [("b", &mut self.bids), ("a", &mut self.asks)] {
            for level in data[name].as_array().unwrap() {
                let price: FixedPoint = level[0].as_str().unwrap().parse().unwrap();
                let size: FixedPoint = level[1].as_str().unwrap().parse().unwrap();
                if size.is_zero() {
                    assert!(
                        side.remove(&price).is_some(),
                        "a delete of a level not held"
                    );
                } else {
                    side.insert(price, size);
                }
            }
        }
        while self.bids.len() > depth {
            self.bids.pop_first();
        }
        while self.asks.len() > depth {
            self.asks.pop_last();
        }
        true
    }

    fn top(&self, depth: usize) -> Option<Sides> {
        self.last_u?;
        let level = |(&price, &amount): (&FixedPoint, &FixedPoint)| Level { price, amount };
        Some((
            self.bids.iter().rev().take(depth).map(level).collect(),
            self.asks.iter().take(depth).map(level).collect(),
        ))
    }
}

#[test]
fn every_recording_replays_to_the_reference_books() {
    let mut books = 0;
    for (name, topic_depth) in RECORDINGS {
        let frames = venue_frames(name);
        let mut reference = ReferenceBook::default();
        let mut expected = Vec::new();
        for frame in &frames {
            if reference.apply(frame, topic_depth) {
                expected.push(reference.top(topic_depth));
                books += 1;
            }
        }
        let (published, stats) = in_band::replay(BYBIT, &frames, topic_depth, topic_depth);
        assert_eq!(published, expected, "{name}");
        assert_eq!(stats.decode_errors, 0, "{name}");
    }
    assert_eq!(books, 10);
}

/// The books SOURCES.md gives after each real snapshot and delta.
#[test]
fn each_snapshot_and_delta_ends_on_the_book_sources_md_gives() {
    let best = |name: &str| {
        let frames = in_band::frames(BYBIT, name);
        let (published, _) = in_band::replay(BYBIT, &frames, 50, 50);
        let (bids, asks) = published.last().unwrap().clone().unwrap();
        assert_eq!((bids.len(), asks.len()), (50, 50), "{name}: 50/50 levels");
        (bids, asks[0])
    };
    let level = |price: &str, amount: &str| Level {
        price: price.parse().unwrap(),
        amount: amount.parse().unwrap(),
    };
    let (bids, ask) = best("linear_orderbook50_BTCUSDT_snapshot_delta_2026-08-12.jsonl");
    assert_eq!(bids[0], level("63982.70", "6.408"));
    assert_eq!(ask, level("63982.80", "5.015"));
    // The delta's changes: 63982.50 → 0.003, 63980.60 → 0.004.
    assert!(bids.contains(&level("63982.50", "0.003")));
    assert!(bids.contains(&level("63980.60", "0.004")));
    let (bids, ask) = best("spot_orderbook50_BTCUSDT_snapshot_delta_2024-11-08.jsonl");
    let prices = (bids[0].price, ask.price);
    let expected = ("75848.74".parse().unwrap(), "75848.75".parse().unwrap());
    assert_eq!(prices, expected);
}

/// A delta whose `u` does not follow takes the book out of sync (and, live, resubscribes
/// the topic); `u == 1` is the venue restarting the topic: a new book.
#[test]
fn a_gap_is_out_of_sync_and_a_restart_is_a_new_book() {
    let recording = "linear_orderbook50_BTCUSDT_snapshot_delta_2026-08-12.jsonl";
    let mut frames = in_band::frames(BYBIT, recording);
    frames[1] = frames[1].replace(r#""u":53935310"#, r#""u":53935312"#);
    let (published, stats) = in_band::replay(BYBIT, &frames, 10, 50);
    assert!(published[0].is_some());
    assert_eq!(published.last(), Some(&None), "out of sync after the gap");
    assert_eq!(stats.gaps, 1);
    let restart = r#"{"topic":"orderbook.50.BTCUSDT","type":"delta","ts":1,"data":{"s":"BTCUSDT","b":[["1.5","2"]],"a":[["1.6","3"]],"u":1,"seq":1},"cts":1}"#;
    frames.push(restart.to_owned());
    let (published, _) = in_band::replay(BYBIT, &frames, 10, 50);
    let (bids, asks) = published.last().unwrap().clone().expect("synced again");
    assert_eq!((bids.len(), asks.len()), (1, 1));
    assert_eq!(bids[0].price, "1.5".parse().unwrap());
}

// ---- the decoder on bad input ----

fn decode(frame: &[u8]) -> (Result<Message<'_>, DecodeError>, BookUpdate) {
    let mut update = BookUpdate::default();
    let message = BYBIT.decode_diff(frame, 5000, &mut update);
    (message, update)
}

/// Its row in the venue conformance tests.
pub fn row() -> Row {
    conformance::diff_row(BYBIT, recorded_frames(), malformed_frames())
}

/// The frames of its conformance row: every recorded one.
fn recorded_frames() -> Vec<String> {
    let mut recorded = Vec::new();
    for (name, _) in RECORDINGS {
        for frame in venue_frames(name) {
            recorded.push(frame.to_string());
        }
    }
    recorded
}

/// The malformed frames of its conformance row.
fn malformed_frames() -> Vec<(String, DecodeError)> {
    let book = |data: &str| {
        format!(r#"{{"topic":"orderbook.50.BTCUSDT","type":"delta","ts":1,"data":{{{data}}}}}"#)
    };
    let number = |error| DecodeError::Number { at: 0, error };
    let cases: Vec<(String, DecodeError)> = vec![
        (book(r#""s":"BTCUSDT","b":[],"u":2"#), DecodeError::MissingKey("a")),
        (book(r#""s":"BTCUSDT","b":[],"a":[],"b":[],"u":2"#), DecodeError::DuplicateKey("b")),
        (book(r#""s":"BTCUSDT","b":[["1.5"]],"a":[],"u":2"#), DecodeError::Unexpected { at: 0, expected: "','" }),
        (book(r#""s":"BTCUSDT","b":[["x","1"]],"a":[],"u":2"#), number(FixedPointError::InvalidCharacter)),
        (book(r#""s":"BTCUSDT","b":[["1.123456789","1"]],"a":[],"u":2"#), number(FixedPointError::TooPrecise)),
        (book(r#""s":"BTCUSDT","b":[["1e3","1"]],"a":[],"u":2"#), number(FixedPointError::Exponent)),
        (book(r#""s":"BTCUSDT","b":{},"a":[],"u":2"#), DecodeError::Unexpected { at: 0, expected: "'['" }),
        (book(r#""s":"BTCUSDT","b":[],"a":[],"u":-2"#), DecodeError::Unexpected { at: 0, expected: "a digit" }),
        (r#"{"topic":"orderbook.50.BTCUSDT","type":"update","data":{"s":"BTCUSDT","b":[],"a":[],"u":2}}"#.to_owned(), DecodeError::Invalid("a book message's type")),
        (r#"{"topic":"orderbook.50.BTCUSDT","type":"snapshot","data":{"s":"BTCUSDT","b":[["1","1"],["2","1"]],"a":[],"u":2}}"#.to_owned(), DecodeError::Unsorted(Side::Bid)),
        (r#"{"topic":"orderbook.50.BTCUSDT","type":"snapshot","data":{"s":"BTCUSDT","b":[],"a":[["2","1"],["2","1"]],"u":2}}"#.to_owned(), DecodeError::Unsorted(Side::Ask)),
        (r#"{"topic":"orderbook.50.BTCUSDT","type":"delta","data":[]}"#.to_owned(), DecodeError::MissingKey("data")),
        (r#"[{"topic":"orderbook.50.BTCUSDT"}]"#.to_owned(), DecodeError::Unexpected { at: 0, expected: "'{'" }),
        (format!("{} x", book(r#""s":"BTCUSDT","b":[],"a":[],"u":2"#)), DecodeError::TrailingBytes { at: 0 }),
    ];
    cases
}

// ---- generated frames against the levels they were made of ----

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn generated_frames_decode_to_the_levels_they_hold(
        bids in proptest::collection::btree_map(1u64..1u64 << 50, 0u64..1u64 << 50, 0..40),
        asks in proptest::collection::btree_map(1u64..1u64 << 50, 0u64..1u64 << 50, 0..40),
        snapshot in any::<bool>(),
        update_id in 2u64..u64::MAX,
        seed in any::<u64>(),
        spaced in any::<bool>(),
    ) {
        let bids: Vec<(u64, u64)> = bids.into_iter().rev().collect();
        let asks: Vec<(u64, u64)> = asks.into_iter().collect();
        let mut data = vec![
            r#""s":"BTCUSDT""#.to_owned(),
            format!(r#""b":{}"#, pair_side(&bids, spaced)),
            format!(r#""a":{}"#, pair_side(&asks, spaced)),
            format!(r#""u":{update_id}"#),
            r#""seq":760578520138"#.to_owned(),
        ];
        let kind = if snapshot { "snapshot" } else { "delta" };
        let mut members = vec![
            r#""topic":"orderbook.50.BTCUSDT""#.to_owned(),
            format!(r#""type":"{kind}""#),
            r#""ts":1786540345129"#.to_owned(),
            r#""cts":1786540345127"#.to_owned(),
            format!(r#""data":{}"#, object(&mut data, seed, spaced)),
        ];
        let frame = object(&mut members, seed.rotate_left(7), spaced);
        let (message, update) = decode(frame.as_bytes());
        prop_assert_eq!(message, Ok(Message::Book { stream: b"BTCUSDT" }), "{}", frame);
        let levels = |side: &[(u64, u64)]| -> Vec<Level> {
            side.iter().map(|&(p, q)| Level { price: FixedPoint::from_raw(p), amount: FixedPoint::from_raw(q) }).collect()
        };
        prop_assert_eq!(&update.bids, &levels(&bids));
        prop_assert_eq!(&update.asks, &levels(&asks));
        prop_assert_eq!((update.is_snapshot, update.last_id), (snapshot, update_id));
    }
}

// ---- against the simulator ----

const SYMBOL: &str = "BTCUSDT";
/// A second symbol, on the linear market: a connection of its own (instrument 1).
const OTHER_SYMBOL: &str = "linear:ETHUSDT";

const GAPS: &str = r#"orderbook_resyncs_total{exchange="bybit",reason="gap"}"#;
const RESUBSCRIPTIONS: &str =
    r#"orderbook_snapshot_requests_total{exchange="bybit",outcome="used"}"#;

async fn start() -> Harness {
    Harness::start(BYBIT, SYMBOL, OTHER_SYMBOL).await
}

/// Both markets synced, on two connections (spot and linear), every book true.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bybit_syncs_both_markets_from_their_snapshots_and_every_book_is_true() {
    let harness = start().await;
    harness.synced().await;
    let mut other = harness.service.summaries(1);
    tokio::time::timeout(
        in_band::WAIT,
        other.wait_for(|s| s.venue_state(BYBIT) == VenueState::Synced),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(harness.simulator.connections(BYBIT), 2, "one per market");
    let checked = harness
        .books_stay_true_for(Duration::from_millis(1500))
        .await;
    assert!(checked > 10, "only {checked} books");
    assert_eq!(harness.metric(GAPS), 0.0);
    // Application pings (every 100 ms here, Bybit's 20 s by default) reach the venue on
    // both connections, and its pongs are no bad frames.
    assert!(harness.simulator.client_pings(BYBIT) >= 10);
    let decode_errors = r#"orderbook_decode_errors_total{exchange="bybit"}"#;
    assert_eq!(harness.metric(decode_errors), 0.0);
    harness.service.stop().await;
}

/// A lost delta is a gap: that topic resubscribed, synced again from its new snapshot;
/// a duplicate is dropped as already applied; swapped deltas are a gap, never a wrong book.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gaps_resubscribe_duplicates_are_dropped_and_no_wrong_book_is_published() {
    let harness = start().await;
    harness.synced().await;
    let resubscriptions = harness.metric(RESUBSCRIPTIONS);
    harness.simulator.duplicate_events(BYBIT, 5);
    let checked = harness
        .books_stay_true_for(Duration::from_millis(600))
        .await;
    assert!(checked > 0);
    assert_eq!(harness.metric(GAPS), 0.0, "duplicates are no gap");
    harness.simulator.skip_events(BYBIT, 1);
    harness.counted(GAPS, 1.0).await;
    harness
        .counted(RESUBSCRIPTIONS, resubscriptions + 1.0)
        .await;
    harness.synced().await;
    harness
        .books_stay_true_for(Duration::from_millis(500))
        .await;
    let gaps = harness.metric(GAPS);
    harness.simulator.swap_events(BYBIT, 2);
    harness.counted(GAPS, gaps + 1.0).await;
    harness
        .books_stay_true_for(Duration::from_millis(600))
        .await;
    harness.synced().await;
    harness.service.stop().await;
}

/// A frame that does not decode may have been any symbol's: every book of the connection
/// is out of sync, and (Bybit sending no snapshot by itself) subscribed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_frame_resubscribes_and_the_book_syncs_again() {
    let harness = start().await;
    harness.synced().await;
    let resubscriptions = harness.metric(RESUBSCRIPTIONS);
    harness.simulator.send_raw(BYBIT, "\u{1}garbage");
    harness
        .wait_for("out of sync", |s| {
            s.venue_state(BYBIT) == VenueState::OutOfSync
        })
        .await;
    harness
        .counted(RESUBSCRIPTIONS, resubscriptions + 1.0)
        .await;
    harness.synced().await;
    harness
        .books_stay_true_for(Duration::from_millis(300))
        .await;
    harness.service.stop().await;
}
