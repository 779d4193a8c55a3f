//! The venue contract: a venue's facts in one constant descriptor ([`VenueFacts`]), its
//! behaviour in a few small traits by concern, and the types they speak in.
//!
//! | trait | what | called |
//! |---|---|---|
//! | [`Decode`] | frames → books, typed errors | per frame: enum dispatch (`VenueId`), inlined |
//! | [`Checksum`] | the venue's book checksum | per diff message: enum dispatch |
//! | [`Streams`] | stream and symbol names, (un)subscribe frames, pings, endpoints | at connect: `&dyn` |
//! | [`Snapshots`] | where a diff book starts from, what a snapshot costs | per resync: `&dyn` |
//! | [`Simulated`] | the simulator's side: encoders, answers, event ids | in the simulator: `&dyn` |
//!
//! The sync rules of a diff stream are the venue's [`Sequencing`], named by its facts.

use crate::book::diff_sync::Sequencing;
use crate::book::{BookUpdate, DepthBook, TopBook, WireDecimals};
use crate::config::ApiKey;
use crate::json::DecodeError;
use crate::units::Currency;

use super::LevelTexts;

/// What a venue is, where it is and what it allows: plain data, one constant per venue
/// (`Venue::FACTS`), read through `VenueId::facts`.
pub struct VenueFacts {
    /// The name used in config, metrics and published levels.
    pub name: &'static str,
    /// The exchange whose books this feed carries: the venue's own name, or the name of
    /// the venue that is another feed of the same books (the simulator serves both from
    /// one market).
    pub exchange: &'static str,
    /// The venue's public market-data WebSocket (`venues.<name>.url` overrides it).
    pub default_url: &'static str,
    /// Where the venue's REST API is (`venues.<name>.rest_url` overrides it).
    pub default_rest_url: &'static str,
    /// The venue's limit on connection attempts, which every reconnect respects.
    pub connect_budget: ConnectBudget,
    /// How long the venue keeps a connection open before it closes it, where it says
    /// (Binance: 24 hours): the readers renew theirs before, a new connection syncing every
    /// book before the old one closes.
    pub max_connection_age: Option<std::time::Duration>,
    /// The most streams one connection may carry: a venue's streams are spread over as
    /// many connections as this asks for.
    pub max_streams_per_connection: usize,
    /// The venue's limit on subscriptions from one IP, where it has one: a configuration
    /// (a shard's share of it) naming more of its symbols is refused.
    pub max_subscriptions: Option<usize>,
    /// Whether the venue has top-of-book snapshot streams (`mode = "snapshot"`); without
    /// them, `diff` is its only mode.
    pub snapshot_streams: bool,
    /// Whether the venue has diff streams (`mode = "diff"`); without them, `snapshot` is
    /// its only mode (Hyperliquid, whose every frame is a whole book), and the diff-mode
    /// facts below (`snapshots`, `rest_budget`, `sequencing`) are never used.
    pub diff_streams: bool,
    /// Whether the venue sends its books in binary frames (Binance SBE), read by
    /// [`Decode::decode_binary`] and [`Decode::decode_diff_binary`]; its text frames are
    /// still read by `decode` and `decode_diff` (subscription answers). A binary frame
    /// from any other venue is a bad frame.
    pub binary_books: bool,
    /// What the venue takes to identify its client (`venues.<name>.api_key_env` or
    /// `api_key_file`).
    pub credentials: Credentials,
    /// Where diff-mode books start from.
    pub snapshots: SnapshotSource,
    /// The venue's published limit on the REST requests a snapshot takes, where its
    /// snapshots come from REST. The snapshot scheduler keeps the configured budget
    /// (`snapshot_weight_per_minute`, `snapshot_spacing_ms`), which the configuration does
    /// not check against this; the conformance table checks the requests against it.
    pub rest_budget: Option<RestBudget>,
    /// How the diff stream is sequenced: the venue's sync rules (`book/diff_sync.rs` applies them).
    pub sequencing: &'static dyn Sequencing,
}

/// An exchange's wire protocol, for the service: its facts and its behaviour. The
/// registry (`venues!` in `venue/mod.rs`) also takes the venue's [`Simulated`] side.
pub trait Venue: Decode + Checksum + Streams + Snapshots {
    const FACTS: VenueFacts;
}

