//! The embedded exchange simulator: a loopback WebSocket server that speaks each venue's
//! real protocol (subscription and ack, book frames in the exact recorded format, the
//! venue's reconnect request), so the whole pipeline runs with no internet.
//!
//! A client connects to `ws://<addr>/<venue>` (`/binance`, `/bitstamp`), subscribes
//! as it would on the exchange, and receives a moving market at the configured rate, or a
//! recording (`Simulator::replay`): recorded book frames, looped, re-encoded by the
//! venue's own encoder under the subscribed stream name with increasing sequence
//! numbers. Or what the service recorded (`Simulator::serve_recording`, `playback.rs`):
//! each venue's recorded connections, frame for frame.
//!
//! Diff streams (`nknusdt@depth@100ms`, `diff_order_book_ethusd`) are served from one
//! full-depth book per (venue, stream) ([`market::DiffMarket`]), shared by every
//! connection and by the REST server on a second port (`Simulator::rest_url`), which
//! answers the venues' snapshot requests (`/binance/api/v3/depth?symbol=…&limit=…`,
//! `/bitstamp/api/v2/order_book/<pair>/`) from the same book.
//!
//! Tests drive faults through the [`Simulator`] handle: cut a venue's connections, pause
//! it, inject raw frames, request a reconnect, read back the last frame sent per stream;
//! on diff streams, skip (a gap), duplicate or reorder events, serve a stale snapshot,
//! delay snapshots, answer 429 with `Retry-After`; and read the true book's history.

#[cfg(feature = "faults")]
mod controls;
pub mod market;
mod playback;

use crate::book::{BookUpdate, TopBook, WireDecimals};
use crate::venue::{MAX_VENUES, SnapshotSource, VenueId};
use futures_util::{SinkExt, StreamExt};
use market::{DiffMarket, MidPrice, SimulatedBook};
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{broadcast, mpsc, watch};
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::{Bytes, Message};

/// A one-off instruction to every open connection of a venue (`controls.rs` sends them).
#[derive(Clone, Debug)]
#[cfg_attr(not(feature = "faults"), allow(dead_code))]
enum Command {
    /// Drop the TCP connection without a close frame.
    Disconnect,
    /// Send this text frame as is.
    Send(String),
    /// Send this binary frame.
    SendBinary(Vec<u8>),
    /// Write these bytes straight to the TCP stream, under the WebSocket layer (frames it
    /// would refuse to write: invalid UTF-8, half a frame), then carry on as `then` says.
    Raw { bytes: Vec<u8>, then: AfterRaw },
    /// Send this many pings at once.
    Pings(u32),
    /// Send this many book frames per stream at once, on top of the rate.
    Burst(u32),
    /// Stop serving every subscription of the connection without a word: a dead
    /// subscription on a live socket, which a subscription again revives.
    DropSubscriptions,
}

/// What a connection does after writing raw bytes.
#[derive(Clone, Copy, Debug)]
#[cfg_attr(not(feature = "faults"), allow(dead_code))]
enum AfterRaw {
    Continue,
    /// Drop the TCP connection.
    Close,
    /// Send nothing more, ever; keep the connection open until the client leaves.
    Stall,
}

struct VenueControl {
    paused: watch::Sender<bool>,
    commands: broadcast::Sender<Command>,
    connections: AtomicU64,
    pongs: AtomicU64,
    /// Application-level pings the venue's clients sent (`Answer::ping`).
    client_pings: AtomicU64,
    closes: AtomicU64,
    /// Overrides the venue's ping interval (ms; 0: the venue's own).
    ping_every_ms: AtomicU64,
    /// Added to every generated book's venue sequence (a Bitstamp `microtimestamp`):
    /// the venue's clock jumping.
    clock_offset: AtomicU64,
    /// Book frames repeat the last book (`Simulator::quiet_market`).
    quiet: AtomicBool,
    /// New connections are closed as soon as they are open (`Simulator::close_new_connections`).
    closing: AtomicBool,
    /// A REST venue serves its protocol's in-band form (`Simulator::serve_in_band_snapshots`).
    in_band_form: AtomicBool,
    /// Upgrades refused for want of the venue's API key.
    refused_for_api_key: AtomicU64,
    faults: DiffFaults,
}

impl VenueControl {
    /// Whether `venue`'s subscriptions start with a snapshot on the stream and its events
    /// carry its checksums: an in-band venue's always, a REST venue's in its protocol's
    /// in-band form. A REST-seeded stream carries no checksum.
    fn in_band(&self, venue: VenueId) -> bool {
        venue.facts().snapshots == SnapshotSource::InBand
            || self.in_band_form.load(Ordering::Relaxed)
    }
}

/// Fault switches of a venue's snapshots. Counters count down as they are used.
#[derive(Default)]
struct DiffFaults {
    /// Snapshot requests answered 429 with `Retry-After: retry_after_s`.
    rate_limited_requests: AtomicU64,
    retry_after_s: AtomicU64,
    /// Delay before each snapshot response (ms).
    snapshot_delay_ms: AtomicU64,
    /// When each snapshot request arrived.
    snapshot_requests: Mutex<Vec<std::time::Instant>>,
}

/// Fault switches of one diff stream's events; counters count down as they are used.
#[derive(Default)]
struct EventFaults {
    /// Events applied to the book but not sent (each one a gap).
    skip: AtomicU64,
    /// Events sent twice.
    duplicate: AtomicU64,
    /// Pairs of events sent in swapped order.
    swap: AtomicU64,
    /// Events sent with a wrong checksum (venues that send one).
    corrupt_checksum: AtomicU64,
}

