//! `mergebook replay snapshot` on the recorded snapshot frames prints the merged book that
//! an independent computation (serde_json + concatenate, sort, take N) expects; a
//! recording that does not fit the mode, or holds no book, is refused with the reason.

use crate::common;

use mergebook::venue::VenueId;
use serde_json::Value;

const BINANCE: &str = "tests/fixtures/binance/partial_depth20_BTCUSDT_combined.json";
const BITSTAMP: &str = "tests/fixtures/bitstamp/order_book_btcusd_top100_samples_2020.jsonl";
const DEPTH: usize = 10;

/// (exchange, price, amount) of the best `DEPTH` levels of one side of the last frame of
/// each venue, merged the obvious way.
fn expected_side(side: &str, bids: bool) -> Vec<(String, String, String)> {
    let last_book = |path: &str, venue: &str| -> Vec<(String, String, String)> {
        let text = std::fs::read_to_string(path).unwrap();
        let frame: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
        let levels = frame["data"][side].as_array().unwrap();
        levels
            .iter()
            .take(DEPTH)
            .map(|level| {
                let decimal =
                    |v: &Value| format!("{:.8}", v.as_str().unwrap().parse::<f64>().unwrap());
                (venue.to_owned(), decimal(&level[0]), decimal(&level[1]))
            })
            .collect()
    };
    let mut all = last_book(BINANCE, "binance");
    all.extend(last_book(BITSTAMP, "bitstamp"));
    let key = |level: &(String, String, String)| level.1.parse::<f64>().unwrap();
    all.sort_by(|a, b| {
        let order = key(a).partial_cmp(&key(b)).unwrap();
        let order = if bids { order.reverse() } else { order };
        order
            .then(key_amount(b).partial_cmp(&key_amount(a)).unwrap())
            .then(a.0.cmp(&b.0))
    });
    all.truncate(DEPTH);
    all
}

fn key_amount(level: &(String, String, String)) -> f64 {
    level.2.parse().unwrap()
}

#[test]
fn replay_of_recorded_snapshots_prints_the_expected_merged_book() {
    let (stdout, _) = common::run_ok(&[
        "replay",
        "snapshot",
        "--venue",
        &format!("binance={BINANCE}"),
        "--venue",
        &format!("bitstamp={BITSTAMP}"),
        "--instrument",
        "BTC/USD",
        "--depth",
        &DEPTH.to_string(),
    ]);
    let summaries: Vec<Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    // One Binance frame and two Bitstamp frames, interleaved by line: three summaries.
    assert_eq!(summaries.len(), 3);
    for (index, summary) in summaries.iter().enumerate() {
        assert_eq!(summary["seq"], index as u64 + 1);
        assert_eq!(summary["instrument"], "BTC/USD");
    }
    assert_eq!(summaries[0]["venues"]["bitstamp"], "connecting");

    let last = summaries.last().unwrap();
    assert_eq!(last["venues"]["binance"], "synced");
    assert_eq!(last["venues"]["bitstamp"], "synced");
    for (side, bids) in [("bids", true), ("asks", false)] {
        let printed: Vec<(String, String, String)> = last[side]
            .as_array()
            .unwrap()
            .iter()
            .map(|level| {
                let field = |key: &str| level[key].as_str().unwrap().to_owned();
                (field("exchange"), field("price"), field("amount"))
            })
            .collect();
        assert_eq!(printed, expected_side(side, bids), "{side}");
    }
    // The 2020 Bitstamp book sits far below the 2021 Binance one: crossed, negative spread.
    let best_bid: f64 = last["bids"][0]["price"].as_str().unwrap().parse().unwrap();
    let best_ask: f64 = last["asks"][0]["price"].as_str().unwrap().parse().unwrap();
    assert_eq!(
        last["spread"].as_str().unwrap(),
        format!("{:.8}", best_ask - best_bid)
    );
}

