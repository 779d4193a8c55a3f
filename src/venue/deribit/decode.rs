//! Deribit's frames decoded into books and typed errors ([`Decode`]): one walk of the
//! JSON-RPC message, the book's sides read as the walk meets them (the `channel` that says
//! what they are may come after them), then classified by method, answer or error.

use super::subscribe::{AUTH_REQUEST_ID, HEARTBEAT_REQUEST_ID, PLATFORM_STATE_REQUEST_ID, TEST_REQUEST_ID};
use super::*;
use crate::venue::wire::{book_or_loss, side_unless_unheld};
use crate::fixed::Measure;

/// The answer to the venue's `test_request`, without which it closes the connection.
pub(super) const TEST_ANSWER: &str =
    r#"{"jsonrpc":"2.0","id":4000000003,"method":"public/test","params":{}}"#;

/// The channel of the venue's maintenance notices.
pub(super) const PLATFORM_STATE: &str = "platform_state";

// Top-level members.
const ID: u32 = 0;
const METHOD: u32 = 1;
const PARAMS: u32 = 2;
const RESULT: u32 = 3;
const ERROR: u32 = 4;
// Members of `params`.
const CHANNEL: u32 = 5;
const DATA: u32 = 6;
const KIND: u32 = 7;
// Members of `params.data`.
const TYPE: u32 = 8;
const TIMESTAMP: u32 = 9;
const CHANGE_ID: u32 = 10;
const PREV_CHANGE_ID: u32 = 11;
const BIDS: u32 = 12;
const ASKS: u32 = 13;
const MAINTENANCE: u32 = 14;

/// What a book notification's `data` must hold.
const BOOK_KEYS: [(u32, &str); 3] = [(CHANGE_ID, "change_id"), (BIDS, "bids"), (ASKS, "asks")];

/// A message's members other than the book's sides.
#[derive(Default)]
struct Members<'a> {
    seen: Seen,
    id: Option<u64>,
    method: &'a [u8],
    channel: &'a [u8],
    /// `params.type` (a heartbeat's).
    kind: &'a [u8],
    /// `params.data.type` (a book's: `snapshot` or `change`; none on grouped windows).
    book_type: &'a [u8],
    timestamp: u64,
    change_id: u64,
    prev_change_id: u64,
    maintenance: bool,
    /// `result`, where it is an array (a subscription's answer), as sent.
    listed: Option<&'a [u8]>,
    /// The first number of a side that a `FixedPoint` cannot hold: the message is its
    /// book's alone to lose.
    unheld: Option<DecodeError>,
}

/// One level, `[price, amount]` or `[action, price, amount]` (a `delete` is amount 0
/// whatever it carries), its numbers exact from their text, exponent or not: by
/// [`compact_level`] where the level is written as Deribit writes it, else by
/// [`general_level`], which reads it the same way where both do.
#[inline(always)]
fn level(walker: &mut Walker<'_>) -> Result<Level, DecodeError> {
    let start = walker.position();
    match compact_level(walker) {
        Some(level) => Ok(level),
        None => {
            walker.rewind(start);
            general_level(walker)
        }
    }
}

