//! What a frame's decode costs when it runs cold, as it does in the service: at 1k frames/s
//! a reader decodes once a millisecond, and the core does other work (or sleeps) between
//! two frames. Criterion's loops decode frame after frame and never see that.
//! The figures it gave are in docs/decisions.md.
//!
//! `cargo run --release -p mergebook-tools --example cold_decode [frames]`, pinned to CPU 0, keeping 20
//! levels a side as the load harness does. `frames`: `varied` (default; Binance depth20
//! frames whose levels change shape as an altcoin book's do: `binance_decode_20_varied`),
//! `recorded` (the recorded BTCUSDT frame, every level the shape of the one before: the
//! decoder's best case, the one frame every time) or `bitstamp`
//! (`bitstamp_decode_100_varied`'s frames). Each round times one decode of the next frame
//! after each of these (clock reads around the decode alone), over 2,000 rounds:
//! - another decode just before it (the frame before in turn);
//! - 1 ms asleep (`thread::sleep`: the core idles or runs other threads);
//! - 1 ms spinning on the clock (the core busy, with almost no code or data of its own);
//! - 1 ms asleep, then another frame's decode (with `recorded`, the same frame) and a
//!   5 µs spin (a warm-up just before);
//! - 1 ms asleep, then the frame's bytes and the output book's levels read, and a 5 µs
//!   spin.
//!
//! Then, as the warm reference in the same units, 10,000 decodes back to back, each timed
//! alone: Criterion's benches keep 10 levels a side, so their times are not this one's.
//!
//! `cargo run --release -p mergebook-tools --example cold_decode [frames] sweep` instead times how the cold
//! cost grows with the pause: one decode after each of `SWEEP_PAUSES_US` asleep and the
//! same spinning, the pauses in a pseudo-random order (the host's phases change within
//! seconds, so pauses timed one after another would compare minutes, not pauses), 400
//! of each. Before each timed decode the frame's bytes are read, as the reader's `recv`
//! has just copied them in the service, so that only the time away is measured.

#[path = "shared/mod.rs"]
mod shared;

#[path = "../../../benches/workloads/mod.rs"]
mod workloads;

use mergebook::book::TopBook;
use mergebook::clock::monotonic_ns;
use mergebook::venue::VenueId;
use std::time::Duration;

const KEEP: usize = 20;
const ROUNDS: usize = 2_000;
const PAUSE: Duration = Duration::from_millis(1);
const SETTLE_NS: u64 = 5_000;
const BACK_TO_BACK: usize = 10_000;
const SWEEP_PAUSES_US: [u64; 10] = [0, 5, 20, 50, 100, 200, 300, 500, 1_000, 3_000];
const SWEEP_ROUNDS: usize = 400;

fn spin_for(ns: u64) {
    let end = monotonic_ns() + ns;
    while monotonic_ns() < end {
        std::hint::spin_loop();
    }
}

/// Reads one byte of every cache line of `bytes`.
fn touch(bytes: &[u8]) {
    let sum: u64 = bytes.iter().step_by(64).map(|&byte| u64::from(byte)).sum();
    std::hint::black_box(sum);
}

