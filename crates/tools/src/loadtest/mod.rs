//! `mergebook-tools loadtest`: the wire-to-publish harness.
//!
//! In one process, on one clock (`clock::monotonic_ns`): the embedded simulator sends book
//! frames at a fixed rate per venue over real loopback WebSockets to the real service
//! (readers → mailboxes → merger → publish). The simulator logs each frame's venue sequence
//! and the time just before its socket write (`Simulator::record_sends`); the merger
//! reports every publish with the sequence of each venue's book in it (`PublishTap`).
//! [`Accounting`] matches the two:
//!
//! - **published**: a summary contained the frame; its wire-to-publish latency is
//!   publish − write, its in-process latency publish − the reader's receive stamp (the
//!   quantity `orderbook_e2e_duration_seconds` observes), split into three parts by the
//!   merger's stamps ([`InProcessSplit`]);
//! - beyond the publish, a **consumer** of the service (the harness's own subscriber to
//!   the summaries, a task on the service's runtime as a gRPC stream is) stamps each
//!   summary it sees ([`ConsumedSummary`]): receive → seen by a consumer, which adds the
//!   tokio side's wake-up to the in-process figure;
//! - **superseded**: a newer frame replaced it in the mailbox before the merger took it
//!   (latest value wins), as the readers' mailboxes count it
//!   (`orderbook_books_superseded_total`), an independent count;
//! - **lost**: sent − published − superseded. Anything else that happened to a frame
//!   (dropped on the wire, rejected by a decoder, merged but never published) lands here;
//!   it must be 0.
//!
//! The channels are bounded and never waited on; a record either could not take is
//! counted and fails the run. CPU is read per thread from `/proc/self/task/*/schedstat`
//! (the service's threads apart from the simulator's and the harness's), memory from
//! `/proc/self/status` (the whole process: service, simulator and harness), and the CPU
//! time the hypervisor took from the machine from `/proc/stat`'s `steal`: on a shared VM
//! it decides the tail latencies, so each run reports it. So is the CPU-latency limit in
//! force ([`crate::cpu_latency`]), which decides whether idle vCPUs halt between frames.

use crate::cpu_latency::{CpuLatencyRequest, DEVICE, NO_LIMIT_US, idle_driver};
use hdrhistogram::Histogram;
use mergebook::clock;
use mergebook::config::{IdleStrategy, RawConfig};
use mergebook::merger::{PublishObserver, PublishRecord};
use mergebook::service::{Listeners, Service};
use mergebook::sim::{SentFrame, Simulator};
use mergebook::venue::{MAX_VENUES, StreamKind, VenueId};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::sync_channel;
use std::time::{Duration, Instant};

/// One load run.
#[derive(Clone, Debug)]
pub struct LoadSpec {
    /// Book frames per second per book (per venue and instrument).
    pub rate_per_venue: u32,
    pub venues: Vec<VenueId>,
    /// Instruments, each on every venue: `instruments × venues` books.
    pub instruments: usize,
    /// The first instrument's books at this many frames per second instead (the others
    /// stay at `rate_per_venue`): one hot book among many quiet ones.
    pub hot_rate: Option<u32>,
    /// Levels per side: 20 makes Binance send its `depth20` frames (about 1.2 KB).
    pub depth: usize,
    /// Before the measured window: connections, subscriptions, first books.
    pub warmup: Duration,
    /// The measured window.
    pub duration: Duration,
    pub idle: IdleStrategy,
    pub merger_core: Option<usize>,
    /// How often memory is sampled.
    pub rss_every: Duration,
    /// Holds the kernel's CPU-latency request at this many µs for the run
    /// ([`crate::cpu_latency`]: 0 keeps idle CPUs polling instead of halting), as a host
    /// tuned for latency would. A run that cannot take it fails.
    pub cpu_wake_latency_us: Option<u32>,
}

/// Latency percentiles, in nanoseconds.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct Percentiles {
    pub count: u64,
    pub p50: u64,
    pub p99: u64,
    pub p999: u64,
    pub max: u64,
}

impl Percentiles {
    fn of(histogram: &Histogram<u64>) -> Percentiles {
        Percentiles {
            count: histogram.len(),
            p50: histogram.value_at_quantile(0.50),
            p99: histogram.value_at_quantile(0.99),
            p999: histogram.value_at_quantile(0.999),
            max: histogram.max(),
        }
    }
}

/// The in-process latency of published frames in three consecutive parts, on the stamps
/// the merger adds to each publish when tapped (`PublishRecord`); per frame they add up to
/// its in-process latency.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize)]
pub struct InProcessSplit {
    /// Reader receive → the start of the merger's poll that took the book: decoding,
    /// routing, the mailbox write, and the merger reaching the mailbox. (0 in the rare
    /// case that poll began before the receive; the merge part then holds the rest.)
    pub to_merger_ns: Percentiles,
    /// That poll's start → summary written: the take, applying the book, merging,
    /// summarizing.
    pub merge_ns: Percentiles,
    /// Summary written → published: the publish slot's store and waking the fan-out task
    /// (a system call when it sleeps).
    pub wake_ns: Percentiles,
}

/// A summary as a consumer of the service saw it: which frame of each venue it held, when
/// each was received, and when the consumer saw it.
#[derive(Clone, Copy, Debug)]
pub struct ConsumedSummary {
    pub venue_sequence: [u64; MAX_VENUES],
    pub venue_received_ns: [u64; MAX_VENUES],
    pub seen_ns: u64,
}

