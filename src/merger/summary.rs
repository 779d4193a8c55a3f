//! The consolidated `Summary` the merger publishes: one instrument's merged book, stamped
//! with a sequence number, the publish time, and the state of every book it merges. Plain
//! inline data, so it can sit in a mailbox slot.
//!
//! An instrument's books are its **sources**: one for each (venue, symbol) it takes, in
//! `Instrument::symbols`' order. A venue is usually one source; an
//! instrument that takes a venue's spot pair and its perpetual has two of that venue.

use crate::book::Side;
use crate::fixed::{FixedPoint, UnitSize};
use crate::merger::kway::MergedBook;
use crate::units::{Currency, NativePrices, Rate, TakerFee};
use crate::venue::VenueId;

/// The most books one instrument merges (`instruments[].symbols`, counted per symbol).
pub const MAX_SOURCES: usize = 24;

/// Where a venue stands for one instrument. Only `Synced` venues are in the merged book.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum VenueState {
    /// Not configured for this instrument.
    #[default]
    Absent,
    /// Configured; no book received yet (connecting, subscribing, or reconnecting).
    Connecting,
    /// Its latest book is in the merge.
    Synced,
    /// No book within the stale age: evicted from the merge until a fresh one arrives.
    Stale,
    /// A decode error or sequence problem: excluded until a good book arrives.
    OutOfSync,
    /// Its own best bid is at or above its own best ask: excluded while that lasts.
    Crossed,
    /// Its book lacks a side (or both): excluded while that lasts, unless the venue is
    /// configured to allow it (`venues.<name>.allow_one_sided`, for thin markets). A side
    /// alone cannot be checked for crossing, and may cross the other venues' books.
    OneSided,
    /// Quoted in another currency than the instrument's, and its rate is not there: the
    /// rate's book is not synced, stale, or lacks a side, or converts this book beyond the
    /// range of a price. Excluded while that lasts.
    NoRate,
}

impl VenueState {
    pub fn name(self) -> &'static str {
        match self {
            VenueState::Absent => "absent",
            VenueState::Connecting => "connecting",
            VenueState::Synced => "synced",
            VenueState::Stale => "stale",
            VenueState::OutOfSync => "out-of-sync",
            VenueState::Crossed => "crossed",
            VenueState::OneSided => "one-sided",
            VenueState::NoRate => "no-rate",
        }
    }
}

