//! Full-depth books from the real diff recordings (Binance NKNUSDT and LRCBTC, Bitstamp
//! ethusd, batbtc and usdteur): per-pair files with their REST snapshot, and the
//! timelines with the snapshots interleaved as they arrived, through the same sync rules
//! as the live reader. The expected figures are SOURCES.md's verification notes.

use crate::common;

use mergebook::book::Side;
use mergebook::fixed::FixedPoint;
use mergebook::merger::kway::MergedBook;
use mergebook::merger::summary::VenueState;
use mergebook::record::timeline::{self, RecordedFrame};
use mergebook::replay::{self, DiffBook, DiffRecording};
use mergebook::venue::VenueId;
use std::path::Path;

struct Expected {
    venue: VenueId,
    symbol: &'static str,
    diffs: &'static str,
    snapshot: &'static str,
    timeline: &'static str,
    dropped: u64,
    applied: u64,
    final_id: Option<u64>,
    levels: Option<(usize, usize)>,
    best_bid: (&'static str, Option<&'static str>),
    best_ask: (&'static str, Option<&'static str>),
}

const BINANCE_TIMELINE: &str = "tests/fixtures/binance/timeline_NKNUSDT_LRCBTC.jsonl";
const BITSTAMP_TIMELINE: &str = "tests/fixtures/bitstamp/timeline_ethusd_batbtc_usdteur.jsonl";

const EXPECTED: &[Expected] = &[
    Expected {
        venue: VenueId::Binance,
        symbol: "NKNUSDT",
        diffs: "tests/fixtures/binance/diff_depth_NKNUSDT_combined_stream.jsonl",
        snapshot: "tests/fixtures/binance/rest_depth_snapshot_NKNUSDT_limit1000.json",
        timeline: BINANCE_TIMELINE,
        dropped: 1,
        applied: 149,
        final_id: Some(499_870_179),
        levels: Some((614, 994)),
        best_bid: ("0.35270000", Some("9602.00000000")),
        best_ask: ("0.35310000", Some("152.00000000")),
    },
    Expected {
        venue: VenueId::Binance,
        symbol: "LRCBTC",
        diffs: "tests/fixtures/binance/diff_depth_LRCBTC_combined_stream.jsonl",
        snapshot: "tests/fixtures/binance/rest_depth_snapshot_LRCBTC_limit1000.json",
        timeline: BINANCE_TIMELINE,
        dropped: 2,
        applied: 13,
        final_id: Some(259_345_563),
        levels: None,
        best_bid: ("0.00000637", Some("2500")),
        best_ask: ("0.00000638", Some("2285")),
    },
    Expected {
        venue: VenueId::Bitstamp,
        symbol: "ethusd",
        diffs: "tests/fixtures/bitstamp/diff_order_book_ethusd.jsonl",
        snapshot: "tests/fixtures/bitstamp/rest_order_book_ethusd.json",
        timeline: BITSTAMP_TIMELINE,
        dropped: 12,
        applied: 73,
        final_id: None,
        levels: None,
        best_bid: ("3800.78", Some("0.60000000")),
        best_ask: ("3803.58", Some("15.09750054")),
    },
    Expected {
        venue: VenueId::Bitstamp,
        symbol: "batbtc",
        diffs: "tests/fixtures/bitstamp/diff_order_book_batbtc.jsonl",
        snapshot: "tests/fixtures/bitstamp/rest_order_book_batbtc.json",
        timeline: BITSTAMP_TIMELINE,
        dropped: 25,
        applied: 111,
        final_id: None,
        levels: None,
        best_bid: ("0.00002834", None),
        best_ask: ("0.00002843", None),
    },
    Expected {
        venue: VenueId::Bitstamp,
        symbol: "usdteur",
        diffs: "tests/fixtures/bitstamp/diff_order_book_usdteur.jsonl",
        snapshot: "tests/fixtures/bitstamp/rest_order_book_usdteur.json",
        timeline: BITSTAMP_TIMELINE,
        dropped: 12,
        applied: 89,
        final_id: None,
        levels: None,
        best_bid: ("0.88596", None),
        best_ask: ("0.88657", None),
    },
];

