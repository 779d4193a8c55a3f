//! What every merged book a consumer sees must satisfy, checked summary by summary: the
//! chaos tests and `mergebook-tools soak` run this on everything published while faults are
//! injected.
//!
//! - sequence numbers increase for each consumer (a latest-value consumer may skip some);
//! - each side is sorted best first;
//! - only `Synced` venues have levels in it (nothing of an excluded venue, partial or not);
//! - no venue's own levels in it are crossed;
//! - no venue in it is older than the stale age, give or take the merger's check period;
//! - no venue's book in it was received after the summary was published (a reported age
//!   is never below zero);
//! - a venue quoted in another currency is in it only with its rate.

use mergebook::book::Side;
use mergebook::fixed::FixedPoint;
use mergebook::merger::STALE_CHECK_EVERY_NS;
use mergebook::merger::kway::MergedLevel;
use mergebook::merger::summary::{Summary, VenueState};
use mergebook::venue::VenueId;
use std::time::Duration;

/// One broken invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    SequenceNotIncreasing { previous: u64, sequence: u64 },
    Unsorted { side: Side, at: usize },
    ExcludedVenueMerged { venue: VenueId, state: VenueState },
    VenueCrossed { venue: VenueId },
    StaleVenueMerged { venue: VenueId, age_ms: u64 },
    ReceivedAfterPublished { venue: VenueId },
    ConvertedWithoutRate { venue: VenueId },
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Violation::SequenceNotIncreasing { previous, sequence } => {
                write!(f, "sequence {sequence} after {previous}")
            }
            Violation::Unsorted { side, at } => write!(f, "{} unsorted at level {at}", side.name()),
            Violation::ExcludedVenueMerged { venue, state } => {
                write!(
                    f,
                    "{venue} is {} but has levels in the merged book",
                    state.name()
                )
            }
            Violation::VenueCrossed { venue } => write!(f, "{venue}'s own levels are crossed"),
            Violation::StaleVenueMerged { venue, age_ms } => {
                write!(f, "{venue}'s book was {age_ms} ms old when merged")
            }
            Violation::ReceivedAfterPublished { venue } => {
                write!(
                    f,
                    "{venue}'s book was received after the summary holding it"
                )
            }
            Violation::ConvertedWithoutRate { venue } => {
                write!(
                    f,
                    "{venue} is in another currency and merged without a rate"
                )
            }
        }
    }
}

/// The checker of one consumer's stream of summaries.
pub struct InvariantChecker {
    /// The oldest a merged venue's book may be at publish.
    max_age_ns: u64,
    last_sequence: u64,
    /// Summaries checked.
    pub checked: u64,
    /// Every violation found, in order (the first ones are the interesting ones).
    pub violations: Vec<Violation>,
}

impl InvariantChecker {
    pub fn new(stale_after: Duration) -> InvariantChecker {
        InvariantChecker {
            max_age_ns: stale_after.as_nanos() as u64 + STALE_CHECK_EVERY_NS,
            last_sequence: 0,
            checked: 0,
            violations: Vec::new(),
        }
    }

    /// Checks the next summary this consumer saw.
    pub fn check(&mut self, summary: &Summary) {
        self.checked += 1;
        if summary.sequence <= self.last_sequence {
            self.violations.push(Violation::SequenceNotIncreasing {
                previous: self.last_sequence,
                sequence: summary.sequence,
            });
        }
        self.last_sequence = summary.sequence;
        let book = &summary.book;
        for (side, levels) in [
            (Side::Bid, book.bids.as_slice()),
            (Side::Ask, book.asks.as_slice()),
        ] {
            if let Some(at) = levels
                .windows(2)
                .position(|pair| side.is_better(pair[1].price, pair[0].price))
            {
                self.violations
                    .push(Violation::Unsorted { side, at: at + 1 });
            }
        }
        // Every level's book is one of the instrument's.
        for level in book.bids.as_slice().iter().chain(book.asks.as_slice()) {
            let source = usize::from(level.source);
            if summary.source_venues.get(source).copied().flatten() != Some(level.venue) {
                self.violations.push(Violation::ExcludedVenueMerged {
                    venue: level.venue,
                    state: VenueState::Absent,
                });
            }
        }
        for (source, venue, state) in summary.sources() {
            let best_bid = prices_of(source, book.bids.as_slice()).max();
            let best_ask = prices_of(source, book.asks.as_slice()).min();
            if best_bid.is_none() && best_ask.is_none() {
                continue;
            }
            if state != VenueState::Synced {
                self.violations
                    .push(Violation::ExcludedVenueMerged { venue, state });
            }
            if let (Some(bid), Some(ask)) = (best_bid, best_ask)
                && bid >= ask
            {
                self.violations.push(Violation::VenueCrossed { venue });
            }
            let converted = summary.source_rate[source];
            if converted.is_some_and(|applied| applied.rate.is_none()) {
                self.violations
                    .push(Violation::ConvertedWithoutRate { venue });
            }
            let received = summary.source_received_ns[source];
            let age = summary.polled_monotonic_ns.saturating_sub(received);
            if summary.polled_monotonic_ns > 0 && age > self.max_age_ns {
                self.violations.push(Violation::StaleVenueMerged {
                    venue,
                    age_ms: age / 1_000_000,
                });
            }
        }
        for (source, venue, _) in summary.sources() {
            if summary.published_monotonic_ns > 0
                && summary.source_received_ns[source] > summary.published_monotonic_ns
            {
                self.violations
                    .push(Violation::ReceivedAfterPublished { venue });
            }
        }
    }
}

