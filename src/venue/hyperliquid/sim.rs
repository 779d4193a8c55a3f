//! Hyperliquid as the simulator serves it ([`Simulated`]): its frames and answers, in its
//! wire format of 2026.

use super::*;

/// Appends a side as `[{"px":"…","sz":"…","n":1},…]`.
fn write_side(levels: &[crate::book::Level], price_decimals: u32, out: &mut Vec<u8>) {
    out.push(b'[');
    for (index, level) in levels.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.extend_from_slice(br#"{"px":""#);
        level.price.append_decimal(price_decimals, out);
        out.extend_from_slice(br#"","sz":""#);
        level.amount.append_decimal(crate::fixed::DECIMALS, out);
        out.extend_from_slice(br#"","n":1}"#);
    }
    out.push(b']');
}

impl Simulated for Hyperliquid {
    fn sequence_per_second(&self) -> Option<u64> {
        Some(1_000)
    }

    /// As the frames of 2026: `time` before `levels`, `n` last. The book's
    /// `venue_sequence` is its `time`.
    fn encode_book(&self, stream: &str, book: &TopBook, price_decimals: u32, out: &mut Vec<u8>) {
        use std::io::Write;
        write!(
            out,
            r#"{{"channel":"l2Book","data":{{"coin":"{stream}","time":{},"levels":["#,
            book.venue_sequence
        )
        .expect("writing to a Vec cannot fail");
        write_side(book.bids.as_slice(), price_decimals, out);
        out.push(b',');
        write_side(book.asks.as_slice(), price_decimals, out);
        out.extend_from_slice(b"]}}");
    }

    /// Subscriptions (echoed with their defaults, as the venue acknowledges them) and the
    /// application ping.
    fn answer_request(&self, request: &str) -> Option<Answer> {
        let request: serde_json::Value = serde_json::from_str(request).ok()?;
        let method = request.get("method")?.as_str()?;
        if method == "ping" {
            return Some(Answer {
                replies: vec![r#"{"channel":"pong"}"#.to_owned()],
                ping: true,
                ..Answer::default()
            });
        }
        let subscription = request.get("subscription")?;
        if subscription.get("type")?.as_str()? != "l2Book" {
            return None;
        }
        let coin = subscription.get("coin")?.as_str()?.to_owned();
        let fast = subscription.get("fast").and_then(|fast| fast.as_bool()) == Some(true);
        let echo = serde_json::json!({"type": "l2Book", "coin": coin, "nSigFigs": null,
            "mantissa": null, "fast": fast});
        let reply = serde_json::json!({"channel": "subscriptionResponse",
            "data": {"method": method, "subscription": echo}});
        let depth = Some(if fast { FAST_LEVELS } else { DEFAULT_LEVELS });
        let answer = match method {
            "subscribe" => Answer {
                subscribe: vec![coin],
                depth,
                ..Answer::default()
            },
            "unsubscribe" => Answer {
                unsubscribe: vec![coin],
                ..Answer::default()
            },
            _ => return None,
        };
        Some(Answer {
            replies: vec![reply.to_string()],
            ..answer
        })
    }

    /// The part of the listing asked for, of `names`: perpetuals with a size precision
    /// and leverage, spot pairs with their index (an `@<index>` name is its own pair).
    fn listing_answer(&self, request: &str, names: &[String]) -> Option<String> {
        let request: serde_json::Value = serde_json::from_str(request).ok()?;
        let part = match (request.get("type")?.as_str()?, request.get("dex")) {
            ("meta", None) => None,
            ("meta", Some(dex)) => Some(dex.as_str()?),
            ("spotMeta", None) => Some(""),
            _ => return None,
        };
        let listed = names
            .iter()
            .filter(|name| subscribe::listing_of(name) == part);
        let universe: Vec<serde_json::Value> = match part {
            Some("") => listed
                .enumerate()
                .map(|(at, name)| {
                    let index = name
                        .strip_prefix('@')
                        .and_then(|index| index.parse().ok())
                        .unwrap_or(10_000 + at as u64);
                    serde_json::json!({"name": name, "tokens": [index, 0], "index": index,
                        "isCanonical": !name.starts_with('@')})
                })
                .collect(),
            _ => listed
                .map(|name| serde_json::json!({"name": name, "szDecimals": 5, "maxLeverage": 40}))
                .collect(),
        };
        let answer = match part {
            Some("") => serde_json::json!({"universe": universe, "tokens": []}),
            _ => serde_json::json!({"universe": universe, "marginTables": []}),
        };
        Some(answer.to_string())
    }

    /// The default subscription's 20; a `fast` one's 5 (`Answer::depth`).
    fn levels_on_stream(&self, _stream: &str) -> usize {
        DEFAULT_LEVELS
    }
}
