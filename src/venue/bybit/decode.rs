//! Bybit's frames decoded into books and typed errors ([`Decode`]).

use super::*;

pub(super) const TOPIC: u32 = 0;
pub(super) const TYPE: u32 = 1;
pub(super) const DATA: u32 = 2;
pub(super) const OP: u32 = 3;
pub(super) const SUCCESS: u32 = 4;
pub(super) const SYMBOL: u32 = 5;
pub(super) const BIDS: u32 = 6;
pub(super) const ASKS: u32 = 7;
pub(super) const UPDATE_ID: u32 = 8;
pub(super) const TS: u32 = 9;
pub(super) const CTS: u32 = 10;

/// What a book message's `data` must hold.
pub(super) const DATA_KEYS: [(u32, &str); 4] = [
    (SYMBOL, "s"),
    (BIDS, "b"),
    (ASKS, "a"),
    (UPDATE_ID, "u"),
];

/// One frame, by the general object walk: the members in any order, unknown ones skipped.
/// A book message's payload is written into `out` (its levels in wire order, at most
/// `max_levels` a side).
pub(super) fn decode_message<'a>(
    frame: &'a [u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<Message<'a>, DecodeError> {
    let mut walker = Walker::new(frame);
    let mut seen = Seen::default();
    let (mut topic, mut kind, mut op): (&[u8], &[u8], &[u8]) = (b"", b"", b"");
    let mut symbol: &[u8] = b"";
    let mut success = false;
    let mut request_id: &[u8] = b"";
    // The message's time and the matching engine's.
    let (mut ts, mut cts) = (None, None);
    out.clear();
    walker.object(|walker, key| {
        match key {
            b"topic" => topic = seen.string(walker, TOPIC, "topic")?,
            b"ts" => ts = Some(seen.millis_time(walker, TS, "ts")?),
            b"cts" => cts = Some(seen.millis_time(walker, CTS, "cts")?),
            b"type" => kind = seen.string(walker, TYPE, "type")?,
            b"op" => op = seen.string(walker, OP, "op")?,
            b"success" => success = seen.boolean(walker, SUCCESS, "success")?,
            b"req_id" => request_id = walker.string()?,
            // A book's payload; another topic's (`publicTrade`) is skipped below, by the
            // topic, which may come after it.
            b"data" if walker.peek()? == b'{' => {
                seen.mark(DATA, "data")?;
                walker.object(|walker, key| {
                    data_member(walker, key, &mut seen, &mut symbol, max_levels, out)
                })?;
            }
            _ => walker.skip_value()?,
        }
        Ok(())
    })?;
    walker.finish()?;

    if seen.has(TOPIC) {
        let Some((_, topic_symbol)) = topic_parts(topic) else {
            return match topic.starts_with(b"orderbook.") {
                true => Err(DecodeError::Invalid("a topic like orderbook.50.BTCUSDT")),
                false => Ok(Message::Ignored),
            };
        };
        if !seen.has(DATA) {
            return Err(DecodeError::MissingKey("data"));
        }
        seen.require(&DATA_KEYS)?;
        if symbol != topic_symbol {
            return Err(DecodeError::Invalid("a book message's symbol is its topic's"));
        }
        out.is_snapshot = match kind {
            b"snapshot" => true,
            // The venue restarted the topic: its book starts again from this message.
            b"delta" => out.last_id == 1,
            _ => return Err(DecodeError::Invalid("a book message's type")),
        };
        if out.is_snapshot {
            check_sorted(Side::Bid, &out.bids)?;
            check_sorted(Side::Ask, &out.asks)?;
        }
        // The book's time: the matching engine's where sent, else the message's.
        out.exchange_time_ns = cts.or(ts).unwrap_or(0);
        return Ok(Message::Book {
            stream: topic_symbol,
        });
    }
    match op {
        b"subscribe" if !seen.has(SUCCESS) => Err(DecodeError::MissingKey("success")),
        b"subscribe" => Ok(Message::SubscribeResult {
            accepted: success,
            // Linear answers `"req_id":""` to a request without one; ours all have one.
            acked: std::str::from_utf8(request_id)
                .ok()
                .and_then(|id| id.parse().ok())
                .map_or(Acked::Oldest, Acked::Request),
        }),
        // The answers to `{"op":"ping"}`: `"op":"ping"` with `"ret_msg":"pong"` on spot and
        // linear, `"op":"pong"` on the other markets.
        b"ping" | b"pong" => Ok(Message::Heartbeat),
        b"" => Err(DecodeError::UnknownMessage("Bybit v5 message")),
        _ => Ok(Message::Ignored),
    }
}

/// A member of a book message's `data`: its symbol, sides and update id.
pub(super) fn data_member<'a>(
    walker: &mut Walker<'a>,
    key: &[u8],
    seen: &mut Seen,
    symbol: &mut &'a [u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<(), DecodeError> {
    match key {
        b"s" => *symbol = seen.string(walker, SYMBOL, "s")?,
        b"b" => {
            seen.mark(BIDS, "b")?;
            walker.all_levels(None, max_levels, &mut out.bids)?;
        }
        b"a" => {
            seen.mark(ASKS, "a")?;
            walker.all_levels(None, max_levels, &mut out.asks)?;
        }
        b"u" => out.set_id(seen.unsigned(walker, UPDATE_ID, "u")?),
        _ => walker.skip_value()?,
    }
    Ok(())
}

impl Decode for Bybit {
    fn decode_diff<'a>(
        frame: &'a [u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<Message<'a>, DecodeError> {
        decode_message(frame, max_levels, out)
    }
}
