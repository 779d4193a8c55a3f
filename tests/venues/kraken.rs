//! Kraken (WebSocket v2 `book`): every recording replays to the books a slow reference
//! computes from the wire text, with every checksum verified; bad frames get typed
//! errors; and against the simulator the venue syncs, merges, and recovers from each
//! fault through a resubscription.

use crate::common;
use crate::conformance::{self, Row};
use crate::generated::object;

use common::in_band::{self, Harness, Sides, WAIT};

use mergebook::book::{BookUpdate, Level, Side};
use mergebook::fixed::FixedPoint;
use mergebook::merger::summary::{Summary, VenueState};
use mergebook::replay;
use mergebook::venue::{DecodeError, Message, VenueId};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::time::Duration;

const KRAKEN: VenueId = VenueId::Kraken;
/// Every recording subscribed at depth 10.
const RECORDED_DEPTH: usize = 10;

const RECORDINGS: [&str; 7] = [
    "v2_book_BTCUSD_depth10_status_ack_snapshot_update_2026-08-12.jsonl",
    "v2_book_DOGEUSDT_thin_snapshot_without_checksum_then_full_snapshot_2026-10-06.jsonl",
    "v2_book_ETHBTC_depth10_ack_snapshot_update_2026-08-26.jsonl",
    "v2_book_GSTUSD_depth10_snapshot.json",
    "v2_book_USDGUSD_depth10_snapshot_2026-09-17.json",
    "v2_book_docs_example_BTCUSD_snapshot.json",
    "v2_control_status_and_heartbeat_2026-08-26.jsonl",
];

fn frames(name: &str) -> Vec<String> {
    in_band::frames(KRAKEN, name)
}

// ---- the reference: serde_json for the structure, the numbers' text as written ----

/// The text of each `{"price":…,"qty":…}` of `side` in `frame`, as written: found by
/// scanning the frame's bytes, since a JSON library's numbers forget their text.
fn raw_levels(frame: &str, side: &str) -> Vec<(String, String)> {
    let start = frame.find(&format!("\"{side}\":[")).unwrap() + side.len() + 4;
    let end = start + frame[start..].find(']').unwrap();
    frame[start..end]
        .split('}')
        .filter(|level| level.contains("price"))
        .map(|level| {
            let value = |key: &str| {
                let at = level.find(&format!("\"{key}\":")).unwrap() + key.len() + 3;
                level[at..].split(',').next().unwrap().trim().to_owned()
            };
            (value("price"), value("qty"))
        })
        .collect()
}

/// A book as Kraken keeps it: each level with the text it was sent in.
#[derive(Default)]
struct ReferenceBook {
    bids: BTreeMap<FixedPoint, (String, String)>,
    asks: BTreeMap<FixedPoint, (String, String)>,
}

impl ReferenceBook {
    /// Applies one book message (the documented algorithm), cuts each side to `depth`,
    /// and returns whether its checksum, if it has one, verifies.
    fn apply(&mut self, frame: &str, depth: usize) -> Option<bool> {
        let message: serde_json::Value = serde_json::from_str(frame).unwrap();
        if message["type"] == "snapshot" {
            *self = ReferenceBook::default();
        }
        for (name, side) in [("bids", &mut self.bids), ("asks", &mut self.asks)] {
            for (price, qty) in raw_levels(frame, name) {
                let key: FixedPoint = price.parse().unwrap();
                if qty.parse::<FixedPoint>().unwrap().is_zero() {
                    side.remove(&key);
                } else {
                    side.insert(key, (price, qty));
                }
            }
        }
        while self.bids.len() > depth {
            self.bids.pop_first();
        }
        while self.asks.len() > depth {
            self.asks.pop_last();
        }
        let claimed = message["data"][0].get("checksum")?.as_u64()?;
        Some(u64::from(self.checksum()) == claimed)
    }

    fn checksum(&self) -> u32 {
        let digits = |text: &str| text.replace('.', "").trim_start_matches('0').to_owned();
        let mut text = String::new();
        let asks = self.asks.values().take(10);
        for (price, qty) in asks.chain(self.bids.values().rev().take(10)) {
            text += &digits(price);
            text += &digits(qty);
        }
        crc32fast::hash(text.as_bytes())
    }

