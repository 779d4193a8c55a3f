//! Venues: one module per exchange (wire docs, decoders, subscription, sequencing, the
//! simulator's side), and the one registry list of venues below, which declares the
//! modules too. Adding an exchange means a new module implementing [`Venue`] and
//! [`Simulated`], and one line in `venues!`.

use crate::book::{BookUpdate, DepthBook, Level, Side, TopBook, WireDecimals};
use crate::fixed::DECIMALS;
pub use crate::reconnect::ConnectBudget;
pub use crate::sync::Sequencing;
pub use crate::walker::{DecodeError, LevelShape, MAX_NESTING, TaggedShape, Walker};
pub use level_texts::LevelTexts;

pub mod level_texts;

/// Where a venue's diff-mode books start from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SnapshotSource {
    /// A REST request per instrument, joined to the diff events buffered meanwhile.
    Rest,
    /// The diff stream itself: a subscription starts with a snapshot
    /// (`BookUpdate::is_snapshot`), and one instrument is resynchronised by subscribing
    /// to it again.
    InBand,
}

/// What the venue's simulator does with a request a client sent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Answer {
    /// Streams the request subscribes to.
    pub subscribe: Vec<String>,
    /// Streams the request unsubscribes from.
    pub unsubscribe: Vec<String>,
    /// The frames the venue answers with.
    pub replies: Vec<String>,
    /// The book depth a subscription asks for, where it names one.
    pub depth: Option<usize>,
    /// The request was the client's application-level ping.
    pub ping: bool,
}

/// The most venues one instrument can merge (the merge and summary hold them inline).
pub const MAX_VENUES: usize = 8;

/// What one frame from a venue said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message<'a> {
    /// The output book now holds the venue's complete top of book for the stream named
    /// `stream` (Binance combined stream name, Bitstamp channel; empty on a raw stream).
    Book { stream: &'a [u8] },
    /// A frame of several books' events (Coinbase Advanced Trade's `events`): the output
    /// holds the first, `stream`'s; the next starts at byte `next` of the frame, for
    /// [`Venue::decode_next_event`]. The decoder has checked the whole frame.
    Books { stream: &'a [u8], next: usize },
    /// The venue confirmed (or refused) a subscription: `acked` names which.
    SubscribeResult { accepted: bool, acked: Acked<'a> },
    /// The venue asks the client to reconnect (Binance `serverShutdown`, Bitstamp
    /// `bts:request_reconnect`).
    Reconnect,
    /// An application-level heartbeat.
    Heartbeat,
    /// The venue's heartbeat for the connection's subscriptions: they are live, with
    /// nothing to send (the read-idle watchdog counts it as book data, so a quiet book is
    /// not taken for a dead subscription).
    SubscriptionsAlive,
    /// A well-formed message this decoder has no use for (other event types).
    Ignored,
}

/// What a subscription's acknowledgement names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acked<'a> {
    /// The request with this id (`SubscribeRequest::id`): every stream it asked for.
    Request(u64),
    /// One stream, by its name (a venue that acknowledges each stream of a request).
    Stream(&'a [u8]),
    /// The venue's acknowledgement names nothing (Bybit's linear market may echo an empty
    /// `req_id`): the oldest request still waiting.
    Oldest,
}

/// The request id of every unsubscribe frame, which no subscription has (the core numbers
/// its subscriptions from 1): its acknowledgement is of no subscription, and ignored.
pub const UNSUBSCRIBE_REQUEST_ID: u64 = 0;

/// Which of a venue's book streams a connection subscribes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// Top-of-book snapshots (`mode = "snapshot"`, [`Venue::stream_name`]).
    Snapshots,
    /// The diff stream (`mode = "diff"`, [`Venue::diff_stream_name`]).
    Diff,
}

/// One subscribe frame, and how the venue acknowledges it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SubscribeRequest {
    pub frame: String,
    /// `Some(id)`: one acknowledgement for the whole request, naming `id`
    /// (`Acked::Request`); `None`: one per stream, naming it (`Acked::Stream`).
    pub id: Option<u64>,
    /// The streams it asks for, as indices into the streams given.
    pub streams: std::ops::Range<usize>,
}

/// An exchange's wire protocol. Implementations are pure: bytes in, book or typed error
/// out; no I/O, no clock, no allocation, no panic on any input.
pub trait Venue {
    /// The name used in config, metrics and published levels.
    const NAME: &'static str;

    /// The venue's public market-data WebSocket (`venues.<name>.url` overrides it).
    const DEFAULT_URL: &'static str;

    /// The venue's limit on connection attempts, which every reconnect respects.
    const CONNECT_BUDGET: ConnectBudget;

