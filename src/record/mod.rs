//! Recording what the venues sent (`[record]`, `mergebook record`): every frame, REST
//! snapshot and connection event of each reader's connection, with its receive time, as a
//! timeline, the format of the recorded fixtures that `replay/` reads: one JSON
//! object per line, `{"recv_ts": <Unix seconds>, "kind": …, "url": …, "raw": …}`.
//!
//! On disk: one directory per connection (`<venue>-<connection>`, as `service/mod.rs`
//! numbers them), holding files named by the Unix time (ns) they were started, zstd
//! compressed, a new one past `max_file_bytes` of timeline or `max_file_age`; the oldest
//! files of the whole directory are removed to keep it under `max_total_bytes`.
//!
//! The readers never wait for the disk. Each connection owns a fixed pool of event
//! buffers: an event is copied into a free one and queued to the writer thread, which
//! hands the buffer back once the line is written. No free buffer, or the connection's
//! queued bytes at their bound, means the writer is behind: the event is dropped, counted
//! (`orderbook_record_dropped_total`) and logged, rate-limited. A buffer keeps its capacity
//! (up to `KEPT_CAPACITY`), so once the pool has held frames of each size, recording
//! allocates nothing on the reader.

pub mod timeline;

use crate::clock;
use crate::config::RecordConfig;
use crate::log_limit::LogLimiter;
use crate::metrics::Metrics;
use crate::venue::VenueId;
use base64::Engine;
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender, TryRecvError};
use std::time::{Duration, Instant};

/// What a timeline line records: its `kind`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum EventKind {
    /// A connection opened (`url`): the reader's core starts over from here.
    Connected,
    /// A text frame the reader sent: subscriptions, pings.
    Sent,
    /// A text frame received.
    #[default]
    Received,
    /// A binary frame received (`raw` in base64: a timeline line is text).
    ReceivedBinary,
    /// A REST snapshot body (`url`) the reader handed to its core.
    RestResponse,
    /// A REST snapshot that answered a request the core had since given up (a reset
    /// cancelled it): the core dropped it, and so does replay.
    RestSuperseded,
    /// A REST snapshot request that failed (`raw`: why).
    RestFailed,
    /// An audit's REST snapshot asked for (`url`; `raw` empty): the audit of that book
    /// starts here, as replay starts it.
    AuditRequest,
    /// An audit's REST snapshot body (`url`), which the core compared with its book.
    AuditResponse,
    /// The connection ended, or never opened (`raw`: why).
    Closed,
}

impl EventKind {
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Connected => "ws_connect",
            EventKind::Sent => "ws_sent",
            EventKind::Received => "ws_recv",
            EventKind::ReceivedBinary => "ws_recv_binary",
            EventKind::RestResponse => "rest_response",
            EventKind::RestSuperseded => "rest_superseded",
            EventKind::RestFailed => "rest_failed",
            EventKind::AuditRequest => "rest_audit_request",
            EventKind::AuditResponse => "rest_audit",
            EventKind::Closed => "ws_close",
        }
    }
}

/// A buffer keeping more than this after its event is written is shrunk back: a rare
/// oversized frame (a full-depth REST snapshot) does not hold its memory in the pool.
const KEPT_CAPACITY: usize = 16 * 1024;

/// One event on its way to the writer: a pool buffer.
#[derive(Default)]
struct Event {
    connection: usize,
    kind: EventKind,
    unix_ns: u64,
    url: Vec<u8>,
    raw: Vec<u8>,
}

impl Event {
    fn bytes(&self) -> usize {
        self.url.len() + self.raw.len()
    }
}

/// A reader's end: records its connection's events.
pub struct ConnectionRecorder {
    connection: usize,
    venue: VenueId,
    free: Receiver<Event>,
    queue: SyncSender<Event>,
    /// Bytes of this connection's events queued and not yet written, and their bound:
    /// `queue_per_connection × KEPT_CAPACITY`, so a burst of oversized frames is dropped
    /// rather than held.
    queued_bytes: Arc<AtomicUsize>,
    max_queued_bytes: usize,
    dropped: prometheus::IntCounter,
    drop_log: LogLimiter,
}

