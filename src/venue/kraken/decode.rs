//! Kraken's frames decoded into books and typed errors ([`Decode`]).

use super::*;

pub(super) const LEVEL: LevelShape = LevelShape::Object {
    price: "price",
    amount: "qty",
};

pub(super) const CHANNEL: u32 = 0;
pub(super) const TYPE: u32 = 1;
pub(super) const DATA: u32 = 2;
pub(super) const METHOD: u32 = 3;
pub(super) const SUCCESS: u32 = 4;
pub(super) const SYMBOL: u32 = 5;
pub(super) const BIDS: u32 = 6;
pub(super) const ASKS: u32 = 7;
pub(super) const CHECKSUM: u32 = 8;
pub(super) const TIMESTAMP: u32 = 9;

/// What a book message must hold. An update, its checksum too
/// ([`Checksum::ON_EVERY_BOOK`]): one without it could not be verified, and is a decode
/// error (counted, the book rebuilt). A thin book's snapshot may come without one.
pub(super) const BOOK_KEYS: [(u32, &str); 3] = [(SYMBOL, "symbol"), (BIDS, "bids"), (ASKS, "asks")];

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
    let (mut channel, mut kind, mut method): (&[u8], &[u8], &[u8]) = (b"", b"", b"");
    let mut success = false;
    let mut symbol: &'a [u8] = b"";
    // The symbol an acknowledgement names (`result.symbol`; `symbol` when refused).
    let mut acked: &'a [u8] = b"";
    let mut books = 0;
    out.clear();
    walker.object(|walker, key| {
        match key {
            b"channel" => channel = seen.string(walker, CHANNEL, "channel")?,
            b"type" => kind = seen.string(walker, TYPE, "type")?,
            b"method" => method = seen.string(walker, METHOD, "method")?,
            b"success" => success = seen.boolean(walker, SUCCESS, "success")?,
            b"symbol" => acked = walker.string()?,
            b"result" if walker.peek()? == b'{' => walker.object(|walker, key| {
                match key {
                    b"symbol" => acked = walker.string()?,
                    _ => walker.skip_value()?,
                }
                Ok(())
            })?,
            b"data" => {
                seen.mark(DATA, "data")?;
                if walker.peek()? != b'[' {
                    return walker.skip_value();
                }
                // A book's payload, or the status channel's (whose members are skipped):
                // `channel` may come after `data`, so it decides afterwards.
                walker.elements(|walker| {
                    books += 1;
                    if books > 1 {
                        return walker.skip_value(); // refused below if a book's
                    }
                    walker.object(|walker, key| {
                        payload_member(walker, key, &mut seen, &mut symbol, max_levels, out)
                    })
                })?;
            }
            _ => walker.skip_value()?,
        }
        Ok(())
    })?;
    walker.finish()?;

    if seen.has(CHANNEL) {
        return match channel {
            b"book" => {
                out.is_snapshot = match kind {
                    b"snapshot" => true,
                    b"update" => false,
                    _ => return Err(DecodeError::Invalid("a book message's type")),
                };
                if books != 1 {
                    return Err(DecodeError::Invalid("a book message holds one symbol"));
                }
                seen.require(&BOOK_KEYS)?;
                if out.is_snapshot {
                    check_sorted(Side::Bid, &out.bids)?;
                    check_sorted(Side::Ask, &out.asks)?;
                } else if !seen.has(CHECKSUM) {
                    return Err(DecodeError::MissingKey("checksum"));
                }
                Ok(Message::Book { stream: symbol })
            }
            // The connection's, about once a second: no book's data (the read-idle
            // watchdog would take a dead subscription for a quiet one).
            b"heartbeat" => Ok(Message::Heartbeat),
            _ => Ok(Message::Ignored),
        };
    }
    match method {
        b"subscribe" if !seen.has(SUCCESS) => Err(DecodeError::MissingKey("success")),
        b"subscribe" => Ok(Message::SubscribeResult {
            accepted: success,
            acked: Acked::Stream(acked),
        }),
        b"pong" => Ok(Message::Heartbeat),
        b"" => Err(DecodeError::UnknownMessage("Kraken v2 message")),
        _ => Ok(Message::Ignored),
    }
}

/// A member of a `data` element: a book's symbol, sides, checksum and time.
pub(super) fn payload_member<'a>(
    walker: &mut Walker<'a>,
    key: &[u8],
    seen: &mut Seen,
    symbol: &mut &'a [u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<(), DecodeError> {
    match key {
        b"symbol" => *symbol = seen.string(walker, SYMBOL, "symbol")?,
        b"bids" => {
            seen.mark(BIDS, "bids")?;
            walker.all_shaped_levels(
                LEVEL,
                None,
                max_levels,
                &mut out.bids,
                Some(&mut out.decimals),
            )?;
        }
        b"asks" => {
            seen.mark(ASKS, "asks")?;
            walker.all_shaped_levels(
                LEVEL,
                None,
                max_levels,
                &mut out.asks,
                Some(&mut out.decimals),
            )?;
        }
        b"checksum" => {
            seen.mark(CHECKSUM, "checksum")?;
            let checksum = walker.unsigned()?;
            out.checksum = Some(
                u32::try_from(checksum)
                    .map_err(|_| DecodeError::Invalid("a checksum of 32 bits"))?,
            );
        }
        b"timestamp" => {
            let text = seen.string(walker, TIMESTAMP, "timestamp")?;
            let micros = unix_micros_or(text, "a timestamp like 2026-08-12T19:28:08.631028Z")?;
            out.set_id(micros);
            out.exchange_time_ns = timestamps::nanos_from_micros(micros)?;
        }
        _ => walker.skip_value()?,
    }
    Ok(())
}

impl Decode for Kraken {
    fn decode_diff<'a>(
        frame: &'a [u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<Message<'a>, DecodeError> {
        decode_message(frame, max_levels, out)
    }
}
