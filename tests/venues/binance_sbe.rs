//! Binance's binary (SBE) feed, `binance_sbe`. No SBE frame is recorded in the fixtures
//! (docs/protocols.md, Binance SBE): frames are built from the schema, by a writer here that
//! varies what the schema lets vary (exponents, appended fields), and read by a slow
//! reference decoder written from the schema; the simulator's SBE frames carry the same
//! market as its JSON ones, and both decode to the same books. Against the simulator, the
//! service merges Binance on SBE with venues on JSON, and each fault ends in the right
//! state, counter and a clean resync; without its API key the service does not start, and
//! a connection without it is refused.

use crate::common;
use crate::conformance::{self, Malformed, Row};

use crate::common::config::TestConfig;
use common::in_band::Harness;
use futures_util::{SinkExt, StreamExt};
use mergebook::book::{BookUpdate, Level, TopBook};
use mergebook::fixed::FixedPoint;
use mergebook::merger::summary::VenueState;
use mergebook::service::{Listeners, Service};
use mergebook::sim::Simulator;
use mergebook::venue::{DecodeError, Message, VenueId};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio_tungstenite::tungstenite::{self, client::IntoClientRequest};

const SBE: VenueId = VenueId::BinanceSbe;
const DEPTH_SNAPSHOT: u16 = 10002;
const DEPTH_DIFF: u16 = 10003;

// ---- frames from the schema, with what it lets vary ----

/// One book message as the schema describes it, with its variable parts: the exponents,
/// and bytes a later schema version could append to the fixed block and to each entry.
#[derive(Debug, Clone)]
struct Written {
    template: u16,
    /// `eventTime`, µs.
    event_time: i64,
    ids: Vec<i64>,
    price_exponent: i8,
    quantity_exponent: i8,
    bids: Vec<(i64, i64)>,
    asks: Vec<(i64, i64)>,
    symbol: String,
    block_extra: usize,
    entry_extra: usize,
}

impl Written {
    fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        let block = 8 + 8 * self.ids.len() + 2 + self.block_extra;
        for field in [block as u16, self.template, 1, 0] {
            out.extend_from_slice(&field.to_le_bytes());
        }
        out.extend_from_slice(&self.event_time.to_le_bytes());
        for id in &self.ids {
            out.extend_from_slice(&id.to_le_bytes());
        }
        out.extend_from_slice(&[self.price_exponent as u8, self.quantity_exponent as u8]);
        out.extend(std::iter::repeat_n(0xA5, self.block_extra));
        for side in [&self.bids, &self.asks] {
            out.extend_from_slice(&((16 + self.entry_extra) as u16).to_le_bytes());
            out.extend_from_slice(&(side.len() as u16).to_le_bytes());
            for (price, quantity) in side {
                out.extend_from_slice(&price.to_le_bytes());
                out.extend_from_slice(&quantity.to_le_bytes());
                out.extend(std::iter::repeat_n(0x5A, self.entry_extra));
            }
        }
        out.push(self.symbol.len() as u8);
        out.extend_from_slice(self.symbol.as_bytes());
        out
    }
}

// ---- the reference: the schema read field by field, values through decimal text ----

/// What the reference reads from a book message.
#[derive(Debug, PartialEq)]
struct Read {
    template: u16,
    /// `eventTime`, as ns.
    exchange_time_ns: u64,
    ids: Vec<u64>,
    bids: Vec<Level>,
    asks: Vec<Level>,
    symbol: Vec<u8>,
}

/// `mantissa × 10^exponent` as decimal text, parsed (more than 8 fractional digits that
/// are not zeros is refused by the parser).
fn reference_value(mantissa: i64, exponent: i8) -> Option<FixedPoint> {
    if mantissa < 0 {
        return None;
    }
    let digits = mantissa.to_string();
    let text = if exponent >= 0 {
        format!("{digits}{}", "0".repeat(exponent as usize))
    } else {
        let shift = exponent.unsigned_abs() as usize;
        let padded = format!("{digits:0>width$}", width = shift + 1);
        let (whole, fraction) = padded.split_at(padded.len() - shift);
        let fraction = fraction.trim_end_matches('0');
        match fraction {
            "" => whole.to_owned(),
            _ => format!("{whole}.{fraction}"),
        }
    };
    text.parse().ok()
}

