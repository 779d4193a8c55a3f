//! KuCoin futures' symbol names, `obu` subscribe and unsubscribe frames, keep-alive
//! ([`Streams`]).

use super::*;

/// The depths `obu` pushes whole books at, the smallest covering the service's first.
const TOP_DEPTHS: [usize; 3] = [1, 5, 50];

/// The diff subscription's depth: a snapshot, then every change 10 ms apart.
pub(super) const DIFF_DEPTH: &str = "increment@10ms";

/// The top-N depth a connection of `depth` levels subscribes to.
pub(super) fn top_depth(depth: usize) -> usize {
    TOP_DEPTHS
        .into_iter()
        .find(|&levels| levels >= depth)
        .unwrap_or(TOP_DEPTHS[TOP_DEPTHS.len() - 1])
}

/// The `depth` a subscription of `kind` names.
fn depth_named(kind: StreamKind, depth: usize) -> String {
    match kind {
        StreamKind::Snapshots => top_depth(depth).to_string(),
        StreamKind::Diff => DIFF_DEPTH.to_owned(),
    }
}

/// One `action` (`SUBSCRIBE` or `UNSUBSCRIBE`) request a symbol, numbered from `first_id`
/// as KuCoin spot's are (`kucoin::subscribe::request_ids`).
fn requests(
    action: &str,
    streams: &[String],
    kind: StreamKind,
    depth: usize,
    first_id: u64,
) -> Vec<SubscribeRequest> {
    let depth = depth_named(kind, depth);
    let mut ids = super::super::kucoin::request_ids(first_id);
    crate::venue::wire::chunked_requests(streams, 1, Some(first_id), |symbol| {
        let frame = serde_json::json!({
            "id": ids.next().expect("endless").to_string(), "action": action, "channel": "obu",
            "tradeType": "FUTURES", "symbol": symbol[0], "depth": depth,
        });
        frame.to_string()
    })
}

/// `symbol` less its `M` (`XBTUSDTM`: `XBTUSDT`), with Bitcoin's `XBT` read as `BTC`.
fn pair(symbol: &str) -> Option<String> {
    let pair = symbol.strip_suffix('M')?;
    Some(match pair.strip_prefix("XBT") {
        Some(quote) => format!("BTC{quote}"),
        None => pair.to_owned(),
    })
}

impl Streams for KucoinFutures {
    /// None: every book is sized in contracts.
    fn spot_symbol(&self, _base: &str, _quote: &str) -> Option<String> {
        None
    }

    /// A perpetual, upper-case letters and digits ending in `M` (`XBTUSDTM`, `ETHUSDM`).
    fn check_symbol(&self, symbol: &str) -> Result<(), String> {
        let plain = symbol.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit());
        match plain && symbol.len() > 4 && symbol.ends_with('M') {
            true => Ok(()),
            false => Err("a KuCoin perpetual is upper-case letters ending in M: XBTUSDTM".to_owned()),
        }
    }

    /// `XBTUSDTM`: USDT; `XBTUSDM` (inverse): USD.
    fn quote_currency(&self, symbol: &str, base: &str) -> Option<crate::units::Currency> {
        crate::venue::wire::concatenated_quote(&pair(symbol)?, base)
    }

    fn sized_in_contracts(&self, _symbol: &str) -> bool {
        true
    }

    /// Quoted in USD (`XBTUSDM`): coin-margined, a contract of 1 USD.
    fn inverse(&self, symbol: &str) -> bool {
        symbol.ends_with("USDM")
    }

    /// A book is known by its symbol, in either mode.
    fn stream_name(&self, symbol: &str, _depth: usize) -> String {
        symbol.to_owned()
    }

    fn diff_stream_name(&self, symbol: &str) -> String {
        symbol.to_owned()
    }

    /// Any symbol; the simulator's top-N streams (`obu50:<symbol>`) are not.
    fn diff_stream_symbol(&self, stream: &str) -> Option<String> {
        (!stream.is_empty() && !stream.contains(':')).then(|| stream.to_owned())
    }

    /// One request a symbol, each answered by its `id`.
    fn subscribe_frames(
        &self,
        streams: &[String],
        kind: StreamKind,
        depth: usize,
        first_id: u64,
    ) -> Vec<SubscribeRequest> {
        requests("SUBSCRIBE", streams, kind, depth, first_id.max(1))
    }

    /// `UNSUBSCRIBE` (the documented action is `SUBSCRIBE` only: this one's answer, if any,
    /// is ignored, as every unsubscription's).
    fn unsubscribe_frames(&self, streams: &[String], kind: StreamKind, depth: usize) -> Vec<String> {
        let unsubscribe = super::super::UNSUBSCRIBE_REQUEST_ID;
        let requests = requests("UNSUBSCRIBE", streams, kind, depth, unsubscribe);
        requests.into_iter().map(|request| request.frame).collect()
    }

    /// `{"id":"<time>","type":"ping"}`, well within the welcome's `pingInterval` (18 s) and
    /// never more than once a second, which the venue punishes by closing the connection.
    fn client_ping(&self) -> Option<(std::time::Duration, &'static str)> {
        Some((std::time::Duration::from_secs(9), r#"{"id":"{time}","type":"ping"}"#))
    }
}
