//! Kraken spot, WebSocket v2, channel `book`.
//!
//! Docs: <https://docs.kraken.com/api/docs/websocket-v2/book> and the checksum guide
//! <https://docs.kraken.com/api/docs/guides/spot-ws-book-v2> (and `docs/protocols.md`, Kraken spot).
//!
//! A subscription (`{"method":"subscribe","params":{"channel":"book","symbol":["BTC/USD"],
//! "depth":10,"snapshot":true},"req_id":1}`) is acknowledged once per symbol and starts
//! with a snapshot on the stream; updates follow. Prices and quantities are bare JSON
//! numbers printed with the pair's precision. Each message carries a CRC32 of the book
//! after it (top 10 asks then bids), so the book is checked after every message: Kraken
//! has no sequence numbers, the checksum is what shows a lost or garbled update. After
//! each message each side is cut to the subscribed depth: Kraken sends no deletes for
//! levels pushed out of it. A real snapshot and update
//! (`tests/fixtures/kraken/v2_book_BTCUSD_depth10_status_ack_snapshot_update_2026-08-12.jsonl`,
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
//!
//! The book's time (`exchange_time_ns`, docs/protocols.md): `timestamp` (RFC 3339, µs),
//! of updates and of the snapshots that carry one.

use super::{Acked, Answer, Checksum, ConnectBudget, Credentials, Decode, DecodeError, LevelShape, LevelTexts, Message, Simulated, SnapshotSource, Snapshots, StreamKind, Streams, SubscribeRequest, Venue, VenueFacts};
use super::wire::{Seen, check_sorted};
use super::timestamps::{self, unix_micros_or, write_timestamp};
use crate::book::{BookUpdate, DepthBook, Level, Side, TopBook, WireDecimals};
use crate::json::Walker;

mod decode;
mod subscribe;
mod sequence;
mod sim;
#[cfg(test)]
mod tests;

use sim::DEPTHS;
pub struct Kraken;

/// The smallest depth Kraken offers that covers `requested` (its most, 1000, beyond).
fn subscribed_depth(requested: usize) -> usize {
    DEPTHS
        .into_iter()
        .find(|&depth| depth >= requested)
        .unwrap_or(DEPTHS[DEPTHS.len() - 1])
}

impl Venue for Kraken {
    const FACTS: VenueFacts = VenueFacts {
        name: "kraken",
        exchange: "kraken",
        default_url: "wss://ws.kraken.com/v2",
        // Kraken's REST API (diff mode's snapshots come on the WebSocket; nothing is fetched).
        default_rest_url: "https://api.kraken.com",
        // "Connection attempts are rate limited by Cloudflare (keep well under ~150 per 10
        // minutes per IP)" (docs/protocols.md, Kraken, Limits; marked uncertain there).
        connect_budget: ConnectBudget {
            attempts: 100,
            per: std::time::Duration::from_secs(600),
        },
        // Kraken documents no cap; its per-connection message rate is dynamic (docs/protocols.md,
        // Kraken, Limits), so subscriptions, acks and resubscriptions are spread over
        // connections of at most this many symbols.
        max_connection_age: None,
        max_streams_per_connection: 50,
        // Kraken's `book` channel is a diff stream; there is no top-N snapshot stream.
        max_subscriptions: None,
        snapshot_streams: false,
        diff_streams: true,
        binary_books: false,
        credentials: Credentials::None,
        snapshots: SnapshotSource::InBand,
        rest_budget: None,
        // No sequence numbers: the checksum after each message is Kraken's check.
        sequencing: &crate::book::diff_sync::Unsequenced,
    };
}
