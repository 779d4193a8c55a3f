//! Taker fees: `venues.<name>.taker_fee_bps`, and an instrument's `taker_fees_bps` for a
//! book whose fee differs from its venue's (a venue's perpetuals, a promotional pair).

use super::raw::{RawInstrument, RawVenue};
use super::*;
use crate::units::TakerFee;
use std::collections::BTreeMap;

/// Each source's taker fee, in the instrument's source order: the instrument's own where
/// it sets one for that book, else its venue's (`venue_fees`), else none.
pub(super) fn taker_fees(
    key: &str,
    raw: &RawInstrument,
    venue_fees: &BTreeMap<String, TakerFee>,
    symbols: &[(VenueId, String)],
    names: &[String],
) -> Result<Vec<TakerFee>, ConfigError> {
    let mut fees: Vec<TakerFee> = symbols
        .iter()
        .map(|(venue, _)| venue_fees.get(venue.name()).copied().unwrap_or_default())
        .collect();
    for entry in &raw.taker_fees_bps {
        let (source, name) = super::validate::named_source(names, key, "taker_fees_bps", entry)?;
        fees[source] = fee(name, entry.1)?;
    }
    Ok(fees)
}

/// Each venue's `taker_fee_bps`, by the venue's name: every one read, so that a typo is an
/// error even where no instrument takes that venue.
pub(super) fn venue_fees(
    venues: &BTreeMap<String, RawVenue>,
) -> Result<BTreeMap<String, TakerFee>, ConfigError> {
    let mut fees = BTreeMap::new();
    for (name, venue) in venues {
        if let Some(text) = &venue.taker_fee_bps {
            fees.insert(
                name.clone(),
                fee(format!("venues.{name}.taker_fee_bps"), text)?,
            );
        }
    }
    Ok(fees)
}

fn fee(key: String, text: &str) -> Result<TakerFee, ConfigError> {
    text.parse::<FixedPoint>()
        .ok()
        .and_then(TakerFee::from_bps)
        .ok_or_else(|| {
            invalid(
                key,
                format!("{text:?}"),
                format!(
                    "basis points from \"0\" to \"{}\", at most {} fractional digits (\"7.5\")",
                    TakerFee::MAX_BPS.with_decimals(0),
                    TakerFee::BPS_DECIMALS
                ),
            )
        })
}
