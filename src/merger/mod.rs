//! The merger: the thread that owns the consolidation of every instrument. It takes the
//! mailboxes of the instruments whose readers published ([`ReadySet`]), applies each new
//! book to its instrument's [`Consolidation`], k-way merges the synced venues' books
//! ([`kway`]) and publishes the [`Summary`](summary::Summary).

pub mod bands;
pub mod consolidation;
pub mod kway;
pub mod quote;
pub mod summary;

pub use consolidation::{Consolidation, RateLinks};

use crate::clock::{self, HostClock};
use crate::config::IdleStrategy;
use crate::feed::handoff::{ReadySet, VenueFeed};
use crate::mailbox::Receiver;
use crate::merger::summary::MAX_SOURCES;
use crate::merger::summary::{Summary, VenueState};
use crate::metrics::Metrics;
use crate::publish::SummaryPublisher;
use crate::venue::VenueId;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

/// One instrument as the merger thread sees it.
pub struct WiredInstrument {
    pub consolidation: Consolidation,
    /// Each source's mailbox from its reader, in source order.
    pub inputs: Vec<Receiver<VenueFeed>>,
    pub output: SummaryPublisher,
}

/// A change a reload makes to the merger's instruments (`Service::reload`), taken between
/// passes within [`STALE_CHECK_EVERY_NS`].
pub enum MergerChange {
    /// Merge `instrument` in `slot`, vacant until now (its index in the `ReadySet` and
    /// in every summary); the instruments' rates are linked by `rate_links` from now on.
    List {
        slot: usize,
        instrument: Box<WiredInstrument>,
        rate_links: RateLinks,
    },
    /// Stop merging the instrument in `slot`: its mailboxes and its publisher are dropped
    /// (its consumers' streams end), and the slot left vacant.
    Delist { slot: usize, rate_links: RateLinks },
}

