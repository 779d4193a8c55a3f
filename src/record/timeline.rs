//! The recordings' file formats, read: plain files, timelines and recording
//! directories (what `record/` writes, what replay and the simulator's playback read).
//!
//! Two file formats, told apart by the keys of the first line:
//! - plain: one raw frame per line;
//! - timeline: one `{"recv_ts": <unix seconds>, "kind": "ws_recv" | …, "url": …,
//!   "raw": "<frame>"}` object per line, keys in any order; `ws_recv` frames,
//!   `rest_response` bodies and audits (`rest_audit_request`, `rest_audit`) are replayed.
//!   `[record]` writes it zstd-compressed.

use crate::venue::VenueId;
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
pub enum TimelineError {
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
    #[error(
        "{path}: {count} line(s) without a receive time before the message (the first: line {first})"
    )]
    UnreadableLines {
        path: PathBuf,
        count: usize,
        first: usize,
    },
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
    /// An audit's REST snapshot asked for: the audit of the book `url` names starts.
    AuditRequest { url: String },
    /// An audit's REST snapshot body, and the URL it answered.
    Audit { url: String, body: String },
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

/// Whether `line` is a market-data archive's (Tardis.dev's exchange-native files): the
/// local receive time in UTC (`2019-06-01T00:03:03.1238784Z`), a space, the message as the
/// venue sent it.
fn is_archive_line(line: &str) -> bool {
    archive_line(line).is_some()
}

/// An archive line's receive time (Unix ns) and message.
fn archive_line(line: &str) -> Option<(u64, &str)> {
    let (time, message) = line.split_once(' ')?;
    let shaped = time.len() >= 20 && time.as_bytes()[10] == b'T' && time.ends_with('Z');
    Some((parse_time(time).filter(|_| shaped)?, message))
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

/// How a file's lines are read: told by its first line that is not empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    /// One raw frame a line, stamped with its line's index.
    Plain,
    /// `{"recv_ts","kind","url","raw"}` a line.
    Timeline,
    /// A market-data archive's: a receive time, a space, the message.
    Archive,
}

/// The bytes read from a replay's files so far, shared by their readers.
pub type BytesRead = std::sync::Arc<std::sync::atomic::AtomicU64>;

/// A file whose reads are added to a [`BytesRead`].
struct Counted<R> {
    inner: R,
    read: BytesRead,
}

impl<R: std::io::Read> std::io::Read for Counted<R> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let read = self.inner.read(buffer)?;
        (self.read).fetch_add(read as u64, std::sync::atomic::Ordering::Relaxed);
        Ok(read)
    }
}

/// How many of an archive's unreadable lines are named (`TimelineReader::unreadable`).
const UNREADABLE_LINES_NAMED: usize = 10;

/// A file's events, read a line at a time: memory for one line, whatever the file's size.
/// zstd-compressed when its name ends in `.zst` (`[record]`'s files), gzip-compressed when
/// it starts with gzip's magic bytes (market-data archives). A compressed file cut short
/// yields the lines before the cut ([`TimelineReader::truncated`]).
pub struct TimelineReader {
    path: PathBuf,
    lines: Box<dyn std::io::BufRead + Send>,
    /// Compressed by zstd: an error reading it is a cut (a file being written, a crash).
    zstd: bool,
    format: Option<Format>,
    /// Lines read so far.
    line: usize,
    text: String,
    truncated: bool,
    unreadable: (usize, Vec<usize>),
    done: bool,
}

impl TimelineReader {
    pub fn open(path: &Path) -> Result<TimelineReader, TimelineError> {
        TimelineReader::open_counted(path, BytesRead::default())
    }

    /// [`TimelineReader::open`], adding the bytes it reads from the file (compressed, where
    /// it is) to `read`: a replay's progress.
    pub fn open_counted(path: &Path, read: BytesRead) -> Result<TimelineReader, TimelineError> {
        use std::io::{BufRead, BufReader};
        let error = |source| TimelineError::Read {
            path: path.into(),
            source,
        };
        let zstd = path.extension().is_some_and(|extension| extension == "zst");
        let file = Counted {
            inner: std::fs::File::open(path).map_err(error)?,
            read,
        };
        let mut file = BufReader::new(file);
        let lines: Box<dyn BufRead + Send> = if zstd {
            let decoder = zstd::stream::read::Decoder::new(file.into_inner()).map_err(error)?;
            Box::new(BufReader::new(decoder))
        } else if file.fill_buf().map_err(error)?.starts_with(&[0x1f, 0x8b]) {
            Box::new(BufReader::new(flate2::bufread::MultiGzDecoder::new(file)))
        } else {
            Box::new(file)
        };
        Ok(TimelineReader {
            path: path.into(),
            lines,
            zstd,
            format: None,
            line: 0,
            text: String::new(),
            truncated: false,
            unreadable: (0, Vec::new()),
            done: false,
        })
    }

