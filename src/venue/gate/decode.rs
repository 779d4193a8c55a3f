//! Gate's frames decoded into books and typed errors ([`Decode`]): one walk of the
//! message, whose `result` is read as a book while the walk goes (the channel that says
//! what it is may come after it), then classified by channel and event.

use super::*;
use crate::book::Level;
use crate::venue::wire::{Seen, book_or_loss, check_sorted, side_unless_unheld};

const CHANNEL: u32 = 0;
const EVENT: u32 = 1;
const SYMBOL: u32 = 2;
const FIRST_ID: u32 = 3;
const LAST_ID: u32 = 4;
const BIDS: u32 = 5;
const ASKS: u32 = 6;
const BOOK_ID: u32 = 7;
const FULL: u32 = 8;
const TIME: u32 = 9;

/// What an `order_book_update` event's `result` must hold (its sides may be absent: an
/// event that only moves the ids).
const EVENT_KEYS: [(u32, &str); 3] = [(SYMBOL, "s"), (FIRST_ID, "U"), (LAST_ID, "u")];

/// What an `order_book` push's `result` must hold.
const TOP_KEYS: [(u32, &str); 4] = [
    (SYMBOL, "s"),
    (BOOK_ID, "lastUpdateId"),
    (BIDS, "bids"),
    (ASKS, "asks"),
];

/// A message's members other than its book: what it is and, for an answer, whether the
/// request succeeded.
#[derive(Default)]
struct Envelope<'a> {
    channel: &'a [u8],
    event: &'a [u8],
    /// The answered request's `id`, where the answer echoes it.
    request_id: Option<u64>,
    /// `result.status` of an answer; `result.type` of a system notice.
    status: &'a [u8],
    notice: &'a [u8],
    /// An `error` object (refusals carry one).
    error: bool,
    seen: Seen,
}

/// Walks one message: the envelope's members, and each member of an object `result` that
/// is not the envelope's, to `book_member` (which returns whether it read it).
fn walk<'a>(
    frame: &'a [u8],
    mut book_member: impl FnMut(&mut Walker<'a>, &'a [u8], &mut Seen) -> Result<bool, DecodeError>,
) -> Result<Envelope<'a>, DecodeError> {
    let mut walker = Walker::new(frame);
    let mut envelope = Envelope::default();
    walker.object(|walker, key| {
        match key {
            b"channel" => envelope.channel = envelope.seen.string(walker, CHANNEL, "channel")?,
            b"event" => envelope.event = envelope.seen.string(walker, EVENT, "event")?,
            b"id" if walker.peek()?.is_ascii_digit() => {
                envelope.request_id = Some(walker.unsigned()?)
            }
            b"error" if walker.peek()? == b'{' => {
                envelope.error = true;
                walker.skip_value()?;
            }
            b"result" if walker.peek()? == b'{' => walker.object(|walker, key| {
                match key {
                    b"status" => envelope.status = walker.string()?,
                    b"type" => envelope.notice = walker.string()?,
                    _ => {
                        if !book_member(walker, key, &mut envelope.seen)? {
                            walker.skip_value()?;
                        }
                    }
                }
                Ok(())
            })?,
            _ => walker.skip_value()?,
        }
        Ok(())
    })?;
    walker.finish()?;
    Ok(envelope)
}

/// The shape of the side at the cursor: market `M`'s, or pairs where its first level is an
/// array (futures' Order Book V2 channel writes pairs, and a message's channel may come
/// after its result).
fn shape_at<M: Market>(walker: &mut Walker<'_>) -> Result<LevelShape, DecodeError> {
    let at = walker.position();
    walker.expect(b'[', "'[' opening a side")?;
    let first = walker.peek()?;
    walker.rewind(at);
    Ok(match first {
        b'[' => LevelShape::Pair,
        _ => M::LEVEL,
    })
}

