//! Deribit's channel and instrument names, subscribe and unsubscribe requests, the frames
//! a connection opens with ([`Streams`]).

use super::decode::PLATFORM_STATE;
use super::*;

/// The ids of the requests a connection opens with and of its answers to heartbeats:
/// apart from its subscriptions', which the core numbers from 1.
pub(super) const HEARTBEAT_REQUEST_ID: u64 = 4_000_000_001;
pub(super) const PLATFORM_STATE_REQUEST_ID: u64 = 4_000_000_002;
pub(super) const TEST_REQUEST_ID: u64 = 4_000_000_003;
pub(super) const AUTH_REQUEST_ID: u64 = 4_000_000_004;

/// Seconds between the venue's heartbeats (`public/set_heartbeat`'s least).
const HEARTBEAT_SECONDS: u64 = 10;

/// The depths the grouped windows take.
pub(super) const WINDOW_DEPTHS: [usize; 3] = [1, 10, 20];

/// The interval of the public books.
const INTERVAL: &str = "100ms";

/// The interval of the books of authorised connections: every change, unthrottled.
const AUTHORISED_INTERVAL: &str = "raw";

/// What a recording keeps in place of a secret or a token.
const NOT_RECORDED: &str = "(not recorded)";

/// The grouped window of a connection of `depth` levels: the smallest covering it, else
/// the deepest.
pub(super) fn window_depth(depth: usize) -> usize {
    WINDOW_DEPTHS
        .into_iter()
        .find(|&levels| levels >= depth)
        .unwrap_or(WINDOW_DEPTHS[WINDOW_DEPTHS.len() - 1])
}

/// One request for `channels`, with `id`.
fn request(method: &str, channels: &[String], id: u64) -> String {
    serde_json::json!({
        "jsonrpc": "2.0", "id": id, "method": method, "params": {"channels": channels},
    })
    .to_string()
}

/// Why `symbol` is not an instrument mergebook merges, if it is not: a perpetual or a
/// future (`BTC-PERPETUAL`, `BTC-27DEC24`, `BTC_USDC-PERPETUAL`) or a spot pair
/// (`BTC_USDC`). Options (`BTC-24SEP21-8000-P`) are refused.
fn symbol_error(symbol: &str) -> Option<String> {
    let code = |part: &str| {
        !part.is_empty() && part.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit())
    };
    let pair = |part: &str| match part.split_once('_') {
        Some((base, quote)) => code(base) && code(quote),
        None => code(part),
    };
    let parts: Vec<&str> = symbol.split('-').collect();
    let valid = symbol.len() <= 40
        && match parts[..] {
            [spot] => spot.contains('_') && pair(spot),
            [currency, expiry] => pair(currency) && code(expiry),
            _ => false,
        };
    (!valid).then(|| {
        "a Deribit instrument is a perpetual or a future (BTC-PERPETUAL, BTC-27DEC24, \
         BTC_USDC-PERPETUAL) or a spot pair (BTC_USDC), upper-case; options are not merged"
            .to_owned()
    })
}

impl Streams for Deribit {
    /// The pair's linear perpetual, sized in the base coin (`BTC_USDC-PERPETUAL`).
    fn spot_symbol(&self, base: &str, quote: &str) -> Option<String> {
        Some(format!("{base}_{quote}-PERPETUAL"))
    }

    fn check_symbol(&self, symbol: &str) -> Result<(), String> {
        symbol_error(symbol).map_or(Ok(()), Err)
    }

    /// `BTC_USDC-PERPETUAL`: USDC; `BTC-PERPETUAL`: USD.
    fn quote_currency(&self, symbol: &str, base: &str) -> Option<crate::units::Currency> {
        let currency = symbol.split('-').next()?;
        match currency.split_once('_') {
            Some((of, quote)) => of.eq_ignore_ascii_case(base).then(|| crate::units::Currency::parse(quote))?,
            None => currency.eq_ignore_ascii_case(base).then(|| crate::units::Currency::parse("USD"))?,
        }
    }

    /// An inverse instrument counts USD: contracts of 1 USD.
    fn sized_in_contracts(&self, symbol: &str) -> bool {
        self.inverse(symbol)
    }

    /// Margined in the coin: no `_` in its currency (`BTC-PERPETUAL`).
    fn inverse(&self, symbol: &str) -> bool {
        symbol.contains('-') && !symbol.split('-').next().unwrap_or_default().contains('_')
    }

