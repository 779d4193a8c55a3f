//! Gate, spot and futures: the recordings replayed against a slow reference of the
//! documented algorithm, the conformance row, and the venues against the simulator.

use crate::common;
use crate::common::config::TestConfig;
use crate::conformance::{Malformed, Read, Row};
use common::in_band::Sides;
use mergebook::book::{Level, Side};

use mergebook::fixed::{FixedPoint, FixedPointError};
use mergebook::merger::kway::MergedLevel;
use mergebook::merger::summary::VenueState;
use mergebook::record::timeline::{self, RecordedFrame};
use mergebook::replay::{self, BadFrame, DiffDepths, DiffRecording};
use mergebook::venue::{DecodeError, Message, VenueId};
use std::collections::BTreeMap;
use std::path::PathBuf;

const SPOT: VenueId = VenueId::Gate;
const FUTURES: VenueId = VenueId::GateFutures;

/// The levels a side `order_book_update` keeps.
const STREAM_LEVELS: usize = 100;

/// A recorded symbol and what SOURCES.md's verification found for it.
struct Recorded {
    symbol: &'static str,
    /// Events applied after the snapshot; `None` for a book whose amounts have more
    /// decimals than a `FixedPoint` holds (10, where it keeps 8), which is refused.
    applied: Option<usize>,
}

/// A recording: its venue, file, and symbols.
struct Recording {
    venue: VenueId,
    file: &'static str,
    symbols: &'static [Recorded],
}

