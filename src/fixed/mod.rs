//! `FixedPoint`: an exact, unsigned decimal with 8 fractional digits (`u64` scaled by 10^8).
//!
//! Every price and amount in mergebook is one of these, from the wire text to the consumer.
//! Eight fractional digits is what Binance and Bitstamp send; a value with more digits is
//! accepted only when the extra digits are zeros, because anything else would have to be
//! rounded, and a book that silently rounds is wrong.
//!
//! Parsing is SWAR (SIMD within a register): up to 8 ASCII digits are validated and
//! converted with a handful of multiply-shifts on one `u64` instead of a loop with a
//! multiply-add dependency chain per digit; a number's integer and fraction words are
//! converted together in one SSE register where the build has SSE4.1. It is written by
//! hand because it is the innermost operation of every decoder (two per price level);
//! general-purpose decimal crates parse through a per-digit loop.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// Number of fractional digits kept exactly.
pub const DECIMALS: u32 = 8;
/// The scale: the raw value of `1`.
pub const SCALE: u64 = 10u64.pow(DECIMALS);

/// An exact non-negative decimal with 8 fractional digits.
///
/// Ordering and equality are those of the decimal values.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct FixedPoint(u64);

/// Why a decimal text was refused. Every refusal is one of these; nothing is rounded.
///
/// `repr(u64)`: with the error as wide as a `FixedPoint`, both variants of
/// `Result<FixedPoint, FixedPointError>` hold one `u64` at the same offset, so the result
/// is a pair of scalars and comes back from `parse` in two registers. With a one-byte error
/// it was returned through memory, and a caller's 16-byte copy of it read a 1-byte and an
/// 8-byte store that cannot be forwarded to it: `fixed_point_parse` 15.6 ns → 10.0 ns in
/// alternation, instructions unchanged (docs/decisions.md, "`FixedPointError` as wide as
/// the value").
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[repr(u64)]
pub enum FixedPointError {
    #[error("empty number")]
    Empty,
    #[error("negative numbers are not prices or amounts")]
    Negative,
    #[error("leading '+' is not a JSON number")]
    LeadingPlus,
    #[error("exponent notation is not accepted")]
    Exponent,
    #[error("NaN or infinity is not a number")]
    NotANumber,
    #[error("a '.' must have digits on both sides")]
    MissingDigits,
    #[error("more than one '.'")]
    MultipleDots,
    #[error("unexpected character in number")]
    InvalidCharacter,
    #[error("more than 8 significant fractional digits")]
    TooPrecise,
    #[error("value does not fit in u64 scaled by 10^8")]
    Overflow,
}

// The layout the `repr(u64)` above is for.
const _: () = assert!(size_of::<FixedPointError>() == size_of::<FixedPoint>());

/// Eight ASCII `'0'` bytes.
const ASCII_ZEROS: u64 = 0x3030_3030_3030_3030;
const HIGH_BITS: u64 = 0x8080_8080_8080_8080;
const LOW_7_BITS: u64 = 0x7F7F_7F7F_7F7F_7F7F;
/// Added to `byte ^ '0'` (with the top bit cleared), sets the top bit exactly when the
/// byte is not in `'0'..='9'` (0x76 + 10 = 0x80).
const DIGIT_LIMIT: u64 = 0x7676_7676_7676_7676;

/// Loads `buffer[start..start + min(8, len)]` little-endian (first byte lowest), with the
/// bytes past `len` zeroed, which the digit test below treats as a terminator. Reads the
/// 8 bytes in one load when the buffer has them, even past the number's end: the number
/// sits inside a frame, so this is the common case and needs no copy.
#[inline]
fn load_masked(buffer: &[u8], start: usize, len: usize) -> u64 {
    let word = match buffer.get(start..).and_then(<[u8]>::first_chunk::<8>) {
        Some(chunk) => u64::from_le_bytes(*chunk),
        None => {
            let available = &buffer[start..];
            let mut bytes = [0u8; 8];
            bytes[..available.len()].copy_from_slice(available);
            u64::from_le_bytes(bytes)
        }
    };
    if len >= 8 {
        word
    } else {
        word & ((1u64 << (8 * len)) - 1)
    }
}

/// Number of leading ASCII digits in `word` (0..=8), first byte lowest.
#[inline]
fn leading_digit_count(word: u64) -> usize {
    (non_digit_bytes(word).trailing_zeros() / 8) as usize
}

/// The end of the run of ASCII digits in `bytes` from `from` on: eight bytes a check where
/// eight remain, then byte by byte. What a JSON walk skips most are the times and ids of
/// every event (13 to 16 digits), which a bounds-checked loop a byte read at about ten
/// instructions a digit.
#[inline]
pub(crate) fn digits_end(bytes: &[u8], from: usize) -> usize {
    let mut end = from;
    while let Some(chunk) = bytes.get(end..).and_then(<[u8]>::first_chunk::<8>) {
        let digits = leading_digit_count(u64::from_le_bytes(*chunk));
        end += digits;
        if digits < 8 {
            return end;
        }
    }
    let rest = bytes.get(end..).unwrap_or_default();
    end + rest.iter().take_while(|byte| byte.is_ascii_digit()).count()
}

