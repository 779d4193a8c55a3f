//! What a reader hands the merger: per (venue, instrument), the latest book and the feed's
//! state ([`VenueFeed`]), through a single-slot mailbox whose reader end is the merger's
//! and whose writer end is a [`FeedSender`].

use crate::book::full_depth::FullDepth;
use crate::book::{TopBook, field_bytes};
use crate::mailbox::Sender;
use crate::merger::summary::VenueState;
use std::mem::offset_of;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::Notify;

/// What a reader hands the merger for one (venue, instrument): the latest book and the
/// state of the feed. Latest value wins, so a state change and a book travel together.
#[derive(Debug, Default)]
pub struct VenueFeed {
    pub state: VenueState,
    /// Meaningful when `state` is `Synced` (it carries its own receive time).
    pub book: TopBook,
    /// The whole book `book` is the top of, where the reader keeps one and hands it over
    /// (diff mode, `service.full_depth`): what quotes walk. Off the merge's path: the
    /// merger reads it only to answer a quote.
    pub full_depth: FullDepth,
}

impl Clone for VenueFeed {
    fn clone(&self) -> Self {
        VenueFeed {
            state: self.state,
            book: self.book,
            full_depth: self.full_depth.clone(),
        }
    }

    /// Reuses the full-depth copy's room.
    fn clone_from(&mut self, source: &Self) {
        self.state = source.state;
        self.book = source.book;
        self.full_depth.clone_from(&source.full_depth);
    }
}

/// Feeds compare by state and top book: the full-depth copy follows the top.
impl PartialEq for VenueFeed {
    fn eq(&self, other: &Self) -> bool {
        self.state == other.state && self.book == other.book
    }
}

impl VenueFeed {
    /// The bytes the merger reads of a feed keeping `depth` levels, from the feed's start:
    /// the state, and the book's parts (`TopBook::bytes_read`).
    pub fn bytes_read(depth: usize) -> [Range<usize>; 8] {
        let mut bytes: [Range<usize>; 8] = Default::default();
        bytes[0] = field_bytes::<VenueState>(offset_of!(Self, state));
        bytes[1..].clone_from_slice(&TopBook::bytes_read(offset_of!(Self, book), depth));
        bytes
    }
}

/// Which instruments have something new in a mailbox: a bit per instrument, which a
/// reader sets after each publish and the merger clears before it takes that
/// instrument's mailboxes. The merger visits only the instruments marked, so its cost per
/// change does not grow with the books that did not change.
///
/// The mark is an atomic OR (`Release`) and the merger's clear a swap (`Acquire`): an
/// RMW reads the latest value, so a clear that removes a mark synchronises with it, and
/// the take after the clear sees the publish before the mark. (A plain load to skip a mark
/// already set would not: the publish could still sit in the reader's store buffer when
/// the merger clears the bit and takes.)
pub struct ReadySet {
    words: Box<[AtomicU64]>,
}

impl ReadySet {
    pub fn new(instruments: usize) -> Arc<ReadySet> {
        Arc::new(ReadySet {
            words: (0..instruments.div_ceil(64))
                .map(|_| AtomicU64::new(0))
                .collect(),
        })
    }

    /// The mark of `instrument`, for its readers' senders.
    pub fn mark_of(self: &Arc<Self>, instrument: usize) -> ReadyMark {
        ReadyMark {
            set: Arc::clone(self),
            word: instrument / 64,
            bit: 1 << (instrument % 64),
        }
    }

    /// Calls `visit` with every instrument marked since the last call, clearing the marks
    /// first.
    #[inline]
    pub fn take_each(&self, mut visit: impl FnMut(usize)) {
        for (index, word) in self.words.iter().enumerate() {
            // Nothing marked: no RMW on a line the readers write.
            if word.load(Ordering::Relaxed) == 0 {
                continue;
            }
            let mut marked = word.swap(0, Ordering::Acquire);
            while marked != 0 {
                visit(index * 64 + marked.trailing_zeros() as usize);
                marked &= marked - 1;
            }
        }
    }
}

/// One instrument's bit in the `ReadySet`.
pub struct ReadyMark {
    set: Arc<ReadySet>,
    word: usize,
    bit: u64,
}

impl ReadyMark {
    #[inline]
    pub fn mark(&self) {
        self.set.words[self.word].fetch_or(self.bit, Ordering::Release);
    }
}

/// What a reader does beyond the publish to have its book merged and sent on.
pub enum Handoff {
    /// The merger takes each book as it comes (`merger.idle` `spin`, `park`…): the
    /// instrument's fan-out is woken early (its `SummaryFanout::early_wake`), and the
    /// next slot is taken back.
    Immediate { fanout_wake: Arc<Notify> },
    /// The merger takes books in batches (`batch`), or there is none (`mergebook record`):
    /// the summary comes up to a period later, and the fan-out would wake for nothing; at
    /// the thousands of books batching is for, the next slot's lines would be evicted
    /// long before the next book, and taking them back only reads them from memory.
    Batched,
}

