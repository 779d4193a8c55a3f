//! mergebook: a low-latency multi-exchange order book aggregator.
//!
//! The path of one frame, and the module for each step:
//!
//! - [`venue`]: one module per exchange decodes its frames (pure: bytes in, book out),
//!   built on [`walker`] (the JSON byte walker) and [`fixed`] (exact decimals);
//! - [`book`]: the fixed-capacity top-N book a decoder fills;
//! - [`mailbox`]: the single-slot latest-value handoff from a reader to the merger (the
//!   project's only `unsafe`, in its own crate, `crates/mailbox`);
//! - [`merger`]: per-instrument venue states and the rule for who is merged;
//!   [`merge`]: the k-way merge itself;
//! - [`summary`]: the published consolidated book; [`publish`]: its output formats;
//! - [`replay`]: recorded frames through the same path, deterministically.
//!
//! ARCHITECTURE.md has the map and the invariants.
#![deny(unsafe_code)]

pub mod book;
pub mod clock;
pub mod config;
pub mod cpu;
pub mod feed;
pub mod fixed;
pub mod http;
pub use mergebook_mailbox as mailbox;
pub mod merge;
pub mod merger;
pub mod metrics;
pub mod publish;
pub mod replay;
pub mod rng;
pub mod service;
pub mod sim;
pub mod snapshot;
pub mod summary;
pub mod sync;
pub mod venue;
pub mod walker;
