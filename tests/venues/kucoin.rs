//! KuCoin spot: the recordings replayed against a slow reference of the documented
//! algorithm (the per-change sequence filter and the changes priced "0" included), the
//! conformance row, and the venue against the simulator: its token, a lost event, a
//! failing token request, a book its top-100 snapshot no longer proves.

use crate::common;
use crate::common::config::TestConfig;
use crate::conformance::{Malformed, Read, Row};
use crate::generated::{object, pair_side};
use crate::reference::{self, ReferenceRun, ReferenceSide};
use common::in_band::{Harness, Sides, WAIT};
use mergebook::book::{BookUpdate, Level, Side, TopBook};
use mergebook::fixed::{FixedPoint, FixedPointError};
use mergebook::record::timeline::{self, RecordedFrame};
use mergebook::replay::{self, BadFrame};
use mergebook::service::{Listeners, Service};
use mergebook::sim::Simulator;
use mergebook::venue::{DecodeError, Message, VenueId};
use proptest::prelude::*;
use std::path::PathBuf;

const KUCOIN: VenueId = VenueId::Kucoin;

/// A recorded symbol and what SOURCES.md's verification found for it.
struct Recorded {
    file: &'static str,
    symbol: &'static str,
    /// Messages applied after the snapshot, messages dropped as older than it and changes
    /// priced "0"; `None` for a book whose prices have more decimals than a `FixedPoint`
    /// holds (10, where it keeps 8), which is refused.
    counts: Option<(usize, usize, usize)>,
}

const SNX: &str = "timeline_level2_SNX-BTC_2021-04-25.jsonl";
const ANKR_EQZ: &str = "timeline_level2_ANKR-BTC_EQZ-BTC_2021-04-25.jsonl";