/// Whether `channel` is `<market>.<name>`.
fn is_channel<M: Market>(channel: &[u8], name: &str) -> bool {
    channel
        .strip_prefix(M::CHANNEL.as_bytes())
        .and_then(|rest| rest.strip_prefix(b"."))
        .is_some_and(|rest| rest == name.as_bytes())
}

/// What a message other than a book of `book_channel` is; `None` for such a book.
fn classify<'a, M: Market>(
    envelope: &Envelope<'a>,
    book_channel: &str,
) -> Result<Option<Message<'a>>, DecodeError> {
    if !envelope.seen.has(CHANNEL) {
        return Err(DecodeError::MissingKey("channel"));
    }
    let channel = envelope.channel;
    Ok(Some(match envelope.event {
        b"subscribe" if envelope.status.is_empty() => {
            return Err(DecodeError::MissingKey("result"));
        }
        b"subscribe" => Message::SubscribeResult {
            accepted: envelope.status == b"success" && !envelope.error,
            acked: envelope.request_id.map_or(Acked::Oldest, Acked::Request),
        },
        // 2021's answers name no request: an unsubscription's must not be taken for the
        // oldest subscription's.
        b"unsubscribe" => Message::Ignored,
        b"update" | b"all" if is_channel::<M>(channel, book_channel) => return Ok(None),
        _ if is_channel::<M>(channel, "pong") => Message::Heartbeat,
        // "Futures announce restarts with a `futures.system` push whose type is `upgrade`".
        _ if is_channel::<M>(channel, "system") && envelope.notice == b"upgrade" => {
            Message::Reconnect
        }
        _ => Message::Ignored,
    }))
}

