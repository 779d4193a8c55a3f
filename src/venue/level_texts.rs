//! The text of each level a book's checksum last covered, kept between messages, so that
//! the next checksum formats only the levels that changed.
//!
//! A venue that checksums the text of its top levels (Kraken: the best 10 asks and bids,
//! each price's and quantity's digits) would otherwise write every one of those numbers
//! after every message, where an update changes one or two levels. A level's text depends
//! only on its price, its amount and the precision they are written with, so a text kept
//! under those is right for any later book that holds the same level, after a resync too.
//!
//! By hand, not a map: the lookup runs after every message of every such book, and a
//! level that stayed is found at its rank or one away (a level inserted or removed above
//! it), in a fixed array that allocates nothing.

use crate::book::{Level, WireDecimals};

/// Levels a side kept: the most any checksum covers.
pub const LEVELS_KEPT: usize = 10;

/// A kept level's text holds at most this many bytes (a copy is one 32-byte move); a
/// longer one (numbers of about 16 digits each) is written anew every time.
const TEXT_BYTES: usize = 32;

/// The most a level's text may take as written by a venue's `format`, 16-byte words
/// written whole included (two numbers of up to 40 digits: `WireText`).
pub const MAX_LEVEL_TEXT: usize = 96;

/// The text of two sides of `LEVELS_KEPT` levels, with room past the last for a kept
/// text copied whole.
const TEXT_CAPACITY: usize = 2 * LEVELS_KEPT * MAX_LEVEL_TEXT + TEXT_BYTES;

#[derive(Clone, Copy)]
struct KeptLevel {
    level: Level,
    /// The text's length, or `NOT_KEPT`.
    len: u8,
    text: [u8; TEXT_BYTES],
}

const NOT_KEPT: u8 = u8::MAX;

impl KeptLevel {
    const EMPTY: KeptLevel = KeptLevel {
        level: Level::from_raw(0, 0),
        len: NOT_KEPT,
        text: [0; TEXT_BYTES],
    };
}

/// One book's kept level texts, two sides (`side`: 0 or 1, the caller's order), and the
/// text being built. Two generations of levels: the last text's, read, and this one's,
/// written, swapped at each `begin`.
pub struct LevelTexts {
    decimals: WireDecimals,
    generations: [[[KeptLevel; LEVELS_KEPT]; 2]; 2],
    counts: [[usize; 2]; 2],
    /// The generation the last `begin` made current (written).
    current: usize,
    /// Kept here, not on the caller's stack, so that no call zeroes it.
    text: [u8; TEXT_CAPACITY],
    len: usize,
}

impl Default for LevelTexts {
    fn default() -> LevelTexts {
        LevelTexts {
            decimals: WireDecimals::default(),
            generations: [[[KeptLevel::EMPTY; LEVELS_KEPT]; 2]; 2],
            counts: [[0; 2]; 2],
            current: 0,
            text: [0; TEXT_CAPACITY],
            len: 0,
        }
    }
}

impl LevelTexts {
    /// Starts the text of a book whose numbers are written with `decimals`: the texts
    /// kept under other decimals are forgotten.
    pub fn begin(&mut self, decimals: WireDecimals) {
        if decimals != self.decimals {
            self.decimals = decimals;
            self.counts = [[0; 2]; 2];
        }
        self.current ^= 1;
        self.counts[self.current] = [0; 2];
        self.len = 0;
    }

    /// The text since `begin`.
    pub fn text(&self) -> &[u8] {
        &self.text[..self.len]
    }

