//! Currencies and the conversion of a venue's book into an instrument's currency: which
//! price of a rate converts which side, and how the result is rounded, so that a converted
//! level is never better for the trader than what the venue and the rate really offer.
//!
//! A venue quoting BTC in USDT joins a BTC/USD book through a USDT/USD rate: its bids
//! times the rate's bid (selling BTC for USDT, then the USDT for USD), its asks times the
//! rate's ask (buying the USDT with USD first), each rounded to the instrument's price
//! step against the trader: bids down, asks up. A venue quoted in the rate's other
//! currency divides instead (bids by the rate's ask, asks by its bid). Pure, and
//! allocation-free: the merger converts books on its hot path.

#[cfg(test)]
mod tests;

use crate::book::{Level, Levels, MAX_DEPTH, Side, TopBook};
use crate::fixed::{FixedPoint, SCALE};
use std::fmt;

/// The longest currency code: `FDUSD` and the like fit, with room.
const MAX_CODE: usize = 10;

/// A currency or coin by its code (`USD`, `USDT`, `BTC`): upper-case ASCII letters and
/// digits. Inline and `Copy`, so a summary can carry it.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Currency {
    len: u8,
    code: [u8; MAX_CODE],
}

impl Currency {
    /// `text` as a code: 1 to 10 letters and digits, upper-cased (`usdt` is `USDT`).
    pub fn parse(text: &str) -> Option<Currency> {
        let valid = (1..=MAX_CODE).contains(&text.len())
            && text.bytes().all(|byte| byte.is_ascii_alphanumeric());
        if !valid {
            return None;
        }
        let mut code = [0; MAX_CODE];
        code[..text.len()].copy_from_slice(text.as_bytes());
        code.make_ascii_uppercase();
        Some(Currency {
            len: text.len() as u8,
            code,
        })
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.code[..usize::from(self.len)]).expect("ASCII by construction")
    }
}

impl fmt::Display for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for Currency {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What one unit of a pair's base currency sells for (`bid`) and costs (`ask`) in its
/// quote currency, and when the book it was read from was received.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rate {
    pub bid: FixedPoint,
    pub ask: FixedPoint,
    /// Monotonic ns (`clock::monotonic_ns`) of the older of the two books its prices come
    /// from; 0 for a fixed rate, which has no age.
    pub received_ns: u64,
}

impl Rate {
    /// A rate an operator sets: the same price both ways, no age.
    pub fn fixed(price: FixedPoint) -> Rate {
        Rate {
            bid: price,
            ask: price,
            received_ns: 0,
        }
    }

    /// Whether it can convert: both prices above zero. (A rate read across venues may be
    /// locked or crossed: each of its prices is still one a trader can deal at.)
    pub fn is_usable(&self) -> bool {
        !self.bid.is_zero() && !self.ask.is_zero()
    }
}

/// A venue's taker fee: what a trader pays on the value of every order that takes
/// liquidity, in basis points (1 bp = 0.01 %). Applied to a level it is a rate: a bid sold
/// into yields its price times `1 - fee`, an ask bought costs its price times `1 + fee`
/// (`TakerFee::rate`), rounded against the trader as a conversion is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TakerFee {
    bps: FixedPoint,
}

impl TakerFee {
    /// The highest fee a configuration may set: 10 %.
    pub const MAX_BPS: FixedPoint = FixedPoint::from_raw(1_000 * SCALE);
    /// A fee's basis points keep at most this many fractional digits, so that the
    /// fraction (bps / 10,000) is exact in a `FixedPoint`'s eight.
    pub const BPS_DECIMALS: u32 = 4;

    /// `bps` basis points; `None` above `MAX_BPS` or with more than `BPS_DECIMALS`
    /// fractional digits.
    pub fn from_bps(bps: FixedPoint) -> Option<TakerFee> {
        let exact = bps
            .raw()
            .is_multiple_of(10u64.pow(crate::fixed::DECIMALS - Self::BPS_DECIMALS));
        (exact && bps <= Self::MAX_BPS).then_some(TakerFee { bps })
    }

    pub fn bps(&self) -> FixedPoint {
        self.bps
    }

    pub fn is_zero(&self) -> bool {
        self.bps.is_zero()
    }

    /// The fee as a fraction of a price (10 bps is 0.001).
    pub fn fraction(&self) -> FixedPoint {
        FixedPoint::from_raw(self.bps.raw() / 10_000)
    }

    /// The fee as the rate a level's price is multiplied by (`Direction::Multiply`): a
    /// bid by `1 - fee`, an ask by `1 + fee`.
    pub fn rate(&self) -> Rate {
        let fraction = self.fraction().raw();
        Rate {
            bid: FixedPoint::from_raw(SCALE - fraction),
            ask: FixedPoint::from_raw(SCALE + fraction),
            received_ns: 0,
        }
    }
}

/// The basis points in the fewest digits: `10`, `7.5`.
impl fmt::Display for TakerFee {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = self.bps.with_decimals(Self::BPS_DECIMALS);
        let text = text.as_str();
        match text.contains('.') {
            true => f.write_str(text.trim_end_matches('0').trim_end_matches('.')),
            false => f.write_str(text),
        }
    }
}

