//! Instruments listed and delisted while the service runs (`Service::reload`, on SIGHUP in
//! `mergebook`): a new configuration's `[[instruments]]` against the running one's, by
//! name. What it adds is wired in free slots: its books on the connections of their venues
//! with room, subscribed there, or on new connections within the venue's budget of
//! connection attempts. What it drops is unsubscribed from its connections (one left with
//! no stream closes) and leaves the merger and the consumers, whose streams of it end.
//! Every other book stays on its connection, in sync, and is never published out of
//! sync for it (`feed::core::FeedCore::list_stream`, `delist_stream`).

use super::{
    ListedInstrument, PlannedConnection, ReaderContext, RunningConnection, Service, ServiceError,
    listing_of, place_stream, planned_stream, stream_spec,
};
use crate::config::Config;
use crate::feed::StreamChange;
use crate::merger::{MergerChange, RateLinks};
use crate::publish::FanoutChange;
use std::collections::HashMap;
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum ReloadError {
    #[error(
        "{0} differs from the running configuration: only [[instruments]] change without a restart"
    )]
    NotReloadable(&'static str),
    #[error("[record] is on: a recording's connections are fixed; restart to change instruments")]
    Recording,
    #[error("more than service.max_instruments = {0} instruments listed at once")]
    TooMany(usize),
    #[error(transparent)]
    Service(#[from] ServiceError),
}

/// What a reload changed: the instruments listed and those delisted (by name; one whose
/// settings changed is in both).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Reloaded {
    pub listed: Vec<String>,
    pub delisted: Vec<String>,
}

impl Service {
    /// Runs `config`'s instruments from now on: lists those it adds, delists those it
    /// drops (one whose settings changed is both: its books are synced anew), and leaves
    /// every other book live on its connection. Everything but `[[instruments]]` must be as
    /// the service runs it ([`Config::reload_difference`]); else nothing changes.
    pub fn reload(&mut self, config: Config) -> Result<Reloaded, ReloadError> {
        if let Some(setting) = self.config.reload_difference(&config) {
            return Err(ReloadError::NotReloadable(setting));
        }
        if self.config.record.is_some() {
            return Err(ReloadError::Recording);
        }
        // Kept: listed under the same name with the same settings.
        let kept_slot = |slots: &[Option<ListedInstrument>], index: usize| {
            let wanted = &config.instruments[index];
            (slots.iter()).position(|listed| {
                listed
                    .as_ref()
                    .is_some_and(|listed| *listed.instrument == *wanted)
            })
        };
        let mut slot_of: Vec<Option<usize>> = (0..config.instruments.len())
            .map(|index| kept_slot(&self.slots, index))
            .collect();
        let delisted: Vec<usize> = (0..self.slots.len())
            .filter(|&slot| self.slots[slot].is_some() && !slot_of.contains(&Some(slot)))
            .collect();
        let listed: Vec<usize> = (0..config.instruments.len())
            .filter(|&index| slot_of[index].is_none())
            .collect();
        // Slots for the new ones: those vacant, the delisted's included, lowest first.
        let mut vacant = (0..config.max_instruments).filter(|&slot| {
            self.slots.get(slot).is_none_or(Option::is_none) || delisted.contains(&slot)
        });
        for &index in &listed {
            let slot = vacant
                .next()
                .ok_or(ReloadError::TooMany(config.max_instruments))?;
            slot_of[index] = Some(slot);
        }
        let slot_of: Vec<usize> = slot_of
            .into_iter()
            .map(|slot| slot.expect("placed"))
            .collect();
        let rate_links = RateLinks::in_slots(&config, &slot_of);
        let mut reloaded = Reloaded::default();

        for &slot in &delisted {
            let gone = self.slots[slot].take().expect("listed");
            self.delist_streams(slot, &gone.instrument.name);
            let change = MergerChange::Delist {
                slot,
                rate_links: rate_links.clone(),
            };
            // (The merger ends only with the service.)
            let _ = self.merger_changes.send(change);
            match gone.fanout_task {
                Some(task) => task.abort(),
                None => {
                    let (_, _, changes) = self.wiring.shared_fanout.as_ref().expect("shared");
                    let _ = changes.send(FanoutChange::Delist { slot });
                }
            }
            super::VenueGauges::forget(&self.metrics, &gone.instrument);
            tracing::info!(instrument = %gone.instrument.name, slot, "instrument delisted");
            reloaded.delisted.push(gone.instrument.name.clone());
        }

        let mut senders = HashMap::new();
        for &index in &listed {
            let slot = slot_of[index];
            let (wired, feed_senders, listed) = self.wiring.instrument(&config, index, slot);
            for (source, sender) in feed_senders.into_iter().enumerate() {
                senders.insert((slot, source), sender);
            }
            // Before its readers start: its first books find it listed.
            let _ = self.merger_changes.send(MergerChange::List {
                slot,
                instrument: Box::new(wired),
                rate_links: rate_links.clone(),
            });
            if slot >= self.slots.len() {
                self.slots.resize_with(slot + 1, || None);
            }
            tracing::info!(instrument = %listed.instrument.name, slot, "instrument listed");
            reloaded.listed.push(listed.instrument.name.clone());
            self.slots[slot] = Some(listed);
        }
        self.list_streams(&config, &listed, &slot_of, senders)?;

        self.catalog
            .send_replace(Arc::new(listing_of(&config, &self.slots)));
        self.config = Arc::new(config);
        Ok(reloaded)
    }

