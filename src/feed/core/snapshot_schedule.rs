//! When a diff-mode book asks for its REST snapshot ([`SnapshotScheduler`]). Pure: times are
//! passed in, the fetch is the reader's (`feed/rest_client.rs`).
//!
//! One scheduler per venue reader serves all its instruments, because the venue's budget
//! is per client IP, not per instrument. It keeps the venue's rules:
//! - a request-weight budget (Binance weighs a depth request by its limit; docs/protocols.md),
//!   refilled continuously, never overdrawn;
//! - at least `spacing` between two requests, so bootstrapping many instruments is spread
//!   out rather than burst (and one request at a time);
//! - after HTTP 429 or 418, nothing until `Retry-After` has passed (or a default pause);
//! - a stream whose snapshots keep arriving too old, or failing, waits longer each time
//!   (exponential, capped) before it asks again;
//! - a stream whose book keeps breaking soon after each sync (bad checksums, gaps) waits
//!   longer each time too, so a venue sending bad data cannot cause a storm of snapshot
//!   requests or resubscriptions;
//! - an audit's request (`feed/core/audit.rs`) is made only when no snapshot is pending or
//!   in flight and the budget has its weight, and is paid from the same budget: audits
//!   never delay a rebuild and never overdraw the venue.

use std::collections::VecDeque;
use std::time::Duration;

/// A venue's snapshot budget and pacing (`venues.<name>.snapshot_*` in the configuration).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SnapshotPolicy {
    /// Request weight the reader may spend per minute.
    pub weight_per_minute: u32,
    /// Least time between two requests.
    pub spacing: Duration,
    /// First retry delay after a too-old or failed snapshot; doubles each time, capped.
    pub retry_initial: Duration,
    pub retry_max: Duration,
    /// The pause after a 429/418 without a usable `Retry-After`.
    pub rate_limited_pause: Duration,
}

/// How a snapshot request ended, as far as scheduling is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FetchOutcome {
    /// The snapshot was used (or the stream no longer needs it).
    Used,
    /// It was older than the events buffered since: ask again, later.
    TooOld,
    /// HTTP 429 or 418: the venue's whole budget is blocked for `retry_after`.
    RateLimited { retry_after: Option<Duration> },
    /// Network error, timeout, other HTTP status, undecodable body.
    Failed,
}

pub struct SnapshotScheduler {
    policy: SnapshotPolicy,
    /// Weight available now (at `refilled_ns`), at most one minute's budget.
    tokens: f64,
    refilled_ns: u64,
    /// No request before this (429/418).
    blocked_until_ns: u64,
    /// No request before this (spacing).
    spaced_until_ns: u64,
    /// Streams waiting for a snapshot, in the order they asked.
    pending: VecDeque<usize>,
    in_flight: Option<usize>,
    /// An audit's request is in flight (one request at a time, whichever its kind).
    audit_in_flight: bool,
    /// Per stream: no request before this (retry backoff), and how many retries in a row.
    retry_at_ns: Vec<u64>,
    retries: Vec<u32>,
    /// Per stream: when its book was last synced, and how many times in a row it was lost
    /// within `retry_max` of that.
    synced_at_ns: Vec<Option<u64>>,
    quick_losses: Vec<u32>,
}

impl SnapshotScheduler {
    pub fn new(policy: SnapshotPolicy, streams: usize, now_ns: u64) -> SnapshotScheduler {
        SnapshotScheduler {
            policy,
            tokens: f64::from(policy.weight_per_minute),
            refilled_ns: now_ns,
            blocked_until_ns: 0,
            spaced_until_ns: 0,
            pending: VecDeque::new(),
            in_flight: None,
            audit_in_flight: false,
            retry_at_ns: vec![0; streams],
            retries: vec![0; streams],
            synced_at_ns: vec![None; streams],
            quick_losses: vec![0; streams],
        }
    }