/// A connection's subscription to a diff stream: where its frames go, tagged with the
/// subscription's id on the connection, which drops the frames of a subscription it has
/// ended (still queued when the unsubscription was answered: a venue sends none after).
/// The connection's queue holds [`DIFF_QUEUE_FRAMES`]: a connection that lets it fill (a
/// stalled one) loses its subscriptions, as a venue cuts a consumer too slow for it.
struct Subscriber {
    frames: mpsc::Sender<(u64, Bytes)>,
    subscription: u64,
    /// Which of the stream's feeds it reads (`DiffStream::feeds`).
    feed: usize,
}

/// The diff frames a connection's queue holds: over a second and a half at 10,000 frames a
/// second, a few MB.
const DIFF_QUEUE_FRAMES: usize = 16_384;

/// One diff stream: its book, who receives its events, saved states. Feeds of one
/// exchange (`VenueFacts::exchange`: Binance's JSON and SBE streams) share the exchange's
/// stream, each event encoded once for each feed subscribed to it.
struct DiffStream {
    faults: EventFaults,
    market: Mutex<DiffMarket>,
    subscribers: Mutex<Vec<Subscriber>>,
    /// The feeds (venue, stream name) its events have been encoded for, in the order
    /// they first subscribed.
    feeds: Mutex<Vec<(VenueId, String)>>,
    /// The book's top after each recent event, oldest first (what tests compare with).
    history: Mutex<VecDeque<TopBook>>,
    /// A snapshot saved by `Simulator::serve_stale_snapshot`, served (once) next.
    stale_snapshot: Mutex<Option<BookUpdate>>,
}

impl DiffStream {
    /// Adds a connection's channel to the stream's subscribers. An `in_band`
    /// subscription starts with a snapshot of the book: taken, and queued ahead of the
    /// events, while the subscribers are locked, so no event falls between the two (an
    /// event already in the snapshot may follow it: the venues' sequences, or their
    /// absolute sizes, make that harmless).
    fn subscribe(&self, venue: VenueId, stream: &str, in_band: bool, mut subscriber: Subscriber) {
        let mut subscribers = self.subscribers.lock().expect("not poisoned");
        subscriber.feed = {
            let mut feeds = self.feeds.lock().expect("not poisoned");
            match feeds.iter().position(|(v, s)| *v == venue && s == stream) {
                Some(feed) => feed,
                None => {
                    feeds.push((venue, stream.to_owned()));
                    feeds.len() - 1
                }
            }
        };
        if in_band {
            let mut snapshot = BookUpdate::default();
            let checksum = {
                let market = self.market.lock().expect("not poisoned");
                market.snapshot(usize::MAX, &mut snapshot);
                venue.checksum(&market.book, SIMULATED_DECIMALS)
            };
            let mut frame = Vec::new();
            venue.simulated().encode_snapshot(
                stream,
                &snapshot,
                SnapshotSource::InBand,
                checksum,
                PRICE_DECIMALS,
                &mut frame,
            );
            let _ = subscriber
                .frames
                .try_send((subscriber.subscription, Bytes::from(frame)));
        }
        subscribers.push(subscriber);
    }
}

/// The simulator writes every price and amount with 8 decimals.
const PRICE_DECIMALS: u32 = 8;
const SIMULATED_DECIMALS: WireDecimals = WireDecimals {
    price: PRICE_DECIMALS as u8,
    amount: crate::fixed::DECIMALS as u8,
};

/// How many past tops a diff stream remembers.
const HISTORY: usize = 2048;
/// Levels a side of each remembered top.
const HISTORY_DEPTH: usize = 20;

/// Recorded books a venue serves instead of the generated market.
#[derive(Debug, Clone)]
pub struct Recording {
    pub books: Vec<TopBook>,
    /// Decimals of the recorded prices, kept when re-encoding (`9328.28` stays so).
    pub price_decimals: u32,
}

impl Recording {
    /// Loads a recording (plain frames or a timeline) of `venue`'s book frames.
    pub fn load(venue: VenueId, path: &std::path::Path) -> Result<Recording, String> {
        let frames =
            crate::record::timeline::load_frames(path).map_err(|error| error.to_string())?;
        let mut books = Vec::new();
        let mut price_decimals = None;
        for frame in &frames {
            let mut book = TopBook::default();
            if let Ok(crate::venue::Message::Book { .. }) =
                venue.decode(frame.raw.as_bytes(), crate::book::MAX_DEPTH, &mut book)
            {
                price_decimals = price_decimals.or_else(|| first_bid_decimals(&frame.raw));
                books.push(book);
            }
        }
        if books.is_empty() {
            return Err(format!("{}: no {venue} book frames", path.display()));
        }
        Ok(Recording {
            books,
            price_decimals: price_decimals.unwrap_or(8),
        })
    }
}

/// Fractional digits of the first price under a `"bids"` key, anywhere in the frame.
fn first_bid_decimals(frame: &str) -> Option<u32> {
    fn find(value: &serde_json::Value) -> Option<u32> {
        match value {
            serde_json::Value::Object(members) => members
                .get("bids")
                .and_then(|bids| bids.get(0)?.get(0)?.as_str())
                .map_or_else(
                    || members.values().find_map(find),
                    |price| {
                        Some(
                            price
                                .split_once('.')
                                .map_or(0, |(_, fraction)| fraction.len() as u32),
                        )
                    },
                ),
            _ => None,
        }
    }
    find(&serde_json::from_str(frame).ok()?)
}

