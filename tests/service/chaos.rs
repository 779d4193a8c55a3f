//! Faults injected by the simulator, one test each (docs/reliability.md has the table).
//! Every test runs the real service against the simulator, checks every summary published
//! meanwhile against the merged book's invariants (`invariants.rs`: nothing of an excluded
//! venue, nothing stale, nothing crossed or unsorted, sequences increasing), checks the
//! counter that records the fault, and that the affected venue recovers by itself.

use crate::common;
use common::config::TestConfig;

use mergebook::merger::summary::{Summary, VenueState};
use mergebook::service::{Listeners, Service};
use mergebook::sim::Simulator;
use mergebook::venue::VenueId;
use mergebook_testkit::invariants::InvariantChecker;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::crypto::ring;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio_tungstenite::Connector;

const WAIT: Duration = Duration::from_secs(20);
const STALE_AFTER_MS: u64 = 1_500;
const MAX_FRAME_BYTES: usize = 65_536;
const BINANCE: VenueId = VenueId::Binance;
const BITSTAMP: VenueId = VenueId::Bitstamp;

struct Chaos {
    simulator: Simulator,
    service: Service,
    recorder: tokio::task::JoinHandle<Recorded>,
}

/// What one consumer saw: the invariants checked on every summary, and each venue's states.
struct Recorded {
    checker: InvariantChecker,
    states: [BTreeSet<&'static str>; 2],
}

/// A venue's URL in place of the simulator's own: one of its fault URLs
/// (`Simulator::silent_url`, …) or a test's endpoint in front of it.
type FaultUrl<'a> = &'a dyn Fn(&Simulator, VenueId) -> String;

/// The service on the simulator, with short timeouts; `url` replaces a venue's URL.
async fn start(url: Option<(VenueId, FaultUrl<'_>)>) -> Chaos {
    let simulator =
        Simulator::start(TcpListener::bind("127.0.0.1:0").await.unwrap(), 50, 11).unwrap();
    let url_of = |venue| match url {
        Some((replaced, url)) if replaced == venue => url(&simulator, venue),
        _ => simulator.url(venue),
    };
    let config = TestConfig::new()
        .set("service.stale_after_ms", STALE_AFTER_MS as i64)
        .set("feed.max_frame_bytes", MAX_FRAME_BYTES as i64)
        .set("feed.read_idle_timeout_ms", 800)
        .set("feed.connect_timeout_ms", 500)
        .set("feed.backoff_initial_ms", 20)
        .set("feed.backoff_max_ms", 200)
        .venue_url(BINANCE, url_of(BINANCE))
        .venue_url(BITSTAMP, url_of(BITSTAMP))
        .instrument("ETH/BTC", &[(BINANCE, "ETHBTC"), (BITSTAMP, "ethbtc")])
        .build();
    let listeners = Listeners::loopback().await.unwrap();
    let service = Service::start(config, listeners).unwrap();
    let mut summaries = service.summaries(0);
    let recorder = tokio::spawn(async move {
        let mut recorded = Recorded {
            checker: InvariantChecker::new(Duration::from_millis(STALE_AFTER_MS)),
            states: Default::default(),
        };
        while summaries.changed().await.is_ok() {
            let summary = summaries.borrow_and_update().clone();
            if summary.sequence == 0 {
                continue;
            }
            recorded.checker.check(&summary);
            for venue in [BINANCE, BITSTAMP] {
                recorded.states[venue.index()].insert(summary.venue_state(venue).name());
            }
        }
        recorded
    });
    Chaos {
        simulator,
        service,
        recorder,
    }
}

impl Chaos {
    fn summaries(&self) -> watch::Receiver<Arc<Summary>> {
        self.service.summaries(0)
    }

    /// Waits for a summary satisfying `accept`.
    async fn wait_for(&self, what: &str, accept: impl Fn(&Summary) -> bool) {
        let mut summaries = self.summaries();
        let found = tokio::time::timeout(WAIT, summaries.wait_for(|summary| accept(summary)))
            .await
            .is_ok_and(|found| found.is_ok());
        assert!(
            found,
            "{what}: not within {WAIT:?}; last states {:?}",
            summaries.borrow().source_states
        );
    }

    async fn both_synced(&self) {
        self.wait_for("both venues synced", |summary| {
            [BINANCE, BITSTAMP]
                .iter()
                .all(|&venue| summary.venue_state(venue) == VenueState::Synced)
        })
        .await;
    }

    fn metric(&self, series: &str) -> f64 {
        common::service_metric(&self.service, series)
    }

    /// Waits for `series` to reach `at_least`.
    async fn counted(&self, series: &str, at_least: f64) {
        self.eventually(&format!("{series} >= {at_least}"), || {
            self.metric(series) >= at_least
        })
        .await;
    }

    async fn eventually(&self, what: &str, condition: impl Fn() -> bool) {
        common::eventually(what, WAIT, condition).await;
    }

    /// Stops the service; fails if any summary broke an invariant.
    async fn finish(self) -> Recorded {
        self.service.stop().await;
        let recorded = self.recorder.await.unwrap();
        assert!(recorded.checker.checked > 0, "no summary was published");
        assert!(
            recorded.checker.violations.is_empty(),
            "{} summaries broke invariants, first: {}",
            recorded.checker.violations.len(),
            recorded.checker.violations[0]
        );
        recorded
    }
}

fn connection_errors(venue: VenueId, reason: &str) -> String {
    format!(r#"orderbook_connection_errors_total{{exchange="{venue}",reason="{reason}"}}"#)
}

/// A fault that ends the connection: counted under `reason`, then the venue is back.
async fn reconnects_after(fault: impl FnOnce(&Simulator), reason: &str) {
    let chaos = start(None).await;
    chaos.both_synced().await;
    fault(&chaos.simulator);
    chaos
        .counted(&connection_errors(BINANCE, reason), 1.0)
        .await;
    chaos
        .eventually("a reconnection", || {
            chaos.simulator.connections(BINANCE) >= 2
        })
        .await;
    chaos.both_synced().await;
    // The invariants (checked in `finish`) show nothing of the venue was merged while it
    // was not synced. Whether this consumer saw the `connecting` summary itself is a race:
    // a latest-value consumer may skip it when the reconnection is quick.
    chaos.finish().await;
}

/// A fault the reader absorbs: `series` reaches `at_least`, and the venue stays synced on
/// the same connection.
async fn absorbed(fault: impl FnOnce(&Simulator), series: &str, at_least: f64) {
    let chaos = start(None).await;
    chaos.both_synced().await;
    fault(&chaos.simulator);
    chaos.counted(series, at_least).await;
    chaos.both_synced().await;
    assert_eq!(chaos.simulator.connections(BINANCE), 1);
    chaos.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_cut_mid_frame_reconnects() {
    reconnects_after(|simulator| simulator.cut_mid_frame(BINANCE), "closed").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_peer_stalled_mid_frame_is_dropped_at_the_read_idle_timeout() {
    reconnects_after(
        |simulator| simulator.stall_mid_frame(BINANCE),
        "idle_timeout",
    )
    .await;
}

const SILENT_RESUBSCRIPTIONS: &str =
    r#"orderbook_silent_resubscriptions_total{exchange="binance"}"#;

/// A subscription the venue stopped serving on a live connection is subscribed again at
/// the read-idle timeout, which revives it: the connection stays.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_subscription_is_subscribed_again_and_revived() {
    let chaos = start(None).await;
    chaos.both_synced().await;
    chaos.simulator.drop_subscriptions(BINANCE);
    chaos.counted(SILENT_RESUBSCRIPTIONS, 1.0).await;
    chaos.both_synced().await;
    assert_eq!(chaos.simulator.connections(BINANCE), 1);
    assert_eq!(
        chaos.metric(&connection_errors(BINANCE, "idle_timeout")),
        0.0
    );
    chaos.finish().await;
}

/// A connection that only pings (a dead subscription on a live socket, which subscribing
/// again does not revive) is recycled: at the read-idle timeout its subscription is made
/// again, and still silent at the next, the connection is dropped. Pings do not count as
/// data.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_only_pings_is_recycled_at_the_read_idle_timeout() {
    let chaos = start(None).await;
    chaos.both_synced().await;
    // A new connection, pinging every 50 ms (a new connection takes the interval).
    chaos
        .simulator
        .set_ping_interval(BINANCE, Duration::from_millis(50));
    chaos.simulator.disconnect(BINANCE);
    chaos
        .eventually("a reconnection", || {
            chaos.simulator.connections(BINANCE) >= 2
        })
        .await;
    chaos.both_synced().await;
    chaos.simulator.pause(BINANCE, true);
    let idle_timeouts = connection_errors(BINANCE, "idle_timeout");
    chaos
        .eventually("subscribed again before the connection is recycled", || {
            chaos.metric(SILENT_RESUBSCRIPTIONS) >= 1.0
        })
        .await;
    assert_eq!(chaos.metric(&idle_timeouts), 0.0, "subscribed again first");
    assert_eq!(chaos.simulator.connections(BINANCE), 2);
    chaos.counted(&idle_timeouts, 1.0).await;
    assert_eq!(chaos.metric(SILENT_RESUBSCRIPTIONS), 1.0);
    chaos
        .eventually("a reconnection after the timeout", || {
            chaos.simulator.connections(BINANCE) >= 3
        })
        .await;
    assert!(
        chaos.simulator.pongs(BINANCE) > 0,
        "the pings were answered"
    );
    chaos.simulator.pause(BINANCE, false);
    chaos.both_synced().await;
    chaos.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_oversized_frame_is_refused_and_the_connection_reset() {
    reconnects_after(
        |simulator| simulator.send_raw(BINANCE, "x".repeat(MAX_FRAME_BYTES + 1)),
        "oversized_frame",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn invalid_utf8_in_a_text_frame_resets_the_connection() {
    reconnects_after(
        |simulator| simulator.send_invalid_utf8(BINANCE),
        "invalid_utf8",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binary_frame_is_a_counted_bad_frame_and_the_connection_stays() {
    absorbed(
        |simulator| simulator.send_binary(BINANCE, b"{\"not\":\"text\"}".to_vec()),
        r#"orderbook_decode_errors_total{exchange="binance"}"#,
        1.0,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ping_flood_is_answered_and_changes_nothing_else() {
    absorbed(
        |simulator| simulator.ping_flood(BINANCE, 10_000),
        r#"orderbook_pings_total{exchange="binance"}"#,
        10_000.0,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_100_times_the_rate_is_read_on_the_same_connection() {
    // 100 × 50 frames/s, for one second, at once.
    absorbed(
        |simulator| simulator.burst(BINANCE, 5_000),
        r#"orderbook_messages_total{exchange="binance"}"#,
        5_000.0,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_accepts_and_never_answers_times_out_and_the_other_venue_carries_on() {
    let chaos = start(Some((BINANCE, &Simulator::silent_url))).await;
    chaos
        .wait_for("bitstamp synced", |summary| {
            summary.venue_state(BITSTAMP) == VenueState::Synced
        })
        .await;
    chaos
        .counted(&connection_errors(BINANCE, "connect_timeout"), 2.0)
        .await;
    let recorded = chaos.finish().await;
    assert_eq!(
        recorded.states[BINANCE.index()],
        BTreeSet::from(["connecting"]),
        "never merged"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_tls_handshake_is_counted_and_retried() {
    let chaos = start(Some((BINANCE, &Simulator::tls_mismatch_url))).await;
    chaos.counted(&connection_errors(BINANCE, "tls"), 2.0).await;
    let recorded = chaos.finish().await;
    assert_eq!(
        recorded.states[BINANCE.index()],
        BTreeSet::from(["connecting"])
    );
}

/// A TLS endpoint for `localhost` with a self-signed certificate (what a man in the middle
/// presents), passing whatever it decrypts to the simulator; it counts the handshakes that
/// failed and completed.
#[derive(Clone)]
struct SelfSignedProxy {
    certificate: CertificateDer<'static>,
    acceptor: TlsAcceptor,
    failed: Arc<AtomicU64>,
    completed: Arc<AtomicU64>,
}

impl SelfSignedProxy {
    fn new() -> Self {
        let certified = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
        let certificate = certified.cert.der().clone();
        let key = PrivatePkcs8KeyDer::from(certified.signing_key.serialize_der());
        let server = ServerConfig::builder_with_provider(Arc::new(ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(vec![certificate.clone()], key.into())
            .unwrap();
        Self {
            certificate,
            acceptor: TlsAcceptor::from(Arc::new(server)),
            failed: Arc::default(),
            completed: Arc::default(),
        }
    }

    /// Starts the endpoint in front of `simulator`; `venue`'s `wss://localhost` URL on it.
    fn url(&self, simulator: &Simulator, venue: VenueId) -> String {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let listener = TcpListener::from_std(listener).unwrap();
        let (proxy, upstream) = (self.clone(), simulator.addr());
        tokio::spawn(async move {
            while let Ok((socket, _)) = listener.accept().await {
                let proxy = proxy.clone();
                tokio::spawn(async move {
                    let Ok(mut tls) = proxy.acceptor.accept(socket).await else {
                        proxy.failed.fetch_add(1, Ordering::Relaxed);
                        return;
                    };
                    proxy.completed.fetch_add(1, Ordering::Relaxed);
                    let mut plain = tokio::net::TcpStream::connect(upstream).await.unwrap();
                    let _ = tokio::io::copy_bidirectional(&mut tls, &mut plain).await;
                });
            }
        });
        format!("wss://localhost:{port}/{}", venue.name())
    }

    /// A client configuration that trusts this certificate (and nothing else).
    fn trusting_client(&self) -> ClientConfig {
        let mut roots = RootCertStore::empty();
        roots.add(self.certificate.clone()).unwrap();
        ClientConfig::builder_with_provider(Arc::new(ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_self_signed_certificate_is_refused() {
    let proxy = SelfSignedProxy::new();
    let url = std::sync::OnceLock::new();
    let chaos = start(Some((BINANCE, &|simulator: &Simulator, venue| {
        url.get_or_init(|| proxy.url(simulator, venue)).clone()
    })))
    .await;
    chaos.counted(&connection_errors(BINANCE, "tls"), 2.0).await;
    // The endpoint works for a client that trusts its certificate: the reader refused it
    // for the certificate alone.
    let trusting = Connector::Rustls(Arc::new(proxy.trusting_client()));
    let url = url.get().unwrap();
    tokio_tungstenite::connect_async_tls_with_config(url, None, false, Some(trusting))
        .await
        .expect("a WebSocket through the endpoint, for a client that trusts it");
    assert!(proxy.failed.load(Ordering::Relaxed) >= 2);
    assert_eq!(
        proxy.completed.load(Ordering::Relaxed),
        1,
        "only the trusting client"
    );
    let recorded = chaos.finish().await;
    assert_eq!(
        recorded.states[BINANCE.index()],
        BTreeSet::from(["connecting"])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_venue_clock_that_jumps_back_is_followed_after_three_books() {
    let chaos = start(None).await;
    chaos.both_synced().await;
    // An hour ahead (Bitstamp's sequence is its microtimestamp), then back.
    let hour_us = 3_600_000_000;
    let ahead = chaos.summaries().borrow().venue_sequence(BITSTAMP) + hour_us;
    chaos.simulator.set_clock_offset(BITSTAMP, hour_us);
    chaos
        .wait_for("books an hour ahead", |summary| {
            summary.venue_sequence(BITSTAMP) > ahead
        })
        .await;
    chaos.simulator.set_clock_offset(BITSTAMP, 0);
    chaos
        .counted(
            r#"orderbook_sequence_resets_total{exchange="bitstamp"}"#,
            1.0,
        )
        .await;
    chaos
        .wait_for("books back on the true clock", |summary| {
            summary.venue_sequence(BITSTAMP) < ahead
                && summary.venue_state(BITSTAMP) == VenueState::Synced
        })
        .await;
    assert!(
        chaos.metric(r#"orderbook_books_dropped_total{exchange="bitstamp",reason="out_of_order"}"#)
            >= 2.0
    );
    chaos.finish().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_market_that_repeats_its_book_stays_live() {
    let chaos = start(None).await;
    chaos.both_synced().await;
    chaos.simulator.quiet_market(BINANCE, true);
    let repeated = r#"orderbook_books_repeated_total{exchange="binance"}"#;
    chaos.counted(repeated, 1.0).await;
    let held = chaos.summaries().borrow().venue_sequence(BINANCE);
    // Twice the stale age with nothing new from Binance: its repeats keep it live.
    tokio::time::sleep(Duration::from_millis(2 * STALE_AFTER_MS)).await;
    let summary = chaos.summaries().borrow().clone();
    assert_eq!(summary.venue_state(BINANCE), VenueState::Synced);
    assert_eq!(summary.venue_sequence(BINANCE), held, "the book held still");
    assert!(
        chaos.metric(repeated) >= 10.0,
        "repeats arrive at the venue's rate"
    );
    assert_eq!(
        chaos.metric(r#"orderbook_stale_evictions_total{exchange="binance"}"#),
        0.0
    );
    chaos.simulator.quiet_market(BINANCE, false);
    chaos
        .wait_for("Binance's book moving again", |summary| {
            summary.venue_sequence(BINANCE) > held
        })
        .await;
    let recorded = chaos.finish().await;
    // Synced throughout: never stale. Whether the consumer saw Binance still connecting
    // depends on how early it read the latest-value channel, so that state is allowed,
    // not required.
    let binance_states = &recorded.states[BINANCE.index()];
    assert!(
        binance_states.contains("synced")
            && binance_states.is_subset(&BTreeSet::from(["connecting", "synced"])),
        "Binance's states: {binance_states:?}"
    );
}
