use super::*;
use crate::book::Level;
use crate::fixed::FixedPoint;

/// What the core handed out: each publish's stream and state, and the events.
#[derive(Default)]
struct Recorder {
    published: Vec<(usize, VenueState)>,
    /// The last book handed on.
    book: TopBook,
    events: Vec<FeedEvent>,
}

impl FeedOutput for Recorder {
    fn publish(&mut self, stream: usize, write: impl FnOnce(&mut VenueFeed)) {
        let mut feed = VenueFeed::default();
        write(&mut feed);
        self.published.push((stream, feed.state));
        self.book = feed.book;
    }

    fn note(&mut self, _stream: Option<usize>, event: FeedEvent) {
        self.events.push(event);
    }
}

/// A snapshot-mode core of `venue` on the streams of `symbols`, connected at 0.
fn connected(venue: VenueId, symbols: &[&str]) -> (FeedCore, Vec<String>, Recorder) {
    let streams = symbols
        .iter()
        .map(|symbol| CoreStream {
            name: venue.streams().stream_name(symbol, 10),
            symbol: (*symbol).to_owned(),
            contract_size: None,
            unit: UnitSize::COIN,
        })
        .collect();
    let mut core = FeedCore::new(venue, 10, streams, None, 0);
    let mut out = Recorder::default();
    let frames = core.connected(0, &mut out);
    (core, frames, out)
}

/// A diff-mode core of `venue` on `symbol`'s diff stream, its snapshots `snapshot_depth`
/// deep, connected at 0.
fn connected_diff(venue: VenueId, symbol: &str, snapshot_depth: usize) -> (FeedCore, Recorder) {
    let settings = crate::replay::diff::replay_settings(crate::replay::DiffDepths {
        depth: 10,
        max_levels: 100,
        snapshot_depth,
    });
    let streams = vec![CoreStream {
        name: venue.streams().diff_stream_name(symbol),
        symbol: symbol.to_owned(),
        contract_size: None,
        unit: UnitSize::COIN,
    }];
    let mut core = FeedCore::new(venue, 10, streams, Some(&settings), 0);
    let mut out = Recorder::default();
    core.connected(0, &mut out);
    (core, out)
}

/// A level of one unit at `price` (raw).
fn level(price: u64) -> Level {
    Level {
        price: FixedPoint::from_raw(price),
        amount: FixedPoint::from_raw(100_000_000),
    }
}

/// A book of one level a side: bid 0.068, ask 0.069.
fn one_level_book() -> crate::book::BookUpdate {
    crate::book::BookUpdate {
        bids: vec![level(6_800_000)],
        asks: vec![level(6_900_000)],
        ..crate::book::BookUpdate::default()
    }
}

/// A book frame of `symbol`'s stream, with sequence `sequence`.
fn book_frame(venue: VenueId, symbol: &str, sequence: u64) -> Vec<u8> {
    let mut book = TopBook {
        venue_sequence: sequence,
        ..TopBook::default()
    };
    book.bids.push(level(6_800_000));
    book.asks.push(level(6_900_000));
    let mut frame = Vec::new();
    venue.simulated().encode_book(
        &venue.streams().stream_name(symbol, 10),
        &book,
        8,
        &mut frame,
    );
    frame
}

fn synced_publishes(out: &Recorder) -> usize {
    let synced = |&&(_, state): &&(usize, VenueState)| state == VenueState::Synced;
    out.published.iter().filter(synced).count()
}

