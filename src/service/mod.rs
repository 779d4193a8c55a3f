//! The running service: wires readers, mailboxes, the merger thread, fan-out, and the
//! consumers (JSON lines, gRPC, `/metrics` and `/health`) together, and takes them apart
//! again on shutdown. Listeners are passed in, so tests bind port 0.

use crate::clock::HostClock;
use crate::config::{Config, FeedMode, FeedSettings, IdleStrategy, Instrument, Output};
use crate::feed::handoff::{FeedSender, Handoff, ReadySet, VenueFeed};
use crate::feed::reconnect::{ConnectAttempts, SharedConnectAttempts};
use crate::feed::{self, ReaderSpec, StreamChange, StreamSpec};
use crate::mailbox;
use crate::merger::summary::MAX_SOURCES;
use crate::merger::summary::{Summary, VenueState};
use crate::merger::{self, Consolidation, MergerChange, MergerSpec, WiredInstrument};
use crate::metrics::{Metrics, VenueMetrics};
use crate::publish::catalog::{Catalog, Listed, Listing};
use crate::publish::{self, FanoutChange, grpc, jsonl};
use crate::record::{ConnectionRecorder, RecordMetrics, Recorder};
use crate::venue::VenueId;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{Notify, mpsc, watch};
use tokio::task::JoinHandle;

mod reload;
pub use reload::{ReloadError, Reloaded};

#[derive(Debug, thiserror::Error)]
pub enum ServiceError {
    #[error("merger.core = {core}: not among the CPUs this process may run on ({allowed:?})")]
    CoreNotAllowed { core: usize, allowed: Vec<usize> },
    #[error("starting a thread: {0}")]
    Thread(std::io::Error),
    #[error("record.dir: {0}")]
    Record(std::io::Error),
}

/// The listening sockets the service serves on.
pub struct Listeners {
    pub grpc: TcpListener,
    pub metrics: TcpListener,
}

impl Listeners {
    /// Both on loopback, on ports the system picks (tests and the load harness; their
    /// addresses are the listeners').
    pub async fn loopback() -> std::io::Result<Listeners> {
        Ok(Listeners {
            grpc: TcpListener::bind("127.0.0.1:0").await?,
            metrics: TcpListener::bind("127.0.0.1:0").await?,
        })
    }
}

/// One instrument's stream on a planned connection.
pub struct PlannedStream {
    /// Its instrument's slot: its index in `Config::instruments` at start.
    pub instrument: usize,
    pub instrument_name: String,
    /// The book of the instrument it feeds (an index of `Instrument::symbols`).
    pub source: usize,
    /// The stream (channel) subscribed to.
    pub name: String,
    /// The venue's symbol.
    pub symbol: String,
    pub contract_size: Option<crate::fixed::FixedPoint>,
    /// The unit its instrument's numbers are read in (`Instrument::unit_size`).
    pub unit: crate::fixed::UnitSize,
}

/// One connection to a venue: the streams one reader subscribes to.
/// Its streams share their instruments' unit.
pub struct PlannedConnection {
    /// In `Config::venues`.
    pub venue_config: usize,
    pub venue: VenueId,
    /// Among the venue's connections.
    pub index: usize,
    pub url: String,
    pub streams: Vec<PlannedStream>,
}

/// The connections the service opens for `config`'s instruments: each stream on a
/// connection of its venue to the endpoint that serves its symbol, of its instrument's
/// unit (a connection's frames are decoded in one), with room left, or on a new one, as many as the venue's limit of streams per connection asks for. The service
/// and `replay::replay_recording` plan alike, so a recording's connections are the plan's.
pub fn plan_connections(config: &Config) -> Vec<PlannedConnection> {
    let mut connections = Vec::new();
    for (index, instrument) in config.instruments.iter().enumerate() {
        for source in 0..instrument.symbols.len() {
            let planned = planned_stream(config, (index, index, source));
            place_stream(&mut connections, config, planned, 0);
        }
    }
    connections
}

