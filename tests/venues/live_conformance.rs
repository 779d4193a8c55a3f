//! What every venue's feed does end to end, run over one row a venue: the service reads two
//! of the venue's symbols from the simulator in diff mode (`in_band::Harness`), and each
//! row goes through the same four faults, every summary meanwhile checked against the
//! merged book's invariants (nothing of a venue that is not synced, nothing crossed or
//! stale):
//! - a frame that does not decode takes every book of the connection out of sync (it may
//!   have been any of them), and they sync again;
//! - the venue's own refusal of a subscription ends the connection, counted, and a new
//!   one syncs;
//! - a subscription silenced while the venue's book keeps changing (its events lost,
//!   heartbeats going on) is subscribed again at the read-idle timeout and rebuilt from a
//!   new snapshot, never continued from the book with the gap;
//! - silence (no data, no heartbeat) is a dead connection: subscribed again at the
//!   read-idle timeout, recycled at the next, synced again once the venue speaks.
//!
//! After each, the venue's books are compared with the simulator's true ones.
//! A venue without a row fails `every_venue_has_a_live_row`.

use crate::common::in_band::{Harness, WAIT};
use mergebook::config::defaults;
use mergebook::venue::{SnapshotSource, VenueId};
use mergebook_testkit::invariants::InvariantChecker;
use std::time::Duration;

/// One venue's row: the two symbols it is read with, and its refusal of a subscription,
/// as the venue writes it (docs/protocols.md).
pub struct LiveRow {
    pub venue: VenueId,
    pub symbols: (&'static str, &'static str),
    pub refusal: &'static str,
}

fn rows() -> Vec<LiveRow> {
    let row = |venue, symbols, refusal| LiveRow {
        venue,
        symbols,
        refusal,
    };
    let binance_refusal = r#"{"code":2,"msg":"Invalid request: unknown stream","id":1}"#;
    vec![
        row(VenueId::Binance, ("BTCUSDT", "ETHUSDT"), binance_refusal),
        row(VenueId::BinanceSbe, ("BTCUSDT", "ETHUSDT"), binance_refusal),
        row(
            VenueId::Bitstamp,
            ("btcusd", "ethusd"),
            r#"{"event":"bts:error","channel":"","data":{"code":null,"message":"Bad subscription string."}}"#,
        ),
        row(
            VenueId::Kraken,
            ("ETH/BTC", "BTC/USD"),
            r#"{"method":"subscribe","error":"Currency pair not supported","success":false,"time_in":"2026-11-28T12:00:00.000000Z","time_out":"2026-11-28T12:00:00.000100Z"}"#,
        ),
        row(
            VenueId::Bybit,
            ("BTCUSDT", "linear:ETHUSDT"),
            r#"{"success":false,"ret_msg":"error:handler not found,topic:orderbook.50.BTCUSDT","conn_id":"x","req_id":"1","op":"subscribe"}"#,
        ),
        row(
            VenueId::Okx,
            ("BTC-USDT", "ETH-USDT"),
            r#"{"id":"1","event":"error","code":"60012","msg":"Invalid request","connId":"a4d3ae55"}"#,
        ),
        row(
            VenueId::CoinbaseExchange,
            ("BTC-USD", "ETH-USD"),
            r#"{"type":"error","message":"Failed to subscribe","reason":"BTC-XYZ is not a valid product"}"#,
        ),
        row(
            VenueId::Coinbase,
            ("BTC-USD", "ETH-USD"),
            r#"{"type":"error","message":"authentication failure"}"#,
        ),
    ]
}

#[test]
fn every_venue_has_a_live_row() {
    let rows = rows();
    for &venue in VenueId::ALL {
        assert!(
            rows.iter().any(|row| row.venue == venue),
            "{venue} has no live conformance row"
        );
    }
}

/// How long a venue's books are watched after each recovery, checked against its
/// simulated books.
const WATCHED: Duration = Duration::from_millis(200);

/// The venues whose diff streams show a lost event by their ids or message numbers (the
/// others see one only as a crossing, or by their checksum).
const NUMBERED: [VenueId; 5] = [
    VenueId::Binance,
    VenueId::BinanceSbe,
    VenueId::Bybit,
    VenueId::Okx,
    VenueId::Coinbase,
];

