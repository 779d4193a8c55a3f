//! The hot-path benches. Names are part of the interface (BENCHMARKS.md, saved baselines):
//! do not rename them.

mod workloads;

use criterion::{Criterion, criterion_group, criterion_main};
use mergebook::book::TopBook;
use mergebook::feed::handoff::VenueFeed;
use mergebook::fixed::FixedPoint;
use mergebook::mailbox::mailbox;
use mergebook::merger::kway::MergedBook;
use mergebook::merger::summary::VenueState;
use mergebook::venue::VenueId;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use workloads::*;

fn decoders(c: &mut Criterion) {
    let mut out = TopBook::default();
    c.bench_function("binance_decode_20", |b| {
        b.iter(|| {
            VenueId::Binance
                .decode(black_box(BINANCE_20), KEEP, &mut out)
                .map(drop)
        })
    });
    // The same frame read in units of 0.01 coin (an instrument's `unit_size`): every
    // number by the general parse, which the coin's frames do not take.
    let hundredths = mergebook::fixed::UnitSize::parse("0.01").expect("a unit size");
    c.bench_function("binance_decode_20_in_a_unit", |b| {
        b.iter(|| {
            hundredths.decoding(|| {
                VenueId::Binance
                    .decode(black_box(BINANCE_20), KEEP, &mut out)
                    .map(drop)
            })
        })
    });
    // The same book in SBE: the binary decode beside the JSON one, in the same run.
    let binance_sbe_20 = binance_sbe_20();
    c.bench_function("binance_sbe_decode_depth20", |b| {
        b.iter(|| {
            VenueId::BinanceSbe
                .decode_binary(black_box(&binance_sbe_20), KEEP, &mut out)
                .map(drop)
        })
    });
    let bitstamp_20 = bitstamp_20();
    c.bench_function("bitstamp_decode_20", |b| {
        b.iter(|| {
            VenueId::Bitstamp
                .decode(black_box(&bitstamp_20), KEEP, &mut out)
                .map(drop)
        })
    });
    let bitstamp_100 = bitstamp_100();
    c.bench_function("bitstamp_decode_100", |b| {
        b.iter(|| {
            VenueId::Bitstamp
                .decode(black_box(bitstamp_100), KEEP, &mut out)
                .map(drop)
        })
    });
    // Frames whose levels change shape as real altcoin books do, a different one each
    // iteration (see `workloads::binance_20_varied`).
    for (name, venue, frames) in [
        (
            "binance_decode_20_varied",
            VenueId::Binance,
            binance_20_varied(),
        ),
        (
            "bitstamp_decode_100_varied",
            VenueId::Bitstamp,
            bitstamp_100_varied(),
        ),
    ] {
        let mut next = frames.iter().cycle();
        c.bench_function(name, |b| {
            b.iter(|| {
                let frame = next.next().expect("cycle of a non-empty list");
                venue.decode(black_box(frame), KEEP, &mut out).map(drop)
            })
        });
    }
    c.bench_function("fixed_point_parse", |b| {
        b.iter(|| {
            let price = FixedPoint::parse(black_box(PRICE));
            let amount = FixedPoint::parse(black_box(AMOUNT));
            (price, amount)
        })
    });
}

/// The reference users would otherwise write: serde_json into owned values, keeping the
/// top `KEEP` levels as (price, amount) floats.
fn serde_reference(c: &mut Criterion) {
    #[derive(serde::Deserialize)]
    struct Combined {
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        stream: String,
        data: Depth,
    }
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Depth {
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        last_update_id: u64,
        bids: Vec<(String, String)>,
        asks: Vec<(String, String)>,
    }
    fn top(side: &[(String, String)]) -> Vec<(f64, f64)> {
        side.iter()
            .take(KEEP)
            .map(|(p, q)| (p.parse().unwrap(), q.parse().unwrap()))
            .collect()
    }
    c.bench_function("binance_decode_20_serde_json", |b| {
        b.iter(|| {
            let frame: Combined = serde_json::from_slice(black_box(BINANCE_20)).unwrap();
            (top(&frame.data.bids), top(&frame.data.asks))
        })
    });

    // Kraken's message into owned values (its numbers as f64, which the service could not
    // use: the checksum needs their text).
    #[derive(serde::Deserialize)]
    struct KrakenMessage {
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        channel: String,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        r#type: String,
        data: Vec<KrakenData>,
    }
    #[derive(serde::Deserialize)]
    struct KrakenData {
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        symbol: String,
        bids: Vec<KrakenLevel>,
        asks: Vec<KrakenLevel>,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        checksum: Option<u32>,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        timestamp: Option<String>,
    }
    #[derive(serde::Deserialize)]
    struct KrakenLevel {
        price: f64,
        qty: f64,
    }
    c.bench_function("kraken_decode_snapshot_serde_json", |b| {
        let frame = kraken_snapshot();
        b.iter(|| {
            let message: KrakenMessage = serde_json::from_slice(black_box(frame)).unwrap();
            let book = &message.data[0];
            let levels = |side: &[KrakenLevel]| -> Vec<(f64, f64)> {
                side.iter().map(|level| (level.price, level.qty)).collect()
            };
            (levels(&book.bids), levels(&book.asks))
        })
    });
}