/// Which way a venue's prices go through its rate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// The venue quotes in the pair's base (USDT of USDT/USD, for a USD instrument):
    /// its prices times the rate.
    Multiply,
    /// The venue quotes in the pair's quote (USD of USDT/USD, for a USDT instrument):
    /// its prices divided by the rate.
    Divide,
}

/// What a converted venue's amounts become.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Amounts {
    /// As the venue gives them: an amount of the base coin, in an instrument that counts
    /// its amounts so.
    AsGiven,
    /// An amount of the base coin, as its notional in the instrument's currency: times the
    /// converted price, rounded down.
    Notional,
    /// An inverse venue's notional in its own currency (contracts times their value), in
    /// the instrument's: times the converted price over the native one, rounded down (the
    /// same base amount, valued at the converted price).
    NotionalConverted,
}

/// How one venue's book becomes the instrument's: the direction through the rate, the
/// instrument's price step that converted prices are rounded to, and what its amounts
/// become.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conversion {
    pub direction: Direction,
    pub amounts: Amounts,
    /// Raw `FixedPoint` units (1 = 0.00000001), at least 1.
    price_step: u64,
    /// ⌈2^128 / price_step⌉, for remainders by it without a division (0 for a step of 1).
    step_magic: u128,
}

/// Why a book could not be converted: a converted price beyond what a `FixedPoint` holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("a converted price does not fit a FixedPoint")]
pub struct OutOfRange;

impl Conversion {
    /// `price_step`: raw units, at least 1. Amounts as given.
    pub fn new(direction: Direction, price_step: u64) -> Conversion {
        let price_step = price_step.max(1);
        Conversion {
            direction,
            amounts: Amounts::AsGiven,
            price_step,
            step_magic: match price_step {
                1 => 0,
                step => u128::MAX / u128::from(step) + 1,
            },
        }
    }

    /// Prices as they are (the venue quotes in the instrument's currency: converted at
    /// `Rate::fixed(ONE)`, to no step), amounts as `amounts`.
    pub fn prices_kept(amounts: Amounts) -> Conversion {
        Conversion::new(Direction::Multiply, 1).with_amounts(amounts)
    }

    pub fn with_amounts(self, amounts: Amounts) -> Conversion {
        Conversion { amounts, ..self }
    }

    /// `amount` of a level at `native` price, converted to `price`, as `self.amounts`
    /// says; `None` past a `FixedPoint`.
    #[inline(always)]
    fn amount(&self, amount: FixedPoint, native: FixedPoint, price: FixedPoint) -> Option<u64> {
        match self.amounts {
            Amounts::AsGiven => Some(amount.raw()),
            Amounts::Notional => multiply(amount.raw(), price.raw()).map(|(value, _)| value),
            Amounts::NotionalConverted => {
                let value = u128::from(amount.raw()) * u128::from(price.raw());
                u64::try_from(value / u128::from(native.raw().max(1))).ok()
            }
        }
    }

    /// `value % price_step`, by Lemire, Kaser and Kurz's direct computation ("Faster
    /// Remainder by Direct Computation", 2019: exact for every 64-bit value and divisor
    /// with a 128-bit magic): three multiplications. A remainder by a variable is a
    /// hardware division, tens of cycles, twice a level (`summarize_8x10_converted` in
    /// BENCHMARKS.md); the step is only known at run time.
    #[inline]
    fn remainder(&self, value: u64) -> u64 {
        if self.price_step == 1 {
            return 0;
        }
        let fraction = self.step_magic.wrapping_mul(u128::from(value));
        let step = u128::from(self.price_step);
        let low = (u128::from(fraction as u64) * step) >> 64;
        (((fraction >> 64) * step + low) >> 64) as u64
    }

    /// `price` on `side` through `rate`, rounded against the trader: a bid is the
    /// greatest multiple of the price step at or below the exact value, an ask the least
    /// at or above it.
    #[inline]
    pub fn price(&self, side: Side, price: FixedPoint, rate: &Rate) -> Result<u64, OutOfRange> {
        let (value, inexact) = match (self.direction, side) {
            (Direction::Multiply, Side::Bid) => multiply(price.raw(), rate.bid.raw()),
            (Direction::Multiply, Side::Ask) => multiply(price.raw(), rate.ask.raw()),
            (Direction::Divide, Side::Bid) => divide(price.raw(), rate.ask.raw()),
            (Direction::Divide, Side::Ask) => divide(price.raw(), rate.bid.raw()),
        }
        .ok_or(OutOfRange)?;
        let remainder = self.remainder(value);
        Ok(match (side, remainder, inexact) {
            (Side::Bid, _, _) => value - remainder,
            (Side::Ask, 0, false) => value,
            (Side::Ask, _, _) => (value - remainder)
                .checked_add(self.price_step)
                .ok_or(OutOfRange)?,
        })
    }

