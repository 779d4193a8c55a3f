//! Configuration in two stages: the raw TOML (`Raw*`, every table `deny_unknown_fields`)
//! and the validated [`Config`] the service runs on. Every error names the key and the
//! value. Command-line flags and `MERGEBOOK_*` environment variables override the file
//! (see `src/main.rs`); the file's example with every key is `config/default.toml`.
//!
//! `raw.rs` is the file as written, `validate.rs` turns it into the types below, and
//! `defaults.rs` holds every key's default and range, once.

pub mod defaults;
mod fees;
mod raw;
mod units;
mod validate;

pub use raw::RawConfig;

use crate::fixed::{FixedPoint, UnitSize};
use crate::units::{Conversion, Currency, TakerFee};
use crate::venue::VenueId;
use std::net::SocketAddr;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Syntax { path: String, message: String },
    #[error("{key} = {value}: {reason}")]
    Invalid {
        key: String,
        value: String,
        reason: String,
    },
}

fn invalid(
    key: impl Into<String>,
    value: impl std::fmt::Display,
    reason: impl Into<String>,
) -> ConfigError {
    ConfigError::Invalid {
        key: key.into(),
        value: value.to_string(),
        reason: reason.into(),
    }
}

// ---- stage two: validated ----

/// What the merger thread does when a poll finds nothing new.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdleStrategy {
    /// Spin on the CPU (lowest latency; owns a whole core).
    Spin,
    /// Spin briefly, then yield the core to other threads between polls.
    SpinThenYield,
    /// Spin, yield, then park until a reader wakes it (or 1 ms passes). The default:
    /// on a 2-core machine a spinning merger would starve the readers.
    Park,
    /// Sleep `merger.batch_us` after every pass that found nothing new, then serve
    /// together what came meanwhile: a few thousand wake-ups a second whatever the frame
    /// rate, and no reader waking the merger or the fan-out per book. For many books on
    /// few cores; it adds up to that period (and the kernel's timer slack) to each book's
    /// latency.
    Batch,
}

impl IdleStrategy {
    /// The names `merger.idle` takes.
    const NAMES: [(&'static str, IdleStrategy); 4] = [
        ("spin", IdleStrategy::Spin),
        ("spin-then-yield", IdleStrategy::SpinThenYield),
        ("park", IdleStrategy::Park),
        ("batch", IdleStrategy::Batch),
    ];

    pub fn parse(text: &str) -> Option<Self> {
        Self::NAMES
            .iter()
            .find(|(name, _)| *name == text)
            .map(|&(_, strategy)| strategy)
    }

    pub fn name(self) -> &'static str {
        Self::NAMES
            .iter()
            .find(|&&(_, strategy)| strategy == self)
            .map(|&(name, _)| name)
            .expect("every strategy is in NAMES")
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    /// One JSON line per summary on stdout.
    JsonLines,
    None,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    /// Levels per side kept per venue and published.
    pub depth: usize,
    /// The distances from the mid, in basis points, ascending, that every summary counts
    /// each side's depth within (`merger::bands`).
    pub bands_bps: Vec<u16>,
    /// A venue whose latest book is older than this is evicted from the merge.
    pub stale_after: Duration,
    /// A synced book whose venue's time is further behind its receipt than this makes
    /// `/health` name it and say `DEGRADED`.
    pub max_feed_delay: Duration,
    pub output: Output,
    pub log_format: LogFormat,
    pub merger_core: Option<usize>,
    pub idle: IdleStrategy,
    /// The `batch` merger's sleep between passes (`merger.batch_us`).
    pub merger_batch: Duration,
    pub feed: FeedSettings,
    pub grpc_listen: SocketAddr,
    /// gRPC streams served at once; more are refused (`RESOURCE_EXHAUSTED`).
    pub grpc_max_clients: usize,
    /// Quote requests waiting for the merger; more are refused (`RESOURCE_EXHAUSTED`).
    pub grpc_max_queued_quotes: usize,
    /// Bytes of summaries that may wait for one gRPC client that reads slower than they
    /// come (HTTP/2's send buffer and the socket's); past it, the client skips to the
    /// latest summary.
    pub grpc_client_buffer_bytes: usize,
    /// What a client's connections may hold of the process on each port.
    pub grpc_connections: ConnectionLimits,
    pub metrics_listen: SocketAddr,
    pub metrics_connections: ConnectionLimits,
    /// The book in a browser on the metrics port (`[web]`), where turned on.
    pub web: Option<WebView>,
    /// The venues used by at least one instrument, with their URLs.
    pub venues: Vec<VenueConfig>,
    /// The most instruments listed at once, a reload's included (`service.max_instruments`):
    /// what the merger's set of ready instruments is sized for.
    pub max_instruments: usize,
    pub instruments: Vec<Instrument>,
    /// `[[rates]]`: the currency pairs venues' prices are converted through.
    pub rates: Vec<RateSource>,
    pub simulator: Option<SimulatorConfig>,
    /// This process's share of the instruments, when several share the list.
    pub shard: Option<Shard>,
    /// Publishing to NATS, when configured.
    pub nats: Option<NatsConfig>,
    /// Recording what the venues send, when configured.
    pub record: Option<RecordConfig>,
}

/// `[record]`: every frame, REST response and connection event of every venue connection,
/// written as timelines (`record/`).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordConfig {
    /// One directory per connection under it.
    pub dir: std::path::PathBuf,
    /// A file is closed and the next one started past this many bytes of timeline
    /// (before compression)...
    pub max_file_bytes: u64,
    /// ...or this long after it was started.
    pub max_file_age: Duration,
    /// The compressed files on disk, all connections together, are kept under this: the
    /// oldest are removed.
    pub max_total_bytes: u64,
    /// Events a connection may have waiting for the writer; more are dropped, counted.
    pub queue_per_connection: usize,
}

