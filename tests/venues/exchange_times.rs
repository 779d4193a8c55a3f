//! Each venue's own time of its books (`exchange_time_ns`) against every recorded frame:
//! the time a slow reference reads from the frame with serde_json (and the `time` crate
//! for RFC 3339 text), as docs/protocols.md says which of a venue's times a book carries,
//! equal to what the venue's decoders wrote, for every book, diff event and REST snapshot
//! of every fixture.

use mergebook::book::{BookUpdate, TopBook};
use mergebook::record::timeline::{TimelineEvent, load_timeline};
use mergebook::venue::{Message, VenueId};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// A JSON number or a string of digits, as a `u64`.
fn integer(value: &Value) -> Option<u64> {
    match value {
        Value::Number(number) => number.as_u64(),
        Value::String(text) => text.parse().ok(),
        _ => None,
    }
}

fn millis(value: Option<&Value>) -> Option<u64> {
    integer(value?).map(|ms| ms * 1_000_000)
}

fn rfc3339(value: Option<&Value>) -> Option<u64> {
    let text = value?.as_str()?;
    let time = time::OffsetDateTime::parse(text, &time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|error| panic!("{text}: {error}"));
    Some(u64::try_from(time.unix_timestamp_nanos()).unwrap())
}

/// The time a book decoded from `frame` (a WebSocket message) carries, by the venue's
/// documented rule; `None` where the venue sends none in it.
fn reference_time(venue: VenueId, frame: &Value) -> Option<u64> {
    let payload = frame.get("data").unwrap_or(frame);
    match venue {
        // Spot: the diff event's time; partial depth books carry none.
        VenueId::Binance => millis(payload.get("E")),
        // Futures: the transaction (matching engine) time.
        VenueId::BinanceUsdm | VenueId::BinanceCoinm => millis(payload.get("T")),
        VenueId::Bitstamp => integer(payload.get("microtimestamp")?).map(|us| us * 1_000),
        VenueId::Kraken => rfc3339(payload.get(0)?.get("timestamp")),
        VenueId::Okx => millis(payload.get(0)?.get("ts")),
        VenueId::CoinbaseExchange => rfc3339(frame.get("time")),
        VenueId::Coinbase => rfc3339(frame.get("timestamp")),
        // The matching engine's time where sent, else the message's.
        VenueId::Bybit => millis(frame.get("cts")).or_else(|| millis(frame.get("ts"))),
        VenueId::Hyperliquid => millis(payload.get("time")),
        VenueId::Gate | VenueId::GateFutures => millis(frame.get("result")?.get("t")),
        VenueId::Bitget | VenueId::BitgetFutures => millis(payload.get(0)?.get("ts")),
        VenueId::Deribit => millis(frame.get("params")?.get("data")?.get("timestamp")),
        // A diff message's time (absent before 2024), a top-N push's timestamp.
        VenueId::Kucoin => millis(payload.get("time")).or_else(|| millis(payload.get("timestamp"))),
        // The matching engine's time, in ns.
        VenueId::KucoinFutures => integer(frame.get("d")?.get("M")?),
        VenueId::BinanceSbe => unreachable!("binary frames: tests/venues/binance_sbe.rs"),
    }
}

/// The time a REST snapshot body carries, by the venue's documented rule.
fn reference_rest_time(venue: VenueId, body: &Value) -> Option<u64> {
    match venue {
        VenueId::BinanceUsdm | VenueId::BinanceCoinm => millis(body.get("T")),
        VenueId::Bitstamp => integer(body.get("microtimestamp")?).map(|us| us * 1_000),
        _ => None,
    }
}

/// The venues whose frames a fixture holds, by its folder and name.
fn venues_of(folder: &str, name: &str) -> Vec<VenueId> {
    let by_prefix = |pairs: &[(&str, VenueId)]| -> Vec<VenueId> {
        let of: Vec<VenueId> = pairs
            .iter()
            .filter(|(prefix, _)| name.contains(prefix))
            .map(|&(_, venue)| venue)
            .collect();
        assert!(!of.is_empty(), "{folder}/{name}: whose frames?");
        of
    };
    match folder {
        "binance_futures" => by_prefix(&[
            ("usdm", VenueId::BinanceUsdm),
            ("coinm", VenueId::BinanceCoinm),
        ]),
        "coinbase" => by_prefix(&[
            ("exchange", VenueId::CoinbaseExchange),
            ("advanced_trade", VenueId::Coinbase),
        ]),
        "gate" => by_prefix(&[("spot", VenueId::Gate), ("futures", VenueId::GateFutures)]),
        "kucoin" => by_prefix(&[
            ("timeline", VenueId::Kucoin),
            ("docs", VenueId::Kucoin),
            ("futures", VenueId::KucoinFutures),
        ]),
        // The v2 files and the docs' examples hold both markets' frames.
        "bitget" => by_prefix(&[
            ("v1_spot", VenueId::Bitget),
            ("v1_mix", VenueId::BitgetFutures),
            ("v2", VenueId::Bitget),
            ("v2", VenueId::BitgetFutures),
            ("docs", VenueId::Bitget),
            ("docs", VenueId::BitgetFutures),
        ]),
        venue => vec![VenueId::from_name(venue).unwrap_or_else(|| panic!("{venue}?"))],
    }
}

