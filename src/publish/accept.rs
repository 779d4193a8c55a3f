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
