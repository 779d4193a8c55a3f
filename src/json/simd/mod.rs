//! The vector readers, behind the one AVX2 gate of the JSON reader: AVX2 builds take
//! `avx2_level/` and `avx2_side_skip.rs`, every other build the stand-ins of `portable.rs`,
//! which read nothing (every level takes the scalar path; the side skip takes two passes).
//! The walker calls these names alike on every build and carries no `cfg` of its own.

#[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
mod avx2_level;
#[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
mod avx2_side_skip;
#[cfg(all(target_arch = "x86_64", target_feature = "avx2"))]
pub(super) use {
    avx2_level::{
        KeptPatterns, LevelPattern, PatternRead, STARTS_SLACK, compact_level, level_starts,
    },
    avx2_side_skip::rest_of_side_len,
};

#[cfg(not(all(target_arch = "x86_64", target_feature = "avx2")))]
mod portable;
#[cfg(not(all(target_arch = "x86_64", target_feature = "avx2")))]
pub(super) use portable::{
    KeptPatterns, LevelPattern, PatternRead, STARTS_SLACK, compact_level, level_starts,
    rest_of_side_len,
};
