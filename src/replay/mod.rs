//! `mergebook replay`: recorded frames through the same decoders, consolidation and merge
//! as the live service, deterministically.
//!
//! It reads plain files, timelines and recording directories (`record/timeline.rs`).
//!
//! Each recording goes through a `FeedCore` (`feed::core`), the live reader's own rules, so a replay
//! publishes what the service would have: the same books dropped as out of order, the
//! same venue states. Two modes, as in the service: snapshot streams (`replay`: every
//! book frame replaces the venue's book) and diff streams (`replay_diff`: every followed
//! symbol's diff events, joined to the REST snapshots recorded in the timeline — or given
//! apart for per-pair files). A recording whose frames do not fit the mode is refused,
//! naming the mode that fits ([`check_mode`]).
//!
//! Frames of all venues are replayed in time order (timeline `recv_ts`; for plain files
//! the line number, so plain files interleave line by line), ties broken by the order of
//! the venues' recordings. Every book published, and every change of a venue's state,
//! produces one summary. A venue's request to reconnect is followed as the service
//! follows it: its books are `Connecting`, then start over.

mod archive;
pub(crate) mod diff;
mod recording;
mod sample;

pub use archive::{ArchiveMismatch, VenueFile, replay_venue_files};
pub use diff::{
    DiffBook, DiffDepths, DiffPlan, DiffPlanError, DiffRecording, DiffStats, insert_snapshot,
    plan_diff, plan_diff_of, replay_diff, replay_diff_frames,
};
pub use recording::{
    AuditCounts, Pace, RecordingMismatch, RecordingStats, replay_connections, replay_recording,
};
pub use sample::BookSampler;

use crate::book::diff_sync::{ResyncReason, UpdateOutcome};
use crate::book::{BookUpdate, MAX_DEPTH, TopBook};
pub use crate::feed::core::BadFrame;
use crate::feed::core::snapshot_schedule::FetchOutcome;
use crate::feed::core::{CoreStream, FeedCore, FeedEvent, FeedOutput, FrameVerdict};
use crate::feed::handoff::VenueFeed;
use crate::fixed::UnitSize;
use crate::merger::summary::{Summary, VenueState};
use crate::merger::{Consolidation, RateLinks};
use crate::record::timeline::RecordedFrame;
use crate::venue::{DecodeError, Message, VenueId};

/// The service's two feed modes, as replay runs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Book frames replace the venue's book.
    Snapshot,
    /// Full-depth books from diff events and REST snapshots.
    Diff,
}

/// Why a recording does not fit the chosen mode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModeMismatch {
    #[error(
        "its {venue} frames are diff events, not book snapshots: replay it with `mergebook replay diff`"
    )]
    DiffEvents { venue: VenueId },
    #[error(
        "its {venue} frames are book snapshots, not diff events: replay it with `mergebook replay snapshot`"
    )]
    BookSnapshots { venue: VenueId },
    #[error("it holds no {venue} book frame of either mode in {frames} frames")]
    NoBooks { venue: VenueId, frames: usize },
}

/// Whether `frame` is a book of a snapshot stream.
fn is_book_snapshot(venue: VenueId, frame: &RecordedFrame, scratch: &mut TopBook) -> bool {
    frame.rest_url.is_none() && snapshot_stream(venue, &frame.raw, scratch).is_some()
}

/// The stream of a snapshot stream's book, or `None` for any other frame: a diff event is
/// none, though some venues send both in one envelope (Bitstamp's `order_book_` and
/// `diff_order_book_`) and others name both streams alike (by the symbol alone).
fn snapshot_stream<'a>(venue: VenueId, raw: &'a str, scratch: &mut TopBook) -> Option<&'a [u8]> {
    let Ok(Message::Book { stream }) = venue.decode(raw.as_bytes(), MAX_DEPTH, scratch) else {
        return None;
    };
    let mut update = BookUpdate::default();
    let diff_event = diff_event_stream(venue, raw, MAX_DEPTH, &mut update);
    matches!(diff_event, Ok(None) | Err(_)).then_some(stream)
}

/// The stream of a diff event (empty on a raw stream), or `None` for any other frame.
fn diff_event_stream<'a>(
    venue: VenueId,
    raw: &'a str,
    max_levels: usize,
    update: &mut BookUpdate,
) -> Result<Option<&'a [u8]>, DecodeError> {
    Ok(
        match venue.decode_diff(raw.as_bytes(), max_levels, update)? {
            // A book whose message could not be held is one of the recording's all the same.
            Message::Book { stream } | Message::Unreadable { stream, .. }
                if stream.is_empty() || is_diff_stream(venue, stream) =>
            {
                Some(stream)
            }
            _ => None,
        },
    )
}

