//! The simulated market: a random-walk mid price per instrument, and each venue's book
//! around it (realistic spacing, 8-decimal amounts). Deterministic for a seed.

use crate::book::{BookUpdate, DepthBook, Level, Side, TopBook};
use crate::fixed::{FixedPoint, SCALE, UnitSize};
use crate::rng::Rng;
use crate::venue::VenueId;

/// ETH/BTC-like: mid 0.06824, tick 0.00000100 (raw FixedPoint units: 1e-8).
pub const START_MID_TICKS: u64 = 6_824_000 / TICK_RAW;
const TICK_RAW: u64 = 100;

/// The least price a market can start around: the shared walk's start, in ticks of the
/// smallest size.
pub const MIN_START_PRICE: FixedPoint = FixedPoint::from_raw(START_MID_TICKS);

/// Where a market's ticks are in price: every market walks with the one mid (in ticks),
/// each around its own start price with a tick of its own size; and what its sizes count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PriceGrid {
    /// Raw `FixedPoint` units a tick.
    tick_raw: u64,
    /// Ticks added to the shared mid's: `START_MID_TICKS` is the market's start price.
    offset: u64,
    /// For a contract's market: how many contracts one coin is worth (an inverse contract's
    /// at its start price), its sizes whole contracts; `None`: sizes of the coin.
    contracts_per_coin: Option<u64>,
    /// The unit of the instrument the market is of: its sizes are amounts of units as the
    /// wire writes them, in coins.
    unit: UnitSize,
}

impl Default for PriceGrid {
    /// ETH/BTC-like: mid 0.06824, tick 0.000001.
    fn default() -> Self {
        PriceGrid {
            tick_raw: TICK_RAW,
            offset: 0,
            contracts_per_coin: None,
            unit: UnitSize::COIN,
        }
    }
}

impl PriceGrid {
    /// A market that starts at `mid` (rounded to its tick; at least `MIN_START_PRICE`): the
    /// largest power-of-ten tick that leaves the shared walk at least `START_MID_TICKS`
    /// ticks below it, so that no price the walk reaches is zero.
    pub fn around(mid: FixedPoint) -> PriceGrid {
        let mut tick_raw = 1;
        while mid.raw() / (tick_raw * 10) >= START_MID_TICKS {
            tick_raw *= 10;
        }
        PriceGrid {
            tick_raw,
            offset: (mid.raw() / tick_raw).saturating_sub(START_MID_TICKS),
            contracts_per_coin: None,
            unit: UnitSize::COIN,
        }
    }

    /// Sizes of an instrument counted in `unit`s, written in coins (a million coins for a
    /// unit of 10^6); its prices are the coin's already (`Simulator::set_prices`).
    pub fn in_units_of(self, unit: UnitSize) -> PriceGrid {
        PriceGrid { unit, ..self }
    }

    /// Sizes in whole inverse contracts of `value` each (in the price's currency): as many
    /// as the coin amounts the other markets hold are worth at the start price, so the
    /// books compare.
    pub fn in_contracts_of(self, value: FixedPoint) -> PriceGrid {
        let start = self.price(START_MID_TICKS).raw();
        PriceGrid {
            contracts_per_coin: Some((start / value.raw().max(1)).max(1)),
            ..self
        }
    }

    /// Sizes in whole linear contracts of `size` coins each (OKX's 0.01 BTC swaps): as many
    /// as the coin amounts the other markets hold, so the books compare and a size times
    /// the contract size stays within 8 decimals.
    pub fn in_linear_contracts_of(self, size: FixedPoint) -> PriceGrid {
        PriceGrid {
            contracts_per_coin: Some((SCALE / size.raw().max(1)).max(1)),
            ..self
        }
    }

