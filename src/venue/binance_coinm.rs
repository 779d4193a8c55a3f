//! Binance coin-margined futures (`dstream`): the venue's facts. Its protocol, which it
//! shares with USDⓈ-M, is `venue/binance_futures/`.

use super::VenueFacts;
use super::binance_futures::{BinanceFutures, Market, market_facts};

/// Coin-margined futures (`BTCUSD_PERP`, dated `BTCUSD_250926`): inverse, sizes in
/// contracts of a USD value (`contractSize` in `/dapi/v1/exchangeInfo`: 100 USD for BTC,
/// 10 for most others), merged only into instruments counting notionals.
pub struct Coinm;

/// Binance COIN-M futures, the venue.
pub type BinanceCoinm = BinanceFutures<Coinm>;
/// The registry names a venue's type and its value by one name, as a unit struct's.
#[allow(non_upper_case_globals)]
pub const BinanceCoinm: BinanceCoinm = BinanceFutures::VENUE;

impl Market for Coinm {
    const FACTS: VenueFacts = market_facts(
        "binance_coinm",
        // No routing is documented for COIN-M (docs/protocols.md, Binance futures).
        "wss://dstream.binance.com/stream",
        "https://dapi.binance.com",
    );
    const DEPTH_PATH: &'static str = "/dapi/v1/depth";
    const INVERSE: bool = true;
}