/// Reading a venue's frames. Pure: bytes in, book or typed error out; no I/O, no clock,
/// no allocation, no panic on any input. On the hot path, so `VenueId` calls these by
/// enum dispatch (each venue's decoder inlined into its arm), never through a vtable.
///
/// Each decoder writes the venue's own time of a book or event into `exchange_time_ns`
/// where the frame carries it (which of its times, its `mod.rs` says), exactly, as ns
/// since the Unix epoch; `VenueId`'s calls zero it first.
pub trait Decode {
    /// Decodes one text frame, writing a book message's top `depth` levels per side into
    /// `out`. On error `out` holds garbage and must not be published. A venue without
    /// snapshot streams (`VenueFacts::snapshot_streams`) has none to decode.
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

    /// Decodes one binary frame of a snapshot connection, as [`Decode::decode`] a text one.
    fn decode_binary<'a>(
        frame: &'a [u8],
        depth: usize,
        out: &mut TopBook,
    ) -> Result<Message<'a>, DecodeError> {
        let _ = (frame, depth, out);
        Err(DecodeError::UnknownMessage("binary frame"))
    }

    /// Decodes one text frame of a diff connection. `Message::Book` means `out` holds one
    /// diff event: all its levels in wire order (zero amounts delete), at most
    /// `max_levels` a side. On error `out` holds garbage.
    /// A venue without diff streams (`VenueFacts::diff_streams`) has none to decode.
    fn decode_diff<'a>(
        frame: &'a [u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<Message<'a>, DecodeError> {
        let _ = (frame, max_levels, out);
        Err(DecodeError::UnknownMessage(
            "frame outside snapshot mode (the venue has no diff streams)",
        ))
    }

    /// Decodes one binary frame of a diff connection, as [`Decode::decode_diff`] a text one.
    fn decode_diff_binary<'a>(
        frame: &'a [u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<Message<'a>, DecodeError> {
        let _ = (frame, max_levels, out);
        Err(DecodeError::UnknownMessage("binary frame"))
    }

    /// The event at byte `at` of a frame that [`Decode::decode_diff`] read as
    /// [`Message::Books`], into `out` as `decode_diff` writes one (the frame's time, in
    /// `exchange_time_ns`, stays): its stream, and where the next event starts if one
    /// follows. A venue whose frames each hold one event has none.
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
    /// An in-band venue (`SnapshotSource::InBand`) fetches none, unless its books are
    /// audited (`Snapshots::audited`).
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

    /// What a connection finds the stream `stream` by: a book message is of the stream
    /// whose key equals [`Decode::named_key`] of what the message names (what
    /// [`Message::Book`]'s `stream` holds). The stream's name, unless the venue's messages
    /// name their books otherwise (Binance SBE: by the symbol alone).
    fn stream_key(stream: &str) -> Box<[u8]> {
        Box::from(stream.as_bytes())
    }

    /// The key of a book message naming `named` (see [`Decode::stream_key`]), written into
    /// `buffer` where it is not `named` itself.
    #[inline]
    fn named_key<'a>(named: &'a [u8], _buffer: &'a mut [u8; NAMED_KEY_BYTES]) -> &'a [u8] {
        named
    }
}

/// Room for a key [`Decode::named_key`] writes (a Binance SBE symbol's length is a byte).
pub const NAMED_KEY_BYTES: usize = 256;

/// The venue's checksum of a diff book, where it has one; computed after every message,
/// so enum-dispatched like [`Decode`]. A venue without one implements it empty.
pub trait Checksum {
    /// Whether the venue's book messages carry its checksum (Kraken's: an update without
    /// one is a decode error, and a snapshot without one, as Kraken sends a thin book's,
    /// is counted); false where the checksum is optional or absent.
    const ON_EVERY_BOOK: bool = false;

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
}

/// Names and subscriptions: what a connection asks the venue for, and how the venue names
/// symbols, streams and endpoints. Used when connecting and planning, through `&dyn`.
pub trait Streams: Sync {
    /// The stream (channel) this venue publishes `symbol`'s book on, for `depth` levels.
    fn stream_name(&self, symbol: &str, depth: usize) -> String;

    /// The diff stream of `symbol`.
    fn diff_stream_name(&self, symbol: &str) -> String;