/// Books are used only once their subscription is acknowledged, by the id of the
/// request that asked for them: an answer to another request acknowledges nothing.
#[test]
fn books_wait_for_the_acknowledgement_of_their_own_request() {
    let venue = VenueId::Binance;
    let (mut core, frames, mut out) = connected(venue, &["ETHBTC", "BTCUSDT"]);
    assert_eq!(frames.len(), 1);
    assert!(frames[0].contains(r#""id":1"#), "{}", frames[0]);
    assert_eq!(core.acks_pending(), 2);
    core.on_frame(&book_frame(venue, "ETHBTC", 1), 1, &mut out);
    assert_eq!(synced_publishes(&out), 0);
    assert!(out.events.contains(&FeedEvent::BookBeforeAck));
    core.on_frame(br#"{"result":null,"id":99}"#, 2, &mut out);
    assert_eq!(core.acks_pending(), 2, "not an answer to our request");
    core.on_frame(br#"{"result":null,"id":1}"#, 3, &mut out);
    assert_eq!(core.acks_pending(), 0);
    core.on_frame(&book_frame(venue, "ETHBTC", 2), 4, &mut out);
    assert_eq!(out.published.last(), Some(&(0, VenueState::Synced)));
    // Unanswered for the timeout: overdue; answered: never.
    let (core, _, _) = connected(venue, &["ETHBTC"]);
    let timeout = std::time::Duration::from_nanos(100);
    assert!(!core.ack_overdue(99, timeout));
    assert!(core.ack_overdue(100, timeout));
}

/// A connection of many streams finds each frame's stream by its key (`slots_by_key`)
/// as one of a few finds it by scanning: every book to its own stream, a stream not asked
/// for to none; on Binance SBE too, whose messages name the symbol, not the stream.
#[test]
fn each_book_goes_to_its_stream_however_many_the_connection_carries() {
    let symbols: Vec<String> = (0..SLOTS_SCANNED * 2)
        .map(|i| format!("COIN{i}USDT"))
        .collect();
    for (venue, count) in [VenueId::Binance, VenueId::BinanceSbe]
        .into_iter()
        .flat_map(|venue| [(venue, SLOTS_SCANNED), (venue, SLOTS_SCANNED * 2)])
    {
        let chosen: Vec<&str> = symbols[..count].iter().map(String::as_str).collect();
        let (mut core, _, mut out) = connected(venue, &chosen);
        assert_eq!(core.slots_by_key.is_some(), count > SLOTS_SCANNED);
        core.on_frame(br#"{"result":null,"id":1}"#, 1, &mut out);
        let on_book = |core: &mut FeedCore, symbol, at, out: &mut Recorder| {
            let frame = book_frame(venue, symbol, 10);
            match venue.facts().binary_books {
                true => core.on_binary_frame(&frame, at, out),
                false => core.on_frame(&frame, at, out),
            }
        };
        for (slot, symbol) in chosen.iter().enumerate().rev() {
            on_book(&mut core, symbol, 2, &mut out);
            assert_eq!(out.published.last(), Some(&(slot, VenueState::Synced)));
        }
        let published = out.published.len();
        on_book(&mut core, "NOTASKEDUSDT", 3, &mut out);
        assert_eq!(out.published.len(), published, "a stream not asked for");
    }
}

/// A venue that acknowledges each stream by name: one stream's acknowledgement lets
/// its books through, not the others'.
#[test]
fn an_acknowledgement_naming_a_stream_is_that_stream_s_alone() {
    let venue = VenueId::Bitstamp;
    let (mut core, frames, mut out) = connected(venue, &["ethbtc", "btcusd"]);
    assert_eq!(frames.len(), 2);
    let ack = |channel: &str| {
        format!(r#"{{"event":"bts:subscription_succeeded","channel":"{channel}","data":{{}}}}"#)
    };
    core.on_frame(ack("order_book_ethbtc").as_bytes(), 1, &mut out);
    core.on_frame(ack("order_book_ltcusd").as_bytes(), 2, &mut out);
    assert_eq!(core.acks_pending(), 1);
    core.on_frame(&book_frame(venue, "btcusd", 1), 3, &mut out);
    core.on_frame(&book_frame(venue, "ethbtc", 1), 4, &mut out);
    assert_eq!(out.published, [(0, VenueState::Synced)]);
}

/// The watchdog looks at each stream: a silent one is subscribed again (alone, with
/// an acknowledgement awaited) while the others deliver, and again at doubling intervals
/// while it stays quiet among them, never costing the connection; data starts its count
/// over; a connection on which every stream is silent after a resubscription is recycled.
#[test]
fn a_quiet_stream_is_subscribed_again_and_only_a_silent_connection_recycled() {
    let venue = VenueId::Binance;
    let (mut core, _, mut out) = connected(venue, &["ETHBTC", "BTCUSDT"]);
    core.on_frame(br#"{"result":null,"id":1}"#, 1, &mut out);
    let allowance = 100;
    assert_eq!(core.next_silence_check(allowance), 100);
    assert_eq!(core.check_silence(99, allowance, &mut out), Silence::None);
    core.on_frame(&book_frame(venue, "BTCUSDT", 1), 50, &mut out);
    let Silence::Resubscribe { streams, frames } = core.check_silence(100, allowance, &mut out)
    else {
        panic!("the silent stream is subscribed again");
    };
    assert_eq!(streams, 1);
    assert_eq!(
        frames,
        [
            r#"{"id":0,"method":"UNSUBSCRIBE","params":["ethbtc@depth10@100ms"]}"#,
            r#"{"id":2,"method":"SUBSCRIBE","params":["ethbtc@depth10@100ms"]}"#,
        ]
    );
    assert_eq!(core.acks_pending(), 1);
    // The unsubscription's answer acknowledges nothing; the subscription's does.
    core.on_frame(br#"{"result":null,"id":0}"#, 101, &mut out);
    assert_eq!(core.acks_pending(), 1);
    core.on_frame(br#"{"result":null,"id":2}"#, 102, &mut out);
    assert_eq!(core.acks_pending(), 0);
    // BTCUSDT, silent since 50, is due first; ETHBTC's allowance is doubled.
    assert_eq!(core.next_silence_check(allowance), 150);
    core.on_frame(&book_frame(venue, "BTCUSDT", 2), 140, &mut out);
    assert_eq!(core.next_silence_check(allowance), 240);
    // ETHBTC stays quiet while BTCUSDT delivers: subscribed again at 300 (two
    // allowances), then at 700 (four), the connection kept.
    let mut resubscribed_at = Vec::new();
    for (number, at) in (3..).zip((240..=1040).step_by(100)) {
        core.on_frame(&book_frame(venue, "BTCUSDT", number), at, &mut out);
        for now in [at + 60, at + 99] {
            match core.check_silence(now, allowance, &mut out) {
                Silence::None => {}
                Silence::Resubscribe { streams: 1, .. } => resubscribed_at.push(now),
                other => panic!("at {now}: {other:?}"),
            }
        }
    }
    assert_eq!(resubscribed_at, [300, 700]);
    // Data starts ETHBTC's count over: one allowance again.
    core.on_frame(&book_frame(venue, "ETHBTC", 1), 1100, &mut out);
    core.on_frame(&book_frame(venue, "BTCUSDT", 12), 1140, &mut out);
    assert!(matches!(
        core.check_silence(1200, allowance, &mut out),
        Silence::Resubscribe { streams: 1, .. }
    ));
    // Both silent for an allowance after that resubscription: nothing comes on the
    // connection at all.
    assert_eq!(core.check_silence(1239, allowance, &mut out), Silence::None);
    assert_eq!(core.next_silence_check(allowance), 1240);
    assert_eq!(
        core.check_silence(1300, allowance, &mut out),
        Silence::Recycle
    );
    // A new connection starts every count over.
    core.connected(1400, &mut out);
    assert_eq!(core.check_silence(1499, allowance, &mut out), Silence::None);
}

/// A stream sized in contracts is handed on in the base currency, each size times the
/// contract size; a product past 8 decimals is never merged: the book goes out of sync,
/// counted as a bad frame.
#[test]
fn contracts_are_handed_on_in_the_base_currency_exactly_or_not_at_all() {
    let venue = VenueId::Okx;
    let streams = vec![CoreStream {
        name: venue.streams().stream_name("BTC-USDT-SWAP", 10),
        symbol: "BTC-USDT-SWAP".to_owned(),
        contract_size: Some("0.01".parse().unwrap()),
        unit: UnitSize::COIN,
    }];
    let mut core = FeedCore::new(venue, 10, streams, None, 0);
    let mut out = Recorder::default();
    core.connected(0, &mut out);
    core.on_frame(
        br#"{"event":"subscribe","arg":{"channel":"books5","instId":"BTC-USDT-SWAP"}}"#,
        1,
        &mut out,
    );
    let frame = |seq: u64, size: &str| {
        format!(
            r#"{{"arg":{{"channel":"books5","instId":"BTC-USDT-SWAP"}},"data":[{{"asks":[["63921.5","{size}","0","42"]],"bids":[["63921.4","421.93","0","28"]],"instId":"BTC-USDT-SWAP","ts":"1786541241006","seqId":{seq}}}]}}"#
        )
    };
    core.on_frame(frame(1, "790.41").as_bytes(), 2, &mut out);
    assert_eq!(out.published.last(), Some(&(0, VenueState::Synced)));
    let amount = |levels: &crate::book::Levels| levels.as_slice()[0].amount;
    assert_eq!(amount(&out.book.asks), "7.9041".parse().unwrap());
    assert_eq!(amount(&out.book.bids), "4.2193".parse().unwrap());
    core.on_frame(frame(2, "0.0000001").as_bytes(), 3, &mut out);
    assert_eq!(out.published.last(), Some(&(0, VenueState::OutOfSync)));
    assert!(matches!(out.events.last(), Some(FeedEvent::BadFrame(_))));
    core.on_frame(frame(3, "1").as_bytes(), 4, &mut out);
    assert_eq!(out.published.last(), Some(&(0, VenueState::Synced)));
}

/// An in-band venue's subscription, acknowledged, sends its snapshot first: an update
/// before it is a gap, counted once however many come, and the book is subscribed
/// again; the snapshot, when it comes, is the book.
#[test]
fn an_update_before_the_in_band_snapshot_is_a_gap_counted_once() {
    use crate::venue::SnapshotSource;
    let venue = VenueId::Coinbase;
    let (mut core, mut out) = connected_diff(venue, "BTC-USD", 100);
    let ack = r#"{"channel":"subscriptions","sequence_num":0,"events":[]}"#;
    core.on_frame(ack.as_bytes(), 1, &mut out);
    assert_eq!(core.acks_pending(), 0);
    let book = one_level_book();
    let frame = |number: u64, snapshot: bool| {
        let mut frame = Vec::new();
        match snapshot {
            true => venue.simulated().encode_snapshot(
                "BTC-USD",
                &book,
                SnapshotSource::InBand,
                None,
                8,
                &mut frame,
            ),
            false => venue
                .simulated()
                .encode_diff("BTC-USD", &book, None, 8, 0, &mut frame),
        }
        let frame = String::from_utf8(frame).unwrap();
        venue.simulated().number_message(&frame, number).unwrap()
    };
    let gaps = |out: &Recorder| {
        let gap = FeedEvent::Resync(ResyncReason::Gap);
        out.events.iter().filter(|&&event| event == gap).count()
    };
    core.on_frame(frame(1, false).as_bytes(), 2, &mut out);
    core.on_frame(frame(2, false).as_bytes(), 3, &mut out);
    assert_eq!(gaps(&out), 1);
    assert_eq!(synced_publishes(&out), 0);
    assert!(matches!(
        core.start_snapshot(4),
        Some(SnapshotRequest::Resubscribe { .. })
    ));
    let ack = r#"{"channel":"subscriptions","sequence_num":3,"events":[]}"#;
    core.on_frame(ack.as_bytes(), 5, &mut out);
    core.on_frame(frame(4, true).as_bytes(), 6, &mut out);
    assert_eq!(out.published.last(), Some(&(0, VenueState::Synced)));
    assert_eq!(
        (out.book.bids.as_slice()[0], out.book.asks.as_slice()[0]),
        (level(6_800_000), level(6_900_000))
    );
}

/// A REST venue's new connection awaits no snapshot on its stream (nothing is overdue at
/// the snapshot timeout). A book that sends nothing after its acknowledgement (a quiet
/// market) asks REST for its snapshot at the end of its grace, and is published from it;
/// a busy book's first event asks at once, as the venues' algorithm says.
#[test]
fn a_rest_venue_s_quiet_book_is_published_from_the_snapshot_its_grace_asks_for() {
    let venue = VenueId::Binance;
    let (mut core, mut out) = connected_diff(venue, "ETHBTC", 100);
    assert_eq!(
        core.next_snapshot_at(1),
        None,
        "nothing asked before the acknowledgement"
    );
    core.on_frame(br#"{"result":null,"id":1}"#, 1, &mut out);
    let grace_ends = 1 + diff::QUIET_BOOK_GRACE_NS;
    assert_eq!(core.next_snapshot_at(1), Some(grace_ends));
    assert!(
        core.start_snapshot(grace_ends - 1).is_none(),
        "within the grace"
    );
    let Some(SnapshotRequest::Fetch {
        stream,
        generation,
        url,
    }) = core.start_snapshot(grace_ends)
    else {
        panic!("the grace's end asks for the snapshot");
    };
    assert!(url.contains("ETHBTC"), "{url}");
    let body = br#"{"lastUpdateId":100,"bids":[["0.068","1.5"]],"asks":[["0.069","2"]]}"#;
    core.on_snapshot(stream, generation, Ok(body), grace_ends + 1, &mut out);
    assert_eq!(out.published.last(), Some(&(0, VenueState::Synced)));
    assert_eq!(out.book.bids.as_slice()[0].price, "0.068".parse().unwrap());
    assert!(
        core.start_snapshot(u64::MAX / 2).is_none(),
        "one request, and no in-band wait"
    );

    // A busy book: its first event asks at once, and the grace asks nothing more.
    let (mut core, mut out) = connected_diff(venue, "ETHBTC", 100);
    core.on_frame(br#"{"result":null,"id":1}"#, 1, &mut out);
    let event = crate::book::BookUpdate {
        first_id: 101,
        last_id: 102,
        bids: vec![level(6_800_000)],
        ..crate::book::BookUpdate::default()
    };
    let mut frame = Vec::new();
    let name = venue.streams().diff_stream_name("ETHBTC");
    venue
        .simulated()
        .encode_diff(&name, &event, None, 8, 0, &mut frame);
    core.on_frame(&frame, 2, &mut out);
    assert_eq!(core.next_snapshot_at(2), Some(2));
    assert!(core.start_snapshot(2).is_some());
    assert_eq!(core.next_snapshot_at(2 + diff::QUIET_BOOK_GRACE_NS), None);
}

/// A diff stream subscribed again for silence may have lost events that nothing on
/// Bitstamp's stream would show (its events carry no id to chain): its book is out of
/// sync from the resubscription, the events after it are buffered rather than applied to
/// the old book, and a new snapshot rebuilds it.
#[test]
fn a_diff_book_subscribed_again_for_silence_waits_for_a_new_snapshot() {
    let venue = VenueId::Bitstamp;
    let (mut core, mut out) = connected_diff(venue, "btcusd", 100);
    let name = venue.streams().diff_stream_name("btcusd");
    let ack = format!(r#"{{"event":"bts:subscription_succeeded","channel":"{name}","data":{{}}}}"#);
    core.on_frame(ack.as_bytes(), 1, &mut out);
    let update = |micros: u64, bid: u64| crate::book::BookUpdate {
        first_id: micros,
        last_id: micros,
        bids: vec![level(bid)],
        asks: vec![level(6_900_000)],
        ..crate::book::BookUpdate::default()
    };
    let event = |micros: u64, bid: u64| {
        let mut frame = Vec::new();
        venue
            .simulated()
            .encode_diff(&name, &update(micros, bid), None, 8, 0, &mut frame);
        frame
    };
    let snapshot = |micros: u64, bid: u64| {
        let mut body = Vec::new();
        venue.simulated().encode_snapshot(
            &name,
            &update(micros, bid),
            crate::venue::SnapshotSource::Rest,
            None,
            8,
            &mut body,
        );
        body
    };
    // Synced: an event, the snapshot it asks for, an event applied.
    core.on_frame(&event(1_000, 6_800_000), 2, &mut out);
    let Some(SnapshotRequest::Fetch { generation, .. }) = core.start_snapshot(3) else {
        panic!("the first event asks for a snapshot");
    };
    core.on_snapshot(0, generation, Ok(&snapshot(1_500, 6_800_000)), 4, &mut out);
    core.on_frame(&event(2_000, 6_810_000), 5, &mut out);
    assert_eq!(out.published.last(), Some(&(0, VenueState::Synced)));

    // Silent for the allowance (its lost events unseen), then subscribed again.
    let allowance = 100;
    assert!(matches!(
        core.check_silence(105, allowance, &mut out),
        Silence::Resubscribe { streams: 1, .. }
    ));
    assert_eq!(out.published.last(), Some(&(0, VenueState::OutOfSync)));
    assert!(
        out.events
            .contains(&FeedEvent::Resync(ResyncReason::Silence))
    );
    let synced = synced_publishes(&out);
    core.on_frame(ack.as_bytes(), 106, &mut out);
    core.on_frame(&event(9_000, 6_820_000), 107, &mut out);
    assert_eq!(
        synced_publishes(&out),
        synced,
        "not applied to the old book"
    );
    let Some(SnapshotRequest::Fetch { generation, .. }) = core.start_snapshot(10_000_000_000)
    else {
        panic!("the first event after the resubscription asks for a snapshot");
    };
    core.on_snapshot(
        0,
        generation,
        Ok(&snapshot(9_500, 6_830_000)),
        10_000_000_001,
        &mut out,
    );
    core.on_frame(&event(10_000, 6_840_000), 10_000_000_002, &mut out);
    assert_eq!(out.published.last(), Some(&(0, VenueState::Synced)));
    assert_eq!(out.book.bids.as_slice()[0], level(6_840_000));
}

/// Kraken's books carry its checksum: a snapshot without one (as Kraken sends a thin
/// book's) is taken, counted as unverified; an update without one is a bad frame, and the
/// book leaves the merge until it is rebuilt.
#[test]
fn a_kraken_book_without_its_checksum_is_counted_or_refused() {
    let venue = VenueId::Kraken;
    let (mut core, mut out) = connected_diff(venue, "BTC/USD", 10);
    let ack = r#"{"method":"subscribe","result":{"channel":"book","depth":10,"snapshot":true,"symbol":"BTC/USD"},"success":true}"#;
    core.on_frame(ack.as_bytes(), 1, &mut out);
    let book = one_level_book();
    let mut frame = Vec::new();
    let source = crate::venue::SnapshotSource::InBand;
    venue
        .simulated()
        .encode_snapshot("BTC/USD", &book, source, None, 8, &mut frame);
    core.on_frame(&frame, 2, &mut out);
    assert_eq!(out.published.last(), Some(&(0, VenueState::Synced)));
    assert!(out.events.contains(&FeedEvent::UnverifiedSnapshot));
    frame.clear();
    venue
        .simulated()
        .encode_diff("BTC/USD", &book, None, 8, 0, &mut frame);
    core.on_frame(&frame, 3, &mut out);
    assert_eq!(out.published.last(), Some(&(0, VenueState::OutOfSync)));
    assert!(matches!(
        out.events.last(),
        Some(FeedEvent::BadFrame(_)) | Some(FeedEvent::Resync(_))
    ));
}

/// A Bitstamp diff book of `btcusd` audited every second (settling 100 ms), synced at
/// microtimestamp 1,000 from a snapshot of `book`: the core, its output, and the frame and
/// REST body writers (an update's levels at its microtimestamp).
struct AuditedBitstamp {
    core: FeedCore,
    out: Recorder,
    name: String,
}

const VENUE_SETTLE_NS: u64 = 100_000_000;
const AUDIT_EVERY_NS: u64 = 1_000_000_000;

impl AuditedBitstamp {
    fn synced(book: crate::book::BookUpdate) -> AuditedBitstamp {
        let venue = VenueId::Bitstamp;
        let mut settings = crate::replay::diff::replay_settings(crate::replay::DiffDepths {
            depth: 10,
            max_levels: 100,
            snapshot_depth: 100,
        });
        settings.audit = Some(audit::AuditSettings {
            every: std::time::Duration::from_nanos(AUDIT_EVERY_NS),
            settle: std::time::Duration::from_nanos(VENUE_SETTLE_NS),
        });
        let name = venue.streams().diff_stream_name("btcusd");
        let streams = vec![CoreStream {
            name: name.clone(),
            symbol: "btcusd".to_owned(),
            contract_size: None,
            unit: UnitSize::COIN,
        }];
        let mut core = FeedCore::new(venue, 10, streams, Some(&settings), 0);
        let mut out = Recorder::default();
        core.connected(0, &mut out);
        let mut audited = AuditedBitstamp { core, out, name };
        let ack = format!(
            r#"{{"event":"bts:subscription_succeeded","channel":"{}","data":{{}}}}"#,
            audited.name
        );
        audited.core.on_frame(ack.as_bytes(), 1, &mut audited.out);
        audited.event(at(1_000, Vec::new(), Vec::new()), 2);
        let Some(SnapshotRequest::Fetch { generation, .. }) = audited.core.start_snapshot(3) else {
            panic!("the first event asks for a snapshot");
        };
        let body = audited.rest_body(&at(1_000, book.bids, book.asks));
        (audited.core).on_snapshot(0, generation, Ok(&body), 4, &mut audited.out);
        assert_eq!(audited.out.published.last(), Some(&(0, VenueState::Synced)));
        audited
    }

    fn event(&mut self, update: crate::book::BookUpdate, now_ns: u64) {
        let mut frame = Vec::new();
        (VenueId::Bitstamp.simulated()).encode_diff(&self.name, &update, None, 8, 0, &mut frame);
        self.core.on_frame(&frame, now_ns, &mut self.out);
    }

    fn rest_body(&self, snapshot: &crate::book::BookUpdate) -> Vec<u8> {
        let mut body = Vec::new();
        VenueId::Bitstamp.simulated().encode_snapshot(
            &self.name,
            snapshot,
            crate::venue::SnapshotSource::Rest,
            None,
            8,
            &mut body,
        );
        body
    }

    /// Starts the audit due at `now_ns`: its generation.
    fn start_audit(&mut self, now_ns: u64) -> u64 {
        assert_eq!(
            self.core.next_snapshot_at(0),
            Some(AUDIT_EVERY_NS),
            "due one turn after connecting"
        );
        match self.core.start_snapshot(now_ns) {
            Some(SnapshotRequest::Audit {
                stream: 0,
                generation,
                url,
            }) => {
                assert!(url.ends_with("/api/v2/order_book/btcusd/"), "{url}");
                generation
            }
            other => panic!("an audit is due: {other:?}"),
        }
    }

    fn audits(&self) -> Vec<audit::AuditOutcome> {
        (self.out.events.iter())
            .filter_map(|event| match event {
                FeedEvent::Audit(outcome) => Some(*outcome),
                _ => None,
            })
            .collect()
    }
}

/// An update at microtimestamp `micros` setting these levels.
fn at(micros: u64, bids: Vec<Level>, asks: Vec<Level>) -> crate::book::BookUpdate {
    crate::book::BookUpdate {
        first_id: micros,
        last_id: micros,
        bids,
        asks,
        ..crate::book::BookUpdate::default()
    }
}

/// A level of `units` (whole units) at `price` (raw).
fn sized(price: u64, units: u64) -> Level {
    Level {
        price: FixedPoint::from_raw(price),
        amount: FixedPoint::from_raw(units * 100_000_000),
    }
}

fn three_levels() -> crate::book::BookUpdate {
    let bids = vec![
        sized(6_800_000, 1),
        sized(6_790_000, 2),
        sized(6_780_000, 3),
    ];
    let asks = vec![
        sized(6_900_000, 1),
        sized(6_910_000, 2),
        sized(6_920_000, 3),
    ];
    at(1_000, bids, asks)
}

/// The venue's snapshot may differ from the book where events set levels after the audit
/// was asked for (here a bid whose event the venue stamped after its snapshot): those are
/// not compared, and the comparison comes as soon as an event stamped after the snapshot
/// is applied (every event before it is then in the book).
#[test]
fn an_audit_of_a_true_book_matches_whatever_changed_after_its_request() {
    let mut audited = AuditedBitstamp::synced(three_levels());
    let generation = audited.start_audit(AUDIT_EVERY_NS);
    assert_eq!(
        audited.core.next_snapshot_at(AUDIT_EVERY_NS),
        None,
        "one request at a time"
    );
    // Before the snapshot: an event the venue applied before it (in the snapshot too).
    audited.event(
        at(2_000, vec![sized(6_790_000, 5)], Vec::new()),
        AUDIT_EVERY_NS + 1,
    );
    let mut venue = three_levels();
    venue.bids[1] = sized(6_790_000, 5);
    venue.bids[2] = sized(6_780_000, 9); // set by the event stamped 4,000 below
    let body = audited.rest_body(&at(3_000, venue.bids, venue.asks));
    let answered = AUDIT_EVERY_NS + 2;
    (audited.core).on_audit_snapshot(0, generation, Ok(&body), answered, &mut audited.out);
    assert_eq!(
        audited.audits(),
        [],
        "waiting for the events before the snapshot"
    );
    assert_eq!(
        audited.core.next_snapshot_at(answered),
        Some(answered + VENUE_SETTLE_NS)
    );
    audited.event(
        at(4_000, vec![sized(6_780_000, 7)], Vec::new()),
        answered + 1,
    );
    assert_eq!(audited.audits(), [audit::AuditOutcome::Match]);
    assert_eq!(audited.out.published.last(), Some(&(0, VenueState::Synced)));
    let next = audited.core.next_snapshot_at(answered + 1);
    assert_eq!(
        next,
        Some(answered + 1 + AUDIT_EVERY_NS),
        "the next audit one turn later"
    );
}

/// A level the venue's snapshot holds otherwise, where no event set it since the audit was
/// asked for, is an event the stream lost: counted, and the book rebuilt at once, from a
/// snapshot asked for then (a quiet book has no event to ask for it).
#[test]
fn an_audit_finds_a_lost_event_and_the_book_is_rebuilt() {
    let mut audited = AuditedBitstamp::synced(three_levels());
    let generation = audited.start_audit(AUDIT_EVERY_NS);
    // The venue deleted its third ask; the event that said so never came.
    let mut venue = three_levels();
    venue.asks.truncate(2);
    venue.asks.push(sized(6_930_000, 4));
    let body = audited.rest_body(&at(2_000, venue.bids, venue.asks));
    let answered = AUDIT_EVERY_NS + 2;
    (audited.core).on_audit_snapshot(0, generation, Ok(&body), answered, &mut audited.out);
    audited
        .core
        .finish_audit(answered + VENUE_SETTLE_NS - 1, &mut audited.out);
    assert_eq!(audited.audits(), [], "the snapshot settles first");
    audited
        .core
        .finish_audit(answered + VENUE_SETTLE_NS, &mut audited.out);
    assert_eq!(audited.audits(), [audit::AuditOutcome::Mismatch]);
    assert!((audited.out.events).contains(&FeedEvent::Resync(ResyncReason::Audit)));
    assert_eq!(
        audited.out.published.last(),
        Some(&(0, VenueState::OutOfSync))
    );
    let rebuild = audited.core.start_snapshot(answered + VENUE_SETTLE_NS);
    assert!(
        matches!(rebuild, Some(SnapshotRequest::Fetch { stream: 0, .. })),
        "{rebuild:?}"
    );
}

/// What an audit cannot judge it does not: a snapshot older than the book, a book reset
/// meanwhile, a failed request. Each is counted, and the book stays as it is.
#[test]
fn an_audit_that_cannot_judge_the_book_leaves_it_alone() {
    let mut audited = AuditedBitstamp::synced(three_levels());
    audited.event(at(5_000, vec![sized(6_800_000, 2)], Vec::new()), 10);
    let generation = audited.start_audit(AUDIT_EVERY_NS);
    // Stamped before the book's last event: the venue's REST book lags its stream.
    let body = audited.rest_body(&at(4_000, Vec::new(), Vec::new()));
    (audited.core).on_audit_snapshot(
        0,
        generation,
        Ok(&body),
        AUDIT_EVERY_NS + 1,
        &mut audited.out,
    );
    assert_eq!(audited.audits(), [audit::AuditOutcome::Inconclusive]);

    let next = 2 * AUDIT_EVERY_NS + 1;
    let Some(SnapshotRequest::Audit { generation, .. }) = audited.core.start_snapshot(next) else {
        panic!("the next audit");
    };
    (audited.core).on_audit_snapshot(
        0,
        generation,
        Err(FetchOutcome::Failed),
        next + 1,
        &mut audited.out,
    );
    assert_eq!(audited.audits()[1], audit::AuditOutcome::Failed);

    let next = 3 * AUDIT_EVERY_NS + 2;
    let Some(SnapshotRequest::Audit { generation, .. }) = audited.core.start_snapshot(next) else {
        panic!("the next audit");
    };
    // The connection drops while the audit is out: the audit ends inconclusive, and its
    // answer, when it comes, is dropped.
    audited.core.connected(next + 1, &mut audited.out);
    assert_eq!(audited.audits()[2], audit::AuditOutcome::Inconclusive);
    let body = audited.rest_body(&at(9_000, Vec::new(), Vec::new()));
    (audited.core).on_audit_snapshot(0, generation, Ok(&body), next + 2, &mut audited.out);
    assert_eq!(
        audited.audits().len(),
        3,
        "an answer to a cancelled audit is dropped"
    );
    assert!(!(audited.out.events).contains(&FeedEvent::Resync(ResyncReason::Audit)));
}

/// The audit's request waits for the snapshot a book needs to be rebuilt: rebuilds go
/// first, and one request is out at a time.
#[test]
fn an_audit_waits_for_a_rebuild_s_snapshot() {
    let mut audited = AuditedBitstamp::synced(three_levels());
    // An event stamped before the book's last (and after its snapshot): a gap, and a
    // snapshot asked for at once.
    audited.event(at(2_000, Vec::new(), Vec::new()), 10);
    audited.event(at(1_500, Vec::new(), Vec::new()), 11);
    let now = AUDIT_EVERY_NS;
    assert!(matches!(
        audited.core.start_snapshot(now),
        Some(SnapshotRequest::Fetch { .. })
    ));
    assert_eq!(
        audited.core.start_snapshot(now),
        None,
        "the rebuild's request is out"
    );
    assert_eq!(audited.audits(), []);
}

/// A number a book cannot hold (an amount past `FixedPoint`'s range, as a venue listing a
/// token by the trillion would send): the log line gives the number as the venue wrote
/// it. Binance's decoder stops at it, so the frame is a bad one of the connection (where
/// a decoder has read the book's name first and says so, `Message::Unreadable`, only that
/// book is out of sync). The line names the instrument's symbol too: found in the frame
/// where the connection carries several.
#[test]
fn a_number_it_cannot_hold_is_logged_with_its_text_and_symbol() {
    let venue = VenueId::Binance;
    let (mut core, _, mut out) = connected(venue, &["LTCBTC", "ETHBTC"]);
    core.on_frame(br#"{"result":null,"id":1}"#, 1, &mut out);
    let frame = String::from_utf8(book_frame(venue, "ETHBTC", 10)).unwrap();
    let amount = "1.00000000";
    assert!(frame.contains(amount), "{frame}");
    let frame = frame.replacen(amount, "123456789012345.5", 1);
    let logs = crate::log_limit::CapturedLogs::default();
    let logging = logs.start(tracing::Level::WARN);
    core.on_frame(frame.as_bytes(), 2, &mut out);
    drop(logging);
    assert!(
        out.published
            .ends_with(&[(0, VenueState::OutOfSync), (1, VenueState::OutOfSync)])
    );
    let log = logs.text();
    assert!(log.contains("bad frame dropped venue=binance"), "{log}");
    assert!(
        log.contains("value=123456789012345.5 symbol=ETHBTC "),
        "{log}"
    );
}

#[test]
fn the_text_of_a_number_an_error_is_about() {
    fn number(frame: &[u8], at: usize) -> Option<&str> {
        let error = DecodeError::Number {
            at,
            error: crate::fixed::FixedPointError::Overflow,
        };
        super::number_text(frame, &error)
    }
    assert_eq!(number(br#"["1e400",1]"#, 1), Some("1e400"));
    assert_eq!(
        number(br#"[12345678901234567890,1]"#, 1),
        Some("12345678901234567890")
    );
    assert_eq!(number(br#"[x]"#, 1), None);
    assert_eq!(number(b"[", 5), None);
    let long = format!("[{}]", "9".repeat(100));
    assert_eq!(number(long.as_bytes(), 1).map(str::len), Some(48));
    let other = DecodeError::Truncated;
    assert_eq!(super::number_text(b"123", &other), None);
}

/// A reload delists a stream from a live connection and lists another: the one delisted
/// is unsubscribed, its books go nowhere and its silence is nobody's concern; the new
/// one takes the vacant slot and waits for its own acknowledgement; the stream kept is
/// never touched; a new connection subscribes the streams listed then.
#[test]
fn a_stream_delisted_and_another_listed_leave_the_others_alone() {
    let venue = VenueId::Binance;
    let (mut core, _, mut out) = connected(venue, &["ETHBTC", "BTCUSDT"]);
    core.on_frame(br#"{"result":null,"id":1}"#, 1, &mut out);
    core.on_frame(&book_frame(venue, "BTCUSDT", 1), 2, &mut out);
    let frames = core.delist_stream(0, 3, true);
    assert_eq!(
        frames,
        [r#"{"id":0,"method":"UNSUBSCRIBE","params":["ethbtc@depth10@100ms"]}"#]
    );
    assert_eq!(core.listed_streams(), 1);
    core.on_frame(&book_frame(venue, "ETHBTC", 2), 4, &mut out);
    assert!(
        !out.published.iter().any(|&(slot, _)| slot == 0),
        "a delisted stream's book goes nowhere: {:?}",
        out.published
    );
    // Only the stream kept is watched: silent past the allowance, it alone is due.
    let allowance = 100;
    assert_eq!(core.next_silence_check(allowance), 102);
    core.on_frame(&book_frame(venue, "BTCUSDT", 3), 90, &mut out);
    assert_eq!(core.check_silence(150, allowance, &mut out), Silence::None);

    let stream = CoreStream {
        name: venue.streams().stream_name("LTCBTC", 10),
        symbol: "LTCBTC".to_owned(),
        contract_size: None,
        unit: UnitSize::COIN,
    };
    let (slot, frames) = core.list_stream(stream, 160, true);
    assert_eq!(slot, 0, "the vacant slot is taken");
    assert_eq!(
        frames,
        [r#"{"id":2,"method":"SUBSCRIBE","params":["ltcbtc@depth10@100ms"]}"#]
    );
    core.on_frame(&book_frame(venue, "LTCBTC", 1), 161, &mut out);
    assert!(out.events.contains(&FeedEvent::BookBeforeAck));
    core.on_frame(br#"{"result":null,"id":2}"#, 162, &mut out);
    core.on_frame(&book_frame(venue, "LTCBTC", 2), 163, &mut out);
    assert_eq!(out.published.last(), Some(&(0, VenueState::Synced)));
    core.on_frame(&book_frame(venue, "BTCUSDT", 4), 164, &mut out);
    assert_eq!(out.published.last(), Some(&(1, VenueState::Synced)));
    assert!(
        (out.published.iter()).all(|&(_, state)| state == VenueState::Synced),
        "the stream kept never left sync: {:?}",
        out.published
    );
    // A new slot past the vacant ones; a new connection subscribes what is listed.
    let stream = CoreStream {
        name: venue.streams().stream_name("BNBBTC", 10),
        symbol: "BNBBTC".to_owned(),
        contract_size: None,
        unit: UnitSize::COIN,
    };
    assert_eq!(core.list_stream(stream, 170, false), (2, Vec::new()));
    core.delist_stream(1, 171, false);
    let frames = core.connected(200, &mut out);
    assert_eq!(
        frames,
        [
            r#"{"id":3,"method":"SUBSCRIBE","params":["ltcbtc@depth10@100ms","bnbbtc@depth10@100ms"]}"#
        ]
    );
}

/// A diff book delisted while its REST snapshot is in flight: the answer, come after
/// another stream took the slot, is dropped; the new stream's own snapshot syncs it; the
/// other book stays in sync throughout.
#[test]
fn a_snapshot_in_flight_for_a_delisted_stream_is_dropped_when_it_comes() {
    let venue = VenueId::Binance;
    let settings = crate::replay::diff::replay_settings(crate::replay::DiffDepths {
        depth: 10,
        max_levels: 100,
        snapshot_depth: 100,
    });
    let diff_stream = |symbol: &str| CoreStream {
        name: venue.streams().diff_stream_name(symbol),
        symbol: symbol.to_owned(),
        contract_size: None,
        unit: UnitSize::COIN,
    };
    let streams = vec![diff_stream("ETHBTC"), diff_stream("BTCUSDT")];
    let mut core = FeedCore::new(venue, 10, streams, Some(&settings), 0);
    let mut out = Recorder::default();
    core.connected(0, &mut out);
    core.on_frame(br#"{"result":null,"id":1}"#, 1, &mut out);
    let body = br#"{"lastUpdateId":100,"bids":[["0.068","1.5"]],"asks":[["0.069","2"]]}"#;
    let fetch = |core: &mut FeedCore, now| match core.start_snapshot(now) {
        Some(SnapshotRequest::Fetch {
            stream, generation, ..
        }) => (stream, generation),
        other => panic!("a snapshot request at {now}: {other:?}"),
    };
    let grace_ends = 1 + diff::QUIET_BOOK_GRACE_NS;
    let first = fetch(&mut core, grace_ends);
    core.on_snapshot(first.0, first.1, Ok(body), grace_ends, &mut out);
    let second = fetch(&mut core, grace_ends + 1_000_000_000);
    assert_ne!(first.0, second.0);
    let (kept, delisted) = (first.0, second.0);
    assert_eq!(out.published.last(), Some(&(kept, VenueState::Synced)));
    let now = grace_ends + 2_000_000_000;
    core.delist_stream(delisted, now, true);
    let (slot, _) = core.list_stream(diff_stream("LTCBTC"), now, true);
    assert_eq!(slot, delisted);
    let published = out.published.len();
    core.on_snapshot(second.0, second.1, Ok(body), now + 1, &mut out);
    assert_eq!(
        out.published.len(),
        published,
        "the old stream's answer is dropped"
    );
    core.on_frame(br#"{"result":null,"id":2}"#, now + 2, &mut out);
    let at = now + 2 + diff::QUIET_BOOK_GRACE_NS;
    let third = fetch(&mut core, at);
    assert_eq!(third.0, slot);
    assert_ne!(third.1, second.1);
    core.on_snapshot(third.0, third.1, Ok(body), at, &mut out);
    assert_eq!(out.published.last(), Some(&(slot, VenueState::Synced)));
    assert!(
        (out.published.iter())
            .filter(|&&(stream, _)| stream == kept)
            .skip_while(|&&(_, state)| state != VenueState::Synced)
            .all(|&(_, state)| state == VenueState::Synced),
        "the book kept stayed in sync: {:?}",
        out.published
    );
}
