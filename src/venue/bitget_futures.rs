//! Bitget's USDT- and USDC-margined futures: the venue's facts. Its protocol, which it
//! shares with Bitget spot, is `venue/bitget/`.

use super::bitget::{Bitget, Market, market_facts};
use super::VenueFacts;
use crate::units::Currency;

/// Perpetual and delivery contracts margined in a stablecoin, sized in the base coin:
/// `BTCUSDT` is a USDT-margined one (`instType` `USDT-FUTURES`), a name ending in `PERP`
/// or `USDC` a USDC-margined one (`USDC-FUTURES`). Coin-margined contracts
/// (`COIN-FUTURES`, `BTCUSD`) are refused: what their sizes count is not established.
pub struct Futures;

/// Bitget futures, the venue.
pub type BitgetFutures = Bitget<Futures>;
/// The registry names a venue's type and its value by one name, as a unit struct's.
#[allow(non_upper_case_globals)]
pub const BitgetFutures: BitgetFutures = Bitget::VENUE;

impl Futures {
    /// The margin currency of `symbol`, where its name says one this venue takes.
    fn margin(symbol: &str) -> Option<&'static str> {
        if symbol.ends_with("USDT") {
            Some("USDT")
        } else if symbol.ends_with("PERP") || symbol.ends_with("USDC") {
            Some("USDC")
        } else {
            None
        }
    }
}

impl Market for Futures {
    const FACTS: VenueFacts = market_facts("bitget_futures");

    fn inst_type(symbol: &str) -> Result<&'static str, String> {
        match Futures::margin(symbol) {
            Some("USDT") => Ok("USDT-FUTURES"),
            Some(_) => Ok("USDC-FUTURES"),
            None => Err(
                "a Bitget futures symbol is USDT-margined (BTCUSDT) or USDC-margined (a name \
                 ending in PERP or USDC); coin-margined contracts are not merged: what their \
                 sizes count is not established"
                    .to_owned(),
            ),
        }
    }

    fn quote_currency(symbol: &str, _base: &str) -> Option<Currency> {
        Currency::parse(Futures::margin(symbol)?)
    }

    fn rest_book_url(rest_base: &str, symbol: &str, limit: usize) -> String {
        let product = Futures::inst_type(symbol).unwrap_or_default().to_lowercase();
        format!(
            "{rest_base}/api/v2/mix/market/merge-depth?symbol={symbol}&productType={product}&limit={limit}"
        )
    }
}
