//! Price levels and the fixed-capacity top-N book that travels from a reader to the merger.
//!
//! Everything here is plain data with inline storage: a `TopBook` is written in place by a
//! decoder, copied into a mailbox slot and read by the merger without touching the heap.

pub mod depth;
pub mod diff_sync;
pub mod full_depth;

pub use depth::{BookUpdate, DepthBook, WireDecimals};

use crate::fixed::FixedPoint;
use std::mem::{offset_of, size_of};
use std::ops::Range;

/// The most levels per side that any book or summary holds (Bitstamp's whole snapshot).
/// Configured depths are validated against it; arrays are inline so the hot path never allocates.
pub const MAX_DEPTH: usize = 100;

/// One price level: the price and the total amount resting at it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Level {
    pub price: FixedPoint,
    pub amount: FixedPoint,
}

impl Level {
    /// A level of raw fixed-point values (`FixedPoint::from_raw`).
    pub const fn from_raw(price: u64, amount: u64) -> Level {
        Level {
            price: FixedPoint::from_raw(price),
            amount: FixedPoint::from_raw(amount),
        }
    }
}

/// Which side of a book: bids are sorted by descending price, asks by ascending price.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Side {
    Bid,
    Ask,
}

impl Side {
    /// True when `price` is strictly better than `than` on this side.
    #[inline]
    pub fn is_better(self, price: FixedPoint, than: FixedPoint) -> bool {
        self.rank(price) < self.rank(than)
    }

    /// Where `price` ranks on this side, best lowest: the price for asks, its bitwise
    /// inverse for bids. Without a branch, so a loop over one side compares one way.
    #[inline]
    pub fn rank(self, price: FixedPoint) -> u64 {
        let invert = match self {
            Side::Bid => u64::MAX,
            Side::Ask => 0,
        };
        price.raw() ^ invert
    }

    pub fn name(self) -> &'static str {
        match self {
            Side::Bid => "bids",
            Side::Ask => "asks",
        }
    }
}

/// Up to `MAX_DEPTH` levels of one side, best first, stored inline (no heap).
#[derive(Clone, Copy, Debug)]
pub struct LevelArray<T> {
    levels: [T; MAX_DEPTH],
    len: usize,
}

/// One venue's side.
pub type Levels = LevelArray<Level>;

impl<T: Copy + Default> Default for LevelArray<T> {
    fn default() -> Self {
        LevelArray {
            levels: [T::default(); MAX_DEPTH],
            len: 0,
        }
    }
}

/// Equal when the live levels are (whatever the unused slots hold).
impl<T: PartialEq> PartialEq for LevelArray<T> {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl<T> LevelArray<T> {
    #[inline]
    pub fn as_slice(&self) -> &[T] {
        &self.levels[..self.len]
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn best(&self) -> Option<&T> {
        self.as_slice().first()
    }

    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
    }

    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [T] {
        &mut self.levels[..self.len]
    }

    /// Appends a level; returns false (and keeps the array unchanged) when full.
    #[inline]
    pub fn push(&mut self, level: T) -> bool {
        match self.levels.get_mut(self.len) {
            Some(slot) => {
                *slot = level;
                self.len += 1;
                true
            }
            None => false,
        }
    }

