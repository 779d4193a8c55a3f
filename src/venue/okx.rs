//! OKX, API v5, public channels `books` (diff mode: 400 levels, a snapshot then updates)
//! and `books5` (snapshot mode: the top 5, whole each time).
//!
//! Docs: <https://www.okx.com/docs-v5/en/#order-book-trading-market-data-ws-order-book-channel>
//! (see also `../shared/fixtures/PROTOCOLS.md`, section 5).
//!
//! A subscription (`{"id":"1","op":"subscribe","args":[{"channel":"books","instId":
//! "BTC-USDT"}]}`) is acknowledged once per argument, naming it
//! (`{"id":"1","event":"subscribe","arg":{"channel":"books","instId":"BTC-USDT"},
//! "connId":"a4d3ae55"}`); a refusal is an `"event":"error"` that names only the request.
//! Levels are `[price, size, "0", orders]`, all strings, each number written in its
//! shortest form. A real `books` update (`fixtures/okx/books_BTC-USDT_subscribe_ack_snapshot_updates_2022.jsonl`,
//! shortened):
//!
//! ```text
//! {"arg":{"channel":"books","instId":"BTC-USDT"},"action":"update","data":[{"asks":
//!  [["30243.5","1.44679","0","6"],…],"bids":[…],"ts":"1652459233856","checksum":-652563973}]}
//! ```
//!
//! Sequencing. Since 2023 each message carries `seqId` and `prevSeqId`: a snapshot has
//! `prevSeqId = -1`, each update's `prevSeqId` is the last message's `seqId` (the ids are
//! not consecutive), `seqId == prevSeqId` with empty sides is a keep-alive, and after a
//! maintenance `seqId < prevSeqId` is accepted while the chain holds ([`SeqIdChain`]).
//! Anything else is a gap: that instrument is resynchronised. The 2022 recording has
//! neither id; such messages chain to anything, and their checksum is the check.
//!
//! Snapshots. Until 2026 a subscription started with a snapshot on the stream
//! (`"action":"snapshot"`), and every message carried a CRC32 of the top 25 levels a side.
//! OKX's changelog (updated 2026-02-12) announced that `books` stops sending both: the
//! first message is an update, `"checksum":0`, and the book is seeded from
//! `GET /api/v5/market/books`, whose answer carries the snapshot's `seqId`; the buffered
//! updates are applied from the one with `prevSeqId <= snapshot.seqId < seqId` on. Both
//! forms are read: the venue's snapshots come from REST (a gap or a bad checksum fetches
//! one, joined to the buffered updates), and a snapshot on the stream, where OKX still
//! sends one, replaces the book without a request. A checksum of 0 is no checksum.
//! PROTOCOLS.md marks as uncertain that the checksum reads 0 rather than being left out
//! from 2026-06 on; both read the same here. The REST `seqId` and the joining rule are the
//! changelog's; no recording of that form exists to verify them on.
//!
//! Control frames: the text `pong`, answering the client's text `ping` (OKX closes a
//! connection that is quiet for 30 s), and `{"event":"notice","code":"64008",…}`, sent
//! 30 s before a service upgrade closes the connection: the client reconnects.
//!
//! Amounts: spot sizes are in the base currency. Linear (USDT- and USDC-margined) SWAP and
//! FUTURES sizes are contracts of a fixed amount of the base currency (`ctVal`: 0.01 BTC
//! for `BTC-USDT-SWAP`): such an instrument needs its contract size configured
//! (`contract_sizes`), and its books are merged as contracts times it. Inverse contracts
//! (`BTC-USD-SWAP`) are a number of USD, whose amount in the base currency is a division
//! by the price, not exact; they are refused, as are options.

use super::{Acked, Answer, Checksum, ConnectBudget, Decode, DecodeError, LevelShape, Message, Simulated, SnapshotSource, Snapshots, StreamKind, Streams, SubscribeRequest, UNSUBSCRIBE_REQUEST_ID, Venue, VenueFacts};
use super::wire::{Seen, check_sorted};
use crate::book::{BookUpdate, DepthBook, Level, Side, TopBook, WireDecimals};
use crate::fixed::{DECIMALS, FixedPoint};
use crate::sync::Sequencing;
use crate::walker::Walker;

pub struct Okx;

/// The diff channel, and the levels a side OKX keeps in it.
const DIFF_CHANNEL: &str = "books";
const DIFF_LEVELS: usize = 400;
/// The snapshot channel, and its levels a side.
const TOP_CHANNEL: &str = "books5";
const TOP_LEVELS: usize = 5;

/// Levels a side the checksum covers.
const CHECKSUM_LEVELS: usize = 25;

/// "Total args of one request ≤ 4096 bytes" (PROTOCOLS.md, OKX): 50 arguments of the
/// longest instrument (`{"channel":"books5","instId":"…"}` with a 32-character id, and a
/// comma: 67 bytes) are 3350.
const ARGS_PER_REQUEST: usize = 50;
const MAX_INST_ID_LEN: usize = 32;

/// The notice OKX sends before a service upgrade closes the connection.
const SERVICE_UPGRADE: &[u8] = b"64008";

const LEVEL: LevelShape = LevelShape::PairThenMore;

// Top-level members.
const ARG: u32 = 0;
const ACTION: u32 = 1;
const DATA: u32 = 2;
const EVENT: u32 = 3;
const CODE: u32 = 4;
const ID: u32 = 5;
// Members of a `data` element.
const ASKS: u32 = 6;
const BIDS: u32 = 7;
const SEQ_ID: u32 = 8;
const PREV_SEQ_ID: u32 = 9;
const CHECKSUM: u32 = 10;
const TS: u32 = 11;
const INST_ID: u32 = 12;
// Members of `arg`.
const CHANNEL: u32 = 13;
const ARG_INST_ID: u32 = 14;

/// What a book message's `data` element must hold.
const BOOK_KEYS: [(u32, &str); 2] = [(ASKS, "asks"), (BIDS, "bids")];

