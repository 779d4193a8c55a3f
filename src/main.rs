#![forbid(unsafe_code)]
//! The `mergebook` command line.

use clap::{Parser, Subcommand};
use mergebook::book::MAX_DEPTH;
use mergebook::config::{Config, ConfigError, Instrument, LogFormat, RawConfig};
use mergebook::publish::jsonl;
use mergebook::publish::parquet::{SourceBookParquet, SummaryParquet};
use mergebook::record::timeline::{self, RecordedFrame};
use mergebook::replay;
use mergebook::service::{Listeners, Service};
use mergebook::sim::{Recording, Simulator};
use mergebook::venue::VenueId;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(
    version,
    about = "Low-latency multi-exchange order book aggregator",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

/// Running the service. Each flag overrides the configuration file, and can also be given
/// as the environment variable shown.
#[derive(clap::Args)]
struct RunArgs {
    /// The configuration file (see config/default.toml for every key).
    #[arg(long, env = "MERGEBOOK_CONFIG", default_value = "config/default.toml")]
    config: PathBuf,
    /// service.depth: levels per side.
    #[arg(long, env = "MERGEBOOK_DEPTH")]
    depth: Option<i64>,
    /// service.output: "jsonl" or "none".
    #[arg(long, env = "MERGEBOOK_OUTPUT")]
    output: Option<String>,
    /// service.log_format: "text" or "json".
    #[arg(long, env = "MERGEBOOK_LOG_FORMAT")]
    log_format: Option<String>,
    /// merger.core: the CPU to pin the merger thread to.
    #[arg(long, env = "MERGEBOOK_MERGER_CORE")]
    merger_core: Option<i64>,
    /// merger.idle: "spin", "spin-then-yield" or "park".
    #[arg(long, env = "MERGEBOOK_IDLE")]
    idle: Option<String>,
    /// grpc.listen: address of the gRPC server.
    #[arg(long, env = "MERGEBOOK_GRPC_LISTEN")]
    grpc_listen: Option<String>,
    /// metrics.listen: address of /metrics and /health.
    #[arg(long, env = "MERGEBOOK_METRICS_LISTEN")]
    metrics_listen: Option<String>,
    /// service.shard: "K/N", this process's share of the instruments when N processes are
    /// given the same list.
    #[arg(long, env = "MERGEBOOK_SHARD")]
    shard: Option<String>,
    /// simulator.rate_per_second (only with a [simulator] section).
    #[arg(long, env = "MERGEBOOK_SIMULATOR_RATE")]
    simulator_rate: Option<i64>,
    /// Validate the configuration (file, flags and environment) and exit: 0 when valid.
    #[arg(long)]
    check_config: bool,
}

impl RunArgs {
    /// Loads the file and applies the overrides, before validation, so every value is
    /// checked the same way and errors name the configuration key.
    fn load(&self) -> Result<Config, ConfigError> {
        self.load_with(|_| {})
    }

    /// `load`, with `edit` applied to the file's settings before the overrides.
    fn load_with(&self, edit: impl FnOnce(&mut RawConfig)) -> Result<Config, ConfigError> {
        let mut raw = RawConfig::load(&self.config)?;
        edit(&mut raw);
        let service = &mut raw.service;
        service.depth = self.depth.or(service.depth);
        service.output = self.output.clone().or(service.output.take());
        service.log_format = self.log_format.clone().or(service.log_format.take());
        service.shard = self.shard.clone().or(service.shard.take());
        raw.merger.core = self.merger_core.or(raw.merger.core);
        raw.merger.idle = self.idle.clone().or(raw.merger.idle.take());
        raw.grpc.listen = self.grpc_listen.clone().or(raw.grpc.listen.take());
        raw.metrics.listen = self.metrics_listen.clone().or(raw.metrics.listen.take());
        if let Some(simulator) = &mut raw.simulator {
            simulator.rate_per_second = self.simulator_rate.or(simulator.rate_per_second);
        }
        raw.validate()
    }
}

#[derive(Subcommand)]
enum Command {
    /// Exit 0 when a running mergebook's /health answers 200 (OK or DEGRADED), 1 otherwise:
    /// the Docker HEALTHCHECK, without curl in the image.
    Healthcheck {
        /// The metrics address of the running service (metrics.listen).
        #[arg(
            long,
            env = "MERGEBOOK_HEALTHCHECK_ADDRESS",
            default_value = "127.0.0.1:9898"
        )]
        address: std::net::SocketAddr,
    },
    /// Replay recorded frames through the decoders and merge; print JSON-lines summaries.
    #[command(subcommand)]
    Replay(ReplayCommand),
    /// Run only the readers and record what the venues send ([record] in the
    /// configuration, or --dir): no merger, no consumers; /metrics is served.
    Record {
        #[command(flatten)]
        run: RunArgs,
        /// record.dir: where the recording goes.
        #[arg(long, env = "MERGEBOOK_RECORD_DIR")]
        dir: Option<PathBuf>,
    },
    /// A running mergebook's consolidated book in this terminal (keys: ←/→ instrument,
    /// +/- depth, s size: what a quantity costs across the venues, p pause, q quit).
    Watch {
        /// The gRPC address of the running service (grpc.listen).
        #[arg(long, default_value = "127.0.0.1:50051")]
        grpc: String,
        /// Read the books from NATS instead, where services publish them (nats.url):
        /// every instrument of every shard.
        #[arg(long, value_name = "URL")]
        nats: Option<String>,
        /// The services' nats.subject_prefix.
        #[arg(long, default_value = mergebook::config::defaults::NATS_SUBJECT_PREFIX.default)]
        nats_prefix: String,
        /// A NATS .creds file, where the servers want one.
        #[arg(long, value_name = "FILE")]
        nats_credentials: Option<PathBuf>,
        /// The instrument to show first (the service's first when not given).
        #[arg(long)]
        instrument: Option<String>,
    },
}

