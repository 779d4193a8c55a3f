//! Bitstamp WebSocket API v2, live order book: channel `order_book_<pair>`.
//!
//! Docs: <https://www.bitstamp.net/websocket/v2/> (see also
//! `../shared/fixtures/PROTOCOLS.md`, section 2).
//!
//! Each data frame carries the top 100 bids and asks and replaces the previous book.
//! Everything is a string; price decimals depend on the pair, amounts have 8. Data frames
//! carry spaces after `:` and `,` or none, and the key order varies, so what a frame means
//! never depends on its byte layout: the two recorded layouts are read by a fast path that
//! compares the bytes around the values with the layout's, and any other frame by the
//! general object walk, which gives the same answer. A real frame
//! (`fixtures/bitstamp/order_book_btcusd_top100_samples_2020.jsonl`, shortened):
//!
//! ```text
//! {"data": {"timestamp": "1580336834", "microtimestamp": "1580336834607546",
//!  "bids": [["9328.28", "0.05925332"], ["9327.34", "0.43120000"], …],
//!  "asks": [["9337.10", "0.03000000"], …]}, "event": "data", "channel": "order_book_btcusd"}
//! ```
//!
//! Control frames (`fixtures/bitstamp/control_messages.jsonl`):
//! `{"event":"bts:subscription_succeeded","channel":"order_book_btcusd","data":{}}`,
//! `{"event":"bts:request_reconnect","channel":"","data":""}`,
//! `{"event":"bts:heartbeat","channel":"","data":{"status":"success"}}`, and
//! `bts:error` for a refused request. `microtimestamp` becomes the book's
//! `venue_sequence`.

use super::{Acked, Answer, Checksum, ConnectBudget, Decode, DecodeError, Message, Simulated, SnapshotSource, Snapshots, StreamKind, Streams, SubscribeRequest, Venue, VenueFacts};
use super::wire::{Seen};
use crate::book::{BookUpdate, Side, TopBook};
use crate::sync::Sequencing;
use crate::walker::Walker;

pub struct Bitstamp;

const EVENT: u32 = 0;
const CHANNEL: u32 = 1;
const DATA: u32 = 2;
const MICROTIMESTAMP: u32 = 3;
const BIDS: u32 = 4;
const ASKS: u32 = 5;

/// The channel prefix of the snapshot stream (`order_book_<pair>`).
pub const ORDER_BOOK_PREFIX: &str = "order_book_";
/// The channel prefix of the diff stream (`diff_order_book_<pair>`).
pub const DIFF_ORDER_BOOK_PREFIX: &str = "diff_order_book_";

/// Where a data object's members go: a top-N book or a diff event.
trait Sink {
    fn sequence(&mut self, microtimestamp: u64);
    fn side(&mut self, walker: &mut Walker<'_>, side: Side) -> Result<(), DecodeError>;
}

struct TopN<'o> {
    depth: usize,
    out: &'o mut TopBook,
}

impl Sink for TopN<'_> {
    fn sequence(&mut self, microtimestamp: u64) {
        self.out.venue_sequence = microtimestamp;
    }

    fn side(&mut self, walker: &mut Walker<'_>, side: Side) -> Result<(), DecodeError> {
        let levels = match side {
            Side::Bid => &mut self.out.bids,
            Side::Ask => &mut self.out.asks,
        };
        walker.levels(side, self.depth, levels)
    }
}

/// Every level, zero amounts included; `sorted` for REST snapshots.
struct AllLevels<'o> {
    sorted: bool,
    max_levels: usize,
    out: &'o mut BookUpdate,
}

impl Sink for AllLevels<'_> {
    fn sequence(&mut self, microtimestamp: u64) {
        self.out.first_id = microtimestamp;
        self.out.last_id = microtimestamp;
    }

    fn side(&mut self, walker: &mut Walker<'_>, side: Side) -> Result<(), DecodeError> {
        let levels = match side {
            Side::Bid => &mut self.out.bids,
            Side::Ask => &mut self.out.asks,
        };
        walker.all_levels(self.sorted.then_some(side), self.max_levels, levels)
    }
}

