//! Quotes: what a quantity, or a notional, costs across an instrument's merged books,
//! and where it would fill. Each venue's book is walked level by level: its whole book
//! where its reader hands one over (diff mode, `book::full_depth`), its top N otherwise,
//! each level converted and netted of fees as the summary's are
//! ([`SourceTerms`](super::consolidation::SourceTerms)), the venues' levels taken best
//! first in the merge's order.
//!
//! A quote is answered on the merger thread between its passes, from the books of the
//! summary it published last (the mailboxes' front slots hold exactly those), so that it
//! names that summary's sequence. Requests wait in a bounded queue ([`QuoteInbox`]); a full
//! queue refuses at once, and the merger answers a few a round, so quotes never hold up
//! the merge.
//!
//! Exact: amounts in 10^-8 (a `FixedPoint`'s raw units) and notionals in 10^-16 (a price
//! times an amount, unrounded), both in `u128`; the average price is rounded against the
//! trader (up for a buy, down for a sell). A notional target takes the last level's
//! amount rounded down, so a quote never spends (or raises) more than it was asked to;
//! the walk ends at that level.

use super::consolidation::{Consolidation, SourceTerms};
use super::summary::MAX_SOURCES;
use crate::book::full_depth::FullDepth;
use crate::book::{Level, Side};
use crate::fixed::{FixedPoint, SCALE};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, mpsc};

/// Which way the trader deals.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QuoteSide {
    /// Takes the asks.
    Buy,
    /// Hits the bids.
    Sell,
}

impl QuoteSide {
    /// The side of the book it takes.
    pub fn book_side(self) -> Side {
        match self {
            QuoteSide::Buy => Side::Ask,
            QuoteSide::Sell => Side::Bid,
        }
    }
}

/// How much to deal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    /// An amount in the instrument's amount unit.
    Quantity(FixedPoint),
    /// A value in its currency: what to spend (buy) or raise (sell).
    Notional(FixedPoint),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QuoteRequest {
    /// Index of the instrument in the configuration.
    pub instrument: usize,
    pub side: QuoteSide,
    pub target: Target,
    /// Prices net of the venues' taker fees (the all-in book's).
    pub all_in: bool,
}

/// What one source contributes to a quote.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SourceFill {
    /// Whether the source was in the merge (and so in the quote).
    pub merged: bool,
    /// Whether its whole book was walked (`false`: its top N only).
    pub full_depth: bool,
    /// Its sequence (as `Summary::source_sequence`) of the book walked.
    pub sequence: u64,
    /// Amount taken, raw (10^-8).
    pub filled: u128,
    /// Price times amount taken, in 10^-16.
    pub notional: u128,
    /// Levels taken from, the last perhaps in part.
    pub levels: u32,
}

/// A quote's answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quote {
    /// The sequence of the summary whose books were walked.
    pub sequence: u64,
    /// Amount taken, raw (10^-8).
    pub filled: u128,
    /// Price times amount taken, in 10^-16.
    pub notional: u128,
    /// `notional / filled`, rounded against the trader; `None` where nothing was taken.
    pub average_price: Option<FixedPoint>,
    /// The last level's price; `None` where nothing was taken.
    pub worst_price: Option<FixedPoint>,
    /// The books ran out before the target.
    pub exhausted: bool,
    /// By source, in the instrument's order (`sources` of them).
    pub fills: [SourceFill; MAX_SOURCES],
    pub sources: usize,
}

/// Why a quote could not be answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum QuoteError {
    #[error("no summary of the instrument yet: none of its venues has sent a book")]
    NoSummary,
    #[error("the instrument counts its amounts as notionals: ask for a quantity")]
    NotionalOfNotionals,
    #[error("the quote queue is full: the merger answers a few quotes a round")]
    Overloaded,
    #[error("the merger has stopped")]
    Stopped,
    #[error("the instrument was delisted by a reload")]
    Delisted,
}

