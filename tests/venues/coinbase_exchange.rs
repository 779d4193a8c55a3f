//! Coinbase Exchange feed: the BAND-GBP recording replays to the book a slow reference
//! (serde_json and a sorted map, the documented algorithm) keeps after every message; the
//! decoder refuses every truncation and malformed frame with a typed error and decodes
//! generated frames of any layout; against the simulator, the venue syncs from its
//! snapshots, and a crossing, a bad frame, a refusal and silence end in a clean resync.

use crate::common;
use crate::conformance::{self, Row};
use crate::generated::object;

use common::in_band::{self, Harness, Sides};
use mergebook::book::{BookUpdate, Level, Side};
use mergebook::fixed::{FixedPoint, FixedPointError};
use mergebook::venue::{DecodeError, Message, VenueId};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::time::Duration;

const COINBASE: VenueId = VenueId::CoinbaseExchange;

/// A recording of `tests/fixtures/coinbase/` (both Coinbase feeds'): its lines.
fn recording(name: &str) -> Vec<String> {
    let path = format!(
        "{}/tests/fixtures/coinbase/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).unwrap();
    text.lines().map(str::to_owned).collect()
}

const BAND_GBP: &str = "exchange_level2_BAND-GBP_snapshot_then_l2updates.jsonl";
const CONTROL: &str = "exchange_subscribe_requests_and_acks.jsonl";

// ---- the reference: serde_json and a sorted map, as docs/protocols.md describes the book ----

#[derive(Default)]
struct ReferenceBook {
    bids: BTreeMap<FixedPoint, FixedPoint>,
    asks: BTreeMap<FixedPoint, FixedPoint>,
    synced: bool,
    /// Zero-size changes, and those of them that deleted a level held.
    deletes: (usize, usize),
}

impl ReferenceBook {
    /// A snapshot replaces the book; an `l2update` sets each change's level to its size
    /// (zero deletes). Returns whether the message was a book's.
    fn apply(&mut self, frame: &str) -> bool {
        let message: serde_json::Value = serde_json::from_str(frame).unwrap();
        let level = |pair: &serde_json::Value, at: usize| -> (FixedPoint, FixedPoint) {
            let number = |index: usize| pair[index].as_str().unwrap().parse().unwrap();
            (number(at), number(at + 1))
        };
        match message["type"].as_str().unwrap() {
            "snapshot" => {
                *self = ReferenceBook::default();
                self.synced = true;
                for (name, side) in [("bids", &mut self.bids), ("asks", &mut self.asks)] {
                    for pair in message[name].as_array().unwrap() {
                        let (price, size) = level(pair, 0);
                        side.insert(price, size);
                    }
                }
            }
            "l2update" => {
                for change in message["changes"].as_array().unwrap() {
                    let side = match change[0].as_str().unwrap() {
                        "buy" => &mut self.bids,
                        "sell" => &mut self.asks,
                        other => panic!("side {other}"),
                    };
                    let (price, size) = level(change, 1);
                    if size.is_zero() {
                        self.deletes.0 += 1;
                        self.deletes.1 += usize::from(side.remove(&price).is_some());
                    } else {
                        side.insert(price, size);
                    }
                }
            }
            _ => return false,
        }
        true
    }

    fn top(&self, depth: usize) -> Option<Sides> {
        self.synced.then_some(())?;
        let level = |(&price, &amount): (&FixedPoint, &FixedPoint)| Level { price, amount };
        Some((
            self.bids.iter().rev().take(depth).map(level).collect(),
            self.asks.iter().take(depth).map(level).collect(),
        ))
    }
}

/// After every message of the BAND-GBP recording the published book is the reference's, and
/// the recording ends on the book SOURCES.md gives.
#[test]
fn the_band_gbp_recording_replays_to_the_reference_after_every_message() {
    let frames = recording(BAND_GBP);
    let mut reference = ReferenceBook::default();
    let mut expected = Vec::new();
    for frame in &frames {
        if reference.apply(frame) {
            expected.push(reference.top(10));
        }
    }
    assert_eq!(expected.len(), 472, "a snapshot and 471 updates");
    let (published, stats) = in_band::replay(COINBASE, &frames, 10, 10);
    assert_eq!(published, expected);
    assert_eq!((stats.decode_errors, stats.crossings), (0, 0));
    assert_eq!(
        reference.deletes,
        (205, 205),
        "every zero deletes a level held"
    );
    assert_eq!((reference.bids.len(), reference.asks.len()), (148, 162));
    let (bids, asks) = published.last().unwrap().clone().unwrap();
    assert_eq!(bids[0].price, "14.7366".parse().unwrap());
    assert_eq!(asks[0].price, "14.7664".parse().unwrap());
}

/// The snapshot keeps its best levels up to the book's cap: the recording replayed with a
/// cap of 20 levels a side publishes the same top 10.
#[test]
fn a_snapshot_deeper_than_the_book_s_cap_keeps_its_best_levels() {
    let frames = recording(BAND_GBP);
    let mut snapshot = BookUpdate::default();
    COINBASE
        .decode_diff(frames[0].as_bytes(), 20, &mut snapshot)
        .unwrap();
    assert_eq!((snapshot.bids.len(), snapshot.asks.len()), (20, 20));
    let mut whole = BookUpdate::default();
    COINBASE
        .decode_diff(frames[0].as_bytes(), 5000, &mut whole)
        .unwrap();
    assert_eq!((whole.bids.len(), whole.asks.len()), (152, 166));
    assert_eq!(snapshot.bids[..], whole.bids[..20]);
    assert_eq!(snapshot.asks[..], whole.asks[..20]);
}

#[test]
fn the_subscription_s_acknowledgement_decodes() {
    let ack = &recording(CONTROL)[1];
    let mut update = BookUpdate::default();
    assert!(matches!(
        COINBASE.decode_diff(ack.as_bytes(), 10, &mut update),
        Ok(Message::SubscribeResult { accepted: true, .. })
    ));
}

// ---- the decoder on bad input ----

/// Its row in the venue conformance tests.
pub fn row() -> Row {
    conformance::diff_row(COINBASE, recorded_frames(), malformed_frames())
}

/// The frames of its conformance row: every recorded one.
fn recorded_frames() -> Vec<String> {
    let mut recorded = Vec::new();
    let frames = recording(BAND_GBP);
    let ack = recording(CONTROL).pop().unwrap();
    for frame in frames.iter().chain([&ack]) {
        recorded.push(frame.to_string());
    }
    recorded
}

/// The malformed frames of its conformance row.
fn malformed_frames() -> Vec<(String, DecodeError)> {
    let update = |changes: &str| {
        format!(
            r#"{{"type":"l2update","product_id":"BAND-GBP","changes":{changes},"time":"2021-04-17T16:43:37.083117Z"}}"#
        )
    };
    let number = |error| DecodeError::Number { at: 0, error };
    let cases: Vec<(String, DecodeError)> = vec![
        (
            r#"{"type":"l2update","product_id":"BAND-GBP"}"#.to_owned(),
            DecodeError::MissingKey("changes"),
        ),
        (
            r#"{"type":"snapshot","product_id":"BAND-GBP","bids":[]}"#.to_owned(),
            DecodeError::MissingKey("asks"),
        ),
        (
            r#"{"type":"snapshot","asks":[],"bids":[]}"#.to_owned(),
            DecodeError::MissingKey("product_id"),
        ),
        (
            r#"{"type":"snapshot","product_id":"X-Y","asks":[],"bids":[],"asks":[]}"#.to_owned(),
            DecodeError::DuplicateKey("asks"),
        ),
        (
            r#"{"type":"snapshot","product_id":"X-Y","asks":[["2","1"],["1","1"]],"bids":[]}"#
                .to_owned(),
            DecodeError::Unsorted(Side::Ask),
        ),
        (
            update(r#"[["hold","1","1"]]"#),
            DecodeError::Invalid("a side must be bid, buy, ask, offer or sell"),
        ),
        (
            update(r#"[["buy","x","1"]]"#),
            number(FixedPointError::InvalidCharacter),
        ),
        (
            update(r#"[["buy","1.123456789","1"]]"#),
            number(FixedPointError::TooPrecise),
        ),
        (
            update(r#"[["buy","1","1e3"]]"#),
            number(FixedPointError::Exponent),
        ),
        (
            update(r#"[["buy","1"]]"#),
            DecodeError::Unexpected {
                at: 0,
                expected: "','",
            },
        ),
        (
            update(r#"{}"#),
            DecodeError::Unexpected {
                at: 0,
                expected: "'['",
            },
        ),
        (
            r#"{"type":"l2update","product_id":"BAND-GBP","changes":[],"time":"yesterday"}"#
                .to_owned(),
            DecodeError::Invalid("a time like 2021-04-17T16:43:37.083117Z"),
        ),
        (
            r#"{"type":"l2update","product_id":"BAND-GBP","changes":[],"asks":[]}"#.to_owned(),
            DecodeError::Invalid("an l2update's levels are its changes"),
        ),
        (
            r#"[{"type":"snapshot"}]"#.to_owned(),
            DecodeError::Unexpected {
                at: 0,
                expected: "'{'",
            },
        ),
        (
            format!("{} x", update("[]")),
            DecodeError::TrailingBytes { at: 0 },
        ),
    ];
    cases
}

// ---- generated frames against the levels they were made of ----

fn levels(side: &[(u64, u64)]) -> Vec<Level> {
    let level = |&(price, amount): &(u64, u64)| Level {
        price: FixedPoint::from_raw(price),
        amount: FixedPoint::from_raw(amount),
    };
    side.iter().map(level).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn generated_frames_decode_to_the_levels_they_hold(
        bids in proptest::collection::btree_map(1u64..1u64 << 50, 1u64..1u64 << 50, 0..40),
        asks in proptest::collection::btree_map(1u64..1u64 << 50, 0u64..1u64 << 50, 0..40),
        snapshot in any::<bool>(),
        seed in any::<u64>(),
        spaced in any::<bool>(),
    ) {
        let separator = if spaced { ", " } else { "," };
        let bids: Vec<(u64, u64)> = bids.into_iter().rev().collect();
        let asks: Vec<(u64, u64)> = asks.into_iter().collect();
        let text = |side: &[(u64, u64)], tag: &str| -> Vec<String> {
            side.iter().map(|&(price, size)| {
                let (price, size) = (FixedPoint::from_raw(price), FixedPoint::from_raw(size));
                format!(r#"[{tag}"{price}"{separator}"{size}"]"#)
            }).collect()
        };
        let mut members = vec![r#""product_id":"BAND-GBP""#.to_owned()];
        if snapshot {
            members.push(r#""type":"snapshot""#.to_owned());
            members.push(format!(r#""bids":[{}]"#, text(&bids, "").join(separator)));
            members.push(format!(r#""asks":[{}]"#, text(&asks, "").join(separator)));
        } else {
            members.push(r#""type":"l2update""#.to_owned());
            members.push(r#""time":"2021-04-17T16:43:37.083117Z""#.to_owned());
            let buy = format!(r#""buy"{separator}"#);
            let sell = format!(r#""sell"{separator}"#);
            let mut changes = text(&bids, &buy);
            changes.extend(text(&asks, &sell));
            members.push(format!(r#""changes":[{}]"#, changes.join(separator)));
        }
        let frame = object(&mut members, seed, spaced);
        let mut update = BookUpdate::default();
        let message = COINBASE.decode_diff(frame.as_bytes(), 5000, &mut update);
        prop_assert_eq!(message, Ok(Message::Book { stream: b"BAND-GBP" }), "{}", frame);
        prop_assert_eq!(&update.bids, &levels(&bids));
        prop_assert_eq!(&update.asks, &levels(&asks));
        prop_assert_eq!(update.is_snapshot, snapshot);
    }
}

// ---- against the simulator ----

const SYMBOL: &str = "BTC-USD";
const OTHER_SYMBOL: &str = "ETH-USD";

async fn start() -> Harness {
    Harness::start(COINBASE, SYMBOL, OTHER_SYMBOL).await
}

/// Synced from the snapshots on the stream, every book true; heartbeats keep the quiet
/// subscriptions alive; duplicated updates change nothing (sizes are absolute).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coinbase_syncs_from_its_snapshots_and_every_book_is_true() {
    let harness = start().await;
    harness.synced().await;
    let checked = harness
        .books_stay_true_for(Duration::from_millis(1000))
        .await;
    assert!(checked > 10, "only {checked} books");
    harness.simulator.duplicate_events(COINBASE, 5);
    harness
        .books_stay_true_for(Duration::from_millis(500))
        .await;
    let decode_errors = r#"orderbook_decode_errors_total{exchange="coinbase_exchange"}"#;
    assert_eq!(harness.metric(decode_errors), 0.0);
    harness.service.stop().await;
}

/// A crossing update (a bid above the best ask) is the one sign of a lost update the feed
/// gives: the book is rebuilt from a new subscription's snapshot, counted; so is a frame
/// that does not decode.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crossing_or_a_bad_frame_resubscribes_and_the_book_syncs_again() {
    let harness = start().await;
    harness.synced().await;
    harness
        .a_crossing_or_a_bad_frame_resubscribes(
            r#"{"type":"l2update","product_id":"BTC-USD","changes":[["buy","99999999","1"]],"time":"2026-11-27T00:00:00Z"}"#,
        )
        .await;
    harness.service.stop().await;
}
