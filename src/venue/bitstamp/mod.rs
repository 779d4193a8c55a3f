//! Bitstamp WebSocket API v2, live order book: channel `order_book_<pair>`.
//!
//! Docs: <https://www.bitstamp.net/websocket/v2/> (and `docs/protocols.md`, Bitstamp).
//!
//! Each data frame carries the top 100 bids and asks and replaces the previous book.
//! Everything is a string; price decimals depend on the pair, amounts have 8. Data frames
//! carry spaces after `:` and `,` or none, and the key order varies, so what a frame means
//! never depends on its byte layout: the two recorded layouts are read by a fast path that
//! compares the bytes around the values with the layout's, and any other frame by the
//! general object walk, which gives the same answer. A real frame
//! (`tests/fixtures/bitstamp/order_book_btcusd_top100_samples_2020.jsonl`, shortened):
//!
//! ```text
//! {"data": {"timestamp": "1580336834", "microtimestamp": "1580336834607546",
//!  "bids": [["9328.28", "0.05925332"], ["9327.34", "0.43120000"], …],
//!  "asks": [["9337.10", "0.03000000"], …]}, "event": "data", "channel": "order_book_btcusd"}
//! ```
//!
//! Control frames (`tests/fixtures/bitstamp/control_messages.jsonl`):
//! `{"event":"bts:subscription_succeeded","channel":"order_book_btcusd","data":{}}`,
//! `{"event":"bts:request_reconnect","channel":"","data":""}`,
//! `{"event":"bts:heartbeat","channel":"","data":{"status":"success"}}`, and
//! `bts:error` for a refused request. `microtimestamp` becomes the book's
//! `venue_sequence` and its time (`exchange_time_ns`), in books, diff events and REST
//! snapshots alike.

use super::{Acked, Answer, Checksum, ConnectBudget, Credentials, RestBudget, Decode, DecodeError, Message, Simulated, SnapshotSource, Snapshots, StreamKind, Streams, SubscribeRequest, Venue, VenueFacts};
use super::timestamps;
use super::wire::Seen;
use crate::book::{BookUpdate, Side, TopBook};
use crate::book::diff_sync::Sequencing;
use crate::json::Walker;

mod decode;
mod subscribe;
mod sequence;
mod sim;
#[cfg(test)]
mod tests;

use sequence::Microtimestamps;

pub struct Bitstamp;

/// The channel prefix of the snapshot stream (`order_book_<pair>`).
pub const ORDER_BOOK_PREFIX: &str = "order_book_";

/// The channel prefix of the diff stream (`diff_order_book_<pair>`).
pub const DIFF_ORDER_BOOK_PREFIX: &str = "diff_order_book_";

impl Venue for Bitstamp {
    const FACTS: VenueFacts = VenueFacts {
        name: "bitstamp",
        exchange: "bitstamp",
        default_url: "wss://ws.bitstamp.net",
        default_rest_url: "https://www.bitstamp.net",
        // Bitstamp publishes no limit on connection attempts (docs/protocols.md, Bitstamp,
        // Limits): Binance's, the one a large venue publishes, as a polite bound.
        connect_budget: ConnectBudget {
            attempts: 300,
            per: std::time::Duration::from_secs(300),
        },
        // No documented cap; "a few dozen channels per connection works in practice"
        // (docs/protocols.md, Bitstamp, Limits).
        max_connection_age: None,
        max_streams_per_connection: 40,
        max_subscriptions: None,
        snapshot_streams: true,
        diff_streams: true,
        binary_books: false,
        credentials: Credentials::None,
        snapshots: SnapshotSource::Rest,
        // "10 000 per 10 minutes per IP by default" (docs/protocols.md, Bitstamp, Limits;
        // uncertain).
        rest_budget: Some(RestBudget {
            weight: 10_000,
            per: std::time::Duration::from_secs(600),
        }),
        sequencing: &Microtimestamps,
    };
}
