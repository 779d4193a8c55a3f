//! Audits of diff books whose streams cannot show a lost event (`Snapshots::audited`:
//! Bitstamp's diff stream and Coinbase Exchange's `level2_batch`, whose events carry no id
//! to chain). Now and then a book is compared with the venue's REST snapshot; where they
//! disagree, an event was lost, and the book is rebuilt.
//!
//! The snapshot is the venue's book at some moment between the request and its answer,
//! and events keep coming meanwhile: a level an event set after the request may differ
//! rightly. So from the request on, the prices of every event applied to the book are
//! noted (a bounded list; one comparison of the stream's index per event otherwise, so the
//! hot path pays nothing while no audit runs), and only the levels no event touched are
//! compared, within the price range both books hold (the live book is cut at
//! `max_book_levels`, the snapshot may be). The comparison waits until the events the venue
//! applied before its snapshot have arrived: at once when an event stamped after the
//! snapshot is applied (the venue's ids order its snapshots and events: Bitstamp's
//! microtimestamps), otherwise when `audit_settle_ms` have passed since the answer.
//!
//! One audit at a time a connection, its book chosen in turn among the synced ones, so
//! that each is audited about every `audit_every_ms`; its request waits for the
//! snapshot scheduler to be idle and is paid from the venue's budget
//! (`snapshot_schedule.rs`). Outcomes are counted (`orderbook_audits_total`): `match`,
//! `mismatch` (logged, rate-limited, with the first level that differs; the book is rebuilt,
//! `ResyncReason::Audit`), `inconclusive` (the book was reset or replaced meanwhile, the
//! snapshot predates the book, or more levels changed than the list holds) and `failed`
//! (the request or its body).

use super::{FeedEvent, FeedOutput, FetchOutcome, ResyncReason};
use crate::book::{BookUpdate, DepthBook, Level, Side};
use crate::fixed::FixedPoint;
use std::time::Duration;

/// `venues.<name>.audit_every_ms` and `audit_settle_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AuditSettings {
    /// About how often each book is audited.
    pub every: Duration,
    /// How long after a snapshot's answer its comparison waits, where the venue's ids do
    /// not say when the events before it have all arrived.
    pub settle: Duration,
}

/// How an audit ended (the `outcome` label of `orderbook_audits_total`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuditOutcome {
    Match,
    Mismatch,
    Inconclusive,
    Failed,
}

impl AuditOutcome {
    pub const ALL: [AuditOutcome; 4] = [
        AuditOutcome::Match,
        AuditOutcome::Mismatch,
        AuditOutcome::Inconclusive,
        AuditOutcome::Failed,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AuditOutcome::Match => "match",
            AuditOutcome::Mismatch => "mismatch",
            AuditOutcome::Inconclusive => "inconclusive",
            AuditOutcome::Failed => "failed",
        }
    }
}

/// The most prices an audit notes as touched (bids and asks together); past them it is
/// inconclusive. A busy book sets a few hundred prices a second; this covers several
/// seconds of one, in 64 KiB allocated once a connection.
pub const MAX_TOUCHED: usize = 4096;

/// The first level where a book and its venue's snapshot disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Difference {
    pub side: Side,
    pub price: FixedPoint,
    /// The amount each holds at that price (zero: none).
    pub book: FixedPoint,
    pub venue: FixedPoint,
}

/// The audit under way on a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Audit {
    pub(super) stream: usize,
    /// The book's generation when it was asked for: a reset since makes it inconclusive.
    pub(super) generation: u64,
    /// The book's last id when it was asked for: a snapshot stamped before it predates
    /// the book.
    pub(super) book_id: u64,
    pub(super) phase: Phase,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Phase {
    /// The request is out.
    Requested,
    /// The snapshot (in `Audits::snapshot`, at `snapshot_id`, 0 where the venue gives it
    /// no comparable id) waits for the events before it, at the latest until `until_ns`.
    Settling { snapshot_id: u64, until_ns: u64 },
}

