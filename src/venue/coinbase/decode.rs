//! Coinbase Advanced Trade's frames decoded into books and typed errors ([`Decode`]).

use super::*;

/// The frames' level objects.
pub(super) const LEVEL: TaggedShape = TaggedShape::Object {
    side: "side",
    price: "price_level",
    amount: "new_quantity",
};

pub(super) const CHANNEL: u32 = 0;
pub(super) const SEQUENCE_NUM: u32 = 1;
pub(super) const EVENTS: u32 = 2;
pub(super) const TYPE: u32 = 3;
pub(super) const PRODUCT_ID: u32 = 4;
pub(super) const UPDATES: u32 = 5;
pub(super) const TIMESTAMP: u32 = 6;

/// What a frame's `timestamp` must look like.
const TIMESTAMP_TEXT: &str = "a timestamp like 2026-09-07T23:37:22.278662782Z";

pub(super) const BOOK_KEYS: [(u32, &str); 2] = [(SEQUENCE_NUM, "sequence_num"), (EVENTS, "events")];

pub(super) const EVENT_KEYS: [(u32, &str); 3] = [(TYPE, "type"), (PRODUCT_ID, "product_id"), (UPDATES, "updates")];

/// One frame: a book message of one event in the layout Coinbase writes by the fast path,
/// anything else by the general walk.
pub(super) fn decode_frame<'a>(
    frame: &'a [u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<Message<'a>, DecodeError> {
    out.clear();
    if let Some(message) = decode_usual_layout(frame, max_levels, out) {
        return Ok(message);
    }
    decode_message(frame, max_levels, out)
}

