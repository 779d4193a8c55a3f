//! Hyperliquid's coin names, subscribe and unsubscribe frames, keep-alive ([`Streams`]).

use super::*;

/// The longest name accepted: the listed ones are a few characters, `dex:COIN` a dozen.
const MAX_SYMBOL_LEN: usize = 32;

/// The `l2Book` subscription of `coin`: `fast` (5 levels, about every 0.5 s) for books of
/// at most [`FAST_LEVELS`] levels, the default one (20 levels) beyond.
pub(super) fn subscription(coin: &str, depth: usize) -> serde_json::Value {
    match depth <= FAST_LEVELS {
        true => serde_json::json!({"type": "l2Book", "coin": coin, "fast": true}),
        false => serde_json::json!({"type": "l2Book", "coin": coin}),
    }
}

fn request(method: &str, coin: &str, depth: usize) -> String {
    serde_json::json!({"method": method, "subscription": subscription(coin, depth)}).to_string()
}

/// Upper-case letters and digits, at least one.
fn is_code(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|byte| byte.is_ascii_uppercase() || byte.is_ascii_digit())
}

/// A perpetual's name: a code, or `k` and a code (priced and sized per 1,000 tokens).
fn is_perp(name: &str) -> bool {
    is_code(name.strip_prefix('k').unwrap_or(name))
}

/// The part of the venue's listing that lists `symbol`: the perpetuals (`None`), a
/// builder's perpetuals (`Some(dex)`), or spot (`Some("")`).
pub(super) fn listing_of(symbol: &str) -> Option<&str> {
    if symbol.contains('/') || symbol.starts_with('@') {
        Some("")
    } else {
        symbol.split_once(':').map(|(dex, _)| dex)
    }
}

/// The request for the part of the listing `part` names (`listing_of`).
fn listing_request(part: Option<&str>) -> String {
    match part {
        None => r#"{"type":"meta"}"#.to_owned(),
        Some("") => r#"{"type":"spotMeta"}"#.to_owned(),
        Some(dex) => serde_json::json!({"type": "meta", "dex": dex}).to_string(),
    }
}

impl Streams for Hyperliquid {
    /// A spot pair by its name, `PURR/USDC`.
    fn spot_symbol(&self, base: &str, quote: &str) -> Option<String> {
        Some(format!("{base}/{quote}"))
    }

    /// A spot pair's name says its quote (`PURR/USDC`). A perpetual's (`BTC`) does not: its
    /// instrument names it (`quotes`); so does a spot pair named by index (`@107`).
    fn quote_currency(&self, symbol: &str, base: &str) -> Option<crate::units::Currency> {
        crate::venue::wire::separated_quote(symbol, '/', base).filter(|_| symbol.contains('/'))
    }

    /// Names that cannot be listed are refused here, before any subscription: the venue
    /// closes the whole connection, every other coin on it included, without a word when a
    /// subscription names a coin it does not list, and names are case-sensitive.
    fn check_symbol(&self, symbol: &str) -> Result<(), String> {
        let well_formed = symbol.len() <= MAX_SYMBOL_LEN
            && if let Some(index) = symbol.strip_prefix('@') {
                !index.is_empty() && index.bytes().all(|byte| byte.is_ascii_digit())
            } else if let Some((base, quote)) = symbol.split_once('/') {
                is_code(base) && is_code(quote)
            } else if let Some((dex, coin)) = symbol.split_once(':') {
                !dex.is_empty()
                    && dex
                        .bytes()
                        .all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit())
                    && is_perp(coin)
            } else {
                is_perp(symbol)
            };
        match well_formed {
            true => Ok(()),
            false => Err(
                "expected a perpetual by its name in upper case (BTC, kPEPE), a builder \
                 perpetual as dex:COIN (xyz:SP500), or a spot pair as BASE/QUOTE (PURR/USDC) \
                 or @<index>: the venue drops the whole connection for a name it does not \
                 list, and names are case-sensitive"
                    .to_owned(),
            ),
        }
    }

    /// The `info` endpoint: `meta` lists the perpetuals (`"dex"`: a builder's), `spotMeta`
    /// the spot pairs.
    fn listing_path(&self) -> &'static str {
        "/info"
    }

    fn listing_requests(&self, symbols: &[&str]) -> Vec<String> {
        let mut parts: Vec<Option<&str>> = symbols.iter().map(|symbol| listing_of(symbol)).collect();
        parts.sort_unstable();
        parts.dedup();
        parts.into_iter().map(listing_request).collect()
    }

    /// `{"universe":[{"name":"BTC",…},…],…}` (the docs' "Info endpoint"): each entry's
    /// `name`; a spot pair is also named by its `index` (`@107`), and a builder's
    /// perpetual by its dex (`xyz:SP500`, whether or not the answer writes the prefix).
    fn listed_names(&self, request: &str, body: &[u8]) -> Result<Vec<String>, String> {
        let request: serde_json::Value =
            serde_json::from_str(request).map_err(|error| format!("the request: {error}"))?;
        let dex = request.get("dex").and_then(serde_json::Value::as_str);
        let answer: serde_json::Value =
            serde_json::from_slice(body).map_err(|error| format!("not JSON: {error}"))?;
        let universe = answer
            .get("universe")
            .and_then(serde_json::Value::as_array)
            .ok_or("no \"universe\" list")?;
        let mut names = Vec::with_capacity(universe.len());
        for entry in universe {
            let name = entry
                .get("name")
                .and_then(serde_json::Value::as_str)
                .ok_or("an entry of the universe without a \"name\"")?;
            names.push(match dex {
                Some(dex) if !name.contains(':') => format!("{dex}:{name}"),
                _ => name.to_owned(),
            });
            if let Some(index) = entry.get("index").and_then(serde_json::Value::as_u64) {
                names.push(format!("@{index}"));
            }
        }
        Ok(names)
    }

    /// The coin's name, as its book frames name it. Both cadences are the same stream:
    /// which one a connection subscribes follows from the depth.
    fn stream_name(&self, symbol: &str, _depth: usize) -> String {
        symbol.to_owned()
    }

    /// The venue has no diff stream: its one stream, never subscribed as one.
    fn diff_stream_name(&self, symbol: &str) -> String {
        symbol.to_owned()
    }

    fn diff_stream_symbol(&self, _stream: &str) -> Option<String> {
        None
    }

    /// One request a coin, acknowledged by a `subscriptionResponse` naming it.
    fn subscribe_frames(
        &self,
        streams: &[String],
        _kind: StreamKind,
        depth: usize,
        _first_id: u64,
    ) -> Vec<SubscribeRequest> {
        streams
            .iter()
            .enumerate()
            .map(|(index, coin)| SubscribeRequest {
                frame: request("subscribe", coin, depth),
                id: None,
                streams: index..index + 1,
            })
            .collect()
    }

    /// The subscription as it was made: the venue unsubscribes only what matches.
    fn unsubscribe_frames(&self, streams: &[String], _kind: StreamKind, depth: usize) -> Vec<String> {
        streams
            .iter()
            .map(|coin| request("unsubscribe", coin, depth))
            .collect()
    }

    /// The venue closes a connection it has sent nothing on for 60 s; a coin's book may
    /// come only every few seconds, and a quiet connection carries nothing else.
    fn client_ping(&self) -> Option<(std::time::Duration, &'static str)> {
        Some((std::time::Duration::from_secs(30), r#"{"method":"ping"}"#))
    }
}
