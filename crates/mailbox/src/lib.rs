//! The single-slot latest-value mailbox: one producer hands its newest value to one
//! consumer, which never waits for it and never sees an older one after a newer one.
//!
//! A triple buffer. Three slots: the producer owns one (the *back*) and writes into it in
//! place, the consumer owns one (the *front*) and reads it in place for as long as it
//! likes, and the third (the *middle*) is parked in a shared atomic byte with a *fresh*
//! flag. Publishing swaps back and middle; taking swaps front and middle. Neither side
//! ever blocks, allocates, or makes a system call, and an unread value is simply replaced
//! by a newer one (latest value wins, which is what a book is).
//!
//! Chose a triple buffer over a seqlock: a seqlock reader must copy the value out and
//! retry when torn, and reading a torn value is undefined behaviour in Rust's memory model
//! unless every field is atomic. The triple buffer lets the merger read the book in place.
//!
//! This is the project's only `unsafe` code (mergebook denies it everywhere else). The invariant it rests on: **each slot index is
//! held by exactly one of {producer, middle, consumer} at any time**, because the only way
//! an index changes hands is an atomic swap with the middle. The loom tests at the bottom
//! check every interleaving of that protocol, including the one where the producer would
//! write the slot the consumer is still reading; Miri runs the threaded tests. The one
//! other `unsafe` here is a prefetch hint (`prefetch_lines`), which reads nothing.

#![deny(unsafe_code)] // allowed item by item below, each with its SAFETY comment

#[cfg(mergebook_loom)]
use loom::{
    cell::UnsafeCell,
    sync::{
        Arc,
        atomic::{AtomicU8, Ordering},
    },
};
use std::ops::Range;
#[cfg(not(mergebook_loom))]
use std::{
    cell::UnsafeCell,
    sync::{
        Arc,
        atomic::{AtomicU8, Ordering},
    },
};

/// Low bits of the middle byte: the index of the slot parked there.
const INDEX_MASK: u8 = 0b011;
/// High bit of the middle byte: the parked slot holds a value the consumer has not taken.
const FRESH: u8 = 0b100;

/// Two cache lines: on x86 the adjacent-line prefetcher pulls pairs of 64-byte lines, so
/// 128-byte alignment keeps the producer's and consumer's slots from false sharing.
#[repr(align(128))]
struct CachePadded<T>(T);

struct Shared<T> {
    slots: [CachePadded<UnsafeCell<T>>; 3],
    middle: CachePadded<AtomicU8>,
}

// SAFETY: `Shared` is only reached through one `Sender` and one `Receiver`. A slot is
// accessed only by the side that holds its index (see the module invariant), so no slot
// is ever accessed from two threads at once; values cross threads, hence `T: Send`.
#[allow(unsafe_code)]
unsafe impl<T: Send> Sync for Shared<T> {}

/// The producing half. `Send` but not `Clone`: there is exactly one producer.
pub struct Sender<T> {
    shared: Arc<Shared<T>>,
    back: u8,
    /// Values replaced in the middle before the consumer took them (latest value wins).
    superseded: u64,
}

/// The consuming half. `Send` but not `Clone`: there is exactly one consumer.
pub struct Receiver<T> {
    shared: Arc<Shared<T>>,
    front: u8,
    /// Under loom, the front slot's read access, held until the next `take` so that loom
    /// sees the consumer reading it for that whole time.
    #[cfg(mergebook_loom)]
    held: Option<loom::cell::ConstPtr<T>>,
}

// SAFETY: under loom, `held` is loom's tracking token for the front slot, which this
// `Receiver` owns exclusively (the module invariant); moving the receiver to another
// thread moves that ownership with it, as it does for the non-loom build, where the
// receiver is `Send` by its fields.
#[cfg(mergebook_loom)]
#[allow(unsafe_code)]
unsafe impl<T: Send> Send for Receiver<T> {}

/// Creates a mailbox whose three slots start as copies of `initial` (the consumer's
/// `latest` returns it until the first publish).
pub fn mailbox<T: Clone>(initial: T) -> (Sender<T>, Receiver<T>) {
    let slot = || CachePadded(UnsafeCell::new(initial.clone()));
    let shared = Arc::new(Shared {
        slots: [slot(), slot(), slot()],
        middle: CachePadded(AtomicU8::new(1)),
    });
    let receiver = Receiver {
        #[cfg(mergebook_loom)]
        held: Some(shared.slots[0].0.get()),
        shared: Arc::clone(&shared),
        front: 0,
    };
    (
        Sender {
            shared,
            back: 2,
            superseded: 0,
        },
        receiver,
    )
}