    /// The symbol whose diff stream `stream` is (the inverse of `diff_stream_name`, up to
    /// letter case), or `None` for any other stream.
    fn diff_stream_symbol(&self, stream: &str) -> Option<String>;

    /// Whether `stream` is a diff stream.
    fn is_diff_stream(&self, stream: &str) -> bool {
        self.diff_stream_symbol(stream).is_some()
    }

    /// The requests that subscribe an open connection to `streams`, of `kind`, of books
    /// of `depth` levels a side (where the venue takes a depth). Requests the venue
    /// acknowledges by id are numbered from `first_id` on.
    fn subscribe_frames(
        &self,
        streams: &[String],
        kind: StreamKind,
        depth: usize,
        first_id: u64,
    ) -> Vec<SubscribeRequest>;

    /// The text frames that end the subscriptions to `streams` (as `subscribe_frames`
    /// made them).
    fn unsubscribe_frames(&self, streams: &[String], kind: StreamKind, depth: usize)
    -> Vec<String>;

    /// Frames a new connection sends before its subscriptions, none of them awaited (a
    /// venue's own keep-alive set-up, a channel of its notices): none for most venues.
    fn opening_frames(&self) -> Vec<String> {
        Vec::new()
    }

    /// The request that authorises a connection with `credentials`, where the venue takes
    /// them so (`Credentials::AuthRequest`): sent first, its answer awaited before any other
    /// frame.
    fn auth_request(&self, credentials: &ApiKey) -> Option<AuthRequest> {
        let _ = credentials;
        None
    }

    /// The answer to [`Streams::auth_request`] that `frame` is, if it is that answer.
    fn auth_answer(&self, frame: &[u8]) -> Option<AuthAnswer> {
        let _ = frame;
        None
    }

    /// The diff stream of `symbol` that an authorised connection follows, where the venue
    /// has one apart from its public `diff_stream_name` (Deribit's unthrottled `raw`).
    fn authorised_diff_stream_name(&self, symbol: &str) -> Option<String> {
        let _ = symbol;
        None
    }

    /// Where the venue hands out each connection's address and token (KuCoin's
    /// `bullet-public`): the path under its REST URL that is POSTed before every
    /// connection, whose answer [`Streams::token_connection`] reads; empty where the
    /// configured URL is connected to as it is.
    fn token_path(&self) -> &'static str {
        ""
    }

    /// The connection the venue's answer to its token request describes, for a
    /// connection named `connect_id`; or why the answer cannot be used.
    fn token_connection(&self, body: &[u8], connect_id: &str) -> Result<TokenConnection, String> {
        let _ = (body, connect_id);
        Err("the venue hands out no tokens".to_owned())
    }

    /// Whether the venue greets each connection before it takes requests (KuCoin's
    /// `welcome`): the reader sends nothing until [`Streams::is_welcome`] reads it.
    fn awaits_welcome(&self) -> bool {
        false
    }

    /// Whether `frame` is the venue's greeting of a new connection.
    fn is_welcome(&self, frame: &[u8]) -> bool {
        let _ = frame;
        false
    }

    /// An application-level ping the venue wants from its clients, and how often; `None`
    /// where WebSocket pings, or the venue's own heartbeats, keep the connection alive.
    /// [`PING_TIME`] in it is replaced by the Unix time in seconds when it is sent.
    fn client_ping(&self) -> Option<(std::time::Duration, &'static str)> {
        None
    }

    /// The URL of the connection that serves `symbol`, from the venue's configured `url`:
    /// that URL itself where one endpoint serves every symbol.
    fn endpoint(&self, url: &str, symbol: &str) -> String {
        let _ = symbol;
        url.to_owned()
    }

    /// The venue's symbol for the pair `base`/`quote` (upper-case currency codes), sized
    /// in the base coin: what tools and generated configurations name the pair by. `None`
    /// where the venue has no such book (Binance COIN-M, whose every contract is inverse;
    /// Gate's futures, sized in contracts).
    fn spot_symbol(&self, base: &str, quote: &str) -> Option<String>;

    /// Why `symbol` cannot name one of the venue's books (a configuration error), if it
    /// cannot.
    fn check_symbol(&self, symbol: &str) -> Result<(), String> {
        let _ = symbol;
        Ok(())
    }

    /// The currency `symbol`'s prices are in, where the symbol says, for an instrument
    /// whose base currency is `base` (upper-case): `None` where it cannot be read from
    /// the symbol (an instrument then names it in `quotes`).
    fn quote_currency(&self, symbol: &str, base: &str) -> Option<Currency>;

    /// Whether `symbol`'s sizes are contracts (a derivative's): its books are merged as
    /// an amount of the base currency, each size times the instrument's configured
    /// contract size (`contract_sizes`), which such a symbol requires.
    fn sized_in_contracts(&self, symbol: &str) -> bool {
        let _ = symbol;
        false
    }

    /// Where the venue lists what can be subscribed, for a venue that drops a whole
    /// connection, every other subscription on it included, over a name it does not list
    /// (Hyperliquid): the path under its REST URL that [`Streams::listing_requests`] are
    /// POSTed to; empty where a refused subscription is all a wrong name costs.
    fn listing_path(&self) -> &'static str {
        ""
    }

    /// The JSON bodies that ask the venue's listing about `symbols` (one a kind of
    /// symbol the venue lists apart).
    fn listing_requests(&self, symbols: &[&str]) -> Vec<String> {
        let _ = symbols;
        Vec::new()
    }

    /// The names the venue's answer to the listing request `request` lists.
    fn listed_names(&self, request: &str, body: &[u8]) -> Result<Vec<String>, String> {
        let _ = (request, body);
        Ok(Vec::new())
    }

    /// Whether `symbol` is an inverse (coin-margined) contract: sized in contracts of a
    /// value in its quote currency (USD), not of the base coin. Its configured contract
    /// size is that value, and it merges only into instruments that count amounts in
    /// their currency (`unit = "quote"`): its amount in the base coin would be a division
    /// by the price, not exact.
    fn inverse(&self, symbol: &str) -> bool {
        let _ = symbol;
        false
    }
}

