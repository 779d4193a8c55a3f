//! The core in diff mode: a full-depth book per stream kept in sync with the venue's
//! events and its snapshots (REST or in-band), reset whenever it cannot be trusted.

use super::*;

pub(super) struct DiffBooks {
    pub(super) settings: DiffSettings,
    pub(super) source: SnapshotSource,
    /// The depth the venue keeps its book at, where it cuts it (`Snapshots::kept_depth`).
    pub(super) kept_depth: Option<usize>,
    pub(super) scheduler: SnapshotScheduler,
    /// Per stream.
    pub(super) books: Vec<DiffBook>,
    /// The decode target of every diff frame, and of every snapshot (sized once).
    pub(super) update: BookUpdate,
    pub(super) snapshot: BookUpdate,
    /// Where the venue's stream cannot show a lost event and audits are on.
    pub(super) audits: Option<Audits>,
    /// What one snapshot or audit request costs against the venue's budget
    /// (`Snapshots::snapshot_weight` at the snapshot depth).
    pub(super) request_weight: u32,
}

pub(super) struct DiffBook {
    pub(super) sync: BookSync,
    /// Bumped at every reset: a snapshot asked for before it is discarded.
    pub(super) generation: u64,
    /// When the book left sync: the start of the resync duration.
    pub(super) out_of_sync_since_ns: u64,
    /// In-band venues: since when a snapshot is expected (subscribed, not yet come).
    pub(super) awaiting_since_ns: Option<u64>,
    /// REST venues: when its subscription was acknowledged, while nothing has come on it
    /// since. A book that does not change sends no event to ask for its snapshot with:
    /// [`QUIET_BOOK_GRACE_NS`] after this, it is asked for all the same.
    pub(super) quiet_since_ns: Option<u64>,
    /// How the venue writes this book's numbers: what its checksum is computed over.
    /// The most digits seen since the last snapshot, as a venue that checksums its text
    /// prints every number of an instrument with the same precision, and a message may
    /// hold none of a kind (an update of one side).
    pub(super) decimals: WireDecimals,
    /// The texts of the levels its last checksum covered, where the venue checksums text.
    pub(super) checksum_texts: LevelTexts,
}

/// How long a REST venue's book may send nothing after its subscription is acknowledged
/// before its snapshot is asked for without an event: a busy book's first event asks
/// sooner; a quiet one (which never sends one) is synced and published from its snapshot.
/// Long enough for a snapshot the stream sends unasked (OKX's in-band form) to come first.
pub const QUIET_BOOK_GRACE_NS: u64 = 1_000_000_000;

impl DiffBook {
    /// A book of `venue` under `settings`, out of sync since `now_ns`.
    pub(super) fn new(venue: VenueId, settings: &DiffSettings, now_ns: u64) -> DiffBook {
        DiffBook {
            sync: BookSync::new(
                venue.facts().sequencing,
                settings.max_levels,
                settings.max_buffered,
            )
            .with_full_depth(settings.full_depth)
            .with_partial_snapshots(match settings.whole_book {
                true => None,
                false => venue
                    .snapshots()
                    .partial_snapshot_levels(settings.snapshot_depth),
            }),
            generation: 0,
            out_of_sync_since_ns: now_ns,
            awaiting_since_ns: None,
            quiet_since_ns: None,
            decimals: WireDecimals::default(),
            checksum_texts: LevelTexts::default(),
        }
    }
}

impl DiffBooks {
    /// `slot`'s subscription is acknowledged at `now_ns`: a REST venue's book not in sync
    /// starts its quiet grace.
    pub(super) fn subscribed(&mut self, slot: usize, now_ns: u64) {
        let book = &mut self.books[slot];
        if self.source == SnapshotSource::Rest && !book.sync.is_synced() {
            book.quiet_since_ns = Some(now_ns);
        }
    }

    /// When the first quiet grace ends, if one runs.
    fn quiet_grace_ends_at(&self) -> Option<u64> {
        let since = self
            .books
            .iter()
            .filter_map(|book| book.quiet_since_ns)
            .min()?;
        Some(since + QUIET_BOOK_GRACE_NS)
    }

    /// Asks for the snapshots of the books whose quiet grace has ended by `now_ns`.
    fn request_quiet_books(&mut self, now_ns: u64) {
        for (slot, book) in self.books.iter_mut().enumerate() {
            if book
                .quiet_since_ns
                .is_some_and(|since| since + QUIET_BOOK_GRACE_NS <= now_ns)
            {
                book.quiet_since_ns = None;
                if !book.sync.is_synced() {
                    self.scheduler.request(slot);
                }
            }
        }
    }
}

