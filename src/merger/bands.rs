//! Bands: how much each side of an instrument's book holds within configured distances of
//! its mid (`service.bands_bps`): the amount, and its notional, of every level priced
//! within the band, over every merged venue, each venue's whole book where its reader hands
//! one over (diff mode), its top N otherwise; the levels in the instrument's terms, as the
//! summary's (converted, not net of fees).
//!
//! The mid is the merged book's: half the best bid and best ask. A bid is within `b` bp
//! when its price is at least `mid × (1 - b / 10,000)`, an ask when at most
//! `mid × (1 + b / 10,000)`; compared exactly, in integers (`2 × price × 10,000` against
//! `(bid + ask) × (10,000 ∓ b)`).

use super::consolidation::Consolidation;
use super::summary::{BandDepth, MAX_BANDS, Summary};
use crate::book::full_depth::FullDepth;
use crate::book::{Level, Side};

const BP: u128 = 10_000;

/// `mids × factor / 2BP`, rounded up or down, as a price (`u64::MAX` past one). Without a
/// 128-bit division where `mids` fits 64 bits (any real book): such a division is a call
/// of tens of nanoseconds, and a summary makes two a band. With `mids = q × 2BP + r`,
/// `mids × factor / 2BP` is `q × factor + r × factor / 2BP`, and `r × factor` is small.
#[inline]
fn scaled(mids: u128, factor: u128, up: bool) -> u64 {
    const TWICE_BP: u64 = 2 * BP as u64;
    let factor = factor as u64; // at most 15,000
    let Ok(mids) = u64::try_from(mids) else {
        let value = match up {
            true => (mids * u128::from(factor)).div_ceil(u128::from(TWICE_BP)),
            false => mids * u128::from(factor) / u128::from(TWICE_BP),
        };
        return u64::try_from(value).unwrap_or(u64::MAX);
    };
    let (quotient, remainder) = (mids / TWICE_BP, mids % TWICE_BP);
    let part = remainder * factor;
    let part = match up {
        true => part.div_ceil(TWICE_BP),
        false => part / TWICE_BP,
    };
    quotient
        .checked_mul(factor)
        .and_then(|whole| whole.checked_add(part))
        .unwrap_or(u64::MAX)
}

