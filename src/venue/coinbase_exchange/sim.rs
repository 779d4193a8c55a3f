//! Coinbase Exchange as the simulator serves it ([`Simulated`]): its frames and answers, in its wire format.

use super::*;

/// Writes a side as `[["price","size"],…]`.
pub(super) fn write_side(levels: &[Level], price_decimals: u32, out: &mut Vec<u8>) {
    crate::venue::wire::write_levels(levels, price_decimals, "", out);
}

/// A snapshot message as the feed writes it.
pub(super) fn write_snapshot(product_id: &str, bids: &[Level], asks: &[Level], decimals: u32, out: &mut Vec<u8>) {
    use std::io::Write;
    write!(out, r#"{{"type":"snapshot","product_id":"{product_id}","asks":"#)
        .expect("writing to a Vec cannot fail");
    write_side(asks, decimals, out);
    out.extend_from_slice(br#","bids":"#);
    write_side(bids, decimals, out);
    out.push(b'}');
}

/// The simulator's side of the Coinbase Exchange feed. Its streams are the product ids.
impl Simulated for CoinbaseExchange {
    /// A snapshot message of the book.
    fn encode_book(&self, stream: &str, book: &TopBook, price_decimals: u32, out: &mut Vec<u8>) {
        write_snapshot(stream, book.bids.as_slice(), book.asks.as_slice(), price_decimals, out);
    }

    /// Subscriptions and unsubscriptions (one `subscriptions` answer a request; a channel
    /// other than `level2_batch`, `level2` and `heartbeat` refused).
    fn answer_request(&self, request: &str) -> Option<Answer> {
        let request: serde_json::Value = serde_json::from_str(request).ok()?;
        let kind = request.get("type")?.as_str()?;
        let products: Vec<String> = request
            .get("product_ids")?
            .as_array()?
            .iter()
            .map(|product| product.as_str().map(str::to_owned))
            .collect::<Option<_>>()?;
        let channels = request.get("channels")?.as_array()?;
        let known = ["level2_batch", "level2", "heartbeat"];
        if channels
            .iter()
            .any(|channel| !channel.as_str().is_some_and(|name| known.contains(&name)))
        {
            let error = serde_json::json!({"type": "error", "message": "Failed to subscribe", "reason": "unknown channel"});
            return Some(Answer {
                replies: vec![error.to_string()],
                ..Answer::default()
            });
        }
        let listed = serde_json::json!({
            "type": "subscriptions",
            "channels": [{"name": "level2_batch", "product_ids": products}],
        });
        let replies = vec![listed.to_string()];
        match kind {
            "subscribe" => Some(Answer {
                subscribe: products,
                replies,
                ..Answer::default()
            }),
            "unsubscribe" => Some(Answer {
                unsubscribe: products,
                replies,
                ..Answer::default()
            }),
            _ => None,
        }
    }

    /// The simulator's books are 50 levels deep (the feed sends whole books).
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
        use std::io::Write;
        write!(out, r#"{{"type":"l2update","product_id":"{stream}","changes":["#)
            .expect("writing to a Vec cannot fail");
        let changes = (update.bids.iter().map(|level| ("buy", level)))
            .chain(update.asks.iter().map(|level| ("sell", level)));
        for (index, (side, level)) in changes.enumerate() {
            if index > 0 {
                out.push(b',');
            }
            write!(out, r#"["{side}",""#).expect("writing to a Vec cannot fail");
            level.price.append_decimal(price_decimals, out);
            out.extend_from_slice(br#"",""#);
            level.amount.append_decimal(crate::fixed::DECIMALS, out);
            out.extend_from_slice(br#""]"#);
        }
        out.extend_from_slice(br#"],"time":""#);
        write_timestamp(update.last_id, out);
        out.extend_from_slice(br#""}"#);
    }

    /// The snapshot that starts a subscription, on the stream; or the REST book an audit
    /// fetches (one order a level, the sequence a made-up count: nothing reads it).
    fn encode_snapshot(
        &self,
        stream: &str,
        snapshot: &BookUpdate,
        on: SnapshotSource,
        _checksum: Option<u32>,
        price_decimals: u32,
        out: &mut Vec<u8>,
    ) {
        if on == SnapshotSource::InBand {
            return write_snapshot(stream, &snapshot.bids, &snapshot.asks, price_decimals, out);
        }
        for (key, levels) in [(&br#"{"bids":["#[..], &snapshot.bids), (br#"],"asks":["#, &snapshot.asks)] {
            out.extend_from_slice(key);
            for (index, level) in levels.iter().enumerate() {
                if index > 0 {
                    out.push(b',');
                }
                out.extend_from_slice(b"[\"");
                level.price.append_decimal(price_decimals, out);
                out.extend_from_slice(b"\",\"");
                level.amount.append_decimal(crate::fixed::DECIMALS, out);
                out.extend_from_slice(b"\",1]");
            }
        }
        out.extend_from_slice(br#"],"sequence":1,"auction_mode":false,"auction":null,"time":""#);
        write_timestamp(snapshot.last_id, out);
        out.extend_from_slice(br#""}"#);
    }

    /// Ids are the updates' times, in microseconds, increasing.
    fn next_event_ids(&self, last_id: u64, _changes: u64, now_us: u64) -> (u64, u64) {
        let stamp = now_us.max(last_id + 1);
        (stamp, stamp)
    }

    fn initial_event_id(&self, now_us: u64) -> u64 {
        now_us
    }
}
