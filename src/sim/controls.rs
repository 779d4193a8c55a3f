//! What tests, the chaos runs and the soak drive the simulator with: the faults it
//! injects (cut connections, raw and broken frames, gaps, duplicates, reordered events,
//! bad checksums, slow or refused snapshots, silence, clock jumps, reconnect storms) and
//! what it saw (connections, pongs, pings, frames sent, the true books). Built only with
//! the `faults` feature, which the test-support crate turns on: the service binary's
//! simulator serves well-formed venues and has none of this.

use super::*;

/// A server-to-client WebSocket frame (final, unmasked) with `opcode` around `payload`,
/// as RFC 6455 §5.2 lays it out.
fn websocket_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut frame = vec![0x80 | opcode];
    match payload.len() {
        length @ 0..=125 => frame.push(length as u8),
        length @ 126..=0xffff => {
            frame.push(126);
            frame.extend_from_slice(&(length as u16).to_be_bytes());
        }
        length => {
            frame.push(127);
            frame.extend_from_slice(&(length as u64).to_be_bytes());
        }
    }
    frame.extend_from_slice(payload);
    frame
}

const TEXT_OPCODE: u8 = 0x1;

/// The header of a 1000-byte text frame and its first 100 bytes.
fn half_a_frame() -> Vec<u8> {
    let mut frame = websocket_frame(TEXT_OPCODE, &[b' '; 1000]);
    frame.truncate(frame.len() - 900);
    frame
}

impl Simulator {
    /// `venue`, a REST venue whose protocol also has an in-band form, serves that form
    /// from now on (`on`): each new subscription starts with a snapshot on the stream, and
    /// events carry the venue's checksums.
    pub fn serve_in_band_snapshots(&self, venue: VenueId, on: bool) {
        self.control(venue)
            .in_band_form
            .store(on, Ordering::Relaxed);
    }

    fn faults(&self, venue: VenueId) -> &DiffFaults {
        &self.control(venue).faults
    }

    /// On each diff stream of `venue`, the next `events` events change the book but are
    /// not sent: gaps. (Fault switches of diff streams act on the exchange's streams,
    /// which every feed of it shares: `VenueFacts::exchange`.)
    pub fn skip_events(&self, venue: VenueId, events: u64) {
        for stream in self.diff_streams(venue) {
            stream.faults.skip.store(events, Ordering::Relaxed);
        }
    }

    /// On `symbol`'s diff stream of `venue` alone, the next `events` events change the
    /// book but are not sent: a gap in one book of a connection.
    pub fn skip_events_of(&self, venue: VenueId, symbol: &str, events: u64) {
        let key = stream_key(venue, &venue.streams().diff_stream_name(symbol));
        let streams = self.shared.diff_streams.lock().expect("not poisoned");
        if let Some(stream) = streams.get(&key) {
            stream.faults.skip.store(events, Ordering::Relaxed);
        }
    }

    /// Makes `symbol`'s diff stream of `venue` a quiet market (`true`: its book does not
    /// change, no event is sent; snapshots still answer) or a busy one again. False where
    /// the stream does not exist yet.
    pub fn quiet_book(&self, venue: VenueId, symbol: &str, quiet: bool) -> bool {
        let key = stream_key(venue, &venue.streams().diff_stream_name(symbol));
        let streams = self.shared.diff_streams.lock().expect("not poisoned");
        let Some(stream) = streams.get(&key) else {
            return false;
        };
        stream.faults.quiet.store(quiet, Ordering::Relaxed);
        true
    }

    /// On `symbol`'s diff stream of `venue`, one event changes the book (its best bid, by
    /// one unit) and is sent to no one: lost on the way, which a stream without ids
    /// (Bitstamp's, Coinbase Exchange's) cannot show. Meant for a paused venue, whose
    /// events cannot set that level again before the client looks. False where the stream
    /// does not exist or has no bid.
    pub fn lose_event(&self, venue: VenueId, symbol: &str) -> bool {
        let key = stream_key(venue, &venue.streams().diff_stream_name(symbol));
        let stream = (self.shared.diff_streams.lock().expect("not poisoned"))
            .get(&key)
            .cloned();
        let Some(stream) = stream else {
            return false;
        };
        let mut market = stream.market.lock().expect("not poisoned");
        let changed = market.change_best_bid(crate::clock::unix_ns() / 1_000);
        if changed {
            stream.remember(&market);
        }
        changed
    }

