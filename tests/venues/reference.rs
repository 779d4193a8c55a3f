//! What a venue's recording tests compare mergebook with: a slow reference book (a sorted
//! map a side, built by the test from the venue's documented algorithm), and mergebook's
//! diff replay of the same frames: the tops it published, and the book it ended on.

use crate::common::in_band::Sides;
use mergebook::book::{Level, Side};
use mergebook::fixed::FixedPoint;
use mergebook::merger::kway::MergedLevel;
use mergebook::merger::summary::VenueState;
use mergebook::record::timeline::RecordedFrame;
use mergebook::replay::{self, BadFrame, DiffBook, DiffDepths, DiffRecording};
use mergebook::venue::VenueId;
use std::collections::BTreeMap;

/// A side of a reference book: price → amount.
pub type ReferenceSide = BTreeMap<FixedPoint, FixedPoint>;

/// The best `depth` levels a side of a reference book.
pub fn top(bids: &ReferenceSide, asks: &ReferenceSide, depth: usize) -> Sides {
    let level = |(&price, &amount): (&FixedPoint, &FixedPoint)| Level { price, amount };
    (
        bids.iter().rev().take(depth).map(level).collect(),
        asks.iter().take(depth).map(level).collect(),
    )
}

/// Replays `frames` of `symbol` through mergebook's diff replay (the live reader's rules),
/// asking REST books of `snapshot_depth` levels: every synced top of 10 it published, the
/// book as it ended, and the frames it refused.
pub fn replayed(
    venue: VenueId,
    symbol: &str,
    frames: Vec<RecordedFrame>,
    snapshot_depth: usize,
) -> (Vec<Sides>, DiffBook, Vec<BadFrame>) {
    let recordings = [DiffRecording {
        venue,
        frames,
        symbols: vec![symbol.to_owned()],
    }];
    let mut plan = replay::plan_diff(&recordings, 5000).unwrap();
    let depths = DiffDepths {
        depth: 10,
        max_levels: 5000,
        snapshot_depth,
    };
    let side = |merged: &[MergedLevel]| -> Vec<Level> {
        merged
            .iter()
            .map(|level| Level {
                price: level.price,
                amount: level.amount,
            })
            .collect()
    };
    let (mut published, mut refused) = (Vec::new(), Vec::new());
    replay::replay_diff(
        &recordings,
        &mut plan,
        depths,
        |_, summary| {
            if summary.venue_state(venue) == VenueState::Synced {
                let top = (
                    side(summary.book.bids.as_slice()),
                    side(summary.book.asks.as_slice()),
                );
                if published.last() != Some(&top) {
                    published.push(top);
                }
            }
        },
        |_, _, error| refused.push(*error),
    );
    (published, plan.books.remove(0), refused)
}

/// What a reference run over a recording gives: the top of 10 a side after its snapshot
/// and after each event it applied, its book at the end, and the events it applied and
/// dropped.
pub struct ReferenceRun<'a> {
    pub tops: &'a [Sides],
    pub bids: &'a ReferenceSide,
    pub asks: &'a ReferenceSide,
    pub applied: usize,
    pub dropped: usize,
}

/// That the replay synced once from one snapshot, without a gap, a crossing or a bad
/// frame, applied and dropped the events the reference did, published its tops in order,
/// and ended on its whole book, every level.
pub fn assert_replay_is_the_reference(
    (published, book): (&[Sides], &DiffBook),
    reference: ReferenceRun<'_>,
    context: &str,
) {
    let stats = book.stats;
    assert_eq!(
        (
            stats.snapshots,
            stats.gaps,
            stats.crossings,
            stats.decode_errors
        ),
        (1, 0, 0, 0),
        "{context}: {stats:?}"
    );
    assert_eq!(
        stats.applied as usize, reference.applied,
        "{context}: applied"
    );
    assert_eq!(
        stats.dropped as usize, reference.dropped,
        "{context}: dropped"
    );
    let mut expected = reference.tops.to_vec();
    expected.dedup();
    assert_eq!(published, expected, "{context}: the published tops");
    for (side, truth) in [(Side::Bid, reference.bids), (Side::Ask, reference.asks)] {
        let kept: Vec<(FixedPoint, FixedPoint)> = book
            .sync
            .book
            .levels(side)
            .map(|level| (level.price, level.amount))
            .collect();
        let mut truth: Vec<_> = truth.iter().map(|(&p, &a)| (p, a)).collect();
        if side == Side::Bid {
            truth.reverse();
        }
        assert_eq!(kept, truth, "{context}: {side:?}");
    }
}