/// Converts 8 ASCII digits (first byte most significant, stored lowest) to their value:
/// Lemire's multiply-shift, combining pairs, then quads, then the whole. The products
/// overflow by design into bits that the next mask discards.
#[inline]
pub(crate) fn eight_digits_value(word: u64) -> u64 {
    let digits = word & 0x0F0F_0F0F_0F0F_0F0F;
    let pairs = digits.wrapping_mul(10 << 8 | 1) >> 8;
    let quads = (pairs & 0x00FF_00FF_00FF_00FF).wrapping_mul(100 << 16 | 1) >> 16;
    (quads & 0x0000_FFFF_0000_FFFF).wrapping_mul(10_000 << 32 | 1) >> 32
}

/// [`eight_digits_value`] of two words at once: what a number's integer and fraction
/// words need.
///
/// With SSE4.1 (every build from `.cargo/config.toml`, which enables AVX2), in one
/// register: the same pair, quad and half combining as the scalar version, as three
/// multiply-adds (`pmaddubsw`, `pmaddwd`, `pmaddwd` after a pack) on both words together,
/// about half the instructions of two scalar conversions and no 64-bit constants to load.
#[inline(always)]
fn eight_digits_values(first: u64, second: u64) -> (u64, u64) {
    #[cfg(all(target_arch = "x86_64", target_feature = "sse4.1"))]
    {
        use safe_arch::{
            bitand_m128i, mul_i16_horizontal_add_m128i, mul_u8i8_add_horizontal_saturating_m128i,
            pack_i32_to_u16_m128i, set_i64_m128i, set_splat_i8_m128i, set_splat_i16_m128i,
            set_splat_i32_m128i,
        };
        let digits = bitand_m128i(
            set_i64_m128i(second as i64, first as i64),
            set_splat_i8_m128i(0x0F),
        );
        // The first digit of each pair is the more significant one (stored lower).
        let pairs =
            mul_u8i8_add_horizontal_saturating_m128i(digits, set_splat_i16_m128i(1 << 8 | 10));
        let quads = mul_i16_horizontal_add_m128i(pairs, set_splat_i32_m128i(1 << 16 | 100));
        // Each quad is at most 9_999: it fits the unsigned 16 bits the pack saturates to.
        let narrowed = pack_i32_to_u16_m128i(quads, quads);
        let values: [u32; 4] =
            mul_i16_horizontal_add_m128i(narrowed, set_splat_i32_m128i(1 << 16 | 10_000)).into();
        (u64::from(values[0]), u64::from(values[1]))
    }
    #[cfg(not(all(target_arch = "x86_64", target_feature = "sse4.1")))]
    {
        (eight_digits_value(first), eight_digits_value(second))
    }
}

/// The first `count` (0..=8) digits of `word` moved to its top (most significant) end,
/// zero bytes below them: [`eight_digits_value`] keeps each byte's low 4 bits, so a zero
/// byte reads as a `'0'` and the result as the integer the digits spell (`"123"` → 123;
/// no digits → 0).
#[inline(always)]
fn integer_digits(word: u64, count: usize) -> u64 {
    debug_assert!(count <= 8);
    word.checked_shl(8 * (8 - count) as u32).unwrap_or(0)
}

/// The first `count` (1..=8) digits of `word`, the bytes after them cleared: read as 8
/// digits, the fraction scaled by 10^8 (`"5"` → 50_000_000).
#[inline(always)]
fn fraction_digits(word: u64, count: usize) -> u64 {
    debug_assert!((1..=8).contains(&count));
    word & (u64::MAX >> (64 - 8 * count))
}

/// Value of the first `count` (0..=8) digits of `word`, as an integer.
#[inline]
fn integer_value(word: u64, count: usize) -> u64 {
    eight_digits_value(integer_digits(word, count))
}

/// Value of the first `count` (1..=8) digits of `word` read as a fraction scaled by 10^8.
#[inline]
fn fraction_value(word: u64, count: usize) -> u64 {
    eight_digits_value(fraction_digits(word, count))
}

/// The high bit of every byte of `word` that is not an ASCII digit, exactly (no borrow
/// crosses bytes: `(byte & 0x7F) + 0x76` stays below 0x100).
#[inline]
fn non_digit_bytes(word: u64) -> u64 {
    let offset = word ^ ASCII_ZEROS; // a digit becomes 0..=9
    (((offset & LOW_7_BITS) + DIGIT_LIMIT) | offset) & HIGH_BITS
}

/// Whether the eight bytes of `word` are all ASCII digits.
#[inline]
pub(crate) fn is_eight_digits(word: u64) -> bool {
    non_digit_bytes(word) == 0
}

/// The high bit of every byte of `word` that equals `byte`. Exact up to the first one
/// (bits above it may be false positives: borrows), which is all the callers use; so the
/// lowest bit of an OR of two such masks is exact too.
#[inline(always)]
pub(crate) fn matching_bytes(word: u64, byte: u8) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let zero_where_equal = word ^ (ONES * u64::from(byte));
    zero_where_equal.wrapping_sub(ONES) & !zero_where_equal & HIGH_BITS
}