impl ConnectionRecorder {
    /// Records an event of `kind` that happened at `monotonic_ns` (stamped with its Unix
    /// time, `clock::unix_of_monotonic`). Returns whether it was queued; if not, it is
    /// counted as dropped.
    pub fn record(&mut self, kind: EventKind, monotonic_ns: u64, url: &str, raw: &[u8]) -> bool {
        let bytes = url.len() + raw.len();
        let within_bound =
            self.queued_bytes.load(Ordering::Relaxed) + bytes <= self.max_queued_bytes;
        let event = if within_bound {
            self.free.try_recv().ok()
        } else {
            None
        };
        let Some(mut event) = event else {
            self.dropped.inc();
            if let Some(suppressed) = self.drop_log.allow(monotonic_ns) {
                tracing::warn!(venue = %self.venue, connection = self.connection, suppressed, "recording behind the venue: events dropped");
            }
            return false;
        };
        event.connection = self.connection;
        event.kind = kind;
        event.unix_ns = clock::unix_of_monotonic(monotonic_ns);
        event.url.clear();
        event.url.extend_from_slice(url.as_bytes());
        event.raw.clear();
        event.raw.extend_from_slice(raw);
        self.queued_bytes.fetch_add(bytes, Ordering::Relaxed);
        // The queue holds every connection's whole pool: it is never full. Disconnected,
        // the writer is gone and the event with it.
        self.queue.try_send(event).is_ok()
    }
}

/// Where the writer puts timeline lines: `Files` in the service; tests put a writer that
/// blocks in its place.
pub trait Storage: Send + 'static {
    /// Appends one line (with its newline) to `connection`'s timeline.
    fn append(&mut self, connection: usize, line: &[u8], now: Instant) -> io::Result<()>;
    /// About every `TICK`: files rotated by age, what is written made readable, the cap.
    fn tick(&mut self, now: Instant) -> io::Result<()>;
    /// The end: every file completed.
    fn finish(&mut self) -> io::Result<()>;
}

/// How often the writer ticks its storage, events or not: the most a crash loses of a
/// timeline is what was written since the last tick.
const TICK: Duration = Duration::from_secs(1);

/// How long the writer sleeps when it finds nothing queued: each wake-up costs it CPU
/// (at 2 ms, most of what recording the demo's eight feeds took), and 10 ms of a
/// connection's events fit its pool many times over.
const POLL_EVERY: Duration = Duration::from_millis(10);

/// The writer thread and what it counts.
pub struct Recorder {
    writer: Option<std::thread::JoinHandle<()>>,
}

/// The writer's counters.
#[derive(Clone)]
pub struct RecordMetrics {
    /// Per connection.
    pub dropped: Vec<prometheus::IntCounter>,
    pub written_bytes: prometheus::IntCounter,
    pub errors: prometheus::IntCounter,
}

impl RecordMetrics {
    /// The service's counters for `connections` (venue, index).
    pub fn of(metrics: &Metrics, connections: &[(VenueId, usize)]) -> RecordMetrics {
        RecordMetrics {
            dropped: connections
                .iter()
                .map(|(venue, _)| metrics.record_dropped.with_label_values(&[venue.name()]))
                .collect(),
            written_bytes: metrics.record_written_bytes.clone(),
            errors: metrics.record_errors.clone(),
        }
    }
}

impl Recorder {
    /// Starts recording `connections` (venue, index among the venue's) into `config.dir`.
    pub fn start(
        config: &RecordConfig,
        connections: &[(VenueId, usize)],
        metrics: RecordMetrics,
    ) -> io::Result<(Recorder, Vec<ConnectionRecorder>)> {
        std::fs::create_dir_all(&config.dir)?;
        let storage = Files::new(config, connections);
        Recorder::start_with(storage, config.queue_per_connection, connections, metrics)
    }

