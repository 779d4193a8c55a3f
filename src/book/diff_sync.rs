//! Keeping one full-depth book in sync with a venue's diff stream and its snapshots
//! (`mode = "diff"`). Pure: events and snapshots in, outcomes out; no I/O and no clock, so
//! the live reader and `mergebook replay` run exactly these rules (through `feed::core`).
//!
//! The algorithm is the venues' own (docs/protocols.md): buffer events while the snapshot is
//! fetched; the snapshot replaces the book; buffered events it already contains are
//! dropped and the rest applied; live events follow. How a stream is sequenced — what is
//! contained, what is a gap, what joins — is the venue's ([`Sequencing`], in
//! `venue/<name>/sequence.rs`, with what its ids cannot show). What may go wrong, and what happens:
//!
//! | what | seen as | then |
//! |---|---|---|
//! | an event lost, or one out of order | [`UpdateOutcome::Gap`] | book discarded, rebuilt |
//! | a duplicate or late event | [`UpdateOutcome::Stale`] | dropped |
//! | a snapshot older than the first buffered event | [`SnapshotOutcome::TooOld`] | buffer kept, snapshot asked for again |
//! | the book crosses after an event | [`UpdateOutcome::Crossed`] | book discarded, rebuilt |
//! | too many events buffered | oldest dropped | the next snapshot will be too old, and asked again |
//!
//! A decode error or a reconnect is the reader's to see: it calls [`BookSync::reset`].
//! Between a reset (or gap) and the next [`SnapshotOutcome::Synced`], [`BookSync::is_synced`]
//! is false and the reader publishes the venue as out of sync: a book with a hole in it is
//! never published.

use crate::book::{BookUpdate, DepthBook, Side};
use std::collections::VecDeque;

/// How a venue's diff stream is sequenced: when an event is already in the book, when one
/// is missing, and whether a snapshot joins the buffered events. Each venue implements it
/// in its own module (`VenueFacts::sequencing`); [`BookSync`] keeps the buffering and joining
/// they all share. Ids are the venue's: an event covers `first_id..=last_id`, a snapshot
/// is at its `last_id`.
pub trait Sequencing: Sync {
    /// Whether `update` is already contained in a book whose last event is `last_id` and
    /// that was built from the snapshot at `snapshot_id` (old, duplicate): dropped.
    fn is_contained(&self, update: &BookUpdate, last_id: u64, snapshot_id: u64) -> bool;

    /// Whether the events do not join up between the book's `last_id` and `update`: one
    /// is missing, or `update` comes after a later one. `snapshot_id` is the id of the
    /// snapshot the book was built from: `last_id` itself while no event followed it.
    fn is_gap(&self, update: &BookUpdate, last_id: u64, snapshot_id: u64) -> bool;

    /// Whether a snapshot at `snapshot_id` can be followed by `first`, the oldest buffered
    /// event; if not, the snapshot is too old and is asked for again.
    fn joins(&self, snapshot_id: u64, first: &BookUpdate) -> bool;

    /// While buffering, whether the event that broke the chain starts the new buffer
    /// (true), or is dropped and the next event starts it (false: the event is older than
    /// what was buffered).
    fn gap_event_starts_buffer(&self) -> bool;
}

/// A stream without sequence numbers (Kraken, Coinbase): no event is contained in
/// another, none is missing by its ids, every snapshot joins. What such a venue can check
/// it checks otherwise (Kraken's checksum, Coinbase Advanced Trade's numbered messages);
/// a message's time is its id, for the book's `venue_sequence` only. Its snapshots come on
/// the stream, which discards what was buffered before them.
pub struct Unsequenced;

impl Sequencing for Unsequenced {
    fn is_contained(&self, _update: &BookUpdate, _last_id: u64, _snapshot_id: u64) -> bool {
        false
    }

    fn is_gap(&self, _update: &BookUpdate, _last_id: u64, _snapshot_id: u64) -> bool {
        false
    }

    fn joins(&self, _snapshot_id: u64, _first: &BookUpdate) -> bool {
        true
    }

    fn gap_event_starts_buffer(&self) -> bool {
        true
    }
}

/// Why an instrument's diff book is being rebuilt (the `reason` label of
/// `orderbook_resyncs_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResyncReason {
    Connect,
    Gap,
    Crossed,
    DecodeError,
    /// The book disagreed with the venue's checksum.
    Checksum,
    /// Its stream was silent for the read-idle allowance and subscribed again: events may
    /// have been lost that nothing on some venues' streams would show.
    Silence,
    /// The venue's REST snapshot disagreed with the book where no event could have changed
    /// it since (`feed/core/audit.rs`): an event was lost that its stream could not show.
    Audit,
    /// The book built from a snapshot that held only the venue's top levels holds fewer
    /// than the published depth of levels it knows on a side
    /// ([`BookSync::proves`]): what lies beyond is unknown, and a new snapshot is asked for.
    Unproven,
}

