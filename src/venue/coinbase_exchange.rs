//! Coinbase Exchange (the feed once called Coinbase Pro), channel `level2_batch`.
//!
//! Docs: <https://docs.cdp.coinbase.com/exchange/docs/websocket-channels#level2-batch-channel>
//! (see also `../shared/fixtures/PROTOCOLS.md`, section 3a).
//!
//! A subscription (`{"type":"subscribe","product_ids":["ETH-USD"],"channels":
//! ["level2_batch","heartbeat"]}`, within 5 s of connecting) is answered by one
//! `{"type":"subscriptions","channels":[…]}` naming no request, and each product's book
//! starts with a full-depth snapshot on the stream; `l2update`s follow, each change
//! `[side, price, size]` with `buy`/`sell` and the new absolute size (`"0.00"` deletes).
//! `level2_batch` is `level2` batched every 50 ms, public (`level2` now wants
//! authentication). Numbers are strings with the product's increments. A real snapshot and
//! update (`fixtures/coinbase/exchange_level2_BAND-GBP_snapshot_then_l2updates.jsonl`,
//! shortened):
//!
//! ```text
//! {"type":"snapshot","product_id":"BAND-GBP","asks":[["14.8024","12.77"],…],"bids":[…]}
//! {"type":"l2update","product_id":"BAND-GBP","changes":[["sell","14.8098","0.00"]],
//!  "time":"2021-04-17T16:43:37.083117Z"}
//! ```
//!
//! Sequencing: none. The channel is documented to deliver every update; a lost one cannot
//! be seen (as on Bitstamp), so the book is rebuilt, by subscribing again, on a reconnect,
//! a bad frame and a crossing. An update's `time` (unix microseconds) is the book's
//! `venue_sequence`. The `heartbeat` channel (once a second a product) keeps a quiet
//! subscription from being taken for a dead one. The feed sends no request to reconnect;
//! a client that reads too slowly is dropped (`ErrSlowConsume`).
//!
//! A snapshot holds the product's whole book (tens of thousands of levels for BTC-USD):
//! its best `venues.coinbase_exchange.max_book_levels` levels a side are kept, the rest
//! checked and skipped; levels deeper than that are not known until they rise into it.

use super::{Acked, Answer, Checksum, ConnectBudget, Decode, DecodeError, Message, Simulated, SnapshotSource, Snapshots, StreamKind, Streams, SubscribeRequest, TaggedShape, UNSUBSCRIBE_REQUEST_ID, Venue, VenueFacts};
use super::wire::{Seen, check_sorted};
use super::timestamps::{unix_micros, write_timestamp};
use crate::book::{BookUpdate, Level, Side, TopBook};
use crate::walker::Walker;

pub struct CoinbaseExchange;

/// The channels every subscription asks for.
const CHANNELS: [&str; 2] = ["level2_batch", "heartbeat"];

/// Products one subscribe request carries.
const PRODUCTS_PER_REQUEST: usize = 100;

const MAX_PRODUCT_ID_LEN: usize = 24;

const TYPE: u32 = 0;
const PRODUCT_ID: u32 = 1;
const ASKS: u32 = 2;
const BIDS: u32 = 3;
const CHANGES: u32 = 4;
const TIME: u32 = 5;

const SNAPSHOT_KEYS: [(u32, &str); 3] = [(PRODUCT_ID, "product_id"), (ASKS, "asks"), (BIDS, "bids")];
const UPDATE_KEYS: [(u32, &str); 2] = [(PRODUCT_ID, "product_id"), (CHANGES, "changes")];

/// One frame, by the general object walk: the members in any order, unknown ones skipped.
/// A book message's levels go into `out` (a snapshot's best `max_levels` a side; an
/// update's changes, at most `max_levels` in all, in wire order).
fn decode_message<'a>(
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
            b"type" => {
                seen.mark(TYPE, "type")?;
                kind = walker.string()?;
            }
            b"product_id" => {
                seen.mark(PRODUCT_ID, "product_id")?;
                product_id = walker.string()?;
            }
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
                seen.mark(TIME, "time")?;
                let micros = unix_micros(walker.string()?).ok_or(DecodeError::Invalid(
                    "a time like 2021-04-17T16:43:37.083117Z",
                ))?;
                out.first_id = micros;
                out.last_id = micros;
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
        b"heartbeat" => Ok(Message::SubscriptionsAlive),
        b"" => Err(DecodeError::MissingKey("type")),
        _ => Ok(Message::Ignored),
    }
}

