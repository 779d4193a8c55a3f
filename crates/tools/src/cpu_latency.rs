//! The kernel's CPU-latency request (`/dev/cpu_dma_latency`, "PM QoS"): while a process
//! holds the device open with a value written to it, no CPU enters an idle state that takes
//! longer than that many microseconds to wake from; at 0 an idle CPU polls instead of
//! halting. Closing the file (or the process ending, however it ends) withdraws the request.
//!
//! Why it matters here: on a VM an idle vCPU halts, and the next frame's whole path (the
//! socket, the reader's wake-up, the decode, the hand-over) then runs on a vCPU the
//! hypervisor has just scheduled again, with cold caches and predictors (docs/decisions.md,
//! "Idle CPUs polling is the host's setting, not the service's").
//!
//! The limit is kept by the kernel's cpuidle governor: without a cpuidle driver an idle CPU
//! halts whatever limit is held ([`idle_driver`]).
//!
//! It is a host setting, like `isolcpus`: it applies to every CPU and every process, keeps
//! idle CPUs busy, and needs write access to a root-only device. So the service, which runs
//! unprivileged, does not take it; the host does (docs/operations.md, "Pinning"), and
//! `mergebook-tools loadtest --cpu-wake-latency-us` takes it for its runs, as such a host would.

use std::fs::File;
use std::io::{Read, Write};

pub const DEVICE: &str = "/dev/cpu_dma_latency";

/// The kernel's value when nobody asks for less: 2,000 s, i.e. no limit.
pub const NO_LIMIT_US: i32 = 2_000_000_000;

/// Where the kernel names the cpuidle driver in use (`none` when there is none).
pub const IDLE_DRIVER: &str = "/sys/devices/system/cpu/cpuidle/current_driver";

/// The cpuidle driver in use, or `None` where there is none (or the kernel has no cpuidle
/// at all): then the limit changes nothing, and idle CPUs halt.
pub fn idle_driver() -> Option<String> {
    driver_name(&std::fs::read_to_string(IDLE_DRIVER).ok()?)
}

/// The driver named in [`IDLE_DRIVER`]'s text.
fn driver_name(text: &str) -> Option<String> {
    let name = text.trim();
    (!name.is_empty() && name != "none").then(|| name.to_owned())
}

#[derive(Debug, thiserror::Error)]
#[error("cannot hold {DEVICE} at {max_wake_us} µs: {source}")]
pub struct HoldError {
    pub max_wake_us: u32,
    #[source]
    pub source: std::io::Error,
}

/// A held request; dropping it withdraws it.
#[derive(Debug)]
pub struct CpuLatencyRequest {
    // Never read: the request lives as long as the file is open.
    _device: File,
}

impl CpuLatencyRequest {
    /// Asks that no CPU take longer than `max_wake_us` to leave idle (at most
    /// [`NO_LIMIT_US`]) until the request is dropped.
    pub fn hold(max_wake_us: u32) -> Result<CpuLatencyRequest, HoldError> {
        let fail = |source| HoldError {
            max_wake_us,
            source,
        };
        let value = i32::try_from(max_wake_us)
            .ok()
            .filter(|&value| value <= NO_LIMIT_US)
            .ok_or_else(|| {
                fail(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("above the kernel's largest value, {NO_LIMIT_US}"),
                ))
            })?;
        let mut device = File::options().write(true).open(DEVICE).map_err(fail)?;
        // Exactly four bytes are read by the kernel as a binary `s32` (anything else as text).
        device.write_all(&value.to_ne_bytes()).map_err(fail)?;
        Ok(CpuLatencyRequest { _device: device })
    }

    /// The limit in force: the smallest value any process holds, or [`NO_LIMIT_US`].
    /// Reading the device needs root, as holding it does.
    pub fn effective_us() -> std::io::Result<i32> {
        let mut value = [0; 4];
        File::open(DEVICE)?.read_exact(&mut value)?;
        Ok(i32::from_ne_bytes(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Needs root (the device is `0600 root`), as CI runs; elsewhere it checks that the
    /// refusal is an error that names the device. A machine without the device (a container
    /// that does not pass it through) can show neither.
    #[test]
    fn a_request_limits_the_wake_latency_while_it_is_held() {
        let before = match CpuLatencyRequest::effective_us() {
            Ok(before) => before,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
                // Not a tool CI could install: a property of the kernel and the container.
                // Said on the terminal, past the harness's capture of `eprintln!`, which
                // would leave a bare `ok`.
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "SKIPPED a_request_limits_the_wake_latency_while_it_is_held: {DEVICE}: \
                     {error} (a container that does not pass the device through)"
                );
                return;
            }
            Err(error) => {
                assert!(
                    std::env::var_os("CI").is_none(),
                    "CI runs as root, which may read {DEVICE}: {error}"
                );
                let refused = CpuLatencyRequest::hold(0).expect_err("unreadable, so unwritable");
                assert!(refused.to_string().contains(DEVICE), "{refused}");
                return;
            }
        };
        if before == 0 {
            // Another process holds 0: no request of this one could show in the limit.
            eprintln!("{DEVICE} is already held at 0 by another process; skipped");
            return;
        }
        // Below whatever another process may hold, so that this request is the one in force.
        let asked = (before / 2) as u32;
        let request = CpuLatencyRequest::hold(asked).expect("root may hold it");
        assert_eq!(CpuLatencyRequest::effective_us().unwrap(), asked as i32);
        drop(request);
        assert_eq!(CpuLatencyRequest::effective_us().unwrap(), before);
    }

    #[test]
    fn a_kernel_without_a_cpuidle_driver_names_none() {
        assert_eq!(driver_name("none\n"), None);
        assert_eq!(driver_name(""), None);
        assert_eq!(driver_name("haltpoll\n").as_deref(), Some("haltpoll"));
        assert_eq!(driver_name("intel_idle").as_deref(), Some("intel_idle"));
    }

    #[test]
    fn a_value_the_kernel_cannot_take_is_refused_before_the_device_is_opened() {
        let error = CpuLatencyRequest::hold(NO_LIMIT_US as u32 + 1).unwrap_err();
        assert_eq!(error.source.kind(), std::io::ErrorKind::InvalidInput);
        assert!(error.to_string().contains("2000000000"), "{error}");
    }
}
