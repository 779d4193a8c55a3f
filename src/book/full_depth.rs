//! A reader's full-depth book, handed to the merger beside its top N: a copy in each
//! mailbox slot ([`FullDepth`]), brought up to date at every publish by replaying what
//! changed since that slot last held the book ([`Journal`]).
//!
//! Why a journal and not a copy: a slot comes back to the reader one or two publishes
//! after it left, so it is a few levels behind; replaying those changes costs what the
//! reader's own apply cost (tens of nanoseconds), where copying a 1,000-level book each
//! publish would cost a microsecond. A slot too far behind (its changes no longer in the
//! ring, or the book replaced since) is copied whole, which is rare: a new snapshot, or a
//! merger that held a slot through hundreds of changes.
//!
//! The merger reads the copy in its front slot, which is the book of the top it merged
//! last: a quote over full depth is computed from the books of the summary it names.
//!
//! Each copy also keeps its sides' running totals from the worst level up (amount, and
//! price times amount), so that what lies at or better than a price is two lookups and a
//! subtraction, not a walk: the summaries' bands reach hundreds of levels deep. A change
//! near the top, where changes cluster, refreshes only the totals above it.

use super::depth::DepthBook;
use super::{Level, Side};
use crate::fixed::FixedPoint;
use std::sync::atomic::{AtomicU64, Ordering};

/// Changes a journal keeps; a copy further behind is copied whole.
pub const JOURNAL_CHANGES: usize = 256;

/// One change of a journaled book.
#[derive(Clone, Copy, Debug)]
enum Change {
    /// A level set (amount zero: deleted), as `DepthBook` applied it.
    Set(Side, Level),
    /// The book cut to its best `levels` a side.
    Truncate(usize),
}

/// Which state of which book a copy holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Position {
    /// The journal's book, unique in the process; 0: no book.
    book: u64,
    /// Bumped whenever the book is replaced or cleared: no change leads across it.
    epoch: u64,
    /// Changes recorded in the epoch.
    changes: u64,
}

/// What changed in a book, for its copies: the latest [`JOURNAL_CHANGES`] changes of its
/// current epoch.
#[derive(Debug)]
pub struct Journal {
    at: Position,
    ring: Box<[Change]>,
}

impl Journal {
    pub fn new() -> Journal {
        static BOOKS: AtomicU64 = AtomicU64::new(1);
        Journal {
            at: Position {
                book: BOOKS.fetch_add(1, Ordering::Relaxed),
                epoch: 0,
                changes: 0,
            },
            ring: vec![Change::Truncate(0); JOURNAL_CHANGES].into_boxed_slice(),
        }
    }

    #[inline]
    fn record(&mut self, change: Change) {
        let at = (self.at.changes % JOURNAL_CHANGES as u64) as usize;
        self.ring[at] = change;
        self.at.changes += 1;
    }

    #[inline]
    pub(super) fn set(&mut self, side: Side, level: Level) {
        self.record(Change::Set(side, level));
    }

    #[inline]
    pub(super) fn truncate(&mut self, levels: usize) {
        self.record(Change::Truncate(levels));
    }

    /// The book was replaced or cleared.
    pub(super) fn new_epoch(&mut self) {
        self.at.epoch += 1;
        self.at.changes = 0;
    }
}

impl Default for Journal {
    fn default() -> Self {
        Journal::new()
    }
}

/// A copy of a reader's full-depth book in a mailbox slot (empty where the reader keeps
/// none: a venue in snapshot mode, or full depth not asked for), and what one contract of
/// its amounts is (the merger scales them as the reader scales its top).
#[derive(Debug, Default)]
pub struct FullDepth {
    at: Position,
    book: DepthBook,
    pub contract_size: Option<FixedPoint>,
    /// Per side (bids, asks), each level's running totals from the worst level up: the
    /// amount (raw) and the notional (raw price times raw amount) of it and every worse
    /// level.
    totals: [Vec<(u128, u128)>; 2],
}

/// What some levels of a side hold: the amount (10^-8) and its notional (10^-16).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Held {
    pub amount: u128,
    pub notional: u128,
}

impl Clone for FullDepth {
    fn clone(&self) -> Self {
        let mut copy = FullDepth::default();
        copy.clone_from(self);
        copy
    }

