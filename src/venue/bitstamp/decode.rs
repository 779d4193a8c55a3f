//! Bitstamp's frames decoded into books and typed errors ([`Decode`]).

use super::*;

pub(super) const EVENT: u32 = 0;
pub(super) const CHANNEL: u32 = 1;
pub(super) const DATA: u32 = 2;
pub(super) const MICROTIMESTAMP: u32 = 3;
pub(super) const BIDS: u32 = 4;
pub(super) const ASKS: u32 = 5;

/// Where a data object's members go: a top-N book or a diff event.
pub(super) trait Sink {
    /// The book's `microtimestamp`: its sequence and its time.
    fn sequence(&mut self, microtimestamp: u64) -> Result<(), DecodeError>;
    fn side(&mut self, walker: &mut Walker<'_>, side: Side) -> Result<(), DecodeError>;
}

pub(super) struct TopN<'o> {
    pub(super) depth: usize,
    pub(super) out: &'o mut TopBook,
}

impl Sink for TopN<'_> {
    fn sequence(&mut self, microtimestamp: u64) -> Result<(), DecodeError> {
        self.out.venue_sequence = microtimestamp;
        self.out.exchange_time_ns = timestamps::nanos_from_micros(microtimestamp)?;
        Ok(())
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
pub(super) struct AllLevels<'o> {
    pub(super) sorted: bool,
    pub(super) max_levels: usize,
    pub(super) out: &'o mut BookUpdate,
}

impl Sink for AllLevels<'_> {
    fn sequence(&mut self, microtimestamp: u64) -> Result<(), DecodeError> {
        self.out.set_id(microtimestamp);
        self.out.exchange_time_ns = timestamps::nanos_from_micros(microtimestamp)?;
        Ok(())
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
pub(super) fn data_member(
    walker: &mut Walker<'_>,
    key: &[u8],
    seen: &mut Seen,
    sink: &mut impl Sink,
) -> Result<(), DecodeError> {
    match key {
        b"microtimestamp" => {
            seen.mark(MICROTIMESTAMP, "microtimestamp")?;
            sink.sequence(walker.unsigned()?)?;
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

pub(super) const DATA_KEYS: [(u32, &str); 3] = [
    (MICROTIMESTAMP, "microtimestamp"),
    (BIDS, "bids"),
    (ASKS, "asks"),
];

/// The bytes around the values of a book frame, in one of the layouts Bitstamp sends.
pub(super) struct Layout {
    before_timestamp: &'static [u8],
    before_microtimestamp: &'static [u8],
    before_bids: &'static [u8],
    before_asks: &'static [u8],
    before_channel: &'static [u8],
    after_channel: &'static [u8],
}

/// One space after each `:` and `,`, `event` before `channel`: the 2020-01 recording, and
/// what the simulator sends.
pub(super) const SPACED: Layout = Layout {
    before_timestamp: br#"{"data": {"timestamp": "#,
    before_microtimestamp: br#", "microtimestamp": "#,
    before_bids: br#", "bids": "#,
    before_asks: br#", "asks": "#,
    before_channel: br#"}, "event": "data", "channel": "#,
    after_channel: b"}",
};

/// No spaces, `channel` before `event`: the 2020-12 recording and every recorded diff
/// (2022).
pub(super) const COMPACT: Layout = Layout {
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
pub(super) fn decode_usual_layout<'a>(
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
pub(super) fn decode_in_layout<'a>(
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
    sink.sequence(walker.unsigned().ok()?).ok()?;
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
pub(super) fn decode_frame<'a>(
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
pub(super) fn decode_any_layout<'a>(
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
            b"event" => event = seen.string(walker, EVENT, "event")?,
            b"channel" => channel = seen.string(walker, CHANNEL, "channel")?,
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