fn is_diff_stream(venue: VenueId, stream: &[u8]) -> bool {
    std::str::from_utf8(stream).is_ok_and(|stream| venue.streams().is_diff_stream(stream))
}

/// Checks that a venue's recording holds books of a mode's kind (if it holds only the
/// other mode's, the error names that mode), read a frame at a time: [`ModeCheck::see`]
/// each, then [`ModeCheck::finish`]. Decodes only until the recording is known to fit.
pub struct ModeCheck {
    venue: VenueId,
    mode: Mode,
    fits: bool,
    other_fits: bool,
    frames: usize,
    book: TopBook,
    update: BookUpdate,
}

impl ModeCheck {
    pub fn new(venue: VenueId, mode: Mode) -> ModeCheck {
        ModeCheck {
            venue,
            mode,
            fits: false,
            other_fits: false,
            frames: 0,
            book: TopBook::default(),
            update: BookUpdate::default(),
        }
    }

    pub fn see(&mut self, frame: &RecordedFrame) {
        self.frames += 1;
        if self.fits {
            return;
        }
        let snapshot = is_book_snapshot(self.venue, frame, &mut self.book);
        let diff = frame.rest_url.is_none()
            && diff_event_stream(self.venue, &frame.raw, MAX_DEPTH, &mut self.update)
                .is_ok_and(|s| s.is_some());
        let (fits, other) = match self.mode {
            Mode::Snapshot => (snapshot, diff),
            Mode::Diff => (diff, snapshot),
        };
        self.fits |= fits;
        self.other_fits |= other;
    }

    pub fn finish(self) -> Result<(), ModeMismatch> {
        let venue = self.venue;
        match (self.fits, self.other_fits, self.mode) {
            (true, _, _) => Ok(()),
            (false, true, Mode::Snapshot) => Err(ModeMismatch::DiffEvents { venue }),
            (false, true, Mode::Diff) => Err(ModeMismatch::BookSnapshots { venue }),
            (false, false, _) => Err(ModeMismatch::NoBooks {
                venue,
                frames: self.frames,
            }),
        }
    }
}

/// Counts of what a snapshot-mode replay saw.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReplayStats {
    pub frames: u64,
    /// Books published.
    pub books: u64,
    /// Books older than the last one published, dropped.
    pub out_of_order: u64,
    pub decode_errors: u64,
    pub summaries: u64,
}

/// The order several recordings' frames or events are replayed in: by receive time, then
/// by recording, each recording's own order kept (an item whose time is below its
/// recording's previous is taken in its place there). Sources are read as they are
/// replayed, one item a source in memory. Yields (receive time, source, the item's index
/// in its source, the item).
pub struct TimeMerge<T, I> {
    sources: Vec<I>,
    /// Each source's next item, its index, and the time it is ordered by.
    heads: Vec<Option<(T, usize, u64)>>,
    /// Items taken from each source so far.
    taken: Vec<usize>,
    received_ns: fn(&T) -> u64,
}

impl<T, I: Iterator<Item = T>> TimeMerge<T, I> {
    pub fn new(sources: Vec<I>, received_ns: fn(&T) -> u64) -> TimeMerge<T, I> {
        let mut merge = TimeMerge {
            heads: (0..sources.len()).map(|_| None).collect(),
            taken: vec![0; sources.len()],
            sources,
            received_ns,
        };
        for source in 0..merge.sources.len() {
            merge.advance(source, 0);
        }
        merge
    }

    /// Reads `source`'s next item into its head, ordered no earlier than `floor_ns`.
    fn advance(&mut self, source: usize, floor_ns: u64) {
        self.heads[source] = self.sources[source].next().map(|item| {
            let at = (self.received_ns)(&item).max(floor_ns);
            let index = self.taken[source];
            self.taken[source] += 1;
            (item, index, at)
        });
    }
}

impl<T, I: Iterator<Item = T>> Iterator for TimeMerge<T, I> {
    type Item = (u64, usize, usize, T);

    fn next(&mut self) -> Option<Self::Item> {
        // A linear pick: the sources are a recording's connections or a replay's files
        // (a few dozen at most), where a heap's upkeep would cost as much.
        let source = (0..self.heads.len())
            .filter_map(|source| Some((self.heads[source].as_ref()?.2, source)))
            .min()?
            .1;
        let (item, index, at) = self.heads[source].take().expect("picked");
        self.advance(source, at);
        Some(((self.received_ns)(&item), source, index, item))
    }
}