/// Bybit's message into owned values, its numbers parsed as f64 (the Binance reference's
/// way: the same `[price, amount]` strings).
fn bybit_serde_reference(c: &mut Criterion) {
    #[derive(serde::Deserialize)]
    struct BybitMessage {
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        topic: String,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        r#type: String,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        ts: u64,
        data: BybitData,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        cts: u64,
    }
    #[derive(serde::Deserialize)]
    struct BybitData {
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        s: String,
        b: Vec<(String, String)>,
        a: Vec<(String, String)>,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        u: u64,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        seq: u64,
    }
    fn levels(side: &[(String, String)]) -> Vec<(f64, f64)> {
        side.iter()
            .map(|(p, q)| (p.parse().unwrap(), q.parse().unwrap()))
            .collect()
    }
    c.bench_function("bybit_decode_snapshot_serde_json", |b| {
        let frame = bybit_snapshot();
        b.iter(|| {
            let message: BybitMessage = serde_json::from_slice(black_box(frame)).unwrap();
            (levels(&message.data.b), levels(&message.data.a))
        })
    });
}

/// OKX's messages into owned values, their numbers parsed as f64 (the Binance
/// reference's way), for the `books` snapshot and a `books5` message.
fn okx_serde_reference(c: &mut Criterion) {
    #[derive(serde::Deserialize)]
    struct OkxMessage {
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        arg: OkxArg,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        action: Option<String>,
        data: Vec<OkxData>,
    }
    #[derive(serde::Deserialize)]
    struct OkxArg {
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        channel: String,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        #[serde(rename = "instId")]
        inst_id: String,
    }
    #[derive(serde::Deserialize)]
    struct OkxData {
        asks: Vec<(String, String, String, String)>,
        bids: Vec<(String, String, String, String)>,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        ts: String,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        checksum: Option<i64>,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        #[serde(rename = "seqId")]
        seq_id: Option<u64>,
    }
    fn levels(side: &[(String, String, String, String)]) -> Vec<(f64, f64)> {
        side.iter()
            .map(|(p, q, _, _)| (p.parse().unwrap(), q.parse().unwrap()))
            .collect()
    }
    for (name, frame) in [
        ("okx_decode_snapshot_serde_json", okx_snapshot()),
        ("okx_decode_books5_serde_json", okx_books5()),
    ] {
        c.bench_function(name, |b| {
            b.iter(|| {
                let message: OkxMessage = serde_json::from_slice(black_box(frame)).unwrap();
                let data = &message.data[0];
                (levels(&data.bids), levels(&data.asks))
            })
        });
    }
}

/// Bitget's messages into owned values, their numbers parsed as f64, for the `books`
/// snapshot and a `books5` message.
fn bitget_serde_reference(c: &mut Criterion) {
    #[derive(serde::Deserialize)]
    struct BitgetMessage {
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        action: String,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        arg: BitgetArg,
        data: Vec<BitgetData>,
    }
    #[derive(serde::Deserialize)]
    struct BitgetArg {
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        #[serde(rename = "instType")]
        inst_type: String,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        channel: String,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        #[serde(rename = "instId")]
        inst_id: String,
    }
    #[derive(serde::Deserialize)]
    struct BitgetData {
        asks: Vec<(String, String)>,
        bids: Vec<(String, String)>,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        ts: String,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        checksum: Option<i64>,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        seq: Option<u64>,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        pseq: Option<u64>,
    }
    fn levels(side: &[(String, String)]) -> Vec<(f64, f64)> {
        side.iter()
            .map(|(p, q)| (p.parse().unwrap(), q.parse().unwrap()))
            .collect()
    }
    for (name, frame) in [
        ("bitget_decode_snapshot_serde_json", bitget_snapshot()),
        ("bitget_decode_books5_serde_json", bitget_books5()),
    ] {
        c.bench_function(name, |b| {
            b.iter(|| {
                let message: BitgetMessage = serde_json::from_slice(black_box(frame)).unwrap();
                let data = &message.data[0];
                (levels(&data.bids), levels(&data.asks))
            })
        });
    }
}

/// Bitget: the `books` snapshot's and a `books5` message's decode (beside serde_json's,
/// above), an update's decode, apply and checksum check, and the checksum alone.
fn bitget(c: &mut Criterion) {
    let mut snapshot = mergebook::book::BookUpdate::with_capacity(MAX_BOOK_LEVELS);
    let snapshot_frame = bitget_snapshot();
    c.bench_function("bitget_decode_snapshot", |b| {
        b.iter(|| {
            VenueId::Bitget
                .decode_diff(black_box(snapshot_frame), MAX_BOOK_LEVELS, &mut snapshot)
                .map(drop)
        })
    });
    let books5 = bitget_books5();
    let mut top = TopBook::default();
    c.bench_function("bitget_decode_books5", |b| {
        b.iter(|| {
            VenueId::Bitget
                .decode(black_box(books5), KEEP, &mut top)
                .map(drop)
        })
    });
    let mut bitget = BitgetBook::new();
    let update = bitget_update();
    assert!(bitget.apply(update), "the recorded checksum");
    c.bench_function("bitget_update", |b| {
        b.iter(|| bitget.apply(black_box(update)))
    });
    c.bench_function("bitget_checksum", |b| {
        b.iter(|| black_box(&bitget).checksum())
    });
}

