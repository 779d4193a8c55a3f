//! What waking a sleeping thread costs on this machine: the price the merger pays each
//! time it wakes the tokio fan-out task (`publish/mod.rs`), and the readers pay when they
//! unpark a parked merger. docs/decisions.md cites what it measured.
//!
//! `cargo run --release -p mergebook-tools --example wake_cost [waker-cpu] [sleeper-cpu]` (default 1 and 0):
//! the waker spins 300 µs between wakes, so that the sleeper is parked each time, then
//! unparks it and waits for it to answer. Printed, as percentiles over 2,000 wakes:
//! the `unpark` call on the waker's thread (a `futex` system call, the cost on the
//! caller), and unpark → the sleeper running (what a consumer waits). For scale, one
//! plain system call (`getpid`) and one clock read.

#[path = "shared/mod.rs"]
mod shared;

use mergebook::clock::monotonic_ns;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const WAKES: usize = 2_000;
const PAUSE: Duration = Duration::from_micros(300);

fn cpu_arg(position: usize, default: usize) -> usize {
    std::env::args()
        .nth(position)
        .map_or(default, |arg| arg.parse().expect("a CPU number"))
}

fn pin(cpu: usize) {
    if !core_affinity::set_for_current(core_affinity::CoreId { id: cpu }) {
        eprintln!("could not pin to CPU {cpu}; running unpinned");
    }
}

fn per_call_ns(calls: u32, mut call: impl FnMut()) -> f64 {
    let start = Instant::now();
    for _ in 0..calls {
        call();
    }
    start.elapsed().as_nanos() as f64 / f64::from(calls)
}

fn main() {
    let (waker_cpu, sleeper_cpu) = (cpu_arg(1, 1), cpu_arg(2, 0));
    // Wake n is asked for by `requested` = n and answered by `answered` = n, with the
    // sleeper's clock in `woken_at`: a spurious or early return from `park` re-parks.
    let requested = Arc::new(AtomicU64::new(0));
    let answered = Arc::new(AtomicU64::new(0));
    let woken_at = Arc::new(AtomicU64::new(0));
    let sleeper = {
        let (requested, answered, woken_at) = (
            Arc::clone(&requested),
            Arc::clone(&answered),
            Arc::clone(&woken_at),
        );
        std::thread::spawn(move || {
            pin(sleeper_cpu);
            for wake in 1..=WAKES as u64 {
                while requested.load(Ordering::Acquire) < wake {
                    std::thread::park();
                }
                woken_at.store(monotonic_ns(), Ordering::Relaxed);
                answered.store(wake, Ordering::Release);
            }
        })
    };
    pin(waker_cpu);
    let (mut calls, mut latencies) = (Vec::new(), Vec::new());
    for wake in 1..=WAKES as u64 {
        let pause = Instant::now();
        while pause.elapsed() < PAUSE {
            std::hint::spin_loop();
        }
        requested.store(wake, Ordering::Release);
        let before = monotonic_ns();
        sleeper.thread().unpark();
        let after = monotonic_ns();
        while answered.load(Ordering::Acquire) < wake {
            std::hint::spin_loop();
        }
        calls.push(after - before);
        latencies.push(woken_at.load(Ordering::Relaxed).saturating_sub(before));
    }
    sleeper
        .join()
        .expect("the sleeper ends after its last wake");
    println!("waker on CPU {waker_cpu}, sleeper on CPU {sleeper_cpu}, {WAKES} wakes");
    shared::print_percentiles("unpark call (waker's cost)", calls);
    shared::print_percentiles("unpark → sleeper running", latencies);
    let getpid = per_call_ns(100_000, || {
        std::hint::black_box(std::process::id());
    });
    let clock = per_call_ns(1_000_000, || {
        std::hint::black_box(monotonic_ns());
    });
    println!("getpid system call: {getpid:.0} ns; clock read: {clock:.0} ns");
}
