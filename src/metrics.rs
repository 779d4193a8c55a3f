//! Prometheus metrics: one registry, created at start-up. Hot-path threads (readers, the
//! merger) record into thread-local copies (`Local*`: plain adds, no atomics; see the
//! `metrics_record` bench) and flush them into the registry every `FLUSH_EVERY`, so a
//! scrape is at most that much behind.

use crate::book::diff_sync::ResyncReason;
use crate::feed::core::audit::AuditOutcome;
use crate::feed::core::snapshot_schedule::FetchOutcome;
use crate::venue::VenueId;
use prometheus::{
    Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGaugeVec, Opts, Registry,
};

/// 16 buckets, logarithmic from 100 ns to 100 ms (factor 10^(6/15) ≈ 2.512).
pub fn latency_buckets() -> Vec<f64> {
    prometheus::exponential_buckets(100e-9, 10f64.powf(6.0 / 15.0), 16).expect("valid buckets")
}

/// Every metric the service exports. Names are an interface (dashboards, alerts).
pub struct Metrics {
    pub registry: Registry,
    /// Frame decode time, per exchange.
    pub decode_seconds: HistogramVec,
    /// Frame received by the reader → summary published by the merger.
    pub e2e_seconds: Histogram,
    pub messages: IntCounterVec,
    /// Books a reader handed over that a newer one replaced before the merger took them.
    pub superseded: IntCounterVec,
    pub decode_errors: IntCounterVec,
    pub reconnections: IntCounterVec,
    pub connect_attempts: IntCounterVec,
    pub connect_budget_waits: IntCounterVec,
    pub stale_evictions: IntCounterVec,
    pub merges: IntCounter,
    /// 1 when the venue is synced for the instrument (in the merged book).
    pub venue_up: IntGaugeVec,
    /// 1 for the venue's current state, 0 for the others.
    pub venue_state: IntGaugeVec,
    /// Age of the venue's latest book, in seconds.
    pub book_age_seconds: prometheus::GaugeVec,
    // Diff mode.
    pub gaps: IntCounterVec,
    pub unverified_snapshots: IntCounterVec,
    pub resyncs: IntCounterVec,
    pub checksum_mismatches: IntCounterVec,
    pub resync_seconds: HistogramVec,
    pub snapshot_requests: IntCounterVec,
    pub audits: IntCounterVec,
    pub diff_events_dropped: IntCounterVec,
    /// Connections lost or never made, by reason (see `feed/mod.rs`).
    pub connection_errors: IntCounterVec,
    pub pings: IntCounterVec,
    /// Snapshot-mode books that repeated the last sequence (a quiet market).
    pub books_repeated: IntCounterVec,
    /// Snapshot-mode books dropped (out_of_order).
    pub books_dropped: IntCounterVec,
    /// Times a venue's sequence went back and the reader followed it.
    pub sequence_resets: IntCounterVec,
    /// Well-formed messages of no use to the books.
    pub messages_ignored: IntCounterVec,
    /// Subscriptions subscribed again because they delivered nothing for the allowance.
    pub silent_resubscriptions: IntCounterVec,
    /// Connections replaced before the venue's connection lifetime ran out, by outcome.
    pub connection_renewals: IntCounterVec,
    /// gRPC streams open now, and refused because `grpc.max_clients` were open.
    pub grpc_clients: prometheus::IntGauge,
    pub grpc_clients_rejected: IntCounter,
    pub grpc_summaries_skipped: IntCounter,
    /// `Quote` calls by outcome (answered, invalid, overloaded, unavailable), and the
    /// answered ones' time from the request to the answer (the wait for the merger's round
    /// and the walk).
    pub quotes: IntCounterVec,
    pub quote_seconds: Histogram,
    /// Connections closed as they were accepted, by port (`grpc`, `metrics`): the port's
    /// `max_connections` were open.
    pub connections_refused: IntCounterVec,
    pub connections_stalled: IntCounterVec,
    /// Reloads of the configuration (SIGHUP), by outcome (`applied`, `refused`).
    pub config_reloads: IntCounterVec,
    /// NATS (`publish/nats.rs`): summaries published, skipped for newer ones, dropped by
    /// reason, and the connection.
    pub nats_published: IntCounter,
    pub nats_skipped: IntCounter,
    pub nats_dropped: IntCounterVec,
    pub nats_connected: prometheus::IntGauge,
    pub nats_connects: IntCounter,
    /// Recording (`record/`): events dropped because the writer was behind, bytes of
    /// timeline written (before compression), write errors.
    pub record_dropped: IntCounterVec,
    pub record_written_bytes: IntCounter,
    pub record_errors: IntCounter,
    /// A venue's time of a book → the reader received it, per exchange.
    pub feed_delay_seconds: HistogramVec,
    /// A venue's time of a book → the summary holding it published, per exchange.
    pub exchange_to_publish_seconds: HistogramVec,
    /// Delays not measured, by exchange and reason (`negative`, `clock_step`).
    pub feed_delays_discarded: IntCounterVec,
    pub host_clock_steps: IntCounter,
    pub host_clock_last_step_seconds: prometheus::Gauge,
    pub host_clock_steady: prometheus::IntGauge,
}