/// Replays `inputs` (venue and its frames) for one instrument, calling `emit` with every
/// summary. `on_error` hears of each frame that failed to decode. Each venue's book
/// stream is the first one its recording holds; frames of other streams, of diff
/// streams, and REST responses are passed over, as a service subscribed to that stream
/// would.
pub fn replay(
    inputs: &[(VenueId, Vec<RecordedFrame>)],
    depth: usize,
    emit: impl FnMut(&Summary),
    on_error: impl FnMut(VenueId, usize, &BadFrame),
) -> ReplayStats {
    let venues: Vec<VenueId> = inputs.iter().map(|(venue, _)| *venue).collect();
    let streams = inputs
        .iter()
        .map(|(venue, frames)| first_book_stream(*venue, frames.iter()))
        .collect();
    let sources = inputs
        .iter()
        .map(|(_, frames)| frames.iter().cloned())
        .collect();
    replay_frames(&venues, streams, sources, depth, emit, on_error)
}

/// The stream of the first book snapshot among `venue`'s `frames` (empty: none, or a raw
/// stream): the one a snapshot replay follows.
pub fn first_book_stream<F: std::borrow::Borrow<RecordedFrame>>(
    venue: VenueId,
    frames: impl Iterator<Item = F>,
) -> String {
    let mut scratch = TopBook::default();
    frames
        .filter(|frame| frame.borrow().rest_url.is_none())
        .find_map(|frame| {
            let stream = snapshot_stream(venue, &frame.borrow().raw, &mut scratch)?;
            Some(String::from_utf8_lossy(stream).into_owned())
        })
        .unwrap_or_default()
}

/// [`replay`] of recordings read as they are replayed: each one's venue, the stream it
/// follows ([`first_book_stream`]) and its frames (in its own time order).
pub fn replay_frames<I: Iterator<Item = RecordedFrame>>(
    venues: &[VenueId],
    streams: Vec<String>,
    sources: Vec<I>,
    depth: usize,
    mut emit: impl FnMut(&Summary),
    mut on_error: impl FnMut(VenueId, usize, &BadFrame),
) -> ReplayStats {
    let mut consolidations = vec![Consolidation::new(0, depth, venues)];
    let mut cores: Vec<FeedCore> = venues
        .iter()
        .zip(streams)
        .map(|(venue, stream)| {
            let streams = vec![CoreStream {
                name: stream,
                symbol: String::new(),
                contract_size: None,
                unit: UnitSize::COIN,
            }];
            FeedCore::new(*venue, depth, streams, None, 0)
        })
        .collect();
    let mut stats = ReplayStats::default();
    let mut tally = Tally::default();
    for (received_ns, input, index, frame) in
        TimeMerge::new(sources, |frame: &RecordedFrame| frame.received_ns)
    {
        let venue = venues[input];
        if frame.rest_url.is_some() {
            continue;
        }
        stats.frames += 1;
        let mut outlet = ReplayOutlet {
            venue,
            books: &[(0, input)],
            consolidations: &mut consolidations,
            received_ns,
            emit: &mut |_, summary: &Summary| emit(summary),
            on_error: &mut |error: &BadFrame| on_error(venue, index, error),
            tally: &mut tally,
            diff_stats: &mut [],
            on_feed: &mut |_, _, _| {},
            rate_links: &RateLinks::default(),
            // The service's, as it runs without them configured.
            bands_bps: &crate::config::defaults::BANDS_BPS,
        };
        replay_frame(&mut cores[input], &frame, received_ns, &mut outlet);
    }
    stats.books = tally.books;
    stats.out_of_order = tally.out_of_order;
    stats.decode_errors = tally.decode_errors;
    stats.summaries = tally.summaries;
    stats
}

/// Hands one recorded WebSocket frame to its core, and follows a reconnect the frame asks
/// for (as the live reader would: `Connecting`, then a new connection's rules).
fn replay_frame(
    core: &mut FeedCore,
    frame: &RecordedFrame,
    received_ns: u64,
    outlet: &mut ReplayOutlet<'_>,
) {
    let verdict = core.on_frame(frame.raw.as_bytes(), received_ns, outlet);
    // An answer the venue asked for was sent (the recording holds it, where it was made).
    if !matches!(verdict, FrameVerdict::Continue | FrameVerdict::Answer(_)) {
        core.connecting(outlet);
        core.connected(received_ns, outlet);
    }
}

/// Counts across a whole replay.
#[derive(Default)]
struct Tally {
    books: u64,
    out_of_order: u64,
    decode_errors: u64,
    summaries: u64,
    audits: AuditCounts,
}

impl Tally {
    /// A configured replay's statistics, after `events` events.
    fn recording_stats(&self, events: u64) -> RecordingStats {
        RecordingStats {
            events,
            books: self.books,
            decode_errors: self.decode_errors,
            summaries: self.summaries,
            audits: self.audits,
        }
    }
}