/// A connection's audits (diff mode, on a venue that has them).
pub(super) struct Audits {
    pub(super) settings: AuditSettings,
    /// When the next audit is due, and the stream after the last one audited.
    pub(super) next_at_ns: u64,
    pub(super) cursor: usize,
    pub(super) current: Option<Audit>,
    /// The audit's decoded snapshot (sized once).
    pub(super) snapshot: BookUpdate,
    touched: Vec<(Side, FixedPoint)>,
    /// The audit can no longer tell: more prices touched than `touched` holds, or its book
    /// replaced by a snapshot on the stream.
    inconclusive: bool,
}

impl Audits {
    /// A connection's audits of `streams` books of up to `max_levels` a side, the first
    /// due one turn after `now_ns`.
    pub(super) fn new(
        settings: AuditSettings,
        streams: usize,
        max_levels: usize,
        now_ns: u64,
    ) -> Audits {
        let mut audits = Audits {
            settings,
            next_at_ns: now_ns,
            cursor: 0,
            current: None,
            snapshot: BookUpdate::with_capacity(max_levels),
            touched: Vec::with_capacity(MAX_TOUCHED),
            inconclusive: false,
        };
        audits.schedule_next(now_ns, streams);
        audits
    }

    /// Schedules the next audit: each of `streams` books about every `every`.
    pub(super) fn schedule_next(&mut self, now_ns: u64, streams: usize) {
        let turn = self.settings.every.as_nanos() as u64 / streams.max(1) as u64;
        self.next_at_ns = now_ns.saturating_add(turn);
    }

    /// An audit of `stream` starts: its request is out.
    pub(super) fn start(&mut self, stream: usize, generation: u64, book_id: u64) {
        self.touched.clear();
        self.inconclusive = false;
        self.current = Some(Audit {
            stream,
            generation,
            book_id,
            phase: Phase::Requested,
        });
    }

    /// Notes the prices `event` set in `stream`'s book, if it is being audited. Returns
    /// whether the audit's comparison is due now: the book has applied an event stamped
    /// after the snapshot (`last_id`: the book's id now).
    #[inline]
    pub(super) fn touch(&mut self, stream: usize, event: &BookUpdate, last_id: u64) -> bool {
        let Some(audit) = &self.current else {
            return false;
        };
        if audit.stream != stream {
            return false;
        }
        let levels = (event.bids.iter().map(|level| (Side::Bid, level.price)))
            .chain(event.asks.iter().map(|level| (Side::Ask, level.price)));
        for touched in levels {
            if self.touched.len() == MAX_TOUCHED {
                self.inconclusive = true;
                break;
            }
            self.touched.push(touched);
        }
        matches!(audit.phase, Phase::Settling { snapshot_id, .. } if snapshot_id != 0 && last_id > snapshot_id)
    }

    /// The audit of `stream`'s book, if one is under way, can no longer conclude: its book
    /// was replaced by a snapshot on the stream.
    pub(super) fn book_replaced(&mut self, stream: usize) {
        if self.current.is_some_and(|audit| audit.stream == stream) {
            self.inconclusive = true;
        }
    }

    /// Whether the current audit's comparison is due at `now_ns`.
    pub(super) fn settled(&self, now_ns: u64) -> bool {
        matches!(self.current, Some(Audit { phase: Phase::Settling { until_ns, .. }, .. }) if until_ns <= now_ns)
    }

    /// Compares `book` with the snapshot where no event touched it: the first difference,
    /// or `Err` where the audit cannot tell.
    pub(super) fn compare(&mut self, book: &DepthBook) -> Result<Option<Difference>, ()> {
        if self.inconclusive {
            return Err(());
        }
        self.touched.sort_unstable();
        self.touched.dedup();
        let touched = &self.touched;
        Ok([Side::Bid, Side::Ask].into_iter().find_map(|side| {
            let venue = match side {
                Side::Bid => &self.snapshot.bids,
                Side::Ask => &self.snapshot.asks,
            };
            let untouched = |price| touched.binary_search(&(side, price)).is_err();
            first_difference(side, book, venue, untouched)
        }))
    }
}

