//! Binance USDⓈ-margined futures (`fstream`): the venue's facts. Its protocol, which it
//! shares with COIN-M, is `venue/binance_futures/`.

use super::binance_futures::{CONNECT_BUDGET, MAX_STREAMS_PER_CONNECTION, Market, PreviousIdChain, REST_BUDGET};
use super::{SnapshotSource, VenueFacts};

/// USDⓈ-margined futures (`BTCUSDT`, dated `BTCUSDT_250926`): sizes in the base coin.
pub struct BinanceUsdm;

impl Market for BinanceUsdm {
    const FACTS: VenueFacts = VenueFacts {
        name: "binance_usdm",
        exchange: "binance_usdm",
        // Book streams are routed under `/public` since the unrouted layout was retired
        // (docs/protocols.md, Binance futures, Endpoints).
        default_url: "wss://fstream.binance.com/public/stream",
        default_rest_url: "https://fapi.binance.com",
        connect_budget: CONNECT_BUDGET,
        max_connection_age: Some(super::binance::CONNECTION_LIFETIME),
        max_streams_per_connection: MAX_STREAMS_PER_CONNECTION,
        max_subscriptions: None,
        snapshot_streams: true,
        diff_streams: true,
        binary_books: false,
        api_key_header: None,
        snapshots: SnapshotSource::Rest,
        rest_budget: Some(REST_BUDGET),
        sequencing: &PreviousIdChain,
    };
    const DEPTH_PATH: &'static str = "/fapi/v1/depth";
    const INVERSE: bool = false;
}
