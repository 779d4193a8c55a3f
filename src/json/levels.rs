//! The sides of a book: arrays of levels in each venue's layout, read into `Levels` or a
//! `Vec<Level>` with their order checked, the excess skipped. Levels of a shape seen
//! before go to the vector reader first (`simd/`), the rest to the scalar paths here.

use super::{DecodeError, Result, Walker, compact_number, is_number_byte, side_skip, simd};
use crate::book::{Level, Levels, MAX_DEPTH, Side, WireDecimals};
use crate::fixed::{FixedPoint, Measure};

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

/// The rest of a member `<key>":<digits>` after its opening quote, at `bytes[*at..]`: a
/// short key of letters, digits or `_` that is neither `price_key` nor `amount_key` (a
/// duplicate, which the object walk reports), and a JSON unsigned integer. `*at` moves
/// past it; `None` for anything else.
#[inline(always)]
fn skip_integer_member(
    bytes: &[u8],
    at: &mut usize,
    price_key: &str,
    amount_key: &str,
) -> Option<()> {
    const MAX_KEY: usize = 16;
    let rest = bytes.get(*at..)?;
    let key_len = rest
        .iter()
        .take(MAX_KEY + 1)
        .position(|&byte| byte == b'"')?;
    let key = &rest[..key_len];
    let plain = |byte: &u8| byte.is_ascii_alphanumeric() || *byte == b'_';
    (key.iter().all(plain) && !is_key(key, price_key) && !is_key(key, amount_key)).then_some(())?;
    let digits = rest.get(key_len + 2..)?;
    (rest.get(key_len + 1) == Some(&b':')).then_some(())?;
    let count = digits
        .iter()
        .take_while(|byte| byte.is_ascii_digit())
        .count();
    // JSON writes no leading zero; a number with a fraction or exponent is the walk's.
    let valid = count > 0 && (count == 1 || digits[0] != b'0');
    (valid && !digits.get(count).is_some_and(|&byte| is_number_byte(byte))).then_some(())?;
    *at += key_len + 2 + count;
    Some(())
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

/// A level's price and amount as written, quotes and all.
type NumberTexts<'a> = (&'a [u8], &'a [u8]);

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

impl<'a> Walker<'a> {
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

    /// The levels from here on that have a kept pattern's shape (`simd::KeptPatterns`),
    /// checked and kept as [`Walker::levels`] does, up to `depth` kept; whether there was one.
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
    #[inline(always)]
    fn kept_pattern_levels(
        &mut self,
        wanted: usize,
        mut keep: impl FnMut(Level) -> Result<bool>,
    ) -> Result<bool> {
        /// Level starts looked for at once: a depth of 20 and the start after it.
        const STARTS: usize = 21;
        if !self.in_coins() {
            return Ok(false);
        }
        let mut starts = [0u32; STARTS + simd::STARTS_SLACK];
        let wanted = wanted.min(STARTS);
        let found = simd::level_starts(self.bytes, self.pos, wanted, &mut starts);
        if found < 2 || starts[0] as usize != self.pos {
            return Ok(false);
        }
        simd::KeptPatterns::with(|kept| {
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
        self.expect(b'[', "'[' opening a side")?;
        if self.peek()? == b']' {
            self.pos += 1;
            return Ok(());
        }
        loop {
            if out.len() == depth {
                return match shape {
                    LevelShape::Object { .. } => self.skip_rest_of_object_side(),
                    _ => self.skip_elements(),
                };
            }
            let level = self.shaped_level(shape, None)?;
            keep_in_order(side, level, out, &mut previous_rank)?;
            if !self.next_or_close(b']', "',' or ']' after a level")? {
                return Ok(());
            }
        }
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

    /// [`Walker::best_levels`] for a side of levels of any `shape`: the best `limit` into
    /// `out`, the rest skipped (their JSON checked, their numbers not read).
    pub fn best_shaped_levels(
        &mut self,
        shape: LevelShape,
        side: Side,
        limit: usize,
        out: &mut Vec<Level>,
    ) -> Result<()> {
        out.clear();
        self.elements(|walker| {
            if out.len() == limit {
                return walker.skip_value();
            }
            let level = walker.shaped_level(shape, None)?;
            if let Some(previous) = out.last()
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
    fn counted_number(
        &mut self,
        measure: Measure,
        most_digits: Option<&mut u8>,
    ) -> Result<FixedPoint> {
        self.skip_whitespace();
        let start = self.pos;
        let value = self.number(measure)?;
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
        if !self.in_coins() {
            return None;
        }
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
    pub(super) fn shaped_level(
        &mut self,
        shape: LevelShape,
        decimals: Option<&mut WireDecimals>,
    ) -> Result<Level> {
        let (price_digits, amount_digits) = match decimals {
            Some(WireDecimals { price, amount, .. }) => (Some(price), Some(amount)),
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
                let price = self.counted_number(Measure::Price, price_digits)?;
                self.expect(b',', "',' between price and amount")?;
                let amount = self.counted_number(Measure::Amount, amount_digits)?;
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
                if let Some((level, (price_text, amount_text))) =
                    self.compact_object_level(price_key, amount_key)
                {
                    if let Some(most) = price_digits {
                        *most = (*most).max(fraction_digits(price_text));
                    }
                    if let Some(most) = amount_digits {
                        *most = (*most).max(fraction_digits(amount_text));
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
                        price = Some(walker.counted_number(Measure::Price, price_digits.take())?);
                    } else if is_key(key, amount_key) {
                        if amount.is_some() {
                            return Err(DecodeError::DuplicateKey(amount_key));
                        }
                        amount =
                            Some(walker.counted_number(Measure::Amount, amount_digits.take())?);
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
    /// read by direct byte checks; with each number's text as written. One
    /// member of an unsigned integer may come first and one last (an order count:
    /// Hyperliquid's `"n":5`), skipped as the object walk skips it. `None` (position
    /// unchanged) for any other layout or any error, which the object walk then reads or
    /// reports: it costs several times as much per level.
    #[inline(always)]
    pub(super) fn compact_object_level(
        &mut self,
        price_key: &str,
        amount_key: &str,
    ) -> Option<(Level, NumberTexts<'a>)> {
        if !self.in_coins() {
            return None;
        }
        let bytes = self.bytes;
        let mut at = self.pos;
        skip_literals(bytes, &mut at, &[b"{\""])?;
        let mut price_at = at;
        if skip_literals(bytes, &mut price_at, &[price_key.as_bytes(), b"\":"]).is_none() {
            skip_integer_member(bytes, &mut at, price_key, amount_key)?;
            price_at = at;
            skip_literals(
                bytes,
                &mut price_at,
                &[b",\"", price_key.as_bytes(), b"\":"],
            )?;
        }
        at = price_at;
        let (price, price_text) = compact_number(bytes, &mut at)?;
        skip_literals(bytes, &mut at, &[b",\"", amount_key.as_bytes(), b"\":"])?;
        let (amount, amount_text) = compact_number(bytes, &mut at)?;
        if skip_literals(bytes, &mut at, &[b",\""]).is_some() {
            skip_integer_member(bytes, &mut at, price_key, amount_key)?;
        }
        (bytes.get(at) == Some(&b'}')).then_some(())?;
        self.pos = at + 1;
        Some((Level { price, amount }, (price_text, amount_text)))
    }

    /// One change of `shape`: its side and level.
    pub fn tagged_level(
        &mut self,
        shape: TaggedShape,
        decimals: Option<&mut WireDecimals>,
    ) -> Result<(Side, Level)> {
        let (mut price_digits, mut amount_digits) = match decimals {
            Some(WireDecimals { price, amount, .. }) => (Some(price), Some(amount)),
            None => (None, None),
        };
        match shape {
            TaggedShape::Array => {
                self.expect(b'[', "'[' opening a change")?;
                let side = side_named(self.string()?)?;
                self.expect(b',', "',' after the side")?;
                let price = self.counted_number(Measure::Price, price_digits)?;
                self.expect(b',', "',' between price and amount")?;
                let amount = self.counted_number(Measure::Amount, amount_digits)?;
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
                        price = Some(walker.counted_number(Measure::Price, price_digits.take())?);
                    } else if is_key(key, amount_key) {
                        if amount.is_some() {
                            return duplicate(amount_key);
                        }
                        amount =
                            Some(walker.counted_number(Measure::Amount, amount_digits.take())?);
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
        if self.in_coins()
            && let Some(window) = self.bytes.get(self.pos..).and_then(<[u8]>::first_chunk)
        {
            match self.last_level.read(window) {
                simd::PatternRead::Same(level) => {
                    self.pos += self.last_level.len;
                    return Ok((level, true));
                }
                // A pattern comes with the `,` after the level: another follows.
                simd::PatternRead::NewAmount(level, _, Some(pattern)) => {
                    self.pos += pattern.len;
                    self.adopt(pattern);
                    return Ok((level, true));
                }
                simd::PatternRead::NewAmount(level, len, None) => {
                    self.pos += len;
                    return Ok((level, self.after_level()?));
                }
                simd::PatternRead::Other => {}
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
    #[inline(always)]
    fn adopt(&mut self, pattern: simd::LevelPattern) {
        simd::KeptPatterns::remember(&pattern);
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
    pub(super) fn any_level(&mut self) -> Result<Level> {
        self.expect(b'[', "'[' opening a level")?;
        let price = self.price()?;
        self.expect(b',', "',' between price and amount")?;
        let amount = self.amount()?;
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
        if !self.in_coins() {
            return None;
        }
        let start = self.pos;
        let rest = self.bytes.get(start..)?;
        // With AVX2, levels with room to read ahead (all but the frame's last few) take
        // the vector reader; what it does not read falls to the scalar one below.
        if let Some((level, len, pattern)) = rest.first_chunk().and_then(simd::compact_level) {
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
    /// [`simd::rest_of_side_len`] finds it and checks that the bytes before it can only be
    /// levels (one AVX2 pass, or memmem and then a vectorised check without AVX2):
    /// brackets balance to exactly that `]]`, quotes pair up and nothing is escaped (so the
    /// `]]` is not inside a string), and there is no `:` (which would mean the side closed
    /// earlier and a key followed).
    /// Anything else — a side whose last level and closing bracket are not adjacent
    /// (`] ]`), a `]]` inside a nested value or a string — takes the exact path,
    /// [`Walker::skip_elements`]. Skipped levels are checked for bracket structure only:
    /// they are not parsed, and a malformation confined to them does not change the kept
    /// levels.
    pub(super) fn skip_rest_of_array(&mut self) -> Result<()> {
        self.skip_to_side_end(simd::rest_of_side_len(&self.bytes[self.pos..]))
    }

    /// Skips the remaining levels of a side of objects and its closing `]`, positioned
    /// before a level: the fast path of [`Walker::skip_rest_of_array`] for objects
    /// (Hyperliquid sends 20 a side, most users keep 10). The side ends at the first `]`
    /// if the bytes before it can only be flat objects
    /// ([`side_skip::rest_of_object_side_len`]); anything else takes the exact path. As
    /// there, skipped levels are checked for structure only.
    pub(super) fn skip_rest_of_object_side(&mut self) -> Result<()> {
        self.skip_to_side_end(side_skip::rest_of_object_side_len(&self.bytes[self.pos..]))
    }

    /// Past the side's end, `len` bytes on, where a fast skip found it; else the exact
    /// skip.
    #[inline(always)]
    fn skip_to_side_end(&mut self, len: Option<usize>) -> Result<()> {
        match len {
            Some(len) => {
                self.pos += len;
                Ok(())
            }
            None => self.skip_elements(),
        }
    }

    /// The exact side skip: element by element up to and including the array's `]`,
    /// positioned before an element.
    pub(super) fn skip_elements(&mut self) -> Result<()> {
        loop {
            self.skip_value()?;
            if !self.next_or_close(b']', "',' or ']' after a level")? {
                return Ok(());
            }
        }
    }
}
