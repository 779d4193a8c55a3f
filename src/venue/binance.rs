//! Binance spot partial book depth: `<symbol>@depth<N>@100ms`, N ∈ {5, 10, 20}.
//!
//! Docs: <https://github.com/binance/binance-spot-api-docs/blob/master/web-socket-streams.md#partial-book-depth-streams>
//! (see also `../shared/fixtures/PROTOCOLS.md`, section 1).
//!
//! Each push is a complete top-N snapshot that replaces the previous one. On a raw stream
//! (`/ws/<stream>`) the payload arrives alone; on a combined stream
//! (`/stream?streams=a/b`) it is wrapped with the stream name, which tells which symbol it
//! is for (the payload itself names none). A real frame
//! (`fixtures/binance/partial_depth20_100ms_BTCUSDT_combined_stream.json`, shortened):
//!
//! ```text
//! {"stream":"btcusdt@depth20@100ms","data":{"lastUpdateId":11655824136,
//!  "bids":[["35496.06000000","0.29859300"],["35494.02000000","0.00056300"],…],
//!  "asks":[["35496.07000000","0.34867100"],["35496.66000000","0.26443500"],…]}}
//! ```
//!
//! Other frames on the same connection: the subscription reply `{"result":null,"id":1}`
//! (an error is `{"code":2,"msg":"…","id":1}`), and `{"e":"serverShutdown","E":ms}`
//! (combined: `{"stream":"!serverShutdown","data":{…}}`), which announces a disconnect.
//!
//! Prices and amounts are strings with 8 decimals. `lastUpdateId` becomes the book's
//! `venue_sequence`, so a reader can drop an out-of-order push.

use super::{DecodeError, Message, Seen, Venue};
use crate::book::{Side, TopBook};
use crate::walker::Walker;

pub struct Binance;

const LAST_UPDATE_ID: u32 = 0;
const BIDS: u32 = 1;
const ASKS: u32 = 2;
const EVENT: u32 = 3;
const STREAM: u32 = 4;
const DATA: u32 = 5;
const RESULT: u32 = 6;
const ERROR_CODE: u32 = 7;

/// What one object level (the envelope or the payload) contained.
#[derive(Default)]
struct Members<'a> {
    seen: Seen,
    event: &'a [u8],
    stream: &'a [u8],
}

/// Reads one member that may appear in a payload (raw, or inside a combined envelope).
fn payload_member<'a>(
    walker: &mut Walker<'a>,
    key: &'a [u8],
    depth: usize,
    out: &mut TopBook,
    members: &mut Members<'a>,
) -> Result<(), DecodeError> {
    match key {
        b"lastUpdateId" => {
            members.seen.mark(LAST_UPDATE_ID, "lastUpdateId")?;
            out.venue_sequence = walker.unsigned()?;
        }
        b"bids" => {
            members.seen.mark(BIDS, "bids")?;
            walker.levels(Side::Bid, depth, &mut out.bids)?;
        }
        b"asks" => {
            members.seen.mark(ASKS, "asks")?;
            walker.levels(Side::Ask, depth, &mut out.asks)?;
        }
        b"e" => {
            members.seen.mark(EVENT, "e")?;
            members.event = walker.string()?;
        }
        _ => walker.skip_value()?,
    }
    Ok(())
}

/// Classifies a payload once all its members are read.
fn payload_message<'a>(
    members: &Members<'a>,
    stream: &'a [u8],
) -> Result<Message<'a>, DecodeError> {
    let book_keys = [
        (LAST_UPDATE_ID, "lastUpdateId"),
        (BIDS, "bids"),
        (ASKS, "asks"),
    ];
    if book_keys.iter().any(|&(bit, _)| members.seen.has(bit)) {
        if members.seen.has(EVENT) {
            return Err(DecodeError::UnknownMessage("Binance partial depth"));
        }
        if let Some(&(_, missing)) = book_keys.iter().find(|&&(bit, _)| !members.seen.has(bit)) {
            return Err(DecodeError::MissingKey(missing));
        }
        return Ok(Message::Book { stream });
    }
    Ok(match members.event {
        b"serverShutdown" => Message::Reconnect,
        _ => Message::Ignored,
    })
}

impl Venue for Binance {
    const NAME: &'static str = "binance";

