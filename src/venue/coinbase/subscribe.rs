//! Coinbase Advanced Trade's stream and symbol names, subscribe and unsubscribe frames, keep-alive ([`Streams`]).

use super::*;

/// Products one `level2` request carries.
pub(super) const PRODUCTS_PER_REQUEST: usize = 100;
pub(super) const MAX_PRODUCT_ID_LEN: usize = 24;

/// The `level2` requests for `kind` (`subscribe`, `unsubscribe`) of `products`, 100 a
/// request, numbered from `first_id` (each acknowledged by one answer naming no request).
pub(super) fn level2_requests(kind: &str, products: &[String], first_id: u64) -> Vec<SubscribeRequest> {
    crate::venue::wire::chunked_requests(products, PRODUCTS_PER_REQUEST, Some(first_id), |chunk| {
        serde_json::json!({"type": kind, "product_ids": chunk, "channel": "level2"}).to_string()
    })
}

impl Streams for Coinbase {
    fn spot_symbol(&self, base: &str, quote: &str) -> Option<String> {
        Some(format!("{base}-{quote}"))
    }

    /// `BTC-USD`; a `-USDC` product's public book is its `-USD` product's (docs/protocols.md,
    /// Coinbase Advanced Trade), so it is in USD; an INTX perpetual (`BTC-PERP-INTX`) does
    /// not say.
    fn quote_currency(&self, symbol: &str, base: &str) -> Option<crate::units::Currency> {
        let quote = crate::venue::wire::separated_quote(symbol, '-', base)?;
        match quote.as_str() {
            "PERP" => None,
            "USDC" => crate::units::Currency::parse("USD"),
            _ => Some(quote),
        }
    }

    fn stream_name(&self, symbol: &str, _depth: usize) -> String {
        symbol.to_owned()
    }

    /// The products' `level2` requests, 100 products each, then the `heartbeats` one, which
    /// asks for no book: each is answered by one `subscriptions` message naming no
    /// request, the `level2` ones first.
    fn subscribe_frames(
        &self,
        streams: &[String],
        _kind: StreamKind,
        _depth: usize,
        first_id: u64,
    ) -> Vec<SubscribeRequest> {
        let mut requests = level2_requests("subscribe", streams, first_id.max(1));
        let heartbeats_id = first_id.max(1) + requests.len() as u64;
        requests.push(SubscribeRequest {
            frame: r#"{"type":"subscribe","channel":"heartbeats"}"#.to_owned(),
            id: Some(heartbeats_id),
            streams: 0..0,
        });
        requests
    }

    /// The products' `level2` only: the heartbeats go on for the connection's others.
    fn unsubscribe_frames(&self, streams: &[String], _kind: StreamKind, _depth: usize) -> Vec<String> {
        let requests = level2_requests("unsubscribe", streams, UNSUBSCRIBE_REQUEST_ID);
        requests.into_iter().map(|request| request.frame).collect()
    }

    /// A spot product (`BTC-USD`) or an INTX perpetual (`BTC-PERP-INTX`).
    fn check_symbol(&self, symbol: &str) -> Result<(), String> {
        let parts = crate::venue::wire::dashed_codes(symbol, MAX_PRODUCT_ID_LEN).unwrap_or_default();
        match matches!(parts[..], [_, _] | [_, "PERP", "INTX"]) {
            true => Ok(()),
            false => Err(format!(
                "a Coinbase product id is BASE-QUOTE (ETH-USD) or BASE-PERP-INTX, upper-case, \
                 at most {MAX_PRODUCT_ID_LEN} characters"
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
