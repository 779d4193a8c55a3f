//! Bitget's v2 public protocol: spot (`venue/bitget_spot.rs`) and USDT-/USDC-margined
//! futures (`venue/bitget_futures.rs`) books, two venues of one protocol on one endpoint
//! (`wss://ws.bitget.com/v2/ws/public`), written once here for any [`Market`]. Two venues,
//! not one, because a spot pair and a perpetual share their name (`BTCUSDT`) and the
//! books' messages name a book by it: each market's books get connections of their own.
//!
//! Docs: <https://www.bitget.com/api-doc/spot/websocket/public/Depth-Channel>,
//! <https://www.bitget.com/api-doc/contract/websocket/public/Order-Book-Channel> (and
//! `docs/protocols.md`, Bitget).
//!
//! A subscription (`{"op":"subscribe","args":[{"instType":"SPOT","channel":"books",
//! "instId":"BTCUSDT"},…]}`) is acknowledged once per argument, naming it
//! (`{"event":"subscribe","arg":{…}}`); a refusal is `{"event":"error","arg":{…},
//! "code":30001,"msg":"…","op":"subscribe"}`, naming the argument where it can. A real
//! `books` snapshot and update
//! (`tests/fixtures/bitget/v2_v3_trimmed_frames_2026-09_probe_notes_and_fixture.jsonl`):
//!
//! ```text
//! {"action":"snapshot","arg":{"instType":"USDT-FUTURES","channel":"books","instId":"MAVUSDT"},
//!  "data":[{"asks":[["0.01039","4499.23"],["0.0104","116536.86"]],"bids":[…],
//!  "ts":"1789456510736","seq":427583461144,"pseq":0}],"ts":1789456511968}
//! {"action":"update","arg":{…},"data":[{"asks":[],"bids":[["0.00519","30828.52"]],
//!  "ts":"1789456512452","seq":427583480559,"pseq":427583461144}],"ts":1789456512453}
//! ```
//!
//! Diff mode reads `books`: a snapshot on the stream, then updates (size `"0"` deletes).
//! Each update's `pseq` is the previous message's `seq` (not `+1`; integers past 2^53 on
//! some markets, read as integers); a snapshot has `pseq` 0 and restarts the chain
//! ([`PseqChain`]). A break, an update before its snapshot or an update with `pseq` 0
//! resubscribes that book (unsubscribe, then subscribe: the subscription's snapshot
//! rebuilds it). Where a message carries a non-zero `checksum` (every 2022 update; none
//! in 2026), it is the CRC32 of the best 25 levels a side interleaved, checked after the
//! message ([`Checksum`]); a mismatch resubscribes too. The retired v1 protocol's
//! recordings read the same (`instType` `sp`/`mc`, no `seq`: such messages chain to
//! anything, and their checksum is their check).
//!
//! Snapshot mode reads `books1`, `books5` or `books15` (the smallest covering the
//! service's depth): a whole top N every push, `"action":"snapshot"`, ordered by `seq`.
//!
//! Control frames: the text `pong`, answering the client's text `ping`, which Bitget
//! wants every 30 s (it closes a connection without one for 2 minutes); checked before
//! any JSON is read. Bitget closes every connection after 24 hours: the readers renew
//! theirs before. It sends no reconnect notice.
//!
//! Amounts are in the base coin, on spot and on USDT-/USDC-margined futures
//! (`sizeMultiplier` is the order step, not a contract's size). Coin-margined futures
//! (`COIN-FUTURES`) are not offered: what their sizes count is not established
//! (docs/protocols.md, Bitget, Units).
//!
//! The book's time (`exchange_time_ns`, docs/protocols.md): `data[0].ts` (ms, a string),
//! of books and updates.

use super::timestamps;
use super::wire::{Seen, check_sorted};
use super::{
    Acked, Answer, Checksum, ConnectBudget, Credentials, Decode, DecodeError, LevelShape, Message,
    Simulated, SnapshotSource, Snapshots, StreamKind, Streams, SubscribeRequest, Venue, VenueFacts,
};
use crate::book::{BookUpdate, DepthBook, Level, Side, TopBook, WireDecimals};
use crate::json::Walker;

mod decode;
mod sequence;
mod sim;
mod subscribe;
#[cfg(test)]
mod tests;

pub use sequence::PseqChain;

/// What tells the two markets apart; the contract's traits are implemented once for both,
/// on [`Bitget`].
pub trait Market: Sync + 'static {
    const FACTS: VenueFacts;
    /// The `instType` of `symbol`'s books, or why the market has no such book.
    fn inst_type(symbol: &str) -> Result<&'static str, String>;
    /// The currency `symbol`'s prices are in, where its name says.
    fn quote_currency(symbol: &str, base: &str) -> Option<crate::units::Currency>;
    /// The REST URL of `symbol`'s book of `limit` levels a side (never fetched: the books'
    /// snapshots come on the WebSocket).
    fn rest_book_url(rest_base: &str, symbol: &str, limit: usize) -> String;
}

/// "Fewer than 50 channels a connection recommended" (docs/protocols.md, Bitget, Limits).
pub(super) const STREAMS_PER_CONNECTION: usize = 49;

/// "At most 100 connections per IP" (docs/protocols.md, Bitget, Limits), each carrying at
/// most [`STREAMS_PER_CONNECTION`]: the books one IP can follow.
const CONNECTIONS_PER_IP: usize = 100;

/// A market's facts: its own name; the endpoint and limits, which both share.
pub(super) const fn market_facts(name: &'static str) -> VenueFacts {
    VenueFacts {
        name,
        exchange: name,
        default_url: "wss://ws.bitget.com/v2/ws/public",
        // Not fetched: the books' snapshots come on the WebSocket.
        default_rest_url: "https://api.bitget.com",
        // "300 connection attempts per IP per 5 minutes" (docs/protocols.md, Bitget, Limits).
        connect_budget: ConnectBudget {
            attempts: 300,
            per: std::time::Duration::from_secs(300),
        },
        // "Connections are force-closed every 24 h" (docs/protocols.md, Bitget, Keep-alive).
        max_connection_age: Some(std::time::Duration::from_secs(24 * 3600)),
        max_streams_per_connection: STREAMS_PER_CONNECTION,
        max_subscriptions: Some(CONNECTIONS_PER_IP * STREAMS_PER_CONNECTION),
        snapshot_streams: true,
        diff_streams: true,
        binary_books: false,
        credentials: Credentials::None,
        snapshots: SnapshotSource::InBand,
        rest_budget: None,
        sequencing: &PseqChain,
    }
}

/// Bitget's protocol on market `M`: the type of a venue (`bitget_spot::BitgetSpot`,
/// `bitget_futures::BitgetFutures`), which the contract's traits are implemented for.
pub struct Bitget<M>(std::marker::PhantomData<M>);

impl<M> Bitget<M> {
    /// The venue's value, which the registry names as a unit struct's.
    pub const VENUE: Bitget<M> = Bitget(std::marker::PhantomData);
}

impl<M: Market> Venue for Bitget<M> {
    const FACTS: VenueFacts = M::FACTS;
}
