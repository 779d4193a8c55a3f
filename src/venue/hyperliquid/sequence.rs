//! Hyperliquid has no diff stream to sequence and no checksum ([`Snapshots`], [`Checksum`]).

use super::*;

impl Checksum for Hyperliquid {}

impl Snapshots for Hyperliquid {
    /// The `info` endpoint, which answers `{"type":"l2Book","coin":…}` with a book like a
    /// frame's data. Never fetched: without diff streams, no book is joined to a snapshot.
    fn snapshot_url(&self, rest_base: &str, _symbol: &str, _limit: usize) -> String {
        format!("{rest_base}/info")
    }
}