    /// The best `depth` levels a side.
    fn top(&self, depth: usize) -> Sides {
        let level = |(price, (_, qty)): (&FixedPoint, &(String, String))| Level {
            price: *price,
            amount: qty.parse().unwrap(),
        };
        (
            self.bids.iter().rev().take(depth).map(level).collect(),
            self.asks.iter().take(depth).map(level).collect(),
        )
    }
}

fn is_book(frame: &str) -> bool {
    frame.starts_with(r#"{"channel":"book""#)
}

fn replay(frames: &[String], depth: usize) -> (Vec<Option<Sides>>, replay::DiffStats) {
    in_band::replay(KRAKEN, frames, depth, RECORDED_DEPTH)
}

#[test]
fn every_recording_replays_to_the_reference_books_with_every_checksum_verified() {
    let mut verified = 0;
    for name in RECORDINGS {
        let frames = frames(name);
        let mut reference = ReferenceBook::default();
        let mut expected = Vec::new();
        for frame in frames.iter().filter(|frame| is_book(frame)) {
            match reference.apply(frame, RECORDED_DEPTH) {
                Some(true) => verified += 1,
                Some(false) => panic!("{name}: the reference's checksum fails on {frame}"),
                None => {} // a snapshot without a checksum
            }
            expected.push(Some(reference.top(RECORDED_DEPTH)));
        }
        let (published, stats) = replay(&frames, RECORDED_DEPTH);
        assert_eq!(published, expected, "{name}");
        assert_eq!(stats.checksum_mismatches, 0, "{name}");
    }
    // docs 1, GST/USD 1, USDG/USD 1, ETH/BTC 2, BTC/USD 2, DOGE/USDT 3 (SOURCES.md).
    assert_eq!(verified, 10);
}

/// The checksum is checked, not trusted: one changed digit is a mismatch, and the book is
/// out of sync (excluded) from that message on, until a new snapshot.
#[test]
fn a_wrong_checksum_in_a_recording_takes_the_book_out_of_sync() {
    let mut frames = frames(RECORDINGS[0]);
    let update = frames.last_mut().unwrap();
    *update = update.replace("\"checksum\":1153589921", "\"checksum\":1153589922");
    let (published, stats) = replay(&frames, RECORDED_DEPTH);
    assert_eq!(stats.checksum_mismatches, 1);
    assert!(published[0].is_some(), "the snapshot verified");
    assert_eq!(
        published.last(),
        Some(&None),
        "out of sync after the mismatch"
    );
}

/// Kraken sends no delete for a level pushed out of the depth subscribed: the book is
/// cut to that depth after each message, even where a deeper book is published.
#[test]
fn the_book_is_cut_to_the_depth_subscribed() {
    let mut frames = frames(RECORDINGS[0]);
    let (published, _) = replay(&frames, 20);
    let (before, asks_before) = published.last().unwrap().clone().unwrap();
    // A new second-best bid, with the checksum of the book cut to the depth after it.
    let new_bid = Level {
        price: "63299.0".parse().unwrap(),
        amount: "1".parse().unwrap(),
    };
    let mut expected = vec![before[0], new_bid];
    expected.extend_from_slice(&before[1..RECORDED_DEPTH - 1]);
    let mut book = mergebook::book::DepthBook::new(1000);
    book.replace(&BookUpdate {
        bids: expected.clone(),
        asks: asks_before.clone(),
        ..BookUpdate::default()
    });
    let decimals = mergebook::book::WireDecimals {
        price: 1,
        amount: 8,
        ..Default::default()
    };
    let checksum = KRAKEN.checksum(&book, decimals).unwrap();
    frames.push(format!(
        r#"{{"channel":"book","type":"update","data":[{{"symbol":"BTC/USD","bids":[{{"price":63299.0,"qty":1.00000000}}],"asks":[],"checksum":{checksum},"timestamp":"2026-08-12T19:28:10.000000Z"}}]}}"#
    ));
    let (published, _) = replay(&frames, 20);
    let (bids, asks) = published.last().unwrap().clone().unwrap();
    assert_eq!((bids.len(), asks.len()), (RECORDED_DEPTH, RECORDED_DEPTH));
    assert_eq!(bids, expected, "the worst bid was cut");
}

// ---- the decoder on bad input ----

fn decode(frame: &[u8]) -> (Result<Message<'_>, DecodeError>, BookUpdate) {
    let mut update = BookUpdate::default();
    let message = KRAKEN.decode_diff(frame, 5000, &mut update);
    (message, update)
}

/// Its row in the venue conformance tests.
pub fn row() -> Row {
    conformance::diff_row(KRAKEN, recorded_frames(), malformed_frames())
}

/// The frames of its conformance row: every recorded one.
fn recorded_frames() -> Vec<String> {
    let mut recorded = Vec::new();
    for name in RECORDINGS {
        for frame in frames(name) {
            recorded.push(frame.to_string());
        }
    }
    recorded
}

/// The malformed frames of its conformance row.
fn malformed_frames() -> Vec<(String, DecodeError)> {
    let book = |data: &str| format!(r#"{{"channel":"book","type":"update","data":[{data}]}}"#);
    let level = r#"{"price":1.5,"qty":2.0}"#;
    let cases: Vec<(String, DecodeError)> = vec![
        (book(r#"{"symbol":"A/B","bids":[]}"#), DecodeError::MissingKey("asks")),
        (book(&format!(r#"{{"symbol":"A/B","bids":[{level}],"asks":[],"bids":[]}}"#)), DecodeError::DuplicateKey("bids")),
        (book(r#"{"symbol":"A/B","bids":[{"price":1.5}],"asks":[]}"#), DecodeError::MissingKey("qty")),
        (book(r#"{"symbol":"A/B","bids":[{"price":"x","qty":1}],"asks":[]}"#), DecodeError::Number { at: 0, error: mergebook::fixed::FixedPointError::InvalidCharacter }),
        (book(r#"{"symbol":"A/B","bids":[{"price":1.123456789,"qty":1}],"asks":[]}"#), DecodeError::Number { at: 0, error: mergebook::fixed::FixedPointError::TooPrecise }),
        (book(r#"{"symbol":"A/B","bids":[{"price":1e3,"qty":1}],"asks":[]}"#), DecodeError::Number { at: 0, error: mergebook::fixed::FixedPointError::Exponent }),
        (book(r#"{"symbol":"A/B","bids":[],"asks":[],"checksum":4294967296}"#), DecodeError::Invalid("a checksum of 32 bits")),
        (book(r#"{"symbol":"A/B","bids":[],"asks":[],"timestamp":"yesterday"}"#), DecodeError::Invalid("a timestamp like 2026-08-12T19:28:08.631028Z")),
        (book(r#"{"symbol":"A/B","bids":[],"asks":[]},{"symbol":"C/D","bids":[],"asks":[]}"#), DecodeError::Invalid("a book message holds one symbol")),
        (r#"{"channel":"book","type":"delta","data":[{"symbol":"A/B","bids":[],"asks":[]}]}"#.to_owned(), DecodeError::Invalid("a book message's type")),
        (r#"{"channel":"book","type":"snapshot","data":[{"symbol":"A/B","bids":[{"price":1,"qty":1},{"price":2,"qty":1}],"asks":[]}]}"#.to_owned(), DecodeError::Unsorted(Side::Bid)),
        (r#"{"channel":"book","type":"snapshot","data":[{"symbol":"A/B","bids":[],"asks":[{"price":2,"qty":1},{"price":2,"qty":1}]}]}"#.to_owned(), DecodeError::Unsorted(Side::Ask)),
        (r#"[{"channel":"book"}]"#.to_owned(), DecodeError::Unexpected { at: 0, expected: "'{'" }),
        (r#"{"channel":"book","type":"update","data":[]} x"#.to_owned(), DecodeError::TrailingBytes { at: 46 }),
    ];
    cases
}

// ---- generated frames against the levels they were made of ----

fn side_text(levels: &[(u64, u64)], spaced: bool) -> String {
    let colon = if spaced { ": " } else { ":" };
    let text: Vec<String> = levels
        .iter()
        .map(|&(price, qty)| {
            let (price, qty) = (FixedPoint::from_raw(price), FixedPoint::from_raw(qty));
            format!(
                "{{\"price\"{colon}{},\"qty\"{colon}{}}}",
                price.with_decimals(8),
                qty.with_decimals(8)
            )
        })
        .collect();
    format!("[{}]", text.join(","))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn generated_frames_decode_to_the_levels_they_hold(
        bids in proptest::collection::btree_map(1u64..1u64 << 50, 0u64..1u64 << 50, 0..40),
        asks in proptest::collection::btree_map(1u64..1u64 << 50, 0u64..1u64 << 50, 0..40),
        snapshot in any::<bool>(),
        checksum in proptest::option::of(any::<u32>()),
        seed in any::<u64>(),
        spaced in any::<bool>(),
    ) {
        let bids: Vec<(u64, u64)> = bids.into_iter().rev().collect();
        let asks: Vec<(u64, u64)> = asks.into_iter().collect();
        let mut data = vec![
            "\"symbol\":\"ETH/BTC\"".to_owned(),
            format!("\"bids\":{}", side_text(&bids, spaced)),
            format!("\"asks\":{}", side_text(&asks, spaced)),
            "\"timestamp\":\"2026-08-26T15:16:16.730423Z\"".to_owned(),
        ];
        if let Some(checksum) = checksum {
            data.push(format!("\"checksum\":{checksum}"));
        }
        let kind = if snapshot { "snapshot" } else { "update" };
        let mut members = vec![
            "\"channel\":\"book\"".to_owned(),
            format!("\"type\":\"{kind}\""),
            format!("\"data\":[{}]", object(&mut data, seed, spaced)),
        ];
        let frame = object(&mut members, seed.rotate_left(7), spaced);
        let (message, update) = decode(frame.as_bytes());
        if !snapshot && checksum.is_none() {
            // An update must carry its checksum (a thin book's snapshot may not).
            prop_assert_eq!(message, Err(DecodeError::MissingKey("checksum")), "{}", frame);
            return Ok(());
        }
        prop_assert_eq!(message, Ok(Message::Book { stream: b"ETH/BTC" }), "{}", frame);
        let levels = |side: &[(u64, u64)]| -> Vec<Level> {
            side.iter().map(|&(p, q)| Level { price: FixedPoint::from_raw(p), amount: FixedPoint::from_raw(q) }).collect()
        };
        prop_assert_eq!(&update.bids, &levels(&bids));
        prop_assert_eq!(&update.asks, &levels(&asks));
        prop_assert_eq!((update.is_snapshot, update.checksum), (snapshot, checksum));
        prop_assert_eq!(update.last_id, 1_787_757_376_730_423);
    }
}

// ---- against the simulator ----

const SYMBOL: &str = "ETH/BTC";
/// A second symbol on the same connection (instrument 1).
const OTHER_SYMBOL: &str = "BTC/USD";

async fn start() -> Harness {
    Harness::start(KRAKEN, SYMBOL, OTHER_SYMBOL).await
}

const MISMATCHES: &str =
    r#"orderbook_checksum_mismatches_total{exchange="kraken",instrument="ETH/BTC"}"#;
const RESUBSCRIPTIONS: &str =
    r#"orderbook_snapshot_requests_total{exchange="kraken",outcome="used"}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kraken_syncs_from_its_in_band_snapshot_and_every_book_is_true() {
    let harness = start().await;
    harness.synced().await;
    let checked = harness
        .books_stay_true_for(Duration::from_millis(1500))
        .await;
    assert!(checked > 10, "only {checked} books");
    assert_eq!(harness.metric(MISMATCHES), 0.0, "every checksum verified");
    // Application pings (every 100 ms here, Kraken's 30 s by default) reach the venue.
    assert!(harness.simulator.client_pings(KRAKEN) >= 5);
    harness.service.stop().await;
}

/// A bad checksum: that symbol out of sync, resubscribed, synced again from the fresh
/// snapshot, and the mismatch counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_checksum_resubscribes_the_symbol_and_it_syncs_again() {
    let harness = start().await;
    harness.synced().await;
    let snapshots = harness.metric(RESUBSCRIPTIONS);
    harness.simulator.corrupt_checksums(KRAKEN, SYMBOL, 1);
    harness.counted(MISMATCHES, 1.0).await;
    harness.counted(RESUBSCRIPTIONS, snapshots + 1.0).await;
    harness.synced().await;
    let checked = harness
        .books_stay_true_for(Duration::from_millis(500))
        .await;
    assert!(checked > 0);
    assert_eq!(
        harness.metric(MISMATCHES),
        1.0,
        "one bad checksum, one mismatch"
    );
    harness.service.stop().await;
}

/// Kraken has no sequence numbers: lost updates show as a checksum mismatch, and the
/// book is rebuilt; a duplicated update (absolute sizes) changes nothing; swapped ones
/// never publish a wrong book.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_updates_are_found_by_the_checksum_and_duplicates_are_harmless() {
    let harness = start().await;
    harness.synced().await;
    harness.simulator.duplicate_events(KRAKEN, 5);
    let checked = harness
        .books_stay_true_for(Duration::from_millis(600))
        .await;
    assert!(checked > 0);
    assert_eq!(harness.metric(MISMATCHES), 0.0, "duplicates change nothing");
    harness.simulator.skip_events(KRAKEN, 10);
    harness.counted(MISMATCHES, 1.0).await;
    harness.synced().await;
    harness
        .books_stay_true_for(Duration::from_millis(500))
        .await;
    // Swapped updates: whatever each checksum then shows, no book the venue never had is
    // published, and the book is synced again.
    harness.simulator.swap_events(KRAKEN, 3);
    harness
        .books_stay_true_for(Duration::from_millis(600))
        .await;
    harness.synced().await;
    harness.service.stop().await;
}

/// A venue that keeps sending bad checksums cannot cause a storm of resubscriptions: each
/// loss soon after a sync waits longer. The other symbol on the connection is untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_checksums_without_end_back_off_and_leave_the_other_symbol_alone() {
    let harness = start().await;
    harness.synced().await;
    let mut other = harness.service.summaries(1);
    let other_synced = |s: &Summary| s.venue_state(KRAKEN) == VenueState::Synced;
    tokio::time::timeout(WAIT, other.wait_for(|s| other_synced(s)))
        .await
        .unwrap()
        .unwrap();
    let before = harness.metric(RESUBSCRIPTIONS);
    harness
        .simulator
        .corrupt_checksums(KRAKEN, SYMBOL, u64::MAX);
    let watched = Duration::from_secs(3);
    let deadline = tokio::time::Instant::now() + watched;
    while let Ok(Ok(())) = tokio::time::timeout_at(deadline, other.changed()).await {
        let summary = other.borrow_and_update().clone();
        assert!(
            other_synced(&summary),
            "{OTHER_SYMBOL} left sync: {:?}",
            summary.source_states
        );
    }
    // Snapshots at once, then after 0.5, 1 and 2 s (each loss soon after a sync): at most
    // 4 in 3 s, where one a message would be over a hundred.
    let resubscriptions = harness.metric(RESUBSCRIPTIONS) - before;
    assert!(
        (2.0..=5.0).contains(&resubscriptions),
        "{resubscriptions} resubscriptions"
    );
    assert!(harness.metric(MISMATCHES) >= resubscriptions);
    let other_mismatches = format!(
        r#"orderbook_checksum_mismatches_total{{exchange="kraken",instrument="{OTHER_SYMBOL}"}}"#
    );
    assert_eq!(harness.metric(&other_mismatches), 0.0);
    harness.service.stop().await;
}

/// Kraken's heartbeat is the connection's, not a book's: a subscription that sends nothing
/// but heartbeats is subscribed again at the read-idle allowance and, still without book
/// data, its connection is recycled at the next, however many heartbeats come.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn heartbeats_do_not_keep_a_silent_subscription() {
    let harness = start().await;
    harness.synced().await;
    harness.simulator.pause(KRAKEN, true);
    let idle_timeouts =
        r#"orderbook_connection_errors_total{exchange="kraken",reason="idle_timeout"}"#;
    let deadline = tokio::time::Instant::now() + WAIT;
    while harness.metric(idle_timeouts) < 1.0 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "heartbeats kept a silent subscription for {WAIT:?}"
        );
        harness
            .simulator
            .send_raw(KRAKEN, r#"{"channel":"heartbeat"}"#);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(harness.metric(r#"orderbook_silent_resubscriptions_total{exchange="kraken"}"#) >= 1.0);
    harness.service.stop().await;
}
