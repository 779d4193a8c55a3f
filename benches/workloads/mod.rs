//! The payloads and operations both bench targets measure: `hot_path` (Criterion, time)
//! and `instructions` (callgrind, instruction counts), so the two measure the same thing.
#![allow(dead_code)] // each bench target uses its own subset

use mergebook::book::{BookUpdate, DepthBook, Level, Side, TopBook, WireDecimals};
use mergebook::config::DiffSettings;
use mergebook::feed::core::audit::AuditSettings;
use mergebook::feed::core::snapshot_schedule::SnapshotPolicy;
use mergebook::feed::core::{CoreStream, FeedCore, FeedEvent, FeedOutput};
use mergebook::feed::handoff::VenueFeed;
use mergebook::merger::kway::{MergedBook, Origin, VenueBook, merge, merge_side};
use mergebook::merger::summary::VenueState;
use mergebook::venue::{LevelTexts, Message, VenueId};
use std::hint::black_box;
use std::time::Duration;

/// The recorded `btcusdt@depth20@100ms` frame (20 levels a side, 1.4 KB).
pub const BINANCE_20: &[u8] =
    include_bytes!("../../tests/fixtures/binance/partial_depth20_BTCUSDT_combined.json");
/// Recorded `order_book_btcusd` frames (100 levels a side, 5.5 KB, Python-style spacing).
const BITSTAMP_100: &str =
    include_str!("../../tests/fixtures/bitstamp/order_book_btcusd_top100_samples_2020.jsonl");
/// Levels kept per side.
pub const KEEP: usize = 10;
/// The venues of the workloads of eight (`merge_8x10`, `summarize_8x10`…), and of the
/// sixteen books of `merge_16x10`, two a venue: the first eight of the registry, so that
/// a venue added to it changes none of the figures.
pub const EIGHT_VENUES: &[VenueId] = VenueId::ALL.split_at(8).0;
/// The pair `fixed_point_parse` parses: a recorded BTC price and amount.
pub const PRICE: &[u8] = b"35496.06000000";
pub const AMOUNT: &[u8] = b"0.29859300";

/// `BINANCE_20`'s book as Binance's SBE `depth20` message (the simulator's encoder: the
/// same 20 levels a side, mantissas of 10^-8; 670 bytes).
pub fn binance_sbe_20() -> Vec<u8> {
    let mut book = TopBook::default();
    VenueId::Binance
        .decode(BINANCE_20, 20, &mut book)
        .expect("recorded frame");
    let mut frame = Vec::new();
    VenueId::BinanceSbe
        .simulated()
        .encode_book("btcusdt@depth20", &book, 8, &mut frame);
    frame
}

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
    VenueId::Bitstamp
        .simulated()
        .encode_book("order_book_btcusd", &book, 2, &mut frame);
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
            origin: Origin {
                venue: VenueId::Binance,
                source: 0,
            },
            book: binance,
        },
        VenueBook {
            origin: Origin {
                venue: VenueId::Bitstamp,
                source: 1,
            },
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

/// The recorded NKNUSDT REST snapshot (609 bids, 1000 asks) and diff events.
const NKNUSDT_SNAPSHOT: &[u8] =
    include_bytes!("../../tests/fixtures/binance/rest_depth_snapshot_NKNUSDT_limit1000.json");
const NKNUSDT_DIFFS: &str =
    include_str!("../../tests/fixtures/binance/diff_depth_NKNUSDT_combined_stream.jsonl");
/// Levels a side the benches' full-depth books may hold (the configured default).
pub const MAX_BOOK_LEVELS: usize = 5000;

/// `binance_diff_decode` and `book_apply_diff`'s event: a typical recorded one, i.e. the
/// first of the median size (2 levels) that deletes nothing, so applying it again and
/// again does the same work each time (updates two levels in place).
pub fn typical_diff_event() -> &'static [u8] {
    NKNUSDT_DIFFS
        .lines()
        .find(|line| {
            let mut event = BookUpdate::default();
            let decoded =
                VenueId::Binance.decode_diff(line.as_bytes(), MAX_BOOK_LEVELS, &mut event);
            matches!(decoded, Ok(Message::Book { .. }))
                && event.bids.len() + event.asks.len() == 2
                && event
                    .bids
                    .iter()
                    .chain(&event.asks)
                    .all(|l| !l.amount.is_zero())
        })
        .expect("the recording has one")
        .as_bytes()
}

/// `book_apply_diff`'s book: the recorded NKNUSDT snapshot (1000 asks, 609 bids).
pub fn nknusdt_book() -> DepthBook {
    let mut book = DepthBook::new(MAX_BOOK_LEVELS);
    book.replace(&recorded_snapshot(VenueId::Binance, NKNUSDT_SNAPSHOT));
    book
}

/// A recorded REST snapshot, decoded.
fn recorded_snapshot(venue: VenueId, body: &[u8]) -> BookUpdate {
    let mut snapshot = BookUpdate::default();
    venue
        .decode_snapshot(body, MAX_BOOK_LEVELS, &mut snapshot)
        .expect("recorded snapshot decodes");
    snapshot
}

/// How many distinct frames the `_varied` benches decode in turn: enough that the branch
/// predictor cannot learn them (a few dozen frames can still decode nearly as fast as one).
pub const VARIED_FRAMES: usize = 1024;

