//! Binance SBE's frames decoded into books and typed errors ([`Decode`]).

use super::*;
use crate::venue::NAMED_KEY_BYTES;
use crate::fixed::UnitSize;

impl Decode for BinanceSbe {
    /// A text frame: a subscription's answer or `serverShutdown`. Books come in binary.
    fn decode<'a>(
        frame: &'a [u8],
        depth: usize,
        out: &mut TopBook,
    ) -> Result<Message<'a>, DecodeError> {
        match Binance::decode(frame, depth, out)? {
            Message::Book { .. } => Err(JSON_BOOK),
            message => Ok(message),
        }
    }

    fn decode_diff<'a>(
        frame: &'a [u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<Message<'a>, DecodeError> {
        match Binance::decode_diff(frame, max_levels, out)? {
            Message::Book { .. } => Err(JSON_BOOK),
            message => Ok(message),
        }
    }

    #[inline]
    fn decode_binary<'a>(
        frame: &'a [u8],
        depth: usize,
        out: &mut TopBook,
    ) -> Result<Message<'a>, DecodeError> {
        Ok(match decode_depth_snapshot(frame, depth, out)? {
            Decoded::Book { symbol } => Message::Book { stream: symbol },
            Decoded::Other { .. } => Message::Ignored,
        })
    }

    #[inline]
    fn decode_diff_binary<'a>(
        frame: &'a [u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<Message<'a>, DecodeError> {
        match decode_depth_diff(frame, max_levels, out)? {
            Decoded::Book { .. } if out.first_id > out.last_id => Err(DecodeError::Invalid(
                "depthUpdate with U greater than u",
            )),
            Decoded::Book { symbol } => Ok(Message::Book { stream: symbol }),
            Decoded::Other { .. } => Ok(Message::Ignored),
        }
    }

    /// A book message names its symbol (`BTCUSDT`); the stream is `btcusdt@depth20` or
    /// `btcusdt@depth`, and a connection carries one of the two for a symbol: the key is
    /// the symbol, in upper case.
    fn stream_key(stream: &str) -> Box<[u8]> {
        let symbol = stream.split_once('@').map_or("", |(symbol, _)| symbol);
        Box::from(symbol.to_ascii_uppercase().as_bytes())
    }

    #[inline]
    fn named_key<'a>(named: &'a [u8], buffer: &'a mut [u8; NAMED_KEY_BYTES]) -> &'a [u8] {
        // A symbol's length is a byte (`read_symbol`): it always fits.
        let Some(key) = buffer.get_mut(..named.len()) else {
            return named;
        };
        key.copy_from_slice(named);
        key.make_ascii_uppercase();
        key
    }

    fn decode_snapshot(
        body: &[u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<(), DecodeError> {
        Binance::decode_snapshot(body, max_levels, out)
    }
}

/// A JSON book on the SBE connection, where books come in binary.
pub(super) const JSON_BOOK: DecodeError = DecodeError::UnknownMessage("a JSON book on the SBE stream");

/// A level entry as the schema has it today: price and quantity mantissas.
pub(super) const ENTRY_LEN: usize = 16;

/// The fixed blocks as the schema has them today (later versions may append fields).
pub(super) const SNAPSHOT_BLOCK_LEN: usize = 18;
pub(super) const DIFF_BLOCK_LEN: usize = 26;

/// A message's header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    pub block_length: u16,
    pub template_id: u16,
    pub schema_id: u16,
    pub version: u16,
}

/// What one binary frame held.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decoded<'a> {
    /// A book message of `symbol` (the output holds it).
    Book { symbol: &'a [u8] },
    /// A message of a template this decoder does not read (trades, best bid and ask, one
    /// the schema adds): to be counted and ignored.
    Other { template_id: u16 },
}

