//! The recordings' file formats, read: plain files, session timelines and recording
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
    #[error("{path}: {} line(s) without a receive time before the message (line {})", lines.len(), lines[0])]
    UnreadableLines { path: PathBuf, lines: Vec<usize> },
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
    /// A market-data archive's lines that could not be read (no receive time before the
    /// message), by number from 1: left out of `events`, for the caller to report.
    pub unreadable_lines: Vec<usize>,
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

/// The file's text: zstd-compressed when its name ends in `.zst` (`[record]`'s files),
/// gzip-compressed when it starts with gzip's magic bytes (market-data archives). A
/// compressed file cut short yields the lines before the cut.
fn read_text(path: &Path) -> Result<(String, bool), TimelineError> {
    let error = |source| TimelineError::Read {
        path: path.into(),
        source,
    };
    if path.extension().is_none_or(|extension| extension != "zst") {
        let bytes = std::fs::read(path).map_err(error)?;
        let bytes = match bytes.starts_with(&[0x1f, 0x8b]) {
            false => bytes,
            true => {
                let mut text = Vec::new();
                let mut decoder = flate2::read::MultiGzDecoder::new(bytes.as_slice());
                std::io::Read::read_to_end(&mut decoder, &mut text).map_err(error)?;
                text
            }
        };
        return String::from_utf8(bytes)
            .map(|text| (text, false))
            .map_err(|utf8| error(std::io::Error::new(std::io::ErrorKind::InvalidData, utf8)));
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

/// Reads a plain file, a timeline, a compressed timeline, or a market-data archive (plain
/// or gzip). A file is a timeline when its first line is a timeline entry; then every line
/// must be one. It is an archive when its first line is an archive's: each line's message
/// is then a frame received at its time, and a line without a time is left out, named in
/// `unreadable_lines`. Kinds other than
/// `ws_connect`, `ws_sent`, `ws_recv`, `ws_recv_binary`, `rest_response`,
/// `rest_audit_request` and `rest_audit` are passed over (what failed, why a connection ended: for the reader of the file).
pub fn load_timeline(path: &Path) -> Result<Timeline, TimelineError> {
    let (text, truncated) = read_text(path)?;
    let mut lines = text
        .lines()
        .enumerate()
        .filter(|(_, line)| !line.trim().is_empty())
        .peekable();
    let is_timeline = lines
        .peek()
        .is_some_and(|(_, first)| is_timeline_entry(first));
    if lines
        .peek()
        .is_some_and(|(_, first)| is_archive_line(first))
    {
        let (mut events, mut unreadable_lines) = (Vec::new(), Vec::new());
        for (index, line) in lines {
            match archive_line(line) {
                Some((received_ns, message)) => events.push(TimedEvent {
                    received_ns,
                    event: TimelineEvent::Text(message.to_owned()),
                }),
                None => unreadable_lines.push(index + 1),
            }
        }
        return Ok(Timeline {
            events,
            truncated,
            unreadable_lines,
        });
    }
    if !is_timeline {
        let events = lines
            .map(|(index, line)| TimedEvent {
                received_ns: index as u64,
                event: TimelineEvent::Text(line.to_owned()),
            })
            .collect();
        return Ok(Timeline {
            events,
            truncated,
            unreadable_lines: Vec::new(),
        });
    }
    let mut events = Vec::new();
    for (index, line) in lines {
        let malformed = || TimelineError::Timeline {
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
                    .map_err(|_| TimelineError::Base64 {
                        path: path.into(),
                        line: index + 1,
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
            _ => continue,
        };
        events.push(TimedEvent { received_ns, event });
    }
    Ok(Timeline {
        events,
        truncated,
        unreadable_lines: Vec::new(),
    })
}

/// The text frames and REST responses of a plain file, a timeline or an archive (what the
/// per-venue replays take). An archive's unreadable line is an error here
/// ([`load_venue_frames`] reports them and goes on).
pub fn load_frames(path: &Path) -> Result<Vec<RecordedFrame>, TimelineError> {
    let timeline = load_timeline(path)?;
    if !timeline.unreadable_lines.is_empty() {
        return Err(TimelineError::UnreadableLines {
            path: path.into(),
            lines: timeline.unreadable_lines,
        });
    }
    Ok(frames_of(timeline))
}

/// `venue`'s frames in a file, as [`load_frames`] reads them, with the archive's lines it
/// could not read (numbers from 1). A snapshot an archive took by REST and stored among
/// the messages (`Snapshots::archived_snapshot`) is a REST response here, as the service's
/// own recordings hold one.
pub fn load_venue_frames(
    venue: crate::venue::VenueId,
    path: &Path,
) -> Result<(Vec<RecordedFrame>, Vec<usize>), TimelineError> {
    let mut timeline = load_timeline(path)?;
    let unreadable = std::mem::take(&mut timeline.unreadable_lines);
    let mut frames = frames_of(timeline);
    for frame in frames.iter_mut().filter(|frame| frame.rest_url.is_none()) {
        if let Some((symbol, body)) = venue.snapshots().archived_snapshot(&frame.raw) {
            let url = venue.snapshots().snapshot_url(
                venue.facts().default_rest_url,
                &symbol,
                crate::config::defaults::SNAPSHOT_DEPTH.default as usize,
            );
            frame.raw = body;
            frame.rest_url = Some(url);
        }
    }
    Ok((frames, unreadable))
}

fn frames_of(timeline: Timeline) -> Vec<RecordedFrame> {
    timeline
        .events
        .into_iter()
        .filter_map(|TimedEvent { received_ns, event }| {
            let (raw, rest_url) = match event {
                TimelineEvent::Text(raw) => (raw, None),
                TimelineEvent::Rest { url, body } => (body, Some(url)),
                TimelineEvent::Connected
                | TimelineEvent::Sent(_)
                | TimelineEvent::Binary(_)
                | TimelineEvent::AuditRequest { .. }
                | TimelineEvent::Audit { .. } => return None,
            };
            Some(RecordedFrame {
                received_ns,
                raw,
                rest_url,
            })
        })
        .collect()
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

/// Reads a recording directory (`record.dir`): every connection's directory, its files
/// in the order they were started.
pub fn load_recording(dir: &Path) -> Result<Vec<ConnectionRecording>, TimelineError> {
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
