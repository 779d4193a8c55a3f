//! Binance coin-margined futures (`dstream`): the venue's facts. Its protocol, which it
//! shares with USDⓈ-M, is `venue/binance_futures/`.

use super::binance_futures::{CONNECT_BUDGET, MAX_STREAMS_PER_CONNECTION, Market, PreviousIdChain, REST_BUDGET};
use super::{SnapshotSource, VenueFacts};

/// Coin-margined futures (`BTCUSD_PERP`, dated `BTCUSD_250926`): inverse, sizes in
/// contracts of a USD value (`contractSize` in `/dapi/v1/exchangeInfo`: 100 USD for BTC,
/// 10 for most others), merged only into instruments counting notionals.
pub struct BinanceCoinm;

impl Market for BinanceCoinm {
    const FACTS: VenueFacts = VenueFacts {
        name: "binance_coinm",
        exchange: "binance_coinm",
        // No routing is documented for COIN-M (docs/protocols.md, Binance futures).
        default_url: "wss://dstream.binance.com/stream",
        default_rest_url: "https://dapi.binance.com",
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
    const DEPTH_PATH: &'static str = "/dapi/v1/depth";
    const INVERSE: bool = true;
}