/// Deribit's notifications into owned values with serde_json, its numbers read as f64
/// (as they come: JSON numbers), for the snapshot and the grouped window.
fn deribit_serde_reference(c: &mut Criterion) {
    #[derive(serde::Deserialize)]
    struct Notification {
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        jsonrpc: String,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        method: String,
        params: Params,
    }
    #[derive(serde::Deserialize)]
    struct Params {
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        channel: String,
        data: Data,
    }
    #[derive(serde::Deserialize)]
    struct Data {
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        #[serde(rename = "type")]
        kind: Option<String>,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        timestamp: u64,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        change_id: u64,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        prev_change_id: Option<u64>,
        bids: Vec<serde_json::Value>,
        asks: Vec<serde_json::Value>,
    }
    /// A level's price and amount: the last two elements, with or without an action.
    fn levels(side: &[serde_json::Value]) -> Vec<(f64, f64)> {
        side.iter()
            .map(|level| {
                let level = level.as_array().unwrap();
                let n = level.len();
                (
                    level[n - 2].as_f64().unwrap(),
                    level[n - 1].as_f64().unwrap(),
                )
            })
            .collect()
    }
    for (name, frame) in [
        ("deribit_decode_snapshot_serde_json", deribit_snapshot()),
        ("deribit_decode_window_serde_json", deribit_window()),
    ] {
        c.bench_function(name, |b| {
            b.iter(|| {
                let message: Notification = serde_json::from_slice(black_box(frame)).unwrap();
                let data = &message.params.data;
                (levels(&data.bids), levels(&data.asks))
            })
        });
    }
}

/// Deribit: a snapshot's decode (levels with their actions) and a grouped window's, beside
/// serde_json's (above).
fn deribit(c: &mut Criterion) {
    let mut snapshot = mergebook::book::BookUpdate::with_capacity(MAX_BOOK_LEVELS);
    let snapshot_frame = deribit_snapshot();
    c.bench_function("deribit_decode_snapshot", |b| {
        b.iter(|| {
            VenueId::Deribit
                .decode_diff(black_box(snapshot_frame), MAX_BOOK_LEVELS, &mut snapshot)
                .map(drop)
        })
    });
    let window = deribit_window();
    let mut top = TopBook::default();
    c.bench_function("deribit_decode_window", |b| {
        b.iter(|| {
            VenueId::Deribit
                .decode(black_box(window), KEEP, &mut top)
                .map(drop)
        })
    });
}

/// The Coinbase Exchange feed's snapshot into owned values, its numbers parsed as f64.
fn coinbase_exchange_serde_reference(c: &mut Criterion) {
    #[derive(serde::Deserialize)]
    struct Snapshot {
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        r#type: String,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        product_id: String,
        asks: Vec<(String, String)>,
        bids: Vec<(String, String)>,
    }
    fn levels(side: &[(String, String)]) -> Vec<(f64, f64)> {
        side.iter()
            .map(|(p, q)| (p.parse().unwrap(), q.parse().unwrap()))
            .collect()
    }
    c.bench_function("coinbase_exchange_decode_snapshot_serde_json", |b| {
        let frame = coinbase_exchange_snapshot();
        b.iter(|| {
            let message: Snapshot = serde_json::from_slice(black_box(frame)).unwrap();
            (levels(&message.bids), levels(&message.asks))
        })
    });
}

/// Coinbase Advanced Trade's recorded snapshot into owned values, its numbers parsed as
/// f64.
fn coinbase_serde_reference(c: &mut Criterion) {
    #[derive(serde::Deserialize)]
    #[allow(dead_code)] // read by serde, kept to mirror the frame
    struct L2Data {
        channel: String,
        client_id: Option<String>,
        timestamp: String,
        sequence_num: u64,
        events: Vec<Event>,
    }
    #[derive(serde::Deserialize)]
    #[allow(dead_code)] // read by serde, kept to mirror the frame
    struct Event {
        r#type: String,
        product_id: String,
        updates: Vec<Update>,
    }
    #[derive(serde::Deserialize)]
    #[allow(dead_code)] // read by serde, kept to mirror the frame
    struct Update {
        side: String,
        event_time: String,
        price_level: String,
        new_quantity: String,
    }
    c.bench_function("coinbase_decode_snapshot_serde_json", |b| {
        let frame = coinbase_snapshot();
        b.iter(|| {
            let message: L2Data = serde_json::from_slice(black_box(frame)).unwrap();
            let levels: Vec<(bool, f64, f64)> = message.events[0]
                .updates
                .iter()
                .map(|update| {
                    let price = update.price_level.parse().unwrap();
                    let quantity = update.new_quantity.parse().unwrap();
                    (update.side == "bid", price, quantity)
                })
                .collect();
            levels
        })
    });
}