/// Buckets of a venue's delay: 0.5 ms to about 33 s (factor 2).
pub fn delay_buckets() -> Vec<f64> {
    prometheus::exponential_buckets(0.0005, 2.0, 17).expect("valid buckets")
}

/// Buckets of a resync's duration: 1 ms to about a minute (factor 2.5).
pub fn resync_buckets() -> Vec<f64> {
    prometheus::exponential_buckets(0.001, 2.5, 13).expect("valid buckets")
}

impl Metrics {
    pub fn new() -> Metrics {
        let registry = Registry::new();
        let histogram =
            |name: &str, help: &str| HistogramOpts::new(name, help).buckets(latency_buckets());
        let decode_seconds = HistogramVec::new(
            histogram(
                "orderbook_decode_duration_seconds",
                "Time to decode one frame.",
            ),
            &["exchange"],
        )
        .expect("valid metric");
        let e2e_seconds = Histogram::with_opts(histogram(
            "orderbook_e2e_duration_seconds",
            "Frame received by a reader to summary published by the merger.",
        ))
        .expect("valid metric");
        let counter = |name: &str, help: &str| {
            IntCounterVec::new(Opts::new(name, help), &["exchange"]).expect("valid")
        };
        let messages = counter("orderbook_messages_total", "Frames received.");
        let superseded = counter(
            "orderbook_books_superseded_total",
            "Books replaced in the merger's mailbox by a newer one before the merger took them (latest value wins).",
        );
        let decode_errors = counter(
            "orderbook_decode_errors_total",
            "Frames that failed to decode.",
        );
        let reconnections = counter(
            "orderbook_reconnections_total",
            "Reconnections to the venue.",
        );
        let connect_attempts = counter(
            "orderbook_connect_attempts_total",
            "Connection attempts to the venue (each counts against its budget).",
        );
        let connect_budget_waits = counter(
            "orderbook_connect_budget_waits_total",
            "Connection attempts held back by the venue's budget of attempts per interval.",
        );
        let stale_evictions = counter(
            "orderbook_stale_evictions_total",
            "Venue books evicted as stale.",
        );
        let merges = IntCounter::new("orderbook_merges_total", "Summaries merged and published.")
            .expect("valid");
        let venue_up = IntGaugeVec::new(
            Opts::new(
                "orderbook_venue_up",
                "1 when the venue is in the merged book.",
            ),
            &["exchange", "instrument"],
        )
        .expect("valid");
        let venue_state = IntGaugeVec::new(
            Opts::new("orderbook_venue_state", "1 for the venue's current state."),
            &["exchange", "instrument", "state"],
        )
        .expect("valid");
        let book_age_seconds = prometheus::GaugeVec::new(
            Opts::new(
                "orderbook_book_age_seconds",
                "Age of the venue's latest book.",
            ),
            &["exchange", "instrument"],
        )
        .expect("valid");
        let labelled = |name: &str, help: &str, labels: &[&str]| {
            IntCounterVec::new(Opts::new(name, help), labels).expect("valid")
        };
        let gaps = counter(
            "orderbook_gaps_total",
            "Diff mode: events found missing (the instrument's book is rebuilt).",
        );
        let unverified_snapshots = counter(
            "orderbook_unverified_snapshots_total",
            "Diff mode: snapshots taken without the checksum the venue's books carry (a thin \
             book's may lack it); its next update's checksum verifies the book.",
        );
        let resyncs = labelled(
            "orderbook_resyncs_total",
            "Diff mode: book rebuilds, by reason (connect, gap, crossed, decode_error, checksum, \
             silence, audit, unproven_depth).",
            &["exchange", "reason"],
        );
        let checksum_mismatches = labelled(
            "orderbook_checksum_mismatches_total",
            "Diff mode: books that disagreed with the venue's checksum (each is resynchronised).",
            &["exchange", "instrument"],
        );
        let resync_seconds = HistogramVec::new(
            HistogramOpts::new(
                "orderbook_resync_duration_seconds",
                "Diff mode: from a book leaving sync to its rebuilt book being published.",
            )
            .buckets(resync_buckets()),
            &["exchange"],
        )
        .expect("valid metric");
        let snapshot_requests = labelled(
            "orderbook_snapshot_requests_total",
            "Diff mode: snapshot requests (REST fetches, or subscriptions again where snapshots come on the stream), by outcome (used, too_old, rate_limited, failed).",
            &["exchange", "outcome"],
        );
        let audits = labelled(
            "orderbook_audits_total",
            "Diff mode, venues whose streams cannot show a lost event: audits of a book against the venue's REST snapshot, by outcome (match; mismatch: the book is rebuilt; inconclusive; failed).",
            &["exchange", "outcome"],
        );
        let diff_events_dropped = labelled(
            "orderbook_diff_events_dropped_total",
            "Diff mode: events dropped, by reason (stale: already in the book; overflow: buffer full).",
            &["exchange", "reason"],
        );
        let connection_errors = labelled(
            "orderbook_connection_errors_total",
            "Connections lost or never made, by reason (connect, connect_timeout, tls, handshake_rejected, subscription_refused, auth_refused, token, no_welcome, ack_timeout, idle_timeout, closed, oversized_frame, invalid_utf8, protocol, io).",
            &["exchange", "reason"],
        );
        let connection_renewals = labelled(
            "orderbook_connection_renewals_total",
            "Connections renewed before the venue's connection lifetime ran out (a new \
             connection synced every book before the old one closed), by outcome: renewed, or \
             failed (the new connection did not sync; the old one went on).",
            &["exchange", "outcome"],
        );
        let pings = counter(
            "orderbook_pings_total",
            "WebSocket pings received (answered).",
        );
        let books_repeated = counter(
            "orderbook_books_repeated_total",
            "Snapshot mode: books with the same sequence as the last (a quiet market): nothing in \
             them is new; they only show the venue is live, so its book is not evicted as stale.",
        );
        let books_dropped = labelled(
            "orderbook_books_dropped_total",
            "Books dropped, by reason (out_of_order: a snapshot-mode book with a lower sequence than the last; before_ack: a book of a stream whose subscription was not acknowledged yet).",
            &["exchange", "reason"],
        );
        let sequence_resets = counter(
            "orderbook_sequence_resets_total",
            "Snapshot mode: the venue's sequence went back and stayed back (clock jump, restart); the reader followed it.",
        );
        let messages_ignored = counter(
            "orderbook_messages_ignored_total",
            "Well-formed messages of no use to the books: other message types, and binary \
             (SBE) messages of templates other than the book ones (trades, best bid and ask, \
             templates the schema adds).",
        );
        let silent_resubscriptions = counter(
            "orderbook_silent_resubscriptions_total",
            "Subscriptions that delivered no book data for the venue's read-idle allowance (a \
             dead subscription, or a market quieter than the allowance), subscribed again. One \
             still silent an allowance later recycles the connection (connection_errors, \
             reason idle_timeout).",
        );
        let record_dropped = counter(
            "orderbook_record_dropped_total",
            "Recording: events of the venue's connections dropped because the writer was behind \
             the connection's queue (record.queue_per_connection): a slow or full disk.",
        );
        let record_written_bytes = IntCounter::new(
            "orderbook_record_written_bytes_total",
            "Recording: bytes of timeline written, before compression.",
        )
        .expect("valid");
        let record_errors = IntCounter::new(
            "orderbook_record_errors_total",
            "Recording: files that could not be created, written, completed or removed.",
        )
        .expect("valid");
        let grpc_clients =
            prometheus::IntGauge::new("orderbook_grpc_clients", "gRPC summary streams open.")
                .expect("valid");
        let grpc_clients_rejected = IntCounter::new(
            "orderbook_grpc_clients_rejected_total",
            "gRPC streams refused because grpc.max_clients were open.",
        )
        .expect("valid");
        let grpc_summaries_skipped = IntCounter::new(
            "orderbook_grpc_summaries_skipped_total",
            "Summaries a gRPC stream skipped for a newer one: its client (or the fan-out before \
             it) was slower than the merger.",
        )
        .expect("valid");
        let quotes = IntCounterVec::new(
            Opts::new(
                "orderbook_quotes_total",
                "Quote calls by outcome: answered, invalid (a request that asks nothing clear \
                 or names no instrument), overloaded (grpc.max_queued_quotes waiting), \
                 unavailable (no summary of the instrument yet, or the merger stopped).",
            ),
            &["outcome"],
        )
        .expect("valid");
        let quote_seconds = Histogram::with_opts(histogram(
            "orderbook_quote_duration_seconds",
            "An answered Quote's time from its request to its answer: the wait for the \
             merger's round and the walk of the books.",
        ))
        .expect("valid");
        let connections_refused = IntCounterVec::new(
            prometheus::Opts::new(
                "orderbook_connections_refused_total",
                "Connections to the service's ports closed as they were accepted because the \
                 port's max_connections were open, by port (grpc, metrics).",
            ),
            &["port"],
        )
        .expect("valid");
        let config_reloads = IntCounterVec::new(
            prometheus::Opts::new(
                "orderbook_config_reloads_total",
                "Reloads of the configuration (SIGHUP), by outcome: applied (its instruments \
                 listed and delisted), refused (unreadable, invalid, or changing what only a \
                 restart applies; the service runs as before).",
            ),
            &["outcome"],
        )
        .expect("valid");
        // Both outcomes exported from the start, at 0: an alert on the first refusal
        // compares it with a value before it.
        for outcome in ["applied", "refused"] {
            config_reloads.with_label_values(&[outcome]);
        }
        let connections_stalled = IntCounterVec::new(
            prometheus::Opts::new(
                "orderbook_connections_stalled_total",
                "Connections closed because their client read nothing of what it was sent \
                 for the port's request timeout, by port (metrics: a stalled page of the \
                 web view).",
            ),
            &["port"],
        )
        .expect("valid");
        let nats_published = IntCounter::new(
            "orderbook_nats_published_total",
            "Summaries published on NATS (accepted by the client; NATS itself is at most once).",
        )
        .expect("valid");
        let nats_skipped = IntCounter::new(
            "orderbook_nats_skipped_total",
            "Summaries the NATS publisher skipped for a newer one of the same instrument: it \
             (or the fan-out before it, or a full client buffer) was slower than the merger.",
        )
        .expect("valid");
        let nats_dropped = IntCounterVec::new(
            Opts::new(
                "orderbook_nats_dropped_total",
                "Summaries not published on NATS, by reason (disconnected: no connection to the \
                 server; error: the client refused it).",
            ),
            &["reason"],
        )
        .expect("valid");
        // Both reasons exported from the start (at 0): an alert's increase() needs the
        // series before the first drop.
        for reason in ["disconnected", "error"] {
            nats_dropped.with_label_values(&[reason]);
        }
        let nats_connected = prometheus::IntGauge::new(
            "orderbook_nats_connected",
            "1 while the NATS client is connected to a server.",
        )
        .expect("valid");
        let nats_connects = IntCounter::new(
            "orderbook_nats_connects_total",
            "Connections the NATS client made to a server (the first, then each reconnection).",
        )
        .expect("valid");
        let delay_histogram = |name: &str, help: &str| {
            let opts = HistogramOpts::new(name, help).buckets(delay_buckets());
            HistogramVec::new(opts, &["exchange"]).expect("valid metric")
        };
        let feed_delay_seconds = delay_histogram(
            "orderbook_feed_delay_seconds",
            "The venue's time of a book to its receipt (as good as the host's clock).",
        );
        let exchange_to_publish_seconds = delay_histogram(
            "orderbook_exchange_to_publish_seconds",
            "The venue's time of a book to the publish of the summary holding it.",
        );
        let feed_delays_discarded = labelled(
            "orderbook_feed_delays_discarded_total",
            "Venue delays not measured: negative (the host's clock or the venue's is off), \
             clock_step (within 10 s of a step of the host's clock).",
            &["exchange", "reason"],
        );
        let host_clock_steps = IntCounter::new(
            "orderbook_host_clock_steps_total",
            "Steps of the host's Unix clock against its monotonic clock (more than 1 ms).",
        )
        .expect("valid");
        let host_clock_last_step_seconds = prometheus::Gauge::new(
            "orderbook_host_clock_last_step_seconds",
            "The last step of the host's Unix clock, signed (0 before the first).",
        )
        .expect("valid");
        let host_clock_steady = prometheus::IntGauge::new(
            "orderbook_host_clock_steady",
            "1 while the host's clock has not stepped in the last 10 s (venue delays are \
             measured).",
        )
        .expect("valid");
        host_clock_steady.set(1);
        for collector in [
            Box::new(decode_seconds.clone()) as Box<dyn prometheus::core::Collector>,
            Box::new(feed_delay_seconds.clone()),
            Box::new(exchange_to_publish_seconds.clone()),
            Box::new(feed_delays_discarded.clone()),
            Box::new(host_clock_steps.clone()),
            Box::new(host_clock_last_step_seconds.clone()),
            Box::new(host_clock_steady.clone()),
            Box::new(nats_published.clone()),
            Box::new(nats_skipped.clone()),
            Box::new(nats_dropped.clone()),
            Box::new(nats_connected.clone()),
            Box::new(nats_connects.clone()),
            Box::new(connections_refused.clone()),
            Box::new(config_reloads.clone()),
            Box::new(connections_stalled.clone()),
            Box::new(grpc_clients.clone()),
            Box::new(grpc_clients_rejected.clone()),
            Box::new(grpc_summaries_skipped.clone()),
            Box::new(quotes.clone()),
            Box::new(quote_seconds.clone()),
            Box::new(connection_errors.clone()),
            Box::new(pings.clone()),
            Box::new(books_repeated.clone()),
            Box::new(books_dropped.clone()),
            Box::new(sequence_resets.clone()),
            Box::new(messages_ignored.clone()),
            Box::new(silent_resubscriptions.clone()),
            Box::new(connection_renewals.clone()),
            Box::new(record_dropped.clone()),
            Box::new(record_written_bytes.clone()),
            Box::new(record_errors.clone()),
            Box::new(e2e_seconds.clone()),
            Box::new(messages.clone()),
            Box::new(superseded.clone()),
            Box::new(decode_errors.clone()),
            Box::new(reconnections.clone()),
            Box::new(connect_attempts.clone()),
            Box::new(connect_budget_waits.clone()),
            Box::new(stale_evictions.clone()),
            Box::new(merges.clone()),
            Box::new(venue_up.clone()),
            Box::new(venue_state.clone()),
            Box::new(book_age_seconds.clone()),
            Box::new(gaps.clone()),
            Box::new(unverified_snapshots.clone()),
            Box::new(resyncs.clone()),
            Box::new(checksum_mismatches.clone()),
            Box::new(resync_seconds.clone()),
            Box::new(snapshot_requests.clone()),
            Box::new(audits.clone()),
            Box::new(diff_events_dropped.clone()),
        ] {
            registry
                .register(collector)
                .expect("metric names are unique");
        }
        Metrics {
            registry,
            decode_seconds,
            e2e_seconds,
            messages,
            superseded,
            decode_errors,
            reconnections,
            connect_attempts,
            connect_budget_waits,
            stale_evictions,
            merges,
            venue_up,
            venue_state,
            book_age_seconds,
            gaps,
            unverified_snapshots,
            resyncs,
            checksum_mismatches,
            resync_seconds,
            snapshot_requests,
            audits,
            diff_events_dropped,
            connection_errors,
            pings,
            books_repeated,
            books_dropped,
            sequence_resets,
            messages_ignored,
            silent_resubscriptions,
            connection_renewals,
            grpc_clients,
            grpc_clients_rejected,
            grpc_summaries_skipped,
            quotes,
            quote_seconds,
            connections_refused,
            config_reloads,
            connections_stalled,
            nats_published,
            nats_skipped,
            nats_dropped,
            nats_connected,
            nats_connects,
            record_dropped,
            record_written_bytes,
            record_errors,
            feed_delay_seconds,
            exchange_to_publish_seconds,
            feed_delays_discarded,
            host_clock_steps,
            host_clock_last_step_seconds,
            host_clock_steady,
        }
    }

