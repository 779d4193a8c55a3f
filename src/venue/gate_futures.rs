//! Gate futures (`fx-ws.gateio.ws`): the venue's facts. Its protocol, which it shares with
//! Gate spot, is `venue/gate/`.

use super::gate::{Gate, Market, market_facts};
use super::{LevelShape, VenueFacts};

/// Perpetual contracts, each settle currency on its own endpoint (`<url>/usdt`,
/// `<url>/btc`): `BTC_USDT` is USDT-settled, sized in contracts of `quanto_multiplier`
/// coins (`contract_sizes`: 0.0001 BTC for `BTC_USDT`); `BTC_USD` is BTC-settled, inverse,
/// contracts of a USD value, merged only into instruments counting notionals.
pub struct Futures;

/// Gate futures, the venue.
pub type GateFutures = Gate<Futures>;
/// The registry names a venue's type and its value by one name, as a unit struct's.
#[allow(non_upper_case_globals)]
pub const GateFutures: GateFutures = Gate::VENUE;

impl Futures {
    /// The settle currency's path of `contract`: `usdt` for `…_USDT`, `btc` for `…_USD`.
    pub(super) fn settle(contract: &str) -> &'static str {
        match contract.ends_with("_USD") {
            true => "btc",
            false => "usdt",
        }
    }
}

impl Market for Futures {
    const FACTS: VenueFacts = market_facts(
        "gate_futures",
        // The settle currencies' endpoints are under it (`Streams::endpoint`).
        "wss://fx-ws.gateio.ws/v4/ws",
    );
    const CHANNEL: &'static str = "futures";
    const SIZED_IN_CONTRACTS: bool = true;
    const PING: &'static str = r#"{"time":{time},"channel":"futures.ping"}"#;
    /// "Futures announce restarts with a `futures.system` push whose `result.type` is
    /// `upgrade`" (docs/protocols.md, Gate, Keep-alive).
    const RECONNECT: Option<&'static str> = Some(
        r#"{"time":1770123456,"time_ms":1770123456789,"channel":"futures.system","event":"update","result":{"type":"upgrade"}}"#,
    );
    const LEVEL: LevelShape = LevelShape::Object {
        price: "p",
        amount: "s",
    };

    fn book_path(contract: &str) -> (String, &'static str) {
        let settle = Futures::settle(contract);
        (format!("/api/v4/futures/{settle}/order_book"), "contract")
    }

    fn inverse(contract: &str) -> bool {
        Futures::settle(contract) == "btc"
    }

    /// `<url>/usdt` or `<url>/btc`, by the contract's settle currency.
    fn endpoint(url: &str, contract: &str) -> String {
        let settle = Futures::settle(contract);
        format!("{}/{settle}", url.trim_end_matches('/'))
    }
}
