//! Binance's binary market data: Simple Binary Encoding, schema `stream_1_0.xml`
//! (<https://github.com/binance/binance-spot-api-docs/tree/master/sbe/schemas>;
//! `../shared/fixtures/PROTOCOLS.md`, Binance, "SBE"). No SBE frame is recorded in the
//! fixtures: the frames here and in `tests/binance_sbe.rs` are built from the schema, and
//! the simulator's are checked against its JSON stream of the same book.
//!
//! Every message is little-endian and starts with an 8-byte header: `blockLength u16`,
//! `templateId u16`, `schemaId u16`, `version u16`. The two book templates:
//!
//! ```text
//! 10002 DepthSnapshotStreamEvent (<sym>@depth20)   10003 DepthDiffStreamEvent (<sym>@depth)
//!   eventTime         i64 (µs)                       eventTime          i64 (µs)
//!   bookUpdateId      i64                            firstBookUpdateId  i64
//!   priceExponent     i8                             lastBookUpdateId   i64
//!   qtyExponent       i8                             priceExponent      i8
//!                                                    qtyExponent        i8
//!   group bids, group asks: blockLength u16, numInGroup u16, then per entry
//!                           price i64, qty i64 (mantissas)
//!   symbol: length u8, then its UTF-8 bytes
//! ```
//!
//! The header's `blockLength` says where the groups start and each group's where its next
//! entry does: fields the schema appends later are skipped, never misread. A value is
//! `mantissa × 10^exponent`, into `FixedPoint` exactly: one that needs more than 8
//! fractional digits, or is negative, or too large, is an error, never rounded.

use super::binance::{Binance, UpdateIdRanges};
use super::{Answer, Checksum, Decode, Message, Simulated, SnapshotSource, Snapshots, StreamKind, Streams, SubscribeRequest, Venue, VenueFacts};
use crate::book::{BookUpdate, Level, Levels, Side, TopBook};
use crate::fixed::{DECIMALS, FixedPoint, FixedPointError};
use crate::walker::DecodeError;

/// Binance's SBE market-data streams: `<symbol>@depth20` (snapshot mode) and
/// `<symbol>@depth` (diff mode, with Binance's REST snapshots and sync rules). Requests,
/// their answers and `serverShutdown` are Binance's JSON text frames; books come in binary
/// frames, which name their symbol. The upgrade request carries the API key of an Ed25519
/// key in `X-MBX-APIKEY`.
pub struct BinanceSbe;

