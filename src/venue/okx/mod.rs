//! OKX, API v5, public channels `books` (diff mode: 400 levels, a snapshot then updates)
//! and `books5` (snapshot mode: the top 5, whole each time).
//!
//! Docs: <https://www.okx.com/docs-v5/en/#order-book-trading-market-data-ws-order-book-channel>
//! (and `docs/protocols.md`, OKX).
//!
//! A subscription (`{"id":"1","op":"subscribe","args":[{"channel":"books","instId":
//! "BTC-USDT"}]}`) is acknowledged once per argument, naming it
//! (`{"id":"1","event":"subscribe","arg":{"channel":"books","instId":"BTC-USDT"},
//! "connId":"a4d3ae55"}`); a refusal is an `"event":"error"` that names only the request.
//! Levels are `[price, size, "0", orders]`, all strings, each number written in its
//! shortest form. A real `books` update (`tests/fixtures/okx/books_BTC-USDT_subscribe_ack_snapshot_updates_2022.jsonl`,
//! shortened):
//!
//! ```text
//! {"arg":{"channel":"books","instId":"BTC-USDT"},"action":"update","data":[{"asks":
//!  [["30243.5","1.44679","0","6"],…],"bids":[…],"ts":"1652459233856","checksum":-652563973}]}
//! ```
//!
//! Sequencing. Since 2023 each message carries `seqId` and `prevSeqId`: a snapshot has
//! `prevSeqId = -1`, each update's `prevSeqId` is the last message's `seqId` (the ids are
//! not consecutive), `seqId == prevSeqId` with empty sides is a keep-alive, and after a
//! maintenance `seqId < prevSeqId` is accepted while the chain holds ([`SeqIdChain`]).
//! Anything else is a gap: that instrument is resynchronised. The 2022 recording has
//! neither id; such messages chain to anything, and their checksum is the check.
//!
//! Snapshots. Until 2026 a subscription started with a snapshot on the stream
//! (`"action":"snapshot"`), and every message carried a CRC32 of the top 25 levels a side.
//! OKX's changelog (updated 2026-02-12) announced that `books` stops sending both: the
//! first message is an update, `"checksum":0`, and the book is seeded from
//! `GET /api/v5/market/books`, whose answer carries the snapshot's `seqId`; the buffered
//! updates are applied from the one with `prevSeqId <= snapshot.seqId < seqId` on. Both
//! forms are read: the venue's snapshots come from REST (a gap or a bad checksum fetches
//! one, joined to the buffered updates), and a snapshot on the stream, where OKX still
//! sends one, replaces the book without a request. A checksum of 0 is no checksum.
//! docs/protocols.md marks as uncertain that the checksum reads 0 rather than being left out
//! from 2026-06 on; both read the same here. The REST `seqId` and the joining rule are the
//! changelog's; no recording of that form exists to verify them on.
//!
//! Control frames: the text `pong`, answering the client's text `ping` (OKX closes a
//! connection that is quiet for 30 s), and `{"event":"notice","code":"64008",…}`, sent
//! 30 s before a service upgrade closes the connection: the client reconnects.
//!
//! Amounts: spot sizes are in the base currency. Linear (USDT- and USDC-margined) SWAP and
//! FUTURES sizes are contracts of a fixed amount of the base currency (`ctVal`: 0.01 BTC
//! for `BTC-USDT-SWAP`): such an instrument needs its contract size configured
//! (`contract_sizes`), and its books are merged as contracts times it. Inverse contracts
//! (`BTC-USD-SWAP`) are contracts of a USD value (`ctVal`: 100 USD for `BTC-USD-SWAP`,
//! configured as its contract size): they merge only into instruments that count
//! amounts in USD (`unit = "quote"`). Options are refused.
//!
//! The book's time (`exchange_time_ns`, docs/protocols.md): `ts` (ms), of books, updates
//! and REST snapshots.

use super::{Acked, Answer, Checksum, ConnectBudget, Credentials, RestBudget, Decode, DecodeError, LevelShape, Message, Simulated, SnapshotSource, Snapshots, StreamKind, Streams, SubscribeRequest, UNSUBSCRIBE_REQUEST_ID, Venue, VenueFacts};
use super::timestamps;
use super::wire::{Seen, check_sorted, shortest_text};
use crate::book::{BookUpdate, DepthBook, Level, Side, TopBook, WireDecimals};
use crate::book::diff_sync::Sequencing;
use crate::json::Walker;

mod decode;
mod subscribe;
mod sequence;
mod sim;
#[cfg(test)]
mod tests;

use sequence::SeqIdChain;

pub struct Okx;

const DIFF_LEVELS: usize = 400;

/// "Total args of one request ≤ 4096 bytes" (docs/protocols.md, OKX): 50 arguments of the
/// longest instrument (`{"channel":"books5","instId":"…"}` with a 32-character id, and a
/// comma: 67 bytes) are 3350.
const ARGS_PER_REQUEST: usize = 50;

/// The requests for `op` on `channel` for `inst_ids`, 50 arguments a request, each with
/// `id` (OKX acknowledges each argument by its instrument).
fn requests(op: &str, channel: &str, inst_ids: &[String], id: u64) -> Vec<SubscribeRequest> {
    super::wire::chunked_requests(inst_ids, ARGS_PER_REQUEST, None, |chunk| {
        let args: Vec<_> = chunk
            .iter()
            .map(|inst_id| serde_json::json!({"channel": channel, "instId": inst_id}))
            .collect();
        serde_json::json!({"id": id.to_string(), "op": op, "args": args}).to_string()
    })
}

impl Venue for Okx {
    const FACTS: VenueFacts = VenueFacts {
        name: "okx",
        exchange: "okx",
        // docs/protocols.md gives `wss://ws.okx.com:8443/ws/v5/public`; OKX stopped serving port
        // 8443 on 2026-10-31 (a developer's note of that month, and nautilus_trader's OKX URLs,
        // which dropped the port in 2026): the standard port.
        default_url: "wss://ws.okx.com/ws/v5/public",
        default_rest_url: "https://www.okx.com",
        // "New connections: 3 per second per IP" (docs/protocols.md, OKX, Limits).
        connect_budget: ConnectBudget {
            attempts: 3,
            per: std::time::Duration::from_secs(1),
        },
        // "Fewer than 30 deep channels per connection" (docs/protocols.md, OKX, Channels); the
        // 480 subscriptions an hour a connection allows are far from what 29 need.
        max_connection_age: None,
        max_streams_per_connection: 29,
        max_subscriptions: None,
        snapshot_streams: true,
        diff_streams: true,
        binary_books: false,
        credentials: Credentials::None,
        snapshots: SnapshotSource::Rest,
        // "REST books 40 req/2 s per IP" (docs/protocols.md, OKX, Limits).
        rest_budget: Some(RestBudget {
            weight: 40,
            per: std::time::Duration::from_secs(2),
        }),
        sequencing: &SeqIdChain,
    };
}
