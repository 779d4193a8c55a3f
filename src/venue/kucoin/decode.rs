//! KuCoin's frames decoded into books and typed errors ([`Decode`]): one walk of the
//! message, whose `data` is read as a book while the walk goes (the `type` and `topic`
//! that say what it is may come after it), then classified by them.

use super::*;
use crate::book::Level;
use crate::venue::timestamps;
use crate::venue::wire::{Seen, book_or_loss, side_unless_unheld};

const TYPE: u32 = 0;
const TOPIC: u32 = 1;
const SYMBOL: u32 = 2;
const FIRST_ID: u32 = 3;
const LAST_ID: u32 = 4;
const CHANGES: u32 = 5;
const BIDS: u32 = 6;
const ASKS: u32 = 7;
const TIME: u32 = 8;
const SEQUENCE: u32 = 9;

/// What a `trade.l2update` message's `data` must hold.
const EVENT_KEYS: [(u32, &str); 4] = [
    (SYMBOL, "symbol"),
    (FIRST_ID, "sequenceStart"),
    (LAST_ID, "sequenceEnd"),
    (CHANGES, "changes"),
];

/// What a top-N push's `data` must hold.
const TOP_KEYS: [(u32, &str); 3] = [(BIDS, "bids"), (ASKS, "asks"), (TIME, "timestamp")];

/// A message's members other than its book.
#[derive(Default)]
struct Envelope<'a> {
    kind: &'a [u8],
    topic: &'a [u8],
    /// The answered request's `id`, where it is a number (quoted, as the venue echoes it).
    request_id: Option<u64>,
    seen: Seen,
}

