//! Every input of the committed fuzz corpus (`fuzz/corpus/<target>/`, minimised with
//! `cargo fuzz cmin`) and every past crash (`fuzz/regressions/<target>/`) through the
//! contract its target checks (`mergebook_testkit::fuzz_contracts`), on stable Rust, so a finding
//! of the fuzz campaign stays a regression test.

use mergebook::venue::VenueId;
use mergebook_testkit::fuzz_contracts::{
    TARGETS, binary_decoder, diff_decoder, every_decoder, snapshot_decoder,
};
use std::path::Path;

/// Each venue's target: its name, the venue, the contract it checks.
type VenueContract = fn(VenueId, &[u8]);
const VENUE_TARGETS: [(&str, VenueId, VenueContract); 18] = [
    ("binance_depth", VenueId::Binance, every_decoder),
    ("bitstamp_order_book", VenueId::Bitstamp, every_decoder),
    ("kraken_book", VenueId::Kraken, diff_decoder),
    ("bybit_book", VenueId::Bybit, diff_decoder),
    ("okx_books", VenueId::Okx, every_decoder),
    (
        "coinbase_exchange_level2",
        VenueId::CoinbaseExchange,
        diff_decoder,
    ),
    ("coinbase_level2", VenueId::Coinbase, diff_decoder),
    ("binance_sbe_depth", VenueId::BinanceSbe, binary_decoder),
    ("hyperliquid_l2book", VenueId::Hyperliquid, snapshot_decoder),
    ("binance_usdm_depth", VenueId::BinanceUsdm, every_decoder),
    ("binance_coinm_depth", VenueId::BinanceCoinm, every_decoder),
    ("gate_order_book", VenueId::Gate, every_decoder),
    (
        "gate_futures_order_book",
        VenueId::GateFutures,
        every_decoder,
    ),
    ("bitget_books", VenueId::Bitget, every_decoder),
    (
        "bitget_futures_books",
        VenueId::BitgetFutures,
        every_decoder,
    ),
    ("deribit_book", VenueId::Deribit, every_decoder),
    ("kucoin_level2", VenueId::Kucoin, every_decoder),
    ("kucoin_futures_obu", VenueId::KucoinFutures, every_decoder),
];

/// A target's check, for any target.
type Check = Box<dyn Fn(&[u8]) + std::panic::RefUnwindSafe>;

/// Every target with its contract.
fn contracts() -> Vec<(&'static str, Check)> {
    let shared = TARGETS
        .iter()
        .map(|&(target, contract)| (target, Box::new(contract) as Box<_>));
    let venues = VENUE_TARGETS.iter().map(|&(target, venue, contract)| {
        let contract = move |bytes: &[u8]| contract(venue, bytes);
        (target, Box::new(contract) as Box<_>)
    });
    shared.chain(venues).collect()
}

/// The files of `dir`, or none when it does not exist.
fn inputs(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut inputs: Vec<_> = entries
        .map(|entry| {
            let path = entry.expect("readable directory").path();
            let bytes = std::fs::read(&path).expect("readable input");
            (path.display().to_string(), bytes)
        })
        .collect();
    inputs.sort();
    inputs
}

#[test]
fn every_corpus_input_and_past_crash_keeps_its_targets_contract() {
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz");
    for (target, contract) in contracts() {
        let corpus = inputs(&fuzz.join("corpus").join(target));
        assert!(
            corpus.len() >= 10,
            "{target}: the committed corpus has {} inputs",
            corpus.len()
        );
        for (name, bytes) in corpus
            .iter()
            .chain(&inputs(&fuzz.join("regressions").join(target)))
        {
            if std::panic::catch_unwind(|| contract(bytes)).is_err() {
                panic!("{target}: {name} breaks the contract");
            }
        }
    }
}

#[test]
fn every_fuzz_target_is_replayed_here() {
    let targets = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/fuzz_targets");
    let mut found: Vec<String> = std::fs::read_dir(targets)
        .expect("fuzz/fuzz_targets")
        .map(|entry| {
            let path = entry.expect("readable directory").path();
            path.file_stem()
                .expect("a file")
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    found.sort();
    let mut replayed: Vec<_> = contracts().into_iter().map(|(target, _)| target).collect();
    replayed.sort();
    assert_eq!(found, replayed);
}

#[test]
fn every_venue_has_a_fuzz_target() {
    for venue in VenueId::ALL {
        assert!(
            VENUE_TARGETS.iter().any(|(_, v, _)| v == venue),
            "{venue} has no fuzz target"
        );
    }
}