    /// Decodes one text frame, writing a book message's top `depth` levels per side into
    /// `out`. On error `out` holds garbage and must not be published. A venue without
    /// snapshot streams (`SNAPSHOT_STREAMS`) has none to decode.
    fn decode<'a>(
        frame: &'a [u8],
        depth: usize,
        out: &mut TopBook,
    ) -> Result<Message<'a>, DecodeError> {
        let _ = (frame, depth, out);
        Err(DecodeError::UnknownMessage(
            "frame outside diff mode (the venue has no snapshot streams)",
        ))
    }

    /// Whether the venue has top-of-book snapshot streams (`mode = "snapshot"`); without
    /// them, `diff` is its only mode.
    const SNAPSHOT_STREAMS: bool;

    /// Whether the venue sends its books in binary frames (Binance SBE), read by
    /// [`Venue::decode_binary`] and [`Venue::decode_diff_binary`]; its text frames are
    /// still read by `decode` and `decode_diff` (subscription answers). A binary frame
    /// from any other venue is a bad frame.
    const BINARY_BOOKS: bool = false;

    /// The HTTP header of the WebSocket upgrade that carries the venue's API key, where
    /// its market data needs one (`venues.<name>.api_key_env` or `api_key_file`).
    const API_KEY_HEADER: Option<&'static str> = None;

    /// The exchange whose books this feed carries: the venue's own name, or the name of
    /// the venue that is another feed of the same books (the simulator serves both from
    /// one market).
    const EXCHANGE: &'static str = Self::NAME;

    /// Decodes one binary frame of a snapshot connection, as [`Venue::decode`] a text one.
    fn decode_binary<'a>(
        frame: &'a [u8],
        depth: usize,
        out: &mut TopBook,
    ) -> Result<Message<'a>, DecodeError> {
        let _ = (frame, depth, out);
        Err(DecodeError::UnknownMessage("binary frame"))
    }

    /// Decodes one binary frame of a diff connection, as [`Venue::decode_diff`] a text one.
    fn decode_diff_binary<'a>(
        frame: &'a [u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<Message<'a>, DecodeError> {
        let _ = (frame, max_levels, out);
        Err(DecodeError::UnknownMessage("binary frame"))
    }

    /// Whether a book message naming `named` (what [`Message::Book`]'s `stream` holds) is
    /// of the stream `stream`: the same name, unless the venue's messages name their
    /// books otherwise (Binance SBE: by the symbol alone).
    #[inline]
    fn names_stream(stream: &str, named: &[u8]) -> bool {
        stream.as_bytes() == named
    }

    /// The stream (channel) this venue publishes `symbol`'s book on, for `depth` levels.
    fn stream_name(symbol: &str, depth: usize) -> String;

    /// The requests that subscribe an open connection to `streams`, of `kind`, of books
    /// of `depth` levels a side (where the venue takes a depth). Requests the venue
    /// acknowledges by id are numbered from `first_id` on.
    fn subscribe_frames(
        streams: &[String],
        kind: StreamKind,
        depth: usize,
        first_id: u64,
    ) -> Vec<SubscribeRequest>;

    /// The text frames that end the subscriptions to `streams` (as `subscribe_frames`
    /// made them).
    fn unsubscribe_frames(streams: &[String], kind: StreamKind, depth: usize) -> Vec<String>;

    /// An application-level ping the venue wants from its clients, and how often; `None`
    /// where WebSocket pings, or the venue's own heartbeats, keep the connection alive.
    fn client_ping() -> Option<(std::time::Duration, &'static str)> {
        None
    }

    /// The most streams one connection may carry: a venue's streams are spread over as
    /// many connections as this asks for.
    const MAX_STREAMS_PER_CONNECTION: usize;

    /// The URL of the connection that serves `symbol`, from the venue's configured `url`:
    /// that URL itself where one endpoint serves every symbol.
    fn endpoint(url: &str, symbol: &str) -> String {
        let _ = symbol;
        url.to_owned()
    }

    /// The venue's symbol for the spot pair `base`/`quote` (upper-case currency codes):
    /// what tools and generated configurations name the pair by.
    fn spot_symbol(base: &str, quote: &str) -> String;

    /// Why `symbol` cannot name one of the venue's books (a configuration error), if it
    /// cannot.
    fn check_symbol(symbol: &str) -> Result<(), String> {
        let _ = symbol;
        Ok(())
    }

    /// Whether `symbol`'s sizes are contracts (a derivative's): its books are merged as
    /// an amount of the base currency, each size times the instrument's configured
    /// contract size (`contract_sizes`), which such a symbol requires.
    fn sized_in_contracts(symbol: &str) -> bool {
        let _ = symbol;
        false
    }

    // ---- diff mode (`mode = "diff"`): a full-depth book from a diff stream and REST
    // snapshots; the generic sync in `sync.rs`, the venue's rules in `SEQUENCE` ----

    /// How the diff stream is sequenced: the venue's sync rules.
    const SEQUENCE: &'static dyn Sequencing;

    /// Where diff-mode books start from.
    const SNAPSHOTS: SnapshotSource;

    /// The levels a side of a diff book the venue maintains when subscribed for
    /// `requested`: `Some` where it sends only its top N and no deletes for levels pushed
    /// out of them (the book is cut to that after each message); `None`: full depth.
    fn kept_depth(requested: usize) -> Option<usize> {
        let _ = requested;
        None
    }

    /// The venue's checksum of `book` with its numbers written with `decimals`, to compare
    /// with the one a message carries (`BookUpdate::checksum`); `None` where the venue has
    /// none.
    fn checksum(book: &DepthBook, decimals: WireDecimals) -> Option<u32> {
        let _ = (book, decimals);
        None
    }

    /// `checksum`, as a feed computes it after each message: with the level texts of this
    /// book's last checksum at hand (`LevelTexts`), where the venue's checksum is over
    /// text. Always equal to `checksum`.
    fn checksum_after_change(
        book: &DepthBook,
        decimals: WireDecimals,
        texts: &mut LevelTexts,
    ) -> Option<u32> {
        let _ = texts;
        Self::checksum(book, decimals)
    }

    /// Where the venue's REST API is (`venues.<name>.rest_url` overrides it).
    const DEFAULT_REST_URL: &'static str;

    /// The diff stream of `symbol`.
    fn diff_stream_name(symbol: &str) -> String;

    /// The symbol whose diff stream `stream` is (the inverse of `diff_stream_name`, up to
    /// letter case), or `None` for any other stream.
    fn diff_stream_symbol(stream: &str) -> Option<String>;

    /// Decodes one text frame of a diff connection. `Message::Book` means `out` holds one
    /// diff event: all its levels in wire order (zero amounts delete), at most
    /// `max_levels` a side. On error `out` holds garbage.
    fn decode_diff<'a>(
        frame: &'a [u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<Message<'a>, DecodeError>;

    /// The event at byte `at` of a frame that [`Venue::decode_diff`] read as
    /// [`Message::Books`], into `out` as `decode_diff` writes one: its stream, and where the
    /// next event starts if one follows. A venue whose frames each hold one event has none.
    fn decode_next_event<'a>(
        frame: &'a [u8],
        at: usize,
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<(&'a [u8], Option<usize>), DecodeError> {
        let _ = (frame, at, max_levels, out);
        Err(DecodeError::UnknownMessage(
            "a second event in a frame (the venue sends one a frame)",
        ))
    }

    /// Decodes a REST snapshot body into `out` (sides best first, at most `max_levels`).
    /// An in-band venue (`SnapshotSource::InBand`) fetches none.
    fn decode_snapshot(
        body: &[u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<(), DecodeError> {
        let _ = (body, max_levels, out);
        Err(DecodeError::UnknownMessage(
            "REST body (the venue's snapshots come on the WebSocket)",
        ))
    }

    /// The REST URL of `symbol`'s snapshot with `limit` levels a side (where the venue
    /// takes a limit).
    fn snapshot_url(rest_base: &str, symbol: &str, limit: usize) -> String;

    /// The symbol a snapshot URL asks for (the simulator's REST server; matching recorded
    /// REST responses to streams in a replay); `None` for an in-band venue.
    fn snapshot_symbol(url: &str) -> Option<String> {
        let _ = url;
        None
    }

    /// What one snapshot request of `limit` levels costs against the venue's budget: an
    /// in-band venue's is a resubscription, counted as one request.
    fn snapshot_weight(limit: usize) -> u32 {
        let _ = limit;
        1
    }
}

/// The simulator's side of a venue: what the embedded exchange simulator (`sim/`) serves
/// in the venue's own protocol, and what tests and benches build frames with. Apart from
/// [`Venue`], which is what the service needs to read the venue.
pub trait Simulated: Venue {
    /// Appends `book` to `out` as this venue's book frame for `stream`, byte for byte in
    /// the recorded wire format (prices with `price_decimals` digits where exact). The
    /// simulator serves these; tests and benches decode them.
    fn encode_book(stream: &str, book: &TopBook, price_decimals: u32, out: &mut Vec<u8>);

    /// What the venue does with `request` (a subscription, an unsubscription, an
    /// application ping), if it knows it.
    fn answer_request(request: &str) -> Option<Answer>;

    /// How often the venue sends WebSocket pings, if it does (most keep connections alive
    /// with their own heartbeats, or the client's pings).
    fn server_ping_interval() -> Option<std::time::Duration> {
        None
    }

    /// The frame by which the venue asks clients to reconnect, where it has one.
    fn reconnect_request() -> Option<&'static str> {
        None
    }

    /// How many levels a side the venue sends on `stream`.
    fn levels_on_stream(stream: &str) -> usize;

    /// Appends one diff event frame for `stream` in the recorded wire format, carrying
    /// `checksum` (of the book after the event) where the venue sends one.
    fn encode_diff(
        stream: &str,
        update: &BookUpdate,
        checksum: Option<u32>,
        price_decimals: u32,
        unix_ms: u64,
        out: &mut Vec<u8>,
    );

    /// Appends a snapshot of `stream` in the recorded format, as sent `on`: a REST body
    /// ([`SnapshotSource::Rest`]) or a WebSocket frame on the stream
    /// ([`SnapshotSource::InBand`]), carrying `checksum` where the venue sends one.
    fn encode_snapshot(
        stream: &str,
        snapshot: &BookUpdate,
        on: SnapshotSource,
        checksum: Option<u32>,
        price_decimals: u32,
        out: &mut Vec<u8>,
    );

    /// The ids of the diff event after `last_id` that changes `changes` levels at
    /// `now_us` (unix microseconds), as the venue numbers them.
    fn next_event_ids(last_id: u64, changes: u64, now_us: u64) -> (u64, u64);

    /// The id a new diff stream's book starts at.
    fn initial_event_id(now_us: u64) -> u64;

    /// The venue's heartbeat message on a subscribed connection, the `counter`th, where
    /// it sends one a second for the whole connection (Coinbase Advanced Trade's
    /// `heartbeats` channel); `None` where it sends none.
    fn heartbeat(counter: u64) -> Option<String> {
        let _ = counter;
        None
    }

    /// `frame` as the `number`th message of its connection, where the venue numbers every
    /// message it sends on one (`BookUpdate::message_number`): the simulator numbers each
    /// frame as it sends it. `None`: frames go out as encoded.
    fn number_message(frame: &str, number: u64) -> Option<String> {
        let _ = (frame, number);
        None
    }
}