impl ResyncReason {
    pub const ALL: [ResyncReason; 8] = [
        ResyncReason::Connect,
        ResyncReason::Gap,
        ResyncReason::Crossed,
        ResyncReason::DecodeError,
        ResyncReason::Checksum,
        ResyncReason::Silence,
        ResyncReason::Audit,
        ResyncReason::Unproven,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ResyncReason::Connect => "connect",
            ResyncReason::Gap => "gap",
            ResyncReason::Crossed => "crossed",
            ResyncReason::DecodeError => "decode_error",
            ResyncReason::Checksum => "checksum",
            ResyncReason::Silence => "silence",
            ResyncReason::Audit => "audit",
            ResyncReason::Unproven => "unproven_depth",
        }
    }
}

/// What an event did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpdateOutcome {
    /// Applied to the synced book: its top is ready to publish.
    Applied,
    /// Held until a snapshot arrives. `first`: it starts the buffer, so a snapshot should
    /// be asked for now (the venues' algorithm asks once the first event is in hand; the
    /// core also asks for a quiet book's, which never sends one).
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
    rule: &'static dyn Sequencing,
    synced: bool,
    /// The id of the last event (or snapshot) in the book; while buffering, in the buffer.
    last_id: u64,
    /// The id of the snapshot the book was built from.
    snapshot_id: u64,
    /// The venue's time of the last event or snapshot in the book (0: it carried none).
    exchange_time_ns: u64,
    buffer: VecDeque<BookUpdate>,
    /// Emptied buffer entries, reused so a resync does not allocate per event.
    spare: Vec<BookUpdate>,
    max_buffered: usize,
    pub book: DepthBook,
    /// Events dropped as already contained (before or after the snapshot).
    pub stale_events: u64,
    /// Buffered events dropped because the buffer was full.
    pub overflowed_events: u64,
    /// The levels a side a snapshot holds where it may hold less than the whole book
    /// ([`BookSync::with_partial_snapshots`]).
    snapshot_cap: Option<usize>,
    /// Where the last snapshot's sides ended, bids then asks, where a side was cut at
    /// `snapshot_cap`: the venue's levels beyond are unknown until they change.
    known_to: [Option<crate::fixed::FixedPoint>; 2],
}

impl BookSync {
    /// `max_levels`: the book's depth a side; `max_buffered`: events held while a snapshot
    /// is fetched.
    pub fn new(rule: &'static dyn Sequencing, max_levels: usize, max_buffered: usize) -> BookSync {
        BookSync {
            rule,
            synced: false,
            last_id: 0,
            snapshot_id: 0,
            exchange_time_ns: 0,
            buffer: VecDeque::new(),
            spare: Vec::new(),
            max_buffered: max_buffered.max(1),
            book: DepthBook::new(max_levels),
            stale_events: 0,
            overflowed_events: 0,
            snapshot_cap: None,
            known_to: [None; 2],
        }
    }

    /// A book that journals its changes, where `full_depth`, so that its whole book can
    /// be handed over beside its top (`BookSync::write_full_depth`).
    pub fn with_full_depth(mut self, full_depth: bool) -> BookSync {
        if full_depth {
            self.book = std::mem::take(&mut self.book).with_journal();
        }
        self
    }

    /// A book whose snapshots hold at most `levels` a side, which may be less than the
    /// venue's whole book (KuCoin's public top 100): a side a snapshot filled is known
    /// only to its last level ([`BookSync::proves`]).
    pub fn with_partial_snapshots(mut self, levels: Option<usize>) -> BookSync {
        self.snapshot_cap = levels;
        self
    }

    /// Whether the book's top `depth` levels a side are all known: on a side its snapshot
    /// filled, `depth` levels at or better than the snapshot's last. A level beyond it
    /// that an event set is known, but the venue's levels between it and the snapshot's
    /// last are not.
    pub fn proves(&self, depth: usize) -> bool {
        let sides = [(Side::Bid, self.known_to[0]), (Side::Ask, self.known_to[1])];
        sides.into_iter().all(|(side, known_to)| {
            known_to.is_none_or(|bound| self.book.levels_at_or_better(side, bound) >= depth)
        })
    }

    pub fn is_synced(&self) -> bool {
        self.synced
    }

    /// The id of the last event or snapshot in the book.
    pub fn last_id(&self) -> u64 {
        self.last_id
    }

