//! The feed core: the rules of one venue connection, without I/O. It takes frames and
//! REST snapshot bodies with their receive time, and says what to publish (through a
//! [`FeedOutput`]), what to ask for (a snapshot: [`FeedCore::start_snapshot`]; a
//! reconnect: [`FrameVerdict`]) and which state each instrument is in. The live reader
//! (`feed/mod.rs`) does the I/O around it; `mergebook replay` feeds it recorded frames; so
//! replay publishes what the service would have published.
//!
//! Snapshot mode (`venues.<name>.mode = "snapshot"`): each book frame replaces its
//! instrument's book, unless it is older than the last one published (a venue sequence
//! below it): then it is dropped, until the venue has stayed below for
//! [`SEQUENCE_RESET_AFTER`] books in a row.
//!
//! Diff mode: each instrument has a full-depth [`BookSync`] under the venue's
//! [`Sequencing`](crate::book::diff_sync::Sequencing). Its snapshot comes from where the venue says
//! (`SnapshotSource`): a REST fetch asked of the venue's [`SnapshotScheduler`] once the
//! first event is buffered (or, for a quiet book that sends none, at the end of its
//! grace after the subscription's acknowledgement: [`diff::QUIET_BOOK_GRACE_NS`]), or the
//! stream itself, which sends one when subscribed (and
//! again when subscribed anew, which the scheduler paces the same). After each message
//! the book is cut to the depth the venue keeps and checked against the venue's
//! checksum, where it has them. A gap (an update before an in-band snapshot included), a
//! crossing, a checksum mismatch, a decode error, a reconnect or an audit's mismatch (on
//! streams that cannot show a lost event: `audit.rs`) marks the instrument out of sync at
//! once (the others carry on) until a new snapshot rebuilds it. A REST snapshot
//! requested before a reset is discarded when it arrives (its `generation` is old), so it
//! can never be joined to events it did not precede.

pub mod audit;
mod diff;
pub mod snapshot_schedule;

use self::audit::{AuditOutcome, Audits};
use self::diff::{DiffBook, DiffBooks};

use self::snapshot_schedule::{FetchOutcome, SnapshotScheduler};
use crate::book::diff_sync::{BookSync, ResyncReason, SnapshotOutcome, UpdateOutcome};
use crate::book::{BookUpdate, TopBook, WireDecimals};
use crate::config::DiffSettings;
use crate::feed::handoff::VenueFeed;
use crate::fixed::{FixedPoint, UnitSize};
use crate::log_limit::LogLimiter;
use crate::merger::summary::VenueState;
use crate::venue::{
    Acked, DecodeError, LevelTexts, Message, NAMED_KEY_BYTES, SnapshotSource, StreamKind,
    UNSUBSCRIBE_REQUEST_ID, VenueId,
};

/// Books in a row with a sequence below the last one published after which the core
/// takes the lower sequence as the venue's new count. A book out of order is dropped (an
/// older book must not replace a newer one); a venue whose clock jumped back, or whose
/// counter restarted, sends nothing but such books, and without this its books would all
/// be dropped until the old count was passed again (for a clock jump of an hour, an
/// hour). Three: one reordered book is dropped, a new count is followed within 3 books.
pub const SEQUENCE_RESET_AFTER: u32 = 3;

/// One instrument on a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreStream {
    /// The stream (channel) subscribed to, as the venue names it in its frames (empty: a
    /// raw stream, whose frames name none).
    pub name: String,
    /// The venue's symbol (diff mode asks for its snapshot).
    pub symbol: String,
    /// The base currency per contract, where the venue's sizes for it are contracts: its
    /// books are published in the base currency.
    pub contract_size: Option<FixedPoint>,
    /// The unit its instrument's numbers are read in; the same for every stream of a
    /// connection.
    pub unit: UnitSize,
}

/// What the connection must do after a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameVerdict {
    Continue,
    /// The venue refused the subscription.
    Refused,
    /// The venue asked the client to reconnect.
    Reconnect,
    /// The venue asked for this answer, to be sent at once (`Message::Answer`).
    Answer(&'static str),
}

/// What the core saw, for metrics and replay's statistics. `stream` is `None` where the
/// event concerns the whole connection.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FeedEvent {
    /// A frame was decoded (or refused) that was received at `received_ns`.
    Decoded { received_ns: u64 },
    /// A frame could not be understood: every stream of the connection is out of sync.
    BadFrame(BadFrame),
    /// A snapshot-mode book repeated the last one's sequence (a quiet market): published.
    BookRepeated,
    /// A snapshot-mode book older than the last one published: dropped.
    BookOutOfOrder,
    /// The venue's sequence went back and stayed back: followed from here.
    SequenceReset,
    /// A diff event and what it did.
    DiffEvent(UpdateOutcome),
    /// Buffered diff events dropped because the buffer was full.
    EventsOverflowed(u64),
    /// A diff book left sync, for this reason.
    Resync(ResyncReason),
    /// A snapshot request ended; `applied` and `dropped`: buffered events it took or found
    /// already contained.
    Snapshot {
        outcome: FetchOutcome,
        applied: usize,
        dropped: usize,
    },
    /// A diff book is back in sync, `took_ns` after it left.
    Synced { took_ns: u64 },
    /// Every snapshot request was forgotten (the books were reset): one in flight will be
    /// discarded when it arrives, and need not be waited for.
    SnapshotsCancelled,
    /// A diff book disagreed with the venue's checksum (and is resynchronised).
    ChecksumMismatch,
    /// An audit of a diff book against the venue's REST snapshot ended.
    Audit(AuditOutcome),
    /// A snapshot came without the checksum the venue's books carry: taken unverified.
    UnverifiedSnapshot,
    /// A book of a stream whose subscription was not acknowledged yet: dropped.
    BookBeforeAck,
    /// A well-formed message of no use to the books (another message type or template).
    Ignored,
}