    /// Starts the writer on `storage`, with `queue_per_connection` buffers a connection.
    pub fn start_with(
        mut storage: impl Storage,
        queue_per_connection: usize,
        connections: &[(VenueId, usize)],
        metrics: RecordMetrics,
    ) -> io::Result<(Recorder, Vec<ConnectionRecorder>)> {
        let (queue, queued) = mpsc::sync_channel(queue_per_connection * connections.len());
        let mut pools = Vec::new();
        let mut recorders = Vec::new();
        for (connection, &(venue, _)) in connections.iter().enumerate() {
            let (pool, free) = mpsc::sync_channel(queue_per_connection);
            for _ in 0..queue_per_connection {
                pool.try_send(Event::default())
                    .expect("room for the whole pool");
            }
            let queued_bytes = Arc::new(AtomicUsize::new(0));
            pools.push((pool, Arc::clone(&queued_bytes)));
            recorders.push(ConnectionRecorder {
                connection,
                venue,
                free,
                queue: queue.clone(),
                queued_bytes,
                max_queued_bytes: queue_per_connection * KEPT_CAPACITY,
                dropped: metrics.dropped[connection].clone(),
                drop_log: LogLimiter::per_second(),
            });
        }
        drop(queue);
        let writer = std::thread::Builder::new()
            .name("recorder".into())
            .spawn(move || {
                write_events(&queued, &pools, &mut storage, &metrics);
            })?;
        Ok((
            Recorder {
                writer: Some(writer),
            },
            recorders,
        ))
    }

    /// Waits for the writer to write what is queued and complete its files: it ends once
    /// every `ConnectionRecorder` is dropped.
    pub fn finish(mut self) {
        if let Some(writer) = self.writer.take() {
            let _ = writer.join();
        }
    }
}

/// The writer thread: each event as a line, its buffer back to its pool.
fn write_events(
    queued: &Receiver<Event>,
    pools: &[(SyncSender<Event>, Arc<AtomicUsize>)],
    storage: &mut impl Storage,
    metrics: &RecordMetrics,
) {
    let mut line = Vec::new();
    let mut error_log = LogLimiter::per_second();
    let mut report = |result: io::Result<()>| {
        if let Err(error) = result {
            metrics.errors.inc();
            if let Some(suppressed) = error_log.allow(clock::monotonic_ns()) {
                tracing::error!(%error, suppressed, "recording: cannot write");
            }
        }
    };
    let mut next_tick = Instant::now() + TICK;
    loop {
        // Polled, never waited on: a writer blocked in a receive would make every reader's
        // queueing a wake-up, a system call on the reader's thread. The pools hold far
        // more than the events of one `POLL_EVERY`.
        let event = match queued.try_recv() {
            Ok(event) => Some(event),
            Err(TryRecvError::Empty) => None,
            Err(TryRecvError::Disconnected) => break,
        };
        let idle = event.is_none();
        if let Some(mut event) = event {
            let (pool, queued_bytes) = &pools[event.connection];
            format_line(&mut line, &event);
            report(storage.append(event.connection, &line, Instant::now()));
            metrics.written_bytes.inc_by(line.len() as u64);
            queued_bytes.fetch_sub(event.bytes(), Ordering::Relaxed);
            for buffer in [&mut event.url, &mut event.raw] {
                buffer.clear();
                buffer.shrink_to(KEPT_CAPACITY);
            }
            let _ = pool.try_send(event);
        }
        let now = Instant::now();
        if now >= next_tick {
            next_tick = now + TICK;
            report(storage.tick(now));
        }
        if idle {
            std::thread::sleep(POLL_EVERY);
        }
    }
    report(storage.finish());
}

/// Writes `event` as one timeline line into `line`.
fn format_line(line: &mut Vec<u8>, event: &Event) {
    let kind = event.kind;
    line.clear();
    let (seconds, nanos) = (event.unix_ns / 1_000_000_000, event.unix_ns % 1_000_000_000);
    let _ = write!(
        line,
        "{{\"recv_ts\": {seconds}.{nanos:09}, \"kind\": \"{}\"",
        kind.name()
    );
    if !event.url.is_empty() {
        line.extend_from_slice(b", \"url\": ");
        json_string(line, &event.url);
    }
    if kind != EventKind::Connected {
        line.extend_from_slice(b", \"raw\": ");
        if kind == EventKind::ReceivedBinary {
            let encoded = base64::engine::general_purpose::STANDARD.encode(&event.raw);
            json_string(line, encoded.as_bytes());
        } else {
            json_string(line, &event.raw);
        }
    }
    line.extend_from_slice(b"}\n");
}

