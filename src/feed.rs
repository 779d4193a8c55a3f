//! The reader: one OS thread per venue, running a current-thread tokio runtime, that keeps
//! a WebSocket connection to the venue, subscribes to every instrument's stream, decodes
//! each frame, and publishes each instrument's book into its mailbox for the merger.
//! Shared by every venue; what differs per venue lives in `venue/<name>.rs`.
//!
//! It survives what exchanges do: a refused or dropped connection, a venue's reconnect
//! request (`serverShutdown`, `bts:request_reconnect`), each reconnect paced by one
//! policy (`reconnect.rs`: backoff reset only by a healthy connection, and the venue's
//! budget of connection attempts), a silent connection (read-idle watchdog),
//! oversized frames (refused by the WebSocket layer: the connection is reset), and bad
//! frames (counted, logged, dropped; the connection stays up). While a venue is not
//! delivering books its instruments are marked `Connecting` or `OutOfSync`, so the merger
//! leaves them out.
//!
//! Two modes (`venues.<name>.mode`). Snapshot: each book frame replaces the instrument's
//! book. Diff: each instrument has a full-depth [`BookSync`]; the first buffered event
//! asks the venue's [`SnapshotScheduler`] for a REST snapshot, fetched on this thread's
//! runtime one at a time; a gap, a crossing, a decode error or a reconnect marks the
//! instrument out of sync at once (the others carry on) until a new snapshot joins its
//! buffered events. A snapshot requested before a reset is discarded when it arrives
//! (`generation`), so it can never be joined to events it did not precede.

use crate::book::{BookUpdate, TopBook};
use crate::clock;
use crate::config::{DiffSettings, FeedMode, FeedSettings};
use crate::mailbox::Sender;
use crate::merger::VenueFeed;
use crate::metrics::VenueMetrics;
use crate::reconnect::{ConnectionEnd, ReconnectPolicy};
use crate::rng::Rng;
use crate::snapshot::{FetchError, FetchOutcome, SnapshotClient, SnapshotScheduler};
use crate::summary::VenueState;
use crate::sync::{BookSync, SnapshotOutcome, UpdateOutcome};
use crate::venue::{Message, VenueId};
use futures_util::{SinkExt, StreamExt};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, watch};
use tokio_tungstenite::tungstenite::{self, protocol::WebSocketConfig};

/// What one reader serves.
pub struct ReaderSpec {
    pub venue: VenueId,
    pub url: String,
    /// Levels per side to keep.
    pub depth: usize,
    pub settings: FeedSettings,
    pub mode: FeedMode,
    pub streams: Vec<StreamSpec>,
}

/// One instrument on a reader's connection.
pub struct StreamSpec {
    /// The stream (channel) subscribed to.
    pub name: String,
    /// The venue's symbol (diff mode asks for its REST snapshot).
    pub symbol: String,
    /// Where its books go.
    pub sender: FeedSender,
}

/// A reader's end of one mailbox to the merger. It counts the books the merger never
/// took: a publish that replaced an unread value which was a book (state changes, such
/// as `Connecting`, that are replaced unread are not books lost to latest-value).
///
/// A publish also wakes the instrument's fan-out task (`publish::SummaryFanout`) at once,
/// before the merger has merged: waking a sleeping tokio worker is a system call and, when
/// its CPU sleeps, tens of microseconds on a VM (`mergebook-tools` example `wake_cost`
/// measures it). Woken here, the worker comes up while the merger merges, the merger finds the
/// fan-out already woken and publishes with atomic stores alone, and the system call is
/// paid by the reader once its book is on its way.
///
/// Unless the publish replaced a value the merger had not taken: then the merger is behind,
/// the summary this value goes into is not the next one, and the fan-out was woken for the
/// value replaced (or is busy). Waking it on every publish regardless cut one reader's
/// sustained rate by about a third (measured 2026-11-23): a system call whenever the fan-out had
/// just gone back to sleep.
pub struct FeedSender {
    sender: Sender<VenueFeed>,
    fanout_wake: Arc<Notify>,
    holds_unread_book: bool,
    superseded_books: u64,
}

