//! OKX's diff books: sequencing, snapshots and checksum ([`Sequencing`], [`Snapshots`], [`Checksum`]).

use super::*;
use crate::fixed::Measure;
use crate::venue::wire::interleaved_checksum;

/// OKX's `seqId`/`prevSeqId` chain. An update covers `prevSeqId..seqId` (`first_id`,
/// `last_id`); it follows a book at `last_id` when its `prevSeqId` is that id, or, first
/// after a REST snapshot taken between two of OKX's updates, when the snapshot's id lies
/// inside it. An
/// update that does neither and is not older is a gap. Messages without ids (0, 0)
/// chain to each other.
pub struct SeqIdChain;

impl Sequencing for SeqIdChain {
    /// Older than the book (a duplicate, a reordered update). A keep-alive at the book's
    /// id, and an update after a sequence reset (`seqId < prevSeqId`), chain.
    fn is_contained(&self, update: &BookUpdate, last_id: u64, _snapshot_id: u64) -> bool {
        update.first_id != last_id && update.last_id <= last_id
    }

    fn is_gap(&self, update: &BookUpdate, last_id: u64, snapshot_id: u64) -> bool {
        let chains = update.first_id == last_id;
        let spans = update.first_id < last_id && last_id < update.last_id;
        !(chains || spans && last_id == snapshot_id)
    }

    /// "Apply the buffered updates from the one with `prevSeqId <= snapshot.seqId <
    /// seqId`": the oldest buffered update must not start after the snapshot.
    fn joins(&self, snapshot_id: u64, first: &BookUpdate) -> bool {
        first.first_id <= snapshot_id
    }

    fn gap_event_starts_buffer(&self) -> bool {
        true
    }
}

/// OKX's checksum ([`interleaved_checksum`]), each number at its shortest, as the wire
/// writes it in the book's unit (`decimals.unit`).
pub(super) fn book_checksum(book: &DepthBook, decimals: WireDecimals) -> u32 {
    let unit = decimals.unit;
    match unit.is_coin() {
        true => interleaved_checksum(book, |value, _| shortest_text(value)),
        false => interleaved_checksum(book, |value, is_price| {
            unit.wire_text(Measure::of_price(is_price), value, 0).shortest()
        }),
    }
}

impl Checksum for Okx {
    fn checksum(book: &DepthBook, decimals: WireDecimals) -> Option<u32> {
        Some(book_checksum(book, decimals))
    }
}

impl Snapshots for Okx {
    /// `GET /api/v5/market/books?instId=…&sz=…` (400 levels at most).
    fn snapshot_url(&self, rest_base: &str, symbol: &str, limit: usize) -> String {
        let size = limit.clamp(1, DIFF_LEVELS);
        format!("{rest_base}/api/v5/market/books?instId={symbol}&sz={size}")
    }

    fn snapshot_symbol(&self, url: &str) -> Option<String> {
        let (path, query) = url.split_once('?')?;
        if !path.ends_with("/api/v5/market/books") {
            return None;
        }
        let inst_id = query
            .split('&')
            .find_map(|pair| pair.strip_prefix("instId="))?;
        (!inst_id.is_empty()).then(|| inst_id.to_owned())
    }

    /// "REST books 40 requests per 2 s per IP" (docs/protocols.md, OKX, Limits): one each,
    /// against a budget of 1200 a minute.
    fn snapshot_weight(&self, _limit: usize) -> u32 {
        1
    }
}
