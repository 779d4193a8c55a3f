//! The generated protobuf types and gRPC stubs of `proto/orderbook.proto`: the wire
//! contract between the gRPC server (`publish/grpc.rs`), the NATS publisher and the
//! `watch` viewer, which is the server's client; and a [`summary::Summary`]'s messages.

use crate::book::Side;
use crate::config::Instrument;
use crate::fixed::FixedPoint;
use crate::merger::kway::MergedLevel;
use crate::merger::{quote, summary};

tonic::include_proto!("orderbook");

/// The encoded descriptors of `proto/orderbook.proto`, served by reflection.
pub const FILE_DESCRIPTOR_SET: &[u8] =
    include_bytes!(concat!(env!("OUT_DIR"), "/orderbook_descriptor.bin"));

fn legacy_levels(names: &[String], levels: &[MergedLevel]) -> Vec<Level> {
    levels
        .iter()
        .map(|level| Level {
            exchange: names[usize::from(level.source)].clone(),
            price: level.price.to_f64(),
            amount: level.amount.to_f64(),
        })
        .collect()
}

/// The all-in book's levels of `side`: net prices, no native ones.
fn all_in_levels(names: &[String], summary: &summary::Summary, side: Side) -> Vec<ExactLevel> {
    let levels = summary.all_in_book().side(side).as_slice().iter();
    levels
        .map(|level| ExactLevel {
            exchange: names[usize::from(level.source)].clone(),
            price: level.price.to_string(),
            amount: level.amount.to_string(),
            native_price: String::new(),
        })
        .collect()
}

fn exact_levels(names: &[String], summary: &summary::Summary, side: Side) -> Vec<ExactLevel> {
    let levels = summary.book.side(side).as_slice().iter().enumerate();
    levels
        .map(|(at, level)| ExactLevel {
            exchange: names[usize::from(level.source)].clone(),
            price: level.price.to_string(),
            amount: level.amount.to_string(),
            native_price: summary
                .native_price(side, at)
                .map(|price| price.to_string())
                .unwrap_or_default(),
        })
        .collect()
}

/// The legacy message of `summary`, a summary of `instrument`: doubles. The spread of an
/// empty side is 0. A level's `exchange` is its book's name (`Instrument::source_names`).
pub fn legacy_summary(instrument: &Instrument, summary: &summary::Summary) -> Summary {
    let names = &instrument.source_names;
    Summary {
        spread: summary.book.spread.map_or(0.0, |spread| spread.to_f64()),
        bids: legacy_levels(names, summary.book.bids.as_slice()),
        asks: legacy_levels(names, summary.book.asks.as_slice()),
    }
}

/// `summary`, a summary of `instrument`, exactly, and its all-in book where `all_in`
/// asks for it. Its books are named as the instrument names them
/// (`Instrument::source_names`).
pub fn exact_summary(
    instrument: &Instrument,
    summary: &summary::Summary,
    all_in: bool,
) -> ExactSummary {
    let names = &instrument.source_names;
    let all_in_side = |side| match all_in {
        true => all_in_levels(names, summary, side),
        false => Vec::new(),
    };
    let wide = crate::fixed::wide_decimal_text;
    ExactSummary {
        bands: (summary.bands.each())
            .map(|(bps, bids, asks)| Band {
                bps: u32::from(bps),
                bid_amount: wide(bids.amount, 8),
                bid_notional: wide(bids.notional, 16),
                ask_amount: wide(asks.amount, 8),
                ask_notional: wide(asks.notional, 16),
            })
            .collect(),
        bands_full_depth: summary.bands.full_depth,
        all_in_bids: all_in_side(Side::Bid),
        all_in_asks: all_in_side(Side::Ask),
        all_in_spread: match all_in {
            true => summary
                .all_in_book()
                .spread
                .map(|spread| spread.to_string()),
            false => None,
        }
        .unwrap_or_default(),
        instrument: instrument.name.clone(),
        seq: summary.sequence,
        ts_ns: summary.published_ns,
        spread: summary
            .book
            .spread
            .map(|spread| spread.to_string())
            .unwrap_or_default(),
        bids: exact_levels(names, summary, Side::Bid),
        asks: exact_levels(names, summary, Side::Ask),
        currency: summary
            .currency
            .map(|currency| currency.to_string())
            .unwrap_or_default(),
        amount_unit: summary
            .amount_unit
            .map(|unit| unit.to_string())
            .unwrap_or_default(),
        unit_size: summary.unit_size.to_string(),
        venues: summary
            .sources()
            .map(|(source, _, state)| (names[source].clone(), state.name().to_owned()))
            .collect(),
        venue_quotes: summary
            .sources()
            .map(|(source, _, state)| {
                let best = summary.source_best[source];
                let received = summary.source_received_ns[source];
                let exact = |price: Option<FixedPoint>| price.map(|p| p.to_string());
                let applied = summary.source_rate[source];
                let rate = applied.and_then(|applied| applied.rate);
                let currency = applied.map(|applied| applied.native).or(summary.currency);
                VenueQuote {
                    exchange: names[source].clone(),
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
                    received_unix_ns: summary.received_unix_ns(received),
                    exchange_unix_ns: summary.source_exchange_time_ns[source],
                    taker_fee_bps: summary.source_taker_fees[source].to_string(),
                }
            })
            .collect(),
    }
}

