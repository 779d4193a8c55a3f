//! The reader: one OS thread per connection to a venue, running a current-thread tokio
//! runtime, that keeps the WebSocket connection, subscribes to its instruments' streams
//! (a venue's instruments are spread over as many connections as its limit of streams per
//! connection, and its endpoints, ask for: `service::plan_connections`), and hands
//! each frame to the connection's [`FeedCore`] (`feed/core/`), which decodes it and
//! publishes each instrument's book into its mailbox for the merger. The reader does the
//! I/O: the socket, the timers, the REST snapshot fetches the core asks for, the metrics.
//! Shared by every venue; what differs per venue lives in `venue/<name>/`.
//!
//! It survives what exchanges do: a refused or dropped connection, a venue's reconnect
//! request, each reconnect paced by one policy (`feed/reconnect.rs`: backoff reset only by a
//! healthy connection, and the venue's budget of connection attempts), a silent
//! subscription (read-idle watchdog: subscribed again, then the connection recycled), oversized frames (refused by the WebSocket layer: the
//! connection is reset), and bad frames (counted, logged, dropped; the connection stays
//! up). While a venue is not delivering books its instruments are marked `Connecting` or
//! `OutOfSync`, so the merger leaves them out.
//!
//! A connection the venue would close after its lifetime (`VenueFacts::max_connection_age`)
//! is renewed before: a second connection on the same thread syncs every book, held
//! (`Books::Held`), then takes over and the first closes, so the venue never leaves the
//! merge (docs/decisions.md, "A connection is renewed before the venue's lifetime runs out").
//!
//! A reload changes a running connection's streams (`StreamChange`, from
//! `Service::reload`): a stream listed is subscribed on it, one delisted unsubscribed, the
//! others untouched; a connection left with no stream closes.

pub mod core;
pub mod handoff;
pub mod listing;
pub(crate) mod reconnect;
pub(crate) mod rest_client;

use self::core::{
    CoreStream, FeedCore, FeedEvent, FeedOutput, FrameVerdict, Silence, SnapshotRequest,
};
use crate::book::diff_sync::{ResyncReason, UpdateOutcome};
use crate::clock::{self, HostClock};
use crate::config::{ApiKey, FeedMode, FeedSettings};
use crate::feed::handoff::{FeedSender, VenueFeed};
use crate::feed::reconnect::{ConnectionEnd, ReconnectPolicy, SharedConnectAttempts};
use crate::feed::rest_client::{FetchError, SnapshotClient};
use crate::log_limit::LogLimiter;
use crate::metrics::VenueMetrics;
use crate::record::{ConnectionRecorder, EventKind};
use crate::rng::Rng;
use crate::venue::{AuthAnswer, AuthRequest, Credentials, TokenConnection, VenueId};
use futures_util::{SinkExt, StreamExt};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::tungstenite::{self, protocol::WebSocketConfig};

/// What one reader serves.
pub(crate) struct ReaderSpec {
    pub venue: VenueId,
    /// The venue's connections are numbered from 0 (the thread's name, logs).
    pub connection: usize,
    pub url: String,
    /// The venue's connection attempts, which all its readers share.
    pub connect_attempts: SharedConnectAttempts,
    /// Levels per side to keep.
    pub depth: usize,
    pub settings: FeedSettings,
    pub mode: FeedMode,
    /// The venue's application-level ping and how often (`VenueConfig::client_ping`).
    pub client_ping: Option<(Duration, &'static str)>,
    /// The venue's API key, where it needs one (`VenueConfig::api_key`).
    pub api_key: Option<ApiKey>,
    /// Where each connection's address and token are asked for first, where the venue
    /// hands them out (`VenueConfig::token_url`).
    pub token_url: Option<String>,
    /// How long a connection runs before it is renewed (`VenueConfig::renew_after`).
    pub renew_after: Option<Duration>,
    pub streams: Vec<StreamSpec>,
    /// Where the connection's events are recorded, when `[record]` is on.
    pub recorder: Option<ConnectionRecorder>,
    /// The host's clock, for the venue's delays.
    pub host_clock: Arc<HostClock>,
    /// The changes a reload makes to the connection's streams, where it can change.
    pub changes: Option<mpsc::UnboundedReceiver<StreamChange>>,
}

/// A change a reload makes to a running connection's streams (`Service::reload`).
pub(crate) enum StreamChange {
    /// Carry this stream too: subscribed on the open connection.
    List(StreamSpec),
    /// Stop carrying the stream named `stream` of the instrument `instrument`:
    /// unsubscribed; the connection ends with its last stream.
    Delist { instrument: String, stream: String },
}

/// One instrument on a reader's connection.
pub(crate) struct StreamSpec {
    /// The stream (channel) subscribed to.
    pub name: String,
    /// The venue's symbol (diff mode asks for its REST snapshot).
    pub symbol: String,
    /// The instrument's name (a label of its metrics).
    pub instrument: String,
    /// The base currency per contract, where the venue's sizes are contracts.
    pub contract_size: Option<crate::fixed::FixedPoint>,
    /// The unit its instrument's numbers are read in.
    pub unit: crate::fixed::UnitSize,
    /// Where its books go.
    pub sender: FeedSender,
}

/// The upgrade request's header carrying `key`, where `venue` takes one. Marked sensitive
/// (the HTTP layer leaves it out of its own debug output); the configuration admitted
/// only visible ASCII, which is always a valid header value.
fn api_key_header(
    venue: VenueId,
    key: Option<&ApiKey>,
) -> Option<(
    tungstenite::http::HeaderName,
    tungstenite::http::HeaderValue,
)> {
    let name = tungstenite::http::HeaderName::from_bytes(
        venue.facts().credentials.upgrade_header()?.as_bytes(),
    );
    let mut value = tungstenite::http::HeaderValue::from_str(key?.expose()).ok()?;
    value.set_sensitive(true);
    Some((name.ok()?, value))
}

/// When a connection whose authorisation lasts `lifetime` is renewed: the renewal margin
/// before it lapses, or half-way through a lifetime shorter than two margins (never at
/// once, which would renew without end).
fn renewal_before_lapse(lifetime: Duration) -> Duration {
    lifetime - crate::config::defaults::RENEWAL_MARGIN.min(lifetime / 2)
}

/// Starts the reader's thread. It runs until `shutdown` turns true, then closes the
/// connection with a close frame and returns.
pub(crate) fn spawn(
    spec: ReaderSpec,
    merger: std::thread::Thread,
    metrics: VenueMetrics,
    shutdown: watch::Receiver<bool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name(format!("reader-{}-{}", spec.venue, spec.connection))
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("tokio runtime");
            let mut reader = Reader::new(spec, merger, metrics);
            runtime.block_on(reader.run(shutdown));
        })
}

