//! Binance futures (USDⓈ-M and COIN-M): every recording replays, through mergebook's diff
//! rules, to the book a slow reference keeps (serde_json and a sorted map, the documented
//! futures algorithm: `u < lastUpdateId` dropped, the first event straddling the snapshot,
//! then the `pu` chain), and where a `bookTicker` names the book's last event its best
//! prices and sizes are the book's top; the decoders refuse every truncation and malformed
//! frame with a typed error and read generated frames of any layout; against the simulator
//! both markets sync in both modes, a broken chain resyncs that symbol only, and COIN-M's
//! inverse contracts merge as notionals.

use crate::common;
use crate::common::config::TestConfig;
use crate::conformance::{Malformed, Read, Row};
use crate::generated::{object, pair_side};
use crate::reference::{self, ReferenceRun, ReferenceSide};

use common::in_band::{self, Harness, Sides};
use mergebook::book::diff_sync::{BookSync, SnapshotOutcome, UpdateOutcome};
use mergebook::book::{BookUpdate, Level, Side, TopBook};
use mergebook::fixed::{FixedPoint, FixedPointError};
use mergebook::record::timeline::{self, RecordedFrame};
use mergebook::replay;
use mergebook::venue::{DecodeError, Message, StreamKind, VenueId};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

const USDM: VenueId = VenueId::BinanceUsdm;
const COINM: VenueId = VenueId::BinanceCoinm;

/// A recording and what SOURCES.md's verification found in it.
struct Recording {
    venue: VenueId,
    symbol: &'static str,
    /// The timeline, or the per-pair diff frames.
    file: &'static str,
    /// The per-pair file's REST snapshot, taken after its first diff event.
    snapshot: Option<&'static str>,
    best_bid: (&'static str, &'static str),
    best_ask: (&'static str, &'static str),
    /// `bookTicker`s whose `u` is the book's last event's.
    ticker_checks: usize,
}