/// Replay's modes: the service's own recordings, venues' files with a configuration, and
/// recorded files of one venue each in either feed mode (each mode takes only its own
/// flags).
#[derive(Subcommand)]
enum ReplayCommand {
    /// A recording made by the service or `mergebook record` ([record]): every connection,
    /// every instrument, with the configuration it was recorded with, as the live service
    /// ran it (the readers' rules, the merge).
    Recording {
        /// The recording's directory (record.dir).
        dir: PathBuf,
        /// The configuration the recording was made with.
        #[arg(long, env = "MERGEBOOK_CONFIG", default_value = "config/default.toml")]
        config: PathBuf,
        /// Replay at this many times the recorded pace (default: as fast as possible).
        #[arg(long, value_parser = parse_speed)]
        speed: Option<f64>,
        #[command(flatten)]
        output: Output,
        #[command(flatten)]
        sampling: Sampling,
    },
    /// Venues' files — Tardis.dev exchange-native archives (plain or gzip) or single-file
    /// timelines, one a venue — replayed with the service's configuration: its
    /// instruments, units, conversions, depth and each venue's mode, as the live service
    /// would have merged the same messages (docs/history.md).
    Archive {
        /// The configuration whose instruments the files are merged into.
        #[arg(long, env = "MERGEBOOK_CONFIG", default_value = "config/default.toml")]
        config: PathBuf,
        /// A venue and its file, `binance=FILE` (repeatable; one file a venue).
        #[arg(long = "venue", value_name = "VENUE=FILE", required = true, value_parser = parse_venue_file)]
        venues: Vec<(VenueId, PathBuf)>,
        #[command(flatten)]
        output: Output,
        #[command(flatten)]
        sampling: Sampling,
    },
    /// Snapshot streams: every book frame replaces its venue's book.
    Snapshot {
        #[command(flatten)]
        recordings: Recordings,
        /// The instrument name printed in each summary.
        #[arg(long, default_value = "REPLAY")]
        instrument: String,
    },
    /// Diff streams: full-depth books from diff events and REST snapshots, synced as the
    /// live service does. Every symbol in the recordings is followed (each symbol an
    /// instrument, merged across venues: Binance `ETHBTC` and Bitstamp `ethbtc` are one),
    /// unless --symbol names the ones to follow.
    Diff {
        #[command(flatten)]
        recordings: Recordings,
        /// A symbol to follow on a venue, `binance=NKNUSDT` (repeatable).
        #[arg(long = "symbol", value_name = "VENUE=SYMBOL", value_parser = parse_venue_value)]
        symbols: Vec<(VenueId, String)>,
        /// A REST snapshot body recorded apart from the frames (per-pair files),
        /// `binance=FILE`; it is taken right after the first diff event. Timelines carry
        /// their own.
        #[arg(long = "snapshot", value_name = "VENUE=FILE", value_parser = parse_venue_value)]
        snapshots: Vec<(VenueId, String)>,
        /// Levels a side kept in each full-depth book.
        #[arg(long, default_value_t = 5000)]
        max_levels: usize,
        /// Levels a side the recorded snapshots or subscriptions asked for (the service's
        /// `venues.<name>.snapshot_depth`): a venue that cuts its book to the depth
        /// subscribed is cut the same.
        #[arg(long, default_value_t = mergebook::config::defaults::SNAPSHOT_DEPTH.default as usize)]
        snapshot_depth: usize,
    },
}

/// What both replay modes take.
#[derive(clap::Args)]
struct Recordings {
    /// A venue and its recording, `binance=FILE` (plain frames or a timeline).
    #[arg(long = "venue", value_name = "VENUE=FILE", required = true, value_parser = parse_venue_file)]
    venues: Vec<(VenueId, PathBuf)>,
    /// Levels per side, per venue and in the merged book.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..=MAX_DEPTH as i64))]
    depth: u16,
    #[command(flatten)]
    output: Output,
}

/// Where every replay's summaries go, and the window written.
#[derive(clap::Args)]
struct Output {
    /// Write the summaries to this Parquet file instead of JSON lines on stdout
    /// (docs/history.md: the columns).
    #[arg(long, value_name = "FILE")]
    parquet: Option<PathBuf>,
    /// Write no summary published before this time: Unix seconds or UTC (the books are
    /// built from the start all the same).
    #[arg(long, value_parser = parse_time)]
    from: Option<u64>,
    /// Stop after the last frame received at or before this time: Unix seconds
    /// (1764251000.5) or UTC (2026-11-27T14:03:00Z).
    #[arg(long, value_parser = parse_time)]
    until: Option<u64>,
}

/// Each source's own book sampled at fixed times, beside the summaries.
#[derive(clap::Args)]
struct Sampling {
    /// Write each source's own book, sampled every --every-ms, to this Parquet file
    /// (docs/history.md: the columns).
    #[arg(long, value_name = "FILE")]
    venue_books: Option<PathBuf>,
    /// The sampling interval of --venue-books, in milliseconds.
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u64).range(1..))]
    every_ms: u64,
}

fn parse_time(text: &str) -> Result<u64, String> {
    timeline::parse_time(text).ok_or_else(|| {
        format!("{text:?}: expected Unix seconds or a UTC time like 2026-11-27T14:03:00Z")
    })
}

fn parse_speed(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(speed) if speed.is_finite() && speed > 0.0 => Ok(speed),
        _ => Err(format!("{text:?}: expected a positive number")),
    }
}

fn parse_venue_file(argument: &str) -> Result<(VenueId, PathBuf), String> {
    parse_venue_value(argument).map(|(venue, path)| (venue, PathBuf::from(path)))
}

/// `VENUE=VALUE`.
fn parse_venue(name: &str) -> Result<VenueId, String> {
    VenueId::from_name(name).ok_or_else(|| {
        let known: Vec<_> = VenueId::ALL.iter().map(|venue| venue.name()).collect();
        format!("unknown venue {name:?} (known: {})", known.join(", "))
    })
}

fn parse_venue_value(argument: &str) -> Result<(VenueId, String), String> {
    let (name, value) = argument
        .split_once('=')
        .ok_or_else(|| format!("expected VENUE=VALUE, got {argument:?}"))?;
    Ok((parse_venue(name)?, value.to_owned()))
}

