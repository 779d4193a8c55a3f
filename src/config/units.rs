//! The currencies of `[[instruments]]` and their venues, and `[[rates]]`: which venue is
//! quoted in what, and through which rate it joins its instrument's currency.

use super::raw::{RawInstrument, RawRate};
use super::*;
use crate::units::{Amounts, Direction};

/// A `[[rates]]` entry with its source still named.
pub(super) struct RatePlan {
    base: Currency,
    quote: Currency,
    from: PlannedFrom,
}

enum PlannedFrom {
    Instrument(String),
    Fixed(FixedPoint),
}

/// `BASE/QUOTE` as two codes.
fn pair(text: &str) -> Option<(Currency, Currency)> {
    let (base, quote) = text.split_once('/')?;
    Some((Currency::parse(base)?, Currency::parse(quote)?))
}

/// `[[rates]]`: each pair once (either way round), from one instrument or a fixed rate.
pub(super) fn rate_plans(raw: &[RawRate]) -> Result<Vec<RatePlan>, ConfigError> {
    let mut plans: Vec<RatePlan> = Vec::new();
    for (index, rate) in raw.iter().enumerate() {
        let key = format!("rates[{index}]");
        let Some((base, quote)) = pair(&rate.pair).filter(|(base, quote)| base != quote) else {
            return Err(invalid(
                format!("{key}.pair"),
                format!("{:?}", rate.pair),
                "a currency pair BASE/QUOTE of two different codes (\"USDT/USD\")",
            ));
        };
        let twice = plans.iter().any(|plan| {
            (plan.base, plan.quote) == (base, quote) || (plan.base, plan.quote) == (quote, base)
        });
        if twice {
            return Err(invalid(
                format!("{key}.pair"),
                format!("{:?}", rate.pair),
                "the pair (either way round) has a rate already",
            ));
        }
        let from = match (&rate.instrument, &rate.fixed) {
            (Some(name), None) => PlannedFrom::Instrument(name.clone()),
            (None, Some(text)) => match text.parse::<FixedPoint>() {
                Ok(price) if !price.is_zero() => PlannedFrom::Fixed(price),
                _ => {
                    return Err(invalid(
                        format!("{key}.fixed"),
                        format!("{text:?}"),
                        "a positive decimal of at most 8 fractional digits",
                    ));
                }
            },
            _ => {
                return Err(invalid(
                    key,
                    format!("{:?}", rate.pair),
                    "set one of `instrument` (its merged book is the rate) and `fixed`",
                ));
            }
        };
        plans.push(RatePlan { base, quote, from });
    }
    Ok(plans)
}

/// An instrument's currency, price step, amount unit, its venues' quote currencies and
/// the conversions of those not merged as they come.
pub(super) struct InstrumentUnits {
    pub currency: Option<Currency>,
    pub price_step: u64,
    pub unit: AmountUnit,
    pub quotes: Vec<(usize, Currency)>,
    pub conversions: Vec<SourceConversion>,
}

