//! Coinbase Advanced Trade: the recorded snapshot and control frames decode; a connection's
//! timeline built from them (numbered on, with generated updates and frames of two
//! products) replays to the book a slow reference (serde_json and a sorted map, the
//! documented algorithm) keeps after every message, and a message missing from it is seen;
//! the decoder refuses every truncation and malformed frame with a typed error and decodes
//! generated frames of any layout; against the simulator, the venue syncs from its
//! snapshots, and a lost message, a crossing, a bad frame, a refusal and silence end in a
//! clean resync.

use crate::common;
use crate::conformance::{self, Row};

use common::in_band::{self, Harness, Sides};
use mergebook::book::{BookUpdate, Level};
use mergebook::fixed::{FixedPoint, FixedPointError};
use mergebook::rng::Rng;
use mergebook::venue::{Acked, DecodeError, Message, VenueId};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::time::Duration;

const COINBASE: VenueId = VenueId::Coinbase;

const SNAPSHOT: &str = "advanced_trade_l2_data_snapshot_BTC-PERP-INTX_truncated_2026-09-07.json";
const CONTROL: &str = "advanced_trade_control_frames_2026.jsonl";

const PRODUCT: &str = "BTC-PERP-INTX";
const OTHER_PRODUCT: &str = "ETH-PERP-INTX";

fn recorded_snapshot() -> String {
    in_band::frames(COINBASE, SNAPSHOT).concat()
}

// ---- the reference: serde_json and sorted maps, as docs/protocols.md describes the books ----

#[derive(Default)]
struct ReferenceBook {
    bids: BTreeMap<FixedPoint, FixedPoint>,
    asks: BTreeMap<FixedPoint, FixedPoint>,
}

/// Every product's book on one connection, and its message numbers.
#[derive(Default)]
struct Reference {
    books: BTreeMap<String, ReferenceBook>,
    /// The number the next message must have (`None`: the connection's first).
    next_number: Option<u64>,
}

impl Reference {
    /// Takes one message: a snapshot replaces its product's book, an update sets each level
    /// to its new quantity (zero deletes). A message whose number is not the next one loses
    /// every book (until its product's next snapshot), the message with them, and starts
    /// the count over. Returns the products whose book events the message held.
    fn apply(&mut self, frame: &str) -> Vec<String> {
        let message: serde_json::Value = serde_json::from_str(frame).unwrap();
        let Some(number) = message["sequence_num"].as_u64() else {
            return Vec::new();
        };
        if self.next_number.is_some_and(|next| next != number) {
            self.books.clear();
            self.next_number = None;
            return Vec::new();
        }
        self.next_number = Some(number + 1);
        if message["channel"] != "l2_data" {
            return Vec::new();
        }
        let mut products = Vec::new();
        for event in message["events"].as_array().unwrap() {
            let product = event["product_id"].as_str().unwrap().to_owned();
            if event["type"] == "snapshot" {
                self.books.insert(product.clone(), ReferenceBook::default());
            }
            if let Some(book) = self.books.get_mut(&product) {
                for level in event["updates"].as_array().unwrap() {
                    let side = match level["side"].as_str().unwrap() {
                        "bid" => &mut book.bids,
                        "offer" => &mut book.asks,
                        other => panic!("side {other}"),
                    };
                    let number = |key: &str| level[key].as_str().unwrap().parse().unwrap();
                    let (price, quantity): (FixedPoint, FixedPoint) =
                        (number("price_level"), number("new_quantity"));
                    match quantity.is_zero() {
                        true => side.remove(&price),
                        false => side.insert(price, quantity),
                    };
                }
            }
            products.push(product);
        }
        products
    }

    fn top(&self, product: &str, depth: usize) -> Option<Sides> {
        let book = self.books.get(product)?;
        let level = |(&price, &amount): (&FixedPoint, &FixedPoint)| Level { price, amount };
        Some((
            book.bids.iter().rev().take(depth).map(level).collect(),
            book.asks.iter().take(depth).map(level).collect(),
        ))
    }
}

