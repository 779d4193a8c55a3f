//! Deribit as the simulator serves it ([`Simulated`]): JSON-RPC answers, notifications in
//! its wire format, heartbeats that must be answered.

use super::decode::PLATFORM_STATE;
use super::subscribe::WINDOW_DEPTHS;
use super::*;
use crate::venue::wire::shortest_text;
use std::io::Write;

/// The levels a side of the simulator's `book.<instrument>.100ms` snapshots.
pub(super) const DIFF_LEVELS: usize = 100;

/// The grouped window a stream is (`book.BTC-PERPETUAL.none.10.100ms`): its instrument and
/// depth; `None` for any other stream.
fn window(stream: &str) -> Option<(&str, usize)> {
    let rest = stream.strip_prefix("book.")?.strip_suffix(".100ms")?;
    let (instrument, depth) = rest.split_once(".none.")?;
    let depth = depth.parse().ok()?;
    WINDOW_DEPTHS.contains(&depth).then_some((instrument, depth))
}

/// Writes a side as `[[price,amount],…]`, or with each level's action first
/// (`[["new",price,amount],…]`, `delete` for an amount of 0), bare numbers at their
/// shortest.
fn write_side(levels: &[Level], actions: bool, out: &mut Vec<u8>) {
    out.push(b'[');
    for (index, level) in levels.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.push(b'[');
        if actions {
            let action: &[u8] = match level.amount.is_zero() {
                true => br#""delete","#,
                false => br#""new","#,
            };
            out.extend_from_slice(action);
        }
        out.extend_from_slice(shortest_text(level.price).as_bytes());
        out.push(b',');
        out.extend_from_slice(shortest_text(level.amount).as_bytes());
        out.push(b']');
    }
    out.push(b']');
}

