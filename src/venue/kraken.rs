//! Kraken spot, WebSocket v2, channel `book`.
//!
//! Docs: <https://docs.kraken.com/api/docs/websocket-v2/book> and the checksum guide
//! <https://docs.kraken.com/api/docs/guides/spot-ws-book-v2> (see also
//! `../shared/fixtures/PROTOCOLS.md`, section 4).
//!
//! A subscription (`{"method":"subscribe","params":{"channel":"book","symbol":["BTC/USD"],
//! "depth":10,"snapshot":true},"req_id":1}`) is acknowledged once per symbol and starts
//! with a snapshot on the stream; updates follow. Prices and quantities are bare JSON
//! numbers printed with the pair's precision. Each message carries a CRC32 of the book
//! after it (top 10 asks then bids), so the book is checked after every message: Kraken
//! has no sequence numbers, the checksum is what shows a lost or garbled update. After
//! each message each side is cut to the subscribed depth: Kraken sends no deletes for
//! levels pushed out of it. A real snapshot and update
//! (`fixtures/kraken/v2_book_BTCUSD_depth10_status_ack_snapshot_update_2026-08-12.jsonl`,
//! shortened):
//!
//! ```text
//! {"channel":"book","type":"snapshot","data":[{"symbol":"BTC/USD","bids":[{"price":63299.4,
//!  "qty":0.00209987},…],"asks":[…],"checksum":1490766955,"timestamp":"2026-08-12T19:28:08.631028Z"}]}
//! {"channel":"book","type":"update","data":[{"symbol":"BTC/USD","bids":[{"price":63296.7,
//!  "qty":0.00000000},{"price":63294.6,"qty":0.31581476}],"asks":[],"checksum":1153589921,
//!  "timestamp":"2026-08-12T19:28:09.140448Z"}]}
//! ```
//!
//! Control frames: `{"channel":"status","type":"update","data":[{"version":"2.0.10",
//! "system":"online","api_version":"v2","connection_id":…}]}` on connect,
//! `{"channel":"heartbeat"}` about once a second when nothing else is sent, the
//! subscription ack `{"method":"subscribe","result":{…},"success":true,…}` (`false` with an
//! `error` when refused), and `{"method":"pong",…}` answering `{"method":"ping"}`. Kraken
//! sends no request to reconnect. The message's `timestamp` (unix microseconds) is the
//! book's `venue_sequence`.

use super::{Acked, Answer, Checksum, ConnectBudget, Decode, DecodeError, LevelShape, LevelTexts, Message, Simulated, SnapshotSource, Snapshots, StreamKind, Streams, SubscribeRequest, Venue, VenueFacts};
use super::wire::{Seen, check_sorted};
use super::timestamps::{unix_micros, write_timestamp};
use crate::book::{BookUpdate, DepthBook, Level, Side, TopBook, WireDecimals};
use crate::walker::Walker;

pub struct Kraken;

/// The depths a subscription may ask for.
const DEPTHS: [usize; 5] = [10, 25, 100, 500, 1000];

/// Levels a side the checksum covers, whatever the depth.
const CHECKSUM_LEVELS: usize = 10;

const LEVEL: LevelShape = LevelShape::Object {
    price: "price",
    amount: "qty",
};

const CHANNEL: u32 = 0;
const TYPE: u32 = 1;
const DATA: u32 = 2;
const METHOD: u32 = 3;
const SUCCESS: u32 = 4;
const SYMBOL: u32 = 5;
const BIDS: u32 = 6;
const ASKS: u32 = 7;
const CHECKSUM: u32 = 8;
const TIMESTAMP: u32 = 9;

/// What a book message must hold.
const BOOK_KEYS: [(u32, &str); 3] = [(SYMBOL, "symbol"), (BIDS, "bids"), (ASKS, "asks")];

