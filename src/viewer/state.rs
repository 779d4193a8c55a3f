//! What `mergebook watch` shows, apart from how: the latest summary of the instrument
//! watched, the connection to the service, the counts (updates a second, skipped
//! sequence numbers), what the keys changed (instrument, depth, pause) and the size box
//! (a quantity typed, and the service's quote of it). Pure: the event loop (`mod.rs`)
//! feeds it, the renderer (`render.rs`) reads it.

use crate::publish::proto::quote_request::Side;
use crate::publish::proto::{ExactSummary, QuoteReply, QuoteRequest};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Levels a side shown at first, and the most a key can ask for (the service's own depth
/// caps it further).
pub const DEFAULT_DEPTH: usize = 10;
pub const MAX_DEPTH: usize = 50;

/// Over how long the updates a second are counted.
const RATE_WINDOW: Duration = Duration::from_secs(1);

/// How often the size box's quote is asked again while the book moves: a quote is a walk
/// of whole books on the merger's thread, so a viewer asks a few a second, not one a
/// summary.
pub const REQUOTE_EVERY: Duration = Duration::from_millis(250);
/// The longest quantity the size box takes (a decimal of 8 fractional digits fits).
const SIZE_TEXT_MAX: usize = 24;

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
    /// The size box: start typing a quantity (`s`), a key typed into it, the last one
    /// erased, the quantity entered (asked from then on), the box closed and cleared.
    EditSize,
    TypeSize(char),
    EraseSize,
    EnterSize,
    CloseSize,
    /// Buy (take the asks) or sell (hit the bids); raw prices or net of fees.
    ToggleSide,
    ToggleAllIn,
    Quit,
}

/// The size box: what the quantity typed would cost across the venues, as the service's
/// `Quote` answers it from the books of one summary.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeBox {
    /// Keys go into the box, not to the other actions.
    pub editing: bool,
    /// The quantity as typed: digits and at most one point.
    pub text: String,
    pub side: Side,
    pub all_in: bool,
    /// The latest answer to the box as it stands, or why there is none.
    pub answer: Option<Result<QuoteReply, String>>,
    /// Quotes can be asked of the source (a service's gRPC port; NATS has none).
    pub available: bool,
    /// Counts the changes of what is asked, so that an answer to a question no longer
    /// asked is dropped.
    generation: u64,
    /// A quote asked and not answered yet.
    pending: bool,
    /// When it was last asked, and the summary shown then.
    last_asked: Option<(Instant, u64)>,
}

impl SizeBox {
    fn new() -> SizeBox {
        SizeBox {
            editing: false,
            text: String::new(),
            side: Side::Buy,
            all_in: false,
            answer: None,
            available: true,
            generation: 0,
            pending: false,
            last_asked: None,
        }
    }

    /// Drawn: being typed into, or holding a quantity.
    pub fn shown(&self) -> bool {
        self.editing || !self.text.is_empty()
    }