/// `text` as a JSON string. Text frames are UTF-8 (the WebSocket layer checks it); a REST
/// body that is not would be refused by its decoder, and is written with U+FFFD in place
/// of the bytes that are not.
fn json_string(line: &mut Vec<u8>, text: &[u8]) {
    let text = String::from_utf8_lossy(text);
    let _ = serde_json::to_writer(&mut *line, &*text);
}

/// The directory of a connection's timeline files.
pub fn connection_dir(venue: VenueId, connection: usize) -> String {
    format!("{venue}-{connection}")
}

/// The timeline files on disk (`[record]`).
pub struct Files {
    root: PathBuf,
    connections: Vec<ConnectionFiles>,
    max_file_bytes: u64,
    max_file_age: Duration,
    max_total_bytes: u64,
}

struct ConnectionFiles {
    dir: PathBuf,
    open: Option<OpenFile>,
}

struct OpenFile {
    path: PathBuf,
    encoder: zstd::stream::write::Encoder<'static, io::BufWriter<std::fs::File>>,
    started: Instant,
    bytes: u64,
}

/// The extension of a timeline file.
pub const TIMELINE_EXTENSION: &str = "jsonl.zst";

impl Files {
    fn new(config: &RecordConfig, connections: &[(VenueId, usize)]) -> Files {
        Files {
            root: config.dir.clone(),
            connections: connections
                .iter()
                .map(|&(venue, index)| ConnectionFiles {
                    dir: config.dir.join(connection_dir(venue, index)),
                    open: None,
                })
                .collect(),
            max_file_bytes: config.max_file_bytes,
            max_file_age: config.max_file_age,
            max_total_bytes: config.max_total_bytes,
        }
    }

    fn open(dir: &Path, now: Instant) -> io::Result<OpenFile> {
        std::fs::create_dir_all(dir)?;
        let path = dir.join(format!("{:020}.{TIMELINE_EXTENSION}", clock::unix_ns()));
        let file = std::fs::File::create_new(&path)?;
        Ok(OpenFile {
            path,
            encoder: zstd::stream::write::Encoder::new(io::BufWriter::new(file), 3)?,
            started: now,
            bytes: 0,
        })
    }

    /// Completes `open`'s file.
    fn close(open: OpenFile) -> io::Result<()> {
        open.encoder.finish()?.flush()
    }

    /// Removes the oldest completed files until the directory is under its cap.
    fn enforce_cap(&self) -> io::Result<()> {
        let mut files = Vec::new();
        for dir in std::fs::read_dir(&self.root)? {
            let dir = dir?.path();
            if !dir.is_dir() {
                continue;
            }
            for file in std::fs::read_dir(&dir)? {
                let file = file?;
                let name = file.file_name().to_string_lossy().into_owned();
                if name.ends_with(TIMELINE_EXTENSION) {
                    files.push((name, file.path(), file.metadata()?.len()));
                }
            }
        }
        let mut total: u64 = files.iter().map(|(_, _, bytes)| bytes).sum();
        files.sort();
        let open: Vec<&Path> = self
            .connections
            .iter()
            .filter_map(|c| Some(c.open.as_ref()?.path.as_path()))
            .collect();
        for (_, path, bytes) in files {
            if total <= self.max_total_bytes {
                break;
            }
            if open.contains(&path.as_path()) {
                continue;
            }
            std::fs::remove_file(&path)?;
            total -= bytes;
        }
        Ok(())
    }
}

impl Storage for Files {
    fn append(&mut self, connection: usize, line: &[u8], now: Instant) -> io::Result<()> {
        let files = &mut self.connections[connection];
        let open = match &mut files.open {
            Some(open) => open,
            None => files.open.insert(Files::open(&files.dir, now)?),
        };
        open.encoder.write_all(line)?;
        open.bytes += line.len() as u64;
        if open.bytes >= self.max_file_bytes {
            let full = files.open.take().expect("just written");
            Files::close(full)?;
            self.enforce_cap()?;
        }
        Ok(())
    }

