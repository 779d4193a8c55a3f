//! What the tests of a diff venue with snapshots on its own stream (always, or in one form
//! of its protocol) share: a replay of recorded frames through mergebook's diff rules, and
//! the service on the simulator in diff mode with two of the venue's symbols, whose every
//! synced book is checked against the simulator's true book.

use super::config::TestConfig;
use mergebook::book::{Level, TopBook};
use mergebook::merger::kway::MergedLevel;
use mergebook::merger::summary::{Summary, VenueState};
use mergebook::record::timeline::RecordedFrame;
use mergebook::replay::{self, DiffDepths, DiffRecording};
use mergebook::service::{Listeners, Service};
use mergebook::sim::Simulator;
use mergebook::venue::{SnapshotSource, StreamKind, VenueId};
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// A venue's recording, by its file name in `tests/fixtures/<venue>/`: its non-empty lines.
pub fn frames(venue: VenueId, name: &str) -> Vec<String> {
    let path = format!(
        "{}/tests/fixtures/{venue}/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(str::to_owned)
        .collect()
}

/// The service on the simulator with `config`'s one instrument, its markets starting
/// around `price`, and its first summary with every one of `venues` synced (the simulator
/// and the service are returned to keep them running).
pub async fn first_synced_summary(
    config: TestConfig,
    price: &str,
    venues: &[VenueId],
) -> (Simulator, Service, Summary) {
    let simulator =
        Simulator::start(TcpListener::bind("127.0.0.1:0").await.unwrap(), 50, 5).unwrap();
    let mut config = config.build();
    simulator.point(&mut config);
    let instrument = config.instruments[0].name.clone();
    simulator.set_prices(&config, &[(instrument, price.parse().unwrap())]);
    let service = Service::start(config, Listeners::loopback().await.unwrap()).unwrap();
    let mut summaries = service.summaries(0);
    let synced = |summary: &Arc<Summary>| {
        venues
            .iter()
            .all(|&venue| summary.venue_state(venue) == VenueState::Synced)
    };
    let summary = **tokio::time::timeout(WAIT, summaries.wait_for(synced))
        .await
        .expect("every venue synced")
        .unwrap();
    (simulator, service, summary)
}

/// A book's bids and asks, best first.
pub type Sides = (Vec<Level>, Vec<Level>);

/// Replays `frames` of `venue` through mergebook (the live reader's rules) as subscribed
/// at `snapshot_depth`: every summary's book of the venue (`None` while it is not
/// synced), and the book's statistics.
pub fn replay(
    venue: VenueId,
    frames: &[String],
    depth: usize,
    snapshot_depth: usize,
) -> (Vec<Option<Sides>>, replay::DiffStats) {
    let recorded = frames
        .iter()
        .enumerate()
        .map(|(index, raw)| RecordedFrame {
            received_ns: index as u64,
            raw: raw.clone(),
            rest_url: None,
        })
        .collect();
    let recordings = [DiffRecording {
        venue,
        frames: recorded,
        symbols: Vec::new(),
    }];
    let mut plan = replay::plan_diff(&recordings, 5000).unwrap();
    let depths = DiffDepths {
        depth,
        max_levels: 5000,
        snapshot_depth,
    };
    let mut published = Vec::new();
    let levels = |merged: &[MergedLevel]| -> Vec<Level> {
        merged
            .iter()
            .map(|level| Level {
                price: level.price,
                amount: level.amount,
            })
            .collect()
    };
    replay::replay_diff(
        &recordings,
        &mut plan,
        depths,
        |_, summary| {
            let synced = summary.venue_state(venue) == VenueState::Synced;
            let book = (
                levels(summary.book.bids.as_slice()),
                levels(summary.book.asks.as_slice()),
            );
            published.push(synced.then_some(book));
        },
        |_, frame, error| panic!("frame {frame}: {error}"),
    );
    let stats = plan.books.first().map(|book| book.stats);
    (published, stats.unwrap_or_default())
}

pub const WAIT: Duration = Duration::from_secs(20);
pub const DEPTH: usize = 10;

/// The service on the simulator, reading two of `venue`'s symbols: `symbol` (instrument
/// 0, whose books are checked) and `other` (instrument 1), on one connection.
pub struct Harness {
    pub venue: VenueId,
    /// Diff mode, or snapshot mode (top-N books a frame).
    pub mode: StreamKind,
    pub symbol: &'static str,
    /// The second instrument's symbol.
    pub other: &'static str,
    pub simulator: Simulator,
    pub service: Service,
}

impl Harness {
    /// In diff mode.
    pub async fn start(venue: VenueId, symbol: &'static str, other: &'static str) -> Harness {
        Harness::start_in(StreamKind::Diff, venue, symbol, other, |config| config).await
    }

    /// In `mode`, `configure` adding to the configuration.
    pub async fn start_in(
        mode: StreamKind,
        venue: VenueId,
        symbol: &'static str,
        other: &'static str,
        configure: impl FnOnce(TestConfig) -> TestConfig,
    ) -> Harness {
        let simulator =
            Simulator::start(TcpListener::bind("127.0.0.1:0").await.unwrap(), 50, 5).unwrap();
        // An instrument is named by its symbol, less a market's prefix's ':'.
        let (name, other_name) = (symbol.replace(':', "-"), other.replace(':', "-"));
        // An inverse contract merges only where amounts are notionals: such an instrument
        // counts USD, a contract worth one, so that its merged amounts are the venue's own.
        // A linear contract is one coin, for the same reason.
        let streams = venue.streams();
        let notional = |config: TestConfig, symbol: &str| match (
            streams.inverse(symbol),
            streams.sized_in_contracts(symbol),
        ) {
            (true, _) => config
                .last_instrument("currency", "USD")
                .last_instrument(&format!("quotes.{venue}"), "USD")
                .last_instrument("unit", "quote")
                .contract_size(venue, "1"),
            (false, true) => config.contract_size(venue, "1"),
            (false, false) => config,
        };
        let config = TestConfig::new()
            .set("service.depth", DEPTH as i64)
            .set("feed.read_idle_timeout_ms", 800)
            .set("feed.connect_timeout_ms", 1000)
            .set("feed.backoff_initial_ms", 20)
            .set("feed.backoff_max_ms", 200)
            .instrument(&name, &[(venue, symbol)]);
        let config = notional(config, symbol).instrument(&other_name, &[(venue, other)]);
        let mut config = notional(config, other);
        if mode == StreamKind::Diff {
            config = config
                .set(&format!("venues.{venue}.mode"), "diff")
                .set(&format!("venues.{venue}.snapshot_spacing_ms"), 20)
                .set(&format!("venues.{venue}.snapshot_timeout_ms"), 1000);
            // An in-band venue's resubscriptions paced by spacing alone: at Bitget's 240
            // subscriptions an hour (its weight), a test's few would take minutes.
            if venue.facts().snapshots == SnapshotSource::InBand {
                config = config.set(
                    &format!("venues.{venue}.snapshot_weight_per_minute"),
                    1_000_000,
                );
            }
        }
        // Pings every 100 ms, where the venue takes them.
        if venue.streams().client_ping().is_some() {
            config = config.set(&format!("venues.{venue}.ping_interval_ms"), 100);
        }
        // A key file, where the venue's market data needs one (the simulator checks it is
        // sent).
        if venue.facts().credentials.upgrade_header().is_some() {
            let key_file = super::api_key_file(venue).display().to_string();
            config = config.set(&format!("venues.{venue}.api_key_file"), key_file);
        }
        let mut config = configure(config).build();
        simulator.point(&mut config);
        let service = Service::start(config, Listeners::loopback().await.unwrap()).unwrap();
        Harness {
            venue,
            mode,
            symbol,
            other,
            simulator,
            service,
        }
    }

    pub fn summaries(&self) -> watch::Receiver<Arc<Summary>> {
        self.service.summaries(0)
    }

    pub async fn wait_for(&self, what: &str, accept: impl Fn(&Summary) -> bool) {
        let mut summaries = self.summaries();
        let found = tokio::time::timeout(WAIT, summaries.wait_for(|s| accept(s))).await;
        assert!(
            found.is_ok_and(|found| found.is_ok()),
            "{what}: not within {WAIT:?}"
        );
    }

    pub async fn synced(&self) {
        let venue = self.venue;
        self.wait_for("synced", |s| s.venue_state(venue) == VenueState::Synced)
            .await;
    }

    /// Both of the venue's books synced in the reader (its state gauges: a summary may
    /// still show a state the reader has left); `when` names the moment in a failure.
    pub async fn both_books_synced(&self, when: &str) {
        let venue = self.venue;
        let state_gauge = format!(r#"orderbook_venue_state{{exchange="{venue}","#);
        let what = format!("{when}: both books synced");
        super::eventually(&what, WAIT, || {
            let exposition = self.service.metrics().render();
            let synced = exposition.lines().filter(|line| {
                line.starts_with(&state_gauge) && line.ends_with(r#"state="synced"} 1"#)
            });
            synced.count() == 2
        })
        .await;
    }

    /// The series of the venue's subscriptions made again for silence.
    fn silent_resubscriptions(&self) -> String {
        let venue = self.venue;
        format!(r#"orderbook_silent_resubscriptions_total{{exchange="{venue}"}}"#)
    }

    /// The series of the venue's connections recycled for silence.
    fn idle_timeouts(&self) -> String {
        let venue = self.venue;
        format!(r#"orderbook_connection_errors_total{{exchange="{venue}",reason="idle_timeout"}}"#)
    }

    pub fn metric(&self, series: &str) -> f64 {
        super::service_metric(&self.service, series)
    }

    pub async fn counted(&self, series: &str, at_least: f64) {
        let what = format!("{series} >= {at_least}");
        super::eventually(&what, WAIT, || self.metric(series) >= at_least).await;
    }

    /// A venue without a sequence sees a lost update only as a crossing: `crossing` (an
    /// update whose bid is above the best ask) takes the book out of sync, counted, and it
    /// is subscribed again and synced from the new snapshot; so is a frame that does not
    /// decode (it may have been any book's).
    pub async fn a_crossing_or_a_bad_frame_resubscribes(&self, crossing: &str) {
        let venue = self.venue;
        let resubscriptions_series =
            format!(r#"orderbook_snapshot_requests_total{{exchange="{venue}",outcome="used"}}"#);
        let resubscriptions = self.metric(&resubscriptions_series);
        self.simulator.send_raw(venue, crossing);
        let crossed = format!(r#"orderbook_resyncs_total{{exchange="{venue}",reason="crossed"}}"#);
        self.counted(&crossed, 1.0).await;
        self.counted(&resubscriptions_series, resubscriptions + 1.0)
            .await;
        self.synced().await;
        self.books_stay_true_for(Duration::from_millis(300)).await;
        self.simulator.send_raw(venue, "\u{1}garbage");
        self.counted(&resubscriptions_series, resubscriptions + 2.0)
            .await;
        self.synced().await;
    }

    /// `error` refuses a subscription: an error the operator sees, counted.
    pub async fn a_refusal_is_counted(&self, error: &str) {
        let venue = self.venue;
        let refused = format!(
            r#"orderbook_connection_errors_total{{exchange="{venue}",reason="subscription_refused"}}"#
        );
        let before = self.metric(&refused);
        self.simulator.send_raw(venue, error);
        self.counted(&refused, before + 1.0).await;
    }

    /// Silence (no data, no heartbeats) is a dead connection: at the read-idle timeout
    /// the subscription is made again, at the next the connection is recycled (counted),
    /// the venue shown connecting, and once the venue speaks again it is connected anew,
    /// subscribed and synced.
    pub async fn silence_recycles_the_connection(&self) {
        let venue = self.venue;
        let connections = self.simulator.connections(venue);
        self.simulator.pause(venue, true);
        let idle_timeouts = self.idle_timeouts();
        self.counted(&idle_timeouts, 1.0).await;
        let resubscriptions = self.silent_resubscriptions();
        assert!(
            self.metric(&resubscriptions) >= 1.0,
            "subscribed again first"
        );
        self.wait_for("connecting again", |s| {
            s.venue_state(venue) == VenueState::Connecting
        })
        .await;
        self.simulator.pause(venue, false);
        self.synced().await;
        assert!(self.simulator.connections(venue) > connections);
    }

    /// A subscription that goes silent while the venue's book keeps changing (its events
    /// lost; the connection, its pings and the venue's heartbeats go on) is subscribed
    /// again at the read-idle allowance, on the same connection. A diff book is rebuilt
    /// from a new snapshot: the events lost need not show on its stream (Bitstamp's and
    /// Coinbase Exchange's carry no id), and a heartbeat is no book's data.
    pub async fn a_silenced_subscription_is_revived_without_its_gap(&self) {
        let venue = self.venue;
        let resubscriptions = self.silent_resubscriptions();
        let silence_resyncs =
            format!(r#"orderbook_resyncs_total{{exchange="{venue}",reason="silence"}}"#);
        let (resubscribed, resynced) =
            (self.metric(&resubscriptions), self.metric(&silence_resyncs));
        let connections = self.simulator.connections(venue);
        self.simulator.drop_subscriptions(venue);
        self.counted(&resubscriptions, resubscribed + 1.0).await;
        if self.mode == StreamKind::Diff {
            self.counted(&silence_resyncs, resynced + 1.0).await;
        }
        self.synced().await;
        assert_eq!(
            self.simulator.connections(venue),
            connections,
            "revived on its connection"
        );
    }

    /// A quiet book (its market does not change: no event comes) among a live one on the
    /// same connection: subscribed again at the read-idle allowance, and again after
    /// twice that, its book rebuilt and published from the snapshot alone each time; the
    /// connection is kept. (Where the venue puts the two books on connections of their own,
    /// nothing tells a quiet book alone on its connection from a dead one: not run.)
    pub async fn a_quiet_book_keeps_its_connection_and_is_published_from_its_snapshot(&self) {
        let venue = self.venue;
        let endpoint = |symbol: &str| venue.streams().endpoint("wss://venue", symbol);
        if endpoint(self.symbol) != endpoint(self.other) {
            return;
        }
        let resubscriptions = self.silent_resubscriptions();
        let idle_timeouts = self.idle_timeouts();
        let (resubscribed, timed_out) =
            (self.metric(&resubscriptions), self.metric(&idle_timeouts));
        let connections = self.simulator.connections(venue);
        assert!(
            self.simulator.quiet_book(venue, self.symbol, true),
            "a diff stream"
        );
        self.counted(&resubscriptions, resubscribed + 2.0).await;
        self.both_books_synced("the quiet book resubscribed twice")
            .await;
        assert_eq!(
            self.simulator.connections(venue),
            connections,
            "the connection kept"
        );
        assert_eq!(self.metric(&idle_timeouts), timed_out, "nothing recycled");
        self.simulator.quiet_book(venue, self.symbol, false);
    }

    /// A connection whose subscriptions all go dead, and stay dead when made again, while
    /// its pings and the venue's heartbeats go on: subscribed again at the read-idle
    /// allowance, recycled at the next (counted as an idle timeout), and synced on a new
    /// connection. Heartbeats keep no book alive.
    pub async fn a_connection_of_heartbeats_only_is_recycled(&self) {
        let venue = self.venue;
        let resubscriptions = self.silent_resubscriptions();
        let idle_timeouts = self.idle_timeouts();
        let (resubscribed, timed_out) =
            (self.metric(&resubscriptions), self.metric(&idle_timeouts));
        let connections = self.simulator.connections(venue);
        self.simulator.heartbeats_only(venue);
        self.counted(&resubscriptions, resubscribed + 1.0).await;
        self.counted(&idle_timeouts, timed_out + 1.0).await;
        super::eventually("connected again", WAIT, || {
            self.simulator.connections(venue) > connections
        })
        .await;
        self.synced().await;
    }

    /// `look` at the simulator's recent books of `symbol`, in place: its diff book after
    /// each event, or the books its snapshot stream sent.
    fn with_true_books<R>(&self, look: impl FnOnce(&[TopBook]) -> R) -> R {
        let venue = self.venue;
        match self.mode {
            StreamKind::Diff => self.simulator.with_diff_history(venue, self.symbol, look),
            StreamKind::Snapshots => {
                // The stream as the simulator names it: what it reads from the reader's
                // subscription.
                let streams = venue.streams();
                let stream = streams.stream_name(self.symbol, DEPTH);
                let request = &streams.subscribe_frames(&[stream], self.mode, DEPTH, 1)[0];
                let answer = venue.simulated().answer_request(&request.frame);
                let sent = answer.map(|answer| answer.subscribe).unwrap_or_default();
                assert_eq!(sent.len(), 1, "{venue}: one stream for {}", self.symbol);
                self.simulator.with_sent_books(venue, &sent[0], look)
            }
        }
    }

    /// The series counting the venue's resyncs for a gap.
    pub fn gaps(&self) -> String {
        let venue = self.venue;
        format!(r#"orderbook_resyncs_total{{exchange="{venue}",reason="gap"}}"#)
    }

    /// Both books synced and true, no gap; then one event of `symbol` lost (the simulator
    /// skips it): found by the venue's ids, counted as a gap, and that book alone rebuilt
    /// (one resync duration observed), both books true after.
    pub async fn a_lost_event_rebuilds_that_book_alone(&self, symbol: &str) {
        let venue = self.venue;
        self.both_books_synced("at the start").await;
        let checked = self.books_stay_true_for(Duration::from_millis(600)).await;
        assert!(checked > 0, "{venue}");
        assert_eq!(self.metric(&self.gaps()), 0.0, "{venue}: no gap");
        let rebuilds = || {
            self.metric(&format!(
                r#"orderbook_resync_duration_seconds_count{{exchange="{venue}"}}"#
            ))
        };
        let before = rebuilds();
        self.simulator.skip_events_of(venue, symbol, 1);
        self.counted(&self.gaps(), 1.0).await;
        // Each rebuild observes one resync duration: the broken book's, and no other.
        super::eventually("the broken book rebuilt", WAIT, || {
            rebuilds() - before >= 1.0
        })
        .await;
        self.synced().await;
        self.books_stay_true_for(Duration::from_millis(300)).await;
        assert_eq!(rebuilds() - before, 1.0, "{venue}: one book rebuilt");
        assert_eq!(self.metric(&self.gaps()), 1.0, "{venue}");
    }

    /// Every synced book seen for `period` is one the simulator's venue really had.
    pub async fn books_stay_true_for(&self, period: Duration) -> usize {
        self.books_stay_true_until(tokio::time::sleep(period)).await
    }

    /// Every synced book seen until `stop` is one the simulator's venue really had.
    pub async fn books_stay_true_until(
        &self,
        stop: impl std::future::Future<Output = ()>,
    ) -> usize {
        let mut summaries = self.summaries();
        let mut checked = 0;
        tokio::pin!(stop);
        loop {
            tokio::select! {
                () = &mut stop => break,
                changed = summaries.changed() => if changed.is_err() { break },
            }
            let summary = summaries.borrow_and_update().clone();
            if summary.venue_state(self.venue) != VenueState::Synced {
                continue;
            }
            let pairs = |levels: &[MergedLevel]| -> Vec<_> {
                levels.iter().map(|l| (l.price, l.amount)).collect()
            };
            let (bids, asks) = (
                pairs(summary.book.bids.as_slice()),
                pairs(summary.book.asks.as_slice()),
            );
            let side = |levels: &mergebook::book::Levels| -> Vec<_> {
                levels
                    .as_slice()
                    .iter()
                    .take(DEPTH)
                    .map(|l| (l.price, l.amount))
                    .collect()
            };
            // The venue's book at the summary's sequence where the history numbers its
            // books as the feed does; else any book the venue had.
            let sequence = summary.source_sequence[summary
                .source_of(self.venue)
                .expect("a venue of the instrument")];
            let is = |truth: &TopBook| side(&truth.bids) == bids && side(&truth.asks) == asks;
            let verdict = self.with_true_books(|truths| {
                if truths.is_empty() {
                    return Err(format!("no history of {}", self.symbol));
                }
                // (A snapshot stream numbers its books per connection: each connection's
                // book at that sequence is one the venue had.)
                let mut at_sequence = truths
                    .iter()
                    .filter(|truth| truth.venue_sequence == sequence)
                    .peekable();
                let numbered = at_sequence.peek().is_some();
                if numbered && !at_sequence.any(is) {
                    return Err(format!(
                        "not the venue's book at sequence {sequence}: {bids:?} {asks:?}"
                    ));
                }
                if !numbered && !truths.iter().any(is) {
                    return Err(format!("a book the venue never had: {bids:?} {asks:?}"));
                }
                Ok(())
            });
            if let Err(wrong) = verdict {
                panic!("{}: {wrong}", self.venue);
            }
            checked += 1;
        }
        checked
    }
}

/// A venue whose connections have a lifetime: the reader renews each first (here after a
/// second), a new connection syncing every book before the old one closes. In both modes
/// the venue has, through renewals, every summary after the first sync has the venue
/// synced, and every book is the simulator's.
pub async fn renewals_leave_no_gap(venue: VenueId, (symbol, other): (&'static str, &'static str)) {
    let facts = venue.facts();
    let modes = [
        (StreamKind::Diff, facts.diff_streams),
        (StreamKind::Snapshots, facts.snapshot_streams),
    ];
    for mode in modes
        .into_iter()
        .filter_map(|(mode, has)| has.then_some(mode))
    {
        let renew =
            |config: TestConfig| config.set(&format!("venues.{venue}.renew_after_ms"), 1000);
        let harness = Harness::start_in(mode, venue, symbol, other, renew).await;
        harness.both_books_synced("at the start").await;
        let mut summaries = harness.summaries();
        let watcher = tokio::spawn(async move {
            let mut states = Vec::new();
            while summaries.changed().await.is_ok() {
                states.push(summaries.borrow_and_update().venue_state(venue));
            }
            states
        });
        let connections = harness.simulator.connections(venue);
        let renewals = |outcome: &str| {
            format!(
                r#"orderbook_connection_renewals_total{{exchange="{venue}",outcome="{outcome}"}}"#
            )
        };
        harness.counted(&renewals("renewed"), 2.0).await;
        let checked = harness
            .books_stay_true_for(Duration::from_millis(300))
            .await;
        assert!(checked > 0, "{venue} {mode:?}");
        assert_eq!(harness.metric(&renewals("failed")), 0.0, "{venue} {mode:?}");
        harness.service.stop().await;
        let states = watcher.await.unwrap();
        assert!(
            states.len() > 20,
            "{venue} {mode:?}: {} summaries",
            states.len()
        );
        assert!(
            states.iter().all(|state| *state == VenueState::Synced),
            "{venue} {mode:?}: the venue left the merged book: {:?}",
            states
                .iter()
                .filter(|state| **state != VenueState::Synced)
                .collect::<Vec<_>>()
        );
        assert!(
            harness.simulator.connections(venue) >= connections + 2,
            "{venue} {mode:?}"
        );
    }
}
