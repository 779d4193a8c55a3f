#![forbid(unsafe_code)]
//! `mergebook-tools`: the measurements and endurance runs of mergebook, apart from the
//! service binary. `loadtest`: the wire-to-publish harness (BENCHMARKS.md); `soak`: random
//! faults at a steady rate, every summary checked (docs/reliability.md).

use clap::Parser;
use mergebook::book::MAX_DEPTH;
use mergebook::config::IdleStrategy;
use mergebook::venue::VenueId;
use mergebook_tools::cpu_latency::NO_LIMIT_US;
use mergebook_tools::loadtest::{self, LoadReport, LoadSpec, MaxRateSearch};
use std::process::ExitCode;
use std::time::Duration;

#[derive(Parser)]
#[command(version, about = "mergebook's load harness and soak")]
enum Command {
    /// The wire-to-publish harness: the embedded simulator sends frames at a fixed rate per
    /// venue over loopback WebSockets to the real pipeline; prints latency percentiles,
    /// frame accounting, CPU and memory (BENCHMARKS.md). Each rate runs in a fresh process.
    Loadtest(LoadtestArgs),
    /// Soak: the simulator at a steady rate with a random fault every few seconds, every
    /// summary checked against the merged book's invariants; reports frames, faults,
    /// reconnections, violations and RSS over time (docs/reliability.md). Exits non-zero
    /// on any violation, a venue that does not recover, or RSS that keeps growing.
    Soak(SoakArgs),
    /// What publishing to NATS costs: the service at one rate without and with NATS (a
    /// local nats-server, from PATH), a subscriber timing each summary from its publish;
    /// prints summaries/s, latency percentiles and the CPU NATS adds (BENCHMARKS.md).
    NatsBench(NatsBenchArgs),
}

#[derive(clap::Args)]
struct NatsBenchArgs {
    /// Book frames per second per venue and instrument (each instrument on every venue
    /// with top-N snapshot streams).
    #[arg(long, default_value_t = 1000, value_parser = clap::value_parser!(u32).range(10..=100_000))]
    rate: u32,
    /// Instruments.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=1024))]
    instruments: u16,
    /// Seconds measured, each run.
    #[arg(long, default_value = "10", value_parser = parse_seconds)]
    duration: Duration,
    /// Seconds of warm-up before each measurement.
    #[arg(long, default_value = "3", value_parser = parse_seconds)]
    warmup: Duration,
}