/// The recorded snapshot decodes to the levels serde_json reads in it, sorted best first.
#[test]
fn the_recorded_snapshot_decodes_to_its_levels_best_first() {
    let frame = recorded_snapshot();
    let mut update = BookUpdate::default();
    let message = COINBASE.decode_diff(frame.as_bytes(), 100, &mut update);
    assert_eq!(
        message,
        Ok(Message::Book {
            stream: PRODUCT.as_bytes()
        })
    );
    let mut reference = Reference::default();
    reference.apply(&frame);
    let (bids, asks) = reference.top(PRODUCT, 100).unwrap();
    assert_eq!((update.bids, update.asks), (bids.clone(), asks.clone()));
    assert!(update.is_snapshot);
    assert_eq!(update.message_number, Some(0));
    let price = |text: &str| text.parse::<FixedPoint>().unwrap();
    assert_eq!(
        (bids[0].price, asks[0].price),
        (price("79943.9"), price("79944"))
    );
    // Cut to its best level a side, as a book capped there keeps it.
    let mut capped = BookUpdate::default();
    COINBASE
        .decode_diff(frame.as_bytes(), 1, &mut capped)
        .unwrap();
    assert_eq!(
        (&capped.bids[..], &capped.asks[..]),
        (&bids[..1], &asks[..1])
    );
}

/// The recorded acknowledgements and heartbeat are numbered messages of their connection;
/// the error refuses a subscription.
#[test]
fn the_recorded_control_frames_decode() {
    let control = in_band::frames(COINBASE, CONTROL);
    let decode = |frame: &str| {
        let mut update = BookUpdate::default();
        let message = COINBASE
            .decode_diff(frame.as_bytes(), 10, &mut update)
            .unwrap();
        (format!("{message:?}"), update.message_number)
    };
    let acked = format!(
        "{:?}",
        Message::SubscribeResult {
            accepted: true,
            acked: Acked::Oldest
        }
    );
    let refused = format!(
        "{:?}",
        Message::SubscribeResult {
            accepted: false,
            acked: Acked::Oldest
        }
    );
    let heartbeat = format!("{:?}", Message::Heartbeat);
    let decoded: Vec<_> = control[2..].iter().map(|frame| decode(frame)).collect();
    assert_eq!(
        decoded,
        [
            (acked.clone(), Some(1)),
            (acked.clone(), Some(2)),
            (heartbeat, Some(3)),
            (refused, None),
            (acked, Some(1)),
        ]
    );
}

/// The requests mergebook sends are the recorded ones, less their products' order.
#[test]
fn the_subscriptions_are_the_recorded_requests() {
    let control = in_band::frames(COINBASE, CONTROL);
    let products = [PRODUCT.to_owned(), OTHER_PRODUCT.to_owned()];
    let requests =
        COINBASE
            .streams()
            .subscribe_frames(&products, mergebook::venue::StreamKind::Diff, 10, 1);
    let json = |text: &str| serde_json::from_str::<serde_json::Value>(text).unwrap();
    let sent: Vec<_> = requests
        .iter()
        .map(|request| json(&request.frame))
        .collect();
    assert_eq!(sent, [json(&control[0]), json(&control[1])]);
    assert_eq!(
        (requests[0].streams.clone(), requests[1].streams.clone()),
        (0..2, 0..0),
        "the heartbeats request asks for no book"
    );
}

