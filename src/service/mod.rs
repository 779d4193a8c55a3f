//! The running service: wires readers, mailboxes, the merger thread, fan-out, and the
//! consumers (JSON lines, gRPC, `/metrics` and `/health`) together, and takes them apart
//! again on shutdown. Listeners are passed in, so tests bind port 0.

use crate::clock::HostClock;
use crate::config::{Config, FeedMode, FeedSettings, IdleStrategy, Output};
use crate::feed::handoff::{FeedSender, Handoff, ReadySet, VenueFeed};
use crate::feed::reconnect::ConnectAttempts;
use crate::feed::{self, ReaderSpec, StreamSpec};
use crate::mailbox;
use crate::merger::summary::MAX_SOURCES;
use crate::merger::summary::{Summary, VenueState};
use crate::merger::{self, Consolidation, MergerSpec, WiredInstrument};
use crate::metrics::Metrics;
use crate::publish::{self, grpc, jsonl};
use crate::record::{ConnectionRecorder, RecordMetrics, Recorder};
use crate::venue::VenueId;
use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;

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
    /// In `Config::instruments`.
    pub instrument: usize,
    /// The book of the instrument it feeds (an index of `Instrument::symbols`).
    pub source: usize,
    /// The stream (channel) subscribed to.
    pub name: String,
    /// The venue's symbol.
    pub symbol: String,
    pub contract_size: Option<crate::fixed::FixedPoint>,
}

