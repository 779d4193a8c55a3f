//! Gate spot (`api.gateio.ws`): the venue's facts. Its protocol, which it shares with
//! Gate's futures, is `venue/gate/`.

use super::gate::{Gate, Market, market_facts};
use super::{LevelShape, VenueFacts};

/// Spot pairs (`BTC_USDT`): sizes in the base coin.
pub struct Spot;

/// Gate spot, the venue.
pub type GateSpot = Gate<Spot>;
/// The registry names a venue's type and its value by one name, as a unit struct's.
#[allow(non_upper_case_globals)]
pub const GateSpot: GateSpot = Gate::VENUE;

impl Market for Spot {
    const FACTS: VenueFacts = market_facts("gate", "wss://api.gateio.ws/ws/v4/");
    const CHANNEL: &'static str = "spot";
    const SIZED_IN_CONTRACTS: bool = false;
    const PING: &'static str = r#"{"time":{time},"channel":"spot.ping"}"#;
    // A spot equivalent of futures' upgrade notice is not known (docs/protocols.md, Gate).
    const RECONNECT: Option<&'static str> = None;
    const LEVEL: LevelShape = LevelShape::Pair;

    fn book_path(_symbol: &str) -> (String, &'static str) {
        ("/api/v4/spot/order_book".to_owned(), "currency_pair")
    }

    fn inverse(_symbol: &str) -> bool {
        false
    }
}
