//! The service's own recordings replayed: its twin, connection by connection.

use super::{ReplayOutlet, Tally, TimeMerge, configured_consolidations};
pub use crate::feed::core::BadFrame;
use crate::feed::core::audit::AuditOutcome;
use crate::feed::core::{CoreStream, FeedCore};
use crate::feed::handoff::VenueFeed;
use crate::merger::summary::Summary;
use crate::merger::{Consolidation, RateLinks};
use crate::record::timeline::{ConnectionRecording, TimedEvent, TimelineEvent};
use crate::venue::VenueId;

/// Why a recording cannot be replayed with a configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RecordingMismatch {
    #[error(
        "it holds connection {connection} of {venue}, which this configuration does not open: replay it with the configuration it was recorded with"
    )]
    UnknownConnection { venue: VenueId, connection: usize },
}

/// What a replay of the service's recording saw.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct RecordingStats {
    /// Events replayed (connections opened, frames, REST snapshots).
    pub events: u64,
    pub books: u64,
    pub decode_errors: u64,
    pub summaries: u64,
    /// The audits the recording holds, by how they ended in the replay.
    pub audits: AuditCounts,
}

/// Audits by outcome.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct AuditCounts {
    pub matched: u64,
    pub mismatched: u64,
    pub inconclusive: u64,
    pub failed: u64,
}

impl AuditCounts {
    pub(super) fn count(&mut self, outcome: AuditOutcome) {
        *match outcome {
            AuditOutcome::Match => &mut self.matched,
            AuditOutcome::Mismatch => &mut self.mismatched,
            AuditOutcome::Inconclusive => &mut self.inconclusive,
            AuditOutcome::Failed => &mut self.failed,
        } += 1;
    }
}

/// The live service's twin: replays a recording made with `config` through a `FeedCore`
/// per connection, built as the service builds its readers' (`service::plan_connections`,
/// each venue's mode and settings), and a `Consolidation` per instrument. Events of
/// all connections in time order; a connection opened starts its core over, as the reader
/// does; a REST snapshot goes to the stream whose symbol it names. After every feed a
/// core publishes, `on_feed(instrument, venue, feed)`, then the instrument's summary,
/// `emit` (stamped with the event's receive time; no venue is evicted as stale: the
/// clock of a replay is the recording's). `before(received_ns)` comes before each event:
/// it paces the replay, and `false` stops it.
pub fn replay_recording(
    config: &crate::config::Config,
    recordings: &[ConnectionRecording],
    before: impl FnMut(u64) -> bool,
    emit: impl FnMut(&Summary),
    on_feed: impl FnMut(usize, VenueId, &VenueFeed),
    on_error: impl FnMut(VenueId, &BadFrame),
) -> Result<RecordingStats, RecordingMismatch> {
    let connections = recordings
        .iter()
        .map(|recording| {
            let events = recording.events.iter().cloned();
            (recording.venue, recording.connection, events)
        })
        .collect();
    let mut before = before;
    replay_connections(
        config,
        connections,
        |received_ns, _| before(received_ns),
        emit,
        on_feed,
        on_error,
    )
}

