//! `mergebook replay`: recorded frames through the same decoders, consolidation and merge
//! as the live service, deterministically.
//!
//! Two file formats (see `../shared/fixtures/SOURCES.md`):
//! - plain: one raw frame per line;
//! - session timeline: one `{"recv_ts": <unix seconds>, "kind": "ws_recv" | …, "url": …,
//!   "raw": "<frame>"}` object per line; only `ws_recv` frames are replayed.
//!
//! Frames of all venues are replayed in time order (timeline `recv_ts`; for plain files
//! the line number, so plain files interleave line by line), ties broken by the order of
//! the `--venue` arguments. Every book frame, and every frame that changes a venue's
//! state, produces one summary.

use crate::merger::{InstrumentMerger, VenueFeed};
use crate::summary::{Summary, VenueState};
use crate::venue::{Message, VenueId};
use std::path::{Path, PathBuf};

/// One recorded frame and when it was received (ns; for plain files, its line index).
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedFrame {
    pub received_ns: u64,
    pub raw: String,
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
        if entry.kind == "ws_recv" {
            frames.push(RecordedFrame {
                received_ns: (entry.recv_ts * 1e9).round() as u64,
                raw: entry.raw,
            });
        }
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
