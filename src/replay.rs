//! `mergebook replay`: recorded frames through the same decoders, consolidation and merge
//! as the live service, deterministically.
//!
//! Two file formats (see `../shared/fixtures/SOURCES.md`):
//! - plain: one raw frame per line;
//! - session timeline: one `{"recv_ts": <unix seconds>, "kind": "ws_recv" | …, "url": …,
//!   "raw": "<frame>"}` object per line; only `ws_recv` frames are replayed.
//!
//! Two modes, as in the service: snapshot streams (`replay`: every book frame replaces the
//! venue's book) and diff streams (`replay_diff`: one symbol's diff events a venue, joined
//! to the REST snapshots recorded in the timeline — or given apart for per-pair files —
//! by the same rules as the live reader, `sync.rs`).
//!
//! Frames of all venues are replayed in time order (timeline `recv_ts`; for plain files
//! the line number, so plain files interleave line by line), ties broken by the order of
//! the `--venue` arguments. Every book frame, and every frame that changes a venue's
//! state, produces one summary.

use crate::book::BookUpdate;
use crate::merger::{InstrumentMerger, VenueFeed};
use crate::summary::{Summary, VenueState};
use crate::sync::{BookSync, SnapshotOutcome, UpdateOutcome};
use crate::venue::{Message, VenueId};
use std::path::{Path, PathBuf};

/// One recorded frame and when it was received (ns; for plain files, its line index).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedFrame {
    pub received_ns: u64,
    pub raw: String,
    /// For a REST response (a snapshot), the URL it answered; `None` for a WebSocket frame.
    pub rest_url: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(
        "{path}:{line}: a timeline entry needs \"recv_ts\" (number), \"kind\" and \"raw\" (strings)"
    )]
    Timeline { path: PathBuf, line: usize },
}

#[derive(serde::Deserialize)]
struct TimelineEntry {
    recv_ts: f64,
    kind: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    raw: String,
}

/// Reads a plain or timeline file. A file is a timeline when its first line is a JSON
/// object with a `recv_ts` key.
pub fn load_frames(path: &Path) -> Result<Vec<RecordedFrame>, ReplayError> {
    let text = std::fs::read_to_string(path).map_err(|source| ReplayError::Read {
        path: path.into(),
        source,
    })?;
    let lines = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty());
    let is_timeline = text.trim_start().starts_with("{\"recv_ts\"");
    if !is_timeline {
        return Ok(lines
            .map(|(index, line)| RecordedFrame {
                received_ns: index as u64,
                raw: line.to_owned(),
                rest_url: None,
            })
            .collect());
    }
    let mut frames = Vec::new();
    for (index, line) in lines {
        let entry: TimelineEntry =
            serde_json::from_str(line).map_err(|_| ReplayError::Timeline {
                path: path.into(),
                line: index + 1,
            })?;
        let rest_url = match entry.kind.as_str() {
            "ws_recv" => None,
            "rest_response" => Some(entry.url),
            _ => continue,
        };
        frames.push(RecordedFrame {
            received_ns: (entry.recv_ts * 1e9).round() as u64,
            raw: entry.raw,
            rest_url,
        });
    }
    Ok(frames)
}

/// Counts of what a replay saw.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct ReplayStats {
    pub books: u64,
    pub decode_errors: u64,
    pub other_messages: u64,
    pub summaries: u64,
}

/// Replays `inputs` (venue and its frames) for one instrument, calling `emit` with every
/// summary. `on_error` hears of each frame that failed to decode.
pub fn replay(
    inputs: &[(VenueId, Vec<RecordedFrame>)],
    depth: usize,
    mut emit: impl FnMut(&Summary),
    mut on_error: impl FnMut(VenueId, usize, &crate::venue::DecodeError),
) -> ReplayStats {
    let venues: Vec<VenueId> = inputs.iter().map(|(venue, _)| *venue).collect();
    let mut merger = InstrumentMerger::new(0, depth, &venues);
    let mut order: Vec<(u64, usize, usize)> = inputs
        .iter()
        .enumerate()
        .flat_map(|(input, (_, frames))| {
            frames
                .iter()
                .enumerate()
                .map(move |(i, f)| (f.received_ns, input, i))
        })
        .collect();
    order.sort_unstable();

    let mut stats = ReplayStats::default();
    let mut feed = VenueFeed::default();
    let mut summary = Summary::default();
    for (received_ns, input, index) in order {
        let (venue, frames) = &inputs[input];
        if frames[index].rest_url.is_some() {
            continue; // snapshot streams need no REST snapshot
        }
        let changed = match venue.decode(frames[index].raw.as_bytes(), depth, &mut feed.book) {
            Ok(Message::Book { .. }) => {
                stats.books += 1;
                feed.state = VenueState::Synced;
                feed.book.received_ns = received_ns;
                true
            }
            Ok(_) => {
                stats.other_messages += 1;
                false
            }
            Err(error) => {
                stats.decode_errors += 1;
                on_error(*venue, index, &error);
                feed.state = VenueState::OutOfSync;
                true
            }
        };
        if changed {
            merger.apply(*venue, &feed);
            merger.summarize(received_ns, &mut summary);
            stats.summaries += 1;
            emit(&summary);
        }
    }
    stats
}

/// One venue's input to a diff-mode replay: its recording and the symbol to follow.
#[derive(Debug, Clone)]
pub struct DiffInput {
    pub venue: VenueId,
    pub symbol: String,
    pub frames: Vec<RecordedFrame>,
}

