//! Gate's diff books: snapshots and checksum ([`Snapshots`], [`Checksum`]); the sequencing
//! is Binance spot's ([`UpdateIdRanges`]).

use super::*;

/// Gate has no checksum.
impl<M: Market> Checksum for Gate<M> {}

impl<M: Market> Snapshots for Gate<M> {
    /// Spot: `{"result":<the order_book response>,"event":"snapshot","channel":
    /// "spot.order_book_update","symbol":"BTC_USDT","generated":true}`; the futures'
    /// archived shape is not documented.
    fn archived_snapshot(&self, message: &str) -> Option<(String, String)> {
        let members = crate::venue::wire::archived_members(message)?;
        let spot =
            crate::venue::wire::archived_string(&members, "channel")? == "spot.order_book_update";
        if !spot || crate::venue::wire::archived_string(&members, "event")? != "snapshot" {
            return None;
        }
        let symbol = crate::venue::wire::archived_string(&members, "symbol")?;
        Some((symbol.to_owned(), members.get("result")?.get().to_owned()))
    }

    /// `order_book_update` keeps the top 100 levels a side, and sends no delete for a level
    /// pushed out of them.
    fn kept_depth(&self, _requested: usize) -> Option<usize> {
        Some(DIFF_LEVELS)
    }

    /// At the stream's depth, whatever is asked ("the same depth as the subscribed level").
    fn snapshot_url(&self, rest_base: &str, symbol: &str, _limit: usize) -> String {
        let (path, parameter) = M::book_path(symbol);
        format!("{rest_base}{path}?{parameter}={symbol}&limit={DIFF_LEVELS}&with_id=true")
    }

    fn snapshot_symbol(&self, url: &str) -> Option<String> {
        let (path, query) = url.split_once('?')?;
        if !path.ends_with("/order_book") {
            return None;
        }
        query.split('&').find_map(|pair| {
            let symbol = pair
                .strip_prefix("currency_pair=")
                .or_else(|| pair.strip_prefix("contract="))?;
            Some(symbol.to_owned())
        })
    }
}
