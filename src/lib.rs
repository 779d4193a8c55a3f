//! mergebook: a low-latency multi-exchange order book aggregator.
//!
//! The public API, by layer, in the order one frame travels:
//!
//! - the wire and decimals: [`fixed`], the exact decimal every price and amount is; the JSON
//!   byte walker the decoders drive is [`venue::Walker`];
//! - the books: [`book`], the fixed-capacity top-N book a decoder fills, diff mode's
//!   full-depth book, and [`book::diff_sync`], diff mode's rules for joining events to
//!   snapshots;
//! - the feeds: [`venue`], one folder per exchange, whose decoders are pure (bytes in, book
//!   out, or a typed [`venue::DecodeError`]); [`feed`], the readers, of which the hand-off to
//!   the merger ([`feed::handoff`]) is public; [`mailbox`], the single-slot latest-value
//!   slot it goes through (the project's only `unsafe`, in its own crate);
//! - the merger: [`merger`], the thread, each instrument's [`merger::Consolidation`] (who is
//!   merged), the k-way merge ([`merger::kway`]) and the published [`merger::summary`];
//!   [`units`], currencies and the conversion of a venue's prices into an instrument's;
//! - serving: [`publish`] (the fan-out, gRPC, JSON lines, NATS) and [`metrics`];
//! - recording and replay: [`record`] (what the venues sent, as timelines, and the formats
//!   read back), [`replay`] (recordings through the same path), [`sim`] (the embedded
//!   exchange simulator);
//! - configuration and running: [`config`], [`service`] (the whole pipeline started and
//!   stopped on a tokio runtime), [`cpu`] (the start-up CPU check); the command line's
//!   terminal view is [`viewer`]; [`clock`] and [`rng`] serve every layer.
//!
//! ARCHITECTURE.md has the map and the invariants.
#![deny(unsafe_code)]

// The wire and decimals.
pub mod fixed;
mod json;
// The books.
pub mod book;
// The feeds: the venues' decoders and the readers.
pub mod feed;
pub mod venue;
pub use mergebook_mailbox as mailbox;
// The merger.
pub mod merger;
pub mod units;
// Serving.
pub mod metrics;
pub mod publish;
// Recording, replay and the simulator.
pub mod record;
pub mod replay;
pub mod sim;
// Configuration and running.
pub mod config;
pub mod cpu;
pub mod service;
// The command line's viewer.
pub mod viewer;
// Shared by every layer.
pub mod clock;
mod log_limit;
pub mod rng;