fn path(relative: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(relative)
}

fn fp(text: &str) -> FixedPoint {
    text.parse().unwrap()
}

fn per_pair_frames(expected: &Expected) -> Vec<RecordedFrame> {
    let mut frames = timeline::load_frames(&path(expected.diffs)).unwrap();
    let snapshot = std::fs::read_to_string(path(expected.snapshot)).unwrap();
    replay::insert_snapshot(expected.venue, expected.symbol, &mut frames, snapshot);
    frames
}

/// Replays one venue's frames following the expected symbol; returns its book's outcome
/// and every published book (`None` when the venue was not synced in that summary).
fn run(expected: &Expected, frames: Vec<RecordedFrame>) -> (DiffBook, Vec<Option<MergedBook>>) {
    let recordings = [DiffRecording {
        venue: expected.venue,
        frames,
        symbols: vec![expected.symbol.to_owned()],
    }];
    let mut plan = replay::plan_diff(&recordings, 5000).unwrap();
    let mut published = Vec::new();
    let depths = replay::DiffDepths {
        depth: 10,
        max_levels: 5000,
        snapshot_depth: 1000,
    };
    replay::replay_diff(
        &recordings,
        &mut plan,
        depths,
        |_, summary| {
            let synced = summary.venue_state(expected.venue) == VenueState::Synced;
            published.push(synced.then_some(summary.book));
        },
        |venue, frame, error| panic!("{venue} frame {frame}: {error}"),
    );
    (plan.books.remove(0), published)
}

fn check_final_book(expected: &Expected, outcome: &DiffBook, source: &str) {
    let context = format!("{} {} ({source})", expected.venue, expected.symbol);
    let DiffBook { stats, sync, .. } = outcome;
    assert!(sync.is_synced(), "{context}");
    assert_eq!(stats.dropped, expected.dropped, "{context}: dropped");
    assert_eq!(stats.applied, expected.applied, "{context}: applied");
    assert_eq!(stats.snapshots, 1, "{context}");
    assert_eq!((stats.gaps, stats.crossings), (0, 0), "{context}");
    assert_eq!(
        sync.book.absent_deletes, 0,
        "{context}: every zero-amount deletion hits an existing level"
    );
    if let Some(id) = expected.final_id {
        assert_eq!(sync.last_id(), id, "{context}: final id");
    }
    if let Some((bids, asks)) = expected.levels {
        assert_eq!(
            (sync.book.len(Side::Bid), sync.book.len(Side::Ask)),
            (bids, asks),
            "{context}: level counts"
        );
    }
    for (side, (price, amount)) in [
        (Side::Bid, expected.best_bid),
        (Side::Ask, expected.best_ask),
    ] {
        let best = sync.book.best(side).unwrap();
        assert_eq!(best.price, fp(price), "{context}: best {side:?}");
        if let Some(amount) = amount {
            assert_eq!(best.amount, fp(amount), "{context}: best {side:?} amount");
        }
    }
}

#[test]
fn per_pair_recordings_reach_the_listed_final_books() {
    for expected in EXPECTED {
        let (outcome, published) = run(expected, per_pair_frames(expected));
        check_final_book(expected, &outcome, "per-pair files");
        assert_eq!(
            published.len() as u64,
            expected.applied + 1,
            "one per change"
        );
    }
}

#[test]
fn timelines_reach_the_listed_final_books() {
    for expected in EXPECTED {
        let frames = timeline::load_frames(&path(expected.timeline)).unwrap();
        let (outcome, _) = run(expected, frames);
        check_final_book(expected, &outcome, "timeline");
    }
}

/// Every book a faulty replay publishes is one the clean replay published too: whatever
/// the fault, no book with a hole in it, and none mixing events, reaches the merge.
fn assert_only_true_books(clean: &[Option<MergedBook>], faulty: &[Option<MergedBook>]) {
    for book in faulty.iter().flatten() {
        assert!(
            clean.iter().flatten().any(|truth| truth == book),
            "published a book the venue never had: {book:?}"
        );
    }
}

