//! Quotes and bands against the simulator during a busy market: both venues in diff
//! mode, their readers handing over their whole books; every answer checked against a
//! walk computed apart from the simulator's own books at the sequences the answer names,
//! every summary's bands against a count of those books.

use crate::common;
use common::config::TestConfig;

use mergebook::book::TopBook;
use mergebook::merger::summary::{Summary, VenueState};
use mergebook::publish::proto::{self, orderbook_aggregator_client::OrderbookAggregatorClient};
use mergebook::service::{Listeners, Service};
use mergebook::sim::Simulator;
use mergebook::venue::VenueId;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// Published levels a side: a quote that takes more of a venue's levels walked its
/// whole book.
const DEPTH: usize = 3;
/// Levels a side of each of the simulator's remembered tops: the reference's view.
const REMEMBERED: usize = 20;
const WAIT: Duration = Duration::from_secs(20);
const SCALE: u128 = 100_000_000;
/// Binance's fee, in basis points.
const BINANCE_FEE_BPS: u128 = 10;
/// Narrow bands: within the twenty levels the simulator remembers of each book.
const BANDS_BPS: [u16; 2] = [1, 2];
const SYMBOLS: [(VenueId, &str); 2] = [(VenueId::Binance, "ETHBTC"), (VenueId::Bitstamp, "ethbtc")];

/// A level of the reference: price and amount (raw) and its venue's index in `SYMBOLS`.
type Level = (u128, u128, usize);

/// The walk computed apart: the levels of both tops, Binance's net of its fee where
/// `all_in`, sorted as the merge sorts them (price, larger amount, venue), taken until
/// `quantity`. (filled, notional, worst price, levels taken by venue), or `None` where the
/// walk would reach past what the tops remember of a venue (the answer is then not
/// decided by them).
fn reference(
    tops: [&TopBook; 2],
    buy: bool,
    all_in: bool,
    quantity: u128,
) -> Option<(u128, u128, u128, [u32; 2])> {
    let mut levels: Vec<Level> = Vec::new();
    for (venue, top) in tops.iter().enumerate() {
        let side = if buy { &top.asks } else { &top.bids };
        for level in side.as_slice() {
            let price = u128::from(level.price.raw());
            let price = match (all_in && venue == 0, buy) {
                (false, _) => price,
                (true, true) => (price * (10_000 + BINANCE_FEE_BPS)).div_ceil(10_000),
                (true, false) => price * (10_000 - BINANCE_FEE_BPS) / 10_000,
            };
            levels.push((price, u128::from(level.amount.raw()), venue));
        }
    }
    levels.sort_by(|a, b| {
        let price = if buy { a.0.cmp(&b.0) } else { b.0.cmp(&a.0) };
        price.then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2))
    });
    let (mut filled, mut notional, mut worst, mut taken) = (0, 0, 0, [0u32; 2]);
    for (price, amount, venue) in levels {
        if filled == quantity {
            break;
        }
        // A venue's last remembered level taken: its next one, unremembered, might have
        // come before the next level here.
        if taken[venue] as usize + 1 >= REMEMBERED {
            return None;
        }
        let take = amount.min(quantity - filled);
        filled += take;
        notional += price * take;
        worst = price;
        taken[venue] += 1;
    }
    (filled == quantity).then_some((filled, notional, worst, taken))
}

/// Each band's (bid amount, bid notional, ask amount, ask notional), counted apart from
/// both venues' tops; `None` where a band reaches past what they remember.
fn bands_reference(tops: [&TopBook; 2], summary: &Summary) -> Option<Vec<[u128; 4]>> {
    let (bid, ask) = (summary.book.bids.best()?, summary.book.asks.best()?);
    let mids = u128::from(bid.price.raw()) + u128::from(ask.price.raw());
    let mut bands = Vec::new();
    for bp in BANDS_BPS.map(u128::from) {
        let mut band = [0u128; 4];
        for top in tops {
            let bids = top.bids.as_slice();
            let asks = top.asks.as_slice();
            let bid_within = |p: u128| 2 * p * 10_000 >= mids * (10_000 - bp);
            let ask_within = |p: u128| 2 * p * 10_000 <= mids * (10_000 + bp);
            let last = |levels: &[mergebook::book::Level]| -> Option<u128> {
                Some(u128::from(levels.last()?.price.raw()))
            };
            if last(bids).is_none_or(bid_within) || last(asks).is_none_or(ask_within) {
                return None;
            }
            for level in bids
                .iter()
                .filter(|l| bid_within(u128::from(l.price.raw())))
            {
                band[0] += u128::from(level.amount.raw());
                band[1] += u128::from(level.amount.raw()) * u128::from(level.price.raw());
            }
            for level in asks
                .iter()
                .filter(|l| ask_within(u128::from(l.price.raw())))
            {
                band[2] += u128::from(level.amount.raw());
                band[3] += u128::from(level.amount.raw()) * u128::from(level.price.raw());
            }
        }
        bands.push(band);
    }
    Some(bands)
}