/// The first level of `side`, best first, within the prices both `book` and `venue` (a
/// snapshot's side, best first) reach, where their amounts differ at a price `untouched`
/// accepts.
pub fn first_difference(
    side: Side,
    book: &DepthBook,
    venue: &[Level],
    untouched: impl Fn(FixedPoint) -> bool,
) -> Option<Difference> {
    let venue_levels = || venue.iter().filter(|level| !level.amount.is_zero());
    // What both hold ends at the better of their worst prices.
    let book_worst = book.worst(side)?.price;
    let venue_worst = venue_levels().next_back()?.price;
    let bound = match side.is_better(book_worst, venue_worst) {
        true => book_worst,
        false => venue_worst,
    };
    let mut ours = book.levels(side).peekable();
    let mut theirs = venue_levels().peekable();
    loop {
        let price = match (ours.peek(), theirs.peek()) {
            (None, None) => return None,
            (Some(level), None) | (None, Some(level)) => level.price,
            (Some(a), Some(b)) if side.is_better(b.price, a.price) => b.price,
            (Some(a), Some(_)) => a.price,
        };
        if side.is_better(bound, price) {
            return None;
        }
        let (book_amount, venue_amount) =
            (amount_at(&mut ours, price), amount_at(&mut theirs, price));
        if book_amount != venue_amount && untouched(price) {
            return Some(Difference {
                side,
                price,
                book: book_amount,
                venue: venue_amount,
            });
        }
    }
}

/// The amount of the next level of `levels` if it is at `price` (taken), else zero.
fn amount_at<'a>(
    levels: &mut std::iter::Peekable<impl Iterator<Item = &'a Level>>,
    price: FixedPoint,
) -> FixedPoint {
    levels
        .next_if(|level| level.price == price)
        .map_or(FixedPoint::from_raw(0), |level| level.amount)
}

impl super::FeedCore {
    /// When the audits next need the core (`FeedCore::next_snapshot_at`): the next
    /// request, once the scheduler allows it, or the settling audit's comparison.
    pub(super) fn next_audit_at(&mut self, now_ns: u64) -> Option<u64> {
        let diff = self.diff.as_mut()?;
        let audits = diff.audits.as_mut()?;
        match audits.current {
            Some(Audit {
                phase: Phase::Settling { until_ns, .. },
                ..
            }) => Some(until_ns),
            Some(_) => None,
            None => {
                let weight = diff.request_weight;
                let allowed = diff.scheduler.audit_allowed_at(now_ns, weight)?;
                Some(allowed.max(audits.next_at_ns))
            }
        }
    }

    /// The audit request to make now, if one is due and the scheduler is idle: the next
    /// synced book in turn.
    pub(super) fn start_audit(&mut self, now_ns: u64) -> Option<super::SnapshotRequest> {
        let diff = self.diff.as_mut()?;
        let audits = diff.audits.as_mut()?;
        if audits.current.is_some() || audits.next_at_ns > now_ns {
            return None;
        }
        let weight = diff.request_weight;
        if diff.scheduler.audit_allowed_at(now_ns, weight)? > now_ns {
            return None;
        }
        let count = diff.books.len();
        let synced = (0..count)
            .map(|offset| (audits.cursor + offset) % count)
            .find(|&stream| diff.books[stream].sync.is_synced());
        let Some(stream) = synced else {
            audits.schedule_next(now_ns, count);
            return None;
        };
        audits.cursor = (stream + 1) % count;
        diff.scheduler.audit_started(now_ns, weight);
        let book = &diff.books[stream];
        audits.start(stream, book.generation, book.sync.last_id());
        let url = self.venue.snapshots().snapshot_url(
            &diff.settings.rest_url,
            &self.streams[stream].symbol,
            diff.settings.snapshot_depth,
        );
        tracing::debug!(venue = %self.venue, %url, "auditing a book");
        Some(super::SnapshotRequest::Audit {
            stream,
            generation: book.generation,
            url,
        })
    }