/// Starts a thread that runs several connections' readers (`feed.reader_threads`), each a
/// task of its runtime, until `shutdown` turns true. With `read_batch`, the thread sleeps
/// that long between looks at its sockets and reads what came on all of them together:
/// at thousands of books a wake-up of a thread costs more than the frame it delivers, and
/// this bounds them to one a period whatever the frame rate. A frame waits up to the
/// period longer.
pub(crate) fn spawn_shared(
    name: String,
    readers: Vec<(ReaderSpec, VenueMetrics)>,
    mut arrivals: mpsc::UnboundedReceiver<(ReaderSpec, VenueMetrics)>,
    merger: std::thread::Thread,
    shutdown: watch::Receiver<bool>,
    read_batch: Option<Duration>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new().name(name).spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("tokio runtime");
        let tasks = tokio::task::LocalSet::new();
        if let Some(period) = read_batch {
            tasks.spawn_local(async move {
                loop {
                    // Blocks the thread on purpose: what arrives meanwhile waits in the
                    // sockets. The yield lets the runtime look at them without blocking
                    // and run every reader with something to read before this sleeps again.
                    std::thread::sleep(period);
                    tokio::task::yield_now().await;
                }
            });
        }
        runtime.block_on(tasks.run_until(async move {
            let mut running = tokio::task::JoinSet::new();
            let mut start = |(spec, metrics)| {
                let mut reader = Reader::new(spec, merger.clone(), metrics);
                let shutdown = shutdown.clone();
                running.spawn_local(async move { reader.run(shutdown).await });
            };
            readers.into_iter().for_each(&mut start);
            // Connections a reload adds join the thread's readers, until the service stops.
            let mut stopped = shutdown.clone();
            loop {
                tokio::select! {
                    arrival = arrivals.recv() => match arrival {
                        Some(reader) => start(reader),
                        None => break,
                    },
                    _ = stopped.wait_for(|stop| *stop) => break,
                }
            }
            while running.join_next().await.is_some() {}
        }));
    })
}

/// How much tungstenite asks the socket for per read. It zeroes that much spare buffer
/// before every read, so its default (128 KiB) costs a 128 KiB `memset` per frame, which
/// profiles showed as a large share of a busy reader's CPU. 16 KiB still takes a dozen
/// Binance depth20 frames, or two 100-level Bitstamp frames, per read; a larger frame
/// grows the buffer to fit it.
const READ_BUFFER_BYTES: usize = 16 * 1024;

/// The WebSocket layer's settings of a reader's connection. Its read path reuses one
/// buffer: a message is a slice of it, and once the message is dropped (the reader drops
/// each when its core is done with it) the buffer is whole again, so reading allocates
/// nothing per message (`tests/zero_alloc.rs`, over a loopback socket).
pub fn websocket_config(max_frame_bytes: usize) -> WebSocketConfig {
    WebSocketConfig::default()
        .read_buffer_size(READ_BUFFER_BYTES)
        .max_message_size(Some(max_frame_bytes))
        .max_frame_size(Some(max_frame_bytes))
}

/// Why a connection ended.
enum Disconnect {
    Shutdown,
    /// The venue asked for it, or closed cleanly: reconnect at once.
    Reconnect,
    /// A renewal's new connection has every book synced (held, not yet published): it
    /// takes over from the connection it renews.
    Synced(Box<Socket>),
    /// A reload delisted the connection's last stream.
    Delisted,
}

/// What a renewal's new connection gives back: its reader (its core, its held books) and
/// how its connection ended, `Synced` when it is ready to take over.
type Renewal = std::pin::Pin<
    Box<dyn std::future::Future<Output = (Reader, Result<Disconnect, ConnectionError>)>>,
>;

/// How long a renewal's new connection may take to sync every book before it is given up
/// (counted as failed; the old connection goes on and tries again after [`RENEWAL_RETRY`],
/// or after its renewal time where that is shorter).
const RENEWAL_ALLOWANCE: Duration = Duration::from_secs(120);
const RENEWAL_RETRY: Duration = Duration::from_secs(60);
/// How long the renewed connection's close frame may take to go out.
const CLOSE_ALLOWANCE: Duration = Duration::from_secs(1);

/// The REST fetches in flight: snapshots and audits.
type Fetches = tokio::task::JoinSet<Fetched>;

/// A REST fetch's answer, and what it was for.
struct Fetched {
    stream: usize,
    generation: u64,
    url: String,
    /// An audit's snapshot (`SnapshotRequest::Audit`), not a rebuild's.
    audit: bool,
    result: Result<Vec<u8>, FetchError>,
}

type Socket =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

