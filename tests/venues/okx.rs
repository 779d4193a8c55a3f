//! OKX: every recording replays to the book a slow reference (serde_json and a sorted map
//! of the wire strings, the documented algorithm) keeps, and every checksum in them
//! verifies; the decoder refuses every truncation and malformed frame with a typed error
//! and decodes generated frames of any layout; against the simulator, the venue syncs in
//! both forms of its protocol (seeded from REST; from the snapshot on the stream, checksums
//! verified) and each injected fault ends in a clean resync.

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

const OKX: VenueId = VenueId::Okx;

const BOOKS_2022: &str = "books_BTC-USDT_subscribe_ack_snapshot_updates_2022.jsonl";
const DOCS: &str = "docs_examples_books_bbo-tbt_books5_and_acks.jsonl";
const BOOKS5: [&str; 2] = [
    "books5_BTC-USDT-SWAP_ack_then_snapshots_2026-08-12.jsonl",
    "books5_BTC-USDT_ack_then_snapshots_2026-08-12.jsonl",
];

/// A recording's frames that the venue sent (the docs' examples include the client's
/// request: an `op`).
fn venue_frames(name: &str) -> Vec<String> {
    let mut frames = in_band::frames(OKX, name);
    frames.retain(|frame| !frame.contains(r#""op":"#));
    frames
}

// ---- the reference: serde_json and a sorted map of the wire strings ----

/// A side: price → (price text, size text), as sent.
type ReferenceSide = BTreeMap<FixedPoint, (String, String)>;

#[derive(Default)]
struct ReferenceBook {
    bids: ReferenceSide,
    asks: ReferenceSide,
    /// The last `seqId` while in sync (0 for messages without ids); `None` after a gap.
    last_seq: Option<i64>,
}

impl ReferenceBook {
    /// Applies one `books` message as docs/protocols.md describes: a snapshot replaces, an
    /// update whose `prevSeqId` is the last `seqId` sets each level (size 0 deletes);
    /// otherwise the book is out of sync until a snapshot. Returns the message's checksum
    /// and the one computed from the wire strings, for a book message.
    fn apply(&mut self, frame: &str) -> Option<(i64, i64)> {
        let message: serde_json::Value = serde_json::from_str(frame).unwrap();
        if message["arg"]["channel"] != "books" || message.get("event").is_some() {
            return None;
        }
        let data = &message["data"][0];
        let seq = data.get("seqId").map_or(0, |id| id.as_i64().unwrap());
        let prev = data.get("prevSeqId").map_or(0, |id| id.as_i64().unwrap());
        if message["action"] == "snapshot" {
            *self = ReferenceBook::default();
        } else if self.last_seq != Some(prev) {
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

/// The 2022 recording: every book the replay publishes is the reference's, all 98
/// checksums verify (against the wire strings and against mergebook's book), and it ends
/// on the book SOURCES.md gives.
#[test]
fn the_2022_books_recording_replays_with_every_checksum_verified() {
    let frames = venue_frames(BOOKS_2022);
    let mut reference = ReferenceBook::default();
    let mut expected = Vec::new();
    let mut verified = 0;
    let mut book = DepthBook::new(5000);
    let mut update = BookUpdate::default();
    for frame in &frames {
        if let Some((claimed, computed)) = reference.apply(frame) {
            assert_eq!(claimed, computed, "the reference: {frame:.120}");
            expected.push(reference.top(10));
            OKX.decode_diff(frame.as_bytes(), 5000, &mut update)
                .unwrap();
            match update.is_snapshot {
                true => book.replace(&update),
                false => book.apply(&update),
            }
            let ours = OKX.checksum(&book, WireDecimals::default());
            assert_eq!(ours, update.checksum, "mergebook: {frame:.120}");
            verified += 1;
        }
    }
    assert_eq!(verified, 98);
    let (published, stats) = in_band::replay(OKX, &frames, 10, 400);
    assert_eq!(published, expected);
    assert_eq!((stats.decode_errors, stats.checksum_mismatches), (0, 0));
    assert_eq!((reference.bids.len(), reference.asks.len()), (400, 400));
    let (bids, asks) = published.last().unwrap().clone().unwrap();
    let level = |price: &str, amount: &str| Level {
        price: price.parse().unwrap(),
        amount: amount.parse().unwrap(),
    };
    assert_eq!(bids[0], level("30236.1", "0.18050747"));
    assert_eq!(asks[0], level("30236.2", "0.001"));
    assert_eq!(reference.checksum(), -308_733_687);
}

/// The docs' `books` example chains by its ids (snapshot 123456, update 123456 → 123457);
/// its checksum does not match its own data (SOURCES.md), which mergebook computes as
/// SOURCES.md does and takes as a mismatch; a `prevSeqId` that does not chain is a gap.
#[test]
fn the_docs_example_chains_and_its_wrong_checksum_is_caught() {
    let books: Vec<String> = venue_frames(DOCS)
        .into_iter()
        .filter(|frame| frame.contains(r#""channel":"books""#) && frame.contains("action"))
        .collect();
    assert_eq!(books.len(), 2);
    let mut update = BookUpdate::default();
    OKX.decode_diff(books[0].as_bytes(), 5000, &mut update)
        .unwrap();
    let mut book = DepthBook::new(5000);
    book.replace(&update);
    let computed = OKX.checksum(&book, WireDecimals::default()).unwrap() as i32;
    assert_eq!(computed, -2_102_840_145, "SOURCES.md's computed value");
    assert_eq!(update.checksum, Some(-855_196_043i32 as u32));
    let (published, stats) = in_band::replay(OKX, &books, 10, 400);
    assert!(
        published.iter().all(Option::is_none),
        "a wrong checksum is never published"
    );
    assert_eq!(stats.checksum_mismatches, 1);
    // Without the (wrong) checksums, the ids chain; broken, they are a gap.
    let unchecked: Vec<String> = books
        .iter()
        .map(|frame| frame.replace(r#""checksum":-855196043"#, r#""checksum":0"#))
        .collect();
    let (published, stats) = in_band::replay(OKX, &unchecked, 10, 400);
    assert!(published.iter().all(Option::is_some));
    assert_eq!(stats.gaps, 0);
    let mut broken = unchecked.clone();
    // An update missing between the two: the second's prevSeqId is past the snapshot.
    broken[1] = broken[1]
        .replace(r#""prevSeqId":123456"#, r#""prevSeqId":123457"#)
        .replace(r#""seqId":123457"#, r#""seqId":123460"#);
    let (published, stats) = in_band::replay(OKX, &broken, 10, 400);
    assert_eq!((published[1].clone(), stats.gaps), (None, 1));
}

/// `books5` messages (the 2026 recordings, the docs' example) decode in snapshot mode to
/// the levels serde_json reads, ordered by `seqId`.
#[test]
fn books5_recordings_decode() {
    let mut books = 0;
    for name in BOOKS5.into_iter().chain([DOCS]) {
        for frame in venue_frames(name) {
            let mut top = TopBook::default();
            let message = OKX.decode(frame.as_bytes(), 5, &mut top).unwrap();
            let value: serde_json::Value = serde_json::from_str(&frame).unwrap();
            if value["arg"]["channel"] != "books5" || value.get("event").is_some() {
                assert!(!matches!(message, Message::Book { .. }), "{frame}");
                continue;
            }
            let data = &value["data"][0];
            let side = |name: &str| -> Vec<Level> {
                data[name]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|level| Level {
                        price: level[0].as_str().unwrap().parse().unwrap(),
                        amount: level[1].as_str().unwrap().parse().unwrap(),
                    })
                    .collect()
            };
            let inst_id = value["arg"]["instId"].as_str().unwrap();
            assert_eq!(
                message,
                Message::Book {
                    stream: inst_id.as_bytes()
                }
            );
            assert_eq!(top.bids.as_slice(), side("bids"));
            assert_eq!(top.asks.as_slice(), side("asks"));
            assert_eq!(top.venue_sequence, data["seqId"].as_u64().unwrap());
            books += 1;
        }
    }
    assert_eq!(books, 5);
}

// ---- the decoder on bad input ----

/// Its row in the venue conformance tests.
pub fn row() -> Row {
    conformance::diff_row(OKX, recorded_frames(), malformed_frames())
}

/// The frames of its conformance row: every recorded one.
fn recorded_frames() -> Vec<String> {
    let mut recorded = Vec::new();
    for name in BOOKS5.into_iter().chain([BOOKS_2022, DOCS]) {
        for frame in venue_frames(name) {
            recorded.push(frame.to_string());
        }
    }
    recorded
}

/// The malformed frames of its conformance row.
fn malformed_frames() -> Vec<(String, DecodeError)> {
    let book = |action: &str, data: &str| {
        format!(
            r#"{{"arg":{{"channel":"books","instId":"BTC-USDT"}},"action":"{action}","data":[{{{data}}}]}}"#
        )
    };
    let update = |data: &str| book("update", data);
    let number = |error| DecodeError::Number { at: 0, error };
    let cases: Vec<(String, DecodeError)> = vec![
        (update(r#""bids":[]"#), DecodeError::MissingKey("asks")),
        (update(r#""asks":[],"bids":[],"asks":[]"#), DecodeError::DuplicateKey("asks")),
        (update(r#""asks":[["1.5"]],"bids":[]"#), DecodeError::Unexpected { at: 0, expected: "','" }),
        (update(r#""asks":[["x","1","0","1"]],"bids":[]"#), number(FixedPointError::InvalidCharacter)),
        (update(r#""asks":[["1.123456789","1","0","1"]],"bids":[]"#), number(FixedPointError::TooPrecise)),
        (update(r#""asks":[["1","1e3","0","1"]],"bids":[]"#), number(FixedPointError::Exponent)),
        (update(r#""asks":{},"bids":[]"#), DecodeError::Unexpected { at: 0, expected: "'['" }),
        (update(r#""asks":[],"bids":[],"seqId":5"#), DecodeError::Invalid("seqId and prevSeqId together")),
        (update(r#""asks":[],"bids":[],"seqId":5,"prevSeqId":-1"#), DecodeError::Invalid("an update's prevSeqId")),
        (update(r#""asks":[],"bids":[],"seqId":-5,"prevSeqId":1"#), DecodeError::Unexpected { at: 0, expected: "a digit" }),
        (update(r#""asks":[],"bids":[],"checksum":4294967295"#), DecodeError::Invalid("a checksum of 32 bits, signed")),
        (update(r#""asks":[],"bids":[],"instId":"ETH-USDT""#), DecodeError::Invalid("a book's instId is its arg's")),
        (book("replace", r#""asks":[],"bids":[]"#), DecodeError::Invalid("a book message's action")),
        (book("snapshot", r#""asks":[["2","1","0","1"],["1","1","0","1"]],"bids":[]"#), DecodeError::Unsorted(Side::Ask)),
        (r#"{"arg":{"channel":"books","instId":"BTC-USDT"},"data":[{"asks":[],"bids":[]}]}"#.to_owned(), DecodeError::MissingKey("action")),
        (r#"{"arg":{"channel":"books","instId":"BTC-USDT"},"action":"update","data":[{"asks":[],"bids":[]},{"asks":[],"bids":[]}]}"#.to_owned(), DecodeError::Invalid("a book message holds one data element")),
        (r#"{"arg":{"channel":"books","instId":"BTC-USDT"},"action":"update"}"#.to_owned(), DecodeError::MissingKey("data")),
        (r#"{"arg":{"channel":"books"},"action":"update","data":[{"asks":[],"bids":[]}]}"#.to_owned(), DecodeError::MissingKey("instId")),
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
            format!(r#"["{price}"{separator}"{size}"{separator}"0"{separator}"3"]"#)
        })
        .collect();
    format!("[{}]", text.join(separator))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn generated_frames_decode_to_the_levels_they_hold(
        bids in proptest::collection::btree_map(1u64..1u64 << 50, 0u64..1u64 << 50, 0..40),
        asks in proptest::collection::btree_map(1u64..1u64 << 50, 0u64..1u64 << 50, 0..40),
        snapshot in any::<bool>(),
        ids in (0u64..1 << 62, 0u64..1 << 62),
        checksum in any::<i32>(),
        seed in any::<u64>(),
        spaced in any::<bool>(),
    ) {
        let bids: Vec<(u64, u64)> = bids.into_iter().rev().collect();
        let asks: Vec<(u64, u64)> = asks.into_iter().collect();
        let (prev, seq) = ids;
        let prev_text = if snapshot { "-1".to_owned() } else { prev.to_string() };
        let mut data = vec![
            format!(r#""bids":{}"#, side_text(&bids, spaced)),
            format!(r#""asks":{}"#, side_text(&asks, spaced)),
            r#""ts":"1652459233856""#.to_owned(),
            format!(r#""checksum":{checksum}"#),
            format!(r#""prevSeqId":{prev_text}"#),
            format!(r#""seqId":{seq}"#),
        ];
        let action = if snapshot { "snapshot" } else { "update" };
        let mut arg = vec![r#""channel":"books""#.to_owned(), r#""instId":"BTC-USDT""#.to_owned()];
        let mut members = vec![
            format!(r#""arg":{}"#, object(&mut arg, seed.rotate_left(3), spaced)),
            format!(r#""action":"{action}""#),
            format!(r#""data":[{}]"#, object(&mut data, seed, spaced)),
        ];
        let frame = object(&mut members, seed.rotate_left(7), spaced);
        let mut update = BookUpdate::default();
        let message = OKX.decode_diff(frame.as_bytes(), 5000, &mut update);
        prop_assert_eq!(message, Ok(Message::Book { stream: b"BTC-USDT" }), "{}", frame);
        let levels = |side: &[(u64, u64)]| -> Vec<Level> {
            side.iter().map(|&(p, q)| Level { price: FixedPoint::from_raw(p), amount: FixedPoint::from_raw(q) }).collect()
        };
        prop_assert_eq!(&update.bids, &levels(&bids));
        prop_assert_eq!(&update.asks, &levels(&asks));
        let first = if snapshot { seq } else { prev };
        prop_assert_eq!((update.is_snapshot, update.first_id, update.last_id), (snapshot, first, seq));
        prop_assert_eq!(update.checksum, (checksum != 0).then_some(checksum as u32));
    }
}

// ---- against the simulator ----

const SYMBOL: &str = "BTC-USDT";
const OTHER_SYMBOL: &str = "ETH-USDT";

const GAPS: &str = r#"orderbook_resyncs_total{exchange="okx",reason="gap"}"#;
const CHECKSUM_RESYNCS: &str = r#"orderbook_resyncs_total{exchange="okx",reason="checksum"}"#;
const SNAPSHOTS_USED: &str = r#"orderbook_snapshot_requests_total{exchange="okx",outcome="used"}"#;

async fn start() -> Harness {
    Harness::start(OKX, SYMBOL, OTHER_SYMBOL).await
}

/// The 2026 form: no snapshot on the stream, `checksum: 0`; each book seeded from a REST
/// snapshot joined to the buffered updates, every published book true. A lost update is
/// a gap, resynchronised from a new REST snapshot; a duplicate is dropped; swapped
/// updates are a gap, never a wrong book.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn okx_syncs_from_rest_snapshots_and_gaps_fetch_again() {
    let harness = start().await;
    harness.synced().await;
    let checked = harness
        .books_stay_true_for(Duration::from_millis(1000))
        .await;
    assert!(checked > 10, "only {checked} books");
    assert!(
        harness.simulator.snapshot_requests(OKX).len() >= 2,
        "one per instrument"
    );
    assert_eq!(harness.metric(GAPS), 0.0);
    assert!(
        harness.simulator.client_pings(OKX) >= 5,
        "text pings, answered by pong"
    );
    let decode_errors = r#"orderbook_decode_errors_total{exchange="okx"}"#;
    assert_eq!(harness.metric(decode_errors), 0.0);
    harness.simulator.duplicate_events(OKX, 5);
    harness
        .books_stay_true_for(Duration::from_millis(500))
        .await;
    assert_eq!(harness.metric(GAPS), 0.0, "duplicates are no gap");
    let used = harness.metric(SNAPSHOTS_USED);
    harness.simulator.skip_events(OKX, 1);
    harness.counted(GAPS, 1.0).await;
    harness.counted(SNAPSHOTS_USED, used + 1.0).await;
    harness.synced().await;
    harness
        .books_stay_true_for(Duration::from_millis(500))
        .await;
    let gaps = harness.metric(GAPS);
    harness.simulator.swap_events(OKX, 2);
    harness.counted(GAPS, gaps + 1.0).await;
    harness
        .books_stay_true_for(Duration::from_millis(500))
        .await;
    harness.synced().await;
    harness.service.stop().await;
}

/// The in-band form (until 2026): each subscription starts with a snapshot on the stream
/// and every update carries a checksum. The books sync with no REST request, every
/// checksum verifies, and a bad one resynchronises that instrument, counted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn okx_syncs_from_snapshots_on_the_stream_and_checks_every_checksum() {
    let harness = start().await;
    // Both books synced from REST first: a request still to come would count below.
    harness.both_books_synced("at start").await;
    // The two instruments' books, synced again on a new connection: from snapshots that
    // came on the stream (counted as used) without a REST request.
    let used = harness.metric(SNAPSHOTS_USED);
    let requests = harness.simulator.snapshot_requests(OKX).len();
    harness.simulator.serve_in_band_snapshots(OKX, true);
    harness.simulator.disconnect(OKX);
    harness.counted(SNAPSHOTS_USED, used + 2.0).await;
    harness.synced().await;
    let checked = harness
        .books_stay_true_for(Duration::from_millis(800))
        .await;
    assert!(checked > 10, "only {checked} books");
    assert_eq!(
        harness.metric(CHECKSUM_RESYNCS),
        0.0,
        "every checksum verified"
    );
    assert_eq!(
        harness.simulator.snapshot_requests(OKX).len(),
        requests,
        "none fetched"
    );
    harness.simulator.corrupt_checksums(OKX, SYMBOL, 1);
    harness.counted(CHECKSUM_RESYNCS, 1.0).await;
    harness.synced().await;
    harness
        .books_stay_true_for(Duration::from_millis(500))
        .await;
    harness.service.stop().await;
}

/// The 64008 notice is a reconnect: connected anew.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upgrade_notice_ends_in_a_new_connection() {
    let harness = start().await;
    harness.synced().await;
    let connections = harness.simulator.connections(OKX);
    let reconnections = r#"orderbook_reconnections_total{exchange="okx"}"#;
    harness.simulator.request_reconnect(OKX);
    harness.counted(reconnections, 1.0).await;
    common::eventually("connected again", in_band::WAIT, || {
        harness.simulator.connections(OKX) > connections
    })
    .await;
    harness.service.stop().await;
}

/// The service, depth 10, with `config`'s venues and instruments, on a new simulator.
async fn on_the_simulator(
    config: TestConfig,
) -> (mergebook::sim::Simulator, mergebook::service::Service) {
    use mergebook::service::{Listeners, Service};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let simulator = mergebook::sim::Simulator::start(listener, 50, 5).unwrap();
    let mut config = config.set("service.depth", 10).build();
    simulator.point(&mut config);
    let service = Service::start(config, Listeners::loopback().await.unwrap()).unwrap();
    (simulator, service)
}

/// A SWAP sized in contracts is merged in the base currency: every synced book is the
/// venue's true book with each size times the configured contract size.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_swap_is_merged_as_contracts_times_the_contract_size() {
    let (simulator, service) = on_the_simulator(
        TestConfig::new()
            .set("venues.okx.mode", "diff")
            .instrument("BTC-PERP", &[(OKX, "BTC-USDT-SWAP")])
            .contract_size(OKX, "10"),
    )
    .await;
    let mut summaries = service.summaries(0);
    let synced = |s: &mergebook::merger::summary::Summary| s.venue_state(OKX) == VenueState::Synced;
    tokio::time::timeout(in_band::WAIT, summaries.wait_for(|s| synced(s)))
        .await
        .unwrap()
        .unwrap();
    let ten: FixedPoint = "10".parse().unwrap();
    let mut checked = 0;
    while checked < 10 {
        summaries.changed().await.unwrap();
        let summary = summaries.borrow_and_update().clone();
        if !synced(&summary) {
            continue;
        }
        let merged =
            |levels: &[mergebook::merger::kway::MergedLevel]| -> Vec<(FixedPoint, FixedPoint)> {
                levels.iter().map(|l| (l.price, l.amount)).collect()
            };
        let (bids, asks) = (
            merged(summary.book.bids.as_slice()),
            merged(summary.book.asks.as_slice()),
        );
        let in_base = |levels: &mergebook::book::Levels| -> Vec<(FixedPoint, FixedPoint)> {
            let levels = levels.as_slice().iter().take(10);
            levels
                .map(|l| (l.price, l.amount.checked_mul(ten).unwrap()))
                .collect()
        };
        let had = simulator.with_diff_history(OKX, "BTC-USDT-SWAP", |truths| {
            truths
                .iter()
                .any(|truth| in_base(&truth.bids) == bids && in_base(&truth.asks) == asks)
        });
        assert!(
            had,
            "a book the venue never had, in the base currency: {:?}",
            summary.book
        );
        checked += 1;
    }
    service.stop().await;
}

/// Snapshot mode (the venue's default): `books5` on the simulator, each message the top 5
/// levels a side as the simulator generated them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn books5_in_snapshot_mode_syncs_and_follows_the_venue() {
    let (simulator, service) =
        on_the_simulator(TestConfig::new().instrument("ETH-BTC", &[(OKX, "ETH-BTC")])).await;
    let mut summaries = service.summaries(0);
    let synced = |s: &mergebook::merger::summary::Summary| s.venue_state(OKX) == VenueState::Synced;
    tokio::time::timeout(in_band::WAIT, summaries.wait_for(|s| synced(s)))
        .await
        .unwrap()
        .unwrap();
    let first = summaries.borrow().book;
    assert_eq!(
        (first.bids.len(), first.asks.len()),
        (5, 5),
        "books5: 5 a side"
    );
    let sent = simulator
        .last_sent(OKX, "books5:ETH-BTC")
        .expect("a books5 frame");
    assert!(sent.contains(r#""channel":"books5""#), "{sent}");
    tokio::time::timeout(
        in_band::WAIT,
        summaries.wait_for(|s| synced(s) && s.book != first),
    )
    .await
    .unwrap()
    .unwrap();
    service.stop().await;
}
