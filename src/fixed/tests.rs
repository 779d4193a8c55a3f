use super::*;

#[test]
fn products_are_exact_or_refused() {
    let fp = |text: &str| text.parse::<FixedPoint>().unwrap();
    assert_eq!(fp("790.41").checked_mul(fp("0.01")), Some(fp("7.9041")));
    assert_eq!(fp("3").checked_mul(fp("100")), Some(fp("300")));
    assert_eq!(fp("0.00000001").checked_mul(fp("0.1")), None, "9 decimals");
    assert_eq!(FixedPoint::MAX.checked_mul(fp("2")), None, "too large");
    assert_eq!(FixedPoint::MAX.checked_mul(fp("1")), Some(FixedPoint::MAX));
}
use FixedPointError::*;

fn parse(text: &str) -> Result<u64, FixedPointError> {
    FixedPoint::parse(text.as_bytes()).map(FixedPoint::raw)
}

#[test]
fn parses_exact_values() {
    let cases: &[(&str, u64)] = &[
        ("0", 0),
        ("0.0", 0),
        ("0.00000000", 0),
        ("1", 100_000_000),
        ("35496.06000000", 3_549_606_000_000),
        ("0.29859300", 29_859_300),
        ("9328.28", 932_828_000_000),
        ("0.00000001", 1),
        ("0.5", 50_000_000),
        ("12345678", 1_234_567_800_000_000),
        ("123456789.12345678", 12_345_678_912_345_678),
        ("0012.50", 1_250_000_000),
        ("1.1234567800000", 112_345_678),
        ("184467440737.09551615", u64::MAX),
    ];
    for &(text, raw) in cases {
        assert_eq!(parse(text), Ok(raw), "{text}");
    }
}

/// Every refusal in one table: the input and the error it must get.
#[test]
fn refuses_malformed_text_with_typed_errors() {
    let cases: &[(&str, FixedPointError)] = &[
        ("", Empty),
        ("-1", Negative),
        ("-0.5", Negative),
        ("+1", LeadingPlus),
        ("1e5", Exponent),
        ("1.5E-3", Exponent),
        ("NaN", NotANumber),
        ("nan", NotANumber),
        ("Infinity", NotANumber),
        (".", MissingDigits),
        (".5", MissingDigits),
        ("1.", MissingDigits),
        ("1..2", MissingDigits),
        ("1.2.3", MultipleDots),
        ("12a", InvalidCharacter),
        ("1.2a", InvalidCharacter),
        ("1 ", InvalidCharacter),
        (" 1", InvalidCharacter),
        ("0x10", InvalidCharacter),
        ("1.000000001", TooPrecise),
        ("0.123456789", TooPrecise),
        ("1.123456780001", TooPrecise),
        ("1.12345678a", InvalidCharacter),
        ("1.12345678.0", MultipleDots),
        ("184467440737.09551616", Overflow),
        ("184467440738", Overflow),
        ("99999999999999999999999", Overflow),
    ];
    for &(text, error) in cases {
        assert_eq!(parse(text), Err(error), "{text:?}");
    }
}

#[test]
fn formats_with_eight_decimals() {
    assert_eq!(
        FixedPoint::from_raw(1_200_000_000).to_string(),
        "12.00000000"
    );
    assert_eq!(FixedPoint::from_raw(6_824_000).to_string(), "0.06824000");
    assert_eq!(FixedPoint::MAX.to_string(), "184467440737.09551615");
    let spread = FixedPoint::from_raw(5).signed_difference(FixedPoint::from_raw(105));
    assert_eq!(spread.to_string(), "-0.00000100");
    let price = FixedPoint::from_raw(932_828_000_000);
    assert_eq!(price.with_decimals(2).to_string(), "9328.28");
    assert_eq!(
        price.with_decimals(0).to_string(),
        "9328.28000000",
        "never drops digits"
    );
    assert_eq!(
        FixedPoint::from_raw(1).with_decimals(2).to_string(),
        "0.00000001"
    );
}

