//! Deribit's diff books: sequencing and snapshots ([`Sequencing`], [`Snapshots`]); it has
//! no checksum ([`Checksum`]).

use super::*;

/// Deribit's `change_id` chain: a change is `(prev_change_id, change_id)`, and follows a
/// book whose last `change_id` is its `prev_change_id`; a snapshot starts the chain. The
/// ids are one counter across instruments, so they jump: Bitget's `seq`/`pseq` rule, as
/// it is.
pub use crate::venue::bitget::PseqChain as ChangeIdChain;

impl Checksum for Deribit {}

/// What one resubscription (an unsubscription and a subscription, two calls) costs against
/// the snapshot budget, whose default is 1,200 a minute a connection: 20, so that it pays
/// for 60 a minute, 2 calls a second, within the 3.3 a second Deribit's credits allow a
/// subscription call (docs/protocols.md, Deribit, Limits). Its burst of 10 calls is kept
/// by `snapshot_spacing_ms`, which `config/default.toml` sets to 700 for Deribit.
pub(super) const RESUBSCRIBE_WEIGHT: u32 = 20;

impl Snapshots for Deribit {
    /// Deribit's REST book (the books' snapshots come on the WebSocket; nothing is fetched).
    fn snapshot_url(&self, rest_base: &str, symbol: &str, limit: usize) -> String {
        format!("{rest_base}/api/v2/public/get_order_book?instrument_name={symbol}&depth={limit}")
    }

    fn snapshot_weight(&self, _limit: usize) -> u32 {
        RESUBSCRIBE_WEIGHT
    }
}
