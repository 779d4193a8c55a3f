//! KuCoin spot's classic public feed (`api.kucoin.com`).
//!
//! Docs: <https://www.kucoin.com/docs-new/websocket-api/base-info/introduction>,
//! <https://www.kucoin.com/docs-new/3470068w0> (and `docs/protocols.md`, KuCoin).
//!
//! A connection starts with a token: `POST /api/v1/bullet-public` answers a token, the
//! endpoint to connect to and the ping interval, and the connection goes to
//! `<endpoint>?token=<token>&connectId=<id>` (a recording keeps the URL without the
//! token). The venue greets it with `{"id":"<connectId>","type":"welcome"}` before it
//! takes requests. Requests are `{"id":"1","type":"subscribe","topic":"/market/level2:
//! BTC-USDT,ETH-USDT","privateChannel":false,"response":true}` (at most 100 symbols a
//! topic), acknowledged `{"id":"1","type":"ack"}` or refused `{"id":"1","type":"error",
//! "code":404,"data":"topic does not exist"}`; the client pings `{"id":…,"type":"ping"}`.
//!
//! Diff mode reads `/market/level2:<symbol>`, each change with its own sequence, seeded
//! from the REST book's `sequence`: messages whose `sequenceEnd` the book has are dropped,
//! each next one starts at most at the book's sequence + 1 (Binance spot's rule,
//! [`UpdateIdRanges`](super::binance::UpdateIdRanges)), and of a message that overlaps the
//! book only the changes numbered after it apply (`BookUpdate::change_ids`). A change
//! priced `"0"` only moves the sequence on: it is no level. A real message
//! (`tests/fixtures/kucoin/timeline_level2_SNX-BTC_2021-04-25.jsonl`):
//!
//! ```text
//! {"data":{"sequenceStart":1612844051660,"symbol":"SNX-BTC","changes":{"asks":[],
//!  "bids":[["0.00028678","0.19100065","1612844051660"]]},"sequenceEnd":1612844051660},
//!  "subject":"trade.l2update","topic":"/market/level2:SNX-BTC","type":"message"}
//! ```
//!
//! The public REST book is the top 100 (`/api/v1/market/orderbook/level2_100`): a book
//! built from it knows a side only down to the snapshot's last level, and is rebuilt when
//! it holds fewer than the published depth there (`Snapshots::partial_snapshot_levels`).
//! With an API key (`key:secret:passphrase`) the whole book is asked for, each request
//! signed (`Snapshots::whole_book_url`, `signed_headers`). Snapshot mode reads
//! `/spotMarket/level2Depth5|50:<symbol>`, a whole top 5 or 50 each push. KuCoin has no
//! checksum.
//!
//! The book's time (`exchange_time_ns`, docs/protocols.md): a message's `data.time` (ms,
//! absent from 2021's messages) and a top-N push's `data.timestamp`.

use super::binance::UpdateIdRanges;
use super::{
    Acked, Answer, Checksum, ConnectBudget, Credentials, Decode, DecodeError, Message,
    RestBudget, Simulated, SnapshotSource, Snapshots, StreamKind, Streams, SubscribeRequest,
    TokenConnection, Venue, VenueFacts,
};
use crate::config::ApiKey;
use crate::book::{BookUpdate, Side, TopBook};
use crate::json::Walker;

mod decode;
mod sequence;
mod sim;
mod subscribe;
pub(super) use subscribe::request_ids;
#[cfg(test)]
mod tests;

/// The levels a side of the public REST book (`level2_100`).
pub(super) const SNAPSHOT_LEVELS: usize = 100;

pub struct Kucoin;

impl Venue for Kucoin {
    const FACTS: VenueFacts = VenueFacts {
        name: "kucoin",
        exchange: "kucoin",
        // Not connected to as it is: each connection goes to the endpoint its token
        // request answers, which is this one today.
        default_url: "wss://ws-api-spot.kucoin.com/",
        default_rest_url: "https://api.kucoin.com",
        // "30 new connections per minute" (docs/protocols.md, KuCoin, Limits).
        connect_budget: ConnectBudget {
            attempts: 30,
            per: std::time::Duration::from_secs(60),
        },
        // The token is valid for 24 hours to connect with; a connection is not closed
        // after a stated time (KuCoin's load balancing closes some about weekly, and
        // those reconnect).
        max_connection_age: None,
        // "≤ 400 topics per spot connection", a symbol a topic.
        max_streams_per_connection: 400,
        max_subscriptions: None,
        snapshot_streams: true,
        diff_streams: true,
        binary_books: false,
        // With `key:secret:passphrase`, snapshots are the whole book, their requests signed.
        credentials: Credentials::SignedRest,
        snapshots: SnapshotSource::Rest,
        // The public resource pool: 2,000 weight per 30 s (a top-100 book weighs 4).
        rest_budget: Some(RestBudget {
            weight: 2000,
            per: std::time::Duration::from_secs(30),
        }),
        sequencing: &UpdateIdRanges,
    };
}