#[test]
fn to_f64_is_the_nearest_double() {
    // Adding the integer part to the fraction / 1e8 rounds twice: one ulp off here.
    assert_eq!(
        "2.76501066".parse::<FixedPoint>().unwrap().to_f64(),
        2.76501066
    );
    let max: f64 = "184467440737.09551615".parse().unwrap();
    assert_eq!(FixedPoint::MAX.to_f64(), max);
    assert_eq!(FixedPoint::ZERO.to_f64(), 0.0);
}

proptest::proptest! {
    /// Eight bytes a check end where the byte-by-byte count does, from any start, over any
    /// mix of digits and the bytes around numbers.
    #[test]
    fn digits_end_is_the_end_of_the_run_of_digits(
        text in proptest::collection::vec(proptest::sample::select(&b"0123456789/:.,\"e-"[..]), 0..40),
        from in 0usize..40,
    ) {
        let from = from.min(text.len());
        let by_byte = from + text[from..].iter().take_while(|byte| byte.is_ascii_digit()).count();
        proptest::prop_assert_eq!(digits_end(&text, from), by_byte);
    }

    /// Against the standard library's correctly rounded parse of the exact text, for
    /// values of every magnitude (`shift`), on both sides of 2^53.
    #[test]
    fn to_f64_rounds_like_parsing_the_text(raw: u64, shift in 0u32..64) {
        let value = FixedPoint::from_raw(raw >> shift);
        let nearest: f64 = value.to_string().parse().unwrap();
        proptest::prop_assert_eq!(value.to_f64().to_bits(), nearest.to_bits());
    }

    #[test]
    fn format_then_parse_round_trips(raw: u64) {
        let value = FixedPoint::from_raw(raw);
        proptest::prop_assert_eq!(value.to_string().parse::<FixedPoint>(), Ok(value));
    }

    /// The hand-written formatter agrees with `core::fmt` for every value and every
    /// count of decimals: `shift` gives values of every magnitude, `zeros` values that
    /// end in zeros, which it shortens.
    #[test]
    fn formats_like_core_fmt(raw: u64, shift in 0u32..64, zeros in 0u32..=8, decimals in 0u32..12) {
        let raw = raw >> shift;
        let raw = raw - raw % 10u64.pow(zeros);
        let (integer, fraction) = (raw / SCALE, raw % SCALE);
        let all_eight = format!("{integer}.{fraction:08}");
        let kept = decimals.min(DECIMALS) as usize;
        let expected = if !all_eight.ends_with(&"0".repeat(DECIMALS as usize - kept)) {
            all_eight
        } else if kept == 0 {
            integer.to_string()
        } else {
            all_eight[..all_eight.len() - (DECIMALS as usize - kept)].to_owned()
        };
        let text = FixedPoint::from_raw(raw).with_decimals(decimals);
        proptest::prop_assert_eq!(text.as_str(), &expected);
        let mut appended = b"[\"".to_vec();
        FixedPoint::from_raw(raw).append_decimal(decimals, &mut appended);
        proptest::prop_assert_eq!(appended, format!("[\"{expected}").into_bytes());
    }

    /// The SWAR parser agrees with an obvious per-digit reference on any short text.
    #[test]
    fn agrees_with_reference(text in "[0-9.eE+-]{0,24}") {
        proptest::prop_assert_eq!(
            FixedPoint::parse(text.as_bytes()).ok(),
            reference_parse(&text)
        );
    }

    /// `parse`'s fast path answers exactly what `parse_in` answers, error included, on
    /// texts around the shape it reads: 0 to 9 digits, mostly a dot (or another byte),
    /// 0 to 10 digits, and sometimes one byte changed.
    #[test]
    fn common_shape_agrees_with_the_exact_path(
        integer in "[0-9]{0,9}",
        separator in proptest::sample::select(&[".", ".", ".", "e", "+", "-"][..]),
        fraction in "[0-9]{0,10}",
        changed in proptest::option::of((0usize..20, "[0-9. /:eE+-]")),
    ) {
        let mut text = format!("{integer}{separator}{fraction}").into_bytes();
        if let Some((index, byte)) = changed && index < text.len() {
            text[index] = byte.as_bytes()[0];
        }
        let exact = FixedPoint::parse_in(&text, 0, text.len());
        proptest::prop_assert_eq!(FixedPoint::parse(&text), exact);
        let fast = FixedPoint::parse_common_shape(&text);
        if let Some(value) = fast {
            proptest::prop_assert_eq!(Ok(value), exact);
        }
        let text = std::str::from_utf8(&text).expect("ASCII");
        let common_shape = text.split_once('.').is_some_and(|(integer, fraction)| {
            (1..=7).contains(&integer.len())
                && (1..=8).contains(&fraction.len())
                && text.len() >= 8
                && (integer.bytes().chain(fraction.bytes())).all(|b| b.is_ascii_digit())
        });
        proptest::prop_assert_eq!(fast.is_some(), common_shape, "{}", text);
    }

    /// The paired conversion (SIMD where the build has SSE4.1) agrees with the scalar
    /// one on any two words of digits.
    #[test]
    fn paired_conversion_agrees_with_scalar(first in "[0-9]{8}", second in "[0-9]{8}") {
        let word = |digits: &str| u64::from_le_bytes(*digits.as_bytes().first_chunk().unwrap());
        let (first, second) = (word(&first), word(&second));
        proptest::prop_assert_eq!(
            eight_digits_values(first, second),
            (eight_digits_value(first), eight_digits_value(second))
        );
    }

    /// The in-frame fast path reads every shape exchanges send (up to 8 digits on each
    /// side of the dot, then the closing quote), whatever bytes follow, and agrees with
    /// the reference; on anything else it either declines or still agrees.
    #[test]
    fn quoted_fast_path_agrees_with_reference(
        number in "[0-9]{1,8}(\\.[0-9]{1,8})?",
        mixed in "[0-9.eE+-]{0,18}",
        after in proptest::collection::vec(proptest::num::u8::ANY, 17),
    ) {
        let text = [number.as_bytes(), b"\"", &after].concat();
        let (value, len) = FixedPoint::parse_quoted_fast(&text).expect("an exchange's shape");
        proptest::prop_assert_eq!(len, number.len());
        proptest::prop_assert_eq!(Some(value), reference_parse(&number));

        let text = [mixed.as_bytes(), b"\"", &after].concat();
        if let Some((value, len)) = FixedPoint::parse_quoted_fast(&text) {
            proptest::prop_assert_eq!(len, mixed.len());
            proptest::prop_assert_eq!(Some(value), reference_parse(&mixed));
        }
    }

    /// The bare fast path: every exchange's shape (up to 8 digits on each side of the
    /// dot, no leading zero) ended by what may follow a JSON value, and agrees with
    /// the reference; on anything else it declines or still agrees.
    #[test]
    fn bare_fast_path_agrees_with_reference(
        number in "([1-9][0-9]{0,6}|0)(\\.[0-9]{1,8})?",
        end in proptest::sample::select(&b",}] \n"[..]),
        mixed in "[0-9.eE+-]{0,18}",
        after in proptest::collection::vec(proptest::num::u8::ANY, 17),
    ) {
        let text = [number.as_bytes(), &[end], &after].concat();
        let (value, len) = FixedPoint::parse_bare_fast(&text).expect("an exchange's shape");
        proptest::prop_assert_eq!(len, number.len());
        proptest::prop_assert_eq!(Some(value), reference_parse(&number));

        let text = [mixed.as_bytes(), &[end], &after].concat();
        if let Some((value, len)) = FixedPoint::parse_bare_fast(&text) {
            proptest::prop_assert_eq!(len, mixed.len());
            proptest::prop_assert_eq!(Some(value), reference_parse(&mixed));
        }
    }
}

