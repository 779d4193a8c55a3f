//! What each fuzz target checks, in one place: the targets in `fuzz/fuzz_targets/` call
//! these, and `tests/venues/fuzz_corpus.rs` replays the committed corpus and every past crash
//! through them on stable Rust, so a finding stays a regression test.
//!
//! Each function takes the fuzzer's raw bytes and panics (the fuzzer's finding) when a
//! contract is broken; any input it does not panic on is fine, rejected or accepted.

use mergebook::book::diff_sync::BookSync;
use mergebook::book::{BookUpdate, Level, Side, TopBook};
use mergebook::fixed::FixedPoint;
use mergebook::venue::{DecodeError, Message, VenueId};

/// A target's check: panics when the input breaks the contract.
pub type Contract = fn(&[u8]);

/// The fuzz targets (`fuzz/fuzz_targets/<name>.rs`) of no one venue, with their
/// contracts. Each venue has a target of its own, which checks [`snapshot_decoder`] or
/// [`diff_decoder`] for that venue.
pub const TARGETS: [(&str, Contract); 2] =
    [("fixed_point", fixed_point), ("diff_books", diff_books)];

/// `FixedPoint::parse` never panics, and whatever it accepts formats back to the same
/// value; the in-frame fast paths agree with the exact parser wherever they answer.
pub fn fixed_point(data: &[u8]) {
    if let Ok(value) = FixedPoint::parse(data) {
        assert_eq!(value.to_string().parse::<FixedPoint>(), Ok(value));
    }
    if let Some((value, len)) = FixedPoint::parse_quoted_fast(data) {
        assert_eq!(FixedPoint::parse(&data[..len]), Ok(value));
    }
    if let Some((value, len)) = FixedPoint::parse_bare_fast(data) {
        assert_eq!(FixedPoint::parse(&data[..len]), Ok(value));
    }
}

/// `venue`'s snapshot decoder never panics; a book it accepts is sorted best first with
/// no zero amounts, at any depth (the first byte).
pub fn snapshot_decoder(venue: VenueId, data: &[u8]) {
    let Some((&depth, frame)) = data.split_first() else {
        return;
    };
    let mut book = TopBook::default();
    if let Ok(Message::Book { .. }) = venue.decode(frame, usize::from(depth), &mut book) {
        for side in [Side::Bid, Side::Ask] {
            assert_sorted_without_zeros(side, book.side(side).as_slice());
        }
    }
}

/// `venue`'s diff decoder never panics; a message it accepts holds at most the levels
/// asked for (the first byte) a side, and an in-band snapshot's sides are strictly sorted
/// best first.
pub fn diff_decoder(venue: VenueId, data: &[u8]) {
    let Some((&limit, frame)) = data.split_first() else {
        return;
    };
    let limit = usize::from(limit).max(1);
    let mut update = BookUpdate::default();
    let mut next = match venue.decode_diff(frame, limit, &mut update) {
        Ok(Message::Book { .. }) => None,
        Ok(Message::Books { next, .. }) => Some(next),
        _ => return,
    };
    loop {
        assert!(update.bids.len() <= limit && update.asks.len() <= limit);
        if update.is_snapshot {
            for (side, levels) in [(Side::Bid, &update.bids), (Side::Ask, &update.asks)] {
                for pair in levels.windows(2) {
                    assert!(side.is_better(pair[0].price, pair[1].price));
                }
            }
        }
        let Some(at) = next else { return };
        // The decoder checked the whole frame: a later event reads, unless only its reading
        // could find it wrong (a snapshot's price twice).
        match venue.decode_next_event(frame, at, limit, &mut update) {
            Ok((_, more)) => next = more,
            Err(error) => {
                assert!(matches!(error, DecodeError::Unsorted(_)), "{error}");
                return;
            }
        }
    }
}

/// The binary decoders of `venue` (a venue whose books come in binary frames) never
/// panic; a top book one accepts is sorted best first with no zero amounts and at most the
/// depth asked for (the first byte) a side, and a diff event holds at most the levels asked
/// for a side, its update ids in order.
pub fn binary_decoder(venue: VenueId, data: &[u8]) {
    let Some((&limit, frame)) = data.split_first() else {
        return;
    };
    let limit = usize::from(limit).max(1);
    let mut book = TopBook::default();
    if let Ok(Message::Book { .. }) = venue.decode_binary(frame, limit, &mut book) {
        for side in [Side::Bid, Side::Ask] {
            assert!(assert_sorted_without_zeros(side, book.side(side).as_slice()) <= limit);
        }
    }
    let mut update = BookUpdate::default();
    if let Ok(Message::Book { .. }) = venue.decode_diff_binary(frame, limit, &mut update) {
        assert!(update.bids.len() <= limit && update.asks.len() <= limit);
        assert!(update.first_id <= update.last_id);
    }
}

/// Every decoder of `venue` (a venue with snapshot and diff streams, and REST snapshots)
/// on the same input: the contracts of [`snapshot_decoder`] and [`diff_decoder`], and a
/// REST body it accepts has strictly sorted sides of at most the levels asked for.
pub fn every_decoder(venue: VenueId, data: &[u8]) {
    snapshot_decoder(venue, data);
    diff_decoder(venue, data);
    let Some((&limit, body)) = data.split_first() else {
        return;
    };
    let limit = usize::from(limit).max(1);
    let mut snapshot = BookUpdate::default();
    if venue.decode_snapshot(body, limit, &mut snapshot).is_ok() {
        for (side, levels) in [(Side::Bid, &snapshot.bids), (Side::Ask, &snapshot.asks)] {
            assert!(levels.len() <= limit);
            for pair in levels.windows(2) {
                assert!(side.is_better(pair[0].price, pair[1].price));
            }
        }
    }
}

/// A side's levels are strictly sorted best first and none has a zero amount; returns how
/// many there are.
fn assert_sorted_without_zeros<'a>(
    side: Side,
    levels: impl IntoIterator<Item = &'a Level>,
) -> usize {
    let mut count = 0;
    let mut previous = None;
    for level in levels {
        count += 1;
        assert!(!level.amount.is_zero());
        if let Some(previous) = previous {
            assert!(side.is_better(previous, level.price));
        }
        previous = Some(level.price);
    }
    count
}

/// Diff mode: the diff and snapshot decoders of every venue (the first byte picks it)
/// never panic, and whatever they accept keeps a full-depth book sorted, without zero
/// amounts, and never crossed when published (the sync state machine discards a crossed
/// book). Frames are separated by newlines; a line starting with `S` is a snapshot body.
pub fn diff_books(data: &[u8]) {
    const DEPTH: usize = 64;
    let Some((&selector, input)) = data.split_first() else {
        return;
    };
    let venue = VenueId::ALL[usize::from(selector) % VenueId::ALL.len()];
    let mut sync = BookSync::new(venue.facts().sequencing, DEPTH, 16);
    let mut update = BookUpdate::default();
    for line in input.split(|&byte| byte == b'\n') {
        if let Some(body) = line.strip_prefix(b"S") {
            if venue.decode_snapshot(body, DEPTH, &mut update).is_ok() {
                sync.on_snapshot(&update);
            }
        } else if let Ok(Message::Book { .. }) = venue.decode_diff(line, DEPTH, &mut update) {
            sync.on_update(&update);
        }
        if sync.is_synced() {
            assert!(!sync.book.is_crossed());
            for side in [Side::Bid, Side::Ask] {
                assert!(assert_sorted_without_zeros(side, sync.book.levels(side)) <= DEPTH);
            }
        }
    }
}