impl FeedSender {
    /// `fanout_wake`: the instrument's `SummaryFanout::early_wake`.
    pub fn new(sender: Sender<VenueFeed>, fanout_wake: Arc<Notify>) -> FeedSender {
        FeedSender {
            sender,
            fanout_wake,
            holds_unread_book: false,
            superseded_books: 0,
        }
    }

    /// Lets `write` fill the next value in place, publishes it, unparks the merger (asleep
    /// under the `park` idle strategy), then wakes the fan-out unless the value replaced
    /// was still unread: in that order, so that the fan-out's system call never delays
    /// the merger. Last, after a book, it takes back the lines of the slot the next book
    /// goes into (`mailbox::Sender::prepare`): that moved 0.2–0.3 µs a book out of the
    /// in-process latency (docs/decisions.md, "Readers take back their next mailbox slot").
    #[inline]
    pub fn publish_with(
        &mut self,
        merger: &std::thread::Thread,
        write: impl FnOnce(&mut VenueFeed),
    ) {
        let replaced_before = self.sender.superseded();
        let mut is_book = false;
        let mut levels = (0, 0);
        let _ = self.sender.publish_with(|feed| -> Result<(), ()> {
            write(feed);
            is_book = feed.state == VenueState::Synced;
            levels = (feed.book.bids.len(), feed.book.asks.len());
            Ok(())
        });
        let replaced_unread = self.sender.superseded() > replaced_before;
        if replaced_unread && self.holds_unread_book {
            self.superseded_books += 1;
        }
        self.holds_unread_book = is_book;
        merger.unpark();
        if !replaced_unread {
            self.fanout_wake.notify_one();
        }
        if is_book {
            self.sender
                .prepare(|next| next.book.clear_writing(levels.0, levels.1));
        }
    }

    /// Books replaced in the mailbox before the merger took them.
    pub fn superseded_books(&self) -> u64 {
        self.superseded_books
    }
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

/// Books in a row with a sequence below the last one published after which the reader
/// takes the lower sequence as the venue's new count. A book out of order is dropped (an
/// older book must not replace a newer one); a venue whose clock jumped back, or whose
/// counter restarted, sends nothing but such books, and without this its books would all
/// be dropped until the old count was passed again (for a clock jump of an hour, an
/// hour). Three: one reordered book is dropped, a new count is followed within 3 books.
const SEQUENCE_RESET_AFTER: u32 = 3;

/// How much tungstenite asks the socket for per read. It zeroes that much spare buffer
/// before every read, so its default (128 KiB) cost the reader a 128 KiB `memset` per
/// frame, a quarter of its CPU at 50k frames/s (perf, 2026-11-22). 16 KiB still takes
/// a dozen Binance depth20 frames, or two 100-level Bitstamp frames, per read; a larger
/// frame grows the buffer to fit it.
const READ_BUFFER_BYTES: usize = 16 * 1024;

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
    /// Per stream, the venue sequence of the last book published (to drop out-of-order
    /// pushes, and to count repeats).
    last_sequence: Vec<u64>,
    /// Per stream, books in a row whose sequence went below `last_sequence`.
    regressions: Vec<u32>,
    /// When the connection's first book was published (monotonic ns; `None`: none yet).
    first_book_ns: Option<u64>,
    /// When the last frame of a subscribed stream arrived, or the connection opened: the
    /// read-idle watchdog's clock. Pings, acks and heartbeats do not move it, so a dead
    /// subscription on a live socket is recycled.
    last_book_data_ns: u64,
    /// The mailboxes' superseded counts already added to the metric.
    superseded_reported: u64,
    rng: Rng,
    /// Diff mode's books and snapshot machinery.
    diff: Option<DiffBooks>,
}

