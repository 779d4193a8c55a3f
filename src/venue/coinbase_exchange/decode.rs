//! Coinbase Exchange's frames decoded into books and typed errors ([`Decode`]).

use super::*;

pub(super) const TYPE: u32 = 0;
pub(super) const PRODUCT_ID: u32 = 1;
pub(super) const ASKS: u32 = 2;
pub(super) const BIDS: u32 = 3;
pub(super) const CHANGES: u32 = 4;
pub(super) const TIME: u32 = 5;

pub(super) const SNAPSHOT_KEYS: [(u32, &str); 3] = [(PRODUCT_ID, "product_id"), (ASKS, "asks"), (BIDS, "bids")];

pub(super) const UPDATE_KEYS: [(u32, &str); 2] = [(PRODUCT_ID, "product_id"), (CHANGES, "changes")];

/// One frame, by the general object walk: the members in any order, unknown ones skipped.
/// A book message's levels go into `out` (a snapshot's best `max_levels` a side; an
/// update's changes, at most `max_levels` in all, in wire order).
pub(super) fn decode_message<'a>(
    frame: &'a [u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<Message<'a>, DecodeError> {
    let mut walker = Walker::new(frame);
    let mut seen = Seen::default();
    let (mut kind, mut product_id): (&[u8], &'a [u8]) = (b"", b"");
    out.clear();
    walker.object(|walker, key| {
        match key {
            b"type" => kind = seen.string(walker, TYPE, "type")?,
            b"product_id" => product_id = seen.string(walker, PRODUCT_ID, "product_id")?,
            // The sides and changes are read as levels whatever the type, which may come
            // after them; another message's members of these names are no book's.
            b"asks" if walker.peek()? == b'[' => {
                seen.mark(ASKS, "asks")?;
                walker.best_levels(Side::Ask, max_levels, &mut out.asks)?;
            }
            b"bids" if walker.peek()? == b'[' => {
                seen.mark(BIDS, "bids")?;
                walker.best_levels(Side::Bid, max_levels, &mut out.bids)?;
            }
            b"changes" => {
                seen.mark(CHANGES, "changes")?;
                let (bids, asks) = (&mut out.bids, &mut out.asks);
                walker.tagged_levels(TaggedShape::Array, max_levels, bids, asks, None)?;
            }
            b"time" => {
                let text = seen.string(walker, TIME, "time")?;
                let micros = unix_micros_or(text, "a time like 2021-04-17T16:43:37.083117Z")?;
                out.set_id(micros);
                out.exchange_time_ns = timestamps::nanos_from_micros(micros)?;
            }
            _ => walker.skip_value()?,
        }
        Ok(())
    })?;
    walker.finish()?;
    match kind {
        b"snapshot" => {
            seen.require(&SNAPSHOT_KEYS)?;
            out.is_snapshot = true;
            check_sorted(Side::Bid, &out.bids)?;
            check_sorted(Side::Ask, &out.asks)?;
            Ok(Message::Book { stream: product_id })
        }
        b"l2update" => {
            seen.require(&UPDATE_KEYS)?;
            if seen.any(&[(ASKS, "asks"), (BIDS, "bids")]) {
                return Err(DecodeError::Invalid("an l2update's levels are its changes"));
            }
            Ok(Message::Book { stream: product_id })
        }
        b"subscriptions" => Ok(Message::SubscribeResult {
            accepted: true,
            acked: Acked::Oldest,
        }),
        // Only subscriptions are asked for: an error refuses one.
        b"error" => Ok(Message::SubscribeResult {
            accepted: false,
            acked: Acked::Oldest,
        }),
        b"heartbeat" => Ok(Message::Heartbeat),
        b"" => Err(DecodeError::MissingKey("type")),
        _ => Ok(Message::Ignored),
    }
}

/// The REST book's sides (`[price, size, num_orders]`).
pub(super) const REST_LEVEL: LevelShape = LevelShape::PairThenMore;

impl Decode for CoinbaseExchange {
    fn decode_diff<'a>(
        frame: &'a [u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<Message<'a>, DecodeError> {
        decode_message(frame, max_levels, out)
    }

    /// The Exchange REST book at level 2 (`GET /products/<id>/book?level=2`), what
    /// audits the books: `{"bids":[["price","size",num_orders],…],"asks":[…],
    /// "sequence":…,"auction_mode":…,"time":"…"}`, the best `max_levels` a side kept. Its
    /// `sequence` numbers the full channel, not `level2_batch`'s updates, so the book gets
    /// no id (0: none an audit can compare); its `time`, where present, is its venue time.
    fn decode_snapshot(
        body: &[u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<(), DecodeError> {
        let mut walker = Walker::new(body);
        let mut seen = Seen::default();
        out.clear();
        walker.object(|walker, key| {
            match key {
                b"bids" => {
                    seen.mark(BIDS, "bids")?;
                    walker.best_shaped_levels(REST_LEVEL, Side::Bid, max_levels, &mut out.bids)?;
                }
                b"asks" => {
                    seen.mark(ASKS, "asks")?;
                    walker.best_shaped_levels(REST_LEVEL, Side::Ask, max_levels, &mut out.asks)?;
                }
                b"time" => {
                    let text = seen.string(walker, TIME, "time")?;
                    out.exchange_time_ns =
                        timestamps::unix_nanos_or(text, "a time like 2021-04-17T16:43:37.083117Z")?;
                }
                _ => walker.skip_value()?,
            }
            Ok(())
        })?;
        walker.finish()?;
        seen.require(&[(ASKS, "asks"), (BIDS, "bids")])
    }
}
