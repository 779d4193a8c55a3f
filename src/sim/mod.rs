//! The embedded exchange simulator: a loopback WebSocket server that speaks each venue's
//! real protocol (subscription and ack, book frames in the exact recorded format, the
//! venue's reconnect request), so the whole pipeline runs with no internet.
//!
//! A client connects to `ws://<addr>/<venue>` (`/binance`, `/bitstamp`), subscribes
//! as it would on the exchange, and receives a moving market at the configured rate, or a
//! recording (`Simulator::replay`): recorded book frames, looped, re-encoded by the
//! venue's own encoder under the subscribed stream name with increasing sequence
//! numbers. Tests
//! drive faults through the [`Simulator`] handle: cut a venue's connections, pause it,
//! inject raw frames, request a reconnect, and read back the last frame sent per stream.

pub mod market;

use crate::book::TopBook;
use crate::venue::{MAX_VENUES, VenueId};
use futures_util::{SinkExt, StreamExt};
use market::{MidPrice, SimulatedBook};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{broadcast, watch};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::handshake::server::{Request, Response};

/// A one-off instruction to every open connection of a venue.
#[derive(Clone, Debug)]
enum Command {
    /// Drop the TCP connection without a close frame.
    Disconnect,
    /// Send this text frame as is.
    Send(String),
}

struct VenueControl {
    paused: watch::Sender<bool>,
    commands: broadcast::Sender<Command>,
    connections: AtomicU64,
    pongs: AtomicU64,
    closes: AtomicU64,
    /// Overrides the venue's ping interval (ms; 0: the venue's own).
    ping_every_ms: AtomicU64,
}

/// Recorded books a venue serves instead of the generated market.
#[derive(Debug, Clone)]
pub struct Recording {
    pub books: Vec<TopBook>,
    /// Decimals of the recorded prices, kept when re-encoding (`9328.28` stays so).
    pub price_decimals: u32,
}

