//! Keeping one full-depth book in sync with a venue's diff stream and REST snapshots
//! (`mode = "diff"`). Pure: events and snapshots in, outcomes out; no I/O and no clock, so
//! the live reader (`feed.rs`) and `mergebook replay` run exactly these rules.
//!
//! The algorithm is the venues' own (PROTOCOLS.md): buffer events while the snapshot is
//! fetched; the snapshot replaces the book; buffered events it already contains are
//! dropped and the rest applied; live events follow. What may go wrong, and what happens:
//!
//! | what | seen as | then |
//! |---|---|---|
//! | an event lost (Binance `U > last u + 1`) | [`UpdateOutcome::Gap`] | book discarded, rebuilt from this event on |
//! | a duplicate or late event (`u <= last u`; Bitstamp: stamped at or before the snapshot, or equal to the last) | [`UpdateOutcome::Stale`] | dropped |
//! | Bitstamp: an event stamped before the last applied one (out of order: applying it late or dropping it both corrupt) | [`UpdateOutcome::Gap`] | book discarded, rebuilt |
//!
//! What cannot be seen: Bitstamp's events carry no sequence, so a lost event goes
//! unnoticed, and of two swapped events the later one is applied before the earlier
//! arrives (the book published in between lacks the earlier one) — the venue's protocol
//! allows no better (PROTOCOLS.md: resync periodically, on a crossing, on reconnect).
//! | a snapshot older than the first buffered event | [`SnapshotOutcome::TooOld`] | buffer kept, snapshot asked for again |
//! | the book crosses after an event | [`UpdateOutcome::Crossed`] | book discarded, rebuilt |
//! | too many events buffered | oldest dropped | the next snapshot will be too old, and asked again |
//!
//! A decode error or a reconnect is the reader's to see: it calls [`BookSync::reset`].
//! Between a reset (or gap) and the next [`SnapshotOutcome::Synced`], [`BookSync::is_synced`]
//! is false and the reader publishes the venue as out of sync: a book with a hole in it is
//! never published.

use crate::book::{BookUpdate, DepthBook};
use std::collections::VecDeque;

/// How a venue's diff events are identified.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SequenceRule {
    /// Binance: an event covers update ids `U..=u` and the next starts at `u + 1`. A
    /// snapshot at `lastUpdateId` is followed by the events with `u > lastUpdateId`, the
    /// first of which must cover `lastUpdateId + 1`.
    IdRanges,
    /// Bitstamp: an event has only its microsecond timestamp; a snapshot is followed by the
    /// events stamped after it (the recording has one stamped equal to the snapshot and
    /// contained in it). Lost events cannot be seen: the book is rebuilt after every
    /// reconnect, decode error and crossing, and when events arrive out of order.
    Timestamps,
}

/// What an event did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateOutcome {
    /// Applied to the synced book: its top is ready to publish.
    Applied,
    /// Held until a snapshot arrives. `first`: it starts the buffer, so a snapshot should
    /// be asked for now (the venues' algorithm asks once the first event is in hand).
    Buffered { first: bool },
    /// Already contained in the book or the buffer (old, duplicate, or out of order).
    Stale,
    /// An event is missing before this one: the book was discarded; this event starts a
    /// new buffer.
    Gap,
    /// Applying it crossed the book: discarded; rebuilding from the next event.
    Crossed,
}

/// What a snapshot did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SnapshotOutcome {
    /// The book is the snapshot plus the buffered events after it: publish its top.
    Synced { applied: usize, dropped: usize },
    /// Older than the first buffered event: it cannot be joined to the buffer. Ask again.
    TooOld,
    /// The book crossed once the buffer was applied: discarded; rebuilding.
    Crossed,
    /// No snapshot was awaited (the book is synced): ignored.
    Unexpected,
}