#[derive(clap::Args)]
struct SoakArgs {
    /// How long to run, in seconds.
    #[arg(long, default_value_t = 60)]
    duration: u64,
    /// Book frames per second per venue.
    #[arg(long, default_value_t = 10_000, value_parser = clap::value_parser!(u32).range(10..=100_000))]
    rate: u32,
    /// Seeds the market and the choice of faults.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Seconds between faults.
    #[arg(long, default_value_t = 2.0)]
    fault_every: f64,
    /// Seconds between RSS samples.
    #[arg(long, default_value_t = 10)]
    rss_every: u64,
    /// Print the report as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(clap::Args)]
struct LoadtestArgs {
    /// Frames per second per book (per venue and instrument); several
    /// (`100,1000,10000`) make a table.
    #[arg(long, value_delimiter = ',', default_value = "1000", value_parser = clap::value_parser!(u32).range(1..=10_000_000))]
    rate: Vec<u32>,
    /// Instruments, each on every venue; several (`1,100,1000`) make a table of the
    /// whole market's costs against the number of books.
    #[arg(long, value_delimiter = ',', default_value = "1", value_parser = clap::value_parser!(u16).range(1..=mergebook::config::MAX_INSTRUMENTS))]
    instruments: Vec<u16>,
    /// The first instrument's books at this many frames per second, the others at
    /// --rate: one busy book among quiet ones.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    hot_rate: Option<u32>,
    /// With several --instruments: also draw wire-to-publish latency and CPU against the
    /// number of books, as SVG, into this file.
    #[arg(long, value_name = "FILE")]
    plot: Option<std::path::PathBuf>,
    /// Venues sending, each with its own reader thread (default: every venue with
    /// snapshot streams).
    #[arg(long = "venue", value_delimiter = ',', value_parser = parse_venue)]
    venues: Vec<VenueId>,
    /// Seconds measured, after the warm-up.
    #[arg(long, default_value = "10", value_parser = parse_seconds)]
    duration: Duration,
    /// Seconds of warm-up (connect, subscribe, first books), counted but not timed.
    #[arg(long, default_value = "2", value_parser = parse_seconds)]
    warmup: Duration,
    /// Levels per side; 20 makes Binance send depth20 frames (about 1.2 KB).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u16).range(1..=MAX_DEPTH as i64))]
    depth: u16,
    /// The merger's idle strategy: spin, spin-then-yield, park, batch.
    #[arg(long, default_value = "spin", value_parser = parse_idle)]
    idle: IdleStrategy,
    /// With --idle batch: the merger's sleep between passes, in µs.
    #[arg(long, default_value_t = 200, value_parser = clap::value_parser!(u32).range(10..=100_000))]
    batch_us: u32,
    /// The threads the readers share (0: a thread a connection).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=64))]
    reader_threads: u32,
    /// A reader thread's sleep between looks at its sockets, in µs (0: woken by each read).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    read_batch_us: u32,
    /// Pin the merger thread to this CPU.
    #[arg(long)]
    merger_core: Option<usize>,
    /// Hold the kernel's CPU-latency request (/dev/cpu_dma_latency, needs root) at this
    /// many µs during each run, as a host tuned for latency does; 0: idle CPUs poll
    /// instead of halting.
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=i64::from(NO_LIMIT_US)))]
    cpu_wake_latency_us: Option<u32>,
    /// Seconds between memory samples.
    #[arg(long, default_value = "1", value_parser = parse_seconds)]
    rss_every: Duration,
    /// Instead of the given rates: raise the rate until it is no longer sustained (lost
    /// frames, the simulator held back, or a growing backlog, in two runs in a row), then
    /// bisect.
    #[arg(long)]
    find_max: bool,
    /// Print the report of one rate as JSON (what each child process of a table prints).
    #[arg(long)]
    json: bool,
    /// Pages of the web view following the first instrument's book all run long (`[web]`
    /// on: each an event stream on the metrics port, read and dropped as a browser would
    /// take it).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u16).range(0..=1000))]
    web_clients: u16,
    /// `Quote` requests a second on the first instrument for the whole run (25 of its base
    /// coin, buying and selling in turn, over gRPC): the merger answers them between passes.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u32).range(0..=10_000))]
    quotes_per_second: u32,
    /// Each connection of the simulator writes the frames due in this many milliseconds
    /// together (never less often than the fastest book sends): what a load generator
    /// writing each frame alone would cost it, and the readers, is left out.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    write_every_ms: u32,
}

fn parse_venue(name: &str) -> Result<VenueId, String> {
    VenueId::from_name(name).ok_or_else(|| {
        let known: Vec<_> = VenueId::ALL.iter().map(|venue| venue.name()).collect();
        format!("unknown venue {name:?} (known: {})", known.join(", "))
    })
}

fn parse_seconds(text: &str) -> Result<Duration, String> {
    text.parse::<f64>()
        .ok()
        .and_then(|seconds| Duration::try_from_secs_f64(seconds).ok())
        .filter(|duration| !duration.is_zero())
        .ok_or_else(|| format!("expected a positive number of seconds, got {text:?}"))
}

fn parse_idle(name: &str) -> Result<IdleStrategy, String> {
    IdleStrategy::parse(name).ok_or_else(|| format!("unknown idle strategy {name:?}"))
}

