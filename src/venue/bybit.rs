//! Bybit, API v5, public `orderbook.{depth}.{symbol}` topics on the spot and linear
//! (USDT/USDC perpetual and futures) markets.
//!
//! Docs: <https://bybit-exchange.github.io/docs/v5/websocket/public/orderbook> (see also
//! `../shared/fixtures/PROTOCOLS.md`, section 6).
//!
//! Each market has its own endpoint (`wss://stream.bybit.com/v5/public/spot`, `…/linear`):
//! an instrument names its market before its symbol (`linear:BTCUSDT`; a bare symbol is
//! spot), and each market's symbols get connections of their own. A subscription
//! (`{"req_id":"1","op":"subscribe","args":["orderbook.50.BTCUSDT"]}`, at most 10 topics a
//! request) is acknowledged once per request and starts with a snapshot on the topic;
//! deltas follow (size `"0"` deletes). Each message carries the topic's update id `u`,
//! which goes up by one from message to message: another step is a gap, and the topic is
//! subscribed again for a new snapshot. A snapshot may come at any time and replaces the
//! book; `u == 1` means the venue restarted the topic, and is a snapshot too. Depth 1 sends
//! snapshots only. Bybit has no checksum. A real snapshot and delta
//! (`fixtures/bybit/linear_orderbook50_BTCUSDT_snapshot_delta_2026-08-12.jsonl`, shortened;
//! spot writes `ts` before `type`, so nothing may depend on key order):
//!
//! ```text
//! {"topic":"orderbook.50.BTCUSDT","type":"snapshot","ts":1786540345129,"data":{"s":"BTCUSDT",
//!  "b":[["63982.70","6.408"],…],"a":[["63982.80","5.015"],…],"u":53935309,"seq":760578520138},
//!  "cts":1786540345127}
//! {"topic":"orderbook.50.BTCUSDT","type":"delta","ts":1786540345149,"data":{"s":"BTCUSDT",
//!  "b":[["63982.50","0.003"],["63980.60","0.004"]],"a":[["63990.50","0.008"]],"u":53935310,
//!  "seq":760578520655},"cts":1786540345147}
//! ```
//!
//! Control frames: the subscription ack `{"success":true,"ret_msg":"subscribe",
//! "conn_id":"…","req_id":"1","op":"subscribe"}` (`false` when refused), the answer to the
//! client's `{"op":"ping"}` (`{"success":true,"ret_msg":"pong",…,"op":"ping"}`, or
//! `{"args":["…"],"op":"pong"}`), which Bybit wants every 20 s. Bybit sends no request to
//! reconnect.
//!
//! Amounts are in the base coin on both markets. The inverse market's are contracts of one
//! USD, whose amount in the base coin is a division by the price, not exact: its symbols
//! are refused.

use super::{Acked, Answer, Checksum, ConnectBudget, Decode, DecodeError, Message, Simulated, SnapshotSource, Snapshots, StreamKind, Streams, SubscribeRequest, UNSUBSCRIBE_REQUEST_ID, Venue, VenueFacts};
use super::wire::{Seen, check_sorted};
use crate::book::{BookUpdate, Side, TopBook};
use crate::walker::Walker;

pub struct Bybit;

/// The depths a topic may have.
const DEPTHS: [usize; 4] = [1, 50, 200, 1000];

/// Topics one subscribe request may carry (spot's limit; linear takes more).
const TOPICS_PER_REQUEST: usize = 10;

/// The markets served, each at `<url>/<market>`; a bare symbol is on the first.
const MARKETS: [&str; 2] = ["spot", "linear"];

/// Bybit's symbols are short upper-case names (`BTCUSDT`, `1000PEPEUSDT`).
const MAX_SYMBOL_LEN: usize = 24;

const TOPIC: u32 = 0;
const TYPE: u32 = 1;
const DATA: u32 = 2;
const OP: u32 = 3;
const SUCCESS: u32 = 4;
const SYMBOL: u32 = 5;
const BIDS: u32 = 6;
const ASKS: u32 = 7;
const UPDATE_ID: u32 = 8;

/// What a book message's `data` must hold.
const DATA_KEYS: [(u32, &str); 4] = [
    (SYMBOL, "s"),
    (BIDS, "b"),
    (ASKS, "a"),
    (UPDATE_ID, "u"),
];

/// The market and the symbol of an instrument's configured symbol.
fn market_and_symbol(configured: &str) -> (&str, &str) {
    configured.split_once(':').unwrap_or((MARKETS[0], configured))
}

