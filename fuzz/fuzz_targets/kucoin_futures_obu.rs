//! See `mergebook_testkit::fuzz_contracts::every_decoder` for what this target checks.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mergebook::venue::VenueId;

fuzz_target!(|data: &[u8]| mergebook_testkit::fuzz_contracts::every_decoder(VenueId::KucoinFutures, data));