fn main() -> ExitCode {
    // Before anything else: a CPU without the build's instructions would die of SIGILL.
    if !mergebook::cpu::check() {
        return ExitCode::FAILURE;
    }
    let cli = Cli::parse();
    let (command, result) = match cli.command {
        Some(Command::Replay(ReplayCommand::Snapshot {
            recordings,
            instrument,
        })) => ("mergebook replay", run_replay(&recordings, &instrument)),
        Some(Command::Replay(ReplayCommand::Diff {
            recordings,
            symbols,
            snapshots,
            max_levels,
            snapshot_depth,
        })) => {
            let depths = replay::DiffDepths {
                depth: usize::from(recordings.depth),
                max_levels,
                snapshot_depth,
            };
            (
                "mergebook replay",
                run_diff_replay(&recordings, &symbols, &snapshots, depths),
            )
        }
        Some(Command::Replay(ReplayCommand::Recording {
            dir,
            config,
            speed,
            output,
            sampling,
        })) => (
            "mergebook replay",
            run_recording_replay(&dir, &config, &output, &sampling, speed),
        ),
        Some(Command::Replay(ReplayCommand::Archive {
            config,
            venues,
            output,
            sampling,
        })) => (
            "mergebook replay",
            run_archive_replay(&venues, &config, &output, &sampling),
        ),
        Some(Command::Record { run, dir }) => ("mergebook record", run_recorder(&run, dir)),
        Some(Command::Healthcheck { address }) => ("mergebook healthcheck", healthcheck(address)),
        Some(Command::Watch {
            grpc,
            nats,
            nats_prefix,
            nats_credentials,
            instrument,
        }) => {
            let source = match nats {
                Some(url) => mergebook::viewer::Source::Nats {
                    url,
                    prefix: nats_prefix,
                    credentials: nats_credentials,
                },
                None => mergebook::viewer::Source::Grpc(grpc),
            };
            (
                "mergebook watch",
                mergebook::viewer::run(source, instrument).map_err(|error| error.to_string()),
            )
        }
        None => ("mergebook", run_service(&cli.run)),
    };
    // The one exit path: every command's failure is one message, said once.
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            if tracing::dispatcher::has_been_set() {
                tracing::error!("{message}"); // the service's logs, in their format
            } else {
                eprintln!("{command}: {message}");
            }
            ExitCode::FAILURE
        }
    }
}

/// The service's tokio runtime, as many workers as the configuration leaves CPUs for.
fn runtime(config: &Config) -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.runtime_workers())
        .enable_all()
        .build()
        .map_err(|error| format!("cannot start the runtime: {error}"))
}

fn run_recorder(args: &RunArgs, dir: Option<PathBuf>) -> Result<(), String> {
    let mut config = args
        .load_with(|raw| {
            if let Some(dir) = dir {
                // From the working directory, as a command line's paths are.
                let dir = std::path::absolute(&dir).unwrap_or(dir);
                raw.record.get_or_insert_default().dir = Some(dir);
            }
        })
        .map_err(|error| error.to_string())?;
    if config.record.is_none() {
        return Err("nothing to record into: set record.dir in the configuration, or --dir".into());
    }
    init_logging(config.log_format);
    let runtime = runtime(&config)?;
    runtime.block_on(async move {
        start_simulator(&mut config).await?;
        check_listings(&config).await?;
        let metrics = bind(
            config.metrics_listen,
            "metrics.listen, --metrics-listen or MERGEBOOK_METRICS_LISTEN",
        )
        .await?;
        let dir = config.record.as_ref().map(|r| r.dir.display().to_string());
        tracing::info!(dir, "recording");
        let readers = mergebook::service::RecordingReaders::start(config, metrics)
            .map_err(|error| error.to_string())?;
        shutdown_signal().await;
        tracing::info!("stopping: closing connections, completing the files");
        readers.stop().await;
        Ok(())
    })
}

fn run_recording_replay(
    dir: &std::path::Path,
    config_path: &std::path::Path,
    output: &Output,
    sampling: &Sampling,
    speed: Option<f64>,
) -> Result<(), String> {
    let config = load_replay_config(config_path)?;
    // Read as it is replayed: memory for a line a connection, whatever the recording's size.
    let (mut size, bytes_read) = (0, timeline::BytesRead::default());
    let (connections, read) =
        timeline::open_recording(dir, &mut size, &bytes_read).map_err(|error| error.to_string())?;
    let connections = connections
        .into_iter()
        .map(|events| (events.venue, events.connection, events))
        .collect();
    let mut printer =
        SummarySink::open(output.parquet.as_deref(), config.depth, &config.instruments)?
            .from(output.from);
    let mut samples = VenueBookSink::open(sampling, output, &config)?;
    let mut pace = replay::Pace::new(output.until, speed);
    let mut progress = Progress::new(size, bytes_read);
    let stats = replay::replay_connections(
        &config,
        connections,
        |received_ns, consolidations| {
            progress.tick(received_ns);
            samples.before(received_ns, consolidations);
            pace.wait_for(received_ns)
        },
        |summary| printer.print(&config.instruments[summary.instrument], summary),
        |_, _, _| {},
        |venue, error| eprintln!("mergebook replay: {venue}: {error}"),
    )
    .map_err(|error| format!("{}: {error}", dir.display()))?;
    printer.finish()?;
    samples.finish()?;
    progress.finish();
    let read = read.borrow();
    if read.truncated_files > 0 {
        eprintln!(
            "mergebook replay: {} file(s) cut short (being written, or a crash): replayed up to the cut",
            read.truncated_files
        );
    }
    eprintln!(
        "mergebook replay: {} events, {} books, {} decode errors, {} summaries",
        stats.events, stats.books, stats.decode_errors, stats.summaries
    );
    match &read.error {
        Some(error) => Err(format!("{error}: replayed up to it")),
        None => Ok(()),
    }
}

fn load_replay_config(path: &std::path::Path) -> Result<Config, String> {
    RawConfig::load(path)
        .and_then(|raw| raw.validate())
        .map_err(|error| error.to_string())
}