    /// The backoff after `count` failures in a row: `retry_initial` doubling, capped.
    fn backoff_ns(&self, count: u32) -> u64 {
        let doublings = count.min(20);
        let delay = self
            .policy
            .retry_initial
            .saturating_mul(1 << doublings)
            .min(self.policy.retry_max);
        delay.as_nanos() as u64
    }

    /// `stream`'s book lost sync at `now_ns` (and is asked for now, if `request_now`).
    /// Lost again within `retry_max` of its last sync, the stream first waits a backoff
    /// that grows with each such loss; a book that stayed in sync longer starts over.
    pub fn lost(&mut self, stream: usize, now_ns: u64, request_now: bool) {
        let retry_max = self.policy.retry_max.as_nanos() as u64;
        let soon =
            self.synced_at_ns[stream].is_some_and(|at| now_ns.saturating_sub(at) < retry_max);
        if soon {
            let delay = self.backoff_ns(self.quick_losses[stream]);
            self.quick_losses[stream] += 1;
            self.retry_at_ns[stream] = self.retry_at_ns[stream].max(now_ns + delay);
        } else {
            self.quick_losses[stream] = 0;
        }
        self.synced_at_ns[stream] = None;
        if request_now {
            self.request(stream);
        }
    }

    /// `stream` needs a snapshot (no-op if it already waits for one).
    pub fn request(&mut self, stream: usize) {
        if self.in_flight != Some(stream) && !self.pending.contains(&stream) {
            self.pending.push_back(stream);
        }
    }

    /// A stream added after the others (`FeedCore::list_stream`).
    pub fn add_stream(&mut self) {
        self.retry_at_ns.push(0);
        self.retries.push(0);
        self.synced_at_ns.push(None);
        self.quick_losses.push(0);
    }

    /// Forgets `stream`, delisted: its pending request, the one in flight (whose answer is
    /// discarded when it comes), its backoffs. Its slot may take another stream.
    pub fn forget(&mut self, stream: usize) {
        self.pending.retain(|&pending| pending != stream);
        if self.in_flight == Some(stream) {
            self.in_flight = None;
        }
        self.retry_at_ns[stream] = 0;
        self.retries[stream] = 0;
        self.synced_at_ns[stream] = None;
        self.quick_losses[stream] = 0;
    }

    /// Forgets every pending request and the one in flight (the connection is gone; the
    /// streams ask again once their new buffers start). Budget and blocks are kept.
    pub fn cancel_all(&mut self) {
        self.pending.clear();
        self.in_flight = None;
        self.audit_in_flight = false;
    }

    fn refill(&mut self, now_ns: u64) {
        let per_ns = f64::from(self.policy.weight_per_minute) / 60e9;
        let elapsed = now_ns.saturating_sub(self.refilled_ns) as f64;
        self.tokens =
            (self.tokens + elapsed * per_ns).min(f64::from(self.policy.weight_per_minute));
        self.refilled_ns = self.refilled_ns.max(now_ns);
    }

    /// The next request to make and when (ns): `None` while one is in flight or none is
    /// pending. `weight` is what one request costs.
    pub fn next(&mut self, now_ns: u64, weight: u32) -> Option<(usize, u64)> {
        if self.in_flight.is_some() || self.audit_in_flight {
            return None;
        }
        let venue_at = self.venue_allows_at(now_ns, weight);
        self.pending
            .iter()
            .map(|&stream| (stream, venue_at.max(self.retry_at_ns[stream])))
            .min_by_key(|&(_, at)| at)
    }

    /// When the venue's rules allow a request of `weight` (budget, 429 block, spacing).
    fn venue_allows_at(&mut self, now_ns: u64, weight: u32) -> u64 {
        self.refill(now_ns);
        let per_ns = f64::from(self.policy.weight_per_minute) / 60e9;
        let missing = f64::from(weight) - self.tokens;
        let budget_at = if missing <= 0.0 {
            now_ns
        } else {
            now_ns + (missing / per_ns).ceil() as u64
        };
        budget_at
            .max(self.blocked_until_ns)
            .max(self.spaced_until_ns)
    }