/// What a run measured. Frame counts cover the whole run (warm-up included, so that every
/// frame is accounted for); latencies, rates and CPU cover the measured window.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct LoadReport {
    pub rate_per_venue: u32,
    pub venues: Vec<String>,
    #[serde(default = "one")]
    pub instruments: usize,
    #[serde(default)]
    pub hot_rate: Option<u32>,
    pub depth: usize,
    pub idle: String,
    pub merger_core: Option<usize>,
    /// The CPU-latency limit in force during the run ([`crate::cpu_latency`], in µs; the
    /// run's own request or another process's), read at its end; `None` where the device
    /// could not be read (it needs root).
    pub cpu_wake_latency_limit_us: Option<i32>,
    /// The cpuidle driver in use ([`crate::cpu_latency::idle_driver`]); `None`: there is
    /// none, and idle CPUs halt whatever the limit.
    pub cpu_idle_driver: Option<String>,
    pub window_seconds: f64,
    pub sent: u64,
    pub published: u64,
    pub superseded: u64,
    /// sent − published − superseded (negative would mean something was counted twice).
    pub lost: i64,
    /// Publishes of a frame the simulator never logged, plus records a full channel
    /// could not take: any of them makes the accounting void.
    pub unaccounted: u64,
    /// Frames sent per second per venue in the window (the simulator may fall behind its
    /// target when the receiving side pushes back).
    pub achieved_rate_per_venue: f64,
    /// Frames sent per second in the window, all books, and the rate the spec asks for.
    #[serde(default)]
    pub achieved_frames_per_second: f64,
    #[serde(default)]
    pub expected_frames_per_second: f64,
    /// The first instrument's frames alone (the hot book's, with `hot_rate`).
    #[serde(default)]
    pub first_instrument_wire_ns: Percentiles,
    /// From the service's start to every book synced (connections opened within the
    /// venues' budgets, subscriptions acknowledged, first books merged).
    #[serde(default)]
    pub synced_after_seconds: f64,
    /// Simulator socket write → summary published.
    pub wire_ns: Percentiles,
    /// The first and the last full second of the window alone: latency that grows from
    /// one to the other is a backlog.
    pub first_second_wire_ns: Percentiles,
    pub final_second_wire_ns: Percentiles,
    /// Reader receive → summary published, per frame.
    pub internal_ns: Percentiles,
    pub internal_split: InProcessSplit,
    /// Reader receive → seen by a consumer, per frame of the summaries the consumer saw (a
    /// consumer skips the summaries published while it was busy: latest value wins).
    pub to_consumer_ns: Percentiles,
    /// `orderbook_e2e_duration_seconds` over the whole run: its count, and the upper
    /// bounds of the buckets holding its P50 and P99.
    pub e2e_histogram_count: u64,
    pub e2e_histogram_p50_le_ns: u64,
    pub e2e_histogram_p99_le_ns: u64,
    /// CPU of the service's threads (readers, merger, its tokio workers) in the window,
    /// and the same split by thread group. A spinning merger's idle polls count.
    pub service_cpu_seconds: f64,
    pub reader_cpu_seconds: f64,
    pub merger_cpu_seconds: f64,
    pub service_runtime_cpu_seconds: f64,
    pub service_cpu_seconds_per_million_frames: f64,
    /// CPU of the whole process (adds the simulator and the harness).
    pub process_cpu_seconds: f64,
    pub peak_rss_bytes: u64,
    /// Of the machine's CPU time in the window (all CPUs), the share the hypervisor gave
    /// to others (`steal` in `/proc/stat`), in percent; 0 where it is not reported.
    pub steal_percent: f64,
    /// (seconds since the window opened, resident bytes).
    pub rss_samples: Vec<(f64, u64)>,
}

fn one() -> usize {
    1
}

impl LoadReport {
    /// `seconds` of CPU in the window, in percent of one core.
    pub fn percent_of_a_core(&self, seconds: f64) -> f64 {
        100.0 * seconds / self.window_seconds.max(f64::MIN_POSITIVE)
    }

    /// No loss, nothing unaccounted, the simulator kept its rate (99%), and no growing
    /// backlog: the final second's P99 at most twice the first second's (or under 1 ms,
    /// below which the simulator's 1 ms bursts alone explain the spread).
    pub fn sustained(&self) -> bool {
        self.lost == 0
            && self.unaccounted == 0
            && self.achieved_frames_per_second >= 0.99 * self.expected_frames_per_second
            && self.final_second_wire_ns.p99 <= (2 * self.first_second_wire_ns.p99).max(1_000_000)
    }
}

/// Matches frames sent with the publishes that contained them (module docs), per book
/// (instrument and venue). Pure: the harness feeds it records in an order where every
/// publish comes after its frame's send.
pub struct Accounting {
    venues: Vec<VenueId>,
    /// (venue, stream) → instrument, for the frames the simulator logs.
    instrument_of: HashMap<(VenueId, Arc<str>), usize>,
    /// Per instrument and venue, frames sent and not yet published or passed, oldest
    /// first: (sequence, sent_ns).
    pending: Vec<[VecDeque<(u64, u64)>; MAX_VENUES]>,
    last_published: Vec<[u64; MAX_VENUES]>,
    /// The consumer follows the first instrument.
    last_consumed: [u64; MAX_VENUES],
    pub sent: u64,
    pub published: u64,
    /// Frames a later published frame passed over.
    pub passed_over: u64,
    /// Publishes of a frame that was never logged as sent, and frames of a stream of no
    /// instrument.
    pub unmatched: u64,
    /// Frames sent before this time are not timed (warm-up).
    pub measure_from_ns: u64,
    pub wire: Histogram<u64>,
    /// The first instrument's frames alone.
    pub first_instrument_wire: Histogram<u64>,
    pub internal: Histogram<u64>,
    pub to_merger: Histogram<u64>,
    pub merge: Histogram<u64>,
    pub wake: Histogram<u64>,
    pub to_consumer: Histogram<u64>,
    pub first_second: Option<Histogram<u64>>,
    pub final_second: Histogram<u64>,
    this_second: Histogram<u64>,
}