fn run_archive_replay(
    venues: &[(VenueId, PathBuf)],
    config_path: &std::path::Path,
    output: &Output,
    sampling: &Sampling,
) -> Result<(), String> {
    let config = load_replay_config(config_path)?;
    let files = FileFrames::new(venues, output.until);
    // A first read finds the diff streams each file holds, by symbol: the configured books
    // follow them whatever their update speed.
    let diff_streams = files.survey(None, |index, frames| {
        let venue = venues[index].0;
        let max_levels = (config.venues.iter())
            .find(|settings| settings.venue == venue)
            .and_then(|settings| settings.mode.diff_settings())
            .map(|diff| diff.max_levels);
        let Some(max_levels) = max_levels else {
            return Vec::new();
        };
        let mut plan = replay::DiffPlan::empty();
        // A venue whose events do not name their stream follows the configured ones.
        let _ = plan.add_recording(index, venue, &[], frames, max_levels);
        (plan.books.into_iter())
            .map(|book| (book.symbol, book.stream))
            .collect::<Vec<_>>()
    })?;
    let sources = (venues.iter().zip(diff_streams).enumerate())
        .map(|(index, ((venue, _), diff_streams))| {
            Ok(replay::VenueFile {
                venue: *venue,
                diff_streams,
                frames: files.replayed(index)?,
            })
        })
        .collect::<Result<Vec<_>, String>>()?;
    let mut printer =
        SummarySink::open(output.parquet.as_deref(), config.depth, &config.instruments)?
            .from(output.from);
    let mut samples = VenueBookSink::open(sampling, output, &config)?;
    let (stats, consolidations) = replay::replay_venue_files(
        &config,
        sources,
        |received_ns, consolidations| {
            samples.before(received_ns, consolidations);
            true
        },
        |summary| printer.print(&config.instruments[summary.instrument], summary),
        report_decode_error,
    )
    .map_err(|error| error.to_string())?;
    printer.finish()?;
    samples.finish()?;
    // A book the files never fed says so: its venue's file holds another stream of it, or
    // none (Binance's snapshot streams are named by their depth).
    for (instrument, consolidation) in config.instruments.iter().zip(&consolidations) {
        for (source, (venue, symbol)) in instrument.symbols.iter().enumerate() {
            let given = venues.iter().any(|(file_venue, _)| file_venue == venue);
            let (state, _) = consolidation.source_book(source);
            if given && state == mergebook::merger::summary::VenueState::Connecting {
                eprintln!(
                    "mergebook replay: {}: its {venue} book ({symbol}) got nothing from the file: \
                     does the file hold that symbol's stream of the mode venues.{venue}.mode \
                     names (a snapshot stream's name also carries service.depth)?",
                    instrument.name
                );
            }
        }
    }
    eprintln!(
        "mergebook replay: {} events, {} books, {} decode errors, {} summaries",
        stats.events, stats.books, stats.decode_errors, stats.summaries
    );
    files.ended()
}

/// Where a replay's samples of each source's own book go (`--venue-books`), keeping the
/// first error; nothing without `--venue-books`.
struct VenueBookSink<'a> {
    sampled: Option<(replay::BookSampler, Box<SourceBookParquet>)>,
    instruments: &'a [Instrument],
    error: Option<mergebook::publish::parquet::ParquetError>,
}

impl<'a> VenueBookSink<'a> {
    fn open(
        sampling: &Sampling,
        output: &Output,
        config: &'a Config,
    ) -> Result<VenueBookSink<'a>, String> {
        let sampled = match &sampling.venue_books {
            None => None,
            Some(path) => {
                let writer = SourceBookParquet::create(path, config.depth)
                    .map_err(|error| error.to_string())?;
                let every_ns = sampling.every_ms.saturating_mul(1_000_000);
                let sampler = replay::BookSampler::new(every_ns, (output.from, output.until));
                Some((sampler, Box::new(writer)))
            }
        };
        Ok(VenueBookSink {
            sampled,
            instruments: &config.instruments,
            error: None,
        })
    }

    /// Before the event received at `received_ns`: the samples due by then.
    fn before(&mut self, received_ns: u64, consolidations: &[mergebook::merger::Consolidation]) {
        let Some((sampler, writer)) = &mut self.sampled else {
            return;
        };
        let (instruments, error) = (self.instruments, &mut self.error);
        sampler.before(received_ns, consolidations, |sampled_ns, index, books| {
            for source in 0..instruments[index].symbols.len() {
                let (state, book) = books.source_book(source);
                if error.is_none() {
                    *error =
                        (writer.write(sampled_ns, &instruments[index], source, state, book)).err();
                }
            }
        });
    }

    fn finish(self) -> Result<(), String> {
        match (self.sampled, self.error) {
            (_, Some(error)) => Err(error.to_string()),
            (Some((_, writer)), None) => writer.finish().map_err(|error| error.to_string()),
            (None, None) => Ok(()),
        }
    }
}

fn run_service(args: &RunArgs) -> Result<(), String> {
    let config = args.load().map_err(|error| error.to_string())?;
    if args.check_config {
        // Files the configuration names are part of it: they must be there from here.
        simulator_recordings(&config)?;
        simulator_playback(&config)?;
        println!("{}: valid", args.config.display());
        return Ok(());
    }
    init_logging(config.log_format);
    let runtime = runtime(&config)?;
    let result = runtime.block_on(serve(config, args));
    // A write to a stuck stdout may still be in flight on a blocking thread: do not wait
    // for it forever.
    runtime.shutdown_timeout(Duration::from_secs(2));
    result
}

/// File descriptors besides the ports' connections: venue connections, snapshot
/// requests, logs.
const RESERVED_FILES: u64 = 128;

