//! What `mergebook watch` shows, apart from how: the latest summary of the instrument
//! watched, the connection to the service, the counts (updates a second, skipped
//! sequence numbers), and what the keys changed (instrument, depth, pause). Pure: the
//! event loop (`mod.rs`) feeds it, the renderer (`render.rs`) reads it.

use crate::publish::proto::ExactSummary;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Levels a side shown at first, and the most a key can ask for (the service's own depth
/// caps it further).
pub const DEFAULT_DEPTH: usize = 10;
pub const MAX_DEPTH: usize = 50;

/// Over how long the updates a second are counted.
const RATE_WINDOW: Duration = Duration::from_secs(1);

/// The connection to the service, as the screen shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Link {
    Connecting,
    Live,
    /// Lost (or refused), with why; retried at `retry_at` (`None`: the client is
    /// reconnecting by itself).
    Lost {
        error: String,
        retry_at: Option<Instant>,
    },
}

/// A key's meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    NextInstrument,
    PreviousInstrument,
    MoreDepth,
    LessDepth,
    TogglePause,
    Quit,
}

pub struct WatchState {
    /// The service's instruments (empty until it has told them).
    pub instruments: Vec<String>,
    /// The one watched: its name (the service's first while none is known).
    pub instrument: String,
    pub link: Link,
    /// The latest summary of the instrument, kept across a lost connection (shown as
    /// not live).
    pub summary: Option<ExactSummary>,
    /// Paused: the summary on screen stays while the counts go on.
    pub paused: bool,
    pub depth: usize,
    /// Sequence numbers the stream skipped (a slow terminal or link gets the latest
    /// summary, not every one): the gaps between summaries received, on one stream.
    pub skipped: u64,
    /// When the summaries of the last `RATE_WINDOW` arrived.
    arrivals: VecDeque<Instant>,
    /// The sequence of the last summary received on the current stream.
    last_sequence: Option<u64>,
    /// Received while paused: shown on resume.
    held: Option<ExactSummary>,
}

impl WatchState {
    pub fn new(instrument: Option<String>) -> WatchState {
        WatchState {
            instruments: Vec::new(),
            instrument: instrument.unwrap_or_default(),
            link: Link::Connecting,
            summary: None,
            paused: false,
            depth: DEFAULT_DEPTH,
            skipped: 0,
            arrivals: VecDeque::new(),
            last_sequence: None,
            held: None,
        }
    }

    /// A new stream starts (a connection, or another instrument): sequences start over.
    pub fn stream_started(&mut self) {
        self.link = Link::Live;
        self.last_sequence = None;
    }

    pub fn lost(&mut self, error: String, retry_at: Option<Instant>) {
        self.link = Link::Lost { error, retry_at };
        self.last_sequence = None;
    }

    /// The instruments known (the service's, or those seen on NATS so far): the first is
    /// watched when none was chosen.
    pub fn set_instruments(&mut self, names: Vec<String>) {
        if self.instrument.is_empty()
            && let Some(first) = names.first()
        {
            self.instrument = first.clone();
        }
        self.instruments = names;
    }

    pub fn on_summary(&mut self, summary: ExactSummary, now: Instant) {
        if summary.instrument != self.instrument && !self.instrument.is_empty() {
            return; // the stream of an instrument switched away from
        }
        self.instrument.clone_from(&summary.instrument);
        if let Some(last) = self.last_sequence
            && summary.seq > last + 1
        {
            self.skipped += summary.seq - last - 1;
        }
        self.last_sequence = Some(summary.seq);
        self.arrivals.push_back(now);
        self.expire_arrivals(now);
        match self.paused {
            true => self.held = Some(summary),
            false => self.summary = Some(summary),
        }
    }

    /// Summaries received in the last second.
    pub fn updates_per_second(&mut self, now: Instant) -> usize {
        self.expire_arrivals(now);
        self.arrivals.len()
    }

    fn expire_arrivals(&mut self, now: Instant) {
        while let Some(&first) = self.arrivals.front() {
            if now.duration_since(first) < RATE_WINDOW {
                break;
            }
            self.arrivals.pop_front();
        }
    }

    /// Applies a key; returns the instrument to watch now if it changed.
    pub fn act(&mut self, action: Action) -> Option<String> {
        match action {
            Action::NextInstrument | Action::PreviousInstrument => {
                let count = self.instruments.len();
                let at = self
                    .instruments
                    .iter()
                    .position(|i| *i == self.instrument)?;
                let next = match action {
                    Action::NextInstrument => (at + 1) % count,
                    _ => (at + count - 1) % count,
                };
                if next == at {
                    return None;
                }
                self.instrument = self.instruments[next].clone();
                self.summary = None;
                self.held = None;
                self.skipped = 0;
                self.arrivals.clear();
                self.last_sequence = None;
                return Some(self.instrument.clone());
            }
            Action::MoreDepth => self.depth = (self.depth + 1).min(MAX_DEPTH),
            Action::LessDepth => self.depth = self.depth.saturating_sub(1).max(1),
            Action::TogglePause => {
                self.paused = !self.paused;
                if !self.paused
                    && let Some(held) = self.held.take()
                {
                    self.summary = Some(held);
                }
            }
            Action::Quit => {}
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(instrument: &str, seq: u64) -> ExactSummary {
        ExactSummary {
            instrument: instrument.into(),
            seq,
            ..ExactSummary::default()
        }
    }

    #[test]
    fn skipped_sequences_are_counted_on_one_stream_and_not_across_streams() {
        let now = Instant::now();
        let mut state = WatchState::new(Some("ETH/BTC".into()));
        state.stream_started();
        for seq in [5, 6, 9, 10] {
            state.on_summary(summary("ETH/BTC", seq), now);
        }
        assert_eq!(state.skipped, 2);
        // A new stream (a reconnection) starts wherever the service is.
        state.lost("reset".into(), None);
        state.stream_started();
        state.on_summary(summary("ETH/BTC", 500), now);
        assert_eq!(state.skipped, 2);
        assert_eq!(state.updates_per_second(now), 5);
        assert_eq!(state.updates_per_second(now + RATE_WINDOW), 0);
    }

    #[test]
    fn keys_switch_instruments_change_depth_and_pause() {
        let now = Instant::now();
        let mut state = WatchState::new(None);
        state.set_instruments(vec!["ETH/BTC".into(), "BTC/USD".into()]);
        assert_eq!(state.instrument, "ETH/BTC");
        assert_eq!(
            state.act(Action::PreviousInstrument),
            Some("BTC/USD".into())
        );
        assert_eq!(state.act(Action::NextInstrument), Some("ETH/BTC".into()));
        state.on_summary(summary("BTC/USD", 1), now);
        assert!(
            state.summary.is_none(),
            "the old instrument's stream is ignored"
        );
        state.on_summary(summary("ETH/BTC", 1), now);
        state.act(Action::TogglePause);
        state.on_summary(summary("ETH/BTC", 2), now);
        assert_eq!(state.summary.as_ref().unwrap().seq, 1, "paused");
        state.act(Action::TogglePause);
        assert_eq!(state.summary.as_ref().unwrap().seq, 2, "resumed");
        for _ in 0..100 {
            state.act(Action::LessDepth);
        }
        assert_eq!(state.depth, 1);
        for _ in 0..100 {
            state.act(Action::MoreDepth);
        }
        assert_eq!(state.depth, MAX_DEPTH);
    }
}
