//! KuCoin futures' `obu` frames decoded into books and typed errors ([`Decode`]): one walk
//! of the message, whose `d` is read as a book while the walk goes (the `T` and `t` that
//! say what it is may come after it), then classified. Binary frames hold the same JSON.

use super::*;
use crate::json::LevelShape;
use crate::venue::wire::{Seen, book_or_loss, check_sorted, side_unless_unheld};

const CHANNEL: u32 = 0;
const KIND: u32 = 1;
const SYMBOL: u32 = 2;
const FIRST_ID: u32 = 3;
const LAST_ID: u32 = 4;
const BIDS: u32 = 5;
const ASKS: u32 = 6;
const TIME: u32 = 7;
const DATA: u32 = 8;

/// What an `obu` message's `d` must hold.
const BOOK_KEYS: [(u32, &str); 6] = [
    (SYMBOL, "s"),
    (FIRST_ID, "O"),
    (LAST_ID, "C"),
    (BIDS, "b"),
    (ASKS, "a"),
    (TIME, "M"),
];

/// A message's members other than its book.
#[derive(Default)]
struct Envelope<'a> {
    /// `T`: `obu.FUTURES` on a book message.
    channel: &'a [u8],
    /// `t`: `snapshot` or `delta`.
    kind: &'a [u8],
    /// `dp`: the subscription's depth (`increment@10ms`, `50`…).
    depth: &'a [u8],
    /// An answer's `result`, and the request it names where its `id` is a number.
    result: Option<bool>,
    request_id: Option<u64>,
    /// `type`: `pong` answers a ping.
    answer_type: &'a [u8],
    seen: Seen,
}

/// Walks one message: the envelope's members, and each member of an object `d` to
/// `book_member` (which returns whether it read it).
fn walk<'a>(
    frame: &'a [u8],
    mut book_member: impl FnMut(&mut Walker<'a>, &'a [u8], &mut Seen) -> Result<bool, DecodeError>,
) -> Result<Envelope<'a>, DecodeError> {
    let mut walker = Walker::new(frame);
    let mut envelope = Envelope::default();
    walker.object(|walker, key| {
        match key {
            b"T" => envelope.channel = envelope.seen.string(walker, CHANNEL, "T")?,
            b"t" => envelope.kind = envelope.seen.string(walker, KIND, "t")?,
            b"dp" => envelope.depth = walker.string()?,
            b"result" => envelope.result = Some(walker.boolean()?),
            b"type" => envelope.answer_type = walker.string()?,
            b"id" => envelope.request_id = crate::venue::wire::numbered_id(walker)?,
            b"d" if walker.peek()? == b'{' => {
                envelope.seen.mark(DATA, "d")?;
                walker.object(|walker, key| {
                    if !book_member(walker, key, &mut envelope.seen)? {
                        walker.skip_value()?;
                    }
                    Ok(())
                })?
            }
            _ => walker.skip_value()?,
        }
        Ok(())
    })?;
    walker.finish()?;
    Ok(envelope)
}

/// What a message other than a book is; `None` for an `obu` book message.
fn classify<'a>(envelope: &Envelope<'a>) -> Result<Option<Message<'a>>, DecodeError> {
    if let Some(accepted) = envelope.result {
        let acked = envelope.request_id.map_or(Acked::Oldest, Acked::Request);
        return Ok(Some(Message::SubscribeResult { accepted, acked }));
    }
    if envelope.answer_type == b"pong" {
        return Ok(Some(Message::Heartbeat));
    }
    if !envelope.seen.has(CHANNEL) {
        // The welcome, and what else the venue sends that is no book.
        return Ok(Some(Message::Ignored));
    }
    if envelope.channel != b"obu.FUTURES" {
        return Ok(Some(Message::Ignored));
    }
    if !envelope.seen.has(KIND) {
        return Err(DecodeError::MissingKey("t"));
    }
    if !envelope.seen.has(DATA) {
        return Err(DecodeError::MissingKey("d"));
    }
    Ok(None)
}

