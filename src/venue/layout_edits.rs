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

/// A top-of-book decoder, fast path or general walk.
pub(crate) type TopDecoder =
    for<'a> fn(
        &'a [u8],
        usize,
        &mut crate::book::TopBook,
    ) -> Result<crate::venue::Message<'a>, crate::venue::DecodeError>;

/// Whether a top-of-book layout fast path (`fast`, `None` where it declines) read `frame`;
/// what it read is what the general walk reads, message and book.
pub(crate) fn top_fast_path_agrees(
    frame: &[u8],
    fast: for<'a> fn(
        &'a [u8],
        usize,
        &mut crate::book::TopBook,
    ) -> Option<crate::venue::Message<'a>>,
    general: TopDecoder,
) -> Result<bool, TestCaseError> {
    use crate::book::TopBook;
    let (mut fast_book, mut general_book) = (TopBook::default(), TopBook::default());
    let Some(message) = fast(frame, 10, &mut fast_book) else {
        return Ok(false);
    };
    prop_assert_eq!(general(frame, 10, &mut general_book), Ok(message));
    prop_assert_eq!(fast_book, general_book);
    Ok(true)
}