/// Where the core's results go: the merger's mailboxes (the live reader), or a merge in
/// this thread (replay).
pub trait FeedOutput {
    /// Hands `stream`'s next value to the merger: `write` fills it in place (a state
    /// alone, or a state and a book).
    fn publish(&mut self, stream: usize, write: impl FnOnce(&mut VenueFeed));

    /// Hears what the core saw.
    fn note(&mut self, stream: Option<usize>, event: FeedEvent);
}

/// A snapshot to ask the venue for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotRequest {
    /// Fetch `url`; hand the body (or the failure) to [`FeedCore::on_snapshot`] with
    /// `stream` and `generation`.
    Fetch {
        stream: usize,
        generation: u64,
        url: String,
    },
    /// Send these frames on the connection: the stream's subscription again, whose
    /// snapshot comes on the stream.
    Resubscribe { frames: Vec<String> },
    /// Fetch `url`, the venue's REST snapshot that audits `stream`'s book; hand the body
    /// (or the failure) to [`FeedCore::on_audit_snapshot`] with `stream` and `generation`.
    Audit {
        stream: usize,
        generation: u64,
        url: String,
    },
}

/// What the read-idle watchdog finds ([`FeedCore::check_silence`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Silence {
    /// Every subscription delivered within the allowance.
    None,
    /// `streams` subscriptions delivered nothing for the allowance: send these frames,
    /// which subscribe them again (a dead subscription on a live socket is revived).
    Resubscribe { streams: usize, frames: Vec<String> },
    /// A subscription stayed silent for the allowance after it was subscribed again: the
    /// connection is given up.
    Recycle,
}

/// A frame the core could not use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum BadFrame {
    #[error(transparent)]
    Decode(#[from] DecodeError),
    #[error("binary frame of {bytes} bytes where text is expected")]
    Binary { bytes: usize },
}

/// `book`'s sizes in the base currency: times `contract_size` where they are contracts.
/// False where a product is not exact (the book must not be merged).
#[inline]
fn in_base_currency(book: &mut TopBook, contract_size: Option<FixedPoint>) -> bool {
    contract_size.is_none_or(|size| book.scale_amounts(size))
}

/// The most of a number's text a log line shows.
const NUMBER_TEXT_BYTES: usize = 48;

/// The text of the number a decode error is about (`DecodeError::Number`,
/// `IntegerOverflow`), from a text frame, for the log line that names it: the value a
/// venue lists that mergebook cannot hold exactly is what its operator needs to see. Cut
/// at [`NUMBER_TEXT_BYTES`]; `None` for other errors and where the bytes are no number's.
fn number_text<'a>(frame: &'a [u8], error: &DecodeError) -> Option<&'a str> {
    let (DecodeError::Number { at, .. } | DecodeError::IntegerOverflow { at }) = *error else {
        return None;
    };
    let rest = frame.get(at..)?;
    let rest = rest.strip_prefix(b"\"").unwrap_or(rest);
    let is_numeric = |byte: &u8| byte.is_ascii_digit() || b".eE+-".contains(byte);
    let len = rest
        .iter()
        .take(NUMBER_TEXT_BYTES)
        .take_while(|byte| is_numeric(byte))
        .count();
    match len {
        0 => None,
        len => std::str::from_utf8(&rest[..len]).ok(),
    }
}

/// A book handed to the merger is merged when its sizes were exact.
fn publishable_state(exact: bool) -> VenueState {
    match exact {
        true => VenueState::Synced,
        false => VenueState::OutOfSync,
    }
}

/// How many times a quiet stream's read-idle allowance doubles (16 allowances: 8 minutes
/// at the default 30 s): a quiet book is re-proved by a resubscription at least that often.
pub const QUIET_DOUBLINGS_MAX: u32 = 4;

/// Streams a connection's frames are matched against one by one; beyond, by a map of
/// their keys (`FeedCore::slots_by_key`).
const SLOTS_SCANNED: usize = 16;

/// The key of a vacant slot: no stream's key, as none is made of bytes that are not UTF-8.
const VACANT_KEY: &[u8] = &[0xFF];

/// The map of `keys` to their slots, where there are more than [`SLOTS_SCANNED`].
fn slots_by_key(keys: &[Box<[u8]>]) -> Option<foldhash::HashMap<Box<[u8]>, usize>> {
    (keys.len() > SLOTS_SCANNED).then(|| {
        // Reversed: of two streams of one key, the first is the one found, as by the scan.
        (keys.iter().enumerate().rev())
            .filter(|(_, key)| ***key != *VACANT_KEY)
            .map(|(slot, key)| (key.clone(), slot))
            .collect()
    })
}

