//! Publishing summaries to consumers.
//!
//! The merger thread writes each instrument's `Summary` in place into a latest-value
//! mailbox and pokes a `Notify` (which the readers usually poked already, when their books
//! reached the merger: `SummaryFanout::early_wake`); it never waits for a consumer. On the tokio side one
//! fan-out task per instrument takes the newest summary and puts it in a `watch` channel,
//! from which every consumer (gRPC streams, the JSON-lines writer, `/health`) reads the
//! latest value at its own pace: a slow or stuck consumer skips summaries, it never slows
//! the merger or the other consumers. Where the merger batches (`merger.idle = "batch"`),
//! one task fans out every instrument instead, woken once a batch
//! ([`shared_summary_channel`], [`run_shared_fanout`]).

pub(crate) mod accept;
pub mod catalog;
pub mod grpc;
pub(crate) mod health;
pub(crate) mod http;
pub mod jsonl;
pub mod nats;
pub mod parquet;
pub mod proto;
pub(crate) mod web;

use crate::clock;
use crate::feed::handoff::{ReadyMark, ReadySet};
use crate::mailbox::{self, Receiver, Sender};
use crate::merger::summary::Summary;
use std::sync::Arc;
use tokio::sync::{Notify, watch};

/// How long the fan-out, woken with no new summary, keeps looking for one before it
/// sleeps again. A wake with nothing to take is almost always a reader's early wake: its
/// book is in the merger's mailbox, and the summary follows within the merge's few µs.
/// Sleeping meanwhile leaves the merger to wake the fan-out itself, a system call on the
/// merger's thread (what that cost, and what this wait saved: docs/decisions.md, "Readers
/// wake the fan-out early"). It costs the fan-out's worker at most this much CPU a book.
pub const SUMMARY_AFTER_EARLY_WAKE_NS: u64 = 5_000;

/// The merger's end: in-place, non-blocking publish.
pub struct SummaryPublisher {
    sender: Sender<Summary>,
    notify: Arc<Notify>,
    /// Its instrument's mark in the set the shared fan-out takes, where it has one.
    published: Option<ReadyMark>,
}

/// The tokio end: moves the newest summary into the watch channel consumers read.
pub struct SummaryFanout {
    receiver: Receiver<Summary>,
    notify: Arc<Notify>,
    latest: watch::Sender<Arc<Summary>>,
    /// The summary the latest replaced, written again for the next one if no consumer
    /// holds it by then: consumers that keep up cost no allocation.
    spare: Option<Arc<Summary>>,
}

/// A publisher/fan-out pair for one instrument.
pub fn summary_channel() -> (SummaryPublisher, SummaryFanout) {
    let (sender, receiver) = mailbox::mailbox(Summary::default());
    let notify = Arc::new(Notify::new());
    let (latest, _) = watch::channel(Arc::new(Summary::default()));
    (
        SummaryPublisher {
            sender,
            notify: Arc::clone(&notify),
            published: None,
        },
        SummaryFanout {
            receiver,
            notify,
            latest,
            spare: None,
        },
    )
}

/// A publisher/fan-out pair for the instrument in `index` of the shared fan-out
/// ([`run_shared_fanout`]): a publish marks it in `published` and wakes `wake`, which
/// every instrument's publishes share. A batch of summaries costs the runtime one wake-up
/// and one task's turn, where a task an instrument costs a turn a summary and, when the
/// batch outruns one worker, wake-ups of the others.
pub fn shared_summary_channel(
    published: &Arc<ReadySet>,
    index: usize,
    wake: &Arc<Notify>,
) -> (SummaryPublisher, SummaryFanout) {
    let (mut publisher, mut fanout) = summary_channel();
    publisher.notify = Arc::clone(wake);
    publisher.published = Some(published.mark_of(index));
    fanout.notify = Arc::clone(wake);
    (publisher, fanout)
}

/// What an instrument's summaries go through before consumers see them (its gauges).
pub type OnSummary = Box<dyn FnMut(&Summary) + Send>;

/// A change of the instruments the shared fan-out serves.
pub enum FanoutChange {
    /// Serve `fanout` (made by [`shared_summary_channel`] for `slot`), each of its
    /// summaries seen by `on_summary` first.
    List {
        slot: usize,
        fanout: SummaryFanout,
        on_summary: OnSummary,
    },
    /// Serve `slot`'s no more: its consumers' channel closes.
    Delist { slot: usize },
}