/// The venues whose diff streams in the simulator's form carry the venue's checksum.
const CHECKSUMMED: [VenueId; 1] = [VenueId::Kraken];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_venue_recovers_true_from_each_fault() {
    let stale_after = Duration::from_millis(defaults::STALE_AFTER_MS.default as u64);
    // (venue, fault, books compared with the simulator's after it).
    let mut table: Vec<(VenueId, &str, usize)> = Vec::new();
    for row in rows() {
        let venue = row.venue;
        let harness = Harness::start(venue, row.symbols.0, row.symbols.1).await;
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
        let counter =
            |name: &str, reason: &str| format!(r#"{name}{{exchange="{venue}",{reason}}}"#);
        // Both of the venue's books synced in the reader (its state gauges): a summary
        // may still show a state the reader has left.
        let state_gauge = format!(r#"orderbook_venue_state{{exchange="{venue}","#);
        let both_synced = || {
            let exposition = harness.service.metrics().render();
            let synced = exposition.lines().filter(|line| {
                line.starts_with(&state_gauge) && line.ends_with(r#"state="synced"} 1"#)
            });
            synced.count() == 2
        };
        let mut recovered = async |fault: &'static str| {
            crate::common::eventually("both books synced", WAIT, both_synced).await;
            harness.synced().await;
            let checked = harness.books_stay_true_for(WATCHED).await;
            table.push((venue, fault, checked));
        };

        let decode_errors = counter("orderbook_resyncs_total", r#"reason="decode_error""#);
        let before = harness.metric(&decode_errors);
        harness.simulator.send_raw(venue, "\u{1}garbage");
        harness.counted(&decode_errors, before + 1.0).await;
        recovered("bad frame").await;

        let connections = harness.simulator.connections(venue);
        harness.a_refusal_is_counted(row.refusal).await;
        crate::common::eventually("connected again", WAIT, || {
            harness.simulator.connections(venue) > connections
        })
        .await;
        recovered("subscription refused").await;

        harness
            .a_silenced_subscription_is_revived_without_its_gap()
            .await;
        recovered("subscription silenced, market moving").await;

        if NUMBERED.contains(&venue) {
            // Three lost events in a row, each found, and every book it broke rebuilt (each
            // rebuild is one resync duration observed) before the next is lost: one lost
            // while a book is rebuilt would be covered by its snapshot, and never seen.
            let gaps = counter("orderbook_resyncs_total", r#"reason="gap""#);
            let rebuilt =
                format!(r#"orderbook_resync_duration_seconds_count{{exchange="{venue}"}}"#);
            for _ in 0..3 {
                crate::common::eventually("both books synced", WAIT, both_synced).await;
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

        if CHECKSUMMED.contains(&venue) {
            let mismatches = counter("orderbook_resyncs_total", r#"reason="checksum""#);
            let before = harness.metric(&mismatches);
            harness
                .simulator
                .corrupt_checksums(venue, harness.symbol, 3);
            harness.counted(&mismatches, before + 1.0).await;
            recovered("checksum storm").await;
        }

        if venue.simulated().reconnect_request().is_some() {
            let connections = harness.simulator.connections(venue);
            harness.simulator.request_reconnect(venue);
            crate::common::eventually("reconnected", WAIT, || {
                harness.simulator.connections(venue) > connections
            })
            .await;
            recovered("reconnect notice").await;
        }

        if venue.facts().snapshots == SnapshotSource::Rest {
            // The next snapshot request is answered 429: honoured, then the book syncs.
            let limited = counter(
                "orderbook_snapshot_requests_total",
                r#"outcome="rate_limited""#,
            );
            let before = harness.metric(&limited);
            harness.simulator.rate_limit_snapshots(venue, 1, 1);
            harness.simulator.send_raw(venue, "\u{1}garbage");
            harness.counted(&limited, before + 1.0).await;
            recovered("snapshot rate-limited (429)").await;
        }

        harness.silence_recycles_the_connection().await;
        recovered("silence").await;

        harness.service.stop().await;
        let checked: usize = table
            .iter()
            .filter(|(of, _, _)| *of == venue)
            .map(|(_, _, checked)| checked)
            .sum();
        assert!(
            checked > 0,
            "{venue}: no synced book was compared with the simulator's"
        );
        let checker = checker.await.unwrap();
        assert!(checker.checked > 0, "{venue}: no summary was published");
        assert!(
            checker.violations.is_empty(),
            "{venue}: {} summaries broke invariants, first: {}",
            checker.violations.len(),
            checker.violations[0]
        );
    }
    // The table docs/reliability.md shows (`--nocapture`).
    println!("| venue | fault | books compared after it |\n|---|---|---|");
    for (venue, fault, checked) in &table {
        println!("| {venue} | {fault} | {checked} |");
    }
}
