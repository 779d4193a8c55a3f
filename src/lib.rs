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

pub mod book;
pub mod clock;
pub mod config;
pub mod cpu;
mod feed;
pub use feed::websocket_config;
pub mod fixed;
pub mod handoff;
mod http;
mod listen;
mod log_limit;
mod reconnect;
pub use mergebook_mailbox as mailbox;
pub mod merge;
pub mod merger;
pub mod metrics;
pub mod publish;
pub mod record;
pub mod replay;
pub mod rng;
pub mod service;
pub mod sim;
mod snapshot;
pub mod summary;
pub mod sync;
pub mod venue;
mod walker;
pub mod watch;