/// A data object's members (`{"timestamp":…,"microtimestamp":…,"bids":…,"asks":…}`).
fn data_member(
    walker: &mut Walker<'_>,
    key: &[u8],
    seen: &mut Seen,
    sink: &mut impl Sink,
) -> Result<(), DecodeError> {
    match key {
        b"microtimestamp" => {
            seen.mark(MICROTIMESTAMP, "microtimestamp")?;
            sink.sequence(walker.unsigned()?);
        }
        b"bids" => {
            seen.mark(BIDS, "bids")?;
            sink.side(walker, Side::Bid)?;
        }
        b"asks" => {
            seen.mark(ASKS, "asks")?;
            sink.side(walker, Side::Ask)?;
        }
        _ => walker.skip_value()?,
    }
    Ok(())
}

const DATA_KEYS: [(u32, &str); 3] = [
    (MICROTIMESTAMP, "microtimestamp"),
    (BIDS, "bids"),
    (ASKS, "asks"),
];

/// The bytes around the values of a book frame, in one of the layouts Bitstamp sends.
struct Layout {
    before_timestamp: &'static [u8],
    before_microtimestamp: &'static [u8],
    before_bids: &'static [u8],
    before_asks: &'static [u8],
    before_channel: &'static [u8],
    after_channel: &'static [u8],
}

/// One space after each `:` and `,`, `event` before `channel`: the 2020-01 recording, and
/// what the simulator sends.
const SPACED: Layout = Layout {
    before_timestamp: br#"{"data": {"timestamp": "#,
    before_microtimestamp: br#", "microtimestamp": "#,
    before_bids: br#", "bids": "#,
    before_asks: br#", "asks": "#,
    before_channel: br#"}, "event": "data", "channel": "#,
    after_channel: b"}",
};

/// No spaces, `channel` before `event`: the 2020-12 recording and every recorded diff
/// (2022).
const COMPACT: Layout = Layout {
    before_timestamp: br#"{"data":{"timestamp":"#,
    before_microtimestamp: br#","microtimestamp":"#,
    before_bids: br#","bids":"#,
    before_asks: br#","asks":"#,
    before_channel: br#"},"channel":"#,
    after_channel: br#","event":"data"}"#,
};

/// A book frame in one of the two layouts of the recorded frames, read by comparing the
/// bytes around the values with the layout's instead of walking the objects: the general
/// walk costs about as much as reading twenty levels. `None` for any other frame, or an
/// error in this one; then [`decode_any_layout`] reads it, and gives the same answer for
/// every frame this accepts.
fn decode_usual_layout<'a>(
    frame: &'a [u8],
    book_prefix: &str,
    sink: &mut impl Sink,
) -> Option<Message<'a>> {
    // Each call inlines with its layout's literals, so every compare has a known size.
    if frame.get(b"{\"data\":".len()) == Some(&b' ') {
        decode_in_layout(frame, &SPACED, book_prefix, sink)
    } else {
        decode_in_layout(frame, &COMPACT, book_prefix, sink)
    }
}

#[inline(always)]
fn decode_in_layout<'a>(
    frame: &'a [u8],
    layout: &Layout,
    book_prefix: &str,
    sink: &mut impl Sink,
) -> Option<Message<'a>> {
    let mut walker = Walker::new(frame);
    walker.skip_exactly(layout.before_timestamp).then_some(())?;
    // A string in every frame; anything else is the general walk's.
    walker.string().ok()?;
    walker
        .skip_exactly(layout.before_microtimestamp)
        .then_some(())?;
    sink.sequence(walker.unsigned().ok()?);
    walker.skip_exactly(layout.before_bids).then_some(())?;
    sink.side(&mut walker, Side::Bid).ok()?;
    walker.skip_exactly(layout.before_asks).then_some(())?;
    sink.side(&mut walker, Side::Ask).ok()?;
    walker.skip_exactly(layout.before_channel).then_some(())?;
    let channel = walker.string().ok()?;
    walker.skip_exactly(layout.after_channel).then_some(())?;
    walker.finish().ok()?;
    channel
        .starts_with(book_prefix.as_bytes())
        .then_some(Message::Book { stream: channel })
}

/// One WebSocket frame; a data event on a channel starting with `book_prefix` is a book.
fn decode_frame<'a>(
    frame: &'a [u8],
    book_prefix: &str,
    sink: &mut impl Sink,
) -> Result<Message<'a>, DecodeError> {
    match decode_usual_layout(frame, book_prefix, sink) {
        Some(message) => Ok(message),
        None => decode_any_layout(frame, book_prefix, sink),
    }
}