    /// Reuses `self`'s room: a held book handed to a mailbox.
    fn clone_from(&mut self, source: &Self) {
        self.at = source.at;
        self.book.copy_levels_from(&source.book);
        self.contract_size = source.contract_size;
        self.refresh_totals([0, 0]);
    }
}

impl FullDepth {
    /// Whether it holds a book.
    pub fn is_present(&self) -> bool {
        self.at.book != 0
    }

    /// The book's side, worst first: the order it is kept in.
    pub fn worst_first(&self, side: Side) -> &[Level] {
        self.book.worst_first(side)
    }

    /// Holds no book.
    pub fn clear(&mut self) {
        self.at = Position::default();
        self.book.clear();
        self.totals.iter_mut().for_each(Vec::clear);
    }

    /// What `side` holds at `bound` or better (a bid at or above it, an ask at or below):
    /// its amount and notional, from the running totals.
    pub fn held_within(&self, side: Side, bound: u64) -> Held {
        let levels = self.book.worst_first(side);
        let totals = &self.totals[side as usize];
        // Worst first: the levels beyond the bound come first.
        let beyond = levels.partition_point(|level| match side {
            Side::Bid => level.price.raw() < bound,
            Side::Ask => level.price.raw() > bound,
        });
        let all = totals.last().copied().unwrap_or_default();
        let below = match beyond {
            0 => (0, 0),
            at => totals[at - 1],
        };
        Held {
            amount: all.0 - below.0,
            notional: all.1 - below.1,
        }
    }

    /// Recomputes each side's running totals from its index in `from` (worst first) up.
    fn refresh_totals(&mut self, from: [usize; 2]) {
        for side in [Side::Bid, Side::Ask] {
            let levels = self.book.worst_first(side);
            let totals = &mut self.totals[side as usize];
            if totals.capacity() < levels.len() {
                // Once, as the book's own room is reserved: following it never allocates.
                totals.reserve(self.book.max_levels().max(levels.len()) - totals.len());
            }
            let from = from[side as usize].min(levels.len()).min(totals.len());
            totals.truncate(from);
            let mut running = totals.last().copied().unwrap_or_default();
            for level in &levels[from..] {
                let amount = u128::from(level.amount.raw());
                running.0 += amount;
                running.1 += amount * u128::from(level.price.raw());
                totals.push(running);
            }
        }
    }

