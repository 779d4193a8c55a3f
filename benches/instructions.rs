//! Instruction-count benches: deterministic where wall-clock time is not (a shared VM
//! varies ±50% between runs of unchanged code). Run through callgrind by
//! `scripts/bench-instructions`, which counts the instructions executed inside
//! `measured` and divides by the iterations; run directly, this does the work uncounted.
//!
//! `instructions measure <workload>` — workloads have the Criterion benches' names. Any
//! other invocation (`cargo bench` runs every bench target) only points to the script.

mod workloads;

use mergebook::book::TopBook;
use mergebook::fixed::FixedPoint;
use mergebook::merger::kway::MergedBook;
use mergebook::venue::VenueId;
use std::hint::black_box;
use workloads::*;

/// Iterations counted; the total is divided by this.
const ITERATIONS: u32 = 1_000;

/// The only function callgrind counts (`--toggle-collect`).
#[inline(never)]
fn measured(iterations: u32, work: &mut dyn FnMut()) {
    for _ in 0..iterations {
        work();
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let workload = match args.as_slice() {
        [command, workload] if command == "measure" => workload.as_str(),
        _ => {
            println!("instruction counts: scripts/bench-instructions (callgrind)");
            return;
        }
    };
    let mut out = TopBook::default();
    let bitstamp_20 = bitstamp_20();
    let binance_sbe_20 = binance_sbe_20();
    let hyperliquid_frame = hyperliquid_20();
    let futures_frame = binance_futures_event();
    let mut futures_event = mergebook::book::BookUpdate::with_capacity(MAX_BOOK_LEVELS);
    let (gate_spot_frame, gate_futures_frame) = (gate_spot_event(), gate_futures_event());
    let (kucoin_frame, kucoin_futures_frame) = (kucoin_event(), kucoin_futures_delta());
    let bitstamp_100 = bitstamp_100();
    let binance_book = decode(VenueId::Binance, BINANCE_20, KEEP);
    let bitstamp_book = decode(VenueId::Bitstamp, bitstamp_100, KEEP);
    let mut merged = MergedBook::default();
    let mut parse_merge = ParseMerge::new();
    let diff_frame = typical_diff_event();
    let mut diff_event = mergebook::book::BookUpdate::with_capacity(MAX_BOOK_LEVELS);
    let mut applied_event = mergebook::book::BookUpdate::default();
    VenueId::Binance
        .decode_diff(diff_frame, MAX_BOOK_LEVELS, &mut applied_event)
        .expect("decodes");
    let mut depth_book = nknusdt_book();
    let mut kraken_book = KrakenBook::new();
    let (kraken_snapshot_frame, kraken_update_frame) = (kraken_snapshot(), kraken_update());
    let mut kraken_snapshot_out = mergebook::book::BookUpdate::with_capacity(MAX_BOOK_LEVELS);
    let mut kraken_after_update = KrakenChecksumAfterUpdate::new();
    let mut bybit_book = BybitBook::new();
    let (bybit_snapshot_frame, bybit_delta_frame) = (bybit_snapshot(), bybit_delta());
    let mut bybit_snapshot_out = mergebook::book::BookUpdate::with_capacity(MAX_BOOK_LEVELS);
    let mut okx_book = OkxBook::new();
    let (okx_snapshot_frame, okx_update_frame, okx_books5_frame) =
        (okx_snapshot(), okx_update(), okx_books5());
    let mut okx_snapshot_out = mergebook::book::BookUpdate::with_capacity(MAX_BOOK_LEVELS);
    let mut bitget_book = BitgetBook::new();
    let (bitget_snapshot_frame, bitget_update_frame, bitget_books5_frame) =
        (bitget_snapshot(), bitget_update(), bitget_books5());
    let mut bitget_snapshot_out = mergebook::book::BookUpdate::with_capacity(MAX_BOOK_LEVELS);
    let (deribit_snapshot_frame, deribit_window_frame) = (deribit_snapshot(), deribit_window());
    let mut deribit_snapshot_out = mergebook::book::BookUpdate::with_capacity(MAX_BOOK_LEVELS);
    let (exchange_snapshot_frame, exchange_update_frame) =
        (coinbase_exchange_snapshot(), coinbase_exchange_update());
    let mut exchange_book =
        UnsequencedBook::new(VenueId::CoinbaseExchange, exchange_snapshot_frame);
    let (advanced_snapshot_frame, advanced_update_frame) = (coinbase_snapshot(), coinbase_update());
    let mut advanced_book = UnsequencedBook::new(VenueId::Coinbase, advanced_snapshot_frame);
    let mut coinbase_snapshot_out = mergebook::book::BookUpdate::with_capacity(MAX_BOOK_LEVELS);
    let varied = |frames: Vec<Vec<u8>>, venue: VenueId| {
        let mut out = mergebook::book::TopBook::default();
        let mut index = 0;
        move || {
            let frame = &frames[index % frames.len()];
            index += 1;
            black_box(
                venue
                    .decode(black_box(frame), KEEP, &mut out)
                    .expect("decodes"),
            );
        }
    };
    let mut work: Box<dyn FnMut()> = match workload {
        "binance_decode_20_varied" => Box::new(varied(binance_20_varied(), VenueId::Binance)),
        "bitstamp_decode_100_varied" => Box::new(varied(bitstamp_100_varied(), VenueId::Bitstamp)),
        "binance_decode_20" => Box::new(|| {
            let result = VenueId::Binance.decode(black_box(BINANCE_20), KEEP, &mut out);
            black_box(result.expect("decodes"));
        }),
        "binance_decode_20_in_a_unit" => Box::new(|| {
            let hundredths = mergebook::fixed::UnitSize::parse("0.01").expect("a unit size");
            let result = hundredths
                .decoding(|| VenueId::Binance.decode(black_box(BINANCE_20), KEEP, &mut out));
            black_box(result.expect("decodes"));
        }),
        "binance_sbe_decode_depth20" => Box::new(|| {
            let result =
                VenueId::BinanceSbe.decode_binary(black_box(&binance_sbe_20), KEEP, &mut out);
            black_box(result.expect("decodes"));
        }),
        "bitstamp_decode_20" => Box::new(|| {
            let result = VenueId::Bitstamp.decode(black_box(&bitstamp_20), KEEP, &mut out);
            black_box(result.expect("decodes"));
        }),
        "bitstamp_decode_100" => Box::new(|| {
            let result = VenueId::Bitstamp.decode(black_box(bitstamp_100), KEEP, &mut out);
            black_box(result.expect("decodes"));
        }),
        "fixed_point_parse" => Box::new(|| {
            black_box(FixedPoint::parse(black_box(PRICE)).expect("parses"));
            black_box(FixedPoint::parse(black_box(AMOUNT)).expect("parses"));
        }),
        "merge_2x10" => Box::new(|| {
            merge_two(
                black_box(&binance_book),
                black_box(&bitstamp_book),
                &mut merged,
            );
            black_box(&merged);
        }),
        "merge_8x10" => {
            let mut many = ManyVenues::new(8);
            Box::new(move || {
                black_box(many.merge());
            })
        }
        "merge_16x10" => {
            let mut many = ManyVenues::new(16);
            Box::new(move || {
                black_box(many.merge());
            })
        }
        "summarize_8x10" => {
            let mut summaries = EightVenueSummaries::new(Units::Plain);
            Box::new(move || {
                black_box(summaries.after_a_book());
            })
        }
        "summarize_8x10_converted" => {
            let mut summaries = EightVenueSummaries::new(Units::Converted);
            Box::new(move || {
                black_box(summaries.after_a_book());
            })
        }
        "summarize_8x10_notional" => {
            let mut summaries = EightVenueSummaries::new(Units::Notional);
            Box::new(move || {
                black_box(summaries.after_a_book());
            })
        }
        "summarize_8x10_rate_moved" => {
            let mut summaries = EightVenueSummaries::new(Units::Converted);
            Box::new(move || {
                black_box(summaries.after_a_rate());
            })
        }
        "e2e_parse_merge" => Box::new(|| {
            black_box(parse_merge.run(black_box(BINANCE_20), black_box(bitstamp_100)));
        }),
        "binance_diff_decode" => Box::new(|| {
            let result = VenueId::Binance.decode_diff(
                black_box(diff_frame),
                MAX_BOOK_LEVELS,
                &mut diff_event,
            );
            black_box(result.expect("decodes"));
        }),
        "book_apply_diff" => Box::new(|| {
            depth_book.apply(black_box(&applied_event));
            black_box(&depth_book);
        }),
        "kraken_decode_snapshot" => Box::new(|| {
            let result = VenueId::Kraken.decode_diff(
                black_box(kraken_snapshot_frame),
                MAX_BOOK_LEVELS,
                &mut kraken_snapshot_out,
            );
            black_box(result.expect("decodes"));
        }),
        "kraken_update" => Box::new(|| kraken_book.apply(black_box(kraken_update_frame))),
        "kraken_checksum" => {
            kraken_book.apply(kraken_update_frame);
            Box::new(|| {
                black_box(black_box(&kraken_book).checksum());
            })
        }
        "kraken_checksum_after_update" => Box::new(|| {
            black_box(kraken_after_update.next());
        }),
        "bybit_decode_snapshot" => Box::new(|| {
            let result = VenueId::Bybit.decode_diff(
                black_box(bybit_snapshot_frame),
                MAX_BOOK_LEVELS,
                &mut bybit_snapshot_out,
            );
            black_box(result.expect("decodes"));
        }),
        "bybit_delta" => Box::new(|| bybit_book.apply(black_box(bybit_delta_frame))),
        "okx_decode_snapshot" => Box::new(|| {
            let result = VenueId::Okx.decode_diff(
                black_box(okx_snapshot_frame),
                MAX_BOOK_LEVELS,
                &mut okx_snapshot_out,
            );
            black_box(result.expect("decodes"));
        }),
        "okx_decode_books5" => Box::new(|| {
            let result = VenueId::Okx.decode(black_box(okx_books5_frame), KEEP, &mut out);
            black_box(result.expect("decodes"));
        }),
        "okx_update" => Box::new(|| {
            assert!(okx_book.apply(black_box(okx_update_frame)));
        }),
        "okx_checksum" => {
            okx_book.apply(okx_update_frame);
            Box::new(|| {
                black_box(black_box(&okx_book).checksum());
            })
        }
        "bitget_decode_snapshot" => Box::new(|| {
            let result = VenueId::Bitget.decode_diff(
                black_box(bitget_snapshot_frame),
                MAX_BOOK_LEVELS,
                &mut bitget_snapshot_out,
            );
            black_box(result.expect("decodes"));
        }),
        "bitget_decode_books5" => Box::new(|| {
            let result = VenueId::Bitget.decode(black_box(bitget_books5_frame), KEEP, &mut out);
            black_box(result.expect("decodes"));
        }),
        "bitget_update" => Box::new(|| {
            assert!(bitget_book.apply(black_box(bitget_update_frame)));
        }),
        "bitget_checksum" => {
            bitget_book.apply(bitget_update_frame);
            Box::new(|| {
                black_box(black_box(&bitget_book).checksum());
            })
        }
        "deribit_decode_snapshot" => Box::new(|| {
            let result = VenueId::Deribit.decode_diff(
                black_box(deribit_snapshot_frame),
                MAX_BOOK_LEVELS,
                &mut deribit_snapshot_out,
            );
            black_box(result.expect("decodes"));
        }),
        "deribit_decode_window" => Box::new(|| {
            let result = VenueId::Deribit.decode(black_box(deribit_window_frame), KEEP, &mut out);
            black_box(result.expect("decodes"));
        }),
        "coinbase_exchange_decode_snapshot" => Box::new(|| {
            let result = VenueId::CoinbaseExchange.decode_diff(
                black_box(exchange_snapshot_frame),
                MAX_BOOK_LEVELS,
                &mut coinbase_snapshot_out,
            );
            black_box(result.expect("decodes"));
        }),
        "coinbase_exchange_update" => {
            Box::new(|| exchange_book.apply(black_box(exchange_update_frame)))
        }
        "coinbase_exchange_core_update" => {
            let mut core = CoinbaseExchangeCore::new(false);
            Box::new(move || core.apply(black_box(exchange_update_frame)))
        }
        "coinbase_exchange_core_update_audited" => {
            let mut core = CoinbaseExchangeCore::new(true);
            Box::new(move || core.apply(black_box(exchange_update_frame)))
        }
        "coinbase_decode_snapshot" => Box::new(|| {
            let result = VenueId::Coinbase.decode_diff(
                black_box(advanced_snapshot_frame),
                MAX_BOOK_LEVELS,
                &mut coinbase_snapshot_out,
            );
            black_box(result.expect("decodes"));
        }),
        "coinbase_update" => Box::new(|| advanced_book.apply(black_box(advanced_update_frame))),
        "hyperliquid_decode_20" => Box::new(|| {
            let result = VenueId::Hyperliquid.decode(black_box(&hyperliquid_frame), KEEP, &mut out);
            black_box(result.expect("decodes"));
        }),
        "binance_futures_diff_decode" => Box::new(|| {
            let result = VenueId::BinanceUsdm.decode_diff(
                black_box(&futures_frame),
                MAX_BOOK_LEVELS,
                &mut futures_event,
            );
            black_box(result.expect("decodes"));
        }),
        "gate_diff_decode" => Box::new(|| {
            let result = VenueId::Gate.decode_diff(
                black_box(&gate_spot_frame),
                MAX_BOOK_LEVELS,
                &mut futures_event,
            );
            black_box(result.expect("decodes"));
        }),
        "gate_futures_diff_decode" => Box::new(|| {
            let result = VenueId::GateFutures.decode_diff(
                black_box(&gate_futures_frame),
                MAX_BOOK_LEVELS,
                &mut futures_event,
            );
            black_box(result.expect("decodes"));
        }),
        "kucoin_diff_decode" => Box::new(|| {
            let result = VenueId::Kucoin.decode_diff(
                black_box(&kucoin_frame),
                MAX_BOOK_LEVELS,
                &mut futures_event,
            );
            black_box(result.expect("decodes"));
        }),
        "kucoin_futures_diff_decode" => Box::new(|| {
            let result = VenueId::KucoinFutures.decode_diff_binary(
                black_box(&kucoin_futures_frame),
                MAX_BOOK_LEVELS,
                &mut futures_event,
            );
            black_box(result.expect("decodes"));
        }),
        _ => {
            eprintln!(
                "usage: instructions measure <binance_decode_20 | binance_decode_20_in_a_unit | bitstamp_decode_20 | \
                 bitstamp_decode_100 | binance_decode_20_varied | bitstamp_decode_100_varied | \
                 fixed_point_parse | merge_2x10 | merge_8x10 | merge_16x10 | summarize_8x10 | \
                 summarize_8x10_converted | summarize_8x10_notional | summarize_8x10_rate_moved | \
                 e2e_parse_merge | binance_diff_decode | \
                 book_apply_diff | kraken_decode_snapshot | kraken_update | kraken_checksum | \
                 kraken_checksum_after_update | \
                 bybit_decode_snapshot | bybit_delta | okx_decode_snapshot | \
                 okx_decode_books5 | okx_update | okx_checksum | bitget_decode_snapshot | \
                 bitget_decode_books5 | bitget_update | bitget_checksum | \
                 deribit_decode_snapshot | deribit_decode_window | \
                 coinbase_exchange_decode_snapshot | coinbase_exchange_update | \
                 coinbase_decode_snapshot | coinbase_update | binance_sbe_decode_depth20 | \
                 hyperliquid_decode_20 | binance_futures_diff_decode | gate_diff_decode | \
                 gate_futures_diff_decode | kucoin_diff_decode | \
                 kucoin_futures_diff_decode>"
            );
            std::process::exit(2);
        }
    };
    work(); // warm-up, uncounted: first-touch of the payloads and outputs
    measured(ITERATIONS, &mut *work);
    println!("{ITERATIONS}");
}
