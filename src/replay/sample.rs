//! Each source's own book at fixed times of a replay (`mergebook replay … --venue-books`).

use crate::merger::Consolidation;

/// When a replay samples its sources' books: at every multiple of the interval since the
/// Unix epoch from the first event on (from `from_ns`, where given) to `until_ns`. The
/// sample at T holds every event received up to T; it is taken before the first event
/// received after T, so the last one is the last time before the replay's last event.
pub struct BookSampler {
    every_ns: u64,
    from_ns: u64,
    until_ns: u64,
    /// The next sample's time, once the first event is seen.
    next_ns: Option<u64>,
}

impl BookSampler {
    /// Samples every `every_ns` (at least 1) within `from_ns..=until_ns`.
    pub fn new(every_ns: u64, (from_ns, until_ns): (Option<u64>, Option<u64>)) -> BookSampler {
        BookSampler {
            every_ns: every_ns.max(1),
            from_ns: from_ns.unwrap_or(0),
            until_ns: until_ns.unwrap_or(u64::MAX),
            next_ns: None,
        }
    }

    /// Before the event received at `received_ns`: every sample due before it, each as
    /// `write(sampled_ns, instrument, consolidation)` for every instrument.
    pub fn before(
        &mut self,
        received_ns: u64,
        consolidations: &[Consolidation],
        mut write: impl FnMut(u64, usize, &Consolidation),
    ) {
        let next_ns = self.next_ns.get_or_insert_with(|| {
            received_ns
                .max(self.from_ns)
                .next_multiple_of(self.every_ns)
        });
        while *next_ns < received_ns && *next_ns <= self.until_ns {
            for (instrument, consolidation) in consolidations.iter().enumerate() {
                write(*next_ns, instrument, consolidation);
            }
            *next_ns += self.every_ns;
        }
    }
}
