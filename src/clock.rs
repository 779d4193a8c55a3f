//! Time. One monotonic clock (ns since the first call in this process) for latencies and
//! staleness, so readers and the merger measure on the same base; the Unix clock only for
//! timestamps consumers read. Both are vDSO reads, not system calls.

use std::sync::LazyLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

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
