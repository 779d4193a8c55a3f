//! Binance futures as the simulator serves it ([`Simulated`]): spot's answers, the futures
//! `depthUpdate` with its `pu` chain, and the REST body with `E` and `T`.

use super::*;
use crate::book::Level;
use crate::venue::wire::write_levels;
use std::io::Write;

/// Where an event's ids leave room: futures ids are not consecutive (`U` is usually far
/// above `pu + 1`), so the simulator leaves a hole before each event, which a client
/// following spot's rule would take for a gap.
const ID_HOLE: u64 = 7;

/// One `depthUpdate` frame of `stream`, diff event or top N:
/// `{"stream":…,"data":{"e":"depthUpdate","E":…,"T":…,"s":…[,"ps":…],"U":…,"u":…,"pu":…,"b":[…],"a":[…]}}`.
fn write_event<M: Market>(
    stream: &str,
    ids: [u64; 3],
    unix_ms: u64,
    (bids, asks): (&[Level], &[Level]),
    price_decimals: u32,
    out: &mut Vec<u8>,
) {
    let symbol = stream
        .split('@')
        .next()
        .unwrap_or_default()
        .to_ascii_uppercase();
    let [first, last, previous] = ids;
    write!(
        out,
        r#"{{"stream":"{stream}","data":{{"e":"depthUpdate","E":{unix_ms},"T":{unix_ms},"s":"{symbol}","#
    )
    .expect("writing to a Vec cannot fail");
    if M::INVERSE {
        let pair = symbol.split('_').next().unwrap_or_default();
        write!(out, r#""ps":"{pair}","#).expect("writing to a Vec cannot fail");
    }
    write!(out, r#""U":{first},"u":{last},"pu":{previous},"b":"#)
        .expect("writing to a Vec cannot fail");
    write_levels(bids, price_decimals, "", out);
    out.extend_from_slice(br#","a":"#);
    write_levels(asks, price_decimals, "", out);
    out.extend_from_slice(b"}}");
}

impl<M: Market> Simulated for BinanceFutures<M> {
    /// A top-N push: `u` is the book's sequence; `U` and `pu` are made up below it.
    fn encode_book(&self, stream: &str, book: &TopBook, price_decimals: u32, out: &mut Vec<u8>) {
        let last = book.venue_sequence.max(2 * ID_HOLE);
        let ids = [last - ID_HOLE, last, last - 2 * ID_HOLE];
        let sides = (book.bids.as_slice(), book.asks.as_slice());
        let unix_ms = book.exchange_time_ns / 1_000_000;
        write_event::<M>(stream, ids, unix_ms, sides, price_decimals, out);
    }

    fn answer_request(&self, request: &str) -> Option<Answer> {
        Binance.answer_request(request)
    }

    /// "The server sends a WebSocket ping every 3 minutes" (docs/protocols.md, Binance
    /// futures, Keep-alive).
    fn server_ping_interval(&self) -> Option<std::time::Duration> {
        Some(std::time::Duration::from_secs(180))
    }

    fn levels_on_stream(&self, stream: &str) -> usize {
        Binance.levels_on_stream(stream)
    }

    fn encode_diff(
        &self,
        stream: &str,
        update: &BookUpdate,
        _checksum: Option<u32>,
        price_decimals: u32,
        unix_ms: u64,
        out: &mut Vec<u8>,
    ) {
        let ids = [update.first_id, update.last_id, update.previous_last_id];
        let sides = (update.bids.as_slice(), update.asks.as_slice());
        write_event::<M>(stream, ids, unix_ms, sides, price_decimals, out);
    }

    /// The REST body: spot's, with the event and transaction times.
    fn encode_snapshot(
        &self,
        _stream: &str,
        snapshot: &BookUpdate,
        _on: SnapshotSource,
        _checksum: Option<u32>,
        price_decimals: u32,
        out: &mut Vec<u8>,
    ) {
        write!(
            out,
            r#"{{"lastUpdateId":{},"E":1770123456789,"T":1770123456788,"bids":"#,
            snapshot.last_id
        )
        .expect("writing to a Vec cannot fail");
        write_levels(&snapshot.bids, price_decimals, "", out);
        out.extend_from_slice(br#","asks":"#);
        write_levels(&snapshot.asks, price_decimals, "", out);
        out.push(b'}');
    }

    /// `U` past a hole after the previous `u`, `u` one id a change on.
    fn next_event_ids(&self, last_id: u64, changes: u64, _now_us: u64) -> (u64, u64) {
        let first = last_id + ID_HOLE;
        (first, first + changes.saturating_sub(1))
    }

    fn initial_event_id(&self, _now_us: u64) -> u64 {
        1_000_000
    }
}