struct Reader {
    venue: VenueId,
    url: String,
    /// When a connection is renewed (`ReaderSpec::renew_after`).
    renew_after: Option<Duration>,
    connect_attempts: SharedConnectAttempts,
    client_ping: Option<(Duration, &'static str)>,
    /// The header the upgrade request carries the venue's API key in, where it needs one.
    api_key_header: Option<(
        tungstenite::http::HeaderName,
        tungstenite::http::HeaderValue,
    )>,
    /// The request each connection is authorised by, first, where the venue takes its
    /// credentials so and they are configured (`Streams::auth_request`).
    auth: Option<Arc<AuthRequest>>,
    /// Where each connection's address and token are asked for, and the client that asks
    /// (`ReaderSpec::token_url`).
    token: Option<(String, SnapshotClient)>,
    /// The key REST snapshots are signed with, where the venue signs them
    /// (`Credentials::SignedRest`) and one is configured.
    rest_key: Option<Arc<ApiKey>>,
    settings: FeedSettings,
    core: FeedCore,
    outlet: Outlet,
    /// Diff mode's REST client.
    client: Option<SnapshotClient>,
    /// The mailboxes' superseded counts already added to the metric.
    superseded_reported: u64,
    rng: Rng,
    recorder: Option<ConnectionRecorder>,
    /// The lines a reconnect storm repeats.
    reconnect_log: LogLimiter,
    connected_log: LogLimiter,
    silence_log: LogLimiter,
    /// The changes a reload makes to the streams (`ReaderSpec::changes`).
    changes: Option<mpsc::UnboundedReceiver<StreamChange>>,
}

/// Where the core's results go in the service: the instruments' mailboxes and the venue's
/// metrics.
struct Outlet {
    books: Books,
    merger: std::thread::Thread,
    metrics: VenueMetrics,
    host_clock: Arc<HostClock>,
    /// Per stream (slot of the core).
    checksum_mismatches: Vec<prometheus::IntCounter>,
    /// Per stream, its instrument's name (a reload names a stream to delist by it).
    instruments: Vec<String>,
    fetches: Fetches,
}

/// Where a core's books go, per stream (`None`: a slot a reload left vacant): the
/// instruments' mailboxes, or, while a renewal's new connection syncs beside the one it
/// renews, held until it takes over.
enum Books {
    Mailboxes(Vec<Option<FeedSender>>),
    Held(Vec<Option<VenueFeed>>),
}

impl Outlet {
    /// Whether every book is held synced: a renewal's new connection is ready.
    fn all_held_synced(&self) -> bool {
        match &self.books {
            Books::Held(feeds) => (feeds.iter().flatten())
                .all(|feed| feed.state == crate::merger::summary::VenueState::Synced),
            Books::Mailboxes(_) => false,
        }
    }
}

impl FeedOutput for Outlet {
    #[inline]
    fn publish(&mut self, stream: usize, write: impl FnOnce(&mut VenueFeed)) {
        // The venue's time of a synced book and its receipt, for the venue's delay.
        let mut stamps = (0, 0);
        let write = |feed: &mut VenueFeed| {
            write(feed);
            if feed.state == crate::merger::summary::VenueState::Synced {
                stamps = (feed.book.exchange_time_ns, feed.book.received_ns);
            }
        };
        match &mut self.books {
            Books::Mailboxes(senders) => {
                if let Some(sender) = &mut senders[stream] {
                    sender.publish_with(&self.merger, write);
                }
            }
            Books::Held(feeds) => {
                if let Some(feed) = &mut feeds[stream] {
                    write(feed);
                }
            }
        }
        if let (exchange_ns @ 1.., received_ns) = stamps {
            self.metrics
                .feed_delay(&self.host_clock, exchange_ns, received_ns);
        }
    }

    #[inline]
    fn note(&mut self, stream: Option<usize>, event: FeedEvent) {
        let metrics = &self.metrics;
        match event {
            FeedEvent::Decoded { received_ns } => metrics
                .decode_seconds
                .observe((clock::monotonic_ns() - received_ns) as f64 * 1e-9),
            FeedEvent::BadFrame(_) => metrics.decode_errors.inc(),
            FeedEvent::BookRepeated => metrics.books_repeated.inc(),
            FeedEvent::BookOutOfOrder => metrics.books_dropped_out_of_order.inc(),
            FeedEvent::BookBeforeAck => metrics.books_dropped_before_ack.inc(),
            FeedEvent::Ignored => metrics.messages_ignored.inc(),
            FeedEvent::SequenceReset => metrics.sequence_resets.inc(),
            FeedEvent::DiffEvent(UpdateOutcome::Stale) => metrics.events_dropped_stale.inc(),
            FeedEvent::DiffEvent(_) => {}
            FeedEvent::EventsOverflowed(events) => metrics.events_dropped_overflow.inc_by(events),
            FeedEvent::Resync(reason) => {
                if reason == ResyncReason::Gap {
                    metrics.gaps.inc();
                }
                metrics.resyncs(reason).inc();
            }
            FeedEvent::Snapshot {
                outcome, dropped, ..
            } => {
                metrics.snapshot_requests(outcome).inc();
                metrics.events_dropped_stale.inc_by(dropped as u64);
            }
            FeedEvent::Synced { took_ns } => metrics.resync_seconds.observe(took_ns as f64 * 1e-9),
            FeedEvent::SnapshotsCancelled => self.fetches.abort_all(),
            FeedEvent::UnverifiedSnapshot => metrics.unverified_snapshots.inc(),
            FeedEvent::Audit(outcome) => metrics.audits(outcome).inc(),
            FeedEvent::ChecksumMismatch => {
                if let Some(counter) =
                    stream.and_then(|stream| self.checksum_mismatches.get(stream))
                {
                    counter.inc();
                }
            }
        }
    }
}

impl Reader {
    fn new(spec: ReaderSpec, merger: std::thread::Thread, metrics: VenueMetrics) -> Reader {
        let checksum_mismatches = spec
            .streams
            .iter()
            .map(|stream| metrics.checksum_mismatches(&stream.instrument))
            .collect();
        let instruments = (spec.streams.iter())
            .map(|stream| stream.instrument.clone())
            .collect();
        let (streams, senders) = spec
            .streams
            .into_iter()
            .map(|stream| {
                let core = CoreStream {
                    name: stream.name,
                    symbol: stream.symbol,
                    contract_size: stream.contract_size,
                    unit: stream.unit,
                };
                (core, Some(stream.sender))
            })
            .unzip();
        let diff = spec.mode.diff_settings();
        Reader {
            venue: spec.venue,
            url: spec.url,
            connect_attempts: spec.connect_attempts,
            // A recording's timeline is one connection at a time: a recording reader
            // reconnects when the venue closes its connection instead.
            renew_after: spec.renew_after.filter(|_| spec.recorder.is_none()),
            client_ping: spec.client_ping,
            api_key_header: api_key_header(spec.venue, spec.api_key.as_ref()),
            auth: (spec.api_key.as_ref())
                .and_then(|key| spec.venue.streams().auth_request(key))
                .map(Arc::new),
            rest_key: (spec.api_key.clone())
                .filter(|_| spec.venue.facts().credentials == Credentials::SignedRest)
                .map(Arc::new),
            token: spec.token_url.map(|url| {
                let client = SnapshotClient::new(spec.settings.connect_timeout);
                (url, client.expect("TLS backend"))
            }),
            settings: spec.settings,
            core: FeedCore::new(spec.venue, spec.depth, streams, diff, clock::monotonic_ns()),
            outlet: Outlet {
                books: Books::Mailboxes(senders),
                merger,
                metrics,
                host_clock: spec.host_clock,
                checksum_mismatches,
                instruments,
                fetches: Fetches::new(),
            },
            client: diff.map(|settings| {
                SnapshotClient::new(settings.snapshot_timeout).expect("TLS backend")
            }),
            superseded_reported: 0,
            recorder: spec.recorder,
            rng: Rng::new(clock::unix_ns()),
            reconnect_log: LogLimiter::per_second(),
            connected_log: LogLimiter::per_second(),
            silence_log: LogLimiter::per_second(),
            changes: spec.changes,
        }
    }