/// A diff event in a layout Gate sends (every recorded one: no whitespace, the members in
/// one of two orders, below), read by comparing the bytes between values with it, as
/// Binance's pushes are (`binance::decode::decode_usual_layout`): through the general walk,
/// the message around a recorded event's two to four levels costs nine tenths of its
/// decode. `None` for any other frame, or an error in this one; then [`general_diff`]
/// reads it, and gives the same answer for every frame this accepts.
pub(super) fn fast_diff<'a, M: Market>(
    frame: &'a [u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Option<Message<'a>> {
    let mut walker = Walker::new(frame);
    walker.skip_exactly(br#"{"time":"#).then_some(())?;
    walker.skip_value().ok()?;
    if walker.skip_exactly(br#","time_ms":"#) {
        walker.skip_value().ok()?;
    }
    let channel = walker.skip_exactly(br#","channel":""#)
        && walker.skip_exactly(M::CHANNEL.as_bytes())
        && walker.skip_exactly(br#".order_book_update","event":"update","result":{"#);
    channel.then_some(())?;
    out.clear();
    let symbol = match walker.skip_exactly(br#""t":"#) {
        true => read_time_first::<M>(&mut walker, max_levels, out)?,
        false => read_alphabetical::<M>(&mut walker, max_levels, out)?,
    };
    walker.skip_exactly(b"}}").then_some(())?;
    walker.finish().ok()?;
    (out.first_id <= out.last_id).then_some(())?;
    if out.is_snapshot {
        check_sorted(Side::Bid, &out.bids).ok()?;
        check_sorted(Side::Ask, &out.asks).ok()?;
    }
    Some(Message::Book { stream: symbol })
}

/// A side of a diff event in either shape, every level in wire order.
fn fast_side<M: Market>(
    walker: &mut Walker<'_>,
    max_levels: usize,
    out: &mut Vec<Level>,
) -> Option<()> {
    let shape = shape_at::<M>(walker).ok()?;
    walker
        .all_shaped_levels(shape, None, max_levels, out, None)
        .ok()
}

/// The members after `"t":` in the spot layout (2021: `e` and `E`; 2025: `full` and `l`
/// too): `"t":…[,"full":true][,"l":"…"][,"e":"depthUpdate","E":…],"s":"…","U":…,"u":…,
/// "b":[…],"a":[…][,"l":"…"]`.
fn read_time_first<'a, M: Market>(
    walker: &mut Walker<'a>,
    max_levels: usize,
    out: &mut BookUpdate,
) -> Option<&'a [u8]> {
    out.exchange_time_ns = timestamps::nanos_from_millis(walker.unsigned().ok()?).ok()?;
    out.is_snapshot = walker.skip_exactly(br#","full":true"#);
    if walker.skip_exactly(br#","l":"#) {
        walker.string().ok()?;
    }
    if walker.skip_exactly(br#","e":"depthUpdate","E":"#) {
        walker.skip_value().ok()?;
    }
    walker.skip_exactly(br#","s":"#).then_some(())?;
    let symbol = walker.string().ok()?;
    walker.skip_exactly(br#","U":"#).then_some(())?;
    out.first_id = walker.unsigned().ok()?;
    walker.skip_exactly(br#","u":"#).then_some(())?;
    out.last_id = walker.unsigned().ok()?;
    walker.skip_exactly(br#","b":"#).then_some(())?;
    fast_side::<M>(walker, max_levels, &mut out.bids)?;
    walker.skip_exactly(br#","a":"#).then_some(())?;
    fast_side::<M>(walker, max_levels, &mut out.asks)?;
    // The futures documentation's example writes `l` last.
    if walker.skip_exactly(br#","l":"#) {
        walker.string().ok()?;
    }
    Some(symbol)
}

/// The members in alphabetical order, as 2023's futures frames write them:
/// `"U":…,"a":[…],"b":[…],"s":"…","t":…,"u":…`.
fn read_alphabetical<'a, M: Market>(
    walker: &mut Walker<'a>,
    max_levels: usize,
    out: &mut BookUpdate,
) -> Option<&'a [u8]> {
    walker.skip_exactly(br#""U":"#).then_some(())?;
    out.first_id = walker.unsigned().ok()?;
    walker.skip_exactly(br#","a":"#).then_some(())?;
    fast_side::<M>(walker, max_levels, &mut out.asks)?;
    walker.skip_exactly(br#","b":"#).then_some(())?;
    fast_side::<M>(walker, max_levels, &mut out.bids)?;
    walker.skip_exactly(br#","s":"#).then_some(())?;
    let symbol = walker.string().ok()?;
    walker.skip_exactly(br#","t":"#).then_some(())?;
    out.exchange_time_ns = timestamps::nanos_from_millis(walker.unsigned().ok()?).ok()?;
    walker.skip_exactly(br#","u":"#).then_some(())?;
    out.last_id = walker.unsigned().ok()?;
    Some(symbol)
}

/// A `<market>.order_book_update` message read by the general object walk, which reads
/// every frame.
pub(super) fn general_diff<'a, M: Market>(
    frame: &'a [u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<Message<'a>, DecodeError> {
    out.clear();
    let (mut symbol, mut unheld): (&[u8], _) = (b"", None);
    let envelope = walk(frame, |walker, key, seen| {
        match key {
            b"s" => symbol = seen.string(walker, SYMBOL, "s")?,
            b"U" => out.first_id = seen.unsigned(walker, FIRST_ID, "U")?,
            b"u" => out.last_id = seen.unsigned(walker, LAST_ID, "u")?,
            b"full" => out.is_snapshot = seen.boolean(walker, FULL, "full")?,
            b"t" => out.exchange_time_ns = seen.millis_time(walker, TIME, "t")?,
            // `book_ticker`'s `b` and `a` are prices: only an array is a side.
            b"b" | b"a" if walker.peek()? != b'[' => return Ok(false),
            b"b" => {
                seen.mark(BIDS, "b")?;
                side_unless_unheld(walker, &mut unheld, |walker| {
                    let shape = shape_at::<M>(walker)?;
                    walker.all_shaped_levels(shape, None, max_levels, &mut out.bids, None)
                })?;
            }
            b"a" => {
                seen.mark(ASKS, "a")?;
                side_unless_unheld(walker, &mut unheld, |walker| {
                    let shape = shape_at::<M>(walker)?;
                    walker.all_shaped_levels(shape, None, max_levels, &mut out.asks, None)
                })?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    if let Some(message) = classify::<M>(&envelope, "order_book_update")? {
        return Ok(message);
    }
    envelope.seen.require(&EVENT_KEYS)?;
    if out.first_id > out.last_id {
        return Err(DecodeError::Invalid("an update with U greater than u"));
    }
    if out.is_snapshot && unheld.is_none() {
        check_sorted(Side::Bid, &out.bids)?;
        check_sorted(Side::Ask, &out.asks)?;
    }
    Ok(book_or_loss(symbol, unheld))
}

impl<M: Market> Decode for Gate<M> {
    /// `<market>.order_book`: a whole top N each push (spot `lastUpdateId` and `s`, futures
    /// `id` and `contract`).
    fn decode<'a>(
        frame: &'a [u8],
        depth: usize,
        out: &mut TopBook,
    ) -> Result<Message<'a>, DecodeError> {
        let (mut symbol, mut unheld): (&[u8], _) = (b"", None);
        let envelope = walk(frame, |walker, key, seen| {
            match key {
                b"s" | b"contract" => symbol = seen.string(walker, SYMBOL, "s")?,
                b"lastUpdateId" | b"id" => {
                    out.venue_sequence = seen.unsigned(walker, BOOK_ID, "lastUpdateId")?;
                }
                b"t" => out.exchange_time_ns = seen.millis_time(walker, TIME, "t")?,
                b"bids" => {
                    seen.mark(BIDS, "bids")?;
                    side_unless_unheld(walker, &mut unheld, |walker| {
                        let shape = shape_at::<M>(walker)?;
                        walker.shaped_levels(shape, Side::Bid, depth, &mut out.bids)
                    })?;
                }
                b"asks" => {
                    seen.mark(ASKS, "asks")?;
                    side_unless_unheld(walker, &mut unheld, |walker| {
                        let shape = shape_at::<M>(walker)?;
                        walker.shaped_levels(shape, Side::Ask, depth, &mut out.asks)
                    })?;
                }
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        if let Some(message) = classify::<M>(&envelope, "order_book")? {
            return Ok(message);
        }
        envelope.seen.require(&TOP_KEYS)?;
        Ok(book_or_loss(symbol, unheld))
    }

    /// `<market>.order_book_update`: one event, or a `"full":true` book replacing the book.
    fn decode_diff<'a>(
        frame: &'a [u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<Message<'a>, DecodeError> {
        match fast_diff::<M>(frame, max_levels, out) {
            Some(message) => Ok(message),
            None => general_diff::<M>(frame, max_levels, out),
        }
    }

    /// `GET …/order_book?…&with_id=true`: `{"id":…,"current":…,"update":…,"asks":[…],
    /// "bids":[…]}`, each side sorted best first.
    fn decode_snapshot(
        body: &[u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<(), DecodeError> {
        const KEYS: [(u32, &str); 3] = [(BOOK_ID, "id"), (BIDS, "bids"), (ASKS, "asks")];
        out.clear();
        let mut walker = Walker::new(body);
        let mut seen = Seen::default();
        walker.object(|walker, key| {
            match key {
                b"id" => out.set_id(seen.unsigned(walker, BOOK_ID, "id")?),
                b"bids" => {
                    seen.mark(BIDS, "bids")?;
                    let (shape, sorted) = (shape_at::<M>(walker)?, Some(Side::Bid));
                    walker.all_shaped_levels(shape, sorted, max_levels, &mut out.bids, None)?;
                }
                b"asks" => {
                    seen.mark(ASKS, "asks")?;
                    let (shape, sorted) = (shape_at::<M>(walker)?, Some(Side::Ask));
                    walker.all_shaped_levels(shape, sorted, max_levels, &mut out.asks, None)?;
                }
                _ => walker.skip_value()?,
            }
            Ok(())
        })?;
        walker.finish()?;
        seen.require(&KEYS)
    }
}
