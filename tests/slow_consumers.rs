//! Slow gRPC consumers against the `mergebook` binary (a child process, so its memory is
//! the service's alone): 1,000 idle clients that subscribed and never read, one that reads
//! a summary a second, and one reading normally. The normal client keeps receiving fresh
//! summaries, the merger keeps publishing, the service's memory stays bounded, and the
//! client over `grpc.max_clients` is refused with a counted `RESOURCE_EXHAUSTED`.

mod common;

use common::{KillOnDrop, anonymous_rss_bytes, free_port, settled_anonymous_rss_bytes};
use mergebook::publish::proto::{
    SummaryRequest, orderbook_aggregator_client::OrderbookAggregatorClient,
};
use std::time::{Duration, Instant};
use tonic::transport::Channel;

const IDLE_CLIENTS: usize = 1_000;
/// `grpc.max_clients`' default.
const MAX_CLIENTS: usize = 1_024;
/// The most an idle client may cost the service: its HTTP/2 connection and the summaries
/// buffered for it up to the client's flow-control window (64 KiB by default).
const MAX_BYTES_PER_IDLE_CLIENT: u64 = 256 * 1024;

fn metric(metrics_port: u16, series: &str) -> f64 {
    common::http_get(([127, 0, 0, 1], metrics_port).into(), "/metrics")
        .and_then(|(_, text)| {
            text.lines()
                .find_map(|line| line.strip_prefix(series)?.trim().parse().ok())
        })
        .unwrap_or(0.0)
}

async fn connect(port: u16) -> OrderbookAggregatorClient<Channel> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match OrderbookAggregatorClient::connect(format!("http://127.0.0.1:{port}")).await {
            Ok(client) => return client,
            Err(error) if Instant::now() > deadline => panic!("gRPC: {error}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
        }
    }
}

async fn subscribe(
    port: u16,
) -> Result<tonic::Streaming<mergebook::publish::proto::ExactSummary>, tonic::Status> {
    let mut client = connect(port).await;
    let request = SummaryRequest {
        instrument: String::new(),
        ..Default::default()
    };
    client
        .book_summary_exact(request)
        .await
        .map(tonic::Response::into_inner)
}

/// Receives summaries for `window`; returns how many and the last sequence.
async fn receive_for(
    stream: &mut tonic::Streaming<mergebook::publish::proto::ExactSummary>,
    window: Duration,
) -> (u64, u64) {
    let deadline = tokio::time::Instant::now() + window;
    let (mut count, mut last) = (0, 0);
    while let Ok(Ok(Some(summary))) = tokio::time::timeout_at(deadline, stream.message()).await {
        assert!(summary.seq > last, "sequence {} after {last}", summary.seq);
        last = summary.seq;
        count += 1;
    }
    (count, last)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_and_slow_grpc_clients_hold_up_nothing_and_the_limit_refuses_the_extra_one() {
    // The test process holds one socket per client too.
    rlimit::increase_nofile_limit(u64::MAX).unwrap();
    let (grpc_port, metrics_port) = (free_port(), free_port());
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_mergebook"))
        .args(["--config", "config/sim.toml"])
        .args(["--grpc-listen", &format!("127.0.0.1:{grpc_port}")])
        .args(["--metrics-listen", &format!("127.0.0.1:{metrics_port}")])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let child = KillOnDrop(child);
    let pid = child.0.id();

    let mut fast = subscribe(grpc_port).await.unwrap();
    let (before, _) = receive_for(&mut fast, Duration::from_secs(3)).await;
    assert!(before > 0, "the normal client receives summaries");
    let rss_before = settled_anonymous_rss_bytes(pid);

    let mut idle = Vec::new();
    for _ in 0..IDLE_CLIENTS {
        idle.push(subscribe(grpc_port).await.unwrap());
    }
    let mut slow = subscribe(grpc_port).await.unwrap();
    let slow_reader = tokio::spawn(async move {
        let mut received = 0;
        while let Ok(Some(_)) = slow.message().await {
            received += 1;
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        received
    });

    // With every idle client's buffer filling up, the normal client still gets every
    // summary's successor, in order, and the merger keeps publishing.
    let merges_before = metric(metrics_port, "orderbook_merges_total");
    let (during, last_seq) = receive_for(&mut fast, Duration::from_secs(10)).await;
    let merges_during = metric(metrics_port, "orderbook_merges_total") - merges_before;
    assert!(
        during > 0 && merges_during > 0.0,
        "{during} received, {merges_during} merged"
    );
    assert!(last_seq > 0);
    assert_eq!(
        metric(metrics_port, "orderbook_grpc_clients"),
        (IDLE_CLIENTS + 2) as f64
    );
    // The slow and idle clients skipped to the latest summary, counted.
    assert!(metric(metrics_port, "orderbook_grpc_summaries_skipped_total") > 0.0);
    let rss_during = anonymous_rss_bytes(pid);
    let grown = rss_during.saturating_sub(rss_before);
    assert!(
        grown < IDLE_CLIENTS as u64 * MAX_BYTES_PER_IDLE_CLIENT,
        "{IDLE_CLIENTS} idle clients grew the service by {grown} bytes"
    );

    // Up to the limit, then one more: refused, and counted.
    for _ in IDLE_CLIENTS + 2..MAX_CLIENTS {
        idle.push(subscribe(grpc_port).await.unwrap());
    }
    let Err(refused) = subscribe(grpc_port).await else {
        panic!("a client over grpc.max_clients was served");
    };
    assert_eq!(refused.code(), tonic::Code::ResourceExhausted, "{refused}");
    assert_eq!(
        metric(metrics_port, "orderbook_grpc_clients_rejected_total"),
        1.0
    );

    // Closing clients frees their places.
    drop(idle);
    let deadline = Instant::now() + Duration::from_secs(20);
    while metric(metrics_port, "orderbook_grpc_clients") > 2.0 {
        assert!(Instant::now() < deadline, "closed clients still counted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    subscribe(grpc_port).await.expect("a place is free again");
    slow_reader.abort();
    println!(
        "normal client: {before} summaries in 3 s alone, {during} in 10 s beside {IDLE_CLIENTS} idle \
         clients; service RSS {rss_before} -> {rss_during} bytes"
    );
}