/// The requests for `kind` (`subscribe`, `unsubscribe`) of `products`, 100 a request,
/// numbered from `first_id` (each acknowledged by one answer naming no request).
fn requests(kind: &str, products: &[String], first_id: u64) -> Vec<SubscribeRequest> {
    super::wire::chunked_requests(products, PRODUCTS_PER_REQUEST, Some(first_id), |chunk| {
        serde_json::json!({"type": kind, "product_ids": chunk, "channels": CHANNELS}).to_string()
    })
}

impl Venue for CoinbaseExchange {
    const FACTS: VenueFacts = VenueFacts {
        name: "coinbase_exchange",
        exchange: "coinbase_exchange",
        default_url: "wss://ws-feed.exchange.coinbase.com",
        // The Exchange REST API (the snapshots come on the WebSocket; nothing is fetched).
        default_rest_url: "https://api.exchange.coinbase.com",
        // "About 8 subscribe messages a second per IP, bursts to 20" (PROTOCOLS.md, Coinbase
        // Exchange, Limits; marked uncertain there): each connection subscribes once, so its
        // attempts are kept to that.
        connect_budget: ConnectBudget {
            attempts: 8,
            per: std::time::Duration::from_secs(1),
        },
        // Coinbase documents no cap; each product's snapshot is its whole book and the feed
        // drops a connection it cannot write to (`ErrSlowConsume`): products are spread over
        // connections of at most this many.
        max_streams_per_connection: 20,
        snapshot_streams: false,
        binary_books: false,
        api_key_header: None,
        snapshots: SnapshotSource::InBand,
        sequencing: &crate::sync::Unsequenced,
    };
}

impl Decode for CoinbaseExchange {
    fn decode_diff<'a>(
        frame: &'a [u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<Message<'a>, DecodeError> {
        decode_message(frame, max_levels, out)
    }
}

impl Checksum for CoinbaseExchange {}

impl Streams for CoinbaseExchange {
    fn spot_symbol(&self, base: &str, quote: &str) -> String {
        format!("{base}-{quote}")
    }

    fn stream_name(&self, symbol: &str, _depth: usize) -> String {
        symbol.to_owned()
    }

    /// 100 products a request, each request answered by one `subscriptions` message that
    /// names no request: the oldest awaited.
    fn subscribe_frames(
        &self,
        streams: &[String],
        _kind: StreamKind,
        _depth: usize,
        first_id: u64,
    ) -> Vec<SubscribeRequest> {
        requests("subscribe", streams, first_id.max(1))
    }

    fn unsubscribe_frames(&self, streams: &[String], _kind: StreamKind, _depth: usize) -> Vec<String> {
        let requests = requests("unsubscribe", streams, UNSUBSCRIBE_REQUEST_ID);
        requests.into_iter().map(|request| request.frame).collect()
    }

    fn check_symbol(&self, symbol: &str) -> Result<(), String> {
        match super::wire::dashed_codes(symbol, MAX_PRODUCT_ID_LEN).is_some_and(|parts| parts.len() == 2) {
            true => Ok(()),
            false => Err(format!(
                "a Coinbase product id is BASE-QUOTE (ETH-USD), upper-case, at most \
                 {MAX_PRODUCT_ID_LEN} characters"
            )),
        }
    }

    fn diff_stream_name(&self, symbol: &str) -> String {
        symbol.to_owned()
    }

    fn diff_stream_symbol(&self, stream: &str) -> Option<String> {
        (!stream.is_empty()).then(|| stream.to_owned())
    }
}

impl Snapshots for CoinbaseExchange {
    /// The Exchange REST book (its snapshots come on the WebSocket instead).
    fn snapshot_url(&self, rest_base: &str, symbol: &str, _limit: usize) -> String {
        format!("{rest_base}/products/{symbol}/book?level=2")
    }
}

/// Writes a side as `[["price","size"],…]`.
fn write_side(levels: &[Level], price_decimals: u32, out: &mut Vec<u8>) {
    super::wire::write_levels(levels, price_decimals, "", out);
}