/// The venue settings (an index of `config.venues`), endpoint and stream of source
/// `source` of `config.instruments[index]`, listed in `slot`.
fn planned_stream(
    config: &Config,
    (index, slot, source): (usize, usize, usize),
) -> (usize, String, PlannedStream) {
    let instrument = &config.instruments[index];
    let (venue, symbol) = &instrument.symbols[source];
    let venue_config = (config.venues.iter())
        .position(|v| v.venue == *venue)
        .expect("validated");
    let settings = &config.venues[venue_config];
    let stream = PlannedStream {
        instrument: slot,
        instrument_name: instrument.name.clone(),
        source,
        name: match settings.mode {
            FeedMode::Snapshot => venue.streams().stream_name(symbol, config.depth),
            FeedMode::Diff(_) => settings
                .api_key
                .as_ref()
                .and_then(|_| venue.streams().authorised_diff_stream_name(symbol))
                .unwrap_or_else(|| venue.streams().diff_stream_name(symbol)),
        },
        symbol: symbol.clone(),
        contract_size: instrument.contract_size(source),
        unit: instrument.unit_size,
    };
    let url = venue.streams().endpoint(&settings.url, symbol);
    (venue_config, url, stream)
}

/// Plans `stream` (of `planned_stream`) on a connection of `connections` to its venue's
/// endpoint with room left, or on a new one, numbered from `first_number` among the
/// venue's.
fn place_stream(
    connections: &mut Vec<PlannedConnection>,
    config: &Config,
    (venue_config, url, stream): (usize, String, PlannedStream),
    first_number: usize,
) {
    let venue = config.venues[venue_config].venue;
    let most = venue.facts().max_streams_per_connection;
    let room = connections.iter_mut().find(|connection| {
        connection.venue_config == venue_config
            && connection.url == url
            && connection.streams[0].unit == stream.unit
            && connection.streams.len() < most
    });
    match room {
        Some(connection) => connection.streams.push(stream),
        None => {
            let of_venue = (connections.iter())
                .filter(|connection| connection.venue_config == venue_config)
                .count();
            connections.push(PlannedConnection {
                venue_config,
                venue,
                index: first_number + of_venue,
                url,
                streams: vec![stream],
            })
        }
    }
}

/// The recorder of `connections`, where `[record]` is on, and each connection's end.
fn start_recorder(
    config: &Config,
    connections: &[PlannedConnection],
    metrics: &Metrics,
) -> Result<(Option<Recorder>, Vec<ConnectionRecorder>), ServiceError> {
    let Some(record) = &config.record else {
        return Ok((None, Vec::new()));
    };
    let named: Vec<_> = connections.iter().map(|c| (c.venue, c.index)).collect();
    let counters = RecordMetrics::of(metrics, &named);
    let (recorder, handles) =
        Recorder::start(record, &named, counters).map_err(ServiceError::Record)?;
    Ok((Some(recorder), handles))
}

/// Samples the host clock's offset every `HostClock::SAMPLE_EVERY`, recording its steps,
/// for as long as the service runs.
async fn watch_host_clock(clock: Arc<HostClock>, metrics: Arc<Metrics>) {
    let mut every = tokio::time::interval(HostClock::SAMPLE_EVERY);
    loop {
        every.tick().await;
        let step = clock.sample_now();
        if let Some(step_ns) = step {
            tracing::warn!(
                step_ms = step_ns as f64 * 1e-6,
                "the host's clock stepped: venue delays are not measured for {:?}",
                HostClock::STEADY_AFTER_STEP
            );
        }
        metrics.host_clock_sampled(step, clock.is_steady(crate::clock::monotonic_ns()));
    }
}

/// A reader's connection as the service runs it: what it carries, and where a reload's
/// changes to it go.
struct RunningConnection {
    venue: VenueId,
    url: String,
    /// The unit of its streams' instruments.
    unit: crate::fixed::UnitSize,
    /// Each stream it carries: (instrument slot, source, stream name).
    streams: Vec<(usize, usize, String)>,
    changes: mpsc::UnboundedSender<StreamChange>,
}