impl Recording {
    /// Loads a recording (plain frames or a session timeline) of `venue`'s book frames.
    pub fn load(venue: VenueId, path: &std::path::Path) -> Result<Recording, String> {
        let frames = crate::replay::load_frames(path).map_err(|error| error.to_string())?;
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
    last_sent: Mutex<HashMap<(VenueId, String), String>>,
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
        let shared = Arc::new(Shared {
            rate_per_second: rate_per_second.max(1),
            seed,
            mid_ticks: AtomicU64::new(market::START_MID_TICKS),
            venues: std::array::from_fn(|_| VenueControl {
                paused: watch::channel(false).0,
                commands: broadcast::channel(64).0,
                connections: AtomicU64::new(0),
                pongs: AtomicU64::new(0),
                closes: AtomicU64::new(0),
                ping_every_ms: AtomicU64::new(0),
            }),
            recordings: Mutex::new(Default::default()),
            last_sent: Mutex::new(HashMap::new()),
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

    fn control(&self, venue: VenueId) -> &VenueControl {
        &self.shared.venues[venue.index()]
    }

    /// Drops every open connection of `venue` without a close frame.
    pub fn disconnect(&self, venue: VenueId) {
        let _ = self.control(venue).commands.send(Command::Disconnect);
    }

    /// Stops (or resumes) book frames for `venue`; connections stay open.
    pub fn pause(&self, venue: VenueId, paused: bool) {
        self.control(venue).paused.send_replace(paused);
    }

    /// Sends `frame` verbatim on every open connection of `venue`.
    pub fn send_raw(&self, venue: VenueId, frame: impl Into<String>) {
        let _ = self
            .control(venue)
            .commands
            .send(Command::Send(frame.into()));
    }

    /// Sends the venue's own reconnect request.
    pub fn request_reconnect(&self, venue: VenueId) {
        self.send_raw(venue, venue.reconnect_request());
    }

    /// Makes new connections of `venue` serve `recording` (looped) instead of the
    /// generated market.
    pub fn replay(&self, venue: VenueId, recording: Recording) {
        self.shared.recordings.lock().expect("not poisoned")[venue.index()] =
            Some(Arc::new(recording));
    }

    /// Makes new connections of `venue` ping every `interval` instead of the venue's own.
    pub fn set_ping_interval(&self, venue: VenueId, interval: Duration) {
        self.control(venue)
            .ping_every_ms
            .store(interval.as_millis().max(1) as u64, Ordering::Relaxed);
    }

    /// Pongs received from clients of `venue` so far.
    pub fn pongs(&self, venue: VenueId) -> u64 {
        self.control(venue).pongs.load(Ordering::Relaxed)
    }

    /// Close frames received from clients of `venue` so far (a clean client shutdown).
    pub fn closes(&self, venue: VenueId) -> u64 {
        self.control(venue).closes.load(Ordering::Relaxed)
    }

    /// Connections accepted for `venue` so far.
    pub fn connections(&self, venue: VenueId) -> u64 {
        self.control(venue).connections.load(Ordering::Relaxed)
    }

    /// The last book frame sent to any client on `stream`.
    pub fn last_sent(&self, venue: VenueId, stream: &str) -> Option<String> {
        self.shared
            .last_sent
            .lock()
            .expect("not poisoned")
            .get(&(venue, stream.to_owned()))
            .cloned()
    }
}

type Error = Box<dyn std::error::Error + Send + Sync>;

// The handshake callback's error type is tungstenite's (an HTTP response), not ours.
#[allow(clippy::result_large_err)]
async fn serve(stream: TcpStream, shared: Arc<Shared>) -> Result<(), Error> {
    stream.set_nodelay(true)?;
    let mut path = String::new();
    let mut socket =
        tokio_tungstenite::accept_hdr_async(stream, |request: &Request, response: Response| {
            path = request.uri().path().to_owned();
            Ok(response)
        })
        .await?;
    let venue_name = path
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or_default();
    let Some(venue) = VenueId::from_name(venue_name) else {
        return Err(format!("no venue at {path:?}").into());
    };
    let control = &shared.venues[venue.index()];
    control.connections.fetch_add(1, Ordering::Relaxed);
    let mut commands = control.commands.subscribe();
    let mut paused = control.paused.subscribe();

    // The timer cannot usefully tick faster than 1 kHz: above that, send several frames
    // per tick.
    let ticks_per_second = shared.rate_per_second.min(1000);
    let frames_per_tick = shared.rate_per_second.div_ceil(ticks_per_second);
    let mut ticker = tokio::time::interval(Duration::from_secs(1) / ticks_per_second);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);

    let ping_every = match control.ping_every_ms.load(Ordering::Relaxed) {
        0 => venue.server_ping_interval(),
        ms => Some(Duration::from_millis(ms)),
    };
    // Without pings, a timer that never fires.
    let mut pinger =
        tokio::time::interval(ping_every.unwrap_or(Duration::from_secs(u64::from(u32::MAX))));
    pinger.reset();

    let recording = shared.recordings.lock().expect("not poisoned")[venue.index()].clone();
    let mut replayed = 0usize;
    let mut streams: Vec<(String, usize, SimulatedBook)> = Vec::new();
    let mut book = TopBook::default();
    loop {
        tokio::select! {
            incoming = socket.next() => match incoming {
                Some(Ok(Message::Text(text))) => {
                    if let Some((subscribed, replies)) = venue.answer_request(&text) {
                        for reply in replies {
                            socket.send(Message::text(reply)).await?;
                        }
                        for stream in subscribed {
                            let seed = shared.seed ^ streams.len() as u64 ^ (venue.index() as u64) << 32;
                            let levels = venue.levels_on_stream(&stream);
                            streams.push((stream, levels, SimulatedBook::new(seed)));
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
            _ = ticker.tick(), if !streams.is_empty() && !*paused.borrow() => {
                for _ in 0..frames_per_tick {
                    for (stream, levels, market) in &mut streams {
                        let price_decimals = match &recording {
                            Some(recording) => {
                                book.copy_from(&recording.books[replayed % recording.books.len()]);
                                replayed += 1;
                                book.venue_sequence = replayed as u64; // a looped recording must not look like duplicates
                                recording.price_decimals
                            }
                            None => {
                                market.next_book(shared.mid_ticks.load(Ordering::Relaxed), *levels, 0, &mut book);
                                8
                            }
                        };
                        let mut frame = Vec::new();
                        venue.encode_book(stream, &book, price_decimals, &mut frame);
                        let text = String::from_utf8(frame).expect("encoders write UTF-8");
                        shared.last_sent.lock().expect("not poisoned").insert((venue, stream.clone()), text.clone());
                        socket.send(Message::text(text)).await?;
                    }
                }
            }
            _ = pinger.tick() => socket.send(Message::Ping(b"mergebook-sim".to_vec().into())).await?,
            command = commands.recv() => match command {
                Ok(Command::Disconnect) | Err(broadcast::error::RecvError::Closed) => return Ok(()),
                Ok(Command::Send(text)) => socket.send(Message::text(text)).await?,
                Err(broadcast::error::RecvError::Lagged(_)) => {}
            },
            _ = paused.changed() => {}
        }
    }
}
