//! Audits of the books whose streams cannot show a lost event (Bitstamp's diff stream,
//! Coinbase Exchange's `level2_batch`), end to end: the simulator serves both venues' REST
//! books beside their streams; the service audits each book every few hundred ms, which
//! must match while the market is busy, find an event the simulator lost on the way, and
//! rebuild the book to the simulator's true one; a recording of it replays its audits.

use crate::common;
use common::config::TestConfig;

use mergebook::config::Config;
use mergebook::merger::summary::{Summary, VenueState};
use mergebook::metrics::Metrics;
use mergebook::record::timeline;
use mergebook::replay;
use mergebook::service::{Listeners, Service};
use mergebook::sim::Simulator;
use mergebook::venue::VenueId;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

const WAIT: Duration = Duration::from_secs(20);
const DEPTH: usize = 10;
/// Each instrument's venue and symbol, in instrument order.
const BOOKS: [(VenueId, &str); 2] = [
    (VenueId::Bitstamp, "ethbtc"),
    (VenueId::CoinbaseExchange, "ETH-BTC"),
];

fn audits(service: &Service, venue: VenueId, outcome: &str) -> f64 {
    audits_in(&service.metrics(), venue, outcome)
}

fn audits_in(metrics: &Metrics, venue: VenueId, outcome: &str) -> f64 {
    let series = format!(r#"orderbook_audits_total{{exchange="{venue}",outcome="{outcome}"}}"#);
    (metrics.render().lines())
        .find_map(|line| line.strip_prefix(&series)?.trim().parse().ok())
        .unwrap_or(0.0)
}

/// Whether `summary` shows, synced, a top of `venue`'s book the simulator had at or after
/// `since` (a venue sequence).
fn shows_a_true_book(
    simulator: &Simulator,
    venue: VenueId,
    symbol: &str,
    since: u64,
    summary: &Summary,
) -> bool {
    if summary.venue_state(venue) != VenueState::Synced {
        return false;
    }
    let shown = |levels: &[mergebook::merger::kway::MergedLevel]| -> Vec<_> {
        levels.iter().map(|l| (l.price, l.amount)).collect()
    };
    let (bids, asks) = (
        shown(summary.book.bids.as_slice()),
        shown(summary.book.asks.as_slice()),
    );
    simulator.with_diff_history(venue, symbol, |truths| {
        truths.iter().any(|truth| {
            let side = |levels: &mergebook::book::Levels| -> Vec<_> {
                let top = levels.as_slice().iter().take(DEPTH);
                top.map(|l| (l.price, l.amount)).collect()
            };
            truth.venue_sequence >= since && side(&truth.bids) == bids && side(&truth.asks) == asks
        })
    })
}

async fn wait_for(
    summaries: &mut watch::Receiver<Arc<Summary>>,
    what: &str,
    accept: impl Fn(&Summary) -> bool,
) {
    let found = tokio::time::timeout(WAIT, summaries.wait_for(|summary| accept(summary))).await;
    assert!(matches!(found, Ok(Ok(_))), "{what}: not within {WAIT:?}");
}

/// The simulator and a service auditing every 300 ms the books of `books` (one instrument
/// each), recording into `record` where given.
async fn start(
    books: &[(VenueId, &str)],
    record: Option<&std::path::Path>,
) -> (Simulator, Service, Config) {
    let simulator =
        Simulator::start(TcpListener::bind("127.0.0.1:0").await.unwrap(), 50, 5).unwrap();
    let mut config = TestConfig::new()
        .set("service.depth", DEPTH as i64)
        // A paused venue must not be taken for a silent one: the audit alone finds the loss.
        .set("feed.read_idle_timeout_ms", 120_000)
        .set("venues.bitstamp.mode", "diff")
        .set("venues.bitstamp.snapshot_spacing_ms", 20)
        .set("venues.bitstamp.audit_every_ms", 300)
        .set("venues.coinbase_exchange.audit_every_ms", 300);
    if let Some(dir) = record {
        config = config.set("record.dir", dir.display().to_string());
    }
    for (index, &book) in books.iter().enumerate() {
        config = config.instrument(&format!("I{index}"), &[book]);
    }
    let mut config = config.build();
    simulator.point(&mut config);
    let service = Service::start(config.clone(), Listeners::loopback().await.unwrap()).unwrap();
    (simulator, service, config)
}

/// Instrument `instrument`'s book of `venue`: audits match while the market is busy; then,
/// the venue paused, an event lost is found by an audit, and the book rebuilt true.
async fn lose_an_event_and_see_it_found(
    simulator: &Simulator,
    service: &Service,
    instrument: usize,
    (venue, symbol): (VenueId, &str),
) {
    common::eventually(&format!("{venue}: two audits matched"), WAIT, || {
        audits(service, venue, "match") >= 2.0
    })
    .await;
    if venue == VenueId::Bitstamp {
        // Its snapshot and events are stamped alike: each comparison waits for exactly the
        // events before the snapshot, and none can be wrong.
        assert_eq!(audits(service, venue, "mismatch"), 0.0);
    }
    let mismatches = audits(service, venue, "mismatch");
    let others = || {
        ["match", "inconclusive", "failed"]
            .iter()
            .map(|outcome| audits(service, venue, outcome))
            .sum::<f64>()
    };

    // Paused, an event lost: the book the service holds lacks it, and no event will set
    // that level again.
    simulator.pause_until_silent(venue).await;
    let others_before = others();
    let before = simulator.with_diff_history(venue, symbol, |truths| {
        truths.last().map(|t| t.venue_sequence)
    });
    assert!(
        simulator.lose_event(venue, symbol),
        "{venue} has a bid to change"
    );
    let lost = simulator
        .with_diff_history(venue, symbol, |truths| truths.last().cloned())
        .unwrap();
    assert!(lost.venue_sequence > before.unwrap_or(0));
    common::eventually(&format!("{venue}: the audit's mismatch"), WAIT, || {
        audits(service, venue, "mismatch") > mismatches
    })
    .await;
    // Found by the first audit asked for after the loss: before it, only the one already
    // out may have ended otherwise (its snapshot may predate the loss). The next audit
    // comes a turn and a settling time (1.3 s) after the mismatch.
    assert!(
        others() - others_before <= 1.0,
        "{venue}: {} audits ended otherwise before the loss was found",
        others() - others_before
    );
    assert_eq!(audits(service, venue, "mismatch"), mismatches + 1.0);
    let resyncs = format!(r#"orderbook_resyncs_total{{exchange="{venue}",reason="audit"}}"#);
    assert!(
        common::service_metric(service, &resyncs) >= 1.0,
        "{resyncs}"
    );
    let silence = format!(r#"orderbook_resyncs_total{{exchange="{venue}",reason="silence"}}"#);
    assert_eq!(common::service_metric(service, &silence), 0.0, "{silence}");
    // Coinbase Exchange's rebuild is a subscription's snapshot, which a paused venue does
    // not send; Bitstamp's is a REST snapshot, rebuilt while it stays paused.
    if venue == VenueId::CoinbaseExchange {
        simulator.pause(venue, false);
    }
    let mut summaries = service.summaries(instrument);
    wait_for(
        &mut summaries,
        &format!("{venue}: the rebuilt true book"),
        |summary| shows_a_true_book(simulator, venue, symbol, lost.venue_sequence, summary),
    )
    .await;
    simulator.pause(venue, false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_lost_on_the_way_is_found_by_an_audit_and_the_book_rebuilt_true() {
    let (simulator, service, _) = start(&BOOKS, None).await;
    for (instrument, book) in BOOKS.into_iter().enumerate() {
        lose_an_event_and_see_it_found(&simulator, &service, instrument, book).await;
    }
    service.stop().await;
}

/// The recorder keeps each audit's request and snapshot: a replay of the recording makes
/// the same audits, with the same outcomes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recording_replays_its_audits() {
    let dir = std::env::temp_dir().join(format!("mergebook-audits-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (simulator, service, config) = start(&BOOKS[..1], Some(&dir)).await;
    lose_an_event_and_see_it_found(&simulator, &service, 0, BOOKS[0]).await;
    let metrics = service.metrics();
    // Stopped, it makes no more audits; the recording holds every one counted.
    service.stop().await;
    let venue = BOOKS[0].0;
    let audits = |outcome| audits_in(&metrics, venue, outcome);
    let (matched, mismatched) = (audits("match"), audits("mismatch"));

    let recordings = timeline::load_recording(&dir).unwrap();
    let events = recordings.iter().flat_map(|recording| &recording.events);
    let requests = (events.clone())
        .filter(|e| matches!(e.event, timeline::TimelineEvent::AuditRequest { .. }))
        .count();
    assert!(
        requests as f64 >= matched + mismatched,
        "{requests} audit requests recorded"
    );
    let stats = replay::replay_recording(
        &config,
        &recordings,
        |_| true,
        |_| {},
        |_, _, _| {},
        |_, _| {},
    )
    .unwrap();
    assert_eq!(
        (stats.audits.matched as f64, stats.audits.mismatched as f64),
        (matched, mismatched),
        "{stats:?}"
    );
    assert_eq!(stats.audits.mismatched, 1);
    std::fs::remove_dir_all(&dir).unwrap();
}
