//! Binance's binary market data: Simple Binary Encoding, schema `stream_1_0.xml`
//! (<https://github.com/binance/binance-spot-api-docs/tree/master/sbe/schemas>;
//! docs/protocols.md, Binance SBE). No SBE frame is recorded in the
//! fixtures: the frames here and in `tests/venues/binance_sbe.rs` are built from the schema, and
//! the simulator's are checked against its JSON stream of the same book.
//!
//! Every message is little-endian and starts with an 8-byte header: `blockLength u16`,
//! `templateId u16`, `schemaId u16`, `version u16`. The two book templates:
//!
//! ```text
//! 10002 DepthSnapshotStreamEvent (<sym>@depth20)   10003 DepthDiffStreamEvent (<sym>@depth)
//!   eventTime         i64 (µs)                       eventTime          i64 (µs)
//!   bookUpdateId      i64                            firstBookUpdateId  i64
//!   priceExponent     i8                             lastBookUpdateId   i64
//!   qtyExponent       i8                             priceExponent      i8
//!                                                    qtyExponent        i8
//!   group bids, group asks: blockLength u16, numInGroup u16, then per entry
//!                           price i64, qty i64 (mantissas)
//!   symbol: length u8, then its UTF-8 bytes
//! ```
//!
//! The header's `blockLength` says where the groups start and each group's where its next
//! entry does: fields the schema appends later are skipped, never misread. A value is
//! `mantissa × 10^exponent`, into `FixedPoint` exactly: one that needs more than 8
//! fractional digits, or is negative, or too large, is an error, never rounded.
//!
//! The book's time (`exchange_time_ns`, docs/protocols.md): `eventTime` (µs), of
//! snapshots and diffs.

use super::binance::{Binance, UpdateIdRanges};
use super::{Answer, Checksum, Credentials, Decode, Message, Simulated, SnapshotSource, Snapshots, StreamKind, Streams, SubscribeRequest, Venue, VenueFacts};
use crate::book::{BookUpdate, Level, Levels, Side, TopBook};
use crate::fixed::{DECIMALS, FixedPoint, FixedPointError};
use crate::json::DecodeError;
use super::timestamps;

mod decode;
mod subscribe;
mod sequence;
mod sim;
#[cfg(test)]
mod tests;

/// Binance's SBE market-data streams: `<symbol>@depth20` (snapshot mode) and
/// `<symbol>@depth` (diff mode, with Binance's REST snapshots and sync rules). Requests,
/// their answers and `serverShutdown` are Binance's JSON text frames; books come in binary
/// frames, which name their symbol. The upgrade request carries the API key of an Ed25519
/// key in `X-MBX-APIKEY`.
pub struct BinanceSbe;

impl Venue for BinanceSbe {
    const FACTS: VenueFacts = VenueFacts {
        name: "binance_sbe",
        exchange: Binance::FACTS.name,
        default_url: "wss://stream-sbe.binance.com:9443/stream",
        default_rest_url: Binance::FACTS.default_rest_url,
        // The JSON streams' limits (docs/protocols.md, Binance SBE: "1,024 streams each, 300
        // connection attempts per 5 minutes").
        connect_budget: Binance::FACTS.connect_budget,
        max_connection_age: Some(super::binance::CONNECTION_LIFETIME),
        max_streams_per_connection: Binance::FACTS.max_streams_per_connection,
        max_subscriptions: None,
        snapshot_streams: true,
        diff_streams: true,
        binary_books: true,
        credentials: Credentials::UpgradeHeader("X-MBX-APIKEY"),
        snapshots: SnapshotSource::Rest,
        // Binance's REST API and its IP budget.
        rest_budget: Binance::FACTS.rest_budget,
        sequencing: &UpdateIdRanges,
    };
}

/// The schema's id; its messages' ids are its templates'.
pub const SCHEMA_ID: u16 = 1;

/// `DepthSnapshotStreamEvent`, the `<symbol>@depth20` stream's message.
pub const DEPTH_SNAPSHOT: u16 = 10002;

/// `DepthDiffStreamEvent`, the `<symbol>@depth` stream's message.
pub const DEPTH_DIFF: u16 = 10003;