/// A frame's members other than the sides, by the general object walk: any order,
/// unknown members skipped.
#[derive(Default)]
struct Members<'a> {
    seen: Seen,
    channel: &'a [u8],
    /// `arg.instId`: the stream.
    inst_id: &'a [u8],
    /// `data[0].instId`, where sent (`books5`).
    data_inst_id: &'a [u8],
    action: &'a [u8],
    event: &'a [u8],
    code: &'a [u8],
    id: &'a [u8],
    /// `data` elements.
    elements: usize,
    seq_id: u64,
    prev_seq_id: i64,
    checksum: i64,
    ts: u64,
}

/// Walks `frame`, handing each side of the first `data` element to `side`.
fn walk<'a>(
    frame: &'a [u8],
    mut side: impl FnMut(&mut Walker<'a>, Side) -> Result<(), DecodeError>,
) -> Result<Members<'a>, DecodeError> {
    let mut walker = Walker::new(frame);
    let mut members = Members::default();
    walker.object(|walker, key| {
        let seen = &mut members.seen;
        match key {
            b"arg" => {
                seen.mark(ARG, "arg")?;
                walker.object(|walker, key| {
                    match key {
                        b"channel" => {
                            members.seen.mark(CHANNEL, "channel")?;
                            members.channel = walker.string()?;
                        }
                        b"instId" => {
                            members.seen.mark(ARG_INST_ID, "instId")?;
                            members.inst_id = walker.string()?;
                        }
                        _ => walker.skip_value()?,
                    }
                    Ok(())
                })?;
            }
            b"action" => {
                seen.mark(ACTION, "action")?;
                members.action = walker.string()?;
            }
            b"event" => {
                seen.mark(EVENT, "event")?;
                members.event = walker.string()?;
            }
            b"code" => {
                seen.mark(CODE, "code")?;
                members.code = walker.string()?;
            }
            b"id" => {
                seen.mark(ID, "id")?;
                members.id = walker.string()?;
            }
            b"data" => {
                seen.mark(DATA, "data")?;
                walker.elements(|walker| {
                    members.elements += 1;
                    if members.elements > 1 || walker.peek()? != b'{' {
                        return walker.skip_value(); // refused below if a book's
                    }
                    walker.object(|walker, key| data_member(walker, key, &mut members, &mut side))
                })?;
            }
            _ => walker.skip_value()?,
        }
        Ok(())
    })?;
    walker.finish()?;
    Ok(members)
}

/// A member of a `data` element: a side, an id, the checksum, the time.
fn data_member<'a>(
    walker: &mut Walker<'a>,
    key: &[u8],
    members: &mut Members<'a>,
    side: &mut impl FnMut(&mut Walker<'a>, Side) -> Result<(), DecodeError>,
) -> Result<(), DecodeError> {
    let seen = &mut members.seen;
    match key {
        b"asks" => {
            seen.mark(ASKS, "asks")?;
            side(walker, Side::Ask)?;
        }
        b"bids" => {
            seen.mark(BIDS, "bids")?;
            side(walker, Side::Bid)?;
        }
        b"seqId" => {
            seen.mark(SEQ_ID, "seqId")?;
            members.seq_id = walker.unsigned()?;
        }
        b"prevSeqId" => {
            seen.mark(PREV_SEQ_ID, "prevSeqId")?;
            members.prev_seq_id = walker.signed()?;
        }
        b"checksum" => {
            seen.mark(CHECKSUM, "checksum")?;
            members.checksum = walker.signed()?;
        }
        b"ts" => {
            seen.mark(TS, "ts")?;
            members.ts = walker.unsigned()?;
        }
        b"instId" => {
            seen.mark(INST_ID, "instId")?;
            members.data_inst_id = walker.string()?;
        }
        _ => walker.skip_value()?,
    }
    Ok(())
}

impl<'a> Members<'a> {
    /// What a frame that is no book message said.
    fn control(&self) -> Result<Message<'a>, DecodeError> {
        match self.event {
            b"subscribe" if self.inst_id.is_empty() => Err(DecodeError::MissingKey("instId")),
            b"subscribe" => Ok(Message::SubscribeResult {
                accepted: true,
                acked: Acked::Stream(self.inst_id),
            }),
            // An unsubscription's refusal (of a subscription already gone) changes nothing.
            b"error" if self.id == UNSUBSCRIBE_REQUEST_ID.to_string().as_bytes() => {
                Ok(Message::Ignored)
            }
            // Only subscriptions are asked for: an error refuses one, naming only the request.
            b"error" => Ok(Message::SubscribeResult {
                accepted: false,
                acked: Acked::Oldest,
            }),
            b"notice" if self.code == SERVICE_UPGRADE => Ok(Message::Reconnect),
            b"" if self.seen.has(ARG) => Ok(Message::Ignored), // another channel's push
            b"" => Err(DecodeError::UnknownMessage("OKX v5 message")),
            _ => Ok(Message::Ignored),
        }
    }

    /// The checks every book message passes: one `data` element with both sides, of the
    /// instrument its `arg` names.
    fn check_book(&self) -> Result<(), DecodeError> {
        if !self.seen.has(DATA) {
            return Err(DecodeError::MissingKey("data"));
        }
        if self.elements != 1 {
            return Err(DecodeError::Invalid("a book message holds one data element"));
        }
        self.seen.require(&BOOK_KEYS)?;
        if self.inst_id.is_empty() {
            return Err(DecodeError::MissingKey("instId"));
        }
        if self.seen.has(INST_ID) && self.data_inst_id != self.inst_id {
            return Err(DecodeError::Invalid("a book's instId is its arg's"));
        }
        Ok(())
    }

    /// The checksum a message claims: `None` where it sends none, or 0.
    fn claimed_checksum(&self) -> Result<Option<u32>, DecodeError> {
        let checksum = i32::try_from(self.checksum)
            .map_err(|_| DecodeError::Invalid("a checksum of 32 bits, signed"))?;
        // The CRC's bits, as the unsigned value the book's checksum is compared with.
        Ok((checksum != 0).then_some(checksum as u32))
    }
}