pub struct MergerSpec<O: PublishObserver = ()> {
    /// By slot: an instrument's index in the `ReadySet` and its summaries.
    pub instruments: Vec<WiredInstrument>,
    /// The changes a reload makes, where the service can reload.
    pub changes: Option<std::sync::mpsc::Receiver<MergerChange>>,
    /// The instruments whose readers published since the merger last looked (indexes
    /// into `instruments`).
    pub ready: Arc<ReadySet>,
    pub idle: IdleStrategy,
    /// The sleep between passes of the `batch` strategy.
    pub batch_period: Duration,
    /// Pin the thread to this CPU (validated against the process's affinity beforehand).
    pub core: Option<usize>,
    pub stale_after: Duration,
    /// The merger stores the monotonic time here every `STALE_CHECK_EVERY_NS` while it runs:
    /// the systemd watchdog is fed only while this moves (a stuck merger is a dead service).
    pub heartbeat_ns: Arc<AtomicU64>,
    /// Told of every publish: the load harness's accounting; the service's is `()`.
    pub observer: O,
    /// The instruments whose venues convert through another's book: each summary of a
    /// rate's instrument is handed on to them, and they publish when it changed theirs.
    pub rate_links: RateLinks,
    /// The host's clock, for the venues' delays to publish.
    pub host_clock: Arc<HostClock>,
    /// The bands every summary carries (`service.bands_bps`).
    pub bands_bps: Vec<u16>,
    /// Quotes to answer between passes (`quote`), and where the merger's thread is made
    /// known to those who ask them (they wake it).
    pub quotes: Option<(
        quote::QuoteInbox,
        Arc<std::sync::OnceLock<std::thread::Thread>>,
    )>,
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
    /// Each source's `Summary::source_venues`, `source_sequence` and `source_received_ns`.
    pub source_venues: [Option<VenueId>; MAX_SOURCES],
    pub source_sequence: [u64; MAX_SOURCES],
    pub source_received_ns: [u64; MAX_SOURCES],
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
    if let Some((_, thread)) = &spec.quotes {
        let _ = thread.set(std::thread::current());
    }
    let stale_after_ns = spec.stale_after.as_nanos() as u64;
    let evictions: Vec<_> = VenueId::ALL
        .iter()
        .map(|venue| metrics.stale_evictions.with_label_values(&[venue.name()]))
        .collect();
    // By slot; `None` where a reload left it vacant.
    let mut instruments: Vec<Option<WiredInstrument>> = std::mem::take(&mut spec.instruments)
        .into_iter()
        .map(Some)
        .collect();
    // What each instrument's merge reads of a feed, fetched while the feed is taken.
    let mut bytes_read: Vec<_> = (instruments.iter().flatten())
        .map(|instrument| VenueFeed::bytes_read(instrument.consolidation.depth()))
        .collect();
    let mut idler = Idler::new(spec.idle, spec.batch_period);
    let takes_back_slots = spec.idle != IdleStrategy::Batch;
    let ready = Arc::clone(&spec.ready);
    let mut next_stale_check = 0;
    // Thread-local recording, flushed with the stale check's clock (see metrics.rs).
    let e2e_seconds = metrics.e2e_seconds.local();
    let merges = metrics.merges.local();
    let exchange_to_publish: Vec<_> = VenueId::ALL
        .iter()
        .map(|venue| {
            let histogram = &metrics.exchange_to_publish_seconds;
            histogram.with_label_values(&[venue.name()]).local()
        })
        .collect();
    let host_clock = Arc::clone(&spec.host_clock);
    let mut next_flush = 0;
    // Each instrument's `Consolidation::oldest_live_ns`, as of its last serve.
    let mut oldest_live_ns: Vec<u64> = (instruments.iter().flatten())
        .map(|instrument| instrument.consolidation.oldest_live_ns())
        .collect();
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
            if let Some(changes) = &spec.changes {
                for change in changes.try_iter() {
                    apply_change(
                        change,
                        &mut instruments,
                        &mut bytes_read,
                        &mut oldest_live_ns,
                        &mut spec.rate_links,
                        &spec.ready,
                    );
                }
            }
            if now >= next_flush {
                next_flush = now + crate::metrics::FLUSH_EVERY.as_nanos() as u64;
                e2e_seconds.flush();
                merges.flush();
                exchange_to_publish.iter().for_each(|local| local.flush());
            }
        }
        let observer = &mut spec.observer;
        let oldest_ns = now.saturating_sub(stale_after_ns);
        // One instrument: its new books taken, and in the ages pass its stale venues
        // evicted; a summary published if that changed it. The ages pass takes only the
        // mailboxes of an instrument with a venue to evict, first: a newer book waiting
        // there spares its venue.
        let mut serve = |instrument: &mut WiredInstrument, bytes_read: &[_], pass: Pass| {
            let (mut new_book, mut evicted) = (false, false);
            if pass == Pass::Ages && !instrument.consolidation.any_stale(oldest_ns) {
                return false;
            }
            // The sources whose new book is a synced one, a bit each.
            const _: () = assert!(MAX_SOURCES <= u32::BITS as usize);
            let mut synced_books = 0u32;
            for (source, input) in instrument.inputs.iter_mut().enumerate() {
                if input.take_prefetching(bytes_read) {
                    let feed = input.latest();
                    instrument.consolidation.apply(source, feed);
                    synced_books |= u32::from(feed.state == VenueState::Synced) << source;
                    new_book = true;
                }
            }
            if pass == Pass::Ages {
                instrument
                    .consolidation
                    .evict_stale(oldest_ns, |source, venue| {
                        tracing::warn!(%venue, source, "book older than the stale age: evicted");
                        evictions[venue.index()].inc();
                        evicted = true;
                    });
            }
            if !(new_book || evicted || pass == Pass::Rate) {
                return false;
            }
            let consolidation = &mut instrument.consolidation;
            let inputs = &instrument.inputs;
            let mut received_ns = 0;
            let mut record = None;
            instrument.output.publish_with(|summary| {
                consolidation.summarize(clock::unix_ns(), summary);
                bands::write(
                    consolidation,
                    |source| &inputs[source].latest().full_depth,
                    &spec.bands_bps,
                    summary,
                );
                // Read after the take: a book handed over since `now` is younger than
                // `now`, and its age is reported as of this write.
                let written_ns = clock::monotonic_ns();
                summary.polled_monotonic_ns = now;
                summary.published_monotonic_ns = written_ns;
                received_ns = summary.received_ns;
                if O::OBSERVES {
                    observer.written(summary);
                    record = Some(PublishRecord {
                        instrument: summary.instrument,
                        polled_ns: now,
                        written_ns,
                        published_ns: 0,
                        source_venues: summary.source_venues,
                        source_sequence: summary.source_sequence,
                        source_received_ns: summary.source_received_ns,
                    });
                }
            });
            let published_ns = clock::monotonic_ns();
            merges.inc();
            if new_book {
                e2e_seconds.observe(published_ns.saturating_sub(received_ns) as f64 * 1e-9);
            }
            // Each new synced book's venue time to this publish, where the venue sent one
            // and the host's clock is steady (the readers count the delays left out).
            if let Some(published_unix) = host_clock.unix_of(published_ns) {
                while synced_books != 0 {
                    let source = synced_books.trailing_zeros() as usize;
                    synced_books &= synced_books - 1;
                    let (venue, exchange) = instrument.consolidation.exchange_time_ns(source);
                    let delay = clock::delay_ns(exchange, published_unix);
                    if exchange != 0 && delay >= 0 {
                        exchange_to_publish[venue.index()].observe(delay as f64 * 1e-9);
                    }
                }
            }
            if let Some(mut record) = record {
                record.published_ns = published_ns;
                observer.published(&record);
            }
            // Not when batching: the instrument's next summary is a batch or more away, and
            // with many instruments the lines taken back would be evicted by then, each a
            // read from memory for nothing.
            if takes_back_slots {
                instrument
                    .output
                    .take_back_next_slot(instrument.consolidation.depth());
            }
            true
        };
        let instruments = &mut instruments;
        let rate_links = &spec.rate_links;
        let bytes_read = &bytes_read;
        // An instrument served, and where it published, its rate handed on to the
        // instruments converting through it: those whose summary that changes publish in
        // the same round. Each one served has its oldest book's time noted.
        let mut serve_and_hand_on = |instruments: &mut [Option<WiredInstrument>],
                                     oldest_live_ns: &mut [u64],
                                     index: usize,
                                     pass| {
            // (A vacant slot's mark: a reader of an instrument just delisted.)
            let Some(instrument) = &mut instruments[index] else {
                return false;
            };
            let published = serve(instrument, &bytes_read[index], pass);
            oldest_live_ns[index] = instrument.consolidation.oldest_live_ns();
            if published && !rate_links.of(index).is_empty() {
                let rate = instrument.consolidation.rate();
                for &(dependent, rate_index) in rate_links.of(index) {
                    let Some(dependent_instrument) = &mut instruments[dependent] else {
                        continue;
                    };
                    if dependent_instrument
                        .consolidation
                        .set_rate(rate_index, rate)
                    {
                        serve(dependent_instrument, &bytes_read[dependent], Pass::Rate);
                        oldest_live_ns[dependent] =
                            dependent_instrument.consolidation.oldest_live_ns();
                    }
                }
            }
            published
        };
        // Every instrument's ages, every `STALE_CHECK_EVERY_NS`: the one pass over them all,
        // on the merger's own copies, before the ready pass, so that nothing it publishes
        // holds a book past the stale age by more than that period. It reads the times
        // noted side by side, and visits only an instrument with a book to evict (reading
        // every source slot of 1,000 instruments each time was a fifth of the merger's
        // samples in a profile of 9,000 books).
        if check_stale {
            for index in 0..instruments.len() {
                if oldest_live_ns[index] < oldest_ns {
                    worked |=
                        serve_and_hand_on(instruments, &mut oldest_live_ns, index, Pass::Ages);
                }
            }
        }
        // The instruments the readers marked, and no other.
        ready.take_each(|index| {
            worked |= serve_and_hand_on(instruments, &mut oldest_live_ns, index, Pass::Ready);
        });
        // Between passes every instrument's mailboxes hold the books of its last summary.
        if let Some((inbox, _)) = &spec.quotes {
            worked |= inbox.answer_some(|request| {
                let Some(Some(instrument)) = instruments.get(request.instrument) else {
                    return Err(quote::QuoteError::Delisted);
                };
                let inputs = &instrument.inputs;
                quote::quote(
                    &instrument.consolidation,
                    |source| &inputs[source].latest().full_depth,
                    request,
                )
            });
        }
        if stopping {
            break;
        }
        idler.idle(worked);
    }
    e2e_seconds.flush();
    merges.flush();
    exchange_to_publish.iter().for_each(|local| local.flush());
}

