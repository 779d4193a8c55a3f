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

use crate::common::in_band::Harness;
use mergebook::config::defaults;
use mergebook::venue::VenueId;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_venue_recovers_true_from_each_fault() {
    let stale_after = Duration::from_millis(defaults::STALE_AFTER_MS.default as u64);
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
        let mut checked_books = 0;

        let out_of_sync =
            format!(r#"orderbook_resyncs_total{{exchange="{venue}",reason="decode_error"}}"#);
        let before = harness.metric(&out_of_sync);
        harness.simulator.send_raw(venue, "\u{1}garbage");
        harness.counted(&out_of_sync, before + 1.0).await;
        harness.synced().await;
        checked_books += harness.books_stay_true_for(WATCHED).await;

        let connections = harness.simulator.connections(venue);
        harness.a_refusal_is_counted(row.refusal).await;
        crate::common::eventually("connected again", crate::common::in_band::WAIT, || {
            harness.simulator.connections(venue) > connections
        })
        .await;
        harness.synced().await;
        checked_books += harness.books_stay_true_for(WATCHED).await;

        harness
            .a_silenced_subscription_is_revived_without_its_gap()
            .await;
        checked_books += harness.books_stay_true_for(WATCHED).await;

        harness.silence_recycles_the_connection().await;
        checked_books += harness.books_stay_true_for(WATCHED).await;

        harness.service.stop().await;
        assert!(
            checked_books > 0,
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
}
