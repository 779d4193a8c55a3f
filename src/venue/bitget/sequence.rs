//! Bitget's diff books: sequencing, snapshots and checksum ([`Sequencing`], [`Snapshots`],
//! [`Checksum`]).

use super::*;
use crate::book::diff_sync::Sequencing;
use crate::fixed::Measure;
use crate::venue::wire::interleaved_checksum;

/// Bitget's `seq`/`pseq` chain. An update is `(pseq, seq)` (`first_id`, `last_id`); it
/// follows a book at `last_id` when its `pseq` is that id. A snapshot (`pseq` 0) starts a
/// chain: its updates come on the stream after it, so no buffered event is ever joined to
/// one. Messages without ids (the retired v1 protocol's, `(0, 0)`) chain to each other;
/// their checksum is their check.
pub struct PseqChain;

impl Sequencing for PseqChain {
    /// A duplicate or an older update: its `seq` is not past the book's.
    fn is_contained(&self, update: &BookUpdate, last_id: u64, _snapshot_id: u64) -> bool {
        update.first_id != last_id && update.last_id <= last_id
    }

    fn is_gap(&self, update: &BookUpdate, last_id: u64, _snapshot_id: u64) -> bool {
        update.first_id != last_id
    }

    /// The snapshot comes on the stream before its updates, which are applied as they
    /// come: a buffered update must not start after it (those it holds are dropped as
    /// contained, the next must follow it).
    fn joins(&self, snapshot_id: u64, first: &BookUpdate) -> bool {
        first.first_id <= snapshot_id
    }

    fn gap_event_starts_buffer(&self) -> bool {
        true
    }
}

/// Bitget's checksum: OKX's recipe ([`interleaved_checksum`]) over the wire text. Bitget
/// writes every number of a book with its instrument's precision, trailing zeros kept
/// (`"135.0000"`), so the text is each number with the most decimals the book's messages
/// wrote (`WireDecimals`).
pub(super) fn book_checksum(book: &DepthBook, decimals: WireDecimals) -> u32 {
    let places = |is_price| match is_price {
        true => u32::from(decimals.price),
        false => u32::from(decimals.amount),
    };
    let unit = decimals.unit;
    match unit.is_coin() {
        true => interleaved_checksum(book, |value, is_price| {
            value.with_decimals(places(is_price))
        }),
        false => interleaved_checksum(book, |value, is_price| {
            unit.wire_text(Measure::of_price(is_price), value, places(is_price))
        }),
    }
}

impl<M: Market> Checksum for Bitget<M> {
    fn checksum(book: &DepthBook, decimals: WireDecimals) -> Option<u32> {
        Some(book_checksum(book, decimals))
    }
}

/// What one resubscription costs against the snapshot budget, whose default is 1,200 a
/// minute a connection: 320, so that it pays for 3.75 a minute, 225 an hour, leaving 15
/// of the 240 subscribe requests an hour Bitget allows a connection (docs/protocols.md,
/// Bitget, Limits) for its first subscriptions.
pub(super) const RESUBSCRIBE_WEIGHT: u32 = 320;

impl<M: Market> Snapshots for Bitget<M> {
    /// Bitget's REST book (the books' snapshots come on the WebSocket; nothing is fetched).
    fn snapshot_url(&self, rest_base: &str, symbol: &str, limit: usize) -> String {
        M::rest_book_url(rest_base, symbol, limit)
    }

    fn snapshot_weight(&self, _limit: usize) -> u32 {
        RESUBSCRIBE_WEIGHT
    }
}