    /// Unsubscribes the streams of the instrument delisted from `slot`, `name`, on every
    /// connection that carries them; a connection left with none closes.
    fn delist_streams(&mut self, slot: usize, name: &str) {
        for connection in &mut self.readers.connections {
            connection.streams.retain(|(stream_slot, _, stream)| {
                if *stream_slot != slot {
                    return true;
                }
                let change = StreamChange::Delist {
                    instrument: name.to_owned(),
                    stream: stream.clone(),
                };
                // (A reader that ended, at a shutdown, needs no change.)
                let _ = connection.changes.send(change);
                false
            });
        }
        // Their readers end with the last stream.
        (self.readers.connections).retain(|connection| !connection.streams.is_empty());
    }

    /// Subscribes the books of the instruments `listed` (indexes of `config.instruments`,
    /// each in its slot of `slot_of`), going to `senders`: on a running connection of
    /// their venue to their endpoint and of their unit with room left, or on new ones.
    fn list_streams(
        &mut self,
        config: &Config,
        listed: &[usize],
        slot_of: &[usize],
        mut senders: HashMap<(usize, usize), crate::feed::handoff::FeedSender>,
    ) -> Result<(), ServiceError> {
        let mut new_connections: Vec<PlannedConnection> = Vec::new();
        for &index in listed {
            for source in 0..config.instruments[index].symbols.len() {
                let planned = planned_stream(config, (index, slot_of[index], source));
                let (venue_config, url, stream) = &planned;
                let venue = config.venues[*venue_config].venue;
                let most = venue.facts().max_streams_per_connection;
                let room = (self.readers.connections.iter_mut()).find(|connection| {
                    connection.venue == venue
                        && connection.url == *url
                        && connection.unit == stream.unit
                        && connection.streams.len() < most
                });
                if let Some(connection) = room {
                    connection.streams.push((
                        stream.instrument,
                        stream.source,
                        stream.name.clone(),
                    ));
                    let (_, _, stream) = planned;
                    let spec = stream_spec(stream, &mut senders);
                    // (A reader that ended, at a shutdown, needs no change.)
                    let _ = connection.changes.send(StreamChange::List(spec));
                    continue;
                }
                let running = |connection: &&RunningConnection| connection.venue == venue;
                let numbered_from = self.readers.connections.iter().filter(running).count();
                place_stream(&mut new_connections, config, planned, numbered_from);
            }
        }
        let merger = self.merger.as_ref().expect("running").thread().clone();
        let context = ReaderContext {
            merger: &merger,
            metrics: &self.metrics,
            host_clock: &self.host_clock,
            stop: &self.stop_signal,
        };
        let specs = (self.readers).specs(config, new_connections, senders, || None, &context);
        self.readers.spawn(specs, &context)
    }
}