    /// The bytes that reading the best `depth` levels touches, the levels and the length,
    /// as offsets from the start of whatever holds the array at offset `at`.
    pub fn bytes_read(at: usize, depth: usize) -> [Range<usize>; 2] {
        let levels = at + offset_of!(Self, levels);
        [
            levels..levels + depth.min(MAX_DEPTH) * size_of::<T>(),
            field_bytes::<usize>(at + offset_of!(Self, len)),
        ]
    }
}

/// The bytes of a field of type `F` at `offset`.
pub fn field_bytes<F>(offset: usize) -> Range<usize> {
    offset..offset + size_of::<F>()
}

impl<T: Copy + Default> LevelArray<T> {
    /// Empties the array by writing its first `n` slots: the lines the next fill of up to
    /// `n` levels writes (see `mailbox::Sender::prepare`).
    #[inline]
    pub fn clear_writing(&mut self, n: usize) {
        self.levels[..n.min(MAX_DEPTH)].fill(T::default());
        self.len = 0;
    }
}

impl<T: Copy> LevelArray<T> {
    /// Replaces the contents with the levels `next` yields, up to `limit` (and the
    /// capacity), stopping at its first `None`. The length is stored once, at the end,
    /// instead of once per level as `push` must: this is the merge's inner loop.
    #[inline]
    pub fn fill_from(&mut self, limit: usize, mut next: impl FnMut() -> Option<T>) {
        let mut len = 0;
        for slot in self.levels.iter_mut().take(limit) {
            let Some(level) = next() else { break };
            *slot = level;
            len += 1;
        }
        self.len = len;
    }

    /// Replaces the contents by a writer of the first slots: `fill` is given up to `limit`
    /// of them (and the capacity) and returns how many it filled, in order. For a decoder's
    /// loop that writes a slot before it knows whether to keep it.
    #[inline]
    pub fn fill_slots(&mut self, limit: usize, fill: impl FnOnce(&mut [T]) -> usize) {
        let slots = &mut self.levels[..limit.min(MAX_DEPTH)];
        let filled = fill(slots).min(slots.len());
        self.len = filled;
    }

    /// Copies the live levels of `other` (not the whole inline array).
    #[inline]
    pub fn copy_from(&mut self, other: &LevelArray<T>) {
        self.levels[..other.len].copy_from_slice(other.as_slice());
        self.len = other.len;
    }
}

/// One venue's top of book for one instrument, as decoded from one frame (or taken from a
/// full-depth local book). Both sides are sorted best first and hold no zero amounts.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TopBook {
    pub bids: Levels,
    pub asks: Levels,
    /// The venue's own monotonic id for this state (Binance `lastUpdateId`, Bitstamp
    /// `microtimestamp`): lets a reader drop a duplicate or out-of-order push.
    pub venue_sequence: u64,
    /// When the reader received the frame (ns on the process's monotonic clock); the start
    /// of the frame-to-publish latency.
    pub received_ns: u64,
    /// The venue's own time of this state (ns since the Unix epoch, exact from the wire's
    /// ms, µs or RFC 3339 text), as each venue's `mod.rs` says which of its times it is;
    /// 0 where the frame carries none.
    pub exchange_time_ns: u64,
}

impl TopBook {
    pub fn clear(&mut self) {
        self.bids.clear();
        self.asks.clear();
        self.venue_sequence = 0;
        self.received_ns = 0;
        self.exchange_time_ns = 0;
    }

    pub fn side(&self, side: Side) -> &Levels {
        match side {
            Side::Bid => &self.bids,
            Side::Ask => &self.asks,
        }
    }

    /// A venue's own book is crossed (or locked) when its best bid is not below its best
    /// ask. Such a book is not a market; the merger excludes the venue while it lasts.
    /// Whether a side (or both) has no level.
    pub fn lacks_a_side(&self) -> bool {
        self.bids.is_empty() || self.asks.is_empty()
    }

    pub fn is_crossed(&self) -> bool {
        match (self.bids.best(), self.asks.best()) {
            (Some(bid), Some(ask)) => bid.price >= ask.price,
            _ => false,
        }
    }

    /// Empties the book by writing every line that a `copy_from` of a book with `bids` and
    /// `asks` levels writes (see `mailbox::Sender::prepare`).
    #[inline]
    pub fn clear_writing(&mut self, bids: usize, asks: usize) {
        let TopBook {
            bids: bid_levels,
            asks: ask_levels,
            venue_sequence,
            received_ns,
            exchange_time_ns,
        } = self;
        bid_levels.clear_writing(bids);
        ask_levels.clear_writing(asks);
        *venue_sequence = 0;
        *received_ns = 0;
        *exchange_time_ns = 0;
    }