/// One (venue, instrument) book and its sync state.
pub struct BookSync {
    rule: SequenceRule,
    synced: bool,
    /// The id of the last event (or snapshot) in the book; while buffering, in the buffer.
    last_id: u64,
    /// The id of the snapshot the book was built from.
    snapshot_id: u64,
    buffer: VecDeque<BookUpdate>,
    /// Emptied buffer entries, reused so a resync does not allocate per event.
    spare: Vec<BookUpdate>,
    max_buffered: usize,
    pub book: DepthBook,
    /// Events dropped as already contained (before or after the snapshot).
    pub stale_events: u64,
    /// Buffered events dropped because the buffer was full.
    pub overflowed_events: u64,
}

impl BookSync {
    /// `max_levels`: the book's depth a side; `max_buffered`: events held while a snapshot
    /// is fetched.
    pub fn new(rule: SequenceRule, max_levels: usize, max_buffered: usize) -> BookSync {
        BookSync {
            rule,
            synced: false,
            last_id: 0,
            snapshot_id: 0,
            buffer: VecDeque::new(),
            spare: Vec::new(),
            max_buffered: max_buffered.max(1),
            book: DepthBook::new(max_levels),
            stale_events: 0,
            overflowed_events: 0,
        }
    }

    pub fn is_synced(&self) -> bool {
        self.synced
    }

    /// The id of the last event or snapshot in the book.
    pub fn last_id(&self) -> u64 {
        self.last_id
    }

    /// Writes the synced book's top `depth` levels a side into `out`, stamped with the
    /// book's id and `received_ns`: what the merger is handed.
    pub fn write_top(&self, depth: usize, received_ns: u64, out: &mut crate::book::TopBook) {
        self.book.top(depth, out);
        out.venue_sequence = self.last_id;
        out.received_ns = received_ns;
    }

    pub fn buffered(&self) -> usize {
        self.buffer.len()
    }

    /// Discards the book and the buffer (a reconnect, a decode error): wait for events and
    /// a new snapshot.
    pub fn reset(&mut self) {
        self.synced = false;
        self.last_id = 0;
        self.snapshot_id = 0;
        self.book.clear();
        self.clear_buffer();
    }

    fn clear_buffer(&mut self) {
        self.spare.extend(self.buffer.drain(..));
    }

    fn push_buffer(&mut self, update: &BookUpdate) {
        if self.buffer.len() == self.max_buffered {
            let oldest = self.buffer.pop_front().expect("full");
            self.spare.push(oldest);
            self.overflowed_events += 1;
        }
        let mut entry = self.spare.pop().unwrap_or_default();
        entry.copy_from(update);
        self.buffer.push_back(entry);
        self.last_id = update.last_id;
    }

    /// Whether `update` is already contained in a book (or buffer) that ends at `last_id`.
    fn is_stale(&self, update: &BookUpdate) -> bool {
        match self.rule {
            SequenceRule::IdRanges => update.last_id <= self.last_id,
            // Contained in the snapshot, or a repeat of the last event.
            SequenceRule::Timestamps => {
                update.last_id <= self.snapshot_id || update.last_id == self.last_id
            }
        }
    }

    /// Whether the events do not join up between `last_id` and `update`: one is missing
    /// (ids), or `update` comes after a later one (timestamps).
    fn is_gap(&self, update: &BookUpdate) -> bool {
        match self.rule {
            SequenceRule::IdRanges => update.first_id > self.last_id.saturating_add(1),
            SequenceRule::Timestamps => update.last_id < self.last_id,
        }
    }