/// The obvious parser: split on '.', require digits, pad or check the fraction.
fn reference_parse(text: &str) -> Option<FixedPoint> {
    let (integer, fraction) = match text.split_once('.') {
        Some((integer, fraction)) => (integer, Some(fraction)),
        None => (text, None),
    };
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(integer) || fraction.is_some_and(|f| !all_digits(f)) {
        return None;
    }
    let fraction = fraction.unwrap_or("");
    let (kept, extra) = fraction.split_at(fraction.len().min(8));
    if extra.bytes().any(|b| b != b'0') {
        return None;
    }
    let integer: u128 = integer.parse().ok()?;
    let fraction: u128 = format!("{kept:0<8}").parse().ok()?;
    u64::try_from(integer * u128::from(SCALE) + fraction)
        .ok()
        .map(FixedPoint)
}

/// Numbers with an exponent, exactly: the mantissa's digits moved, zeros shifted out
/// allowed, anything else past 8 decimals or the range refused.
#[test]
fn scientific_numbers_are_exact_or_refused() {
    use FixedPointError::*;
    let parse = |text: &str| FixedPoint::parse_scientific(text.as_bytes()).map(FixedPoint::raw);
    let cases: &[(&str, Result<u64, FixedPointError>)] = &[
        ("2.2e3", Ok(2_200 * 100_000_000)),
        ("6.55e-6", Ok(655)),
        ("6.55E-6", Ok(655)),
        ("1e-8", Ok(1)),
        ("1e-9", Err(TooPrecise)),
        ("10e-9", Ok(1)),
        ("1.50e-8", Err(TooPrecise)),
        ("1.0e-8", Ok(1)),
        ("12345e+2", Ok(1_234_500 * 100_000_000)),
        ("0e5", Ok(0)),
        ("0.000e-20", Ok(0)),
        ("1e11", Ok(100_000_000_000 * 100_000_000)),
        ("1e12", Err(Overflow)),
        ("1e99999", Err(Overflow)),
        ("1e-99999", Err(TooPrecise)),
        ("228.51", Ok(22_851_000_000)),
        ("1e", Err(InvalidCharacter)),
        ("1e+", Err(InvalidCharacter)),
        (".5e3", Err(MissingDigits)),
        ("5.e3", Err(MissingDigits)),
        ("-1e3", Err(Negative)),
        ("1e3.5", Err(InvalidCharacter)),
    ];
    for (text, expected) in cases {
        assert_eq!(parse(text), *expected, "{text}");
    }
}