fn merging(c: &mut Criterion) {
    let binance = decode(VenueId::Binance, BINANCE_20, KEEP);
    let bitstamp = decode(VenueId::Bitstamp, bitstamp_100(), KEEP);
    let mut merged = MergedBook::default();
    c.bench_function("merge_2x10", |b| {
        b.iter(|| merge_two(black_box(&binance), black_box(&bitstamp), &mut merged))
    });
    let pairs = simulated_pairs();
    let mut next = pairs.iter().cycle();
    c.bench_function("merge_2x10_varied", |b| {
        b.iter(|| {
            let (binance, bitstamp) = next.next().expect("cycle of a non-empty list");
            merge_two(black_box(binance), black_box(bitstamp), &mut merged)
        })
    });

    for venues in [8, 16] {
        let mut many = ManyVenues::new(venues);
        c.bench_function(&format!("merge_{venues}x10"), |b| {
            b.iter(|| {
                black_box(many.merge());
            })
        });
    }

    let mut plain = EightVenueSummaries::new(Units::Plain);
    c.bench_function("summarize_8x10", |b| {
        b.iter(|| {
            black_box(plain.after_a_book());
        })
    });
    let mut converted = EightVenueSummaries::new(Units::Converted);
    c.bench_function("summarize_8x10_converted", |b| {
        b.iter(|| {
            black_box(converted.after_a_book());
        })
    });
    let mut notional = EightVenueSummaries::new(Units::Notional);
    c.bench_function("summarize_8x10_notional", |b| {
        b.iter(|| {
            black_box(notional.after_a_book());
        })
    });
    c.bench_function("summarize_8x10_rate_moved", |b| {
        b.iter(|| {
            black_box(converted.after_a_rate());
        })
    });

    let bitstamp_frame = bitstamp_100();
    let mut parse_merge = ParseMerge::new();
    c.bench_function("e2e_parse_merge", |b| {
        b.iter(|| {
            black_box(parse_merge.run(black_box(BINANCE_20), black_box(bitstamp_frame)));
        })
    });
    // The same, through the merger's own summary, without and with the default bands.
    let mut parse_summarize = ParseSummarize::new();
    let bands = mergebook::config::defaults::BANDS_BPS;
    for (name, bands) in [
        ("e2e_parse_summarize", &[][..]),
        ("e2e_parse_summarize_bands", &bands[..]),
    ] {
        c.bench_function(name, |b| {
            b.iter(|| {
                black_box(parse_summarize.run(
                    black_box(BINANCE_20),
                    black_box(bitstamp_frame),
                    bands,
                ));
            })
        });
    }
    c.bench_function("bands_2x10", |b| {
        b.iter(|| {
            black_box(parse_summarize.bands(black_box(&bands)));
        })
    });
}

/// Quotes and bands over eight venues' whole books of 1,000 levels a side.
fn whole_books(c: &mut Criterion) {
    use mergebook::merger::quote::{QuoteRequest, QuoteSide, Target};
    let mut books = EightWholeBooks::new();
    let request = QuoteRequest {
        instrument: 0,
        side: QuoteSide::Buy,
        target: Target::Quantity(FixedPoint::from_raw(25 * 100_000_000)),
        all_in: false,
    };
    let answer = books.quote(&request);
    assert!(!answer.exhausted && answer.fills.iter().map(|f| f.levels).sum::<u32>() > 100);
    c.bench_function("quote_25btc_8x1000", |b| {
        b.iter(|| black_box(books.quote(black_box(&request))))
    });
    let bands = mergebook::config::defaults::BANDS_BPS;
    c.bench_function("bands_8x1000", |b| {
        b.iter(|| {
            black_box(books.bands(black_box(&bands)));
        })
    });
}

fn mailboxes(c: &mut Criterion) {
    let book = decode(VenueId::Binance, BINANCE_20, KEEP);
    let (mut sender, mut receiver) = mailbox(TopBook::default());
    c.bench_function("mailbox_send_recv", |b| {
        b.iter(|| {
            sender
                .publish_with(|slot| -> Result<(), ()> {
                    slot.copy_from(black_box(&book));
                    Ok(())
                })
                .unwrap();
            receiver.take();
            black_box(receiver.latest().bids.len())
        })
    });
}