/// Walks one message: the envelope's members, and each member of an object `data` to
/// `data_member` (which returns whether it read it).
fn walk<'a>(
    frame: &'a [u8],
    mut data_member: impl FnMut(&mut Walker<'a>, &'a [u8], &mut Seen) -> Result<bool, DecodeError>,
) -> Result<Envelope<'a>, DecodeError> {
    let mut walker = Walker::new(frame);
    let mut envelope = Envelope::default();
    walker.object(|walker, key| {
        match key {
            b"type" => envelope.kind = envelope.seen.string(walker, TYPE, "type")?,
            b"topic" => envelope.topic = envelope.seen.string(walker, TOPIC, "topic")?,
            b"id" => envelope.request_id = crate::venue::wire::numbered_id(walker)?,
            b"data" if walker.peek()? == b'{' => walker.object(|walker, key| {
                if !data_member(walker, key, &mut envelope.seen)? {
                    walker.skip_value()?;
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

/// The symbol a book message's topic names (`/market/level2:BTC-USDT`), if its topic is
/// `channel`'s.
fn topic_symbol<'a>(topic: &'a [u8], channel: &[u8]) -> Option<&'a [u8]> {
    let rest = topic.strip_prefix(channel)?;
    rest.strip_prefix(b":").filter(|symbol| !symbol.is_empty())
}

/// What a message other than a book is; `None` for a `message`.
fn classify<'a>(envelope: &Envelope<'a>) -> Result<Option<Message<'a>>, DecodeError> {
    if !envelope.seen.has(TYPE) {
        return Err(DecodeError::MissingKey("type"));
    }
    let acked = envelope.request_id.map_or(Acked::Oldest, Acked::Request);
    Ok(Some(match envelope.kind {
        b"message" => return Ok(None),
        b"ack" => Message::SubscribeResult {
            accepted: true,
            acked,
        },
        b"error" => Message::SubscribeResult {
            accepted: false,
            acked,
        },
        b"pong" => Message::Heartbeat,
        _ => Message::Ignored,
    }))
}

/// A side of changes, `[["price","size","sequence"],…]`, into `levels` and `ids` side by
/// side; a change priced 0 only moves the sequence on, and is left out. At most `limit`.
fn changes(
    walker: &mut Walker<'_>,
    limit: usize,
    levels: &mut Vec<Level>,
    ids: &mut Vec<u64>,
) -> Result<(), DecodeError> {
    levels.clear();
    ids.clear();
    let mut read = 0;
    walker.elements(|walker| {
        if read == limit {
            return Err(DecodeError::TooManyLevels(limit));
        }
        read += 1;
        walker.expect(b'[', "'[' opening a change")?;
        let price = walker.price()?;
        walker.expect(b',', "',' after a change's price")?;
        let amount = walker.amount()?;
        walker.expect(b',', "',' after a change's size")?;
        let id = walker.unsigned()?;
        walker.expect(b']', "']' closing a change")?;
        if !price.is_zero() {
            levels.push(Level { price, amount });
            ids.push(id);
        }
        Ok(())
    })
}

/// `changes`: `{"asks":[…],"bids":[…]}`, both sides required.
fn read_changes(
    walker: &mut Walker<'_>,
    max_levels: usize,
    out: &mut BookUpdate,
    unheld: &mut Option<DecodeError>,
) -> Result<(), DecodeError> {
    let mut seen = Seen::default();
    walker.object(|walker, key| {
        let (levels, ids, bit, name) = match key {
            b"bids" => (&mut out.bids, &mut out.change_ids.bids, BIDS, "bids"),
            b"asks" => (&mut out.asks, &mut out.change_ids.asks, ASKS, "asks"),
            _ => return walker.skip_value(),
        };
        seen.mark(bit, name)?;
        side_unless_unheld(walker, unheld, |walker| {
            changes(walker, max_levels, levels, ids)
        })
    })?;
    seen.require(&[(BIDS, "bids"), (ASKS, "asks")])
}

/// A `trade.l2update` message in a layout KuCoin sends (below), read by comparing the bytes
/// between values with it, as Gate's events are (`gate::decode::fast_diff`): through the
/// general walk, the envelope around a message's one change costs most of its decode.
/// `None` for any other frame, or an error in this one; then [`general_diff`] reads it,
/// and gives the same answer for every frame this accepts.
pub(super) fn fast_diff<'a>(frame: &'a [u8], max_levels: usize, out: &mut BookUpdate) -> Option<Message<'a>> {
    let mut walker = Walker::new(frame);
    out.clear();
    let symbol = match walker.skip_exactly(br#"{"data":{"sequenceStart":"#) {
        true => read_data_first(&mut walker, max_levels, out)?,
        false => read_topic_first(&mut walker, max_levels, out)?,
    };
    walker.finish().ok()?;
    (out.first_id <= out.last_id).then_some(())?;
    let ids = out.change_ids.bids.iter().chain(&out.change_ids.asks);
    ids.clone().all(|&id| id <= out.last_id).then_some(())?;
    Some(Message::Book { stream: symbol })
}

/// The changes of a side without whitespace, as [`changes`] reads them.
fn fast_changes(
    walker: &mut Walker<'_>,
    max_levels: usize,
    levels: &mut Vec<Level>,
    ids: &mut Vec<u64>,
) -> Option<()> {
    walker.skip_exactly(b"[").then_some(())?;
    if walker.skip_exactly(b"]") {
        return Some(());
    }
    for _ in 0..max_levels {
        walker.skip_exactly(b"[").then_some(())?;
        let price = walker.price().ok()?;
        walker.skip_exactly(b",").then_some(())?;
        let amount = walker.amount().ok()?;
        walker.skip_exactly(b",").then_some(())?;
        let id = walker.unsigned().ok()?;
        walker.skip_exactly(b"]").then_some(())?;
        if !price.is_zero() {
            levels.push(Level { price, amount });
            ids.push(id);
        }
        if !walker.skip_exactly(b",") {
            return walker.skip_exactly(b"]").then_some(());
        }
    }
    None
}

