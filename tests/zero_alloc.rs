//! The hot path allocates nothing after warm-up: decode → mailbox → merge → merged book →
//! the fan-out to consumers.
//!
//! A counting global allocator counts the allocations made by this thread while the
//! measured section runs; it must count zero.

use mergebook::book::TopBook;
use mergebook::feed::handoff::VenueFeed;
use mergebook::mailbox::mailbox;
use mergebook::merger::kway::{Origin, VenueBook, merge};
use mergebook::publish::summary_channel;
use mergebook::venue::{Message, VenueId};
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

// SAFETY: forwards every call unchanged to the system allocator; it only counts.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|count| count.set(count.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as ours.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.with(|count| count.set(count.get() + 1));
        // SAFETY: same contract as ours.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

/// Runs `apply` on the first 9 frames (warm-up), then on the rest, which must allocate
/// nothing.
fn allocates_nothing_after_warm_up<F: AsRef<[u8]>>(
    frames: &[F],
    mut apply: impl FnMut(&[u8]),
    what: &str,
) {
    for frame in &frames[..9] {
        apply(frame.as_ref());
    }
    let before = allocations();
    for frame in &frames[9..] {
        apply(frame.as_ref());
    }
    assert_eq!(allocations() - before, 0, "{what} allocated");
}

const BINANCE: &[u8] = include_bytes!("fixtures/binance/partial_depth20_BTCUSDT_combined.json");
const BITSTAMP: &str =
    include_str!("fixtures/bitstamp/order_book_btcusd_top100_samples_2020.jsonl");

#[test]
fn decode_mailbox_merge_fan_out_allocates_nothing_after_warm_up() {
    let bitstamp = BITSTAMP.lines().next().unwrap().as_bytes();
    let frames = [(VenueId::Binance, BINANCE), (VenueId::Bitstamp, bitstamp)];
    let mut scratch = TopBook::default();
    let (mut senders, mut receivers): (Vec<_>, Vec<_>) =
        frames.iter().map(|_| mailbox(TopBook::default())).unzip();
    // The merger's output as the service has it, and a consumer that keeps up.
    let (mut publisher, mut fanout) = summary_channel();
    let mut consumer = fanout.subscribe();

    let mut step = |round: u64| {
        for ((venue, frame), sender) in frames.iter().zip(&mut senders) {
            let message = venue
                .decode(frame, 10, &mut scratch)
                .expect("recorded frame decodes");
            assert!(matches!(message, Message::Book { .. }));
            scratch.received_ns = round;
            sender
                .publish_with(|slot| -> Result<(), ()> {
                    slot.copy_from(&scratch);
                    Ok(())
                })
                .unwrap();
        }
        for receiver in &mut receivers {
            assert!(receiver.take());
        }
        let inputs = [
            VenueBook {
                origin: Origin {
                    venue: VenueId::Binance,
                    source: 0,
                },
                book: receivers[0].latest(),
            },
            VenueBook {
                origin: Origin {
                    venue: VenueId::Bitstamp,
                    source: 1,
                },
                book: receivers[1].latest(),
            },
        ];
        publisher.publish_with(|summary| {
            merge(&inputs, 10, &mut summary.book);
            assert_eq!(summary.book.bids.as_slice().len(), 10);
        });
        publisher.take_back_next_slot(10);
        assert!(fanout.forward_latest(&mut |_| {}));
        let seen = std::sync::Arc::clone(&consumer.borrow_and_update());
        assert_eq!(seen.book.bids.as_slice().len(), 10);
    };

    for round in 0..10 {
        step(round); // warm-up: lazily built statics (the SIMD searcher) are made here
    }
    let before = allocations();
    for round in 10..10_000 {
        step(round);
    }
    assert_eq!(allocations() - before, 0, "the hot path allocated");
}