    /// On each diff stream of `venue`, the next `events` events are sent twice.
    pub fn duplicate_events(&self, venue: VenueId, events: u64) {
        for stream in self.diff_streams(venue) {
            stream.faults.duplicate.store(events, Ordering::Relaxed);
        }
    }

    /// On each diff stream of `venue`, the next `pairs` pairs of events are sent in
    /// swapped order.
    pub fn swap_events(&self, venue: VenueId, pairs: u64) {
        for stream in self.diff_streams(venue) {
            stream.faults.swap.store(pairs, Ordering::Relaxed);
        }
    }

    /// On `symbol`'s diff stream of `venue` (one that sends checksums), the next `events`
    /// events carry a wrong checksum.
    pub fn corrupt_checksums(&self, venue: VenueId, symbol: &str, events: u64) {
        let key = stream_key(venue, &venue.streams().diff_stream_name(symbol));
        let streams = self.shared.diff_streams.lock().expect("not poisoned");
        if let Some(stream) = streams.get(&key) {
            stream
                .faults
                .corrupt_checksum
                .store(events, Ordering::Relaxed);
        }
    }

    /// The next `requests` snapshot requests to `venue` are answered HTTP 429 with
    /// `Retry-After: retry_after_s`.
    pub fn rate_limit_snapshots(&self, venue: VenueId, requests: u64, retry_after_s: u64) {
        let faults = self.faults(venue);
        faults.retry_after_s.store(retry_after_s, Ordering::Relaxed);
        faults
            .rate_limited_requests
            .store(requests, Ordering::Relaxed);
    }

    /// The next `requests` snapshot requests to `venue` fail as `failure` says.
    pub fn fail_snapshots(&self, venue: VenueId, requests: u64, failure: SnapshotFailure) {
        let faults = self.faults(venue);
        *faults.snapshot_failure.lock().expect("not poisoned") = failure;
        faults.failed_requests.store(requests, Ordering::Relaxed);
    }

    /// Every snapshot response of `venue` waits `delay` first.
    pub fn delay_snapshots(&self, venue: VenueId, delay: Duration) {
        self.faults(venue)
            .snapshot_delay_ms
            .store(delay.as_millis() as u64, Ordering::Relaxed);
    }

    /// Saves each of `venue`'s diff books as it is now; the next snapshot request for each
    /// gets that saved (by then older) state.
    pub fn serve_stale_snapshot(&self, venue: VenueId) {
        for stream in self.diff_streams(venue) {
            let mut saved = BookUpdate::default();
            stream
                .market
                .lock()
                .expect("not poisoned")
                .snapshot(usize::MAX, &mut saved);
            *stream.stale_snapshot.lock().expect("not poisoned") = Some(saved);
        }
    }

    /// When each snapshot request to `venue` arrived.
    pub fn snapshot_requests(&self, venue: VenueId) -> Vec<std::time::Instant> {
        self.faults(venue)
            .snapshot_requests
            .lock()
            .expect("not poisoned")
            .clone()
    }

    /// `look` at the top of `venue`'s diff book for `symbol` after each of its recent
    /// events (at most 20 levels a side), oldest first; read in place, under the
    /// stream's lock, which holds its next event back meanwhile.
    pub fn with_diff_history<R>(
        &self,
        venue: VenueId,
        symbol: &str,
        look: impl FnOnce(&[TopBook]) -> R,
    ) -> R {
        let key = stream_key(venue, &venue.streams().diff_stream_name(symbol));
        let stream = self
            .shared
            .diff_streams
            .lock()
            .expect("not poisoned")
            .get(&key)
            .cloned();
        match stream {
            Some(stream) => look(
                stream
                    .history
                    .lock()
                    .expect("not poisoned")
                    .make_contiguous(),
            ),
            None => look(&[]),
        }
    }

    fn diff_streams(&self, venue: VenueId) -> Vec<Arc<DiffStream>> {
        let streams = self.shared.diff_streams.lock().expect("not poisoned");
        streams
            .iter()
            .filter(|((v, _), _)| *v == venue.exchange())
            .map(|(_, stream)| Arc::clone(stream))
            .collect()
    }

    fn control(&self, venue: VenueId) -> &VenueControl {
        &self.shared.venues[venue.index()]
    }

    /// Drops every open connection of `venue` without a close frame.
    pub fn disconnect(&self, venue: VenueId) {
        self.command(venue, Command::Disconnect);
    }

    /// Stops (or resumes) book frames for `venue`, a subscription's in-band snapshot
    /// included; connections stay open and subscriptions are still answered.
    pub fn pause(&self, venue: VenueId, paused: bool) {
        self.control(venue).paused.send_replace(paused);
    }

