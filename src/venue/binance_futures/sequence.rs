//! Binance futures' diff books: the `pu` chain and REST snapshots ([`Sequencing`],
//! [`Snapshots`]); no checksum.

use super::*;

/// How Binance futures sequences its diff streams (docs/protocols.md, Binance futures,
/// "Sync"): an event covers update ids `U..=u` and names the `u` of the event before it
/// (`pu`); ids are not consecutive. A snapshot at `lastUpdateId` is followed by the events
/// with `u >= lastUpdateId` (one ending exactly on it is kept), the first of which must
/// straddle it (`U <= lastUpdateId <= u`); after it, each event's `pu` is the previous
/// event's `u`.
pub struct PreviousIdChain;

impl Sequencing for PreviousIdChain {
    /// Older than the book. While the book is the snapshot alone, an event ending on the
    /// snapshot's id is not: it is the one to apply first.
    fn is_contained(&self, update: &BookUpdate, last_id: u64, snapshot_id: u64) -> bool {
        update.last_id < last_id || update.last_id == last_id && last_id != snapshot_id
    }

    /// Neither chained to the book's last event by `pu`, nor, first after the snapshot,
    /// straddling it.
    fn is_gap(&self, update: &BookUpdate, last_id: u64, snapshot_id: u64) -> bool {
        let chains = update.previous_last_id == last_id;
        let straddles = last_id == snapshot_id
            && update.first_id <= snapshot_id
            && snapshot_id <= update.last_id;
        !(chains || straddles)
    }

    /// "If the oldest event already has `U > lastUpdateId`, the snapshot is too old."
    fn joins(&self, snapshot_id: u64, first: &BookUpdate) -> bool {
        first.first_id <= snapshot_id
    }

    fn gap_event_starts_buffer(&self) -> bool {
        true
    }
}

impl<M: Market> Checksum for BinanceFutures<M> {}

/// The `limit`s the depth endpoints take (docs/protocols.md, Binance futures).
const SNAPSHOT_LIMITS: [usize; 7] = [5, 10, 20, 50, 100, 500, 1000];

/// The smallest limit the endpoint takes that covers `limit` (1000 at most).
fn endpoint_limit(limit: usize) -> usize {
    SNAPSHOT_LIMITS
        .into_iter()
        .find(|&taken| taken >= limit)
        .unwrap_or(1000)
}

impl<M: Market> Snapshots for BinanceFutures<M> {
    /// As Binance spot's (`binance::archived_depth_snapshot`).
    fn archived_snapshot(&self, message: &str) -> Option<(String, String)> {
        crate::venue::binance::archived_depth_snapshot(message)
    }

    fn snapshot_url(&self, rest_base: &str, symbol: &str, limit: usize) -> String {
        let symbol = symbol.to_ascii_uppercase();
        let limit = endpoint_limit(limit);
        format!("{rest_base}{}?symbol={symbol}&limit={limit}", M::DEPTH_PATH)
    }

    fn snapshot_symbol(&self, url: &str) -> Option<String> {
        let (path, query) = url.split_once('?')?;
        if !path.ends_with(M::DEPTH_PATH) {
            return None;
        }
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix("symbol="))
            .map(str::to_owned)
    }

    /// Weight 2 up to 50 levels, 5 for 100, 10 for 500, 20 for 1000.
    fn snapshot_weight(&self, limit: usize) -> u32 {
        match endpoint_limit(limit) {
            0..=50 => 2,
            100 => 5,
            500 => 10,
            _ => 20,
        }
    }
}
