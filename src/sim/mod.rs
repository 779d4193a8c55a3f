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

mod book_frames;
mod connection;
#[cfg(feature = "faults")]
mod controls;
mod diff_streams;
pub mod market;
mod playback;
mod rest;

use book_frames::*;
use connection::*;
use diff_streams::*;
use rest::*;

use crate::book::{BookUpdate, TopBook, WireDecimals};
use crate::venue::{MAX_VENUES, SnapshotSource, VenueId};
use futures_util::{SinkExt, StreamExt};
pub use market::MIN_START_PRICE;
use market::{DiffMarket, MidPrice, PriceGrid, SimulatedBook};
use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
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
    /// Stop serving every subscription and serve none made from now on, its pings and
    /// heartbeats going on: a connection alive in every way but its data.
    HeartbeatsOnly,
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
    /// The connections serving books that have not seen the venue's pause
    /// (`Simulator::pause_until_silent`): one that has sends nothing more until resumed.
    unpaused_connections: AtomicUsize,
    commands: broadcast::Sender<Command>,
    /// When each connection was accepted.
    connected_at: Mutex<Vec<std::time::Instant>>,
    pongs: AtomicU64,
    /// Application-level pings the venue's clients sent (`Answer::ping`).
    client_pings: AtomicU64,
    /// Client answers to the venue's heartbeats to lose (`Simulator::lose_heartbeat_answers`).
    answers_to_lose: AtomicU64,
    /// Connections the venue closed for a heartbeat left unanswered.
    heartbeat_closes: AtomicU64,
    closes: AtomicU64,
    /// Overrides the venue's ping interval (ms; 0: the venue's own).
    ping_every_ms: AtomicU64,
    /// Added to every generated book's venue sequence (a Bitstamp `microtimestamp`):
    /// the venue's clock jumping.
    clock_offset: AtomicU64,
    /// Taken from the time the venue stamps its books and diff events with (ms;
    /// `Simulator::delay_stamps`): they arrive that long after their venue's time.
    stamp_lag_ms: AtomicU64,
    /// Book frames repeat the last book (`Simulator::quiet_market`).
    quiet: AtomicBool,
    /// New connections are closed as soon as they are open (`Simulator::close_new_connections`).
    closing: AtomicBool,
    /// A REST venue serves its protocol's in-band form (`Simulator::serve_in_band_snapshots`).
    in_band_form: AtomicBool,
    /// Upgrades refused for want of the venue's API key.
    refused_for_api_key: AtomicU64,
    /// Authorisations are refused (`Simulator::refuse_credentials`).
    refuse_credentials: AtomicBool,
    /// Token requests answered (`Streams::token_path`), and how many more to refuse
    /// (`Simulator::fail_token_requests`).
    token_requests: AtomicU64,
    token_failures_left: AtomicU64,
    /// Connections refused at the upgrade for a token the simulator did not hand out.
    refused_for_token: AtomicU64,
    /// The secret and passphrase a whole-book request must be signed with
    /// (`Simulator::check_signatures`), and the requests that were, and were not.
    signing: Mutex<Option<(String, String)>>,
    signed_snapshots: AtomicU64,
    unsigned_snapshots: AtomicU64,
    /// Requests refused because their connection was not authorised.
    refused_unauthorised: AtomicU64,
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
    /// Snapshot requests answered with `snapshot_failure` instead of a snapshot.
    failed_requests: AtomicU64,
    snapshot_failure: Mutex<SnapshotFailure>,
}

/// How a snapshot request fails (`Simulator::fail_snapshots`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum SnapshotFailure {
    /// HTTP 503, as a venue's front answers while its back end is down.
    #[default]
    ServerError,
    /// HTTP 200 with a body that is not the venue's snapshot.
    Garbage,
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
    /// The book does not change: no event is made (`Simulator::quiet_book`).
    quiet: AtomicBool,
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
    unit: crate::fixed::UnitSize::COIN,
};

/// How many past tops a diff stream remembers: ten seconds at the tests' rates (50 a
/// second), twice a snapshot stream's (`SENT_HISTORY`). Each is a whole `TopBook` (3 KiB),
/// and the demo runs tens of diff streams.
const HISTORY: usize = 512;
/// Levels a side of each remembered top.
const HISTORY_DEPTH: usize = 20;

/// How many past books a snapshot stream remembers: its books of the last seconds at the
/// tests' rates (tens a second), a fraction of a second at the soak's.
const SENT_HISTORY: usize = 256;

/// What a snapshot stream sent: its last frame, and its recent books, oldest first.
#[derive(Default)]
struct SentBooks {
    last_frame: Bytes,
    books: std::collections::VecDeque<TopBook>,
}

