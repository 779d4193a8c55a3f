//! Gate, spot and futures: the recordings replayed against a slow reference of the
//! documented algorithm, the conformance row, and the venues against the simulator.

use crate::common;
use crate::common::config::TestConfig;
use crate::conformance::{Malformed, Read, Row};
use crate::generated::{object, pair_side};
use crate::reference::{self, ReferenceRun, ReferenceSide};
use common::in_band::{self, Harness, Sides};
use mergebook::book::{BookUpdate, Level, Side, TopBook};

use mergebook::fixed::{FixedPoint, FixedPointError};
use mergebook::record::timeline::{self, RecordedFrame};
use mergebook::replay::{self, BadFrame};
use mergebook::venue::{DecodeError, Message, VenueId};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

const SPOT: VenueId = VenueId::Gate;
const FUTURES: VenueId = VenueId::GateFutures;

/// The levels a side `order_book_update` keeps.
const STREAM_LEVELS: usize = 100;

/// A recorded symbol and what SOURCES.md's verification found for it.
struct Recorded {
    symbol: &'static str,
    /// Events applied after the snapshot; `None` for a book whose amounts have more
    /// decimals than a `FixedPoint` holds (10, where it keeps 8), which is refused.
    applied: Option<usize>,
}

/// A recording: its venue, file, and symbols.
struct Recording {
    venue: VenueId,
    file: &'static str,
    symbols: &'static [Recorded],
}

