//! What a client of the service's ports controls is bounded: the size of a gRPC request
//! (read no further than the limit, and not echoed back), the connections open at once on
//! each port (one more is closed as it is accepted, and counted), and how long a
//! connection may hold its place without a request (gRPC: HTTP/2's preface, then an open
//! stream; the metrics port: request headers, also between requests). The service keeps
//! serving throughout.

use crate::common;
use common::config::TestConfig;

use mergebook::publish::proto::{self, orderbook_aggregator_client::OrderbookAggregatorClient};
use mergebook::service::{Listeners, Service};
use mergebook::sim::Simulator;
use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const GRPC_CONNECTIONS: usize = 8;
const METRICS_CONNECTIONS: usize = 4;
/// The ports' request timeouts in these tests: long enough that the connections holding
/// the places are still open when the one more is accepted, however late the service
/// gets to it on a loaded machine.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(1);
/// Far longer than the request timeout: what a closed connection must be closed within.
const WAIT: Duration = Duration::from_secs(10);

struct Ports {
    _simulator: Simulator,
    service: Service,
    grpc: SocketAddr,
    metrics: SocketAddr,
}

async fn start() -> Ports {
    let simulator =
        Simulator::start(TcpListener::bind("127.0.0.1:0").await.unwrap(), 10, 3).unwrap();
    let timeout_ms = REQUEST_TIMEOUT.as_millis() as i64;
    let mut config = TestConfig::new()
        .set("grpc.max_connections", GRPC_CONNECTIONS as i64)
        .set("grpc.handshake_timeout_ms", timeout_ms)
        .set("metrics.max_connections", METRICS_CONNECTIONS as i64)
        .set("metrics.request_timeout_ms", timeout_ms)
        .instrument("ETH/BTC", &[(mergebook::venue::VenueId::Binance, "ETHBTC")])
        .build();
    simulator.point(&mut config);
    let listeners = Listeners::loopback().await.unwrap();
    let (grpc, metrics) = (
        listeners.grpc.local_addr().unwrap(),
        listeners.metrics.local_addr().unwrap(),
    );
    let service = Service::start(config, listeners).unwrap();
    Ports {
        _simulator: simulator,
        service,
        grpc,
        metrics,
    }
}