/// `merge_2x10_varied`: [`VARIED_FRAMES`] pairs of books as the simulator quotes them
/// (`mergebook::sim::market`): each venue's top 10 around a shared random-walk mid, one
/// or two ticks apart, so that which venue has the next level changes at random, as it
/// does between real venues. `merge_2x10` merges one recorded pair, every time the same:
/// the branch predictor learns its order.
pub fn simulated_pairs() -> Vec<(TopBook, TopBook)> {
    let mut mid = mergebook::sim::market::MidPrice::new(1);
    let mut binance = mergebook::sim::market::SimulatedBook::new(2, Default::default());
    let mut bitstamp = mergebook::sim::market::SimulatedBook::new(3, Default::default());
    (0..VARIED_FRAMES)
        .map(|_| {
            let mid_ticks = mid.step();
            let mut pair = (TopBook::default(), TopBook::default());
            binance.next_book(mid_ticks, KEEP, 0, 0, &mut pair.0);
            bitstamp.next_book(mid_ticks, KEEP, 0, 0, &mut pair.1);
            pair
        })
        .collect()
}

/// `merge_8x10`, `merge_16x10`: `venues` venues' top 10 as the simulator quotes them around
/// one random-walk mid (as `simulated_pairs`), each merged under a venue id of the registry
/// in turn. Ids repeat beyond the registry's length; they only break ties, so the merge
/// does the same work as it will for as many registered venues.
pub struct ManyVenues {
    books: Vec<TopBook>,
    merged: MergedBook,
}

impl ManyVenues {
    pub fn new(venues: usize) -> ManyVenues {
        let mid_ticks = mergebook::sim::market::MidPrice::new(1).step();
        let books = (0..venues)
            .map(|venue| {
                let mut book = TopBook::default();
                let grid = mergebook::sim::market::PriceGrid::default();
                mergebook::sim::market::SimulatedBook::new(2 + venue as u64, grid)
                    .next_book(mid_ticks, KEEP, 0, 0, &mut book);
                book
            })
            .collect();
        ManyVenues {
            books,
            merged: MergedBook::default(),
        }
    }

    pub fn merge(&mut self) -> &MergedBook {
        let mut inputs = [VenueBook {
            origin: Origin::default(),
            book: &self.books[0],
        }; mergebook::merger::kway::MAX_INPUTS];
        for (index, book) in self.books.iter().enumerate() {
            inputs[index] = VenueBook {
                origin: Origin {
                    venue: EIGHT_VENUES[index % EIGHT_VENUES.len()],
                    source: index as u8,
                },
                book: std::hint::black_box(book),
            };
        }
        // Both sides through `merge_side`, not `merge`: another call of `merge` in the
        // bench binaries changes how it is inlined into `merge_2x10`'s (372 → 408
        // instructions), so that figure would no longer compare with earlier ones.
        let inputs = &inputs[..self.books.len()];
        merge_side(Side::Bid, inputs, KEEP, &mut self.merged.bids);
        merge_side(Side::Ask, inputs, KEEP, &mut self.merged.asks);
        &self.merged
    }
}

/// `summarize_8x10`, `summarize_8x10_converted`, `summarize_8x10_rate_moved`: what the
/// merger does for one instrument of 8 venues each time one of them sends a book: the
/// book applied, the venues merged and the summary written (`Consolidation`). The books
/// are the simulator's around 90,000, each venue's own; converted, 4 of the 8 venues
/// quote in USDT and go through a USDT/USD rate into cents. `rate_moved`: each summary
/// follows a new rate instead of a new book, so every converted venue is converted again.
pub struct EightVenueSummaries {
    consolidation: mergebook::merger::Consolidation,
    /// (source, its book).
    feeds: Vec<(usize, mergebook::feed::handoff::VenueFeed)>,
    rates: [mergebook::units::Rate; 2],
    next: usize,
    summary: mergebook::merger::summary::Summary,
}

/// What an `EightVenueSummaries` instrument converts.
#[derive(Clone, Copy, PartialEq)]
pub enum Units {
    /// Every venue quotes in USD.
    Plain,
    /// Half the venues quote in USDT, converted through a USDT/USD rate.
    Converted,
    /// As `Converted`, the instrument counting notionals in USD (`unit = "quote"`): every
    /// venue's amounts times its prices.
    Notional,
}

impl EightVenueSummaries {
    pub fn new(units: Units) -> EightVenueSummaries {
        let converted = units != Units::Plain;
        let (name, usdt) = match converted {
            true => ("BTC/USD", "USDT"),
            false => ("BTC/USD", "USD"),
        };
        let unit = match units {
            Units::Notional => "unit = \"quote\"\n",
            _ => "",
        };
        let symbols: Vec<String> = EIGHT_VENUES
            .iter()
            .enumerate()
            .map(|(index, venue)| {
                let quote = if index % 2 == 0 { usdt } else { "USD" };
                format!(
                    "{venue} = \"{}\"",
                    venue
                        .streams()
                        .spot_symbol("BTC", quote)
                        .expect("a spot venue")
                )
            })
            .collect();
        // A [simulator] section: Binance SBE's API key is then not asked for.
        let text = format!(
            "[simulator]\n[[instruments]]\nname = \"USDT/USD\"\nsymbols = {{ kraken = \"USDT/USD\" }}\n\
             [[instruments]]\nname = \"{name}\"\nprice_step = \"0.01\"\n{unit}\
             symbols = {{ {} }}\n\
             [[rates]]\npair = \"USDT/USD\"\ninstrument = \"USDT/USD\"\n",
            symbols.join(", ")
        );
        let config = mergebook::config::RawConfig::parse(&text, "bench")
            .and_then(|raw| raw.validate())
            .expect("a valid configuration");
        let expected = match units {
            Units::Plain => 0,
            Units::Converted => 4,
            Units::Notional => 8,
        };
        assert_eq!(config.instruments[1].conversions.len(), expected);
        let mut consolidation = mergebook::merger::Consolidation::configured(&config, 1);
        let rate = |bid, ask| mergebook::units::Rate {
            bid: mergebook::fixed::FixedPoint::from_raw(bid),
            ask: mergebook::fixed::FixedPoint::from_raw(ask),
            received_ns: 1,
        };
        let rates = [
            rate(100_019_000, 100_023_000),
            rate(100_021_000, 100_024_000),
        ];
        consolidation.set_rate(0, Some(rates[0]));
        let grid = mergebook::sim::market::PriceGrid::around(
            mergebook::fixed::FixedPoint::from_raw(9_000_000_000_000),
        );
        let mut mid = mergebook::sim::market::MidPrice::new(1);
        let feeds = EIGHT_VENUES
            .iter()
            .enumerate()
            .map(|(index, &venue)| {
                let mut feed = mergebook::feed::handoff::VenueFeed {
                    state: mergebook::merger::summary::VenueState::Synced,
                    ..Default::default()
                };
                mergebook::sim::market::SimulatedBook::new(2 + index as u64, grid).next_book(
                    mid.step(),
                    KEEP,
                    1,
                    0,
                    &mut feed.book,
                );
                let source = config.instruments[1]
                    .source_of(venue)
                    .expect("a venue of the instrument");
                consolidation.apply(source, &feed);
                (source, feed)
            })
            .collect();
        EightVenueSummaries {
            consolidation,
            feeds,
            rates,
            next: 0,
            summary: Default::default(),
        }
    }

