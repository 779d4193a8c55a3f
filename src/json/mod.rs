//! The byte walker: a cursor over one JSON frame that venue decoders drive directly.
//!
//! Decoders know the shape of their frames, so instead of building a DOM (serde_json) they
//! walk the bytes once: objects are visited key by key in whatever order they arrive,
//! numbers are parsed in place into `FixedPoint`, and whatever a decoder does not need is
//! skipped. It is written by hand because it is the hot path: a frame is decoded with no
//! allocation and no second pass.
//!
//! Accepted: any JSON whitespace, any key order, unknown keys with any value (skipped and
//! checked for well-formedness). Refused with a typed [`DecodeError`]: truncation, a wrong
//! structure, a duplicate key, a number that is not an exact decimal, bytes after the end.
//! Not decoded: escape sequences inside keys (an escaped key never equals a known one, so
//! it is skipped as unknown; no exchange escapes its keys).

use crate::book::Side;
use crate::fixed::{
    FAST_PARSE_LOOKAHEAD, FixedPoint, FixedPointError, Measure, UnitSize, leading_integer,
    long_leading_integer, matching_bytes,
};

mod levels;
pub use levels::{LevelShape, TaggedShape};
mod side_skip;
mod simd;

/// How deep unknown values may nest before the frame is refused (bounds the recursion of
/// [`Walker::skip_value`], so no input can exhaust the stack).
pub const MAX_NESTING: u32 = 32;

