//! Binance futures' protocol: USDⓈ-margined (`fstream`, `venue/binance_usdm.rs`) and
//! coin-margined (`dstream`, `venue/binance_coinm.rs`) order books, two venues of one
//! protocol, written once here for any [`Market`].
//!
//! Docs: <https://developers.binance.com/docs/derivatives/usds-margined-futures/websocket-market-streams/Diff-Book-Depth-Streams>,
//! <https://developers.binance.com/docs/derivatives/coin-margined-futures/websocket-market-streams/Diff-Book-Depth-Streams>
//! (and `docs/protocols.md`, Binance futures).
//!
//! Two venues, not one with two markets: each market has its own hosts (WebSocket and
//! REST), its own REST weight budget, and its own symbols (a COIN-M symbol is always an
//! inverse contract), so each is configured, limited and labelled on its own.
//!
//! Both send the spot envelope (combined streams, `{"result":null,"id":1}` answers) around
//! one payload, the futures `depthUpdate`, on the diff streams (`<symbol>@depth@100ms`)
//! and on the top-N streams (`<symbol>@depth<5|10|20>@100ms`, whose payload is a whole
//! top N to replace, though it carries ids). A real diff frame
//! (`tests/fixtures/binance_futures/usdm_timeline_BTCUSDT_depth0ms_2024-08-08_prefix.jsonl`,
//! shortened):
//!
//! ```text
//! {"stream":"btcusdt@depth@0ms","data":{"e":"depthUpdate","E":1723161256299,
//!  "T":1723161256298,"s":"BTCUSDT","U":5123107832006,"u":5123107837557,
//!  "pu":5123107831937,"b":[["58710.20","0.014"],…],"a":[…]}}
//! ```
//!
//! COIN-M adds `"ps":"BTCUSD"` (the pair) after the symbol; 2026 frames may add `"st"`
//! (1: USDⓈ-M, 2: COIN-M). Unknown members are skipped.
//!
//! The sync rule is not spot's: events chain by `pu` (the previous event's `u`), ids are
//! not consecutive, and an event ending exactly on the snapshot's id is kept
//! ([`PreviousIdChain`]).
//!
//! The book's time (`exchange_time_ns`, docs/protocols.md): `T`, the transaction time
//! (ms), of events, top-N pushes and REST snapshots; `E`, the push's, is skipped.

use super::binance::Binance;
use super::{
    Answer, Checksum, ConnectBudget, Credentials, Decode, DecodeError, Message, RestBudget,
    Simulated, SnapshotSource, Snapshots, StreamKind, Streams, SubscribeRequest, Venue, VenueFacts,
};
use crate::book::diff_sync::Sequencing;
use crate::book::{BookUpdate, Side, TopBook};
use crate::json::Walker;

mod decode;
mod sequence;
mod sim;
mod subscribe;
#[cfg(test)]
mod tests;

pub use sequence::PreviousIdChain;

/// What tells the two markets apart; the contract's traits are implemented once for both,
/// on [`BinanceFutures`].
pub trait Market: Sync + 'static {
    const FACTS: VenueFacts;
    /// The REST path of a depth snapshot.
    const DEPTH_PATH: &'static str;
    /// Whether every symbol is an inverse contract (COIN-M).
    const INVERSE: bool;
}

/// A market's facts: its own name, hosts and REST API; the rest both share.
pub(super) const fn market_facts(
    name: &'static str,
    default_url: &'static str,
    default_rest_url: &'static str,
) -> VenueFacts {
    VenueFacts {
        name,
        exchange: name,
        default_url,
        default_rest_url,
        // Futures' limit is not stated (docs/protocols.md, Binance futures, Limits): spot's
        // "≤300 per 5 minutes per IP" is assumed.
        connect_budget: ConnectBudget {
            attempts: 300,
            per: std::time::Duration::from_secs(300),
        },
        max_connection_age: Some(super::binance::CONNECTION_LIFETIME),
        // "≤1024 streams per connection" (docs/protocols.md, Binance futures, Limits).
        max_streams_per_connection: 1024,
        max_subscriptions: None,
        snapshot_streams: true,
        diff_streams: true,
        binary_books: false,
        credentials: Credentials::None,
        snapshots: SnapshotSource::Rest,
        // The documented examples' 2,400 a minute (docs/protocols.md, Binance futures,
        // Limits), one budget for each market's API.
        rest_budget: Some(RestBudget {
            weight: 2400,
            per: std::time::Duration::from_secs(60),
        }),
        sequencing: &PreviousIdChain,
    }
}

/// Binance's futures protocol on market `M`: the type of a venue
/// (`binance_usdm::BinanceUsdm`, `binance_coinm::BinanceCoinm`), which the contract's traits
/// are implemented for.
pub struct BinanceFutures<M>(std::marker::PhantomData<M>);

impl<M> BinanceFutures<M> {
    /// The venue's value, which the registry names as a unit struct's.
    pub const VENUE: BinanceFutures<M> = BinanceFutures(std::marker::PhantomData);
}

impl<M: Market> Venue for BinanceFutures<M> {
    const FACTS: VenueFacts = M::FACTS;
}
