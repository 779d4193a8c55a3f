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

use crate::book::{Level, Levels, MAX_DEPTH, Side, WireDecimals};
use crate::fixed::{
    FAST_PARSE_LOOKAHEAD, FixedPoint, FixedPointError, leading_integer, long_leading_integer,
    matching_bytes,
};
use memchr::memmem;
use std::sync::LazyLock;

#[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
mod simd_level;
#[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
mod simd_side_skip;

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

/// How a venue writes one price level. `[price, amount]` has the fast paths; prices and
/// amounts may be quoted or bare JSON numbers in every shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LevelShape {
    /// `[price, amount]`.
    Pair,
    /// `[price, amount, …]`: elements after the amount (an order count, a deprecated
    /// field) are skipped.
    PairThenMore,
    /// `{"<price>": price, "<amount>": amount, …}`: the two members in any order, other
    /// members skipped.
    Object {
        price: &'static str,
        amount: &'static str,
    },
}

/// How a venue writes a change that names its own side, bids and asks in one array.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaggedShape {
    /// `[side, price, amount]`.
    Array,
    /// `{"<side>": side, "<price>": price, "<amount>": amount, …}`, any member order,
    /// other members skipped.
    Object {
        side: &'static str,
        price: &'static str,
        amount: &'static str,
    },
}

/// Whether `parts` follow each other at `bytes[*at..]`; `*at` moves past them.
#[inline(always)]
fn skip_literals(bytes: &[u8], at: &mut usize, parts: &[&[u8]]) -> Option<()> {
    for part in parts {
        let here = bytes.get(*at..*at + part.len())?;
        // In line: `starts_with` calls `bcmp`, which costs more than these few bytes.
        here.iter().zip(*part).all(|(a, b)| a == b).then_some(())?;
        *at += part.len();
    }
    Some(())
}

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

/// Whether `key` is `name`: compared in line, where slice equality calls `bcmp`, which
/// costs more than comparing the few bytes of a level's key.
#[inline(always)]
fn is_key(key: &[u8], name: &str) -> bool {
    key.len() == name.len() && key.iter().zip(name.as_bytes()).all(|(a, b)| a == b)
}

/// The side a tagged change names: `bid`/`buy`, or `ask`/`offer`/`sell`.
fn side_named(name: &[u8]) -> Result<Side> {
    match name {
        b"bid" | b"buy" => Ok(Side::Bid),
        b"ask" | b"offer" | b"sell" => Ok(Side::Ask),
        _ => Err(DecodeError::Invalid(
            "a side must be bid, buy, ask, offer or sell",
        )),
    }
}

/// Fractional digits of a number's text (quotes and all): those after its `.`.
fn fraction_digits(text: &[u8]) -> u8 {
    let text = text.strip_suffix(b"\"").unwrap_or(text);
    text.iter().position(|&byte| byte == b'.').map_or(0, |dot| {
        (text.len() - dot - 1).min(usize::from(u8::MAX)) as u8
    })
}

/// What [`Walker::levels`] does with each level read: checks that it comes strictly after
/// the one before in `side`'s order (`previous_rank`), and keeps it unless its amount is
/// zero.
#[inline(always)]
fn keep_in_order(
    side: Side,
    level: Level,
    out: &mut Levels,
    previous_rank: &mut Option<u64>,
) -> Result<()> {
    let rank = side.rank(level.price);
    if previous_rank.is_some_and(|previous_rank| previous_rank >= rank) {
        return Err(DecodeError::Unsorted(side));
    }
    *previous_rank = Some(rank);
    if !level.amount.is_zero() {
        out.push(level);
    }
    Ok(())
}

