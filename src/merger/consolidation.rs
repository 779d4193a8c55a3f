//! Consolidation of one instrument: each venue's latest book and state, and the rules for
//! which venues enter the merge. Pure (no threads, no clock: times are passed in), so the
//! live merger thread and `mergebook replay` run exactly the same logic.
//!
//! The rule that keeps the merged book honest: only a venue in state `Synced` is merged.
//! A venue whose own book is crossed, whose feed failed to decode or lost sync, or whose
//! book is older than the stale age is shown with that state and left out, so a partial
//! or stale book is never presented as live.

use crate::book::TopBook;
use crate::feed::handoff::VenueFeed;
use crate::merger::kway::{VenueBook, merge};
use crate::merger::summary::{BestPrices, Summary, VenueState};
use crate::venue::{MAX_VENUES, VenueId};

#[derive(Clone, Copy, Default)]
struct VenueSlot {
    state: VenueState,
    book: TopBook,
}

impl VenueSlot {
    /// Whether this venue's state comes from a book received before `oldest_ns`: what the
    /// stale age evicts. Merged or not: a one-sided or crossed book left out of the merge
    /// ages too, so its state never shows an old book as the venue's current one.
    fn is_stale(&self, oldest_ns: u64) -> bool {
        matches!(
            self.state,
            VenueState::Synced | VenueState::OneSided | VenueState::Crossed
        ) && self.book.received_ns < oldest_ns
    }
}

/// One instrument's venues and its next summary number.
pub struct Consolidation {
    instrument: usize,
    depth: usize,
    venues: [VenueSlot; MAX_VENUES],
    sequence: u64,
    /// Venues whose one-sided books are merged (`venues.<name>.allow_one_sided`).
    one_sided_allowed: [bool; MAX_VENUES],
    /// Receive time of the newest book applied since the last summary: the start of the
    /// latency the next summary reports.
    latest_received_ns: u64,
}

impl Consolidation {
    /// `venues` are the venues configured for this instrument; they start `Connecting`.
    pub fn new(instrument: usize, depth: usize, venues: &[VenueId]) -> Self {
        let mut slots = [VenueSlot::default(); MAX_VENUES];
        for venue in venues {
            slots[venue.index()].state = VenueState::Connecting;
        }
        Consolidation {
            instrument,
            depth,
            venues: slots,
            sequence: 0,
            one_sided_allowed: [false; MAX_VENUES],
            latest_received_ns: 0,
        }
    }

    /// How many levels a side its summaries carry.
    pub fn depth(&self) -> usize {
        self.depth
    }

    /// Merges `venue`'s books even when they lack a side (they are still shown `OneSided`).
    pub fn allow_one_sided(&mut self, venue: VenueId) {
        self.one_sided_allowed[venue.index()] = true;
    }

    /// Applies what a venue's reader published. A `Synced` book whose own best bid is not
    /// below its best ask is held as `Crossed`, one that lacks a side as `OneSided`.
    pub fn apply(&mut self, venue: VenueId, feed: &VenueFeed) {
        let slot = &mut self.venues[venue.index()];
        slot.state = match feed.state {
            VenueState::Synced if feed.book.is_crossed() => VenueState::Crossed,
            VenueState::Synced if feed.book.lacks_a_side() => VenueState::OneSided,
            state => state,
        };
        if feed.state == VenueState::Synced {
            slot.book.copy_from(&feed.book);
            self.latest_received_ns = self.latest_received_ns.max(feed.book.received_ns);
        }
    }

    /// Whether a venue's book was received before `oldest_ns` (`evict_stale` would evict
    /// it).
    pub fn any_stale(&self, oldest_ns: u64) -> bool {
        self.venues.iter().any(|slot| slot.is_stale(oldest_ns))
    }

    /// Marks `Stale` every venue whose book was received before `oldest_ns`, and returns
    /// them (none: the summary did not change).
    pub fn evict_stale(&mut self, oldest_ns: u64) -> impl Iterator<Item = VenueId> + use<> {
        let mut evicted = [false; MAX_VENUES];
        for (slot, evicted) in self.venues.iter_mut().zip(&mut evicted) {
            if slot.is_stale(oldest_ns) {
                slot.state = VenueState::Stale;
                *evicted = true;
            }
        }
        VenueId::ALL
            .iter()
            .copied()
            .filter(move |venue| evicted[venue.index()])
    }

