//! Every key's default and the values it takes: written here once, stated by
//! `config/default.toml` (the simulator's by `config/sim.toml`), which a test compares.

use super::{ConfigError, MAX_INSTRUMENTS, SIMULATOR_RATES, invalid};
use crate::book::MAX_DEPTH;
use std::net::SocketAddr;
use std::time::Duration;

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
pub const MAX_FEED_DELAY_MS: IntKey = int("service.max_feed_delay_ms", 2_000, 1, 3_600_000);
pub const MAX_INSTRUMENTS_KEY: IntKey = int("service.max_instruments", 64, 1, MAX_INSTRUMENTS);
pub const OUTPUT: TextKey = text("service.output", "jsonl");
pub const LOG_FORMAT: TextKey = text("service.log_format", "text");
pub const IDLE: TextKey = text("merger.idle", "park");
/// How long the `batch` merger sleeps between passes.
pub const BATCH_US: IntKey = int("merger.batch_us", 200, 10, 100_000);
pub const MAX_FRAME_BYTES: IntKey = int("feed.max_frame_bytes", 1 << 20, 4096, 64 << 20);
/// How long before a venue's connection lifetime runs out its connections are renewed
/// (`venues.<name>.renew_after_ms` sets the whole time).
pub const RENEWAL_MARGIN: std::time::Duration = std::time::Duration::from_secs(30 * 60);
pub const READ_IDLE_TIMEOUT_MS: IntKey = int("feed.read_idle_timeout_ms", 30_000, 100, 600_000);
pub const CONNECT_TIMEOUT_MS: IntKey = int("feed.connect_timeout_ms", 10_000, 100, 120_000);
/// 0: a reader thread a connection.
pub const READER_THREADS: IntKey = int("feed.reader_threads", 0, 0, 64);
/// 0: readers woken by each read.
pub const READ_BATCH_US: IntKey = int("feed.batch_us", 0, 0, 100_000);
pub const BACKOFF_INITIAL_MS: IntKey = int("feed.backoff_initial_ms", 100, 1, 60_000);
pub const BACKOFF_MAX_MS: IntKey = int("feed.backoff_max_ms", 30_000, 1, 600_000);
/// At least a second: a reset after any connection at all brings back the reconnect storm
/// the backoff is there to stop (a venue that accepts and drops at once).
pub const BACKOFF_RESET_AFTER_MS: IntKey =
    int("feed.backoff_reset_after_ms", 30_000, 1_000, 3_600_000);
pub const GRPC_LISTEN: TextKey = text("grpc.listen", "127.0.0.1:50051");
pub const GRPC_MAX_CLIENTS: IntKey = int("grpc.max_clients", 1024, 1, 65_536);
pub const GRPC_MAX_QUEUED_QUOTES: IntKey = int("grpc.max_queued_quotes", 64, 1, 4096);
pub const GRPC_CLIENT_BUFFER_BYTES: IntKey =
    int("grpc.client_buffer_bytes", 262_144, 16_384, 67_108_864);
/// Above `grpc.max_clients`: a client beyond those gets `RESOURCE_EXHAUSTED`, not a
/// closed connection.
pub const GRPC_MAX_CONNECTIONS: IntKey = int("grpc.max_connections", 1152, 1, 65_536);
pub const GRPC_HANDSHAKE_TIMEOUT_MS: IntKey = int("grpc.handshake_timeout_ms", 10_000, 10, 600_000);
pub const METRICS_LISTEN: TextKey = text("metrics.listen", "127.0.0.1:9898");
pub const METRICS_MAX_CONNECTIONS: IntKey = int("metrics.max_connections", 64, 1, 65_536);
pub const METRICS_REQUEST_TIMEOUT_MS: IntKey =
    int("metrics.request_timeout_ms", 10_000, 10, 600_000);
/// Off: the page widens what the metrics port shows (the books) and holds a connection
/// a browser; an operator turns it on where the port's readers may see the books.
pub const WEB_ENABLED: BoolKey = BoolKey {
    key: "web.enabled",
    default: false,
};
/// What a screen can follow; each event is a whole book.
pub const WEB_UPDATES_PER_SECOND: IntKey = int("web.updates_per_second", 10, 1, 60);