/// Raises the soft open-file limit to the hard one (often 1024 soft, far more hard), so
/// both ports' `max_connections` can be open beside the venues' connections; says so
/// when they still cannot.
fn raise_open_file_limit(config: &Config) {
    let connections = (config.grpc_connections.max + config.metrics_connections.max) as u64;
    match rlimit::increase_nofile_limit(u64::MAX) {
        Ok(limit) if limit < connections + RESERVED_FILES => tracing::warn!(
            limit,
            connections,
            "the open-file limit is below grpc.max_connections and metrics.max_connections \
             plus {RESERVED_FILES}: connections beyond it fail to be accepted, and the \
             venues' may fail too (raise LimitNOFILE, or lower max_connections)"
        ),
        Ok(_) => {}
        Err(error) => tracing::warn!(%error, "cannot read or raise the open-file limit"),
    }
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Colour only for a person at a terminal: journald, files and pipes get plain text.
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Text => logs.init(),
        LogFormat::Json => logs.json().init(),
    }
}

/// Binds `address`; a port in use is the common failure: the error names what moves it.
async fn bind(
    address: std::net::SocketAddr,
    setting: &'static str,
) -> Result<tokio::net::TcpListener, String> {
    tokio::net::TcpListener::bind(address)
        .await
        .map_err(|error| format!("cannot listen on {address} ({setting}): {error}"))
}

/// Starts the embedded simulator where the configuration has one, and points the venues
/// at it.
async fn start_simulator(config: &mut Config) -> Result<Option<Simulator>, String> {
    let Some(settings) = &config.simulator else {
        return Ok(None);
    };
    let listener = bind(settings.listen, "simulator.listen in the config file").await?;
    let simulator = Simulator::start(listener, settings.rate_per_second, settings.seed)
        .map_err(|error| format!("simulator: {error}"))?;
    if let Some(recordings) = simulator_playback(config)? {
        simulator.serve_recording(&recordings, 1.0);
    }
    for (venue, recording) in simulator_recordings(config)? {
        simulator.replay(venue, recording);
    }
    tracing::info!(address = %simulator.addr(), "embedded exchange simulator serving");
    serve_from_simulator(&simulator, config);
    Ok(Some(simulator))
}

/// `config`'s instruments served by `simulator`, listed there and priced as configured,
/// and its venues pointed at it.
fn serve_from_simulator(simulator: &Simulator, config: &mut Config) {
    if let Some(settings) = &config.simulator {
        simulator.set_prices(config, &settings.prices);
    }
    simulator.list_configured(config);
    simulator.point(config);
}

/// SIGHUP: the configuration read again, as at start (the file, the flags, the
/// environment); its instruments listed and delisted (`Service::reload`). One that
/// cannot be read, is invalid, or changes what only a restart applies is refused and
/// logged, and the service runs on as it was.
async fn reload(service: &mut Service, args: &RunArgs, simulator: Option<&Simulator>) {
    let outcome = async {
        let mut config = args.load().map_err(|error| error.to_string())?;
        if let Some(simulator) = simulator {
            serve_from_simulator(simulator, &mut config);
        }
        check_listings(&config).await?;
        service.reload(config).map_err(|error| error.to_string())
    };
    let outcome = outcome.await;
    let reloads = &service.metrics().config_reloads;
    match outcome {
        Ok(reloaded) => {
            reloads.with_label_values(&["applied"]).inc();
            let (listed, delisted) = (reloaded.listed, reloaded.delisted);
            tracing::info!(?listed, ?delisted, "configuration reloaded");
        }
        Err(error) => {
            reloads.with_label_values(&["refused"]).inc();
            tracing::warn!(%error, "configuration reload refused: the service runs as it was");
        }
    }
}

/// The venues' listings (`feed::listing`), before any connection: a symbol a venue does
/// not list stops the start as a configuration error does; a listing that cannot be read
/// is logged, and the names were checked by their form only.
async fn check_listings(config: &Config) -> Result<(), String> {
    let unread = mergebook::feed::listing::check(config, config.feed.connect_timeout)
        .await
        .map_err(|error| error.to_string())?;
    for error in unread {
        tracing::warn!(%error, "symbols checked by their form only: a name the venue does not list will cost the connection");
    }
    Ok(())
}

async fn serve(mut config: Config, args: &RunArgs) -> Result<(), String> {
    let simulator = start_simulator(&mut config).await?;
    check_listings(&config).await?;
    raise_open_file_limit(&config);
    let listeners = Listeners {
        grpc: bind(
            config.grpc_listen,
            "grpc.listen, --grpc-listen or MERGEBOOK_GRPC_LISTEN",
        )
        .await?,
        metrics: bind(
            config.metrics_listen,
            "metrics.listen, --metrics-listen or MERGEBOOK_METRICS_LISTEN",
        )
        .await?,
    };
    tracing::info!(grpc = %config.grpc_listen, metrics = %config.metrics_listen, "serving");
    for (setting, address) in [
        ("grpc.listen", config.grpc_listen),
        ("metrics.listen", config.metrics_listen),
    ] {
        if address.ip().is_unspecified() {
            tracing::warn!(%address, "{setting} listens on every interface: anyone who can reach this host can connect (bind 127.0.0.1 or a private address unless that is meant)");
        }
    }
    let mut service = Service::start(config, listeners).map_err(|error| error.to_string())?;
    let mut hangups = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::hangup())
        .map_err(|error| format!("listening for SIGHUP: {error}"))?;
    // systemd (Type=notify): ready once every listener is bound and every thread runs. Off
    // systemd NOTIFY_SOCKET is unset and these are no-ops.
    notify_systemd(sd_notify::NotifyState::Ready);
    let shutdown = shutdown_signal();
    tokio::pin!(shutdown);
    loop {
        let hangup = tokio::select! {
            _ = &mut shutdown => false,
            _ = feed_systemd_watchdog(&service) => false,
            hangup = hangups.recv() => hangup.is_some(),
        };
        if !hangup {
            break;
        }
        reload(&mut service, args, simulator.as_ref()).await;
    }
    notify_systemd(sd_notify::NotifyState::Stopping);
    tracing::info!("shutting down: closing connections");
    service.stop().await;
    tracing::info!("stopped");
    Ok(())
}

