//! Consolidation of one instrument: each venue's latest book and state, and the rules for
//! which venues enter the merge. Pure (no threads, no clock: times are passed in), so the
//! live merger thread and `mergebook replay` run exactly the same logic.
//!
//! The rule that keeps the merged book honest: only a venue in state `Synced` is merged.
//! A venue whose own book is crossed, whose feed failed to decode or lost sync, or whose
//! book is older than the stale age is shown with that state and left out, so a partial
//! or stale book is never presented as live.

use crate::book::TopBook;
use crate::handoff::{ReadySet, VenueFeed};
use crate::merge::{VenueBook, merge};
use crate::summary::{BestPrices, Summary, VenueState};
use crate::venue::{MAX_VENUES, VenueId};

#[derive(Clone, Copy, Default)]
struct VenueSlot {
    state: VenueState,
    book: TopBook,
}

impl VenueSlot {
    /// Whether this venue is in the merge with a book received before `oldest_ns`: what
    /// the stale age evicts.
    fn is_stale(&self, one_sided_allowed: bool, oldest_ns: u64) -> bool {
        is_merged(self.state, one_sided_allowed) && self.book.received_ns < oldest_ns
    }
}

/// One instrument's venues and its next summary number.
pub struct InstrumentMerger {
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
            one_sided_allowed: [false; MAX_VENUES],
            latest_received_ns: 0,
        }
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

    /// Whether a merged venue's book was received before `oldest_ns` (`evict_stale` would
    /// evict it).
    pub fn any_stale(&self, oldest_ns: u64) -> bool {
        self.venues
            .iter()
            .zip(self.one_sided_allowed)
            .any(|(slot, allowed)| slot.is_stale(allowed, oldest_ns))
    }

    /// Marks `Stale` every merged venue whose book was received before `oldest_ns`, and
    /// returns them (none: the merged book did not change).
    pub fn evict_stale(&mut self, oldest_ns: u64) -> impl Iterator<Item = VenueId> + use<> {
        let mut evicted = [false; MAX_VENUES];
        let slots = self.venues.iter_mut().zip(self.one_sided_allowed);
        for ((slot, allowed), evicted) in slots.zip(&mut evicted) {
            if slot.is_stale(allowed, oldest_ns) {
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

// ---- the merger thread ----

use crate::clock;
use crate::config::IdleStrategy;
use crate::mailbox::Receiver;
use crate::metrics::Metrics;
use crate::publish::SummaryPublisher;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// One instrument as the merger thread sees it.
pub struct MergerInstrument {
    pub merger: InstrumentMerger,
    /// Each venue's mailbox from its reader.
    pub inputs: Vec<(VenueId, Receiver<VenueFeed>)>,
    pub output: SummaryPublisher,
}

pub struct MergerSpec<O: PublishObserver = ()> {
    pub instruments: Vec<MergerInstrument>,
    /// The instruments whose readers published since the merger last looked (indexes
    /// into `instruments`).
    pub ready: Arc<ReadySet>,
    pub idle: IdleStrategy,
    /// Pin the thread to this CPU (validated against the process's affinity beforehand).
    pub core: Option<usize>,
    pub stale_after: Duration,
    /// The merger stores the monotonic time here every `STALE_CHECK_EVERY_NS` while it runs:
    /// the systemd watchdog is fed only while this moves (a stuck merger is a dead service).
    pub heartbeat_ns: Arc<AtomicU64>,
    /// Told of every publish: the load harness's accounting; the service's is `()`.
    pub observer: O,
}

/// What hears of each publish, with the frames in it and its times: the load harness
/// (`mergebook-tools loadtest`). The service's observer is `()`, for which the merger
/// reads no extra clock and makes no call: the code compiles away.
pub trait PublishObserver: Send + 'static {
    /// Whether `published` wants records (`false`: none is made).
    const OBSERVES: bool;

    /// Called on the merger thread after each publish: must not wait.
    fn published(&mut self, record: &PublishRecord);

    /// Called on the merger thread with each summary as it is written, before it is
    /// published: must not wait. For the tests that check every summary.
    fn written(&mut self, summary: &Summary) {
        let _ = summary;
    }
}

impl PublishObserver for () {
    const OBSERVES: bool = false;

    fn published(&mut self, _: &PublishRecord) {}
}

/// Which frames one publish contained, and when it happened. Monotonic ns
/// (`clock::monotonic_ns`), so that the harness can split the in-process time.
#[derive(Clone, Copy, Debug)]
pub struct PublishRecord {
    /// Index of the instrument in the configuration.
    pub instrument: usize,
    /// The start of the poll that took the new books (its clock read, before the take).
    pub polled_ns: u64,
    /// Read when the summary is written, before the publish slot's store and the wake.
    pub written_ns: u64,
    /// Read once the summary is in the publish slot and the fan-out has been woken.
    pub published_ns: u64,
    pub venue_sequence: [u64; MAX_VENUES],
    pub venue_received_ns: [u64; MAX_VENUES],
}

/// How often stale venues are looked for. Staleness is measured in seconds; checking
/// every millisecond keeps the scan of the venues' ages (and the metrics' flush) off most
/// polls. A merged book is at most this much older than the stale age when it is published.
pub const STALE_CHECK_EVERY_NS: u64 = 1_000_000;

/// Starts the merger thread; it takes the mailboxes of the instruments marked ready until
/// `stop` is set, and once more in the round that sees it. Readers unpark it after every
/// publish (the `park` strategy sleeps between them).
pub fn spawn<O: PublishObserver>(
    spec: MergerSpec<O>,
    metrics: Arc<Metrics>,
    stop: Arc<AtomicBool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    std::thread::Builder::new()
        .name("merger".into())
        .spawn(move || run(spec, &metrics, &stop))
}

fn run<O: PublishObserver>(mut spec: MergerSpec<O>, metrics: &Metrics, stop: &AtomicBool) {
    if let Some(core) = spec.core {
        if core_affinity::set_for_current(core_affinity::CoreId { id: core }) {
            tracing::info!(core, "merger pinned");
        } else {
            tracing::error!(core, "could not pin the merger thread; running unpinned");
        }
    }
    let stale_after_ns = spec.stale_after.as_nanos() as u64;
    let evictions: Vec<_> = VenueId::ALL
        .iter()
        .map(|venue| metrics.stale_evictions.with_label_values(&[venue.name()]))
        .collect();
    // What each instrument's merge reads of a feed, fetched while the feed is taken.
    let bytes_read: Vec<_> = spec
        .instruments
        .iter()
        .map(|instrument| VenueFeed::bytes_read(instrument.merger.depth))
        .collect();
    let mut idler = Idler::new(spec.idle);
    let ready = Arc::clone(&spec.ready);
    let mut next_stale_check = 0;
    // Thread-local recording, flushed with the stale check's clock (see metrics.rs).
    let e2e_seconds = metrics.e2e_seconds.local();
    let merges = metrics.merges.local();
    let mut next_flush = 0;
    loop {
        // The service stops the readers before the merger: the round that sees the stop
        // still takes what they handed over after the last one, so that the last
        // summaries hold every book the readers received (what a recording of the run
        // replays to).
        let stopping = stop.load(Ordering::Relaxed);
        let mut worked = false;
        let now = clock::monotonic_ns();
        let check_stale = now >= next_stale_check;
        if check_stale {
            next_stale_check = now + STALE_CHECK_EVERY_NS;
            spec.heartbeat_ns.store(now, Ordering::Relaxed);
            if now >= next_flush {
                next_flush = now + crate::metrics::FLUSH_EVERY.as_nanos() as u64;
                e2e_seconds.flush();
                merges.flush();
            }
        }
        let observer = &mut spec.observer;
        let oldest_ns = now.saturating_sub(stale_after_ns);
        // One instrument: its new books taken, and in the ages pass its stale venues
        // evicted; a summary published if that changed it. The ages pass takes only the
        // mailboxes of an instrument with a venue to evict, first: a newer book waiting
        // there spares its venue.
        let mut serve = |instrument: &mut MergerInstrument, bytes_read: &[_], pass: Pass| {
            let (mut new_book, mut evicted) = (false, false);
            if pass == Pass::Ages && !instrument.merger.any_stale(oldest_ns) {
                return false;
            }
            for (venue, input) in &mut instrument.inputs {
                if input.take_prefetching(bytes_read) {
                    instrument.merger.apply(*venue, input.latest());
                    new_book = true;
                }
            }
            if pass == Pass::Ages {
                for venue in instrument.merger.evict_stale(oldest_ns) {
                    tracing::warn!(%venue, "book older than the stale age: evicted");
                    evictions[venue.index()].inc();
                    evicted = true;
                }
            }
            if !(new_book || evicted) {
                return false;
            }
            let merger = &mut instrument.merger;
            let mut received_ns = 0;
            let mut record = None;
            instrument.output.publish_with(|summary| {
                merger.summarize(clock::unix_ns(), summary);
                summary.published_monotonic_ns = now;
                received_ns = summary.received_ns;
                if O::OBSERVES {
                    observer.written(summary);
                    record = Some(PublishRecord {
                        instrument: summary.instrument,
                        polled_ns: now,
                        written_ns: clock::monotonic_ns(),
                        published_ns: 0,
                        venue_sequence: summary.venue_sequence,
                        venue_received_ns: summary.venue_received_ns,
                    });
                }
            });
            let published_ns = clock::monotonic_ns();
            merges.inc();
            if new_book {
                e2e_seconds.observe(published_ns.saturating_sub(received_ns) as f64 * 1e-9);
            }
            if let Some(mut record) = record {
                record.published_ns = published_ns;
                observer.published(&record);
            }
            instrument
                .output
                .take_back_next_slot(instrument.merger.depth);
            true
        };
        let instruments = &mut spec.instruments;
        // Every instrument's ages, every `STALE_CHECK_EVERY_NS`: the one pass over them all,
        // on the merger's own copies, before the ready pass, so that nothing it publishes
        // holds a book past the stale age by more than that period.
        if check_stale {
            for (instrument, bytes_read) in instruments.iter_mut().zip(&bytes_read) {
                worked |= serve(instrument, bytes_read, Pass::Ages);
            }
        }
        // The instruments the readers marked, and no other.
        ready.take_each(|index| {
            worked |= serve(&mut instruments[index], &bytes_read[index], Pass::Ready);
        });
        if stopping {
            break;
        }
        idler.idle(worked);
    }
    e2e_seconds.flush();
    merges.flush();
}

/// The merger's two passes over its instruments.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// The instruments marked ready: their mailboxes taken.
    Ready,
    /// Every instrument, every `STALE_CHECK_EVERY_NS`: the ages of the books it holds.
    Ages,
}

/// Polls with nothing new before spinning turns to yielding, and yielding to parking.
const SPIN_POLLS: u32 = 1_000;
const YIELD_POLLS: u32 = 100;
/// Longest park: bounds how late a stale venue is noticed when nothing wakes the merger.
const PARK_TIMEOUT: Duration = Duration::from_millis(1);

/// The merger's idle strategy (see `IdleStrategy`).
struct Idler {
    strategy: IdleStrategy,
    idle_polls: u32,
}

impl Idler {
    fn new(strategy: IdleStrategy) -> Idler {
        Idler {
            strategy,
            idle_polls: 0,
        }
    }

    #[inline]
    fn idle(&mut self, worked: bool) {
        if worked {
            self.idle_polls = 0;
            return;
        }
        self.idle_polls = self.idle_polls.saturating_add(1);
        match self.strategy {
            IdleStrategy::Spin => std::hint::spin_loop(),
            _ if self.idle_polls < SPIN_POLLS => std::hint::spin_loop(),
            IdleStrategy::SpinThenYield => std::thread::yield_now(),
            IdleStrategy::Park if self.idle_polls < SPIN_POLLS + YIELD_POLLS => {
                std::thread::yield_now()
            }
            IdleStrategy::Park => std::thread::park_timeout(PARK_TIMEOUT),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::book::Level;
    use crate::fixed::FixedPoint;
    use crate::merge::MergedLevel;

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

    /// A book without asks, or without anything, is excluded (its bids alone could cross
    /// the other venues' asks, and no check of its own could tell), unless allowed.
    #[test]
    fn one_sided_books_are_excluded_unless_allowed() {
        let mut merger = InstrumentMerger::new(0, 10, VenueId::ALL);
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
        let mut merger = InstrumentMerger::new(0, 10, VenueId::ALL);
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
