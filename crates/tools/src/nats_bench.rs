//! What publishing to NATS costs: the service (the `mergebook` binary beside this one, on
//! its embedded simulator, every instrument on each venue with top-N snapshot streams)
//! runs twice at the same rate, without and with `[nats]` pointed
//! at a local `nats-server`; a subscriber in this process times each summary from its
//! publish (`ts_ns`, the merger's clock) to its arrival. Reported: summaries a second,
//! the latency percentiles, and the service's CPU without and with NATS, whence the CPU
//! NATS takes per 1,000 summaries a second (BENCHMARKS.md).

use futures_util::StreamExt;
use mergebook::publish::proto::ExactSummary;
use prost::Message;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct NatsBenchSpec {
    /// Book frames a second per venue and instrument.
    pub rate: u32,
    /// Instruments, each on every venue with top-N snapshot streams.
    pub instruments: usize,
    pub warmup: Duration,
    pub duration: Duration,
}

#[derive(Debug, serde::Serialize)]
pub struct NatsBenchReport {
    /// Summaries the merger published, a second.
    pub summaries_per_second: f64,
    /// Of those, published on NATS, and skipped by the NATS publisher for newer ones.
    pub published_per_second: f64,
    pub skipped_per_second: f64,
    /// Timed by the subscriber.
    pub received_per_second: f64,
    pub latency_us_p50: f64,
    pub latency_us_p99: f64,
    pub latency_us_p999: f64,
    /// The service's CPU, in percent of one core.
    pub cpu_percent_without_nats: f64,
    pub cpu_percent_with_nats: f64,
    /// Percent of a core NATS publishing adds per 1,000 summaries a second.
    pub cpu_percent_per_1000_summaries: f64,
}

#[derive(Debug, thiserror::Error)]
pub enum NatsBenchError {
    #[error("nats-server not found on PATH (apt-get install nats-server)")]
    NoServer,
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("the service did not publish: {0}")]
    Service(String),
}

/// Kills the process when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> std::io::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

/// Nanoseconds process `pid` has run on a CPU, all its threads.
fn cpu_ns(pid: u32) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// A series of a service's `/metrics` (`name` with its labels).
fn metric(metrics_port: u16, series: &str) -> Option<f64> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", metrics_port)).ok()?;
    write!(stream, "GET /metrics HTTP/1.0\r\n\r\n").ok()?;
    let mut body = String::new();
    stream.read_to_string(&mut body).ok()?;
    body.lines()
        .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
}

fn mergebook_binary() -> std::io::Result<PathBuf> {
    let here = std::env::current_exe()?;
    Ok(here.with_file_name("mergebook"))
}

/// The service on the simulator at `rate`, publishing to `nats_url` if given; its
/// metrics port.
fn start_service(
    binary: &Path,
    spec: &NatsBenchSpec,
    nats_url: Option<&str>,
) -> Result<(Running, u16), NatsBenchError> {
    let metrics_port = free_port()?;
    let nats = nats_url.map_or(String::new(), |url| format!("[nats]\nurl = \"{url}\"\n"));
    let (rate, count) = (spec.rate, spec.instruments);
    let mut config = format!(
        "[service]\noutput = \"none\"\nmax_instruments = {count}\n\
         [simulator]\nrate_per_second = {rate}\n{nats}"
    );
    // Each instrument on every venue with top-N snapshot streams.
    let venues = crate::spot_venues(true);
    for index in 0..count {
        let symbols: Vec<String> = venues
            .clone()
            .map(|venue| {
                format!(
                    "{venue} = \"{}\"",
                    crate::spot_symbol(venue, &format!("I{index}"))
                )
            })
            .collect();
        config += &format!(
            "[[instruments]]\nname = \"I{index}/BTC\"\nsymbols = {{ {} }}\n",
            symbols.join(", ")
        );
    }
    let path = std::env::temp_dir().join(format!("mergebook-nats-bench-{metrics_port}.toml"));
    std::fs::write(&path, config)?;
    let child = Command::new(binary)
        .arg("--config")
        .arg(&path)
        .args(["--grpc-listen", &format!("127.0.0.1:{}", free_port()?)])
        .args(["--metrics-listen", &format!("127.0.0.1:{metrics_port}")])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    Ok((Running(child), metrics_port))
}

