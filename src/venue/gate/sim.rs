//! Gate as the simulator serves it ([`Simulated`]): its frames and answers, in its wire
//! format, for either market.

use super::*;
use crate::book::Level;
use crate::venue::wire::shortest_text;
use std::io::Write;

/// The prefix of the simulator's snapshot streams (`order_book:BTC_USDT`): its diff and
/// snapshot streams of one symbol differ by name, as the service's, one kind a connection,
/// need not.
const TOP_STREAM: &str = "order_book:";

/// The time the simulator's answers and REST snapshots carry, in milliseconds (its books
/// and events carry its clock).
const UNIX_MS: u64 = 1_770_123_456_789;

/// Writes a side in market `M`'s level shape: `[["price","amount"],…]` (spot) or
/// `[{"p":"price","s":amount},…]` (futures), numbers at their shortest.
fn write_side<M: Market>(levels: &[Level], out: &mut Vec<u8>) {
    out.push(b'[');
    for (index, level) in levels.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        let price = shortest_text(level.price);
        let amount = shortest_text(level.amount);
        let (price, amount) = (price.as_str(), amount.as_str());
        match M::SIZED_IN_CONTRACTS {
            false => write!(out, r#"["{price}","{amount}"]"#),
            true => write!(out, r#"{{"p":"{price}","s":{amount}}}"#),
        }
        .expect("writing to a Vec cannot fail");
    }
    out.push(b']');
}

/// A message's envelope up to its `result`'s members: `{"time":…,"time_ms":…,"channel":…,
/// "event":…,"result":{"t":…,`.
fn write_envelope(channel: &str, event: &str, unix_ms: u64, out: &mut Vec<u8>) {
    let seconds = unix_ms / 1000;
    write!(
        out,
        r#"{{"time":{seconds},"time_ms":{unix_ms},"channel":"{channel}","event":"{event}","result":{{"t":{unix_ms},"#
    )
    .expect("writing to a Vec cannot fail");
}

impl<M: Market> Simulated for Gate<M> {
    /// An `order_book` push: spot's `lastUpdateId`, `s`, `bids`, `asks`; futures' `all`
    /// event with `contract`, `id`, `asks`, `bids`.
    fn encode_book(&self, stream: &str, book: &TopBook, _price_decimals: u32, out: &mut Vec<u8>) {
        let symbol = stream.strip_prefix(TOP_STREAM).unwrap_or(stream);
        let channel = subscribe::channel::<M>(StreamKind::Snapshots);
        let (bids, asks) = (book.bids.as_slice(), book.asks.as_slice());
        let id = book.venue_sequence;
        let unix_ms = book.exchange_time_ns / 1_000_000;
        match M::SIZED_IN_CONTRACTS {
            false => {
                write_envelope(&channel, "update", unix_ms, out);
                write!(out, r#""lastUpdateId":{id},"s":"{symbol}","bids":"#)
                    .expect("writing to a Vec cannot fail");
                write_side::<M>(bids, out);
                out.extend_from_slice(br#","asks":"#);
                write_side::<M>(asks, out);
            }
            true => {
                write_envelope(&channel, "all", unix_ms, out);
                write!(out, r#""contract":"{symbol}","id":{id},"asks":"#)
                    .expect("writing to a Vec cannot fail");
                write_side::<M>(asks, out);
                out.extend_from_slice(br#","bids":"#);
                write_side::<M>(bids, out);
            }
        }
        write!(out, r#","l":"{}"}}}}"#, bids.len().max(asks.len()))
            .expect("writing to a Vec cannot fail");
    }

    /// Subscriptions and unsubscriptions (acknowledged naming the request's `id`; a channel
    /// other than the book channels refused) and the ping.
    fn answer_request(&self, request: &str) -> Option<Answer> {
        let request: serde_json::Value = serde_json::from_str(request).ok()?;
        let channel = request.get("channel")?.as_str()?;
        let header = serde_json::json!({
            "time": UNIX_MS / 1000, "time_ms": UNIX_MS, "conn_id": "c59a69fd3702aa1d",
        });
        if channel == format!("{}.ping", M::CHANNEL) {
            let mut pong = header;
            pong["channel"] = format!("{}.pong", M::CHANNEL).into();
            pong["event"] = "".into();
            pong["result"] = serde_json::Value::Null;
            return Some(Answer {
                replies: vec![pong.to_string()],
                ping: true,
                ..Answer::default()
            });
        }
        let event = request.get("event")?.as_str()?;
        let payload = request.get("payload")?.as_array()?;
        let symbol = payload.first()?.as_str()?;
        let mut ack = header;
        ack["id"] = request.get("id").cloned().unwrap_or_default();
        ack["channel"] = channel.into();
        ack["event"] = event.into();
        ack["payload"] = payload.clone().into();
        let mut answer = Answer::default();
        let stream = if channel == subscribe::channel::<M>(StreamKind::Diff) {
            answer.depth = Some(DIFF_LEVELS);
            symbol.to_owned()
        } else if channel == subscribe::channel::<M>(StreamKind::Snapshots) {
            answer.depth = payload.get(1)?.as_str()?.parse().ok();
            format!("{TOP_STREAM}{symbol}")
        } else {
            ack["error"] =
                serde_json::json!({"code": 2, "message": format!("unknown channel {channel}")});
            ack["result"] = serde_json::json!({"status": "fail"});
            answer.replies.push(ack.to_string());
            return Some(answer);
        };
        ack["result"] = serde_json::json!({"status": "success"});
        answer.replies.push(ack.to_string());
        match event {
            "subscribe" => answer.subscribe.push(stream),
            "unsubscribe" => answer.unsubscribe.push(stream),
            _ => return None,
        }
        Some(answer)
    }

    fn reconnect_request(&self) -> Option<&'static str> {
        M::RECONNECT
    }

    fn levels_on_stream(&self, _stream: &str) -> usize {
        DIFF_LEVELS
    }

    /// An `order_book_update` event.
    fn encode_diff(
        &self,
        stream: &str,
        update: &BookUpdate,
        _checksum: Option<u32>,
        _price_decimals: u32,
        unix_ms: u64,
        out: &mut Vec<u8>,
    ) {
        let channel = subscribe::channel::<M>(StreamKind::Diff);
        write_envelope(&channel, "update", unix_ms, out);
        if update.is_snapshot {
            out.extend_from_slice(br#""full":true,"#);
        }
        write!(
            out,
            r#""s":"{stream}","U":{},"u":{},"b":"#,
            update.first_id, update.last_id
        )
        .expect("writing to a Vec cannot fail");
        write_side::<M>(&update.bids, out);
        out.extend_from_slice(br#","a":"#);
        write_side::<M>(&update.asks, out);
        write!(out, r#","l":"{DIFF_LEVELS}"}}}}"#).expect("writing to a Vec cannot fail");
    }

    /// The REST body, `{"id":…,"current":…,"update":…,"asks":[…],"bids":[…]}`.
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
            r#"{{"id":{},"current":{UNIX_MS},"update":{UNIX_MS},"asks":"#,
            snapshot.last_id
        )
        .expect("writing to a Vec cannot fail");
        write_side::<M>(&snapshot.asks, out);
        out.extend_from_slice(br#","bids":"#);
        write_side::<M>(&snapshot.bids, out);
        out.push(b'}');
    }

    /// `U` one past the previous `u`, `u` one id a change on.
    fn next_event_ids(&self, last_id: u64, changes: u64, _now_us: u64) -> (u64, u64) {
        let first = last_id + 1;
        (first, first + changes.saturating_sub(1))
    }

    fn initial_event_id(&self, _now_us: u64) -> u64 {
        2_691_446
    }
}
