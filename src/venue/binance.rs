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
//! Pushes in the recorded layout (above, or its `data` alone) are read by a fast path that
//! compares the bytes around the values with the layout's; any other frame by the general
//! object walk, which gives the same answer.
//!
//! Prices and amounts are strings with 8 decimals. `lastUpdateId` becomes the book's
//! `venue_sequence`, so a reader can drop an out-of-order push.

use super::{Acked, Answer, Checksum, ConnectBudget, Decode, DecodeError, Message, Simulated, SnapshotSource, Snapshots, StreamKind, Streams, SubscribeRequest, UNSUBSCRIBE_REQUEST_ID, Venue, VenueFacts};
use super::wire::{Seen};
use crate::book::{BookUpdate, Side, TopBook};
use crate::sync::Sequencing;
use crate::walker::Walker;

pub struct Binance;

// Bits of `Seen`: the envelope's and control keys, then each payload kind's.
const EVENT: u32 = 0;
const STREAM: u32 = 1;
const DATA: u32 = 2;
const RESULT: u32 = 3;
const ERROR_CODE: u32 = 4;
const REQUEST_ID: u32 = 5;
const LAST_UPDATE_ID: u32 = 8;
const BIDS: u32 = 9;
const ASKS: u32 = 10;
const FIRST_ID: u32 = 11;
const LAST_ID: u32 = 12;

/// What one object level (the envelope or the payload) contained.
#[derive(Default)]
struct Members<'a> {
    seen: Seen,
    event: &'a [u8],
    stream: &'a [u8],
    /// An answer's `id`: the request's.
    request_id: u64,
}

/// The payload a connection carries: partial depth books or diff events. The envelope
/// (combined stream, acks, `serverShutdown`) is the same for both.
trait Payload<'a> {
    /// Reads `key`'s value if `key` belongs to this payload; false: not one of its keys.
    fn member(
        &mut self,
        walker: &mut Walker<'a>,
        key: &'a [u8],
        seen: &mut Seen,
    ) -> Result<bool, DecodeError>;
    /// Whether any of the payload's keys was seen at this level.
    fn any_seen(seen: &Seen) -> bool;
    /// Classifies a payload that had some of its keys: true for a complete book, false for
    /// another stream's payload that shares key names (to be ignored).
    fn classify(members: &Members<'a>) -> Result<bool, DecodeError>;
}

/// `{"lastUpdateId":…,"bids":[…],"asks":[…]}`, keeping the top `depth` a side.
struct PartialDepth<'o> {
    depth: usize,
    out: &'o mut TopBook,
}

const PARTIAL_KEYS: [(u32, &str); 3] = [
    (LAST_UPDATE_ID, "lastUpdateId"),
    (BIDS, "bids"),
    (ASKS, "asks"),
];

