//! Binance's stream and symbol names, subscribe and unsubscribe frames, keep-alive ([`Streams`]).

use super::*;

impl Streams for Binance {
    fn spot_symbol(&self, base: &str, quote: &str) -> Option<String> {
        Some(format!("{base}{quote}"))
    }

    /// `BTCUSDT`: the base's code, then the quote's.
    fn quote_currency(&self, symbol: &str, base: &str) -> Option<crate::units::Currency> {
        crate::venue::wire::concatenated_quote(symbol, base)
    }

    /// Letters and digits (`BTCUSDT`): a symbol is part of the stream names, whose parts
    /// `@` separates.
    fn check_symbol(&self, symbol: &str) -> Result<(), String> {
        match symbol.bytes().all(|byte| byte.is_ascii_alphanumeric()) {
            true => Ok(()),
            false => Err("a Binance symbol is letters and digits (BTCUSDT)".to_owned()),
        }
    }

    /// Partial depth comes in 5, 10 or 20 levels: the smallest that covers `depth`.
    fn stream_name(&self, symbol: &str, depth: usize) -> String {
        let levels = [5, 10, 20]
            .into_iter()
            .find(|&levels| levels >= depth)
            .unwrap_or(20);
        format!("{}@depth{levels}@100ms", symbol.to_ascii_lowercase())
    }

    /// One `SUBSCRIBE` for all streams, answered by one `{"result":null,"id":1}`.
    /// One request, answered `{"result":null,"id":…}`.
    fn subscribe_frames(
        &self,
        streams: &[String],
        _kind: StreamKind,
        _depth: usize,
        first_id: u64,
    ) -> Vec<SubscribeRequest> {
        let request =
            serde_json::json!({"method": "SUBSCRIBE", "params": streams, "id": first_id});
        vec![SubscribeRequest {
            frame: request.to_string(),
            id: Some(first_id),
            streams: 0..streams.len(),
        }]
    }

    fn unsubscribe_frames(&self, streams: &[String], _kind: StreamKind, _depth: usize) -> Vec<String> {
        let request = serde_json::json!({"method": "UNSUBSCRIBE", "params": streams, "id": UNSUBSCRIBE_REQUEST_ID});
        vec![request.to_string()]
    }

    fn diff_stream_name(&self, symbol: &str) -> String {
        format!("{}@depth@100ms", symbol.to_ascii_lowercase())
    }

    /// `nknusdt@depth@100ms` or `nknusdt@depth` (the 1000 ms stream): `NKNUSDT`, as the
    /// REST API names it.
    fn diff_stream_symbol(&self, stream: &str) -> Option<String> {
        let symbol = stream
            .strip_suffix("@depth@100ms")
            .or_else(|| stream.strip_suffix("@depth"))?;
        (!symbol.is_empty()).then(|| symbol.to_ascii_uppercase())
    }
}
