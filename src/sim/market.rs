//! The simulated market: a random-walk mid price per instrument, and each venue's book
//! around it (realistic spacing, 8-decimal amounts). Deterministic for a seed.

use crate::book::{Level, TopBook};
use crate::fixed::FixedPoint;
use crate::rng::Rng;

/// ETH/BTC-like: mid 0.06824, tick 0.00000100 (raw FixedPoint units: 1e-8).
pub const START_MID_TICKS: u64 = 6_824_000 / TICK_RAW;
const TICK_RAW: u64 = 100;

/// The mid price all venues quote around: a random walk in ticks, one step per call.
pub struct MidPrice {
    rng: Rng,
    ticks: u64,
}

impl MidPrice {
    pub fn new(seed: u64) -> MidPrice {
        MidPrice {
            rng: Rng::new(seed),
            ticks: START_MID_TICKS,
        }
    }

    pub fn step(&mut self) -> u64 {
        match self.rng.below(4) {
            0 => self.ticks += 1,
            1 => self.ticks = self.ticks.saturating_sub(1).max(START_MID_TICKS / 2),
            _ => {}
        }
        self.ticks
    }
}

/// One venue's quotes for one stream around the shared mid.
pub struct SimulatedBook {
    rng: Rng,
    sequence: u64,
}

impl SimulatedBook {
    pub fn new(seed: u64) -> SimulatedBook {
        SimulatedBook {
            rng: Rng::new(seed),
            sequence: 1_000,
        }
    }

    /// Writes the venue's next top-`levels` book around `mid_ticks`.
    pub fn next_book(
        &mut self,
        mid_ticks: u64,
        levels: usize,
        received_ns: u64,
        out: &mut TopBook,
    ) {
        self.sequence += 1 + self.rng.below(3);
        out.clear();
        out.venue_sequence = self.sequence;
        out.received_ns = received_ns;
        let half_spread = 1 + self.rng.below(2);
        let mut bid = mid_ticks - half_spread;
        let mut ask = mid_ticks + half_spread;
        for _ in 0..levels {
            out.bids.push(self.level(bid));
            out.asks.push(self.level(ask));
            bid -= 1 + self.rng.below(2);
            ask += 1 + self.rng.below(2);
        }
    }

    fn level(&mut self, ticks: u64) -> Level {
        // Amounts from 0.001 to ~20, with all 8 decimals in use.
        let amount = 100_000 + self.rng.below(2_000_000_000);
        Level {
            price: FixedPoint::from_raw(ticks * TICK_RAW),
            amount: FixedPoint::from_raw(amount),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn books_are_sorted_uncrossed_and_deterministic() {
        let (mut a, mut b) = (SimulatedBook::new(7), SimulatedBook::new(7));
        let (mut book_a, mut book_b) = (TopBook::default(), TopBook::default());
        let mut mid = MidPrice::new(3);
        for _ in 0..1000 {
            let ticks = mid.step();
            a.next_book(ticks, 20, 0, &mut book_a);
            b.next_book(ticks, 20, 0, &mut book_b);
            assert_eq!(book_a, book_b);
            assert!(!book_a.is_crossed());
            let bids = book_a.bids.as_slice();
            assert!(bids.windows(2).all(|w| w[0].price > w[1].price));
            let asks = book_a.asks.as_slice();
            assert!(asks.windows(2).all(|w| w[0].price < w[1].price));
        }
    }
}
