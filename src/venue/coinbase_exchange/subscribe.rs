//! Coinbase Exchange's stream and symbol names, subscribe and unsubscribe frames, keep-alive ([`Streams`]).

use super::*;

/// The channels every subscription asks for.
pub(super) const CHANNELS: [&str; 2] = ["level2_batch", "heartbeat"];

/// Products one subscribe request carries.
pub(super) const PRODUCTS_PER_REQUEST: usize = 100;
pub(super) const MAX_PRODUCT_ID_LEN: usize = 24;

/// The requests for `kind` (`subscribe`, `unsubscribe`) of `products`, 100 a request,
/// numbered from `first_id` (each acknowledged by one answer naming no request).
pub(super) fn requests(kind: &str, products: &[String], first_id: u64) -> Vec<SubscribeRequest> {
    crate::venue::wire::chunked_requests(products, PRODUCTS_PER_REQUEST, Some(first_id), |chunk| {
        serde_json::json!({"type": kind, "product_ids": chunk, "channels": CHANNELS}).to_string()
    })
}

impl Streams for CoinbaseExchange {
    fn spot_symbol(&self, base: &str, quote: &str) -> Option<String> {
        Some(format!("{base}-{quote}"))
    }

    /// `BTC-USD`.
    fn quote_currency(&self, symbol: &str, base: &str) -> Option<crate::units::Currency> {
        crate::venue::wire::separated_quote(symbol, '-', base)
    }

    fn stream_name(&self, symbol: &str, _depth: usize) -> String {
        symbol.to_owned()
    }

    /// 100 products a request, each request answered by one `subscriptions` message that
    /// names no request: the oldest awaited.
    fn subscribe_frames(
        &self,
        streams: &[String],
        _kind: StreamKind,
        _depth: usize,
        first_id: u64,
    ) -> Vec<SubscribeRequest> {
        requests("subscribe", streams, first_id.max(1))
    }

    fn unsubscribe_frames(&self, streams: &[String], _kind: StreamKind, _depth: usize) -> Vec<String> {
        let requests = requests("unsubscribe", streams, UNSUBSCRIBE_REQUEST_ID);
        requests.into_iter().map(|request| request.frame).collect()
    }

    fn check_symbol(&self, symbol: &str) -> Result<(), String> {
        match crate::venue::wire::dashed_codes(symbol, MAX_PRODUCT_ID_LEN).is_some_and(|parts| parts.len() == 2) {
            true => Ok(()),
            false => Err(format!(
                "a Coinbase product id is BASE-QUOTE (ETH-USD), upper-case, at most \
                 {MAX_PRODUCT_ID_LEN} characters"
            )),
        }
    }

    fn diff_stream_name(&self, symbol: &str) -> String {
        symbol.to_owned()
    }

    fn diff_stream_symbol(&self, stream: &str) -> Option<String> {
        (!stream.is_empty()).then(|| stream.to_owned())
    }
}