    /// Pauses `venue` (as [`Simulator::pause`]) and returns once every connection serving
    /// it has seen the pause: a frame one was writing has gone out, and none follows until
    /// the venue is resumed. What a test that freezes the market to compare what was sent
    /// waits for.
    pub async fn pause_until_silent(&self, venue: VenueId) {
        self.pause(venue, true);
        let control = self.control(venue);
        while control.unpaused_connections.load(Ordering::Acquire) > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
    }

    /// Sends `frame` verbatim on every open connection of `venue` (numbered as the
    /// connection's next message where it has the venue's place for a number:
    /// `Simulated::number_message`).
    pub fn send_raw(&self, venue: VenueId, frame: impl Into<String>) {
        self.command(venue, Command::Send(frame.into()));
    }

    /// Sends a binary frame on every open connection of `venue`.
    pub fn send_binary(&self, venue: VenueId, bytes: Vec<u8>) {
        self.command(venue, Command::SendBinary(bytes));
    }

    /// Sends a text frame whose payload is not UTF-8 (which WebSocket forbids).
    pub fn send_invalid_utf8(&self, venue: VenueId) {
        let bytes = websocket_frame(TEXT_OPCODE, b"{\"data\":\"\xff\xfe\xc3\x28\"}");
        self.command(
            venue,
            Command::Raw {
                bytes,
                then: AfterRaw::Continue,
            },
        );
    }

    /// Writes the first part of a text frame (its header promises more), then drops the
    /// connection.
    pub fn cut_mid_frame(&self, venue: VenueId) {
        let bytes = half_a_frame();
        self.command(
            venue,
            Command::Raw {
                bytes,
                then: AfterRaw::Close,
            },
        );
    }

    /// Writes the first part of a text frame, then sends nothing more while keeping the
    /// connection open: a peer stalled mid-stream.
    pub fn stall_mid_frame(&self, venue: VenueId) {
        let bytes = half_a_frame();
        self.command(
            venue,
            Command::Raw {
                bytes,
                then: AfterRaw::Stall,
            },
        );
    }

    /// Every open connection of `venue` stops serving its subscriptions, silently (pings
    /// and the connection go on); a new subscription is served again.
    pub fn drop_subscriptions(&self, venue: VenueId) {
        self.command(venue, Command::DropSubscriptions);
    }

    /// Every open connection of `venue` stops serving its subscriptions and serves none
    /// made on it from now on (answered as usual), while its pings and the venue's
    /// heartbeats go on: only a new connection brings data again.
    pub fn heartbeats_only(&self, venue: VenueId) {
        self.command(venue, Command::HeartbeatsOnly);
    }

    /// Sends `count` pings at once on every open connection of `venue`.
    pub fn ping_flood(&self, venue: VenueId, count: u32) {
        self.command(venue, Command::Pings(count));
    }

    /// Sends `frames` book frames per stream at once, on top of the configured rate.
    pub fn burst(&self, venue: VenueId, frames: u32) {
        self.command(venue, Command::Burst(frames));
    }

    /// From now on, `venue`'s book frames carry sequences (Bitstamp: timestamps)
    /// `offset` above the true ones; 0 puts the clock back.
    pub fn set_clock_offset(&self, venue: VenueId, offset: u64) {
        self.control(venue)
            .clock_offset
            .store(offset, Ordering::Relaxed);
    }

    /// From now on, `venue`'s books and diff events are stamped `delay` before they are
    /// sent, as a venue that far behind its own clock sends them: the delay a client
    /// measures from the venue's time to its receipt grows by `delay`. `Duration::ZERO`
    /// puts it back.
    pub fn delay_stamps(&self, venue: VenueId, delay: Duration) {
        self.control(venue)
            .stamp_lag_ms
            .store(delay.as_millis() as u64, Ordering::Relaxed);
    }

    /// While `quiet`, `venue`'s book frames repeat the last book sent, unchanged and with
    /// the same sequence, at the usual rate: a market where nothing happens (Binance then
    /// repeats `lastUpdateId`).
    pub fn quiet_market(&self, venue: VenueId, quiet: bool) {
        self.control(venue).quiet.store(quiet, Ordering::Relaxed);
    }

