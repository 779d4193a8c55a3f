//! The book frames of one connection's snapshot streams: generated from the market, or a
//! recording's frames re-encoded under the subscribed stream with increasing numbers.

use super::*;

/// The book frames of one connection's snapshot streams: generated, or a recording.
pub(super) struct BookFrames {
    pub(super) venue: VenueId,
    pub(super) recording: Option<Arc<Recording>>,
    pub(super) send_log: Option<std::sync::mpsc::SyncSender<SentFrame>>,
    /// The frames encoded for the next write, for `send_log`: (stream, sequence).
    pub(super) unstamped: Vec<(Arc<str>, u64)>,
    /// Recorded books served so far.
    pub(super) replayed: usize,
    pub(super) streams: Vec<StreamBooks>,
    pub(super) book: TopBook,
}

/// One snapshot stream of a connection.
pub(super) struct StreamBooks {
    pub(super) name: Arc<str>,
    /// Levels a side it carries.
    pub(super) levels: usize,
    pub(super) market: SimulatedBook,
    /// Sends a frame one tick in this many (`Simulator::set_stream_pacing`; 1: every tick).
    pub(super) every: u32,
    pub(super) ticks: u32,
}

impl BookFrames {
    /// Sends `count` book frames on every stream, in one write: above 1,000 frames a
    /// second a tick carries several, and one write each would cost the simulator, which
    /// shares the cores with the service under load, a system call and a loopback
    /// delivery per frame. A reader that falls behind gets frames together anyway.
    pub(super) async fn send(
        &mut self,
        socket: &mut tokio_tungstenite::WebSocketStream<TcpStream>,
        shared: &Shared,
        count: u32,
    ) -> Result<(), Error> {
        let venue = self.venue;
        let control = &shared.venues[venue.index()];
        let clock_offset = control.clock_offset.load(Ordering::Relaxed);
        let quiet = control.quiet.load(Ordering::Relaxed);
        let lag_ns = control.stamp_lag_ms.load(Ordering::Relaxed) * 1_000_000;
        let mut unflushed = 0;
        for _ in 0..count {
            for stream_books in &mut self.streams {
                stream_books.ticks = stream_books.ticks.wrapping_add(1);
                if stream_books.ticks % stream_books.every != 0 {
                    continue;
                }
                let StreamBooks {
                    name: stream,
                    levels,
                    market,
                    ..
                } = stream_books;
                let book = &mut self.book;
                let price_decimals = match &self.recording {
                    Some(recording) => {
                        book.copy_from(&recording.books[self.replayed % recording.books.len()]);
                        self.replayed += 1;
                        // A looped recording must not look like duplicates.
                        book.venue_sequence = self.replayed as u64;
                        recording.price_decimals
                    }
                    None => {
                        if !(quiet && market.repeat_book(book)) {
                            // The venue's time: the simulator's clock, less the venue's lag.
                            let time_ns = crate::clock::unix_ns().saturating_sub(lag_ns);
                            let per_second = venue.simulated().sequence_per_second();
                            let floor = per_second.map_or(0, |units| {
                                (u128::from(time_ns) * u128::from(units) / 1_000_000_000) as u64
                            });
                            market.next_book(
                                shared.mid_ticks.load(Ordering::Relaxed),
                                *levels,
                                0,
                                floor,
                                book,
                            );
                            book.exchange_time_ns = time_ns;
                        }
                        8
                    }
                };
                book.venue_sequence += clock_offset;
                let mut frame = Vec::new();
                venue
                    .simulated()
                    .encode_book(stream, book, price_decimals, &mut frame);
                let frame = Bytes::from(frame);
                match &self.send_log {
                    // Under load, the frame's time (below) instead of a copy of it.
                    Some(_) => self
                        .unstamped
                        .push((Arc::clone(stream), book.venue_sequence)),
                    None => {
                        let mut sent = shared.sent.lock().expect("not poisoned");
                        let key = (venue, stream.to_string());
                        sent.entry(key).or_default().push(frame.clone(), book);
                    }
                }
                unflushed += frame.len();
                let message = match venue.facts().binary_books {
                    true => Message::Binary(frame),
                    false => Message::Text(frame.try_into().expect("text encoders write UTF-8")),
                };
                socket.feed(message).await?;
                // A burst of 100-level books would otherwise be held whole, tens of MB.
                if unflushed >= WRITE_CHUNK_BYTES {
                    log_sends(&mut self.unstamped, self.send_log.as_ref(), venue, shared);
                    socket.flush().await?;
                    unflushed = 0;
                }
            }
        }
        log_sends(&mut self.unstamped, self.send_log.as_ref(), venue, shared);
        socket.flush().await?;
        if self.send_log.is_some() && count == 1 {
            // Under measurement (`mergebook-tools loadtest`) the simulator stands in for exchanges
            // on other machines but shares a CPU with the readers (on two CPUs, the one the
            // merger does not own). The write has just woken this frame's reader; without
            // the yield the scheduler often lets this thread run on (the next venue's frame,
            // its own wake-ups) while the reader waits, time no deployment's frame spends
            // (docs/decisions.md, "Under measurement the simulator yields after a write"). Not when a write carries several
            // frames of a stream (above 1,000 a second): the reader has a batch to work
            // through either way, and yielding only slowed the simulator down.
            std::thread::yield_now();
        }
        Ok(())
    }
}
