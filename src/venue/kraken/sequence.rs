//! Kraken's diff books: sequencing, snapshots and checksum ([`Sequencing`], [`Snapshots`], [`Checksum`]).

use super::*;
use crate::fixed::Measure;

/// Levels a side the checksum covers, whatever the depth.
pub(super) const CHECKSUM_LEVELS: usize = 10;

/// Kraken's book checksum: for the best 10 asks, then the best 10 bids, the price's text
/// and then the quantity's, each without its `.` and leading zeros, concatenated; CRC32.
/// The text is the number written with the precision the messages used (`decimals`),
/// which is the wire text itself: Kraken prints every price and quantity of a pair with
/// the pair's precision. The text is built on the stack and hashed in one call, so the
/// check allocates nothing.
pub(super) fn book_checksum(book: &DepthBook, decimals: WireDecimals) -> u32 {
    let mut text = [0u8; CHECKSUM_TEXT_BYTES];
    let mut len = 0;
    for side in [Side::Ask, Side::Bid] {
        for level in book.levels(side).take(CHECKSUM_LEVELS) {
            len += write_level_digits(level, decimals, &mut text, len);
        }
    }
    crc32fast::hash(&text[..len])
}

/// `book_checksum` with the texts of the levels the book's last checksum covered: after
/// an update, only the levels it changed are formatted (`kraken_checksum_after_update`
/// against `kraken_checksum`).
pub(super) fn book_checksum_after_change(
    book: &DepthBook,
    decimals: WireDecimals,
    texts: &mut LevelTexts,
) -> u32 {
    texts.begin(decimals);
    for (index, side) in [Side::Ask, Side::Bid].into_iter().enumerate() {
        let levels = book.levels(side).take(CHECKSUM_LEVELS);
        texts.append_side(index, levels, |level, out, at| {
            write_level_digits(level, decimals, out, at)
        });
    }
    crc32fast::hash(texts.text())
}

/// 40 numbers of at most 40 digits (`WireText`), and a word's room past the last.
pub(super) const CHECKSUM_TEXT_BYTES: usize = 2 * CHECKSUM_LEVELS * 2 * 40 + 24;

/// A level's checksum text at `at`: its price's digits, then its quantity's.
#[inline]
pub(super) fn write_level_digits(level: &Level, decimals: WireDecimals, out: &mut [u8], at: usize) -> usize {
    if !decimals.unit.is_coin() {
        return write_wire_digits(level, decimals, out, at);
    }
    let price = level.price.write_plain_digits(u32::from(decimals.price), out, at);
    price + level.amount.write_plain_digits(u32::from(decimals.amount), out, at + price)
}

/// [`write_level_digits`] for a book in a unit other than the coin: the digits of the
/// wire's text (`UnitSize::wire_text`), without the dot and the leading zeros.
#[cold]
fn write_wire_digits(level: &Level, decimals: WireDecimals, out: &mut [u8], mut at: usize) -> usize {
    let start = at;
    let numbers = [
        (Measure::Price, level.price, decimals.price),
        (Measure::Amount, level.amount, decimals.amount),
    ];
    for (measure, value, places) in numbers {
        let text = decimals.unit.wire_text(measure, value, u32::from(places));
        let digits = text.as_bytes().iter().filter(|&&byte| byte != b'.');
        let mut significant = digits.skip_while(|&&byte| byte == b'0').peekable();
        if significant.peek().is_none() {
            out[at] = b'0';
            at += 1;
        }
        for &digit in significant {
            out[at] = digit;
            at += 1;
        }
    }
    at - start
}

impl Checksum for Kraken {
    const ON_EVERY_BOOK: bool = true;

    fn checksum(book: &DepthBook, decimals: WireDecimals) -> Option<u32> {
        Some(book_checksum(book, decimals))
    }

    fn checksum_after_change(
        book: &DepthBook,
        decimals: WireDecimals,
        texts: &mut LevelTexts,
    ) -> Option<u32> {
        Some(book_checksum_after_change(book, decimals, texts))
    }
}

impl Snapshots for Kraken {
    fn kept_depth(&self, requested: usize) -> Option<usize> {
        Some(subscribed_depth(requested))
    }

    /// Kraken's REST depth endpoint (its snapshots come on the WebSocket instead).
    fn snapshot_url(&self, rest_base: &str, symbol: &str, limit: usize) -> String {
        let pair: String = symbol.chars().filter(|&c| c != '/').collect();
        format!("{rest_base}/0/public/Depth?pair={pair}&count={limit}")
    }
}