    /// When an audit's request of `weight` may be made: `None` while a request is in
    /// flight or a snapshot is pending (rebuilds go first).
    pub fn audit_allowed_at(&mut self, now_ns: u64, weight: u32) -> Option<u64> {
        let idle = self.in_flight.is_none() && !self.audit_in_flight && self.pending.is_empty();
        idle.then(|| self.venue_allows_at(now_ns, weight))
    }

    /// Records that an audit's request was sent at `now_ns`.
    pub fn audit_started(&mut self, now_ns: u64, weight: u32) {
        self.refill(now_ns);
        self.tokens -= f64::from(weight);
        self.spaced_until_ns = now_ns + self.policy.spacing.as_nanos() as u64;
        self.audit_in_flight = true;
    }

    /// Records how an audit's request ended: a 429 blocks every request as a snapshot's does.
    pub fn audit_finished(&mut self, outcome: FetchOutcome, now_ns: u64) {
        self.audit_in_flight = false;
        if let FetchOutcome::RateLimited { retry_after } = outcome {
            let pause = retry_after.unwrap_or(self.policy.rate_limited_pause);
            self.blocked_until_ns = self.blocked_until_ns.max(now_ns + pause.as_nanos() as u64);
        }
    }

    /// Records that the request for `stream` was sent at `now_ns`.
    pub fn started(&mut self, stream: usize, now_ns: u64, weight: u32) {
        self.refill(now_ns);
        self.tokens -= f64::from(weight);
        self.spaced_until_ns = now_ns + self.policy.spacing.as_nanos() as u64;
        self.pending.retain(|&pending| pending != stream);
        self.in_flight = Some(stream);
    }