/// One venue connection's books and rules.
pub struct FeedCore {
    venue: VenueId,
    /// Levels a side handed to the merger.
    depth: usize,
    /// The unit of its streams' numbers: every frame is decoded in it.
    unit: UnitSize,
    streams: Vec<CoreStream>,
    /// Whether each slot holds a stream: a reload that delists one leaves its slot vacant
    /// (its key [`VACANT_KEY`]) until another is listed there, so that no other stream's
    /// slot, and nothing in flight for it, moves ([`FeedCore::delist_stream`]).
    listed: Vec<bool>,
    /// Each stream's key (`Decode::stream_key`), by slot.
    stream_keys: Vec<Box<[u8]>>,
    /// Each stream's slot by its key, where the connection carries more than
    /// [`SLOTS_SCANNED`]: a frame's stream found in one lookup, not a compare per stream
    /// (a cost that grows with the streams a connection carries: a thousand at a whole
    /// market).
    slots_by_key: Option<foldhash::HashMap<Box<[u8]>, usize>>,
    scratch: TopBook,
    /// Per stream, the venue sequence of the last book published (snapshot mode).
    last_sequence: Vec<u64>,
    /// Per stream, books in a row whose sequence went below `last_sequence`.
    regressions: Vec<u32>,
    /// Per stream, the acknowledgement of its subscription still expected, if one is, and
    /// since when.
    awaiting_ack: Vec<Option<(AwaitedAck, u64)>>,
    /// How many of `awaiting_ack` are `Some`: the per-frame check reads this, not the list.
    acks_pending: usize,
    /// The id the next subscribe request gets (each request's is new on the connection).
    next_request_id: u64,
    /// When the connection's first book was published (`None`: none yet).
    first_book_ns: Option<u64>,
    /// The number of the connection's last message, where the venue numbers them.
    last_message_number: Option<u64>,
    /// Per stream, when its last book data arrived, or it was last subscribed: the read-idle
    /// watchdog's clock. Pings, acks and heartbeats do not move it, so a dead subscription
    /// on a live socket is found.
    last_data_ns: Vec<u64>,
    /// Per stream, how many times in a row it was subscribed again for silence without
    /// delivering anything since (0: it delivered book data since its last). A stream
    /// quiet among others that deliver is a quiet market: each round doubles its
    /// allowance, up to [`QUIET_DOUBLINGS_MAX`] times; only a connection on which every
    /// stream is silent is recycled.
    silent_rounds: Vec<u32>,
    diff: Option<DiffBooks>,
    /// The lines a misbehaving venue repeats: bad frames, subscriptions.
    bad_frame_log: LogLimiter,
    subscribed_log: LogLimiter,
    unexpected_ack_log: LogLimiter,
    audit_log: LogLimiter,
}

/// How a stream's subscription will be acknowledged (`SubscribeRequest::id`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AwaitedAck {
    /// With its request, by the request's id.
    Request(u64),
    /// By the stream's name.
    Stream,
}

impl FeedCore {
    /// A core for `venue`'s `streams`, in diff mode when `diff` is given; `now_ns` on the
    /// clock every later time is on.
    pub fn new(
        venue: VenueId,
        depth: usize,
        streams: Vec<CoreStream>,
        diff: Option<&DiffSettings>,
        now_ns: u64,
    ) -> FeedCore {
        let count = streams.len();
        let diff = diff.map(|settings| DiffBooks {
            scheduler: SnapshotScheduler::new(settings.policy, count, now_ns),
            books: (0..count)
                .map(|_| DiffBook::new(venue, settings, now_ns))
                .collect(),
            source: venue.facts().snapshots,
            kept_depth: venue.snapshots().kept_depth(settings.snapshot_depth),
            update: BookUpdate::with_capacity(settings.max_levels),
            snapshot: BookUpdate::with_capacity(settings.max_levels),
            audits: (settings.audit)
                .filter(|_| venue.snapshots().audited())
                .map(|audit| Audits::new(audit, count, settings.max_levels, now_ns)),
            request_weight: venue.snapshots().snapshot_weight(settings.snapshot_depth),
            settings: settings.clone(),
        });
        let stream_keys: Vec<_> = (streams.iter())
            .map(|stream| venue.stream_key(&stream.name))
            .collect();
        let unit = streams.first().map_or(UnitSize::COIN, |stream| stream.unit);
        debug_assert!(
            streams.iter().all(|stream| stream.unit == unit),
            "one unit a connection"
        );
        FeedCore {
            venue,
            depth,
            unit,
            streams,
            listed: vec![true; count],
            slots_by_key: slots_by_key(&stream_keys),
            stream_keys,
            scratch: TopBook::default(),
            last_sequence: vec![0; count],
            regressions: vec![0; count],
            awaiting_ack: vec![None; count],
            acks_pending: 0,
            next_request_id: 1,
            first_book_ns: None,
            last_message_number: None,
            last_data_ns: vec![now_ns; count],
            silent_rounds: vec![0; count],
            diff,
            bad_frame_log: LogLimiter::per_second(),
            subscribed_log: LogLimiter::per_second(),
            unexpected_ack_log: LogLimiter::per_second(),
            audit_log: LogLimiter::per_second(),
        }
    }

    /// A new core for the same streams, in the same mode, as [`FeedCore::new`] makes it: a
    /// renewal's new connection's.
    pub fn fresh(&self, now_ns: u64) -> FeedCore {
        let diff = self.diff.as_ref().map(|diff| &diff.settings);
        let mut fresh = FeedCore::new(self.venue, self.depth, self.streams.clone(), diff, now_ns);
        for slot in (0..self.streams.len()).filter(|&slot| !self.listed[slot]) {
            fresh.delist_stream(slot, now_ns, false);
        }
        fresh
    }

    /// The streams the connection carries (its vacant slots left out).
    pub fn listed_streams(&self) -> usize {
        self.listed.iter().filter(|&&listed| listed).count()
    }

