//! Coinbase Exchange's diff books: sequencing, snapshots and checksum ([`Sequencing`], [`Snapshots`], [`Checksum`]).

use super::*;

impl Checksum for CoinbaseExchange {}

impl Snapshots for CoinbaseExchange {
    /// The Exchange REST book (its snapshots come on the WebSocket instead).
    fn snapshot_url(&self, rest_base: &str, symbol: &str, _limit: usize) -> String {
        format!("{rest_base}/products/{symbol}/book?level=2")
    }
}