/// One frame of a `books` connection.
fn decode_diff_message<'a>(
    frame: &'a [u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<Message<'a>, DecodeError> {
    if frame == b"pong" {
        return Ok(Message::Heartbeat);
    }
    out.clear();
    let members = walk(frame, |walker, side| {
        let levels = match side {
            Side::Bid => &mut out.bids,
            Side::Ask => &mut out.asks,
        };
        walker.all_shaped_levels(LEVEL, None, max_levels, levels, None)
    })?;
    if members.channel != DIFF_CHANNEL.as_bytes() || members.seen.has(EVENT) {
        return members.control();
    }
    members.check_book()?;
    out.is_snapshot = match members.action {
        b"snapshot" => true,
        b"update" => false,
        b"" => return Err(DecodeError::MissingKey("action")),
        _ => return Err(DecodeError::Invalid("a book message's action")),
    };
    let sequenced = members.seen.has(SEQ_ID);
    if sequenced != members.seen.has(PREV_SEQ_ID) {
        return Err(DecodeError::Invalid("seqId and prevSeqId together"));
    }
    if sequenced {
        // A snapshot starts a chain (prevSeqId -1); an update continues one.
        (out.first_id, out.last_id) = match (out.is_snapshot, members.prev_seq_id) {
            (true, _) => (members.seq_id, members.seq_id),
            (false, prev) => (
                u64::try_from(prev).map_err(|_| DecodeError::Invalid("an update's prevSeqId"))?,
                members.seq_id,
            ),
        };
    }
    out.checksum = members.claimed_checksum()?;
    if out.is_snapshot {
        check_sorted(Side::Bid, &out.bids)?;
        check_sorted(Side::Ask, &out.asks)?;
    }
    Ok(Message::Book {
        stream: members.inst_id,
    })
}