/// One frame, by the general object walk: the members in any order, unknown ones skipped.
/// A book message's payload is written into `out` (its levels in wire order, at most
/// `max_levels` a side).
fn decode_message<'a>(
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
            b"channel" => {
                seen.mark(CHANNEL, "channel")?;
                channel = walker.string()?;
            }
            b"type" => {
                seen.mark(TYPE, "type")?;
                kind = walker.string()?;
            }
            b"method" => {
                seen.mark(METHOD, "method")?;
                method = walker.string()?;
            }
            b"success" => {
                seen.mark(SUCCESS, "success")?;
                success = walker.boolean()?;
            }
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
                }
                Ok(Message::Book { stream: symbol })
            }
            // Sent while subscribed and nothing changes: the subscriptions are live.
            b"heartbeat" => Ok(Message::SubscriptionsAlive),
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
fn payload_member<'a>(
    walker: &mut Walker<'a>,
    key: &[u8],
    seen: &mut Seen,
    symbol: &mut &'a [u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<(), DecodeError> {
    match key {
        b"symbol" => {
            seen.mark(SYMBOL, "symbol")?;
            *symbol = walker.string()?;
        }
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
            seen.mark(TIMESTAMP, "timestamp")?;
            let micros = unix_micros(walker.string()?).ok_or(DecodeError::Invalid(
                "a timestamp like 2026-08-12T19:28:08.631028Z",
            ))?;
            out.first_id = micros;
            out.last_id = micros;
        }
        _ => walker.skip_value()?,
    }
    Ok(())
}

/// The smallest depth Kraken offers that covers `requested` (its most, 1000, beyond).
fn subscribed_depth(requested: usize) -> usize {
    DEPTHS
        .into_iter()
        .find(|&depth| depth >= requested)
        .unwrap_or(DEPTHS[DEPTHS.len() - 1])
}

/// Kraken's book checksum: for the best 10 asks, then the best 10 bids, the price's text
/// and then the quantity's, each without its `.` and leading zeros, concatenated; CRC32.
/// The text is the number written with the precision the messages used (`decimals`),
/// which is the wire text itself: Kraken prints every price and quantity of a pair with
/// the pair's precision. The text is built on the stack and hashed in one call, so the
/// check allocates nothing.
fn book_checksum(book: &DepthBook, decimals: WireDecimals) -> u32 {
    let mut text = [0u8; CHECKSUM_TEXT_BYTES];
    let mut len = 0;
    for side in [Side::Ask, Side::Bid] {
        for level in book.levels(side).take(CHECKSUM_LEVELS) {
            len += write_level_digits(level, decimals, &mut text, len);
        }
    }
    crc32fast::hash(&text[..len])
}

/// `book_checksum` with the texts of the levels the book's last checksum covered: after
/// an update, only the levels it changed are formatted (`kraken_checksum_after_update`
/// against `kraken_checksum`).
fn book_checksum_after_change(
    book: &DepthBook,
    decimals: WireDecimals,
    texts: &mut LevelTexts,
) -> u32 {
    texts.begin(decimals);
    for (index, side) in [Side::Ask, Side::Bid].into_iter().enumerate() {
        let levels = book.levels(side).take(CHECKSUM_LEVELS);
        texts.append_side(index, levels, |level, out, at| {
            write_level_digits(level, decimals, out, at)
        });
    }
    crc32fast::hash(texts.text())
}

/// 40 numbers of at most 20 digits, and a word's room past the last.
const CHECKSUM_TEXT_BYTES: usize = 2 * CHECKSUM_LEVELS * 2 * 20 + 24;

/// A level's checksum text at `at`: its price's digits, then its quantity's.
#[inline]
fn write_level_digits(level: &Level, decimals: WireDecimals, out: &mut [u8], at: usize) -> usize {
    let price = level.price.write_plain_digits(u32::from(decimals.price), out, at);
    price + level.amount.write_plain_digits(u32::from(decimals.amount), out, at + price)
}