/// [`replay_recording`] of connections read as they are replayed (`timeline::open_recording`):
/// each connection's venue, index and events, in its own time order. `before` also sees
/// the instruments' consolidations as they stand before the event (what a sample of
/// each source's book reads: `BookSampler`).
pub fn replay_connections<E: Iterator<Item = TimedEvent>>(
    config: &crate::config::Config,
    connections: Vec<(VenueId, usize, E)>,
    mut before: impl FnMut(u64, &[Consolidation]) -> bool,
    mut emit: impl FnMut(&Summary),
    mut on_feed: impl FnMut(usize, VenueId, &VenueFeed),
    mut on_error: impl FnMut(VenueId, &BadFrame),
) -> Result<RecordingStats, RecordingMismatch> {
    let plan = crate::service::plan_connections(config);
    let mut consolidations = configured_consolidations(config);
    let rate_links = RateLinks::new(config);
    let mut cores = Vec::new();
    let mut sources = Vec::new();
    for (venue, connection, events) in connections {
        let mut events = events.peekable();
        let planned = plan
            .iter()
            .find(|planned| planned.venue == venue && planned.index == connection)
            .ok_or(RecordingMismatch::UnknownConnection { venue, connection })?;
        let streams = planned
            .streams
            .iter()
            .map(|stream| CoreStream {
                name: stream.name.clone(),
                symbol: stream.symbol.clone(),
                contract_size: stream.contract_size,
                unit: stream.unit,
            })
            .collect();
        let diff = config.venues[planned.venue_config].mode.diff_settings();
        let first_ns = events.peek().map_or(0, |event| event.received_ns);
        sources.push(events);
        let core = FeedCore::new(venue, config.depth, streams, diff, first_ns);
        let books: Vec<(usize, usize)> = planned
            .streams
            .iter()
            .map(|s| (s.instrument, s.source))
            .collect();
        let symbols: Vec<&str> = planned.streams.iter().map(|s| s.symbol.as_str()).collect();
        cores.push((venue, core, books, symbols));
    }
    let mut tally = Tally::default();
    let mut events = 0;
    let order = TimeMerge::new(sources, |event: &TimedEvent| event.received_ns);
    for (received_ns, recording, _, event) in order {
        if !before(received_ns, &consolidations) {
            break;
        }
        events += 1;
        let (venue, core, books, symbols) = &mut cores[recording];
        let venue = *venue;
        let mut outlet = ReplayOutlet {
            venue,
            books,
            consolidations: &mut consolidations,
            received_ns,
            emit: &mut |_, summary: &Summary| emit(summary),
            on_error: &mut |error: &BadFrame| on_error(venue, error),
            tally: &mut tally,
            diff_stats: &mut [],
            on_feed: &mut on_feed,
            rate_links: &rate_links,
            bands_bps: &config.bands_bps,
        };
        // An audit settled by now is compared before this event, as the service's timer
        // compared it.
        core.finish_audit(received_ns, &mut outlet);
        match &event.event {
            TimelineEvent::Connected => {
                core.connecting(&mut outlet);
                core.connected(received_ns, &mut outlet);
            }
            TimelineEvent::Sent(_) => {}
            // The connection's own events say when it reconnected: a frame's verdict is
            // not followed here.
            TimelineEvent::Text(raw) => {
                core.on_frame(raw.as_bytes(), received_ns, &mut outlet);
            }
            TimelineEvent::Binary(raw) => {
                core.on_binary_frame(raw, received_ns, &mut outlet);
            }
            TimelineEvent::Rest { url, body } => {
                if let Some(stream) = stream_of(venue, symbols, url) {
                    core.on_recorded_snapshot(stream, body.as_bytes(), received_ns, &mut outlet);
                }
            }
            TimelineEvent::AuditRequest { url } => {
                if let Some(stream) = stream_of(venue, symbols, url) {
                    core.on_recorded_audit_request(stream);
                }
            }
            TimelineEvent::Audit { url, body } => {
                if let Some(stream) = stream_of(venue, symbols, url) {
                    core.on_recorded_audit(stream, body.as_bytes(), received_ns, &mut outlet);
                }
            }
        }
    }
    Ok(tally.recording_stats(events))
}

/// The stream among `symbols` whose REST snapshot `url` asks for.
pub(super) fn stream_of(venue: VenueId, symbols: &[impl AsRef<str>], url: &str) -> Option<usize> {
    let asked = venue.snapshots().snapshot_symbol(url)?;
    symbols
        .iter()
        .position(|symbol| symbol.as_ref().eq_ignore_ascii_case(&asked))
}

/// Paces a replay (`replay_recording`'s `before`): stops after `until_ns`, and at `speed`
/// times the recorded pace sleeps until each event's time has come.
pub struct Pace {
    until_ns: Option<u64>,
    speed: Option<f64>,
    /// The first event's time, and when it was replayed.
    start: Option<(u64, std::time::Instant)>,
}

impl Pace {
    pub fn new(until_ns: Option<u64>, speed: Option<f64>) -> Pace {
        Pace {
            until_ns,
            speed,
            start: None,
        }
    }

    /// Whether the event received at `received_ns` is replayed; first waits for its time.
    pub fn wait_for(&mut self, received_ns: u64) -> bool {
        if self.until_ns.is_some_and(|until| received_ns > until) {
            return false;
        }
        let Some(speed) = self.speed else {
            return true;
        };
        let (first_ns, started) = *self
            .start
            .get_or_insert_with(|| (received_ns, std::time::Instant::now()));
        let due = started
            + std::time::Duration::from_secs_f64(
                received_ns.saturating_sub(first_ns) as f64 * 1e-9 / speed,
            );
        std::thread::sleep(due.saturating_duration_since(std::time::Instant::now()));
        true
    }
}