/// Why an instrument's diff book is being rebuilt (the `reason` label of
/// `orderbook_resyncs_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResyncReason {
    Connect,
    Gap,
    Crossed,
    DecodeError,
}

impl ResyncReason {
    pub const ALL: [ResyncReason; 4] = [
        ResyncReason::Connect,
        ResyncReason::Gap,
        ResyncReason::Crossed,
        ResyncReason::DecodeError,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ResyncReason::Connect => "connect",
            ResyncReason::Gap => "gap",
            ResyncReason::Crossed => "crossed",
            ResyncReason::DecodeError => "decode_error",
        }
    }
}

struct DiffBooks {
    settings: DiffSettings,
    client: SnapshotClient,
    scheduler: SnapshotScheduler,
    /// Per stream.
    books: Vec<DiffBook>,
    /// The decode target of every diff frame, and of every snapshot (sized once).
    update: BookUpdate,
    snapshot: BookUpdate,
    /// The snapshot request in flight: (stream, generation, body or error).
    fetches: tokio::task::JoinSet<(usize, u64, Result<Vec<u8>, FetchError>)>,
}

struct DiffBook {
    sync: BookSync,
    /// Bumped at every reset: a snapshot asked for before it is discarded.
    generation: u64,
    /// When the book left sync (ns, monotonic): the start of the resync duration.
    out_of_sync_since_ns: u64,
}

impl Reader {
    fn new(spec: ReaderSpec, merger: std::thread::Thread, metrics: VenueMetrics) -> Reader {
        let streams = spec.streams.len();
        let diff = match &spec.mode {
            FeedMode::Snapshot => None,
            FeedMode::Diff(settings) => Some(DiffBooks {
                client: SnapshotClient::new(settings.snapshot_timeout).expect("TLS backend"),
                scheduler: SnapshotScheduler::new(settings.policy, streams, clock::monotonic_ns()),
                books: (0..streams)
                    .map(|_| DiffBook {
                        sync: BookSync::new(
                            spec.venue.sequence_rule(),
                            settings.max_levels,
                            settings.max_buffered,
                        ),
                        generation: 0,
                        out_of_sync_since_ns: clock::monotonic_ns(),
                    })
                    .collect(),
                update: BookUpdate::with_capacity(settings.max_levels),
                snapshot: BookUpdate::with_capacity(settings.max_levels),
                fetches: tokio::task::JoinSet::new(),
                settings: settings.clone(),
            }),
        };
        Reader {
            spec,
            merger,
            metrics,
            scratch: TopBook::default(),
            last_sequence: vec![0; streams],
            regressions: vec![0; streams],
            first_book_ns: None,
            last_book_data_ns: 0,
            superseded_reported: 0,
            rng: Rng::new(clock::unix_ns()),
            diff,
        }
    }