const RECORDINGS: [Recording; 2] = [
    Recording {
        venue: SPOT,
        file: "spot_timeline_order_book_update_7pairs_2021-04-22.jsonl",
        symbols: &[
            Recorded {
                symbol: "OMG_USDT",
                applied: None,
            },
            Recorded {
                symbol: "FAST_USDT",
                applied: Some(20),
            },
            Recorded {
                symbol: "ZKS_ETH",
                applied: Some(11),
            },
            Recorded {
                symbol: "HAI_ETH",
                applied: Some(5),
            },
            Recorded {
                symbol: "NANO_USDT",
                applied: Some(4),
            },
            Recorded {
                symbol: "BTC_USDC",
                applied: None,
            },
            Recorded {
                symbol: "INK_USDT",
                applied: None,
            },
        ],
    },
    Recording {
        venue: FUTURES,
        file: "futures_usdt_timeline_order_book_update_7contracts_2023-05-24.jsonl",
        symbols: &[
            Recorded {
                symbol: "PHB_USDT",
                applied: Some(69),
            },
            Recorded {
                symbol: "RDNT_USDT",
                applied: Some(61),
            },
            Recorded {
                symbol: "QUICK_USDT",
                applied: Some(13),
            },
            Recorded {
                symbol: "FRONT_USDT",
                applied: Some(5),
            },
            Recorded {
                symbol: "LIT_USDT",
                applied: Some(2),
            },
            Recorded {
                symbol: "ZRX_USDT",
                applied: Some(1),
            },
            Recorded {
                symbol: "DIA_USDT",
                applied: Some(0),
            },
        ],
    },
];

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(format!(
        "{}/tests/fixtures/gate/{name}",
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
    snapshot_id: Option<u64>,
    /// The last applied event's `u`; `None` until one is.
    last_u: Option<u64>,
    buffered: Vec<serde_json::Value>,
    /// The top 10 a side after the snapshot and after each applied event.
    tops: Vec<Sides>,
    applied: usize,
    dropped: usize,
    /// Deletes of levels the book did not hold.
    absent_deletes: usize,
    /// Whether the first event applied began before the snapshot's id + 1.
    straddled: bool,
}

/// A side's levels, spot's `["p","a"]` or futures' `{"p":"…","s":…}`.
fn levels(value: &serde_json::Value) -> Vec<(FixedPoint, FixedPoint)> {
    let number = |value: &serde_json::Value| match value {
        serde_json::Value::String(text) => fp(text),
        other => fp(&other.to_string()),
    };
    let Some(levels) = value.as_array() else {
        return Vec::new();
    };
    levels
        .iter()
        .map(|level| match level.as_array() {
            Some(pair) => (number(&pair[0]), number(&pair[1])),
            None => (number(&level["p"]), number(&level["s"])),
        })
        .collect()
}

impl ReferenceBook {
    fn top(&self, depth: usize) -> Sides {
        reference::top(&self.bids, &self.asks, depth)
    }

    fn set(&mut self, side: Side, changes: Vec<(FixedPoint, FixedPoint)>) {
        let book = match side {
            Side::Bid => &mut self.bids,
            Side::Ask => &mut self.asks,
        };
        for (price, amount) in changes {
            match amount.is_zero() {
                true => self.absent_deletes += usize::from(book.remove(&price).is_none()),
                false => drop(book.insert(price, amount)),
            }
        }
        // The stream keeps the top 100: a level pushed out of them gets no delete.
        while book.len() > STREAM_LEVELS {
            match side {
                Side::Bid => book.pop_first(),
                Side::Ask => book.pop_last(),
            };
        }
    }

    fn on_snapshot(&mut self, body: &serde_json::Value) {
        self.bids.clear();
        self.asks.clear();
        self.set(Side::Bid, levels(&body["bids"]));
        self.set(Side::Ask, levels(&body["asks"]));
        self.snapshot_id = Some(body["id"].as_u64().unwrap());
        for event in std::mem::take(&mut self.buffered) {
            self.on_event(&event);
        }
        // The book is published once synced: the snapshot with the buffer applied.
        let synced = self.tops.len() - self.applied;
        self.tops.truncate(synced);
        self.tops.push(self.top(10));
    }

    /// docs/protocols.md, Gate: drop `u < id + 1`; the first applied event has
    /// `U <= id + 1 <= u`; each next one's `U` is the last `u + 1`.
    fn on_event(&mut self, event: &serde_json::Value) {
        let Some(snapshot_id) = self.snapshot_id else {
            self.buffered.push(event.clone());
            return;
        };
        let id = |key: &str| event[key].as_u64().unwrap();
        let (first, last) = (id("U"), id("u"));
        match self.last_u {
            None if last < snapshot_id + 1 => {
                self.dropped += 1;
                return;
            }
            None => {
                assert!(first <= snapshot_id + 1, "the first event covers id + 1");
                self.straddled = first < snapshot_id + 1;
            }
            Some(last_u) => assert_eq!(first, last_u + 1, "each event follows the last"),
        }
        self.set(Side::Bid, levels(&event["b"]));
        self.set(Side::Ask, levels(&event["a"]));
        self.last_u = Some(last);
        self.applied += 1;
        self.tops.push(self.top(10));
    }
}

/// The reference run over a recording's frames of `symbol`.
fn reference(frames: &[RecordedFrame], symbol: &str) -> ReferenceBook {
    let mut book = ReferenceBook::default();
    for frame in frames {
        let value: serde_json::Value = serde_json::from_str(&frame.raw).unwrap();
        if let Some(url) = &frame.rest_url {
            if url.contains(&format!("={symbol}&")) {
                book.on_snapshot(&value);
            }
            continue;
        }
        let result = &value["result"];
        if value["event"] == "update" && result["s"] == symbol {
            book.on_event(result);
        }
    }
    book
}

/// Replays `frames` of `symbol` at the stream's depth (`reference::replayed`).
fn replayed(
    venue: VenueId,
    symbol: &str,
    frames: Vec<RecordedFrame>,
) -> (Vec<Sides>, replay::DiffBook, Vec<BadFrame>) {
    reference::replayed(venue, symbol, frames, STREAM_LEVELS)
}

#[test]
fn every_recorded_symbol_replays_to_the_reference_book_with_the_id_rules_verified() {
    let mut seen = BTreeMap::new();
    for recording in &RECORDINGS {
        let frames = timeline::load_frames(&fixture(recording.file)).unwrap();
        for recorded in recording.symbols {
            let context = format!("{} {}", recording.venue, recorded.symbol);
            let (published, book, refused) =
                replayed(recording.venue, recorded.symbol, frames.clone());
            // The frames refused are those with a number of 10 decimals, typed, whichever
            // symbol they are of (a frame is decoded before its symbol is known).
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
            let Some(applied) = recorded.applied else {
                // Refused, never synced, never published.
                let stats = book.stats;
                assert!(
                    stats.decode_errors + stats.snapshots_refused > 0,
                    "{context}: {stats:?}"
                );
                assert!(published.is_empty(), "{context}: {published:?}");
                assert_eq!(book.stats.applied, 0, "{context}");
                continue;
            };
            let reference = reference(&frames, recorded.symbol);
            assert_eq!(reference.applied, applied, "{context}: SOURCES.md's count");
            reference::assert_replay_is_the_reference(
                (&published, &book),
                ReferenceRun {
                    tops: &reference.tops,
                    bids: &reference.bids,
                    asks: &reference.asks,
                    applied: reference.applied,
                    dropped: reference.dropped,
                },
                &context,
            );
            seen.insert(recorded.symbol, reference);
        }
    }
    // SOURCES.md: futures deletes of levels the book does not hold, a no-op.
    assert_eq!(seen["PHB_USDT"].absent_deletes, 5);
    assert_eq!(seen["QUICK_USDT"].absent_deletes, 1);
    // An update straddling the snapshot's id (LIT: `U` 943784231, id + 1 943784233).
    assert!(seen["LIT_USDT"].straddled);
    // A contract whose every update is older than the snapshot: its book is the REST book.
    let dia = &seen["DIA_USDT"];
    assert!(
        dia.applied == 0 && dia.dropped > 0,
        "{} dropped",
        dia.dropped
    );
}

// ---- conformance ----

/// The recorded documentation examples and 2026 frames of a market (`spot` or `futures`):
/// what the venue sends (not the requests sent to it), REST bodies by their level shape.
fn examples(market: &str) -> Vec<(Read, Vec<u8>)> {
    let mut frames = Vec::new();
    for file in [
        "docs_examples_spot_futures_order_book_update_obu_rest.jsonl",
        "futures_obu_and_order_book_update_trimmed_frames_2026-09-15_probe_notes.jsonl",
    ] {
        let text = std::fs::read_to_string(fixture(file)).unwrap();
        for line in text.lines() {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            let read = match value["channel"].as_str() {
                Some(channel) if !channel.starts_with(&format!("{market}.")) => continue,
                // A request sent to the venue.
                Some(_) if value.get("result").is_none() => continue,
                // The documentation's made-up top N repeats one level: refused
                // (`the_documented_futures_top_n_repeats_a_level_and_is_refused`).
                Some("futures.order_book") => continue,
                Some(channel) if channel.ends_with(".order_book") => Read::Snapshot,
                Some(_) => Read::Diff,
                None => {
                    let futures = value["asks"][0].is_object();
                    if futures != (market == "futures") {
                        continue;
                    }
                    Read::RestSnapshot
                }
            };
            frames.push((read, line.as_bytes().to_vec()));
        }
    }
    frames
}

pub fn row(venue: VenueId) -> Row {
    let recording = RECORDINGS.iter().find(|r| r.venue == venue).unwrap();
    let recorded = timeline::load_frames(&fixture(recording.file)).unwrap();
    // The REST books of the symbols with numbers a `FixedPoint` cannot hold are refused.
    let unheld = |url: &str| {
        let symbols = recording.symbols.iter();
        symbols
            .filter(|symbol| symbol.applied.is_none())
            .any(|symbol| url.contains(&format!("={}&", symbol.symbol)))
    };
    let mut frames: Vec<(Read, Vec<u8>)> = recorded
        .into_iter()
        .filter(|frame| !frame.rest_url.as_deref().is_some_and(unheld))
        .take(60)
        .map(|frame| {
            let read = match frame.rest_url {
                Some(_) => Read::RestSnapshot,
                None => Read::Diff,
            };
            (read, frame.raw.as_bytes().to_vec())
        })
        .collect();
    let market = if venue == SPOT { "spot" } else { "futures" };
    frames.extend(examples(market));
    Row {
        venue,
        frames,
        malformed: malformed_frames(venue, market),
    }
}

fn malformed_frames(venue: VenueId, market: &str) -> Vec<Malformed> {
    let level = |price: &str, amount: &str| match venue == SPOT {
        true => format!(r#"["{price}","{amount}"]"#),
        false => format!(r#"{{"p":"{price}","s":{amount}}}"#),
    };
    let event = |members: &str| {
        format!(
            r#"{{"time":1,"channel":"{market}.order_book_update","event":"update","result":{{"t":1,{members}}}}}"#
        )
    };
    let top = |members: &str| {
        format!(
            r#"{{"time":1,"channel":"{market}.order_book","event":"update","result":{{"t":1,{members}}}}}"#
        )
    };
    let number = |error| DecodeError::Number { at: 0, error };
    let case = |read, frame: String, error| Malformed {
        exact: false,
        ..Malformed::exact(read, frame, 5000, error)
    };
    let diff = |frame, error| case(Read::Diff, frame, error);
    let one = level("1", "1");
    vec![
        diff(
            event(r#""s":"BTC_USDT","u":9,"b":[],"a":[]"#),
            DecodeError::MissingKey("U"),
        ),
        diff(
            event(r#""s":"BTC_USDT","U":5,"b":[],"a":[]"#),
            DecodeError::MissingKey("u"),
        ),
        diff(
            event(r#""U":5,"u":9,"b":[],"a":[]"#),
            DecodeError::MissingKey("s"),
        ),
        diff(
            event(r#""s":"BTC_USDT","U":5,"U":5,"u":9"#),
            DecodeError::DuplicateKey("U"),
        ),
        diff(
            event(r#""s":"BTC_USDT","U":9,"u":5"#),
            DecodeError::Invalid("an update with U greater than u"),
        ),
        diff(
            event(r#""s":"BTC_USDT","U":-5,"u":9"#),
            DecodeError::Unexpected {
                at: 0,
                expected: "a digit",
            },
        ),
        diff(
            event(&format!(
                r#""s":"BTC_USDT","U":5,"u":9,"b":[{}]"#,
                level("x", "1")
            )),
            number(FixedPointError::InvalidCharacter),
        ),
        diff(
            event(&format!(
                r#""s":"BTC_USDT","U":5,"u":9,"b":[{}]"#,
                level("1e3", "1")
            )),
            number(FixedPointError::Exponent),
        ),
        diff(
            event(&format!(
                r#""full":true,"s":"BTC_USDT","U":5,"u":9,"b":[{one},{}]"#,
                level("2", "1")
            )),
            DecodeError::Unsorted(Side::Bid),
        ),
        diff(
            event(r#""s":"BTC_USDT","U":5,"u":9,"full":1"#),
            DecodeError::Unexpected {
                at: 0,
                expected: "true or false",
            },
        ),
        diff(
            r#"{"time":1,"event":"update","result":{"s":"BTC_USDT","U":5,"u":9}}"#.to_owned(),
            DecodeError::MissingKey("channel"),
        ),
        diff(
            format!(r#"{{"time":1,"channel":"{market}.order_book_update","event":"subscribe"}}"#),
            DecodeError::MissingKey("result"),
        ),
        diff(
            format!("{} x", event(r#""s":"BTC_USDT","U":5,"u":9"#)),
            DecodeError::TrailingBytes { at: 0 },
        ),
        case(
            Read::Snapshot,
            top(&format!(
                r#""s":"BTC_USDT","lastUpdateId":1,"bids":[{one},{}],"asks":[]"#,
                level("2", "1")
            )),
            DecodeError::Unsorted(Side::Bid),
        ),
        case(
            Read::Snapshot,
            top(r#""s":"BTC_USDT","bids":[],"asks":[]"#),
            DecodeError::MissingKey("lastUpdateId"),
        ),
        case(
            Read::RestSnapshot,
            r#"{"id":1,"current":1,"update":1,"asks":[]}"#.to_owned(),
            DecodeError::MissingKey("bids"),
        ),
        case(
            Read::RestSnapshot,
            format!(r#"{{"current":1,"update":1,"asks":[],"bids":[{one}]}}"#),
            DecodeError::MissingKey("id"),
        ),
        case(
            Read::RestSnapshot,
            format!(r#"{{"id":1,"asks":[{},{one}],"bids":[]}}"#, level("2", "1")),
            DecodeError::Unsorted(Side::Ask),
        ),
    ]
}

#[test]
fn the_documented_futures_top_n_repeats_a_level_and_is_refused() {
    let text = std::fs::read_to_string(fixture(
        "docs_examples_spot_futures_order_book_update_obu_rest.jsonl",
    ))
    .unwrap();
    let example = text
        .lines()
        .find(|line| line.contains(r#""channel":"futures.order_book","event":"all""#))
        .unwrap();
    let mut book = TopBook::default();
    assert_eq!(
        FUTURES.decode(example.as_bytes(), 10, &mut book),
        Err(DecodeError::Unsorted(Side::Ask))
    );
}

// ---- generated frames ----

/// A side of futures' `{"p":"price","s":size}` levels in member orders drawn from `seed`,
/// sizes as bare numbers (whole contracts written without a fraction).
fn object_side(levels: &[(u64, u64)], seed: u64, spaced: bool) -> String {
    let separator = if spaced { ", " } else { "," };
    let text: Vec<String> = levels
        .iter()
        .enumerate()
        .map(|(index, &(price, size))| {
            let (price, size) = (FixedPoint::from_raw(price), FixedPoint::from_raw(size));
            let size = size.to_string();
            let size = size.trim_end_matches('0').trim_end_matches('.');
            let mut members = vec![format!(r#""p":"{price}""#), format!(r#""s":{size}"#)];
            object(&mut members, seed ^ index as u64, spaced)
        })
        .collect();
    format!("[{}]", text.join(separator))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any member order, whitespace, the 2025 `full`/`l` and 2021's `e`/`E` members and
    /// unknown ones: the levels and ids the frame holds, on either market, in diff mode
    /// and (best first) as a top N.
    #[test]
    fn generated_frames_decode_to_the_levels_they_hold(
        bids in proptest::collection::btree_map(1u64..1u64 << 50, 0u64..1u64 << 50, 0..30),
        asks in proptest::collection::btree_map(1u64..1u64 << 50, 0u64..1u64 << 50, 0..30),
        ids in (1u64..u64::MAX / 2, 0u64..1 << 20),
        seed in any::<u64>(),
        spaced in any::<bool>(),
        futures in any::<bool>(),
    ) {
        let (first, span) = ids;
        let last = first + span;
        let bids: Vec<(u64, u64)> = bids.into_iter().rev().collect();
        let asks: Vec<(u64, u64)> = asks.into_iter().collect();
        let (venue, market) = match futures {
            true => (FUTURES, "futures"),
            false => (SPOT, "spot"),
        };
        let side = |levels: &[(u64, u64)]| match futures {
            true => object_side(levels, seed, spaced),
            false => pair_side(levels, spaced),
        };
        let mut result = vec![
            r#""t":1684930165217"#.to_owned(),
            r#""e":"depthUpdate""#.to_owned(),
            r#""E":1684930165"#.to_owned(),
            r#""l":"100""#.to_owned(),
            r#""s":"BTC_USDT""#.to_owned(),
            format!(r#""U":{first}"#),
            format!(r#""u":{last}"#),
            format!(r#""b":{}"#, side(&bids)),
            format!(r#""a":{}"#, side(&asks)),
            r#""unknown":{"x":[1,2]}"#.to_owned(),
        ];
        let mut members = vec![
            r#""time":1684930165"#.to_owned(),
            r#""time_ms":1684930165254"#.to_owned(),
            format!(r#""channel":"{market}.order_book_update""#),
            r#""event":"update""#.to_owned(),
            format!(r#""result":{}"#, object(&mut result, seed, spaced)),
        ];
        let frame = object(&mut members, seed.rotate_left(7), spaced);
        let mut update = BookUpdate::default();
        let message = venue.decode_diff(frame.as_bytes(), 5000, &mut update);
        prop_assert_eq!(message, Ok(Message::Book { stream: b"BTC_USDT" }), "{}", frame);
        let levels = |side: &[(u64, u64)]| -> Vec<Level> {
            side.iter().map(|&(p, q)| Level { price: FixedPoint::from_raw(p), amount: FixedPoint::from_raw(q) }).collect()
        };
        prop_assert_eq!(&update.bids, &levels(&bids));
        prop_assert_eq!(&update.asks, &levels(&asks));
        prop_assert_eq!((update.first_id, update.last_id), (first, last));

        let mut top_result = vec![
            r#""t":1684930165217"#.to_owned(),
            format!(r#""lastUpdateId":{last}"#),
            r#""s":"BTC_USDT""#.to_owned(),
            format!(r#""bids":{}"#, side(&bids)),
            format!(r#""asks":{}"#, side(&asks)),
        ];
        let mut members = vec![
            format!(r#""channel":"{market}.order_book""#),
            r#""event":"update""#.to_owned(),
            format!(r#""result":{}"#, object(&mut top_result, seed, spaced)),
        ];
        let frame = object(&mut members, seed.rotate_left(3), spaced);
        let mut top = TopBook::default();
        let message = venue.decode(frame.as_bytes(), 10, &mut top);
        prop_assert_eq!(message, Ok(Message::Book { stream: b"BTC_USDT" }), "{}", frame);
        let kept = |side: &[(u64, u64)]| -> Vec<Level> {
            levels(side).into_iter().filter(|level| !level.amount.is_zero()).take(10).collect()
        };
        let (kept_bids, kept_asks) = (kept(&bids), kept(&asks));
        prop_assert_eq!(top.bids.as_slice(), kept_bids.as_slice());
        prop_assert_eq!(top.asks.as_slice(), kept_asks.as_slice());
        prop_assert_eq!(top.venue_sequence, last);
    }
}

/// Since 2025 `order_book_update` may push `"full":true`: the book is replaced by it,
/// whatever was there, its `u` the id the next event follows. Replayed: a REST book, an
/// event, a full push far ahead, the event after it.
#[test]
fn a_full_push_replaces_the_book_and_the_next_event_follows_it() {
    let frame = |raw: String, rest_url: Option<&str>| RecordedFrame {
        received_ns: 0,
        raw,
        rest_url: rest_url.map(str::to_owned),
    };
    let event = |members: &str| {
        format!(
            r#"{{"time":1,"channel":"spot.order_book_update","event":"update","result":{{"s":"BTC_USDT",{members}}}}}"#
        )
    };
    let rest = "https://api.gateio.ws/api/v4/spot/order_book?currency_pair=BTC_USDT&limit=100&with_id=true";
    let frames = vec![
        frame(event(r#""U":100,"u":101,"b":[["9","1"]],"a":[]"#), None),
        frame(
            r#"{"id":100,"asks":[["11","1"],["12","1"]],"bids":[["10","1"]]}"#.to_owned(),
            Some(rest),
        ),
        frame(event(r#""U":102,"u":102,"b":[],"a":[["12","0"]]"#), None),
        frame(
            event(r#""full":true,"U":500,"u":510,"b":[["20","2"]],"a":[["21","3"]]"#),
            None,
        ),
        frame(event(r#""U":511,"u":512,"b":[["19","1"]],"a":[]"#), None),
    ];
    let (published, book, refused) = replayed(SPOT, "BTC_USDT", frames);
    assert!(refused.is_empty(), "{refused:?}");
    assert_eq!((book.stats.gaps, book.stats.applied), (0, 3));
    let level = |price: &str, amount: &str| Level {
        price: fp(price),
        amount: fp(amount),
    };
    let last = published.last().unwrap();
    assert_eq!(last.0, vec![level("20", "2"), level("19", "1")]);
    assert_eq!(last.1, vec![level("21", "3")]);
    // Before the push: the REST book with the two events.
    assert!(published.contains(&(
        vec![level("10", "1"), level("9", "1")],
        vec![level("11", "1")]
    )));
}

// ---- against the simulator ----

/// Both markets in diff mode: synced from REST, every book the simulator's; a lost event
/// found by its ids, and only that symbol's book rebuilt.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_event_resyncs_that_symbol_only() {
    for venue in [SPOT, FUTURES] {
        let harness = Harness::start(venue, "BTC_USDT", "ETH_USDT").await;
        harness
            .a_lost_event_rebuilds_that_book_alone("BTC_USDT")
            .await;
        harness.service.stop().await;
    }
}

/// Gate's USDT-settled perpetual beside Binance USDⓈ-M's, in base coins: Gate's levels are
/// its whole contracts times the contract's coins.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn futures_contracts_merge_as_coins_beside_another_perpetual() {
    let config = TestConfig::new()
        .instrument(
            "BTC/USDT",
            &[(FUTURES, "BTC_USDT"), (VenueId::BinanceUsdm, "BTCUSDT")],
        )
        .contract_size(FUTURES, "0.0001");
    let (_simulator, service, summary) =
        in_band::first_synced_summary(config, "90000", &[FUTURES, VenueId::BinanceUsdm]).await;
    let gate_levels: Vec<_> = summary
        .book
        .bids
        .as_slice()
        .iter()
        .chain(summary.book.asks.as_slice())
        .filter(|level| level.venue == FUTURES)
        .collect();
    assert!(!gate_levels.is_empty());
    // 0.0001 BTC a contract: every amount a whole number of them.
    for level in gate_levels {
        assert_eq!(level.amount.raw() % 10_000, 0, "{level:?}");
    }
    service.stop().await;
}

/// `mergebook replay diff` of a recording, one symbol or all (the spot recording's books
/// it cannot hold refused, the others replayed): the last summary's top is the reference
/// book's.
#[test]
fn mergebook_replay_follows_a_gate_recording() {
    for (recording, symbol) in [(&RECORDINGS[1], "PHB_USDT"), (&RECORDINGS[0], "FAST_USDT")] {
        let venue = recording.venue;
        let path = fixture(recording.file);
        let venue_file = format!("{venue}={}", path.display());
        let frames = timeline::load_frames(&path).unwrap();
        let reference = reference(&frames, symbol);
        let best = |side: &ReferenceSide, bids: bool| {
            let best = if bids {
                side.last_key_value()
            } else {
                side.first_key_value()
            };
            best.map(|(price, _)| *price)
        };
        let only = format!("{venue}={symbol}");
        for arguments in [
            vec!["replay", "diff", "--venue", &venue_file, "--symbol", &only],
            vec!["replay", "diff", "--venue", &venue_file],
        ] {
            let (stdout, stderr) = common::run_ok(&arguments);
            let last = stdout
                .lines()
                .rev()
                .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
                // Instruments are named by their symbol, less its `_`.
                .find(|summary| summary["instrument"] == symbol.replace('_', ""))
                .expect("a summary of the symbol");
            let top = |side: &str| last[side][0]["price"].as_str().map(fp);
            assert_eq!(top("bids"), best(&reference.bids, true), "{stderr}");
            assert_eq!(top("asks"), best(&reference.asks, false), "{stderr}");
        }
    }
}

/// A message with a number a price or amount cannot hold (Gate writes some amounts with 10
/// decimals) costs its own book alone: that one rebuilt, counted as a bad frame; the other
/// book of the connection stays synced and true. (A frame whose book is unknown costs
/// both: `live_conformance`'s bad-frame cell.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_book_whose_number_cannot_be_held_is_lost_alone() {
    let harness = Harness::start(SPOT, "BTC_USDT", "ETH_USDT").await;
    harness.both_books_synced("at the start").await;
    let resyncs = r#"orderbook_resyncs_total{exchange="gate",reason="decode_error"}"#;
    let errors = r#"orderbook_decode_errors_total{exchange="gate"}"#;
    let (resyncs_before, errors_before) = (harness.metric(resyncs), harness.metric(errors));
    harness.simulator.send_raw(
        SPOT,
        r#"{"time":1,"channel":"spot.order_book_update","event":"update","result":{"s":"BTC_USDT","U":1,"u":1,"b":[["1","152.9783789102"]],"a":[]}}"#,
    );
    harness.counted(resyncs, resyncs_before + 1.0).await;
    assert_eq!(harness.metric(errors), errors_before + 1.0);
    harness.synced().await;
    harness
        .books_stay_true_for(Duration::from_millis(300))
        .await;
    assert_eq!(
        harness.metric(resyncs),
        resyncs_before + 1.0,
        "one book rebuilt"
    );
    harness.service.stop().await;
}

/// Counted in thousandths of a coin (`unit_size = "0.001"`), the recording's amounts of
/// 10 decimals, which a coin's number cannot hold, are read exactly: the book is whole.
#[test]
fn amounts_of_ten_decimals_are_read_whole_in_thousandths() {
    let frame = br#"{"time":1619093533,"channel":"spot.order_book_update","event":"update","result":{"t":1619093533023,"s":"OMG_USDT","U":59231869,"u":59231869,"b":[["7.801","152.9783789102"]],"a":[["7.997","251.8481948663"]]}}"#;
    let mut update = BookUpdate::default();
    let in_coins = SPOT.decode_diff(frame, 100, &mut update);
    assert!(
        matches!(in_coins, Ok(Message::Unreadable { .. })),
        "{in_coins:?}"
    );
    let thousandths = mergebook::fixed::UnitSize::parse("0.001").unwrap();
    let read = thousandths.decoding(|| SPOT.decode_diff(frame, 100, &mut update));
    assert!(matches!(read, Ok(Message::Book { .. })), "{read:?}");
    let level = |price: &str, amount: &str| Level {
        price: price.parse().unwrap(),
        amount: amount.parse().unwrap(),
    };
    assert_eq!(update.bids, [level("0.007801", "152978.3789102")]);
    assert_eq!(update.asks, [level("0.007997", "251848.1948663")]);
}