/// A `Consolidation` of each of `config`'s instruments, as the service's merger starts
/// them.
fn configured_consolidations(config: &crate::config::Config) -> Vec<Consolidation> {
    (0..config.instruments.len())
        .map(|index| Consolidation::configured(config, index))
        .collect()
}

/// Where a replay's cores publish: each stream's instrument, merged and summarized at
/// once (`emit`), as the merger thread would.
struct ReplayOutlet<'a> {
    venue: VenueId,
    /// Per stream of the core, the book it feeds: (instrument, source).
    books: &'a [(usize, usize)],
    consolidations: &'a mut [Consolidation],
    /// The instruments whose venues convert through another's book.
    rate_links: &'a RateLinks,
    received_ns: u64,
    emit: &'a mut dyn FnMut(usize, &Summary),
    on_error: &'a mut dyn FnMut(&BadFrame),
    tally: &'a mut Tally,
    /// Per stream of the core (diff mode).
    diff_stats: &'a mut [DiffStats],
    /// Hears each feed a core publishes, before it is merged: (instrument, venue, feed).
    on_feed: &'a mut dyn FnMut(usize, VenueId, &VenueFeed),
    /// The bands each summary counts (`service.bands_bps`), over the books' published
    /// depth: a replay keeps no venue's whole book beside the top it merges.
    bands_bps: &'a [u16],
}

impl FeedOutput for ReplayOutlet<'_> {
    fn publish(&mut self, stream: usize, write: impl FnOnce(&mut VenueFeed)) {
        let mut feed = VenueFeed::default();
        write(&mut feed);
        if feed.state == VenueState::Synced {
            self.tally.books += 1;
        }
        let (instrument, source) = self.books[stream];
        (self.on_feed)(instrument, self.venue, &feed);
        let merger = &mut self.consolidations[instrument];
        merger.apply(source, &feed);
        let mut summary = Summary::default();
        merger.summarize(self.received_ns, &mut summary);
        let tops_only = crate::book::full_depth::FullDepth::default();
        crate::merger::bands::write(merger, |_| &tops_only, self.bands_bps, &mut summary);
        self.tally.summaries += 1;
        (self.emit)(instrument, &summary);
        let rate = self.consolidations[instrument].rate();
        for &(dependent, rate_index) in self.rate_links.of(instrument) {
            let merger = &mut self.consolidations[dependent];
            if merger.set_rate(rate_index, rate) {
                merger.summarize(self.received_ns, &mut summary);
                crate::merger::bands::write(merger, |_| &tops_only, self.bands_bps, &mut summary);
                self.tally.summaries += 1;
                (self.emit)(dependent, &summary);
            }
        }
    }

    fn note(&mut self, stream: Option<usize>, event: FeedEvent) {
        match event {
            FeedEvent::BadFrame(error) => {
                self.tally.decode_errors += 1;
                (self.on_error)(&error);
                for stats in self.diff_stats.iter_mut() {
                    stats.decode_errors += 1;
                }
            }
            FeedEvent::BookOutOfOrder => self.tally.out_of_order += 1,
            FeedEvent::Audit(outcome) => self.tally.audits.count(outcome),
            _ => {}
        }
        let Some(stats) = stream.and_then(|stream| self.diff_stats.get_mut(stream)) else {
            return;
        };
        match event {
            FeedEvent::DiffEvent(outcome) => {
                stats.events += 1;
                match outcome {
                    UpdateOutcome::Applied => stats.applied += 1,
                    UpdateOutcome::Stale => stats.dropped += 1,
                    UpdateOutcome::Gap
                    | UpdateOutcome::Buffered { .. }
                    | UpdateOutcome::Crossed => {}
                }
            }
            FeedEvent::Resync(ResyncReason::Gap) => stats.gaps += 1,
            FeedEvent::Resync(ResyncReason::Crossed) => stats.crossings += 1,
            FeedEvent::Resync(ResyncReason::Unproven) => stats.unproven += 1,
            FeedEvent::ChecksumMismatch => stats.checksum_mismatches += 1,
            FeedEvent::Snapshot {
                outcome,
                applied,
                dropped,
            } => {
                stats.snapshots += 1;
                stats.applied += applied as u64;
                stats.dropped += dropped as u64;
                match outcome {
                    FetchOutcome::TooOld => stats.snapshots_too_old += 1,
                    FetchOutcome::Failed => stats.snapshots_refused += 1,
                    FetchOutcome::Used | FetchOutcome::RateLimited { .. } => {}
                }
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests;