/// The requests for `streams`, at most `per_request` a request, in order, each frame
/// written by `frame` from its streams. `first_id`: the first request's id where the venue
/// acknowledges each request by an id (the next ones numbered on from it); `None` where it
/// acknowledges each stream by its name.
pub(crate) fn chunked_requests(
    streams: &[String],
    per_request: usize,
    first_id: Option<u64>,
    mut frame: impl FnMut(&[String]) -> String,
) -> Vec<SubscribeRequest> {
    streams
        .chunks(per_request)
        .enumerate()
        .map(|(index, chunk)| {
            let start = index * per_request;
            SubscribeRequest {
                frame: frame(chunk),
                id: first_id.map(|first| first + index as u64),
                streams: start..start + chunk.len(),
            }
        })
        .collect()
}

/// The `-`-separated parts of a symbol of at most `max_len` bytes (`ETH-USD`,
/// `BTC-USDT-SWAP`), each upper-case letters and digits; `None` for anything else.
pub(crate) fn dashed_codes(symbol: &str, max_len: usize) -> Option<Vec<&str>> {
    let code = |part: &&str| {
        !part.is_empty()
            && part
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    };
    let parts: Vec<&str> = symbol.split('-').collect();
    (symbol.len() <= max_len && parts.iter().all(code)).then_some(parts)
}

