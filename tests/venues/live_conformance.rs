//! What every venue's feed does end to end, over one row a venue and mode: the service
//! reads two of the venue's symbols from the simulator (`in_band::Harness`), in diff mode
//! where the venue has diff streams and in snapshot mode where it has top-N streams. Each row goes through the
//! faults of docs/reliability.md's table that the venue can meet, every summary meanwhile
//! checked against the merged book's invariants (nothing of a venue that is not synced,
//! nothing crossed or stale). After each fault the venue's books are compared with the
//! simulator's true ones; at the end of the row, the connections it opened and the
//! snapshots it asked for are checked against the venue's budgets.
//! A venue or mode without a row fails `every_venue_and_mode_has_a_live_row`.

use crate::common::config::TestConfig;
use crate::common::in_band::{Harness, WAIT};
use mergebook::config::defaults;
use mergebook::sim::SnapshotFailure;
use mergebook::venue::{SnapshotSource, StreamKind, VenueId};
use mergebook_testkit::invariants::InvariantChecker;
use std::time::{Duration, Instant};

/// What a row needs of its venue: the two symbols it is read with, its refusal of a
/// subscription and its answer to subscriptions over its rate, as the venue writes them
/// (docs/protocols.md).
pub struct VenueRow {
    pub symbols: (&'static str, &'static str),
    pub refusal: &'static str,
    pub over_rate: Option<OverRate>,
}

/// What a venue does to a connection that subscribes faster than it allows.
#[derive(Clone, Copy)]
pub enum OverRate {
    /// It answers with this error (Kraken: the error text is docs/protocols.md's, in the
    /// answer form of its other subscription errors).
    Answers(&'static str),
    /// It drops the connection without a word (Binance).
    Disconnects,
}

/// Every venue's row: a venue the registry gains does not compile here until it has one.
fn venue_row(venue: VenueId) -> VenueRow {
    let row = |symbols, refusal, over_rate| VenueRow {
        symbols,
        refusal,
        over_rate,
    };
    let binance_refusal = r#"{"code":2,"msg":"Invalid request: unknown stream","id":1}"#;
    match venue {
        VenueId::Binance | VenueId::BinanceSbe | VenueId::BinanceUsdm => row(
            ("BTCUSDT", "ETHUSDT"),
            binance_refusal,
            Some(OverRate::Disconnects),
        ),
        VenueId::BinanceCoinm => row(
            ("BTCUSD_PERP", "ETHUSD_PERP"),
            binance_refusal,
            Some(OverRate::Disconnects),
        ),
        VenueId::Bitstamp => row(
            ("btcusd", "ethusd"),
            r#"{"event":"bts:error","channel":"","data":{"code":null,"message":"Bad subscription string."}}"#,
            None,
        ),
        VenueId::Kraken => row(
            ("ETH/BTC", "BTC/USD"),
            r#"{"method":"subscribe","error":"Currency pair not supported","success":false,"time_in":"2026-11-28T12:00:00.000000Z","time_out":"2026-11-28T12:00:00.000100Z"}"#,
            Some(OverRate::Answers(
                r#"{"method":"subscribe","error":"EAPI:Rate limit exceeded","success":false,"time_in":"2026-11-28T12:00:00.000000Z","time_out":"2026-11-28T12:00:00.000100Z"}"#,
            )),
        ),
        VenueId::Bybit => row(
            ("BTCUSDT", "linear:ETHUSDT"),
            r#"{"success":false,"ret_msg":"error:handler not found,topic:orderbook.50.BTCUSDT","conn_id":"x","req_id":"1","op":"subscribe"}"#,
            None,
        ),
        VenueId::Okx => row(
            ("BTC-USDT", "ETH-USDT"),
            r#"{"id":"1","event":"error","code":"60012","msg":"Invalid request","connId":"a4d3ae55"}"#,
            None,
        ),
        VenueId::CoinbaseExchange => row(
            ("BTC-USD", "ETH-USD"),
            r#"{"type":"error","message":"Failed to subscribe","reason":"BTC-XYZ is not a valid product"}"#,
            None,
        ),
        VenueId::Coinbase => row(
            ("BTC-USD", "ETH-USD"),
            r#"{"type":"error","message":"authentication failure"}"#,
            None,
        ),
        VenueId::Gate | VenueId::GateFutures => row(
            ("BTC_USDT", "ETH_USDT"),
            r#"{"time":1789456896,"time_ms":1789456896882,"id":1,"conn_id":"bf37dda1698c8b1e","trace_id":"8d22020b2227c599fc38c061b09df478","channel":"spot.order_book_update","event":"subscribe","payload":["BTC_USDT","100ms"],"error":{"code":2,"message":"Alert sub BTC_USDT"},"result":{"status":"fail"}}"#,
            None,
        ),
        VenueId::Bitget | VenueId::BitgetFutures => row(
            ("BTCUSDT", "ETHUSDT"),
            r#"{"event":"error","arg":{"instType":"USDT-FUTURES","channel":"books","instId":"NOPEUSDT"},"code":30001,"msg":"instType:USDT-FUTURES,channel:books,instId:NOPEUSDT,precision:null doesn't exist","op":"subscribe"}"#,
            None,
        ),
        VenueId::Deribit => row(
            ("BTC_USDC-PERPETUAL", "ETH_USDC-PERPETUAL"),
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":13778,"message":"raw_subscriptions_not_available_for_unauthorized"},"usIn":1790133842785065,"usOut":1790133842785140,"usDiff":75,"testnet":false}"#,
            None,
        ),
        VenueId::Kucoin => row(
            ("BTC-USDT", "ETH-USDT"),
            r#"{"id":"1","type":"error","code":404,"data":"topic does not exist"}"#,
            None,
        ),
        VenueId::KucoinFutures => row(
            ("XBTUSDTM", "ETHUSDTM"),
            r#"{"id":"1","result":false,"reason":"symbols are not supported for topic obu"}"#,
            None,
        ),
        VenueId::Hyperliquid => row(
            ("BTC", "ETH"),
            r#"{"channel":"error","data":"Already subscribed: {\"type\":\"l2Book\",\"coin\":\"SOL\",\"nSigFigs\":null,\"mantissa\":null,\"fast\":false}"}"#,
            None,
        ),
    }
}

/// One test a venue and mode (run side by side by the test harness), and the list of
/// them.
macro_rules! live_rows {
    ($($test:ident => ($venue:ident, $mode:ident)),* $(,)?) => {
        const ROWS: &[(VenueId, StreamKind)] = &[$((VenueId::$venue, StreamKind::$mode)),*];
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                recovers_true_from_each_fault(VenueId::$venue, StreamKind::$mode).await;
            }
        )*
    };
}

