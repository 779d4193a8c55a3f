//! Recording (`[record]`) and replaying it (`replay::replay_recording`): the service runs
//! against the simulator with faults (a gap in a diff stream, a reconnect, a bad frame)
//! and records; the recording replayed with the same configuration publishes what the
//! service published, summary for summary.

use crate::common;
use common::config::TestConfig;

use mergebook::book::TopBook;
use mergebook::clock;
use mergebook::config::Config;
use mergebook::feed::handoff::VenueFeed;
use mergebook::merger::Consolidation;
use mergebook::merger::summary::MAX_SOURCES;
use mergebook::merger::summary::{Summary, VenueState};
use mergebook::record::timeline;
use mergebook::replay;
use mergebook::service::{Listeners, Service};
use mergebook::sim::Simulator;
use mergebook::venue::VenueId;
use std::collections::HashMap;
use std::time::Duration;
use tokio::net::TcpListener;

const BINANCE: VenueId = VenueId::Binance;
const BINANCE_SBE: VenueId = VenueId::BinanceSbe;
const BITSTAMP: VenueId = VenueId::Bitstamp;
const KRAKEN: VenueId = VenueId::Kraken;
const DEPTH: usize = 10;
const WAIT: Duration = Duration::from_secs(20);

/// Two instruments on four venues, Binance in diff mode (REST snapshots), Binance's
/// binary feed, Bitstamp on both; recording into `dir`.
fn config(dir: &std::path::Path) -> Config {
    let key = common::api_key_file(BINANCE_SBE);
    TestConfig::new()
        .set("service.depth", DEPTH as i64)
        .set("service.stale_after_ms", 600_000)
        .set("feed.read_idle_timeout_ms", 600_000)
        .set("feed.backoff_initial_ms", 20)
        .set("feed.backoff_max_ms", 100)
        .set("venues.binance.mode", "diff")
        .set("venues.binance.snapshot_spacing_ms", 20)
        .set("venues.binance_sbe.api_key_file", key.display().to_string())
        .set("record.dir", dir.display().to_string())
        .instrument(
            "ETH/BTC",
            &[
                (BINANCE, "ETHBTC"),
                (BITSTAMP, "ethbtc"),
                (BINANCE_SBE, "ETHBTC"),
            ],
        )
        .instrument("BTC/USD", &[(BITSTAMP, "btcusd"), (KRAKEN, "BTC/USD")])
        .build()
}

fn metric(service: &Service, name: &str, venue: VenueId) -> f64 {
    common::service_metric(service, &format!("{name}{{exchange=\"{venue}\"}}"))
}

/// Runs the service against the simulator with recording on, through a gap, a
/// reconnect and a bad frame. Returns its configuration and every summary it wrote.
async fn record_a_run(dir: &std::path::Path) -> (Config, Vec<Summary>) {
    let simulator =
        Simulator::start(TcpListener::bind("127.0.0.1:0").await.unwrap(), 40, 7).unwrap();
    let mut config = config(dir);
    simulator.point(&mut config);
    let summaries = common::EverySummary::default();
    let listeners = Listeners::loopback().await.unwrap();
    let service = Service::start_observed(config.clone(), listeners, summaries.clone()).unwrap();
    let synced = |summaries: &common::EverySummary| {
        let written = summaries.0.lock().unwrap();
        (0..2).all(|instrument| {
            written
                .iter()
                .rev()
                .find(|s| s.instrument == instrument)
                .is_some_and(|s| s.sources().all(|(_, _, state)| state == VenueState::Synced))
        })
    };
    common::eventually("every venue synced", WAIT, || synced(&summaries)).await;

    simulator.skip_events(BINANCE, 1);
    common::eventually("a gap in Binance's diff stream", WAIT, || {
        common::service_metric(&service, "orderbook_gaps_total{exchange=\"binance\"}") >= 1.0
    })
    .await;
    let connects = simulator.connections(KRAKEN);
    simulator.disconnect(KRAKEN);
    common::eventually("Kraken reconnected", WAIT, || {
        simulator.connections(KRAKEN) > connects
    })
    .await;
    simulator.send_raw(
        BITSTAMP,
        "{\"event\":\"data\",\"channel\":\"order_book_ethbtc\",\"data\":{\"bids\":[[\"1.0\"",
    );
    common::eventually("Bitstamp's bad frame counted", WAIT, || {
        metric(&service, "orderbook_decode_errors_total", BITSTAMP) >= 1.0
    })
    .await;
    common::eventually("every venue synced again", WAIT, || synced(&summaries)).await;
    // Some summaries past the faults, so the recording goes on after its last one, and
    // more than a hundred in all (what the comparison below needs to mean something).
    let enough = summaries.0.lock().unwrap().len().max(81) + 20;
    common::eventually("20 summaries more, over 100 in all", WAIT, || {
        summaries.0.lock().unwrap().len() >= enough
    })
    .await;
    service.stop().await;
    let written = std::mem::take(&mut *summaries.0.lock().unwrap());
    (config, written)
}

