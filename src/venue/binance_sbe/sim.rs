//! Binance SBE as the simulator serves it ([`Simulated`]): its frames and answers, in its wire format.

use super::*;
use super::decode::ENTRY_LEN;

/// The simulator's side: Binance's requests and REST snapshots, its books in SBE.
impl Simulated for BinanceSbe {
    fn encode_book(&self, stream: &str, book: &TopBook, _price_decimals: u32, out: &mut Vec<u8>) {
        let event_time_us = (book.exchange_time_ns / 1_000) as i64;
        encode_depth_snapshot(&stream_symbol(stream), book, event_time_us, out);
    }

    fn answer_request(&self, request: &str) -> Option<Answer> {
        Binance.answer_request(request)
    }

    fn reconnect_request(&self) -> Option<&'static str> {
        Binance.reconnect_request()
    }

    fn server_ping_interval(&self) -> Option<std::time::Duration> {
        Binance.server_ping_interval()
    }

    fn levels_on_stream(&self, _stream: &str) -> usize {
        20
    }

    fn encode_diff(
        &self,
        stream: &str,
        update: &BookUpdate,
        _checksum: Option<u32>,
        _price_decimals: u32,
        unix_ms: u64,
        out: &mut Vec<u8>,
    ) {
        let event_time_us = (unix_ms * 1_000) as i64;
        encode_depth_diff(&stream_symbol(stream), update, event_time_us, out);
    }

    /// The REST body, Binance's JSON.
    fn encode_snapshot(
        &self,
        stream: &str,
        snapshot: &BookUpdate,
        on: SnapshotSource,
        checksum: Option<u32>,
        price_decimals: u32,
        out: &mut Vec<u8>,
    ) {
        Binance.encode_snapshot(stream, snapshot, on, checksum, price_decimals, out);
    }

    fn next_event_ids(&self, last_id: u64, changes: u64, now_us: u64) -> (u64, u64) {
        Binance.next_event_ids(last_id, changes, now_us)
    }

    fn initial_event_id(&self, now_us: u64) -> u64 {
        Binance.initial_event_id(now_us)
    }
}

/// `BTCUSDT` of `btcusdt@depth20`.
pub(super) fn stream_symbol(stream: &str) -> String {
    stream
        .split('@')
        .next()
        .unwrap_or_default()
        .to_ascii_uppercase()
}

/// What the encoder writes a book message's numbers with: mantissas of 10^-8 units.
pub(super) const EXPONENT: i8 = -(DECIMALS as i8);

/// Appends a book message of `template_id` to `out` as Binance writes it, its fixed block
/// (`fields`, after `eventTime`) and each level in today's sizes.
pub(super) fn write_message(
    template_id: u16,
    event_time_us: i64,
    ids: &[i64],
    bids: &[Level],
    asks: &[Level],
    symbol: &str,
    out: &mut Vec<u8>,
) {
    let block_len = 8 + 8 * ids.len() + 2;
    for field in [block_len as u16, template_id, SCHEMA_ID, 0] {
        out.extend_from_slice(&field.to_le_bytes());
    }
    out.extend_from_slice(&event_time_us.to_le_bytes());
    for id in ids {
        out.extend_from_slice(&id.to_le_bytes());
    }
    out.extend_from_slice(&[EXPONENT as u8, EXPONENT as u8]);
    for levels in [bids, asks] {
        out.extend_from_slice(&(ENTRY_LEN as u16).to_le_bytes());
        out.extend_from_slice(&(levels.len() as u16).to_le_bytes());
        for level in levels {
            for value in [level.price, level.amount] {
                out.extend_from_slice(&(value.raw() as i64).to_le_bytes());
            }
        }
    }
    out.push(symbol.len() as u8);
    out.extend_from_slice(symbol.as_bytes());
}

/// Appends a `depth20` message of `book` (the simulator's, tests').
pub fn encode_depth_snapshot(symbol: &str, book: &TopBook, event_time_us: i64, out: &mut Vec<u8>) {
    let ids = [book.venue_sequence as i64];
    let (bids, asks) = (book.bids.as_slice(), book.asks.as_slice());
    write_message(DEPTH_SNAPSHOT, event_time_us, &ids, bids, asks, symbol, out);
}

/// Appends a `depth` message of `update`.
pub fn encode_depth_diff(symbol: &str, update: &BookUpdate, event_time_us: i64, out: &mut Vec<u8>) {
    let ids = [update.first_id as i64, update.last_id as i64];
    write_message(
        DEPTH_DIFF,
        event_time_us,
        &ids,
        &update.bids,
        &update.asks,
        symbol,
        out,
    );
}