    /// The next venue's book applied, and a summary written.
    pub fn after_a_book(&mut self) -> &mergebook::merger::summary::Summary {
        self.next = (self.next + 1) % self.feeds.len();
        let (source, feed) = &self.feeds[self.next];
        self.consolidation
            .apply(*source, std::hint::black_box(feed));
        self.consolidation.summarize(1, &mut self.summary);
        &self.summary
    }

    /// The other rate set, and a summary written.
    pub fn after_a_rate(&mut self) -> &mergebook::merger::summary::Summary {
        self.next ^= 1;
        let rate = std::hint::black_box(self.rates[self.next & 1]);
        self.consolidation.set_rate(0, Some(rate));
        self.consolidation.summarize(1, &mut self.summary);
        &self.summary
    }
}

/// The recorded Bitstamp ETHUSD REST snapshot (2,023 bids, 1,971 asks).
const ETHUSD_SNAPSHOT: &[u8] =
    include_bytes!("../../tests/fixtures/bitstamp/rest_order_book_ethusd.json");

/// `binance_decode_20_varied`: depth20 frames whose levels have the shapes of a real
/// altcoin book. Each frame takes 20 consecutive prices a side of the recorded NKNUSDT
/// snapshot and, for each level, the amount of a level drawn at random from the same side
/// (`672.00000000`, `15356.00000000`: about two levels in three change the amount's digit
/// count). The recorded BTCUSDT frame of `binance_decode_20` is the other extreme: every
/// amount `0.xxxxxxxx`, every level the shape of the one before.
pub fn binance_20_varied() -> Vec<Vec<u8>> {
    let snapshot = recorded_snapshot(VenueId::Binance, NKNUSDT_SNAPSHOT);
    varied_frames(VenueId::Binance, "nknusdt@depth20@100ms", &snapshot, 20, 8)
}

/// `bitstamp_decode_100_varied`: 100-level frames from the recorded ETHUSD snapshot the
/// same way (amounts `0.60000000`, `3.23948640`, `18.19696010`).
pub fn bitstamp_100_varied() -> Vec<Vec<u8>> {
    let snapshot = recorded_snapshot(VenueId::Bitstamp, ETHUSD_SNAPSHOT);
    varied_frames(VenueId::Bitstamp, "order_book_ethusd", &snapshot, 100, 2)
}

/// [`VARIED_FRAMES`] frames encoded by `venue`'s own encoder, frame `i` with the prices of
/// levels `i % room ..` of each side and amounts drawn (seeded) from the whole side.
fn varied_frames(
    venue: VenueId,
    stream: &str,
    snapshot: &BookUpdate,
    levels: usize,
    price_decimals: u32,
) -> Vec<Vec<u8>> {
    let mut rng = mergebook::rng::Rng::new(20_261_124);
    let mut side = |recorded: &[Level], first: usize| -> Vec<Level> {
        recorded[first..first + levels]
            .iter()
            .map(|level| Level {
                price: level.price,
                amount: recorded[rng.below(recorded.len() as u64) as usize].amount,
            })
            .collect()
    };
    let room = snapshot.bids.len().min(snapshot.asks.len()) - levels;
    (0..VARIED_FRAMES)
        .map(|index| {
            let mut book = TopBook::default();
            for level in side(&snapshot.bids, index % room) {
                assert!(book.bids.push(level), "levels <= MAX_DEPTH");
            }
            for level in side(&snapshot.asks, index % room) {
                assert!(book.asks.push(level), "levels <= MAX_DEPTH");
            }
            book.venue_sequence = 1_000 + index as u64;
            let mut frame = Vec::new();
            venue
                .simulated()
                .encode_book(stream, &book, price_decimals, &mut frame);
            frame
        })
        .collect()
}

/// Kraken's recorded BTC/USD subscription (depth 10): the snapshot and the update after it.
const KRAKEN_BTCUSD: &str = include_str!(
    "../../tests/fixtures/kraken/v2_book_BTCUSD_depth10_status_ack_snapshot_update_2026-08-12.jsonl"
);
/// Kraken's depth the recording subscribed.
pub const KRAKEN_DEPTH: usize = 10;