    /// A size of `coin_raw` (raw units of the coin, or of the instrument's unit) as this
    /// market writes it.
    fn size(&self, coin_raw: u64) -> FixedPoint {
        let power = 10u64.pow(u32::from(self.unit.exponent().unsigned_abs()));
        let coin_raw = match self.unit.exponent() >= 0 {
            true => coin_raw.saturating_mul(power),
            // A unit smaller than the coin: the amount's last digits dropped, so that its
            // coins' text holds it.
            false => coin_raw / power,
        };
        match self.contracts_per_coin {
            None => FixedPoint::from_raw(coin_raw),
            Some(per_coin) => {
                let contracts =
                    (u128::from(coin_raw) * u128::from(per_coin) / u128::from(SCALE)).max(1);
                FixedPoint::from_raw(u64::try_from(contracts).unwrap_or(u64::MAX / SCALE) * SCALE)
            }
        }
    }

    pub fn price(&self, ticks: u64) -> FixedPoint {
        FixedPoint::from_raw((ticks + self.offset) * self.tick_raw)
    }
}

/// The mid price all venues quote around: a random walk in ticks, one step per call.
pub struct MidPrice {
    rng: Rng,
    ticks: u64,
}

impl MidPrice {
    pub fn new(seed: u64) -> MidPrice {
        MidPrice {
            rng: Rng::new(seed),
            ticks: START_MID_TICKS,
        }
    }

    pub fn step(&mut self) -> u64 {
        match self.rng.below(4) {
            0 => self.ticks += 1,
            1 => self.ticks = self.ticks.saturating_sub(1).max(START_MID_TICKS / 2),
            _ => {}
        }
        self.ticks
    }
}

/// One venue's quotes for one stream around the shared mid.
pub struct SimulatedBook {
    rng: Rng,
    grid: PriceGrid,
    sequence: u64,
    /// The last book written, for a quiet market to repeat.
    last: Option<Box<TopBook>>,
}

impl SimulatedBook {
    pub fn new(seed: u64, grid: PriceGrid) -> SimulatedBook {
        SimulatedBook {
            rng: Rng::new(seed),
            grid,
            sequence: 1_000,
            last: None,
        }
    }

    /// Writes the last book again, unchanged, with the same sequence: a quiet market
    /// (Binance repeats `lastUpdateId` while nothing changes). False before any book.
    pub fn repeat_book(&self, out: &mut TopBook) -> bool {
        self.last.as_ref().is_some_and(|last| {
            out.copy_from(last);
            true
        })
    }

    /// Writes the venue's next top-`levels` book around `mid_ticks`, its sequence above
    /// the last and at least `floor` (a venue whose sequence is its time).
    pub fn next_book(
        &mut self,
        mid_ticks: u64,
        levels: usize,
        received_ns: u64,
        floor: u64,
        out: &mut TopBook,
    ) {
        self.sequence = (self.sequence + 1 + self.rng.below(3)).max(floor);
        out.clear();
        out.venue_sequence = self.sequence;
        out.received_ns = received_ns;
        let half_spread = 1 + self.rng.below(2);
        let mut bid = mid_ticks - half_spread;
        let mut ask = mid_ticks + half_spread;
        for _ in 0..levels {
            out.bids.push(self.level(bid));
            out.asks.push(self.level(ask));
            bid -= 1 + self.rng.below(2);
            ask += 1 + self.rng.below(2);
        }
        self.last.get_or_insert_default().copy_from(out);
    }

    fn level(&mut self, ticks: u64) -> Level {
        // Amounts from 0.001 to ~20 coins, with all 8 decimals in use.
        let amount = 100_000 + self.rng.below(2_000_000_000);
        Level {
            price: self.grid.price(ticks),
            amount: self.grid.size(amount),
        }
    }
}

/// One venue's full-depth book for one diff stream, changed a few levels per event
/// around the shared mid: what the simulator's diff streams and REST snapshots serve.
pub struct DiffMarket {
    rng: Rng,
    pub book: DepthBook,
    /// The id of the last event in `book` (Binance update id; Bitstamp microtimestamp).
    pub last_id: u64,
    venue: VenueId,
    /// Where the venue cuts its book: after each event, as its clients do.
    kept_depth: Option<usize>,
    grid: PriceGrid,
}