    /// Applies a reload's `change` to the streams at `now_ns`; returns the frames to send
    /// where the connection is `open`.
    fn apply_change(&mut self, change: StreamChange, now_ns: u64, open: bool) -> Vec<String> {
        let venue = self.venue;
        if !matches!(self.outlet.books, Books::Mailboxes(_)) {
            return Vec::new(); // (a renewal's new connection gets no changes)
        }
        match change {
            StreamChange::List(spec) => {
                let stream = CoreStream {
                    name: spec.name,
                    symbol: spec.symbol,
                    contract_size: spec.contract_size,
                    unit: spec.unit,
                };
                tracing::info!(%venue, stream = %stream.name, instrument = %spec.instrument, "stream listed");
                let (slot, frames) = self.core.list_stream(stream, now_ns, open);
                let outlet = &mut self.outlet;
                let counter = outlet.metrics.checksum_mismatches(&spec.instrument);
                let Books::Mailboxes(senders) = &mut outlet.books else {
                    unreachable!("checked above")
                };
                if slot == senders.len() {
                    senders.push(Some(spec.sender));
                    outlet.checksum_mismatches.push(counter);
                    outlet.instruments.push(spec.instrument);
                } else {
                    senders[slot] = Some(spec.sender);
                    outlet.checksum_mismatches[slot] = counter;
                    outlet.instruments[slot] = spec.instrument;
                }
                frames
            }
            StreamChange::Delist { instrument, stream } => {
                let instruments = &self.outlet.instruments;
                let Some(slot) =
                    (self.core).listed_slot(&stream, |slot| instruments[slot] == instrument)
                else {
                    tracing::warn!(%venue, %stream, %instrument, "no such stream to delist");
                    return Vec::new();
                };
                tracing::info!(%venue, %stream, %instrument, "stream delisted");
                // Its mailbox's count, reported first, leaves the sum the metric follows.
                self.flush_metrics();
                if let Books::Mailboxes(senders) = &mut self.outlet.books
                    && let Some(sender) = senders[slot].take()
                {
                    self.superseded_reported -= sender.superseded_books();
                }
                self.core.delist_stream(slot, now_ns, open)
            }
        }
    }

    /// The changes a reload sent while the connection was not open, applied before it
    /// opens.
    fn apply_waiting_changes(&mut self) {
        while let Some(change) = self
            .changes
            .as_mut()
            .and_then(|changes| changes.try_recv().ok())
        {
            self.apply_change(change, clock::monotonic_ns(), false);
        }
    }

    async fn run(&mut self, mut shutdown: watch::Receiver<bool>) {
        let venue = self.venue;
        let settings = self.settings;
        let mut policy = ReconnectPolicy::new(
            settings.backoff_initial,
            settings.backoff_max,
            settings.backoff_reset_after,
        );
        let mut next_attempt_ns = clock::monotonic_ns();
        loop {
            // Every attempt, the first included, within the venue's budget, which its other
            // connections share.
            // The clock is read under the lock: the budget sees it only move forwards.
            let (now, due, at) = {
                let mut attempts = self.connect_attempts.lock().expect("not poisoned");
                let now = clock::monotonic_ns();
                let due = next_attempt_ns.max(now);
                (now, due, attempts.reserve(now, due))
            };
            if at > due {
                self.outlet.metrics.connect_budget_waits.inc();
                let wait_ms = (at - due) / 1_000_000;
                tracing::warn!(%venue, wait_ms, "connection attempts at the venue's budget: waiting");
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_nanos(at - now)) => {}
                _ = shutdown.wait_for(|stop| *stop) => return,
            }
            self.apply_waiting_changes();
            if self.core.listed_streams() == 0 {
                return; // a reload delisted every stream while the connection was closed
            }
            self.outlet.metrics.connect_attempts.inc();
            self.core.connecting(&mut self.outlet);
            let result = self.connection(&mut shutdown).await;
            self.flush_metrics();
            let ended_ns = clock::monotonic_ns();
            if let Some(recorder) = &mut self.recorder {
                let why = match &result {
                    Ok(Disconnect::Shutdown) => "shutdown".to_owned(),
                    Ok(Disconnect::Delisted) => "every stream delisted".to_owned(),
                    Ok(Disconnect::Reconnect | Disconnect::Synced(_)) => {
                        "the venue closed it or asked to reconnect".to_owned()
                    }
                    Err(error) => error.to_string(),
                };
                recorder.record(EventKind::Closed, ended_ns, "", why.as_bytes());
            }
            let error = match result {
                Ok(Disconnect::Shutdown | Disconnect::Delisted) => return,
                // (Only a renewal's new connection, whose books are held, ends synced.)
                Ok(Disconnect::Reconnect | Disconnect::Synced(_)) => None,
                Err(error) => {
                    self.outlet
                        .metrics
                        .connection_errors(error.reason(&self.url))
                        .inc();
                    Some(error)
                }
            };
            let ended = ConnectionEnd {
                delivered_for: self.core.first_book_ns().map_or(Duration::ZERO, |first| {
                    Duration::from_nanos(ended_ns - first)
                }),
                venue_asked: error.is_none(),
            };
            let pause = policy.pause_after(ended, |backoff| self.jittered(backoff));
            let retry_in_ms = pause.as_millis() as u64;
            if let Some(suppressed) = self.reconnect_log.allow(ended_ns) {
                match error {
                    None => {
                        tracing::info!(%venue, retry_in_ms, suppressed, "venue asked to reconnect")
                    }
                    Some(error) => {
                        tracing::warn!(%venue, %error, retry_in_ms, suppressed, "connection lost")
                    }
                }
            }
            self.outlet.metrics.reconnections.inc();
            next_attempt_ns = ended_ns + pause.as_nanos() as u64;
        }
    }

    /// Uniform in [backoff/2, backoff]: spreads the reconnects of many clients.
    fn jittered(&mut self, backoff: Duration) -> Duration {
        let half = backoff / 2;
        half + Duration::from_nanos(self.rng.below(half.as_nanos().max(1) as u64))
    }

