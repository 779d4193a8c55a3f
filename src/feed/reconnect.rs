//! When a reader connects again, pure (no clock, no I/O): one policy every reconnect goes
//! through, whatever ended the connection (a failure, the venue's own request, a short-lived
//! connection), so that a venue misbehaving in any way sees the same bounded attempts.
//!
//! - **Backoff**: exponential with jitter, reset only by a connection that delivered books
//!   for `healthy_after`. A connect that fails, or a connection that ends sooner, doubles it,
//!   so a venue that refuses, closes at once, or answers every subscription with a
//!   "please reconnect" is retried ever less often.
//! - **A venue's request** (Binance `serverShutdown`, Bitstamp `bts:request_reconnect`, a
//!   close frame) after a healthy connection is followed at once.
//! - **Budget**: at most the venue's published number of connection attempts per interval
//!   (Binance bans an IP beyond 300 per 5 minutes), counted over all of the venue's
//!   connections ([`ConnectAttempts`], shared by its readers); an attempt the budget would
//!   exceed waits until the oldest attempt in the interval has left it.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::venue::ConnectBudget;

/// How the connection before a reconnect ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionEnd {
    /// From its first book to its end; zero when it delivered none (or never connected).
    pub delivered_for: Duration,
    /// The venue asked for the reconnect.
    pub venue_asked: bool,
}

/// The connection attempts of one venue, over all its connections, within its budget.
#[derive(Debug)]
pub struct ConnectAttempts {
    budget: ConnectBudget,
    /// Monotonic ns of the attempts that may still share an interval with a new one,
    /// sorted; some may lie ahead (a connection waiting out its backoff reserved them).
    attempts: Vec<u64>,
}

/// A venue's [`ConnectAttempts`], shared by the readers of its connections.
pub type SharedConnectAttempts = Arc<Mutex<ConnectAttempts>>;

impl ConnectAttempts {
    pub fn new(budget: ConnectBudget) -> Self {
        ConnectAttempts {
            budget,
            attempts: Vec::with_capacity(2 * budget.attempts as usize),
        }
    }

    pub fn shared(budget: ConnectBudget) -> SharedConnectAttempts {
        Arc::new(Mutex::new(ConnectAttempts::new(budget)))
    }

    /// Takes the earliest start (monotonic ns), `due_ns` or later, that keeps the venue
    /// within its budget, and counts an attempt then. `now_ns` is the clock (no later than
    /// `due_ns`), which only moves forwards from call to call.
    ///
    /// A start `t` is taken when fewer than `attempts` others lie within `per` of it on
    /// either side: every interval of length `per` that holds `t` lies there, so none
    /// then holds more than `attempts`, whatever order the connections reserved in. For
    /// one connection, whose attempts come in order, that is the sliding window exactly.
    pub fn reserve(&mut self, now_ns: u64, due_ns: u64) -> u64 {
        let per = self.budget.per.as_nanos() as u64;
        // Those a per or more before now share no interval with any start from now on.
        self.attempts
            .retain(|&start| start.saturating_add(per) > now_ns);
        let near = |t: u64| {
            let first = self
                .attempts
                .partition_point(|&start| start.saturating_add(per) <= t);
            let end = self
                .attempts
                .partition_point(|&start| start < t.saturating_add(per));
            end - first
        };
        // The count near `t` only drops where an attempt leaves the interval behind `t`.
        let at = std::iter::once(due_ns)
            .chain(self.attempts.iter().map(|&start| start + per))
            .filter(|&t| t >= due_ns)
            .find(|&t| near(t) < self.budget.attempts as usize)
            .unwrap_or_else(|| self.attempts.last().map_or(due_ns, |&last| last + per));
        let place = self.attempts.partition_point(|&start| start <= at);
        self.attempts.insert(place, at);
        at
    }
}

/// One connection's backoff between its attempts.
#[derive(Debug)]
pub struct ReconnectPolicy {
    initial: Duration,
    max: Duration,
    backoff: Duration,
    healthy_after: Duration,
}

impl ReconnectPolicy {
    pub fn new(initial: Duration, max: Duration, healthy_after: Duration) -> Self {
        ReconnectPolicy {
            initial,
            max,
            backoff: initial,
            healthy_after,
        }
    }