/// What a venue's slot in a summary says: its state, and its latest book's receive time,
/// sequence and best prices.
type SlotView = (VenueState, u64, u64, mergebook::merger::summary::BestPrices);

fn slot_view(summary: &Summary, venue: VenueId) -> SlotView {
    let source = summary.source_of(venue).expect("one book a venue");
    (
        summary.source_states[source],
        summary.source_received_ns[source],
        summary.source_sequence[source],
        summary.source_best[source],
    )
}

/// A venue as the merger holds it: the state its reader published, its latest book.
type VenueStanding = (VenueId, VenueState, Option<TopBook>);

/// Every feed a venue's core published in the replay, for one instrument, as the merger
/// holds it: (state published, the latest book), with what the summary's slot shows of it
/// (receive times on the live service's monotonic clock).
struct ReplayedSlots {
    slots: HashMap<(usize, VenueId), Vec<(SlotView, VenueStanding)>>,
    latest_book: HashMap<(usize, VenueId), TopBook>,
    /// Every synced book, by (instrument, venue, receive time, sequence).
    books: HashMap<(usize, VenueId, u64, u64), TopBook>,
}

impl ReplayedSlots {
    fn hear(&mut self, config: &Config, instrument: usize, venue: VenueId, feed: &VenueFeed) {
        if feed.state == VenueState::Synced {
            let mut book = feed.book;
            // The recording stamps Unix time; the live service stamped its monotonic clock.
            book.received_ns -= clock::unix_of_monotonic(0);
            self.latest_book.insert((instrument, venue), book);
            let key = (instrument, venue, book.received_ns, book.venue_sequence);
            self.books.insert(key, book);
        }
        let book = self.latest_book.get(&(instrument, venue)).copied();
        let standing = (venue, feed.state, book);
        let view = slot_view(&merged(config, instrument, &[standing]), venue);
        self.slots
            .entry((instrument, venue))
            .or_default()
            .push((view, standing));
    }
}

/// The summary of `instrument` whose venues stand as `venues` say: (venue, state
/// published, latest book).
fn merged(config: &Config, instrument: usize, venues: &[VenueStanding]) -> Summary {
    let mut merger = Consolidation::configured(config, instrument);
    for &(venue, state, book) in venues {
        let source = config.instruments[instrument].source_of(venue);
        let venue = source.expect("one book a venue");
        if let Some(book) = book {
            let synced = VenueFeed {
                state: VenueState::Synced,
                book,
                ..VenueFeed::default()
            };
            merger.apply(venue, &synced);
        }
        let feed = VenueFeed {
            state,
            book: book.unwrap_or_default(),
            ..VenueFeed::default()
        };
        merger.apply(venue, &feed);
    }
    let mut summary = Summary::default();
    merger.summarize(0, &mut summary);
    summary
}

/// A summary as compared: no sequence number, no times of its own, and no bands (they
/// count the diff venues' whole books, which the reconstruction does not hold;
/// `tests/service/quotes.rs` checks them against the simulator's books).
fn comparable(summary: &Summary) -> Summary {
    Summary {
        sequence: 0,
        published_ns: 0,
        polled_monotonic_ns: 0,
        published_monotonic_ns: 0,
        received_ns: 0,
        bands: Default::default(),
        ..*summary
    }
}

