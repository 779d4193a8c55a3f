//! The CPU features the binary was compiled to use, checked against the CPU it runs on.
//!
//! `.cargo/config.toml` builds x86-64 for `x86-64-v3` (AVX2, BMI2, FMA), so the compiler
//! may use those instructions anywhere, and the walker's AVX2 readers are chosen at
//! compile time (`cfg(target_feature)`). On an older CPU such a binary would die of an
//! illegal instruction at some unforeseeable point; [`check`], called first thing by
//! `main`, says why and lets it stop instead. A build for another target (aarch64, or
//! `-C target-cpu=x86-64`) enables none of these and runs the portable paths.
//!
//! The check itself must run on any x86-64, though it is compiled with the same flags: it
//! is straight-line scalar code (a loop over a table, or a formatted message, compiles to
//! AVX moves), and it writes static text. `tests/service/binary.rs` and `scripts/check-deploy`
//! run the debug and release binaries under an emulated CPU without AVX to prove it.

/// Whether the CPU has every feature this build was compiled to use; when it has not,
/// says which are missing and how to build for it, on stderr.
///
/// CPUID directly: `is_x86_feature_detected!` answers `true` for a feature the build
/// enables without asking the CPU.
#[cfg(target_arch = "x86_64")]
#[inline(never)]
pub fn check() -> bool {
    use std::arch::x86_64::{__cpuid, __cpuid_count};
    use std::io::Write;
    let leaf_1 = __cpuid(1).ecx;
    let leaf_7 = if __cpuid(0).eax >= 7 {
        __cpuid_count(7, 0).ebx
    } else {
        0
    };
    let extended = if __cpuid(0x8000_0000).eax >= 0x8000_0001 {
        __cpuid(0x8000_0001).ecx
    } else {
        0
    };
    let mut missing = 0;
    let mut stderr = std::io::stderr();
    let mut report = |feature: &'static str| {
        let _ = stderr.write_all(if missing == 0 {
            b"mergebook: this binary was built for x86-64-v3 (.cargo/config.toml) and this CPU lacks"
        } else {
            b","
        });
        let _ = stderr.write_all(b" ");
        let _ = stderr.write_all(feature.as_bytes());
        missing += 1;
    };
    // Unrolled, one `if` a feature: `cfg!` (this build uses it), then its CPUID bit.
    macro_rules! require {
        ($($feature:tt in $register:ident bit $bit:literal),+ $(,)?) => {
            $(
                if cfg!(target_feature = $feature) && ($register >> $bit) & 1 == 0 {
                    report($feature);
                }
            )+
        };
    }
    require!(
        "sse3" in leaf_1 bit 0,
        "ssse3" in leaf_1 bit 9,
        "fma" in leaf_1 bit 12,
        "sse4.1" in leaf_1 bit 19,
        "sse4.2" in leaf_1 bit 20,
        "movbe" in leaf_1 bit 22,
        "popcnt" in leaf_1 bit 23,
        "avx" in leaf_1 bit 28,
        "f16c" in leaf_1 bit 29,
        "bmi1" in leaf_7 bit 3,
        "avx2" in leaf_7 bit 5,
        "bmi2" in leaf_7 bit 8,
        "lzcnt" in extended bit 5,
    );
    if missing > 0 {
        let _ = stderr.write_all(
            b".\nRebuild it for this CPU: RUSTFLAGS=\"-C target-cpu=native\" cargo build --release\n",
        );
    }
    missing == 0
}

/// Other architectures enable no feature beyond their baseline here.
#[cfg(not(target_arch = "x86_64"))]
pub fn check() -> bool {
    true
}

#[cfg(test)]
mod tests {
    /// The build the tests run is the one `main` checks: the CPU running the tests has
    /// every feature it was compiled for, or nothing built from it could run.
    #[test]
    fn the_cpu_running_the_tests_has_every_compiled_feature() {
        assert!(super::check());
    }
}