/// Writes `summary`'s bands at `bps` (ascending, at most `MAX_BANDS`), from
/// `consolidation`'s merged sources, `full_depth(source)` being each source's whole book
/// as its reader last handed it over. No bands while either side of the book is empty.
///
/// A whole book merged as it comes is counted from its running totals
/// (`FullDepth::held_within`): a lookup a band, however deep. Every other book is walked
/// level by level, each level in the instrument's terms: a top of a few levels, or a whole
/// book converted or sized in contracts.
pub fn write<'a>(
    consolidation: &'a Consolidation,
    full_depth: impl Fn(usize) -> &'a FullDepth,
    bps: &[u16],
    summary: &mut Summary,
) {
    let bands = &mut summary.bands;
    let count = bps.len().min(MAX_BANDS);
    bands.count = count;
    // Element by element: a copy of a few bytes is otherwise a call to `memmove`, and the
    // slot's other bands are never read.
    for (band, &bp) in bands.bps.iter_mut().zip(&bps[..count]) {
        *band = bp;
    }
    let (Some(bid), Some(ask)) = (summary.book.bids.best(), summary.book.asks.best()) else {
        bands.count = 0;
        return;
    };
    // Each band's bound, raw: the least bid and the greatest ask within it.
    // `2 × price × BP ≥ mids × (BP - bp)` is `price ≥ ⌈mids × (BP - bp) / 2BP⌉`; an ask's
    // `2 × price × BP ≤ mids × (BP + bp)` is `price ≤ ⌊mids × (BP + bp) / 2BP⌋`.
    let mids = u128::from(bid.price.raw()) + u128::from(ask.price.raw());
    let mut bounds = [[0u64; MAX_BANDS]; 2];
    for (band, &bp) in bps[..count].iter().enumerate() {
        bounds[Side::Bid as usize][band] = scaled(mids, BP - u128::from(bp), true);
        bounds[Side::Ask as usize][band] = scaled(mids, BP + u128::from(bp), false);
    }
    // What each side holds in each band and not in a narrower one, summed outwards at the
    // end.
    let mut narrowest = [[BandDepth::default(); MAX_BANDS]; 2];
    let mut full = true;
    for source in 0..consolidation.source_count() {
        let Some(terms) = consolidation.merged_source(source) else {
            continue;
        };
        let whole = full_depth(source);
        full &= whole.is_present();
        for side in [Side::Bid, Side::Ask] {
            let own = &mut narrowest[side as usize];
            let bounds = &bounds[side as usize][..count];
            if whole.is_present() && whole.contract_size.is_none() && !terms.converts() {
                let mut inner = crate::book::full_depth::Held::default();
                for (depth, &bound) in own.iter_mut().zip(bounds) {
                    let held = whole.held_within(side, bound);
                    depth.amount += held.amount - inner.amount;
                    depth.notional += held.notional - inner.notional;
                    inner = held;
                }
                continue;
            }
            // Each level into the narrowest band it is within, until one is beyond them
            // all; levels come best first. The band being filled is summed in locals and
            // written once it is left: summing into the array made each level wait for
            // the last one's store.
            let mut band = 0;
            let mut held = BandDepth::default();
            let mut add = |level: Level| -> bool {
                let price = level.price.raw();
                let within = |bound: u64| match side {
                    Side::Bid => price >= bound,
                    Side::Ask => price <= bound,
                };
                while band < count && !within(bounds[band]) {
                    own[band].amount += held.amount;
                    own[band].notional += held.notional;
                    held = BandDepth::default();
                    band += 1;
                }
                if band == count {
                    return false;
                }
                let amount = u128::from(level.amount.raw());
                held.amount += amount;
                held.notional += amount * u128::from(price);
                true
            };
            let converts = terms.converts();
            let mut take = |level: Level| match converts {
                false => add(level),
                true => match terms.level(side, level, false) {
                    Ok(Some(level)) => add(level),
                    // A bid worth nothing, or out of range: nothing within a band beyond.
                    Ok(None) | Err(_) => false,
                },
            };
            match whole.is_present() {
                true => {
                    for &level in whole.worst_first(side).iter().rev() {
                        let level = match whole.contract_size {
                            None => level,
                            Some(size) => match level.amount.checked_mul(size) {
                                Some(amount) => Level { amount, ..level },
                                None => break,
                            },
                        };
                        if !take(level) {
                            break;
                        }
                    }
                }
                false => {
                    for &level in terms.book.side(side).as_slice() {
                        if !take(level) {
                            break;
                        }
                    }
                }
            }
            if band < count {
                own[band].amount += held.amount;
                own[band].notional += held.notional;
            }
        }
    }
    // Every wider band holds what a narrower one does.
    for depths in &mut narrowest {
        for band in 1..count {
            let inner = depths[band - 1];
            depths[band].amount += inner.amount;
            depths[band].notional += inner.notional;
        }
    }
    [bands.bids, bands.asks] = narrowest;
    bands.full_depth = full;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::book::{BookUpdate, DepthBook, TopBook};
    use crate::feed::handoff::VenueFeed;
    use crate::merger::summary::VenueState;
    use crate::venue::VenueId;
    use proptest::prelude::*;

    const VENUES: [VenueId; 3] = [VenueId::Binance, VenueId::Bitstamp, VenueId::Kraken];

    /// Distinct prices around 1.0000 (raw 10^8), `bids` below and asks above a gap, best
    /// first, with amounts.
    fn side(bids: bool) -> impl Strategy<Value = Vec<(u64, u64)>> {
        proptest::collection::btree_map(1u64..3_000, 1u64..1_000_000_000, 1..60).prop_map(
            move |map| {
                let price = |ticks: u64| match bids {
                    true => 100_000_000 - ticks * 1_000,
                    false => 100_000_000 + ticks * 1_000,
                };
                map.into_iter()
                    .map(|(ticks, amount)| (price(ticks), amount))
                    .collect()
            },
        )
    }

    proptest! {
        /// Random books of up to three venues, some with their whole books handed over:
        /// each band of each side holds exactly what a count of every level shown within
        /// it gives.
        #[test]
        fn each_band_holds_what_a_count_of_the_shown_levels_gives(
            venues in proptest::collection::vec((side(true), side(false), any::<bool>()), 1..=3),
            depth in 1usize..=20,
        ) {
            let mut consolidation = Consolidation::new(0, depth, &VENUES[..venues.len()]);
            let mut wholes = Vec::new();
            for (source, (bids, asks, full_depth)) in venues.iter().enumerate() {
                let level = |&(price, amount): &(u64, u64)| Level::from_raw(price, amount);
                let mut book = DepthBook::new(100);
                if *full_depth {
                    book = book.with_journal();
                }
                book.replace(&BookUpdate {
                    bids: bids.iter().map(level).collect(),
                    asks: asks.iter().map(level).collect(),
                    ..BookUpdate::default()
                });
                let mut feed = VenueFeed {
                    state: VenueState::Synced,
                    book: TopBook { received_ns: 1, ..TopBook::default() },
                    ..VenueFeed::default()
                };
                book.top(depth, &mut feed.book);
                feed.full_depth.update_from(&book);
                consolidation.apply(source, &feed);
                wholes.push(feed.full_depth);
            }
            let mut summary = Summary::default();
            consolidation.summarize(1, &mut summary);
            let bps = [5, 10, 25, 50, 100, 400];
            write(&consolidation, |source| &wholes[source], &bps, &mut summary);
            let best_bid = venues.iter().map(|v| v.0[0].0).max().unwrap();
            let best_ask = venues.iter().map(|v| v.1[0].0).min().unwrap();
            let mid2 = u128::from(best_bid) + u128::from(best_ask);
            prop_assert_eq!(summary.bands.count, bps.len());
            prop_assert_eq!(summary.bands.full_depth, venues.iter().all(|v| v.2));
            for (band, &bp) in bps.iter().enumerate() {
                let mut expected = [(0u128, 0u128); 2];
                for (bids, asks, full_depth) in &venues {
                    let shown = |levels: &Vec<(u64, u64)>| match full_depth {
                        true => levels.len(),
                        false => depth.min(levels.len()),
                    };
                    for &(price, amount) in &bids[..shown(bids)] {
                        // price ≥ mid × (1 - bp/10^4), as a fraction: no rounding.
                        if u128::from(price) * 20_000 >= mid2 * (10_000 - u128::from(bp)) {
                            expected[0].0 += u128::from(amount);
                            expected[0].1 += u128::from(amount) * u128::from(price);
                        }
                    }
                    for &(price, amount) in &asks[..shown(asks)] {
                        if u128::from(price) * 20_000 <= mid2 * (10_000 + u128::from(bp)) {
                            expected[1].0 += u128::from(amount);
                            expected[1].1 += u128::from(amount) * u128::from(price);
                        }
                    }
                }
                let (bids, asks) = (summary.bands.bids[band], summary.bands.asks[band]);
                prop_assert_eq!((bids.amount, bids.notional), expected[0], "bids within {} bp", bp);
                prop_assert_eq!((asks.amount, asks.notional), expected[1], "asks within {} bp", bp);
            }
        }
    }

    /// Mid 1.0: a bid of 0.9995 and an ask of 1.0005 are 5 bp from it, within the 5 bp
    /// band; a bid of 0.99949999 is not.
    #[test]
    fn a_level_on_a_bands_edge_is_within_it() {
        let mut consolidation = Consolidation::new(0, 5, &[VenueId::Binance]);
        let mut feed = VenueFeed {
            state: VenueState::Synced,
            ..VenueFeed::default()
        };
        feed.book.bids.push(Level::from_raw(99_950_000, 2));
        feed.book.bids.push(Level::from_raw(99_949_999, 3));
        feed.book.asks.push(Level::from_raw(100_050_000, 4));
        consolidation.apply(0, &feed);
        let mut summary = Summary::default();
        consolidation.summarize(1, &mut summary);
        write(&consolidation, |_| &feed.full_depth, &[5, 10], &mut summary);
        let depths: Vec<_> = summary
            .bands
            .each()
            .map(|(bp, b, a)| (bp, b.amount, a.amount))
            .collect();
        assert_eq!(depths, [(5, 2, 4), (10, 5, 4)]);
        assert_eq!(summary.bands.bids[0].notional, 2 * 99_950_000);
        assert!(!summary.bands.full_depth, "a top only");
    }

    #[test]
    fn no_bands_while_a_side_is_empty() {
        let mut consolidation = Consolidation::new(0, 5, &[VenueId::Binance]);
        consolidation.allow_one_sided(VenueId::Binance);
        let mut feed = VenueFeed {
            state: VenueState::Synced,
            ..VenueFeed::default()
        };
        feed.book.bids.push(Level::from_raw(100, 1));
        consolidation.apply(0, &feed);
        let mut summary = Summary::default();
        consolidation.summarize(1, &mut summary);
        write(&consolidation, |_| &feed.full_depth, &[5, 10], &mut summary);
        assert_eq!(summary.bands.count, 0);
        assert_eq!(summary.bands.each().count(), 0);
    }
}
