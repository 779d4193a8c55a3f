//! The hot-path benches. Names are part of the interface (BENCHMARKS.md, saved baselines):
//! do not rename them.

use criterion::{Criterion, criterion_group, criterion_main};
use mergebook::book::TopBook;
use mergebook::fixed::FixedPoint;
use mergebook::mailbox::mailbox;
use mergebook::merge::{MergedBook, VenueBook, merge};
use mergebook::venue::VenueId;
use std::hint::black_box;

/// The recorded `btcusdt@depth20@100ms` frame (20 levels a side, 1.4 KB).
const BINANCE_20: &[u8] =
    include_bytes!("../tests/fixtures/binance/partial_depth20_BTCUSDT_combined.json");
/// Recorded `order_book_btcusd` frames (100 levels a side, 5.5 KB, Python-style spacing).
const BITSTAMP_100: &str =
    include_str!("../tests/fixtures/bitstamp/order_book_btcusd_top100_samples_2020.jsonl");
const KEEP: usize = 10;

fn bitstamp_100() -> &'static [u8] {
    BITSTAMP_100
        .lines()
        .next()
        .expect("recorded sample")
        .as_bytes()
}

/// A Bitstamp frame of the recorded shape with 20 levels a side: the recorded book cut to
/// 20 levels and encoded by the venue's own encoder.
fn bitstamp_20() -> Vec<u8> {
    let mut book = TopBook::default();
    VenueId::Bitstamp
        .decode(bitstamp_100(), 20, &mut book)
        .expect("recorded frame decodes");
    let mut frame = Vec::new();
    VenueId::Bitstamp.encode_book("order_book_btcusd", &book, 2, &mut frame);
    frame
}

fn decode(venue: VenueId, frame: &[u8], keep: usize) -> TopBook {
    let mut book = TopBook::default();
    venue
        .decode(frame, keep, &mut book)
        .expect("bench frame decodes");
    book
}

fn decoders(c: &mut Criterion) {
    let mut out = TopBook::default();
    c.bench_function("binance_decode_20", |b| {
        b.iter(|| {
            VenueId::Binance
                .decode(black_box(BINANCE_20), KEEP, &mut out)
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
    c.bench_function("fixed_point_parse", |b| {
        b.iter(|| {
            let price = FixedPoint::parse(black_box(b"35496.06000000"));
            let amount = FixedPoint::parse(black_box(b"0.29859300"));
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
}

fn merging(c: &mut Criterion) {
    let binance = decode(VenueId::Binance, BINANCE_20, KEEP);
    let bitstamp = decode(VenueId::Bitstamp, bitstamp_100(), KEEP);
    let mut merged = MergedBook::default();
    c.bench_function("merge_2x10", |b| {
        b.iter(|| {
            let inputs = [
                VenueBook {
                    venue: VenueId::Binance,
                    book: black_box(&binance),
                },
                VenueBook {
                    venue: VenueId::Bitstamp,
                    book: black_box(&bitstamp),
                },
            ];
            merge(&inputs, KEEP, &mut merged);
        })
    });

    let bitstamp_frame = bitstamp_100();
    let (mut binance_book, mut bitstamp_book) = (TopBook::default(), TopBook::default());
    c.bench_function("e2e_parse_merge", |b| {
        b.iter(|| {
            VenueId::Binance
                .decode(black_box(BINANCE_20), KEEP, &mut binance_book)
                .unwrap();
            VenueId::Bitstamp
                .decode(black_box(bitstamp_frame), KEEP, &mut bitstamp_book)
                .unwrap();
            let inputs = [
                VenueBook {
                    venue: VenueId::Binance,
                    book: &binance_book,
                },
                VenueBook {
                    venue: VenueId::Bitstamp,
                    book: &bitstamp_book,
                },
            ];
            merge(&inputs, KEEP, &mut merged);
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

criterion_group!(
    benches,
    decoders,
    serde_reference,
    merging,
    mailboxes,
    metrics
);
criterion_main!(benches);