/// What the readers share, and what a reader of a new connection is made with.
struct ReaderContext<'a> {
    merger: &'a std::thread::Thread,
    metrics: &'a Metrics,
    host_clock: &'a Arc<HostClock>,
    stop: &'a watch::Receiver<bool>,
}

/// The readers running, and what a reload needs to change them.
struct Readers {
    threads: Vec<std::thread::JoinHandle<()>>,
    connections: Vec<RunningConnection>,
    /// Per venue, the connection attempts its readers share (its budget).
    attempts: Vec<SharedConnectAttempts>,
    /// Where connections share threads (`feed.reader_threads`, `feed.batch_us`): each
    /// thread's door for the readers of new connections, and the one the next goes to.
    pools: Vec<mpsc::UnboundedSender<(ReaderSpec, VenueMetrics)>>,
    next_pool: usize,
}

impl Readers {
    /// A reader per planned connection, its streams' books going to `senders` (by
    /// instrument slot and source), and its events to its recorder, if any: a thread
    /// each, or as many threads as `feed.reader_threads` says, the connections dealt out
    /// in turn.
    fn start(
        config: &Config,
        connections: Vec<PlannedConnection>,
        senders: HashMap<(usize, usize), FeedSender>,
        recorders: Vec<ConnectionRecorder>,
        context: &ReaderContext<'_>,
    ) -> Result<Readers, ServiceError> {
        let mut readers = Readers {
            threads: Vec::new(),
            connections: Vec::new(),
            attempts: (VenueId::ALL.iter())
                .map(|venue| ConnectAttempts::shared(venue.facts().connect_budget))
                .collect(),
            pools: Vec::new(),
            next_pool: 0,
        };
        let mut recorders = recorders.into_iter();
        let specs = readers.specs(config, connections, senders, || recorders.next(), context);
        let (threads, read_batch) = (config.feed.reader_threads, config.feed.read_batch);
        if threads.is_none() && read_batch.is_none() {
            return readers.spawn(specs, context).map(|()| readers);
        }
        let threads = threads
            .map_or(specs.len(), usize::from)
            .clamp(1, specs.len().max(1));
        let mut shares: Vec<Vec<_>> = (0..threads).map(|_| Vec::new()).collect();
        for (index, reader) in specs.into_iter().enumerate() {
            shares[index % threads].push(reader);
        }
        for (index, share) in shares.into_iter().enumerate() {
            let (door, arrivals) = mpsc::unbounded_channel();
            let name = format!("reader-pool-{index}");
            let merger = context.merger.clone();
            let thread = feed::spawn_shared(
                name,
                share,
                arrivals,
                merger,
                context.stop.clone(),
                read_batch,
            )
            .map_err(ServiceError::Thread)?;
            readers.threads.push(thread);
            readers.pools.push(door);
        }
        Ok(readers)
    }

    /// The readers of `connections` (their streams' books going to `senders`), each
    /// noted as running.
    fn specs(
        &mut self,
        config: &Config,
        connections: Vec<PlannedConnection>,
        mut senders: HashMap<(usize, usize), FeedSender>,
        mut recorder: impl FnMut() -> Option<ConnectionRecorder>,
        context: &ReaderContext<'_>,
    ) -> Vec<(ReaderSpec, VenueMetrics)> {
        let mut specs = Vec::new();
        for connection in connections {
            let venue_config = &config.venues[connection.venue_config];
            let venue = venue_config.venue;
            let (changes, changed) = mpsc::unbounded_channel();
            self.connections.push(RunningConnection {
                venue,
                url: connection.url.clone(),
                unit: connection.streams[0].unit,
                streams: (connection.streams.iter())
                    .map(|stream| (stream.instrument, stream.source, stream.name.clone()))
                    .collect(),
                changes,
            });
            let streams = connection
                .streams
                .into_iter()
                .map(|stream| stream_spec(stream, &mut senders))
                .collect();
            let spec = ReaderSpec {
                venue,
                connection: connection.index,
                url: connection.url,
                connect_attempts: Arc::clone(&self.attempts[venue.index()]),
                depth: config.depth,
                settings: FeedSettings {
                    read_idle_timeout: venue_config.read_idle_timeout,
                    ..config.feed
                },
                mode: venue_config.mode.clone(),
                client_ping: venue_config.client_ping,
                api_key: venue_config.api_key.clone(),
                token_url: venue_config.token_url.clone(),
                renew_after: venue_config.renew_after,
                streams,
                recorder: recorder(),
                host_clock: Arc::clone(context.host_clock),
                changes: Some(changed),
            };
            specs.push((spec, context.metrics.for_venue(venue)));
        }
        specs
    }