    /// A recording's audit request for `stream` (replay): the audit starts as the
    /// service's did, if the book is synced.
    pub fn on_recorded_audit_request(&mut self, stream: usize) {
        let Some(diff) = &mut self.diff else { return };
        let (Some(audits), Some(book)) = (&mut diff.audits, diff.books.get(stream)) else {
            return;
        };
        if book.sync.is_synced() {
            audits.start(stream, book.generation, book.sync.last_id());
        }
    }

    /// A recording's audit snapshot for `stream` (replay): the answer to the audit under way.
    pub fn on_recorded_audit(
        &mut self,
        stream: usize,
        body: &[u8],
        received_ns: u64,
        out: &mut impl FeedOutput,
    ) {
        let current = self
            .diff
            .as_ref()
            .and_then(|diff| diff.audits.as_ref()?.current);
        if let Some(audit) = current.filter(|audit| audit.stream == stream) {
            self.on_audit_snapshot(stream, audit.generation, Ok(body), received_ns, out);
        }
    }

    /// The answer to the audit request of `stream`'s book at `generation`: its body, or
    /// how the request failed. The snapshot then waits for the events before it.
    pub fn on_audit_snapshot(
        &mut self,
        stream: usize,
        generation: u64,
        result: Result<&[u8], FetchOutcome>,
        now_ns: u64,
        out: &mut impl FeedOutput,
    ) {
        let venue = self.venue;
        let Some(diff) = &mut self.diff else { return };
        let Some(audits) = &mut diff.audits else {
            return;
        };
        let Some(audit) = audits.current.filter(|audit| {
            (audit.stream, audit.generation, audit.phase) == (stream, generation, Phase::Requested)
        }) else {
            return;
        };
        diff.scheduler
            .audit_finished(result.err().unwrap_or(FetchOutcome::Used), now_ns);
        let body = match result {
            Err(_) => return self.end_audit(AuditOutcome::Failed, now_ns, out),
            Ok(body) => body,
        };
        let max_levels = diff.settings.max_levels;
        let snapshot = &mut audits.snapshot;
        let decoded = (self.unit).decoding(|| venue.decode_snapshot(body, max_levels, snapshot));
        if let Err(error) = decoded {
            tracing::warn!(%venue, %error, "audit snapshot refused");
            return self.end_audit(AuditOutcome::Failed, now_ns, out);
        }
        let snapshot_id = audits.snapshot.last_id;
        if snapshot_id != 0 && snapshot_id < audit.book_id {
            // Older than the book it would audit: events before the request are missing
            // from it, and nothing says which.
            return self.end_audit(AuditOutcome::Inconclusive, now_ns, out);
        }
        let until_ns = now_ns.saturating_add(audits.settings.settle.as_nanos() as u64);
        audits.current = Some(Audit {
            phase: Phase::Settling {
                snapshot_id,
                until_ns,
            },
            ..audit
        });
        let book_id = diff.books[stream].sync.last_id();
        if until_ns <= now_ns || (snapshot_id != 0 && book_id > snapshot_id) {
            self.compare_audit(now_ns, out);
        }
    }

    /// Compares the settling audit's book with its snapshot, if `audit_settle_ms` have
    /// passed since it came (the reader's snapshot timer; replay, before each event).
    pub fn finish_audit(&mut self, now_ns: u64, out: &mut impl FeedOutput) {
        let settled = self
            .diff
            .as_ref()
            .and_then(|diff| diff.audits.as_ref())
            .is_some_and(|audits| audits.settled(now_ns));
        if settled {
            self.compare_audit(now_ns, out);
        }
    }

