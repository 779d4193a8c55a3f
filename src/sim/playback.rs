//! A recording played back (`Simulator::serve_recording`, `simulator.recording`):
//! what each venue's connections received, frame for frame and at the recorded pace, so a
//! recorded incident runs again through the real service, end to end.
//!
//! Each recorded connection (from one `ws_connect` to the next) is served to one live
//! connection of its venue, once the client has sent its first frame (its subscription):
//! the first recorded connection whose first request is that frame, else the earliest
//! left. Its frames go out at their recorded offsets from that request, divided by the
//! speed. A recorded connection that ended before the recording did ends here too (the
//! connection is dropped, as it was): the service reconnects and is served the next one.
//! REST snapshot requests are answered with the recorded bodies for the symbol, in order
//! (the last one again once they run out). A venue with nothing recorded is served the
//! generated market.

use super::Error;
use crate::record::timeline::{ConnectionRecording, TimelineEvent};
use crate::venue::{MAX_VENUES, VenueId};
use futures_util::{SinkExt, StreamExt};
use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;
use tokio::net::TcpStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

/// A recording, ready to serve.
pub(super) struct Playback {
    /// Per venue, the recorded connections not served yet, in the order they opened.
    connections: [Mutex<VecDeque<RecordedConnection>>; MAX_VENUES],
    /// The venues recorded: served from the recording only, even once their recorded
    /// connections have all been served.
    recorded: [bool; MAX_VENUES],
    /// Per (venue, symbol in upper case), the snapshot bodies not served yet.
    snapshots: Mutex<HashMap<(VenueId, String), VecDeque<String>>>,
    speed: f64,
}

#[derive(Default)]
struct RecordedConnection {
    /// The client's first frame on it (its subscription), where one was recorded.
    first_request: Option<String>,
    /// Each frame and its time after the first request (or the connection's opening).
    frames: Vec<(u64, Message)>,
    /// Whether the recording ended with it open.
    open_at_the_end: bool,
}

impl Playback {
    pub(super) fn new(recordings: &[ConnectionRecording], speed: f64) -> Playback {
        let mut opened: [Vec<(u64, RecordedConnection)>; MAX_VENUES] = Default::default();
        let mut snapshots: HashMap<(VenueId, String), VecDeque<String>> = HashMap::new();
        for recording in recordings {
            let venue = recording.venue;
            let connections = &mut opened[venue.index()];
            let first_of_this = connections.len();
            let mut start_ns = None;
            for timed in &recording.events {
                let at = timed.received_ns;
                let message = match &timed.event {
                    TimelineEvent::Connected => {
                        connections.push((at, RecordedConnection::default()));
                        start_ns = Some(at);
                        continue;
                    }
                    TimelineEvent::Sent(request) => {
                        let Some((_, connection)) = connections.last_mut() else {
                            continue;
                        };
                        if connection.first_request.is_none() && connection.frames.is_empty() {
                            connection.first_request = Some(request.clone());
                            start_ns = Some(at);
                        }
                        continue;
                    }
                    TimelineEvent::Rest { url, body } => {
                        if let Some(symbol) = venue.snapshots().snapshot_symbol(url) {
                            let key = (venue, symbol.to_ascii_uppercase());
                            snapshots.entry(key).or_default().push_back(body.clone());
                        }
                        continue;
                    }
                    // An audit's snapshot answered a request the playing client makes
                    // at its own times, if at all: not served.
                    TimelineEvent::AuditRequest { .. } | TimelineEvent::Audit { .. } => continue,
                    TimelineEvent::Text(text) => Message::text(text.as_str()),
                    TimelineEvent::Binary(bytes) => Message::binary(bytes.clone()),
                };
                if connections.len() == first_of_this {
                    connections.push((at, RecordedConnection::default()));
                    start_ns = Some(at);
                }
                let offset = at.saturating_sub(start_ns.unwrap_or(at));
                let (_, connection) = connections.last_mut().expect("one is open");
                connection.frames.push((offset, message));
            }
            if let Some((_, last)) = connections
                .get_mut(first_of_this..)
                .and_then(<[_]>::last_mut)
            {
                last.open_at_the_end = true;
            }
        }
        let recorded = std::array::from_fn(|venue| !opened[venue].is_empty());
        let connections = opened.map(|mut connections| {
            connections.sort_by_key(|(opened_ns, _)| *opened_ns);
            Mutex::new(connections.into_iter().map(|(_, c)| c).collect())
        });
        Playback {
            connections,
            recorded,
            snapshots: Mutex::new(snapshots),
            speed,
        }
    }

    /// Whether the recording holds connections of `venue`.
    pub(super) fn serves(&self, venue: VenueId) -> bool {
        self.recorded[venue.index()]
    }

    /// The next recorded snapshot body of `symbol`, if the recording has any.
    pub(super) fn snapshot(&self, venue: VenueId, symbol: &str) -> Option<String> {
        let mut snapshots = self.snapshots.lock().expect("not poisoned");
        let bodies = snapshots.get_mut(&(venue, symbol.to_ascii_uppercase()))?;
        match bodies.len() {
            0 => None,
            1 => bodies.front().cloned(),
            _ => bodies.pop_front(),
        }
    }

    /// The recorded connection for a client whose first frame is `request`.
    fn take(&self, venue: VenueId, request: &str) -> Option<RecordedConnection> {
        let mut connections = self.connections[venue.index()]
            .lock()
            .expect("not poisoned");
        let at = connections
            .iter()
            .position(|c| c.first_request.as_deref() == Some(request))
            .unwrap_or(0);
        connections.remove(at)
    }

    /// Serves one live connection of `venue` (upgraded, its API key checked).
    pub(super) async fn serve(
        &self,
        mut socket: WebSocketStream<TcpStream>,
        venue: VenueId,
    ) -> Result<(), Error> {
        let request = loop {
            match socket.next().await {
                Some(Ok(Message::Text(text))) => break text.to_string(),
                Some(Ok(Message::Close(_))) | None => return Ok(()),
                Some(Ok(_)) => {}
                Some(Err(error)) => return Err(error.into()),
            }
        };
        let Some(connection) = self.take(venue, &request) else {
            return read_until_closed(&mut socket).await;
        };
        let started = tokio::time::Instant::now();
        for (offset_ns, message) in connection.frames {
            let due = started + Duration::from_secs_f64(offset_ns as f64 * 1e-9 / self.speed);
            loop {
                tokio::select! {
                    _ = tokio::time::sleep_until(due) => break,
                    incoming = socket.next() => match incoming {
                        Some(Ok(Message::Close(_))) | None => return Ok(()),
                        Some(Ok(_)) => {}
                        Some(Err(error)) => return Err(error.into()),
                    },
                }
            }
            socket.send(message).await?;
        }
        if !connection.open_at_the_end {
            // The recorded connection ended here: so does this one.
            return Ok(());
        }
        read_until_closed(&mut socket).await
    }
}

/// Reads (and answers nothing) until the client closes.
async fn read_until_closed(socket: &mut WebSocketStream<TcpStream>) -> Result<(), Error> {
    while let Some(message) = socket.next().await {
        if let Message::Close(_) = message? {
            break;
        }
    }
    Ok(())
}