    /// What is asked changed: the old answer no longer says it.
    fn changed(&mut self) {
        self.generation += 1;
        self.answer = None;
        self.pending = false;
        self.last_asked = None;
    }
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
    pub size: SizeBox,
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
            size: SizeBox::new(),
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
                self.size.changed();
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
            Action::EditSize => self.size.editing = true,
            Action::TypeSize(key) => {
                let point = key == '.' && !self.size.text.contains('.');
                if (key.is_ascii_digit() || point) && self.size.text.len() < SIZE_TEXT_MAX {
                    self.size.text.push(key);
                    self.size.changed();
                }
            }
            Action::EraseSize => {
                if self.size.text.pop().is_some() {
                    self.size.changed();
                }
            }
            Action::EnterSize => self.size.editing = false,
            Action::CloseSize => {
                self.size.editing = false;
                self.size.text.clear();
                self.size.changed();
            }
            Action::ToggleSide => {
                self.size.side = match self.size.side {
                    Side::Buy => Side::Sell,
                    _ => Side::Buy,
                };
                self.size.changed();
            }
            Action::ToggleAllIn => {
                self.size.all_in = !self.size.all_in;
                self.size.changed();
            }
            Action::Quit => {}
        }
        None
    }

    /// The quote to ask now, with the generation its answer must carry back: the size box
    /// holds an entered quantity, none is being answered, the stream is live and not
    /// paused, and either nothing answered what is asked yet or the book moved on at
    /// least `REQUOTE_EVERY` after it was last asked.
    pub fn quote_due(&mut self, now: Instant) -> Option<(u64, QuoteRequest)> {
        let size = &self.size;
        let sequence = self.summary.as_ref()?.seq;
        let ready = size.available && !size.editing && !size.text.is_empty() && !size.pending;
        if !ready || self.paused || self.link != Link::Live {
            return None;
        }
        if let Some((at, asked_at_sequence)) = size.last_asked
            && (asked_at_sequence == sequence || now.duration_since(at) < REQUOTE_EVERY)
        {
            return None;
        }
        let request = QuoteRequest {
            instrument: self.instrument.clone(),
            side: size.side as i32,
            quantity: size.text.clone(),
            all_in: size.all_in,
            ..QuoteRequest::default()
        };
        self.size.pending = true;
        self.size.last_asked = Some((now, sequence));
        Some((self.size.generation, request))
    }

    /// The answer to the quote asked at `generation` (a `Quote` status's text where the
    /// service refused it or the call failed).
    pub fn on_quote(&mut self, generation: u64, answer: Result<QuoteReply, String>) {
        if generation == self.size.generation {
            self.size.pending = false;
            self.size.answer = Some(answer);
        }
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

    /// The size box takes a decimal, asks it once entered, asks again only when the book
    /// moved and `REQUOTE_EVERY` passed, and drops an answer to what is no longer asked.
    #[test]
    fn the_size_box_asks_its_quantity_as_the_book_moves() {
        let start = Instant::now();
        let mut state = WatchState::new(Some("ETH/BTC".into()));
        state.stream_started();
        state.on_summary(summary("ETH/BTC", 1), start);
        state.act(Action::EditSize);
        for key in "1.2.5x".chars() {
            state.act(Action::TypeSize(key));
        }
        assert_eq!(state.size.text, "1.25", "digits and one point");
        assert_eq!(state.quote_due(start), None, "not while typed");
        state.act(Action::EnterSize);
        let (generation, request) = state.quote_due(start).expect("asked once entered");
        assert_eq!(
            (request.instrument.as_str(), request.quantity.as_str()),
            ("ETH/BTC", "1.25")
        );
        assert_eq!((request.side, request.all_in), (Side::Buy as i32, false));
        assert_eq!(state.quote_due(start), None, "one at a time");
        state.on_quote(generation, Ok(QuoteReply::default()));
        let later = start + REQUOTE_EVERY;
        assert_eq!(
            state.quote_due(later),
            None,
            "the same book: not asked again"
        );
        state.on_summary(summary("ETH/BTC", 2), start);
        assert_eq!(state.quote_due(start), None, "the book moved, too soon");
        let (_, again) = state.quote_due(later).expect("the book moved");
        assert_eq!(again, request);

        // Sell, net of fees: asked at once; the answer to the buy is dropped.
        let stale = generation + 1;
        state.act(Action::ToggleSide);
        state.act(Action::ToggleAllIn);
        assert_eq!(state.size.answer, None);
        let (generation, request) = state.quote_due(later).expect("a new question");
        assert_eq!((request.side, request.all_in), (Side::Sell as i32, true));
        state.on_quote(stale, Err("the old question".into()));
        assert_eq!(state.size.answer, None);
        state.on_quote(generation, Err("refused".into()));
        assert_eq!(state.size.answer, Some(Err("refused".into())));

        // Paused, or without gRPC, nothing is asked; closing the box clears it.
        state.act(Action::EraseSize);
        state.act(Action::TogglePause);
        state.on_summary(summary("ETH/BTC", 3), later);
        assert_eq!(state.quote_due(later + REQUOTE_EVERY), None);
        state.act(Action::TogglePause);
        state.size.available = false;
        assert_eq!(state.quote_due(later + REQUOTE_EVERY), None);
        state.size.available = true;
        let (_, request) = state.quote_due(later + REQUOTE_EVERY).expect("resumed");
        assert_eq!(request.quantity, "1.2");
        state.act(Action::CloseSize);
        assert!(!state.size.shown());
        assert_eq!(state.quote_due(later + REQUOTE_EVERY * 2), None);
    }
}
