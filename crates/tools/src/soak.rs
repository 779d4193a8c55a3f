//! `mergebook-tools soak`: the simulator at a steady rate with a random fault every few seconds
//! (the chaos tests' catalogue), the service under it, and two consumers checking every
//! summary they see: one on the in-process channel (`InvariantChecker`: sorted sides,
//! nothing of an excluded or stale venue, no venue crossed, sequences increasing) and
//! one gRPC client (sequences increasing). It reports frames in and out, reconnections,
//! faults, violations and RSS over time, and fails on any violation, on a venue that
//! does not recover by itself once the faults stop, or on RSS that keeps growing.

use crate::loadtest::{memory, runtime};
use mergebook::config::{Config, RawConfig};
use mergebook::merger::summary::VenueState;
use mergebook::publish::proto::{
    SummaryRequest, orderbook_aggregator_client::OrderbookAggregatorClient,
};
use mergebook::rng::Rng;
use mergebook::service::{Listeners, Service};
use mergebook::sim::Simulator;
use mergebook::venue::VenueId;
use mergebook_testkit::invariants::InvariantChecker;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

pub struct SoakSpec {
    pub duration: Duration,
    /// Book frames per second per venue.
    pub rate_per_venue: u32,
    pub seed: u64,
    pub fault_every: Duration,
    pub rss_every: Duration,
}

/// What a fault does to `venue` (at `rate` frames/s); what undoes it, if it must be undone.
type Inject = fn(&Simulator, VenueId, u32) -> Option<Undo>;

/// The faults the soak picks from: each name (in the report) with its injection.
const FAULTS: [(&str, Inject); 17] = [
    ("disconnect", |simulator, venue, _| {
        simulator.disconnect(venue);
        None
    }),
    ("cut_mid_frame", |simulator, venue, _| {
        simulator.cut_mid_frame(venue);
        None
    }),
    ("stall_mid_frame", |simulator, venue, _| {
        simulator.stall_mid_frame(venue);
        None
    }),
    ("garbage", |simulator, venue, _| {
        simulator.send_raw(venue, "\u{1}garbage\u{7f}");
        None
    }),
    ("half_frame", |simulator, venue, _| {
        simulator.send_raw(
            venue,
            r#"{"stream":"ethbtc@depth10@100ms","data":{"lastUpdateId":1,"bids":[["0.1","#,
        );
        None
    }),
    ("binary_frame", |simulator, venue, _| {
        simulator.send_binary(venue, b"{}".to_vec());
        None
    }),
    ("invalid_utf8", |simulator, venue, _| {
        simulator.send_invalid_utf8(venue);
        None
    }),
    ("oversized_frame", |simulator, venue, _| {
        simulator.send_raw(venue, "x".repeat(MAX_FRAME_BYTES + 1));
        None
    }),
    ("ping_flood", |simulator, venue, _| {
        simulator.ping_flood(venue, 1_000);
        None
    }),
    // 100 × the rate for 10 ms, at once.
    ("burst_100x", |simulator, venue, rate| {
        simulator.burst(venue, rate);
        None
    }),
    ("clock_jump", |simulator, venue, _| {
        simulator.set_clock_offset(venue, 3_600_000_000);
        Some(Undo::ClockBack(venue))
    }),
    ("pause", |simulator, venue, _| {
        simulator.pause(venue, true);
        Some(Undo::Resume(venue))
    }),
    // The connection stops serving its subscriptions, pinging on: the read-idle watchdog
    // subscribes them again. A diff book's events meanwhile are lost (silence with loss):
    // it is rebuilt from a new snapshot.
    ("drop_subscriptions", |simulator, venue, _| {
        simulator.drop_subscriptions(venue);
        None
    }),
    // The connection serves no subscription any more, old or new, its pings and
    // heartbeats going on: subscribed again, then recycled a read-idle allowance later.
    ("heartbeats_only", |simulator, venue, _| {
        simulator.heartbeats_only(venue);
        None
    }),
    // The same book, same sequence, at the usual rate: repeats, not staleness.
    ("quiet_market", |simulator, venue, _| {
        simulator.quiet_market(venue, true);
        Some(Undo::Unquiet(venue))
    }),
    // Every new connection closed at once: a reconnect storm, paced by the backoff and
    // the venue's budget.
    ("closes_every_connection", |simulator, venue, _| {
        simulator.close_new_connections(venue, true);
        simulator.disconnect(venue);
        Some(Undo::KeepConnections(venue))
    }),
    // A book with bids and no asks, newer than any before it: shown one-sided, left out.
    ("one_sided_book", |simulator, venue, _| {
        // Only a top-N snapshot stream replaces the book with one frame.
        let venue = std::iter::once(venue)
            .chain(crate::spot_venues(true))
            .find(|venue| venue.facts().snapshot_streams)?;
        let mut book = mergebook::book::TopBook {
            venue_sequence: u64::MAX / 2,
            ..Default::default()
        };
        book.bids.push(mergebook::book::Level {
            price: mergebook::fixed::FixedPoint::from_raw(6_800_000),
            amount: mergebook::fixed::FixedPoint::from_raw(100_000_000),
        });
        let mut frame = Vec::new();
        let streams = venue.streams();
        let stream = streams.stream_name(&crate::spot_symbol(venue, "ETH"), DEPTH);
        venue.simulated().encode_book(&stream, &book, 8, &mut frame);
        match String::from_utf8(frame) {
            Ok(text) => simulator.send_raw(venue, text),
            // A venue whose books are binary (Binance SBE).
            Err(binary) => simulator.send_binary(venue, binary.into_bytes()),
        }
        None
    }),
];