/// A cursor over one binary frame: each read checks the bytes are there.
pub(super) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take<const N: usize>(&mut self) -> Result<[u8; N], DecodeError> {
        let bytes = self
            .bytes
            .get(self.at..self.at + N)
            .ok_or(DecodeError::Truncated)?;
        self.at += N;
        Ok(bytes.try_into().expect("N bytes"))
    }

    fn i8(&mut self) -> Result<i8, DecodeError> {
        Ok(i8::from_le_bytes(self.take()?))
    }

    fn u16(&mut self) -> Result<u16, DecodeError> {
        Ok(u16::from_le_bytes(self.take()?))
    }

    fn i64(&mut self) -> Result<i64, DecodeError> {
        Ok(i64::from_le_bytes(self.take()?))
    }

    fn header(&mut self) -> Result<Header, DecodeError> {
        Ok(Header {
            block_length: self.u16()?,
            template_id: self.u16()?,
            schema_id: self.u16()?,
            version: self.u16()?,
        })
    }
}

/// An id the schema writes as `i64`, as the books keep ids: negative ones are refused.
pub(super) fn id(value: i64, at: usize) -> Result<u64, DecodeError> {
    u64::try_from(value).map_err(|_| DecodeError::IntegerOverflow { at })
}

/// A message's `eventTime` (µs since the Unix epoch) as ns.
pub(super) fn event_time_ns(micros: i64) -> Result<u64, DecodeError> {
    timestamps::nanos_from_micros(id(micros, HEADER_LEN)?)
}

/// How a message's mantissas of one field become `FixedPoint` units (10^-8): `mantissa ×
/// 10^exponent` exactly, worked out once a message from its exponent. Values that would need
/// more than 8 decimals, or are negative, or too large, are errors, never rounded.
#[derive(Clone, Copy)]
pub(super) enum Scale {
    /// Times this power of ten (exponents from -8 up: Binance's usual ones).
    Multiply(u64),
    /// Divided by this power of ten, exactly (exponents below -8).
    Divide(u64),
    /// An exponent so small that only zero is exact.
    OnlyZero,
    /// An exponent so large that only zero fits.
    OnlyZeroFits,
}

impl Scale {
    fn of(exponent: i32) -> Scale {
        // The power of ten that takes the mantissa to 10^-8 units.
        let shift = exponent + DECIMALS as i32;
        let power = POWERS_OF_TEN.get(shift.unsigned_abs() as usize).copied();
        match (shift >= 0, power) {
            (true, Some(power)) => Scale::Multiply(power),
            (true, None) => Scale::OnlyZeroFits,
            (false, Some(power)) => Scale::Divide(power),
            (false, None) => Scale::OnlyZero,
        }
    }

    /// `mantissa`, non-negative, in 10^-8 units; `at` names its byte in errors.
    #[inline(always)]
    fn apply(self, mantissa: u64, at: usize) -> Result<FixedPoint, DecodeError> {
        let error = |error| DecodeError::Number { at, error };
        let raw = match self {
            Scale::Multiply(power) => mantissa
                .checked_mul(power)
                .ok_or(error(FixedPointError::Overflow))?,
            Scale::Divide(power) if mantissa.is_multiple_of(power) => mantissa / power,
            Scale::OnlyZero | Scale::OnlyZeroFits if mantissa == 0 => 0,
            Scale::OnlyZeroFits => return Err(error(FixedPointError::Overflow)),
            _ => return Err(error(FixedPointError::TooPrecise)),
        };
        Ok(FixedPoint::from_raw(raw))
    }
}

/// 10^0 to 10^19, every power of ten a `u64` holds.
pub(super) const POWERS_OF_TEN: [u64; 20] = {
    let mut powers = [1u64; 20];
    let mut index = 1;
    while index < powers.len() {
        powers[index] = powers[index - 1] * 10;
        index += 1;
    }
    powers
};

/// `mantissa × 10^exponent` as a `FixedPoint`, exactly.
#[cfg(test)]
pub(super) fn scaled(mantissa: i64, exponent: i8, at: usize) -> Result<FixedPoint, DecodeError> {
    let mantissa = u64::try_from(mantissa).map_err(|_| DecodeError::Number {
        at,
        error: FixedPointError::Negative,
    })?;
    Scale::of(i32::from(exponent)).apply(mantissa, at)
}

/// The scales of a book message's prices and quantities.
#[derive(Clone, Copy)]
pub(super) struct Scales {
    price: Scale,
    quantity: Scale,
}

