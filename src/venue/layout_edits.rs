//! For the layout fast paths' proptests (`decode_usual_layout` in the venue modules):
//! edits of a recorded frame, mostly where a layout's literals and values are.

use proptest::prelude::*;

/// One edit of a recorded frame (a byte replaced, inserted or removed), mostly where
/// the layouts' literals and values are: the first and last 80 bytes, and around the
/// second side's key (`"asks"`, or `"a"` in a Binance diff event) or a Coinbase event's
/// levels (`"updates"`); else anywhere.
pub(crate) fn edit() -> impl Strategy<Value = (usize, usize, usize, u8)> {
    (
        0usize..4,
        0usize..80,
        0usize..3,
        proptest::sample::select(&b" \t\n,:}]{[\"0159.abe-"[..]),
    )
}

pub(crate) fn apply(frame: &mut Vec<u8>, (near, offset, kind, byte): (usize, usize, usize, u8)) {
    let asks = frame
        .windows(6)
        .position(|w| w == b"\"asks\"")
        .or_else(|| frame.windows(4).position(|w| w == b"\"a\":"))
        .or_else(|| frame.windows(9).position(|w| w == b"\"updates\""))
        .expect("a book frame");
    // At most the end (an insertion there appends): a diff event is short.
    let at = match near {
        0 => offset,
        1 => frame.len().saturating_sub(offset),
        2 => asks.saturating_sub(40) + offset,
        _ => offset * (frame.len() / 80),
    }
    .min(frame.len());
    let last = frame.len() - 1;
    match kind {
        0 => frame[at.min(last)] = byte,
        1 => frame.insert(at, byte),
        _ => {
            frame.remove(at.min(last));
        }
    }
}
