#![forbid(unsafe_code)]
//! The `mergebook` command line.

use clap::{Parser, Subcommand};
use mergebook::book::MAX_DEPTH;
use mergebook::publish::jsonl;
use mergebook::replay::{self, RecordedFrame};
use mergebook::venue::VenueId;
use std::io::{BufWriter, Write};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(version, about = "Low-latency multi-exchange order book aggregator")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Replay recorded frames through the decoders and merge; print JSON-lines summaries.
    Replay {
        /// A venue and its recording, `binance=FILE` (plain frames or a session timeline).
        #[arg(long = "venue", value_name = "VENUE=FILE", required = true, value_parser = parse_venue_file)]
        venues: Vec<(VenueId, PathBuf)>,
        /// The instrument name printed in each summary.
        #[arg(long, default_value = "REPLAY")]
        instrument: String,
        /// Levels per side, per venue and in the merged book.
        #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u16).range(1..=MAX_DEPTH as i64))]
        depth: u16,
    },
}

fn parse_venue_file(argument: &str) -> Result<(VenueId, PathBuf), String> {
    let (name, path) = argument
        .split_once('=')
        .ok_or_else(|| format!("expected VENUE=FILE, got {argument:?}"))?;
    let venue = VenueId::from_name(name).ok_or_else(|| {
        let known: Vec<_> = VenueId::ALL.iter().map(|venue| venue.name()).collect();
        format!("unknown venue {name:?} (known: {})", known.join(", "))
    })?;
    Ok((venue, PathBuf::from(path)))
}

fn main() -> ExitCode {
    match Cli::parse().command {
        Command::Replay {
            venues,
            instrument,
            depth,
        } => run_replay(&venues, &instrument, usize::from(depth)),
    }
}

fn run_replay(venues: &[(VenueId, PathBuf)], instrument: &str, depth: usize) -> ExitCode {
    let mut inputs: Vec<(VenueId, Vec<RecordedFrame>)> = Vec::new();
    for (venue, path) in venues {
        match replay::load_frames(path) {
            Ok(frames) => inputs.push((*venue, frames)),
            Err(error) => {
                eprintln!("mergebook replay: {error}");
                return ExitCode::FAILURE;
            }
        }
    }
    let stdout = std::io::stdout();
    let mut out = BufWriter::new(stdout.lock());
    let mut write_error = None;
    let stats = replay::replay(
        &inputs,
        depth,
        |summary| {
            if write_error.is_none() {
                write_error = jsonl::write_summary(&mut out, instrument, summary).err();
            }
        },
        |venue, frame, error| eprintln!("mergebook replay: {venue} frame {}: {error}", frame + 1),
    );
    if let Some(error) = write_error.or_else(|| out.flush().err()) {
        eprintln!("mergebook replay: writing output: {error}");
        return ExitCode::FAILURE;
    }
    eprintln!(
        "mergebook replay: {} book frames, {} other, {} decode errors, {} summaries",
        stats.books, stats.other_messages, stats.decode_errors, stats.summaries
    );
    ExitCode::SUCCESS
}