fn reference(frame: &[u8]) -> Option<Read> {
    let u16_at = |at: usize| Some(u16::from_le_bytes(frame.get(at..at + 2)?.try_into().ok()?));
    let i64_at = |at: usize| Some(i64::from_le_bytes(frame.get(at..at + 8)?.try_into().ok()?));
    let (block, template, schema) = (u16_at(0)? as usize, u16_at(2)?, u16_at(4)?);
    let id_count = match (schema, template) {
        (1, DEPTH_SNAPSHOT) => 1,
        (1, DEPTH_DIFF) => 2,
        _ => return None,
    };
    if block < 8 + 8 * id_count + 2 {
        return None;
    }
    let ids = (0..id_count)
        .map(|index| u64::try_from(i64_at(16 + 8 * index)?).ok())
        .collect::<Option<Vec<_>>>()?;
    let micros = u64::try_from(i64_at(8)?).ok()?;
    let exchange_time_ns = u64::try_from(u128::from(micros) * 1_000).ok()?;
    let exponents = *frame.get(16 + 8 * id_count)? as i8;
    let quantity_exponent = *frame.get(17 + 8 * id_count)? as i8;
    let mut at = 8 + block;
    let mut sides = Vec::new();
    for _ in 0..2 {
        let (entry, count) = (u16_at(at)? as usize, u16_at(at + 2)? as usize);
        if entry < 16 {
            return None;
        }
        at += 4;
        let mut levels = Vec::new();
        for _ in 0..count {
            levels.push(Level {
                price: reference_value(i64_at(at)?, exponents)?,
                amount: reference_value(i64_at(at + 8)?, quantity_exponent)?,
            });
            at += entry;
        }
        sides.push(levels);
    }
    let len = *frame.get(at)? as usize;
    let symbol = frame.get(at + 1..at + 1 + len)?;
    // A symbol names a book; the diff's ids run forwards.
    if at + 1 + len != frame.len() || symbol.is_empty() || ids.first() > ids.last() {
        return None;
    }
    let asks = sides.pop()?;
    let bids = sides.pop()?;
    Some(Read {
        template,
        exchange_time_ns,
        ids,
        bids,
        asks,
        symbol: symbol.to_vec(),
    })
}

/// mergebook's decode of a diff frame, as the reference reads one.
fn decoded_diff(frame: &[u8]) -> Result<Read, DecodeError> {
    let mut update = BookUpdate::default();
    let Message::Book { stream } = SBE.decode_diff_binary(frame, 5000, &mut update)? else {
        panic!("not a book");
    };
    Ok(Read {
        template: DEPTH_DIFF,
        exchange_time_ns: update.exchange_time_ns,
        ids: vec![update.first_id, update.last_id],
        bids: update.bids,
        asks: update.asks,
        symbol: stream.to_vec(),
    })
}

/// The latest `eventTime` (µs) whose ns a `u64` holds.
const MAX_EVENT_TIME: i64 = (u64::MAX / 1_000) as i64;

fn written_diff() -> impl Strategy<Value = Written> {
    let side = proptest::collection::vec((0i64..=i64::MAX / 4, 0i64..=10_000_000_000), 0..6);
    (
        (0i64..1 << 40, 0i64..1000, 0..=MAX_EVENT_TIME),
        (-12i8..=2, -12i8..=2),
        (side.clone(), side),
        (0usize..12, 0usize..12),
        "[A-Z0-9]{1,12}",
    )
        .prop_map(
            |(
                (first, span, event_time),
                (price_exponent, quantity_exponent),
                (bids, asks),
                extra,
                symbol,
            )| {
                Written {
                    template: DEPTH_DIFF,
                    event_time,
                    ids: vec![first, first + span],
                    price_exponent,
                    quantity_exponent,
                    bids,
                    asks,
                    symbol,
                    block_extra: extra.0,
                    entry_extra: extra.1,
                }
            },
        )
}