/// The merger's take of a book published on another core, and its copy (what
/// `Consolidation::apply` does), with and without the prefetch of the book's lines
/// before the take's swap (`mailbox::Receiver::take_prefetching`). 20 levels a side, the
/// loadtest's depth. A producer thread publishes the recorded Binance book each time an
/// iteration asks for one, then takes back its next slot as the readers do; the iteration
/// waits until it is published and times the take and the copy alone (two clock reads
/// included: about 50 ns here). Nothing else runs: on two cores the threads have one each.
fn cross_core_takes(c: &mut Criterion) {
    const DEPTH: usize = 20;
    let book = decode(VenueId::Binance, BINANCE_20, DEPTH);
    for (name, bytes_read) in [
        ("mailbox_take_cross_core_20", [const { 0..0 }; 8]),
        (
            "mailbox_take_cross_core_20_prefetched",
            VenueFeed::bytes_read(DEPTH),
        ),
    ] {
        let (mut sender, mut receiver) = mailbox(VenueFeed::default());
        let asked = Arc::new(AtomicU64::new(0));
        let published = Arc::new(AtomicU64::new(0));
        let producer = std::thread::spawn({
            let (asked, published) = (Arc::clone(&asked), Arc::clone(&published));
            move || {
                let mut done = 0;
                loop {
                    let wanted = asked.load(Ordering::Acquire);
                    if wanted == u64::MAX {
                        return;
                    }
                    if wanted == done {
                        std::hint::spin_loop();
                        continue;
                    }
                    sender
                        .publish_with(|feed| -> Result<(), ()> {
                            feed.state = VenueState::Synced;
                            feed.book.copy_from(&book);
                            Ok(())
                        })
                        .unwrap();
                    done = wanted;
                    published.store(done, Ordering::Release);
                    sender.prepare(|feed| feed.book.clear_writing(DEPTH, DEPTH));
                }
            }
        });
        let mut merger_copy = TopBook::default();
        c.bench_function(name, |b| {
            b.iter_custom(|iterations| {
                let mut total = Duration::ZERO;
                for _ in 0..iterations {
                    let wanted = asked.fetch_add(1, Ordering::AcqRel) + 1;
                    while published.load(Ordering::Acquire) < wanted {
                        std::hint::spin_loop();
                    }
                    let start = Instant::now();
                    let took = receiver.take_prefetching(black_box(&bytes_read));
                    merger_copy.copy_from(&receiver.latest().book);
                    total += start.elapsed();
                    assert!(took && merger_copy.bids.len() == DEPTH);
                }
                total
            })
        });
        asked.store(u64::MAX, Ordering::Release);
        producer
            .join()
            .expect("the producer thread runs to its end");
    }
}

/// What the reader records per frame: one counter increment and one histogram sample,
/// into its thread-local handles (as the service does; flushing every 100 ms is not
/// per frame and not included).
fn metrics(c: &mut Criterion) {
    let metrics = mergebook::metrics::Metrics::new();
    let venue = metrics.for_venue(VenueId::Binance);
    c.bench_function("metrics_record", |b| {
        b.iter(|| {
            venue.messages.inc();
            venue.decode_seconds.observe(black_box(7.3e-7));
        })
    });
}

/// Diff mode: decoding one typical recorded event, and applying it to the recorded
/// 1000-level book (the event's two levels exist, so each application updates in place).
fn diff_books(c: &mut Criterion) {
    let event_frame = typical_diff_event();
    let mut event = mergebook::book::BookUpdate::with_capacity(MAX_BOOK_LEVELS);
    c.bench_function("binance_diff_decode", |b| {
        b.iter(|| {
            VenueId::Binance
                .decode_diff(black_box(event_frame), MAX_BOOK_LEVELS, &mut event)
                .map(drop)
        })
    });
    // Decoded here, not left to the bench above, which a filter may skip.
    VenueId::Binance
        .decode_diff(event_frame, MAX_BOOK_LEVELS, &mut event)
        .expect("the typical event decodes");
    let mut book = nknusdt_book();
    book.apply(&event);
    c.bench_function("book_apply_diff", |b| {
        b.iter(|| book.apply(black_box(&event)))
    });
    let mut handover = WholeBookHandover::new();
    c.bench_function("book_apply_diff_full_depth", |b| {
        b.iter(|| handover.apply(black_box(&event)))
    });
}

/// Kraken: a snapshot's decode (beside serde_json's, below), an update's decode, apply
/// and cut, and the checksum verified after it (the checksum's share of an update).
fn kraken(c: &mut Criterion) {
    let mut snapshot = mergebook::book::BookUpdate::with_capacity(MAX_BOOK_LEVELS);
    let snapshot_frame = kraken_snapshot();
    c.bench_function("kraken_decode_snapshot", |b| {
        b.iter(|| {
            VenueId::Kraken
                .decode_diff(black_box(snapshot_frame), MAX_BOOK_LEVELS, &mut snapshot)
                .map(drop)
        })
    });
    let mut kraken = KrakenBook::new();
    let update = kraken_update();
    c.bench_function("kraken_update", |b| {
        b.iter(|| kraken.apply(black_box(update)))
    });
    kraken.apply(update);
    assert_eq!(
        kraken.checksum(),
        kraken.update.checksum,
        "the recorded checksum"
    );
    c.bench_function("kraken_checksum", |b| {
        b.iter(|| black_box(&kraken).checksum())
    });
    let mut after_update = KrakenChecksumAfterUpdate::new();
    c.bench_function("kraken_checksum_after_update", |b| {
        b.iter(|| after_update.next())
    });
}

/// Bybit: a snapshot's decode (beside serde_json's, below), and a delta's decode, apply
/// and cut.
fn bybit(c: &mut Criterion) {
    let mut snapshot = mergebook::book::BookUpdate::with_capacity(MAX_BOOK_LEVELS);
    let snapshot_frame = bybit_snapshot();
    c.bench_function("bybit_decode_snapshot", |b| {
        b.iter(|| {
            VenueId::Bybit
                .decode_diff(black_box(snapshot_frame), MAX_BOOK_LEVELS, &mut snapshot)
                .map(drop)
        })
    });
    let mut bybit = BybitBook::new();
    let delta = bybit_delta();
    c.bench_function("bybit_delta", |b| b.iter(|| bybit.apply(black_box(delta))));
}