struct Shared {
    rate_per_second: u32,
    seed: u64,
    /// The shared mid price, in ticks, stepped by a background task.
    mid_ticks: AtomicU64,
    venues: [VenueControl; MAX_VENUES],
    recordings: Mutex<[Option<Arc<Recording>>; MAX_VENUES]>,
    last_sent: Mutex<HashMap<(VenueId, String), Bytes>>,
    diff_streams: Mutex<HashMap<(VenueId, String), Arc<DiffStream>>>,
    rest_addr: SocketAddr,
    /// Where connections opened from now on report each book frame they send.
    send_log: Mutex<Option<std::sync::mpsc::SyncSender<SentFrame>>>,
    /// Frames sent but not logged because the log was full.
    unlogged_sends: AtomicU64,
    /// A recording played back instead of the generated market, where it has the venue.
    playback: Mutex<Option<Arc<playback::Playback>>>,
    /// How often new snapshot streams send (`Simulator::set_stream_pacing`).
    stream_pacing: Mutex<StreamPacing>,
}

/// Snapshot streams named in `hot` send a frame one tick in `hot_every`, the others one
/// in `cold_every`.
#[derive(Debug)]
struct StreamPacing {
    hot: Vec<String>,
    hot_every: u32,
    cold_every: u32,
}

impl Shared {
    /// One tick in how many a new subscription to `stream` sends a frame on.
    fn stream_every(&self, stream: &str) -> u32 {
        let pacing = self.stream_pacing.lock().expect("not poisoned");
        let every = match pacing.hot.iter().any(|name| name == stream) {
            true => pacing.hot_every,
            false => pacing.cold_every,
        };
        every.max(1)
    }
}

/// One book frame the simulator wrote (`Simulator::record_sends`).
#[derive(Clone, Debug)]
pub struct SentFrame {
    pub venue: VenueId,
    /// The stream it was sent on.
    pub stream: Arc<str>,
    /// The book's venue sequence, as encoded in the frame.
    pub sequence: u64,
    /// Monotonic ns (`clock::monotonic_ns`) just before the frame was written to the socket.
    pub sent_ns: u64,
}

/// A running simulator. Dropping it does not stop it; it lives as long as its runtime.
#[derive(Clone)]
pub struct Simulator {
    addr: SocketAddr,
    shared: Arc<Shared>,
}

impl Simulator {
    /// Starts serving on `listener` (on the current tokio runtime). `rate_per_second` is
    /// the book frames per second per subscribed stream.
    pub fn start(
        listener: TcpListener,
        rate_per_second: u32,
        seed: u64,
    ) -> std::io::Result<Simulator> {
        let addr = listener.local_addr()?;
        let rest_listener = std::net::TcpListener::bind((addr.ip(), 0))?;
        rest_listener.set_nonblocking(true)?;
        let rest_listener = TcpListener::from_std(rest_listener)?;
        let shared = Arc::new(Shared {
            rate_per_second: rate_per_second.max(1),
            seed,
            mid_ticks: AtomicU64::new(market::START_MID_TICKS),
            venues: std::array::from_fn(|_| VenueControl {
                paused: watch::channel(false).0,
                commands: broadcast::channel(64).0,
                connections: AtomicU64::new(0),
                pongs: AtomicU64::new(0),
                client_pings: AtomicU64::new(0),
                closes: AtomicU64::new(0),
                ping_every_ms: AtomicU64::new(0),
                clock_offset: AtomicU64::new(0),
                quiet: AtomicBool::new(false),
                closing: AtomicBool::new(false),
                in_band_form: AtomicBool::new(false),
                refused_for_api_key: AtomicU64::new(0),
                faults: DiffFaults::default(),
            }),
            recordings: Mutex::new(Default::default()),
            last_sent: Mutex::new(HashMap::new()),
            diff_streams: Mutex::new(HashMap::new()),
            rest_addr: rest_listener.local_addr()?,
            send_log: Mutex::new(None),
            unlogged_sends: AtomicU64::new(0),
            playback: Mutex::new(None),
            stream_pacing: Mutex::new(StreamPacing {
                hot: Vec::new(),
                hot_every: 1,
                cold_every: 1,
            }),
        });
        let rest = axum::Router::new()
            .fallback(serve_snapshot)
            .with_state(Arc::downgrade(&shared));
        tokio::spawn(async move {
            let _ = axum::serve(rest_listener, rest).await;
        });
        let walker = Arc::clone(&shared);
        tokio::spawn(async move {
            let mut mid = MidPrice::new(walker.seed);
            let mut every = tokio::time::interval(Duration::from_millis(50));
            loop {
                every.tick().await;
                walker.mid_ticks.store(mid.step(), Ordering::Relaxed);
                if Arc::strong_count(&walker) == 1 {
                    return; // nothing else holds the simulator any more
                }
            }
        });
        let accepting = Arc::clone(&shared);
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let shared = Arc::clone(&accepting);
                tokio::spawn(async move {
                    if let Err(error) = serve(stream, shared).await {
                        tracing::debug!(%error, "simulator connection ended");
                    }
                });
            }
        });
        Ok(Simulator { addr, shared })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The URL a reader uses for `venue`.
    pub fn url(&self, venue: VenueId) -> String {
        format!("ws://{}/{}", self.addr, venue.name())
    }

    /// The REST base URL of `venue` (diff mode's snapshots).
    pub fn rest_url(&self, venue: VenueId) -> String {
        format!("http://{}/{}", self.shared.rest_addr, venue.name())
    }

    /// Points every venue of `config` (WebSocket and REST) at this simulator, with a
    /// stand-in API key where a venue needs one and the config names none.
    pub fn point(&self, config: &mut crate::config::Config) {
        for venue in &mut config.venues {
            venue.url = self.url(venue.venue);
            if venue.venue.facts().api_key_header.is_some() && venue.api_key.is_none() {
                venue.api_key = Some(crate::config::ApiKey::stand_in());
            }
            if let crate::config::FeedMode::Diff(settings) = &mut venue.mode {
                settings.rest_url = self.rest_url(venue.venue);
            }
        }
    }

    /// Makes new connections of the recording's venues serve what the service recorded
    /// (`[record]`), frame for frame, at `speed` times the recorded pace, and the REST
    /// server its snapshot bodies (`playback.rs`).
    pub fn serve_recording(
        &self,
        recordings: &[crate::record::timeline::ConnectionRecording],
        speed: f64,
    ) {
        let playback = playback::Playback::new(recordings, speed);
        *self.shared.playback.lock().expect("not poisoned") = Some(Arc::new(playback));
    }

    /// Makes new connections of `venue` serve `recording` (looped) instead of the
    /// generated market.
    pub fn replay(&self, venue: VenueId, recording: Recording) {
        self.shared.recordings.lock().expect("not poisoned")[venue.index()] =
            Some(Arc::new(recording));
    }
}

