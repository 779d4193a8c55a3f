//! Hyperliquid's frames decoded into books and typed errors ([`Decode`]).

use super::*;

const CHANNEL: u32 = 0;
const DATA: u32 = 1;
const COIN: u32 = 2;
const TIME: u32 = 3;
const LEVELS: u32 = 4;
const METHOD: u32 = 5;
const SUBSCRIPTION: u32 = 6;

/// What an `l2Book` frame's data must hold.
const BOOK_KEYS: [(u32, &str); 3] = [(COIN, "coin"), (TIME, "time"), (LEVELS, "levels")];

/// A level: `{"px":"105055.0","sz":"3.03622","n":5}`, members in any order, `n` skipped.
pub(super) const LEVEL: LevelShape = LevelShape::Object {
    price: "px",
    amount: "sz",
};

/// What a frame's `data` said, whatever its channel: the channel may come after it.
#[derive(Default)]
struct Data<'a> {
    coin: &'a [u8],
    method: &'a [u8],
    /// The type and coin of a `subscriptionResponse`'s echoed subscription.
    subscription_type: &'a [u8],
    subscription_coin: &'a [u8],
}

/// `levels`: exactly two sides, bids then asks.
fn read_levels(walker: &mut Walker<'_>, depth: usize, out: &mut TopBook) -> Result<(), DecodeError> {
    walker.expect(b'[', "'[' opening the levels")?;
    walker.shaped_levels(LEVEL, Side::Bid, depth, &mut out.bids)?;
    walker.expect(b',', "',' between bids and asks")?;
    walker.shaped_levels(LEVEL, Side::Ask, depth, &mut out.asks)?;
    walker.expect(b']', "']' closing the levels")
}

/// An echoed subscription (`{"type":"l2Book","coin":"BTC","nSigFigs":null,…}`).
fn read_subscription<'a>(walker: &mut Walker<'a>, data: &mut Data<'a>) -> Result<(), DecodeError> {
    let mut seen = Seen::default();
    walker.object(|walker, key| {
        match key {
            b"type" => data.subscription_type = seen.string(walker, 0, "type")?,
            b"coin" => data.subscription_coin = seen.string(walker, 1, "coin")?,
            _ => walker.skip_value()?,
        }
        Ok(())
    })
}

impl Decode for Hyperliquid {
    fn decode<'a>(
        frame: &'a [u8],
        depth: usize,
        out: &mut TopBook,
    ) -> Result<Message<'a>, DecodeError> {
        let mut walker = Walker::new(frame);
        let mut seen = Seen::default();
        let mut channel: &[u8] = b"";
        let mut data = Data::default();
        // `data` is read whatever it is, as the channel it belongs to may follow it: a
        // book's members go to `out`, an acknowledgement's to `data`, an error's text is
        // skipped.
        walker.object(|walker, key| {
            match key {
                b"channel" => channel = seen.string(walker, CHANNEL, "channel")?,
                b"data" => {
                    seen.mark(DATA, "data")?;
                    if walker.peek()? != b'{' {
                        return walker.skip_value(); // an error's text
                    }
                    walker.object(|walker, key| {
                        match key {
                            b"coin" => data.coin = seen.string(walker, COIN, "coin")?,
                            b"time" => {
                                seen.mark(TIME, "time")?;
                                out.venue_sequence = walker.unsigned()?;
                                out.exchange_time_ns =
                                    timestamps::nanos_from_millis(out.venue_sequence)?;
                            }
                            b"levels" => {
                                seen.mark(LEVELS, "levels")?;
                                read_levels(walker, depth, out)?;
                            }
                            b"method" => data.method = seen.string(walker, METHOD, "method")?,
                            b"subscription" => {
                                seen.mark(SUBSCRIPTION, "subscription")?;
                                read_subscription(walker, &mut data)?;
                            }
                            _ => walker.skip_value()?,
                        }
                        Ok(())
                    })?;
                }
                _ => walker.skip_value()?,
            }
            Ok(())
        })?;
        walker.finish()?;
        if !seen.has(CHANNEL) {
            return Err(DecodeError::MissingKey("channel"));
        }
        match channel {
            b"l2Book" => {
                if !seen.has(DATA) {
                    return Err(DecodeError::MissingKey("data"));
                }
                seen.require(&BOOK_KEYS)?;
                Ok(Message::Book { stream: data.coin })
            }
            b"subscriptionResponse" => match (data.method, data.subscription_type) {
                (b"subscribe", b"l2Book") => Ok(Message::SubscribeResult {
                    accepted: true,
                    acked: Acked::Stream(data.subscription_coin),
                }),
                (b"subscribe" | b"unsubscribe", _) => Ok(Message::Ignored),
                _ => Err(DecodeError::Invalid(
                    "a subscriptionResponse must echo a subscribe or unsubscribe",
                )),
            },
            // The venue names no request in its errors: the refusal is of the connection's
            // requests, whichever it was.
            b"error" => Ok(Message::SubscribeResult {
                accepted: false,
                acked: Acked::Oldest,
            }),
            b"pong" => Ok(Message::Heartbeat),
            _ => Ok(Message::Ignored),
        }
    }
}
