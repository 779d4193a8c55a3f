//! Binance as the simulator serves it ([`Simulated`]): its frames and answers, in its wire format.

use super::*;

/// The simulator's side of Binance.
impl Simulated for Binance {
    fn encode_book(&self, stream: &str, book: &TopBook, price_decimals: u32, out: &mut Vec<u8>) {
        use std::io::Write;
        write!(
            out,
            r#"{{"stream":"{stream}","data":{{"lastUpdateId":{},"bids":"#,
            book.venue_sequence
        )
        .expect("writing to a Vec cannot fail");
        crate::venue::wire::write_levels(book.bids.as_slice(), price_decimals, "", out);
        out.extend_from_slice(br#","asks":"#);
        crate::venue::wire::write_levels(book.asks.as_slice(), price_decimals, "", out);
        out.extend_from_slice(b"}}");
    }

    fn answer_request(&self, request: &str) -> Option<Answer> {
        let request: serde_json::Value = serde_json::from_str(request).ok()?;
        let streams = request
            .get("params")?
            .as_array()?
            .iter()
            .map(|s| s.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()?;
        let replies =
            vec![serde_json::json!({"result": null, "id": request.get("id")?}).to_string()];
        match request.get("method")?.as_str()? {
            "SUBSCRIBE" => Some(Answer {
                subscribe: streams,
                replies,
                ..Answer::default()
            }),
            "UNSUBSCRIBE" => Some(Answer {
                unsubscribe: streams,
                replies,
                ..Answer::default()
            }),
            _ => None,
        }
    }

    fn reconnect_request(&self) -> Option<&'static str> {
        Some(r#"{"stream":"!serverShutdown","data":{"e":"serverShutdown","E":1770123456789}}"#)
    }

    /// "The server sends a ping frame every 20 seconds" (docs/protocols.md, Binance keep-alive).
    fn server_ping_interval(&self) -> Option<std::time::Duration> {
        Some(std::time::Duration::from_secs(20))
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
        use std::io::Write;
        let symbol = stream
            .split('@')
            .next()
            .unwrap_or_default()
            .to_ascii_uppercase();
        write!(
            out,
            r#"{{"stream":"{stream}","data":{{"e":"depthUpdate","E":{unix_ms},"s":"{symbol}","U":{},"u":{},"b":"#,
            update.first_id, update.last_id
        )
        .expect("writing to a Vec cannot fail");
        crate::venue::wire::write_levels(&update.bids, price_decimals, "", out);
        out.extend_from_slice(br#","a":"#);
        crate::venue::wire::write_levels(&update.asks, price_decimals, "", out);
        out.extend_from_slice(b"}}");
    }

    /// The REST body.
    fn encode_snapshot(
        &self,
        _stream: &str,
        snapshot: &BookUpdate,
        _on: SnapshotSource,
        _checksum: Option<u32>,
        price_decimals: u32,
        out: &mut Vec<u8>,
    ) {
        use std::io::Write;
        write!(out, r#"{{"lastUpdateId":{},"bids":"#, snapshot.last_id)
            .expect("writing to a Vec cannot fail");
        crate::venue::wire::write_levels(&snapshot.bids, price_decimals, "", out);
        out.extend_from_slice(br#","asks":"#);
        crate::venue::wire::write_levels(&snapshot.asks, price_decimals, "", out);
        out.push(b'}');
    }

    /// `<symbol>@depth<N>@100ms` carries N levels.
    fn levels_on_stream(&self, stream: &str) -> usize {
        let after = stream.split_once("@depth").map_or("", |(_, after)| after);
        after
            .split('@')
            .next()
            .and_then(|levels| levels.parse().ok())
            .unwrap_or(20)
    }

    fn next_event_ids(&self, last_id: u64, changes: u64, _now_us: u64) -> (u64, u64) {
        (last_id + 1, last_id + changes)
    }

    fn initial_event_id(&self, _now_us: u64) -> u64 {
        1_000_000
    }
}