impl<T> Sender<T> {
    /// Lets `write` fill the producer's slot in place, then publishes it if `write`
    /// returned `Ok`. On `Err` nothing is published and the consumer keeps the previous
    /// value: a half-written slot is never visible.
    #[inline]
    pub fn publish_with<R, E>(
        &mut self,
        write: impl FnOnce(&mut T) -> Result<R, E>,
    ) -> Result<R, E> {
        let slot = &self.shared.slots[usize::from(self.back)].0;
        #[cfg(not(mergebook_loom))]
        // SAFETY: the producer holds `back`, so no other reference to this slot exists,
        // and the `&mut` does not outlive this call.
        #[allow(unsafe_code)]
        let result = write(unsafe { &mut *slot.get() });
        #[cfg(mergebook_loom)]
        let result = slot.with_mut(|pointer| {
            // SAFETY: as above; loom checks the claim.
            #[allow(unsafe_code)]
            write(unsafe { &mut *pointer })
        });
        if result.is_ok() {
            // Release: the writes above happen-before the consumer's Acquire swap that
            // takes this slot. Acquire: the consumer's reads of the slot we get back (its
            // old front, released by its own swap) happen-before our next writes to it.
            let previous = self
                .shared
                .middle
                .0
                .swap(self.back | FRESH, Ordering::AcqRel);
            self.back = previous & INDEX_MASK;
            self.superseded += u64::from(previous & FRESH != 0);
        }
        result
    }

    /// Lets `prepare` write the producer's slot without publishing it: the consumer never
    /// sees what it writes, and the next `publish_with` writes the slot anew.
    ///
    /// For taking the slot's cache lines back early. After a publish the producer usually
    /// holds the slot the consumer read last, so its lines sit in the consumer's core; the
    /// first write to each line waits for that core to give it up, and the next publish's
    /// atomic swap waits for those writes. Written right after a publish, off the value's
    /// latency, the lines are the producer's again when the next value comes
    /// (`feed::FeedSender::publish_with`).
    #[inline]
    pub fn prepare(&mut self, prepare: impl FnOnce(&mut T)) {
        let _ = self.publish_with(|slot| -> Result<(), ()> {
            prepare(slot);
            Err(())
        });
    }

    /// How many published values were replaced by a newer one before the consumer took
    /// them: what latest-value semantics dropped, counted by the producer for free (the
    /// swap returns the replaced value's flag).
    #[inline]
    pub fn superseded(&self) -> u64 {
        self.superseded
    }

    /// Publishes a copy of `value`.
    #[inline]
    pub fn publish(&mut self, value: &T)
    where
        T: Clone,
    {
        let _ = self.publish_with(|slot| -> Result<(), ()> {
            slot.clone_from(value);
            Ok(())
        });
    }
}

impl<T> Receiver<T> {
    /// Takes the newest published value if there is one the consumer has not seen, and
    /// returns whether it did. The value is then `latest()` until the next `take`.
    #[inline]
    pub fn take(&mut self) -> bool {
        self.take_prefetching(&[])
    }

    /// `take`, which first asks the CPU to fetch the parts of the value named by `bytes`
    /// (byte ranges from the value's start) into this core's cache.
    ///
    /// For a value written on another core: the swap that takes the slot waits for the
    /// producer's core to give up the middle's line, and only then would the reads of the
    /// value start, each waiting for its line from that core, and a read whose address
    /// comes from another (a level after a length) waiting twice. The slot's index is known
    /// from the load that finds the value fresh, so its lines are requested before the
    /// swap, all at once. Should the producer publish again between the load and the swap,
    /// the lines fetched are of the slot it just gave up: wasted, never read. A prefetch
    /// reads nothing the program can see.
    #[inline]
    pub fn take_prefetching(&mut self, bytes: &[Range<usize>]) -> bool {
        // Relaxed is enough to decide: if the flag is seen set, the swap below (Acquire)
        // synchronises with the publish that set it or a later one.
        let middle = self.shared.middle.0.load(Ordering::Relaxed);
        if middle & FRESH == 0 {
            return false;
        }
        // `get` with the loop inside: with no ranges the compiler drops the whole lookup,
        // bounds check included, so `take` costs what it did before ranges existed.
        #[cfg(not(mergebook_loom))]
        if let Some(slot) = self.shared.slots.get(usize::from(middle & INDEX_MASK)) {
            for range in bytes {
                let end = range.end.min(size_of::<T>());
                prefetch_lines(slot.0.get().cast_const().cast(), range.start.min(end)..end);
            }
        }
        #[cfg(mergebook_loom)]
        let _ = bytes; // loom models the protocol; a prefetch is no part of it.
        #[cfg(mergebook_loom)]
        drop(self.held.take());
        // Release: our reads of the old front happen-before the producer reuses it.
        // Acquire: the producer's writes to the slot we take happen-before our reads.
        let previous = self.shared.middle.0.swap(self.front, Ordering::AcqRel);
        self.front = previous & INDEX_MASK;
        #[cfg(mergebook_loom)]
        {
            self.held = Some(self.shared.slots[usize::from(self.front)].0.get());
        }
        true
    }

