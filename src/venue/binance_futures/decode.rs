//! Binance futures' frames decoded into books and typed errors ([`Decode`]): spot's
//! envelope (`venue/binance/decode.rs`) around the futures `depthUpdate`.

use super::*;
use crate::venue::binance::decode::{
    self as spot, ASKS, BIDS, DiffEvent, FIRST_ID, LAST_ID, Members, Payload,
};
use crate::venue::timestamps;
use crate::venue::wire::Seen;

/// Bit of `Seen` for `pu`, after spot's.
const PREVIOUS_LAST_ID: u32 = 13;

/// The key of a futures book's time (`exchange_time_ns`): `T`, the transaction time in
/// the matching engine (`E`, the event's, is when it was pushed).
const TIME_KEY: &[u8] = b"T";

/// Every key of a futures `depthUpdate`, diff or top N.
const EVENT_KEYS: [(u32, &str); 5] = [
    (FIRST_ID, "U"),
    (LAST_ID, "u"),
    (PREVIOUS_LAST_ID, "pu"),
    (BIDS, "b"),
    (ASKS, "a"),
];

/// A diff event: spot's, and its `pu`, which the chain needs.
struct ChainedEvent<'o>(DiffEvent<'o>);

impl<'a> Payload<'a> for ChainedEvent<'_> {
    fn member(
        &mut self,
        walker: &mut Walker<'a>,
        key: &'a [u8],
        seen: &mut Seen,
    ) -> Result<bool, DecodeError> {
        if key == b"pu" {
            self.0.out.previous_last_id = seen.unsigned(walker, PREVIOUS_LAST_ID, "pu")?;
            return Ok(true);
        }
        self.0.member(walker, key, seen)
    }

    fn any_seen(seen: &Seen) -> bool {
        seen.any(&EVENT_KEYS)
    }

    fn classify(members: &Members<'a>) -> Result<bool, DecodeError> {
        spot::classify_depth_update(members, &EVENT_KEYS)
    }
}

/// A top-N push: a `depthUpdate` whose sides are the whole top N, best first, kept to
/// `depth` levels; `u` becomes the book's `venue_sequence`.
struct TopEvent<'o> {
    depth: usize,
    out: &'o mut TopBook,
    /// `U`, `u` and `pu`, for [`check_ids`].
    ids: &'o mut [u64; 3],
}