    /// Runs `specs`' readers: a thread each, or on the pool threads in turn.
    fn spawn(
        &mut self,
        specs: Vec<(ReaderSpec, VenueMetrics)>,
        context: &ReaderContext<'_>,
    ) -> Result<(), ServiceError> {
        for (spec, metrics) in specs {
            match self.pools.len() {
                0 => {
                    let merger = context.merger.clone();
                    let thread = feed::spawn(spec, merger, metrics, context.stop.clone())
                        .map_err(ServiceError::Thread)?;
                    self.threads.push(thread);
                }
                pools => {
                    // A pool thread ends only with the service.
                    let _ = self.pools[self.next_pool % pools].send((spec, metrics));
                    self.next_pool += 1;
                }
            }
        }
        Ok(())
    }
}

/// `stream`'s reader side, its books going to its sender in `senders`.
fn stream_spec(
    stream: PlannedStream,
    senders: &mut HashMap<(usize, usize), FeedSender>,
) -> StreamSpec {
    StreamSpec {
        sender: senders
            .remove(&(stream.instrument, stream.source))
            .expect("one stream per (instrument, source)"),
        instrument: stream.instrument_name,
        name: stream.name,
        symbol: stream.symbol,
        contract_size: stream.contract_size,
        unit: stream.unit,
    }
}

/// `mergebook record`: the readers alone, recording every connection (`[record]`), with
/// `/metrics`; no merger, no consumers. The readers still decode, as the recording's
/// connections must follow the venues' protocols (acknowledgements, resyncs), and hand
/// their books to mailboxes nobody reads.
pub struct RecordingReaders {
    stop_readers: watch::Sender<bool>,
    readers: Vec<std::thread::JoinHandle<()>>,
    recorder: Option<Recorder>,
    tasks: Vec<JoinHandle<()>>,
}

impl RecordingReaders {
    pub fn start(config: Config, metrics_listener: TcpListener) -> Result<Self, ServiceError> {
        let config = Arc::new(config);
        let metrics = Arc::new(Metrics::new());
        let connections = plan_connections(&config);
        let (recorder, recorders) = start_recorder(&config, &connections, &metrics)?;
        let mut senders = HashMap::new();
        let ready = ReadySet::new(config.instruments.len());
        for (index, instrument) in config.instruments.iter().enumerate() {
            for source in 0..instrument.symbols.len() {
                let (sender, _) = mailbox::mailbox(VenueFeed::default());
                senders.insert(
                    (index, source),
                    FeedSender::new(sender, ready.mark_of(index), Handoff::Batched),
                );
            }
        }
        let (stop_readers, stop_signal) = watch::channel(false);
        // No merger: the readers' wake-ups after each book go to this thread, and cost an
        // atomic store (`Thread::unpark` of a thread that is not parked).
        let nobody = std::thread::current();
        let host_clock = Arc::new(HostClock::new());
        let context = ReaderContext {
            merger: &nobody,
            metrics: &metrics,
            host_clock: &host_clock,
            stop: &stop_signal,
        };
        // (Its connections are not changed: `readers.connections` go.)
        let readers = Readers::start(&config, connections, senders, recorders, &context)?;
        let clock_watch = watch_host_clock(Arc::clone(&host_clock), Arc::clone(&metrics));
        let http = crate::publish::http::serve(
            metrics_listener,
            Arc::clone(&config),
            metrics,
            host_clock,
            publish::catalog::fixed(&[], &[]),
        );
        Ok(RecordingReaders {
            stop_readers,
            readers: readers.threads,
            recorder,
            tasks: vec![tokio::spawn(clock_watch), tokio::spawn(http)],
        })
    }