fn latency_histogram() -> Histogram<u64> {
    // 1 ns to 100 s, 3 significant digits.
    Histogram::new_with_bounds(1, 100_000_000_000, 3).expect("valid bounds")
}

impl Accounting {
    /// `streams`: each instrument's stream on each venue, as (venue, stream name).
    pub fn new(venues: &[VenueId], streams: &[Vec<(VenueId, String)>]) -> Accounting {
        let instrument_of = streams
            .iter()
            .enumerate()
            .flat_map(|(instrument, streams)| {
                streams
                    .iter()
                    .map(move |(venue, name)| ((*venue, Arc::from(name.as_str())), instrument))
            })
            .collect();
        Accounting {
            venues: venues.to_vec(),
            instrument_of,
            pending: (0..streams.len()).map(|_| Default::default()).collect(),
            last_published: vec![[0; MAX_VENUES]; streams.len()],
            last_consumed: [0; MAX_VENUES],
            sent: 0,
            published: 0,
            passed_over: 0,
            unmatched: 0,
            measure_from_ns: u64::MAX,
            wire: latency_histogram(),
            first_instrument_wire: latency_histogram(),
            internal: latency_histogram(),
            to_merger: latency_histogram(),
            merge: latency_histogram(),
            wake: latency_histogram(),
            to_consumer: latency_histogram(),
            first_second: None,
            final_second: latency_histogram(),
            this_second: latency_histogram(),
        }
    }

    pub fn on_sent(&mut self, frame: SentFrame) {
        self.sent += 1;
        let Some(&instrument) = self.instrument_of.get(&(frame.venue, frame.stream)) else {
            self.unmatched += 1;
            return;
        };
        self.pending[instrument][frame.venue.index()].push_back((frame.sequence, frame.sent_ns));
    }

    pub fn on_publish(&mut self, record: &PublishRecord) {
        let instrument = record.instrument;
        for &venue in &self.venues {
            let index = venue.index();
            let sequence = record.venue_sequence[index];
            let last_published = &mut self.last_published[instrument][index];
            if sequence <= *last_published {
                continue; // this venue's book did not change in this summary
            }
            *last_published = sequence;
            let pending = &mut self.pending[instrument][index];
            while pending.front().is_some_and(|&(sent, _)| sent < sequence) {
                pending.pop_front();
                self.passed_over += 1;
            }
            match pending.front() {
                Some(&(sent, sent_ns)) if sent == sequence => {
                    pending.pop_front();
                    self.published += 1;
                    if sent_ns >= self.measure_from_ns {
                        let wire = record.published_ns.saturating_sub(sent_ns);
                        self.wire.saturating_record(wire);
                        if instrument == 0 {
                            self.first_instrument_wire.saturating_record(wire);
                        }
                        self.this_second.saturating_record(wire);
                        let received_ns = record.venue_received_ns[index];
                        self.internal
                            .saturating_record(record.published_ns.saturating_sub(received_ns));
                        self.to_merger
                            .saturating_record(record.polled_ns.saturating_sub(received_ns));
                        self.merge.saturating_record(
                            record
                                .written_ns
                                .saturating_sub(record.polled_ns.max(received_ns)),
                        );
                        self.wake.saturating_record(
                            record.published_ns.saturating_sub(record.written_ns),
                        );
                    }
                }
                _ => self.unmatched += 1,
            }
        }
    }

    /// Times each venue's frame that is new in a summary the consumer saw.
    pub fn on_consumed(&mut self, summary: &ConsumedSummary) {
        for &venue in &self.venues {
            let index = venue.index();
            if summary.venue_sequence[index] <= self.last_consumed[index] {
                continue;
            }
            self.last_consumed[index] = summary.venue_sequence[index];
            let received_ns = summary.venue_received_ns[index];
            if received_ns >= self.measure_from_ns {
                self.to_consumer
                    .saturating_record(summary.seen_ns.saturating_sub(received_ns));
            }
        }
    }

    /// Closes a second of the window: its latencies become `final_second`.
    pub fn end_second(&mut self) {
        std::mem::swap(&mut self.final_second, &mut self.this_second);
        self.this_second.reset();
        if self.first_second.is_none() {
            self.first_second = Some(self.final_second.clone());
        }
    }

    /// Frames sent that no publish has yet reached.
    pub fn unresolved(&self) -> usize {
        self.pending.iter().flatten().map(VecDeque::len).sum()
    }
}

/// Sums of CPU time (ns) per thread group, from `/proc/self/task/*/schedstat`. The
/// service's threads are its readers (`reader-<venue>`), the merger, and its runtime's
/// workers (named by `run`).
#[derive(Clone, Copy, Default)]
struct CpuTimes {
    readers_ns: u64,
    merger_ns: u64,
    service_runtime_ns: u64,
    process_ns: u64,
}

impl CpuTimes {
    fn service_ns(&self) -> u64 {
        self.readers_ns + self.merger_ns + self.service_runtime_ns
    }
}

const SERVICE_THREADS: &str = "service-rt";
const SIMULATOR_THREADS: &str = "simulator-rt";

fn cpu_times() -> CpuTimes {
    let mut times = CpuTimes::default();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return times;
    };
    for task in tasks.flatten() {
        let path = task.path();
        let name = std::fs::read_to_string(path.join("comm")).unwrap_or_default();
        let on_cpu_ns = std::fs::read_to_string(path.join("schedstat"))
            .ok()
            .and_then(|text| text.split_whitespace().next()?.parse::<u64>().ok())
            .unwrap_or(0);
        times.process_ns += on_cpu_ns;
        match name.trim() {
            "merger" => times.merger_ns += on_cpu_ns,
            reader if reader.starts_with("reader-") => times.readers_ns += on_cpu_ns,
            worker if worker.starts_with(SERVICE_THREADS) => {
                times.service_runtime_ns += on_cpu_ns;
            }
            _ => {}
        }
    }
    times
}

