use super::*;
use proptest::prelude::*;

fn fixed(text: &str) -> FixedPoint {
    text.parse().expect("a decimal")
}

fn rate(bid: &str, ask: &str) -> Rate {
    Rate {
        bid: fixed(bid),
        ask: fixed(ask),
        received_ns: 1,
    }
}

fn levels(side: &[(&str, &str)]) -> Levels {
    let mut levels = Levels::default();
    for &(price, amount) in side {
        levels.push(Level {
            price: fixed(price),
            amount: fixed(amount),
        });
    }
    levels
}

#[test]
fn currencies_are_upper_case_codes() {
    assert_eq!(Currency::parse("usdt").expect("valid").as_str(), "USDT");
    assert_eq!(
        Currency::parse("FDUSD").expect("valid").to_string(),
        "FDUSD"
    );
    for bad in ["", "US-D", "ABCDEFGHIJK", "U SD"] {
        assert_eq!(Currency::parse(bad), None, "{bad:?}");
    }
}

#[test]
fn bids_round_down_and_asks_up_to_the_step() {
    let usdt_usd = rate("0.9998", "1.0003");
    let cents = Conversion::new(Direction::Multiply, 1_000_000);
    // 90000.5 × 0.9998 = 89982.4999 → 89982.49; × 1.0003 = 90027.50015 → 90027.51.
    let bid = cents.price(Side::Bid, fixed("90000.5"), &usdt_usd);
    assert_eq!(bid, Ok(fixed("89982.49").raw()));
    let ask = cents.price(Side::Ask, fixed("90000.5"), &usdt_usd);
    assert_eq!(ask, Ok(fixed("90027.51").raw()));
    // Exact products are not moved.
    let exact = cents.price(Side::Ask, fixed("100"), &rate("1", "1.25"));
    assert_eq!(exact, Ok(fixed("125").raw()));
    // A USD venue in a USDT instrument: bids over the rate's ask, asks over its bid.
    let divide = Conversion::new(Direction::Divide, 1);
    let bid = divide.price(Side::Bid, fixed("100"), &rate("0.8", "1.6"));
    assert_eq!(bid, Ok(fixed("62.5").raw()));
    // 100 / 0.3 = 333.333…: up to the next 10^-8.
    let ask = divide.price(Side::Ask, fixed("100"), &rate("0.3", "1.6"));
    assert_eq!(ask, Ok(fixed("333.33333334").raw()));
}

#[test]
fn prices_beyond_a_fixed_point_are_refused() {
    let huge = Conversion::new(Direction::Multiply, 1);
    let price = fixed("100000000000");
    assert_eq!(
        huge.price(Side::Bid, price, &rate("1000", "1000")),
        Err(OutOfRange)
    );
    let divide = Conversion::new(Direction::Divide, 1);
    assert_eq!(
        divide.price(Side::Ask, price, &rate("0.00000001", "1")),
        Err(OutOfRange)
    );
}

#[test]
fn levels_that_round_together_are_one_level_at_the_worse_native_price() {
    let whole_dollars = 100_000_000;
    let conversion = Conversion::new(Direction::Multiply, whole_dollars);
    let bids = levels(&[("100.9", "1"), ("100.2", "2"), ("99.5", "4"), ("0.4", "8")]);
    let (mut out, mut natives) = (Levels::default(), [FixedPoint::ZERO; MAX_DEPTH]);
    let result = conversion.side(
        Side::Bid,
        &bids,
        MAX_DEPTH,
        &rate("1", "1"),
        &mut out,
        &mut natives,
    );
    assert_eq!(result, Ok(()));
    assert_eq!(
        out.as_slice(),
        levels(&[("100", "3"), ("99", "4")]).as_slice(),
        "the bid at 0.4 rounds to nothing and is left out"
    );
    assert_eq!(natives[..2], [fixed("100.2"), fixed("99.5")]);
}