/// The leading ASCII digits of `bytes` (none: `(0, 0)`) as an integer and their count,
/// for up to 16 digits; `None` when `bytes` has fewer than 17 bytes or more than 16
/// digits, for [`long_leading_integer`] to read. Two words, no loop: what
/// `Walker::unsigned` reads is a sequence number or a timestamp of 10 to 16 digits, in
/// every frame.
#[inline]
pub(crate) fn leading_integer(bytes: &[u8]) -> Option<(u64, usize)> {
    const POWERS_OF_TEN: [u64; 9] = [
        1,
        10,
        100,
        1_000,
        10_000,
        100_000,
        1_000_000,
        10_000_000,
        100_000_000,
    ];
    let chunk = bytes.first_chunk::<17>()?;
    let word_at = |index: usize| {
        u64::from_le_bytes(*chunk[index..].first_chunk::<8>().expect("8 of 17 bytes"))
    };
    let (high, low) = (word_at(0), word_at(8));
    let high_len = leading_digit_count(high);
    if high_len < 8 {
        return Some((integer_value(high, high_len), high_len));
    }
    let low_len = leading_digit_count(low);
    if low_len == 8 && chunk[16].is_ascii_digit() {
        return None;
    }
    // Both words convert together.
    let (high_value, low_value) = eight_digits_values(high, integer_digits(low, low_len));
    // At most 99_999_999 * 10^8 + 99_999_999: no overflow.
    Some((high_value * POWERS_OF_TEN[low_len] + low_value, 8 + low_len))
}

/// Classifies the byte that stopped a number, for a precise error.
#[cold]
fn invalid_byte(byte: u8) -> FixedPointError {
    match byte {
        b'.' => FixedPointError::MultipleDots,
        b'e' | b'E' => FixedPointError::Exponent,
        _ => FixedPointError::InvalidCharacter,
    }
}

#[cold]
fn invalid_start(text: &[u8]) -> FixedPointError {
    match text.first() {
        None => FixedPointError::Empty,
        Some(b'-') => FixedPointError::Negative,
        Some(b'+') => FixedPointError::LeadingPlus,
        Some(b'.') => FixedPointError::MissingDigits,
        Some(b'N' | b'n' | b'I' | b'i') => FixedPointError::NotANumber,
        Some(_) => FixedPointError::InvalidCharacter,
    }
}

/// Integer parts of more than 8 digits: rare (prices ≥ 100 000 000, integers over 16
/// digits), so a checked loop.
#[cold]
fn long_integer(digits: &[u8]) -> Result<u64, FixedPointError> {
    digits.iter().try_fold(0u64, |acc, &d| {
        acc.checked_mul(10)
            .and_then(|acc| acc.checked_add(u64::from(d - b'0')))
            .ok_or(FixedPointError::Overflow)
    })
}

/// The leading ASCII digits of `bytes` as an integer and their count, digit by digit:
/// what [`leading_integer`] leaves (over 16 digits, or near the end of `bytes`). `None`:
/// their value does not fit in a `u64`.
#[cold]
pub(crate) fn long_leading_integer(bytes: &[u8]) -> Option<(u64, usize)> {
    let digits = bytes
        .iter()
        .take_while(|byte| byte.is_ascii_digit())
        .count();
    let value = long_integer(&bytes[..digits]).ok()?;
    Some((value, digits))
}

/// What may follow the fractional digits one word held: after 8 digits, only more zeros
/// (an exact value written with trailing zeros); after fewer, nothing.
#[cold]
fn check_after_fraction(rest: &[u8], fraction_len: usize) -> Result<(), FixedPointError> {
    if fraction_len < 8 {
        return Err(invalid_byte(rest[0]));
    }
    for &byte in rest {
        match byte {
            b'0' => {}
            b'1'..=b'9' => return Err(FixedPointError::TooPrecise),
            other => return Err(invalid_byte(other)),
        }
    }
    Ok(())
}

/// The bytes the fast parsers ([`FixedPoint::parse_quoted_fast`],
/// [`FixedPoint::parse_bare_fast`]) read from a number's start: the longest number they
/// take and what ends it.
pub const FAST_PARSE_LOOKAHEAD: usize = 18;

impl FixedPoint {
    pub const ZERO: FixedPoint = FixedPoint(0);
    pub const ONE: FixedPoint = FixedPoint(SCALE);
    pub const MAX: FixedPoint = FixedPoint(u64::MAX);

    /// The value `raw / 10^8`.
    pub const fn from_raw(raw: u64) -> Self {
        FixedPoint(raw)
    }

    /// The value times 10^8.
    pub const fn raw(self) -> u64 {
        self.0
    }

    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// The exact product, or `None` where it has more than 8 fractional digits or does
    /// not fit (a derivative's size in contracts times the base currency per contract).
    pub fn checked_mul(self, other: FixedPoint) -> Option<FixedPoint> {
        let product = u128::from(self.0) * u128::from(other.0);
        let scale = u128::from(SCALE);
        if product % scale != 0 {
            return None;
        }
        u64::try_from(product / scale).ok().map(FixedPoint)
    }

