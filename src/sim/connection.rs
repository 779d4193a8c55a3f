//! One client's WebSocket connection to a simulated venue: the handshake, its
//! subscriptions and acks, the book frames it is sent, the faults tests inject.

use super::*;

/// What a simulated venue's connection asks the socket for per read (`serve`).
pub(super) const SERVER_READ_BUFFER_BYTES: usize = 4 * 1024;

// The handshake callback's error type is tungstenite's (an HTTP response), not ours.
#[allow(clippy::result_large_err)]
pub(super) async fn serve(stream: TcpStream, shared: Arc<Shared>) -> Result<(), Error> {
    stream.set_nodelay(true)?;
    let (mut path, mut query) = (String::new(), String::new());
    // Frames are written when flushed, never earlier (`BookFrames::send` stamps each
    // tick's frames just before their one write): no tick's frames come near 1 GiB.
    // tungstenite zeroes its read buffer's spare room before every read attempt, and a
    // connection attempts one each time its loop turns (every tick): clients send only
    // small requests, and the default 128 KiB showed in profiles of the simulator serving
    // thousands of books. A larger request grows the buffer to fit.
    let config = WebSocketConfig::default()
        .write_buffer_size(1 << 30)
        .read_buffer_size(SERVER_READ_BUFFER_BYTES);
    let mut socket = tokio_tungstenite::accept_hdr_async_with_config(
        stream,
        |request: &Request, response: Response| {
            path = request.uri().path().to_owned();
            query = request.uri().query().unwrap_or_default().to_owned();
            check_api_key(request, &shared)?;
            check_token(request, &shared)?;
            Ok(response)
        },
        Some(config),
    )
    .await?;
    let Some(venue) = venue_of_path(&path) else {
        return Err(format!("no venue at {path:?}").into());
    };
    let control = &shared.venues[venue.index()];
    (control.connected_at.lock().expect("not poisoned")).push(std::time::Instant::now());
    let playback = shared.playback.lock().expect("not poisoned").clone();
    if let Some(playback) = playback.filter(|playback| playback.serves(venue)) {
        return playback.serve(socket, venue).await;
    }
    if control.closing.load(Ordering::Relaxed) {
        return Ok(());
    }
    if let Some(welcome) = venue.simulated().welcome(connect_id(&query)) {
        socket.send(Message::text(welcome)).await?;
    }
    let mut commands = control.commands.subscribe();
    let mut paused = control.paused.subscribe();
    let mut pause = SeenPause::new(control);

    // The timer cannot usefully tick faster than 1 kHz: above that, send several frames
    // per tick.
    let ticks_per_second = shared.rate_per_second.min(1000);
    let ticks_per_write = shared.ticks_per_write();
    let frames_per_write = shared.rate_per_second.div_ceil(ticks_per_second) * ticks_per_write;
    let mut ticker =
        tokio::time::interval(Duration::from_secs(1) * ticks_per_write / ticks_per_second);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);

    let ping_every = match control.ping_every_ms.load(Ordering::Relaxed) {
        0 => venue.simulated().server_ping_interval(),
        ms => Some(Duration::from_millis(ms)),
    };
    // Without pings, a timer that never fires.
    let mut pinger =
        tokio::time::interval(ping_every.unwrap_or(Duration::from_secs(u64::from(u32::MAX))));
    pinger.reset();

    let mut books = BookFrames {
        venue,
        recording: shared.recordings.lock().expect("not poisoned")[venue.index()].clone(),
        send_log: shared.send_log.lock().expect("not poisoned").clone(),
        unstamped: Vec::new(),
        replayed: 0,
        streams: Vec::new(),
        book: TopBook::default(),
    };
    let (diff_sender, mut diff_frames) = mpsc::channel::<(u64, Bytes)>(DIFF_QUEUE_FRAMES);
    // The connection's live diff subscriptions (stream, id), and the next id.
    let (mut live, mut next_subscription): (Vec<(String, u64)>, u64) = (Vec::new(), 0);
    let mut numbers = MessageNumbers { venue, next: 0 };
    // The venue's heartbeats, once a second from the connection's first subscription on,
    // where it sends them.
    let mut heartbeats = tokio::time::interval(Duration::from_secs(1));
    let (mut subscribed, mut heartbeats_sent) = (false, 0);
    // When the oldest heartbeat still unanswered was sent, where the venue wants answers.
    let mut unanswered_since: Option<std::time::Instant> = None;
    // Serves no subscription any more (`Command::HeartbeatsOnly`).
    let mut data_dead = false;
    // The connection was authorised (`Answer::authorises`).
    let mut authorised = false;
    loop {
        // Before choosing what to send next: a frame being written when the venue was
        // paused has gone out.
        pause.see(*paused.borrow());
        tokio::select! {
            incoming = socket.next() => match incoming {
                Some(Ok(Message::Text(text))) => {
                    if let Some(mut answer) = venue.simulated().answer_request(&text) {
                        if let Some(refusal) = answer.authorises.take() {
                            if control.refuse_credentials.load(Ordering::Relaxed) {
                                socket.send(Message::text(refusal)).await?;
                                continue;
                            }
                            authorised = true;
                        }
                        if let Some(refusal) = answer.unauthorised.take().filter(|_| !authorised) {
                            control.refused_unauthorised.fetch_add(1, Ordering::Relaxed);
                            socket.send(Message::text(refusal)).await?;
                            continue;
                        }
                        if answer.ping {
                            let lost = control.answers_to_lose.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| left.checked_sub(1)).is_ok();
                            if lost {
                                continue;
                            }
                            control.client_pings.fetch_add(1, Ordering::Relaxed);
                            unanswered_since = None;
                        }
                        for reply in answer.replies {
                            socket.send(Message::text(numbers.stamp(reply))).await?;
                        }
                        for stream in answer.unsubscribe {
                            if venue.streams().is_diff_stream(&stream) {
                                let diff = diff_stream(&shared, venue, &stream, answer.depth);
                                diff.subscribers.lock().expect("not poisoned").retain(|s| !s.frames.same_channel(&diff_sender));
                                live.retain(|(name, _)| *name != stream);
                            }
                            books.streams.retain(|books| *books.name != *stream);
                        }
                        subscribed |= !answer.subscribe.is_empty();
                        for stream in answer.subscribe {
                            if data_dead {
                                continue;
                            }
                            if venue.streams().is_diff_stream(&stream) {
                                // Deribit acknowledges a subscription the connection holds
                                // and sends nothing more: no new snapshot.
                                let held = live.iter().any(|(name, _)| *name == stream);
                                if held && venue.simulated().repeated_subscription_is_ignored() {
                                    continue;
                                }
                                let diff = diff_stream(&shared, venue, &stream, answer.depth);
                                next_subscription += 1;
                                live.retain(|(name, _)| *name != stream);
                                live.push((stream.clone(), next_subscription));
                                let subscriber = Subscriber { frames: diff_sender.clone(), subscription: next_subscription, feed: 0 };
                                diff.subscribe(venue, &stream, control.in_band(venue), subscriber);
                                continue;
                            }
                            let seed = shared.seed ^ books.streams.len() as u64 ^ (venue.exchange().index() as u64) << 32;
                            // A subscription that asks for fewer levels than the stream's
                            // (Hyperliquid's `fast`) gets those.
                            let levels = venue.simulated().levels_on_stream(&stream).min(answer.depth.unwrap_or(usize::MAX));
                            let every = shared.stream_every(&stream);
                            // Streams that skip ticks spread over them, not all on one.
                            let ticks = books.streams.len() as u32;
                            let market = SimulatedBook::new(seed, shared.price_grid(venue, &stream));
                            books.streams.push(StreamBooks { name: stream.into(), levels, market, every, ticks });
                        }
                    }
                }
                Some(Ok(Message::Pong(_))) => {
                    control.pongs.fetch_add(1, Ordering::Relaxed);
                }
                Some(Ok(Message::Close(_))) => {
                    control.closes.fetch_add(1, Ordering::Relaxed);
                    return Ok(());
                }
                None => return Ok(()),
                Some(Ok(_)) => {}
                Some(Err(error)) => return Err(error.into()),
            },
            _ = ticker.tick(), if !books.streams.is_empty() && !*paused.borrow() => {
                books.send(&mut socket, &shared, frames_per_write).await?;
            }
            // Paused, a subscription's in-band snapshot waits too: a paused venue sends no
            // book data at all.
            // What the stream has queued, up to a batch, in one write (as `BookFrames::send`
            // writes a tick's frames): a write a frame costs the simulator, which shares
            // the cores with the service, a system call and a loopback delivery each.
            Some(first) = diff_frames.recv(), if !*paused.borrow() => {
                let (mut next, mut taken) = (Some(first), 1);
                while let Some((subscription, frame)) = next {
                    let is_live = live.iter().any(|&(_, id)| id == subscription);
                    match (is_live, frame.is_empty()) {
                        (false, _) => {}
                        (true, true) => numbers.lose(),
                        (true, false) => socket.feed(numbers.book_message(frame)).await?,
                    }
                    next = (taken < DIFF_FRAMES_PER_WRITE).then(|| diff_frames.try_recv().ok()).flatten();
                    taken += 1;
                }
                socket.flush().await?;
            }
            _ = pinger.tick() => socket.send(Message::Ping(b"mergebook-sim".to_vec().into())).await?,
            _ = heartbeats.tick(), if subscribed && !*paused.borrow() => {
                if unanswered_since.is_some_and(|since| since.elapsed() >= HEARTBEAT_ANSWER_ALLOWANCE) {
                    // The venue's own words as it closes ("heartbeat close").
                    control.heartbeat_closes.fetch_add(1, Ordering::Relaxed);
                    let reason = tokio_tungstenite::tungstenite::protocol::CloseFrame { code: 4000.into(), reason: "heartbeat close".into() };
                    let _ = socket.send(Message::Close(Some(reason))).await;
                    return Ok(());
                }
                if let Some(heartbeat) = venue.simulated().heartbeat(heartbeats_sent) {
                    heartbeats_sent += 1;
                    if venue.simulated().heartbeat_wants_answer() {
                        unanswered_since.get_or_insert_with(std::time::Instant::now);
                    }
                    socket.send(Message::text(numbers.stamp(heartbeat))).await?;
                }
            }
            command = commands.recv() => match command {
                Ok(Command::Disconnect) | Err(broadcast::error::RecvError::Closed) => return Ok(()),
                // Numbered where it has the venue's place for a number.
                Ok(Command::Send(text)) => socket.send(Message::text(numbers.stamp(text))).await?,
                Ok(Command::SendBinary(bytes)) => socket.send(Message::binary(bytes)).await?,
                Ok(Command::Raw { bytes, then }) => {
                    use tokio::io::AsyncWriteExt;
                    socket.flush().await?;
                    socket.get_mut().write_all(&bytes).await?;
                    match then {
                        AfterRaw::Continue => {}
                        AfterRaw::Close => return Ok(()),
                        AfterRaw::Stall => {
                            let mut sink = tokio::io::sink();
                            tokio::io::copy(socket.get_mut(), &mut sink).await?;
                            return Ok(());
                        }
                    }
                }
                Ok(Command::Pings(count)) => {
                    for _ in 0..count {
                        socket.feed(Message::Ping(b"flood".to_vec().into())).await?;
                    }
                    socket.flush().await?;
                }
                Ok(Command::Burst(frames)) => books.send(&mut socket, &shared, frames).await?,
                Ok(command @ (Command::DropSubscriptions | Command::HeartbeatsOnly)) => {
                    data_dead |= matches!(command, Command::HeartbeatsOnly);
                    books.streams.clear();
                    for diff in shared.diff_streams.lock().expect("not poisoned").values() {
                        diff.subscribers.lock().expect("not poisoned").retain(|s| !s.frames.same_channel(&diff_sender));
                    }
                    live.clear();
                }
                Err(broadcast::error::RecvError::Lagged(_)) => {}
            },
            _ = paused.changed() => {}
        }
    }
}

