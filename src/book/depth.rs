//! A venue's full-depth book for one instrument, maintained from a diff stream (issue:
//! `mode = "diff"`): a REST snapshot replaces it, each diff event sets levels (amount zero
//! deletes), and after each applied event its top N goes to the merger as a [`TopBook`].
//!
//! Each side is one sorted array, worst level first and best level last. Why: diffs
//! cluster at the top of the book, so an insert or delete there moves only the few levels
//! above it, and the search for a price gallops from the best end (a couple of compares
//! for a level near the top, `log2(depth)` at worst). The arrays are allocated once, with
//! room for `max_levels`; applying an event never allocates.

use super::full_depth::Journal;
use super::{Level, Levels, Side, TopBook};

/// One decoded diff event or snapshot: the levels it sets, in wire order, and the venue's
/// ids for it (an event covers `first_id..=last_id`; a snapshot is at `last_id`, with
/// `first_id` equal). A zero amount deletes the level.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BookUpdate {
    pub first_id: u64,
    pub last_id: u64,
    /// The `last_id` of the event before this one, where the venue chains its events by
    /// it (Binance futures' `pu`); 0 elsewhere.
    pub previous_last_id: u64,
    /// The venue's own time of the event or snapshot (ns since the Unix epoch; 0 where it
    /// sends none: `TopBook::exchange_time_ns`).
    pub exchange_time_ns: u64,
    pub bids: Vec<Level>,
    pub asks: Vec<Level>,
    /// A snapshot sent on the WebSocket in the diff stream (not a REST body): it replaces
    /// the book.
    pub is_snapshot: bool,
    /// The venue's checksum of its book after this message, where it sends one.
    pub checksum: Option<u32>,
    /// How the message wrote its numbers, where the venue's checksum is over that text.
    pub decimals: WireDecimals,
    /// The message's number on its connection, where the venue numbers every message it
    /// sends there (Coinbase Advanced Trade's `sequence_num`): set for every message the
    /// decoder accepts, books or not, so that the feed core sees one go missing.
    pub message_number: Option<u64>,
    /// Each level's own id, in the order of `bids` and `asks`, where the venue numbers
    /// every change of an event (KuCoin's per-change sequence): an event applied after a
    /// snapshot it overlaps sets only the levels numbered after the book's last id. Empty
    /// elsewhere.
    pub change_ids: ChangeIds,
}

/// The ids of an event's changes, side by side with its levels ([`BookUpdate::change_ids`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangeIds {
    pub bids: Vec<u64>,
    pub asks: Vec<u64>,
}

impl ChangeIds {
    pub fn is_empty(&self) -> bool {
        self.bids.is_empty() && self.asks.is_empty()
    }
}

/// The most fractional digits among the prices, and among the amounts, as written on the
/// wire (`"0.0500"` has 4): the text of a number again, where a venue prints every number
/// of a book with the same precision and checksums that text. With the unit the book's
/// numbers are in, which the wire's are not (`UnitSize::wire_text`).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct WireDecimals {
    pub price: u8,
    pub amount: u8,
    pub unit: crate::fixed::UnitSize,
}

impl BookUpdate {
    /// Numbers the update by one id, its first and its last: a venue that numbers each
    /// message by a single number, or by its time.
    pub fn set_id(&mut self, id: u64) {
        self.first_id = id;
        self.last_id = id;
    }

    /// Room for `levels` per side, so decoding into it never allocates.
    pub fn with_capacity(levels: usize) -> BookUpdate {
        BookUpdate {
            bids: Vec::with_capacity(levels),
            asks: Vec::with_capacity(levels),
            change_ids: ChangeIds {
                bids: Vec::with_capacity(levels),
                asks: Vec::with_capacity(levels),
            },
            ..BookUpdate::default()
        }
    }

    pub fn clear(&mut self) {
        self.first_id = 0;
        self.last_id = 0;
        self.previous_last_id = 0;
        self.exchange_time_ns = 0;
        self.bids.clear();
        self.asks.clear();
        self.is_snapshot = false;
        self.checksum = None;
        self.decimals = WireDecimals::default();
        self.message_number = None;
        self.change_ids.bids.clear();
        self.change_ids.asks.clear();
    }

    /// Copies `other` into `self`, reusing `self`'s buffers.
    pub fn copy_from(&mut self, other: &BookUpdate) {
        self.first_id = other.first_id;
        self.last_id = other.last_id;
        self.previous_last_id = other.previous_last_id;
        self.exchange_time_ns = other.exchange_time_ns;
        self.bids.clone_from(&other.bids);
        self.asks.clone_from(&other.asks);
        self.is_snapshot = other.is_snapshot;
        self.checksum = other.checksum;
        self.decimals = other.decimals;
        self.message_number = other.message_number;
        self.change_ids.clone_from(&other.change_ids);
    }
}