/// One published consolidated book.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Summary {
    /// Index of the instrument in the configuration.
    pub instrument: usize,
    /// Increases by one with every summary published for this instrument.
    pub sequence: u64,
    /// When it was published (ns since the Unix epoch).
    pub published_ns: u64,
    /// The monotonic time (`clock::monotonic_ns`) of the merger poll that published it,
    /// the time its stale check measured book ages against (0 from `mergebook replay`).
    /// A book taken in that poll may have been received after it.
    pub polled_monotonic_ns: u64,
    /// The monotonic time read when it was written, after its books were taken: later than
    /// every book's receipt, the time consumers are told the books' ages at (0 from
    /// `mergebook replay`).
    pub published_monotonic_ns: u64,
    /// When the newest book in it was received (ns on the process's monotonic clock,
    /// `clock::monotonic_ns`): the start of the frame-to-publish latency.
    pub received_ns: u64,
    pub book: MergedBook,
    /// Each source's state (`Absent` past the instrument's sources), indexed by source.
    pub source_states: [VenueState; MAX_SOURCES],
    /// Each source's venue (`None` past the instrument's sources).
    pub source_venues: [Option<VenueId>; MAX_SOURCES],
    /// When each source's latest book was received (monotonic ns; 0 before the first).
    pub source_received_ns: [u64; MAX_SOURCES],
    /// Each source's sequence (update id or timestamp, as the venue numbers its books) of
    /// its latest book: which frame of each book this summary contains.
    pub source_sequence: [u64; MAX_SOURCES],
    /// The venue's own time of each source's latest book (ns since the Unix epoch; 0
    /// where the venue sent none: `TopBook::exchange_time_ns`).
    pub source_exchange_time_ns: [u64; MAX_SOURCES],
    /// Each source's own best prices in its latest book, merged or not (a book left out
    /// shows where it stands), as the venue quotes them.
    pub source_best: [BestPrices; MAX_SOURCES],
    /// The currency the book's prices are in, where the instrument states one.
    pub currency: Option<Currency>,
    /// What the book's amounts are counted in: the base coin, or the currency where the
    /// instrument counts notionals (`unit = "quote"`); `None` where its name does not say.
    pub amount_unit: Option<Currency>,
    /// For each source quoted in another currency: that currency and the rate its book
    /// was converted at (`None`: not converted).
    pub source_rate: [Option<AppliedRate>; MAX_SOURCES],
    /// Each merged level's price as its venue quotes it, by side and position: written
    /// only by an instrument that converts a venue, read through `native_price` (the merge
    /// itself, and an instrument that converts nothing, never touch it).
    pub native_prices: NativePrices,
    /// Whether any source has a taker fee (`Config`'s `taker_fees`): then `all_in` is the
    /// book net of them; otherwise it is not written, and the book is its own all-in
    /// book (`all_in_book`).
    pub charges_fees: bool,
    /// How many coins one unit of the book's amounts is (`Instrument::unit_size`): its
    /// prices are per unit.
    pub unit_size: UnitSize,
    /// The all-in book: every merged source's levels net of its taker fee (bids lowered,
    /// asks raised, each rounded to the instrument's price step against the trader),
    /// merged again, since fees reorder the venues.
    pub all_in: MergedBook,
    /// Each source's taker fee (zero past its sources).
    pub source_taker_fees: [TakerFee; MAX_SOURCES],
    /// What each side holds within the configured distances of the mid
    /// (`merger::bands`).
    pub bands: Bands,
}

/// The most bands a summary carries (`service.bands_bps`).
pub const MAX_BANDS: usize = 8;

/// One side's depth within one band: the amount (raw, 10^-8) and its notional (price
/// times amount, 10^-16), exact.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BandDepth {
    pub amount: u128,
    pub notional: u128,
}

/// A summary's bands: `count` distances from the mid in basis points, ascending, and each
/// side's depth within each (a band holds the ones inside it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Bands {
    pub count: usize,
    pub bps: [u16; MAX_BANDS],
    pub bids: [BandDepth; MAX_BANDS],
    pub asks: [BandDepth; MAX_BANDS],
    /// Whether every merged venue's whole book was counted (`false`: some only to the
    /// published depth, their readers keeping no whole book).
    pub full_depth: bool,
}

impl Bands {
    /// (distance in bp, bids' depth, asks' depth) of each band, narrowest first.
    pub fn each(&self) -> impl Iterator<Item = (u16, BandDepth, BandDepth)> + '_ {
        (0..self.count).map(|band| (self.bps[band], self.bids[band], self.asks[band]))
    }
}

/// The rate a venue's book was converted at: what its levels' native prices are in, and
/// the pair's rate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AppliedRate {
    /// The venue's own currency.
    pub native: Currency,
    /// The pair the rate is of: one `base` is worth the rate in `quote`.
    pub base: Currency,
    pub quote: Currency,
    /// `None`: the rate is not there (the venue is `NoRate`).
    pub rate: Option<Rate>,
}

/// A venue's best bid and ask (`None`: that side is empty).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BestPrices {
    pub bid: Option<FixedPoint>,
    pub ask: Option<FixedPoint>,
}