/// A `depth20` message's sides as the reference reads them: each strictly sorted best
/// first, the empty levels left out.
fn reference_snapshot(frame: &[u8]) -> Option<(Vec<Level>, Vec<Level>)> {
    let read = reference(frame)?;
    let sorted = |levels: &[Level], better: fn(&Level, &Level) -> bool| {
        levels.windows(2).all(|pair| better(&pair[0], &pair[1]))
    };
    if read.template != DEPTH_SNAPSHOT
        || !sorted(&read.bids, |a, b| a.price > b.price)
        || !sorted(&read.asks, |a, b| a.price < b.price)
    {
        return None;
    }
    let kept = |levels: Vec<Level>| levels.into_iter().filter(|l| !l.amount.is_zero()).collect();
    Some((kept(read.bids), kept(read.asks)))
}

/// `depth20` messages: sides sorted or not, some quantities empty, and now and then a
/// negative mantissa, or one whose product overflows.
fn written_snapshot() -> impl Strategy<Value = Written> {
    let mantissa = prop_oneof![
        8 => 1i64..10_000_000_000,
        1 => Just(0i64),
        1 => Just(-7i64),
        1 => (i64::MAX / 1000)..i64::MAX,
    ];
    let side = proptest::collection::vec((1i64..1_000_000, mantissa), 0..12);
    (
        (-10i8..=1, -10i8..=1),
        (side.clone(), side),
        any::<bool>(),
        (0usize..3, 0usize..3),
    )
        .prop_map(
            |((price_exponent, quantity_exponent), (bids, asks), sorted, extra)| {
                // Prices from steps: bids down from 10^12, asks up from it, unless unsorted.
                let prices = |steps: Vec<(i64, i64)>, sign: i64| {
                    let mut price = 1_000_000_000_000i64;
                    let mut levels: Vec<(i64, i64)> = steps
                        .into_iter()
                        .map(|(step, quantity)| {
                            price += sign * step;
                            (price, quantity)
                        })
                        .collect();
                    if !sorted {
                        levels.reverse();
                    }
                    levels
                };
                Written {
                    template: DEPTH_SNAPSHOT,
                    event_time: 1_770_000_000_000_000,
                    ids: vec![7],
                    price_exponent,
                    quantity_exponent,
                    bids: prices(bids, -1),
                    asks: prices(asks, 1),
                    symbol: "BTCUSDT".into(),
                    block_extra: extra.0,
                    entry_extra: extra.1 * 4,
                }
            },
        )
}

proptest! {
    /// Generated `depth20` frames, read to their last level, decode to what the reference
    /// reads, or are refused where it finds a fault.
    #[test]
    fn generated_depth20_frames_decode_as_the_reference_reads_them(written in written_snapshot()) {
        let frame = written.bytes();
        let mut book = TopBook::default();
        let decoded = SBE.decode_binary(&frame, 20, &mut book);
        match reference_snapshot(&frame) {
            Some((bids, asks)) => {
                prop_assert_eq!(decoded, Ok(Message::Book { stream: b"BTCUSDT" }));
                prop_assert_eq!(book.bids.as_slice(), bids.as_slice());
                prop_assert_eq!(book.asks.as_slice(), asks.as_slice());
            }
            None => prop_assert!(decoded.is_err(), "{:?} {:?}", decoded, written),
        }
    }

    /// Generated frames (any exponents, fields appended to the block and the entries,
    /// values that do and do not fit 8 decimals) decode to what the reference reads, or
    /// are refused where the reference finds a value it cannot hold exactly.
    #[test]
    fn generated_frames_decode_as_the_reference_reads_them(written in written_diff()) {
        let frame = written.bytes();
        match (reference(&frame), decoded_diff(&frame)) {
            (Some(expected), Ok(read)) => prop_assert_eq!(read, expected),
            (None, Err(DecodeError::Number { .. })) => {}
            (expected, read) => prop_assert!(false, "reference {:?}, mergebook {:?}", expected, read),
        }
    }

    /// Any byte of a frame changed: mergebook and the reference agree on whether it is a
    /// book, and on the book; never a panic.
    #[test]
    fn edited_frames_are_read_as_the_reference_reads_them_or_refused(
        written in written_diff(),
        at in any::<prop::sample::Index>(),
        byte in any::<u8>(),
    ) {
        let mut frame = written.bytes();
        let at = at.index(frame.len());
        frame[at] = byte;
        let read = decoded_diff_or_other(&frame);
        match reference(&frame) {
            Some(expected) if expected.template == DEPTH_DIFF => {
                prop_assert_eq!(read.ok().flatten(), Some(expected))
            }
            // A snapshot's template, another schema: ignored or refused, never a book.
            _ => prop_assert!(!matches!(read, Ok(Some(_))), "{:?}", read),
        }
    }
}