/// `/proc/stat`'s first line: (steal, all time) in ticks, all CPUs together.
fn machine_cpu_ticks() -> (u64, u64) {
    std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|text| steal_and_total_ticks(text.lines().next()?))
        .unwrap_or((0, 0))
}

/// `cpu  user nice system idle iowait irq softirq steal guest guest_nice`: steal and the
/// sum of the first eight (guest time is already counted in user and nice).
fn steal_and_total_ticks(cpu_line: &str) -> Option<(u64, u64)> {
    let mut fields = cpu_line.split_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    let ticks: Vec<u64> = fields
        .take(8)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    (ticks.len() == 8).then(|| (ticks[7], ticks.iter().sum()))
}

/// A multi-threaded runtime whose threads are named `name` (the CPU accounting tells
/// thread groups apart by name).
pub(crate) fn runtime(name: &str, workers: usize) -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .thread_name(name)
        .enable_all()
        .build()
        .map_err(|error| format!("runtime: {error}"))
}

/// `VmRSS` and `VmHWM` of this process, in bytes.
pub(crate) fn memory() -> (u64, u64) {
    mergebook_testkit::process::memory("self")
}

/// A bounded channel of every publish. The merger never waits on it: a full channel
/// drops the record and counts it in `overflowed`, which the harness reports as a failure.
struct PublishTap {
    records: std::sync::mpsc::SyncSender<PublishRecord>,
    overflowed: Arc<AtomicU64>,
}

impl PublishObserver for PublishTap {
    const OBSERVES: bool = true;

    fn published(&mut self, record: &PublishRecord) {
        if self.records.try_send(*record).is_err() {
            self.overflowed.fetch_add(1, Ordering::Relaxed);
        }
    }
}

/// The simulator's rate, and so its ticks: the fastest book's, at least a thousand a
/// second (the slower books skip ticks).
fn ticks_per_second(spec: &LoadSpec) -> u32 {
    spec.hot_rate
        .unwrap_or(0)
        .max(spec.rate_per_venue)
        .max(1000)
}

/// Each instrument's symbol on `venue`: the first is ETH/BTC, the others made up.
fn symbol(venue: VenueId, instrument: usize) -> String {
    match instrument {
        0 => venue.streams().spot_symbol("ETH", "BTC"),
        _ => venue
            .streams()
            .spot_symbol(&format!("I{instrument}"), "BTC"),
    }
}

/// Each instrument's stream on each venue, as the simulator names the streams it sends:
/// what it reads from the service's subscription (OKX's `books5:ETH-BTC` for the stream
/// the service names `ETH-BTC`).
fn streams(spec: &LoadSpec) -> Vec<Vec<(VenueId, String)>> {
    let simulated = |venue: VenueId, instrument: usize| {
        let stream = venue
            .streams()
            .stream_name(&symbol(venue, instrument), spec.depth);
        let requests = venue.streams().subscribe_frames(
            std::slice::from_ref(&stream),
            StreamKind::Snapshots,
            spec.depth,
            1,
        );
        requests
            .first()
            .and_then(|request| venue.simulated().answer_request(&request.frame))
            .and_then(|answer| answer.subscribe.into_iter().next())
            .unwrap_or(stream)
    };
    (0..spec.instruments)
        .map(|instrument| {
            spec.venues
                .iter()
                .map(|&venue| (venue, simulated(venue, instrument)))
                .collect()
        })
        .collect()
}

fn config_for(spec: &LoadSpec) -> Result<mergebook::config::Config, String> {
    let core = spec
        .merger_core
        .map_or_else(String::new, |core| format!("core = {core}"));
    let instruments: String = (0..spec.instruments)
        .map(|instrument| {
            let symbols: Vec<String> = spec
                .venues
                .iter()
                .map(|&venue| format!("{venue} = \"{}\"", symbol(venue, instrument)))
                .collect();
            let name = match instrument {
                0 => "ETH/BTC".to_owned(),
                _ => format!("I{instrument}/BTC"),
            };
            format!(
                "[[instruments]]\nname = \"{name}\"\nsymbols = {{ {} }}\n",
                symbols.join(", ")
            )
        })
        .collect();
    let text = format!(
        r#"
        [service]
        depth = {depth}
        output = "none"
        max_instruments = {count}
        [merger]
        idle = "{idle}"
        {core}
        [grpc]
        listen = "127.0.0.1:0"
        [metrics]
        listen = "127.0.0.1:0"
        # The venues are this process's simulator's (`Simulator::point`).
        [simulator]
        {instruments}
        "#,
        depth = spec.depth,
        count = spec.instruments,
        idle = spec.idle.name(),
    );
    RawConfig::parse(&text, "loadtest")
        .and_then(|raw| raw.validate())
        .map_err(|error| error.to_string())
}

/// Capacity of the send log and the publish tap: at 200k frames/s, 80 ms of records, far
/// more than the harness's 1 ms between drains.
const CHANNEL_CAPACITY: usize = 1 << 14;
/// Capacity of the consumer's records: it sees one summary per wake-up, a few µs apart at
/// the least, so 4 ms of them at its fastest; smaller than the tap's because the
/// channel's buffer counts in the peak RSS reported.
const CONSUMER_CHANNEL_CAPACITY: usize = 1 << 12;
/// Longest wait past the warm-up for every book to be synced.
const SYNC_TIMEOUT: Duration = Duration::from_secs(60);
/// Longest wait, after the simulator stops, for the last frames to be published.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(2);