fn main() -> ExitCode {
    if !mergebook::cpu::check() {
        return ExitCode::FAILURE;
    }
    match Command::parse() {
        Command::Loadtest(mut args) => {
            if args.venues.is_empty() {
                args.venues = snapshot_venues().collect();
            }
            if let Some(venue) = args
                .venues
                .iter()
                .find(|venue| !snapshot_venues().any(|loadable| loadable == **venue))
            {
                eprintln!(
                    "mergebook-tools loadtest: {venue} has no snapshot streams of pairs in the \
                     base coin (the harness times snapshot-mode books of generated pairs); \
                     venues it can load: {}",
                    snapshot_venues()
                        .map(VenueId::name)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                return ExitCode::FAILURE;
            }
            run_loadtest(&args)
        }
        Command::Soak(args) => run_soak(&args),
        Command::NatsBench(args) => {
            let spec = mergebook_tools::nats_bench::NatsBenchSpec {
                rate: args.rate,
                instruments: usize::from(args.instruments),
                warmup: args.warmup,
                duration: args.duration,
            };
            match mergebook_tools::nats_bench::run(&spec) {
                Ok(report) => {
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&report).expect("serializable")
                    );
                    ExitCode::SUCCESS
                }
                Err(error) => {
                    eprintln!("mergebook-tools nats-bench: {error}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

fn run_soak(args: &SoakArgs) -> ExitCode {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let spec = mergebook_tools::soak::SoakSpec {
        duration: Duration::from_secs(args.duration),
        rate_per_venue: args.rate,
        seed: args.seed,
        fault_every: Duration::from_secs_f64(args.fault_every.max(0.01)),
        rss_every: Duration::from_secs(args.rss_every.max(1)),
    };
    let report = match mergebook_tools::soak::run(&spec) {
        Ok(report) => report,
        Err(error) => {
            eprintln!("mergebook-tools soak: {error}");
            return ExitCode::FAILURE;
        }
    };
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).expect("serializable")
        );
    } else {
        print!("{}", report.text());
    }
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn run_loadtest(args: &LoadtestArgs) -> ExitCode {
    if args.json {
        let ([rate], [instruments]) = (&args.rate[..], &args.instruments[..]) else {
            eprintln!("mergebook-tools loadtest: --json runs one rate and one --instruments");
            return ExitCode::FAILURE;
        };
        let spec = LoadSpec {
            rate_per_venue: *rate,
            venues: args.venues.clone(),
            instruments: usize::from(*instruments),
            hot_rate: args.hot_rate,
            depth: usize::from(args.depth),
            warmup: args.warmup,
            duration: args.duration,
            idle: args.idle,
            batch_us: args.batch_us,
            reader_threads: args.reader_threads,
            read_batch_us: args.read_batch_us,
            merger_core: args.merger_core,
            rss_every: args.rss_every,
            cpu_wake_latency_us: args.cpu_wake_latency_us,
            web_clients: usize::from(args.web_clients),
            quotes_per_second: args.quotes_per_second,
            write_every: Duration::from_millis(u64::from(args.write_every_ms)),
        };
        return match loadtest::run(&spec) {
            Ok(report) => {
                println!("{}", serde_json::to_string(&report).expect("serializable"));
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("mergebook-tools loadtest: {error}");
                ExitCode::FAILURE
            }
        };
    }
    let mut reports = Vec::new();
    if args.instruments != [1] {
        for &rate in &args.rate {
            for &instruments in &args.instruments {
                let Some(report) = loadtest_child(args, rate, instruments) else {
                    return ExitCode::FAILURE;
                };
                reports.push(report);
            }
        }
        print!("{}", loadtest::books_table(&reports));
        if let Some(path) = &args.plot
            && let Err(error) = std::fs::write(path, loadtest::books_plot(&reports))
        {
            eprintln!("mergebook-tools loadtest: {}: {error}", path.display());
            return ExitCode::FAILURE;
        }
    } else if args.find_max {
        let mut search = MaxRateSearch::new(25_000, 4);
        while let Some(rate) = search.next_rate() {
            let Some(report) = loadtest_child(args, rate, 1) else {
                return ExitCode::FAILURE;
            };
            eprintln!(
                "{rate} frames/s per venue: {} (lost {}, unaccounted {}, achieved {:.0}/s, \
                 wire P99 first second {:.1} µs, last second {:.1} µs, steal {:.1} %)",
                if report.sustained() {
                    "sustained"
                } else {
                    "not sustained"
                },
                report.lost,
                report.unaccounted,
                report.achieved_rate_per_venue,
                report.first_second_wire_ns.p99 as f64 / 1e3,
                report.final_second_wire_ns.p99 as f64 / 1e3,
                report.steal_percent,
            );
            search.record(rate, report.sustained());
            reports.push(report);
        }
        reports.sort_by_key(|report| report.rate_per_venue);
        print!("{}", loadtest::table(&reports));
        match search.best() {
            Some(best) => println!("\nmax sustained rate: {best} frames/s per venue"),
            None => println!("\nno rate tried was sustained"),
        }
    } else {
        for &rate in &args.rate {
            let Some(report) = loadtest_child(args, rate, 1) else {
                return ExitCode::FAILURE;
            };
            reports.push(report);
        }
        print!("{}", loadtest::table(&reports));
    }
    for report in &reports {
        let samples: Vec<_> = report
            .rss_samples
            .iter()
            .map(|&(seconds, bytes)| {
                format!("{seconds:.0} s {:.2}", bytes as f64 / (1 << 20) as f64)
            })
            .collect();
        println!(
            "resident MiB at {} frames/s per venue: {}",
            report.rate_per_venue,
            samples.join(", ")
        );
    }
    for report in &reports {
        if report.unaccounted > 0 || report.lost != 0 {
            eprintln!(
                "mergebook-tools loadtest: at {} frames/s per venue, {} frames lost and {} records unaccounted",
                report.rate_per_venue, report.lost, report.unaccounted
            );
        }
    }
    ExitCode::SUCCESS
}

/// Runs one rate and number of instruments in a fresh process (memory and CPU figures of
/// that run alone).
fn loadtest_child(args: &LoadtestArgs, rate: u32, instruments: u16) -> Option<LoadReport> {
    let venues: Vec<&str> = args.venues.iter().map(|venue| venue.name()).collect();
    let mut command = std::process::Command::new(std::env::current_exe().ok()?);
    command
        .args(["loadtest", "--json", "--rate", &rate.to_string()])
        .args(["--instruments", &instruments.to_string()])
        .args(["--venue", &venues.join(",")])
        .args(["--duration", &args.duration.as_secs_f64().to_string()])
        .args(["--warmup", &args.warmup.as_secs_f64().to_string()])
        .args(["--depth", &args.depth.to_string()])
        .args(["--idle", args.idle.name()])
        .args(["--batch-us", &args.batch_us.to_string()])
        .args(["--reader-threads", &args.reader_threads.to_string()])
        .args(["--read-batch-us", &args.read_batch_us.to_string()])
        .args(["--rss-every", &args.rss_every.as_secs_f64().to_string()])
        .args(["--web-clients", &args.web_clients.to_string()])
        .args(["--quotes-per-second", &args.quotes_per_second.to_string()])
        .args(["--write-every-ms", &args.write_every_ms.to_string()]);
    if let Some(core) = args.merger_core {
        command.args(["--merger-core", &core.to_string()]);
    }
    if let Some(us) = args.cpu_wake_latency_us {
        command.args(["--cpu-wake-latency-us", &us.to_string()]);
    }
    if let Some(hot_rate) = args.hot_rate {
        command.args(["--hot-rate", &hot_rate.to_string()]);
    }
    let output = match command.stderr(std::process::Stdio::inherit()).output() {
        Ok(output) if output.status.success() => output,
        Ok(output) => {
            eprintln!(
                "mergebook-tools loadtest: the run at {rate} frames/s failed ({})",
                output.status
            );
            return None;
        }
        Err(error) => {
            eprintln!("mergebook-tools loadtest: cannot run itself: {error}");
            return None;
        }
    };
    match serde_json::from_slice(&output.stdout) {
        Ok(report) => Some(report),
        Err(error) => {
            eprintln!("mergebook-tools loadtest: unreadable report: {error}");
            None
        }
    }
}

/// The venues the load harness can drive: it times snapshot-mode books.
fn snapshot_venues() -> impl Iterator<Item = VenueId> {
    mergebook_tools::spot_venues(true)
}
