//! The diff streams: one full-depth book per (venue, stream), its event generator, and
//! the queues of the connections subscribed to it.

use super::*;

/// A diff stream's key: its symbol, whichever of the venue's names for it a client or a
/// test uses (the service's stream name, or a topic with the depth in it).
pub(super) fn stream_key(venue: VenueId, stream: &str) -> (VenueId, String) {
    let symbol = venue.streams().diff_stream_symbol(stream);
    (
        venue.exchange(),
        symbol.as_deref().unwrap_or(stream).to_ascii_lowercase(),
    )
}

/// The diff stream `stream` of `venue`, created (with its event generator) on first use.
///
/// A venue that keeps its book at the subscribed depth (`Snapshots::kept_depth`) is served a
/// book of that depth, `subscribed_depth` as the first subscription asked (the venue's
/// most where none did): events change it as the venue's top N changes, and what leaves
/// the top N is cut, as the client cuts it.
pub(super) fn diff_stream(
    shared: &Arc<Shared>,
    venue: VenueId,
    stream: &str,
    subscribed_depth: Option<usize>,
) -> Arc<DiffStream> {
    let mut streams = shared.diff_streams.lock().expect("not poisoned");
    let key = stream_key(venue, stream);
    if let Some(existing) = streams.get(&key) {
        return Arc::clone(existing);
    }
    // The exchange's stream, whichever of its feeds asked first.
    let venue = key.0;
    let seed = shared.seed ^ (streams.len() as u64) << 16 ^ (venue.index() as u64) << 32;
    let market = DiffMarket::new(
        seed,
        venue,
        shared.mid_ticks.load(Ordering::Relaxed),
        crate::clock::unix_ns() / 1_000,
        venue
            .snapshots()
            .kept_depth(subscribed_depth.unwrap_or(usize::MAX)),
        shared.price_grid(venue, stream),
    );
    // The book before any event is one the venue had too (an in-band snapshot sends it).
    let mut first = TopBook::default();
    market.book.top(HISTORY_DEPTH, &mut first);
    first.venue_sequence = market.last_id;
    let created = Arc::new(DiffStream {
        faults: EventFaults::default(),
        market: Mutex::new(market),
        subscribers: Mutex::new(Vec::new()),
        feeds: Mutex::new(Vec::new()),
        history: Mutex::new(VecDeque::from([first])),
        stale_snapshot: Mutex::new(None),
    });
    streams.insert(key, Arc::clone(&created));
    tokio::spawn(generate_diff_events(
        Arc::downgrade(shared),
        venue,
        Arc::clone(&created),
    ));
    created
}

impl DiffStream {
    /// Keeps the top of `market`'s book as it is now among the stream's recent tops.
    pub(super) fn remember(&self, market: &DiffMarket) {
        let mut top = TopBook::default();
        market.book.top(HISTORY_DEPTH, &mut top);
        top.venue_sequence = market.last_id;
        let mut history = self.history.lock().expect("not poisoned");
        if history.len() == HISTORY {
            history.pop_front();
        }
        history.push_back(top);
    }
}

/// Takes one from a fault counter; true if it was armed.
pub(super) fn take_one(counter: &AtomicU64) -> bool {
    counter
        .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
        .is_ok()
}

/// Changes the stream's book at the simulator's rate and sends each event to its
/// subscribers, encoded for the feed each reads (with the venue's faults applied), until
/// the simulator is gone. `venue` is the exchange's.
pub(super) async fn generate_diff_events(
    shared: std::sync::Weak<Shared>,
    venue: VenueId,
    diff: Arc<DiffStream>,
) {
    let Some(rate) = shared.upgrade().map(|shared| shared.rate_per_second) else {
        return;
    };
    let mut ticker = tokio::time::interval(Duration::from_secs(1) / rate.min(1000));
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut event = BookUpdate::default();
    // An event's frames, one a feed.
    let mut held: Option<Arc<[Bytes]>> = None;
    loop {
        ticker.tick().await;
        let Some(shared) = shared.upgrade() else {
            return;
        };
        let control = &shared.venues[venue.index()];
        if *control.paused.borrow() {
            continue;
        }
        for _ in 0..rate.div_ceil(1000) {
            if diff.faults.quiet.load(Ordering::Relaxed) {
                break;
            }
            let mid = shared.mid_ticks.load(Ordering::Relaxed);
            let checksum = {
                let mut market = diff.market.lock().expect("not poisoned");
                market.next_event(mid, crate::clock::unix_ns() / 1_000, &mut event);
                diff.remember(&market);
                let checksum = match control.in_band(venue) {
                    true => venue.checksum(&market.book, SIMULATED_DECIMALS),
                    false => None,
                };
                // A bad checksum: one bit flipped.
                checksum.map(|sum| sum ^ u32::from(take_one(&diff.faults.corrupt_checksum)))
            };
            let lag_ms = control.stamp_lag_ms.load(Ordering::Relaxed);
            let unix_ms = (crate::clock::unix_ns() / 1_000_000).saturating_sub(lag_ms);
            let frame: Arc<[Bytes]> = (diff.feeds.lock().expect("not poisoned").iter())
                .map(|(feed_venue, stream)| {
                    let mut frame = Vec::new();
                    let price_decimals = PRICE_DECIMALS;
                    feed_venue.simulated().encode_diff(
                        stream,
                        &event,
                        checksum,
                        price_decimals,
                        unix_ms,
                        &mut frame,
                    );
                    Bytes::from(frame)
                })
                .collect();
            let faults = &diff.faults;
            let mut outgoing: Vec<Arc<[Bytes]>> = Vec::new();
            if take_one(&faults.skip) {
                outgoing.push(Arc::from(vec![LOST_EVENT; frame.len()]));
            } else if let Some(earlier) = held.take() {
                outgoing.extend([Arc::clone(&frame), earlier]);
            } else if take_one(&faults.swap) {
                held = Some(Arc::clone(&frame));
            } else if take_one(&faults.duplicate) {
                outgoing.extend([Arc::clone(&frame), Arc::clone(&frame)]);
            } else {
                outgoing.push(frame);
            }
            let mut subscribers = diff.subscribers.lock().expect("not poisoned");
            subscribers.retain(|subscriber| {
                let id = subscriber.subscription;
                // A feed that subscribed after the event was encoded has no frame of it: its
                // book starts after (a snapshot it fetched, or its in-band one).
                let frames = outgoing
                    .iter()
                    .filter_map(|frames| frames.get(subscriber.feed));
                frames
                    .into_iter()
                    .all(|frame| subscriber.frames.try_send((id, frame.clone())).is_ok())
            });
        }
    }
}