/// What a `QuoteRequest` asks of instrument `index`, or why it asks nothing clear.
pub fn quote_request(index: usize, request: &QuoteRequest) -> Result<quote::QuoteRequest, String> {
    let side = match quote_request::Side::try_from(request.side) {
        Ok(quote_request::Side::Buy) => quote::QuoteSide::Buy,
        Ok(quote_request::Side::Sell) => quote::QuoteSide::Sell,
        _ => return Err("side: BUY or SELL".into()),
    };
    let amount = |text: &str, what: &str| match text.parse::<FixedPoint>() {
        Ok(value) if !value.is_zero() => Ok(value),
        _ => Err(format!(
            "{what}: a positive decimal of at most 8 fractional digits, not {:?}",
            text.chars().take(40).collect::<String>()
        )),
    };
    let target = match (request.quantity.as_str(), request.notional.as_str()) {
        (quantity, "") if !quantity.is_empty() => {
            quote::Target::Quantity(amount(quantity, "quantity")?)
        }
        ("", notional) if !notional.is_empty() => {
            quote::Target::Notional(amount(notional, "notional")?)
        }
        _ => return Err("set one of quantity and notional".into()),
    };
    Ok(quote::QuoteRequest {
        instrument: index,
        side,
        target,
        all_in: request.all_in,
    })
}

/// The reply to `request`, a quote of `instrument`.
pub fn quote_reply(
    instrument: &Instrument,
    request: &quote::QuoteRequest,
    answer: &quote::Quote,
) -> QuoteReply {
    let price = |price: Option<FixedPoint>| price.map(|p| p.to_string()).unwrap_or_default();
    QuoteReply {
        instrument: instrument.name.clone(),
        seq: answer.sequence,
        filled: crate::fixed::wide_decimal_text(answer.filled, 8),
        notional: crate::fixed::wide_decimal_text(answer.notional, 16),
        average_price: price(answer.average_price),
        worst_price: price(answer.worst_price),
        depth_exhausted: answer.exhausted,
        venues: (answer.fills[..answer.sources].iter())
            .zip(&instrument.source_names)
            .map(|(fill, name)| VenueFill {
                exchange: name.clone(),
                merged: fill.merged,
                full_depth: fill.full_depth,
                book_seq: fill.sequence,
                filled: crate::fixed::wide_decimal_text(fill.filled, 8),
                notional: crate::fixed::wide_decimal_text(fill.notional, 16),
                levels: fill.levels,
            })
            .collect(),
        all_in: request.all_in,
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
        let instrument = Instrument::of_books("BTC/USD-notional", &[(VenueId::Binance, "BTCUSDT")]);
        summary.source_venues[0] = Some(VenueId::Binance);
        summary.source_states[0] = summary::VenueState::Synced;
        summary.source_rate[0] = Some(AppliedRate {
            native: code("USDT"),
            base: code("USDT"),
            quote: code("USD"),
            rate: Some(Rate::fixed(decimal("1.0002"))),
        });
        summary.book.bids.push(MergedLevel {
            price: decimal("90018"),
            amount: decimal("90018"),
            venue: VenueId::Binance,
            source: 0,
        });
        summary.native_prices.bids[0] = decimal("90000");
        let exact = exact_summary(&instrument, &summary, false);
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