/// Runs one load run in this process.
pub fn run(spec: &LoadSpec) -> Result<LoadReport, String> {
    let _cpu_latency_request = spec
        .cpu_wake_latency_us
        .map(CpuLatencyRequest::hold)
        .transpose()
        .map_err(|error| error.to_string())?;
    let mut config = config_for(spec)?;
    // The simulator gets one worker, the service the runtime the binary runs it on.
    let simulator_runtime = runtime(SIMULATOR_THREADS, 1)?;
    let service_runtime = runtime(SERVICE_THREADS, config.runtime_workers())?;

    let (sends, sent_frames) = sync_channel(CHANNEL_CAPACITY);
    let simulator = simulator_runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|error| format!("simulator: {error}"))?;
        Simulator::start(listener, ticks_per_second(spec), 1).map_err(|error| error.to_string())
    })?;
    let streams = streams(spec);
    // Below a thousand frames a second, a book sends one tick in so many: the books' frames
    // spread over the ticks as a market's updates do, not all in one write each tick.
    let every = |rate: u32| ticks_per_second(spec) / rate.max(1);
    let hot = match spec.hot_rate {
        Some(_) => streams[0].iter().map(|(_, name)| name.clone()).collect(),
        None => Vec::new(),
    };
    let hot_every = every(spec.hot_rate.unwrap_or(spec.rate_per_venue));
    simulator.set_stream_pacing(hot, hot_every, every(spec.rate_per_venue));
    simulator.record_sends(sends);
    simulator.point(&mut config);

    let (records, publishes) = sync_channel(CHANNEL_CAPACITY);
    let overflowed = Arc::new(AtomicU64::new(0));
    let tap = PublishTap {
        records,
        overflowed: Arc::clone(&overflowed),
    };
    let started = Instant::now();
    let service = service_runtime.block_on(async {
        let listeners = Listeners::loopback()
            .await
            .map_err(|error| error.to_string())?;
        Service::start_observed(config, listeners, tap).map_err(|error| error.to_string())
    })?;
    let metrics = service.metrics();

    let (consumer, consumed) = sync_channel(CONSUMER_CHANNEL_CAPACITY);
    let mut summaries = service.summaries(0);
    let consumer_overflowed = Arc::clone(&overflowed);
    service_runtime.spawn(async move {
        // Ends when the service stops and its fan-out drops the channel.
        while summaries.changed().await.is_ok() {
            let seen_ns = clock::monotonic_ns();
            let summary = Arc::clone(&summaries.borrow_and_update());
            let seen = ConsumedSummary {
                venue_sequence: summary.venue_sequence,
                venue_received_ns: summary.venue_received_ns,
                seen_ns,
            };
            if consumer.try_send(seen).is_err() {
                consumer_overflowed.fetch_add(1, Ordering::Relaxed);
            }
        }
    });

    let mut accounting = Accounting::new(&spec.venues, &streams);
    let drain = |accounting: &mut Accounting| {
        // Publishes first: every publish taken here had its frame logged before it, so the
        // sends drained next include it.
        let taken: Vec<PublishRecord> = publishes.try_iter().collect();
        sent_frames
            .try_iter()
            .for_each(|frame| accounting.on_sent(frame));
        taken
            .iter()
            .for_each(|record| accounting.on_publish(record));
        consumed
            .try_iter()
            .for_each(|summary| accounting.on_consumed(&summary));
    };

    // Every book synced: then the warm-up's time runs (it counts from the start while
    // the books are being synced).
    let latest: Vec<_> = (0..spec.instruments)
        .map(|i| service.summaries(i))
        .collect();
    let all_synced = || {
        latest.iter().all(|summary| {
            let summary = summary.borrow();
            summary.venue_states().count() == spec.venues.len()
                && summary
                    .venue_states()
                    .all(|(_, state)| state == mergebook::merger::summary::VenueState::Synced)
        })
    };
    let mut synced_after = None;
    while synced_after.is_none() && started.elapsed() < spec.warmup + SYNC_TIMEOUT {
        drain(&mut accounting);
        if all_synced() {
            synced_after = Some(started.elapsed().as_secs_f64());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let Some(synced_after_seconds) = synced_after else {
        return Err(format!(
            "not every book synced within {:?} of the start",
            spec.warmup + SYNC_TIMEOUT
        ));
    };
    while started.elapsed() < spec.warmup {
        drain(&mut accounting);
        std::thread::sleep(Duration::from_millis(1));
    }
    let window_start_ns = clock::monotonic_ns();
    accounting.measure_from_ns = window_start_ns;
    let sent_before_window = accounting.sent;
    let cpu_before = cpu_times();
    let machine_before = machine_cpu_ticks();
    let window_started = Instant::now();
    let mut rss_samples = vec![(0.0, memory().0)];
    let mut next_second = Duration::from_secs(1);
    let mut next_sample = spec.rss_every;
    while window_started.elapsed() < spec.duration {
        drain(&mut accounting);
        let elapsed = window_started.elapsed();
        if elapsed >= next_second {
            accounting.end_second();
            next_second += Duration::from_secs(1);
        }
        if elapsed >= next_sample {
            rss_samples.push((elapsed.as_secs_f64(), memory().0));
            next_sample += spec.rss_every;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    for &venue in &spec.venues {
        simulator.pause(venue, true);
    }
    let window_seconds = window_started.elapsed().as_secs_f64();
    let machine_after = machine_cpu_ticks();
    // Frames the simulator stamped before the pause took effect still count as sent in
    // the window; give them time to be logged, then wait for their publishes.
    std::thread::sleep(Duration::from_millis(5));
    drain(&mut accounting);
    let sent_in_window = accounting.sent - sent_before_window;
    let drain_started = Instant::now();
    while accounting.unresolved() > 0 && drain_started.elapsed() < DRAIN_TIMEOUT {
        drain(&mut accounting);
        if accounting.unresolved() == 0 {
            break;
        }
        // A frame whose newer frame is already in the mailbox resolves only through it:
        // wait for the publishes, which follow within the merger's idle period.
        std::thread::sleep(Duration::from_millis(1));
    }
    let cpu_after = cpu_times();
    let (_, peak_rss_bytes) = memory();
    let cpu_wake_latency_limit_us = CpuLatencyRequest::effective_us().ok();

    service_runtime.block_on(service.stop());
    drain(&mut accounting);
    let superseded: u64 = spec
        .venues
        .iter()
        .map(|venue| metrics.superseded.with_label_values(&[venue.name()]).get())
        .sum();
    let (e2e_count, e2e_p50, e2e_p99) = histogram_quantiles(&metrics.e2e_seconds);
    let seconds = |after: u64, before: u64| after.saturating_sub(before) as f64 * 1e-9;
    let service_cpu_seconds = seconds(cpu_after.service_ns(), cpu_before.service_ns());
    let books_per_venue = match spec.hot_rate {
        Some(hot_rate) => {
            f64::from(hot_rate) + (spec.instruments - 1) as f64 * f64::from(spec.rate_per_venue)
        }
        None => spec.instruments as f64 * f64::from(spec.rate_per_venue),
    };
    let report = LoadReport {
        rate_per_venue: spec.rate_per_venue,
        venues: spec.venues.iter().map(|v| v.name().to_owned()).collect(),
        instruments: spec.instruments,
        hot_rate: spec.hot_rate,
        achieved_frames_per_second: sent_in_window as f64 / window_seconds,
        expected_frames_per_second: books_per_venue * spec.venues.len() as f64,
        first_instrument_wire_ns: Percentiles::of(&accounting.first_instrument_wire),
        synced_after_seconds,
        depth: spec.depth,
        idle: spec.idle.name().to_owned(),
        merger_core: spec.merger_core,
        cpu_wake_latency_limit_us,
        cpu_idle_driver: idle_driver(),
        window_seconds,
        sent: accounting.sent,
        published: accounting.published,
        superseded,
        lost: accounting.sent as i64 - accounting.published as i64 - superseded as i64,
        unaccounted: accounting.unmatched
            + overflowed.load(Ordering::Relaxed)
            + simulator.unlogged_sends(),
        achieved_rate_per_venue: sent_in_window as f64 / window_seconds / spec.venues.len() as f64,
        wire_ns: Percentiles::of(&accounting.wire),
        first_second_wire_ns: accounting
            .first_second
            .as_ref()
            .map(Percentiles::of)
            .unwrap_or_default(),
        final_second_wire_ns: Percentiles::of(&accounting.final_second),
        internal_ns: Percentiles::of(&accounting.internal),
        internal_split: InProcessSplit {
            to_merger_ns: Percentiles::of(&accounting.to_merger),
            merge_ns: Percentiles::of(&accounting.merge),
            wake_ns: Percentiles::of(&accounting.wake),
        },
        to_consumer_ns: Percentiles::of(&accounting.to_consumer),
        e2e_histogram_count: e2e_count,
        e2e_histogram_p50_le_ns: e2e_p50,
        e2e_histogram_p99_le_ns: e2e_p99,
        service_cpu_seconds,
        reader_cpu_seconds: seconds(cpu_after.readers_ns, cpu_before.readers_ns),
        merger_cpu_seconds: seconds(cpu_after.merger_ns, cpu_before.merger_ns),
        service_runtime_cpu_seconds: seconds(
            cpu_after.service_runtime_ns,
            cpu_before.service_runtime_ns,
        ),
        service_cpu_seconds_per_million_frames: service_cpu_seconds * 1e6
            / sent_in_window.max(1) as f64,
        process_cpu_seconds: seconds(cpu_after.process_ns, cpu_before.process_ns),
        peak_rss_bytes,
        steal_percent: 100.0 * machine_after.0.saturating_sub(machine_before.0) as f64
            / machine_after.1.saturating_sub(machine_before.1).max(1) as f64,
        rss_samples,
    };
    drop(simulator);
    simulator_runtime.shutdown_timeout(Duration::from_secs(1));
    service_runtime.shutdown_timeout(Duration::from_secs(1));
    Ok(report)
}

/// A Prometheus histogram's count and the upper bounds (ns) of the buckets holding its
/// P50 and P99 (`u64::MAX`: beyond the last bucket).
fn histogram_quantiles(histogram: &prometheus::Histogram) -> (u64, u64, u64) {
    use prometheus::core::Metric;
    let metric = histogram.metric();
    let data = metric.get_histogram();
    let count = data.get_sample_count();
    let bound = |quantile: f64| {
        let rank = (quantile * count as f64).ceil() as u64;
        data.get_bucket()
            .iter()
            .find(|bucket| bucket.cumulative_count() >= rank)
            .map_or(u64::MAX, |bucket| {
                (bucket.upper_bound() * 1e9).round() as u64
            })
    };
    (count, bound(0.50), bound(0.99))
}

/// The rates `--find-max` tries: doubling from `start` until a rate is not sustained, then
/// halving the interval between the best sustained and the first failed rate until it is
/// within 5% (or `bisections` rates are spent). A rate fails only if two runs in a row
/// are not sustained: on this shared machine one second's hiccup can fail the backlog rule
/// of a rate sustained with room to spare, and one failure would end the doubling there;
/// a reader that cannot keep up fails both.
pub struct MaxRateSearch {
    best: Option<u32>,
    failed: Option<u32>,
    /// A rate whose one run was not sustained, to be run once more.
    to_retry: Option<u32>,
    start: u32,
    bisections: u32,
}

impl MaxRateSearch {
    pub fn new(start: u32, bisections: u32) -> MaxRateSearch {
        MaxRateSearch {
            best: None,
            failed: None,
            to_retry: None,
            start,
            bisections,
        }
    }

    /// The highest rate sustained so far.
    pub fn best(&self) -> Option<u32> {
        self.best
    }

    pub fn record(&mut self, rate: u32, sustained: bool) {
        let retried = self.to_retry.take() == Some(rate);
        if sustained {
            self.best = self.best.max(Some(rate));
        } else if retried {
            self.failed = Some(self.failed.map_or(rate, |failed| failed.min(rate)));
        } else {
            self.to_retry = Some(rate);
        }
    }

    /// The next rate to try, or `None` when the search is done.
    pub fn next_rate(&mut self) -> Option<u32> {
        if let Some(rate) = self.to_retry {
            return Some(rate);
        }
        let best = self.best.unwrap_or(0);
        let Some(failed) = self.failed else {
            return Some(if best == 0 {
                self.start
            } else {
                best.saturating_mul(2)
            });
        };
        if self.bisections == 0 || failed - best <= failed / 20 {
            return None;
        }
        self.bisections -= 1;
        // Rounded to a thousand frames per second, never onto a rate already tried.
        let middle = (best + (failed - best) / 2) / 1000 * 1000;
        (middle > best && middle < failed).then_some(middle)
    }
}

/// The reports as markdown tables (BENCHMARKS.md's wire-to-publish tables): the figures,
/// then the in-process latency's parts and the time to a consumer.
pub fn table(reports: &[LoadReport]) -> String {
    let micros = |ns: u64| format!("{:.1}", ns as f64 / 1e3);
    let mut out = String::from(
        "| rate/venue | sent | published | superseded | lost | wire P50 µs | P99 | P99.9 | max | \
         in-process P50 µs | P99 | P99.9 | e2e histogram P50/P99 ≤ µs | service CPU s / M frames | \
         peak RSS MiB | achieved rate/venue | steal % |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|\n",
    );
    for report in reports {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} / {} | {:.2} | {:.1} | {:.0} | {:.1} |\n",
            report.rate_per_venue,
            report.sent,
            report.published,
            report.superseded,
            report.lost,
            micros(report.wire_ns.p50),
            micros(report.wire_ns.p99),
            micros(report.wire_ns.p999),
            micros(report.wire_ns.max),
            micros(report.internal_ns.p50),
            micros(report.internal_ns.p99),
            micros(report.internal_ns.p999),
            micros(report.e2e_histogram_p50_le_ns),
            micros(report.e2e_histogram_p99_le_ns),
            report.service_cpu_seconds_per_million_frames,
            report.peak_rss_bytes as f64 / (1 << 20) as f64,
            report.achieved_rate_per_venue,
            report.steal_percent,
        ));
    }
    out.push_str(
        "\n| rate/venue | in-process P50 µs | P99 | to merger P50 µs | P99 | merge P50 µs | P99 | \
         wake P50 µs | P99 | to consumer P50 µs | P99 |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for report in reports {
        let split = &report.internal_split;
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n",
            report.rate_per_venue,
            micros(report.internal_ns.p50),
            micros(report.internal_ns.p99),
            micros(split.to_merger_ns.p50),
            micros(split.to_merger_ns.p99),
            micros(split.merge_ns.p50),
            micros(split.merge_ns.p99),
            micros(split.wake_ns.p50),
            micros(split.wake_ns.p99),
            micros(report.to_consumer_ns.p50),
            micros(report.to_consumer_ns.p99),
        ));
    }
    let limits: Vec<String> = reports
        .iter()
        .map(|report| {
            let limit = match report.cpu_wake_latency_limit_us {
                None => "unknown (reading the device needs root)".to_owned(),
                Some(NO_LIMIT_US) => "none (idle CPUs may halt)".to_owned(),
                Some(us) => format!("{us} µs"),
            };
            format!("{} frames/s: {limit}", report.rate_per_venue)
        })
        .collect();
    // One machine, so one driver for every run.
    let driver = reports
        .first()
        .and_then(|report| report.cpu_idle_driver.as_deref())
        .unwrap_or("none (idle CPUs halt whatever the limit)");
    out.push_str(&format!(
        "\nCPU wake-latency limit ({DEVICE}) in each run: {}; cpuidle driver: {driver}\n",
        limits.join("; ")
    ));
    out
}