live_rows! {
    binance_diff => (Binance, Diff),
    binance_snapshots => (Binance, Snapshots),
    binance_sbe_diff => (BinanceSbe, Diff),
    binance_sbe_snapshots => (BinanceSbe, Snapshots),
    bitstamp_diff => (Bitstamp, Diff),
    bitstamp_snapshots => (Bitstamp, Snapshots),
    kraken_diff => (Kraken, Diff),
    bybit_diff => (Bybit, Diff),
    okx_diff => (Okx, Diff),
    okx_snapshots => (Okx, Snapshots),
    coinbase_exchange_diff => (CoinbaseExchange, Diff),
    coinbase_diff => (Coinbase, Diff),
    hyperliquid_snapshots => (Hyperliquid, Snapshots),
    binance_usdm_diff => (BinanceUsdm, Diff),
    binance_usdm_snapshots => (BinanceUsdm, Snapshots),
    binance_coinm_diff => (BinanceCoinm, Diff),
    binance_coinm_snapshots => (BinanceCoinm, Snapshots),
    gate_diff => (Gate, Diff),
    gate_snapshots => (Gate, Snapshots),
    gate_futures_diff => (GateFutures, Diff),
    gate_futures_snapshots => (GateFutures, Snapshots),
    bitget_diff => (Bitget, Diff),
    bitget_snapshots => (Bitget, Snapshots),
    bitget_futures_diff => (BitgetFutures, Diff),
    bitget_futures_snapshots => (BitgetFutures, Snapshots),
    deribit_diff => (Deribit, Diff),
    deribit_snapshots => (Deribit, Snapshots),
    kucoin_diff => (Kucoin, Diff),
    kucoin_snapshots => (Kucoin, Snapshots),
    kucoin_futures_diff => (KucoinFutures, Diff),
    kucoin_futures_snapshots => (KucoinFutures, Snapshots),
}