    /// Appends the text of each of `levels` (at most [`LEVELS_KEPT`], best first, on side
    /// `side`): the kept text where the last text had the level at the same rank or one
    /// away, else `format(level, out, at)`, which writes at most [`MAX_LEVEL_TEXT`] bytes
    /// at `at` and returns the text's length.
    #[inline]
    pub fn append_side<'a>(
        &mut self,
        side: usize,
        levels: impl Iterator<Item = &'a Level>,
        format: impl Fn(&Level, &mut [u8], usize) -> usize,
    ) {
        let (out, len) = (&mut self.text, &mut self.len);
        let [first, second] = &mut self.generations;
        let (last, now) = match self.current {
            0 => (&second[side], &mut first[side]),
            _ => (&first[side], &mut second[side]),
        };
        let kept = &last[..self.counts[self.current ^ 1][side]];
        let mut count = 0;
        for (rank, level) in levels.take(LEVELS_KEPT).enumerate() {
            // The same rank, then one further (a level removed above), then one nearer
            // (a level inserted above).
            let holds = |at: usize| kept.get(at).filter(|kept| kept.level == *level);
            let found = holds(rank)
                .or_else(|| holds(rank + 1))
                .or_else(|| holds(rank.wrapping_sub(1)))
                .filter(|kept| kept.len != NOT_KEPT);
            let entry = &mut now[rank];
            entry.level = *level;
            match found {
                Some(kept) => {
                    out[*len..*len + TEXT_BYTES].copy_from_slice(&kept.text);
                    entry.text = kept.text;
                    entry.len = kept.len;
                    *len += usize::from(kept.len);
                }
                None => {
                    let written = format(level, out, *len);
                    debug_assert!(written <= MAX_LEVEL_TEXT);
                    match u8::try_from(written) {
                        Ok(short) if written <= TEXT_BYTES => {
                            entry.text.copy_from_slice(&out[*len..*len + TEXT_BYTES]);
                            entry.len = short;
                        }
                        _ => entry.len = NOT_KEPT,
                    }
                    *len += written;
                }
            }
            count = rank + 1;
        }
        self.counts[self.current][side] = count;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixed::FixedPoint;
    use std::cell::Cell;

    fn level(price: u64, amount: u64) -> Level {
        Level::from_raw(price, amount)
    }

    /// A level's text as `<price>:<amount>;`, counting the levels written anew.
    fn text_of(levels: &[Level], texts: &mut LevelTexts, formatted: &Cell<usize>) -> String {
        texts.begin(WireDecimals::default());
        texts.append_side(0, levels.iter(), |level, out, at| {
            formatted.set(formatted.get() + 1);
            let text = format!("{}:{};", level.price.raw(), level.amount.raw());
            out[at..at + text.len()].copy_from_slice(text.as_bytes());
            text.len()
        });
        String::from_utf8(texts.text().to_vec()).unwrap()
    }

    #[test]
    fn only_the_levels_that_changed_are_written_anew() {
        let mut texts = LevelTexts::default();
        let formatted = Cell::new(0);
        let book: Vec<Level> = (0..10).map(|i| level(100 + i, 5)).collect();
        assert_eq!(
            text_of(&book, &mut texts, &formatted).matches(';').count(),
            10
        );
        assert_eq!(formatted.replace(0), 10);

        // One amount changed: that level alone.
        let mut changed = book.clone();
        changed[3].amount = FixedPoint::from_raw(7);
        assert!(text_of(&changed, &mut texts, &formatted).contains("103:7;"));
        assert_eq!(formatted.replace(0), 1);

        // A level inserted at the top shifts the others by one: the new one alone (the
        // level pushed out of the ten is gone).
        let mut inserted = vec![level(99, 1)];
        inserted.extend_from_slice(&changed[..9]);
        let text = text_of(&inserted, &mut texts, &formatted);
        assert_eq!(formatted.replace(0), 1);
        assert!(text.starts_with("99:1;100:5;") && !text.contains("109:"));
    }

    /// Against writing every level every time, over random books and changes.
    #[test]
    fn the_text_is_every_level_written_anew() {
        let mut texts = LevelTexts::default();
        let mut rng = crate::rng::Rng::new(7);
        let mut book: Vec<Level> = (0..12).map(|i| level(100 + i, 5)).collect();
        for _ in 0..10_000 {
            let at = (rng.next_u64() % book.len() as u64) as usize;
            match rng.next_u64() % 3 {
                0 => book[at].amount = FixedPoint::from_raw(rng.next_u64() % 4),
                1 if book.len() > 1 => {
                    book.remove(at);
                }
                _ => book.insert(at, level(book[at].price.raw() - 1, 1)),
            }
            let expected: String = book
                .iter()
                .take(LEVELS_KEPT)
                .map(|l| format!("{}:{};", l.price.raw(), l.amount.raw()))
                .collect();
            assert_eq!(text_of(&book, &mut texts, &Cell::new(0)), expected);
        }
    }
}