/// mergebook's diff decode: `Ok(None)` for a message of another template.
fn decoded_diff_or_other(frame: &[u8]) -> Result<Option<Read>, DecodeError> {
    let mut update = BookUpdate::default();
    match SBE.decode_diff_binary(frame, 5000, &mut update)? {
        Message::Book { stream } => Ok(Some(Read {
            template: DEPTH_DIFF,
            exchange_time_ns: update.exchange_time_ns,
            ids: vec![update.first_id, update.last_id],
            bids: update.bids,
            asks: update.asks,
            symbol: stream.to_vec(),
        })),
        _ => Ok(None),
    }
}

/// A `depth20` message with Binance's usual exponents and a later schema's extra fields.
fn depth20_with_later_fields() -> Written {
    Written {
        template: DEPTH_SNAPSHOT,
        event_time: 1_770_000_000_123_456,
        ids: vec![81_246_000_123],
        price_exponent: -2,
        quantity_exponent: -8,
        bids: vec![(3_549_606, 29_859_300), (3_549_402, 56_300)],
        asks: vec![(3_549_607, 34_867_100), (3_549_666, 26_443_500)],
        symbol: "BTCUSDT".into(),
        block_extra: 6,
        entry_extra: 8,
    }
}

/// A diff event of one level a side.
fn diff_event() -> Written {
    Written {
        template: DEPTH_DIFF,
        event_time: 1_770_000_000_000_000,
        ids: vec![10, 12],
        price_exponent: -2,
        quantity_exponent: -8,
        bids: vec![(100, 1)],
        asks: vec![(101, 0)],
        symbol: "BTCUSDT".into(),
        block_extra: 0,
        entry_extra: 0,
    }
}

/// Its row in the venue conformance tests: no SBE frame was recorded, so the frames are
/// written from the schema (`Written`).
pub fn row() -> Row {
    Row {
        venue: SBE,
        frames: vec![
            (
                conformance::Read::Binary,
                depth20_with_later_fields().bytes(),
            ),
            (conformance::Read::BinaryDiff, diff_event().bytes()),
        ],
        malformed: malformed_frames(),
    }
}

