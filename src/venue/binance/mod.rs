//! Binance spot partial book depth: `<symbol>@depth<N>@100ms`, N ∈ {5, 10, 20}.
//!
//! Docs: <https://github.com/binance/binance-spot-api-docs/blob/master/web-socket-streams.md#partial-book-depth-streams>
//! (and `docs/protocols.md`, Binance spot).
//!
//! Each push is a complete top-N snapshot that replaces the previous one. On a raw stream
//! (`/ws/<stream>`) the payload arrives alone; on a combined stream
//! (`/stream?streams=a/b`) it is wrapped with the stream name, which tells which symbol it
//! is for (the payload itself names none). A real frame
//! (`tests/fixtures/binance/partial_depth20_100ms_BTCUSDT_combined_stream.json`, shortened):
//!
//! ```text
//! {"stream":"btcusdt@depth20@100ms","data":{"lastUpdateId":11655824136,
//!  "bids":[["35496.06000000","0.29859300"],["35494.02000000","0.00056300"],…],
//!  "asks":[["35496.07000000","0.34867100"],["35496.66000000","0.26443500"],…]}}
//! ```
//!
//! Other frames on the same connection: the subscription reply `{"result":null,"id":1}`
//! (an error is `{"code":2,"msg":"…","id":1}`), and `{"e":"serverShutdown","E":ms}`
//! (combined: `{"stream":"!serverShutdown","data":{…}}`), which announces a disconnect.
//!
//! Pushes in the recorded layout (above, or its `data` alone) are read by a fast path that
//! compares the bytes around the values with the layout's; any other frame by the general
//! object walk, which gives the same answer.
//!
//! Prices and amounts are strings with 8 decimals. `lastUpdateId` becomes the book's
//! `venue_sequence`, so a reader can drop an out-of-order push.
//!
//! The book's time (`exchange_time_ns`, docs/protocols.md): a diff event's `E` (ms);
//! partial depth books and REST snapshots carry none.

use super::{Acked, Answer, Checksum, ConnectBudget, Credentials, RestBudget, Decode, DecodeError, Message, Simulated, SnapshotSource, Snapshots, StreamKind, Streams, SubscribeRequest, UNSUBSCRIBE_REQUEST_ID, Venue, VenueFacts};
use super::wire::Seen;
use super::timestamps;
use crate::book::{BookUpdate, Side, TopBook};
use crate::book::diff_sync::Sequencing;
use crate::json::Walker;

pub(super) mod decode;
mod subscribe;
mod sequence;
mod sim;
#[cfg(test)]
mod tests;

pub(crate) use sequence::archived_depth_snapshot;
pub use sequence::UpdateIdRanges;

pub struct Binance;

/// "A connection lives at most 24 hours" (docs/protocols.md, Binance, Keep-alive), as
/// Binance's futures and SBE connections do.
pub const CONNECTION_LIFETIME: std::time::Duration = std::time::Duration::from_secs(24 * 3600);

impl Venue for Binance {
    const FACTS: VenueFacts = VenueFacts {
        name: "binance",
        exchange: "binance",
        default_url: "wss://stream.binance.com:9443/stream",
        default_rest_url: "https://api.binance.com",
        // "≤300 connection attempts per 5 minutes per IP" (docs/protocols.md, Binance, Limits);
        // beyond it the IP is banned.
        connect_budget: ConnectBudget {
            attempts: 300,
            per: std::time::Duration::from_secs(300),
        },
        // "≤1024 streams per connection" (docs/protocols.md, Binance, Limits).
        max_connection_age: Some(CONNECTION_LIFETIME),
        max_streams_per_connection: 1024,
        max_subscriptions: None,
        snapshot_streams: true,
        diff_streams: true,
        binary_books: false,
        credentials: Credentials::None,
        snapshots: SnapshotSource::Rest,
        // "IP budget `REQUEST_WEIGHT` 6000/min" (docs/protocols.md, Binance, REST weights).
        rest_budget: Some(RestBudget {
            weight: 6000,
            per: std::time::Duration::from_secs(60),
        }),
        sequencing: &UpdateIdRanges,
    };
}
