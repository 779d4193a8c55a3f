//! Diff-mode replay: the planned books' diff events and their REST snapshots.

use super::{ReplayOutlet, Tally, TimeMerge, diff_event_stream, replay_frame};
use crate::book::BookUpdate;
use crate::book::diff_sync::BookSync;
use crate::config::DiffSettings;
pub use crate::feed::core::BadFrame;
use crate::feed::core::snapshot_schedule::SnapshotPolicy;
use crate::feed::core::{CoreStream, FeedCore};
use crate::fixed::UnitSize;
use crate::merger::Consolidation;
use crate::merger::summary::Summary;
use crate::record::timeline::RecordedFrame;
use crate::venue::{Message, VenueId};

/// One venue's recording in a diff-mode replay.
#[derive(Debug, Clone)]
pub struct DiffRecording {
    pub venue: VenueId,
    pub frames: Vec<RecordedFrame>,
    /// The symbols to follow; empty: every symbol whose diff stream the recording holds.
    pub symbols: Vec<String>,
}

/// Why a diff replay cannot decide what to follow.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DiffPlanError {
    #[error(
        "its {venue} diff events do not name their stream: say which symbol they are of with --symbol {venue}=SYMBOL"
    )]
    UnnamedStream { venue: VenueId },
    #[error("it holds no {venue} diff event of {symbol}")]
    NoSuchSymbol { venue: VenueId, symbol: String },
}

/// What a diff-mode replay saw on one book.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DiffStats {
    pub events: u64,
    pub applied: u64,
    /// Events dropped as already contained in the snapshot or book.
    pub dropped: u64,
    /// Resyncs for a gap: an event missing, a message missing on a venue that numbers them,
    /// an update before its in-band snapshot.
    pub gaps: u64,
    pub crossings: u64,
    pub snapshots: u64,
    pub snapshots_too_old: u64,
    /// Snapshot bodies that did not decode, or crossed once the buffer was applied.
    pub snapshots_refused: u64,
    /// Messages after which the book disagreed with the venue's checksum.
    pub checksum_mismatches: u64,
    pub decode_errors: u64,
    /// Resyncs of a book built from a snapshot of the venue's top levels that came to
    /// know fewer than the published depth (`ResyncReason::Unproven`).
    pub unproven: u64,
}

/// One book a diff replay follows, and in the end its state.
pub struct DiffBook {
    /// Index into the recordings.
    pub recording: usize,
    pub venue: VenueId,
    pub symbol: String,
    /// The stream as the recording names it (empty: a raw stream).
    pub stream: String,
    /// Index into the plan's instruments.
    pub instrument: usize,
    pub stats: DiffStats,
    /// The book as the replay left it.
    pub sync: BookSync,
}

/// The books a diff replay follows and the instruments they merge into.
pub struct DiffPlan {
    /// Instrument names: a symbol's letters and digits, upper case.
    pub instruments: Vec<String>,
    pub books: Vec<DiffBook>,
}

/// The instrument a symbol merges into: Binance `ETHBTC` and Bitstamp `ethbtc` are one.
fn instrument_key(symbol: &str) -> String {
    symbol
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_uppercase())
        .collect()
}

/// Plans a diff replay: each recording's chosen symbols, or every symbol with a diff
/// stream in it (in order of first appearance); symbols of several venues that are the
/// same instrument (`instrument_key`) are merged.
pub fn plan_diff(
    recordings: &[DiffRecording],
    max_levels: usize,
) -> Result<DiffPlan, (usize, DiffPlanError)> {
    let recordings = recordings.iter().map(|recording| {
        (
            recording.venue,
            &recording.symbols[..],
            recording.frames.iter(),
        )
    });
    plan_diff_of(recordings, max_levels)
}

/// [`plan_diff`] of recordings read as they are planned: each one's venue, the symbols
/// to follow (none: every one), its frames.
pub fn plan_diff_of<'s, F: std::borrow::Borrow<RecordedFrame>>(
    recordings: impl IntoIterator<Item = (VenueId, &'s [String], impl Iterator<Item = F>)>,
    max_levels: usize,
) -> Result<DiffPlan, (usize, DiffPlanError)> {
    let mut plan = DiffPlan {
        instruments: Vec::new(),
        books: Vec::new(),
    };
    for (index, (venue, symbols, frames)) in recordings.into_iter().enumerate() {
        plan.add_recording(index, venue, symbols, frames, max_levels)
            .map_err(|error| (index, error))?;
    }
    Ok(plan)
}

impl DiffPlan {
    /// A plan of no book yet ([`DiffPlan::add_recording`]).
    pub fn empty() -> DiffPlan {
        DiffPlan {
            instruments: Vec::new(),
            books: Vec::new(),
        }
    }