/// Writes a side as `[["price","amount"],…]` with `separator` after each `,`.
pub(crate) fn write_levels(
    levels: &[Level],
    price_decimals: u32,
    separator: &str,
    out: &mut Vec<u8>,
) {
    out.push(b'[');
    for (index, level) in levels.iter().enumerate() {
        if index > 0 {
            out.push(b',');
            out.extend_from_slice(separator.as_bytes());
        }
        out.extend_from_slice(b"[\"");
        level.price.append_decimal(price_decimals, out);
        out.extend_from_slice(b"\",");
        out.extend_from_slice(separator.as_bytes());
        out.push(b'"');
        level.amount.append_decimal(DECIMALS, out);
        out.extend_from_slice(b"\"]");
    }
    out.push(b']');
}

macro_rules! venues {
    ($($variant:ident => $module:ident :: $venue:ident),+ $(,)?) => {
        $(pub mod $module;)+

        /// Every supported venue. The discriminant is the venue's index in merges and
        /// summaries, and the last tie-break between equal levels.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        #[repr(u8)]
        pub enum VenueId { $($variant),+ }

        impl VenueId {
            pub const ALL: &'static [VenueId] = &[$(VenueId::$variant),+];

            pub fn name(self) -> &'static str {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::NAME),+ }
            }

            /// Decodes a frame with this venue's decoder (see [`Venue::decode`]).
            #[inline]
            pub fn decode<'a>(self, frame: &'a [u8], depth: usize, out: &mut TopBook) -> Result<Message<'a>, DecodeError> {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::decode(frame, depth, out)),+ }
            }

            /// See [`Venue::decode_binary`].
            #[inline]
            pub fn decode_binary<'a>(self, frame: &'a [u8], depth: usize, out: &mut TopBook) -> Result<Message<'a>, DecodeError> {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::decode_binary(frame, depth, out)),+ }
            }

            /// See [`Venue::decode_diff_binary`].
            #[inline]
            pub fn decode_diff_binary<'a>(self, frame: &'a [u8], max_levels: usize, out: &mut BookUpdate) -> Result<Message<'a>, DecodeError> {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::decode_diff_binary(frame, max_levels, out)),+ }
            }

            /// See [`Venue::BINARY_BOOKS`].
            pub fn binary_books(self) -> bool {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::BINARY_BOOKS),+ }
            }

            /// See [`Venue::API_KEY_HEADER`].
            pub fn api_key_header(self) -> Option<&'static str> {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::API_KEY_HEADER),+ }
            }

            /// The venue whose books this feed carries (see [`Venue::EXCHANGE`]).
            pub fn exchange(self) -> VenueId {
                let name = match self { $(VenueId::$variant => <$module::$venue as Venue>::EXCHANGE),+ };
                VenueId::from_name(name).unwrap_or(self)
            }

            /// See [`Venue::names_stream`].
            #[inline]
            pub fn names_stream(self, stream: &str, named: &[u8]) -> bool {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::names_stream(stream, named)),+ }
            }

            /// Encodes a book frame with this venue's encoder (see [`Simulated::encode_book`]).
            pub fn encode_book(self, stream: &str, book: &TopBook, price_decimals: u32, out: &mut Vec<u8>) {
                match self { $(VenueId::$variant => <$module::$venue as Simulated>::encode_book(stream, book, price_decimals, out)),+ }
            }

            /// See [`Venue::stream_name`].
            pub fn stream_name(self, symbol: &str, depth: usize) -> String {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::stream_name(symbol, depth)),+ }
            }

            /// See [`Venue::subscribe_frames`].
            pub fn subscribe_frames(self, streams: &[String], kind: StreamKind, depth: usize, first_id: u64) -> Vec<SubscribeRequest> {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::subscribe_frames(streams, kind, depth, first_id)),+ }
            }

            /// See [`Venue::unsubscribe_frames`].
            pub fn unsubscribe_frames(self, streams: &[String], kind: StreamKind, depth: usize) -> Vec<String> {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::unsubscribe_frames(streams, kind, depth)),+ }
            }

            /// See [`Venue::client_ping`].
            pub fn client_ping(self) -> Option<(std::time::Duration, &'static str)> {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::client_ping()),+ }
            }

            /// See [`Venue::endpoint`].
            pub fn endpoint(self, url: &str, symbol: &str) -> String {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::endpoint(url, symbol)),+ }
            }

            /// See [`Venue::spot_symbol`].
            pub fn spot_symbol(self, base: &str, quote: &str) -> String {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::spot_symbol(base, quote)),+ }
            }

            /// See [`Venue::check_symbol`].
            pub fn check_symbol(self, symbol: &str) -> Result<(), String> {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::check_symbol(symbol)),+ }
            }

            /// See [`Venue::sized_in_contracts`].
            pub fn sized_in_contracts(self, symbol: &str) -> bool {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::sized_in_contracts(symbol)),+ }
            }

            /// See [`Venue::MAX_STREAMS_PER_CONNECTION`].
            pub fn max_streams_per_connection(self) -> usize {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::MAX_STREAMS_PER_CONNECTION),+ }
            }

            /// See [`Venue::SNAPSHOT_STREAMS`].
            pub fn has_snapshot_streams(self) -> bool {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::SNAPSHOT_STREAMS),+ }
            }

            /// See [`Venue::SNAPSHOTS`].
            pub fn snapshot_source(self) -> SnapshotSource {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::SNAPSHOTS),+ }
            }

            /// See [`Venue::kept_depth`].
            pub fn kept_depth(self, requested: usize) -> Option<usize> {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::kept_depth(requested)),+ }
            }

            /// See [`Venue::checksum`].
            pub fn checksum(self, book: &DepthBook, decimals: WireDecimals) -> Option<u32> {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::checksum(book, decimals)),+ }
            }

            /// See [`Venue::checksum_after_change`].
            pub fn checksum_after_change(self, book: &DepthBook, decimals: WireDecimals, texts: &mut LevelTexts) -> Option<u32> {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::checksum_after_change(book, decimals, texts)),+ }
            }

            /// See [`Simulated::answer_request`].
            pub fn answer_request(self, request: &str) -> Option<Answer> {
                match self { $(VenueId::$variant => <$module::$venue as Simulated>::answer_request(request)),+ }
            }

            /// See [`Simulated::server_ping_interval`].
            pub fn server_ping_interval(self) -> Option<std::time::Duration> {
                match self { $(VenueId::$variant => <$module::$venue as Simulated>::server_ping_interval()),+ }
            }

            /// See [`Simulated::levels_on_stream`].
            pub fn levels_on_stream(self, stream: &str) -> usize {
                match self { $(VenueId::$variant => <$module::$venue as Simulated>::levels_on_stream(stream)),+ }
            }

            /// See [`Simulated::reconnect_request`].
            pub fn reconnect_request(self) -> Option<&'static str> {
                match self { $(VenueId::$variant => <$module::$venue as Simulated>::reconnect_request()),+ }
            }

            /// See [`Venue::SEQUENCE`].
            pub fn sequencing(self) -> &'static dyn Sequencing {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::SEQUENCE),+ }
            }

            /// See [`Simulated::next_event_ids`].
            pub fn next_event_ids(self, last_id: u64, changes: u64, now_us: u64) -> (u64, u64) {
                match self { $(VenueId::$variant => <$module::$venue as Simulated>::next_event_ids(last_id, changes, now_us)),+ }
            }

            /// See [`Simulated::initial_event_id`].
            pub fn initial_event_id(self, now_us: u64) -> u64 {
                match self { $(VenueId::$variant => <$module::$venue as Simulated>::initial_event_id(now_us)),+ }
            }

            /// See [`Venue::CONNECT_BUDGET`].
            pub fn connect_budget(self) -> ConnectBudget {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::CONNECT_BUDGET),+ }
            }

            /// See [`Venue::DEFAULT_URL`].
            pub fn default_url(self) -> &'static str {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::DEFAULT_URL),+ }
            }

            /// See [`Venue::DEFAULT_REST_URL`].
            pub fn default_rest_url(self) -> &'static str {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::DEFAULT_REST_URL),+ }
            }

            /// See [`Venue::diff_stream_name`].
            pub fn diff_stream_name(self, symbol: &str) -> String {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::diff_stream_name(symbol)),+ }
            }

            /// See [`Venue::diff_stream_symbol`].
            pub fn diff_stream_symbol(self, stream: &str) -> Option<String> {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::diff_stream_symbol(stream)),+ }
            }

            /// Whether `stream` is a diff stream.
            pub fn is_diff_stream(self, stream: &str) -> bool {
                self.diff_stream_symbol(stream).is_some()
            }

            /// Decodes a diff connection's frame (see [`Venue::decode_diff`]).
            #[inline]
            pub fn decode_diff<'a>(self, frame: &'a [u8], max_levels: usize, out: &mut BookUpdate) -> Result<Message<'a>, DecodeError> {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::decode_diff(frame, max_levels, out)),+ }
            }

            /// See [`Venue::decode_next_event`].
            pub fn decode_next_event<'a>(self, frame: &'a [u8], at: usize, max_levels: usize, out: &mut BookUpdate) -> Result<(&'a [u8], Option<usize>), DecodeError> {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::decode_next_event(frame, at, max_levels, out)),+ }
            }

            /// See [`Simulated::heartbeat`].
            pub fn heartbeat(self, counter: u64) -> Option<String> {
                match self { $(VenueId::$variant => <$module::$venue as Simulated>::heartbeat(counter)),+ }
            }

            /// See [`Simulated::number_message`].
            pub fn number_message(self, frame: &str, number: u64) -> Option<String> {
                match self { $(VenueId::$variant => <$module::$venue as Simulated>::number_message(frame, number)),+ }
            }

            /// See [`Venue::decode_snapshot`].
            pub fn decode_snapshot(self, body: &[u8], max_levels: usize, out: &mut BookUpdate) -> Result<(), DecodeError> {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::decode_snapshot(body, max_levels, out)),+ }
            }

            /// See [`Venue::snapshot_url`].
            pub fn snapshot_url(self, rest_base: &str, symbol: &str, limit: usize) -> String {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::snapshot_url(rest_base, symbol, limit)),+ }
            }

            /// See [`Venue::snapshot_symbol`].
            pub fn snapshot_symbol(self, url: &str) -> Option<String> {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::snapshot_symbol(url)),+ }
            }

            /// See [`Venue::snapshot_weight`].
            pub fn snapshot_weight(self, limit: usize) -> u32 {
                match self { $(VenueId::$variant => <$module::$venue as Venue>::snapshot_weight(limit)),+ }
            }

            /// See [`Simulated::encode_diff`].
            pub fn encode_diff(self, stream: &str, update: &BookUpdate, checksum: Option<u32>, price_decimals: u32, unix_ms: u64, out: &mut Vec<u8>) {
                match self { $(VenueId::$variant => <$module::$venue as Simulated>::encode_diff(stream, update, checksum, price_decimals, unix_ms, out)),+ }
            }

            /// See [`Simulated::encode_snapshot`].
            pub fn encode_snapshot(self, stream: &str, snapshot: &BookUpdate, on: SnapshotSource, checksum: Option<u32>, price_decimals: u32, out: &mut Vec<u8>) {
                match self { $(VenueId::$variant => <$module::$venue as Simulated>::encode_snapshot(stream, snapshot, on, checksum, price_decimals, out)),+ }
            }
        }
    };
}