impl SentBooks {
    fn push(&mut self, frame: Bytes, book: &TopBook) {
        self.last_frame = frame;
        if self.books.len() == SENT_HISTORY {
            self.books.pop_front();
        }
        self.books.push_back(*book);
    }
}

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
    /// Each snapshot stream's books as sent (not under load: `Simulator::record_sends`).
    sent: Mutex<HashMap<(VenueId, String), SentBooks>>,
    diff_streams: Mutex<HashMap<(VenueId, String), Arc<DiffStream>>>,
    rest_addr: SocketAddr,
    /// The WebSocket port's address: what token answers send clients to.
    ws_addr: SocketAddr,
    /// Where connections opened from now on report each book frame they send.
    send_log: Mutex<Option<std::sync::mpsc::SyncSender<SentFrame>>>,
    /// Frames sent but not logged because the log was full.
    unlogged_sends: AtomicU64,
    /// A recording played back instead of the generated market, where it has the venue.
    playback: Mutex<Option<Arc<playback::Playback>>>,
    /// What each venue with a listing lists (`Simulator::list`); `None`: it answers no
    /// listing request.
    listings: Mutex<[Option<Vec<String>>; MAX_VENUES]>,
    /// How often new snapshot streams send (`Simulator::set_stream_pacing`).
    stream_pacing: Mutex<StreamPacing>,
    /// The symbols quoted around a start price of their own (`Simulator::set_prices`):
    /// (venue, symbol, its grid).
    price_grids: Mutex<Vec<(VenueId, String, PriceGrid)>>,
}

/// Snapshot streams named in `hot` send a frame one tick in `hot_every`, the others one
/// in `cold_every`.
#[derive(Debug)]
struct StreamPacing {
    hot: Vec<String>,
    hot_every: u32,
    cold_every: u32,
    /// Ticks whose frames a connection writes together (`Simulator::set_ticks_per_write`).
    ticks_per_write: u32,
}

impl Shared {
    /// The prices of a new market on `venue`'s `stream`: those of the longest configured
    /// symbol of the venue that the stream's name holds (letter case aside), if any.
    fn price_grid(&self, venue: VenueId, stream: &str) -> PriceGrid {
        let stream = stream.to_ascii_lowercase();
        let grids = self.price_grids.lock().expect("not poisoned");
        grids
            .iter()
            .filter(|(v, symbol, _)| *v == venue && stream.contains(symbol.as_str()))
            .max_by_key(|(_, symbol, _)| symbol.len())
            .map_or_else(PriceGrid::default, |&(_, _, grid)| grid)
    }

    /// One tick in how many a new subscription to `stream` sends a frame on.
    fn stream_every(&self, stream: &str) -> u32 {
        let pacing = self.stream_pacing.lock().expect("not poisoned");
        let every = match pacing.hot.iter().any(|name| name == stream) {
            true => pacing.hot_every,
            false => pacing.cold_every,
        };
        every.max(1)
    }