    fn tick(&mut self, now: Instant) -> io::Result<()> {
        for files in &mut self.connections {
            let Some(open) = &mut files.open else {
                continue;
            };
            if now.duration_since(open.started) >= self.max_file_age {
                Files::close(files.open.take().expect("open"))?;
            } else {
                // A zstd flush ends the block: what is written so far decodes.
                open.encoder.flush()?;
            }
        }
        self.enforce_cap()
    }

    fn finish(&mut self) -> io::Result<()> {
        for files in &mut self.connections {
            if let Some(open) = files.open.take() {
                Files::close(open)?;
            }
        }
        self.enforce_cap()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::timeline::{TimelineEvent, load_timeline};
    use std::sync::mpsc::Sender;

    fn counters(connections: usize) -> RecordMetrics {
        let counter = || prometheus::IntCounter::new("c", "c").unwrap();
        RecordMetrics {
            dropped: (0..connections).map(|_| counter()).collect(),
            written_bytes: counter(),
            errors: counter(),
        }
    }

    /// A disk that takes nothing until released, and then hands each line over.
    struct StuckDisk {
        release: Receiver<()>,
        lines: Sender<Vec<u8>>,
    }

    impl Storage for StuckDisk {
        fn append(&mut self, _: usize, line: &[u8], _: Instant) -> io::Result<()> {
            let _ = self.release.recv();
            let _ = self.lines.send(line.to_vec());
            Ok(())
        }
        fn tick(&mut self, _: Instant) -> io::Result<()> {
            Ok(())
        }
        fn finish(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A recorder of one connection with a pool of `pool` on a `StuckDisk`: the recorder,
    /// its reader's end, the reader's drops, what releases a line, the lines written.
    fn on_a_stuck_disk(
        pool: usize,
    ) -> (
        Recorder,
        ConnectionRecorder,
        prometheus::IntCounter,
        Sender<()>,
        Receiver<Vec<u8>>,
    ) {
        let (release, released) = mpsc::channel();
        let (written, lines) = mpsc::channel();
        let disk = StuckDisk {
            release: released,
            lines: written,
        };
        let metrics = counters(1);
        let dropped = metrics.dropped[0].clone();
        let (recorder, mut connections) =
            Recorder::start_with(disk, pool, &[(VenueId::Binance, 0)], metrics).unwrap();
        let reader = connections.pop().unwrap();
        (recorder, reader, dropped, release, lines)
    }

    #[test]
    fn a_stuck_disk_costs_the_reader_only_counted_drops() {
        const POOL: usize = 16;
        let (recorder, mut reader, dropped, release, lines) = on_a_stuck_disk(POOL);
        // The writer is stuck on the first line: every record call still returns, the
        // pool's worth queued, the rest dropped and counted.
        let queued = (0..100u64)
            .filter(|&frame| reader.record(EventKind::Received, frame, "", b"{}"))
            .count();
        assert_eq!(queued, POOL);
        assert_eq!(dropped.get(), 100 - POOL as u64);
        drop(reader);
        for _ in 0..POOL {
            release.send(()).unwrap();
        }
        recorder.finish();
        let written: Vec<Vec<u8>> = lines.try_iter().collect();
        assert_eq!(written.len(), POOL, "what was queued is written, in order");
        let unix = clock::unix_of_monotonic(0);
        for (frame, line) in written.iter().enumerate() {
            let expected = format!(
                "{{\"recv_ts\": {}.{:09}, \"kind\": \"ws_recv\", \"raw\": \"{{}}\"}}\n",
                (unix + frame as u64) / 1_000_000_000,
                (unix + frame as u64) % 1_000_000_000
            );
            assert_eq!(String::from_utf8_lossy(line), expected);
        }
    }

    #[test]
    fn oversized_frames_beyond_the_queued_bytes_bound_are_dropped() {
        let (recorder, mut reader, dropped, release, _lines) = on_a_stuck_disk(16);
        let big = vec![b'x'; 16 * KEPT_CAPACITY / 4 + 1];
        let queued = (0..8)
            .filter(|&at| reader.record(EventKind::Received, at, "", &big))
            .count();
        assert_eq!(queued, 3, "three fit in 16 × KEPT_CAPACITY bytes, not four");
        assert_eq!(dropped.get(), 5);
        drop(reader);
        (0..3).for_each(|_| release.send(()).unwrap());
        recorder.finish();
    }

    /// A recording configuration in a fresh directory of this test process's, `name`.
    fn fresh(
        name: &str,
        max_file_bytes: u64,
        max_file_age: Duration,
        max_total_bytes: u64,
    ) -> RecordConfig {
        let dir = std::env::temp_dir().join(format!("mergebook-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        RecordConfig {
            dir,
            max_file_bytes,
            max_file_age,
            max_total_bytes,
            queue_per_connection: 64,
        }
    }

    #[test]
    fn files_rotate_compressed_and_the_oldest_go_past_the_cap() {
        let config = fresh("record", 20_000, Duration::from_secs(3600), 30_000);
        let dir = config.dir.clone();
        let connections = [(VenueId::Bitstamp, 0), (VenueId::BinanceSbe, 0)];
        let (recorder, mut readers) = Recorder::start(&config, &connections, counters(2)).unwrap();
        let mut rng = crate::rng::Rng::new(5);
        let frames = 2_000u64;
        for at in 0..frames {
            // Incompressible text, so that compressed files fill up too.
            let frame: String = (0..200)
                .map(|_| char::from(b'a' + rng.below(26) as u8))
                .collect();
            while !readers[0].record(EventKind::Received, at, "", frame.as_bytes()) {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        readers[1].record(EventKind::ReceivedBinary, 0, "", &[0, 1, 2, 255]);
        drop(readers);
        recorder.finish();

        let files = |connection: &str| {
            let mut files: Vec<PathBuf> = std::fs::read_dir(dir.join(connection))
                .unwrap()
                .map(|entry| entry.unwrap().path())
                .collect();
            files.sort();
            files
        };
        let bitstamp = files("bitstamp-0");
        let total: u64 = std::fs::read_dir(&dir)
            .unwrap()
            .flat_map(|connection| std::fs::read_dir(connection.unwrap().path()).unwrap())
            .map(|file| file.unwrap().metadata().unwrap().len())
            .sum();
        assert!(total <= config.max_total_bytes, "{total} bytes kept");
        assert!(bitstamp.len() >= 2, "{bitstamp:?}");
        // What is kept is the end of the recording, whole and in order.
        let events: Vec<_> = bitstamp
            .iter()
            .flat_map(|file| {
                let timeline = load_timeline(file).unwrap();
                assert!(!timeline.truncated);
                timeline.events
            })
            .collect();
        let unix = clock::unix_of_monotonic(0);
        let times: Vec<u64> = events.iter().map(|e| e.received_ns - unix).collect();
        let kept = times.len() as u64;
        assert!(
            kept < frames / 2,
            "the oldest files were removed: {kept} kept"
        );
        assert_eq!(times, (frames - kept..frames).collect::<Vec<_>>());
        let binary = load_timeline(&files("binance_sbe-0")[0]).unwrap().events;
        assert_eq!(binary[0].event, TimelineEvent::Binary(vec![0, 1, 2, 255]));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_file_older_than_its_age_is_completed_at_the_next_tick() {
        let config = fresh("age", 1 << 20, Duration::from_secs(60), 1 << 30);
        let dir = config.dir.clone();
        let mut files = Files::new(&config, &[(VenueId::Kraken, 0)]);
        let start = Instant::now();
        let line = b"{\"recv_ts\": 1.0, \"kind\": \"ws_recv\", \"raw\": \"{}\"}\n";
        files.append(0, line, start).unwrap();
        files.tick(start + Duration::from_secs(59)).unwrap();
        // Flushed at the tick: what is written so far decodes, the file not yet complete.
        let open = files.connections[0].open.as_ref().unwrap().path.clone();
        let timeline = load_timeline(&open).unwrap();
        assert_eq!((timeline.events.len(), timeline.truncated), (1, true));
        files.tick(start + Duration::from_secs(60)).unwrap();
        assert!(files.connections[0].open.is_none());
        assert!(!load_timeline(&open).unwrap().truncated, "completed");
        std::thread::sleep(Duration::from_millis(1)); // the next file's name is later
        files
            .append(0, line, start + Duration::from_secs(61))
            .unwrap();
        files.finish().unwrap();
        assert_eq!(std::fs::read_dir(dir.join("kraken-0")).unwrap().count(), 2);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
