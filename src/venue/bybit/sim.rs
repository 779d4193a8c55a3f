//! Bybit as the simulator serves it ([`Simulated`]): its frames and answers, in its wire format.

use super::*;

/// The depths a topic may have.
pub(super) const DEPTHS: [usize; 4] = [1, 50, 200, 1000];

/// Topics one subscribe request may carry (spot's limit; linear takes more).
pub(super) const TOPICS_PER_REQUEST: usize = 10;

/// A book message as Bybit writes it (spot's key order), `topic` naming its book.
pub(super) fn write_book_message(
    kind: &str,
    topic: &str,
    update: (&BookUpdate, u64),
    price_decimals: u32,
    out: &mut Vec<u8>,
) {
    use std::io::Write;
    let (update, unix_ms) = update;
    let symbol = topic.rsplit('.').next().unwrap_or(topic);
    write!(
        out,
        r#"{{"topic":"{topic}","ts":{unix_ms},"type":"{kind}","data":{{"s":"{symbol}","b":"#
    )
    .expect("writing to a Vec cannot fail");
    crate::venue::wire::write_levels(&update.bids, price_decimals, "", out);
    out.extend_from_slice(br#","a":"#);
    crate::venue::wire::write_levels(&update.asks, price_decimals, "", out);
    let id = update.last_id;
    write!(out, r#","u":{id},"seq":{id}}},"cts":{unix_ms}}}"#)
        .expect("writing to a Vec cannot fail");
}

/// The simulator's side of Bybit. Its streams are the topics (`orderbook.50.BTCUSDT`).
impl Simulated for Bybit {
    /// A snapshot message of the book.
    fn encode_book(&self, stream: &str, book: &TopBook, price_decimals: u32, out: &mut Vec<u8>) {
        let mut snapshot = BookUpdate::default();
        snapshot.bids.extend_from_slice(book.bids.as_slice());
        snapshot.asks.extend_from_slice(book.asks.as_slice());
        snapshot.last_id = book.venue_sequence;
        write_book_message("snapshot", stream, (&snapshot, 0), price_decimals, out);
    }

    /// Subscriptions and unsubscriptions (an ack per request, as recorded on spot; a
    /// topic Bybit does not have is refused) and pings.
    fn answer_request(&self, request: &str) -> Option<Answer> {
        let request: serde_json::Value = serde_json::from_str(request).ok()?;
        let op = request.get("op")?.as_str()?;
        let req_id = request
            .get("req_id")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("");
        let reply = |success: bool, ret_msg: &str| {
            serde_json::json!({
                "success": success,
                "ret_msg": ret_msg,
                "conn_id": "d9avtftc9enb83116hvg-5i8rn",
                "req_id": req_id,
                "op": op,
            })
            .to_string()
        };
        if op == "ping" {
            return Some(Answer {
                replies: vec![reply(true, "pong")],
                ping: true,
                ..Answer::default()
            });
        }
        let topics: Vec<String> = request
            .get("args")?
            .as_array()?
            .iter()
            .map(|topic| topic.as_str().map(str::to_owned))
            .collect::<Option<_>>()?;
        let parts: Option<Vec<_>> = topics
            .iter()
            .map(|topic| topic_parts(topic.as_bytes()))
            .collect();
        let Some(parts) = parts.filter(|_| topics.len() <= TOPICS_PER_REQUEST) else {
            let refusal = format!("error:handler not found,topic:{}", topics.join(","));
            return Some(Answer {
                replies: vec![reply(false, &refusal)],
                ..Answer::default()
            });
        };
        let depth = parts.first().map(|&(depth, _)| depth);
        match op {
            "subscribe" => Some(Answer {
                subscribe: topics,
                replies: vec![reply(true, "subscribe")],
                depth,
                ..Answer::default()
            }),
            "unsubscribe" => Some(Answer {
                unsubscribe: topics,
                replies: vec![reply(true, "")],
                depth,
                ..Answer::default()
            }),
            _ => None,
        }
    }

    fn levels_on_stream(&self, stream: &str) -> usize {
        topic_parts(stream.as_bytes()).map_or(DEPTHS[1], |(depth, _)| depth)
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
        write_book_message("delta", stream, (update, unix_ms), price_decimals, out);
    }

    /// The snapshot that starts a subscription, on the topic.
    fn encode_snapshot(
        &self,
        stream: &str,
        snapshot: &BookUpdate,
        _on: SnapshotSource,
        _checksum: Option<u32>,
        price_decimals: u32,
        out: &mut Vec<u8>,
    ) {
        let unix_ms = crate::clock::unix_ns() / 1_000_000;
        write_book_message("snapshot", stream, (snapshot, unix_ms), price_decimals, out);
    }

    /// One id a message, consecutive.
    fn next_event_ids(&self, last_id: u64, _changes: u64, _now_us: u64) -> (u64, u64) {
        (last_id + 1, last_id + 1)
    }

    /// Well above 1, which would mean a restarted topic.
    fn initial_event_id(&self, _now_us: u64) -> u64 {
        53_935_309
    }
}