    /// Records a step of the host's clock (`HostClock::sample`'s), and whether it is steady.
    pub fn host_clock_sampled(&self, step_ns: Option<i64>, steady: bool) {
        if let Some(step) = step_ns {
            self.host_clock_steps.inc();
            self.host_clock_last_step_seconds.set(step as f64 * 1e-9);
        }
        self.host_clock_steady.set(i64::from(steady));
    }

    /// The handles one venue's reader records into.
    pub fn for_venue(&self, venue: VenueId) -> VenueMetrics {
        let labels = [venue.name()];
        VenueMetrics {
            decode_seconds: self.decode_seconds.with_label_values(&labels).local(),
            feed_delay_seconds: self.feed_delay_seconds.with_label_values(&labels).local(),
            delays_negative: self
                .feed_delays_discarded
                .with_label_values(&[venue.name(), "negative"]),
            delays_across_a_clock_step: self
                .feed_delays_discarded
                .with_label_values(&[venue.name(), "clock_step"]),
            messages: self.messages.with_label_values(&labels).local(),
            superseded: self.superseded.with_label_values(&labels),
            decode_errors: self.decode_errors.with_label_values(&labels),
            reconnections: self.reconnections.with_label_values(&labels),
            connect_attempts: self.connect_attempts.with_label_values(&labels),
            connect_budget_waits: self.connect_budget_waits.with_label_values(&labels),
            gaps: self.gaps.with_label_values(&labels),
            unverified_snapshots: self.unverified_snapshots.with_label_values(&labels),
            resyncs: ResyncReason::ALL.map(|reason| {
                self.resyncs
                    .with_label_values(&[venue.name(), reason.name()])
            }),
            resync_seconds: self.resync_seconds.with_label_values(&labels),
            snapshot_requests: SNAPSHOT_OUTCOMES.map(|name| {
                self.snapshot_requests
                    .with_label_values(&[venue.name(), name])
            }),
            audits: AuditOutcome::ALL.map(|outcome| {
                self.audits
                    .with_label_values(&[venue.name(), outcome.name()])
            }),
            events_dropped_stale: self
                .diff_events_dropped
                .with_label_values(&[venue.name(), "stale"]),
            events_dropped_overflow: self
                .diff_events_dropped
                .with_label_values(&[venue.name(), "overflow"]),
            connection_errors: self.connection_errors.clone(),
            checksum_mismatches: self.checksum_mismatches.clone(),
            venue,
            pings: self.pings.with_label_values(&labels).local(),
            books_repeated: self.books_repeated.with_label_values(&labels).local(),
            books_dropped_out_of_order: self
                .books_dropped
                .with_label_values(&[venue.name(), "out_of_order"]),
            books_dropped_before_ack: self
                .books_dropped
                .with_label_values(&[venue.name(), "before_ack"]),
            messages_ignored: self.messages_ignored.with_label_values(&labels),
            sequence_resets: self.sequence_resets.with_label_values(&labels),
            silent_resubscriptions: self.silent_resubscriptions.with_label_values(&labels),
            renewals: ["renewed", "failed"].map(|outcome| {
                self.connection_renewals
                    .with_label_values(&[venue.name(), outcome])
            }),
        }
    }