/// A connection's part in its venue's count of connections that have not seen its pause
/// (`Simulator::pause_until_silent`), given back when it ends.
struct SeenPause<'a> {
    control: &'a VenueControl,
    seen: bool,
}

impl<'a> SeenPause<'a> {
    fn new(control: &'a VenueControl) -> SeenPause<'a> {
        control.unpaused_connections.fetch_add(1, Ordering::AcqRel);
        SeenPause {
            control,
            seen: false,
        }
    }

    /// Notes whether the venue is paused, as the connection's loop sees it.
    fn see(&mut self, paused: bool) {
        if paused == self.seen {
            return;
        }
        let unpaused = &self.control.unpaused_connections;
        match paused {
            true => unpaused.fetch_sub(1, Ordering::AcqRel),
            false => unpaused.fetch_add(1, Ordering::AcqRel),
        };
        self.seen = paused;
    }
}

impl Drop for SeenPause<'_> {
    fn drop(&mut self) {
        if !self.seen {
            self.control
                .unpaused_connections
                .fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// How long a heartbeat may wait for its answer before the venue closes the connection,
/// where it wants them answered: Deribit's closes about 10 s after; 3 s here keeps tests
/// short and leaves a loaded machine's scheduling delays room.
pub(super) const HEARTBEAT_ANSWER_ALLOWANCE: Duration = Duration::from_secs(3);

/// The most book frames' bytes a connection holds before it writes them.
pub(super) const WRITE_CHUNK_BYTES: usize = 1 << 20;

/// The most queued diff frames a connection writes at once.
pub(super) const DIFF_FRAMES_PER_WRITE: usize = 256;

/// What a diff stream sends for an event it applied but lost (`Simulator::skip_events`):
/// nothing, though a venue that numbers its messages numbered it.
pub(super) const LOST_EVENT: Bytes = Bytes::new();

/// The numbers of a connection's messages, where its venue numbers them
/// (`Simulated::number_message`).
pub(super) struct MessageNumbers {
    venue: VenueId,
    next: u64,
}

impl MessageNumbers {
    /// `frame` as the connection's next message.
    fn stamp(&mut self, frame: String) -> String {
        match self.venue.simulated().number_message(&frame, self.next) {
            Some(numbered) => {
                self.next += 1;
                numbered
            }
            None => frame,
        }
    }

    /// A message numbered and never sent.
    fn lose(&mut self) {
        self.next += 1;
    }

    /// A book frame as the venue sends it: binary where its books are
    /// (`VenueFacts::binary_books`), else text, numbered where the venue numbers its messages.
    fn book_message(&mut self, frame: Bytes) -> Message {
        if self.venue.facts().binary_books {
            return Message::Binary(frame);
        }
        let text = String::from_utf8(frame.into()).expect("text encoders write UTF-8");
        Message::text(self.stamp(text))
    }
}

/// Logs the frames encoded since the last write (stream, sequence), stamped now, just
/// before they are written: a frame is logged before its reader can have it.
pub(super) fn log_sends(
    unstamped: &mut Vec<(Arc<str>, u64)>,
    log: Option<&std::sync::mpsc::SyncSender<SentFrame>>,
    venue: VenueId,
    shared: &Shared,
) {
    let Some(log) = log else {
        return;
    };
    let sent_ns = crate::clock::monotonic_ns();
    for (stream, sequence) in unstamped.drain(..) {
        let sent = SentFrame {
            venue,
            stream,
            sequence,
            sent_ns,
        };
        if log.try_send(sent).is_err() {
            shared.unlogged_sends.fetch_add(1, Ordering::Relaxed);
        }
    }
}
