//! A venue that sends bad frames by the hundred, or a reconnect storm, writes at most a
//! line a second of each kind, each counting the lines left out; the metrics count every
//! event. The logs are captured from the process's tracing subscriber.

mod common;

use common::config::TestConfig;
use mergebook::merger::summary::VenueState;
use mergebook::publish::proto::{self, orderbook_aggregator_client::OrderbookAggregatorClient};
use mergebook::service::{Listeners, Service};
use mergebook::sim::Simulator;
use mergebook::venue::VenueId;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::TcpListener;

const BINANCE: VenueId = VenueId::Binance;
const WAIT: Duration = Duration::from_secs(20);

/// Every log line written, as text.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn lines_with(&self, text: &str) -> Vec<String> {
        let bytes = self.0.lock().unwrap();
        String::from_utf8_lossy(&bytes)
            .lines()
            .filter(|line| line.contains(text))
            .map(str::to_owned)
            .collect()
    }
}

/// The number after `suppressed=` in a line.
fn suppressed(line: &str) -> u64 {
    let (_, rest) = line.split_once("suppressed=").unwrap();
    rest.split(|c: char| !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

async fn service_on(url: String) -> Service {
    let config = TestConfig::new()
        .set("feed.backoff_initial_ms", 20)
        .set("feed.backoff_max_ms", 200)
        .venue_url(BINANCE, url)
        .instrument("ETH/BTC", &[(BINANCE, "ETHBTC")])
        .build();
    Service::start(config, Listeners::loopback().await.unwrap()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_frames_and_reconnect_storms_write_a_line_a_second() {
    let logs = Captured::default();
    let writer = logs.clone();
    tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .init();

    // 600 bad frames, 3 ms apart (1.8 s, or longer on a loaded machine).
    let simulator =
        Simulator::start(TcpListener::bind("127.0.0.1:0").await.unwrap(), 50, 2).unwrap();
    let service = service_on(simulator.url(BINANCE)).await;
    let mut summaries = service.summaries(0);
    tokio::time::timeout(
        WAIT,
        summaries.wait_for(|s| s.venue_state(BINANCE) == VenueState::Synced),
    )
    .await
    .unwrap()
    .unwrap();
    // A line a second: at most one more than the whole seconds from the first bad frame
    // to the reading of the log (however long a loaded machine takes to send them).
    let started = std::time::Instant::now();
    for _ in 0..600 {
        simulator.send_raw(BINANCE, "\u{1}garbage");
        tokio::time::sleep(Duration::from_millis(3)).await;
    }
    let errors = r#"orderbook_decode_errors_total{exchange="binance"}"#;
    common::eventually("600 decode errors counted", WAIT, || {
        common::service_metric(&service, errors) >= 600.0
    })
    .await;
    let lines = logs.lines_with("bad frame dropped");
    let seconds = started.elapsed().as_secs() as usize;
    assert!(
        !lines.is_empty() && lines.len() <= seconds + 1,
        "{} lines in {seconds} s: {lines:#?}",
        lines.len()
    );
    let left_out: u64 = lines.iter().map(|line| suppressed(line)).sum();
    assert!(left_out >= 100, "{lines:#?}");
    service.stop().await;

    // A venue whose port refuses every connection: an attempt every 20–200 ms.
    let closed = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("ws://{}/binance", closed.local_addr().unwrap());
    drop(closed);
    let started = std::time::Instant::now();
    let service = service_on(url).await;
    let attempts = r#"orderbook_connect_attempts_total{exchange="binance"}"#;
    common::eventually("15 connection attempts", WAIT, || {
        common::service_metric(&service, attempts) >= 15.0
    })
    .await;
    let lines = logs.lines_with("connection lost");
    let seconds = started.elapsed().as_secs() as usize;
    assert!(
        !lines.is_empty() && lines.len() <= seconds + 1,
        "{} lines for {} attempts: {lines:#?}",
        lines.len(),
        common::service_metric(&service, attempts)
    );
    assert!(
        lines.iter().map(|line| suppressed(line)).sum::<u64>() >= 5,
        "{lines:#?}"
    );
    service.stop().await;

    // A gRPC client asking for stream after stream past grpc.max_clients.
    let config = TestConfig::new()
        .set("grpc.max_clients", 1)
        .venue_url(BINANCE, simulator.url(BINANCE))
        .instrument("ETH/BTC", &[(BINANCE, "ETHBTC")])
        .build();
    let listeners = Listeners::loopback().await.unwrap();
    let grpc = listeners.grpc.local_addr().unwrap();
    let service = Service::start(config, listeners).unwrap();
    let mut client = OrderbookAggregatorClient::connect(format!("http://{grpc}"))
        .await
        .unwrap();
    let request = || proto::SummaryRequest {
        instrument: "ETH/BTC".into(),
        ..Default::default()
    };
    let _held = client.book_summary_exact(request()).await.unwrap();
    let started = std::time::Instant::now();
    for _ in 0..200 {
        let refused = client.book_summary_exact(request()).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
    }
    let seconds = started.elapsed().as_secs() as usize;
    let lines = logs.lines_with("gRPC stream refused");
    assert!(
        !lines.is_empty() && lines.len() <= seconds + 1,
        "{} lines in {seconds} s: {lines:#?}",
        lines.len()
    );
    let rejected = common::service_metric(&service, "orderbook_grpc_clients_rejected_total");
    assert_eq!(rejected, 200.0, "every refusal counted");
    service.stop().await;
}
