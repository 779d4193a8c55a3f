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

mod accounting;
mod report;

pub use accounting::Accounting;
use accounting::*;
pub use report::{
    ConsumedSummary, InProcessSplit, LoadReport, Percentiles, books_plot, books_table, table,
};

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
    /// The sleep between the `batch` merger's passes (`merger.batch_us`).
    pub batch_us: u32,
    /// The threads the readers share (`feed.reader_threads`; 0: a thread a connection).
    pub reader_threads: u32,
    /// A reader thread's sleep between looks at its sockets (`feed.batch_us`; 0: woken
    /// by each read).
    pub read_batch_us: u32,
    pub merger_core: Option<usize>,
    /// How often memory is sampled.
    pub rss_every: Duration,
    /// Holds the kernel's CPU-latency request at this many µs for the run
    /// ([`crate::cpu_latency`]: 0 keeps idle CPUs polling instead of halting), as a host
    /// tuned for latency would. A run that cannot take it fails.
    pub cpu_wake_latency_us: Option<u32>,
    /// Pages of the web view following the first instrument for the whole run (`[web]`
    /// on when above 0): event streams read on the simulator's runtime, their bytes
    /// dropped, as browsers elsewhere would take them.
    pub web_clients: usize,
    /// `Quote` requests a second on the first instrument for the whole run, over gRPC from
    /// the simulator's runtime as a client elsewhere would ask them (25 of its base coin,
    /// buying and selling in turn).
    pub quotes_per_second: u32,
    /// Each connection writes what is due in this period together (`Simulator::set_ticks_per_write`),
    /// never less often than the fastest book sends.
    pub write_every: Duration,
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

/// The simulator's ticks in `spec.write_every` (at least one).
fn ticks_per_write(spec: &LoadSpec) -> u32 {
    let ticks = spec.write_every.as_secs_f64() * f64::from(ticks_per_second(spec));
    (ticks.round() as u32).max(1)
}