    /// Parses the exact text of a decimal: `digits ["." digits]`. Leading zeros are
    /// accepted (`"0012.5"` is 12.5); signs, exponents, `NaN`, and more than 8 significant
    /// fractional digits are refused with a typed error.
    #[inline]
    pub fn parse(text: &[u8]) -> Result<Self, FixedPointError> {
        match Self::parse_common_shape(text) {
            Some(value) => Ok(value),
            None => Self::parse_in(text, 0, text.len()),
        }
    }

    /// The fast path of [`FixedPoint::parse`] for the shape exchanges send: 1 to 7 integer
    /// digits, a dot, 1 to 8 fraction digits, 8 to 16 bytes in all (`35496.06000000`,
    /// `0.29859300`). `None` for any other text, which [`FixedPoint::parse_in`] answers
    /// exactly, error included.
    ///
    /// Two word loads cover the text without reading past its end: the first 8 bytes hold
    /// the integer digits and the dot, the last 8 end with the fraction digits. Every byte
    /// is checked by one of the two non-digit masks or the dot test, and both words are
    /// converted together ([`eight_digits_values`]): no loop, no per-digit branch.
    #[inline(always)]
    fn parse_common_shape(text: &[u8]) -> Option<Self> {
        let head = u64::from_le_bytes(*text.first_chunk::<8>()?);
        let tail = u64::from_le_bytes(*text.last_chunk::<8>()?);
        let integer_len = leading_digit_count(head);
        // 0 is an error and 8 a long integer part: `parse_in` reads both.
        if !(1..8).contains(&integer_len) || (head >> (8 * integer_len)) as u8 != b'.' {
            return None;
        }
        // At least 0: the text has 8 bytes, the integer part and its dot at most 8. More
        // than 8 fraction digits (a text over 16 bytes) is `parse_in`'s too.
        let fraction_len = text.len() - integer_len - 1;
        if !(1..=8).contains(&fraction_len) {
            return None;
        }
        // The fraction digits are the last `fraction_len` bytes of `tail`: moved to the
        // bottom, with zero bytes above them, they read as the fraction scaled by 10^8.
        let fraction_shift = 8 * (8 - fraction_len);
        if non_digit_bytes(tail) >> fraction_shift != 0 {
            return None;
        }
        // At most 9_999_999 * 10^8 + 99_999_999: no overflow.
        let (integer, fraction) =
            eight_digits_values(integer_digits(head, integer_len), tail >> fraction_shift);
        Some(FixedPoint(integer * SCALE + fraction))
    }

    /// The fast path for what exchanges send: a quoted `digits[.digits]` with at most 8
    /// digits on each side (`35496.06000000"`), `text` starting just after the opening
    /// quote with at least 18 bytes readable (the longest such number and its quote).
    /// Returns the value and the number's length (the closing quote is at that index), or
    /// `None` for anything else (longer, malformed, unterminated), which the caller hands
    /// to [`FixedPoint::parse_in`] for the exact answer or error.
    ///
    /// Word loads: the first 16 bytes, where the closing quote gives the length; the
    /// fraction digits from just after the dot (an unaligned load at a variable offset
    /// costs one instruction, where shifting a 16-byte register by a variable amount costs
    /// a dozen). Each digit word's non-digit mask gives its digit count, and the two
    /// 8-digit conversions are independent: no loop, and no branch on the digits
    /// themselves (`fixed_point_parse`: 275 → 143 instructions, `scripts/bench-instructions`).
    #[inline(always)]
    pub fn parse_quoted_fast(text: &[u8]) -> Option<(Self, usize)> {
        Self::parse_fast::<true>(text)
    }

    /// [`FixedPoint::parse_quoted_fast`] for a bare JSON number (`63299.4,` — as Kraken
    /// sends its prices): `text` starting at the number, which must end with what may
    /// follow a value (`,` `}` `]` or whitespace), at most 17 bytes in. `None` for anything
    /// else (an exponent, more digits, the frame's end within 18 bytes), which the caller
    /// hands to [`FixedPoint::parse_in`].
    #[inline(always)]
    pub fn parse_bare_fast(text: &[u8]) -> Option<(Self, usize)> {
        Self::parse_fast::<false>(text)
    }

