//! `mergebook replay` on the recorded snapshot frames prints the merged book that an
//! independent computation (serde_json + concatenate, sort, take N) expects.

use serde_json::Value;
use std::process::Command;

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
    let output = Command::new(env!("CARGO_BIN_EXE_mergebook"))
        .args([
            "replay",
            "--venue",
            &format!("binance={BINANCE}"),
            "--venue",
            &format!("bitstamp={BITSTAMP}"),
        ])
        .args(["--instrument", "BTC/USD", "--depth", &DEPTH.to_string()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8(output.stdout).unwrap();
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
    let output = Command::new(env!("CARGO_BIN_EXE_mergebook"))
        .args(["replay", "--venue", "nasdaq=x.jsonl"])
        .output()
        .unwrap();
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("unknown venue \"nasdaq\" (known: binance, bitstamp)"),
        "{stderr}"
    );
}
