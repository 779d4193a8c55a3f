//! Hyperliquid: the BTC recording replays to the books a slow reference (serde_json, the
//! documented rule: every frame replaces the book, an older one never does) reads from it;
//! the frames of 2026 (acks, errors, pong, other coins, a delisted coin's empty book) mean
//! what docs/protocols.md says; the decoder refuses every truncation and malformed frame
//! with a typed error and reads generated frames of any layout; and a coin name the venue
//! cannot list is refused when the configuration is read.

use crate::common;
use crate::conformance::{Malformed, Read, Row};
use crate::generated::object;

use mergebook::book::{Level, MAX_DEPTH, Side, TopBook};
use mergebook::fixed::{FixedPoint, FixedPointError};
use mergebook::merger::summary::VenueState;
use mergebook::record::timeline::load_frames;
use mergebook::venue::{Acked, DecodeError, Message, VenueId};
use proptest::prelude::*;
use serde_json::Value;

const HYPERLIQUID: VenueId = VenueId::Hyperliquid;

fn fixture(name: &str) -> String {
    format!(
        "{}/tests/fixtures/hyperliquid/{name}",
        env!("CARGO_MANIFEST_DIR")
    )
}

const RECORDING: &str = "timeline_l2Book_trades_BTC_2025-01-26_first30.jsonl";
const PROBE: &str = "trimmed_frames_2026-09-24_probe_notes.jsonl";

/// The WebSocket frames of the 2025 recording, in arrival order.
fn recorded_frames() -> Vec<String> {
    let frames = load_frames(std::path::Path::new(&fixture(RECORDING))).unwrap();
    frames.into_iter().map(|frame| frame.raw).collect()
}

/// The lines of the 2026 notes: requests (which the venue receives) and frames.
fn probe_lines() -> Vec<String> {
    let text = std::fs::read_to_string(fixture(PROBE)).unwrap();
    text.lines().map(str::to_owned).collect()
}

// ---- the reference: serde_json, as docs/protocols.md describes a frame ----

/// A book frame's coin, time (ms, and as ns) and top `depth` levels a side; `None` for any
/// other frame.
fn reference_decode(frame: &str, depth: usize) -> Option<Decoded> {
    let root: Value = serde_json::from_str(frame).ok()?;
    if root.get("channel")? != "l2Book" {
        return None;
    }
    let data = root.get("data")?;
    let [bids, asks] = data.get("levels")?.as_array()?.as_slice() else {
        return None;
    };
    let side = |levels: &Value, side: Side| -> Option<Vec<Level>> {
        let mut kept = Vec::new();
        for level in levels.as_array()?.iter().take(depth.min(MAX_DEPTH)) {
            let number = |key: &str| level.get(key)?.as_str()?.parse::<FixedPoint>().ok();
            let level = Level {
                price: number("px")?,
                amount: number("sz")?,
            };
            if let Some(previous) = kept.last().map(|level: &Level| level.price) {
                side.is_better(previous, level.price).then_some(())?;
            }
            kept.push(level);
        }
        Some(kept)
    };
    let time = data.get("time")?.as_u64()?;
    Some((
        data.get("coin")?.as_str()?.to_owned(),
        (time, time * 1_000_000),
        side(bids, Side::Bid)?,
        side(asks, Side::Ask)?,
    ))
}

/// A book's coin, its time (ms, and as ns) and its sides.
type Decoded = (String, (u64, u64), Vec<Level>, Vec<Level>);

fn fast_decode(frame: &str, depth: usize) -> Option<Decoded> {
    let mut book = TopBook::default();
    match HYPERLIQUID.decode(frame.as_bytes(), depth, &mut book) {
        Ok(Message::Book { stream }) => Some((
            String::from_utf8(stream.to_vec()).unwrap(),
            (book.venue_sequence, book.exchange_time_ns),
            book.bids.as_slice().to_vec(),
            book.asks.as_slice().to_vec(),
        )),
        Ok(_) => None,
        Err(error) => panic!("{error}: {frame}"),
    }
}

#[test]
fn every_recorded_book_decodes_as_the_reference_reads_it_at_every_depth() {
    let frames = recorded_frames();
    let mut books = 0;
    for frame in &frames {
        for depth in [1, 5, 10, 20, 50] {
            let expected = reference_decode(frame, depth);
            assert_eq!(
                fast_decode(frame, depth),
                expected,
                "depth {depth}: {frame}"
            );
            books += usize::from(expected.is_some() && depth == 20);
        }
    }
    assert_eq!(
        (frames.len(), books),
        (35, 30),
        "30 books and 5 trades frames"
    );
    for frame in probe_lines()
        .iter()
        .filter(|line| line.contains("\"l2Book\",\"data\""))
    {
        assert_eq!(
            fast_decode(frame, 20),
            reference_decode(frame, 20),
            "{frame}"
        );
    }
}

