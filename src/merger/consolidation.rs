//! Consolidation of one instrument: each source's latest book and state (a source is one
//! venue's book of one of the instrument's symbols), and the rules for which books enter
//! the merge. Pure (no threads, no clock: times are passed in), so the
//! live merger thread and `mergebook replay` run exactly the same logic.
//!
//! The rule that keeps the merged book honest: only a venue in state `Synced` is merged.
//! A venue whose own book is crossed, whose feed failed to decode or lost sync, or whose
//! book is older than the stale age is shown with that state and left out, so a partial
//! or stale book is never presented as live.

use crate::book::{Level, Side, TopBook};
use crate::config::{Config, RateFrom};
use crate::feed::handoff::VenueFeed;
use crate::fixed::{FixedPoint, UnitSize};
use crate::merger::kway::{Origin, VenueBook, merge};
use crate::merger::summary::{AppliedRate, BestPrices, MAX_SOURCES, Summary, VenueState};
use crate::units::{Conversion, Currency, Direction, NativePrices, OutOfRange, Rate, TakerFee};
use crate::venue::VenueId;

#[derive(Clone, Copy, Default)]
struct VenueSlot {
    state: VenueState,
    book: TopBook,
}

impl VenueSlot {
    /// When the book this venue's state comes from was received, or `u64::MAX` where its
    /// state comes from no book. What the stale age evicts is a book received before it:
    /// merged or not (a one-sided or crossed book left out of the merge ages too, so its
    /// state never shows an old book as the venue's current one).
    fn live_since_ns(&self) -> u64 {
        match self.state {
            VenueState::Synced | VenueState::OneSided | VenueState::Crossed => {
                self.book.received_ns
            }
            _ => u64::MAX,
        }
    }
}

/// A venue quoted in another currency, or sized in the base coin in an instrument that
/// counts notionals: its book converted into the instrument's, again only when the book
/// or the rate has changed since.
struct Converted {
    conversion: Conversion,
    /// Where its rate comes from (an index into `Config::rates`), and its currency, the
    /// rate's pair and the rate last set (`None`: not there); `None` for a venue quoted
    /// in the instrument's currency, whose prices are kept.
    rate: Option<(usize, AppliedRate)>,
    book: TopBook,
    natives: NativePrices,
    /// Whether `book` was converted from the current native book at the current rate.
    current: bool,
    /// Whether that conversion gave a book (a rate, and prices in range).
    converted: bool,
}

impl Converted {
    /// The converted book of `native`'s best `depth` levels, converting it first where
    /// the native book or the rate changed; `None` without a rate or where a price goes
    /// out of range.
    fn book(&mut self, native: &TopBook, depth: usize) -> Option<&TopBook> {
        if !self.current {
            self.current = true;
            let rate = match &self.rate {
                Some((_, applied)) => applied.rate,
                None => Some(Rate::fixed(FixedPoint::ONE)),
            };
            self.converted = rate.is_some_and(|rate| {
                let conversion = self.conversion;
                conversion
                    .book(native, depth, &rate, &mut self.book, &mut self.natives)
                    .is_ok()
            });
        }
        self.converted.then_some(&self.book)
    }
}

/// A source's book net of its taker fee: each price through the fee's rate
/// (`TakerFee::rate`), rounded to the instrument's price step against the trader, made
/// again only when the book it nets changed.
struct Netted {
    fee: TakerFee,
    conversion: Conversion,
    book: TopBook,
    /// What the conversion writes beside the book, unread: a netted level's price before
    /// the fee is its level of the book summarized.
    natives: NativePrices,
    /// Whether `book` nets the source's current book.
    current: bool,
    /// Whether that gave a book (prices in range).
    netted: bool,
}

impl Netted {
    fn new(fee: TakerFee, price_step: u64) -> Netted {
        Netted {
            fee,
            conversion: Conversion::new(Direction::Multiply, price_step),
            book: TopBook::default(),
            natives: NativePrices::default(),
            current: false,
            netted: false,
        }
    }

    /// `book` (the source's book as it is merged: converted where it is) net of the fee,
    /// netting it first where it changed; `None` where a price goes out of range.
    fn book(&mut self, book: &TopBook, depth: usize) -> Option<&TopBook> {
        if !self.current {
            self.current = true;
            let rate = self.fee.rate();
            self.netted = self
                .conversion
                .book(book, depth, &rate, &mut self.book, &mut self.natives)
                .is_ok();
        }
        self.netted.then_some(&self.book)
    }
}

/// One instrument's sources and its next summary number.
pub struct Consolidation {
    instrument: usize,
    depth: usize,
    /// Each source's venue, in the instrument's order.
    source_venues: Vec<VenueId>,
    sources: [VenueSlot; MAX_SOURCES],
    /// Each slot's `live_since_ns`, side by side: the stale check reads these lines, not
    /// a whole book's.
    live_since_ns: [u64; MAX_SOURCES],
    sequence: u64,
    /// Sources whose one-sided books are merged (`venues.<name>.allow_one_sided`).
    one_sided_allowed: [bool; MAX_SOURCES],
    /// Receive time of the newest book applied since the last summary: the start of the
    /// latency the next summary reports.
    latest_received_ns: u64,
    /// The currency its prices are shown in, where stated.
    currency: Option<Currency>,
    /// What its amounts are counted in, where known.
    amount_unit: Option<Currency>,
    unit_size: UnitSize,
    /// Whether its amounts are notionals in its currency (`unit = "quote"`).
    counts_notionals: bool,
    /// The sources quoted in another currency (boxed: most books of most instruments are
    /// not, and a slot is a whole book).
    converted: [Option<Box<Converted>>; MAX_SOURCES],
    /// What `rate` returns.
    rate: Option<Rate>,
    /// Each source's taker fee (zero past its sources).
    fees: [TakerFee; MAX_SOURCES],
    /// The sources with a fee, netted for the all-in book; all `None` where no source has
    /// one, and the instrument's summaries carry no all-in book of their own.
    netted: [Option<Box<Netted>>; MAX_SOURCES],
}