/// Applies a reload's `change` to the merger's instruments (by slot), each one's bytes
/// read and oldest book's time, and the rates' links. An instrument listed converting
/// through another's book takes that book's rate at once; it is marked `ready`, so that a
/// book its readers handed over before it was listed (their marks found its slot vacant)
/// is taken.
fn apply_change(
    change: MergerChange,
    instruments: &mut Vec<Option<WiredInstrument>>,
    bytes_read: &mut Vec<BytesRead>,
    oldest_live_ns: &mut Vec<u64>,
    rate_links: &mut RateLinks,
    ready: &Arc<ReadySet>,
) {
    match change {
        MergerChange::List {
            slot,
            instrument,
            rate_links: links,
        } => {
            if slot >= instruments.len() {
                instruments.resize_with(slot + 1, || None);
                bytes_read.resize(slot + 1, Default::default());
                oldest_live_ns.resize(slot + 1, u64::MAX);
            }
            bytes_read[slot] = VenueFeed::bytes_read(instrument.consolidation.depth());
            oldest_live_ns[slot] = instrument.consolidation.oldest_live_ns();
            instruments[slot] = Some(*instrument);
            *rate_links = links;
            for source in 0..instruments.len() {
                for &(dependent, rate_index) in rate_links.of(source) {
                    let rate = instruments[source].as_ref().map(|s| s.consolidation.rate());
                    if let (true, Some(rate)) = (dependent == slot, rate)
                        && let Some(listed) = &mut instruments[slot]
                    {
                        listed.consolidation.set_rate(rate_index, rate);
                    }
                }
            }
            ready.mark_of(slot).mark();
        }
        MergerChange::Delist {
            slot,
            rate_links: links,
        } => {
            if let Some(vacated) = instruments.get_mut(slot) {
                *vacated = None;
                // Never past the stale age: the ages pass leaves the slot alone.
                oldest_live_ns[slot] = u64::MAX;
            }
            *rate_links = links;
        }
    }
}

