//! What the venues' wire formats share: requests split into chunks, symbol checks, levels
//! written as `[["price","amount"],…]`, the bookkeeping of a message's required keys, the
//! check that a snapshot's side is sorted. A venue uses these rather than its own copy.

use super::{DecodeError, Message, SubscribeRequest, Walker};
use crate::book::{DepthBook, Level, Side};
use crate::fixed::{DECIMALS, FixedPoint, FixedPointError};
use crate::units::Currency;

/// The requests for `streams`, at most `per_request` a request, in order, each frame
/// written by `frame` from its streams. `first_id`: the first request's id where the venue
/// acknowledges each request by an id (the next ones numbered on from it); `None` where it
/// acknowledges each stream by its name.
pub(crate) fn chunked_requests(
    streams: &[String],
    per_request: usize,
    first_id: Option<u64>,
    mut frame: impl FnMut(&[String]) -> String,
) -> Vec<SubscribeRequest> {
    streams
        .chunks(per_request)
        .enumerate()
        .map(|(index, chunk)| {
            let start = index * per_request;
            SubscribeRequest {
                frame: frame(chunk),
                id: first_id.map(|first| first + index as u64),
                streams: start..start + chunk.len(),
            }
        })
        .collect()
}

/// The `-`-separated parts of a symbol of at most `max_len` bytes (`ETH-USD`,
/// `BTC-USDT-SWAP`), each upper-case letters and digits; `None` for anything else.
pub(crate) fn dashed_codes(symbol: &str, max_len: usize) -> Option<Vec<&str>> {
    let code = |part: &&str| {
        !part.is_empty()
            && part
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    };
    let parts: Vec<&str> = symbol.split('-').collect();
    (symbol.len() <= max_len && parts.iter().all(code)).then_some(parts)
}

/// The quote currency of a symbol that is the base's code and the quote's run together
/// (`BTCUSDT`, `btcusd`), given the base.
pub(crate) fn concatenated_quote(symbol: &str, base: &str) -> Option<Currency> {
    let prefix = symbol.get(..base.len())?;
    match prefix.eq_ignore_ascii_case(base) {
        true => Currency::parse(&symbol[base.len()..]),
        false => None,
    }
}

/// The quote currency of a symbol whose second `separator`-separated part it is
/// (`BTC/USD`, `BTC-USDT-SWAP`), given the base, which must be its first.
pub(crate) fn separated_quote(symbol: &str, separator: char, base: &str) -> Option<Currency> {
    let mut parts = symbol.split(separator);
    match parts.next()?.eq_ignore_ascii_case(base) {
        true => Currency::parse(parts.next()?),
        false => None,
    }
}

/// Writes a side as `[["price","amount"],…]` with `separator` after each `,`.
pub(crate) fn write_levels(
    levels: &[Level],
    price_decimals: u32,
    separator: &str,
    out: &mut Vec<u8>,
) {
    out.push(b'[');
    for (index, level) in levels.iter().enumerate() {
        if index > 0 {
            out.push(b',');
            out.extend_from_slice(separator.as_bytes());
        }
        out.extend_from_slice(b"[\"");
        level.price.append_decimal(price_decimals, out);
        out.extend_from_slice(b"\",");
        out.extend_from_slice(separator.as_bytes());
        out.push(b'"');
        level.amount.append_decimal(DECIMALS, out);
        out.extend_from_slice(b"\"]");
    }
    out.push(b']');
}

/// The number's text at its shortest, without trailing fractional zeros (`"8477"`,
/// `"0.0000102"`), as OKX and Gate write theirs.
pub(crate) fn shortest_text(value: FixedPoint) -> crate::fixed::DecimalText {
    let scale = 10u64.pow(DECIMALS);
    let mut fraction = value.raw() % scale;
    let mut decimals = DECIMALS;
    if fraction == 0 {
        decimals = 0;
    }
    while fraction != 0 && fraction.is_multiple_of(10) {
        fraction /= 10;
        decimals -= 1;
    }
    value.with_decimals(decimals)
}

/// A snapshot's side must be strictly sorted best first.
pub(crate) fn check_sorted(side: Side, levels: &[Level]) -> Result<(), DecodeError> {
    match levels
        .windows(2)
        .all(|pair| side.is_better(pair[0].price, pair[1].price))
    {
        true => Ok(()),
        false => Err(DecodeError::Unsorted(side)),
    }
}

/// Tracks which of a message's required keys were seen, refusing duplicates.
#[derive(Default)]
pub(crate) struct Seen(u32);

impl Seen {
    /// Marks `key` (bit `bit`) as seen; a second sighting is an error.
    pub(crate) fn mark(&mut self, bit: u32, key: &'static str) -> Result<(), DecodeError> {
        if self.0 & (1 << bit) != 0 {
            return Err(DecodeError::DuplicateKey(key));
        }
        self.0 |= 1 << bit;
        Ok(())
    }