    /// The value most recently taken (or the initial value). Reading it never blocks the
    /// producer, which keeps publishing into the other two slots.
    #[inline]
    pub fn latest(&self) -> &T {
        #[cfg(not(mergebook_loom))]
        // SAFETY: the consumer holds `front`, so the producer never writes this slot while
        // the returned reference lives: it borrows `self`, and only `take(&mut self)` can
        // give the slot back.
        #[allow(unsafe_code)]
        let value = unsafe { &*self.shared.slots[usize::from(self.front)].0.get() };
        #[cfg(mergebook_loom)]
        // SAFETY: as above; `held` is the tracked read access to the front slot.
        #[allow(unsafe_code)]
        let value = unsafe { self.held.as_ref().expect("front slot is held").deref() };
        value
    }
}

/// Asks the CPU to fetch into this core's cache the lines holding bytes `range` of the
/// object at `start`.
#[cfg(not(mergebook_loom))]
#[inline(always)]
fn prefetch_lines(start: *const u8, range: Range<usize>) {
    const LINE: usize = 64;
    if range.is_empty() {
        return;
    }
    let end = start.addr() + range.end;
    // From the start of the line holding the first byte, so that a range that crosses a
    // line boundary fetches both lines.
    let first = start.wrapping_add(range.start);
    let mut line = first.wrapping_sub(first.addr() % LINE);
    while line.addr() < end {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        // SAFETY: `PREFETCHT0` is a hint: it reads nothing the program can observe and
        // cannot fault; the address is only computed (its lines are the object's).
        #[allow(unsafe_code)]
        unsafe {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            _mm_prefetch::<_MM_HINT_T0>(line.cast());
        }
        line = line.wrapping_add(LINE);
    }
}

#[cfg(all(test, not(mergebook_loom)))]
mod tests {
    use super::*;

    #[test]
    fn latest_value_wins_and_is_taken_once() {
        let (mut sender, mut receiver) = mailbox(0u64);
        assert!(!receiver.take());
        assert_eq!(*receiver.latest(), 0);
        sender.publish(&1);
        sender.publish(&2);
        assert_eq!(sender.superseded(), 1, "1 was replaced unread");
        assert!(receiver.take());
        assert_eq!(*receiver.latest(), 2);
        assert!(!receiver.take());
        assert_eq!(*receiver.latest(), 2);
        sender.publish(&3);
        assert!(receiver.take());
        assert_eq!(sender.superseded(), 1, "2 and 3 were taken");
    }

    #[test]
    fn a_failed_write_publishes_nothing() {
        let (mut sender, mut receiver) = mailbox(0u64);
        sender.publish(&1);
        let failed: Result<(), &str> = sender.publish_with(|slot| {
            *slot = 99;
            Err("decode error")
        });
        assert!(failed.is_err());
        assert!(receiver.take());
        assert_eq!(*receiver.latest(), 1);
        assert!(!receiver.take());
    }

    #[test]
    fn what_prepare_writes_is_never_seen() {
        let (mut sender, mut receiver) = mailbox(0u64);
        sender.publish(&1);
        sender.prepare(|slot| *slot = 99);
        assert!(receiver.take());
        assert_eq!(*receiver.latest(), 1);
        sender.prepare(|slot| *slot = 99);
        assert!(!receiver.take(), "prepare publishes nothing");
        assert_eq!(*receiver.latest(), 1);
        sender
            .publish_with(|slot| -> Result<(), ()> {
                *slot += 1;
                Ok(())
            })
            .unwrap();
        assert!(receiver.take());
        assert_eq!(
            *receiver.latest(),
            100,
            "the next write starts from what prepare left"
        );
        assert_eq!(sender.superseded(), 0);
    }