/// The symbol an `orderbook.{depth}.{symbol}` topic is about, and its depth.
fn topic_parts(topic: &[u8]) -> Option<(usize, &[u8])> {
    let rest = topic.strip_prefix(b"orderbook.")?;
    let dot = memchr::memchr(b'.', rest)?;
    let depth = std::str::from_utf8(&rest[..dot]).ok()?.parse().ok()?;
    let symbol = &rest[dot + 1..];
    (DEPTHS.contains(&depth) && !symbol.is_empty()).then_some((depth, symbol))
}

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
    let (mut topic, mut kind, mut op): (&[u8], &[u8], &[u8]) = (b"", b"", b"");
    let mut symbol: &[u8] = b"";
    let mut success = false;
    let mut request_id: &[u8] = b"";
    out.clear();
    walker.object(|walker, key| {
        match key {
            b"topic" => {
                seen.mark(TOPIC, "topic")?;
                topic = walker.string()?;
            }
            b"type" => {
                seen.mark(TYPE, "type")?;
                kind = walker.string()?;
            }
            b"op" => {
                seen.mark(OP, "op")?;
                op = walker.string()?;
            }
            b"success" => {
                seen.mark(SUCCESS, "success")?;
                success = walker.boolean()?;
            }
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
fn data_member<'a>(
    walker: &mut Walker<'a>,
    key: &[u8],
    seen: &mut Seen,
    symbol: &mut &'a [u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<(), DecodeError> {
    match key {
        b"s" => {
            seen.mark(SYMBOL, "s")?;
            *symbol = walker.string()?;
        }
        b"b" => {
            seen.mark(BIDS, "b")?;
            walker.all_levels(None, max_levels, &mut out.bids)?;
        }
        b"a" => {
            seen.mark(ASKS, "a")?;
            walker.all_levels(None, max_levels, &mut out.asks)?;
        }
        b"u" => {
            seen.mark(UPDATE_ID, "u")?;
            let id = walker.unsigned()?;
            out.first_id = id;
            out.last_id = id;
        }
        _ => walker.skip_value()?,
    }
    Ok(())
}

/// The smallest depth Bybit offers that covers `requested` (its most, 1000, beyond).
fn subscribed_depth(requested: usize) -> usize {
    DEPTHS
        .into_iter()
        .find(|&depth| depth >= requested)
        .unwrap_or(DEPTHS[DEPTHS.len() - 1])
}

/// The requests for `op` on the topics of `symbols` at `depth`, 10 topics a request,
/// numbered from `first_id` (unsubscriptions all 0, which no subscription has).
fn requests(op: &str, symbols: &[String], depth: usize, first_id: u64) -> Vec<SubscribeRequest> {
    let depth = subscribed_depth(depth);
    symbols
        .chunks(TOPICS_PER_REQUEST)
        .enumerate()
        .map(|(index, chunk)| {
            let topics: Vec<String> = chunk
                .iter()
                .map(|symbol| format!("orderbook.{depth}.{symbol}"))
                .collect();
            let id = match first_id {
                UNSUBSCRIBE_REQUEST_ID => UNSUBSCRIBE_REQUEST_ID,
                first => first + index as u64,
            };
            let start = index * TOPICS_PER_REQUEST;
            SubscribeRequest {
                frame: serde_json::json!({"req_id": id.to_string(), "op": op, "args": topics})
                    .to_string(),
                id: Some(id),
                streams: start..start + chunk.len(),
            }
        })
        .collect()
}

/// Bybit's `u` is an update id per topic, up by one a message: a one-id range, to which
/// Binance's rule for id ranges applies as it is (contained when `u` is at most the book's
/// last; a gap when it is beyond the next; a snapshot joins the message after it).
pub use super::binance::UpdateIdRanges as ConsecutiveUpdateIds;

impl Venue for Bybit {
    const FACTS: VenueFacts = VenueFacts {
        name: "bybit",
        exchange: "bybit",
        // The markets' endpoints are under it (`endpoint`).
        default_url: "wss://stream.bybit.com/v5/public",
        // Bybit's REST API (diff mode's snapshots come on the WebSocket; nothing is fetched).
        default_rest_url: "https://api.bybit.com",
        // "≤500 new connections per 5 minutes per WebSocket domain" (PROTOCOLS.md, Bybit,
        // Limits); both markets are on one domain.
        connect_budget: ConnectBudget {
            attempts: 500,
            per: std::time::Duration::from_secs(300),
        },
        // "Total args per connection ≤ 21 000 characters" (PROTOCOLS.md, Bybit): 500 of the
        // longest topic (`orderbook.1000.` and a 24-character symbol, quoted, with a comma:
        // 42 characters).
        max_streams_per_connection: 500,
        // Bybit's topics carry snapshots and deltas: diff mode reads them.
        snapshot_streams: false,
        binary_books: false,
        api_key_header: None,
        snapshots: SnapshotSource::InBand,
        sequencing: &ConsecutiveUpdateIds,
    };
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

impl Checksum for Bybit {}

impl Streams for Bybit {
    fn spot_symbol(&self, base: &str, quote: &str) -> String {
        format!("{base}{quote}")
    }

    fn stream_name(&self, symbol: &str, _depth: usize) -> String {
        self.diff_stream_name(symbol)
    }

    /// 10 topics a request, each request acknowledged once, naming its `req_id`.
    fn subscribe_frames(
        &self,
        streams: &[String],
        _kind: StreamKind,
        depth: usize,
        first_id: u64,
    ) -> Vec<SubscribeRequest> {
        requests("subscribe", streams, depth, first_id.max(1))
    }

    fn unsubscribe_frames(&self, streams: &[String], _kind: StreamKind, depth: usize) -> Vec<String> {
        let requests = requests("unsubscribe", streams, depth, UNSUBSCRIBE_REQUEST_ID);
        requests.into_iter().map(|request| request.frame).collect()
    }

    /// "Send `{"req_id":"…","op":"ping"}` every 20 s" (PROTOCOLS.md, Bybit, Keep-alive).
    fn client_ping(&self) -> Option<(std::time::Duration, &'static str)> {
        Some((std::time::Duration::from_secs(20), r#"{"op":"ping"}"#))
    }

    /// `<url>/spot` or `<url>/linear`, by the symbol's market.
    fn endpoint(&self, url: &str, symbol: &str) -> String {
        let (market, _) = market_and_symbol(symbol);
        format!("{}/{market}", url.trim_end_matches('/'))
    }

    fn check_symbol(&self, configured: &str) -> Result<(), String> {
        let (market, symbol) = market_and_symbol(configured);
        if market == "inverse" {
            return Err("inverse contracts are sized in USD, which is no exact amount of \
                        the base coin to merge: use the spot or linear market"
                .into());
        }
        if !MARKETS.contains(&market) {
            return Err(format!(
                "a Bybit market is {} (before ':'; spot without one)",
                MARKETS.join(" or ")
            ));
        }
        if symbol.is_empty()
            || symbol.len() > MAX_SYMBOL_LEN
            || !symbol
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        {
            return Err(format!(
                "a Bybit symbol is 1 to {MAX_SYMBOL_LEN} upper-case letters and digits"
            ));
        }
        Ok(())
    }

    /// A book is known by its symbol on its connection (the market is the connection's).
    fn diff_stream_name(&self, symbol: &str) -> String {
        market_and_symbol(symbol).1.to_owned()
    }

    /// The symbol of a stream, or of a topic (`orderbook.50.BTCUSDT`).
    fn diff_stream_symbol(&self, stream: &str) -> Option<String> {
        let symbol = match topic_parts(stream.as_bytes()) {
            Some((_, symbol)) => std::str::from_utf8(symbol).ok()?,
            None => stream,
        };
        (!symbol.is_empty() && !symbol.contains('.')).then(|| symbol.to_owned())
    }
}

impl Snapshots for Bybit {
    /// Keeps the book at the topic's depth: levels leaving it arrive as deletes, and a
    /// cut book is bounded even if one is missed.
    fn kept_depth(&self, requested: usize) -> Option<usize> {
        Some(subscribed_depth(requested))
    }

    /// Bybit's REST order book (its snapshots come on the WebSocket instead).
    fn snapshot_url(&self, rest_base: &str, symbol: &str, limit: usize) -> String {
        let (market, symbol) = market_and_symbol(symbol);
        format!("{rest_base}/v5/market/orderbook?category={market}&symbol={symbol}&limit={limit}")
    }
}

/// A book message as Bybit writes it (spot's key order), `topic` naming its book.
fn write_book_message(
    kind: &str,
    topic: &str,
    update: (&BookUpdate, u64),
    price_decimals: u32,
    out: &mut Vec<u8>,
) {
    use std::io::Write;
    let (update, unix_ms) = update;
    let symbol = topic.rsplit('.').next().unwrap_or(topic);
    write!(
        out,
        r#"{{"topic":"{topic}","ts":{unix_ms},"type":"{kind}","data":{{"s":"{symbol}","b":"#
    )
    .expect("writing to a Vec cannot fail");
    super::wire::write_levels(&update.bids, price_decimals, "", out);
    out.extend_from_slice(br#","a":"#);
    super::wire::write_levels(&update.asks, price_decimals, "", out);
    let id = update.last_id;
    write!(out, r#","u":{id},"seq":{id}}},"cts":{unix_ms}}}"#)
        .expect("writing to a Vec cannot fail");
}

/// The simulator's side of Bybit. Its streams are the topics (`orderbook.50.BTCUSDT`).
impl Simulated for Bybit {
    /// A snapshot message of the book.
    fn encode_book(&self, stream: &str, book: &TopBook, price_decimals: u32, out: &mut Vec<u8>) {
        let mut snapshot = BookUpdate::default();
        snapshot.bids.extend_from_slice(book.bids.as_slice());
        snapshot.asks.extend_from_slice(book.asks.as_slice());
        snapshot.last_id = book.venue_sequence;
        write_book_message("snapshot", stream, (&snapshot, 0), price_decimals, out);
    }

    /// Subscriptions and unsubscriptions (an ack per request, as recorded on spot; a
    /// topic Bybit does not have is refused) and pings.
    fn answer_request(&self, request: &str) -> Option<Answer> {
        let request: serde_json::Value = serde_json::from_str(request).ok()?;
        let op = request.get("op")?.as_str()?;
        let req_id = request
            .get("req_id")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("");
        let reply = |success: bool, ret_msg: &str| {
            serde_json::json!({
                "success": success,
                "ret_msg": ret_msg,
                "conn_id": "d9avtftc9enb83116hvg-5i8rn",
                "req_id": req_id,
                "op": op,
            })
            .to_string()
        };
        if op == "ping" {
            return Some(Answer {
                replies: vec![reply(true, "pong")],
                ping: true,
                ..Answer::default()
            });
        }
        let topics: Vec<String> = request
            .get("args")?
            .as_array()?
            .iter()
            .map(|topic| topic.as_str().map(str::to_owned))
            .collect::<Option<_>>()?;
        let parts: Option<Vec<_>> = topics
            .iter()
            .map(|topic| topic_parts(topic.as_bytes()))
            .collect();
        let Some(parts) = parts.filter(|_| topics.len() <= TOPICS_PER_REQUEST) else {
            let refusal = format!("error:handler not found,topic:{}", topics.join(","));
            return Some(Answer {
                replies: vec![reply(false, &refusal)],
                ..Answer::default()
            });
        };
        let depth = parts.first().map(|&(depth, _)| depth);
        match op {
            "subscribe" => Some(Answer {
                subscribe: topics,
                replies: vec![reply(true, "subscribe")],
                depth,
                ..Answer::default()
            }),
            "unsubscribe" => Some(Answer {
                unsubscribe: topics,
                replies: vec![reply(true, "")],
                depth,
                ..Answer::default()
            }),
            _ => None,
        }
    }

    fn levels_on_stream(&self, stream: &str) -> usize {
        topic_parts(stream.as_bytes()).map_or(DEPTHS[1], |(depth, _)| depth)
    }

    fn encode_diff(
        &self,
        stream: &str,
        update: &BookUpdate,
        _checksum: Option<u32>,
        price_decimals: u32,
        unix_ms: u64,
        out: &mut Vec<u8>,
    ) {
        write_book_message("delta", stream, (update, unix_ms), price_decimals, out);
    }

    /// The snapshot that starts a subscription, on the topic.
    fn encode_snapshot(
        &self,
        stream: &str,
        snapshot: &BookUpdate,
        _on: SnapshotSource,
        _checksum: Option<u32>,
        price_decimals: u32,
        out: &mut Vec<u8>,
    ) {
        let unix_ms = crate::clock::unix_ns() / 1_000_000;
        write_book_message("snapshot", stream, (snapshot, unix_ms), price_decimals, out);
    }

    /// One id a message, consecutive.
    fn next_event_ids(&self, last_id: u64, _changes: u64, _now_us: u64) -> (u64, u64) {
        (last_id + 1, last_id + 1)
    }

    /// Well above 1, which would mean a restarted topic.
    fn initial_event_id(&self, _now_us: u64) -> u64 {
        53_935_309
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(frame: &str) -> (Result<Message<'_>, DecodeError>, BookUpdate) {
        let mut out = BookUpdate::default();
        let message = Bybit::decode_diff(frame.as_bytes(), 1000, &mut out);
        (message, out)
    }

    #[test]
    fn control_frames_are_classified() {
        let frames = [
            (
                r#"{"success":true,"ret_msg":"subscribe","conn_id":"d9avtftc9enb83116hvg-5i8rn","req_id":"1","op":"subscribe"}"#,
                Ok(Message::SubscribeResult {
                    accepted: true,
                    acked: Acked::Request(1),
                }),
            ),
            (
                r#"{"success":true,"ret_msg":"","conn_id":"d6ki1eae0cl5msgggj7g-1uoz2","req_id":"","op":"subscribe"}"#,
                Ok(Message::SubscribeResult {
                    accepted: true,
                    acked: Acked::Oldest,
                }),
            ),
            (
                r#"{"success":false,"ret_msg":"error:handler not found,topic:orderbook.7.BTCUSDT","conn_id":"x","req_id":"1","op":"subscribe"}"#,
                Ok(Message::SubscribeResult {
                    accepted: false,
                    acked: Acked::Request(1),
                }),
            ),
            (
                r#"{"success":true,"ret_msg":"pong","conn_id":"0970e817-426e-429a-a679-ff7f55e0b16a","op":"ping"}"#,
                Ok(Message::Heartbeat),
            ),
            (
                r#"{"args":["1672916271846"],"op":"pong"}"#,
                Ok(Message::Heartbeat),
            ),
            (
                r#"{"success":true,"ret_msg":"","conn_id":"x","req_id":"1","op":"unsubscribe"}"#,
                Ok(Message::Ignored),
            ),
            (
                r#"{"topic":"publicTrade.BTCUSDT","type":"snapshot","ts":1,"data":[{"p":"1"}]}"#,
                Ok(Message::Ignored),
            ),
            (
                r#"{"op":"subscribe","ret_msg":""}"#,
                Err(DecodeError::MissingKey("success")),
            ),
            (
                r#"{"ret_msg":""}"#,
                Err(DecodeError::UnknownMessage("Bybit v5 message")),
            ),
            (
                r#"{"topic":"orderbook.7.BTCUSDT","type":"delta","data":{"s":"BTCUSDT","b":[],"a":[],"u":2}}"#,
                Err(DecodeError::Invalid("a topic like orderbook.50.BTCUSDT")),
            ),
            (
                r#"{"topic":"orderbook.50.BTCUSDT","type":"delta","data":{"s":"ETHUSDT","b":[],"a":[],"u":2}}"#,
                Err(DecodeError::Invalid("a book message's symbol is its topic's")),
            ),
            (
                r#"{"topic":"orderbook.50.BTCUSDT","type":"delta","data":{"s":"BTCUSDT","b":[],"a":[]}}"#,
                Err(DecodeError::MissingKey("u")),
            ),
            (
                r#"{"topic":"orderbook.50.BTCUSDT","type":"delta"}"#,
                Err(DecodeError::MissingKey("data")),
            ),
        ];
        for (frame, expected) in frames {
            assert_eq!(decode(frame).0, expected, "{frame}");
        }
    }

    /// `u == 1` is a restarted topic: its delta starts the book again.
    #[test]
    fn a_delta_with_update_id_1_is_a_snapshot() {
        let frame = r#"{"topic":"orderbook.50.BTCUSDT","type":"delta","data":{"s":"BTCUSDT","b":[["2","1"]],"a":[["3","1"]],"u":1}}"#;
        let (message, update) = decode(frame);
        assert_eq!(message, Ok(Message::Book { stream: b"BTCUSDT" }));
        assert!(update.is_snapshot);
        let (_, later) = decode(&frame.replace(r#""u":1"#, r#""u":2"#));
        assert!(!later.is_snapshot);
    }

    #[test]
    fn symbols_name_their_market_and_connection() {
        let url = "wss://stream.bybit.com/v5/public";
        assert_eq!(Bybit.endpoint(url, "BTCUSDT"), format!("{url}/spot"));
        assert_eq!(Bybit.endpoint(url, "linear:BTCUSDT"), format!("{url}/linear"));
        assert_eq!(Bybit.diff_stream_name("linear:BTCUSDT"), "BTCUSDT");
        assert_eq!(
            Bybit.diff_stream_symbol("orderbook.50.BTCUSDT").as_deref(),
            Some("BTCUSDT")
        );
        assert_eq!(Bybit.check_symbol("linear:1000PEPEUSDT"), Ok(()));
        for bad in ["inverse:BTCUSD", "option:BTC", "btcusdt", "spot:", "BTC/USDT"] {
            assert!(Bybit.check_symbol(bad).is_err(), "{bad}");
        }
        assert!(
            Bybit.check_symbol("inverse:BTCUSD")
                .unwrap_err()
                .contains("inverse contracts")
        );
    }

    #[test]
    fn subscriptions_round_trip_through_the_simulator() {
        let symbols: Vec<String> = (0..12).map(|n| format!("C{n}USDT")).collect();
        let requests = Bybit.subscribe_frames(&symbols, StreamKind::Diff, 20, 5);
        let shape: Vec<_> = requests
            .iter()
            .map(|request| (request.id, request.streams.clone()))
            .collect();
        assert_eq!(shape, [(Some(5), 0..10), (Some(6), 10..12)], "10 topics a request");
        assert_eq!(
            Bybit.subscribe_frames(&symbols[..1], StreamKind::Diff, 20, 1)[0].frame,
            r#"{"args":["orderbook.50.C0USDT"],"op":"subscribe","req_id":"1"}"#
        );
        let answer = Bybit.answer_request(&requests[1].frame).unwrap();
        assert_eq!((answer.subscribe.len(), answer.depth), (2, Some(50)));
        assert_eq!(
            decode(&answer.replies[0]).0,
            Ok(Message::SubscribeResult {
                accepted: true,
                acked: Acked::Request(6)
            })
        );
        let unsubscribe = Bybit.unsubscribe_frames(&symbols[..1], StreamKind::Diff, 20);
        let answer = Bybit.answer_request(&unsubscribe[0]).unwrap();
        assert_eq!(answer.unsubscribe, ["orderbook.50.C0USDT"]);
        assert_eq!(decode(&answer.replies[0]).0, Ok(Message::Ignored));
        let pong = Bybit.answer_request(Bybit.client_ping().unwrap().1).unwrap();
        assert_eq!(decode(&pong.replies[0]).0, Ok(Message::Heartbeat));
        let refused = Bybit.answer_request(r#"{"op":"subscribe","args":["orderbook.7.X"]}"#)
            .unwrap();
        assert!(matches!(
            decode(&refused.replies[0]).0,
            Ok(Message::SubscribeResult {
                accepted: false,
                ..
            })
        ));
        assert_eq!(Bybit.kept_depth(10), Some(50));
        assert_eq!(Bybit.kept_depth(1), Some(1));
        assert_eq!(Bybit.kept_depth(5000), Some(1000));
    }

    /// The simulator's frames decode to what it encoded.
    #[test]
    fn encoded_messages_decode_to_the_same_levels() {
        let recorded = include_str!(
            "../../tests/fixtures/bybit/linear_orderbook50_BTCUSDT_snapshot_delta_2026-08-12.jsonl"
        );
        let (_, snapshot) = decode(recorded.lines().next().unwrap());
        let mut frame = Vec::new();
        Bybit.encode_snapshot("orderbook.50.BTCUSDT", &snapshot, SnapshotSource::InBand, None, 2, &mut frame);
        let (message, decoded) = decode(std::str::from_utf8(&frame).unwrap());
        assert_eq!(message, Ok(Message::Book { stream: b"BTCUSDT" }));
        assert!(decoded.is_snapshot);
        assert_eq!(
            (&decoded.bids, &decoded.asks, decoded.last_id),
            (&snapshot.bids, &snapshot.asks, 53_935_309)
        );
        let mut update = snapshot.clone();
        update.bids.truncate(1);
        update.asks.clear();
        update.last_id += 1;
        frame.clear();
        Bybit.encode_diff("orderbook.50.BTCUSDT", &update, None, 2, 7, &mut frame);
        let (message, decoded) = decode(std::str::from_utf8(&frame).unwrap());
        assert_eq!(message, Ok(Message::Book { stream: b"BTCUSDT" }));
        assert!(!decoded.is_snapshot);
        assert_eq!((decoded.bids, decoded.last_id), (update.bids, update.last_id));
    }
}