impl Venue for BinanceSbe {
    const FACTS: VenueFacts = VenueFacts {
        name: "binance_sbe",
        exchange: Binance::FACTS.name,
        default_url: "wss://stream-sbe.binance.com:9443/stream",
        default_rest_url: Binance::FACTS.default_rest_url,
        // The JSON streams' limits (PROTOCOLS.md, Binance, "SBE": "1,024 streams each, 300
        // connection attempts per 5 minutes").
        connect_budget: Binance::FACTS.connect_budget,
        max_streams_per_connection: Binance::FACTS.max_streams_per_connection,
        snapshot_streams: true,
        binary_books: true,
        api_key_header: Some("X-MBX-APIKEY"),
        snapshots: SnapshotSource::Rest,
        sequencing: &UpdateIdRanges,
    };
}

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
    /// `btcusdt@depth`, and a connection carries one of the two for a symbol.
    #[inline]
    fn names_stream(stream: &str, named: &[u8]) -> bool {
        let stream = stream.as_bytes();
        stream.len() > named.len()
            && stream[named.len()] == b'@'
            && stream[..named.len()].eq_ignore_ascii_case(named)
    }

    fn decode_snapshot(
        body: &[u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<(), DecodeError> {
        Binance::decode_snapshot(body, max_levels, out)
    }
}

impl Checksum for BinanceSbe {}

impl Streams for BinanceSbe {
    fn spot_symbol(&self, base: &str, quote: &str) -> String {
        Binance.spot_symbol(base, quote)
    }

    /// `depth20` is the one top-of-book stream: the service keeps its best `depth` levels.
    fn stream_name(&self, symbol: &str, _depth: usize) -> String {
        format!("{}@depth20", symbol.to_ascii_lowercase())
    }

    fn subscribe_frames(
        &self,
        streams: &[String],
        kind: StreamKind,
        depth: usize,
        first_id: u64,
    ) -> Vec<SubscribeRequest> {
        Binance.subscribe_frames(streams, kind, depth, first_id)
    }

    fn unsubscribe_frames(&self, streams: &[String], kind: StreamKind, depth: usize) -> Vec<String> {
        Binance.unsubscribe_frames(streams, kind, depth)
    }

    fn diff_stream_name(&self, symbol: &str) -> String {
        format!("{}@depth", symbol.to_ascii_lowercase())
    }

    fn diff_stream_symbol(&self, stream: &str) -> Option<String> {
        let symbol = stream.strip_suffix("@depth")?;
        (!symbol.is_empty()).then(|| symbol.to_ascii_uppercase())
    }
}

impl Snapshots for BinanceSbe {
    fn snapshot_url(&self, rest_base: &str, symbol: &str, limit: usize) -> String {
        Binance.snapshot_url(rest_base, symbol, limit)
    }

    fn snapshot_symbol(&self, url: &str) -> Option<String> {
        Binance.snapshot_symbol(url)
    }

    fn snapshot_weight(&self, limit: usize) -> u32 {
        Binance.snapshot_weight(limit)
    }
}

/// A JSON book on the SBE connection, where books come in binary.
const JSON_BOOK: DecodeError = DecodeError::UnknownMessage("a JSON book on the SBE stream");

/// The simulator's side: Binance's requests and REST snapshots, its books in SBE.
impl Simulated for BinanceSbe {
    fn encode_book(&self, stream: &str, book: &TopBook, _price_decimals: u32, out: &mut Vec<u8>) {
        encode_depth_snapshot(&stream_symbol(stream), book, 0, out);
    }

    fn answer_request(&self, request: &str) -> Option<Answer> {
        Binance.answer_request(request)
    }

    fn reconnect_request(&self) -> Option<&'static str> {
        Binance.reconnect_request()
    }

    fn server_ping_interval(&self) -> Option<std::time::Duration> {
        Binance.server_ping_interval()
    }

    fn levels_on_stream(&self, _stream: &str) -> usize {
        20
    }

    fn encode_diff(
        &self,
        stream: &str,
        update: &BookUpdate,
        _checksum: Option<u32>,
        _price_decimals: u32,
        unix_ms: u64,
        out: &mut Vec<u8>,
    ) {
        let event_time_us = (unix_ms * 1_000) as i64;
        encode_depth_diff(&stream_symbol(stream), update, event_time_us, out);
    }

    /// The REST body, Binance's JSON.
    fn encode_snapshot(
        &self,
        stream: &str,
        snapshot: &BookUpdate,
        on: SnapshotSource,
        checksum: Option<u32>,
        price_decimals: u32,
        out: &mut Vec<u8>,
    ) {
        Binance.encode_snapshot(stream, snapshot, on, checksum, price_decimals, out);
    }

    fn next_event_ids(&self, last_id: u64, changes: u64, now_us: u64) -> (u64, u64) {
        Binance.next_event_ids(last_id, changes, now_us)
    }

    fn initial_event_id(&self, now_us: u64) -> u64 {
        Binance.initial_event_id(now_us)
    }
}

/// `BTCUSDT` of `btcusdt@depth20`.
fn stream_symbol(stream: &str) -> String {
    stream
        .split('@')
        .next()
        .unwrap_or_default()
        .to_ascii_uppercase()
}

/// The schema's id; its messages' ids are its templates'.
pub const SCHEMA_ID: u16 = 1;
/// `DepthSnapshotStreamEvent`, the `<symbol>@depth20` stream's message.
pub const DEPTH_SNAPSHOT: u16 = 10002;
/// `DepthDiffStreamEvent`, the `<symbol>@depth` stream's message.
pub const DEPTH_DIFF: u16 = 10003;

/// A level entry as the schema has it today: price and quantity mantissas.
const ENTRY_LEN: usize = 16;
/// The fixed blocks as the schema has them today (later versions may append fields).
const SNAPSHOT_BLOCK_LEN: usize = 18;
const DIFF_BLOCK_LEN: usize = 26;

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
struct Reader<'a> {
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
fn id(value: i64, at: usize) -> Result<u64, DecodeError> {
    u64::try_from(value).map_err(|_| DecodeError::IntegerOverflow { at })
}