    // One method a kind of value rather than one generic over the reader: passed as a
    // closure, the reader inlined worse into the decoders (`kraken_update` +3.4 %,
    // `bybit_delta` +2.1 % instructions).

    /// The value of the string member `key` (bit `bit`), which must be its first.
    #[inline(always)]
    pub(crate) fn string<'a>(
        &mut self,
        walker: &mut Walker<'a>,
        bit: u32,
        key: &'static str,
    ) -> Result<&'a [u8], DecodeError> {
        self.mark(bit, key)?;
        walker.string()
    }

    /// The value of the unsigned member `key` (bit `bit`), which must be its first.
    #[inline(always)]
    pub(crate) fn unsigned(
        &mut self,
        walker: &mut Walker<'_>,
        bit: u32,
        key: &'static str,
    ) -> Result<u64, DecodeError> {
        self.mark(bit, key)?;
        walker.unsigned()
    }

    /// The value of the member `key` (bit `bit`), which must be its first: a time in ms
    /// since the Unix epoch, as ns (`TopBook::exchange_time_ns`).
    #[inline(always)]
    pub(crate) fn millis_time(
        &mut self,
        walker: &mut Walker<'_>,
        bit: u32,
        key: &'static str,
    ) -> Result<u64, DecodeError> {
        super::timestamps::nanos_from_millis(self.unsigned(walker, bit, key)?)
    }

    /// The value of the signed member `key` (bit `bit`), which must be its first.
    #[inline(always)]
    pub(crate) fn signed(
        &mut self,
        walker: &mut Walker<'_>,
        bit: u32,
        key: &'static str,
    ) -> Result<i64, DecodeError> {
        self.mark(bit, key)?;
        walker.signed()
    }

    /// The value of the boolean member `key` (bit `bit`), which must be its first.
    #[inline(always)]
    pub(crate) fn boolean(
        &mut self,
        walker: &mut Walker<'_>,
        bit: u32,
        key: &'static str,
    ) -> Result<bool, DecodeError> {
        self.mark(bit, key)?;
        walker.boolean()
    }

    pub(crate) fn has(&self, bit: u32) -> bool {
        self.0 & (1 << bit) != 0
    }

    /// Whether any of `keys` (bit, name) was seen.
    pub(crate) fn any(&self, keys: &[(u32, &'static str)]) -> bool {
        keys.iter().any(|&(bit, _)| self.has(bit))
    }

    /// The first of `keys` (bit, name) not seen, as the error naming it.
    pub(crate) fn require(&self, keys: &[(u32, &'static str)]) -> Result<(), DecodeError> {
        match keys.iter().find(|&&(bit, _)| !self.has(bit)) {
            Some(&(_, missing)) => Err(DecodeError::MissingKey(missing)),
            None => Ok(()),
        }
    }
}

/// Reads a side with `read`. A number it cannot hold (more than 8 decimals, or beyond the
/// range: Gate's amounts of 10 decimals, Bitget's and Deribit's tokens priced below
/// 10⁻⁸) leaves the side skipped and the error in `unheld`, so that the message is its
/// book's alone to lose ([`book_or_loss`]); any other error is the frame's.
pub(crate) fn side_unless_unheld<'a>(
    walker: &mut Walker<'a>,
    unheld: &mut Option<DecodeError>,
    read: impl FnOnce(&mut Walker<'a>) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    let start = walker.position();
    match read(walker) {
        Err(
            error @ DecodeError::Number {
                error: FixedPointError::TooPrecise | FixedPointError::Overflow,
                ..
            },
        ) => {
            unheld.get_or_insert(error);
            walker.rewind(start);
            walker.skip_value()
        }
        other => other,
    }
}

/// The message of a book that decoded whole: its book, or, where a number could not be
/// held ([`side_unless_unheld`]), the book's loss.
pub(crate) fn book_or_loss(stream: &[u8], unheld: Option<DecodeError>) -> Message<'_> {
    match unheld {
        None => Message::Book { stream },
        Some(error) => Message::Unreadable { stream, error },
    }
}

/// Levels a side the interleaved checksum covers (OKX's and Bitget's).
const INTERLEAVED_CHECKSUM_LEVELS: usize = 25;

/// The checksum OKX and Bitget send: the best 25 bids and asks interleaved,
/// `bid1Price:bid1Size:ask1Price:ask1Size:…` (the longer side's remaining levels after the
/// shorter side ends), each number as `text` writes it (`true` for a price); CRC32, which
/// both send as a signed integer. The text is built on the stack and hashed as it fills
/// the buffer, so the check allocates nothing.
pub(crate) fn interleaved_checksum<Text: AsRef<[u8]>>(
    book: &DepthBook,
    text: impl Fn(FixedPoint, bool) -> Text,
) -> u32 {
    // 100 numbers of a coin's text (`DecimalText`, at most 21 bytes), each followed by a
    // ':': the whole text. An instrument's in a unit, whose texts are longer (`WireText`),
    // hashes the buffer each time it fills.
    let mut buffer = [0u8; 4 * INTERLEAVED_CHECKSUM_LEVELS * 22];
    let mut hasher = crc32fast::Hasher::new();
    let mut len = 0;
    let mut push = |value: FixedPoint, is_price: bool| {
        let number = text(value, is_price);
        let bytes = number.as_ref();
        if len + bytes.len() >= buffer.len() {
            hasher.update(&buffer[..len]);
            len = 0;
        }
        buffer[len..len + bytes.len()].copy_from_slice(bytes);
        buffer[len + bytes.len()] = b':';
        len += bytes.len() + 1;
    };
    let (mut bids, mut asks) = (
        book.levels(Side::Bid).take(INTERLEAVED_CHECKSUM_LEVELS),
        book.levels(Side::Ask).take(INTERLEAVED_CHECKSUM_LEVELS),
    );
    loop {
        let (bid, ask) = (bids.next(), asks.next());
        if bid.is_none() && ask.is_none() {
            break;
        }
        for level in [bid, ask].into_iter().flatten() {
            push(level.price, true);
            push(level.amount, false);
        }
    }
    hasher.update(&buffer[..len.saturating_sub(1)]);
    hasher.finalize()
}

/// The members of a REST snapshot a market-data archive stored among a venue's messages
/// (Tardis.dev's `"generated": true` messages, each venue's shape in docs/history.md):
/// each member's text as stored (strings still quoted), or `None` where `message` is not
/// such a message. A venue's messages never say `"generated"`: any other is passed over
/// before a parse.
pub(crate) fn archived_members(
    message: &str,
) -> Option<std::collections::HashMap<&str, &serde_json::value::RawValue>> {
    if !message.contains(r#""generated""#) {
        return None;
    }
    let members: std::collections::HashMap<&str, &serde_json::value::RawValue> =
        serde_json::from_str(message).ok()?;
    (members.get("generated")?.get() == "true").then_some(members)
}

/// A member's JSON string, unquoted (archives' names hold no escapes).
pub(crate) fn archived_string<'a>(
    members: &std::collections::HashMap<&str, &'a serde_json::value::RawValue>,
    name: &str,
) -> Option<&'a str> {
    members
        .get(name)?
        .get()
        .strip_prefix('"')?
        .strip_suffix('"')
}

