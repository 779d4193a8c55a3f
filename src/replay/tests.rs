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

/// Sources merge by time, then by source; each source's own order is kept, an item whose
/// time goes back taken in its place; every item comes once, with its index in its source.
#[test]
fn sources_merge_by_time_then_source_each_in_its_own_order() {
    let sources = vec![
        vec![10u64, 30, 20, 40].into_iter(),
        vec![10, 25, 30].into_iter(),
        vec![].into_iter(),
    ];
    let merged: Vec<(u64, usize, usize, u64)> =
        TimeMerge::new(sources, |time: &u64| *time).collect();
    let order: Vec<(usize, usize)> = merged
        .iter()
        .map(|&(_, source, index, _)| (source, index))
        .collect();
    // 10 (a), 10 (b), 25 (b), 30 (a), 20 (a, after its 30), 30 (b), 40 (a).
    assert_eq!(
        order,
        [(0, 0), (1, 0), (1, 1), (0, 1), (0, 2), (1, 2), (0, 3)]
    );
    assert!(merged.iter().all(|&(time, _, _, item)| time == item));
}