type Error = Box<dyn std::error::Error + Send + Sync>;

/// What a simulated venue's connection asks the socket for per read (`serve`).
const SERVER_READ_BUFFER_BYTES: usize = 4 * 1024;

// The handshake callback's error type is tungstenite's (an HTTP response), not ours.
#[allow(clippy::result_large_err)]
async fn serve(stream: TcpStream, shared: Arc<Shared>) -> Result<(), Error> {
    stream.set_nodelay(true)?;
    let mut path = String::new();
    // Frames are written when flushed, never earlier (`BookFrames::send` stamps each
    // tick's frames just before their one write): no tick's frames come near 1 GiB.
    // tungstenite zeroes its read buffer's spare room before every read attempt, and a
    // connection attempts one each time its loop turns (every tick): clients send only
    // small requests, and the default 128 KiB showed in profiles of the simulator serving
    // thousands of books. A larger request grows the buffer to fit.
    let config = WebSocketConfig::default()
        .write_buffer_size(1 << 30)
        .read_buffer_size(SERVER_READ_BUFFER_BYTES);
    let mut socket = tokio_tungstenite::accept_hdr_async_with_config(
        stream,
        |request: &Request, response: Response| {
            path = request.uri().path().to_owned();
            check_api_key(request, &shared)?;
            Ok(response)
        },
        Some(config),
    )
    .await?;
    let Some(venue) = venue_of_path(&path) else {
        return Err(format!("no venue at {path:?}").into());
    };
    let control = &shared.venues[venue.index()];
    control.connections.fetch_add(1, Ordering::Relaxed);
    let playback = shared.playback.lock().expect("not poisoned").clone();
    if let Some(playback) = playback.filter(|playback| playback.serves(venue)) {
        return playback.serve(socket, venue).await;
    }
    if control.closing.load(Ordering::Relaxed) {
        return Ok(());
    }
    let mut commands = control.commands.subscribe();
    let mut paused = control.paused.subscribe();

    // The timer cannot usefully tick faster than 1 kHz: above that, send several frames
    // per tick.
    let ticks_per_second = shared.rate_per_second.min(1000);
    let frames_per_tick = shared.rate_per_second.div_ceil(ticks_per_second);
    let mut ticker = tokio::time::interval(Duration::from_secs(1) / ticks_per_second);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);

    let ping_every = match control.ping_every_ms.load(Ordering::Relaxed) {
        0 => venue.simulated().server_ping_interval(),
        ms => Some(Duration::from_millis(ms)),
    };
    // Without pings, a timer that never fires.
    let mut pinger =
        tokio::time::interval(ping_every.unwrap_or(Duration::from_secs(u64::from(u32::MAX))));
    pinger.reset();

    let mut books = BookFrames {
        venue,
        recording: shared.recordings.lock().expect("not poisoned")[venue.index()].clone(),
        send_log: shared.send_log.lock().expect("not poisoned").clone(),
        unstamped: Vec::new(),
        replayed: 0,
        streams: Vec::new(),
        book: TopBook::default(),
    };
    let (diff_sender, mut diff_frames) = mpsc::channel::<(u64, Bytes)>(DIFF_QUEUE_FRAMES);
    // The connection's live diff subscriptions (stream, id), and the next id.
    let (mut live, mut next_subscription): (Vec<(String, u64)>, u64) = (Vec::new(), 0);
    let mut numbers = MessageNumbers { venue, next: 0 };
    // The venue's heartbeats, once a second from the connection's first subscription on,
    // where it sends them.
    let mut heartbeats = tokio::time::interval(Duration::from_secs(1));
    let (mut subscribed, mut heartbeats_sent) = (false, 0);
    loop {
        tokio::select! {
            incoming = socket.next() => match incoming {
                Some(Ok(Message::Text(text))) => {
                    if let Some(answer) = venue.simulated().answer_request(&text) {
                        if answer.ping {
                            control.client_pings.fetch_add(1, Ordering::Relaxed);
                        }
                        for reply in answer.replies {
                            socket.send(Message::text(numbers.stamp(reply))).await?;
                        }
                        for stream in answer.unsubscribe {
                            if venue.streams().is_diff_stream(&stream) {
                                let diff = diff_stream(&shared, venue, &stream, answer.depth);
                                diff.subscribers.lock().expect("not poisoned").retain(|s| !s.frames.same_channel(&diff_sender));
                                live.retain(|(name, _)| *name != stream);
                            }
                            books.streams.retain(|books| *books.name != *stream);
                        }
                        subscribed |= !answer.subscribe.is_empty();
                        for stream in answer.subscribe {
                            if venue.streams().is_diff_stream(&stream) {
                                let diff = diff_stream(&shared, venue, &stream, answer.depth);
                                next_subscription += 1;
                                live.retain(|(name, _)| *name != stream);
                                live.push((stream.clone(), next_subscription));
                                let subscriber = Subscriber { frames: diff_sender.clone(), subscription: next_subscription, feed: 0 };
                                diff.subscribe(venue, &stream, control.in_band(venue), subscriber);
                                continue;
                            }
                            let seed = shared.seed ^ books.streams.len() as u64 ^ (venue.exchange().index() as u64) << 32;
                            let levels = venue.simulated().levels_on_stream(&stream);
                            let every = shared.stream_every(&stream);
                            // Streams that skip ticks spread over them, not all on one.
                            let ticks = books.streams.len() as u32;
                            books.streams.push(StreamBooks { name: stream.into(), levels, market: SimulatedBook::new(seed), every, ticks });
                        }
                    }
                }
                Some(Ok(Message::Pong(_))) => {
                    control.pongs.fetch_add(1, Ordering::Relaxed);
                }
                Some(Ok(Message::Close(_))) => {
                    control.closes.fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                }
                None => return Ok(()),
                Some(Ok(_)) => {}
                Some(Err(error)) => return Err(error.into()),
            },
            _ = ticker.tick(), if !books.streams.is_empty() && !*paused.borrow() => {
                books.send(&mut socket, &shared, frames_per_tick).await?;
            }
            // Paused, a subscription's in-band snapshot waits too: a paused venue sends no
            // book data at all.
            // What the stream has queued, up to a batch, in one write (as `BookFrames::send`
            // writes a tick's frames): a write a frame costs the simulator, which shares
            // the cores with the service, a system call and a loopback delivery each.
            Some(first) = diff_frames.recv(), if !*paused.borrow() => {
                let (mut next, mut taken) = (Some(first), 1);
                while let Some((subscription, frame)) = next {
                    let is_live = live.iter().any(|&(_, id)| id == subscription);
                    match (is_live, frame.is_empty()) {
                        (false, _) => {}
                        (true, true) => numbers.lose(),
                        (true, false) => socket.feed(numbers.book_message(frame)).await?,
                    }
                    next = (taken < DIFF_FRAMES_PER_WRITE).then(|| diff_frames.try_recv().ok()).flatten();
                    taken += 1;
                }
                socket.flush().await?;
            }
            _ = pinger.tick() => socket.send(Message::Ping(b"mergebook-sim".to_vec().into())).await?,
            _ = heartbeats.tick(), if subscribed && !*paused.borrow() => {
                if let Some(heartbeat) = venue.simulated().heartbeat(heartbeats_sent) {
                    heartbeats_sent += 1;
                    socket.send(Message::text(numbers.stamp(heartbeat))).await?;
                }
            }
            command = commands.recv() => match command {
                Ok(Command::Disconnect) | Err(broadcast::error::RecvError::Closed) => return Ok(()),
                // Numbered where it has the venue's place for a number.
                Ok(Command::Send(text)) => socket.send(Message::text(numbers.stamp(text))).await?,
                Ok(Command::SendBinary(bytes)) => socket.send(Message::binary(bytes)).await?,
                Ok(Command::Raw { bytes, then }) => {
                    use tokio::io::AsyncWriteExt;
                    socket.flush().await?;
                    socket.get_mut().write_all(&bytes).await?;
                    match then {
                        AfterRaw::Continue => {}
                        AfterRaw::Close => return Ok(()),
                        AfterRaw::Stall => {
                            let mut sink = tokio::io::sink();
                            tokio::io::copy(socket.get_mut(), &mut sink).await?;
                            return Ok(());
                        }
                    }
                }
                Ok(Command::Pings(count)) => {
                    for _ in 0..count {
                        socket.feed(Message::Ping(b"flood".to_vec().into())).await?;
                    }
                    socket.flush().await?;
                }
                Ok(Command::Burst(frames)) => books.send(&mut socket, &shared, frames).await?,
                Ok(Command::DropSubscriptions) => {
                    books.streams.clear();
                    for diff in shared.diff_streams.lock().expect("not poisoned").values() {
                        diff.subscribers.lock().expect("not poisoned").retain(|s| !s.frames.same_channel(&diff_sender));
                    }
                    live.clear();
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {}
            },
            _ = paused.changed() => {}
        }
    }
}