    /// Whether the file's end was cut off (the events before the cut were read).
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// An archive's lines read so far that could not be read (no receive time before the
    /// message), left out: how many, and the numbers (from 1) of the first few.
    pub fn unreadable(&self) -> (usize, &[usize]) {
        (self.unreadable.0, &self.unreadable.1)
    }

    /// The next line into `self.text`, without its line break; `false` at the end.
    fn next_line(&mut self) -> Result<bool, TimelineError> {
        self.text.clear();
        match self.lines.read_line(&mut self.text) {
            Ok(0) => Ok(false),
            Ok(_) => {
                self.line += 1;
                let trimmed = self.text.trim_end_matches(['\n', '\r']).len();
                self.text.truncate(trimmed);
                Ok(true)
            }
            // A compressed file cut short: what came before its last whole line is kept.
            Err(_) if self.zstd && self.path.metadata().is_ok_and(|m| m.len() > 0) => {
                self.truncated = true;
                Ok(false)
            }
            Err(source) => Err(TimelineError::Read {
                path: self.path.clone(),
                source,
            }),
        }
    }

    /// The event of the line in `self.text`, `None` where it holds none.
    fn event(&mut self, format: Format) -> Result<Option<TimedEvent>, TimelineError> {
        let line = self.text.as_str();
        match format {
            Format::Plain => Ok(Some(TimedEvent {
                received_ns: self.line as u64 - 1,
                event: TimelineEvent::Text(line.to_owned()),
            })),
            Format::Archive => match archive_line(line) {
                Some((received_ns, message)) => Ok(Some(TimedEvent {
                    received_ns,
                    event: TimelineEvent::Text(message.to_owned()),
                })),
                None => {
                    self.unreadable.0 += 1;
                    if self.unreadable.1.len() < UNREADABLE_LINES_NAMED {
                        self.unreadable.1.push(self.line);
                    }
                    Ok(None)
                }
            },
            Format::Timeline => timeline_event(line, &self.path, self.line),
        }
    }
}

impl Iterator for TimelineReader {
    type Item = Result<TimedEvent, TimelineError>;

    fn next(&mut self) -> Option<Self::Item> {
        while !self.done {
            match self.next_line() {
                Ok(true) => {}
                Ok(false) => self.done = true,
                Err(error) => {
                    self.done = true;
                    return Some(Err(error));
                }
            }
            if self.done || self.text.trim().is_empty() {
                continue;
            }
            let format = *self.format.get_or_insert_with(|| {
                if is_timeline_entry(&self.text) {
                    Format::Timeline
                } else if is_archive_line(&self.text) {
                    Format::Archive
                } else {
                    Format::Plain
                }
            });
            match self.event(format) {
                Ok(Some(event)) => return Some(Ok(event)),
                Ok(None) => {}
                Err(error) => {
                    self.done = true;
                    return Some(Err(error));
                }
            }
        }
        None
    }
}

/// The event of a timeline's line `number` (from 1), `None` for a kind replay passes over.
fn timeline_event(
    line: &str,
    path: &Path,
    number: usize,
) -> Result<Option<TimedEvent>, TimelineError> {
    let malformed = || TimelineError::Timeline {
        path: path.into(),
        line: number,
    };
    let entry: TimelineEntry = serde_json::from_str(line).map_err(|_| malformed())?;
    let received_ns = unix_seconds_ns(entry.recv_ts.get()).ok_or_else(malformed)?;
    let event = match entry.kind.as_str() {
        "ws_connect" => TimelineEvent::Connected,
        "ws_sent" => TimelineEvent::Sent(entry.raw),
        "ws_recv" => TimelineEvent::Text(entry.raw),
        "ws_recv_binary" => TimelineEvent::Binary(
            base64::Engine::decode(&base64::engine::general_purpose::STANDARD, &entry.raw)
                .map_err(|_| TimelineError::Base64 {
                    path: path.into(),
                    line: number,
                })?,
        ),
        "rest_response" => TimelineEvent::Rest {
            url: entry.url,
            body: entry.raw,
        },
        "rest_audit_request" => TimelineEvent::AuditRequest { url: entry.url },
        "rest_audit" => TimelineEvent::Audit {
            url: entry.url,
            body: entry.raw,
        },
        _ => return Ok(None),
    };
    Ok(Some(TimedEvent { received_ns, event }))
}