/// The exact value of `price` through the rate, as a fraction `numerator / denominator`
/// of raw units, by 128-bit integers: the reference the rounding is checked against.
fn exact(direction: Direction, side: Side, price: u64, rate: &Rate) -> (u128, u128) {
    let scale = u128::from(SCALE);
    match (direction, side) {
        (Direction::Multiply, Side::Bid) => (u128::from(price) * u128::from(rate.bid.raw()), scale),
        (Direction::Multiply, Side::Ask) => (u128::from(price) * u128::from(rate.ask.raw()), scale),
        (Direction::Divide, Side::Bid) => (u128::from(price) * scale, u128::from(rate.ask.raw())),
        (Direction::Divide, Side::Ask) => (u128::from(price) * scale, u128::from(rate.bid.raw())),
    }
}

proptest! {
    /// The remainder by a price step, without a division, is the remainder.
    #[test]
    fn remainders_by_the_step_are_exact(
        value: u64,
        step in prop_oneof![1u64..1_000, Just(1_000_000), Just(100_000_000), 1u64..=u64::MAX],
    ) {
        let conversion = Conversion::new(Direction::Multiply, step);
        prop_assert_eq!(conversion.remainder(value), value % step);
    }

    /// A converted bid is never above, a converted ask never below, the native price at
    /// the rate used, exactly; and each is the nearest multiple of the step that is so.
    #[test]
    fn a_converted_level_is_never_better_than_its_native_level(
        price in 1u64..10_000_000_000_000,
        bid in 1u64..1_000_000_000_000,
        spread in 0u64..100_000_000,
        step in prop_oneof![Just(1u64), Just(100), Just(1_000_000), Just(100_000_000), Just(50_000_000), 1u64..1_000_000_000],
        divide: bool,
    ) {
        let rate = Rate { bid: FixedPoint::from_raw(bid), ask: FixedPoint::from_raw(bid + spread), received_ns: 0 };
        let direction = if divide { Direction::Divide } else { Direction::Multiply };
        let conversion = Conversion::new(direction, step);
        for side in [Side::Bid, Side::Ask] {
            let (numerator, denominator) = exact(direction, side, price, &rate);
            let Ok(converted) = conversion.price(side, FixedPoint::from_raw(price), &rate) else {
                // Refused only where the exact value (rounded) is beyond a FixedPoint.
                prop_assert!(numerator / denominator + u128::from(step) > u128::from(u64::MAX));
                continue;
            };
            prop_assert_eq!(converted % step, 0);
            let converted = u128::from(converted);
            let step = u128::from(step);
            match side {
                Side::Bid => {
                    prop_assert!(converted * denominator <= numerator, "above the exact bid");
                    prop_assert!((converted + step) * denominator > numerator, "not the nearest");
                }
                Side::Ask => {
                    prop_assert!(converted * denominator >= numerator, "below the exact ask");
                    prop_assert!(converted < step || (converted - step) * denominator < numerator, "not the nearest");
                }
            }
        }
    }

    /// A converted side is sorted best first without repeats, keeps the native amounts
    /// (of the levels above zero), and each level's native price converts to it.
    #[test]
    fn a_converted_side_is_a_book_side(
        start in 1_000_000u64..100_000_000_000,
        gaps in proptest::collection::vec(1u64..5_000_000, 1..40),
        amount in 1u64..100_000_000_000,
        rate_raw in 50_000_000u64..200_000_000,
        step in prop_oneof![Just(1u64), Just(1_000_000), Just(100_000_000)],
        bids: bool,
    ) {
        let side = if bids { Side::Bid } else { Side::Ask };
        let mut native = Levels::default();
        let mut price = start;
        for gap in &gaps {
            native.push(Level { price: FixedPoint::from_raw(price), amount: FixedPoint::from_raw(amount) });
            price = if bids { price.saturating_sub(*gap).max(1) } else { price + gap };
            if bids && price == 1 { break; }
        }
        let rate = Rate { bid: FixedPoint::from_raw(rate_raw), ask: FixedPoint::from_raw(rate_raw + 1), received_ns: 0 };
        let conversion = Conversion::new(Direction::Multiply, step);
        let (mut out, mut natives) = (Levels::default(), [FixedPoint::ZERO; MAX_DEPTH]);
        prop_assert_eq!(conversion.side(side, &native, MAX_DEPTH, &rate, &mut out, &mut natives), Ok(()));
        let converted = out.as_slice();
        prop_assert!(converted.windows(2).all(|pair| side.is_better(pair[0].price, pair[1].price)));
        let kept: u64 = native.as_slice().iter()
            .filter(|level| conversion.price(side, level.price, &rate) != Ok(0))
            .map(|level| level.amount.raw()).sum();
        prop_assert_eq!(converted.iter().map(|level| level.amount.raw()).sum::<u64>(), kept);
        for (level, native_price) in converted.iter().zip(&natives) {
            prop_assert_eq!(conversion.price(side, *native_price, &rate), Ok(level.price.raw()));
        }
    }

    /// A notional is never more than the venue showed: a base amount's is the amount
    /// times the converted price, an inverse contract's the native notional times the
    /// converted price over the native price, each rounded down by less than 10^-8; a
    /// level whose notional rounds to nothing is left out.
    #[test]
    fn a_notional_is_never_more_than_was_shown(
        prices in proptest::collection::vec(1u64..10_000_000_000_000, 1..20),
        amounts in proptest::collection::vec(1u64..100_000_000_000, 20),
        // At least 1: distinct native prices stay distinct at a step of 10^-8.
        rate_raw in 100_000_000u64..200_000_000,
        inverse: bool,
        bids: bool,
    ) {
        let side = if bids { Side::Bid } else { Side::Ask };
        let mut sorted = prices.clone();
        sorted.sort_unstable();
        sorted.dedup();
        if bids { sorted.reverse(); }
        let mut native = Levels::default();
        for (price, amount) in sorted.iter().zip(&amounts) {
            native.push(Level { price: FixedPoint::from_raw(*price), amount: FixedPoint::from_raw(*amount) });
        }
        let rate = Rate { bid: FixedPoint::from_raw(rate_raw), ask: FixedPoint::from_raw(rate_raw + 1), received_ns: 0 };
        let amounts_rule = if inverse { Amounts::NotionalConverted } else { Amounts::Notional };
        // Step 1: each native level is its own converted level (prices are distinct).
        let conversion = Conversion::new(Direction::Multiply, 1).with_amounts(amounts_rule);
        let (mut out, mut natives) = (Levels::default(), [FixedPoint::ZERO; MAX_DEPTH]);
        if conversion.side(side, &native, MAX_DEPTH, &rate, &mut out, &mut natives).is_err() {
            // Refused only where a notional or a price is beyond a FixedPoint.
            return Ok(());
        }
        let mut converted = out.as_slice().iter().zip(&natives);
        for level in native.as_slice() {
            let price = u128::from(conversion.price(side, level.price, &rate).unwrap());
            let amount = u128::from(level.amount.raw());
            let (numerator, denominator) = match inverse {
                false => (amount * price, u128::from(SCALE)),
                true => (amount * price, u128::from(level.price.raw())),
            };
            if numerator < denominator {
                continue; // rounds to nothing: left out
            }
            let (out_level, native_price) = converted.next().expect("a level for each");
            prop_assert_eq!(*native_price, level.price);
            let notional = u128::from(out_level.amount.raw());
            prop_assert!(notional * denominator <= numerator, "more than was shown");
            prop_assert!((notional + 1) * denominator > numerator, "not rounded down by less than 10^-8");
        }
        prop_assert!(converted.next().is_none());
    }
}

#[test]
fn a_taker_fee_is_a_rate_either_side_of_one_and_prints_in_its_fewest_digits() {
    let fee = |text: &str| TakerFee::from_bps(text.parse().unwrap());
    let ten = fee("10").expect("a fee");
    assert_eq!(ten.fraction(), "0.001".parse().unwrap());
    assert_eq!(
        (ten.rate().bid, ten.rate().ask),
        ("0.999".parse().unwrap(), "1.001".parse().unwrap())
    );
    assert_eq!(ten.to_string(), "10");
    assert_eq!(fee("7.5").unwrap().to_string(), "7.5");
    assert_eq!(
        fee("0.0001").unwrap().fraction().raw(),
        1,
        "the finest fee is exact"
    );
    assert_eq!(fee("0").unwrap().to_string(), "0");
    assert_eq!(fee("0.00001"), None, "a fraction finer than 10^-8");
    assert_eq!(fee("1000").unwrap().to_string(), "1000");
    assert_eq!(fee("1000.0001"), None, "above 10 %");
}
