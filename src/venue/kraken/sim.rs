//! Kraken as the simulator serves it ([`Simulated`]): its frames and answers, in its wire format.

use super::*;

/// The depths a subscription may ask for.
pub(super) const DEPTHS: [usize; 5] = [10, 25, 100, 500, 1000];

/// Writes `levels` as Kraken's `[{"price":…,"qty":…},…]`, bare numbers.
pub(super) fn write_levels(levels: &[Level], price_decimals: u32, out: &mut Vec<u8>) {
    out.push(b'[');
    for (index, level) in levels.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.extend_from_slice(br#"{"price":"#);
        level.price.append_decimal(price_decimals, out);
        out.extend_from_slice(br#","qty":"#);
        level.amount.append_decimal(crate::fixed::DECIMALS, out);
        out.push(b'}');
    }
    out.push(b']');
}

/// A book message as Kraken writes it.
pub(super) fn write_book_message(
    kind: &str,
    symbol: &str,
    (bids, asks): (&[Level], &[Level]),
    checksum: Option<u32>,
    micros: u64,
    price_decimals: u32,
    out: &mut Vec<u8>,
) {
    use std::io::Write;
    write!(
        out,
        r#"{{"channel":"book","type":"{kind}","data":[{{"symbol":"{symbol}","bids":"#
    )
    .expect("writing to a Vec cannot fail");
    write_levels(bids, price_decimals, out);
    out.extend_from_slice(br#","asks":"#);
    write_levels(asks, price_decimals, out);
    if let Some(checksum) = checksum {
        write!(out, r#","checksum":{checksum}"#).expect("writing to a Vec cannot fail");
    }
    out.extend_from_slice(br#","timestamp":""#);
    write_timestamp(micros, out);
    out.extend_from_slice(br#""}]}"#);
}

/// The simulator's side of Kraken.
impl Simulated for Kraken {
    /// A snapshot message without a checksum (as Kraken sends for a thin book).
    fn encode_book(&self, stream: &str, book: &TopBook, price_decimals: u32, out: &mut Vec<u8>) {
        let sides = (book.bids.as_slice(), book.asks.as_slice());
        write_book_message(
            "snapshot",
            stream,
            sides,
            None,
            book.venue_sequence,
            price_decimals,
            out,
        );
    }

    /// Subscriptions (an ack per symbol, as recorded), unsubscriptions, pings.
    fn answer_request(&self, request: &str) -> Option<Answer> {
        let request: serde_json::Value = serde_json::from_str(request).ok()?;
        let method = request.get("method")?.as_str()?;
        if method == "ping" {
            let reply = serde_json::json!({"method": "pong", "req_id": request.get("req_id")});
            return Some(Answer {
                replies: vec![reply.to_string()],
                ping: true,
                ..Answer::default()
            });
        }
        let params = request.get("params")?;
        let symbols: Vec<String> = params
            .get("symbol")?
            .as_array()?
            .iter()
            .map(|symbol| symbol.as_str().map(str::to_owned))
            .collect::<Option<_>>()?;
        let depth = params.get("depth").and_then(serde_json::Value::as_u64);
        let ack = |symbol: &str| {
            serde_json::json!({
                "method": method,
                "result": {"channel": "book", "depth": depth.unwrap_or(10), "snapshot": true, "symbol": symbol},
                "success": true,
                "time_in": "2026-08-12T19:28:08.287297Z",
                "time_out": "2026-08-12T19:28:08.287347Z",
            })
            .to_string()
        };
        let replies = symbols.iter().map(|symbol| ack(symbol)).collect();
        match method {
            "subscribe" => Some(Answer {
                subscribe: symbols,
                replies,
                depth: depth.map(|depth| depth as usize),
                ..Answer::default()
            }),
            "unsubscribe" => Some(Answer {
                unsubscribe: symbols,
                replies,
                ..Answer::default()
            }),
            _ => None,
        }
    }

    fn levels_on_stream(&self, _stream: &str) -> usize {
        DEPTHS[0]
    }

    fn encode_diff(
        &self,
        stream: &str,
        update: &BookUpdate,
        checksum: Option<u32>,
        price_decimals: u32,
        _unix_ms: u64,
        out: &mut Vec<u8>,
    ) {
        let sides = (update.bids.as_slice(), update.asks.as_slice());
        write_book_message(
            "update",
            stream,
            sides,
            checksum,
            update.last_id,
            price_decimals,
            out,
        );
    }

    /// The snapshot that starts a subscription, on the stream.
    fn encode_snapshot(
        &self,
        stream: &str,
        snapshot: &BookUpdate,
        _on: SnapshotSource,
        checksum: Option<u32>,
        price_decimals: u32,
        out: &mut Vec<u8>,
    ) {
        let sides = (snapshot.bids.as_slice(), snapshot.asks.as_slice());
        write_book_message(
            "snapshot",
            stream,
            sides,
            checksum,
            snapshot.last_id,
            price_decimals,
            out,
        );
    }

    /// Ids are the messages' timestamps, in microseconds, increasing.
    fn next_event_ids(&self, last_id: u64, _changes: u64, now_us: u64) -> (u64, u64) {
        let stamp = now_us.max(last_id + 1);
        (stamp, stamp)
    }

    fn initial_event_id(&self, now_us: u64) -> u64 {
        now_us
    }
}
