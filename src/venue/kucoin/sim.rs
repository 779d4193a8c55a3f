//! KuCoin as the simulator serves it ([`Simulated`]): its token answer, welcome, frames
//! and answers, in its wire format.

use super::*;
use crate::book::Level;
use crate::venue::wire::{shortest_text, write_shortest_pairs};
use std::io::Write;

/// The time the simulator's REST snapshots carry, in milliseconds.
const UNIX_MS: u64 = 1_770_123_456_789;


/// Writes a side of changes, `[["price","size","sequence"],…]`, numbered from `*next`.
fn write_changes(levels: &[Level], next: &mut u64, zero_change: Option<u64>, out: &mut Vec<u8>) {
    out.push(b'[');
    for (index, level) in levels.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        let (price, amount) = (shortest_text(level.price), shortest_text(level.amount));
        write!(out, r#"["{}","{}","{next}"]"#, price.as_str(), amount.as_str())
            .expect("writing to a Vec cannot fail");
        *next += 1;
    }
    if let Some(id) = zero_change {
        let comma = if levels.is_empty() { "" } else { "," };
        write!(out, r#"{comma}["0","0","{id}"]"#).expect("writing to a Vec cannot fail");
    }
    out.push(b']');
}

/// The prefix of the simulator's snapshot streams (`level2Depth50:BTC-USDT`): its diff
/// and top-N streams of one symbol differ by name, as the service's need not.
fn top_stream(channel: &str, symbol: &str) -> String {
    let name = channel.rsplit('/').next().unwrap_or(channel);
    format!("{name}:{symbol}")
}

impl Simulated for Kucoin {
    /// A top-N push's `timestamp` is its sequence: the books are numbered by the clock.
    fn sequence_per_second(&self) -> Option<u64> {
        Some(1000)
    }

    /// `{"type":"message","topic":"/spotMarket/level2Depth50:…","subject":"level2",
    /// "data":{"asks":[…],"bids":[…],"timestamp":…}}`.
    fn encode_book(&self, stream: &str, book: &TopBook, _price_decimals: u32, out: &mut Vec<u8>) {
        let (name, symbol) = stream.split_once(':').unwrap_or(("level2Depth50", stream));
        write!(
            out,
            r#"{{"type":"message","topic":"/spotMarket/{name}:{symbol}","subject":"level2","data":{{"asks":"#
        )
        .expect("writing to a Vec cannot fail");
        write_shortest_pairs(book.asks.as_slice(), out);
        out.extend_from_slice(br#","bids":"#);
        write_shortest_pairs(book.bids.as_slice(), out);
        write!(out, r#","timestamp":{}}}}}"#, book.venue_sequence)
            .expect("writing to a Vec cannot fail");
    }

    /// Subscriptions and unsubscriptions of up to 100 symbols a topic (acknowledged by
    /// `id`; an unknown channel refused as KuCoin does) and the ping.
    fn answer_request(&self, request: &str) -> Option<Answer> {
        let request: serde_json::Value = serde_json::from_str(request).ok()?;
        let id = request.get("id")?.as_str()?.to_owned();
        let kind = request.get("type")?.as_str()?;
        if kind == "ping" {
            let pong = serde_json::json!({"id": id, "type": "pong", "timestamp": UNIX_MS * 1000});
            return Some(Answer {
                replies: vec![pong.to_string()],
                ping: true,
                ..Answer::default()
            });
        }
        let topic = request.get("topic")?.as_str()?;
        let (channel, symbols) = topic.split_once(':')?;
        let mut answer = Answer::default();
        let streams: Vec<String> = if channel == subscribe::DIFF_CHANNEL {
            symbols.split(',').map(str::to_owned).collect()
        } else if subscribe::TOP_CHANNELS.contains(&channel) {
            answer.depth = Some(subscribe::channel_levels(channel));
            let symbols = symbols.split(',');
            symbols.map(|symbol| top_stream(channel, symbol)).collect()
        } else {
            let error = serde_json::json!({
                "id": id, "type": "error", "code": 404, "data": "topic does not exist",
            });
            answer.replies.push(error.to_string());
            return Some(answer);
        };
        answer
            .replies
            .push(serde_json::json!({"id": id, "type": "ack"}).to_string());
        match kind {
            "subscribe" => answer.subscribe = streams,
            "unsubscribe" => answer.unsubscribe = streams,
            _ => return None,
        }
        Some(answer)
    }

    fn levels_on_stream(&self, stream: &str) -> usize {
        match stream.split_once(':') {
            Some((name, _)) => subscribe::channel_levels(&format!("/spotMarket/{name}")),
            None => SNAPSHOT_LEVELS,
        }
    }

    /// A `trade.l2update` message: its changes numbered from `first_id` in wire order,
    /// and, where the ids leave one over, a change priced `"0"` carrying the last.
    fn encode_diff(
        &self,
        stream: &str,
        update: &BookUpdate,
        _checksum: Option<u32>,
        _price_decimals: u32,
        unix_ms: u64,
        out: &mut Vec<u8>,
    ) {
        let (first, last) = (update.first_id, update.last_id);
        let changes = (update.bids.len() + update.asks.len()) as u64;
        let zero_change = (first + changes <= last).then_some(last);
        write!(
            out,
            r#"{{"topic":"/market/level2:{stream}","type":"message","subject":"trade.l2update","data":{{"changes":{{"asks":"#
        )
        .expect("writing to a Vec cannot fail");
        let mut next = first + update.bids.len() as u64;
        write_changes(&update.asks, &mut next, zero_change, out);
        out.extend_from_slice(br#","bids":"#);
        let mut next = first;
        write_changes(&update.bids, &mut next, None, out);
        write!(
            out,
            r#"}},"sequenceEnd":{last},"sequenceStart":{first},"symbol":"{stream}","time":{unix_ms}}}}}"#
        )
        .expect("writing to a Vec cannot fail");
    }

    /// The REST body, `{"code":"200000","data":{"time":…,"sequence":"…","bids":[…],
    /// "asks":[…]}}`.
    fn encode_snapshot(
        &self,
        _stream: &str,
        snapshot: &BookUpdate,
        _on: SnapshotSource,
        _checksum: Option<u32>,
        _price_decimals: u32,
        out: &mut Vec<u8>,
    ) {
        write!(
            out,
            r#"{{"code":"200000","data":{{"time":{UNIX_MS},"sequence":"{}","bids":"#,
            snapshot.last_id
        )
        .expect("writing to a Vec cannot fail");
        write_shortest_pairs(&snapshot.bids, out);
        out.extend_from_slice(br#","asks":"#);
        write_shortest_pairs(&snapshot.asks, out);
        out.extend_from_slice(b"}}");
    }

    /// A sequence a change, and one more for a `"0"` change in every other message (and
    /// in one without changes), as KuCoin's sequence runs on past changes of no level.
    fn next_event_ids(&self, last_id: u64, changes: u64, _now_us: u64) -> (u64, u64) {
        let first = last_id + 1;
        let zero_change = first % 2 == 1 || changes == 0;
        (first, first + changes + u64::from(zero_change) - 1)
    }

    fn initial_event_id(&self, _now_us: u64) -> u64 {
        1_612_844_051_654
    }

    /// `{"code":"200000","data":{"token":"…","instanceServers":[{"endpoint":"…",
    /// "encrypt":true,"protocol":"websocket","pingInterval":18000,"pingTimeout":10000}]}}`.
    fn token_answer(&self, url: &str, token: &str) -> Option<String> {
        let server = serde_json::json!({
            "endpoint": url, "encrypt": true, "protocol": "websocket",
            "pingInterval": 18000, "pingTimeout": 10000,
        });
        let answer = serde_json::json!({
            "code": "200000", "data": {"token": token, "instanceServers": [server]},
        });
        Some(answer.to_string())
    }

    /// KuCoin's signature of its API keys of version 2: the key, the version, the
    /// passphrase's HMAC-SHA256 with the secret, and the HMAC of the timestamp, `GET` and
    /// the path and query, each in base64.
    fn is_signed(
        &self,
        header: &dyn Fn(&str) -> Option<String>,
        path_and_query: &str,
        secret: &str,
        passphrase: &str,
    ) -> bool {
        use base64::Engine;
        let mac = |text: &str| {
            let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
            let tag = ring::hmac::sign(&key, text.as_bytes());
            base64::engine::general_purpose::STANDARD.encode(tag)
        };
        let Some(timestamp) = header("KC-API-TIMESTAMP") else {
            return false;
        };
        header("KC-API-KEY").is_some_and(|key| !key.is_empty())
            && header("KC-API-KEY-VERSION").as_deref() == Some("2")
            && header("KC-API-PASSPHRASE") == Some(mac(passphrase))
            && header("KC-API-SIGN") == Some(mac(&format!("{timestamp}GET{path_and_query}")))
    }

    fn welcome(&self, connect_id: &str) -> Option<String> {
        Some(serde_json::json!({"id": connect_id, "type": "welcome"}).to_string())
    }
}
