//! Coinbase Advanced Trade, channel `level2` (frames on `l2_data`), with `heartbeats`.
//!
//! Docs: <https://docs.cdp.coinbase.com/advanced-trade/docs/ws-channels#level2-channel>
//! (and `docs/protocols.md`, Coinbase Advanced Trade).
//!
//! One request a channel: `{"type":"subscribe","product_ids":["BTC-USD"],"channel":
//! "level2"}` and `{"type":"subscribe","channel":"heartbeats"}` (channels close after a
//! minute without the heartbeats), each answered by one `subscriptions` message listing
//! every subscription so far; an unknown or refused channel by `{"type":"error",…}`. A real
//! snapshot (`tests/fixtures/coinbase/advanced_trade_l2_data_snapshot_BTC-PERP-INTX_truncated_2026-09-07.json`,
//! cut to 4 levels by its source):
//!
//! ```text
//! {"channel":"l2_data","client_id":"","timestamp":"2026-09-07T01:57:58.894355Z",
//!  "sequence_num":0,"events":[{"type":"snapshot","product_id":"BTC-PERP-INTX","updates":[
//!  {"side":"offer","event_time":"2026-09-07T01:57:58.894355Z","price_level":"79944.1",
//!  "new_quantity":"1.2"},{"side":"bid",…,"price_level":"79943.9","new_quantity":"3.0105"},…]}]}
//! ```
//!
//! An event is a `snapshot` (the product's whole book) or an `update`; each level's
//! `new_quantity` is absolute (`"0"` deletes), `side` is `bid` or `offer`, and a frame may
//! carry events of several products ([`Message::Books`]). `client_id` is sometimes absent.
//!
//! Sequencing: `sequence_num` numbers every message on the connection, of every channel
//! (acks and heartbeats included); a number skipped is data lost for every product on it,
//! which the feed core sees (`BookUpdate::message_number`) and answers by opening the
//! connection anew. Within a product nothing is numbered ([`crate::book::diff_sync::Unsequenced`]);
//! an event's id is its message's number. An update before its product's snapshot breaks
//! the protocol, as on every venue whose snapshots come on the stream: the feed core
//! counts a gap and subscribes to the product again.
//!
//! A snapshot's levels are read in any order (the capture mixes the sides and does not sort
//! them): its best `venues.coinbase.max_book_levels` a side are kept, the rest checked and
//! skipped. Sizes are in the base currency, the INTX perpetuals' included (`BTC-PERP-INTX`
//! sizes are fractions of a BTC, as the capture's `3.0105`).
//!
//! The book's time (`exchange_time_ns`, docs/protocols.md): the message's `timestamp`
//! (RFC 3339, ns), for every event it holds.

use super::{Acked, Answer, Checksum, ConnectBudget, Credentials, Decode, DecodeError, Message, Simulated, SnapshotSource, Snapshots, StreamKind, Streams, SubscribeRequest, TaggedShape, UNSUBSCRIBE_REQUEST_ID, Venue, VenueFacts};
use super::wire::Seen;
use super::timestamps::{self, write_timestamp};
use crate::book::{BookUpdate, Level, Side, TopBook};
use crate::json::Walker;

mod decode;
mod subscribe;
mod sequence;
mod sim;
#[cfg(test)]
mod tests;

pub struct Coinbase;

impl Venue for Coinbase {
    const FACTS: VenueFacts = VenueFacts {
        name: "coinbase",
        exchange: "coinbase",
        default_url: "wss://advanced-trade-ws.coinbase.com",
        // The Advanced Trade REST API (the snapshots come on the WebSocket; nothing is
        // fetched).
        default_rest_url: "https://api.coinbase.com",
        // "8 unauthenticated messages a second per IP" (docs/protocols.md, Coinbase Advanced Trade,
        // Limits; marked uncertain there): a connection sends two requests (its `level2` and
        // its `heartbeats`), so 4 attempts a second keep to it.
        connect_budget: ConnectBudget {
            attempts: 4,
            per: std::time::Duration::from_secs(1),
        },
        // Coinbase documents no cap; each product's snapshot is its whole book, and a lost
        // message costs the connection: products are spread over connections of at most this
        // many.
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