    async fn run(&mut self, mut shutdown: watch::Receiver<bool>) {
        let venue = self.spec.venue;
        let settings = self.spec.settings;
        let mut policy = ReconnectPolicy::new(
            settings.backoff_initial,
            settings.backoff_max,
            settings.backoff_reset_after,
            venue.connect_budget(),
        );
        let mut next_attempt_ns = clock::monotonic_ns();
        loop {
            // Every attempt, the first included, within the venue's budget.
            let now = clock::monotonic_ns();
            let due = next_attempt_ns.max(now);
            let at = policy.earliest_attempt(due);
            if at > due {
                self.metrics.connect_budget_waits.inc();
                let wait_ms = (at - due) / 1_000_000;
                tracing::warn!(%venue, wait_ms, "connection attempts at the venue's budget: waiting");
            }
            tokio::select! {
                _ = tokio::time::sleep(Duration::from_nanos(at - now)) => {}
                _ = shutdown.wait_for(|stop| *stop) => return,
            }
            policy.attempted(at);
            self.metrics.connect_attempts.inc();
            self.publish_state(VenueState::Connecting);
            self.first_book_ns = None;
            let result = self.session(&mut shutdown).await;
            self.flush_metrics();
            let ended_ns = clock::monotonic_ns();
            let error = match result {
                Ok(SessionEnd::Shutdown) => return,
                Ok(SessionEnd::Reconnect) => None,
                Err(error) => {
                    self.metrics
                        .connection_errors(error.reason(&self.spec.url))
                        .inc();
                    Some(error)
                }
            };
            let ended = ConnectionEnd {
                delivered_for: self.first_book_ns.map_or(Duration::ZERO, |first| {
                    Duration::from_nanos(ended_ns - first)
                }),
                venue_asked: error.is_none(),
            };
            let pause = policy.pause_after(ended, |backoff| self.jittered(backoff));
            let retry_in_ms = pause.as_millis() as u64;
            match error {
                None => tracing::info!(%venue, retry_in_ms, "venue asked to reconnect"),
                Some(error) => tracing::warn!(%venue, %error, retry_in_ms, "connection lost"),
            }
            self.metrics.reconnections.inc();
            next_attempt_ns = ended_ns + pause.as_nanos() as u64;
        }
    }

    /// Uniform in [backoff/2, backoff]: spreads the reconnects of many clients.
    fn jittered(&mut self, backoff: Duration) -> Duration {
        let half = backoff / 2;
        half + Duration::from_nanos(self.rng.below(half.as_nanos().max(1) as u64))
    }

    /// Tells the merger about every stream at once (the connection's state).
    fn publish_state(&mut self, state: VenueState) {
        for StreamSpec { sender, .. } in &mut self.spec.streams {
            // The merger reads a feed's book only when it is `Synced`.
            sender.publish_with(&self.merger, |feed| feed.state = state);
        }
    }

