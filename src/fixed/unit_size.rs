//! An instrument's unit size: how many coins of its base one unit of its amounts is, a
//! power of ten, and so what its prices are per.
//!
//! A `FixedPoint` holds 8 decimals and at most about 1.8 × 10^11. Venues list coins priced
//! below 10^-8 (ticks of 10^-10) whose books hold sizes past 10^11 coins. Such an
//! instrument counts its amounts in units of 10^k coins and its prices per unit, as the
//! venues' own `1000PEPE` contracts do: the wire's price times 10^k, its amount divided by
//! 10^k. Both are exact (the decimal point moves, no digit is dropped); a number whose
//! digits do not fit at the unit is refused like any other. A price times an amount (a
//! notional, a fee, the cost of a size) is the same in any unit, and so are rates, fees,
//! bands and contract sizes (coins per contract). A unit below one coin (`0.001`) is for
//! amounts finer than 10^-8.
//!
//! The decoders learn the unit of the frame they read from their thread: a reader decodes
//! each frame inside [`UnitSize::decoding`] with its connection's unit (the streams of a
//! connection share one: the planner puts instruments of different units on different
//! connections), and the walker reads it once a frame. A thread-local, not a parameter of
//! every decoder: a decode outside any scope reads coins, and no decoder, fast path or
//! venue added later can read an instrument's numbers in the wrong unit by not passing it
//! on. Numbers of a unit other than the coin take the exact general parse; the fast paths
//! serve the coin.

use super::{DECIMALS, FixedPoint, FixedPointError, StackText};
use std::cell::Cell;
use std::fmt;

/// 10^`exponent` coins of an instrument's base.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct UnitSize {
    exponent: i8,
}

/// Which of a level's two numbers a text is: they move in opposite directions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Measure {
    /// Quote currency per unit: the wire's price times the unit size.
    Price,
    /// Units: the wire's amount divided by the unit size.
    Amount,
}

impl Measure {
    /// A price where `is_price`, else an amount.
    pub fn of_price(is_price: bool) -> Measure {
        match is_price {
            true => Measure::Price,
            false => Measure::Amount,
        }
    }
}

thread_local! {
    /// The unit of the numbers decoded on this thread now ([`UnitSize::decoding`]).
    static DECODING: Cell<UnitSize> = const { Cell::new(UnitSize::COIN) };
}

impl UnitSize {
    /// One coin: numbers as the wire writes them.
    pub const COIN: UnitSize = UnitSize { exponent: 0 };
    /// 10^18 and 10^-18: every power of ten a `u64` holds, either way.
    pub const MAX_EXPONENT: i8 = 18;

    /// 10^`exponent` coins, within ±[`UnitSize::MAX_EXPONENT`].
    pub fn from_exponent(exponent: i8) -> Option<UnitSize> {
        (exponent.abs() <= Self::MAX_EXPONENT).then_some(UnitSize { exponent })
    }

    /// A power of ten as written in a configuration: `"1000000"`, `"1"`, `"0.001"`.
    pub fn parse(text: &str) -> Option<UnitSize> {
        let all_zeros = |zeros: &str| zeros.bytes().all(|b| b == b'0');
        let exponent = match text.split_once('.') {
            None => {
                let zeros = text.strip_prefix('1').filter(|zeros| all_zeros(zeros))?;
                zeros.len() as i64
            }
            Some(("0", fraction)) => {
                let zeros = fraction
                    .strip_suffix('1')
                    .filter(|zeros| all_zeros(zeros))?;
                -(zeros.len() as i64 + 1)
            }
            Some(_) => return None,
        };
        Self::from_exponent(i8::try_from(exponent).ok()?)
    }

    pub fn exponent(self) -> i8 {
        self.exponent
    }

    pub fn is_coin(self) -> bool {
        self.exponent == 0
    }

    /// The power of ten a wire number of `measure` is multiplied by.
    fn power(self, measure: Measure) -> i64 {
        match measure {
            Measure::Price => i64::from(self.exponent),
            Measure::Amount => -i64::from(self.exponent),
        }
    }

