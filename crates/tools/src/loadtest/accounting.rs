//! A run's accounting: every publish's latencies and frames, the consumers' counts, the
//! CPU time of the service's and the simulator's threads.

use super::*;

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

pub(super) fn latency_histogram() -> Histogram<u64> {
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
            // The tool's instruments take one book a venue.
            let Some(source) = record
                .source_venues
                .iter()
                .position(|of| *of == Some(venue))
            else {
                continue;
            };
            let sequence = record.source_sequence[source];
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
                        let received_ns = record.source_received_ns[source];
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
pub(super) struct CpuTimes {
    pub(super) readers_ns: u64,
    pub(super) merger_ns: u64,
    pub(super) service_runtime_ns: u64,
    pub(super) process_ns: u64,
}

impl CpuTimes {
    pub(super) fn service_ns(&self) -> u64 {
        self.readers_ns + self.merger_ns + self.service_runtime_ns
    }
}

pub(super) const SERVICE_THREADS: &str = "service-rt";
pub(super) const SIMULATOR_THREADS: &str = "simulator-rt";

pub(super) fn cpu_times() -> CpuTimes {
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
pub(super) fn machine_cpu_ticks() -> (u64, u64) {
    std::fs::read_to_string("/proc/stat")
        .ok()
        .and_then(|text| steal_and_total_ticks(text.lines().next()?))
        .unwrap_or((0, 0))
}

/// `cpu  user nice system idle iowait irq softirq steal guest guest_nice`: steal and the
/// sum of the first eight (guest time is already counted in user and nice).
pub(super) fn steal_and_total_ticks(cpu_line: &str) -> Option<(u64, u64)> {
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
