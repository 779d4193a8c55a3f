//! Consolidated summaries as a Parquet file (`mergebook replay … --parquet FILE`): one row
//! a summary, in the order they were published, for pandas, polars and DuckDB; and each
//! source's own book sampled at fixed times (`--venue-books FILE`, [`SourceBookParquet`]).
//!
//! Columns (docs/history.md has the table and example queries):
//!
//! - `instrument` (string), `seq` (uint64: the instrument's summary number), `ts`
//!   (timestamp[ns, UTC]: when it was published; in a replay, its newest book's receipt);
//! - `spread` (decimal128(38, 8), null while a side is empty);
//! - per level `1..=depth` and side: `bid_price_<n>`, `bid_amount_<n>`
//!   (decimal128(38, 8)), `bid_venue_<n>` (string), the same for `ask_`; null past the
//!   book's levels;
//! - per source of any instrument (the configuration's source names): `state_<source>`
//!   (string: `synced`, `stale`, …), `received_ts_<source>` and `exchange_ts_<source>`
//!   (timestamp[ns, UTC]: its latest book's receipt and the venue's own time of it); null
//!   where the row's instrument has no such source, or the venue sent no time;
//! - `currency`, `amount_unit` (string, null where the instrument does not say);
//! - `unit_size` (string: how many coins a unit of the amounts is, `"1"` or `"1000000"`;
//!   the prices are a unit's).
//!
//! Prices and amounts are exact: a `FixedPoint`'s 8 decimals are a decimal128's scale, so
//! its raw integer is the column's value. Rows are written in batches of
//! [`ROWS_PER_BATCH`] and row groups of [`ROWS_PER_GROUP`]: memory stays bounded whatever
//! the replay's length; zstd as the recordings use.

use crate::book::{Side, TopBook};
use crate::config::Instrument;
use crate::fixed::FixedPoint;
use crate::merger::summary::{Summary, VenueState};
use arrow_array::builder::{
    Decimal128Builder, StringBuilder, TimestampNanosecondBuilder, UInt64Builder,
};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema, TimeUnit};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::{EnabledStatistics, WriterProperties};
use std::sync::Arc;

/// Rows gathered before they are handed to the Parquet writer.
pub const ROWS_PER_BATCH: usize = 8192;

/// Rows a row group holds: a group's encoded pages are the writer's one buffer that grows
/// with rows (tens of MB for the demo's 114 columns); readers take a group at a time.
pub const ROWS_PER_GROUP: usize = 65_536;

/// The decimals of every price and amount: `FixedPoint`'s.
const SCALE: i8 = 8;

/// A decimal128 holds 38 digits: every `FixedPoint` (20 digits at most).
const PRECISION: u8 = 38;

fn decimal() -> DataType {
    DataType::Decimal128(PRECISION, SCALE)
}

fn timestamp() -> DataType {
    DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into()))
}

