//! Coinbase Advanced Trade, channel `level2` (frames on `l2_data`), with `heartbeats`.
//!
//! Docs: <https://docs.cdp.coinbase.com/advanced-trade/docs/ws-channels#level2-channel>
//! (see also `../shared/fixtures/PROTOCOLS.md`, section 3b).
//!
//! One request a channel: `{"type":"subscribe","product_ids":["BTC-USD"],"channel":
//! "level2"}` and `{"type":"subscribe","channel":"heartbeats"}` (channels close after a
//! minute without the heartbeats), each answered by one `subscriptions` message listing
//! every subscription so far; an unknown or refused channel by `{"type":"error",…}`. A real
//! snapshot (`fixtures/coinbase/advanced_trade_l2_data_snapshot_BTC-PERP-INTX_truncated_2026-09-07.json`,
//! cut to 4 levels by its source):
//!
//! ```text
//! {"channel":"l2_data","client_id":"","timestamp":"2026-09-07T01:57:58.894355Z",
//!  "sequence_num":0,"events":[{"type":"snapshot","product_id":"BTC-PERP-INTX","updates":[
//!  {"side":"offer","event_time":"2026-09-07T01:57:58.894355Z","price_level":"79944.1",
//!  "new_quantity":"1.2"},{"side":"bid",…,"price_level":"79943.9","new_quantity":"3.0105"},…]}]}
//! ```
//!
//! An event is a `snapshot` (the product's whole book) or an `update`; each level's
//! `new_quantity` is absolute (`"0"` deletes), `side` is `bid` or `offer`, and a frame may
//! carry events of several products ([`Message::Books`]). `client_id` is sometimes absent.
//!
//! Sequencing: `sequence_num` numbers every message on the connection, of every channel
//! (acks and heartbeats included); a number skipped is data lost for every product on it,
//! which the feed core sees (`BookUpdate::message_number`) and answers by opening the
//! connection anew. Within a product nothing is numbered ([`crate::sync::Unsequenced`]);
//! an event's id is its message's number. An update before its product's snapshot breaks
//! the protocol, as on every venue whose snapshots come on the stream: the feed core
//! counts a gap and subscribes to the product again.
//!
//! A snapshot's levels are read in any order (the capture mixes the sides and does not sort
//! them): its best `venues.coinbase.max_book_levels` a side are kept, the rest checked and
//! skipped. Sizes are in the base currency, the INTX perpetuals' included (`BTC-PERP-INTX`
//! sizes are fractions of a BTC, as the capture's `3.0105`).

use super::{Acked, Answer, Checksum, ConnectBudget, Decode, DecodeError, Message, Simulated, SnapshotSource, Snapshots, StreamKind, Streams, SubscribeRequest, TaggedShape, UNSUBSCRIBE_REQUEST_ID, Venue, VenueFacts};
use super::wire::{Seen};
use super::timestamps::{write_timestamp};
use crate::book::{BookUpdate, Level, Side, TopBook};
use crate::walker::Walker;

pub struct Coinbase;

/// Products one `level2` request carries.
const PRODUCTS_PER_REQUEST: usize = 100;

const MAX_PRODUCT_ID_LEN: usize = 24;

/// The frames' level objects.
const LEVEL: TaggedShape = TaggedShape::Object {
    side: "side",
    price: "price_level",
    amount: "new_quantity",
};

const CHANNEL: u32 = 0;
const SEQUENCE_NUM: u32 = 1;
const EVENTS: u32 = 2;
const TYPE: u32 = 3;
const PRODUCT_ID: u32 = 4;
const UPDATES: u32 = 5;

const BOOK_KEYS: [(u32, &str); 2] = [(SEQUENCE_NUM, "sequence_num"), (EVENTS, "events")];
const EVENT_KEYS: [(u32, &str); 3] = [(TYPE, "type"), (PRODUCT_ID, "product_id"), (UPDATES, "updates")];

/// One frame: a book message of one event in the layout Coinbase writes by the fast path,
/// anything else by the general walk.
fn decode_frame<'a>(
    frame: &'a [u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<Message<'a>, DecodeError> {
    out.clear();
    if let Some(message) = decode_usual_layout(frame, max_levels, out) {
        return Ok(message);
    }
    decode_message(frame, max_levels, out)
}