fn raw(text: &str, decimals: usize) -> u128 {
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let fraction = format!("{fraction:0<decimals$}");
    whole.parse::<u128>().unwrap() * 10u128.pow(decimals as u32) + fraction.parse::<u128>().unwrap()
}

async fn start() -> (Simulator, Service, std::net::SocketAddr) {
    let simulator =
        Simulator::start(TcpListener::bind("127.0.0.1:0").await.unwrap(), 50, 13).unwrap();
    let mut config = TestConfig::new()
        .set("service.depth", DEPTH as i64)
        .set("feed.backoff_initial_ms", 20)
        .set("feed.backoff_max_ms", 200)
        .set("venues.binance.mode", "diff")
        .set("venues.binance.snapshot_spacing_ms", 20)
        .set("venues.binance.taker_fee_bps", BINANCE_FEE_BPS.to_string())
        .set("venues.bitstamp.mode", "diff")
        .set("venues.bitstamp.snapshot_spacing_ms", 20)
        .set("service.bands_bps", BANDS_BPS.map(i64::from).to_vec())
        .instrument("ETH/BTC", &SYMBOLS)
        .build();
    simulator.point(&mut config);
    let listeners = Listeners::loopback().await.unwrap();
    let grpc = listeners.grpc.local_addr().unwrap();
    let service = Service::start(config, listeners).unwrap();
    (simulator, service, grpc)
}

async fn both_synced(summaries: &mut watch::Receiver<Arc<Summary>>) -> Arc<Summary> {
    let synced = |summary: &Summary| {
        SYMBOLS
            .iter()
            .all(|(venue, _)| summary.venue_state(*venue) == VenueState::Synced)
    };
    let waited = tokio::time::timeout(WAIT, summaries.wait_for(|s| synced(s))).await;
    waited.expect("both venues synced").unwrap().clone()
}