impl FeedCore {
    /// Throws every diff book away (they rebuild from their next events and a snapshot)
    /// and forgets the snapshot requests. An in-band venue's books are subscribed again,
    /// except on a new connection, whose subscriptions bring their snapshots: nothing else
    /// would send one.
    pub(super) fn reset_diff_books(
        &mut self,
        reason: ResyncReason,
        now_ns: u64,
        out: &mut impl FeedOutput,
    ) {
        self.cancel_audit(now_ns, out);
        let Some(diff) = &mut self.diff else { return };
        diff.scheduler.cancel_all();
        out.note(None, FeedEvent::SnapshotsCancelled);
        let resubscribe = reason != ResyncReason::Connect && diff.source == SnapshotSource::InBand;
        for (slot, book) in diff.books.iter_mut().enumerate() {
            if !self.listed[slot] {
                continue;
            }
            if resubscribe {
                diff.scheduler.lost(slot, now_ns, true);
            }
            if book.sync.is_synced() || reason == ResyncReason::Connect {
                book.out_of_sync_since_ns = now_ns;
                out.note(Some(slot), FeedEvent::Resync(reason));
            }
            book.sync.reset();
            book.generation += 1;
            book.quiet_since_ns = None;
            // A new connection's subscriptions bring their snapshots on an in-band venue;
            // a REST venue's are asked for by their first event or at the end of their
            // quiet grace, and none is awaited before that (a snapshot its stream may send
            // unasked is taken all the same).
            let awaited = reason == ResyncReason::Connect && diff.source == SnapshotSource::InBand;
            book.awaiting_since_ns = awaited.then_some(now_ns);
        }
    }

