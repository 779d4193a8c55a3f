//! What publishing to NATS costs: the service (the `mergebook` binary beside this one, on
//! its embedded simulator) runs twice at the same rate, without and with `[nats]` pointed
//! at a local `nats-server`; a subscriber in this process times each summary from its
//! publish (`ts_ns`, the merger's clock) to its arrival. Reported: summaries a second,
//! the latency percentiles, and the service's CPU without and with NATS, whence the CPU
//! NATS takes per 1,000 summaries a second (BENCHMARKS.md).

use futures_util::StreamExt;
use mergebook::publish::grpc::proto::ExactSummary;
use prost::Message;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct NatsBenchSpec {
    /// Book frames a second per venue (two venues, one instrument).
    pub rate: u32,
    pub warmup: Duration,
    pub duration: Duration,
}

#[derive(Debug, serde::Serialize)]
pub struct NatsBenchReport {
    pub summaries_per_second: f64,
    pub received: u64,
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

/// `orderbook_merges_total` of a service's `/metrics`.
fn merges(metrics_port: u16) -> Option<f64> {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", metrics_port)).ok()?;
    write!(stream, "GET /metrics HTTP/1.0\r\n\r\n").ok()?;
    let mut body = String::new();
    stream.read_to_string(&mut body).ok()?;
    body.lines()
        .find_map(|line| line.strip_prefix("orderbook_merges_total ")?.parse().ok())
}

fn mergebook_binary() -> std::io::Result<PathBuf> {
    let here = std::env::current_exe()?;
    Ok(here.with_file_name("mergebook"))
}

/// The service on the simulator at `rate`, publishing to `nats_url` if given; its
/// metrics port.
fn start_service(
    binary: &Path,
    rate: u32,
    nats_url: Option<&str>,
) -> Result<(Running, u16), NatsBenchError> {
    let metrics_port = free_port()?;
    let nats = nats_url.map_or(String::new(), |url| format!("[nats]\nurl = \"{url}\"\n"));
    let config = format!(
        "[service]\noutput = \"none\"\n[simulator]\nrate_per_second = {rate}\n{nats}\
         [[instruments]]\nname = \"ETH/BTC\"\nsymbols = {{ binance = \"ETHBTC\", bitstamp = \"ethbtc\" }}\n"
    );
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

/// (summaries a second, CPU percent) of a service over `duration` from now.
async fn measure(service: &Running, metrics_port: u16, duration: Duration) -> (f64, f64) {
    let pid = service.0.id();
    let (merges_before, cpu_before, started) =
        (merges(metrics_port), cpu_ns(pid), Instant::now());
    tokio::time::sleep(duration).await;
    let seconds = started.elapsed().as_secs_f64();
    let merged = merges(metrics_port).unwrap_or(0.0) - merges_before.unwrap_or(0.0);
    let cpu = (cpu_ns(pid) - cpu_before) as f64 * 1e-9;
    (merged / seconds, cpu / seconds * 100.0)
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

    let (without, metrics_port) = start_service(&binary, spec.rate, None)?;
    tokio::time::sleep(spec.warmup).await;
    let (_, cpu_without) = measure(&without, metrics_port, spec.duration).await;
    drop(without);

    let subscriber = async_nats::ConnectOptions::new()
        .retry_on_initial_connect()
        .connect(url.as_str())
        .await
        .map_err(|error| NatsBenchError::Service(error.to_string()))?;
    let mut books = subscriber
        .subscribe("mergebook.book.>")
        .await
        .map_err(|error| NatsBenchError::Service(error.to_string()))?;
    let (with, metrics_port) = start_service(&binary, spec.rate, Some(&url))?;
    tokio::time::sleep(spec.warmup).await;
    let mut latencies = hdrhistogram::Histogram::<u64>::new(3).expect("valid precision");
    let timing = async {
        while let Some(message) = books.next().await {
            let arrived_ns = mergebook::clock::unix_ns();
            if let Ok(summary) = ExactSummary::decode(message.payload.as_ref()) {
                let _ = latencies.record(arrived_ns.saturating_sub(summary.ts_ns).max(1));
            }
        }
    };
    let (summaries_per_second, cpu_with) = tokio::select! {
        measured = measure(&with, metrics_port, spec.duration) => measured,
        _ = timing => return Err(NatsBenchError::Service("the subscription ended".into())),
    };
    if latencies.is_empty() {
        return Err(NatsBenchError::Service("no summary reached the subscriber".into()));
    }
    let quantile_us = |q: f64| latencies.value_at_quantile(q) as f64 / 1000.0;
    Ok(NatsBenchReport {
        summaries_per_second,
        received: latencies.len(),
        latency_us_p50: quantile_us(0.5),
        latency_us_p99: quantile_us(0.99),
        latency_us_p999: quantile_us(0.999),
        cpu_percent_without_nats: cpu_without,
        cpu_percent_with_nats: cpu_with,
        cpu_percent_per_1000_summaries: (cpu_with - cpu_without)
            / (summaries_per_second / 1000.0),
    })
}