/// The most book frames' bytes a connection holds before it writes them.
const WRITE_CHUNK_BYTES: usize = 1 << 20;

/// The most queued diff frames a connection writes at once.
const DIFF_FRAMES_PER_WRITE: usize = 256;

/// What a diff stream sends for an event it applied but lost (`Simulator::skip_events`):
/// nothing, though a venue that numbers its messages numbered it.
const LOST_EVENT: Bytes = Bytes::new();

/// The numbers of a connection's messages, where its venue numbers them
/// (`Simulated::number_message`).
struct MessageNumbers {
    venue: VenueId,
    next: u64,
}

impl MessageNumbers {
    /// `frame` as the connection's next message.
    fn stamp(&mut self, frame: String) -> String {
        match self.venue.simulated().number_message(&frame, self.next) {
            Some(numbered) => {
                self.next += 1;
                numbered
            }
            None => frame,
        }
    }

    /// A message numbered and never sent.
    fn lose(&mut self) {
        self.next += 1;
    }

    /// A book frame as the venue sends it: binary where its books are
    /// (`VenueFacts::binary_books`), else text, numbered where the venue numbers its messages.
    fn book_message(&mut self, frame: Bytes) -> Message {
        if self.venue.facts().binary_books {
            return Message::Binary(frame);
        }
        let text = String::from_utf8(frame.into()).expect("text encoders write UTF-8");
        Message::text(self.stamp(text))
    }
}

