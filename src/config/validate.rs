//! Stage two: the raw file validated into [`Config`], every error naming the key and the
//! value.

use super::defaults::{IntKey, in_range, milliseconds};
use super::raw::*;
use super::*;
use crate::feed::core::audit::AuditSettings;
use crate::fixed::{FixedPoint, UnitSize};
use crate::merger::summary::MAX_SOURCES;
use crate::venue::{Credentials, MAX_VENUES, SnapshotSource};
use std::path::Path;

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
        let max_feed_delay = defaults::MAX_FEED_DELAY_MS.get_millis(service.max_feed_delay_ms)?;
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
                "expected \"spin\", \"spin-then-yield\", \"park\" or \"batch\"",
            )
        })?;
        let bands_bps = self.bands_bps()?;
        let feed = self.feed_settings()?;
        let shard = self.shard()?;
        let (instruments, rates, used) = self.instruments(shard)?;
        let venues = self.venue_configs(&used, depth, feed.read_idle_timeout)?;
        let simulator = self.simulator_config()?;
        let nats = self.nats_config(&instruments)?;
        let record = self.record_config()?;

        Ok(Config {
            depth,
            bands_bps,
            stale_after,
            max_feed_delay,
            output,
            log_format,
            merger_core,
            idle,
            merger_batch: Duration::from_micros(
                defaults::BATCH_US.get(self.merger.batch_us)? as u64
            ),
            feed,
            grpc_listen: defaults::GRPC_LISTEN.socket_address(self.grpc.listen.as_deref())?,
            grpc_max_clients: defaults::GRPC_MAX_CLIENTS.get(self.grpc.max_clients)? as usize,
            grpc_max_queued_quotes: defaults::GRPC_MAX_QUEUED_QUOTES
                .get(self.grpc.max_queued_quotes)? as usize,
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
            web: {
                let per_second =
                    defaults::WEB_UPDATES_PER_SECOND.get(self.web.updates_per_second)?;
                let enabled = self.web.enabled.unwrap_or(defaults::WEB_ENABLED.default);
                enabled.then(|| WebView {
                    interval: Duration::from_secs(1) / per_second as u32,
                })
            },
            venues,
            max_instruments: defaults::MAX_INSTRUMENTS_KEY.get(self.service.max_instruments)?
                as usize,
            instruments,
            rates,
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

    /// `service.bands_bps`: at most `MAX_BANDS` distances, ascending, each from 1 bp to
    /// `BANDS_BPS_MAX`.
    fn bands_bps(&self) -> Result<Vec<u16>, ConfigError> {
        let Some(bands) = &self.service.bands_bps else {
            return Ok(defaults::BANDS_BPS.to_vec());
        };
        let valid = bands.len() <= crate::merger::summary::MAX_BANDS
            && bands
                .iter()
                .all(|bp| (1..=i64::from(defaults::BANDS_BPS_MAX)).contains(bp))
            && bands.windows(2).all(|pair| pair[0] < pair[1]);
        if !valid {
            return Err(invalid(
                "service.bands_bps",
                format!("{bands:?}"),
                format!(
                    "at most {} distances in basis points, ascending, each from 1 to {}",
                    crate::merger::summary::MAX_BANDS,
                    defaults::BANDS_BPS_MAX
                ),
            ));
        }
        Ok(bands.iter().map(|&bp| bp as u16).collect())
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
            reader_threads: std::num::NonZeroUsize::new(
                defaults::READER_THREADS.get(self.feed.reader_threads)? as usize,
            ),
            read_batch: match defaults::READ_BATCH_US.get(self.feed.batch_us)? {
                0 => None,
                us => Some(Duration::from_micros(us as u64)),
            },
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

    /// `[[instruments]]` and `[[rates]]` (and `[venues.*]` names), with how many
    /// instruments use each venue.
    /// The instruments, every one checked; with a `shard`, those it serves.
    fn instruments(&self, shard: Option<Shard>) -> Result<ConfiguredInstruments, ConfigError> {
        let venue_fees = super::fees::venue_fees(&self.venues)?;
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
        let rate_plans = super::units::rate_plans(&self.rates)?;
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
            let mut symbols: Vec<(VenueId, String)> = Vec::new();
            let listed = raw.symbols.iter().flat_map(|(venue_name, symbols)| {
                symbols
                    .as_slice()
                    .iter()
                    .map(move |symbol| (venue_name, symbol))
            });
            for (venue_name, symbol) in listed {
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
                        .all(|b| b.is_ascii_alphanumeric() || b"-_/:@".contains(&b))
                {
                    return Err(invalid(
                        format!("{key}.symbols.{venue_name}"),
                        format!("{symbol:?}"),
                        "a symbol is letters, digits, '-', '_', '/', ':' or '@'",
                    ));
                }
                if let Err(reason) = venue.streams().check_symbol(symbol) {
                    return Err(invalid(
                        format!("{key}.symbols.{venue_name}"),
                        format!("{symbol:?}"),
                        reason,
                    ));
                }
                let same =
                    |(v, s): &(VenueId, String)| *v == venue && s.eq_ignore_ascii_case(symbol);
                // One reader subscribes once per symbol and routes its books to one book of
                // one instrument.
                if symbols.iter().any(same) {
                    return Err(invalid(
                        format!("{key}.symbols.{venue_name}"),
                        format!("{symbol:?}"),
                        "listed twice",
                    ));
                }
                let taken = instruments
                    .iter()
                    .find(|other: &&Instrument| other.symbols.iter().any(same));
                if let Some(other) = taken {
                    return Err(invalid(
                        format!("{key}.symbols.{venue_name}"),
                        format!("{symbol:?}"),
                        format!("already used by instrument {:?}", other.name),
                    ));
                }
                used[venue.index()] += 1;
                symbols.push((venue, symbol.clone()));
            }
            if symbols.len() > MAX_SOURCES {
                return Err(invalid(
                    format!("{key}.symbols"),
                    format!("{} symbols", symbols.len()),
                    format!("an instrument merges at most {MAX_SOURCES} books"),
                ));
            }
            let source_names = super::source_names(&symbols);
            let contract_sizes = contract_sizes(&key, raw, &symbols, &source_names)?;
            let units =
                super::units::instrument_units(&key, raw, &symbols, &source_names, &rate_plans)?;
            let taker_fees =
                super::fees::taker_fees(&key, raw, &venue_fees, &symbols, &source_names)?;
            let unit_size = unit_size(&key, raw, units.unit)?;
            instruments.push(Instrument {
                name: raw.name.clone(),
                symbols,
                source_names,
                contract_sizes,
                currency: units.currency,
                price_step: units.price_step,
                quotes: units.quotes,
                unit: units.unit,
                unit_size,
                conversions: units.conversions,
                taker_fees,
            });
        }
        let mut rates = super::units::resolve_rates(rate_plans, &instruments)?;
        if let Some(shard) = shard {
            super::units::keep_shard(shard, &mut instruments, &mut rates)?;
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
        Ok((instruments, rates, used))
    }

    /// `[venues.<name>]` of each venue an instrument uses.
    fn venue_configs(
        &self,
        used: &[usize; MAX_VENUES],
        depth: usize,
        read_idle_timeout: Duration,
    ) -> Result<Vec<VenueConfig>, ConfigError> {
        let mut venues = Vec::new();
        // A venue without a section: every key's default.
        let no_settings = RawVenue::default();
        for &venue in VenueId::ALL.iter().filter(|venue| used[venue.index()] > 0) {
            if let Some(most) = venue.facts().max_subscriptions
                && used[venue.index()] > most
            {
                return Err(invalid(
                    "instruments",
                    format!("{} on {venue}", used[venue.index()]),
                    format!(
                        "{venue} allows at most {most} subscriptions from one IP: shard the \
                         instruments (service.shard) over hosts"
                    ),
                ));
            }
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
            if configured.is_some() && !venue.streams().token_path().is_empty() {
                // Its token request's answer names where to connect.
                return Err(invalid(
                    format!("venues.{venue}.url"),
                    format!("{:?}", configured.unwrap_or_default()),
                    format!(
                        "{venue}'s connections go where its token request \
                         (rest_url + {}) answers: set rest_url",
                        venue.streams().token_path()
                    ),
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
            let settings = raw.unwrap_or(&no_settings);
            let mut mode = venue_mode(venue, settings, depth)?;
            let api_key = api_key(venue, raw, &self.dir, self.simulator.is_some())?;
            if let FeedMode::Diff(diff) = &mut mode {
                diff.whole_book =
                    api_key.is_some() && venue.facts().credentials == Credentials::SignedRest;
                diff.full_depth = self
                    .service
                    .full_depth
                    .unwrap_or(defaults::FULL_DEPTH.default);
            }
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
            let renew_after = match raw.and_then(|raw| raw.renew_after_ms) {
                Some(ms) => {
                    let key = format!("venues.{venue}.renew_after_ms");
                    Some(milliseconds(in_range(
                        &key,
                        Some(ms),
                        0,
                        1000..=86_400_000,
                    )?))
                }
                None => venue
                    .facts()
                    .max_connection_age
                    .map(|lifetime| lifetime.saturating_sub(defaults::RENEWAL_MARGIN)),
            };
            venues.push(VenueConfig {
                venue,
                url,
                mode,
                allow_one_sided,
                client_ping,
                read_idle_timeout,
                renew_after,
                api_key,
                listing_url: match venue.streams().listing_path() {
                    "" => None,
                    path => Some(format!("{}{path}", rest_url(venue, settings)?)),
                },
                token_url: match venue.streams().token_path() {
                    "" => None,
                    path => Some(format!("{}{path}", rest_url(venue, settings)?)),
                },
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
                prices: raw
                    .prices
                    .iter()
                    .flatten()
                    .map(|(name, text)| {
                        let key = format!("simulator.prices.{name:?}");
                        if !self.instruments.iter().any(|i| i.name == *name) {
                            return Err(invalid(key, format!("{text:?}"), "no such instrument"));
                        }
                        match text.parse::<FixedPoint>() {
                            Ok(price) if price >= crate::sim::MIN_START_PRICE => {
                                Ok((name.clone(), price))
                            }
                            _ => Err(invalid(
                                key,
                                format!("{text:?}"),
                                format!("a decimal of at least {}", crate::sim::MIN_START_PRICE),
                            )),
                        }
                    })
                    .collect::<Result<_, ConfigError>>()?,
            }),
        })
    }
}

/// The instruments a process serves, the rates they read, and how many use each venue.
type ConfiguredInstruments = (Vec<Instrument>, Vec<RateSource>, [usize; MAX_VENUES]);

/// The source a key of `table` (`contract_sizes`, `quotes`) names, by its book's name
/// (`Instrument::source_names`); else the error naming the key in full.
pub(super) fn named_source(
    names: &[String],
    key: &str,
    table: &str,
    (book_name, text): (&String, &String),
) -> Result<(usize, String), ConfigError> {
    let name = format!("{key}.{table}.{}", source_key(book_name));
    match names.iter().position(|of| of == book_name) {
        Some(source) => Ok((source, name)),
        None => Err(invalid(
            name,
            format!("{text:?}"),
            "no book of this name: a venue of the instrument, or venue:symbol where it takes \
             several books of the venue",
        )),
    }
}

/// A book's name as a key of a TOML table (`okx`, `"okx:BTC-USDT-SWAP"`), for messages.
pub(super) fn source_key(name: &str) -> String {
    match name.contains(':') {
        true => format!("{name:?}"),
        false => name.to_owned(),
    }
}

/// An instrument's `unit_size`: a power of ten of coins, and for an instrument whose
/// amounts count coins (a quote-notional one's count its currency).
fn unit_size(key: &str, raw: &RawInstrument, unit: AmountUnit) -> Result<UnitSize, ConfigError> {
    let Some(text) = &raw.unit_size else {
        return Ok(UnitSize::COIN);
    };
    let key = format!("{key}.unit_size");
    let Some(size) = UnitSize::parse(text) else {
        let most = UnitSize::MAX_EXPONENT;
        return Err(invalid(
            key,
            format!("{text:?}"),
            format!(
                "a power of ten of coins from 10^-{most} to 10^{most}, as \"1000000\", \"1\" or \"0.001\""
            ),
        ));
    };
    if !size.is_coin() && unit == AmountUnit::Quote {
        return Err(invalid(
            key,
            format!("{text:?}"),
            "the instrument's amounts count its currency (unit = \"quote\"), not coins",
        ));
    }
    Ok(size)
}

/// An instrument's `contract_sizes`: one for each symbol sized in contracts, and none for
/// another, each an exact positive decimal.
fn contract_sizes(
    key: &str,
    raw: &RawInstrument,
    symbols: &[(VenueId, String)],
    names: &[String],
) -> Result<Vec<(usize, FixedPoint)>, ConfigError> {
    for ((venue, symbol), name) in symbols.iter().zip(names) {
        if venue.streams().sized_in_contracts(symbol) && !raw.contract_sizes.contains_key(name) {
            let name = source_key(name);
            return Err(invalid(
                format!("{key}.symbols.{venue}"),
                format!("{symbol:?}"),
                if venue.streams().inverse(symbol) {
                    format!(
                        "an inverse contract: set {key}.contract_sizes.{name} to the \
                         value of one contract in its quote currency (\"100\")"
                    )
                } else {
                    format!(
                        "sized in contracts: set {key}.contract_sizes.{name} to the base \
                         currency one contract is (\"0.01\")"
                    )
                },
            ));
        }
    }
    let mut sizes = Vec::new();
    for entry in &raw.contract_sizes {
        let text = entry.1;
        let (source, name) = named_source(names, key, "contract_sizes", entry)?;
        let (venue, symbol) = &symbols[source];
        if !venue.streams().sized_in_contracts(symbol) {
            return Err(invalid(
                name,
                format!("{text:?}"),
                format!("{symbol:?} is sized in the base currency, not in contracts"),
            ));
        }
        match text.parse::<FixedPoint>() {
            Ok(size) if !size.is_zero() => sizes.push((source, size)),
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

/// `venues.<name>.api_key_env` or `api_key_file`: the key read, where the venue takes one
/// (`VenueFacts::credentials`). A key sent in the upgrade is required, except with a
/// `[simulator]`, which takes any and is sent a stand-in (`Simulator::point`); credentials
/// sent in a request (`client_id:client_secret`) are optional: without them, the venue's
/// public streams are followed.
fn api_key(
    venue: VenueId,
    raw: Option<&RawVenue>,
    config_dir: &Path,
    simulated: bool,
) -> Result<Option<ApiKey>, ConfigError> {
    let key = |name: &str| format!("venues.{venue}.{name}");
    let env = raw.and_then(|raw| raw.api_key_env.as_deref());
    let file = raw.and_then(|raw| raw.api_key_file.as_deref());
    let credentials = venue.facts().credentials;
    // The header a key is required for (none where the key is optional).
    let required = match credentials {
        Credentials::None => {
            return match (env, file) {
                (Some(name), _) => Err(invalid(key("api_key_env"), format!("{name:?}"), NO_KEY)),
                (_, Some(path)) => Err(invalid(key("api_key_file"), format!("{path:?}"), NO_KEY)),
                (None, None) => Ok(None),
            };
        }
        Credentials::UpgradeHeader(header) => (!simulated).then_some(header),
        Credentials::AuthRequest | Credentials::SignedRest => None,
    };
    let (text, at, source) = match (env, file) {
        (None, None) => {
            let Some(header) = required else {
                return Ok(None);
            };
            return Err(invalid(
                key("api_key_env"),
                "(unset)",
                format!(
                    "the venue's market data needs an API key (sent as {header}): name an \
                     environment variable (api_key_env) or a file (api_key_file) holding it"
                ),
            ));
        }
        (Some(_), Some(path)) => {
            return Err(invalid(
                key("api_key_file"),
                format!("{path:?}"),
                "api_key_env is set too: name one source of the key",
            ));
        }
        (Some(name), None) => match std::env::var(name) {
            Ok(text) => (text, key("api_key_env"), format!("{name:?}")),
            Err(_) => {
                return Err(invalid(
                    key("api_key_env"),
                    format!("{name:?}"),
                    "no such environment variable (or not UTF-8)",
                ));
            }
        },
        (None, Some(path)) => match std::fs::read_to_string(config_dir.join(path)) {
            Ok(text) => (text, key("api_key_file"), format!("{path:?}")),
            Err(error) => {
                return Err(invalid(
                    key("api_key_file"),
                    format!("{path:?}"),
                    format!("cannot read it: {error}"),
                ));
            }
        },
    };
    let parsed = ApiKey::parse(&text, at.clone(), &source)?;
    if credentials == Credentials::AuthRequest && parsed.client_credentials().is_none() {
        return Err(invalid(
            at,
            source,
            "expected the API key's client id and client secret as client_id:client_secret",
        ));
    }
    if credentials == Credentials::SignedRest && parsed.signing_parts().is_none() {
        return Err(invalid(
            at,
            source,
            "expected the API key, its secret and its passphrase as key:secret:passphrase",
        ));
    }
    Ok(Some(parsed))
}

/// Why a venue without API keys refuses one.
const NO_KEY: &str = "the venue takes no API key";

/// `venues.<name>.rest_url`, or the venue's own, without a trailing `/`.
fn rest_url(venue: VenueId, raw: &RawVenue) -> Result<String, ConfigError> {
    let rest_url = raw
        .rest_url
        .clone()
        .unwrap_or_else(|| venue.facts().default_rest_url.to_owned());
    if !(rest_url.starts_with("http://") || rest_url.starts_with("https://")) {
        return Err(invalid(
            format!("venues.{venue}.rest_url"),
            format!("{rest_url:?}"),
            "expected an http:// or https:// URL",
        ));
    }
    Ok(rest_url.trim_end_matches('/').to_owned())
}

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
        "diff" if !venue.facts().diff_streams => {
            return Err(invalid(
                key("mode"),
                "\"diff\"",
                "this venue has no diff streams: \"snapshot\" is its only mode",
            ));
        }
        "diff" => {}
        other => {
            return Err(invalid(
                key("mode"),
                format!("{other:?}"),
                "expected \"snapshot\" or \"diff\"",
            ));
        }
    }
    let rest_url = rest_url(venue, raw)?;
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
    let retry_initial = read(
        &defaults::SNAPSHOT_RETRY_INITIAL_MS,
        raw.snapshot_retry_initial_ms,
    )?;
    let retry_max = read(&defaults::SNAPSHOT_RETRY_MAX_MS, raw.snapshot_retry_max_ms)?;
    if retry_max < retry_initial {
        return Err(invalid(
            key(defaults::SNAPSHOT_RETRY_MAX_MS.key),
            retry_max,
            format!("must be at least snapshot_retry_initial_ms ({retry_initial})"),
        ));
    }
    let (retry_initial, retry_max) = (milliseconds(retry_initial), milliseconds(retry_max));
    let audit = audit_settings(venue, raw)?;
    Ok(FeedMode::Diff(DiffSettings {
        rest_url,
        snapshot_depth: snapshot_depth as usize,
        max_levels: max_levels as usize,
        max_buffered: max_buffered as usize,
        policy: crate::feed::core::snapshot_schedule::SnapshotPolicy {
            weight_per_minute: weight_per_minute as u32,
            spacing: read(&defaults::SNAPSHOT_SPACING_MS, raw.snapshot_spacing_ms)
                .map(milliseconds)?,
            retry_initial,
            retry_max,
            rate_limited_pause: Duration::from_secs(60),
        },
        snapshot_timeout: read(&defaults::SNAPSHOT_TIMEOUT_MS, raw.snapshot_timeout_ms)
            .map(milliseconds)?,
        audit,
        // Set once the key and the service's settings are read (`venues`).
        whole_book: false,
        full_depth: false,
    }))
}

/// `venues.<name>.audit_every_ms` and `audit_settle_ms`: on by default where the venue's
/// books are audited, refused where they are not (its streams show every loss).
fn audit_settings(venue: VenueId, raw: &RawVenue) -> Result<Option<AuditSettings>, ConfigError> {
    let key = |name: &str| format!("venues.{venue}.{name}");
    if !venue.snapshots().audited() {
        let set = [
            (defaults::AUDIT_EVERY_MS.key, raw.audit_every_ms),
            (defaults::AUDIT_SETTLE_MS.key, raw.audit_settle_ms),
        ];
        return match set.into_iter().find(|(_, value)| value.is_some()) {
            Some((name, Some(value))) => Err(invalid(
                key(name),
                value,
                "this venue's streams show a lost event: its books are not audited",
            )),
            _ => Ok(None),
        };
    }
    let read = |setting: &IntKey, value| setting.read(&key(setting.key), value);
    let every = read(&defaults::AUDIT_EVERY_MS, raw.audit_every_ms)?;
    let settle = read(&defaults::AUDIT_SETTLE_MS, raw.audit_settle_ms)?;
    Ok((every > 0).then(|| AuditSettings {
        every: milliseconds(every),
        settle: milliseconds(settle),
    }))
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

/// An instrument name is printed unescaped in JSON and used as a metric label.
fn valid_instrument_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"/-_.".contains(&b))
}