impl Scales {
    /// The scales of a message's price and quantity exponents, in the unit of the
    /// instrument decoded (`UnitSize`): its prices 10^k times the wire's, its quantities
    /// 10^-k times.
    fn of(price_exponent: i8, quantity_exponent: i8) -> Scales {
        let unit = i32::from(UnitSize::of_decoding().exponent());
        Scales {
            price: Scale::of(i32::from(price_exponent) + unit),
            quantity: Scale::of(i32::from(quantity_exponent) - unit),
        }
    }

    /// The level of `entry`'s mantissas, which start at byte `at` of the frame.
    #[inline(always)]
    fn level(self, (price, quantity): (i64, i64), at: usize) -> Result<Level, DecodeError> {
        if (price | quantity) < 0 {
            let at = if price < 0 { at } else { at + 8 };
            let error = FixedPointError::Negative;
            return Err(DecodeError::Number { at, error });
        }
        Ok(Level {
            price: self.price.apply(price as u64, at)?,
            amount: self.quantity.apply(quantity as u64, at + 8)?,
        })
    }
}

/// One group of levels, its bounds checked as a whole: `count` entries of `entry_len`
/// bytes from byte `at` of the frame, each a price and a quantity mantissa, then what a
/// later schema appends.
pub(super) struct Group<'a> {
    entries: &'a [u8],
    entry_len: usize,
    at: usize,
}

impl<'a> Group<'a> {
    /// The group whose header is at byte `at` of `frame`, and where the frame goes on after it.
    #[inline]
    fn at(frame: &'a [u8], at: usize) -> Result<(Group<'a>, usize), DecodeError> {
        let header = frame.get(at..at + 4).ok_or(DecodeError::Truncated)?;
        let entry_len = usize::from(u16::from_le_bytes([header[0], header[1]]));
        let count = usize::from(u16::from_le_bytes([header[2], header[3]]));
        if entry_len < ENTRY_LEN {
            return Err(DecodeError::Invalid(
                "a level entry shorter than a price and a quantity",
            ));
        }
        let start = at + 4;
        // At most 65,535 × 65,535 bytes: no overflow.
        let end = start + count * entry_len;
        let entries = frame.get(start..end).ok_or(DecodeError::Truncated)?;
        let group = Group {
            entries,
            entry_len,
            at: start,
        };
        Ok((group, end))
    }

    /// The entries, where each is today's two mantissas and nothing more (the usual case,
    /// which the snapshot decoder reads by a faster loop).
    #[inline]
    fn packed(&self) -> Option<&'a [[u8; ENTRY_LEN]]> {
        match self.entries.as_chunks::<ENTRY_LEN>() {
            (entries, []) if self.entry_len == ENTRY_LEN => Some(entries),
            _ => None,
        }
    }

    /// Each entry's mantissas (price, quantity) in wire order, with the byte it starts at.
    #[inline]
    fn mantissas(&self) -> impl Iterator<Item = ((i64, i64), usize)> + use<'a> {
        let (entry_len, start) = (self.entry_len, self.at);
        self.entries
            .chunks_exact(entry_len)
            .enumerate()
            .map(move |(index, entry)| {
                // `Group::at` checked every entry holds at least the two.
                let price = entry.first_chunk::<8>().copied().unwrap_or_default();
                let quantity = entry[8..].first_chunk::<8>().copied().unwrap_or_default();
                let mantissas = (i64::from_le_bytes(price), i64::from_le_bytes(quantity));
                (mantissas, start + index * entry_len)
            })
    }
}

/// The symbol that ends a book message, which must end the frame. Its bytes are not
/// checked: a symbol names a book only where it is the symbol of a subscribed stream
/// (`Decode::named_key`), and the book of any other is dropped as not asked for.
pub(super) fn read_symbol(frame: &[u8], at: usize) -> Result<&[u8], DecodeError> {
    let len = usize::from(*frame.get(at).ok_or(DecodeError::Truncated)?);
    let symbol = frame
        .get(at + 1..at + 1 + len)
        .ok_or(DecodeError::Truncated)?;
    if at + 1 + len != frame.len() {
        return Err(DecodeError::TrailingBytes { at: at + 1 + len });
    }
    if symbol.is_empty() {
        return Err(DecodeError::Invalid("an empty symbol"));
    }
    Ok(symbol)
}

