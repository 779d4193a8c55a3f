use super::*;
use mergebook::merger::summary::MAX_SOURCES;

#[test]
fn steal_is_the_eighth_of_the_cpu_lines_times() {
    // A `/proc/stat` line as Linux writes it (ten fields since Linux 2.6.33).
    let line = "cpu  526679 0 31486 294620 4743 0 719 7301 0 0";
    assert_eq!(
        steal_and_total_ticks(line),
        Some((7301, 526_679 + 31_486 + 294_620 + 4_743 + 719 + 7_301))
    );
    assert_eq!(steal_and_total_ticks("cpu0 1 2 3 4 5 6 7 8 0 0"), None);
    assert_eq!(steal_and_total_ticks("cpu  1 2 3 4 5 6 7"), None);
    assert_eq!(steal_and_total_ticks("cpu  1 2 3 4 5 6 7 x 0 0"), None);
}

fn sent(venue: VenueId, sequence: u64, sent_ns: u64) -> SentFrame {
    SentFrame {
        venue,
        stream: Arc::from(format!("{venue}-stream")),
        sequence,
        sent_ns,
    }
}

/// One instrument on `venues`, each with the stream `sent` names.
fn one_instrument(venues: &[VenueId]) -> Accounting {
    let streams = vec![venues.iter().map(|&v| (v, format!("{v}-stream"))).collect()];
    Accounting::new(venues, &streams)
}

fn published(at_ns: u64, binance: u64, bitstamp: u64) -> PublishRecord {
    let mut record = PublishRecord {
        instrument: 0,
        polled_ns: at_ns - 8,
        written_ns: at_ns - 3,
        published_ns: at_ns,
        source_venues: [None; MAX_SOURCES],
        source_sequence: [0; MAX_SOURCES],
        source_received_ns: [0; MAX_SOURCES],
    };
    // Bitstamp's book is the instrument's first source.
    record.source_venues[..2].copy_from_slice(&[Some(VenueId::Bitstamp), Some(VenueId::Binance)]);
    record.source_sequence[..2].copy_from_slice(&[bitstamp, binance]);
    record.source_received_ns[..2].copy_from_slice(&[at_ns - 20, at_ns - 10]);
    record
}

#[test]
fn frames_are_published_passed_over_or_left_pending() {
    let mut accounting = one_instrument(&[VenueId::Binance, VenueId::Bitstamp]);
    accounting.measure_from_ns = 0;
    for (sequence, at) in [(5, 100), (7, 200), (8, 300)] {
        accounting.on_sent(sent(VenueId::Binance, sequence, at));
    }
    accounting.on_sent(sent(VenueId::Bitstamp, 40, 150));
    // Binance 5 and Bitstamp 40 published together; then Binance 8 passes over 7.
    accounting.on_publish(&published(1_000, 5, 40));
    accounting.on_publish(&published(2_000, 8, 40));
    assert_eq!(accounting.sent, 4);
    assert_eq!(accounting.published, 3);
    assert_eq!(accounting.passed_over, 1);
    assert_eq!(accounting.unresolved(), 0);
    assert_eq!(accounting.unmatched, 0);
    assert_eq!(accounting.wire.len(), 3);
    assert_eq!(accounting.wire.max(), 1_700); // 2_000 − 300, to 3 digits
    assert_eq!(accounting.internal.max(), 20);
    // Its parts: receive → poll (Bitstamp's book, received 20 before the publish, 12),
    // poll → written (5), written → published (3).
    assert_eq!(accounting.to_merger.max(), 12);
    assert_eq!(accounting.merge.max(), 5);
    assert_eq!(accounting.wake.max(), 3);
    assert_eq!(accounting.wake.len(), 3);

    // A frame not yet reached is pending; a publish of a frame never logged is counted.
    accounting.on_sent(sent(VenueId::Binance, 9, 2_100));
    assert_eq!(accounting.unresolved(), 1);
    accounting.on_publish(&published(3_000, 12, 40));
    assert_eq!(accounting.passed_over, 2);
    assert_eq!(accounting.unmatched, 1);
}

/// Each book is accounted apart: the same sequence on two instruments of one venue is
/// two frames, each published by its own instrument's summary.
#[test]
fn frames_are_matched_per_instrument() {
    let streams = vec![
        vec![(VenueId::Binance, "a".to_owned())],
        vec![(VenueId::Binance, "b".to_owned())],
    ];
    let mut accounting = Accounting::new(&[VenueId::Binance], &streams);
    accounting.measure_from_ns = 0;
    for (stream, at) in [("a", 100), ("b", 110)] {
        let mut frame = sent(VenueId::Binance, 7, at);
        frame.stream = Arc::from(stream);
        accounting.on_sent(frame);
    }
    let mut record = published(1_000, 7, 0);
    record.instrument = 1;
    accounting.on_publish(&record);
    assert_eq!((accounting.published, accounting.unresolved()), (1, 1));
    assert_eq!(accounting.first_instrument_wire.len(), 0);
    record.instrument = 0;
    accounting.on_publish(&record);
    assert_eq!((accounting.published, accounting.unresolved()), (2, 0));
    assert_eq!(accounting.first_instrument_wire.max(), 900);
    // A stream of no instrument is not a frame the accounting can place.
    accounting.on_sent(sent(VenueId::Bitstamp, 1, 1_100));
    assert_eq!(accounting.unmatched, 1);
}