impl Consolidation {
    /// `sources` are the venues of the instrument's books, in its order (at most
    /// `MAX_SOURCES`, as the configuration is validated); they start `Connecting`.
    pub fn new(instrument: usize, depth: usize, sources: &[VenueId]) -> Self {
        let source_venues = sources[..sources.len().min(MAX_SOURCES)].to_vec();
        let mut slots = [VenueSlot::default(); MAX_SOURCES];
        for slot in &mut slots[..source_venues.len()] {
            slot.state = VenueState::Connecting;
        }
        Consolidation {
            instrument,
            depth,
            source_venues,
            sources: slots,
            live_since_ns: [u64::MAX; MAX_SOURCES],
            sequence: 0,
            one_sided_allowed: [false; MAX_SOURCES],
            latest_received_ns: 0,
            currency: None,
            amount_unit: None,
            unit_size: UnitSize::COIN,
            counts_notionals: false,
            converted: Default::default(),
            rate: None,
            fees: [TakerFee::default(); MAX_SOURCES],
            netted: Default::default(),
        }
    }

    /// Sets each source's taker fee (in source order): the summaries then carry the book
    /// net of them (`Summary::all_in`) where any is above zero. Prices are netted to
    /// `price_step` (raw units).
    pub fn set_taker_fees(&mut self, fees: &[TakerFee], price_step: u64) {
        let count = self.source_venues.len();
        self.fees = [TakerFee::default(); MAX_SOURCES];
        self.fees[..count].copy_from_slice(&fees[..count]);
        for (netted, fee) in self.netted.iter_mut().zip(&self.fees) {
            *netted = (!fee.is_zero()).then(|| Box::new(Netted::new(*fee, price_step)));
        }
    }

    /// Instrument `index` of `config`: its sources, those that may be one-sided, its
    /// currency and amount unit, and the conversion of each source not merged as it comes
    /// (fixed rates set; an instrument's rate waits for its summaries, `set_rate`).
    pub fn configured(config: &Config, index: usize) -> Consolidation {
        let instrument = &config.instruments[index];
        let venues: Vec<VenueId> = instrument.symbols.iter().map(|(v, _)| *v).collect();
        let mut consolidation = Consolidation::new(index, config.depth, &venues);
        for venue in config.venues.iter().filter(|v| v.allow_one_sided) {
            consolidation.allow_one_sided(venue.venue);
        }
        consolidation.currency = instrument.currency;
        consolidation.amount_unit = instrument.amount_unit();
        consolidation.unit_size = instrument.unit_size;
        consolidation.counts_notionals = instrument.unit == crate::config::AmountUnit::Quote;
        consolidation.set_taker_fees(&instrument.taker_fees, instrument.price_step);
        for planned in &instrument.conversions {
            let rate = planned.rate.map(|rate_index| {
                let source = &config.rates[rate_index];
                let native = instrument
                    .quotes
                    .iter()
                    .find_map(|&(source, quote)| (source == planned.source).then_some(quote))
                    .expect("a converted source's quote is known");
                let rate = match source.from {
                    RateFrom::Fixed(price) => Some(Rate::fixed(price)),
                    RateFrom::Instrument(_) => None,
                };
                let applied = AppliedRate {
                    native,
                    base: source.base,
                    quote: source.quote,
                    rate,
                };
                (rate_index, applied)
            });
            consolidation.converted[planned.source] = Some(Box::new(Converted {
                conversion: planned.conversion,
                rate,
                book: TopBook::default(),
                natives: NativePrices::default(),
                current: false,
                converted: false,
            }));
        }
        consolidation
    }

    /// Itself, its summaries numbered as the instrument in `slot` (the service's index of
    /// an instrument, which is its place in the configuration only at start).
    pub fn in_slot(mut self, slot: usize) -> Consolidation {
        self.instrument = slot;
        self
    }

    /// Sets rate `rate_index` (of `Config::rates`) for the venues converted through it;
    /// whether that changed anything (the next summary then differs).
    pub fn set_rate(&mut self, rate_index: usize, rate: Option<Rate>) -> bool {
        let mut changed = false;
        for converted in self.converted.iter_mut().flatten() {
            if let Some((index, applied)) = &mut converted.rate
                && *index == rate_index
                && applied.rate != rate
            {
                applied.rate = rate;
                converted.current = false;
                changed = true;
            }
        }
        if changed {
            // The netted books of converted sources net their converted books.
            for (netted, converted) in self.netted.iter_mut().zip(&self.converted) {
                if let (Some(netted), Some(_)) = (netted, converted) {
                    netted.current = false;
                }
            }
        }
        changed
    }

    /// The rate its latest summary makes (`rate_of`), for the instruments converting
    /// through it.
    pub fn rate(&self) -> Option<Rate> {
        self.rate
    }

    /// How many levels a side its summaries carry.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Merges `venue`'s books even when they lack a side (they are still shown `OneSided`).
    pub fn allow_one_sided(&mut self, venue: VenueId) {
        for (allowed, of) in self.one_sided_allowed.iter_mut().zip(&self.source_venues) {
            *allowed |= *of == venue;
        }
    }

    /// Applies what the reader of `source` published. A `Synced` book whose own best bid
    /// is not below its best ask is held as `Crossed`, one that lacks a side as `OneSided`.
    pub fn apply(&mut self, source: usize, feed: &VenueFeed) {
        let slot = &mut self.sources[source];
        slot.state = match feed.state {
            VenueState::Synced if feed.book.is_crossed() => VenueState::Crossed,
            VenueState::Synced if feed.book.lacks_a_side() => VenueState::OneSided,
            state => state,
        };
        if feed.state == VenueState::Synced {
            slot.book.copy_from(&feed.book);
            self.latest_received_ns = self.latest_received_ns.max(feed.book.received_ns);
            if let Some(converted) = &mut self.converted[source] {
                converted.current = false;
            }
            if let Some(netted) = &mut self.netted[source] {
                netted.current = false;
            }
        }
        self.live_since_ns[source] = slot.live_since_ns();
    }