/// A `books5` message in the layout OKX sends (every recording's: these members in this
/// order, no whitespace), read by comparing the bytes between the values with the layout
/// instead of walking the objects, which cost as much as reading its ten levels. `None`
/// for any other frame, or an error in this one; then the general walk reads it, and gives
/// the same answer for every frame this accepts.
fn decode_usual_top<'a>(frame: &'a [u8], depth: usize, out: &mut TopBook) -> Option<Message<'a>> {
    let mut walker = Walker::new(frame);
    walker
        .skip_exactly(br#"{"arg":{"channel":"books5","instId":"#)
        .then_some(())?;
    let inst_id = walker.string().ok()?;
    walker.skip_exactly(br#"},"data":[{"asks":"#).then_some(())?;
    walker
        .shaped_levels(LEVEL, Side::Ask, depth, &mut out.asks)
        .ok()?;
    walker.skip_exactly(br#","bids":"#).then_some(())?;
    walker
        .shaped_levels(LEVEL, Side::Bid, depth, &mut out.bids)
        .ok()?;
    walker.skip_exactly(br#","instId":"#).then_some(())?;
    (walker.string().ok()? == inst_id).then_some(())?;
    walker.skip_exactly(br#","ts":"#).then_some(())?;
    walker.unsigned().ok()?;
    walker.skip_exactly(br#","seqId":"#).then_some(())?;
    out.venue_sequence = walker.unsigned().ok()?;
    walker.skip_exactly(b"}]}").then_some(())?;
    walker.finish().ok()?;
    Some(Message::Book { stream: inst_id })
}

/// One frame of a `books5` connection: the top `depth` levels a side into `out`.
fn decode_top_message<'a>(
    frame: &'a [u8],
    depth: usize,
    out: &mut TopBook,
) -> Result<Message<'a>, DecodeError> {
    if frame == b"pong" {
        return Ok(Message::Heartbeat);
    }
    out.clear();
    if let Some(message) = decode_usual_top(frame, depth, out) {
        return Ok(message);
    }
    decode_top_general(frame, depth, out)
}

/// A `books5` frame by the general object walk.
fn decode_top_general<'a>(
    frame: &'a [u8],
    depth: usize,
    out: &mut TopBook,
) -> Result<Message<'a>, DecodeError> {
    out.clear();
    let members = walk(frame, |walker, side| {
        let levels = match side {
            Side::Bid => &mut out.bids,
            Side::Ask => &mut out.asks,
        };
        walker.shaped_levels(LEVEL, side, depth, levels)
    })?;
    if members.channel != TOP_CHANNEL.as_bytes() || members.seen.has(EVENT) {
        return members.control();
    }
    members.check_book()?;
    // `seqId` orders the books; a message without one (before 2023) by its time.
    out.venue_sequence = match members.seen.has(SEQ_ID) {
        true => members.seq_id,
        false => members.ts,
    };
    Ok(Message::Book {
        stream: members.inst_id,
    })
}

/// The REST snapshot: `{"code":"0","msg":"","data":[{"asks":…,"bids":…,"ts":…,"seqId":…}]}`.
fn decode_rest_snapshot(
    body: &[u8],
    max_levels: usize,
    out: &mut BookUpdate,
) -> Result<(), DecodeError> {
    out.clear();
    let members = walk(body, |walker, side| {
        let levels = match side {
            Side::Bid => &mut out.bids,
            Side::Ask => &mut out.asks,
        };
        walker.all_shaped_levels(LEVEL, Some(side), max_levels, levels, None)
    })?;
    if members.code != b"0" {
        return Err(DecodeError::Invalid("a REST answer with code \"0\""));
    }
    if !members.seen.has(DATA) {
        return Err(DecodeError::MissingKey("data"));
    }
    if members.elements != 1 {
        return Err(DecodeError::Invalid("a snapshot holds one data element"));
    }
    members.seen.require(&BOOK_KEYS)?;
    if !members.seen.has(SEQ_ID) {
        // Without it the snapshot cannot be joined to the updates.
        return Err(DecodeError::MissingKey("seqId"));
    }
    out.first_id = members.seq_id;
    out.last_id = members.seq_id;
    Ok(())
}

/// OKX's `seqId`/`prevSeqId` chain. An update covers `prevSeqId..seqId` (`first_id`,
/// `last_id`); it follows a book at `last_id` when its `prevSeqId` is that id, or, first
/// after a REST snapshot taken between two of OKX's updates, when the snapshot's id lies
/// inside it. An
/// update that does neither and is not older is a gap. Messages without ids (0, 0)
/// chain to each other.
pub struct SeqIdChain;

impl Sequencing for SeqIdChain {
    /// Older than the book (a duplicate, a reordered update). A keep-alive at the book's
    /// id, and an update after a sequence reset (`seqId < prevSeqId`), chain.
    fn is_contained(&self, update: &BookUpdate, last_id: u64, _snapshot_id: u64) -> bool {
        update.first_id != last_id && update.last_id <= last_id
    }

    fn is_gap(&self, update: &BookUpdate, last_id: u64, snapshot_id: u64) -> bool {
        let chains = update.first_id == last_id;
        let spans = update.first_id < last_id && last_id < update.last_id;
        !(chains || spans && last_id == snapshot_id)
    }

    /// "Apply the buffered updates from the one with `prevSeqId <= snapshot.seqId <
    /// seqId`": the oldest buffered update must not start after the snapshot.
    fn joins(&self, snapshot_id: u64, first: &BookUpdate) -> bool {
        first.first_id <= snapshot_id
    }

    fn gap_event_starts_buffer(&self) -> bool {
        true
    }
}

/// The number's text as OKX writes it: the shortest, without trailing fractional zeros
/// (`"8477"`, `"0.0000102"`; every number of every recording is written so).
fn shortest_text(value: FixedPoint) -> crate::fixed::DecimalText {
    let scale = 10u64.pow(DECIMALS);
    let mut fraction = value.raw() % scale;
    let mut decimals = DECIMALS;
    if fraction == 0 {
        decimals = 0;
    }
    while fraction != 0 && fraction.is_multiple_of(10) {
        fraction /= 10;
        decimals -= 1;
    }
    value.with_decimals(decimals)
}

/// OKX's checksum: the best 25 bids and asks interleaved, `bid1px:bid1sz:ask1px:ask1sz:…`
/// (the longer side's remaining levels after the shorter side ends), each number's wire
/// text; CRC32, which OKX sends as a signed integer. The text is built on the stack and
/// hashed in one call, so the check allocates nothing.
fn book_checksum(book: &DepthBook) -> u32 {
    // 100 numbers of at most 21 bytes, each followed by a ':'.
    let mut text = [0u8; 4 * CHECKSUM_LEVELS * 22];
    let mut len = 0;
    let mut push = |value: FixedPoint| {
        let number = shortest_text(value);
        let bytes = number.as_bytes();
        text[len..len + bytes.len()].copy_from_slice(bytes);
        text[len + bytes.len()] = b':';
        len += bytes.len() + 1;
    };
    let (mut bids, mut asks) = (
        book.levels(Side::Bid).take(CHECKSUM_LEVELS),
        book.levels(Side::Ask).take(CHECKSUM_LEVELS),
    );
    loop {
        let (bid, ask) = (bids.next(), asks.next());
        if bid.is_none() && ask.is_none() {
            break;
        }
        for level in [bid, ask].into_iter().flatten() {
            push(level.price);
            push(level.amount);
        }
    }
    crc32fast::hash(&text[..len.saturating_sub(1)])
}

/// The instrument a simulator stream names: `BTC-USDT`, or `books5:BTC-USDT` for the
/// simulator's snapshot streams (its diff and snapshot streams of one instrument differ
/// by name, as the service's, one kind a connection, need not).
fn stream_inst_id(stream: &str) -> &str {
    stream.strip_prefix("books5:").unwrap_or(stream)
}

/// The requests for `op` on `channel` for `inst_ids`, 50 arguments a request, each with
/// `id` (OKX acknowledges each argument by its instrument).
fn requests(op: &str, channel: &str, inst_ids: &[String], id: u64) -> Vec<SubscribeRequest> {
    super::wire::chunked_requests(inst_ids, ARGS_PER_REQUEST, None, |chunk| {
        let args: Vec<_> = chunk
            .iter()
            .map(|inst_id| serde_json::json!({"channel": channel, "instId": inst_id}))
            .collect();
        serde_json::json!({"id": id.to_string(), "op": op, "args": args}).to_string()
    })
}

fn channel_of(kind: StreamKind) -> &'static str {
    match kind {
        StreamKind::Snapshots => TOP_CHANNEL,
        StreamKind::Diff => DIFF_CHANNEL,
    }
}

impl Venue for Okx {
    const FACTS: VenueFacts = VenueFacts {
        name: "okx",
        exchange: "okx",
        // PROTOCOLS.md gives `wss://ws.okx.com:8443/ws/v5/public`; OKX stopped serving port
        // 8443 on 2026-10-31 (a developer's note of that month, and nautilus_trader's OKX URLs,
        // which dropped the port in 2026): the standard port.
        default_url: "wss://ws.okx.com/ws/v5/public",
        default_rest_url: "https://www.okx.com",
        // "New connections: 3 per second per IP" (PROTOCOLS.md, OKX, Limits).
        connect_budget: ConnectBudget {
            attempts: 3,
            per: std::time::Duration::from_secs(1),
        },
        // "Fewer than 30 deep channels per connection" (PROTOCOLS.md, OKX, Channels); the
        // 480 subscriptions an hour a connection allows are far from what 29 need.
        max_streams_per_connection: 29,
        snapshot_streams: true,
        binary_books: false,
        api_key_header: None,
        snapshots: SnapshotSource::Rest,
        sequencing: &SeqIdChain,
    };
}