/// One of `count` processes given the same instrument list (`service.shard = "K/N"`,
/// `--shard K/N`): it serves the instruments whose name hashes to `index` (FNV-1a of the
/// name, modulo `count`). Deterministic, and independent of the list's order, so every
/// shard agrees on the split without talking to the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    /// From 1.
    pub index: u64,
    pub count: u64,
}

impl Shard {
    /// `K/N`, 1 ≤ K ≤ N ≤ 1024.
    pub fn parse(text: &str) -> Option<Shard> {
        let (index, count) = text.split_once('/')?;
        let (index, count) = (index.parse().ok()?, count.parse().ok()?);
        ((1..=count).contains(&index) && count <= 1024).then_some(Shard { index, count })
    }

    pub fn serves(self, instrument: &str) -> bool {
        let hash = instrument
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
                (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
            });
        hash % self.count == self.index - 1
    }
}

/// `[nats]`: every summary published on `<subject_prefix>.book.<instrument>`, the
/// service's health on `<subject_prefix>.health` (`publish/nats.rs`).
#[derive(Debug, Clone, PartialEq)]
pub struct NatsConfig {
    pub url: String,
    pub subject_prefix: String,
    pub format: NatsFormat,
    /// A NATS `.creds` file (JWT and NKey seed); none: no credentials.
    pub credentials_file: Option<std::path::PathBuf>,
    /// The CA that signs the server's certificate, where it is not a public one.
    pub tls_ca_file: Option<std::path::PathBuf>,
    pub tls_required: bool,
    pub health_every: Duration,
}

/// How a summary is written on NATS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NatsFormat {
    /// `orderbook.ExactSummary` (proto/orderbook.proto), as `BookSummaryExact` streams it.
    Protobuf,
    /// The JSON line `service.output = "jsonl"` writes.
    Json,
}