/// A venue quoted in USDT merged into a BTC/USD book counted in dollars: its recorded book
/// applied, converted through a moving USDT/USD rate, its amounts (and the USD venue's)
/// made notionals, merged, and the rate handed on from the rate's own consolidation, round
/// after round.
#[test]
fn converting_a_venue_through_a_moving_rate_allocates_nothing() {
    use mergebook::merger::Consolidation;
    use mergebook::merger::summary::{Summary, VenueState};
    let text = "[simulator]\n[[instruments]]\nname = \"USDT/USD\"\n\
        symbols = { kraken = \"USDT/USD\" }\n\
        [[instruments]]\nname = \"BTC/USD\"\nprice_step = \"0.01\"\nunit = \"quote\"\n\
        symbols = { binance = \"BTCUSDT\", bitstamp = \"btcusd\" }\n\
        [[rates]]\npair = \"USDT/USD\"\ninstrument = \"USDT/USD\"\n";
    let config = mergebook::config::RawConfig::parse(text, "test")
        .and_then(|raw| raw.validate())
        .unwrap();
    let (mut rates, mut btc) = (
        Consolidation::configured(&config, 0),
        Consolidation::configured(&config, 1),
    );
    let feed = |venue: VenueId, frame: &[u8]| {
        let mut feed = VenueFeed {
            state: VenueState::Synced,
            ..VenueFeed::default()
        };
        venue.decode(frame, 20, &mut feed.book).unwrap();
        feed
    };
    let binance = feed(VenueId::Binance, BINANCE);
    let bitstamp = feed(
        VenueId::Bitstamp,
        BITSTAMP.lines().next().unwrap().as_bytes(),
    );
    let mut rate_book = VenueFeed {
        state: VenueState::Synced,
        ..VenueFeed::default()
    };
    let mut summary = Summary::default();
    let source_of = |venue| config.instruments[1].source_of(venue).unwrap();
    let (binance_source, bitstamp_source) =
        (source_of(VenueId::Binance), source_of(VenueId::Bitstamp));
    let mut round = |round: u64| {
        rate_book.book.clear();
        let level = |price| mergebook::book::Level {
            price: mergebook::fixed::FixedPoint::from_raw(price),
            amount: mergebook::fixed::FixedPoint::from_raw(100_000_000),
        };
        rate_book.book.bids.push(level(100_010_000 + round % 7));
        rate_book.book.asks.push(level(100_030_000 + round % 5));
        rates.apply(0, &rate_book);
        rates.summarize(round, &mut summary);
        btc.set_rate(0, rates.rate());
        btc.apply(binance_source, &binance);
        btc.apply(bitstamp_source, &bitstamp);
        btc.summarize(round, &mut summary);
        assert_eq!(summary.venue_state(VenueId::Binance), VenueState::Synced);
        assert!(summary.source_rate[binance_source].is_some());
    };
    for warm_up in 0..9 {
        round(warm_up);
    }
    let before = allocations();
    for measured in 9..200 {
        round(measured);
    }
    assert_eq!(allocations() - before, 0, "conversion allocated");
}

/// The counter works: the same harness sees an allocation when there is one.
#[test]
fn the_counting_allocator_counts() {
    let before = allocations();
    let boxed = std::hint::black_box(Box::new(1u64));
    drop(boxed);
    assert_eq!(allocations() - before, 1);
}

const NKNUSDT_SNAPSHOT: &[u8] =
    include_bytes!("fixtures/binance/rest_depth_snapshot_NKNUSDT_limit1000.json");
const NKNUSDT_DIFFS: &str =
    include_str!("fixtures/binance/diff_depth_NKNUSDT_combined_stream.jsonl");

/// Diff mode in steady state: decode an event → apply it to the synced full-depth book →
/// its top into the mailbox. The recorded NKNUSDT stream, after the first events.
#[test]
fn applying_diff_events_allocates_nothing_in_steady_state() {
    use mergebook::book::BookUpdate;
    use mergebook::book::diff_sync::BookSync;
    const MAX_LEVELS: usize = 5000;
    let venue = VenueId::Binance;
    let mut sync = BookSync::new(venue.facts().sequencing, MAX_LEVELS, 1000);
    let mut update = BookUpdate::with_capacity(MAX_LEVELS);
    let events: Vec<&[u8]> = NKNUSDT_DIFFS.lines().map(str::as_bytes).collect();

    venue
        .decode_diff(events[0], MAX_LEVELS, &mut update)
        .unwrap();
    sync.on_update(&update);
    let mut snapshot = BookUpdate::default();
    venue
        .decode_snapshot(NKNUSDT_SNAPSHOT, MAX_LEVELS, &mut snapshot)
        .unwrap();
    sync.on_snapshot(&snapshot);
    assert!(sync.is_synced());

    synced_events_allocate_nothing(venue, sync, &events[1..], "the diff path");
}

/// From a synced book on, each of `frames` decoded → applied (each must be) → its top
/// and its whole book into the mailbox: nothing allocates once warm.
fn synced_events_allocate_nothing<F: AsRef<[u8]>>(
    venue: VenueId,
    sync: mergebook::book::diff_sync::BookSync,
    frames: &[F],
    what: &str,
) {
    use mergebook::book::diff_sync::UpdateOutcome;
    const MAX_LEVELS: usize = 5000;
    let mut sync = sync.with_full_depth(true);
    let mut update = mergebook::book::BookUpdate::with_capacity(MAX_LEVELS);
    let (mut sender, mut receiver) = mailbox(VenueFeed::default());
    let apply = |frame: &[u8]| {
        let message = venue.decode_diff(frame, MAX_LEVELS, &mut update).unwrap();
        assert!(matches!(message, Message::Book { .. }));
        assert_eq!(sync.on_update(&update), UpdateOutcome::Applied);
        sender
            .publish_with(|feed| -> Result<(), ()> {
                sync.write_top(10, 0, &mut feed.book);
                sync.write_full_depth(&mut feed.full_depth);
                Ok(())
            })
            .unwrap();
        assert!(receiver.take());
        assert!(receiver.latest().full_depth.is_present());
    };
    allocates_nothing_after_warm_up(frames, apply, what);
}