/// What a diff-mode replay saw on one venue.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct DiffStats {
    pub events: u64,
    pub applied: u64,
    /// Events dropped as already contained in the snapshot or book.
    pub dropped: u64,
    pub gaps: u64,
    pub crossings: u64,
    pub snapshots: u64,
    pub snapshots_too_old: u64,
    pub decode_errors: u64,
}

/// Each venue's final state after a diff-mode replay.
pub struct DiffOutcome {
    pub venue: VenueId,
    pub stats: DiffStats,
    pub sync: BookSync,
}

/// Inserts a separately recorded snapshot body (`--snapshot`, for per-pair files) right
/// after the first diff event of `symbol`'s stream: where a live reader asks for it.
pub fn insert_snapshot(
    venue: VenueId,
    symbol: &str,
    frames: &mut Vec<RecordedFrame>,
    snapshot: String,
) {
    let stream = venue.diff_stream_name(symbol);
    let mut update = BookUpdate::default();
    let first_event = frames.iter().position(|frame| {
        matches!(
            venue.decode_diff(frame.raw.as_bytes(), usize::MAX, &mut update),
            Ok(Message::Book { stream: name }) if name.is_empty() || name == stream.as_bytes()
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
            rest_url: Some(venue.snapshot_url("", symbol, 0)),
        },
    );
}

/// Replays diff streams: per venue, `symbol`'s diff events and the REST snapshots for it,
/// in time order, through [`BookSync`], merging the synced venues' top `depth` into a
/// summary after every change.
pub fn replay_diff(
    inputs: &[DiffInput],
    depth: usize,
    max_levels: usize,
    mut emit: impl FnMut(&Summary),
    mut on_error: impl FnMut(VenueId, usize, &crate::venue::DecodeError),
) -> Vec<DiffOutcome> {
    let venues: Vec<VenueId> = inputs.iter().map(|input| input.venue).collect();
    let mut merger = InstrumentMerger::new(0, depth, &venues);
    let mut outcomes: Vec<DiffOutcome> = inputs
        .iter()
        .map(|input| DiffOutcome {
            venue: input.venue,
            stats: DiffStats::default(),
            sync: BookSync::new(input.venue.sequence_rule(), max_levels, usize::MAX),
        })
        .collect();
    let streams: Vec<String> = inputs
        .iter()
        .map(|input| input.venue.diff_stream_name(&input.symbol))
        .collect();
    let mut order: Vec<(u64, usize, usize)> = inputs
        .iter()
        .enumerate()
        .flat_map(|(input, recorded)| {
            recorded
                .frames
                .iter()
                .enumerate()
                .map(move |(i, f)| (f.received_ns, input, i))
        })
        .collect();
    order.sort_unstable();

    let mut update = BookUpdate::default();
    let mut feed = VenueFeed::default();
    let mut summary = Summary::default();
    for (received_ns, input, index) in order {
        let DiffInput {
            venue,
            symbol,
            frames,
        } = &inputs[input];
        let frame = &frames[index];
        let DiffOutcome { stats, sync, .. } = &mut outcomes[input];
        let was_synced = sync.is_synced();
        let mut book_changed = false;
        if let Some(url) = &frame.rest_url {
            let asked = venue.snapshot_symbol(url);
            if !asked.is_some_and(|asked| asked.eq_ignore_ascii_case(symbol)) {
                continue;
            }
            stats.snapshots += 1;
            match venue.decode_snapshot(frame.raw.as_bytes(), max_levels, &mut update) {
                Ok(()) => match sync.on_snapshot(&update) {
                    SnapshotOutcome::Synced { applied, dropped } => {
                        stats.applied += applied as u64;
                        stats.dropped += dropped as u64;
                        book_changed = true;
                    }
                    SnapshotOutcome::TooOld => stats.snapshots_too_old += 1,
                    SnapshotOutcome::Crossed => stats.crossings += 1,
                    SnapshotOutcome::Unexpected => {}
                },
                Err(error) => {
                    stats.decode_errors += 1;
                    on_error(*venue, index, &error);
                }
            }
        } else {
            match venue.decode_diff(frame.raw.as_bytes(), max_levels, &mut update) {
                Ok(Message::Book { stream })
                    if stream.is_empty() || stream == streams[input].as_bytes() =>
                {
                    stats.events += 1;
                    match sync.on_update(&update) {
                        UpdateOutcome::Applied => {
                            stats.applied += 1;
                            book_changed = true;
                        }
                        UpdateOutcome::Stale => stats.dropped += 1,
                        UpdateOutcome::Gap => stats.gaps += 1,
                        UpdateOutcome::Crossed => stats.crossings += 1,
                        UpdateOutcome::Buffered { .. } => {}
                    }
                }
                Ok(_) => {}
                Err(error) => {
                    stats.decode_errors += 1;
                    on_error(*venue, index, &error);
                    sync.reset();
                }
            }
        }
        if book_changed || was_synced != sync.is_synced() {
            if sync.is_synced() {
                feed.state = VenueState::Synced;
                sync.write_top(depth, received_ns, &mut feed.book);
            } else {
                feed.state = VenueState::OutOfSync;
            }
            merger.apply(*venue, &feed);
            merger.summarize(received_ns, &mut summary);
            emit(&summary);
        }
    }
    outcomes
}