/// One frame in any layout, by the general object walk: the answer for every frame.
fn decode_any_layout<'a>(
    frame: &'a [u8],
    book_prefix: &str,
    sink: &mut impl Sink,
) -> Result<Message<'a>, DecodeError> {
    let mut walker = Walker::new(frame);
    let mut seen = Seen::default();
    let mut event: &[u8] = b"";
    let mut channel: &[u8] = b"";
    // `data` may come before `event` (it does in recorded frames), so a data object is
    // always read as a book payload; `event` decides afterwards what it was.
    walker.object(|walker, key| {
        match key {
            b"event" => {
                seen.mark(EVENT, "event")?;
                event = walker.string()?;
            }
            b"channel" => {
                seen.mark(CHANNEL, "channel")?;
                channel = walker.string()?;
            }
            b"data" => {
                seen.mark(DATA, "data")?;
                if walker.peek()? != b'{' {
                    return walker.skip_value(); // `""` in bts:request_reconnect
                }
                walker.object(|walker, key| data_member(walker, key, &mut seen, sink))?;
            }
            _ => walker.skip_value()?,
        }
        Ok(())
    })?;
    walker.finish()?;

    if !seen.has(EVENT) {
        return Err(DecodeError::MissingKey("event"));
    }
    match event {
        b"data" if channel.starts_with(book_prefix.as_bytes()) => {
            if !seen.has(DATA) {
                return Err(DecodeError::MissingKey("data"));
            }
            seen.require(&DATA_KEYS)
                .map(|()| Message::Book { stream: channel })
        }
        b"bts:subscription_succeeded" => Ok(Message::SubscribeResult {
            accepted: true,
            acked: Acked::Stream(channel),
        }),
        b"bts:error" => Ok(Message::SubscribeResult {
            accepted: false,
            acked: Acked::Stream(channel),
        }),
        b"bts:request_reconnect" => Ok(Message::Reconnect),
        b"bts:heartbeat" => Ok(Message::Heartbeat),
        _ => Ok(Message::Ignored),
    }
}

/// How Bitstamp sequences its diff stream: an event has only its `microtimestamp`; a
/// snapshot is followed by the events stamped after it (the recording has one stamped
/// equal to the snapshot and contained in it).
///
/// What it cannot show: a lost event goes unnoticed, and of two swapped events the later
/// one is applied before the earlier arrives (the book published in between lacks the
/// earlier one). So an event stamped before the last applied one is a gap (applying it
/// late or dropping it both corrupt the book), and the book is rebuilt after every
/// reconnect, decode error and crossing — the venue's protocol allows no better
/// (PROTOCOLS.md, Bitstamp: resync periodically, on a crossing, on reconnect).
pub struct Microtimestamps;

impl Sequencing for Microtimestamps {
    /// Contained in the snapshot, or a repeat of the last event.
    fn is_contained(&self, update: &BookUpdate, last_id: u64, snapshot_id: u64) -> bool {
        update.last_id <= snapshot_id || update.last_id == last_id
    }

    fn is_gap(&self, update: &BookUpdate, last_id: u64, _snapshot_id: u64) -> bool {
        update.last_id < last_id
    }

    fn joins(&self, snapshot_id: u64, first: &BookUpdate) -> bool {
        first.first_id <= snapshot_id
    }

    /// An event stamped before the buffered ones: the next event starts the buffer, and
    /// the snapshot must not be older than that one.
    fn gap_event_starts_buffer(&self) -> bool {
        false
    }
}

impl Venue for Bitstamp {
    const FACTS: VenueFacts = VenueFacts {
        name: "bitstamp",
        exchange: "bitstamp",
        default_url: "wss://ws.bitstamp.net",
        default_rest_url: "https://www.bitstamp.net",
        // Bitstamp publishes no limit on connection attempts (PROTOCOLS.md, Bitstamp,
        // Limits): Binance's, the one a large venue publishes, as a polite bound.
        connect_budget: ConnectBudget {
            attempts: 300,
            per: std::time::Duration::from_secs(300),
        },
        // No documented cap; "a few dozen channels per connection works in practice"
        // (PROTOCOLS.md, Bitstamp, Limits).
        max_streams_per_connection: 40,
        snapshot_streams: true,
        binary_books: false,
        api_key_header: None,
        snapshots: SnapshotSource::Rest,
        sequencing: &Microtimestamps,
    };
}

