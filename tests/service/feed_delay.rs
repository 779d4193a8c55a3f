//! Each venue's delay, end to end: the simulator stamps its diff events with its clock and
//! can stamp one venue's late (`Simulator::delay_stamps`); the service measures each
//! book's delay from its venue's time to its receipt, flags a venue over
//! `service.max_feed_delay_ms` in `/health`, and leaves out what a step of the host's
//! clock would make of the delays.

use crate::common;
use common::config::TestConfig;

use mergebook::clock;
use mergebook::merger::summary::VenueState;
use mergebook::service::{Listeners, Service};
use mergebook::sim::Simulator;
use mergebook::venue::VenueId;
use std::time::Duration;
use tokio::net::TcpListener;

const WAIT: Duration = Duration::from_secs(20);
/// How late the simulator stamps Binance's events.
const LAG: Duration = Duration::from_millis(400);

/// A series' value in the service's metrics (0 where absent).
fn metric(service: &Service, series: &str) -> f64 {
    common::service_metric(service, series)
}

/// The count of `venue`'s delays at or below `le` seconds (`+Inf`: all of them).
fn delays_within(service: &Service, venue: VenueId, le: &str) -> f64 {
    metric(
        service,
        &format!(r#"orderbook_feed_delay_seconds_bucket{{exchange="{venue}",le="{le}"}}"#),
    )
}

fn discarded(service: &Service, venue: VenueId, reason: &str) -> f64 {
    metric(
        service,
        &format!(
            r#"orderbook_feed_delays_discarded_total{{exchange="{venue}",reason="{reason}"}}"#
        ),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_late_venue_shows_its_delay_and_a_clock_step_is_reported_not_measured() {
    let simulator =
        Simulator::start(TcpListener::bind("127.0.0.1:0").await.unwrap(), 50, 3).unwrap();
    simulator.delay_stamps(VenueId::Binance, LAG);
    let (binance, bitstamp) = (VenueId::Binance, VenueId::Bitstamp);
    let mut config = TestConfig::new()
        .set("service.max_feed_delay_ms", 200)
        .set("venues.binance.mode", "diff")
        .set("venues.binance.snapshot_spacing_ms", 20)
        .set("venues.bitstamp.mode", "diff")
        .set("venues.bitstamp.snapshot_spacing_ms", 20)
        .instrument("ETH/BTC", &[(binance, "ETHBTC"), (bitstamp, "ethbtc")])
        .build();
    simulator.point(&mut config);
    let listeners = Listeners::loopback().await.unwrap();
    let metrics = listeners.metrics.local_addr().unwrap();
    let service = Service::start(config, listeners).unwrap();
    let mut summaries = service.summaries(0);

    // Twenty delays of each venue measured.
    common::eventually("delays of both venues", WAIT, || {
        [binance, bitstamp]
            .iter()
            .all(|&venue| delays_within(&service, venue, "+Inf") >= 20.0)
    })
    .await;
    // Binance's are all at least the lag (none within 256 ms); Bitstamp's, stamped when
    // sent, are not.
    assert_eq!(delays_within(&service, binance, "0.256"), 0.0);
    assert!(delays_within(&service, bitstamp, "0.256") > 0.0);
    assert_eq!(discarded(&service, binance, "negative"), 0.0);
    // And to the publish of the summaries holding them, by the merger: as late.
    let to_publish = |le: &str| {
        metric(
            &service,
            &format!(
                r#"orderbook_exchange_to_publish_seconds_bucket{{exchange="binance",le="{le}"}}"#
            ),
        )
    };
    common::eventually("delays to publish", WAIT, || to_publish("+Inf") >= 1.0).await;
    assert_eq!(to_publish("0.256"), 0.0);

    // The summary carries each venue's time of its book: Binance's the lag behind its
    // receipt.
    let summary = summaries
        .wait_for(|summary| {
            summary.source_states[..2]
                .iter()
                .all(|&state| state == VenueState::Synced)
        })
        .await
        .unwrap()
        .clone();
    let late = |source: usize| {
        let received = summary.received_unix_ns(summary.source_received_ns[source]);
        received - summary.source_exchange_time_ns[source]
    };
    assert!(late(0) >= LAG.as_nanos() as u64, "{}", late(0));
    assert_ne!(summary.source_exchange_time_ns[1], 0);

    // /health names Binance as late (over the configured 200 ms), and Bitstamp not.
    let (_, body) = common::http_get(metrics, "/health").expect("/health");
    let health: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(health["status"], "DEGRADED", "{health}");
    assert!(
        health["delayed"]["ETH/BTC"]["binance"].as_u64().unwrap() >= 400,
        "{health}"
    );
    assert_eq!(
        health["delayed"]["ETH/BTC"].get("bitstamp"),
        None,
        "{health}"
    );
    assert_eq!(health["host_clock"], "steady");

    // The host's clock set back an hour: reported, and no delay measured across it (an
    // hour's negative delay, or an hour's too many when it is set right again).
    let now = clock::monotonic_ns();
    let step = service
        .host_clock()
        .sample(clock::unix_ns() - 3_600_000_000_000, now);
    assert!(step.is_some());
    common::eventually("the step reported", WAIT, || {
        metric(&service, "orderbook_host_clock_steps_total") >= 1.0
            && metric(&service, "orderbook_host_clock_steady") == 0.0
    })
    .await;
    common::eventually("books received across the step", WAIT, || {
        discarded(&service, binance, "clock_step") >= 10.0
    })
    .await;
    let (_, body) = common::http_get(metrics, "/health").expect("/health");
    let health: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(health["host_clock"], "stepped", "{health}");
    assert_eq!(health["delayed"], serde_json::json!({}), "{health}");
    assert_eq!(discarded(&service, binance, "negative"), 0.0);
    // None of the delays recorded is an hour's.
    let huge =
        delays_within(&service, binance, "+Inf") - delays_within(&service, binance, "32.768");
    assert_eq!(huge, 0.0);
    service.stop().await;
}
