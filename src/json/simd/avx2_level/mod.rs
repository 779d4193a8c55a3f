//! One price level in the two layouts exchanges send, compact `["price","amount"]` and
//! spaced `["price", "amount"]`, read with AVX2: the walker's fast path on x86-64
//! builds that enable AVX2 (`.cargo/config.toml` sets `target-cpu=x86-64-v3`).
//!
//! Why by hand: a book frame is mostly levels, and the scalar reader spends about 285
//! instructions on one (two SWAR number conversions, each with its own length and digit
//! checks, and a byte compare per delimiter). Here one 32-byte load gives the whole level's
//! structure as three bit masks (quotes, dots, digits), the delimiters and spans are checked
//! with scalar bit arithmetic on those masks, and both numbers are converted together in
//! one register (each number in its own 128-bit lane, placed by one byte shuffle, then
//! three multiply-adds); docs/decisions.md has the measurements that chose it.
//!
//! The intrinsics come from `safe_arch`, which exposes them as safe functions when the
//! build enables the target feature, so this module needs no `unsafe`.
//!
//! It reads a subset of what the exact path accepts, and on that subset agrees with it
//! exactly (a proptest below checks both): quoted numbers of 1 to 8 integer digits and
//! optionally a dot and 1 to 8 fraction digits (not both 8), and a level of at most 34 bytes
//! (`["` and one register).
//! Anything else returns `None` and the caller reads the level another way.
//!
//! Consecutive levels of a book mostly have the same shape (the same number of digits
//! before and after each dot: `["91234.56000000","0.00123000"]` then
//! `["91234.55000000","0.04100000"]`). A level read also gives its [`LevelPattern`], and
//! the next level is first checked against it: one range compare of 32 bytes, after which
//! the shape, the shuffles and the length are known, and only the conversion is left.
//! In most books the amount's integer digit count changes at about one level in two while
//! the price's shape does not (the recorded altcoin snapshots): a level that matches its
//! pattern up to the amount is read from the amount on, with the price's shuffle and the
//! amount's position taken from the pattern.
//!
//! A side of a book frame is read faster still by [`KeptPatterns`]: the patterns of the
//! levels read in full, kept from frame to frame by their price's length and their amount's
//! integer digits; each level is checked against the one kept for its own, at a position
//! found from the `[` bytes ahead ([`level_starts`]). Neither the choice of the pattern nor
//! the level's position waits on the level before, and no branch depends on a level's shape
//! once that shape has been seen (docs/decisions.md, "A side's levels are read by patterns
//! kept across frames").

use crate::book::Level;
use crate::fixed::{FixedPoint, SCALE};
use safe_arch::{
    add_i64_m256i, blend_varying_i8_m256i, cmp_eq_mask_i8_m256i, cmp_gt_mask_i8_m256i,
    extract_m128i_m256i, m128i, m256i, max_u8_m256i, min_u8_m256i, move_mask_i8_m256i,
    mul_i16_horizontal_add_m256i, mul_u8i8_add_horizontal_saturating_m256i, mul_u64_low_bits_m256i,
    pack_i32_to_u16_m256i, set_m128i_m256i, set_splat_i8_m256i, set_splat_i16_m256i,
    set_splat_i32_m256i, set_splat_i64_m256i, shr_imm_u64_m256i, shuffle_av_i8z_half_m256i,
    sub_i8_m256i,
};

/// Where the price starts, after `["`: the structure register starts there, so that the
/// price's lane is that register's low half.
const PRICE: usize = 2;

/// Bytes read from the level's `[`: `["`, 32 bytes of structure from the price on (the
/// rest of the level must lie within them), and 16 from the amount's first digit, which
/// is inside the 32.
pub(in crate::json) const READ_AHEAD: usize = PRICE + 32 + 16;