/// A level without whitespace, its numbers in the shape the fast parsers read (the
/// recordings' every level): the bytes between them compared with the layout, instead of
/// each found past whitespace; about half a level's cost. `None`, at any place, for
/// anything else.
#[inline(always)]
pub(super) fn compact_level(walker: &mut Walker<'_>) -> Option<Level> {
    walker.skip_exactly(b"[").then_some(())?;
    let delete = match walker.skip_exactly(br#"""#) {
        false => false,
        true if walker.skip_exactly(br#"new","#) || walker.skip_exactly(br#"change","#) => false,
        true if walker.skip_exactly(br#"delete","#) => true,
        true => return None,
    };
    let price = walker.compact_fixed_point()?;
    walker.skip_exactly(b",").then_some(())?;
    let amount = walker.compact_fixed_point()?;
    walker.skip_exactly(b"]").then_some(())?;
    Some(Level {
        price,
        amount: if delete { Default::default() } else { amount },
    })
}

/// [`level`] by the general walk: whitespace anywhere JSON allows, any number.
pub(super) fn general_level(walker: &mut Walker<'_>) -> Result<Level, DecodeError> {
    walker.expect(b'[', "'[' opening a level")?;
    let delete = match walker.peek()? {
        b'"' => {
            let delete = match walker.string()? {
                b"new" | b"change" => false,
                b"delete" => true,
                _ => return Err(DecodeError::Invalid("a level's action: new, change or delete")),
            };
            walker.expect(b',', "','")?;
            delete
        }
        _ => false,
    };
    let price = walker.number_or_scientific(Measure::Price)?;
    walker.expect(b',', "','")?;
    let amount = walker.number_or_scientific(Measure::Amount)?;
    walker.expect(b']', "']' closing a level")?;
    Ok(Level {
        price,
        amount: if delete { Default::default() } else { amount },
    })
}

/// A side of changes, every level in wire order, at most `limit`.
pub(super) fn changes(walker: &mut Walker<'_>, limit: usize, out: &mut Vec<Level>) -> Result<(), DecodeError> {
    out.clear();
    walker.elements(|walker| {
        if out.len() == limit {
            return Err(DecodeError::TooManyLevels(limit));
        }
        out.push(level(walker)?);
        Ok(())
    })
}

/// A whole side, best first, every level's amount above 0: its best `depth` levels into
/// `out`, the rest checked.
pub(super) fn best_levels(
    walker: &mut Walker<'_>,
    side: Side,
    depth: usize,
    out: &mut crate::book::Levels,
) -> Result<(), DecodeError> {
    out.clear();
    let mut previous = None;
    walker.elements(|walker| {
        let level = level(walker)?;
        if level.amount.is_zero() {
            return Err(DecodeError::Invalid("a window's level of amount 0"));
        }
        if let Some(previous) = previous
            && !side.is_better(previous, level.price)
        {
            return Err(DecodeError::Unsorted(side));
        }
        previous = Some(level.price);
        if out.len() < depth {
            out.push(level);
        }
        Ok(())
    })
}

/// Walks `frame`, handing each side of the book in `params.data` to `side`.
fn walk<'a>(
    frame: &'a [u8],
    mut side: impl FnMut(&mut Walker<'a>, Side) -> Result<(), DecodeError>,
) -> Result<Members<'a>, DecodeError> {
    let mut walker = Walker::new(frame);
    let mut members = Members::default();
    walker.object(|walker, key| {
        match key {
            b"id" => {
                members.seen.mark(ID, "id")?;
                members.id = match walker.peek()? {
                    b'n' => walker.null().map(|()| None)?,
                    _ => Some(walker.unsigned()?),
                };
            }
            b"method" => members.method = members.seen.string(walker, METHOD, "method")?,
            b"result" => {
                members.seen.mark(RESULT, "result")?;
                let start = walker.position();
                let array = walker.peek()? == b'[';
                walker.skip_value()?;
                if array {
                    members.listed = Some(&frame[start..walker.position()]);
                }
            }
            b"error" => {
                members.seen.mark(ERROR, "error")?;
                walker.skip_value()?;
            }
            b"params" => {
                members.seen.mark(PARAMS, "params")?;
                walker.object(|walker, key| params_member(walker, key, &mut members, &mut side))?;
            }
            _ => walker.skip_value()?,
        }
        Ok(())
    })?;
    walker.finish()?;
    Ok(members)
}

/// A member of `params`: the channel, the notification's data, a heartbeat's type.
fn params_member<'a>(
    walker: &mut Walker<'a>,
    key: &[u8],
    members: &mut Members<'a>,
    side: &mut impl FnMut(&mut Walker<'a>, Side) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    match key {
        b"channel" => members.channel = members.seen.string(walker, CHANNEL, "channel")?,
        b"type" => members.kind = members.seen.string(walker, KIND, "type")?,
        b"data" if walker.peek()? == b'{' => {
            members.seen.mark(DATA, "data")?;
            walker.object(|walker, key| data_member(walker, key, members, side))?;
        }
        _ => walker.skip_value()?,
    }
    Ok(())
}

/// A member of a notification's `data`.
fn data_member<'a>(
    walker: &mut Walker<'a>,
    key: &[u8],
    members: &mut Members<'a>,
    side: &mut impl FnMut(&mut Walker<'a>, Side) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    let seen = &mut members.seen;
    match key {
        b"type" => members.book_type = seen.string(walker, TYPE, "type")?,
        b"timestamp" => members.timestamp = seen.unsigned(walker, TIMESTAMP, "timestamp")?,
        b"change_id" => members.change_id = seen.unsigned(walker, CHANGE_ID, "change_id")?,
        b"prev_change_id" => {
            members.prev_change_id = seen.unsigned(walker, PREV_CHANGE_ID, "prev_change_id")?;
        }
        b"maintenance" => members.maintenance = seen.boolean(walker, MAINTENANCE, "maintenance")?,
        b"bids" => {
            seen.mark(BIDS, "bids")?;
            side_unless_unheld(walker, &mut members.unheld, |walker| side(walker, Side::Bid))?;
        }
        b"asks" => {
            seen.mark(ASKS, "asks")?;
            side_unless_unheld(walker, &mut members.unheld, |walker| side(walker, Side::Ask))?;
        }
        _ => walker.skip_value()?,
    }
    Ok(())
}