/// A reader's end of one mailbox to the merger. It counts the books the merger never
/// took: a publish that replaced an unread value which was a book (state changes, such
/// as `Connecting`, that are replaced unread are not books lost to latest-value).
///
/// A publish also wakes the instrument's fan-out task (`publish::SummaryFanout`) at once,
/// before the merger has merged: waking a sleeping tokio worker is a system call and, when
/// its CPU sleeps, tens of microseconds on a VM (`mergebook-tools` example `wake_cost`
/// measures it). Woken here, the worker comes up while the merger merges, the merger finds the
/// fan-out already woken and publishes with atomic stores alone, and the system call is
/// paid by the reader once its book is on its way.
///
/// Unless the publish replaced a value the merger had not taken: then the merger is behind,
/// the summary this value goes into is not the next one, and the fan-out was woken for the
/// value replaced (or is busy). Waking it on every publish regardless costs a system call
/// whenever the fan-out had just gone back to sleep (docs/decisions.md, "Readers wake the
/// fan-out early").
///
/// Not under the merger's `batch` strategy ([`Handoff::Batched`]).
pub struct FeedSender {
    sender: Sender<VenueFeed>,
    ready: ReadyMark,
    handoff: Handoff,
    holds_unread_book: bool,
    superseded_books: u64,
}

impl FeedSender {
    /// `ready`: the instrument's mark.
    pub fn new(sender: Sender<VenueFeed>, ready: ReadyMark, handoff: Handoff) -> FeedSender {
        FeedSender {
            sender,
            ready,
            handoff,
            holds_unread_book: false,
            superseded_books: 0,
        }
    }

    /// Lets `write` fill the next value in place, publishes it, marks its instrument
    /// ready, unparks the merger (asleep under the `park` idle strategy), then wakes the fan-out unless the value replaced
    /// was still unread: in that order, so that the fan-out's system call never delays
    /// the merger. Last, after a book, it takes back the lines of the slot the next book
    /// goes into (`mailbox::Sender::prepare`): that moved 0.2–0.3 µs a book out of the
    /// in-process latency (docs/decisions.md, "Readers take back their next mailbox slot").
    #[inline]
    pub fn publish_with(
        &mut self,
        merger: &std::thread::Thread,
        write: impl FnOnce(&mut VenueFeed),
    ) {
        let replaced_before = self.sender.superseded();
        let mut is_book = false;
        let mut levels = (0, 0);
        let _ = self.sender.publish_with(|feed| -> Result<(), ()> {
            write(feed);
            is_book = feed.state == VenueState::Synced;
            levels = (feed.book.bids.len(), feed.book.asks.len());
            Ok(())
        });
        let replaced_unread = self.sender.superseded() > replaced_before;
        if replaced_unread && self.holds_unread_book {
            self.superseded_books += 1;
        }
        self.holds_unread_book = is_book;
        self.ready.mark();
        merger.unpark();
        let Handoff::Immediate { fanout_wake } = &self.handoff else {
            return;
        };
        if !replaced_unread {
            fanout_wake.notify_one();
        }
        if is_book {
            self.sender
                .prepare(|next| next.book.clear_writing(levels.0, levels.1));
        }
    }

    /// Books replaced in the mailbox before the merger took them.
    pub fn superseded_books(&self) -> u64 {
        self.superseded_books
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Whether `wake` holds a wake-up: `notified()` completes on its first poll.
    async fn woken(wake: &Notify) -> bool {
        tokio::time::timeout(Duration::ZERO, wake.notified())
            .await
            .is_ok()
    }

    #[tokio::test]
    async fn a_publish_wakes_the_fanout_before_any_summary_unless_the_merger_is_behind() {
        let (sender, mut merger_end) = crate::mailbox::mailbox(VenueFeed::default());
        let fanout_wake = Arc::new(Notify::new());
        let ready = ReadySet::new(1);
        let mut feed = FeedSender::new(
            sender,
            ready.mark_of(0),
            Handoff::Immediate {
                fanout_wake: Arc::clone(&fanout_wake),
            },
        );
        let merger = std::thread::current();
        assert!(!woken(&fanout_wake).await);
        feed.publish_with(&merger, |feed| feed.state = VenueState::Synced);
        assert!(woken(&fanout_wake).await);
        assert!(!woken(&fanout_wake).await, "one publish, one wake-up");
        // The merger has not taken the first book: the second replaces it, no wake.
        feed.publish_with(&merger, |feed| feed.state = VenueState::Synced);
        assert!(!woken(&fanout_wake).await);
        assert!(merger_end.take());
        feed.publish_with(&merger, |feed| feed.state = VenueState::OutOfSync);
        assert!(woken(&fanout_wake).await, "a state change is news too");
    }

    #[test]
    fn the_ready_set_yields_each_instrument_marked_once_then_none() {
        let ready = ReadySet::new(200);
        for instrument in [0, 63, 64, 199, 64] {
            ready.mark_of(instrument).mark();
        }
        let mut visited = Vec::new();
        ready.take_each(|instrument| visited.push(instrument));
        assert_eq!(visited, [0, 63, 64, 199]);
        ready.take_each(|instrument| panic!("{instrument} marked twice"));
    }
}