    pub(super) fn on_diff_event(
        &mut self,
        slot: usize,
        received_ns: u64,
        out: &mut impl FeedOutput,
    ) {
        let venue = self.venue;
        let Some(diff) = &mut self.diff else { return };
        let book = &mut diff.books[slot];
        book.quiet_since_ns = None;
        let in_band = diff.source == SnapshotSource::InBand;
        let seen = diff.update.decimals;
        let mut audit_due = false;
        let lost = if diff.update.is_snapshot {
            // A snapshot on the stream replaces the book, whatever its state. One that
            // replaces a synced book (a venue resending its book, or a stream of snapshots
            // only) is no resync: nothing was asked for, nothing is counted.
            let was_synced = book.sync.is_synced();
            if let Some(audits) = &mut diff.audits {
                audits.book_replaced(slot);
            }
            book.sync.reset();
            book.awaiting_since_ns = None;
            book.decimals = seen;
            let outcome = book.sync.on_snapshot(&diff.update);
            if was_synced && matches!(outcome, SnapshotOutcome::Synced { .. }) {
                None
            } else {
                let (fetched, applied, dropped) = match outcome {
                    SnapshotOutcome::Synced { applied, dropped } => {
                        let took_ns = received_ns.saturating_sub(book.out_of_sync_since_ns);
                        out.note(Some(slot), FeedEvent::Synced { took_ns });
                        (FetchOutcome::Used, applied, dropped)
                    }
                    _ => (FetchOutcome::Failed, 0, 0),
                };
                out.note(
                    Some(slot),
                    FeedEvent::Snapshot {
                        outcome: fetched,
                        applied,
                        dropped,
                    },
                );
                diff.scheduler.finished(slot, fetched, received_ns);
                match outcome {
                    SnapshotOutcome::Synced { .. } => None,
                    _ => Some(ResyncReason::Crossed),
                }
            }
        } else if in_band && book.awaiting_since_ns.is_some() {
            // Its subscription is acknowledged (books before that are dropped), and an
            // in-band venue sends a subscription's snapshot before its updates: one came
            // first. The snapshot is asked for again, once: later updates wait for it.
            book.awaiting_since_ns = None;
            tracing::warn!(%venue, stream = %self.streams[slot].name, "an update before its book's snapshot; subscribing again");
            Some(ResyncReason::Gap)
        } else {
            book.decimals = WireDecimals {
                price: book.decimals.price.max(seen.price),
                amount: book.decimals.amount.max(seen.amount),
                unit: book.decimals.unit,
            };
            let outcome = book.sync.on_update(&diff.update);
            out.note(Some(slot), FeedEvent::DiffEvent(outcome));
            match outcome {
                UpdateOutcome::Applied if !book.sync.proves(self.depth) => {
                    tracing::info!(%venue, stream = %self.streams[slot].name, "fewer levels known than the depth published, beyond the snapshot's; resyncing");
                    Some(ResyncReason::Unproven)
                }
                UpdateOutcome::Applied => {
                    if let Some(audits) = &mut diff.audits {
                        audit_due = audits.touch(slot, &diff.update, book.sync.last_id());
                    }
                    None
                }
                UpdateOutcome::Buffered { first } => {
                    // A REST snapshot is asked for once the first event is in hand (or at
                    // the end of a quiet book's grace); an in-band venue's comes with the
                    // subscription.
                    if first && !in_band {
                        diff.scheduler.request(slot);
                    }
                    if book.sync.overflowed_events > 0 {
                        let overflowed = std::mem::take(&mut book.sync.overflowed_events);
                        out.note(Some(slot), FeedEvent::EventsOverflowed(overflowed));
                    }
                    return;
                }
                UpdateOutcome::Stale => return,
                UpdateOutcome::Gap => {
                    tracing::warn!(%venue, stream = %self.streams[slot].name, "gap in the diff stream; resyncing");
                    Some(ResyncReason::Gap)
                }
                UpdateOutcome::Crossed => {
                    tracing::warn!(%venue, stream = %self.streams[slot].name, "book crossed; resyncing");
                    Some(ResyncReason::Crossed)
                }
            }
        };
        let lost = lost.or_else(|| {
            if let Some(kept) = diff.kept_depth {
                book.sync.book.truncate(kept);
            }
            let Some(claimed) = diff.update.checksum else {
                if diff.update.is_snapshot && venue.checksums_every_book() {
                    out.note(Some(slot), FeedEvent::UnverifiedSnapshot);
                }
                return None;
            };
            // The wire's text of the book's numbers, which are in the connection's unit.
            let decimals = WireDecimals {
                unit: self.unit,
                ..book.decimals
            };
            let computed =
                venue.checksum_after_change(&book.sync.book, decimals, &mut book.checksum_texts);
            (computed != Some(claimed)).then(|| {
                out.note(Some(slot), FeedEvent::ChecksumMismatch);
                tracing::warn!(%venue, stream = %self.streams[slot].name, claimed, ?computed, "checksum mismatch; resyncing");
                ResyncReason::Checksum
            })
        });
        match lost {
            None => self.publish_diff_book(slot, received_ns, out),
            Some(reason) => self.lose_sync(slot, reason, received_ns, out),
        }
        if audit_due {
            self.compare_audit(received_ns, out);
        }
    }

    /// `slot`'s book is no longer the venue's: out of sync until a snapshot rebuilds it,
    /// which is asked for now where the next one will not come by itself (a gap, or any
    /// loss on an in-band venue).
    pub(super) fn lose_sync(
        &mut self,
        slot: usize,
        reason: ResyncReason,
        now_ns: u64,
        out: &mut impl FeedOutput,
    ) {
        let Some(diff) = &mut self.diff else { return };
        let book = &mut diff.books[slot];
        out.note(Some(slot), FeedEvent::Resync(reason));
        if reason != ResyncReason::Gap {
            // A gap's event starts the new buffer; nothing else of the book is kept.
            book.sync.reset();
        }
        book.generation += 1;
        book.out_of_sync_since_ns = now_ns;
        // An audit's mismatch and a depth no longer proved ask at once too: the book may
        // be quiet, and its rebuild needs no event first.
        let request_now = matches!(
            reason,
            ResyncReason::Gap | ResyncReason::Audit | ResyncReason::Unproven
        ) || diff.source == SnapshotSource::InBand;
        diff.scheduler.lost(slot, now_ns, request_now);
        out.publish(slot, |feed| feed.state = VenueState::OutOfSync);
    }