/// An `l2_data` message of one event in the layout Coinbase writes (the recorded one): its
/// members in that order, no whitespace, `client_id` empty or absent, read by direct byte
/// checks. `None` for any other layout (several events included) or any error, which the
/// general walk then reads or reports.
fn decode_usual_layout<'a>(
    frame: &'a [u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Option<Message<'a>> {
    let mut walker = Walker::new(frame);
    walker.skip_exactly(br#"{"channel":"l2_data","#).then_some(())?;
    walker.skip_exactly(br#""client_id":"","#);
    walker.skip_exactly(br#""timestamp":"#).then_some(())?;
    walker.string().ok()?;
    walker.skip_exactly(br#","sequence_num":"#).then_some(())?;
    let number = walker.unsigned().ok()?;
    walker.skip_exactly(br#","events":[{"type":""#).then_some(())?;
    let snapshot = match () {
        _ if walker.skip_exactly(br#"update""#) => false,
        _ if walker.skip_exactly(br#"snapshot""#) => true,
        _ => return None,
    };
    walker.skip_exactly(br#","product_id":"#).then_some(())?;
    let product_id = walker.string().ok()?;
    walker.skip_exactly(br#","updates":"#).then_some(())?;
    let sorted = read_updates(&mut walker, snapshot, max_levels, out).ok()?;
    walker.skip_exactly(b"}]}").then_some(())?;
    walker.finish().ok()?;
    if snapshot {
        sort_best_first(Side::Bid, &mut out.bids, sorted.0).ok()?;
        sort_best_first(Side::Ask, &mut out.asks, sorted.1).ok()?;
    }
    out.is_snapshot = snapshot;
    out.message_number = Some(number);
    (out.first_id, out.last_id) = (number, number);
    Some(Message::Book { stream: product_id })
}

/// One frame, by the general object walk: the members in any order, unknown ones skipped.
/// A book frame's first event goes into `out` (a snapshot's best `max_levels` a side; an
/// update's levels, at most `max_levels` in all, in wire order); the others are checked.
fn decode_message<'a>(
    frame: &'a [u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<Message<'a>, DecodeError> {
    let mut walker = Walker::new(frame);
    let mut seen = Seen::default();
    let (mut channel, mut kind): (&[u8], &[u8]) = (b"", b"");
    // The events, read where they are if the channel came first (as Coinbase writes it),
    // else found again once the channel says they are books'.
    let mut events = None;
    let mut events_at = 0;
    out.clear();
    walker.object(|walker, key| {
        match key {
            b"channel" => {
                seen.mark(CHANNEL, "channel")?;
                channel = walker.string()?;
            }
            b"sequence_num" => {
                seen.mark(SEQUENCE_NUM, "sequence_num")?;
                out.message_number = Some(walker.unsigned()?);
            }
            b"events" => {
                seen.mark(EVENTS, "events")?;
                events_at = walker.position();
                match channel {
                    b"l2_data" => events = Some(read_events(walker, max_levels, out)?),
                    _ => walker.skip_value()?,
                }
            }
            b"type" => {
                seen.mark(TYPE, "type")?;
                kind = walker.string()?;
            }
            _ => walker.skip_value()?,
        }
        Ok(())
    })?;
    walker.finish()?;
    match channel {
        b"l2_data" => {
            seen.require(&BOOK_KEYS)?;
            let events = match events {
                Some(events) => events,
                None => read_events(&mut walker.resumed_at(events_at), max_levels, out)?,
            };
            let number = out.message_number.unwrap_or_default();
            (out.first_id, out.last_id) = (number, number);
            Ok(match events {
                None => Message::Ignored,
                Some((stream, None)) => Message::Book { stream },
                Some((stream, Some(next))) => Message::Books { stream, next },
            })
        }
        b"subscriptions" => Ok(Message::SubscribeResult {
            accepted: true,
            acked: Acked::Oldest,
        }),
        b"heartbeats" => Ok(Message::SubscriptionsAlive),
        // Only subscriptions are asked for: an error refuses one.
        b"" if kind == b"error" => Ok(Message::SubscribeResult {
            accepted: false,
            acked: Acked::Oldest,
        }),
        b"" => Err(DecodeError::MissingKey("channel")),
        _ => Ok(Message::Ignored),
    }
}

/// A frame's first event's stream, and where the next event starts if one follows.
type FirstEvent<'a> = (&'a [u8], Option<usize>);

/// A book frame's `events`: the first into `out`, the rest checked; `None` for no events.
fn read_events<'a>(
    walker: &mut Walker<'a>,
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<Option<FirstEvent<'a>>, DecodeError> {
    walker.expect(b'[', "'[' opening the events")?;
    if walker.peek()? == b']' {
        walker.expect(b']', "']'")?;
        return Ok(None);
    }
    let stream = read_event(walker, max_levels, out)?;
    if !walker.next_or_close(b']', "',' or ']' after an event")? {
        return Ok(Some((stream, None)));
    }
    let next = walker.position();
    loop {
        check_event(walker, max_levels)?;
        if !walker.next_or_close(b']', "',' or ']' after an event")? {
            return Ok(Some((stream, Some(next))));
        }
    }
}

/// One event into `out` (its levels and `is_snapshot`; the ids are the frame's): its
/// product id.
fn read_event<'a>(
    walker: &mut Walker<'a>,
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<&'a [u8], DecodeError> {
    let mut seen = Seen::default();
    let (mut kind, mut product_id): (Option<bool>, &'a [u8]) = (None, b"");
    let mut updates_at = None;
    out.bids.clear();
    out.asks.clear();
    let mut kept = (false, false);
    walker.object(|walker, key| {
        match key {
            b"type" => {
                seen.mark(TYPE, "type")?;
                kind = Some(is_snapshot(walker.string()?)?);
            }
            b"product_id" => {
                seen.mark(PRODUCT_ID, "product_id")?;
                product_id = walker.string()?;
            }
            b"updates" => {
                seen.mark(UPDATES, "updates")?;
                match kind {
                    // The type must be known to read them: found again after the event.
                    None => {
                        updates_at = Some(walker.position());
                        walker.skip_value()?;
                    }
                    Some(snapshot) => {
                        kept = read_updates(walker, snapshot, max_levels, out)?;
                    }
                }
            }
            _ => walker.skip_value()?,
        }
        Ok(())
    })?;
    seen.require(&EVENT_KEYS)?;
    let snapshot = kind.unwrap_or_default();
    if let Some(at) = updates_at {
        let mut again = walker.resumed_at(at);
        kept = read_updates(&mut again, snapshot, max_levels, out)?;
    }
    out.is_snapshot = snapshot;
    if snapshot {
        sort_best_first(Side::Bid, &mut out.bids, kept.0)?;
        sort_best_first(Side::Ask, &mut out.asks, kept.1)?;
    }
    Ok(product_id)
}

/// Whether an event's `type` is a snapshot (else an update).
fn is_snapshot(kind: &[u8]) -> Result<bool, DecodeError> {
    match kind {
        b"snapshot" => Ok(true),
        b"update" => Ok(false),
        _ => Err(DecodeError::Invalid("an event's type is snapshot or update")),
    }
}

/// An event's `updates` into `out`: an update's in wire order (at most `max_levels`, more
/// is an error); a snapshot's best `max_levels` a side, zero sizes left out. For a
/// snapshot, whether each side (bids, asks) is sorted already.
fn read_updates(
    walker: &mut Walker<'_>,
    snapshot: bool,
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<(bool, bool), DecodeError> {
    out.bids.clear();
    out.asks.clear();
    if !snapshot {
        walker.elements(|walker| {
            if out.bids.len() + out.asks.len() == max_levels {
                return Err(DecodeError::TooManyLevels(max_levels));
            }
            match read_level(walker)? {
                (Side::Bid, level) => out.bids.push(level),
                (Side::Ask, level) => out.asks.push(level),
            }
            Ok(())
        })?;
        return Ok((false, false));
    }
    let mut sorted = (false, false);
    walker.elements(|walker| {
        let (side, level) = read_level(walker)?;
        if !level.amount.is_zero() {
            match side {
                Side::Bid => keep_best(Side::Bid, level, max_levels, &mut out.bids, &mut sorted.0),
                Side::Ask => keep_best(Side::Ask, level, max_levels, &mut out.asks, &mut sorted.1),
            }
        }
        Ok(())
    })?;
    Ok(sorted)
}

/// One level: in the layout Coinbase writes by direct byte checks, else by the object walk.
#[inline(always)]
fn read_level(walker: &mut Walker<'_>) -> Result<(Side, Level), DecodeError> {
    let at = walker.position();
    if let Some(level) = usual_level(walker) {
        return Ok(level);
    }
    walker.rewind(at);
    walker.tagged_level(LEVEL, None)
}

/// `{"side":"bid","event_time":"…","price_level":"…","new_quantity":"…"}` as Coinbase
/// writes it (`offer` for asks; `event_time` may be absent), no whitespace, both numbers
/// short enough for the fast parsers; `None` for anything else, which the object walk
/// then reads or refuses. Its key checks are compares of known bytes, where the walk reads
/// and matches each key.
#[inline(always)]
fn usual_level(walker: &mut Walker<'_>) -> Option<(Side, Level)> {
    walker.skip_exactly(br#"{"side":""#).then_some(())?;
    let side = match () {
        _ if walker.skip_exactly(br#"bid","#) => Side::Bid,
        _ if walker.skip_exactly(br#"offer","#) => Side::Ask,
        _ => return None,
    };
    if walker.skip_exactly(br#""event_time":"#) {
        walker.string().ok()?;
        walker.skip_exactly(b",").then_some(())?;
    }
    walker.skip_exactly(br#""price_level":"#).then_some(())?;
    let price = walker.compact_fixed_point()?;
    walker.skip_exactly(br#","new_quantity":"#).then_some(())?;
    let amount = walker.compact_fixed_point()?;
    walker.skip_exactly(b"}").then_some(())?;
    Some((side, Level { price, amount }))
}

/// Keeps `level` among a side's best `limit` (a snapshot's levels in any order), in
/// `levels`' capacity: pushed until it holds `limit`, then sorted once, best first, and
/// each further level inserted in its place if it beats the worst kept (which goes).
/// Sorted snapshots cost one compare a level past the limit.
fn keep_best(side: Side, level: Level, limit: usize, levels: &mut Vec<Level>, sorted: &mut bool) {
    if levels.len() < limit {
        levels.push(level);
        return;
    }
    if !*sorted {
        sort_side(side, levels);
        *sorted = true;
    }
    match levels.last() {
        Some(worst) if side.is_better(level.price, worst.price) => {
            let at = levels.partition_point(|kept| side.is_better(kept.price, level.price));
            levels.pop();
            levels.insert(at, level);
        }
        _ => {}
    }
}

fn sort_side(side: Side, levels: &mut [Level]) {
    levels.sort_unstable_by_key(|level| side.rank(level.price));
}

/// A snapshot side, best first (`sorted`: already); a price given twice leaves it not
/// strictly sorted, and refused.
fn sort_best_first(side: Side, levels: &mut [Level], sorted: bool) -> Result<(), DecodeError> {
    if !sorted {
        sort_side(side, levels);
    }
    super::wire::check_sorted(side, levels)
}

/// Checks an event that is not read yet (a second product's in one frame): its members,
/// type and levels, and an update's count of them, without keeping them. What only its
/// reading can find is a snapshot's price given twice.
fn check_event(walker: &mut Walker<'_>, max_levels: usize) -> Result<(), DecodeError> {
    let mut seen = Seen::default();
    let (mut snapshot, mut levels) = (false, 0);
    walker.object(|walker, key| {
        match key {
            b"type" => {
                seen.mark(TYPE, "type")?;
                snapshot = is_snapshot(walker.string()?)?;
            }
            b"product_id" => {
                seen.mark(PRODUCT_ID, "product_id")?;
                walker.string()?;
            }
            b"updates" => {
                seen.mark(UPDATES, "updates")?;
                walker.elements(|walker| {
                    levels += 1;
                    read_level(walker).map(drop)
                })?;
            }
            _ => walker.skip_value()?,
        }
        Ok(())
    })?;
    seen.require(&EVENT_KEYS)?;
    match !snapshot && levels > max_levels {
        true => Err(DecodeError::TooManyLevels(max_levels)),
        false => Ok(()),
    }
}

/// The `level2` requests for `kind` (`subscribe`, `unsubscribe`) of `products`, 100 a
/// request, numbered from `first_id` (each acknowledged by one answer naming no request).
fn level2_requests(kind: &str, products: &[String], first_id: u64) -> Vec<SubscribeRequest> {
    super::wire::chunked_requests(products, PRODUCTS_PER_REQUEST, Some(first_id), |chunk| {
        serde_json::json!({"type": kind, "product_ids": chunk, "channel": "level2"}).to_string()
    })
}

impl Venue for Coinbase {
    const FACTS: VenueFacts = VenueFacts {
        name: "coinbase",
        exchange: "coinbase",
        default_url: "wss://advanced-trade-ws.coinbase.com",
        // The Advanced Trade REST API (the snapshots come on the WebSocket; nothing is
        // fetched).
        default_rest_url: "https://api.coinbase.com",
        // "8 unauthenticated messages a second per IP" (PROTOCOLS.md, Coinbase Advanced Trade,
        // Limits; marked uncertain there): a connection sends two requests (its `level2` and
        // its `heartbeats`), so 4 attempts a second keep to it.
        connect_budget: ConnectBudget {
            attempts: 4,
            per: std::time::Duration::from_secs(1),
        },
        // Coinbase documents no cap; each product's snapshot is its whole book, and a lost
        // message costs the connection: products are spread over connections of at most this
        // many.
        max_streams_per_connection: 20,
        snapshot_streams: false,
        binary_books: false,
        api_key_header: None,
        snapshots: SnapshotSource::InBand,
        sequencing: &crate::sync::Unsequenced,
    };
}

impl Decode for Coinbase {
    fn decode_diff<'a>(
        frame: &'a [u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<Message<'a>, DecodeError> {
        decode_frame(frame, max_levels, out)
    }

    /// The event at `at`: read as the first was. Its ids stay the frame's, which
    /// `decode_diff` wrote into `out`.
    fn decode_next_event<'a>(
        frame: &'a [u8],
        at: usize,
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<(&'a [u8], Option<usize>), DecodeError> {
        let mut walker = Walker::resume(frame, at);
        let stream = read_event(&mut walker, max_levels, out)?;
        let more = walker.next_or_close(b']', "',' or ']' after an event")?;
        Ok((stream, more.then(|| walker.position())))
    }
}

impl Checksum for Coinbase {}

impl Streams for Coinbase {
    fn spot_symbol(&self, base: &str, quote: &str) -> String {
        format!("{base}-{quote}")
    }

    fn stream_name(&self, symbol: &str, _depth: usize) -> String {
        symbol.to_owned()
    }

    /// The products' `level2` requests, 100 products each, then the `heartbeats` one, which
    /// asks for no book: each is answered by one `subscriptions` message naming no
    /// request, the `level2` ones first.
    fn subscribe_frames(
        &self,
        streams: &[String],
        _kind: StreamKind,
        _depth: usize,
        first_id: u64,
    ) -> Vec<SubscribeRequest> {
        let mut requests = level2_requests("subscribe", streams, first_id.max(1));
        let heartbeats_id = first_id.max(1) + requests.len() as u64;
        requests.push(SubscribeRequest {
            frame: r#"{"type":"subscribe","channel":"heartbeats"}"#.to_owned(),
            id: Some(heartbeats_id),
            streams: 0..0,
        });
        requests
    }

    /// The products' `level2` only: the heartbeats go on for the connection's others.
    fn unsubscribe_frames(&self, streams: &[String], _kind: StreamKind, _depth: usize) -> Vec<String> {
        let requests = level2_requests("unsubscribe", streams, UNSUBSCRIBE_REQUEST_ID);
        requests.into_iter().map(|request| request.frame).collect()
    }

    /// A spot product (`BTC-USD`) or an INTX perpetual (`BTC-PERP-INTX`).
    fn check_symbol(&self, symbol: &str) -> Result<(), String> {
        let parts = super::wire::dashed_codes(symbol, MAX_PRODUCT_ID_LEN).unwrap_or_default();
        match matches!(parts[..], [_, _] | [_, "PERP", "INTX"]) {
            true => Ok(()),
            false => Err(format!(
                "a Coinbase product id is BASE-QUOTE (ETH-USD) or BASE-PERP-INTX, upper-case, \
                 at most {MAX_PRODUCT_ID_LEN} characters"
            )),
        }
    }

    fn diff_stream_name(&self, symbol: &str) -> String {
        symbol.to_owned()
    }

    fn diff_stream_symbol(&self, stream: &str) -> Option<String> {
        (!stream.is_empty()).then(|| stream.to_owned())
    }
}

impl Snapshots for Coinbase {
    /// The Advanced Trade public book (its snapshots come on the WebSocket instead).
    fn snapshot_url(&self, rest_base: &str, symbol: &str, limit: usize) -> String {
        format!("{rest_base}/api/v3/brokerage/market/product_book?product_id={symbol}&limit={limit}")
    }
}

/// The placeholder the encoders write where the connection's message number goes
/// ([`Simulated::number_message`] puts it in).
const UNNUMBERED: &str = r#""sequence_num":0,"#;

/// Opens a message of `channel` as the venue writes it, stamped `now` (RFC 3339 text).
fn open_message(channel: &str, now: &[u8], out: &mut Vec<u8>) {
    use std::io::Write;
    write!(out, r#"{{"channel":"{channel}","client_id":"","timestamp":""#)
        .expect("writing to a Vec cannot fail");
    out.extend_from_slice(now);
    out.extend_from_slice(br#"","#);
    out.extend_from_slice(UNNUMBERED.as_bytes());
}

/// The time now as the venue stamps its messages.
fn now() -> Vec<u8> {
    let mut now = Vec::with_capacity(27);
    write_timestamp(crate::clock::unix_ns() / 1_000, &mut now);
    now
}

/// An `l2_data` message of one event of `kind` with `stream`'s bids and asks, the message
/// and each level stamped with one time.
fn write_event(kind: &str, stream: &str, bids: &[Level], asks: &[Level], decimals: u32, out: &mut Vec<u8>) {
    use std::io::Write;
    let now = now();
    open_message("l2_data", &now, out);
    write!(out, r#""events":[{{"type":"{kind}","product_id":"{stream}","updates":["#)
        .expect("writing to a Vec cannot fail");
    let levels = (bids.iter().map(|level| ("bid", level))).chain(asks.iter().map(|level| ("offer", level)));
    for (index, (side, level)) in levels.enumerate() {
        if index > 0 {
            out.push(b',');
        }
        write!(out, r#"{{"side":"{side}","event_time":""#).expect("writing to a Vec cannot fail");
        out.extend_from_slice(&now);
        out.extend_from_slice(br#"","price_level":""#);
        level.price.append_decimal(decimals, out);
        out.extend_from_slice(br#"","new_quantity":""#);
        level.amount.append_decimal(crate::fixed::DECIMALS, out);
        out.extend_from_slice(br#""}"#);
    }
    out.extend_from_slice(b"]}]}");
}

/// The simulator's side of Advanced Trade. Its streams are the product ids; every message
/// it numbers on its connection.
impl Simulated for Coinbase {
    /// A snapshot event of the book.
    fn encode_book(&self, stream: &str, book: &TopBook, price_decimals: u32, out: &mut Vec<u8>) {
        write_event("snapshot", stream, book.bids.as_slice(), book.asks.as_slice(), price_decimals, out);
    }

    /// `level2` and `heartbeats` subscriptions and unsubscriptions, each answered by one
    /// `subscriptions` message; another channel refused as Coinbase refuses it.
    fn answer_request(&self, request: &str) -> Option<Answer> {
        let request: serde_json::Value = serde_json::from_str(request).ok()?;
        let kind = request.get("type")?.as_str()?;
        let products = || -> Option<Vec<String>> {
            let ids = request.get("product_ids")?.as_array()?;
            ids.iter().map(|id| id.as_str().map(str::to_owned)).collect()
        };
        let (level2, heartbeats) = match request.get("channel")?.as_str()? {
            "level2" => (products()?, true),
            "heartbeats" => (Vec::new(), true),
            _ => {
        let error = r#"{"type":"error","message":"authentication failure"}"#;
                return Some(Answer {
                    replies: vec![error.to_owned()],
                    ..Answer::default()
                });
            }
        };
        let mut listed = Vec::new();
        open_message("subscriptions", &now(), &mut listed);
        let channels = match heartbeats && level2.is_empty() {
            true => serde_json::json!({"heartbeats": ["heartbeats"]}),
            false => serde_json::json!({"level2": level2}),
        };
        let events = serde_json::json!([{ "subscriptions": channels }]);
        listed.extend_from_slice(format!(r#""events":{events}}}"#).as_bytes());
        let replies = vec![String::from_utf8(listed).expect("JSON is UTF-8")];
        match kind {
            "subscribe" => Some(Answer {
                subscribe: level2,
                replies,
                ..Answer::default()
            }),
            "unsubscribe" => Some(Answer {
                unsubscribe: level2,
                replies,
                ..Answer::default()
            }),
            _ => None,
        }
    }

    /// The simulator's books are 50 levels deep (the venue sends whole books).
    fn levels_on_stream(&self, _stream: &str) -> usize {
        50
    }

    fn encode_diff(
        &self,
        stream: &str,
        update: &BookUpdate,
        _checksum: Option<u32>,
        price_decimals: u32,
        _unix_ms: u64,
        out: &mut Vec<u8>,
    ) {
        write_event("update", stream, &update.bids, &update.asks, price_decimals, out);
    }

    /// The snapshot that starts a subscription, on the stream.
    fn encode_snapshot(
        &self,
        stream: &str,
        snapshot: &BookUpdate,
        _on: SnapshotSource,
        _checksum: Option<u32>,
        price_decimals: u32,
        out: &mut Vec<u8>,
    ) {
        write_event("snapshot", stream, &snapshot.bids, &snapshot.asks, price_decimals, out);
    }

    /// Ids are the updates' times, in microseconds, increasing (the wire numbers
    /// messages, not a book's events).
    fn next_event_ids(&self, last_id: u64, _changes: u64, now_us: u64) -> (u64, u64) {
        let stamp = now_us.max(last_id + 1);
        (stamp, stamp)
    }

    fn initial_event_id(&self, now_us: u64) -> u64 {
        now_us
    }

    /// `{"channel":"heartbeats",…,"events":[{"current_time":…,"heartbeat_counter":N}]}`,
    /// as recorded.
    fn heartbeat(&self, counter: u64) -> Option<String> {
        let (mut frame, now) = (Vec::new(), now());
        open_message("heartbeats", &now, &mut frame);
        frame.extend_from_slice(br#""events":[{"current_time":""#);
        frame.extend_from_slice(&now);
        frame.extend_from_slice(format!(r#"","heartbeat_counter":{counter}}}]}}"#).as_bytes());
        Some(String::from_utf8(frame).expect("JSON is UTF-8"))
    }

    /// The encoders' messages take the connection's numbers; an error message none.
    fn number_message(&self, frame: &str, number: u64) -> Option<String> {
        let at = frame.find(UNNUMBERED)?;
        let number = format!(r#""sequence_num":{number},"#);
        Some([&frame[..at], &number, &frame[at + UNNUMBERED.len()..]].concat())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RECORDED_SNAPSHOT: &str = include_str!(
        "../../tests/fixtures/coinbase/advanced_trade_l2_data_snapshot_BTC-PERP-INTX_truncated_2026-09-07.json"
    );

    /// Frames in the layout Coinbase writes: the recorded snapshot, and the simulator's
    /// update and snapshot (its encoder writes that layout).
    fn usual_frames() -> Vec<Vec<u8>> {
        let level = |price: &str, amount: &str| Level {
            price: price.parse().unwrap(),
            amount: amount.parse().unwrap(),
        };
        let update = BookUpdate {
            bids: vec![level("79943.9", "2.9105"), level("79943.5", "0")],
            asks: vec![level("79944.1", "1")],
            ..BookUpdate::default()
        };
        let mut frames = vec![RECORDED_SNAPSHOT.trim().as_bytes().to_vec()];
        for snapshot in [false, true] {
            let mut frame = Vec::new();
            let kind = if snapshot { "snapshot" } else { "update" };
            write_event(kind, "BTC-USD", &update.bids, &update.asks, 1, &mut frame);
            let numbered = Coinbase.number_message(std::str::from_utf8(&frame).unwrap(), 7);
            frames.push(numbered.unwrap().into_bytes());
        }
        frames
    }

    /// Whether the layout fast path read `frame`; what it read is what the general walk
    /// reads.
    fn fast_path_agrees(frame: &[u8]) -> Result<bool, proptest::test_runner::TestCaseError> {
        let (mut fast, mut general) = (BookUpdate::default(), BookUpdate::default());
        let Some(message) = decode_usual_layout(frame, 1000, &mut fast) else {
            return Ok(false);
        };
        let general_message = decode_message(frame, 1000, &mut general);
        proptest::prop_assert_eq!(general_message, Ok(message));
        proptest::prop_assert_eq!(fast, general);
        Ok(true)
    }

    #[test]
    fn the_usual_layout_takes_the_fast_path() {
        for frame in usual_frames() {
            let text = String::from_utf8_lossy(&frame);
            assert!(fast_path_agrees(&frame).unwrap(), "{text}");
        }
    }

    proptest::proptest! {
        /// Whatever the layout fast path accepts, the general walk reads the same way: a
        /// frame of the usual layout with one edit, mostly where its literals and values
        /// are.
        #[test]
        fn the_layout_fast_path_agrees_with_the_general_walk(
            which in 0usize..3,
            edit in crate::venue::layout_edits::edit(),
        ) {
            let mut frame = usual_frames()[which].clone();
            crate::venue::layout_edits::apply(&mut frame, edit);
            fast_path_agrees(&frame)?;
        }
    }

    /// Whether the level fast path read `object` (followed by `rest`); what it read is
    /// what the object walk reads, up to the same byte.
    fn level_fast_path_agrees(object: &[u8]) -> Result<bool, proptest::test_runner::TestCaseError> {
        let mut fast = Walker::new(object);
        let Some(level) = usual_level(&mut fast) else {
            return Ok(false);
        };
        let mut walked = Walker::new(object);
        proptest::prop_assert_eq!(walked.tagged_level(LEVEL, None), Ok(level));
        proptest::prop_assert_eq!(walked.position(), fast.position());
        Ok(true)
    }

    const RECORDED_LEVEL: &[u8] = br#"{"side":"offer","event_time":"2026-09-07T01:57:58.894355Z","price_level":"79944.1","new_quantity":"1.2"},"#;

    #[test]
    fn the_usual_level_layout_takes_the_level_fast_path() {
        let without_time = br#"{"side":"bid","price_level":"79943.9","new_quantity":"3.0105"}]"#;
        for object in [RECORDED_LEVEL, without_time] {
            assert!(level_fast_path_agrees(object).unwrap());
        }
        // Another order, a member after the amount, whitespace: the walk's.
        for object in [
            &br#"{"price_level":"1","side":"bid","new_quantity":"1"}"#[..],
            br#"{"side":"bid","price_level":"1","new_quantity":"1","x":1}"#,
            br#"{"side": "bid","price_level":"1","new_quantity":"1"}"#,
        ] {
            assert!(!level_fast_path_agrees(object).unwrap());
        }
    }

    proptest::proptest! {
        /// Whatever the level fast path accepts, the object walk reads the same way: the
        /// recorded level with one byte replaced, inserted or removed.
        #[test]
        fn the_level_fast_path_agrees_with_the_object_walk(
            at in 0usize..RECORDED_LEVEL.len(),
            kind in 0usize..3,
            byte in proptest::sample::select(&b" ,:}]{[\"0159.abdfo-"[..]),
        ) {
            let mut object = RECORDED_LEVEL.to_vec();
            match kind {
                0 => object[at] = byte,
                1 => object.insert(at, byte),
                _ => {
                    object.remove(at);
                }
            }
            level_fast_path_agrees(&object)?;
        }
    }

    #[test]
    fn products_are_spot_pairs_or_intx_perpetuals() {
        for product in ["BTC-USD", "BTC-PERP-INTX", "I12-BTC"] {
            assert_eq!(Coinbase.check_symbol(product), Ok(()), "{product}");
        }
        for refused in ["btc-usd", "BTCUSD", "BTC-USD-SWAP", "-USD", "BTC-USD-INTX", "BTC--USD"] {
            assert!(Coinbase.check_symbol(refused).is_err(), "{refused}");
        }
    }

    /// The simulator numbers its messages where the encoders leave the place for it, and
    /// the decoder reads the number.
    #[test]
    fn the_simulator_numbers_the_messages_it_encodes() {
        let frame = String::from_utf8(usual_frames().pop().unwrap()).unwrap();
        let mut out = BookUpdate::default();
        Coinbase::decode_diff(frame.as_bytes(), 10, &mut out).unwrap();
        assert_eq!(out.message_number, Some(7));
        let heartbeat = Coinbase.number_message(&Coinbase.heartbeat(3).unwrap(), 8).unwrap();
        let message = Coinbase::decode_diff(heartbeat.as_bytes(), 10, &mut out);
        assert_eq!((message, out.message_number), (Ok(Message::SubscriptionsAlive), Some(8)));
                let heartbeat = Coinbase.number_message(&Coinbase.heartbeat(3).unwrap(), 8).unwrap();
        let message = Coinbase::decode_diff(heartbeat.as_bytes(), 10, &mut out);
        assert_eq!((message, out.message_number), (Ok(Message::SubscriptionsAlive), Some(8)));
        let error = r#"{"type":"error","message":"authentication failure"}"#;
        assert_eq!(Coinbase.number_message(error, 8), None);
        let answer = Coinbase.answer_request(r#"{"type":"subscribe","channel":"heartbeats"}"#);
        let ack = Coinbase.number_message(&answer.unwrap().replies[0], 9).unwrap();
        let message = Coinbase::decode_diff(ack.as_bytes(), 10, &mut out);
        assert!(matches!(message, Ok(Message::SubscribeResult { accepted: true, .. })));
        assert_eq!(out.message_number, Some(9));
    }
}
