//! Publishing to NATS (`[nats]`): every instrument's summaries on
//! `<prefix>.book.<instrument>`, as `BookSummaryExact` streams them (protobuf) or as the
//! JSON line, and the service's health on `<prefix>.health` every `health_every`.
//!
//! NATS subjects are at most once, which suits a latest-value book: a lost message costs
//! nothing lasting, and the server drops a slow subscriber instead of slowing the
//! publisher. The publisher is a consumer of the fan-out like a gRPC stream (one task an
//! instrument, each reading its latest-value channel): the merger never waits for it.
//! Without a connection a summary is dropped and counted (nothing queues up to be sent
//! stale). A task takes the newest summary each time it runs: the ones it did not get to
//! (the fan-out coalesces summaries that come faster than it wakes; a full client buffer,
//! behind a slow server, makes the task wait) are counted as skipped.

use crate::clock::HostClock;
use crate::config::{Config, Instrument, NatsConfig, NatsFormat};
use crate::merger::summary::Summary;
use crate::metrics::Metrics;
use crate::publish::catalog::{Catalog, Listing};
use async_nats::connection::State;
use async_nats::{Client, ConnectOptions, Event};
use prost::Message;
use std::sync::Arc;
use tokio::sync::watch;
use tokio::task::JoinSet;

/// The subject of `instrument`'s summaries.
pub fn book_subject(prefix: &str, instrument: &str) -> String {
    format!("{prefix}.book.{instrument}")
}

/// The subject of the service's health.
pub fn health_subject(prefix: &str) -> String {
    format!("{prefix}.health")
}

/// The options of a connection to `config`'s servers: credentials and TLS as configured,
/// reconnecting for ever (the first connection too, in the background: the service
/// starts with NATS down).
pub async fn connect_options(config: &NatsConfig) -> std::io::Result<ConnectOptions> {
    let mut options = match &config.credentials_file {
        Some(file) => ConnectOptions::with_credentials_file(file.clone()).await?,
        None => ConnectOptions::new(),
    };
    if let Some(ca) = &config.tls_ca_file {
        options = options.add_root_certificates(ca.clone());
    }
    Ok(options
        .require_tls(config.tls_required)
        .max_reconnects(None)
        .retry_on_initial_connect())
}

/// Publishes every listed instrument's summaries and the health until aborted; an
/// instrument a reload lists from its first summary, one it delists no more.
pub async fn run(
    nats: NatsConfig,
    config: Arc<Config>,
    mut catalog: Catalog,
    metrics: Arc<Metrics>,
    host_clock: Arc<HostClock>,
) {
    let events = Arc::clone(&metrics);
    let options = match connect_options(&nats).await {
        Ok(options) => options.event_callback(move |event| {
            let metrics = Arc::clone(&events);
            async move { on_event(&metrics, event) }
        }),
        Err(error) => {
            tracing::error!(%error, "NATS credentials unreadable: not publishing on NATS");
            return;
        }
    };
    let client = match options.name("mergebook").connect(nats.url.as_str()).await {
        Ok(client) => client,
        Err(error) => {
            tracing::error!(%error, url = %nats.url, "NATS: not publishing");
            return;
        }
    };
    let mut publishers = JoinSet::new();
    let health = Health {
        config,
        catalog: catalog.clone(),
        host_clock,
    };
    publishers.spawn(publish_health(
        client.clone(),
        nats.clone(),
        health,
        Arc::clone(&metrics),
    ));
    // A publisher per instrument listed (it ends when its instrument is delisted).
    let mut followed = Listing::default();
    loop {
        let listing = Arc::clone(&catalog.borrow_and_update());
        for listed in listing.iter() {
            let known = (followed.iter()).any(|f| f.summaries.same_channel(&listed.summaries));
            if known {
                continue;
            }
            let subject = book_subject(&nats.subject_prefix, &listed.instrument.name);
            let publisher = Publisher {
                client: client.clone(),
                metrics: Arc::clone(&metrics),
                format: nats.format,
            };
            let (instrument, latest) = (Arc::clone(&listed.instrument), listed.summaries.clone());
            publishers.spawn(async move { publisher.follow(subject, instrument, latest).await });
        }
        followed = listing.as_ref().clone();
        tokio::select! {
            changed = catalog.changed() => if changed.is_err() { break },
            Some(_) = publishers.join_next() => {}
        }
    }
    while publishers.join_next().await.is_some() {}
}

