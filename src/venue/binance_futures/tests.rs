//! Binance futures' private pieces: the `pu` chain's rules, symbols, snapshot limits.

use super::*;
use crate::book::diff_sync::test_events::{event, snapshot};
use crate::book::diff_sync::{BookSync, SnapshotOutcome, UpdateOutcome};
use crate::json::DecodeError;
use crate::venue::binance_coinm::BinanceCoinm;
use crate::venue::binance_usdm::BinanceUsdm;

/// An event covering `first..=last` after the event that ended at `previous`.
fn chained(previous: u64, first: u64, last: u64) -> BookUpdate {
    BookUpdate {
        previous_last_id: previous,
        ..event(first, last, 1, 1)
    }
}

#[test]
fn an_event_ending_on_the_snapshot_id_is_applied_and_the_chain_continues_from_it() {
    let mut sync = BookSync::new(&PreviousIdChain, 100, 100);
    sync.on_update(&chained(80, 90, 95));
    sync.on_update(&chained(95, 96, 100));
    assert_eq!(
        sync.on_snapshot(&snapshot(100)),
        SnapshotOutcome::Synced {
            applied: 1,
            dropped: 1
        }
    );
    assert_eq!(
        sync.on_update(&chained(100, 110, 120)),
        UpdateOutcome::Applied
    );
    assert_eq!(sync.last_id(), 120);
}

#[test]
fn events_below_the_snapshot_after_it_are_dropped_and_the_straddling_one_applied() {
    let mut sync = BookSync::new(&PreviousIdChain, 100, 100);
    sync.on_update(&chained(80, 90, 95));
    assert_eq!(
        sync.on_snapshot(&snapshot(102)),
        SnapshotOutcome::Synced {
            applied: 0,
            dropped: 1
        }
    );
    assert_eq!(sync.on_update(&chained(95, 96, 99)), UpdateOutcome::Stale);
    assert_eq!(
        sync.on_update(&chained(99, 101, 105)),
        UpdateOutcome::Applied
    );
    assert_eq!(
        sync.on_update(&chained(105, 106, 106)),
        UpdateOutcome::Applied
    );
}

#[test]
fn a_broken_pu_chain_is_a_gap_even_with_ids_in_order() {
    let mut sync = BookSync::new(&PreviousIdChain, 100, 100);
    sync.on_update(&chained(80, 90, 100));
    sync.on_snapshot(&snapshot(95));
    assert!(sync.is_synced());
    // Consecutive to spot's rule, but `pu` names an event the book never saw.
    assert_eq!(sync.on_update(&chained(103, 101, 110)), UpdateOutcome::Gap);
    assert!(!sync.is_synced());
}

#[test]
fn a_first_event_after_the_snapshot_that_does_not_straddle_it_is_a_gap() {
    let mut sync = BookSync::new(&PreviousIdChain, 100, 100);
    sync.on_update(&chained(80, 90, 95));
    sync.on_snapshot(&snapshot(96));
    assert_eq!(sync.on_update(&chained(97, 98, 99)), UpdateOutcome::Gap);
}

#[test]
fn a_snapshot_older_than_the_oldest_event_is_too_old() {
    let mut sync = BookSync::new(&PreviousIdChain, 100, 100);
    sync.on_update(&chained(80, 90, 95));
    assert_eq!(sync.on_snapshot(&snapshot(89)), SnapshotOutcome::TooOld);
}

#[test]
fn symbols_of_each_market() {
    for symbol in ["BTCUSDT", "BTCUSDT_250926", "1000PEPEUSDT", "btcusdc"] {
        assert_eq!(BinanceUsdm.check_symbol(symbol), Ok(()), "{symbol}");
        assert!(!BinanceUsdm.inverse(symbol));
    }
    for symbol in ["BTCUSD_PERP", "BTC-USDT", "BTCUSDT_2509", ""] {
        assert!(BinanceUsdm.check_symbol(symbol).is_err(), "{symbol}");
    }
    for symbol in ["BTCUSD_PERP", "ETHUSD_250926", "btcusd_perp"] {
        assert_eq!(BinanceCoinm.check_symbol(symbol), Ok(()), "{symbol}");
        assert!(BinanceCoinm.inverse(symbol) && BinanceCoinm.sized_in_contracts(symbol));
    }
    for symbol in [
        "BTCUSDT",
        "BTCUSDT_PERP",
        "BTCUSD",
        "BTCUSD_2509",
        "BTC_USD_PERP",
    ] {
        assert!(BinanceCoinm.check_symbol(symbol).is_err(), "{symbol}");
    }
    assert_eq!(
        BinanceCoinm
            .quote_currency("BTCUSD_PERP", "BTC")
            .map(|quote| quote.to_string()),
        Some("USD".to_owned())
    );
    assert_eq!(
        BinanceUsdm
            .quote_currency("ETHUSDC_250926", "ETH")
            .map(|quote| quote.to_string()),
        Some("USDC".to_owned())
    );
}

