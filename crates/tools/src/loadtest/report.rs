//! What a load run reports: its rates, latencies and CPU, as JSON and as the tables and
//! plot the harness prints.

use super::*;

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
    pub(super) fn of(histogram: &Histogram<u64>) -> Percentiles {
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
    /// `Quote` requests answered a second in the window.
    #[serde(default)]
    pub quotes_per_second: f64,
}

pub(super) fn one() -> usize {
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
    let quotes: Vec<String> = reports
        .iter()
        .filter(|report| report.quotes_per_second > 0.0)
        .map(|report| {
            format!(
                "{} frames/s: {:.1} quotes/s answered",
                report.rate_per_venue, report.quotes_per_second
            )
        })
        .collect();
    if !quotes.is_empty() {
        out.push_str(&format!(
            "Quotes on the first instrument: {}\n",
            quotes.join("; ")
        ));
    }
    out
}

/// The reports of runs with different numbers of books as a markdown table
/// (BENCHMARKS.md's "Many books"): frames, latency (all books, and the first instrument's
/// alone: the hot book with `hot_rate`), CPU per thread group in percent of a core (the
/// load generator's too: it shares the cores), and memory.
pub fn books_table(reports: &[LoadReport]) -> String {
    let micros = |ns: u64| format!("{:.1}", ns as f64 / 1e3);
    let mut out = String::from(
        "| books | all synced after s | frames/s sent (asked) | lost | service CPU µs a frame | \
         wire P50 µs | P99 | P99.9 | first instrument's P50 µs | P99 | readers % of a core | \
         merger % | service runtime % | simulator and harness % | peak RSS MiB | steal % |\n\
         |---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for report in reports {
        let percent = |seconds| report.percent_of_a_core(seconds);
        out.push_str(&format!(
            "| {} | {:.2} | {:.0} ({:.0}) | {} | {:.1} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |\n",
            report.instruments * report.venues.len(),
            report.synced_after_seconds,
            report.achieved_frames_per_second,
            report.expected_frames_per_second,
            report.lost,
            report.service_cpu_seconds_per_million_frames,
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

/// Wire-to-publish latency (P50, P99, and the first instrument's P50) and the service's CPU
/// a frame (readers, merger, runtime) against the number of books, as an SVG of two
/// charts, books on a log scale.
pub fn books_plot(reports: &[LoadReport]) -> String {
    let books: Vec<f64> = reports
        .iter()
        .map(|r| (r.instruments * r.venues.len()) as f64)
        .collect();
    let micros = |ns: u64| (ns as f64 / 1e3).max(0.1);
    let per_frame = |r: &LoadReport, seconds: f64| {
        seconds * 1e6 / (r.achieved_frames_per_second * r.window_seconds).max(1.0)
    };
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
                .map(|r| per_frame(r, r.reader_cpu_seconds))
                .collect::<Vec<_>>(),
        ),
        (
            "merger",
            "#ff7f0e",
            reports
                .iter()
                .map(|r| per_frame(r, r.merger_cpu_seconds))
                .collect(),
        ),
        (
            "service runtime",
            "#8c564b",
            reports
                .iter()
                .map(|r| per_frame(r, r.service_runtime_cpu_seconds))
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
    chart(
        &mut svg,
        510.0,
        "service CPU a frame, µs (log)",
        &books,
        &cpu,
        true,
    );
    svg.push_str("</svg>\n");
    svg
}

/// One chart of `books_plot` at `left`: each series a line and its points, books on a log
/// x axis, values on a log or linear y axis.
pub(super) fn chart(
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
