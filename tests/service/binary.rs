//! The `mergebook` binary as the README runs it: the simulator config prints a live merged
//! book as JSON lines, and SIGTERM shuts it down cleanly (exit 0).

use crate::common;

use serde_json::Value;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

#[test]
fn the_simulator_config_prints_a_live_merged_book_and_stops_on_sigterm() {
    let child = Command::new(env!("CARGO_BIN_EXE_mergebook"))
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
    // Killed if an assertion below fails: a service left running would take a core.
    let mut child = common::KillOnDrop(child);
    let stdout = BufReader::new(child.0.stdout.take().unwrap());
    let instruments: std::collections::HashMap<String, Vec<String>> =
        common::demo_instruments().into_iter().collect();
    let mut previous_sequences = std::collections::HashMap::new();
    // Per instrument: summaries with every venue of it synced, the perpetuals' merging
    // two venues or more. Read until each instrument has had `LIVE` of them, however long
    // a loaded machine takes to sync every book (diff-mode books sync one snapshot after
    // another), every line checked on the way.
    const LIVE: usize = 50;
    let mut live: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
    let all_live = |live: &std::collections::HashMap<String, usize>| {
        instruments
            .keys()
            .all(|name| live.get(name).is_some_and(|&count| count >= LIVE))
    };
    // A bound, so that a venue that never syncs fails the test rather than hangs it: a
    // minute and more of summaries at the simulator's rate.
    const MAX_LINES: usize = 200_000;
    let mut lines = 0;
    for line in stdout.lines().take(MAX_LINES) {
        lines += 1;
        let summary: Value = serde_json::from_str(&line.unwrap()).unwrap();
        let instrument = summary["instrument"].as_str().unwrap().to_owned();
        let sequence = summary["seq"].as_u64().unwrap();
        let previous = previous_sequences.insert(instrument.clone(), sequence);
        assert!(
            sequence > previous.unwrap_or(0),
            "{instrument}: sequence numbers increase"
        );
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
        let Some(venues) = instruments.get(&instrument) else {
            panic!("an instrument config/sim.toml does not have: {instrument}");
        };
        let synced = |venues: &[String]| {
            venues
                .iter()
                .all(|venue| summary["venues"][venue] == "synced")
        };
        // The perpetuals (Hyperliquid's, Binance futures', the inverse ones counted in
        // dollars) merged with the others'; ETH/BTC's every venue, ten levels a side.
        let exchanges: std::collections::BTreeSet<&str> = summary["bids"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|level| level["exchange"].as_str())
            .collect();
        if synced(venues) && exchanges.len() >= 2 {
            if instrument == "ETH/BTC" {
                assert_eq!((bids.len(), asks.len()), (10, 10));
            }
            *live.entry(instrument).or_default() += 1;
            if all_live(&live) {
                break;
            }
        }
    }
    assert!(
        all_live(&live),
        "the merged books went live: summaries with every venue synced, of {lines} read: {live:?}"
    );

    common::terminate(&child.0);
    let status = child.0.wait().unwrap();
    assert!(
        status.success(),
        "SIGTERM ends the service cleanly: {status}"
    );
}

fn healthcheck(port: u16) -> std::process::ExitStatus {
    Command::new(env!("CARGO_BIN_EXE_mergebook"))
        .args(["healthcheck", "--address", &format!("127.0.0.1:{port}")])
        .stderr(Stdio::null())
        .status()
        .unwrap()
}

/// What the systemd unit (Type=notify, WatchdogSec=) and the Docker HEALTHCHECK rely on.
#[test]
fn systemd_readiness_and_watchdog_and_the_healthcheck_command() {
    use std::os::unix::net::UnixDatagram;
    use std::time::Duration;
    let socket_path = std::env::temp_dir().join(format!("mergebook-notify-{}", std::process::id()));
    let _ = std::fs::remove_file(&socket_path);
    let systemd = UnixDatagram::bind(&socket_path).unwrap();
    systemd
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let metrics_port = common::free_port();
    assert!(
        !healthcheck(metrics_port).success(),
        "nothing listening yet"
    );

    let mut child = common::mergebook(metrics_port)
        .args(["--output", "none"])
        .env("NOTIFY_SOCKET", &socket_path)
        .env("WATCHDOG_USEC", "200000")
        .spawn()
        .unwrap();
    let mut receive = || {
        let mut buffer = [0u8; 256];
        let length = systemd.recv(&mut buffer).expect("a notification");
        String::from_utf8_lossy(&buffer[..length]).into_owned()
    };
    assert_eq!(receive(), "READY=1\n");
    for _ in 0..3 {
        assert_eq!(receive(), "WATCHDOG=1\n", "the watchdog is fed");
    }
    // /health is DOWN (503) until the first books arrive, then OK.
    common::wait_until("healthy", Duration::from_secs(20), || {
        healthcheck(metrics_port).success().then_some(())
    });

    common::terminate(&child);
    let notifications: Vec<String> = std::iter::repeat_with(&mut receive)
        .take_while(|message| message != "STOPPING=1\n")
        .take(1000)
        .collect();
    assert!(
        notifications
            .iter()
            .all(|message| message == "WATCHDOG=1\n")
    );
    assert!(child.wait().unwrap().success());
    let _ = std::fs::remove_file(&socket_path);
}

