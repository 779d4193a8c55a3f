//! Bybit, API v5, public `orderbook.{depth}.{symbol}` topics on the spot, linear
//! (USDT/USDC perpetual and futures) and inverse (coin-margined) markets.
//!
//! Docs: <https://bybit-exchange.github.io/docs/v5/websocket/public/orderbook> (and `docs/protocols.md`, Bybit).
//!
//! Each market has its own endpoint (`wss://stream.bybit.com/v5/public/spot`, `…/linear`,
//! `…/inverse`): an instrument names its market before its symbol (`linear:BTCUSDT`,
//! `inverse:BTCUSD`; a bare symbol is
//! spot), and each market's symbols get connections of their own. A subscription
//! (`{"req_id":"1","op":"subscribe","args":["orderbook.50.BTCUSDT"]}`, at most 10 topics a
//! request) is acknowledged once per request and starts with a snapshot on the topic;
//! deltas follow (size `"0"` deletes). Each message carries the topic's update id `u`,
//! which goes up by one from message to message: another step is a gap, and the topic is
//! subscribed again for a new snapshot. A snapshot may come at any time and replaces the
//! book; `u == 1` means the venue restarted the topic, and is a snapshot too. Depth 1 sends
//! snapshots only. Bybit has no checksum. A real snapshot and delta
//! (`tests/fixtures/bybit/linear_orderbook50_BTCUSDT_snapshot_delta_2026-08-12.jsonl`, shortened;
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
//! Amounts are in the base coin on the spot and linear markets. The inverse market's are
//! contracts of a USD value (`contract_sizes`: the value of one, from the instrument's
//! contract size in Bybit's instrument list): its symbols merge only into instruments
//! that count amounts in USD (`unit = "quote"`).
//!
//! The book's time (`exchange_time_ns`, docs/protocols.md): `cts`, the matching engine's
//! (ms), else the message's `ts`.

use super::{Acked, Answer, Checksum, ConnectBudget, Credentials, Decode, DecodeError, Message, Simulated, SnapshotSource, Snapshots, StreamKind, Streams, SubscribeRequest, UNSUBSCRIBE_REQUEST_ID, Venue, VenueFacts};
use super::wire::{Seen, check_sorted};
use crate::book::{BookUpdate, Side, TopBook};
use crate::json::Walker;

mod decode;
mod subscribe;
mod sequence;
mod sim;
#[cfg(test)]
mod tests;

use subscribe::MARKETS;
use sim::DEPTHS;
pub struct Bybit;

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
        // "≤500 new connections per 5 minutes per WebSocket domain" (docs/protocols.md, Bybit,
        // Limits); both markets are on one domain.
        connect_budget: ConnectBudget {
            attempts: 500,
            per: std::time::Duration::from_secs(300),
        },
        // "Total args per connection ≤ 21 000 characters" (docs/protocols.md, Bybit): 500 of the
        // longest topic (`orderbook.1000.` and a 24-character symbol, quoted, with a comma:
        // 42 characters).
        max_connection_age: None,
        max_streams_per_connection: 500,
        // Bybit's topics carry snapshots and deltas: diff mode reads them.
        max_subscriptions: None,
        snapshot_streams: false,
        diff_streams: true,
        binary_books: false,
        credentials: Credentials::None,
        snapshots: SnapshotSource::InBand,
        rest_budget: None,
        sequencing: &ConsecutiveUpdateIds,
    };
}