/// Diff mode's snapshots (`mode = "diff"`): where a full-depth book starts from, what it
/// costs, and how deep the venue keeps it. The buffering and joining are `book/diff_sync.rs`'s.
pub trait Snapshots: Sync {
    /// The levels a side of a diff book the venue maintains when subscribed for
    /// `requested`: `Some` where it sends only its top N and no deletes for levels pushed
    /// out of them (the book is cut to that after each message); `None`: full depth.
    fn kept_depth(&self, requested: usize) -> Option<usize> {
        let _ = requested;
        None
    }

    /// The REST URL of `symbol`'s snapshot with `limit` levels a side (where the venue
    /// takes a limit).
    fn snapshot_url(&self, rest_base: &str, symbol: &str, limit: usize) -> String;

    /// A REST snapshot a market-data archive took and stored among the venue's messages
    /// (Tardis.dev's `"generated": true` messages): its symbol and the response's body.
    /// `None` for any other message, and where the venue's snapshots come on its stream.
    fn archived_snapshot(&self, message: &str) -> Option<(String, String)> {
        let _ = message;
        None
    }

    /// The symbol a snapshot URL asks for (the simulator's REST server; matching recorded
    /// REST responses to streams in a replay); `None` for an in-band venue.
    fn snapshot_symbol(&self, url: &str) -> Option<String> {
        let _ = url;
        None
    }

    /// What one snapshot request of `limit` levels costs against the venue's budget: an
    /// in-band venue's is a resubscription, counted as one request.
    fn snapshot_weight(&self, limit: usize) -> u32 {
        let _ = limit;
        1
    }

    /// The levels a side a REST snapshot of `limit` levels holds where that may be less
    /// than the venue's whole book (KuCoin's public top 100, its whole book needing an
    /// API key): a book built from one is published only while it knows the published
    /// depth on each side (`BookSync::proves`), and rebuilt from a new snapshot before.
    /// `None`: the snapshot is as deep as the book is kept.
    fn partial_snapshot_levels(&self, limit: usize) -> Option<usize> {
        let _ = limit;
        None
    }

    /// The REST URL of `symbol`'s whole book, where the venue's public snapshot is only its
    /// top (`partial_snapshot_levels`) and an API key gets the whole (KuCoin's, its
    /// requests signed: [`Snapshots::signed_headers`]); asked for when a key is configured.
    fn whole_book_url(&self, rest_base: &str, symbol: &str) -> Option<String> {
        let _ = (rest_base, symbol);
        None
    }