#[test]
fn a_missing_event_is_a_gap_and_nothing_after_it_is_published() {
    let expected = &EXPECTED[0];
    let clean = per_pair_frames(expected);
    let (_, truth) = run(expected, clean.clone());
    let mut faulty = clean;
    faulty.remove(60); // an event well after the snapshot
    let (outcome, published) = run(expected, faulty);
    assert_eq!(outcome.stats.gaps, 1);
    assert!(!outcome.sync.is_synced());
    let first_out = published.iter().position(Option::is_none).unwrap();
    assert!(first_out > 1, "synced before the gap");
    assert!(
        published[first_out..].iter().all(Option::is_none),
        "after the gap, the venue stays out of the merge until a new snapshot"
    );
    assert_only_true_books(&truth, &published);
}

#[test]
fn duplicates_are_dropped_and_reordered_events_never_corrupt_the_book() {
    let expected = &EXPECTED[0];
    let clean = per_pair_frames(expected);
    let (clean_outcome, truth) = run(expected, clean.clone());

    let mut duplicated = Vec::new();
    for frame in &clean {
        duplicated.push(frame.clone());
        duplicated.push(frame.clone());
    }
    let (outcome, published) = run(expected, duplicated);
    assert_eq!(outcome.sync.last_id(), clean_outcome.sync.last_id());
    assert_eq!(outcome.stats.applied, clean_outcome.stats.applied);
    assert_eq!(outcome.stats.gaps, 0);
    assert_only_true_books(&truth, &published);

    // Frames replay in receive order: swap what was received, not when.
    let mut reordered = clean;
    let later = reordered[81].raw.clone();
    reordered[81].raw = std::mem::replace(&mut reordered[80].raw, later);
    let (outcome, published) = run(expected, reordered);
    assert_eq!(outcome.stats.gaps, 1, "the later event first is a gap");
    assert_only_true_books(&truth, &published);
}

#[test]
fn a_snapshot_older_than_the_buffer_is_refused() {
    let expected = &EXPECTED[0];
    let mut frames = timeline::load_frames(&path(expected.diffs)).unwrap();
    // The snapshot arrives only after the first three events are buffered: it is older
    // than the first of them that it would have to join (U = lastUpdateId + 1 is event 2).
    let snapshot = std::fs::read_to_string(path(expected.snapshot)).unwrap();
    frames.remove(0);
    frames.remove(0);
    replay::insert_snapshot(expected.venue, expected.symbol, &mut frames, snapshot);
    let (outcome, published) = run(expected, frames);
    assert_eq!(outcome.stats.snapshots_too_old, 1);
    assert!(!outcome.sync.is_synced());
    assert!(published.iter().all(Option::is_none));
}

/// `mergebook replay diff` follows every symbol of the recordings it is given, both
/// venues' timelines in one run, each symbol its own instrument.
#[test]
fn mergebook_replay_runs_the_same_checks_from_the_command_line() {
    let reports = [
        "binance NKNUSDT: 150 events, 149 applied, 1 dropped, 0 gaps, 0 crossings, \
         0 checksum mismatches, 1 snapshots (0 too old, 0 refused), 0 decode errors; \
         synced at id 499870179, 614 bids, 994 asks",
        "binance LRCBTC: 15 events, 13 applied, 2 dropped, 0 gaps",
        "bitstamp ethusd: 85 events, 73 applied, 12 dropped, 0 gaps",
        "bitstamp batbtc: 136 events, 111 applied, 25 dropped, 0 gaps",
        "bitstamp usdteur: 101 events, 89 applied, 12 dropped, 0 gaps",
    ];
    let (stdout, stderr) = common::run_ok(&[
        "replay",
        "diff",
        "--venue",
        &format!("binance={BINANCE_TIMELINE}"),
        "--venue",
        &format!("bitstamp={BITSTAMP_TIMELINE}"),
    ]);
    for report in reports {
        assert!(stderr.contains(report), "{report}\n{stderr}");
    }
    let summaries: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let times: Vec<u64> = summaries
        .iter()
        .map(|s| s["ts_ns"].as_u64().unwrap())
        .collect();
    assert!(times.is_sorted(), "in receive order across venues");
    for expected in EXPECTED {
        let instrument = expected.symbol.to_ascii_uppercase();
        let last = summaries
            .iter()
            .rev()
            .find(|summary| summary["instrument"] == instrument.as_str())
            .unwrap_or_else(|| panic!("no summary of {instrument}"));
        assert_eq!(last["venues"][expected.venue.name()], "synced");
        for (side, (price, _)) in [("bids", expected.best_bid), ("asks", expected.best_ask)] {
            let printed: FixedPoint = last[side][0]["price"].as_str().unwrap().parse().unwrap();
            assert_eq!(printed, fp(price), "{instrument} {side}");
        }
    }
}

