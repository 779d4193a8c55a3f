//! OKX's frames decoded into books and typed errors ([`Decode`]).

use super::*;
use super::sim::{DIFF_CHANNEL, TOP_CHANNEL};

/// The notice OKX sends before a service upgrade closes the connection.
pub(super) const SERVICE_UPGRADE: &[u8] = b"64008";

pub(super) const LEVEL: LevelShape = LevelShape::PairThenMore;

// Top-level members.
pub(super) const ARG: u32 = 0;
pub(super) const ACTION: u32 = 1;
pub(super) const DATA: u32 = 2;
pub(super) const EVENT: u32 = 3;
pub(super) const CODE: u32 = 4;
pub(super) const ID: u32 = 5;

// Members of a `data` element.
pub(super) const ASKS: u32 = 6;
pub(super) const BIDS: u32 = 7;
pub(super) const SEQ_ID: u32 = 8;
pub(super) const PREV_SEQ_ID: u32 = 9;
pub(super) const CHECKSUM: u32 = 10;
pub(super) const TS: u32 = 11;
pub(super) const INST_ID: u32 = 12;

// Members of `arg`.
pub(super) const CHANNEL: u32 = 13;
pub(super) const ARG_INST_ID: u32 = 14;

/// What a book message's `data` element must hold.
pub(super) const BOOK_KEYS: [(u32, &str); 2] = [(ASKS, "asks"), (BIDS, "bids")];

/// A frame's members other than the sides, by the general object walk: any order,
/// unknown members skipped.
#[derive(Default)]
pub(super) struct Members<'a> {
    seen: Seen,
    channel: &'a [u8],
    /// `arg.instId`: the stream.
    inst_id: &'a [u8],
    /// `data[0].instId`, where sent (`books5`).
    data_inst_id: &'a [u8],
    action: &'a [u8],
    event: &'a [u8],
    code: &'a [u8],
    id: &'a [u8],
    /// `data` elements.
    elements: usize,
    seq_id: u64,
    prev_seq_id: i64,
    checksum: i64,
    ts: u64,
}

/// Walks `frame`, handing each side of the first `data` element to `side`.
pub(super) fn walk<'a>(
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
                            members.inst_id = members.seen.string(walker, ARG_INST_ID, "instId")?;
                        }
                        _ => walker.skip_value()?,
                    }
                    Ok(())
                })?;
            }
            b"action" => members.action = seen.string(walker, ACTION, "action")?,
            b"event" => members.event = seen.string(walker, EVENT, "event")?,
            b"code" => members.code = seen.string(walker, CODE, "code")?,
            b"id" => members.id = seen.string(walker, ID, "id")?,
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

/// A member of a `data` element: a side, an id, the checksum, the time.
pub(super) fn data_member<'a>(
    walker: &mut Walker<'a>,
    key: &[u8],
    members: &mut Members<'a>,
    side: &mut impl FnMut(&mut Walker<'a>, Side) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    let seen = &mut members.seen;
    match key {
        b"asks" => {
            seen.mark(ASKS, "asks")?;
            side(walker, Side::Ask)?;
        }
        b"bids" => {
            seen.mark(BIDS, "bids")?;
            side(walker, Side::Bid)?;
        }
        b"seqId" => members.seq_id = seen.unsigned(walker, SEQ_ID, "seqId")?,
        b"prevSeqId" => members.prev_seq_id = seen.signed(walker, PREV_SEQ_ID, "prevSeqId")?,
        b"checksum" => members.checksum = seen.signed(walker, CHECKSUM, "checksum")?,
        b"ts" => members.ts = seen.unsigned(walker, TS, "ts")?,
        b"instId" => members.data_inst_id = seen.string(walker, INST_ID, "instId")?,
        _ => walker.skip_value()?,
    }
    Ok(())
}

impl<'a> Members<'a> {
    /// `ts`, the book's time in ms, as ns (0 where absent).
    fn time_ns(&self) -> Result<u64, DecodeError> {
        match self.seen.has(TS) {
            true => timestamps::nanos_from_millis(self.ts),
            false => Ok(0),
        }
    }