/// Reads a plain file, a timeline, a compressed timeline, or a market-data archive (plain
/// or gzip) whole ([`TimelineReader`] a line at a time). A file is a timeline when its
/// first line is a timeline entry; then every line must be one. It is an archive when its
/// first line is an archive's: each line's message is then a frame received at its time,
/// and a line without a time is an error here ([`FrameReader`] counts them and goes on).
/// Kinds other than `ws_connect`, `ws_sent`, `ws_recv`, `ws_recv_binary`, `rest_response`,
/// `rest_audit_request` and `rest_audit` are passed over (what failed, why a connection
/// ended: for the reader of the file).
pub fn load_timeline(path: &Path) -> Result<Timeline, TimelineError> {
    let mut reader = TimelineReader::open(path)?;
    let events = reader.by_ref().collect::<Result<Vec<_>, _>>()?;
    if let (count @ 1.., named) = reader.unreadable() {
        return Err(TimelineError::UnreadableLines {
            path: path.into(),
            count,
            first: named[0],
        });
    }
    Ok(Timeline {
        events,
        truncated: reader.truncated(),
    })
}

/// The text frames and REST responses of a plain file, a timeline or an archive (what the
/// per-venue replays take), whole. An archive's unreadable line is an error here
/// ([`FrameReader`] counts them and goes on).
pub fn load_frames(path: &Path) -> Result<Vec<RecordedFrame>, TimelineError> {
    let mut reader = FrameReader::open(None, path)?;
    let frames = reader.by_ref().collect::<Result<Vec<_>, _>>()?;
    match reader.unreadable() {
        (0, _) => Ok(frames),
        (count, named) => Err(TimelineError::UnreadableLines {
            path: path.into(),
            count,
            first: named[0],
        }),
    }
}

/// A file's text frames and REST responses, read a line at a time. Given the file's venue,
/// a snapshot a market-data archive took by REST and stored among the messages
/// (`Snapshots::archived_snapshot`) is a REST response, as the service's own recordings
/// hold one.
pub struct FrameReader {
    events: TimelineReader,
    venue: Option<VenueId>,
}

impl FrameReader {
    pub fn open(venue: Option<VenueId>, path: &Path) -> Result<FrameReader, TimelineError> {
        FrameReader::open_counted(venue, path, BytesRead::default())
    }

    /// [`FrameReader::open`], counting the bytes it reads ([`TimelineReader::open_counted`]).
    pub fn open_counted(
        venue: Option<VenueId>,
        path: &Path,
        read: BytesRead,
    ) -> Result<FrameReader, TimelineError> {
        Ok(FrameReader {
            events: TimelineReader::open_counted(path, read)?,
            venue,
        })
    }

    /// See [`TimelineReader::unreadable`].
    pub fn unreadable(&self) -> (usize, &[usize]) {
        self.events.unreadable()
    }
}

impl Iterator for FrameReader {
    type Item = Result<RecordedFrame, TimelineError>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let TimedEvent { received_ns, event } = match self.events.next()? {
                Ok(event) => event,
                Err(error) => return Some(Err(error)),
            };
            let (raw, rest_url) = match event {
                TimelineEvent::Text(raw) => (raw, None),
                TimelineEvent::Rest { url, body } => (body, Some(url)),
                TimelineEvent::Connected
                | TimelineEvent::Sent(_)
                | TimelineEvent::Binary(_)
                | TimelineEvent::AuditRequest { .. }
                | TimelineEvent::Audit { .. } => continue,
            };
            let mut frame = RecordedFrame {
                received_ns,
                raw,
                rest_url,
            };
            if let Some(venue) = self.venue.filter(|_| frame.rest_url.is_none())
                && let Some((symbol, body)) = venue.snapshots().archived_snapshot(&frame.raw)
            {
                frame.rest_url = Some(venue.snapshots().snapshot_url(
                    venue.facts().default_rest_url,
                    &symbol,
                    crate::config::defaults::SNAPSHOT_DEPTH.default as usize,
                ));
                frame.raw = body;
            }
            return Some(Ok(frame));
        }
    }
}

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

/// What reading a recording as it is replayed met ([`open_recording`]): the first error,
/// which ended its connection's events, and the files whose end was cut off.
#[derive(Debug, Default)]
pub struct ReadReport {
    pub error: Option<TimelineError>,
    pub truncated_files: usize,
}

/// One connection of a recording, read as it is replayed: its files one after another, a
/// line at a time. An error ends its events, kept in the shared [`ReadReport`].
pub struct ConnectionEvents {
    pub venue: VenueId,
    pub connection: usize,
    files: std::collections::VecDeque<PathBuf>,
    current: Option<TimelineReader>,
    report: std::rc::Rc<std::cell::RefCell<ReadReport>>,
    read: BytesRead,
}