fn main() {
    if !core_affinity::set_for_current(core_affinity::CoreId { id: 0 }) {
        eprintln!("could not pin to CPU 0; running unpinned");
    }
    let kind = std::env::args().nth(1).unwrap_or_else(|| "varied".into());
    let sweep = match std::env::args().nth(2).as_deref() {
        None => false,
        Some("sweep") => true,
        Some(other) => panic!("unknown mode {other:?}: sweep, or nothing"),
    };
    let (venue, frames) = match kind.as_str() {
        "varied" => (VenueId::Binance, workloads::binance_20_varied()),
        "recorded" => (VenueId::Binance, vec![workloads::BINANCE_20.to_vec()]),
        "bitstamp" => (VenueId::Bitstamp, workloads::bitstamp_100_varied()),
        other => panic!("unknown frames {other:?}: varied, recorded or bitstamp"),
    };
    let frame = |index: usize| frames[index % frames.len()].as_slice();
    let mut book = TopBook::default();
    let mut warm_up_book = TopBook::default();
    let timed_decode = |index: usize, book: &mut TopBook| {
        let start = monotonic_ns();
        let decoded = venue.decode(frame(index), KEEP, book);
        let elapsed = monotonic_ns() - start;
        decoded.expect("bench frames decode");
        elapsed
    };
    let title = format!(
        "{venue:?}, {kind} frames ({} distinct), keeping {KEEP}",
        frames.len()
    );
    if sweep {
        pause_sweep(&title, frame, |index| timed_decode(index, &mut book));
        return;
    }
    let [
        mut after_decode,
        mut asleep,
        mut spinning,
        mut warmed_up,
        mut data_read,
    ] = std::array::from_fn(|_| Vec::with_capacity(ROUNDS));
    for round in 0..ROUNDS {
        let index = round * 5;
        std::thread::sleep(PAUSE);
        asleep.push(timed_decode(index, &mut book));
        after_decode.push(timed_decode(index + 1, &mut book));

        spin_for(PAUSE.as_nanos() as u64);
        spinning.push(timed_decode(index + 2, &mut book));

        std::thread::sleep(PAUSE);
        venue
            .decode(frame(index + 7), KEEP, &mut warm_up_book)
            .expect("bench frames decode");
        spin_for(SETTLE_NS);
        warmed_up.push(timed_decode(index + 3, &mut book));

        std::thread::sleep(PAUSE);
        touch(frame(index + 4));
        let levels = book.bids.as_slice().iter().chain(book.asks.as_slice());
        std::hint::black_box(levels.map(|level| level.price.raw()).sum::<u64>());
        spin_for(SETTLE_NS);
        data_read.push(timed_decode(index + 4, &mut book));
    }
    let back_to_back = (0..BACK_TO_BACK)
        .map(|index| timed_decode(index, &mut book))
        .collect();
    println!("{title}, {ROUNDS} rounds");
    shared::print_percentiles("right after another decode", after_decode);
    shared::print_percentiles("after 1 ms asleep", asleep);
    shared::print_percentiles("after 1 ms spinning", spinning);
    shared::print_percentiles("asleep, then a warm-up decode", warmed_up);
    shared::print_percentiles("asleep, then its bytes and book read", data_read);
    shared::print_percentiles("back to back (warm)", back_to_back);
}

/// The sweep: `timed_decode(index)` decodes frame `index` (`frame(index)` its bytes) and
/// returns its time.
fn pause_sweep<'a>(
    title: &str,
    frame: impl Fn(usize) -> &'a [u8],
    mut timed_decode: impl FnMut(usize) -> u64,
) {
    let [mut asleep, mut spinning]: [[Vec<u64>; SWEEP_PAUSES_US.len()]; 2] =
        std::array::from_fn(|_| std::array::from_fn(|_| Vec::with_capacity(SWEEP_ROUNDS)));
    // Every pause SWEEP_ROUNDS times, shuffled.
    let mut order: Vec<usize> = (0..SWEEP_ROUNDS * SWEEP_PAUSES_US.len())
        .map(|draw| draw % SWEEP_PAUSES_US.len())
        .collect();
    mergebook::rng::Rng::new(29).shuffle(&mut order);
    let mut index = 0;
    for pause in order {
        let pause_us = SWEEP_PAUSES_US[pause];
        std::thread::sleep(Duration::from_micros(pause_us));
        touch(frame(index));
        asleep[pause].push(timed_decode(index));
        spin_for(pause_us * 1_000);
        touch(frame(index + 1));
        spinning[pause].push(timed_decode(index + 1));
        index += 2;
    }
    println!("{title}, {SWEEP_ROUNDS} of each pause");
    for ((pause_us, asleep), spinning) in SWEEP_PAUSES_US.iter().zip(asleep).zip(spinning) {
        shared::print_percentiles(&format!("after {pause_us} us asleep"), asleep);
        shared::print_percentiles(&format!("after {pause_us} us spinning"), spinning);
    }
}
