//! Deribit: every recorded book replays to the book a slow reference (serde_json's numbers
//! and a sorted map, the documented algorithm) keeps, the `change_id` chain followed; the
//! decoder refuses every truncation and malformed frame with a typed error and decodes
//! generated frames of any layout, exponents included; against the simulator (JSON-RPC,
//! heartbeats that must be answered), the venue syncs in both modes, a lost change
//! resubscribes its book alone, and a heartbeat left unanswered ends in the venue closing
//! the connection and mergebook syncing on a new one.

use crate::common::in_band::{self, Harness, Sides};
use crate::conformance::{self, Row};
use crate::generated::object;

use mergebook::book::{BookUpdate, Level, Side, TopBook};
use mergebook::fixed::{FixedPoint, FixedPointError};
use mergebook::venue::{DecodeError, Message, StreamKind, VenueId};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::time::Duration;

const DERIBIT: VenueId = VenueId::Deribit;

const TIMELINE_2021: &str = "timeline_options_raw_2021-07-22.jsonl";
const BOOK_2021: &str = "book_BTC-24SEP21-8000-P_raw_snapshot_then_changes_2021-07-22.jsonl";
const TRIMMED_2026: &str = "trimmed_frames_2026-09-23_probe_notes.jsonl";
const WINDOW_2026: &str = "grouped_book_BTC-PERPETUAL_none_10_100ms_2026-01-24.json";

/// A recording's frames that the venue sent: a timeline's received frames, a plain
/// file's lines less the client's requests.
fn venue_frames(name: &str) -> Vec<String> {
    let lines = in_band::frames(DERIBIT, name);
    lines
        .into_iter()
        .filter_map(|line| {
            let value: serde_json::Value = serde_json::from_str(&line).ok()?;
            match value.get("kind") {
                Some(kind) => {
                    (kind == "ws_recv").then(|| value["raw"].as_str().unwrap().to_owned())
                }
                None => (value.get("method").and_then(|m| m.as_str()) != Some("public/subscribe")
                    && value
                        .get("params")
                        .and_then(|p| p.get("interval"))
                        .is_none()
                    && value.get("method").and_then(|m| m.as_str()) != Some("public/test"))
                .then_some(line),
            }
        })
        .collect()
}