    /// The headers that sign the request of `url` at `unix_ms` with `key`, where the venue's
    /// whole book needs a signed request (`Credentials::SignedRest`).
    fn signed_headers(&self, key: &ApiKey, url: &str, unix_ms: u64) -> Vec<(&'static str, String)> {
        let _ = (key, url, unix_ms);
        Vec::new()
    }

    /// How many levels a side the snapshot request `url` asks for, where it says: what the
    /// simulator's REST server answers with (its `limit`, by default).
    fn asked_levels(&self, url: &str) -> Option<usize> {
        let query = url.split_once('?')?.1;
        let limit = query
            .split('&')
            .find_map(|pair| pair.strip_prefix("limit="));
        limit?.parse().ok()
    }

    /// Whether the venue's diff stream cannot show a lost event, so that its books are
    /// audited against its REST snapshots (`feed/core/audit.rs`, `venues.<name>.audit_every_ms`):
    /// [`Snapshots::snapshot_url`] is then its REST book, and `Decode::decode_snapshot`
    /// reads it, in-band venue or not.
    fn audited(&self) -> bool {
        false
    }
}

/// The simulator's side of a venue: what the embedded exchange simulator (`sim/`) serves
/// in the venue's own protocol, and what tests and benches build frames with. Apart from
/// [`Venue`], which is what the service needs to read the venue; each venue writes it in
/// its folder's `sim.rs`.
pub trait Simulated: Sync {
    /// Appends `book` to `out` as this venue's book frame for `stream`, byte for byte in
    /// the recorded wire format (prices with `price_decimals` digits where exact). The
    /// simulator serves these; tests and benches decode them.
    fn encode_book(&self, stream: &str, book: &TopBook, price_decimals: u32, out: &mut Vec<u8>);

    /// What the venue does with `request` (a subscription, an unsubscription, an
    /// application ping), if it knows it.
    fn answer_request(&self, request: &str) -> Option<Answer>;

    /// How often the venue sends WebSocket pings, if it does (most keep connections alive
    /// with their own heartbeats, or the client's pings).
    fn server_ping_interval(&self) -> Option<std::time::Duration> {
        None
    }