/// Why the file could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ParquetError {
    #[error("cannot create {path}: {source}")]
    Create {
        path: String,
        source: std::io::Error,
    },
    #[error("writing Parquet: {0}")]
    Write(#[from] parquet::errors::ParquetError),
    #[error("building a batch: {0}")]
    Batch(#[from] arrow_schema::ArrowError),
}

/// One level's price and amount columns (null past a book's levels).
struct LevelPriceAmount {
    price: Decimal128Builder,
    amount: Decimal128Builder,
}

impl LevelPriceAmount {
    fn new() -> LevelPriceAmount {
        LevelPriceAmount {
            price: decimal_builder(),
            amount: decimal_builder(),
        }
    }

    /// A row's level: its price and amount, or none.
    fn append(&mut self, level: Option<(FixedPoint, FixedPoint)>) {
        self.price
            .append_option(level.map(|(price, _)| i128::from(price.raw())));
        self.amount
            .append_option(level.map(|(_, amount)| i128::from(amount.raw())));
    }

    fn finish_into(&mut self, columns: &mut Vec<ArrayRef>) {
        columns.push(Arc::new(self.price.finish()));
        columns.push(Arc::new(self.amount.finish()));
    }
}

/// One side's columns of one level of a summary.
struct LevelColumns {
    level: LevelPriceAmount,
    venue: StringBuilder,
}

/// One source name's columns.
struct SourceColumns {
    /// Per instrument, which of its sources has this name, if one does.
    source_of: Vec<Option<usize>>,
    state: StringBuilder,
    received: TimestampNanosecondBuilder,
    exchange: TimestampNanosecondBuilder,
}

/// Writes summaries into a Parquet file: [`SummaryParquet::write`] each, then
/// [`SummaryParquet::finish`] (a file not finished has no footer and reads as corrupt).
pub struct SummaryParquet {
    batches: Batches,
    instrument: StringBuilder,
    sequence: UInt64Builder,
    published: TimestampNanosecondBuilder,
    spread: Decimal128Builder,
    bids: Vec<LevelColumns>,
    asks: Vec<LevelColumns>,
    sources: Vec<SourceColumns>,
    currency: StringBuilder,
    amount_unit: StringBuilder,
    unit_size: StringBuilder,
}

impl SummaryParquet {
    /// A writer of books `depth` levels deep of `instruments` into a new file at `path`.
    pub fn create(
        path: &std::path::Path,
        depth: usize,
        instruments: &[Instrument],
    ) -> Result<SummaryParquet, ParquetError> {
        let mut source_names: Vec<String> = Vec::new();
        for name in instruments.iter().flat_map(|i| &i.source_names) {
            if !source_names.contains(name) {
                source_names.push(name.clone());
            }
        }
        let mut fields = vec![
            Field::new("instrument", DataType::Utf8, false),
            Field::new("seq", DataType::UInt64, false),
            Field::new("ts", timestamp(), false),
            Field::new("spread", decimal(), true),
        ];
        for side in ["bid", "ask"] {
            for level in 1..=depth {
                fields.push(Field::new(format!("{side}_price_{level}"), decimal(), true));
                fields.push(Field::new(
                    format!("{side}_amount_{level}"),
                    decimal(),
                    true,
                ));
                fields.push(Field::new(
                    format!("{side}_venue_{level}"),
                    DataType::Utf8,
                    true,
                ));
            }
        }
        for name in &source_names {
            fields.push(Field::new(format!("state_{name}"), DataType::Utf8, true));
            fields.push(Field::new(format!("received_ts_{name}"), timestamp(), true));
            fields.push(Field::new(format!("exchange_ts_{name}"), timestamp(), true));
        }
        fields.push(Field::new("currency", DataType::Utf8, true));
        fields.push(Field::new("amount_unit", DataType::Utf8, true));
        fields.push(Field::new("unit_size", DataType::Utf8, false));
        let levels = || {
            (0..depth)
                .map(|_| LevelColumns {
                    level: LevelPriceAmount::new(),
                    venue: StringBuilder::new(),
                })
                .collect()
        };
        Ok(SummaryParquet {
            batches: Batches::create(path, fields)?,
            instrument: StringBuilder::new(),
            sequence: UInt64Builder::new(),
            published: timestamp_builder(),
            spread: decimal_builder(),
            bids: levels(),
            asks: levels(),
            sources: source_names
                .into_iter()
                .map(|name| SourceColumns {
                    source_of: (instruments.iter())
                        .map(|i| i.source_names.iter().position(|source| *source == name))
                        .collect(),
                    state: StringBuilder::new(),
                    received: timestamp_builder(),
                    exchange: timestamp_builder(),
                })
                .collect(),
            currency: StringBuilder::new(),
            amount_unit: StringBuilder::new(),
            unit_size: StringBuilder::new(),
        })
    }

    /// Adds `summary` of `instrument` (the `summary.instrument`th of those the writer was
    /// created for) as a row.
    pub fn write(
        &mut self,
        instrument: &Instrument,
        summary: &Summary,
    ) -> Result<(), ParquetError> {
        self.instrument.append_value(&instrument.name);
        self.sequence.append_value(summary.sequence);
        self.published.append_value(unix_ns(summary.published_ns));
        self.spread.append_option(summary.book.spread.map(|spread| {
            let magnitude = i128::from(spread.magnitude.raw());
            if spread.negative {
                -magnitude
            } else {
                magnitude
            }
        }));
        for (side, columns) in [(Side::Bid, &mut self.bids), (Side::Ask, &mut self.asks)] {
            let levels = summary.book.side(side).as_slice();
            for (index, column) in columns.iter_mut().enumerate() {
                let level = levels.get(index);
                column
                    .level
                    .append(level.map(|level| (level.price, level.amount)));
                column.venue.append_option(
                    level.map(|level| &instrument.source_names[usize::from(level.source)]),
                );
            }
        }
        for column in &mut self.sources {
            match column.source_of.get(summary.instrument).copied().flatten() {
                Some(source) => {
                    column
                        .state
                        .append_value(summary.source_states[source].name());
                    let received = summary.source_received_ns[source];
                    column.received.append_option(
                        (received != 0).then(|| unix_ns(summary.received_unix_ns(received))),
                    );
                    let exchange = summary.source_exchange_time_ns[source];
                    column
                        .exchange
                        .append_option((exchange != 0).then(|| unix_ns(exchange)));
                }
                None => {
                    column.state.append_null();
                    column.received.append_null();
                    column.exchange.append_null();
                }
            }
        }
        self.currency
            .append_option(summary.currency.map(|c| c.to_string()));
        self.amount_unit
            .append_option(summary.amount_unit.map(|c| c.to_string()));
        self.unit_size.append_value(summary.unit_size.to_string());
        if self.batches.row_added() {
            let columns = self.columns();
            self.batches.write(columns)?;
        }
        Ok(())
    }

    /// The gathered rows' columns, the builders emptied.
    fn columns(&mut self) -> Vec<ArrayRef> {
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(self.instrument.finish()),
            Arc::new(self.sequence.finish()),
            Arc::new(self.published.finish()),
            Arc::new(self.spread.finish()),
        ];
        for side in [&mut self.bids, &mut self.asks] {
            for level in side.iter_mut() {
                level.level.finish_into(&mut columns);
                columns.push(Arc::new(level.venue.finish()));
            }
        }
        for source in &mut self.sources {
            columns.push(Arc::new(source.state.finish()));
            columns.push(Arc::new(source.received.finish()));
            columns.push(Arc::new(source.exchange.finish()));
        }
        columns.push(Arc::new(self.currency.finish()));
        columns.push(Arc::new(self.amount_unit.finish()));
        columns.push(Arc::new(self.unit_size.finish()));
        columns
    }

    /// Writes the last rows and the file's footer.
    pub fn finish(mut self) -> Result<(), ParquetError> {
        let columns = self.columns();
        self.batches.finish(columns)
    }
}