impl<'a> Payload<'a> for TopEvent<'_> {
    fn member(
        &mut self,
        walker: &mut Walker<'a>,
        key: &'a [u8],
        seen: &mut Seen,
    ) -> Result<bool, DecodeError> {
        match key {
            b"U" => self.ids[0] = seen.unsigned(walker, FIRST_ID, "U")?,
            b"u" => self.ids[1] = seen.unsigned(walker, LAST_ID, "u")?,
            b"pu" => self.ids[2] = seen.unsigned(walker, PREVIOUS_LAST_ID, "pu")?,
            b"T" => self.out.exchange_time_ns = seen.millis_time(walker, spot::TIME, "T")?,
            // `bookTicker` has string `b`/`a`: only an array is a side.
            b"b" | b"a" if walker.peek()? != b'[' => walker.skip_value()?,
            b"b" => {
                seen.mark(BIDS, "b")?;
                walker.levels(Side::Bid, self.depth, &mut self.out.bids)?;
            }
            b"a" => {
                seen.mark(ASKS, "a")?;
                walker.levels(Side::Ask, self.depth, &mut self.out.asks)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn any_seen(seen: &Seen) -> bool {
        seen.any(&EVENT_KEYS)
    }

    fn classify(members: &Members<'a>) -> Result<bool, DecodeError> {
        spot::classify_depth_update(members, &EVENT_KEYS)
    }
}

/// A `depthUpdate` payload in the layout Binance sends (every recorded frame: keys in
/// this order, no whitespace, COIN-M's `ps` and 2026's trailing `st` where present), read
/// by comparing the bytes between values with it, as spot's pushes are
/// (`spot::decode_usual_layout`). `sides` reads `b`'s and `a`'s arrays; `time_ns` takes
/// `T`.
fn read_usual_event(
    walker: &mut Walker<'_>,
    ids: &mut [u64; 3],
    time_ns: &mut u64,
    sides: impl FnOnce(&mut Walker<'_>) -> Option<()>,
) -> Option<()> {
    walker
        .skip_exactly(br#"{"e":"depthUpdate","E":"#)
        .then_some(())?;
    // The event's time (its push, not the book's), skipped as the general walk does.
    walker.skip_value().ok()?;
    walker.skip_exactly(br#","T":"#).then_some(())?;
    *time_ns = timestamps::nanos_from_millis(walker.unsigned().ok()?).ok()?;
    walker.skip_exactly(br#","s":"#).then_some(())?;
    walker.string().ok()?; // the symbol: the stream names it
    if walker.skip_exactly(br#","ps":"#) {
        walker.string().ok()?;
    }
    walker.skip_exactly(br#","U":"#).then_some(())?;
    ids[0] = walker.unsigned().ok()?;
    walker.skip_exactly(br#","u":"#).then_some(())?;
    ids[1] = walker.unsigned().ok()?;
    walker.skip_exactly(br#","pu":"#).then_some(())?;
    ids[2] = walker.unsigned().ok()?;
    walker.skip_exactly(br#","b":"#).then_some(())?;
    sides(walker)?;
    if walker.skip_exactly(br#","st":"#) {
        walker.skip_value().ok()?;
    }
    walker.skip_exactly(b"}").then_some(())
}

/// The ids' order, which every event keeps: `pu < U <= u`.
fn check_ids(
    message: Message<'_>,
    [first, last, previous]: [u64; 3],
) -> Result<Message<'_>, DecodeError> {
    if !matches!(message, Message::Book { .. }) {
        return Ok(message);
    }
    if first > last {
        return Err(DecodeError::Invalid("depthUpdate with U greater than u"));
    }
    if previous >= first {
        return Err(DecodeError::Invalid("depthUpdate with pu not below U"));
    }
    Ok(message)
}

/// A top-N push read by the layout fast path: `None` for a frame of any other layout.
pub(super) fn fast_top<'a>(
    frame: &'a [u8],
    depth: usize,
    out: &mut TopBook,
    ids: &mut [u64; 3],
) -> Option<Message<'a>> {
    spot::decode_usual_layout(frame, |walker| {
        read_usual_event(walker, ids, &mut out.exchange_time_ns, |walker| {
            walker.levels(Side::Bid, depth, &mut out.bids).ok()?;
            walker.skip_exactly(br#","a":"#).then_some(())?;
            walker.levels(Side::Ask, depth, &mut out.asks).ok()
        })
    })
}

/// A top-N push read by the general object walk, which reads every frame.
pub(super) fn general_top<'a>(
    frame: &'a [u8],
    depth: usize,
    out: &mut TopBook,
    ids: &mut [u64; 3],
) -> Result<Message<'a>, DecodeError> {
    spot::decode_frame(frame, TopEvent { depth, out, ids })
}

/// A diff event read by the layout fast path: `None` for a frame of any other layout.
pub(super) fn fast_diff<'a>(
    frame: &'a [u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Option<Message<'a>> {
    let mut ids = [0; 3];
    let mut time_ns = 0;
    let message = spot::decode_usual_layout(frame, |walker| {
        read_usual_event(walker, &mut ids, &mut time_ns, |walker| {
            walker.all_levels(None, max_levels, &mut out.bids).ok()?;
            walker.skip_exactly(br#","a":"#).then_some(())?;
            walker.all_levels(None, max_levels, &mut out.asks).ok()
        })
    })?;
    [out.first_id, out.last_id, out.previous_last_id] = ids;
    out.exchange_time_ns = time_ns;
    Some(message)
}

/// A diff event read by the general object walk, which reads every frame.
pub(super) fn general_diff<'a>(
    frame: &'a [u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<Message<'a>, DecodeError> {
    let event = DiffEvent {
        max_levels,
        out,
        time_key: TIME_KEY,
    };
    spot::decode_frame(frame, ChainedEvent(event))
}

impl<M: Market> Decode for BinanceFutures<M> {
    fn decode<'a>(
        frame: &'a [u8],
        depth: usize,
        out: &mut TopBook,
    ) -> Result<Message<'a>, DecodeError> {
        let mut ids = [0; 3];
        let message = match fast_top(frame, depth, out, &mut ids) {
            Some(message) => message,
            None => general_top(frame, depth, out, &mut ids)?,
        };
        out.venue_sequence = ids[1];
        check_ids(message, ids)
    }

    fn decode_diff<'a>(
        frame: &'a [u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<Message<'a>, DecodeError> {
        let message = match fast_diff(frame, max_levels, out) {
            Some(message) => message,
            None => general_diff(frame, max_levels, out)?,
        };
        check_ids(message, [out.first_id, out.last_id, out.previous_last_id])
    }

    /// `GET /fapi/v1/depth` or `/dapi/v1/depth`: spot's body, with `E`, `T` (the book's
    /// time) and COIN-M's `symbol`, `pair` (skipped) beside.
    fn decode_snapshot(
        body: &[u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<(), DecodeError> {
        spot::decode_rest_snapshot(body, max_levels, out, Some(TIME_KEY))
    }
}