    /// Writes the synced book's top `depth` levels a side into `out`, stamped with the
    /// book's id, its venue time and `received_ns`: what the merger is handed.
    pub fn write_top(&self, depth: usize, received_ns: u64, out: &mut crate::book::TopBook) {
        self.book.top(depth, out);
        out.venue_sequence = self.last_id;
        out.received_ns = received_ns;
        out.exchange_time_ns = self.exchange_time_ns;
    }

    /// Brings `out` to the synced book whole, where it journals its changes (empty
    /// otherwise).
    pub fn write_full_depth(&self, out: &mut crate::book::full_depth::FullDepth) {
        out.update_from(&self.book);
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
        self.exchange_time_ns = 0;
        self.known_to = [None; 2];
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

    fn is_stale(&self, update: &BookUpdate) -> bool {
        self.rule
            .is_contained(update, self.last_id, self.snapshot_id)
    }

    /// Applies an event: the book, its id and its venue time.
    fn apply(&mut self, update: &BookUpdate) {
        match update.change_ids.is_empty() {
            true => self.book.apply(update),
            false => self.book.apply_changes_after(update, self.last_id),
        }
        self.last_id = update.last_id;
        self.exchange_time_ns = update.exchange_time_ns;
    }

    fn is_gap(&self, update: &BookUpdate) -> bool {
        self.rule.is_gap(update, self.last_id, self.snapshot_id)
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
                if !self.rule.gap_event_starts_buffer() {
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
        self.apply(update);
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
        if let Some(first) = self.buffer.front()
            && !self.rule.joins(snapshot_id, first)
        {
            return SnapshotOutcome::TooOld;
        }
        self.book.replace(snapshot);
        let cut = |levels: &[crate::book::Level]| {
            let cap = self.snapshot_cap?;
            (levels.len() >= cap).then(|| levels.last().map(|level| level.price))?
        };
        self.known_to = [cut(&snapshot.bids), cut(&snapshot.asks)];
        self.last_id = snapshot_id;
        self.snapshot_id = snapshot_id;
        self.exchange_time_ns = snapshot.exchange_time_ns;
        self.synced = true;
        let (mut applied, mut dropped) = (0, 0);
        let buffer = std::mem::take(&mut self.buffer);
        for update in &buffer {
            if self.is_stale(update) {
                dropped += 1;
                continue;
            }
            // The buffer is a joined-up chain whose first event covers the snapshot's next
            // id (checked above), so no gap can appear here. Checked all the same, in
            // every build: a rule that broke it must cost a snapshot, never a book with a
            // hole in it.
            if self.is_gap(update) {
                self.buffer = buffer;
                self.reset();
                return SnapshotOutcome::TooOld;
            }
            self.apply(update);
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

/// Events and snapshots for the sequencing tests (here and in the venue modules).
#[cfg(test)]
pub(crate) mod test_events {
    use crate::book::{BookUpdate, Level};
    use crate::fixed::FixedPoint;

    pub(crate) fn event(first_id: u64, last_id: u64, bid: u64, amount: u64) -> BookUpdate {
        BookUpdate {
            first_id,
            last_id,
            bids: vec![Level {
                price: FixedPoint::from_raw(bid),
                amount: FixedPoint::from_raw(amount),
            }],
            ..BookUpdate::default()
        }
    }

    pub(crate) fn snapshot(id: u64) -> BookUpdate {
        BookUpdate {
            first_id: id,
            last_id: id,
            asks: vec![Level {
                price: FixedPoint::from_raw(1000),
                amount: FixedPoint::from_raw(1),
            }],
            ..BookUpdate::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::test_events::{event, snapshot};
    use super::*;
    use crate::book::Side;

    /// Consecutive ids, for the rules every venue shares.
    struct Consecutive;

    impl Sequencing for Consecutive {
        fn is_contained(&self, update: &BookUpdate, last_id: u64, _: u64) -> bool {
            update.last_id <= last_id
        }
        fn is_gap(&self, update: &BookUpdate, last_id: u64, _: u64) -> bool {
            update.first_id > last_id + 1
        }
        fn joins(&self, snapshot_id: u64, first: &BookUpdate) -> bool {
            first.first_id <= snapshot_id + 1
        }
        fn gap_event_starts_buffer(&self) -> bool {
            true
        }
    }

    #[test]
    fn a_crossing_event_discards_the_book() {
        let mut sync = BookSync::new(&Consecutive, 100, 100);
        sync.on_update(&event(1, 1, 1, 1));
        sync.on_snapshot(&snapshot(0));
        assert_eq!(sync.book.best(Side::Bid).unwrap().price.raw(), 1);
        assert_eq!(
            sync.on_update(&event(2, 2, 1000, 1)),
            UpdateOutcome::Crossed
        );
        assert!(!sync.is_synced() && sync.book.is_empty());
    }

    /// A rule whose join test lets a snapshot through that the buffer does not follow:
    /// the gap is found as the buffer is applied, in release builds too, and the snapshot
    /// is refused rather than published with a hole.
    #[test]
    fn a_gap_between_snapshot_and_buffer_refuses_the_snapshot() {
        struct JoinsAnything;
        impl Sequencing for JoinsAnything {
            fn is_contained(&self, update: &BookUpdate, last_id: u64, at: u64) -> bool {
                Consecutive.is_contained(update, last_id, at)
            }
            fn is_gap(&self, update: &BookUpdate, last_id: u64, at: u64) -> bool {
                Consecutive.is_gap(update, last_id, at)
            }
            fn joins(&self, _: u64, _: &BookUpdate) -> bool {
                true
            }
            fn gap_event_starts_buffer(&self) -> bool {
                true
            }
        }
        let mut sync = BookSync::new(&JoinsAnything, 100, 100);
        sync.on_update(&event(100, 105, 1, 1));
        assert_eq!(sync.on_snapshot(&snapshot(50)), SnapshotOutcome::TooOld);
        assert!(!sync.is_synced() && sync.book.is_empty());
        assert_eq!(sync.buffered(), 0);
    }

    #[test]
    fn a_full_buffer_drops_its_oldest_event() {
        let mut sync = BookSync::new(&Consecutive, 100, 2);
        for id in 1..=3 {
            sync.on_update(&event(id, id, id, 1));
        }
        assert_eq!((sync.buffered(), sync.overflowed_events), (2, 1));
        assert_eq!(sync.on_snapshot(&snapshot(0)), SnapshotOutcome::TooOld);
    }

    fn level(price: u64, amount: u64) -> crate::book::Level {
        crate::book::Level {
            price: crate::fixed::FixedPoint::from_raw(price),
            amount: crate::fixed::FixedPoint::from_raw(amount),
        }
    }

    /// Of an event whose changes are numbered, those the book has (numbered at or before
    /// its last id) are skipped, and a price changed twice takes its later change,
    /// whatever the order they are written in.
    #[test]
    fn numbered_changes_apply_after_the_book_s_id_each_price_at_its_latest() {
        let mut sync = BookSync::new(&Consecutive, 100, 100);
        let mut start = snapshot(16);
        start.bids = vec![level(50, 1), level(40, 1)];
        assert!(matches!(
            sync.on_snapshot(&start),
            SnapshotOutcome::Synced { .. }
        ));
        let mut overlapping = event(15, 19, 50, 9);
        overlapping.change_ids.bids.push(16); // the book has it: skipped
        overlapping.bids.extend([level(45, 7), level(45, 3)]);
        overlapping.change_ids.bids.extend([19, 18]); // 45 at 7, its later change
        sync.book.apply_changes_after(&overlapping, sync.last_id());
        let bids: Vec<_> = sync.book.levels(Side::Bid).copied().collect();
        assert_eq!(bids, vec![level(50, 1), level(45, 7), level(40, 1)]);
    }

    /// A book whose snapshot filled a side proves its depth there only while it holds that
    /// many levels at or better than the snapshot's last; a side the snapshot did not fill
    /// is whole.
    #[test]
    fn a_partial_snapshot_proves_the_depth_it_still_covers() {
        let mut sync = BookSync::new(&Consecutive, 100, 100).with_partial_snapshots(Some(3));
        let mut start = snapshot(1);
        start.bids = vec![level(50, 1), level(40, 1), level(30, 1)];
        assert!(matches!(
            sync.on_snapshot(&start),
            SnapshotOutcome::Synced { .. }
        ));
        assert!(sync.proves(3));
        // A level below the snapshot's range is known, but what lies between is not.
        assert_eq!(sync.on_update(&event(2, 2, 20, 1)), UpdateOutcome::Applied);
        assert_eq!(sync.on_update(&event(3, 3, 50, 0)), UpdateOutcome::Applied);
        assert!(!sync.proves(3) && sync.proves(2));
        // A new best level is known; the asks, one level (a side the snapshot did not
        // fill), are the whole side and prove any depth.
        assert_eq!(sync.on_update(&event(4, 4, 60, 1)), UpdateOutcome::Applied);
        assert_eq!(sync.book.len(Side::Ask), 1);
        assert!(sync.proves(3));
    }
}