    async fn connection(
        &mut self,
        shutdown: &mut watch::Receiver<bool>,
    ) -> Result<Disconnect, ConnectionError> {
        let settings = self.settings;
        let config = websocket_config(settings.max_frame_bytes);
        let mut client_ping = self.client_ping;
        let (url, recorded_url) = match self.token.clone() {
            None => (self.url.clone(), self.url.clone()),
            Some((token_url, client)) => {
                let connection = tokio::select! {
                    connection = self.connection_token(&token_url, &client) => connection?,
                    _ = shutdown.wait_for(|stop| *stop) => return Ok(Disconnect::Shutdown),
                };
                // At least as often as the venue asks, which it may change from one
                // connection to the next: twice in its interval.
                if let (Some((every, ping)), Some(asked)) = (client_ping, connection.ping_every) {
                    client_ping = Some((every.min(asked / 2), ping));
                }
                (connection.url, connection.recorded_url)
            }
        };
        let mut request = tungstenite::client::IntoClientRequest::into_client_request(&url)
            .map_err(ConnectionError::Connect)?;
        if let Some((name, value)) = &self.api_key_header {
            request.headers_mut().insert(name.clone(), value.clone());
        }
        let connect = tokio_tungstenite::connect_async_with_config(request, Some(config), true);
        let (mut socket, _) = tokio::select! {
            connected = tokio::time::timeout(settings.connect_timeout, connect) => {
                connected
                    .map_err(|_| ConnectionError::ConnectTimeout)?
                    .map_err(ConnectionError::Connect)?
            }
            _ = shutdown.wait_for(|stop| *stop) => return Ok(Disconnect::Shutdown),
        };
        let connected_ns = clock::monotonic_ns();
        if let Some(recorder) = &mut self.recorder {
            recorder.record(EventKind::Connected, connected_ns, &recorded_url, b"");
        }
        if self.venue.streams().awaits_welcome() {
            tokio::select! {
                welcomed = self.welcome(&mut socket) => welcomed?,
                _ = shutdown.wait_for(|stop| *stop) => return Ok(Disconnect::Shutdown),
            }
        }
        let authorised_for = match self.auth.clone() {
            None => None,
            Some(auth) => tokio::select! {
                authorised = self.authorise(&mut socket, &auth) => authorised?,
                _ = shutdown.wait_for(|stop| *stop) => return Ok(Disconnect::Shutdown),
            },
        };
        let requests = self.core.connected(connected_ns, &mut self.outlet);
        self.send(&mut socket, requests).await?;
        if let Some(suppressed) = self.connected_log.allow(clock::monotonic_ns()) {
            tracing::info!(venue = %self.venue, url = %recorded_url, suppressed, "connected, subscribing");
        }

        let mut flush = tokio::time::interval(crate::metrics::FLUSH_EVERY);
        // The read-idle watchdog, on each stream's last book data (`FeedCore::check_silence`:
        // a silent stream is subscribed again, then the connection recycled). A timeout
        // around each read would restart with every other event of this loop (the metrics
        // flush comes every 100 ms) and never fire: the timer runs to the deadline the core
        // names.
        let allowance_ns = settings.read_idle_timeout.as_nanos() as u64;
        let idle_timer = tokio::time::sleep(settings.read_idle_timeout);
        tokio::pin!(idle_timer);
        // The venue's application-level ping, where it wants one.
        let mut client_pinger = tokio::time::interval(
            client_ping.map_or(Duration::from_secs(3600), |(every, _)| every),
        );
        client_pinger.reset();
        // Renewal: when this connection is renewed, and the new connection meanwhile. An
        // authorisation that lapses renews the connection before it does, as a lifetime.
        let renew_after = match authorised_for.filter(|_| self.renews()) {
            Some(lifetime) => {
                let before_lapse = renewal_before_lapse(lifetime);
                Some(
                    self.renew_after
                        .map_or(before_lapse, |after| after.min(before_lapse)),
                )
            }
            None => self.renew_after,
        };
        let renew_in = renew_after.unwrap_or(Duration::from_secs(365 * 24 * 3600));
        let retry_in = renew_in.min(RENEWAL_RETRY);
        let renew_timer = tokio::time::sleep(renew_in);
        tokio::pin!(renew_timer);
        let mut renewal: Option<Renewal> = None;
        let renewal_shutdown = shutdown.clone();
        // Diff mode: when the next snapshot request is due (re-armed after every change).
        let mut snapshot_due = false;
        let snapshot_timer = tokio::time::sleep(Duration::ZERO);
        tokio::pin!(snapshot_timer);
        loop {
            let now = clock::monotonic_ns();
            if let Some(at) = self.core.next_snapshot_at(now) {
                let at = tokio::time::Instant::now() + Duration::from_nanos(at.saturating_sub(now));
                if !snapshot_due || snapshot_timer.deadline() != at {
                    snapshot_timer.as_mut().reset(at);
                }
                snapshot_due = true;
            } else {
                snapshot_due = false;
            }
            let fetching = !self.outlet.fetches.is_empty();
            let next = tokio::select! {
                next = socket.next() => next,
                _ = &mut idle_timer => {
                    let now = clock::monotonic_ns();
                    match self.core.check_silence(now, allowance_ns, &mut self.outlet) {
                        Silence::None => {}
                        Silence::Resubscribe { streams, frames } => {
                            self.outlet.metrics.silent_resubscriptions.inc_by(streams as u64);
                            if let Some(suppressed) = self.silence_log.allow(now) {
                                tracing::warn!(venue = %self.venue, streams, suppressed, "subscriptions silent for the read-idle allowance: subscribing again");
                            }
                            self.send(&mut socket, frames).await?;
                        }
                        Silence::Recycle => return Err(ConnectionError::IdleTimeout),
                    }
                    let rest = self.core.next_silence_check(allowance_ns).saturating_sub(now);
                    idle_timer.as_mut().reset(tokio::time::Instant::now() + Duration::from_nanos(rest));
                    continue;
                }
                _ = flush.tick() => {
                    self.flush_metrics();
                    continue;
                }
                _ = &mut snapshot_timer, if snapshot_due => {
                    self.core.finish_audit(clock::monotonic_ns(), &mut self.outlet);
                    if let Some(frames) = self.start_snapshot_request() {
                        self.send(&mut socket, frames).await?;
                    }
                    continue;
                }
                _ = client_pinger.tick(), if client_ping.is_some() => {
                    if let Some((_, ping)) = client_ping {
                        let unix_seconds = clock::unix_ns() / 1_000_000_000;
                        let ping = ping.replace(crate::venue::PING_TIME, &unix_seconds.to_string());
                        self.send(&mut socket, [ping]).await?;
                    }
                    continue;
                }
                Some(fetched) = self.outlet.fetches.join_next(), if fetching => {
                    if let Ok(fetched) = fetched {
                        let now = clock::monotonic_ns();
                        self.record_fetched(&fetched, now);
                        let Fetched { stream, generation, audit, .. } = fetched;
                        let result = match &fetched.result {
                            Ok(body) => Ok(body.as_slice()),
                            Err(error) => {
                                let venue = self.venue;
                                tracing::warn!(%venue, %error, audit, "snapshot request failed");
                                Err(error.outcome())
                            }
                        };
                        match audit {
                            true => self.core.on_audit_snapshot(stream, generation, result, now, &mut self.outlet),
                            false => self.core.on_snapshot(stream, generation, result, now, &mut self.outlet),
                        }
                        if self.outlet.all_held_synced() {
                            return Ok(Disconnect::Synced(Box::new(socket)));
                        }
                    }
                    continue;
                }
                _ = &mut renew_timer, if renew_after.is_some() => {
                    // A new connection syncs beside this one (its books held), within an
                    // allowance; then it takes over, or is given up and tried again later.
                    match renewal.take() {
                        None => {
                            renewal = Some(self.renewal(&renewal_shutdown));
                            renew_timer.as_mut().reset(tokio::time::Instant::now() + RENEWAL_ALLOWANCE);
                        }
                        Some(_) => {
                            self.renewal_failed("it did not sync every book in time");
                            renew_timer.as_mut().reset(tokio::time::Instant::now() + retry_in);
                        }
                    }
                    continue;
                }
                Some((mut successor, ended)) = futures_util::future::OptionFuture::from(renewal.as_mut()), if renewal.is_some() => {
                    renewal = None;
                    let next = match ended {
                        Ok(Disconnect::Synced(new_socket)) => {
                            self.take_over(&mut successor, &mut socket, *new_socket).await;
                            renew_in
                        }
                        Ok(Disconnect::Shutdown) => return Ok(Disconnect::Shutdown),
                        Ok(Disconnect::Reconnect | Disconnect::Delisted) => {
                            self.renewal_failed("the venue closed it");
                            retry_in
                        }
                        Err(error) => {
                            self.renewal_failed(&error.to_string());
                            retry_in
                        }
                    };
                    renew_timer.as_mut().reset(tokio::time::Instant::now() + next);
                    continue;
                }
                change = async { self.changes.as_mut()?.recv().await }, if self.changes.is_some() => {
                    let Some(change) = change else {
                        self.changes = None; // no reload will change this connection
                        continue;
                    };
                    // A renewal's new connection carries the streams as they were: given
                    // up, and tried again later with the streams as they are.
                    if renewal.take().is_some() {
                        renew_timer.as_mut().reset(tokio::time::Instant::now() + retry_in);
                    }
                    let frames = self.apply_change(change, clock::monotonic_ns(), true);
                    self.send(&mut socket, frames).await?;
                    if self.core.listed_streams() == 0 {
                        let _ = tokio::time::timeout(CLOSE_ALLOWANCE, socket.close(None)).await;
                        return Ok(Disconnect::Delisted);
                    }
                    continue;
                }
                _ = shutdown.wait_for(|stop| *stop) => {
                    let _ = socket.close(None).await;
                    return Ok(Disconnect::Shutdown);
                }
            };
            let message = match next {
                None => return Err(ConnectionError::Closed),
                Some(message) => message?,
            };
            let received_ns = clock::monotonic_ns();
            if self.core.ack_overdue(received_ns, settings.connect_timeout) {
                return Err(ConnectionError::AckTimeout);
            }
            match message {
                tungstenite::Message::Text(text) => {
                    self.outlet.metrics.messages.inc();
                    if let Some(recorder) = &mut self.recorder {
                        recorder.record(EventKind::Received, received_ns, "", text.as_bytes());
                    }
                    match self
                        .core
                        .on_frame(text.as_bytes(), received_ns, &mut self.outlet)
                    {
                        FrameVerdict::Continue => {}
                        FrameVerdict::Refused => return Err(ConnectionError::Refused),
                        FrameVerdict::Reconnect => return Ok(Disconnect::Reconnect),
                        FrameVerdict::Answer(answer) => {
                            self.send(&mut socket, [answer.to_owned()]).await?
                        }
                    }
                    if self.outlet.all_held_synced() {
                        return Ok(Disconnect::Synced(Box::new(socket)));
                    }
                }
                tungstenite::Message::Binary(bytes) => {
                    self.outlet.metrics.messages.inc();
                    if let Some(recorder) = &mut self.recorder {
                        recorder.record(EventKind::ReceivedBinary, received_ns, "", &bytes);
                    }
                    match self
                        .core
                        .on_binary_frame(&bytes, received_ns, &mut self.outlet)
                    {
                        FrameVerdict::Continue => {}
                        FrameVerdict::Refused => return Err(ConnectionError::Refused),
                        FrameVerdict::Reconnect => return Ok(Disconnect::Reconnect),
                        FrameVerdict::Answer(answer) => {
                            self.send(&mut socket, [answer.to_owned()]).await?
                        }
                    }
                    if self.outlet.all_held_synced() {
                        return Ok(Disconnect::Synced(Box::new(socket)));
                    }
                }
                tungstenite::Message::Close(_) => return Ok(Disconnect::Reconnect),
                // Answered by tungstenite as it reads; counted so a flood shows.
                tungstenite::Message::Ping(_) => self.outlet.metrics.pings.inc(),
                _ => {}
            }
        }
    }