/// An `id` member's value where it is a number, bare or quoted (a request of ours, as the
/// venue echoes it); any other id (a connection's, a client's own) is skipped: `None`.
pub(crate) fn numbered_id(walker: &mut Walker<'_>) -> Result<Option<u64>, DecodeError> {
    let at = walker.position();
    if let Ok(id) = walker.unsigned() {
        return Ok(Some(id));
    }
    walker.rewind(at);
    walker.skip_value()?;
    Ok(None)
}

/// Writes a side as `[["price","amount"],…]`, each number at its shortest (the
/// simulator's KuCoin frames).
pub(crate) fn write_shortest_pairs(levels: &[Level], out: &mut Vec<u8>) {
    use std::io::Write;
    out.push(b'[');
    for (index, level) in levels.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        let (price, amount) = (shortest_text(level.price), shortest_text(level.amount));
        write!(out, r#"["{}","{}"]"#, price.as_str(), amount.as_str())
            .expect("writing to a Vec cannot fail");
    }
    out.push(b']');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::book::BookUpdate;

    /// Texts longer than the buffer holds at once (an instrument's numbers in a unit, up to
    /// 40 bytes) hash as the whole text would.
    #[test]
    fn an_interleaved_checksum_of_long_texts_hashes_the_whole_text() {
        let levels = |from: u64| -> Vec<Level> {
            (0..INTERLEAVED_CHECKSUM_LEVELS as u64)
                .map(|at| Level::from_raw(from + at, 7 + at))
                .collect()
        };
        let mut bids = levels(1_000);
        bids.reverse();
        let mut book = DepthBook::new(100);
        book.replace(&BookUpdate {
            bids,
            asks: levels(2_000),
            ..BookUpdate::default()
        });
        let long_text = |value: FixedPoint, is_price: bool| {
            format!("{:0>39}{}", value.raw(), if is_price { 'p' } else { 'a' })
        };
        let mut whole = Vec::new();
        for (bid, ask) in book.levels(Side::Bid).zip(book.levels(Side::Ask)) {
            for level in [bid, ask] {
                whole.push(long_text(level.price, true));
                whole.push(long_text(level.amount, false));
            }
        }
        assert_eq!(whole.len(), 4 * INTERLEAVED_CHECKSUM_LEVELS);
        assert_eq!(
            interleaved_checksum(&book, long_text),
            crc32fast::hash(whole.join(":").as_bytes())
        );
    }
}
