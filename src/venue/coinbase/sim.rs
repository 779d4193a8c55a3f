//! Coinbase Advanced Trade as the simulator serves it ([`Simulated`]): its frames and answers, in its wire format.

use super::*;

/// The placeholder the encoders write where the connection's message number goes
/// ([`Simulated::number_message`] puts it in).
pub(super) const UNNUMBERED: &str = r#""sequence_num":0,"#;

/// Opens a message of `channel` as the venue writes it, stamped `now` (RFC 3339 text).
pub(super) fn open_message(channel: &str, now: &[u8], out: &mut Vec<u8>) {
    use std::io::Write;
    write!(out, r#"{{"channel":"{channel}","client_id":"","timestamp":""#)
        .expect("writing to a Vec cannot fail");
    out.extend_from_slice(now);
    out.extend_from_slice(br#"","#);
    out.extend_from_slice(UNNUMBERED.as_bytes());
}

/// The time now as the venue stamps its messages.
pub(super) fn now() -> Vec<u8> {
    let mut now = Vec::with_capacity(27);
    write_timestamp(crate::clock::unix_ns() / 1_000, &mut now);
    now
}

/// An `l2_data` message of one event of `kind` with `stream`'s bids and asks, the message
/// and each level stamped with one time.
pub(super) fn write_event(kind: &str, stream: &str, bids: &[Level], asks: &[Level], decimals: u32, out: &mut Vec<u8>) {
    use std::io::Write;
    let now = now();
    open_message("l2_data", &now, out);
    write!(out, r#""events":[{{"type":"{kind}","product_id":"{stream}","updates":["#)
        .expect("writing to a Vec cannot fail");
    let levels = (bids.iter().map(|level| ("bid", level))).chain(asks.iter().map(|level| ("offer", level)));
    for (index, (side, level)) in levels.enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write!(out, r#"{{"side":"{side}","event_time":""#).expect("writing to a Vec cannot fail");
        out.extend_from_slice(&now);
        out.extend_from_slice(br#"","price_level":""#);
        level.price.append_decimal(decimals, out);
        out.extend_from_slice(br#"","new_quantity":""#);
        level.amount.append_decimal(crate::fixed::DECIMALS, out);
        out.extend_from_slice(br#""}"#);
    }
    out.extend_from_slice(b"]}]}");
}

/// The simulator's side of Advanced Trade. Its streams are the product ids; every message
/// it numbers on its connection.
impl Simulated for Coinbase {
    /// A snapshot event of the book.
    fn encode_book(&self, stream: &str, book: &TopBook, price_decimals: u32, out: &mut Vec<u8>) {
        write_event("snapshot", stream, book.bids.as_slice(), book.asks.as_slice(), price_decimals, out);
    }

    /// `level2` and `heartbeats` subscriptions and unsubscriptions, each answered by one
    /// `subscriptions` message; another channel refused as Coinbase refuses it.
    fn answer_request(&self, request: &str) -> Option<Answer> {
        let request: serde_json::Value = serde_json::from_str(request).ok()?;
        let kind = request.get("type")?.as_str()?;
        let products = || -> Option<Vec<String>> {
            let ids = request.get("product_ids")?.as_array()?;
            ids.iter().map(|id| id.as_str().map(str::to_owned)).collect()
        };
        let (level2, heartbeats) = match request.get("channel")?.as_str()? {
            "level2" => (products()?, true),
            "heartbeats" => (Vec::new(), true),
            _ => {
        let error = r#"{"type":"error","message":"authentication failure"}"#;
                return Some(Answer {
                    replies: vec![error.to_owned()],
                    ..Answer::default()
                });
            }
        };
        let mut listed = Vec::new();
        open_message("subscriptions", &now(), &mut listed);
        let channels = match heartbeats && level2.is_empty() {
            true => serde_json::json!({"heartbeats": ["heartbeats"]}),
            false => serde_json::json!({"level2": level2}),
        };
        let events = serde_json::json!([{ "subscriptions": channels }]);
        listed.extend_from_slice(format!(r#""events":{events}}}"#).as_bytes());
        let replies = vec![String::from_utf8(listed).expect("JSON is UTF-8")];
        match kind {
            "subscribe" => Some(Answer {
                subscribe: level2,
                replies,
                ..Answer::default()
            }),
            "unsubscribe" => Some(Answer {
                unsubscribe: level2,
                replies,
                ..Answer::default()
            }),
            _ => None,
        }
    }

    /// The simulator's books are 50 levels deep (the venue sends whole books).
    fn levels_on_stream(&self, _stream: &str) -> usize {
        50
    }

    fn encode_diff(
        &self,
        stream: &str,
        update: &BookUpdate,
        _checksum: Option<u32>,
        price_decimals: u32,
        _unix_ms: u64,
        out: &mut Vec<u8>,
    ) {
        write_event("update", stream, &update.bids, &update.asks, price_decimals, out);
    }

    /// The snapshot that starts a subscription, on the stream.
    fn encode_snapshot(
        &self,
        stream: &str,
        snapshot: &BookUpdate,
        _on: SnapshotSource,
        _checksum: Option<u32>,
        price_decimals: u32,
        out: &mut Vec<u8>,
    ) {
        write_event("snapshot", stream, &snapshot.bids, &snapshot.asks, price_decimals, out);
    }

    /// Ids are the updates' times, in microseconds, increasing (the wire numbers
    /// messages, not a book's events).
    fn next_event_ids(&self, last_id: u64, _changes: u64, now_us: u64) -> (u64, u64) {
        let stamp = now_us.max(last_id + 1);
        (stamp, stamp)
    }

    fn initial_event_id(&self, now_us: u64) -> u64 {
        now_us
    }

    /// `{"channel":"heartbeats",…,"events":[{"current_time":…,"heartbeat_counter":N}]}`,
    /// as recorded.
    fn heartbeat(&self, counter: u64) -> Option<String> {
        let (mut frame, now) = (Vec::new(), now());
        open_message("heartbeats", &now, &mut frame);
        frame.extend_from_slice(br#""events":[{"current_time":""#);
        frame.extend_from_slice(&now);
        frame.extend_from_slice(format!(r#"","heartbeat_counter":{counter}}}]}}"#).as_bytes());
        Some(String::from_utf8(frame).expect("JSON is UTF-8"))
    }

    /// The encoders' messages take the connection's numbers; an error message none.
    fn number_message(&self, frame: &str, number: u64) -> Option<String> {
        let at = frame.find(UNNUMBERED)?;
        let number = format!(r#""sequence_num":{number},"#);
        Some([&frame[..at], &number, &frame[at + UNNUMBERED.len()..]].concat())
    }
}
