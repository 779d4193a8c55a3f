//! Binance futures' stream and symbol names, subscribe and unsubscribe frames ([`Streams`]):
//! spot's requests and stream grammar, the futures symbols.

use super::*;

/// A dated contract's suffix: `_` and its delivery date, `YYMMDD`.
fn is_delivery_date(text: &str) -> bool {
    text.len() == 6 && text.bytes().all(|byte| byte.is_ascii_digit())
}

/// A symbol's pair (`BTCUSDT`, `BTCUSD`) and its contract suffix (`PERP`, `250926`, or
/// none).
fn pair_and_contract(symbol: &str) -> (&str, Option<&str>) {
    match symbol.split_once('_') {
        Some((pair, contract)) => (pair, Some(contract)),
        None => (symbol, None),
    }
}

/// Why `symbol` is not a symbol of market `M`, if it is not.
fn symbol_error<M: Market>(symbol: &str) -> Option<String> {
    let (pair, contract) = pair_and_contract(symbol);
    let pair_ok = !pair.is_empty() && pair.bytes().all(|byte| byte.is_ascii_alphanumeric());
    let well_formed = match M::INVERSE {
        // `BTCUSD_PERP`, `BTCUSD_250926`: a pair in USD, perpetual or dated.
        true => {
            pair_ok
                && pair.to_ascii_uppercase().ends_with("USD")
                && contract.is_some_and(|contract| {
                    contract.eq_ignore_ascii_case("PERP") || is_delivery_date(contract)
                })
        }
        // `BTCUSDT` (perpetual), `BTCUSDT_250926` (dated).
        false => pair_ok && contract.is_none_or(is_delivery_date),
    };
    (!well_formed).then(|| match M::INVERSE {
        true => "a Binance COIN-M symbol is a USD pair and its contract: BTCUSD_PERP, BTCUSD_250926".to_owned(),
        false => "a Binance USDⓈ-M symbol is letters and digits, and a dated contract's _YYMMDD: BTCUSDT, BTCUSDT_250926".to_owned(),
    })
}

/// The diff streams' suffixes, the service's first: 100 ms, then the ones recordings
/// use (real time, 500 ms, and the 250 ms default).
const DIFF_SUFFIXES: [&str; 4] = ["@depth@100ms", "@depth@0ms", "@depth@500ms", "@depth"];

impl<M: Market> Streams for BinanceFutures<M> {
    /// A USDⓈ-M perpetual's name (`ETHBTC`); COIN-M has none sized in the base coin.
    fn spot_symbol(&self, base: &str, quote: &str) -> Option<String> {
        (!M::INVERSE).then(|| format!("{base}{quote}"))
    }

    fn check_symbol(&self, symbol: &str) -> Result<(), String> {
        symbol_error::<M>(symbol).map_or(Ok(()), Err)
    }

    /// The pair's quote (`BTCUSDT_250926`: USDT; `BTCUSD_PERP`: USD).
    fn quote_currency(&self, symbol: &str, base: &str) -> Option<crate::units::Currency> {
        crate::venue::wire::concatenated_quote(pair_and_contract(symbol).0, base)
    }

    fn sized_in_contracts(&self, _symbol: &str) -> bool {
        M::INVERSE
    }

    fn inverse(&self, _symbol: &str) -> bool {
        M::INVERSE
    }

    /// Top N in 5, 10 or 20 levels, as spot's partial depth.
    fn stream_name(&self, symbol: &str, depth: usize) -> String {
        Binance.stream_name(symbol, depth)
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

    fn unsubscribe_frames(
        &self,
        streams: &[String],
        kind: StreamKind,
        depth: usize,
    ) -> Vec<String> {
        Binance.unsubscribe_frames(streams, kind, depth)
    }

    fn diff_stream_name(&self, symbol: &str) -> String {
        format!("{}{}", symbol.to_ascii_lowercase(), DIFF_SUFFIXES[0])
    }

    /// `btcusdt@depth@100ms`, `btcusd_perp@depth@0ms`…: the symbol as the REST API names
    /// it (`BTCUSD_PERP`).
    fn diff_stream_symbol(&self, stream: &str) -> Option<String> {
        let symbol = DIFF_SUFFIXES
            .iter()
            .find_map(|suffix| stream.strip_suffix(suffix))?;
        (!symbol.is_empty()).then(|| symbol.to_ascii_uppercase())
    }
}
