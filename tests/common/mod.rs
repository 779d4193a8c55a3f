//! Helpers for the tests that run the `mergebook` binary as users do.
#![allow(dead_code)] // each test file uses its own subset

pub mod browser;
pub mod config;
pub mod in_band;
pub mod nats;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A port that was free a moment ago (for programs that take an address, not a socket),
/// below the kernel's ephemeral range. A port the kernel hands out for `bind(0)` comes from
/// that range, as does the local port of every outgoing connection: a test beside this one
/// connecting to anything could take it before the program it is meant for binds it. Below
/// the range only another caller of this function could, and each process walks its own
/// sequence of ports (from its id), never returning one twice.
pub fn free_port() -> u16 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static TAKEN: AtomicU32 = AtomicU32::new(0);
    let ephemeral_start = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u32>().ok())
        .unwrap_or(32_768);
    const LOWEST: u32 = 10_000;
    let span = ephemeral_start.saturating_sub(LOWEST).max(1_000);
    loop {
        let taken = TAKEN.fetch_add(1, Ordering::Relaxed);
        // Consecutive ports from a start that differs between processes.
        let port = LOWEST + (std::process::id().wrapping_mul(7_919) + taken) % span;
        if TcpListener::bind(("127.0.0.1", port as u16)).is_ok() {
            return port as u16;
        }
        assert!(taken < span, "no free port below {ephemeral_start}");
    }
}

/// `mergebook` on the simulator config, with its metrics on `metrics_port`.
pub fn mergebook(metrics_port: u16) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mergebook"));
    command
        .args([
            "--config",
            "config/sim.toml",
            "--grpc-listen",
            "127.0.0.1:0",
        ])
        .args(["--metrics-listen", &format!("127.0.0.1:{metrics_port}")])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    command
}

/// `mergebook ARGS`, run in the repository (where the configs and recordings are).
pub fn run(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_mergebook"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap()
}

/// `run`, which must succeed: its stdout and stderr.
pub fn run_ok(args: &[&str]) -> (String, String) {
    let output = run(args);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(output.status.success(), "mergebook {args:?}: {stderr}");
    (String::from_utf8(output.stdout).unwrap(), stderr)
}

/// `run`, which must fail: its stderr.
pub fn run_failing(args: &[&str]) -> String {
    let output = run(args);
    assert!(!output.status.success(), "mergebook {args:?} succeeded");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A process's resident anonymous memory (`RssAnon`: its heap and stacks). Not `VmRSS`:
/// that also counts the executable's pages, which code running for the first time faults
/// in (tens of MB of a debug build), whenever that happens.
pub fn anonymous_rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|line| {
            line.strip_prefix("RssAnon:")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no RssAnon for process {pid}"));
    kib * 1024
}

/// `anonymous_rss_bytes` once it holds still (within 256 KiB over half a second): a
/// serving process's heap grows by tens of MB in its first seconds (30 MB measured), later
/// on a loaded machine, then stays. A baseline for measuring what clients cost.
pub fn settled_anonymous_rss_bytes(pid: u32) -> u64 {
    let mut last = anonymous_rss_bytes(pid);
    wait_until("the memory settled", Duration::from_secs(60), || {
        std::thread::sleep(Duration::from_millis(500));
        let now = anonymous_rss_bytes(pid);
        let settled = now.abs_diff(last) < 256 << 10;
        last = now;
        settled.then_some(now)
    })
}

/// Sends SIGTERM, as systemd and Docker stop a service.
pub fn terminate(child: &Child) {
    let pid = child.id().to_string();
    let status = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
    assert!(status.success(), "kill -TERM {pid}: {status}");
}

/// Kills the child when dropped, so a failed assertion leaves no process behind.
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A blocking HTTP/1.0 GET: (status, body), or None when nothing answers.
pub fn http_get(address: SocketAddr, path: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(2)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    write!(stream, "GET {path} HTTP/1.0\r\nHost: test\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let status = response.get(9..12)?.parse().ok()?;
    let (_, body) = response.split_once("\r\n\r\n")?;
    Some((status, body.to_owned()))
}

/// Polls `condition` until it holds, failing the test after `limit`.
pub fn wait_until<T>(what: &str, limit: Duration, mut condition: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(value) = condition() {
            return value;
        }
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// An external tool from PATH. Missing: the calling test skips itself, said by name on
/// the terminal, locally; a failure under CI (`CI` set), which installs it.
pub fn tool(name: &str, debian_package: &str) -> Option<std::path::PathBuf> {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|path| path.is_file())
    });
    if found.is_none() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install {name} (Debian package {debian_package})"
        );
        // The harness captures `eprintln!` and would print a bare `ok`: write past it.
        let test = std::thread::current().name().unwrap_or("a test").to_owned();
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {test}: {name} not installed (apt-get install {debian_package})"
        );
    }
    found
}

/// `python3`, where it can import `module` (from PyPI: `.ci/run` installs it). Missing:
/// the calling test skips itself, said by name, locally; a failure under CI.
pub fn python_with(module: &str) -> Option<std::path::PathBuf> {
    let python = tool("python3", "python3")?;
    let imported = std::process::Command::new(&python)
        .args(["-c", &format!("import {module}")])
        .output()
        .is_ok_and(|output| output.status.success());
    if !imported {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install the Python module {module} (pip install {module})"
        );
        let test = std::thread::current().name().unwrap_or("a test").to_owned();
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED {test}: Python's {module} not installed (pip install {module})"
        );
        return None;
    }
    Some(python)
}

/// A sample of an in-process service's metrics (`name{labels}`), 0 when the series does
/// not exist yet.
pub fn service_metric(service: &mergebook::service::Service, series: &str) -> f64 {
    service
        .metrics()
        .render()
        .lines()
        .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// Polls `condition` every 5 ms until it holds; fails after `limit`.
pub async fn eventually(what: &str, limit: Duration, condition: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + limit;
    while !condition() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what}: not within {limit:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A file holding a stand-in for `venue`'s API key (the simulator takes any), in this
/// test process's temporary directory.
pub fn api_key_file(venue: mergebook::venue::VenueId) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mergebook-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{venue}-api-key"));
    std::fs::write(&path, "simulator-key\n").unwrap();
    path
}

/// Keeps every summary the merger writes, in the order it writes them
/// (`Service::start_observed`).
#[derive(Clone, Default)]
pub struct EverySummary(
    pub std::sync::Arc<std::sync::Mutex<Vec<mergebook::merger::summary::Summary>>>,
);

impl mergebook::merger::PublishObserver for EverySummary {
    const OBSERVES: bool = true;

    fn published(&mut self, _: &mergebook::merger::PublishRecord) {}

    fn written(&mut self, summary: &mergebook::merger::summary::Summary) {
        self.0.lock().unwrap().push(*summary);
    }
}

/// The offline demo's instruments (`config/sim.toml`): each one's name and the venues it
/// merges, in the file's order.
pub fn demo_instruments() -> Vec<(String, Vec<String>)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/config/sim.toml");
    let file: toml::Table = std::fs::read_to_string(path).unwrap().parse().unwrap();
    file["instruments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|instrument| {
            let venues = instrument["symbols"].as_table().unwrap().keys().cloned();
            (
                instrument["name"].as_str().unwrap().to_owned(),
                venues.collect(),
            )
        })
        .collect()
}

/// The venues the offline demo merges in `instrument`.
pub fn demo_venues(instrument: &str) -> Vec<String> {
    let instruments = demo_instruments();
    let found = instruments.into_iter().find(|(name, _)| name == instrument);
    found
        .unwrap_or_else(|| panic!("{instrument} is not in config/sim.toml"))
        .1
}