/// A book message's header, checked: this schema, a block at least as long as `fixed`.
/// `None` for another template of the schema.
#[inline]
pub(super) fn book_header(
    frame: &[u8],
    template_id: u16,
    fixed: usize,
) -> Result<Result<Header, u16>, DecodeError> {
    let header = Reader {
        bytes: frame,
        at: 0,
    }
    .header()?;
    if header.schema_id != SCHEMA_ID {
        return Err(DecodeError::UnknownMessage("SBE schema"));
    }
    if header.template_id != template_id {
        return Ok(Err(header.template_id));
    }
    if usize::from(header.block_length) < fixed {
        return Err(DecodeError::Invalid(
            "a block shorter than its template's fields",
        ));
    }
    Ok(Ok(header))
}

/// The size of a message header.
pub(super) const HEADER_LEN: usize = 8;

/// A `depth20` message into `out`: its best `depth` levels a side (strictly sorted best
/// first, zero quantities left out, as the JSON stream's decoder keeps them), its
/// `bookUpdateId` as the book's sequence. The entries after the `depth`th kept one are
/// bounds-checked with their group, not read, as the JSON decoder skips the levels it does
/// not keep.
pub fn decode_depth_snapshot<'a>(
    frame: &'a [u8],
    depth: usize,
    out: &mut TopBook,
) -> Result<Decoded<'a>, DecodeError> {
    let header = match book_header(frame, DEPTH_SNAPSHOT, SNAPSHOT_BLOCK_LEN)? {
        Ok(header) => header,
        Err(template_id) => return Ok(Decoded::Other { template_id }),
    };
    let mut reader = Reader {
        bytes: frame,
        at: HEADER_LEN,
    };
    out.exchange_time_ns = event_time_ns(reader.i64()?)?;
    out.venue_sequence = id(reader.i64()?, HEADER_LEN + 8)?;
    let scales = Scales::of(reader.i8()?, reader.i8()?);
    let mut at = HEADER_LEN + usize::from(header.block_length);
    out.bids.clear();
    out.asks.clear();
    for (side, levels) in [(Side::Bid, &mut out.bids), (Side::Ask, &mut out.asks)] {
        let (group, end) = Group::at(frame, at)?;
        keep_best(side, &group, scales, depth, levels)?;
        at = end;
    }
    Ok(Decoded::Book {
        symbol: read_symbol(frame, at)?,
    })
}

/// A snapshot's side: each entry strictly after the one before, the best `depth` with a
/// quantity kept.
#[inline]
pub(super) fn keep_best(
    side: Side,
    group: &Group<'_>,
    scales: Scales,
    depth: usize,
    levels: &mut Levels,
) -> Result<(), DecodeError> {
    if let (Some(entries), Scale::Multiply(price), Scale::Multiply(quantity)) =
        (group.packed(), scales.price, scales.quantity)
        && keep_best_packed(side, entries, (price, quantity), depth, levels)
    {
        return Ok(());
    }
    // Any other message, and one the fast loop refused: this loop names the error.
    levels.clear();
    // Mantissas of one exponent rank as their values do: compared before scaling.
    let rank = |price: i64| side.rank(FixedPoint::from_raw(price as u64));
    let mut previous = None;
    for (mantissas, at) in group.mantissas() {
        if levels.len() >= depth {
            break;
        }
        let level = scales.level(mantissas, at)?;
        let this = rank(mantissas.0);
        if previous.is_some_and(|previous| previous >= this) {
            return Err(DecodeError::Unsorted(side));
        }
        previous = Some(this);
        if !level.amount.is_zero() {
            levels.push(level);
        }
    }
    Ok(())
}

