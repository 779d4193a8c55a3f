//! Bitstamp's diff books: sequencing, snapshots and checksum ([`Sequencing`], [`Snapshots`], [`Checksum`]).

use super::*;

/// How Bitstamp sequences its diff stream: an event has only its `microtimestamp`; a
/// snapshot is followed by the events stamped after it (the recording has one stamped
/// equal to the snapshot and contained in it).
///
/// What it cannot show: a lost event goes unnoticed, and of two swapped events the later
/// one is applied before the earlier arrives (the book published in between lacks the
/// earlier one). So an event stamped before the last applied one is a gap (applying it
/// late or dropping it both corrupt the book), and the book is rebuilt after every
/// reconnect, decode error and crossing — the venue's protocol allows no better
/// (docs/protocols.md, Bitstamp: resync periodically, on a crossing, on reconnect).
pub struct Microtimestamps;

impl Sequencing for Microtimestamps {
    /// Contained in the snapshot, or a repeat of the last event.
    fn is_contained(&self, update: &BookUpdate, last_id: u64, snapshot_id: u64) -> bool {
        update.last_id <= snapshot_id || update.last_id == last_id
    }

    fn is_gap(&self, update: &BookUpdate, last_id: u64, _snapshot_id: u64) -> bool {
        update.last_id < last_id
    }

    fn joins(&self, snapshot_id: u64, first: &BookUpdate) -> bool {
        first.first_id <= snapshot_id
    }

    /// An event stamped before the buffered ones: the next event starts the buffer, and
    /// the snapshot must not be older than that one.
    fn gap_event_starts_buffer(&self) -> bool {
        false
    }
}

impl Checksum for Bitstamp {}

impl Snapshots for Bitstamp {
    /// `{"data":<the order_book response>,"event":"snapshot","channel":
    /// "diff_order_book_btcusd","generated":true}`.
    fn archived_snapshot(&self, message: &str) -> Option<(String, String)> {
        let members = crate::venue::wire::archived_members(message)?;
        if crate::venue::wire::archived_string(&members, "event")? != "snapshot" {
            return None;
        }
        let channel = crate::venue::wire::archived_string(&members, "channel")?;
        let pair = channel.strip_prefix("diff_order_book_")?;
        Some((pair.to_owned(), members.get("data")?.get().to_owned()))
    }

    fn snapshot_url(&self, rest_base: &str, symbol: &str, _limit: usize) -> String {
        format!(
            "{rest_base}/api/v2/order_book/{}/",
            symbol.to_ascii_lowercase()
        )
    }

    fn snapshot_symbol(&self, url: &str) -> Option<String> {
        let path = url.split('?').next()?;
        let (_, pair) = path.split_once("/api/v2/order_book/")?;
        let pair = pair.trim_end_matches('/');
        (!pair.is_empty() && !pair.contains('/')).then(|| pair.to_owned())
    }

    /// One request against a budget counted in requests.
    fn snapshot_weight(&self, _limit: usize) -> u32 {
        1
    }

    /// A lost event cannot be seen (`Microtimestamps`); the REST book, stamped with the
    /// same microtimestamps as the events, audits the diff book exactly.
    fn audited(&self) -> bool {
        true
    }
}