const RECORDED: [Recorded; 3] = [
    Recorded {
        file: SNX,
        symbol: "SNX-BTC",
        counts: Some((600, 4, 207)),
    },
    Recorded {
        file: ANKR_EQZ,
        symbol: "EQZ-BTC",
        counts: Some((40, 2, 24)),
    },
    Recorded {
        file: ANKR_EQZ,
        symbol: "ANKR-BTC",
        counts: None,
    },
];

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(format!(
        "{}/tests/fixtures/kucoin/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
}

fn fp(text: &str) -> FixedPoint {
    text.parse().unwrap()
}

// ---- the reference: serde_json and sorted maps, the documented algorithm ----

#[derive(Default)]
struct ReferenceBook {
    bids: ReferenceSide,
    asks: ReferenceSide,
    /// The book's sequence: the snapshot's, then each applied message's `sequenceEnd`.
    sequence: Option<u64>,
    buffered: Vec<serde_json::Value>,
    tops: Vec<Sides>,
    applied: usize,
    dropped: usize,
    zero_priced: usize,
}

fn number(value: &serde_json::Value) -> u64 {
    match value {
        serde_json::Value::String(text) => text.parse().unwrap(),
        other => other.as_u64().unwrap(),
    }
}

impl ReferenceBook {
    fn top(&self) -> Sides {
        reference::top(&self.bids, &self.asks, 10)
    }

    fn on_snapshot(&mut self, body: &serde_json::Value) {
        let data = &body["data"];
        for (side, book) in [("bids", &mut self.bids), ("asks", &mut self.asks)] {
            book.clear();
            for level in data[side].as_array().unwrap() {
                book.insert(
                    fp(level[0].as_str().unwrap()),
                    fp(level[1].as_str().unwrap()),
                );
            }
        }
        self.sequence = Some(number(&data["sequence"]));
        for message in std::mem::take(&mut self.buffered) {
            self.on_message(&message);
        }
        let synced = self.tops.len() - self.applied;
        self.tops.truncate(synced);
        self.tops.push(self.top());
    }

    /// docs/protocols.md, KuCoin: drop `sequenceEnd <= sequence`; a kept message starts
    /// at most at `sequence + 1`; of its changes only those numbered after the book's
    /// sequence apply, a price of "0" none; a size of "0" deletes.
    fn on_message(&mut self, data: &serde_json::Value) {
        let Some(sequence) = self.sequence else {
            self.buffered.push(data.clone());
            return;
        };
        let (start, end) = (number(&data["sequenceStart"]), number(&data["sequenceEnd"]));
        if end <= sequence {
            self.dropped += 1;
            return;
        }
        assert!(start <= sequence + 1, "a message after a gap");
        for (side, book) in [("bids", &mut self.bids), ("asks", &mut self.asks)] {
            let mut changes: Vec<(u64, FixedPoint, FixedPoint)> = data["changes"][side]
                .as_array()
                .unwrap()
                .iter()
                .map(|change| {
                    let text = |at: usize| change[at].as_str().unwrap();
                    (text(2).parse().unwrap(), fp(text(0)), fp(text(1)))
                })
                .collect();
            changes.sort_by_key(|&(id, _, _)| id);
            for (id, price, size) in changes {
                if id <= sequence || price.is_zero() {
                    continue;
                }
                match size.is_zero() {
                    true => drop(book.remove(&price)),
                    false => drop(book.insert(price, size)),
                }
            }
        }
        self.sequence = Some(end);
        self.applied += 1;
        self.tops.push(self.top());
    }
}

/// The reference run over a recording's frames of `symbol`.
fn reference(frames: &[RecordedFrame], symbol: &str) -> ReferenceBook {
    let mut book = ReferenceBook::default();
    for frame in frames {
        let value: serde_json::Value = serde_json::from_str(&frame.raw).unwrap();
        if let Some(url) = &frame.rest_url {
            if url.ends_with(&format!("symbol={symbol}")) {
                book.on_snapshot(&value);
            }
            continue;
        }
        let data = &value["data"];
        if value["subject"] == "trade.l2update" && data["symbol"] == symbol {
            for side in ["bids", "asks"] {
                let changes = data["changes"][side].as_array().unwrap();
                book.zero_priced += changes.iter().filter(|change| change[0] == "0").count();
            }
            book.on_message(data);
        }
    }
    book
}

fn replayed(
    symbol: &str,
    frames: Vec<RecordedFrame>,
) -> (Vec<Sides>, replay::DiffBook, Vec<BadFrame>) {
    reference::replayed(KUCOIN, symbol, frames, 100)
}

#[test]
fn every_recorded_symbol_replays_to_the_reference_book_with_the_sequence_rules_verified() {
    for recorded in &RECORDED {
        let frames = timeline::load_frames(&fixture(recorded.file)).unwrap();
        let context = recorded.symbol;
        let (published, book, refused) = replayed(recorded.symbol, frames.clone());
        // The frames refused are those with a number of 10 decimals, whichever symbol they
        // are of (a frame is decoded before its symbol is known).
        for error in &refused {
            let too_precise = matches!(
                error,
                BadFrame::Decode(DecodeError::Number {
                    error: FixedPointError::TooPrecise,
                    ..
                })
            );
            assert!(too_precise, "{context}: {error}");
        }
        let Some((applied, dropped, zero_priced)) = recorded.counts else {
            let stats = book.stats;
            assert!(
                stats.decode_errors + stats.snapshots_refused > 0,
                "{context}: {stats:?}"
            );
            assert!(published.is_empty(), "{context}: {published:?}");
            assert_eq!(stats.applied, 0, "{context}");
            continue;
        };
        let reference = reference(&frames, recorded.symbol);
        assert_eq!(
            (reference.applied, reference.dropped, reference.zero_priced),
            (applied, dropped, zero_priced),
            "{context}: SOURCES.md's counts"
        );
        reference::assert_replay_is_the_reference(
            (&published, &book),
            ReferenceRun {
                tops: &reference.tops,
                bids: &reference.bids,
                asks: &reference.asks,
                applied: reference.applied,
                dropped: reference.dropped,
            },
            context,
        );
    }
}

/// KuCoin's documented example of a message overlapping its snapshot (sequence 16): of
/// `[3988.59, 3, 16]`, `[3988.61, 0, 19]` and `[3988.62, 8, 15]` only the delete numbered
/// 19 applies, and the bid numbered 18; the replay's book is the documented result.
#[test]
fn of_a_message_overlapping_the_snapshot_only_the_later_changes_apply() {
    let frame = |raw: &str, rest_url: Option<&str>| RecordedFrame {
        received_ns: 0,
        raw: raw.to_owned(),
        rest_url: rest_url.map(str::to_owned),
    };
    let rest = "https://api.kucoin.com/api/v1/market/orderbook/level2_100?symbol=BTC-USDT";
    let message = |members: &str| {
        format!(
            r#"{{"type":"message","topic":"/market/level2:BTC-USDT","subject":"trade.l2update","data":{{"symbol":"BTC-USDT",{members}}}}}"#
        )
    };
    let frames = vec![
        frame(
            &message(
                r#""sequenceStart":15,"sequenceEnd":19,"changes":{"asks":[["3988.59","3","16"],["3988.61","0","19"],["3988.62","8","15"]],"bids":[["3988.50","44","18"],["0","0","17"]]}"#,
            ),
            None,
        ),
        frame(
            r#"{"code":"200000","data":{"sequence":"16","asks":[["3988.59","3"],["3988.60","47"],["3988.61","32"],["3988.62","8"]],"bids":[["3988.51","56"],["3988.50","15"],["3988.49","100"],["3988.48","10"]]}}"#,
            Some(rest),
        ),
        frame(
            &message(
                r#""sequenceStart":20,"sequenceEnd":20,"changes":{"asks":[],"bids":[["3988.47","1","20"]]}"#,
            ),
            None,
        ),
    ];
    let (published, book, refused) = replayed("BTC-USDT", frames);
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!((book.stats.gaps, book.stats.applied), (0, 2));
    let level = |price: &str, amount: &str| Level {
        price: fp(price),
        amount: fp(amount),
    };
    let synced = (
        vec![
            level("3988.51", "56"),
            level("3988.50", "44"),
            level("3988.49", "100"),
            level("3988.48", "10"),
        ],
        vec![
            level("3988.59", "3"),
            level("3988.60", "47"),
            level("3988.62", "8"),
        ],
    );
    assert_eq!(published[0], synced);
    let mut last = synced;
    last.0.push(level("3988.47", "1"));
    assert_eq!(published.last(), Some(&last));
}

/// A book built from a full top-100 snapshot is published while it knows the depth on
/// each side: deleting the bids one by one, it is rebuilt (a new snapshot asked for) when
/// fewer than 10 remain at or above the snapshot's last, never published with fewer.
#[test]
fn a_book_that_no_longer_knows_its_depth_below_a_top_100_snapshot_is_rebuilt() {
    let rest = "https://api.kucoin.com/api/v1/market/orderbook/level2_100?symbol=BTC-USDT";
    let bids: Vec<String> = (0..100)
        .map(|i| format!(r#"["{}","1"]"#, 1000 - i))
        .collect();
    let snapshot = format!(
        r#"{{"code":"200000","data":{{"sequence":"100","asks":[["2000","1"]],"bids":[{}]}}}}"#,
        bids.join(",")
    );
    let message = |id: u64, bids: &str| RecordedFrame {
        received_ns: 0,
        raw: format!(
            r#"{{"type":"message","topic":"/market/level2:BTC-USDT","subject":"trade.l2update","data":{{"symbol":"BTC-USDT","sequenceStart":{id},"sequenceEnd":{id},"changes":{{"asks":[],"bids":[{bids}]}}}}}}"#
        ),
        rest_url: None,
    };
    // A message the snapshot holds, which asks for it.
    let mut frames = vec![
        message(100, r#"["1000","1","100"]"#),
        RecordedFrame {
            received_ns: 0,
            raw: snapshot,
            rest_url: Some(rest.to_owned()),
        },
    ];
    // The best bids deleted one after another; a bid set below the snapshot's range.
    for (index, price) in (901..=1000).rev().enumerate() {
        let id = 101 + index as u64;
        frames.push(message(
            id,
            &format!(r#"["{price}","0","{id}"],["1","5","{id}"]"#),
        ));
    }
    let (published, book, refused) = replayed("BTC-USDT", frames);
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!(book.stats.unproven, 1, "{:?}", book.stats);
    assert!(published.iter().all(|(bids, _)| bids.len() == 10));
    // The last book published held the snapshot's ten bids from 910 down to 901.
    let last = published.last().unwrap();
    assert_eq!(last.0.last().unwrap().price, fp("901"));
}

// ---- conformance ----

/// The frames the venue's simulator writes where a kind was never recorded: a top-50 push.
fn top_push() -> Vec<u8> {
    let mut book = TopBook::default();
    book.bids.push(Level {
        price: fp("0.068"),
        amount: fp("1.5"),
    });
    book.asks.push(Level {
        price: fp("0.069"),
        amount: fp("2"),
    });
    book.venue_sequence = 1_729_822_226_746;
    let mut frame = Vec::new();
    KUCOIN
        .simulated()
        .encode_book("level2Depth50:ETH-BTC", &book, 8, &mut frame);
    frame
}

pub fn row() -> Row {
    let recorded = timeline::load_frames(&fixture(SNX)).unwrap();
    let mut frames: Vec<(Read, Vec<u8>)> = recorded
        .into_iter()
        .take(60)
        .map(|frame| {
            let read = match frame.rest_url {
                Some(_) => Read::RestSnapshot,
                None => Read::Diff,
            };
            (read, frame.raw.into_bytes())
        })
        .collect();
    frames.push((Read::Snapshot, top_push()));
    Row {
        venue: KUCOIN,
        frames,
        malformed: malformed_frames(),
    }
}

fn malformed_frames() -> Vec<Malformed> {
    let message = |data: &str| {
        format!(
            r#"{{"type":"message","topic":"/market/level2:BTC-USDT","subject":"trade.l2update","data":{{{data}}}}}"#
        )
    };
    let changes = |bids: &str| format!(r#""changes":{{"asks":[],"bids":[{bids}]}}"#);
    let number = |error| DecodeError::Number { at: 0, error };
    let case = |read, frame: String, error| Malformed {
        exact: false,
        ..Malformed::exact(read, frame, 5000, error)
    };
    let diff = |frame, error| case(Read::Diff, frame, error);
    let ids = r#""symbol":"BTC-USDT","sequenceStart":5,"sequenceEnd":9"#;
    vec![
        diff(
            message(&format!(r#""symbol":"BTC-USDT","sequenceEnd":9,{}"#, changes(""))),
            DecodeError::MissingKey("sequenceStart"),
        ),
        diff(
            message(&format!(r#""symbol":"BTC-USDT","sequenceStart":5,{}"#, changes(""))),
            DecodeError::MissingKey("sequenceEnd"),
        ),
        diff(
            message(&format!(r#""sequenceStart":5,"sequenceEnd":9,{}"#, changes(""))),
            DecodeError::MissingKey("symbol"),
        ),
        diff(message(ids), DecodeError::MissingKey("changes")),
        diff(
            message(&format!(r#"{ids},"changes":{{"asks":[]}}"#)),
            DecodeError::MissingKey("bids"),
        ),
        diff(
            message(&format!(r#"{ids},"sequenceEnd":9,{}"#, changes(""))),
            DecodeError::DuplicateKey("sequenceEnd"),
        ),
        diff(
            message(&format!(
                r#""symbol":"BTC-USDT","sequenceStart":9,"sequenceEnd":5,{}"#,
                changes("")
            )),
            DecodeError::Invalid("a message with sequenceStart greater than sequenceEnd"),
        ),
        diff(
            message(&format!(r#"{ids},{}"#, changes(r#"["1","1","10"]"#))),
            DecodeError::Invalid("a change numbered after its message's sequenceEnd"),
        ),
        diff(
            message(&format!(r#"{ids},{}"#, changes(r#"["1","1"]"#))),
            DecodeError::Unexpected {
                at: 0,
                expected: "',' after a change's size",
            },
        ),
        diff(
            message(&format!(r#"{ids},{}"#, changes(r#"["x","1","6"]"#))),
            number(FixedPointError::InvalidCharacter),
        ),
        diff(
            message(&format!(r#"{ids},{}"#, changes(r#"["1e3","1","6"]"#))),
            number(FixedPointError::Exponent),
        ),
        diff(
            message(&format!(r#"{ids},{}"#, changes(r#"["1","1","-6"]"#))),
            DecodeError::Unexpected {
                at: 0,
                expected: "an unsigned integer",
            },
        ),
        diff(
            format!(r#"{{"topic":"/market/level2:BTC-USDT","data":{{{ids},{}}}}}"#, changes("")),
            DecodeError::MissingKey("type"),
        ),
        diff(
            format!("{} x", message(&format!("{ids},{}", changes("")))),
            DecodeError::TrailingBytes { at: 0 },
        ),
        case(
            Read::Snapshot,
            r#"{"type":"message","topic":"/spotMarket/level2Depth5:BTC-USDT","subject":"level2","data":{"asks":[],"bids":[["1","1"],["2","1"]],"timestamp":1}}"#.to_owned(),
            DecodeError::Unsorted(Side::Bid),
        ),
        case(
            Read::Snapshot,
            r#"{"type":"message","topic":"/spotMarket/level2Depth5:BTC-USDT","subject":"level2","data":{"asks":[],"bids":[]}}"#.to_owned(),
            DecodeError::MissingKey("timestamp"),
        ),
        case(
            Read::RestSnapshot,
            r#"{"code":"200000","data":{"sequence":"1","asks":[]}}"#.to_owned(),
            DecodeError::MissingKey("bids"),
        ),
        case(
            Read::RestSnapshot,
            r#"{"code":"200000","data":{"asks":[],"bids":[]}}"#.to_owned(),
            DecodeError::MissingKey("sequence"),
        ),
        case(
            Read::RestSnapshot,
            r#"{"code":"400100","msg":"invalid","data":{"sequence":"1","asks":[],"bids":[]}}"#.to_owned(),
            DecodeError::Invalid("a REST answer whose code is not 200000"),
        ),
        case(
            Read::RestSnapshot,
            r#"{"code":"200000","data":{"sequence":"1","asks":[["2","1"],["1","1"]],"bids":[]}}"#.to_owned(),
            DecodeError::Unsorted(Side::Ask),
        ),
    ]
}

// ---- generated frames ----

/// A side of changes, each numbered, some priced "0".
fn change_side(levels: &[(u64, u64, u64)], spaced: bool) -> String {
    let separator = if spaced { ", " } else { "," };
    let text: Vec<String> = levels
        .iter()
        .map(|&(price, size, id)| {
            let (price, size) = (FixedPoint::from_raw(price), FixedPoint::from_raw(size));
            format!(r#"["{price}"{separator}"{size}"{separator}"{id}"]"#)
        })
        .collect();
    format!("[{}]", text.join(separator))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any member order, whitespace and unknown members: each change that is a level,
    /// with its own number, the changes priced "0" left out; and the top N of a push.
    #[test]
    fn generated_frames_decode_to_the_levels_they_hold(
        bids in proptest::collection::vec((0u64..1u64 << 50, 0u64..1u64 << 50, 0u64..1000), 0..30),
        asks in proptest::collection::vec((0u64..1u64 << 50, 0u64..1u64 << 50, 0u64..1000), 0..30),
        first in 1u64..u64::MAX / 2,
        seed in any::<u64>(),
        spaced in any::<bool>(),
    ) {
        let number = |side: &[(u64, u64, u64)]| -> Vec<(u64, u64, u64)> {
            side.iter().map(|&(price, size, id)| (price, size, first + id)).collect()
        };
        let (bids, asks) = (number(&bids), number(&asks));
        let last = first + 1000;
        let mut changes = vec![
            format!(r#""asks":{}"#, change_side(&asks, spaced)),
            format!(r#""bids":{}"#, change_side(&bids, spaced)),
        ];
        let mut data = vec![
            format!(r#""sequenceStart":{first}"#),
            format!(r#""sequenceEnd":{last}"#),
            r#""symbol":"BTC-USDT""#.to_owned(),
            format!(r#""changes":{}"#, object(&mut changes, seed, spaced)),
            r#""time":1729816425625"#.to_owned(),
            r#""unknown":{"x":[1,2]}"#.to_owned(),
        ];
        let mut members = vec![
            r#""type":"message""#.to_owned(),
            r#""topic":"/market/level2:BTC-USDT""#.to_owned(),
            r#""subject":"trade.l2update""#.to_owned(),
            format!(r#""data":{}"#, object(&mut data, seed.rotate_left(5), spaced)),
        ];
        let frame = object(&mut members, seed.rotate_left(7), spaced);
        let mut update = BookUpdate::default();
        let message = KUCOIN.decode_diff(frame.as_bytes(), 5000, &mut update);
        prop_assert_eq!(message, Ok(Message::Book { stream: b"BTC-USDT" }), "{}", frame);
        let held = |side: &[(u64, u64, u64)]| -> (Vec<Level>, Vec<u64>) {
            side.iter()
                .filter(|&&(price, _, _)| price != 0)
                .map(|&(p, q, id)| (Level { price: FixedPoint::from_raw(p), amount: FixedPoint::from_raw(q) }, id))
                .unzip()
        };
        let ((bid_levels, bid_ids), (ask_levels, ask_ids)) = (held(&bids), held(&asks));
        prop_assert_eq!(&update.bids, &bid_levels);
        prop_assert_eq!(&update.asks, &ask_levels);
        prop_assert_eq!(&update.change_ids.bids, &bid_ids);
        prop_assert_eq!(&update.change_ids.asks, &ask_ids);
        prop_assert_eq!((update.first_id, update.last_id), (first, last));
        prop_assert_eq!(update.exchange_time_ns, 1_729_816_425_625_000_000);
    }

    /// A top-N push, whatever its members' order: its best levels, timed and numbered by
    /// its `timestamp`.
    #[test]
    fn generated_pushes_decode_to_their_top(
        bids in proptest::collection::btree_map(1u64..1u64 << 50, 1u64..1u64 << 50, 0..60),
        asks in proptest::collection::btree_map(1u64..1u64 << 50, 1u64..1u64 << 50, 0..60),
        seed in any::<u64>(),
        spaced in any::<bool>(),
    ) {
        let bids: Vec<(u64, u64)> = bids.into_iter().rev().collect();
        let asks: Vec<(u64, u64)> = asks.into_iter().collect();
        let mut data = vec![
            format!(r#""asks":{}"#, pair_side(&asks, spaced)),
            format!(r#""bids":{}"#, pair_side(&bids, spaced)),
            r#""timestamp":1729822226746"#.to_owned(),
        ];
        let mut members = vec![
            r#""type":"message""#.to_owned(),
            r#""topic":"/spotMarket/level2Depth50:BTC-USDT""#.to_owned(),
            r#""subject":"level2""#.to_owned(),
            format!(r#""data":{}"#, object(&mut data, seed, spaced)),
        ];
        let frame = object(&mut members, seed.rotate_left(3), spaced);
        let mut top = TopBook::default();
        let message = KUCOIN.decode(frame.as_bytes(), 10, &mut top);
        prop_assert_eq!(message, Ok(Message::Book { stream: b"BTC-USDT" }), "{}", frame);
        let kept = |side: &[(u64, u64)]| -> Vec<Level> {
            side.iter().take(10).map(|&(p, q)| Level { price: FixedPoint::from_raw(p), amount: FixedPoint::from_raw(q) }).collect()
        };
        let (kept_bids, kept_asks) = (kept(&bids), kept(&asks));
        prop_assert_eq!(top.bids.as_slice(), kept_bids.as_slice());
        prop_assert_eq!(top.asks.as_slice(), kept_asks.as_slice());
        prop_assert_eq!(top.venue_sequence, 1_729_822_226_746);
    }
}

// ---- against the simulator ----

/// Synced from the simulator's top-100 books over a connection its token request named; a
/// lost event found by the sequences, and only that symbol's book rebuilt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_event_resyncs_that_symbol_only() {
    let harness = Harness::start(KUCOIN, "BTC-USDT", "ETH-USDT").await;
    harness
        .a_lost_event_rebuilds_that_book_alone("BTC-USDT")
        .await;
    // One token a connection, and no connection without one.
    let connections = harness.simulator.connections(KUCOIN);
    assert_eq!(harness.simulator.token_requests(KUCOIN), connections);
    assert_eq!(harness.simulator.refused_for_token(KUCOIN), 0);
    harness.service.stop().await;
}

/// The token request fails twice (HTTP 503): each failure counted as a connection error
/// of its own reason, the request made again after the backoff, within the venue's budget
/// of connection attempts, and the books synced over the connection the third names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_token_request_is_counted_and_retried_within_budget() {
    let simulator = Simulator::start(
        tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
        50,
        5,
    )
    .unwrap();
    simulator.fail_token_requests(KUCOIN, 2);
    let mut config = TestConfig::new()
        .set("feed.backoff_initial_ms", 20)
        .set("feed.backoff_max_ms", 200)
        .instrument("BTC-USDT", &[(KUCOIN, "BTC-USDT")])
        .build();
    simulator.point(&mut config);
    let service = Service::start(config, Listeners::loopback().await.unwrap()).unwrap();
    let mut summaries = service.summaries(0);
    let synced = summaries.wait_for(|summary| {
        summary.venue_state(KUCOIN) == mergebook::merger::summary::VenueState::Synced
    });
    tokio::time::timeout(WAIT, synced).await.unwrap().unwrap();
    let metric = |series: &str| common::service_metric(&service, series);
    let token_errors = r#"orderbook_connection_errors_total{exchange="kucoin",reason="token"}"#;
    assert_eq!(metric(token_errors), 2.0);
    assert_eq!(simulator.token_requests(KUCOIN), 3);
    let attempts = r#"orderbook_connect_attempts_total{exchange="kucoin"}"#;
    assert_eq!(metric(attempts), 3.0);
    // The one connection made, on the third token.
    assert_eq!(simulator.connections(KUCOIN), 1);
    service.stop().await;
}

/// The reader's error names the request and the venue's answer.
#[test]
fn a_token_answer_without_a_token_is_a_clear_error() {
    let streams = KUCOIN.streams();
    let refused =
        streams.token_connection(br#"{"code":"400003","msg":"KC-API-KEY not exists"}"#, "c1");
    assert_eq!(
        refused.unwrap_err(),
        r#"refused: code "400003", "KC-API-KEY not exists""#
    );
    let no_token =
        streams.token_connection(br#"{"code":"200000","data":{"instanceServers":[]}}"#, "c1");
    assert_eq!(no_token.unwrap_err(), "no token in the answer");
    let answer = KUCOIN
        .simulated()
        .token_answer("wss://ws-api-spot.kucoin.com/", "2neAiuYvAU61ZDXANAGAsiL4")
        .unwrap();
    let connection = streams.token_connection(answer.as_bytes(), "c1").unwrap();
    assert_eq!(
        connection.url,
        "wss://ws-api-spot.kucoin.com/?token=2neAiuYvAU61ZDXANAGAsiL4&connectId=c1"
    );
    assert_eq!(
        connection.recorded_url,
        "wss://ws-api-spot.kucoin.com/?token=TOKEN&connectId=c1"
    );
    assert_eq!(
        connection.ping_every,
        Some(std::time::Duration::from_secs(18))
    );
}

/// `mergebook replay diff` of the recordings: the last summary's top is the reference
/// book's.
#[test]
fn mergebook_replay_follows_a_kucoin_recording() {
    for (file, symbol) in [(SNX, "SNX-BTC"), (ANKR_EQZ, "EQZ-BTC")] {
        let path = fixture(file);
        let venue_file = format!("kucoin={}", path.display());
        let frames = timeline::load_frames(&path).unwrap();
        let reference = reference(&frames, symbol);
        let only = format!("kucoin={symbol}");
        let arguments = ["replay", "diff", "--venue", &venue_file, "--symbol", &only];
        let (stdout, stderr) = common::run_ok(&arguments);
        let last = stdout
            .lines()
            .rev()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
            .find(|summary| summary["instrument"] == symbol.replace('-', ""))
            .expect("a summary of the symbol");
        let top = |side: &str| last[side][0]["price"].as_str().map(fp);
        let best_bid = reference.bids.last_key_value().map(|(price, _)| *price);
        let best_ask = reference.asks.first_key_value().map(|(price, _)| *price);
        assert_eq!(top("bids"), best_bid, "{stderr}");
        assert_eq!(top("asks"), best_ask, "{stderr}");
    }
}

/// The decoder's map of what a message other than a book is: the welcome, acks and
/// refusals by id, pongs.
#[test]
fn answers_and_greetings_are_classified() {
    let mut update = BookUpdate::default();
    let mut read = |frame: &str| {
        KUCOIN
            .decode_diff(frame.as_bytes(), 10, &mut update)
            .map(|message| format!("{message:?}"))
    };
    let message = |message: Message<'_>| Ok(format!("{message:?}"));
    assert_eq!(
        read(r#"{"id":"NSkIrWGB1s","type":"welcome"}"#),
        message(Message::Ignored)
    );
    assert!(
        KUCOIN
            .streams()
            .is_welcome(br#"{"id":"NSkIrWGB1s","type":"welcome"}"#)
    );
    assert_eq!(
        read(r#"{"id":"3","type":"ack"}"#),
        message(Message::SubscribeResult {
            accepted: true,
            acked: mergebook::venue::Acked::Request(3)
        })
    );
    assert_eq!(
        read(r#"{"id":"3","type":"error","code":404,"data":"topic does not exist"}"#),
        message(Message::SubscribeResult {
            accepted: false,
            acked: mergebook::venue::Acked::Request(3)
        })
    );
    assert_eq!(
        read(r#"{"id":"1729816425","type":"pong"}"#),
        message(Message::Heartbeat)
    );
    // The futures feed's messages are not this venue's books.
    let futures = std::fs::read_to_string(fixture(
        "futures_uta_obu_and_classic_trimmed_frames_2026-09-22_probe_notes.jsonl",
    ))
    .unwrap();
    let classic = futures
        .lines()
        .find(|line| line.contains("/contractMarket/level2:"))
        .unwrap();
    assert_eq!(read(classic), message(Message::Ignored));
}

/// With a key's `key:secret:passphrase` configured, diff books start from the venue's whole
/// book, each request signed: the simulator checks every signature, refusing a wrong one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_key_books_start_from_the_whole_book_by_signed_requests() {
    let simulator = Simulator::start(
        tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap(),
        50,
        5,
    )
    .unwrap();
    simulator.check_signatures(KUCOIN, "kucoin-test-secret", "test-passphrase");
    let key_file =
        std::env::temp_dir().join(format!("mergebook-kucoin-key-{}", std::process::id()));
    std::fs::write(&key_file, "kucoin-key:kucoin-test-secret:test-passphrase\n").unwrap();
    let mut config = TestConfig::new()
        .set("venues.kucoin.mode", "diff")
        .set("venues.kucoin.api_key_file", key_file.display().to_string())
        .instrument("BTC-USDT", &[(KUCOIN, "BTC-USDT")])
        .instrument("ETH-USDT", &[(KUCOIN, "ETH-USDT")])
        .build();
    simulator.point(&mut config);
    let service = Service::start(config, Listeners::loopback().await.unwrap()).unwrap();
    for instrument in 0..2 {
        let mut summaries = service.summaries(instrument);
        let synced = summaries.wait_for(|summary| {
            summary.venue_state(KUCOIN) == mergebook::merger::summary::VenueState::Synced
        });
        tokio::time::timeout(WAIT, synced).await.unwrap().unwrap();
    }
    let (signed, refused) = simulator.signed_snapshots(KUCOIN);
    assert!(
        signed >= 2 && refused == 0,
        "{signed} signed, {refused} refused"
    );
    service.stop().await;
    let _ = std::fs::remove_file(key_file);
}

// ---- futures, on the unified sockets' `obu` channel ----

const FUTURES: VenueId = VenueId::KucoinFutures;
const PROBE: &str = "futures_uta_obu_and_classic_trimmed_frames_2026-09-22_probe_notes.jsonl";

/// The probe's frames, as sent and received.
fn probe_frames() -> Vec<String> {
    let text = std::fs::read_to_string(fixture(PROBE)).unwrap();
    text.lines().map(str::to_owned).collect()
}

/// A side as serde_json reads it: `[["price","size"],…]`.
fn pairs(side: &serde_json::Value) -> Vec<Level> {
    let side = side.as_array().unwrap();
    let level = |pair: &serde_json::Value| Level {
        price: fp(pair[0].as_str().unwrap()),
        amount: fp(pair[1].as_str().unwrap()),
    };
    side.iter().map(level).collect()
}

/// Every recorded `obu` message decodes to what serde_json reads in it (levels, `O..C`,
/// the matching time `M`, snapshot or delta), in a text frame and a binary one alike; the
/// answers, the pong and the welcome are what they say; the classic feed's frames are no
/// books of this venue.
#[test]
fn recorded_obu_messages_decode_to_their_levels_sequences_and_times() {
    let mut books = 0;
    let mut update = BookUpdate::default();
    for frame in probe_frames() {
        let value: serde_json::Value = serde_json::from_str(&frame).unwrap();
        let message = FUTURES.decode_diff(frame.as_bytes(), 5000, &mut update);
        let binary = format!(
            "{:?}",
            FUTURES.decode_diff_binary(frame.as_bytes(), 5000, &mut BookUpdate::default())
        );
        assert_eq!(format!("{message:?}"), binary, "{frame}");
        if value["T"] == "obu.FUTURES" {
            let data = &value["d"];
            let symbol = data["s"].as_str().unwrap();
            assert_eq!(
                message,
                Ok(Message::Book {
                    stream: symbol.as_bytes()
                }),
                "{frame}"
            );
            assert_eq!(update.bids, pairs(&data["b"]), "{frame}");
            assert_eq!(update.asks, pairs(&data["a"]), "{frame}");
            let ids = (data["O"].as_u64().unwrap(), data["C"].as_u64().unwrap());
            assert_eq!((update.first_id, update.last_id), ids, "{frame}");
            assert_eq!(
                update.exchange_time_ns,
                data["M"].as_u64().unwrap(),
                "{frame}"
            );
            assert_eq!(update.is_snapshot, value["t"] == "snapshot", "{frame}");
            books += 1;
            continue;
        }
        let expected = if value.get("action").is_some() || value["type"] == "ping" {
            continue; // a request of the client's
        } else if let Some(accepted) = value["result"].as_bool() {
            // The probe's ids are its own words ("p1"): the oldest request waiting.
            Message::SubscribeResult {
                accepted,
                acked: mergebook::venue::Acked::Oldest,
            }
        } else if value["type"] == "pong" {
            Message::Heartbeat
        } else {
            Message::Ignored
        };
        assert_eq!(message, Ok(expected), "{frame}");
    }
    assert_eq!(books, 3);
}

/// A snapshot-then-delta frame of `obu`, of XBTUSDTM.
fn obu(kind: &str, (first, last): (u64, u64), bids: &str, asks: &str) -> String {
    format!(
        r#"{{"T":"obu.FUTURES","dp":"increment@10ms","t":"{kind}","P":1790114459840641662,"d":{{"a":[{asks}],"b":[{bids}],"C":{last},"s":"XBTUSDTM","M":1790114459839000000,"O":{first}}}}}"#
    )
}

/// The `obu` rule (docs/protocols.md, KuCoin futures) replayed: a snapshot replaces the
/// book; a delta applies where `O <= last + 1` and `C > last`; one the book has is dropped;
/// a delta after a gap takes the book out of sync until the next snapshot.
#[test]
fn obu_deltas_follow_their_snapshot_by_their_sequences() {
    let frames = vec![
        obu(
            "snapshot",
            (100, 100),
            r#"["99","5"],["98","1"]"#,
            r#"["101","5"]"#,
        ),
        obu("delta", (101, 102), r#"["99","7"]"#, ""),
        obu("delta", (101, 102), r#"["99","1"]"#, ""),
        obu("delta", (103, 103), "", r#"["101","0"],["102","2"]"#),
        obu("delta", (105, 105), r#"["97","1"]"#, ""),
        obu("snapshot", (200, 200), r#"["90","1"]"#, r#"["91","1"]"#),
    ];
    let (published, stats) = common::in_band::replay(FUTURES, &frames, 10, 50);
    let level = |price: &str, amount: &str| Level {
        price: fp(price),
        amount: fp(amount),
    };
    let synced: Vec<&Sides> = published.iter().flatten().collect();
    assert_eq!(
        synced[..3],
        [
            &(
                vec![level("99", "5"), level("98", "1")],
                vec![level("101", "5")]
            ),
            &(
                vec![level("99", "7"), level("98", "1")],
                vec![level("101", "5")]
            ),
            &(
                vec![level("99", "7"), level("98", "1")],
                vec![level("102", "2")]
            ),
        ]
    );
    assert_eq!(
        published.last(),
        Some(&Some((vec![level("90", "1")], vec![level("91", "1")])))
    );
    assert_eq!(
        (stats.gaps, stats.dropped, stats.applied),
        (1, 1, 2),
        "{stats:?}"
    );
    // Out of sync between the gap and the new snapshot.
    assert!(published.iter().any(Option::is_none));
}

/// Both modes against the simulator: a lost delta found by its sequences, only that
/// symbol subscribed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_obu_delta_resyncs_that_symbol_only() {
    let harness = Harness::start(FUTURES, "XBTUSDTM", "ETHUSDTM").await;
    harness
        .a_lost_event_rebuilds_that_book_alone("XBTUSDTM")
        .await;
    harness.service.stop().await;
}

/// KuCoin's USDT perpetual beside Binance USDⓈ-M's, in base coins: KuCoin's levels are
/// its whole contracts times the contract's 0.001 BTC (its `multiplier`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn futures_contracts_merge_as_coins_beside_another_perpetual() {
    let config = TestConfig::new()
        .instrument(
            "BTC/USDT",
            &[(FUTURES, "XBTUSDTM"), (VenueId::BinanceUsdm, "BTCUSDT")],
        )
        .contract_size(FUTURES, "0.001");
    let (_simulator, service, summary) =
        common::in_band::first_synced_summary(config, "90000", &[FUTURES, VenueId::BinanceUsdm])
            .await;
    let kucoin_levels: Vec<_> = (summary.book.bids.as_slice().iter())
        .chain(summary.book.asks.as_slice())
        .filter(|level| level.venue == FUTURES)
        .collect();
    assert!(!kucoin_levels.is_empty());
    for level in kucoin_levels {
        assert_eq!(level.amount.raw() % 100_000, 0, "{level:?}");
    }
    service.stop().await;
}

pub fn futures_row() -> Row {
    let mut frames: Vec<(Read, Vec<u8>)> = probe_frames()
        .into_iter()
        .filter(|frame| frame.contains("obu.FUTURES") || frame.contains(r#""result""#))
        .map(|frame| (Read::Diff, frame.into_bytes()))
        .collect();
    let mut book = TopBook::default();
    book.bids.push(Level {
        price: fp("83614"),
        amount: fp("11"),
    });
    book.venue_sequence = 1_747_821_025_294;
    book.exchange_time_ns = 1_790_113_097_768_000_000;
    let mut push = Vec::new();
    FUTURES
        .simulated()
        .encode_book("obu50:XBTUSDTM", &book, 1, &mut push);
    frames.push((Read::Snapshot, push.clone()));
    frames.push((Read::Binary, push));
    let message = |kind: &str, data: &str| {
        format!(r#"{{"T":"obu.FUTURES","dp":"increment@10ms","t":"{kind}","P":1,"d":{{{data}}}}}"#)
    };
    let all = r#""s":"XBTUSDTM","O":5,"C":9,"M":1,"a":[],"b":[]"#;
    let case = |read, frame: String, error| Malformed {
        exact: false,
        ..Malformed::exact(read, frame, 5000, error)
    };
    let diff = |frame, error| case(Read::Diff, frame, error);
    let malformed = vec![
        diff(
            message("delta", r#""s":"XBTUSDTM","C":9,"M":1,"a":[],"b":[]"#),
            DecodeError::MissingKey("O"),
        ),
        diff(
            message("delta", r#""s":"XBTUSDTM","O":5,"M":1,"a":[],"b":[]"#),
            DecodeError::MissingKey("C"),
        ),
        diff(
            message("delta", r#""O":5,"C":9,"M":1,"a":[],"b":[]"#),
            DecodeError::MissingKey("s"),
        ),
        diff(
            message("delta", r#""s":"XBTUSDTM","O":5,"C":9,"a":[],"b":[]"#),
            DecodeError::MissingKey("M"),
        ),
        diff(
            message("delta", r#""s":"XBTUSDTM","O":5,"C":9,"M":1,"a":[]"#),
            DecodeError::MissingKey("b"),
        ),
        diff(
            message("delta", &format!(r#"{all},"O":5"#)),
            DecodeError::DuplicateKey("O"),
        ),
        diff(
            message("delta", r#""s":"XBTUSDTM","O":9,"C":5,"M":1,"a":[],"b":[]"#),
            DecodeError::Invalid("a message with O greater than C"),
        ),
        diff(
            message("change", all),
            DecodeError::Invalid("t must be snapshot or delta"),
        ),
        diff(
            message(
                "snapshot",
                r#""s":"XBTUSDTM","O":9,"C":9,"M":1,"a":[],"b":[["1","1"],["2","1"]]"#,
            ),
            DecodeError::Unsorted(Side::Bid),
        ),
        diff(
            message(
                "delta",
                r#""s":"XBTUSDTM","O":5,"C":9,"M":1,"a":[["1e3","1"]],"b":[]"#,
            ),
            DecodeError::Number {
                at: 0,
                error: FixedPointError::Exponent,
            },
        ),
        diff(
            r#"{"T":"obu.FUTURES","dp":"increment@10ms","P":1,"d":{"s":"XBTUSDTM"}}"#.to_owned(),
            DecodeError::MissingKey("t"),
        ),
        diff(
            r#"{"T":"obu.FUTURES","dp":"increment@10ms","t":"delta","P":1}"#.to_owned(),
            DecodeError::MissingKey("d"),
        ),
        diff(
            format!("{} x", message("delta", all)),
            DecodeError::TrailingBytes { at: 0 },
        ),
        case(
            Read::Snapshot,
            message("delta", all),
            DecodeError::Invalid("a delta where whole books are subscribed"),
        ),
    ];
    Row {
        venue: FUTURES,
        frames,
        malformed,
    }
}
