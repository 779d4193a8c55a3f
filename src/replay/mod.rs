//! `mergebook replay`: recorded frames through the same decoders, consolidation and merge
//! as the live service, deterministically.
//!
//! Two file formats (`tests/fixtures/SOURCES.md`), told apart by the keys of the first line:
//! - plain: one raw frame per line;
//! - timeline: one `{"recv_ts": <unix seconds>, "kind": "ws_recv" | …, "url": …,
//!   "raw": "<frame>"}` object per line, keys in any order; `ws_recv` frames and
//!   `rest_response` bodies are replayed.
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

use crate::book::{BookUpdate, MAX_DEPTH, TopBook};
use crate::config::DiffSettings;
pub use crate::feed::core::BadFrame;
use crate::feed::core::{CoreStream, FeedCore, FeedEvent, FeedOutput, FrameVerdict};
use crate::handoff::VenueFeed;
use crate::merger::InstrumentMerger;
use crate::snapshot::{FetchOutcome, SnapshotPolicy};
use crate::summary::{Summary, VenueState};
use crate::sync::{BookSync, ResyncReason, UpdateOutcome};
use crate::venue::{DecodeError, Message, VenueId};
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
    #[error("{path}:{line}: \"raw\" of a ws_recv_binary entry is not base64")]
    Base64 { path: PathBuf, line: usize },
    #[error(
        "{path}: not a recorded connection's directory (`<venue>-<connection>`, as `[record]` writes them)"
    )]
    NotAConnection { path: PathBuf },
}

#[derive(serde::Deserialize)]
struct TimelineEntry<'a> {
    #[serde(borrow)]
    recv_ts: &'a serde_json::value::RawValue,
    kind: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    raw: String,
}

/// One event of a recording, as replay uses it.
#[derive(Debug, Clone, PartialEq)]
pub enum TimelineEvent {
    /// A connection opened: the reader's core starts over.
    Connected,
    /// A text frame the reader sent (replay passes over it; the simulator serving a
    /// recording knows a connection by its first).
    Sent(String),
    /// A text frame received.
    Text(String),
    /// A binary frame received.
    Binary(Vec<u8>),
    /// A REST snapshot body the reader took, and the URL it answered.
    Rest { url: String, body: String },
}

/// An event and when it was received (Unix ns; for plain files, its line index).
#[derive(Debug, Clone, PartialEq)]
pub struct TimedEvent {
    pub received_ns: u64,
    pub event: TimelineEvent,
}

/// A file's events, and whether its end was cut off (a compressed file still being
/// written, or left by a crash: the events before the cut are kept).
#[derive(Debug, Default)]
pub struct Timeline {
    pub events: Vec<TimedEvent>,
    pub truncated: bool,
}

/// Whether `line` is a timeline entry: a JSON object with `recv_ts` and `kind`,
/// whatever the order of its keys and its spacing.
fn is_timeline_entry(line: &str) -> bool {
    serde_json::from_str::<serde_json::Value>(line).is_ok_and(|value| {
        value
            .as_object()
            .is_some_and(|entry| entry.contains_key("recv_ts") && entry.contains_key("kind"))
    })
}

/// `recv_ts` (Unix seconds, a JSON number) in ns, exactly: the text's digits, not a
/// float's nearest value (an `f64` of today's Unix time resolves a quarter microsecond).
fn unix_seconds_ns(number: &str) -> Option<u64> {
    let (seconds, fraction) = number.split_once('.').unwrap_or((number, ""));
    if seconds.is_empty()
        || !seconds
            .bytes()
            .chain(fraction.bytes())
            .all(|b| b.is_ascii_digit())
    {
        // An exponent, a sign: whatever JSON allows, through a float.
        let seconds: f64 = number.parse().ok()?;
        return (seconds >= 0.0).then(|| (seconds * 1e9).round() as u64);
    }
    let nanos = fraction
        .bytes()
        .chain(std::iter::repeat(b'0'))
        .take(9)
        .fold(0u64, |nanos, digit| nanos * 10 + u64::from(digit - b'0'));
    seconds
        .parse::<u64>()
        .ok()?
        .checked_mul(1_000_000_000)?
        .checked_add(nanos)
}