/// A request and where its answer goes.
pub struct QuoteJob {
    pub request: QuoteRequest,
    pub reply: tokio::sync::oneshot::Sender<Result<Quote, QuoteError>>,
}

/// The requests' end of the queue: the gRPC server's.
#[derive(Clone)]
pub struct QuoteSender {
    queue: mpsc::SyncSender<QuoteJob>,
    waiting: Arc<AtomicUsize>,
    merger: Arc<std::sync::OnceLock<std::thread::Thread>>,
}

/// The merger's end.
pub struct QuoteInbox {
    queue: mpsc::Receiver<QuoteJob>,
    /// Requests queued and not yet taken (counted after the send, so it may lag the queue
    /// by a round, and wraps below zero for as long): the merger's idle loop reads this
    /// one word rather than try the channel, whose receive was a fortieth of an idle
    /// merger's samples in a profile.
    waiting: Arc<AtomicUsize>,
}

/// Quotes answered a merger round at most: the rest wait for the next round, so that a
/// burst of them delays the merge by a bounded amount.
pub const QUOTES_PER_ROUND: usize = 4;

/// A queue of `capacity` requests, and the handle the merger's thread is set in once it
/// runs (a request wakes it under the `park` idle strategy).
pub fn quote_queue(
    capacity: usize,
) -> (
    QuoteSender,
    QuoteInbox,
    std::sync::Arc<std::sync::OnceLock<std::thread::Thread>>,
) {
    let (queue, inbox) = mpsc::sync_channel(capacity);
    let merger = Arc::default();
    let waiting = Arc::default();
    let sender = QuoteSender {
        queue,
        waiting: Arc::clone(&waiting),
        merger: Arc::clone(&merger),
    };
    let inbox = QuoteInbox {
        queue: inbox,
        waiting,
    };
    (sender, inbox, merger)
}

impl QuoteSender {
    /// Queues `request` and waits for its answer; refused at once where the queue is full.
    pub async fn ask(&self, request: QuoteRequest) -> Result<Quote, QuoteError> {
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.enqueue(QuoteJob { request, reply })?;
        if let Some(merger) = self.merger.get() {
            merger.unpark();
        }
        answer.await.unwrap_or(Err(QuoteError::Stopped))
    }

    fn enqueue(&self, job: QuoteJob) -> Result<(), QuoteError> {
        match self.queue.try_send(job) {
            Ok(()) => {}
            Err(mpsc::TrySendError::Full(_)) => return Err(QuoteError::Overloaded),
            Err(mpsc::TrySendError::Disconnected(_)) => return Err(QuoteError::Stopped),
        }
        self.waiting.fetch_add(1, Ordering::Release);
        Ok(())
    }
}

impl QuoteInbox {
    /// Answers up to `QUOTES_PER_ROUND` waiting requests with `answer`; whether any was.
    #[inline]
    pub fn answer_some(
        &self,
        answer: impl FnMut(&QuoteRequest) -> Result<Quote, QuoteError>,
    ) -> bool {
        if self.waiting.load(Ordering::Acquire) == 0 {
            return false;
        }
        self.answer_waiting(answer)
    }

    /// `answer_some` once a request waits: apart, so that the idle loop's check is inlined
    /// into it and the rest is not.
    #[inline(never)]
    fn answer_waiting(
        &self,
        mut answer: impl FnMut(&QuoteRequest) -> Result<Quote, QuoteError>,
    ) -> bool {
        let mut answered = 0;
        for job in self.queue.try_iter().take(QUOTES_PER_ROUND) {
            // A requester that gave up has dropped its end: nothing to tell it.
            let _ = job.reply.send(answer(&job.request));
            answered += 1;
        }
        self.waiting.fetch_sub(answered, Ordering::Relaxed);
        answered > 0
    }
}

/// One source's walk: its levels best first, from its whole book or its top.
struct Cursor<'a> {
    terms: SourceTerms<'a>,
    /// The whole book's side, worst first (walked from its end), or the top's, best first.
    levels: &'a [Level],
    worst_first: bool,
    next: usize,
    /// Scales a whole book's amounts, in contracts, to the base coin as the top's are.
    contract_size: Option<FixedPoint>,
    /// The level it offers now, in the instrument's terms.
    head: Option<Level>,
}