    /// The sequence of the last summary written (0: none yet).
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// Whether its amounts are notionals in its currency (`unit = "quote"`).
    pub fn counts_notionals(&self) -> bool {
        self.counts_notionals
    }

    /// How many sources the instrument has.
    pub fn source_count(&self) -> usize {
        self.source_venues.len()
    }

    /// How `source`'s levels become the instrument's, where it is in the merge: synced
    /// (or one-sided where allowed), and converted where it needs to be (its rate there).
    /// `None` where it is left out, as `summarize` leaves it out.
    pub fn merged_source(&self, source: usize) -> Option<SourceTerms<'_>> {
        let slot = &self.sources[source];
        if !is_merged(slot.state, self.one_sided_allowed[source]) {
            return None;
        }
        let conversion = match &self.converted[source] {
            None => None,
            Some(converted) => {
                let rate = match &converted.rate {
                    Some((_, applied)) => applied.rate?,
                    None => Rate::fixed(FixedPoint::ONE),
                };
                Some((converted.conversion, rate))
            }
        };
        let fee = self.netted[source]
            .as_ref()
            .map(|netted| (netted.conversion, netted.fee.rate()));
        Some(SourceTerms {
            venue: self.source_venues[source],
            book: &slot.book,
            conversion,
            fee,
        })
    }

    /// The state of `source` and its latest synced book as its venue quotes it (before
    /// any conversion): the book is the source's own while the state is `Synced`,
    /// `OneSided` or `Crossed`, and an older one otherwise.
    pub fn source_book(&self, source: usize) -> (VenueState, &TopBook) {
        let slot = &self.sources[source];
        (slot.state, &slot.book)
    }

    /// The venue of `source` and its venue's time of the source's latest synced book (0:
    /// none sent).
    pub fn exchange_time_ns(&self, source: usize) -> (VenueId, u64) {
        let time = self.sources[source].book.exchange_time_ns;
        (self.source_venues[source], time)
    }

    /// Whether a book was received before `oldest_ns` (`evict_stale` would evict it).
    pub fn any_stale(&self, oldest_ns: u64) -> bool {
        self.oldest_live_ns() < oldest_ns
    }

    /// When the oldest book a source's state comes from was received (`u64::MAX`: no
    /// source's state comes from a book): the instrument has nothing to evict before the
    /// stale age has passed since.
    pub fn oldest_live_ns(&self) -> u64 {
        let sources = &self.live_since_ns[..self.source_venues.len()];
        sources.iter().copied().min().unwrap_or(u64::MAX)
    }

    /// Marks `Stale` every source whose book was received before `oldest_ns`, and calls
    /// `evicted` with each (none: the summary did not change).
    pub fn evict_stale(&mut self, oldest_ns: u64, mut evicted: impl FnMut(usize, VenueId)) {
        for (source, (slot, &venue)) in self.sources.iter_mut().zip(&self.source_venues).enumerate()
        {
            if self.live_since_ns[source] < oldest_ns {
                slot.state = VenueState::Stale;
                self.live_since_ns[source] = u64::MAX;
                evicted(source, venue);
            }
        }
    }

    /// Merges the synced venues into `out` and stamps it with the next sequence number.
    /// A venue quoted in another currency is merged converted, and is `NoRate` while its
    /// rate is not there.
    pub fn summarize(&mut self, published_ns: u64, out: &mut Summary) {
        let mut states = [VenueState::Absent; MAX_SOURCES];
        let mut inputs = [VenueBook {
            origin: Origin::default(),
            book: &self.sources[0].book,
        }; MAX_SOURCES];
        let charges_fees = self.netted.iter().any(Option::is_some);
        let mut all_in = inputs;
        let mut all_in_count = 0;
        let mut count = 0;
        for (source, (((&venue, slot), converted), netted)) in self
            .source_venues
            .iter()
            .zip(&self.sources)
            .zip(&mut self.converted)
            .zip(&mut self.netted)
            .enumerate()
        {
            states[source] = slot.state;
            if !is_merged(slot.state, self.one_sided_allowed[source]) {
                continue;
            }
            let book = match converted {
                None => &slot.book,
                Some(converted) => match converted.book(&slot.book, self.depth) {
                    Some(book) => book,
                    None => {
                        states[source] = VenueState::NoRate;
                        continue;
                    }
                },
            };
            let origin = Origin {
                venue,
                source: source as u8, // below MAX_SOURCES
            };
            inputs[count] = VenueBook { origin, book };
            count += 1;
            // A source without a fee is in the all-in book as it is merged; one whose
            // netted prices go out of range is left out of it.
            let netted = match netted {
                _ if !charges_fees => None,
                None => Some(book),
                Some(netted) => netted.book(book, self.depth),
            };
            if let Some(book) = netted {
                all_in[all_in_count] = VenueBook { origin, book };
                all_in_count += 1;
            }
        }
        merge(&inputs[..count], self.depth, &mut out.book);
        out.charges_fees = charges_fees;
        if charges_fees {
            merge(&all_in[..all_in_count], self.depth, &mut out.all_in);
        }
        if self.converted[..self.source_venues.len()]
            .iter()
            .any(Option::is_some)
        {
            self.write_native_prices(Side::Bid, out);
            self.write_native_prices(Side::Ask, out);
        }
        self.sequence += 1;
        out.instrument = self.instrument;
        out.sequence = self.sequence;
        out.published_ns = published_ns;
        out.received_ns = self.latest_received_ns;
        out.source_states = states;
        let count = self.source_venues.len();
        // Whether the slots past its sources hold another instrument's (every writer of a
        // summary clears them all, so the first says): a summary slot is only ever this
        // instrument's in the service, and rewriting them unchanged cost a read of their
        // lines from memory each time at a thousand instruments.
        let tail_written = out.source_venues.get(count).is_some_and(Option::is_some);
        for (source, (slot, &venue)) in self.sources.iter().zip(&self.source_venues).enumerate() {
            out.source_venues[source] = Some(venue);
            out.source_received_ns[source] = slot.book.received_ns;
            out.source_sequence[source] = slot.book.venue_sequence;
            out.source_exchange_time_ns[source] = slot.book.exchange_time_ns;
            out.source_best[source] = BestPrices {
                bid: slot.book.bids.best().map(|level| level.price),
                ask: slot.book.asks.best().map(|level| level.price),
            };
        }
        // The slots past its sources, as a summary of none.
        if tail_written {
            out.source_venues[count..].fill(None);
            out.source_received_ns[count..].fill(0);
            out.source_sequence[count..].fill(0);
            out.source_exchange_time_ns[count..].fill(0);
            out.source_best[count..].fill(BestPrices::default());
            out.source_rate[count..].fill(None);
        }
        out.source_taker_fees = self.fees;
        out.currency = self.currency;
        out.amount_unit = self.amount_unit;
        out.unit_size = self.unit_size;
        for (rate, converted) in out.source_rate[..count].iter_mut().zip(&self.converted) {
            *rate = converted
                .as_ref()
                .and_then(|converted| converted.rate.map(|(_, applied)| applied));
        }
        self.rate = rate_of(out);
    }

    /// The native price of each merged level of a converted source: a book's levels come
    /// into the merge in its own order, so its n-th level there is its converted book's
    /// n-th.
    fn write_native_prices(&self, side: Side, out: &mut Summary) {
        let mut taken = [0usize; MAX_SOURCES];
        let natives = match side {
            Side::Bid => &mut out.native_prices.bids,
            Side::Ask => &mut out.native_prices.asks,
        };
        for (level, native) in out.book.side(side).as_slice().iter().zip(natives) {
            let source = usize::from(level.source);
            *native = match &self.converted[source] {
                Some(converted) => converted.natives.side(side)[taken[source]],
                None => level.price,
            };
            taken[source] += 1;
        }
    }
}