/// The reports of runs with different numbers of books as a markdown table
/// (BENCHMARKS.md's "Many books"): frames, latency (all books, and the first instrument's
/// alone: the hot book with `hot_rate`), CPU per thread group in percent of a core (the
/// load generator's too: it shares the cores), and memory.
pub fn books_table(reports: &[LoadReport]) -> String {
    let micros = |ns: u64| format!("{:.1}", ns as f64 / 1e3);
    let mut out = String::from(
        "| books | all synced after s | frames/s sent (asked) | lost | wire P50 µs | P99 | P99.9 | \
         first instrument's P50 µs | P99 | readers % of a core | merger % | service runtime % | \
         simulator and harness % | peak RSS MiB | steal % |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for report in reports {
        let percent = |seconds| report.percent_of_a_core(seconds);
        out.push_str(&format!(
            "| {} | {:.2} | {:.0} ({:.0}) | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |\n",
            report.instruments * report.venues.len(),
            report.synced_after_seconds,
            report.achieved_frames_per_second,
            report.expected_frames_per_second,
            report.lost,
            micros(report.wire_ns.p50),
            micros(report.wire_ns.p99),
            micros(report.wire_ns.p999),
            micros(report.first_instrument_wire_ns.p50),
            micros(report.first_instrument_wire_ns.p99),
            percent(report.reader_cpu_seconds),
            percent(report.merger_cpu_seconds),
            percent(report.service_runtime_cpu_seconds),
            percent(report.process_cpu_seconds - report.service_cpu_seconds),
            report.peak_rss_bytes as f64 / (1 << 20) as f64,
            report.steal_percent,
        ));
    }
    out
}

