//! Binance's frames decoded into books and typed errors ([`Decode`]).

use super::*;

// Bits of `Seen`: the envelope's and control keys, then each payload kind's.
pub(super) const EVENT: u32 = 0;
pub(super) const STREAM: u32 = 1;
pub(super) const DATA: u32 = 2;
pub(super) const RESULT: u32 = 3;
pub(super) const ERROR_CODE: u32 = 4;
pub(super) const REQUEST_ID: u32 = 5;
pub(super) const LAST_UPDATE_ID: u32 = 8;
pub(in crate::venue) const BIDS: u32 = 9;
pub(in crate::venue) const ASKS: u32 = 10;
pub(in crate::venue) const FIRST_ID: u32 = 11;
pub(in crate::venue) const LAST_ID: u32 = 12;
/// An event's time (spot's `E`, futures' `T`): after futures' `pu` (13).
pub(in crate::venue) const TIME: u32 = 14;

/// What one object level (the envelope or the payload) contained.
#[derive(Default)]
pub(in crate::venue) struct Members<'a> {
    pub(in crate::venue) seen: Seen,
    pub(in crate::venue) event: &'a [u8],
    stream: &'a [u8],
    /// An answer's `id`: the request's.
    request_id: u64,
}

/// The payload a connection carries: partial depth books or diff events. The envelope
/// (combined stream, acks, `serverShutdown`) is the same for both.
pub(in crate::venue) trait Payload<'a> {
    /// Reads `key`'s value if `key` belongs to this payload; false: not one of its keys.
    fn member(
        &mut self,
        walker: &mut Walker<'a>,
        key: &'a [u8],
        seen: &mut Seen,
    ) -> Result<bool, DecodeError>;
    /// Whether any of the payload's keys was seen at this level.
    fn any_seen(seen: &Seen) -> bool;
    /// Classifies a payload that had some of its keys: true for a complete book, false for
    /// another stream's payload that shares key names (to be ignored).
    fn classify(members: &Members<'a>) -> Result<bool, DecodeError>;
}

/// `{"lastUpdateId":…,"bids":[…],"asks":[…]}`, keeping the top `depth` a side.
pub(super) struct PartialDepth<'o> {
    pub(super) depth: usize,
    pub(super) out: &'o mut TopBook,
}

pub(super) const PARTIAL_KEYS: [(u32, &str); 3] = [
    (LAST_UPDATE_ID, "lastUpdateId"),
    (BIDS, "bids"),
    (ASKS, "asks"),
];