    /// Whether this reader renews its connections: not a renewal's new connection (its
    /// books held until it takes over), nor one recording (a recording's timeline is one
    /// connection at a time).
    fn renews(&self) -> bool {
        matches!(self.outlet.books, Books::Mailboxes(_)) && self.recorder.is_none()
    }

    /// Authorises the connection before anything else is sent on it: `auth`'s request,
    /// then frames read until its answer, within the connect timeout. Returns how long the
    /// authorisation lasts, where the venue says. The secret and the tokens answered are
    /// left out of the recording (`AuthRequest::recorded`, `AuthAnswer::Authorised`).
    async fn authorise(
        &mut self,
        socket: &mut Socket,
        auth: &AuthRequest,
    ) -> Result<Option<Duration>, ConnectionError> {
        if let Some(recorder) = &mut self.recorder {
            recorder.record(
                EventKind::Sent,
                clock::monotonic_ns(),
                "",
                auth.recorded.as_bytes(),
            );
        }
        socket
            .send(tungstenite::Message::text(auth.frame.clone()))
            .await?;
        let deadline = tokio::time::Instant::now() + self.settings.connect_timeout;
        loop {
            let next = tokio::time::timeout_at(deadline, socket.next()).await;
            let text = match next.map_err(|_| ConnectionError::AckTimeout)? {
                Some(Ok(tungstenite::Message::Text(text))) => text,
                Some(Ok(tungstenite::Message::Close(_))) | None => {
                    return Err(ConnectionError::ClosedUnauthorised);
                }
                Some(Ok(_)) => continue,
                Some(Err(error)) => return Err(error.into()),
            };
            let received_ns = clock::monotonic_ns();
            let answer = self.venue.streams().auth_answer(text.as_bytes());
            let recorded = match &answer {
                Some(AuthAnswer::Authorised { recorded, .. }) => recorded.as_bytes(),
                Some(AuthAnswer::Refused(_)) | None => text.as_bytes(),
            };
            if let Some(recorder) = &mut self.recorder {
                recorder.record(EventKind::Received, received_ns, "", recorded);
            }
            match answer {
                Some(AuthAnswer::Authorised { lifetime, .. }) => return Ok(lifetime),
                Some(AuthAnswer::Refused(why)) => return Err(ConnectionError::AuthRefused(why)),
                None => {
                    tracing::debug!(venue = %self.venue, "a frame before the authorisation's answer: ignored")
                }
            }
        }
    }

