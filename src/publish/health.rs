//! The service's health, from the latest summaries: `OK` when every configured venue is in
//! every instrument's merged book, `DEGRADED` when some venue is out but every instrument
//! still has one, `DOWN` when an instrument has no venue at all. `/health` serves it (HTTP
//! 503 when `DOWN`) and NATS publishes it; the report names each venue's state:
//!
//! ```json
//! {"status":"DEGRADED","instruments":{"ETH/BTC":{"binance":"synced","bitstamp":"stale"}}}
//! ```

use crate::config::Config;
use crate::merger::summary::{Summary, VenueState};
use std::sync::Arc;
use tokio::sync::watch;

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
    summaries: &[watch::Receiver<Arc<Summary>>],
) -> (Health, serde_json::Value) {
    let mut states = Vec::new();
    let mut body = serde_json::Map::new();
    for (instrument, latest) in config.instruments.iter().zip(summaries) {
        let summary = latest.borrow();
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
    let health = health_of(states.iter().map(Vec::as_slice));
    let body = serde_json::json!({"status": health.word(), "instruments": body});
    (health, body)
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