fn prices_of(source: usize, levels: &[MergedLevel]) -> impl Iterator<Item = FixedPoint> + '_ {
    levels
        .iter()
        .filter(move |level| usize::from(level.source) == source)
        .map(|level| level.price)
}

#[cfg(test)]
mod tests {
    use super::*;
    /// The summaries' sources: Binance's book, then Bitstamp's.
    fn level(venue: VenueId, price: u64) -> MergedLevel {
        MergedLevel {
            price: FixedPoint::from_raw(price),
            amount: FixedPoint::from_raw(1),
            venue,
            source: u8::from(venue == BITSTAMP),
        }
    }

    /// A summary of both venues synced, fresh, with these (venue, price) levels.
    fn with_levels(sequence: u64, bids: &[(VenueId, u64)], asks: &[(VenueId, u64)]) -> Summary {
        let mut summary = Summary {
            sequence,
            polled_monotonic_ns: 10_000_000_000,
            published_monotonic_ns: 10_000_000_000,
            ..Summary::default()
        };
        summary.source_venues[..2].copy_from_slice(&[Some(BINANCE), Some(BITSTAMP)]);
        summary.source_states[..2].fill(VenueState::Synced);
        summary.source_received_ns[..2].fill(9_999_000_000);
        for &(venue, price) in bids {
            summary.book.bids.push(level(venue, price));
        }
        for &(venue, price) in asks {
            summary.book.asks.push(level(venue, price));
        }
        summary
    }

    const BINANCE: VenueId = VenueId::Binance;
    const BITSTAMP: VenueId = VenueId::Bitstamp;

    fn summary(sequence: u64) -> Summary {
        with_levels(
            sequence,
            &[(BINANCE, 100), (BITSTAMP, 99)],
            &[(BITSTAMP, 101), (BINANCE, 102)],
        )
    }

    #[test]
    fn a_sound_stream_has_no_violations() {
        let mut checker = InvariantChecker::new(Duration::from_secs(5));
        checker.check(&summary(1));
        checker.check(&summary(3));
        assert_eq!(
            (checker.checked, checker.violations.as_slice()),
            (2, &[][..])
        );
    }

    #[test]
    fn each_broken_invariant_is_reported() {
        let mut checker = InvariantChecker::new(Duration::from_secs(5));
        checker.check(&summary(2));
        checker.check(&summary(2));
        assert_eq!(
            checker.violations.pop(),
            Some(Violation::SequenceNotIncreasing {
                previous: 2,
                sequence: 2
            })
        );

        let unsorted = with_levels(3, &[(BITSTAMP, 99), (BINANCE, 100)], &[(BITSTAMP, 101)]);
        checker.check(&unsorted);
        assert_eq!(
            checker.violations.pop(),
            Some(Violation::Unsorted {
                side: Side::Bid,
                at: 1
            })
        );

        let mut excluded = summary(4);
        excluded.source_states[1] = VenueState::OutOfSync;
        checker.check(&excluded);
        assert_eq!(
            checker.violations.pop(),
            Some(Violation::ExcludedVenueMerged {
                venue: VenueId::Bitstamp,
                state: VenueState::OutOfSync
            })
        );

        let crossed = with_levels(5, &[(BINANCE, 100)], &[(BINANCE, 100), (BITSTAMP, 101)]);
        checker.check(&crossed);
        assert_eq!(
            checker.violations.pop(),
            Some(Violation::VenueCrossed {
                venue: VenueId::Binance
            })
        );

        let mut stale = summary(6);
        stale.source_received_ns[0] = 4_000_000_000;
        checker.check(&stale);
        assert_eq!(
            checker.violations.pop(),
            Some(Violation::StaleVenueMerged {
                venue: VenueId::Binance,
                age_ms: 6_000
            })
        );

        // Received after the poll is sound; after the write, not.
        let mut ahead = summary(7);
        ahead.source_received_ns[1] = 10_000_000_001;
        checker.check(&ahead);
        assert_eq!(
            checker.violations.pop(),
            Some(Violation::ReceivedAfterPublished {
                venue: VenueId::Bitstamp
            })
        );
        ahead.sequence = 8;
        ahead.published_monotonic_ns = 10_000_000_002;
        checker.check(&ahead);
        assert!(checker.violations.is_empty(), "{:?}", checker.violations);

        // A converted venue's levels need its rate.
        let mut converted = summary(9);
        converted.source_rate[0] = Some(Default::default());
        checker.check(&converted);
        assert_eq!(
            checker.violations.pop(),
            Some(Violation::ConvertedWithoutRate {
                venue: VenueId::Binance
            })
        );
        assert!(checker.violations.is_empty(), "{:?}", checker.violations);
    }
}
