//! KuCoin's token, stream and symbol names, subscribe and unsubscribe frames, keep-alive
//! ([`Streams`]).

use super::*;

/// The diff channel.
pub(super) const DIFF_CHANNEL: &str = "/market/level2";

/// The top-N channels, by the depth they push.
pub(super) const TOP_CHANNELS: [&str; 2] = ["/spotMarket/level2Depth5", "/spotMarket/level2Depth50"];

/// The most symbols one topic names ("≤ 100 topics per subscribe request").
const SYMBOLS_PER_REQUEST: usize = 100;

/// The top-N channel a connection of `depth` levels subscribes to.
pub(super) fn top_channel(depth: usize) -> &'static str {
    match depth {
        ..=5 => TOP_CHANNELS[0],
        _ => TOP_CHANNELS[1],
    }
}

/// The levels a side `channel` pushes.
pub(super) fn channel_levels(channel: &str) -> usize {
    match channel == TOP_CHANNELS[0] {
        true => 5,
        false => 50,
    }
}

fn channel(kind: StreamKind, depth: usize) -> &'static str {
    match kind {
        StreamKind::Snapshots => top_channel(depth),
        StreamKind::Diff => DIFF_CHANNEL,
    }
}

/// `type` (`subscribe` or `unsubscribe`) requests of at most 100 symbols each, numbered
/// from `first_id` (every unsubscription numbered `UNSUBSCRIBE_REQUEST_ID`).
fn requests(
    kind_of_request: &str,
    streams: &[String],
    kind: StreamKind,
    depth: usize,
    first_id: u64,
) -> Vec<SubscribeRequest> {
    let channel = channel(kind, depth);
    let mut ids = request_ids(first_id);
    crate::venue::wire::chunked_requests(streams, SYMBOLS_PER_REQUEST, Some(first_id), |symbols| {
        let frame = serde_json::json!({
            "id": ids.next().expect("endless").to_string(), "type": kind_of_request,
            "topic": format!("{channel}:{}", symbols.join(",")),
            "privateChannel": false, "response": true,
        });
        frame.to_string()
    })
}

/// The ids requests from `first_id` on carry in their frames, as `chunked_requests`
/// numbers them: `first_id`, `first_id + 1`…, or `UNSUBSCRIBE_REQUEST_ID` for all of an
/// unsubscription's, whose answers name no subscription.
pub(in crate::venue) fn request_ids(first_id: u64) -> impl Iterator<Item = u64> {
    let step = u64::from(first_id != super::super::UNSUBSCRIBE_REQUEST_ID);
    std::iter::successors(Some(first_id), move |id| Some(id + step))
}

impl Streams for Kucoin {
    fn spot_symbol(&self, base: &str, quote: &str) -> Option<String> {
        Some(format!("{base}-{quote}"))
    }

    /// `BTC-USDT`: two upper-case codes joined by `-`.
    fn check_symbol(&self, symbol: &str) -> Result<(), String> {
        match crate::venue::wire::dashed_codes(symbol, 40) {
            Some(codes) if codes.len() == 2 => Ok(()),
            _ => Err("a KuCoin spot symbol is two upper-case codes joined by -: BTC-USDT".to_owned()),
        }
    }

    fn quote_currency(&self, symbol: &str, base: &str) -> Option<crate::units::Currency> {
        crate::venue::wire::separated_quote(symbol, '-', base)
    }

    /// A book is known by its symbol, on either channel.
    fn stream_name(&self, symbol: &str, _depth: usize) -> String {
        symbol.to_owned()
    }

    fn diff_stream_name(&self, symbol: &str) -> String {
        symbol.to_owned()
    }

    /// Any symbol; the simulator's snapshot streams (`level2Depth50:<symbol>`) are not.
    fn diff_stream_symbol(&self, stream: &str) -> Option<String> {
        (!stream.is_empty() && !stream.contains(':')).then(|| stream.to_owned())
    }

    /// One request per 100 symbols, each acknowledged once by its `id`.
    fn subscribe_frames(
        &self,
        streams: &[String],
        kind: StreamKind,
        depth: usize,
        first_id: u64,
    ) -> Vec<SubscribeRequest> {
        requests("subscribe", streams, kind, depth, first_id.max(1))
    }

    fn unsubscribe_frames(&self, streams: &[String], kind: StreamKind, depth: usize) -> Vec<String> {
        let unsubscribe = super::super::UNSUBSCRIBE_REQUEST_ID;
        let requests = requests("unsubscribe", streams, kind, depth, unsubscribe);
        requests.into_iter().map(|request| request.frame).collect()
    }

    /// `POST /api/v1/bullet-public`.
    fn token_path(&self) -> &'static str {
        "/api/v1/bullet-public"
    }

    /// `{"code":"200000","data":{"token":"…","instanceServers":[{"endpoint":"wss://…",
    /// "protocol":"websocket","pingInterval":18000,"pingTimeout":10000,…}]}}`: the first
    /// WebSocket server's endpoint, with the token and the connection's id.
    fn token_connection(&self, body: &[u8], connect_id: &str) -> Result<TokenConnection, String> {
        let answer: serde_json::Value =
            serde_json::from_slice(body).map_err(|error| format!("not JSON: {error}"))?;
        if answer["code"] != "200000" {
            let code = &answer["code"];
            return Err(format!("refused: code {code}, {}", answer["msg"]));
        }
        let data = &answer["data"];
        let token = data["token"].as_str().filter(|token| !token.is_empty());
        let token = token.ok_or("no token in the answer")?;
        let servers = data["instanceServers"].as_array().ok_or("no instanceServers")?;
        let server = servers
            .iter()
            .find(|server| server["protocol"] == "websocket")
            .ok_or("no WebSocket server in instanceServers")?;
        let endpoint = server["endpoint"].as_str().ok_or("a server without an endpoint")?;
        if !(endpoint.starts_with("wss://") || endpoint.starts_with("ws://")) {
            return Err(format!("the endpoint {endpoint:?} is not a WebSocket URL"));
        }
        let ping_every = server["pingInterval"]
            .as_u64()
            .filter(|&ms| ms >= 1000)
            .map(std::time::Duration::from_millis);
        let separator = if endpoint.contains('?') { '&' } else { '?' };
        let query = |token: &str| format!("{endpoint}{separator}token={token}&connectId={connect_id}");
        Ok(TokenConnection {
            url: query(token),
            recorded_url: query("TOKEN"),
            ping_every,
        })
    }

    fn awaits_welcome(&self) -> bool {
        true
    }

    fn is_welcome(&self, frame: &[u8]) -> bool {
        let value: Result<serde_json::Value, _> = serde_json::from_slice(frame);
        value.is_ok_and(|value| value["type"] == "welcome")
    }

    /// `{"id":"<time>","type":"ping"}`, at least once in the venue's ping interval (18 s
    /// by its token's answer; half of it here, the reader keeping to half of what an
    /// answer says).
    fn client_ping(&self) -> Option<(std::time::Duration, &'static str)> {
        Some((std::time::Duration::from_secs(9), r#"{"id":"{time}","type":"ping"}"#))
    }
}