/// A level read: its price and amount, its length (through `]`), and, when `,` follows it
/// within the structure register, its pattern.
#[inline(always)]
pub(in crate::json) fn compact_level(
    window: &[u8; READ_AHEAD],
) -> Option<(Level, usize, Option<LevelPattern>)> {
    if window[..PRICE] != *b"[\"" {
        return None;
    }
    // Positions below count from the price's first byte.
    let head = head(window);
    let structure = Structure::of(head);
    // The price up to the next quote, `","` or `", "`, the amount up to the next quote,
    // `]`. Every position comes from the quote mask, none from the digits' values.
    let price_end = structure.quotes.trailing_zeros() as usize; // 64 when absent
    let amount_start = price_end
        + match head.get(price_end + 1..price_end + 4)? {
            [b',', b'"', _] => 3,
            [b',', b' ', b'"'] => 4,
            _ => return None,
        };
    let price_shape = NumberShape::of(structure.digits, structure.dots, 0, price_end);
    if !price_shape.readable {
        return None;
    }
    rest_of_level(
        window,
        &structure,
        m128i::from(price_shape.shuffle()),
        amount_start,
    )
}

/// A level from its amount on, the price's shape known: `price_shuffle` converts the
/// price (`NumberShape::shuffle`), the amount starts at `amount_start` from the price.
/// What [`compact_level`] returns.
#[inline(always)]
fn rest_of_level(
    window: &[u8; READ_AHEAD],
    structure: &Structure,
    price_shuffle: m128i,
    amount_start: usize,
) -> Option<(Level, usize, Option<LevelPattern>)> {
    let head = head(window);
    let amount_end = amount_start + (structure.quotes >> amount_start).trailing_zeros() as usize;
    if head.get(amount_end + 1) != Some(&b']') {
        return None;
    }
    let amount_shape = NumberShape::of(structure.digits, structure.dots, amount_start, amount_end);
    if !amount_shape.readable {
        return None;
    }
    let controls = set_m128i_m256i(m128i::from(amount_shape.shuffle()), price_shuffle);
    let level = numbers(window, structure.bytes, amount_start, controls)?;
    let len = amount_end + 2; // through `]`, from the price
    // The separator venues send between levels, `,` (compact) or `, ` (spaced).
    let pattern = match head.get(len..len + 2) {
        Some([b',', b' ']) => Some(len + 2),
        Some([b',', _]) => Some(len + 1),
        _ if head.get(len) == Some(&b',') => Some(len + 1),
        _ => None,
    }
    .map(|len_with_separator| {
        LevelPattern {
            // Each byte: a digit where the level has a digit, itself elsewhere; any byte
            // after the separator.
            lowest: blend_varying_i8_m256i(structure.bytes, splat(b'0'), structure.digit_bytes),
            highest: blend_varying_i8_m256i(structure.bytes, splat(b'9'), structure.digit_bytes),
            controls,
            amount_start,
            kept_at: KeptPatterns::index(structure.quotes, structure.dots),
            len: PRICE + len_with_separator,
        }
        .ending_at(len_with_separator)
    });
    Some((level, PRICE + len, pattern))
}

/// The structure register (the 32 bytes from the price on) and its bit masks.
struct Structure {
    bytes: m256i,
    /// A byte's lane all ones where it is a digit.
    digit_bytes: m256i,
    quotes: u64,
    dots: u64,
    digits: u64,
}

impl Structure {
    #[inline(always)]
    fn of(head: &[u8; 32]) -> Structure {
        let bytes = m256i::from(*head);
        // A digit is a byte whose distance from '0', read unsigned, is at most 9.
        let offset = sub_i8_m256i(bytes, splat(b'0'));
        let digit_bytes = cmp_eq_mask_i8_m256i(min_u8_m256i(offset, splat(9)), offset);
        Structure {
            bytes,
            digit_bytes,
            quotes: mask_of(byte_equal(bytes, b'"')),
            dots: mask_of(byte_equal(bytes, b'.')),
            digits: mask_of(digit_bytes),
        }
    }
}

