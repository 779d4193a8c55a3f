//! Bitget spot: the venue's facts. Its protocol, which it shares with Bitget's futures, is
//! `venue/bitget/`.

use super::bitget::{Bitget, Market, market_facts};
use super::VenueFacts;

/// Spot pairs (`BTCUSDT`, `instType` `SPOT`): sizes in the base coin.
pub struct Spot;

/// Bitget spot, the venue.
pub type BitgetSpot = Bitget<Spot>;
/// The registry names a venue's type and its value by one name, as a unit struct's.
#[allow(non_upper_case_globals)]
pub const BitgetSpot: BitgetSpot = Bitget::VENUE;

impl Market for Spot {
    const FACTS: VenueFacts = market_facts("bitget");

    fn inst_type(_symbol: &str) -> Result<&'static str, String> {
        Ok("SPOT")
    }

    /// The base's code and the quote's run together.
    fn quote_currency(symbol: &str, base: &str) -> Option<crate::units::Currency> {
        super::wire::concatenated_quote(symbol, base)
    }

    fn rest_book_url(rest_base: &str, symbol: &str, limit: usize) -> String {
        format!("{rest_base}/api/v2/spot/market/orderbook?symbol={symbol}&limit={limit}")
    }
}
