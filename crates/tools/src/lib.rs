//! mergebook's measurements and endurance runs, apart from the service: the
//! wire-to-publish load harness, the soak, what NATS publishing costs, and the host's CPU-latency request they can
//! hold. The `mergebook-tools` binary runs them; BENCHMARKS.md and docs/reliability.md
//! report what they measured.
#![deny(unsafe_code)]

pub mod cpu_latency;
pub mod loadtest;
pub mod nats_bench;
pub mod soak;