/// The 32 bytes from the price on, which hold the rest of a level this module reads.
#[inline(always)]
fn head(window: &[u8; READ_AHEAD]) -> &[u8; 32] {
    window[PRICE..]
        .first_chunk()
        .expect("PRICE + 32 <= READ_AHEAD")
}

/// The price and amount of a level whose shape is known: `controls` are both numbers'
/// digit shuffles (`NumberShape::shuffle`, price low, amount high), the amount starts at
/// `amount_start` from the price. `None` only if the amount's lane is out of the window,
/// which no readable shape allows.
#[inline(always)]
fn numbers(
    window: &[u8; READ_AHEAD],
    bytes: m256i,
    amount_start: usize,
    controls: m256i,
) -> Option<Level> {
    // Each number's first 16 bytes in its own lane (price low, amount high), its digits
    // placed by the shuffle, non-digits zeroed (shuffle control 0x80).
    let amount_text: &[u8; 16] = window.get(PRICE + amount_start..)?.first_chunk()?;
    let price_text = extract_m128i_m256i::<0>(bytes);
    let text = set_m128i_m256i(m128i::from(*amount_text), price_text);
    let digit_values = shuffle_av_i8z_half_m256i(sub_i8_m256i(text, splat(b'0')), controls);
    // Digits to values: pairs of digits (×10 + 1), pairs of pairs (×100 + 1), narrowed to
    // 16 bits, then pairs of those (×10_000 + 1): per lane, the integer part and the
    // fraction scaled by 10^8, each at most 99_999_999.
    let pairs =
        mul_u8i8_add_horizontal_saturating_m256i(digit_values, set_splat_i16_m256i(1 << 8 | 10));
    let quads = mul_i16_horizontal_add_m256i(pairs, set_splat_i32_m256i(1 << 16 | 100));
    let narrowed = pack_i32_to_u16_m256i(quads, quads);
    let values = mul_i16_horizontal_add_m256i(narrowed, set_splat_i32_m256i(1 << 16 | 10_000));
    // Per 64-bit lane 0 and 2: integer (low half) * 10^8 + fraction (high half). At most
    // 99_999_999 * 10^8 + 99_999_999: no overflow.
    let scaled_integers = mul_u64_low_bits_m256i(values, set_splat_i64_m256i(SCALE as i64));
    let fractions = shr_imm_u64_m256i::<32>(values);
    let raw: [u64; 4] = add_i64_m256i(scaled_integers, fractions).into();
    Some(Level {
        price: FixedPoint::from_raw(raw[0]),
        amount: FixedPoint::from_raw(raw[2]),
    })
}

/// What a level read leaves for reading the next one of the same shape: for each of the
/// 32 bytes from the price on, the lowest and highest byte allowed there (`'0'..='9'`
/// where the level had a digit, its own byte where it had `"`, `.`, `,`, ` ` or `]`, and
/// the separator after it, `,` or `, `; any byte after that). A level within those ranges
/// has the same quotes, dots and delimiters at the same places, so the same shape: its
/// shuffles, amount position and length are this one's, it converts exactly as
/// [`compact_level`] would read it, and another level follows it.
#[derive(Debug, Clone, Copy)]
pub(in crate::json) struct LevelPattern {
    lowest: m256i,
    highest: m256i,
    controls: m256i,
    amount_start: usize,
    /// Where [`KeptPatterns`] keeps it.
    kept_at: usize,
    /// The level's length from its `[`, through the separator after its `]`.
    pub(in crate::json) len: usize,
}

impl LevelPattern {
    /// The pattern no bytes match (every lowest above every highest): before any level.
    pub(in crate::json) fn none() -> LevelPattern {
        LevelPattern {
            lowest: splat(u8::MAX),
            highest: splat(0),
            controls: splat(0),
            amount_start: 0,
            kept_at: 0,
            len: 0,
        }
    }