    /// The current audit's comparison, and what follows from it.
    pub(super) fn compare_audit(&mut self, now_ns: u64, out: &mut impl FeedOutput) {
        let Some(diff) = &mut self.diff else { return };
        let Some(audits) = &mut diff.audits else {
            return;
        };
        let Some(audit) = audits.current else { return };
        let book = &diff.books[audit.stream];
        if book.generation != audit.generation || !book.sync.is_synced() {
            return self.end_audit(AuditOutcome::Inconclusive, now_ns, out);
        }
        let difference = match audits.compare(&book.sync.book) {
            Err(()) => return self.end_audit(AuditOutcome::Inconclusive, now_ns, out),
            Ok(None) => return self.end_audit(AuditOutcome::Match, now_ns, out),
            Ok(Some(difference)) => difference,
        };
        if let Some(suppressed) = self.audit_log.allow(now_ns) {
            let Difference {
                side,
                price,
                book,
                venue,
            } = difference;
            tracing::warn!(venue = %self.venue, stream = %self.streams[audit.stream].name, ?side, %price, %book, %venue, suppressed, "audit: the book differs from the venue's snapshot where no event changed it; rebuilding");
        }
        self.end_audit(AuditOutcome::Mismatch, now_ns, out);
        self.lose_sync(audit.stream, ResyncReason::Audit, now_ns, out);
    }

    /// Ends the current audit with `outcome` (counted) and schedules the next.
    fn end_audit(&mut self, outcome: AuditOutcome, now_ns: u64, out: &mut impl FeedOutput) {
        let Some(diff) = &mut self.diff else { return };
        let Some(audits) = &mut diff.audits else {
            return;
        };
        let Some(audit) = audits.current.take() else {
            return;
        };
        audits.schedule_next(now_ns, diff.books.len());
        out.note(Some(audit.stream), FeedEvent::Audit(outcome));
    }

