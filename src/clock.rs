//! Time. One monotonic clock (ns since the first call in this process) for latencies and
//! staleness, so readers and the merger measure on the same base; the Unix clock only for
//! timestamps consumers read. Both are vDSO reads, not system calls.

use std::sync::LazyLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

static ORIGIN: LazyLock<Instant> = LazyLock::new(Instant::now);

/// The Unix time (ns) of `ORIGIN`, read once: `unix_of_monotonic` turns a monotonic
/// receive time into the wall-clock time a recording states, the same offset for every
/// frame, so differences between recorded times are the monotonic clock's.
static UNIX_AT_ORIGIN: LazyLock<u64> = LazyLock::new(|| {
    let origin = *ORIGIN;
    unix_ns().saturating_sub(origin.elapsed().as_nanos() as u64)
});

/// Nanoseconds on the process's monotonic clock.
#[inline]
pub fn monotonic_ns() -> u64 {
    ORIGIN.elapsed().as_nanos() as u64
}

/// The Unix time (ns) of `monotonic_ns`, on an offset fixed for the process's life.
#[inline]
pub fn unix_of_monotonic(monotonic_ns: u64) -> u64 {
    *UNIX_AT_ORIGIN + monotonic_ns
}

/// Nanoseconds since the Unix epoch.
#[inline]
pub fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos() as u64)
}

/// The host's Unix clock as the feed delays read it (a venue's time against the time its
/// book was received). A receive time is on the monotonic clock; it becomes Unix time
/// through the offset between the two clocks, which [`HostClock::sample`] reads every
/// [`HostClock::SAMPLE_EVERY`]. NTP's slewing moves both clocks alike, so the offset holds
/// still; a step of the Unix clock (set by hand, by an NTP client stepping it, a VM
/// resumed) moves it. A step is reported and, for [`HostClock::STEADY_AFTER_STEP`], no
/// delay is measured: a delay across a step would be off by the step's size, negative or
/// huge, and says nothing of the venue.
///
/// Whether the kernel counts its clock as synchronised (`adjtimex`'s `STA_UNSYNC`) is not
/// read: the call needs `unsafe`, which this crate keeps to the mailbox. A clock that is off
/// shows as every venue's delay off alike, behind as negative delays (counted apart).
#[derive(Debug)]
pub struct HostClock {
    /// Unix ns at monotonic 0, as last sampled.
    unix_at_zero_ns: AtomicU64,
    /// The monotonic ns before which no delay is measured (after a step).
    steady_from_ns: AtomicU64,
}

impl HostClock {
    /// How often the service samples the clocks' offset.
    pub const SAMPLE_EVERY: Duration = Duration::from_millis(100);
    /// A change of the offset beyond this between two samples is a step. NTP slews at
    /// most 500 ppm (50 µs in a sample's 100 ms), and a sample is taken only when its two
    /// reads of the monotonic clock are within `SAMPLE_READ_WITHIN_NS` of each other.
    pub const STEP_NS: u64 = 1_000_000;
    /// How long after a step no delay is measured.
    pub const STEADY_AFTER_STEP: Duration = Duration::from_secs(10);
    /// A sample whose reads straddle more than this (the thread was preempted between
    /// them) is not taken.
    const SAMPLE_READ_WITHIN_NS: u64 = 100_000;

    /// The clocks' offset, read now.
    pub fn new() -> HostClock {
        HostClock::starting_at(unix_ns(), monotonic_ns())
    }

    /// The offset of a reading of the Unix clock (`unix_ns`) at monotonic `monotonic_ns`.
    pub fn starting_at(unix_ns: u64, monotonic_ns: u64) -> HostClock {
        HostClock {
            unix_at_zero_ns: AtomicU64::new(unix_ns.saturating_sub(monotonic_ns)),
            steady_from_ns: AtomicU64::new(0),
        }
    }