pub(super) fn instrument_units(
    key: &str,
    raw: &RawInstrument,
    symbols: &[(VenueId, String)],
    names: &[String],
    plans: &[RatePlan],
) -> Result<InstrumentUnits, ConfigError> {
    let (base, named_quote) = match raw.name.split_once('/') {
        Some((base, quote)) => (Some(base), Currency::parse(quote)),
        None => (None, None),
    };
    let currency = match &raw.currency {
        Some(text) => Some(Currency::parse(text).ok_or_else(|| {
            invalid(
                format!("{key}.currency"),
                format!("{text:?}"),
                "a currency code: 1 to 10 letters and digits",
            )
        })?),
        None => named_quote,
    };
    let price_step = match &raw.price_step {
        None => 1,
        Some(text) => match text.parse::<FixedPoint>() {
            Ok(step) if !step.is_zero() => step.raw(),
            _ => {
                return Err(invalid(
                    format!("{key}.price_step"),
                    format!("{text:?}"),
                    "a positive decimal of at most 8 fractional digits",
                ));
            }
        },
    };
    let unit = match raw.unit.as_deref() {
        None | Some("base") => AmountUnit::Base,
        Some("quote") => AmountUnit::Quote,
        Some(other) => {
            return Err(invalid(
                format!("{key}.unit"),
                format!("{other:?}"),
                "\"base\" (amounts of the base coin) or \"quote\" (their notional in the \
                 instrument's currency)",
            ));
        }
    };
    let mut configured = Vec::new();
    for entry in &raw.quotes {
        let text = entry.1;
        let (source, name) = super::validate::named_source(names, key, "quotes", entry)?;
        let quote = Currency::parse(text).ok_or_else(|| {
            invalid(
                &name,
                format!("{text:?}"),
                "a currency code: 1 to 10 letters and digits",
            )
        })?;
        configured.push((source, quote));
    }
    let Some(currency) = currency else {
        let needs_currency = match configured.first() {
            Some(&(source, _)) => Some(format!(
                "{key}.quotes.{}",
                super::validate::source_key(&names[source])
            )),
            None => (unit == AmountUnit::Quote).then(|| format!("{key}.unit")),
        };
        if let Some(name) = needs_currency {
            return Err(invalid(
                name,
                format!("{:?}", raw.name),
                format!("the instrument's currency is not known: set {key}.currency"),
            ));
        }
        if let Some((venue, symbol)) = symbols.iter().find(|(v, s)| v.streams().inverse(s)) {
            return Err(inverse_in_base_coin(key, *venue, symbol));
        }
        return Ok(InstrumentUnits {
            currency: None,
            price_step,
            unit,
            quotes: Vec::new(),
            conversions: Vec::new(),
        });
    };
    let mut quotes = Vec::new();
    let mut conversions = Vec::new();
    for (source, (venue, symbol)) in symbols.iter().enumerate() {
        let derived = base.and_then(|base| venue.streams().quote_currency(symbol, base));
        let stated = configured
            .iter()
            .find(|(s, _)| *s == source)
            .map(|&(_, q)| q);
        let quote = stated.or(derived).ok_or_else(|| {
            invalid(
                format!("{key}.symbols.{venue}"),
                format!("{symbol:?}"),
                format!(
                    "the currency it is quoted in cannot be read from it: set \
                     {key}.quotes.{} (\"USDC\")",
                    super::validate::source_key(&names[source])
                ),
            )
        })?;
        quotes.push((source, quote));
        let inverse = venue.streams().inverse(symbol);
        let amounts = match (unit, inverse) {
            (AmountUnit::Base, true) => return Err(inverse_in_base_coin(key, *venue, symbol)),
            (AmountUnit::Base, false) => Amounts::AsGiven,
            (AmountUnit::Quote, false) => Amounts::Notional,
            (AmountUnit::Quote, true) => Amounts::NotionalConverted,
        };
        if quote == currency {
            // Prices as they are; a base amount becomes its notional, an inverse
            // contract's notional is already in the instrument's currency.
            if amounts == Amounts::Notional {
                conversions.push(SourceConversion {
                    source,
                    rate: None,
                    conversion: Conversion::prices_kept(amounts),
                });
            }
            continue;
        }
        let rate =
            plans
                .iter()
                .enumerate()
                .find_map(|(index, plan)| match (plan.base, plan.quote) {
                    pair if pair == (quote, currency) => Some((index, Direction::Multiply)),
                    pair if pair == (currency, quote) => Some((index, Direction::Divide)),
                    _ => None,
                });
        let Some((rate, direction)) = rate else {
            return Err(invalid(
                format!("{key}.symbols.{venue}"),
                format!("{symbol:?}"),
                format!(
                    "quoted in {quote}, the instrument in {currency}: configure a \
                     [[rates]] pair = \"{quote}/{currency}\""
                ),
            ));
        };
        conversions.push(SourceConversion {
            source,
            rate: Some(rate),
            conversion: Conversion::new(direction, price_step).with_amounts(amounts),
        });
    }
    Ok(InstrumentUnits {
        currency: Some(currency),
        price_step,
        unit,
        quotes,
        conversions,
    })
}

/// An inverse contract in an instrument counting the base coin: its amount in the coin
/// would be a division by the price, not exact.
fn inverse_in_base_coin(key: &str, venue: VenueId, symbol: &str) -> ConfigError {
    invalid(
        format!("{key}.symbols.{venue}"),
        format!("{symbol:?}"),
        format!(
            "an inverse contract, sized in its quote currency: it merges where amounts \
             are counted in the instrument's currency (set {key}.unit = \"quote\")"
        ),
    )
}