/// `--symbol` restricts a replay to the symbols it names, and one the recording does not
/// hold is refused.
#[test]
fn mergebook_replay_diff_follows_only_the_symbols_named() {
    let timeline = format!("binance={BINANCE_TIMELINE}");
    let (stdout, stderr) = common::run_ok(&[
        "replay",
        "diff",
        "--venue",
        &timeline,
        "--symbol",
        "binance=LRCBTC",
    ]);
    assert!(stderr.contains("binance LRCBTC: 15 events"), "{stderr}");
    assert!(!stderr.contains("NKNUSDT"), "{stderr}");
    assert!(
        stdout
            .lines()
            .all(|line| line.contains(r#""instrument":"LRCBTC""#))
    );

    let stderr = common::run_failing(&[
        "replay",
        "diff",
        "--venue",
        &timeline,
        "--symbol",
        "binance=BTCUSDT",
    ]);
    assert!(
        stderr.contains("it holds no binance diff event of BTCUSDT"),
        "{stderr}"
    );
}

/// A per-pair file takes its REST snapshot apart (`--snapshot`), joined after the first
/// event as a live reader would ask for it.
#[test]
fn mergebook_replay_diff_joins_a_snapshot_given_apart() {
    let expected = &EXPECTED[0];
    let (_, stderr) = common::run_ok(&[
        "replay",
        "diff",
        "--venue",
        &format!("binance={}", expected.diffs),
        "--snapshot",
        &format!("binance={}", expected.snapshot),
    ]);
    assert!(
        stderr.contains("binance NKNUSDT: 150 events, 149 applied, 1 dropped, 0 gaps"),
        "{stderr}"
    );
    assert!(
        stderr.contains("synced at id 499870179, 614 bids, 994 asks"),
        "{stderr}"
    );
}

/// A quiet book: the real Bitstamp timeline with every change of `batbtc` taken out, its
/// subscription and REST snapshot kept (a pair whose market did not move). The replay
/// publishes it, synced, from the snapshot alone.
#[test]
fn a_quiet_book_is_published_from_its_snapshot() {
    let expected = EXPECTED
        .iter()
        .find(|expected| expected.symbol == "batbtc" && expected.timeline == BITSTAMP_TIMELINE)
        .expect("the batbtc row");
    let mut frames = timeline::load_frames(&path(BITSTAMP_TIMELINE)).unwrap();
    let changes = |frame: &RecordedFrame| {
        frame.raw.contains(r#""channel":"diff_order_book_batbtc""#)
            && frame.raw.contains(r#""event":"data""#)
    };
    let before = frames.len();
    frames.retain(|frame| !changes(frame));
    assert!(frames.len() + 100 < before, "the pair's changes taken out");
    let (outcome, published) = run(expected, frames);
    assert!(outcome.sync.is_synced());
    assert_eq!((outcome.stats.applied, outcome.stats.snapshots), (0, 1));
    let snapshot: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(path(expected.snapshot)).unwrap()).unwrap();
    let best_bid = fp(snapshot["bids"][0][0].as_str().unwrap());
    let books: Vec<&MergedBook> = published.iter().flatten().collect();
    assert_eq!(books.len(), 1, "published once, from the snapshot");
    assert_eq!(books[0].bids.as_slice()[0].price, best_bid);
}