/// Each instrument's symbol on `venue`: the first is ETH/BTC, the others made up.
fn symbol(venue: VenueId, instrument: usize) -> String {
    match instrument {
        0 => crate::spot_symbol(venue, "ETH"),
        _ => crate::spot_symbol(venue, &format!("I{instrument}")),
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
        batch_us = {batch_us}
        {core}
        [feed]
        reader_threads = {reader_threads}
        batch_us = {read_batch_us}
        [grpc]
        listen = "127.0.0.1:0"
        [metrics]
        listen = "127.0.0.1:0"
        max_connections = {connections}
        [web]
        enabled = {web}
        # The venues are this process's simulator's (`Simulator::point`).
        [simulator]
        {instruments}
        "#,
        depth = spec.depth,
        count = spec.instruments,
        idle = spec.idle.name(),
        batch_us = spec.batch_us,
        reader_threads = spec.reader_threads,
        read_batch_us = spec.read_batch_us,
        web = spec.web_clients > 0,
        connections = spec.web_clients + 64,
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

/// A page of the web view, as far as the service can tell: the first instrument's event
/// stream, read as fast as it comes and dropped, until the service closes it; what it
/// read of a stream the service served (HTTP 200) counted in `bytes`.
async fn web_page(metrics: std::net::SocketAddr, bytes: Arc<AtomicU64>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut stream) = tokio::net::TcpStream::connect(metrics).await else {
        return;
    };
    let request = b"GET /book/stream HTTP/1.0\r\nHost: loadtest\r\n\r\n";
    if stream.write_all(request).await.is_err() {
        return;
    }
    let mut buffer = vec![0; 64 * 1024];
    let mut served = false;
    while let Ok(read @ 1..) = stream.read(&mut buffer).await {
        // The status line comes whole in the first read.
        served = served || buffer[..read].starts_with(b"HTTP/1.0 200 ");
        if !served {
            return;
        }
        bytes.fetch_add(read as u64, Ordering::Relaxed);
    }
}

/// What `quote_client` asked and how it went.
#[derive(Default)]
struct QuoteCounts {
    answered: AtomicU64,
    refused: AtomicU64,
}

/// A client asking the first instrument's `Quote` `per_second` times a second until the
/// service goes away: each request waits for its answer, so a slow merger slows the
/// client, never piles requests up.
async fn quote_client(grpc: std::net::SocketAddr, per_second: u32, counts: Arc<QuoteCounts>) {
    use mergebook::publish::proto::orderbook_aggregator_client::OrderbookAggregatorClient;
    use mergebook::publish::proto::{QuoteRequest, quote_request::Side};
    let Ok(mut client) = OrderbookAggregatorClient::connect(format!("http://{grpc}")).await else {
        return;
    };
    let mut every = tokio::time::interval(Duration::from_secs(1) / per_second);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for turn in 0u64.. {
        every.tick().await;
        let request = QuoteRequest {
            instrument: "ETH/BTC".into(),
            side: match turn % 2 {
                0 => Side::Buy,
                _ => Side::Sell,
            } as i32,
            quantity: "25".into(),
            ..QuoteRequest::default()
        };
        let counter = match client.quote(request).await {
            Ok(_) => &counts.answered,
            Err(status) if status.code() == tonic::Code::Unavailable => return,
            Err(_) => &counts.refused,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }
}

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
    simulator.set_ticks_per_write(ticks_per_write(spec).min(hot_every));
    simulator.record_sends(sends);
    simulator.point(&mut config);

    let (records, publishes) = sync_channel(CHANNEL_CAPACITY);
    let overflowed = Arc::new(AtomicU64::new(0));
    let tap = PublishTap {
        records,
        overflowed: Arc::clone(&overflowed),
    };
    let started = Instant::now();
    let (service, metrics_address, grpc_address) = service_runtime.block_on(async {
        let listeners = Listeners::loopback()
            .await
            .map_err(|error| error.to_string())?;
        let metrics_address = listeners.metrics.local_addr().map_err(|e| e.to_string())?;
        let grpc_address = listeners.grpc.local_addr().map_err(|e| e.to_string())?;
        let service = Service::start_observed(config, listeners, tap).map_err(|e| e.to_string())?;
        Ok::<_, String>((service, metrics_address, grpc_address))
    })?;
    let web_bytes = Arc::new(AtomicU64::new(0));
    for _ in 0..spec.web_clients {
        simulator_runtime.spawn(web_page(metrics_address, Arc::clone(&web_bytes)));
    }
    let quotes = Arc::new(QuoteCounts::default());
    if spec.quotes_per_second > 0 {
        let client = quote_client(grpc_address, spec.quotes_per_second, Arc::clone(&quotes));
        simulator_runtime.spawn(client);
    }
    let metrics = service.metrics();

    let (consumer, consumed) = sync_channel(CONSUMER_CHANNEL_CAPACITY);
    let mut summaries = service.summaries(0);
    let consumer_overflowed = Arc::clone(&overflowed);
    service_runtime.spawn(async move {
        // Ends when the service stops and its fan-out drops the channel.
        while summaries.changed().await.is_ok() {
            let seen_ns = clock::monotonic_ns();
            let summary = Arc::clone(&summaries.borrow_and_update());
            let mut seen = ConsumedSummary {
                venue_sequence: [0; MAX_VENUES],
                venue_received_ns: [0; MAX_VENUES],
                seen_ns,
            };
            for (source, venue, _) in summary.sources() {
                seen.venue_sequence[venue.index()] = summary.source_sequence[source];
                seen.venue_received_ns[venue.index()] = summary.source_received_ns[source];
            }
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
            summary.sources().count() == spec.venues.len()
                && summary
                    .sources()
                    .all(|(_, _, state)| state == mergebook::merger::summary::VenueState::Synced)
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
    let quotes_before_window = quotes.answered.load(Ordering::Relaxed);
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
    let quotes_in_window = quotes.answered.load(Ordering::Relaxed) - quotes_before_window;
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
    // Pages that read nothing would measure nothing of what pages cost.
    if spec.web_clients > 0 && web_bytes.load(Ordering::Relaxed) == 0 {
        return Err("the web view's pages received nothing".into());
    }
    // A quote refused (the queue full, no book) or none answered is not a run with quotes.
    let refused = quotes.refused.load(Ordering::Relaxed);
    if spec.quotes_per_second > 0 && (refused > 0 || quotes_in_window == 0) {
        return Err(format!(
            "quotes: {quotes_in_window} answered in the window, {refused} refused"
        ));
    }
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
        quotes_per_second: quotes_in_window as f64 / window_seconds,
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

#[cfg(test)]
mod tests;