/// One side of a [`DepthBook`], worst first.
#[derive(Debug, Clone)]
struct DepthSide {
    side: Side,
    levels: Vec<Level>,
}

impl DepthSide {
    fn new(side: Side, max_levels: usize) -> DepthSide {
        DepthSide {
            side,
            levels: Vec::with_capacity(max_levels),
        }
    }

    /// Where `price` is (`Ok`) or would be inserted (`Err`), searching from the best end:
    /// galloping over 1, 2, 4… levels to bracket it, then a binary search in the bracket.
    #[inline]
    fn find(&self, price: crate::fixed::FixedPoint) -> Result<usize, usize> {
        let levels = &self.levels;
        let worse = |level: &Level| self.side.is_better(price, level.price);
        // Invariant: every level at or above `high` is better than `price` or equal to it.
        let mut high = levels.len();
        let mut step = 1;
        let low = loop {
            let probe = high.saturating_sub(step);
            if probe == 0 || worse(&levels[probe]) {
                break probe;
            }
            high = probe;
            step *= 2;
        };
        let bracket = &levels[low..high];
        let offset = bracket.partition_point(worse);
        let index = low + offset;
        match levels.get(index) {
            Some(level) if level.price == price => Ok(index),
            _ => Err(index),
        }
    }

    /// Sets one level; returns false when it deleted a price that was not there.
    #[inline]
    fn set(&mut self, level: Level, max_levels: usize) -> bool {
        self.set_at(level, max_levels).is_some()
    }

    /// Sets one level; returns the lowest index whose level changed (the side's length
    /// where none did), or `None` when it deleted a price that was not there.
    #[inline]
    fn set_at(&mut self, level: Level, max_levels: usize) -> Option<usize> {
        Some(match self.find(level.price) {
            Ok(index) if level.amount.is_zero() => {
                self.levels.remove(index);
                index
            }
            Ok(index) => {
                self.levels[index].amount = level.amount;
                index
            }
            Err(_) if level.amount.is_zero() => return None,
            Err(index) if self.levels.len() < max_levels => {
                self.levels.insert(index, level);
                index
            }
            // Full: the worst level makes room, unless the new one would be the worst.
            Err(0) => self.levels.len(),
            Err(index) => {
                self.levels.remove(0);
                self.levels.insert(index - 1, level);
                0
            }
        })
    }

    /// Replaces the side with `best_first` (a snapshot side, sorted best first), keeping
    /// the best `max_levels` and no zero amounts.
    fn replace(&mut self, best_first: &[Level], max_levels: usize) {
        self.levels.clear();
        let kept = best_first.iter().filter(|level| !level.amount.is_zero());
        self.levels.extend(kept.take(max_levels).copied());
        self.levels.reverse();
    }

    fn top(&self, depth: usize, out: &mut Levels) {
        out.clear();
        for level in self.levels.iter().rev().take(depth) {
            out.push(*level);
        }
    }
}

/// A full-depth book (see the module docs). Levels beyond `max_levels` a side are dropped,
/// worst first: they are as unknown as the levels beyond the snapshot's depth.
#[derive(Debug)]
pub struct DepthBook {
    bids: DepthSide,
    asks: DepthSide,
    max_levels: usize,
    /// Deletes of a price the book did not hold (harmless, but a sign of a bad sync when
    /// frequent; the recordings have none).
    pub absent_deletes: u64,
    /// Its changes, where copies of it are kept up to date (`full_depth::FullDepth`).
    journal: Option<Box<Journal>>,
}

/// No room: a book that is only ever a copy of another (`copy_levels_from`).
impl Default for DepthBook {
    fn default() -> Self {
        DepthBook::new(0)
    }
}

impl DepthBook {
    pub fn new(max_levels: usize) -> DepthBook {
        DepthBook {
            bids: DepthSide::new(Side::Bid, max_levels),
            asks: DepthSide::new(Side::Ask, max_levels),
            max_levels,
            absent_deletes: 0,
            journal: None,
        }
    }

    /// The book journaling its changes, so that copies of it can follow
    /// (`full_depth::FullDepth::update_from`).
    pub fn with_journal(mut self) -> DepthBook {
        self.journal = Some(Box::default());
        self
    }

    pub(super) fn journal(&self) -> Option<&Journal> {
        self.journal.as_deref()
    }