/// The recordings `simulator.replay` names, loaded (paths relative to the working
/// directory).
fn simulator_recordings(config: &Config) -> Result<Vec<(VenueId, Recording)>, String> {
    let Some(simulator) = &config.simulator else {
        return Ok(Vec::new());
    };
    simulator
        .replay
        .iter()
        .map(|(venue, path)| {
            Recording::load(*venue, path)
                .map(|recording| (*venue, recording))
                .map_err(|error| {
                    let path = path.display().to_string();
                    format!("simulator.replay.{venue} = {path:?}: {error}")
                })
        })
        .collect()
}

/// The recording `simulator.recording` names, loaded.
fn simulator_playback(
    config: &Config,
) -> Result<Option<Vec<timeline::ConnectionRecording>>, String> {
    let Some(dir) = config.simulator.as_ref().and_then(|s| s.recording.as_ref()) else {
        return Ok(None);
    };
    timeline::load_recording(dir)
        .map(Some)
        .map_err(|error| format!("simulator.recording = {:?}: {error}", dir.display()))
}

fn notify_systemd(state: sd_notify::NotifyState) {
    if let Err(error) = sd_notify::notify(&[state]) {
        tracing::warn!(%error, "cannot notify systemd");
    }
}

/// With `WatchdogSec=` set, pings systemd at half the interval while the merger thread is
/// alive; a stuck or dead merger stops the pings and systemd restarts the service. Without
/// a watchdog, never returns.
async fn feed_systemd_watchdog(service: &Service) {
    let Some(timeout) = sd_notify::watchdog_enabled() else {
        return std::future::pending().await;
    };
    let mut ticks = tokio::time::interval(timeout / 2);
    loop {
        ticks.tick().await;
        if service.merger_alive(timeout / 2) {
            notify_systemd(sd_notify::NotifyState::Watchdog);
        } else {
            tracing::error!("merger thread is not running: systemd watchdog not fed");
        }
    }
}

/// SIGINT (Ctrl-C) or SIGTERM.
async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut terminate) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = terminate.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// Prints a replay's summaries as JSON lines on stdout, keeping the first write error.
struct SummaryPrinter<W: Write> {
    out: W,
    error: Option<std::io::Error>,
}

impl<W: Write> SummaryPrinter<W> {
    fn print(&mut self, instrument: &Instrument, summary: &mergebook::merger::summary::Summary) {
        if self.error.is_none() {
            self.error = jsonl::write_summary(&mut self.out, instrument, summary).err();
        }
    }

    fn finish(mut self) -> Result<(), String> {
        match self.error.or_else(|| self.out.flush().err()) {
            Some(error) => Err(format!("writing output: {error}")),
            None => Ok(()),
        }
    }
}

/// Where a replay's summaries go: JSON lines on stdout, or a Parquet file (`--parquet`),
/// keeping the first error.
struct SummarySink {
    out: SummaryOut,
    /// Summaries published before this are not written (`--from`).
    from_ns: u64,
}

enum SummaryOut {
    Lines(SummaryPrinter<BufWriter<std::io::StdoutLock<'static>>>),
    Parquet {
        writer: Box<SummaryParquet>,
        error: Option<mergebook::publish::parquet::ParquetError>,
    },
}

impl SummarySink {
    /// Books `depth` levels deep of `instruments`, into the file `parquet` names, or on
    /// stdout.
    fn open(
        parquet: Option<&std::path::Path>,
        depth: usize,
        instruments: &[Instrument],
    ) -> Result<SummarySink, String> {
        let out = match parquet {
            None => SummaryOut::Lines(SummaryPrinter {
                out: BufWriter::new(std::io::stdout().lock()),
                error: None,
            }),
            Some(path) => SummaryOut::Parquet {
                writer: Box::new(
                    SummaryParquet::create(path, depth, instruments)
                        .map_err(|error| error.to_string())?,
                ),
                error: None,
            },
        };
        Ok(SummarySink { out, from_ns: 0 })
    }

    /// Writes no summary published before `from_ns`.
    fn from(mut self, from_ns: Option<u64>) -> SummarySink {
        self.from_ns = from_ns.unwrap_or(0);
        self
    }

    fn print(&mut self, instrument: &Instrument, summary: &mergebook::merger::summary::Summary) {
        if summary.published_ns < self.from_ns {
            return;
        }
        match &mut self.out {
            SummaryOut::Lines(printer) => printer.print(instrument, summary),
            SummaryOut::Parquet { writer, error } => {
                if error.is_none() {
                    *error = writer.write(instrument, summary).err();
                }
            }
        }
    }

    fn finish(self) -> Result<(), String> {
        match self.out {
            SummaryOut::Lines(printer) => printer.finish(),
            SummaryOut::Parquet {
                error: Some(error), ..
            } => Err(error.to_string()),
            SummaryOut::Parquet {
                writer,
                error: None,
            } => writer.finish().map_err(|error| error.to_string()),
        }
    }
}

fn report_decode_error(venue: VenueId, frame: usize, error: &replay::BadFrame) {
    eprintln!("mergebook replay: {venue} frame {}: {error}", frame + 1);
}

/// A replay's progress, on one line of stderr rewritten twice a second where stderr is a
/// terminal (nothing in a log or a pipe): the share of its files' bytes read, the events
/// replayed, and the replay's time.
struct Progress {
    size: u64,
    read: timeline::BytesRead,
    events: u64,
    shown_at: Option<std::time::Instant>,
}

impl Progress {
    fn new(size: u64, read: timeline::BytesRead) -> Progress {
        use std::io::IsTerminal;
        Progress {
            size,
            read,
            events: 0,
            shown_at: std::io::stderr()
                .is_terminal()
                .then(std::time::Instant::now),
        }
    }

    /// An event received at `received_ns` replayed.
    fn tick(&mut self, received_ns: u64) {
        self.events += 1;
        let Some(shown_at) = self.shown_at else {
            return;
        };
        if !self.events.is_multiple_of(4096) || shown_at.elapsed() < Duration::from_millis(500) {
            return;
        }
        self.shown_at = Some(std::time::Instant::now());
        let read = self.read.load(std::sync::atomic::Ordering::Relaxed);
        let share = (read as f64 / self.size.max(1) as f64).min(1.0);
        let filled = (share * 30.0) as usize;
        let mut time = Vec::new();
        mergebook::venue::write_timestamp(received_ns / 1_000, &mut time);
        eprint!(
            "\r[{}{}] {:3.0}%  {} events  at {}",
            "#".repeat(filled),
            ".".repeat(30 - filled),
            share * 100.0,
            self.events,
            String::from_utf8_lossy(&time)
        );
    }