/// `service.depth` under soak (the default).
const DEPTH: usize = 10;

/// The service's settings under soak: short timeouts, so faults resolve within seconds.
const STALE_AFTER_MS: u64 = 1_000;
const MAX_FRAME_BYTES: usize = 1 << 20;
/// How long the venues get to be synced again once the faults stop.
const RECOVERY_TIMEOUT: Duration = Duration::from_secs(15);
/// RSS may grow by this much per venue from the end of the first sixth of the run to its
/// end. A fixed allowance, not a fraction: faults move RSS in steps of a few MB that are
/// not leaks (an oversized-frame fault holds the simulator's 1 MiB frame, its encoding and
/// the reader's 1 MiB buffer at once, and the allocator keeps some of it; with four venues
/// the 30-minute run stepped 6.7 MB up at its seventh minute and stayed flat after). Per
/// venue, because each venue's reader and stream take such steps and add frames: 4 MiB a
/// venue still catches a leak of 8 bytes a frame in CI's 60 s (10k frames/s a venue for
/// 50 s) and of under a byte a frame in a 30-minute run.
pub const RSS_GROWTH_ALLOWANCE_PER_VENUE_BYTES: u64 = 4 << 20;

/// The allowance for every venue the soak runs.
pub fn rss_growth_allowance_bytes() -> u64 {
    RSS_GROWTH_ALLOWANCE_PER_VENUE_BYTES * crate::spot_venues(false).count() as u64
}

#[derive(Debug, Default, Serialize)]
pub struct SoakReport {
    pub duration_seconds: f64,
    pub rate_per_venue: u32,
    pub seed: u64,
    pub faults: BTreeMap<&'static str, u64>,
    /// Frames the readers received (`orderbook_messages_total`).
    pub frames_received: u64,
    /// Summaries the merger published (`orderbook_merges_total`).
    pub summaries_published: u64,
    pub summaries_checked: u64,
    pub grpc_summaries_received: u64,
    pub reconnections: u64,
    pub decode_errors: u64,
    pub connection_errors: BTreeMap<String, u64>,
    pub stale_evictions: u64,
    pub violations: u64,
    pub first_violations: Vec<String>,
    pub grpc_sequence_violations: u64,
    /// Every venue synced again within `RECOVERY_TIMEOUT` of the last fault.
    pub recovered: bool,
    /// The venues' states at the end of the recovery wait (`venue=state`).
    pub final_states: Vec<String>,
    pub rss_start_bytes: u64,
    /// RSS at the end of the first sixth of the run: the baseline of the growth check.
    pub rss_baseline_bytes: u64,
    pub rss_end_bytes: u64,
    pub peak_rss_bytes: u64,
    pub rss_samples: Vec<(f64, u64)>,
}