impl<'a> Payload<'a> for PartialDepth<'_> {
    fn member(
        &mut self,
        walker: &mut Walker<'a>,
        key: &'a [u8],
        seen: &mut Seen,
    ) -> Result<bool, DecodeError> {
        match key {
            b"lastUpdateId" => {
                seen.mark(LAST_UPDATE_ID, "lastUpdateId")?;
                self.out.venue_sequence = walker.unsigned()?;
            }
            b"bids" => {
                seen.mark(BIDS, "bids")?;
                walker.levels(Side::Bid, self.depth, &mut self.out.bids)?;
            }
            b"asks" => {
                seen.mark(ASKS, "asks")?;
                walker.levels(Side::Ask, self.depth, &mut self.out.asks)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn any_seen(seen: &Seen) -> bool {
        seen.any(&PARTIAL_KEYS)
    }

    fn classify(members: &Members<'a>) -> Result<bool, DecodeError> {
        if members.seen.has(EVENT) {
            return Err(DecodeError::UnknownMessage("Binance partial depth"));
        }
        members.seen.require(&PARTIAL_KEYS).map(|()| true)
    }
}

/// `{"e":"depthUpdate","E":…,"s":"BNBBTC","U":first,"u":last,"b":[…],"a":[…]}`: every
/// level, zero amounts included. Other streams reuse these key names with other meanings
/// (`bookTicker`: `"u"`, and `"b"`/`"a"` as strings; `aggTrade`: `"a"` a number), so only an
/// array under `b`/`a` is a side, and only a `depthUpdate` event is a diff.
struct DiffEvent<'o> {
    max_levels: usize,
    out: &'o mut BookUpdate,
}

const DIFF_KEYS: [(u32, &str); 4] = [(FIRST_ID, "U"), (LAST_ID, "u"), (BIDS, "b"), (ASKS, "a")];

impl<'a> Payload<'a> for DiffEvent<'_> {
    fn member(
        &mut self,
        walker: &mut Walker<'a>,
        key: &'a [u8],
        seen: &mut Seen,
    ) -> Result<bool, DecodeError> {
        match key {
            b"U" => {
                seen.mark(FIRST_ID, "U")?;
                self.out.first_id = walker.unsigned()?;
            }
            b"u" => {
                seen.mark(LAST_ID, "u")?;
                self.out.last_id = walker.unsigned()?;
            }
            b"b" | b"a" if walker.peek()? != b'[' => walker.skip_value()?,
            b"b" => {
                seen.mark(BIDS, "b")?;
                walker.all_levels(None, self.max_levels, &mut self.out.bids)?;
            }
            b"a" => {
                seen.mark(ASKS, "a")?;
                walker.all_levels(None, self.max_levels, &mut self.out.asks)?;
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn any_seen(seen: &Seen) -> bool {
        seen.any(&DIFF_KEYS)
    }

    fn classify(members: &Members<'a>) -> Result<bool, DecodeError> {
        let complete = members.seen.require(&DIFF_KEYS);
        match (members.event, complete) {
            (b"depthUpdate", complete) => complete.map(|()| true),
            // Every key of a diff but its event type: a broken diff, not another stream.
            (b"", Ok(())) => Err(DecodeError::MissingKey("e")),
            _ => Ok(false),
        }
    }
}

/// Reads one member that may appear in a payload (raw, or inside a combined envelope).
fn payload_member<'a, P: Payload<'a>>(
    walker: &mut Walker<'a>,
    key: &'a [u8],
    payload: &mut P,
    members: &mut Members<'a>,
) -> Result<(), DecodeError> {
    if payload.member(walker, key, &mut members.seen)? {
        return Ok(());
    }
    if key == b"e" {
        members.seen.mark(EVENT, "e")?;
        members.event = walker.string()?;
    } else {
        walker.skip_value()?;
    }
    Ok(())
}

/// Classifies a payload once all its members are read.
fn payload_message<'a, P: Payload<'a>>(
    members: &Members<'a>,
    stream: &'a [u8],
) -> Result<Message<'a>, DecodeError> {
    if P::any_seen(&members.seen) && P::classify(members)? {
        return Ok(Message::Book { stream });
    }
    Ok(match members.event {
        b"serverShutdown" => Message::Reconnect,
        _ => Message::Ignored,
    })
}

/// A frame in the layout Binance sends every push in (all recorded frames: no whitespace,
/// the keys in this order): the payload raw, or combined as `{"stream":…,"data":<payload>}`.
/// `read_payload` reads the payload object, its braces included, by comparing the bytes
/// between its values with the layout instead of walking the objects: the general walk
/// costs about as much as reading ten levels, and more than half of a two-level diff
/// event's decode. `None` for any other frame, or an error in this one; then
/// [`decode_frame`] reads it, and gives the same answer for every frame this accepts.
fn decode_usual_layout<'a>(
    frame: &'a [u8],
    read_payload: impl FnOnce(&mut Walker<'a>) -> Option<()>,
) -> Option<Message<'a>> {
    let mut walker = Walker::new(frame);
    let combined = walker.skip_exactly(br#"{"stream":"#);
    let stream = if combined {
        let stream = walker.string().ok()?;
        walker.skip_exactly(br#","data":"#).then_some(stream)?
    } else {
        &b""[..]
    };
    read_payload(&mut walker)?;
    if combined {
        walker.skip_exactly(b"}").then_some(())?;
    }
    walker.finish().ok()?;
    Some(Message::Book { stream })
}

/// A partial depth payload in [`decode_usual_layout`]'s layout.
fn read_usual_partial_depth(
    walker: &mut Walker<'_>,
    depth: usize,
    out: &mut TopBook,
) -> Option<()> {
    walker.skip_exactly(br#"{"lastUpdateId":"#).then_some(())?;
    out.venue_sequence = walker.unsigned().ok()?;
    walker.skip_exactly(br#","bids":"#).then_some(())?;
    walker.levels(Side::Bid, depth, &mut out.bids).ok()?;
    walker.skip_exactly(br#","asks":"#).then_some(())?;
    walker.levels(Side::Ask, depth, &mut out.asks).ok()?;
    walker.skip_exactly(b"}").then_some(())
}

/// A diff event payload in [`decode_usual_layout`]'s layout.
fn read_usual_diff_event(
    walker: &mut Walker<'_>,
    max_levels: usize,
    out: &mut BookUpdate,
) -> Option<()> {
    walker
        .skip_exactly(br#"{"e":"depthUpdate","E":"#)
        .then_some(())?;
    walker.skip_value().ok()?; // the event time: unused, skipped as the general walk does
    walker.skip_exactly(br#","s":"#).then_some(())?;
    walker.string().ok()?; // the symbol: the stream names it
    walker.skip_exactly(br#","U":"#).then_some(())?;
    out.first_id = walker.unsigned().ok()?;
    walker.skip_exactly(br#","u":"#).then_some(())?;
    out.last_id = walker.unsigned().ok()?;
    walker.skip_exactly(br#","b":"#).then_some(())?;
    walker.all_levels(None, max_levels, &mut out.bids).ok()?;
    walker.skip_exactly(br#","a":"#).then_some(())?;
    walker.all_levels(None, max_levels, &mut out.asks).ok()?;
    walker.skip_exactly(b"}").then_some(())
}

/// One frame: a raw payload, a combined-stream envelope around one, or a control frame.
fn decode_frame<'a, P: Payload<'a>>(
    frame: &'a [u8],
    mut payload: P,
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
                walker
                    .object(|walker, key| payload_member(walker, key, &mut payload, &mut inner))?;
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
            // An answer's; a payload has no `id`.
            b"id" => {
                top.seen.mark(REQUEST_ID, "id")?;
                top.request_id = walker.unsigned()?;
            }
            _ => payload_member(walker, key, &mut payload, &mut top)?,
        }
        Ok(())
    })?;
    walker.finish()?;

    let envelope = top.seen.has(STREAM) || top.seen.has(DATA);
    if !envelope {
        let acked = match top.seen.has(REQUEST_ID) {
            true => Acked::Request(top.request_id),
            false => Acked::Oldest,
        };
        return if top.seen.has(ERROR_CODE) {
            Ok(Message::SubscribeResult {
                accepted: false,
                acked,
            })
        } else if top.seen.has(RESULT) {
            Ok(Message::SubscribeResult {
                accepted: true,
                acked,
            })
        } else {
            payload_message::<P>(&top, b"")
        };
    }
    // A combined envelope carries the payload only under "data": payload keys beside it
    // are at the wrong level.
    if P::any_seen(&top.seen) || top.seen.has(EVENT) || top.seen.has(RESULT) {
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
    payload_message::<P>(&inner, top.stream)
}

/// How Binance sequences its diff stream: an event covers update ids `U..=u` and the next
/// starts at `u + 1`. A snapshot at `lastUpdateId` is followed by the events with
/// `u > lastUpdateId`, the first of which must cover `lastUpdateId + 1` (PROTOCOLS.md,
/// Binance, "How to manage a local order book").
pub struct UpdateIdRanges;

impl Sequencing for UpdateIdRanges {
    fn is_contained(&self, update: &BookUpdate, last_id: u64, _snapshot_id: u64) -> bool {
        update.last_id <= last_id
    }

    fn is_gap(&self, update: &BookUpdate, last_id: u64, _snapshot_id: u64) -> bool {
        update.first_id > last_id.saturating_add(1)
    }

    fn joins(&self, snapshot_id: u64, first: &BookUpdate) -> bool {
        first.first_id <= snapshot_id.saturating_add(1)
    }

    fn gap_event_starts_buffer(&self) -> bool {
        true
    }
}

impl Venue for Binance {
    const FACTS: VenueFacts = VenueFacts {
        name: "binance",
        exchange: "binance",
        default_url: "wss://stream.binance.com:9443/stream",
        default_rest_url: "https://api.binance.com",
        // "≤300 connection attempts per 5 minutes per IP" (PROTOCOLS.md, Binance, Limits);
        // beyond it the IP is banned.
        connect_budget: ConnectBudget {
            attempts: 300,
            per: std::time::Duration::from_secs(300),
        },
        // "≤1024 streams per connection" (PROTOCOLS.md, Binance, Limits).
        max_streams_per_connection: 1024,
        snapshot_streams: true,
        binary_books: false,
        api_key_header: None,
        snapshots: SnapshotSource::Rest,
        sequencing: &UpdateIdRanges,
    };
}

impl Decode for Binance {
    fn decode<'a>(
        frame: &'a [u8],
        depth: usize,
        out: &mut TopBook,
    ) -> Result<Message<'a>, DecodeError> {
        if let Some(message) =
            decode_usual_layout(frame, |walker| read_usual_partial_depth(walker, depth, out))
        {
            return Ok(message);
        }
        decode_frame(frame, PartialDepth { depth, out })
    }

    fn decode_diff<'a>(
        frame: &'a [u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<Message<'a>, DecodeError> {
        let message = match decode_usual_layout(frame, |walker| {
            read_usual_diff_event(walker, max_levels, out)
        }) {
            Some(message) => message,
            None => decode_frame(frame, DiffEvent { max_levels, out })?,
        };
        if matches!(message, Message::Book { .. }) && out.first_id > out.last_id {
            return Err(DecodeError::Invalid("depthUpdate with U greater than u"));
        }
        Ok(message)
    }

    /// `GET /api/v3/depth`: `{"lastUpdateId":…,"bids":[…],"asks":[…]}`, sides best first.
    fn decode_snapshot(
        body: &[u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<(), DecodeError> {
        let mut walker = Walker::new(body);
        let mut seen = Seen::default();
        walker.object(|walker, key| {
            match key {
                b"lastUpdateId" => {
                    seen.mark(LAST_UPDATE_ID, "lastUpdateId")?;
                    out.last_id = walker.unsigned()?;
                    out.first_id = out.last_id;
                }
                b"bids" => {
                    seen.mark(BIDS, "bids")?;
                    walker.all_levels(Some(Side::Bid), max_levels, &mut out.bids)?;
                }
                b"asks" => {
                    seen.mark(ASKS, "asks")?;
                    walker.all_levels(Some(Side::Ask), max_levels, &mut out.asks)?;
                }
                _ => walker.skip_value()?,
            }
            Ok(())
        })?;
        walker.finish()?;
        seen.require(&PARTIAL_KEYS)
    }
}

impl Checksum for Binance {}

impl Streams for Binance {
    fn spot_symbol(&self, base: &str, quote: &str) -> String {
        format!("{base}{quote}")
    }

    /// Partial depth comes in 5, 10 or 20 levels: the smallest that covers `depth`.
    fn stream_name(&self, symbol: &str, depth: usize) -> String {
        let levels = [5, 10, 20]
            .into_iter()
            .find(|&levels| levels >= depth)
            .unwrap_or(20);
        format!("{}@depth{levels}@100ms", symbol.to_ascii_lowercase())
    }

    /// One `SUBSCRIBE` for all streams, answered by one `{"result":null,"id":1}`.
    /// One request, answered `{"result":null,"id":…}`.
    fn subscribe_frames(
        &self,
        streams: &[String],
        _kind: StreamKind,
        _depth: usize,
        first_id: u64,
    ) -> Vec<SubscribeRequest> {
        let request =
            serde_json::json!({"method": "SUBSCRIBE", "params": streams, "id": first_id});
        vec![SubscribeRequest {
            frame: request.to_string(),
            id: Some(first_id),
            streams: 0..streams.len(),
        }]
    }

    fn unsubscribe_frames(&self, streams: &[String], _kind: StreamKind, _depth: usize) -> Vec<String> {
        let request = serde_json::json!({"method": "UNSUBSCRIBE", "params": streams, "id": UNSUBSCRIBE_REQUEST_ID});
        vec![request.to_string()]
    }

    fn diff_stream_name(&self, symbol: &str) -> String {
        format!("{}@depth@100ms", symbol.to_ascii_lowercase())
    }

    /// `nknusdt@depth@100ms` or `nknusdt@depth` (the 1000 ms stream): `NKNUSDT`, as the
    /// REST API names it.
    fn diff_stream_symbol(&self, stream: &str) -> Option<String> {
        let symbol = stream
            .strip_suffix("@depth@100ms")
            .or_else(|| stream.strip_suffix("@depth"))?;
        (!symbol.is_empty()).then(|| symbol.to_ascii_uppercase())
    }
}

impl Snapshots for Binance {
    fn snapshot_url(&self, rest_base: &str, symbol: &str, limit: usize) -> String {
        let symbol = symbol.to_ascii_uppercase();
        format!("{rest_base}/api/v3/depth?symbol={symbol}&limit={limit}")
    }

    fn snapshot_symbol(&self, url: &str) -> Option<String> {
        let (path, query) = url.split_once('?')?;
        if !path.ends_with("/api/v3/depth") {
            return None;
        }
        query
            .split('&')
            .find_map(|pair| pair.strip_prefix("symbol="))
            .map(str::to_owned)
    }

    /// PROTOCOLS.md, "REST weights": limit 1–100: 5, 101–500: 25, 501–1000: 50, above: 250.
    fn snapshot_weight(&self, limit: usize) -> u32 {
        match limit {
            0..=100 => 5,
            101..=500 => 25,
            501..=1000 => 50,
            _ => 250,
        }
    }
}

/// The simulator's side of Binance.
impl Simulated for Binance {
    fn encode_book(&self, stream: &str, book: &TopBook, price_decimals: u32, out: &mut Vec<u8>) {
        use std::io::Write;
        write!(
            out,
            r#"{{"stream":"{stream}","data":{{"lastUpdateId":{},"bids":"#,
            book.venue_sequence
        )
        .expect("writing to a Vec cannot fail");
        super::wire::write_levels(book.bids.as_slice(), price_decimals, "", out);
        out.extend_from_slice(br#","asks":"#);
        super::wire::write_levels(book.asks.as_slice(), price_decimals, "", out);
        out.extend_from_slice(b"}}");
    }

    fn answer_request(&self, request: &str) -> Option<Answer> {
        let request: serde_json::Value = serde_json::from_str(request).ok()?;
        let streams = request
            .get("params")?
            .as_array()?
            .iter()
            .map(|s| s.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()?;
        let replies =
            vec![serde_json::json!({"result": null, "id": request.get("id")?}).to_string()];
        match request.get("method")?.as_str()? {
            "SUBSCRIBE" => Some(Answer {
                subscribe: streams,
                replies,
                ..Answer::default()
            }),
            "UNSUBSCRIBE" => Some(Answer {
                unsubscribe: streams,
                replies,
                ..Answer::default()
            }),
            _ => None,
        }
    }

    fn reconnect_request(&self) -> Option<&'static str> {
        Some(r#"{"stream":"!serverShutdown","data":{"e":"serverShutdown","E":1770123456789}}"#)
    }

    /// "The server sends a ping frame every 20 seconds" (PROTOCOLS.md, Binance keep-alive).
    fn server_ping_interval(&self) -> Option<std::time::Duration> {
        Some(std::time::Duration::from_secs(20))
    }

    fn encode_diff(
        &self,
        stream: &str,
        update: &BookUpdate,
        _checksum: Option<u32>,
        price_decimals: u32,
        unix_ms: u64,
        out: &mut Vec<u8>,
    ) {
        use std::io::Write;
        let symbol = stream
            .split('@')
            .next()
            .unwrap_or_default()
            .to_ascii_uppercase();
        write!(
            out,
            r#"{{"stream":"{stream}","data":{{"e":"depthUpdate","E":{unix_ms},"s":"{symbol}","U":{},"u":{},"b":"#,
            update.first_id, update.last_id
        )
        .expect("writing to a Vec cannot fail");
        super::wire::write_levels(&update.bids, price_decimals, "", out);
        out.extend_from_slice(br#","a":"#);
        super::wire::write_levels(&update.asks, price_decimals, "", out);
        out.extend_from_slice(b"}}");
    }

    /// The REST body.
    fn encode_snapshot(
        &self,
        _stream: &str,
        snapshot: &BookUpdate,
        _on: SnapshotSource,
        _checksum: Option<u32>,
        price_decimals: u32,
        out: &mut Vec<u8>,
    ) {
        use std::io::Write;
        write!(out, r#"{{"lastUpdateId":{},"bids":"#, snapshot.last_id)
            .expect("writing to a Vec cannot fail");
        super::wire::write_levels(&snapshot.bids, price_decimals, "", out);
        out.extend_from_slice(br#","asks":"#);
        super::wire::write_levels(&snapshot.asks, price_decimals, "", out);
        out.push(b'}');
    }

    /// `<symbol>@depth<N>@100ms` carries N levels.
    fn levels_on_stream(&self, stream: &str) -> usize {
        let after = stream.split_once("@depth").map_or("", |(_, after)| after);
        after
            .split('@')
            .next()
            .and_then(|levels| levels.parse().ok())
            .unwrap_or(20)
    }

    fn next_event_ids(&self, last_id: u64, changes: u64, _now_us: u64) -> (u64, u64) {
        (last_id + 1, last_id + changes)
    }

    fn initial_event_id(&self, _now_us: u64) -> u64 {
        1_000_000
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixed::FixedPoint;
    use crate::sync::test_events::{event, snapshot};
    use crate::sync::{BookSync, SnapshotOutcome, UpdateOutcome};

    fn fp(text: &str) -> FixedPoint {
        text.parse().unwrap()
    }

    const RECORDED: &[u8] =
        include_bytes!("../../tests/fixtures/binance/partial_depth20_BTCUSDT_combined.json");

    #[test]
    fn update_id_ranges_follow_the_official_algorithm() {
        let mut sync = BookSync::new(&UpdateIdRanges, 100, 100);
        assert_eq!(
            sync.on_update(&event(8, 10, 1, 1)),
            UpdateOutcome::Buffered { first: true }
        );
        assert_eq!(
            sync.on_update(&event(11, 12, 2, 1)),
            UpdateOutcome::Buffered { first: false }
        );
        assert_eq!(sync.on_update(&event(11, 12, 2, 1)), UpdateOutcome::Stale);
        assert_eq!(sync.on_snapshot(&snapshot(6)), SnapshotOutcome::TooOld);
        assert!(!sync.is_synced());
        assert_eq!(
            sync.on_snapshot(&snapshot(10)),
            SnapshotOutcome::Synced {
                applied: 1,
                dropped: 1
            }
        );
        assert_eq!(sync.last_id(), 12);
        assert_eq!(sync.on_update(&event(13, 13, 3, 1)), UpdateOutcome::Applied);
        assert_eq!(sync.on_update(&event(12, 13, 3, 1)), UpdateOutcome::Stale);
        assert_eq!(sync.on_update(&event(15, 16, 4, 1)), UpdateOutcome::Gap);
        assert!(!sync.is_synced());
        assert!(sync.book.is_empty(), "a book with a hole is thrown away");
        assert_eq!(
            sync.buffered(),
            1,
            "the event after the gap starts the buffer"
        );
        assert_eq!(
            sync.on_snapshot(&snapshot(15)),
            SnapshotOutcome::Synced {
                applied: 1,
                dropped: 0
            }
        );
        assert_eq!(sync.on_snapshot(&snapshot(16)), SnapshotOutcome::Unexpected);
    }

    #[test]
    fn a_broken_buffer_restarts_at_the_event_after_the_hole() {
        let mut sync = BookSync::new(&UpdateIdRanges, 100, 100);
        sync.on_update(&event(1, 2, 1, 1));
        sync.on_update(&event(5, 6, 2, 1));
        assert_eq!(sync.buffered(), 1);
        assert_eq!(sync.on_snapshot(&snapshot(2)), SnapshotOutcome::TooOld);
        assert!(matches!(
            sync.on_snapshot(&snapshot(4)),
            SnapshotOutcome::Synced { applied: 1, .. }
        ));
    }

    /// The recorded frame as a combined stream sends it and as a raw stream would (its
    /// `data` alone).
    fn recorded_layouts() -> [Vec<u8>; 2] {
        let recorded = std::str::from_utf8(RECORDED).unwrap().trim_end();
        let data = &recorded[recorded.find(r#"{"lastUpdateId""#).unwrap()..recorded.len() - 1];
        [recorded.into(), data.into()]
    }

    /// A frame's two readings, by the layout fast path and by the general walk, each with
    /// what it wrote.
    type BothReadings<'a, Out> = (
        (Option<Message<'a>>, Out),
        (Result<Message<'a>, DecodeError>, Out),
    );

    /// `frame` read as a partial depth push (keeping 10 levels) both ways.
    fn partial_depth_both_ways(frame: &[u8]) -> BothReadings<'_, TopBook> {
        let (mut fast, mut general) = (TopBook::default(), TopBook::default());
        let fast_message = decode_usual_layout(frame, |walker| {
            read_usual_partial_depth(walker, 10, &mut fast)
        });
        let general_message = decode_frame(
            frame,
            PartialDepth {
                depth: 10,
                out: &mut general,
            },
        );
        ((fast_message, fast), (general_message, general))
    }

    /// `frame` read as a diff event both ways.
    fn diff_event_both_ways(frame: &[u8]) -> BothReadings<'_, BookUpdate> {
        let (mut fast, mut general) = (BookUpdate::default(), BookUpdate::default());
        let fast_message = decode_usual_layout(frame, |walker| {
            read_usual_diff_event(walker, 1000, &mut fast)
        });
        let general_message = decode_frame(
            frame,
            DiffEvent {
                max_levels: 1000,
                out: &mut general,
            },
        );
        ((fast_message, fast), (general_message, general))
    }

    /// Whether the fast path accepted the frame; if it did, the general walk must have read
    /// the same message and written the same.
    fn fast_path_agrees<Out: PartialEq + std::fmt::Debug>(
        ((fast_message, fast), (general_message, general)): BothReadings<'_, Out>,
    ) -> Result<bool, proptest::test_runner::TestCaseError> {
        let Some(message) = fast_message else {
            return Ok(false);
        };
        proptest::prop_assert_eq!(general_message, Ok(message));
        proptest::prop_assert_eq!(fast, general);
        Ok(true)
    }

    #[test]
    fn recorded_frames_take_the_layout_fast_path() {
        for frame in recorded_layouts() {
            assert!(fast_path_agrees(partial_depth_both_ways(&frame)).unwrap());
        }
    }

    const RECORDED_DIFFS: [&str; 2] = [
        include_str!("../../tests/fixtures/binance/diff_depth_NKNUSDT_combined_stream.jsonl"),
        include_str!("../../tests/fixtures/binance/diff_depth_LRCBTC_combined_stream.jsonl"),
    ];

    /// A recorded diff event with levels on both sides, as the combined stream sent it and
    /// as a raw stream would (its `data` alone).
    fn recorded_diff_layouts() -> [Vec<u8>; 2] {
        let recorded = RECORDED_DIFFS[0]
            .lines()
            .find(|line| !line.contains(r#""b":[]"#) && !line.contains(r#""a":[]"#))
            .unwrap();
        let data = &recorded[recorded.find(r#"{"e""#).unwrap()..recorded.len() - 1];
        [recorded.into(), data.into()]
    }

    #[test]
    fn recorded_diff_events_take_the_layout_fast_path() {
        let frames = RECORDED_DIFFS
            .iter()
            .flat_map(|recording| recording.lines());
        let raw = recorded_diff_layouts()[1].clone();
        for frame in frames.chain([std::str::from_utf8(&raw).unwrap()]) {
            let readings = diff_event_both_ways(frame.as_bytes());
            assert!(fast_path_agrees(readings).unwrap(), "{frame}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]

        /// As below, for diff events: whatever the diff layout fast path accepts, the
        /// general walk reads the same way, on a recorded event with one edit.
        #[test]
        fn diff_layout_fast_path_agrees_with_the_general_walk(
            raw in proptest::bool::ANY,
            edit in crate::venue::layout_edits::edit(),
        ) {
            let [combined, data] = recorded_diff_layouts();
            let mut frame = if raw { data } else { combined };
            crate::venue::layout_edits::apply(&mut frame, edit);
            fast_path_agrees(diff_event_both_ways(&frame))?;
        }

        /// Whatever the layout fast path accepts, the general walk reads the same way: the
        /// same message and book. Frames: the recorded one, combined or raw, with one edit,
        /// mostly where the layouts' literals and values are (the first and last 80 bytes,
        /// around "asks").
        #[test]
        fn layout_fast_path_agrees_with_the_general_walk(
            raw in proptest::bool::ANY,
            edit in crate::venue::layout_edits::edit(),
        ) {
            let [combined, data] = recorded_layouts();
            let mut frame = if raw { data } else { combined };
            crate::venue::layout_edits::apply(&mut frame, edit);
            fast_path_agrees(partial_depth_both_ways(&frame))?;
        }
    }

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
                br#"{"result":null,"id":7}"#,
                Message::SubscribeResult {
                    accepted: true,
                    acked: Acked::Request(7),
                },
            ),
            (
                br#"{"code":2,"msg":"Invalid request","id":1}"#,
                Message::SubscribeResult {
                    accepted: false,
                    acked: Acked::Request(1),
                },
            ),
            (
                br#"{"result":null}"#,
                Message::SubscribeResult {
                    accepted: true,
                    acked: Acked::Oldest,
                },
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
        Binance.encode_book("btcusdt@depth20@100ms", &book, 8, &mut encoded);
        assert_eq!(
            String::from_utf8(encoded).unwrap(),
            std::str::from_utf8(RECORDED).unwrap().trim_end()
        );
    }

    #[test]
    fn stream_names_pick_the_smallest_covering_depth() {
        assert_eq!(Binance.stream_name("ETHBTC", 10), "ethbtc@depth10@100ms");
        assert_eq!(Binance.stream_name("ETHBTC", 11), "ethbtc@depth20@100ms");
        assert_eq!(Binance.stream_name("ETHBTC", 50), "ethbtc@depth20@100ms");
    }

    #[test]
    fn subscription_round_trip_matches_the_documented_frames() {
        let requests = Binance.subscribe_frames(&["ethbtc@depth10@100ms".to_owned()], StreamKind::Snapshots, 10, 3);
        assert_eq!(
            requests,
            [SubscribeRequest {
                frame: r#"{"id":3,"method":"SUBSCRIBE","params":["ethbtc@depth10@100ms"]}"#
                    .to_owned(),
                id: Some(3),
                streams: 0..1,
            }]
        );
        let answer = Binance.answer_request(&requests[0].frame).unwrap();
        assert_eq!(answer.subscribe, ["ethbtc@depth10@100ms"]);
        let mut book = TopBook::default();
        assert_eq!(
            Binance::decode(answer.replies[0].as_bytes(), 10, &mut book),
            Ok(Message::SubscribeResult {
                accepted: true,
                acked: Acked::Request(3)
            })
        );
        let unsubscribe = Binance.unsubscribe_frames(&["ethbtc@depth10@100ms".to_owned()], StreamKind::Snapshots, 10);
        assert_eq!(
            unsubscribe,
            [r#"{"id":0,"method":"UNSUBSCRIBE","params":["ethbtc@depth10@100ms"]}"#]
        );
        let answer = Binance.answer_request(&unsubscribe[0]).unwrap();
        assert_eq!(answer.unsubscribe, ["ethbtc@depth10@100ms"]);
        assert_eq!(
            Binance::decode(
                Binance.reconnect_request().unwrap().as_bytes(),
                10,
                &mut book
            ),
            Ok(Message::Reconnect)
        );
    }
}