#[test]
fn every_venue_and_mode_has_a_live_row() {
    for &venue in VenueId::ALL {
        let has = |mode| ROWS.contains(&(venue, mode));
        assert!(
            has(StreamKind::Diff) || !venue.facts().diff_streams,
            "{venue} has no diff-mode row"
        );
        assert!(
            has(StreamKind::Snapshots) || !venue.facts().snapshot_streams,
            "{venue} has no snapshot-mode row"
        );
    }
}

/// How long a venue's books are watched after each recovery, checked against its
/// simulated books, and how many are compared at least (watched longer if need be).
const WATCHED: Duration = Duration::from_millis(200);
const COMPARED: usize = 5;

/// The venues whose diff streams show a lost event by their ids or message numbers (the
/// others see one only as a crossing, or by their checksum).
const NUMBERED: [VenueId; 14] = [
    VenueId::Binance,
    VenueId::BinanceSbe,
    VenueId::BinanceUsdm,
    VenueId::BinanceCoinm,
    VenueId::Bybit,
    VenueId::Okx,
    VenueId::Coinbase,
    VenueId::Gate,
    VenueId::GateFutures,
    VenueId::Bitget,
    VenueId::BitgetFutures,
    VenueId::Deribit,
    VenueId::Kucoin,
    VenueId::KucoinFutures,
];

/// The venues whose diff streams carry the venue's checksum: always (Kraken), or in the
/// protocol's in-band form the simulator can serve (OKX until 2026), or in the form the
/// simulator serves (Bitget's, as until 2026).
const CHECKSUMMED: [VenueId; 4] = [
    VenueId::Kraken,
    VenueId::Okx,
    VenueId::Bitget,
    VenueId::BitgetFutures,
];

/// Arrivals closer than this to a budget's window still count as inside it: the venue
/// sees a connection some time after the reader began it, and the reader keeps the budget
/// by when it begins them.
const ARRIVAL_SLACK: Duration = Duration::from_millis(100);

/// At most `allowed` of `times` (sorted) fall in any window of `per`, less the slack.
fn within_budget(times: &[Instant], allowed: usize, per: Duration) -> Result<(), String> {
    let window = per.saturating_sub(ARRIVAL_SLACK);
    for (first, start) in times.iter().enumerate() {
        let inside = times[first..]
            .iter()
            .take_while(|&&at| at.duration_since(*start) < window)
            .count();
        if inside > allowed {
            return Err(format!("{inside} within {window:?}, {allowed} allowed"));
        }
    }
    Ok(())
}

#[test]
fn within_budget_counts_every_window() {
    let start = Instant::now();
    let at = |ms| start + Duration::from_millis(ms);
    let times = [at(0), at(500), at(950), at(1_000), at(1_900)];
    let second = Duration::from_secs(1);
    assert!(within_budget(&times, 3, second).is_ok());
    // 500, 950 and 1,000 fall within 900 ms: the window starting at the second time.
    assert!(within_budget(&times, 2, second).is_err());
    assert!(within_budget(&[], 0, second).is_ok());
}