#[test]
fn the_in_process_parts_add_up_when_the_poll_began_before_the_receive() {
    let mut accounting = one_instrument(&[VenueId::Binance]);
    accounting.measure_from_ns = 0;
    accounting.on_sent(sent(VenueId::Binance, 1, 100));
    let mut record = published(1_000, 1, 0);
    record.polled_ns = 985; // before the receive at 990
    accounting.on_publish(&record);
    assert_eq!(accounting.internal.max(), 10);
    assert_eq!(accounting.to_merger.max(), 0);
    assert_eq!(accounting.merge.max(), 7); // receive → written at 997
    assert_eq!(accounting.wake.max(), 3);
}

#[test]
fn a_consumer_times_the_frames_new_in_each_summary_it_sees() {
    let mut accounting = one_instrument(&[VenueId::Binance, VenueId::Bitstamp]);
    accounting.measure_from_ns = 100;
    let seen = |seen_ns: u64, binance: (u64, u64), bitstamp: (u64, u64)| {
        let mut summary = ConsumedSummary {
            venue_sequence: [0; MAX_VENUES],
            venue_received_ns: [0; MAX_VENUES],
            seen_ns,
        };
        for (venue, (sequence, received_ns)) in
            [(VenueId::Binance, binance), (VenueId::Bitstamp, bitstamp)]
        {
            summary.venue_sequence[venue.index()] = sequence;
            summary.venue_received_ns[venue.index()] = received_ns;
        }
        summary
    };
    // Binance 1 was received before the window: not timed; Bitstamp 10 is.
    accounting.on_consumed(&seen(150, (1, 90), (10, 120)));
    // Binance 2 is new; Bitstamp 10 was seen already.
    accounting.on_consumed(&seen(400, (2, 300), (10, 120)));
    // Both new; Bitstamp 11 was skipped by this consumer, 12 is what it saw.
    accounting.on_consumed(&seen(1_000, (3, 900), (12, 700)));
    let mut timed: Vec<u64> = accounting
        .to_consumer
        .iter_recorded()
        .flat_map(|value| {
            std::iter::repeat_n(value.value_iterated_to(), value.count_at_value() as usize)
        })
        .collect();
    timed.sort_unstable();
    assert_eq!(timed, [30, 100, 100, 300]);
}

#[test]
fn the_rate_search_doubles_then_bisects() {
    let mut search = MaxRateSearch::new(25_000, 3);
    let mut tried = Vec::new();
    // Sustained up to 130k frames/s.
    while let Some(rate) = search.next_rate() {
        tried.push(rate);
        search.record(rate, rate <= 130_000);
    }
    assert_eq!(
        tried,
        [
            25_000, 50_000, 100_000, 200_000, 200_000, 150_000, 150_000, 125_000, 137_000, 137_000
        ]
    );
    assert_eq!(search.best(), Some(125_000));
}

#[test]
fn a_rate_failed_once_then_sustained_counts_as_sustained() {
    let mut search = MaxRateSearch::new(25_000, 3);
    let mut tried = Vec::new();
    // Sustained up to 130k frames/s, but the first run at 50k hits a hiccup.
    while let Some(rate) = search.next_rate() {
        let hiccup = rate == 50_000 && !tried.contains(&rate);
        tried.push(rate);
        search.record(rate, rate <= 130_000 && !hiccup);
    }
    assert_eq!(
        tried,
        [
            25_000, 50_000, 50_000, 100_000, 200_000, 200_000, 150_000, 150_000, 125_000, 137_000,
            137_000
        ]
    );
    assert_eq!(search.best(), Some(125_000));
}

#[test]
fn warm_up_frames_are_counted_but_not_timed() {
    let mut accounting = one_instrument(&[VenueId::Binance]);
    accounting.measure_from_ns = 1_000;
    accounting.on_sent(sent(VenueId::Binance, 1, 500));
    accounting.on_sent(sent(VenueId::Binance, 2, 1_500));
    accounting.on_publish(&published(1_200, 1, 0));
    accounting.on_publish(&published(2_000, 2, 0));
    assert_eq!(accounting.published, 2);
    assert_eq!(accounting.wire.len(), 1);
}