/// Wire-to-publish latency (P50, P99, and the first instrument's P50) and CPU (readers,
/// merger) against the number of books, as an SVG of two charts, books on a log scale.
pub fn books_plot(reports: &[LoadReport]) -> String {
    let books: Vec<f64> = reports
        .iter()
        .map(|r| (r.instruments * r.venues.len()) as f64)
        .collect();
    let micros = |ns: u64| (ns as f64 / 1e3).max(0.1);
    let percent = |r: &LoadReport, seconds| r.percent_of_a_core(seconds);
    let latency = [
        (
            "wire P50",
            "#1f77b4",
            reports
                .iter()
                .map(|r| micros(r.wire_ns.p50))
                .collect::<Vec<_>>(),
        ),
        (
            "wire P99",
            "#d62728",
            reports.iter().map(|r| micros(r.wire_ns.p99)).collect(),
        ),
        (
            "first instrument P50",
            "#2ca02c",
            reports
                .iter()
                .map(|r| micros(r.first_instrument_wire_ns.p50))
                .collect(),
        ),
    ];
    let cpu = [
        (
            "readers",
            "#9467bd",
            reports
                .iter()
                .map(|r| percent(r, r.reader_cpu_seconds))
                .collect::<Vec<_>>(),
        ),
        (
            "merger",
            "#ff7f0e",
            reports
                .iter()
                .map(|r| percent(r, r.merger_cpu_seconds))
                .collect(),
        ),
    ];
    let mut svg = String::from(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"900\" height=\"360\" \
         font-family=\"sans-serif\" font-size=\"12\">\n<rect width=\"900\" height=\"360\" fill=\"white\"/>\n",
    );
    chart(
        &mut svg,
        60.0,
        "wire to publish, µs (log)",
        &books,
        &latency,
        true,
    );
    chart(&mut svg, 510.0, "CPU, % of a core", &books, &cpu, false);
    svg.push_str("</svg>\n");
    svg
}

