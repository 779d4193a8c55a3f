//! OKX as the simulator serves it ([`Simulated`]): its frames and answers, in its wire format.

use super::*;

/// The diff channel, and the levels a side OKX keeps in it.
pub(super) const DIFF_CHANNEL: &str = "books";

/// The snapshot channel, and its levels a side.
pub(super) const TOP_CHANNEL: &str = "books5";

pub(super) const TOP_LEVELS: usize = 5;

/// The instrument a simulator stream names: `BTC-USDT`, or `books5:BTC-USDT` for the
/// simulator's snapshot streams (its diff and snapshot streams of one instrument differ
/// by name, as the service's, one kind a connection, need not).
pub(super) fn stream_inst_id(stream: &str) -> &str {
    stream.strip_prefix("books5:").unwrap_or(stream)
}

/// Writes a side as OKX's `[["price","size","0","orders"],…]`, shortest numbers.
pub(super) fn write_levels(levels: &[Level], out: &mut Vec<u8>) {
    out.push(b'[');
    for (index, level) in levels.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"[\"");
        out.extend_from_slice(shortest_text(level.price).as_bytes());
        out.extend_from_slice(b"\",\"");
        out.extend_from_slice(shortest_text(level.amount).as_bytes());
        let orders: &[u8] = if level.amount.is_zero() { b"0" } else { b"1" };
        out.extend_from_slice(b"\",\"0\",\"");
        out.extend_from_slice(orders);
        out.extend_from_slice(b"\"]");
    }
    out.push(b']');
}

/// A `books` message (`action`, the ids and the checksum as OKX writes them).
pub(super) fn write_diff_message(
    inst_id: &str,
    action: &str,
    update: &BookUpdate,
    checksum: Option<u32>,
    unix_ms: u64,
    out: &mut Vec<u8>,
) {
    use std::io::Write;
    write!(
        out,
        r#"{{"arg":{{"channel":"{DIFF_CHANNEL}","instId":"{inst_id}"}},"action":"{action}","data":[{{"asks":"#
    )
    .expect("writing to a Vec cannot fail");
    write_levels(&update.asks, out);
    out.extend_from_slice(br#","bids":"#);
    write_levels(&update.bids, out);
    let checksum = checksum.map_or(0, |sum| sum as i32);
    let prev: i128 = match update.is_snapshot {
        true => -1,
        false => i128::from(update.first_id),
    };
    write!(
        out,
        r#","ts":"{unix_ms}","checksum":{checksum},"prevSeqId":{prev},"seqId":{}}}]}}"#,
        update.last_id
    )
    .expect("writing to a Vec cannot fail");
}

/// The simulator's side of OKX. Its diff streams are the instrument ids; its snapshot
/// streams `books5:<instId>`.
impl Simulated for Okx {
    /// A `books5` message.
    fn encode_book(&self, stream: &str, book: &TopBook, _price_decimals: u32, out: &mut Vec<u8>) {
        use std::io::Write;
        let inst_id = stream_inst_id(stream);
        write!(
            out,
            r#"{{"arg":{{"channel":"{TOP_CHANNEL}","instId":"{inst_id}"}},"data":[{{"asks":"#
        )
        .expect("writing to a Vec cannot fail");
        write_levels(book.asks.as_slice(), out);
        out.extend_from_slice(br#","bids":"#);
        write_levels(book.bids.as_slice(), out);
        let unix_ms = book.exchange_time_ns / 1_000_000;
        write!(
            out,
            r#","instId":"{inst_id}","ts":"{unix_ms}","seqId":{}}}]}}"#,
            book.venue_sequence
        )
        .expect("writing to a Vec cannot fail");
    }

    /// Subscriptions and unsubscriptions (an acknowledgement per argument; a channel
    /// other than `books` and `books5` refused, as OKX refuses what it does not know) and
    /// the text ping.
    fn answer_request(&self, request: &str) -> Option<Answer> {
        if request == "ping" {
            return Some(Answer {
                replies: vec!["pong".to_owned()],
                ping: true,
                ..Answer::default()
            });
        }
        let request: serde_json::Value = serde_json::from_str(request).ok()?;
        let op = request.get("op")?.as_str()?;
        let id = request.get("id").and_then(serde_json::Value::as_str);
        let mut answer = Answer::default();
        for arg in request.get("args")?.as_array()? {
            let channel = arg.get("channel")?.as_str()?;
            let inst_id = arg.get("instId")?.as_str()?;
            let stream = match channel {
                DIFF_CHANNEL => inst_id.to_owned(),
                TOP_CHANNEL => format!("{TOP_CHANNEL}:{inst_id}"),
                _ => {
                    let error = serde_json::json!({
                        "id": id, "event": "error", "code": "60018",
                        "msg": format!("Wrong URL or channel:{channel},instId:{inst_id} doesn't exist."),
                        "connId": "a4d3ae55",
                    });
                    answer.replies.push(error.to_string());
                    continue;
                }
            };
            let ack = serde_json::json!({
                "id": id, "event": op, "arg": {"channel": channel, "instId": inst_id},
                "connId": "a4d3ae55",
            });
            answer.replies.push(ack.to_string());
            match op {
                "subscribe" => answer.subscribe.push(stream),
                "unsubscribe" => answer.unsubscribe.push(stream),
                _ => return None,
            }
        }
        answer.depth = Some(DIFF_LEVELS);
        Some(answer)
    }

    fn reconnect_request(&self) -> Option<&'static str> {
        Some(
            r#"{"event":"notice","code":"64008","msg":"The connection will soon be closed for a service upgrade. Please reconnect.","connId":"a4d3ae55"}"#,
        )
    }

    fn levels_on_stream(&self, stream: &str) -> usize {
        match stream.starts_with("books5:") {
            true => TOP_LEVELS,
            false => DIFF_LEVELS,
        }
    }

    fn encode_diff(
        &self,
        stream: &str,
        update: &BookUpdate,
        checksum: Option<u32>,
        _price_decimals: u32,
        unix_ms: u64,
        out: &mut Vec<u8>,
    ) {
        write_diff_message(stream, "update", update, checksum, unix_ms, out);
    }

    /// A REST answer, or the `books` snapshot that starts a subscription in the
    /// protocol's in-band form.
    fn encode_snapshot(
        &self,
        stream: &str,
        snapshot: &BookUpdate,
        on: SnapshotSource,
        checksum: Option<u32>,
        _price_decimals: u32,
        out: &mut Vec<u8>,
    ) {
        use std::io::Write;
        let unix_ms = crate::clock::unix_ns() / 1_000_000;
        if on == SnapshotSource::InBand {
            let mut in_band = snapshot.clone();
            in_band.is_snapshot = true;
            write_diff_message(stream, "snapshot", &in_band, checksum, unix_ms, out);
            return;
        }
        out.extend_from_slice(br#"{"code":"0","msg":"","data":[{"asks":"#);
        write_levels(&snapshot.asks, out);
        out.extend_from_slice(br#","bids":"#);
        write_levels(&snapshot.bids, out);
        write!(out, r#","ts":"{unix_ms}","seqId":{}}}]}}"#, snapshot.last_id)
            .expect("writing to a Vec cannot fail");
    }

    /// `prevSeqId` is the last `seqId`; the ids are not consecutive.
    fn next_event_ids(&self, last_id: u64, changes: u64, _now_us: u64) -> (u64, u64) {
        (last_id, last_id + 7 + changes)
    }

    /// A `seqId` of the size of the 2026 recordings'.
    fn initial_event_id(&self, _now_us: u64) -> u64 {
        79_706_756_139
    }
}