/// The book members of `d` every `obu` message has, into `first`/`last` ids and the time.
fn read_ids(
    walker: &mut Walker<'_>,
    key: &[u8],
    seen: &mut Seen,
    first: &mut u64,
    last: &mut u64,
    time: &mut u64,
) -> Result<bool, DecodeError> {
    match key {
        b"O" => *first = seen.unsigned(walker, FIRST_ID, "O")?,
        b"C" => *last = seen.unsigned(walker, LAST_ID, "C")?,
        b"M" => *time = seen.unsigned(walker, TIME, "M")?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// Moves past `,` and the one space the probe's frames write after a top-level comma.
fn comma(walker: &mut Walker<'_>) -> Option<()> {
    walker.skip_exactly(b",").then_some(())?;
    walker.skip_exactly(b" ");
    Some(())
}

/// A side without whitespace, `[["price","size"],…]`, every level in wire order, read a
/// number at a time: a delta holds a level or two, for which the pattern reader's set-up
/// costs more than its levels.
fn fast_side(walker: &mut Walker<'_>, max_levels: usize, out: &mut Vec<crate::book::Level>) -> Option<()> {
    walker.skip_exactly(b"[").then_some(())?;
    if walker.skip_exactly(b"]") {
        return Some(());
    }
    for _ in 0..max_levels {
        walker.skip_exactly(b"[").then_some(())?;
        let price = walker.price().ok()?;
        walker.skip_exactly(b",").then_some(())?;
        let amount = walker.amount().ok()?;
        walker.skip_exactly(b"]").then_some(())?;
        out.push(crate::book::Level { price, amount });
        if !walker.skip_exactly(b",") {
            return walker.skip_exactly(b"]").then_some(());
        }
    }
    None
}

/// The JSON integer of up to 19 digits at `frame[walker's position..]` (a time in ns), the
/// walker moved past it: its last 16 digits by the two-word reader
/// (`fixed::leading_integer`), the few before them one by one (19 digits cannot overflow a
/// `u64`). `None` for anything else, a leading zero included.
fn nanos(walker: &mut Walker<'_>, frame: &[u8]) -> Option<u64> {
    const TEN_TO_16: u64 = 10_000_000_000_000_000;
    let at = walker.position();
    let rest = frame.get(at..)?;
    let digits = rest.iter().take_while(|byte| byte.is_ascii_digit()).count();
    if digits == 0 || digits > 19 || (digits > 1 && rest[0] == b'0') {
        return None;
    }
    let head_len = digits.saturating_sub(16);
    let head = (rest[..head_len].iter()).fold(0u64, |value, &digit| value * 10 + u64::from(digit - b'0'));
    let (tail, tail_len) = crate::fixed::leading_integer(&rest[head_len..])?;
    (head_len + tail_len == digits).then_some(())?;
    let value = match head_len {
        0 => tail,
        _ => head * TEN_TO_16 + tail,
    };
    *walker = walker.resumed_at(at + digits);
    Some(value)
}

/// An `increment@10ms` message in the layout KuCoin sends (the probe's, with or without a
/// space after each top-level comma; the simulator's): `{"T":"obu.FUTURES","dp":"…",
/// "t":"…","P":…,"d":{"a":[…],"b":[…],"C":…,"s":"…","M":…,"O":…}}` (`s` before `C` in the
/// recorded snapshot), read by comparing the bytes between values with it, as KuCoin spot's messages are. `None` for any other frame,
/// or an error in this one; then the general walk reads it, and gives the same answer for
/// every frame this accepts.
pub(super) fn fast_diff<'a>(
    frame: &'a [u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Option<Message<'a>> {
    let mut walker = Walker::new(frame);
    out.clear();
    walker.skip_exactly(br#"{"T":"obu.FUTURES""#).then_some(())?;
    comma(&mut walker)?;
    walker.skip_exactly(br#""dp":"increment"#).then_some(())?;
    walker.skip_exactly(b"@10ms");
    walker.skip_exactly(b"\"").then_some(())?;
    comma(&mut walker)?;
    out.is_snapshot = match () {
        _ if walker.skip_exactly(br#""t":"delta""#) => false,
        _ if walker.skip_exactly(br#""t":"snapshot""#) => true,
        _ => return None,
    };
    comma(&mut walker)?;
    walker.skip_exactly(br#""P":"#).then_some(())?;
    nanos(&mut walker, frame)?;
    comma(&mut walker)?;
    walker.skip_exactly(br#""d":{"a":"#).then_some(())?;
    fast_side(&mut walker, max_levels, &mut out.asks)?;
    walker.skip_exactly(br#","b":"#).then_some(())?;
    fast_side(&mut walker, max_levels, &mut out.bids)?;
    // `C` then `s` (deltas), or `s` then `C` (the recorded snapshot).
    let symbol = match walker.skip_exactly(br#","C":"#) {
        true => {
            out.last_id = walker.unsigned().ok()?;
            walker.skip_exactly(br#","s":"#).then_some(())?;
            walker.string().ok()?
        }
        false => {
            walker.skip_exactly(br#","s":"#).then_some(())?;
            let symbol = walker.string().ok()?;
            walker.skip_exactly(br#","C":"#).then_some(())?;
            out.last_id = walker.unsigned().ok()?;
            symbol
        }
    };
    walker.skip_exactly(br#","M":"#).then_some(())?;
    out.exchange_time_ns = nanos(&mut walker, frame)?;
    walker.skip_exactly(br#","O":"#).then_some(())?;
    out.first_id = walker.unsigned().ok()?;
    walker.skip_exactly(b"}}").then_some(())?;
    walker.finish().ok()?;
    (out.first_id <= out.last_id).then_some(())?;
    if out.is_snapshot {
        check_sorted(Side::Bid, &out.bids).ok()?;
        check_sorted(Side::Ask, &out.asks).ok()?;
    }
    Some(Message::Book { stream: symbol })
}

/// A message read by the general object walk, which reads every frame.
pub(super) fn general_diff<'a>(
    frame: &'a [u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<Message<'a>, DecodeError> {
    out.clear();
    let (mut symbol, mut unheld): (&[u8], _) = (b"", None);
    let envelope = walk(frame, |walker, key, seen| {
        let (levels, bit, name) = match key {
            b"s" => {
                symbol = seen.string(walker, SYMBOL, "s")?;
                return Ok(true);
            }
            b"b" => (&mut out.bids, BIDS, "b"),
            b"a" => (&mut out.asks, ASKS, "a"),
            _ => {
                let time = &mut out.exchange_time_ns;
                return read_ids(walker, key, seen, &mut out.first_id, &mut out.last_id, time);
            }
        };
        seen.mark(bit, name)?;
        side_unless_unheld(walker, &mut unheld, |walker| {
            walker.all_shaped_levels(LevelShape::Pair, None, max_levels, levels, None)
        })?;
        Ok(true)
    })?;
    if let Some(message) = classify(&envelope)? {
        return Ok(message);
    }
    if !envelope.depth.starts_with(b"increment") {
        // A top-N subscription's push: no diff stream's.
        return Ok(Message::Ignored);
    }
    envelope.seen.require(&BOOK_KEYS)?;
    out.is_snapshot = match envelope.kind {
        b"snapshot" => true,
        b"delta" => false,
        _ => return Err(DecodeError::Invalid("t must be snapshot or delta")),
    };
    if out.first_id > out.last_id {
        return Err(DecodeError::Invalid("a message with O greater than C"));
    }
    if out.is_snapshot && unheld.is_none() {
        check_sorted(Side::Bid, &out.bids)?;
        check_sorted(Side::Ask, &out.asks)?;
    }
    Ok(book_or_loss(symbol, unheld))
}

impl Decode for KucoinFutures {
    /// A top-N subscription's push (depth `1`, `5` or `50`): a whole book, numbered by `C`.
    fn decode<'a>(
        frame: &'a [u8],
        depth: usize,
        out: &mut TopBook,
    ) -> Result<Message<'a>, DecodeError> {
        let (mut symbol, mut unheld, mut first): (&[u8], _, u64) = (b"", None, 0);
        let envelope = walk(frame, |walker, key, seen| {
            match key {
                b"s" => symbol = seen.string(walker, SYMBOL, "s")?,
                b"b" => {
                    seen.mark(BIDS, "b")?;
                    side_unless_unheld(walker, &mut unheld, |walker| {
                        walker.shaped_levels(LevelShape::Pair, Side::Bid, depth, &mut out.bids)
                    })?;
                }
                b"a" => {
                    seen.mark(ASKS, "a")?;
                    side_unless_unheld(walker, &mut unheld, |walker| {
                        walker.shaped_levels(LevelShape::Pair, Side::Ask, depth, &mut out.asks)
                    })?;
                }
                _ => {
                    let (last, time) = (&mut out.venue_sequence, &mut out.exchange_time_ns);
                    return read_ids(walker, key, seen, &mut first, last, time);
                }
            }
            Ok(true)
        })?;
        if let Some(message) = classify(&envelope)? {
            return Ok(message);
        }
        envelope.seen.require(&BOOK_KEYS)?;
        if envelope.kind != b"snapshot" {
            return Err(DecodeError::Invalid("a delta where whole books are subscribed"));
        }
        Ok(book_or_loss(symbol, unheld))
    }

    fn decode_binary<'a>(
        frame: &'a [u8],
        depth: usize,
        out: &mut TopBook,
    ) -> Result<Message<'a>, DecodeError> {
        Self::decode(frame, depth, out)
    }

    /// An `increment@10ms` message: a snapshot that replaces the book, or a delta.
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

    fn decode_diff_binary<'a>(
        frame: &'a [u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<Message<'a>, DecodeError> {
        Self::decode_diff(frame, max_levels, out)
    }
}