/// A snapshot message as the feed writes it.
fn write_snapshot(product_id: &str, bids: &[Level], asks: &[Level], decimals: u32, out: &mut Vec<u8>) {
    use std::io::Write;
    write!(out, r#"{{"type":"snapshot","product_id":"{product_id}","asks":"#)
        .expect("writing to a Vec cannot fail");
    write_side(asks, decimals, out);
    out.extend_from_slice(br#","bids":"#);
    write_side(bids, decimals, out);
    out.push(b'}');
}

/// The simulator's side of the Coinbase Exchange feed. Its streams are the product ids.
impl Simulated for CoinbaseExchange {
    /// A snapshot message of the book.
    fn encode_book(&self, stream: &str, book: &TopBook, price_decimals: u32, out: &mut Vec<u8>) {
        write_snapshot(stream, book.bids.as_slice(), book.asks.as_slice(), price_decimals, out);
    }

    /// Subscriptions and unsubscriptions (one `subscriptions` answer a request; a channel
    /// other than `level2_batch`, `level2` and `heartbeat` refused).
    fn answer_request(&self, request: &str) -> Option<Answer> {
        let request: serde_json::Value = serde_json::from_str(request).ok()?;
        let kind = request.get("type")?.as_str()?;
        let products: Vec<String> = request
            .get("product_ids")?
            .as_array()?
            .iter()
            .map(|product| product.as_str().map(str::to_owned))
            .collect::<Option<_>>()?;
        let channels = request.get("channels")?.as_array()?;
        let known = ["level2_batch", "level2", "heartbeat"];
        if channels
            .iter()
            .any(|channel| !channel.as_str().is_some_and(|name| known.contains(&name)))
        {
            let error = serde_json::json!({"type": "error", "message": "Failed to subscribe", "reason": "unknown channel"});
            return Some(Answer {
                replies: vec![error.to_string()],
                ..Answer::default()
            });
        }
        let listed = serde_json::json!({
            "type": "subscriptions",
            "channels": [{"name": "level2_batch", "product_ids": products}],
        });
        let replies = vec![listed.to_string()];
        match kind {
            "subscribe" => Some(Answer {
                subscribe: products,
                replies,
                ..Answer::default()
            }),
            "unsubscribe" => Some(Answer {
                unsubscribe: products,
                replies,
                ..Answer::default()
            }),
            _ => None,
        }
    }

    /// The simulator's books are 50 levels deep (the feed sends whole books).
    fn levels_on_stream(&self, _stream: &str) -> usize {
        50
    }

    fn encode_diff(
        &self,
        stream: &str,
        update: &BookUpdate,
        _checksum: Option<u32>,
        price_decimals: u32,
        _unix_ms: u64,
        out: &mut Vec<u8>,
    ) {
        use std::io::Write;
        write!(out, r#"{{"type":"l2update","product_id":"{stream}","changes":["#)
            .expect("writing to a Vec cannot fail");
        let changes = (update.bids.iter().map(|level| ("buy", level)))
            .chain(update.asks.iter().map(|level| ("sell", level)));
        for (index, (side, level)) in changes.enumerate() {
            if index > 0 {
                out.push(b',');
            }
            write!(out, r#"["{side}",""#).expect("writing to a Vec cannot fail");
            level.price.append_decimal(price_decimals, out);
            out.extend_from_slice(br#"",""#);
            level.amount.append_decimal(crate::fixed::DECIMALS, out);
            out.extend_from_slice(br#""]"#);
        }
        out.extend_from_slice(br#"],"time":""#);
        write_timestamp(update.last_id, out);
        out.extend_from_slice(br#""}"#);
    }

    /// The snapshot that starts a subscription, on the stream.
    fn encode_snapshot(
        &self,
        stream: &str,
        snapshot: &BookUpdate,
        _on: SnapshotSource,
        _checksum: Option<u32>,
        price_decimals: u32,
        out: &mut Vec<u8>,
    ) {
        write_snapshot(stream, &snapshot.bids, &snapshot.asks, price_decimals, out);
    }

    /// Ids are the updates' times, in microseconds, increasing.
    fn next_event_ids(&self, last_id: u64, _changes: u64, now_us: u64) -> (u64, u64) {
        let stamp = now_us.max(last_id + 1);
        (stamp, stamp)
    }

    fn initial_event_id(&self, now_us: u64) -> u64 {
        now_us
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(frame: &str) -> (Result<Message<'_>, DecodeError>, BookUpdate) {
        let mut out = BookUpdate::default();
        let message = CoinbaseExchange::decode_diff(frame.as_bytes(), 1000, &mut out);
        (message, out)
    }

    #[test]
    fn control_frames_are_classified() {
        let frames = [
            (
                r#"{"type":"subscriptions","channels":[{"name":"level2","product_ids":["BAND-GBP","BAND-BTC"]}]}"#,
                Ok(Message::SubscribeResult {
                    accepted: true,
                    acked: Acked::Oldest,
                }),
            ),
            (
                r#"{"type":"error","message":"Failed to subscribe","reason":"ETH-XYZ is not a valid product"}"#,
                Ok(Message::SubscribeResult {
                    accepted: false,
                    acked: Acked::Oldest,
                }),
            ),
            (
                r#"{"type":"heartbeat","last_trade_id":17393422,"product_id":"ETH-USD","sequence":3461,"time":"2021-04-17T16:43:37.083117Z"}"#,
                Ok(Message::SubscriptionsAlive),
            ),
            (
                r#"{"type":"ticker","product_id":"ETH-USD","price":"1"}"#,
                Ok(Message::Ignored),
            ),
            (r#"{"product_id":"ETH-USD"}"#, Err(DecodeError::MissingKey("type"))),
        ];
        for (frame, expected) in frames {
            assert_eq!(decode(frame).0, expected, "{frame}");
        }
    }

    #[test]
    fn subscriptions_round_trip_through_the_simulator() {
        let products: Vec<String> = (0..101).map(|n| format!("C{n}-USD")).collect();
        let requests = CoinbaseExchange.subscribe_frames(&products, StreamKind::Diff, 10, 3);
        assert_eq!(requests.len(), 2, "100 products a request");
        assert_eq!(
            (requests[0].id, requests[1].id, requests[1].streams.clone()),
            (Some(3), Some(4), 100..101)
        );
        assert!(requests[0].frame.contains(r#""channels":["level2_batch","heartbeat"]"#));
        let answer = CoinbaseExchange.answer_request(&requests[1].frame).unwrap();
        assert_eq!(answer.subscribe, ["C100-USD"]);
        assert_eq!(
            decode(&answer.replies[0]).0,
            Ok(Message::SubscribeResult {
                accepted: true,
                acked: Acked::Oldest
            })
        );
        let unsubscribe = CoinbaseExchange.unsubscribe_frames(&products[..1], StreamKind::Diff, 10);
        assert_eq!(CoinbaseExchange.answer_request(&unsubscribe[0]).unwrap().unsubscribe, ["C0-USD"]);
        assert!(CoinbaseExchange.check_symbol("BAND-GBP").is_ok());
        for refused in ["band-gbp", "BANDGBP", "BTC-USD-PERP", "-USD"] {
            assert!(CoinbaseExchange.check_symbol(refused).is_err(), "{refused}");
        }
    }

    /// The simulator's frames decode to what it encoded.
    #[test]
    fn encoded_messages_decode_to_the_same_levels() {
        let level = |price: &str, amount: &str| Level {
            price: price.parse().unwrap(),
            amount: amount.parse().unwrap(),
        };
        let update = BookUpdate {
            first_id: 1_618_677_817_083_117,
            last_id: 1_618_677_817_083_117,
            bids: vec![level("14.7472", "0")],
            asks: vec![level("14.8098", "123.1"), level("14.8024", "0")],
            ..BookUpdate::default()
        };
        let mut frame = Vec::new();
        CoinbaseExchange.encode_diff("BAND-GBP", &update, None, 4, 0, &mut frame);
        let (message, decoded) = decode(std::str::from_utf8(&frame).unwrap());
        assert_eq!(message, Ok(Message::Book { stream: b"BAND-GBP" }));
        assert_eq!(decoded, update);
        let snapshot = BookUpdate {
            bids: vec![level("14.7366", "1"), level("14.7", "2")],
            asks: vec![level("14.7664", "3")],
            is_snapshot: true,
            ..BookUpdate::default()
        };
        frame.clear();
        CoinbaseExchange.encode_snapshot("BAND-GBP", &snapshot, SnapshotSource::InBand, None, 4, &mut frame);
        let (message, decoded) = decode(std::str::from_utf8(&frame).unwrap());
        assert_eq!(message, Ok(Message::Book { stream: b"BAND-GBP" }));
        assert_eq!(decoded, snapshot);
        let mut capped = BookUpdate::default();
        CoinbaseExchange::decode_diff(&frame, 1, &mut capped).unwrap();
        assert_eq!((capped.bids.len(), capped.asks.len()), (1, 1), "the best level a side");
    }
}
