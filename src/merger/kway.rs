//! The k-way merge: up to one top-N side a venue → one consolidated top N, each
//! level attributed to its venue, plus the spread. Pure and allocation-free.
//!
//! Levels are not aggregated across venues: two venues at the same price give two levels,
//! because a consumer routes an order to a venue, not to a price.
//!
//! **Tie-break** between levels, best first: better price; at equal price the larger
//! amount; at equal price and amount the lower venue id (registry order), then, between
//! two books of one venue, the lower source (the instrument's order). The order is total,
//! so the output is deterministic.
//!
//! Two inputs take a two-pointer merge; up to [`SCAN_MAX_INPUTS`] a linear scan of the
//! heads, which sit in a few cache lines and compare in two integer compares; more take a
//! binary heap of the heads, O(log K) a level (`merge_16x10` against the scan in
//! BENCHMARKS.md).

use crate::book::{Level, LevelArray, Side, TopBook};
use crate::fixed::{FixedPoint, SignedFixed};
use crate::merger::summary::MAX_SOURCES;
use crate::venue::VenueId;

/// The most inputs a merge takes (more are left out): room for every book of an
/// instrument, which has one input a source.
pub const MAX_INPUTS: usize = 32;
const _: () = assert!(MAX_SOURCES <= MAX_INPUTS);

/// The most inputs merged by a scan of their heads; more take the heap.
pub const SCAN_MAX_INPUTS: usize = 8;

/// Which book a level comes from: its venue, and its source, the book's place among the
/// instrument's books (an instrument may take two books of one venue: its spot and its
/// perpetual). Ordered by venue, then source: the last key of the tie-break.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Origin {
    pub venue: VenueId,
    pub source: u8,
}

impl Origin {
    /// Venue, then source, as one integer: one compare in the merge's inner loop.
    #[inline(always)]
    fn key(self) -> u16 {
        u16::from(self.venue.index() as u8) << 8 | u16::from(self.source)
    }
}

impl PartialOrd for Origin {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Origin {
    #[inline(always)]
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key().cmp(&other.key())
    }
}

impl Default for Origin {
    fn default() -> Self {
        Origin {
            venue: VenueId::ALL[0],
            source: 0,
        }
    }
}

/// One level of the consolidated book.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MergedLevel {
    pub price: FixedPoint,
    pub amount: FixedPoint,
    pub venue: VenueId,
    /// The book of the instrument it comes from (an index of `Summary::source_states`).
    pub source: u8,
}

impl Default for MergedLevel {
    fn default() -> Self {
        MergedLevel::new(&Level::default(), Origin::default())
    }
}

impl MergedLevel {
    fn new(level: &Level, origin: Origin) -> MergedLevel {
        MergedLevel {
            price: level.price,
            amount: level.amount,
            venue: origin.venue,
            source: origin.source,
        }
    }
}

/// One side of the consolidated book, best first, inline storage.
pub type MergedLevels = LevelArray<MergedLevel>;

/// How the consolidated best bid and best ask relate. Crossed or locked across venues is
/// a real (arbitrage) market state, so it is reported, not hidden.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CrossState {
    #[default]
    Normal,
    /// Best bid equals best ask (on different venues).
    Locked,
    /// Best bid above best ask; the spread is negative.
    Crossed,
}

/// The consolidated book of one instrument.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MergedBook {
    pub bids: MergedLevels,
    pub asks: MergedLevels,
    /// Best ask minus best bid; `None` while either side is empty.
    pub spread: Option<SignedFixed>,
    pub cross: CrossState,
}

impl MergedBook {
    pub fn side(&self, side: Side) -> &MergedLevels {
        match side {
            Side::Bid => &self.bids,
            Side::Ask => &self.asks,
        }
    }

    /// Empties the book by writing what the next merge of up to `depth` levels a side
    /// writes (see `mailbox::Sender::prepare`).
    pub fn clear_writing(&mut self, depth: usize) {
        let MergedBook {
            bids: bid_levels,
            asks: ask_levels,
            spread,
            cross,
        } = self;
        bid_levels.clear_writing(depth);
        ask_levels.clear_writing(depth);
        *spread = None;
        *cross = CrossState::default();
    }