    /// The two fast paths: a number ended by a quote (`QUOTED`), or by a JSON separator.
    #[inline(always)]
    fn parse_fast<const QUOTED: bool>(text: &[u8]) -> Option<(Self, usize)> {
        if !QUOTED {
            return Self::parse_bare(text);
        }
        let chunk = text.first_chunk::<FAST_PARSE_LOOKAHEAD>()?;
        let word_at = |index: usize| {
            chunk[index..]
                .first_chunk::<8>()
                .map(|bytes| u64::from_le_bytes(*bytes))
        };
        let integer_word = word_at(0)?;
        // The length, from the closing quote: found without the digits' values, so a
        // decoder's walk to the next number never waits for this one's conversion (on a
        // book frame that chain of positions is the critical path). The checks below
        // confirm it is where the digits end.
        let quotes = u128::from(matching_bytes(word_at(8)?, b'"')) << 64
            | u128::from(matching_bytes(integer_word, b'"'));
        let len = match quotes.trailing_zeros() / 8 {
            16 => 16 + usize::from(chunk[16] != b'"'),
            before_quote => before_quote as usize,
        };
        // 8 when the whole word is digits: the byte after them decides below.
        let integer_len = leading_digit_count(integer_word);
        if integer_len == 0 {
            return None;
        }
        // At most 99_999_999 * 10^8: no overflow, here or when the fraction is added.
        let integer = integer_digits(integer_word, integer_len);
        match chunk[integer_len] {
            b'"' if integer_len == len => {
                let whole = eight_digits_value(integer) * SCALE;
                return Some((FixedPoint(whole), len));
            }
            b'.' => {}
            _ => return None,
        }
        let fraction_word = word_at(integer_len + 1)?;
        let fraction_len = leading_digit_count(fraction_word);
        if fraction_len == 0 || integer_len + 1 + fraction_len != len || chunk[len] != b'"' {
            return None;
        }
        let (integer, fraction) =
            eight_digits_values(integer, fraction_digits(fraction_word, fraction_len));
        Some((FixedPoint(integer * SCALE + fraction), len))
    }

    /// The bare number's fast path: its length from the digits themselves.
    #[inline(always)]
    fn parse_bare(text: &[u8]) -> Option<(Self, usize)> {
        let chunk = text.first_chunk::<FAST_PARSE_LOOKAHEAD>()?;
        let word_at = |index: usize| {
            chunk[index..]
                .first_chunk::<8>()
                .map(|bytes| u64::from_le_bytes(*bytes))
        };
        let ends_value =
            |byte: u8| matches!(byte, b',' | b'}' | b']' | b' ' | b'\n' | b'\r' | b'\t');
        let integer_word = word_at(0)?;
        let integer_len = leading_digit_count(integer_word);
        if integer_len == 0 || (integer_len > 1 && chunk[0] == b'0') {
            return None; // no digits, or a leading zero JSON does not allow
        }
        let integer = integer_digits(integer_word, integer_len);
        match chunk[integer_len] {
            byte if integer_len < 8 && ends_value(byte) => {
                let whole = eight_digits_value(integer) * SCALE;
                return Some((FixedPoint(whole), integer_len));
            }
            b'.' => {}
            _ => return None,
        }
        let fraction_word = word_at(integer_len + 1)?;
        let fraction_len = leading_digit_count(fraction_word);
        let len = integer_len + 1 + fraction_len;
        if fraction_len == 0 || !ends_value(chunk[len]) {
            return None;
        }
        let (integer, fraction) =
            eight_digits_values(integer, fraction_digits(fraction_word, fraction_len));
        Some((FixedPoint(integer * SCALE + fraction), len))
    }

    /// Parses `buffer[start..end]` exactly as [`FixedPoint::parse`] does. It may read (and
    /// ignore) up to 8 bytes of `buffer` past `end`: this is how decoders parse a number
    /// in place inside a frame without copying it out.
    #[inline]
    pub fn parse_in(buffer: &[u8], start: usize, end: usize) -> Result<Self, FixedPointError> {
        let text = &buffer[start..end];
        let head = load_masked(buffer, start, text.len());
        let mut integer_len = leading_digit_count(head);
        let integer = match integer_len {
            0 => return Err(invalid_start(text)),
            1..=7 => integer_value(head, integer_len),
            _ => {
                integer_len = text.iter().take_while(|b| b.is_ascii_digit()).count();
                if integer_len == 8 {
                    eight_digits_value(head)
                } else {
                    long_integer(&text[..integer_len])?
                }
            }
        };
        let whole = integer
            .checked_mul(SCALE)
            .ok_or(FixedPointError::Overflow)?;
        let Some(&separator) = text.get(integer_len) else {
            return Ok(FixedPoint(whole));
        };
        if separator != b'.' {
            return Err(invalid_byte(separator));
        }

        let fraction_start = integer_len + 1;
        let fraction_word =
            load_masked(buffer, start + fraction_start, text.len() - fraction_start);
        let fraction_len = leading_digit_count(fraction_word);
        if fraction_len == 0 {
            return Err(match text.get(fraction_start) {
                Some(&byte) if byte != b'.' => invalid_byte(byte),
                _ => FixedPointError::MissingDigits,
            });
        }
        let rest = &text[fraction_start + fraction_len..];
        if !rest.is_empty() {
            check_after_fraction(rest, fraction_len)?;
        }
        whole
            .checked_add(fraction_value(fraction_word, fraction_len))
            .map(FixedPoint)
            .ok_or(FixedPointError::Overflow)
    }