impl Config {
    /// The first setting of `new` that differs from this configuration's, other than
    /// `[[instruments]]` and which venues they use: what a reload cannot apply without a
    /// restart (`Service::reload`). A venue configured in both must be configured alike;
    /// the rates are compared by their instrument's name, as a reload moves the others.
    pub fn reload_difference(&self, new: &Config) -> Option<&'static str> {
        // Every field named: a new one does not compile until it is placed here.
        let Config {
            depth,
            bands_bps,
            stale_after,
            max_feed_delay,
            output,
            log_format,
            merger_core,
            idle,
            merger_batch,
            feed,
            grpc_listen,
            grpc_max_clients,
            grpc_max_queued_quotes,
            grpc_client_buffer_bytes,
            grpc_connections,
            metrics_listen,
            metrics_connections,
            web,
            venues: _,
            max_instruments,
            instruments: _,
            rates: _,
            simulator,
            shard,
            nats,
            record,
        } = self;
        macro_rules! first_difference {
            ($($field:ident => $key:literal),* $(,)?) => {
                $(if *$field != new.$field { return Some($key); })*
            };
        }
        first_difference!(
            depth => "service.depth",
            bands_bps => "service.bands_bps",
            stale_after => "service.stale_after_ms",
            max_feed_delay => "service.max_feed_delay_ms",
            output => "service.output",
            log_format => "service.log_format",
            merger_core => "merger.core",
            idle => "merger.idle",
            merger_batch => "merger.batch_us",
            feed => "[feed]",
            grpc_listen => "grpc.listen",
            grpc_max_clients => "grpc.max_clients",
            grpc_max_queued_quotes => "grpc.max_queued_quotes",
            grpc_client_buffer_bytes => "grpc.client_buffer_bytes",
            grpc_connections => "[grpc]",
            metrics_listen => "metrics.listen",
            metrics_connections => "[metrics]",
            web => "[web]",
            max_instruments => "service.max_instruments",
            simulator => "[simulator]",
            shard => "service.shard",
            nats => "[nats]",
            record => "[record]",
        );
        let alike = |venue: &VenueConfig| {
            (new.venues.iter())
                .find(|other| other.venue == venue.venue)
                .is_none_or(|other| other == venue)
        };
        if !self.venues.iter().all(alike) {
            return Some("[venues]");
        }
        let named = |config: &Config| -> Vec<_> {
            let from = |rate: &RateSource| match rate.from {
                RateFrom::Instrument(index) => {
                    format!("instrument {}", config.instruments[index].name)
                }
                RateFrom::Fixed(price) => format!("fixed {price}"),
            };
            (config.rates.iter())
                .map(|rate| (rate.base, rate.quote, from(rate)))
                .collect()
        };
        if named(self) != named(new) {
            return Some("[[rates]]");
        }
        None
    }

    /// Worker threads for the service's tokio runtime (gRPC, JSON lines, HTTP, the
    /// summaries' fan-out; each reader has a thread of its own): the CPUs the process may
    /// run on, less the one a merger that never sleeps (`spin`, `spin-then-yield`) takes.
    /// A worker there could run only by taking the CPU from the merger; two workers sharing
    /// the other CPU wake each other on every summary (docs/decisions.md).
    pub fn runtime_workers(&self) -> usize {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        workers_beside_merger(self.idle, cpus)
    }
}

