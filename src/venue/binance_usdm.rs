//! Binance USDⓈ-margined futures (`fstream`): the venue's facts. Its protocol, which it
//! shares with COIN-M, is `venue/binance_futures/`.

use super::VenueFacts;
use super::binance_futures::{Market, market_facts};

/// USDⓈ-margined futures (`BTCUSDT`, dated `BTCUSDT_250926`): sizes in the base coin.
pub struct BinanceUsdm;

impl Market for BinanceUsdm {
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