/// Logs the frames encoded since the last write (stream, sequence), stamped now, just
/// before they are written: a frame is logged before its reader can have it.
fn log_sends(
    unstamped: &mut Vec<(Arc<str>, u64)>,
    log: Option<&std::sync::mpsc::SyncSender<SentFrame>>,
    venue: VenueId,
    shared: &Shared,
) {
    let Some(log) = log else {
        return;
    };
    let sent_ns = crate::clock::monotonic_ns();
    for (stream, sequence) in unstamped.drain(..) {
        let sent = SentFrame {
            venue,
            stream,
            sequence,
            sent_ns,
        };
        if log.try_send(sent).is_err() {
            shared.unlogged_sends.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The book frames of one connection's snapshot streams: generated, or a recording.
struct BookFrames {
    venue: VenueId,
    recording: Option<Arc<Recording>>,
    send_log: Option<std::sync::mpsc::SyncSender<SentFrame>>,
    /// The frames encoded for the next write, for `send_log`: (stream, sequence).
    unstamped: Vec<(Arc<str>, u64)>,
    /// Recorded books served so far.
    replayed: usize,
    streams: Vec<StreamBooks>,
    book: TopBook,
}

/// One snapshot stream of a connection.
struct StreamBooks {
    name: Arc<str>,
    /// Levels a side it carries.
    levels: usize,
    market: SimulatedBook,
    /// Sends a frame one tick in this many (`Simulator::set_stream_pacing`; 1: every tick).
    every: u32,
    ticks: u32,
}

impl BookFrames {
    /// Sends `count` book frames on every stream, in one write: above 1,000 frames a
    /// second a tick carries several, and one write each would cost the simulator, which
    /// shares the cores with the service under load, a system call and a loopback
    /// delivery per frame. A reader that falls behind gets frames together anyway.
    async fn send(
        &mut self,
        socket: &mut tokio_tungstenite::WebSocketStream<TcpStream>,
        shared: &Shared,
        count: u32,
    ) -> Result<(), Error> {
        let venue = self.venue;
        let control = &shared.venues[venue.index()];
        let clock_offset = control.clock_offset.load(Ordering::Relaxed);
        let quiet = control.quiet.load(Ordering::Relaxed);
        let mut unflushed = 0;
        for _ in 0..count {
            for stream_books in &mut self.streams {
                stream_books.ticks = stream_books.ticks.wrapping_add(1);
                if stream_books.ticks % stream_books.every != 0 {
                    continue;
                }
                let StreamBooks {
                    name: stream,
                    levels,
                    market,
                    ..
                } = stream_books;
                let book = &mut self.book;
                let price_decimals = match &self.recording {
                    Some(recording) => {
                        book.copy_from(&recording.books[self.replayed % recording.books.len()]);
                        self.replayed += 1;
                        // A looped recording must not look like duplicates.
                        book.venue_sequence = self.replayed as u64;
                        recording.price_decimals
                    }
                    None => {
                        if !(quiet && market.repeat_book(book)) {
                            market.next_book(
                                shared.mid_ticks.load(Ordering::Relaxed),
                                *levels,
                                0,
                                book,
                            );
                        }
                        8
                    }
                };
                book.venue_sequence += clock_offset;
                let mut frame = Vec::new();
                venue
                    .simulated()
                    .encode_book(stream, book, price_decimals, &mut frame);
                let frame = Bytes::from(frame);
                match &self.send_log {
                    // Under load, the frame's time (below) instead of a copy of it.
                    Some(_) => self
                        .unstamped
                        .push((Arc::clone(stream), book.venue_sequence)),
                    None => {
                        shared
                            .last_sent
                            .lock()
                            .expect("not poisoned")
                            .insert((venue, stream.to_string()), frame.clone());
                    }
                }
                unflushed += frame.len();
                let message = match venue.facts().binary_books {
                    true => Message::Binary(frame),
                    false => Message::Text(frame.try_into().expect("text encoders write UTF-8")),
                };
                socket.feed(message).await?;
                // A burst of 100-level books would otherwise be held whole, tens of MB.
                if unflushed >= WRITE_CHUNK_BYTES {
                    log_sends(&mut self.unstamped, self.send_log.as_ref(), venue, shared);
                    socket.flush().await?;
                    unflushed = 0;
                }
            }
        }
        log_sends(&mut self.unstamped, self.send_log.as_ref(), venue, shared);
        socket.flush().await?;
        if self.send_log.is_some() && count == 1 {
            // Under measurement (`mergebook-tools loadtest`) the simulator stands in for exchanges
            // on other machines but shares a CPU with the readers (on two CPUs, the one the
            // merger does not own). The write has just woken this frame's reader; without
            // the yield the scheduler often lets this thread run on (the next venue's frame,
            // its own wake-ups) while the reader waits, time no deployment's frame spends
            // (docs/decisions.md, "Under measurement the simulator yields after a write"). Not when a write carries several
            // frames of a stream (above 1,000 a second): the reader has a batch to work
            // through either way, and yielding only slowed the simulator down.
            std::thread::yield_now();
        }
        Ok(())
    }
}

/// A diff stream's key: its symbol, whichever of the venue's names for it a client or a
/// test uses (the service's stream name, or a topic with the depth in it).
fn stream_key(venue: VenueId, stream: &str) -> (VenueId, String) {
    let symbol = venue.streams().diff_stream_symbol(stream);
    (
        venue.exchange(),
        symbol.as_deref().unwrap_or(stream).to_ascii_lowercase(),
    )
}

/// The diff stream `stream` of `venue`, created (with its event generator) on first use.
///
/// A venue that keeps its book at the subscribed depth (`Snapshots::kept_depth`) is served a
/// book of that depth, `subscribed_depth` as the first subscription asked (the venue's
/// most where none did): events change it as the venue's top N changes, and what leaves
/// the top N is cut, as the client cuts it.
fn diff_stream(
    shared: &Arc<Shared>,
    venue: VenueId,
    stream: &str,
    subscribed_depth: Option<usize>,
) -> Arc<DiffStream> {
    let mut streams = shared.diff_streams.lock().expect("not poisoned");
    let key = stream_key(venue, stream);
    if let Some(existing) = streams.get(&key) {
        return Arc::clone(existing);
    }
    // The exchange's stream, whichever of its feeds asked first.
    let venue = key.0;
    let seed = shared.seed ^ (streams.len() as u64) << 16 ^ (venue.index() as u64) << 32;
    let market = DiffMarket::new(
        seed,
        venue,
        shared.mid_ticks.load(Ordering::Relaxed),
        crate::clock::unix_ns() / 1_000,
        venue
            .snapshots()
            .kept_depth(subscribed_depth.unwrap_or(usize::MAX)),
    );
    // The book before any event is one the venue had too (an in-band snapshot sends it).
    let mut first = TopBook::default();
    market.book.top(HISTORY_DEPTH, &mut first);
    first.venue_sequence = market.last_id;
    let created = Arc::new(DiffStream {
        faults: EventFaults::default(),
        market: Mutex::new(market),
        subscribers: Mutex::new(Vec::new()),
        feeds: Mutex::new(Vec::new()),
        history: Mutex::new(VecDeque::from([first])),
        stale_snapshot: Mutex::new(None),
    });
    streams.insert(key, Arc::clone(&created));
    tokio::spawn(generate_diff_events(
        Arc::downgrade(shared),
        venue,
        Arc::clone(&created),
    ));
    created
}

/// Takes one from a fault counter; true if it was armed.
fn take_one(counter: &AtomicU64) -> bool {
    counter
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
        .is_ok()
}

/// Changes the stream's book at the simulator's rate and sends each event to its
/// subscribers, encoded for the feed each reads (with the venue's faults applied), until
/// the simulator is gone. `venue` is the exchange's.
async fn generate_diff_events(
    shared: std::sync::Weak<Shared>,
    venue: VenueId,
    diff: Arc<DiffStream>,
) {
    let Some(rate) = shared.upgrade().map(|shared| shared.rate_per_second) else {
        return;
    };
    let mut ticker = tokio::time::interval(Duration::from_secs(1) / rate.min(1000));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut event = BookUpdate::default();
    // An event's frames, one a feed.
    let mut held: Option<Arc<[Bytes]>> = None;
    loop {
        ticker.tick().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let control = &shared.venues[venue.index()];
        if *control.paused.borrow() {
            continue;
        }
        for _ in 0..rate.div_ceil(1000) {
            let mid = shared.mid_ticks.load(Ordering::Relaxed);
            let checksum = {
                let mut market = diff.market.lock().expect("not poisoned");
                market.next_event(mid, crate::clock::unix_ns() / 1_000, &mut event);
                let mut top = TopBook::default();
                market.book.top(HISTORY_DEPTH, &mut top);
                top.venue_sequence = market.last_id;
                let mut history = diff.history.lock().expect("not poisoned");
                if history.len() == HISTORY {
                    history.pop_front();
                }
                history.push_back(top);
                let checksum = match control.in_band(venue) {
                    true => venue.checksum(&market.book, SIMULATED_DECIMALS),
                    false => None,
                };
                // A bad checksum: one bit flipped.
                checksum.map(|sum| sum ^ u32::from(take_one(&diff.faults.corrupt_checksum)))
            };
            let unix_ms = crate::clock::unix_ns() / 1_000_000;
            let frame: Arc<[Bytes]> = (diff.feeds.lock().expect("not poisoned").iter())
                .map(|(feed_venue, stream)| {
                    let mut frame = Vec::new();
                    let price_decimals = PRICE_DECIMALS;
                    feed_venue.simulated().encode_diff(
                        stream,
                        &event,
                        checksum,
                        price_decimals,
                        unix_ms,
                        &mut frame,
                    );
                    Bytes::from(frame)
                })
                .collect();
            let faults = &diff.faults;
            let mut outgoing: Vec<Arc<[Bytes]>> = Vec::new();
            if take_one(&faults.skip) {
                outgoing.push(Arc::from(vec![LOST_EVENT; frame.len()]));
            } else if let Some(earlier) = held.take() {
                outgoing.extend([Arc::clone(&frame), earlier]);
            } else if take_one(&faults.swap) {
                held = Some(Arc::clone(&frame));
            } else if take_one(&faults.duplicate) {
                outgoing.extend([Arc::clone(&frame), Arc::clone(&frame)]);
            } else {
                outgoing.push(frame);
            }
            let mut subscribers = diff.subscribers.lock().expect("not poisoned");
            subscribers.retain(|subscriber| {
                let id = subscriber.subscription;
                // A feed that subscribed after the event was encoded has no frame of it: its
                // book starts after (a snapshot it fetched, or its in-band one).
                let frames = outgoing
                    .iter()
                    .filter_map(|frames| frames.get(subscriber.feed));
                frames
                    .into_iter()
                    .all(|frame| subscriber.frames.try_send((id, frame.clone())).is_ok())
            });
        }
    }
}

/// The venue a connection's path names (`/binance`, `/binance_sbe/…`).
fn venue_of_path(path: &str) -> Option<VenueId> {
    let name = path.trim_start_matches('/').split('/').next()?;
    VenueId::from_name(name)
}

/// A venue whose market data needs an API key refuses an upgrade without one (any
/// non-empty key: the simulator cannot check a key against an account), with HTTP 401.
/// What the exchange answers exactly is not recorded (docs/protocols.md): the reader counts any
/// refused upgrade alike. Counted by `Simulator::refused_for_api_key`.
#[allow(clippy::result_large_err)]
fn check_api_key(
    request: &Request,
    shared: &Shared,
) -> Result<(), tokio_tungstenite::tungstenite::handshake::server::ErrorResponse> {
    let Some(venue) = venue_of_path(request.uri().path()) else {
        return Ok(());
    };
    let Some(header) = venue.facts().api_key_header else {
        return Ok(());
    };
    if request
        .headers()
        .get(header)
        .is_some_and(|key| !key.as_bytes().is_empty())
    {
        return Ok(());
    }
    shared.venues[venue.index()]
        .refused_for_api_key
        .fetch_add(1, Ordering::Relaxed);
    let body = format!("simulator: no API key in {header}");
    let mut response =
        tokio_tungstenite::tungstenite::handshake::server::ErrorResponse::new(Some(body));
    *response.status_mut() = tokio_tungstenite::tungstenite::http::StatusCode::UNAUTHORIZED;
    Err(response)
}

/// The simulator's REST server: `/<venue>/<the venue's snapshot path>`, answered from the
/// stream's book (or a fault).
async fn serve_snapshot(
    axum::extract::State(shared): axum::extract::State<std::sync::Weak<Shared>>,
    uri: axum::http::Uri,
) -> axum::response::Response {
    use axum::http::StatusCode;
    use axum::response::IntoResponse;
    let Some(shared) = shared.upgrade() else {
        return StatusCode::SERVICE_UNAVAILABLE.into_response();
    };
    let path_and_query = uri.path_and_query().map_or("", |p| p.as_str());
    let mut parts = path_and_query.trim_start_matches('/').splitn(2, '/');
    let venue = parts.next().and_then(VenueId::from_name);
    let rest = format!("/{}", parts.next().unwrap_or_default());
    let Some((venue, symbol)) =
        venue.and_then(|venue| Some((venue, venue.snapshots().snapshot_symbol(&rest)?)))
    else {
        return (StatusCode::NOT_FOUND, "no such snapshot").into_response();
    };
    let playback = shared.playback.lock().expect("not poisoned").clone();
    if let Some(body) = playback.and_then(|playback| playback.snapshot(venue, &symbol)) {
        return (
            [(axum::http::header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response();
    }
    let faults = &shared.venues[venue.index()].faults;
    faults
        .snapshot_requests
        .lock()
        .expect("not poisoned")
        .push(std::time::Instant::now());
    if take_one(&faults.rate_limited_requests) {
        let retry_after = faults.retry_after_s.load(Ordering::Relaxed).to_string();
        return (
            StatusCode::TOO_MANY_REQUESTS,
            [(axum::http::header::RETRY_AFTER, retry_after)],
            "{\"code\":-1003,\"msg\":\"Too many requests\"}",
        )
            .into_response();
    }
    let delay = faults.snapshot_delay_ms.load(Ordering::Relaxed);
    let diff = diff_stream(
        &shared,
        venue,
        &venue.streams().diff_stream_name(&symbol),
        None,
    );
    drop(shared);
    let limit = uri
        .query()
        .and_then(|query| {
            query
                .split('&')
                .find_map(|pair| pair.strip_prefix("limit="))
        })
        .and_then(|limit| limit.parse().ok())
        .unwrap_or(usize::MAX);
    let mut snapshot = BookUpdate::default();
    let stale = diff.stale_snapshot.lock().expect("not poisoned").take();
    match stale {
        Some(stale) => snapshot = stale,
        None => diff
            .market
            .lock()
            .expect("not poisoned")
            .snapshot(limit, &mut snapshot),
    }
    if delay > 0 {
        // The snapshot was taken on arrival; it is delivered late (and so is old).
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    let mut body = Vec::new();
    let stream = venue.streams().diff_stream_name(&symbol);
    venue.simulated().encode_snapshot(
        &stream,
        &snapshot,
        SnapshotSource::Rest,
        None,
        PRICE_DECIMALS,
        &mut body,
    );
    (
        [(axum::http::header::CONTENT_TYPE, "application/json")],
        body,
    )
        .into_response()
}