/// The rule of [`Config::runtime_workers`], for `cpus` CPUs.
fn workers_beside_merger(idle: IdleStrategy, cpus: usize) -> usize {
    let merger_cpus = match idle {
        IdleStrategy::Spin | IdleStrategy::SpinThenYield => 1,
        IdleStrategy::Park | IdleStrategy::Batch => 0,
    };
    cpus.saturating_sub(merger_cpus).max(1)
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FeedSettings {
    pub max_frame_bytes: usize,
    pub read_idle_timeout: Duration,
    pub connect_timeout: Duration,
    pub backoff_initial: Duration,
    pub backoff_max: Duration,
    /// How long a connection must deliver books before the backoff starts over.
    pub backoff_reset_after: Duration,
    /// The threads the connections' readers share (`None`: a thread a connection).
    pub reader_threads: Option<std::num::NonZeroUsize>,
    /// Where set, a reader thread reads its sockets once a period, taking together what
    /// arrived on all of them, instead of waking for each read.
    pub read_batch: Option<Duration>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct VenueConfig {
    pub venue: VenueId,
    pub url: String,
    pub mode: FeedMode,
    /// Merge its books even when they lack a side (they are shown `one-sided` either way).
    pub allow_one_sided: bool,
    /// The application-level ping the reader sends, and how often, where the venue wants
    /// one (`Streams::client_ping`; `ping_interval_ms` overrides its interval).
    pub client_ping: Option<(Duration, &'static str)>,
    /// How long one of its subscriptions may deliver no book data (its quiet-market
    /// allowance): then it is subscribed again, and still silent after another, its
    /// connection is recycled. `feed.read_idle_timeout_ms` unless the venue sets its own.
    pub read_idle_timeout: Duration,
    /// How long a connection runs before the reader renews it (a new connection syncs
    /// every book, then the old one closes): `renew_after_ms`, by default the venue's
    /// connection lifetime less `defaults::RENEWAL_MARGIN`; `None` where the venue states no
    /// lifetime and the key is not set.
    pub renew_after: Option<Duration>,
    /// The API key sent on the venue's WebSocket upgrade, where it needs one.
    pub api_key: Option<ApiKey>,
    /// Where the venue lists what can be subscribed (`rest_url` and
    /// `Streams::listing_path`), for a venue that drops a connection over a name it does
    /// not list: asked before any connection (`feed::listing`).
    pub listing_url: Option<String>,
    /// Where each connection's address and token are asked for (`rest_url` and
    /// `Streams::token_path`), for a venue that hands them out: its connections go where
    /// the answer says, and `url` is not used.
    pub token_url: Option<String>,
}

/// A venue's API key, read at start-up: sent in the venue's upgrade header or its
/// authentication request (`VenueFacts::credentials`), never written anywhere else. Its
/// `Debug` hides it, so no log line or error shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// The key, for the upgrade request's header.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// A key as read from a variable or a file (`source` names it in errors): the text
    /// without surrounding whitespace, which must be a non-empty run of visible ASCII (an
    /// HTTP header value).
    fn parse(text: &str, key: String, source: &str) -> Result<ApiKey, ConfigError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(invalid(key, source, "holds no API key"));
        }
        if !text.bytes().all(|byte| byte.is_ascii_graphic()) {
            return Err(invalid(
                key,
                source,
                "the API key must be visible ASCII characters only",
            ));
        }
        Ok(ApiKey(text.to_owned()))
    }
}

impl ApiKey {
    /// The key as `key:secret:passphrase` (`Credentials::SignedRest`): the three parts, if
    /// it has that form.
    pub fn signing_parts(&self) -> Option<(&str, &str, &str)> {
        let (key, rest) = self.0.split_once(':')?;
        let (secret, passphrase) = rest.split_once(':')?;
        let parts = [key, secret, passphrase];
        parts
            .iter()
            .all(|part| !part.is_empty())
            .then_some((key, secret, passphrase))
    }

    /// The key as `client_id:client_secret` (`Credentials::AuthRequest`): both parts, if
    /// it has that form.
    pub fn client_credentials(&self) -> Option<(&str, &str)> {
        let (id, secret) = self.0.split_once(':')?;
        (!id.is_empty() && !secret.is_empty()).then_some((id, secret))
    }

    /// What a venue's reader sends the simulator, which takes any key, where none is
    /// configured.
    pub fn stand_in() -> ApiKey {
        ApiKey("simulator-stand-in".to_owned())
    }

    /// Client credentials (`client_id:client_secret`) for tests.
    #[cfg(test)]
    pub fn stand_in_credentials(client_id: &str, client_secret: &str) -> ApiKey {
        ApiKey(format!("{client_id}:{client_secret}"))
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(hidden)")
    }
}

/// How many connections a port keeps open at once (one more is closed as it is accepted),
/// and how long a connection may take to send a request (gRPC: HTTP/2's preface, and then
/// a stream whenever it has none open; the metrics port: a request's headers, also between
/// requests on a kept-alive connection).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    pub max: usize,
    pub request_timeout: Duration,
}