venues! {
    Binance => binance::Binance,
    Bitstamp => bitstamp::Bitstamp,
    Kraken => kraken::Kraken,
    Bybit => bybit::Bybit,
    Okx => okx::Okx,
    CoinbaseExchange => coinbase_exchange::CoinbaseExchange,
    Coinbase => coinbase::Coinbase,
    BinanceSbe => binance_sbe::BinanceSbe,
}

const _: () = assert!(VenueId::ALL.len() <= MAX_VENUES);

impl VenueId {
    pub fn index(self) -> usize {
        self as usize
    }

    pub fn from_name(name: &str) -> Option<VenueId> {
        VenueId::ALL
            .iter()
            .copied()
            .find(|venue| venue.name() == name)
    }
}

impl std::fmt::Display for VenueId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

// ---- RFC 3339 times, as venues stamp their messages (Kraken, Coinbase) ----

/// `2026-08-12T19:28:08.631028Z` as unix microseconds (UTC, up to 6 fractional digits).
pub(crate) fn unix_micros(text: &[u8]) -> Option<u64> {
    let number = |range: std::ops::Range<usize>| -> Option<u64> {
        let digits = text.get(range)?;
        digits.iter().try_fold(0u64, |value, &byte| {
            byte.is_ascii_digit()
                .then(|| value * 10 + u64::from(byte - b'0'))
        })
    };
    let separators = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')];
    if separators
        .iter()
        .any(|&(at, byte)| text.get(at) != Some(&byte))
    {
        return None;
    }
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    if !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return None;
    }
    let rest = text.get(19..)?.strip_suffix(b"Z")?;
    let micros = match rest {
        [] => 0,
        [b'.', fraction @ ..] if (1..=6).contains(&fraction.len()) => {
            number(20..20 + fraction.len())? * 10u64.pow(6 - fraction.len() as u32)
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    Some(((days * 24 + hour) * 60 + minute) * 60_000_000 + second * 1_000_000 + micros)
}

/// Days from 1970-01-01 to a date of the proleptic Gregorian calendar, from 1970 on
/// (Howard Hinnant's `days_from_civil`).
fn days_from_civil(year: u64, month: u64, day: u64) -> u64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year / 400;
    let year_of_era = year - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    (era * 146_097 + day_of_era).saturating_sub(719_468)
}