impl<'a> Members<'a> {
    /// What a message other than a book notification said; `None` for a book's.
    fn classify(&self) -> Result<Option<Message<'a>>, DecodeError> {
        let answered = |id: u64| {
            [UNSUBSCRIBE_REQUEST_ID, HEARTBEAT_REQUEST_ID, PLATFORM_STATE_REQUEST_ID, TEST_REQUEST_ID, AUTH_REQUEST_ID]
                .contains(&id)
        };
        Ok(Some(match self.method {
            b"subscription" if self.channel.starts_with(b"book.") => return Ok(None),
            b"subscription" if self.channel == PLATFORM_STATE.as_bytes() => match self.maintenance {
                true => Message::Reconnect,
                false => Message::Ignored,
            },
            b"subscription" if self.seen.has(CHANNEL) => Message::Ignored,
            b"subscription" => return Err(DecodeError::MissingKey("channel")),
            b"heartbeat" if self.kind == b"test_request" => Message::Answer(TEST_ANSWER),
            b"heartbeat" => Message::Heartbeat,
            b"" if self.seen.has(ERROR) => match self.id {
                // An unsubscription's refusal (of a subscription already gone) changes
                // nothing; a refused heartbeat or notice subscription costs the connection.
                Some(UNSUBSCRIBE_REQUEST_ID) => Message::Ignored,
                Some(id) if answered(id) => Message::SubscribeResult { accepted: false, acked: Acked::Oldest },
                Some(request) => Message::SubscribeResult { accepted: false, acked: Acked::Request(request) },
                None => Message::SubscribeResult { accepted: false, acked: Acked::Oldest },
            },
            b"" if self.seen.has(RESULT) => match (self.id, self.listed) {
                (Some(id), _) if answered(id) => Message::Ignored,
                (Some(request), Some(streams)) => Message::SubscribeResult {
                    accepted: true,
                    acked: Acked::Listed { request, streams },
                },
                _ => Message::Ignored,
            },
            b"" => return Err(DecodeError::UnknownMessage("Deribit JSON-RPC message")),
            _ => Message::Ignored,
        }))
    }

    /// The checks every book notification passes.
    fn check_book(&self) -> Result<(), DecodeError> {
        if !self.seen.has(DATA) {
            return Err(DecodeError::MissingKey("data"));
        }
        self.seen.require(&BOOK_KEYS)
    }

    fn time_ns(&self) -> Result<u64, DecodeError> {
        match self.seen.has(TIMESTAMP) {
            true => timestamps::nanos_from_millis(self.timestamp),
            false => Ok(0),
        }
    }

    /// The book, or its loss where a number could not be held.
    fn book(self) -> Message<'a> {
        book_or_loss(self.channel, self.unheld)
    }
}

/// One frame of a diff connection: a snapshot or a change, every level in wire order.
pub(super) fn decode_diff_message<'a>(
    frame: &'a [u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<Message<'a>, DecodeError> {
    out.clear();
    let members = walk(frame, |walker, side| {
        let levels = match side {
            Side::Bid => &mut out.bids,
            Side::Ask => &mut out.asks,
        };
        changes(walker, max_levels, levels)
    })?;
    if let Some(message) = members.classify()? {
        return Ok(message);
    }
    members.check_book()?;
    // A grouped window (no type) is a whole book, as a snapshot is; a snapshot carrying a
    // `prev_change_id` starts a chain all the same.
    out.is_snapshot = match members.book_type {
        b"snapshot" | b"" => true,
        b"change" => false,
        _ => return Err(DecodeError::Invalid("a book's type: snapshot or change")),
    };
    match out.is_snapshot {
        true => out.set_id(members.change_id),
        false if !members.seen.has(PREV_CHANGE_ID) => {
            return Err(DecodeError::MissingKey("prev_change_id"));
        }
        false => (out.first_id, out.last_id) = (members.prev_change_id, members.change_id),
    }
    out.exchange_time_ns = members.time_ns()?;
    if out.is_snapshot && members.unheld.is_none() {
        check_sorted(Side::Bid, &out.bids)?;
        check_sorted(Side::Ask, &out.asks)?;
        // A snapshot's levels are all `new`; a zero amount in one is no level.
        if out.bids.iter().chain(&out.asks).any(|level| level.amount.is_zero()) {
            return Err(DecodeError::Invalid("a snapshot's level of amount 0"));
        }
    }
    Ok(members.book())
}

/// One frame of a snapshot connection: a grouped window's top `depth` levels a side,
/// ordered by `change_id`.
pub(super) fn decode_top_message<'a>(
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
        best_levels(walker, side, depth, levels)
    })?;
    if let Some(message) = members.classify()? {
        return Ok(message);
    }
    members.check_book()?;
    out.venue_sequence = members.change_id;
    out.exchange_time_ns = members.time_ns()?;
    Ok(members.book())
}

impl Decode for Deribit {
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