impl Iterator for ConnectionEvents {
    type Item = TimedEvent;

    fn next(&mut self) -> Option<TimedEvent> {
        loop {
            if let Some(reader) = &mut self.current {
                match reader.next() {
                    Some(Ok(event)) => return Some(event),
                    Some(Err(error)) => {
                        let mut report = self.report.borrow_mut();
                        report.error.get_or_insert(error);
                        self.files.clear();
                        self.current = None;
                        return None;
                    }
                    None => {
                        self.report.borrow_mut().truncated_files += usize::from(reader.truncated());
                        self.current = None;
                    }
                }
            }
            let file = self.files.pop_front()?;
            match TimelineReader::open_counted(&file, BytesRead::clone(&self.read)) {
                Ok(reader) => self.current = Some(reader),
                Err(error) => {
                    self.report.borrow_mut().error.get_or_insert(error);
                    self.files.clear();
                    return None;
                }
            }
        }
    }
}

/// A recording directory (`record.dir`) to be read as it is replayed: every connection's
/// directory, its files in the order they were started; what the reading met, shared. The
/// bytes its files hold are added to `size`, those read to `read`.
#[allow(clippy::type_complexity)]
pub fn open_recording(
    dir: &Path,
    size: &mut u64,
    read: &BytesRead,
) -> Result<
    (
        Vec<ConnectionEvents>,
        std::rc::Rc<std::cell::RefCell<ReadReport>>,
    ),
    TimelineError,
> {
    let report = std::rc::Rc::new(std::cell::RefCell::new(ReadReport::default()));
    let connections = recording_files(dir)?
        .into_iter()
        .map(|(venue, connection, files)| {
            let bytes = files.iter().filter_map(|file| file.metadata().ok());
            *size += bytes.map(|metadata| metadata.len()).sum::<u64>();
            ConnectionEvents {
                venue,
                connection,
                files: files.into(),
                current: None,
                report: std::rc::Rc::clone(&report),
                read: BytesRead::clone(read),
            }
        })
        .collect();
    Ok((connections, report))
}

/// Reads a recording directory (`record.dir`) whole: every connection's directory, its
/// files in the order they were started.
pub fn load_recording(dir: &Path) -> Result<Vec<ConnectionRecording>, TimelineError> {
    let mut recordings = Vec::new();
    for (venue, connection, files) in recording_files(dir)? {
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

/// A recording directory's connections, and each one's files in the order they were
/// started.
fn recording_files(dir: &Path) -> Result<Vec<(VenueId, usize, Vec<PathBuf>)>, TimelineError> {
    let read_dir = |path: &Path| {
        std::fs::read_dir(path)
            .and_then(|entries| entries.map(|entry| Ok(entry?.path())).collect())
            .map_err(|source| TimelineError::Read {
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
            .ok_or_else(|| TimelineError::NotAConnection { path: path.clone() })?;
        let mut files: Vec<PathBuf> = read_dir(&path)?;
        files.retain(|file| file.is_file());
        files.sort();
        recordings.push((venue, connection, files));
    }
    Ok(recordings)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn receive_times_are_read_to_the_nanosecond() {
        assert_eq!(
            unix_seconds_ns("1764251000.123456789"),
            Some(1_764_251_000_123_456_789)
        );
        assert_eq!(
            unix_seconds_ns("1633998512.0633569"),
            Some(1_633_998_512_063_356_900)
        );
        assert_eq!(unix_seconds_ns("12"), Some(12_000_000_000));
        assert_eq!(unix_seconds_ns("1.5e3"), Some(1_500_000_000_000));
        assert_eq!(unix_seconds_ns("-1"), None);
    }

    #[test]
    fn times_are_unix_seconds_or_utc() {
        let at = 1_764_251_000_500_000_000;
        assert_eq!(parse_time("1764251000.5"), Some(at));
        // 1764251000 s is 2025-11-27T13:43:20Z.
        assert_eq!(parse_time("2025-11-27T13:43:20.5Z"), Some(at));
        assert_eq!(
            parse_time("2025-11-27T13:43:20+00:00"),
            Some(at - 500_000_000)
        );
        assert_eq!(parse_time("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(
            parse_time("2024-02-29T00:00:00Z"),
            Some(1_709_164_800_000_000_000)
        );
        for wrong in [
            "2025-13-01T00:00:00Z",
            "2025-11-27T13:43:20",
            "yesterday",
            "",
        ] {
            assert_eq!(parse_time(wrong), None, "{wrong}");
        }
    }
}