/// One chart of `books_plot` at `left`: each series a line and its points, books on a log
/// x axis, values on a log or linear y axis.
fn chart(
    svg: &mut String,
    left: f64,
    title: &str,
    books: &[f64],
    series: &[(&str, &str, Vec<f64>)],
    log_y: bool,
) {
    let (width, top, height) = (360.0, 40.0, 260.0);
    let scale = |value: f64, log: bool| if log { value.max(1e-9).log10() } else { value };
    let span = |values: &mut dyn Iterator<Item = f64>, log: bool| {
        let (mut low, mut high) = (f64::MAX, f64::MIN);
        for value in values {
            low = low.min(scale(value, log));
            high = high.max(scale(value, log));
        }
        let (low, high) = if log {
            (low.floor(), high.ceil().max(low.floor() + 1.0))
        } else {
            (0.0, (high * 1.15).max(1.0))
        };
        (low, high)
    };
    let (x_low, x_high) = span(&mut books.iter().copied(), true);
    let (y_low, y_high) = span(
        &mut series.iter().flat_map(|(_, _, v)| v.iter().copied()),
        log_y,
    );
    let x = |books: f64| left + (scale(books, true) - x_low) / (x_high - x_low) * width;
    let y = |value: f64| top + height - (scale(value, log_y) - y_low) / (y_high - y_low) * height;
    svg.push_str(&format!(
        "<text x=\"{left}\" y=\"24\" font-weight=\"bold\">{title}</text>\n\
         <rect x=\"{left}\" y=\"{top}\" width=\"{width}\" height=\"{height}\" fill=\"none\" stroke=\"gray\"/>\n"
    ));
    for decade in x_low as i32..=x_high as i32 {
        let at = x(10f64.powi(decade));
        svg.push_str(&format!(
            "<text x=\"{at:.1}\" y=\"{:.1}\" text-anchor=\"middle\">{}</text>\n",
            top + height + 16.0,
            10u64.pow(decade.max(0) as u32)
        ));
    }
    svg.push_str(&format!(
        "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\">books</text>\n",
        left + width / 2.0,
        top + height + 34.0
    ));
    let ticks: Vec<f64> = if log_y {
        (y_low as i32..=y_high as i32)
            .map(|d| 10f64.powi(d))
            .collect()
    } else {
        (0..=4).map(|i| y_high * f64::from(i) / 4.0).collect()
    };
    for tick in ticks {
        svg.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>\n",
            left - 6.0,
            y(tick) + 4.0,
            if tick >= 10.0 {
                format!("{tick:.0}")
            } else {
                format!("{tick:.1}")
            }
        ));
    }
    for (index, (name, colour, values)) in series.iter().enumerate() {
        let points: Vec<String> = books
            .iter()
            .zip(values)
            .map(|(&b, &v)| format!("{:.1},{:.1}", x(b), y(v)))
            .collect();
        svg.push_str(&format!(
            "<polyline points=\"{}\" fill=\"none\" stroke=\"{colour}\" stroke-width=\"2\"/>\n",
            points.join(" ")
        ));
        for point in &points {
            let (px, py) = point.split_once(',').expect("x,y");
            svg.push_str(&format!(
                "<circle cx=\"{px}\" cy=\"{py}\" r=\"3\" fill=\"{colour}\"/>\n"
            ));
        }
        let legend_y = top + 14.0 + 16.0 * index as f64;
        svg.push_str(&format!(
            "<text x=\"{:.1}\" y=\"{legend_y:.1}\" fill=\"{colour}\">{name}</text>\n",
            left + 8.0
        ));
    }
}

#[cfg(test)]
mod tests;