    /// Asks the venue where to connect (`Streams::token_path`): the URL with its token, and
    /// how often to ping. A failed request ends the attempt like a failed connect: the
    /// next is paced by the backoff and the venue's budget of connection attempts.
    async fn connection_token(
        &mut self,
        token_url: &str,
        client: &SnapshotClient,
    ) -> Result<TokenConnection, ConnectionError> {
        let body = (client.post(token_url).await)
            .map_err(|error| ConnectionError::Token(format!("{token_url}: {error}")))?;
        let connect_id = format!("mergebook-{:016x}", self.rng.below(u64::MAX));
        let connection = self.venue.streams().token_connection(&body, &connect_id);
        connection.map_err(|why| ConnectionError::Token(format!("{token_url}: {why}")))
    }

    /// Reads frames until the venue's greeting (`Streams::awaits_welcome`), within the
    /// connect timeout; they are recorded, and nothing else is made of them.
    async fn welcome(&mut self, socket: &mut Socket) -> Result<(), ConnectionError> {
        let deadline = tokio::time::Instant::now() + self.settings.connect_timeout;
        loop {
            let next = tokio::time::timeout_at(deadline, socket.next()).await;
            let text = match next.map_err(|_| ConnectionError::NoWelcome)? {
                Some(Ok(tungstenite::Message::Text(text))) => text,
                Some(Ok(tungstenite::Message::Close(_))) | None => {
                    return Err(ConnectionError::Closed);
                }
                Some(Ok(_)) => continue,
                Some(Err(error)) => return Err(error.into()),
            };
            if let Some(recorder) = &mut self.recorder {
                let received_ns = clock::monotonic_ns();
                recorder.record(EventKind::Received, received_ns, "", text.as_bytes());
            }
            if self.venue.streams().is_welcome(text.as_bytes()) {
                return Ok(());
            }
            tracing::debug!(venue = %self.venue, "a frame before the venue's welcome: ignored");
        }
    }

    /// Makes the snapshot or audit request the core says is due: a REST fetch on this
    /// thread's runtime, or the frames to send on the connection (a subscription again).
    fn start_snapshot_request(&mut self) -> Option<Vec<String>> {
        let now = clock::monotonic_ns();
        let (stream, generation, url, audit) = match self.core.start_snapshot(now)? {
            SnapshotRequest::Fetch {
                stream,
                generation,
                url,
            } => (stream, generation, url, false),
            SnapshotRequest::Audit {
                stream,
                generation,
                url,
            } => {
                if let Some(recorder) = &mut self.recorder {
                    recorder.record(EventKind::AuditRequest, now, &url, b"");
                }
                (stream, generation, url, true)
            }
            SnapshotRequest::Resubscribe { frames } => return Some(frames),
        };
        let client = self.client.clone()?;
        let headers = match &self.rest_key {
            Some(key) => {
                let unix_ms = clock::unix_ns() / 1_000_000;
                self.venue.snapshots().signed_headers(key, &url, unix_ms)
            }
            None => Vec::new(),
        };
        self.outlet.fetches.spawn(async move {
            let result = client.fetch(&url, &headers).await;
            Fetched {
                stream,
                generation,
                url,
                audit,
                result,
            }
        });
        None
    }

    /// Sends `frames` on the connection, recording each.
    async fn send(
        &mut self,
        socket: &mut Socket,
        frames: impl IntoIterator<Item = String>,
    ) -> Result<(), tungstenite::Error> {
        for frame in frames {
            if let Some(recorder) = &mut self.recorder {
                recorder.record(EventKind::Sent, clock::monotonic_ns(), "", frame.as_bytes());
            }
            socket.send(tungstenite::Message::text(frame)).await?;
        }
        Ok(())
    }

    /// Records a fetch's answer as the core is about to take it: an audit's snapshot, or a
    /// rebuild's used or dropped as superseded; or how it failed.
    fn record_fetched(&mut self, fetched: &Fetched, now_ns: u64) {
        let Some(recorder) = &mut self.recorder else {
            return;
        };
        let url = &fetched.url;
        match &fetched.result {
            Ok(body) if fetched.audit => {
                recorder.record(EventKind::AuditResponse, now_ns, url, body)
            }
            Ok(body)
                if self
                    .core
                    .is_current_snapshot_request(fetched.stream, fetched.generation) =>
            {
                recorder.record(EventKind::RestResponse, now_ns, url, body)
            }
            Ok(body) => recorder.record(EventKind::RestSuperseded, now_ns, url, body),
            Err(error) => {
                let why = error.to_string();
                recorder.record(EventKind::RestFailed, now_ns, url, why.as_bytes())
            }
        };
    }

    /// The reader of a renewal's new connection: the same venue, URL, settings and
    /// streams, a fresh core, its books held; its metrics are the venue's.
    fn successor(&self) -> Reader {
        // A book held for each stream listed.
        let held = match &self.outlet.books {
            Books::Mailboxes(senders) => senders
                .iter()
                .map(|sender| sender.as_ref().map(|_| VenueFeed::default()))
                .collect(),
            Books::Held(feeds) => feeds.clone(),
        };
        Reader {
            venue: self.venue,
            url: self.url.clone(),
            renew_after: None,
            connect_attempts: Arc::clone(&self.connect_attempts),
            client_ping: self.client_ping,
            api_key_header: self.api_key_header.clone(),
            auth: self.auth.clone(),
            token: self.token.clone(),
            rest_key: self.rest_key.clone(),
            settings: self.settings,
            core: self.core.fresh(clock::monotonic_ns()),
            outlet: Outlet {
                books: Books::Held(held),
                merger: self.outlet.merger.clone(),
                metrics: self.outlet.metrics.clone(),
                host_clock: Arc::clone(&self.outlet.host_clock),
                checksum_mismatches: self.outlet.checksum_mismatches.clone(),
                instruments: self.outlet.instruments.clone(),
                fetches: Fetches::new(),
            },
            client: self.client.clone(),
            superseded_reported: 0,
            recorder: None,
            rng: Rng::new(clock::unix_ns()),
            reconnect_log: LogLimiter::per_second(),
            connected_log: LogLimiter::per_second(),
            silence_log: LogLimiter::per_second(),
            changes: None,
        }
    }

