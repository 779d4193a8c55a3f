//! KuCoin futures' diff books: snapshots and checksum ([`Snapshots`], [`Checksum`]); the
//! sequencing is Binance spot's ([`UpdateIdRanges`]) over `O..C`.

use super::*;

/// KuCoin has no checksum.
impl Checksum for KucoinFutures {}

impl Snapshots for KucoinFutures {
    /// No REST snapshot: a subscription starts with one on the stream.
    fn snapshot_url(&self, _rest_base: &str, _symbol: &str, _limit: usize) -> String {
        String::new()
    }
}