    /// Merges the synced venues into `out` and stamps it with the next sequence number.
    pub fn summarize(&mut self, published_ns: u64, out: &mut Summary) {
        let mut inputs = [VenueBook {
            venue: VenueId::ALL[0],
            book: &self.venues[0].book,
        }; MAX_VENUES];
        let mut count = 0;
        for &venue in VenueId::ALL {
            let slot = &self.venues[venue.index()];
            if is_merged(slot.state, self.one_sided_allowed[venue.index()]) {
                inputs[count] = VenueBook {
                    venue,
                    book: &slot.book,
                };
                count += 1;
            }
        }
        merge(&inputs[..count], self.depth, &mut out.book);
        self.sequence += 1;
        out.instrument = self.instrument;
        out.sequence = self.sequence;
        out.published_ns = published_ns;
        out.received_ns = self.latest_received_ns;
        for (venue, slot) in self.venues.iter().enumerate() {
            out.venues[venue] = slot.state;
            out.venue_received_ns[venue] = slot.book.received_ns;
            out.venue_sequence[venue] = slot.book.venue_sequence;
            out.venue_best[venue] = BestPrices {
                bid: slot.book.bids.best().map(|level| level.price),
                ask: slot.book.asks.best().map(|level| level.price),
            };
        }
    }
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
    use crate::merger::kway::MergedLevel;

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
        }
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
            feed.book.bids.as_slice()
        ));
        assert!(crate::book::bytes_cover(
            &ranges,
            &feed,
            feed.book.asks.as_slice()
        ));
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

        merger.apply(VenueId::Binance, &feed(100, 101, 10));
        merger.apply(VenueId::Bitstamp, &feed(99, 102, 20));
        merger.summarize(2, &mut summary);
        assert_eq!(summary.book.bids.as_slice().len(), 2);
        assert_eq!((summary.sequence, summary.received_ns), (2, 20));

        // A crossed venue book is excluded and reported.
        merger.apply(VenueId::Bitstamp, &feed(105, 104, 30));
        merger.summarize(3, &mut summary);
        assert_eq!(summary.venue_state(VenueId::Bitstamp), VenueState::Crossed);
        assert!(
            summary
                .book
                .bids
                .as_slice()
                .iter()
                .all(|l| l.venue == VenueId::Binance)
        );

        // A decode failure excludes the venue, keeping nothing of its old book.
        merger.apply(
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
        merger.apply(VenueId::Bitstamp, &feed(99, 102, 20));
        let mut bids_only = feed(105, 106, 30);
        bids_only.book.asks = Default::default();
        merger.apply(VenueId::Binance, &bids_only);
        merger.summarize(1, &mut summary);
        assert_eq!(summary.venue_state(VenueId::Binance), VenueState::OneSided);
        let venues = |levels: &[MergedLevel]| levels.iter().map(|l| l.venue).collect::<Vec<_>>();
        assert_eq!(venues(summary.book.bids.as_slice()), [VenueId::Bitstamp]);
        assert!(summary.book.spread.is_some_and(|spread| !spread.negative));

        // Left out of the merge, it still ages: an old one-sided book is shown stale.
        assert_eq!(
            merger.evict_stale(25).collect::<Vec<_>>(),
            [VenueId::Bitstamp]
        );
        assert_eq!(
            merger.evict_stale(31).collect::<Vec<_>>(),
            [VenueId::Binance]
        );
        merger.summarize(2, &mut summary);
        assert_eq!(summary.venue_state(VenueId::Binance), VenueState::Stale);
        merger.apply(VenueId::Bitstamp, &feed(99, 102, 20));

        merger.allow_one_sided(VenueId::Binance);
        merger.apply(VenueId::Binance, &bids_only);
        merger.summarize(2, &mut summary);
        assert_eq!(summary.venue_state(VenueId::Binance), VenueState::OneSided);
        assert_eq!(
            venues(summary.book.bids.as_slice()),
            [VenueId::Binance, VenueId::Bitstamp],
            "allowed: merged, and still shown one-sided"
        );
        assert_eq!(merger.evict_stale(40).count(), 2, "and evicted when stale");

        let mut empty = feed(1, 2, 50);
        empty.book.bids = Default::default();
        empty.book.asks = Default::default();
        merger.apply(VenueId::Bitstamp, &empty);
        merger.summarize(3, &mut summary);
        assert_eq!(summary.venue_state(VenueId::Bitstamp), VenueState::OneSided);
    }

    #[test]
    fn old_books_are_evicted_as_stale() {
        let mut merger = Consolidation::new(0, 10, VenueId::ALL);
        merger.apply(VenueId::Binance, &feed(100, 101, 10));
        merger.apply(VenueId::Bitstamp, &feed(99, 102, 50));
        assert!(!merger.any_stale(10), "none older than 10");
        assert!(merger.any_stale(20));
        assert_eq!(
            merger.evict_stale(20).collect::<Vec<_>>(),
            [VenueId::Binance]
        );
        assert!(!merger.any_stale(20), "evicted: no longer merged");
        assert_eq!(
            merger.evict_stale(20).count(),
            0,
            "evicting again changes nothing"
        );
        let mut summary = Summary::default();
        merger.summarize(60, &mut summary);
        assert_eq!(summary.venue_state(VenueId::Binance), VenueState::Stale);
        assert_eq!(summary.book.bids.as_slice()[0].venue, VenueId::Bitstamp);
        assert_eq!(summary.book.bids.as_slice().len(), 1);
    }
}