/// `--check-config` validates file + flags + environment without starting anything.
#[test]
fn check_config_accepts_the_shipped_configs_and_names_a_bad_key() {
    let check = ["--config", "config/default.toml", "--check-config"];
    common::run_ok(&check);
    let message = common::run_failing(&[&check[..], &["--metrics-listen", "nowhere"]].concat());
    assert!(message.contains("metrics.listen = "), "{message}");

    // The recordings a config replays are checked from where the command runs.
    let replaying = |dir: &std::path::Path| {
        Command::new(env!("CARGO_BIN_EXE_mergebook"))
            .arg("--config")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("config/sim-replay.toml"))
            .arg("--check-config")
            .current_dir(dir)
            .output()
            .unwrap()
    };
    assert!(
        replaying(Path::new(env!("CARGO_MANIFEST_DIR")))
            .status
            .success()
    );
    let elsewhere = replaying(&std::env::temp_dir());
    assert!(!elsewhere.status.success());
    let message = String::from_utf8_lossy(&elsewhere.stderr);
    assert!(
        message.contains("simulator.replay.binance = \"tests/fixtures/binance/"),
        "{message}"
    );
}

/// A port in use: the error names the settings that move it.
#[test]
fn a_port_in_use_names_the_flag_and_variable_that_move_it() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    for (flag, setting) in [
        (
            "--grpc-listen",
            "grpc.listen, --grpc-listen or MERGEBOOK_GRPC_LISTEN",
        ),
        (
            "--metrics-listen",
            "metrics.listen, --metrics-listen or MERGEBOOK_METRICS_LISTEN",
        ),
    ] {
        let (other_flag, free) = if flag == "--grpc-listen" {
            ("--metrics-listen", "127.0.0.1:0")
        } else {
            ("--grpc-listen", "127.0.0.1:0")
        };
        let address = format!("127.0.0.1:{port}");
        let message = common::run_failing(&[
            "--config",
            "config/sim.toml",
            "--output",
            "none",
            flag,
            &address,
            other_flag,
            free,
        ]);
        assert!(
            message.contains(&format!("cannot listen on 127.0.0.1:{port} ({setting})")),
            "{message}"
        );
    }
}

/// The diff-mode simulator config: full-depth books synced from diff streams and REST
/// snapshots, merged and printed like the snapshot streams.
#[test]
fn the_diff_mode_simulator_config_prints_a_live_merged_book() {
    let child = Command::new(env!("CARGO_BIN_EXE_mergebook"))
        .args(["--config", "config/sim-diff.toml"])
        .args([
            "--grpc-listen",
            "127.0.0.1:0",
            "--metrics-listen",
            "127.0.0.1:0",
        ])
        .args(["--simulator-rate", "100"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = common::KillOnDrop(child);
    let stdout = BufReader::new(child.0.stdout.take().unwrap());
    let both_synced = stdout
        .lines()
        .take(400)
        .map(|line| serde_json::from_str::<Value>(&line.unwrap()).unwrap())
        .filter(|summary| {
            summary["venues"]["binance"] == "synced" && summary["venues"]["bitstamp"] == "synced"
        })
        .inspect(|summary| {
            assert_eq!(summary["bids"].as_array().unwrap().len(), 10);
            assert_eq!(summary["asks"].as_array().unwrap().len(), 10);
        })
        .count();
    assert!(
        both_synced > 100,
        "{both_synced} of 400 summaries had both venues synced"
    );
    common::terminate(&child.0);
    assert!(child.0.wait().unwrap().success());
}

/// On a CPU without the instructions the build uses (an emulated Westmere: no AVX), the
/// binary says what is missing and exits 1 instead of dying of SIGILL; on one with them
/// (an emulated Haswell) it runs.
#[test]
fn a_cpu_without_the_build_s_features_is_refused_plainly() {
    if !cfg!(all(target_arch = "x86_64", target_feature = "avx2")) {
        return; // a portable build runs anywhere: nothing to refuse
    }
    let Some(qemu) = common::tool("qemu-x86_64", "qemu-user") else {
        return;
    };
    let run = |cpu: &str| {
        Command::new(&qemu)
            .args(["-cpu", cpu, env!("CARGO_BIN_EXE_mergebook"), "--version"])
            .output()
            .unwrap()
    };
    let old = run("Westmere");
    let stderr = String::from_utf8_lossy(&old.stderr);
    assert_eq!(old.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("this CPU lacks") && stderr.contains("avx2"),
        "{stderr}"
    );
    assert!(stderr.contains("target-cpu=native"), "{stderr}");
    let new = run("Haswell");
    assert!(
        new.status.success(),
        "{}",
        String::from_utf8_lossy(&new.stderr)
    );
    assert!(String::from_utf8_lossy(&new.stdout).starts_with("mergebook "));
}

/// Listening on every interface is said at start-up, and logs to a pipe carry no colour
/// codes (journald, files and log shippers read them).
#[test]
fn a_listener_on_every_interface_is_warned_of_in_plain_text() {
    let child = Command::new(env!("CARGO_BIN_EXE_mergebook"))
        .args(["--config", "config/sim.toml", "--output", "none"])
        .args([
            "--grpc-listen",
            "0.0.0.0:0",
            "--metrics-listen",
            "127.0.0.1:0",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = common::KillOnDrop(child);
    let stderr = BufReader::new(child.0.stderr.take().unwrap());
    let (lines, logged) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            if lines.send(line).is_err() {
                break;
            }
        }
    });
    let mut logs = Vec::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
        let Ok(line) = logged.recv_timeout(left) else {
            break;
        };
        logs.push(line);
        if logs.last().unwrap().contains("listens on every interface") {
            break;
        }
    }
    common::terminate(&child.0);
    let text = logs.join("\n");
    assert!(text.contains("serving"), "{text}");
    assert!(
        text.contains("grpc.listen listens on every interface"),
        "no warning of grpc.listen on 0.0.0.0:\n{text}"
    );
    assert!(
        !text.contains('\u{1b}'),
        "colour codes in piped logs:\n{text}"
    );
}