/// The file's text: zstd-compressed when its name ends in `.zst` (`[record]`'s files).
/// A compressed file cut short yields the lines before the cut.
fn read_text(path: &Path) -> Result<(String, bool), ReplayError> {
    let error = |source| ReplayError::Read {
        path: path.into(),
        source,
    };
    if path.extension().is_none_or(|extension| extension != "zst") {
        return std::fs::read_to_string(path)
            .map(|text| (text, false))
            .map_err(error);
    }
    let file = std::fs::File::open(path).map_err(error)?;
    let mut decoder = zstd::stream::read::Decoder::new(file).map_err(error)?;
    let mut bytes = Vec::new();
    let truncated = match std::io::Read::read_to_end(&mut decoder, &mut bytes) {
        Ok(_) => false,
        Err(_) if !bytes.is_empty() || path.metadata().is_ok_and(|m| m.len() > 0) => {
            let complete = bytes
                .iter()
                .rposition(|&b| b == b'\n')
                .map_or(0, |at| at + 1);
            bytes.truncate(complete);
            true
        }
        Err(source) => return Err(error(source)),
    };
    let text = String::from_utf8(bytes)
        .map_err(|utf8| error(std::io::Error::new(std::io::ErrorKind::InvalidData, utf8)))?;
    Ok((text, truncated))
}

/// Reads a plain file, a timeline, or a compressed timeline. A file is a timeline when its
/// first line is a timeline entry; then every line must be one. Kinds other than
/// `ws_connect`, `ws_sent`, `ws_recv`, `ws_recv_binary` and `rest_response` are passed
/// over (what failed, why a connection ended: for the reader of the file).
pub fn load_timeline(path: &Path) -> Result<Timeline, ReplayError> {
    let (text, truncated) = read_text(path)?;
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .peekable();
    let is_timeline = lines
        .peek()
        .is_some_and(|(_, first)| is_timeline_entry(first));
    if !is_timeline {
        let events = lines
            .map(|(index, line)| TimedEvent {
                received_ns: index as u64,
                event: TimelineEvent::Text(line.to_owned()),
            })
            .collect();
        return Ok(Timeline { events, truncated });
    }
    let mut events = Vec::new();
    for (index, line) in lines {
        let malformed = || ReplayError::Timeline {
            path: path.into(),
            line: index + 1,
        };
        let entry: TimelineEntry = serde_json::from_str(line).map_err(|_| malformed())?;
        let received_ns = unix_seconds_ns(entry.recv_ts.get()).ok_or_else(malformed)?;
        let event = match entry.kind.as_str() {
            "ws_connect" => TimelineEvent::Connected,
            "ws_sent" => TimelineEvent::Sent(entry.raw),
            "ws_recv" => TimelineEvent::Text(entry.raw),
            "ws_recv_binary" => TimelineEvent::Binary(
                base64::Engine::decode(&base64::engine::general_purpose::STANDARD, &entry.raw)
                    .map_err(|_| ReplayError::Base64 {
                        path: path.into(),
                        line: index + 1,
                    })?,
            ),
            "rest_response" => TimelineEvent::Rest {
                url: entry.url,
                body: entry.raw,
            },
            _ => continue,
        };
        events.push(TimedEvent { received_ns, event });
    }
    Ok(Timeline { events, truncated })
}

/// The text frames and REST responses of a plain file or a timeline (what the per-venue
/// replays take).
pub fn load_frames(path: &Path) -> Result<Vec<RecordedFrame>, ReplayError> {
    Ok(load_timeline(path)?
        .events
        .into_iter()
        .filter_map(|TimedEvent { received_ns, event }| {
            let (raw, rest_url) = match event {
                TimelineEvent::Text(raw) => (raw, None),
                TimelineEvent::Rest { url, body } => (body, Some(url)),
                TimelineEvent::Connected | TimelineEvent::Sent(_) | TimelineEvent::Binary(_) => {
                    return None;
                }
            };
            Some(RecordedFrame {
                received_ns,
                raw,
                rest_url,
            })
        })
        .collect())
}

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
            Message::Book { stream } if stream.is_empty() || is_diff_stream(venue, stream) => {
                Some(stream)
            }
            _ => None,
        },
    )
}

