use super::*;

#[test]
fn receive_times_are_read_to_the_nanosecond() {
    assert_eq!(
        unix_seconds_ns("1764251000.123456789"),
        Some(1_764_251_000_123_456_789)
    );
    assert_eq!(
        unix_seconds_ns("1633998512.0633569"),
        Some(1_633_998_512_063_356_900)
    );
    assert_eq!(unix_seconds_ns("12"), Some(12_000_000_000));
    assert_eq!(unix_seconds_ns("1.5e3"), Some(1_500_000_000_000));
    assert_eq!(unix_seconds_ns("-1"), None);
}

#[test]
fn times_are_unix_seconds_or_utc() {
    let at = 1_764_251_000_500_000_000;
    assert_eq!(parse_time("1764251000.5"), Some(at));
    // 1764251000 s is 2025-11-27T13:43:20Z.
    assert_eq!(parse_time("2025-11-27T13:43:20.5Z"), Some(at));
    assert_eq!(
        parse_time("2025-11-27T13:43:20+00:00"),
        Some(at - 500_000_000)
    );
    assert_eq!(parse_time("1970-01-01T00:00:00Z"), Some(0));
    assert_eq!(
        parse_time("2024-02-29T00:00:00Z"),
        Some(1_709_164_800_000_000_000)
    );
    for wrong in [
        "2025-13-01T00:00:00Z",
        "2025-11-27T13:43:20",
        "yesterday",
        "",
    ] {
        assert_eq!(parse_time(wrong), None, "{wrong}");
    }
}

#[test]
fn pace_stops_after_until_and_keeps_the_recorded_pace() {
    let mut pace = Pace::new(Some(5_000_000_000), None);
    assert!(pace.wait_for(5_000_000_000));
    assert!(!pace.wait_for(5_000_000_001));
    // Ten times the pace: events 200 ms apart come at least 20 ms apart.
    let mut pace = Pace::new(None, Some(10.0));
    let started = std::time::Instant::now();
    assert!(pace.wait_for(1_000_000_000));
    assert!(pace.wait_for(1_200_000_000));
    assert!(started.elapsed() >= std::time::Duration::from_millis(20));
}