#[test]
fn snapshot_limits_are_the_ones_the_endpoint_takes() {
    let url = BinanceCoinm.snapshot_url("https://dapi.binance.com", "btcusd_perp", 300);
    assert_eq!(
        url,
        "https://dapi.binance.com/dapi/v1/depth?symbol=BTCUSD_PERP&limit=500"
    );
    assert_eq!(
        BinanceCoinm.snapshot_symbol(&url).as_deref(),
        Some("BTCUSD_PERP")
    );
    assert_eq!(BinanceUsdm.snapshot_symbol(&url), None);
    assert_eq!(
        BinanceUsdm.snapshot_url("https://fapi.binance.com", "BTCUSDT", 5000),
        "https://fapi.binance.com/fapi/v1/depth?symbol=BTCUSDT&limit=1000"
    );
    assert_eq!(
        [10, 50, 100, 500, 1000].map(|limit| BinanceUsdm.snapshot_weight(limit)),
        [2, 2, 5, 10, 20]
    );
}

// ---- the layout fast paths against the general walk ----

const RECORDINGS: [&str; 3] = [
    include_str!(
        "../../../tests/fixtures/binance_futures/usdm_timeline_BTCUSDT_depth0ms_2024-08-08_prefix.jsonl"
    ),
    include_str!(
        "../../../tests/fixtures/binance_futures/coinm_timeline_BTCUSD_PERP_depth0ms_2024-08-08_prefix.jsonl"
    ),
    include_str!(
        "../../../tests/fixtures/binance_futures/usdm_diff_depth_SUSHIUSDT_100ms_combined_stream_2021-07-22.jsonl"
    ),
];

/// Every recorded diff event, as its stream sent it (a timeline's lines wrap it); read
/// once for every case of the proptest below.
fn recorded_events() -> &'static [String] {
    static EVENTS: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    EVENTS.get_or_init(|| {
        RECORDINGS
            .iter()
            .flat_map(|recording| recording.lines())
            .map(|line| {
                let value: serde_json::Value = serde_json::from_str(line).unwrap();
                match value["raw"].as_str() {
                    Some(raw) => raw.to_owned(),
                    None => line.to_owned(),
                }
            })
            .filter(|frame| frame.contains("depthUpdate"))
            .collect()
    })
}

/// A frame's two readings: by a layout fast path (`None`: not its layout) and by the
/// general walk, each with what it wrote.
type BothReadings<'a, Out> = (
    (Option<Message<'a>>, Out),
    (Result<Message<'a>, DecodeError>, Out),
);

/// `frame` read as a diff event both ways.
fn diff_both_ways(frame: &[u8]) -> BothReadings<'_, BookUpdate> {
    let (mut fast, mut general) = (BookUpdate::default(), BookUpdate::default());
    let fast_message = decode::fast_diff(frame, 1000, &mut fast);
    let general_message = decode::general_diff(frame, 1000, &mut general);
    ((fast_message, fast), (general_message, general))
}

/// `frame` read as a top-N push (10 levels kept) both ways, its ids beside.
fn top_both_ways(frame: &[u8]) -> BothReadings<'_, (TopBook, [u64; 3])> {
    let (mut fast, mut general) = ((TopBook::default(), [0; 3]), (TopBook::default(), [0; 3]));
    let fast_message = decode::fast_top(frame, 10, &mut fast.0, &mut fast.1);
    let general_message = decode::general_top(frame, 10, &mut general.0, &mut general.1);
    ((fast_message, fast), (general_message, general))
}

#[test]
fn recorded_events_take_the_layout_fast_path_and_read_as_the_general_walk_does() {
    let events = recorded_events();
    assert!(events.len() > 600);
    for frame in events {
        let ((fast_message, fast), (general_message, general)) = diff_both_ways(frame.as_bytes());
        assert_eq!(
            general_message,
            Ok(fast_message.expect("the fast path")),
            "{frame}"
        );
        assert_eq!(fast, general, "{frame}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]

    /// Whatever a layout fast path accepts, the general walk reads the same way, on a
    /// recorded event with one edit, read as a diff event and as a top-N push.
    #[test]
    fn the_layout_fast_paths_agree_with_the_general_walk(
        which in 0usize..64,
        edit in crate::venue::layout_edits::edit(),
    ) {
        let events = recorded_events();
        let mut frame = events[which * 11 % events.len()].clone().into_bytes();
        crate::venue::layout_edits::apply(&mut frame, edit);
        let ((fast_message, fast), (general_message, general)) = diff_both_ways(&frame);
        if let Some(message) = fast_message {
            proptest::prop_assert_eq!(general_message, Ok(message));
            proptest::prop_assert_eq!(fast, general);
        }
        let ((fast_message, fast), (general_message, general)) = top_both_ways(&frame);
        if let Some(message) = fast_message {
            proptest::prop_assert_eq!(general_message, Ok(message));
            proptest::prop_assert_eq!(fast, general);
        }
    }
}
