//! Bybit's stream and symbol names, subscribe and unsubscribe frames, keep-alive ([`Streams`]).

use super::*;
use super::sequence::subscribed_depth;
use super::sim::TOPICS_PER_REQUEST;

/// The markets served, each at `<url>/<market>`; a bare symbol is on the first.
pub(super) const MARKETS: [&str; 3] = ["spot", "linear", "inverse"];

/// Bybit's symbols are short upper-case names (`BTCUSDT`, `1000PEPEUSDT`).
pub(super) const MAX_SYMBOL_LEN: usize = 24;

/// The requests for `op` on the topics of `symbols` at `depth`, 10 topics a request,
/// numbered from `first_id` (unsubscriptions all 0, which no subscription has).
pub(super) fn requests(op: &str, symbols: &[String], depth: usize, first_id: u64) -> Vec<SubscribeRequest> {
    let depth = subscribed_depth(depth);
    symbols
        .chunks(TOPICS_PER_REQUEST)
        .enumerate()
        .map(|(index, chunk)| {
            let topics: Vec<String> = chunk
                .iter()
                .map(|symbol| format!("orderbook.{depth}.{symbol}"))
                .collect();
            let id = match first_id {
                UNSUBSCRIBE_REQUEST_ID => UNSUBSCRIBE_REQUEST_ID,
                first => first + index as u64,
            };
            let start = index * TOPICS_PER_REQUEST;
            SubscribeRequest {
                frame: serde_json::json!({"req_id": id.to_string(), "op": op, "args": topics})
                    .to_string(),
                id: Some(id),
                streams: start..start + chunk.len(),
            }
        })
        .collect()
}

impl Streams for Bybit {
    fn spot_symbol(&self, base: &str, quote: &str) -> Option<String> {
        Some(format!("{base}{quote}"))
    }

    /// `BTCUSDT`, `linear:BTCUSDC`: the base's code, then the quote's. A symbol whose rest
    /// is no currency (`BTCPERP`) does not say.
    fn quote_currency(&self, configured: &str, base: &str) -> Option<crate::units::Currency> {
        let (_, symbol) = market_and_symbol(configured);
        crate::venue::wire::concatenated_quote(symbol, base).filter(|quote| quote.as_str() != "PERP")
    }

    fn stream_name(&self, symbol: &str, _depth: usize) -> String {
        self.diff_stream_name(symbol)
    }

    /// 10 topics a request, each request acknowledged once, naming its `req_id`.
    fn subscribe_frames(
        &self,
        streams: &[String],
        _kind: StreamKind,
        depth: usize,
        first_id: u64,
    ) -> Vec<SubscribeRequest> {
        requests("subscribe", streams, depth, first_id.max(1))
    }

    fn unsubscribe_frames(&self, streams: &[String], _kind: StreamKind, depth: usize) -> Vec<String> {
        let requests = requests("unsubscribe", streams, depth, UNSUBSCRIBE_REQUEST_ID);
        requests.into_iter().map(|request| request.frame).collect()
    }

    /// "Send `{"req_id":"…","op":"ping"}` every 20 s" (docs/protocols.md, Bybit, Keep-alive).
    fn client_ping(&self) -> Option<(std::time::Duration, &'static str)> {
        Some((std::time::Duration::from_secs(20), r#"{"op":"ping"}"#))
    }

    /// `<url>/spot`, `<url>/linear` or `<url>/inverse`, by the symbol's market.
    fn endpoint(&self, url: &str, symbol: &str) -> String {
        let (market, _) = market_and_symbol(symbol);
        format!("{}/{market}", url.trim_end_matches('/'))
    }

    /// The inverse market's sizes are contracts of a USD value.
    fn sized_in_contracts(&self, symbol: &str) -> bool {
        self.inverse(symbol)
    }

    fn inverse(&self, symbol: &str) -> bool {
        market_and_symbol(symbol).0 == "inverse"
    }

    fn check_symbol(&self, configured: &str) -> Result<(), String> {
        let (market, symbol) = market_and_symbol(configured);
        if !MARKETS.contains(&market) {
            return Err(format!(
                "a Bybit market is {} (before ':'; spot without one)",
                MARKETS.join(" or ")
            ));
        }
        if symbol.is_empty()
            || symbol.len() > MAX_SYMBOL_LEN
            || !symbol
                .bytes()
                .all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
        {
            return Err(format!(
                "a Bybit symbol is 1 to {MAX_SYMBOL_LEN} upper-case letters and digits"
            ));
        }
        Ok(())
    }

    /// A book is known by its symbol on its connection (the market is the connection's).
    fn diff_stream_name(&self, symbol: &str) -> String {
        market_and_symbol(symbol).1.to_owned()
    }

    /// The symbol of a stream, or of a topic (`orderbook.50.BTCUSDT`).
    fn diff_stream_symbol(&self, stream: &str) -> Option<String> {
        let symbol = match topic_parts(stream.as_bytes()) {
            Some((_, symbol)) => std::str::from_utf8(symbol).ok()?,
            None => stream,
        };
        (!symbol.is_empty() && !symbol.contains('.')).then(|| symbol.to_owned())
    }
}
