//! Binance's diff books: sequencing, snapshots and checksum ([`Sequencing`], [`Snapshots`], [`Checksum`]).

use super::*;

/// How Binance sequences its diff stream: an event covers update ids `U..=u` and the next
/// starts at `u + 1`. A snapshot at `lastUpdateId` is followed by the events with
/// `u > lastUpdateId`, the first of which must cover `lastUpdateId + 1` (docs/protocols.md,
/// Binance, "How to manage a local order book").
pub struct UpdateIdRanges;

impl Sequencing for UpdateIdRanges {
    fn is_contained(&self, update: &BookUpdate, last_id: u64, _snapshot_id: u64) -> bool {
        update.last_id <= last_id
    }

    fn is_gap(&self, update: &BookUpdate, last_id: u64, _snapshot_id: u64) -> bool {
        update.first_id > last_id.saturating_add(1)
    }

    fn joins(&self, snapshot_id: u64, first: &BookUpdate) -> bool {
        first.first_id <= snapshot_id.saturating_add(1)
    }

    fn gap_event_starts_buffer(&self) -> bool {
        true
    }
}

impl Checksum for Binance {}

/// A depth snapshot as Tardis.dev's archives store it for Binance spot and futures alike:
/// `{"stream":"btcusdt@depthSnapshot","generated":true,"data":<the /depth response>}`; its
/// symbol and the response.
pub(crate) fn archived_depth_snapshot(message: &str) -> Option<(String, String)> {
    let members = crate::venue::wire::archived_members(message)?;
    let stream = crate::venue::wire::archived_string(&members, "stream")?;
    let symbol = stream.strip_suffix("@depthSnapshot")?.to_ascii_uppercase();
    Some((symbol, members.get("data")?.get().to_owned()))
}

impl Snapshots for Binance {
    fn archived_snapshot(&self, message: &str) -> Option<(String, String)> {
        archived_depth_snapshot(message)
    }

    fn snapshot_url(&self, rest_base: &str, symbol: &str, limit: usize) -> String {
        let symbol = symbol.to_ascii_uppercase();
        format!("{rest_base}/api/v3/depth?symbol={symbol}&limit={limit}")
    }

    fn snapshot_symbol(&self, url: &str) -> Option<String> {
        let (path, query) = url.split_once('?')?;
        if !path.ends_with("/api/v3/depth") {
            return None;
        }
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix("symbol="))
            .map(str::to_owned)
    }

    /// docs/protocols.md, "REST weights": limit 1–100: 5, 101–500: 25, 501–1000: 50, above: 250.
    fn snapshot_weight(&self, limit: usize) -> u32 {
        match limit {
            0..=100 => 5,
            101..=500 => 25,
            501..=1000 => 50,
            _ => 250,
        }
    }
}
