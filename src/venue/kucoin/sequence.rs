//! KuCoin's diff books: snapshots and checksum ([`Snapshots`], [`Checksum`]); the sequencing
//! is Binance spot's ([`UpdateIdRanges`]), each message's changes numbered
//! (`BookUpdate::change_ids`).

use super::*;

/// KuCoin has no checksum.
impl Checksum for Kucoin {}

impl Snapshots for Kucoin {
    /// `{"type":"message","generated":true,"topic":"/market/level2Snapshot:BTC-USDT",
    /// "subject":"trade.l2Snapshot","code":"200000","data":{…}}`: the REST answer's members
    /// beside the message's (what `decode_snapshot` reads, it skipping the others).
    fn archived_snapshot(&self, message: &str) -> Option<(String, String)> {
        let members = crate::venue::wire::archived_members(message)?;
        let topic = crate::venue::wire::archived_string(&members, "topic")?;
        let symbol = topic.strip_prefix("/market/level2Snapshot:")?;
        Some((symbol.to_owned(), message.to_owned()))
    }

    /// The public top 100, whatever is asked: the whole book needs an API key.
    fn snapshot_url(&self, rest_base: &str, symbol: &str, _limit: usize) -> String {
        format!("{rest_base}/api/v1/market/orderbook/level2_{SNAPSHOT_LEVELS}?symbol={symbol}")
    }

    fn snapshot_symbol(&self, url: &str) -> Option<String> {
        let (path, query) = url.split_once('?')?;
        if !path.contains("/market/orderbook/level2") {
            return None;
        }
        let symbol = query.split('&').find_map(|pair| pair.strip_prefix("symbol="))?;
        Some(symbol.to_owned())
    }

    /// A top-100 book weighs 4 in the public pool.
    fn snapshot_weight(&self, _limit: usize) -> u32 {
        4
    }

    /// The public book is the top 100 of a book that may be deeper.
    fn partial_snapshot_levels(&self, _limit: usize) -> Option<usize> {
        Some(SNAPSHOT_LEVELS)
    }
}