impl Decode for Bitstamp {
    fn decode<'a>(
        frame: &'a [u8],
        depth: usize,
        out: &mut TopBook,
    ) -> Result<Message<'a>, DecodeError> {
        decode_frame(frame, ORDER_BOOK_PREFIX, &mut TopN { depth, out })
    }

    fn decode_diff<'a>(
        frame: &'a [u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<Message<'a>, DecodeError> {
        let mut sink = AllLevels {
            sorted: false,
            max_levels,
            out,
        };
        decode_frame(frame, DIFF_ORDER_BOOK_PREFIX, &mut sink)
    }

    /// `GET /api/v2/order_book/<pair>/`: `{"timestamp": "…", "microtimestamp": "…",
    /// "bids": […], "asks": […]}`, full depth, sides best first.
    fn decode_snapshot(
        body: &[u8],
        max_levels: usize,
        out: &mut BookUpdate,
    ) -> Result<(), DecodeError> {
        let mut walker = Walker::new(body);
        let mut seen = Seen::default();
        let mut sink = AllLevels {
            sorted: true,
            max_levels,
            out,
        };
        walker.object(|walker, key| data_member(walker, key, &mut seen, &mut sink))?;
        walker.finish()?;
        seen.require(&DATA_KEYS)
    }
}

impl Checksum for Bitstamp {}

impl Streams for Bitstamp {
    fn spot_symbol(&self, base: &str, quote: &str) -> String {
        format!("{base}{quote}").to_ascii_lowercase()
    }

    /// `order_book_<pair>` always carries 100 levels; `depth` only limits what is kept.
    fn stream_name(&self, symbol: &str, _depth: usize) -> String {
        format!("{ORDER_BOOK_PREFIX}{}", symbol.to_ascii_lowercase())
    }

    /// One `bts:subscribe` per channel, each acknowledged.
    /// A request per channel, acknowledged by `bts:subscription_succeeded` naming it.
    fn subscribe_frames(
        &self,
        streams: &[String],
        _kind: StreamKind,
        _depth: usize,
        _first_id: u64,
    ) -> Vec<SubscribeRequest> {
        streams
            .iter()
            .enumerate()
            .map(|(index, channel)| SubscribeRequest {
                frame: serde_json::json!({"event": "bts:subscribe", "data": {"channel": channel}})
                    .to_string(),
                id: None,
                streams: index..index + 1,
            })
            .collect()
    }

    /// Acknowledged by `bts:unsubscription_succeeded`.
    fn unsubscribe_frames(&self, streams: &[String], _kind: StreamKind, _depth: usize) -> Vec<String> {
        streams
            .iter()
            .map(|channel| {
                serde_json::json!({"event": "bts:unsubscribe", "data": {"channel": channel}})
                    .to_string()
            })
            .collect()
    }

    fn diff_stream_name(&self, symbol: &str) -> String {
        format!("{DIFF_ORDER_BOOK_PREFIX}{}", symbol.to_ascii_lowercase())
    }

    fn diff_stream_symbol(&self, stream: &str) -> Option<String> {
        let pair = stream.strip_prefix(DIFF_ORDER_BOOK_PREFIX)?;
        (!pair.is_empty()).then(|| pair.to_owned())
    }
}

impl Snapshots for Bitstamp {
    fn snapshot_url(&self, rest_base: &str, symbol: &str, _limit: usize) -> String {
        format!(
            "{rest_base}/api/v2/order_book/{}/",
            symbol.to_ascii_lowercase()
        )
    }

    fn snapshot_symbol(&self, url: &str) -> Option<String> {
        let path = url.split('?').next()?;
        let (_, pair) = path.split_once("/api/v2/order_book/")?;
        let pair = pair.trim_end_matches('/');
        (!pair.is_empty() && !pair.contains('/')).then(|| pair.to_owned())
    }

    /// One request against a budget counted in requests.
    fn snapshot_weight(&self, _limit: usize) -> u32 {
        1
    }
}