/// Unix microseconds as `2026-08-12T19:28:08.631028Z` (the simulator's timestamps).
pub(crate) fn write_timestamp(micros: u64, out: &mut Vec<u8>) {
    use std::io::Write;
    let (days, rest) = (micros / 86_400_000_000, micros % 86_400_000_000);
    // Howard Hinnant's `civil_from_days`.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    let (seconds, fraction) = (rest / 1_000_000, rest % 1_000_000);
    write!(
        out,
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{fraction:06}Z",
        seconds / 3600,
        seconds / 60 % 60,
        seconds % 60
    )
    .expect("writing to a Vec cannot fail");
}

/// A snapshot's side must be strictly sorted best first.
pub(crate) fn check_sorted(side: Side, levels: &[Level]) -> Result<(), DecodeError> {
    match levels
        .windows(2)
        .all(|pair| side.is_better(pair[0].price, pair[1].price))
    {
        true => Ok(()),
        false => Err(DecodeError::Unsorted(side)),
    }
}

/// Tracks which of a message's required keys were seen, refusing duplicates.
#[derive(Default)]
pub(crate) struct Seen(u32);

impl Seen {
    /// Marks `key` (bit `bit`) as seen; a second sighting is an error.
    pub(crate) fn mark(&mut self, bit: u32, key: &'static str) -> Result<(), DecodeError> {
        if self.0 & (1 << bit) != 0 {
            return Err(DecodeError::DuplicateKey(key));
        }
        self.0 |= 1 << bit;
        Ok(())
    }

