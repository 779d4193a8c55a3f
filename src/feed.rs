//! The reader: one OS thread per venue, running a current-thread tokio runtime, that keeps
//! a WebSocket connection to the venue, subscribes to every instrument's stream, decodes
//! each frame, and publishes each instrument's book into its mailbox for the merger.
//! Shared by every venue; what differs per venue lives in `venue/<name>.rs`.
//!
//! It survives what exchanges do: a refused or dropped connection (exponential backoff
//! with jitter, capped), a venue's reconnect request (`serverShutdown`,
//! `bts:request_reconnect`: reconnect at once), a silent connection (read-idle watchdog),
//! oversized frames (refused by the WebSocket layer: the connection is reset), and bad
//! frames (counted, logged, dropped; the connection stays up). While a venue is not
//! delivering books its instruments are marked `Connecting` or `OutOfSync`, so the merger
//! leaves them out.

use crate::book::TopBook;
use crate::clock;
use crate::config::FeedSettings;
use crate::mailbox::Sender;
use crate::merger::VenueFeed;
use crate::metrics::VenueMetrics;
use crate::rng::Rng;
use crate::summary::VenueState;
use crate::venue::{Message, VenueId};
use futures_util::{SinkExt, StreamExt};
use std::time::Duration;
use tokio::sync::watch;
use tokio_tungstenite::tungstenite::{self, protocol::WebSocketConfig};

/// What one reader serves.
pub struct ReaderSpec {
    pub venue: VenueId,
    pub url: String,
    /// Levels per side to keep.
    pub depth: usize,
    pub settings: FeedSettings,
    /// Each instrument's stream name and the mailbox its books go to.
    pub streams: Vec<(String, Sender<VenueFeed>)>,
}

/// Starts the reader's thread. It runs until `shutdown` turns true, then closes the
/// connection with a close frame and returns.
pub fn spawn(
    spec: ReaderSpec,
    merger: std::thread::Thread,
    metrics: VenueMetrics,
    shutdown: watch::Receiver<bool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("reader-{}", spec.venue))
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            let mut reader = Reader::new(spec, merger, metrics);
            runtime.block_on(reader.run(shutdown));
        })
}

/// Why a session ended.
enum SessionEnd {
    Shutdown,
    /// The venue asked for it, or closed cleanly: reconnect at once.
    Reconnect,
}

struct Reader {
    spec: ReaderSpec,
    merger: std::thread::Thread,
    metrics: VenueMetrics,
    scratch: TopBook,
    /// Per stream, the venue sequence of the last book published (to drop duplicates and
    /// out-of-order pushes).
    last_sequence: Vec<u64>,
    books_this_session: u64,
    rng: Rng,
}

impl Reader {
    fn new(spec: ReaderSpec, merger: std::thread::Thread, metrics: VenueMetrics) -> Reader {
        let streams = spec.streams.len();
        Reader {
            spec,
            merger,
            metrics,
            scratch: TopBook::default(),
            last_sequence: vec![0; streams],
            books_this_session: 0,
            rng: Rng::new(clock::unix_ns()),
        }
    }

    async fn run(&mut self, mut shutdown: watch::Receiver<bool>) {
        let venue = self.spec.venue;
        let mut backoff = self.spec.settings.backoff_initial;
        loop {
            self.publish_state(VenueState::Connecting);
            let result = self.session(&mut shutdown).await;
            self.metrics.flush();
            let pause = match result {
                Ok(SessionEnd::Shutdown) => return,
                Ok(SessionEnd::Reconnect) => {
                    tracing::info!(%venue, "venue asked to reconnect; reconnecting now");
                    Duration::ZERO
                }
                Err(error) => {
                    if self.books_this_session > 0 {
                        backoff = self.spec.settings.backoff_initial;
                    }
                    let pause = self.jittered(backoff);
                    tracing::warn!(%venue, %error, retry_in_ms = pause.as_millis() as u64, "connection lost");
                    backoff = (backoff * 2).min(self.spec.settings.backoff_max);
                    pause
                }
            };
            self.metrics.reconnections.inc();
            tokio::select! {
                _ = tokio::time::sleep(pause) => {}
                _ = shutdown.wait_for(|stop| *stop) => return,
            }
        }
    }

    /// Uniform in [backoff/2, backoff]: spreads the reconnects of many clients.
    fn jittered(&mut self, backoff: Duration) -> Duration {
        let half = backoff / 2;
        half + Duration::from_nanos(self.rng.below(half.as_nanos().max(1) as u64))
    }

    /// Tells the merger about every stream at once (the connection's state).
    fn publish_state(&mut self, state: VenueState) {
        for (_, sender) in &mut self.spec.streams {
            sender.publish(&VenueFeed {
                state,
                book: TopBook::default(),
            });
        }
        self.merger.unpark();
    }