    /// `slot` is subscribed again after a silence in which events may have been lost, which
    /// Bitstamp's and Coinbase Exchange's streams could not show (their events carry no id
    /// to chain): out of sync until a snapshot rebuilds it, the one its new subscription
    /// brings (in-band) or the one its first event, or its quiet grace, asks for (REST).
    pub(super) fn resubscribed_after_silence(
        &mut self,
        slot: usize,
        now_ns: u64,
        out: &mut impl FeedOutput,
    ) {
        let Some(diff) = &mut self.diff else { return };
        let book = &mut diff.books[slot];
        if book.sync.is_synced() {
            book.out_of_sync_since_ns = now_ns;
            out.note(Some(slot), FeedEvent::Resync(ResyncReason::Silence));
        }
        book.sync.reset();
        book.generation += 1;
        book.quiet_since_ns = None;
        book.awaiting_since_ns = (diff.source == SnapshotSource::InBand).then_some(now_ns);
        diff.scheduler.lost(slot, now_ns, false);
        out.publish(slot, |feed| feed.state = VenueState::OutOfSync);
    }

    /// Publishes the top of a synced diff book.
    pub(super) fn publish_diff_book(
        &mut self,
        slot: usize,
        received_ns: u64,
        out: &mut impl FeedOutput,
    ) {
        let Some(diff) = &self.diff else { return };
        let sync = &diff.books[slot].sync;
        let depth = self.depth;
        let contract_size = self.streams[slot].contract_size;
        let mut exact = true;
        out.publish(slot, |feed| {
            sync.write_top(depth, received_ns, &mut feed.book);
            exact = in_base_currency(&mut feed.book, contract_size);
            feed.state = publishable_state(exact);
            sync.write_full_depth(&mut feed.full_depth);
            feed.full_depth.contract_size = contract_size;
        });
        self.after_publish(slot, exact, received_ns, out);
    }

    /// When the next snapshot request is due, an in-band snapshot overdue, or an audit's
    /// request or comparison due (ns), if any: the time to call [`FeedCore::finish_audit`]
    /// and [`FeedCore::start_snapshot`].
    pub fn next_snapshot_at(&mut self, now_ns: u64) -> Option<u64> {
        let diff = self.diff.as_mut()?;
        let weight = diff.request_weight;
        let due = diff.scheduler.next(now_ns, weight).map(|(_, at)| at);
        let timeout = diff.settings.snapshot_timeout.as_nanos() as u64;
        let overdue = diff
            .books
            .iter()
            .filter_map(|book| Some(book.awaiting_since_ns? + timeout))
            .min();
        let quiet = diff.quiet_grace_ends_at();
        let audit = self.next_audit_at(now_ns);
        due.into_iter()
            .chain(overdue)
            .chain(quiet)
            .chain(audit)
            .min()
    }

    /// The snapshot request to make now, if one is due, else an audit's: recorded as made.
    /// An in-band snapshot that has not come within the snapshot timeout is a failed
    /// request first (asked again after the retry backoff).
    pub fn start_snapshot(&mut self, now_ns: u64) -> Option<SnapshotRequest> {
        let diff = self.diff.as_mut()?;
        diff.request_quiet_books(now_ns);
        let timeout = diff.settings.snapshot_timeout.as_nanos() as u64;
        for (slot, book) in diff.books.iter_mut().enumerate() {
            if book
                .awaiting_since_ns
                .is_some_and(|since| since + timeout <= now_ns)
            {
                book.awaiting_since_ns = None;
                tracing::warn!(venue = %self.venue, stream = %self.streams[slot].name, "no snapshot after subscribing; subscribing again");
                diff.scheduler.finished(slot, FetchOutcome::Failed, now_ns);
            }
        }
        let weight = diff.request_weight;
        let due = (diff.scheduler.next(now_ns, weight)).filter(|&(_, at)| at <= now_ns);
        let Some((slot, _)) = due else {
            return self.start_audit(now_ns);
        };
        diff.scheduler.started(slot, now_ns, weight);
        let stream = &self.streams[slot];
        let book = &mut diff.books[slot];
        Some(match diff.source {
            SnapshotSource::Rest => {
                let settings = &diff.settings;
                let snapshots = self.venue.snapshots();
                let whole_book = (settings.whole_book)
                    .then(|| snapshots.whole_book_url(&settings.rest_url, &stream.symbol))
                    .flatten();
                let url = whole_book.unwrap_or_else(|| {
                    snapshots.snapshot_url(
                        &settings.rest_url,
                        &stream.symbol,
                        settings.snapshot_depth,
                    )
                });
                tracing::debug!(venue = %self.venue, %url, "requesting snapshot");
                SnapshotRequest::Fetch {
                    stream: slot,
                    generation: book.generation,
                    url,
                }
            }
            SnapshotSource::InBand => {
                tracing::debug!(venue = %self.venue, stream = %stream.name, "subscribing again for a snapshot");
                book.awaiting_since_ns = Some(now_ns);
                let names = [stream.name.clone()];
                let depth = diff.settings.snapshot_depth;
                let mut frames =
                    self.venue
                        .streams()
                        .unsubscribe_frames(&names, self.stream_kind(), depth);
                frames.extend(self.subscribe(&[slot], depth, now_ns));
                SnapshotRequest::Resubscribe { frames }
            }
        })
    }