/// The last summary of each instrument, as compared.
fn last_of_each(config: &Config, summaries: &[Summary]) -> Vec<Option<Summary>> {
    (0..config.instruments.len())
        .map(|instrument| {
            let last = summaries
                .iter()
                .rev()
                .find(|s| s.instrument == instrument)?;
            let mut last = comparable(last);
            last.source_received_ns = [0; MAX_SOURCES];
            Some(last)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_replays_to_the_summaries_the_service_published() {
    let dir = std::env::temp_dir().join(format!("mergebook-recording-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (config, live) = record_a_run(&dir).await;

    let recordings = timeline::load_recording(&dir).unwrap();
    let mut recorded: Vec<String> = recordings
        .iter()
        .map(|r| format!("{}-{}", r.venue, r.connection))
        .collect();
    recorded.sort();
    assert_eq!(
        recorded,
        ["binance-0", "binance_sbe-0", "bitstamp-0", "kraken-0"]
    );
    assert!(recordings.iter().all(|r| r.truncated_files == 0));
    let kraken = recordings.iter().find(|r| r.venue == KRAKEN).unwrap();
    let connects = kraken
        .events
        .iter()
        .filter(|e| e.event == timeline::TimelineEvent::Connected)
        .count();
    assert!(
        connects >= 2,
        "the reconnect is in the recording: {connects} connections"
    );

    let mut heard = ReplayedSlots {
        slots: HashMap::new(),
        latest_book: HashMap::new(),
        books: HashMap::new(),
    };
    let mut replayed: Vec<Summary> = Vec::new();
    let mut decode_errors = 0;
    let stats = replay::replay_recording(
        &config,
        &recordings,
        |_| true,
        |summary| replayed.push(*summary),
        |instrument, venue, feed| heard.hear(&config, instrument, venue, feed),
        |_, _| decode_errors += 1,
    )
    .unwrap();
    assert_eq!(decode_errors, 1, "Bitstamp's bad frame");
    assert!(stats.books > 100, "{stats:?}");

    // Every summary the service published is the merge of its venues' feeds after the
    // frames it names: each venue's slot is one the replay's core published, and merged
    // together they give the same book. (Readers are threads: a summary can hold one
    // venue's frame and not another's received a moment before, so it is matched venue
    // by venue, not to one point of the replay's single timeline. And a mailbox holds the
    // latest value: a state change can replace a book the merger never took, so a slot in
    // `Connecting` or `OutOfSync` may show an earlier book of the venue's.)
    for (index, summary) in live.iter().enumerate() {
        let instrument = summary.instrument;
        let venues: Vec<VenueStanding> = summary
            .sources()
            .map(|(_, venue, _)| {
                let view = slot_view(summary, venue);
                let slots = &heard.slots[&(instrument, venue)];
                let exact = slots.iter().find(|(seen, _)| *seen == view);
                let state_change = || {
                    let (published, received, sequence, _) = view;
                    let changes_state = [VenueState::Connecting, VenueState::OutOfSync]
                        .contains(&published)
                        && slots.iter().any(|(_, (_, state, _))| *state == published);
                    let book = heard.books.get(&(instrument, venue, received, sequence));
                    (changes_state && book.is_some() == (received != 0))
                        .then(|| (venue, published, book.copied()))
                };
                exact
                    .map(|(_, standing)| *standing)
                    .or_else(state_change)
                    .unwrap_or_else(|| {
                        panic!("summary {index}: {venue}'s slot {view:?} is nowhere in the replay")
                    })
            })
            .collect();
        assert_eq!(
            comparable(&merged(&config, instrument, &venues)),
            comparable(summary),
            "summary {index}"
        );
    }
    assert!(live.len() > 100, "{} summaries", live.len());
    // The faults are in the run: the replay's cores, which take every recorded event,
    // published the states they cause. (The live summaries sample states through
    // latest-value mailboxes, so a state as short as a resync can pass unseen there.)
    let replay_published = |venue: VenueId, state: VenueState| {
        heard.slots.iter().any(|(&(_, heard_venue), slots)| {
            heard_venue == venue
                && slots
                    .iter()
                    .any(|(_, (_, published, _))| *published == state)
        })
    };
    assert!(
        replay_published(BITSTAMP, VenueState::OutOfSync),
        "the bad frame"
    );
    assert!(
        replay_published(KRAKEN, VenueState::Connecting),
        "the reconnect"
    );
    assert!(replay_published(BINANCE, VenueState::OutOfSync), "the gap");

    // The service stops its readers before its merger, which publishes what they handed
    // over in its last round: the last summaries hold every book received, as the
    // replay's do.
    assert_eq!(
        last_of_each(&config, &replayed),
        last_of_each(&config, &live)
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The recording served by the simulator to a new service: the incident happens again
/// (the bad frame, the gap, the reconnect) and the books end as they did.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_served_by_the_simulator_reproduces_the_run() {
    let base = std::env::temp_dir().join(format!("mergebook-reproduce-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    let (original, live) = record_a_run(&base.join("first")).await;
    let recordings = timeline::load_recording(&base.join("first")).unwrap();

    let simulator =
        Simulator::start(TcpListener::bind("127.0.0.1:0").await.unwrap(), 40, 99).unwrap();
    simulator.serve_recording(&recordings, 1.0);
    let mut config = config(&base.join("again"));
    simulator.point(&mut config);
    let summaries = common::EverySummary::default();
    let listeners = Listeners::loopback().await.unwrap();
    let service = Service::start_observed(config.clone(), listeners, summaries.clone()).unwrap();
    let expected = last_of_each(&original, &live);
    common::eventually("the books end as they did", WAIT, || {
        last_of_each(&config, &summaries.0.lock().unwrap()) == expected
    })
    .await;
    assert_eq!(
        metric(&service, "orderbook_decode_errors_total", BITSTAMP),
        1.0
    );
    assert!(common::service_metric(&service, "orderbook_gaps_total{exchange=\"binance\"}") >= 1.0);
    assert!(
        simulator.connections(KRAKEN) >= 2,
        "Kraken's connection ended and was made again"
    );
    service.stop().await;
    std::fs::remove_dir_all(&base).unwrap();
}

/// The timeline files of a recording directory, oldest first.
fn timeline_files(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flat_map(|connection| std::fs::read_dir(connection.unwrap().path()).unwrap())
        .map(|file| file.unwrap().path())
        .collect();
    files.sort();
    files
}

/// `mergebook record` on the demo configuration, stopped as systemd stops it; then
/// `mergebook replay recording` (whole, and `--until` a moment of it), and one of its
/// files replayed on its own as a fixture would be.
#[test]
fn the_record_command_records_what_replay_recording_and_replay_snapshot_read() {
    let dir = std::env::temp_dir().join(format!("mergebook-record-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let metrics: std::net::SocketAddr = ([127, 0, 0, 1], common::free_port()).into();
    let recorder = std::process::Command::new(env!("CARGO_BIN_EXE_mergebook"))
        .args(["record", "--config", "config/sim.toml"])
        .args(["--metrics-listen", &metrics.to_string(), "--dir"])
        .arg(&dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let recorder = common::KillOnDrop(recorder);
    let recorded_venues = |dir: &std::path::Path| -> std::collections::BTreeSet<String> {
        let connection = |file: std::path::PathBuf| {
            file.parent()?
                .file_name()?
                .to_str()?
                .rsplit_once('-')
                .map(|(venue, _)| venue.to_owned())
        };
        timeline_files(dir)
            .into_iter()
            .filter_map(connection)
            .collect()
    };
    common::wait_until("a file of every venue", WAIT, || {
        (recorded_venues(&dir).len() == VenueId::ALL.len()).then_some(())
    });
    // Stopped once every venue has handed over 20 synced books (the recorder runs no
    // merger, so each one after the first is superseded): what the replay below must
    // find, however slowly a loaded machine got there.
    common::wait_until("20 books of every venue", WAIT, || {
        let (_, exposition) = common::http_get(metrics, "/metrics")?;
        VenueId::ALL
            .iter()
            .all(|venue| {
                let series = format!("orderbook_books_superseded_total{{exchange=\"{venue}\"}} ");
                exposition
                    .lines()
                    .find_map(|line| line.strip_prefix(&series)?.parse::<f64>().ok())
                    .is_some_and(|books| books >= 20.0)
            })
            .then_some(())
    });
    common::terminate(&recorder.0);
    let mut recorder = recorder;
    assert!(recorder.0.wait().unwrap().success());

    let dir_text = dir.display().to_string();
    let replay = [
        "replay",
        "recording",
        "--config",
        "config/sim.toml",
        &dir_text,
    ];
    let (stdout, stderr) = common::run_ok(&replay);
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert!(lines.len() > 50, "{stderr}");
    // Each instrument's last summary: every venue of the demo in one of them, synced.
    let mut last_states = std::collections::BTreeMap::new();
    for line in &lines {
        for (venue, state) in line["venues"].as_object().unwrap() {
            last_states.insert(
                (line["instrument"].to_string(), venue.clone()),
                state.clone(),
            );
        }
    }
    let synced: std::collections::BTreeSet<&String> = last_states
        .iter()
        .filter(|(_, state)| *state == "synced")
        .map(|((_, venue), _)| venue)
        .collect();
    assert_eq!(synced.len(), VenueId::ALL.len(), "{last_states:?}");
    assert!(
        last_states.values().all(|state| state == "synced"),
        "{last_states:?}"
    );

    // --until: the summaries up to a moment, and none after it.
    let middle = lines[lines.len() / 2]["ts_ns"].as_u64().unwrap();
    let until = format!("{}.{:09}", middle / 1_000_000_000, middle % 1_000_000_000);
    let (stdout, _) = common::run_ok(&[&replay[..], &["--until", &until]].concat());
    let until_lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    assert_eq!(until_lines[..], lines[..until_lines.len()]);
    assert_eq!(until_lines.last().unwrap()["ts_ns"].as_u64(), Some(middle));

    // A recorded file is a fixture: the per-venue replay reads it, compressed as it is.
    let bitstamp = timeline_files(&dir)
        .into_iter()
        .find(|file| file.parent().unwrap().ends_with("bitstamp-0"))
        .unwrap();
    let venue = format!("bitstamp={}", bitstamp.display());
    let (stdout, _) = common::run_ok(&["replay", "snapshot", "--venue", &venue]);
    assert!(stdout.lines().count() > 10);

    // --venue-books: every source of every instrument at each 100 ms, the last sample of
    // each synced (read back with pyarrow, where it is installed).
    if let Some(python) = common::python_with("pyarrow") {
        let books = dir.join("books.parquet").display().to_string();
        let sampling = ["--venue-books", &books, "--every-ms", "100"];
        common::run_ok(&[&replay[..], &sampling[..]].concat());
        let sources: usize = (mergebook::config::RawConfig::load("config/sim.toml".as_ref()))
            .and_then(|raw| raw.validate())
            .unwrap()
            .instruments
            .iter()
            .map(|instrument| instrument.symbols.len())
            .sum();
        let check = "import sys, pyarrow as pa, pyarrow.parquet as pq\n\
                     table = pq.read_table(sys.argv[1])\n\
                     for name in ('ts', 'received_ts', 'exchange_ts'):\n\
                     \x20   index = table.schema.get_field_index(name)\n\
                     \x20   table = table.set_column(index, name, table[name].cast(pa.int64()))\n\
                     rows = table.to_pylist()\n\
                     times = sorted({row['ts'] for row in rows})\n\
                     assert len(times) > 5 and len(rows) == int(sys.argv[2]) * len(times)\n\
                     last = [row for row in rows if row['ts'] == times[-1]]\n\
                     assert all(row['state'] == 'synced' and row['bid_price_1'] for row in last)";
        let output = std::process::Command::new(python)
            .args(["-c", check, &books, &sources.to_string()])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
