//! Consolidation of one instrument: each venue's latest book and state, and the rules for
//! which venues enter the merge. Pure (no threads, no clock: times are passed in), so the
//! live merger thread and `mergebook replay` run exactly the same logic.
//!
//! The rule that keeps the merged book honest: only a venue in state `Synced` is merged.
//! A venue whose own book is crossed, whose feed failed to decode or lost sync, or whose
//! book is older than the stale age is shown with that state and left out, so a partial
//! or stale book is never presented as live.

use crate::book::TopBook;
use crate::merge::{VenueBook, merge};
use crate::summary::{Summary, VenueState};
use crate::venue::{MAX_VENUES, VenueId};

/// What a reader hands the merger for one (venue, instrument): the latest book and the
/// state of the feed. Latest value wins, so a state change and a book travel together.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct VenueFeed {
    pub state: VenueState,
    /// Meaningful when `state` is `Synced` (it carries its own receive time).
    pub book: TopBook,
}

#[derive(Clone, Copy, Default)]
struct VenueSlot {
    state: VenueState,
    book: TopBook,
}

/// One instrument's venues and its next summary number.
pub struct InstrumentMerger {
    instrument: usize,
    depth: usize,
    venues: [VenueSlot; MAX_VENUES],
    sequence: u64,
    /// Receive time of the newest book applied since the last summary: the start of the
    /// latency the next summary reports.
    latest_received_ns: u64,
}

impl InstrumentMerger {
    /// `venues` are the venues configured for this instrument; they start `Connecting`.
    pub fn new(instrument: usize, depth: usize, venues: &[VenueId]) -> Self {
        let mut slots = [VenueSlot::default(); MAX_VENUES];
        for venue in venues {
            slots[venue.index()].state = VenueState::Connecting;
        }
        InstrumentMerger {
            instrument,
            depth,
            venues: slots,
            sequence: 0,
            latest_received_ns: 0,
        }
    }

    /// Applies what a venue's reader published. A `Synced` book whose own best bid is not
    /// below its best ask is held as `Crossed` (excluded).
    pub fn apply(&mut self, venue: VenueId, feed: &VenueFeed) {
        let slot = &mut self.venues[venue.index()];
        slot.state = match feed.state {
            VenueState::Synced if feed.book.is_crossed() => VenueState::Crossed,
            state => state,
        };
        if feed.state == VenueState::Synced {
            slot.book.copy_from(&feed.book);
            self.latest_received_ns = self.latest_received_ns.max(feed.book.received_ns);
        }
    }

    /// Marks `Stale` every synced venue whose book was received before `oldest_ns`.
    /// Returns true when a venue was evicted (the merged book changed).
    pub fn evict_stale(&mut self, oldest_ns: u64) -> bool {
        let mut evicted = false;
        for slot in &mut self.venues {
            if slot.state == VenueState::Synced && slot.book.received_ns < oldest_ns {
                slot.state = VenueState::Stale;
                evicted = true;
            }
        }
        evicted
    }

    pub fn state(&self, venue: VenueId) -> VenueState {
        self.venues[venue.index()].state
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
            if slot.state == VenueState::Synced {
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
        for (state, slot) in out.venues.iter_mut().zip(&self.venues) {
            *state = slot.state;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::book::Level;
    use crate::fixed::FixedPoint;

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

    #[test]
    fn only_synced_venues_are_merged() {
        let mut merger = InstrumentMerger::new(0, 10, VenueId::ALL);
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

    #[test]
    fn old_books_are_evicted_as_stale() {
        let mut merger = InstrumentMerger::new(0, 10, VenueId::ALL);
        merger.apply(VenueId::Binance, &feed(100, 101, 10));
        merger.apply(VenueId::Bitstamp, &feed(99, 102, 50));
        assert!(merger.evict_stale(20));
        assert!(!merger.evict_stale(20), "evicting again changes nothing");
        let mut summary = Summary::default();
        merger.summarize(60, &mut summary);
        assert_eq!(summary.venue_state(VenueId::Binance), VenueState::Stale);
        assert_eq!(summary.book.bids.as_slice()[0].venue, VenueId::Bitstamp);
        assert_eq!(summary.book.bids.as_slice().len(), 1);
    }
}