/// A diff venue's path in steady state, from `snapshot` on: decode each of `frames` →
/// check its sequence → apply it → `then` (a cut, a checksum check) → its top into the
/// mailbox. Nothing allocates once warm.
fn a_diff_path_allocates_nothing<F: AsRef<[u8]>>(
    venue: VenueId,
    snapshot: &[u8],
    frames: &[F],
    mut then: impl FnMut(&mut mergebook::book::diff_sync::BookSync, &mergebook::book::BookUpdate),
    what: &str,
) {
    use mergebook::book::BookUpdate;
    use mergebook::book::diff_sync::{BookSync, UpdateOutcome};
    const MAX_LEVELS: usize = 1000;
    let mut update = BookUpdate::with_capacity(MAX_LEVELS);
    venue
        .decode_diff(snapshot, MAX_LEVELS, &mut update)
        .unwrap();
    let mut sync = BookSync::new(venue.facts().sequencing, MAX_LEVELS, 1000).with_full_depth(true);
    sync.on_snapshot(&update);
    let (mut sender, mut receiver) = mailbox(VenueFeed::default());
    let apply = |frame: &[u8]| {
        let message = venue.decode_diff(frame, MAX_LEVELS, &mut update).unwrap();
        assert!(matches!(message, Message::Book { .. }));
        assert_eq!(sync.on_update(&update), UpdateOutcome::Applied);
        then(&mut sync, &update);
        sender
            .publish_with(|feed| -> Result<(), ()> {
                sync.write_top(10, 0, &mut feed.book);
                sync.write_full_depth(&mut feed.full_depth);
                Ok(())
            })
            .unwrap();
        assert!(receiver.take());
        assert!(receiver.latest().full_depth.is_present());
    };
    allocates_nothing_after_warm_up(frames, apply, what);
}

/// A venue's book after `snapshot`, as its decoder reads it.
fn decoded(venue: VenueId, snapshot: &str) -> mergebook::book::BookUpdate {
    let mut update = mergebook::book::BookUpdate::default();
    venue
        .decode_diff(snapshot.as_bytes(), 1000, &mut update)
        .unwrap();
    update
}

const KRAKEN_SNAPSHOT: &str =
    include_str!("fixtures/kraken/v2_book_docs_example_BTCUSD_snapshot.json");

/// Kraken's path in steady state: decode an update → apply it → cut the book to the depth
/// subscribed → verify its checksum → its top into the mailbox. The updates change the
/// recorded book's amounts, each with the checksum of the book after it.
#[test]
fn a_kraken_update_and_its_checksum_allocate_nothing() {
    use mergebook::book::{BookUpdate, DepthBook, Level, Side, WireDecimals};
    use mergebook::fixed::FixedPoint;
    let venue = VenueId::Kraken;
    let decimals = WireDecimals {
        price: 8,
        amount: 8,
        ..Default::default()
    };
    let snapshot = KRAKEN_SNAPSHOT.trim();
    let mut model = DepthBook::new(1000);
    model.replace(&decoded(venue, snapshot));
    let prices: Vec<FixedPoint> = model.levels(Side::Bid).map(|l| l.price).collect();
    let frames: Vec<Vec<u8>> = (0..200u64)
        .map(|step| {
            let level = Level {
                price: prices[step as usize % prices.len()],
                amount: FixedPoint::from_raw(1_000_000 + step),
            };
            let change = BookUpdate {
                bids: vec![level],
                last_id: 1_700_000_000_000_000 + step,
                ..BookUpdate::default()
            };
            model.apply(&change);
            let checksum = venue.checksum(&model, decimals);
            let mut frame = Vec::new();
            venue
                .simulated()
                .encode_diff("BTC/USD", &change, checksum, 8, 0, &mut frame);
            frame
        })
        .collect();
    let verify = |sync: &mut mergebook::book::diff_sync::BookSync, update: &BookUpdate| {
        sync.book.truncate(10);
        assert_eq!(venue.checksum(&sync.book, update.decimals), update.checksum);
    };
    a_diff_path_allocates_nothing(venue, snapshot.as_bytes(), &frames, verify, "Kraken's path");
}

const BYBIT_SNAPSHOT: &str =
    include_str!("fixtures/bybit/linear_orderbook50_BTCUSDT_snapshot_delta_2026-08-12.jsonl");

