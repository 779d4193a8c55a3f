//! The service end to end: the binary, the simulator, gRPC, JSON lines, NATS, recording
//! and replay, faults and hostile clients; one test binary, a module a concern.

#[path = "../common/mod.rs"]
mod common;

mod audits;
mod binary;
mod chaos;
mod conversion;
mod deploy;
mod diff_service;
mod feed_delay;
mod history;
mod hostile_clients;
mod nats;
mod outputs;
mod quotes;
mod recording;
mod reload;
mod replay;
mod replay_twin;
mod service;
mod unit_size;
mod watch;
mod web;
