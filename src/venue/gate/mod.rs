//! Gate's API v4 protocol: spot (`api.gateio.ws`, `venue/gate_spot.rs`) and futures
//! (`fx-ws.gateio.ws`, `venue/gate_futures.rs`) order books, two venues of one protocol,
//! written once here for any [`Market`].
//!
//! Docs: <https://www.gate.com/docs/developers/apiv4/ws/en/>,
//! <https://www.gate.com/docs/developers/futures/ws/en/> (and `docs/protocols.md`, Gate).
//!
//! Every message is `{"time","time_ms","channel","event","result",…}`; requests are
//! `{"time":<unix s>,"id":…,"channel":…,"event":"subscribe","payload":[…]}`, one stream a
//! request, acknowledged with `"result":{"status":"success"}` (`"fail"` and an `error`
//! object when refused; 2025's answers echo the request's `id`, 2021's name nothing).
//!
//! Diff mode reads `<market>.order_book_update` (100 levels, 100 ms) seeded from the REST
//! book `with_id=true` at the same depth: events with `u <= id` are dropped, the first kept
//! covers `id + 1`, then each starts at the previous `u + 1` (Binance spot's rule,
//! [`UpdateIdRanges`](super::binance::UpdateIdRanges)). Since 2025 the channel may push a
//! `"full":true` book, which replaces the book. A real event
//! (`tests/fixtures/gate/spot_timeline_order_book_update_7pairs_2021-04-22.jsonl`,
//! shortened):
//!
//! ```text
//! {"time":1619093532,"channel":"spot.order_book_update","event":"update","result":{
//!  "t":1619093532978,"e":"depthUpdate","E":1619093532,"s":"HAI_ETH","U":2691446,
//!  "u":2691446,"b":[["0.00010322","5360.209"],…],"a":[…]}}
//! ```
//!
//! Futures write levels as `{"p":"0.2983","s":1553}`, sizes JSON integers (contracts; a
//! fraction on contracts that allow one). Snapshot mode reads `<market>.order_book`, a whole
//! top N each push. Gate has no checksum.
//!
//! The book's time (`exchange_time_ns`, docs/protocols.md): `result.t` (ms), of updates
//! and top-N pushes; REST snapshots' is not read (the next event's replaces it).

use super::binance::UpdateIdRanges;
use super::timestamps;
use super::{
    Acked, Answer, Checksum, ConnectBudget, Credentials, Decode, DecodeError, LevelShape, Message,
    RestBudget, Simulated, SnapshotSource, Snapshots, StreamKind, Streams, SubscribeRequest, Venue,
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

/// What tells the two markets apart; the contract's traits are implemented once for both,
/// on [`Gate`].
pub trait Market: Sync + 'static {
    const FACTS: VenueFacts;
    /// The channels' prefix: `spot` or `futures`.
    const CHANNEL: &'static str;
    /// How its books write a level.
    const LEVEL: LevelShape;
    /// Whether its sizes are contracts (`contract_sizes`).
    const SIZED_IN_CONTRACTS: bool;
    /// Its application ping (`Streams::client_ping`).
    const PING: &'static str;
    /// The message by which it asks clients to reconnect, where it has one.
    const RECONNECT: Option<&'static str>;
    /// The REST path of `symbol`'s book, and the query parameter that names it.
    fn book_path(symbol: &str) -> (String, &'static str);
    /// Whether `symbol` is an inverse contract (BTC-settled futures).
    fn inverse(symbol: &str) -> bool;
    /// The URL of `symbol`'s connection, from the configured `url`.
    fn endpoint(url: &str, symbol: &str) -> String {
        let _ = symbol;
        url.to_owned()
    }
}

/// The levels a side of a diff stream: `order_book_update` keeps the top 100, and its REST
/// snapshot is asked for at the same depth.
pub(super) const DIFF_LEVELS: usize = 100;

/// A market's facts: its own name, hosts and REST budget; the rest both share.
pub(super) const fn market_facts(name: &'static str, default_url: &'static str) -> VenueFacts {
    VenueFacts {
        name,
        exchange: name,
        default_url,
        default_rest_url: "https://api.gateio.ws",
        // Gate publishes no limit on connection attempts, only "≤ 300 connections per IP"
        // (docs/protocols.md, Gate, Limits): at most that many attempts in 5 minutes.
        connect_budget: ConnectBudget {
            attempts: 300,
            per: std::time::Duration::from_secs(300),
        },
        max_connection_age: None,
        // No cap is published; 150 streams a connection worked (docs/protocols.md, Gate,
        // Limits): 100, below it.
        max_streams_per_connection: 100,
        max_subscriptions: None,
        snapshot_streams: true,
        diff_streams: true,
        binary_books: false,
        credentials: Credentials::None,
        snapshots: SnapshotSource::Rest,
        // "200 requests / 10 s per endpoint per IP" (docs/protocols.md, Gate, Limits).
        rest_budget: Some(RestBudget {
            weight: 200,
            per: std::time::Duration::from_secs(10),
        }),
        sequencing: &UpdateIdRanges,
    }
}

/// Gate's protocol on market `M`: the type of a venue (`gate_spot::GateSpot`,
/// `gate_futures::GateFutures`), which the contract's traits are implemented for.
pub struct Gate<M>(std::marker::PhantomData<M>);

impl<M> Gate<M> {
    /// The venue's value, which the registry names as a unit struct's.
    pub const VENUE: Gate<M> = Gate(std::marker::PhantomData);
}

impl<M: Market> Venue for Gate<M> {
    const FACTS: VenueFacts = M::FACTS;
}
