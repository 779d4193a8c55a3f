//! What mergebook's tests, fuzz targets and tools check the service with, kept out of
//! the service binary: the invariants every published book must satisfy, the fuzz
//! targets' contracts, and process readings.
#![deny(unsafe_code)]

pub mod fuzz_contracts;
pub mod invariants;
pub mod process;