/// Twenty quotes while the venues' books move, buys and sells, all-in and not, each the
/// size of a venue's first six levels: each answer equals the walk of the simulator's books at
/// the sequences it names, and names a summary that was published; quotes take more of a
/// venue's levels than the summaries publish (its whole book walked). Each summary's bands
/// equal a count of its books, where they lie within what the simulator remembers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quotes_and_bands_in_a_busy_market_equal_the_books_they_name() {
    let (simulator, service, grpc) = start().await;
    let mut summaries = service.summaries(0);
    both_synced(&mut summaries).await;
    let mut client = OrderbookAggregatorClient::connect(format!("http://{grpc}"))
        .await
        .unwrap();
    let (mut decided, mut beyond_published, mut bands_decided) = (0, 0, 0);
    for round in 0..20 {
        // Each quote on books the market has moved since the last.
        summaries.borrow_and_update();
        let moved = tokio::time::timeout(WAIT, summaries.changed()).await;
        moved.expect("the market moves").unwrap();
        let summary = both_synced(&mut summaries).await;
        let (buy, all_in) = (round % 2 == 0, round % 4 < 2);
        // The summary's bands: its books' counts.
        let summary_tops: Vec<TopBook> = SYMBOLS
            .iter()
            .map(|&(venue, symbol)| {
                let sequence = summary.venue_sequence(venue);
                let top = simulator.with_diff_history(venue, symbol, |truths| {
                    truths
                        .iter()
                        .find(|top| top.venue_sequence == sequence)
                        .copied()
                });
                top.unwrap_or_else(|| panic!("{venue} had no book {sequence}"))
            })
            .collect();
        assert!(summary.bands.full_depth);
        if let Some(expected) = bands_reference([&summary_tops[0], &summary_tops[1]], &summary) {
            let bands: Vec<[u128; 4]> = summary
                .bands
                .each()
                .map(|(_, bids, asks)| [bids.amount, bids.notional, asks.amount, asks.notional])
                .collect();
            assert_eq!(
                bands, expected,
                "round {round}'s summary {}",
                summary.sequence
            );
            bands_decided += 1;
        }
        // What the first six levels of the thinner venue's side hold, in the summary's
        // books: more than the published three of one venue, and well within the twenty
        // the simulator remembers of each, as the books move a little before the quote.
        let quantity = summary_tops
            .iter()
            .map(|top| {
                let side = if buy { &top.asks } else { &top.bids };
                let first = side.as_slice().iter().take(6);
                first
                    .map(|level| u128::from(level.amount.raw()))
                    .sum::<u128>()
            })
            .min()
            .expect("two venues");
        let quantity_text = format!("{}.{:08}", quantity / SCALE, quantity % SCALE);
        let request = proto::QuoteRequest {
            instrument: "ETH/BTC".into(),
            side: if buy {
                proto::quote_request::Side::Buy
            } else {
                proto::quote_request::Side::Sell
            } as i32,
            quantity: quantity_text,
            notional: String::new(),
            all_in,
        };
        let reply = client.quote(request).await.unwrap().into_inner();
        assert!(
            reply.seq >= summary.sequence,
            "a summary at least as new as the one seen"
        );
        // The merger published it before it answered; the fan-out hands it on (or a newer
        // one) in its own time.
        let published = summaries.wait_for(|latest| latest.sequence >= reply.seq);
        tokio::time::timeout(WAIT, published)
            .await
            .expect("the quote's summary")
            .unwrap();
        assert_eq!(reply.all_in, all_in);
        let mut tops = Vec::new();
        for ((venue, symbol), fill) in SYMBOLS.iter().zip(&reply.venues) {
            assert!(fill.merged && fill.full_depth, "{venue}: {fill:?}");
            let top = simulator.with_diff_history(*venue, symbol, |truths| {
                truths
                    .iter()
                    .find(|top| top.venue_sequence == fill.book_seq)
                    .copied()
            });
            tops.push(top.unwrap_or_else(|| panic!("{venue} had no book {}", fill.book_seq)));
        }
        let Some((filled, notional, worst, taken)) =
            reference([&tops[0], &tops[1]], buy, all_in, quantity)
        else {
            continue;
        };
        decided += 1;
        assert_eq!(raw(&reply.filled, 8), filled, "round {round}");
        assert_eq!(raw(&reply.notional, 16), notional, "round {round}");
        assert_eq!(raw(&reply.worst_price, 8), worst, "round {round}");
        assert!(!reply.depth_exhausted);
        let average = raw(&reply.average_price, 8);
        match buy {
            true => assert_eq!(average, notional.div_ceil(filled)),
            false => assert_eq!(average, notional / filled),
        }
        let levels: Vec<u32> = reply.venues.iter().map(|fill| fill.levels).collect();
        assert_eq!(levels, taken, "round {round}");
        beyond_published += taken.iter().filter(|&&n| n as usize > DEPTH).count();
    }
    assert!(
        decided >= 15,
        "only {decided} of 20 quotes within what the tops remember"
    );
    assert!(
        beyond_published > 0,
        "no quote took more than a venue's published levels"
    );
    assert!(
        bands_decided >= 15,
        "only {bands_decided} of 20 summaries' bands decided"
    );

    // What cannot be quoted is refused by name.
    let refused = client
        .quote(proto::QuoteRequest {
            instrument: "ETH/BTC".into(),
            side: proto::quote_request::Side::Buy as i32,
            quantity: "1".into(),
            notional: "1".into(),
            all_in: false,
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    assert_eq!(refused.message(), "set one of quantity and notional");
    let refused = client
        .quote(proto::QuoteRequest {
            instrument: "ETH/BTC".into(),
            quantity: "1".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(refused.message(), "side: BUY or SELL");
    let refused = client
        .quote(proto::QuoteRequest {
            instrument: "ETH/BTC".into(),
            side: proto::quote_request::Side::Sell as i32,
            quantity: "0.000000001".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::InvalidArgument);
    let missing = client
        .quote(proto::QuoteRequest {
            instrument: "XRP/EUR".into(),
            side: proto::quote_request::Side::Sell as i32,
            quantity: "1".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), tonic::Code::NotFound);
    service.stop().await;
}