    /// The grouped window: `book.BTC-PERPETUAL.none.10.100ms`.
    fn stream_name(&self, symbol: &str, depth: usize) -> String {
        format!("book.{symbol}.none.{}.{INTERVAL}", window_depth(depth))
    }

    fn diff_stream_name(&self, symbol: &str) -> String {
        format!("book.{symbol}.{INTERVAL}")
    }

    /// `book.<instrument>.raw`: every change, for authorised connections only (public
    /// ones get error 13778).
    fn authorised_diff_stream_name(&self, symbol: &str) -> Option<String> {
        Some(format!("book.{symbol}.{AUTHORISED_INTERVAL}"))
    }

    /// `public/auth` with the API key's client id and secret (`client_credentials`): the
    /// connection is then authorised, its tokens unused (books need no private call).
    fn auth_request(&self, credentials: &crate::config::ApiKey) -> Option<AuthRequest> {
        let (client_id, client_secret) = credentials.client_credentials()?;
        let request = |secret: &str| {
            serde_json::json!({
                "jsonrpc": "2.0", "id": AUTH_REQUEST_ID, "method": "public/auth",
                "params": {
                    "grant_type": "client_credentials", "client_id": client_id,
                    "client_secret": secret,
                },
            })
            .to_string()
        };
        Some(AuthRequest {
            frame: request(client_secret),
            recorded: request(NOT_RECORDED),
        })
    }

    /// `{"id":…,"result":{"access_token":…,"expires_in":…,"refresh_token":…,…}}`, its
    /// tokens left out of the recording; or `{"id":…,"error":{"code":13004,"message":
    /// "invalid_credentials"}}`.
    fn auth_answer(&self, frame: &[u8]) -> Option<AuthAnswer> {
        let mut answer: serde_json::Value = serde_json::from_slice(frame).ok()?;
        if answer.get("id")?.as_u64()? != AUTH_REQUEST_ID {
            return None;
        }
        if let Some(error) = answer.get("error") {
            return Some(AuthAnswer::Refused(error.to_string()));
        }
        let result = answer.get_mut("result")?.as_object_mut()?;
        let lifetime = result
            .get("expires_in")
            .and_then(serde_json::Value::as_u64)
            .map(std::time::Duration::from_secs);
        for token in ["access_token", "refresh_token"] {
            if let Some(value) = result.get_mut(token) {
                *value = NOT_RECORDED.into();
            }
        }
        Some(AuthAnswer::Authorised {
            recorded: answer.to_string(),
            lifetime,
        })
    }

    /// `book.<instrument>.100ms`, and the `raw` books of the recordings, which read alike.
    fn diff_stream_symbol(&self, stream: &str) -> Option<String> {
        let rest = stream.strip_prefix("book.")?;
        let symbol = rest.strip_suffix(".100ms").or_else(|| rest.strip_suffix(".raw"))?;
        (!symbol.is_empty() && !symbol.contains('.')).then(|| symbol.to_owned())
    }

    /// One request for a connection's streams, acknowledged with those it subscribed.
    fn subscribe_frames(
        &self,
        streams: &[String],
        _kind: StreamKind,
        _depth: usize,
        first_id: u64,
    ) -> Vec<SubscribeRequest> {
        let mut id = first_id.max(1);
        super::super::wire::chunked_requests(streams, STREAMS_PER_CONNECTION, Some(id), |chunk| {
            let frame = request("public/subscribe", chunk, id);
            id += 1;
            frame
        })
    }

    fn unsubscribe_frames(&self, streams: &[String], _kind: StreamKind, _depth: usize) -> Vec<String> {
        streams
            .chunks(STREAMS_PER_CONNECTION)
            .map(|chunk| request("public/unsubscribe", chunk, UNSUBSCRIBE_REQUEST_ID))
            .collect()
    }

    /// `public/set_heartbeat` (the venue's `test_request`s then come, each answered, or it
    /// closes the connection), and the maintenance notices of `platform_state`.
    fn opening_frames(&self) -> Vec<String> {
        let heartbeat = serde_json::json!({
            "jsonrpc": "2.0", "id": HEARTBEAT_REQUEST_ID, "method": "public/set_heartbeat",
            "params": {"interval": HEARTBEAT_SECONDS},
        });
        let notices = request("public/subscribe", &[PLATFORM_STATE.to_owned()], PLATFORM_STATE_REQUEST_ID);
        vec![heartbeat.to_string(), notices]
    }
}
