//! The venues' decoders, books and sync rules against their recordings, slow references,
//! bad input and the simulator; one test binary, a module a venue or concern.

#[path = "../common/mod.rs"]
mod common;

mod binance_futures;
mod binance_sbe;
mod bitget;
mod bybit;
mod coinbase;
mod coinbase_exchange;
mod conformance;
mod decoders;
mod deribit;
mod diff_books;
mod exchange_times;
mod fuzz_corpus;
mod gate;
mod generated;
mod hyperliquid;
mod kraken;
mod kucoin;
mod live_conformance;
mod okx;
mod reference;
mod venue_layer;