/// Writes each source's own book sampled at fixed times (`mergebook replay …
/// --venue-books FILE`): one row a source and sample, [`SourceBookParquet::write`] each,
/// then [`SourceBookParquet::finish`]. Columns: `ts` (the sample's time), `instrument`,
/// `source` (its source name), `venue`, `symbol`, `state`, `received_ts` and
/// `exchange_ts` of the book, `venue_seq` (the venue's own sequence of it, null where it
/// has none), and per level `1..=depth`: `bid_price_<n>`, `bid_amount_<n>`,
/// `ask_price_<n>`, `ask_amount_<n>`; the levels are null past the book's, and all of them
/// while the source has no book of its own (any state but `synced`, `one_sided` and
/// `crossed`). The book is the venue's as its reader published it: prices in the currency
/// the venue quotes, amounts in the base currency (contracts times their size); the
/// instrument's conversions and `unit` apply to the merged book only.
pub struct SourceBookParquet {
    batches: Batches,
    sampled: TimestampNanosecondBuilder,
    instrument: StringBuilder,
    source: StringBuilder,
    venue: StringBuilder,
    symbol: StringBuilder,
    state: StringBuilder,
    received: TimestampNanosecondBuilder,
    exchange: TimestampNanosecondBuilder,
    venue_sequence: UInt64Builder,
    bids: Vec<LevelPriceAmount>,
    asks: Vec<LevelPriceAmount>,
}