/// OKX: the `books` snapshot's and a `books5` message's decode (beside serde_json's,
/// above), an update's decode, apply and checksum check, and the checksum alone.
fn okx(c: &mut Criterion) {
    let mut snapshot = mergebook::book::BookUpdate::with_capacity(MAX_BOOK_LEVELS);
    let snapshot_frame = okx_snapshot();
    c.bench_function("okx_decode_snapshot", |b| {
        b.iter(|| {
            VenueId::Okx
                .decode_diff(black_box(snapshot_frame), MAX_BOOK_LEVELS, &mut snapshot)
                .map(drop)
        })
    });
    let books5 = okx_books5();
    let mut top = TopBook::default();
    c.bench_function("okx_decode_books5", |b| {
        b.iter(|| {
            VenueId::Okx
                .decode(black_box(books5), KEEP, &mut top)
                .map(drop)
        })
    });
    let mut okx = OkxBook::new();
    let update = okx_update();
    assert!(okx.apply(update), "the recorded checksum");
    c.bench_function("okx_update", |b| b.iter(|| okx.apply(black_box(update))));
    c.bench_function("okx_checksum", |b| b.iter(|| black_box(&okx).checksum()));
}

/// The Coinbase Exchange feed: the full-depth snapshot's decode (beside serde_json's,
/// above), and an update's decode and apply.
fn coinbase_exchange(c: &mut Criterion) {
    let mut snapshot = mergebook::book::BookUpdate::with_capacity(MAX_BOOK_LEVELS);
    let snapshot_frame = coinbase_exchange_snapshot();
    c.bench_function("coinbase_exchange_decode_snapshot", |b| {
        b.iter(|| {
            VenueId::CoinbaseExchange
                .decode_diff(black_box(snapshot_frame), MAX_BOOK_LEVELS, &mut snapshot)
                .map(drop)
        })
    });
    let mut book = UnsequencedBook::new(VenueId::CoinbaseExchange, coinbase_exchange_snapshot());
    let update = coinbase_exchange_update();
    c.bench_function("coinbase_exchange_update", |b| {
        b.iter(|| book.apply(black_box(update)))
    });
    // The same update through the feed core (decode, apply, publish), its book's audits
    // off and on: what audits cost the hot path while none is under way.
    for (name, audited) in [
        ("coinbase_exchange_core_update", false),
        ("coinbase_exchange_core_update_audited", true),
    ] {
        let mut core = CoinbaseExchangeCore::new(audited);
        c.bench_function(name, |b| b.iter(|| core.apply(black_box(update))));
    }
}

/// Coinbase Advanced Trade: the recorded snapshot's decode (beside serde_json's, above),
/// and an update's decode and apply.
fn coinbase(c: &mut Criterion) {
    let mut snapshot = mergebook::book::BookUpdate::with_capacity(MAX_BOOK_LEVELS);
    let snapshot_frame = coinbase_snapshot();
    c.bench_function("coinbase_decode_snapshot", |b| {
        b.iter(|| {
            VenueId::Coinbase
                .decode_diff(black_box(snapshot_frame), MAX_BOOK_LEVELS, &mut snapshot)
                .map(drop)
        })
    });
    let mut book = UnsequencedBook::new(VenueId::Coinbase, snapshot_frame);
    let update = coinbase_update();
    c.bench_function("coinbase_update", |b| {
        b.iter(|| book.apply(black_box(update)))
    });
}

/// Binance futures: a recorded diff event (`pu` chain) decoded, beside serde_json's decode
/// of it into owned values, its numbers parsed as f64 (the Binance reference's way).
fn binance_futures(c: &mut Criterion) {
    #[derive(serde::Deserialize)]
    struct Frame {
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        stream: String,
        data: Event,
    }
    #[derive(serde::Deserialize)]
    #[allow(non_snake_case, dead_code)] // the wire's names, read by serde
    struct Event {
        e: String,
        E: u64,
        T: u64,
        s: String,
        U: u64,
        u: u64,
        pu: u64,
        b: Vec<(String, String)>,
        a: Vec<(String, String)>,
    }
    fn levels(side: &[(String, String)]) -> Vec<(f64, f64)> {
        side.iter()
            .map(|(price, size)| (price.parse().unwrap(), size.parse().unwrap()))
            .collect()
    }
    let frame = binance_futures_event();
    let mut event = mergebook::book::BookUpdate::with_capacity(MAX_BOOK_LEVELS);
    c.bench_function("binance_futures_diff_decode", |b| {
        b.iter(|| {
            VenueId::BinanceUsdm
                .decode_diff(black_box(&frame), MAX_BOOK_LEVELS, &mut event)
                .map(drop)
        })
    });
    c.bench_function("binance_futures_diff_decode_serde_json", |b| {
        b.iter(|| {
            let frame: Frame = serde_json::from_slice(black_box(&frame)).unwrap();
            (levels(&frame.data.b), levels(&frame.data.a))
        })
    });
}