    /// Closes the connections, then completes the recording's files.
    pub async fn stop(mut self) {
        self.stop_readers.send_replace(true);
        let readers = std::mem::take(&mut self.readers);
        let recorder = self.recorder.take();
        let _ = tokio::task::spawn_blocking(move || {
            readers.into_iter().for_each(|r| drop(r.join()));
            if let Some(recorder) = recorder {
                recorder.finish();
            }
        })
        .await;
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// A running service.
pub struct Service {
    config: Arc<Config>,
    metrics: Arc<Metrics>,
    host_clock: Arc<HostClock>,
    stop_merger: Arc<AtomicBool>,
    merger_heartbeat_ns: Arc<AtomicU64>,
    stop_readers: watch::Sender<bool>,
    stop_signal: watch::Receiver<bool>,
    merger: Option<std::thread::JoinHandle<()>>,
    merger_changes: std::sync::mpsc::Sender<MergerChange>,
    readers: Readers,
    wiring: Wiring,
    /// By slot, the instrument listed there.
    slots: Vec<Option<ListedInstrument>>,
    catalog: watch::Sender<Arc<Listing>>,
    recorder: Option<Recorder>,
    tasks: Vec<JoinHandle<()>>,
}

/// One instrument listed: its configuration, its consumers' channel, and, where each
/// instrument has a fan-out task of its own, that task.
struct ListedInstrument {
    instrument: Arc<Instrument>,
    summaries: watch::Receiver<Arc<Summary>>,
    fanout_task: Option<JoinHandle<()>>,
}

/// What each instrument is wired into, at start and at a reload.
struct Wiring {
    metrics: Arc<Metrics>,
    /// The instruments with news for the merger, by slot (`max_instruments` of them).
    ready: Arc<ReadySet>,
    /// Where the merger batches: the one fan-out's set of instruments published, its
    /// wake, and its changes (`publish::run_shared_fanout`); the readers then do not wake
    /// it (`Handoff::Batched`).
    shared_fanout: Option<(
        Arc<ReadySet>,
        Arc<Notify>,
        mpsc::UnboundedSender<FanoutChange>,
    )>,
    /// Woken by every instrument's summaries (the JSON-lines writer waits on it).
    any_summary: Arc<Notify>,
}

impl Wiring {
    /// Wires `config.instruments[index]` in `slot`: its mailboxes (their senders by
    /// source, for its readers), its consolidation and summary channel (the merger's
    /// side), its fan-out (started) and its consumers' channel.
    fn instrument(
        &self,
        config: &Config,
        index: usize,
        slot: usize,
    ) -> (WiredInstrument, Vec<FeedSender>, ListedInstrument) {
        let instrument = Arc::new(config.instruments[index].clone());
        let (output, fanout) = match &self.shared_fanout {
            Some((published, wake, _)) => publish::shared_summary_channel(published, slot, wake),
            None => publish::summary_channel(),
        };
        let mut inputs = Vec::new();
        let mut senders = Vec::new();
        for _ in 0..instrument.symbols.len() {
            let handoff = match self.shared_fanout {
                Some(_) => Handoff::Batched,
                None => Handoff::Immediate {
                    fanout_wake: fanout.early_wake(),
                },
            };
            let (sender, receiver) = mailbox::mailbox(VenueFeed::default());
            senders.push(FeedSender::new(sender, self.ready.mark_of(slot), handoff));
            inputs.push(receiver);
        }
        let summaries = fanout.subscribe();
        let mut gauges = VenueGauges::new(&self.metrics, &instrument);
        let any_summary = Arc::clone(&self.any_summary);
        let on_summary = move |summary: &Summary| {
            gauges.update(summary);
            any_summary.notify_one();
        };
        let fanout_task = match &self.shared_fanout {
            Some((_, _, changes)) => {
                let on_summary = Box::new(on_summary);
                // (The fan-out ends only with the service.)
                let _ = changes.send(FanoutChange::List {
                    slot,
                    fanout,
                    on_summary,
                });
                None
            }
            None => Some(tokio::spawn(fanout.run(on_summary))),
        };
        let wired = WiredInstrument {
            consolidation: Consolidation::configured(config, index).in_slot(slot),
            inputs,
            output,
        };
        let listed = ListedInstrument {
            instrument,
            summaries,
            fanout_task,
        };
        (wired, senders, listed)
    }
}

impl Service {
    /// Starts everything on the current tokio runtime (plus the merger and reader threads).
    pub fn start(config: Config, listeners: Listeners) -> Result<Service, ServiceError> {
        Service::start_observed(config, listeners, ())
    }

    /// `start`, with every publish also told to `observer` (the load harness).
    pub fn start_observed<O: merger::PublishObserver>(
        config: Config,
        listeners: Listeners,
        observer: O,
    ) -> Result<Service, ServiceError> {
        if let Some(core) = config.merger_core {
            let allowed: Vec<usize> = core_affinity::get_core_ids()
                .unwrap_or_default()
                .into_iter()
                .map(|core| core.id)
                .collect();
            if !allowed.contains(&core) {
                return Err(ServiceError::CoreNotAllowed { core, allowed });
            }
        }
        let config = Arc::new(config);
        let metrics = Arc::new(Metrics::new());
        let host_clock = Arc::new(HostClock::new());
        let mut tasks = vec![tokio::spawn(watch_host_clock(
            Arc::clone(&host_clock),
            Arc::clone(&metrics),
        ))];

        // One mailbox per (instrument, source), one summary channel per instrument; an
        // instrument's slot is its index in the configuration at start.
        let shared_fanout = (config.idle == IdleStrategy::Batch).then(|| {
            let published = ReadySet::new(config.max_instruments);
            let wake = Arc::new(Notify::new());
            let (changes, changed) = mpsc::unbounded_channel();
            let fanout =
                publish::run_shared_fanout(Arc::clone(&published), Arc::clone(&wake), changed);
            tasks.push(tokio::spawn(fanout));
            (published, wake, changes)
        });
        let wiring = Wiring {
            metrics: Arc::clone(&metrics),
            ready: ReadySet::new(config.max_instruments),
            shared_fanout,
            any_summary: Arc::new(Notify::new()),
        };
        let mut senders = HashMap::new();
        let mut wired_instruments = Vec::new();
        let mut slots = Vec::new();
        for index in 0..config.instruments.len() {
            let (wired, feed_senders, listed) = wiring.instrument(&config, index, index);
            for (source, sender) in feed_senders.into_iter().enumerate() {
                senders.insert((index, source), sender);
            }
            wired_instruments.push(wired);
            slots.push(Some(listed));
        }
        let connections = plan_connections(&config);
        let (recorder, connection_recorders) = start_recorder(&config, &connections, &metrics)?;

        let (quotes, quote_inbox, merger_thread) =
            merger::quote::quote_queue(config.grpc_max_queued_quotes);
        let stop_merger = Arc::new(AtomicBool::new(false));
        let merger_heartbeat_ns = Arc::new(AtomicU64::new(crate::clock::monotonic_ns()));
        let (merger_changes, merger_changed) = std::sync::mpsc::channel();
        let merger = merger::spawn(
            MergerSpec {
                instruments: wired_instruments,
                changes: Some(merger_changed),
                ready: Arc::clone(&wiring.ready),
                idle: config.idle,
                batch_period: config.merger_batch,
                core: config.merger_core,
                stale_after: config.stale_after,
                heartbeat_ns: Arc::clone(&merger_heartbeat_ns),
                observer,
                rate_links: merger::RateLinks::new(&config),
                host_clock: Arc::clone(&host_clock),
                bands_bps: config.bands_bps.clone(),
                quotes: Some((quote_inbox, merger_thread)),
            },
            Arc::clone(&metrics),
            Arc::clone(&stop_merger),
        )
        .map_err(ServiceError::Thread)?;

        let (stop_readers, stop_signal) = watch::channel(false);
        let context = ReaderContext {
            merger: merger.thread(),
            metrics: &metrics,
            host_clock: &host_clock,
            stop: &stop_signal,
        };
        let readers = Readers::start(
            &config,
            connections,
            senders,
            connection_recorders,
            &context,
        )?;

        let (catalog, listing) = watch::channel(Arc::new(listing_of(&config, &slots)));
        tasks.push(tokio::spawn(crate::publish::http::serve(
            listeners.metrics,
            Arc::clone(&config),
            Arc::clone(&metrics),
            Arc::clone(&host_clock),
            listing.clone(),
        )));
        let grpc_metrics = Arc::clone(&metrics);
        let grpc_config = Arc::clone(&config);
        let grpc_listing = listing.clone();
        tasks.push(tokio::spawn(async move {
            grpc::serve(
                listeners.grpc,
                grpc_config,
                grpc_listing,
                quotes,
                &grpc_metrics,
            )
            .await;
        }));
        if let Some(nats) = &config.nats {
            tasks.push(tokio::spawn(publish::nats::run(
                nats.clone(),
                Arc::clone(&config),
                listing.clone(),
                Arc::clone(&metrics),
                Arc::clone(&host_clock),
            )));
        }
        if config.output == Output::JsonLines {
            tasks.push(tokio::spawn(jsonl::write_to_stdout(
                listing,
                Arc::clone(&wiring.any_summary),
            )));
        }

        Ok(Service {
            metrics,
            host_clock,
            stop_merger,
            merger_heartbeat_ns,
            stop_readers,
            stop_signal,
            merger: Some(merger),
            merger_changes,
            readers,
            wiring,
            slots,
            catalog,
            recorder,
            tasks,
            config,
        })
    }

    /// The host clock its venue delays are measured on: a test steps it by handing it a
    /// reading (`HostClock::sample`).
    pub fn host_clock(&self) -> &HostClock {
        &self.host_clock
    }

    /// The configuration it runs: its instruments name their books
    /// (`Instrument::source_names`).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The service's metrics (what `/metrics` serves).
    pub fn metrics(&self) -> Arc<Metrics> {
        Arc::clone(&self.metrics)
    }

    /// The latest summary of the instrument in `slot` (its index in the configuration at
    /// start), as it changes.
    pub fn summaries(&self, slot: usize) -> watch::Receiver<Arc<Summary>> {
        let listed = self.slots[slot]
            .as_ref()
            .expect("an instrument listed in the slot");
        listed.summaries.clone()
    }

    /// What consumers see of the instruments listed, as a reload changes it.
    pub fn catalog(&self) -> Catalog {
        self.catalog.subscribe()
    }

    /// Whether the merger thread has been round its loop within `within` (the systemd
    /// watchdog's liveness check; the loop comes round at least every millisecond).
    pub fn merger_alive(&self, within: Duration) -> bool {
        let heartbeat = self.merger_heartbeat_ns.load(Ordering::Relaxed);
        let alive =
            crate::clock::monotonic_ns().saturating_sub(heartbeat) <= within.as_nanos() as u64;
        alive
            && self
                .merger
                .as_ref()
                .is_some_and(|merger| !merger.is_finished())
    }

    /// Closes the connections (with close frames), stops the merger and the servers.
    pub async fn stop(mut self) {
        self.stop_readers.send_replace(true);
        let readers = std::mem::take(&mut self.readers.threads);
        let _ =
            tokio::task::spawn_blocking(move || readers.into_iter().for_each(|r| drop(r.join())))
                .await;
        self.stop_merger.store(true, Ordering::Relaxed);
        if let Some(merger) = self.merger.take() {
            merger.thread().unpark();
            let _ = tokio::task::spawn_blocking(move || merger.join()).await;
        }
        // The readers are gone, and their recorders with them: the writer ends.
        if let Some(recorder) = self.recorder.take() {
            let _ = tokio::task::spawn_blocking(move || recorder.finish()).await;
        }
        let fanouts = self.slots.iter().flatten();
        for task in self
            .tasks
            .iter()
            .chain(fanouts.filter_map(|l| l.fanout_task.as_ref()))
        {
            task.abort();
        }
    }
}

/// The consumers' listing of the instruments in `slots`, in `config`'s order.
fn listing_of(config: &Config, slots: &[Option<ListedInstrument>]) -> Listing {
    let by_name: HashMap<&str, (usize, &ListedInstrument)> = (slots.iter().enumerate())
        .filter_map(|(slot, listed)| {
            Some((
                listed.as_ref()?.instrument.name.as_str(),
                (slot, listed.as_ref()?),
            ))
        })
        .collect();
    let listed = (config.instruments.iter())
        .filter_map(|instrument| {
            let &(slot, listed) = by_name.get(instrument.name.as_str())?;
            Some(Listed {
                slot,
                instrument: Arc::clone(&listed.instrument),
                summaries: listed.summaries.clone(),
            })
        })
        .collect();
    Listing::new(listed)
}

/// The gauges of each book of one instrument (labelled with its name,
/// `Instrument::source_names`), resolved once.
struct VenueGauges {
    venues: Vec<VenueGauge>,
    /// The states the gauges show: a summary whose states are these sets nothing (most
    /// summaries, at thousands a second).
    shown: Option<[VenueState; MAX_SOURCES]>,
}

struct VenueGauge {
    up: prometheus::IntGauge,
    states: Vec<(VenueState, prometheus::IntGauge)>,
}

const REPORTED_STATES: [VenueState; 7] = [
    VenueState::Connecting,
    VenueState::Synced,
    VenueState::Stale,
    VenueState::OutOfSync,
    VenueState::Crossed,
    VenueState::OneSided,
    VenueState::NoRate,
];

impl VenueGauges {
    fn new(metrics: &Metrics, instrument: &Instrument) -> VenueGauges {
        let name = &instrument.name;
        let venues = instrument
            .source_names
            .iter()
            .map(|venue| {
                let up = metrics.venue_up.with_label_values(&[venue, name]);
                let states = REPORTED_STATES
                    .iter()
                    .map(|state| {
                        (
                            *state,
                            metrics
                                .venue_state
                                .with_label_values(&[venue, name, state.name()]),
                        )
                    })
                    .collect();
                VenueGauge { up, states }
            })
            .collect();
        let mut gauges = VenueGauges {
            venues,
            shown: None,
        };
        gauges.update(&Summary {
            source_states: [VenueState::Connecting; MAX_SOURCES],
            ..Summary::default()
        });
        gauges
    }

    /// Removes `instrument`'s series, delisted, from what `/metrics` serves (its gauges and
    /// its books' counters).
    fn forget(metrics: &Metrics, instrument: &Instrument) {
        let name = instrument.name.as_str();
        for (venue, _) in &instrument.symbols {
            let labels = [venue.name(), name];
            let _ = metrics.checksum_mismatches.remove_label_values(&labels);
        }
        for venue in &instrument.source_names {
            let _ = metrics.venue_up.remove_label_values(&[venue, name]);
            let _ = metrics.book_age_seconds.remove_label_values(&[venue, name]);
            for state in REPORTED_STATES {
                let labels = [venue.as_str(), name, state.name()];
                let _ = metrics.venue_state.remove_label_values(&labels);
            }
        }
    }

    fn update(&mut self, summary: &Summary) {
        if self.shown == Some(summary.source_states) {
            return;
        }
        self.shown = Some(summary.source_states);
        for (VenueGauge { up, states }, &current) in self.venues.iter().zip(&summary.source_states)
        {
            up.set(i64::from(current == VenueState::Synced));
            for (state, gauge) in states {
                gauge.set(i64::from(*state == current));
            }
        }
    }
}