impl Venue for Kraken {
    const FACTS: VenueFacts = VenueFacts {
        name: "kraken",
        exchange: "kraken",
        default_url: "wss://ws.kraken.com/v2",
        // Kraken's REST API (diff mode's snapshots come on the WebSocket; nothing is fetched).
        default_rest_url: "https://api.kraken.com",
        // "Connection attempts are rate limited by Cloudflare (keep well under ~150 per 10
        // minutes per IP)" (PROTOCOLS.md, Kraken, Limits; marked uncertain there).
        connect_budget: ConnectBudget {
            attempts: 100,
            per: std::time::Duration::from_secs(600),
        },
        // Kraken documents no cap; its per-connection message rate is dynamic (PROTOCOLS.md,
        // Kraken, Limits), so subscriptions, acks and resubscriptions are spread over
        // connections of at most this many symbols.
        max_streams_per_connection: 50,
        // Kraken's `book` channel is a diff stream; there is no top-N snapshot stream.
        snapshot_streams: false,
        binary_books: false,
        api_key_header: None,
        snapshots: SnapshotSource::InBand,
        // No sequence numbers: the checksum after each message is Kraken's check.
        sequencing: &crate::sync::Unsequenced,
    };
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

impl Checksum for Kraken {
    fn checksum(book: &DepthBook, decimals: WireDecimals) -> Option<u32> {
        Some(book_checksum(book, decimals))
    }

    fn checksum_after_change(
        book: &DepthBook,
        decimals: WireDecimals,
        texts: &mut LevelTexts,
    ) -> Option<u32> {
        Some(book_checksum_after_change(book, decimals, texts))
    }
}

impl Streams for Kraken {
    fn spot_symbol(&self, base: &str, quote: &str) -> String {
        format!("{base}/{quote}")
    }

    fn stream_name(&self, symbol: &str, _depth: usize) -> String {
        symbol.to_owned()
    }

    /// One request for every symbol, acknowledged once per symbol (naming it).
    fn subscribe_frames(
        &self,
        streams: &[String],
        _kind: StreamKind,
        depth: usize,
        first_id: u64,
    ) -> Vec<SubscribeRequest> {
        let request = serde_json::json!({
            "method": "subscribe",
            "params": {"channel": "book", "symbol": streams, "depth": subscribed_depth(depth), "snapshot": true},
            "req_id": first_id,
        });
        vec![SubscribeRequest {
            frame: request.to_string(),
            id: None,
            streams: 0..streams.len(),
        }]
    }

    fn unsubscribe_frames(&self, streams: &[String], _kind: StreamKind, _depth: usize) -> Vec<String> {
        let request = serde_json::json!({
            "method": "unsubscribe",
            "params": {"channel": "book", "symbol": streams},
            "req_id": 2,
        });
        vec![request.to_string()]
    }