/// Gate: a recorded `order_book_update` event of each market decoded, beside serde_json's
/// decode of it into owned values, its numbers parsed as f64 (the Binance reference's way).
fn gate(c: &mut Criterion) {
    #[derive(serde::Deserialize)]
    #[allow(dead_code)] // read by serde, kept to mirror the frame
    struct Frame<L> {
        time: u64,
        channel: String,
        event: String,
        result: Event<L>,
    }
    #[derive(serde::Deserialize)]
    #[allow(non_snake_case, dead_code)] // the wire's names, read by serde
    struct Event<L> {
        t: u64,
        s: String,
        U: u64,
        u: u64,
        b: Vec<L>,
        a: Vec<L>,
    }
    #[derive(serde::Deserialize)]
    struct Object {
        p: String,
        s: f64,
    }
    let spot = gate_spot_event();
    let futures = gate_futures_event();
    let mut event = mergebook::book::BookUpdate::with_capacity(MAX_BOOK_LEVELS);
    for (name, venue, frame) in [
        ("gate_diff_decode", VenueId::Gate, &spot),
        ("gate_futures_diff_decode", VenueId::GateFutures, &futures),
    ] {
        c.bench_function(name, |b| {
            b.iter(|| {
                venue
                    .decode_diff(black_box(frame), MAX_BOOK_LEVELS, &mut event)
                    .map(drop)
            })
        });
    }
    c.bench_function("gate_diff_decode_serde_json", |b| {
        b.iter(|| {
            let frame: Frame<(String, String)> = serde_json::from_slice(black_box(&spot)).unwrap();
            let levels = |side: &[(String, String)]| -> Vec<(f64, f64)> {
                let parse = |(p, a): &(String, String)| (p.parse().unwrap(), a.parse().unwrap());
                side.iter().map(parse).collect()
            };
            (levels(&frame.result.b), levels(&frame.result.a))
        })
    });
    c.bench_function("gate_futures_diff_decode_serde_json", |b| {
        b.iter(|| {
            let frame: Frame<Object> = serde_json::from_slice(black_box(&futures)).unwrap();
            let levels = |side: &[Object]| -> Vec<(f64, f64)> {
                side.iter()
                    .map(|level| (level.p.parse().unwrap(), level.s))
                    .collect()
            };
            (levels(&frame.result.b), levels(&frame.result.a))
        })
    });
}

/// KuCoin: a recorded `trade.l2update` message decoded (its change and the change's own
/// sequence), beside serde_json's decode of it into owned values, its numbers parsed as
/// f64 (the Binance reference's way).
fn kucoin(c: &mut Criterion) {
    #[derive(serde::Deserialize)]
    #[allow(dead_code)] // read by serde, kept to mirror the frame
    struct Frame {
        data: Data,
        subject: String,
        topic: String,
        r#type: String,
    }
    #[derive(serde::Deserialize)]
    #[allow(non_snake_case, dead_code)] // the wire's names, read by serde
    struct Data {
        sequenceStart: u64,
        sequenceEnd: u64,
        symbol: String,
        changes: Changes,
    }
    #[derive(serde::Deserialize)]
    struct Changes {
        asks: Vec<(String, String, String)>,
        bids: Vec<(String, String, String)>,
    }
    let frame = kucoin_event();
    let mut event = mergebook::book::BookUpdate::with_capacity(MAX_BOOK_LEVELS);
    c.bench_function("kucoin_diff_decode", |b| {
        b.iter(|| {
            VenueId::Kucoin
                .decode_diff(black_box(&frame), MAX_BOOK_LEVELS, &mut event)
                .map(drop)
        })
    });
    c.bench_function("kucoin_diff_decode_serde_json", |b| {
        b.iter(|| {
            let frame: Frame = serde_json::from_slice(black_box(&frame)).unwrap();
            let levels = |side: &[(String, String, String)]| -> Vec<(f64, f64, u64)> {
                let parse = |(p, a, id): &(String, String, String)| {
                    (p.parse().unwrap(), a.parse().unwrap(), id.parse().unwrap())
                };
                side.iter().map(parse).collect()
            };
            (
                levels(&frame.data.changes.bids),
                levels(&frame.data.changes.asks),
            )
        })
    });
}

/// KuCoin futures: the recorded `obu` delta decoded, beside serde_json's decode of it into
/// owned values, its numbers parsed as f64 (the Binance reference's way).
fn kucoin_futures(c: &mut Criterion) {
    #[derive(serde::Deserialize)]
    #[allow(non_snake_case, dead_code)] // the wire's names, read by serde
    struct Frame {
        T: String,
        dp: String,
        t: String,
        P: u64,
        d: Data,
    }
    #[derive(serde::Deserialize)]
    #[allow(non_snake_case, dead_code)] // the wire's names, read by serde
    struct Data {
        a: Vec<(String, String)>,
        b: Vec<(String, String)>,
        C: u64,
        s: String,
        M: u64,
        O: u64,
    }
    let frame = kucoin_futures_delta();
    let mut event = mergebook::book::BookUpdate::with_capacity(MAX_BOOK_LEVELS);
    c.bench_function("kucoin_futures_diff_decode", |b| {
        b.iter(|| {
            VenueId::KucoinFutures
                .decode_diff_binary(black_box(&frame), MAX_BOOK_LEVELS, &mut event)
                .map(drop)
        })
    });
    c.bench_function("kucoin_futures_diff_decode_serde_json", |b| {
        b.iter(|| {
            let frame: Frame = serde_json::from_slice(black_box(&frame)).unwrap();
            let levels = |side: &[(String, String)]| -> Vec<(f64, f64)> {
                let parse = |(p, a): &(String, String)| (p.parse().unwrap(), a.parse().unwrap());
                side.iter().map(parse).collect()
            };
            (levels(&frame.d.b), levels(&frame.d.a))
        })
    });
}