/// A book notification on `channel`: `data` with its members before the sides as Deribit
/// writes them, then the sides.
fn write_notification(channel: &str, members: &str, bids: &[Level], asks: &[Level], actions: bool, out: &mut Vec<u8>) {
    write!(
        out,
        r#"{{"jsonrpc":"2.0","method":"subscription","params":{{"channel":"{channel}","data":{{{members},"bids":"#
    )
    .expect("writing to a Vec cannot fail");
    write_side(bids, actions, out);
    out.extend_from_slice(br#","asks":"#);
    write_side(asks, actions, out);
    out.extend_from_slice(b"}}}");
}

/// An answer to request `id`: its `result` and the timing members Deribit adds.
fn answer(id: &serde_json::Value, result: serde_json::Value) -> String {
    serde_json::json!({
        "jsonrpc": "2.0", "id": id, "result": result,
        "usIn": 1_790_133_840_888_348u64, "usOut": 1_790_133_840_889_867u64, "usDiff": 1519,
        "testnet": false,
    })
    .to_string()
}

/// The instrument of a diff stream (`book.BTC-PERPETUAL.100ms`).
fn instrument_of(stream: &str) -> String {
    Deribit.diff_stream_symbol(stream).unwrap_or_else(|| stream.to_owned())
}

impl Simulated for Deribit {
    /// A grouped window.
    fn encode_book(&self, stream: &str, book: &TopBook, _price_decimals: u32, out: &mut Vec<u8>) {
        let instrument = window(stream).map_or(stream, |(instrument, _)| instrument);
        let members = format!(
            r#""instrument_name":"{instrument}","timestamp":{},"change_id":{}"#,
            book.exchange_time_ns / 1_000_000,
            book.venue_sequence
        );
        write_notification(stream, &members, book.bids.as_slice(), book.asks.as_slice(), false, out);
    }

    /// `public/auth` (any client id and secret authorise the connection; the simulator
    /// cannot check them against an account), `public/subscribe` (answered with the
    /// channels it subscribed: a `raw` book refused with Deribit's error 13778 on a
    /// connection not authorised, an unknown channel left out), `public/unsubscribe`,
    /// `public/set_heartbeat`, and `public/test`, the answer to its heartbeats.
    fn answer_request(&self, request: &str) -> Option<Answer> {
        let request: serde_json::Value = serde_json::from_str(request).ok()?;
        let id = request.get("id")?;
        let method = request.get("method")?.as_str()?;
        let mut answered = Answer::default();
        match method {
            "public/auth" => {
                let params = request.get("params")?;
                let given = |name: &str| params.get(name).and_then(serde_json::Value::as_str);
                let refusal = |code: u32, message: &str| {
                    serde_json::json!({
                        "jsonrpc": "2.0", "id": id, "testnet": false,
                        "error": {"code": code, "message": message},
                    })
                    .to_string()
                };
                let credentials = [given("client_id"), given("client_secret")];
                if given("grant_type") != Some("client_credentials")
                    || credentials.iter().any(|given| given.is_none_or(str::is_empty))
                {
                    answered.replies.push(refusal(11050, "bad_request"));
                    return Some(answered);
                }
                // Deribit's answer's members; the tokens stand-ins (the simulator
                // authorises the connection, which needs no private call).
                let result = serde_json::json!({
                    "access_token": "sim-access-token", "expires_in": 31_536_000,
                    "refresh_token": "sim-refresh-token", "scope": "connection mainaccount",
                    "token_type": "bearer", "enabled_features": [],
                });
                answered.replies.push(answer(id, result));
                answered.authorises = Some(refusal(13004, "invalid_credentials"));
            }
            "public/set_heartbeat" => answered.replies.push(answer(id, "ok".into())),
            "public/test" => {
                answered.replies.push(answer(id, serde_json::json!({"version": "1.2.26"})));
                answered.ping = true;
            }
            "public/subscribe" | "public/unsubscribe" => {
                let channels = request.get("params")?.get("channels")?.as_array()?;
                let mut listed = Vec::new();
                for channel in channels {
                    let channel = channel.as_str()?;
                    if channel.starts_with("book.") && channel.ends_with(".raw") {
                        let error = serde_json::json!({
                            "jsonrpc": "2.0", "id": id, "testnet": false,
                            "error": {"code": 13778, "message": "raw_subscriptions_not_available_for_unauthorized"},
                        });
                        answered.unauthorised = Some(error.to_string());
                    }
                    let depth = match window(channel) {
                        Some((_, depth)) => depth,
                        None if self.is_diff_stream(channel) => DIFF_LEVELS,
                        None if channel == PLATFORM_STATE => {
                            listed.push(channel.to_owned());
                            continue;
                        }
                        None => continue, // unknown: left out, without an error
                    };
                    answered.depth = Some(depth);
                    listed.push(channel.to_owned());
                    match method {
                        "public/subscribe" => answered.subscribe.push(channel.to_owned()),
                        _ => answered.unsubscribe.push(channel.to_owned()),
                    }
                }
                answered.replies.push(answer(id, listed.into()));
            }
            _ => return None,
        }
        Some(answered)
    }

    /// A `test_request` a second, which the client must answer.
    fn heartbeat(&self, _counter: u64) -> Option<String> {
        Some(r#"{"params":{"type":"test_request"},"method":"heartbeat","jsonrpc":"2.0"}"#.to_owned())
    }

    fn heartbeat_wants_answer(&self) -> bool {
        true
    }

    fn repeated_subscription_is_ignored(&self) -> bool {
        true
    }

    /// A maintenance break starting.
    fn reconnect_request(&self) -> Option<&'static str> {
        Some(
            r#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"platform_state","data":{"maintenance":true}}}"#,
        )
    }

    fn levels_on_stream(&self, stream: &str) -> usize {
        window(stream).map_or(DIFF_LEVELS, |(_, depth)| depth)
    }

    /// A `change` notification.
    fn encode_diff(
        &self,
        stream: &str,
        update: &BookUpdate,
        _checksum: Option<u32>,
        _price_decimals: u32,
        unix_ms: u64,
        out: &mut Vec<u8>,
    ) {
        let members = format!(
            r#""type":"change","timestamp":{unix_ms},"prev_change_id":{},"instrument_name":"{}","change_id":{}"#,
            update.first_id,
            instrument_of(stream),
            update.last_id
        );
        write_notification(stream, &members, &update.bids, &update.asks, true, out);
    }

    /// The `snapshot` notification that starts a subscription.
    fn encode_snapshot(
        &self,
        stream: &str,
        snapshot: &BookUpdate,
        _on: SnapshotSource,
        _checksum: Option<u32>,
        _price_decimals: u32,
        out: &mut Vec<u8>,
    ) {
        let members = format!(
            r#""type":"snapshot","timestamp":{},"instrument_name":"{}","change_id":{}"#,
            crate::clock::unix_ns() / 1_000_000,
            instrument_of(stream),
            snapshot.last_id
        );
        write_notification(stream, &members, &snapshot.bids, &snapshot.asks, true, out);
    }

    /// `prev_change_id` is the last `change_id`; the ids jump (one counter across
    /// instruments).
    fn next_event_ids(&self, last_id: u64, changes: u64, _now_us: u64) -> (u64, u64) {
        (last_id, last_id + 3 + changes)
    }

    /// A `change_id` of the size of the 2026 recordings'.
    fn initial_event_id(&self, _now_us: u64) -> u64 {
        136_069_961_946
    }
}