    pub(crate) fn has(&self, bit: u32) -> bool {
        self.0 & (1 << bit) != 0
    }

    /// Whether any of `keys` (bit, name) was seen.
    pub(crate) fn any(&self, keys: &[(u32, &'static str)]) -> bool {
        keys.iter().any(|&(bit, _)| self.has(bit))
    }

    /// The first of `keys` (bit, name) not seen, as the error naming it.
    pub(crate) fn require(&self, keys: &[(u32, &'static str)]) -> Result<(), DecodeError> {
        match keys.iter().find(|&&(bit, _)| !self.has(bit)) {
            Some(&(_, missing)) => Err(DecodeError::MissingKey(missing)),
            None => Ok(()),
        }
    }
}

/// For the layout fast paths' proptests (`decode_usual_layout` in the venue modules).
#[cfg(test)]
pub(crate) mod layout_edits {
    use proptest::prelude::*;

    /// One edit of a recorded frame (a byte replaced, inserted or removed), mostly where
    /// the layouts' literals and values are: the first and last 80 bytes, and around the
    /// second side's key (`"asks"`, or `"a"` in a Binance diff event) or a Coinbase event's
    /// levels (`"updates"`); else anywhere.
    pub(crate) fn edit() -> impl Strategy<Value = (usize, usize, usize, u8)> {
        (
            0usize..4,
            0usize..80,
            0usize..3,
            proptest::sample::select(&b" \t\n,:}]{[\"0159.abe-"[..]),
        )
    }

    pub(crate) fn apply(
        frame: &mut Vec<u8>,
        (near, offset, kind, byte): (usize, usize, usize, u8),
    ) {
        let asks = frame
            .windows(6)
            .position(|w| w == b"\"asks\"")
            .or_else(|| frame.windows(4).position(|w| w == b"\"a\":"))
            .or_else(|| frame.windows(9).position(|w| w == b"\"updates\""))
            .expect("a book frame");
        // At most the end (an insertion there appends): a diff event is short.
        let at = match near {
            0 => offset,
            1 => frame.len().saturating_sub(offset),
            2 => asks.saturating_sub(40) + offset,
            _ => offset * (frame.len() / 80),
        }
        .min(frame.len());
        let last = frame.len() - 1;
        match kind {
            0 => frame[at.min(last)] = byte,
            1 => frame.insert(at, byte),
            _ => {
                frame.remove(at.min(last));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_unix_microseconds_and_back() {
        let micros = unix_micros(b"2026-08-12T19:28:08.631028Z").unwrap();
        // 2026-08-12 is day 20,677 since 1970-01-01.
        assert_eq!(
            micros,
            ((20_677 * 24 + 19) * 3600 + 28 * 60 + 8) * 1_000_000 + 631_028
        );
        let mut text = Vec::new();
        write_timestamp(micros, &mut text);
        assert_eq!(text, b"2026-08-12T19:28:08.631028Z");
        assert_eq!(unix_micros(b"1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            unix_micros(b"2024-02-29T00:00:00.5Z"),
            Some(19_782 * 86_400_000_000 + 500_000)
        );
        for bad in [
            &b"2026-08-12 19:28:08Z"[..],
            b"2026-13-12T19:28:08Z",
            b"2026-08-12T19:28:08.1234567Z",
            b"2026-08-12T19:28:08",
        ] {
            assert_eq!(unix_micros(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    /// What tools configure a pair by is a valid spot symbol of each venue.
    #[test]
    fn every_venue_names_a_spot_pair_by_a_valid_symbol() {
        for &venue in VenueId::ALL {
            for (base, quote) in [("ETH", "BTC"), ("I12", "BTC")] {
                let symbol = venue.spot_symbol(base, quote);
                assert_eq!(venue.check_symbol(&symbol), Ok(()), "{venue}: {symbol}");
                assert!(!venue.sized_in_contracts(&symbol), "{venue}: {symbol}");
            }
        }
    }

    /// Replay finds a recording's symbols by their diff streams' names: a snapshot
    /// stream's book is never taken for a diff stream's.
    #[test]
    fn every_venue_names_the_symbol_of_its_diff_stream_and_no_other() {
        for &venue in VenueId::ALL {
            let symbol = venue
                .diff_stream_symbol(&venue.diff_stream_name("EthBtc"))
                .unwrap_or_else(|| panic!("{venue}: its own diff stream"));
            assert!(symbol.eq_ignore_ascii_case("ethbtc"), "{venue}: {symbol}");
            assert_eq!(venue.diff_stream_symbol(""), None, "{venue}");
            if venue.has_snapshot_streams() {
                let mut book = TopBook::default();
                let level = Level {
                    price: crate::fixed::FixedPoint::from_raw(100_000_000),
                    amount: crate::fixed::FixedPoint::from_raw(1),
                };
                book.bids.push(level);
                let mut frame = Vec::new();
                venue.encode_book(&venue.stream_name("ETHBTC", 10), &book, 8, &mut frame);
                let mut update = BookUpdate::default();
                if let Ok(Message::Book { stream }) = venue.decode_diff(&frame, 100, &mut update) {
                    let stream = std::str::from_utf8(stream).unwrap();
                    assert_eq!(venue.diff_stream_symbol(stream), None, "{venue}");
                }
            }
        }
    }
}