    /// `take_prefetching` takes as `take` does, whatever the ranges: empty, reversed, or
    /// past the value's end (a prefetch of them fetches at most the value's own lines).
    #[test]
    fn take_prefetching_takes_as_take_does() {
        #[allow(clippy::reversed_empty_ranges)]
        let ranges = [0..0, 5..3, 0..8, 0..1 << 20, usize::MAX - 1..usize::MAX];
        let (mut sender, mut receiver) = mailbox(0u64);
        assert!(!receiver.take_prefetching(&ranges));
        sender.publish(&1);
        sender.publish(&2);
        assert!(receiver.take_prefetching(&ranges));
        assert_eq!(*receiver.latest(), 2);
        assert!(!receiver.take_prefetching(&ranges));
        assert_eq!(*receiver.latest(), 2);
    }

    /// Across threads, the consumer only ever sees whole values, in increasing order, and
    /// every value published is either taken or counted as superseded by the producer;
    /// never what the producer writes with `prepare` between publishes. Runs under Miri
    /// too (fewer rounds), which checks the accesses for data races.
    #[test]
    fn threaded_values_are_whole_and_monotonic() {
        const ROUNDS: u64 = if cfg!(miri) { 200 } else { 200_000 };
        const PREPARED: u64 = u64::MAX;
        let (mut sender, mut receiver) = mailbox([0u64; 8]);
        let producer = std::thread::spawn(move || {
            for round in 1..=ROUNDS {
                sender.publish(&[round; 8]);
                sender.prepare(|slot| *slot = [PREPARED; 8]);
            }
            sender.superseded()
        });
        let mut last = 0;
        let mut taken = 0;
        while last < ROUNDS {
            // Both ways of taking, the prefetch naming the whole value in two halves.
            let took = if last % 2 == 0 {
                receiver.take()
            } else {
                receiver.take_prefetching(&[0..32, 32..64])
            };
            if took {
                taken += 1;
                let value = *receiver.latest();
                assert!(
                    value.iter().all(|&word| word == value[0]),
                    "torn read: {value:?}"
                );
                assert_ne!(value[0], PREPARED, "a prepared slot was seen");
                assert!(value[0] > last, "went backwards: {} after {last}", value[0]);
                last = value[0];
            } else {
                std::hint::spin_loop();
            }
        }
        let superseded = producer.join().unwrap();
        assert_eq!(
            taken + superseded,
            ROUNDS,
            "every value is either taken or counted as superseded"
        );
    }
}

#[cfg(all(test, mergebook_loom))]
mod loom_tests {
    use super::*;
    use loom::thread;

    /// Every interleaving of two publishes, with a `prepare` between them, against a
    /// consumer that takes twice and reads in between. loom fails the test if the producer
    /// ever writes a slot while the consumer holds it (the buffer-reuse race), and the
    /// asserts check that every value read is whole, never older than the one before, and
    /// never what `prepare` wrote.
    #[test]
    fn producer_never_writes_the_slot_the_consumer_reads() {
        loom::model(|| {
            let (mut sender, mut receiver) = mailbox([0u8; 2]);
            let producer = thread::spawn(move || {
                sender.publish(&[1, 1]);
                // Writes the producer's slot between publishes, as the readers do.
                sender.prepare(|slot| *slot = [9, 9]);
                sender.publish(&[2, 2]);
            });
            let mut last = 0;
            for _ in 0..2 {
                receiver.take();
                let [first, second] = *receiver.latest();
                assert_eq!(first, second, "torn value");
                assert_ne!(first, 9, "a prepared slot was seen");
                assert!(first >= last, "went backwards");
                last = first;
            }
            producer.join().unwrap();
        });
    }

    /// Three publishes cycle every slot through the producer; the consumer holds its
    /// front across all of them and must still read the value it took.
    #[test]
    fn a_held_front_survives_a_full_cycle_of_publishes() {
        loom::model(|| {
            let (mut sender, mut receiver) = mailbox(0u8);
            let producer = thread::spawn(move || {
                for value in 1..=3 {
                    sender.publish(&value);
                }
            });
            let taken = receiver.take();
            let value = *receiver.latest();
            thread::yield_now();
            assert_eq!(*receiver.latest(), value, "front changed under the reader");
            if !taken {
                assert_eq!(value, 0);
            }
            producer.join().unwrap();
            receiver.take();
            assert_eq!(*receiver.latest(), 3, "the last value is delivered");
        });
    }
}