/// The `depth20` message reads as the reference reads it; an unknown template is ignored,
/// not an error.
#[test]
fn a_depth20_frame_reads_as_the_reference_and_an_unknown_template_is_ignored() {
    let written = depth20_with_later_fields();
    let frame = written.bytes();
    let expected = reference(&frame).unwrap();
    let mut book = TopBook::default();
    assert_eq!(
        SBE.decode_binary(&frame, 20, &mut book),
        Ok(Message::Book { stream: b"BTCUSDT" })
    );
    assert_eq!(book.venue_sequence, expected.ids[0]);
    assert_eq!(book.exchange_time_ns, expected.exchange_time_ns);
    assert_eq!(book.exchange_time_ns, 1_770_000_000_123_456_000);
    assert_eq!(book.bids.as_slice(), expected.bids.as_slice());
    assert_eq!(book.asks.as_slice(), expected.asks.as_slice());
    assert_eq!(book.bids.as_slice()[0].price, "35496.06".parse().unwrap());
    let trade = Written {
        template: 10000,
        ..written
    };
    assert_eq!(
        SBE.decode_binary(&trade.bytes(), 20, &mut TopBook::default()),
        Ok(Message::Ignored)
    );
    // Text frames are Binance's JSON answers; a JSON book is not what this feed sends.
    assert!(matches!(
        SBE.decode(br#"{"result":null,"id":1}"#, 20, &mut book),
        Ok(Message::SubscribeResult { accepted: true, .. })
    ));
    assert!(
        SBE.decode(
            br#"{"stream":"btcusdt@depth20@100ms","data":{"lastUpdateId":1,"bids":[],"asks":[]}}"#,
            20,
            &mut book
        )
        .is_err()
    );
}

/// Malformed headers and group counts, and the typed errors they get.
fn malformed_frames() -> Vec<Malformed> {
    let written = diff_event();
    let frame = written.bytes();
    let edited = |at: usize, bytes: &[u8]| {
        let mut edited = frame.clone();
        edited[at..at + bytes.len()].copy_from_slice(bytes);
        edited
    };
    let groups = 8 + 26;
    let cases = [
        (
            edited(4, &7u16.to_le_bytes()),
            DecodeError::UnknownMessage("SBE schema"),
        ),
        (
            edited(0, &25u16.to_le_bytes()),
            DecodeError::Invalid("a block shorter than its template's fields"),
        ),
        (edited(0, &4000u16.to_le_bytes()), DecodeError::Truncated),
        (
            edited(groups + 2, &200u16.to_le_bytes()),
            DecodeError::Truncated,
        ),
        (
            edited(groups, &8u16.to_le_bytes()),
            DecodeError::Invalid("a level entry shorter than a price and a quantity"),
        ),
        (
            edited(16, &13i64.to_le_bytes()),
            DecodeError::Invalid("depthUpdate with U greater than u"),
        ),
        (
            edited(8, &(-1i64).to_le_bytes()),
            DecodeError::IntegerOverflow { at: 8 },
        ),
        (
            edited(8, &(MAX_EVENT_TIME + 1).to_le_bytes()),
            DecodeError::Invalid("a time in µs beyond the year 2554"),
        ),
        (
            Written {
                price_exponent: -12,
                bids: vec![(123_456_789, 1)],
                ..written.clone()
            }
            .bytes(),
            DecodeError::Number {
                at: groups + 4,
                error: mergebook::fixed::FixedPointError::TooPrecise,
            },
        ),
    ];
    let too_many = Written {
        bids: vec![(100, 1); 3],
        ..written
    };
    cases
        .into_iter()
        .map(|(bytes, error)| Malformed::exact(conformance::Read::BinaryDiff, bytes, 100, error))
        .chain([Malformed::exact(
            conformance::Read::BinaryDiff,
            too_many.bytes(),
            2,
            DecodeError::TooManyLevels(2),
        )])
        .collect()
}

// ---- the simulator: one market on both feeds ----

/// A client of the simulator's `venue` endpoint, with an API key where `key`, subscribed
/// to `stream`.
async fn subscribed(
    simulator: &Simulator,
    venue: VenueId,
    stream: &str,
    key: bool,
) -> Result<
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>,
    tungstenite::Error,
> {
    let mut request = simulator.url(venue).into_client_request()?;
    if key {
        request
            .headers_mut()
            .insert("X-MBX-APIKEY", "simulator-key".parse().unwrap());
    }
    let (mut socket, _) = tokio_tungstenite::connect_async(request).await?;
    let subscribe = serde_json::json!({"method": "SUBSCRIBE", "params": [stream], "id": 1});
    socket
        .send(tungstenite::Message::text(subscribe.to_string()))
        .await?;
    Ok(socket)
}

/// The diff events a feed sent for `period`, by their update ids.
type Events = BTreeMap<(u64, u64), (Vec<Level>, Vec<Level>)>;

async fn collect_events(
    mut socket: tokio_tungstenite::WebSocketStream<
        tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
    >,
    venue: VenueId,
    period: Duration,
) -> Events {
    let mut events = Events::new();
    let deadline = tokio::time::Instant::now() + period;
    while let Ok(Some(Ok(message))) = tokio::time::timeout_at(deadline, socket.next()).await {
        let mut update = BookUpdate::default();
        let decoded = match &message {
            tungstenite::Message::Text(text) => {
                venue.decode_diff(text.as_bytes(), 5000, &mut update)
            }
            tungstenite::Message::Binary(bytes) => {
                venue.decode_diff_binary(bytes, 5000, &mut update)
            }
            _ => continue,
        };
        match decoded {
            Ok(Message::Book { .. }) => {
                events.insert(
                    (update.first_id, update.last_id),
                    (update.bids, update.asks),
                );
            }
            Ok(Message::SubscribeResult { accepted: true, .. }) => {}
            other => panic!("{venue}: {other:?} of {message:?}"),
        }
    }
    events
}

/// The simulator serves one Binance market on both feeds: the events with the same update
/// ids carry the same levels, in JSON and in SBE.
#[tokio::test]
async fn the_json_and_sbe_feeds_carry_the_same_market() {
    let simulator =
        Simulator::start(TcpListener::bind("127.0.0.1:0").await.unwrap(), 100, 3).unwrap();
    let json = subscribed(&simulator, VenueId::Binance, "btcusdt@depth@100ms", false)
        .await
        .unwrap();
    let sbe = subscribed(&simulator, SBE, "btcusdt@depth", true)
        .await
        .unwrap();
    let period = Duration::from_millis(1500);
    let (json, sbe) = tokio::join!(
        collect_events(json, VenueId::Binance, period),
        collect_events(sbe, SBE, period)
    );
    let common: Vec<_> = json.keys().filter(|ids| sbe.contains_key(ids)).collect();
    assert!(common.len() >= 50, "{} events on both feeds", common.len());
    for ids in common {
        assert_eq!(json[ids], sbe[ids], "event {ids:?}");
    }
}

/// A connection without the API key is refused at the upgrade, as Binance refuses it.
#[tokio::test]
async fn the_simulator_refuses_a_connection_without_the_key() {
    let simulator =
        Simulator::start(TcpListener::bind("127.0.0.1:0").await.unwrap(), 10, 3).unwrap();
    let refused = subscribed(&simulator, SBE, "btcusdt@depth20", false).await;
    match refused {
        Err(tungstenite::Error::Http(response)) => assert_eq!(response.status(), 401),
        other => panic!("{:?}", other.map(|_| "connected")),
    }
    assert_eq!(simulator.refused_for_api_key(SBE), 1);
    assert!(
        subscribed(&simulator, SBE, "btcusdt@depth20", true)
            .await
            .is_ok()
    );
    assert_eq!(simulator.refused_for_api_key(SBE), 1);
}

// ---- the service ----

/// Binance on SBE (snapshot mode: depth20) merged with Bitstamp and OKX on JSON: every
/// venue's levels in the one book.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_merges_binance_on_sbe_with_venues_on_json() {
    let simulator =
        Simulator::start(TcpListener::bind("127.0.0.1:0").await.unwrap(), 50, 5).unwrap();
    let key_file = common::api_key_file(SBE).display().to_string();
    let mut config = TestConfig::new()
        .set("service.depth", 10)
        .set("venues.binance_sbe.api_key_file", key_file)
        .instrument(
            "BTC/USDT",
            &[
                (SBE, "BTCUSDT"),
                (VenueId::Bitstamp, "btcusdt"),
                (VenueId::Okx, "BTC-USDT"),
            ],
        )
        .build();
    simulator.point(&mut config);
    let service = Service::start(config, Listeners::loopback().await.unwrap()).unwrap();
    let mut summaries = service.summaries(0);
    let venues = [SBE, VenueId::Bitstamp, VenueId::Okx];
    let merged = tokio::time::timeout(
        Duration::from_secs(20),
        summaries.wait_for(|summary| {
            let levels = summary
                .book
                .bids
                .as_slice()
                .iter()
                .chain(summary.book.asks.as_slice());
            let levels: Vec<_> = levels.collect();
            venues.iter().all(|&venue| {
                summary.venue_state(venue) == VenueState::Synced
                    && levels.iter().any(|level| level.venue == venue)
            })
        }),
    )
    .await
    .is_ok_and(|found| found.is_ok());
    assert!(
        merged,
        "every venue synced and in the book: {:?}",
        summaries.borrow().sources().collect::<Vec<_>>()
    );
    // Counted by the reader every 100 ms.
    let frames = r#"orderbook_messages_total{exchange="binance_sbe"}"#;
    common::eventually("frames counted", Duration::from_secs(5), || {
        common::service_metric(&service, frames) > 0.0
    })
    .await;
    let errors = r#"orderbook_decode_errors_total{exchange="binance_sbe"}"#;
    assert_eq!(common::service_metric(&service, errors), 0.0);
}