fn kraken_line(prefix: &str) -> &'static [u8] {
    KRAKEN_BTCUSD
        .lines()
        .find(|line| line.starts_with(prefix))
        .expect("recorded")
        .as_bytes()
}

/// `kraken_decode_snapshot`'s frame: the recorded snapshot, 10 levels a side.
pub fn kraken_snapshot() -> &'static [u8] {
    kraken_line(r#"{"channel":"book","type":"snapshot""#)
}

/// `kraken_update`'s frame: the recorded update (one level deleted, one set).
pub fn kraken_update() -> &'static [u8] {
    kraken_line(r#"{"channel":"book","type":"update""#)
}

/// Kraken's book from the recorded snapshot, as the reader keeps it, and its decode target.
pub struct KrakenBook {
    pub book: DepthBook,
    pub update: BookUpdate,
}

impl KrakenBook {
    pub fn new() -> KrakenBook {
        let mut update = BookUpdate::with_capacity(MAX_BOOK_LEVELS);
        VenueId::Kraken
            .decode_diff(kraken_snapshot(), MAX_BOOK_LEVELS, &mut update)
            .expect("the recorded snapshot decodes");
        let mut book = DepthBook::new(MAX_BOOK_LEVELS);
        book.replace(&update);
        KrakenBook { book, update }
    }

    /// `kraken_update`: decode an update, apply it, cut the book to the depth subscribed.
    pub fn apply(&mut self, frame: &[u8]) {
        VenueId::Kraken
            .decode_diff(frame, MAX_BOOK_LEVELS, &mut self.update)
            .expect("the recorded update decodes");
        self.book.apply(&self.update);
        self.book.truncate(KRAKEN_DEPTH);
    }

    /// `kraken_checksum`: the checksum of the book, over the text of its numbers.
    pub fn checksum(&self) -> Option<u32> {
        VenueId::Kraken.checksum(&self.book, self.update.decimals)
    }
}

/// `kraken_checksum_after_update`: the checksum as a reader checks each message, with the
/// level texts of the book's last checksum (`LevelTexts`). The book alternates between the
/// recorded snapshot's and the one the recorded update makes of it, so that each checksum
/// formats the levels that update changed.
pub struct KrakenChecksumAfterUpdate {
    books: [DepthBook; 2],
    decimals: WireDecimals,
    texts: LevelTexts,
    next: usize,
}

impl KrakenChecksumAfterUpdate {
    pub fn new() -> KrakenChecksumAfterUpdate {
        let before = KrakenBook::new();
        let mut after = KrakenBook::new();
        after.apply(kraken_update());
        let mut checksums = KrakenChecksumAfterUpdate {
            decimals: before.update.decimals,
            books: [before.book, after.book],
            texts: LevelTexts::default(),
            next: 0,
        };
        for recorded in [before.update.checksum, after.update.checksum] {
            assert_eq!(checksums.next(), recorded, "the recorded checksum");
        }
        checksums
    }

    /// The next book's checksum.
    pub fn next(&mut self) -> Option<u32> {
        let book = &self.books[self.next];
        self.next ^= 1;
        VenueId::Kraken.checksum_after_change(black_box(book), self.decimals, &mut self.texts)
    }
}

/// Bybit's recorded linear BTCUSDT subscription (`orderbook.50`): the snapshot (50 levels
/// a side) and the delta after it.
const BYBIT_BTCUSDT: &str = include_str!(
    "../../tests/fixtures/bybit/linear_orderbook50_BTCUSDT_snapshot_delta_2026-08-12.jsonl"
);
/// The depth of the recording's topic.
pub const BYBIT_DEPTH: usize = 50;

fn bybit_line(kind: &str) -> &'static [u8] {
    BYBIT_BTCUSDT
        .lines()
        .find(|line| line.contains(&format!(r#""type":"{kind}""#)))
        .expect("recorded")
        .as_bytes()
}

/// `bybit_decode_snapshot`'s frame: the recorded snapshot, 50 levels a side.
pub fn bybit_snapshot() -> &'static [u8] {
    bybit_line("snapshot")
}

/// `bybit_delta`'s frame: the recorded delta (three levels set).
pub fn bybit_delta() -> &'static [u8] {
    bybit_line("delta")
}

/// Bybit's book from the recorded snapshot, as the reader keeps it, and its decode target.
pub struct BybitBook {
    pub book: DepthBook,
    pub update: BookUpdate,
}

impl BybitBook {
    pub fn new() -> BybitBook {
        let mut update = BookUpdate::with_capacity(MAX_BOOK_LEVELS);
        VenueId::Bybit
            .decode_diff(bybit_snapshot(), MAX_BOOK_LEVELS, &mut update)
            .expect("the recorded snapshot decodes");
        let mut book = DepthBook::new(MAX_BOOK_LEVELS);
        book.replace(&update);
        BybitBook { book, update }
    }

    /// `bybit_delta`: decode a delta, apply it, cut the book to the topic's depth (the
    /// update id's check is a comparison, left out).
    pub fn apply(&mut self, frame: &[u8]) {
        VenueId::Bybit
            .decode_diff(frame, MAX_BOOK_LEVELS, &mut self.update)
            .expect("the recorded delta decodes");
        self.book.apply(&self.update);
        self.book.truncate(BYBIT_DEPTH);
    }
}

/// OKX's recorded BTC-USDT `books` subscription (2022): the snapshot (400 levels a side)
/// and 97 updates, each with its checksum.
const OKX_BOOKS: &str = include_str!(
    "../../tests/fixtures/okx/books_BTC-USDT_subscribe_ack_snapshot_updates_2022.jsonl"
);
/// OKX's recorded spot `books5` messages (2026).
const OKX_BOOKS5: &str =
    include_str!("../../tests/fixtures/okx/books5_BTC-USDT_ack_then_snapshots_2026-08-12.jsonl");