    fn decode<'a>(
        frame: &'a [u8],
        depth: usize,
        out: &mut TopBook,
    ) -> Result<Message<'a>, DecodeError> {
        let mut walker = Walker::new(frame);
        let mut top = Members::default();
        let mut inner = Members::default();
        walker.object(|walker, key| {
            match key {
                b"stream" => {
                    top.seen.mark(STREAM, "stream")?;
                    top.stream = walker.string()?;
                }
                b"data" => {
                    top.seen.mark(DATA, "data")?;
                    walker.object(|walker, key| {
                        payload_member(walker, key, depth, out, &mut inner)
                    })?;
                }
                b"result" => {
                    top.seen.mark(RESULT, "result")?;
                    if walker.peek()? == b'n' {
                        walker.null()?;
                    } else {
                        walker.skip_value()?; // LIST_SUBSCRIPTIONS answers with a list
                    }
                }
                b"code" => {
                    top.seen.mark(ERROR_CODE, "code")?;
                    walker.skip_value()?;
                }
                _ => payload_member(walker, key, depth, out, &mut top)?,
            }
            Ok(())
        })?;
        walker.finish()?;

        let envelope = top.seen.has(STREAM) || top.seen.has(DATA);
        if !envelope {
            return if top.seen.has(ERROR_CODE) {
                Ok(Message::SubscribeResult { accepted: false })
            } else if top.seen.has(RESULT) {
                Ok(Message::SubscribeResult { accepted: true })
            } else {
                payload_message(&top, b"")
            };
        }
        // A combined envelope carries the payload only under "data": book keys beside it
        // are at the wrong level.
        if [LAST_UPDATE_ID, BIDS, ASKS, EVENT, RESULT]
            .iter()
            .any(|&bit| top.seen.has(bit))
        {
            return Err(DecodeError::UnknownMessage(
                "Binance combined-stream envelope",
            ));
        }
        if !top.seen.has(STREAM) {
            return Err(DecodeError::MissingKey("stream"));
        }
        if !top.seen.has(DATA) {
            return Err(DecodeError::MissingKey("data"));
        }
        payload_message(&inner, top.stream)
    }

    fn encode_book(stream: &str, book: &TopBook, price_decimals: u32, out: &mut Vec<u8>) {
        use std::io::Write;
        write!(
            out,
            r#"{{"stream":"{stream}","data":{{"lastUpdateId":{},"bids":"#,
            book.venue_sequence
        )
        .expect("writing to a Vec cannot fail");
        super::write_levels(book.bids.as_slice(), price_decimals, "", out);
        out.extend_from_slice(br#","asks":"#);
        super::write_levels(book.asks.as_slice(), price_decimals, "", out);
        out.extend_from_slice(b"}}");
    }

    /// Partial depth comes in 5, 10 or 20 levels: the smallest that covers `depth`.
    fn stream_name(symbol: &str, depth: usize) -> String {
        let levels = [5, 10, 20]
            .into_iter()
            .find(|&levels| levels >= depth)
            .unwrap_or(20);
        format!("{}@depth{levels}@100ms", symbol.to_ascii_lowercase())
    }

    /// One `SUBSCRIBE` for all streams, answered by one `{"result":null,"id":1}`.
    fn subscribe_frames(streams: &[String]) -> (Vec<String>, usize) {
        let request = serde_json::json!({"method": "SUBSCRIBE", "params": streams, "id": 1});
        (vec![request.to_string()], 1)
    }

    fn answer_request(request: &str) -> Option<(Vec<String>, Vec<String>)> {
        let request: serde_json::Value = serde_json::from_str(request).ok()?;
        if request.get("method")? != "SUBSCRIBE" {
            return None;
        }
        let streams = request
            .get("params")?
            .as_array()?
            .iter()
            .map(|s| s.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()?;
        let reply = serde_json::json!({"result": null, "id": request.get("id")?});
        Some((streams, vec![reply.to_string()]))
    }

    fn reconnect_request() -> &'static str {
        r#"{"stream":"!serverShutdown","data":{"e":"serverShutdown","E":1770123456789}}"#
    }

    /// "The server sends a ping frame every 20 seconds" (PROTOCOLS.md, Binance keep-alive).
    fn server_ping_interval() -> Option<std::time::Duration> {
        Some(std::time::Duration::from_secs(20))
    }

    /// `<symbol>@depth<N>@100ms` carries N levels.
    fn levels_on_stream(stream: &str) -> usize {
        let after = stream.split_once("@depth").map_or("", |(_, after)| after);
        after
            .split('@')
            .next()
            .and_then(|levels| levels.parse().ok())
            .unwrap_or(20)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixed::FixedPoint;

    fn fp(text: &str) -> FixedPoint {
        text.parse().unwrap()
    }

    const RECORDED: &[u8] =
        include_bytes!("../../tests/fixtures/binance/partial_depth20_BTCUSDT_combined.json");

    #[test]
    fn decodes_the_recorded_combined_frame() {
        let mut book = TopBook::default();
        let message = Binance::decode(RECORDED, 10, &mut book).unwrap();
        assert_eq!(
            message,
            Message::Book {
                stream: b"btcusdt@depth20@100ms"
            }
        );
        assert_eq!(book.venue_sequence, 11_655_824_136);
        assert_eq!(book.bids.len(), 10);
        assert_eq!(book.asks.len(), 10);
        assert_eq!(book.bids.as_slice()[0].price, fp("35496.06"));
        assert_eq!(book.bids.as_slice()[0].amount, fp("0.298593"));
        assert_eq!(book.bids.as_slice()[9].price, fp("35487.70"));
        assert_eq!(book.asks.as_slice()[0].price, fp("35496.07"));
        assert_eq!(book.asks.as_slice()[9].price, fp("35500.15"));
        assert!(!book.is_crossed());
    }

    #[test]
    fn decodes_the_raw_payload_and_control_frames() {
        let mut book = TopBook::default();
        let raw = br#"{"lastUpdateId":160,"bids":[["0.0024","10"]],"asks":[["0.0026","100"]]}"#;
        assert_eq!(
            Binance::decode(raw, 10, &mut book),
            Ok(Message::Book { stream: b"" })
        );
        assert_eq!(book.bids.as_slice()[0].amount, fp("10"));

        let cases: &[(&[u8], Message)] = &[
            (
                br#"{"result":null,"id":1}"#,
                Message::SubscribeResult { accepted: true },
            ),
            (
                br#"{"code":2,"msg":"Invalid request","id":1}"#,
                Message::SubscribeResult { accepted: false },
            ),
            (
                br#"{"e":"serverShutdown","E":1770123456789}"#,
                Message::Reconnect,
            ),
            (
                br#"{"stream":"!serverShutdown","data":{"e":"serverShutdown","E":1770123456789}}"#,
                Message::Reconnect,
            ),
            (br#"{"e":"aggTrade","E":1,"p":"1.0"}"#, Message::Ignored),
        ];
        for &(frame, expected) in cases {
            assert_eq!(
                Binance::decode(frame, 10, &mut book),
                Ok(expected),
                "{}",
                String::from_utf8_lossy(frame)
            );
        }
    }

    #[test]
    fn encoding_reproduces_the_recorded_frame() {
        let mut book = TopBook::default();
        Binance::decode(RECORDED, crate::book::MAX_DEPTH, &mut book).unwrap();
        let mut encoded = Vec::new();
        Binance::encode_book("btcusdt@depth20@100ms", &book, 8, &mut encoded);
        assert_eq!(
            String::from_utf8(encoded).unwrap(),
            std::str::from_utf8(RECORDED).unwrap().trim_end()
        );
    }

    #[test]
    fn stream_names_pick_the_smallest_covering_depth() {
        assert_eq!(Binance::stream_name("ETHBTC", 10), "ethbtc@depth10@100ms");
        assert_eq!(Binance::stream_name("ETHBTC", 11), "ethbtc@depth20@100ms");
        assert_eq!(Binance::stream_name("ETHBTC", 50), "ethbtc@depth20@100ms");
    }

    #[test]
    fn subscription_round_trip_matches_the_documented_frames() {
        let (frames, acks) = Binance::subscribe_frames(&["ethbtc@depth10@100ms".to_owned()]);
        assert_eq!(
            frames,
            [r#"{"id":1,"method":"SUBSCRIBE","params":["ethbtc@depth10@100ms"]}"#]
        );
        assert_eq!(acks, 1);
        let (streams, replies) = Binance::answer_request(&frames[0]).unwrap();
        assert_eq!(streams, ["ethbtc@depth10@100ms"]);
        let mut book = TopBook::default();
        assert_eq!(
            Binance::decode(replies[0].as_bytes(), 10, &mut book),
            Ok(Message::SubscribeResult { accepted: true })
        );
        assert_eq!(
            Binance::decode(Binance::reconnect_request().as_bytes(), 10, &mut book),
            Ok(Message::Reconnect)
        );
    }
}