fn on_event(metrics: &Metrics, event: Event) {
    match event {
        Event::Connected => {
            metrics.nats_connected.set(1);
            metrics.nats_connects.inc();
            tracing::info!("NATS connected");
        }
        Event::Disconnected => {
            metrics.nats_connected.set(0);
            tracing::warn!("NATS disconnected; reconnecting");
        }
        other => tracing::warn!(event = %other, "NATS"),
    }
}

struct Publisher {
    client: Client,
    metrics: Arc<Metrics>,
    format: NatsFormat,
}

impl Publisher {
    /// Publishes each summary of one instrument as it comes.
    async fn follow(
        self,
        subject: String,
        instrument: Arc<Instrument>,
        mut latest: watch::Receiver<Arc<Summary>>,
    ) {
        let mut last_sequence = None;
        while latest.changed().await.is_ok() {
            let summary = Arc::clone(&latest.borrow_and_update());
            if summary.sequence == 0 {
                continue; // nothing merged yet
            }
            if let Some(last) = last_sequence
                && summary.sequence > last + 1
            {
                self.metrics
                    .nats_skipped
                    .inc_by(summary.sequence - last - 1);
            }
            last_sequence = Some(summary.sequence);
            if self.client.connection_state() != State::Connected {
                self.metrics
                    .nats_dropped
                    .with_label_values(&["disconnected"])
                    .inc();
                continue;
            }
            // The client takes the payload as it is: one allocation a summary, off the hot
            // path (the merger's side never waits for this task).
            let mut payload = Vec::with_capacity(1024);
            encode(self.format, &instrument, &summary, &mut payload);
            let sent = self.client.publish(subject.clone(), payload.into()).await;
            match sent {
                Ok(()) => self.metrics.nats_published.inc(),
                Err(error) => {
                    self.metrics
                        .nats_dropped
                        .with_label_values(&["error"])
                        .inc();
                    tracing::debug!(%error, "NATS publish refused");
                }
            }
        }
    }
}

/// `summary` as `format` writes it.
pub fn encode(format: NatsFormat, instrument: &Instrument, summary: &Summary, out: &mut Vec<u8>) {
    match format {
        NatsFormat::Protobuf => {
            // Subscribers cannot ask: the all-in book travels where a venue charges a fee.
            let message = super::proto::exact_summary(instrument, summary, summary.charges_fees);
            message.encode(out).expect("a Vec grows as needed");
        }
        NatsFormat::Json => {
            super::jsonl::write_summary(out, instrument, summary).expect("a Vec grows as needed")
        }
    }
}

/// The health report (`/health`'s body) every `health_every`.
/// What the health report is made of.
struct Health {
    config: Arc<Config>,
    catalog: Catalog,
    host_clock: Arc<HostClock>,
}

async fn publish_health(client: Client, nats: NatsConfig, health: Health, metrics: Arc<Metrics>) {
    let subject = health_subject(&nats.subject_prefix);
    let mut every = tokio::time::interval(nats.health_every);
    loop {
        every.tick().await;
        if client.connection_state() != State::Connected {
            continue;
        }
        let listing = Arc::clone(&health.catalog.borrow());
        let (_, report) =
            crate::publish::health::health_report(&health.config, &listing, &health.host_clock);
        if client
            .publish(subject.clone(), report.to_string().into())
            .await
            .is_err()
        {
            metrics.nats_dropped.with_label_values(&["error"]).inc();
        }
    }
}