    /// The text exposition format.
    pub fn render(&self) -> String {
        prometheus::TextEncoder::new()
            .encode_to_string(&self.registry.gather())
            .expect("encodable metrics")
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}

/// How often thread-local metrics are flushed into the registry.
pub const FLUSH_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// One venue's metric handles. The per-frame ones are thread-local: call `flush` (a clone's
/// start empty).
#[derive(Clone)]
pub struct VenueMetrics {
    pub decode_seconds: prometheus::local::LocalHistogram,
    pub feed_delay_seconds: prometheus::local::LocalHistogram,
    pub delays_negative: IntCounter,
    pub delays_across_a_clock_step: IntCounter,
    pub messages: prometheus::local::LocalIntCounter,
    /// Advanced at each flush by the reader from its mailboxes' counts.
    pub superseded: IntCounter,
    pub decode_errors: IntCounter,
    pub reconnections: IntCounter,
    pub connect_attempts: IntCounter,
    pub connect_budget_waits: IntCounter,
    pub gaps: IntCounter,
    pub unverified_snapshots: IntCounter,
    resyncs: [IntCounter; ResyncReason::ALL.len()],
    pub resync_seconds: Histogram,
    snapshot_requests: [IntCounter; SNAPSHOT_OUTCOMES.len()],
    audits: [IntCounter; AuditOutcome::ALL.len()],
    pub events_dropped_stale: IntCounter,
    pub events_dropped_overflow: IntCounter,
    connection_errors: IntCounterVec,
    checksum_mismatches: IntCounterVec,
    venue: VenueId,
    /// Thread-local: a ping flood is counted without an atomic per ping.
    pub pings: prometheus::local::LocalIntCounter,
    /// Thread-local: a quiet market repeats its book at the venue's rate.
    pub books_repeated: prometheus::local::LocalIntCounter,
    pub books_dropped_out_of_order: IntCounter,
    pub books_dropped_before_ack: IntCounter,
    pub messages_ignored: IntCounter,
    pub sequence_resets: IntCounter,
    pub silent_resubscriptions: IntCounter,
    /// `orderbook_connection_renewals_total`: renewed, failed.
    pub renewals: [IntCounter; 2],
}

/// The `outcome` label of each [`FetchOutcome`] kind, in `outcome_index` order.
const SNAPSHOT_OUTCOMES: [&str; 4] = ["used", "too_old", "rate_limited", "failed"];

fn outcome_index(outcome: FetchOutcome) -> usize {
    match outcome {
        FetchOutcome::Used => 0,
        FetchOutcome::TooOld => 1,
        FetchOutcome::RateLimited { .. } => 2,
        FetchOutcome::Failed => 3,
    }
}

/// Where `value` is in `all`, a list of every value of its kind (the order of a metric's
/// label values).
fn index_of<T: PartialEq>(all: &[T], value: T) -> usize {
    all.iter()
        .position(|listed| *listed == value)
        .expect("every value is listed")
}

impl VenueMetrics {
    /// Records the delay from a venue's time of a book (`exchange_ns`, Unix) to its
    /// receipt (`received_ns`, monotonic), on the host clock's offset: counted apart where it
    /// is negative or the clock has just stepped.
    #[inline]
    pub fn feed_delay(&self, clock: &crate::clock::HostClock, exchange_ns: u64, received_ns: u64) {
        match clock.unix_of(received_ns) {
            None => self.delays_across_a_clock_step.inc(),
            Some(received) => match crate::clock::delay_ns(exchange_ns, received) {
                delay if delay < 0 => self.delays_negative.inc(),
                delay => self.feed_delay_seconds.observe(delay as f64 * 1e-9),
            },
        }
    }

