//! Bitstamp's stream and symbol names, subscribe and unsubscribe frames, keep-alive ([`Streams`]).

use super::*;

impl Streams for Bitstamp {
    fn spot_symbol(&self, base: &str, quote: &str) -> Option<String> {
        Some(format!("{base}{quote}").to_ascii_lowercase())
    }

    /// `btcusd`: the base's code, then the quote's.
    fn quote_currency(&self, symbol: &str, base: &str) -> Option<crate::units::Currency> {
        crate::venue::wire::concatenated_quote(symbol, base)
    }

    /// `order_book_<pair>` always carries 100 levels; `depth` only limits what is kept.
    fn stream_name(&self, symbol: &str, _depth: usize) -> String {
        format!("{ORDER_BOOK_PREFIX}{}", symbol.to_ascii_lowercase())
    }

    /// One `bts:subscribe` per channel, each acknowledged.
    /// A request per channel, acknowledged by `bts:subscription_succeeded` naming it.
    fn subscribe_frames(
        &self,
        streams: &[String],
        _kind: StreamKind,
        _depth: usize,
        _first_id: u64,
    ) -> Vec<SubscribeRequest> {
        streams
            .iter()
            .enumerate()
            .map(|(index, channel)| SubscribeRequest {
                frame: serde_json::json!({"event": "bts:subscribe", "data": {"channel": channel}})
                    .to_string(),
                id: None,
                streams: index..index + 1,
            })
            .collect()
    }

    /// Acknowledged by `bts:unsubscription_succeeded`.
    fn unsubscribe_frames(&self, streams: &[String], _kind: StreamKind, _depth: usize) -> Vec<String> {
        streams
            .iter()
            .map(|channel| {
                serde_json::json!({"event": "bts:unsubscribe", "data": {"channel": channel}})
                    .to_string()
            })
            .collect()
    }

    fn diff_stream_name(&self, symbol: &str) -> String {
        format!("{DIFF_ORDER_BOOK_PREFIX}{}", symbol.to_ascii_lowercase())
    }

    fn diff_stream_symbol(&self, stream: &str) -> Option<String> {
        let pair = stream.strip_prefix(DIFF_ORDER_BOOK_PREFIX)?;
        (!pair.is_empty()).then(|| pair.to_owned())
    }
}