/// Every synced book for `ms` milliseconds is one the simulator's market had, and there
/// was at least one.
async fn books_stay_true(harness: &Harness, ms: u64) {
    let checked = harness.books_stay_true_for(Duration::from_millis(ms)).await;
    assert!(checked > 0, "no synced book in {ms} ms");
}

/// Diff mode on SBE: books synced from Binance's REST snapshots stay true to the
/// simulator's book, and each fault ends in the right counter and a clean resync.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_books_on_sbe_stay_true_through_faults() {
    let harness = Harness::start(SBE, "BTCUSDT", "ETHUSDT").await;
    harness.synced().await;
    books_stay_true(&harness, 500).await;

    // A lost event is a gap: resynchronised from a new snapshot.
    harness.simulator.skip_events(SBE, 1);
    harness
        .counted(r#"orderbook_gaps_total{exchange="binance_sbe"}"#, 1.0)
        .await;
    harness.synced().await;
    books_stay_true(&harness, 300).await;

    // A duplicate is dropped as already applied; the book stays true.
    harness.simulator.duplicate_events(SBE, 1);
    harness
        .counted(
            r#"orderbook_diff_events_dropped_total{exchange="binance_sbe",reason="stale"}"#,
            1.0,
        )
        .await;
    books_stay_true(&harness, 300).await;

    // Two events swapped: the later one first is a gap.
    harness.simulator.swap_events(SBE, 1);
    harness
        .counted(r#"orderbook_gaps_total{exchange="binance_sbe"}"#, 2.0)
        .await;
    harness.synced().await;

    // A binary frame that is no SBE book: a bad frame, every book rebuilt.
    harness
        .simulator
        .send_binary(SBE, vec![0x1A, 0, 0x13, 0x27, 1, 0]);
    harness
        .counted(
            r#"orderbook_decode_errors_total{exchange="binance_sbe"}"#,
            1.0,
        )
        .await;
    harness.synced().await;

    // A template the decoder does not read (a trade): counted and ignored.
    let trade = Written {
        template: 10000,
        event_time: 1_770_000_000_000_000,
        ids: vec![1],
        price_exponent: -2,
        quantity_exponent: -8,
        bids: Vec::new(),
        asks: Vec::new(),
        symbol: "BTCUSDT".into(),
        block_extra: 0,
        entry_extra: 0,
    };
    harness.simulator.send_binary(SBE, trade.bytes());
    harness
        .counted(
            r#"orderbook_messages_ignored_total{exchange="binance_sbe"}"#,
            1.0,
        )
        .await;
    assert_eq!(
        harness.metric(r#"orderbook_decode_errors_total{exchange="binance_sbe"}"#),
        1.0
    );

    // `serverShutdown` (JSON text): connected anew, synced.
    let connections = harness.simulator.connections(SBE);
    harness.simulator.request_reconnect(SBE);
    harness
        .wait_for("connecting again", |s| {
            s.venue_state(SBE) != VenueState::Synced
        })
        .await;
    harness.synced().await;
    assert!(harness.simulator.connections(SBE) > connections);
    books_stay_true(&harness, 300).await;
}

/// Without its API key the service does not start, and says which keys to set; with it
/// (from the environment) the same file is valid.
#[test]
fn without_its_api_key_the_service_does_not_start() {
    let dir = std::env::temp_dir().join(format!("mergebook-sbe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, venue_keys: &str| {
        let path = dir.join(name);
        let text = format!(
            "[venues.binance_sbe]\n{venue_keys}\n[[instruments]]\nname = \"BTC/USDT\"\n\
             symbols = {{ binance_sbe = \"BTCUSDT\", bitstamp = \"btcusdt\" }}\n"
        );
        std::fs::write(&path, text).unwrap();
        path.display().to_string()
    };
    let keyless = write("keyless.toml", "");
    let error = common::run_failing(&["--config", &keyless]);
    assert!(
        error.contains("venues.binance_sbe.api_key_env") && error.contains("X-MBX-APIKEY"),
        "{error}"
    );
    let from_env = write("env.toml", "api_key_env = \"MERGEBOOK_TEST_SBE_KEY\"");
    let error = common::run_failing(&["--config", &from_env, "--check-config"]);
    assert!(error.contains("no such environment variable"), "{error}");
    let key = "a-stand-in-key-for-the-test";
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_mergebook"))
        .args(["--config", &from_env, "--check-config"])
        .env("MERGEBOOK_TEST_SBE_KEY", key)
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    assert!(output.status.success(), "{stderr}");
    assert!(
        !stdout.contains(key) && !stderr.contains(key),
        "the key shown"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