proptest::proptest! {
    /// Any value of at most 8 decimals, written as digits and an exponent (its raw digits,
    /// with `shift` zeros more, times 10^-(8 + shift)), or as its decimal text with `e0`,
    /// parses to itself.
    #[test]
    fn scientific_text_of_a_value_parses_to_it(raw in 0u64..1u64 << 60, shift in 0u32..12) {
        let value = Ok(FixedPoint::from_raw(raw));
        let moved = format!("{}e-{}", u128::from(raw) * 10u128.pow(shift), shift + 8);
        proptest::prop_assert_eq!(FixedPoint::parse_scientific(moved.as_bytes()), value);
        let plain = format!("{}e0", FixedPoint::from_raw(raw));
        proptest::prop_assert_eq!(FixedPoint::parse_scientific(plain.as_bytes()), value);
    }
}

/// A unit size is a power of ten written out, either way of the coin, and nothing else.
#[test]
fn unit_sizes_are_powers_of_ten() {
    for (text, exponent) in [
        ("1", 0),
        ("10", 1),
        ("1000000", 6),
        ("0.1", -1),
        ("0.001", -3),
    ] {
        let unit = UnitSize::parse(text).unwrap_or_else(|| panic!("{text}"));
        assert_eq!(unit.exponent(), exponent, "{text}");
        assert_eq!(unit.to_string(), text);
    }
    let most = format!("1{}", "0".repeat(18));
    assert_eq!(UnitSize::parse(&most).map(UnitSize::exponent), Some(18));
    for refused in [
        "",
        "0",
        "2",
        "100.0",
        "1e6",
        "01",
        "0.0",
        "0.02",
        "-10",
        &format!("{most}0"),
    ] {
        assert_eq!(UnitSize::parse(refused), None, "{refused:?}");
    }
}