    /// Makes this book's levels `other`'s, with its room (reserved whole, so that
    /// following it never allocates); the journal is not copied.
    pub(super) fn copy_levels_from(&mut self, other: &DepthBook) {
        self.max_levels = other.max_levels;
        for (side, of) in [(&mut self.bids, &other.bids), (&mut self.asks, &other.asks)] {
            side.levels.clear();
            side.levels.reserve(other.max_levels);
            side.levels.extend_from_slice(&of.levels);
        }
    }

    pub fn clear(&mut self) {
        self.bids.levels.clear();
        self.asks.levels.clear();
        if let Some(journal) = &mut self.journal {
            journal.new_epoch();
        }
    }

    /// Replaces the book with a snapshot whose sides are sorted best first.
    pub fn replace(&mut self, snapshot: &BookUpdate) {
        self.bids.replace(&snapshot.bids, self.max_levels);
        self.asks.replace(&snapshot.asks, self.max_levels);
        if let Some(journal) = &mut self.journal {
            journal.new_epoch();
        }
    }

    /// Sets one level of `side` (a copy following its book's journal); returns the lowest
    /// index (worst first) whose level changed, the side's length where none did.
    #[inline]
    pub(super) fn set(&mut self, side: Side, level: Level) -> usize {
        let max_levels = self.max_levels;
        let of = match side {
            Side::Bid => &mut self.bids,
            Side::Ask => &mut self.asks,
        };
        let len = of.levels.len();
        of.set_at(level, max_levels).unwrap_or(len)
    }

    /// Sets `level` of `side`, journaled, counting a delete of a price not there.
    #[inline]
    fn set_journaled(&mut self, side: Side, level: Level) {
        let of = match side {
            Side::Bid => &mut self.bids,
            Side::Ask => &mut self.asks,
        };
        if !of.set(level, self.max_levels) {
            self.absent_deletes += 1;
        }
        if let Some(journal) = &mut self.journal {
            journal.set(side, level);
        }
    }

    /// Applies one diff event's levels in wire order.
    #[inline]
    pub fn apply(&mut self, update: &BookUpdate) {
        for &level in &update.bids {
            self.set_journaled(Side::Bid, level);
        }
        for &level in &update.asks {
            self.set_journaled(Side::Ask, level);
        }
    }

    /// Applies the changes of an event whose changes are numbered ([`BookUpdate::change_ids`])
    /// that come after `last_id`, each price at its latest change: what the venue's
    /// sequence says, whatever order the changes are written in (KuCoin writes a side's
    /// changes by price, not by sequence).
    pub fn apply_changes_after(&mut self, update: &BookUpdate, last_id: u64) {
        let sides = [
            (&update.bids, &update.change_ids.bids, Side::Bid),
            (&update.asks, &update.change_ids.asks, Side::Ask),
        ];
        for (levels, ids, side) in sides {
            for (index, (&level, &id)) in levels.iter().zip(ids).enumerate() {
                // A later change of the same price in this event supersedes this one. The
                // search is quadratic in the event's changes, a handful on this venue.
                let superseded =
                    (levels.iter().zip(ids).enumerate()).any(|(other, (at, &later))| {
                        other != index && at.price == level.price && later > id
                    });
                if id > last_id && !superseded {
                    self.set_journaled(side, level);
                }
            }
        }
    }

    /// How many levels of `side` are at `bound` or better.
    pub fn levels_at_or_better(&self, side: Side, bound: crate::fixed::FixedPoint) -> usize {
        let levels = &self.side(side).levels;
        let worse = levels.partition_point(|level| side.is_better(bound, level.price));
        levels.len() - worse
    }

    /// Keeps the best `levels` a side: a venue that sends only its top N and no deletes
    /// for the levels pushed out of it.
    pub fn truncate(&mut self, levels: usize) {
        for side in [&mut self.bids, &mut self.asks] {
            let excess = side.levels.len().saturating_sub(levels);
            side.levels.drain(..excess);
        }
        if let Some(journal) = &mut self.journal {
            journal.truncate(levels);
        }
    }

    pub fn len(&self, side: Side) -> usize {
        self.side(side).levels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.bids.levels.is_empty() && self.asks.levels.is_empty()
    }

    pub fn best(&self, side: Side) -> Option<Level> {
        self.side(side).levels.last().copied()
    }

    pub fn worst(&self, side: Side) -> Option<Level> {
        self.side(side).levels.first().copied()
    }

    /// Best bid at or above best ask: not a market, the book must be rebuilt.
    pub fn is_crossed(&self) -> bool {
        match (self.best(Side::Bid), self.best(Side::Ask)) {
            (Some(bid), Some(ask)) => bid.price >= ask.price,
            _ => false,
        }
    }

