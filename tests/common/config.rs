//! A test's configuration, built key by key rather than written out as TOML: what every
//! test needs (no stdout output, the venues at the simulator's URLs) once, and each test's
//! own keys beside it. It goes through the same parse and validation as a file.

use mergebook::config::{Config, ConfigError, RawConfig};
use mergebook::sim::Simulator;
use mergebook::venue::VenueId;
use toml::{Table, Value};

pub struct TestConfig {
    table: Table,
}

impl TestConfig {
    /// No consumers on stdout (`service.output = "none"`), no instruments yet.
    pub fn new() -> Self {
        TestConfig {
            table: Table::new(),
        }
        .set("service.output", "none")
    }

    /// `key` (dotted: `feed.read_idle_timeout_ms`, `venues.binance.mode`) set to `value`.
    pub fn set(mut self, key: &str, value: impl Into<Value>) -> Self {
        set_dotted(&mut self.table, key, value.into());
        self
    }

    /// `venue` read from `url`.
    pub fn venue_url(self, venue: VenueId, url: impl Into<String>) -> Self {
        self.set(&format!("venues.{venue}.url"), url.into())
    }

    /// Each venue of `venues` read from `simulator`.
    pub fn on(self, simulator: &Simulator, venues: &[VenueId]) -> Self {
        venues.iter().fold(self, |config, &venue| {
            config.venue_url(venue, simulator.url(venue))
        })
    }

    /// One more instrument: `name`, merged from each venue's `symbol`.
    pub fn instrument(mut self, name: &str, symbols: &[(VenueId, &str)]) -> Self {
        let mut instrument = Table::new();
        instrument.insert("name".into(), name.into());
        // A venue of several books: its symbols as an array.
        let mut by_venue = Table::new();
        for &(venue, symbol) in symbols {
            match by_venue.get_mut(venue.name()) {
                None => {
                    by_venue.insert(venue.name().to_owned(), Value::from(symbol));
                }
                Some(Value::Array(more)) => more.push(symbol.into()),
                Some(one) => *one = Value::Array(vec![one.clone(), symbol.into()]),
            }
        }
        let symbols = by_venue;
        instrument.insert("symbols".into(), Value::Table(symbols));
        let instruments = self
            .table
            .entry("instruments")
            .or_insert_with(|| Value::Array(Vec::new()));
        instruments
            .as_array_mut()
            .expect("instruments is an array")
            .push(Value::Table(instrument));
        self
    }

    /// The last instrument's `venue` symbol sized in contracts of `size`.
    pub fn contract_size(self, venue: VenueId, size: &str) -> Self {
        self.last_instrument(&format!("contract_sizes.{venue}"), size)
    }

    /// The last instrument's `key` (dotted inside it: `quotes.coinbase`) set to `value`.
    pub fn last_instrument(mut self, key: &str, value: impl Into<Value>) -> Self {
        let instrument = self
            .table
            .get_mut("instruments")
            .and_then(Value::as_array_mut)
            .and_then(|instruments| instruments.last_mut())
            .and_then(Value::as_table_mut)
            .expect("an instrument to set a key of");
        set_dotted(instrument, key, value.into());
        self
    }

    /// One more `[[rates]]` entry: `pair`'s rate from `source` (`"instrument"` or
    /// `"fixed"`) `value`.
    pub fn rate(mut self, pair: &str, source: &str, value: &str) -> Self {
        let mut rate = Table::new();
        rate.insert("pair".into(), pair.into());
        rate.insert(source.into(), value.into());
        let rates = self
            .table
            .entry("rates")
            .or_insert_with(|| Value::Array(Vec::new()));
        rates
            .as_array_mut()
            .expect("rates is an array")
            .push(Value::Table(rate));
        self
    }

    /// As a configuration file holds it.
    pub fn toml(&self) -> String {
        toml::to_string(&self.table).expect("a table serialises")
    }

    /// Parsed and validated, as the service reads a file.
    pub fn build(&self) -> Config {
        self.try_build().unwrap_or_else(|error| panic!("{error}"))
    }

    /// [`TestConfig::build`], its error returned.
    pub fn try_build(&self) -> Result<Config, ConfigError> {
        RawConfig::parse(&self.toml(), "test").and_then(|raw| raw.validate())
    }
}

/// `key` (dotted: `venues.binance.mode`) of `table` set to `value`, its tables made as
/// needed.
fn set_dotted(mut table: &mut Table, key: &str, value: Value) {
    let mut parts = key.split('.').peekable();
    while let Some(part) = parts.next() {
        if parts.peek().is_none() {
            table.insert(part.to_owned(), value);
            return;
        }
        table = table
            .entry(part)
            .or_insert_with(|| Value::Table(Table::new()))
            .as_table_mut()
            .unwrap_or_else(|| panic!("{key}: {part} is not a table"));
    }
}