/// The frames of `channel` in a recording.
fn frames_of(name: &str, channel: &str) -> Vec<String> {
    let named = format!(r#""channel":"{channel}""#);
    venue_frames(name)
        .into_iter()
        .filter(|frame| frame.contains(&named))
        .collect()
}

// ---- the reference: serde_json's numbers and a sorted map ----

/// A JSON number as serde_json reads it (a double) and writes it back (its shortest
/// text), exactly as a decimal.
fn number(value: &serde_json::Value) -> FixedPoint {
    FixedPoint::parse_scientific(value.as_number().unwrap().to_string().as_bytes()).unwrap()
}

#[derive(Default)]
struct ReferenceBook {
    bids: BTreeMap<FixedPoint, FixedPoint>,
    asks: BTreeMap<FixedPoint, FixedPoint>,
    /// The last `change_id` while in sync; `None` after a break.
    last: Option<u64>,
}

impl ReferenceBook {
    /// Applies one book notification as docs/protocols.md describes: a snapshot replaces;
    /// a change whose `prev_change_id` is the last `change_id` sets each level (`delete`
    /// removes); anything else leaves the book out of sync until a snapshot.
    fn apply(&mut self, frame: &str) {
        let message: serde_json::Value = serde_json::from_str(frame).unwrap();
        let data = &message["params"]["data"];
        let change_id = data["change_id"].as_u64().unwrap();
        if data["type"] == "snapshot" {
            *self = ReferenceBook::default();
        } else if self.last != data["prev_change_id"].as_u64() {
            self.last = None;
            return;
        }
        self.last = Some(change_id);
        for (name, side) in [("bids", &mut self.bids), ("asks", &mut self.asks)] {
            for level in data[name].as_array().unwrap() {
                let (price, amount) = (number(&level[1]), number(&level[2]));
                match level[0] == "delete" || amount.is_zero() {
                    true => side.remove(&price),
                    false => side.insert(price, amount),
                };
            }
        }
    }

    /// The book's top, where it is synced and has both sides (a book lacking one is not
    /// merged, the default `allow_one_sided = false`).
    fn top(&self, depth: usize) -> Option<Sides> {
        self.last?;
        if self.bids.is_empty() || self.asks.is_empty() {
            return None;
        }
        let level = |(price, amount): (&FixedPoint, &FixedPoint)| Level {
            price: *price,
            amount: *amount,
        };
        Some((
            self.bids.iter().rev().take(depth).map(level).collect(),
            self.asks.iter().take(depth).map(level).collect(),
        ))
    }
}

/// Every recorded `book` channel, each alone: every book the replay publishes is the
/// reference's, the chain unbroken; BTC-24SEP21-8000-P's ends on SOURCES.md's book.
#[test]
fn every_recorded_book_replays_to_the_reference_with_its_chain_followed() {
    let mut channels: Vec<(&str, String)> = Vec::new();
    for frame in venue_frames(TIMELINE_2021) {
        let value: serde_json::Value = serde_json::from_str(&frame).unwrap();
        let channel = value["params"]["channel"].as_str().unwrap_or_default();
        if channel.starts_with("book.") && !channels.iter().any(|(_, known)| known == channel) {
            channels.push((TIMELINE_2021, channel.to_owned()));
        }
    }
    assert_eq!(channels.len(), 6);
    channels.push((BOOK_2021, "book.BTC-24SEP21-8000-P.raw".to_owned()));
    let mut changes = 0;
    for (name, channel) in &channels {
        let frames = frames_of(name, channel);
        let mut reference = ReferenceBook::default();
        let expected: Vec<_> = frames
            .iter()
            .map(|frame| {
                reference.apply(frame);
                reference.top(10)
            })
            .collect();
        assert!(reference.last.is_some(), "{channel}: the chain holds");
        changes += frames.len() - 1;
        let (published, stats) = in_band::replay(DERIBIT, &frames, 10, 400);
        assert_eq!(published, expected, "{channel}");
        assert_eq!((stats.decode_errors, stats.gaps), (0, 0), "{channel}");
    }
    assert_eq!(changes, 60, "30 in each recording of BTC-24SEP21-8000-P");
    let (published, _) = in_band::replay(
        DERIBIT,
        &frames_of(BOOK_2021, "book.BTC-24SEP21-8000-P.raw"),
        10,
        400,
    );
    let (bids, asks) = published.last().unwrap().clone().unwrap();
    let level = |price: &str, amount: &str| Level {
        price: price.parse().unwrap(),
        amount: amount.parse().unwrap(),
    };
    assert_eq!((bids.len(), asks.len()), (1, 10));
    assert_eq!(
        (bids[0], asks[0]),
        (level("0.0005", "153.1"), level("0.0015", "94.7"))
    );
}

/// A change that skips one, or a `prev_change_id` of 0, is a gap; one older than the book
/// is dropped; never a wrong book.
#[test]
fn a_broken_chain_is_a_gap() {
    let frames = frames_of(BOOK_2021, "book.BTC-24SEP21-8000-P.raw");
    let skipped = [frames[0].clone(), frames[2].clone(), frames[3].clone()];
    let (published, stats) = in_band::replay(DERIBIT, &skipped, 10, 400);
    assert_eq!((published.last().cloned(), stats.gaps), (Some(None), 1));
    let zero = frames[1].replace(r#""prev_change_id":33195894164"#, r#""prev_change_id":0"#);
    let (published, stats) = in_band::replay(DERIBIT, &[frames[0].clone(), zero], 10, 400);
    assert_eq!((published.last().cloned(), stats.gaps), (Some(None), 1));
    let twice = [
        frames[0].clone(),
        frames[1].clone(),
        frames[2].clone(),
        frames[1].clone(),
        frames[3].clone(),
    ];
    let (published, stats) = in_band::replay(DERIBIT, &twice, 10, 400);
    assert_eq!(stats.gaps, 0);
    let (expected, _) = in_band::replay(DERIBIT, &frames[..4], 10, 400);
    assert_eq!(published.last(), expected.last());
}

/// The 2026 frames: each book notification decodes to the levels serde_json reads; the
/// grouped windows in snapshot mode to their top; the answers and errors as what they are.
#[test]
fn the_2026_frames_decode() {
    let mut books = 0;
    for frame in venue_frames(TRIMMED_2026)
        .into_iter()
        .chain(venue_frames(WINDOW_2026))
    {
        let value: serde_json::Value = serde_json::from_str(&frame).unwrap();
        let channel = value["params"]["channel"].as_str().unwrap_or_default();
        let levels = |name: &str, shift: usize| -> Vec<Level> {
            let side = value["params"]["data"][name].as_array().unwrap().iter();
            side.map(|level| Level {
                price: number(&level[shift]),
                amount: number(&level[shift + 1]),
            })
            .collect()
        };
        if channel.contains(".none.") {
            let mut top = TopBook::default();
            assert_eq!(
                DERIBIT.decode(frame.as_bytes(), 20, &mut top),
                Ok(Message::Book {
                    stream: channel.as_bytes()
                })
            );
            assert_eq!(
                (top.bids.as_slice(), top.asks.as_slice()),
                (&levels("bids", 0)[..], &levels("asks", 0)[..])
            );
            books += 1;
        } else if channel.starts_with("book.") {
            let mut update = BookUpdate::default();
            assert_eq!(
                DERIBIT.decode_diff(frame.as_bytes(), 100, &mut update),
                Ok(Message::Book {
                    stream: channel.as_bytes()
                })
            );
            let zeroed = |levels: Vec<Level>, name: &str| -> Vec<Level> {
                let actions = value["params"]["data"][name].as_array().unwrap().iter();
                levels
                    .into_iter()
                    .zip(actions)
                    .map(|(level, raw)| match raw[0] == "delete" {
                        true => Level {
                            amount: FixedPoint::default(),
                            ..level
                        },
                        false => level,
                    })
                    .collect()
            };
            assert_eq!(update.bids, zeroed(levels("bids", 1), "bids"));
            assert_eq!(update.asks, zeroed(levels("asks", 1), "asks"));
            books += 1;
        } else {
            let mut update = BookUpdate::default();
            let message = DERIBIT
                .decode_diff(frame.as_bytes(), 100, &mut update)
                .unwrap();
            assert!(!matches!(message, Message::Book { .. }), "{frame}");
        }
    }
    assert_eq!(books, 6);
}

// ---- the decoder on bad input ----

/// Its row in the venue conformance tests.
pub fn row() -> Row {
    conformance::diff_row(DERIBIT, recorded_frames(), malformed_frames())
}

/// The frames of its conformance row: every recorded one.
fn recorded_frames() -> Vec<String> {
    [TIMELINE_2021, BOOK_2021, TRIMMED_2026, WINDOW_2026]
        .into_iter()
        .flat_map(venue_frames)
        .collect()
}

/// The malformed frames of its conformance row.
fn malformed_frames() -> Vec<(String, DecodeError)> {
    let book = |data: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"subscription","params":{{"channel":"book.BTC-PERPETUAL.100ms","data":{{{data}}}}}}}"#
        )
    };
    let change = |levels: &str| {
        book(&format!(
            r#""type":"change","change_id":9,"prev_change_id":8,{levels}"#
        ))
    };
    let number = |error| DecodeError::Number { at: 0, error };
    vec![
        (change(r#""bids":[]"#), DecodeError::MissingKey("asks")),
        (change(r#""bids":[],"asks":[],"asks":[]"#), DecodeError::DuplicateKey("asks")),
        (change(r#""bids":[["new",1.5]],"asks":[]"#), DecodeError::Unexpected { at: 0, expected: "','" }),
        (change(r#""bids":[["new",1.5,2,3]],"asks":[]"#), DecodeError::Unexpected { at: 0, expected: "']' closing a level" }),
        (change(r#""bids":[["add",1.5,2]],"asks":[]"#), DecodeError::Invalid("a level's action: new, change or delete")),
        (change(r#""bids":[["new","x",2]],"asks":[]"#), number(FixedPointError::InvalidCharacter)),
        (change(r#""bids":[["new",-1.5,2]],"asks":[]"#), number(FixedPointError::Negative)),
        (change(r#""bids":[["new",1.5,2e]],"asks":[]"#), number(FixedPointError::InvalidCharacter)),
        (change(r#""bids":{},"asks":[]"#), DecodeError::Unexpected { at: 0, expected: "'['" }),
        (book(r#""type":"change","change_id":9,"bids":[],"asks":[]"#), DecodeError::MissingKey("prev_change_id")),
        (book(r#""type":"replace","change_id":9,"bids":[],"asks":[]"#), DecodeError::Invalid("a book's type: snapshot or change")),
        (book(r#""type":"snapshot","bids":[],"asks":[]"#), DecodeError::MissingKey("change_id")),
        (book(r#""type":"snapshot","change_id":9,"bids":[],"asks":[["new",2,1],["new",1,1]]"#), DecodeError::Unsorted(Side::Ask)),
        (book(r#""type":"snapshot","change_id":9,"bids":[],"asks":[["new",2,0]]"#), DecodeError::Invalid("a snapshot's level of amount 0")),
        (book(r#""type":"change","change_id":-9,"prev_change_id":8,"bids":[],"asks":[]"#), DecodeError::Unexpected { at: 0, expected: "a digit" }),
        (r#"{"jsonrpc":"2.0","method":"subscription","params":{"channel":"book.BTC-PERPETUAL.100ms"}}"#.to_owned(), DecodeError::MissingKey("data")),
        (r#"{"jsonrpc":"2.0","method":"subscription","params":{"data":{}}}"#.to_owned(), DecodeError::MissingKey("channel")),
        (r#"{"jsonrpc":"2.0","usIn":1}"#.to_owned(), DecodeError::UnknownMessage("Deribit JSON-RPC message")),
        (r#"[{"jsonrpc":"2.0"}]"#.to_owned(), DecodeError::Unexpected { at: 0, expected: "'{'" }),
        (format!("{} x", change(r#""bids":[],"asks":[]"#)), DecodeError::TrailingBytes { at: 0 }),
    ]
}

// ---- generated frames against the levels they were made of ----

/// A number's text: its decimal, or its digits with an exponent.
fn number_text(raw: u64, scientific: bool) -> String {
    match scientific {
        true => format!("{raw}e-8"),
        false => FixedPoint::from_raw(raw).to_string(),
    }
}

fn side_text(levels: &[(u64, u64)], action: bool, spaced: bool, scientific: bool) -> String {
    let separator = if spaced { ", " } else { "," };
    let text: Vec<String> = levels
        .iter()
        .map(|&(price, amount)| {
            let action = match (action, amount) {
                (false, _) => String::new(),
                (true, 0) => format!(r#""delete"{separator}"#),
                (true, _) => format!(r#""new"{separator}"#),
            };
            let (price, amount) = (
                number_text(price, scientific),
                number_text(amount, scientific),
            );
            format!("[{action}{price}{separator}{amount}]")
        })
        .collect();
    format!("[{}]", text.join(separator))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any layout JSON allows, any member order, numbers plain or with an exponent, ids up
    /// to 2^64: the levels in wire order, the ids as the chain reads them.
    #[test]
    fn generated_changes_decode_to_the_levels_they_hold(
        bids in proptest::collection::btree_map(1u64..1u64 << 50, 0u64..1u64 << 50, 0..30),
        asks in proptest::collection::btree_map(1u64..1u64 << 50, 0u64..1u64 << 50, 0..30),
        ids in (any::<u64>(), any::<u64>()),
        seed in any::<u64>(),
        spaced in any::<bool>(),
        scientific in any::<bool>(),
    ) {
        let bids: Vec<(u64, u64)> = bids.into_iter().rev().collect();
        let asks: Vec<(u64, u64)> = asks.into_iter().collect();
        let (prev, change) = ids;
        let mut data = vec![
            r#""type":"change""#.to_owned(),
            r#""timestamp":1626993724318"#.to_owned(),
            r#""instrument_name":"BTC-PERPETUAL""#.to_owned(),
            format!(r#""prev_change_id":{prev}"#),
            format!(r#""change_id":{change}"#),
            format!(r#""bids":{}"#, side_text(&bids, true, spaced, scientific)),
            format!(r#""asks":{}"#, side_text(&asks, true, spaced, scientific)),
        ];
        let mut params = vec![
            r#""channel":"book.BTC-PERPETUAL.100ms""#.to_owned(),
            format!(r#""data":{}"#, object(&mut data, seed, spaced)),
        ];
        let mut members = vec![
            r#""jsonrpc":"2.0""#.to_owned(),
            r#""method":"subscription""#.to_owned(),
            format!(r#""params":{}"#, object(&mut params, seed.rotate_left(5), spaced)),
        ];
        let frame = object(&mut members, seed.rotate_left(9), spaced);
        let mut update = BookUpdate::default();
        let message = DERIBIT.decode_diff(frame.as_bytes(), 5000, &mut update);
        prop_assert_eq!(message, Ok(Message::Book { stream: b"book.BTC-PERPETUAL.100ms" }), "{}", frame);
        let levels = |side: &[(u64, u64)]| -> Vec<Level> {
            side.iter().map(|&(p, q)| Level { price: FixedPoint::from_raw(p), amount: FixedPoint::from_raw(q) }).collect()
        };
        prop_assert_eq!(&update.bids, &levels(&bids));
        prop_assert_eq!(&update.asks, &levels(&asks));
        prop_assert_eq!((update.is_snapshot, update.first_id, update.last_id), (false, prev, change));
        prop_assert_eq!(update.exchange_time_ns, 1_626_993_724_318_000_000);
    }
}

// ---- against the simulator ----

const GAPS: &str = r#"orderbook_resyncs_total{exchange="deribit",reason="gap"}"#;

/// Diff mode: every book synced from its subscription's snapshot, the subscription's
/// answer compared with the request, each heartbeat's `test_request` answered (the
/// connection stays open); a lost change resubscribes that book alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deribit_syncs_answers_its_heartbeats_and_a_lost_change_resubscribes_its_book() {
    let harness = Harness::start(DERIBIT, "BTC_USDC-PERPETUAL", "ETH_USDC-PERPETUAL").await;
    harness.synced().await;
    let checked = harness
        .books_stay_true_for(Duration::from_millis(1000))
        .await;
    assert!(checked > 10, "only {checked} books");
    crate::common::eventually("a heartbeat answered", in_band::WAIT, || {
        harness.simulator.client_pings(DERIBIT) >= 1
    })
    .await;
    assert_eq!(harness.metric(GAPS), 0.0);
    harness
        .a_lost_event_rebuilds_that_book_alone("BTC_USDC-PERPETUAL")
        .await;
    assert_eq!(
        harness.simulator.heartbeat_closes(DERIBIT),
        0,
        "every heartbeat answered in time"
    );
    harness.service.stop().await;
}

/// Heartbeats whose answers are lost (five, a second apart): Deribit closes the
/// connection, and mergebook syncs every book on a new connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_heartbeat_left_unanswered_closes_the_connection_and_mergebook_recovers() {
    let harness = Harness::start(DERIBIT, "BTC_USDC-PERPETUAL", "ETH_USDC-PERPETUAL").await;
    harness.both_books_synced("at the start").await;
    harness.simulator.lose_heartbeat_answers(DERIBIT, 5);
    crate::common::eventually("the venue closed the connection", in_band::WAIT, || {
        harness.simulator.heartbeat_closes(DERIBIT) == 1
    })
    .await;
    crate::common::eventually("connected again", in_band::WAIT, || {
        harness.simulator.connections(DERIBIT) >= 2
    })
    .await;
    harness.both_books_synced("on the new connection").await;
    harness
        .books_stay_true_for(Duration::from_millis(300))
        .await;
    harness.service.stop().await;
}

/// Snapshot mode: the grouped window of 10 for a depth of 10; an inverse perpetual,
/// counted in USD, merged in an instrument counting USD.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn grouped_windows_in_snapshot_mode_sync_an_inverse_perpetual_in_usd() {
    let harness = Harness::start_in(
        StreamKind::Snapshots,
        DERIBIT,
        "BTC-PERPETUAL",
        "ETH-PERPETUAL",
        |c| c,
    )
    .await;
    harness.synced().await;
    let sent = harness
        .simulator
        .last_sent(DERIBIT, "book.BTC-PERPETUAL.none.10.100ms")
        .expect("a window");
    assert!(sent.contains(r#""change_id""#), "{sent}");
    harness
        .books_stay_true_for(Duration::from_millis(500))
        .await;
    harness.service.stop().await;
}

/// The client id and secret the authorised tests configure; the simulator takes any.
const CLIENT_CREDENTIALS: &str = "sim-client:do-not-record-this-secret";

/// A directory of this test process's own, `name`d, empty.
fn scratch_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("mergebook-deribit-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// A file holding [`CLIENT_CREDENTIALS`], in `dir`.
fn credentials_file(dir: &std::path::Path) -> String {
    let path = dir.join("deribit-credentials");
    std::fs::write(&path, CLIENT_CREDENTIALS).unwrap();
    path.display().to_string()
}

/// Diff mode with [`CLIENT_CREDENTIALS`] configured (and whatever `configure` adds).
async fn authorised_harness(
    dir: &std::path::Path,
    configure: impl FnOnce(crate::common::config::TestConfig) -> crate::common::config::TestConfig,
) -> Harness {
    let credentials = credentials_file(dir);
    Harness::start_in(
        StreamKind::Diff,
        DERIBIT,
        "BTC_USDC-PERPETUAL",
        "ETH_USDC-PERPETUAL",
        |config| configure(config.set("venues.deribit.api_key_file", credentials)),
    )
    .await
}

/// Every recording file under `dir` (a folder a connection), decompressed and
/// concatenated.
fn recorded_text(dir: &std::path::Path) -> String {
    let mut text = String::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            text.push_str(&recorded_text(&path));
        } else if path
            .to_string_lossy()
            .ends_with(mergebook::record::TIMELINE_EXTENSION)
        {
            let bytes = std::fs::read(&path).unwrap();
            text.push_str(&String::from_utf8(zstd::decode_all(bytes.as_slice()).unwrap()).unwrap());
        }
    }
    text
}

/// With credentials configured, each connection is authorised by `public/auth` before it
/// subscribes, and follows the `raw` books, which the simulator refuses to a connection
/// not authorised; the recording keeps the request and its answer, but neither the
/// secret nor the tokens.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn raw_books_on_an_authorised_connection_sync_and_the_secret_is_never_recorded() {
    let dir = scratch_dir("recorded");
    let recording = dir.join("recording");
    let harness = authorised_harness(&dir, |config| {
        config.set("record.dir", recording.display().to_string())
    })
    .await;
    harness.synced().await;
    let checked = harness
        .books_stay_true_for(Duration::from_millis(500))
        .await;
    assert!(checked > 5, "only {checked} books");
    assert_eq!(harness.simulator.refused_unauthorised(DERIBIT), 0);
    harness.service.stop().await;

    let recorded = recorded_text(&recording);
    assert!(recorded.contains("public/auth"), "the request recorded");
    assert!(
        recorded.contains("book.BTC_USDC-PERPETUAL.raw"),
        "raw books subscribed"
    );
    assert!(
        !recorded.contains("book.BTC_USDC-PERPETUAL.100ms"),
        "no public book asked for"
    );
    assert!(
        recorded.contains("(not recorded)"),
        "what stands for the secret and the tokens"
    );
    let (_, secret) = CLIENT_CREDENTIALS.split_once(':').unwrap();
    for never in [secret, "sim-access-token", "sim-refresh-token"] {
        assert!(!recorded.contains(never), "{never} recorded");
    }
}

/// Credentials the venue refuses (from a reconnection on) end each connection before it
/// subscribes, counted (`reason="auth_refused"`), no book merged; once accepted again,
/// every book syncs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_credentials_are_counted_and_retried_until_accepted() {
    let harness = authorised_harness(&scratch_dir("refused"), |config| config).await;
    harness.synced().await;
    harness.simulator.refuse_credentials(DERIBIT, true);
    harness.simulator.disconnect(DERIBIT);
    let refused = r#"orderbook_connection_errors_total{exchange="deribit",reason="auth_refused"}"#;
    harness.counted(refused, 2.0).await;
    // No subscription is tried on a connection not authorised (the simulator would refuse
    // it with 13778, counted), so the venue stays out of the merge until it is.
    assert_eq!(harness.simulator.refused_unauthorised(DERIBIT), 0);
    harness
        .wait_for("Deribit out of the merge", |s| {
            s.venue_state(DERIBIT) != mergebook::merger::summary::VenueState::Synced
        })
        .await;
    harness.simulator.refuse_credentials(DERIBIT, false);
    harness.synced().await;
    harness
        .books_stay_true_for(Duration::from_millis(300))
        .await;
    harness.service.stop().await;
}

/// The simulator as Deribit answers a `raw` subscription: error 13778 on a connection not
/// authorised; listed once `public/auth` authorised it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_simulator_serves_raw_books_to_authorised_connections_only() {
    use futures_util::{SinkExt, StreamExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let simulator = mergebook::sim::Simulator::start(listener, 50, 5).unwrap();
    let (mut socket, _) = tokio_tungstenite::connect_async(simulator.url(DERIBIT))
        .await
        .unwrap();
    let mut ask = async |request: serde_json::Value| {
        socket.send(request.to_string().into()).await.unwrap();
        let answer = socket.next().await.unwrap().unwrap().into_text().unwrap();
        serde_json::from_str::<serde_json::Value>(&answer).unwrap()
    };
    let subscribe = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "public/subscribe",
        "params": {"channels": ["book.BTC-PERPETUAL.raw"]}});
    let refused = ask(subscribe.clone()).await;
    assert_eq!(refused["error"]["code"], 13778, "{refused}");
    let auth = serde_json::json!({"jsonrpc": "2.0", "id": 2, "method": "public/auth",
        "params": {"grant_type": "client_credentials", "client_id": "a", "client_secret": "b"}});
    let authorised = ask(auth).await;
    assert_eq!(authorised["result"]["token_type"], "bearer", "{authorised}");
    let listed = ask(subscribe).await;
    assert_eq!(
        listed["result"],
        serde_json::json!(["book.BTC-PERPETUAL.raw"]),
        "{listed}"
    );
    assert_eq!(simulator.refused_unauthorised(DERIBIT), 1);
}