/// Levels a side the simulated full-depth book starts with.
const DIFF_BOOK_LEVELS: u64 = 400;

impl DiffMarket {
    /// `kept_depth`: the levels a side the venue keeps its book at, if it cuts it (the
    /// book starts with its best that many, and is cut to them after each event).
    pub fn new(
        seed: u64,
        venue: VenueId,
        mid_ticks: u64,
        now_us: u64,
        kept_depth: Option<usize>,
        grid: PriceGrid,
    ) -> DiffMarket {
        let mut market = DiffMarket {
            rng: Rng::new(seed),
            book: DepthBook::new(2 * DIFF_BOOK_LEVELS as usize),
            last_id: venue.simulated().initial_event_id(now_us),
            venue,
            kept_depth,
            grid,
        };
        let mut initial = BookUpdate::default();
        for offset in 1..=DIFF_BOOK_LEVELS {
            initial.bids.push(market.level(mid_ticks - offset));
            initial.asks.push(market.level(mid_ticks + offset));
        }
        market.book.replace(&initial);
        if let Some(kept) = kept_depth {
            market.book.truncate(kept);
        }
        market
    }

    fn level(&mut self, ticks: u64) -> Level {
        Level {
            price: self.grid.price(ticks),
            amount: self.grid.size(100_000 + self.rng.below(2_000_000_000)),
        }
    }

    /// The next event around `mid_ticks`, applied to the book and written to `out`: a few
    /// levels set or deleted near the mid, and deletes of any level the mid has moved past
    /// (so the book never crosses).
    pub fn next_event(&mut self, mid_ticks: u64, now_us: u64, out: &mut BookUpdate) {
        out.clear();
        let mid = self.grid.price(mid_ticks);
        let crossed = |levels: &mut dyn Iterator<Item = &Level>, side: Side| -> Vec<Level> {
            levels
                .take_while(|level| !side.is_better(mid, level.price))
                .map(|level| Level {
                    price: level.price,
                    amount: FixedPoint::from_raw(0),
                })
                .collect()
        };
        out.bids = crossed(&mut self.book.levels(Side::Bid), Side::Bid);
        out.asks = crossed(&mut self.book.levels(Side::Ask), Side::Ask);
        for _ in 0..1 + self.rng.below(3) {
            let offset = 1 + self.rng.below(40);
            let mut level = if self.rng.below(2) == 0 {
                self.level(mid_ticks - offset)
            } else {
                self.level(mid_ticks + offset)
            };
            if self.rng.below(4) == 0 {
                level.amount = FixedPoint::from_raw(0);
            }
            if level.price < mid {
                out.bids.push(level);
            } else {
                out.asks.push(level);
            }
        }
        let changes = (out.bids.len() + out.asks.len()) as u64;
        out.previous_last_id = self.last_id;
        (out.first_id, out.last_id) =
            self.venue
                .simulated()
                .next_event_ids(self.last_id, changes, now_us);
        self.last_id = out.last_id;
        self.book.apply(out);
        if let Some(kept) = self.kept_depth {
            self.book.truncate(kept);
        }
    }

    /// An event that adds one unit to the best bid, applied at `now_us` and numbered as
    /// the venue numbers events, for the caller to lose (`Simulator::lose_event`); false
    /// where the book has no bid.
    pub fn change_best_bid(&mut self, now_us: u64) -> bool {
        let Some(best) = self.book.best(Side::Bid) else {
            return false;
        };
        let mut event = BookUpdate::default();
        event.bids.push(Level {
            price: best.price,
            amount: FixedPoint::from_raw(best.amount.raw() + FixedPoint::ONE.raw()),
        });
        event.previous_last_id = self.last_id;
        (event.first_id, event.last_id) =
            self.venue
                .simulated()
                .next_event_ids(self.last_id, 1, now_us);
        self.last_id = event.last_id;
        self.book.apply(&event);
        true
    }