/// Bybit's path in steady state: decode a delta → check its update id follows → apply it
/// → cut the book to the topic's depth → its top into the mailbox. The deltas change the
/// recorded book's amounts, with consecutive ids.
#[test]
fn a_bybit_delta_allocates_nothing() {
    use mergebook::book::{BookUpdate, Level};
    use mergebook::fixed::FixedPoint;
    const TOPIC_DEPTH: usize = 50;
    let venue = VenueId::Bybit;
    let snapshot = BYBIT_SNAPSHOT.lines().next().unwrap();
    let recorded = decoded(venue, snapshot);
    let frames: Vec<Vec<u8>> = (0..200u64)
        .map(|step| {
            let change = BookUpdate {
                asks: vec![Level {
                    price: recorded.asks[step as usize % recorded.asks.len()].price,
                    amount: FixedPoint::from_raw(1_000_000 + step),
                }],
                last_id: recorded.last_id + 1 + step,
                ..BookUpdate::default()
            };
            let mut frame = Vec::new();
            venue
                .simulated()
                .encode_diff("orderbook.50.BTCUSDT", &change, None, 2, 0, &mut frame);
            frame
        })
        .collect();
    let cut = |sync: &mut mergebook::book::diff_sync::BookSync, _: &BookUpdate| {
        sync.book.truncate(TOPIC_DEPTH)
    };
    a_diff_path_allocates_nothing(venue, snapshot.as_bytes(), &frames, cut, "Bybit's path");
}

const OKX_BOOKS: &str =
    include_str!("fixtures/okx/books_BTC-USDT_subscribe_ack_snapshot_updates_2022.jsonl");

/// OKX's `books` path in steady state: decode an update → check its `prevSeqId` chains →
/// apply it → verify the checksum of the top 25 → its top into the mailbox. The 2022
/// recording's 97 updates, each with its checksum.
#[test]
fn an_okx_update_allocates_nothing() {
    use mergebook::book::{BookUpdate, WireDecimals};
    let venue = VenueId::Okx;
    let mut lines = OKX_BOOKS.lines().skip(1); // the subscription's acknowledgement
    let snapshot = lines.next().unwrap();
    let frames: Vec<&str> = lines.collect();
    assert_eq!(frames.len(), 97);
    let verify = |sync: &mut mergebook::book::diff_sync::BookSync, update: &BookUpdate| {
        let computed = venue.checksum(&sync.book, WireDecimals::default());
        assert_eq!(computed, update.checksum);
    };
    a_diff_path_allocates_nothing(venue, snapshot.as_bytes(), &frames, verify, "OKX's path");
}

const BITGET_BOOKS: &str = include_str!("fixtures/bitget/v1_spot_books_EOSUSDT_2022-04-06.jsonl");

/// Bitget's `books` path in steady state: decode an update → check it chains → apply it →
/// verify the checksum of the top 25 at the book's precision → its top into the mailbox.
/// The EOSUSDT recording's 55 updates, each with its checksum.
#[test]
fn a_bitget_update_allocates_nothing() {
    use mergebook::book::{BookUpdate, WireDecimals};
    let venue = VenueId::Bitget;
    let mut lines = BITGET_BOOKS.lines().skip(1); // the subscription's acknowledgement
    let snapshot = lines.next().unwrap();
    let frames: Vec<&str> = lines.collect();
    assert_eq!(frames.len(), 55);
    let decimals = WireDecimals {
        price: 4,
        amount: 4,
        ..Default::default()
    };
    let verify = |sync: &mut mergebook::book::diff_sync::BookSync, update: &BookUpdate| {
        assert_eq!(venue.checksum(&sync.book, decimals), update.checksum);
    };
    a_diff_path_allocates_nothing(venue, snapshot.as_bytes(), &frames, verify, "Bitget's path");
}

const DERIBIT_BOOK: &str = include_str!(
    "fixtures/deribit/book_BTC-24SEP21-8000-P_raw_snapshot_then_changes_2021-07-22.jsonl"
);

/// Deribit's book path in steady state: decode a change (bare JSON numbers) → check its
/// `prev_change_id` chains → apply it → its top into the mailbox. The recording's 30
/// changes.
#[test]
fn a_deribit_change_allocates_nothing() {
    let venue = VenueId::Deribit;
    let mut lines = DERIBIT_BOOK.lines();
    let snapshot = lines.next().unwrap();
    let frames: Vec<&str> = lines.collect();
    assert_eq!(frames.len(), 30);
    a_diff_path_allocates_nothing(
        venue,
        snapshot.as_bytes(),
        &frames,
        |_, _| {},
        "Deribit's path",
    );
}

const COINBASE_BAND_GBP: &str =
    include_str!("fixtures/coinbase/exchange_level2_BAND-GBP_snapshot_then_l2updates.jsonl");