impl Summary {
    /// Empties the summary by writing what the next summary of up to `depth` levels a side
    /// writes (see `mailbox::Sender::prepare`).
    pub fn clear_writing(&mut self, depth: usize) {
        let Summary {
            instrument,
            sequence,
            published_ns,
            polled_monotonic_ns,
            published_monotonic_ns,
            received_ns,
            book,
            source_states,
            source_venues,
            source_received_ns,
            source_sequence,
            source_exchange_time_ns,
            source_best,
            currency,
            amount_unit,
            source_rate,
            native_prices: _, // what `native_price` reads of it is always written first
            charges_fees,
            unit_size,
            all_in,
            source_taker_fees,
            bands,
        } = self;
        *instrument = 0;
        *sequence = 0;
        *published_ns = 0;
        *polled_monotonic_ns = 0;
        *published_monotonic_ns = 0;
        *received_ns = 0;
        book.clear_writing(depth);
        *source_states = [VenueState::default(); MAX_SOURCES];
        *source_venues = [None; MAX_SOURCES];
        *source_received_ns = [0; MAX_SOURCES];
        *source_sequence = [0; MAX_SOURCES];
        *source_exchange_time_ns = [0; MAX_SOURCES];
        *source_best = [BestPrices::default(); MAX_SOURCES];
        *currency = None;
        *amount_unit = None;
        *source_rate = [None; MAX_SOURCES];
        if *charges_fees {
            all_in.clear_writing(depth);
        }
        *charges_fees = false;
        *unit_size = UnitSize::COIN;
        *source_taker_fees = [TakerFee::default(); MAX_SOURCES];
        *bands = Bands::default();
    }

    /// Copies what `other` holds, its books' live levels and its sources' slots only: a
    /// whole summary is some 15 KB of inline arrays (two books of `MAX_DEPTH` levels a
    /// side, the native prices, `MAX_SOURCES` of each source's fields), of which an
    /// instrument of four venues' 20 levels uses a tenth, and the fan-out copies every
    /// summary.
    pub fn copy_from(&mut self, other: &Summary) {
        // Every field named, so that a new one cannot be forgotten here.
        let Summary {
            instrument,
            sequence,
            published_ns,
            polled_monotonic_ns,
            published_monotonic_ns,
            received_ns,
            book,
            source_states,
            source_venues,
            source_received_ns,
            source_sequence,
            source_exchange_time_ns,
            source_best,
            currency,
            amount_unit,
            source_rate,
            native_prices,
            charges_fees,
            unit_size,
            all_in,
            source_taker_fees,
            bands,
        } = other;
        self.instrument = *instrument;
        self.sequence = *sequence;
        self.published_ns = *published_ns;
        self.polled_monotonic_ns = *polled_monotonic_ns;
        self.published_monotonic_ns = *published_monotonic_ns;
        self.received_ns = *received_ns;
        self.book.copy_from(book);
        // The slots past `other`'s sources are clear, as every writer of a summary leaves
        // them (`Consolidation::summarize`); so are `self`'s past its own, the first says.
        let sources = source_venues
            .iter()
            .take_while(|venue| venue.is_some())
            .count();
        let copied = match self.source_venues.get(sources).is_some_and(Option::is_some) {
            true => MAX_SOURCES,
            false => sources,
        };
        self.source_states[..copied].copy_from_slice(&source_states[..copied]);
        self.source_venues[..copied].copy_from_slice(&source_venues[..copied]);
        self.source_received_ns[..copied].copy_from_slice(&source_received_ns[..copied]);
        self.source_sequence[..copied].copy_from_slice(&source_sequence[..copied]);
        self.source_exchange_time_ns[..copied].copy_from_slice(&source_exchange_time_ns[..copied]);
        self.source_best[..copied].copy_from_slice(&source_best[..copied]);
        self.source_rate[..copied].copy_from_slice(&source_rate[..copied]);
        self.source_taker_fees[..copied].copy_from_slice(&source_taker_fees[..copied]);
        self.currency = *currency;
        self.amount_unit = *amount_unit;
        self.unit_size = *unit_size;
        // What `native_price` reads: the positions of the book's levels.
        let (bids, asks) = (book.bids.len(), book.asks.len());
        self.native_prices.bids[..bids].copy_from_slice(&native_prices.bids[..bids]);
        self.native_prices.asks[..asks].copy_from_slice(&native_prices.asks[..asks]);
        self.charges_fees = *charges_fees;
        self.all_in.copy_from(all_in);
        self.bands = *bands;
    }