const RECORDINGS: [Recording; 2] = [
    Recording {
        venue: SPOT,
        file: "spot_session_timeline_order_book_update_7pairs_2021-04-22.jsonl",
        symbols: &[
            Recorded {
                symbol: "OMG_USDT",
                applied: None,
            },
            Recorded {
                symbol: "FAST_USDT",
                applied: Some(20),
            },
            Recorded {
                symbol: "ZKS_ETH",
                applied: Some(11),
            },
            Recorded {
                symbol: "HAI_ETH",
                applied: Some(5),
            },
            Recorded {
                symbol: "NANO_USDT",
                applied: Some(4),
            },
            Recorded {
                symbol: "BTC_USDC",
                applied: None,
            },
            Recorded {
                symbol: "INK_USDT",
                applied: None,
            },
        ],
    },
    Recording {
        venue: FUTURES,
        file: "futures_usdt_session_timeline_order_book_update_7contracts_2023-05-24.jsonl",
        symbols: &[
            Recorded {
                symbol: "PHB_USDT",
                applied: Some(69),
            },
            Recorded {
                symbol: "RDNT_USDT",
                applied: Some(61),
            },
            Recorded {
                symbol: "QUICK_USDT",
                applied: Some(13),
            },
            Recorded {
                symbol: "FRONT_USDT",
                applied: Some(5),
            },
            Recorded {
                symbol: "LIT_USDT",
                applied: Some(2),
            },
            Recorded {
                symbol: "ZRX_USDT",
                applied: Some(1),
            },
            Recorded {
                symbol: "DIA_USDT",
                applied: Some(0),
            },
        ],
    },
];

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(format!(
        "{}/tests/fixtures/gate/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
}

fn fp(text: &str) -> FixedPoint {
    text.parse().unwrap()
}

// ---- the reference: serde_json and sorted maps, the documented algorithm ----

type ReferenceSide = BTreeMap<FixedPoint, FixedPoint>;

#[derive(Default)]
struct ReferenceBook {
    bids: ReferenceSide,
    asks: ReferenceSide,
    snapshot_id: Option<u64>,
    /// The last applied event's `u`; `None` until one is.
    last_u: Option<u64>,
    buffered: Vec<serde_json::Value>,
    /// The top 10 a side after the snapshot and after each applied event.
    tops: Vec<Sides>,
    applied: usize,
    dropped: usize,
    /// Deletes of levels the book did not hold.
    absent_deletes: usize,
}

/// A side's levels, spot's `["p","a"]` or futures' `{"p":"…","s":…}`.
fn levels(value: &serde_json::Value) -> Vec<(FixedPoint, FixedPoint)> {
    let number = |value: &serde_json::Value| match value {
        serde_json::Value::String(text) => fp(text),
        other => fp(&other.to_string()),
    };
    let Some(levels) = value.as_array() else {
        return Vec::new();
    };
    levels
        .iter()
        .map(|level| match level.as_array() {
            Some(pair) => (number(&pair[0]), number(&pair[1])),
            None => (number(&level["p"]), number(&level["s"])),
        })
        .collect()
}

impl ReferenceBook {
    fn top(&self, depth: usize) -> Sides {
        let level = |(&price, &amount): (&FixedPoint, &FixedPoint)| Level { price, amount };
        (
            self.bids.iter().rev().take(depth).map(level).collect(),
            self.asks.iter().take(depth).map(level).collect(),
        )
    }

    fn set(&mut self, side: Side, changes: Vec<(FixedPoint, FixedPoint)>) {
        let book = match side {
            Side::Bid => &mut self.bids,
            Side::Ask => &mut self.asks,
        };
        for (price, amount) in changes {
            match amount.is_zero() {
                true => self.absent_deletes += usize::from(book.remove(&price).is_none()),
                false => drop(book.insert(price, amount)),
            }
        }
        // The stream keeps the top 100: a level pushed out of them gets no delete.
        while book.len() > STREAM_LEVELS {
            match side {
                Side::Bid => book.pop_first(),
                Side::Ask => book.pop_last(),
            };
        }
    }

    fn on_snapshot(&mut self, body: &serde_json::Value) {
        self.bids.clear();
        self.asks.clear();
        self.set(Side::Bid, levels(&body["bids"]));
        self.set(Side::Ask, levels(&body["asks"]));
        self.snapshot_id = Some(body["id"].as_u64().unwrap());
        for event in std::mem::take(&mut self.buffered) {
            self.on_event(&event);
        }
        // The book is published once synced: the snapshot with the buffer applied.
        let synced = self.tops.len() - self.applied;
        self.tops.truncate(synced);
        self.tops.push(self.top(10));
    }

    /// docs/protocols.md, Gate: drop `u < id + 1`; the first applied event has
    /// `U <= id + 1 <= u`; each next one's `U` is the last `u + 1`.
    fn on_event(&mut self, event: &serde_json::Value) {
        let Some(snapshot_id) = self.snapshot_id else {
            self.buffered.push(event.clone());
            return;
        };
        let id = |key: &str| event[key].as_u64().unwrap();
        let (first, last) = (id("U"), id("u"));
        match self.last_u {
            None if last < snapshot_id + 1 => {
                self.dropped += 1;
                return;
            }
            None => assert!(first <= snapshot_id + 1, "the first event covers id + 1"),
            Some(last_u) => assert_eq!(first, last_u + 1, "each event follows the last"),
        }
        self.set(Side::Bid, levels(&event["b"]));
        self.set(Side::Ask, levels(&event["a"]));
        self.last_u = Some(last);
        self.applied += 1;
        self.tops.push(self.top(10));
    }
}

/// The reference run over a recording's frames of `symbol`.
fn reference(frames: &[RecordedFrame], symbol: &str) -> ReferenceBook {
    let mut book = ReferenceBook::default();
    for frame in frames {
        let value: serde_json::Value = serde_json::from_str(&frame.raw).unwrap();
        if let Some(url) = &frame.rest_url {
            if url.contains(&format!("={symbol}&")) {
                book.on_snapshot(&value);
            }
            continue;
        }
        let result = &value["result"];
        if value["event"] == "update" && result["s"] == symbol {
            book.on_event(result);
        }
    }
    book
}

/// Replays `frames` of `symbol` through mergebook's diff replay (the live reader's rules):
/// every synced top it published, the book as it ended, and the frames it refused.
fn replayed(
    venue: VenueId,
    symbol: &str,
    frames: Vec<RecordedFrame>,
) -> (Vec<Sides>, replay::DiffBook, Vec<BadFrame>) {
    let recordings = [DiffRecording {
        venue,
        frames,
        symbols: vec![symbol.to_owned()],
    }];
    let mut plan = replay::plan_diff(&recordings, 5000).unwrap();
    let depths = DiffDepths {
        depth: 10,
        max_levels: 5000,
        snapshot_depth: STREAM_LEVELS,
    };
    let side = |merged: &[MergedLevel]| -> Vec<Level> {
        merged
            .iter()
            .map(|level| Level {
                price: level.price,
                amount: level.amount,
            })
            .collect()
    };
    let mut published = Vec::new();
    let mut refused = Vec::new();
    replay::replay_diff(
        &recordings,
        &mut plan,
        depths,
        |_, summary| {
            if summary.venue_state(venue) == VenueState::Synced {
                let top = (
                    side(summary.book.bids.as_slice()),
                    side(summary.book.asks.as_slice()),
                );
                if published.last() != Some(&top) {
                    published.push(top);
                }
            }
        },
        |_, _, error| refused.push(*error),
    );
    (published, plan.books.remove(0), refused)
}

#[test]
fn every_recorded_symbol_replays_to_the_reference_book_with_the_id_rules_verified() {
    let mut absent_deletes = BTreeMap::new();
    for recording in &RECORDINGS {
        let frames = timeline::load_frames(&fixture(recording.file)).unwrap();
        for recorded in recording.symbols {
            let context = format!("{} {}", recording.venue, recorded.symbol);
            let (published, book, refused) =
                replayed(recording.venue, recorded.symbol, frames.clone());
            // The frames refused are those with a number of 10 decimals, typed, whichever
            // symbol they are of (a frame is decoded before its symbol is known).
            for error in &refused {
                let too_precise = matches!(
                    error,
                    BadFrame::Decode(DecodeError::Number {
                        error: FixedPointError::TooPrecise,
                        ..
                    })
                );
                assert!(too_precise, "{context}: {error}");
            }
            let Some(applied) = recorded.applied else {
                // Refused, never synced, never published.
                let stats = book.stats;
                assert!(
                    stats.decode_errors + stats.snapshots_refused > 0,
                    "{context}: {stats:?}"
                );
                assert!(published.is_empty(), "{context}: {published:?}");
                assert_eq!(book.stats.applied, 0, "{context}");
                continue;
            };
            let reference = reference(&frames, recorded.symbol);
            assert_eq!(reference.applied, applied, "{context}: SOURCES.md's count");
            let stats = book.stats;
            assert_eq!(
                (
                    stats.snapshots,
                    stats.gaps,
                    stats.crossings,
                    stats.decode_errors
                ),
                (1, 0, 0, 0),
                "{context}: {stats:?}"
            );
            assert_eq!(
                stats.applied as usize, reference.applied,
                "{context}: applied"
            );
            assert_eq!(
                stats.dropped as usize, reference.dropped,
                "{context}: dropped"
            );
            let mut expected = reference.tops.clone();
            expected.dedup();
            assert_eq!(published, expected, "{context}: the published tops");
            for (side, truth) in [(Side::Bid, &reference.bids), (Side::Ask, &reference.asks)] {
                let kept: Vec<(FixedPoint, FixedPoint)> = book
                    .sync
                    .book
                    .levels(side)
                    .map(|level| (level.price, level.amount))
                    .collect();
                let mut truth: Vec<_> = truth.iter().map(|(&p, &a)| (p, a)).collect();
                if side == Side::Bid {
                    truth.reverse();
                }
                assert_eq!(kept, truth, "{context}: {side:?}");
            }
            absent_deletes.insert(recorded.symbol, reference.absent_deletes);
        }
    }
    // SOURCES.md: futures deletes of levels the book does not hold, a no-op.
    assert_eq!(absent_deletes["PHB_USDT"], 5);
    assert_eq!(absent_deletes["QUICK_USDT"], 1);
}