/// How a merged source's levels become the instrument's: its venue, its book as the
/// venue quotes it (contracts already in the base coin), and the conversion and fee netting
/// its levels go through, where they do. What a quote walks (`merger::quote`).
pub struct SourceTerms<'a> {
    pub venue: VenueId,
    pub book: &'a TopBook,
    conversion: Option<(Conversion, Rate)>,
    fee: Option<(Conversion, Rate)>,
}

impl SourceTerms<'_> {
    /// Whether its levels are converted into the instrument's terms (not merged as they
    /// come).
    pub fn converts(&self) -> bool {
        self.conversion.is_some()
    }

    /// `level` of `side`, as the venue quotes it, in the instrument's terms: converted
    /// where the source is, and net of its fee where `all_in`; `None` where its price
    /// comes to zero (see `Conversion::level`).
    #[inline]
    pub fn level(
        &self,
        side: Side,
        level: Level,
        all_in: bool,
    ) -> Result<Option<Level>, OutOfRange> {
        let level = match &self.conversion {
            None => level,
            Some((conversion, rate)) => match conversion.level(side, level, rate)? {
                Some(level) => level,
                None => return Ok(None),
            },
        };
        match (&self.fee, all_in) {
            (Some((netting, fee)), true) => netting.level(side, level, fee),
            _ => Ok(Some(level)),
        }
    }
}

/// Which instruments convert through which instrument's book.
#[derive(Clone, Debug, Default)]
pub struct RateLinks {
    /// For each instrument: the (instrument, index into `Config::rates`) of the rates its
    /// summaries make.
    dependents: Vec<Vec<(usize, usize)>>,
}

impl RateLinks {
    pub fn new(config: &Config) -> RateLinks {
        let slots: Vec<usize> = (0..config.instruments.len()).collect();
        RateLinks::in_slots(config, &slots)
    }

    /// The links of `config`'s instruments, each in its slot (`slots`, by index of
    /// `config.instruments`).
    pub fn in_slots(config: &Config, slots: &[usize]) -> RateLinks {
        let mut dependents = vec![Vec::new(); slots.iter().max().map_or(0, |last| last + 1)];
        for (index, instrument) in config.instruments.iter().enumerate() {
            for conversion in &instrument.conversions {
                let Some(rate) = conversion.rate else {
                    continue;
                };
                if let RateFrom::Instrument(source) = config.rates[rate].from {
                    let link = (slots[index], rate);
                    if !dependents[slots[source]].contains(&link) {
                        dependents[slots[source]].push(link);
                    }
                }
            }
        }
        RateLinks { dependents }
    }

    /// The (instrument, rate index) pairs that `source`'s summaries are the rate of.
    pub fn of(&self, source: usize) -> &[(usize, usize)] {
        self.dependents.get(source).map_or(&[], Vec::as_slice)
    }
}

/// The rate a summary makes as a `[[rates]]` source: its best bid and ask, while it has
/// both, as old as the older of the books they come from.
fn rate_of(summary: &Summary) -> Option<Rate> {
    let (bid, ask) = (summary.book.bids.best()?, summary.book.asks.best()?);
    let received = |source: u8| summary.source_received_ns[usize::from(source)];
    let rate = Rate {
        bid: bid.price,
        ask: ask.price,
        received_ns: received(bid.source).min(received(ask.source)),
    };
    rate.is_usable().then_some(rate)
}

