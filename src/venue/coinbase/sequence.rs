//! Coinbase Advanced Trade's diff books: sequencing, snapshots and checksum ([`Sequencing`], [`Snapshots`], [`Checksum`]).

use super::*;

impl Checksum for Coinbase {}

impl Snapshots for Coinbase {
    /// The Advanced Trade public book (its snapshots come on the WebSocket instead).
    fn snapshot_url(&self, rest_base: &str, symbol: &str, limit: usize) -> String {
        format!("{rest_base}/api/v3/brokerage/market/product_book?product_id={symbol}&limit={limit}")
    }
}