    /// The frame by which the venue asks clients to reconnect, where it has one.
    fn reconnect_request(&self) -> Option<&'static str> {
        None
    }

    /// How many levels a side the venue sends on `stream`.
    fn levels_on_stream(&self, stream: &str) -> usize;

    /// Where the venue's book sequence is its time (Bitstamp's `microtimestamp`,
    /// Hyperliquid's `time`): how many sequence units a second. The simulator then numbers
    /// its books by its clock (`encode_book` writes `venue_sequence` as the time); other
    /// venues' books carry the clock in `exchange_time_ns`.
    fn sequence_per_second(&self) -> Option<u64> {
        None
    }

    /// Appends one diff event frame for `stream` in the recorded wire format, carrying
    /// `checksum` (of the book after the event) where the venue sends one. The diff-stream
    /// methods below do nothing for a venue without diff streams
    /// (`VenueFacts::diff_streams`), whose simulator serves none.
    fn encode_diff(
        &self,
        stream: &str,
        update: &BookUpdate,
        checksum: Option<u32>,
        price_decimals: u32,
        unix_ms: u64,
        out: &mut Vec<u8>,
    ) {
        let _ = (stream, update, checksum, price_decimals, unix_ms, out);
    }

    /// Appends a snapshot of `stream` in the recorded format, as sent `on`: a REST body
    /// ([`SnapshotSource::Rest`]) or a WebSocket frame on the stream
    /// ([`SnapshotSource::InBand`]), carrying `checksum` where the venue sends one.
    fn encode_snapshot(
        &self,
        stream: &str,
        snapshot: &BookUpdate,
        on: SnapshotSource,
        checksum: Option<u32>,
        price_decimals: u32,
        out: &mut Vec<u8>,
    ) {
        let _ = (stream, snapshot, on, checksum, price_decimals, out);
    }

    /// The ids of the diff event after `last_id` that changes `changes` levels at
    /// `now_us` (unix microseconds), as the venue numbers them.
    fn next_event_ids(&self, last_id: u64, changes: u64, now_us: u64) -> (u64, u64) {
        let _ = (changes, now_us);
        (last_id + 1, last_id + 1)
    }

    /// The id a new diff stream's book starts at.
    fn initial_event_id(&self, now_us: u64) -> u64 {
        let _ = now_us;
        1
    }

    /// The venue's heartbeat message on a subscribed connection, the `counter`th, where
    /// it sends one a second for the whole connection (Coinbase Advanced Trade's
    /// `heartbeats` channel); `None` where it sends none.
    fn heartbeat(&self, counter: u64) -> Option<String> {
        let _ = counter;
        None
    }

    /// Whether the venue acknowledges a subscription its connection already holds and
    /// sends no new snapshot for it (Deribit): a book is subscribed again for its snapshot
    /// only after an unsubscription.
    fn repeated_subscription_is_ignored(&self) -> bool {
        false
    }

    /// Whether the venue closes a connection whose client did not answer its last
    /// heartbeat before the next one (Deribit's `test_request`, answered by `public/test`,
    /// which [`Simulated::answer_request`] marks as the client's ping).
    fn heartbeat_wants_answer(&self) -> bool {
        false
    }

    /// Whether a REST request of `path_and_query`, whose headers `header` reads, is signed as
    /// the venue signs with `secret` and `passphrase` (`Credentials::SignedRest`): the
    /// simulator's check of what `Snapshots::signed_headers` writes, written apart from it.
    fn is_signed(
        &self,
        header: &dyn Fn(&str) -> Option<String>,
        path_and_query: &str,
        secret: &str,
        passphrase: &str,
    ) -> bool {
        let _ = (header, path_and_query, secret, passphrase);
        false
    }

    /// The venue's answer to its token request (`Streams::token_path`), naming `url` (the
    /// simulator's WebSocket for the venue) and `token`; `None` where it hands out none.
    fn token_answer(&self, url: &str, token: &str) -> Option<String> {
        let _ = (url, token);
        None
    }

    /// The frame the venue greets a new connection named `connect_id` with, where it greets
    /// one (`Streams::awaits_welcome`).
    fn welcome(&self, connect_id: &str) -> Option<String> {
        let _ = connect_id;
        None
    }

    /// The venue's answer to the listing request `request` (`Streams::listing_requests`)
    /// of a venue that lists `names`; `None` for a request it would not understand.
    fn listing_answer(&self, request: &str, names: &[String]) -> Option<String> {
        let _ = (request, names);
        None
    }

    /// `frame` as the `number`th message of its connection, where the venue numbers every
    /// message it sends on one (`BookUpdate::message_number`): the simulator numbers each
    /// frame as it sends it. `None`: frames go out as encoded.
    fn number_message(&self, frame: &str, number: u64) -> Option<String> {
        let _ = (frame, number);
        None
    }
}

/// A venue's limit on connection attempts: at most `attempts` per `per`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectBudget {
    pub attempts: u32,
    pub per: std::time::Duration,
}

/// A venue's limit on REST requests: at most `weight` (`Snapshots::snapshot_weight` a
/// request) per `per`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RestBudget {
    pub weight: u32,
    pub per: std::time::Duration,
}

/// What a venue takes to identify its client, read from `venues.<name>.api_key_env` or
/// `api_key_file` (`config::ApiKey`, never logged nor recorded).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Credentials {
    /// Nothing: its market data is public.
    None,
    /// An API key, required, in this header of the WebSocket upgrade (Binance SBE).
    UpgradeHeader(&'static str),
    /// Optional `client_id:client_secret`: with them, each connection is authorised by a
    /// request before anything else is sent ([`Streams::auth_request`]) and follows the
    /// venue's authorised diff streams ([`Streams::authorised_diff_stream_name`]);
    /// without them, its public ones (Deribit's `raw` and `100ms` books).
    AuthRequest,
    /// Optional `key:secret:passphrase`: with them, REST snapshots are the venue's whole
    /// book ([`Snapshots::whole_book_url`]), each request signed
    /// ([`Snapshots::signed_headers`]); without them, its public top
    /// ([`Snapshots::partial_snapshot_levels`]).
    SignedRest,
}

impl Credentials {
    /// The upgrade header carrying the API key, where the venue takes it so.
    pub fn upgrade_header(self) -> Option<&'static str> {
        match self {
            Credentials::UpgradeHeader(header) => Some(header),
            Credentials::None | Credentials::AuthRequest | Credentials::SignedRest => None,
        }
    }
}