/// The Coinbase Exchange feed's path in steady state: decode an `l2update` → apply it →
/// its top into the mailbox. The BAND-GBP recording's 471 updates.
#[test]
fn a_coinbase_exchange_update_allocates_nothing() {
    let venue = VenueId::CoinbaseExchange;
    let mut lines = COINBASE_BAND_GBP.lines();
    let snapshot = lines.next().unwrap();
    let frames: Vec<&str> = lines.collect();
    assert_eq!(frames.len(), 471);
    let nothing =
        |_: &mut mergebook::book::diff_sync::BookSync, _: &mergebook::book::BookUpdate| {};
    let what = "the Coinbase Exchange feed's path";
    a_diff_path_allocates_nothing(venue, snapshot.as_bytes(), &frames, nothing, what);
}

const COINBASE_SNAPSHOT: &str = include_str!(
    "fixtures/coinbase/advanced_trade_l2_data_snapshot_BTC-PERP-INTX_truncated_2026-09-07.json"
);

/// Coinbase Advanced Trade's path in steady state: decode a numbered `l2_data` message →
/// apply its first event → read and apply the next product's event in the same frame →
/// their tops into the mailboxes. Updates of the recorded snapshot's book and of a second
/// product's, every other frame carrying both.
#[test]
fn a_coinbase_update_of_two_products_allocates_nothing() {
    use mergebook::book::BookUpdate;
    use mergebook::book::diff_sync::{BookSync, UpdateOutcome};
    const MAX_LEVELS: usize = 1000;
    let venue = VenueId::Coinbase;
    let products = ["BTC-PERP-INTX", "ETH-PERP-INTX"];
    let mut update = BookUpdate::with_capacity(MAX_LEVELS);
    let mut syncs: Vec<BookSync> = products
        .iter()
        .map(|product| {
            let snapshot = COINBASE_SNAPSHOT.trim().replace("BTC-PERP-INTX", product);
            venue
                .decode_diff(snapshot.as_bytes(), MAX_LEVELS, &mut update)
                .unwrap();
            let mut sync = BookSync::new(venue.facts().sequencing, MAX_LEVELS, 1000);
            sync.on_snapshot(&update);
            sync
        })
        .collect();
    let event = |product: &str, n: u64| {
        format!(
            r#"{{"type":"update","product_id":"{product}","updates":[{{"side":"bid","event_time":"2026-09-07T01:57:59.000000Z","price_level":"7994{}.9","new_quantity":"{}.{:04}"}}]}}"#,
            n % 3,
            n % 5,
            n % 10_000
        )
    };
    let frames: Vec<String> = (0..200u64)
        .map(|n| {
            let mut events = event(products[0], n);
            if n % 2 == 1 {
                events = format!("{events},{}", event(products[1], n));
            }
            format!(
                r#"{{"channel":"l2_data","client_id":"","timestamp":"2026-09-07T01:57:59.000000Z","sequence_num":{},"events":[{events}]}}"#,
                n + 1
            )
        })
        .collect();
    let (mut sender, mut receiver) = mailbox(TopBook::default());
    let mut apply_event = |stream: &[u8], update: &BookUpdate| {
        let slot = products
            .iter()
            .position(|product| product.as_bytes() == stream)
            .unwrap();
        assert_eq!(syncs[slot].on_update(update), UpdateOutcome::Applied);
        let sync = &syncs[slot];
        sender
            .publish_with(|top| -> Result<(), ()> {
                sync.book.top(10, top);
                Ok(())
            })
            .unwrap();
        assert!(receiver.take());
    };
    let apply = |frame: &[u8]| {
        let message = venue.decode_diff(frame, MAX_LEVELS, &mut update).unwrap();
        assert!(update.message_number.is_some());
        match message {
            Message::Book { stream } => apply_event(stream, &update),
            Message::Books { stream, next } => {
                apply_event(stream, &update);
                let (stream, more) = venue
                    .decode_next_event(frame, next, MAX_LEVELS, &mut update)
                    .unwrap();
                assert_eq!(more, None);
                apply_event(stream, &update);
            }
            other => panic!("{other:?}"),
        }
    };
    allocates_nothing_after_warm_up(&frames, apply, "Coinbase Advanced Trade's path");
}

