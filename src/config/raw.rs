//! Stage one: the file as written. Every table is `deny_unknown_fields`, so a misspelt key
//! is an error, not a default.

use serde::Deserialize;
use std::collections::BTreeMap;

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
    pub web: RawWeb,
    #[serde(default)]
    pub venues: BTreeMap<String, RawVenue>,
    #[serde(default)]
    pub instruments: Vec<RawInstrument>,
    #[serde(default)]
    pub rates: Vec<RawRate>,
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
    pub max_feed_delay_ms: Option<i64>,
    pub max_instruments: Option<i64>,
    /// Whether readers in diff mode hand the merger their whole books for quotes.
    pub full_depth: Option<bool>,
    /// The distances from the mid, in basis points, that summaries count each side's
    /// depth within.
    pub bands_bps: Option<Vec<i64>>,
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
    pub batch_us: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawFeed {
    pub max_frame_bytes: Option<i64>,
    pub reader_threads: Option<i64>,
    pub batch_us: Option<i64>,
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

/// `[web]`: the book in a browser, on the metrics port.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawWeb {
    pub enabled: Option<bool>,
    pub updates_per_second: Option<i64>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawGrpc {
    pub listen: Option<String>,
    pub max_clients: Option<i64>,
    pub max_queued_quotes: Option<i64>,
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
    pub snapshot_retry_initial_ms: Option<i64>,
    pub snapshot_retry_max_ms: Option<i64>,
    pub audit_every_ms: Option<i64>,
    pub audit_settle_ms: Option<i64>,
    pub allow_one_sided: Option<bool>,
    /// Its taker fee in basis points, a decimal text (`"10"`, `"7.5"`): what the all-in
    /// book and quotes net out of its prices.
    pub taker_fee_bps: Option<String>,
    pub ping_interval_ms: Option<i64>,
    pub read_idle_timeout_ms: Option<i64>,
    pub renew_after_ms: Option<i64>,
    /// The environment variable holding the venue's API key (`VenueFacts::credentials`).
    pub api_key_env: Option<String>,
    /// A file holding the venue's API key (a relative path starts at the config file's
    /// directory).
    pub api_key_file: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawInstrument {
    pub name: String,
    /// Venue name → that venue's symbol for the instrument, or its symbols where the
    /// instrument takes several of its books (`["BTC-USDT", "BTC-USDT-SWAP"]`).
    pub symbols: BTreeMap<String, OneOrMore>,
    /// Book name (`Instrument::source_names`) → what one contract is, where that book's
    /// symbol is a derivative sized in contracts: an amount of the base currency
    /// (`"0.01"`), or for an inverse contract its value in its quote currency (`"100"`).
    #[serde(default)]
    pub contract_sizes: BTreeMap<String, String>,
    /// The currency its prices are shown in (`"USD"`); unset: the part of its name after
    /// the `/`.
    pub currency: Option<String>,
    /// What converted prices are rounded to (`"0.01"`).
    pub price_step: Option<String>,
    /// What its amounts count: `"base"` (the base coin; the default) or `"quote"` (their
    /// notional in its currency, where inverse contracts merge).
    pub unit: Option<String>,
    /// How many coins of its base one unit of its amounts is, a power of ten
    /// (`"1000000"`; `"1"`, the default): its prices are per unit.
    pub unit_size: Option<String>,
    /// Book name → the currency that book's symbol is quoted in, where the symbol does
    /// not say (`"USDC"`).
    #[serde(default)]
    pub quotes: BTreeMap<String, String>,
    /// Book name → its taker fee in basis points, where it differs from its venue's
    /// `taker_fee_bps`.
    #[serde(default)]
    pub taker_fees_bps: BTreeMap<String, String>,
}

/// A venue's symbol of an instrument, or its symbols.
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum OneOrMore {
    One(String),
    More(Vec<String>),
}

impl OneOrMore {
    pub fn as_slice(&self) -> &[String] {
        match self {
            OneOrMore::One(one) => std::slice::from_ref(one),
            OneOrMore::More(more) => more,
        }
    }
}

/// `[[rates]]`: where the rate of one currency pair comes from.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawRate {
    /// `"USDT/USD"`: what one USDT sells for and costs in USD.
    pub pair: String,
    /// A configured instrument whose merged best bid and ask are the rate.
    pub instrument: Option<String>,
    /// A rate an operator sets, both ways (`"1.0001"`).
    pub fixed: Option<String>,
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
    /// Instrument name → the price its venues' markets start around (`"90000"`).
    pub prices: Option<BTreeMap<String, String>>,
}