/// `okx_decode_snapshot`'s frame: the recorded snapshot, 400 levels a side (30 KB).
pub fn okx_snapshot() -> &'static [u8] {
    OKX_BOOKS.lines().nth(1).expect("recorded").as_bytes()
}

/// `okx_update`'s frame: the first recorded update (13 levels set).
pub fn okx_update() -> &'static [u8] {
    OKX_BOOKS.lines().nth(2).expect("recorded").as_bytes()
}

/// `okx_decode_books5`'s frame: a recorded `books5` message, 5 levels a side.
pub fn okx_books5() -> &'static [u8] {
    OKX_BOOKS5.lines().nth(1).expect("recorded").as_bytes()
}

/// OKX's book from the recorded snapshot, as the reader keeps it, and its decode target.
pub struct OkxBook {
    pub book: DepthBook,
    pub update: BookUpdate,
}

impl OkxBook {
    pub fn new() -> OkxBook {
        let mut update = BookUpdate::with_capacity(MAX_BOOK_LEVELS);
        VenueId::Okx
            .decode_diff(okx_snapshot(), MAX_BOOK_LEVELS, &mut update)
            .expect("the recorded snapshot decodes");
        let mut book = DepthBook::new(MAX_BOOK_LEVELS);
        book.replace(&update);
        OkxBook { book, update }
    }

    /// `okx_update`: decode an update, apply it, verify the checksum it carries (the
    /// `seqId` check is a comparison, left out). Applying it again leaves the book as it
    /// was, so each iteration does the same work.
    pub fn apply(&mut self, frame: &[u8]) -> bool {
        VenueId::Okx
            .decode_diff(frame, MAX_BOOK_LEVELS, &mut self.update)
            .expect("the recorded update decodes");
        self.book.apply(&self.update);
        self.checksum() == self.update.checksum
    }

    /// `okx_checksum`: the CRC32 of the top 25 levels a side, over their text.
    pub fn checksum(&self) -> Option<u32> {
        VenueId::Okx.checksum(&self.book, mergebook::book::WireDecimals::default())
    }
}

/// Bitget's recorded EOSUSDT `books` subscription (2022, v1): the acknowledgement, the
/// snapshot (83 bids, 108 asks) and 56 updates, each with its checksum.
const BITGET_BOOKS: &str =
    include_str!("../../tests/fixtures/bitget/v1_spot_books_EOSUSDT_2022-04-06.jsonl");
/// Bitget's recorded `books5` messages (2026, v2).
const BITGET_BOOKS5: &str = include_str!(
    "../../tests/fixtures/bitget/v2_books5_USDT-FUTURES_and_SPOT_BTCUSDT_ack_snapshots_2026-08-12.jsonl"
);

/// `bitget_decode_snapshot`'s frame: the recorded snapshot.
pub fn bitget_snapshot() -> &'static [u8] {
    BITGET_BOOKS.lines().nth(1).expect("recorded").as_bytes()
}

/// `bitget_update`'s frame: the first recorded update (62 levels set).
pub fn bitget_update() -> &'static [u8] {
    BITGET_BOOKS.lines().nth(2).expect("recorded").as_bytes()
}

/// `bitget_decode_books5`'s frame: a recorded `books5` message, 5 levels a side.
pub fn bitget_books5() -> &'static [u8] {
    BITGET_BOOKS5.lines().nth(1).expect("recorded").as_bytes()
}

/// Bitget's book from the recorded snapshot, as the reader keeps it (with the precision
/// its numbers were written in), and its decode target.
pub struct BitgetBook {
    pub book: DepthBook,
    pub decimals: mergebook::book::WireDecimals,
    pub update: BookUpdate,
}

impl BitgetBook {
    pub fn new() -> BitgetBook {
        let mut update = BookUpdate::with_capacity(MAX_BOOK_LEVELS);
        VenueId::Bitget
            .decode_diff(bitget_snapshot(), MAX_BOOK_LEVELS, &mut update)
            .expect("the recorded snapshot decodes");
        let mut book = DepthBook::new(MAX_BOOK_LEVELS);
        book.replace(&update);
        let decimals = update.decimals;
        BitgetBook {
            book,
            decimals,
            update,
        }
    }

    /// `bitget_update`: decode an update, apply it, verify the checksum it carries.
    /// Applying it again leaves the book as it was, so each iteration does the same work.
    pub fn apply(&mut self, frame: &[u8]) -> bool {
        VenueId::Bitget
            .decode_diff(frame, MAX_BOOK_LEVELS, &mut self.update)
            .expect("the recorded update decodes");
        self.book.apply(&self.update);
        self.checksum() == self.update.checksum
    }

    /// `bitget_checksum`: the CRC32 of the top 25 levels a side, over their text.
    pub fn checksum(&self) -> Option<u32> {
        VenueId::Bitget.checksum(&self.book, self.decimals)
    }
}

/// Deribit's recorded `book.BTC-24SEP21-8000-P.raw` (2021): the snapshot (1 bid, 14 asks)
/// and 30 changes.
const DERIBIT_BOOK: &str = include_str!(
    "../../tests/fixtures/deribit/book_BTC-24SEP21-8000-P_raw_snapshot_then_changes_2021-07-22.jsonl"
);
/// Deribit's recorded grouped window of BTC-PERPETUAL (2026): 10 levels a side.
const DERIBIT_WINDOW: &str = include_str!(
    "../../tests/fixtures/deribit/grouped_book_BTC-PERPETUAL_none_10_100ms_2026-01-24.json"
);