impl Decode for Okx {
    fn decode<'a>(
        frame: &'a [u8],
        depth: usize,
        out: &mut TopBook,
    ) -> Result<Message<'a>, DecodeError> {
        decode_top_message(frame, depth, out)
    }

    fn decode_diff<'a>(
        frame: &'a [u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<Message<'a>, DecodeError> {
        decode_diff_message(frame, max_levels, out)
    }

    fn decode_snapshot(
        body: &[u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<(), DecodeError> {
        decode_rest_snapshot(body, max_levels, out)
    }
}

impl Checksum for Okx {
    fn checksum(book: &DepthBook, _decimals: WireDecimals) -> Option<u32> {
        Some(book_checksum(book))
    }
}

impl Streams for Okx {
    fn spot_symbol(&self, base: &str, quote: &str) -> String {
        format!("{base}-{quote}")
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

    /// "If no message arrives within N < 30 s, send the text frame `ping`" (PROTOCOLS.md,
    /// OKX, Keep-alive).
    fn client_ping(&self) -> Option<(std::time::Duration, &'static str)> {
        Some((std::time::Duration::from_secs(20), "ping"))
    }

    fn check_symbol(&self, symbol: &str) -> Result<(), String> {
        let parts = super::wire::dashed_codes(symbol, MAX_INST_ID_LEN).unwrap_or_default();
        if !(2..=3).contains(&parts.len()) {
            return Err(format!(
                "an OKX instrument id is BASE-QUOTE (spot), BASE-QUOTE-SWAP or \
                 BASE-QUOTE-YYMMDD (futures), upper-case, at most {MAX_INST_ID_LEN} characters; \
                 options are not merged"
            ));
        }
        if let [_, quote, expiry] = parts[..] {
            let futures = expiry.len() == 6 && expiry.bytes().all(|b| b.is_ascii_digit());
            if expiry != "SWAP" && !futures {
                return Err("an OKX derivative is BASE-QUOTE-SWAP or BASE-QUOTE-YYMMDD".into());
            }
            if quote == "USD" {
                return Err("inverse contracts are sized in USD, which is no exact amount of \
                            the base currency to merge: use the USDT or USDC contract"
                    .into());
            }
        }
        Ok(())
    }

    /// SWAP and FUTURES (a third part in the id) are sized in contracts.
    fn sized_in_contracts(&self, symbol: &str) -> bool {
        symbol.split('-').count() == 3
    }

    fn diff_stream_name(&self, symbol: &str) -> String {
        symbol.to_owned()
    }

    fn diff_stream_symbol(&self, stream: &str) -> Option<String> {
        (!stream.is_empty() && !stream.contains(':')).then(|| stream.to_owned())
    }
}

impl Snapshots for Okx {
    /// `GET /api/v5/market/books?instId=…&sz=…` (400 levels at most).
    fn snapshot_url(&self, rest_base: &str, symbol: &str, limit: usize) -> String {
        let size = limit.clamp(1, DIFF_LEVELS);
        format!("{rest_base}/api/v5/market/books?instId={symbol}&sz={size}")
    }

    fn snapshot_symbol(&self, url: &str) -> Option<String> {
        let (path, query) = url.split_once('?')?;
        if !path.ends_with("/api/v5/market/books") {
            return None;
        }
        let inst_id = query
            .split('&')
            .find_map(|pair| pair.strip_prefix("instId="))?;
        (!inst_id.is_empty()).then(|| inst_id.to_owned())
    }

    /// "REST books 40 requests per 2 s per IP" (PROTOCOLS.md, OKX, Limits): one each,
    /// against a budget of 1200 a minute.
    fn snapshot_weight(&self, _limit: usize) -> u32 {
        1
    }
}

/// Writes a side as OKX's `[["price","size","0","orders"],…]`, shortest numbers.
fn write_levels(levels: &[Level], out: &mut Vec<u8>) {
    out.push(b'[');
    for (index, level) in levels.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"[\"");
        out.extend_from_slice(shortest_text(level.price).as_bytes());
        out.extend_from_slice(b"\",\"");
        out.extend_from_slice(shortest_text(level.amount).as_bytes());
        let orders: &[u8] = if level.amount.is_zero() { b"0" } else { b"1" };
        out.extend_from_slice(b"\",\"0\",\"");
        out.extend_from_slice(orders);
        out.extend_from_slice(b"\"]");
    }
    out.push(b']');
}