/// What a service did over `duration` from now.
struct Measured {
    /// Summaries merged, published on NATS, and skipped by its publisher, a second.
    merged: f64,
    published: f64,
    skipped: f64,
    /// Percent of one core.
    cpu: f64,
}

const COUNTED: [&str; 3] = [
    "orderbook_merges_total ",
    "orderbook_nats_published_total ",
    "orderbook_nats_skipped_total ",
];

async fn measure(service: &Running, metrics_port: u16, duration: Duration) -> Measured {
    let pid = service.0.id();
    let counts = || COUNTED.map(|series| metric(metrics_port, series).unwrap_or(0.0));
    let (before, cpu_before, started) = (counts(), cpu_ns(pid), Instant::now());
    tokio::time::sleep(duration).await;
    let seconds = started.elapsed().as_secs_f64();
    let after = counts();
    let rate = |index: usize| (after[index] - before[index]) / seconds;
    let cpu = (cpu_ns(pid) - cpu_before) as f64 * 1e-9;
    Measured {
        merged: rate(0),
        published: rate(1),
        skipped: rate(2),
        cpu: cpu / seconds * 100.0,
    }
}

pub fn run(spec: &NatsBenchSpec) -> Result<NatsBenchReport, NatsBenchError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(run_async(spec))
}

async fn run_async(spec: &NatsBenchSpec) -> Result<NatsBenchReport, NatsBenchError> {
    let binary = mergebook_binary()?;
    let nats_port = free_port()?;
    let server = Command::new("nats-server")
        .args(["-a", "127.0.0.1", "-p", &nats_port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|_| NatsBenchError::NoServer)?;
    let _server = Running(server);
    let url = format!("nats://127.0.0.1:{nats_port}");

    let (without, metrics_port) = start_service(&binary, spec, None)?;
    tokio::time::sleep(spec.warmup).await;
    let cpu_without = measure(&without, metrics_port, spec.duration).await.cpu;
    drop(without);

    let subscriber = async_nats::ConnectOptions::new()
        .retry_on_initial_connect()
        .connect(url.as_str())
        .await
        .map_err(|error| NatsBenchError::Service(error.to_string()))?;
    let mut books = subscriber
        .subscribe(mergebook::publish::nats::book_subject("mergebook", ">"))
        .await
        .map_err(|error| NatsBenchError::Service(error.to_string()))?;
    let (service, metrics_port) = start_service(&binary, spec, Some(&url))?;
    tokio::time::sleep(spec.warmup).await;
    let mut latencies = hdrhistogram::Histogram::<u64>::new(3).expect("valid precision");
    // Only summaries published from now on: the warm-up's wait in the subscription's
    // buffer is no latency of NATS.
    let since_ns = mergebook::clock::unix_ns();
    let timing = async {
        while let Some(message) = books.next().await {
            let arrived_ns = mergebook::clock::unix_ns();
            if let Ok(summary) = ExactSummary::decode(message.payload.as_ref())
                && summary.ts_ns >= since_ns
            {
                let _ = latencies.record(arrived_ns.saturating_sub(summary.ts_ns).max(1));
            }
        }
    };
    let with = tokio::select! {
        measured = measure(&service, metrics_port, spec.duration) => measured,
        _ = timing => return Err(NatsBenchError::Service("the subscription ended".into())),
    };
    if latencies.is_empty() {
        return Err(NatsBenchError::Service(
            "no summary reached the subscriber".into(),
        ));
    }
    let quantile_us = |q: f64| latencies.value_at_quantile(q) as f64 / 1000.0;
    Ok(NatsBenchReport {
        summaries_per_second: with.merged,
        published_per_second: with.published,
        skipped_per_second: with.skipped,
        received_per_second: latencies.len() as f64 / spec.duration.as_secs_f64(),
        latency_us_p50: quantile_us(0.5),
        latency_us_p99: quantile_us(0.99),
        latency_us_p999: quantile_us(0.999),
        cpu_percent_without_nats: cpu_without,
        cpu_percent_with_nats: with.cpu,
        cpu_percent_per_1000_summaries: (with.cpu - cpu_without) / (with.published / 1000.0),
    })
}