/// 2021's layout: `{"data":{"sequenceStart":…,"symbol":"…","changes":{"asks":[…],"bids":
/// […]},"sequenceEnd":…[,"time":…]},"subject":"trade.l2update","topic":"/market/level2:…",
/// "type":"message"}`.
fn read_data_first<'a>(
    walker: &mut Walker<'a>,
    max_levels: usize,
    out: &mut BookUpdate,
) -> Option<&'a [u8]> {
    out.first_id = walker.unsigned().ok()?;
    walker.skip_exactly(br#","symbol":"#).then_some(())?;
    let symbol = walker.string().ok()?;
    walker.skip_exactly(br#","changes":{"asks":"#).then_some(())?;
    fast_changes(walker, max_levels, &mut out.asks, &mut out.change_ids.asks)?;
    walker.skip_exactly(br#","bids":"#).then_some(())?;
    fast_changes(walker, max_levels, &mut out.bids, &mut out.change_ids.bids)?;
    walker.skip_exactly(br#"},"sequenceEnd":"#).then_some(())?;
    out.last_id = walker.unsigned().ok()?;
    if walker.skip_exactly(br#","time":"#) {
        out.exchange_time_ns = timestamps::nanos_from_millis(walker.unsigned().ok()?).ok()?;
    }
    walker.skip_exactly(br#"},"subject":"trade.l2update","topic":"#).then_some(())?;
    let topic = walker.string().ok()?;
    (topic_symbol(topic, subscribe::DIFF_CHANNEL.as_bytes())? == symbol).then_some(())?;
    walker.skip_exactly(br#","type":"message"}"#).then_some(symbol)
}

/// The documented layout (2024), which the simulator writes: `{"topic":"/market/level2:…",
/// "type":"message","subject":"trade.l2update","data":{"changes":{"asks":[…],"bids":[…]},
/// "sequenceEnd":…,"sequenceStart":…,"symbol":"…","time":…}}`.
fn read_topic_first<'a>(
    walker: &mut Walker<'a>,
    max_levels: usize,
    out: &mut BookUpdate,
) -> Option<&'a [u8]> {
    walker.skip_exactly(br#"{"topic":"#).then_some(())?;
    let topic = topic_symbol(walker.string().ok()?, subscribe::DIFF_CHANNEL.as_bytes())?;
    let envelope = br#","type":"message","subject":"trade.l2update","data":{"changes":{"asks":"#;
    walker.skip_exactly(envelope).then_some(())?;
    fast_changes(walker, max_levels, &mut out.asks, &mut out.change_ids.asks)?;
    walker.skip_exactly(br#","bids":"#).then_some(())?;
    fast_changes(walker, max_levels, &mut out.bids, &mut out.change_ids.bids)?;
    walker.skip_exactly(br#"},"sequenceEnd":"#).then_some(())?;
    out.last_id = walker.unsigned().ok()?;
    walker.skip_exactly(br#","sequenceStart":"#).then_some(())?;
    out.first_id = walker.unsigned().ok()?;
    walker.skip_exactly(br#","symbol":"#).then_some(())?;
    let symbol = walker.string().ok()?;
    (symbol == topic).then_some(())?;
    walker.skip_exactly(br#","time":"#).then_some(())?;
    out.exchange_time_ns = timestamps::nanos_from_millis(walker.unsigned().ok()?).ok()?;
    walker.skip_exactly(b"}}").then_some(symbol)
}

/// A `/market/level2` message read by the general object walk, which reads every frame.
pub(super) fn general_diff<'a>(
    frame: &'a [u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<Message<'a>, DecodeError> {
    out.clear();
    let (mut symbol, mut unheld): (&[u8], _) = (b"", None);
    let envelope = walk(frame, |walker, key, seen| {
        match key {
            b"symbol" => symbol = seen.string(walker, SYMBOL, "symbol")?,
            b"sequenceStart" => out.first_id = seen.unsigned(walker, FIRST_ID, "sequenceStart")?,
            b"sequenceEnd" => out.last_id = seen.unsigned(walker, LAST_ID, "sequenceEnd")?,
            b"time" => out.exchange_time_ns = seen.millis_time(walker, TIME, "time")?,
            b"changes" => {
                seen.mark(CHANGES, "changes")?;
                read_changes(walker, max_levels, out, &mut unheld)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    })?;
    if let Some(message) = classify(&envelope)? {
        return Ok(message);
    }
    if topic_symbol(envelope.topic, subscribe::DIFF_CHANNEL.as_bytes()).is_none() {
        return Ok(Message::Ignored);
    }
    envelope.seen.require(&EVENT_KEYS)?;
    if out.first_id > out.last_id {
        return Err(DecodeError::Invalid(
            "a message with sequenceStart greater than sequenceEnd",
        ));
    }
    let ids = out.change_ids.bids.iter().chain(&out.change_ids.asks);
    if ids.clone().any(|&id| id > out.last_id) {
        return Err(DecodeError::Invalid("a change numbered after its message's sequenceEnd"));
    }
    Ok(book_or_loss(symbol, unheld))
}

impl Decode for Kucoin {
    /// `/spotMarket/level2Depth5|50`: a whole top N each push, timed by its `timestamp`
    /// (its sequence: the spot pushes carry no other).
    fn decode<'a>(
        frame: &'a [u8],
        depth: usize,
        out: &mut TopBook,
    ) -> Result<Message<'a>, DecodeError> {
        let mut unheld = None;
        let envelope = walk(frame, |walker, key, seen| {
            match key {
                b"timestamp" => {
                    out.exchange_time_ns = seen.millis_time(walker, TIME, "timestamp")?;
                }
                b"bids" => {
                    seen.mark(BIDS, "bids")?;
                    side_unless_unheld(walker, &mut unheld, |walker| {
                        walker.shaped_levels(crate::json::LevelShape::Pair, Side::Bid, depth, &mut out.bids)
                    })?;
                }
                b"asks" => {
                    seen.mark(ASKS, "asks")?;
                    side_unless_unheld(walker, &mut unheld, |walker| {
                        walker.shaped_levels(crate::json::LevelShape::Pair, Side::Ask, depth, &mut out.asks)
                    })?;
                }
                _ => return Ok(false),
            }
            Ok(true)
        })?;
        if let Some(message) = classify(&envelope)? {
            return Ok(message);
        }
        let topic = envelope.topic;
        let Some(symbol) = subscribe::TOP_CHANNELS
            .iter()
            .find_map(|channel| topic_symbol(topic, channel.as_bytes()))
        else {
            return Ok(Message::Ignored);
        };
        envelope.seen.require(&TOP_KEYS)?;
        out.venue_sequence = out.exchange_time_ns / 1_000_000;
        Ok(book_or_loss(symbol, unheld))
    }

    /// `/market/level2`: one message of changes, each numbered.
    fn decode_diff<'a>(
        frame: &'a [u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<Message<'a>, DecodeError> {
        match fast_diff(frame, max_levels, out) {
            Some(message) => Ok(message),
            None => general_diff(frame, max_levels, out),
        }
    }

    /// `GET /api/v1/market/orderbook/level2_100` (or the whole book): `{"code":"200000",
    /// "data":{"time":…,"sequence":"…","bids":[…],"asks":[…]}}`, each side best first.
    fn decode_snapshot(
        body: &[u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<(), DecodeError> {
        const KEYS: [(u32, &str); 3] = [(SEQUENCE, "sequence"), (BIDS, "bids"), (ASKS, "asks")];
        out.clear();
        let mut walker = Walker::new(body);
        let mut seen = Seen::default();
        let mut code: &[u8] = b"";
        walker.object(|walker, key| {
            match key {
                b"code" => code = walker.string()?,
                b"data" if walker.peek()? == b'{' => walker.object(|walker, key| {
                    let shape = crate::json::LevelShape::Pair;
                    match key {
                        b"sequence" => out.set_id(seen.unsigned(walker, SEQUENCE, "sequence")?),
                        b"bids" => {
                            seen.mark(BIDS, "bids")?;
                            walker.all_shaped_levels(shape, Some(Side::Bid), max_levels, &mut out.bids, None)?;
                        }
                        b"asks" => {
                            seen.mark(ASKS, "asks")?;
                            walker.all_shaped_levels(shape, Some(Side::Ask), max_levels, &mut out.asks, None)?;
                        }
                        _ => walker.skip_value()?,
                    }
                    Ok(())
                })?,
                _ => walker.skip_value()?,
            }
            Ok(())
        })?;
        walker.finish()?;
        if code != b"200000" {
            return Err(DecodeError::Invalid("a REST answer whose code is not 200000"));
        }
        seen.require(&KEYS)
    }
}