/// Binance on SBE: the recorded depth20 book and the recorded NKNUSDT diff stream, as the
/// simulator encodes them in SBE. A `depth20` frame decoded into the scratch book and into
/// the mailbox; a `depth` frame decoded → checked → applied → its top into the mailbox.
#[test]
fn binance_sbe_frames_allocate_nothing() {
    use mergebook::book::BookUpdate;
    use mergebook::book::diff_sync::{BookSync, UpdateOutcome};
    const MAX_LEVELS: usize = 5000;
    let venue = VenueId::BinanceSbe;
    let (mut sender, mut receiver) = mailbox(TopBook::default());

    let mut book = TopBook::default();
    VenueId::Binance.decode(BINANCE, 20, &mut book).unwrap();
    let snapshots: Vec<Vec<u8>> = (0..100u64)
        .map(|n| {
            book.venue_sequence = n;
            let mut frame = Vec::new();
            venue
                .simulated()
                .encode_book("btcusdt@depth20", &book, 8, &mut frame);
            frame
        })
        .collect();
    let mut scratch = TopBook::default();
    let publish_snapshot = |frame: &[u8]| {
        let message = venue.decode_binary(frame, 10, &mut scratch).unwrap();
        assert_eq!(message, Message::Book { stream: b"BTCUSDT" });
        sender
            .publish_with(|slot| -> Result<(), ()> {
                slot.copy_from(&scratch);
                Ok(())
            })
            .unwrap();
        assert!(receiver.take());
    };
    allocates_nothing_after_warm_up(&snapshots, publish_snapshot, "an SBE depth20 frame");

    let mut update = BookUpdate::with_capacity(MAX_LEVELS);
    let events: Vec<Vec<u8>> = NKNUSDT_DIFFS
        .lines()
        .map(|line| {
            VenueId::Binance
                .decode_diff(line.as_bytes(), MAX_LEVELS, &mut update)
                .unwrap();
            let mut frame = Vec::new();
            venue
                .simulated()
                .encode_diff("nknusdt@depth", &update, None, 8, 0, &mut frame);
            frame
        })
        .collect();
    let mut sync = BookSync::new(venue.facts().sequencing, MAX_LEVELS, 1000);
    venue
        .decode_diff_binary(&events[0], MAX_LEVELS, &mut update)
        .unwrap();
    sync.on_update(&update);
    let mut snapshot = BookUpdate::default();
    venue
        .decode_snapshot(NKNUSDT_SNAPSHOT, MAX_LEVELS, &mut snapshot)
        .unwrap();
    sync.on_snapshot(&snapshot);
    assert!(sync.is_synced());
    let (mut sender, mut receiver) = mailbox(TopBook::default());
    let apply = |frame: &[u8]| {
        let message = venue
            .decode_diff_binary(frame, MAX_LEVELS, &mut update)
            .unwrap();
        assert_eq!(message, Message::Book { stream: b"NKNUSDT" });
        assert_eq!(sync.on_update(&update), UpdateOutcome::Applied);
        sender
            .publish_with(|top| -> Result<(), ()> {
                sync.book.top(10, top);
                Ok(())
            })
            .unwrap();
        assert!(receiver.take());
    };
    allocates_nothing_after_warm_up(&events[1..], apply, "an SBE depth frame");
}