impl SoakReport {
    pub fn passed(&self) -> bool {
        self.failures().is_empty()
    }

    /// Why the soak failed; empty when it passed.
    pub fn failures(&self) -> Vec<&'static str> {
        [
            (self.violations > 0, "invariant violations"),
            (
                self.grpc_sequence_violations > 0,
                "gRPC sequence violations",
            ),
            (!self.recovered, "a venue did not recover"),
            (self.summaries_checked == 0, "no summary in process"),
            (self.grpc_summaries_received == 0, "no summary over gRPC"),
            (
                self.rss_end_bytes > self.rss_baseline_bytes + rss_growth_allowance_bytes(),
                "RSS grew by more than the allowance",
            ),
        ]
        .into_iter()
        .filter_map(|(failed, reason)| failed.then_some(reason))
        .collect()
    }

    pub fn text(&self) -> String {
        let mb = |bytes: u64| bytes as f64 / 1e6;
        let mut text = format!(
            "soak: {:.0} s at {} frames/s per venue (seed {})\n\
             frames received {}, summaries published {}, checked {}, via gRPC {}\n\
             reconnections {}, decode errors {}, stale evictions {}, connection errors {:?}\n\
             faults {:?}\n\
             violations {} (gRPC sequence {}), recovered {} {:?}\n\
             RSS start {:.1} MB, after the first sixth {:.1} MB, end {:.1} MB, peak {:.1} MB\n",
            self.duration_seconds,
            self.rate_per_venue,
            self.seed,
            self.frames_received,
            self.summaries_published,
            self.summaries_checked,
            self.grpc_summaries_received,
            self.reconnections,
            self.decode_errors,
            self.stale_evictions,
            self.connection_errors,
            self.faults,
            self.violations,
            self.grpc_sequence_violations,
            self.recovered,
            self.final_states,
            mb(self.rss_start_bytes),
            mb(self.rss_baseline_bytes),
            mb(self.rss_end_bytes),
            mb(self.peak_rss_bytes),
        );
        for violation in &self.first_violations {
            text.push_str(&format!("  violation: {violation}\n"));
        }
        let failures = self.failures();
        if failures.is_empty() {
            text.push_str("PASSED\n");
        } else {
            text.push_str(&format!("FAILED: {}\n", failures.join(", ")));
        }
        text
    }
}

fn config(simulator: &Simulator) -> Result<Config, String> {
    let symbols: Vec<String> = crate::spot_venues(false)
        .map(|venue| format!("{venue} = \"{}\"", crate::spot_symbol(venue, "ETH")))
        .collect();
    let symbols = symbols.join(", ");
    let text = format!(
        r#"
        [service]
        stale_after_ms = {STALE_AFTER_MS}
        output = "none"
        [feed]
        max_frame_bytes = {MAX_FRAME_BYTES}
        read_idle_timeout_ms = 1000
        connect_timeout_ms = 1000
        backoff_initial_ms = 20
        backoff_max_ms = 500
        # The venues are this process's simulator's (`Simulator::point`).
        [simulator]
        [[instruments]]
        name = "ETH/BTC"
        symbols = {{ {symbols} }}
        "#
    );
    let mut config = RawConfig::parse(&text, "soak")
        .and_then(|raw| raw.validate())
        .map_err(|error| error.to_string())?;
    simulator.point(&mut config);
    Ok(config)
}

enum Undo {
    ClockBack(VenueId),
    Resume(VenueId),
    Unquiet(VenueId),
    KeepConnections(VenueId),
}

impl Undo {
    fn apply(self, simulator: &Simulator) {
        match self {
            Undo::ClockBack(venue) => simulator.set_clock_offset(venue, 0),
            Undo::Resume(venue) => simulator.pause(venue, false),
            Undo::Unquiet(venue) => simulator.quiet_market(venue, false),
            Undo::KeepConnections(venue) => simulator.close_new_connections(venue, false),
        }
    }
}

/// How long a fault that must be undone lasts: past the stale age, so a pause evicts.
const FAULT_HOLD: Duration = Duration::from_millis(1_500);

