//! Configuration in two stages: the raw TOML (`Raw*`, every table `deny_unknown_fields`)
//! and the validated [`Config`] the service runs on. Every error names the key and the
//! value. Command-line flags and `MERGEBOOK_*` environment variables override the file
//! (see `src/main.rs`); the file's example with every key is `config/default.toml`.

use crate::fixed::FixedPoint;
use crate::venue::{MAX_VENUES, SnapshotSource, VenueId};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
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

// ---- stage one: the file as written ----

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    #[serde(default)]
    pub service: RawService,
    #[serde(default)]
    pub merger: RawMerger,
    #[serde(default)]
    pub feed: RawFeed,
    #[serde(default)]
    pub grpc: RawGrpc,
    #[serde(default)]
    pub metrics: RawMetrics,
    #[serde(default)]
    pub venues: BTreeMap<String, RawVenue>,
    #[serde(default)]
    pub instruments: Vec<RawInstrument>,
    pub simulator: Option<RawSimulator>,
    pub nats: Option<RawNats>,
    pub record: Option<RawRecord>,
    /// The directory of the file it was read from: where relative paths in it start
    /// (`api_key_file`).
    #[serde(skip)]
    pub dir: std::path::PathBuf,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawService {
    pub depth: Option<i64>,
    pub stale_after_ms: Option<i64>,
    pub max_instruments: Option<i64>,
    pub output: Option<String>,
    pub log_format: Option<String>,
    pub shard: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawNats {
    pub url: Option<String>,
    pub subject_prefix: Option<String>,
    pub format: Option<String>,
    pub credentials_file: Option<std::path::PathBuf>,
    pub tls_ca_file: Option<std::path::PathBuf>,
    pub tls_required: Option<bool>,
    pub health_every_ms: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRecord {
    pub dir: Option<std::path::PathBuf>,
    pub max_file_mb: Option<i64>,
    pub max_file_age_s: Option<i64>,
    pub max_total_mb: Option<i64>,
    pub queue_per_connection: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMerger {
    pub core: Option<i64>,
    pub idle: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFeed {
    pub max_frame_bytes: Option<i64>,
    pub read_idle_timeout_ms: Option<i64>,
    pub connect_timeout_ms: Option<i64>,
    pub backoff_initial_ms: Option<i64>,
    pub backoff_max_ms: Option<i64>,
    pub backoff_reset_after_ms: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawMetrics {
    pub listen: Option<String>,
    pub max_connections: Option<i64>,
    pub request_timeout_ms: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGrpc {
    pub listen: Option<String>,
    pub max_clients: Option<i64>,
    pub client_buffer_bytes: Option<i64>,
    pub max_connections: Option<i64>,
    pub handshake_timeout_ms: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawVenue {
    pub url: Option<String>,
    pub mode: Option<String>,
    pub rest_url: Option<String>,
    pub snapshot_depth: Option<i64>,
    pub max_book_levels: Option<i64>,
    pub max_buffered_events: Option<i64>,
    pub snapshot_weight_per_minute: Option<i64>,
    pub snapshot_spacing_ms: Option<i64>,
    pub snapshot_timeout_ms: Option<i64>,
    pub allow_one_sided: Option<bool>,
    pub ping_interval_ms: Option<i64>,
    pub read_idle_timeout_ms: Option<i64>,
    /// The environment variable holding the venue's API key (`VenueFacts::api_key_header`).
    pub api_key_env: Option<String>,
    /// A file holding the venue's API key (a relative path starts at the config file's
    /// directory).
    pub api_key_file: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawInstrument {
    pub name: String,
    /// Venue name → that venue's symbol for the instrument.
    pub symbols: BTreeMap<String, String>,
    /// Venue name → the base currency one contract is, where that venue's symbol is a
    /// derivative sized in contracts (`"0.01"`).
    #[serde(default)]
    pub contract_sizes: BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSimulator {
    pub listen: Option<String>,
    pub rate_per_second: Option<i64>,
    pub seed: Option<i64>,
    /// Venue name → a recording to serve instead of the generated market.
    pub replay: Option<BTreeMap<String, String>>,
    /// A recording directory (`[record]`) to serve, frame for frame.
    pub recording: Option<std::path::PathBuf>,
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
}

impl IdleStrategy {
    /// The names `merger.idle` takes.
    const NAMES: [(&'static str, IdleStrategy); 3] = [
        ("spin", IdleStrategy::Spin),
        ("spin-then-yield", IdleStrategy::SpinThenYield),
        ("park", IdleStrategy::Park),
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
    /// A venue whose latest book is older than this is evicted from the merge.
    pub stale_after: Duration,
    pub output: Output,
    pub log_format: LogFormat,
    pub merger_core: Option<usize>,
    pub idle: IdleStrategy,
    pub feed: FeedSettings,
    pub grpc_listen: SocketAddr,
    /// gRPC streams served at once; more are refused (`RESOURCE_EXHAUSTED`).
    pub grpc_max_clients: usize,
    /// Bytes of summaries that may wait for one gRPC client that reads slower than they
    /// come (HTTP/2's send buffer and the socket's); past it, the client skips to the
    /// latest summary.
    pub grpc_client_buffer_bytes: usize,
    /// What a client's connections may hold of the process on each port.
    pub grpc_connections: ConnectionLimits,
    pub metrics_listen: SocketAddr,
    pub metrics_connections: ConnectionLimits,
    /// The venues used by at least one instrument, with their URLs.
    pub venues: Vec<VenueConfig>,
    pub instruments: Vec<Instrument>,
    pub simulator: Option<SimulatorConfig>,
    /// This process's share of the instruments, when several share the list.
    pub shard: Option<Shard>,
    /// Publishing to NATS, when configured.
    pub nats: Option<NatsConfig>,
    /// Recording what the venues send, when configured.
    pub record: Option<RecordConfig>,
}

/// `[record]`: every frame, REST response and connection event of every venue connection,
/// written as session timelines (`record/`).
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
        IdleStrategy::Park => 0,
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
    /// The API key sent on the venue's WebSocket upgrade, where it needs one.
    pub api_key: Option<ApiKey>,
}

/// A venue's API key, read at start-up: sent in the venue's upgrade header
/// (`VenueFacts::api_key_header`), never written anywhere else. Its `Debug` hides it, so no log
/// line or error shows it.
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
    /// What a venue's reader sends the simulator, which takes any key, where none is
    /// configured.
    pub fn stand_in() -> ApiKey {
        ApiKey("simulator-stand-in".to_owned())
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(hidden)")
    }
}

/// How many connections a port keeps open at once (one more is closed as it is accepted),
/// and how long a connection may take to send a request (gRPC: HTTP/2's preface; the
/// metrics port: a request's headers, also between requests on a kept-alive connection).
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
}

#[derive(Debug, Clone, PartialEq)]
pub struct Instrument {
    /// Canonical name, `ETH/BTC`.
    pub name: String,
    /// (venue, that venue's symbol).
    pub symbols: Vec<(VenueId, String)>,
    /// (venue, the base currency per contract) for each symbol sized in contracts.
    pub contract_sizes: Vec<(VenueId, FixedPoint)>,
}

impl Instrument {
    /// What `venue`'s sizes are multiplied by to be an amount of the base currency.
    pub fn contract_size(&self, venue: VenueId) -> Option<FixedPoint> {
        self.contract_sizes
            .iter()
            .find_map(|&(v, size)| (v == venue).then_some(size))
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
}

/// The most instruments `service.max_instruments` allows (each costs a mailbox per venue,
/// a summary channel and the merger's time).
pub const MAX_INSTRUMENTS: i64 = 1024;
/// The simulator's rate range, per (venue, instrument), in frames per second.
pub const SIMULATOR_RATES: std::ops::RangeInclusive<i64> = 10..=100_000;

// ---- every key's default, in one place ----

/// A numeric key: its default and the values it takes. `key` is the dotted path, or for
/// a venue's key (`venues.<name>.…`) the last part.
pub struct IntKey {
    pub key: &'static str,
    pub default: i64,
    pub range: std::ops::RangeInclusive<i64>,
}

/// A key whose value is text (a name or an address), and its default.
pub struct TextKey {
    pub key: &'static str,
    pub default: &'static str,
}

/// A key whose value is `true` or `false`, and its default.
pub struct BoolKey {
    pub key: &'static str,
    pub default: bool,
}

/// Every key's default: written here once, stated by `config/default.toml` (the simulator's
/// by `config/sim.toml`), which a test compares.
pub mod defaults {
    use super::{BoolKey, IntKey, MAX_INSTRUMENTS, SIMULATOR_RATES, TextKey};
    use crate::book::MAX_DEPTH;

    const fn int(key: &'static str, default: i64, min: i64, max: i64) -> IntKey {
        IntKey {
            key,
            default,
            range: min..=max,
        }
    }

    const fn text(key: &'static str, default: &'static str) -> TextKey {
        TextKey { key, default }
    }

    pub const DEPTH: IntKey = int("service.depth", 10, 1, MAX_DEPTH as i64);
    pub const STALE_AFTER_MS: IntKey = int("service.stale_after_ms", 5_000, 10, 3_600_000);
    pub const MAX_INSTRUMENTS_KEY: IntKey = int("service.max_instruments", 64, 1, MAX_INSTRUMENTS);
    pub const OUTPUT: TextKey = text("service.output", "jsonl");
    pub const LOG_FORMAT: TextKey = text("service.log_format", "text");
    pub const IDLE: TextKey = text("merger.idle", "park");
    pub const MAX_FRAME_BYTES: IntKey = int("feed.max_frame_bytes", 1 << 20, 4096, 64 << 20);
    pub const READ_IDLE_TIMEOUT_MS: IntKey = int("feed.read_idle_timeout_ms", 30_000, 100, 600_000);
    pub const CONNECT_TIMEOUT_MS: IntKey = int("feed.connect_timeout_ms", 10_000, 100, 120_000);
    pub const BACKOFF_INITIAL_MS: IntKey = int("feed.backoff_initial_ms", 100, 1, 60_000);
    pub const BACKOFF_MAX_MS: IntKey = int("feed.backoff_max_ms", 30_000, 1, 600_000);
    pub const BACKOFF_RESET_AFTER_MS: IntKey =
        int("feed.backoff_reset_after_ms", 30_000, 0, 3_600_000);
    pub const GRPC_LISTEN: TextKey = text("grpc.listen", "127.0.0.1:50051");
    pub const GRPC_MAX_CLIENTS: IntKey = int("grpc.max_clients", 1024, 1, 65_536);
    pub const GRPC_CLIENT_BUFFER_BYTES: IntKey =
        int("grpc.client_buffer_bytes", 262_144, 16_384, 67_108_864);
    /// Above `grpc.max_clients`: a client beyond those gets `RESOURCE_EXHAUSTED`, not a
    /// closed connection.
    pub const GRPC_MAX_CONNECTIONS: IntKey = int("grpc.max_connections", 1152, 1, 65_536);
    pub const GRPC_HANDSHAKE_TIMEOUT_MS: IntKey =
        int("grpc.handshake_timeout_ms", 10_000, 10, 600_000);
    pub const METRICS_LISTEN: TextKey = text("metrics.listen", "127.0.0.1:9898");
    pub const METRICS_MAX_CONNECTIONS: IntKey = int("metrics.max_connections", 64, 1, 65_536);
    pub const METRICS_REQUEST_TIMEOUT_MS: IntKey =
        int("metrics.request_timeout_ms", 10_000, 10, 600_000);

    /// The service's keys above, for the test that `config/default.toml` states them.
    pub const SERVICE_INTS: &[&IntKey] = &[
        &DEPTH,
        &STALE_AFTER_MS,
        &MAX_INSTRUMENTS_KEY,
        &MAX_FRAME_BYTES,
        &READ_IDLE_TIMEOUT_MS,
        &CONNECT_TIMEOUT_MS,
        &BACKOFF_INITIAL_MS,
        &BACKOFF_MAX_MS,
        &BACKOFF_RESET_AFTER_MS,
        &GRPC_MAX_CLIENTS,
        &GRPC_CLIENT_BUFFER_BYTES,
        &GRPC_MAX_CONNECTIONS,
        &GRPC_HANDSHAKE_TIMEOUT_MS,
        &METRICS_MAX_CONNECTIONS,
        &METRICS_REQUEST_TIMEOUT_MS,
    ];
    pub const SERVICE_TEXTS: &[&TextKey] =
        &[&OUTPUT, &LOG_FORMAT, &IDLE, &GRPC_LISTEN, &METRICS_LISTEN];

    // Each venue's keys, under `venues.<name>.`; the URLs' defaults are the venue's own.
    /// A venue's default mode is `diff` where that is its only one (`default_mode`).
    pub const MODE: TextKey = text("mode", "snapshot");

    /// `venues.<name>.mode`'s default for `venue`.
    pub fn default_mode(venue: crate::venue::VenueId) -> &'static str {
        match venue.facts().snapshot_streams {
            true => MODE.default,
            false => "diff",
        }
    }
    pub const ALLOW_ONE_SIDED: BoolKey = BoolKey {
        key: "allow_one_sided",
        default: false,
    };
    pub const SNAPSHOT_DEPTH: IntKey = int("snapshot_depth", 1000, 1, 5000);
    /// At least `service.depth`, too.
    pub const MAX_BOOK_LEVELS: IntKey = int("max_book_levels", 5000, 1, 100_000);
    pub const MAX_BUFFERED_EVENTS: IntKey = int("max_buffered_events", 10_000, 1, 1_000_000);
    pub const SNAPSHOT_WEIGHT_PER_MINUTE: IntKey =
        int("snapshot_weight_per_minute", 1200, 1, 1_000_000);
    pub const SNAPSHOT_SPACING_MS: IntKey = int("snapshot_spacing_ms", 250, 0, 60_000);
    pub const SNAPSHOT_TIMEOUT_MS: IntKey = int("snapshot_timeout_ms", 10_000, 100, 120_000);
    pub const VENUE_INTS: &[&IntKey] = &[
        &SNAPSHOT_DEPTH,
        &MAX_BOOK_LEVELS,
        &MAX_BUFFERED_EVENTS,
        &SNAPSHOT_WEIGHT_PER_MINUTE,
        &SNAPSHOT_SPACING_MS,
        &SNAPSHOT_TIMEOUT_MS,
    ];

    pub const SIMULATOR_LISTEN: TextKey = text("simulator.listen", "127.0.0.1:0");
    pub const SIMULATOR_RATE: IntKey = int(
        "simulator.rate_per_second",
        20,
        *SIMULATOR_RATES.start(),
        *SIMULATOR_RATES.end(),
    );
    pub const SIMULATOR_SEED: IntKey = int("simulator.seed", 1, 0, i64::MAX);

    // `[nats]`, off unless its `url` is set: `config/default.toml` states them in comments.
    pub const NATS_SUBJECT_PREFIX: TextKey = text("nats.subject_prefix", "mergebook");
    pub const NATS_FORMAT: TextKey = text("nats.format", "protobuf");
    pub const NATS_TLS_REQUIRED: BoolKey = BoolKey {
        key: "nats.tls_required",
        default: false,
    };
    pub const NATS_HEALTH_EVERY_MS: IntKey = int("nats.health_every_ms", 1000, 100, 3_600_000);

    // `[record]`, off unless its `dir` is set: `config/default.toml` states them in comments.
    pub const RECORD_MAX_FILE_MB: IntKey = int("record.max_file_mb", 256, 1, 1 << 20);
    pub const RECORD_MAX_FILE_AGE_S: IntKey = int("record.max_file_age_s", 3600, 1, 7 * 86_400);
    pub const RECORD_MAX_TOTAL_MB: IntKey = int("record.max_total_mb", 10_240, 1, 1 << 30);
    pub const RECORD_QUEUE_PER_CONNECTION: IntKey =
        int("record.queue_per_connection", 1024, 16, 1 << 20);
    pub const RECORD_INTS: &[&IntKey] = &[
        &RECORD_MAX_FILE_MB,
        &RECORD_MAX_FILE_AGE_S,
        &RECORD_MAX_TOTAL_MB,
        &RECORD_QUEUE_PER_CONNECTION,
    ];
}

impl IntKey {
    /// The value given, or the default; out of range is an error naming `key`.
    fn read(&self, key: &str, value: Option<i64>) -> Result<i64, ConfigError> {
        in_range(key, value, self.default, self.range.clone())
    }

    /// A top-level key (named by itself).
    fn get(&self, value: Option<i64>) -> Result<i64, ConfigError> {
        self.read(self.key, value)
    }

    /// A top-level key in milliseconds.
    fn get_millis(&self, value: Option<i64>) -> Result<Duration, ConfigError> {
        self.get(value).map(milliseconds)
    }
}

impl TextKey {
    fn get<'a>(&'a self, value: Option<&'a str>) -> &'a str {
        value.unwrap_or(self.default)
    }

    fn socket_address(&self, value: Option<&str>) -> Result<SocketAddr, ConfigError> {
        let value = self.get(value);
        value.parse().map_err(|_| {
            invalid(
                self.key,
                format!("{value:?}"),
                "expected an address like 127.0.0.1:9898",
            )
        })
    }
}

fn in_range(
    key: &str,
    value: Option<i64>,
    default: i64,
    range: std::ops::RangeInclusive<i64>,
) -> Result<i64, ConfigError> {
    let value = value.unwrap_or(default);
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(invalid(
            key,
            value,
            format!("must be between {} and {}", range.start(), range.end()),
        ))
    }
}

/// An instrument name is printed unescaped in JSON and used as a metric label.
fn valid_instrument_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/-_.".contains(&b))
}

impl RawConfig {
    pub fn parse(text: &str, path: &str) -> Result<RawConfig, ConfigError> {
        let mut raw: RawConfig = toml::from_str(text).map_err(|error| ConfigError::Syntax {
            path: path.to_owned(),
            message: error.to_string(),
        })?;
        raw.dir = Path::new(path).parent().unwrap_or(Path::new("")).to_owned();
        Ok(raw)
    }

    pub fn load(path: &Path) -> Result<RawConfig, ConfigError> {
        let display = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: display.clone(),
            source,
        })?;
        RawConfig::parse(&text, &display)
    }

    /// Checks every value and fills in the defaults.
    pub fn validate(&self) -> Result<Config, ConfigError> {
        let service = &self.service;
        let depth = defaults::DEPTH.get(service.depth)? as usize;
        let stale_after = defaults::STALE_AFTER_MS.get_millis(service.stale_after_ms)?;
        let output = match defaults::OUTPUT.get(service.output.as_deref()) {
            "jsonl" => Output::JsonLines,
            "none" => Output::None,
            other => {
                return Err(invalid(
                    "service.output",
                    format!("{other:?}"),
                    "expected \"jsonl\" or \"none\"",
                ));
            }
        };
        let log_format = match defaults::LOG_FORMAT.get(service.log_format.as_deref()) {
            "text" => LogFormat::Text,
            "json" => LogFormat::Json,
            other => {
                return Err(invalid(
                    "service.log_format",
                    format!("{other:?}"),
                    "expected \"text\" or \"json\"",
                ));
            }
        };
        let merger_core = match self.merger.core {
            None => None,
            Some(core) => Some(in_range("merger.core", Some(core), 0, 0..=4095)? as usize),
        };
        let idle_name = defaults::IDLE.get(self.merger.idle.as_deref());
        let idle = IdleStrategy::parse(idle_name).ok_or_else(|| {
            invalid(
                defaults::IDLE.key,
                format!("{idle_name:?}"),
                "expected \"spin\", \"spin-then-yield\" or \"park\"",
            )
        })?;
        let feed = self.feed_settings()?;
        let shard = self.shard()?;
        let (instruments, used) = self.instruments(shard)?;
        let venues = self.venue_configs(&used, depth, feed.read_idle_timeout)?;
        let simulator = self.simulator_config()?;
        let nats = self.nats_config(&instruments)?;
        let record = self.record_config()?;

        Ok(Config {
            depth,
            stale_after,
            output,
            log_format,
            merger_core,
            idle,
            feed,
            grpc_listen: defaults::GRPC_LISTEN.socket_address(self.grpc.listen.as_deref())?,
            grpc_max_clients: defaults::GRPC_MAX_CLIENTS.get(self.grpc.max_clients)? as usize,
            grpc_client_buffer_bytes: defaults::GRPC_CLIENT_BUFFER_BYTES
                .get(self.grpc.client_buffer_bytes)? as usize,
            grpc_connections: ConnectionLimits {
                max: defaults::GRPC_MAX_CONNECTIONS.get(self.grpc.max_connections)? as usize,
                request_timeout: defaults::GRPC_HANDSHAKE_TIMEOUT_MS
                    .get_millis(self.grpc.handshake_timeout_ms)?,
            },
            metrics_listen: defaults::METRICS_LISTEN
                .socket_address(self.metrics.listen.as_deref())?,
            metrics_connections: ConnectionLimits {
                max: defaults::METRICS_MAX_CONNECTIONS.get(self.metrics.max_connections)? as usize,
                request_timeout: defaults::METRICS_REQUEST_TIMEOUT_MS
                    .get_millis(self.metrics.request_timeout_ms)?,
            },
            venues,
            instruments,
            simulator,
            shard,
            nats,
            record,
        })
    }

    /// `[record]`: off unless it names a directory (relative: to the config file's).
    fn record_config(&self) -> Result<Option<RecordConfig>, ConfigError> {
        let Some(raw) = &self.record else {
            return Ok(None);
        };
        let Some(dir) = &raw.dir else {
            return Ok(None);
        };
        let megabytes = |key: &IntKey, value| Ok::<_, ConfigError>(key.get(value)? as u64 * MB);
        const MB: u64 = 1 << 20;
        Ok(Some(RecordConfig {
            dir: self.dir.join(dir),
            max_file_bytes: megabytes(&defaults::RECORD_MAX_FILE_MB, raw.max_file_mb)?,
            max_file_age: Duration::from_secs(
                defaults::RECORD_MAX_FILE_AGE_S.get(raw.max_file_age_s)? as u64,
            ),
            max_total_bytes: megabytes(&defaults::RECORD_MAX_TOTAL_MB, raw.max_total_mb)?,
            queue_per_connection: defaults::RECORD_QUEUE_PER_CONNECTION
                .get(raw.queue_per_connection)? as usize,
        }))
    }

    /// `service.shard`.
    fn shard(&self) -> Result<Option<Shard>, ConfigError> {
        let Some(text) = &self.service.shard else {
            return Ok(None);
        };
        Shard::parse(text).map(Some).ok_or_else(|| {
            invalid(
                "service.shard",
                format!("{text:?}"),
                "expected \"K/N\": shard K of N, 1 <= K <= N <= 1024",
            )
        })
    }

    /// `[nats]`: off unless it names a server.
    fn nats_config(&self, instruments: &[Instrument]) -> Result<Option<NatsConfig>, ConfigError> {
        let Some(raw) = &self.nats else {
            return Ok(None);
        };
        let Some(url) = &raw.url else {
            return Ok(None);
        };
        let host = ["nats://", "tls://"]
            .iter()
            .find_map(|scheme| url.strip_prefix(scheme));
        if !host.is_some_and(|host| !host.is_empty() && !host.starts_with(['/', ':'])) {
            return Err(invalid(
                "nats.url",
                format!("{url:?}"),
                "expected a nats:// or tls:// URL with a host (several: comma-separated)",
            ));
        }
        let prefix = defaults::NATS_SUBJECT_PREFIX.get(raw.subject_prefix.as_deref());
        let token = |token: &str| {
            !token.is_empty()
                && token
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_".contains(&b))
        };
        if !prefix.split('.').all(token) {
            return Err(invalid(
                defaults::NATS_SUBJECT_PREFIX.key,
                format!("{prefix:?}"),
                "subject tokens of A-Z a-z 0-9 - _, separated by '.'",
            ));
        }
        if let Some(dotted) = instruments.iter().find(|i| i.name.contains('.')) {
            return Err(invalid(
                "instruments.name",
                format!("{:?}", dotted.name),
                "'.' separates NATS subject tokens: an instrument published on NATS has none",
            ));
        }
        let format = match defaults::NATS_FORMAT.get(raw.format.as_deref()) {
            "protobuf" => NatsFormat::Protobuf,
            "json" => NatsFormat::Json,
            other => {
                return Err(invalid(
                    defaults::NATS_FORMAT.key,
                    format!("{other:?}"),
                    "expected \"protobuf\" or \"json\"",
                ));
            }
        };
        for (key, file) in [
            ("nats.credentials_file", &raw.credentials_file),
            ("nats.tls_ca_file", &raw.tls_ca_file),
        ] {
            if let Some(file) = file
                && !file.is_file()
            {
                return Err(invalid(key, format!("{file:?}"), "no such file"));
            }
        }
        Ok(Some(NatsConfig {
            url: url.clone(),
            subject_prefix: prefix.to_owned(),
            format,
            credentials_file: raw.credentials_file.clone(),
            tls_ca_file: raw.tls_ca_file.clone(),
            tls_required: raw
                .tls_required
                .unwrap_or(defaults::NATS_TLS_REQUIRED.default),
            health_every: defaults::NATS_HEALTH_EVERY_MS.get_millis(raw.health_every_ms)?,
        }))
    }

    /// `[feed]`.
    fn feed_settings(&self) -> Result<FeedSettings, ConfigError> {
        let feed = FeedSettings {
            max_frame_bytes: defaults::MAX_FRAME_BYTES.get(self.feed.max_frame_bytes)? as usize,
            read_idle_timeout: defaults::READ_IDLE_TIMEOUT_MS
                .get_millis(self.feed.read_idle_timeout_ms)?,
            connect_timeout: defaults::CONNECT_TIMEOUT_MS
                .get_millis(self.feed.connect_timeout_ms)?,
            backoff_initial: defaults::BACKOFF_INITIAL_MS
                .get_millis(self.feed.backoff_initial_ms)?,
            backoff_max: defaults::BACKOFF_MAX_MS.get_millis(self.feed.backoff_max_ms)?,
            backoff_reset_after: defaults::BACKOFF_RESET_AFTER_MS
                .get_millis(self.feed.backoff_reset_after_ms)?,
        };
        if feed.backoff_max < feed.backoff_initial {
            return Err(invalid(
                "feed.backoff_max_ms",
                feed.backoff_max.as_millis(),
                "must not be below feed.backoff_initial_ms",
            ));
        }
        Ok(feed)
    }

    /// `[[instruments]]` (and `[venues.*]` names), with how many use each venue.
    /// The instruments, every one checked; with a `shard`, those it serves.
    fn instruments(
        &self,
        shard: Option<Shard>,
    ) -> Result<(Vec<Instrument>, [usize; MAX_VENUES]), ConfigError> {
        for name in self.venues.keys() {
            if VenueId::from_name(name).is_none() {
                return Err(invalid(
                    format!("venues.{name}"),
                    "{…}",
                    unknown_venue_reason(),
                ));
            }
        }
        if self.instruments.is_empty() {
            return Err(invalid(
                "instruments",
                "[]",
                "configure at least one [[instruments]]",
            ));
        }
        let max_instruments =
            defaults::MAX_INSTRUMENTS_KEY.get(self.service.max_instruments)? as usize;
        if self.instruments.len() > max_instruments {
            return Err(invalid(
                "instruments",
                format!("{} instruments", self.instruments.len()),
                format!("at most service.max_instruments = {max_instruments}"),
            ));
        }
        let mut instruments = Vec::new();
        // Per venue, how many instruments use it.
        let mut used = [0usize; MAX_VENUES];
        for (index, raw) in self.instruments.iter().enumerate() {
            let key = format!("instruments[{index}]");
            if !valid_instrument_name(&raw.name) {
                return Err(invalid(
                    format!("{key}.name"),
                    format!("{:?}", raw.name),
                    "1 to 32 characters of A-Z a-z 0-9 / - _ .",
                ));
            }
            if instruments.iter().any(|i: &Instrument| i.name == raw.name) {
                return Err(invalid(
                    format!("{key}.name"),
                    format!("{:?}", raw.name),
                    "configured twice",
                ));
            }
            if raw.symbols.is_empty() {
                return Err(invalid(
                    format!("{key}.symbols"),
                    "{}",
                    "map at least one venue to its symbol",
                ));
            }
            let mut symbols = Vec::new();
            for (venue_name, symbol) in &raw.symbols {
                let venue = VenueId::from_name(venue_name).ok_or_else(|| {
                    invalid(
                        format!("{key}.symbols.{venue_name}"),
                        format!("{symbol:?}"),
                        unknown_venue_reason(),
                    )
                })?;
                if symbol.is_empty()
                    || !symbol
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-_/:".contains(&b))
                {
                    return Err(invalid(
                        format!("{key}.symbols.{venue_name}"),
                        format!("{symbol:?}"),
                        "a symbol is letters, digits, '-', '_', '/' or ':'",
                    ));
                }
                if let Err(reason) = venue.streams().check_symbol(symbol) {
                    return Err(invalid(
                        format!("{key}.symbols.{venue_name}"),
                        format!("{symbol:?}"),
                        reason,
                    ));
                }
                let taken = instruments.iter().find(|other: &&Instrument| {
                    other
                        .symbols
                        .iter()
                        .any(|(v, s)| *v == venue && s.eq_ignore_ascii_case(symbol))
                });
                if let Some(other) = taken {
                    // One reader subscribes once per symbol and routes its books to one
                    // instrument.
                    return Err(invalid(
                        format!("{key}.symbols.{venue_name}"),
                        format!("{symbol:?}"),
                        format!("already used by instrument {:?}", other.name),
                    ));
                }
                used[venue.index()] += 1;
                symbols.push((venue, symbol.clone()));
            }
            let contract_sizes = contract_sizes(&key, raw, &symbols)?;
            instruments.push(Instrument {
                name: raw.name.clone(),
                symbols,
                contract_sizes,
            });
        }
        if let Some(shard) = shard {
            instruments.retain(|instrument| shard.serves(&instrument.name));
            if instruments.is_empty() {
                return Err(invalid(
                    "service.shard",
                    format!("\"{}/{}\"", shard.index, shard.count),
                    "no instrument falls to this shard: fewer shards, or more instruments",
                ));
            }
            used = [0; MAX_VENUES];
            for (venue, _) in instruments.iter().flat_map(|i| &i.symbols) {
                used[venue.index()] += 1;
            }
        }
        Ok((instruments, used))
    }

    /// `[venues.<name>]` of each venue an instrument uses.
    fn venue_configs(
        &self,
        used: &[usize; MAX_VENUES],
        depth: usize,
        read_idle_timeout: Duration,
    ) -> Result<Vec<VenueConfig>, ConfigError> {
        let mut venues = Vec::new();
        for &venue in VenueId::ALL.iter().filter(|venue| used[venue.index()] > 0) {
            let configured = self.venues.get(venue.name()).and_then(|v| v.url.clone());
            if configured.is_some() && self.simulator.is_some() {
                // The simulator points every venue at itself: a URL beside it would be
                // silently ignored, and a live config with a [simulator] left in it would
                // serve simulated books as live ones.
                return Err(invalid(
                    format!("venues.{venue}.url"),
                    format!("{:?}", configured.unwrap_or_default()),
                    "a [simulator] section replaces the venues' URLs: remove one of the two",
                ));
            }
            let url = configured.unwrap_or_else(|| venue.facts().default_url.to_owned());
            if !is_websocket_url(&url) {
                return Err(invalid(
                    format!("venues.{venue}.url"),
                    format!("{url:?}"),
                    "expected a ws:// or wss:// URL with a host",
                ));
            }
            let raw = self.venues.get(venue.name());
            let mode = venue_mode(venue, raw.unwrap_or(&RawVenue::default()), depth)?;
            let allow_one_sided = raw
                .and_then(|raw| raw.allow_one_sided)
                .unwrap_or(defaults::ALLOW_ONE_SIDED.default);
            let ping_interval = raw.and_then(|raw| raw.ping_interval_ms);
            let key = format!("venues.{venue}.ping_interval_ms");
            let client_ping = match (venue.streams().client_ping(), ping_interval) {
                (None, Some(ms)) => {
                    return Err(invalid(key, ms, "the venue takes no application pings"));
                }
                (Some((_, ping)), Some(ms)) => {
                    // Its default is the venue's own interval.
                    let every = in_range(&key, Some(ms), 0, 100..=3_600_000)?;
                    Some((milliseconds(every), ping))
                }
                (venue_ping, None) => venue_ping,
            };
            let read_idle_timeout = match raw.and_then(|raw| raw.read_idle_timeout_ms) {
                None => read_idle_timeout,
                Some(ms) => {
                    let key = format!("venues.{venue}.read_idle_timeout_ms");
                    milliseconds(defaults::READ_IDLE_TIMEOUT_MS.read(&key, Some(ms))?)
                }
            };
            venues.push(VenueConfig {
                venue,
                url,
                mode,
                allow_one_sided,
                client_ping,
                read_idle_timeout,
                api_key: api_key(venue, raw, &self.dir, self.simulator.is_some())?,
            });
        }
        Ok(venues)
    }

    /// `[simulator]`.
    fn simulator_config(&self) -> Result<Option<SimulatorConfig>, ConfigError> {
        Ok(match &self.simulator {
            None => None,
            Some(raw) => Some(SimulatorConfig {
                listen: defaults::SIMULATOR_LISTEN.socket_address(raw.listen.as_deref())?,
                rate_per_second: defaults::SIMULATOR_RATE.get(raw.rate_per_second)? as u32,
                seed: defaults::SIMULATOR_SEED.get(raw.seed)? as u64,
                replay: raw
                    .replay
                    .iter()
                    .flatten()
                    .map(|(name, path)| {
                        let venue = VenueId::from_name(name).ok_or_else(|| {
                            invalid(
                                format!("simulator.replay.{name}"),
                                format!("{path:?}"),
                                unknown_venue_reason(),
                            )
                        })?;
                        Ok((venue, std::path::PathBuf::from(path)))
                    })
                    .collect::<Result<_, ConfigError>>()?,
                recording: raw.recording.clone(),
            }),
        })
    }
}

/// An instrument's `contract_sizes`: one for each symbol sized in contracts, and none for
/// another, each an exact positive decimal.
fn contract_sizes(
    key: &str,
    raw: &RawInstrument,
    symbols: &[(VenueId, String)],
) -> Result<Vec<(VenueId, FixedPoint)>, ConfigError> {
    for (venue, symbol) in symbols {
        if venue.streams().sized_in_contracts(symbol)
            && !raw.contract_sizes.contains_key(venue.name())
        {
            return Err(invalid(
                format!("{key}.symbols.{venue}"),
                format!("{symbol:?}"),
                format!(
                    "sized in contracts: set {key}.contract_sizes.{venue} to the base \
                     currency one contract is (\"0.01\")"
                ),
            ));
        }
    }
    let mut sizes = Vec::new();
    for (venue_name, text) in &raw.contract_sizes {
        let name = format!("{key}.contract_sizes.{venue_name}");
        let symbol = VenueId::from_name(venue_name)
            .and_then(|venue| symbols.iter().find(|(v, _)| *v == venue));
        let Some((venue, symbol)) = symbol else {
            return Err(invalid(
                name,
                format!("{text:?}"),
                "no symbol of this venue",
            ));
        };
        if !venue.streams().sized_in_contracts(symbol) {
            return Err(invalid(
                name,
                format!("{text:?}"),
                format!("{symbol:?} is sized in the base currency, not in contracts"),
            ));
        }
        match text.parse::<FixedPoint>() {
            Ok(size) if !size.is_zero() => sizes.push((*venue, size)),
            _ => {
                return Err(invalid(
                    name,
                    format!("{text:?}"),
                    "a positive decimal of at most 8 fractional digits",
                ));
            }
        }
    }
    Ok(sizes)
}

/// `venues.<name>.api_key_env` or `api_key_file`: the key read, where the venue needs one.
/// With a `[simulator]`, a key is optional: the simulator takes any, and is sent a stand-in
/// (`Simulator::point`) rather than a real key.
fn api_key(
    venue: VenueId,
    raw: Option<&RawVenue>,
    config_dir: &Path,
    simulated: bool,
) -> Result<Option<ApiKey>, ConfigError> {
    let key = |name: &str| format!("venues.{venue}.{name}");
    let env = raw.and_then(|raw| raw.api_key_env.as_deref());
    let file = raw.and_then(|raw| raw.api_key_file.as_deref());
    let Some(header) = venue.facts().api_key_header else {
        return match (env, file) {
            (Some(name), _) => Err(invalid(key("api_key_env"), format!("{name:?}"), NO_KEY)),
            (_, Some(path)) => Err(invalid(key("api_key_file"), format!("{path:?}"), NO_KEY)),
            (None, None) => Ok(None),
        };
    };
    match (env, file) {
        (None, None) if simulated => Ok(None),
        (None, None) => Err(invalid(
            key("api_key_env"),
            "(unset)",
            format!(
                "the venue's market data needs an API key (sent as {header}): name an \
                 environment variable (api_key_env) or a file (api_key_file) holding it"
            ),
        )),
        (Some(_), Some(path)) => Err(invalid(
            key("api_key_file"),
            format!("{path:?}"),
            "api_key_env is set too: name one source of the key",
        )),
        (Some(name), None) => match std::env::var(name) {
            Ok(text) => ApiKey::parse(&text, key("api_key_env"), &format!("{name:?}")).map(Some),
            Err(_) => Err(invalid(
                key("api_key_env"),
                format!("{name:?}"),
                "no such environment variable (or not UTF-8)",
            )),
        },
        (None, Some(path)) => match std::fs::read_to_string(config_dir.join(path)) {
            Ok(text) => ApiKey::parse(&text, key("api_key_file"), &format!("{path:?}")).map(Some),
            Err(error) => Err(invalid(
                key("api_key_file"),
                format!("{path:?}"),
                format!("cannot read it: {error}"),
            )),
        },
    }
}

/// Why a venue without API keys refuses one.
const NO_KEY: &str = "the venue takes no API key";

/// `venues.<name>.mode` and the diff-mode settings.
fn venue_mode(venue: VenueId, raw: &RawVenue, depth: usize) -> Result<FeedMode, ConfigError> {
    let key = |name: &str| format!("venues.{venue}.{name}");
    let mode = raw
        .mode
        .as_deref()
        .unwrap_or_else(|| defaults::default_mode(venue));
    match mode {
        "snapshot" if !venue.facts().snapshot_streams => {
            return Err(invalid(
                key("mode"),
                "\"snapshot\"",
                "this venue has no snapshot streams: \"diff\" is its only mode",
            ));
        }
        "snapshot" => return Ok(FeedMode::Snapshot),
        "diff" => {}
        other => {
            return Err(invalid(
                key("mode"),
                format!("{other:?}"),
                "expected \"snapshot\" or \"diff\"",
            ));
        }
    }
    let rest_url = raw
        .rest_url
        .clone()
        .unwrap_or_else(|| venue.facts().default_rest_url.to_owned());
    if !(rest_url.starts_with("http://") || rest_url.starts_with("https://")) {
        return Err(invalid(
            key("rest_url"),
            format!("{rest_url:?}"),
            "expected an http:// or https:// URL",
        ));
    }
    let rest_url = rest_url.trim_end_matches('/').to_owned();
    let read = |setting: &IntKey, value| setting.read(&key(setting.key), value);
    // An in-band venue's snapshot depth is the depth it is subscribed at: by default the
    // least that covers the service's book (a deeper book costs the venue's bandwidth
    // and the reader's time, and is never shown).
    let snapshot_depth = match (venue.facts().snapshots, raw.snapshot_depth) {
        (SnapshotSource::InBand, None) => depth as i64,
        (_, configured) => read(&defaults::SNAPSHOT_DEPTH, configured)?,
    };
    let max_levels = read(&defaults::MAX_BOOK_LEVELS, raw.max_book_levels)?;
    if max_levels < depth as i64 {
        return Err(invalid(
            key(defaults::MAX_BOOK_LEVELS.key),
            max_levels,
            format!("must be at least service.depth ({depth})"),
        ));
    }
    let max_buffered = read(&defaults::MAX_BUFFERED_EVENTS, raw.max_buffered_events)?;
    let weight_per_minute = read(
        &defaults::SNAPSHOT_WEIGHT_PER_MINUTE,
        raw.snapshot_weight_per_minute,
    )?;
    let weight = i64::from(venue.snapshots().snapshot_weight(snapshot_depth as usize));
    if weight > weight_per_minute {
        return Err(invalid(
            key("snapshot_weight_per_minute"),
            weight_per_minute,
            format!("below the weight of one snapshot of {snapshot_depth} levels ({weight})"),
        ));
    }
    Ok(FeedMode::Diff(DiffSettings {
        rest_url,
        snapshot_depth: snapshot_depth as usize,
        max_levels: max_levels as usize,
        max_buffered: max_buffered as usize,
        policy: crate::feed::core::snapshot_schedule::SnapshotPolicy {
            weight_per_minute: weight_per_minute as u32,
            spacing: read(&defaults::SNAPSHOT_SPACING_MS, raw.snapshot_spacing_ms)
                .map(milliseconds)?,
            retry_initial: Duration::from_millis(500),
            retry_max: Duration::from_secs(30),
            rate_limited_pause: Duration::from_secs(60),
        },
        snapshot_timeout: read(&defaults::SNAPSHOT_TIMEOUT_MS, raw.snapshot_timeout_ms)
            .map(milliseconds)?,
    }))
}

fn milliseconds(ms: i64) -> Duration {
    Duration::from_millis(ms as u64)
}

/// `ws://` or `wss://`, then a host (`ws://` alone passes a prefix check, and fails only
/// when the reader connects).
fn is_websocket_url(url: &str) -> bool {
    let Some(rest) = url
        .strip_prefix("ws://")
        .or_else(|| url.strip_prefix("wss://"))
    else {
        return false;
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = authority
        .rsplit_once(':')
        .map_or(authority, |(host, _)| host);
    !host.is_empty() && !host.contains(char::is_whitespace)
}

fn unknown_venue_reason() -> String {
    let known: Vec<_> = VenueId::ALL.iter().map(|venue| venue.name()).collect();
    format!("unknown venue (known: {})", known.join(", "))
}

#[cfg(test)]
mod tests;