/// Where the recording test's lines go: counted, then forgotten.
struct CountedLines(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl mergebook::record::Storage for CountedLines {
    fn append(&mut self, _: usize, _: &[u8], _: std::time::Instant) -> std::io::Result<()> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Release);
        Ok(())
    }
    fn tick(&mut self, _: std::time::Instant) -> std::io::Result<()> {
        Ok(())
    }
    fn finish(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A reader with recording on: each frame decoded, copied into a buffer of the
/// connection's pool and queued to the writer thread. Once every buffer of the pool has
/// held a frame as large as the largest, recording allocates nothing on the reader.
#[test]
fn a_reader_recording_its_frames_allocates_nothing_once_its_pool_is_warm() {
    use mergebook::record::{EventKind, RecordMetrics, Recorder};
    use std::sync::atomic::Ordering;
    const POOL: usize = 64;
    let written = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = || prometheus::IntCounter::new("c", "c").unwrap();
    let metrics = RecordMetrics {
        dropped: vec![counter()],
        written_bytes: counter(),
        errors: counter(),
    };
    let storage = CountedLines(std::sync::Arc::clone(&written));
    let (recorder, mut readers) =
        Recorder::start_with(storage, POOL, &[(VenueId::Bitstamp, 0)], metrics).unwrap();
    let mut reader = readers.pop().unwrap();
    let bitstamp: Vec<&[u8]> = BITSTAMP.lines().map(str::as_bytes).collect();
    let largest = bitstamp.iter().max_by_key(|frame| frame.len()).unwrap();
    let mut recorded = 0;
    let wait_for_the_writer = |recorded: usize, behind: usize| {
        while written.load(Ordering::Acquire) + behind < recorded {
            std::hint::spin_loop();
        }
    };
    for _ in 0..POOL {
        assert!(reader.record(EventKind::Received, 1, "", largest));
        recorded += 1;
    }
    wait_for_the_writer(recorded, 0);

    let mut scratch = TopBook::default();
    let before = allocations();
    for round in 0..2_000 {
        let frame = bitstamp[round % bitstamp.len()];
        let message = VenueId::Bitstamp.decode(frame, 10, &mut scratch);
        assert!(matches!(message, Ok(Message::Book { .. })));
        assert!(reader.record(EventKind::Received, round as u64, "", frame));
        recorded += 1;
        wait_for_the_writer(recorded, POOL / 2);
    }
    assert_eq!(allocations() - before, 0, "recording allocated");
    drop(reader);
    recorder.finish();
    assert_eq!(written.load(Ordering::Acquire), recorded);
}

/// A reader's read path from the socket on: a real loopback WebSocket read by
/// tokio-tungstenite with the reader's settings (`mergebook::feed::websocket_config`), each
/// message decoded, then dropped. After warm-up (which includes the first time tokio's
/// cooperative budget runs out: its scheduler keeps a small queue it grows once), no
/// message allocates: the WebSocket layer's read buffer is reused.
#[test]
fn reading_frames_from_the_socket_allocates_nothing_after_warm_up() {
    use futures_util::StreamExt;
    use tokio_tungstenite::tungstenite;
    const WARM_UP: usize = 2_000;
    const MEASURED: usize = 5_000;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let address = listener.local_addr().unwrap();
    let frames: Vec<String> = BITSTAMP
        .lines()
        .map(str::to_owned)
        .chain([String::from_utf8(BINANCE.to_vec()).unwrap()])
        .collect();
    let server = std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut socket = tungstenite::accept(stream).unwrap();
        for index in 0..WARM_UP + MEASURED {
            let frame = &frames[index % frames.len()];
            socket
                .send(tungstenite::Message::text(frame.as_str()))
                .unwrap();
        }
        // Until the client has read everything and closes.
        while socket.read().is_ok() {}
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let config = mergebook::feed::websocket_config(1 << 20);
        let url = format!("ws://{address}");
        let (mut socket, _) = tokio_tungstenite::connect_async_with_config(url, Some(config), true)
            .await
            .unwrap();
        let mut book = TopBook::default();
        let mut read = |message: tungstenite::Message| {
            let tungstenite::Message::Text(text) = message else {
                panic!("a text frame");
            };
            let venue = match text.as_bytes().starts_with(b"{\"stream\"") {
                true => VenueId::Binance,
                false => VenueId::Bitstamp,
            };
            let decoded = venue.decode(text.as_bytes(), 10, &mut book);
            assert!(matches!(decoded, Ok(Message::Book { .. })), "{decoded:?}");
        };
        // Let the frames queue up, so that reads find data and tokio's budget runs out.
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        for _ in 0..WARM_UP {
            read(socket.next().await.unwrap().unwrap());
        }
        let before = allocations();
        for _ in 0..MEASURED {
            read(socket.next().await.unwrap().unwrap());
        }
        assert_eq!(
            allocations() - before,
            0,
            "reading from the socket allocated"
        );
        let _ = socket.close(None).await;
    });
    server.join().unwrap();
}

