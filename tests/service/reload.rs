//! Instruments listed and delisted while the service runs (`Service::reload`), under
//! load: the books kept never leave sync and keep their connections; the one delisted
//! leaves its consumers; the one listed is synced on the connections with room, or on a
//! new one where there is none.

use crate::common::config::TestConfig;
use crate::service::{WAIT, http_get, wait_for, whole_market};
use mergebook::config::Config;
use mergebook::merger::summary::{Summary, VenueState};
use mergebook::merger::{PublishObserver, PublishRecord};
use mergebook::service::{Listeners, Reloaded, Service};
use mergebook::sim::Simulator;
use mergebook::venue::VenueId;
use std::sync::{Arc, Mutex};
use tokio::net::TcpListener;

const VENUES: [VenueId; 2] = [VenueId::Binance, VenueId::Bitstamp];

/// Every summary the merger writes of the instruments in `watched` slots, once each of
/// them has had one with every source synced: any with a source out of sync, kept.
#[derive(Clone, Default)]
struct LeftSync {
    watched: Vec<usize>,
    synced: Arc<Mutex<Vec<usize>>>,
    out_of_sync: Arc<Mutex<Vec<OutOfSync>>>,
}

/// A summary's instrument and its two books' states.
type OutOfSync = (usize, [VenueState; 2]);

impl PublishObserver for LeftSync {
    const OBSERVES: bool = true;

    fn published(&mut self, _: &PublishRecord) {}

    fn written(&mut self, summary: &Summary) {
        if !self.watched.contains(&summary.instrument) {
            return;
        }
        let states = [summary.source_states[0], summary.source_states[1]];
        let all_synced = states.iter().all(|&state| state == VenueState::Synced);
        let mut synced = self.synced.lock().unwrap();
        if all_synced && !synced.contains(&summary.instrument) {
            synced.push(summary.instrument);
        } else if !all_synced && synced.contains(&summary.instrument) {
            self.out_of_sync
                .lock()
                .unwrap()
                .push((summary.instrument, states));
        }
    }
}

/// An instrument on both venues, of symbols made of `name`.
fn with(config: TestConfig, name: &str) -> TestConfig {
    let binance = format!("{name}USDT");
    let bitstamp = format!("{}usd", name.to_lowercase());
    let symbols = [
        (VENUES[0], binance.as_str()),
        (VENUES[1], bitstamp.as_str()),
    ];
    config.instrument(name, &symbols)
}

/// `names` on both venues from `simulator`, their books in `mode` (`snapshot`, `diff`).
fn on(simulator: &Simulator, mode: &str, names: &[&str]) -> Config {
    let config = (TestConfig::new().set("service.depth", 5))
        .set("venues.binance.mode", mode)
        .set("venues.bitstamp.mode", mode)
        .set("venues.binance.snapshot_spacing_ms", 20)
        .set("venues.bitstamp.snapshot_spacing_ms", 20);
    let mut config = names
        .iter()
        .fold(config, |config, name| with(config, name))
        .build();
    simulator.point(&mut config);
    config
}

fn all_synced(summary: &Summary) -> bool {
    VENUES
        .iter()
        .all(|&venue| summary.venue_state(venue) == VenueState::Synced)
}

/// The latest summary of `name` once it has both books synced and newer than `after`'s.
async fn moved_on(service: &Service, name: &str, after: Option<&Summary>) -> Arc<Summary> {
    let listed = service.catalog().borrow().find(name).cloned();
    let mut summaries = listed.expect("listed").summaries;
    let after = after.map_or([0, 0], |s| [s.source_sequence[0], s.source_sequence[1]]);
    wait_for(&mut summaries, |s| {
        all_synced(s) && s.source_sequence[0] > after[0] && s.source_sequence[1] > after[1]
    })
    .await
}

/// Two instruments kept, one delisted and one listed while the books flow: the listing
/// shows the change, the delisted one's consumers see its channel close and its streams
/// stop, the listed one is synced on the connections already open (they have room), and
/// the two kept never have a summary with a book out of sync, and keep moving on the
/// same connections: books replaced whole, and books kept by their changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instrument_listed_and_one_delisted_leave_the_others_live() {
    listed_and_delisted("snapshot").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instrument_listed_and_one_delisted_leave_the_other_diff_books_live() {
    listed_and_delisted("diff").await;
}