impl SourceBookParquet {
    /// A writer of books `depth` levels deep into a new file at `path`.
    pub fn create(path: &std::path::Path, depth: usize) -> Result<SourceBookParquet, ParquetError> {
        let mut fields = vec![
            Field::new("ts", timestamp(), false),
            Field::new("instrument", DataType::Utf8, false),
            Field::new("source", DataType::Utf8, false),
            Field::new("venue", DataType::Utf8, false),
            Field::new("symbol", DataType::Utf8, false),
            Field::new("state", DataType::Utf8, false),
            Field::new("received_ts", timestamp(), true),
            Field::new("exchange_ts", timestamp(), true),
            Field::new("venue_seq", DataType::UInt64, true),
        ];
        for side in ["bid", "ask"] {
            for level in 1..=depth {
                fields.push(Field::new(format!("{side}_price_{level}"), decimal(), true));
                fields.push(Field::new(
                    format!("{side}_amount_{level}"),
                    decimal(),
                    true,
                ));
            }
        }
        let levels = || (0..depth).map(|_| LevelPriceAmount::new()).collect();
        Ok(SourceBookParquet {
            batches: Batches::create(path, fields)?,
            sampled: timestamp_builder(),
            instrument: StringBuilder::new(),
            source: StringBuilder::new(),
            venue: StringBuilder::new(),
            symbol: StringBuilder::new(),
            state: StringBuilder::new(),
            received: timestamp_builder(),
            exchange: timestamp_builder(),
            venue_sequence: UInt64Builder::new(),
            bids: levels(),
            asks: levels(),
        })
    }

    /// Adds the `source`th book of `instrument`, in `state`, as sampled at `sampled_ns`
    /// (ns since the Unix epoch, as are the book's times).
    pub fn write(
        &mut self,
        sampled_ns: u64,
        instrument: &Instrument,
        source: usize,
        state: VenueState,
        book: &TopBook,
    ) -> Result<(), ParquetError> {
        let (venue, symbol) = &instrument.symbols[source];
        self.sampled.append_value(unix_ns(sampled_ns));
        self.instrument.append_value(&instrument.name);
        self.source.append_value(&instrument.source_names[source]);
        self.venue.append_value(venue.name());
        self.symbol.append_value(symbol);
        self.state.append_value(state.name());
        let own = matches!(
            state,
            VenueState::Synced | VenueState::OneSided | VenueState::Crossed
        );
        let time = |ns: u64| (own && ns != 0).then(|| unix_ns(ns));
        self.received.append_option(time(book.received_ns));
        self.exchange.append_option(time(book.exchange_time_ns));
        self.venue_sequence
            .append_option((own && book.venue_sequence != 0).then_some(book.venue_sequence));
        for (side, columns) in [(Side::Bid, &mut self.bids), (Side::Ask, &mut self.asks)] {
            let levels = book.side(side).as_slice();
            for (index, column) in columns.iter_mut().enumerate() {
                let level = levels.get(index).filter(|_| own);
                column.append(level.map(|level| (level.price, level.amount)));
            }
        }
        if self.batches.row_added() {
            let columns = self.columns();
            self.batches.write(columns)?;
        }
        Ok(())
    }

