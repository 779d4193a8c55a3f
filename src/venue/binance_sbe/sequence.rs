//! Binance SBE's diff books: sequencing, snapshots and checksum ([`Sequencing`], [`Snapshots`], [`Checksum`]).

use super::*;

impl Checksum for BinanceSbe {}

impl Snapshots for BinanceSbe {
    fn snapshot_url(&self, rest_base: &str, symbol: &str, limit: usize) -> String {
        Binance.snapshot_url(rest_base, symbol, limit)
    }

    fn snapshot_symbol(&self, url: &str) -> Option<String> {
        Binance.snapshot_symbol(url)
    }

    fn snapshot_weight(&self, limit: usize) -> u32 {
        Binance.snapshot_weight(limit)
    }
}