/// Where a connection goes and how it is kept alive, as the venue's answer to its token
/// request says ([`Streams::token_connection`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenConnection {
    /// The URL connected to, the token in it.
    pub url: String,
    /// The same URL as a recording keeps it, the token left out.
    pub recorded_url: String,
    /// How often the venue wants the client's ping, where it says.
    pub ping_every: Option<std::time::Duration>,
}

/// A request that authorises a connection ([`Streams::auth_request`]).
pub struct AuthRequest {
    /// What is sent: the secret in it.
    pub frame: String,
    /// What a recording keeps of it: the same request, the secret left out.
    pub recorded: String,
}

/// The venue's answer to an [`AuthRequest`] ([`Streams::auth_answer`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthAnswer {
    /// The connection is authorised: what a recording keeps of the answer (its tokens
    /// left out), and how long the authorisation lasts, where the venue says.
    Authorised {
        recorded: String,
        lifetime: Option<std::time::Duration>,
    },
    /// Refused: the venue's reason (Deribit's `invalid_credentials`).
    Refused(String),
}

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
    /// The request authorises the connection (Deribit's `public/auth`): the venue's
    /// answer where it refuses the credentials instead (`Simulator::refuse_credentials`).
    pub authorises: Option<String>,
    /// The request subscribes streams only an authorised connection gets: the venue's
    /// answer to a connection not authorised instead.
    pub unauthorised: Option<String>,
}

/// What one frame from a venue said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Message<'a> {
    /// The output book now holds the venue's complete top of book for the stream named
    /// `stream` (Binance combined stream name, Bitstamp channel; empty on a raw stream).
    Book { stream: &'a [u8] },
    /// A frame of several books' events (Coinbase Advanced Trade's `events`): the output
    /// holds the first, `stream`'s; the next starts at byte `next` of the frame, for
    /// [`Decode::decode_next_event`]. The decoder has checked the whole frame.
    Books { stream: &'a [u8], next: usize },
    /// The venue confirmed (or refused) a subscription: `acked` names which.
    SubscribeResult { accepted: bool, acked: Acked<'a> },
    /// The venue asks the client to reconnect (Binance `serverShutdown`, Bitstamp
    /// `bts:request_reconnect`).
    Reconnect,
    /// The venue asks for an answer on the connection, or it closes it (Deribit's
    /// heartbeat `test_request`): this frame, sent back at once. No book data.
    Answer(&'static str),
    /// An application-level heartbeat (Kraken's, both Coinbase feeds' heartbeat
    /// channels). Not book data: a heartbeat naming one product, or the connection, says
    /// nothing of another subscription, and the read-idle watchdog must still find a dead
    /// one.
    Heartbeat,
    /// A well-formed message this decoder has no use for (other event types).
    Ignored,
    /// A message of the book named `stream` that cannot be held: a number beyond what a
    /// `FixedPoint` keeps. That book alone is out of sync (a frame whose book is not
    /// known costs every book of its connection).
    Unreadable {
        stream: &'a [u8],
        error: DecodeError,
    },
}

/// What a subscription's acknowledgement names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acked<'a> {
    /// The request with this id (`SubscribeRequest::id`): every stream it asked for.
    Request(u64),
    /// One stream, by its name (a venue that acknowledges each stream of a request).
    Stream(&'a [u8]),
    /// The request with this id, answered with the list of what it subscribed (a JSON
    /// array of stream names, as sent): a stream asked for and not listed was refused
    /// (Deribit leaves out what it does not know, without an error).
    Listed { request: u64, streams: &'a [u8] },
    /// The venue's acknowledgement names nothing (Bybit's linear market may echo an empty
    /// `req_id`): the oldest request still waiting.
    Oldest,
}

/// What a venue's ping (`Streams::client_ping`) writes where the time it is sent goes, in
/// Unix seconds (Gate's requests carry it).
pub const PING_TIME: &str = "{time}";

/// The request id of every unsubscribe frame, which no subscription has (the core numbers
/// its subscriptions from 1): its acknowledgement is of no subscription, and ignored.
pub const UNSUBSCRIBE_REQUEST_ID: u64 = 0;

/// Which of a venue's book streams a connection subscribes to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// Top-of-book snapshots (`mode = "snapshot"`, [`Streams::stream_name`]).
    Snapshots,
    /// The diff stream (`mode = "diff"`, [`Streams::diff_stream_name`]).
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