/// A cursor over one frame.
pub struct Walker<'a> {
    bytes: &'a [u8],
    pos: usize,
    /// The shape of the last level read by the vector reader, tried first on the next.
    #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
    last_level: simd_level::LevelPattern,
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
            #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
            last_level: simd_level::LevelPattern::none(),
        }
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
    /// only: `None`, nothing consumed, for anything they decline, which
    /// [`Walker::fixed_point`] then reads or refuses. For a venue's layout fast path.
    #[inline(always)]
    pub fn compact_fixed_point(&mut self) -> Option<FixedPoint> {
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

    /// An exact decimal, quoted (`"0.06824000"`, as most venues send) or a bare JSON number
    /// (`0.06824`), parsed in place.
    ///
    /// The number's end is found first, by a search that does not depend on its digits, so
    /// the walk to the next number never waits for this one's conversion: on a book frame
    /// that chain of positions is the critical path.
    #[inline]
    pub fn fixed_point(&mut self) -> Result<FixedPoint> {
        let quoted = self.peek()? == b'"';
        let start = self.pos + usize::from(quoted);
        if quoted && let Some((value, len)) = FixedPoint::parse_quoted_fast(&self.bytes[start..]) {
            self.pos = start + len + 1;
            return Ok(value);
        }
        if !quoted && let Some((value, len)) = FixedPoint::parse_bare_fast(&self.bytes[start..]) {
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
        let value = FixedPoint::parse_in(self.bytes, start, end)
            .map_err(|error| DecodeError::Number { at: start, error })?;
        self.pos = end;
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
        let digits_end = |from: usize| {
            from + bytes[from..]
                .iter()
                .take_while(|byte| byte.is_ascii_digit())
                .count()
        };
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

    /// Reads one side array of `[price, amount]` levels into `out`, keeping the best `depth`
    /// (at most `MAX_DEPTH`) non-zero levels and skipping the rest without parsing them. The kept levels must be
    /// strictly sorted best first (zero-amount levels included in that check).
    pub fn levels(&mut self, side: Side, depth: usize, out: &mut Levels) -> Result<()> {
        let depth = depth.min(MAX_DEPTH);
        out.clear();
        self.expect(b'[', "'[' opening a side")?;
        if self.peek()? == b']' {
            self.pos += 1;
            return Ok(());
        }
        let mut previous_rank: Option<u64> = None;
        loop {
            if out.len() == depth {
                return self.skip_rest_of_array();
            }
            #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
            if self.kept_shape_levels(side, depth, out, &mut previous_rank)? {
                continue;
            }
            let (level, more) = self.level_and_separator()?;
            keep_in_order(side, level, out, &mut previous_rank)?;
            if !more {
                return Ok(());
            }
        }
    }

    /// The levels from here on that have a kept pattern's shape (`simd_level::KeptPatterns`),
    /// checked and kept as [`Walker::levels`] does, up to `depth` kept; whether there was one.
    #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
    #[inline(always)]
    fn kept_shape_levels(
        &mut self,
        side: Side,
        depth: usize,
        out: &mut Levels,
        previous_rank: &mut Option<u64>,
    ) -> Result<bool> {
        self.kept_pattern_levels(depth - out.len() + 1, |level| {
            keep_in_order(side, level, out, previous_rank)?;
            Ok(out.len() < depth)
        })
    }

    /// [`Walker::kept_shape_levels`] for [`Walker::best_levels`]: the levels from here on
    /// that have a kept pattern's shape, each checked to follow the one before where the
    /// side is `sorted`, up to `limit` in `out`; whether there was one. A deep side whose
    /// levels change shape from one to the next (a full-depth snapshot's sizes: `"12.77"`,
    /// `"123.10"`, `"6.92"`) is read by the patterns of those shapes rather than level by
    /// level.
    #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
    #[inline(always)]
    fn kept_shape_all_levels(
        &mut self,
        sorted: Option<Side>,
        limit: usize,
        out: &mut Vec<Level>,
    ) -> Result<bool> {
        self.kept_pattern_levels(limit - out.len() + 1, |level| {
            if let (Some(side), Some(previous)) = (sorted, out.last())
                && !side.is_better(previous.price, level.price)
            {
                return Err(DecodeError::Unsorted(side));
            }
            out.push(level);
            Ok(out.len() < limit)
        })
    }

    /// The levels from here on that have a kept pattern's shape, at most `wanted` level
    /// starts looked at, each handed to `keep`, which says whether to go on (false: the
    /// side's output is full); whether there was one. Each is checked to end where the next
    /// `[` starts, so another level follows it.
    #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
    #[inline(always)]
    fn kept_pattern_levels(
        &mut self,
        wanted: usize,
        mut keep: impl FnMut(Level) -> Result<bool>,
    ) -> Result<bool> {
        /// Level starts looked for at once: a depth of 20 and the start after it.
        const STARTS: usize = 21;
        let mut starts = [0u32; STARTS + simd_level::STARTS_SLACK];
        let wanted = wanted.min(STARTS);
        let found = simd_level::level_starts(self.bytes, self.pos, wanted, &mut starts);
        if found < 2 || starts[0] as usize != self.pos {
            return Ok(false);
        }
        simd_level::KeptPatterns::with(|kept| {
            let mut read = false;
            for pair in starts[..found].windows(2) {
                let (start, next) = (pair[0] as usize, pair[1] as usize);
                let Some(level) = self
                    .bytes
                    .get(start..)
                    .and_then(<[u8]>::first_chunk)
                    .and_then(|window| kept.read(window, next - start))
                else {
                    break;
                };
                let more = keep(level)?;
                self.pos = next;
                read = true;
                if !more {
                    break;
                }
            }
            Ok(read)
        })
    }

    /// Reads one side array of a diff event or a snapshot into `out`: every level, zero
    /// amounts included (they delete), at most `limit` (more is an error, not a silent
    /// cut). `sorted`: the side must be strictly sorted best first (snapshots); diffs are
    /// applied in wire order and need not be.
    pub fn all_levels(
        &mut self,
        sorted: Option<Side>,
        limit: usize,
        out: &mut Vec<Level>,
    ) -> Result<()> {
        self.levels_up_to::<false>(sorted, limit, out)
    }

    /// A snapshot's side of `[price, amount]` levels, sorted best first, into `out`: its
    /// best `limit` levels, and the rest checked and skipped (a venue's full-depth book
    /// beyond the book's level cap: the levels past it are ones the book could not keep).
    pub fn best_levels(&mut self, side: Side, limit: usize, out: &mut Vec<Level>) -> Result<()> {
        self.levels_up_to::<true>(Some(side), limit, out)
    }

    /// At most `limit` levels into `out`; past them, an error, or with `SKIP_EXCESS` the
    /// rest checked and skipped (the worst levels of a book deeper than it is kept). A
    /// constant, so that each reader compiles to its own loop.
    #[inline(always)]
    fn levels_up_to<const SKIP_EXCESS: bool>(
        &mut self,
        sorted: Option<Side>,
        limit: usize,
        out: &mut Vec<Level>,
    ) -> Result<()> {
        out.clear();
        self.expect(b'[', "'[' opening a side")?;
        if self.peek()? == b']' {
            self.pos += 1;
            return Ok(());
        }
        loop {
            if out.len() == limit {
                return match SKIP_EXCESS {
                    false => Err(DecodeError::TooManyLevels(limit)),
                    true => self.skip_rest_of_array(),
                };
            }
            // A full-depth snapshot's levels change shape from one to the next; a side of
            // levels mostly of one shape is read faster by the last level's pattern alone.
            #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
            if SKIP_EXCESS && self.kept_shape_all_levels(sorted, limit, out)? {
                continue;
            }
            let (level, more) = self.level_and_separator()?;
            if let (Some(side), Some(previous)) = (sorted, out.last())
                && !side.is_better(previous.price, level.price)
            {
                return Err(DecodeError::Unsorted(side));
            }
            out.push(level);
            if !more {
                return Ok(());
            }
        }
    }

    /// [`Walker::levels`] for a side of levels of any `shape`.
    pub fn shaped_levels(
        &mut self,
        shape: LevelShape,
        side: Side,
        depth: usize,
        out: &mut Levels,
    ) -> Result<()> {
        if shape == LevelShape::Pair {
            return self.levels(side, depth, out);
        }
        let depth = depth.min(MAX_DEPTH);
        out.clear();
        let mut previous_rank: Option<u64> = None;
        self.elements(|walker| {
            if out.len() == depth {
                walker.skip_value()
            } else {
                let level = walker.shaped_level(shape, None)?;
                keep_in_order(side, level, out, &mut previous_rank)
            }
        })
    }

    /// [`Walker::all_levels`] for a side of levels of any `shape`; with `decimals`, also
    /// the most fractional digits of its prices and amounts as written (read the general
    /// way, without the fast paths).
    pub fn all_shaped_levels(
        &mut self,
        shape: LevelShape,
        sorted: Option<Side>,
        limit: usize,
        out: &mut Vec<Level>,
        mut decimals: Option<&mut WireDecimals>,
    ) -> Result<()> {
        if shape == LevelShape::Pair && decimals.is_none() {
            return self.all_levels(sorted, limit, out);
        }
        out.clear();
        self.elements(|walker| {
            if out.len() == limit {
                return Err(DecodeError::TooManyLevels(limit));
            }
            let level = walker.shaped_level(shape, decimals.as_deref_mut())?;
            if let (Some(side), Some(previous)) = (sorted, out.last())
                && !side.is_better(previous.price, level.price)
            {
                return Err(DecodeError::Unsorted(side));
            }
            out.push(level);
            Ok(())
        })
    }

    /// An array of changes that name their sides (`shape`), in wire order, into `bids`
    /// and `asks`: at most `limit` in all (more is an error).
    pub fn tagged_levels(
        &mut self,
        shape: TaggedShape,
        limit: usize,
        bids: &mut Vec<Level>,
        asks: &mut Vec<Level>,
        mut decimals: Option<&mut WireDecimals>,
    ) -> Result<()> {
        bids.clear();
        asks.clear();
        self.elements(|walker| {
            if bids.len() + asks.len() == limit {
                return Err(DecodeError::TooManyLevels(limit));
            }
            let (side, level) = walker.tagged_level(shape, decimals.as_deref_mut())?;
            match side {
                Side::Bid => bids.push(level),
                Side::Ask => asks.push(level),
            }
            Ok(())
        })
    }

    /// Visits each element of an array; `element` must consume exactly one value.
    pub fn elements(&mut self, mut element: impl FnMut(&mut Self) -> Result<()>) -> Result<()> {
        self.expect(b'[', "'[' opening a side")?;
        if self.peek()? == b']' {
            self.pos += 1;
            return Ok(());
        }
        loop {
            element(self)?;
            if !self.next_or_close(b']', "',' or ']' after a level")? {
                return Ok(());
            }
        }
    }

    /// A price or an amount, and the most fractional digits of its kind so far.
    fn counted_fixed_point(&mut self, most_digits: Option<&mut u8>) -> Result<FixedPoint> {
        self.skip_whitespace();
        let start = self.pos;
        let value = self.fixed_point()?;
        if let Some(most_digits) = most_digits {
            let digits = fraction_digits(&self.bytes[start..self.pos]);
            *most_digits = (*most_digits).max(digits);
        }
        Ok(value)
    }

    /// `["price","amount","…",…]` as a venue writes it compactly (OKX's
    /// `["8476.98","415","0","13"]`): the two numbers by the quoted fast path, each further
    /// element a short string without escapes, skipped in one scan. `None`, with nothing
    /// consumed, for anything else (whitespace, other elements, a long number), which the
    /// general walk reads: written for the level shape whose general walk (a `skip_value`
    /// per further element) cost four fifths of a 400-level OKX snapshot's decode.
    #[inline(always)]
    fn compact_pair_then_more(&mut self) -> Option<Level> {
        /// Longer further elements are left to the general walk.
        const MAX_ELEMENT: usize = 24;
        let bytes = self.bytes;
        let mut at = self.pos;
        if bytes.get(at..at + 2)? != b"[\"" {
            return None;
        }
        at += 2;
        let (price, len) = FixedPoint::parse_quoted_fast(bytes.get(at..)?)?;
        at += len;
        if bytes.get(at..at + 3)? != b"\",\"" {
            return None;
        }
        at += 3;
        let (amount, len) = FixedPoint::parse_quoted_fast(bytes.get(at..)?)?;
        at += len + 1;
        loop {
            match bytes.get(at)? {
                b']' => break,
                b',' if bytes.get(at + 1) == Some(&b'"') => {
                    // A byte loop: these strings are a byte or two (`"0"`, `"13"`).
                    let start = at + 2;
                    at = start;
                    loop {
                        match *bytes.get(at)? {
                            b'"' => break,
                            b'\\' | 0..0x20 => return None,
                            _ if at - start == MAX_ELEMENT => return None,
                            _ => at += 1,
                        }
                    }
                    at += 1;
                }
                _ => return None,
            }
        }
        self.pos = at + 1;
        Some(Level { price, amount })
    }

    /// One level of `shape`.
    fn shaped_level(
        &mut self,
        shape: LevelShape,
        decimals: Option<&mut WireDecimals>,
    ) -> Result<Level> {
        let (price_digits, amount_digits) = match decimals {
            Some(WireDecimals { price, amount }) => (Some(price), Some(amount)),
            None => (None, None),
        };
        if shape == LevelShape::PairThenMore
            && price_digits.is_none()
            && let Some(level) = self.compact_pair_then_more()
        {
            return Ok(level);
        }
        match shape {
            LevelShape::Pair | LevelShape::PairThenMore => {
                self.expect(b'[', "'[' opening a level")?;
                let price = self.counted_fixed_point(price_digits)?;
                self.expect(b',', "',' between price and amount")?;
                let amount = self.counted_fixed_point(amount_digits)?;
                let mut more = self.next_or_close(b']', "',' or ']' in a level")?;
                if more && shape == LevelShape::Pair {
                    return Err(DecodeError::LevelShape { at: self.pos });
                }
                while more {
                    self.skip_value()?;
                    more = self.next_or_close(b']', "',' or ']' in a level")?;
                }
                Ok(Level { price, amount })
            }
            LevelShape::Object {
                price: price_key,
                amount: amount_key,
            } => {
                if let Some((level, digits)) = self.compact_object_level(price_key, amount_key) {
                    if let Some(most) = price_digits {
                        *most = (*most).max(digits.0);
                    }
                    if let Some(most) = amount_digits {
                        *most = (*most).max(digits.1);
                    }
                    return Ok(level);
                }
                let (mut price, mut amount) = (None, None);
                let (mut price_digits, mut amount_digits) = (price_digits, amount_digits);
                self.object(|walker, key| {
                    if is_key(key, price_key) {
                        if price.is_some() {
                            return Err(DecodeError::DuplicateKey(price_key));
                        }
                        price = Some(walker.counted_fixed_point(price_digits.take())?);
                    } else if is_key(key, amount_key) {
                        if amount.is_some() {
                            return Err(DecodeError::DuplicateKey(amount_key));
                        }
                        amount = Some(walker.counted_fixed_point(amount_digits.take())?);
                    } else {
                        walker.skip_value()?;
                    }
                    Ok(())
                })?;
                Ok(Level {
                    price: price.ok_or(DecodeError::MissingKey(price_key))?,
                    amount: amount.ok_or(DecodeError::MissingKey(amount_key))?,
                })
            }
        }
    }

    /// `{"<price>":<number>,"<amount>":<number>}`, the compact layout with the price first,
    /// read by direct byte checks; with each number's fractional digits as written.
    /// `None` (position unchanged) for any other layout or any error, which the object
    /// walk then reads or reports: it costs several times as much per level.
    #[inline(always)]
    fn compact_object_level(
        &mut self,
        price_key: &str,
        amount_key: &str,
    ) -> Option<(Level, (u8, u8))> {
        let bytes = self.bytes;
        let mut at = self.pos;
        skip_literals(bytes, &mut at, &[b"{\"", price_key.as_bytes(), b"\":"])?;
        let (price, price_text) = compact_number(bytes, &mut at)?;
        skip_literals(bytes, &mut at, &[b",\"", amount_key.as_bytes(), b"\":"])?;
        let (amount, amount_text) = compact_number(bytes, &mut at)?;
        (bytes.get(at) == Some(&b'}')).then_some(())?;
        self.pos = at + 1;
        let digits = (fraction_digits(price_text), fraction_digits(amount_text));
        Some((Level { price, amount }, digits))
    }

    /// One change of `shape`: its side and level.
    pub fn tagged_level(
        &mut self,
        shape: TaggedShape,
        decimals: Option<&mut WireDecimals>,
    ) -> Result<(Side, Level)> {
        let (mut price_digits, mut amount_digits) = match decimals {
            Some(WireDecimals { price, amount }) => (Some(price), Some(amount)),
            None => (None, None),
        };
        match shape {
            TaggedShape::Array => {
                self.expect(b'[', "'[' opening a change")?;
                let side = side_named(self.string()?)?;
                self.expect(b',', "',' after the side")?;
                let price = self.counted_fixed_point(price_digits)?;
                self.expect(b',', "',' between price and amount")?;
                let amount = self.counted_fixed_point(amount_digits)?;
                if self.next_or_close(b']', "']' closing a change")? {
                    return Err(DecodeError::LevelShape { at: self.pos });
                }
                Ok((side, Level { price, amount }))
            }
            TaggedShape::Object {
                side: side_key,
                price: price_key,
                amount: amount_key,
            } => {
                let (mut side, mut price, mut amount) = (None, None, None);
                self.object(|walker, key| {
                    let duplicate = |key| Err(DecodeError::DuplicateKey(key));
                    if is_key(key, side_key) {
                        if side.is_some() {
                            return duplicate(side_key);
                        }
                        side = Some(side_named(walker.string()?)?);
                    } else if is_key(key, price_key) {
                        if price.is_some() {
                            return duplicate(price_key);
                        }
                        price = Some(walker.counted_fixed_point(price_digits.take())?);
                    } else if is_key(key, amount_key) {
                        if amount.is_some() {
                            return duplicate(amount_key);
                        }
                        amount = Some(walker.counted_fixed_point(amount_digits.take())?);
                    } else {
                        walker.skip_value()?;
                    }
                    Ok(())
                })?;
                let level = Level {
                    price: price.ok_or(DecodeError::MissingKey(price_key))?,
                    amount: amount.ok_or(DecodeError::MissingKey(amount_key))?,
                };
                Ok((side.ok_or(DecodeError::MissingKey(side_key))?, level))
            }
        }
    }

    /// The next level of a side and what follows it: `true` after a `,` (another level
    /// follows), `false` after the side's `]`.
    #[inline(always)]
    fn level_and_separator(&mut self) -> Result<(Level, bool)> {
        // Most levels have the shape of the one before: one check reads them.
        #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
        if let Some(window) = self.bytes.get(self.pos..).and_then(<[u8]>::first_chunk) {
            match self.last_level.read(window) {
                simd_level::PatternRead::Same(level) => {
                    self.pos += self.last_level.len;
                    return Ok((level, true));
                }
                // A pattern comes with the `,` after the level: another follows.
                simd_level::PatternRead::NewAmount(level, _, Some(pattern)) => {
                    self.pos += pattern.len;
                    self.adopt(pattern);
                    return Ok((level, true));
                }
                simd_level::PatternRead::NewAmount(level, len, None) => {
                    self.pos += len;
                    return Ok((level, self.after_level()?));
                }
                simd_level::PatternRead::Other => {}
            }
        }
        let level = self.level()?;
        Ok((level, self.after_level()?))
    }

    /// What follows a level: `true` after a `,` (and one space after it), `false`
    /// after the side's `]`.
    #[inline(always)]
    fn after_level(&mut self) -> Result<bool> {
        // Every venue's layout has `,` or `]` right after a level: checked directly,
        // anything else (whitespace first) the general way.
        Ok(match self.bytes.get(self.pos) {
            Some(b',') => {
                // And one space after it (the spaced layout), so that the next level starts here.
                self.pos += 1 + usize::from(self.bytes.get(self.pos + 1) == Some(&b' '));
                true
            }
            Some(b']') => {
                self.pos += 1;
                false
            }
            _ => self.next_or_close(b']', "',' or ']' after a level")?,
        })
    }

    /// A new level's pattern: tried first on the next level, and kept for the sides read
    /// after it (`Walker::kept_shape_levels`), wherever it was read.
    #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
    #[inline(always)]
    fn adopt(&mut self, pattern: simd_level::LevelPattern) {
        simd_level::KeptPatterns::remember(&pattern);
        self.last_level = pattern;
    }

    /// `[price, amount]`: the layouts exchanges send inline, any other out of line.
    #[inline(always)]
    fn level(&mut self) -> Result<Level> {
        // Whitespace other than the one space the separator path takes after a `,`.
        self.skip_whitespace();
        match self.compact_level() {
            Some(level) => Ok(level),
            None => self.any_level(),
        }
    }

    /// `[price, amount]` with any whitespace, bare numbers, or an error to report.
    #[inline(never)]
    fn any_level(&mut self) -> Result<Level> {
        self.expect(b'[', "'[' opening a level")?;
        let price = self.fixed_point()?;
        self.expect(b',', "',' between price and amount")?;
        let amount = self.fixed_point()?;
        if self.peek()? != b']' {
            return Err(DecodeError::LevelShape { at: self.pos });
        }
        self.pos += 1;
        Ok(Level { price, amount })
    }

    /// The two layouts exchanges send, compact `["price","amount"]` and spaced
    /// `["price", "amount"]`, read with direct byte checks. `None` (position
    /// unchanged) sends anything else, including every error, through the general path,
    /// which reports it precisely.
    #[inline(always)]
    fn compact_level(&mut self) -> Option<Level> {
        let start = self.pos;
        let rest = self.bytes.get(start..)?;
        // With AVX2, levels with room to read ahead (all but the frame's last few) take
        // the vector reader; what it does not read falls to the scalar one below.
        #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
        if let Some((level, len, pattern)) = rest.first_chunk().and_then(simd_level::compact_level)
        {
            if let Some(pattern) = pattern {
                self.adopt(pattern);
            }
            self.pos = start + len;
            return Some(level);
        }
        if !rest.starts_with(b"[\"") {
            return None;
        }
        let (price, price_len) = FixedPoint::parse_quoted_fast(&rest[2..])?;
        let separator = rest.get(2 + price_len..)?;
        let amount_start = 2
            + price_len
            + if separator.starts_with(b"\",\"") {
                3
            } else if separator.starts_with(b"\", \"") {
                4
            } else {
                return None;
            };
        let (amount, amount_len) = FixedPoint::parse_quoted_fast(rest.get(amount_start..)?)?;
        let end = amount_start + amount_len;
        if rest.get(end..end + 2)? != b"\"]" {
            return None;
        }
        self.pos = start + end + 2;
        Some(Level { price, amount })
    }

    /// Skips the remaining elements of a side array and its closing `]`, positioned after
    /// the `,` that follows a kept level (so at least one element remains).
    ///
    /// Fast path (why it is here: a Bitstamp frame carries 100 levels a side, and most
    /// users keep 10): the end of a side of `[price, amount]` levels is the first `]]`.
    /// [`rest_of_side_len`] finds it and checks that the bytes before it can only be
    /// levels (one AVX2 pass, or memmem and then a vectorised check without AVX2):
    /// brackets balance to exactly that `]]`, quotes pair up and nothing is escaped (so the
    /// `]]` is not inside a string), and there is no `:` (which would mean the side closed
    /// earlier and a key followed).
    /// Anything else — a side whose last level and closing bracket are not adjacent
    /// (`] ]`), a `]]` inside a nested value or a string — takes the exact path,
    /// [`Walker::skip_elements`]. Skipped levels are checked for bracket structure only:
    /// they are not parsed, and a malformation confined to them does not change the kept
    /// levels.
    fn skip_rest_of_array(&mut self) -> Result<()> {
        match rest_of_side_len(&self.bytes[self.pos..]) {
            Some(len) => {
                self.pos += len;
                Ok(())
            }
            None => self.skip_elements(),
        }
    }

    /// The exact side skip: element by element up to and including the array's `]`,
    /// positioned before an element.
    fn skip_elements(&mut self) -> Result<()> {
        loop {
            self.skip_value()?;
            if !self.next_or_close(b']', "',' or ']' after a level")? {
                return Ok(());
            }
        }
    }
}

/// The fast side skip (see [`Walker::skip_rest_of_array`]): the length of `rest` up to and
/// including its first `]]`, if the bytes before it can only be the rest of a side. One
/// pass with AVX2, two without.
#[inline]
fn rest_of_side_len(rest: &[u8]) -> Option<usize> {
    #[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
    return simd_side_skip::rest_of_side_len(rest);
    #[cfg(not(all(target_arch = "x86_64", target_feature = "avx2")))]
    return portable_rest_of_side_len(rest);
}

/// The fast side skip in two passes: memmem finds the `]]`, [`is_rest_of_side`] checks the
/// bytes before it. Without AVX2 it is the skip; with it, the reference its tests compare
/// the one-pass skip with.
#[cfg_attr(
    all(target_arch = "x86_64", target_feature = "avx2", not(test)),
    expect(dead_code)
)]
fn portable_rest_of_side_len(rest: &[u8]) -> Option<usize> {
    static SIDE_END: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new(b"]]"));
    let len = SIDE_END.find(rest)? + 2;
    is_rest_of_side(&rest[..len]).then_some(len)
}