/// Why a frame was refused. A refused frame changes nothing: no partial book escapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    #[error("frame ends early (truncated)")]
    Truncated,
    #[error("byte {at}: expected {expected}")]
    Unexpected { at: usize, expected: &'static str },
    #[error("byte {at}: {error}")]
    Number { at: usize, error: FixedPointError },
    #[error("byte {at}: integer out of range")]
    IntegerOverflow { at: usize },
    #[error("byte {at}: price level must be [price, amount]")]
    LevelShape { at: usize },
    #[error("key \"{0}\" appears twice")]
    DuplicateKey(&'static str),
    #[error("required key \"{0}\" is missing")]
    MissingKey(&'static str),
    #[error("{} are not sorted best first", .0.name())]
    Unsorted(Side),
    #[error("values nested deeper than {MAX_NESTING}")]
    TooDeep,
    #[error("byte {at}: data after the end of the frame")]
    TrailingBytes { at: usize },
    #[error("message is not a {0} frame this decoder knows")]
    UnknownMessage(&'static str),
    #[error("more than {0} levels in one side")]
    TooManyLevels(usize),
    #[error("{0}")]
    Invalid(&'static str),
}

type Result<T> = std::result::Result<T, DecodeError>;

/// A number at `bytes[*at..]`, quoted or bare, by the fast paths only, with its text (for
/// its fractional digits as written, where they count); `*at` moves past it.
#[inline(always)]
fn compact_number<'a>(bytes: &'a [u8], at: &mut usize) -> Option<(FixedPoint, &'a [u8])> {
    let quoted = *bytes.get(*at)? == b'"';
    let start = *at + usize::from(quoted);
    let parse = |text: &[u8]| match quoted {
        true => FixedPoint::parse_quoted_fast(text),
        false => FixedPoint::parse_bare_fast(text),
    };
    let text = &bytes[start..];
    let (value, len) = match text.first_chunk::<FAST_PARSE_LOOKAHEAD>() {
        Some(_) => parse(text)?,
        // Near the frame's end (its last number): the fast parsers read ahead, so the
        // rest is read from a copy padded with bytes that end no number.
        None => {
            let mut padded = [0u8; FAST_PARSE_LOOKAHEAD];
            padded[..text.len()].copy_from_slice(text);
            parse(&padded)?
        }
    };
    *at = start + len + usize::from(quoted);
    Some((value, &bytes[start..start + len]))
}

/// A cursor over one frame.
pub struct Walker<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// The shape of the last level read by the vector reader, tried first on the next.
    last_level: simd::LevelPattern,
    /// The unit of the instrument the frame is of (`UnitSize::decoding`): its prices and
    /// amounts are read in it. The fast paths read the coin's numbers only.
    unit: UnitSize,
}

#[inline]
fn is_json_whitespace(byte: u8) -> bool {
    matches!(byte, b' ' | b'\n' | b'\r' | b'\t')
}

/// Bytes that can continue a JSON number (what is not valid among them, the number parser
/// reports precisely).
#[inline]
fn is_number_byte(byte: u8) -> bool {
    matches!(byte, b'0'..=b'9' | b'.' | b'-' | b'+' | b'e' | b'E')
}

/// Index of the first `"` in `bytes`: SWAR over the first 16 bytes (two words, no loop),
/// which holds any price or amount; memchr beyond. A hand-written search because memchr's
/// call and setup cost more than the whole search for a 10-byte number.
#[inline]
fn find_quote(bytes: &[u8]) -> Option<usize> {
    let Some(chunk) = bytes.first_chunk::<16>() else {
        return memchr::memchr(b'"', bytes);
    };
    first_match_in_16(chunk, |word| matching_bytes(word, b'"'))
        .or_else(|| memchr::memchr(b'"', &bytes[16..]).map(|index| index + 16))
}

/// Index of the first byte of `chunk` that `matches` marks (its high bit, as
/// [`matching_bytes`] sets it), over two words.
#[inline(always)]
fn first_match_in_16(chunk: &[u8; 16], matches: impl Fn(u64) -> u64) -> Option<usize> {
    let word = |half: usize| u64::from_le_bytes(*chunk[8 * half..].first_chunk().expect("8 of 16"));
    let found = u128::from(matches(word(1))) << 64 | u128::from(matches(word(0)));
    // Bits above the first match may be false positives (borrows); the lowest is exact.
    (found != 0).then(|| found.trailing_zeros() as usize / 8)
}

impl<'a> Walker<'a> {
    pub fn new(bytes: &'a [u8]) -> Self {
        Walker {
            bytes,
            pos: 0,
            last_level: simd::LevelPattern::none(),
            unit: UnitSize::of_decoding(),
        }
    }

    /// Whether the fast paths may read this frame's numbers: they read them as the wire
    /// writes them, in coins.
    #[inline(always)]
    fn in_coins(&self) -> bool {
        self.unit.is_coin()
    }

    /// A walker over `bytes` from byte `at` on: a frame read again from a place an earlier
    /// walk found (the next of several events in one frame).
    pub fn resume(bytes: &'a [u8], at: usize) -> Self {
        let mut walker = Walker::new(bytes);
        walker.pos = at.min(bytes.len());
        walker
    }

    /// A walker over the same frame from byte `at` on (a value skipped, to read later).
    pub fn resumed_at(&self, at: usize) -> Walker<'a> {
        Walker::resume(self.bytes, at)
    }

    /// Back to `at`, a place read before: where a fast path that declined started.
    pub fn rewind(&mut self, at: usize) {
        self.pos = at.min(self.pos);
    }

    /// A number right at the cursor (no whitespace), quoted or bare, by the fast parsers
    /// only: `None`, nothing consumed, for anything they decline (and in a unit other than
    /// the coin), which [`Walker::price`] or [`Walker::amount`] then reads or refuses. For
    /// a venue's layout fast path.
    #[inline(always)]
    pub fn compact_fixed_point(&mut self) -> Option<FixedPoint> {
        if !self.in_coins() {
            return None;
        }
        let mut at = self.pos;
        let (value, _) = compact_number(self.bytes, &mut at)?;
        self.pos = at;
        Some(value)
    }

    /// Where the cursor is: what a read consumed, or a place to [`Walker::resume`] from.
    pub fn position(&self) -> usize {
        self.pos
    }

    #[inline]
    fn skip_whitespace(&mut self) {
        while let Some(&byte) = self.bytes.get(self.pos) {
            if !is_json_whitespace(byte) {
                break;
            }
            self.pos += 1;
        }
    }

    /// Moves past `expected` if the bytes at the position are exactly it. For the layouts a
    /// venue sends its frames in: with `expected` a literal, one compare of a known size,
    /// inlined, where the general object walk reads each key, colon and comma on its own.
    #[inline(always)]
    pub fn skip_exactly(&mut self, expected: &[u8]) -> bool {
        let end = self.pos + expected.len();
        let matched = self.bytes.get(self.pos..end) == Some(expected);
        if matched {
            self.pos = end;
        }
        matched
    }

    /// The next significant byte, not consumed.
    #[inline]
    pub fn peek(&mut self) -> Result<u8> {
        self.skip_whitespace();
        self.bytes
            .get(self.pos)
            .copied()
            .ok_or(DecodeError::Truncated)
    }

    #[inline]
    fn unexpected(&self, expected: &'static str) -> DecodeError {
        if self.pos >= self.bytes.len() {
            DecodeError::Truncated
        } else {
            DecodeError::Unexpected {
                at: self.pos,
                expected,
            }
        }
    }

    /// Consumes `byte` (after whitespace) or fails naming `expected`.
    #[inline]
    pub fn expect(&mut self, byte: u8, expected: &'static str) -> Result<()> {
        if self.peek()? == byte {
            self.pos += 1;
            Ok(())
        } else {
            Err(self.unexpected(expected))
        }
    }

    /// After an element or member: consumes `,` (true: another follows) or `close`
    /// (false: the container ended).
    #[inline]
    pub fn next_or_close(&mut self, close: u8, expected: &'static str) -> Result<bool> {
        match self.peek()? {
            b',' => {
                self.pos += 1;
                Ok(true)
            }
            byte if byte == close => {
                self.pos += 1;
                Ok(false)
            }
            _ => Err(self.unexpected(expected)),
        }
    }

    /// Requires that only whitespace remains.
    pub fn finish(&mut self) -> Result<()> {
        self.skip_whitespace();
        if self.pos == self.bytes.len() {
            Ok(())
        } else {
            Err(DecodeError::TrailingBytes { at: self.pos })
        }
    }

    /// Visits the members of an object in wire order. `member` is given each key (raw
    /// bytes, without quotes) and must consume exactly that key's value.
    #[inline]
    pub fn object(
        &mut self,
        mut member: impl FnMut(&mut Self, &'a [u8]) -> Result<()>,
    ) -> Result<()> {
        self.expect(b'{', "'{'")?;
        if self.peek()? == b'}' {
            self.pos += 1;
            return Ok(());
        }
        loop {
            let key = self.string()?;
            self.expect(b':', "':'")?;
            member(self, key)?;
            if !self.next_or_close(b'}', "',' or '}'")? {
                return Ok(());
            }
        }
    }

    /// A string's raw content (escapes left as they are, but skipped correctly).
    #[inline(always)]
    pub fn string(&mut self) -> Result<&'a [u8]> {
        self.expect(b'"', "a string")?;
        let start = self.pos;
        // A key or a value up to 31 bytes (a stream or channel name) ends within two
        // 16-byte windows, found without memchr2's call and setup (about 90 instructions a
        // string); an escape or a longer string takes the loop, out of line so that this
        // path inlines into the object walk.
        if let Some(len) = self.short_string_len(start)
            && self.bytes[start + len] == b'"'
        {
            self.pos = start + len + 1;
            return Ok(&self.bytes[start..start + len]);
        }
        self.rest_of_string(start)
    }

    /// Where the first `"` or `\` at or after `start` is, if within two 16-byte windows:
    /// the one at `start`, and the next 16 bytes or, nearer the input's end, its last 16.
    /// The windows then overlap, which does not matter: the first has no match.
    #[inline(always)]
    fn short_string_len(&self, start: usize) -> Option<usize> {
        let quote_or_escape = |word| matching_bytes(word, b'"') | matching_bytes(word, b'\\');
        let first = self.bytes[start..].first_chunk::<16>()?;
        if let Some(len) = first_match_in_16(first, quote_or_escape) {
            return Some(len);
        }
        // At least `start`: the first window fitted.
        let second_at = (start + 16).min(self.bytes.len() - 16);
        let second = self.bytes[second_at..].first_chunk::<16>()?;
        first_match_in_16(second, quote_or_escape).map(|len| second_at - start + len)
    }

    /// The rest of a string that starts at `start` (after its opening quote): memchr2 to
    /// each quote or backslash.
    #[inline(never)]
    fn rest_of_string(&mut self, start: usize) -> Result<&'a [u8]> {
        loop {
            let rest = &self.bytes[self.pos..];
            let found = memchr::memchr2(b'"', b'\\', rest).ok_or(DecodeError::Truncated)?;
            self.pos += found;
            if self.bytes[self.pos] == b'"' {
                self.pos += 1;
                return Ok(&self.bytes[start..self.pos - 1]);
            }
            self.pos += 2; // a backslash and the byte it escapes
            if self.pos > self.bytes.len() {
                return Err(DecodeError::Truncated);
            }
        }
    }

    /// A price: [`Walker::number`].
    #[inline]
    pub fn price(&mut self) -> Result<FixedPoint> {
        self.number(Measure::Price)
    }

    /// An amount: [`Walker::number`].
    #[inline]
    pub fn amount(&mut self) -> Result<FixedPoint> {
        self.number(Measure::Amount)
    }

    /// An exact decimal, quoted (`"0.06824000"`, as most venues send) or a bare JSON number
    /// (`0.06824`), parsed in place, in the instrument's unit (a price or an amount moves
    /// its own way).
    ///
    /// The number's end is found first, by a search that does not depend on its digits, so
    /// the walk to the next number never waits for this one's conversion: on a book frame
    /// that chain of positions is the critical path.
    #[inline]
    pub fn number(&mut self, measure: Measure) -> Result<FixedPoint> {
        let quoted = self.peek()? == b'"';
        let start = self.pos + usize::from(quoted);
        let in_coins = self.in_coins();
        if in_coins
            && quoted
            && let Some((value, len)) = FixedPoint::parse_quoted_fast(&self.bytes[start..])
        {
            self.pos = start + len + 1;
            return Ok(value);
        }
        if in_coins
            && !quoted
            && let Some((value, len)) = FixedPoint::parse_bare_fast(&self.bytes[start..])
        {
            self.pos = start + len;
            return Ok(value);
        }
        let end = if quoted {
            let rest = &self.bytes[start..];
            start + find_quote(rest).ok_or(DecodeError::Truncated)?
        } else {
            let len = self.bytes[start..]
                .iter()
                .take_while(|&&b| is_number_byte(b))
                .count();
            if len == 0 {
                return Err(self.unexpected("a number"));
            }
            start + len
        };
        let text = &self.bytes[start..end];
        let value = match in_coins {
            true => FixedPoint::parse_in(self.bytes, start, end),
            // An exponent is refused in any unit (Deribit's are read by
            // `number_or_scientific`).
            false if text.iter().any(|&b| b == b'e' || b == b'E') => Err(FixedPointError::Exponent),
            false => self.unit.parse_number(measure, text),
        };
        let value = value.map_err(|error| DecodeError::Number { at: start, error })?;
        self.pos = end;
        self.end_of_number(quoted, start)?;
        Ok(value)
    }

    /// [`Walker::number`] for a venue that writes some numbers with an exponent (Deribit's
    /// `2.2e3`): such a number exactly ([`FixedPoint::parse_scientific`]); every other
    /// number as `number` reads it, at its cost.
    #[inline]
    pub fn number_or_scientific(&mut self, measure: Measure) -> Result<FixedPoint> {
        let at = self.pos;
        match self.number(measure) {
            // Whatever the plain parse stopped at (the exponent, or digits past the range
            // before it), a number with an exponent is read whole.
            Err(error @ DecodeError::Number { at: start, .. }) => {
                let mut text = self.bytes[start..]
                    .iter()
                    .take_while(|&&b| is_number_byte(b));
                match text.any(|&b| b == b'e' || b == b'E') {
                    true => self.scientific(at, measure),
                    false => Err(error),
                }
            }
            read => read,
        }
    }

    /// The number at `at` with its exponent, exactly.
    #[cold]
    fn scientific(&mut self, at: usize, measure: Measure) -> Result<FixedPoint> {
        self.pos = at;
        let quoted = self.peek()? == b'"';
        let start = self.pos + usize::from(quoted);
        let len = self.bytes[start..]
            .iter()
            .take_while(|&&b| is_number_byte(b))
            .count();
        let value = self
            .unit
            .parse_number(measure, &self.bytes[start..start + len])
            .map_err(|error| DecodeError::Number { at: start, error })?;
        self.pos = start + len;
        self.end_of_number(quoted, start)?;
        Ok(value)
    }

    /// An unsigned integer, bare (`"lastUpdateId":160`) or quoted
    /// (`"microtimestamp":"1641343691406478"`).
    pub fn unsigned(&mut self) -> Result<u64> {
        let quoted = self.peek()? == b'"';
        self.pos += usize::from(quoted);
        let start = self.pos;
        let rest = &self.bytes[start..];
        let (value, digits) = match leading_integer(rest) {
            Some(read) => read,
            None => long_leading_integer(rest).ok_or(DecodeError::IntegerOverflow { at: start })?,
        };
        if digits == 0 {
            return Err(self.unexpected("an unsigned integer"));
        }
        self.pos += digits;
        self.end_of_number(quoted, start)?;
        Ok(value)
    }

    /// A signed integer, bare (`"prevSeqId":-1`, `"checksum":-308733687`) or quoted: an
    /// optional `-` right before the digits, read as [`Walker::unsigned`] reads them.
    pub fn signed(&mut self) -> Result<i64> {
        let quoted = self.peek()? == b'"';
        let sign = self.pos + usize::from(quoted);
        if self.bytes.get(sign) != Some(&b'-') {
            let value = self.unsigned()?;
            return i64::try_from(value).map_err(|_| DecodeError::IntegerOverflow { at: sign });
        }
        let start = sign + 1;
        let rest = &self.bytes[start..];
        let (magnitude, digits) = match leading_integer(rest) {
            Some(read) => read,
            None => long_leading_integer(rest).ok_or(DecodeError::IntegerOverflow { at: sign })?,
        };
        if digits == 0 {
            self.pos = start;
            return Err(self.unexpected("a digit after '-'"));
        }
        let value = 0i64
            .checked_sub_unsigned(magnitude)
            .ok_or(DecodeError::IntegerOverflow { at: sign })?;
        self.pos = start + digits;
        self.end_of_number(quoted, sign)?;
        Ok(value)
    }

    /// After a number: a quoted one needs its closing quote; a bare one must be followed by
    /// a delimiter (so `12abc` is refused rather than read as `12`).
    #[inline]
    fn end_of_number(&mut self, quoted: bool, start: usize) -> Result<()> {
        match self.bytes.get(self.pos) {
            // A bare number may end the input; whatever was expected next reports it.
            None if !quoted => Ok(()),
            None => Err(DecodeError::Truncated),
            Some(b'"') if quoted => {
                self.pos += 1;
                Ok(())
            }
            Some(&byte)
                if !quoted && (is_json_whitespace(byte) || matches!(byte, b',' | b']' | b'}')) =>
            {
                Ok(())
            }
            Some(_) => Err(DecodeError::Number {
                at: start,
                error: FixedPointError::InvalidCharacter,
            }),
        }
    }

    /// Consumes `null`.
    pub fn null(&mut self) -> Result<()> {
        self.literal(b"null")
    }

    /// `true` or `false`.
    pub fn boolean(&mut self) -> Result<bool> {
        match self.peek()? {
            b't' => self.literal(b"true").map(|()| true),
            b'f' => self.literal(b"false").map(|()| false),
            _ => Err(self.unexpected("true or false")),
        }
    }

    fn literal(&mut self, word: &'static [u8]) -> Result<()> {
        self.skip_whitespace();
        let rest = &self.bytes[self.pos..];
        if rest.starts_with(word) {
            self.pos += word.len();
            Ok(())
        } else if word.starts_with(rest) {
            Err(DecodeError::Truncated)
        } else {
            Err(self.unexpected("a JSON value"))
        }
    }

    /// Skips one JSON value of any kind, checking that it is well formed.
    pub fn skip_value(&mut self) -> Result<()> {
        self.skip_nested(0)
    }

    fn skip_nested(&mut self, depth: u32) -> Result<()> {
        if depth >= MAX_NESTING {
            return Err(DecodeError::TooDeep);
        }
        match self.peek()? {
            b'"' => self.string().map(drop),
            b'{' => self.object(|walker, _| walker.skip_nested(depth + 1)),
            b'[' => {
                self.pos += 1;
                if self.peek()? == b']' {
                    self.pos += 1;
                    return Ok(());
                }
                loop {
                    self.skip_nested(depth + 1)?;
                    if !self.next_or_close(b']', "',' or ']'")? {
                        return Ok(());
                    }
                }
            }
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.skip_number(),
            _ => Err(self.unexpected("a JSON value")),
        }
    }

    /// Skips a JSON number, exactly as RFC 8259 spells one:
    /// `-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?`, so that `01`, `1.` and `.5` are
    /// refused. Read in one pass by hand: the numbers skipped are the event times and ids
    /// of every Binance diff event (`"E":1700000000123`), and a float parse of each cost
    /// about a tenth of the event's decode (`binance_diff_decode`, 3,497 → 3,149
    /// instructions).
    fn skip_number(&mut self) -> Result<()> {
        let start = self.pos;
        let bytes = self.bytes;
        let digits_end = |from: usize| crate::fixed::digits_end(bytes, from);
        // Digits from `from` on, at least one.
        let some_digits_end = |from: usize| Some(digits_end(from)).filter(|&end| end > from);
        let not_a_number = || DecodeError::Unexpected {
            at: start,
            expected: "a JSON number",
        };
        let mut pos = start + usize::from(bytes.get(start) == Some(&b'-'));
        pos = match bytes.get(pos) {
            Some(b'0') => pos + 1,
            Some(b'1'..=b'9') => digits_end(pos + 1),
            _ => return Err(not_a_number()),
        };
        if bytes.get(pos) == Some(&b'.') {
            pos = some_digits_end(pos + 1).ok_or_else(not_a_number)?;
        }
        if matches!(bytes.get(pos), Some(b'e' | b'E')) {
            pos += 1 + usize::from(matches!(bytes.get(pos + 1), Some(b'+' | b'-')));
            pos = some_digits_end(pos).ok_or_else(not_a_number)?;
        }
        self.pos = pos;
        self.end_of_number(false, start)
    }
}

#[cfg(test)]
mod tests;