    /// Ends the progress line, where one was shown.
    fn finish(&self) {
        if self.shown_at.is_some() && self.events >= 4096 {
            eprintln!();
        }
    }
}

/// The recordings' files read as they are replayed, a line at a time: memory for a line a
/// file, whatever their size. What the reading met is kept for the end: the first error
/// (which ends that file's frames) and each file's unreadable lines.
struct FileFrames<'a> {
    /// Each file and its venue.
    venues: &'a [(VenueId, PathBuf)],
    /// `--until`: frames received after it are not replayed.
    until: Option<u64>,
    error: std::cell::RefCell<Option<String>>,
    /// Per file: how many lines could not be read, and the first.
    unreadable: std::cell::RefCell<Vec<(usize, usize)>>,
    /// The bytes read from the files, for the progress of the replay's read.
    read: timeline::BytesRead,
    progress: std::cell::RefCell<Progress>,
}

type Frames<'a> = Box<dyn Iterator<Item = RecordedFrame> + 'a>;

impl<'a> FileFrames<'a> {
    fn new(venues: &'a [(VenueId, PathBuf)], until: Option<u64>) -> FileFrames<'a> {
        let size = (venues.iter())
            .filter_map(|(_, path)| path.metadata().ok())
            .map(|metadata| metadata.len())
            .sum();
        let read = timeline::BytesRead::default();
        FileFrames {
            venues,
            until,
            error: Default::default(),
            unreadable: std::cell::RefCell::new(vec![(0, 0); venues.len()]),
            progress: std::cell::RefCell::new(Progress::new(
                size,
                timeline::BytesRead::clone(&read),
            )),
            read,
        }
    }

    /// The frames of the `index`th file to replay, up to `--until`, the progress shown.
    fn replayed(&self, index: usize) -> Result<Frames<'_>, String> {
        let until = self.until.unwrap_or(u64::MAX);
        let frames = self.open(index, timeline::BytesRead::clone(&self.read))?;
        Ok(Box::new(
            (frames.take_while(move |frame| frame.received_ns <= until))
                .inspect(|frame| self.progress.borrow_mut().tick(frame.received_ns)),
        ))
    }

    /// The frames of the `index`th file, from its start, its bytes counted in `read`.
    fn open(&self, index: usize, read: timeline::BytesRead) -> Result<Frames<'_>, String> {
        let (venue, path) = &self.venues[index];
        let mut reader = timeline::FrameReader::open_counted(Some(*venue), path, read)
            .map_err(|error| error.to_string())?;
        let mut ended = false;
        Ok(Box::new(std::iter::from_fn(move || {
            if ended {
                return None;
            }
            let frame = reader.next();
            ended = !matches!(frame, Some(Ok(_)));
            match frame {
                Some(Ok(frame)) => return Some(frame),
                Some(Err(error)) => *self.error.borrow_mut() = Some(error.to_string()),
                None => {
                    if let (count @ 1.., named) = reader.unreadable() {
                        self.unreadable.borrow_mut()[index] = (count, named[0]);
                    }
                }
            }
            None
        })))
    }

    /// A first read of every file: each checked to fit `mode` (where one is asked for),
    /// and `look` at its frames (what a replay plans from); the files' unreadable lines
    /// reported.
    fn survey<T>(
        &self,
        mode: Option<replay::Mode>,
        mut look: impl FnMut(usize, &mut dyn Iterator<Item = RecordedFrame>) -> T,
    ) -> Result<Vec<T>, String> {
        let mut found = Vec::new();
        for (index, (venue, path)) in self.venues.iter().enumerate() {
            let mut check = mode.map(|mode| replay::ModeCheck::new(*venue, mode));
            let read = timeline::BytesRead::default();
            let mut frames = self.open(index, read)?.inspect(|frame| {
                if let Some(check) = &mut check {
                    check.see(frame);
                }
            });
            found.push(look(index, &mut frames));
            frames.for_each(drop);
            self.ended()?;
            if let Some(check) = check {
                check
                    .finish()
                    .map_err(|mismatch| format!("{}: {mismatch}", path.display()))?;
            }
            if let (count @ 1.., first) = self.unreadable.borrow()[index] {
                eprintln!(
                    "mergebook replay: {}: {count} line(s) without a receive time before the \
                     message, left out (the first: line {first})",
                    path.display()
                );
            }
        }
        Ok(found)
    }

    /// The replay's end: the progress line ended, and the error a reading met, if one did.
    fn ended(&self) -> Result<(), String> {
        self.progress.borrow().finish();
        match self.error.borrow_mut().take() {
            Some(error) => Err(format!("{error}: replayed up to it")),
            None => Ok(()),
        }
    }
}

fn run_replay(recordings: &Recordings, instrument: &str) -> Result<(), String> {
    let files = FileFrames::new(&recordings.venues, recordings.output.until);
    let venues: Vec<VenueId> = recordings.venues.iter().map(|(venue, _)| *venue).collect();
    let streams = files.survey(Some(replay::Mode::Snapshot), |index, frames| {
        replay::first_book_stream(venues[index], frames)
    })?;
    let sources = (0..venues.len())
        .map(|index| files.replayed(index))
        .collect::<Result<_, _>>()?;
    // Its books named as an instrument's: a venue given twice, by its files' names.
    let names: Vec<(VenueId, String)> = recordings
        .venues
        .iter()
        .map(|(venue, path)| {
            (
                *venue,
                path.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into(),
            )
        })
        .collect();
    let books: Vec<(VenueId, &str)> = names.iter().map(|(v, f)| (*v, f.as_str())).collect();
    let instrument = Instrument::of_books(instrument, &books);
    let depth = usize::from(recordings.depth);
    let mut printer = SummarySink::open(
        recordings.output.parquet.as_deref(),
        depth,
        std::slice::from_ref(&instrument),
    )?
    .from(recordings.output.from);
    let stats = replay::replay_frames(
        &venues,
        streams,
        sources,
        depth,
        |summary| printer.print(&instrument, summary),
        report_decode_error,
    );
    printer.finish()?;
    eprintln!(
        "mergebook replay: {} frames, {} books, {} out of order, {} decode errors, {} summaries",
        stats.frames, stats.books, stats.out_of_order, stats.decode_errors, stats.summaries
    );
    files.ended()
}