    /// A renewal's new connection, within the venue's connection budget: it runs until
    /// every book is synced (`Disconnect::Synced`), or fails.
    fn renewal(&self, shutdown: &watch::Receiver<bool>) -> Renewal {
        let mut successor = self.successor();
        let mut shutdown = shutdown.clone();
        Box::pin(async move {
            let wait_ns = {
                let mut attempts = successor.connect_attempts.lock().expect("not poisoned");
                let now = clock::monotonic_ns();
                attempts.reserve(now, now) - now
            };
            tokio::time::sleep(Duration::from_nanos(wait_ns)).await;
            successor.outlet.metrics.connect_attempts.inc();
            let result = successor.connection(&mut shutdown).await;
            (successor, result)
        })
    }

    /// Takes over from a renewal's new connection, `successor`, now synced on `socket`:
    /// its core and its books (published at once), its snapshot fetches; the old
    /// connection is closed. The merged book never loses the venue: the old connection's
    /// books stay in the mailboxes until the new ones replace them.
    async fn take_over(&mut self, successor: &mut Reader, old: &mut Socket, socket: Socket) {
        successor.flush_metrics();
        std::mem::swap(&mut self.core, &mut successor.core);
        self.outlet.fetches.abort_all();
        std::mem::swap(&mut self.outlet.fetches, &mut successor.outlet.fetches);
        if let Books::Held(feeds) = &successor.outlet.books {
            for (stream, feed) in feeds.iter().enumerate() {
                if let Some(feed) = feed {
                    self.outlet.publish(stream, |slot| slot.clone_from(feed));
                }
            }
        }
        // A close frame, not waited on for long: the new connection's frames are waiting.
        let _ = tokio::time::timeout(CLOSE_ALLOWANCE, old.close(None)).await;
        *old = socket;
        self.outlet.metrics.renewals[0].inc();
        tracing::info!(venue = %self.venue, url = %self.url, "connection renewed: the new one synced every book, the old one closed");
    }

    /// A renewal's new connection given up (`why`): the old one goes on.
    fn renewal_failed(&mut self, why: &str) {
        self.outlet.metrics.renewals[1].inc();
        tracing::warn!(venue = %self.venue, why, "connection renewal failed: the connection goes on, renewed again later");
    }

    /// Publishes what the metrics recorded locally, and what the mailboxes counted.
    fn flush_metrics(&mut self) {
        let metrics = &self.outlet.metrics;
        metrics.flush();
        let superseded: u64 = match &self.outlet.books {
            Books::Mailboxes(senders) => (senders.iter().flatten())
                .map(FeedSender::superseded_books)
                .sum(),
            Books::Held(_) => 0,
        };
        metrics
            .superseded
            .inc_by(superseded - self.superseded_reported);
        self.superseded_reported = superseded;
    }
}

#[derive(Debug, thiserror::Error)]
enum ConnectionError {
    #[error("connecting timed out")]
    ConnectTimeout,
    #[error("connecting failed: {0}")]
    Connect(tungstenite::Error),
    #[error("no subscription ack in time")]
    AckTimeout,
    #[error(
        "a subscription delivered nothing for the read-idle allowance, nor after it was made again"
    )]
    IdleTimeout,
    #[error("connection closed without a close frame")]
    Closed,
    #[error("subscription refused by the venue")]
    Refused,
    #[error("authorisation refused by the venue (check the API key's client id and secret): {0}")]
    AuthRefused(String),
    #[error("the venue closed the connection before answering its authorisation")]
    ClosedUnauthorised,
    #[error("the venue's token request failed: {0}")]
    Token(String),
    #[error("the venue sent no welcome in time")]
    NoWelcome,
    #[error(transparent)]
    WebSocket(#[from] tungstenite::Error),
}

impl ConnectionError {
    /// The `reason` label of `orderbook_connection_errors_total`.
    fn reason(&self, url: &str) -> &'static str {
        use tungstenite::Error as WsError;
        use tungstenite::error::ProtocolError;
        match self {
            ConnectionError::ConnectTimeout => "connect_timeout",
            ConnectionError::Connect(WsError::Http(_) | WsError::HttpFormat(_)) => {
                "handshake_rejected"
            }
            ConnectionError::Connect(WsError::Io(error)) if is_tls_failure(error, url) => "tls",
            ConnectionError::Connect(_) => "connect",
            ConnectionError::AckTimeout => "ack_timeout",
            ConnectionError::IdleTimeout => "idle_timeout",
            ConnectionError::Closed
            | ConnectionError::WebSocket(
                WsError::ConnectionClosed
                | WsError::AlreadyClosed
                | WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake),
            ) => "closed",
            ConnectionError::Refused => "subscription_refused",
            ConnectionError::AuthRefused(_) => "auth_refused",
            ConnectionError::ClosedUnauthorised => "closed",
            ConnectionError::Token(_) => "token",
            ConnectionError::NoWelcome => "no_welcome",
            ConnectionError::WebSocket(WsError::Capacity(_)) => "oversized_frame",
            ConnectionError::WebSocket(WsError::Utf8(_)) => "invalid_utf8",
            ConnectionError::WebSocket(WsError::Protocol(_)) => "protocol",
            ConnectionError::WebSocket(_) => "io",
        }
    }
}

/// A connect error that happened in the TLS handshake: rustls refused (a certificate it
/// cannot verify, a protocol error), or the peer hung up during the handshake.
fn is_tls_failure(error: &std::io::Error, url: &str) -> bool {
    let rustls_refused = error
        .get_ref()
        .is_some_and(|inner| inner.is::<rustls::Error>());
    rustls_refused
        || (url.starts_with("wss://") && error.kind() == std::io::ErrorKind::UnexpectedEof)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_authorisation_renews_its_connection_before_it_lapses_never_at_once() {
        let hour = Duration::from_secs(3600);
        let year = 365 * 24 * hour;
        assert_eq!(renewal_before_lapse(year), year - hour / 2);
        assert_eq!(renewal_before_lapse(hour), hour / 2);
        assert_eq!(
            renewal_before_lapse(Duration::from_secs(900)),
            Duration::from_secs(450)
        );
        assert_eq!(renewal_before_lapse(Duration::ZERO), Duration::ZERO);
    }
}
