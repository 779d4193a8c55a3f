//! Binance USDⓈ-margined futures (`fstream`): the venue's facts. Its protocol, which it
//! shares with COIN-M, is `venue/binance_futures/`.

use super::VenueFacts;
use super::binance_futures::{BinanceFutures, Market, market_facts};

/// USDⓈ-margined futures (`BTCUSDT`, dated `BTCUSDT_250926`): sizes in the base coin.
pub struct Usdm;

/// Binance USDⓈ-M futures, the venue.
pub type BinanceUsdm = BinanceFutures<Usdm>;
/// The registry names a venue's type and its value by one name, as a unit struct's.
#[allow(non_upper_case_globals)]
pub const BinanceUsdm: BinanceUsdm = BinanceFutures::VENUE;

impl Market for Usdm {
    const FACTS: VenueFacts = market_facts(
        "binance_usdm",
        // Book streams are routed under `/public` since the unrouted layout was retired
        // (docs/protocols.md, Binance futures, Endpoints).
        "wss://fstream.binance.com/public/stream",
        "https://fapi.binance.com",
    );
    const DEPTH_PATH: &'static str = "/fapi/v1/depth";
    const INVERSE: bool = false;
}