/// An `l2_data` message of one event in the layout Coinbase writes (the recorded one): its
/// members in that order, no whitespace, `client_id` empty or absent, read by direct byte
/// checks. `None` for any other layout (several events included) or any error, which the
/// general walk then reads or reports.
pub(super) fn decode_usual_layout<'a>(
    frame: &'a [u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Option<Message<'a>> {
    let mut walker = Walker::new(frame);
    walker.skip_exactly(br#"{"channel":"l2_data","#).then_some(())?;
    walker.skip_exactly(br#""client_id":"","#);
    walker.skip_exactly(br#""timestamp":"#).then_some(())?;
    out.exchange_time_ns = timestamps::unix_nanos(walker.string().ok()?)?;
    walker.skip_exactly(br#","sequence_num":"#).then_some(())?;
    let number = walker.unsigned().ok()?;
    walker.skip_exactly(br#","events":[{"type":""#).then_some(())?;
    let snapshot = match () {
        _ if walker.skip_exactly(br#"update""#) => false,
        _ if walker.skip_exactly(br#"snapshot""#) => true,
        _ => return None,
    };
    walker.skip_exactly(br#","product_id":"#).then_some(())?;
    let product_id = walker.string().ok()?;
    walker.skip_exactly(br#","updates":"#).then_some(())?;
    let sorted = read_updates(&mut walker, snapshot, max_levels, out).ok()?;
    walker.skip_exactly(b"}]}").then_some(())?;
    walker.finish().ok()?;
    if snapshot {
        sort_best_first(Side::Bid, &mut out.bids, sorted.0).ok()?;
        sort_best_first(Side::Ask, &mut out.asks, sorted.1).ok()?;
    }
    out.is_snapshot = snapshot;
    out.message_number = Some(number);
    (out.first_id, out.last_id) = (number, number);
    Some(Message::Book { stream: product_id })
}

/// One frame, by the general object walk: the members in any order, unknown ones skipped.
/// A book frame's first event goes into `out` (a snapshot's best `max_levels` a side; an
/// update's levels, at most `max_levels` in all, in wire order); the others are checked.
pub(super) fn decode_message<'a>(
    frame: &'a [u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<Message<'a>, DecodeError> {
    let mut walker = Walker::new(frame);
    let mut seen = Seen::default();
    let (mut channel, mut kind): (&[u8], &[u8]) = (b"", b"");
    // The events, read where they are if the channel came first (as Coinbase writes it),
    // else found again once the channel says they are books'.
    let mut events = None;
    let mut events_at = 0;
    out.clear();
    walker.object(|walker, key| {
        match key {
            b"channel" => channel = seen.string(walker, CHANNEL, "channel")?,
            b"sequence_num" => {
                seen.mark(SEQUENCE_NUM, "sequence_num")?;
                out.message_number = Some(walker.unsigned()?);
            }
            b"events" => {
                seen.mark(EVENTS, "events")?;
                events_at = walker.position();
                match channel {
                    b"l2_data" => events = Some(read_events(walker, max_levels, out)?),
                    _ => walker.skip_value()?,
                }
            }
            b"type" => kind = seen.string(walker, TYPE, "type")?,
            b"timestamp" => {
                let text = seen.string(walker, TIMESTAMP, "timestamp")?;
                out.exchange_time_ns = timestamps::unix_nanos_or(text, TIMESTAMP_TEXT)?;
            }
            _ => walker.skip_value()?,
        }
        Ok(())
    })?;
    walker.finish()?;
    match channel {
        b"l2_data" => {
            seen.require(&BOOK_KEYS)?;
            let events = match events {
                Some(events) => events,
                None => read_events(&mut walker.resumed_at(events_at), max_levels, out)?,
            };
            let number = out.message_number.unwrap_or_default();
            (out.first_id, out.last_id) = (number, number);
            Ok(match events {
                None => Message::Ignored,
                Some((stream, None)) => Message::Book { stream },
                Some((stream, Some(next))) => Message::Books { stream, next },
            })
        }
        b"subscriptions" => Ok(Message::SubscribeResult {
            accepted: true,
            acked: Acked::Oldest,
        }),
        b"heartbeats" => Ok(Message::Heartbeat),
        // Only subscriptions are asked for: an error refuses one.
        b"" if kind == b"error" => Ok(Message::SubscribeResult {
            accepted: false,
            acked: Acked::Oldest,
        }),
        b"" => Err(DecodeError::MissingKey("channel")),
        _ => Ok(Message::Ignored),
    }
}

/// A frame's first event's stream, and where the next event starts if one follows.
pub(super) type FirstEvent<'a> = (&'a [u8], Option<usize>);

/// A book frame's `events`: the first into `out`, the rest checked; `None` for no events.
pub(super) fn read_events<'a>(
    walker: &mut Walker<'a>,
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<Option<FirstEvent<'a>>, DecodeError> {
    walker.expect(b'[', "'[' opening the events")?;
    if walker.peek()? == b']' {
        walker.expect(b']', "']'")?;
        return Ok(None);
    }
    let stream = read_event(walker, max_levels, out)?;
    if !walker.next_or_close(b']', "',' or ']' after an event")? {
        return Ok(Some((stream, None)));
    }
    let next = walker.position();
    loop {
        check_event(walker, max_levels)?;
        if !walker.next_or_close(b']', "',' or ']' after an event")? {
            return Ok(Some((stream, Some(next))));
        }
    }
}

/// One event into `out` (its levels and `is_snapshot`; the ids are the frame's): its
/// product id.
pub(super) fn read_event<'a>(
    walker: &mut Walker<'a>,
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<&'a [u8], DecodeError> {
    let mut seen = Seen::default();
    let (mut kind, mut product_id): (Option<bool>, &'a [u8]) = (None, b"");
    let mut updates_at = None;
    out.bids.clear();
    out.asks.clear();
    let mut kept = (false, false);
    walker.object(|walker, key| {
        match key {
            b"type" => {
                seen.mark(TYPE, "type")?;
                kind = Some(is_snapshot(walker.string()?)?);
            }
            b"product_id" => product_id = seen.string(walker, PRODUCT_ID, "product_id")?,
            b"updates" => {
                seen.mark(UPDATES, "updates")?;
                match kind {
                    // The type must be known to read them: found again after the event.
                    None => {
                        updates_at = Some(walker.position());
                        walker.skip_value()?;
                    }
                    Some(snapshot) => {
                        kept = read_updates(walker, snapshot, max_levels, out)?;
                    }
                }
            }
            _ => walker.skip_value()?,
        }
        Ok(())
    })?;
    seen.require(&EVENT_KEYS)?;
    let snapshot = kind.unwrap_or_default();
    if let Some(at) = updates_at {
        let mut again = walker.resumed_at(at);
        kept = read_updates(&mut again, snapshot, max_levels, out)?;
    }
    out.is_snapshot = snapshot;
    if snapshot {
        sort_best_first(Side::Bid, &mut out.bids, kept.0)?;
        sort_best_first(Side::Ask, &mut out.asks, kept.1)?;
    }
    Ok(product_id)
}

/// Whether an event's `type` is a snapshot (else an update).
pub(super) fn is_snapshot(kind: &[u8]) -> Result<bool, DecodeError> {
    match kind {
        b"snapshot" => Ok(true),
        b"update" => Ok(false),
        _ => Err(DecodeError::Invalid("an event's type is snapshot or update")),
    }
}

/// An event's `updates` into `out`: an update's in wire order (at most `max_levels`, more
/// is an error); a snapshot's best `max_levels` a side, zero sizes left out. For a
/// snapshot, whether each side (bids, asks) is sorted already.
pub(super) fn read_updates(
    walker: &mut Walker<'_>,
    snapshot: bool,
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<(bool, bool), DecodeError> {
    out.bids.clear();
    out.asks.clear();
    if !snapshot {
        walker.elements(|walker| {
            if out.bids.len() + out.asks.len() == max_levels {
                return Err(DecodeError::TooManyLevels(max_levels));
            }
            match read_level(walker)? {
                (Side::Bid, level) => out.bids.push(level),
                (Side::Ask, level) => out.asks.push(level),
            }
            Ok(())
        })?;
        return Ok((false, false));
    }
    let mut sorted = (false, false);
    walker.elements(|walker| {
        let (side, level) = read_level(walker)?;
        if !level.amount.is_zero() {
            match side {
                Side::Bid => keep_best(Side::Bid, level, max_levels, &mut out.bids, &mut sorted.0),
                Side::Ask => keep_best(Side::Ask, level, max_levels, &mut out.asks, &mut sorted.1),
            }
        }
        Ok(())
    })?;
    Ok(sorted)
}

/// One level: in the layout Coinbase writes by direct byte checks, else by the object walk.
#[inline(always)]
pub(super) fn read_level(walker: &mut Walker<'_>) -> Result<(Side, Level), DecodeError> {
    let at = walker.position();
    if let Some(level) = usual_level(walker) {
        return Ok(level);
    }
    walker.rewind(at);
    walker.tagged_level(LEVEL, None)
}

/// `{"side":"bid","event_time":"…","price_level":"…","new_quantity":"…"}` as Coinbase
/// writes it (`offer` for asks; `event_time` may be absent), no whitespace, both numbers
/// short enough for the fast parsers; `None` for anything else, which the object walk
/// then reads or refuses. Its key checks are compares of known bytes, where the walk reads
/// and matches each key.
#[inline(always)]
pub(super) fn usual_level(walker: &mut Walker<'_>) -> Option<(Side, Level)> {
    walker.skip_exactly(br#"{"side":""#).then_some(())?;
    let side = match () {
        _ if walker.skip_exactly(br#"bid","#) => Side::Bid,
        _ if walker.skip_exactly(br#"offer","#) => Side::Ask,
        _ => return None,
    };
    if walker.skip_exactly(br#""event_time":"#) {
        walker.string().ok()?;
        walker.skip_exactly(b",").then_some(())?;
    }
    walker.skip_exactly(br#""price_level":"#).then_some(())?;
    let price = walker.compact_fixed_point()?;
    walker.skip_exactly(br#","new_quantity":"#).then_some(())?;
    let amount = walker.compact_fixed_point()?;
    walker.skip_exactly(b"}").then_some(())?;
    Some((side, Level { price, amount }))
}

/// Keeps `level` among a side's best `limit` (a snapshot's levels in any order), in
/// `levels`' capacity: pushed until it holds `limit`, then sorted once, best first, and
/// each further level inserted in its place if it beats the worst kept (which goes).
/// Sorted snapshots cost one compare a level past the limit.
pub(super) fn keep_best(side: Side, level: Level, limit: usize, levels: &mut Vec<Level>, sorted: &mut bool) {
    if levels.len() < limit {
        levels.push(level);
        return;
    }
    if !*sorted {
        sort_side(side, levels);
        *sorted = true;
    }
    match levels.last() {
        Some(worst) if side.is_better(level.price, worst.price) => {
            let at = levels.partition_point(|kept| side.is_better(kept.price, level.price));
            levels.pop();
            levels.insert(at, level);
        }
        _ => {}
    }
}

pub(super) fn sort_side(side: Side, levels: &mut [Level]) {
    levels.sort_unstable_by_key(|level| side.rank(level.price));
}

/// A snapshot side, best first (`sorted`: already); a price given twice leaves it not
/// strictly sorted, and refused.
pub(super) fn sort_best_first(side: Side, levels: &mut [Level], sorted: bool) -> Result<(), DecodeError> {
    if !sorted {
        sort_side(side, levels);
    }
    crate::venue::wire::check_sorted(side, levels)
}

/// Checks an event that is not read yet (a second product's in one frame): its members,
/// type and levels, and an update's count of them, without keeping them. What only its
/// reading can find is a snapshot's price given twice.
pub(super) fn check_event(walker: &mut Walker<'_>, max_levels: usize) -> Result<(), DecodeError> {
    let mut seen = Seen::default();
    let (mut snapshot, mut levels) = (false, 0);
    walker.object(|walker, key| {
        match key {
            b"type" => {
                seen.mark(TYPE, "type")?;
                snapshot = is_snapshot(walker.string()?)?;
            }
            b"product_id" => {
                seen.mark(PRODUCT_ID, "product_id")?;
                walker.string()?;
            }
            b"updates" => {
                seen.mark(UPDATES, "updates")?;
                walker.elements(|walker| {
                    levels += 1;
                    read_level(walker).map(drop)
                })?;
            }
            _ => walker.skip_value()?,
        }
        Ok(())
    })?;
    seen.require(&EVENT_KEYS)?;
    match !snapshot && levels > max_levels {
        true => Err(DecodeError::TooManyLevels(max_levels)),
        false => Ok(()),
    }
}

impl Decode for Coinbase {
    fn decode_diff<'a>(
        frame: &'a [u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<Message<'a>, DecodeError> {
        decode_frame(frame, max_levels, out)
    }

    /// The event at `at`: read as the first was. Its ids stay the frame's, which
    /// `decode_diff` wrote into `out`.
    fn decode_next_event<'a>(
        frame: &'a [u8],
        at: usize,
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<(&'a [u8], Option<usize>), DecodeError> {
        let mut walker = Walker::resume(frame, at);
        let stream = read_event(&mut walker, max_levels, out)?;
        let more = walker.next_or_close(b']', "',' or ']' after an event")?;
        Ok((stream, more.then(|| walker.position())))
    }
}
