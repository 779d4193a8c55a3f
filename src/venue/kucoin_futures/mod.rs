//! KuCoin's futures on its unified ("UTA", 2025) public sockets
//! (`x-push-futures.kucoin.com`): the `obu` order book channel.
//!
//! Docs: <https://www.kucoin.com/docs-new/> (and `docs/protocols.md`, KuCoin futures).
//!
//! No token: the connection is made to the endpoint as it is, and the venue greets it
//! with `{"sessionId":…,"message":"welcome","pingInterval":18000}`. Every frame, the
//! welcome included, comes as a binary WebSocket frame holding UTF-8 JSON (text frames are
//! read alike). Requests are one symbol each, `{"id":"1","action":"SUBSCRIBE","channel":
//! "obu","tradeType":"FUTURES","symbol":"XBTUSDTM","depth":"increment@10ms"}`, answered
//! `{"id":"1","result":true}` or `{"id":"1","result":false,"reason":…}`; an unknown symbol
//! is acknowledged and stays silent. The client pings `{"id":…,"type":"ping"}`, at most once
//! a second.
//!
//! Diff mode subscribes `increment@10ms`: a snapshot of up to 500 levels (`"t":"snapshot"`,
//! `O == C`), then deltas numbered `O..C`, each applied where `O <= last + 1 < C + 1`
//! (Binance spot's rule, [`UpdateIdRanges`](super::binance::UpdateIdRanges)); a break
//! subscribes again. Snapshot mode subscribes depth `1`, `5` or `50`, a whole top N each
//! push. A real delta (`tests/fixtures/kucoin/futures_uta_obu_and_classic_trimmed_frames_
//! 2026-09-22_probe_notes.jsonl`):
//!
//! ```text
//! {"T":"obu.FUTURES", "dp":"increment@10ms", "t":"delta", "P":1790114459840641662,
//!  "d":{"a":[],"b":[["85973.3","16236"],["85887.1","98"]],"C":1747821262585,
//!  "s":"XBTUSDTM","M":1790114459839000000,"O":1747821262584}}
//! ```
//!
//! Sizes are contracts: `multiplier` coins each (`XBTUSDTM`: 0.001 BTC), or an inverse
//! contract's 1 USD (`XBTUSDM`, multiplier −1). The book's time (`exchange_time_ns`): `d.M`
//! (ns). No checksum.

use super::binance::UpdateIdRanges;
use super::{
    Acked, Answer, Checksum, ConnectBudget, Credentials, Decode, DecodeError, Message,
    Simulated, SnapshotSource, Snapshots, StreamKind, Streams, SubscribeRequest, Venue,
    VenueFacts,
};
use crate::book::{BookUpdate, Side, TopBook};
use crate::json::Walker;

mod decode;
mod sequence;
mod sim;
mod subscribe;
#[cfg(test)]
mod tests;

/// The most levels a side an `increment@10ms` snapshot holds.
pub(super) const SNAPSHOT_LEVELS: usize = 500;

pub struct KucoinFutures;

impl Venue for KucoinFutures {
    const FACTS: VenueFacts = VenueFacts {
        name: "kucoin_futures",
        exchange: "kucoin_futures",
        default_url: "wss://x-push-futures.kucoin.com",
        // Not fetched: its snapshots come on the stream.
        default_rest_url: "https://api-futures.kucoin.com",
        // "250 new connections per 5 min per IP" (docs/protocols.md, KuCoin, Limits; probe
        // notes).
        connect_budget: ConnectBudget {
            attempts: 250,
            per: std::time::Duration::from_secs(300),
        },
        max_connection_age: None,
        // "600 topics per connection" and "300 messages / 10 s": a connection subscribes
        // each of its symbols in a frame of its own at once, so at most 200 a connection
        // (room left for resubscriptions and pings).
        max_streams_per_connection: 200,
        max_subscriptions: None,
        snapshot_streams: true,
        diff_streams: true,
        binary_books: true,
        credentials: Credentials::None,
        snapshots: SnapshotSource::InBand,
        rest_budget: None,
        sequencing: &UpdateIdRanges,
    };
}