impl<'a> Payload<'a> for PartialDepth<'_> {
    fn member(
        &mut self,
        walker: &mut Walker<'a>,
        key: &'a [u8],
        seen: &mut Seen,
    ) -> Result<bool, DecodeError> {
        match key {
            b"lastUpdateId" => {
                self.out.venue_sequence = seen.unsigned(walker, LAST_UPDATE_ID, "lastUpdateId")?;
            }
            b"bids" => {
                seen.mark(BIDS, "bids")?;
                walker.levels(Side::Bid, self.depth, &mut self.out.bids)?;
            }
            b"asks" => {
                seen.mark(ASKS, "asks")?;
                walker.levels(Side::Ask, self.depth, &mut self.out.asks)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn any_seen(seen: &Seen) -> bool {
        seen.any(&PARTIAL_KEYS)
    }

    fn classify(members: &Members<'a>) -> Result<bool, DecodeError> {
        if members.seen.has(EVENT) {
            return Err(DecodeError::UnknownMessage("Binance partial depth"));
        }
        members.seen.require(&PARTIAL_KEYS).map(|()| true)
    }
}

/// `{"e":"depthUpdate","E":…,"s":"BNBBTC","U":first,"u":last,"b":[…],"a":[…]}`: every
/// level, zero amounts included. Other streams reuse these key names with other meanings
/// (`bookTicker`: `"u"`, and `"b"`/`"a"` as strings; `aggTrade`: `"a"` a number), so only an
/// array under `b`/`a` is a side, and only a `depthUpdate` event is a diff.
pub(in crate::venue) struct DiffEvent<'o> {
    pub(in crate::venue) max_levels: usize,
    pub(in crate::venue) out: &'o mut BookUpdate,
    /// The key of the event's time in ms (`exchange_time_ns`): spot's `E`, futures' `T`.
    pub(in crate::venue) time_key: &'static [u8],
}

pub(super) const DIFF_KEYS: [(u32, &str); 4] = [(FIRST_ID, "U"), (LAST_ID, "u"), (BIDS, "b"), (ASKS, "a")];

impl<'a> Payload<'a> for DiffEvent<'_> {
    fn member(
        &mut self,
        walker: &mut Walker<'a>,
        key: &'a [u8],
        seen: &mut Seen,
    ) -> Result<bool, DecodeError> {
        match key {
            b"U" => self.out.first_id = seen.unsigned(walker, FIRST_ID, "U")?,
            b"u" => self.out.last_id = seen.unsigned(walker, LAST_ID, "u")?,
            key if key == self.time_key => {
                self.out.exchange_time_ns = seen.millis_time(walker, TIME, "event time")?;
            }
            b"b" | b"a" if walker.peek()? != b'[' => walker.skip_value()?,
            b"b" => {
                seen.mark(BIDS, "b")?;
                walker.all_levels(None, self.max_levels, &mut self.out.bids)?;
            }
            b"a" => {
                seen.mark(ASKS, "a")?;
                walker.all_levels(None, self.max_levels, &mut self.out.asks)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn any_seen(seen: &Seen) -> bool {
        seen.any(&DIFF_KEYS)
    }

    fn classify(members: &Members<'a>) -> Result<bool, DecodeError> {
        classify_depth_update(members, &DIFF_KEYS)
    }

}

/// A `depthUpdate` with every one of `keys` is a book; every key but its event type, a
/// broken one; another event sharing key names (`bookTicker`'s `u`, `aggTrade`'s `a`) is
/// not one.
pub(in crate::venue) fn classify_depth_update(
    members: &Members<'_>,
    keys: &[(u32, &'static str)],
) -> Result<bool, DecodeError> {
    match (members.event, members.seen.require(keys)) {
        (b"depthUpdate", complete) => complete.map(|()| true),
        (b"", Ok(())) => Err(DecodeError::MissingKey("e")),
        _ => Ok(false),
    }
}

/// Reads one member that may appear in a payload (raw, or inside a combined envelope).
pub(super) fn payload_member<'a, P: Payload<'a>>(
    walker: &mut Walker<'a>,
    key: &'a [u8],
    payload: &mut P,
    members: &mut Members<'a>,
) -> Result<(), DecodeError> {
    if payload.member(walker, key, &mut members.seen)? {
        return Ok(());
    }
    if key == b"e" {
        members.seen.mark(EVENT, "e")?;
        members.event = walker.string()?;
    } else {
        walker.skip_value()?;
    }
    Ok(())
}

/// Classifies a payload once all its members are read.
pub(super) fn payload_message<'a, P: Payload<'a>>(
    members: &Members<'a>,
    stream: &'a [u8],
) -> Result<Message<'a>, DecodeError> {
    if P::any_seen(&members.seen) && P::classify(members)? {
        return Ok(Message::Book { stream });
    }
    Ok(match members.event {
        b"serverShutdown" => Message::Reconnect,
        _ => Message::Ignored,
    })
}

/// A frame in the layout Binance sends every push in (all recorded frames: no whitespace,
/// the keys in this order): the payload raw, or combined as `{"stream":…,"data":<payload>}`.
/// `read_payload` reads the payload object, its braces included, by comparing the bytes
/// between its values with the layout instead of walking the objects: the general walk
/// costs about as much as reading ten levels, and more than half of a two-level diff
/// event's decode. `None` for any other frame, or an error in this one; then
/// [`decode_frame`] reads it, and gives the same answer for every frame this accepts.
pub(in crate::venue) fn decode_usual_layout<'a>(
    frame: &'a [u8],
    read_payload: impl FnOnce(&mut Walker<'a>) -> Option<()>,
) -> Option<Message<'a>> {
    let mut walker = Walker::new(frame);
    let combined = walker.skip_exactly(br#"{"stream":"#);
    let stream = if combined {
        let stream = walker.string().ok()?;
        walker.skip_exactly(br#","data":"#).then_some(stream)?
    } else {
        &b""[..]
    };
    read_payload(&mut walker)?;
    if combined {
        walker.skip_exactly(b"}").then_some(())?;
    }
    walker.finish().ok()?;
    Some(Message::Book { stream })
}

/// A partial depth payload in [`decode_usual_layout`]'s layout.
pub(super) fn read_usual_partial_depth(
    walker: &mut Walker<'_>,
    depth: usize,
    out: &mut TopBook,
) -> Option<()> {
    walker.skip_exactly(br#"{"lastUpdateId":"#).then_some(())?;
    out.venue_sequence = walker.unsigned().ok()?;
    walker.skip_exactly(br#","bids":"#).then_some(())?;
    walker.levels(Side::Bid, depth, &mut out.bids).ok()?;
    walker.skip_exactly(br#","asks":"#).then_some(())?;
    walker.levels(Side::Ask, depth, &mut out.asks).ok()?;
    walker.skip_exactly(b"}").then_some(())
}

/// A diff event payload in [`decode_usual_layout`]'s layout.
pub(super) fn read_usual_diff_event(
    walker: &mut Walker<'_>,
    max_levels: usize,
    out: &mut BookUpdate,
) -> Option<()> {
    walker
        .skip_exactly(br#"{"e":"depthUpdate","E":"#)
        .then_some(())?;
    out.exchange_time_ns = timestamps::nanos_from_millis(walker.unsigned().ok()?).ok()?;
    walker.skip_exactly(br#","s":"#).then_some(())?;
    walker.string().ok()?; // the symbol: the stream names it
    walker.skip_exactly(br#","U":"#).then_some(())?;
    out.first_id = walker.unsigned().ok()?;
    walker.skip_exactly(br#","u":"#).then_some(())?;
    out.last_id = walker.unsigned().ok()?;
    walker.skip_exactly(br#","b":"#).then_some(())?;
    walker.all_levels(None, max_levels, &mut out.bids).ok()?;
    walker.skip_exactly(br#","a":"#).then_some(())?;
    walker.all_levels(None, max_levels, &mut out.asks).ok()?;
    walker.skip_exactly(b"}").then_some(())
}

/// One frame: a raw payload, a combined-stream envelope around one, or a control frame.
pub(in crate::venue) fn decode_frame<'a, P: Payload<'a>>(
    frame: &'a [u8],
    mut payload: P,
) -> Result<Message<'a>, DecodeError> {
    let mut walker = Walker::new(frame);
    let mut top = Members::default();
    let mut inner = Members::default();
    walker.object(|walker, key| {
        match key {
            b"stream" => top.stream = top.seen.string(walker, STREAM, "stream")?,
            b"data" => {
                top.seen.mark(DATA, "data")?;
                walker
                    .object(|walker, key| payload_member(walker, key, &mut payload, &mut inner))?;
            }
            b"result" => {
                top.seen.mark(RESULT, "result")?;
                if walker.peek()? == b'n' {
                    walker.null()?;
                } else {
                    walker.skip_value()?; // LIST_SUBSCRIPTIONS answers with a list
                }
            }
            b"code" => {
                top.seen.mark(ERROR_CODE, "code")?;
                walker.skip_value()?;
            }
            // An answer's; a payload has no `id`.
            b"id" => top.request_id = top.seen.unsigned(walker, REQUEST_ID, "id")?,
            _ => payload_member(walker, key, &mut payload, &mut top)?,
        }
        Ok(())
    })?;
    walker.finish()?;

    let envelope = top.seen.has(STREAM) || top.seen.has(DATA);
    if !envelope {
        let acked = match top.seen.has(REQUEST_ID) {
            true => Acked::Request(top.request_id),
            false => Acked::Oldest,
        };
        return if top.seen.has(ERROR_CODE) {
            Ok(Message::SubscribeResult {
                accepted: false,
                acked,
            })
        } else if top.seen.has(RESULT) {
            Ok(Message::SubscribeResult {
                accepted: true,
                acked,
            })
        } else {
            payload_message::<P>(&top, b"")
        };
    }
    // A combined envelope carries the payload only under "data": payload keys beside it
    // are at the wrong level.
    if P::any_seen(&top.seen) || top.seen.has(EVENT) || top.seen.has(RESULT) {
        return Err(DecodeError::UnknownMessage(
            "Binance combined-stream envelope",
        ));
    }
    if !top.seen.has(STREAM) {
        return Err(DecodeError::MissingKey("stream"));
    }
    if !top.seen.has(DATA) {
        return Err(DecodeError::MissingKey("data"));
    }
    payload_message::<P>(&inner, top.stream)
}

impl Decode for Binance {
    fn decode<'a>(
        frame: &'a [u8],
        depth: usize,
        out: &mut TopBook,
    ) -> Result<Message<'a>, DecodeError> {
        if let Some(message) =
            decode_usual_layout(frame, |walker| read_usual_partial_depth(walker, depth, out))
        {
            return Ok(message);
        }
        decode_frame(frame, PartialDepth { depth, out })
    }

    fn decode_diff<'a>(
        frame: &'a [u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<Message<'a>, DecodeError> {
        let message = match decode_usual_layout(frame, |walker| {
            read_usual_diff_event(walker, max_levels, out)
        }) {
            Some(message) => message,
            None => decode_frame(
                frame,
                DiffEvent {
                    max_levels,
                    out,
                    time_key: b"E",
                },
            )?,
        };
        if matches!(message, Message::Book { .. }) && out.first_id > out.last_id {
            return Err(DecodeError::Invalid("depthUpdate with U greater than u"));
        }
        Ok(message)
    }

    /// `GET /api/v3/depth`: `{"lastUpdateId":…,"bids":[…],"asks":[…]}`, sides best first
    /// (no time).
    fn decode_snapshot(
        body: &[u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<(), DecodeError> {
        decode_rest_snapshot(body, max_levels, out, None)
    }
}

/// A REST depth body: `{"lastUpdateId":…,"bids":[…],"asks":[…]}` and whatever else, the
/// time in ms under `time_key` where the market sends one (futures' `T`).
pub(in crate::venue) fn decode_rest_snapshot(
    body: &[u8],
    max_levels: usize,
    out: &mut BookUpdate,
    time_key: Option<&[u8]>,
) -> Result<(), DecodeError> {
    let mut walker = Walker::new(body);
    let mut seen = Seen::default();
    walker.object(|walker, key| {
        match key {
            key if Some(key) == time_key => {
                out.exchange_time_ns = seen.millis_time(walker, TIME, "event time")?;
            }
            b"lastUpdateId" => {
                seen.mark(LAST_UPDATE_ID, "lastUpdateId")?;
                out.last_id = walker.unsigned()?;
                out.first_id = out.last_id;
            }
            b"bids" => {
                seen.mark(BIDS, "bids")?;
                walker.all_levels(Some(Side::Bid), max_levels, &mut out.bids)?;
            }
            b"asks" => {
                seen.mark(ASKS, "asks")?;
                walker.all_levels(Some(Side::Ask), max_levels, &mut out.asks)?;
            }
            _ => walker.skip_value()?,
        }
        Ok(())
    })?;
    walker.finish()?;
    seen.require(&PARTIAL_KEYS)
}

