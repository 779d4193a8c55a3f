//! The wire-to-publish harness, on short real runs: its accounting (every frame the
//! simulator sent is published or superseded, counted by the readers' mailboxes apart
//! from the harness; none is lost; every record was taken) and its printed tables. Not
//! timing tests: the latencies are only checked to exist, one per published frame.

use mergebook::config::IdleStrategy;
use mergebook::venue::VenueId;
use mergebook_tools::cpu_latency::CpuLatencyRequest;
use mergebook_tools::loadtest::{self, LoadSpec};
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn a_short_run_accounts_for_every_frame_sent() {
    let limit_before = CpuLatencyRequest::effective_us().ok();
    let spec = LoadSpec {
        rate_per_venue: 500,
        venues: vec![VenueId::Binance, VenueId::Bitstamp],
        instruments: 1,
        hot_rate: None,
        depth: 20,
        warmup: Duration::from_secs(1),
        duration: Duration::from_secs(2),
        // The test machine has 2 cores: a spinning merger would take one from the tests.
        idle: IdleStrategy::Park,
        batch_us: 200,
        reader_threads: 0,
        read_batch_us: 0,
        merger_core: None,
        rss_every: Duration::from_millis(500),
        // Where the limit can be read (root, as in CI), the run asks for one that lets idle
        // CPUs halt as they did (1 ms; less if a process already holds less), and the
        // report must show it in force.
        cpu_wake_latency_us: limit_before.map(|before| before.clamp(0, 1000) as u32),
        // Pages of the web view and a client asking quotes alongside: every frame is
        // still accounted for, every quote answered (the run fails on a refusal).
        web_clients: 2,
        quotes_per_second: 50,
        write_every: Duration::from_millis(1),
    };
    let report = loadtest::run(&spec).unwrap();
    assert_eq!(
        report.cpu_wake_latency_limit_us,
        spec.cpu_wake_latency_us.map(|asked| asked as i32)
    );
    assert!(
        report.sent > 500,
        "at least a second's frames were sent: {report:?}"
    );
    assert!(report.published > 0);
    assert_eq!(report.unaccounted, 0, "{report:?}");
    // `lost` is sent − published − superseded, with superseded counted by the readers'
    // mailboxes apart from the harness: 0 means those two counts cover every frame sent.
    assert_eq!(report.lost, 0, "{report:?}");
    assert!(report.wire_ns.count > 0 && report.wire_ns.count <= report.published);
    assert_eq!(report.internal_ns.count, report.wire_ns.count);
    let split = report.internal_split;
    for part in [split.to_merger_ns, split.merge_ns, split.wake_ns] {
        assert_eq!(part.count, report.internal_ns.count, "{split:?}");
    }
    // The harness's consumer saw summaries (not necessarily every one: latest value).
    assert!(
        report.to_consumer_ns.count > 0 && report.to_consumer_ns.count <= report.published,
        "{report:?}"
    );
    assert!(report.e2e_histogram_count > 0);
    assert!(report.peak_rss_bytes > 0 && report.rss_samples.len() >= 2);
    assert!(report.quotes_per_second > 0.0, "{report:?}");
}

/// `mergebook-tools loadtest` prints its tables: the figures add up, one row a rate.
#[test]
fn loadtest_prints_the_wire_to_publish_table() {
    let output = Command::new(env!("CARGO_BIN_EXE_mergebook-tools"))
        .args([
            "loadtest",
            "--rate",
            "200",
            "--duration",
            "1",
            "--warmup",
            "1",
        ])
        .args(["--idle", "park"])
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(output.status.success());
    let table = String::from_utf8(output.stdout).unwrap();
    let (rows, notes): (Vec<&str>, Vec<&str>) = table
        .lines()
        .filter(|line| !line.is_empty())
        .partition(|line| line.starts_with('|'));
    let (limits, memory): (Vec<&str>, Vec<&str>) = notes.into_iter().partition(|line| {
        line.starts_with("CPU wake-latency limit (/dev/cpu_dma_latency) in each run: ")
    });
    assert_eq!(
        limits.len(),
        1,
        "one line of CPU wake-latency limits: {table}"
    );
    assert!(limits[0].contains("200 frames/s: "), "{table}");
    assert!(limits[0].contains("; cpuidle driver: "), "{table}");
    let rows: Vec<Vec<&str>> = rows
        .iter()
        .map(|line| line.split('|').map(str::trim).collect())
        .collect();
    // The figures, then the in-process time's parts and the time to a consumer: header,
    // rule, one rate each.
    assert_eq!(rows.len(), 6, "two tables of one rate: {table}");
    assert_eq!(memory.len(), 1, "one line of memory samples: {table}");
    assert!(
        memory[0].starts_with("resident MiB at 200 frames/s per venue: 0 s "),
        "{table}"
    );
    assert_eq!(rows[0][1], "rate/venue");
    assert_eq!(rows[2][1], "200");
    assert_eq!(rows[2][5], "0", "lost: {table}");
    let sent: u64 = rows[2][2].parse().unwrap();
    let published: u64 = rows[2][3].parse().unwrap();
    let superseded: u64 = rows[2][4].parse().unwrap();
    assert_eq!(sent, published + superseded, "the row adds up: {table}");
    assert_eq!(rows[3][2], "in-process P50 µs");
    assert_eq!(rows[5][1], "200");
    assert_eq!(rows[5][2], rows[2][10], "the same in-process P50: {table}");
    assert_eq!(rows[3][10], "to consumer P50 µs");
    assert!(rows[5][10].parse::<f64>().is_ok(), "{table}");
}

/// With several `--instruments`, one row a number of books, each book accounted apart (a
/// hot first instrument among quiet ones), every book synced before the window, the
/// service's CPU a frame given, and the plot drawn; with the whole market's settings, as
/// `scripts/loadtest books` runs them.
#[test]
fn loadtest_tables_and_plots_many_books() {
    let plot = std::env::temp_dir().join(format!("mergebook-books-{}.svg", std::process::id()));
    let output = Command::new(env!("CARGO_BIN_EXE_mergebook-tools"))
        .args([
            "loadtest",
            "--instruments",
            "1,3",
            "--rate",
            "20",
            "--hot-rate",
            "200",
        ])
        .args(["--duration", "1", "--warmup", "1", "--idle", "batch"])
        .args(["--reader-threads", "1", "--read-batch-us", "1000"])
        .args(["--write-every-ms", "10"])
        .arg("--plot")
        .arg(&plot)
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(output.status.success());
    let table = String::from_utf8(output.stdout).unwrap();
    let rows: Vec<Vec<&str>> = table
        .lines()
        .filter(|line| line.starts_with("| ") && !line.starts_with("| books"))
        .map(|line| line.split('|').map(str::trim).collect())
        .collect();
    let venues = mergebook_tools::spot_venues(true).count();
    assert_eq!(rows.len(), 2, "{table}");
    for (row, instruments) in rows.iter().zip([1, 3]) {
        assert_eq!(row[1], (instruments * venues).to_string(), "{table}");
        assert!(
            row[2].parse::<f64>().unwrap() > 0.0,
            "synced after: {table}"
        );
        assert_eq!(row[4], "0", "lost: {table}");
        assert!(
            row[5].parse::<f64>().unwrap() > 0.0,
            "service CPU a frame: {table}"
        );
    }
    let svg = std::fs::read_to_string(&plot).unwrap();
    std::fs::remove_file(&plot).unwrap();
    assert!(svg.starts_with("<svg") && svg.trim_end().ends_with("</svg>"));
    assert_eq!(
        svg.matches("<polyline").count(),
        6,
        "three latencies, three thread groups' CPU"
    );
}