/// What no coin-counted `FixedPoint` holds, an instrument in units of many coins reads
/// exactly: a price below 10^-8 and an amount past 10^11. What still does not fit is
/// refused, never rounded.
#[test]
fn numbers_past_the_coin_s_range_are_exact_in_a_larger_unit() {
    use FixedPointError::*;
    let million = UnitSize::parse("1000000").unwrap();
    let read = |measure, text: &str| {
        million
            .parse_number(measure, text.as_bytes())
            .map(FixedPoint::raw)
    };
    assert_eq!(FixedPoint::parse(b"0.0000000123"), Err(TooPrecise));
    assert_eq!(
        read(Measure::Price, "0.0000000123"),
        Ok(1_230_000),
        "0.0123 a million"
    );
    assert_eq!(FixedPoint::parse(b"250000000000000"), Err(Overflow));
    assert_eq!(
        read(Measure::Amount, "250000000000000"),
        Ok(250_000_000 * SCALE),
        "250,000,000 millions"
    );
    assert_eq!(read(Measure::Amount, "1.5"), Ok(150), "0.0000015 millions");
    assert_eq!(
        read(Measure::Amount, "0.015"),
        Err(TooPrecise),
        "1.5 × 10^-8 millions"
    );
    assert_eq!(
        read(Measure::Price, "200000"),
        Err(Overflow),
        "2 × 10^11 a million"
    );
    assert_eq!(read(Measure::Price, "-1"), Err(Negative));
    let thousandth = UnitSize::parse("0.001").unwrap();
    let fine = thousandth.parse_number(Measure::Amount, b"0.00000000001");
    assert_eq!(
        fine.map(FixedPoint::raw),
        Ok(1),
        "10^-11 coins are 10^-8 thousandths"
    );
}

proptest::proptest! {
    /// A value in any unit, written as the wire writes it, reads back as itself, at its
    /// shortest too; at the coin, the text is the coin's own.
    #[test]
    fn a_unit_s_wire_text_reads_back(
        raw in 0u64..u64::MAX,
        exponent in -UnitSize::MAX_EXPONENT..=UnitSize::MAX_EXPONENT,
        decimals in 0u32..12,
        price in proptest::bool::ANY,
    ) {
        let unit = UnitSize::from_exponent(exponent).unwrap();
        let measure = Measure::of_price(price);
        let value = FixedPoint::from_raw(raw);
        let text = unit.wire_text(measure, value, decimals);
        proptest::prop_assert_eq!(unit.parse_number(measure, text.as_bytes()), Ok(value), "{}", text);
        let shortest = text.shortest();
        proptest::prop_assert_eq!(unit.parse_number(measure, shortest.as_bytes()), Ok(value), "{}", shortest);
        proptest::prop_assert!(!shortest.as_str().contains('.') || !shortest.as_str().ends_with('0'));
        if unit.is_coin() && decimals <= 8 {
            let coin_text = value.with_decimals(decimals);
            proptest::prop_assert_eq!(text.as_str(), coin_text.as_str());
        }
    }
}

/// A decode reads the unit of the scope it runs in, and the one around it after.
#[test]
fn the_decoding_unit_is_the_scope_s() {
    let million = UnitSize::parse("1000000").unwrap();
    assert_eq!(UnitSize::of_decoding(), UnitSize::COIN);
    let inner = million.decoding(|| {
        let nested = UnitSize::COIN.decoding(UnitSize::of_decoding);
        (UnitSize::of_decoding(), nested)
    });
    assert_eq!(inner, (million, UnitSize::COIN));
    assert_eq!(UnitSize::of_decoding(), UnitSize::COIN);
}