/// One row: the venue in `mode` through each fault it can meet.
async fn recovers_true_from_each_fault(venue: VenueId, mode: StreamKind) {
    let stale_after = Duration::from_millis(defaults::STALE_AFTER_MS.default as u64);
    let row = venue_row(venue);
    // (fault, books compared with the simulator's after it).
    let mut table: Vec<(&str, usize)> = Vec::new();
    let mode_name = match mode {
        StreamKind::Diff => "diff",
        StreamKind::Snapshots => "snapshot",
    };
    // Snapshot backoffs short enough for a row to meet many in a row: each book lost soon
    // after its sync waits longer (`snapshot_retry_*`), and a row breaks books every few
    // seconds.
    let short_backoffs = |config: TestConfig| match mode {
        StreamKind::Diff => config
            .set(&format!("venues.{venue}.snapshot_retry_initial_ms"), 50)
            .set(&format!("venues.{venue}.snapshot_retry_max_ms"), 1000),
        StreamKind::Snapshots => config,
    };
    let (symbol, other) = row.symbols;
    let harness = Harness::start_in(mode, venue, symbol, other, short_backoffs).await;
    let mut summaries = harness.summaries();
    let checker = tokio::spawn(async move {
        let mut checker = InvariantChecker::new(stale_after);
        while summaries.changed().await.is_ok() {
            let summary = summaries.borrow_and_update().clone();
            if summary.sequence > 0 {
                checker.check(&summary);
            }
        }
        checker
    });
    harness.synced().await;
    let counter = |name: &str, reason: &str| format!(r#"{name}{{exchange="{venue}",{reason}}}"#);
    let mut recovered = async |fault: &'static str| {
        let what = format!("{venue} {mode_name}, after {fault}");
        harness.both_books_synced(&what).await;
        harness.synced().await;
        // At least `COMPARED` books, however slowly they come under load.
        let deadline = Instant::now() + WAIT;
        let mut checked = 0;
        while checked < COMPARED {
            assert!(
                Instant::now() < deadline,
                "{what}: {checked} books in {WAIT:?}"
            );
            checked += harness.books_stay_true_for(WATCHED).await;
        }
        // (Printed on a failure: how far the table got.)
        println!("{venue} {mode_name}: {fault}: {checked} books compared");
        table.push((fault, checked));
    };
    // Before a fault is injected: both books synced.
    let ready = async |fault: &str| {
        let what = format!("{venue} {mode_name}, before {fault}");
        harness.both_books_synced(&what).await;
    };
    let reconnected = async |connections: u64| {
        crate::common::eventually("connected again", WAIT, || {
            harness.simulator.connections(venue) > connections
        })
        .await;
    };

    // Every synced book the row publishes, whatever the fault, against the simulator's.
    let (row_done, done) = tokio::sync::oneshot::channel::<()>();
    let every_book = harness.books_stay_true_until(async {
        let _ = done.await;
    });
    let faults = async {
        // Counted; in diff mode every book of the connection rebuilt (the frame may have
        // been any of theirs).
        let decode_errors = format!(r#"orderbook_decode_errors_total{{exchange="{venue}"}}"#);
        let rebuilt = counter("orderbook_resyncs_total", r#"reason="decode_error""#);
        ready("a bad frame").await;
        let before = (harness.metric(&decode_errors), harness.metric(&rebuilt));
        harness.simulator.send_raw(venue, "\u{1}garbage");
        harness.counted(&decode_errors, before.0 + 1.0).await;
        if mode == StreamKind::Diff {
            harness.counted(&rebuilt, before.1 + 2.0).await;
        }
        recovered("bad frame").await;

        let connections = harness.simulator.connections(venue);
        harness.a_refusal_is_counted(row.refusal).await;
        reconnected(connections).await;
        recovered("subscription refused").await;

        let connections = harness.simulator.connections(venue);
        match row.over_rate {
            Some(OverRate::Answers(error)) => harness.a_refusal_is_counted(error).await,
            Some(OverRate::Disconnects) => harness.simulator.disconnect(venue),
            None => {}
        }
        if row.over_rate.is_some() {
            reconnected(connections).await;
            recovered("subscriptions over the venue's rate").await;
        }

        harness
            .a_silenced_subscription_is_revived_without_its_gap()
            .await;
        recovered("subscription silenced, market moving").await;

        if mode == StreamKind::Diff {
            harness
                .a_quiet_book_keeps_its_connection_and_is_published_from_its_snapshot()
                .await;
            recovered("a quiet book").await;
        }

        harness.a_connection_of_heartbeats_only_is_recycled().await;
        recovered("a connection of heartbeats only").await;

        if mode == StreamKind::Diff && NUMBERED.contains(&venue) {
            // Three lost events in a row, each found, and every book it broke rebuilt (each
            // rebuild is one resync duration observed) before the next is lost: one lost
            // while a book is rebuilt would be covered by its snapshot, and never seen.
            let gaps = counter("orderbook_resyncs_total", r#"reason="gap""#);
            let rebuilt =
                format!(r#"orderbook_resync_duration_seconds_count{{exchange="{venue}"}}"#);
            for _ in 0..3 {
                ready("a lost event").await;
                let (gaps_before, rebuilt_before) =
                    (harness.metric(&gaps), harness.metric(&rebuilt));
                harness.simulator.skip_events(venue, 1);
                harness.counted(&gaps, gaps_before + 1.0).await;
                let what = "every book the gap broke rebuilt";
                crate::common::eventually(what, WAIT, || {
                    let gapped = harness.metric(&gaps) - gaps_before;
                    harness.metric(&rebuilt) - rebuilt_before >= gapped
                })
                .await;
            }
            recovered("gap storm").await;
        }

        if mode == StreamKind::Diff && CHECKSUMMED.contains(&venue) {
            // A REST venue's stream carries checksums in its in-band form: served on a new
            // connection, then left on (its checksums verify as well as the REST form's
            // ids).
            if venue.facts().snapshots == SnapshotSource::Rest {
                let connections = harness.simulator.connections(venue);
                harness.simulator.serve_in_band_snapshots(venue, true);
                harness.simulator.disconnect(venue);
                reconnected(connections).await;
            }
            // Three wrong checksums in a row: the first is found, the book rebuilt.
            ready("wrong checksums").await;
            let mismatches = counter("orderbook_resyncs_total", r#"reason="checksum""#);
            let before = harness.metric(&mismatches);
            harness
                .simulator
                .corrupt_checksums(venue, harness.symbol, 3);
            harness.counted(&mismatches, before + 1.0).await;
            recovered("checksum storm").await;
            harness.simulator.serve_in_band_snapshots(venue, false);
        }

        if venue.simulated().reconnect_request().is_some() {
            let connections = harness.simulator.connections(venue);
            harness.simulator.request_reconnect(venue);
            reconnected(connections).await;
            recovered("reconnect notice").await;
        }

        if mode == StreamKind::Diff && venue.facts().snapshots == SnapshotSource::Rest {
            // The next snapshot request fails: counted, asked again (after the retry
            // backoff, or the venue's `Retry-After`), then the book syncs. A bad frame
            // makes the reader ask.
            let snapshots = |outcome: &str| {
                counter(
                    "orderbook_snapshot_requests_total",
                    &format!(r#"outcome="{outcome}""#),
                )
            };
            // (fault, the outcome counted, the next request's failure: none for a 429)
            let faults = [
                ("snapshot rate-limited (429)", "rate_limited", None),
                (
                    "snapshot answered 503",
                    "failed",
                    Some(SnapshotFailure::ServerError),
                ),
                (
                    "snapshot answered garbage",
                    "failed",
                    Some(SnapshotFailure::Garbage),
                ),
            ];
            for (fault, outcome, failure) in faults {
                ready(fault).await;
                let before = harness.metric(&snapshots(outcome));
                match failure {
                    Some(failure) => harness.simulator.fail_snapshots(venue, 1, failure),
                    None => harness.simulator.rate_limit_snapshots(venue, 1, 1),
                }
                harness.simulator.send_raw(venue, "\u{1}garbage");
                harness.counted(&snapshots(outcome), before + 1.0).await;
                recovered(fault).await;
            }
        }

        harness.silence_recycles_the_connection().await;
        recovered("silence").await;
        let _ = row_done.send(());
    };
    let (compared, ()) = tokio::join!(every_book, faults);
    println!("{venue} {mode_name}: {compared} books compared over the row");

    harness.service.stop().await;
    let budget = venue.facts().connect_budget;
    let connected = harness.simulator.connection_times(venue);
    if let Err(over) = within_budget(&connected, budget.attempts as usize, budget.per) {
        panic!("{venue} {mode_name}: connections over the venue's budget: {over}");
    }
    if let Some(budget) = venue.facts().rest_budget {
        let depth = defaults::SNAPSHOT_DEPTH.default as usize;
        let allowed = budget.weight / venue.snapshots().snapshot_weight(depth);
        let requests = harness.simulator.snapshot_requests(venue);
        if let Err(over) = within_budget(&requests, allowed as usize, budget.per) {
            panic!("{venue}: snapshot requests over the venue's REST budget: {over}");
        }
    }
    let checker = checker.await.unwrap();
    assert!(checker.checked > 0, "{venue}: no summary was published");
    assert!(
        checker.violations.is_empty(),
        "{venue} {mode_name}: {} summaries broke invariants, first: {}",
        checker.violations.len(),
        checker.violations[0]
    );
    // The rows of docs/reliability.md's table (`--nocapture`).
    for (fault, checked) in &table {
        println!("| {venue} | {mode_name} | {fault} | {checked} |");
    }
}