    /// Writes the best `depth` levels a side into `out` (sequence and times untouched).
    #[inline]
    pub fn top(&self, depth: usize, out: &mut TopBook) {
        self.bids.top(depth, &mut out.bids);
        self.asks.top(depth, &mut out.asks);
    }

    /// The levels a side it keeps at most.
    pub fn max_levels(&self) -> usize {
        self.max_levels
    }

    /// The whole side, worst first: the order it is kept in.
    pub fn worst_first(&self, side: Side) -> &[Level] {
        &self.side(side).levels
    }

    /// The whole side, best first.
    pub fn levels(
        &self,
        side: Side,
    ) -> impl DoubleEndedIterator<Item = &Level> + ExactSizeIterator {
        self.side(side).levels.iter().rev()
    }

    fn side(&self, side: Side) -> &DepthSide {
        match side {
            Side::Bid => &self.bids,
            Side::Ask => &self.asks,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn level(price: u64, amount: u64) -> Level {
        Level::from_raw(price, amount)
    }

    fn update(bids: &[(u64, u64)], asks: &[(u64, u64)]) -> BookUpdate {
        BookUpdate {
            bids: bids.iter().map(|&(p, a)| level(p, a)).collect(),
            asks: asks.iter().map(|&(p, a)| level(p, a)).collect(),
            ..BookUpdate::default()
        }
    }

    #[test]
    fn sets_replaces_and_deletes_levels() {
        let mut book = DepthBook::new(100);
        book.replace(&update(&[(10, 1), (9, 1), (8, 0)], &[(11, 1), (12, 1)]));
        assert_eq!(book.len(Side::Bid), 2, "zero amounts are not kept");
        book.apply(&update(&[(10, 5), (7, 2), (9, 0), (6, 0)], &[(10, 3)]));
        let bids: Vec<_> = book.levels(Side::Bid).copied().collect();
        assert_eq!(bids, [level(10, 5), level(7, 2)]);
        assert_eq!(book.best(Side::Ask), Some(level(10, 3)));
        assert!(book.is_crossed());
        assert_eq!(book.absent_deletes, 1, "deleting 6 was a no-op");
    }

    #[test]
    fn a_full_side_drops_its_worst_level() {
        let mut book = DepthBook::new(2);
        book.apply(&update(&[(10, 1), (9, 1)], &[]));
        book.apply(&update(&[(8, 1)], &[]));
        assert_eq!(book.len(Side::Bid), 2);
        book.apply(&update(&[(11, 1)], &[]));
        let bids: Vec<_> = book.levels(Side::Bid).map(|l| l.price.raw()).collect();
        assert_eq!(bids, [11, 10]);
    }

    #[test]
    fn truncating_keeps_the_best_levels() {
        let mut book = DepthBook::new(100);
        book.replace(&update(&[(10, 1), (9, 1), (8, 1)], &[(11, 1), (12, 1)]));
        book.truncate(2);
        let bids: Vec<_> = book.levels(Side::Bid).map(|l| l.price.raw()).collect();
        let asks: Vec<_> = book.levels(Side::Ask).map(|l| l.price.raw()).collect();
        assert_eq!((bids, asks), (vec![10, 9], vec![11, 12]));
    }

    proptest! {
        /// Against a BTreeMap reference: any sequence of sets and deletes on both sides.
        #[test]
        fn agrees_with_an_ordered_map(
            events in prop::collection::vec(
                prop::collection::vec((any::<bool>(), 1u64..200, 0u64..4), 1..20), 1..60),
        ) {
            let mut book = DepthBook::new(1000);
            let mut bids = BTreeMap::new();
            let mut asks = BTreeMap::new();
            for event in events {
                let mut diff = BookUpdate::default();
                for (is_bid, price, amount) in event {
                    let (levels, map) = if is_bid { (&mut diff.bids, &mut bids) } else { (&mut diff.asks, &mut asks) };
                    levels.push(level(price, amount));
                    if amount == 0 { map.remove(&price); } else { map.insert(price, amount); }
                }
                book.apply(&diff);
            }
            let expected_bids: Vec<Level> = bids.iter().rev().map(|(&p, &a)| level(p, a)).collect();
            let expected_asks: Vec<Level> = asks.iter().map(|(&p, &a)| level(p, a)).collect();
            prop_assert_eq!(book.levels(Side::Bid).copied().collect::<Vec<_>>(), expected_bids);
            prop_assert_eq!(book.levels(Side::Ask).copied().collect::<Vec<_>>(), expected_asks);
        }
    }
}