    /// One level of `side` converted, as `side` converts each (for a walk of a whole book,
    /// level by level): `None` where its price rounds to zero (a bid worth nothing, as is
    /// every bid below it). Its amount may round down to nothing.
    pub fn level(
        &self,
        side: Side,
        level: Level,
        rate: &Rate,
    ) -> Result<Option<Level>, OutOfRange> {
        let price = FixedPoint::from_raw(self.price(side, level.price, rate)?);
        if price.is_zero() {
            return Ok(None);
        }
        let amount = self
            .amount(level.amount, level.price, price)
            .ok_or(OutOfRange)?;
        Ok(Some(Level {
            price,
            amount: FixedPoint::from_raw(amount),
        }))
    }

    /// Writes the best `depth` levels of `native`'s `side` converted into `out`, and each
    /// converted level's native price into `natives`. Levels that round to one price are
    /// one level: their amounts summed, its native price the worse of theirs (what an
    /// order for the whole amount must be priced at). A bid that rounds to zero is worth
    /// nothing and is left out, with what is below it; so is a level whose notional
    /// rounds down to nothing.
    pub fn side(
        &self,
        side: Side,
        native: &Levels,
        depth: usize,
        rate: &Rate,
        out: &mut Levels,
        natives: &mut [FixedPoint; MAX_DEPTH],
    ) -> Result<(), OutOfRange> {
        out.clear();
        let mut count = 0;
        for level in native.as_slice().iter().take(depth) {
            let price = FixedPoint::from_raw(self.price(side, level.price, rate)?);
            if price.is_zero() {
                break;
            }
            let amount = self
                .amount(level.amount, level.price, price)
                .ok_or(OutOfRange)?;
            // A notional can round down to nothing: such a level adds nothing to the one
            // it rounds to, and is not one of its own (a book holds no empty level).
            let merged = count > 0 && out.as_slice()[count - 1].price == price;
            if merged {
                let last = &mut out.as_mut_slice()[count - 1];
                let total = last.amount.raw().checked_add(amount);
                last.amount = FixedPoint::from_raw(total.ok_or(OutOfRange)?);
                if amount != 0 {
                    natives[count - 1] = level.price;
                }
            } else if amount != 0 {
                out.push(Level {
                    price,
                    amount: FixedPoint::from_raw(amount),
                });
                natives[count] = level.price;
                count += 1;
            }
        }
        Ok(())
    }

    /// The best `depth` levels of both sides of `native` converted into `out` (its stamps
    /// copied), the native prices into `natives`.
    pub fn book(
        &self,
        native: &TopBook,
        depth: usize,
        rate: &Rate,
        out: &mut TopBook,
        natives: &mut NativePrices,
    ) -> Result<(), OutOfRange> {
        let (bids, asks) = (&mut out.bids, &mut out.asks);
        self.side(
            Side::Bid,
            &native.bids,
            depth,
            rate,
            bids,
            &mut natives.bids,
        )?;
        self.side(
            Side::Ask,
            &native.asks,
            depth,
            rate,
            asks,
            &mut natives.asks,
        )?;
        out.venue_sequence = native.venue_sequence;
        out.received_ns = native.received_ns;
        out.exchange_time_ns = native.exchange_time_ns;
        Ok(())
    }
}

/// The native price of each level of a converted book, by side and position.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NativePrices {
    pub bids: [FixedPoint; MAX_DEPTH],
    pub asks: [FixedPoint; MAX_DEPTH],
}

impl Default for NativePrices {
    fn default() -> Self {
        NativePrices {
            bids: [FixedPoint::ZERO; MAX_DEPTH],
            asks: [FixedPoint::ZERO; MAX_DEPTH],
        }
    }
}

impl NativePrices {
    pub fn side(&self, side: Side) -> &[FixedPoint; MAX_DEPTH] {
        match side {
            Side::Bid => &self.bids,
            Side::Ask => &self.asks,
        }
    }
}

/// `price × rate` in raw units (both scaled by 10^8), truncated, and whether anything was
/// truncated. The common case stays in 64 bits: the price's integer part times the rate,
/// plus its fraction times the rate over 10^8 (a division by a constant, which compiles
/// to a multiplication); 128 bits only where a part overflows.
#[inline]
fn multiply(price: u64, rate: u64) -> Option<(u64, bool)> {
    let (whole, fraction) = (price / SCALE, price % SCALE);
    if let (Some(whole), Some(fraction)) = (whole.checked_mul(rate), fraction.checked_mul(rate)) {
        let value = whole.checked_add(fraction / SCALE)?;
        return Some((value, fraction % SCALE != 0));
    }
    let product = u128::from(price) * u128::from(rate);
    let scale = u128::from(SCALE);
    let value = u64::try_from(product / scale).ok()?;
    Some((value, product % scale != 0))
}

/// `price / rate` in raw units, truncated, and whether anything was truncated.
#[inline]
fn divide(price: u64, rate: u64) -> Option<(u64, bool)> {
    if rate == 0 {
        return None;
    }
    let numerator = u128::from(price) * u128::from(SCALE);
    let rate = u128::from(rate);
    let value = u64::try_from(numerator / rate).ok()?;
    Some((value, numerator % rate != 0))
}
