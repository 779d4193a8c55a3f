//! Binance SBE's stream and symbol names, subscribe and unsubscribe frames, keep-alive ([`Streams`]).

use super::*;

impl Streams for BinanceSbe {
    fn spot_symbol(&self, base: &str, quote: &str) -> Option<String> {
        Binance.spot_symbol(base, quote)
    }

    fn quote_currency(&self, symbol: &str, base: &str) -> Option<crate::units::Currency> {
        Binance.quote_currency(symbol, base)
    }

    fn check_symbol(&self, symbol: &str) -> Result<(), String> {
        Binance.check_symbol(symbol)
    }

    /// `depth20` is the one top-of-book stream: the service keeps its best `depth` levels.
    fn stream_name(&self, symbol: &str, _depth: usize) -> String {
        format!("{}@depth20", symbol.to_ascii_lowercase())
    }

    fn subscribe_frames(
        &self,
        streams: &[String],
        kind: StreamKind,
        depth: usize,
        first_id: u64,
    ) -> Vec<SubscribeRequest> {
        Binance.subscribe_frames(streams, kind, depth, first_id)
    }

    fn unsubscribe_frames(&self, streams: &[String], kind: StreamKind, depth: usize) -> Vec<String> {
        Binance.unsubscribe_frames(streams, kind, depth)
    }

    fn diff_stream_name(&self, symbol: &str) -> String {
        format!("{}@depth", symbol.to_ascii_lowercase())
    }

    fn diff_stream_symbol(&self, stream: &str) -> Option<String> {
        let symbol = stream.strip_suffix("@depth")?;
        (!symbol.is_empty()).then(|| symbol.to_ascii_uppercase())
    }
}
