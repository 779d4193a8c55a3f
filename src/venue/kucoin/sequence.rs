//! KuCoin's diff books: snapshots and checksum ([`Snapshots`], [`Checksum`]); the sequencing
//! is Binance spot's ([`UpdateIdRanges`]), each message's changes numbered
//! (`BookUpdate::change_ids`).

use super::*;

/// KuCoin has no checksum.
impl Checksum for Kucoin {}

impl Snapshots for Kucoin {
    /// `{"type":"message","generated":true,"topic":"/market/level2Snapshot:BTC-USDT",
    /// "subject":"trade.l2Snapshot","code":"200000","data":{…}}`: the REST answer's members
    /// beside the message's (what `decode_snapshot` reads, it skipping the others).
    fn archived_snapshot(&self, message: &str) -> Option<(String, String)> {
        let members = crate::venue::wire::archived_members(message)?;
        let topic = crate::venue::wire::archived_string(&members, "topic")?;
        let symbol = topic.strip_prefix("/market/level2Snapshot:")?;
        Some((symbol.to_owned(), message.to_owned()))
    }

    /// The public top 100, whatever is asked: the whole book needs an API key.
    fn snapshot_url(&self, rest_base: &str, symbol: &str, _limit: usize) -> String {
        format!("{rest_base}/api/v1/market/orderbook/level2_{SNAPSHOT_LEVELS}?symbol={symbol}")
    }

    fn snapshot_symbol(&self, url: &str) -> Option<String> {
        let (path, query) = url.split_once('?')?;
        if !path.contains("/market/orderbook/level2") {
            return None;
        }
        let symbol = query.split('&').find_map(|pair| pair.strip_prefix("symbol="))?;
        Some(symbol.to_owned())
    }

    /// `GET /api/v3/market/orderbook/level2`: the whole book, for a signed request.
    fn whole_book_url(&self, rest_base: &str, symbol: &str) -> Option<String> {
        Some(format!("{rest_base}/api/v3/market/orderbook/level2?symbol={symbol}"))
    }

    /// KuCoin's signature (its API keys of version 2): `KC-API-SIGN`, the HMAC-SHA256 of
    /// the time (ms), the method and the URL's path and query, with the secret, in base64;
    /// `KC-API-PASSPHRASE`, the passphrase's HMAC with the secret, in base64.
    fn signed_headers(&self, key: &ApiKey, url: &str, unix_ms: u64) -> Vec<(&'static str, String)> {
        use base64::Engine;
        let Some((key, secret, passphrase)) = key.signing_parts() else {
            return Vec::new();
        };
        let secret = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
        let signed = |text: &str| {
            let tag = ring::hmac::sign(&secret, text.as_bytes());
            base64::engine::general_purpose::STANDARD.encode(tag.as_ref())
        };
        // The path and query: what follows the scheme and host.
        let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
        let endpoint = after_scheme.find('/').map_or("/", |at| &after_scheme[at..]);
        vec![
            ("KC-API-KEY", key.to_owned()),
            ("KC-API-SIGN", signed(&format!("{unix_ms}GET{endpoint}"))),
            ("KC-API-TIMESTAMP", unix_ms.to_string()),
            ("KC-API-PASSPHRASE", signed(passphrase)),
            ("KC-API-KEY-VERSION", "2".to_owned()),
        ]
    }

    /// `level2_20` and `level2_100` say their depth; the whole book none.
    fn asked_levels(&self, url: &str) -> Option<usize> {
        let path = url.split_once('?').map_or(url, |(path, _)| path);
        path.rsplit_once("/level2_")?.1.parse().ok()
    }

    /// A top-100 book weighs 4 in the public pool.
    fn snapshot_weight(&self, _limit: usize) -> u32 {
        4
    }

    /// The public book is the top 100 of a book that may be deeper.
    fn partial_snapshot_levels(&self, _limit: usize) -> Option<usize> {
        Some(SNAPSHOT_LEVELS)
    }
}
