use super::*;

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