    /// The answer to `stream`'s snapshot request of `generation`, at `now_ns`: its body, or
    /// how the request failed (`RateLimited` or `Failed`).
    pub fn on_snapshot(
        &mut self,
        stream: usize,
        generation: u64,
        result: Result<&[u8], FetchOutcome>,
        now_ns: u64,
        out: &mut impl FeedOutput,
    ) {
        let venue = self.venue;
        let Some(diff) = &mut self.diff else { return };
        let book = &mut diff.books[stream];
        if generation != book.generation {
            // Asked for before a reset, which cancelled it in the scheduler (and the stream
            // asks again with its next buffered event): drop it, touching nothing.
            return;
        }
        let (mut applied, mut dropped) = (0, 0);
        let outcome = match result {
            Err(failed) => failed,
            Ok(body) => {
                let (max_levels, snapshot) = (diff.settings.max_levels, &mut diff.snapshot);
                match (self.unit).decoding(|| venue.decode_snapshot(body, max_levels, snapshot)) {
                    Err(error) => {
                        tracing::warn!(%venue, %error, "snapshot refused");
                        FetchOutcome::Failed
                    }
                    Ok(()) => match book.sync.on_snapshot(&diff.snapshot) {
                        SnapshotOutcome::Synced {
                            applied: took,
                            dropped: contained,
                        } => {
                            (applied, dropped) = (took, contained);
                            book.decimals = diff.snapshot.decimals;
                            let took_ns = now_ns.saturating_sub(book.out_of_sync_since_ns);
                            out.note(Some(stream), FeedEvent::Synced { took_ns });
                            tracing::info!(%venue, stream = %self.streams[stream].name, applied, dropped, took_ms = took_ns / 1_000_000, "book synced");
                            FetchOutcome::Used
                        }
                        SnapshotOutcome::TooOld => {
                            tracing::info!(%venue, stream = %self.streams[stream].name, "snapshot older than the buffered events; asking again");
                            FetchOutcome::TooOld
                        }
                        SnapshotOutcome::Crossed => {
                            // Unusable: asked for again after the retry backoff.
                            out.note(Some(stream), FeedEvent::Resync(ResyncReason::Crossed));
                            FetchOutcome::Failed
                        }
                        SnapshotOutcome::Unexpected => FetchOutcome::Used,
                    },
                }
            }
        };
        out.note(
            Some(stream),
            FeedEvent::Snapshot {
                outcome,
                applied,
                dropped,
            },
        );
        diff.scheduler.finished(stream, outcome, now_ns);
        if outcome == FetchOutcome::Used && diff.books[stream].sync.is_synced() {
            self.publish_diff_book(stream, now_ns, out);
        }
    }

    /// Whether an answer to `stream`'s snapshot request of `generation` would be taken
    /// (`on_snapshot` drops the answers to requests a reset cancelled).
    pub fn is_current_snapshot_request(&self, stream: usize, generation: u64) -> bool {
        self.diff
            .as_ref()
            .and_then(|diff| diff.books.get(stream))
            .is_some_and(|book| book.generation == generation)
    }

    /// A snapshot body that arrived for `stream` without a request of this core's (a
    /// recording's REST response): taken as the answer to the stream's current request.
    pub fn on_recorded_snapshot(
        &mut self,
        stream: usize,
        body: &[u8],
        received_ns: u64,
        out: &mut impl FeedOutput,
    ) {
        let Some(generation) = self
            .diff
            .as_ref()
            .and_then(|diff| Some(diff.books.get(stream)?.generation))
        else {
            return;
        };
        self.on_snapshot(stream, generation, Ok(body), received_ns, out);
    }

    /// The diff books as they are now, one per stream (none in snapshot mode).
    pub fn into_diff_books(self) -> Vec<BookSync> {
        self.diff
            .map(|diff| diff.books.into_iter().map(|book| book.sync).collect())
            .unwrap_or_default()
    }
}