fn run_diff_replay(
    recordings: &Recordings,
    symbols: &[(VenueId, String)],
    snapshots: &[(VenueId, String)],
    depths: replay::DiffDepths,
) -> Result<(), String> {
    let venues: Vec<VenueId> = recordings.venues.iter().map(|(venue, _)| *venue).collect();
    let wanted: Vec<Vec<String>> = venues
        .iter()
        .map(|venue| {
            let of_venue = symbols.iter().filter(|(v, _)| v == venue);
            of_venue.map(|(_, symbol)| symbol.clone()).collect()
        })
        .collect();
    let in_file = |index: usize| {
        let path = recordings.venues[index].1.display().to_string();
        move |error: &dyn std::fmt::Display| format!("{path}: {error}")
    };
    let files = FileFrames::new(&recordings.venues, recordings.output.until);
    let (mut plan, sources): (replay::DiffPlan, Vec<Frames<'_>>) = if snapshots.is_empty() {
        // Planned from a first read of the files, replayed from a second.
        let mut plan = replay::DiffPlan::empty();
        let planned = files.survey(Some(replay::Mode::Diff), |index, frames| {
            let (venue, symbols) = (venues[index], &wanted[index][..]);
            plan.add_recording(index, venue, symbols, frames, depths.max_levels)
                .map_err(|error| in_file(index)(&error))
        })?;
        planned.into_iter().collect::<Result<(), _>>()?;
        let sources = (0..venues.len())
            .map(|index| files.replayed(index))
            .collect::<Result<_, _>>()?;
        (plan, sources)
    } else {
        // A snapshot given apart goes in among the frames: read whole.
        let mut inputs = files.survey(Some(replay::Mode::Diff), |_, frames| {
            frames.collect::<Vec<_>>()
        })?;
        let planned = (venues.iter().zip(&inputs).zip(&wanted))
            .map(|((venue, frames), symbols)| (*venue, &symbols[..], frames.iter()));
        let plan = replay::plan_diff_of(planned, depths.max_levels)
            .map_err(|(index, error)| in_file(index)(&error))?;
        for (venue, snapshot) in snapshots {
            let mut books = plan.books.iter().filter(|book| book.venue == *venue);
            let (Some(book), None) = (books.next(), books.next()) else {
                return Err(format!(
                    "--snapshot {venue}=…: give it with a {venue} recording of one symbol"
                ));
            };
            let body = std::fs::read_to_string(snapshot)
                .map_err(|error| format!("cannot read {snapshot}: {error}"))?;
            let frames = &mut inputs[book.recording];
            replay::insert_snapshot(*venue, &book.symbol, frames, body);
        }
        let sources = inputs
            .into_iter()
            .map(|frames| Box::new(frames.into_iter()) as Frames<'_>)
            .collect();
        (plan, sources)
    };
    let instruments: Vec<Instrument> = plan
        .instruments
        .iter()
        .enumerate()
        .map(|(index, name)| {
            let books: Vec<(VenueId, &str)> = plan
                .books
                .iter()
                .filter(|book| book.instrument == index)
                .map(|book| (book.venue, book.symbol.as_str()))
                .collect();
            Instrument::of_books(name, &books)
        })
        .collect();
    let mut printer = SummarySink::open(
        recordings.output.parquet.as_deref(),
        depths.depth,
        &instruments,
    )?
    .from(recordings.output.from);
    replay::replay_diff_frames(
        &venues,
        sources,
        &mut plan,
        depths,
        |instrument, summary| printer.print(&instruments[instrument], summary),
        report_decode_error,
    );
    printer.finish()?;
    for book in &plan.books {
        let (stats, sync) = (book.stats, &book.sync);
        let state = if sync.is_synced() {
            use mergebook::book::Side;
            format!(
                "synced at id {}, {} bids, {} asks",
                sync.last_id(),
                sync.book.len(Side::Bid),
                sync.book.len(Side::Ask)
            )
        } else {
            "not synced".to_owned()
        };
        eprintln!(
            "mergebook replay: {} {}: {} events, {} applied, {} dropped, {} gaps, \
                 {} crossings, {} checksum mismatches, {} snapshots ({} too old, {} refused), \
                 {} decode errors; {state}",
            book.venue,
            book.symbol,
            stats.events,
            stats.applied,
            stats.dropped,
            stats.gaps,
            stats.crossings,
            stats.checksum_mismatches,
            stats.snapshots,
            stats.snapshots_too_old,
            stats.snapshots_refused,
            stats.decode_errors
        );
    }
    files.ended()
}

fn healthcheck(address: std::net::SocketAddr) -> Result<(), String> {
    let response = get_health(address).map_err(|error| format!("{address}: {error}"))?;
    if response.starts_with("HTTP/1.1 200") {
        Ok(())
    } else {
        Err(response
            .lines()
            .next()
            .unwrap_or("empty response")
            .to_owned())
    }
}

/// One blocking `GET /health`: enough HTTP for a health probe, without a client library.
fn get_health(address: std::net::SocketAddr) -> std::io::Result<String> {
    use std::io::Read;
    let timeout = Duration::from_secs(2);
    let mut stream = std::net::TcpStream::connect_timeout(&address, timeout)?;
    stream.set_read_timeout(Some(timeout))?;
    stream.set_write_timeout(Some(timeout))?;
    write!(
        stream,
        "GET /health HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.take(64 * 1024).read_to_string(&mut response)?;
    Ok(response)
}