    pub fn resyncs(&self, reason: ResyncReason) -> &IntCounter {
        &self.resyncs[index_of(&ResyncReason::ALL, reason)]
    }

    pub fn snapshot_requests(&self, outcome: FetchOutcome) -> &IntCounter {
        &self.snapshot_requests[outcome_index(outcome)]
    }

    pub fn audits(&self, outcome: AuditOutcome) -> &IntCounter {
        &self.audits[index_of(&AuditOutcome::ALL, outcome)]
    }

    /// `orderbook_connection_errors_total` for `reason` (looked up when a connection
    /// fails, which is rare).
    pub fn connection_errors(&self, reason: &str) -> IntCounter {
        self.connection_errors
            .with_label_values(&[self.venue.name(), reason])
    }

    /// `orderbook_checksum_mismatches_total` of `instrument` (looked up once per stream).
    pub fn checksum_mismatches(&self, instrument: &str) -> IntCounter {
        self.checksum_mismatches
            .with_label_values(&[self.venue.name(), instrument])
    }

    /// Publishes what was recorded locally since the last flush.
    pub fn flush(&self) {
        self.decode_seconds.flush();
        self.feed_delay_seconds.flush();
        self.messages.flush();
        self.pings.flush();
        self.books_repeated.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_span_100ns_to_100ms_in_16_steps() {
        let buckets = latency_buckets();
        assert_eq!(buckets.len(), 16);
        assert!((buckets[0] - 100e-9).abs() < 1e-15);
        assert!((buckets[15] - 0.1).abs() < 1e-9, "{}", buckets[15]);
    }
}