#[test]
fn replay_refuses_an_unknown_venue_with_a_clear_message() {
    let stderr = common::run_failing(&["replay", "snapshot", "--venue", "nasdaq=x.jsonl"]);
    let known: Vec<&str> = VenueId::ALL.iter().map(|venue| venue.name()).collect();
    let message = format!("unknown venue \"nasdaq\" (known: {})", known.join(", "));
    assert!(stderr.contains(&message), "{stderr}");
}

const DIFF_TIMELINE: &str = "tests/fixtures/binance/timeline_NKNUSDT_LRCBTC.jsonl";

#[test]
fn a_recording_of_the_other_mode_is_refused_naming_the_mode_that_fits() {
    let diff_timeline = format!("binance={DIFF_TIMELINE}");
    let output = common::run(&["replay", "snapshot", "--venue", &diff_timeline]);
    assert!(!output.status.success());
    assert!(output.stdout.is_empty());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("its binance frames are diff events, not book snapshots: replay it with `mergebook replay diff`"),
        "{stderr}"
    );

    let stderr = common::run_failing(&["replay", "diff", "--venue", &format!("binance={BINANCE}")]);
    assert!(
        stderr.contains("replay it with `mergebook replay snapshot`"),
        "{stderr}"
    );

    // Bitstamp sends both modes in the same envelope: the channel tells them apart.
    let diffs = "bitstamp=tests/fixtures/bitstamp/diff_order_book_batbtc.jsonl";
    let stderr = common::run_failing(&["replay", "snapshot", "--venue", diffs]);
    assert!(
        stderr.contains("replay it with `mergebook replay diff`"),
        "{stderr}"
    );

    // OKX names both streams by the instrument: the channel tells them apart too, and
    // each recording replays in its own mode.
    let books = "okx=tests/fixtures/okx/books_BTC-USDT_subscribe_ack_snapshot_updates_2022.jsonl";
    let books5 = "okx=tests/fixtures/okx/books5_BTC-USDT_ack_then_snapshots_2026-08-12.jsonl";
    let stderr = common::run_failing(&["replay", "snapshot", "--venue", books]);
    assert!(
        stderr.contains("replay it with `mergebook replay diff`"),
        "{stderr}"
    );
    let stderr = common::run_failing(&["replay", "diff", "--venue", books5]);
    assert!(
        stderr.contains("replay it with `mergebook replay snapshot`"),
        "{stderr}"
    );
    let (stdout, _) = common::run_ok(&["replay", "snapshot", "--venue", books5]);
    assert_eq!(stdout.lines().count(), 2, "{stdout}");
    assert!(
        stdout.contains(r#"{"exchange":"okx","price":"64073.00000000""#),
        "{stdout}"
    );
    let (stdout, _) = common::run_ok(&["replay", "diff", "--venue", books]);
    let last = stdout.lines().last().unwrap();
    assert!(
        last.contains(r#"{"exchange":"okx","price":"30236.10000000","amount":"0.18050747"}"#),
        "{last}"
    );
}

#[test]
fn a_recording_without_books_is_refused() {
    let controls = "bitstamp=tests/fixtures/bitstamp/control_messages.jsonl";
    for mode in ["snapshot", "diff"] {
        let stderr = common::run_failing(&["replay", mode, "--venue", controls]);
        assert!(
            stderr.contains("it holds no bitstamp book frame of either mode in 5 frames"),
            "{mode}: {stderr}"
        );
    }
}

/// A timeline is known by its keys, not by its first bytes: the same recording with its
/// keys in another order and other spacing (each value's text kept) replays the same.
#[test]
fn a_timeline_is_known_by_its_keys_in_any_order() {
    use serde_json::value::RawValue;
    let text = std::fs::read_to_string(DIFF_TIMELINE).unwrap();
    let reordered: String = text
        .lines()
        .map(|line| {
            let entry: std::collections::BTreeMap<String, Box<RawValue>> =
                serde_json::from_str(line).unwrap();
            let mut keys: Vec<(&String, &Box<RawValue>)> = entry.iter().collect();
            keys.reverse(); // "url" (or "recv_ts") first, "kind" last
            let fields: Vec<String> = keys
                .iter()
                .map(|(key, value)| format!("{key:?} :  {}", value.get()))
                .collect();
            format!("{{ {} }}\n", fields.join(" , "))
        })
        .collect();
    assert!(!reordered.starts_with("{\"recv_ts\""));
    let path =
        std::env::temp_dir().join(format!("mergebook-reordered-{}.jsonl", std::process::id()));
    std::fs::write(&path, reordered).unwrap();
    let replay =
        |file: &str| common::run_ok(&["replay", "diff", "--venue", &format!("binance={file}")]);
    let original = replay(DIFF_TIMELINE);
    let reordered = replay(path.to_str().unwrap());
    std::fs::remove_file(&path).unwrap();
    assert_eq!(reordered, original);
    assert!(original.1.contains("binance NKNUSDT: 150 events"));
}

#[test]
fn a_flag_of_the_other_mode_is_refused() {
    let stderr = common::run_failing(&[
        "replay",
        "snapshot",
        "--venue",
        &format!("binance={BINANCE}"),
        "--symbol",
        "binance=BTCUSDT",
    ]);
    assert!(
        stderr.contains("unexpected argument '--symbol'"),
        "{stderr}"
    );
}

/// Every recording the tests use says where it comes from (tests/fixtures/SOURCES.md).
#[test]
fn every_fixture_has_its_provenance() {
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let sources = std::fs::read_to_string(fixtures.join("SOURCES.md")).unwrap();
    for venue in std::fs::read_dir(&fixtures).unwrap() {
        let venue = venue.unwrap().path();
        if !venue.is_dir() {
            continue;
        }
        for file in std::fs::read_dir(&venue).unwrap() {
            let name = file.unwrap().file_name().into_string().unwrap();
            assert!(
                sources.contains(&format!("`{name}`")),
                "{name} is not in tests/fixtures/SOURCES.md"
            );
        }
    }
}

/// `mergebook replay diff` reads Bitget's retired v1 recordings (spot and the USDT-margined
/// perpetual, several instruments interleaved) and Deribit's JSON-RPC timeline, each
/// instrument's book ending on the tops tests/fixtures/SOURCES.md gives.
#[test]
fn replay_reads_bitget_and_deribit_recordings() {
    let last_top = |stdout: &str, instrument: &str| -> (String, String) {
        let last = stdout
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .rfind(|summary| summary["instrument"] == instrument)
            .unwrap_or_else(|| panic!("no {instrument} summary: {stdout}"));
        let level = |side: &str| {
            let best = &last[side][0];
            format!(
                "{} x {}",
                best["price"].as_str().unwrap(),
                best["amount"].as_str().unwrap()
            )
        };
        (level("bids"), level("asks"))
    };
    let (stdout, stderr) = common::run_ok(&[
        "replay",
        "diff",
        "--venue",
        "bitget=tests/fixtures/bitget/v1_spot_books_EOSUSDT_2022-04-06.jsonl",
        "--venue",
        "bitget_futures=tests/fixtures/bitget/v1_mix_books_UNIUSDT_2022-04-06_prefix.jsonl",
    ]);
    assert_eq!(
        last_top(&stdout, "EOSUSDT"),
        (
            "2.43460000 x 1929.67780000".to_owned(),
            "2.43760000 x 31.11340000".to_owned()
        )
    );
    assert_eq!(
        last_top(&stdout, "UNIUSDT"),
        (
            "9.96900000 x 228.00000000".to_owned(),
            "9.97400000 x 30.00000000".to_owned()
        )
    );
    assert!(
        stderr.contains("0 gaps") && !stderr.contains(" 1 checksum"),
        "{stderr}"
    );
    let (stdout, _) = common::run_ok(&[
        "replay",
        "diff",
        "--venue",
        "deribit=tests/fixtures/deribit/timeline_options_raw_2021-07-22.jsonl",
    ]);
    assert_eq!(
        last_top(&stdout, "BTC24SEP218000P"),
        (
            "0.00050000 x 153.10000000".to_owned(),
            "0.00150000 x 94.70000000".to_owned()
        )
    );
}