/// The rates with their instruments found among `instruments` (indexes into it), each
/// an instrument in the pair's quote currency, of the pair's base, that converts nothing
/// itself.
pub(super) fn resolve_rates(
    plans: Vec<RatePlan>,
    instruments: &[Instrument],
) -> Result<Vec<RateSource>, ConfigError> {
    let mut rates = Vec::new();
    for (index, plan) in plans.into_iter().enumerate() {
        let from = match plan.from {
            PlannedFrom::Fixed(price) => RateFrom::Fixed(price),
            PlannedFrom::Instrument(name) => {
                let key = format!("rates[{index}].instrument");
                let found = instruments.iter().position(|i| i.name == name);
                let Some(at) = found else {
                    return Err(invalid(key, format!("{name:?}"), "no such instrument"));
                };
                let source = &instruments[at];
                let base = pair(&name).map(|(base, _)| base);
                if source.currency != Some(plan.quote) || base != Some(plan.base) {
                    return Err(invalid(
                        key,
                        format!("{name:?}"),
                        format!(
                            "the rate of {}/{} is read from an instrument named {}/{}",
                            plan.base, plan.quote, plan.base, plan.quote
                        ),
                    ));
                }
                if !source.unit_size.is_coin() {
                    return Err(invalid(
                        key,
                        format!("{name:?}"),
                        format!(
                            "a rate is a coin's price: this instrument's are a unit's of {} coins \
                             (its unit_size)",
                            source.unit_size
                        ),
                    ));
                }
                if source.conversions.iter().any(|c| c.rate.is_some()) {
                    return Err(invalid(
                        key,
                        format!("{name:?}"),
                        "a rate is read from venues quoted in its own currency: this \
                         instrument converts some of its venues itself",
                    ));
                }
                RateFrom::Instrument(at)
            }
        };
        rates.push(RateSource {
            base: plan.base,
            quote: plan.quote,
            from,
        });
    }
    Ok(rates)
}

/// The instruments `shard` serves, with their rates' instruments' indexes renumbered: an
/// instrument whose rate is read from an instrument of another shard is refused (that
/// shard's process merges the rate's book, not this one).
pub(super) fn keep_shard(
    shard: Shard,
    instruments: &mut Vec<Instrument>,
    rates: &mut Vec<RateSource>,
) -> Result<(), ConfigError> {
    let served: Vec<bool> = instruments.iter().map(|i| shard.serves(&i.name)).collect();
    let mut renumbered = vec![None; instruments.len()];
    let mut next = 0;
    for (index, &serves) in served.iter().enumerate() {
        if serves {
            renumbered[index] = Some(next);
            next += 1;
        }
    }
    for (instrument, _) in instruments.iter().zip(&served).filter(|(_, s)| **s) {
        for conversion in &instrument.conversions {
            let Some(rate) = conversion.rate.map(|rate| &rates[rate]) else {
                continue;
            };
            if let RateFrom::Instrument(source) = rate.from
                && !served[source]
            {
                return Err(invalid(
                    "service.shard",
                    format!("\"{}/{}\"", shard.index, shard.count),
                    format!(
                        "{} converts {} through {}, whose instrument {:?} falls to \
                         another shard: a rate is merged in the process that uses it \
                         (run fewer shards, or give the pair a fixed rate)",
                        instrument.name,
                        instrument.source_names[conversion.source],
                        rate.pair(),
                        instruments[source].name
                    ),
                ));
            }
        }
    }
    // The rates the served instruments can read: fixed ones, and those of served
    // instruments (a rate no served instrument uses may come from one left out).
    let mut kept_rates = Vec::new();
    let mut rate_renumbered = vec![None; rates.len()];
    for (index, rate) in rates.iter().enumerate() {
        let from = match rate.from {
            RateFrom::Fixed(price) => RateFrom::Fixed(price),
            RateFrom::Instrument(source) => match renumbered[source] {
                Some(source) => RateFrom::Instrument(source),
                None => continue,
            },
        };
        rate_renumbered[index] = Some(kept_rates.len());
        kept_rates.push(RateSource {
            from,
            ..rate.clone()
        });
    }
    *rates = kept_rates;
    let mut index = 0;
    instruments.retain(|_| {
        index += 1;
        served[index - 1]
    });
    for conversion in instruments.iter_mut().flat_map(|i| &mut i.conversions) {
        conversion.rate = conversion
            .rate
            .map(|rate| rate_renumbered[rate].expect("checked above"));
    }
    Ok(())
}