/// What an instrument's merge reads of a feed (`VenueFeed::bytes_read`).
type BytesRead = [std::ops::Range<usize>; 8];

/// The merger's two passes over its instruments.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    /// The instruments marked ready: their mailboxes taken.
    Ready,
    /// Every instrument, every `STALE_CHECK_EVERY_NS`: the ages of the books it holds.
    Ages,
    /// An instrument whose rate changed: published whatever its mailboxes hold.
    Rate,
}

/// Polls with nothing new before spinning turns to yielding, and yielding to parking.
const SPIN_POLLS: u32 = 1_000;
const YIELD_POLLS: u32 = 100;
/// Longest park: bounds how late a stale venue is noticed when nothing wakes the merger.
const PARK_TIMEOUT: Duration = Duration::from_millis(1);

/// The merger's idle strategy (see `IdleStrategy`).
struct Idler {
    strategy: IdleStrategy,
    batch_period: Duration,
    idle_polls: u32,
}

impl Idler {
    fn new(strategy: IdleStrategy, batch_period: Duration) -> Idler {
        Idler {
            strategy,
            batch_period,
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
            // A pass that found nothing: what comes next is served in one pass after the
            // sleep (`thread::sleep`, which no reader's unpark cuts short).
            IdleStrategy::Batch => std::thread::sleep(self.batch_period),
            _ if self.idle_polls < SPIN_POLLS => std::hint::spin_loop(),
            IdleStrategy::SpinThenYield => std::thread::yield_now(),
            IdleStrategy::Park if self.idle_polls < SPIN_POLLS + YIELD_POLLS => {
                std::thread::yield_now()
            }
            IdleStrategy::Park => std::thread::park_timeout(PARK_TIMEOUT),
        }
    }
}