    /// The book net of taker fees: `all_in` where a source charges one, else the book.
    pub fn all_in_book(&self) -> &MergedBook {
        match self.charges_fees {
            true => &self.all_in,
            false => &self.book,
        }
    }

    /// The native price of the `index`-th level of `side`, where its venue's book was
    /// converted from another currency.
    pub fn native_price(&self, side: Side, index: usize) -> Option<FixedPoint> {
        let level = self.book.side(side).as_slice().get(index)?;
        self.source_rate[usize::from(level.source)]?;
        Some(self.native_prices.side(side)[index])
    }

    /// How old, when this summary was written, is what was received at `received_ns`
    /// (0 for 0: nothing received, or a fixed rate).
    pub fn age_ns(&self, received_ns: u64) -> u64 {
        match received_ns {
            0 => 0,
            _ => self.published_monotonic_ns.saturating_sub(received_ns),
        }
    }

    /// When what was received at `received_ns` (monotonic) was received, in ns since the
    /// Unix epoch: the summary's publish time less its age (0 for 0).
    pub fn received_unix_ns(&self, received_ns: u64) -> u64 {
        match received_ns {
            0 => 0,
            _ => self.published_ns.saturating_sub(self.age_ns(received_ns)),
        }
    }

    /// The instrument's sources: (source, its venue, its state), in the instrument's
    /// order.
    pub fn sources(&self) -> impl Iterator<Item = (usize, VenueId, VenueState)> + '_ {
        (0..MAX_SOURCES).filter_map(|source| {
            let venue = self.source_venues[source]?;
            Some((source, venue, self.source_states[source]))
        })
    }

    /// The first of `venue`'s sources (its only one, unless the instrument takes two of
    /// its books).
    pub fn source_of(&self, venue: VenueId) -> Option<usize> {
        self.sources()
            .find_map(|(source, of, _)| (of == venue).then_some(source))
    }

    /// The state of `venue`'s first source; `Absent` where the instrument has none.
    pub fn venue_state(&self, venue: VenueId) -> VenueState {
        self.source_of(venue)
            .map_or(VenueState::Absent, |source| self.source_states[source])
    }

    /// The sequence of `venue`'s first source (`source_sequence`; 0 where it has none).
    pub fn venue_sequence(&self, venue: VenueId) -> u64 {
        self.source_of(venue)
            .map_or(0, |source| self.source_sequence[source])
    }

    /// When `venue`'s first source's book was received (`source_received_ns`; 0 where it
    /// has none).
    pub fn venue_received_ns(&self, venue: VenueId) -> u64 {
        self.source_of(venue)
            .map_or(0, |source| self.source_received_ns[source])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixed::{FixedPoint, SignedFixed};
    use crate::merger::kway::{CrossState, MergedLevel};

    #[test]
    fn clear_writing_empties_every_field_it_writes() {
        let level = |raw| MergedLevel {
            price: FixedPoint::from_raw(raw),
            amount: FixedPoint::from_raw(raw),
            venue: VenueId::Bitstamp,
            source: 1,
        };
        let mut summary = Summary {
            instrument: 1,
            sequence: 2,
            published_ns: 3,
            polled_monotonic_ns: 4,
            published_monotonic_ns: 4,
            received_ns: 5,
            source_states: [VenueState::Synced; MAX_SOURCES],
            source_venues: [Some(VenueId::Bitstamp); MAX_SOURCES],
            source_received_ns: [6; MAX_SOURCES],
            source_sequence: [7; MAX_SOURCES],
            source_best: [BestPrices {
                bid: Some(FixedPoint::from_raw(8)),
                ask: None,
            }; MAX_SOURCES],
            currency: crate::units::Currency::parse("USD"),
            amount_unit: crate::units::Currency::parse("BTC"),
            source_rate: [Some(AppliedRate::default()); MAX_SOURCES],
            charges_fees: true,
            source_taker_fees: [TakerFee::from_bps(FixedPoint::ONE).unwrap(); MAX_SOURCES],
            bands: Bands {
                count: 1,
                full_depth: true,
                ..Bands::default()
            },
            ..Summary::default()
        };
        summary.all_in.asks.push(level(11));
        for raw in 1..=3 {
            summary.book.bids.push(level(raw));
        }
        summary.book.asks.push(level(9));
        summary.book.asks.push(level(10));
        summary.book.spread = Some(SignedFixed {
            negative: true,
            magnitude: FixedPoint::from_raw(8),
        });
        summary.book.cross = CrossState::Crossed;
        summary.clear_writing(3);
        assert_eq!(summary, Summary::default());
    }

    /// The fan-out's copy into a summary that held a deeper book of more sources: every
    /// field equal, the native price of every level too, whatever the slots past the
    /// books' ends held.
    #[test]
    fn copy_from_carries_every_field_over_a_deeper_book_of_more_sources() {
        let level = |raw, source| MergedLevel {
            price: FixedPoint::from_raw(raw),
            amount: FixedPoint::from_raw(raw + 1),
            venue: VenueId::Bitstamp,
            source,
        };
        let mut deeper = Summary::default();
        for raw in 1..=30 {
            deeper.book.bids.push(level(raw, 0));
            deeper.book.asks.push(level(raw, 0));
            deeper.all_in.bids.push(level(raw, 0));
            deeper.native_prices.bids[raw as usize] = FixedPoint::from_raw(raw);
        }
        for source in 0..5 {
            deeper.source_states[source] = VenueState::Synced;
            deeper.source_venues[source] = Some(VenueId::Binance);
            deeper.source_received_ns[source] = 1;
            deeper.source_sequence[source] = 1;
            deeper.source_exchange_time_ns[source] = 1;
            deeper.source_best[source].ask = Some(FixedPoint::ONE);
            deeper.source_rate[source] = Some(AppliedRate::default());
            deeper.source_taker_fees[source] = TakerFee::from_bps(FixedPoint::ONE).unwrap();
        }
        // Three sources, the slots past them clear.
        fn sources<T: Copy + Default>(value: T) -> [T; MAX_SOURCES] {
            std::array::from_fn(|source| if source < 3 { value } else { T::default() })
        }
        let mut summary = Summary {
            instrument: 1,
            sequence: 2,
            published_ns: 3,
            polled_monotonic_ns: 4,
            published_monotonic_ns: 5,
            received_ns: 6,
            source_states: sources(VenueState::OneSided),
            source_venues: sources(Some(VenueId::Kraken)),
            source_received_ns: sources(7),
            source_sequence: sources(8),
            source_exchange_time_ns: sources(9),
            source_best: sources(BestPrices {
                bid: Some(FixedPoint::from_raw(10)),
                ask: None,
            }),
            currency: crate::units::Currency::parse("USD"),
            amount_unit: crate::units::Currency::parse("BTC"),
            source_rate: sources(Some(AppliedRate::default())),
            charges_fees: true,
            source_taker_fees: sources(TakerFee::from_bps(FixedPoint::ONE).unwrap()),
            bands: Bands {
                count: 2,
                full_depth: true,
                ..Bands::default()
            },
            ..Summary::default()
        };
        for raw in 100..103 {
            summary.book.bids.push(level(raw, 1));
            summary.all_in.asks.push(level(raw + 5, 1));
            summary.native_prices.bids[(raw - 100) as usize] = FixedPoint::from_raw(raw * 2);
        }
        summary.book.asks.push(level(200, 1));
        summary.native_prices.asks[0] = FixedPoint::from_raw(400);
        summary.book.spread = Some(SignedFixed {
            negative: false,
            magnitude: FixedPoint::from_raw(97),
        });
        summary.book.cross = CrossState::Locked;

        deeper.copy_from(&summary);
        for side in [Side::Bid, Side::Ask] {
            for index in 0..summary.book.side(side).len() {
                assert_eq!(
                    deeper.native_price(side, index),
                    summary.native_price(side, index)
                );
            }
        }
        // Past the books' ends the native prices are not read.
        deeper.native_prices = summary.native_prices;
        assert_eq!(deeper, summary);
    }
}