const RECORDINGS: [Recording; 6] = [
    Recording {
        venue: USDM,
        symbol: "AKROUSDT",
        file: "usdm_timeline_AKROUSDT_2021-07-22.jsonl",
        snapshot: None,
        best_bid: ("0.01734", "502"),
        best_ask: ("0.01735", "50697"),
        ticker_checks: 7,
    },
    Recording {
        venue: USDM,
        symbol: "SUSHIUSDT",
        file: "usdm_diff_depth_SUSHIUSDT_100ms_combined_stream_2021-07-22.jsonl",
        snapshot: Some("usdm_rest_depth_SUSHIUSDT_limit1000_2021-07-22.json"),
        best_bid: ("7.6120", "303"),
        best_ask: ("7.6160", "267"),
        ticker_checks: 0,
    },
    Recording {
        venue: USDM,
        symbol: "BTCUSDT",
        file: "usdm_timeline_BTCUSDT_depth0ms_2024-08-08_prefix.jsonl",
        snapshot: None,
        best_bid: ("61807.90", "3.598"),
        best_ask: ("61808.00", "1.914"),
        ticker_checks: 4,
    },
    Recording {
        venue: COINM,
        symbol: "BTCUSD_PERP",
        file: "coinm_timeline_BTCUSD_PERP_depth0ms_2024-08-08_prefix.jsonl",
        snapshot: None,
        best_bid: ("61811.2", "963"),
        best_ask: ("61811.3", "1388"),
        ticker_checks: 22,
    },
    Recording {
        venue: COINM,
        symbol: "BTCUSD_211231",
        file: "coinm_timeline_BTCUSD_211231_2021-07-21.jsonl",
        snapshot: None,
        best_bid: ("32627.7", "77"),
        best_ask: ("32627.8", "14"),
        ticker_checks: 14,
    },
    Recording {
        venue: COINM,
        symbol: "TRXUSD_PERP",
        file: "coinm_timeline_TRXUSD_PERP_2021-07-21.jsonl",
        snapshot: None,
        best_bid: ("0.05345", "594"),
        best_ask: ("0.05346", "1515"),
        ticker_checks: 13,
    },
];

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(format!(
        "{}/tests/fixtures/binance_futures/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
}

fn fp(text: &str) -> FixedPoint {
    text.parse().unwrap()
}

/// A recording's frames, its REST snapshot among them where it is kept apart.
fn recorded(recording: &Recording) -> Vec<RecordedFrame> {
    let mut frames = timeline::load_frames(&fixture(recording.file)).unwrap();
    if let Some(snapshot) = recording.snapshot {
        let body = std::fs::read_to_string(fixture(snapshot)).unwrap();
        replay::insert_snapshot(recording.venue, recording.symbol, &mut frames, body);
    }
    frames
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
}

fn levels(value: &serde_json::Value) -> Vec<(FixedPoint, FixedPoint)> {
    value
        .as_array()
        .unwrap()
        .iter()
        .map(|level| {
            (
                fp(level[0].as_str().unwrap()),
                fp(level[1].as_str().unwrap()),
            )
        })
        .collect()
}

fn set(side: &mut ReferenceSide, changes: Vec<(FixedPoint, FixedPoint)>) {
    for (price, amount) in changes {
        match amount.is_zero() {
            true => side.remove(&price),
            false => side.insert(price, amount),
        };
    }
}

impl ReferenceBook {
    fn top(&self, depth: usize) -> Sides {
        reference::top(&self.bids, &self.asks, depth)
    }

    fn on_snapshot(&mut self, body: &serde_json::Value) {
        self.bids.clear();
        self.asks.clear();
        set(&mut self.bids, levels(&body["bids"]));
        set(&mut self.asks, levels(&body["asks"]));
        self.snapshot_id = Some(body["lastUpdateId"].as_u64().unwrap());
        for event in std::mem::take(&mut self.buffered) {
            self.on_event(&event);
        }
        // The book is published once synced: the snapshot with the buffer applied.
        let synced = self.tops.len() - self.applied;
        self.tops.truncate(synced);
        self.tops.push(self.top(10));
    }

    /// docs/protocols.md, Binance futures: drop `u < lastUpdateId`; the first applied
    /// event has `U <= lastUpdateId <= u`; each next one's `pu` is the last `u`.
    fn on_event(&mut self, event: &serde_json::Value) {
        let Some(snapshot_id) = self.snapshot_id else {
            self.buffered.push(event.clone());
            return;
        };
        let id = |key: &str| event[key].as_u64().unwrap();
        let (first, last, previous) = (id("U"), id("u"), id("pu"));
        match self.last_u {
            None if last < snapshot_id => {
                self.dropped += 1;
                return;
            }
            None => assert!(
                first <= snapshot_id && snapshot_id <= last,
                "the first event straddles"
            ),
            Some(last_u) => assert_eq!(previous, last_u, "the pu chain is unbroken"),
        }
        set(&mut self.bids, levels(&event["b"]));
        set(&mut self.asks, levels(&event["a"]));
        self.last_u = Some(last);
        self.applied += 1;
        self.tops.push(self.top(10));
    }
}

/// The reference run over a recording's frames of `symbol`; the `bookTicker`s are checked
/// against the reference book (the replay below must equal it at every step).
fn reference(frames: &[RecordedFrame], symbol: &str) -> ReferenceBook {
    let mut book = ReferenceBook::default();
    for frame in frames {
        let value: serde_json::Value = serde_json::from_str(&frame.raw).unwrap();
        if frame.rest_url.is_some() {
            book.on_snapshot(&value);
            continue;
        }
        let data = &value["data"];
        if data["s"] != symbol {
            continue;
        }
        if data["e"] == "depthUpdate" {
            book.on_event(data);
        }
    }
    book
}

/// Replays `frames` of `symbol` with 1000-level REST books (`reference::replayed`): none
/// refused.
fn replayed(
    venue: VenueId,
    symbol: &str,
    frames: Vec<RecordedFrame>,
) -> (Vec<Sides>, replay::DiffBook) {
    let (published, book, refused) = reference::replayed(venue, symbol, frames, 1000);
    assert!(refused.is_empty(), "{venue} {symbol}: {refused:?}");
    (published, book)
}

#[test]
fn every_recording_replays_to_the_reference_book_with_the_pu_chain_verified() {
    for recording in &RECORDINGS {
        let context = format!("{} {}", recording.venue, recording.symbol);
        let frames = recorded(recording);
        let reference = reference(&frames, recording.symbol);
        let (published, book) = replayed(recording.venue, recording.symbol, frames);
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
        let best = |side| {
            book.sync
                .book
                .best(side)
                .map(|level| (level.price, level.amount))
        };
        let expected = |(price, amount): (&str, &str)| Some((fp(price), fp(amount)));
        assert_eq!(best(Side::Bid), expected(recording.best_bid), "{context}");
        assert_eq!(best(Side::Ask), expected(recording.best_ask), "{context}");
    }
}

/// The venue's own decoders and `BookSync`, frame by frame as a reader takes them: where a
/// `bookTicker` carries the `u` of the book's last event, its best bid and ask, and their
/// sizes, are the book's top (SOURCES.md: none disagrees).
#[test]
fn every_book_ticker_naming_the_last_event_agrees_with_the_book() {
    for recording in RECORDINGS
        .iter()
        .filter(|recording| recording.ticker_checks > 0)
    {
        let venue = recording.venue;
        let context = format!("{venue} {}", recording.symbol);
        let mut sync = BookSync::new(venue.facts().sequencing, 5000, 10_000);
        let mut update = BookUpdate::default();
        let mut checks = 0;
        // The `bookTicker`s seen, by `u`: a ticker is real time and often comes before
        // the 100 ms diff event that ends on its `u`.
        let mut tickers: BTreeMap<u64, [FixedPoint; 4]> = BTreeMap::new();
        let mut check = |sync: &BookSync, ticker: &[FixedPoint; 4]| {
            let best = |side| {
                sync.book
                    .best(side)
                    .map(|level| [level.price, level.amount])
            };
            assert_eq!(best(Side::Bid), Some([ticker[0], ticker[1]]), "{context}");
            assert_eq!(best(Side::Ask), Some([ticker[2], ticker[3]]), "{context}");
            checks += 1;
        };
        for frame in recorded(recording) {
            if frame.rest_url.is_some() {
                update.clear();
                venue
                    .decode_snapshot(frame.raw.as_bytes(), 5000, &mut update)
                    .unwrap();
                let outcome = sync.on_snapshot(&update);
                assert!(
                    matches!(outcome, SnapshotOutcome::Synced { .. }),
                    "{context}: {outcome:?}"
                );
                continue;
            }
            let message = venue
                .decode_diff(frame.raw.as_bytes(), 5000, &mut update)
                .unwrap();
            match message {
                Message::Book { stream } => {
                    let stream = std::str::from_utf8(stream).unwrap();
                    if venue.streams().diff_stream_symbol(stream).as_deref()
                        == Some(recording.symbol)
                    {
                        let outcome = sync.on_update(&update);
                        assert!(
                            matches!(
                                outcome,
                                UpdateOutcome::Applied
                                    | UpdateOutcome::Buffered { .. }
                                    | UpdateOutcome::Stale
                            ),
                            "{context}: {outcome:?}"
                        );
                        if outcome == UpdateOutcome::Applied
                            && let Some(ticker) = tickers.get(&update.last_id)
                        {
                            check(&sync, ticker);
                        }
                    }
                }
                _ => {
                    let value: serde_json::Value = serde_json::from_str(&frame.raw).unwrap();
                    let data = &value["data"];
                    let is_ticker = data["e"] == "bookTicker" && data["s"] == recording.symbol;
                    if is_ticker {
                        let field = |key: &str| fp(data[key].as_str().unwrap());
                        let ticker = [field("b"), field("B"), field("a"), field("A")];
                        let u = data["u"].as_u64().unwrap();
                        if sync.is_synced() && u == sync.last_id() {
                            check(&sync, &ticker);
                        }
                        tickers.insert(u, ticker);
                    }
                }
            }
        }
        assert_eq!(
            checks, recording.ticker_checks,
            "{context}: bookTicker checks"
        );
    }
}

/// `mergebook replay diff` follows a futures recording from the command line, one symbol
/// or every one, and prints the reference's last top.
#[test]
fn mergebook_replay_follows_a_futures_recording() {
    let recording = &RECORDINGS[3];
    let path = fixture(recording.file).display().to_string();
    let venue_file = format!("binance_coinm={path}");
    let symbol = format!("binance_coinm={}", recording.symbol);
    for arguments in [
        vec![
            "replay",
            "diff",
            "--venue",
            &venue_file,
            "--symbol",
            &symbol,
        ],
        vec!["replay", "diff", "--venue", &venue_file],
    ] {
        let (stdout, stderr) = common::run_ok(&arguments);
        let last: serde_json::Value =
            serde_json::from_str(stdout.lines().last().expect("summaries")).unwrap();
        let best = |side: &str| last[side][0]["price"].as_str().map(fp);
        assert_eq!(best("bids"), Some(fp(recording.best_bid.0)), "{stderr}");
        assert_eq!(best("asks"), Some(fp(recording.best_ask.0)), "{stderr}");
    }
}

// ---- the decoders: truncations, malformed frames, generated layouts ----

/// The conformance row of `venue`: its recorded diff and REST frames, top-N pushes as
/// its simulator writes them (none was recorded), and the malformed table.
pub fn row(venue: VenueId) -> Row {
    let mut frames: Vec<(Read, Vec<u8>)> = Vec::new();
    for recording in RECORDINGS
        .iter()
        .filter(|recording| recording.venue == venue)
    {
        for frame in recorded(recording).into_iter().take(40) {
            let read = match frame.rest_url {
                Some(_) => Read::RestSnapshot,
                None => Read::Diff,
            };
            // (A REST body kept in a file ends in its newline.)
            frames.push((read, frame.raw.trim_end().as_bytes().to_vec()));
        }
    }
    let mut book = TopBook {
        venue_sequence: 5_123_108_031_529,
        ..TopBook::default()
    };
    book.bids.push(Level {
        price: fp("61807.9"),
        amount: fp("3.598"),
    });
    book.asks.push(Level {
        price: fp("61808"),
        amount: fp("1.914"),
    });
    let mut top = Vec::new();
    let symbol = RECORDINGS
        .iter()
        .find(|recording| recording.venue == venue)
        .unwrap()
        .symbol;
    let stream = venue.streams().stream_name(symbol, 5);
    venue.simulated().encode_book(&stream, &book, 1, &mut top);
    frames.push((Read::Snapshot, top));
    Row {
        venue,
        frames,
        malformed: malformed_frames(),
    }
}

fn malformed_frames() -> Vec<Malformed> {
    let event = |members: &str| {
        format!(
            r#"{{"stream":"btcusdt@depth@100ms","data":{{"e":"depthUpdate","E":1,"T":1,"s":"BTCUSDT",{members}}}}}"#
        )
    };
    let top = |members: &str| {
        format!(
            r#"{{"stream":"btcusdt@depth5@100ms","data":{{"e":"depthUpdate","E":1,"T":1,"s":"BTCUSDT",{members}}}}}"#
        )
    };
    let number = |error| DecodeError::Number { at: 0, error };
    let diff = |frame: String, error| Malformed {
        exact: false,
        ..Malformed::exact(Read::Diff, frame, 5000, error)
    };
    let snapshot = |read, frame: String, error| Malformed {
        exact: false,
        ..Malformed::exact(read, frame, 5000, error)
    };
    vec![
        diff(
            event(r#""U":5,"u":9,"b":[],"a":[]"#),
            DecodeError::MissingKey("pu"),
        ),
        diff(
            event(r#""U":5,"u":9,"pu":4,"pu":4,"b":[],"a":[]"#),
            DecodeError::DuplicateKey("pu"),
        ),
        diff(
            event(r#""U":9,"u":5,"pu":4,"b":[],"a":[]"#),
            DecodeError::Invalid("depthUpdate with U greater than u"),
        ),
        diff(
            event(r#""U":5,"u":9,"pu":5,"b":[],"a":[]"#),
            DecodeError::Invalid("depthUpdate with pu not below U"),
        ),
        diff(
            event(r#""U":5,"u":9,"pu":-4,"b":[],"a":[]"#),
            DecodeError::Unexpected {
                at: 0,
                expected: "a digit",
            },
        ),
        diff(
            event(r#""U":5,"u":9,"pu":4,"b":[["x","1"]],"a":[]"#),
            number(FixedPointError::InvalidCharacter),
        ),
        diff(
            event(r#""U":5,"u":9,"pu":4,"b":[["1.123456789","1"]],"a":[]"#),
            number(FixedPointError::TooPrecise),
        ),
        diff(
            event(r#""U":5,"u":9,"pu":4,"b":[["1e3","1"]],"a":[]"#),
            number(FixedPointError::Exponent),
        ),
        diff(
            event(r#""U":5,"u":9,"pu":4,"b":[["1.5"]],"a":[]"#),
            DecodeError::Unexpected {
                at: 0,
                expected: "','",
            },
        ),
        diff(
            event(r#""U":5,"u":9,"pu":4,"b":"1","a":[]"#),
            DecodeError::MissingKey("b"),
        ),
        diff(
            r#"{"stream":"btcusdt@depth@100ms","data":{"U":5,"u":9,"pu":4,"b":[],"a":[]}}"#
                .to_owned(),
            DecodeError::MissingKey("e"),
        ),
        diff(
            format!("{} x", event(r#""U":5,"u":9,"pu":4,"b":[],"a":[]"#)),
            DecodeError::TrailingBytes { at: 0 },
        ),
        snapshot(
            Read::Snapshot,
            top(r#""U":5,"u":9,"pu":4,"b":[["1","1"],["2","1"]],"a":[]"#),
            DecodeError::Unsorted(Side::Bid),
        ),
        snapshot(
            Read::Snapshot,
            top(r#""U":5,"u":9,"pu":4,"b":[],"a":[["2","1"],["1","1"]]"#),
            DecodeError::Unsorted(Side::Ask),
        ),
        snapshot(
            Read::Snapshot,
            top(r#""U":5,"u":9,"b":[],"a":[]"#),
            DecodeError::MissingKey("pu"),
        ),
        snapshot(
            Read::RestSnapshot,
            r#"{"lastUpdateId":1,"E":1,"T":1,"asks":[]}"#.to_owned(),
            DecodeError::MissingKey("bids"),
        ),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any member order, whitespace, COIN-M's `ps`, 2026's `st` and unknown members: the
    /// levels and ids the frame holds, in diff mode and (best first) as a top N.
    #[test]
    fn generated_frames_decode_to_the_levels_they_hold(
        bids in proptest::collection::btree_map(1u64..1u64 << 50, 0u64..1u64 << 50, 0..30),
        asks in proptest::collection::btree_map(1u64..1u64 << 50, 0u64..1u64 << 50, 0..30),
        ids in (1u64..u64::MAX / 4, 1u64..1 << 20, 1u64..1 << 20),
        seed in any::<u64>(),
        spaced in any::<bool>(),
        coin_m in any::<bool>(),
    ) {
        let (first, span, hole) = ids;
        let (first, last, previous) = (first + hole, first + hole + span, first);
        let bids: Vec<(u64, u64)> = bids.into_iter().rev().collect();
        let asks: Vec<(u64, u64)> = asks.into_iter().collect();
        let mut data = vec![
            r#""e":"depthUpdate""#.to_owned(),
            r#""E":1723161257440"#.to_owned(),
            r#""T":1723161257432"#.to_owned(),
            r#""s":"BTCUSD_PERP""#.to_owned(),
            format!(r#""U":{first}"#),
            format!(r#""u":{last}"#),
            format!(r#""pu":{previous}"#),
            format!(r#""b":{}"#, pair_side(&bids, spaced)),
            format!(r#""a":{}"#, pair_side(&asks, spaced)),
            r#""st":2"#.to_owned(),
        ];
        if coin_m {
            data.push(r#""ps":"BTCUSD""#.to_owned());
        }
        let venue = if coin_m { COINM } else { USDM };
        let mut members = vec![
            r#""stream":"btcusd_perp@depth@0ms""#.to_owned(),
            format!(r#""data":{}"#, object(&mut data, seed, spaced)),
        ];
        let frame = object(&mut members, seed.rotate_left(7), spaced);
        let mut update = BookUpdate::default();
        let message = venue.decode_diff(frame.as_bytes(), 5000, &mut update);
        prop_assert_eq!(message, Ok(Message::Book { stream: b"btcusd_perp@depth@0ms" }), "{}", frame);
        let levels = |side: &[(u64, u64)]| -> Vec<Level> {
            side.iter().map(|&(p, q)| Level { price: FixedPoint::from_raw(p), amount: FixedPoint::from_raw(q) }).collect()
        };
        prop_assert_eq!(&update.bids, &levels(&bids));
        prop_assert_eq!(&update.asks, &levels(&asks));
        prop_assert_eq!((update.first_id, update.last_id, update.previous_last_id), (first, last, previous));

        let mut top = TopBook::default();
        let message = venue.decode(frame.as_bytes(), 10, &mut top);
        prop_assert_eq!(message, Ok(Message::Book { stream: b"btcusd_perp@depth@0ms" }), "{}", frame);
        let kept = |side: &[(u64, u64)]| -> Vec<Level> {
            levels(side).into_iter().filter(|level| !level.amount.is_zero()).take(10).collect()
        };
        let (kept_bids, kept_asks) = (kept(&bids), kept(&asks));
        prop_assert_eq!(top.bids.as_slice(), kept_bids.as_slice());
        prop_assert_eq!(top.asks.as_slice(), kept_asks.as_slice());
        prop_assert_eq!(top.venue_sequence, last);
    }
}

// ---- against the simulator ----

/// Both markets in diff mode: synced from REST, every book the simulator's, a lost event
/// found by its `pu` (the simulator's ids are never consecutive, so spot's rule would see
/// a gap in every event), and only the broken symbol's book resynced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_broken_pu_chain_resyncs_that_symbol_only() {
    for (venue, symbol, other) in [
        (USDM, "BTCUSDT", "ETHUSDT"),
        (COINM, "BTCUSD_PERP", "ETHUSD_PERP"),
    ] {
        let harness = Harness::start(venue, symbol, other).await;
        harness.a_lost_event_rebuilds_that_book_alone(symbol).await;
        harness.service.stop().await;
    }
}

/// COIN-M's inverse perpetual beside USDⓈ-M's linear one and Bybit's inverse, in an
/// instrument counting USD: COIN-M's levels are its contracts times their value.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coin_m_contracts_merge_as_notionals_beside_the_other_perpetuals() {
    let config = TestConfig::new()
        .instrument(
            "BTC/USD",
            &[(COINM, "BTCUSD_PERP"), (VenueId::Bybit, "inverse:BTCUSD")],
        )
        .last_instrument("unit", "quote")
        .contract_size(COINM, "100")
        .contract_size(VenueId::Bybit, "1");
    let (_simulator, service, summary) =
        in_band::first_synced_summary(config, "90000", &[COINM, VenueId::Bybit]).await;
    assert_eq!(
        summary.amount_unit.as_ref().map(|unit| unit.as_str()),
        Some("USD")
    );
    let coin_m_levels: Vec<_> = summary
        .book
        .bids
        .as_slice()
        .iter()
        .filter(|level| level.venue == COINM)
        .collect();
    assert!(!coin_m_levels.is_empty());
    // A hundred dollars a contract: every COIN-M amount is a whole multiple of 100.
    for level in coin_m_levels {
        assert_eq!(level.amount.raw() % (100 * 100_000_000), 0, "{level:?}");
    }
    service.stop().await;
}

/// Snapshot mode: the top-N streams, each push a whole book replacing the last.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn top_n_pushes_replace_the_book_in_snapshot_mode() {
    for (venue, symbol, other) in [
        (USDM, "BTCUSDT", "ETHUSDT"),
        (COINM, "BTCUSD_PERP", "ETHUSD_PERP"),
    ] {
        let harness =
            Harness::start_in(StreamKind::Snapshots, venue, symbol, other, |config| config).await;
        harness.synced().await;
        let checked = harness
            .books_stay_true_for(Duration::from_millis(600))
            .await;
        assert!(checked > 3, "{venue}: {checked} books");
        harness.service.stop().await;
    }
}

/// Binance closes a connection after 24 hours: the reader renews it first (here after a
/// second), in both modes, without a gap (`in_band::renewals_leave_no_gap`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renewed_connections_leave_no_gap_in_the_merged_book() {
    in_band::renewals_leave_no_gap(USDM, ("BTCUSDT", "ETHUSDT")).await;
}

/// Duplicated events are dropped as already applied (no gap); swapped ones break the
/// `pu` chain, a gap that resyncs the book; no book published meanwhile is one the
/// venue did not have.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicates_are_dropped_and_swapped_events_resync_without_a_wrong_book() {
    let harness = Harness::start(USDM, "BTCUSDT", "ETHUSDT").await;
    harness.both_books_synced("at the start").await;
    harness.simulator.duplicate_events(USDM, 5);
    let checked = harness
        .books_stay_true_for(Duration::from_millis(600))
        .await;
    assert!(checked > 0);
    assert_eq!(
        harness.metric(&harness.gaps()),
        0.0,
        "duplicates are no gap"
    );
    harness.simulator.swap_events(USDM, 1);
    harness.counted(&harness.gaps(), 1.0).await;
    harness
        .books_stay_true_for(Duration::from_millis(600))
        .await;
    harness.both_books_synced("after the swap").await;
    harness.service.stop().await;
}

/// A renewal whose new connection fails (the venue closes it as it opens) is counted and
/// given up, and the old connection goes on: the venue stays in the merged book, its books
/// true. Once new connections open again, a renewal takes over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_renewal_leaves_the_old_connection_serving() {
    let renew = |config: TestConfig| config.set("venues.binance_usdm.renew_after_ms", 1000);
    let harness = Harness::start_in(StreamKind::Diff, USDM, "BTCUSDT", "ETHUSDT", renew).await;
    harness.both_books_synced("at the start").await;
    harness.simulator.close_new_connections(USDM, true);
    let failed = r#"orderbook_connection_renewals_total{exchange="binance_usdm",outcome="failed"}"#;
    harness.counted(failed, 2.0).await;
    let renewed =
        r#"orderbook_connection_renewals_total{exchange="binance_usdm",outcome="renewed"}"#;
    assert_eq!(harness.metric(renewed), 0.0);
    // Still the first connection: the venue synced, every book the simulator's.
    let checked = harness
        .books_stay_true_for(Duration::from_millis(300))
        .await;
    assert!(checked > 0);
    harness.synced().await;
    harness.simulator.close_new_connections(USDM, false);
    harness.counted(renewed, 1.0).await;
    harness.service.stop().await;
}