    /// Records how the request for `stream` ended; anything but `Used` asks again.
    pub fn finished(&mut self, stream: usize, outcome: FetchOutcome, now_ns: u64) {
        if self.in_flight == Some(stream) {
            self.in_flight = None;
        }
        match outcome {
            FetchOutcome::Used => {
                self.retries[stream] = 0;
                self.synced_at_ns[stream] = Some(now_ns);
                return;
            }
            FetchOutcome::RateLimited { retry_after } => {
                let pause = retry_after.unwrap_or(self.policy.rate_limited_pause);
                self.blocked_until_ns = self.blocked_until_ns.max(now_ns + pause.as_nanos() as u64);
            }
            FetchOutcome::TooOld | FetchOutcome::Failed => {
                self.retry_at_ns[stream] = now_ns + self.backoff_ns(self.retries[stream]);
                self.retries[stream] += 1;
            }
        }
        self.request(stream);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;
    const S: u64 = 1_000 * MS;

    fn policy() -> SnapshotPolicy {
        SnapshotPolicy {
            weight_per_minute: 120,
            spacing: Duration::from_millis(250),
            retry_initial: Duration::from_millis(500),
            retry_max: Duration::from_secs(4),
            rate_limited_pause: Duration::from_secs(60),
        }
    }

    /// Runs the scheduler as a reader would, every request answered at once with
    /// `outcome(stream)`, until no stream is pending; returns the request times.
    fn drive(
        scheduler: &mut SnapshotScheduler,
        weight: u32,
        mut outcome: impl FnMut(usize) -> FetchOutcome,
    ) -> Vec<(usize, u64)> {
        let mut now = 0;
        let mut sent = Vec::new();
        while let Some((stream, at)) = scheduler.next(now, weight) {
            now = now.max(at);
            scheduler.started(stream, now, weight);
            sent.push((stream, now));
            scheduler.finished(stream, outcome(stream), now);
            assert!(sent.len() < 1000);
        }
        sent
    }

    #[test]
    fn bootstraps_are_spread_and_the_budget_is_never_overdrawn() {
        let mut scheduler = SnapshotScheduler::new(policy(), 10, 0);
        for stream in 0..10 {
            scheduler.request(stream);
        }
        scheduler.request(3); // asking twice does not queue twice
        let sent = drive(&mut scheduler, 50, |_| FetchOutcome::Used);
        assert_eq!(sent.len(), 10);
        // Budget 120 a minute, 50 a request: two at once (a minute's budget), then one
        // every 25 s; and never closer than the spacing.
        assert_eq!(sent[0].1, 0);
        assert_eq!(sent[1].1, 250 * MS);
        for pair in sent.windows(2).skip(1) {
            assert!(pair[1].1 - pair[0].1 >= 250 * MS);
        }
        for (index, &(_, at)) in sent.iter().enumerate() {
            // Weight spent up to and including this request never exceeds the budget
            // available by then: 120 at start, plus 2 per second.
            let spent = 50 * (index as u64 + 1);
            let available = 120 + at * 2 / S;
            assert!(spent <= available, "request {index} at {at} ns overdraws");
        }
    }

    #[test]
    fn retry_after_blocks_every_stream() {
        let mut scheduler = SnapshotScheduler::new(policy(), 2, 0);
        scheduler.request(0);
        scheduler.request(1);
        let (stream, at) = scheduler.next(0, 1).unwrap();
        scheduler.started(stream, at, 1);
        scheduler.finished(
            stream,
            FetchOutcome::RateLimited {
                retry_after: Some(Duration::from_secs(7)),
            },
            at,
        );
        let (_, next) = scheduler.next(at, 1).unwrap();
        assert_eq!(next, 7 * S, "Retry-After: 7 holds the venue for 7 s");

        let mut scheduler = SnapshotScheduler::new(policy(), 1, 0);
        scheduler.request(0);
        scheduler.started(0, 0, 1);
        scheduler.finished(0, FetchOutcome::RateLimited { retry_after: None }, 0);
        assert_eq!(scheduler.next(0, 1).unwrap().1, 60 * S, "the default pause");
    }

    #[test]
    fn too_old_snapshots_back_off_exponentially_up_to_the_cap() {
        let mut scheduler = SnapshotScheduler::new(
            SnapshotPolicy {
                weight_per_minute: 1_000_000,
                ..policy()
            },
            1,
            0,
        );
        scheduler.request(0);
        let mut answers = 0;
        let sent = drive(&mut scheduler, 1, |_| {
            answers += 1;
            if answers < 7 {
                FetchOutcome::TooOld
            } else {
                FetchOutcome::Used
            }
        });
        let gaps: Vec<u64> = sent.windows(2).map(|p| (p[1].1 - p[0].1) / MS).collect();
        assert_eq!(gaps, [500, 1000, 2000, 4000, 4000, 4000]);
    }

    /// A book that breaks again right after each sync waits longer each time; one that
    /// stayed synced for `retry_max` starts over.
    #[test]
    fn books_lost_soon_after_each_sync_back_off() {
        let mut scheduler = SnapshotScheduler::new(
            SnapshotPolicy {
                weight_per_minute: 1_000_000,
                spacing: Duration::ZERO,
                ..policy()
            },
            1,
            0,
        );
        let mut now = 0;
        let mut waits = Vec::new();
        for _ in 0..6 {
            scheduler.lost(0, now, true);
            let (_, at) = scheduler.next(now, 1).unwrap();
            waits.push((at - now) / MS);
            scheduler.started(0, at, 1);
            now = at + MS;
            scheduler.finished(0, FetchOutcome::Used, now);
            now += MS; // the next loss comes right after the sync
        }
        assert_eq!(waits, [0, 500, 1000, 2000, 4000, 4000]);
        now += 4 * S; // in sync for retry_max
        scheduler.lost(0, now, true);
        assert_eq!(scheduler.next(now, 1), Some((0, now)), "starts over");
    }

    #[test]
    fn one_request_at_a_time() {
        let mut scheduler = SnapshotScheduler::new(policy(), 2, 0);
        scheduler.request(0);
        scheduler.request(1);
        scheduler.started(0, 0, 1);
        assert_eq!(scheduler.next(0, 1), None);
        scheduler.cancel_all();
        assert_eq!(scheduler.next(0, 1), None, "cancelled");
    }
}
