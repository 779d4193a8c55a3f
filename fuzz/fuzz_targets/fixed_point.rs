//! See `mergebook_testkit::fuzz_contracts::fixed_point` for what this target checks.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| mergebook_testkit::fuzz_contracts::fixed_point(data));