    /// Plans the `index`th recording of a replay ([`plan_diff`]): `venue`'s, following
    /// `symbols` (none: every one), read from `frames`.
    pub fn add_recording<F: std::borrow::Borrow<RecordedFrame>>(
        &mut self,
        index: usize,
        venue: VenueId,
        symbols: &[String],
        frames: impl Iterator<Item = F>,
        max_levels: usize,
    ) -> Result<(), DiffPlanError> {
        let plan = self;
        let mut update = BookUpdate::default();
        // (symbol, stream as named in the recording), in order of first appearance.
        let mut seen: Vec<(String, String)> = Vec::new();
        // The symbols of its REST snapshots, in order.
        let mut snapshots: Vec<String> = Vec::new();
        let mut unnamed = false;
        for frame in frames {
            let frame = frame.borrow();
            if let Some(url) = &frame.rest_url {
                if let Some(symbol) = venue.snapshots().snapshot_symbol(url)
                    && !snapshots.contains(&symbol)
                {
                    snapshots.push(symbol);
                }
                continue;
            }
            match diff_event_stream(venue, &frame.raw, max_levels, &mut update) {
                Ok(Some(b"")) => unnamed = true,
                Ok(Some(stream)) => {
                    let Ok(stream) = std::str::from_utf8(stream) else {
                        continue;
                    };
                    let symbol = venue.streams().diff_stream_symbol(stream);
                    if let Some(symbol) =
                        symbol.filter(|symbol| !seen.iter().any(|(s, _)| s == symbol))
                    {
                        seen.push((symbol, stream.to_owned()));
                    }
                }
                _ => {}
            }
        }
        // A book whose snapshot was fetched and that had no event (a quiet market) is
        // followed too: it is published from its snapshot.
        for symbol in snapshots {
            if !seen.iter().any(|(s, _)| s.eq_ignore_ascii_case(&symbol)) {
                let stream = venue.streams().diff_stream_name(&symbol);
                seen.push((symbol, stream));
            }
        }
        let followed = if symbols.is_empty() {
            if seen.is_empty() && unnamed {
                return Err(DiffPlanError::UnnamedStream { venue });
            }
            seen
        } else {
            let mut followed = Vec::new();
            for symbol in symbols {
                let named = seen.iter().find(|(s, _)| s.eq_ignore_ascii_case(symbol));
                let stream = match named {
                    Some((_, stream)) => stream.clone(),
                    // A raw stream: the recording is of one symbol.
                    None if unnamed => String::new(),
                    None => {
                        let symbol = symbol.clone();
                        return Err(DiffPlanError::NoSuchSymbol { venue, symbol });
                    }
                };
                followed.push((symbol.clone(), stream));
            }
            followed
        };
        for (symbol, stream) in followed {
            let key = instrument_key(&symbol);
            let instrument = match plan.instruments.iter().position(|name| *name == key) {
                Some(instrument) => instrument,
                None => {
                    plan.instruments.push(key);
                    plan.instruments.len() - 1
                }
            };
            plan.books.push(DiffBook {
                recording: index,
                venue,
                symbol,
                stream,
                instrument,
                stats: DiffStats::default(),
                sync: BookSync::new(venue.facts().sequencing, max_levels, usize::MAX),
            });
        }
        Ok(())
    }
}

/// Inserts a separately recorded snapshot body (`--snapshot`, for per-pair files) right
/// after the first diff event of `symbol`'s stream: where a live reader asks for it.
pub fn insert_snapshot(
    venue: VenueId,
    symbol: &str,
    frames: &mut Vec<RecordedFrame>,
    snapshot: String,
) {
    let stream = venue.streams().diff_stream_name(symbol);
    let mut update = BookUpdate::default();
    let first_event = frames.iter().position(|frame| {
        matches!(
            venue.decode_diff(frame.raw.as_bytes(), usize::MAX, &mut update),
            Ok(Message::Book { stream: name }) if name.is_empty() || name.eq_ignore_ascii_case(stream.as_bytes())
        )
    });
    let at = first_event.map_or(0, |index| index + 1);
    let received_ns = frames
        .get(at.saturating_sub(1))
        .map_or(0, |f| f.received_ns);
    frames.insert(
        at,
        RecordedFrame {
            received_ns,
            raw: snapshot,
            rest_url: Some(venue.snapshots().snapshot_url("", symbol, 0)),
        },
    );
}

/// Replays diff streams: the planned books' diff events and the REST snapshots for them,
/// in time order, through a `FeedCore` per recording in diff mode, merging each
/// instrument's synced venues' top `depth` into a summary after every change
/// (`emit(instrument, summary)`). A frame that cannot be decoded resets every book of
/// its recording, as the live reader does (it cannot tell which stream the frame was
/// for). In the end each planned book holds its statistics and its book.
pub fn replay_diff(
    recordings: &[DiffRecording],
    plan: &mut DiffPlan,
    depths: DiffDepths,
    emit: impl FnMut(usize, &Summary),
    on_error: impl FnMut(VenueId, usize, &BadFrame),
) {
    let venues: Vec<VenueId> = recordings.iter().map(|recording| recording.venue).collect();
    let frames = recordings
        .iter()
        .map(|recording| recording.frames.iter().cloned())
        .collect();
    replay_diff_frames(&venues, frames, plan, depths, emit, on_error);
}

