//! A gRPC client that stops reading holds up at most `grpc.client_buffer_bytes` of
//! summaries, whatever its HTTP/2 window: the clients here open a 16 MiB window and then
//! stop reading their sockets. Run against the binary (a child process, so its memory and
//! sockets are its own) with a small and a large budget: with the small one, the kernel's
//! send queue and the service's memory stay within it; the large one shows the setting is
//! what bounds them.

mod common;

use bytes::Bytes;
use common::{KillOnDrop, anonymous_rss_bytes, free_port, settled_anonymous_rss_bytes};
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;

const CLIENTS: u64 = 8;
const WINDOW: u32 = 16 << 20;
const KERNEL_BUFFER: u32 = 16 << 10;
const SMALL_BUFFER: u64 = 128 << 10;
const LARGE_BUFFER: u64 = 4 << 20;
/// What a stuck client costs the service's memory besides its share of the budget: its
/// connection and stream (about 90 KB measured).
const CONNECTION_BYTES: u64 = 192 << 10;
/// Frames per second per venue: summaries fast enough to fill the kernel's socket buffers
/// and then the service's within seconds.
const SIMULATOR_RATE: &str = "5000";
/// How long the stalled clients are left before the service's memory is read.
const FILL_TIME: Duration = Duration::from_secs(8);

/// A socket whose reads stop when `paused` is set (and never wake again): the client's
/// HTTP/2 connection stops reading, as a stuck consumer's would.
struct Pausable {
    socket: TcpStream,
    paused: Arc<AtomicBool>,
}

impl AsyncRead for Pausable {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.paused.load(Ordering::Relaxed) {
            return Poll::Pending;
        }
        Pin::new(&mut self.socket).poll_read(cx, buf)
    }
}

impl AsyncWrite for Pausable {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.socket).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.socket).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.socket).poll_shutdown(cx)
    }
}

/// Subscribes to `BookSummaryExact` over raw HTTP/2 with a 16 MiB window, waits for the
/// response headers, then stops reading. Returns what must stay alive for the stream to.
async fn stalled_client(port: u16) -> impl Sized {
    // A small receive buffer: little of the stream waits in the kernel, so what the
    // client does not read waits in the service.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(KERNEL_BUFFER).unwrap();
    let socket = socket.connect(([127, 0, 0, 1], port).into()).await.unwrap();
    let paused = Arc::new(AtomicBool::new(false));
    let io = Pausable {
        socket,
        paused: Arc::clone(&paused),
    };
    let (client, connection) = h2::client::Builder::new()
        .initial_window_size(WINDOW)
        .initial_connection_window_size(WINDOW)
        .handshake::<_, Bytes>(io)
        .await
        .unwrap();
    let connection = tokio::spawn(connection);
    let mut client = client.ready().await.unwrap();
    let request = http::Request::post(format!(
        "http://127.0.0.1:{port}/orderbook.OrderbookAggregator/BookSummaryExact"
    ))
    .header("content-type", "application/grpc")
    .header("te", "trailers")
    .body(())
    .unwrap();
    let (response, mut body) = client.send_request(request, false).unwrap();
    // One gRPC message: uncompressed, length 0 (an empty SummaryRequest: every instrument).
    body.send_data(Bytes::from_static(&[0, 0, 0, 0, 0]), true)
        .unwrap();
    let response = response.await.unwrap();
    assert_eq!(response.status(), 200);
    paused.store(true, Ordering::Relaxed);
    (client, body, response, connection)
}

/// The service's send queues (bytes the kernel holds for the peer) of the connections
/// established on `port`, from the child's `/proc/<pid>/net/tcp`.
fn send_queues(pid: u32, port: u16) -> Vec<u64> {
    let table = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).unwrap();
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let fields: Vec<&str> = line.split_whitespace().collect();
            let (_, local_port) = fields.get(1)?.split_once(':')?;
            let established = fields.get(3)? == &"01";
            let (send_queue, _) = fields.get(4)?.split_once(':')?;
            (established && u16::from_str_radix(local_port, 16).ok()? == port)
                .then(|| u64::from_str_radix(send_queue, 16).ok())?
        })
        .collect()
}

/// What `CLIENTS` stuck clients cost the service after `FILL_TIME`: its RSS growth, and
/// the largest send queue of their connections.
async fn cost_with(client_buffer: u64) -> (u64, u64) {
    let config = std::env::temp_dir().join(format!(
        "mergebook-client-buffer-{}-{client_buffer}.toml",
        std::process::id()
    ));
    let sim =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config/sim.toml")).unwrap();
    let text = sim.replace(
        "[grpc]\n",
        &format!("[grpc]\nclient_buffer_bytes = {client_buffer}\n"),
    );
    assert_ne!(text, sim, "config/sim.toml has a [grpc] table");
    std::fs::write(&config, text).unwrap();
    let grpc_port = free_port();
    let metrics: std::net::SocketAddr = ([127, 0, 0, 1], free_port()).into();
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_mergebook"))
        .arg("--config")
        .arg(&config)
        .args(["--simulator-rate", SIMULATOR_RATE, "--output", "none"])
        .args(["--grpc-listen", &format!("127.0.0.1:{grpc_port}")])
        .args(["--metrics-listen", &metrics.to_string()])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let child = KillOnDrop(child);
    let pid = child.0.id();
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", grpc_port)).await.is_err() {
        assert!(Instant::now() < deadline, "gRPC never listened");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Past start-up (every venue synced, one client stuck with summaries queued for it),
    // then the baseline.
    common::wait_until("every venue synced", Duration::from_secs(30), || {
        let (_, health) = common::http_get(metrics, "/health")?;
        health.contains(r#""status":"OK""#).then_some(())
    });
    let warm_up = stalled_client(grpc_port).await;
    common::wait_until(
        "the first stuck client's queue",
        Duration::from_secs(30),
        || (send_queues(pid, grpc_port).iter().any(|&queued| queued > 0)).then_some(()),
    );
    let before = settled_anonymous_rss_bytes(pid);
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        clients.push(stalled_client(grpc_port).await);
    }
    tokio::time::sleep(FILL_TIME).await;
    let grown = anonymous_rss_bytes(pid).saturating_sub(before);
    let queues = send_queues(pid, grpc_port);
    assert_eq!(queues.len() as u64, CLIENTS + 1, "the stuck connections");
    drop((clients, warm_up));
    let _ = std::fs::remove_file(&config);
    (grown, queues.into_iter().max().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_holds_up_at_most_its_buffer() {
    let (small_grown, small_queue) = cost_with(SMALL_BUFFER).await;
    let (large_grown, large_queue) = cost_with(LARGE_BUFFER).await;
    println!(
        "{CLIENTS} stuck clients: budget {SMALL_BUFFER} bytes: RSS +{small_grown}, largest \
         send queue {small_queue}; budget {LARGE_BUFFER} bytes: RSS +{large_grown}, largest \
         send queue {large_queue}"
    );
    // Half the budget in the kernel's send queue, half in HTTP/2's send buffer. The
    // kernel takes a write while it holds less than its limit, so the last write may
    // overshoot its half (67,849 bytes against 65,536 seen): the queue is held to the
    // budget, against 1.7 MB the kernel reached here unset.
    assert!(small_queue <= SMALL_BUFFER, "send queue {small_queue}");
    assert!(
        small_grown < CLIENTS * (SMALL_BUFFER / 2 + CONNECTION_BYTES),
        "{small_grown} bytes for {CLIENTS} stuck clients"
    );
    // The setting is what bounds them: with a larger budget, more waits.
    assert!(large_queue > SMALL_BUFFER, "send queue {large_queue}");
}
