//! Bitget's frames decoded into books and typed errors ([`Decode`]): one walk of the
//! message, its first `data` element's sides read as levels while the walk goes (the
//! `arg` that says what the message is may come after them), then classified.

use super::*;
use crate::venue::wire::{book_or_loss, side_unless_unheld};

/// The text a `ping` is answered with.
pub(super) const PONG: &[u8] = b"pong";

/// The diff channel: a snapshot, then updates.
pub(super) const DIFF_CHANNEL: &str = "books";

/// The snapshot channels and their levels a side: a whole top N every push.
pub(super) const TOP_CHANNELS: [(&str, usize); 3] = [("books1", 1), ("books5", 5), ("books15", 15)];

pub(super) const LEVEL: LevelShape = LevelShape::Pair;

// Top-level members.
const ARG: u32 = 0;
const ACTION: u32 = 1;
const DATA: u32 = 2;
const EVENT: u32 = 3;
const OP: u32 = 4;

// Members of the `data` element.
const ASKS: u32 = 5;
const BIDS: u32 = 6;
const SEQ: u32 = 7;
const PSEQ: u32 = 8;
const CHECKSUM: u32 = 9;
const TS: u32 = 10;

// Members of `arg`.
const CHANNEL: u32 = 11;
const INST_ID: u32 = 12;

/// What a book message's `data` element must hold.
const BOOK_KEYS: [(u32, &str); 2] = [(ASKS, "asks"), (BIDS, "bids")];

/// A frame's members other than the sides, by the general object walk: any order,
/// unknown members skipped.
#[derive(Default)]
struct Members<'a> {
    seen: Seen,
    channel: &'a [u8],
    /// `arg.instId`: the stream.
    inst_id: &'a [u8],
    action: &'a [u8],
    event: &'a [u8],
    op: &'a [u8],
    /// `data` elements.
    elements: usize,
    seq: u64,
    pseq: u64,
    checksum: i64,
    ts: u64,
    /// The first number of a side that a `FixedPoint` cannot hold: the message is its
    /// book's alone to lose.
    unheld: Option<DecodeError>,
}

/// Walks `frame`, handing each side of the first `data` element to `side`.
fn walk<'a>(
    frame: &'a [u8],
    mut side: impl FnMut(&mut Walker<'a>, Side) -> Result<(), DecodeError>,
) -> Result<Members<'a>, DecodeError> {
    let mut walker = Walker::new(frame);
    let mut members = Members::default();
    walker.object(|walker, key| {
        let seen = &mut members.seen;
        match key {
            b"arg" => {
                seen.mark(ARG, "arg")?;
                walker.object(|walker, key| {
                    match key {
                        b"channel" => {
                            members.channel = members.seen.string(walker, CHANNEL, "channel")?;
                        }
                        b"instId" => {
                            members.inst_id = members.seen.string(walker, INST_ID, "instId")?;
                        }
                        _ => walker.skip_value()?,
                    }
                    Ok(())
                })?;
            }
            b"action" => members.action = seen.string(walker, ACTION, "action")?,
            b"event" => members.event = seen.string(walker, EVENT, "event")?,
            b"op" => members.op = seen.string(walker, OP, "op")?,
            b"data" => {
                seen.mark(DATA, "data")?;
                walker.elements(|walker| {
                    members.elements += 1;
                    if members.elements > 1 || walker.peek()? != b'{' {
                        return walker.skip_value(); // refused below if a book's
                    }
                    walker.object(|walker, key| data_member(walker, key, &mut members, &mut side))
                })?;
            }
            _ => walker.skip_value()?,
        }
        Ok(())
    })?;
    walker.finish()?;
    Ok(members)
}

/// A member of the `data` element: a side, an id, the checksum, the time.
fn data_member<'a>(
    walker: &mut Walker<'a>,
    key: &[u8],
    members: &mut Members<'a>,
    side: &mut impl FnMut(&mut Walker<'a>, Side) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    let seen = &mut members.seen;
    match key {
        b"asks" => {
            seen.mark(ASKS, "asks")?;
            side_unless_unheld(walker, &mut members.unheld, |walker| {
                side(walker, Side::Ask)
            })?;
        }
        b"bids" => {
            seen.mark(BIDS, "bids")?;
            side_unless_unheld(walker, &mut members.unheld, |walker| {
                side(walker, Side::Bid)
            })?;
        }
        b"seq" => members.seq = seen.unsigned(walker, SEQ, "seq")?,
        b"pseq" => members.pseq = seen.unsigned(walker, PSEQ, "pseq")?,
        b"checksum" => members.checksum = seen.signed(walker, CHECKSUM, "checksum")?,
        b"ts" => members.ts = seen.unsigned(walker, TS, "ts")?,
        _ => walker.skip_value()?,
    }
    Ok(())
}