/// What a check found for a venue.
#[derive(Default, Debug)]
struct Counts {
    /// Books, events and snapshots that carried a time (equal to the reference's).
    timed: usize,
    /// Those that carried none, as the reference says.
    untimed: usize,
}

fn check(venue: VenueId, what: &str, decoded: u64, expected: Option<u64>, counts: &mut Counts) {
    assert_eq!(decoded, expected.unwrap_or(0), "{venue}: {what}");
    match expected {
        Some(_) => counts.timed += 1,
        None => counts.untimed += 1,
    }
}

/// Decodes a WebSocket frame as a book and as a diff event, and checks each book's time.
fn check_frame(venue: VenueId, frame: &str, counts: &mut Counts) {
    let Ok(json) = serde_json::from_str::<Value>(frame) else {
        return;
    };
    let expected = reference_time(venue, &json);
    let mut book = TopBook::default();
    if let Ok(Message::Book { .. } | Message::Books { .. }) =
        venue.decode(frame.as_bytes(), 100, &mut book)
    {
        check(venue, frame, book.exchange_time_ns, expected, counts);
    }
    let mut update = BookUpdate::default();
    match venue.decode_diff(frame.as_bytes(), 100_000, &mut update) {
        Ok(Message::Book { .. }) => check(venue, frame, update.exchange_time_ns, expected, counts),
        Ok(Message::Books { next, .. }) => {
            check(venue, frame, update.exchange_time_ns, expected, counts);
            let mut next = Some(next);
            while let Some(at) = next {
                next = venue
                    .decode_next_event(frame.as_bytes(), at, 100_000, &mut update)
                    .unwrap()
                    .1;
                check(venue, frame, update.exchange_time_ns, expected, counts);
            }
        }
        _ => {}
    }
}

fn check_rest(venue: VenueId, body: &str, counts: &mut Counts) {
    let mut update = BookUpdate::default();
    if venue
        .decode_snapshot(body.as_bytes(), 100_000, &mut update)
        .is_ok()
    {
        let json: Value = serde_json::from_str(body).unwrap();
        let expected = reference_rest_time(venue, &json);
        check(venue, body, update.exchange_time_ns, expected, counts);
    }
}

#[test]
fn every_recorded_book_carries_the_venue_s_time_the_reference_reads() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut counts: BTreeMap<VenueId, Counts> = BTreeMap::new();
    for folder in std::fs::read_dir(&fixtures).unwrap() {
        let folder = folder.unwrap().path();
        if !folder.is_dir() {
            continue;
        }
        let folder_name = folder.file_name().unwrap().to_str().unwrap().to_owned();
        for file in std::fs::read_dir(&folder).unwrap() {
            let path = file.unwrap().path();
            let name = path.file_name().unwrap().to_str().unwrap().to_owned();
            let Ok(timeline) = load_timeline(&path) else {
                continue; // not a recording of frames
            };
            for venue in venues_of(&folder_name, &name) {
                let counts = counts.entry(venue).or_default();
                for event in &timeline.events {
                    match &event.event {
                        TimelineEvent::Text(frame) if name.starts_with("rest_") => {
                            check_rest(venue, frame, counts)
                        }
                        TimelineEvent::Text(frame) => check_frame(venue, frame, counts),
                        TimelineEvent::Rest { body, .. } => check_rest(venue, body, counts),
                        _ => {}
                    }
                }
            }
        }
    }
    // Every venue with JSON recordings had books with their time (Coinbase Advanced Trade's
    // one recorded book frame among them), and Binance spot's partial depth books, which
    // carry none, were seen without.
    for venue in VenueId::ALL
        .iter()
        .filter(|&&venue| venue != VenueId::BinanceSbe)
    {
        let of = counts
            .get(venue)
            .unwrap_or_else(|| panic!("{venue}: no recording"));
        assert!(of.timed >= 1, "{venue}: {of:?}");
    }
    assert!(
        counts[&VenueId::Binance].untimed >= 2,
        "{:?}",
        counts[&VenueId::Binance]
    );
}
