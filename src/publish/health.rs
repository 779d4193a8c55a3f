//! The service's health, from the latest summaries: `OK` when every configured venue is in
//! every instrument's merged book, `DEGRADED` when some venue is out but every instrument
//! still has one, or a merged book was received further behind its venue's own time than
//! `service.max_feed_delay_ms`, `DOWN` when an instrument has no venue at all. `/health`
//! serves it (HTTP 503 when `DOWN`) and NATS publishes it; the report names each venue's
//! state, the books that are late (their delay, ms) and whether the host's clock is steady
//! (delays are not judged within 10 s of a step of it: `clock::HostClock`):
//!
//! ```json
//! {"status":"DEGRADED","instruments":{"ETH/BTC":{"binance":"synced","bitstamp":"stale"}},
//!  "delayed":{"ETH/BTC":{"binance":2350}},"host_clock":"steady"}
//! ```

use crate::clock::HostClock;
use crate::config::Config;
use crate::merger::summary::{Summary, VenueState};
use crate::publish::catalog::Listing;

/// Overall health from each instrument's venue states.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    Ok,
    Degraded,
    Down,
}

pub fn health_of<'a>(instruments: impl Iterator<Item = &'a [VenueState]>) -> Health {
    let mut health = Health::Ok;
    for states in instruments {
        if !states.contains(&VenueState::Synced) {
            return Health::Down;
        }
        if states.iter().any(|state| *state != VenueState::Synced) {
            health = Health::Degraded;
        }
    }
    health
}

impl Health {
    pub fn word(self) -> &'static str {
        match self {
            Health::Ok => "OK",
            Health::Degraded => "DEGRADED",
            Health::Down => "DOWN",
        }
    }
}

/// The service's health and its JSON report (what `/health` serves, and NATS publishes):
/// `{"status": "OK", "instruments": {"ETH/BTC": {"binance": "synced", …}}}`.
pub fn health_report(
    config: &Config,
    listing: &Listing,
    host_clock: &HostClock,
) -> (Health, serde_json::Value) {
    let clock_steady = host_clock.is_steady(crate::clock::monotonic_ns());
    let mut states = Vec::new();
    let mut body = serde_json::Map::new();
    let mut delayed = serde_json::Map::new();
    for listed in listing.iter() {
        let instrument = &listed.instrument;
        let summary = listed.summaries.borrow();
        let late: serde_json::Map<_, _> =
            late_books(&summary, instrument.symbols.len(), config.max_feed_delay)
                .map(|(source, delay_ms)| {
                    (instrument.source_names[source].clone(), delay_ms.into())
                })
                .collect();
        if clock_steady && !late.is_empty() {
            delayed.insert(instrument.name.clone(), late.into());
        }
        let venues = &summary.source_states[..instrument.symbols.len()];
        let detail = instrument
            .source_names
            .iter()
            .zip(venues)
            .map(|(name, state)| (name.clone(), serde_json::Value::from(state.name())));
        body.insert(
            instrument.name.clone(),
            serde_json::Value::Object(detail.collect()),
        );
        states.push(venues.to_vec());
    }
    let mut health = health_of(states.iter().map(Vec::as_slice));
    if health == Health::Ok && !delayed.is_empty() {
        health = Health::Degraded;
    }
    let clock = if clock_steady { "steady" } else { "stepped" };
    let body = serde_json::json!({
        "status": health.word(), "instruments": body, "delayed": delayed, "host_clock": clock,
    });
    (health, body)
}

/// The synced books among the first `sources` of `summary` received more than `bound`
/// after their venue's own time of them: (source, delay in ms).
fn late_books(
    summary: &Summary,
    sources: usize,
    bound: std::time::Duration,
) -> impl Iterator<Item = (usize, u64)> + '_ {
    let bound_ns = bound.as_nanos() as u64;
    (0..sources).filter_map(move |source| {
        let exchange = summary.source_exchange_time_ns[source];
        let received = summary.received_unix_ns(summary.source_received_ns[source]);
        let synced = summary.source_states[source] == VenueState::Synced;
        let delay = received.checked_sub(exchange)?;
        (synced && exchange != 0 && delay > bound_ns).then_some((source, delay / 1_000_000))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use VenueState::*;

    #[test]
    fn health_follows_the_venue_states() {
        let check = |instruments: &[&[VenueState]]| health_of(instruments.iter().copied());
        assert_eq!(check(&[&[Synced, Synced]]), Health::Ok);
        assert_eq!(check(&[&[Synced, Stale]]), Health::Degraded);
        assert_eq!(
            check(&[&[Synced, Synced], &[OutOfSync, Connecting]]),
            Health::Down
        );
        assert_eq!(check(&[&[Crossed]]), Health::Down);
        // A venue out for want of its rate is out like any other.
        assert_eq!(check(&[&[Synced, NoRate]]), Health::Degraded);
        assert_eq!(check(&[&[NoRate, NoRate]]), Health::Down);
    }
}