    /// Parses a JSON number that may carry an exponent (`2.2e3`, `6.55E-6`), exactly: the
    /// mantissa's digits moved by the exponent, as Deribit writes some of its numbers. An
    /// exponent that leaves a nonzero digit past the 8th decimal is `TooPrecise`, one that
    /// leaves the value past the range `Overflow`; the rest is [`FixedPoint::parse`]'s
    /// (without an exponent, the same answer). Off the hot path: a venue's decoder comes
    /// here only for a number the plain parse refused as an exponent.
    #[cold]
    pub fn parse_scientific(text: &[u8]) -> Result<Self, FixedPointError> {
        if !text.iter().any(|&b| b == b'e' || b == b'E') {
            return Self::parse(text);
        }
        Self::parse_times_ten_to(text, 0)
    }

    /// The number `text` (a decimal, with or without an exponent) times 10^`power`,
    /// exactly: its digits moved by `power` places, refused as [`FixedPoint::parse_scientific`]
    /// refuses what does not fit. How the numbers of an instrument counted in units of
    /// 10^k coins are read (`UnitSize`); off the hot path.
    #[cold]
    pub fn parse_times_ten_to(text: &[u8], power: i64) -> Result<Self, FixedPointError> {
        let (mantissa, exponent) = match text.iter().position(|&b| b == b'e' || b == b'E') {
            Some(e) => (&text[..e], Some(&text[e + 1..])),
            None => (text, None),
        };
        // The mantissa's shape (digits, one dot, digits on both sides) is `parse`'s to
        // check: on its own it is a plain decimal, of any precision here.
        let (integer, fraction) = match mantissa.iter().position(|&b| b == b'.') {
            Some(dot) => (&mantissa[..dot], &mantissa[dot + 1..]),
            None => (mantissa, &[][..]),
        };
        let digit_run = |run: &[u8]| run.iter().all(u8::is_ascii_digit);
        if integer.is_empty()
            || !digit_run(integer)
            || (mantissa.len() > integer.len() && (fraction.is_empty() || !digit_run(fraction)))
        {
            return Err(match Self::parse(mantissa) {
                Err(error) => error,
                Ok(_) => FixedPointError::InvalidCharacter,
            });
        }
        // An exponent past a few hundred moves every digit out of range either way.
        let written = match exponent {
            None => Ok(0),
            Some(exponent) => {
                let (negative, digits) = match exponent.first() {
                    Some(b'-') => (true, &exponent[1..]),
                    Some(b'+') => (false, &exponent[1..]),
                    _ => (false, exponent),
                };
                if digits.is_empty() || !digit_run(digits) {
                    return Err(FixedPointError::InvalidCharacter);
                }
                let magnitude = digits.iter().try_fold(0i64, |value, &digit| {
                    let value = value * 10 + i64::from(digit - b'0');
                    (value <= 10_000).then_some(value)
                });
                match (magnitude, negative) {
                    (Some(magnitude), true) => Ok(-magnitude),
                    (Some(magnitude), false) => Ok(magnitude),
                    (None, true) => Err(FixedPointError::TooPrecise),
                    (None, false) => Err(FixedPointError::Overflow),
                }
            }
        };
        // The value's digits, without leading zeros (no allocation: a venue's decoder
        // may come here on its hot path).
        let digits = || integer.iter().chain(fraction).copied();
        let total = integer.len() + fraction.len();
        let leading_zeros = digits().take_while(|&b| b == b'0').count();
        let significant = total - leading_zeros;
        if significant == 0 {
            return Ok(FixedPoint(0));
        }
        let exponent = written? + power;
        // The raw value is the digits times 10^(8 + exponent - fraction digits); digits
        // shifted out must be zeros.
        let shift = i64::from(DECIMALS) + exponent - fraction.len() as i64;
        let dropped = usize::try_from(-shift).unwrap_or(0);
        if dropped >= significant || digits().skip(total - dropped).any(|b| b != b'0') {
            return Err(FixedPointError::TooPrecise);
        }
        let mut raw: u64 = 0;
        for digit in digits().skip(leading_zeros).take(significant - dropped) {
            raw = raw
                .checked_mul(10)
                .and_then(|value| value.checked_add(u64::from(digit - b'0')))
                .ok_or(FixedPointError::Overflow)?;
        }
        for _ in 0..shift.max(0) {
            raw = raw.checked_mul(10).ok_or(FixedPointError::Overflow)?;
        }
        Ok(FixedPoint(raw))
    }

    /// `self - other` as an exact signed decimal (the spread of a crossed book is negative).
    pub fn signed_difference(self, other: Self) -> SignedFixed {
        match self.cmp(&other) {
            Ordering::Less => SignedFixed {
                negative: true,
                magnitude: FixedPoint(other.0 - self.0),
            },
            _ => SignedFixed {
                negative: false,
                magnitude: FixedPoint(self.0 - other.0),
            },
        }
    }