    async fn session(
        &mut self,
        shutdown: &mut watch::Receiver<bool>,
    ) -> Result<SessionEnd, SessionError> {
        let settings = self.spec.settings;
        let config = WebSocketConfig::default()
            .read_buffer_size(READ_BUFFER_BYTES)
            .max_message_size(Some(settings.max_frame_bytes))
            .max_frame_size(Some(settings.max_frame_bytes));
        let connect =
            tokio_tungstenite::connect_async_with_config(&self.spec.url, Some(config), true);
        let (mut socket, _) = tokio::select! {
            connected = tokio::time::timeout(settings.connect_timeout, connect) => {
                connected
                    .map_err(|_| SessionError::ConnectTimeout)?
                    .map_err(SessionError::Connect)?
            }
            _ = shutdown.wait_for(|stop| *stop) => return Ok(SessionEnd::Shutdown),
        };
        // Order is per connection: the first book of a new one is the newest there is.
        self.last_sequence.fill(0);
        self.regressions.fill(0);
        let streams: Vec<String> = self
            .spec
            .streams
            .iter()
            .map(|stream| stream.name.clone())
            .collect();
        self.reset_diff_books(ResyncReason::Connect);
        let (requests, mut acks_pending) = self.spec.venue.subscribe_frames(&streams);
        for request in requests {
            socket.send(tungstenite::Message::text(request)).await?;
        }
        tracing::info!(venue = %self.spec.venue, url = %self.spec.url, ?streams, "connected, subscribing");
        let ack_deadline = tokio::time::Instant::now() + settings.connect_timeout;

        let mut flush = tokio::time::interval(crate::metrics::FLUSH_EVERY);
        // The read-idle watchdog, on the last book data (`last_book_data_ns`). A timeout
        // around each read would restart with every other event of this loop (the metrics
        // flush comes every 100 ms) and never fire: the timer runs to the deadline, and
        // re-arms from the last book data if there was some.
        let idle_timeout_ns = settings.read_idle_timeout.as_nanos() as u64;
        self.last_book_data_ns = clock::monotonic_ns();
        let idle_timer = tokio::time::sleep(settings.read_idle_timeout);
        tokio::pin!(idle_timer);
        // Diff mode: when the next snapshot request is due (re-armed after every change).
        let mut snapshot_due = false;
        let snapshot_timer = tokio::time::sleep(Duration::ZERO);
        tokio::pin!(snapshot_timer);
        loop {
            if let Some(at) = self.next_snapshot_at() {
                if !snapshot_due || snapshot_timer.deadline() != at {
                    snapshot_timer.as_mut().reset(at);
                }
                snapshot_due = true;
            } else {
                snapshot_due = false;
            }
            let fetching = self
                .diff
                .as_ref()
                .is_some_and(|diff| !diff.fetches.is_empty());
            let next = tokio::select! {
                next = socket.next() => next,
                _ = &mut idle_timer => {
                    let idle_ns = clock::monotonic_ns().saturating_sub(self.last_book_data_ns);
                    if idle_ns >= idle_timeout_ns {
                        return Err(SessionError::IdleTimeout);
                    }
                    let rest = Duration::from_nanos(idle_timeout_ns - idle_ns);
                    idle_timer.as_mut().reset(tokio::time::Instant::now() + rest);
                    continue;
                }
                _ = flush.tick() => {
                    self.flush_metrics();
                    continue;
                }
                _ = &mut snapshot_timer, if snapshot_due => {
                    self.start_snapshot_fetch();
                    continue;
                }
                Some(fetched) = async { self.diff.as_mut()?.fetches.join_next().await }, if fetching => {
                    if let Ok((stream, generation, result)) = fetched {
                        self.on_snapshot(stream, generation, result);
                    }
                    continue;
                }
                _ = shutdown.wait_for(|stop| *stop) => {
                    let _ = socket.close(None).await;
                    return Ok(SessionEnd::Shutdown);
                }
            };
            if acks_pending > 0 && tokio::time::Instant::now() > ack_deadline {
                return Err(SessionError::AckTimeout);
            }
            let message = match next {
                None => return Err(SessionError::Closed),
                Some(message) => message?,
            };
            let received_ns = clock::monotonic_ns();
            match message {
                tungstenite::Message::Text(text) => {
                    match self.on_text(text.as_bytes(), received_ns, &mut acks_pending) {
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
                // Answered by tungstenite as it reads; counted so a flood shows.
                tungstenite::Message::Ping(_) => self.metrics.pings.inc(),
                _ => {}
            }
        }
    }

    /// Handles one text frame; `Some` ends the session.
    fn on_text(
        &mut self,
        frame: &[u8],
        received_ns: u64,
        acks_pending: &mut usize,
    ) -> Result<Option<SessionEnd>, SessionError> {
        self.metrics.messages.inc();
        let decoded = match &mut self.diff {
            None => self
                .spec
                .venue
                .decode(frame, self.spec.depth, &mut self.scratch),
            Some(diff) => {
                self.spec
                    .venue
                    .decode_diff(frame, diff.settings.max_levels, &mut diff.update)
            }
        };
        self.metrics
            .decode_seconds
            .observe((clock::monotonic_ns() - received_ns) as f64 * 1e-9);
        match decoded {
            Ok(Message::Book { stream }) => {
                let Some(slot) = self
                    .spec
                    .streams
                    .iter()
                    .position(|spec| spec.name.as_bytes() == stream)
                else {
                    return Ok(None); // a stream we did not ask for
                };
                self.last_book_data_ns = received_ns;
                if self.diff.is_some() {
                    self.on_diff_event(slot, received_ns);
                    return Ok(None);
                }
                let sequence = self.scratch.venue_sequence;
                let last = self.last_sequence[slot];
                if sequence == last {
                    // A quiet market: Binance repeats `lastUpdateId` while nothing changes.
                    // The book is complete and still current, so it is published again with
                    // its receipt time; dropping it would let a healthy venue age into
                    // eviction as stale.
                    self.metrics.books_repeated.inc();
                }
                if sequence < last {
                    self.regressions[slot] += 1;
                    if self.regressions[slot] < SEQUENCE_RESET_AFTER {
                        self.metrics.books_dropped_out_of_order.inc();
                        tracing::debug!(venue = %self.spec.venue, sequence, last, "out-of-order book dropped");
                        return Ok(None);
                    }
                    self.metrics.sequence_resets.inc();
                    tracing::warn!(venue = %self.spec.venue, stream = %self.spec.streams[slot].name, sequence, last,
                        "the venue's sequence went back and stayed back (a clock jump or a restart): following it");
                }
                self.regressions[slot] = 0;
                self.last_sequence[slot] = sequence;
                self.scratch.received_ns = received_ns;
                let scratch = &self.scratch;
                self.spec.streams[slot]
                    .sender
                    .publish_with(&self.merger, |feed| {
                        feed.state = VenueState::Synced;
                        feed.book.copy_from(scratch);
                    });
                self.first_book_ns.get_or_insert(received_ns);
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
        // A diff stream that lost a frame has a hole in it: every book is rebuilt.
        self.reset_diff_books(ResyncReason::DecodeError);
    }

    // ---- diff mode ----

    /// Throws every diff book away (they rebuild from their next events and a snapshot)
    /// and forgets the snapshot requests.
    fn reset_diff_books(&mut self, reason: ResyncReason) {
        let Some(diff) = &mut self.diff else { return };
        diff.fetches.abort_all();
        diff.scheduler.cancel_all();
        let now = clock::monotonic_ns();
        for book in &mut diff.books {
            if book.sync.is_synced() || reason == ResyncReason::Connect {
                book.out_of_sync_since_ns = now;
                self.metrics.resyncs(reason).inc();
            }
            book.sync.reset();
            book.generation += 1;
        }
    }

    fn on_diff_event(&mut self, slot: usize, received_ns: u64) {
        let venue = self.spec.venue;
        let Some(diff) = &mut self.diff else { return };
        let book = &mut diff.books[slot];
        match book.sync.on_update(&diff.update) {
            UpdateOutcome::Applied => {
                self.publish_diff_book(slot, received_ns);
                return;
            }
            UpdateOutcome::Buffered { first } => {
                if first {
                    diff.scheduler.request(slot);
                }
                if book.sync.overflowed_events > 0 {
                    let overflowed = std::mem::take(&mut book.sync.overflowed_events);
                    self.metrics.events_dropped_overflow.inc_by(overflowed);
                }
                return;
            }
            UpdateOutcome::Stale => {
                self.metrics.events_dropped_stale.inc();
                return;
            }
            UpdateOutcome::Gap => {
                self.metrics.gaps.inc();
                self.metrics.resyncs(ResyncReason::Gap).inc();
                tracing::warn!(%venue, stream = %self.spec.streams[slot].name, "gap in the diff stream; resyncing");
                diff.scheduler.request(slot);
            }
            UpdateOutcome::Crossed => {
                self.metrics.resyncs(ResyncReason::Crossed).inc();
                tracing::warn!(%venue, stream = %self.spec.streams[slot].name, "book crossed; resyncing");
            }
        }
        book.generation += 1;
        book.out_of_sync_since_ns = received_ns;
        self.publish_stream_state(slot, VenueState::OutOfSync);
    }

    fn publish_stream_state(&mut self, slot: usize, state: VenueState) {
        self.spec.streams[slot]
            .sender
            .publish_with(&self.merger, |feed| feed.state = state);
    }

    /// Publishes what the metrics recorded locally, and what the mailboxes counted.
    fn flush_metrics(&mut self) {
        self.metrics.flush();
        let superseded: u64 = self
            .spec
            .streams
            .iter()
            .map(|stream| stream.sender.superseded_books())
            .sum();
        self.metrics
            .superseded
            .inc_by(superseded - self.superseded_reported);
        self.superseded_reported = superseded;
    }

    /// Publishes the top of a synced diff book.
    fn publish_diff_book(&mut self, slot: usize, received_ns: u64) {
        let Some(diff) = &self.diff else { return };
        let sync = &diff.books[slot].sync;
        let depth = self.spec.depth;
        self.spec.streams[slot]
            .sender
            .publish_with(&self.merger, |feed| {
                feed.state = VenueState::Synced;
                sync.write_top(depth, received_ns, &mut feed.book);
            });
        self.first_book_ns.get_or_insert(received_ns);
    }

    /// When the next snapshot request is due, if one is.
    fn next_snapshot_at(&mut self) -> Option<tokio::time::Instant> {
        let diff = self.diff.as_mut()?;
        let weight = self
            .spec
            .venue
            .snapshot_weight(diff.settings.snapshot_depth);
        let now = clock::monotonic_ns();
        let (_, at) = diff.scheduler.next(now, weight)?;
        Some(tokio::time::Instant::now() + Duration::from_nanos(at.saturating_sub(now)))
    }

    fn start_snapshot_fetch(&mut self) {
        let venue = self.spec.venue;
        let Some(diff) = &mut self.diff else { return };
        let weight = venue.snapshot_weight(diff.settings.snapshot_depth);
        let now = clock::monotonic_ns();
        let Some((slot, at)) = diff.scheduler.next(now, weight) else {
            return;
        };
        if at > now {
            return; // re-armed for later by the loop
        }
        diff.scheduler.started(slot, now, weight);
        let url = venue.snapshot_url(
            &diff.settings.rest_url,
            &self.spec.streams[slot].symbol,
            diff.settings.snapshot_depth,
        );
        tracing::debug!(%venue, %url, "requesting snapshot");
        let client = diff.client.clone();
        let generation = diff.books[slot].generation;
        diff.fetches
            .spawn(async move { (slot, generation, client.fetch(&url).await) });
    }

    fn on_snapshot(&mut self, slot: usize, generation: u64, result: Result<Vec<u8>, FetchError>) {
        let venue = self.spec.venue;
        let now = clock::monotonic_ns();
        let Some(diff) = &mut self.diff else { return };
        let book = &mut diff.books[slot];
        if generation != book.generation {
            // Asked for before a reset, which cancelled it in the scheduler (and the stream
            // asks again with its next buffered event): drop it, touching nothing.
            return;
        }
        let outcome = match result {
            Err(FetchError::RateLimited {
                status,
                retry_after,
            }) => {
                tracing::warn!(%venue, status, ?retry_after, "snapshot rate limited");
                FetchOutcome::RateLimited { retry_after }
            }
            Err(error) => {
                tracing::warn!(%venue, %error, "snapshot request failed");
                FetchOutcome::Failed
            }
            Ok(body) => {
                match venue.decode_snapshot(&body, diff.settings.max_levels, &mut diff.snapshot) {
                    Err(error) => {
                        tracing::warn!(%venue, %error, "snapshot refused");
                        FetchOutcome::Failed
                    }
                    Ok(()) => match book.sync.on_snapshot(&diff.snapshot) {
                        SnapshotOutcome::Synced { applied, dropped } => {
                            // The buffered events the snapshot already contains.
                            self.metrics.events_dropped_stale.inc_by(dropped as u64);
                            let took = now.saturating_sub(book.out_of_sync_since_ns);
                            self.metrics.resync_seconds.observe(took as f64 * 1e-9);
                            tracing::info!(%venue, stream = %self.spec.streams[slot].name, applied, dropped, took_ms = took / 1_000_000, "book synced");
                            FetchOutcome::Used
                        }
                        SnapshotOutcome::TooOld => {
                            tracing::info!(%venue, stream = %self.spec.streams[slot].name, "snapshot older than the buffered events; asking again");
                            FetchOutcome::TooOld
                        }
                        SnapshotOutcome::Crossed => {
                            // Unusable: asked for again after the retry backoff.
                            self.metrics.resyncs(ResyncReason::Crossed).inc();
                            FetchOutcome::Failed
                        }
                        SnapshotOutcome::Unexpected => FetchOutcome::Used,
                    },
                }
            }
        };
        self.metrics.snapshot_requests(outcome).inc();
        diff.scheduler.finished(slot, outcome, now);
        if outcome == FetchOutcome::Used && diff.books[slot].sync.is_synced() {
            self.publish_diff_book(slot, now);
        }
    }
}

#[derive(Debug, thiserror::Error)]
enum SessionError {
    #[error("connecting timed out")]
    ConnectTimeout,
    #[error("connecting failed: {0}")]
    Connect(tungstenite::Error),
    #[error("no subscription ack in time")]
    AckTimeout,
    #[error("nothing received within the read-idle timeout")]
    IdleTimeout,
    #[error("connection closed without a close frame")]
    Closed,
    #[error("subscription refused by the venue")]
    Refused,
    #[error(transparent)]
    WebSocket(#[from] tungstenite::Error),
}

impl SessionError {
    /// The `reason` label of `orderbook_connection_errors_total`.
    fn reason(&self, url: &str) -> &'static str {
        use tungstenite::Error as WsError;
        use tungstenite::error::ProtocolError;
        match self {
            SessionError::ConnectTimeout => "connect_timeout",
            SessionError::Connect(WsError::Http(_) | WsError::HttpFormat(_)) => {
                "handshake_rejected"
            }
            SessionError::Connect(WsError::Io(error)) if is_tls_failure(error, url) => "tls",
            SessionError::Connect(_) => "connect",
            SessionError::AckTimeout => "ack_timeout",
            SessionError::IdleTimeout => "idle_timeout",
            SessionError::Closed
            | SessionError::WebSocket(
                WsError::ConnectionClosed
                | WsError::AlreadyClosed
                | WsError::Protocol(ProtocolError::ResetWithoutClosingHandshake),
            ) => "closed",
            SessionError::Refused => "subscription_refused",
            SessionError::WebSocket(WsError::Capacity(_)) => "oversized_frame",
            SessionError::WebSocket(WsError::Utf8(_)) => "invalid_utf8",
            SessionError::WebSocket(WsError::Protocol(_)) => "protocol",
            SessionError::WebSocket(_) => "io",
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

    /// Whether `wake` holds a wake-up: `notified()` completes on its first poll.
    async fn woken(wake: &Notify) -> bool {
        tokio::time::timeout(Duration::ZERO, wake.notified())
            .await
            .is_ok()
    }

    #[tokio::test]
    async fn a_publish_wakes_the_fanout_before_any_summary_unless_the_merger_is_behind() {
        let (sender, mut merger_end) = crate::mailbox::mailbox(VenueFeed::default());
        let fanout_wake = Arc::new(Notify::new());
        let mut feed = FeedSender::new(sender, Arc::clone(&fanout_wake));
        let merger = std::thread::current();
        assert!(!woken(&fanout_wake).await);
        feed.publish_with(&merger, |feed| feed.state = VenueState::Synced);
        assert!(woken(&fanout_wake).await);
        assert!(!woken(&fanout_wake).await, "one publish, one wake-up");
        // The merger has not taken the first book: the second replaces it, no wake.
        feed.publish_with(&merger, |feed| feed.state = VenueState::Synced);
        assert!(!woken(&fanout_wake).await);
        assert!(merger_end.take());
        feed.publish_with(&merger, |feed| feed.state = VenueState::OutOfSync);
        assert!(woken(&fanout_wake).await, "a state change is news too");
    }
}
