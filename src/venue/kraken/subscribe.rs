//! Kraken's stream and symbol names, subscribe and unsubscribe frames, keep-alive ([`Streams`]).

use super::*;

impl Streams for Kraken {
    fn spot_symbol(&self, base: &str, quote: &str) -> Option<String> {
        Some(format!("{base}/{quote}"))
    }

    /// `BTC/USD`.
    fn quote_currency(&self, symbol: &str, base: &str) -> Option<crate::units::Currency> {
        crate::venue::wire::separated_quote(symbol, '/', base)
    }

    fn stream_name(&self, symbol: &str, _depth: usize) -> String {
        symbol.to_owned()
    }

    /// One request for every symbol, acknowledged once per symbol (naming it).
    fn subscribe_frames(
        &self,
        streams: &[String],
        _kind: StreamKind,
        depth: usize,
        first_id: u64,
    ) -> Vec<SubscribeRequest> {
        let request = serde_json::json!({
            "method": "subscribe",
            "params": {"channel": "book", "symbol": streams, "depth": subscribed_depth(depth), "snapshot": true},
            "req_id": first_id,
        });
        vec![SubscribeRequest {
            frame: request.to_string(),
            id: None,
            streams: 0..streams.len(),
        }]
    }

    fn unsubscribe_frames(&self, streams: &[String], _kind: StreamKind, _depth: usize) -> Vec<String> {
        let request = serde_json::json!({
            "method": "unsubscribe",
            "params": {"channel": "book", "symbol": streams},
            "req_id": 2,
        });
        vec![request.to_string()]
    }

    /// Kraken closes a connection after about a minute without traffic; heartbeats come
    /// once a second while subscribed, and a ping keeps a quiet connection open too.
    fn client_ping(&self) -> Option<(std::time::Duration, &'static str)> {
        Some((std::time::Duration::from_secs(30), r#"{"method":"ping"}"#))
    }

    /// Kraken names a book by its symbol, as subscribed (`BTC/USD`).
    fn diff_stream_name(&self, symbol: &str) -> String {
        symbol.to_owned()
    }

    fn diff_stream_symbol(&self, stream: &str) -> Option<String> {
        (!stream.is_empty()).then(|| stream.to_owned())
    }
}