/// Whether a venue in `state` is in the merge: synced, or one-sided where allowed.
fn is_merged(state: VenueState, one_sided_allowed: bool) -> bool {
    state == VenueState::Synced || (state == VenueState::OneSided && one_sided_allowed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::book::Level;
    use crate::fixed::FixedPoint;
    use crate::merger::kway::{MergedBook, MergedLevel};

    fn feed(bid: u64, ask: u64, received_ns: u64) -> VenueFeed {
        let mut book = TopBook {
            received_ns,
            ..TopBook::default()
        };
        let level = |price| Level {
            price: FixedPoint::from_raw(price),
            amount: FixedPoint::from_raw(1),
        };
        book.bids.push(level(bid));
        book.asks.push(level(ask));
        VenueFeed {
            state: VenueState::Synced,
            book,
            ..VenueFeed::default()
        }
    }

    impl Consolidation {
        /// Applies `feed` to `venue`'s first source.
        fn apply_venue(&mut self, venue: VenueId, feed: &VenueFeed) {
            let source = self.source_venues.iter().position(|&v| v == venue);
            self.apply(source.expect("a venue of the instrument"), feed);
        }
    }

    /// The venues `evict_stale` evicts.
    fn evicted(consolidation: &mut Consolidation, oldest_ns: u64) -> Vec<VenueId> {
        let mut evicted = Vec::new();
        consolidation.evict_stale(oldest_ns, |_, venue| evicted.push(venue));
        evicted
    }

    fn bids_only_from(summary: &Summary, venue: VenueId) -> bool {
        let bids = summary.book.bids.as_slice();
        bids.iter().all(|level| level.venue == venue)
    }

    /// The merger's prefetch of a taken feed covers what `apply` reads of it: the state,
    /// the stamps and the levels of a book as deep as the merger keeps (the lengths are
    /// private to `book`, whose test covers them).
    #[test]
    fn bytes_read_covers_what_apply_reads() {
        const DEPTH: usize = 20;
        let mut feed = VenueFeed::default();
        for price in 1..=DEPTH as u64 {
            let level = Level {
                price: FixedPoint::from_raw(price),
                amount: FixedPoint::from_raw(1),
            };
            feed.book.bids.push(level);
            feed.book.asks.push(level);
        }
        let ranges = VenueFeed::bytes_read(DEPTH);
        assert!(crate::book::bytes_cover(&ranges, &feed, &feed.state));
        assert!(crate::book::bytes_cover(
            &ranges,
            &feed,
            &feed.book.venue_sequence
        ));
        assert!(crate::book::bytes_cover(
            &ranges,
            &feed,
            &feed.book.received_ns
        ));
        assert!(crate::book::bytes_cover(
            &ranges,
            &feed,
            &feed.book.exchange_time_ns
        ));
        assert!(crate::book::bytes_cover(
            &ranges,
            &feed,
            feed.book.bids.as_slice()
        ));
        assert!(crate::book::bytes_cover(
            &ranges,
            &feed,
            feed.book.asks.as_slice()
        ));
    }

    /// A summary written over one of an instrument of more sources is the one a fresh
    /// summary would be: the slots past its sources cleared.
    #[test]
    fn a_summary_over_one_of_more_sources_clears_the_slots_past_its_own() {
        let mut wide = Consolidation::new(0, 10, VenueId::ALL);
        let mut narrow = Consolidation::new(1, 10, &[VenueId::Binance, VenueId::Bitstamp]);
        for merger in [&mut wide, &mut narrow] {
            merger.apply_venue(VenueId::Binance, &feed(100, 101, 10));
            merger.apply_venue(VenueId::Bitstamp, &feed(99, 102, 20));
        }
        wide.apply_venue(VenueId::Kraken, &feed(98, 103, 30));
        let (mut reused, mut fresh) = (Summary::default(), Summary::default());
        wide.summarize(1, &mut reused);
        assert!(reused.source_venues[2].is_some());
        narrow.summarize(2, &mut reused);
        narrow.sequence -= 1;
        narrow.summarize(2, &mut fresh);
        assert_eq!(reused, fresh);
    }

    #[test]
    fn only_synced_venues_are_merged() {
        let mut merger = Consolidation::new(0, 10, VenueId::ALL);
        let mut summary = Summary::default();
        merger.summarize(1, &mut summary);
        assert_eq!(summary.book.bids.as_slice().len(), 0);
        assert_eq!(
            summary.venue_state(VenueId::Binance),
            VenueState::Connecting
        );

        merger.apply_venue(VenueId::Binance, &feed(100, 101, 10));
        merger.apply_venue(VenueId::Bitstamp, &feed(99, 102, 20));
        merger.summarize(2, &mut summary);
        assert_eq!(summary.book.bids.as_slice().len(), 2);
        assert_eq!((summary.sequence, summary.received_ns), (2, 20));

        // A crossed venue book is excluded and reported.
        merger.apply_venue(VenueId::Bitstamp, &feed(105, 104, 30));
        merger.summarize(3, &mut summary);
        assert_eq!(summary.venue_state(VenueId::Bitstamp), VenueState::Crossed);
        assert!(bids_only_from(&summary, VenueId::Binance));

        // A decode failure excludes the venue, keeping nothing of its old book.
        merger.apply_venue(
            VenueId::Binance,
            &VenueFeed {
                state: VenueState::OutOfSync,
                ..VenueFeed::default()
            },
        );
        merger.summarize(4, &mut summary);
        assert_eq!(summary.book.bids.as_slice().len(), 0);
    }

    /// A book without asks, or without anything, is excluded (its bids alone could cross
    /// the other venues' asks, and no check of its own could tell), unless allowed.
    #[test]
    fn one_sided_books_are_excluded_unless_allowed() {
        let mut merger = Consolidation::new(0, 10, VenueId::ALL);
        let mut summary = Summary::default();
        merger.apply_venue(VenueId::Bitstamp, &feed(99, 102, 20));
        let mut bids_only = feed(105, 106, 30);
        bids_only.book.asks = Default::default();
        merger.apply_venue(VenueId::Binance, &bids_only);
        merger.summarize(1, &mut summary);
        assert_eq!(summary.venue_state(VenueId::Binance), VenueState::OneSided);
        let venues = |levels: &[MergedLevel]| levels.iter().map(|l| l.venue).collect::<Vec<_>>();
        assert_eq!(venues(summary.book.bids.as_slice()), [VenueId::Bitstamp]);
        assert!(summary.book.spread.is_some_and(|spread| !spread.negative));

        // Left out of the merge, it still ages: an old one-sided book is shown stale.
        assert_eq!(evicted(&mut merger, 25), [VenueId::Bitstamp]);
        assert_eq!(evicted(&mut merger, 31), [VenueId::Binance]);
        merger.summarize(2, &mut summary);
        assert_eq!(summary.venue_state(VenueId::Binance), VenueState::Stale);
        merger.apply_venue(VenueId::Bitstamp, &feed(99, 102, 20));

        merger.allow_one_sided(VenueId::Binance);
        merger.apply_venue(VenueId::Binance, &bids_only);
        merger.summarize(2, &mut summary);
        assert_eq!(summary.venue_state(VenueId::Binance), VenueState::OneSided);
        assert_eq!(
            venues(summary.book.bids.as_slice()),
            [VenueId::Binance, VenueId::Bitstamp],
            "allowed: merged, and still shown one-sided"
        );
        assert_eq!(evicted(&mut merger, 40).len(), 2, "and evicted when stale");

        let mut empty = feed(1, 2, 50);
        empty.book.bids = Default::default();
        empty.book.asks = Default::default();
        merger.apply_venue(VenueId::Bitstamp, &empty);
        merger.summarize(3, &mut summary);
        assert_eq!(summary.venue_state(VenueId::Bitstamp), VenueState::OneSided);
    }

    #[test]
    fn old_books_are_evicted_as_stale() {
        let mut merger = Consolidation::new(0, 10, VenueId::ALL);
        merger.apply_venue(VenueId::Binance, &feed(100, 101, 10));
        merger.apply_venue(VenueId::Bitstamp, &feed(99, 102, 50));
        assert!(!merger.any_stale(10), "none older than 10");
        assert!(merger.any_stale(20));
        assert_eq!(evicted(&mut merger, 20), [VenueId::Binance]);
        assert!(!merger.any_stale(20), "evicted: no longer merged");
        assert_eq!(
            evicted(&mut merger, 20).len(),
            0,
            "evicting again changes nothing"
        );
        let mut summary = Summary::default();
        merger.summarize(60, &mut summary);
        assert_eq!(summary.venue_state(VenueId::Binance), VenueState::Stale);
        assert_eq!(summary.book.bids.as_slice()[0].venue, VenueId::Bitstamp);
        assert_eq!(summary.book.bids.as_slice().len(), 1);
    }

    /// BTC/USD from Kraken (USD) and Binance (USDT), and USDT/USD from Kraken and Bitstamp.
    fn btc_usd_config() -> Config {
        let text = "[[instruments]]\nname = \"USDT/USD\"\n\
            symbols = { kraken = \"USDT/USD\", bitstamp = \"usdtusd\" }\n\
            [[instruments]]\nname = \"BTC/USD\"\nprice_step = \"0.01\"\n\
            symbols = { kraken = \"BTC/USD\", binance = \"BTCUSDT\" }\n\
            [[rates]]\npair = \"USDT/USD\"\ninstrument = \"USDT/USD\"\n";
        crate::config::RawConfig::parse(text, "test.toml")
            .and_then(|raw| raw.validate())
            .expect("valid")
    }

    fn decimal_feed(bids: &[&str], asks: &[&str], received_ns: u64) -> VenueFeed {
        let mut book = TopBook {
            received_ns,
            ..TopBook::default()
        };
        let level = |price: &&str| Level {
            price: price.parse().expect("a decimal"),
            amount: FixedPoint::from_raw(100_000_000),
        };
        for price in bids {
            book.bids.push(level(price));
        }
        for price in asks {
            book.asks.push(level(price));
        }
        VenueFeed {
            state: VenueState::Synced,
            book,
            ..VenueFeed::default()
        }
    }

    fn decimal(text: &str) -> FixedPoint {
        text.parse().expect("a decimal")
    }

    /// Each level of `side`: its price, its native price (its price where not
    /// converted) and its venue.
    fn prices(summary: &Summary, side: Side) -> Vec<(String, String, VenueId)> {
        let levels = summary.book.side(side).as_slice().iter().enumerate();
        levels
            .map(|(at, l)| {
                let native = summary.native_price(side, at).unwrap_or(l.price);
                (l.price.to_string(), native.to_string(), l.venue)
            })
            .collect()
    }

    #[test]
    fn a_venue_in_another_currency_is_merged_converted_while_its_rate_is_there() {
        let config = btc_usd_config();
        let links = RateLinks::new(&config);
        assert_eq!(links.of(0), [(1, 0)]);
        assert_eq!(links.of(1), []);
        let mut rates = Consolidation::configured(&config, 0);
        let mut btc = Consolidation::configured(&config, 1);
        let mut summary = Summary::default();
        btc.apply_venue(VenueId::Kraken, &decimal_feed(&["90000"], &["90001"], 10));
        btc.apply_venue(
            VenueId::Binance,
            &decimal_feed(&["89990.5", "89990.4"], &["90010"], 20),
        );
        btc.summarize(1, &mut summary);
        assert_eq!(summary.venue_state(VenueId::Binance), VenueState::NoRate);
        assert_eq!(summary.venue_state(VenueId::Kraken), VenueState::Synced);
        assert_eq!(
            summary.book.bids.len(),
            1,
            "no rate: Binance's levels are left out"
        );

        // USDT/USD bid 1.0001 (Kraken, received at 5), ask 1.0003 (Bitstamp, at 7).
        rates.apply_venue(VenueId::Kraken, &decimal_feed(&["1.0001"], &["1.0004"], 5));
        rates.apply_venue(VenueId::Bitstamp, &decimal_feed(&["1"], &["1.0003"], 7));
        rates.summarize(2, &mut Summary::default());
        let rate = rates.rate().expect("both sides");
        assert_eq!((rate.bid, rate.ask), (decimal("1.0001"), decimal("1.0003")));
        assert_eq!(rate.received_ns, 5, "the older of the two books");
        assert!(btc.set_rate(0, Some(rate)));
        assert!(
            !btc.set_rate(0, Some(rate)),
            "the same rate changes nothing"
        );
        btc.summarize(3, &mut summary);
        assert_eq!(summary.venue_state(VenueId::Binance), VenueState::Synced);
        // 89990.5 × 1.0001 = 89999.49905 → 89999.49; 89990.4 × 1.0001 = 89999.39904 → 89999.39;
        // 90010 × 1.0003 = 90037.003 → 90037.01.
        let usdt = |text: &str| decimal(text).to_string();
        assert_eq!(
            prices(&summary, Side::Bid),
            [
                (usdt("90000"), usdt("90000"), VenueId::Kraken),
                (usdt("89999.49"), usdt("89990.5"), VenueId::Binance),
                (usdt("89999.39"), usdt("89990.4"), VenueId::Binance),
            ]
        );
        assert_eq!(
            prices(&summary, Side::Ask),
            [
                (usdt("90001"), usdt("90001"), VenueId::Kraken),
                (usdt("90037.01"), usdt("90010"), VenueId::Binance),
            ]
        );
        let applied =
            summary.source_rate[summary.source_of(VenueId::Binance).unwrap()].expect("converted");
        assert_eq!(applied.rate, Some(rate));
        assert_eq!(
            (
                applied.native.as_str(),
                applied.base.as_str(),
                applied.quote.as_str()
            ),
            ("USDT", "USDT", "USD")
        );
        assert_eq!(
            summary.source_rate[summary.source_of(VenueId::Kraken).unwrap()],
            None
        );
        assert_eq!(summary.currency.map(|c| c.to_string()), Some("USD".into()));
        // Binance's own best stays as it quotes it.
        assert_eq!(
            summary.source_best[summary.source_of(VenueId::Binance).unwrap()].bid,
            Some(decimal("89990.5"))
        );

        // The rate's books go stale: no rate, Binance out again.
        assert_eq!(evicted(&mut rates, 100).len(), 2);
        rates.summarize(4, &mut Summary::default());
        assert_eq!(rates.rate(), None);
        assert!(btc.set_rate(0, rates.rate()));
        btc.summarize(5, &mut summary);
        assert_eq!(summary.venue_state(VenueId::Binance), VenueState::NoRate);
        assert!(bids_only_from(&summary, VenueId::Kraken));
    }

    /// Each level of `book`'s `side`: its price and its venue.
    fn levels(book: &MergedBook, side: Side) -> Vec<(String, VenueId)> {
        let levels = book.side(side).as_slice().iter();
        levels.map(|l| (l.price.to_string(), l.venue)).collect()
    }

    #[test]
    fn the_all_in_book_nets_each_venue_of_its_fee_against_the_trader_and_merges_again() {
        // Kraken charges 26 bp, Binance (converted from USDT) 10 bp on this instrument,
        // Bitstamp nothing.
        let text = "[venues.kraken]\ntaker_fee_bps = \"40\"\n\
            [venues.binance]\ntaker_fee_bps = \"10\"\n\
            [[instruments]]\nname = \"BTC/USD\"\nprice_step = \"0.01\"\n\
            symbols = { kraken = \"BTC/USD\", binance = \"BTCUSDT\", bitstamp = \"btcusd\" }\n\
            taker_fees_bps = { kraken = \"26\" }\n\
            [[rates]]\npair = \"USDT/USD\"\nfixed = \"1.0001\"\n";
        let config = crate::config::RawConfig::parse(text, "test.toml")
            .and_then(|raw| raw.validate())
            .expect("valid");
        let mut btc = Consolidation::configured(&config, 0);
        btc.apply_venue(VenueId::Kraken, &decimal_feed(&["90100"], &["90101"], 1));
        btc.apply_venue(VenueId::Binance, &decimal_feed(&["90050"], &["90060"], 2));
        btc.apply_venue(VenueId::Bitstamp, &decimal_feed(&["90000"], &["90200"], 3));
        let mut summary = Summary::default();
        btc.summarize(1, &mut summary);
        assert!(summary.charges_fees);
        let fee = |venue| summary.source_taker_fees[summary.source_of(venue).unwrap()].bps();
        assert_eq!(fee(VenueId::Kraken), decimal("26"), "the instrument's own");
        assert_eq!(fee(VenueId::Binance), decimal("10"), "the venue's");
        assert_eq!(fee(VenueId::Bitstamp), FixedPoint::ZERO);
        let text = |s: &str| decimal(s).to_string();
        assert_eq!(
            levels(&summary.book, Side::Bid),
            [
                (text("90100"), VenueId::Kraken),
                // 90050 × 1.0001 = 90059.005 → 90059.00
                (text("90059"), VenueId::Binance),
                (text("90000"), VenueId::Bitstamp),
            ],
            "the raw book is as it was"
        );
        // Kraken: 90100 × 0.9974 = 89865.74, 90101 × 1.0026 = 90335.2626 → 90335.27.
        // Binance: 90059 × 0.999 = 89968.941 → 89968.94, 90069.01 × 1.001 = 90159.07901
        // → 90159.08 (its converted ask: 90060 × 1.0001 = 90069.006 → 90069.01).
        assert_eq!(
            levels(&summary.all_in, Side::Bid),
            [
                (text("90000"), VenueId::Bitstamp),
                (text("89968.94"), VenueId::Binance),
                (text("89865.74"), VenueId::Kraken),
            ]
        );
        assert_eq!(
            levels(&summary.all_in, Side::Ask),
            [
                (text("90159.08"), VenueId::Binance),
                (text("90200"), VenueId::Bitstamp),
                (text("90335.27"), VenueId::Kraken),
            ]
        );
        assert_eq!(summary.all_in_book(), &summary.all_in);

        // A new book nets again.
        btc.apply_venue(VenueId::Kraken, &decimal_feed(&["90300"], &["90301"], 4));
        btc.summarize(2, &mut summary);
        assert_eq!(
            levels(&summary.all_in, Side::Bid)[0],
            (text("90065.22"), VenueId::Kraken),
            "90300 × 0.9974 = 90065.22"
        );
    }

    #[test]
    fn without_fees_the_book_is_its_own_all_in_book() {
        let mut summary = Summary::default();
        let mut btc = Consolidation::configured(&btc_usd_config(), 1);
        btc.apply_venue(VenueId::Kraken, &decimal_feed(&["90000"], &["90001"], 1));
        btc.summarize(1, &mut summary);
        assert!(!summary.charges_fees);
        assert_eq!(summary.all_in_book(), &summary.book);
        assert_eq!(summary.all_in, MergedBook::default(), "not written");
    }

    /// The all-in book as a reference computes it apart, in `u128` from each level's raw
    /// price: a bid times (1 - fee) rounded down to the step, an ask times (1 + fee) up
    /// (a book without a fee as it is), a bid at zero left out with what is below it, a book's levels at one price summed,
    /// then every book's levels sorted by the merge's order (better price, larger amount,
    /// lower venue), the best `depth` kept: (price, amount, source).
    fn all_in_reference(
        books: &[(VenueId, Vec<u64>, u32)],
        side: Side,
        step: u128,
        depth: usize,
    ) -> Vec<(u64, u64, u8)> {
        const SCALE: u128 = 100_000_000;
        let mut levels: Vec<(u64, u64, u8)> = Vec::new();
        for (source, (_, prices, fee)) in books.iter().enumerate() {
            // The fee in 10^-4 bp: a fraction of fee / 10^8.
            let fee = u128::from(*fee);
            let mut netted: Vec<(u64, u64, u8)> = Vec::new();
            for &price in prices.iter().take(depth) {
                let price = u128::from(price);
                let net = match side {
                    _ if fee == 0 => price,
                    Side::Bid => price * (SCALE - fee) / (SCALE * step) * step,
                    Side::Ask => (price * (SCALE + fee)).div_ceil(SCALE * step) * step,
                };
                if net == 0 {
                    break;
                }
                let net = u64::try_from(net).unwrap();
                match netted.last_mut() {
                    Some(last) if last.0 == net => last.1 += 1_000,
                    _ => netted.push((net, 1_000, source as u8)),
                }
            }
            levels.extend(netted);
        }
        levels.sort_by(|a, b| {
            let price = match side {
                Side::Bid => b.0.cmp(&a.0),
                Side::Ask => a.0.cmp(&b.0),
            };
            let venue = |level: &(u64, u64, u8)| books[usize::from(level.2)].0.index();
            price.then(b.1.cmp(&a.1)).then(venue(a).cmp(&venue(b)))
        });
        levels.truncate(depth);
        levels
    }

    /// Up to `n` distinct raw prices in `range`, best first for `side`.
    fn side_prices(side: Side, n: usize) -> impl Strategy<Value = Vec<u64>> {
        proptest::collection::btree_set(1u64..2_000_000_000, 1..=n).prop_map(move |set| {
            let mut prices: Vec<u64> = set.into_iter().collect();
            if side == Side::Bid {
                prices.reverse();
            }
            prices
        })
    }

    use proptest::prelude::*;

    proptest! {
        /// Random books of up to four venues, random fees (to 10^-4 bp, up to 100 bp)
        /// and price steps: the all-in book is the reference's, and never better for the
        /// trader than the book it nets.
        #[test]
        fn the_all_in_book_equals_an_independent_netting_and_merge(
            books in proptest::collection::vec(
                (
                    side_prices(Side::Bid, 12),
                    side_prices(Side::Ask, 12),
                    prop_oneof![Just(0u32), 0u32..=1_000_000],
                ),
                1..=4,
            ),
            step in prop_oneof![Just(1u64), Just(1_000), Just(1_000_000)],
            depth in 1usize..=10,
        ) {
            let venues = [VenueId::Binance, VenueId::Bitstamp, VenueId::Kraken, VenueId::Okx];
            let sources = &venues[..books.len()];
            let mut consolidation = Consolidation::new(0, depth, sources);
            let fees: Vec<TakerFee> = books
                .iter()
                .map(|(_, _, fee)| {
                    TakerFee::from_bps(FixedPoint::from_raw(u64::from(*fee) * 10_000)).unwrap()
                })
                .collect();
            consolidation.set_taker_fees(&fees, step);
            for (source, (bids, asks, _)) in books.iter().enumerate() {
                let mut book = TopBook { received_ns: 1, ..TopBook::default() };
                let level = |price: &u64| Level {
                    price: FixedPoint::from_raw(*price),
                    amount: FixedPoint::from_raw(1_000),
                };
                // A book may be crossed or one-sided: keep it merged either way.
                for price in bids.iter().take(depth) {
                    book.bids.push(level(price));
                }
                for price in asks.iter().take(depth) {
                    book.asks.push(level(price));
                }
                consolidation.one_sided_allowed[source] = true;
                consolidation.apply(source, &VenueFeed { state: VenueState::Synced, book, ..VenueFeed::default() });
                consolidation.sources[source].state = VenueState::Synced;
            }
            let mut summary = Summary::default();
            consolidation.summarize(1, &mut summary);
            let fee_units: Vec<_> = books.iter().map(|(_, _, fee)| *fee).collect();
            for side in [Side::Bid, Side::Ask] {
                let books: Vec<(VenueId, Vec<u64>, u32)> = books
                    .iter()
                    .zip(sources)
                    .zip(&fee_units)
                    .map(|(((bids, asks, _), venue), fee)| {
                        let prices = match side { Side::Bid => bids, Side::Ask => asks };
                        (*venue, prices.clone(), *fee)
                    })
                    .collect();
                let expected = all_in_reference(&books, side, u128::from(step), depth);
                let all_in: Vec<(u64, u64, u8)> = summary
                    .all_in_book()
                    .side(side)
                    .as_slice()
                    .iter()
                    .map(|l| (l.price.raw(), l.amount.raw(), l.source))
                    .collect();
                prop_assert_eq!(&all_in, &expected, "{:?}", side);
                if let (Some(net), Some(raw)) = (all_in.first(), summary.book.side(side).best()) {
                    match side {
                        Side::Bid => prop_assert!(net.0 <= raw.price.raw()),
                        Side::Ask => prop_assert!(net.0 >= raw.price.raw()),
                    }
                }
            }
        }
    }
}