    /// The wire's text of a number of `measure`, in this unit, exactly.
    pub fn parse_number(
        self,
        measure: Measure,
        text: &[u8],
    ) -> Result<FixedPoint, FixedPointError> {
        FixedPoint::parse_times_ten_to(text, self.power(measure))
    }

    /// `value` of `measure` in this unit as the wire writes it: with `decimals` fractional
    /// digits where the digits past them are zeros, with all its places otherwise (as
    /// `FixedPoint::with_decimals` writes the coin's). For what is checked against a
    /// venue's own text (its checksum).
    pub fn wire_text(self, measure: Measure, value: FixedPoint, decimals: u32) -> WireText {
        // The wire's value is raw × 10^-(8 + power).
        let places = i64::from(DECIMALS) + self.power(measure);
        let raw = u128::from(value.raw());
        let (digits, places) = match u32::try_from(-places) {
            Ok(zeros) => (raw * 10u128.pow(zeros), 0),
            Err(_) => (raw, places as u32),
        };
        let scale = 10u128.pow(places);
        let (integer, mut fraction) = (digits / scale, digits % scale);
        let mut kept = places;
        if decimals < places && fraction.is_multiple_of(10u128.pow(places - decimals)) {
            fraction /= 10u128.pow(places - decimals);
            kept = decimals;
        }
        // Trailing zeros the wire writes past the unit's places (Bitget's `"135.0000"`),
        // as many as the text has room for.
        let integer_digits = integer.checked_ilog10().map_or(1, |log| log + 1);
        let room = WIRE_TEXT_BYTES as u32 - 1 - integer_digits;
        while kept < decimals.min(room) {
            fraction *= 10;
            kept += 1;
        }
        let mut text = WireText::EMPTY;
        text.push_digits(integer, 1);
        if kept > 0 {
            text.bytes[text.len] = b'.';
            text.len += 1;
            text.push_digits(fraction, kept as usize);
        }
        text
    }

    /// Runs `decode` with this unit as the unit of the numbers decoded on this thread,
    /// and the one before restored after it.
    #[inline]
    pub fn decoding<R>(self, decode: impl FnOnce() -> R) -> R {
        let before = DECODING.replace(self);
        let decoded = decode();
        DECODING.set(before);
        decoded
    }

    /// The unit of the numbers decoded on this thread now.
    #[inline]
    pub fn of_decoding() -> UnitSize {
        DECODING.get()
    }
}

/// The unit size as a configuration writes it: `1000000`, `1`, `0.001`.
impl fmt::Display for UnitSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let zeros = usize::from(self.exponent.unsigned_abs());
        match self.exponent >= 0 {
            true => write!(f, "1{:0<zeros$}", ""),
            false => write!(f, "0.{:0<width$}1", "", width = zeros - 1),
        }
    }
}

impl fmt::Debug for UnitSize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "UnitSize({self})")
    }
}

/// A number's text as a venue writes it ([`UnitSize::wire_text`]).
pub type WireText = StackText<WIRE_TEXT_BYTES>;

/// A `u64`'s 20 digits moved 18 places either way, with `0.` or a dot.
const WIRE_TEXT_BYTES: usize = 40;

impl WireText {
    /// `value`'s digits, at least `width` of them (leading zeros).
    fn push_digits(&mut self, mut value: u128, width: usize) {
        let mut reversed = [0u8; WIRE_TEXT_BYTES];
        let mut count = 0;
        while value > 0 || count < width {
            reversed[count] = b'0' + (value % 10) as u8;
            value /= 10;
            count += 1;
        }
        for (at, &digit) in reversed[..count].iter().rev().enumerate() {
            self.bytes[self.len + at] = digit;
        }
        self.len += count;
    }

    /// The text without trailing fractional zeros (`"8477"`, `"0.0000102"`), as OKX and
    /// Gate write their numbers.
    pub fn shortest(mut self) -> WireText {
        if self.as_bytes().contains(&b'.') {
            while self.bytes[self.len - 1] == b'0' {
                self.len -= 1;
            }
            if self.bytes[self.len - 1] == b'.' {
                self.len -= 1;
            }
        }
        self
    }
}
