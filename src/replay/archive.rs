//! Venues' files (market-data archives or single-file timelines) replayed with the
//! service's configuration: its instruments, their units and conversions, the depth and
//! each venue's mode, as the live service would have merged the same messages.

use super::{ReplayOutlet, Tally, TimeMerge, configured_consolidations, replay_frame};
pub use crate::feed::core::BadFrame;
use crate::feed::core::{CoreStream, FeedCore};
use crate::merger::summary::Summary;
use crate::merger::{Consolidation, RateLinks};
use crate::record::timeline::RecordedFrame;
use crate::venue::VenueId;

use super::recording::{RecordingStats, stream_of};

/// Why venues' files cannot be replayed with a configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ArchiveMismatch {
    #[error(
        "the configuration follows no {venue} book: add an instrument with a {venue} symbol, or leave its file out"
    )]
    VenueNotConfigured { venue: VenueId },
    #[error(
        "{venue} is given twice: give one file a venue (a venue's days joined in time order, `cat day1.gz day2.gz`, read as one)"
    )]
    VenueTwice { venue: VenueId },
}

/// One venue's file in a configured replay.
pub struct VenueFile<I> {
    pub venue: VenueId,
    /// The diff streams the file holds, by symbol (`DiffPlan::add_recording` finds them):
    /// a configured book of one of these symbols follows the file's stream (Binance's
    /// `@depth` or `@depth@100ms`, whichever was archived); any other book, the stream
    /// the service would subscribe.
    pub diff_streams: Vec<(String, String)>,
    /// Its frames, in time order.
    pub frames: I,
}

/// One venue's core and, per stream of it, its instrument and source.
struct VenueCore {
    venue: VenueId,
    core: FeedCore,
    books: Vec<(usize, usize)>,
    symbols: Vec<String>,
}

/// The consolidated books `config` makes of venues' `files`, as the live service would
/// have published them: each file through one `FeedCore` of its venue with every stream
/// the configuration follows there (its mode and settings), a `Consolidation` per
/// instrument (units, conversions, depth). Frames of all files in receive-time order; a
/// REST snapshot goes to the stream whose symbol it names. `before(received_ns,
/// consolidations)` comes before each frame with the books as they stand (it paces and
/// samples; `false` stops the replay); `emit` hears each summary, `on_error(venue, frame,
/// error)` each frame refused. Returns the statistics and the consolidations as the replay
/// left them.
pub fn replay_venue_files<I: Iterator<Item = RecordedFrame>>(
    config: &crate::config::Config,
    files: Vec<VenueFile<I>>,
    mut before: impl FnMut(u64, &[Consolidation]) -> bool,
    mut emit: impl FnMut(&Summary),
    mut on_error: impl FnMut(VenueId, usize, &BadFrame),
) -> Result<(RecordingStats, Vec<Consolidation>), ArchiveMismatch> {
    let plan = crate::service::plan_connections(config);
    let mut consolidations = configured_consolidations(config);
    let rate_links = RateLinks::new(config);
    let mut cores = Vec::new();
    let mut sources = Vec::new();
    for file in files {
        let venue = file.venue;
        if cores.iter().any(|core: &VenueCore| core.venue == venue) {
            return Err(ArchiveMismatch::VenueTwice { venue });
        }
        let connections = plan.iter().filter(|planned| planned.venue == venue);
        let planned: Vec<_> = connections.flat_map(|c| &c.streams).collect();
        let Some(first) = plan.iter().find(|planned| planned.venue == venue) else {
            return Err(ArchiveMismatch::VenueNotConfigured { venue });
        };
        let streams = planned
            .iter()
            .map(|stream| {
                let archived = file
                    .diff_streams
                    .iter()
                    .find(|(symbol, _)| symbol.eq_ignore_ascii_case(&stream.symbol));
                CoreStream {
                    name: archived.map_or_else(|| stream.name.clone(), |(_, name)| name.clone()),
                    symbol: stream.symbol.clone(),
                    contract_size: stream.contract_size,
                    unit: stream.unit,
                }
            })
            .collect();
        let diff = config.venues[first.venue_config].mode.diff_settings();
        let mut frames = file.frames.peekable();
        let first_ns = frames.peek().map_or(0, |frame| frame.received_ns);
        sources.push(frames);
        cores.push(VenueCore {
            venue,
            // Not `connected`: an archive holds no subscription of ours to await, and
            // its books are used from their first message.
            core: FeedCore::new(venue, config.depth, streams, diff, first_ns),
            books: planned.iter().map(|s| (s.instrument, s.source)).collect(),
            symbols: planned.iter().map(|s| s.symbol.clone()).collect(),
        });
    }
    let mut tally = Tally::default();
    let mut events = 0;
    for (received_ns, file, index, frame) in
        TimeMerge::new(sources, |frame: &RecordedFrame| frame.received_ns)
    {
        if !before(received_ns, &consolidations) {
            break;
        }
        events += 1;
        let VenueCore {
            venue,
            core,
            books,
            symbols,
        } = &mut cores[file];
        let venue = *venue;
        let mut outlet = ReplayOutlet {
            venue,
            books,
            consolidations: &mut consolidations,
            received_ns,
            emit: &mut |_, summary: &Summary| emit(summary),
            on_error: &mut |error: &BadFrame| on_error(venue, index, error),
            tally: &mut tally,
            diff_stats: &mut [],
            on_feed: &mut |_, _, _| {},
            rate_links: &rate_links,
            bands_bps: &config.bands_bps,
        };
        match &frame.rest_url {
            None => replay_frame(core, &frame, received_ns, &mut outlet),
            Some(url) => {
                if let Some(stream) = stream_of(venue, symbols, url) {
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
    let stats = tally.recording_stats(events);
    Ok((stats, consolidations))
}
