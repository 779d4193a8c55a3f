//! Hyperliquid, WebSocket `l2Book`: the whole top of a coin's book in every frame.
//!
//! Docs: <https://hyperliquid.gitbook.io/hyperliquid-docs/for-developers/api/websocket>
//! (and `docs/protocols.md`, Hyperliquid).
//!
//! One subscription a coin (`{"method":"subscribe","subscription":{"type":"l2Book",
//! "coin":"BTC"}}`), acknowledged by a `subscriptionResponse` echoing it. Every book frame
//! is the coin's whole top of book, bids descending and asks ascending, each level an
//! object of strings (`px`, `sz`) and its order count `n`; there are no sequence numbers
//! and no checksum, and a missed frame costs only freshness. `time` (unix milliseconds,
//! never decreasing) is the book's `venue_sequence`: an older frame never replaces a newer
//! one. A real frame (`tests/fixtures/hyperliquid/timeline_l2Book_trades_BTC_2025-01-26_first30.jsonl`,
//! shortened):
//!
//! ```text
//! {"channel":"l2Book","data":{"coin":"BTC","levels":[[{"n":5,"px":"105055.0","sz":"3.03622"},
//!  {"n":1,"px":"105054.0","sz":"0.1428"},…],[{"n":13,"px":"105056.0","sz":"6.34472"},…]],
//!  "time":1737918843542}}
//! ```
//!
//! Frames of 2026 put `time` before `levels` and `n` last in a level; the decoder reads
//! any member order. Two cadences: the default subscription sends 20 levels a side
//! (about every 0.5 s in the recording; slowed to seconds in 2026, an uncertain report),
//! `"fast":true` sends 5 levels about every 0.5 s. The reader subscribes `fast` when the
//! configured depth is 5 or fewer, and the default stream up to 20; a deeper
//! `service.depth` is a configuration error. Control frames: `{"channel":"pong"}`
//! answering the client's `{"method":"ping"}` (the venue closes a connection silent for
//! 60 s, and sends no pings of its own), and `{"channel":"error","data":"<text>"}` for a
//! request it refuses. A coin it does not list closes the whole connection without a
//! word, so names are checked before any subscription: by their form (`check_symbol`),
//! then against the venue's listing (`POST /info`, `listing_requests`). A delisted coin
//! sends `{"levels":[[],[]]}`: a book without sides, which the merger shows as such.
//!
//! The book's time (`exchange_time_ns`, docs/protocols.md): `time` (ms), also its
//! sequence.

use super::{Acked, Answer, Checksum, ConnectBudget, Credentials, Decode, DecodeError, LevelShape, Message, Simulated, SnapshotSource, Snapshots, StreamKind, Streams, SubscribeRequest, Venue, VenueFacts};
use super::timestamps;
use super::wire::Seen;
use crate::book::{Side, TopBook};
use crate::json::Walker;

mod decode;
mod subscribe;
mod sequence;
mod sim;
#[cfg(test)]
mod tests;

pub struct Hyperliquid;

/// The most levels a side the `fast` subscription sends; deeper books take the default one.
pub const FAST_LEVELS: usize = 5;

/// The levels a side of the default subscription: the most the venue sends.
pub const DEFAULT_LEVELS: usize = 20;

impl Venue for Hyperliquid {
    const FACTS: VenueFacts = VenueFacts {
        name: "hyperliquid",
        exchange: "hyperliquid",
        default_url: "wss://api.hyperliquid.xyz/ws",
        // Its `info` endpoint (`POST /info`): the listing asked before connecting; no
        // snapshot is fetched.
        default_rest_url: "https://api.hyperliquid.xyz",
        // The stricter of two published limits (docs/protocols.md, Hyperliquid, Limits): 30
        // new connections a minute per IP, from notes of 2026 the docs do not repeat.
        connect_budget: ConnectBudget {
            attempts: 30,
            per: std::time::Duration::from_secs(60),
        },
        // At most 1,000 subscriptions per IP, and 10 connections by the stricter note:
        // 100 coins a connection reach the one limit with the other.
        max_connection_age: None,
        max_streams_per_connection: 100,
        // "At most 1,000 subscriptions" per IP (docs/protocols.md, Hyperliquid, Limits).
        max_subscriptions: Some(1000),
        snapshot_streams: true,
        // Every frame is a whole book: there is nothing to keep in sync.
        diff_streams: false,
        binary_books: false,
        credentials: Credentials::None,
        snapshots: SnapshotSource::InBand,
        rest_budget: None,
        sequencing: &crate::book::diff_sync::Unsequenced,
    };
}