    async fn session(
        &mut self,
        shutdown: &mut watch::Receiver<bool>,
    ) -> Result<SessionEnd, SessionError> {
        let settings = self.spec.settings;
        let config = WebSocketConfig::default()
            .max_message_size(Some(settings.max_frame_bytes))
            .max_frame_size(Some(settings.max_frame_bytes));
        let connect =
            tokio_tungstenite::connect_async_with_config(&self.spec.url, Some(config), true);
        let (mut socket, _) = tokio::select! {
            connected = tokio::time::timeout(settings.connect_timeout, connect) => {
                connected.map_err(|_| SessionError::Timeout("connect"))??
            }
            _ = shutdown.wait_for(|stop| *stop) => return Ok(SessionEnd::Shutdown),
        };
        self.books_this_session = 0;
        let streams: Vec<String> = self
            .spec
            .streams
            .iter()
            .map(|(name, _)| name.clone())
            .collect();
        let (requests, mut acks_pending) = self.spec.venue.subscribe_frames(&streams);
        for request in requests {
            socket.send(tungstenite::Message::text(request)).await?;
        }
        tracing::info!(venue = %self.spec.venue, url = %self.spec.url, ?streams, "connected, subscribing");
        let ack_deadline = tokio::time::Instant::now() + settings.connect_timeout;

        let mut flush = tokio::time::interval(crate::metrics::FLUSH_EVERY);
        loop {
            let next = tokio::select! {
                next = tokio::time::timeout(settings.read_idle_timeout, socket.next()) => next,
                _ = flush.tick() => {
                    self.metrics.flush();
                    continue;
                }
                _ = shutdown.wait_for(|stop| *stop) => {
                    let _ = socket.close(None).await;
                    return Ok(SessionEnd::Shutdown);
                }
            };
            if acks_pending > 0 && tokio::time::Instant::now() > ack_deadline {
                return Err(SessionError::Timeout("subscription ack"));
            }
            let message = match next {
                Err(_) => return Err(SessionError::Timeout("read idle")),
                Ok(None) => return Err(SessionError::Closed),
                Ok(Some(message)) => message?,
            };
            match message {
                tungstenite::Message::Text(text) => {
                    match self.on_text(text.as_bytes(), &mut acks_pending) {
                        Ok(None) => {}
                        Ok(Some(end)) => return Ok(end),
                        Err(error) => return Err(error),
                    }
                }
                tungstenite::Message::Binary(bytes) => {
                    self.on_bad_frame(&format!(
                        "binary frame of {} bytes where text is expected",
                        bytes.len()
                    ));
                }
                tungstenite::Message::Close(_) => return Ok(SessionEnd::Reconnect),
                _ => {} // pings are answered by tungstenite as it reads
            }
        }
    }

    /// Handles one text frame; `Some` ends the session.
    fn on_text(
        &mut self,
        frame: &[u8],
        acks_pending: &mut usize,
    ) -> Result<Option<SessionEnd>, SessionError> {
        let received_ns = clock::monotonic_ns();
        self.metrics.messages.inc();
        let decoded = self
            .spec
            .venue
            .decode(frame, self.spec.depth, &mut self.scratch);
        self.metrics
            .decode_seconds
            .observe((clock::monotonic_ns() - received_ns) as f64 * 1e-9);
        match decoded {
            Ok(Message::Book { stream }) => {
                let Some(slot) = self
                    .spec
                    .streams
                    .iter()
                    .position(|(name, _)| name.as_bytes() == stream)
                else {
                    return Ok(None); // a stream we did not ask for
                };
                let sequence = self.scratch.venue_sequence;
                if sequence <= self.last_sequence[slot] {
                    tracing::debug!(venue = %self.spec.venue, sequence, "duplicate or out-of-order book dropped");
                    return Ok(None);
                }
                self.last_sequence[slot] = sequence;
                self.scratch.received_ns = received_ns;
                let scratch = &self.scratch;
                let _ = self.spec.streams[slot]
                    .1
                    .publish_with(|feed| -> Result<(), ()> {
                        feed.state = VenueState::Synced;
                        feed.book.copy_from(scratch);
                        Ok(())
                    });
                self.merger.unpark();
                self.books_this_session += 1;
            }
            Ok(Message::SubscribeResult { accepted: true }) => {
                *acks_pending = acks_pending.saturating_sub(1);
                if *acks_pending == 0 {
                    tracing::info!(venue = %self.spec.venue, "subscribed");
                }
            }
            Ok(Message::SubscribeResult { accepted: false }) => return Err(SessionError::Refused),
            Ok(Message::Reconnect) => return Ok(Some(SessionEnd::Reconnect)),
            Ok(Message::Heartbeat | Message::Ignored) => {}
            Err(error) => self.on_bad_frame(&error.to_string()),
        }
        Ok(None)
    }

    /// A frame that could not be understood: counted, logged, dropped. Which stream it
    /// was for is unknown, so every stream of the venue is out of sync until its next
    /// good book.
    fn on_bad_frame(&mut self, error: &str) {
        self.metrics.decode_errors.inc();
        tracing::warn!(venue = %self.spec.venue, %error, "bad frame dropped");
        self.publish_state(VenueState::OutOfSync);
    }
}

#[derive(Debug, thiserror::Error)]
enum SessionError {
    #[error("{0} timed out")]
    Timeout(&'static str),
    #[error("connection closed")]
    Closed,
    #[error("subscription refused by the venue")]
    Refused,
    #[error(transparent)]
    WebSocket(#[from] tungstenite::Error),
}
