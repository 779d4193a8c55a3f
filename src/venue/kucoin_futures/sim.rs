//! KuCoin futures as the simulator serves it ([`Simulated`]): `obu` frames and answers in
//! the venue's format (the books in binary frames, as the venue sends them; the answers
//! in text frames).

use super::*;
use crate::book::Level;
use crate::venue::wire::write_shortest_pairs;
use std::io::Write;

/// The time the simulator's answers carry, in nanoseconds.
const UNIX_NS: u64 = 1_790_113_097_769_363_986;


/// An `obu` message, as the venue writes it (members in the recorded order).
#[allow(clippy::too_many_arguments)]
fn write_message(
    depth: &str,
    kind: &str,
    symbol: &str,
    (first, last): (u64, u64),
    time_ns: u64,
    bids: &[Level],
    asks: &[Level],
    out: &mut Vec<u8>,
) {
    write!(
        out,
        r#"{{"T":"obu.FUTURES","dp":"{depth}","t":"{kind}","P":{time_ns},"d":{{"a":"#
    )
    .expect("writing to a Vec cannot fail");
    write_shortest_pairs(asks, out);
    out.extend_from_slice(br#","b":"#);
    write_shortest_pairs(bids, out);
    write!(
        out,
        r#","C":{last},"s":"{symbol}","M":{time_ns},"O":{first}}}}}"#
    )
    .expect("writing to a Vec cannot fail");
}

/// The simulator's top-N stream of `symbol` at `depth` (`obu50:XBTUSDTM`): its diff and
/// top-N streams of one symbol differ by name, as the service's need not.
fn top_stream(depth: usize, symbol: &str) -> String {
    format!("obu{depth}:{symbol}")
}

impl Simulated for KucoinFutures {
    /// A whole top N, `"t":"snapshot"`, numbered by its sequence.
    fn encode_book(&self, stream: &str, book: &TopBook, _price_decimals: u32, out: &mut Vec<u8>) {
        let (name, symbol) = stream.split_once(':').unwrap_or(("obu50", stream));
        let depth = name.strip_prefix("obu").unwrap_or("50");
        let id = book.venue_sequence;
        let (bids, asks) = (book.bids.as_slice(), book.asks.as_slice());
        let time_ns = book.exchange_time_ns;
        write_message(depth, "snapshot", symbol, (id, id), time_ns, bids, asks, out);
    }

    /// Subscriptions and unsubscriptions (answered by `id`; a channel other than `obu`
    /// refused) and the ping.
    fn answer_request(&self, request: &str) -> Option<Answer> {
        let request: serde_json::Value = serde_json::from_str(request).ok()?;
        let id = request.get("id")?.as_str()?.to_owned();
        if request.get("type").and_then(|kind| kind.as_str()) == Some("ping") {
            let pong = serde_json::json!({"type": "pong", "id": id, "ts": UNIX_NS});
            return Some(Answer {
                replies: vec![pong.to_string()],
                ping: true,
                ..Answer::default()
            });
        }
        let action = request.get("action")?.as_str()?;
        let symbol = request.get("symbol")?.as_str()?;
        let depth = request.get("depth")?.as_str()?;
        let mut answer = Answer::default();
        if request.get("channel")?.as_str()? != "obu" {
            let refusal = serde_json::json!({
                "id": id, "result": false, "reason": "symbols are not supported for topic",
            });
            answer.replies.push(refusal.to_string());
            return Some(answer);
        }
        let stream = match depth {
            subscribe::DIFF_DEPTH => symbol.to_owned(),
            levels => {
                let levels: usize = levels.parse().ok()?;
                answer.depth = Some(levels);
                top_stream(levels, symbol)
            }
        };
        answer
            .replies
            .push(serde_json::json!({"id": id, "result": true}).to_string());
        match action {
            "SUBSCRIBE" => answer.subscribe.push(stream),
            "UNSUBSCRIBE" => answer.unsubscribe.push(stream),
            _ => return None,
        }
        Some(answer)
    }

    fn levels_on_stream(&self, stream: &str) -> usize {
        let depth = stream.split_once(':').map(|(name, _)| name.trim_start_matches("obu"));
        depth.and_then(|depth| depth.parse().ok()).unwrap_or(SNAPSHOT_LEVELS)
    }

    /// An `increment@10ms` delta.
    fn encode_diff(
        &self,
        stream: &str,
        update: &BookUpdate,
        _checksum: Option<u32>,
        _price_decimals: u32,
        unix_ms: u64,
        out: &mut Vec<u8>,
    ) {
        let ids = (update.first_id, update.last_id);
        let (bids, asks) = (&update.bids, &update.asks);
        let time_ns = unix_ms * 1_000_000;
        write_message(subscribe::DIFF_DEPTH, "delta", stream, ids, time_ns, bids, asks, out);
    }

    /// A subscription's first message: the book, `O == C`.
    fn encode_snapshot(
        &self,
        stream: &str,
        snapshot: &BookUpdate,
        _on: SnapshotSource,
        _checksum: Option<u32>,
        _price_decimals: u32,
        out: &mut Vec<u8>,
    ) {
        let id = snapshot.last_id;
        let (bids, asks) = (&snapshot.bids, &snapshot.asks);
        let (depth, kind) = (subscribe::DIFF_DEPTH, "snapshot");
        write_message(depth, kind, stream, (id, id), UNIX_NS, bids, asks, out);
    }

    /// `O` one past the previous `C`, `C` one a change on.
    fn next_event_ids(&self, last_id: u64, changes: u64, _now_us: u64) -> (u64, u64) {
        let first = last_id + 1;
        (first, first + changes.saturating_sub(1))
    }

    fn initial_event_id(&self, _now_us: u64) -> u64 {
        1_747_821_025_294
    }

    fn welcome(&self, _connect_id: &str) -> Option<String> {
        let welcome = serde_json::json!({
            "sessionId": "e8e46556-ae1d-4871-be0b-4efeaa5f2f6a", "message": "welcome",
            "pingInterval": 18000,
        });
        Some(welcome.to_string())
    }
}
