//! Bybit's diff books: sequencing, snapshots and checksum ([`Sequencing`], [`Snapshots`], [`Checksum`]).

use super::*;
use super::sim::DEPTHS;

/// The smallest depth Bybit offers that covers `requested` (its most, 1000, beyond).
pub(super) fn subscribed_depth(requested: usize) -> usize {
    DEPTHS
        .into_iter()
        .find(|&depth| depth >= requested)
        .unwrap_or(DEPTHS[DEPTHS.len() - 1])
}

impl Checksum for Bybit {}

impl Snapshots for Bybit {
    /// Keeps the book at the topic's depth: levels leaving it arrive as deletes, and a
    /// cut book is bounded even if one is missed.
    fn kept_depth(&self, requested: usize) -> Option<usize> {
        Some(subscribed_depth(requested))
    }

    /// Bybit's REST order book (its snapshots come on the WebSocket instead).
    fn snapshot_url(&self, rest_base: &str, symbol: &str, limit: usize) -> String {
        let (market, symbol) = market_and_symbol(symbol);
        format!("{rest_base}/v5/market/orderbook?category={market}&symbol={symbol}&limit={limit}")
    }
}