/// The service's keys above, for the test that `config/default.toml` states them.
pub const SERVICE_INTS: &[&IntKey] = &[
    &DEPTH,
    &STALE_AFTER_MS,
    &MAX_INSTRUMENTS_KEY,
    &BATCH_US,
    &MAX_FRAME_BYTES,
    &READ_IDLE_TIMEOUT_MS,
    &CONNECT_TIMEOUT_MS,
    &READER_THREADS,
    &READ_BATCH_US,
    &BACKOFF_INITIAL_MS,
    &BACKOFF_MAX_MS,
    &BACKOFF_RESET_AFTER_MS,
    &GRPC_MAX_CLIENTS,
    &GRPC_MAX_QUEUED_QUOTES,
    &GRPC_CLIENT_BUFFER_BYTES,
    &GRPC_MAX_CONNECTIONS,
    &GRPC_HANDSHAKE_TIMEOUT_MS,
    &METRICS_MAX_CONNECTIONS,
    &METRICS_REQUEST_TIMEOUT_MS,
    &WEB_UPDATES_PER_SECOND,
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
/// `service.bands_bps`: what a user of such a book asks for first.
pub const BANDS_BPS: [u16; 5] = [5, 10, 25, 50, 100];
pub const BANDS_BPS_MAX: u16 = 5_000;
pub const FULL_DEPTH: BoolKey = BoolKey {
    key: "service.full_depth",
    default: true,
};
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
/// The first wait of a book whose snapshot failed, came too old, or broke soon after its
/// sync; it doubles with each in a row, up to the maximum (at least the first).
pub const SNAPSHOT_RETRY_INITIAL_MS: IntKey = int("snapshot_retry_initial_ms", 500, 10, 60_000);
pub const SNAPSHOT_RETRY_MAX_MS: IntKey = int("snapshot_retry_max_ms", 30_000, 10, 600_000);
/// Venues whose streams cannot show a lost event (`Snapshots::audited`): about how often
/// each diff book is compared with the venue's REST book (0: never), and how long a
/// snapshot waits for the events before it where the venue's ids cannot say.
pub const AUDIT_EVERY_MS: IntKey = int("audit_every_ms", 60_000, 0, 86_400_000);
pub const AUDIT_SETTLE_MS: IntKey = int("audit_settle_ms", 1_000, 0, 60_000);
pub const VENUE_INTS: &[&IntKey] = &[
    &SNAPSHOT_DEPTH,
    &MAX_BOOK_LEVELS,
    &MAX_BUFFERED_EVENTS,
    &SNAPSHOT_WEIGHT_PER_MINUTE,
    &SNAPSHOT_SPACING_MS,
    &SNAPSHOT_TIMEOUT_MS,
    &SNAPSHOT_RETRY_INITIAL_MS,
    &SNAPSHOT_RETRY_MAX_MS,
    &AUDIT_EVERY_MS,
    &AUDIT_SETTLE_MS,
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

impl IntKey {
    /// The value given, or the default; out of range is an error naming `key`.
    pub(super) fn read(&self, key: &str, value: Option<i64>) -> Result<i64, ConfigError> {
        in_range(key, value, self.default, self.range.clone())
    }

    /// A top-level key (named by itself).
    pub(super) fn get(&self, value: Option<i64>) -> Result<i64, ConfigError> {
        self.read(self.key, value)
    }

    /// A top-level key in milliseconds.
    pub(super) fn get_millis(&self, value: Option<i64>) -> Result<Duration, ConfigError> {
        self.get(value).map(milliseconds)
    }
}

impl TextKey {
    pub(super) fn get<'a>(&'a self, value: Option<&'a str>) -> &'a str {
        value.unwrap_or(self.default)
    }

    pub(super) fn socket_address(&self, value: Option<&str>) -> Result<SocketAddr, ConfigError> {
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

pub(super) fn in_range(
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

pub(super) fn milliseconds(ms: i64) -> Duration {
    Duration::from_millis(ms as u64)
}