    /// Bit `i` set where byte `i` of the 32 from the price on is within this pattern's
    /// range: all set, the level has this pattern's shape.
    #[inline(always)]
    fn within(&self, bytes: m256i) -> u32 {
        // Within [lowest, highest] exactly where clamping to it changes nothing.
        move_mask_i8_m256i(cmp_eq_mask_i8_m256i(
            max_u8_m256i(bytes, self.lowest),
            min_u8_m256i(bytes, self.highest),
        )) as u32
    }

    /// Any byte allowed from `len` (from the price) on.
    #[inline(always)]
    fn ending_at(self, len: usize) -> LevelPattern {
        const INDICES: [u8; 32] = {
            let mut indices = [0; 32];
            let mut index = 0;
            while index < 32 {
                indices[index] = index as u8;
                index += 1;
            }
            indices
        };
        // `len` is at most 32 and the indices at most 31: no signed overflow either way.
        let after = cmp_gt_mask_i8_m256i(m256i::from(INDICES), set_splat_i8_m256i(len as i8 - 1));
        LevelPattern {
            lowest: blend_varying_i8_m256i(self.lowest, splat(0), after),
            highest: blend_varying_i8_m256i(self.highest, splat(u8::MAX), after),
            ..self
        }
    }

    /// The level at the start of `window`, read by this pattern as far as it has its shape.
    #[inline(always)]
    pub(in crate::json) fn read(&self, window: &[u8; READ_AHEAD]) -> PatternRead {
        if window[..PRICE] != *b"[\"" {
            return PatternRead::Other;
        }
        let head = head(window);
        let bytes = m256i::from(*head);
        let within = self.within(bytes);
        if within == u32::MAX {
            return numbers(window, bytes, self.amount_start, self.controls)
                .map_or(PatternRead::Other, PatternRead::Same);
        }
        // Most levels that miss differ in their amount only (its integer digits): with the
        // price, its quotes and the `,` within the pattern, only the amount is read anew.
        // (`none()` has no price part, `amount_start` 0: it reads nothing.)
        let price_part = (1u64 << self.amount_start) - 1; // `amount_start` is at most 32
        if price_part == 0 || u64::from(within) & price_part != price_part {
            return PatternRead::Other;
        }
        let structure = Structure::of(head);
        match rest_of_level(
            window,
            &structure,
            extract_m128i_m256i::<0>(self.controls),
            self.amount_start,
        ) {
            Some((level, len, pattern)) => PatternRead::NewAmount(level, len, pattern),
            None => PatternRead::Other,
        }
    }
}

/// How many patterns [`KeptPatterns`] keeps (a power of two: the index is taken modulo it).
const KEPT_PATTERNS: usize = 32;

/// The patterns of levels read in full, kept from frame to frame by each thread (a venue's
/// reader is one thread), each at an index made of its price's length and its amount's
/// integer digits ([`KeptPatterns::index`]): the latest of each such shape.
///
/// Why kept at all: in most books the amounts take a few integer digit counts in turn (the
/// simulator's 1 and 2, the recorded altcoin books' 2 to 5), and one pattern misses at
/// every change, a misprediction the next level's position then waits on. Why across
/// frames: learning them anew costs each frame a full read and a new scan of the side for
/// each shape. Why the price's length in the index: one thread may read several venues or
/// instruments, whose prices differ in length. Why by thread rather than passed in: every
/// decoder would carry it in its signature, for a cache whose content never changes a
/// result (each check is exact: a pattern found at a level's index that is not its shape
/// only misses).
pub(in crate::json) struct KeptPatterns {
    patterns: [LevelPattern; KEPT_PATTERNS],
}

thread_local! {
    static KEPT: std::cell::RefCell<KeptPatterns> = std::cell::RefCell::new(KeptPatterns {
        patterns: [LevelPattern::none(); KEPT_PATTERNS],
    });
}

impl KeptPatterns {
    /// Runs `read` with this thread's kept patterns.
    #[inline(always)]
    pub(in crate::json) fn with<R>(read: impl FnOnce(&KeptPatterns) -> R) -> R {
        KEPT.with_borrow(read)
    }

