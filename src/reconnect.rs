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
//!   (Binance bans an IP beyond 300 per 5 minutes); an attempt the budget would exceed
//!   waits until the oldest attempt in the interval has left it.

use std::collections::VecDeque;
use std::time::Duration;

/// A venue's limit on connection attempts: at most `attempts` per `per`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectBudget {
    pub attempts: u32,
    pub per: Duration,
}

/// How the connection before a reconnect ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionEnd {
    /// From its first book to its end; zero when it delivered none (or never connected).
    pub delivered_for: Duration,
    /// The venue asked for the reconnect.
    pub venue_asked: bool,
}

#[derive(Debug)]
pub struct ReconnectPolicy {
    initial: Duration,
    max: Duration,
    backoff: Duration,
    healthy_after: Duration,
    budget: ConnectBudget,
    /// Monotonic ns of the latest attempts, oldest first, at most `budget.attempts`.
    attempts: VecDeque<u64>,
}

impl ReconnectPolicy {
    pub fn new(
        initial: Duration,
        max: Duration,
        healthy_after: Duration,
        budget: ConnectBudget,
    ) -> Self {
        ReconnectPolicy {
            initial,
            max,
            backoff: initial,
            healthy_after,
            budget,
            attempts: VecDeque::with_capacity(budget.attempts as usize),
        }
    }

    /// The earliest time (monotonic ns) a connection attempt may start, `now_ns` or later.
    pub fn earliest_attempt(&self, now_ns: u64) -> u64 {
        match self.attempts.front() {
            Some(&oldest) if self.attempts.len() >= self.budget.attempts as usize => {
                now_ns.max(oldest + self.budget.per.as_nanos() as u64)
            }
            _ => now_ns,
        }
    }

    /// Records an attempt that starts at `at_ns` (no earlier than `earliest_attempt`).
    pub fn attempted(&mut self, at_ns: u64) {
        if self.attempts.len() >= self.budget.attempts as usize {
            self.attempts.pop_front();
        }
        self.attempts.push_back(at_ns);
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

    fn policy(budget: ConnectBudget) -> ReconnectPolicy {
        ReconnectPolicy::new(
            Duration::from_millis(100),
            Duration::from_millis(1600),
            Duration::from_secs(30),
            budget,
        )
    }

    const GENEROUS: ConnectBudget = ConnectBudget {
        attempts: 1000,
        per: Duration::from_secs(1),
    };

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
        let mut policy = policy(GENEROUS);
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
        let mut policy = policy(GENEROUS);
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
        let mut policy = ReconnectPolicy::new(second, second * 8, second, budget);
        let mut now = 0;
        let mut starts = Vec::new();
        for _ in 0..40 {
            let at = policy.earliest_attempt(now);
            policy.attempted(at);
            starts.push(at);
            // Healthy for a second, then the venue asks to reconnect: no backoff.
            now = at + 1_000 * MS;
            assert_eq!(
                policy.pause_after(ended(1, true), no_jitter),
                Duration::ZERO
            );
        }
        for (index, &start) in starts.iter().enumerate() {
            let window_end = start + 60_000 * MS;
            let in_window = starts[index..]
                .iter()
                .take_while(|&&s| s < window_end)
                .count();
            assert!(
                in_window <= 5,
                "{in_window} attempts within 60 s of {start}"
            );
        }
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
}
