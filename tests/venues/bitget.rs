//! Bitget: every recording replays to the book a slow reference (serde_json and a sorted
//! map of the wire strings, the documented algorithm) keeps, with every checksum in them
//! verified and the `seq`/`pseq` chain followed; the decoder refuses every truncation and
//! malformed frame with a typed error and decodes generated frames of any layout; against
//! the simulator, both markets sync in both modes, and a lost update and a wrong checksum
//! each resubscribe that book alone, which recovers.

use crate::common;
use crate::common::config::TestConfig;
use crate::conformance::{self, Row};
use crate::generated::object;

use common::in_band::{self, Harness, Sides};
use mergebook::book::{BookUpdate, DepthBook, Level, Side, TopBook, WireDecimals};
use mergebook::fixed::{FixedPoint, FixedPointError};
use mergebook::merger::summary::VenueState;
use mergebook::venue::{DecodeError, Message, VenueId};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::time::Duration;

const SPOT: VenueId = VenueId::Bitget;
const FUTURES: VenueId = VenueId::BitgetFutures;

/// A recording's name, the venue whose books it holds, and its instruments, each with the
/// checksums SOURCES.md counts in its messages.
type Recording = (&'static str, VenueId, &'static [(&'static str, usize)]);

/// The 2022 `books` recordings (v1).
const BOOKS_2022: [Recording; 4] = [
    (
        "v1_spot_books_EOSUSDT_2022-04-06.jsonl",
        SPOT,
        &[("EOSUSDT", 56)],
    ),
    (
        "v1_spot_books_CULTUSDT_2022-04-06.jsonl",
        SPOT,
        &[("CULTUSDT", 52)],
    ),
    (
        "v1_spot_books_GOGUSDT_STGUSDT_VVSUSDT_2022-04-06.jsonl",
        SPOT,
        &[("GOGUSDT", 57), ("STGUSDT", 56), ("VVSUSDT", 55)],
    ),
    (
        "v1_mix_books_UNIUSDT_2022-04-06_prefix.jsonl",
        FUTURES,
        &[("UNIUSDT", 89)],
    ),
];
const TRIMMED_2026: &str = "v2_v3_trimmed_frames_2026-09_probe_notes_and_fixture.jsonl";
const BOOKS5_2026: &str = "v2_books5_USDT-FUTURES_and_SPOT_BTCUSDT_ack_snapshots_2026-08-12.jsonl";
const DOCS: &str = "docs_examples_v2_subscribe_ack_books_push.jsonl";
const ACKS_2022: &str = "v1_spot_subscribe_request_and_acks_2022-04-06.jsonl";

/// A recording's frames that the venue sent (requests have an `op` and no `event`).
fn venue_frames(name: &str) -> Vec<String> {
    let mut frames = in_band::frames(SPOT, name);
    frames.retain(|frame| !(frame.starts_with(r#"{"op":"#)));
    frames
}

/// The frames of `inst_id` in a recording.
fn frames_of(name: &str, inst_id: &str) -> Vec<String> {
    let named = format!(r#""instId":"{inst_id}""#);
    let mut frames = venue_frames(name);
    frames.retain(|frame| frame.contains(&named));
    frames
}

// ---- the reference: serde_json and a sorted map of the wire strings ----

/// A side: price → (price text, size text), as sent.
type ReferenceSide = BTreeMap<FixedPoint, (String, String)>;

#[derive(Default)]
struct ReferenceBook {
    bids: ReferenceSide,
    asks: ReferenceSide,
    /// The last `seq` while in sync (0 for messages without ids); `None` after a break.
    last_seq: Option<u64>,
}

impl ReferenceBook {
    /// Applies one `books` message as docs/protocols.md describes: a snapshot replaces; an
    /// update whose `pseq` is the last `seq` (both absent in v1) sets each level (size 0
    /// deletes); otherwise the book is out of sync until a snapshot. Returns the
    /// message's checksum and the one computed from the wire strings, for a book message.
    fn apply(&mut self, frame: &str) -> Option<(i64, i64)> {
        let message: serde_json::Value = serde_json::from_str(frame).unwrap();
        if message["arg"]["channel"] != "books" || message.get("event").is_some() {
            return None;
        }
        let data = &message["data"][0];
        let seq = data.get("seq").map_or(0, |id| id.as_u64().unwrap());
        let pseq = data.get("pseq").map_or(0, |id| id.as_u64().unwrap());
        if message["action"] == "snapshot" {
            *self = ReferenceBook::default();
        } else if self.last_seq != Some(pseq) {
            self.last_seq = None;
            return Some((0, 0));
        }
        self.last_seq = Some(seq);
        for (name, side) in [("bids", &mut self.bids), ("asks", &mut self.asks)] {
            for level in data[name].as_array().unwrap() {
                let (price, size) = (level[0].as_str().unwrap(), level[1].as_str().unwrap());
                let key: FixedPoint = price.parse().unwrap();
                match size.parse::<FixedPoint>().unwrap().is_zero() {
                    true => side.remove(&key),
                    false => side.insert(key, (price.to_owned(), size.to_owned())),
                };
            }
        }
        let claimed = data.get("checksum").map_or(0, |sum| sum.as_i64().unwrap());
        Some((claimed, self.checksum()))
    }

    /// docs/protocols.md's checksum, from the strings as sent.
    fn checksum(&self) -> i64 {
        let bids: Vec<_> = self.bids.values().rev().take(25).collect();
        let asks: Vec<_> = self.asks.values().take(25).collect();
        let mut parts = Vec::new();
        for index in 0..25 {
            for side in [&bids, &asks] {
                if let Some((price, size)) = side.get(index) {
                    parts.push(format!("{price}:{size}"));
                }
            }
        }
        i64::from(crc32fast::hash(parts.join(":").as_bytes()) as i32)
    }

    fn top(&self, depth: usize) -> Option<Sides> {
        self.last_seq?;
        let level = |(price, (_, size)): (&FixedPoint, &(String, String))| Level {
            price: *price,
            amount: size.parse().unwrap(),
        };
        Some((
            self.bids.iter().rev().take(depth).map(level).collect(),
            self.asks.iter().take(depth).map(level).collect(),
        ))
    }
}

/// The 2022 recordings, each instrument alone: every book the replay publishes is the
/// reference's, and every checksum (365, SOURCES.md's count) verifies, against the wire
/// strings and against mergebook's book with the precision its messages were written in.
#[test]
fn the_2022_books_recordings_replay_with_every_checksum_verified() {
    let mut verified = 0;
    for (name, venue, instruments) in BOOKS_2022 {
        for &(inst_id, checksums) in instruments {
            let frames = frames_of(name, inst_id);
            let mut reference = ReferenceBook::default();
            let mut expected = Vec::new();
            let mut book = DepthBook::new(5000);
            let mut update = BookUpdate::default();
            let mut decimals = WireDecimals::default();
            let mut found = 0;
            for frame in &frames {
                let Some((claimed, computed)) = reference.apply(frame) else {
                    continue;
                };
                assert_eq!(claimed, computed, "the reference: {frame:.120}");
                expected.push(reference.top(10));
                venue
                    .decode_diff(frame.as_bytes(), 5000, &mut update)
                    .unwrap();
                match update.is_snapshot {
                    true => {
                        book.replace(&update);
                        decimals = update.decimals;
                    }
                    false => {
                        book.apply(&update);
                        decimals.price = decimals.price.max(update.decimals.price);
                        decimals.amount = decimals.amount.max(update.decimals.amount);
                    }
                }
                if let Some(claimed) = update.checksum {
                    assert_eq!(
                        venue.checksum(&book, decimals),
                        Some(claimed),
                        "mergebook: {frame:.120}"
                    );
                    found += 1;
                }
            }
            assert_eq!(found, checksums, "{inst_id}");
            verified += found;
            let (published, stats) = in_band::replay(venue, &frames, 10, 400);
            assert_eq!(published, expected, "{inst_id}");
            assert_eq!(
                (stats.decode_errors, stats.checksum_mismatches, stats.gaps),
                (0, 0, 0)
            );
        }
    }
    assert_eq!(verified, 365);
}

/// The final tops SOURCES.md gives.
#[test]
fn the_2022_recordings_end_on_the_books_sources_gives() {
    let level = |price: &str, amount: &str| Level {
        price: price.parse().unwrap(),
        amount: amount.parse().unwrap(),
    };
    let cases = [
        (
            BOOKS_2022[0].0,
            SPOT,
            "EOSUSDT",
            level("2.4346", "1929.6778"),
            level("2.4376", "31.1134"),
        ),
        (
            BOOKS_2022[3].0,
            FUTURES,
            "UNIUSDT",
            level("9.969", "228"),
            level("9.974", "30"),
        ),
    ];
    for (name, venue, inst_id, bid, ask) in cases {
        let (published, _) = in_band::replay(venue, &frames_of(name, inst_id), 10, 400);
        let (bids, asks) = published.last().unwrap().clone().unwrap();
        assert_eq!((bids[0], asks[0]), (bid, ask), "{inst_id}");
    }
    let (published, _) = in_band::replay(SPOT, &frames_of(BOOKS_2022[1].0, "CULTUSDT"), 10, 400);
    let (bids, asks) = published.last().unwrap().clone().unwrap();
    let price = |text: &str| text.parse::<FixedPoint>().unwrap();
    assert_eq!(
        (bids[0].price, asks[0].price),
        (price("0.00003505"), price("0.00003530"))
    );
}

/// The 2026 chain (a futures snapshot and two updates, `seq` past 2^32, no checksum)
/// replays to the reference; an update that skips one, or comes twice, is a gap or
/// dropped, never a wrong book.
#[test]
fn the_2026_chain_replays_and_a_break_is_a_gap() {
    let frames = frames_of(TRIMMED_2026, "MAVUSDT");
    let frames: Vec<String> = frames
        .into_iter()
        .filter(|frame| frame.contains(r#""channel":"books""#))
        .collect();
    assert_eq!(frames.len(), 3);
    let mut reference = ReferenceBook::default();
    let expected: Vec<_> = frames
        .iter()
        .map(|frame| {
            reference.apply(frame).unwrap();
            reference.top(10)
        })
        .collect();
    let (published, stats) = in_band::replay(FUTURES, &frames, 10, 400);
    assert_eq!(published, expected);
    assert!(published.iter().all(Option::is_some));
    assert_eq!(stats.gaps, 0);
    // The second update without the first: its pseq names a seq the book never had.
    let broken = [frames[0].clone(), frames[2].clone()];
    let (published, stats) = in_band::replay(FUTURES, &broken, 10, 400);
    assert_eq!((published[1].clone(), stats.gaps), (None, 1));
    // The first update twice: the second copy is older than the book, dropped.
    let twice = [
        frames[0].clone(),
        frames[1].clone(),
        frames[1].clone(),
        frames[2].clone(),
    ];
    let (published, stats) = in_band::replay(FUTURES, &twice, 10, 400);
    assert_eq!(stats.gaps, 0);
    assert_eq!(published.last(), expected.last());
}

/// `books5` messages (the 2026 recordings, the docs' examples) decode in snapshot mode to
/// the levels serde_json reads, ordered by `seq`; the 2022 acknowledgements each name
/// their instrument.
#[test]
fn books5_recordings_and_acknowledgements_decode() {
    let mut books = 0;
    for name in [BOOKS5_2026, DOCS, TRIMMED_2026] {
        for frame in venue_frames(name) {
            let mut top = TopBook::default();
            let message = SPOT.decode(frame.as_bytes(), 5, &mut top);
            let value: serde_json::Value = serde_json::from_str(&frame).unwrap();
            if value["arg"]["channel"] != "books5" || value.get("event").is_some() {
                assert!(!matches!(message, Ok(Message::Book { .. })), "{frame}");
                continue;
            }
            let data = &value["data"][0];
            let side = |name: &str| -> Vec<Level> {
                let levels = data[name].as_array().unwrap().iter();
                levels
                    .map(|level| Level {
                        price: level[0].as_str().unwrap().parse().unwrap(),
                        amount: level[1].as_str().unwrap().parse().unwrap(),
                    })
                    .collect()
            };
            let inst_id = value["arg"]["instId"].as_str().unwrap();
            assert_eq!(
                message,
                Ok(Message::Book {
                    stream: inst_id.as_bytes()
                })
            );
            assert_eq!(top.bids.as_slice(), side("bids"));
            assert_eq!(top.asks.as_slice(), side("asks"));
            assert_eq!(top.venue_sequence, data["seq"].as_u64().unwrap());
            books += 1;
        }
    }
    assert_eq!(books, 7);
    let mut acks = 0;
    for frame in venue_frames(ACKS_2022) {
        let value: serde_json::Value = serde_json::from_str(&frame).unwrap();
        let inst_id = value["arg"]["instId"].as_str().unwrap();
        let mut update = BookUpdate::default();
        let message = SPOT
            .decode_diff(frame.as_bytes(), 100, &mut update)
            .unwrap();
        let acked = mergebook::venue::Acked::Stream(inst_id.as_bytes());
        assert_eq!(
            message,
            Message::SubscribeResult {
                accepted: true,
                acked
            }
        );
        acks += 1;
    }
    assert_eq!(acks, 32);
}

// ---- the decoder on bad input ----

/// Its row in the venue conformance tests, for either market.
pub fn row(venue: VenueId) -> Row {
    conformance::diff_row(venue, recorded_frames(), malformed_frames())
}

/// The frames of its conformance row: every recorded one.
fn recorded_frames() -> Vec<String> {
    let mut names: Vec<&str> = BOOKS_2022.iter().map(|(name, ..)| *name).collect();
    names.extend([TRIMMED_2026, BOOKS5_2026, DOCS, ACKS_2022]);
    names.into_iter().flat_map(venue_frames).collect()
}

/// The malformed frames of its conformance row.
fn malformed_frames() -> Vec<(String, DecodeError)> {
    let book = |action: &str, data: &str| {
        format!(
            r#"{{"action":"{action}","arg":{{"instType":"SPOT","channel":"books","instId":"BTCUSDT"}},"data":[{{{data}}}]}}"#
        )
    };
    let update = |data: &str| book("update", data);
    let number = |error| DecodeError::Number { at: 0, error };
    let cases: Vec<(String, DecodeError)> = vec![
        (update(r#""bids":[]"#), DecodeError::MissingKey("asks")),
        (update(r#""asks":[],"bids":[],"asks":[]"#), DecodeError::DuplicateKey("asks")),
        (update(r#""asks":[["1.5"]],"bids":[]"#), DecodeError::Unexpected { at: 0, expected: "','" }),
        (update(r#""asks":[["x","1"]],"bids":[]"#), number(FixedPointError::InvalidCharacter)),
        (update(r#""asks":[["1","1e3"]],"bids":[]"#), number(FixedPointError::Exponent)),
        (update(r#""asks":{},"bids":[]"#), DecodeError::Unexpected { at: 0, expected: "'['" }),
        (update(r#""asks":[],"bids":[],"seq":5"#), DecodeError::MissingKey("pseq")),
        (update(r#""asks":[],"bids":[],"pseq":5"#), DecodeError::MissingKey("seq")),
        (update(r#""asks":[],"bids":[],"seq":5,"pseq":0"#), DecodeError::Invalid("an update's pseq of 0")),
        (update(r#""asks":[],"bids":[],"seq":-5,"pseq":1"#), DecodeError::Unexpected { at: 0, expected: "a digit" }),
        (update(r#""asks":[],"bids":[],"checksum":4294967295"#), DecodeError::Invalid("a checksum of 32 bits, signed")),
        (book("replace", r#""asks":[],"bids":[]"#), DecodeError::Invalid("a book message's action")),
        (book("snapshot", r#""asks":[["2","1"],["1","1"]],"bids":[]"#), DecodeError::Unsorted(Side::Ask)),
        (r#"{"arg":{"instType":"SPOT","channel":"books","instId":"BTCUSDT"},"data":[{"asks":[],"bids":[]}]}"#.to_owned(), DecodeError::MissingKey("action")),
        (r#"{"action":"update","arg":{"instType":"SPOT","channel":"books","instId":"BTCUSDT"},"data":[{"asks":[],"bids":[]},{"asks":[],"bids":[]}]}"#.to_owned(), DecodeError::Invalid("a book message holds one data element")),
        (r#"{"action":"update","arg":{"instType":"SPOT","channel":"books","instId":"BTCUSDT"}}"#.to_owned(), DecodeError::MissingKey("data")),
        (r#"{"action":"update","arg":{"instType":"SPOT","channel":"books"},"data":[{"asks":[],"bids":[]}]}"#.to_owned(), DecodeError::MissingKey("instId")),
        (r#"{"connId":"x"}"#.to_owned(), DecodeError::UnknownMessage("Bitget v2 message")),
        (r#"[{"arg":{}}]"#.to_owned(), DecodeError::Unexpected { at: 0, expected: "'{'" }),
        (format!("{} x", update(r#""asks":[],"bids":[]"#)), DecodeError::TrailingBytes { at: 0 }),
        ("ping".to_owned(), DecodeError::Unexpected { at: 0, expected: "'{'" }),
    ];
    cases
}

// ---- generated frames against the levels they were made of ----

fn side_text(levels: &[(u64, u64)], spaced: bool) -> String {
    let separator = if spaced { ", " } else { "," };
    let text: Vec<String> = levels
        .iter()
        .map(|&(price, size)| {
            let (price, size) = (FixedPoint::from_raw(price), FixedPoint::from_raw(size));
            format!(r#"["{price}"{separator}"{size}"]"#)
        })
        .collect();
    format!("[{}]", text.join(separator))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any layout JSON allows, any member order, ids past 2^53, any checksum: the levels
    /// in wire order, the ids as the chain reads them.
    #[test]
    fn generated_frames_decode_to_the_levels_they_hold(
        bids in proptest::collection::btree_map(1u64..1u64 << 50, 0u64..1u64 << 50, 0..40),
        asks in proptest::collection::btree_map(1u64..1u64 << 50, 0u64..1u64 << 50, 0..40),
        snapshot in any::<bool>(),
        ids in (1u64..u64::MAX, 1u64..u64::MAX),
        checksum in any::<i32>(),
        seed in any::<u64>(),
        spaced in any::<bool>(),
    ) {
        let bids: Vec<(u64, u64)> = bids.into_iter().rev().collect();
        let asks: Vec<(u64, u64)> = asks.into_iter().collect();
        let (pseq, seq) = ids;
        let pseq = if snapshot { 0 } else { pseq };
        let mut data = vec![
            format!(r#""bids":{}"#, side_text(&bids, spaced)),
            format!(r#""asks":{}"#, side_text(&asks, spaced)),
            r#""ts":"1649290077497""#.to_owned(),
            format!(r#""checksum":{checksum}"#),
            format!(r#""pseq":{pseq}"#),
            format!(r#""seq":{seq}"#),
        ];
        let action = if snapshot { "snapshot" } else { "update" };
        let mut arg = vec![
            r#""instType":"SPOT""#.to_owned(),
            r#""channel":"books""#.to_owned(),
            r#""instId":"BTCUSDT""#.to_owned(),
        ];
        let mut members = vec![
            format!(r#""arg":{}"#, object(&mut arg, seed.rotate_left(3), spaced)),
            format!(r#""action":"{action}""#),
            format!(r#""data":[{}]"#, object(&mut data, seed, spaced)),
            r#""ts":1649290077498"#.to_owned(),
        ];
        let frame = object(&mut members, seed.rotate_left(7), spaced);
        let mut update = BookUpdate::default();
        let message = SPOT.decode_diff(frame.as_bytes(), 5000, &mut update);
        prop_assert_eq!(message, Ok(Message::Book { stream: b"BTCUSDT" }), "{}", frame);
        let levels = |side: &[(u64, u64)]| -> Vec<Level> {
            side.iter().map(|&(p, q)| Level { price: FixedPoint::from_raw(p), amount: FixedPoint::from_raw(q) }).collect()
        };
        prop_assert_eq!(&update.bids, &levels(&bids));
        prop_assert_eq!(&update.asks, &levels(&asks));
        let first = if snapshot { seq } else { pseq };
        prop_assert_eq!((update.is_snapshot, update.first_id, update.last_id), (snapshot, first, seq));
        prop_assert_eq!(update.checksum, (checksum != 0).then_some(checksum as u32));
        prop_assert_eq!(update.exchange_time_ns, 1_649_290_077_497_000_000);
    }
}

// ---- against the simulator ----

const GAPS: &str = r#"orderbook_resyncs_total{exchange="bitget",reason="gap"}"#;
const CHECKSUM_RESYNCS: &str = r#"orderbook_resyncs_total{exchange="bitget",reason="checksum"}"#;

/// Spot in diff mode: every book synced from the snapshot its subscription brings, every
/// checksum verified, text pings answered. A lost update resubscribes that book (counted
/// as a gap), a duplicate is dropped, a wrong checksum resubscribes it (counted); after
/// each, the books are the venue's again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bitget_spot_syncs_and_each_break_resubscribes_its_book() {
    let harness = Harness::start(SPOT, "BTCUSDT", "ETHUSDT").await;
    harness.synced().await;
    let checked = harness
        .books_stay_true_for(Duration::from_millis(1000))
        .await;
    assert!(checked > 10, "only {checked} books");
    assert_eq!(
        (harness.metric(GAPS), harness.metric(CHECKSUM_RESYNCS)),
        (0.0, 0.0)
    );
    assert!(
        harness.simulator.client_pings(SPOT) >= 5,
        "text pings, answered by pong"
    );
    assert_eq!(
        harness.simulator.snapshot_requests(SPOT).len(),
        0,
        "nothing fetched"
    );
    harness.simulator.duplicate_events(SPOT, 5);
    harness
        .books_stay_true_for(Duration::from_millis(500))
        .await;
    assert_eq!(harness.metric(GAPS), 0.0, "duplicates are no gap");
    harness
        .a_lost_event_rebuilds_that_book_alone("BTCUSDT")
        .await;
    harness.synced().await;
    harness.simulator.corrupt_checksums(SPOT, harness.symbol, 1);
    harness.counted(CHECKSUM_RESYNCS, 1.0).await;
    harness.synced().await;
    harness
        .books_stay_true_for(Duration::from_millis(500))
        .await;
    harness.service.stop().await;
}

/// One BTC book of spot and the USDT perpetual, which share their name (`BTCUSDT`): each
/// on its market's connection, both merged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spot_and_perpetual_of_one_name_merge_from_their_own_connections() {
    let config = TestConfig::new()
        .set("service.depth", 10)
        .set("venues.bitget.mode", "diff")
        .set("venues.bitget_futures.mode", "diff")
        .instrument("BTC/USDT", &[(SPOT, "BTCUSDT"), (FUTURES, "BTCUSDT")]);
    let (simulator, service, summary) =
        in_band::first_synced_summary(config, "90000", &[SPOT, FUTURES]).await;
    let venues: std::collections::BTreeSet<VenueId> = summary
        .book
        .bids
        .as_slice()
        .iter()
        .chain(summary.book.asks.as_slice())
        .map(|level| level.venue)
        .collect();
    assert_eq!(venues, [SPOT, FUTURES].into_iter().collect());
    // The simulator refuses a name under another market's instType: each subscribed as
    // its market's.
    assert_eq!(
        (simulator.connections(SPOT), simulator.connections(FUTURES)),
        (1, 1)
    );
    service.stop().await;
}

/// Snapshot mode (the venue's default): `books15` for a depth of 10, each push the top
/// levels as the simulator generated them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn books15_in_snapshot_mode_syncs_and_follows_the_venue() {
    let harness = Harness::start_in(
        mergebook::venue::StreamKind::Snapshots,
        FUTURES,
        "BTCUSDT",
        "ETHUSDT",
        |config| config,
    )
    .await;
    harness.synced().await;
    let sent = harness
        .simulator
        .last_sent(FUTURES, "books15:BTCUSDT")
        .expect("a books15 frame");
    assert!(sent.contains(r#""channel":"books15""#), "{sent}");
    let summary = harness.summaries().borrow().clone();
    assert_eq!(summary.venue_state(FUTURES), VenueState::Synced);
    assert_eq!((summary.book.bids.len(), summary.book.asks.len()), (10, 10));
    harness
        .books_stay_true_for(Duration::from_millis(500))
        .await;
    harness.service.stop().await;
}

/// Bitget closes every connection after 24 hours: the reader renews it first (here after a
/// second), the new connection's subscriptions bringing their snapshots, in both modes,
/// without a gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewed_connections_leave_no_gap_in_the_merged_book() {
    in_band::renewals_leave_no_gap(SPOT, ("BTCUSDT", "ETHUSDT")).await;
}
