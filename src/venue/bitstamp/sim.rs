//! Bitstamp as the simulator serves it ([`Simulated`]): its frames and answers, in its wire format.

use super::*;

/// The simulator's side of Bitstamp.
impl Simulated for Bitstamp {
    /// Python-style separators and key order, as in the first recorded sample.
    fn sequence_per_second(&self) -> Option<u64> {
        Some(1_000_000)
    }

    fn encode_book(&self, stream: &str, book: &TopBook, price_decimals: u32, out: &mut Vec<u8>) {
        use std::io::Write;
        let micros = book.venue_sequence;
        write!(
            out,
            r#"{{"data": {{"timestamp": "{}", "microtimestamp": "{micros}", "bids": "#,
            micros / 1_000_000
        )
        .expect("writing to a Vec cannot fail");
        crate::venue::wire::write_levels(book.bids.as_slice(), price_decimals, " ", out);
        out.extend_from_slice(br#", "asks": "#);
        crate::venue::wire::write_levels(book.asks.as_slice(), price_decimals, " ", out);
        write!(out, r#"}}, "event": "data", "channel": "{stream}"}}"#)
            .expect("writing to a Vec cannot fail");
    }

    /// Subscriptions, and the heartbeat (reply shape from control_messages.jsonl).
    fn answer_request(&self, request: &str) -> Option<Answer> {
        let request: serde_json::Value = serde_json::from_str(request).ok()?;
        let event = request.get("event")?.as_str()?;
        if event == "bts:heartbeat" {
            let reply = r#"{"event":"bts:heartbeat","channel":"","data":{"status":"success"}}"#;
            return Some(Answer {
                replies: vec![reply.to_owned()],
                ..Answer::default()
            });
        }
        let channel = request.get("data")?.get("channel")?.as_str()?.to_owned();
        let (acked, answer) = match event {
            "bts:subscribe" => (
                "bts:subscription_succeeded",
                Answer {
                    subscribe: vec![channel.clone()],
                    ..Answer::default()
                },
            ),
            "bts:unsubscribe" => (
                "bts:unsubscription_succeeded",
                Answer {
                    unsubscribe: vec![channel.clone()],
                    ..Answer::default()
                },
            ),
            _ => return None,
        };
        let reply = serde_json::json!({"event": acked, "channel": channel, "data": {}});
        Some(Answer {
            replies: vec![reply.to_string()],
            ..answer
        })
    }

    fn reconnect_request(&self) -> Option<&'static str> {
        Some(r#"{"event":"bts:request_reconnect","channel":"","data":""}"#)
    }

    /// As recorded: compact, `data` first.
    fn encode_diff(
        &self,
        stream: &str,
        update: &BookUpdate,
        _checksum: Option<u32>,
        price_decimals: u32,
        _unix_ms: u64,
        out: &mut Vec<u8>,
    ) {
        use std::io::Write;
        let micros = update.last_id;
        write!(
            out,
            r#"{{"data":{{"timestamp":"{}","microtimestamp":"{micros}","bids":"#,
            micros / 1_000_000
        )
        .expect("writing to a Vec cannot fail");
        crate::venue::wire::write_levels(&update.bids, price_decimals, "", out);
        out.extend_from_slice(br#","asks":"#);
        crate::venue::wire::write_levels(&update.asks, price_decimals, "", out);
        write!(out, r#"}},"channel":"{stream}","event":"data"}}"#)
            .expect("writing to a Vec cannot fail");
    }

    /// As recorded: Python-style separators.
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
        let micros = snapshot.last_id;
        write!(
            out,
            r#"{{"timestamp": "{}", "microtimestamp": "{micros}", "bids": "#,
            micros / 1_000_000
        )
        .expect("writing to a Vec cannot fail");
        crate::venue::wire::write_levels(&snapshot.bids, price_decimals, " ", out);
        out.extend_from_slice(br#", "asks": "#);
        crate::venue::wire::write_levels(&snapshot.asks, price_decimals, " ", out);
        out.push(b'}');
    }

    /// The snapshot channel always carries the top 100.
    fn levels_on_stream(&self, _stream: &str) -> usize {
        100
    }

    fn next_event_ids(&self, last_id: u64, _changes: u64, now_us: u64) -> (u64, u64) {
        let stamp = now_us.max(last_id + 1);
        (stamp, stamp)
    }

    fn initial_event_id(&self, now_us: u64) -> u64 {
        now_us
    }
}