    /// The nearest `f64` to the exact decimal (correctly rounded), for consumers that ask
    /// for floats (the legacy gRPC contract): two venues' equal prices give equal doubles.
    pub fn to_f64(self) -> f64 {
        // Below 2^53 the scaled integer and 10^8 are both exact doubles, and IEEE 754
        // rounds their quotient once: the nearest double. Above it the integer itself
        // would round first, so the exact decimal text goes through the standard library's
        // correctly rounded parse (no allocation: the text is on the stack).
        const EXACT_IN_F64: u64 = 1 << f64::MANTISSA_DIGITS;
        if self.0 < EXACT_IN_F64 {
            self.0 as f64 / SCALE as f64
        } else {
            self.with_decimals(8)
                .as_str()
                .parse()
                .expect("a decimal's text parses as f64")
        }
    }
}

/// `value` in units of 10^-`decimals`, as exact decimal text: sums of amounts (10^-8) and
/// of prices times amounts (10^-16), which outgrow a `FixedPoint`.
pub fn wide_decimal_text(value: u128, decimals: u32) -> String {
    let scale = 10u128.pow(decimals);
    format!(
        "{}.{:0width$}",
        value / scale,
        value % scale,
        width = decimals as usize
    )
}

impl FixedPoint {
    /// The exact decimal text, with `decimals` fractional digits (as a venue prints a
    /// pair's prices: Bitstamp sends `9328.28`) when the digits past them are zeros, and
    /// with all 8 otherwise: digits are never dropped. `Display` is `with_decimals(8)`.
    pub fn with_decimals(self, decimals: u32) -> DecimalText {
        let mut text = DecimalText::EMPTY;
        self.decimal_words(decimals, |word, count| {
            text.bytes[text.len..text.len + 8].copy_from_slice(&word.to_le_bytes());
            text.len += count;
        });
        text
    }

    /// Appends `with_decimals(decimals)`'s text to `out`, with one 8-byte store per word
    /// and no copy: the simulator's encoders write tens of numbers a frame.
    #[inline]
    pub fn append_decimal(self, decimals: u32, out: &mut Vec<u8>) {
        self.decimal_words(decimals, |word, count| {
            let len = out.len();
            out.extend_from_slice(&word.to_le_bytes());
            out.truncate(len + count);
        });
    }

    /// The decimal text as words of up to 8 bytes: `push_first(word, count)` takes the
    /// first `count` bytes of `word` (little-endian). Written by hand because `core::fmt`'s
    /// `{:08}` led the simulator's profile under load.
    #[inline(always)]
    fn decimal_words(self, decimals: u32, mut push_first: impl FnMut(u64, usize)) {
        let fraction = self.0 % SCALE;
        let kept = match decimals.min(DECIMALS) {
            kept if fraction.is_multiple_of(10u64.pow(DECIMALS - kept)) => kept as usize,
            _ => DECIMALS as usize,
        };
        // The digits of `value` (below 10^8), without leading zeros.
        let mut push_last_digits = |value: u64| {
            let digits = value.checked_ilog10().map_or(1, |log| log as usize + 1);
            push_first(eight_ascii_digits(value) >> (8 * (8 - digits)), digits);
        };
        let integer = self.0 / SCALE;
        if integer >= SCALE {
            // 10^8 and up: at most 4 more digits (FixedPoint::MAX is 184467440737.…).
            push_last_digits(integer / SCALE);
            push_first(eight_ascii_digits(integer % SCALE), 8);
        } else {
            push_last_digits(integer);
        }
        if kept > 0 {
            push_first(u64::from(b'.'), 1);
            push_first(eight_ascii_digits(fraction), kept);
        }
    }
}

impl FixedPoint {
    /// The digits of the number written with `decimals` fractional digits, without the
    /// dot and without leading zeros (`0.00100000` with 8 decimals: `100000`; zero: `0`):
    /// the text venues checksum. Digits past `decimals` are dropped (a number written
    /// with that precision has none). Written at `out[at..]`, which must have 24 bytes
    /// of room (the digits are stored in whole 16-byte words); returns their count.
    ///
    /// By hand, with constant divisors and SWAR digits, because a checksum formats the
    /// 40 numbers of a book's top 10 after every message (`kraken_checksum`).
    #[inline]
    pub fn write_plain_digits(self, decimals: u32, out: &mut [u8], at: usize) -> usize {
        let digits = match decimals.min(DECIMALS) {
            0 => self.0 / 100_000_000,
            1 => self.0 / 10_000_000,
            2 => self.0 / 1_000_000,
            3 => self.0 / 100_000,
            4 => self.0 / 10_000,
            5 => self.0 / 1_000,
            6 => self.0 / 100,
            7 => self.0 / 10,
            _ => self.0,
        };
        const TEN_TO_16: u64 = SCALE * SCALE;
        if digits >= TEN_TO_16 {
            // Up to 20 digits: the rare large number, the general way.
            let text = digits.to_string();
            out[at..at + text.len()].copy_from_slice(text.as_bytes());
            return text.len();
        }
        // 16 digits with leading zeros, the first in the lowest byte.
        let high = u128::from(eight_ascii_digits(digits / SCALE));
        let low = u128::from(eight_ascii_digits(digits % SCALE));
        let sixteen = high | low << 64;
        let zeros = u128::from(ASCII_ZEROS) | u128::from(ASCII_ZEROS) << 64;
        let leading_zeros = ((sixteen ^ zeros).trailing_zeros() / 8).min(15) as usize;
        out[at..at + 16].copy_from_slice(&(sixteen >> (8 * leading_zeros)).to_le_bytes());
        16 - leading_zeros
    }
}

