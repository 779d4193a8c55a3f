//! Bitget's stream and symbol names, subscribe and unsubscribe frames, keep-alive
//! ([`Streams`]).

use super::decode::{DIFF_CHANNEL, TOP_CHANNELS};
use super::*;

/// Arguments a request. "The args of one request ≤ 4,096 bytes" (docs/protocols.md,
/// Bitget, Limits): 10 of the longest (`{"instType":"USDT-FUTURES","channel":"books15",
/// "instId":"…"}` with a 32-character id, and a comma: 91 bytes) are 910; Bitget's
/// unified sockets dropped connections over single frames of 25 arguments or more.
const ARGS_PER_REQUEST: usize = 10;

/// The longest instrument id taken.
const MAX_INST_ID_LEN: usize = 32;

/// The snapshot channel of a connection of `depth` levels: the smallest covering it, else
/// the deepest.
pub(super) fn top_channel(depth: usize) -> (&'static str, usize) {
    TOP_CHANNELS
        .into_iter()
        .find(|&(_, levels)| levels >= depth)
        .unwrap_or(TOP_CHANNELS[TOP_CHANNELS.len() - 1])
}

pub(super) fn channel_of(kind: StreamKind, depth: usize) -> &'static str {
    match kind {
        StreamKind::Snapshots => top_channel(depth).0,
        StreamKind::Diff => DIFF_CHANNEL,
    }
}

/// The requests for `op` on `channel` for `inst_ids` of market `M`, ten arguments a
/// request, each acknowledged by its instrument.
fn requests<M: Market>(op: &str, channel: &str, inst_ids: &[String]) -> Vec<SubscribeRequest> {
    super::super::wire::chunked_requests(inst_ids, ARGS_PER_REQUEST, None, |chunk| {
        let args: Vec<_> = chunk
            .iter()
            .map(|inst_id| {
                // Every configured symbol passed `check_symbol`.
                let inst_type = M::inst_type(inst_id).unwrap_or_default();
                serde_json::json!({"instType": inst_type, "channel": channel, "instId": inst_id})
            })
            .collect();
        serde_json::json!({"op": op, "args": args}).to_string()
    })
}

/// Why `symbol` is not a Bitget instrument id (upper-case letters and digits), if not.
pub(super) fn symbol_error(symbol: &str) -> Option<String> {
    let well_formed = !symbol.is_empty()
        && symbol.len() <= MAX_INST_ID_LEN
        && symbol
            .bytes()
            .all(|byte| byte.is_ascii_uppercase() || byte.is_ascii_digit());
    (!well_formed).then(|| {
        format!(
            "a Bitget instrument id is upper-case letters and digits, at most \
             {MAX_INST_ID_LEN}: BTCUSDT"
        )
    })
}

impl<M: Market> Streams for Bitget<M> {
    /// The pair's codes run together (`BTCUSDT`), on either market: both size in the base
    /// coin.
    fn spot_symbol(&self, base: &str, quote: &str) -> Option<String> {
        let symbol = format!("{base}{quote}");
        M::inst_type(&symbol).is_ok().then_some(symbol)
    }

    fn check_symbol(&self, symbol: &str) -> Result<(), String> {
        if let Some(error) = symbol_error(symbol) {
            return Err(error);
        }
        M::inst_type(symbol).map(|_| ())
    }

    fn quote_currency(&self, symbol: &str, base: &str) -> Option<crate::units::Currency> {
        M::quote_currency(symbol, base)
    }

    /// A book is known by its instrument id, on either channel.
    fn stream_name(&self, symbol: &str, _depth: usize) -> String {
        symbol.to_owned()
    }

    fn diff_stream_name(&self, symbol: &str) -> String {
        symbol.to_owned()
    }

    /// Any instrument id; the simulator's snapshot streams (`books15:BTCUSDT`) are not.
    fn diff_stream_symbol(&self, stream: &str) -> Option<String> {
        (!stream.is_empty() && !stream.contains(':')).then(|| stream.to_owned())
    }

    /// Acknowledged once per instrument, naming it.
    fn subscribe_frames(
        &self,
        streams: &[String],
        kind: StreamKind,
        depth: usize,
        _first_id: u64,
    ) -> Vec<SubscribeRequest> {
        requests::<M>("subscribe", channel_of(kind, depth), streams)
    }

    fn unsubscribe_frames(
        &self,
        streams: &[String],
        kind: StreamKind,
        depth: usize,
    ) -> Vec<String> {
        let requests = requests::<M>("unsubscribe", channel_of(kind, depth), streams);
        requests.into_iter().map(|request| request.frame).collect()
    }

    /// "Send the text `ping` every ~30 s; no ping for 2 minutes → disconnect"
    /// (docs/protocols.md, Bitget, Keep-alive).
    fn client_ping(&self) -> Option<(std::time::Duration, &'static str)> {
        Some((std::time::Duration::from_secs(30), "ping"))
    }
}