    /// The pause before the next attempt after a connection that ended as `ended`;
    /// `jitter` spreads a backoff (many clients reconnecting after one outage).
    pub fn pause_after(
        &mut self,
        ended: ConnectionEnd,
        jitter: impl FnOnce(Duration) -> Duration,
    ) -> Duration {
        let healthy = ended.delivered_for >= self.healthy_after;
        if healthy {
            self.backoff = self.initial;
            if ended.venue_asked {
                return Duration::ZERO;
            }
        }
        let pause = jitter(self.backoff);
        self.backoff = (self.backoff * 2).min(self.max);
        pause
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn policy() -> ReconnectPolicy {
        ReconnectPolicy::new(
            Duration::from_millis(100),
            Duration::from_millis(1600),
            Duration::from_secs(30),
        )
    }

    fn ended(delivered_for_s: u64, venue_asked: bool) -> ConnectionEnd {
        ConnectionEnd {
            delivered_for: Duration::from_secs(delivered_for_s),
            venue_asked,
        }
    }

    fn no_jitter(backoff: Duration) -> Duration {
        backoff
    }

    /// Failures and short connections, whether the venue asked or not, double the pause;
    /// only a connection that delivered books for `healthy_after` resets it (reset by any
    /// book, every failed connect after one good connection would retry at the first pause).
    #[test]
    fn only_a_healthy_connection_resets_the_backoff() {
        let mut policy = policy();
        let pauses: Vec<u64> = [
            ended(0, false),  // refused
            ended(0, false),  // refused
            ended(5, false),  // books for 5 s, then closed
            ended(0, true),   // "please reconnect" before any book
            ended(29, true),  // a short connection the venue ended
            ended(0, false),  // refused
            ended(60, false), // healthy, then lost
            ended(0, false),
        ]
        .into_iter()
        .map(|end| policy.pause_after(end, no_jitter).as_millis() as u64)
        .collect();
        assert_eq!(pauses, [100, 200, 400, 800, 1600, 1600, 100, 200]);
    }

    #[test]
    fn a_venue_s_request_after_a_healthy_connection_is_followed_at_once() {
        let mut policy = policy();
        policy.pause_after(ended(0, false), no_jitter);
        assert_eq!(
            policy.pause_after(ended(3600, true), no_jitter),
            Duration::ZERO
        );
        assert_eq!(
            policy.pause_after(ended(0, false), no_jitter),
            Duration::from_millis(100),
            "and the backoff starts over"
        );
    }

    /// Whatever the pauses, no interval of `per` holds more than `attempts` attempts: a
    /// venue asking to reconnect after every healthy connection (no pause) included.
    #[test]
    fn attempts_never_exceed_the_budget_in_any_interval() {
        let budget = ConnectBudget {
            attempts: 5,
            per: Duration::from_secs(60),
        };
        let second = Duration::from_secs(1);
        let mut policy = ReconnectPolicy::new(second, second * 8, second);
        let mut attempts = ConnectAttempts::new(budget);
        let mut now = 0;
        let mut starts = Vec::new();
        for _ in 0..40 {
            let at = attempts.reserve(now, now);
            starts.push(at);
            // Healthy for a second, then the venue asks to reconnect: no backoff.
            now = at + 1_000 * MS;
            assert_eq!(
                policy.pause_after(ended(1, true), no_jitter),
                Duration::ZERO
            );
        }
        assert_within_budget(&starts, budget);
        // The budget set the pace: 5 attempts, a second apart, each minute.
        assert_eq!(
            &starts[..6],
            &[
                0,
                1_000 * MS,
                2_000 * MS,
                3_000 * MS,
                4_000 * MS,
                60_000 * MS
            ]
        );
        assert_eq!(starts[39], (7 * 60_000 + 4_000) * MS);
    }

    /// No interval of the budget's length holds more than its attempts.
    fn assert_within_budget(starts: &[u64], budget: ConnectBudget) {
        let mut starts = starts.to_vec();
        starts.sort_unstable();
        let per = budget.per.as_nanos() as u64;
        for (index, &start) in starts.iter().enumerate() {
            let in_window = starts[index..]
                .iter()
                .take_while(|&&s| s < start + per)
                .count();
            assert!(
                in_window <= budget.attempts as usize,
                "{in_window} attempts within {per} ns of {start}: {starts:?}"
            );
        }
    }

    /// Connections of one venue share its budget, in whatever order they reserve: one
    /// waiting out a long backoff (its attempt reserved ahead) takes no more than its
    /// place, and the others go on reconnecting within what is left.
    #[test]
    fn connections_sharing_a_budget_stay_within_it_together() {
        let budget = ConnectBudget {
            attempts: 4,
            per: Duration::from_secs(10),
        };
        let mut attempts = ConnectAttempts::new(budget);
        let mut rng = crate::rng::Rng::new(7);
        let mut starts = Vec::new();
        let mut now = 0;
        for _ in 0..400 {
            // Three connections' attempts: due now, or after a backoff of up to 30 s.
            now += rng.below(3_000) * MS;
            let due = now + [0, rng.below(30_000) * MS][rng.below(2) as usize];
            let at = attempts.reserve(now, due);
            assert!(at >= due);
            starts.push(at);
        }
        assert_within_budget(&starts, budget);
        // And the budget is used, not merely respected: at least half of it over the run.
        let span = starts.iter().max().unwrap() - starts.iter().min().unwrap();
        let most = (span / (10_000 * MS) + 1) * 4;
        assert!(
            starts.len() as u64 * 2 >= most,
            "{} of {most}",
            starts.len()
        );
    }
}