/// The fractional digits of the first level of `side` (a side's text, `[["2.4400",
/// "195.6669"],…]`), as written: the precision of the book's numbers, which Bitget writes
/// all alike (trailing zeros kept), for its checksum's text. Read from the one level, not
/// every number: the levels themselves are read by the fast reader, which keeps no text;
/// a snapshot's first level is never a delete, and the feed keeps a book's most digits
/// seen across its messages. None for an empty side.
fn first_level_decimals(side: &[u8]) -> WireDecimals {
    let fraction_digits =
        |text: &[u8]| memchr::memchr(b'.', text).map_or(0, |dot| (text.len() - dot - 1) as u8);
    let mut walker = Walker::new(side);
    let mut read = || -> Result<WireDecimals, DecodeError> {
        walker.expect(b'[', "'['")?;
        walker.expect(b'[', "'['")?;
        let price = walker.string()?;
        walker.expect(b',', "','")?;
        let amount = walker.string()?;
        Ok(WireDecimals {
            price: fraction_digits(price),
            amount: fraction_digits(amount),
            ..WireDecimals::default()
        })
    };
    read().unwrap_or_default()
}

impl<'a> Members<'a> {
    /// `ts`, the book's time in ms, as ns (0 where absent).
    fn time_ns(&self) -> Result<u64, DecodeError> {
        match self.seen.has(TS) {
            true => timestamps::nanos_from_millis(self.ts),
            false => Ok(0),
        }
    }

    /// What a frame that is no book message of `channel` said.
    fn control(&self) -> Result<Message<'a>, DecodeError> {
        match self.event {
            b"subscribe" if self.inst_id.is_empty() => Err(DecodeError::MissingKey("instId")),
            b"subscribe" => Ok(Message::SubscribeResult {
                accepted: true,
                acked: Acked::Stream(self.inst_id),
            }),
            // An unsubscription's answer, or its refusal (of a subscription already gone),
            // changes nothing.
            b"unsubscribe" => Ok(Message::Ignored),
            b"error" if self.op == b"unsubscribe" => Ok(Message::Ignored),
            // Only subscriptions are asked for: an error refuses one, naming it where it can.
            b"error" => Ok(Message::SubscribeResult {
                accepted: false,
                acked: match self.inst_id {
                    b"" => Acked::Oldest,
                    inst_id => Acked::Stream(inst_id),
                },
            }),
            b"" if self.seen.has(ARG) => Ok(Message::Ignored), // another channel's push
            b"" => Err(DecodeError::UnknownMessage("Bitget v2 message")),
            _ => Ok(Message::Ignored),
        }
    }

    /// The checks every book message passes: one `data` element with both sides, of the
    /// instrument its `arg` names.
    fn check_book(&self) -> Result<(), DecodeError> {
        if !self.seen.has(DATA) {
            return Err(DecodeError::MissingKey("data"));
        }
        if self.elements != 1 {
            return Err(DecodeError::Invalid(
                "a book message holds one data element",
            ));
        }
        self.seen.require(&BOOK_KEYS)?;
        if self.inst_id.is_empty() {
            return Err(DecodeError::MissingKey("instId"));
        }
        Ok(())
    }

    /// The checksum a message claims: `None` where it sends none, or 0.
    fn claimed_checksum(&self) -> Result<Option<u32>, DecodeError> {
        let checksum = i32::try_from(self.checksum)
            .map_err(|_| DecodeError::Invalid("a checksum of 32 bits, signed"))?;
        // The CRC's bits, as the unsigned value the book's checksum is compared with.
        Ok((checksum != 0).then_some(checksum as u32))
    }

    /// The book, or its loss where a number could not be held.
    fn book(self) -> Message<'a> {
        book_or_loss(self.inst_id, self.unheld)
    }
}

/// One frame of a `books` connection: a snapshot or an update, every level in wire order.
pub(super) fn decode_diff_message<'a>(
    frame: &'a [u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<Message<'a>, DecodeError> {
    if frame == PONG {
        return Ok(Message::Heartbeat);
    }
    out.clear();
    let BookUpdate {
        bids,
        asks,
        decimals,
        ..
    } = out;
    let members = walk(frame, |walker, side| {
        let levels = match side {
            Side::Bid => &mut *bids,
            Side::Ask => &mut *asks,
        };
        let start = walker.position();
        walker.all_levels(None, max_levels, levels)?;
        let first = first_level_decimals(&frame[start..walker.position()]);
        decimals.price = decimals.price.max(first.price);
        decimals.amount = decimals.amount.max(first.amount);
        Ok(())
    })?;
    if members.channel != DIFF_CHANNEL.as_bytes() || members.seen.has(EVENT) {
        return members.control();
    }
    members.check_book()?;
    out.is_snapshot = match members.action {
        b"snapshot" => true,
        b"update" => false,
        b"" => return Err(DecodeError::MissingKey("action")),
        _ => return Err(DecodeError::Invalid("a book message's action")),
    };
    match (members.seen.has(SEQ), members.seen.has(PSEQ)) {
        // A snapshot starts a chain; an update continues one, never from 0.
        (true, _) if out.is_snapshot => out.set_id(members.seq),
        (true, true) if members.pseq == 0 => {
            return Err(DecodeError::Invalid("an update's pseq of 0"));
        }
        (true, true) => (out.first_id, out.last_id) = (members.pseq, members.seq),
        (true, false) => return Err(DecodeError::MissingKey("pseq")),
        (false, true) => return Err(DecodeError::MissingKey("seq")),
        (false, false) => {}
    }
    out.checksum = members.claimed_checksum()?;
    out.exchange_time_ns = members.time_ns()?;
    if out.is_snapshot && members.unheld.is_none() {
        check_sorted(Side::Bid, &out.bids)?;
        check_sorted(Side::Ask, &out.asks)?;
    }
    Ok(members.book())
}