    /// Kraken closes a connection after about a minute without traffic; heartbeats come
    /// once a second while subscribed, and a ping keeps a quiet connection open too.
    fn client_ping(&self) -> Option<(std::time::Duration, &'static str)> {
        Some((std::time::Duration::from_secs(30), r#"{"method":"ping"}"#))
    }

    /// Kraken names a book by its symbol, as subscribed (`BTC/USD`).
    fn diff_stream_name(&self, symbol: &str) -> String {
        symbol.to_owned()
    }

    fn diff_stream_symbol(&self, stream: &str) -> Option<String> {
        (!stream.is_empty()).then(|| stream.to_owned())
    }
}

impl Snapshots for Kraken {
    fn kept_depth(&self, requested: usize) -> Option<usize> {
        Some(subscribed_depth(requested))
    }

    /// Kraken's REST depth endpoint (its snapshots come on the WebSocket instead).
    fn snapshot_url(&self, rest_base: &str, symbol: &str, limit: usize) -> String {
        let pair: String = symbol.chars().filter(|&c| c != '/').collect();
        format!("{rest_base}/0/public/Depth?pair={pair}&count={limit}")
    }
}

/// Writes `levels` as Kraken's `[{"price":…,"qty":…},…]`, bare numbers.
fn write_levels(levels: &[Level], price_decimals: u32, out: &mut Vec<u8>) {
    out.push(b'[');
    for (index, level) in levels.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.extend_from_slice(br#"{"price":"#);
        level.price.append_decimal(price_decimals, out);
        out.extend_from_slice(br#","qty":"#);
        level.amount.append_decimal(crate::fixed::DECIMALS, out);
        out.push(b'}');
    }
    out.push(b']');
}

/// A book message as Kraken writes it.
fn write_book_message(
    kind: &str,
    symbol: &str,
    (bids, asks): (&[Level], &[Level]),
    checksum: Option<u32>,
    micros: u64,
    price_decimals: u32,
    out: &mut Vec<u8>,
) {
    use std::io::Write;
    write!(
        out,
        r#"{{"channel":"book","type":"{kind}","data":[{{"symbol":"{symbol}","bids":"#
    )
    .expect("writing to a Vec cannot fail");
    write_levels(bids, price_decimals, out);
    out.extend_from_slice(br#","asks":"#);
    write_levels(asks, price_decimals, out);
    if let Some(checksum) = checksum {
        write!(out, r#","checksum":{checksum}"#).expect("writing to a Vec cannot fail");
    }
    out.extend_from_slice(br#","timestamp":""#);
    write_timestamp(micros, out);
    out.extend_from_slice(br#""}]}"#);
}

/// The simulator's side of Kraken.
impl Simulated for Kraken {
    /// A snapshot message without a checksum (as Kraken sends for a thin book).
    fn encode_book(&self, stream: &str, book: &TopBook, price_decimals: u32, out: &mut Vec<u8>) {
        let sides = (book.bids.as_slice(), book.asks.as_slice());
        write_book_message(
            "snapshot",
            stream,
            sides,
            None,
            book.venue_sequence,
            price_decimals,
            out,
        );
    }

    /// Subscriptions (an ack per symbol, as recorded), unsubscriptions, pings.
    fn answer_request(&self, request: &str) -> Option<Answer> {
        let request: serde_json::Value = serde_json::from_str(request).ok()?;
        let method = request.get("method")?.as_str()?;
        if method == "ping" {
            let reply = serde_json::json!({"method": "pong", "req_id": request.get("req_id")});
            return Some(Answer {
                replies: vec![reply.to_string()],
                ping: true,
                ..Answer::default()
            });
        }
        let params = request.get("params")?;
        let symbols: Vec<String> = params
            .get("symbol")?
            .as_array()?
            .iter()
            .map(|symbol| symbol.as_str().map(str::to_owned))
            .collect::<Option<_>>()?;
        let depth = params.get("depth").and_then(serde_json::Value::as_u64);
        let ack = |symbol: &str| {
            serde_json::json!({
                "method": method,
                "result": {"channel": "book", "depth": depth.unwrap_or(10), "snapshot": true, "symbol": symbol},
                "success": true,
                "time_in": "2026-08-12T19:28:08.287297Z",
                "time_out": "2026-08-12T19:28:08.287347Z",
            })
            .to_string()
        };
        let replies = symbols.iter().map(|symbol| ack(symbol)).collect();
        match method {
            "subscribe" => Some(Answer {
                subscribe: symbols,
                replies,
                depth: depth.map(|depth| depth as usize),
                ..Answer::default()
            }),
            "unsubscribe" => Some(Answer {
                unsubscribe: symbols,
                replies,
                ..Answer::default()
            }),
            _ => None,
        }
    }

    fn levels_on_stream(&self, _stream: &str) -> usize {
        DEPTHS[0]
    }

    fn encode_diff(
        &self,
        stream: &str,
        update: &BookUpdate,
        checksum: Option<u32>,
        price_decimals: u32,
        _unix_ms: u64,
        out: &mut Vec<u8>,
    ) {
        let sides = (update.bids.as_slice(), update.asks.as_slice());
        write_book_message(
            "update",
            stream,
            sides,
            checksum,
            update.last_id,
            price_decimals,
            out,
        );
    }

    /// The snapshot that starts a subscription, on the stream.
    fn encode_snapshot(
        &self,
        stream: &str,
        snapshot: &BookUpdate,
        _on: SnapshotSource,
        checksum: Option<u32>,
        price_decimals: u32,
        out: &mut Vec<u8>,
    ) {
        let sides = (snapshot.bids.as_slice(), snapshot.asks.as_slice());
        write_book_message(
            "snapshot",
            stream,
            sides,
            checksum,
            snapshot.last_id,
            price_decimals,
            out,
        );
    }

    /// Ids are the messages' timestamps, in microseconds, increasing.
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

    const DOCS_SNAPSHOT: &str =
        include_str!("../../tests/fixtures/kraken/v2_book_docs_example_BTCUSD_snapshot.json");

    fn decode(frame: &str) -> (Result<Message<'_>, DecodeError>, BookUpdate) {
        let mut out = BookUpdate::default();
        let message = Kraken::decode_diff(frame.as_bytes(), 1000, &mut out);
        (message, out)
    }

    #[test]
    fn the_documented_checksum_verifies_from_the_wire_text() {
        let (message, snapshot) = decode(DOCS_SNAPSHOT.trim());
        assert_eq!(message, Ok(Message::Book { stream: b"BTC/USD" }));
        assert!(snapshot.is_snapshot);
        assert_eq!(
            snapshot.decimals,
            WireDecimals {
                price: 1,
                amount: 8
            }
        );
        let mut book = DepthBook::new(1000);
        book.replace(&snapshot);
        assert_eq!(snapshot.checksum, Some(3_310_070_434));
        assert_eq!(
            Kraken::checksum(&book, snapshot.decimals),
            snapshot.checksum
        );
        // One digit fewer of precision is other text: another checksum.
        let fewer = WireDecimals {
            price: 1,
            amount: 7,
        };
        assert_ne!(Kraken::checksum(&book, fewer), snapshot.checksum);
        // The texts kept after a checksum are those of its precision: the same book at
        // another is written anew.
        let mut texts = LevelTexts::default();
        for decimals in [snapshot.decimals, fewer, snapshot.decimals] {
            assert_eq!(
                Kraken::checksum_after_change(&book, decimals, &mut texts),
                Kraken::checksum(&book, decimals),
                "{decimals:?}"
            );
        }
    }

    #[test]
    fn control_frames_are_classified() {
        let frames = [
            (
                r#"{"channel":"status","type":"update","data":[{"version":"2.0.10","system":"online","api_version":"v2","connection_id":12072546403441331453}]}"#,
                Ok(Message::Ignored),
            ),
            (
                r#"{"channel":"heartbeat"}"#,
                Ok(Message::SubscriptionsAlive),
            ),
            (
                r#"{"method":"subscribe","result":{"channel":"book","depth":10,"snapshot":true,"symbol":"ETH/BTC"},"success":true,"time_in":"2026-08-26T15:16:16.576099Z","time_out":"2026-08-26T15:16:16.576140Z"}"#,
                Ok(Message::SubscribeResult {
                    accepted: true,
                    acked: Acked::Stream(b"ETH/BTC"),
                }),
            ),
            (
                r#"{"error":"Currency pair not supported XXX/YYY","method":"subscribe","success":false,"symbol":"XXX/YYY","time_in":"2026-08-26T15:16:16.576099Z","time_out":"2026-08-26T15:16:16.576140Z"}"#,
                Ok(Message::SubscribeResult {
                    accepted: false,
                    acked: Acked::Stream(b"XXX/YYY"),
                }),
            ),
            (
                r#"{"method":"pong","req_id":7,"time_in":"2026-08-26T15:16:16.576099Z","time_out":"2026-08-26T15:16:16.576140Z"}"#,
                Ok(Message::Heartbeat),
            ),
            (
                r#"{"method":"unsubscribe","result":{"channel":"book","symbol":"ETH/BTC"},"success":true}"#,
                Ok(Message::Ignored),
            ),
            (
                r#"{"method":"subscribe","result":{}}"#,
                Err(DecodeError::MissingKey("success")),
            ),
            (
                r#"{"result":{}}"#,
                Err(DecodeError::UnknownMessage("Kraken v2 message")),
            ),
        ];
        for (frame, expected) in frames {
            assert_eq!(decode(frame).0, expected, "{frame}");
        }
    }

    #[test]
    fn subscriptions_round_trip_through_the_simulator() {
        let symbols = ["BTC/USD".to_owned(), "ETH/BTC".to_owned()];
        let requests = Kraken.subscribe_frames(&symbols, StreamKind::Diff, 11, 4);
        assert_eq!(
            requests,
            [SubscribeRequest {
                frame: r#"{"method":"subscribe","params":{"channel":"book","depth":25,"snapshot":true,"symbol":["BTC/USD","ETH/BTC"]},"req_id":4}"#.to_owned(),
                id: None, // acknowledged per symbol
                streams: 0..2,
            }]
        );
        let answer = Kraken.answer_request(&requests[0].frame).unwrap();
        assert_eq!((answer.subscribe.len(), answer.depth), (2, Some(25)));
        for (reply, symbol) in answer.replies.iter().zip(&symbols) {
            assert_eq!(
                decode(reply).0,
                Ok(Message::SubscribeResult {
                    accepted: true,
                    acked: Acked::Stream(symbol.as_bytes())
                })
            );
        }
        let unsubscribe = Kraken.unsubscribe_frames(&["BTC/USD".to_owned()], StreamKind::Diff, 10);
        let answer = Kraken.answer_request(&unsubscribe[0]).unwrap();
        assert_eq!(answer.unsubscribe, ["BTC/USD"]);
        assert_eq!(decode(&answer.replies[0]).0, Ok(Message::Ignored));
        let pong = Kraken.answer_request(Kraken.client_ping().unwrap().1).unwrap();
        assert_eq!(decode(&pong.replies[0]).0, Ok(Message::Heartbeat));
        assert_eq!(Kraken.kept_depth(11), Some(25));
        assert_eq!(Kraken.kept_depth(5000), Some(1000));
    }

    /// The simulator's frames decode to what it encoded, and carry the book's checksum.
    #[test]
    fn encoded_messages_decode_to_the_same_levels() {
        let (_, snapshot) = decode(DOCS_SNAPSHOT.trim());
        let mut frame = Vec::new();
        let mut book = DepthBook::new(1000);
        book.replace(&snapshot);
        let decimals = WireDecimals {
            price: 8,
            amount: 8,
        };
        let checksum = Kraken::checksum(&book, decimals);
        Kraken.encode_snapshot("BTC/USD", &snapshot, SnapshotSource::InBand, checksum, 8, &mut frame);
        let (message, decoded) = decode(std::str::from_utf8(&frame).unwrap());
        assert_eq!(message, Ok(Message::Book { stream: b"BTC/USD" }));
        assert_eq!(
            (decoded.bids, decoded.asks),
            (snapshot.bids.clone(), snapshot.asks.clone())
        );
        assert_eq!((decoded.checksum, decoded.decimals), (checksum, decimals));
        let mut update = snapshot.clone();
        update.bids.truncate(1);
        update.asks.clear();
        update.last_id = 1_786_540_345_149_000;
        frame.clear();
        Kraken.encode_diff("BTC/USD", &update, None, 8, 0, &mut frame);
        let (message, decoded) = decode(std::str::from_utf8(&frame).unwrap());
        assert_eq!(message, Ok(Message::Book { stream: b"BTC/USD" }));
        assert!(!decoded.is_snapshot);
        assert_eq!(
            (decoded.bids, decoded.last_id, decoded.checksum),
            (update.bids, update.last_id, None)
        );
    }
}