    /// Keeps the pattern of a level read in full, in this thread's patterns.
    #[inline(always)]
    pub(in crate::json) fn remember(pattern: &LevelPattern) {
        KEPT.with_borrow_mut(|kept| kept.patterns[pattern.kept_at] = *pattern);
    }

    /// Where the pattern of a level is kept, from the level's quote and dot masks (from its
    /// price on): its price's length, and the bytes from 3 after the price's end (the
    /// amount's first digit, or the spaced layout's quote before it) to the next dot. Both come from
    /// the level's own bytes, so a level of a kept pattern's shape finds it, whatever was
    /// read before; what else the index holds (another shape's pattern, or none) misses.
    #[inline(always)]
    fn index(quotes: u64, dots: u64) -> usize {
        let price_len = quotes.trailing_zeros(); // at most 64
        let to_dot = dots
            .checked_shr(price_len + 3)
            .unwrap_or(0)
            .trailing_zeros();
        (price_len as usize * 8 + to_dot as usize) % KEPT_PATTERNS
    }

    /// The level at the start of `window`, if the pattern kept at its index has
    /// its shape and its length, separator included, is `len`: so another level follows.
    #[inline(always)]
    pub(in crate::json) fn read(&self, window: &[u8; READ_AHEAD], len: usize) -> Option<Level> {
        let bytes = m256i::from(*head(window));
        let index = KeptPatterns::index(
            mask_of(byte_equal(bytes, b'"')),
            mask_of(byte_equal(bytes, b'.')),
        );
        let pattern = &self.patterns[index];
        // One branch for all three: a failure is rare, and which one need not be told.
        if (window[..PRICE] == *b"[\"") & (pattern.within(bytes) == u32::MAX) & (pattern.len == len)
        {
            numbers(window, bytes, pattern.amount_start, pattern.controls)
        } else {
            None
        }
    }
}

/// The most level starts [`level_starts`] takes from 64 bytes: the layouts venues send have
/// levels of 20 bytes and more, three at most in 64.
const STARTS_A_STEP: usize = 3;

/// Room [`level_starts`] needs in `starts` past the number it is asked for.
pub(in crate::json) const STARTS_SLACK: usize = STARTS_A_STEP;

/// The positions of the `[` bytes from `from` on (`from` first, if it is one), 64 bytes at a
/// time, until `wanted` are found, fewer than 64 bytes are left, or a step holds more than
/// [`STARTS_A_STEP`]; how many were found, in order. Writes up to `STARTS_A_STEP` past them.
///
/// Why 64 bytes at a time: the positions come from bit masks, the next from the last by
/// clearing its bit, so that no level's position waits on the bytes of the level before.
#[inline(always)]
pub(in crate::json) fn level_starts(
    bytes: &[u8],
    from: usize,
    wanted: usize,
    starts: &mut [u32],
) -> usize {
    let mut found = 0;
    let mut step = from;
    while found < wanted && found + STARTS_A_STEP <= starts.len() {
        let Some(block) = bytes.get(step..).and_then(<[u8]>::first_chunk::<64>) else {
            break;
        };
        let (low, high) = block.split_at(32);
        let low = m256i::from(*low.first_chunk::<32>().expect("32 of 64"));
        let high = m256i::from(*high.first_chunk::<32>().expect("32 of 64"));
        let mut opens = mask_of(byte_equal(low, b'[')) | mask_of(byte_equal(high, b'[')) << 32;
        let count = opens.count_ones() as usize;
        // Written whether or not there are as many: no branch on how many there are.
        for start in &mut starts[found..found + STARTS_A_STEP] {
            *start = (step + opens.trailing_zeros() as usize) as u32;
            opens &= opens.wrapping_sub(1);
        }
        if count > STARTS_A_STEP {
            return found + STARTS_A_STEP;
        }
        found += count;
        step += 64;
    }
    found
}

