//! Coinbase Exchange (the feed once called Coinbase Pro), channel `level2_batch`.
//!
//! Docs: <https://docs.cdp.coinbase.com/exchange/docs/websocket-channels#level2-batch-channel>
//! (and `docs/protocols.md`, Coinbase Exchange).
//!
//! A subscription (`{"type":"subscribe","product_ids":["ETH-USD"],"channels":
//! ["level2_batch","heartbeat"]}`, within 5 s of connecting) is answered by one
//! `{"type":"subscriptions","channels":[…]}` naming no request, and each product's book
//! starts with a full-depth snapshot on the stream; `l2update`s follow, each change
//! `[side, price, size]` with `buy`/`sell` and the new absolute size (`"0.00"` deletes).
//! `level2_batch` is `level2` batched every 50 ms, public (`level2` now wants
//! authentication). Numbers are strings with the product's increments. A real snapshot and
//! update (`tests/fixtures/coinbase/exchange_level2_BAND-GBP_snapshot_then_l2updates.jsonl`,
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
//!
//! The book's time (`exchange_time_ns`, docs/protocols.md): an `l2update`'s `time` (RFC
//! 3339, µs); a `snapshot` carries none.
//!
//! Audits (`Snapshots::audited`): now and then a book is compared with the Exchange REST
//! book (`GET /products/<id>/book?level=2`, whole and aggregated, levels `[price, size,
//! num_orders]`), whose shape is from Coinbase's REST reference, not from a recording.

use super::{Acked, Answer, Checksum, ConnectBudget, Credentials, Decode, DecodeError, LevelShape, Message, Simulated, SnapshotSource, Snapshots, StreamKind, Streams, SubscribeRequest, TaggedShape, UNSUBSCRIBE_REQUEST_ID, Venue, VenueFacts};
use super::wire::{Seen, check_sorted};
use super::timestamps::{self, unix_micros_or, write_timestamp};
use crate::book::{BookUpdate, Level, Side, TopBook};
use crate::json::Walker;

mod decode;
mod subscribe;
mod sequence;
mod sim;
#[cfg(test)]
mod tests;

pub struct CoinbaseExchange;

impl Venue for CoinbaseExchange {
    const FACTS: VenueFacts = VenueFacts {
        name: "coinbase_exchange",
        exchange: "coinbase_exchange",
        default_url: "wss://ws-feed.exchange.coinbase.com",
        // The Exchange REST API (the snapshots come on the WebSocket; nothing is fetched).
        default_rest_url: "https://api.exchange.coinbase.com",
        // "About 8 subscribe messages a second per IP, bursts to 20" (docs/protocols.md, Coinbase
        // Exchange, Limits; marked uncertain there): each connection subscribes once, so its
        // attempts are kept to that.
        connect_budget: ConnectBudget {
            attempts: 8,
            per: std::time::Duration::from_secs(1),
        },
        // Coinbase documents no cap; each product's snapshot is its whole book and the feed
        // drops a connection it cannot write to (`ErrSlowConsume`): products are spread over
        // connections of at most this many.
        max_connection_age: None,
        max_streams_per_connection: 20,
        max_subscriptions: None,
        snapshot_streams: false,
        diff_streams: true,
        binary_books: false,
        credentials: Credentials::None,
        snapshots: SnapshotSource::InBand,
        rest_budget: None,
        sequencing: &crate::book::diff_sync::Unsequenced,
    };
}