/// The check behind the two-pass side skip: brackets balance to one more close than opens,
/// quotes pair up, no `:` or `\\`. Counts in 32 byte lanes, which the compiler keeps in one
/// vector register each (a compare and an add per counter per 32 bytes) and reduces once
/// per 127 steps (before an `i8` lane can overflow) with word arithmetic. Written by hand
/// because the skip is the widest loop of the hot path (a Bitstamp frame skips about
/// 4.9 KB; `scripts/bench-instructions` counts it in `bitstamp_decode_100`).
fn is_rest_of_side(region: &[u8]) -> bool {
    let mut balance = 0i32; // '[' minus ']'
    let mut lane_quotes = [0u8; LANES]; // parity of '"'
    let mut lane_forbidden = [0u8; LANES]; // ':' or '\\' seen
    let (steps, tail) = region.as_chunks::<LANES>();
    for block in steps.chunks(i8::MAX as usize) {
        let mut lane_balance = [0i8; LANES];
        for step in block {
            for lane in 0..LANES {
                let byte = step[lane];
                lane_balance[lane] = lane_balance[lane]
                    .wrapping_add(i8::from(byte == b'['))
                    .wrapping_sub(i8::from(byte == b']'));
                lane_quotes[lane] ^= u8::from(byte == b'"');
                lane_forbidden[lane] |= u8::from(byte == b':') | u8::from(byte == b'\\');
            }
        }
        balance += lane_sum(&lane_balance);
    }
    let mut quotes = lane_words(&lane_quotes)
        .iter()
        .fold(0, |parity, word| parity ^ word);
    let mut forbidden = lane_words(&lane_forbidden).iter().any(|&word| word != 0);
    for &byte in tail {
        balance += i32::from(byte == b'[') - i32::from(byte == b']');
        quotes ^= u64::from(byte == b'"');
        forbidden |= byte == b':' || byte == b'\\';
    }
    balance == -1 && quotes.count_ones() % 2 == 0 && !forbidden
}

/// Byte lanes of the side skip: one AVX2 register.
const LANES: usize = 32;

/// The lanes as four little-endian words (lane 0 lowest).
#[inline(always)]
fn lane_words(lanes: &[u8; LANES]) -> [u64; 4] {
    std::array::from_fn(|word| {
        u64::from_le_bytes(*lanes[8 * word..].first_chunk().expect("8 of 32 lanes"))
    })
}

/// The sum of the signed lanes: biased to unsigned, widened in pairs to 16 bits, summed.
#[inline(always)]
fn lane_sum(lanes: &[i8; LANES]) -> i32 {
    const LOW_BYTES: u64 = 0x00FF_00FF_00FF_00FF;
    let biased = lanes.map(|lane| (lane as u8) ^ 0x80); // lane + 128
    let total: u64 = lane_words(&biased)
        .iter()
        .map(|&word| {
            let pairs = (word & LOW_BYTES) + ((word >> 8) & LOW_BYTES); // 4 × ≤ 510
            pairs.wrapping_mul(0x0001_0001_0001_0001) >> 48
        })
        .sum();
    total as i32 - 128 * LANES as i32
}

#[cfg(test)]
mod tests;
