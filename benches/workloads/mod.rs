//! The payloads and operations both bench targets measure: `hot_path` (Criterion, time)
//! and `instructions` (callgrind, instruction counts), so the two measure the same thing.
#![allow(dead_code)] // each bench target uses its own subset

use mergebook::book::TopBook;
use mergebook::merge::{MergedBook, VenueBook, merge};
use mergebook::venue::VenueId;

/// The recorded `btcusdt@depth20@100ms` frame (20 levels a side, 1.4 KB).
pub const BINANCE_20: &[u8] =
    include_bytes!("../../tests/fixtures/binance/partial_depth20_BTCUSDT_combined.json");
/// Recorded `order_book_btcusd` frames (100 levels a side, 5.5 KB, Python-style spacing).
const BITSTAMP_100: &str =
    include_str!("../../tests/fixtures/bitstamp/order_book_btcusd_top100_samples_2020.jsonl");
/// Levels kept per side.
pub const KEEP: usize = 10;
/// The pair `fixed_point_parse` parses: a recorded BTC price and amount.
pub const PRICE: &[u8] = b"35496.06000000";
pub const AMOUNT: &[u8] = b"0.29859300";

/// The first recorded Bitstamp frame.
pub fn bitstamp_100() -> &'static [u8] {
    BITSTAMP_100
        .lines()
        .next()
        .expect("recorded sample")
        .as_bytes()
}

/// A Bitstamp frame of the recorded shape with 20 levels a side: the recorded book cut to
/// 20 levels and encoded by the venue's own encoder.
pub fn bitstamp_20() -> Vec<u8> {
    let book = decode(VenueId::Bitstamp, bitstamp_100(), 20);
    let mut frame = Vec::new();
    VenueId::Bitstamp.encode_book("order_book_btcusd", &book, 2, &mut frame);
    frame
}

pub fn decode(venue: VenueId, frame: &[u8], keep: usize) -> TopBook {
    let mut book = TopBook::default();
    venue
        .decode(frame, keep, &mut book)
        .expect("bench frame decodes");
    book
}

/// `merge_2x10`: the two venues' top 10 merged.
pub fn merge_two(binance: &TopBook, bitstamp: &TopBook, merged: &mut MergedBook) {
    let inputs = [
        VenueBook {
            venue: VenueId::Binance,
            book: binance,
        },
        VenueBook {
            venue: VenueId::Bitstamp,
            book: bitstamp,
        },
    ];
    merge(&inputs, KEEP, merged);
}

/// `e2e_parse_merge`: Binance 20 and Bitstamp 100 decoded, then merged.
pub struct ParseMerge {
    binance: TopBook,
    bitstamp: TopBook,
    merged: MergedBook,
}

impl ParseMerge {
    pub fn new() -> ParseMerge {
        ParseMerge {
            binance: TopBook::default(),
            bitstamp: TopBook::default(),
            merged: MergedBook::default(),
        }
    }

    pub fn run(&mut self, binance_frame: &[u8], bitstamp_frame: &[u8]) -> &MergedBook {
        VenueId::Binance
            .decode(binance_frame, KEEP, &mut self.binance)
            .expect("bench frame decodes");
        VenueId::Bitstamp
            .decode(bitstamp_frame, KEEP, &mut self.bitstamp)
            .expect("bench frame decodes");
        merge_two(&self.binance, &self.bitstamp, &mut self.merged);
        &self.merged
    }
}
