//! The `mergebook` binary as the README runs it: the simulator config prints a live merged
//! book as JSON lines, and SIGTERM shuts it down cleanly (exit 0).

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

#[test]
fn the_simulator_config_prints_a_live_merged_book_and_stops_on_sigterm() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mergebook"))
        .args([
            "--config",
            "config/sim.toml",
            "--grpc-listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "127.0.0.1:0",
        ])
        .args(["--simulator-rate", "200"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = BufReader::new(child.stdout.take().unwrap());
    let mut previous_sequence = 0;
    let mut both_synced = 0;
    for line in stdout.lines().take(200) {
        let summary: Value = serde_json::from_str(&line.unwrap()).unwrap();
        assert_eq!(summary["instrument"], "ETH/BTC");
        let sequence = summary["seq"].as_u64().unwrap();
        assert!(sequence > previous_sequence, "sequence numbers increase");
        previous_sequence = sequence;
        let prices = |side: &str| -> Vec<f64> {
            summary[side]
                .as_array()
                .unwrap()
                .iter()
                .map(|l| l["price"].as_str().unwrap().parse().unwrap())
                .collect()
        };
        let (bids, asks) = (prices("bids"), prices("asks"));
        assert!(bids.windows(2).all(|w| w[0] >= w[1]), "bids best first");
        assert!(asks.windows(2).all(|w| w[0] <= w[1]), "asks best first");
        if summary["venues"]["binance"] == "synced" && summary["venues"]["bitstamp"] == "synced" {
            both_synced += 1;
            assert_eq!((bids.len(), asks.len()), (10, 10));
        }
    }
    assert!(
        both_synced > 100,
        "the merged book went live: {both_synced} of 200 summaries had both venues"
    );

    let pid = child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "SIGTERM ends the service cleanly: {status}"
    );
}
