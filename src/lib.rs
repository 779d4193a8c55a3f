//! mergebook: a low-latency multi-exchange order book aggregator.
//!
//! The public API, by what it is for. The path of one frame:
//!
//! - [`venue`]: one module per exchange decodes its frames (pure: bytes in, book out, or a
//!   typed [`venue::DecodeError`]), in exact decimals ([`fixed`]);
//! - [`book`]: the fixed-capacity top-N book a decoder fills, and diff mode's full-depth
//!   book; [`sync`]: diff mode's rules for joining events to snapshots;
//! - [`mailbox`]: the single-slot latest-value hand-off from a reader to the merger (the
//!   project's only `unsafe`, in its own crate, `crates/mailbox`);
//! - [`merger`]: per-instrument venue states and the rule for who is merged, and the
//!   merger thread; [`merge`]: the k-way merge itself;
//! - [`summary`]: the published consolidated book; [`publish`]: its output formats.
//!
//! Running it: [`config`] (the file, validated), [`service`] (start and stop the whole
//! pipeline on a tokio runtime), [`metrics`], [`cpu`] (the start-up CPU check). Around
//! it: [`record`] (what the venues sent, as timelines), [`replay`] (recorded frames
//! through the same path), [`sim`] (the embedded exchange
//! simulator), [`clock`] and [`rng`].
//!
//! The readers (`feed`: the I/O, and the sans-I/O core replay shares), the REST snapshot
//! client (`snapshot`) and the HTTP endpoints (`http`) are private: they are reached through
//! the service and [`replay`]. The JSON byte walker the decoders are written with is
//! [`venue::Walker`]. ARCHITECTURE.md has the map and the invariants.
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
