//! mergebook's measurements and endurance runs, apart from the service: the
//! wire-to-publish load harness, the soak, what NATS publishing costs, and the host's CPU-latency request they can
//! hold. The `mergebook-tools` binary runs them; BENCHMARKS.md and docs/reliability.md
//! report what they measured.
#![deny(unsafe_code)]

pub mod cpu_latency;
pub mod loadtest;
pub mod nats_bench;
pub mod soak;

use mergebook::venue::VenueId;

/// The venues the tools configure generated pairs on (`ETH/BTC`, `I7/BTC`): those with
/// books sized in the base coin (`Streams::spot_symbol`), with top-N snapshot streams
/// where `snapshot_streams` asks for them.
pub fn spot_venues(snapshot_streams: bool) -> impl Iterator<Item = VenueId> + Clone {
    VenueId::ALL.iter().copied().filter(move |venue| {
        venue.streams().spot_symbol("ETH", "BTC").is_some()
            && (!snapshot_streams || venue.facts().snapshot_streams)
    })
}

/// `venue`'s symbol of the generated pair `base`/BTC, for a venue of [`spot_venues`].
pub fn spot_symbol(venue: VenueId, base: &str) -> String {
    venue
        .streams()
        .spot_symbol(base, "BTC")
        .expect("one of spot_venues")
}