    /// The bytes that reading the best `depth` levels a side and the three stamps touches,
    /// as offsets from the start of whatever holds the book at offset `at`: what the
    /// merger asks its core to fetch before it takes a book written on a reader's core
    /// (`mailbox::Receiver::take_prefetching`).
    pub fn bytes_read(at: usize, depth: usize) -> [Range<usize>; 7] {
        let [bid_levels, bid_len] = Levels::bytes_read(at + offset_of!(Self, bids), depth);
        let [ask_levels, ask_len] = Levels::bytes_read(at + offset_of!(Self, asks), depth);
        [
            bid_levels,
            bid_len,
            ask_levels,
            ask_len,
            field_bytes::<u64>(at + offset_of!(Self, venue_sequence)),
            field_bytes::<u64>(at + offset_of!(Self, received_ns)),
            field_bytes::<u64>(at + offset_of!(Self, exchange_time_ns)),
        ]
    }

    /// Copies the live part of `other`.
    #[inline]
    /// Multiplies every amount by `by`, exactly: false (and the book is not to be used)
    /// where a product has more than 8 fractional digits or does not fit.
    pub fn scale_amounts(&mut self, by: FixedPoint) -> bool {
        let bids = self.bids.as_mut_slice().iter_mut();
        let mut levels = bids.chain(self.asks.as_mut_slice().iter_mut());
        levels.all(|level| match level.amount.checked_mul(by) {
            Some(amount) => {
                level.amount = amount;
                true
            }
            None => false,
        })
    }

    pub fn copy_from(&mut self, other: &TopBook) {
        self.bids.copy_from(&other.bids);
        self.asks.copy_from(&other.asks);
        self.venue_sequence = other.venue_sequence;
        self.received_ns = other.received_ns;
        self.exchange_time_ns = other.exchange_time_ns;
    }
}

/// For tests of `bytes_read`: whether every byte of `field` (inside `whole`) lies in one
/// of `ranges`, which are offsets from `whole`'s start and must lie inside it.
#[cfg(test)]
pub(crate) fn bytes_cover<W, F: ?Sized>(ranges: &[Range<usize>], whole: &W, field: &F) -> bool {
    let start = std::ptr::from_ref(whole).addr();
    assert!(
        ranges.iter().all(|range| range.end <= size_of::<W>()),
        "a range past the end: {ranges:?}"
    );
    let field_start = std::ptr::from_ref(field).cast::<u8>().addr() - start;
    (field_start..field_start + size_of_val(field))
        .all(|byte| ranges.iter().any(|range| range.contains(&byte)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the merger reads of a book keeping `depth` levels (`apply`: the best levels and
    /// the lengths for `is_crossed` and `copy_from`, the stamps) is within `bytes_read`, for
    /// depths below, at and above the capacity.
    #[test]
    fn bytes_read_covers_the_best_levels_the_lengths_and_the_stamps() {
        let book = TopBook::default();
        for depth in [0, 1, 10, 20, MAX_DEPTH, MAX_DEPTH + 50] {
            let ranges = TopBook::bytes_read(0, depth);
            let kept = depth.min(MAX_DEPTH);
            for side in [&book.bids, &book.asks] {
                assert!(bytes_cover(&ranges, &book, &side.levels[..kept]), "{depth}");
                assert!(bytes_cover(&ranges, &book, &side.len), "{depth}");
                if let Some(one_more) = side.levels.get(..kept + 1) {
                    assert!(
                        !bytes_cover(&ranges, &book, one_more),
                        "{depth}: not a level more than the depth"
                    );
                }
            }
            assert!(bytes_cover(&ranges, &book, &book.venue_sequence));
            assert!(bytes_cover(&ranges, &book, &book.received_ns));
            assert!(bytes_cover(&ranges, &book, &book.exchange_time_ns));
        }
    }
}