/// `deribit_decode_snapshot`'s frame: the recorded snapshot, `[action, price, amount]`
/// levels of bare numbers.
pub fn deribit_snapshot() -> &'static [u8] {
    DERIBIT_BOOK.lines().next().expect("recorded").as_bytes()
}

/// `deribit_decode_window`'s frame: the recorded grouped window.
pub fn deribit_window() -> &'static [u8] {
    DERIBIT_WINDOW.trim().as_bytes()
}

/// The Coinbase Exchange feed's recorded BAND-GBP recording: the snapshot (152 bids, 166
/// asks) and 471 updates.
const COINBASE_BAND_GBP: &str = include_str!(
    "../../tests/fixtures/coinbase/exchange_level2_BAND-GBP_snapshot_then_l2updates.jsonl"
);

/// `coinbase_exchange_decode_snapshot`'s frame: the recorded full-depth snapshot.
pub fn coinbase_exchange_snapshot() -> &'static [u8] {
    COINBASE_BAND_GBP
        .lines()
        .next()
        .expect("recorded")
        .as_bytes()
}

/// `coinbase_exchange_update`'s frame: the first recorded `l2update` (one change).
pub fn coinbase_exchange_update() -> &'static [u8] {
    COINBASE_BAND_GBP
        .lines()
        .nth(1)
        .expect("recorded")
        .as_bytes()
}

/// A book of a venue without checksum or sequence from its snapshot, as the reader keeps
/// it, and its decode target (both Coinbase feeds).
pub struct UnsequencedBook {
    venue: VenueId,
    pub book: DepthBook,
    pub update: BookUpdate,
}

impl UnsequencedBook {
    pub fn new(venue: VenueId, snapshot: &[u8]) -> UnsequencedBook {
        let mut update = BookUpdate::with_capacity(MAX_BOOK_LEVELS);
        venue
            .decode_diff(snapshot, MAX_BOOK_LEVELS, &mut update)
            .expect("the recorded snapshot decodes");
        let mut book = DepthBook::new(MAX_BOOK_LEVELS);
        book.replace(&update);
        UnsequencedBook {
            venue,
            book,
            update,
        }
    }

    /// `<venue>_update`: decode an update and apply it (the second time, it changes
    /// nothing: each iteration decodes and searches the same).
    pub fn apply(&mut self, frame: &[u8]) {
        self.venue
            .decode_diff(frame, MAX_BOOK_LEVELS, &mut self.update)
            .expect("the update decodes");
        self.book.apply(&self.update);
    }
}

/// Coinbase Exchange's recorded book kept by a feed core, as the reader keeps it (with
/// its audits on or off, none under way): an update's decode, apply and publish of the
/// top `KEEP`, into a scratch feed.
pub struct CoinbaseExchangeCore {
    core: FeedCore,
    outlet: ScratchOutlet,
}

/// Where a bench's core publishes: one feed, overwritten.
#[derive(Default)]
struct ScratchOutlet(VenueFeed);

impl FeedOutput for ScratchOutlet {
    fn publish(&mut self, _stream: usize, write: impl FnOnce(&mut VenueFeed)) {
        write(&mut self.0);
    }

    fn note(&mut self, _stream: Option<usize>, _event: FeedEvent) {}
}

impl CoinbaseExchangeCore {
    pub fn new(audited: bool) -> CoinbaseExchangeCore {
        let venue = VenueId::CoinbaseExchange;
        let settings = DiffSettings {
            rest_url: "http://127.0.0.1:1".to_owned(),
            snapshot_depth: KEEP,
            max_levels: MAX_BOOK_LEVELS,
            max_buffered: 1_000,
            policy: SnapshotPolicy {
                weight_per_minute: 60,
                spacing: Duration::ZERO,
                retry_initial: Duration::from_millis(500),
                retry_max: Duration::from_secs(30),
                rate_limited_pause: Duration::from_secs(60),
            },
            snapshot_timeout: Duration::from_secs(10),
            audit: audited.then_some(AuditSettings {
                every: Duration::from_secs(60),
                settle: Duration::from_secs(1),
            }),
            whole_book: false,
            full_depth: false,
        };
        let stream = CoreStream {
            name: "BAND-GBP".to_owned(),
            symbol: "BAND-GBP".to_owned(),
            contract_size: None,
            unit: mergebook::fixed::UnitSize::COIN,
        };
        let mut core = FeedCore::new(venue, KEEP, vec![stream], Some(&settings), 0);
        let mut outlet = ScratchOutlet::default();
        core.connected(0, &mut outlet);
        core.on_frame(br#"{"type":"subscriptions","channels":[]}"#, 1, &mut outlet);
        core.on_frame(coinbase_exchange_snapshot(), 2, &mut outlet);
        assert_eq!(
            outlet.0.state,
            VenueState::Synced,
            "the recorded snapshot syncs it"
        );
        CoinbaseExchangeCore { core, outlet }
    }

    /// `coinbase_exchange_core_update[_audited]`: an update through the core (the second
    /// time it changes nothing: each iteration does the same work).
    pub fn apply(&mut self, frame: &[u8]) {
        self.core.on_frame(frame, 3, &mut self.outlet);
    }
}

/// `coinbase_decode_snapshot`'s frame: Advanced Trade's recorded `l2_data` snapshot (cut
/// to 4 levels by its source).
pub fn coinbase_snapshot() -> &'static [u8] {
    include_str!(
        "../../tests/fixtures/coinbase/advanced_trade_l2_data_snapshot_BTC-PERP-INTX_truncated_2026-09-07.json"
    )
    .trim()
    .as_bytes()
}