impl Ports {
    fn refused(&self, port: &str) -> f64 {
        let series = format!(r#"orderbook_connections_refused_total{{port="{port}"}}"#);
        common::service_metric(&self.service, &series)
    }

    /// Waits for `port`'s refusals to be counted, then requires exactly that many.
    async fn refusals_reach(&self, port: &str, count: f64) {
        common::eventually("the refusal counted", WAIT, || self.refused(port) >= count).await;
        assert_eq!(self.refused(port), count);
    }

    async fn health(&self) -> String {
        let mut stream = TcpStream::connect(self.metrics).await.unwrap();
        stream
            .write_all(b"GET /health HTTP/1.0\r\nHost: test\r\n\r\n")
            .await
            .unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        response
    }

    async fn grpc_client(&self) -> OrderbookAggregatorClient<tonic::transport::Channel> {
        OrderbookAggregatorClient::connect(format!("http://{}", self.grpc))
            .await
            .unwrap()
    }
}

/// Whether the peer closes `stream` within `limit` (what it sent before is read and
/// dropped).
async fn closed_within(stream: &mut TcpStream, limit: Duration) -> bool {
    let mut buffer = [0u8; 4096];
    let closed = async {
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(limit, closed).await.is_ok()
}

async fn connect_all(address: SocketAddr, count: usize) -> Vec<TcpStream> {
    let mut streams = Vec::new();
    for _ in 0..count {
        streams.push(TcpStream::connect(address).await.unwrap());
    }
    streams
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_request_is_refused_unread_and_a_long_name_not_echoed() {
    let ports = start().await;
    let mut client = ports.grpc_client().await;
    let huge = proto::SummaryRequest {
        instrument: "x".repeat(64 << 10),
        ..Default::default()
    };
    let status = client.book_summary_exact(huge).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::OutOfRange, "{status:?}");
    assert!(status.message().len() < 200, "{}", status.message().len());
    // Under the request limit, but no instrument: named back in 40 characters at most.
    let long = proto::SummaryRequest {
        instrument: "y".repeat(900),
        ..Default::default()
    };
    let status = client.book_summary_exact(long).await.unwrap_err();
    assert_eq!(status.code(), tonic::Code::NotFound);
    assert_eq!(
        status.message(),
        format!("no instrument {:?}…", "y".repeat(40))
    );
    // The reflection services hold their messages to a few KiB too, not tonic's 4 MiB: a
    // request for the proto file is answered, the same with 64 KiB of host is not read.
    {
        use tonic_reflection::pb::v1::{
            ServerReflectionRequest, server_reflection_client::ServerReflectionClient,
            server_reflection_request::MessageRequest,
        };
        let channel = tonic::transport::Endpoint::from_shared(format!("http://{}", ports.grpc))
            .unwrap()
            .connect()
            .await
            .unwrap();
        let mut reflection = ServerReflectionClient::new(channel);
        let mut answered = async |host: String| {
            let file = MessageRequest::FileByFilename("orderbook.proto".into());
            let request = ServerReflectionRequest {
                host,
                message_request: Some(file),
            };
            match reflection
                .server_reflection_info(futures_util::stream::iter([request]))
                .await
            {
                Ok(answers) => matches!(answers.into_inner().message().await, Ok(Some(_))),
                Err(_) => false,
            }
        };
        assert!(answered(String::new()).await);
        assert!(!answered("z".repeat(64 << 10)).await);
    }
    // The connection, and the service, are fine.
    let known = proto::SummaryRequest {
        instrument: "ETH/BTC".into(),
        ..Default::default()
    };
    assert!(client.book_summary_exact(known).await.is_ok());
    ports.service.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_metrics_port_bounds_its_connections_and_their_idle_time() {
    let ports = start().await;
    let mut idle = connect_all(ports.metrics, METRICS_CONNECTIONS).await;
    // Held by the idle ones (accepted first, in the order they connected): one more is
    // closed as it is accepted, and counted.
    let mut extra = TcpStream::connect(ports.metrics).await.unwrap();
    ports.refusals_reach("metrics", 1.0).await;
    assert!(closed_within(&mut extra, WAIT).await);
    // The flood holds the metrics port's places only: gRPC serves meanwhile.
    let request = proto::SummaryRequest {
        instrument: "ETH/BTC".into(),
        ..Default::default()
    };
    assert!(
        ports
            .grpc_client()
            .await
            .book_summary_exact(request)
            .await
            .is_ok()
    );
    // The idle ones send no request: closed after the timeout.
    for stream in &mut idle {
        assert!(closed_within(stream, WAIT).await);
    }
    // A kept-alive connection idle after its request is closed too.
    let mut kept = TcpStream::connect(ports.metrics).await.unwrap();
    kept.write_all(b"GET /health HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    assert!(closed_within(&mut kept, WAIT).await);
    assert!(ports.health().await.starts_with("HTTP/1.0 200"));
    ports.service.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_grpc_port_bounds_its_connections_and_their_handshake_time() {
    let ports = start().await;
    let mut silent = connect_all(ports.grpc, GRPC_CONNECTIONS).await;
    let mut extra = TcpStream::connect(ports.grpc).await.unwrap();
    ports.refusals_reach("grpc", 1.0).await;
    assert!(closed_within(&mut extra, WAIT).await);
    // No HTTP/2 preface: closed after the handshake timeout, their places given back.
    for stream in &mut silent {
        assert!(closed_within(stream, WAIT).await);
    }
    // HTTP/2 spoken, and no stream ever opened: closed after the timeout too (a GOAWAY),
    // while a connection streaming summaries stays as long as its stream.
    let mut client = ports.grpc_client().await;
    let request = proto::SummaryRequest {
        instrument: "ETH/BTC".into(),
        ..Default::default()
    };
    let mut summaries = client
        .book_summary_exact(request)
        .await
        .unwrap()
        .into_inner();
    let idle = TcpStream::connect(ports.grpc).await.unwrap();
    let (_requests, connection) = h2::client::handshake(idle).await.unwrap();
    let closed = tokio::time::timeout(WAIT, connection).await;
    assert!(
        closed.is_ok(),
        "an HTTP/2 connection without a stream stayed open"
    );
    for _ in 0..3 {
        assert!(summaries.message().await.unwrap().is_some());
    }
    ports.service.stop().await;
}