/// Replayed as the service reads it, the recording publishes every book but the repeat of
/// the first (the same `time`: published again, as the same book), each the reference's,
/// and ends on the book its provenance notes give.
#[test]
fn the_recording_replays_to_the_reference_books() {
    let frames = load_frames(std::path::Path::new(&fixture(RECORDING))).unwrap();
    let mut published = Vec::new();
    let stats = mergebook::replay::replay(
        &[(HYPERLIQUID, frames.clone())],
        10,
        |summary| {
            assert_eq!(summary.venue_state(HYPERLIQUID), VenueState::Synced);
            let levels = |side: &[mergebook::merger::kway::MergedLevel]| -> Vec<Level> {
                side.iter()
                    .map(|level| Level {
                        price: level.price,
                        amount: level.amount,
                    })
                    .collect()
            };
            published.push((
                levels(summary.book.bids.as_slice()),
                levels(summary.book.asks.as_slice()),
            ));
        },
        |_, index, error| panic!("frame {index}: {error}"),
    );
    let expected: Vec<_> = frames
        .iter()
        .filter_map(|frame| reference_decode(&frame.raw, 10))
        .map(|(_, _, bids, asks)| (bids, asks))
        .collect();
    assert_eq!(expected.len(), 30);
    assert_eq!(published, expected);
    assert_eq!(
        (stats.books, stats.out_of_order, stats.decode_errors),
        (30, 0, 0)
    );
    let (bids, asks) = published.last().unwrap();
    let level = |price: &str, amount: &str| Level {
        price: price.parse().unwrap(),
        amount: amount.parse().unwrap(),
    };
    assert_eq!(bids[0], level("105055.0", "0.12432"));
    assert_eq!(asks[0], level("105056.0", "5.46998"));
}

/// A frame older than the last one published never replaces it.
#[test]
fn an_older_book_never_replaces_a_newer_one() {
    let mut frames = load_frames(std::path::Path::new(&fixture(RECORDING))).unwrap();
    let books: Vec<usize> = (0..frames.len())
        .filter(|&index| frames[index].raw.contains("\"l2Book\""))
        .collect();
    // The fifth book arrives again after the tenth.
    let mut late = frames[books[4]].clone();
    late.received_ns = frames[books[9]].received_ns + 1;
    frames.insert(books[9] + 1, late);
    let mut last_bid = Vec::new();
    let stats = mergebook::replay::replay(
        &[(HYPERLIQUID, frames)],
        10,
        |summary| last_bid.push(summary.book.bids.as_slice()[0].amount),
        |_, index, error| panic!("frame {index}: {error}"),
    );
    assert_eq!((stats.books, stats.out_of_order), (30, 1));
    assert_eq!(last_bid.len(), 30);
}

fn decode<'a>(frame: &'a str, book: &mut TopBook) -> Result<Message<'a>, DecodeError> {
    HYPERLIQUID.decode(frame.as_bytes(), 10, book)
}

#[test]
fn the_frames_of_2026_mean_what_the_protocol_says() {
    let lines = probe_lines();
    let mut book = TopBook::default();
    // A subscription is acknowledged naming its coin; an unsubscription's echo is nothing.
    assert_eq!(
        decode(&lines[2], &mut book),
        Ok(Message::SubscribeResult {
            accepted: true,
            acked: Acked::Stream(b"BTC")
        })
    );
    assert_eq!(decode(&lines[3], &mut book), Ok(Message::Ignored));
    assert_eq!(
        decode(&lines[4], &mut book),
        Ok(Message::Book { stream: b"BTC" })
    );
    assert_eq!(
        decode(&lines[5], &mut book),
        Ok(Message::Book { stream: b"kPEPE" })
    );
    assert_eq!(
        decode(&lines[6], &mut book),
        Ok(Message::Book {
            stream: b"xyz:SP500"
        })
    );
    // A delisted coin: a book without sides, which the merger shows as one-sided.
    assert_eq!(
        decode(&lines[7], &mut book),
        Ok(Message::Book { stream: b"MATIC" })
    );
    assert!(book.bids.is_empty() && book.asks.is_empty());
    assert_eq!(book.venue_sequence, 1790232237073);
    assert_eq!(decode(&lines[8], &mut book), Ok(Message::Ignored), "bbo");
    assert_eq!(
        decode(&lines[10], &mut book),
        Ok(Message::Heartbeat),
        "pong"
    );
    for error in &lines[11..13] {
        assert_eq!(
            decode(error, &mut book),
            Ok(Message::SubscribeResult {
                accepted: false,
                acked: Acked::Oldest
            }),
            "{error}"
        );
    }
    // The requests the reader sends are the notes' (members in another order).
    let request: Value = serde_json::from_str(&lines[1]).unwrap();
    let streams = ["BTC".to_owned()];
    let ours = HYPERLIQUID.streams().subscribe_frames(
        &streams,
        mergebook::venue::StreamKind::Snapshots,
        5,
        1,
    );
    assert_eq!(
        serde_json::from_str::<Value>(&ours[0].frame).unwrap(),
        request
    );
    let ping = HYPERLIQUID.streams().client_ping().unwrap().1;
    assert_eq!(ping, lines[9]);
}