/// Hyperliquid: the recorded 20-level `l2Book` frame decoded, beside serde_json's decode
/// of it into owned values, its numbers parsed as f64 (the Binance reference's way).
fn hyperliquid(c: &mut Criterion) {
    #[derive(serde::Deserialize)]
    struct Frame {
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        channel: String,
        data: Data,
    }
    #[derive(serde::Deserialize)]
    struct Data {
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        coin: String,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        time: u64,
        levels: (Vec<Level>, Vec<Level>),
    }
    #[derive(serde::Deserialize)]
    struct Level {
        px: String,
        sz: String,
        #[allow(dead_code)] // read by serde, kept to mirror the frame
        n: u64,
    }
    fn levels(side: &[Level]) -> Vec<(f64, f64)> {
        side.iter()
            .map(|level| (level.px.parse().unwrap(), level.sz.parse().unwrap()))
            .collect()
    }
    let frame = hyperliquid_20();
    let mut out = TopBook::default();
    c.bench_function("hyperliquid_decode_20", |b| {
        b.iter(|| {
            VenueId::Hyperliquid
                .decode(black_box(&frame), KEEP, &mut out)
                .map(drop)
        })
    });
    c.bench_function("hyperliquid_decode_20_serde_json", |b| {
        b.iter(|| {
            let frame: Frame = serde_json::from_slice(black_box(&frame)).unwrap();
            let (bids, asks) = &frame.data.levels;
            (levels(bids), levels(asks))
        })
    });
}

/// Where `record_frame`'s writer puts its lines: counted, then forgotten (the reader's
/// cost is measured, not the disk's).
struct CountedLines(Arc<std::sync::atomic::AtomicUsize>);

impl mergebook::record::Storage for CountedLines {
    fn append(&mut self, _: usize, _: &[u8], _: Instant) -> std::io::Result<()> {
        self.0.fetch_add(1, Ordering::Release);
        Ok(())
    }
    fn tick(&mut self, _: Instant) -> std::io::Result<()> {
        Ok(())
    }
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// What recording costs a reader per frame: the recorded Binance `depth20` frame copied
/// into a buffer of its connection's pool and queued to the writer thread, which runs on
/// the other core. Timed in batches of half the pool; between batches, untimed, the
/// writer catches up, so that every frame is queued, none dropped.
fn recording(c: &mut Criterion) {
    use mergebook::record::{EventKind, RecordMetrics, Recorder};
    const POOL: usize = 1024;
    let written = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = || prometheus::IntCounter::new("c", "c").expect("valid");
    let metrics = RecordMetrics {
        dropped: vec![counter()],
        written_bytes: counter(),
        errors: counter(),
    };
    let storage = CountedLines(Arc::clone(&written));
    let (recorder, mut readers) =
        Recorder::start_with(storage, POOL, &[(VenueId::Binance, 0)], metrics).expect("thread");
    let mut reader = readers.pop().expect("one connection");
    let mut recorded = 0;
    c.bench_function("record_frame", |b| {
        b.iter_custom(|iterations| {
            let mut took = Duration::ZERO;
            let mut done = 0;
            while done < iterations {
                while written.load(Ordering::Acquire) < recorded {
                    std::hint::spin_loop();
                }
                let batch = (iterations - done).min(POOL as u64 / 2);
                let started = Instant::now();
                let mut queued = 0;
                for _ in 0..batch {
                    queued +=
                        u64::from(reader.record(EventKind::Received, 1, "", black_box(BINANCE_20)));
                }
                took += started.elapsed();
                assert_eq!(queued, batch, "a frame was dropped");
                recorded += batch as usize;
                done += batch;
            }
            took
        })
    });
    drop(reader);
    recorder.finish();
}

criterion_group!(
    benches,
    decoders,
    whole_books,
    diff_books,
    kraken,
    bybit,
    okx,
    serde_reference,
    bybit_serde_reference,
    okx_serde_reference,
    coinbase_exchange,
    coinbase_exchange_serde_reference,
    coinbase,
    coinbase_serde_reference,
    hyperliquid,
    binance_futures,
    gate,
    bitget,
    bitget_serde_reference,
    deribit,
    deribit_serde_reference,
    kucoin,
    kucoin_futures,
    merging,
    mailboxes,
    cross_core_takes,
    metrics,
    recording
);
criterion_main!(benches);
