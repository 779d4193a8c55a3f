//! The generated protobuf types and gRPC stubs of `proto/orderbook.proto`: the wire
//! contract between the gRPC server (`publish/grpc.rs`), the NATS publisher and the
//! `watch` viewer, which is the server's client; and a [`summary::Summary`]'s messages.

use crate::book::Side;
use crate::fixed::FixedPoint;
use crate::merger::kway::MergedLevel;
use crate::merger::summary;

tonic::include_proto!("orderbook");

/// The encoded descriptors of `proto/orderbook.proto`, served by reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/orderbook_descriptor.bin"));

fn legacy_levels(levels: &[MergedLevel]) -> Vec<Level> {
    levels
        .iter()
        .map(|level| Level {
            exchange: level.venue.name().to_owned(),
            price: level.price.to_f64(),
            amount: level.amount.to_f64(),
        })
        .collect()
}

fn exact_levels(summary: &summary::Summary, side: Side) -> Vec<ExactLevel> {
    let levels = summary.book.side(side).as_slice().iter().enumerate();
    levels
        .map(|(at, level)| ExactLevel {
            exchange: level.venue.name().to_owned(),
            price: level.price.to_string(),
            amount: level.amount.to_string(),
            native_price: summary
                .native_price(side, at)
                .map(|price| price.to_string())
                .unwrap_or_default(),
        })
        .collect()
}

/// The legacy message: doubles. The spread of an empty side is 0.
pub fn legacy_summary(summary: &summary::Summary) -> Summary {
    Summary {
        spread: summary.book.spread.map_or(0.0, |spread| spread.to_f64()),
        bids: legacy_levels(summary.book.bids.as_slice()),
        asks: legacy_levels(summary.book.asks.as_slice()),
    }
}

pub fn exact_summary(instrument: &str, summary: &summary::Summary) -> ExactSummary {
    ExactSummary {
        instrument: instrument.to_owned(),
        seq: summary.sequence,
        ts_ns: summary.published_ns,
        spread: summary
            .book
            .spread
            .map(|spread| spread.to_string())
            .unwrap_or_default(),
        bids: exact_levels(summary, Side::Bid),
        asks: exact_levels(summary, Side::Ask),
        currency: summary
            .currency
            .map(|currency| currency.to_string())
            .unwrap_or_default(),
        amount_unit: summary
            .amount_unit
            .map(|unit| unit.to_string())
            .unwrap_or_default(),
        venues: summary
            .venue_states()
            .map(|(venue, state)| (venue.name().to_owned(), state.name().to_owned()))
            .collect(),
        venue_quotes: summary
            .venue_states()
            .map(|(venue, state)| {
                let best = summary.venue_best[venue.index()];
                let received = summary.venue_received_ns[venue.index()];
                let exact = |price: Option<FixedPoint>| price.map(|p| p.to_string());
                let applied = summary.venue_rate[venue.index()];
                let rate = applied.and_then(|applied| applied.rate);
                let currency = applied.map(|applied| applied.native).or(summary.currency);
                VenueQuote {
                    exchange: venue.name().to_owned(),
                    state: state.name().to_owned(),
                    best_bid: exact(best.bid).unwrap_or_default(),
                    best_ask: exact(best.ask).unwrap_or_default(),
                    book_age_ns: summary.age_ns(received),
                    currency: currency.map(|c| c.to_string()).unwrap_or_default(),
                    rate_pair: applied
                        .map(|applied| format!("{}/{}", applied.base, applied.quote))
                        .unwrap_or_default(),
                    rate_bid: exact(rate.map(|rate| rate.bid)).unwrap_or_default(),
                    rate_ask: exact(rate.map(|rate| rate.ask)).unwrap_or_default(),
                    rate_age_ns: rate.map_or(0, |rate| summary.age_ns(rate.received_ns)),
                }
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::merger::summary::AppliedRate;
    use crate::units::{Currency, Rate};
    use crate::venue::VenueId;

    /// A notional instrument's summary says its currency and amount unit, and a converted
    /// venue's level its native price, the venue its currency and rate.
    #[test]
    fn units_and_rates_reach_the_exact_summary() {
        let code = |text| Currency::parse(text).expect("a code");
        let decimal = |text: &str| text.parse::<FixedPoint>().expect("a decimal");
        let mut summary = summary::Summary {
            currency: Some(code("USD")),
            amount_unit: Some(code("USD")),
            ..summary::Summary::default()
        };
        summary.venues[VenueId::Binance.index()] = summary::VenueState::Synced;
        summary.venue_rate[VenueId::Binance.index()] = Some(AppliedRate {
            native: code("USDT"),
            base: code("USDT"),
            quote: code("USD"),
            rate: Some(Rate::fixed(decimal("1.0002"))),
        });
        summary.book.bids.push(MergedLevel {
            price: decimal("90018"),
            amount: decimal("90018"),
            venue: VenueId::Binance,
        });
        summary.native_prices.bids[0] = decimal("90000");
        let exact = exact_summary("BTC/USD-notional", &summary);
        assert_eq!(
            (exact.currency.as_str(), exact.amount_unit.as_str()),
            ("USD", "USD")
        );
        assert_eq!(exact.bids[0].native_price, "90000.00000000");
        let binance = &exact.venue_quotes[0];
        assert_eq!(
            (
                binance.currency.as_str(),
                binance.rate_pair.as_str(),
                binance.rate_bid.as_str()
            ),
            ("USDT", "USDT/USD", "1.00020000")
        );
    }
}