/// [`replay_diff`] of recordings read as they are replayed: each one's venue and frames
/// (in its own time order), as [`plan_diff_of`] planned them.
pub fn replay_diff_frames<I: Iterator<Item = RecordedFrame>>(
    venues: &[VenueId],
    sources: Vec<I>,
    plan: &mut DiffPlan,
    depths: DiffDepths,
    mut emit: impl FnMut(usize, &Summary),
    mut on_error: impl FnMut(VenueId, usize, &BadFrame),
) {
    let DiffDepths { depth, .. } = depths;
    let mut consolidations: Vec<Consolidation> = (0..plan.instruments.len())
        .map(|instrument| {
            let venues: Vec<VenueId> = plan
                .books
                .iter()
                .filter(|book| book.instrument == instrument)
                .map(|book| book.venue)
                .collect();
            Consolidation::new(instrument, depth, &venues)
        })
        .collect();
    let settings = replay_settings(depths);
    let mut cores: Vec<RecordingCore> = venues
        .iter()
        .enumerate()
        .map(|(index, &venue)| {
            let books: Vec<usize> = (0..plan.books.len())
                .filter(|&book| plan.books[book].recording == index)
                .collect();
            let streams = books
                .iter()
                .map(|&book| CoreStream {
                    name: plan.books[book].stream.clone(),
                    symbol: plan.books[book].symbol.clone(),
                    contract_size: None,
                    unit: UnitSize::COIN,
                })
                .collect();
            // A book's source: its place among the plan's books of its instrument, as
            // its consolidation above was made.
            let sources = books
                .iter()
                .map(|&book| {
                    let instrument = plan.books[book].instrument;
                    let before = plan.books[..book].iter();
                    let source = before.filter(|b| b.instrument == instrument).count();
                    (instrument, source)
                })
                .collect();
            RecordingCore {
                core: FeedCore::new(venue, depth, streams, Some(&settings), 0),
                stats: vec![DiffStats::default(); books.len()],
                books,
                sources,
            }
        })
        .collect();
    let mut tally = Tally::default();
    for (received_ns, recording, index, frame) in
        TimeMerge::new(sources, |frame: &RecordedFrame| frame.received_ns)
    {
        let venue = venues[recording];
        let frame = &frame;
        let RecordingCore {
            core,
            books,
            sources,
            stats,
        } = &mut cores[recording];
        let mut outlet = ReplayOutlet {
            venue,
            books: sources,
            consolidations: &mut consolidations,
            received_ns,
            emit: &mut emit,
            on_error: &mut |error: &BadFrame| on_error(venue, index, error),
            tally: &mut tally,
            diff_stats: stats,
            on_feed: &mut |_, _, _| {},
            rate_links: &crate::merger::RateLinks::default(),
            bands_bps: &[],
        };
        match &frame.rest_url {
            None => replay_frame(core, frame, received_ns, &mut outlet),
            Some(url) => {
                let asked = venue.snapshots().snapshot_symbol(url);
                let stream = books.iter().position(|&book| {
                    asked
                        .as_ref()
                        .is_some_and(|asked| plan.books[book].symbol.eq_ignore_ascii_case(asked))
                });
                if let Some(stream) = stream {
                    core.on_recorded_snapshot(
                        stream,
                        frame.raw.as_bytes(),
                        received_ns,
                        &mut outlet,
                    );
                }
            }
        }
    }
    for RecordingCore {
        core, books, stats, ..
    } in cores
    {
        for ((book, sync), stats) in books.into_iter().zip(core.into_diff_books()).zip(stats) {
            plan.books[book].sync = sync;
            plan.books[book].stats = stats;
        }
    }
}

/// One recording's core in a diff replay, and per stream of it: its book in the plan, its
/// instrument and source there, its statistics.
struct RecordingCore {
    core: FeedCore,
    books: Vec<usize>,
    sources: Vec<(usize, usize)>,
    stats: Vec<DiffStats>,
}

/// The depths of a diff replay, as the service's settings name them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DiffDepths {
    /// Levels a side per venue and in the merged book (`service.depth`).
    pub depth: usize,
    /// Levels a side kept in each full-depth book (`venues.<name>.max_book_levels`).
    pub max_levels: usize,
    /// Levels a side the recording's snapshots or subscriptions asked for
    /// (`venues.<name>.snapshot_depth`): where a venue cuts its book to that depth, the
    /// replay cuts it the same.
    pub snapshot_depth: usize,
}

/// Diff mode's settings for a replay: the recording holds the snapshots, so nothing is
/// fetched and the snapshot budget is never consulted; every event is buffered; the
/// fixtures hold no audits.
pub(crate) fn replay_settings(depths: DiffDepths) -> DiffSettings {
    DiffSettings {
        rest_url: String::new(),
        snapshot_depth: depths.snapshot_depth,
        max_levels: depths.max_levels,
        max_buffered: usize::MAX,
        policy: SnapshotPolicy {
            weight_per_minute: u32::MAX,
            spacing: std::time::Duration::ZERO,
            retry_initial: std::time::Duration::ZERO,
            retry_max: std::time::Duration::ZERO,
            rate_limited_pause: std::time::Duration::ZERO,
        },
        snapshot_timeout: std::time::Duration::ZERO,
        audit: None,
        whole_book: false,
        full_depth: false,
    }
}