    /// A `ws://` URL for `venue` whose server accepts TCP connections and never answers.
    pub fn silent_url(&self, venue: VenueId) -> String {
        let listener = std::net::TcpListener::bind((self.addr().ip(), 0))
            .and_then(|listener| {
                listener.set_nonblocking(true)?;
                TcpListener::from_std(listener)
            })
            .expect("a loopback port");
        let addr = listener.local_addr().expect("a bound listener");
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                tokio::spawn(async move {
                    // Reads (and ignores) until the client gives up.
                    let mut sink = tokio::io::sink();
                    let _ = tokio::io::copy(&mut stream, &mut sink).await;
                });
            }
        });
        format!("ws://{addr}/{}", venue.name())
    }

    /// A `wss://` URL for `venue` on the simulator's plain-text port: the TLS handshake
    /// fails.
    pub fn tls_mismatch_url(&self, venue: VenueId) -> String {
        format!("wss://{}/{}", self.addr, venue.name())
    }

    fn command(&self, venue: VenueId, command: Command) {
        let _ = self.control(venue).commands.send(command);
    }

    /// Makes connections opened from now on report every generated book frame they send
    /// to `log`, stamped just before the write (the load harness's start of the clock). The
    /// log is bounded and never waited on: when it is full the frame is still sent and
    /// counted in `unlogged_sends`. After a write of one frame a stream the simulator's thread
    /// then yields its CPU, so that the reader the write woke runs first.
    pub fn record_sends(&self, log: std::sync::mpsc::SyncSender<SentFrame>) {
        *self.shared.send_log.lock().expect("not poisoned") = Some(log);
    }

    /// Makes snapshot streams subscribed from now on send a frame one tick in `hot_every`
    /// if named in `hot`, and one in `cold_every` otherwise (the load harness: many books
    /// at a low rate spread over the ticks, one at a higher rate).
    pub fn set_stream_pacing(&self, hot: Vec<String>, hot_every: u32, cold_every: u32) {
        let mut pacing = self.shared.stream_pacing.lock().expect("not poisoned");
        pacing.hot = hot;
        pacing.hot_every = hot_every;
        pacing.cold_every = cold_every;
    }

    /// Makes connections opened from now on write the frames of `ticks` ticks together,
    /// one write every `ticks` ticks (1: a write a tick). A load generator that writes
    /// each frame alone pays a system call, a loopback delivery and a wake-up of its
    /// reader per frame; a venue pushing hundreds of books on one connection sends them
    /// as they are due, and a reader behind a busy link receives them together anyway.
    pub fn set_ticks_per_write(&self, ticks: u32) {
        let mut pacing = self.shared.stream_pacing.lock().expect("not poisoned");
        pacing.ticks_per_write = ticks.max(1);
    }

    /// Frames sent that `record_sends`'s full log could not take.
    pub fn unlogged_sends(&self) -> u64 {
        self.shared.unlogged_sends.load(Ordering::Relaxed)
    }

    /// Sends the venue's own reconnect request (nothing for a venue that has none).
    pub fn request_reconnect(&self, venue: VenueId) {
        if let Some(request) = venue.simulated().reconnect_request() {
            self.send_raw(venue, request);
        }
    }

    /// Makes new connections of `venue` ping every `interval` instead of the venue's own.
    pub fn set_ping_interval(&self, venue: VenueId, interval: Duration) {
        self.control(venue)
            .ping_every_ms
            .store(interval.as_millis().max(1) as u64, Ordering::Relaxed);
    }

    /// Pongs received from clients of `venue` so far.
    pub fn pongs(&self, venue: VenueId) -> u64 {
        self.control(venue).pongs.load(Ordering::Relaxed)
    }

    /// While `closing`, every new connection of `venue` is closed once the WebSocket
    /// handshake is done, before any subscription (a venue in trouble; a reconnect storm).
    pub fn close_new_connections(&self, venue: VenueId, closing: bool) {
        self.control(venue)
            .closing
            .store(closing, Ordering::Relaxed);
    }

    /// Application-level pings received from clients of `venue` so far.
    pub fn client_pings(&self, venue: VenueId) -> u64 {
        self.control(venue).client_pings.load(Ordering::Relaxed)
    }

    /// The next `answers` of `venue`'s clients to its heartbeats are lost on the way: the
    /// venue, where it wants them answered, closes the connection once its oldest
    /// heartbeat has waited for one too long (it sends one a second).
    pub fn lose_heartbeat_answers(&self, venue: VenueId, answers: u64) {
        self.control(venue)
            .answers_to_lose
            .store(answers, Ordering::Relaxed);
    }

    /// Connections of `venue` it closed for a heartbeat left unanswered.
    pub fn heartbeat_closes(&self, venue: VenueId) -> u64 {
        self.control(venue).heartbeat_closes.load(Ordering::Relaxed)
    }

    /// Close frames received from clients of `venue` so far (a clean client shutdown).
    pub fn closes(&self, venue: VenueId) -> u64 {
        self.control(venue).closes.load(Ordering::Relaxed)
    }

    /// Connections accepted for `venue` so far.
    pub fn connections(&self, venue: VenueId) -> u64 {
        self.control(venue)
            .connected_at
            .lock()
            .expect("not poisoned")
            .len() as u64
    }

    /// The last book frame sent to any client on `stream` of a venue that sends text.
    pub fn last_sent(&self, venue: VenueId, stream: &str) -> Option<String> {
        let frame = self.last_sent_bytes(venue, stream)?;
        String::from_utf8(frame).ok()
    }

    /// The last book frame sent to any client on `stream`, as sent (binary or text).
    pub fn last_sent_bytes(&self, venue: VenueId, stream: &str) -> Option<Vec<u8>> {
        let sent = self.shared.sent.lock().expect("not poisoned");
        sent.get(&(venue, stream.to_owned()))
            .map(|sent| sent.last_frame.to_vec())
    }

    /// `look` at the books `stream` of `venue` (a snapshot stream) sent recently, on any
    /// connection, oldest first; read in place, under the lock every snapshot stream's
    /// send takes.
    pub fn with_sent_books<R>(
        &self,
        venue: VenueId,
        stream: &str,
        look: impl FnOnce(&[TopBook]) -> R,
    ) -> R {
        let mut sent = self.shared.sent.lock().expect("not poisoned");
        match sent.get_mut(&(venue, stream.to_owned())) {
            Some(sent) => look(sent.books.make_contiguous()),
            None => look(&[]),
        }
    }

    /// When each connection of `venue` was accepted, oldest first.
    pub fn connection_times(&self, venue: VenueId) -> Vec<std::time::Instant> {
        self.control(venue)
            .connected_at
            .lock()
            .expect("not poisoned")
            .clone()
    }

    /// Connections of `venue` refused at the upgrade for want of its API key.
    pub fn refused_for_api_key(&self, venue: VenueId) -> u64 {
        self.control(venue)
            .refused_for_api_key
            .load(Ordering::Relaxed)
    }

    /// Makes `venue` check that each whole-book REST request is signed with `secret` and
    /// `passphrase` (`Credentials::SignedRest`), refusing it (HTTP 401) otherwise; without
    /// this, every such request is refused, as the venue refuses an unknown key.
    pub fn check_signatures(&self, venue: VenueId, secret: &str, passphrase: &str) {
        let signing = (secret.to_owned(), passphrase.to_owned());
        *self.control(venue).signing.lock().expect("not poisoned") = Some(signing);
    }

    /// `venue`'s whole-book REST requests that were signed right, and that were refused.
    pub fn signed_snapshots(&self, venue: VenueId) -> (u64, u64) {
        let control = self.control(venue);
        let signed = control.signed_snapshots.load(Ordering::Relaxed);
        (signed, control.unsigned_snapshots.load(Ordering::Relaxed))
    }

    /// Makes `venue`'s next `count` token requests fail (HTTP 503), as a venue's REST API
    /// does while it is down.
    pub fn fail_token_requests(&self, venue: VenueId, count: u64) {
        (self.control(venue).token_failures_left).store(count, Ordering::Relaxed);
    }

    /// The token requests `venue` has had, answered or failed.
    pub fn token_requests(&self, venue: VenueId) -> u64 {
        self.control(venue).token_requests.load(Ordering::Relaxed)
    }

    /// Connections of `venue` refused at the upgrade for a token it did not hand out.
    pub fn refused_for_token(&self, venue: VenueId) -> u64 {
        self.control(venue)
            .refused_for_token
            .load(Ordering::Relaxed)
    }

    /// Makes `venue` refuse (`true`) or grant its authorisation requests from now on, as
    /// the exchange refuses a key it does not know.
    pub fn refuse_credentials(&self, venue: VenueId, refuse: bool) {
        self.control(venue)
            .refuse_credentials
            .store(refuse, Ordering::Relaxed);
    }

    /// Requests of `venue` refused because their connection was not authorised (Deribit's
    /// `raw` books asked for without `public/auth`).
    pub fn refused_unauthorised(&self, venue: VenueId) -> u64 {
        self.control(venue)
            .refused_unauthorised
            .load(Ordering::Relaxed)
    }
}