    /// Brings the copy to `book`'s current state: its changes since replayed, or the
    /// whole book copied where they are not all in its journal. A book without a journal
    /// leaves the copy empty.
    #[inline]
    pub fn update_from(&mut self, book: &DepthBook) {
        let Some(journal) = book.journal() else {
            self.clear();
            return;
        };
        let now = journal.at;
        let behind = now.changes.wrapping_sub(self.at.changes);
        let replayable = self.at.book == now.book
            && self.at.epoch == now.epoch
            && self.at.changes <= now.changes
            && behind <= JOURNAL_CHANGES as u64;
        // The lowest index of each side whose level changed: the totals above it follow.
        let mut changed = [usize::MAX; 2];
        if replayable {
            for change in self.at.changes..now.changes {
                match journal.ring[(change % JOURNAL_CHANGES as u64) as usize] {
                    Change::Set(side, level) => {
                        let at = self.book.set(side, level);
                        changed[side as usize] = changed[side as usize].min(at);
                    }
                    Change::Truncate(levels) => {
                        // The worst levels go: every total changes.
                        self.book.truncate(levels);
                        changed = [0, 0];
                    }
                }
            }
        } else {
            self.book.copy_levels_from(book);
            changed = [0, 0];
        }
        self.refresh_totals(changed);
        self.at = now;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::book::BookUpdate;
    use proptest::prelude::*;

    fn sides(book: &DepthBook) -> (Vec<Level>, Vec<Level>) {
        let side = |side| book.levels(side).copied().collect();
        (side(Side::Bid), side(Side::Ask))
    }

    fn copy_sides(copy: &FullDepth) -> (Vec<Level>, Vec<Level>) {
        let side = |side| copy.worst_first(side).iter().rev().copied().collect();
        (side(Side::Bid), side(Side::Ask))
    }

    #[derive(Clone, Debug)]
    enum Step {
        Event(Vec<(u64, u64)>, Vec<(u64, u64)>),
        Snapshot(Vec<(u64, u64)>, Vec<(u64, u64)>),
        Truncate(usize),
        /// Which of three copies (a mailbox's slots) is brought up to date.
        Publish(usize),
    }

    fn levels() -> impl Strategy<Value = Vec<(u64, u64)>> {
        proptest::collection::vec((1u64..60, 0u64..4), 0..12)
    }

    fn step() -> impl Strategy<Value = Step> {
        prop_oneof![
            6 => (levels(), levels()).prop_map(|(b, a)| Step::Event(b, a)),
            1 => (levels(), levels()).prop_map(|(b, a)| Step::Snapshot(b, a)),
            1 => (1usize..30).prop_map(Step::Truncate),
            6 => (0usize..3).prop_map(Step::Publish),
            // A slot held through more changes than the journal keeps.
            1 => Just(Step::Event(vec![(7, 1); JOURNAL_CHANGES + 1], vec![])),
        ]
    }

    fn update(bids: &[(u64, u64)], asks: &[(u64, u64)], snapshot: bool) -> BookUpdate {
        let level = |&(price, amount): &(u64, u64)| Level::from_raw(price, amount);
        let mut bids: Vec<Level> = bids.iter().map(level).collect();
        let mut asks: Vec<Level> = asks.iter().map(|&(p, a)| level(&(p + 100, a))).collect();
        if snapshot {
            bids.sort_by_key(|level| std::cmp::Reverse(level.price));
            bids.dedup_by_key(|level| level.price);
            asks.sort_by_key(|level| level.price);
            asks.dedup_by_key(|level| level.price);
        }
        BookUpdate {
            bids,
            asks,
            is_snapshot: snapshot,
            ..BookUpdate::default()
        }
    }

    proptest! {
        /// Whatever the book goes through and whichever slot is published when, a slot
        /// brought up to date holds exactly the reader's book.
        #[test]
        fn a_copy_brought_up_to_date_equals_the_book(steps in proptest::collection::vec(step(), 1..60)) {
            let mut book = DepthBook::new(40).with_journal();
            let mut copies: [FullDepth; 3] = Default::default();
            for step in steps {
                match step {
                    Step::Event(bids, asks) => book.apply(&update(&bids, &asks, false)),
                    Step::Snapshot(bids, asks) => book.replace(&update(&bids, &asks, true)),
                    Step::Truncate(levels) => book.truncate(levels),
                    Step::Publish(slot) => {
                        copies[slot].update_from(&book);
                        prop_assert_eq!(copy_sides(&copies[slot]), sides(&book));
                        // What each side holds at or better than every price, against
                        // a sum of the book's levels.
                        for side in [Side::Bid, Side::Ask] {
                            for bound in 0..170 {
                                let within = book.levels(side).filter(|level| match side {
                                    Side::Bid => level.price.raw() >= bound,
                                    Side::Ask => level.price.raw() <= bound,
                                });
                                let expected = within.fold(Held::default(), |held, level| {
                                    let amount = u128::from(level.amount.raw());
                                    Held {
                                        amount: held.amount + amount,
                                        notional: held.notional + amount * u128::from(level.price.raw()),
                                    }
                                });
                                prop_assert_eq!(copies[slot].held_within(side, bound), expected);
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_book_without_a_journal_hands_over_none() {
        let mut book = DepthBook::new(10);
        book.apply(&update(&[(5, 1)], &[(5, 1)], false));
        let mut copy = FullDepth::default();
        copy.update_from(&book);
        assert!(!copy.is_present());
        assert!(copy.worst_first(Side::Bid).is_empty());
    }

    #[test]
    fn another_books_copy_is_replaced_whole() {
        let mut first = DepthBook::new(10).with_journal();
        let mut second = DepthBook::new(10).with_journal();
        first.apply(&update(&[(5, 1)], &[], false));
        second.apply(&update(&[(6, 1)], &[], false));
        let mut copy = FullDepth::default();
        copy.update_from(&first);
        copy.update_from(&second);
        assert_eq!(copy_sides(&copy), sides(&second));
    }
}