/// The simulator's side of Bitstamp.
impl Simulated for Bitstamp {
    /// Python-style separators and key order, as in the first recorded sample.
    fn encode_book(&self, stream: &str, book: &TopBook, price_decimals: u32, out: &mut Vec<u8>) {
        use std::io::Write;
        let micros = book.venue_sequence;
        write!(
            out,
            r#"{{"data": {{"timestamp": "{}", "microtimestamp": "{micros}", "bids": "#,
            micros / 1_000_000
        )
        .expect("writing to a Vec cannot fail");
        super::wire::write_levels(book.bids.as_slice(), price_decimals, " ", out);
        out.extend_from_slice(br#", "asks": "#);
        super::wire::write_levels(book.asks.as_slice(), price_decimals, " ", out);
        write!(out, r#"}}, "event": "data", "channel": "{stream}"}}"#)
            .expect("writing to a Vec cannot fail");
    }

    /// Subscriptions, and the heartbeat (reply shape from control_messages.jsonl).
    fn answer_request(&self, request: &str) -> Option<Answer> {
        let request: serde_json::Value = serde_json::from_str(request).ok()?;
        let event = request.get("event")?.as_str()?;
        if event == "bts:heartbeat" {
            let reply = r#"{"event":"bts:heartbeat","channel":"","data":{"status":"success"}}"#;
            return Some(Answer {
                replies: vec![reply.to_owned()],
                ..Answer::default()
            });
        }
        let channel = request.get("data")?.get("channel")?.as_str()?.to_owned();
        let (acked, answer) = match event {
            "bts:subscribe" => (
                "bts:subscription_succeeded",
                Answer {
                    subscribe: vec![channel.clone()],
                    ..Answer::default()
                },
            ),
            "bts:unsubscribe" => (
                "bts:unsubscription_succeeded",
                Answer {
                    unsubscribe: vec![channel.clone()],
                    ..Answer::default()
                },
            ),
            _ => return None,
        };
        let reply = serde_json::json!({"event": acked, "channel": channel, "data": {}});
        Some(Answer {
            replies: vec![reply.to_string()],
            ..answer
        })
    }

    fn reconnect_request(&self) -> Option<&'static str> {
        Some(r#"{"event":"bts:request_reconnect","channel":"","data":""}"#)
    }

    /// As recorded: compact, `data` first.
    fn encode_diff(
        &self,
        stream: &str,
        update: &BookUpdate,
        _checksum: Option<u32>,
        price_decimals: u32,
        _unix_ms: u64,
        out: &mut Vec<u8>,
    ) {
        use std::io::Write;
        let micros = update.last_id;
        write!(
            out,
            r#"{{"data":{{"timestamp":"{}","microtimestamp":"{micros}","bids":"#,
            micros / 1_000_000
        )
        .expect("writing to a Vec cannot fail");
        super::wire::write_levels(&update.bids, price_decimals, "", out);
        out.extend_from_slice(br#","asks":"#);
        super::wire::write_levels(&update.asks, price_decimals, "", out);
        write!(out, r#"}},"channel":"{stream}","event":"data"}}"#)
            .expect("writing to a Vec cannot fail");
    }

    /// As recorded: Python-style separators.
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
        let micros = snapshot.last_id;
        write!(
            out,
            r#"{{"timestamp": "{}", "microtimestamp": "{micros}", "bids": "#,
            micros / 1_000_000
        )
        .expect("writing to a Vec cannot fail");
        super::wire::write_levels(&snapshot.bids, price_decimals, " ", out);
        out.extend_from_slice(br#", "asks": "#);
        super::wire::write_levels(&snapshot.asks, price_decimals, " ", out);
        out.push(b'}');
    }

    /// The snapshot channel always carries the top 100.
    fn levels_on_stream(&self, _stream: &str) -> usize {
        100
    }

    fn next_event_ids(&self, last_id: u64, _changes: u64, now_us: u64) -> (u64, u64) {
        let stamp = now_us.max(last_id + 1);
        (stamp, stamp)
    }

    fn initial_event_id(&self, now_us: u64) -> u64 {
        now_us
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixed::FixedPoint;
    use crate::sync::test_events::{event, snapshot};
    use crate::sync::{BookSync, SnapshotOutcome, UpdateOutcome};

    const SAMPLES: &str =
        include_str!("../../tests/fixtures/bitstamp/order_book_btcusd_top100_samples_2020.jsonl");
    const CONTROL: &str = include_str!("../../tests/fixtures/bitstamp/control_messages.jsonl");

    #[test]
    fn microtimestamps_drop_what_the_snapshot_contains() {
        let mut sync = BookSync::new(&Microtimestamps, 100, 100);
        sync.on_update(&event(100, 100, 1, 1));
        sync.on_update(&event(200, 200, 2, 1));
        assert_eq!(sync.on_update(&event(200, 200, 2, 1)), UpdateOutcome::Stale);
        assert_eq!(sync.buffered(), 2);
        let mut reordered = BookSync::new(&Microtimestamps, 100, 100);
        reordered.on_update(&event(200, 200, 2, 1));
        reordered.on_update(&event(100, 100, 1, 1));
        assert_eq!(reordered.buffered(), 0, "out of order: start again");
        assert_eq!(sync.on_snapshot(&snapshot(99)), SnapshotOutcome::TooOld);
        assert_eq!(
            sync.on_snapshot(&snapshot(100)),
            SnapshotOutcome::Synced {
                applied: 1,
                dropped: 1
            }
        );
        assert_eq!(sync.on_update(&event(200, 200, 3, 1)), UpdateOutcome::Stale);
        assert_eq!(
            sync.on_update(&event(900, 900, 3, 1)),
            UpdateOutcome::Applied,
            "timestamps cannot show lost events"
        );
        assert_eq!(
            sync.on_update(&event(800, 800, 3, 1)),
            UpdateOutcome::Gap,
            "an event older than the last applied arrived out of order"
        );
    }

    fn fp(text: &str) -> FixedPoint {
        text.parse().unwrap()
    }

    const DIFFS: &str = include_str!("../../tests/fixtures/bitstamp/diff_order_book_ethusd.jsonl");

    /// A diff frame's sink: every level (up to 1,000 a side), in frame order.
    fn all_levels(out: &mut BookUpdate) -> AllLevels<'_> {
        AllLevels {
            sorted: false,
            max_levels: 1000,
            out,
        }
    }

    /// The layout fast path reads every recorded book frame (both layouts) and diff.
    #[test]
    fn recorded_frames_take_the_layout_fast_path() {
        for line in SAMPLES.lines() {
            let mut sink = TopN {
                depth: 10,
                out: &mut TopBook::default(),
            };
            let message = decode_usual_layout(line.as_bytes(), ORDER_BOOK_PREFIX, &mut sink);
            assert!(matches!(message, Some(Message::Book { .. })), "{line:.60}");
        }
        for line in DIFFS.lines().skip(1) {
            let mut update = BookUpdate::default();
            let message = decode_usual_layout(
                line.as_bytes(),
                DIFF_ORDER_BOOK_PREFIX,
                &mut all_levels(&mut update),
            );
            assert!(matches!(message, Some(Message::Book { .. })), "{line:.60}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]

        /// Whatever the layout fast path accepts, the general walk reads the same way: the
        /// same message and book. Frames: the recorded ones with one edit, mostly where the
        /// layouts' literals and values are (the first and last 80 bytes, around "asks").
        #[test]
        fn layout_fast_path_agrees_with_the_general_walk(
            sample in 0usize..2,
            edit in crate::venue::layout_edits::edit(),
        ) {
            let mut frame = SAMPLES.lines().nth(sample).unwrap().as_bytes().to_vec();
            crate::venue::layout_edits::apply(&mut frame, edit);
            let (mut fast, mut general) = (TopBook::default(), TopBook::default());
            let fast_message = decode_usual_layout(
                &frame,
                ORDER_BOOK_PREFIX,
                &mut TopN { depth: 10, out: &mut fast },
            );
            let general_message = decode_any_layout(
                &frame,
                ORDER_BOOK_PREFIX,
                &mut TopN { depth: 10, out: &mut general },
            );
            if let Some(message) = fast_message {
                proptest::prop_assert_eq!(general_message, Ok(message));
                proptest::prop_assert_eq!(fast, general);
            }
        }

        /// The same for diff frames, which the fast path reads into every level.
        #[test]
        fn layout_fast_path_agrees_with_the_general_walk_on_diffs(
            sample in 1..DIFFS.lines().count(),
            edit in crate::venue::layout_edits::edit(),
        ) {
            let mut frame = DIFFS.lines().nth(sample).unwrap().as_bytes().to_vec();
            crate::venue::layout_edits::apply(&mut frame, edit);
            let (mut fast, mut general) = (BookUpdate::default(), BookUpdate::default());
            let fast_message =
                decode_usual_layout(&frame, DIFF_ORDER_BOOK_PREFIX, &mut all_levels(&mut fast));
            let general_message =
                decode_any_layout(&frame, DIFF_ORDER_BOOK_PREFIX, &mut all_levels(&mut general));
            if let Some(message) = fast_message {
                proptest::prop_assert_eq!(general_message, Ok(message));
                proptest::prop_assert_eq!(fast, general);
            }
        }
    }

    #[test]
    fn decodes_both_recorded_layouts() {
        // Sample 1 has spaces and `data` first; sample 2 is compact with `channel` second.
        let expected = [
            (1_580_336_834_607_546, "9328.28", "9337.10"),
            (0, "19133.97", "19141.75"),
        ];
        for (line, (sequence, best_bid, best_ask)) in SAMPLES.lines().zip(expected) {
            let mut book = TopBook::default();
            let message = Bitstamp::decode(line.as_bytes(), 10, &mut book).unwrap();
            assert_eq!(
                message,
                Message::Book {
                    stream: b"order_book_btcusd"
                }
            );
            if sequence != 0 {
                assert_eq!(book.venue_sequence, sequence);
            }
            assert_eq!((book.bids.len(), book.asks.len()), (10, 10));
            assert_eq!(book.bids.best().unwrap().price, fp(best_bid));
            assert_eq!(book.asks.best().unwrap().price, fp(best_ask));
            assert!(!book.is_crossed());
        }
    }

    #[test]
    fn keeps_all_hundred_levels_and_never_more_than_max_depth() {
        let line = SAMPLES.lines().next().unwrap();
        for (depth, kept) in [
            (100, 100),
            (crate::book::MAX_DEPTH + 1, crate::book::MAX_DEPTH),
        ] {
            let mut book = TopBook::default();
            Bitstamp::decode(line.as_bytes(), depth, &mut book).unwrap();
            assert_eq!((book.bids.len(), book.asks.len()), (kept, kept));
        }
    }

    #[test]
    fn encoding_reproduces_the_recorded_frame() {
        let line = SAMPLES.lines().next().unwrap();
        let mut book = TopBook::default();
        Bitstamp::decode(line.as_bytes(), 100, &mut book).unwrap();
        let mut encoded = Vec::new();
        Bitstamp.encode_book("order_book_btcusd", &book, 2, &mut encoded);
        assert_eq!(String::from_utf8(encoded).unwrap(), line);
    }

    #[test]
    fn subscription_round_trip_matches_the_recorded_frames() {
        let requests = Bitstamp.subscribe_frames(&["order_book_ethbtc".to_owned()], StreamKind::Snapshots, 10, 1);
        assert_eq!(
            requests,
            [SubscribeRequest {
                frame: r#"{"data":{"channel":"order_book_ethbtc"},"event":"bts:subscribe"}"#
                    .to_owned(),
                id: None,
                streams: 0..1,
            }]
        );
        let answer = Bitstamp.answer_request(&requests[0].frame).unwrap();
        assert_eq!(answer.subscribe, ["order_book_ethbtc"]);
        let mut book = TopBook::default();
        let ack = Bitstamp::decode(answer.replies[0].as_bytes(), 10, &mut book);
        let acked = Acked::Stream(b"order_book_ethbtc");
        assert_eq!(
            ack,
            Ok(Message::SubscribeResult {
                accepted: true,
                acked
            })
        );
        let unsubscribe = Bitstamp.unsubscribe_frames(&["order_book_ethbtc".to_owned()], StreamKind::Snapshots, 10);
        assert_eq!(
            unsubscribe,
            [r#"{"data":{"channel":"order_book_ethbtc"},"event":"bts:unsubscribe"}"#]
        );
        let answer = Bitstamp.answer_request(&unsubscribe[0]).unwrap();
        assert_eq!(answer.unsubscribe, ["order_book_ethbtc"]);
        let ack = Bitstamp::decode(answer.replies[0].as_bytes(), 10, &mut book);
        assert_eq!(ack, Ok(Message::Ignored), "an unsubscription's ack");
        let reconnect = Bitstamp::decode(
            Bitstamp.reconnect_request().unwrap().as_bytes(),
            10,
            &mut book,
        );
        assert_eq!(reconnect, Ok(Message::Reconnect));
    }

    #[test]
    fn classifies_control_frames() {
        let expected = [
            Message::Ignored, // our own bts:subscribe request echoed back is no server message
            Message::SubscribeResult {
                accepted: true,
                acked: Acked::Stream(b"diff_order_book_ethusd"),
            },
            Message::Reconnect,
            Message::Heartbeat,
            Message::Heartbeat,
        ];
        for (line, expected) in CONTROL.lines().zip(expected) {
            let mut book = TopBook::default();
            assert_eq!(
                Bitstamp::decode(line.as_bytes(), 10, &mut book),
                Ok(expected),
                "{line}"
            );
        }
    }
}