    /// Every request was forgotten (the connection is gone): the audit under way, if any,
    /// ends inconclusive.
    pub(super) fn cancel_audit(&mut self, now_ns: u64, out: &mut impl FeedOutput) {
        self.end_audit(AuditOutcome::Inconclusive, now_ns, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::{BTreeMap, BTreeSet};

    fn book_of(
        bids: &BTreeMap<u64, u64>,
        asks: &BTreeMap<u64, u64>,
        max_levels: usize,
    ) -> DepthBook {
        let mut book = DepthBook::new(max_levels);
        book.replace(&snapshot_of(bids, asks));
        book
    }

    /// A snapshot of these sides (price → amount, raw), best first.
    fn snapshot_of(bids: &BTreeMap<u64, u64>, asks: &BTreeMap<u64, u64>) -> BookUpdate {
        let level = |(&price, &amount): (&u64, &u64)| Level::from_raw(price, amount);
        BookUpdate {
            bids: bids.iter().rev().map(level).collect(),
            asks: asks.iter().map(level).collect(),
            ..BookUpdate::default()
        }
    }

    #[test]
    fn only_the_range_both_books_hold_is_compared() {
        let bids = |levels: &[(u64, u64)]| levels.iter().copied().collect::<BTreeMap<_, _>>();
        let book = book_of(&bids(&[(10, 1), (9, 1), (8, 1)]), &BTreeMap::new(), 100);
        let venue = snapshot_of(&bids(&[(10, 1), (9, 1), (7, 5)]), &BTreeMap::new());
        let all = |_| true;
        let found = first_difference(Side::Bid, &book, &venue.bids, all);
        assert_eq!(
            found.map(|d| (d.price.raw(), d.book.raw(), d.venue.raw())),
            Some((8, 1, 0)),
            "8 is within both (down to 8 and to 7); 7 is not in the book's range"
        );
        let venue = snapshot_of(&bids(&[(10, 1), (9, 1)]), &BTreeMap::new());
        assert_eq!(
            first_difference(Side::Bid, &book, &venue.bids, all),
            None,
            "the venue's book ends at 9: the book's 8 is beyond what it shows"
        );
        let touched = |price: FixedPoint| price.raw() != 8;
        let venue = snapshot_of(&bids(&[(10, 1), (9, 1), (7, 5)]), &BTreeMap::new());
        assert_eq!(
            first_difference(Side::Bid, &book, &venue.bids, touched),
            None
        );
        let empty = snapshot_of(&BTreeMap::new(), &BTreeMap::new());
        assert_eq!(first_difference(Side::Bid, &book, &empty.bids, all), None);
    }

    /// An independent reference over ordered maps: the best price, within the range both
    /// sides reach, where the amounts differ and no event touched it.
    fn reference(
        side: Side,
        ours: &BTreeMap<u64, u64>,
        theirs: &BTreeMap<u64, u64>,
        touched: &BTreeSet<u64>,
    ) -> Option<(u64, u64, u64)> {
        let worst = |levels: &BTreeMap<u64, u64>| match side {
            Side::Bid => levels.keys().next().copied(),
            Side::Ask => levels.keys().next_back().copied(),
        };
        let (ours_worst, theirs_worst) = (worst(ours)?, worst(theirs)?);
        let prices: BTreeSet<u64> = ours.keys().chain(theirs.keys()).copied().collect();
        let in_range = |price: u64| match side {
            Side::Bid => price >= ours_worst.max(theirs_worst),
            Side::Ask => price <= ours_worst.min(theirs_worst),
        };
        let differs = |&price: &u64| {
            let (a, b) = (
                ours.get(&price).copied().unwrap_or(0),
                theirs.get(&price).copied().unwrap_or(0),
            );
            (a != b && in_range(price) && !touched.contains(&price)).then_some((price, a, b))
        };
        match side {
            Side::Bid => prices.iter().rev().find_map(differs),
            Side::Ask => prices.iter().find_map(differs),
        }
    }

    proptest! {
        /// Random books, a venue's copy with random changes, some of them touched.
        #[test]
        fn agrees_with_a_reference(
            levels in prop::collection::btree_map(1u64..60, 1u64..5, 0..30),
            changes in prop::collection::vec((1u64..60, 0u64..5, any::<bool>()), 0..8),
            cut_venue in 1usize..40,
        ) {
            let bids: BTreeMap<u64, u64> = levels.iter().map(|(&p, &a)| (p, a)).collect();
            let asks: BTreeMap<u64, u64> = levels.iter().map(|(&p, &a)| (p + 100, a)).collect();
            let (mut venue_bids, mut venue_asks) = (bids.clone(), asks.clone());
            let mut touched = Audits::new(
                AuditSettings { every: Duration::from_secs(1), settle: Duration::ZERO },
                1,
                100,
                0,
            );
            touched.start(0, 0, 0);
            let mut touched_prices = (BTreeSet::new(), BTreeSet::new());
            for &(price, amount, was_touched) in &changes {
                for (side, levels, offset) in [(Side::Bid, &mut venue_bids, 0), (Side::Ask, &mut venue_asks, 100)] {
                    match amount {
                        0 => levels.remove(&(price + offset)),
                        _ => levels.insert(price + offset, amount),
                    };
                    if was_touched {
                        let event = BookUpdate {
                            bids: vec![Level::from_raw(price, 0)],
                            asks: vec![Level::from_raw(price + 100, 0)],
                            ..BookUpdate::default()
                        };
                        touched.touch(0, &event, 0);
                        match side {
                            Side::Bid => touched_prices.0.insert(price + offset),
                            Side::Ask => touched_prices.1.insert(price + offset),
                        };
                    }
                }
            }
            // The venue's snapshot cut to its best `cut_venue` levels a side.
            let venue_bids: BTreeMap<u64, u64> = venue_bids.into_iter().rev().take(cut_venue).collect();
            let venue_asks: BTreeMap<u64, u64> = venue_asks.into_iter().take(cut_venue).collect();
            touched.snapshot = snapshot_of(&venue_bids, &venue_asks);
            let book = book_of(&bids, &asks, 100);
            let expected = reference(Side::Bid, &bids, &venue_bids, &touched_prices.0)
                .map(|found| (Side::Bid, found))
                .or_else(|| reference(Side::Ask, &asks, &venue_asks, &touched_prices.1).map(|found| (Side::Ask, found)));
            let found = touched.compare(&book).expect("within the touched list");
            prop_assert_eq!(
                found.map(|d| (d.side, (d.price.raw(), d.book.raw(), d.venue.raw()))),
                expected
            );
        }
    }
}
