//! The accept loop of the service's ports (gRPC, metrics): at most a configured number of
//! connections open at once, so that clients, well-meaning or not, cannot take the
//! process's file descriptors (which the venues' connections and the other port need) or
//! memory. A connection beyond the limit is closed as it is accepted, and counted.

use crate::config::ConnectionLimits;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;

/// A pause after a failed accept (out of file descriptors, mostly): waits rather than
/// spinning on it.
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// Accepts connections on `listener` until the task is aborted, at most `limits.max` open
/// at once, each served by the future `serve` makes of it. One beyond the limit is closed
/// at once and counted in `refused`.
pub async fn accept_bounded<Serve, Served>(
    listener: TcpListener,
    limits: ConnectionLimits,
    port: &'static str,
    refused: prometheus::IntCounter,
    mut serve: Serve,
) where
    Serve: FnMut(TcpStream) -> Served,
    Served: Future<Output = ()> + Send + 'static,
{
    let places = Arc::new(Semaphore::new(limits.max));
    let mut refusal_log = crate::log_limit::LogLimiter::per_second();
    let mut accept_failure_log = crate::log_limit::LogLimiter::per_second();
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(error) => {
                if let Some(suppressed) = accept_failure_log.allow(crate::clock::monotonic_ns()) {
                    tracing::warn!(port, %error, suppressed, "accept failed");
                }
                tokio::time::sleep(ACCEPT_RETRY).await;
                continue;
            }
        };
        let Ok(place) = Arc::clone(&places).try_acquire_owned() else {
            refused.inc();
            if let Some(suppressed) = refusal_log.allow(crate::clock::monotonic_ns()) {
                tracing::warn!(
                    port,
                    max = limits.max,
                    suppressed,
                    "connection limit reached: closing a new connection"
                );
            }
            continue; // dropped: closed
        };
        let connection = serve(stream);
        tokio::spawn(async move {
            connection.await;
            drop(place);
        });
    }
}

/// A connection whose writes fail (`TimedOut`) once one has waited `limit` for the peer to
/// read: a client that stops reading a stream (a stalled browser tab) is dropped, instead
/// of holding its place and the server's buffers for as long as TCP keeps it. Each write
/// that does not complete at once arms the deadline; one that completes clears it.
pub(crate) struct WriteDeadline<S> {
    inner: S,
    limit: Duration,
    stalled: Option<std::pin::Pin<Box<tokio::time::Sleep>>>,
    /// Counted once, when the deadline passes.
    on_stall: Option<prometheus::IntCounter>,
}

impl<S> WriteDeadline<S> {
    pub(crate) fn new(inner: S, limit: Duration, on_stall: prometheus::IntCounter) -> Self {
        WriteDeadline {
            inner,
            limit,
            stalled: None,
            on_stall: Some(on_stall),
        }
    }

    /// `done` as it is, clearing the deadline once it is ready; while it is pending,
    /// `Err(TimedOut)` once it has waited `limit`.
    fn within_deadline<T>(
        &mut self,
        cx: &mut std::task::Context<'_>,
        done: std::task::Poll<std::io::Result<T>>,
    ) -> std::task::Poll<std::io::Result<T>> {
        if done.is_ready() {
            self.stalled = None;
            return done;
        }
        let limit = self.limit;
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(limit)));
        match stalled.as_mut().poll(cx) {
            std::task::Poll::Ready(()) => {
                if let Some(counter) = self.on_stall.take() {
                    counter.inc();
                }
                std::task::Poll::Ready(Err(std::io::ErrorKind::TimedOut.into()))
            }
            std::task::Poll::Pending => std::task::Poll::Pending,
        }
    }
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for WriteDeadline<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for WriteDeadline<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        let done = std::pin::Pin::new(&mut self.inner).poll_write(cx, buf);
        self.within_deadline(cx, done)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let done = std::pin::Pin::new(&mut self.inner).poll_flush(cx);
        self.within_deadline(cx, done)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}