/// One connection to a venue: the streams one reader subscribes to.
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
/// connection of its venue to the endpoint that serves its symbol with room left, or on a
/// new one, as many as the venue's limit of streams per connection asks for. The service
/// and `replay::replay_recording` plan alike, so a recording's connections are the plan's.
pub fn plan_connections(config: &Config) -> Vec<PlannedConnection> {
    let mut connections: Vec<PlannedConnection> = Vec::new();
    for (instrument_index, instrument) in config.instruments.iter().enumerate() {
        for (source, (venue, symbol)) in instrument.symbols.iter().enumerate() {
            let venue_config = config
                .venues
                .iter()
                .position(|v| v.venue == *venue)
                .expect("validated");
            let settings = &config.venues[venue_config];
            let stream = PlannedStream {
                instrument: instrument_index,
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
            };
            let url = venue.streams().endpoint(&settings.url, symbol);
            let most = venue.facts().max_streams_per_connection;
            let of_venue = connections
                .iter()
                .filter(|connection| connection.venue_config == venue_config)
                .count();
            match connections.iter_mut().find(|connection| {
                connection.venue_config == venue_config
                    && connection.url == url
                    && connection.streams.len() < most
            }) {
                Some(connection) => connection.streams.push(stream),
                None => connections.push(PlannedConnection {
                    venue_config,
                    venue: *venue,
                    index: of_venue,
                    url,
                    streams: vec![stream],
                }),
            }
        }
    }
    connections
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

/// A reader per planned connection, its streams' books going to `senders` (per instrument
/// and venue), and its events to its recorder, if any: a thread each, or as many threads
/// as `feed.reader_threads` says, the connections dealt out in turn.
fn spawn_readers(
    config: &Config,
    connections: Vec<PlannedConnection>,
    mut senders: HashMap<(usize, usize), FeedSender>,
    recorders: Vec<ConnectionRecorder>,
    (merger, metrics, host_clock): (&std::thread::Thread, &Metrics, &Arc<HostClock>),
    stop: &watch::Receiver<bool>,
) -> Result<Vec<std::thread::JoinHandle<()>>, ServiceError> {
    let attempts: Vec<_> = VenueId::ALL
        .iter()
        .map(|venue| ConnectAttempts::shared(venue.facts().connect_budget))
        .collect();
    let mut recorders = recorders.into_iter();
    let mut specs = Vec::new();
    for connection in connections {
        let venue_config = &config.venues[connection.venue_config];
        let venue = venue_config.venue;
        let streams = connection
            .streams
            .into_iter()
            .map(|stream| StreamSpec {
                sender: senders
                    .remove(&(stream.instrument, stream.source))
                    .expect("one stream per (instrument, source)"),
                instrument: config.instruments[stream.instrument].name.clone(),
                name: stream.name,
                symbol: stream.symbol,
                contract_size: stream.contract_size,
            })
            .collect();
        let spec = ReaderSpec {
            venue,
            connection: connection.index,
            url: connection.url,
            connect_attempts: Arc::clone(&attempts[venue.index()]),
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
            recorder: recorders.next(),
            host_clock: Arc::clone(host_clock),
        };
        specs.push((spec, metrics.for_venue(venue)));
    }
    let (threads, read_batch) = (config.feed.reader_threads, config.feed.read_batch);
    if threads.is_none() && read_batch.is_none() {
        return specs
            .into_iter()
            .map(|(spec, metrics)| feed::spawn(spec, merger.clone(), metrics, stop.clone()))
            .collect::<Result<_, _>>()
            .map_err(ServiceError::Thread);
    }
    let threads = threads
        .map_or(specs.len(), usize::from)
        .clamp(1, specs.len().max(1));
    let mut shares: Vec<Vec<_>> = (0..threads).map(|_| Vec::new()).collect();
    for (index, reader) in specs.into_iter().enumerate() {
        shares[index % threads].push(reader);
    }
    shares
        .into_iter()
        .enumerate()
        .map(|(index, share)| {
            let name = format!("reader-pool-{index}");
            feed::spawn_shared(name, share, merger.clone(), stop.clone(), read_batch)
        })
        .collect::<Result<_, _>>()
        .map_err(ServiceError::Thread)
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
        let readers = spawn_readers(
            &config,
            connections,
            senders,
            recorders,
            (&nobody, &metrics, &host_clock),
            &stop_signal,
        )?;
        let clock_watch = watch_host_clock(Arc::clone(&host_clock), Arc::clone(&metrics));
        let http = crate::publish::http::serve(
            metrics_listener,
            Arc::clone(&config),
            metrics,
            host_clock,
            Vec::new(),
        );
        Ok(RecordingReaders {
            stop_readers,
            readers,
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
    summaries: Vec<watch::Receiver<Arc<Summary>>>,
    stop_merger: Arc<AtomicBool>,
    merger_heartbeat_ns: Arc<AtomicU64>,
    stop_readers: watch::Sender<bool>,
    merger: Option<std::thread::JoinHandle<()>>,
    readers: Vec<std::thread::JoinHandle<()>>,
    recorder: Option<Recorder>,
    tasks: Vec<JoinHandle<()>>,
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

        // One mailbox per (instrument, source); one summary channel per instrument.
        let mut senders = HashMap::new();
        let ready = ReadySet::new(config.instruments.len());
        let mut wired_instruments = Vec::new();
        let mut fanouts = Vec::new();
        // Where the merger batches, one fan-out task for every instrument (the instruments
        // published, and its wake), which the readers do not wake (`Handoff::Batched`).
        let shared_fanout = (config.idle == IdleStrategy::Batch).then(|| {
            let published = ReadySet::new(config.instruments.len());
            (published, Arc::new(Notify::new()))
        });
        let handoff = |fanout: &publish::SummaryFanout| match shared_fanout {
            Some(_) => Handoff::Batched,
            None => Handoff::Immediate {
                fanout_wake: fanout.early_wake(),
            },
        };
        for (index, instrument) in config.instruments.iter().enumerate() {
            let mut inputs = Vec::new();
            let (output, fanout) = match &shared_fanout {
                Some((published, wake)) => publish::shared_summary_channel(published, index, wake),
                None => publish::summary_channel(),
            };
            for source in 0..instrument.symbols.len() {
                let (sender, receiver) = mailbox::mailbox(VenueFeed::default());
                senders.insert(
                    (index, source),
                    FeedSender::new(sender, ready.mark_of(index), handoff(&fanout)),
                );
                inputs.push(receiver);
            }
            wired_instruments.push(WiredInstrument {
                consolidation: Consolidation::configured(&config, index),
                inputs,
                output,
            });
            fanouts.push(fanout);
        }
        let connections = plan_connections(&config);
        let (recorder, connection_recorders) = start_recorder(&config, &connections, &metrics)?;

        let (quotes, quote_inbox, merger_thread) =
            merger::quote::quote_queue(config.grpc_max_queued_quotes);
        let stop_merger = Arc::new(AtomicBool::new(false));
        let merger_heartbeat_ns = Arc::new(AtomicU64::new(crate::clock::monotonic_ns()));
        let merger = merger::spawn(
            MergerSpec {
                instruments: wired_instruments,
                ready,
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
        let readers = spawn_readers(
            &config,
            connections,
            senders,
            connection_recorders,
            (merger.thread(), &metrics, &host_clock),
            &stop_signal,
        )?;

        let summaries: Vec<_> = fanouts
            .iter()
            .map(publish::SummaryFanout::subscribe)
            .collect();
        let any_summary = Arc::new(Notify::new());
        let mut tasks = vec![tokio::spawn(watch_host_clock(
            Arc::clone(&host_clock),
            Arc::clone(&metrics),
        ))];
        if let Some((published, wake)) = shared_fanout {
            let mut gauges: Vec<_> = (0..fanouts.len())
                .map(|index| VenueGauges::new(&metrics, &config, index))
                .collect();
            let any_summary = Arc::clone(&any_summary);
            let fanout =
                publish::run_shared_fanout(fanouts, published, wake, move |index, summary| {
                    gauges[index].update(summary);
                    any_summary.notify_one();
                });
            tasks.push(tokio::spawn(fanout));
        } else {
            for (index, fanout) in fanouts.into_iter().enumerate() {
                let mut gauges = VenueGauges::new(&metrics, &config, index);
                let any_summary = Arc::clone(&any_summary);
                tasks.push(tokio::spawn(fanout.run(move |summary| {
                    gauges.update(summary);
                    any_summary.notify_one();
                })));
            }
        }
        tasks.push(tokio::spawn(crate::publish::http::serve(
            listeners.metrics,
            Arc::clone(&config),
            Arc::clone(&metrics),
            Arc::clone(&host_clock),
            summaries.clone(),
        )));
        let grpc_metrics = Arc::clone(&metrics);
        let grpc_config = Arc::clone(&config);
        let grpc_summaries = summaries.clone();
        tasks.push(tokio::spawn(async move {
            grpc::serve(
                listeners.grpc,
                grpc_config,
                grpc_summaries,
                quotes,
                &grpc_metrics,
            )
            .await;
        }));
        if let Some(nats) = &config.nats {
            tasks.push(tokio::spawn(publish::nats::run(
                nats.clone(),
                Arc::clone(&config),
                summaries.clone(),
                Arc::clone(&metrics),
                Arc::clone(&host_clock),
            )));
        }
        if config.output == Output::JsonLines {
            tasks.push(tokio::spawn(jsonl::write_to_stdout(
                Arc::clone(&config),
                summaries.clone(),
                any_summary,
            )));
        }

        Ok(Service {
            metrics,
            host_clock,
            summaries,
            stop_merger,
            merger_heartbeat_ns,
            stop_readers,
            merger: Some(merger),
            readers,
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

    /// The latest summary of instrument `index` (in configuration order), as it changes.
    pub fn summaries(&self, index: usize) -> watch::Receiver<Arc<Summary>> {
        self.summaries[index].clone()
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
        let readers = std::mem::take(&mut self.readers);
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
        for task in &self.tasks {
            task.abort();
        }
    }
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
    fn new(metrics: &Metrics, config: &Config, instrument: usize) -> VenueGauges {
        let name = &config.instruments[instrument].name;
        let venues = config.instruments[instrument]
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