/// Runs the shared fan-out (its instruments' channels made by [`shared_summary_channel`]
/// with `published` and `wake`) until the task is aborted: at each wake, every instrument
/// marked has its newest summary handed on. The instruments come and go by `changes`,
/// each taken before the marks, so that an instrument's first summary finds it listed
/// (the service sends its listing before the merger's).
pub async fn run_shared_fanout(
    published: Arc<ReadySet>,
    wake: Arc<Notify>,
    mut changes: tokio::sync::mpsc::UnboundedReceiver<FanoutChange>,
) {
    let mut fanouts: Vec<Option<(SummaryFanout, OnSummary)>> = Vec::new();
    let apply = |fanouts: &mut Vec<Option<_>>, change| match change {
        FanoutChange::List {
            slot,
            fanout,
            on_summary,
        } => {
            if slot >= fanouts.len() {
                fanouts.resize_with(slot + 1, || None);
            }
            fanouts[slot] = Some((fanout, on_summary));
        }
        FanoutChange::Delist { slot } => {
            if let Some(vacated) = fanouts.get_mut(slot) {
                *vacated = None;
            }
        }
    };
    let mut open = true;
    loop {
        tokio::select! {
            change = changes.recv(), if open => match change {
                Some(change) => apply(&mut fanouts, change),
                None => open = false,
            },
            _ = wake.notified() => {}
        }
        while let Ok(change) = changes.try_recv() {
            apply(&mut fanouts, change);
        }
        published.take_each(|slot| {
            if let Some(Some((fanout, on_summary))) = fanouts.get_mut(slot) {
                fanout.forward_latest(on_summary);
            }
        });
    }
}

impl SummaryPublisher {
    /// Lets `write` fill the next summary in place, publishes it, and wakes the fan-out.
    /// The wake is an atomic store when the fan-out is busy or already woken (the reader
    /// whose book this summary merges wakes it early: `SummaryFanout::early_wake`), and a
    /// wake-up of a tokio worker (a system call) only when the fan-out went back to sleep
    /// before this publish, which it does only after looking for the summary for
    /// [`SUMMARY_AFTER_EARLY_WAKE_NS`].
    #[inline]
    pub fn publish_with(&mut self, write: impl FnOnce(&mut Summary)) {
        let _ = self.sender.publish_with(|slot| -> Result<(), ()> {
            write(slot);
            Ok(())
        });
        if let Some(published) = &self.published {
            published.mark();
        }
        self.notify.notify_one();
    }

    /// Takes back the lines of the slot the next summary, of at most `depth` levels a
    /// side, goes into (`mailbox::Sender::prepare`). The fan-out copies each summary on its own core, and
    /// the merger's next write to that slot, about a millisecond later at 1k frames/s,
    /// took 0.1–0.5 µs longer than to lines the merger had just written (docs/decisions.md,
    /// "The merger takes back its next summary slot after a publish"). Called after the publish is stamped, it pays that wait off
    /// the latency path.
    #[inline]
    pub fn take_back_next_slot(&mut self, depth: usize) {
        self.sender.prepare(|next| next.clear_writing(depth));
    }
}

impl SummaryFanout {
    /// For the readers feeding this instrument: they wake the fan-out as soon as a book
    /// is in the merger's mailbox, ahead of the summary (`feed::FeedSender`). A wake with
    /// no new summary behind it costs the fan-out one empty `take`.
    pub fn early_wake(&self) -> Arc<Notify> {
        Arc::clone(&self.notify)
    }
    /// A consumer's view: always the newest summary (the initial one is empty, sequence 0).
    pub fn subscribe(&self) -> watch::Receiver<Arc<Summary>> {
        self.latest.subscribe()
    }

    /// Runs until the task is aborted (the service does so at shutdown). `on_summary`
    /// sees every summary taken (for gauges) before consumers do.
    pub async fn run(self, on_summary: impl FnMut(&Summary)) {
        self.run_awaiting(SUMMARY_AFTER_EARLY_WAKE_NS, on_summary)
            .await
    }