/// What a [`LevelPattern`] makes of the next level.
pub(in crate::json) enum PatternRead {
    /// The pattern's shape, so its length (`LevelPattern::len`, the separator included)
    /// and another level after it.
    Same(Level),
    /// The pattern's price shape and another amount's: what [`compact_level`] returns.
    NewAmount(Level, usize, Option<LevelPattern>),
    /// Another price shape, or no level this module reads.
    Other,
}

/// Where a number's digits are: `integer_len` digits, then `after_integer` bytes (none,
/// or a dot and the fraction's digits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct NumberShape {
    integer_len: usize,
    after_integer: usize,
    /// Only digits and at most one dot, 1..=8 digits before it and 1..=8 after, at most 16
    /// bytes (one lane): a number this module reads.
    readable: bool,
}

impl NumberShape {
    /// The shape of the bytes `start..end` (`start <= end <= 31`), from the level's digit
    /// and dot masks. Computed without branches: the caller takes one for both numbers.
    #[inline(always)]
    fn of(digits: u64, dots: u64, start: usize, end: usize) -> NumberShape {
        let span = (1u64 << end) - (1u64 << start);
        let non_digits = span & !digits;
        let integer_end = (non_digits | 1u64 << end).trailing_zeros() as usize;
        let integer_len = integer_end - start;
        let after_integer = end - integer_end;
        let readable = (non_digits & !dots == 0)
            & (non_digits & non_digits.wrapping_sub(1) == 0)
            & (1..=8).contains(&integer_len)
            & (after_integer != 1)
            & (after_integer <= 9)
            & (integer_len + after_integer <= 16);
        NumberShape {
            integer_len,
            after_integer,
            readable,
        }
    }

    /// The byte shuffle for this shape (`DIGIT_SHUFFLES`). The masks keep the index in
    /// bounds without a check; a readable shape is unchanged by them.
    #[inline(always)]
    fn shuffle(self) -> [i8; 16] {
        DIGIT_SHUFFLES[self.integer_len & 15][self.after_integer & 15]
    }
}

/// Shuffle controls indexed by `[integer_len][after_integer]`, for a lane that holds the
/// number from its first byte: integer digits to the top of bytes 0..8 (zeros above), the
/// fraction's digits from byte 8 (zeros after), so that bytes 0..8 read as the integer
/// and bytes 8..16 as the fraction scaled by 10^8. A control with the high bit set (-128)
/// writes zero. Entries for shapes that are not readable are never used.
static DIGIT_SHUFFLES: [[[i8; 16]; 16]; 16] = digit_shuffles();

const fn digit_shuffles() -> [[[i8; 16]; 16]; 16] {
    let mut table = [[[-128i8; 16]; 16]; 16];
    let mut integer_len = 1;
    while integer_len <= 8 {
        let mut after_integer = 0;
        // The last byte read is at integer_len + after_integer - 1: within the lane.
        while after_integer <= 9 && integer_len + after_integer <= 16 {
            let control = &mut table[integer_len][after_integer];
            let mut digit = 0;
            while digit < integer_len {
                control[8 - integer_len + digit] = digit as i8;
                digit += 1;
            }
            let mut digit = 0;
            while digit + 1 < after_integer {
                control[8 + digit] = (integer_len + 1 + digit) as i8;
                digit += 1;
            }
            after_integer += 1;
        }
        integer_len += 1;
    }
    table
}

#[inline(always)]
pub(in crate::json) fn splat(byte: u8) -> m256i {
    set_splat_i8_m256i(byte as i8)
}

#[inline(always)]
pub(in crate::json) fn byte_equal(bytes: m256i, byte: u8) -> m256i {
    cmp_eq_mask_i8_m256i(bytes, splat(byte))
}

/// Bit `i` set where byte `i` of `byte_mask` is set.
#[inline(always)]
fn mask_of(byte_mask: m256i) -> u64 {
    u64::from(move_mask_i8_m256i(byte_mask) as u32)
}

#[cfg(test)]
mod tests;