/// A top-N push in the layout Bitget sends (the 2026 recordings': these members in this
/// order, no whitespace, a `checksum` after the sides where the message has one), read by
/// comparing the bytes between the values with the layout instead of walking the objects,
/// which cost as much as reading a `books5` message's ten levels. `None` for any other
/// frame, or an error in this one; then the general walk reads it, and gives the same
/// answer for every frame this accepts.
pub(super) fn decode_usual_top<'a>(
    frame: &'a [u8],
    depth: usize,
    out: &mut TopBook,
) -> Option<Message<'a>> {
    let mut walker = Walker::new(frame);
    walker
        .skip_exactly(br#"{"action":"snapshot","arg":{"instType":"#)
        .then_some(())?;
    walker.string().ok()?;
    walker.skip_exactly(br#","channel":"#).then_some(())?;
    let channel = walker.string().ok()?;
    TOP_CHANNELS
        .iter()
        .any(|(top, _)| channel == top.as_bytes())
        .then_some(())?;
    walker.skip_exactly(br#","instId":"#).then_some(())?;
    let inst_id = walker.string().ok()?;
    (!inst_id.is_empty()).then_some(())?;
    walker
        .skip_exactly(br#"},"data":[{"asks":"#)
        .then_some(())?;
    walker
        .shaped_levels(LEVEL, Side::Ask, depth, &mut out.asks)
        .ok()?;
    walker.skip_exactly(br#","bids":"#).then_some(())?;
    walker
        .shaped_levels(LEVEL, Side::Bid, depth, &mut out.bids)
        .ok()?;
    if walker.skip_exactly(br#","checksum":"#) {
        i32::try_from(walker.signed().ok()?).ok()?;
    }
    walker.skip_exactly(br#","ts":"#).then_some(())?;
    out.exchange_time_ns = timestamps::nanos_from_millis(walker.unsigned().ok()?).ok()?;
    walker.skip_exactly(br#","seq":"#).then_some(())?;
    out.venue_sequence = walker.unsigned().ok()?;
    if walker.skip_exactly(br#","pseq":"#) {
        walker.unsigned().ok()?;
    }
    // The message's own time is skipped, as the general walk skips it: a JSON number.
    walker.skip_exactly(br#"}],"ts":"#).then_some(())?;
    walker.skip_value().ok()?;
    walker.skip_exactly(b"}").then_some(())?;
    walker.finish().ok()?;
    Some(Message::Book { stream: inst_id })
}

/// One frame of a `books1`/`books5`/`books15` connection: the top `depth` levels a side
/// into `out`, ordered by `seq` (by `ts` where a message has none).
pub(super) fn decode_top_message<'a>(
    frame: &'a [u8],
    depth: usize,
    out: &mut TopBook,
) -> Result<Message<'a>, DecodeError> {
    if frame == PONG {
        return Ok(Message::Heartbeat);
    }
    out.clear();
    if let Some(message) = decode_usual_top(frame, depth, out) {
        return Ok(message);
    }
    decode_top_general(frame, depth, out)
}

/// A top-N push by the general object walk.
pub(super) fn decode_top_general<'a>(
    frame: &'a [u8],
    depth: usize,
    out: &mut TopBook,
) -> Result<Message<'a>, DecodeError> {
    out.clear();
    let members = walk(frame, |walker, side| {
        let levels = match side {
            Side::Bid => &mut out.bids,
            Side::Ask => &mut out.asks,
        };
        walker.shaped_levels(LEVEL, side, depth, levels)
    })?;
    let top_channel = TOP_CHANNELS
        .iter()
        .any(|(channel, _)| members.channel == channel.as_bytes());
    if !top_channel || members.seen.has(EVENT) {
        return members.control();
    }
    members.check_book()?;
    out.venue_sequence = match members.seen.has(SEQ) {
        true => members.seq,
        false => members.ts,
    };
    out.exchange_time_ns = members.time_ns()?;
    Ok(members.book())
}

impl<M: Market> Decode for Bitget<M> {
    fn decode<'a>(
        frame: &'a [u8],
        depth: usize,
        out: &mut TopBook,
    ) -> Result<Message<'a>, DecodeError> {
        decode_top_message(frame, depth, out)
    }

    fn decode_diff<'a>(
        frame: &'a [u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<Message<'a>, DecodeError> {
        decode_diff_message(frame, max_levels, out)
    }
}