    /// `run`, awaiting a summary for `await_ns` after a wake that found none
    /// ([`SUMMARY_AFTER_EARLY_WAKE_NS`]).
    async fn run_awaiting(mut self, await_ns: u64, mut on_summary: impl FnMut(&Summary)) {
        loop {
            self.notify.notified().await;
            if self.forward_latest(&mut on_summary) {
                continue;
            }
            let until = clock::monotonic_ns().saturating_add(await_ns);
            while clock::monotonic_ns() < until {
                // Lets the runtime's other tasks run; this worker stays awake.
                tokio::task::yield_now().await;
                if self.forward_latest(&mut on_summary) {
                    break;
                }
            }
        }
    }

    /// Hands consumers the newest summary, if one came since the last call (`false` if
    /// not). Into the spare when no consumer holds it any more, else into a new one: a
    /// summary a consumer holds is never written again.
    pub fn forward_latest(&mut self, on_summary: &mut impl FnMut(&Summary)) -> bool {
        if !self.receiver.take() {
            return false;
        }
        let summary = self.receiver.latest();
        on_summary(summary);
        let next = match self.spare.take() {
            Some(mut spare) => match Arc::get_mut(&mut spare) {
                Some(unshared) => {
                    unshared.copy_from(summary);
                    spare
                }
                None => Arc::new(*summary),
            },
            None => Arc::new(*summary),
        };
        self.spare = Some(self.latest.send_replace(next));
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixed::FixedPoint;
    use crate::merger::kway::MergedLevel;

    #[test]
    fn taking_back_the_next_slot_leaves_every_summary_whole() {
        let (mut publisher, mut fanout) = summary_channel();
        for sequence in 1..=4 {
            publisher.publish_with(|summary| {
                summary.sequence = sequence;
                summary.book.bids.clear();
                for level in 0..sequence {
                    summary.book.bids.push(MergedLevel {
                        price: FixedPoint::from_raw(100 - level),
                        ..MergedLevel::default()
                    });
                }
            });
            publisher.take_back_next_slot(4);
            assert!(fanout.receiver.take());
            let taken = fanout.receiver.latest();
            assert_eq!(taken.sequence, sequence);
            assert_eq!(taken.book.bids.len(), sequence as usize);
            // Had the take-back written the slot just published, this would read 0.
            assert_eq!(
                taken.book.bids.as_slice()[0].price,
                FixedPoint::from_raw(100)
            );
            assert!(!fanout.receiver.take(), "taking back publishes nothing");
        }
    }

    /// A wake that finds no summary (a reader's early wake, ahead of the merger) leaves
    /// the fan-out looking for one, so that a summary published without a wake of its own
    /// still reaches consumers; with no time to look, the fan-out sleeps through it.
    #[tokio::test(flavor = "current_thread")]
    async fn after_an_empty_wake_the_fan_out_awaits_the_summary() {
        for (await_ns, forwarded) in [(60_000_000_000, true), (0, false)] {
            let (mut publisher, fanout) = summary_channel();
            let early_wake = fanout.early_wake();
            let consumer = fanout.subscribe();
            let task = tokio::spawn(fanout.run_awaiting(await_ns, |_| {}));
            early_wake.notify_one();
            // The fan-out runs, finds nothing, and looks again or sleeps.
            tokio::task::yield_now().await;
            // The summary's publish without the wake `publish_with` adds.
            let _ = publisher.sender.publish_with(|summary| -> Result<(), ()> {
                summary.sequence = 1;
                Ok(())
            });
            for _ in 0..10 {
                tokio::task::yield_now().await;
            }
            assert_eq!(
                consumer.has_changed().unwrap(),
                forwarded,
                "looking for {await_ns} ns"
            );
            task.abort();
        }
    }

    #[test]
    fn the_fan_out_reuses_a_summary_once_no_consumer_holds_it() {
        let (mut publisher, mut fanout) = summary_channel();
        let mut consumer = fanout.subscribe();
        let mut forward = |sequence| {
            publisher.publish_with(|summary| summary.sequence = sequence);
            assert!(fanout.forward_latest(&mut |_| {}));
            let seen = Arc::clone(&consumer.borrow_and_update());
            assert_eq!(seen.sequence, sequence);
            seen
        };
        let _held = forward(1);
        let released = Arc::as_ptr(&forward(2));
        forward(3); // the spare is summary 1, still held: a new one
        let reused = Arc::as_ptr(&forward(4)); // the spare is summary 2, let go
        assert_eq!(reused, released);
    }
}
