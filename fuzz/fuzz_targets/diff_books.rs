//! See `mergebook::fuzz_contracts::diff_books` for what this target checks.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| mergebook::fuzz_contracts::diff_books(data));