/// `value` (below 10^8) as 8 ASCII digits with leading zeros, the first in the lowest
/// byte, by SWAR (the inverse of `eight_digits_value`): a few multiplies for all eight,
/// not a division per digit.
fn eight_ascii_digits(value: u64) -> u64 {
    debug_assert!(value < SCALE);
    // Two 32-bit lanes, the high four digits in the low lane (the first bytes in memory).
    let fours = (value / 10_000) | ((value % 10_000) << 32);
    // x * 10486 >> 20 is x / 100 for x < 43,699: per lane, the first two of four digits.
    let hundreds = ((fours * 10_486) >> 20) & 0x0000_007F_0000_007F;
    let pairs = hundreds | ((fours - hundreds * 100) << 16);
    // x * 103 >> 10 is x / 10 for x < 179: per 16-bit lane, the first of two digits.
    let tens = ((pairs * 103) >> 10) & 0x000F_000F_000F_000F;
    let digits = tens | ((pairs - tens * 10) << 8);
    digits | ASCII_ZEROS
}

/// A number's text on the stack, of at most `CAPACITY` bytes.
#[derive(Clone, Copy)]
pub struct StackText<const CAPACITY: usize> {
    bytes: [u8; CAPACITY],
    len: usize,
}

/// A `FixedPoint`'s decimal text (`FixedPoint::with_decimals`): at most 21 bytes, the
/// longest being `184467440737.09551615` (`FixedPoint::MAX`). Words are written whole, 8
/// bytes each, and the last one starts at byte 13 at the latest, so none runs past it.
pub type DecimalText = StackText<21>;

impl<const CAPACITY: usize> StackText<CAPACITY> {
    pub(crate) const EMPTY: StackText<CAPACITY> = StackText {
        bytes: [0; CAPACITY],
        len: 0,
    };

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    pub fn as_str(&self) -> &str {
        std::str::from_utf8(self.as_bytes()).expect("digits and a dot are ASCII")
    }
}

impl<const CAPACITY: usize> AsRef<[u8]> for StackText<CAPACITY> {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

impl<const CAPACITY: usize> fmt::Display for StackText<CAPACITY> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for FixedPoint {
    type Err = FixedPointError;
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        FixedPoint::parse(text.as_bytes())
    }
}

/// Always 8 fractional digits (`12.00000000`), the form the exchanges send.
impl fmt::Display for FixedPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.with_decimals(DECIMALS).as_str())
    }
}

impl fmt::Debug for FixedPoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// An exact signed decimal: a spread, which is negative when the merged book is crossed.
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub struct SignedFixed {
    pub negative: bool,
    pub magnitude: FixedPoint,
}

impl SignedFixed {
    pub fn to_f64(self) -> f64 {
        let magnitude = self.magnitude.to_f64();
        if self.negative { -magnitude } else { magnitude }
    }
}

impl fmt::Display for SignedFixed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.negative {
            f.write_str("-")?;
        }
        fmt::Display::fmt(&self.magnitude, f)
    }
}

#[cfg(test)]
mod plain_digit_tests {
    use super::*;
    use proptest::prelude::*;

    fn plain(value: &str, decimals: u32) -> String {
        let mut out = [0u8; 40];
        let len = value
            .parse::<FixedPoint>()
            .unwrap()
            .write_plain_digits(decimals, &mut out, 3);
        String::from_utf8(out[3..3 + len].to_vec()).unwrap()
    }

    #[test]
    fn plain_digits_drop_the_dot_and_leading_zeros() {
        assert_eq!(plain("45285.2", 1), "452852");
        assert_eq!(plain("0.001", 8), "100000");
        assert_eq!(plain("63298", 1), "632980");
        assert_eq!(plain("0", 8), "0");
        assert_eq!(plain("184467440737.09551615", 8), "18446744073709551615");
        assert_eq!(plain("99999999.99999999", 8), "9999999999999999");
    }

    proptest! {
        /// The digits of the decimal text, dot and leading zeros removed.
        #[test]
        fn plain_digits_are_the_text_without_dot_and_leading_zeros(raw in any::<u64>(), decimals in 0u32..=8) {
            let value = FixedPoint::from_raw(raw - raw % 10u64.pow(8 - decimals));
            let text = value.with_decimals(decimals).as_str().replace('.', "");
            let expected = match text.trim_start_matches('0') { "" => "0", digits => digits };
            let mut out = [0u8; 40];
            let len = value.write_plain_digits(decimals, &mut out, 0);
            prop_assert_eq!(std::str::from_utf8(&out[..len]).unwrap(), expected);
        }
    }
}

mod unit_size;
pub use unit_size::{Measure, UnitSize, WireText};

#[cfg(test)]
mod tests;