    /// What a frame that is no book message said.
    fn control(&self) -> Result<Message<'a>, DecodeError> {
        match self.event {
            b"subscribe" if self.inst_id.is_empty() => Err(DecodeError::MissingKey("instId")),
            b"subscribe" => Ok(Message::SubscribeResult {
                accepted: true,
                acked: Acked::Stream(self.inst_id),
            }),
            // An unsubscription's refusal (of a subscription already gone) changes nothing.
            b"error" if self.id == UNSUBSCRIBE_REQUEST_ID.to_string().as_bytes() => {
                Ok(Message::Ignored)
            }
            // Only subscriptions are asked for: an error refuses one, naming only the request.
            b"error" => Ok(Message::SubscribeResult {
                accepted: false,
                acked: Acked::Oldest,
            }),
            b"notice" if self.code == SERVICE_UPGRADE => Ok(Message::Reconnect),
            b"" if self.seen.has(ARG) => Ok(Message::Ignored), // another channel's push
            b"" => Err(DecodeError::UnknownMessage("OKX v5 message")),
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
            return Err(DecodeError::Invalid("a book message holds one data element"));
        }
        self.seen.require(&BOOK_KEYS)?;
        if self.inst_id.is_empty() {
            return Err(DecodeError::MissingKey("instId"));
        }
        if self.seen.has(INST_ID) && self.data_inst_id != self.inst_id {
            return Err(DecodeError::Invalid("a book's instId is its arg's"));
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
}

/// One frame of a `books` connection.
pub(super) fn decode_diff_message<'a>(
    frame: &'a [u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<Message<'a>, DecodeError> {
    if frame == b"pong" {
        return Ok(Message::Heartbeat);
    }
    out.clear();
    let members = walk(frame, |walker, side| {
        let levels = match side {
            Side::Bid => &mut out.bids,
            Side::Ask => &mut out.asks,
        };
        walker.all_shaped_levels(LEVEL, None, max_levels, levels, None)
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
    let sequenced = members.seen.has(SEQ_ID);
    if sequenced != members.seen.has(PREV_SEQ_ID) {
        return Err(DecodeError::Invalid("seqId and prevSeqId together"));
    }
    if sequenced {
        // A snapshot starts a chain (prevSeqId -1); an update continues one.
        (out.first_id, out.last_id) = match (out.is_snapshot, members.prev_seq_id) {
            (true, _) => (members.seq_id, members.seq_id),
            (false, prev) => (
                u64::try_from(prev).map_err(|_| DecodeError::Invalid("an update's prevSeqId"))?,
                members.seq_id,
            ),
        };
    }
    out.checksum = members.claimed_checksum()?;
    out.exchange_time_ns = members.time_ns()?;
    if out.is_snapshot {
        check_sorted(Side::Bid, &out.bids)?;
        check_sorted(Side::Ask, &out.asks)?;
    }
    Ok(Message::Book {
        stream: members.inst_id,
    })
}

/// A `books5` message in the layout OKX sends (every recording's: these members in this
/// order, no whitespace), read by comparing the bytes between the values with the layout
/// instead of walking the objects, which cost as much as reading its ten levels. `None`
/// for any other frame, or an error in this one; then the general walk reads it, and gives
/// the same answer for every frame this accepts.
pub(super) fn decode_usual_top<'a>(frame: &'a [u8], depth: usize, out: &mut TopBook) -> Option<Message<'a>> {
    let mut walker = Walker::new(frame);
    walker
        .skip_exactly(br#"{"arg":{"channel":"books5","instId":"#)
        .then_some(())?;
    let inst_id = walker.string().ok()?;
    walker.skip_exactly(br#"},"data":[{"asks":"#).then_some(())?;
    walker
        .shaped_levels(LEVEL, Side::Ask, depth, &mut out.asks)
        .ok()?;
    walker.skip_exactly(br#","bids":"#).then_some(())?;
    walker
        .shaped_levels(LEVEL, Side::Bid, depth, &mut out.bids)
        .ok()?;
    walker.skip_exactly(br#","instId":"#).then_some(())?;
    (walker.string().ok()? == inst_id).then_some(())?;
    walker.skip_exactly(br#","ts":"#).then_some(())?;
    out.exchange_time_ns = timestamps::nanos_from_millis(walker.unsigned().ok()?).ok()?;
    walker.skip_exactly(br#","seqId":"#).then_some(())?;
    out.venue_sequence = walker.unsigned().ok()?;
    walker.skip_exactly(b"}]}").then_some(())?;
    walker.finish().ok()?;
    Some(Message::Book { stream: inst_id })
}

/// One frame of a `books5` connection: the top `depth` levels a side into `out`.
pub(super) fn decode_top_message<'a>(
    frame: &'a [u8],
    depth: usize,
    out: &mut TopBook,
) -> Result<Message<'a>, DecodeError> {
    if frame == b"pong" {
        return Ok(Message::Heartbeat);
    }
    out.clear();
    if let Some(message) = decode_usual_top(frame, depth, out) {
        return Ok(message);
    }
    decode_top_general(frame, depth, out)
}

/// A `books5` frame by the general object walk.
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
    if members.channel != TOP_CHANNEL.as_bytes() || members.seen.has(EVENT) {
        return members.control();
    }
    members.check_book()?;
    // `seqId` orders the books; a message without one (before 2023) by its time.
    out.venue_sequence = match members.seen.has(SEQ_ID) {
        true => members.seq_id,
        false => members.ts,
    };
    out.exchange_time_ns = members.time_ns()?;
    Ok(Message::Book {
        stream: members.inst_id,
    })
}

/// The REST snapshot: `{"code":"0","msg":"","data":[{"asks":…,"bids":…,"ts":…,"seqId":…}]}`.
pub(super) fn decode_rest_snapshot(
    body: &[u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<(), DecodeError> {
    out.clear();
    let members = walk(body, |walker, side| {
        let levels = match side {
            Side::Bid => &mut out.bids,
            Side::Ask => &mut out.asks,
        };
        walker.all_shaped_levels(LEVEL, Some(side), max_levels, levels, None)
    })?;
    if members.code != b"0" {
        return Err(DecodeError::Invalid("a REST answer with code \"0\""));
    }
    if !members.seen.has(DATA) {
        return Err(DecodeError::MissingKey("data"));
    }
    if members.elements != 1 {
        return Err(DecodeError::Invalid("a snapshot holds one data element"));
    }
    members.seen.require(&BOOK_KEYS)?;
    if !members.seen.has(SEQ_ID) {
        // Without it the snapshot cannot be joined to the updates.
        return Err(DecodeError::MissingKey("seqId"));
    }
    out.set_id(members.seq_id);
    out.exchange_time_ns = members.time_ns()?;
    Ok(())
}

impl Decode for Okx {
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

    fn decode_snapshot(
        body: &[u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<(), DecodeError> {
        decode_rest_snapshot(body, max_levels, out)
    }
}