    /// The gathered rows' columns, the builders emptied.
    fn columns(&mut self) -> Vec<ArrayRef> {
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(self.sampled.finish()),
            Arc::new(self.instrument.finish()),
            Arc::new(self.source.finish()),
            Arc::new(self.venue.finish()),
            Arc::new(self.symbol.finish()),
            Arc::new(self.state.finish()),
            Arc::new(self.received.finish()),
            Arc::new(self.exchange.finish()),
            Arc::new(self.venue_sequence.finish()),
        ];
        for side in [&mut self.bids, &mut self.asks] {
            for level in side.iter_mut() {
                level.finish_into(&mut columns);
            }
        }
        columns
    }

    /// Writes the last rows and the file's footer.
    pub fn finish(mut self) -> Result<(), ParquetError> {
        let columns = self.columns();
        self.batches.finish(columns)
    }
}

/// A Parquet file written a batch of [`ROWS_PER_BATCH`] rows at a time: its writer and
/// how many rows its owner's builders hold.
struct Batches {
    writer: ArrowWriter<std::fs::File>,
    schema: Arc<Schema>,
    rows: usize,
}

impl Batches {
    /// A new file at `path` of the columns `fields`.
    fn create(path: &std::path::Path, fields: Vec<Field>) -> Result<Batches, ParquetError> {
        let schema = Arc::new(Schema::new(fields));
        Ok(Batches {
            writer: create_writer(path, &schema)?,
            schema,
            rows: 0,
        })
    }

    /// A row added to the builders; true when they hold a whole batch, to [`Batches::write`].
    fn row_added(&mut self) -> bool {
        self.rows += 1;
        self.rows == ROWS_PER_BATCH
    }

    /// Hands the gathered rows (`columns`, the builders' contents) to the writer as one
    /// batch.
    fn write(&mut self, columns: Vec<ArrayRef>) -> Result<(), ParquetError> {
        if self.rows == 0 {
            return Ok(());
        }
        let batch = RecordBatch::try_new(Arc::clone(&self.schema), columns)?;
        self.writer.write(&batch)?;
        self.rows = 0;
        Ok(())
    }

    /// Writes the last rows and the file's footer.
    fn finish(mut self, columns: Vec<ArrayRef>) -> Result<(), ParquetError> {
        self.write(columns)?;
        self.writer.close()?;
        Ok(())
    }
}

/// A Parquet writer of `schema` into a new file at `path`: zstd, row groups of
/// [`ROWS_PER_GROUP`].
fn create_writer(
    path: &std::path::Path,
    schema: &Arc<Schema>,
) -> Result<ArrowWriter<std::fs::File>, ParquetError> {
    let properties = WriterProperties::builder()
        .set_compression(Compression::ZSTD(ZstdLevel::try_new(3)?))
        .set_max_row_group_row_count(Some(ROWS_PER_GROUP))
        // Without statistics and page indexes: with them, the writer keeps about 36 KB a
        // column chunk until the file closes (measured with parquet 60: 1.1 GB more at 11
        // million rows), which a file of any length must not. Readers scan; a filter on
        // `ts` or a price still works, without skipping groups.
        .set_statistics_enabled(EnabledStatistics::None)
        .set_offset_index_disabled(true)
        .set_created_by(format!("mergebook {}", env!("CARGO_PKG_VERSION")))
        .build();
    let file = std::fs::File::create(path).map_err(|source| ParquetError::Create {
        path: path.display().to_string(),
        source,
    })?;
    Ok(ArrowWriter::try_new(
        file,
        Arc::clone(schema),
        Some(properties),
    )?)
}

fn decimal_builder() -> Decimal128Builder {
    Decimal128Builder::new().with_data_type(decimal())
}

fn timestamp_builder() -> TimestampNanosecondBuilder {
    TimestampNanosecondBuilder::new().with_timezone("UTC")
}

/// A Unix time in ns as a timestamp column's value (i64: until the year 2262).
fn unix_ns(ns: u64) -> i64 {
    i64::try_from(ns).unwrap_or(i64::MAX)
}
