//! Gate's stream and symbol names, subscribe and unsubscribe frames, keep-alive
//! ([`Streams`]).

use super::*;

/// The depths `<market>.order_book` takes, the smallest covering the service's first.
const TOP_LEVELS: [usize; 5] = [5, 10, 20, 50, 100];

/// The top-N depth a connection of `depth` levels subscribes to.
pub(super) fn subscribed_top_levels(depth: usize) -> usize {
    TOP_LEVELS
        .into_iter()
        .find(|&levels| levels >= depth)
        .unwrap_or(DIFF_LEVELS)
}

/// The channel of `kind`'s streams on market `M`.
pub(super) fn channel<M: Market>(kind: StreamKind) -> String {
    match kind {
        StreamKind::Snapshots => format!("{}.order_book", M::CHANNEL),
        StreamKind::Diff => format!("{}.order_book_update", M::CHANNEL),
    }
}

/// A subscription's `payload`: the symbol and the stream's depth and interval, as each
/// market's channel takes them.
fn payload<M: Market>(symbol: &str, kind: StreamKind, depth: usize) -> serde_json::Value {
    let levels = subscribed_top_levels(depth).to_string();
    let diff_levels = DIFF_LEVELS.to_string();
    match (kind, M::SIZED_IN_CONTRACTS) {
        (StreamKind::Snapshots, false) => serde_json::json!([symbol, levels, "100ms"]),
        (StreamKind::Snapshots, true) => serde_json::json!([symbol, levels, "0"]),
        (StreamKind::Diff, false) => serde_json::json!([symbol, "100ms"]),
        (StreamKind::Diff, true) => serde_json::json!([symbol, "100ms", diff_levels]),
    }
}

/// One request a stream, `event` (`subscribe` or `unsubscribe`), numbered from `first_id`.
fn requests<M: Market>(
    event: &str,
    streams: &[String],
    kind: StreamKind,
    depth: usize,
    first_id: u64,
) -> Vec<SubscribeRequest> {
    let unix_seconds = crate::clock::unix_ns() / 1_000_000_000;
    let channel = channel::<M>(kind);
    streams
        .iter()
        .enumerate()
        .map(|(index, symbol)| {
            let id = match first_id {
                super::super::UNSUBSCRIBE_REQUEST_ID => first_id,
                first => first + index as u64,
            };
            let frame = serde_json::json!({
                "time": unix_seconds, "id": id, "channel": channel, "event": event,
                "payload": payload::<M>(symbol, kind, depth),
            });
            SubscribeRequest {
                frame: frame.to_string(),
                id: Some(id),
                streams: index..index + 1,
            }
        })
        .collect()
}

/// Why `symbol` is not a Gate name (`BTC_USDT`: upper-case codes joined by `_`), if it is
/// not.
fn symbol_error(symbol: &str) -> Option<String> {
    let code = |code: &str| {
        !code.is_empty()
            && code
                .bytes()
                .all(|byte| byte.is_ascii_uppercase() || byte.is_ascii_digit())
    };
    let well_formed = symbol
        .split_once('_')
        .is_some_and(|(base, quote)| code(base) && code(quote));
    (!well_formed).then(|| "a Gate symbol is two upper-case codes joined by _: BTC_USDT".to_owned())
}

impl<M: Market> Streams for Gate<M> {
    /// A spot pair (`ETH_BTC`); the futures have none sized in the base coin.
    fn spot_symbol(&self, base: &str, quote: &str) -> Option<String> {
        (!M::SIZED_IN_CONTRACTS).then(|| format!("{base}_{quote}"))
    }

    fn check_symbol(&self, symbol: &str) -> Result<(), String> {
        symbol_error(symbol).map_or(Ok(()), Err)
    }

    /// `BTC_USDT`: the second code.
    fn quote_currency(&self, symbol: &str, base: &str) -> Option<crate::units::Currency> {
        crate::venue::wire::separated_quote(symbol, '_', base)
    }

    fn sized_in_contracts(&self, _symbol: &str) -> bool {
        M::SIZED_IN_CONTRACTS
    }

    fn inverse(&self, symbol: &str) -> bool {
        M::inverse(symbol)
    }

    fn endpoint(&self, url: &str, symbol: &str) -> String {
        M::endpoint(url, symbol)
    }

    /// A book is known by its symbol, on either channel.
    fn stream_name(&self, symbol: &str, _depth: usize) -> String {
        symbol.to_owned()
    }

    fn diff_stream_name(&self, symbol: &str) -> String {
        symbol.to_owned()
    }

    /// Any symbol; the simulator's snapshot streams (`order_book:<symbol>`) are not.
    fn diff_stream_symbol(&self, stream: &str) -> Option<String> {
        (!stream.is_empty() && !stream.contains(':')).then(|| stream.to_owned())
    }

    /// One request a stream, each acknowledged once (naming its `id` since 2025).
    fn subscribe_frames(
        &self,
        streams: &[String],
        kind: StreamKind,
        depth: usize,
        first_id: u64,
    ) -> Vec<SubscribeRequest> {
        requests::<M>("subscribe", streams, kind, depth, first_id.max(1))
    }

    fn unsubscribe_frames(
        &self,
        streams: &[String],
        kind: StreamKind,
        depth: usize,
    ) -> Vec<String> {
        let requests = requests::<M>(
            "unsubscribe",
            streams,
            kind,
            depth,
            super::super::UNSUBSCRIBE_REQUEST_ID,
        );
        requests.into_iter().map(|request| request.frame).collect()
    }

    /// `{"time":…,"channel":"spot.ping"}` (`futures.ping`), which also resets the venue's
    /// idle timer (docs/protocols.md, Gate, Keep-alive); `{time}` is stamped when sent.
    fn client_ping(&self) -> Option<(std::time::Duration, &'static str)> {
        Some((std::time::Duration::from_secs(15), M::PING))
    }
}