/// Hyperliquid's conformance row: the recorded frames, and malformed ones with their errors.
pub fn row() -> Row {
    let mut frames: Vec<(Read, Vec<u8>)> = recorded_frames()
        .into_iter()
        .take(2)
        .map(|frame| (Read::Snapshot, frame.into_bytes()))
        .collect();
    let lines = probe_lines();
    for &line in &[2, 3, 5, 6, 7, 8, 10, 11, 12] {
        frames.push((Read::Snapshot, lines[line].clone().into_bytes()));
    }
    let level = r#"{"px":"1.5","sz":"2","n":1}"#;
    let book = |data: &str| format!(r#"{{"channel":"l2Book","data":{{{data}}}}}"#);
    let with_levels = |levels: &str| book(&format!(r#""coin":"BTC","time":1,"levels":{levels}"#));
    let number = |error| DecodeError::Number { at: 0, error };
    let cases: Vec<(String, DecodeError)> = vec![
        (r#"{"data":{}}"#.to_owned(), DecodeError::MissingKey("channel")),
        (r#"{"channel":"l2Book"}"#.to_owned(), DecodeError::MissingKey("data")),
        (book(r#""time":1,"levels":[[],[]]"#), DecodeError::MissingKey("coin")),
        (book(r#""coin":"BTC","levels":[[],[]]"#), DecodeError::MissingKey("time")),
        (book(r#""coin":"BTC","time":1"#), DecodeError::MissingKey("levels")),
        (
            book(r#""coin":"BTC","time":1,"time":2,"levels":[[],[]]"#),
            DecodeError::DuplicateKey("time"),
        ),
        (
            r#"{"channel":"l2Book","channel":"l2Book","data":{}}"#.to_owned(),
            DecodeError::DuplicateKey("channel"),
        ),
        (
            with_levels(r#"[[]]"#),
            DecodeError::Unexpected { at: 0, expected: "',' between bids and asks" },
        ),
        (
            with_levels(r#"[[],[],[]]"#),
            DecodeError::Unexpected { at: 0, expected: "']' closing the levels" },
        ),
        (
            with_levels(&format!(r#"[[{level},{level}],[]]"#)),
            DecodeError::Unsorted(Side::Bid),
        ),
        (
            with_levels(r#"[[],[{"px":"2","sz":"1"},{"px":"1","sz":"1"}]]"#),
            DecodeError::Unsorted(Side::Ask),
        ),
        (
            with_levels(r#"[[{"sz":"1","n":1}],[]]"#),
            DecodeError::MissingKey("px"),
        ),
        (
            with_levels(r#"[[{"px":"1.123456789","sz":"1"}],[]]"#),
            number(FixedPointError::TooPrecise),
        ),
        (
            with_levels(r#"[[{"px":"1","sz":"-1"}],[]]"#),
            number(FixedPointError::Negative),
        ),
        (
            book(r#""coin":"BTC","time":-1,"levels":[[],[]]"#),
            DecodeError::Unexpected { at: 0, expected: "" },
        ),
        (
            book(r#""coin":"BTC","time":18446744073709552,"levels":[[],[]]"#),
            DecodeError::Invalid("a time in ms beyond the year 2554"),
        ),
        (
            r#"{"channel":"subscriptionResponse","data":{"method":"resubscribe","subscription":{}}}"#
                .to_owned(),
            DecodeError::Invalid("a subscriptionResponse must echo a subscribe or unsubscribe"),
        ),
        (
            format!(r#"{} "#, with_levels("[[],[]]")).replace("} ", "}x"),
            DecodeError::TrailingBytes { at: 0 },
        ),
    ];
    Row {
        venue: HYPERLIQUID,
        frames,
        malformed: cases
            .into_iter()
            .map(|(frame, error)| Malformed {
                exact: false,
                ..Malformed::exact(Read::Snapshot, frame, 20, error)
            })
            .collect(),
    }
}

/// A name the venue cannot list is a configuration error, named with its key: the venue
/// would drop the whole connection, every other coin on it included, for it.
#[test]
fn a_coin_the_venue_cannot_list_is_refused_by_the_configuration() {
    let config = |symbol: &str| {
        common::config::TestConfig::new()
            .instrument("BTC/USDC", &[(HYPERLIQUID, symbol)])
            .last_instrument("quotes.hyperliquid", "USDC")
            .try_build()
    };
    assert!(config("BTC").is_ok(), "{:?}", config("BTC").err());
    for unlisted in ["btc", "BTC-PERP", "xyz:sp500", "@x"] {
        let error = config(unlisted).expect_err(unlisted).to_string();
        assert!(
            error.contains("instruments")
                && error.contains("hyperliquid")
                && error.contains("case-sensitive"),
            "{unlisted}: {error}"
        );
    }
}

/// Levels as the venue writes them, members in an order drawn from `seed`.
fn generated_side(side: &[(u64, u64)], seed: u64, spaced: bool) -> String {
    let levels: Vec<String> = side
        .iter()
        .enumerate()
        .map(|(index, &(price, size))| {
            let (price, size) = (FixedPoint::from_raw(price), FixedPoint::from_raw(size));
            let mut members = vec![
                format!(r#""px":"{price}""#),
                format!(r#""sz":"{size}""#),
                format!(r#""n":{index}"#),
            ];
            object(&mut members, seed ^ index as u64, spaced)
        })
        .collect();
    format!("[{}]", levels.join(if spaced { ", " } else { "," }))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn generated_frames_decode_as_the_reference_reads_them(
        bids in proptest::collection::btree_map(1u64..1u64 << 50, 1u64..1u64 << 50, 0..25),
        asks in proptest::collection::btree_map(1u64..1u64 << 50, 1u64..1u64 << 50, 0..25),
        depth in 1usize..=25,
        time in 0..=u64::MAX / 1_000_000,
        seed in any::<u64>(),
        spaced in any::<bool>(),
        unknown in any::<bool>(),
    ) {
        let bids: Vec<(u64, u64)> = bids.into_iter().rev().collect();
        let asks: Vec<(u64, u64)> = asks.into_iter().collect();
        let separator = if spaced { ", " } else { "," };
        let levels = format!("[{}{separator}{}]", generated_side(&bids, seed, spaced), generated_side(&asks, !seed, spaced));
        let mut data = vec![
            r#""coin":"ETH""#.to_owned(),
            format!(r#""time":{time}"#),
            format!(r#""levels":{levels}"#),
        ];
        if unknown {
            data.push(r#""spread":{"a":[1,2,{"b":null}]}"#.to_owned());
        }
        let data = object(&mut data, seed.rotate_left(7), spaced);
        let mut members = vec![r#""channel":"l2Book""#.to_owned(), format!(r#""data":{data}"#)];
        let frame = object(&mut members, seed.rotate_left(13), spaced);
        prop_assert_eq!(fast_decode(&frame, depth), reference_decode(&frame, depth), "{}", frame);
    }
}

/// A well-formed coin the venue does not list stops the start before any connection: the
/// venue's listing (`POST /info`, `meta`, a builder's `meta`, `spotMeta`) is asked about
/// every configured name first. A listing that cannot be read is said, and the start goes
/// on with the names checked by their form.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_coin_the_venue_does_not_list_stops_the_start_before_any_connection() {
    use mergebook::feed::listing::{self, ListingError};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let simulator = mergebook::sim::Simulator::start(listener, 20, 1).unwrap();
    let config = |symbols: &[&str], rest_url: &str| {
        let mut config = common::config::TestConfig::new()
            .on(&simulator, &[HYPERLIQUID])
            .set("venues.hyperliquid.rest_url", rest_url);
        for (index, symbol) in symbols.iter().enumerate() {
            config = config
                .instrument(&format!("I{index}/USDC"), &[(HYPERLIQUID, symbol)])
                .last_instrument("quotes.hyperliquid", "USDC");
        }
        config.build()
    };
    let timeout = std::time::Duration::from_secs(5);
    let rest_url = simulator.rest_url(HYPERLIQUID);
    let every_kind = ["BTC", "xyz:SP500", "PURR/USDC", "@107"];

    // Unlisted: no listing to read, said; the names pass by their form.
    let unread = listing::check(&config(&every_kind, &rest_url), timeout).await;
    assert!(
        matches!(&unread.as_deref(), Ok([ListingError::Unread { why, .. }]) if why.contains("404")),
        "{unread:?}"
    );

    simulator.list(
        HYPERLIQUID,
        every_kind.iter().map(|name| name.to_string()).collect(),
    );
    assert_eq!(
        listing::check(&config(&every_kind, &rest_url), timeout).await,
        Ok(vec![])
    );
    for (symbols, unlisted) in [
        (&["BTC", "BTCC"][..], (1, "BTCC")),
        (&["xyz:SP500", "abc:SP500"][..], (1, "abc:SP500")),
        (&["@108"][..], (0, "@108")),
        (&["kPEPE", "PURR/USDC"][..], (0, "kPEPE")),
    ] {
        let error = listing::check(&config(symbols, &rest_url), timeout)
            .await
            .unwrap_err();
        let ListingError::Unlisted {
            instrument, symbol, ..
        } = &error
        else {
            panic!("{symbols:?}: {error}");
        };
        assert_eq!((*instrument, symbol.as_str()), unlisted, "{error}");
        assert!(
            error
                .to_string()
                .contains(&format!("instruments[{}].symbols.hyperliquid", unlisted.0))
        );
    }
    assert_eq!(
        simulator.connections(HYPERLIQUID),
        0,
        "nothing was subscribed to ask"
    );

    // A venue that cannot be reached: said, and the start goes on.
    let closed = format!("http://127.0.0.1:{}", common::free_port());
    let unread = listing::check(&config(&["BTC"], &closed), timeout).await;
    assert!(
        matches!(unread.as_deref(), Ok([ListingError::Unread { .. }])),
        "{unread:?}"
    );
}

/// The listing's answers as the docs show them: each entry's name, a spot pair's index
/// too, a builder's perpetuals with their dex.
#[test]
fn listed_names_are_read_from_the_venue_s_answers() {
    let streams = HYPERLIQUID.streams();
    let listed = |request: &str, body: &str| streams.listed_names(request, body.as_bytes());
    assert_eq!(
        listed(
            r#"{"type":"meta"}"#,
            r#"{"universe":[{"name":"BTC","szDecimals":5,"maxLeverage":40},{"name":"MATIC","szDecimals":1,"maxLeverage":20,"isDelisted":true}],"marginTables":[]}"#
        ),
        Ok(vec!["BTC".to_owned(), "MATIC".to_owned()])
    );
    assert_eq!(
        listed(
            r#"{"type":"spotMeta"}"#,
            r#"{"universe":[{"tokens":[1,0],"name":"PURR/USDC","index":0,"isCanonical":true},{"tokens":[2,0],"name":"@1","index":1,"isCanonical":false}],"tokens":[]}"#
        ),
        Ok(vec![
            "PURR/USDC".to_owned(),
            "@0".to_owned(),
            "@1".to_owned(),
            "@1".to_owned()
        ])
    );
    assert_eq!(
        listed(
            r#"{"type":"meta","dex":"xyz"}"#,
            r#"{"universe":[{"name":"SP500"},{"name":"xyz:XYZ100"}]}"#
        ),
        Ok(vec!["xyz:SP500".to_owned(), "xyz:XYZ100".to_owned()])
    );
    assert!(listed(r#"{"type":"meta"}"#, "<html>").is_err());
    assert!(listed(r#"{"type":"meta"}"#, r#"{"universe":[{"szDecimals":5}]}"#).is_err());
    assert_eq!(
        streams.listing_requests(&["BTC", "ETH", "PURR/USDC", "@107", "xyz:SP500"]),
        [
            r#"{"type":"meta"}"#,
            r#"{"type":"spotMeta"}"#,
            r#"{"dex":"xyz","type":"meta"}"#,
        ]
    );
}

/// More coins than the venue allows subscriptions from one IP (1,000) are refused; a shard
/// of them, served from another host, is not.
#[test]
fn more_coins_than_the_venue_allows_an_ip_are_refused_unless_sharded() {
    let config = |coins: usize, shard: Option<&str>| {
        let mut config = common::config::TestConfig::new().set("service.max_instruments", 1024);
        if let Some(shard) = shard {
            config = config.set("service.shard", shard);
        }
        for coin in 0..coins {
            config = config
                .instrument(
                    &format!("C{coin}/USDC"),
                    &[(HYPERLIQUID, &format!("C{coin}"))],
                )
                .last_instrument("quotes.hyperliquid", "USDC");
        }
        config.try_build()
    };
    assert!(config(1000, None).is_ok());
    let error = config(1001, None).unwrap_err().to_string();
    assert!(error.contains("at most 1000 subscriptions"), "{error}");
    assert!(config(1001, Some("1/2")).is_ok());
}
