//! Time. One monotonic clock (ns since the first call in this process) for latencies and
//! staleness, so readers and the merger measure on the same base; the Unix clock only for
//! timestamps consumers read. Both are vDSO reads, not system calls.

use std::sync::LazyLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

static ORIGIN: LazyLock<Instant> = LazyLock::new(Instant::now);

/// Nanoseconds on the process's monotonic clock.
#[inline]
pub fn monotonic_ns() -> u64 {
    ORIGIN.elapsed().as_nanos() as u64
}

/// Nanoseconds since the Unix epoch.
#[inline]
pub fn unix_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |since| since.as_nanos() as u64)
}
