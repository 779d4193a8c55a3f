//! Bitget as the simulator serves it ([`Simulated`]): its frames and answers, in its wire
//! format (v2, with the checksums the 2024 frames still carried), for either market.

use super::decode::{DIFF_CHANNEL, TOP_CHANNELS};
use super::*;
use crate::venue::wire::write_levels;
use std::io::Write;

/// The levels a side of the simulator's `books` snapshots: the most the 2022 recordings
/// hold.
pub(super) const DIFF_LEVELS: usize = 150;

/// The snapshot channel a simulator stream is on and its instrument (`books15:BTCUSDT`),
/// or `None` for a diff stream (`BTCUSDT`): its diff and snapshot streams of one
/// instrument differ by name, as the service's, one kind a connection, need not.
fn top_stream(stream: &str) -> Option<((&'static str, usize), &str)> {
    let (channel, inst_id) = stream.split_once(':')?;
    let top = TOP_CHANNELS.into_iter().find(|(top, _)| *top == channel)?;
    Some((top, inst_id))
}

/// A book message in the 2026 recordings' layout: `action`, the channel's `arg`, one `data`
/// element with the sides at `price_decimals` (amounts at 8, the simulator's fixed
/// precision), the checksum where there is one, the time and the ids.
#[allow(clippy::too_many_arguments)]
fn write_message<M: Market>(
    action: &str,
    channel: &str,
    inst_id: &str,
    (bids, asks): (&[Level], &[Level]),
    (seq, pseq): (u64, u64),
    checksum: Option<u32>,
    price_decimals: u32,
    unix_ms: u64,
    out: &mut Vec<u8>,
) {
    let inst_type = M::inst_type(inst_id).unwrap_or_default();
    write!(
        out,
        r#"{{"action":"{action}","arg":{{"instType":"{inst_type}","channel":"{channel}","instId":"{inst_id}"}},"data":[{{"asks":"#
    )
    .expect("writing to a Vec cannot fail");
    write_levels(asks, price_decimals, "", out);
    out.extend_from_slice(br#","bids":"#);
    write_levels(bids, price_decimals, "", out);
    if let Some(checksum) = checksum {
        write!(out, r#","checksum":{}"#, checksum as i32).expect("writing to a Vec cannot fail");
    }
    write!(
        out,
        r#","ts":"{unix_ms}","seq":{seq},"pseq":{pseq}}}],"ts":{unix_ms}}}"#
    )
    .expect("writing to a Vec cannot fail");
}

impl<M: Market> Simulated for Bitget<M> {
    /// A `books1`/`books5`/`books15` push.
    fn encode_book(&self, stream: &str, book: &TopBook, price_decimals: u32, out: &mut Vec<u8>) {
        let ((channel, _), inst_id) = top_stream(stream).unwrap_or((TOP_CHANNELS[2], stream));
        let sides = (book.bids.as_slice(), book.asks.as_slice());
        let ids = (book.venue_sequence, 0);
        let unix_ms = book.exchange_time_ns / 1_000_000;
        write_message::<M>(
            "snapshot",
            channel,
            inst_id,
            sides,
            ids,
            None,
            price_decimals,
            unix_ms,
            out,
        );
    }

    /// Subscriptions and unsubscriptions (an acknowledgement per argument; a channel
    /// other than the book channels, or an instrument under another market's `instType`,
    /// refused as Bitget refuses them) and the text ping.
    fn answer_request(&self, request: &str) -> Option<Answer> {
        if request == "ping" {
            return Some(Answer {
                replies: vec![String::from_utf8_lossy(super::decode::PONG).into_owned()],
                ping: true,
                ..Answer::default()
            });
        }
        let request: serde_json::Value = serde_json::from_str(request).ok()?;
        let op = request.get("op")?.as_str()?;
        let mut answer = Answer::default();
        for arg in request.get("args")?.as_array()? {
            let channel = arg.get("channel")?.as_str()?;
            let inst_id = arg.get("instId")?.as_str()?;
            let inst_type = arg.get("instType")?.as_str()?;
            let refusal = |code: u32, msg: String| {
                let error = serde_json::json!({
                    "event": "error", "arg": arg, "code": code, "msg": msg, "op": op,
                });
                error.to_string()
            };
            if M::inst_type(inst_id).ok() != Some(inst_type) {
                let msg = format!(
                    "instType:{inst_type},channel:{channel},instId:{inst_id} doesn't exist"
                );
                answer.replies.push(refusal(30001, msg));
                continue;
            }
            let (stream, levels) = if channel == DIFF_CHANNEL {
                (inst_id.to_owned(), DIFF_LEVELS)
            } else if let Some(&(_, levels)) = TOP_CHANNELS.iter().find(|(top, _)| *top == channel)
            {
                (format!("{channel}:{inst_id}"), levels)
            } else {
                answer
                    .replies
                    .push(refusal(30016, "Param error".to_owned()));
                continue;
            };
            answer.depth = Some(levels);
            let ack = serde_json::json!({"event": op, "arg": arg});
            answer.replies.push(ack.to_string());
            match op {
                "subscribe" => answer.subscribe.push(stream),
                "unsubscribe" => answer.unsubscribe.push(stream),
                _ => return None,
            }
        }
        Some(answer)
    }

    fn levels_on_stream(&self, stream: &str) -> usize {
        top_stream(stream).map_or(DIFF_LEVELS, |((_, levels), _)| levels)
    }

    /// A `books` update: `pseq` the previous `seq`.
    fn encode_diff(
        &self,
        stream: &str,
        update: &BookUpdate,
        checksum: Option<u32>,
        price_decimals: u32,
        unix_ms: u64,
        out: &mut Vec<u8>,
    ) {
        let sides = (update.bids.as_slice(), update.asks.as_slice());
        let ids = (update.last_id, update.first_id);
        write_message::<M>(
            "update",
            DIFF_CHANNEL,
            stream,
            sides,
            ids,
            checksum,
            price_decimals,
            unix_ms,
            out,
        );
    }

    /// The `books` snapshot that starts a subscription: `pseq` 0 and, as Bitget's v2
    /// snapshots, no checksum.
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
        let sides = (snapshot.bids.as_slice(), snapshot.asks.as_slice());
        let ids = (snapshot.last_id, 0);
        write_message::<M>(
            "snapshot",
            DIFF_CHANNEL,
            stream,
            sides,
            ids,
            None,
            price_decimals,
            unix_ms,
            out,
        );
    }

    /// `pseq` is the last `seq`; the ids are not consecutive.
    fn next_event_ids(&self, last_id: u64, changes: u64, _now_us: u64) -> (u64, u64) {
        (last_id, last_id + 7 + changes)
    }

    /// A `seq` of the size of the 2026 recordings'.
    fn initial_event_id(&self, _now_us: u64) -> u64 {
        427_583_461_144
    }
}