/// Which book stream a venue's reader follows.
#[derive(Debug, Clone, PartialEq)]
pub enum FeedMode {
    /// Top-N snapshot streams (Binance `depth<N>@100ms`, Bitstamp `order_book_`): each
    /// frame replaces the book. Stateless; at most 20 (Binance) or 100 levels.
    Snapshot,
    /// Diff streams and REST snapshots: a full-depth book kept in sync (`book/diff_sync.rs`).
    Diff(DiffSettings),
}

impl FeedMode {
    /// Diff mode's settings; `None` in snapshot mode.
    pub fn diff_settings(&self) -> Option<&DiffSettings> {
        match self {
            FeedMode::Snapshot => None,
            FeedMode::Diff(settings) => Some(settings),
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct DiffSettings {
    /// The venue's REST base URL (the simulator's in simulator mode).
    pub rest_url: String,
    /// Levels a side asked for in a snapshot (Binance `limit`; Bitstamp sends full depth).
    pub snapshot_depth: usize,
    /// Levels a side kept in the full-depth book.
    pub max_levels: usize,
    /// Events held per instrument while its snapshot is fetched.
    pub max_buffered: usize,
    pub policy: crate::feed::core::snapshot_schedule::SnapshotPolicy,
    pub snapshot_timeout: Duration,
    /// Where the venue's books are audited (`Snapshots::audited`) and audits are on.
    pub audit: Option<crate::feed::core::audit::AuditSettings>,
    /// Whether snapshots are the venue's whole book, asked for with the configured key,
    /// where its public snapshot is only its top (`Snapshots::whole_book_url`).
    pub whole_book: bool,
    /// Whether its readers hand the merger each book whole beside its top
    /// (`service.full_depth`), for quotes over full depth (`book::full_depth`).
    pub full_depth: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Instrument {
    /// Canonical name, `ETH/BTC`.
    pub name: String,
    /// Its books, its *sources*: (venue, that venue's symbol), the venues in the order of
    /// their names (a TOML table's keys), a venue's symbols in its list's order. A book's
    /// index here is its source in the merge and in every summary (`merger::summary`).
    pub symbols: Vec<(VenueId, String)>,
    /// Each source's name, what outputs, metrics and the configuration's own keys call
    /// it: its venue's name, or `venue:symbol` where the instrument takes several books
    /// of that venue (`okx:BTC-USDT-SWAP`).
    pub source_names: Vec<String>,
    /// (source, what one contract is) for each symbol sized in contracts: an amount of
    /// the base currency, or an inverse contract's value in its quote currency.
    pub contract_sizes: Vec<(usize, FixedPoint)>,
    /// The currency its prices are shown in; `None` where neither its name (`BASE/QUOTE`)
    /// nor `currency` says, and its venues' books are merged as they are quoted.
    pub currency: Option<Currency>,
    /// What converted prices are rounded to, in raw `FixedPoint` units (1: 10^-8).
    pub price_step: u64,
    /// (source, the currency its symbol is quoted in), every source, where `currency` is
    /// known.
    pub quotes: Vec<(usize, Currency)>,
    /// What its amounts count.
    pub unit: AmountUnit,
    /// How many coins one unit of its amounts is (`fixed::UnitSize`): the venues'
    /// numbers are read in it, its prices per unit.
    pub unit_size: UnitSize,
    /// How each source whose book is not merged as it comes is converted: one quoted in
    /// another currency, and in a quote-notional instrument one sized in the base coin.
    pub conversions: Vec<SourceConversion>,
    /// Each source's taker fee (`venues.<name>.taker_fee_bps`, or the instrument's
    /// `taker_fees_bps` for that book), in source order; zero where none is set.
    pub taker_fees: Vec<TakerFee>,
}

/// Each book's name (`Instrument::source_names`): its venue's, or `venue:symbol` where
/// the instrument takes several books of that venue.
pub fn source_names(symbols: &[(VenueId, String)]) -> Vec<String> {
    symbols
        .iter()
        .map(
            |(venue, symbol)| match symbols.iter().filter(|(other, _)| other == venue).count() {
                1 => venue.name().to_owned(),
                _ => format!("{venue}:{symbol}"),
            },
        )
        .collect()
}

/// `[web]`, turned on: the page at `/book` on the metrics port (`publish/web/`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebView {
    /// The least time between two events of a page's stream.
    pub interval: Duration,
}

/// What an instrument's amounts count (`unit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum AmountUnit {
    /// The base coin (BTC of BTC/USD).
    #[default]
    Base,
    /// Their notional in the instrument's currency (USD of BTC/USD): what inverse
    /// contracts are sized in.
    Quote,
}

/// One book of an instrument that is converted before it is merged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SourceConversion {
    /// Its index in `Instrument::symbols`.
    pub source: usize,
    /// Index into `Config::rates`, for a venue quoted in another currency; `None` for one
    /// quoted in the instrument's, whose amounts alone change.
    pub rate: Option<usize>,
    pub conversion: Conversion,
}

/// A currency pair's rate and where it comes from (`[[rates]]`).
#[derive(Debug, Clone, PartialEq)]
pub struct RateSource {
    /// One `base` sells for the rate's bid and costs its ask in `quote`.
    pub base: Currency,
    pub quote: Currency,
    pub from: RateFrom,
}

impl RateSource {
    /// `BASE/QUOTE`.
    pub fn pair(&self) -> String {
        format!("{}/{}", self.base, self.quote)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RateFrom {
    /// The merged best bid and ask of this instrument (an index into
    /// `Config::instruments`), while it has both.
    Instrument(usize),
    /// A rate an operator set, the same both ways.
    Fixed(FixedPoint),
}

impl Instrument {
    /// What its amounts are counted in: its currency where `unit = "quote"`, else the
    /// base of its name (`BTC` of `BTC/USD`), where its name has one.
    pub fn amount_unit(&self) -> Option<Currency> {
        match self.unit {
            AmountUnit::Quote => self.currency,
            AmountUnit::Base => Currency::parse(self.name.split_once('/')?.0),
        }
    }

    /// What the sizes of book `source` are multiplied by to be an amount of the base
    /// currency.
    pub fn contract_size(&self, source: usize) -> Option<FixedPoint> {
        self.contract_sizes
            .iter()
            .find_map(|&(of, size)| (of == source).then_some(size))
    }

    /// An instrument of `books` (venue, symbol), in their order, counted in the base coin
    /// and converting nothing: what tools and tests that build summaries name.
    pub fn of_books(name: &str, books: &[(VenueId, &str)]) -> Instrument {
        let symbols: Vec<(VenueId, String)> = books
            .iter()
            .map(|&(venue, symbol)| (venue, symbol.to_owned()))
            .collect();
        Instrument {
            name: name.to_owned(),
            source_names: source_names(&symbols),
            taker_fees: vec![TakerFee::default(); symbols.len()],
            symbols,
            contract_sizes: Vec::new(),
            currency: None,
            price_step: 1,
            quotes: Vec::new(),
            unit: AmountUnit::Base,
            unit_size: UnitSize::COIN,
            conversions: Vec::new(),
        }
    }

    /// The first of `venue`'s sources (its only one, unless the instrument takes several
    /// of its books).
    pub fn source_of(&self, venue: VenueId) -> Option<usize> {
        self.symbols.iter().position(|(of, _)| *of == venue)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct SimulatorConfig {
    pub listen: SocketAddr,
    pub rate_per_second: u32,
    pub seed: u64,
    /// Venues that serve a recording (plain frames or a timeline).
    pub replay: Vec<(VenueId, std::path::PathBuf)>,
    /// A recording of the service's (`record.dir`) whose venues are served what they
    /// sent then, frame for frame, at the recorded pace.
    pub recording: Option<std::path::PathBuf>,
    /// (instrument, the price its venues' markets start around); the others start around
    /// 0.06824.
    pub prices: Vec<(String, FixedPoint)>,
}

/// The most instruments `service.max_instruments` allows (each costs a mailbox per venue,
/// a summary channel and the merger's time).
pub const MAX_INSTRUMENTS: i64 = 1024;
/// The simulator's rate range, per (venue, instrument), in frames per second.
pub const SIMULATOR_RATES: std::ops::RangeInclusive<i64> = 10..=100_000;

#[cfg(test)]
mod tests;