    /// Takes one decoded diff event.
    pub fn on_update(&mut self, update: &BookUpdate) -> UpdateOutcome {
        if !self.synced {
            let first = self.buffer.is_empty();
            if !first && self.is_stale(update) {
                self.stale_events += 1;
                return UpdateOutcome::Stale;
            }
            if !first && self.is_gap(update) {
                // The buffered chain is broken: only events from here on can be joined.
                self.clear_buffer();
                if self.rule == SequenceRule::Timestamps {
                    // Older than what was buffered: the next event starts the buffer, and
                    // the snapshot must not be older than that one.
                    self.stale_events += 1;
                    return UpdateOutcome::Stale;
                }
            }
            let first = self.buffer.is_empty();
            self.push_buffer(update);
            return UpdateOutcome::Buffered { first };
        }
        if self.is_stale(update) {
            self.stale_events += 1;
            return UpdateOutcome::Stale;
        }
        if self.is_gap(update) {
            self.reset();
            self.push_buffer(update);
            return UpdateOutcome::Gap;
        }
        self.book.apply(update);
        self.last_id = update.last_id;
        if self.book.is_crossed() {
            self.reset();
            return UpdateOutcome::Crossed;
        }
        UpdateOutcome::Applied
    }

    /// Takes a decoded REST snapshot (`last_id`: its `lastUpdateId` or microtimestamp).
    pub fn on_snapshot(&mut self, snapshot: &BookUpdate) -> SnapshotOutcome {
        if self.synced {
            return SnapshotOutcome::Unexpected;
        }
        let snapshot_id = snapshot.last_id;
        if let Some(first) = self.buffer.front() {
            let too_old = match self.rule {
                SequenceRule::IdRanges => first.first_id > snapshot_id.saturating_add(1),
                SequenceRule::Timestamps => first.first_id > snapshot_id,
            };
            if too_old {
                return SnapshotOutcome::TooOld;
            }
        }
        self.book.replace(snapshot);
        self.last_id = snapshot_id;
        self.snapshot_id = snapshot_id;
        self.synced = true;
        let (mut applied, mut dropped) = (0, 0);
        let buffer = std::mem::take(&mut self.buffer);
        for update in &buffer {
            if self.is_stale(update) {
                dropped += 1;
                continue;
            }
            // The buffer is a joined-up chain whose first event covers the snapshot's next
            // id (checked above), so no gap can appear here.
            debug_assert!(!self.is_gap(update));
            self.book.apply(update);
            self.last_id = update.last_id;
            applied += 1;
        }
        self.buffer = buffer;
        self.clear_buffer();
        self.stale_events += dropped as u64;
        if self.book.is_crossed() {
            self.reset();
            return SnapshotOutcome::Crossed;
        }
        SnapshotOutcome::Synced { applied, dropped }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::book::{Level, Side};
    use crate::fixed::FixedPoint;

    fn event(first_id: u64, last_id: u64, bid: u64, amount: u64) -> BookUpdate {
        BookUpdate {
            first_id,
            last_id,
            bids: vec![Level {
                price: FixedPoint::from_raw(bid),
                amount: FixedPoint::from_raw(amount),
            }],
            asks: Vec::new(),
        }
    }

    fn snapshot(id: u64) -> BookUpdate {
        BookUpdate {
            first_id: id,
            last_id: id,
            bids: Vec::new(),
            asks: vec![Level {
                price: FixedPoint::from_raw(1000),
                amount: FixedPoint::from_raw(1),
            }],
        }
    }

    #[test]
    fn id_ranges_follow_the_official_algorithm() {
        let mut sync = BookSync::new(SequenceRule::IdRanges, 100, 100);
        assert_eq!(
            sync.on_update(&event(8, 10, 1, 1)),
            UpdateOutcome::Buffered { first: true }
        );
        assert_eq!(
            sync.on_update(&event(11, 12, 2, 1)),
            UpdateOutcome::Buffered { first: false }
        );
        assert_eq!(sync.on_update(&event(11, 12, 2, 1)), UpdateOutcome::Stale);
        assert_eq!(sync.on_snapshot(&snapshot(6)), SnapshotOutcome::TooOld);
        assert!(!sync.is_synced());
        assert_eq!(
            sync.on_snapshot(&snapshot(10)),
            SnapshotOutcome::Synced {
                applied: 1,
                dropped: 1
            }
        );
        assert_eq!(sync.last_id(), 12);
        assert_eq!(sync.on_update(&event(13, 13, 3, 1)), UpdateOutcome::Applied);
        assert_eq!(sync.on_update(&event(12, 13, 3, 1)), UpdateOutcome::Stale);
        assert_eq!(sync.on_update(&event(15, 16, 4, 1)), UpdateOutcome::Gap);
        assert!(!sync.is_synced());
        assert!(sync.book.is_empty(), "a book with a hole is thrown away");
        assert_eq!(
            sync.buffered(),
            1,
            "the event after the gap starts the buffer"
        );
        assert_eq!(
            sync.on_snapshot(&snapshot(15)),
            SnapshotOutcome::Synced {
                applied: 1,
                dropped: 0
            }
        );
        assert_eq!(sync.on_snapshot(&snapshot(16)), SnapshotOutcome::Unexpected);
    }

    #[test]
    fn a_broken_buffer_restarts_at_the_event_after_the_hole() {
        let mut sync = BookSync::new(SequenceRule::IdRanges, 100, 100);
        sync.on_update(&event(1, 2, 1, 1));
        sync.on_update(&event(5, 6, 2, 1));
        assert_eq!(sync.buffered(), 1);
        assert_eq!(sync.on_snapshot(&snapshot(2)), SnapshotOutcome::TooOld);
        assert!(matches!(
            sync.on_snapshot(&snapshot(4)),
            SnapshotOutcome::Synced { applied: 1, .. }
        ));
    }

    #[test]
    fn timestamps_drop_what_the_snapshot_contains() {
        let mut sync = BookSync::new(SequenceRule::Timestamps, 100, 100);
        sync.on_update(&event(100, 100, 1, 1));
        sync.on_update(&event(200, 200, 2, 1));
        assert_eq!(sync.on_update(&event(200, 200, 2, 1)), UpdateOutcome::Stale);
        assert_eq!(sync.buffered(), 2);
        let mut reordered = BookSync::new(SequenceRule::Timestamps, 100, 100);
        reordered.on_update(&event(200, 200, 2, 1));
        reordered.on_update(&event(100, 100, 1, 1));
        assert_eq!(reordered.buffered(), 0, "out of order: start again");
        assert_eq!(sync.on_snapshot(&snapshot(99)), SnapshotOutcome::TooOld);
        assert_eq!(
            sync.on_snapshot(&snapshot(100)),
            SnapshotOutcome::Synced {
                applied: 1,
                dropped: 1
            }
        );
        assert_eq!(sync.on_update(&event(200, 200, 3, 1)), UpdateOutcome::Stale);
        assert_eq!(
            sync.on_update(&event(900, 900, 3, 1)),
            UpdateOutcome::Applied,
            "timestamps cannot show lost events"
        );
        assert_eq!(
            sync.on_update(&event(800, 800, 3, 1)),
            UpdateOutcome::Gap,
            "an event older than the last applied arrived out of order"
        );
    }

    #[test]
    fn a_crossing_event_discards_the_book() {
        let mut sync = BookSync::new(SequenceRule::IdRanges, 100, 100);
        sync.on_update(&event(1, 1, 1, 1));
        sync.on_snapshot(&snapshot(0));
        assert_eq!(sync.book.best(Side::Bid).unwrap().price.raw(), 1);
        assert_eq!(
            sync.on_update(&event(2, 2, 1000, 1)),
            UpdateOutcome::Crossed
        );
        assert!(!sync.is_synced() && sync.book.is_empty());
    }

    #[test]
    fn a_full_buffer_drops_its_oldest_event() {
        let mut sync = BookSync::new(SequenceRule::IdRanges, 100, 2);
        for id in 1..=3 {
            sync.on_update(&event(id, id, id, 1));
        }
        assert_eq!((sync.buffered(), sync.overflowed_events), (2, 1));
        assert_eq!(sync.on_snapshot(&snapshot(0)), SnapshotOutcome::TooOld);
    }
}