/// `coinbase_update`'s frame: an update in the recorded snapshot's envelope and level
/// shape, changing its best bid (no Advanced Trade update was captured).
pub fn coinbase_update() -> &'static [u8] {
    br#"{"channel":"l2_data","client_id":"","timestamp":"2026-09-07T01:57:59.102455Z","sequence_num":1,"events":[{"type":"update","product_id":"BTC-PERP-INTX","updates":[{"side":"bid","event_time":"2026-09-07T01:57:59.102455Z","price_level":"79943.9","new_quantity":"2.9105"}]}]}"#
}

/// `hyperliquid_decode_20`'s frame: the first recorded `l2Book` BTC frame (20 levels a
/// side, 2.3 KB), out of its timeline's wrapper.
pub fn hyperliquid_20() -> Vec<u8> {
    let line = include_str!(
        "../../tests/fixtures/hyperliquid/timeline_l2Book_trades_BTC_2025-01-26_first30.jsonl"
    )
    .lines()
    .next()
    .expect("recorded frame");
    let entry: serde_json::Value = serde_json::from_str(line).expect("a timeline entry");
    entry["raw"]
        .as_str()
        .expect("its frame")
        .as_bytes()
        .to_vec()
}

/// `binance_futures_diff_decode`'s frame: the recorded USDⓈ-M BTCUSDT real-time diff
/// event of the median size (levels of both sides), out of its timeline's wrapper.
pub fn binance_futures_event() -> Vec<u8> {
    let mut events: Vec<(usize, String)> = include_str!(
        "../../tests/fixtures/binance_futures/usdm_timeline_BTCUSDT_depth0ms_2024-08-08_prefix.jsonl"
    )
    .lines()
    .filter_map(|line| {
        let entry: serde_json::Value = serde_json::from_str(line).ok()?;
        let raw = entry["raw"].as_str()?;
        let data = &serde_json::from_str::<serde_json::Value>(raw).ok()?["data"];
        (data["e"] == "depthUpdate").then(|| {
            let levels = data["b"].as_array().map_or(0, Vec::len) + data["a"].as_array().map_or(0, Vec::len);
            (levels, raw.to_owned())
        })
    })
    .collect();
    events.sort_by_key(|(levels, _)| *levels);
    events.swap_remove(events.len() / 2).1.into_bytes()
}

/// A Gate recording's `order_book_update` event of the median size (levels of both
/// sides), out of its timeline's wrapper: `gate_diff_decode` (spot, pairs) and
/// `gate_futures_diff_decode` (futures, objects with integer sizes).
fn gate_event(recording: &str) -> Vec<u8> {
    let mut events: Vec<(usize, String)> = recording
        .lines()
        .filter_map(|line| {
            let entry: serde_json::Value = serde_json::from_str(line).ok()?;
            let raw = entry["raw"].as_str()?;
            let frame: serde_json::Value = serde_json::from_str(raw).ok()?;
            let result = &frame["result"];
            (frame["event"] == "update").then(|| {
                let levels = result["b"].as_array().map_or(0, Vec::len)
                    + result["a"].as_array().map_or(0, Vec::len);
                (levels, raw.to_owned())
            })
        })
        // A number of 10 decimals is not held (its book is lost): not the usual frame.
        .filter(|(_, raw)| !has_unheld_number(raw))
        .collect();
    events.sort_by_key(|(levels, _)| *levels);
    events.swap_remove(events.len() / 2).1.into_bytes()
}

/// Whether `raw` writes a quoted number of more than 8 decimals.
fn has_unheld_number(raw: &str) -> bool {
    let digits = |text: &str| !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit());
    raw.split('"').any(|text| {
        text.split_once('.').is_some_and(|(whole, fraction)| {
            digits(whole) && digits(fraction) && fraction.len() > 8
        })
    })
}

pub fn gate_spot_event() -> Vec<u8> {
    gate_event(include_str!(
        "../../tests/fixtures/gate/spot_timeline_order_book_update_7pairs_2021-04-22.jsonl"
    ))
}

pub fn gate_futures_event() -> Vec<u8> {
    gate_event(include_str!(
        "../../tests/fixtures/gate/futures_usdt_timeline_order_book_update_7contracts_2023-05-24.jsonl"
    ))
}