/// A `books` message (`action`, the ids and the checksum as OKX writes them).
fn write_diff_message(
    inst_id: &str,
    action: &str,
    update: &BookUpdate,
    checksum: Option<u32>,
    unix_ms: u64,
    out: &mut Vec<u8>,
) {
    use std::io::Write;
    write!(
        out,
        r#"{{"arg":{{"channel":"{DIFF_CHANNEL}","instId":"{inst_id}"}},"action":"{action}","data":[{{"asks":"#
    )
    .expect("writing to a Vec cannot fail");
    write_levels(&update.asks, out);
    out.extend_from_slice(br#","bids":"#);
    write_levels(&update.bids, out);
    let checksum = checksum.map_or(0, |sum| sum as i32);
    let prev: i128 = match update.is_snapshot {
        true => -1,
        false => i128::from(update.first_id),
    };
    write!(
        out,
        r#","ts":"{unix_ms}","checksum":{checksum},"prevSeqId":{prev},"seqId":{}}}]}}"#,
        update.last_id
    )
    .expect("writing to a Vec cannot fail");
}

/// The simulator's side of OKX. Its diff streams are the instrument ids; its snapshot
/// streams `books5:<instId>`.
impl Simulated for Okx {
    /// A `books5` message.
    fn encode_book(&self, stream: &str, book: &TopBook, _price_decimals: u32, out: &mut Vec<u8>) {
        use std::io::Write;
        let inst_id = stream_inst_id(stream);
        write!(
            out,
            r#"{{"arg":{{"channel":"{TOP_CHANNEL}","instId":"{inst_id}"}},"data":[{{"asks":"#
        )
        .expect("writing to a Vec cannot fail");
        write_levels(book.asks.as_slice(), out);
        out.extend_from_slice(br#","bids":"#);
        write_levels(book.bids.as_slice(), out);
        let unix_ms = crate::clock::unix_ns() / 1_000_000;
        write!(
            out,
            r#","instId":"{inst_id}","ts":"{unix_ms}","seqId":{}}}]}}"#,
            book.venue_sequence
        )
        .expect("writing to a Vec cannot fail");
    }

    /// Subscriptions and unsubscriptions (an acknowledgement per argument; a channel
    /// other than `books` and `books5` refused, as OKX refuses what it does not know) and
    /// the text ping.
    fn answer_request(&self, request: &str) -> Option<Answer> {
        if request == "ping" {
            return Some(Answer {
                replies: vec!["pong".to_owned()],
                ping: true,
                ..Answer::default()
            });
        }
        let request: serde_json::Value = serde_json::from_str(request).ok()?;
        let op = request.get("op")?.as_str()?;
        let id = request.get("id").and_then(serde_json::Value::as_str);
        let mut answer = Answer::default();
        for arg in request.get("args")?.as_array()? {
            let channel = arg.get("channel")?.as_str()?;
            let inst_id = arg.get("instId")?.as_str()?;
            let stream = match channel {
                DIFF_CHANNEL => inst_id.to_owned(),
                TOP_CHANNEL => format!("{TOP_CHANNEL}:{inst_id}"),
                _ => {
                    let error = serde_json::json!({
                        "id": id, "event": "error", "code": "60018",
                        "msg": format!("Wrong URL or channel:{channel},instId:{inst_id} doesn't exist."),
                        "connId": "a4d3ae55",
                    });
                    answer.replies.push(error.to_string());
                    continue;
                }
            };
            let ack = serde_json::json!({
                "id": id, "event": op, "arg": {"channel": channel, "instId": inst_id},
                "connId": "a4d3ae55",
            });
            answer.replies.push(ack.to_string());
            match op {
                "subscribe" => answer.subscribe.push(stream),
                "unsubscribe" => answer.unsubscribe.push(stream),
                _ => return None,
            }
        }
        answer.depth = Some(DIFF_LEVELS);
        Some(answer)
    }

    fn reconnect_request(&self) -> Option<&'static str> {
        Some(
            r#"{"event":"notice","code":"64008","msg":"The connection will soon be closed for a service upgrade. Please reconnect.","connId":"a4d3ae55"}"#,
        )
    }

    fn levels_on_stream(&self, stream: &str) -> usize {
        match stream.starts_with("books5:") {
            true => TOP_LEVELS,
            false => DIFF_LEVELS,
        }
    }

    fn encode_diff(
        &self,
        stream: &str,
        update: &BookUpdate,
        checksum: Option<u32>,
        _price_decimals: u32,
        unix_ms: u64,
        out: &mut Vec<u8>,
    ) {
        write_diff_message(stream, "update", update, checksum, unix_ms, out);
    }

    /// A REST answer, or the `books` snapshot that starts a subscription in the
    /// protocol's in-band form.
    fn encode_snapshot(
        &self,
        stream: &str,
        snapshot: &BookUpdate,
        on: SnapshotSource,
        checksum: Option<u32>,
        _price_decimals: u32,
        out: &mut Vec<u8>,
    ) {
        use std::io::Write;
        let unix_ms = crate::clock::unix_ns() / 1_000_000;
        if on == SnapshotSource::InBand {
            let mut in_band = snapshot.clone();
            in_band.is_snapshot = true;
            write_diff_message(stream, "snapshot", &in_band, checksum, unix_ms, out);
            return;
        }
        out.extend_from_slice(br#"{"code":"0","msg":"","data":[{"asks":"#);
        write_levels(&snapshot.asks, out);
        out.extend_from_slice(br#","bids":"#);
        write_levels(&snapshot.bids, out);
        write!(out, r#","ts":"{unix_ms}","seqId":{}}}]}}"#, snapshot.last_id)
            .expect("writing to a Vec cannot fail");
    }

    /// `prevSeqId` is the last `seqId`; the ids are not consecutive.
    fn next_event_ids(&self, last_id: u64, changes: u64, _now_us: u64) -> (u64, u64) {
        (last_id, last_id + 7 + changes)
    }

    /// A `seqId` of the size of the 2026 recordings'.
    fn initial_event_id(&self, _now_us: u64) -> u64 {
        79_706_756_139
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(frame: &str) -> (Result<Message<'_>, DecodeError>, BookUpdate) {
        let mut out = BookUpdate::default();
        let message = Okx::decode_diff(frame.as_bytes(), 1000, &mut out);
        (message, out)
    }

    #[test]
    fn control_frames_are_classified() {
        let frames = [
            (
                r#"{"id":"1512","event":"subscribe","arg":{"channel":"books","instId":"BTC-USDT"},"connId":"a4d3ae55"}"#,
                Ok(Message::SubscribeResult {
                    accepted: true,
                    acked: Acked::Stream(b"BTC-USDT"),
                }),
            ),
            (
                r#"{"id":"1512","event":"error","code":"60012","msg":"Invalid request","connId":"a4d3ae55"}"#,
                Ok(Message::SubscribeResult {
                    accepted: false,
                    acked: Acked::Oldest,
                }),
            ),
            (
                r#"{"id":"0","event":"error","code":"60012","msg":"Invalid request","connId":"a4d3ae55"}"#,
                Ok(Message::Ignored),
            ),
            (
                r#"{"id":"0","event":"unsubscribe","arg":{"channel":"books","instId":"BTC-USDT"},"connId":"a4d3ae55"}"#,
                Ok(Message::Ignored),
            ),
            (Okx.reconnect_request().unwrap(), Ok(Message::Reconnect)),
            (
                r#"{"event":"notice","code":"64009","msg":"x","connId":"a4d3ae55"}"#,
                Ok(Message::Ignored),
            ),
            ("pong", Ok(Message::Heartbeat)),
            (
                r#"{"arg":{"channel":"bbo-tbt","instId":"BCH-USDT-SWAP"},"data":[{"asks":[["111.06","55154","0","2"]],"bids":[["111.05","57745","0","2"]],"ts":"1670324386802","seqId":363996337}]}"#,
                Ok(Message::Ignored),
            ),
            (
                r#"{"event":"subscribe","connId":"a4d3ae55"}"#,
                Err(DecodeError::MissingKey("instId")),
            ),
            (
                r#"{"connId":"a4d3ae55"}"#,
                Err(DecodeError::UnknownMessage("OKX v5 message")),
            ),
        ];
        for (frame, expected) in frames {
            assert_eq!(decode(frame).0, expected, "{frame}");
        }
    }

    const BOOKS5: [&str; 2] = [
        include_str!("../../tests/fixtures/okx/books5_BTC-USDT_ack_then_snapshots_2026-08-12.jsonl"),
        include_str!("../../tests/fixtures/okx/books5_BTC-USDT-SWAP_ack_then_snapshots_2026-08-12.jsonl"),
    ];

    /// The recorded `books5` messages.
    fn recorded_books5() -> Vec<Vec<u8>> {
        let lines = BOOKS5.iter().flat_map(|text| text.lines());
        lines
            .filter(|line| line.contains(r#""data""#))
            .map(|line| line.as_bytes().to_vec())
            .collect()
    }

    /// Whether the layout fast path read `frame`; what it read is what the general walk
    /// reads.
    fn fast_path_agrees(frame: &[u8]) -> Result<bool, proptest::test_runner::TestCaseError> {
        let (mut fast, mut general) = (TopBook::default(), TopBook::default());
        let Some(message) = decode_usual_top(frame, 10, &mut fast) else {
            return Ok(false);
        };
        let general_message = decode_top_general(frame, 10, &mut general);
        proptest::prop_assert_eq!(general_message, Ok(message));
        proptest::prop_assert_eq!(fast, general);
        Ok(true)
    }

    #[test]
    fn recorded_books5_messages_take_the_layout_fast_path() {
        for frame in recorded_books5() {
            assert!(fast_path_agrees(&frame).unwrap());
        }
    }

    proptest::proptest! {
        /// Whatever the layout fast path accepts, the general walk reads the same way: a
        /// recorded `books5` message with one edit, mostly where the layout's literals and
        /// values are.
        #[test]
        fn books5_layout_fast_path_agrees_with_the_general_walk(
            which in 0usize..4,
            edit in crate::venue::layout_edits::edit(),
        ) {
            let mut frame = recorded_books5()[which].clone();
            crate::venue::layout_edits::apply(&mut frame, edit);
            fast_path_agrees(&frame)?;
        }
    }

    /// The ids chain as the venue documents: a snapshot starts a chain, an update follows
    /// its `prevSeqId`, a keep-alive repeats the id, a reset goes down while chaining, a
    /// REST snapshot may fall inside an update; anything else is a gap or old.
    #[test]
    fn seq_ids_chain_as_documented() {
        let rule = SeqIdChain;
        let update = |prev, seq| BookUpdate {
            first_id: prev,
            last_id: seq,
            ..BookUpdate::default()
        };
        assert!(!rule.is_gap(&update(100, 130), 100, 0));
        assert!(!rule.is_gap(&update(130, 130), 130, 0), "a keep-alive");
        assert!(!rule.is_contained(&update(130, 130), 130, 0));
        assert!(!rule.is_gap(&update(130, 5), 130, 0), "a reset that chains");
        assert!(!rule.is_contained(&update(130, 5), 130, 0));
        assert!(rule.is_gap(&update(131, 150), 130, 0), "one missing");
        assert!(rule.is_contained(&update(100, 130), 130, 0), "a duplicate");
        assert!(rule.is_contained(&update(70, 100), 130, 0), "an older one");
        // A REST snapshot at 120, inside the update 100..130: that update applies, first
        // after it; later, an update starting before the book's id is a gap.
        assert!(!rule.is_contained(&update(100, 130), 120, 120));
        assert!(!rule.is_gap(&update(100, 130), 120, 120));
        assert!(rule.is_gap(&update(100, 130), 120, 90));
        assert!(rule.joins(120, &update(100, 130)));
        assert!(!rule.joins(99, &update(100, 130)), "the snapshot is too old");
        assert!(!rule.is_gap(&update(0, 0), 0, 0), "without ids: chained");
    }

    /// The checksum of the docs' example book, from its wire text (SOURCES.md: the
    /// example's own checksum does not match its data; this is the one computed there),
    /// and the text's form matters: `8477` is not `8477.0`.
    #[test]
    fn the_checksum_is_over_the_shortest_text() {
        assert_eq!(shortest_text("8477".parse().unwrap()).as_str(), "8477");
        assert_eq!(shortest_text("0.0000102".parse().unwrap()).as_str(), "0.0000102");
        assert_eq!(shortest_text("0.18050747".parse().unwrap()).as_str(), "0.18050747");
        assert_eq!(shortest_text("30236.10".parse().unwrap()).as_str(), "30236.1");
        let (message, snapshot) = decode(
            r#"{"arg":{"channel":"books","instId":"BTC-USDT"},"action":"snapshot","data":[{"asks":[["8476.98","415","0","13"],["8477","7","0","2"]],"bids":[["8476.97","256","0","12"],["8475.55","101","0","1"]],"ts":"1597026383085","checksum":-855196043,"prevSeqId":-1,"seqId":123456}]}"#,
        );
        assert_eq!(message, Ok(Message::Book { stream: b"BTC-USDT" }));
        assert!(snapshot.is_snapshot);
        assert_eq!((snapshot.first_id, snapshot.last_id), (123_456, 123_456));
        let mut book = DepthBook::new(400);
        book.replace(&snapshot);
        let text = "8476.97:256:8476.98:415:8475.55:101:8477:7";
        assert_eq!(book_checksum(&book), crc32fast::hash(text.as_bytes()));
    }

    #[test]
    fn subscriptions_round_trip_through_the_simulator() {
        let symbols: Vec<String> = (0..51).map(|n| format!("C{n}-USDT")).collect();
        let requests = Okx.subscribe_frames(&symbols, StreamKind::Diff, 400, 3);
        assert_eq!(requests.len(), 2, "50 arguments a request");
        assert_eq!((requests[0].streams.clone(), requests[1].streams.clone()), (0..50, 50..51));
        assert!(requests.iter().all(|request| request.id.is_none() && request.frame.len() <= 4096));
        let answer = Okx.answer_request(&requests[1].frame).unwrap();
        assert_eq!(answer.subscribe, ["C50-USDT"]);
        assert_eq!(
            decode(&answer.replies[0]).0,
            Ok(Message::SubscribeResult {
                accepted: true,
                acked: Acked::Stream(b"C50-USDT"),
            })
        );
        let top = Okx.subscribe_frames(&symbols[..1], StreamKind::Snapshots, 10, 1);
        assert!(top[0].frame.contains(r#""channel":"books5""#), "{}", top[0].frame);
        assert_eq!(Okx.answer_request(&top[0].frame).unwrap().subscribe, ["books5:C0-USDT"]);
        let unsubscribe = Okx.unsubscribe_frames(&symbols[..1], StreamKind::Diff, 400);
        let answer = Okx.answer_request(&unsubscribe[0]).unwrap();
        assert_eq!(answer.unsubscribe, ["C0-USDT"]);
        assert_eq!(decode(&answer.replies[0]).0, Ok(Message::Ignored));
        let pong = Okx.answer_request(Okx.client_ping().unwrap().1).unwrap();
        assert_eq!(decode(&pong.replies[0]).0, Ok(Message::Heartbeat));
        let url = Okx.snapshot_url("https://www.okx.com", "BTC-USDT", 1000);
        assert_eq!(url, "https://www.okx.com/api/v5/market/books?instId=BTC-USDT&sz=400");
        let path = url.strip_prefix("https://www.okx.com").unwrap();
        assert_eq!(Okx.snapshot_symbol(path).as_deref(), Some("BTC-USDT"));
        assert_eq!(Okx.snapshot_symbol(&url).as_deref(), Some("BTC-USDT"), "a whole URL");
        for accepted in ["BTC-USDT", "BTC-USDT-SWAP", "ETH-USDC-261225"] {
            assert!(Okx.check_symbol(accepted).is_ok(), "{accepted}");
        }
        assert!(!Okx.sized_in_contracts("BTC-USDT"));
        assert!(Okx.sized_in_contracts("BTC-USDT-SWAP"));
        assert!(Okx.sized_in_contracts("ETH-USDC-261225"));
        let refused = [
            "BTC-USD-SWAP",
            "BTC-USD-261225",
            "BTC-USD-261225-100000-C",
            "BTC-USDT-PERP",
            "btc-usdt",
            "BTCUSDT",
            "BTC--USDT",
        ];
        for refused in refused {
            assert!(Okx.check_symbol(refused).is_err(), "{refused}");
        }
    }

    /// The simulator's frames decode to what it encoded: updates with their ids and
    /// checksum, in-band snapshots, REST answers, `books5` messages.
    #[test]
    fn encoded_messages_decode_to_the_same_levels() {
        let level = |price: &str, amount: &str| Level {
            price: price.parse().unwrap(),
            amount: amount.parse().unwrap(),
        };
        let update = BookUpdate {
            first_id: 100,
            last_id: 130,
            bids: vec![level("30236.1", "0.18050747"), level("30230", "0")],
            asks: vec![level("30236.2", "0.001")],
            ..BookUpdate::default()
        };
        let mut frame = Vec::new();
        Okx.encode_diff("BTC-USDT", &update, Some(-308_733_687i32 as u32), 8, 1, &mut frame);
        let (message, decoded) = decode(std::str::from_utf8(&frame).unwrap());
        assert_eq!(message, Ok(Message::Book { stream: b"BTC-USDT" }));
        assert_eq!((&decoded.bids, &decoded.asks), (&update.bids, &update.asks));
        assert_eq!((decoded.first_id, decoded.last_id), (100, 130));
        assert_eq!(decoded.checksum, Some(-308_733_687i32 as u32));
        frame.clear();
        Okx.encode_diff("BTC-USDT", &update, None, 8, 1, &mut frame);
        assert!(std::str::from_utf8(&frame).unwrap().contains(r#""checksum":0,"#));
        assert_eq!(decode(std::str::from_utf8(&frame).unwrap()).1.checksum, None);
        let snapshot = BookUpdate {
            first_id: 130,
            last_id: 130,
            bids: vec![level("30236.1", "0.18050747")],
            asks: vec![level("30236.2", "0.001")],
            ..BookUpdate::default()
        };
        frame.clear();
        Okx.encode_snapshot("BTC-USDT", &snapshot, SnapshotSource::InBand, Some(7), 8, &mut frame);
        let (_, decoded) = decode(std::str::from_utf8(&frame).unwrap());
        assert!(decoded.is_snapshot);
        assert_eq!((decoded.last_id, decoded.checksum), (130, Some(7)));
        frame.clear();
        Okx.encode_snapshot("BTC-USDT", &snapshot, SnapshotSource::Rest, None, 8, &mut frame);
        let mut rest = BookUpdate::default();
        Okx::decode_snapshot(&frame, 400, &mut rest).unwrap();
        assert_eq!((&rest.bids, &rest.asks, rest.last_id), (&snapshot.bids, &snapshot.asks, 130));
        let mut top = TopBook::default();
        top.bids.push(level("30236.1", "0.18050747"));
        top.venue_sequence = 9;
        frame.clear();
        Okx.encode_book("books5:BTC-USDT", &top, 8, &mut frame);
        let mut decoded = TopBook::default();
        assert_eq!(
            Okx::decode(&frame, 10, &mut decoded),
            Ok(Message::Book { stream: b"BTC-USDT" })
        );
        assert_eq!((decoded.bids, decoded.venue_sequence), (top.bids, 9));
    }
}