async fn listed_and_delisted(mode: &str) {
    let simulator =
        Simulator::start(TcpListener::bind("127.0.0.1:0").await.unwrap(), 100, 7).unwrap();
    let observer = LeftSync {
        watched: vec![0, 1],
        ..LeftSync::default()
    };
    let config = on(&simulator, mode, &["KEPTA", "KEPTB", "GONE"]);
    let listeners = Listeners::loopback().await.unwrap();
    let metrics = listeners.metrics.local_addr().unwrap();
    let mut service = Service::start_observed(config, listeners, observer.clone()).unwrap();
    let mut before = Vec::new();
    for name in ["KEPTA", "KEPTB", "GONE"] {
        before.push(moved_on(&service, name, None).await);
    }
    let mut gone = service.summaries(2);

    let reloaded = service
        .reload(on(&simulator, mode, &["KEPTA", "NEW", "KEPTB"]))
        .expect("only instruments change");
    assert_eq!(
        reloaded,
        Reloaded {
            listed: vec!["NEW".into()],
            delisted: vec!["GONE".into()],
        }
    );
    let names: Vec<String> = (service.catalog().borrow().iter())
        .map(|listed| listed.instrument.name.clone())
        .collect();
    assert_eq!(names, ["KEPTA", "NEW", "KEPTB"]);
    let closed = tokio::time::timeout(WAIT, async { while gone.changed().await.is_ok() {} });
    assert!(
        closed.await.is_ok(),
        "the delisted instrument's channel closes"
    );
    // NEW's subscription went after GONE's unsubscription on each connection: once NEW
    // is synced, the venue has sent GONE's last book. (The simulator's diff streams run
    // whoever subscribes: what it sends of them is not told apart.)
    moved_on(&service, "NEW", None).await;
    let gone_streams = [(VENUES[0], "GONEUSDT"), (VENUES[1], "goneusd")]
        .map(|(venue, symbol)| (venue, venue.streams().stream_name(symbol, 5)));
    let last_sent = || {
        gone_streams
            .clone()
            .map(|(v, s)| simulator.last_sent(v, &s))
    };
    let gone_last = last_sent();
    let snapshots = mode == "snapshot";
    if snapshots {
        assert!(gone_last.iter().all(Option::is_some), "GONE's books sent");
    }
    let mut after = Vec::new();
    for (name, before) in ["KEPTA", "KEPTB"].into_iter().zip(&before) {
        after.push(moved_on(&service, name, Some(before)).await);
    }
    moved_on(&service, "KEPTA", Some(&after[0])).await;
    let unchanged = last_sent() == gone_last;
    assert!(unchanged, "GONE unsubscribed: the venue sends it no more");
    // /health reports the instruments listed, and the gauges of GONE's books are gone.
    let (_, health) = http_get(metrics, "/health").await;
    let health: serde_json::Value = serde_json::from_str(&health).unwrap();
    let reported: Vec<&String> = health["instruments"].as_object().unwrap().keys().collect();
    assert_eq!(reported, ["KEPTA", "KEPTB", "NEW"]);
    let (_, text) = http_get(metrics, "/metrics").await;
    assert!(text.contains(r#"orderbook_venue_up{exchange="binance",instrument="NEW"} 1"#));
    let left: Vec<&str> = (text.lines())
        .filter(|line| line.contains(r#"instrument="GONE""#))
        .collect();
    assert!(left.is_empty(), "GONE's series left /metrics: {left:?}");
    for venue in VENUES {
        assert_eq!(
            simulator.connections(venue),
            1,
            "{venue}: no connection opened again"
        );
    }
    let synced = observer.synced.lock().unwrap().clone();
    assert!(synced.contains(&0) && synced.contains(&1), "{synced:?}");
    assert_eq!(
        *observer.out_of_sync.lock().unwrap(),
        [],
        "a kept book left sync"
    );
    service.stop().await;
}

/// The whole market's settings (the merger batching, one fan-out for every instrument,
/// connections sharing a reader thread), with one venue's connection full: the listed
/// instrument's book goes on a new connection, which joins the reader thread; the
/// delisted one leaves the one fan-out; a reload that changes anything but the
/// instruments is refused, and changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_batches_a_full_connection_s_new_book_opens_another() {
    let simulator =
        Simulator::start(TcpListener::bind("127.0.0.1:0").await.unwrap(), 50, 7).unwrap();
    let venue = VenueId::Bitstamp;
    let most = venue.facts().max_streams_per_connection;
    let whole_market = |names: &[String]| {
        let config = (whole_market().set("service.depth", 5)).on(&simulator, &[venue]);
        names.iter().fold(config, |config, name| {
            let symbol = format!("{}usd", name.to_lowercase());
            config.instrument(name, &[(venue, &symbol)])
        })
    };
    let names: Vec<String> = (0..most).map(|n| format!("P{n}")).collect();
    let mut service = Service::start(
        whole_market(&names).build(),
        Listeners::loopback().await.unwrap(),
    )
    .unwrap();
    let synced = |s: &Summary| s.venue_state(venue) == VenueState::Synced;
    for slot in 0..most {
        wait_for(&mut service.summaries(slot), synced).await;
    }
    assert_eq!(simulator.connections(venue), 1);
    let refused = whole_market(&names)
        .set("service.stale_after_ms", 1234)
        .build();
    let error = service
        .reload(refused)
        .expect_err("not an instrument's change");
    assert!(
        error.to_string().contains("service.stale_after_ms"),
        "{error}"
    );

    let mut gone = service.summaries(0);
    let mut next: Vec<String> = names[1..].to_vec();
    next.extend(["EXTRA1".to_owned(), "EXTRA2".to_owned()]);
    service
        .reload(whole_market(&next).build())
        .expect("reloaded");
    let closed = tokio::time::timeout(WAIT, async { while gone.changed().await.is_ok() {} });
    assert!(
        closed.await.is_ok(),
        "the delisted instrument's channel closes"
    );
    for name in ["EXTRA1", "EXTRA2"] {
        let listed = service.catalog().borrow().find(name).cloned();
        wait_for(&mut listed.expect("listed").summaries, synced).await;
    }
    // One took the delisted's place on the full connection; the other needed a new one.
    assert_eq!(simulator.connections(venue), 2);
    service.stop().await;
}