/// How a message's mantissas of one field become `FixedPoint` units (10^-8): `mantissa ×
/// 10^exponent` exactly, worked out once a message from its exponent. Values that would need
/// more than 8 decimals, or are negative, or too large, are errors, never rounded.
#[derive(Clone, Copy)]
enum Scale {
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
    fn of(exponent: i8) -> Scale {
        // The power of ten that takes the mantissa to 10^-8 units.
        let shift = i32::from(exponent) + DECIMALS as i32;
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
const POWERS_OF_TEN: [u64; 20] = {
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
fn scaled(mantissa: i64, exponent: i8, at: usize) -> Result<FixedPoint, DecodeError> {
    let mantissa = u64::try_from(mantissa).map_err(|_| DecodeError::Number {
        at,
        error: FixedPointError::Negative,
    })?;
    Scale::of(exponent).apply(mantissa, at)
}

/// The scales of a book message's prices and quantities.
#[derive(Clone, Copy)]
struct Scales {
    price: Scale,
    quantity: Scale,
}

impl Scales {
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
struct Group<'a> {
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
/// (`Venue::names_stream`), and the book of any other is dropped as not asked for.
fn read_symbol(frame: &[u8], at: usize) -> Result<&[u8], DecodeError> {
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
fn book_header(
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
const HEADER_LEN: usize = 8;

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
    let _event_time = reader.i64()?;
    out.venue_sequence = id(reader.i64()?, HEADER_LEN + 8)?;
    let scales = Scales {
        price: Scale::of(reader.i8()?),
        quantity: Scale::of(reader.i8()?),
    };
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
fn keep_best(
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
fn keep_best_packed(
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
    let _event_time = reader.i64()?;
    out.first_id = id(reader.i64()?, HEADER_LEN + 8)?;
    out.last_id = id(reader.i64()?, HEADER_LEN + 16)?;
    let scales = Scales {
        price: Scale::of(reader.i8()?),
        quantity: Scale::of(reader.i8()?),
    };
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

/// What the encoder writes a book message's numbers with: mantissas of 10^-8 units.
const EXPONENT: i8 = -(DECIMALS as i8);

/// Appends a book message of `template_id` to `out` as Binance writes it, its fixed block
/// (`fields`, after `eventTime`) and each level in today's sizes.
fn write_message(
    template_id: u16,
    event_time_us: i64,
    ids: &[i64],
    bids: &[Level],
    asks: &[Level],
    symbol: &str,
    out: &mut Vec<u8>,
) {
    let block_len = 8 + 8 * ids.len() + 2;
    for field in [block_len as u16, template_id, SCHEMA_ID, 0] {
        out.extend_from_slice(&field.to_le_bytes());
    }
    out.extend_from_slice(&event_time_us.to_le_bytes());
    for id in ids {
        out.extend_from_slice(&id.to_le_bytes());
    }
    out.extend_from_slice(&[EXPONENT as u8, EXPONENT as u8]);
    for levels in [bids, asks] {
        out.extend_from_slice(&(ENTRY_LEN as u16).to_le_bytes());
        out.extend_from_slice(&(levels.len() as u16).to_le_bytes());
        for level in levels {
            for value in [level.price, level.amount] {
                out.extend_from_slice(&(value.raw() as i64).to_le_bytes());
            }
        }
    }
    out.push(symbol.len() as u8);
    out.extend_from_slice(symbol.as_bytes());
}

/// Appends a `depth20` message of `book` (the simulator's, tests').
pub fn encode_depth_snapshot(symbol: &str, book: &TopBook, event_time_us: i64, out: &mut Vec<u8>) {
    let ids = [book.venue_sequence as i64];
    let (bids, asks) = (book.bids.as_slice(), book.asks.as_slice());
    write_message(DEPTH_SNAPSHOT, event_time_us, &ids, bids, asks, symbol, out);
}

/// Appends a `depth` message of `update`.
pub fn encode_depth_diff(symbol: &str, update: &BookUpdate, event_time_us: i64, out: &mut Vec<u8>) {
    let ids = [update.first_id as i64, update.last_id as i64];
    write_message(
        DEPTH_DIFF,
        event_time_us,
        &ids,
        &update.bids,
        &update.asks,
        symbol,
        out,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    const GROUP_HEADER_LEN: usize = 4;

    fn level(price: &str, amount: &str) -> Level {
        Level {
            price: price.parse().unwrap(),
            amount: amount.parse().unwrap(),
        }
    }

    fn book() -> TopBook {
        let mut book = TopBook {
            venue_sequence: 81_246_000_123,
            ..TopBook::default()
        };
        for (price, amount) in [
            ("35496.06", "0.29859300"),
            ("35496.05", "1.5"),
            ("35490", "0"),
        ] {
            book.bids.push(level(price, amount));
        }
        for (price, amount) in [("35496.07", "0.00012"), ("35500.1", "3")] {
            book.asks.push(level(price, amount));
        }
        book
    }

    #[test]
    fn a_depth20_message_decodes_to_the_book_it_was_written_from() {
        let mut frame = Vec::new();
        encode_depth_snapshot("BTCUSDT", &book(), 1_770_000_000_000_000, &mut frame);
        let mut out = TopBook::default();
        let decoded = decode_depth_snapshot(&frame, 20, &mut out);
        assert_eq!(decoded, Ok(Decoded::Book { symbol: b"BTCUSDT" }));
        assert_eq!(out.venue_sequence, 81_246_000_123);
        let expected = book();
        assert_eq!(
            out.bids.as_slice(),
            &expected.bids.as_slice()[..2],
            "the empty level left out"
        );
        assert_eq!(out.asks.as_slice(), expected.asks.as_slice());
        decode_depth_snapshot(&frame, 1, &mut out).unwrap();
        assert_eq!((out.bids.len(), out.asks.len()), (1, 1));
    }

    #[test]
    fn a_depth_message_decodes_to_the_update_it_was_written_from() {
        let update = BookUpdate {
            first_id: 160,
            last_id: 172,
            bids: vec![level("0.0024", "10"), level("0.0023", "0")],
            asks: vec![level("0.0026", "100")],
            ..BookUpdate::default()
        };
        let mut frame = Vec::new();
        encode_depth_diff("BNBBTC", &update, 0, &mut frame);
        let mut out = BookUpdate::default();
        assert_eq!(
            decode_depth_diff(&frame, 10, &mut out),
            Ok(Decoded::Book { symbol: b"BNBBTC" })
        );
        assert_eq!(out, update);
        assert_eq!(
            decode_depth_diff(&frame, 1, &mut out),
            Err(DecodeError::TooManyLevels(1))
        );
    }

    /// `mantissa × 10^exponent` exactly, or an error: never rounded.
    #[test]
    fn mantissas_are_scaled_exactly_or_refused() {
        let value = |mantissa, exponent| scaled(mantissa, exponent, 0);
        let number = |error| Err(DecodeError::Number { at: 0, error });
        assert_eq!(value(3_549_606, -2), Ok("35496.06".parse().unwrap()));
        assert_eq!(value(29_859_300, -8), Ok("0.298593".parse().unwrap()));
        assert_eq!(value(12, 3), Ok("12000".parse().unwrap()));
        assert_eq!(value(1_000, -11), Ok("0.00000001".parse().unwrap()));
        assert_eq!(value(1_001, -11), number(FixedPointError::TooPrecise));
        assert_eq!(value(-1, -8), number(FixedPointError::Negative));
        assert_eq!(value(i64::MAX, 0), number(FixedPointError::Overflow));
        assert_eq!(value(1, 127), number(FixedPointError::Overflow));
        assert_eq!(value(0, -128), Ok(FixedPoint::from_raw(0)));
        assert_eq!(value(5, -128), number(FixedPointError::TooPrecise));
    }

    /// The header's and the groups' block lengths are honoured: fields a later schema
    /// appends are skipped, not misread.
    #[test]
    fn fields_appended_by_a_later_schema_are_skipped() {
        let mut frame = Vec::new();
        encode_depth_snapshot("BTCUSDT", &book(), 7, &mut frame);
        let mut longer = frame[..HEADER_LEN + SNAPSHOT_BLOCK_LEN].to_vec();
        // Two more bytes in the block, four more in each entry.
        longer[0..2].copy_from_slice(&((SNAPSHOT_BLOCK_LEN + 2) as u16).to_le_bytes());
        longer.extend_from_slice(&[0xAA, 0xBB]);
        let mut at = HEADER_LEN + SNAPSHOT_BLOCK_LEN;
        for _ in 0..2 {
            let count = u16::from_le_bytes([frame[at + 2], frame[at + 3]]);
            longer.extend_from_slice(&((ENTRY_LEN + 4) as u16).to_le_bytes());
            longer.extend_from_slice(&count.to_le_bytes());
            at += GROUP_HEADER_LEN;
            for _ in 0..count {
                longer.extend_from_slice(&frame[at..at + ENTRY_LEN]);
                longer.extend_from_slice(&[0xCC; 4]);
                at += ENTRY_LEN;
            }
        }
        longer.extend_from_slice(&frame[at..]);
        let (mut plain, mut extended) = (TopBook::default(), TopBook::default());
        decode_depth_snapshot(&frame, 20, &mut plain).unwrap();
        assert_eq!(
            decode_depth_snapshot(&longer, 20, &mut extended),
            Ok(Decoded::Book { symbol: b"BTCUSDT" })
        );
        assert_eq!(extended, plain);
    }

    #[test]
    fn every_truncation_of_a_frame_is_refused() {
        let mut snapshot = Vec::new();
        encode_depth_snapshot("BTCUSDT", &book(), 7, &mut snapshot);
        let mut diff = Vec::new();
        let update = BookUpdate {
            first_id: 1,
            last_id: 2,
            bids: vec![level("1", "1")],
            ..BookUpdate::default()
        };
        encode_depth_diff("BTCUSDT", &update, 7, &mut diff);
        for end in 0..snapshot.len() {
            let got = decode_depth_snapshot(&snapshot[..end], 20, &mut TopBook::default());
            assert!(got.is_err(), "{end} bytes: {got:?}");
        }
        for end in 0..diff.len() {
            let got = decode_depth_diff(&diff[..end], 20, &mut BookUpdate::default());
            assert!(got.is_err(), "{end} bytes: {got:?}");
        }
    }

    /// Malformed headers and groups get typed errors; another template is no error.
    #[test]
    fn malformed_frames_get_typed_errors() {
        let mut frame = Vec::new();
        encode_depth_snapshot("BTCUSDT", &book(), 7, &mut frame);
        let edited = |at: usize, bytes: &[u8]| {
            let mut edited = frame.clone();
            edited[at..at + bytes.len()].copy_from_slice(bytes);
            edited
        };
        let groups = HEADER_LEN + SNAPSHOT_BLOCK_LEN;
        let cases = [
            (
                edited(4, &2u16.to_le_bytes()),
                DecodeError::UnknownMessage("SBE schema"),
            ),
            (
                edited(0, &17u16.to_le_bytes()),
                DecodeError::Invalid("a block shorter than its template's fields"),
            ),
            (edited(0, &u16::MAX.to_le_bytes()), DecodeError::Truncated),
            (
                edited(groups, &15u16.to_le_bytes()),
                DecodeError::Invalid("a level entry shorter than a price and a quantity"),
            ),
            (
                edited(groups + 2, &u16::MAX.to_le_bytes()),
                DecodeError::Truncated,
            ),
            (
                [&frame[..frame.len() - 8], &[0]].concat(),
                DecodeError::Invalid("an empty symbol"),
            ),
            (
                [frame.clone(), vec![0]].concat(),
                DecodeError::TrailingBytes { at: frame.len() },
            ),
            (
                edited(groups + GROUP_HEADER_LEN, &(-5i64).to_le_bytes()),
                DecodeError::Number {
                    at: groups + GROUP_HEADER_LEN,
                    error: FixedPointError::Negative,
                },
            ),
            (
                edited(HEADER_LEN + 8, &(-1i64).to_le_bytes()),
                DecodeError::IntegerOverflow { at: HEADER_LEN + 8 },
            ),
        ];
        for (bytes, expected) in cases {
            assert_eq!(
                decode_depth_snapshot(&bytes, 20, &mut TopBook::default()),
                Err(expected)
            );
        }
        let unsorted = {
            let mut book = book();
            book.asks.clear();
            book.asks.push(level("35500.1", "3"));
            book.asks.push(level("35496.07", "1"));
            let mut frame = Vec::new();
            encode_depth_snapshot("BTCUSDT", &book, 7, &mut frame);
            frame
        };
        assert_eq!(
            decode_depth_snapshot(&unsorted, 20, &mut TopBook::default()),
            Err(DecodeError::Unsorted(Side::Ask))
        );
        let trade = edited(2, &10000u16.to_le_bytes());
        assert_eq!(
            decode_depth_snapshot(&trade, 20, &mut TopBook::default()),
            Ok(Decoded::Other { template_id: 10000 })
        );
    }
}