/// The configuration of the SIGHUP test: ETH/BTC, and LTC/BTC where `more`, on Binance and
/// Bitstamp from the simulator, `depth` levels a side.
fn reloaded_config(more: bool, depth: u32) -> String {
    let mut config = format!(
        "[service]\ndepth = {depth}\noutput = \"jsonl\"\n\
         [simulator]\nlisten = \"127.0.0.1:0\"\nrate_per_second = 50\nseed = 1\n\
         [[instruments]]\nname = \"ETH/BTC\"\nsymbols = {{ binance = \"ETHBTC\", bitstamp = \"ethbtc\" }}\n"
    );
    if more {
        config.push_str(
            "[[instruments]]\nname = \"LTC/BTC\"\nsymbols = { binance = \"LTCBTC\", bitstamp = \"ltcbtc\" }\n",
        );
    }
    config
}

/// SIGHUP reads the configuration file again: the instrument it adds is published with
/// every book synced, the reload counted as applied; one that changes anything but the
/// instruments is refused and counted, and the service runs on.
#[test]
fn sighup_lists_the_instruments_the_file_adds_and_refuses_other_changes() {
    use std::time::Duration;
    let dir = std::env::temp_dir().join(format!("mergebook-sighup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("config.toml");
    std::fs::write(&path, reloaded_config(false, 5)).unwrap();
    let metrics_port = common::free_port();
    let child = Command::new(env!("CARGO_BIN_EXE_mergebook"))
        .args([
            "--config",
            path.to_str().unwrap(),
            "--grpc-listen",
            "127.0.0.1:0",
        ])
        .args(["--metrics-listen", &format!("127.0.0.1:{metrics_port}")])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut child = common::KillOnDrop(child);
    let mut lines = BufReader::new(child.0.stdout.take().unwrap()).lines();
    // Reads summaries until one of `instrument` has both books synced.
    let mut live = |instrument: &str| {
        let synced = (lines.by_ref().take(5_000)).any(|line| {
            let summary: Value = serde_json::from_str(&line.unwrap()).unwrap();
            summary["instrument"] == instrument
                && summary["venues"]["binance"] == "synced"
                && summary["venues"]["bitstamp"] == "synced"
        });
        assert!(synced, "{instrument}: live");
    };
    let hangup = |child: &std::process::Child| {
        let pid = child.id().to_string();
        let status = Command::new("kill").args(["-HUP", &pid]).status().unwrap();
        assert!(status.success(), "kill -HUP {pid}: {status}");
    };
    let metrics = std::net::SocketAddr::from(([127, 0, 0, 1], metrics_port));
    let reloads = |outcome: &str| {
        let series = format!("orderbook_config_reloads_total{{outcome=\"{outcome}\"}} 1");
        let (_, body) = common::http_get(metrics, "/metrics")?;
        body.contains(&series).then_some(())
    };
    live("ETH/BTC");

    std::fs::write(&path, reloaded_config(true, 5)).unwrap();
    hangup(&child.0);
    live("LTC/BTC");
    common::wait_until("a reload applied", Duration::from_secs(20), || {
        reloads("applied")
    });

    std::fs::write(&path, reloaded_config(true, 6)).unwrap();
    hangup(&child.0);
    common::wait_until("a reload refused", Duration::from_secs(20), || {
        reloads("refused")
    });
    live("ETH/BTC");
    live("LTC/BTC");

    common::terminate(&child.0);
    assert!(child.0.wait().unwrap().success());
    let _ = std::fs::remove_dir_all(&dir);
}