/// One connection's timeline from the recordings: the recorded acknowledgements and
/// heartbeat (1 to 3), the recorded snapshot as message 4, then `updates` generated
/// updates of its book numbered on, every fifth frame also carrying an event of a second
/// product (its snapshot first), every seventh message a heartbeat.
fn timeline(updates: usize, seed: u64) -> Vec<String> {
    let control = in_band::frames(COINBASE, CONTROL);
    let mut frames: Vec<String> = control[2..5].to_vec();
    frames.push(recorded_snapshot().replace(r#""sequence_num":0,"#, r#""sequence_num":4,"#));
    let mut rng = Rng::new(seed);
    let mut number = 5;
    let mut other_subscribed = false;
    let levels = |rng: &mut Rng, count: u64| -> Vec<serde_json::Value> {
        (0..1 + rng.below(count))
            .map(|_| {
                let bid = rng.below(2) == 0;
                // Bids below 79944, offers from it: the book never crosses.
                let tenths = rng.below(40);
                let price = match bid {
                    true => 79_943.9 - tenths as f64 / 10.0,
                    false => 79_944.0 + tenths as f64 / 10.0,
                };
                let quantity = match rng.below(3) {
                    0 => "0".to_owned(),
                    _ => format!("{}.{:04}", rng.below(5), rng.below(10_000)),
                };
                serde_json::json!({
                    "side": if bid { "bid" } else { "offer" },
                    "event_time": "2026-09-07T01:57:59.000000Z",
                    "price_level": format!("{price:.1}"),
                    "new_quantity": quantity,
                })
            })
            .collect()
    };
    for index in 0..updates {
        if index % 7 == 6 {
            frames.push(format!(
                r#"{{"channel":"heartbeats","timestamp":"2026-09-07T01:58:00.000000Z","sequence_num":{number},"events":[{{"current_time":"2026-09-07 01:58:00 +0000 UTC","heartbeat_counter":{index}}}]}}"#
            ));
            number += 1;
        }
        let mut events = vec![serde_json::json!({
            "type": "update", "product_id": PRODUCT, "updates": levels(&mut rng, 4),
        })];
        if index % 5 == 4 {
            let kind = if other_subscribed {
                "update"
            } else {
                "snapshot"
            };
            other_subscribed = true;
            let other = serde_json::json!({
                "type": kind, "product_id": OTHER_PRODUCT, "updates": levels(&mut rng, 6),
            });
            // Either product's event first.
            match rng.below(2) {
                0 => events.push(other),
                _ => events.insert(0, other),
            }
        }
        let frame = serde_json::json!({
            "channel": "l2_data", "client_id": "", "timestamp": "2026-09-07T01:57:59.000000Z",
            "sequence_num": number, "events": events,
        });
        frames.push(frame.to_string());
        number += 1;
    }
    frames
}

/// The reference's book of `PRODUCT` after each message of `frames` that held one of its
/// events.
fn reference_books(frames: &[String]) -> Vec<Option<Sides>> {
    let mut reference = Reference::default();
    let mut books = Vec::new();
    for frame in frames {
        if reference
            .apply(frame)
            .iter()
            .any(|product| product == PRODUCT)
        {
            books.push(reference.top(PRODUCT, 10));
        }
    }
    books
}

/// After every message of the timeline the published book is the reference's: frames of
/// two products included, in either order.
#[test]
fn a_recorded_connection_s_timeline_replays_to_the_reference_after_every_message() {
    let frames = timeline(400, 7);
    let expected = reference_books(&frames);
    assert_eq!(expected.len(), 401, "the snapshot and 400 updates");
    let (published, stats) = in_band::replay(COINBASE, &frames, 10, 10);
    assert_eq!(published, expected);
    assert_eq!((stats.decode_errors, stats.crossings), (0, 0));
    assert!(expected.iter().all(Option::is_some));
}

/// A message missing from the timeline loses the product's book: nothing is published in
/// sync after it, the rest of that connection included, until the next connection's
/// snapshot (after its acknowledgements, numbered from 1 again), which is the reference's
/// book again.
#[test]
fn a_missing_message_puts_the_book_out_of_sync_until_its_next_snapshot() {
    let mut frames = timeline(60, 11);
    let snapshot = frames[3].clone();
    frames.truncate(45);
    frames.remove(30);
    frames.extend(timeline(0, 0));
    assert_eq!(frames.last(), Some(&snapshot));
    let (published, _) = in_band::replay(COINBASE, &frames, 10, 10);
    let lost = published
        .iter()
        .position(Option::is_none)
        .expect("a book out of sync");
    assert!(
        published[lost..published.len() - 1]
            .iter()
            .all(Option::is_none),
        "no book in sync between the lost message and the next snapshot"
    );
    let expected = reference_books(&frames);
    assert_eq!(published.last(), expected.last());
    assert!(expected.last().unwrap().is_some());
    assert_eq!(published[..lost], expected[..lost]);
    assert_eq!(
        lost,
        reference_books(&frames[..30]).len(),
        "in sync up to the missing message"
    );
}

// ---- the decoder on bad input ----

/// Its row in the venue conformance tests.
pub fn row() -> Row {
    conformance::diff_row(COINBASE, recorded_frames(), malformed_frames())
}

/// The frames of its conformance row: every recorded one.
fn recorded_frames() -> Vec<String> {
    let mut recorded = Vec::new();
    let control = in_band::frames(COINBASE, CONTROL);
    let generated = timeline(20, 3);
    for frame in control[2..]
        .iter()
        .chain(&generated)
        .chain([&recorded_snapshot()])
    {
        recorded.push(frame.to_string());
    }
    recorded
}

/// The malformed frames of its conformance row.
fn malformed_frames() -> Vec<(String, DecodeError)> {
    let frame =
        |events: &str| format!(r#"{{"channel":"l2_data","sequence_num":5,"events":{events}}}"#);
    let update = |updates: &str| {
        frame(&format!(
            r#"[{{"type":"update","product_id":"BTC-USD","updates":{updates}}}]"#
        ))
    };
    let level = |side: &str, price: &str, quantity: &str| {
        update(&format!(
            r#"[{{"side":"{side}","price_level":"{price}","new_quantity":"{quantity}"}}]"#
        ))
    };
    let number = |error| DecodeError::Number { at: 0, error };
    let cases: Vec<(String, DecodeError)> = vec![
        (
            r#"{"sequence_num":5,"events":[]}"#.to_owned(),
            DecodeError::MissingKey("channel"),
        ),
        (
            r#"{"channel":"l2_data","events":[]}"#.to_owned(),
            DecodeError::MissingKey("sequence_num"),
        ),
        (
            r#"{"channel":"l2_data","sequence_num":5}"#.to_owned(),
            DecodeError::MissingKey("events"),
        ),
        (
            r#"{"channel":"l2_data","sequence_num":5,"sequence_num":6,"events":[]}"#.to_owned(),
            DecodeError::DuplicateKey("sequence_num"),
        ),
        (
            r#"{"channel":"l2_data","sequence_num":-1,"events":[]}"#.to_owned(),
            DecodeError::Unexpected {
                at: 0,
                expected: "",
            },
        ),
        (
            frame(r#"[{"type":"update","updates":[]}]"#),
            DecodeError::MissingKey("product_id"),
        ),
        (
            frame(r#"[{"product_id":"BTC-USD","updates":[]}]"#),
            DecodeError::MissingKey("type"),
        ),
        (
            frame(r#"[{"type":"update","product_id":"BTC-USD"}]"#),
            DecodeError::MissingKey("updates"),
        ),
        (
            frame(r#"[{"type":"ticker","product_id":"BTC-USD","updates":[]}]"#),
            DecodeError::Invalid("an event's type is snapshot or update"),
        ),
        (
            // The second event is checked before the first is used.
            frame(
                r#"[{"type":"update","product_id":"BTC-USD","updates":[]},{"type":"update","product_id":"ETH-USD","updates":[{"side":"bid","price_level":"1"}]}]"#,
            ),
            DecodeError::MissingKey("new_quantity"),
        ),
        (
            frame(
                r#"[{"type":"snapshot","product_id":"BTC-USD","updates":[{"side":"bid","price_level":"1","new_quantity":"1"},{"side":"bid","price_level":"1","new_quantity":"2"}]}]"#,
            ),
            DecodeError::Unsorted(mergebook::book::Side::Bid),
        ),
        (
            level("ask_side", "1", "1"),
            DecodeError::Invalid("a side must be bid, buy, ask, offer or sell"),
        ),
        (
            level("bid", "x", "1"),
            number(FixedPointError::InvalidCharacter),
        ),
        (
            level("bid", "1.123456789", "1"),
            number(FixedPointError::TooPrecise),
        ),
        (
            level("offer", "1", "1e3"),
            number(FixedPointError::Exponent),
        ),
        (
            update(r#"{}"#),
            DecodeError::Unexpected {
                at: 0,
                expected: "",
            },
        ),
        (
            frame(r#"{"type":"update"}"#),
            DecodeError::Unexpected {
                at: 0,
                expected: "",
            },
        ),
        (
            format!("{} x", frame("[]")),
            DecodeError::TrailingBytes { at: 0 },
        ),
    ];
    cases
}

/// An update with more levels than the book's cap is refused, never cut; a snapshot keeps
/// its best levels.
#[test]
fn an_update_past_the_level_cap_is_refused_and_a_snapshot_cut_to_its_best() {
    let levels: Vec<String> = (1..=5)
        .map(|price| format!(r#"{{"side":"offer","price_level":"{price}","new_quantity":"1"}}"#))
        .rev()
        .collect();
    let frame = |kind: &str| {
        format!(
            r#"{{"channel":"l2_data","sequence_num":1,"events":[{{"type":"{kind}","product_id":"BTC-USD","updates":[{}]}}]}}"#,
            levels.join(",")
        )
    };
    let mut update = BookUpdate::default();
    assert_eq!(
        COINBASE.decode_diff(frame("update").as_bytes(), 4, &mut update),
        Err(DecodeError::TooManyLevels(4))
    );
    COINBASE
        .decode_diff(frame("snapshot").as_bytes(), 2, &mut update)
        .unwrap();
    let prices: Vec<String> = update
        .asks
        .iter()
        .map(|level| level.price.to_string())
        .collect();
    assert_eq!(
        prices,
        ["1.00000000", "2.00000000"],
        "the best two of five sent worst first"
    );
}

// ---- generated frames against the levels they were made of ----

/// Members in a shuffled order, with optional whitespace: any layout JSON allows.
fn object(members: &mut [String], rng: &mut Rng, spaced: bool) -> String {
    rng.shuffle(members);
    let separator = if spaced { ", " } else { "," };
    format!("{{{}}}", members.join(separator))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// An update's levels in wire order, each event's and the envelope's members in any
    /// order, a second product's event after it.
    #[test]
    fn generated_frames_decode_to_the_levels_they_hold(
        changes in proptest::collection::vec((any::<bool>(), 1u64..1u64 << 50, 0u64..1u64 << 50), 0..40),
        snapshot in any::<bool>(),
        second in any::<bool>(),
        seed in any::<u64>(),
        spaced in any::<bool>(),
        number in any::<u64>(),
    ) {
        let mut rng = Rng::new(seed);
        let mut expected = BookUpdate::default();
        let mut updates = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for &(bid, price, quantity) in &changes {
            // A snapshot holds each price once, and no empty level.
            if snapshot && (!seen.insert((bid, price)) || quantity == 0) {
                continue;
            }
            let level = Level { price: FixedPoint::from_raw(price), amount: FixedPoint::from_raw(quantity) };
            let mut members = vec![
                format!(r#""side":"{}""#, if bid { "bid" } else { "offer" }),
                format!(r#""price_level":"{}""#, level.price),
                format!(r#""new_quantity":"{}""#, level.amount),
                r#""event_time":"2026-09-07T01:57:58.894355Z""#.to_owned(),
            ];
            updates.push(object(&mut members, &mut rng, spaced));
            match bid {
                true => expected.bids.push(level),
                false => expected.asks.push(level),
            }
        }
        if snapshot {
            expected.bids.sort_by_key(|level| std::cmp::Reverse(level.price));
            expected.asks.sort_by_key(|level| level.price);
        }
        let separator = if spaced { ", " } else { "," };
        let kind = if snapshot { "snapshot" } else { "update" };
        let mut event = vec![
            format!(r#""type":"{kind}""#),
            format!(r#""product_id":"{PRODUCT}""#),
            format!(r#""updates":[{}]"#, updates.join(separator)),
        ];
        let mut events = vec![object(&mut event, &mut rng, spaced)];
        if second {
            events.push(format!(r#"{{"type":"update","product_id":"{OTHER_PRODUCT}","updates":[]}}"#));
        }
        let mut members = vec![
            r#""channel":"l2_data""#.to_owned(),
            r#""client_id":"""#.to_owned(),
            r#""timestamp":"2026-09-07T01:57:58.894355Z""#.to_owned(),
            format!(r#""sequence_num":{number}"#),
            format!(r#""events":[{}]"#, events.join(separator)),
        ];
        let frame = object(&mut members, &mut rng, spaced);
        let mut update = BookUpdate::default();
        let message = COINBASE.decode_diff(frame.as_bytes(), 5000, &mut update).unwrap();
        let stream = PRODUCT.as_bytes();
        match message {
            Message::Book { stream: named } => prop_assert!(!second && named == stream),
            Message::Books { stream: named, next } => {
                prop_assert!(second && named == stream);
                let mut other = BookUpdate::default();
                let (named, more) = COINBASE.decode_next_event(frame.as_bytes(), next, 5000, &mut other).unwrap();
                prop_assert_eq!((named, more), (OTHER_PRODUCT.as_bytes(), None));
            }
            other => prop_assert!(false, "{:?}", other),
        }
        prop_assert_eq!(&update.bids, &expected.bids, "{}", frame);
        prop_assert_eq!(&update.asks, &expected.asks);
        prop_assert_eq!(update.is_snapshot, snapshot);
        prop_assert_eq!(update.message_number, Some(number));
    }
}

// ---- against the simulator ----

const SYMBOL: &str = "BTC-USD";
const OTHER_SYMBOL: &str = "ETH-USD";

async fn start() -> Harness {
    Harness::start(COINBASE, SYMBOL, OTHER_SYMBOL).await
}

/// Synced from the snapshots on the stream, every book true; duplicated updates change
/// nothing (sizes are absolute); the heartbeats among the updates take their numbers, and
/// no message is taken for lost.
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
    let decode_errors = r#"orderbook_decode_errors_total{exchange="coinbase"}"#;
    assert_eq!(harness.metric(decode_errors), 0.0);
    let gaps = r#"orderbook_resyncs_total{exchange="coinbase",reason="gap"}"#;
    assert_eq!(harness.metric(gaps), 0.0);
    harness.service.stop().await;
}

/// A message the venue numbered and never sent is seen at the next one: every book of
/// the connection is out of sync, counted as a gap, and the connection opened anew syncs
/// them from new snapshots.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_message_reconnects_and_every_book_syncs_again() {
    let harness = start().await;
    harness.synced().await;
    let connections = harness.simulator.connections(COINBASE);
    harness.simulator.skip_events(COINBASE, 1);
    harness
        .counted(
            r#"orderbook_resyncs_total{exchange="coinbase",reason="gap"}"#,
            1.0,
        )
        .await;
    common::eventually("a new connection", in_band::WAIT, || {
        harness.simulator.connections(COINBASE) > connections
    })
    .await;
    harness.synced().await;
    harness
        .books_stay_true_for(Duration::from_millis(500))
        .await;
    harness.service.stop().await;
}

/// A crossing update is rebuilt from a new subscription's snapshot, counted; so is a frame
/// that does not decode. The crossing update's `"sequence_num":0,` is where the simulator
/// numbers it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crossing_or_a_bad_frame_resubscribes_and_the_book_syncs_again() {
    let harness = start().await;
    harness.synced().await;
    harness
        .a_crossing_or_a_bad_frame_resubscribes(
            r#"{"channel":"l2_data","sequence_num":0,"events":[{"type":"update","product_id":"BTC-USD","updates":[{"side":"bid","price_level":"99999999","new_quantity":"1"}]}]}"#,
        )
        .await;
    harness.service.stop().await;
}
