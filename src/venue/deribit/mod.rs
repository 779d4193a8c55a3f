//! Deribit, API v2: JSON-RPC over one WebSocket, public `book.<instrument>.100ms` (diff
//! mode: a snapshot, then changes chained by change ids), or `book.<instrument>.raw` on a
//! connection authorised with the operator's client credentials (`public/auth`, sent and
//! answered before anything else: [`Streams::auth_request`]), and the grouped
//! `book.<instrument>.none.<depth>.100ms` windows (snapshot mode: the top 1, 10 or 20,
//! whole each push).
//!
//! Docs: <https://docs.deribit.com/> (`public/subscribe`, `book.{instrument_name}.{interval}`,
//! `public/set_heartbeat`) and `docs/protocols.md`, Deribit.
//!
//! A subscription is a request, `{"jsonrpc":"2.0","id":3,"method":"public/subscribe",
//! "params":{"channels":[…]}}`, answered with the channels it subscribed
//! (`"result":[…]`, in any order): one it leaves out (an unknown or unauthorised name) is
//! refused without an error, so the answer is compared with the request
//! ([`Acked::Listed`]). Books come as notifications, `{"jsonrpc":"2.0","method":
//! "subscription","params":{"channel":…,"data":{…}}}`. A real snapshot and change
//! (`tests/fixtures/deribit/trimmed_frames_2026-09-23_probe_notes.jsonl`, trimmed by its
//! source):
//!
//! ```text
//! {"jsonrpc":"2.0","method":"subscription","params":{"channel":"book.ETH-PERPETUAL.100ms",
//!  "data":{"timestamp":1790133840638,"type":"snapshot","change_id":136069961946,
//!  "instrument_name":"ETH-PERPETUAL","bids":[["new",2772.65,2700],…],"asks":[…]}}}
//! {"jsonrpc":"2.0","method":"subscription","params":{"channel":"book.ALGO_USDC-PERPETUAL.100ms",
//!  "data":{"timestamp":1790133842703,"type":"change","change_id":193809634213,
//!  "instrument_name":"ALGO_USDC-PERPETUAL","bids":[["new",0.11374,1054.0],
//!  ["delete",0.11344,0.0]],"asks":[…],"prev_change_id":193809631160}}}
//! ```
//!
//! A change's levels are `[action, price, amount]`, action `new`, `change` or `delete`
//! (amount 0): each sets its price's amount. Its `prev_change_id` is the `change_id` of
//! the instrument's previous message (one counter across instruments: never `+1`); a
//! snapshot starts the chain ([`ChangeIdChain`]). A break resubscribes that book,
//! unsubscribing first (a second subscription without one is acknowledged and sends no
//! snapshot). Prices and amounts are JSON numbers, some with an exponent (`2.2e3`), read
//! exactly from their text. Deribit has no checksum.
//!
//! Keep-alive: each connection opens with `public/set_heartbeat` (and a subscription to
//! `platform_state`); Deribit then sends `{"method":"heartbeat","params":{"type":
//! "test_request"}}`, which must be answered with `public/test` ([`Message::Answer`]) or
//! it closes the connection. `platform_state` with `"maintenance":true` announces a
//! maintenance break: the reader reconnects, its books out of the merge until synced anew.
//!
//! Amounts: inverse instruments (`BTC-PERPETUAL`, `BTC-27DEC24`) count USD, in multiples
//! of the contract's value (10 USD for BTC): sized as contracts of 1 USD (`contract_sizes`
//! of 1), merged only into instruments counting USD (`unit = "quote"`). Linear ones
//! (`BTC_USDC-PERPETUAL`) and spot pairs (`BTC_USDC`) count the base coin. Options
//! decode, but are not merged: the configuration refuses them.
//!
//! The book's time (`exchange_time_ns`, docs/protocols.md): `timestamp` (ms), of books
//! and changes.

use super::timestamps;
use super::wire::{Seen, check_sorted};
use super::{
    Acked, Answer, AuthAnswer, AuthRequest, Checksum, ConnectBudget, Credentials, Decode, DecodeError, Message, Simulated,
    SnapshotSource, Snapshots, StreamKind, Streams, SubscribeRequest, UNSUBSCRIBE_REQUEST_ID,
    Venue, VenueFacts,
};
use crate::book::{BookUpdate, Level, Side, TopBook};
use crate::json::Walker;

mod decode;
mod sequence;
mod sim;
mod subscribe;
#[cfg(test)]
mod tests;

pub use sequence::ChangeIdChain;

pub struct Deribit;

/// "Up to ~500 channels per call suggested" (docs/protocols.md, Deribit, Limits): a
/// connection's streams fit one subscription.
const STREAMS_PER_CONNECTION: usize = 500;

/// "At most 32 connections per IP" (docs/protocols.md, Deribit, Limits).
const CONNECTIONS_PER_IP: usize = 32;

impl Venue for Deribit {
    const FACTS: VenueFacts = VenueFacts {
        name: "deribit",
        exchange: "deribit",
        default_url: "wss://www.deribit.com/ws/api/v2",
        // Not fetched: the books' snapshots come on the WebSocket.
        default_rest_url: "https://www.deribit.com",
        // Deribit publishes a cap on open connections (32 an IP, the 33rd refused with
        // HTTP 429), not on attempts: at most that many attempts a minute.
        connect_budget: ConnectBudget {
            attempts: CONNECTIONS_PER_IP as u32,
            per: std::time::Duration::from_secs(60),
        },
        max_connection_age: None,
        max_streams_per_connection: STREAMS_PER_CONNECTION,
        max_subscriptions: Some(CONNECTIONS_PER_IP * STREAMS_PER_CONNECTION),
        snapshot_streams: true,
        diff_streams: true,
        binary_books: false,
        credentials: Credentials::AuthRequest,
        snapshots: SnapshotSource::InBand,
        rest_budget: None,
        sequencing: &ChangeIdChain,
    };
}