/// Hyperliquid's recorded books (each a whole book, 20 levels a side), decoded at the
/// service's depth.
#[test]
fn hyperliquid_books_allocate_nothing() {
    const RECORDING: &str =
        include_str!("fixtures/hyperliquid/timeline_l2Book_trades_BTC_2025-01-26_first30.jsonl");
    let frames: Vec<String> = RECORDING
        .lines()
        .map(|line| {
            serde_json::from_str::<serde_json::Value>(line).unwrap()["raw"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    let mut book = TopBook::default();
    allocates_nothing_after_warm_up(
        &frames,
        |frame| {
            VenueId::Hyperliquid
                .decode(frame, 10, &mut book)
                .expect("recorded frame decodes");
        },
        "a Hyperliquid book",
    );
}

/// A timeline recording of a REST venue's diff stream, one symbol's: its REST snapshot
/// (`is_snapshot` of the URL) joined to the events buffered before it (`is_event` of the
/// frame), and every event after the first one applied, for
/// [`synced_events_allocate_nothing`].
fn joined_and_the_events_after(
    venue: VenueId,
    recording: &str,
    is_snapshot: impl Fn(&str) -> bool,
    is_event: impl Fn(&str) -> bool,
) -> (mergebook::book::diff_sync::BookSync, Vec<String>) {
    use mergebook::book::BookUpdate;
    use mergebook::book::diff_sync::{BookSync, UpdateOutcome};
    const MAX_LEVELS: usize = 5000;
    let mut sync = BookSync::new(venue.facts().sequencing, MAX_LEVELS, 1000);
    let mut update = BookUpdate::with_capacity(MAX_LEVELS);
    let mut applied = Vec::new();
    for line in recording.lines() {
        let entry: serde_json::Value = serde_json::from_str(line).unwrap();
        let Some(raw) = entry["raw"].as_str() else {
            continue;
        };
        if entry["kind"] == "rest_response" {
            if is_snapshot(entry["url"].as_str().unwrap_or_default()) {
                let mut snapshot = BookUpdate::default();
                venue
                    .decode_snapshot(raw.as_bytes(), MAX_LEVELS, &mut snapshot)
                    .unwrap();
                sync.on_snapshot(&snapshot);
            }
            continue;
        }
        if entry["kind"] != "ws_recv" || !is_event(raw) {
            continue;
        }
        if !applied.is_empty() {
            applied.push(raw.to_owned());
            continue;
        }
        venue
            .decode_diff(raw.as_bytes(), MAX_LEVELS, &mut update)
            .unwrap();
        if sync.on_update(&update) == UpdateOutcome::Applied {
            applied.push(String::new());
        }
    }
    applied.remove(0);
    assert!(
        applied.len() > 30,
        "{venue}: {} events after the first applied",
        applied.len()
    );
    (sync, applied)
}

/// Binance USDⓈ-M futures' diff path on the 2024 BTCUSDT recording (real-time stream):
/// the events up to the REST snapshot buffered and joined, then, once the first event is
/// applied, every further one decoded → chained by `pu` → applied → its top into the
/// mailbox.
#[test]
fn binance_futures_events_allocate_nothing() {
    const RECORDING: &str = include_str!(
        "fixtures/binance_futures/usdm_timeline_BTCUSDT_depth0ms_2024-08-08_prefix.jsonl"
    );
    let venue = VenueId::BinanceUsdm;
    let is_event = |raw: &str| raw.contains("@depth@0ms");
    let (sync, frames) = joined_and_the_events_after(venue, RECORDING, |_| true, is_event);
    synced_events_allocate_nothing(venue, sync, &frames, "Binance futures' diff path");
}

/// Gate futures' diff path on the 2023 recording's PHB_USDT (object levels, integer
/// sizes): the events up to the REST snapshot buffered and joined, then every further one
/// decoded → checked to follow the last → applied → its top into the mailbox.
#[test]
fn gate_futures_events_allocate_nothing() {
    const RECORDING: &str = include_str!(
        "fixtures/gate/futures_usdt_timeline_order_book_update_7contracts_2023-05-24.jsonl"
    );
    let venue = VenueId::GateFutures;
    let is_snapshot = |url: &str| url.contains("contract=PHB_USDT&");
    let is_event = |raw: &str| raw.contains(r#""s":"PHB_USDT""#);
    let (sync, frames) = joined_and_the_events_after(venue, RECORDING, is_snapshot, is_event);
    synced_events_allocate_nothing(venue, sync, &frames, "Gate futures' diff path");
}

/// KuCoin's diff path on the 2021 SNX-BTC recording: the messages up to the REST snapshot
/// buffered and joined, then every further one decoded (each change with its own
/// sequence, the changes priced "0" left out) → checked to follow the last → its changes
/// applied by their sequences → its top into the mailbox.
#[test]
fn kucoin_events_allocate_nothing() {
    const RECORDING: &str =
        include_str!("fixtures/kucoin/timeline_level2_SNX-BTC_2021-04-25.jsonl");
    let venue = VenueId::Kucoin;
    let is_snapshot = |url: &str| url.ends_with("symbol=SNX-BTC");
    let is_event = |raw: &str| raw.contains(r#""symbol":"SNX-BTC""#);
    let (sync, frames) = joined_and_the_events_after(venue, RECORDING, is_snapshot, is_event);
    synced_events_allocate_nothing(venue, sync, &frames, "KuCoin's diff path");
}

/// KuCoin futures' `obu` path in steady state: decode a delta (a binary frame's JSON) →
/// check its `O..C` follows the book → apply it → its top into the mailbox. The recording
/// holds one snapshot and two deltas of other books: the deltas here are the simulator's
/// encoding of a walk of 200 changes from the recorded snapshot.
#[test]
fn a_kucoin_futures_delta_allocates_nothing() {
    use mergebook::book::{BookUpdate, Level};
    use mergebook::fixed::FixedPoint;
    const PROBE: &str = include_str!(
        "fixtures/kucoin/futures_uta_obu_and_classic_trimmed_frames_2026-09-22_probe_notes.jsonl"
    );
    let venue = VenueId::KucoinFutures;
    let snapshot = PROBE
        .lines()
        .find(|line| line.contains(r#""t":"snapshot""#))
        .unwrap();
    let first = 1_736_604_716_204u64;
    let frames: Vec<Vec<u8>> = (0..200u64)
        .map(|step| {
            let update = BookUpdate {
                first_id: first + step,
                last_id: first + step,
                bids: vec![Level {
                    price: FixedPoint::from_raw(274_961_000_000 - (step % 7) * 1_000_000),
                    amount: FixedPoint::from_raw((1 + step % 5) * 100_000_000),
                }],
                ..BookUpdate::default()
            };
            let mut frame = Vec::new();
            venue.simulated().encode_diff(
                "ETHUSDTM",
                &update,
                None,
                2,
                1_790_114_460_661,
                &mut frame,
            );
            frame
        })
        .collect();
    a_diff_path_allocates_nothing(
        venue,
        snapshot.as_bytes(),
        &frames,
        |_, _| {},
        "KuCoin futures' path",
    );
}