/// A KuCoin recording's `trade.l2update` message that changes a level (each recorded one
/// carries one change), out of its timeline's wrapper: `kucoin_diff_decode`.
pub fn kucoin_event() -> Vec<u8> {
    const RECORDING: &str =
        include_str!("../../tests/fixtures/kucoin/timeline_level2_SNX-BTC_2021-04-25.jsonl");
    RECORDING
        .lines()
        .filter_map(|line| {
            let entry: serde_json::Value = serde_json::from_str(line).ok()?;
            let raw = entry["raw"].as_str()?.to_owned();
            (raw.contains("trade.l2update") && !raw.contains(r#"["0","0""#)).then_some(raw)
        })
        .nth(10)
        .expect("a recorded message")
        .into_bytes()
}

/// The recorded KuCoin futures `obu` delta of two levels (`increment@10ms`, XBTUSDTM):
/// `kucoin_futures_diff_decode`.
pub fn kucoin_futures_delta() -> Vec<u8> {
    const PROBE: &str = include_str!(
        "../../tests/fixtures/kucoin/futures_uta_obu_and_classic_trimmed_frames_2026-09-22_probe_notes.jsonl"
    );
    let delta = PROBE
        .lines()
        .find(|line| line.contains(r#""dp":"increment@10ms", "t":"delta""#));
    delta.expect("a recorded delta").as_bytes().to_vec()
}

/// `e2e_parse_summarize` and `…_bands`: Binance 20 and Bitstamp 100 decoded into their
/// feeds, applied to an instrument of the two, summarized; with bands, the summary's
/// bands (the default five) counted too, over the two tops: the work a snapshot-mode
/// instrument's publish adds.
pub struct ParseSummarize {
    consolidation: mergebook::merger::Consolidation,
    feeds: [VenueFeed; 2],
    summary: mergebook::merger::summary::Summary,
    no_whole_book: mergebook::book::full_depth::FullDepth,
}

impl ParseSummarize {
    pub fn new() -> ParseSummarize {
        let synced = || VenueFeed {
            state: VenueState::Synced,
            ..VenueFeed::default()
        };
        ParseSummarize {
            consolidation: mergebook::merger::Consolidation::new(
                0,
                KEEP,
                &[VenueId::Binance, VenueId::Bitstamp],
            ),
            feeds: [synced(), synced()],
            summary: Default::default(),
            no_whole_book: Default::default(),
        }
    }

    pub fn run(
        &mut self,
        binance_frame: &[u8],
        bitstamp_frame: &[u8],
        bands: &[u16],
    ) -> &mergebook::merger::summary::Summary {
        VenueId::Binance
            .decode(binance_frame, KEEP, &mut self.feeds[0].book)
            .expect("bench frame decodes");
        VenueId::Bitstamp
            .decode(bitstamp_frame, KEEP, &mut self.feeds[1].book)
            .expect("bench frame decodes");
        self.consolidation.apply(0, &self.feeds[0]);
        self.consolidation.apply(1, &self.feeds[1]);
        self.consolidation.summarize(1, &mut self.summary);
        if !bands.is_empty() {
            self.bands(bands);
        }
        &self.summary
    }

    /// The bands alone, over the books `run` left (`bands_2x10`).
    pub fn bands(&mut self, bands: &[u16]) -> &mergebook::merger::summary::Summary {
        let whole = &self.no_whole_book;
        mergebook::merger::bands::write(&self.consolidation, |_| whole, bands, &mut self.summary);
        &self.summary
    }
}

/// `quote_25btc_8x1000` and `bands_8x1000`: an instrument of eight venues, each handing
/// over a whole book of 1,000 levels a side around 90,000 (a cent apart, 0.001 to 0.1 BTC
/// each, so that 25 BTC takes some 500 levels over the eight), summarized once.
pub struct EightWholeBooks {
    consolidation: mergebook::merger::Consolidation,
    wholes: Vec<mergebook::book::full_depth::FullDepth>,
    summary: mergebook::merger::summary::Summary,
}

impl EightWholeBooks {
    pub fn new() -> EightWholeBooks {
        const LEVELS: u64 = 1_000;
        let mut consolidation = mergebook::merger::Consolidation::new(0, KEEP, EIGHT_VENUES);
        let mut wholes = Vec::new();
        let mut rng = mergebook::rng::Rng::new(7);
        for (source, _) in EIGHT_VENUES.iter().enumerate() {
            let mid = 9_000_000_000_000 + source as u64 * 1_000_000;
            let level = |rng: &mut mergebook::rng::Rng, price| {
                Level::from_raw(price, 100_000 + rng.below(9_900_000))
            };
            let mut snapshot = BookUpdate::default();
            for step in 1..=LEVELS {
                snapshot.bids.push(level(&mut rng, mid - step * 1_000_000));
                snapshot.asks.push(level(&mut rng, mid + step * 1_000_000));
            }
            let mut book = DepthBook::new(MAX_BOOK_LEVELS).with_journal();
            book.replace(&snapshot);
            let mut feed = VenueFeed {
                state: VenueState::Synced,
                ..VenueFeed::default()
            };
            feed.book.received_ns = 1;
            book.top(KEEP, &mut feed.book);
            feed.full_depth.update_from(&book);
            consolidation.apply(source, &feed);
            wholes.push(feed.full_depth);
        }
        let mut summary = Default::default();
        consolidation.summarize(1, &mut summary);
        EightWholeBooks {
            consolidation,
            wholes,
            summary,
        }
    }

    pub fn quote(
        &self,
        request: &mergebook::merger::quote::QuoteRequest,
    ) -> mergebook::merger::quote::Quote {
        let wholes = &self.wholes;
        mergebook::merger::quote::quote(&self.consolidation, |source| &wholes[source], request)
            .expect("a summary")
    }

    pub fn bands(&mut self, bands: &[u16]) -> &mergebook::merger::summary::Summary {
        let wholes = &self.wholes;
        mergebook::merger::bands::write(
            &self.consolidation,
            |source| &wholes[source],
            bands,
            &mut self.summary,
        );
        &self.summary
    }
}

/// `book_apply_diff_full_depth`: `book_apply_diff`'s event applied to the recorded book
/// journaling its changes, and the book handed over into the next of three mailbox slots
/// (each two events behind, as a triple buffer's are when the merger keeps up).
pub struct WholeBookHandover {
    book: DepthBook,
    slots: [mergebook::book::full_depth::FullDepth; 3],
    next: usize,
}

impl WholeBookHandover {
    pub fn new() -> WholeBookHandover {
        let mut handover = WholeBookHandover {
            book: std::mem::take(&mut nknusdt_book()).with_journal(),
            slots: Default::default(),
            next: 0,
        };
        for slot in &mut handover.slots {
            slot.update_from(&handover.book);
        }
        handover
    }

    pub fn apply(&mut self, event: &BookUpdate) {
        self.book.apply(event);
        self.next = (self.next + 1) % 3;
        self.slots[self.next].update_from(&self.book);
    }
}
