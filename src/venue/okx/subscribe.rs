//! OKX's stream and symbol names, subscribe and unsubscribe frames, keep-alive ([`Streams`]).

use super::*;
use super::sim::{DIFF_CHANNEL, TOP_CHANNEL};

pub(super) const MAX_INST_ID_LEN: usize = 32;

pub(super) fn channel_of(kind: StreamKind) -> &'static str {
    match kind {
        StreamKind::Snapshots => TOP_CHANNEL,
        StreamKind::Diff => DIFF_CHANNEL,
    }
}

impl Streams for Okx {
    fn spot_symbol(&self, base: &str, quote: &str) -> Option<String> {
        Some(format!("{base}-{quote}"))
    }

    /// `BTC-USDT`, `BTC-USDT-SWAP`: the second part.
    fn quote_currency(&self, symbol: &str, base: &str) -> Option<crate::units::Currency> {
        crate::venue::wire::separated_quote(symbol, '-', base)
    }

    /// A book is known by its instrument id, on either channel.
    fn stream_name(&self, symbol: &str, _depth: usize) -> String {
        symbol.to_owned()
    }

    /// Acknowledged once per instrument, naming it.
    fn subscribe_frames(
        &self,
        streams: &[String],
        kind: StreamKind,
        _depth: usize,
        first_id: u64,
    ) -> Vec<SubscribeRequest> {
        requests("subscribe", channel_of(kind), streams, first_id.max(1))
    }

    fn unsubscribe_frames(&self, streams: &[String], kind: StreamKind, _depth: usize) -> Vec<String> {
        let requests = requests("unsubscribe", channel_of(kind), streams, UNSUBSCRIBE_REQUEST_ID);
        requests.into_iter().map(|request| request.frame).collect()
    }

    /// "If no message arrives within N < 30 s, send the text frame `ping`" (docs/protocols.md,
    /// OKX, Keep-alive).
    fn client_ping(&self) -> Option<(std::time::Duration, &'static str)> {
        Some((std::time::Duration::from_secs(20), "ping"))
    }

    fn check_symbol(&self, symbol: &str) -> Result<(), String> {
        let parts = crate::venue::wire::dashed_codes(symbol, MAX_INST_ID_LEN).unwrap_or_default();
        if !(2..=3).contains(&parts.len()) {
            return Err(format!(
                "an OKX instrument id is BASE-QUOTE (spot), BASE-QUOTE-SWAP or \
                 BASE-QUOTE-YYMMDD (futures), upper-case, at most {MAX_INST_ID_LEN} characters; \
                 options are not merged"
            ));
        }
        if let [_, _, expiry] = parts[..] {
            let futures = expiry.len() == 6 && expiry.bytes().all(|b| b.is_ascii_digit());
            if expiry != "SWAP" && !futures {
                return Err("an OKX derivative is BASE-QUOTE-SWAP or BASE-QUOTE-YYMMDD".into());
            }
        }
        Ok(())
    }

    /// SWAP and FUTURES (a third part in the id) are sized in contracts.
    fn sized_in_contracts(&self, symbol: &str) -> bool {
        symbol.split('-').count() == 3
    }

    /// A contract margined in the coin is quoted in USD (`BTC-USD-SWAP`).
    fn inverse(&self, symbol: &str) -> bool {
        self.sized_in_contracts(symbol) && symbol.split('-').nth(1) == Some("USD")
    }

    fn diff_stream_name(&self, symbol: &str) -> String {
        symbol.to_owned()
    }

    fn diff_stream_symbol(&self, stream: &str) -> Option<String> {
        (!stream.is_empty() && !stream.contains(':')).then(|| stream.to_owned())
    }
}
