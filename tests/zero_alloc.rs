//! The hot path allocates nothing after warm-up: decode → mailbox → merge → merged book.
//!
//! A counting global allocator counts the allocations made by this thread while the
//! measured section runs; it must count zero.

use mergebook::book::TopBook;
use mergebook::mailbox::mailbox;
use mergebook::merge::{MergedBook, VenueBook, merge};
use mergebook::venue::{Message, VenueId};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards every call unchanged to the system allocator; it only counts.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|count| count.set(count.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|count| count.set(count.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

const BINANCE: &[u8] = include_bytes!("fixtures/binance/partial_depth20_BTCUSDT_combined.json");
const BITSTAMP: &str =
    include_str!("fixtures/bitstamp/order_book_btcusd_top100_samples_2020.jsonl");

#[test]
fn decode_mailbox_merge_allocates_nothing_after_warm_up() {
    let bitstamp = BITSTAMP.lines().next().unwrap().as_bytes();
    let frames = [(VenueId::Binance, BINANCE), (VenueId::Bitstamp, bitstamp)];
    let mut scratch = TopBook::default();
    let (mut senders, mut receivers): (Vec<_>, Vec<_>) =
        frames.iter().map(|_| mailbox(TopBook::default())).unzip();
    let mut merged = MergedBook::default();

    let mut step = |round: u64| {
        for ((venue, frame), sender) in frames.iter().zip(&mut senders) {
            let message = venue
                .decode(frame, 10, &mut scratch)
                .expect("recorded frame decodes");
            assert!(matches!(message, Message::Book { .. }));
            scratch.received_ns = round;
            sender
                .publish_with(|slot| -> Result<(), ()> {
                    slot.copy_from(&scratch);
                    Ok(())
                })
                .unwrap();
        }
        for receiver in &mut receivers {
            assert!(receiver.take());
        }
        let inputs = [
            VenueBook {
                venue: VenueId::Binance,
                book: receivers[0].latest(),
            },
            VenueBook {
                venue: VenueId::Bitstamp,
                book: receivers[1].latest(),
            },
        ];
        merge(&inputs, 10, &mut merged);
        assert_eq!(merged.bids.as_slice().len(), 10);
    };

    for round in 0..10 {
        step(round); // warm-up: lazily built statics (the SIMD searcher) are made here
    }
    let before = allocations();
    for round in 10..10_000 {
        step(round);
    }
    assert_eq!(allocations() - before, 0, "the hot path allocated");
}

/// The counter works: the same harness sees an allocation when there is one.
#[test]
fn the_counting_allocator_counts() {
    let before = allocations();
    let boxed = std::hint::black_box(Box::new(1u64));
    drop(boxed);
    assert_eq!(allocations() - before, 1);
}