pub fn run(spec: &SoakSpec) -> Result<SoakReport, String> {
    let simulator_runtime = runtime("soak-simulator", 1)?;
    let service_runtime = runtime("soak-service", 2)?;
    let rss_start = memory().0;
    let simulator = simulator_runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|error| format!("simulator: {error}"))?;
        Simulator::start(listener, spec.rate_per_venue, spec.seed).map_err(|e| e.to_string())
    })?;
    // Pings on every connection: a paused venue is a dead subscription on a live socket,
    // which only the read-idle watchdog, counting book data, finds.
    for venue in crate::spot_venues(false) {
        simulator.set_ping_interval(venue, Duration::from_millis(100));
    }
    let config = config(&simulator)?;
    let (service, grpc_addr) = service_runtime.block_on(async {
        let listeners = Listeners::loopback()
            .await
            .map_err(|error| error.to_string())?;
        let grpc_addr = listeners
            .grpc
            .local_addr()
            .map_err(|error| error.to_string())?;
        let service = Service::start(config, listeners).map_err(|error| error.to_string())?;
        Ok::<_, String>((service, grpc_addr))
    })?;

    // The in-process consumer: every summary through the invariants; the venues' states.
    let checker = Arc::new(Mutex::new(InvariantChecker::new(Duration::from_millis(
        STALE_AFTER_MS,
    ))));
    let mut summaries = service.summaries(0);
    let consumer_checker = Arc::clone(&checker);
    let consumer = service_runtime.spawn(async move {
        while summaries.changed().await.is_ok() {
            let summary = summaries.borrow_and_update().clone();
            if summary.sequence > 0 {
                consumer_checker
                    .lock()
                    .expect("not poisoned")
                    .check(&summary);
            }
        }
    });
    // The gRPC consumer: sequences must increase.
    let grpc_counts = Arc::new(Mutex::new((0u64, 0u64)));
    let grpc_consumer_counts = Arc::clone(&grpc_counts);
    let grpc_consumer = service_runtime.spawn(async move {
        let Ok(mut client) =
            OrderbookAggregatorClient::connect(format!("http://{grpc_addr}")).await
        else {
            return;
        };
        let request = SummaryRequest {
            instrument: String::new(),
            ..Default::default()
        };
        let Ok(response) = client.book_summary_exact(request).await else {
            return;
        };
        let mut stream = response.into_inner();
        let mut last = 0;
        while let Ok(Some(summary)) = stream.message().await {
            let mut counts = grpc_consumer_counts.lock().expect("not poisoned");
            counts.0 += 1;
            if summary.seq <= last {
                counts.1 += 1;
            }
            last = summary.seq;
        }
    });

    let mut rng = Rng::new(spec.seed);
    let mut faults: BTreeMap<&'static str, u64> =
        FAULTS.iter().map(|&(name, _)| (name, 0)).collect();
    let started = Instant::now();
    let mut rss_samples = vec![(0.0, rss_start)];
    let mut next_sample = spec.rss_every;
    let mut next_fault = spec.fault_every;
    let mut undo: Option<(Instant, Undo)> = None;
    let baseline_at = spec.duration / 6;
    let mut rss_baseline = None;
    while started.elapsed() < spec.duration {
        std::thread::sleep(Duration::from_millis(10));
        let elapsed = started.elapsed();
        if let Some((at, _)) = &undo
            && Instant::now() >= *at
        {
            undo.take().expect("checked").1.apply(&simulator);
        }
        if elapsed >= next_fault && undo.is_none() {
            next_fault += spec.fault_every;
            let (name, inject) = FAULTS[rng.below(FAULTS.len() as u64) as usize];
            let venues: Vec<VenueId> = crate::spot_venues(false).collect();
            let venue = venues[rng.below(venues.len() as u64) as usize];
            tracing::info!(fault = name, %venue, "soak: injecting");
            *faults.get_mut(name).expect("listed") += 1;
            undo = inject(&simulator, venue, spec.rate_per_venue)
                .map(|undo| (Instant::now() + FAULT_HOLD, undo));
        }
        if elapsed >= next_sample {
            rss_samples.push((elapsed.as_secs_f64(), memory().0));
            next_sample += spec.rss_every;
        }
        if rss_baseline.is_none() && elapsed >= baseline_at {
            rss_baseline = Some(memory().0);
        }
    }
    if let Some((_, undo)) = undo.take() {
        undo.apply(&simulator);
    }
    let duration_seconds = started.elapsed().as_secs_f64();
    let rss_end = memory().0;
    rss_samples.push((duration_seconds, rss_end));

    let mut latest = service.summaries(0);
    let recovered = service_runtime.block_on(async {
        let all_synced = |summary: &Arc<mergebook::merger::summary::Summary>| {
            crate::spot_venues(false).all(|venue| summary.venue_state(venue) == VenueState::Synced)
        };
        tokio::time::timeout(RECOVERY_TIMEOUT, latest.wait_for(all_synced))
            .await
            .is_ok_and(|found| found.is_ok())
    });
    let final_states = latest
        .borrow()
        .sources()
        .map(|(_, venue, state)| format!("{venue}={}", state.name()))
        .collect();
    let metrics = service.metrics();
    service_runtime.block_on(service.stop());
    consumer.abort();
    grpc_consumer.abort();

    let sum = |counter: &prometheus::IntCounterVec| -> u64 {
        VenueId::ALL
            .iter()
            .map(|venue| counter.with_label_values(&[venue.name()]).get())
            .sum()
    };
    let mut connection_errors = BTreeMap::new();
    for family in metrics.registry.gather() {
        if family.name() != "orderbook_connection_errors_total" {
            continue;
        }
        for sample in family.get_metric() {
            let reason = sample
                .get_label()
                .iter()
                .find(|label| label.name() == "reason")
                .map_or("", |label| label.value());
            *connection_errors.entry(reason.to_owned()).or_insert(0) +=
                sample.get_counter().value() as u64;
        }
    }
    let checker = checker.lock().expect("not poisoned");
    let (grpc_received, grpc_violations) = *grpc_counts.lock().expect("not poisoned");
    Ok(SoakReport {
        duration_seconds,
        rate_per_venue: spec.rate_per_venue,
        seed: spec.seed,
        faults,
        frames_received: sum(&metrics.messages),
        summaries_published: metrics.merges.get(),
        summaries_checked: checker.checked,
        grpc_summaries_received: grpc_received,
        reconnections: sum(&metrics.reconnections),
        decode_errors: sum(&metrics.decode_errors),
        connection_errors,
        stale_evictions: sum(&metrics.stale_evictions),
        violations: checker.violations.len() as u64,
        first_violations: checker
            .violations
            .iter()
            .take(10)
            .map(ToString::to_string)
            .collect(),
        grpc_sequence_violations: grpc_violations,
        recovered,
        final_states,
        rss_start_bytes: rss_start,
        rss_baseline_bytes: rss_baseline.unwrap_or(rss_start),
        rss_end_bytes: rss_end,
        peak_rss_bytes: memory().1,
        rss_samples,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn healthy() -> SoakReport {
        SoakReport {
            summaries_checked: 1,
            grpc_summaries_received: 1,
            recovered: true,
            rss_baseline_bytes: 10 << 20,
            rss_end_bytes: 10 << 20,
            ..SoakReport::default()
        }
    }

    #[test]
    fn rss_steps_within_the_allowance_pass_and_growth_past_it_fails() {
        let mut report = healthy();
        assert!(report.passed(), "{:?}", report.failures());
        report.rss_end_bytes = report.rss_baseline_bytes + rss_growth_allowance_bytes();
        assert!(report.passed());
        report.rss_end_bytes += 1;
        assert_eq!(report.failures(), ["RSS grew by more than the allowance"]);
        assert!(
            report
                .text()
                .ends_with("FAILED: RSS grew by more than the allowance\n")
        );
    }

    #[test]
    fn every_failure_is_named() {
        let report = SoakReport {
            violations: 1,
            grpc_sequence_violations: 1,
            recovered: false,
            ..SoakReport::default()
        };
        assert_eq!(report.failures().len(), 5, "{:?}", report.failures());
    }
}