    /// Ticks whose frames a new connection writes together.
    fn ticks_per_write(&self) -> u32 {
        let pacing = self.stream_pacing.lock().expect("not poisoned");
        pacing.ticks_per_write.max(1)
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
                unpaused_connections: AtomicUsize::new(0),
                commands: broadcast::channel(64).0,
                connected_at: Mutex::new(Vec::new()),
                pongs: AtomicU64::new(0),
                client_pings: AtomicU64::new(0),
                answers_to_lose: AtomicU64::new(0),
                heartbeat_closes: AtomicU64::new(0),
                closes: AtomicU64::new(0),
                ping_every_ms: AtomicU64::new(0),
                clock_offset: AtomicU64::new(0),
                stamp_lag_ms: AtomicU64::new(0),
                quiet: AtomicBool::new(false),
                closing: AtomicBool::new(false),
                in_band_form: AtomicBool::new(false),
                refused_for_api_key: AtomicU64::new(0),
                refuse_credentials: AtomicBool::new(false),
                token_requests: AtomicU64::new(0),
                token_failures_left: AtomicU64::new(0),
                refused_for_token: AtomicU64::new(0),
                signing: Mutex::new(None),
                signed_snapshots: AtomicU64::new(0),
                unsigned_snapshots: AtomicU64::new(0),
                refused_unauthorised: AtomicU64::new(0),
                faults: DiffFaults::default(),
            }),
            recordings: Mutex::new(Default::default()),
            sent: Mutex::new(HashMap::new()),
            diff_streams: Mutex::new(HashMap::new()),
            rest_addr: rest_listener.local_addr()?,
            ws_addr: addr,
            send_log: Mutex::new(None),
            unlogged_sends: AtomicU64::new(0),
            playback: Mutex::new(None),
            listings: Mutex::new(Default::default()),
            stream_pacing: Mutex::new(StreamPacing {
                hot: Vec::new(),
                hot_every: 1,
                cold_every: 1,
                ticks_per_write: 1,
            }),
            price_grids: Mutex::new(Vec::new()),
        });
        let mut rest = axum::Router::new();
        for &venue in VenueId::ALL {
            let path = venue.streams().listing_path();
            if !path.is_empty() {
                let answer = move |state, body| rest::serve_listing(venue, state, body);
                rest = rest.route(&format!("/{venue}{path}"), axum::routing::post(answer));
            }
            let path = venue.streams().token_path();
            if !path.is_empty() {
                let answer = move |state| rest::serve_token(venue, state);
                rest = rest.route(&format!("/{venue}{path}"), axum::routing::post(answer));
            }
        }
        let rest = rest
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

    /// Quotes each venue's symbol of each instrument `prices` names around that price,
    /// in the venue's own currency: a venue converted through a rate whose instrument (or
    /// fixed rate) has a price too starts at the price the rate makes the same (new markets
    /// only; the others start around 0.06824). Every market walks with the one mid, each
    /// with a tick of its own size (`PriceGrid`); a contract's market is sized in whole
    /// contracts of its configured size (an inverse one's, of its configured value), an
    /// instrument's in a unit (`unit_size`) in whole units written in coins, its price a
    /// unit's (markets without a price included). What `simulator.prices` sets.
    pub fn set_prices(
        &self,
        config: &crate::config::Config,
        prices: &[(String, crate::fixed::FixedPoint)],
    ) {
        use crate::config::RateFrom;
        use crate::units::Direction;
        let price_of = |name: &str| prices.iter().find_map(|(n, p)| (n == name).then_some(*p));
        let mut grids = self.shared.price_grids.lock().expect("not poisoned");
        for instrument in &config.instruments {
            let unit = instrument.unit_size;
            let Some(price) = price_of(&instrument.name) else {
                if !unit.is_coin() {
                    // Around the default price, in coins: sizes of units all the same.
                    for (venue, symbol) in &instrument.symbols {
                        let symbol = symbol.rsplit(':').next().unwrap_or(symbol);
                        let grid = PriceGrid::default().in_units_of(unit);
                        grids.push((*venue, symbol.to_ascii_lowercase(), grid));
                    }
                }
                continue;
            };
            // The price of a coin, the wire's (`price` is a unit's).
            let power = 10u64.pow(u32::from(unit.exponent().unsigned_abs()));
            let price = crate::fixed::FixedPoint::from_raw(match unit.exponent() >= 0 {
                true => price.raw() / power,
                false => price.raw().saturating_mul(power),
            });
            for (source, (venue, symbol)) in instrument.symbols.iter().enumerate() {
                let conversion = instrument.conversions.iter().find(|c| c.source == source);
                let native = conversion.and_then(|conversion| {
                    let rate = match config.rates[conversion.rate?].from {
                        RateFrom::Fixed(rate) => rate,
                        RateFrom::Instrument(at) => price_of(&config.instruments[at].name)?,
                    };
                    let (price, rate) = (u128::from(price.raw()), u128::from(rate.raw()));
                    let scale = u128::from(crate::fixed::SCALE);
                    let native = match conversion.conversion.direction {
                        Direction::Multiply => price * scale / rate,
                        Direction::Divide => price * rate / scale,
                    };
                    u64::try_from(native)
                        .ok()
                        .map(crate::fixed::FixedPoint::from_raw)
                });
                let mut grid = PriceGrid::around(native.unwrap_or(price)).in_units_of(unit);
                if let Some(size) = instrument.contract_size(source) {
                    grid = match venue.streams().inverse(symbol) {
                        true => grid.in_contracts_of(size),
                        false => grid.in_linear_contracts_of(size),
                    };
                }
                // A market before a `:` (Bybit's `linear:BTCUSDT`) is not in stream names.
                let symbol = symbol.rsplit(':').next().unwrap_or(symbol);
                grids.push((*venue, symbol.to_ascii_lowercase(), grid));
            }
        }
    }

    /// Points every venue of `config` (WebSocket and REST) at this simulator, with a
    /// stand-in API key where a venue needs one and the config names none.
    pub fn point(&self, config: &mut crate::config::Config) {
        for venue in &mut config.venues {
            venue.url = self.url(venue.venue);
            if venue.venue.facts().credentials.upgrade_header().is_some() && venue.api_key.is_none()
            {
                venue.api_key = Some(crate::config::ApiKey::stand_in());
            }
            if let crate::config::FeedMode::Diff(settings) = &mut venue.mode {
                settings.rest_url = self.rest_url(venue.venue);
            }
            if venue.listing_url.is_some() {
                let path = venue.venue.streams().listing_path();
                venue.listing_url = Some(format!("{}{path}", self.rest_url(venue.venue)));
            }
            if venue.token_url.is_some() {
                let path = venue.venue.streams().token_path();
                venue.token_url = Some(format!("{}{path}", self.rest_url(venue.venue)));
            }
        }
    }

    /// Makes `venue`'s listing (`Streams::listing_path`) list `names`, and nothing else.
    pub fn list(&self, venue: VenueId, names: Vec<String>) {
        self.shared.listings.lock().expect("not poisoned")[venue.index()] = Some(names);
    }

    /// Makes each venue's listing list the symbols `config`'s instruments name on it: the
    /// embedded simulator lists what it is asked to serve.
    pub fn list_configured(&self, config: &crate::config::Config) {
        for venue in config
            .venues
            .iter()
            .filter(|venue| venue.listing_url.is_some())
        {
            let names = config
                .instruments
                .iter()
                .flat_map(|instrument| &instrument.symbols)
                .filter(|(on, _)| *on == venue.venue)
                .map(|(_, symbol)| symbol.clone())
                .collect();
            self.list(venue.venue, names);
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