    /// Reads both clocks and takes the reading ([`HostClock::sample`]), unless a
    /// preemption between the reads made it imprecise.
    pub fn sample_now(&self) -> Option<i64> {
        let before = monotonic_ns();
        let unix = unix_ns();
        let after = monotonic_ns();
        if after - before > Self::SAMPLE_READ_WITHIN_NS {
            return None;
        }
        self.sample(unix, before + (after - before) / 2)
    }

    /// Takes a reading of the Unix clock (`unix_ns`) at monotonic `monotonic_ns`: the new
    /// offset. Returns the step (ns, signed) where the offset moved by more than
    /// [`HostClock::STEP_NS`]; no delay is measured for [`HostClock::STEADY_AFTER_STEP`].
    pub fn sample(&self, unix_ns: u64, monotonic_ns: u64) -> Option<i64> {
        let unix_at_zero = unix_ns.saturating_sub(monotonic_ns);
        let previous = self.unix_at_zero_ns.swap(unix_at_zero, Ordering::Relaxed);
        let step = unix_at_zero as i64 - previous as i64;
        if step.unsigned_abs() <= Self::STEP_NS {
            return None;
        }
        let steady_from = monotonic_ns + Self::STEADY_AFTER_STEP.as_nanos() as u64;
        self.steady_from_ns.store(steady_from, Ordering::Relaxed);
        Some(step)
    }

    /// The Unix time (ns) of monotonic `monotonic_ns`, or `None` within
    /// [`HostClock::STEADY_AFTER_STEP`] of a step.
    #[inline]
    pub fn unix_of(&self, monotonic_ns: u64) -> Option<u64> {
        if monotonic_ns < self.steady_from_ns.load(Ordering::Relaxed) {
            return None;
        }
        Some(self.unix_at_zero_ns.load(Ordering::Relaxed) + monotonic_ns)
    }

    /// Whether delays are measured at monotonic `monotonic_ns` (no step within
    /// [`HostClock::STEADY_AFTER_STEP`]).
    pub fn is_steady(&self, monotonic_ns: u64) -> bool {
        monotonic_ns >= self.steady_from_ns.load(Ordering::Relaxed)
    }
}

impl Default for HostClock {
    fn default() -> Self {
        HostClock::new()
    }
}

/// The delay from a venue's time of a book (`exchange_ns`, Unix) to `unix_ns`, signed: a
/// negative delay means one of the two clocks is off.
#[inline]
pub fn delay_ns(exchange_ns: u64, unix_ns: u64) -> i64 {
    unix_ns as i64 - exchange_ns as i64
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECOND: u64 = 1_000_000_000;

    /// A clock slewed within NTP's rate keeps its offset; a step moves it, is reported once
    /// with its size and sign, and no delay is measured until the clock has been steady for
    /// `STEADY_AFTER_STEP`, then on the new offset.
    #[test]
    fn a_step_is_reported_and_no_delay_is_measured_across_it() {
        let unix = 1_800_000_000 * SECOND;
        let clock = HostClock::starting_at(unix, 5 * SECOND);
        assert_eq!(clock.unix_of(6 * SECOND), Some(unix + SECOND));
        // 50 µs of slew in 100 ms: no step.
        assert_eq!(
            clock.sample(unix + SECOND / 10 + 50_000, 5 * SECOND + SECOND / 10),
            None
        );
        assert_eq!(clock.unix_of(6 * SECOND), Some(unix + SECOND + 50_000));
        // The Unix clock set back an hour.
        let back = 3600 * SECOND;
        let at = 6 * SECOND;
        assert_eq!(
            clock.sample(unix + SECOND - back, at),
            Some(-(back as i64) - 50_000)
        );
        assert!(!clock.is_steady(at));
        assert_eq!(clock.unix_of(at + 9 * SECOND), None);
        let steady = at + HostClock::STEADY_AFTER_STEP.as_nanos() as u64;
        assert!(clock.is_steady(steady));
        assert_eq!(
            clock.unix_of(steady),
            Some(unix + SECOND - back + (steady - at))
        );
    }

    #[test]
    fn a_delay_is_signed() {
        assert_eq!(delay_ns(1_000, 1_250), 250);
        assert_eq!(delay_ns(1_250, 1_000), -250);
    }
}