    /// The book as a REST snapshot: the best `limit` levels a side, at `last_id`.
    pub fn snapshot(&self, limit: usize, out: &mut BookUpdate) {
        out.clear();
        out.first_id = self.last_id;
        out.last_id = self.last_id;
        out.bids.extend(self.book.levels(Side::Bid).take(limit));
        out.asks.extend(self.book.levels(Side::Ask).take(limit));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diff_events_rebuild_the_book_from_any_snapshot() {
        for &venue in VenueId::ALL {
            let mut mid = MidPrice::new(5);
            let mut market =
                DiffMarket::new(9, venue, START_MID_TICKS, 1_000, None, PriceGrid::default());
            let mut event = BookUpdate::default();
            let mut snapshot = BookUpdate::default();
            let mut copy =
                crate::book::diff_sync::BookSync::new(venue.facts().sequencing, 10_000, 10_000);
            for step in 0..2000 {
                market.next_event(mid.step(), 1_000 + step / 3, &mut event);
                if step == 0 {
                    // Taken after the first buffered event, as a reader asks for it.
                    market.snapshot(usize::MAX, &mut snapshot);
                    copy.on_update(&event);
                    let synced = copy.on_snapshot(&snapshot);
                    assert!(
                        matches!(
                            synced,
                            crate::book::diff_sync::SnapshotOutcome::Synced { .. }
                        ),
                        "{synced:?}"
                    );
                    continue;
                }
                assert_eq!(
                    copy.on_update(&event),
                    crate::book::diff_sync::UpdateOutcome::Applied
                );
                assert!(!market.book.is_crossed());
            }
            let side = |book: &DepthBook, side| book.levels(side).copied().collect::<Vec<_>>();
            assert_eq!(side(&copy.book, Side::Bid), side(&market.book, Side::Bid));
            assert_eq!(side(&copy.book, Side::Ask), side(&market.book, Side::Ask));
        }
    }

    #[test]
    fn books_are_sorted_uncrossed_and_deterministic() {
        let grid = PriceGrid::default();
        let (mut a, mut b) = (SimulatedBook::new(7, grid), SimulatedBook::new(7, grid));
        let (mut book_a, mut book_b) = (TopBook::default(), TopBook::default());
        let mut mid = MidPrice::new(3);
        for _ in 0..1000 {
            let ticks = mid.step();
            a.next_book(ticks, 20, 0, 0, &mut book_a);
            b.next_book(ticks, 20, 0, 0, &mut book_b);
            assert_eq!(book_a, book_b);
            assert!(!book_a.is_crossed());
            let bids = book_a.bids.as_slice();
            assert!(bids.windows(2).all(|w| w[0].price > w[1].price));
            let asks = book_a.asks.as_slice();
            assert!(asks.windows(2).all(|w| w[0].price < w[1].price));
        }
    }

    #[test]
    fn a_price_grid_starts_at_its_mid_and_stays_above_zero() {
        let price = |text: &str| text.parse::<FixedPoint>().expect("a decimal");
        assert_eq!(PriceGrid::around(price("0.06824")), PriceGrid::default());
        for (mid, tick) in [
            ("90000", "1"),
            ("1.0002", "0.00001"),
            ("0.0007", "0.00000001"),
        ] {
            let grid = PriceGrid::around(price(mid));
            assert_eq!(
                grid.price(START_MID_TICKS + 1).raw() - grid.price(START_MID_TICKS).raw(),
                price(tick).raw(),
                "{mid}"
            );
            assert!(grid.price(START_MID_TICKS) <= price(mid), "{mid}");
            assert!(
                price(mid).raw() - grid.price(START_MID_TICKS).raw() < price(tick).raw(),
                "{mid}"
            );
            // The walk's floor, less the deepest level below it, is still a price.
            assert!(grid.price(START_MID_TICKS / 2 - 400).raw() > 0, "{mid}");
        }
    }
}
