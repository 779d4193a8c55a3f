//! The wire-to-publish harness's accounting, on a short real run: every frame the
//! simulator sent is published or superseded (counted by the readers' mailboxes, apart
//! from the harness), none is lost, and every record was taken. Not a timing test: the
//! latencies are only checked to exist, one per published frame of the window.

use mergebook::config::IdleStrategy;
use mergebook::cpu_latency::CpuLatencyRequest;
use mergebook::loadtest::{self, LoadSpec};
use mergebook::venue::VenueId;
use std::time::Duration;

#[test]
fn a_short_run_accounts_for_every_frame_sent() {
    let limit_before = CpuLatencyRequest::effective_us().ok();
    let spec = LoadSpec {
        rate_per_venue: 500,
        venues: vec![VenueId::Binance, VenueId::Bitstamp],
        depth: 20,
        warmup: Duration::from_secs(1),
        duration: Duration::from_secs(2),
        // The test machine has 2 cores: a spinning merger would take one from the tests.
        idle: IdleStrategy::Park,
        merger_core: None,
        rss_every: Duration::from_millis(500),
        // Where the limit can be read (root, as in CI), the run asks for one that lets idle
        // CPUs halt as they did (1 ms; less if a process already holds less), and the
        // report must show it in force.
        cpu_wake_latency_us: limit_before.map(|before| before.clamp(0, 1000) as u32),
    };
    let report = loadtest::run(&spec).unwrap();
    assert_eq!(
        report.cpu_wake_latency_limit_us,
        spec.cpu_wake_latency_us.map(|asked| asked as i32)
    );
    assert!(
        report.sent > 500,
        "at least a second's frames were sent: {report:?}"
    );
    assert!(report.published > 0);
    assert_eq!(report.unaccounted, 0, "{report:?}");
    // `lost` is sent − published − superseded, with superseded counted by the readers'
    // mailboxes apart from the harness: 0 means those two counts cover every frame sent.
    assert_eq!(report.lost, 0, "{report:?}");
    assert!(report.wire_ns.count > 0 && report.wire_ns.count <= report.published);
    assert_eq!(report.internal_ns.count, report.wire_ns.count);
    let split = report.internal_split;
    for part in [split.to_merger_ns, split.merge_ns, split.wake_ns] {
        assert_eq!(part.count, report.internal_ns.count, "{split:?}");
    }
    // The harness's consumer saw summaries (not necessarily every one: latest value).
    assert!(
        report.to_consumer_ns.count > 0 && report.to_consumer_ns.count <= report.published,
        "{report:?}"
    );
    assert!(report.e2e_histogram_count > 0);
    assert!(report.peak_rss_bytes > 0 && report.rss_samples.len() >= 2);
}