    /// The slot of the stream named `name` for which `is_it` says yes, among those listed.
    pub fn listed_slot(&self, name: &str, is_it: impl Fn(usize) -> bool) -> Option<usize> {
        (0..self.streams.len())
            .find(|&slot| self.listed[slot] && self.streams[slot].name == name && is_it(slot))
    }

    /// The slots that hold a stream.
    fn listed_slots(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.streams.len()).filter(|&slot| self.listed[slot])
    }

    /// Lists `stream` on the connection at `now_ns` (a reload adds its instrument): in the
    /// first vacant slot, else in a new one. Returns the slot and, where the connection is
    /// `open`, the frames that subscribe it (else the next connection's subscription
    /// includes it). Its book starts as on a new connection; no other stream's is touched.
    pub fn list_stream(
        &mut self,
        stream: CoreStream,
        now_ns: u64,
        open: bool,
    ) -> (usize, Vec<String>) {
        debug_assert_eq!(stream.unit, self.unit, "one unit a connection");
        let key = self.venue.stream_key(&stream.name);
        let slot = match self.listed.iter().position(|&listed| !listed) {
            Some(slot) => {
                self.streams[slot] = stream;
                self.stream_keys[slot] = key;
                slot
            }
            None => {
                self.streams.push(stream);
                self.stream_keys.push(key);
                self.listed.push(false);
                self.last_sequence.push(0);
                self.regressions.push(0);
                self.awaiting_ack.push(None);
                self.last_data_ns.push(now_ns);
                self.silent_rounds.push(0);
                if let Some(diff) = &mut self.diff {
                    diff.books
                        .push(DiffBook::new(self.venue, &diff.settings, now_ns));
                    diff.scheduler.add_stream();
                }
                self.streams.len() - 1
            }
        };
        self.listed[slot] = true;
        self.slots_by_key = slots_by_key(&self.stream_keys);
        self.last_sequence[slot] = 0;
        self.regressions[slot] = 0;
        self.last_data_ns[slot] = now_ns;
        self.silent_rounds[slot] = 0;
        if let Some(diff) = &mut self.diff {
            // A generation past the slot's last: whatever is still in flight for the
            // stream delisted from it is dropped when it comes.
            let generation = diff.books[slot].generation + 1;
            diff.books[slot] = DiffBook::new(self.venue, &diff.settings, now_ns);
            diff.books[slot].generation = generation;
            // An in-band venue's subscription brings the snapshot, as on a new connection.
            if open && diff.source == SnapshotSource::InBand {
                diff.books[slot].awaiting_since_ns = Some(now_ns);
            }
        }
        let frames = match open {
            true => self.subscribe(&[slot], self.subscribed_depth(), now_ns),
            false => Vec::new(),
        };
        (slot, frames)
    }

    /// Delists the stream in `slot` at `now_ns` (a reload removes its instrument): its slot
    /// is left vacant, its book forgotten, its snapshot requests dropped (one in flight is
    /// discarded when it comes, its generation past). Returns, where the connection is
    /// `open`, the frames that unsubscribe it. No other stream's book is touched.
    pub fn delist_stream(&mut self, slot: usize, now_ns: u64, open: bool) -> Vec<String> {
        if !self.listed[slot] {
            return Vec::new();
        }
        let frames = match open {
            true => {
                let names = [self.streams[slot].name.clone()];
                let kind = self.stream_kind();
                (self.venue.streams()).unsubscribe_frames(&names, kind, self.subscribed_depth())
            }
            false => Vec::new(),
        };
        self.listed[slot] = false;
        self.stream_keys[slot] = Box::from(VACANT_KEY);
        self.slots_by_key = slots_by_key(&self.stream_keys);
        if self.awaiting_ack[slot].take().is_some() {
            self.acks_pending -= 1;
        }
        self.silent_rounds[slot] = 0;
        self.last_data_ns[slot] = now_ns;
        if let Some(diff) = &mut self.diff {
            let book = &mut diff.books[slot];
            book.sync.reset();
            book.generation += 1;
            book.quiet_since_ns = None;
            book.awaiting_since_ns = None;
            diff.scheduler.forget(slot);
        }
        frames
    }

    /// When the connection's first book was published, if one was.
    pub fn first_book_ns(&self) -> Option<u64> {
        self.first_book_ns
    }

    /// How long `slot` may stay silent before the watchdog subscribes it again: the
    /// allowance, doubled for each time in a row it was subscribed again for silence.
    fn silence_allowance_ns(&self, slot: usize, allowance_ns: u64) -> u64 {
        allowance_ns.saturating_mul(1 << self.silent_rounds[slot].min(QUIET_DOUBLINGS_MAX))
    }

    /// When the read-idle watchdog should next look ([`FeedCore::check_silence`]): when a
    /// stream's silence reaches its allowance, or, once a stream was subscribed again for
    /// silence, when every stream would have been silent for one allowance.
    pub fn next_silence_check(&self, allowance_ns: u64) -> u64 {
        let stream_due = self
            .listed_slots()
            .map(|slot| {
                self.last_data_ns[slot]
                    .saturating_add(self.silence_allowance_ns(slot, allowance_ns))
            })
            .min()
            .unwrap_or(u64::MAX);
        let connection_due = match self.silent_rounds.iter().any(|&rounds| rounds > 0) {
            true => self
                .listed_slots()
                .map(|slot| self.last_data_ns[slot])
                .max()
                .unwrap_or(0)
                .saturating_add(allowance_ns),
            false => u64::MAX,
        };
        stream_due.min(connection_due)
    }

    /// The read-idle watchdog at `now_ns`. A connection on which every stream has been
    /// silent for `allowance_ns`, one of them already subscribed again for silence,
    /// delivers no book data at all: it is given up. Otherwise each stream silent for its
    /// allowance ([`FeedCore::silence_allowance_ns`]) is subscribed again (its clock
    /// restarts; a diff book is out of sync until a snapshot rebuilds it, which is
    /// published whether or not the book then changes). A quiet book among live ones so
    /// costs a resubscription at ever longer intervals, never its connection; the
    /// allowance is the venue's `read_idle_timeout_ms`.
    pub fn check_silence(
        &mut self,
        now_ns: u64,
        allowance_ns: u64,
        out: &mut impl FeedOutput,
    ) -> Silence {
        let silent_for = |slot: usize| now_ns.saturating_sub(self.last_data_ns[slot]);
        let connection_silent = self
            .listed_slots()
            .all(|slot| silent_for(slot) >= allowance_ns);
        if connection_silent && self.silent_rounds.iter().any(|&rounds| rounds > 0) {
            return Silence::Recycle;
        }
        let silent: Vec<usize> = self
            .listed_slots()
            .filter(|&slot| silent_for(slot) >= self.silence_allowance_ns(slot, allowance_ns))
            .collect();
        if silent.is_empty() {
            return Silence::None;
        }
        let depth = self.subscribed_depth();
        let names: Vec<String> = silent
            .iter()
            .map(|&slot| self.streams[slot].name.clone())
            .collect();
        for &slot in &silent {
            tracing::debug!(venue = %self.venue, stream = %self.streams[slot].name, rounds = self.silent_rounds[slot], "no book data for the read-idle allowance; subscribing again");
            self.silent_rounds[slot] = self.silent_rounds[slot].saturating_add(1);
            self.last_data_ns[slot] = now_ns;
            self.resubscribed_after_silence(slot, now_ns, out);
        }
        let mut frames = self
            .venue
            .streams()
            .unsubscribe_frames(&names, self.stream_kind(), depth);
        frames.extend(self.subscribe(&silent, depth, now_ns));
        Silence::Resubscribe {
            streams: silent.len(),
            frames,
        }
    }

    /// The depth the streams are subscribed at: a diff book's snapshot depth, or the
    /// service's.
    fn subscribed_depth(&self) -> usize {
        self.diff
            .as_ref()
            .map_or(self.depth, |diff| diff.settings.snapshot_depth)
    }

    /// The kind of the connection's streams: diff streams in diff mode.
    fn stream_kind(&self) -> StreamKind {
        match self.diff {
            Some(_) => StreamKind::Diff,
            None => StreamKind::Snapshots,
        }
    }

    /// Streams whose subscription the venue has not acknowledged yet.
    pub fn acks_pending(&self) -> usize {
        self.acks_pending
    }

    /// Whether a subscription has waited for its acknowledgement for `timeout` or longer
    /// at `now_ns` (the venue is not answering: the connection is given up).
    pub fn ack_overdue(&self, now_ns: u64, timeout: std::time::Duration) -> bool {
        let timeout = timeout.as_nanos() as u64;
        self.acks_pending > 0
            && self
                .awaiting_ack
                .iter()
                .flatten()
                .any(|&(_, since)| now_ns.saturating_sub(since) >= timeout)
    }

    /// A connection is being opened: every stream is `Connecting`.
    pub fn connecting(&mut self, out: &mut impl FeedOutput) {
        self.first_book_ns = None;
        self.publish_state(VenueState::Connecting, out);
    }

    /// The connection is open at `now_ns`: order starts over (the first book of a new
    /// connection is the newest there is), every diff book is rebuilt. Returns the frames
    /// that subscribe it.
    pub fn connected(&mut self, now_ns: u64, out: &mut impl FeedOutput) -> Vec<String> {
        self.last_sequence.fill(0);
        self.regressions.fill(0);
        self.last_message_number = None;
        self.last_data_ns.fill(now_ns);
        self.silent_rounds.fill(0);
        self.reset_diff_books(ResyncReason::Connect, now_ns, out);
        let slots: Vec<usize> = self.listed_slots().collect();
        let mut frames = self.venue.streams().opening_frames();
        frames.extend(self.subscribe(&slots, self.subscribed_depth(), now_ns));
        frames
    }

    /// The frames that subscribe the streams in `slots` at `depth`: each awaits its
    /// acknowledgement from `now_ns` on.
    fn subscribe(&mut self, slots: &[usize], depth: usize, now_ns: u64) -> Vec<String> {
        let names: Vec<String> = slots
            .iter()
            .map(|&slot| self.streams[slot].name.clone())
            .collect();
        let requests = self.venue.streams().subscribe_frames(
            &names,
            self.stream_kind(),
            depth,
            self.next_request_id,
        );
        let mut frames = Vec::with_capacity(requests.len());
        for request in requests {
            let awaited = match request.id {
                Some(id) => {
                    self.next_request_id = self.next_request_id.max(id + 1);
                    AwaitedAck::Request(id)
                }
                None => AwaitedAck::Stream,
            };
            for index in request.streams {
                let slot = &mut self.awaiting_ack[slots[index]];
                self.acks_pending += usize::from(slot.is_none());
                *slot = Some((awaited, now_ns));
            }
            frames.push(request.frame);
        }
        frames
    }

    /// The venue acknowledged what `acked` names: those streams' books are used from now
    /// on. An acknowledgement of nothing awaited (a request not ours, or answered already)
    /// is logged and changes nothing.
    fn on_ack(&mut self, acked: Acked<'_>, received_ns: u64) {
        if acked == Acked::Request(UNSUBSCRIBE_REQUEST_ID) {
            return;
        }
        let oldest = self
            .awaiting_ack
            .iter()
            .flatten()
            .filter_map(|(awaited, _)| match awaited {
                AwaitedAck::Request(id) => Some(*id),
                AwaitedAck::Stream => None,
            })
            .min();
        let mut matched = false;
        for (slot, awaited) in self.awaiting_ack.iter_mut().enumerate() {
            let this = match (acked, awaited.map(|(awaited, _)| awaited)) {
                (Acked::Request(id), Some(AwaitedAck::Request(awaited_id))) => id == awaited_id,
                (Acked::Stream(name), Some(AwaitedAck::Stream)) => {
                    self.streams[slot].name.as_bytes() == name
                }
                (Acked::Oldest, Some(AwaitedAck::Request(awaited_id))) => {
                    Some(awaited_id) == oldest
                }
                (Acked::Oldest, Some(AwaitedAck::Stream)) => oldest.is_none() && !matched,
                _ => false,
            };
            if this {
                *awaited = None;
                self.acks_pending -= 1;
                matched = true;
                if let Some(diff) = &mut self.diff {
                    diff.subscribed(slot, received_ns);
                }
            }
        }
        if !matched {
            // A venue whose acknowledgements name nothing answers an unsubscription, and a
            // request for no book (Coinbase's heartbeats), the same way: expected there.
            if acked == Acked::Oldest {
                tracing::debug!(venue = %self.venue, "an acknowledgement naming nothing, with nothing awaited");
            } else if let Some(suppressed) = self.unexpected_ack_log.allow(received_ns) {
                tracing::warn!(venue = %self.venue, ?acked, suppressed, "an acknowledgement of no subscription awaited: ignored");
            }
        } else if self.acks_pending() == 0
            && let Some(suppressed) = self.subscribed_log.allow(received_ns)
        {
            tracing::info!(venue = %self.venue, suppressed, "subscribed");
        }
    }

    /// Whether `listed` (a JSON array of stream names) names every stream awaiting the
    /// acknowledgement of request `request`; one it leaves out was refused, and is logged.
    fn lists_every_stream_of(&self, request: u64, listed: &[u8]) -> bool {
        let mut names = Vec::new();
        let mut walker = crate::json::Walker::new(listed);
        let read = walker.elements(|walker| {
            names.push(walker.string()?);
            Ok(())
        });
        if read.is_err() {
            tracing::warn!(venue = %self.venue, request, "a subscription's answer that lists no stream names");
            return false;
        }
        let awaited = self.awaiting_ack.iter().enumerate().filter(
            |(_, awaited)| matches!(awaited, Some((AwaitedAck::Request(id), _)) if *id == request),
        );
        for (slot, _) in awaited {
            let name = self.streams[slot].name.as_bytes();
            if !names.contains(&name) {
                tracing::warn!(venue = %self.venue, stream = %self.streams[slot].name, "subscription refused: left out of the venue's answer");
                return false;
            }
        }
        true
    }

    /// Handles one text frame received at `received_ns`.
    #[inline]
    pub fn on_frame(
        &mut self,
        frame: &[u8],
        received_ns: u64,
        out: &mut impl FeedOutput,
    ) -> FrameVerdict {
        let decoded = self.unit.decoding(|| match &mut self.diff {
            None => self.venue.decode(frame, self.depth, &mut self.scratch),
            Some(diff) => self
                .venue
                .decode_diff(frame, diff.settings.max_levels, &mut diff.update),
        });
        self.on_decoded(decoded, frame, received_ns, out)
    }

    /// Handles one binary frame received at `received_ns`: a book of a venue that sends
    /// its books in binary (`VenueFacts::binary_books`), a bad frame from any other.
    #[inline]
    pub fn on_binary_frame(
        &mut self,
        frame: &[u8],
        received_ns: u64,
        out: &mut impl FeedOutput,
    ) -> FrameVerdict {
        if !self.venue.facts().binary_books {
            let error = BadFrame::Binary { bytes: frame.len() };
            self.on_bad_frame(error, None, received_ns, out);
            return FrameVerdict::Continue;
        }
        let decoded = self.unit.decoding(|| match &mut self.diff {
            None => self
                .venue
                .decode_binary(frame, self.depth, &mut self.scratch),
            Some(diff) => {
                self.venue
                    .decode_diff_binary(frame, diff.settings.max_levels, &mut diff.update)
            }
        });
        self.on_decoded(decoded, frame, received_ns, out)
    }

    /// What a frame decoded to, acted on.
    #[inline]
    fn on_decoded(
        &mut self,
        decoded: Result<Message<'_>, DecodeError>,
        frame: &[u8],
        received_ns: u64,
        out: &mut impl FeedOutput,
    ) -> FrameVerdict {
        out.note(None, FeedEvent::Decoded { received_ns });
        if decoded.is_ok() && !self.message_follows(received_ns, out) {
            return FrameVerdict::Reconnect;
        }
        match decoded {
            Ok(Message::Book { stream }) => self.on_stream_book(stream, received_ns, out),
            Ok(Message::Books { stream, next }) => {
                self.on_stream_book(stream, received_ns, out);
                self.on_next_events(frame, next, received_ns, out);
            }
            Ok(Message::SubscribeResult {
                accepted: true,
                acked: Acked::Listed { request, streams },
            }) => {
                if !self.lists_every_stream_of(request, streams) {
                    return FrameVerdict::Refused;
                }
                self.on_ack(Acked::Request(request), received_ns);
            }
            Ok(Message::SubscribeResult {
                accepted: true,
                acked,
            }) => self.on_ack(acked, received_ns),
            Ok(Message::SubscribeResult {
                accepted: false, ..
            }) => return FrameVerdict::Refused,
            Ok(Message::Reconnect) => return FrameVerdict::Reconnect,
            Ok(Message::Answer(answer)) => return FrameVerdict::Answer(answer),
            Ok(Message::Heartbeat) => {}
            Ok(Message::Ignored) => out.note(None, FeedEvent::Ignored),
            Ok(Message::Unreadable { stream, error }) => {
                self.on_unreadable_book(
                    stream,
                    error,
                    number_text(frame, &error),
                    received_ns,
                    out,
                );
            }
            Err(error) => self.on_bad_frame(BadFrame::Decode(error), Some(frame), received_ns, out),
        }
        FrameVerdict::Continue
    }

    /// The slot of the stream a message names `stream`, if the connection asked for it.
    #[inline]
    fn slot_of(&self, stream: &[u8]) -> Option<usize> {
        let mut buffer = [0; NAMED_KEY_BYTES];
        let key = self.venue.named_key(stream, &mut buffer);
        let slot = match &self.slots_by_key {
            Some(slots) => slots.get(key).copied(),
            None => self.stream_keys.iter().position(|known| **known == *key),
        };
        // (A hostile binary frame could name a vacant slot's key.)
        slot.filter(|&slot| self.listed[slot])
    }

    /// A book (or diff event) of the stream named `stream`, decoded into `scratch` (or the
    /// diff update).
    #[inline]
    fn on_stream_book(&mut self, stream: &[u8], received_ns: u64, out: &mut impl FeedOutput) {
        let Some(slot) = self.slot_of(stream) else {
            return; // a stream we did not ask for
        };
        self.last_data_ns[slot] = received_ns;
        // A change starts a quiet stream's count over; the snapshot its resubscription
        // brings (in-band) shows the subscription alive, not the market moving.
        if !self
            .diff
            .as_ref()
            .is_some_and(|diff| diff.update.is_snapshot)
        {
            self.silent_rounds[slot] = 0;
        }
        if self.awaiting_ack[slot].is_some() {
            // Not known to be subscribed: a refusal may still come, and after a
            // resubscription it may be the old subscription's.
            out.note(Some(slot), FeedEvent::BookBeforeAck);
            return;
        }
        if self.diff.is_some() {
            self.on_diff_event(slot, received_ns, out);
        } else {
            self.on_book(slot, received_ns, out);
        }
    }

    /// The second and later events of a frame of several (`Message::Books`), from byte
    /// `at` on. The decoder checked the whole frame before the first was used; an error
    /// here is a bad frame all the same.
    fn on_next_events(
        &mut self,
        frame: &[u8],
        mut at: usize,
        received_ns: u64,
        out: &mut impl FeedOutput,
    ) {
        loop {
            let Some(diff) = &mut self.diff else { return };
            let max_levels = diff.settings.max_levels;
            let (venue, update) = (self.venue, &mut diff.update);
            match (self.unit).decoding(|| venue.decode_next_event(frame, at, max_levels, update)) {
                Ok((stream, next)) => {
                    self.on_stream_book(stream, received_ns, out);
                    match next {
                        Some(next) => at = next,
                        None => return,
                    }
                }
                Err(error) => {
                    return self.on_bad_frame(
                        BadFrame::Decode(error),
                        Some(frame),
                        received_ns,
                        out,
                    );
                }
            }
        }
    }

    /// Whether the frame just decoded follows the connection's last one, where the venue
    /// numbers its messages (`BookUpdate::message_number`). A missing message is data lost
    /// for every book on the connection: all are out of sync, and the connection is opened
    /// anew (which starts the numbering and every book's snapshot over, in one
    /// subscription, where subscribing each book again would cost a request per book).
    #[inline]
    fn message_follows(&mut self, received_ns: u64, out: &mut impl FeedOutput) -> bool {
        let Some(number) = self
            .diff
            .as_ref()
            .and_then(|diff| diff.update.message_number)
        else {
            return true;
        };
        let expected = self.last_message_number.map(|last| last.wrapping_add(1));
        self.last_message_number = Some(number);
        if expected.is_none_or(|expected| expected == number) {
            return true;
        }
        tracing::warn!(venue = %self.venue, ?expected, number, "a message of the connection went missing; reconnecting");
        self.publish_state(VenueState::OutOfSync, out);
        self.reset_diff_books(ResyncReason::Gap, received_ns, out);
        false
    }

    /// A snapshot-mode book for `slot`, decoded into `scratch`.
    #[inline]
    fn on_book(&mut self, slot: usize, received_ns: u64, out: &mut impl FeedOutput) {
        let sequence = self.scratch.venue_sequence;
        let last = self.last_sequence[slot];
        if sequence == last {
            // A quiet market: Binance repeats `lastUpdateId` while nothing changes. The
            // book is complete and still current, so it is published again with its
            // receipt time; dropping it would let a healthy venue age into eviction.
            out.note(Some(slot), FeedEvent::BookRepeated);
        }
        if sequence < last {
            self.regressions[slot] += 1;
            if self.regressions[slot] < SEQUENCE_RESET_AFTER {
                out.note(Some(slot), FeedEvent::BookOutOfOrder);
                tracing::debug!(venue = %self.venue, sequence, last, "out-of-order book dropped");
                return;
            }
            out.note(Some(slot), FeedEvent::SequenceReset);
            tracing::warn!(venue = %self.venue, stream = %self.streams[slot].name, sequence, last,
                "the venue's sequence went back and stayed back (a clock jump or a restart): following it");
        }
        self.regressions[slot] = 0;
        self.last_sequence[slot] = sequence;
        self.scratch.received_ns = received_ns;
        let scratch = &self.scratch;
        let contract_size = self.streams[slot].contract_size;
        let mut exact = true;
        out.publish(slot, |feed| {
            feed.book.copy_from(scratch);
            exact = in_base_currency(&mut feed.book, contract_size);
            feed.state = publishable_state(exact);
        });
        self.after_publish(slot, exact, received_ns, out);
    }

    /// After a book of `slot` was handed on: `exact` if its sizes were (in the base
    /// currency); if not, it was handed on out of sync, and that is a bad frame.
    fn after_publish(
        &mut self,
        slot: usize,
        exact: bool,
        received_ns: u64,
        out: &mut impl FeedOutput,
    ) {
        if exact {
            self.first_book_ns.get_or_insert(received_ns);
            return;
        }
        let error = BadFrame::Decode(DecodeError::Invalid(
            "a size times the contract size of more than 8 decimals",
        ));
        out.note(Some(slot), FeedEvent::BadFrame(error));
        if let Some(suppressed) = self.bad_frame_log.allow(received_ns) {
            tracing::warn!(venue = %self.venue, stream = %self.streams[slot].name, %error, suppressed, "book not merged");
        }
    }

    /// A message of the stream named `stream` that could not be held (`Message::Unreadable`):
    /// counted and logged as a bad frame of that stream, which alone is out of sync until
    /// its next good book (a diff book rebuilt).
    /// `value`: the text of the number the error is about, where it is one.
    fn on_unreadable_book(
        &mut self,
        stream: &[u8],
        error: DecodeError,
        value: Option<&str>,
        received_ns: u64,
        out: &mut impl FeedOutput,
    ) {
        let Some(slot) = self.slot_of(stream) else {
            return; // a stream we did not ask for
        };
        let error = BadFrame::Decode(error);
        out.note(Some(slot), FeedEvent::BadFrame(error));
        if let Some(suppressed) = self.bad_frame_log.allow(received_ns) {
            let CoreStream { name, symbol, .. } = &self.streams[slot];
            let value = value.unwrap_or_default();
            tracing::warn!(venue = %self.venue, stream = %name, %symbol, %error, %value, suppressed, "book not held");
        }
        match self.diff.is_some() {
            true => self.lose_sync(slot, ResyncReason::DecodeError, received_ns, out),
            false => out.publish(slot, |feed| feed.state = VenueState::OutOfSync),
        }
    }

    /// A frame that could not be understood (or a binary frame from a venue that sends
    /// none): counted, logged, dropped. Which stream it was for is unknown, so every
    /// stream is out of sync until its next good book, and every diff book is rebuilt (a
    /// diff stream that lost a frame has a hole in it).
    /// `frame`: the text frame, where the error is about a number in it: the log line
    /// names the number and the instrument.
    fn on_bad_frame(
        &mut self,
        error: BadFrame,
        frame: Option<&[u8]>,
        received_ns: u64,
        out: &mut impl FeedOutput,
    ) {
        out.note(None, FeedEvent::BadFrame(error));
        if let Some(suppressed) = self.bad_frame_log.allow(received_ns) {
            let value = match (frame, error) {
                (Some(frame), BadFrame::Decode(error)) => number_text(frame, &error),
                _ => None,
            };
            let symbol = value
                .and(frame)
                .and_then(|frame| self.symbol_named_in(frame));
            let (value, symbol) = (value.unwrap_or_default(), symbol.unwrap_or_default());
            tracing::warn!(venue = %self.venue, %error, %value, %symbol, suppressed, "bad frame dropped");
        }
        self.publish_state(VenueState::OutOfSync, out);
        self.reset_diff_books(ResyncReason::DecodeError, received_ns, out);
    }

    /// The symbol of the listed stream `frame` is of, for the log line of a number in it
    /// that could not be read: the connection's one stream, or the one whose name (else
    /// symbol) the frame holds, the longest found (`btcusdt` is in `btcusdt_perp`'s
    /// frames too). Off the hot path.
    fn symbol_named_in(&self, frame: &[u8]) -> Option<&str> {
        let listed = || (self.streams.iter().zip(&self.listed)).filter(|(_, listed)| **listed);
        if listed().count() == 1 {
            return listed().next().map(|(stream, _)| stream.symbol.as_str());
        }
        let found =
            |text: &str| !text.is_empty() && memchr::memmem::find(frame, text.as_bytes()).is_some();
        let longest_found = |text: fn(&CoreStream) -> &str| {
            (listed().map(|(stream, _)| stream))
                .filter(|stream| found(text(stream)))
                .max_by_key(|stream| text(stream).len())
        };
        longest_found(|stream| &stream.name)
            .or_else(|| longest_found(|stream| &stream.symbol))
            .map(|stream| stream.symbol.as_str())
    }

    /// Tells the merger about every stream at once (the connection's state).
    fn publish_state(&mut self, state: VenueState, out: &mut impl FeedOutput) {
        for slot in 0..self.streams.len() {
            // The merger reads a feed's book only when it is `Synced`.
            if self.listed[slot] {
                out.publish(slot, |feed| feed.state = state);
            }
        }
    }
}

#[cfg(test)]
mod tests;