    /// Copies `other`'s live levels (not the whole inline arrays) and its spread.
    #[inline]
    pub fn copy_from(&mut self, other: &MergedBook) {
        self.bids.copy_from(&other.bids);
        self.asks.copy_from(&other.asks);
        self.spread = other.spread;
        self.cross = other.cross;
    }
}

/// One book's input to a merge.
#[derive(Clone, Copy)]
pub struct VenueBook<'a> {
    pub origin: Origin,
    pub book: &'a TopBook,
}

/// True when `a` (from `a_origin`) ranks before `b` (see the tie-break). `BIDS` selects
/// the side at compile time, keeping the side out of the inner loop. An origin is an
/// `Origin`, or its `Origin::key` where a loop computes it once.
#[inline(always)]
fn ranks_before<const BIDS: bool, O: Ord>(a: &Level, a_origin: O, b: &Level, b_origin: O) -> bool {
    if a.price != b.price {
        return (a.price > b.price) == BIDS;
    }
    if a.amount != b.amount {
        return a.amount > b.amount;
    }
    a_origin < b_origin
}

/// Merges one side of every input into `out`, keeping the best `depth` levels.
#[inline]
pub fn merge_side(side: Side, inputs: &[VenueBook<'_>], depth: usize, out: &mut MergedLevels) {
    match side {
        Side::Bid => merge_side_of::<true>(inputs, depth, out),
        Side::Ask => merge_side_of::<false>(inputs, depth, out),
    }
}

#[inline]
fn merge_side_of<const BIDS: bool>(inputs: &[VenueBook<'_>], depth: usize, out: &mut MergedLevels) {
    let side = if BIDS { Side::Bid } else { Side::Ask };
    if let [first, second] = inputs {
        // Ahead of the scan's 8-slot head table: filling it cost a fifth of `merge_2x10`.
        return merge_two::<BIDS>(
            (first.book.side(side).as_slice(), first.origin),
            (second.book.side(side).as_slice(), second.origin),
            depth,
            out,
        );
    }
    if inputs.len() > SCAN_MAX_INPUTS {
        return merge_heap::<BIDS>(side, &inputs[..inputs.len().min(MAX_INPUTS)], depth, out);
    }
    // Each book's remaining levels; a book drops out of the scan when it runs dry.
    let mut heads: [(&[Level], Origin); SCAN_MAX_INPUTS] =
        [(&[], Origin::default()); SCAN_MAX_INPUTS];
    let mut live = 0;
    for input in inputs {
        let levels = input.book.side(side).as_slice();
        if !levels.is_empty() {
            heads[live] = (levels, input.origin);
            live += 1;
        }
    }
    out.fill_from(depth, || {
        if live == 0 {
            return None;
        }
        let mut best = 0;
        for candidate in 1..live {
            let (levels, origin) = heads[candidate];
            let (best_levels, best_origin) = heads[best];
            if ranks_before::<BIDS, _>(&levels[0], origin, &best_levels[0], best_origin) {
                best = candidate;
            }
        }
        let (levels, origin) = heads[best];
        if levels.len() > 1 {
            heads[best].0 = &levels[1..];
        } else {
            // Keep input order among the remaining heads: ties on every key resolve to the
            // earlier input, as a stable sort would.
            heads.copy_within(best + 1..live, best);
            live -= 1;
        }
        Some(MergedLevel::new(&levels[0], origin))
    });
}

/// A book's remaining levels in the heap.
#[derive(Clone, Copy)]
struct Head<'a> {
    levels: &'a [Level],
    origin: Origin,
}

/// Whether head `a` ranks before head `b`. Heads equal on every key are equal levels of
/// one book, the same in the output whichever goes first.
#[inline(always)]
fn head_before<const BIDS: bool>(a: &Head<'_>, b: &Head<'_>) -> bool {
    ranks_before::<BIDS, _>(&a.levels[0], a.origin, &b.levels[0], b.origin)
}

/// Moves the head at `at` down the heap `heads` until neither child ranks before it.
#[inline]
fn sift_down<const BIDS: bool>(heads: &mut [Head<'_>], mut at: usize) {
    loop {
        let left = 2 * at + 1;
        if left >= heads.len() {
            return;
        }
        let right = left + 1;
        let child = match right < heads.len() && head_before::<BIDS>(&heads[right], &heads[left]) {
            true => right,
            false => left,
        };
        if !head_before::<BIDS>(&heads[child], &heads[at]) {
            return;
        }
        heads.swap(at, child);
        at = child;
    }
}

/// Many inputs: a binary heap of the non-empty heads, the best on top; each level taken
/// costs a sift of O(log K) compares instead of a scan of K.
fn merge_heap<const BIDS: bool>(
    side: Side,
    inputs: &[VenueBook<'_>],
    depth: usize,
    out: &mut MergedLevels,
) {
    let empty = Head {
        levels: &[],
        origin: Origin::default(),
    };
    let mut heads = [empty; MAX_INPUTS];
    let mut live = 0;
    for input in inputs {
        let levels = input.book.side(side).as_slice();
        if !levels.is_empty() {
            heads[live] = Head {
                levels,
                origin: input.origin,
            };
            live += 1;
        }
    }
    for at in (0..live / 2).rev() {
        sift_down::<BIDS>(&mut heads[..live], at);
    }
    out.fill_from(depth, || {
        if live == 0 {
            return None;
        }
        let top = heads[0];
        if top.levels.len() > 1 {
            heads[0].levels = &top.levels[1..];
        } else {
            live -= 1;
            heads[0] = heads[live];
        }
        sift_down::<BIDS>(&mut heads[..live], 0);
        Some(MergedLevel::new(&top.levels[0], top.origin))
    });
}

/// Two inputs, the common deployment: a two-pointer merge, one comparison per level
/// instead of a scan of the heads (`merge_2x10`: 970 → 542 instructions). The same order as the
/// scan: `second` goes first only when it ranks strictly before `first`.
#[inline]
fn merge_two<const BIDS: bool>(
    (mut first, first_origin): (&[Level], Origin),
    (mut second, second_origin): (&[Level], Origin),
    depth: usize,
    out: &mut MergedLevels,
) {
    // The tie-break's last key as one integer each, outside the loop.
    let (first_key, second_key) = (first_origin.key(), second_origin.key());
    out.fill_from(depth, || {
        let (level, origin) = match (first.split_first(), second.split_first()) {
            (Some((a, a_rest)), Some((b, b_rest))) => {
                if ranks_before::<BIDS, _>(b, second_key, a, first_key) {
                    second = b_rest;
                    (b, second_origin)
                } else {
                    first = a_rest;
                    (a, first_origin)
                }
            }
            (Some((a, a_rest)), None) => {
                first = a_rest;
                (a, first_origin)
            }
            (None, Some((b, b_rest))) => {
                second = b_rest;
                (b, second_origin)
            }
            (None, None) => return None,
        };
        Some(MergedLevel::new(level, origin))
    });
}

/// Merges both sides and derives the spread and cross state.
#[inline]
pub fn merge(inputs: &[VenueBook<'_>], depth: usize, out: &mut MergedBook) {
    merge_side(Side::Bid, inputs, depth, &mut out.bids);
    merge_side(Side::Ask, inputs, depth, &mut out.asks);
    (out.spread, out.cross) = match (out.bids.best(), out.asks.best()) {
        (Some(bid), Some(ask)) => {
            let spread = ask.price.signed_difference(bid.price);
            let cross = match ask.price.cmp(&bid.price) {
                std::cmp::Ordering::Greater => CrossState::Normal,
                std::cmp::Ordering::Equal => CrossState::Locked,
                std::cmp::Ordering::Less => CrossState::Crossed,
            };
            (Some(spread), cross)
        }
        _ => (None, CrossState::Normal),
    };
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::book::{Levels, MAX_DEPTH};
    use proptest::prelude::*;

    fn level(price: u64, amount: u64) -> Level {
        Level::from_raw(price, amount)
    }

    fn origin(venue: VenueId, source: u8) -> Origin {
        Origin { venue, source }
    }

    fn book(bids: &[(u64, u64)], asks: &[(u64, u64)]) -> TopBook {
        let mut book = TopBook::default();
        for &(price, amount) in bids {
            book.bids.push(level(price, amount));
        }
        for &(price, amount) in asks {
            book.asks.push(level(price, amount));
        }
        book
    }

    #[test]
    fn interleaves_venues_with_the_documented_tie_break() {
        let binance = book(&[(100, 5), (99, 1)], &[(101, 1), (103, 1)]);
        let bitstamp = book(&[(100, 7), (98, 1)], &[(101, 1), (102, 2)]);
        let inputs = [
            VenueBook {
                origin: origin(VenueId::Bitstamp, 0),
                book: &bitstamp,
            },
            VenueBook {
                origin: origin(VenueId::Binance, 1),
                book: &binance,
            },
        ];
        let mut merged = MergedBook::default();
        merge(&inputs, 3, &mut merged);
        let sides: Vec<_> = merged
            .bids
            .as_slice()
            .iter()
            .map(|l| (l.price.raw(), l.amount.raw(), l.venue))
            .collect();
        // Equal price 100: larger amount (bitstamp, 7) first.
        assert_eq!(
            sides,
            [
                (100, 7, VenueId::Bitstamp),
                (100, 5, VenueId::Binance),
                (99, 1, VenueId::Binance)
            ]
        );
        let asks: Vec<_> = merged
            .asks
            .as_slice()
            .iter()
            .map(|l| (l.price.raw(), l.venue))
            .collect();
        // Equal price and amount at 101: lower venue id (binance) first.
        assert_eq!(
            asks,
            [
                (101, VenueId::Binance),
                (101, VenueId::Bitstamp),
                (102, VenueId::Bitstamp)
            ]
        );
        assert_eq!(
            merged.spread,
            Some(SignedFixed {
                negative: false,
                magnitude: FixedPoint::from_raw(1)
            })
        );
        assert_eq!(merged.cross, CrossState::Normal);
    }

    #[test]
    fn reports_locked_and_crossed_books_with_a_signed_spread() {
        let merge_two = |binance: &TopBook, bitstamp: &TopBook| {
            let mut merged = MergedBook::default();
            let inputs = [
                VenueBook {
                    origin: origin(VenueId::Binance, 0),
                    book: binance,
                },
                VenueBook {
                    origin: origin(VenueId::Bitstamp, 1),
                    book: bitstamp,
                },
            ];
            merge(&inputs, 10, &mut merged);
            merged
        };
        let low = book(&[(100, 1)], &[(105, 1)]);
        let merged = merge_two(&low, &book(&[(107, 1)], &[(110, 1)]));
        assert_eq!(merged.cross, CrossState::Crossed);
        assert_eq!(merged.spread.unwrap().to_string(), "-0.00000002");

        let mut merged = merge_two(&low, &book(&[(105, 1)], &[(120, 1)]));
        assert_eq!(merged.cross, CrossState::Locked);
        assert_eq!(merged.spread.unwrap().to_string(), "0.00000000");

        merge(&[], 10, &mut merged);
        assert_eq!((merged.spread, merged.bids.as_slice().len()), (None, 0));
    }

    /// A depth beyond the capacity keeps a full side, on both paths (two venues, the scan).
    #[test]
    fn keeps_at_most_max_depth_levels() {
        let asks: Vec<(u64, u64)> = (1..=MAX_DEPTH as u64).map(|price| (price, 1)).collect();
        let bids: Vec<(u64, u64)> = asks.iter().rev().copied().collect();
        let full = book(&bids, &asks);
        let view = |venue, source| VenueBook {
            origin: origin(venue, source),
            book: &full,
        };
        let inputs = [
            view(VenueId::Binance, 0),
            view(VenueId::Bitstamp, 1),
            view(VenueId::Binance, 2),
        ];
        for venues in [2, 3] {
            let mut merged = MergedBook::default();
            merge(&inputs[..venues], usize::MAX, &mut merged);
            assert_eq!(
                (merged.bids.len(), merged.asks.len()),
                (MAX_DEPTH, MAX_DEPTH)
            );
            assert_eq!(merged.bids.as_slice()[1].price.raw(), MAX_DEPTH as u64);
        }
    }

    /// The obvious merge: concatenate every (level, origin), sort by the tie-break, take N.
    fn reference_side(side: Side, inputs: &[(Origin, TopBook)], depth: usize) -> Vec<MergedLevel> {
        let mut all: Vec<MergedLevel> = inputs
            .iter()
            .flat_map(|(origin, book)| {
                book.side(side).as_slice().iter().map(|l| MergedLevel {
                    price: l.price,
                    amount: l.amount,
                    venue: origin.venue,
                    source: origin.source,
                })
            })
            .collect();
        all.sort_by(|a, b| {
            let price = match side {
                Side::Bid => b.price.cmp(&a.price),
                Side::Ask => a.price.cmp(&b.price),
            };
            price
                .then(b.amount.cmp(&a.amount))
                .then(a.venue.cmp(&b.venue))
                .then(a.source.cmp(&b.source))
        });
        all.truncate(depth);
        all
    }

    /// A random sorted side: distinct prices on a small grid (so venues collide on price),
    /// small amounts (so they collide on amount too).
    fn arbitrary_side(side: Side) -> impl Strategy<Value = Levels> {
        proptest::collection::btree_map(1u64..60, 1u64..4, 0..=MAX_DEPTH).prop_map(move |levels| {
            let mut out = Levels::default();
            let mut sorted: Vec<_> = levels.into_iter().collect();
            if side == Side::Bid {
                sorted.reverse();
            }
            for (price, amount) in sorted {
                out.push(level(price, amount));
            }
            out
        })
    }

    fn arbitrary_book() -> impl Strategy<Value = TopBook> {
        (arbitrary_side(Side::Bid), arbitrary_side(Side::Ask)).prop_map(|(bids, asks)| TopBook {
            bids,
            asks,
            ..TopBook::default()
        })
    }

    /// Merges `books` (venue ids in registry order, repeating beyond the registry: two
    /// books of one venue, told apart by their sources) and compares both sides with the
    /// reference.
    fn check_against_reference(books: Vec<TopBook>, depth: usize) -> Result<(), TestCaseError> {
        let inputs: Vec<(Origin, TopBook)> = books
            .into_iter()
            .enumerate()
            .map(|(index, book)| {
                let venue = VenueId::ALL[index % VenueId::ALL.len()];
                (origin(venue, index as u8), book)
            })
            .collect();
        let views: Vec<VenueBook> = inputs
            .iter()
            .map(|(origin, book)| VenueBook {
                origin: *origin,
                book,
            })
            .collect();
        let mut merged = MergedBook::default();
        merge(&views, depth, &mut merged);
        prop_assert_eq!(
            merged.bids.as_slice(),
            &reference_side(Side::Bid, &inputs, depth)[..]
        );
        prop_assert_eq!(
            merged.asks.as_slice(),
            &reference_side(Side::Ask, &inputs, depth)[..]
        );
        Ok(())
    }

    proptest! {
        #[test]
        fn agrees_with_the_reference_merge(
            books in proptest::collection::vec(arbitrary_book(), 0..=MAX_INPUTS),
            depth in 0..=MAX_DEPTH,
        ) {
            check_against_reference(books, depth)?;
        }

        /// Many inputs take the heap: tested on its own, every case.
        #[test]
        fn many_venues_agree_with_the_reference_merge(
            books in proptest::collection::vec(arbitrary_book(), SCAN_MAX_INPUTS + 1..=MAX_INPUTS),
            depth in 0..=MAX_DEPTH,
        ) {
            check_against_reference(books, depth)?;
        }

        /// Two venues take the two-pointer path: tested on its own, not 1 case in 9.
        #[test]
        fn two_venues_agree_with_the_reference_merge(
            first in arbitrary_book(),
            second in arbitrary_book(),
            depth in 0..=MAX_DEPTH,
        ) {
            check_against_reference(vec![first, second], depth)?;
        }
    }
}