impl Cursor<'_> {
    /// Moves `head` to the next level that converts to an amount; `None` past the last,
    /// past a bid worth nothing, and past a level that goes out of range (as the summary
    /// leaves out a book it cannot convert, the walk leaves out what lies beyond).
    fn advance(&mut self, side: Side, all_in: bool) {
        self.head = None;
        while self.next < self.levels.len() {
            let at = match self.worst_first {
                true => self.levels.len() - 1 - self.next,
                false => self.next,
            };
            self.next += 1;
            let mut level = self.levels[at];
            if let Some(size) = self.contract_size {
                let Some(amount) = level.amount.checked_mul(size) else {
                    self.next = self.levels.len();
                    return;
                };
                level.amount = amount;
            }
            match self.terms.level(side, level, all_in) {
                Ok(Some(level)) if level.amount.is_zero() => {}
                Ok(Some(level)) => {
                    self.head = Some(level);
                    return;
                }
                Ok(None) | Err(_) => {
                    self.next = self.levels.len();
                    return;
                }
            }
        }
    }
}

/// Answers `request` over `consolidation`'s merged sources, `full_depth(source)` being
/// each source's whole book as its reader last handed it over.
pub fn quote<'a>(
    consolidation: &'a Consolidation,
    full_depth: impl Fn(usize) -> &'a FullDepth,
    request: &QuoteRequest,
) -> Result<Quote, QuoteError> {
    if consolidation.sequence() == 0 {
        return Err(QuoteError::NoSummary);
    }
    if let (Target::Notional(_), true) = (request.target, consolidation.counts_notionals()) {
        return Err(QuoteError::NotionalOfNotionals);
    }
    let side = request.side.book_side();
    let count = consolidation.source_count();
    let mut answer = Quote {
        sequence: consolidation.sequence(),
        filled: 0,
        notional: 0,
        average_price: None,
        worst_price: None,
        exhausted: false,
        fills: [SourceFill::default(); MAX_SOURCES],
        sources: count,
    };
    let mut cursors: [Option<Cursor<'a>>; MAX_SOURCES] = Default::default();
    for (source, cursor) in cursors.iter_mut().enumerate().take(count) {
        let Some(terms) = consolidation.merged_source(source) else {
            continue;
        };
        let whole = full_depth(source);
        let fill = &mut answer.fills[source];
        fill.merged = true;
        fill.full_depth = whole.is_present();
        fill.sequence = terms.book.venue_sequence;
        let (levels, worst_first, contract_size) = match whole.is_present() {
            true => (whole.worst_first(side), true, whole.contract_size),
            false => (terms.book.side(side).as_slice(), false, None),
        };
        let mut walk = Cursor {
            terms,
            levels,
            worst_first,
            next: 0,
            contract_size,
            head: None,
        };
        walk.advance(side, request.all_in);
        *cursor = Some(walk);
    }
    // What is left to take: an amount (10^-8), or a notional (10^-16).
    let mut left = match request.target {
        Target::Quantity(amount) => u128::from(amount.raw()),
        Target::Notional(value) => u128::from(value.raw()) * u128::from(SCALE),
    };
    while left > 0 {
        let Some(best) = best_head(&cursors, side) else {
            answer.exhausted = true;
            break;
        };
        let cursor = cursors[best].as_mut().expect("the best head's cursor");
        let level = cursor.head.expect("a head");
        let (price, amount) = (
            u128::from(level.price.raw()),
            u128::from(level.amount.raw()),
        );
        let taken = match request.target {
            Target::Quantity(_) => amount.min(left),
            // The whole level where the notional covers it, else what it buys rounded
            // down; a price above what is left buys nothing: the target is met.
            Target::Notional(_) => match price * amount <= left {
                true => amount,
                false => left / price,
            },
        };
        if taken == 0 {
            break;
        }
        left -= match request.target {
            Target::Quantity(_) => taken,
            Target::Notional(_) => price * taken,
        };
        let fill = &mut answer.fills[best];
        fill.filled += taken;
        fill.notional += price * taken;
        fill.levels += 1;
        answer.filled += taken;
        answer.notional += price * taken;
        answer.worst_price = Some(level.price);
        if taken == amount {
            cursor.advance(side, request.all_in);
        } else {
            break;
        }
    }
    answer.average_price = average(answer.notional, answer.filled, request.side);
    Ok(answer)
}

/// Where a head comes in the merge's order, first lowest: its price's rank, its amount
/// (larger first), its venue. Sources are visited in order, so the lower of two equal
/// heads' sources wins, as in the merge.
type HeadOrder = (u64, std::cmp::Reverse<u64>, usize);

/// The source whose head comes first in the merge's order: better price, larger amount,
/// lower venue, lower source.
fn best_head(cursors: &[Option<Cursor<'_>>; MAX_SOURCES], side: Side) -> Option<usize> {
    let mut best: Option<(usize, HeadOrder)> = None;
    for (source, cursor) in cursors.iter().enumerate() {
        let Some((cursor, level)) = cursor.as_ref().and_then(|c| Some((c, c.head?))) else {
            continue;
        };
        let key = (
            side.rank(level.price),
            std::cmp::Reverse(level.amount.raw()),
            cursor.terms.venue.index(),
        );
        if best.is_none_or(|(_, best_key)| key < best_key) {
            best = Some((source, key));
        }
    }
    best.map(|(source, _)| source)
}

/// `notional / filled` as a price (10^-8), rounded up for a buy and down for a sell.
pub fn average(notional: u128, filled: u128, side: QuoteSide) -> Option<FixedPoint> {
    if filled == 0 {
        return None;
    }
    let price = match side {
        QuoteSide::Buy => notional.div_ceil(filled),
        QuoteSide::Sell => notional / filled,
    };
    u64::try_from(price).ok().map(FixedPoint::from_raw)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::book::{BookUpdate, DepthBook, TopBook};
    use crate::feed::handoff::VenueFeed;
    use crate::merger::summary::{Summary, VenueState};
    use crate::units::TakerFee;
    use crate::venue::VenueId;
    use proptest::prelude::*;

    const VENUES: [VenueId; 3] = [VenueId::Binance, VenueId::Bitstamp, VenueId::Kraken];
    const SCALE: u128 = 100_000_000;

    /// One venue's book for a test: distinct prices, best first, with amounts; its fee (in
    /// 10^-4 bp) and whether its reader hands over its whole book.
    #[derive(Clone, Debug)]
    struct Venue {
        bids: Vec<(u64, u64)>,
        asks: Vec<(u64, u64)>,
        fee: u32,
        full_depth: bool,
    }

    fn side_levels(bids: bool) -> impl Strategy<Value = Vec<(u64, u64)>> {
        proptest::collection::btree_map(1_000u64..3_000, 1u64..5_000_000_000, 1..40).prop_map(
            move |map| {
                let mut levels: Vec<(u64, u64)> = map
                    .into_iter()
                    .map(|(price, amount)| {
                        (
                            price * 1_000_000 + if bids { 0 } else { 3_000_000_000 },
                            amount,
                        )
                    })
                    .collect();
                if bids {
                    levels.reverse();
                }
                levels
            },
        )
    }

    fn venue() -> impl Strategy<Value = Venue> {
        (
            side_levels(true),
            side_levels(false),
            prop_oneof![Just(0u32), 0u32..=1_000_000],
            any::<bool>(),
        )
            .prop_map(|(bids, asks, fee, full_depth)| Venue {
                bids,
                asks,
                fee,
                full_depth,
            })
    }

    /// The instrument's books as the merger holds them after one summary, top `depth`,
    /// and each venue's whole book handed over where it is.
    fn merged(venues: &[Venue], depth: usize) -> (Consolidation, Vec<FullDepth>) {
        let sources = &VENUES[..venues.len()];
        let mut consolidation = Consolidation::new(0, depth, sources);
        let fees: Vec<TakerFee> = venues
            .iter()
            .map(|v| TakerFee::from_bps(FixedPoint::from_raw(u64::from(v.fee) * 10_000)).unwrap())
            .collect();
        consolidation.set_taker_fees(&fees, 1);
        let mut wholes = Vec::new();
        for (source, venue) in venues.iter().enumerate() {
            let level = |&(price, amount): &(u64, u64)| Level::from_raw(price, amount);
            let snapshot = BookUpdate {
                bids: venue.bids.iter().map(level).collect(),
                asks: venue.asks.iter().map(level).collect(),
                ..BookUpdate::default()
            };
            let mut book = DepthBook::new(100);
            if venue.full_depth {
                book = book.with_journal();
            }
            book.replace(&snapshot);
            let mut feed = VenueFeed {
                state: VenueState::Synced,
                book: TopBook {
                    venue_sequence: 7 + source as u64,
                    received_ns: 1,
                    ..TopBook::default()
                },
                ..VenueFeed::default()
            };
            book.top(depth, &mut feed.book);
            feed.full_depth.update_from(&book);
            consolidation.apply(source, &feed);
            wholes.push(feed.full_depth);
        }
        consolidation.summarize(1, &mut Summary::default());
        (consolidation, wholes)
    }

    /// The quote computed apart: every level each venue shows (whole or top `depth`), net
    /// of its fee where `all_in` (a bid down, an ask up, to 10^-8), sorted by the merge's
    /// order, taken greedily. (filled, notional, levels by venue, filled by venue, worst,
    /// exhausted).
    #[allow(clippy::type_complexity)]
    fn reference(
        venues: &[Venue],
        depth: usize,
        request: &QuoteRequest,
    ) -> (u128, u128, Vec<u32>, Vec<u128>, Option<u64>, bool) {
        let buy = request.side == QuoteSide::Buy;
        let mut levels: Vec<(u128, u128, usize)> = Vec::new();
        for (source, venue) in venues.iter().enumerate() {
            let side = if buy { &venue.asks } else { &venue.bids };
            let shown = if venue.full_depth {
                side.len()
            } else {
                depth.min(side.len())
            };
            let fee = u128::from(venue.fee);
            for &(price, amount) in &side[..shown] {
                let price = u128::from(price);
                let price = match (request.all_in && fee > 0, buy) {
                    (false, _) => price,
                    (true, true) => (price * (SCALE + fee)).div_ceil(SCALE),
                    (true, false) => price * (SCALE - fee) / SCALE,
                };
                levels.push((price, u128::from(amount), source));
            }
        }
        levels.sort_by(|a, b| {
            let price = if buy { a.0.cmp(&b.0) } else { b.0.cmp(&a.0) };
            price.then(b.1.cmp(&a.1)).then(a.2.cmp(&b.2))
        });
        let (mut filled, mut notional) = (0u128, 0u128);
        let mut by_levels = vec![0u32; venues.len()];
        let mut by_filled = vec![0u128; venues.len()];
        let mut worst = None;
        let mut left = match request.target {
            Target::Quantity(amount) => u128::from(amount.raw()),
            Target::Notional(value) => u128::from(value.raw()) * SCALE,
        };
        let mut exhausted = true;
        for (price, amount, source) in levels {
            if left == 0 {
                exhausted = false;
                break;
            }
            let take = match request.target {
                Target::Quantity(_) => amount.min(left),
                Target::Notional(_) => amount.min(left / price),
            };
            if take == 0 {
                exhausted = false;
                break;
            }
            left -= match request.target {
                Target::Quantity(_) => take,
                Target::Notional(_) => take * price,
            };
            filled += take;
            notional += take * price;
            by_levels[source] += 1;
            by_filled[source] += take;
            worst = Some(price as u64);
            if take < amount {
                // A level taken in part ends the walk: a notional's last fraction of a
                // unit is not sought in worse levels.
                exhausted = false;
                break;
            }
        }
        if left == 0 {
            exhausted = false;
        }
        (filled, notional, by_levels, by_filled, worst, exhausted)
    }

    proptest! {
        /// Random books of up to three venues, some handing over their whole books, with
        /// random fees: every quote, by quantity or notional, either side, all-in or not,
        /// is the reference's; its average price is rounded against the trader and never
        /// better than the best level taken.
        #[test]
        fn every_quote_equals_an_independent_walk(
            venues in proptest::collection::vec(venue(), 1..=3),
            depth in 1usize..=10,
            buy in any::<bool>(),
            all_in in any::<bool>(),
            by_notional in any::<bool>(),
            amount in 1u64..200_000_000_000,
        ) {
            let (consolidation, wholes) = merged(&venues, depth);
            let request = QuoteRequest {
                instrument: 0,
                side: if buy { QuoteSide::Buy } else { QuoteSide::Sell },
                target: match by_notional {
                    true => Target::Notional(FixedPoint::from_raw(amount * 1_000)),
                    false => Target::Quantity(FixedPoint::from_raw(amount)),
                },
                all_in,
            };
            let answer = quote(&consolidation, |source| &wholes[source], &request).unwrap();
            let (filled, notional, levels, by_filled, worst, exhausted) =
                reference(&venues, depth, &request);
            prop_assert_eq!(answer.filled, filled);
            prop_assert_eq!(answer.notional, notional);
            prop_assert_eq!(answer.worst_price.map(FixedPoint::raw), worst);
            prop_assert_eq!(answer.exhausted, exhausted);
            prop_assert_eq!(answer.sequence, 1);
            for (source, fill) in answer.fills[..venues.len()].iter().enumerate() {
                prop_assert!(fill.merged);
                prop_assert_eq!(fill.full_depth, venues[source].full_depth);
                prop_assert_eq!(fill.sequence, 7 + source as u64);
                prop_assert_eq!(fill.levels, levels[source]);
                prop_assert_eq!(fill.filled, by_filled[source]);
            }
            if let Some(average) = answer.average_price {
                let average = u128::from(average.raw());
                match buy {
                    // Never below the exact average, by less than 10^-8.
                    true => prop_assert!(average * filled >= notional && (average - 1) * filled < notional),
                    false => prop_assert!(average * filled <= notional && (average + 1) * filled > notional),
                }
            }
        }
    }

    #[test]
    fn a_quote_before_any_summary_is_refused() {
        let consolidation = Consolidation::new(0, 5, &[VenueId::Binance]);
        let request = QuoteRequest {
            instrument: 0,
            side: QuoteSide::Buy,
            target: Target::Quantity(FixedPoint::ONE),
            all_in: false,
        };
        let none = FullDepth::default();
        assert_eq!(
            quote(&consolidation, |_| &none, &request),
            Err(QuoteError::NoSummary)
        );
    }

    /// A full queue refuses at once; a queue whose merger is gone says so.
    #[tokio::test]
    async fn a_full_queue_refuses_and_a_stopped_merger_is_said() {
        let (sender, inbox, _) = quote_queue(1);
        let request = QuoteRequest {
            instrument: 0,
            side: QuoteSide::Sell,
            target: Target::Quantity(FixedPoint::ONE),
            all_in: false,
        };
        let (reply, _waiting) = tokio::sync::oneshot::channel();
        sender.enqueue(QuoteJob { request, reply }).unwrap();
        assert_eq!(sender.ask(request).await, Err(QuoteError::Overloaded));
        // The merger answers what waits, a few a round.
        let mut asked = 0;
        assert!(inbox.answer_some(|_| {
            asked += 1;
            Err(QuoteError::NoSummary)
        }));
        assert_eq!(asked, 1);
        assert!(!inbox.answer_some(|_| unreachable!("none waits")));
        drop(inbox);
        assert_eq!(sender.ask(request).await, Err(QuoteError::Stopped));
    }
}