/// `keep_best` for the message Binance sends: entries of today's two mantissas, exponents
/// from -8 up (`powers`: what the price and the quantity mantissas are multiplied by), no
/// empty level among the first `depth`. The binary feed's whole cost is this loop, so it
/// has no branch but its count, known before it starts: a price out of order and an empty
/// quantity are gathered into one flag, the mantissas into a bitwise OR (at least the
/// largest, with the sign bit of any negative one) checked once against what the products
/// allow, and the length is stored once. False if a check failed: `keep_best`'s general
/// loop then reads the side (it skips empty levels, names an error, and takes a large
/// mantissa the OR overstated).
#[inline]
pub(super) fn keep_best_packed(
    side: Side,
    entries: &[[u8; ENTRY_LEN]],
    (price_power, quantity_power): (u64, u64),
    depth: usize,
    levels: &mut Levels,
) -> bool {
    let mantissas = |entry: &[u8; ENTRY_LEN]| {
        let price = u64::from_le_bytes(entry[..8].try_into().unwrap_or_default());
        let quantity = u64::from_le_bytes(entry[8..].try_into().unwrap_or_default());
        (price, quantity)
    };
    // Mantissas of one exponent rank as their values do: compared before scaling.
    let invert = side.rank(FixedPoint::from_raw(0));
    let (mut faulty, mut prices, mut quantities) = (false, 0u64, 0u64);
    let mut kept = |slot: &mut Level, (price, quantity): (u64, u64)| {
        faulty |= quantity == 0;
        (prices, quantities) = (prices | price, quantities | quantity);
        *slot = Level {
            price: FixedPoint::from_raw(price.wrapping_mul(price_power)),
            amount: FixedPoint::from_raw(quantity.wrapping_mul(quantity_power)),
        };
    };
    let mut unsorted = false;
    levels.fill_slots(depth, |slots| {
        let count = slots.len().min(entries.len());
        let (slots, entries) = (&mut slots[..count], &entries[..count]);
        // The first entry, then each after it against the one before.
        let (Some((first_slot, slots)), Some((first, entries))) =
            (slots.split_first_mut(), entries.split_first())
        else {
            return 0;
        };
        let first = mantissas(first);
        let mut previous = first.0 ^ invert;
        kept(first_slot, first);
        for (slot, entry) in slots.iter_mut().zip(entries) {
            let entry = mantissas(entry);
            let rank = entry.0 ^ invert;
            unsorted |= rank <= previous;
            previous = rank;
            kept(slot, entry);
        }
        count
    });
    // Non-negative, and every product fits: the OR is at least every mantissa.
    let fits = |bits: u64, power: u64| bits.checked_mul(power).is_some_and(|p| p <= i64::MAX as u64);
    !faulty && !unsorted && fits(prices, price_power) && fits(quantities, quantity_power)
}

/// A `depth` (diff) message into `out`: its update ids and every level (zero quantities
/// delete), at most `max_levels` a side.
pub fn decode_depth_diff<'a>(
    frame: &'a [u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<Decoded<'a>, DecodeError> {
    let header = match book_header(frame, DEPTH_DIFF, DIFF_BLOCK_LEN)? {
        Ok(header) => header,
        Err(template_id) => return Ok(Decoded::Other { template_id }),
    };
    out.clear();
    let mut reader = Reader {
        bytes: frame,
        at: HEADER_LEN,
    };
    out.exchange_time_ns = event_time_ns(reader.i64()?)?;
    out.first_id = id(reader.i64()?, HEADER_LEN + 8)?;
    out.last_id = id(reader.i64()?, HEADER_LEN + 16)?;
    let scales = Scales::of(reader.i8()?, reader.i8()?);
    let mut at = HEADER_LEN + usize::from(header.block_length);
    for levels in [&mut out.bids, &mut out.asks] {
        let (group, end) = Group::at(frame, at)?;
        for (mantissas, at) in group.mantissas() {
            if levels.len() == max_levels {
                return Err(DecodeError::TooManyLevels(max_levels));
            }
            levels.push(scales.level(mantissas, at)?);
        }
        at = end;
    }
    Ok(Decoded::Book {
        symbol: read_symbol(frame, at)?,
    })
}