fn is_diff_stream(venue: VenueId, stream: &[u8]) -> bool {
    std::str::from_utf8(stream).is_ok_and(|stream| venue.streams().is_diff_stream(stream))
}

/// Checks that `venue`'s recording holds books of `mode`'s kind; if it holds only the
/// other mode's, the error names that mode.
pub fn check_mode(
    venue: VenueId,
    frames: &[RecordedFrame],
    mode: Mode,
) -> Result<(), ModeMismatch> {
    let mut book = TopBook::default();
    let mut update = BookUpdate::default();
    let mut snapshots = frames
        .iter()
        .filter(|frame| is_book_snapshot(venue, frame, &mut book));
    let mut diffs = frames.iter().filter(|frame| {
        frame.rest_url.is_none()
            && diff_event_stream(venue, &frame.raw, MAX_DEPTH, &mut update)
                .is_ok_and(|s| s.is_some())
    });
    let (fits, other_fits) = match mode {
        Mode::Snapshot => (snapshots.next().is_some(), diffs.next().is_some()),
        Mode::Diff => (diffs.next().is_some(), snapshots.next().is_some()),
    };
    match (fits, other_fits, mode) {
        (true, _, _) => Ok(()),
        (false, true, Mode::Snapshot) => Err(ModeMismatch::DiffEvents { venue }),
        (false, true, Mode::Diff) => Err(ModeMismatch::BookSnapshots { venue }),
        (false, false, _) => Err(ModeMismatch::NoBooks {
            venue,
            frames: frames.len(),
        }),
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

/// The order the frames or events of several recordings are replayed in: by receive
/// time (`received_ns` of each), then by recording, then by position. Yields (receive
/// time, recording, index).
fn time_order<'a, T: 'a>(
    recordings: impl Iterator<Item = &'a [T]>,
    received_ns: impl Fn(&T) -> u64,
) -> Vec<(u64, usize, usize)> {
    let received_ns = &received_ns;
    let mut order: Vec<(u64, usize, usize)> = recordings
        .enumerate()
        .flat_map(|(recording, frames)| {
            frames
                .iter()
                .enumerate()
                .map(move |(index, frame)| (received_ns(frame), recording, index))
        })
        .collect();
    order.sort_unstable();
    order
}

/// Replays `inputs` (venue and its frames) for one instrument, calling `emit` with every
/// summary. `on_error` hears of each frame that failed to decode. Each venue's book
/// stream is the first one its recording holds; frames of other streams, of diff
/// streams, and REST responses are passed over, as a service subscribed to that stream
/// would.
pub fn replay(
    inputs: &[(VenueId, Vec<RecordedFrame>)],
    depth: usize,
    mut emit: impl FnMut(&Summary),
    mut on_error: impl FnMut(VenueId, usize, &BadFrame),
) -> ReplayStats {
    let venues: Vec<VenueId> = inputs.iter().map(|(venue, _)| *venue).collect();
    let mut mergers = vec![InstrumentMerger::new(0, depth, &venues)];
    let mut scratch = TopBook::default();
    let mut cores: Vec<FeedCore> = inputs
        .iter()
        .map(|(venue, frames)| {
            let stream = frames
                .iter()
                .filter(|frame| frame.rest_url.is_none())
                .find_map(|frame| {
                    let stream = snapshot_stream(*venue, &frame.raw, &mut scratch)?;
                    Some(String::from_utf8_lossy(stream).into_owned())
                })
                .unwrap_or_default();
            let streams = vec![CoreStream {
                name: stream,
                symbol: String::new(),
                contract_size: None,
            }];
            FeedCore::new(*venue, depth, streams, None, 0)
        })
        .collect();
    let mut stats = ReplayStats::default();
    let mut tally = Tally::default();
    for (received_ns, input, index) in
        time_order(inputs.iter().map(|(_, f)| &f[..]), |f| f.received_ns)
    {
        let (venue, frames) = &inputs[input];
        let frame = &frames[index];
        if frame.rest_url.is_some() {
            continue;
        }
        stats.frames += 1;
        let mut outlet = ReplayOutlet {
            venue: *venue,
            instruments: &[0],
            mergers: &mut mergers,
            received_ns,
            emit: &mut |_, summary: &Summary| emit(summary),
            on_error: &mut |error: &BadFrame| on_error(*venue, index, error),
            tally: &mut tally,
            diff_stats: &mut [],
            on_feed: &mut |_, _, _| {},
        };
        replay_frame(&mut cores[input], frame, received_ns, &mut outlet);
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
    if core.on_frame(frame.raw.as_bytes(), received_ns, outlet) != FrameVerdict::Continue {
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
}

/// Where a replay's cores publish: each stream's instrument, merged and summarized at
/// once (`emit`), as the merger thread would.
struct ReplayOutlet<'a> {
    venue: VenueId,
    /// Per stream of the core, its instrument.
    instruments: &'a [usize],
    mergers: &'a mut [InstrumentMerger],
    received_ns: u64,
    emit: &'a mut dyn FnMut(usize, &Summary),
    on_error: &'a mut dyn FnMut(&BadFrame),
    tally: &'a mut Tally,
    /// Per stream of the core (diff mode).
    diff_stats: &'a mut [DiffStats],
    /// Hears each feed a core publishes, before it is merged: (instrument, venue, feed).
    on_feed: &'a mut dyn FnMut(usize, VenueId, &VenueFeed),
}

impl FeedOutput for ReplayOutlet<'_> {
    fn publish(&mut self, stream: usize, write: impl FnOnce(&mut VenueFeed)) {
        let mut feed = VenueFeed::default();
        write(&mut feed);
        if feed.state == VenueState::Synced {
            self.tally.books += 1;
        }
        let instrument = self.instruments[stream];
        (self.on_feed)(instrument, self.venue, &feed);
        let merger = &mut self.mergers[instrument];
        merger.apply(self.venue, &feed);
        let mut summary = Summary::default();
        merger.summarize(self.received_ns, &mut summary);
        self.tally.summaries += 1;
        (self.emit)(instrument, &summary);
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
    let mut plan = DiffPlan {
        instruments: Vec::new(),
        books: Vec::new(),
    };
    let mut update = BookUpdate::default();
    for (index, recording) in recordings.iter().enumerate() {
        let venue = recording.venue;
        // (symbol, stream as named in the recording), in order of first appearance.
        let mut seen: Vec<(String, String)> = Vec::new();
        let mut unnamed = false;
        for frame in recording.frames.iter().filter(|f| f.rest_url.is_none()) {
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
        let followed = if recording.symbols.is_empty() {
            if seen.is_empty() && unnamed {
                return Err((index, DiffPlanError::UnnamedStream { venue }));
            }
            seen
        } else {
            let mut followed = Vec::new();
            for symbol in &recording.symbols {
                let named = seen.iter().find(|(s, _)| s.eq_ignore_ascii_case(symbol));
                let stream = match named {
                    Some((_, stream)) => stream.clone(),
                    // A raw stream: the recording is of one symbol.
                    None if unnamed => String::new(),
                    None => {
                        let symbol = symbol.clone();
                        return Err((index, DiffPlanError::NoSuchSymbol { venue, symbol }));
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
    }
    Ok(plan)
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
    mut emit: impl FnMut(usize, &Summary),
    mut on_error: impl FnMut(VenueId, usize, &BadFrame),
) {
    let DiffDepths { depth, .. } = depths;
    let mut mergers: Vec<InstrumentMerger> = (0..plan.instruments.len())
        .map(|instrument| {
            let venues: Vec<VenueId> = plan
                .books
                .iter()
                .filter(|book| book.instrument == instrument)
                .map(|book| book.venue)
                .collect();
            InstrumentMerger::new(instrument, depth, &venues)
        })
        .collect();
    let settings = replay_settings(depths);
    let mut cores: Vec<RecordingCore> = recordings
        .iter()
        .enumerate()
        .map(|(index, recording)| {
            let books: Vec<usize> = (0..plan.books.len())
                .filter(|&book| plan.books[book].recording == index)
                .collect();
            let streams = books
                .iter()
                .map(|&book| CoreStream {
                    name: plan.books[book].stream.clone(),
                    symbol: plan.books[book].symbol.clone(),
                    contract_size: None,
                })
                .collect();
            let instruments = books
                .iter()
                .map(|&book| plan.books[book].instrument)
                .collect();
            RecordingCore {
                core: FeedCore::new(recording.venue, depth, streams, Some(&settings), 0),
                stats: vec![DiffStats::default(); books.len()],
                books,
                instruments,
            }
        })
        .collect();
    let mut tally = Tally::default();
    for (received_ns, recording, index) in
        time_order(recordings.iter().map(|r| &r.frames[..]), |f| f.received_ns)
    {
        let venue = recordings[recording].venue;
        let frame = &recordings[recording].frames[index];
        let RecordingCore {
            core,
            books,
            instruments,
            stats,
        } = &mut cores[recording];
        let mut outlet = ReplayOutlet {
            venue,
            instruments,
            mergers: &mut mergers,
            received_ns,
            emit: &mut emit,
            on_error: &mut |error: &BadFrame| on_error(venue, index, error),
            tally: &mut tally,
            diff_stats: stats,
            on_feed: &mut |_, _, _| {},
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
/// instrument, its statistics.
struct RecordingCore {
    core: FeedCore,
    books: Vec<usize>,
    instruments: Vec<usize>,
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
/// fetched and the snapshot budget is never consulted; every event is buffered.
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
    }
}

// ---- the service's own recordings ----

/// One connection's recording, as `[record]` wrote it: its directory's events in time.
#[derive(Debug)]
pub struct ConnectionRecording {
    pub venue: VenueId,
    /// Among the venue's connections (`service::plan_connections`).
    pub connection: usize,
    pub events: Vec<TimedEvent>,
    /// Files whose end was cut off (still being written, or a crash).
    pub truncated_files: usize,
}

/// Reads a recording directory (`record.dir`): every connection's directory, its files
/// in the order they were started.
pub fn load_recording(dir: &Path) -> Result<Vec<ConnectionRecording>, ReplayError> {
    let read_dir = |path: &Path| {
        std::fs::read_dir(path)
            .and_then(|entries| entries.map(|entry| Ok(entry?.path())).collect())
            .map_err(|source| ReplayError::Read {
                path: path.into(),
                source,
            })
    };
    let mut connections: Vec<PathBuf> = read_dir(dir)?;
    connections.retain(|path| path.is_dir());
    connections.sort();
    let mut recordings = Vec::new();
    for path in connections {
        let name = path
            .file_name()
            .and_then(|name| name.to_str())
            .unwrap_or("");
        let (venue, connection) = name
            .rsplit_once('-')
            .and_then(|(venue, index)| Some((VenueId::from_name(venue)?, index.parse().ok()?)))
            .ok_or_else(|| ReplayError::NotAConnection { path: path.clone() })?;
        let mut files: Vec<PathBuf> = read_dir(&path)?;
        files.retain(|file| file.is_file());
        files.sort();
        let mut recording = ConnectionRecording {
            venue,
            connection,
            events: Vec::new(),
            truncated_files: 0,
        };
        for file in files {
            let timeline = load_timeline(&file)?;
            recording.events.extend(timeline.events);
            recording.truncated_files += usize::from(timeline.truncated);
        }
        recordings.push(recording);
    }
    Ok(recordings)
}

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
}

/// The live service's twin: replays a recording made with `config` through a `FeedCore`
/// per connection, built as the service builds its readers' (`service::plan_connections`,
/// each venue's mode and settings), and an `InstrumentMerger` per instrument. Events of
/// all connections in time order; a connection opened starts its core over, as the reader
/// does; a REST snapshot goes to the stream whose symbol it names. After every feed a
/// core publishes, `on_feed(instrument, venue, feed)`, then the instrument's summary,
/// `emit` (stamped with the event's receive time; no venue is evicted as stale: the
/// clock of a replay is the recording's). `before(received_ns)` comes before each event:
/// it paces the replay, and `false` stops it.
pub fn replay_recording(
    config: &crate::config::Config,
    recordings: &[ConnectionRecording],
    mut before: impl FnMut(u64) -> bool,
    mut emit: impl FnMut(&Summary),
    mut on_feed: impl FnMut(usize, VenueId, &VenueFeed),
    mut on_error: impl FnMut(VenueId, &BadFrame),
) -> Result<RecordingStats, RecordingMismatch> {
    let plan = crate::service::plan_connections(config);
    let mut mergers: Vec<InstrumentMerger> = config
        .instruments
        .iter()
        .enumerate()
        .map(|(index, instrument)| {
            let venues: Vec<VenueId> = instrument.symbols.iter().map(|(v, _)| *v).collect();
            let mut merger = InstrumentMerger::new(index, config.depth, &venues);
            for venue in config.venues.iter().filter(|v| v.allow_one_sided) {
                merger.allow_one_sided(venue.venue);
            }
            merger
        })
        .collect();
    let mut cores = Vec::new();
    for recording in recordings {
        let (venue, connection) = (recording.venue, recording.connection);
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
            })
            .collect();
        let diff = match &config.venues[planned.venue_config].mode {
            crate::config::FeedMode::Snapshot => None,
            crate::config::FeedMode::Diff(settings) => Some(settings),
        };
        let first_ns = recording
            .events
            .first()
            .map_or(0, |event| event.received_ns);
        let core = FeedCore::new(venue, config.depth, streams, diff, first_ns);
        let instruments: Vec<usize> = planned.streams.iter().map(|s| s.instrument).collect();
        let symbols: Vec<&str> = planned.streams.iter().map(|s| s.symbol.as_str()).collect();
        cores.push((core, instruments, symbols));
    }
    let mut tally = Tally::default();
    let mut events = 0;
    let order = time_order(recordings.iter().map(|r| &r.events[..]), |e| e.received_ns);
    for (received_ns, recording, index) in order {
        if !before(received_ns) {
            break;
        }
        events += 1;
        let venue = recordings[recording].venue;
        let (core, instruments, symbols) = &mut cores[recording];
        let mut outlet = ReplayOutlet {
            venue,
            instruments,
            mergers: &mut mergers,
            received_ns,
            emit: &mut |_, summary: &Summary| emit(summary),
            on_error: &mut |error: &BadFrame| on_error(venue, error),
            tally: &mut tally,
            diff_stats: &mut [],
            on_feed: &mut on_feed,
        };
        match &recordings[recording].events[index].event {
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
                let asked = venue.snapshots().snapshot_symbol(url);
                let stream = symbols.iter().position(|symbol| {
                    asked
                        .as_ref()
                        .is_some_and(|asked| symbol.eq_ignore_ascii_case(asked))
                });
                if let Some(stream) = stream {
                    core.on_recorded_snapshot(stream, body.as_bytes(), received_ns, &mut outlet);
                }
            }
        }
    }
    Ok(RecordingStats {
        events,
        books: tally.books,
        decode_errors: tally.decode_errors,
        summaries: tally.summaries,
    })
}

/// A time given on the command line, in Unix ns: Unix seconds (`1764251000.5`) or a UTC
/// time, `2026-11-27T14:03:00Z` (fractions of a second allowed).
pub fn parse_time(text: &str) -> Option<u64> {
    if let Some(ns) = unix_seconds_ns(text) {
        return Some(ns);
    }
    let text = text
        .strip_suffix('Z')
        .or_else(|| text.strip_suffix("+00:00"))?;
    let (date, time) = text.split_once(['T', ' '])?;
    let mut date = date.splitn(3, '-').map(str::parse::<i64>);
    let (year, month, day) = (date.next()?.ok()?, date.next()?.ok()?, date.next()?.ok()?);
    let (clock, fraction) = time.split_once('.').unwrap_or((time, ""));
    let mut clock = clock.splitn(3, ':').map(str::parse::<u64>);
    let (hour, minute, second) = (
        clock.next()?.ok()?,
        clock.next()?.ok()?,
        clock.next()?.ok()?,
    );
    let valid = (1..=12).contains(&month)
        && (1..=31).contains(&day)
        && hour < 24
        && minute < 60
        && second < 61;
    if !valid || year < 1970 {
        return None;
    }
    // Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let year_of_era = y - era * 400;
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    let days = u64::try_from(era * 146_097 + day_of_era - 719_468).ok()?;
    let seconds = days * 86_400 + hour * 3600 + minute * 60 + second;
    let within_second = unix_seconds_ns(&format!("0.{fraction}"))?;
    Some(seconds * 1_000_000_000 + within_second)
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

#[cfg(test)]
mod tests;
